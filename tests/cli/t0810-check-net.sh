#!/usr/bin/env bash
# penny check's network checks without the lab: alone, rails SKIPs with its
# reason; nic-bw SKIPs on a tree without RDMA devices and FAILs (never
# PASSes) a NIC whose port is DOWN; under a launcher (two "nodes" from
# PENNY_NODE_ID, no RDMA here) nic-bw SKIPs on every node, rails without a
# plan SKIPs (the nodes have no GPU to plan with) and with a plan naming NICs
# the nodes lack FAILs naming each.  The keys are in --list-keys and range
# checked.
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/helpers/trees.sh"


# verdicts FILE: "check node target verdict | detail" lines of a --json run
verdicts() {
	python3 - "$1" <<-'PY'
	import json, sys
	for r in json.load(open(sys.argv[1]))["results"]:
	    print(r["check"], r["node"], r["target"], r["verdict"], "|", r["detail"])
	PY
}

# run2 ARGS: rank 0 on node a, rank 1 on node b; rank 0's JSON in out0, exit codes in rc0 rc1
run2() {
	local port
	port=$(free_port) || return 1
	PENNY_NODE_ID=b "$PENNY" check --rank 1 --nranks 2 --root 127.0.0.1:$port --timeout 30 \
		"$@" >out1 2>err1 &
	PENNY_NODE_ID=a "$PENNY" check --rank 0 --nranks 2 --root 127.0.0.1:$port --timeout 30 \
		--json "$@" >out0 2>err0
	echo $? >rc0
	wait $!
	echo $? >rc1
}

test_expect_success 'alone: rails SKIPs, needing 2 nodes under a launcher (exit 2)' '
	test_exit 2 penny check --only rails --json >alone.json &&
	json_valid alone.json && verdicts alone.json | tee alone.txt &&
	grep -q "^rails .* plan SKIP | needs at least 2 nodes under a launcher" alone.txt
'
test_expect_success 'nic-bw on a tree without RDMA devices: SKIP with the reason' '
	sys_root none node-none && sys_cpus 4 1 &&
	sys_bridge 0000:00:01.0 0x01 0x01 && sys_pci 0000:01:00.0 0x030200 0x10de 0x2335 0000:00:01.0 &&
	test_exit 2 penny check --sysfs-root none --only nic-bw --json >none.json &&
	verdicts none.json | tee none.txt &&
	grep -q "^nic-bw node-none NICs SKIP | no RDMA device on this node$" none.txt
'
test_expect_success 'nic-bw on a captured tree: a port DOWN FAILs with why, an ACTIVE one is not measured' '
	tree_switches sw && sys_port mlx5_1 1 DOWN Disabled "400 Gb/sec (4X NDR)" InfiniBand &&
	test_exit 1 penny check --sysfs-root sw --only nic-bw -d mlx5_1 --json >down.json &&
	verdicts down.json | tee down.txt &&
	grep -q "^nic-bw node-switches mlx5_1/1 FAIL | port 1 is DOWN (Disabled)$" down.txt &&
	test_exit 1 penny check --sysfs-root sw --only nic-bw --json >sw.json &&
	verdicts sw.json | tee sw.txt &&
	grep -q "^nic-bw node-switches mlx5_0/1 SKIP | not measured: the sysfs root is a captured tree$" sw.txt
'
test_expect_success 'two nodes, no RDMA: nic-bw SKIPs on each, rails without a plan SKIPs' '
	run2 --only nic-bw,rails && cat err0 err1 && verdicts out0 | tee job.txt &&
	test "$(cat rc0) $(cat rc1)" = "2 2" &&
	grep -q "^nic-bw a NICs SKIP | no RDMA device" job.txt &&
	grep -q "^nic-bw b NICs SKIP | no RDMA device" job.txt &&
	grep -q "^rails a plan SKIP | no plan from a.s topology: " job.txt
'
test_expect_success 'two nodes, a plan whose NICs the nodes lack: rails FAILs naming each' '
	penny ring-plan --nodes 2 --gpus 1 --nics 1 --hosts a,b --json >plan.json &&
	run2 --only rails --plan plan.json && cat err0 err1 && verdicts out0 | tee plan.txt &&
	test "$(cat rc0) $(cat rc1)" = "1 1" &&
	nic=$(python3 -c "import json; print(json.load(open(\"plan.json\"))[\"rings\"][0][\"segments\"][0][\"send\"][\"nic\"])") &&
	grep -q "^rails a $nic/1 FAIL | the plan uses $nic/1, which is not among this node" plan.txt &&
	grep -q "^rails b $nic/1 FAIL" plan.txt
'
test_expect_success 'the keys: listed, and range checked' '
	penny check --list-keys >keys.txt &&
	for k in nic-bw.fraction nic-bw.min-gbps nic-bw.size nic-bw.seconds rails.noise-bytes \
		rails.size; do grep -q "^$k " keys.txt || exit 1; done &&
	echo "nic-bw.fraction = 1.5" >bad.conf &&
	test_exit 2 penny check --only nic-bw --config bad.conf 2>err &&
	grep -q "bad.conf:1" err
'
test_expect_success '--plan that cannot be read: one line, exit 2, also alone' '
	mkfifo plan.fifo &&
	for f in /dev/zero plan.fifo . /nonexistent; do
		timeout 10 "$PENNY" check --only rails --plan $f >out 2>err; rc=$?
		test $rc -eq 2 && test "$(wc -l <err)" -eq 1 && grep -q "^penny check: --plan: " err ||
			{ echo "$f: rc $rc"; cat err; exit 1; }
	done
'
test_done
