#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# penny check's alltoall across four network-namespace hosts wired as a full
# mesh (one veth pair per two hosts, each host one address on lo and a
# route to every other through their own veth), one rank each over tcp, so
# that every node pair has a link of its own: healthy, it PASSes, run after
# run; with one link slowed by tc (tbf on both ends of one veth pair) it
# FAILs naming that node pair, and the link it crossed from the nodes'
# topologies (checkjob.sh's tree: a rank's GPU0 is served by mlx5_0, rail 0;
# n4 lists its NICs the other way round, -d mlx5_3,mlx5_0, so its GPU0's NIC
# is on rail 1 and its pairs cross the spine).
# spins: four ranks busy-wait (tests/run.sh keeps it apart from the lab's guests)
. "$(dirname "$0")/lib-cluster.sh"
cluster_private "$@"
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/lab/lib-cluster.sh"
. "$TOP/tests/helpers/checkjob.sh"

cluster_need ip nsenter tc python3
N=4

# mesh: hosts n1..nN, 10.78.0.K/32 on lo, veth vIJ (in nI) <-> vJI (in nJ)
mesh() {
	local i j
	mount -t tmpfs -o mode=755 tmpfs /run || return 1
	mkdir -p /run/netns /run/cluster-uts || return 1
	for ((i = 1; i <= N; i++)); do
		ip netns add "n$i" || return 1
		CLUSTER_HOSTS+=("n$i")
		: >/run/cluster-uts/"n$i"
		unshare --uts=/run/cluster-uts/"n$i" hostname "n$i" || return 1
		ip -n "n$i" link set lo up && ip -n "n$i" addr add "10.78.0.$i/32" dev lo || return 1
	done
	for ((i = 1; i <= N; i++)); do
		for ((j = i + 1; j <= N; j++)); do
			ip link add "v$i$j" netns "n$i" type veth peer name "v$j$i" netns "n$j" &&
				ip -n "n$i" link set "v$i$j" up && ip -n "n$j" link set "v$j$i" up &&
				ip -n "n$i" route add "10.78.0.$j/32" dev "v$i$j" src "10.78.0.$i" &&
				ip -n "n$j" route add "10.78.0.$i/32" dev "v$j$i" src "10.78.0.$j" ||
				return 1
		done
	done
}
mesh || cluster_skip "cannot make the network namespaces"
rail_tree tree
# Four ranks that spin on a shared 2-CPU machine wait for each other's time
# slices: measured here, a healthy 16 KiB exchange took from 10 us to 19 ms,
# consistently per pair, so the job's median is no bar on this machine (its
# rule is the unit tests'); a floor is: healthy pairs stay above 0.003 Gb/s
# (8 KiB in 20 ms), the slowed link (160 kbit/s each way: 8 KiB in 0.4 s,
# 0.00016 Gb/s) far below 0.001
printf 'alltoall.size = 8192\nalltoall.iters = 20\nalltoall.min-gbps = 0.001\nalltoall.pair-margin = 1\n' >lab.conf

# run OUT: penny check --only alltoall, rank K-1 on host nK (node nK);
# rank 0's --json in OUT, its exit status returned; seconds in took
run() {
	local out=$1 port=$((20000 + RANDOM % 20000)) i pids= p rc t0
	t0=$(date +%s.%N)
	for ((i = N; i >= 1; i--)); do
		# shellcheck disable=SC2046
		PENNY_NODE_ID=n$i on "n$i" "$PENNY" check --rank $((i - 1)) --nranks $N \
			--root 10.78.0.1:$port --timeout 30 --sysfs-root tree --only alltoall \
			--config lab.conf $([ $i = 4 ] && echo "-d mlx5_3,mlx5_0") --json \
			>"$out.$i" 2>"err$i" &
		[ $i -gt 1 ] && pids="$pids $!"
	done
	wait $!
	rc=$?
	for p in $pids; do wait $p; done
	cp "$out.1" "$out"
	took=$(python3 -c "import sys; print(round(float(sys.argv[1]) - float(sys.argv[2]), 1))" \
		"$(date +%s.%N)" "$t0")
	echo "# rc=$rc took=$took s"
	return $rc
}

# rows OUT: "node target verdict measured | detail" of the alltoall rows
rows() {
	python3 -c 'import json,sys
for r in json.load(open(sys.argv[1]))["results"]:
    if r["check"] == "alltoall":
        print(r["node"], r["target"], r["verdict"], r["measured"], r["expected"], "|",
              r["source"], "|", r["detail"])' "$1"
}

# slow I J: tbf on both ends of the link between nI and nJ
slow() {
	on "n$1" tc qdisc add dev "v$1$2" root tbf rate 160kbit burst 4kb latency 1s &&
		on "n$2" tc qdisc add dev "v$2$1" root tbf rate 160kbit burst 4kb latency 1s
}
unslow() {
	on "n$1" tc qdisc del dev "v$1$2" root
	on "n$2" tc qdisc del dev "v$2$1" root
}

test_expect_success 'the mesh: every host reaches every other over its own veth' '
	for i in 1 2 3 4; do for j in 1 2 3 4; do
		[ $i = $j ] || on n$i ip route get 10.78.0.$j | grep -q "dev v$i$j src 10.78.0.$i" ||
			exit 1
	done; done
'

for k in 1 2 3; do
test_expect_success "healthy mesh: alltoall PASSes (run $k of 3: no false FAIL)" '
	run ok.json && rows ok.json >r && cat r &&
	test "$(grep -c " PASS " r)" -eq 6 &&
	grep -q "^n4 pairs PASS .* over spine (rail 1 to rail 0), tcp, .*; 0 of 3 pairs below$" r &&
	grep -q "^job slowest-pair PASS .*; 0 of 6 pairs below$" r
'
done

test_expect_success 'the n1-n2 link slowed by tc: FAIL naming n1-n2 over rail 0 (leaf)' '
	slow 1 2 && { run slow.json; rc=$?; unslow 1 2; } &&
	rows slow.json >r && cat r && test $rc -eq 1 &&
	grep -q "^job slowest-pair FAIL [0-9.e+-]* [0-9.e+-]* | config: alltoall.min-gbps | slowest n[12]-n[12]: rank [01] (mlx5_0/1) - rank [01] (mlx5_0/1) over rail 0 (leaf), tcp, .*; 1 of 6 pairs below$" r &&
	grep -q "^n1 pairs FAIL .* | slowest n1-n2: .*; 1 of 3 pairs below: with n2$" r &&
	grep -q "^n2 pairs FAIL .* | slowest n2-n1: .*; 1 of 3 pairs below: with n1$" r &&
	grep -q "^n3 pairs PASS" r && grep -q "^n4 pairs PASS" r
'

test_expect_success 'the n1-n4 link slowed: FAIL naming n1-n4 over the spine (rail 0 to rail 1)' '
	slow 1 4 && { run slow4.json; rc=$?; unslow 1 4; } &&
	rows slow4.json >r && cat r && test $rc -eq 1 &&
	grep -q "^job slowest-pair FAIL .* | slowest \(n1-n4: rank 0 (mlx5_0/1) - rank 3 (mlx5_0/1) over spine (rail 0 to rail 1)\|n4-n1: rank 3 (mlx5_0/1) - rank 0 (mlx5_0/1) over spine (rail 1 to rail 0)\), tcp, .*; 1 of 6 pairs below$" r &&
	grep -q "^n1 pairs FAIL .*: with n4$" r && grep -q "^n4 pairs FAIL .*: with n1$" r &&
	grep -q "^n2 pairs PASS" r && grep -q "^n3 pairs PASS" r
'

# a slow node (every link of n3 slowed) FAILs alone: the others are below
# the bar only with it, and a gate that drained them too would drain the
# healthy nodes of the job
test_expect_success 'n3 slowed on all its links: n3 FAILs, the others PASS naming it' '
	slow 3 1 && slow 3 2 && slow 3 4 &&
	{ run slow3.json; rc=$?; unslow 3 1; unslow 3 2; unslow 3 4; } &&
	rows slow3.json >r && cat r && test $rc -eq 1 &&
	grep -q "^n3 pairs FAIL .*; 3 of 3 pairs below: with " r &&
	for n in n1 n2 n4; do
		grep -q "^$n pairs PASS .*; 1 of 3 pairs below: with n3 (slow with most)$" r || exit 1
	done &&
	grep -q "^job slowest-pair FAIL .* | slowest n[1-4]-n[1-4]: .*; 3 of 6 pairs below$" r
'

test_done
