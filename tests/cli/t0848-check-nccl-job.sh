#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# penny check under a launcher across nodes, nccl-path without --nccl-log:
# every rank runs a fresh allreduce-test on nccl with NCCL_DEBUG=INFO, each
# node's ranks' logs reach its leader through the job's bootstrap and are
# judged there against the node's topology: one row per channel connection
# with the node named, NET paths across nodes included.  Two emulated nodes
# (PENNY_NODE_ID) of two ranks on the test plugin named nccl (its own log,
# or the captured logs of tests/fixtures/nccl-log/job); a rank whose child
# fails SKIPs the log on every node, within --timeout.
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/helpers/checkjob.sh"
# a child that hangs is killed at 0.8 x --timeout (the rows say so); the
# whole check, its other checks included, stays within 15 s of --timeout 6
# (more than the 5 s they take here: a sanitizer build is slower)

rail_tree n1
mkdir -p tmp

export PENNY_PLUGIN_PATH=$BUILD/tests/plugins/nccl PENNY_IB_DISABLE=1 TMPDIR=$PWD/tmp
# job TIMEOUT: the job of four ranks (checkjob.sh) on nccl-path
job() { job4 --sysfs-root n1 --timeout "$1" --only nccl-path; }
# rows: "NODE TARGET VERDICT MEASURED | DETAIL" of every nccl-path row, sorted
rows() {
	python3 -c 'import json
d = json.load(open("out.json"))
for x in sorted(d["results"], key=lambda x: (x["node"], x["target"])):
	if x["check"] == "nccl-path":
		print(x["node"], x["target"], x["verdict"], x["measured_text"], "|", x["detail"] or "")'
}

test_expect_success 'the job'"'"'s log of every node, judged per node, NET paths across nodes' '
	job 10 && test "$rc" = 0000 && rows >r && cat r &&
	grep -q "^n0 ch00/0 0->1 PASS P2P/CUMEM/read" r &&
	grep -q "^n0 ch00/0 1->2 send PASS NET/IB/1/GDRDMA | NIC mlx5_3:1, GPU1.s rail$" r &&
	grep -q "^n0 ch00/0 3->0 receive PASS NET/IB/0/GDRDMA | NIC mlx5_0:1, GPU0.s rail$" r &&
	grep -q "^n1 ch00/0 2->3 PASS P2P/CUMEM/read" r &&
	grep -q "^n1 ch00/0 1->2 receive PASS NET/IB/0/GDRDMA | NIC mlx5_0:1, GPU0.s rail$" r &&
	grep -q "^n1 ch00/0 3->0 send PASS NET/IB/1/GDRDMA | NIC mlx5_3:1, GPU1.s rail$" r &&
	test "$(grep -c " ch00/0 " r)" = 6 && test -z "$(ls tmp)"
'

test_expect_success 'sockets across nodes while an RDMA port is up FAIL on every node' '
	FAKE_NCCL_NET_VIA=NET/Socket/0 job 10 && test "$rc" = 1111 && rows >r &&
	grep -q "^n0 ch00/0 1->2 send FAIL NET/Socket/0 | NCCL sends over sockets while mlx5_0/1 is ACTIVE" r &&
	grep -q "^n1 ch00/0 3->0 send FAIL NET/Socket/0 | NCCL sends over sockets" r &&
	grep -q "^n1 ch00/0 2->3 PASS" r
'

test_expect_success 'captured logs of two nodes: the node whose GPU uses the other rail is named' '
	FAKE_NCCL_LOG_FILE=$TOP/tests/fixtures/nccl-log/job/node%n.log job 10 && test "$rc" = 1111 &&
	rows >r && cat r &&
	grep -q "^n0 ch00/0 3->0 receive PASS NET/IB/0/GDRDMA" r &&
	grep -q "^n1 ch00/0 1->2 receive FAIL NET/IB/1/GDRDMA | rank 2.s GPU0 uses mlx5_3, not its rail NIC mlx5_0:1 (PIX)" r &&
	grep -q "^n1 ch00/0 3->0 send PASS" r && grep -q "^n0 versions SKIP" r && grep -q "^n1 versions SKIP" r &&
	test "$(grep -c FAIL r)" = 1
'

test_expect_success 'a rank whose allreduce dies: the log SKIPs on every node, naming it, within --timeout' '
	NCCL_IB_HCA=mlx5 FAKE_NCCL_PINNED=die FAKE_NCCL_PINNED_RANK=3 job 6 && test "$rc" = 2222 &&
	python3 -c "import sys; sys.exit(float(sys.argv[1]) > 15)" "$took" && rows >r && cat r &&
	grep -q "^n0 log SKIP None | the job.s allreduce on nccl failed: rank 3 (node n1): died of signal 6" r &&
	grep -q "^n1 log SKIP None | the job.s allreduce on nccl failed: rank 3 (node n1): died of signal 6" r &&
	NCCL_IB_HCA=mlx5 FAKE_NCCL_PINNED=hang FAKE_NCCL_PINNED_RANK=1 job 6 && test "$rc" = 2222 &&
	python3 -c "import sys; sys.exit(float(sys.argv[1]) > 15)" "$took" && rows >r &&
	grep -q "^n1 log SKIP None | the job.s allreduce on nccl failed: rank 1 (node n0): did not end in 4.8 s: killed" r &&
	test -z "$(ls tmp)"
'

test_expect_success 'no private directory for the log: SKIP naming the rank' '
	: >notadir && TMPDIR=$PWD/notadir job 10 && test "$rc" = 2222 && rows >r && cat r &&
	grep -q "^n0 log SKIP None | rank 0 (node n0) no directory for NCCL.s log in .*notadir" r
'

test_done
