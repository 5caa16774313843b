#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The NCCL interposer (libpenny-nccl.so) without a GPU: a program linked
# with NCCL (nccl-caller, one process per rank) runs over a fake NCCL and a
# fake CUDA driver on host memory, with the test cuda plugin as penny's
# backend.  The fake NCCL logs every call it gets, so the tests count what
# penny ran and what reached NCCL: supported allreduces, reduce-scatters
# and all-gathers run on penny with checked results; unsupported cases,
# groups (of reduce-scatters and all-gathers) and bad arguments reach NCCL
# and get its answers; a missing real NCCL, plugin or bad setting is one
# line and NCCL runs every call.  Communicators penny does not run
# (one the interposer never saw) are NCCL's, each told
# with PENNY_NCCL_DEBUG; ranks that are threads of one process are penny's.
. "$(dirname "$0")/../lib.sh"

. "$TOP/tests/helpers/interposer.sh"
one_line() { test "$(wc -l <"$1")" -eq 1 || { cat "$1"; return 1; }; }
# a communicator in the debug lines (%p)
ptr="0x[0-9a-f]*"
# the allreduce calls that reached NCCL of at most / above $1 bytes
nccl_ar_bytes() {
	awk -v max="$1" '$3 == "ncclAllReduce" { es = ($5 < 2) ? 1 : ($5 == 2 || $5 == 3 || $5 == 7) ? 4 : 8
		if ($4 * es <= max) small++; else big++ } END { print small + 0, big + 0 }' nccl.log
}
# the caller's allreduce scenario, eager, with PENNY_NCCL_EAGER_MAX_BYTES=512K:
# its calls above 512 KiB (70000 elements of 8 bytes) are NCCL's, as are the
# 2 of its 1-rank split communicators (333 doubles); with
# PENNY_FAKE_CAPTURING=2 the first call of a rank (count 1) is eager
eager_big="2 18"
# reduce-scatter and all-gather calls that reached NCCL (the host services'
# all-gathers are of uint8, type 1; the caller's never)
nccl_rs() { grep -c " ncclReduceScatter " nccl.log || true; }
nccl_ag() { awk '$3 == "ncclAllGather" && $5 != 1 { n++ } END { print n + 0 }' nccl.log; }
# NCCL's reduce-scatter and all-gather calls outside the scenario's group
# (count 100) of at most / above $1 bytes for the whole buffer of $2 ranks
nccl_rsag_bytes() {
	awk -v max="$1" -v n="$2" '($3 == "ncclReduceScatter" || $3 == "ncclAllGather" && $5 != 1) && $4 != 100 {
		es = ($5 < 2) ? 1 : ($5 == 2 || $5 == 3 || $5 == 7) ? 4 : 8
		if ($4 * n * es <= max) small++; else big++ }
		END { print small + 0, big + 0 }' nccl.log
}

test_expect_success 'without the interposer every allreduce is NCCL'"'"'s (the baseline)' '
	rm -f nccl.log && "$caller" 2 allreduce >out && grep -q "rank 1: allreduce ok, 86 " out &&
	test "$(nccl_ar)" -eq 172
'
test_expect_success 'penny runs every supported allreduce; the results are right' '
	ip "$caller" 2 allreduce >out 2>err && grep -q "rank 0: allreduce ok, 86 " out &&
	grep -q "rank 1: allreduce ok, 86 " out && test ! -s err &&
	test "$(nccl_ar)" -eq 2 && test "$(grep -c " ncclAllReduce 333 8 2" nccl.log)" -eq 2 &&
	grep -q "^rank 0 ncclAllGather " nccl.log &&
	ip "$caller" 4 allreduce >out && test "$(grep -c "allreduce ok, 86 " out)" -eq 4 &&
	test "$(nccl_ar)" -eq 0
'
test_expect_success 'PENNY_NCCL_EAGER_MAX_BYTES: eager calls above it are NCCL'"'"'s, captured ones penny'"'"'s' '
	PENNY_NCCL_EAGER_MAX_BYTES=512K PENNY_NCCL_DEBUG=1 ip "$caller" 2 allreduce >out 2>err &&
	grep -q "rank 1: allreduce ok, 86 " out && test "$(nccl_ar_bytes 524288)" = "$eager_big" &&
	grep -q "^penny-nccl: NCCL runs ncclAllReduce of 560000 bytes outside a graph capture: above PENNY_NCCL_EAGER_MAX_BYTES (524288)" err &&
	PENNY_NCCL_EAGER_MAX_BYTES=512K PENNY_FAKE_CAPTURING=2 ip "$caller" 2 allreduce >out 2>err &&
	grep -q "rank 1: allreduce ok, 86 " out && test "$(nccl_ar)" -eq 2 &&
	PENNY_NCCL_EAGER_MAX_BYTES=1T ip "$caller" 2 allreduce >out 2>err && test "$(nccl_ar)" -eq 2 &&
	PENNY_NCCL_EAGER_MAX_BYTES=auto ip "$caller" 2 allreduce >out 2>err && test "$(nccl_ar)" -eq 2 &&
	PENNY_NCCL_EAGER_MAX_BYTES=8K ip "$caller" 2 allreduce >out 2>err && grep -q "rank 1: allreduce ok, 86 " out &&
	test "$(nccl_ar_bytes 8192 | cut -d" " -f1)" -eq 2 &&
	PENNY_NCCL_EAGER_MAX_BYTES=0 ip "$caller" 2 allreduce >out 2>err && grep -q "rank 1: allreduce ok, 86 " out &&
	test "$(nccl_ar)" -eq 172 &&
	PENNY_NCCL_EAGER_MAX_BYTES=0 PENNY_FAKE_CAPTURING=2 ip "$caller" 2 allreduce >out 2>err &&
	grep -q "rank 1: allreduce ok, 86 " out && test "$(nccl_ar_bytes 4)" = "2 2" &&
	test "$(grep -c "^rank [01] ncclAllReduce 1 " nccl.log)" -eq 2
'
test_expect_success 'PENNY_NCCL_MAX_BYTES holds for eager calls too; a differing eager limit: NCCL' '
	PENNY_NCCL_MAX_BYTES=1M ip "$caller" 2 allreduce >out 2>err && grep -q "rank 1: allreduce ok, 86 " out &&
	test "$(nccl_ar)" -eq 2 &&
	NCCL_CALLER_RANK0_ENV=PENNY_NCCL_EAGER_MAX_BYTES=1M ip "$caller" 2 allreduce >out 2>err &&
	grep -q "rank 1: allreduce ok, 86 " out && one_line err &&
	grep -q "PENNY_NCCL_EAGER_MAX_BYTES or PENNY_NCCL_REGCACHE (0 or not) differs between ranks 0 and 1" err &&
	test "$(nccl_ar)" -eq 172
'
test_expect_success 'bfloat16, which the fake NCCL lacks, runs on penny' '
	test_exit 1 "$caller" 2 bf16 >out && grep -q "bfloat16 allreduce: fake NCCL error" out &&
	ip "$caller" 2 bf16 >out && grep -q "rank 1: bf16 ok" out && test "$(nccl_ar)" -eq 0
'
test_expect_success 'a non-blocking communicator: penny waits out ncclInProgress and runs it' '
	ip "$caller" 2 nonblocking >out 2>err && grep -q "rank 1: bf16 ok" out && test ! -s err &&
	test "$(nccl_ar)" -eq 0 && grep -q "^rank 1 ncclAllGather" nccl.log
'
test_expect_success 'a first allreduce in a group or a graph capture is NCCL'"'"'s; penny comes later' '
	ip "$caller" 2 groupfirst >out 2>err && grep -q "rank 1: groupfirst ok, 2 " out &&
	test "$(nccl_ar)" -eq 2 &&
	awk "/ncclGroupEnd/ { e++ } / ncclAllReduce / && e < 2 { a++ } END { exit a != 2 }" nccl.log &&
	PENNY_FAKE_CAPTURING=1 ip "$caller" 2 allreduce >out 2>err && grep -q "rank 1: allreduce ok" out &&
	test "$(nccl_ar)" -eq 172 && ! grep -q ncclAllGather nccl.log
'
test_expect_success 'PENNY_NCCL=off: NCCL runs every call' '
	PENNY_NCCL=off ip "$caller" 2 allreduce >out 2>err && grep -q "rank 1: allreduce ok, 86 " out &&
	test ! -s err && test "$(nccl_ar)" -eq 172
'
test_expect_success 'bad arguments and unsupported cases reach NCCL and get its answers' '
	ip "$caller" 2 args >out 2>err && grep -q "rank 0: args ok" out && grep -q "rank 1: args ok" out &&
	test "$(grep -c "^rank -1 ncclAllReduce 4 7 0" nccl.log)" -eq 2 &&
	test "$(grep -c " ncclAllReduce 4 42 0" nccl.log)" -eq 2 &&
	test "$(grep -c " ncclAllReduce 4 7 77" nccl.log)" -eq 2 &&
	test "$(grep -c " ncclAllReduce 0 7 0" nccl.log)" -eq 2 &&
	test "$(grep -c "^rank [01] ncclAllReduce 4 7 0" nccl.log)" -eq 2 &&
	test "$(grep -c " ncclAllReduce 4 7 5" nccl.log)" -eq 2 &&
	test "$(nccl_ar)" -eq 12
'
test_expect_success 'PENNY_NCCL_MAX_BYTES: larger calls go to NCCL, smaller ones to penny' '
	PENNY_NCCL_MAX_BYTES=1K ip "$caller" 2 allreduce >out && grep -q "rank 1: allreduce ok" out &&
	awk "/ ncclAllReduce / { es = (\$5 < 2) ? 1 : (\$5 == 2 || \$5 == 3 || \$5 == 7) ? 4 : 8;
		if (\$4 * es <= 1024) small++; else big++ }
		END { exit !(big > 0 && small == 0) }" nccl.log &&
	test "$(nccl_ar)" -lt 172
'
test_expect_success 'reduce-scatter and all-gather without the interposer: every one NCCL'"'"'s' '
	rm -f nccl.log && "$caller" 2 colls >out && grep -q "rank 1: 85 reduce-scatter and 17 all-gather calls" out &&
	test "$(nccl_rs)" -eq 170 && test "$(nccl_ag)" -eq 34 &&
	test_exit 1 "$caller" 2 bf16coll >out && grep -q "bfloat16 reduce-scatter: fake NCCL error" out
'
test_expect_success 'penny runs reduce-scatter and all-gather in and out of place; a group'"'"'s are NCCL'"'"'s' '
	ip "$caller" 2 colls >out 2>err && test ! -s err &&
	test "$(grep -c "colls ok" out)" -eq 2 && grep -q "rank 1: 85 reduce-scatter and 17 all-gather" out &&
	test "$(nccl_rs)" -eq 2 && test "$(grep -c "^rank [01] ncclReduceScatter 100 7 0" nccl.log)" -eq 2 &&
	test "$(nccl_ag)" -eq 2 && test "$(grep -c "^rank [01] ncclAllGather 100 7" nccl.log)" -eq 2 &&
	! grep -E " (ncclReduceScatter|ncclAllGather) 100 " nccl.log | grep -v " (grouped)$" &&
	ip "$caller" 4 colls >out 2>err && test ! -s err && test "$(grep -c "colls ok" out)" -eq 4 &&
	test "$(nccl_rs)" -eq 4 && test "$(nccl_ag)" -eq 4 &&
	ip "$caller" 2 bf16coll >out 2>err && test "$(grep -c "bf16coll ok" out)" -eq 2 &&
	test "$(nccl_rs)" -eq 0 && test "$(nccl_ag)" -eq 0
'
test_expect_success 'penny'"'"'s reduce-scatter and all-gather go on the caller'"'"'s stream (NULL: the legacy one)' '
	PENNY_FAKE_WANT_STREAM=1 ip "$caller" 2 colls >out 2>err && test ! -s err &&
	test "$(grep -c "colls ok" out)" -eq 2 && test "$(nccl_rs)" -eq 2
'
test_expect_success 'reduce-scatter and all-gather: NCCL answers its cases (NULL comm, fp8, bad op, count 0, NULL buffer)' '
	ip "$caller" 2 args >out 2>err && grep -q "rank 0: args ok" out && grep -q "rank 1: args ok" out &&
	test "$(grep -c "^rank -1 ncclReduceScatter 2 7 0" nccl.log)" -eq 2 &&
	test "$(grep -c " ncclReduceScatter 2 42 0" nccl.log)" -eq 2 &&
	test "$(grep -c " ncclReduceScatter 2 7 77" nccl.log)" -eq 2 &&
	test "$(grep -c " ncclReduceScatter 2 7 5" nccl.log)" -eq 2 &&
	test "$(grep -c "^rank [01] ncclReduceScatter 2 7 0" nccl.log)" -eq 2 &&
	test "$(grep -c " ncclReduceScatter 0 7 0" nccl.log)" -eq 2 &&
	test "$(grep -c "^rank -1 ncclAllGather 2 10" nccl.log)" -eq 2 &&
	test "$(grep -c "^rank [01] ncclAllGather 1 10" nccl.log)" -eq 2 &&
	test "$(grep -c "^rank [01] ncclAllGather 2 7" nccl.log)" -eq 2 &&
	test "$(grep -c " ncclAllGather 0 7" nccl.log)" -eq 2 &&
	test "$(nccl_rs)" -eq 12 && test "$(nccl_ag)" -eq 8
'
test_expect_success 'a type the plugin refuses: NCCL runs those reduce-scatters and all-gathers, penny the rest' '
	PENNY_FAKE_REFUSE_TYPE=8 PENNY_NCCL_DEBUG=1 ip "$caller" 2 colls >out 2>err &&
	test "$(grep -c "colls ok" out)" -eq 2 &&
	test "$(nccl_rs)" -eq 42 && test "$(nccl_ag)" -eq 10 &&
	! awk "(\$3 == \"ncclReduceScatter\" || \$3 == \"ncclAllGather\") && \$5 != 7 && \$5 != 1" nccl.log | grep -q . &&
	grep -q "^penny-nccl: NCCL runs ncclReduceScatter of 8 bytes: the cuda plugin does not take it" err &&
	grep -q "^penny-nccl: NCCL runs ncclAllGather of 8 bytes: the cuda plugin does not take it" err
'
test_expect_success 'reduce-scatter and all-gather: PENNY_NCCL_MAX_BYTES, or auto'"'"'s one-shot sizes, of the whole buffer' '
	PENNY_NCCL_MAX_BYTES=1K PENNY_NCCL_DEBUG=1 ip "$caller" 2 colls >out 2>err &&
	test "$(grep -c "colls ok" out)" -eq 2 && set -- $(nccl_rsag_bytes 1024 2) &&
	test "$1" -eq 0 && test "$2" -eq 100 &&
	grep -q "^penny-nccl: NCCL runs ncclAllGather of 8000 bytes: above PENNY_NCCL_MAX_BYTES (1024)" err &&
	PENNY_FAKE_REG_BYTES=4096 ip "$caller" 4 colls >out 2>err && test "$(grep -c "colls ok" out)" -eq 4 &&
	set -- $(nccl_rsag_bytes 4095 4) && test "$1" -eq 0 && test "$2" -eq 188
'
test_expect_success 'reduce-scatter and all-gather in a graph capture: penny'"'"'s once set up outside one' '
	PENNY_FAKE_CAPTURING=1 ip "$caller" 2 colls >out 2>err && test "$(grep -c "colls ok" out)" -eq 2 &&
	test "$(nccl_rs)" -eq 170 && test "$(nccl_ag)" -eq 34 && ! grep -q ncclAllGather.*" 1$" nccl.log &&
	PENNY_FAKE_CAPTURING=2 ip "$caller" 2 colls >out 2>err && test "$(grep -c "colls ok" out)" -eq 2 &&
	test "$(nccl_rs)" -eq 2 && test "$(nccl_ag)" -eq 2
'
test_expect_success 'PENNY_NCCL_DEBUG: who runs each kind of call and why, once a reason' '
	PENNY_NCCL_DEBUG=1 ip "$caller" 2 colls >out 2>err && test "$(grep -c "colls ok" out)" -eq 2 &&
	grep -q "^penny-nccl: NCCL runs communicator $ptr (ncclCommInitRank: 2 ranks) until its first ncclAllReduce, ncclReduceScatter or ncclAllGather outside a group and a graph capture, where penny.s set-up decides$" err &&
	grep -q "^penny-nccl: penny runs ncclAllReduce, ncclReduceScatter, ncclAllGather of communicator $ptr of 2 ranks: fake device" err &&
	test "$(grep -c "^penny-nccl: penny runs ncclReduceScatter (the first of 8 bytes)" err)" -eq 1 &&
	test "$(grep -c "^penny-nccl: penny runs ncclAllGather (the first of 8 bytes)" err)" -eq 1 &&
	grep -q "^penny-nccl: NCCL runs ncclReduceScatter inside a group" err &&
	grep -q "^penny-nccl: NCCL runs ncclAllGather inside a group" err && test "$(wc -l <err)" -eq 6 &&
	PENNY_NCCL_DEBUG=1 ip "$caller" 2 args >out 2>err &&
	grep -q "^penny-nccl: NCCL runs ncclReduceScatter of a type or op penny lacks" err &&
	grep -q "^penny-nccl: NCCL runs ncclAllGather of a type or op penny lacks" err &&
	grep -q "^penny-nccl: NCCL runs ncclAllGather with count 0, a NULL buffer or a count past" err
'
# communicators penny does not run: NCCL's, with the right results, each
# told (and threads of one process, which penny runs); the fake NCCL's
# ncclCommInitAll makes its ranks in one process, a thread each runs the
# scenario; the split communicators of the allreduce scenario (ranks % 2)
# are of 1 rank with 2 ranks, of 2 with 4
host_ag() { grep -c " ncclAllGather [0-9]* 1$" nccl.log || true; }
# communicators one thread made every rank of (ncclCommInitAll's, or
# ncclCommInitRank's in one group, as nccl-tests makes them): penny's
# set-up runs at once, a thread a rank (before: ncclCommInitAll's were
# NCCL's, and the group's waited for a first call outside a group, which
# nccl-tests' -g never makes); their grouped reduce-scatters and
# all-gathers are penny's too (a thread calling every rank calls in groups)
made_now() { grep -c "^penny-nccl: penny.s set-up of communicator $ptr runs now ($1: its $2 ranks made by one thread, which calls them in groups), a thread for each rank$" err; }
test_expect_success 'ncclCommInitAll: penny'"'"'s set-up at once, a thread a rank; right results' '
	PENNY_NCCL_DEBUG=1 ip "$caller" 2 initall:allreduce >out 2>err &&
	test "$(grep -c "allreduce ok, 86 " out)" -eq 2 && test "$(nccl_ar)" -eq 2 &&
	grep -q "^rank -1 ncclCommInitAll 2$" nccl.log && test "$(host_ag)" -gt 0 &&
	test "$(made_now ncclCommInitAll 2)" -eq 1 &&
	grep -q "^penny-nccl: penny runs ncclAllReduce, ncclReduceScatter, ncclAllGather of communicator $ptr of 2 ranks: fake device" err &&
	test "$(grep -c "^penny-nccl: NCCL runs communicator $ptr (ncclCommSplit: 1 rank; penny runs 2 ranks or more)$" err)" -eq 2 &&
	ip "$caller" 3 initall:colls >out 2>err && test ! -s err && test "$(grep -c "colls ok" out)" -eq 3 &&
	test "$(nccl_rs)" -eq 0 && test "$(nccl_ag)" -eq 0
'
test_expect_success 'every rank made by ncclCommInitRank in one group of one thread: set up at once' '
	PENNY_NCCL_DEBUG=1 ip "$caller" 2 maingroup:allreduce >out 2>err &&
	test "$(grep -c "allreduce ok, 86 " out)" -eq 2 && test "$(nccl_ar)" -eq 2 &&
	test "$(made_now ncclCommInitRank 2)" -eq 1 && ! grep -q "(ncclCommInitRank: 2 ranks) until" err &&
	PENNY_NCCL_DEBUG=1 ip "$caller" 3 maingroup:colls >out 2>err &&
	test "$(grep -c "colls ok" out)" -eq 3 && test "$(made_now ncclCommInitRank 3)" -eq 1 &&
	test "$(nccl_rs)" -eq 0 && test "$(nccl_ag)" -eq 0 &&
	! grep -q "inside a group" err
'
test_expect_success 'ranks that are threads of one process: penny runs them as any other' '
	PENNY_NCCL_DEBUG=1 ip "$caller" 2 threads:allreduce >out 2>err &&
	test "$(grep -c "allreduce ok, 86 " out)" -eq 2 && test "$(nccl_ar)" -eq 2 &&
	c=$(sed -n "s/^penny-nccl: NCCL runs communicator \($ptr\) (ncclCommInitRank: 2 ranks) until its first .*/\1/p" err) &&
	test -n "$c" && grep -q "^penny-nccl: penny runs ncclAllReduce, ncclReduceScatter, ncclAllGather of communicator $c of 2 ranks: fake device" err &&
	PENNY_NCCL_DEBUG=1 ip "$caller" 4 initall:allreduce >out 2>err &&
	test "$(grep -c "allreduce ok, 86 " out)" -eq 4 &&
	test "$(grep -c "^penny-nccl: NCCL runs communicator $ptr (ncclCommSplit: 2 ranks) until" err)" -eq 2 &&
	test "$(grep -c "^penny-nccl: penny runs ncclAllReduce, ncclReduceScatter, ncclAllGather of communicator $ptr of 2 ranks" err)" -eq 2 &&
	ip "$caller" 3 threads:colls >out 2>err && test ! -s err && test "$(grep -c "colls ok" out)" -eq 3 &&
	test "$(nccl_rs)" -eq 3 && test "$(nccl_ag)" -eq 3
'
# nccl-tests 2.19 destroys every thread's communicator from its main
# thread, one after another; the cuda plugin's release is collective (its
# barriers before it frees what its peers mapped; the fake plugin's with
# PENNY_FAKE_FINI_BARRIER=1): each waits, its last call done, until the
# last of its clique comes (it hung until PENNY_NCCL_TIMEOUT before)
test_expect_success 'threads destroyed one after another by the main thread: released together, no wait' '
	export PENNY_FAKE_FINI_BARRIER=1 &&
	PENNY_NCCL_TIMEOUT=60 PENNY_NCCL_DEBUG=1 ip timeout 20 "$caller" 2 threadsmain:allreduce >out 2>err &&
	test "$(grep -c "allreduce ok, 86 " out)" -eq 2 && grep -q "^main thread: 2 communicators destroyed$" out &&
	test "$(nccl_ar)" -eq 2 &&
	grep -q "^penny-nccl: penny runs ncclAllReduce, ncclReduceScatter, ncclAllGather of communicator $ptr of 2 ranks" err &&
	PENNY_NCCL_TIMEOUT=60 ip timeout 20 "$caller" 3 threadsmain:colls >out 2>err &&
	test "$(grep -c "colls ok" out)" -eq 3 && grep -q "^main thread: 3 communicators destroyed$" out
'
# one thread calls every rank inside groups (nccl-tests' -g N): the test
# plugin queues each call (PENNY_FAKE_ASYNC=1) as a GPU's stream does, so
# the thread launches every rank's before any runs; every result checked,
# none reaches NCCL, the main thread destroys them one after another (the
# release barrier on: they go together).  Before ff0095e these calls were
# NCCL's, which one thread cannot run for several ranks (a wait until the
# timeout here)
test_expect_success 'one thread, every rank, grouped calls (nccl-tests -g): penny'"'"'s, right results' '
	export PENNY_FAKE_ASYNC=1 PENNY_FAKE_FINI_BARRIER=1 &&
	ip timeout 60 "$caller" 2 grouped:allreduce >out 2>err && test ! -s err &&
	grep -q "^grouped: allreduce ok, 84 grouped calls of 2 ranks$" out && test "$(nccl_ar)" -eq 0 &&
	ip timeout 60 "$caller" 3 grouped:colls >out 2>err && test ! -s err &&
	grep -q "^grouped: colls ok, 100 grouped calls of 3 ranks$" out &&
	test "$(nccl_rs)" -eq 0 && test "$(nccl_ag)" -eq 0
'
# the caller's CUDA context is the same after a call penny took as before
# it, as after NCCL's (one thread may call ranks of several GPUs): the
# set-up and the host services enter the rank's own (the fake driver
# keeps a context per thread)
test_expect_success 'the thread'"'"'s CUDA context is given back after penny'"'"'s calls' '
	ip "$caller" 2 ctx >out 2>err && test "$(grep -c "ctx ok, 2 " out)" -eq 2 && test "$(nccl_ar)" -eq 0
'
test_expect_success 'a call NCCL runs makes no CUDA context call of penny'"'"'s' '
	PENNY_NCCL_MAX_BYTES=1K ip "$caller" 2 ctxnccl >out 2>err &&
	test "$(grep -c "ctxnccl ok, 2 " out)" -eq 2 && test "$(nccl_ar)" -eq 2 || { cat out err; false; }
'
# one thread's communicators torn down as a watchdog or nccl-tests does
# (grouped:teardown): a group ended by ncclGroupSimulateEnd leaves the next
# group's set-up to its end (the depth stayed open before, and the ranks'
# calls went to NCCL); ranks made by ncclCommInitRankConfig in a group are
# set up there; the thread's context stays the caller's through
# ncclCommGetAsyncError, destroy and abort (destroy left it on the rank's
# GPU before); a clique destroyed on one rank and aborted on the others
# leaves no backend behind (one stayed parked for good before: its thread
# here); ncclCommInitAll inside a group is set up at the group's end, where
# NCCL makes them (the set-up's allgathers came inside the group before)
test_expect_success 'one thread'"'"'s communicators: simulated group, config ranks, context and clique teardown' '
	export PENNY_FAKE_ASYNC=1 PENNY_FAKE_FINI_BARRIER=1 &&
	PENNY_NCCL_DEBUG=1 ip timeout 60 "$caller" 3 grouped:teardown >out 2>err &&
	grep -q "^grouped: teardown ok, 3 ranks$" out && test "$(nccl_ar)" -eq 0 &&
	test "$(grep -c "ncclCommInitRankConfig: its 3 ranks made by one thread" err)" -eq 1 &&
	: the last ncclCommInitAll, inside a group, is set up after its ncclGroupEnd &&
	awk "/ncclCommInitAll/ { last = NR } { line[NR] = \$0 } END { print line[last + 1] }" nccl.log >next &&
	grep -q " ncclGroupEnd$" next
'
# PENNY_NCCL is read again at each communicator's set-up (the PyTorch
# bench's in-process A/B): a split made with it off is NCCL's, the next
# one, made with it unset, penny's; the first communicator stays penny's
test_expect_success 'PENNY_NCCL=off set by the program: the communicators it makes next are NCCL'"'"'s' '
	PENNY_NCCL_DEBUG=1 ip "$caller" 4 offsplit >out 2>err &&
	test "$(grep -c "offsplit ok, 3 " out)" -eq 4 && test "$(nccl_ar)" -eq 4 &&
	test "$(grep -c "^penny-nccl: NCCL runs communicator $ptr of 2 ranks (PENNY_NCCL=off on some rank)$" err)" -eq 2 &&
	test "$(grep -c "^penny-nccl: penny runs ncclAllReduce, ncclReduceScatter, ncclAllGather of communicator $ptr of 2 ranks" err)" -eq 2 &&
	grep -q "^penny-nccl: penny runs ncclAllReduce, ncclReduceScatter, ncclAllGather of communicator $ptr of 4 ranks" err &&
	NCCL_CALLER_OFF=maybe ip "$caller" 4 offsplit >out 2>err &&
	test "$(grep -c "offsplit ok, 3 " out)" -eq 4 && test "$(nccl_ar)" -eq 4 &&
	test "$(grep -c "^penny-nccl: PENNY_NCCL=.maybe. at communicator $ptr.s set-up: on, off, 1 or 0; NCCL runs it$" err)" -eq 2 &&
	test "$(wc -l <err)" -eq 2
'
test_expect_success 'a communicator the interposer never saw (made by NCCL'"'"'s own handle): every call NCCL'"'"'s' '
	PENNY_NCCL_DEBUG=1 ip "$caller" 2 untracked:allreduce >out 2>err &&
	test "$(grep -c "allreduce ok, 86 " out)" -eq 2 && test "$(nccl_ar)" -eq 172 &&
	! grep -q "(ncclCommInitRank" err && test "$(grep -c "(ncclCommSplit: 1 rank;" err)" -eq 2 &&
	ip "$caller" 2 untracked:colls >out 2>err && test ! -s err && test "$(grep -c "colls ok" out)" -eq 2 &&
	test "$(nccl_rs)" -eq 170 && test "$(nccl_ag)" -eq 34 && test "$(host_ag)" -eq 0
'
test_expect_success 'ncclCommShrink and ncclCommGrow: their communicators are penny'"'"'s as any other, each told' '
	rm -f nccl.log && "$caller" 3 shrinkgrow >out && test "$(grep -c "shrinkgrow ok, 3 " out)" -eq 2 &&
	grep -q "rank 2: shrinkgrow ok, 2 " out && test "$(nccl_ar)" -eq 8 &&
	PENNY_NCCL_DEBUG=1 ip "$caller" 3 shrinkgrow >out 2>err && test "$(grep -c "shrinkgrow ok" out)" -eq 3 &&
	test "$(nccl_ar)" -eq 0 &&
	for how in "ncclCommShrink: 2" "ncclCommGrow: 3"; do
		c=$(sed -n "s/^penny-nccl: NCCL runs communicator \($ptr\) ($how ranks) until its first .*/\1/p" err) &&
		test -n "$c" && grep -q "^penny-nccl: penny runs ncclAllReduce, ncclReduceScatter, ncclAllGather of communicator $c of ${how#*: } ranks" err ||
		{ echo "$how:"; cat err; return 1; }
	done
'
test_expect_success 'a missing real NCCL: one line, ncclSystemError, no crash' '
	PENNY_NCCL_REAL=$TRASH/nope.so test_exit 1 ip "$caller" 2 version >out 2>err &&
	grep -q "^ncclGetVersion: 2 (unhandled system error)" out && one_line err &&
	grep -q "^penny-nccl: cannot open the real NCCL PENNY_NCCL_REAL=.*nope.so" err &&
	PENNY_NCCL_REAL=$TRASH/nope.so test_exit 1 ip "$caller" 2 allreduce >out 2>err &&
	grep -q "^ncclGetUniqueId: 2 " out && one_line err &&
	PENNY_NCCL_REAL=/dev/null test_exit 1 ip "$caller" 2 version >out 2>err && one_line err &&
	grep -q "/dev/null.: not a regular file" err &&
	mkfifo fifo && PENNY_NCCL_REAL=$TRASH/fifo test_exit 1 ip "$caller" 2 version >out 2>err &&
	one_line err && grep -q "fifo.: not a regular file" err &&
	PLUGIN=$TRASH/fifo ip "$caller" 2 allreduce >out 2>err && one_line err &&
	grep -q "cannot load the penny plugin .*fifo: not a regular file" err
'
test_expect_success 'a peer that leaves: the first allreduce fails within the wait, one line a rank' '
	PENNY_FAKE_NCCL_TIMEOUT=2 ip "$caller" 3 peerdies >out 2>err &&
	grep -q "rank 0: peerdies ok" out && grep -q "rank 1: peerdies ok" out &&
	test "$(grep -c "penny.s set-up on NCCL.s communicator failed" err)" -eq 2
'
test_expect_success 'installed as libnccl.so.2: the real one by PENNY_NCCL_REAL, the plugin beside it, never itself' '
	mkdir -p inst && ln -sf "$lib" inst/libnccl.so.2 &&
	rm -f nccl.log && env LD_LIBRARY_PATH="$TRASH/inst:$fakes/fakecuda" \
		PENNY_NCCL_REAL="$fakes/fakenccl/libnccl.so.2" PENNY_NCCL_PLUGIN="$fakes/cuda/penny-cuda.so" \
		timeout 120 "$caller" 2 allreduce >out 2>err && grep -q "rank 1: allreduce ok, 86 " out &&
	test "$(nccl_ar)" -eq 2 &&
	mkdir -p pl && cp "$lib" pl/ && cp "$fakes/cuda/penny-cuda.so" pl/ && ln -sf "$TRASH/pl/libpenny-nccl.so" inst/libnccl.so.2 &&
	rm -f nccl.log && env LD_LIBRARY_PATH="$TRASH/inst:$fakes/fakecuda" \
		PENNY_NCCL_REAL="$fakes/fakenccl/libnccl.so.2" PENNY_NCCL_DEBUG=1 \
		timeout 120 "$caller" 2 bf16 >out 2>err && grep -q "rank 1: bf16 ok" out &&
	grep -q "penny runs ncclAllReduce" err && test "$(nccl_ar)" -eq 0 &&
	test_exit 1 env LD_LIBRARY_PATH="$TRASH/inst" timeout 60 "$caller" 2 version >out 2>err &&
	one_line err && grep -q "is libpenny-nccl.so itself" err &&
	test_exit 1 env LD_LIBRARY_PATH="$TRASH/inst" PENNY_NCCL_REAL="$TRASH/inst/libnccl.so.2" \
		timeout 60 "$caller" 2 version >out 2>err &&
	one_line err && grep -q "is libpenny-nccl.so itself" err
'
test_expect_success 'a plugin without allreduce_stream, none, or one that fails: one line, NCCL runs' '
	PLUGIN=$fakes/penny-fakeold.so ip "$caller" 2 allreduce >out 2>err &&
	grep -q "rank 1: allreduce ok, 86 " out && one_line err &&
	grep -q "^penny-nccl: rank 0: the fakeold plugin .* has no allreduce_stream" err &&
	test "$(nccl_ar)" -eq 172 &&
	PLUGIN=$TRASH/none.so ip "$caller" 2 allreduce >out 2>err && one_line err &&
	grep -q "cannot load the penny plugin .*none.so" err && test "$(nccl_ar)" -eq 172 &&
	PLUGIN=$fakes/penny-failinit.so ip "$caller" 2 allreduce >out 2>err && one_line err &&
	grep -q "the failinit plugin: fake device is missing; NCCL runs every call" err &&
	test "$(nccl_ar)" -eq 172
'
test_expect_success 'PENNY_NCCL_MAX_BYTES takes the largest size it names, 1TiB; a timeout 2m' '
	PENNY_NCCL_MAX_BYTES=1TiB PENNY_NCCL_TIMEOUT=2m ip "$caller" 2 allreduce >out 2>err && test ! -s err &&
	grep -q "rank 1: allreduce ok" out && test "$(nccl_ar)" -lt 172
'
test_expect_success 'bad settings: one line a process, NCCL runs every call' '
	for bad in PENNY_NCCL_MAX_BYTES=12X PENNY_NCCL_MAX_BYTES=0 PENNY_NCCL_MAX_BYTES=99999999999999999999 \
		PENNY_NCCL_MAX_BYTES=2T PENNY_NCCL_MAX_BYTES=1Ki PENNY_NCCL_MAX_BYTES=1.5K \
		PENNY_NCCL_TIMEOUT=0 PENNY_NCCL_TIMEOUT=-1 PENNY_NCCL_TIMEOUT=2d PENNY_NCCL=maybe \
		PENNY_NCCL_EAGER_MAX_BYTES=-1 PENNY_NCCL_EAGER_MAX_BYTES=2T PENNY_NCCL_EAGER_MAX_BYTES=big; do
		env "$bad" LD_LIBRARY_PATH="$fakes/fakecuda" LD_PRELOAD="$lib" \
			PENNY_NCCL_PLUGIN="$fakes/cuda/penny-cuda.so" timeout 60 "$caller" 2 bf16 >out 2>err
		test $? -eq 1 && test "$(sort -u err | wc -l)" -eq 1 &&
		grep -q "^penny-nccl: ${bad%%=*}=" err || { echo "$bad:"; cat err; return 1; }
	done
'
test_expect_success 'abort: no collective teardown, no hang; the split and group calls' '
	ip "$caller" 2 abort >out 2>err && grep -q "rank 1: abort ok" out && test ! -s err &&
	test "$(grep -c " ncclCommAbort" nccl.log)" -eq 2
'
# the registration cache: the test plugin picks its two-shot kernel (which
# wants recv registered) from 4 KiB on; the scenario's calls are of 16 KiB
rc_stats() { grep -c "registration cache: $1 hits, $2 misses, $3 evicted, $4 staged" err; }
test_expect_success 'registration cache: reused buffers hit, reused addresses and mixed ranks re-register together' '
	PENNY_NCCL_REGCACHE=64 PENNY_FAKE_REG_BYTES=4096 PENNY_NCCL_MAX_BYTES=1G PENNY_NCCL_DEBUG=1 \
		ip "$caller" 3 regcache >out 2>err && test "$(grep -c "regcache ok, 10 " out)" -eq 3 &&
	test "$(rc_stats 4 5 0 1)" -eq 3 && test "$(nccl_ar)" -eq 0 && ! grep -q differ err
'
test_expect_success 'registration cache: PENNY_NCCL_REGCACHE bounds it (LRU), 0 (the default) turns it off' '
	PENNY_FAKE_REG_BYTES=4096 PENNY_NCCL_MAX_BYTES=1G PENNY_NCCL_DEBUG=1 \
		ip "$caller" 2 regcache >out 2>err && test "$(grep -c "regcache ok, 10 " out)" -eq 2 &&
	! grep -q "registration cache" err &&
	PENNY_NCCL_REGCACHE=2 PENNY_FAKE_REG_BYTES=4096 PENNY_NCCL_MAX_BYTES=1G PENNY_NCCL_DEBUG=1 \
		ip "$caller" 3 regcache >out 2>err && test "$(grep -c "regcache ok, 10 " out)" -eq 3 &&
	test "$(rc_stats 3 6 2 1)" -eq 3 &&
	PENNY_NCCL_REGCACHE=0 PENNY_FAKE_REG_BYTES=4096 PENNY_NCCL_MAX_BYTES=1G PENNY_NCCL_DEBUG=1 \
		ip "$caller" 2 regcache >out 2>err && test "$(grep -c "regcache ok, 10 " out)" -eq 2 &&
	! grep -q "registration cache" err &&
	PENNY_NCCL_REGCACHE=64 NCCL_CALLER_RANK0_ENV=PENNY_NCCL_REGCACHE=0 PENNY_FAKE_REG_BYTES=4096 \
		PENNY_NCCL_MAX_BYTES=1G ip "$caller" 2 regcache >out 2>err && test "$(grep -c "regcache ok, 10 " out)" -eq 2 &&
	one_line err && grep -q "PENNY_NCCL_REGCACHE (0 or not) differs between ranks 0 and 1" err &&
	test "$(nccl_ar)" -eq 20 &&
	PENNY_NCCL_REGCACHE=4097 test_exit 1 ip "$caller" 2 bf16 >out 2>err &&
	grep -q "^penny-nccl: PENNY_NCCL_REGCACHE=.4097.: 0..4096" err
'
test_expect_success 'registration cache: graph captures stage (no host collective in a capture)' '
	PENNY_NCCL_REGCACHE=64 PENNY_FAKE_CAPTURING=2 PENNY_FAKE_REG_BYTES=4096 PENNY_NCCL_MAX_BYTES=1G \
		PENNY_NCCL_DEBUG=1 \
		ip "$caller" 2 regcache >out 2>err && test "$(grep -c "regcache ok, 10 " out)" -eq 2 &&
	test "$(rc_stats 0 1 0 0)" -eq 2 && test "$(nccl_ar)" -eq 0
'
test_expect_success 'a kernel'"'"'s timeout reaches ncclCommGetAsyncError and ncclGetLastError' '
	PENNY_FAKE_ASYNC_ERROR=1 ip "$caller" 2 asyncerr >out 2>err &&
	grep -q "rank 0: asyncerr ok" out && grep -q "rank 1: asyncerr ok" out &&
	grep -q "rank 1: penny.s allreduce failed: allreduce on rank 1 timed out waiting for rank 0" err
'
# after penny's error the communicator is broken: a destroy (PyTorch's
# destroy_process_group) waits for no peer, as an abort; the collective
# release's barrier waited for the peer before (PENNY_NCCL_TIMEOUT)
test_expect_success 'after a kernel'"'"'s timeout ncclCommDestroy waits for no peer' '
	PENNY_FAKE_ASYNC_ERROR=1 PENNY_FAKE_FINI_BARRIER=1 ip "$caller" 2 asyncdestroy >out 2>err &&
	grep -q "rank 0: asyncdestroy ok" out && grep -q "rank 1: asyncdestroy ok" out
'
test_expect_success 'the plugin passes the checks of penny'"'"'s loader, or NCCL runs every call' '
	PLUGIN=$fakes/penny-badabi.so ip "$caller" 2 allreduce >out 2>err &&
	grep -q "rank 1: allreduce ok, 86 " out && one_line err &&
	grep -q "the plugin .*penny-badabi.so. has ABI 7 (.* bytes) under penny_plugin_v1" err &&
	PLUGIN=$fakes/penny-nosym.so ip "$caller" 2 allreduce >out 2>err && one_line err &&
	grep -q "penny-nosym.so. is not a penny plugin (no penny_plugin_v1)" err &&
	test "$(nccl_ar)" -eq 172
'
test_expect_success 'the library exports NCCL'"'"'s API and nothing else' '
	nm -D --defined-only "$lib" | awk "{ print \$3 }" >syms &&
	! grep -v "^nccl" syms &&
	for f in ncclAllReduce ncclCommInitRankConfig ncclCommSplit ncclCommWindowRegister ncclMemAlloc \
		ncclGroupEnd ncclGetLastError ncclCommGetAsyncError ncclSend ncclRecv ncclCommInitAll \
		ncclCommShrink ncclCommGrow ncclCommGetUniqueId; do
		grep -qx "$f" syms || { echo "missing $f"; return 1; }
	done
'
test_done
