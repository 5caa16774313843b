#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Hardening, round 5: penny check, top and topo fed careless inputs, each
# refused in one line before anything runs, or now saying it once.
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/helpers/trees.sh"

tree_pairs ok node-ok >/dev/null

test_expect_success 'check --nccl-log that cannot be read: one line before any check, not after the table' '
	mkdir adir && mkfifo log.fifo && truncate -s 65M big.log && : >j.xml &&
	for f in /nonexistent adir log.fifo big.log; do
		within 20 one_line_error 2 check --sysfs-root ok --passive --nccl-log $f \
			--junit j.xml || exit 1
		grep -q "^penny check: .*$f" err || { cat err; exit 1; }
		grep -q "tests=\"1\" failures=\"0\" errors=\"1\"" j.xml || { cat j.xml; exit 1; }
	done &&
	{ penny check --sysfs-root ok --passive --nccl-log \
		"$TOP/tests/fixtures/nccl-log/nccl-2.21-socket.log" >out; test $? -le 1; } &&
	grep -q "^nccl-path " out
'

test_expect_success 'check that cannot run: no empty table and "0 passed" above its error' '
	mkdir -p empty &&
	test_exit 2 penny check --sysfs-root empty --passive >out 2>err &&
	test ! -s out && test "$(wc -l <err)" -eq 1 &&
	grep -q "^penny check: sysfs root .empty. has no sys/devices/system/cpu" err &&
	test_exit 2 penny check --sysfs-root empty --passive --json >out 2>err &&
	python3 -c "import json,sys; d = json.load(open(\"out\")); assert d[\"exit\"] == 2 and d[\"error\"], d"
'

test_expect_success 'check job.require = ranks: taken like --require ranks, not refused' '
	echo "job.require = ranks" >req.conf &&
	test_exit 1 penny check --sysfs-root ok --passive --config req.conf >out 2>err &&
	grep -q "^ranks .* FAIL .*not under a launcher" out &&
	test_exit 1 penny check --sysfs-root ok --passive --require ranks >out2 2>err &&
	test_cmp out out2 &&
	penny check --list-keys | grep -q "(comma list of: .* nccl-path ranks alltoall)"
'

test_expect_success 'top --replay: a damaged line names its line once, with the column' '
	penny top --sysfs-root ok -n 2 -i 50ms --record rec >/dev/null &&
	{ echo garbage; cat rec; } >bad.rec &&
	penny top --replay bad.rec >out 2>err &&
	test "$(wc -l <err)" -eq 1 &&
	grep -q "^penny top: warning: bad.rec: line 1: column 1: value expected, got .g.; skipped it$" err
'
test_expect_success 'check --backend naming no plugin file: one line naming it and where it looked' '
	mkdir nowhere &&
	for a in "--passive" "--only gpu-copy" "--only allreduce --quick"; do
		PENNY_PLUGIN_PATH=$PWD/nowhere one_line_error 2 check --sysfs-root ok $a \
			--backend nccl,bogus || exit 1
		grep -q "^penny check: --backend: the bogus plugin (penny-bogus.so) is not installed: searched $PWD/nowhere, " err ||
			{ cat err; exit 1; }
	done &&
	one_line_error 2 check --sysfs-root ok --passive --backend a/b &&
	grep -qx "penny check: --backend: invalid plugin name .a/b." err
'

test_expect_success 'check --backend: a plugin found that cannot start stays a SKIP; host is the host engine' '
	mkdir -p plug && : >plug/penny-empty.so &&
	PENNY_PLUGIN_PATH=$BUILD/tests/plugins test_exit 2 penny check --sysfs-root ok \
		--only gpu-copy --backend badabi >out 2>err &&
	grep -q "^gpu-copy .* SKIP .*penny-badabi.so. has ABI 7" out &&
	grep -q "every check was skipped" err &&
	PENNY_PLUGIN_PATH=$PWD/plug test_exit 2 penny check --sysfs-root ok \
		--only gpu-copy --backend empty >out 2>err &&
	grep -q "^gpu-copy .* SKIP .*cannot load the empty plugin" out &&
	penny check --sysfs-root ok --passive --backend nccl,host >out 2>err; test $? -le 1 &&
	grep -q "^inventory " out && test ! -s err
'

test_expect_success 'top --replay --sysfs-root: refused in one line (a recording reads no tree)' '
	penny top --sysfs-root ok -n 2 -i 50ms --record r2.rec >/dev/null &&
	one_line_error 2 top --replay r2.rec --sysfs-root ok -n 1 &&
	grep -qx "penny top: --sysfs-root is for a live run: --replay shows the recorded host.s counters" err &&
	PENNY_SYSROOT=$PWD/ok penny top --replay r2.rec -n 1 >out && grep -q mlx5_0 out
'

test_expect_success 'check --config: an integer key above its range by 1 is refused, not rounded' '
	echo "counters.max-increase = 1000000000000000001" >big.conf &&
	one_line_error 2 check --sysfs-root ok --passive --config big.conf &&
	grep -q "counters.max-increase must be 0..1000000000000000000, got 1000000000000000001$" err &&
	echo "settings.shm-min = 1000000000000000001" >big.conf &&
	one_line_error 2 check --sysfs-root ok --passive --config big.conf &&
	echo "counters.max-increase = 1000000000000000000" >big.conf &&
	{ penny check --sysfs-root ok --passive --config big.conf >out; test $? -le 1; }
'
test_done
