#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Guest side of t0160: penny top watches real soft-RoCE devices while penny bw
# moves data between rxe0 and rxe1 (vm.sh --pairs 1).  The rates top reports
# must agree with the bytes bw moved (within 10%; top counts the
# netdev's bytes, which carry the RoCE headers too).
. "$(dirname "$0")/lib-guest.sh"

test_expect_success 'penny top --json during penny bw: bytes and rates agree with bw (10%)' '
	"$PENNY" top --json --count 40 --interval 0.5 --filter rxe >top.jsonl &
	topp=$!
	sleep 1.5
	"$PENNY" bw --loopback rxe0,rxe1 -s 65536 -n 1500 --json >bw.json 2>bw.err &&
	wait $topp && cat bw.json &&
	python3 "$TOP/tests/lab/guest/top-bw-check.py" bw.json top.jsonl rxe0 rxe1
'
guest_done
