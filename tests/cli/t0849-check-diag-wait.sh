#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# penny check under a launcher: the steps after the checks (the decision
# table's measurements, the A/B, NCCL's log) may keep a node's first rank
# longer than --timeout (NCCL's log captured on the node: its allreduce is
# killed at 2 x --timeout + 10 s); every rank waits that much longer there,
# so the job ends with its verdict, not with a rank that "did not answer";
# a leader killed meanwhile is still named at once.  Two ranks of one node
# (PENNY_NODE_ID) on the test plugin named nccl, whose init takes
# FAKE_NCCL_LOG_MS longer where NCCL's log is asked for.
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/helpers/checkjob.sh"

rail_tree n1
mkdir -p tmp
printf 'allreduce.size = 65536\nallreduce.min-busbw = 1000\n' >miss.conf
export PENNY_PLUGIN_PATH=$BUILD/tests/plugins/nccl PENNY_IB_DISABLE=1 TMPDIR=$PWD/tmp

# job2 ARGS: penny check ARGS --json as ranks 0 and 1 of node n0, in the
# background (pids in pid0 pid1, stderr in err0 err1); wait2: rc ("11"), took
job2() {
	local port r
	port=$(free_port) || return 1
	t0=$(date +%s.%N)
	for r in 1 0; do
		PENNY_NODE_ID=n0 "$PENNY" check --rank $r --nranks 2 --root 127.0.0.1:$port \
			--sysfs-root n1 --quick --only allreduce --backend nccl --config miss.conf \
			"$@" --json >out$r.json 2>err$r &
		eval pid$r=$!
	done
}
wait2() {
	wait $pid0; rc=$?; wait $pid1; rc=$rc$?
	took=$(python3 -c "import sys; print(round(float(sys.argv[1]) - float(sys.argv[2]), 1))" \
		"$(date +%s.%N)" "$t0")
	echo "rc=$rc took=$took"; cat err0 err1
}

test_expect_success 'a slow capture of NCCL.s log on rank 0: the verdict, not a timeout' '
	FAKE_NCCL_LOG_MS=5000 job2 --timeout 3 && wait2 && test "$rc" = 11 &&
	test ! -s err1 && grep -q "\"check\":\"diagnosis\"" out0.json &&
	grep -q "\"check\":\"nccl-path\",\"node\":\"n0\",\"target\":\"ch00/0 0->1\"" out0.json
'

test_expect_success 'rank 0 killed in that capture: rank 1 names it at once' '
	FAKE_NCCL_LOG_MS=20000 job2 --timeout 3 &&
	for i in $(seq 100); do ls tmp | grep -q penny-nccl && break; sleep 0.1; done &&
	ls tmp | grep -q penny-nccl && t1=$(date +%s.%N) && kill -9 $pid0 && wait2;
	test "$rc" = 1372 && python3 -c "import sys, time; sys.exit(time.time() - float(sys.argv[1]) > 2)" "$t1" &&
	test "$(wc -l <err1)" = 1 && grep -q "rank 0 (host [^,]*, pid $pid0) closed its connection" err1
'
rm -rf tmp/penny-nccl-*

test_done
