#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Guest side of t0160: penny top watches real soft-RoCE devices while penny bw
# moves data between rxe0 and rxe1 (vm.sh --pairs 1).  The rates top reports
# must agree with the bytes bw moved (within 10%; top counts the
# netdev's bytes, which carry the RoCE headers too), and so must a flight
# recording of another run, read directly and replayed.
. "$(dirname "$0")/lib-guest.sh"

test_expect_success 'penny top --json during penny bw: bytes and rates agree with bw (10%)' '
	"$PENNY" top --json --count 40 --interval 0.5 --filter rxe >top.jsonl &
	topp=$!
	sleep 1.5
	"$PENNY" bw --loopback rxe0,rxe1 -s 65536 -n 1500 --json >bw.json 2>bw.err &&
	wait $topp && cat bw.json &&
	python3 "$TOP/tests/lab/guest/top-bw-check.py" bw.json top.jsonl rxe0 rxe1
'
test_expect_success 'penny top --record during penny bw: the recording and its replay agree with bw (10%)' '
	"$PENNY" top --count 40 --interval 0.5 --filter rxe --record rec.jsonl >/dev/null &
	# the recording has the baseline sample too: 41 lines, replayed as 40
	topp=$!
	sleep 1.5
	"$PENNY" bw --loopback rxe0,rxe1 -s 65536 -n 1500 --json >bw2.json 2>bw2.err &&
	wait $topp &&
	test "$(wc -l <rec.jsonl)" -ge 30 &&
	python3 "$TOP/tests/lab/guest/top-bw-check.py" bw2.json rec.jsonl rxe0 rxe1 &&
	"$PENNY" top --replay rec.jsonl --json >replay.jsonl &&
	test "$(wc -l <replay.jsonl)" -eq "$(($(wc -l <rec.jsonl) - 1))" &&
	python3 "$TOP/tests/lab/guest/top-bw-check.py" bw2.json replay.jsonl rxe0 rxe1
'
guest_done
