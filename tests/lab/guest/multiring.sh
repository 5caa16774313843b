#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Guest side of t0150 (after bw.sh, then check.sh): two "nodes" (PENNY_NODE_ID) x two rails (vm.sh
# --pairs 2: rxe0<->rxe1 is rail 0, rxe2<->rxe3 rail 1), 2 x 2 ranks, the
# multiring algorithm with one channel per rail.  Traffic must appear on both
# rails in both directions, and every packet a rail's device sends is one its
# peer on the same rail receives (nothing crosses rails).  Then the same with
# a ring plan (allreduce-test --plan, no PENNY_IB_HCA): the plan alone puts
# every connection on its NICs.
. "$(dirname "$0")/lib-guest.sh"
warm_python

pkts() { hwc "$@"; }
snap() { for d in rxe0 rxe1 rxe2 rxe3; do echo "$d $(pkts $d sent_pkts) $(pkts $d rcvd_pkts)"; done; }

# Soft-RoCE's retransmission path, summed over the four devices: requests
# seen twice or out of order, sequence NAKs, the requester's retries.  A
# guest starved by a busy host misses the 67 ms ACK timeout of penny's QPs
# (4.096 us << 14) and rxe retransmits.  Under load (2 CPUs, load 7) a
# multiring job failed with "remote invalid request" on a receive: the
# responder's class C NAK, which rxe gives when the packet stream's opcode
# sequence or lengths do not add up; penny's writes (a slot, in bounds, or
# the 8-byte credit word) never fail so on an idle lab.
retx() {
	local d k n=0
	for d in rxe0 rxe1 rxe2 rxe3; do
		for k in duplicate_request out_of_seq_request rcvd_seq_err completer_retry_err; do
			n=$((n + $(pkts $d $k)))
		done
	done
	echo $n
}
# again CMD...: CMD once more when it failed with rxe's "remote invalid
# request" and rxe retransmitted during it (retx moved): the lab's load, not
# penny; said loudly on fd 3 (the TAP stream: the check runs with 3>&1).
# Any other failure, or that error without a retransmit, stays a failure.
again() {
	local r0
	r0=$(retx)
	"$@" && return 0
	grep -q "remote invalid request" err* || return 1
	[ "$(retx)" -gt "$r0" ] || { echo "# remote invalid request without a retransmit"; return 1; }
	{
		echo "# LOUD: rxe retransmitted ($(($(retx) - r0)) requests) and failed a request with" \
			"\"remote invalid request\" (soft-RoCE under load): once more"
		grep -h "remote invalid request" err* | head -n 2 | sed "s/^/#   /"
	} >&3
	"$@"
}

# Bytes each rxe device sent and received while penny top --json ran (file
# $1), one line per device; fails unless all four moved data both ways.
top_traffic() {
	python3 - "$1" <<'PY'
import json, sys
first, last = {}, {}
for line in open(sys.argv[1]):
    try:
        sample = json.loads(line)
    except ValueError:
        continue
    for p in sample["ports"]:
        first.setdefault(p["device"], p)
        last[p["device"]] = p
seen = {d: [last[d]["rx_bytes"] - first[d]["rx_bytes"], last[d]["tx_bytes"] - first[d]["tx_bytes"]] for d in first}
for d, hop in (("rxe0", "a->b rail 0"), ("rxe1", "b->a rail 0"), ("rxe2", "a->b rail 1"), ("rxe3", "b->a rail 1")):
    print("penny top: %s tx %d B (%s), rx %d B" % (d, seen.get(d, [0, 0])[1], hop, seen.get(d, [0, 0])[0]))
assert all(seen.get(d, [0, 0])[0] > 0 and seen.get(d, [0, 0])[1] > 0 for d in ("rxe0", "rxe1", "rxe2", "rxe3")), seen
PY
}

# Packet counters (snap before, after): every device sent and received, and
# each rail's two ends mirror each other: nothing crossed rails.  Leaves delta.
rails_pair_up() {
	paste before after | awk '{ s = $5 - $2; r = $6 - $3; print $1, s, r; if (s < 100 || r < 100) bad = 1 }
		END { exit bad }' >delta && cat delta &&
	awk 'NR == 1 { s0 = $2; r0 = $3 } NR == 2 { s1 = $2; r1 = $3 }
	     NR == 3 { s2 = $2; r2 = $3 } NR == 4 { s3 = $2; r3 = $3 }
	     END { exit !(s0 == r1 && s1 == r0 && s2 == r3 && s3 == r2) }' delta
}

# The jobs run with -n 0: the check of each size only (one call out of
# place, one in place), which moves the data the rails are judged by.
run_job() {
	local port=$(rand_port) pids= r hca node rc=0
	for r in 1 2 3; do
		if [ $r -lt 2 ]; then hca=rxe0,rxe2 node=a; else hca=rxe1,rxe3 node=b; fi
		PENNY_IB_HCA=$hca PENNY_NODE_ID=$node "$PENNY" allreduce-test --rank $r --nranks 4 \
			--root 127.0.0.1:$port --timeout 60 -n 0 -w 0 "$@" >/dev/null 2>err$r &
		pids="$pids $!"
	done
	PENNY_IB_HCA=rxe0,rxe2 PENNY_NODE_ID=a "$PENNY" allreduce-test --rank 0 --nranks 4 \
		--root 127.0.0.1:$port --timeout 60 -n 0 -w 0 "$@" >out 2>err0 || rc=1
	for p in $pids; do wait $p || rc=1; done
	return $rc
}

# watched JOB ARGS: JOB ARGS with the packet counters (before, after) and
# penny top --json (top.jsonl) around it
watched() {
	local topp i rc=0
	snap >before || return 1
	"$PENNY" top --json --count 600 --interval 0.5 --filter rxe >top.jsonl 2>top.err &
	topp=$!
	# its first sample, taken before the job moves anything
	for ((i = 0; i < 100; i++)); do
		[ -s top.jsonl ] && break
		nap 0.1
	done
	"$@" || rc=1
	nap 0.6 # one more sample after the job
	kill $topp
	wait $topp
	snap >after
	return $rc
}

# the multiring job of the first two checks, with --debug=VERBS: the second
# reads which devices each rank opened from its err files (rails.err*)
test_expect_success '2 nodes x 2 rails, multiring: 0 wrong, both rails carry traffic both ways' '
	again watched run_job --algo multiring -b 1 -e 1M -f 16 -d float --debug=VERBS &&
	for r in 0 1 2 3; do cp err$r rails.err$r || exit 1; done &&
	grep -E "via|Out of" out &&
	top_traffic top.jsonl &&
	test "$(grep -c "Out of bounds values : 0 OK" out)" -eq 1 &&
	rails_pair_up
' 3>&1
test_expect_success 'rails follow the channels: each rank opened rail 0 and rail 1' '
	grep -h "verbs transport on" rails.err* &&
	test "$(cat rails.err* | grep -c "verbs transport on rxe[02]")" -eq 4 &&
	test "$(cat rails.err* | grep -c "verbs transport on rxe[13]")" -eq 4
'

# run_plan_job ARGS: 2 x 2 ranks, nodes a and b, no PENNY_IB_HCA
run_plan_job() {
	local port=$(rand_port) pids= r node rc=0
	for r in 1 2 3; do
		if [ $r -lt 2 ]; then node=a; else node=b; fi
		PENNY_NODE_ID=$node "$PENNY" allreduce-test --rank $r --nranks 4 \
			--root 127.0.0.1:$port --timeout 60 -n 0 -w 0 "$@" >/dev/null 2>err$r &
		pids="$pids $!"
	done
	PENNY_NODE_ID=a "$PENNY" allreduce-test --rank 0 --nranks 4 \
		--root 127.0.0.1:$port --timeout 60 -n 0 -w 0 "$@" >out 2>err0 || rc=1
	for p in $pids; do wait $p || rc=1; done
	return $rc
}

test_expect_success 'ring-plan for nodes a (rxe0, rxe2) and b (rxe1, rxe3), rails 0 and 1' '
	topo_file a rxe0 rxe2 >a.json && topo_file b rxe1 rxe3 >b.json &&
	"$PENNY" ring-plan --topo-file a.json,b.json --rails rxe0:1:0,rxe1:1:0,rxe2:1:1,rxe3:1:1 \
		>plan.txt && cat plan.txt && grep -q "^0 violations$" plan.txt &&
	grep -q "^  a          rxe0 r0 > GPU0 GPU1 > rxe2 r1$" plan.txt &&
	"$PENNY" ring-plan --topo-file a.json,b.json --rails rxe0:1:0,rxe1:1:0,rxe2:1:1,rxe3:1:1 \
		--json >plan.json && "$PENNY" ring-plan --check plan.json
'
test_expect_success 'multiring --plan: 0 wrong, both rails both ways, nothing crosses rails, planned NICs only' '
	again watched run_plan_job --plan plan.json -b 1M -e 1M --debug=VERBS,COLL || { cat err*; exit 1; }
	grep -E "via|Plan|Ring|Out of" out &&
	test "$(grep -c "Out of bounds values : 0 OK" out)" -eq 1 &&
	grep -q "^# Plan plan.json: 2 rings, nodes matched by host name$" out &&
	grep -q "^#  Ring 0: 0 1 3 2$" out && grep -q "^#  Ring 1: 1 0 2 3$" out &&
	top_traffic top.jsonl >>traffic.txt &&
	cat traffic.txt &&
	rails_pair_up && sed "s/^/hw_counters sent_pkts rcvd_pkts: /" delta >>traffic.txt &&
	grep -h "verbs transport on" err* | sed "s/.*penny //" | sort | uniq -c &&
	for r in 0 1; do
		grep -q "verbs transport on rxe0:1" err$r && grep -q "verbs transport on rxe2:1" err$r &&
		! grep -q "verbs transport on rxe[13]" err$r || exit 1
	done &&
	for r in 2 3; do
		grep -q "verbs transport on rxe1:1" err$r && grep -q "verbs transport on rxe3:1" err$r &&
		! grep -q "verbs transport on rxe[02]" err$r || exit 1
	done
' 3>&1
# what the plan run moved, per device (also when it passed: the log keeps it)
[ -f traffic.txt ] && sed "s/^/#   /" traffic.txt
test_expect_success 'a planned NIC the host lacks: every rank fails, the error names it' '
	topo_file a rxe0 rxe9 >a9.json &&
	"$PENNY" ring-plan --topo-file a9.json,b.json --rails rxe0:1:0,rxe1:1:0,rxe9:1:1,rxe3:1:1 \
		--json >plan9.json &&
	! run_plan_job --plan plan9.json -b 1M -e 1M && cat err* &&
	grep -q "planned NIC .rxe9:1. for channel [01] to rank [23]" err0 err1 &&
	grep -h "planned NIC" err0 err1 | head -n 1 >nicerr.txt
'
[ -f nicerr.txt ] && sed "s/^/#   /" nicerr.txt
echo "# rxe retransmission counters (duplicate and out-of-order requests, sequence NAKs, retries) over the run: $(retx)"
guest_done
