#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Hardening of allreduce-test and coll-test, round 5 of the sweep: a
# standard output that stops taking the rows (a full disk, a reader gone
# while SIGPIPE is ignored), nccl-tests' -f 1, coll-test's CSV without the
# root, a JSON "wrong" that was the string "N/A", and what a careless user
# gives them.
# cost: 20
. "$(dirname "$0")/../lib.sh"

# A sweep whose first rows take milliseconds and whose last ones seconds
# (15 s in all on one rank here): its output failing at the first row must
# end it at once.
LONG="-b 8 -e 64M -f 2 -n 200 -w 0 -c 0"

# full_once CMD...: CMD's standard output /dev/full: exit 2, one line on
# standard error, that of every command's write error (with --csv - the
# file's, as its commit said it)
full_once() {
	timeout 60 "$PENNY" "$@" >/dev/full 2>err
	rc=$?
	cat err
	test $rc = 2 && test "$(wc -l <err)" = 1 &&
	grep -qxE "penny $1: write error on (standard output|'-'): No space left on device" err
}

# print_row flushed and went on: the whole sweep ran into the full device,
# and said so (exit 2) only at the end
if [ -w /dev/full ]; then
	test_expect_success 'standard output full mid-sweep: one line, exit 2, every rank stops at once' '
		shm_snapshot shm0 &&
		within 10 full_once allreduce-test --np 2 $LONG &&
		within 10 full_once allreduce-test $LONG --json &&
		within 10 full_once coll-test allgather --np 3 --algo all $LONG &&
		within 10 full_once allreduce-test --np 2 $LONG --csv - &&
		no_procs_left && shm_leftovers shm0
	'
	# the last row (the series ends: the ranks agree there too)
	test_expect_success '... the last row of a series too; nothing is left of --csv' '
		echo old >keep.csv &&
		full_once coll-test broadcast --np 2 -b 8 -e 8 -n 1 -w 0 --csv keep.csv &&
		test "$(cat keep.csv)" = old &&
		full_once allreduce-test --np 2 -b 8 -e 8 -n 1 -w 0 --json &&
		no_procs_left
	'
fi

# a CI runner that ignores SIGPIPE (its children inherit it): the writes
# failed with EPIPE and the sweep ran on to the end
test_expect_success 'a reader gone, SIGPIPE ignored: one line, exit 2, at once' '
	python3 - "$PENNY" $LONG <<-\PY
	import os, signal, subprocess, sys, time
	r, w = os.pipe()
	os.close(r)
	t0 = time.time()
	p = subprocess.run([sys.argv[1], "allreduce-test", "--np", "2"] + sys.argv[2:], stdout=w,
	                   stderr=subprocess.PIPE, timeout=60,
	                   preexec_fn=lambda: signal.signal(signal.SIGPIPE, signal.SIG_IGN))
	took, err = time.time() - t0, p.stderr.decode()
	print(p.returncode, "%.1f s" % took, err)
	assert p.returncode == 2 and took < 10, (p.returncode, took)
	assert err == "penny allreduce-test: write error on standard output: Broken pipe\n", err
	PY
'

# rank 0 blocks the stop signals before any thread is made (on the host
# the stop thread is its only one): every other thread blocks them, so a
# stop always lands on the stop thread (which sigwait shows unblocked while
# it waits).  A guard: the old tree passed it too.
test_expect_success 'rank 0.s threads but the stop.s block SIGTERM, SIGINT and SIGHUP' '
	"$PENNY" allreduce-test --np 2 $LONG >out 2>err &
	pid=$!
	for i in $(seq 300); do grep -q "^ *8 " out && break; sleep 0.1; done
	ok=0 &&
	for r in $(pgrep -P $pid); do
		[ "$(ls /proc/$r/task | wc -l)" -gt 1 ] || continue
		open=0
		for t in /proc/$r/task/*; do
			m=$(sed -n "s/^SigBlk:\t//p" $t/status)
			[ $((0x$m & 0x4003)) = $((0x4003)) ] && continue
			echo "$t: SigBlk $m"
			[ $t != /proc/$r/task/$r ] && open=$((open + 1)) || open=9
		done
		[ $open = 1 ] && ok=$((ok + 1))
	done
	kill -TERM $pid
	wait $pid
	rc=$?
	cat err && test $ok = 1 && test $rc = 143 && no_procs_left
'

# -f 1 was refused (1.01..1024); nccl-tests' -f 1 (its default) steps by -i
test_expect_success '-f 1 is no factor: the sizes step by -i, as nccl-tests' '
	penny allreduce-test --np 2 -f 1 -i 1K -b 8 -e 3K -n 1 -w 0 >out &&
	grep -v "^#" out | awk "{ print \$1 }" | tr "\n" " " >sizes &&
	test "$(cat sizes)" = "8 1032 2056 " &&
	grep -q "step: 1024(bytes)" out &&
	penny coll-test alltoall --np 2 -f 1 -i 64 -b 64 -e 192 -n 1 -w 0 --json >out.json &&
	python3 -c "
import json
d = json.load(open(\"out.json\"))
assert [r[\"size\"] for r in d[\"results\"]] == [64, 128, 192], d[\"results\"]
"
'

test_expect_success '... and no step rule loops: too many sizes are one line, exit 2, at once' '
	within 5 one_line_error 2 allreduce-test -f 1 -i 1 -b 0 -e 1T &&
	grep -qx "penny allreduce-test: -b, -e and -i or -f give more than 100000 sizes" err &&
	within 5 one_line_error 2 coll-test reduce -f 1.000001 -b 0 -e 1T &&
	grep -qx "penny coll-test: -b, -e and -i or -f give more than 100000 sizes" err &&
	one_line_error 2 allreduce-test -f 0.5 &&
	grep -qx "penny allreduce-test: -f must be 1..1024, got 0.5" err &&
	one_line_error 2 allreduce-test -f 1 -i 0 &&
	grep -qx "penny allreduce-test: -i must be 1..1T, got 0" err &&
	penny allreduce-test -f 1.001 -b 0 -e 1K -n 0 -w 0 >out &&
	test "$(grep -vc "^#" out)" -gt 100
'

# -i printed with %g: "step: 1.04858e+06(bytes)" for the default 1M
test_expect_success 'the header says -i whole' '
	penny allreduce-test -b 8 -e 8 -n 1 -w 0 >out &&
	grep -q "^# minBytes 8 maxBytes 8 step: 1048576(bytes) warmup" out &&
	penny coll-test alltoall -b 8 -e 8 -i 1000001 -n 1 -w 0 >out &&
	grep -q " step: 1000001(bytes) " out
'

# the text and JSON carry the root; --csv did not
test_expect_success 'coll-test --csv: the root column of the table' '
	penny coll-test broadcast --np 3 -r 2 -b 8 -e 16 -f 2 -n 1 -w 0 --csv b.csv >out &&
	cat b.csv &&
	head -1 b.csv | grep -q ",iters_per_block,root$" &&
	test "$(sed 1d b.csv | cut -d, -f23 | sort -u)" = 2 &&
	grep -v "^#" out | awk "{ print \$5 }" | sort -u >root && test "$(cat root)" = 2 &&
	penny coll-test reduce --np 2 -r 1 -b 8 -e 8 -n 1 -w 0 --csv r.csv >/dev/null &&
	test "$(sed -n 2p r.csv | cut -d, -f23)" = 1 &&
	penny coll-test alltoall --np 2 -b 8 -e 8 -n 1 -w 0 --csv a.csv >/dev/null &&
	test "$(sed -n 2p a.csv | cut -d, -f23)" = -1 &&
	awk -F, "{ print NF }" b.csv r.csv a.csv | sort -u >nf && test "$(cat nf)" = 23 &&
	penny allreduce-test --np 2 -b 8 -e 8 -n 1 -w 0 --csv ar.csv >/dev/null &&
	head -1 ar.csv | grep -q ",iters_per_block$"
'

# "wrong": "N/A" where a number is expected (with -c 0)
test_expect_success 'JSON: "wrong" is null without a check, a number with it' '
	penny coll-test broadcast --np 2 -b 8 -e 16 -f 2 -n 1 -w 0 -c 0 --json >nc.json &&
	penny allreduce-test --np 2 -b 8 -e 16 -f 2 -n 1 -w 0 -c 0 --json >anc.json &&
	penny allreduce-test --np 2 -b 8 -e 16 -f 2 -n 1 -w 0 --json >c.json &&
	python3 -c "
import json
for f in (\"nc.json\", \"anc.json\"):
    for r in json.load(open(f))[\"results\"]:
        assert r[\"oop\"][\"wrong\"] is None and r[\"ip\"][\"wrong\"] is None, r
for r in json.load(open(\"c.json\"))[\"results\"]:
    assert r[\"oop\"][\"wrong\"] == 0 and r[\"ip\"][\"wrong\"] == 0, r
" &&
	penny allreduce-test --np 2 -b 8 -e 8 -n 1 -w 0 -c 0 >out &&
	test "$(grep -v "^#" out | grep -o " N/A" | wc -l)" = 3
'

test_done
