#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Guest side of t0120 (first, then top-procs.sh): penny top watches real soft-RoCE devices while penny bw
# moves data between rxe0 and rxe1 (vm.sh --pairs 1).  The rates top reports
# must agree with the bytes bw moved (within 10%; top counts the
# netdev's bytes, which carry the RoCE headers too), and so must a flight
# recording of another run, read directly and replayed.
. "$(dirname "$0")/lib-guest.sh"
warm_python

# top_around TOPARGS...: penny top (every 0.2 s, output as TOPARGS say, the
# samples in FILE=$1 as lines) from 1 s before penny bw moves 1500 x 64 KiB
# between rxe0 and rxe1 (its --json in bw.json) until 2 samples after it, and
# at least 31 lines; top stopped by SIGTERM (exit 0)
top_around() {
	local file=$1 topp n i
	shift
	"$PENNY" top --count 100000 --interval 0.2 --filter rxe "$@" &
	topp=$!
	for ((i = 0; i < 100; i++)); do [ -s "$file" ] && break; nap 0.1; done
	nap 1
	"$PENNY" bw --loopback rxe0,rxe1 -s 65536 -n 1500 --json >bw.json 2>bw.err || {
		kill $topp; wait $topp; return 1; }
	n=$(($(wc -l <"$file") + 2))
	[ $n -ge 31 ] || n=31
	for ((i = 0; i < 300; i++)); do
		[ "$(wc -l <"$file")" -ge $n ] && break
		kill -0 $topp 2>/dev/null || break
		nap 0.1
	done
	kill -TERM $topp
	wait $topp
}

test_expect_success 'penny top --json during penny bw: bytes and rates agree with bw (10%)' '
	top_around top.jsonl --json >top.jsonl && cat bw.json &&
	python3 "$TOP/tests/lab/guest/top-bw-check.py" bw.json top.jsonl rxe0 rxe1
'
test_expect_success 'penny top --record during penny bw: the recording and its replay agree with bw (10%)' '
	top_around rec.jsonl --record rec.jsonl >/dev/null && mv bw.json bw2.json &&
	test "$(wc -l <rec.jsonl)" -ge 30 &&
	python3 "$TOP/tests/lab/guest/top-bw-check.py" bw2.json rec.jsonl rxe0 rxe1 &&
	"$PENNY" top --replay rec.jsonl --json >replay.jsonl &&
	# one replayed line per recorded sample with rates (seq 2 on): the
	# baseline, if the recording holds it (a loaded guest can take the
	# second sample before the first is written), has none
	rated=$(python3 -c "import json, sys
print(sum(json.loads(l)[\"seq\"] >= 2 for l in open(sys.argv[1])))" rec.jsonl) &&
	echo "recording: $(wc -l <rec.jsonl) lines, $rated with rates, replayed: $(wc -l <replay.jsonl)" &&
	test "$rated" -ge "$(($(wc -l <rec.jsonl) - 1))" &&
	test "$(wc -l <replay.jsonl)" -eq "$rated" &&
	python3 "$TOP/tests/lab/guest/top-bw-check.py" bw2.json replay.jsonl rxe0 rxe1
'
guest_done
