#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The NCCL interposer (libpenny-nccl.so) against a careless or unusual
# framework, on the CPU (nccl-caller over the fake NCCL and CUDA driver and
# the test cuda plugin, as t0610): NULL and destroyed communicators at
# every entry point, bad ids, ranks and configs, groups ended without a
# start or 10000 deep or left open, counts 0 and past any buffer, NULL
# buffers, types and ops that do not exist, a second thread's calls while
# the first is in a group, a watchdog polling or aborting, calls on a
# non-blocking communicator still in progress, settings that cannot be
# read.  Each gets NCCL's answer (the interposer forwards it) or penny's
# right result, at most one line, and never a crash, a hang or a wrong
# ncclResult_t.
# cost: 12
. "$(dirname "$0")/../lib.sh"

. "$TOP/tests/helpers/interposer.sh"
# the test plugin's size table: two-shot (NCCL's under auto) from 1 MiB, as
# the cuda plugin's keeps its one-shot kernels to small sizes
export PENNY_FAKE_REG_BYTES=1048576

test_expect_success 'NULL communicators at every entry point: NCCL'"'"'s answers, no line' '
	run "$caller" 2 nullcomm && all_ok nullcomm 2 && test ! -s err &&
	test "$(grep -c "^rank -1 ncclAllReduce 4 7 0" nccl.log)" -eq 2 && test "$(nccl_ar)" -eq 2 &&
	run "$caller" 2 threads:nullcomm && all_ok nullcomm 2 && test ! -s err
'
test_expect_success 'destroyed communicators (destroy twice, abort then destroy, calls on them): NCCL'"'"'s answers' '
	run "$caller" 2 twice && all_ok twice 2 && test ! -s err &&
	: the calls on a destroyed communicator reach NCCL, which refuses them &&
	test "$(nccl_ar)" -eq 2 &&
	run "$caller" 3 threads:twice && all_ok twice 3 && test ! -s err &&
	PENNY_FAKE_FINI_BARRIER=1 run "$caller" 2 initall:twice && all_ok twice 2 &&
	test ! -s err
'
test_expect_success 'bad ids, ranks, counts of ranks and configs: NCCL'"'"'s answers, nothing made' '
	NCCL_CALLER_MORE_RANKS=1 PENNY_FAKE_NCCL_TIMEOUT=2 run "$caller" 3 badinit &&
	all_ok badinit 3 && test ! -s err && test "$(nccl_ar)" -eq 0
'
test_expect_success 'ncclGroupEnd without a start, groups 10000 deep: NCCL'"'"'s answers; then penny'"'"'s calls' '
	PENNY_NCCL_DEBUG=1 run "$caller" 2 groups && all_ok groups 2 &&
	: the call inside the groups is NCCL'"'"'s, those after them penny'"'"'s &&
	test "$(nccl_ar)" -eq 2 && grep -q "^penny-nccl: penny runs ncclAllReduce (the first of 400 bytes)" err &&
	run "$caller" 2 maingroup:groups && all_ok groups 2 && test ! -s err
'
test_expect_success 'a group left open, a call in it, at exit: the process ends' '
	LIMIT=20 run "$caller" 2 groupexit && all_ok groupexit 2 && test ! -s err &&
	LIMIT=20 run "$caller" 2 initall:groupexit && grep -q ": groupexit ok" out
'
test_expect_success 'counts 0 and past any buffer, NULL buffers, type and op 99: NCCL'"'"'s answers, nothing broken' '
	run "$caller" 2 counts && all_ok counts 2 && test ! -s err &&
	PENNY_NCCL_MAX_BYTES=1M run "$caller" 2 counts && all_ok counts 2 && test ! -s err &&
	run "$caller" 2 threads:counts && all_ok counts 2 && test ! -s err
'
test_expect_success 'a second thread'"'"'s calls while the first is in a group: outside it, penny'"'"'s' '
	run "$caller" 2 secondthread && all_ok secondthread 2 && test ! -s err &&
	test "$(nccl_ar)" -eq 0 &&
	run "$caller" 2 initall:secondthread && all_ok secondthread 2 && test ! -s err
'
test_expect_success 'a watchdog polls ncclCommGetAsyncError while its rank calls and destroys: no wrong answer' '
	run "$caller" 2 watchdog && all_ok watchdog 2 && test ! -s err &&
	test "$(nccl_ar)" -eq 0 &&
	PENNY_FAKE_FINI_BARRIER=1 run "$caller" 2 threads:watchdog && all_ok watchdog 2 &&
	test ! -s err
'
# A rank whose peer never comes to the first allreduce waits inside penny's
# set-up, in NCCL's ncclAllGather (whose first call waits on the host for
# the peers' connections); a framework's watchdog ends such a wait with
# ncclCommAbort from another thread.  The abort waited for the call to
# return before (which only NCCL's abort makes it do): here until the late
# rank came (6 s), with a real NCCL for ever.
test_expect_success 'ncclCommAbort from a watchdog ends a call waiting in penny'"'"'s set-up for a peer' '
	NCCL_CALLER_LATE=6 LIMIT=60 run "$caller" 3 abortwait &&
	all_ok abortwait 3 && test "$(grep -c "^rank [01]: aborted after [0-3]\.[0-9] s$" out)" -eq 2 &&
	test "$(grep -c "set-up on NCCL.s communicator failed" err)" -le 3
'
# NCCL refuses a call on a non-blocking communicator whose last call is
# still in progress (ncclInvalidArgument) and the communicator stays good.
# Penny's set-up ran its ncclAllGather there before: refused, it returned
# ncclSystemError and left the communicator broken (every later call
# NCCL's, ncclCommGetAsyncError ncclSystemError for good).
test_expect_success 'a call on a non-blocking communicator in progress: NCCL'"'"'s answer, penny'"'"'s once ready' '
	run "$caller" 2 notready && all_ok notready 2 && test ! -s err &&
	test "$(nccl_ar)" -eq 2 &&
	run "$caller" 3 oddsplit && all_ok oddsplit 3 && test ! -s err &&
	test "$(nccl_ar)" -eq 2 && test "$(grep -c "^rank [01] ncclAllReduce 4 7 0$" nccl.log)" -eq 2
'
# PENNY_NCCL_DEBUG=off (or 0) is off, as PENNY_NCCL's values; off turned
# the debug lines on before (any value but 0 did)
test_expect_success 'PENNY_NCCL_DEBUG=0 or off: no debug lines; 1: the lines' '
	for v in 0 off; do
		PENNY_NCCL_DEBUG=$v run "$caller" 2 bf16 && all_ok bf16 2 &&
		test ! -s err || { echo "PENNY_NCCL_DEBUG=$v:"; cat err; return 1; }
	done &&
	PENNY_NCCL_DEBUG=1 run "$caller" 2 bf16 && all_ok bf16 2 &&
	grep -q "^penny-nccl: penny runs ncclAllReduce (the first of 6 bytes)" err
'
test_expect_success 'settings that cannot be read: one line a process, NCCL runs every call' '
	for bad in PENNY_NCCL_TIMEOUT=nan "PENNY_NCCL_TIMEOUT= 5" PENNY_NCCL_TIMEOUT=5x \
		PENNY_NCCL_REGCACHE=-0 PENNY_NCCL_REGCACHE=1.5 PENNY_NCCL_MAX_BYTES=0x10 \
		PENNY_NCCL_MAX_BYTES=AUTO PENNY_NCCL=OFF PENNY_NCCL_EAGER_MAX_BYTES=1.5K; do
		env "$bad" LD_LIBRARY_PATH="$fakes/fakecuda" LD_PRELOAD="$lib" \
			PENNY_NCCL_PLUGIN="$fakes/cuda/penny-cuda.so" timeout 60 "$caller" 2 bf16 >out 2>err
		test $? -eq 1 && test "$(wc -l <err)" -eq 2 && test "$(sort -u err | wc -l)" -eq 1 &&
		grep -q "^penny-nccl: ${bad%%=*}=" err || { echo "$bad:"; cat err; return 1; }
	done &&
	: two at once: still one line a process &&
	PENNY_NCCL_TIMEOUT=0 PENNY_NCCL_REGCACHE=x test_exit 1 ip "$caller" 2 bf16 >out 2>err &&
	test "$(wc -l <err)" -eq 2 && test "$(sort -u err | wc -l)" -eq 1 &&
	mkdir -p dir && env LD_LIBRARY_PATH="$fakes/fakecuda" LD_PRELOAD="$lib" PENNY_NCCL_PLUGIN="$TRASH/dir" \
		timeout 60 "$caller" 2 allreduce >out 2>err && test "$(wc -l <err)" -eq 1 &&
	grep -q "cannot load the penny plugin .*dir: not a regular file; NCCL runs every call" err
'
# a path of 600 characters in PENNY_NCCL_PLUGIN or PENNY_NCCL_REAL filled
# the line before (300 or 512 bytes), whose reason was cut off
test_expect_success 'a plugin or real NCCL path of 600 characters: the line keeps its reason' '
	long=$(printf "/x%.0s" $(seq 300)) &&
	env LD_LIBRARY_PATH="$fakes/fakecuda" LD_PRELOAD="$lib" PENNY_NCCL_PLUGIN="$long" \
		timeout 60 "$caller" 2 allreduce >out 2>err && test "$(wc -l <err)" -eq 1 &&
	grep -q "^penny-nccl: rank 0: cannot load the penny plugin /x/x.*: No such file or directory; NCCL runs every call$" err &&
	PENNY_NCCL_REAL=$long test_exit 1 ip "$caller" 2 version >out 2>err && test "$(wc -l <err)" -eq 1 &&
	grep -q "^penny-nccl: cannot open the real NCCL PENNY_NCCL_REAL=./x/x.*: No such file or directory$" err
'
test_done
