#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Guest side of t0140: two "nodes" (PENNY_NODE_ID) x two rails (vm.sh
# --pairs 2: rxe0<->rxe1 is rail 0, rxe2<->rxe3 rail 1), 2 x 2 ranks, the
# multiring algorithm with one channel per rail.  Traffic must appear on both
# rails in both directions, and every packet a rail's device sends is one its
# peer on the same rail receives (nothing crosses rails).
. "$(dirname "$0")/lib-guest.sh"

pkts() { cat /sys/class/infiniband/$1/ports/1/hw_counters/$2; }
snap() { for d in rxe0 rxe1 rxe2 rxe3; do echo "$d $(pkts $d sent_pkts) $(pkts $d rcvd_pkts)"; done; }

run_job() {
	local port=$((20000 + RANDOM % 20000)) pids= r hca node
	for r in 1 2 3; do
		if [ $r -lt 2 ]; then hca=rxe0,rxe2 node=a; else hca=rxe1,rxe3 node=b; fi
		PENNY_IB_HCA=$hca PENNY_NODE_ID=$node "$PENNY" allreduce-test --rank $r --nranks 4 \
			--root 127.0.0.1:$port --timeout 60 -n 5 -w 1 "$@" >/dev/null 2>err$r &
		pids="$pids $!"
	done
	PENNY_IB_HCA=rxe0,rxe2 PENNY_NODE_ID=a "$PENNY" allreduce-test --rank 0 --nranks 4 \
		--root 127.0.0.1:$port --timeout 60 -n 5 -w 1 "$@" >out 2>err0 || return 1
	for p in $pids; do wait $p || return 1; done
}

test_expect_success '2 nodes x 2 rails, multiring: 0 wrong, both rails carry traffic both ways' '
	snap >before &&
	"$PENNY" top --json --count 600 --interval 0.5 --filter rxe >top.jsonl &
	topp=$!
	sleep 1
	run_job --algo multiring -b 1 -e 4M -f 16 -d float &&
	sleep 1 && kill $topp && wait $topp;
	snap >after && cat out | grep -E "via|Out of" &&
	python3 -c "import json
first, last = {}, {}
for line in open(\"top.jsonl\"):
    try:
        sample = json.loads(line)
    except ValueError:
        continue
    for p in sample[\"ports\"]:
        first.setdefault(p[\"device\"], p)
        last[p[\"device\"]] = p
seen = {d: [last[d][\"rx_bytes\"] - first[d][\"rx_bytes\"], last[d][\"tx_bytes\"] - first[d][\"tx_bytes\"]] for d in first}
print(\"penny top, bytes rx/tx during the job:\", seen)
assert all(seen.get(d, [0, 0])[0] > 0 and seen.get(d, [0, 0])[1] > 0 for d in (\"rxe0\", \"rxe1\", \"rxe2\", \"rxe3\")), seen" &&
	test "$(grep -c "Out of bounds values : 0 OK" out)" -eq 1 &&
	paste before after | awk "{ s = \$5 - \$2; r = \$6 - \$3; print \$1, s, r; if (s < 100 || r < 100) bad = 1 }
		END { exit bad }" >delta && cat delta &&
	awk "NR == 1 { s0 = \$2; r0 = \$3 } NR == 2 { s1 = \$2; r1 = \$3 }
	     NR == 3 { s2 = \$2; r2 = \$3 } NR == 4 { s3 = \$2; r3 = \$3 }
	     END { exit !(s0 == r1 && s1 == r0 && s2 == r3 && s3 == r2) }" delta
'
test_expect_success 'rails follow the channels: each rank opened rail 0 and rail 1' '
	{ run_job --algo multiring -b 1M -e 1M --debug=VERBS || { cat err*; false; }; } &&
	grep -h "verbs transport on" err* &&
	test "$(cat err* | grep -c "verbs transport on rxe[02]")" -eq 4 &&
	test "$(cat err* | grep -c "verbs transport on rxe[13]")" -eq 4
'
guest_done
