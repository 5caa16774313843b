#!/usr/bin/env bash
# Faults of a self-launched job (--np): a rank killed, stopped or terminated,
# the launcher killed or terminated.  The job ends within --timeout plus the
# launcher's grace (2 s), non-zero, the culprit named once, no process and no
# /dev/shm segment left behind.
. "$(dirname "$0")/../lib.sh"

T=3
shm_snapshot shm0

# start_job: a 4-rank sweep that runs until something stops it; sets
# $parent and $ranks (the ranks' pids, in the order they were forked)
start_job() {
	"$PENNY" allreduce-test --np 4 --timeout $T -b 1K -e 1M -f 2 -n 100000 -w 0 >out 2>err &
	parent=$!
	ranks=$(ranks_up $parent 4)
	t0=$(date +%s.%N)
}
# end_job: wait for the launcher; $rc, $took (seconds since start_job)
end_job() {
	wait $parent
	rc=$?
	took=$(python3 -c "import sys; print(round(float(sys.argv[1]) - float(sys.argv[2]), 2))" \
		"$(date +%s.%N)" "$t0")
	echo "rc=$rc took=${took}s"
	cat err
}
# named_by RANKS REGEX: the lines "rank(s) LIST: ..." matching REGEX in err
# cover exactly RANKS (like 0,1,3), and no rank is in two of them
named_by() {
	python3 - "$1" "$2" err <<-PY
	import re, sys
	want, pat, seen = set(map(int, sys.argv[1].split(","))), re.compile(sys.argv[2]), []
	for l in open(sys.argv[3]):
	    m = re.match(r"penny [a-z-]+: ranks? ([0-9,-]+): (.*)", l)
	    if not m or not pat.search(m.group(2)):
	        continue
	    for part in m.group(1).split(","):
	        a, _, b = part.partition("-")
	        seen += range(int(a), int(b or a) + 1)
	sys.exit(0 if sorted(seen) == sorted(want) else "named by %s, want %s" % (seen, sorted(want)))
	PY
}
# took_le S: the job took at most S seconds
took_le() { python3 -c "import sys; sys.exit(float(sys.argv[1]) > float(sys.argv[2]))" "$took" "$1"; }

test_expect_success 'kill -9 of a rank: the others end at once, naming it, each error once' '
	start_job && victim=$(echo $ranks | cut -d" " -f3) && kill -9 $victim && end_job &&
	test "$rc" -ne 0 && took_le $((T + 1)) &&
	named_by 0,1,3 "^rank 2 \(host [^,]*, pid $victim\) " &&
	grep -q "rank 2 (pid $victim) was killed by signal 9" err && test "$(wc -l <err)" -le 3 &&
	no_procs_left && shm_leftovers shm0
'

test_expect_success 'kill -STOP of a rank: named after the timeout, killed at once, the job ends within timeout + 1 s' '
	start_job && victim=$(echo $ranks | cut -d" " -f3) && kill -STOP $victim && end_job &&
	test "$rc" -ne 0 && took_le $((T + 1)) &&
	named_by 0,1,3 "^timed out after $T s waiting for rank 2 " &&
	grep -q "rank 2 (pid $victim) was stopped (SIGSTOP) when rank [013] failed: killed" err &&
	no_procs_left && shm_leftovers shm0
'

test_expect_success 'kill -TERM of a rank: it says so, cleans up, the others name it' '
	start_job && victim=$(echo $ranks | cut -d" " -f3) && kill -TERM $victim && end_job &&
	test "$rc" -ne 0 && took_le $((T + 1)) &&
	grep -q "^penny allreduce-test: rank 2: terminated by SIGTERM" err &&
	named_by 0,1,3 "^rank 2 \(host [^,]*, pid $victim\) " &&
	no_procs_left && shm_leftovers shm0
'

test_expect_success 'kill -9 of the launcher: every rank ends with it, cleaning up' '
	start_job && kill -9 $parent && end_job &&
	test "$rc" -eq 137 && no_procs_left 3 && shm_leftovers shm0 &&
	test "$(grep -c "the launcher died" err)" -eq 4
'

test_expect_success 'kill -TERM of the launcher: forwarded to every rank, one line each, exit 143' '
	start_job && kill -TERM $parent && end_job &&
	test "$rc" -eq 143 && took_le 3 &&
	grep -q "^penny allreduce-test: ranks 0-3: terminated by SIGTERM" err &&
	no_procs_left && shm_leftovers shm0
'

test_expect_success 'kill -9 of every rank at once: the launcher reports each, exits at once' '
	start_job && kill -9 $ranks && end_job &&
	test "$rc" -ne 0 && took_le 2 &&
	test "$(grep -c "was killed by signal 9" err)" -eq 4 &&
	no_procs_left && shm_leftovers shm0
'
test_expect_success 'the same error on every rank is printed once' '
	PENNY_IB_DISABLE=1 test_exit 2 penny allreduce-test --np 32 --transport verbs -b 8 -e 8 \
		--timeout $T >out 2>err; ok=$?; cat err
	test $ok -eq 0 && test "$(wc -l <err)" -eq 1 &&
	grep -q "^penny allreduce-test: ranks 0-31: --transport verbs: this rank (host [^)]*) has no" err &&
	no_procs_left && shm_leftovers shm0
'
test_done
