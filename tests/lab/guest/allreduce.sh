#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Guest side of t0120 (after verbs.sh): penny allreduce-test over the engine's verbs transport
# on real soft-RoCE devices (vm.sh --pairs 1: rxe0 and rxe1 across a veth).
. "$(dirname "$0")/lib-guest.sh"

# -n 0: the check of every size only (one call out of place, one in place),
# no timed calls: these prove the results, not the speed
ar() { "$PENNY" allreduce-test --timeout 60 -n 0 -w 0 "$@"; }

test_expect_success '2 ranks forced over verbs (rxe0, rxe1): every algorithm, 0 wrong' '
	ar --np 2 --transport verbs --algo all -b 1 -e 2M -f 121 -d float >out &&
	test "$(grep -c "via verbs" out)" -eq 2 &&
	test "$(grep -c "Out of bounds values : 0 OK" out)" -eq 6 && ! grep -q FAILED out
'
test_expect_success '4 ranks over verbs, split across rxe0 and rxe1: every algorithm, bfloat16 avg' '
	ar --np 4 --transport verbs --algo all -b 1 -e 600K -f 609 -d bfloat16 -o avg >out &&
	test "$(grep -c "Out of bounds values : 0 OK" out)" -eq 6 && ! grep -q FAILED out
'
# -n 1 -w 0: the check's two calls of each size, then one timed call (the
# timed path across nodes too; more calls only time it better)
test_expect_success 'two nodes x 2 ranks: verbs chosen between nodes, shm inside, hierarchical' '
	port=$(rand_port) pids=
	for r in 1 2 3; do
		PENNY_NODE_ID=n$((r / 2)) "$PENNY" allreduce-test --rank $r --nranks 4 \
			--root 127.0.0.1:$port --timeout 60 -n 1 -w 0 --algo hierarchical,ring \
			-b 1 -e 1M -f 81 -d int32 -o sum >/dev/null 2>err$r &
		pids="$pids $!"
	done
	PENNY_NODE_ID=n0 "$PENNY" allreduce-test --rank 0 --nranks 4 --root 127.0.0.1:$port \
		--timeout 60 -n 1 -w 0 --algo hierarchical,ring -b 1 -e 1M -f 81 -d int32 -o sum >out &&
	for p in $pids; do wait $p || exit 1; done &&
	grep -q "4 ranks on 2 nodes" out && grep -q "via verbs" out && grep -q "via shm" out &&
	test "$(grep -c "Out of bounds values : 0 OK" out)" -eq 2
'
test_expect_success 'a rank killed mid-run over verbs: the others fail within the timeout' '
	r1=$(hwc rxe1 rcvd_pkts)
	"$PENNY" allreduce-test --np 2 --transport verbs --timeout 10 -b 64K -e 64K -n 100000 >out 2>err &
	parent=$!
	# once data moves over rxe1 (both ranks joined and connected)
	for ((i = 0; i < 600; i++)); do
		[ $(($(hwc rxe1 rcvd_pkts) - r1)) -gt 200 ] && break
		nap 0.1
	done
	victim=$(pgrep -P $parent | sort -n | sed -n 2p)
	kill -9 $victim
	start=$(date +%s)
	wait $parent; rc=$?
	took=$(( $(date +%s) - start ))
	cat err
	test $rc -ne 0 && test $took -le 25 && grep -q "rank 1" err
'
guest_done
