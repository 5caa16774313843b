#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The GPU driver (tests/helpers/penny-gpu-driver) and the plugins on a
# machine without a GPU: the test plugins run the whole check/timing flow on
# host memory over the driver's allgather; missing or broken plugins and a
# missing CUDA driver end in one line and exit 2; wrong values exit 1; a
# rank that dies does not hang the others.
. "$(dirname "$0")/../lib.sh"

drv=$BUILD/tests/helpers/penny-gpu-driver
fakes=$BUILD/tests/plugins
one_line() { test "$(wc -l <"$1")" -eq 1 || { cat "$1"; return 1; }; }

test_expect_success 'a plugin checks every type and op on 3 ranks' '
	PENNY_PLUGIN_PATH=$fakes "$drv" --np 3 --backend fake --check --quick --counts 1,7,100,1001 >out &&
	grep -q "^check fake   oneshot   3 ranks: .* 0 wrong values" out &&
	grep -q "^check fake   auto      3 ranks: .* 0 wrong values" out
'
test_expect_success 'timing table: one row per size, algorithm and graph mode' '
	PENNY_PLUGIN_PATH=$fakes "$drv" --np 2 --backend fake --perf -b 1K -e 4K -n 3 --out perf.tsv >out &&
	test "$(grep -cE "^ +(1024|2048|4096) fake " out)" -eq 12 &&
	test "$(grep -c "^perf" perf.tsv)" -eq 12 &&
	awk -F"\t" "\$1 == \"perf\" && \$8 <= 0 { bad = 1 } END { exit bad }" perf.tsv
'
test_expect_success 'sizes largest first or in random order: the same rows, checked' '
	PENNY_PLUGIN_PATH=$fakes "$drv" --np 2 --backend fake --algos auto --perf -b 1K -e 64K -n 2 \
		--order down >down &&
	grep -q "sizes largest first" down &&
	grep -oE "^ +[0-9]+ fake " down | awk "{print \$1}" | uniq >d.sizes &&
	printf "%s\n" 65536 32768 16384 8192 4096 2048 1024 >want && test_cmp want d.sizes &&
	PENNY_PLUGIN_PATH=$fakes "$drv" --np 2 --backend fake --algos auto --perf -b 1K -e 64K -n 2 \
		--order random >rand &&
	grep -q "sizes in random order" rand &&
	grep -oE "^ +[0-9]+ fake " rand | awk "{print \$1}" | uniq >r.sizes &&
	sort -n r.sizes >r.sorted && sort -rn want >w.sorted && sort -n want >w.up &&
	test_cmp w.up r.sorted && ! test_cmp w.up r.sizes >/dev/null && ! test_cmp want r.sizes >/dev/null &&
	! grep -q "wrong values" rand &&
	test_exit 2 "$drv" --perf --order sideways 2>err && grep -q "up, down or random" err
'
test_expect_success 'wrong values are counted and exit 1' '
	test_exit 1 env PENNY_PLUGIN_PATH=$fakes "$drv" --np 2 --backend fakewrong --check --quick \
		--counts 5 >out 2>err &&
	grep -q "wrong, first at 1 " err && ! grep -q " 0 wrong values" out
'
test_expect_success 'a missing plugin: one line naming where it looked, exit 2' '
	test_exit 2 env PENNY_PLUGIN_PATH=$TRASH "$drv" --np 2 --backend nosuch --check 2>err &&
	one_line err && grep -q "the nosuch plugin (penny-nosuch.so) is not installed: searched $TRASH" err
'
test_expect_success 'a plugin whose init fails: one line, exit 2' '
	test_exit 2 env PENNY_PLUGIN_PATH=$fakes "$drv" --np 3 --backend failinit --check 2>err &&
	one_line err && grep -q "failinit plugin: init: fake device is missing" err
'
test_expect_success 'a plugin of another ABI: one line, exit 2' '
	test_exit 2 env PENNY_PLUGIN_PATH=$fakes "$drv" --np 2 --backend badabi --check 2>err &&
	one_line err && grep -q "has ABI 7" err
'
test_expect_success 'a rank that dies ends the run, exit 1, no hang' '
	test_exit 1 timeout 60 env PENNY_PLUGIN_PATH=$fakes "$drv" --np 3 --backend fakedie \
		--check --quick --counts 5 >out 2>err &&
	grep -q "rank 1 went away" err
'
for p in cuda nccl; do
	if [ ! -e "$BUILD/plugins/penny-$p.so" ]; then
		test_skip "the $p plugin without a CUDA driver" "penny-$p.so not built (no nvcc)"
	elif ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1 '; then
		test_skip "the $p plugin without a CUDA driver" "a CUDA driver is installed here"
	else
		test_expect_success "the $p plugin without a CUDA driver: one line, exit 2" "
			test_exit 2 env PENNY_PLUGIN_PATH=$BUILD/plugins \"\$drv\" --np 2 --backend $p --check 2>err &&
			one_line err && grep -q \"$p plugin: init: cannot load the CUDA driver 'libcuda.so.1'\" err
		"
	fi
done
test_expect_success 'the plugins export nothing but their table' '
	for so in "$BUILD"/plugins/penny-*.so; do
		[ -e "$so" ] || continue
		syms=$(nm -D --defined-only "$so" | awk "{print \$3}" | grep -v "^_" | sort | tr "\n" " ")
		test "$syms" = "penny_plugin_v1 " || { echo "$so: $syms"; exit 1; }
	done
'
test_expect_success 'usage errors exit 2' '
	test_exit 2 "$drv" --np 0 2>/dev/null && test_exit 2 "$drv" --bogus 2>/dev/null
'
test_done
