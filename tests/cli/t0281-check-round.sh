#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# penny check as a health gate, hardening round: every rank of a job that
# is its node's first writes its --prom and --junit (exit code 2 when the
# job could not run, lost a rank or was stopped by SIGTERM, never the
# previous run's PASS); the alltoall's nodes below the bar past the 4 a
# rank lists are counted ("and 1 more"); two machines that call themselves
# one node (same hostname and network namespace), and two nodes of one
# name, are refused naming it, not merged; a PENNY_NODE_ID longer than a
# row holds is refused, not cut; risen error counters past what a row
# holds, and a GPU's degraded PCIe links past the one named, are counted.
# Emulated nodes (PENNY_NODE_ID) on the tree of checkjob.sh, over tcp.
# cost: 14
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/helpers/checkjob.sh"

rail_tree n1
export PENNY_IB_DISABLE=1
printf 'alltoall.size = 65536\nalltoall.min-gbps = 100000\n' >miss.conf

# jobk N "NODE..." ARGS: penny check ARGS as ranks 0..N-1 of a job of N on
# those nodes (fewer nodes than N: the last ranks never come); rank r's
# stdout in outR, stderr in errR, --prom in pR.prom (seeded with an older
# run's PASS), the exit codes in rc
jobk() {
	local total=$1 ids=($2) port r pids=() n
	n=$(wc -w <<<"$2")
	shift 2
	port=$(free_port) || return 1
	for ((r = 0; r < n; r++)); do
		printf 'penny_check_exit_code 0\n' >p$r.prom
	done
	for ((r = n - 1; r >= 0; r--)); do
		PENNY_NODE_ID=${ids[$r]} "$PENNY" check --rank $r --nranks $total \
			--root 127.0.0.1:$port --sysfs-root n1 --prom p$r.prom "$@" >out$r 2>err$r &
		pids[$r]=$!
	done
	rc=
	for ((r = 0; r < n; r++)); do wait ${pids[$r]}; rc="$rc$?"; done
	echo "rc=$rc"
}
# prom_code FILE CODE: FILE is a whole textfile with that exit code
prom_code() {
	grep -qx "penny_check_exit_code $2" "$1" && grep -q "^penny_check_last_run_timestamp" "$1"
}

# Rank 1 exited 2 (rank 2 never came) and left its --prom as it was: the
# textfile collector kept the previous run's exit code 0 for that node.
test_expect_success 'a job that could not run: every node first rank rewrites --prom with 2' '
	jobk 3 "n0 n1" --timeout 3 --only inventory --junit j.xml && test "$rc" = 22 &&
	grep -q "waiting for ranks 2 to join" err1 &&
	prom_code p0.prom 2 && prom_code p1.prom 2
'
test_expect_success 'a rank killed mid-run: the other nodes rewrite --prom with 2' '
	printf "alltoall.size = 64M\nalltoall.iters = 10000\n" >big.conf && port=$(free_port) &&
	for r in 2 1 0; do
		printf "penny_check_exit_code 0\n" >k$r.prom
		PENNY_NODE_ID=n$r "$PENNY" check --rank $r --nranks 3 --root 127.0.0.1:$port \
			--sysfs-root n1 --timeout 20 --only alltoall --config big.conf --prom k$r.prom \
			>ko$r 2>ke$r &
		pid[$r]=$!
	done
	sleep 2 && kill -9 ${pid[2]} && wait ${pid[0]}; r0=$?; wait ${pid[1]}; r1=$?
	cat ke0 ke1 && test "$r0$r1" = 22 && grep -q "rank 2 .* closed its connection" ke1 &&
	prom_code k0.prom 2 && prom_code k1.prom 2
'
# srun's time limit, scancel, timeout(1): SIGTERM to every rank killed
# them at once, every node's textfile still read the previous PASS
test_expect_success 'a job stopped by SIGTERM: every node rewrites --prom with 2' '
	port=$(free_port) &&
	for r in 1 0; do
		printf "penny_check_exit_code 0\n" >t$r.prom
		PENNY_NODE_ID=n$r "$PENNY" check --rank $r --nranks 2 --root 127.0.0.1:$port \
			--sysfs-root n1 --timeout 20 --only alltoall --config big.conf --prom t$r.prom \
			--junit t$r.xml >to$r 2>te$r &
		pid[$r]=$!
	done
	sleep 2 && kill -TERM ${pid[0]} ${pid[1]} && wait ${pid[0]}; r0=$?; wait ${pid[1]}; r1=$?
	cat te0 te1 && test "$r0$r1" = 22 && grep -q "stopped by signal 15" te1 &&
	prom_code t0.prom 2 && prom_code t1.prom 2 && grep -q "stopped by signal 15" t1.xml
'
printf 'alltoall.size = 65536\nalltoall.min-gbps = 0.000001\n' >ok.conf
test_expect_success 'a job that ran: another node writes its own results and the job status' '
	jobk 2 "n0 n1" --timeout 20 --only alltoall --config ok.conf && test "$rc" = 00 &&
	prom_code p0.prom 0 && prom_code p1.prom 0 &&
	grep -q "^penny_check_result{check=\"alltoall\",node=\"n1\",target=\"pairs\"} 1$" p1.prom &&
	! grep -q "node=\"n0\"" p1.prom
'
# one path for every rank (a shared directory): the other nodes write
# first, rank 0 last: the file holds the job's results, not one node's
test_expect_success 'a --prom and --junit every node shares: the job document is kept' '
	port=$(free_port) &&
	for r in 3 2 1 0; do
		PENNY_NODE_ID=n$r "$PENNY" check --rank $r --nranks 4 --root 127.0.0.1:$port \
			--sysfs-root n1 --timeout 20 --only alltoall --config ok.conf \
			--prom shared.prom --junit shared.xml >so$r 2>se$r &
		pid[$r]=$!
	done
	wait ${pid[0]}; r0=$? && wait && prom_code shared.prom $r0 &&
	test "$(grep -o "node=\"n[0-3]\"" shared.prom | sort -u | wc -l)" = 4 &&
	test "$(grep -c "<testcase" shared.xml)" -ge 5
'
test_expect_success 'the second rank of a node leaves the file to its node first rank' '
	jobk 2 "n0 n0" --timeout 20 --only inventory && test "$rc" = 00 &&
	prom_code p0.prom 0 && test "$(cat p1.prom)" = "penny_check_exit_code 0"
'

# rows: "node target verdict | detail" of rank 0's JSON (out0)
rows() {
	python3 -c 'import json
for r in json.load(open("out0"))["results"]:
    if r["check"] == "alltoall":
        print(r["node"], r["target"], r["verdict"], "|", r["detail"])'
}
# Six nodes, each below the bar with the 5 others: the rows named 4 of
# them and left the fifth out without a word.
test_expect_success 'alltoall: the nodes below past the 4 listed are counted' '
	jobk 6 "a b c d e f" --timeout 20 --only alltoall --config miss.conf --json &&
	test "$rc" = 111111 && rows >r && cat r &&
	test "$(grep -c " pairs FAIL | .*; 5 of 5 pairs below: with [a-f], [a-f], [a-f], [a-f] and 1 more$" r)" = 6
'

# Two machines named alike (one hostname, the initial network namespace
# of each) were one node to the rendezvous: their NICs, GPUs and rows
# mixed as one node's.  Emulated: the second "machine" is a copy of the
# tree with its own boot id (/proc/sys/kernel/random/boot_id, read through
# --sysfs-root like every procfs file).
mkdir -p n1/proc/sys/kernel/random && echo 0a0b0c0d-0000-4000-8000-000000000000 \
	>n1/proc/sys/kernel/random/boot_id && cp -a n1 n2 &&
	echo 0f0e0d0c-0000-4000-8000-000000000001 >n2/proc/sys/kernel/random/boot_id
test_expect_success 'two machines of one hostname: refused, the name and the ranks said' '
	port=$(free_port) &&
	{ "$PENNY" check --rank 1 --nranks 2 --root 127.0.0.1:$port --sysfs-root n2 \
		--timeout 20 --only inventory --prom q1.prom >o1 2>e1 & } &&
	test_exit 2 "$PENNY" check --rank 0 --nranks 2 --root 127.0.0.1:$port --sysfs-root n1 \
		--timeout 20 --only inventory --prom q0.prom >o0 2>e0
	wait $!; r1=$? && cat e0 e1 && test $r1 = 2 &&
	grep -q "^penny check: ranks 0 and 1 run on two machines (boot ids 0a0b0c0d and 0f0e0d0c) that both call themselves node .$(hostname | cut -c1-63). (hostname and network namespace, or PENNY_NODE_ID): give each machine its own hostname or PENNY_NODE_ID$" e0 &&
	test "$(wc -l <e0)" = 1 && prom_code q0.prom 2 && prom_code q1.prom 2
'
# Hostnames of 64 bytes (Linux's longest) alike but for the last: two
# nodes (the rendezvous told nodes apart by 60 bytes: one node, the second
# machine never judged as its own); a rank's hello holds 63, so both read
# as one name: refused, as two nodes of one name are.
if [ "$(id -u)" -eq 0 ] && unshare -u true 2>/dev/null; then
	H=$(printf "h%.0s" $(seq 63))
	test_expect_success 'two machines of 64-byte hostnames alike but for the last: refused' '
		port=$(free_port) &&
		{ unshare -u sh -c "hostname ${H}b && exec \"\$0\" check --rank 1 --nranks 2 \
			--root 127.0.0.1:$port --sysfs-root n2 --timeout 20 --only inventory" \
			"$PENNY" >o1 2>e1 & } &&
		{ unshare -u sh -c "hostname ${H}a && exec \"\$0\" check --rank 0 --nranks 2 \
			--root 127.0.0.1:$port --sysfs-root n1 --timeout 20 --only inventory" \
			"$PENNY" >o0 2>e0; r0=$?; } ; wait $!; r1=$? && cat e0 e1 &&
		test "$r0$r1" = 22 &&
		grep -q "^penny check: ranks 0 and 1 are on two nodes both named .${H}. (one hostname in two network namespaces, 64-byte hostnames alike in the 63 bytes" e0
	'
else
	test_skip 'two machines of 64-byte hostnames' 'needs root and unshare -u'
fi

# Two nodes of one name (a hostname in two network namespaces; here a
# PENNY_NODE_ID that is the other rank's hostname): both judged, their
# rows under one name, a node's failure not telling which.
test_expect_success 'two nodes of one name: refused, the name and the ranks said' '
	port=$(free_port) &&
	{ PENNY_NODE_ID=$(hostname) "$PENNY" check --rank 1 --nranks 2 --root 127.0.0.1:$port \
		--sysfs-root n1 --timeout 20 --only inventory >d1 2>de1 & } &&
	test_exit 2 "$PENNY" check --rank 0 --nranks 2 --root 127.0.0.1:$port --sysfs-root n1 \
		--timeout 20 --only inventory >d0 2>de0
	wait $!; r1=$? && cat de0 && test $r1 = 2 && test "$(wc -l <de0)" = 1 &&
	grep -q "^penny check: ranks 0 and 1 are on two nodes both named .$(hostname | cut -c1-63). (one hostname in two network namespaces, 64-byte hostnames alike in the 63 bytes a rank.s hello holds, or a PENNY_NODE_ID that is another node.s hostname): their results would read as one node.s; give each its own hostname or PENNY_NODE_ID$" de0
'

# 70 bytes: the rows held the first 63, two such nodes alike but for their
# end read as one
L=$(printf "%068d" 0)
test_expect_success 'a PENNY_NODE_ID longer than a row holds: refused, alone and in a job' '
	PENNY_NODE_ID=${L}ab test_exit 2 "$PENNY" check --sysfs-root n1 --only inventory \
		--prom s.prom >o 2>e && cat e && test "$(wc -l <e)" = 1 &&
	grep -q "^penny check: PENNY_NODE_ID .0\{40\}\.\.\.. is 70 bytes: penny check names a node in at most 63$" e &&
	prom_code s.prom 2 &&
	jobk 2 "${L}ab ${L}cd" --timeout 20 --only inventory && test "$rc" = 22 &&
	grep -q "^penny check: rank 0.s node name .0\{40\}\.\.\.. (PENNY_NODE_ID) is 70 bytes" err0
'

# Fourteen error counters that rose: the detail ran out in the middle of
# a name ("rose: ..., rx_vport_rdma_e_106_err +5, rx_v"), the rest not said.
. "$TOP/tests/helpers/trees.sh"
test_expect_success 'counters: more risen counters than the detail holds are counted' '
	tree_pairs ctr node-ok >/dev/null && printf "counters.window = 2\n" >w.conf || exit 1
	h=ctr/sys/class/infiniband/mlx5_1/ports/1/hw_counters
	mkdir -p $h && (cd $h && for i in $(seq 101 114); do echo 0 >rx_vport_rdma_e_${i}_err; done) || exit 1
	"$PENNY" check --sysfs-root ctr --only counters --config w.conf --json >c.json &
	pid=$! n=0
	while ! ls -l /proc/$pid/fd 2>/dev/null | grep -q rx_vport_rdma_e_114_err && [ $n -lt 150 ]; do
		sleep 0.02; n=$((n + 1)); done
	for i in $(seq 101 114); do echo 5 >$h/rx_vport_rdma_e_${i}_err; done
	{ wait $pid; test $? = 1; } &&
	python3 -c "import json; print([x[\"detail\"] for x in json.load(open(\"c.json\"))[\"results\"] if x[\"target\"] == \"mlx5_1/1\"][0])" >d &&
	cat d && grep -q "^rose: rx_vport_rdma_e_101_err +5, rx_vport_rdma_e_102_err +5, .*, rx_vport_rdma_e_1[01][0-9]_err +5 and [0-9]* more$" d &&
	python3 -c "import re,sys; t=open(\"d\").read(); n=len(re.findall(\"_err [+]5\", t)) + int(re.search(\"and ([0-9]+) more\", t).group(1)); assert n == 14, n"
'

# Two degraded links on a GPU's path: the detail said "(and more links)",
# not how many
test_expect_success 'pcie: the degraded links past the one named are counted' '
	tree_pairs dn node-ok >/dev/null &&
	d=dn/sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0 &&
	echo 8 >$d/current_link_width && echo 4 >$d/0000:02:00.0/0000:03:00.0/current_link_width &&
	test_exit 1 "$PENNY" check --sysfs-root dn --only pcie --json >dn.json 2>/dev/null &&
	python3 -c "import json; print([x[\"detail\"] for x in json.load(open(\"dn.json\"))[\"results\"] if x[\"target\"] == \"GPU0\"][0])" >d &&
	cat d && grep -q "^downtrained width link at 0000:03:00.0: Gen5 x4 of Gen5 x16 (and 1 more link)$" d
'

test_done
