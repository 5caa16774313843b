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
. "$TOP/tests/helpers/mksysfs.sh"

# GPU0 (03:00.0) with mlx5_0 on one switch, GPU1 (13:00.0) with mlx5_3 on another
sys_root n1 gpu01 && sys_cpus 4 1 &&
	PCI_NUMA=0 sys_switch 0x00 && PCI_NUMA=0 sys_switch 0x10 &&
	sys_ib mlx5_0 0000:04:00.0 && sys_ib mlx5_3 0000:14:00.0 &&
	sys_port mlx5_0 1 ACTIVE LinkUp "400 Gb/sec (4X NDR)" InfiniBand &&
	sys_port mlx5_3 1 ACTIVE LinkUp "400 Gb/sec (4X NDR)" InfiniBand >/dev/null
mkdir -p tmp

export PENNY_PLUGIN_PATH=$BUILD/tests/plugins/nccl PENNY_IB_DISABLE=1 TMPDIR=$PWD/tmp
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
# job TIMEOUT: ranks 0..3 on nodes n0 n0 n1 n1, --only nccl-path; rank 0's
# JSON in out.json, stderr in err0..err3, exit codes in rc, seconds in took
job() {
	local port r t0 ids=(n0 n0 n1 n1) pids=()
	port=$(free_port) || return 1
	t0=$(date +%s.%N)
	for r in 3 2 1 0; do
		PENNY_NODE_ID=${ids[$r]} "$PENNY" check --rank $r --nranks 4 --root 127.0.0.1:$port \
			--sysfs-root n1 --timeout "$1" --only nccl-path --json >out$r.json 2>err$r &
		pids[$r]=$!
	done
	rc=
	for r in 0 1 2 3; do wait ${pids[$r]}; rc="$rc$?"; done
	cp out0.json out.json
	took=$(python3 -c "import sys; print(round(float(sys.argv[1]) - float(sys.argv[2]), 1))" \
		"$(date +%s.%N)" "$t0")
	echo "rc=$rc took=$took"
}
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
	python3 -c "import sys; sys.exit(float(sys.argv[1]) > 8)" "$took" && rows >r && cat r &&
	grep -q "^n0 log SKIP None | the job.s allreduce on nccl failed: rank 3 (node n1): died of signal 6" r &&
	grep -q "^n1 log SKIP None | the job.s allreduce on nccl failed: rank 3 (node n1): died of signal 6" r &&
	NCCL_IB_HCA=mlx5 FAKE_NCCL_PINNED=hang FAKE_NCCL_PINNED_RANK=1 job 6 && test "$rc" = 2222 &&
	python3 -c "import sys; sys.exit(float(sys.argv[1]) > 8)" "$took" && rows >r &&
	grep -q "^n1 log SKIP None | the job.s allreduce on nccl failed: rank 1 (node n0): did not end in 4.8 s: killed" r &&
	test -z "$(ls tmp)"
'

test_expect_success 'no private directory for the log: SKIP naming the rank' '
	: >notadir && TMPDIR=$PWD/notadir job 10 && test "$rc" = 2222 && rows >r && cat r &&
	grep -q "^n0 log SKIP None | rank 0 (node n0) no directory for NCCL.s log in .*notadir" r
'

test_done
