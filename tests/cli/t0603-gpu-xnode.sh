#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The GPU-driven path across nodes (src/gpu/xproxy.c and the plugins'
# xnode_* calls) on the test plugin, whose "kernel" runs the boxes'
# protocol on the host: emulated nodes (PENNY_NODE_ID) of one and of two
# ranks, 2, 3 and 4 nodes, the proxy over tcp and over shm, every type x op
# at odd counts (in place and not), chunks that wrap their slots many
# times, CUDA graphs, bad settings, and a peer killed in the middle.
# Where no timing is asked about, -n 0: the exact check's calls only (the
# timed calls' outputs are not checked; on two shared CPUs each call of the
# tcp proxy costs its threads' scheduling, most of what this file takes).
# cost: 25
. "$(dirname "$0")/../lib.sh"

fakes=$BUILD/tests/plugins
export PENNY_PLUGIN_PATH=$fakes
one_line() { test "$(wc -l <"$1")" -eq 1 || { cat "$1"; return 1; }; }
rows() { grep -cE '^ +[0-9]+ +[0-9]+ ' "$1"; }

# nodes N x per P ranks (PENNY_NODE_ID), rank 0's output in $out
job() {
	local nodes=$1 per=$2 out=$3 port r pids= rc
	shift 3
	port=$(free_port) || return 1
	for ((r = 1; r < nodes * per; r++)); do
		PENNY_NODE_ID=n$((r / per)) "$PENNY" allreduce-test --rank $r --nranks $((nodes * per)) \
			--root 127.0.0.1:$port --timeout 30 "$@" >/dev/null 2>err$r &
		pids="$pids $!"
	done
	PENNY_NODE_ID=n0 "$PENNY" allreduce-test --rank 0 --nranks $((nodes * per)) \
		--root 127.0.0.1:$port --timeout 30 "$@" >"$out" 2>err0
	rc=$?
	for p in $pids; do wait $p || rc=1; done
	return $rc
}

# every section of the output (one per type x op) checked, none wrong
exact() {
	local n=$(grep -c "Out of bounds values :" "$1") d=$(grep -c "Rank outputs differ  :" "$1")
	test "$n" -ge 1 && test "$d" -eq "$n" &&
	test "$(grep -c "Out of bounds values : 0 OK" "$1")" -eq "$n" &&
	test "$(grep -c "Rank outputs differ  : 0 OK" "$1")" -eq "$n" || { cat "$1" err*; return 1; }
}

sizes() { case $1 in int8|uint8) echo 1;; half|bfloat16) echo 2;; int32|uint32|float) echo 4;;
	*) echo 8;; esac; }

for tp in tcp shm; do
	test_expect_success "2 nodes x 1, proxy over $tp: every type x op exact, odd counts" '
		export PENNY_XNODE_TRANSPORT=$tp PENNY_XNODE_CHUNK=4096 &&
		for t in int8 uint8 int32 uint32 int64 uint64 half bfloat16 float double; do
			es=$(sizes $t)
			# every op in one job; counts 1, 7, 49, 343, 2401: odd, one chunk and several
			job 2 1 out --backend fake -d $t -o all -b $es -e $((2401 * es)) -f 7 -n 0 ||
				{ echo "$t failed"; cat out err*; exit 1; }
			grep -q "fake: across 2 nodes GPU-driven (.*$tp between nodes, LL lines up to 2048 B)" out &&
			test "$(rows out)" -eq 25 && test "$(grep -c "Out of bounds values :" out)" -eq 5 &&
			for o in sum prod min max avg; do
				test "$(grep -cE "^ +[0-9]+ +[0-9]+ +$t +$o " out)" -eq 5 || exit 1
			done && exact out || { echo "$t"; exit 1; }
		done
	'
done

test_expect_success '2 nodes x 2: the whole buffer on every rail (small), slices + all-gather (large)' '
	for w in 1M 64; do
		PENNY_XNODE_WHOLE_MAX=$w PENNY_XNODE_CHUNK=4096 job 2 2 out --backend fake -d bfloat16 \
			-o avg -b 2 -e 64K -f 8 -n 0 && exact out && test "$(rows out)" -eq 6 ||
			{ echo "whole max $w"; exit 1; }
	done &&
	job 2 2 out --backend fake -d int32 -o max -b 4 -e 12K -f 3 -n 0 && exact out
'
test_expect_success '3 and 4 nodes of one rank, tcp and shm' '
	for n in 3 4; do
		for tp in tcp shm; do
			PENNY_XNODE_TRANSPORT=$tp job $n 1 out --backend fake -d float -o sum -b 4 -e 64K -f 16 \
				-n 0 && exact out && grep -q "across $n nodes GPU-driven" out ||
				{ echo "$n nodes $tp"; exit 1; }
		done
	done
'
test_expect_success 'tcp: 1, 3 and 8 sockets per peer, each chunk on its socket' '
	for k in 1 3 8; do
		PENNY_XNODE_TRANSPORT=tcp PENNY_XNODE_SOCKETS=$k PENNY_XNODE_CHUNK=4096 job 3 1 out \
			--backend fake -d int64 -o sum -b 8 -e 100K -f 7 -n 0 && exact out ||
			{ echo "$k sockets"; exit 1; }
	done
'
test_expect_success 'LL lines for small calls (PENNY_XNODE_LL): exact on both sides of the limit' '
	for tp in tcp shm; do
		for ll in 64K:65536 0:0; do
			PENNY_XNODE_TRANSPORT=$tp PENNY_XNODE_LL=${ll%:*} job 2 1 out --backend fake -d half \
				-o sum -b 2 -e 300K -f 5 -n 0 && exact out &&
			grep -q "LL lines up to ${ll#*:} B" out ||
				{ echo "$tp LL $ll"; exit 1; }
		done
		PENNY_XNODE_TRANSPORT=$tp PENNY_XNODE_LL=1M PENNY_XNODE_CHUNK=64K job 2 2 out \
			--backend fake -d uint8 -o max -b 1 -e 100K -f 9 -n 0 && exact out &&
		grep -q "LL lines up to 32768 B" out || { echo "$tp LL capped"; exit 1; }
	done
'
test_expect_success 'chunks wrap two slots hundreds of times, in place and not' '
	PENNY_XNODE_CHUNK=4096 PENNY_XNODE_SLOTS=2 job 2 1 out --backend fake -d double -o prod \
		-b 1M -e 1M -n 0 && exact out &&
	PENNY_XNODE_TRANSPORT=tcp PENNY_XNODE_CHUNK=4096 PENNY_XNODE_SLOTS=2 job 2 1 out --backend fake \
		-d uint8 -o sum -b 999999 -e 999999 -n 0 && exact out
'
test_expect_success 'CUDA graphs (-G) capture the GPU-driven allreduce across nodes' '
	PENNY_XNODE_CHUNK=4096 job 2 2 out --backend fake -G 4 -b 1K -e 64K -f 4 -n 4 -w 1 -d bfloat16 &&
	exact out &&
	grep -q "GPU-driven" out && test "$(rows out)" -eq 4
'
test_expect_success 'PENNY_XNODE=0: the host-staged path, which -G cannot capture' '
	PENNY_XNODE=0 job 2 1 out --backend fake -b 1K -e 4K && grep -q "hierarchical over 2 nodes" out &&
	exact out &&
	! PENNY_XNODE=0 job 2 1 out --backend fake -G 2 -b 1K -e 1K && one_line err0 &&
	grep -q "CUDA graphs cannot capture" err0
'
test_expect_success 'a plugin without the xnode calls runs the host-staged path' '
	PENNY_PLUGIN_PATH=$fakes/noxnode job 2 1 out --backend fake -b 1K -e 4K &&
	grep -q "hierarchical over 2 nodes" out && exact out
'
for bad in PENNY_XNODE_TRANSPORT=ib PENNY_XNODE_CHUNK=17 PENNY_XNODE_CHUNK=1K PENNY_XNODE_CHUNK=1G \
	PENNY_XNODE_SLOTS=1 PENNY_XNODE_SLOTS=x PENNY_XNODE=2 PENNY_XNODE_WHOLE_MAX=-1 \
	PENNY_XNODE_SOCKETS=0 PENNY_XNODE_SOCKETS=9 "PENNY_XNODE_SLOTS=1024 PENNY_XNODE_CHUNK=64M" \
	PENNY_XNODE_LL=2M PENNY_XNODE_LL=1x PENNY_XNODE_QPS=0 PENNY_XNODE_QPS=9 PENNY_XNODE_QPS=x \
	PENNY_XNODE_NIC=../x PENNY_XNODE_NIC=mlx5_0:0 PENNY_XNODE_NIC=mlx5_0:256 PENNY_XNODE_NIC=mlx5_0:; do
	test_expect_success "bad setting $bad: one line, exit 2" '
		export $bad &&
		! job 2 1 out --backend fake -b 1K -e 1K && one_line err0 &&
		grep -q "${bad%%=*}" err0
	'
done
test_expect_success 'verbs forced where no rank has an RDMA port: every rank fails, one line' '
	test -d /sys/class/infiniband && ls /sys/class/infiniband | grep -q . &&
		{ echo "# this host has RDMA devices: nothing to check"; exit 0; }
	! PENNY_XNODE_TRANSPORT=verbs job 2 1 out --backend fake -b 1K -e 1K && one_line err0 &&
	grep -q "rank 0 (host .*) has no ACTIVE RDMA port (PENNY_XNODE_NIC names one)" err0 &&
	! PENNY_XNODE_TRANSPORT=verbs PENNY_XNODE_NIC=nosuch0:1 job 2 1 out --backend fake -b 1K \
		-e 1K && one_line err0 && grep -q "NIC .nosuch0:1. (PENNY_XNODE_NIC)" err0
'
test_expect_success 'auto without RDMA ports: tcp between hosts (PENNY_XNODE_TRANSPORT=auto)' '
	test -d /sys/class/infiniband && ls /sys/class/infiniband | grep -q . &&
		{ echo "# this host has RDMA devices: nothing to check"; exit 0; }
	port=$(free_port) || exit 1
	PENNY_XNODE_TRANSPORT=auto PENNY_NODE_ID=n1 unshare -ru sh -c "hostname other && exec \"\$0\" \"\$@\"" \
		"$PENNY" allreduce-test --rank 1 --nranks 2 --root 127.0.0.1:$port --timeout 20 \
		--backend fake -b 1K -e 4K >/dev/null 2>err1 &
	PENNY_XNODE_TRANSPORT=auto PENNY_NODE_ID=n0 "$PENNY" allreduce-test --rank 0 --nranks 2 \
		--root 127.0.0.1:$port --timeout 20 --backend fake -b 1K -e 4K >out 2>err0 &&
	wait $! && exact out && grep -q "GPU-driven (.*tcp between nodes" out
'
for differ in PENNY_XNODE_CHUNK=8K PENNY_XNODE_LL=0; do
	test_expect_success "ranks that cut chunks otherwise ($differ): every rank fails, naming it" '
		port=$(free_port) || exit 1
		env $differ PENNY_NODE_ID=n1 "$PENNY" allreduce-test --rank 1 --nranks 2 \
			--root 127.0.0.1:$port --timeout 20 --backend fake -b 1K -e 1K >/dev/null 2>err1 &
		! PENNY_NODE_ID=n0 "$PENNY" allreduce-test --rank 0 --nranks 2 --root 127.0.0.1:$port \
			--timeout 20 --backend fake -b 1K -e 1K >/dev/null 2>err0
		rc=$?
		wait
		test $rc -eq 0 && one_line err0 && grep -q "cuts the cross-node chunks otherwise" err0
	'
done
test_expect_success 'a peer killed in the middle: the others stop within the timeout, naming it' '
	port=$(free_port) || exit 1
	PENNY_NODE_ID=n1 "$PENNY" allreduce-test --rank 1 --nranks 2 --root 127.0.0.1:$port \
		--timeout 10 --backend fake -b 16M -e 16M -n 100000 -w 0 >/dev/null 2>err1 &
	victim=$!
	# once it has spent half a CPU second (its calls: joining and setting
	# up cost a few hundredths), not after a fixed 3 s (6 CPU s of sums)
	(
		for i in $(seq 600); do
			read -r -a st </proc/$victim/stat || break
			[ $((st[13] + st[14])) -lt 50 ] || break
			sleep 0.05
		done
		kill -9 $victim
	) &
	start=$(date +%s)
	! PENNY_NODE_ID=n0 timeout 60 "$PENNY" allreduce-test --rank 0 --nranks 2 \
		--root 127.0.0.1:$port --timeout 10 --backend fake -b 16M -e 16M -n 100000 -w 0 \
		>/dev/null 2>err0 &&
	wait &&
	test $(($(date +%s) - start)) -lt 40 &&
	grep -v "warning: ranks 0 and 1, on emulated nodes n0 and n1 of one host, share one GPU" \
		err0 >err0.left && one_line err0.left &&
	grep -Eq "rank 1|proxy" err0.left && ! grep -q "^timeout" err0 &&
	! ls /dev/shm | grep -q "penny-xbox-$victim-"
'
test_done
