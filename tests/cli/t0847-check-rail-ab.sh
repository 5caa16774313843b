#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# penny check under a launcher: the job's allreduce on nccl misses its
# expectation, and the decision table's A/B runs: every rank execs a fresh
# `penny allreduce-test --backend nccl` with NCCL_IB_HCA pinned to its GPU's
# rail NIC, and rank 0 adds the "job-rail" row.  A child that fails, dies,
# hangs or prints garbage FAILs the row naming the rank and why, within
# --timeout; a rank without a rail NIC SKIPs it.  Two emulated nodes
# (PENNY_NODE_ID) of two ranks on the test plugin named nccl
# (FAKE_NCCL_PINNED acts where NCCL_IB_HCA is set).
# cost: 20
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/helpers/checkjob.sh"
# a child that hangs is killed at 0.8 x --timeout (the rows say so); the
# whole check, its other checks included, stays within 15 s of --timeout 6
# (more than the 5 s they take here: a sanitizer build is slower)

rail_tree n1
rm -rf nonic && cp -a n1 nonic && rm -rf nonic/sys/class/infiniband nonic/sys/bus/pci/devices/0000:04:00.0 \
	nonic/sys/bus/pci/devices/0000:14:00.0
# job.median-margin = 1: one emulated node slower than the other is no FAIL here;
# the diagnosis' GPU copies (on the host here) at 1 MiB, not 64
printf 'allreduce.size = 65536\nallreduce.min-busbw = 1000\njob.median-margin = 1\ngpu-copy.size = 1048576\n' >miss.conf
printf 'allreduce.size = 65536\nallreduce.min-busbw = 0.000001\njob.median-margin = 1\ngpu-copy.size = 1048576\n' >meet.conf

export PENNY_PLUGIN_PATH=$BUILD/tests/plugins/nccl PENNY_IB_DISABLE=1
# job TREE CONF TIMEOUT [ARGS]: the job of four ranks (checkjob.sh) on the allreduce
job() {
	job4 --sysfs-root "$1" --timeout "$3" --quick --only allreduce --backend nccl --config "$2" "${@:4}"
}
# row TARGET: rank 0's row of check allreduce, node job, TARGET
row() {
	python3 -c 'import json,sys
d = json.load(open("out.json"))
r = [x for x in d["results"] if x["check"] == "allreduce" and x["node"] == "job" and x["target"] == sys.argv[1]]
assert len(r) == 1, r
r = r[0]
print(r["verdict"], r["measured"], r["expected"], "|", r["detail"])' "$1"
}
no_row() { ! grep -q '"target":"job-rail"' out.json; }

# One job serves the first two: the 100 ms each allreduce across nodes loses
# unpinned (FAKE_NCCL_XNODE_MS) is only slower, not another path.
test_expect_success 'a missed job allreduce on nccl: the A/B pinned to the rail NICs runs' '
	FAKE_NCCL_XNODE_MS=100 job n1 miss.conf 10 && test "$rc" = 1111 && cp out.json ab.json &&
	row job | grep -q "^FAIL [0-9.e-]* 1000 | busbw .* (nccl, 4 ranks, 65536 B, blocks [0-9.e+-]*-[0-9.e+-]*)" &&
	row job-rail >ab && cat ab &&
	grep -q "^FAIL [0-9.e-]* 1000 | NCCL_IB_HCA pinned to each GPU.s rail NIC (mlx5_0:1 mlx5_3:1): .* as run (65536 B, 4 ranks)$" ab &&
	grep -q "\"source\":\"the decision table: NCCL_IB_HCA per rank\"" out.json
'

test_expect_success 'pinning recovers what the job lost: the A/B measures the pinned run' '
	python3 -c "import json
d = json.load(open(\"ab.json\"))
r = {x[\"target\"]: x[\"measured\"] for x in d[\"results\"] if x[\"node\"] == \"job\"}
print(r)
assert r[\"job-rail\"] > 1.5 * r[\"job\"], r"
'

test_expect_success 'a job that meets its expectation runs no A/B; nor does a node alone' '
	job n1 meet.conf 10 && test "$rc" = 0000 && row job | grep -q "^PASS" && no_row &&
	PENNY_NODE_ID=n0 test_exit 1 penny check --sysfs-root n1 --quick --only allreduce --backend nccl \
		--config miss.conf --json >out.json &&
	no_row
'

# "fail" on every rank: an init that fails on some ranks only leaves the
# other ranks' backends to their exit, a leak to a sanitizer build
for c in "die 2|rank 2 (node n1) failed: died of signal 6 (Aborted)" \
	"hang 1|rank 1 (node n0) failed: did not end in 4.8 s: killed" \
	"fail |rank 0 (node n0) failed: exit 2: .*fake: NCCL_IB_HCA =mlx5_0:1 names no usable NIC" \
	"garbage 0|rank 0.s allreduce-test: not allreduce-test.s JSON: line 1 column 1"; do
	mode=${c%%|*} want=${c#*|}
	test_expect_success "a child that does '$mode': the row FAILs naming why, within --timeout" '
		FAKE_NCCL_PINNED=${mode% *} FAKE_NCCL_PINNED_RANK=${mode#* } job n1 miss.conf 6 &&
		test "$rc" = 1111 && python3 -c "import sys; sys.exit(float(sys.argv[1]) > 15)" "$took" &&
		row job-rail >ab && cat ab && grep -q "^FAIL None 1000 | pinned to the rail NICs, $want" ab &&
		for r in 1 2 3; do test ! -s err$r || exit 1; done
	'
done

test_expect_success 'the job.s --transport: its allreduce and the fresh ranks of the A/B use it' '
	job n1 miss.conf 10 --transport verbs && test "$rc" = 1111 &&
	row job | grep -q "^FAIL None None | nccl allreduce did not run: rank 0 (node n0): .*--transport verbs: rank 0 .* has no ACTIVE RDMA port" &&
	{ FAKE_NCCL_PINNED=hang FAKE_NCCL_PINNED_RANK=1 job "$PWD/n1" miss.conf 6 --transport tcp >/dev/null & } &&
	for i in $(seq 100); do
		ps -eo args | grep "[a]llreduce-test .*--sysfs-root $PWD/n1" >args; test "$(wc -l <args)" = 4 && break
		sleep 0.1
	done; wait && cat args && test "$(wc -l <args)" = 4 && ! grep -v -- " --transport tcp" args &&
	row job-rail | grep -q "rank 1 (node n0) failed: did not end in 4.8 s: killed"
'

# tests/preload/steal-port.so: a stranger listens on every port penny check
# closes, at once (the old A/B closed its port for rank 0's child to bind)
steal() {
	PENNY_TEST_STEAL_PORT=1 LD_PRELOAD=$BUILD/tests/preload/steal-port.so \
		ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0 "$@"
}
test_expect_success 'a stranger takes every port check lets go: the A/B runs all the same' '
	steal job n1 miss.conf 10 && test "$rc" = 1111 && row job-rail >ab && cat ab &&
	grep -q "^FAIL [0-9.e-]* 1000 | NCCL_IB_HCA pinned to each GPU.s rail NIC (mlx5_0:1 mlx5_3:1): .* as run (65536 B, 4 ranks)$" ab
'

test_expect_success 'PENNY_ROOT_FD: a listening socket on --root.s port of rank 0, else one line, exit 2' '
	for bad in "x|is not a descriptor number above 2" "2|is not a descriptor number above 2" "+3|above 2" \
		"99999999999|is not a descriptor number above 2" \
		"0 |is not a descriptor number above 2" \
		"3|=3 is not a TCP socket listening on port 9 (--root 127.0.0.1:9)"; do
		PENNY_ROOT_FD=${bad%%|*} test_exit 2 penny allreduce-test --rank 0 --nranks 2 \
			--root 127.0.0.1:9 --timeout 1 2>err 3<miss.conf && cat err &&
		test "$(wc -l <err)" = 1 && grep -q "PENNY_ROOT_FD.*${bad#*|}" err || exit 1
	done &&
	PENNY_ROOT_FD=3 test_exit 2 penny allreduce-test --rank 1 --nranks 2 --root 127.0.0.1:9 \
		--timeout 1 2>err && grep -q "PENNY_ROOT_FD is for rank 0 of a job with --root" err
'

test_expect_success 'a rank without a rail NIC: the A/B SKIPs, saying which' '
	job nonic miss.conf 10 && test "$rc" = 1111 &&
	row job-rail | grep -q "^SKIP None None | rank 0 (node n0) has no rail NIC: GPU0 has no RDMA NIC with a port$"
'

test_done
