#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# penny check under a launcher when the ranks are not alike: ranks started
# with another --only, --quick or configuration are refused at once (exit 2
# on every rank, one line naming the option and the ranks), not after
# --timeout; a stopped rank is named by every other rank (never "ranks
# disagree on the work"), and says itself that it was stopped when resumed;
# a stopped rank 0 is named by the others; a killed rank is named as such.
# Three "nodes" (PENNY_NODE_ID) on an empty tree: the counters check waits
# counters.window seconds on each.
# cost: 32
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/helpers/mksysfs.sh"

sys_root tree node >/dev/null && sys_cpus 2 1 >/dev/null
printf "counters.window = 2\n" >w2.conf
printf "counters.window = 1\n" >w1.conf
# a log rank 2 alone is given (a regular file: --nccl-log is read before the job starts)
: >nccl.log

# job3 TIMEOUT ARGS2 -- ARGS: ranks 0..2 with ARGS (rank 2 with ARGS2 too);
# their pids in pid0..pid2, errors in err0..err2; waits for none of them
job3() {
	local t=$1 a2=$2 port r
	shift 3
	port=$(free_port) || return 1
	job_port=$port
	for r in 2 1 0; do
		# shellcheck disable=SC2086
		PENNY_NODE_ID=n$r "$PENNY" check --rank $r --nranks 3 --root 127.0.0.1:$port \
			--sysfs-root tree --timeout $t "$@" $([ $r = 2 ] && echo "$a2") >out$r 2>err$r &
		eval pid$r=$!
	done
}
# wait3: exit codes in rc0..rc2, the seconds it took in took
wait3() {
	local t0=$(date +%s.%N) r
	for r in 0 1 2; do eval "wait \$pid$r; rc$r=\$?"; done
	took=$(python3 -c "import sys; print(round(float(sys.argv[1]) - float(sys.argv[2]), 1))" \
		"$(date +%s.%N)" "$t0")
	echo "rc=$rc0 $rc1 $rc2 took=$took"; cat err0 err1 err2
}
# joined PID...: each PID (a rank) holds a connection to rank 0's port, then
# 0.3 s for the rendezvous to finish (a rank stopped before it connected is
# "waiting for ranks 2 to join", another message: on a loaded machine a rank
# took longer than the fixed 0.5 s this waited before); the job's counters
# window (2 s) keeps it running well past that
joined() {
	local i p
	for p in "$@"; do
		for ((i = 0; i < 100; i++)); do
			ss -tnpH state established "( dport = :$job_port )" 2>/dev/null |
				grep -q "pid=$p," && break
			sleep 0.1
		done
		[ $i -lt 100 ] || { echo "# pid $p never connected to port $job_port"; return 1; }
	done
	sleep 0.3
}
took_le() { python3 -c "import sys; sys.exit(float(sys.argv[1]) > float(sys.argv[2]))" "$took" "$1"; }

for case in "--only inventory|--only: rank 0 inventory,counters,nccl-path, rank 2 inventory" \
	"--quick|--quick: rank 0 no, rank 2 yes" \
	"--require counters|--require: rank 0 none, rank 2 counters" \
	"--config w1.conf|counters.window: rank 0 2, rank 2 1" \
	"--timeout 9|--timeout: rank 0 20 s, rank 2 9 s" \
	"--nccl-log nccl.log|--nccl-log: rank 0 none, rank 2 given"; do
	a2=${case%%|*} want=${case#*|}
	test_expect_success "rank 2 started with $a2: refused at once on every rank, named" '
		job3 20 "$a2" -- --only inventory,counters,nccl-path --config w2.conf && wait3 &&
		test "$rc0 $rc1 $rc2" = "2 2 2" && took_le 3 &&
		test "$(wc -l <err0)" -eq 1 && grep -q "ranks disagree on $want$" err0 &&
		test "$(wc -l <err2)" -eq 1 && grep -q "ranks disagree on $want$" err2 && test ! -s err1
	'
done

for i in 1 2 3; do
test_expect_success "a stopped rank is named by the others, and knows it was stopped (run $i)" '
	job3 3 "" -- --only inventory,counters --config w2.conf && joined $pid2 && kill -STOP $pid2 &&
	sleep 5.5 && kill -CONT $pid2 && wait3 &&
	test "$rc0 $rc1 $rc2" = "2 2 2" && ! grep -q "disagree" err0 err1 err2 &&
	for r in 0 1; do
		test "$(wc -l <err$r)" -eq 1 &&
		grep -q "timed out after 3 s waiting for rank 2 (host [^,]*, pid $pid2) in .*: it did not answer" err$r || exit 1
	done &&
	grep -q "rank 2: this rank (2, host .*) was stopped and resumed during the job: the others gave up" err2
'
done

test_expect_success 'a stopped rank 0: the others name it, rank 0 says it was stopped' '
	job3 3 "" -- --only inventory,counters --config w2.conf && joined $pid1 $pid2 && kill -STOP $pid0 &&
	sleep 6 && kill -CONT $pid0 && wait3 &&
	test "$rc0 $rc1 $rc2" = "2 2 2" &&
	grep -q "rank 1: timed out after 3 s waiting for rank 0 (host [^,]*, pid $pid0)" err1 &&
	grep -q "rank 2: timed out after 3 s waiting for rank 0 (host [^,]*, pid $pid0)" err2 &&
	grep -q "this rank (0, host .*) was stopped and resumed during the job" err0
'

test_expect_success 'a killed rank: the others name it at once' '
	job3 10 "" -- --only inventory,counters --config w2.conf && joined $pid2 && kill -9 $pid2 &&
	wait3 && test "$rc0 $rc1" = "2 2" && took_le 4 &&
	for r in 0 1; do
		test "$(wc -l <err$r)" -eq 1 &&
		grep -q "rank 2 (host [^,]*, pid $pid2) closed its connection during .*: it failed or was killed" err$r || exit 1
	done
'
test_done
