#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Hardening of allreduce-test and coll-test, round 4 of the sweep: a stop
# (scancel, timeout(1), Ctrl-C) in the middle of a --json run, --csv rows
# that claimed a check that did not run, and a --min-busbw gate over sizes
# that hold no element.
. "$(dirname "$0")/../lib.sh"

# rows_then SIG PID FILE: once FILE has a row (60 s at most: the first
# size's calls take that long under TSan on a loaded machine), SIG to PID
rows_then() {
	local i
	for i in $(seq 600); do
		grep -q '"size"' "$3" 2>/dev/null && break
		sleep 0.1
	done
	kill -"$1" "$2"
}

# the document stopped: valid JSON, rows, no summary, the signal's "error"
# (or, with --np, where the launcher stops every rank at once and rank 0
# sees a peer's connection close before its own stop: that peer named)
stopped_doc() {
	python3 -c "
import json, re, sys
d = json.load(open(sys.argv[1]))
assert d[\"results\"] and \"summary\" not in d, d.keys()
assert d[\"error\"] == sys.argv[2] or (len(sys.argv) > 3 and re.fullmatch(sys.argv[3], d[\"error\"])), d[\"error\"]
" "$@"
}

# SIGTERM killed rank 0 where it wrote: the document cut in the middle of
# a row (json.tool: "Expecting ',' delimiter")
test_expect_success '--np 2, SIGTERM mid-run: the --json document ends with the stop, every rank gone' '
	shm_snapshot shm0
	"$PENNY" coll-test alltoall --np 2 -b 1K -e 1M -f 2 -n 200000 -w 0 -c 0 --json >out 2>err &
	pid=$!
	rows_then TERM $pid out
	wait $pid
	rc=$?
	cat err && test $rc = 143 &&
	stopped_doc out "stopped by signal 15 (Terminated)" "rank 1 \(host .*\) closed its connection: it failed or was killed" &&
	grep -qx "penny coll-test: got Terminated: stopping the ranks" err &&
	no_procs_left && shm_leftovers shm0
'

test_expect_success '... one process: SIGHUP ends the document too, and ends the process by it' '
	"$PENNY" allreduce-test -b 1K -e 4M -f 2 -n 200000 -w 0 -c 0 --json >out 2>err &
	pid=$!
	rows_then HUP $pid out
	wait $pid
	rc=$?
	cat err && test $rc = 129 && stopped_doc out "stopped by signal 1 (Hangup)" &&
	test ! -s err && no_procs_left
'

# a batch system stops every rank of a launcher's job
test_expect_success '... ranks of a launcher, all stopped: rank 0.s document ends, no rank left' '
	port=$(free_port) || exit 1
	export PENNY_COOKIE=00112233445566778899aabbccddeeff
	"$PENNY" allreduce-test --rank 1 --nranks 2 --root 127.0.0.1:$port -b 1K -e 4M -f 2 \
		-n 200000 -w 0 -c 0 >out1 2>err1 &
	r1=$!
	"$PENNY" allreduce-test --rank 0 --nranks 2 --root 127.0.0.1:$port -b 1K -e 4M -f 2 \
		-n 200000 -w 0 -c 0 --json >out0 2>err0 &
	r0=$!
	rows_then TERM $r0 out0
	kill -TERM $r1
	wait $r0
	rc0=$?
	wait $r1
	cat err0 err1 && test $rc0 = 143 && stopped_doc out0 "stopped by signal 15 (Terminated)" &&
	no_procs_left
'

test_expect_success '... and a run that ends first keeps its summary (text unchanged)' '
	penny coll-test reduce --np 2 -b 8 -e 64 -f 2 -n 1 -w 0 --json >out &&
	python3 -c "import json; assert json.load(open(\"out\"))[\"summary\"][\"passed\"]" &&
	penny coll-test reduce --np 2 -b 8 -e 64 -f 2 -n 1 -w 0 >out &&
	grep -q "^# Avg bus bandwidth" out
'

# with -c 0 the rows said 0 wrong values and 0 ranks differing, as if
# checked (the table: N/A); reducescatter.s differ column too (#diff N/A)
test_expect_success '--csv: wrong and differ are empty where the table says N/A' '
	penny coll-test allgather --np 2 -b 8 -e 16 -f 2 -n 1 -w 0 -c 0 --csv c.csv >out &&
	cat c.csv && test $(wc -l <c.csv) = 3 &&
	test "$(sed -n 2p c.csv | cut -d, -f9,13,15,16)" = ",,," &&
	grep -c " N/A " out &&
	penny coll-test reducescatter --np 2 -b 8 -e 16 -f 2 -n 1 -w 0 --csv c.csv >out &&
	test "$(sed -n 2p c.csv | cut -d, -f9,13,15,16)" = "0,0,," &&
	penny allreduce-test --np 2 -b 8 -e 16 -f 2 -n 1 -w 0 --csv c.csv >out &&
	test "$(sed -n 3p c.csv | cut -d, -f9,13,15,16)" = "0,0,0,0" &&
	awk -F, "{ print NF }" c.csv | sort -u >nf && test "$(cat nf)" = 22
'

# -e below one element (per rank where the size is the whole buffer): rows
# of 0 bytes averaged 0 GB/s and the gate failed a healthy run, exit 1
test_expect_success '--min-busbw over sizes of no element: one line, exit 2, nothing run' '
	within 5 one_line_error 2 allreduce-test --np 2 -b 1 -e 3 --min-busbw 1 -n 1 -w 0 &&
	grep -qx "penny allreduce-test: --min-busbw needs timed calls of some bytes: the largest size, 1 B, is below one float (4 B)" err &&
	within 5 one_line_error 2 coll-test allgather --np 2 -b 4 -e 7 --min-busbw 0 -n 1 -w 0 &&
	grep -qx "penny coll-test: --min-busbw needs timed calls of some bytes: the largest size, 4 B, is below one float per rank (8 B: allgather over 2 ranks)" err &&
	one_line_error 2 coll-test alltoall --np 3 -d all -b 16 -e 16 --min-busbw 0 -n 1 -w 0 &&
	grep -q "is below one int64 per rank (24 B: alltoall over 3 ranks)" err &&
	no_procs_left &&
	penny coll-test allgather --np 2 -b 8 -e 8 --min-busbw 0 -n 1 -w 0 >out &&
	penny coll-test alltoall --np 1 -d double -b 8 -e 8 --min-busbw 0 -n 1 -w 0 >out
'

test_done
