#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Guest side of t0120 (after allreduce.sh): the GPU path's cross-node proxy (src/gpu/xproxy*.c)
# over verbs on soft-RoCE (vm.sh --pairs 1: rxe0 and rxe1 across a veth),
# with the test plugin (GPU memory emulated in host memory).  Ranks on
# "other hosts" run in their own UTS namespace (another hostname), so penny
# sees hosts that differ; node a's ranks use rxe0, node b's rxe1.
. "$(dirname "$0")/lib-guest.sh"

export PENNY_PLUGIN_PATH=$BUILD/tests/plugins
pkts() { hwc "$@"; }
# every series of out (one per type x op) exact on every rank
exact() {
	grep -q "Out of bounds values : 0 OK" "$1" && grep -q "Rank outputs differ  : 0 OK" "$1" &&
		! grep -q FAILED "$1" || { cat "$1" err*; return 1; }
}

# hosts N ARGS: N ranks, rank r on host h$r (rank 0 on the VM's own name),
# NIC rxe(r % 2) as its rail (PENNY_IB_HCA); rank 0's output in out.
hosts() {
	local n=$1 port=$(rand_port) r pids= rc
	shift
	for ((r = 1; r < n; r++)); do
		PENNY_IB_HCA=rxe$((r % 2)) unshare -u sh -c 'hostname "$0" && exec "$@"' h$r \
			"$PENNY" allreduce-test --rank $r --nranks $n --root 127.0.0.1:$port "$@" \
			>/dev/null 2>err$r &
		pids="$pids $!"
	done
	PENNY_IB_HCA=rxe0 "$PENNY" allreduce-test --rank 0 --nranks $n --root 127.0.0.1:$port "$@" \
		>out 2>err0
	rc=$?
	for p in $pids; do wait $p || rc=1; done
	return $rc
}

# one job checks every type x op (50 series; -n 0: the check only, no
# timed calls), each exact: one launch where one per pair cost seconds of
# start-up apiece
test_expect_success 'auto between hosts with RDMA ports: verbs, every type x op exact' '
	s0=$(pkts rxe0 sent_pkts) && s1=$(pkts rxe1 sent_pkts) &&
	PENNY_XNODE_CHUNK=4096 hosts 2 --timeout 60 --backend fake -d all -o all \
		-b 1 -e 20K -f 7 -n 0 -w 0 && exact out &&
	test "$(grep -c "Out of bounds values : 0 OK" out)" -eq 50 &&
	for t in int8 uint64 bfloat16 double; do
		for o in sum prod min max avg; do
			grep -qE "^ +[0-9]+ +[0-9]+ +$t +$o " out || { echo "no row $t $o"; exit 1; }
		done
	done &&
	grep -q "GPU-driven (.*verbs between nodes" out &&
	test $(($(pkts rxe0 sent_pkts) - s0)) -gt 1000 && test $(($(pkts rxe1 sent_pkts) - s1)) -gt 1000
'
test_expect_success 'emulated nodes (PENNY_NODE_ID) 2 x 2, verbs forced, PENNY_XNODE_NIC, 3 QPs, slots wrap, -G' '
	port=$(rand_port) pids=
	export PENNY_XNODE_TRANSPORT=verbs PENNY_XNODE_QPS=3 PENNY_XNODE_CHUNK=4096 PENNY_XNODE_SLOTS=2
	s1=$(pkts rxe1 rcvd_pkts)
	for r in 1 2 3; do
		PENNY_XNODE_NIC=rxe$((r / 2)):1 PENNY_NODE_ID=n$((r / 2)) "$PENNY" allreduce-test --rank $r \
			--nranks 4 --root 127.0.0.1:$port --timeout 60 --backend fake -d int64 -o sum \
			-b 8 -e 64K -f 81 -n 2 -w 1 -G 2 >/dev/null 2>err$r &
		pids="$pids $!"
	done
	PENNY_XNODE_NIC=rxe0 PENNY_NODE_ID=n0 "$PENNY" allreduce-test --rank 0 --nranks 4 \
		--root 127.0.0.1:$port --timeout 60 --backend fake -d int64 -o sum -b 8 -e 64K -f 81 \
		-n 2 -w 1 -G 2 >out 2>err0 &&
	for p in $pids; do wait $p || exit 1; done &&
	exact out && grep -q "across 2 nodes GPU-driven (.*verbs between nodes" out &&
	test $(($(pkts rxe1 rcvd_pkts) - s1)) -gt 200
'
test_expect_success '3 hosts of one rank over verbs (rxe0, rxe1, rxe0), wrapping 2 slots' '
	PENNY_XNODE_TRANSPORT=verbs PENNY_XNODE_CHUNK=4096 PENNY_XNODE_SLOTS=2 hosts 3 --timeout 60 \
		--backend fake -d float -o sum -b 4 -e 300K -f 32 -n 2 -w 1 && exact out &&
	grep -q "across 3 nodes GPU-driven (.*verbs between nodes" out
'
# kill -SIG the rank on host h1 once the job moves data (rxe1 receives:
# both ranks joined and their proxies connected; a fixed sleep killed it
# before it joined on a busy machine, and rank 0 then rightly reported
# "ranks 1 to join"); rank 0 must fail within its --timeout (10 s) plus
# slack of the signal, with one line naming rank 1
peer_dies() {
	local sig=$1 port=$(rand_port) victim start rc r0 r1 i
	r1=$(pkts rxe1 rcvd_pkts)
	PENNY_IB_HCA=rxe1 unshare -u sh -c 'hostname h1 && exec "$@"' sh "$PENNY" allreduce-test \
		--rank 1 --nranks 2 --root 127.0.0.1:$port --timeout 10 --backend fake -b 8M -e 8M \
		-n 100000 -w 0 >/dev/null 2>err1 &
	victim=$!
	PENNY_IB_HCA=rxe0 timeout 90 "$PENNY" allreduce-test --rank 0 --nranks 2 \
		--root 127.0.0.1:$port --timeout 10 --backend fake -b 8M -e 8M -n 100000 -w 0 \
		>/dev/null 2>err0 &
	r0=$!
	for ((i = 0; i < 600; i++)); do
		[ $(($(pkts rxe1 rcvd_pkts) - r1)) -gt 200 ] && break
		kill -0 $r0 2>/dev/null || break
		nap 0.1
	done
	echo "# data moving after $((i / 10)) s: stopping rank 1 with SIG$sig"
	start=$(date +%s)
	kill -$sig $victim
	wait $r0
	rc=$?
	took=$(($(date +%s) - start))
	kill -9 $victim 2>/dev/null
	wait
	echo "# rank 0: status $rc $took s after the signal: $(cat err0)"
	test $rc -ne 0 && test $rc -ne 124 && test $took -le 25 && test "$(wc -l <err0)" -eq 1 &&
	grep -Eq "rank 1|node 1" err0
}
test_expect_success 'a peer killed mid-run (another host): rank 0 fails within the timeout, naming it' '
	peer_dies 9
'
# SIGSTOP: its socket stays open and its NIC still acknowledges, but its
# kernel frees no slot: the senders' credit reads find none, and the
# kernels wait for its chunks; whichever gives up first names it
test_expect_success 'a peer stopped mid-run (SIGSTOP): rank 0 fails within the timeout, naming it' '
	peer_dies STOP
'
# The proxy over rxe against the proxy over tcp (the same veth), 2 hosts x 1
# rank, float sum, 3 calls per size (the time column): soft-RoCE is the kernel's
# software, not a NIC, and the lab's VM is emulated (no KVM here): these show
# how the two paths compare in the lab, not hardware numbers.
for tp in verbs tcp; do
	PENNY_XNODE_TRANSPORT=$tp hosts 2 --timeout 60 --backend fake -d float -o sum -b 4K -e 64K \
		-f 16 -n 3 -w 1 && exact out >/dev/null && cp out bench.$tp
	awk -v tp=$tp '/^ +[0-9]+ +[0-9]+ / { print "# xnode-bench", tp, $1, "B", $6, "us" }' out
done
test_expect_success 'measure: proxy over verbs and over tcp ran, 0 wrong (numbers above)' '
	test -s bench.verbs && test -s bench.tcp
'
guest_done
