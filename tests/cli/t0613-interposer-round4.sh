#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The NCCL interposer (libpenny-nccl.so) against NCCL's own checks of a
# communicator and its groups, on the CPU (nccl-caller over the fake NCCL
# and CUDA driver and the test cuda plugin, as t0610-t0612).  NCCL looks at
# a communicator before a call's arguments (ncclCommEnsureReady): a call
# that enqueues work on one with an asynchronous error gets that error,
# penny's error too, and one on a non-blocking communicator whose last
# call is in progress gets ncclInvalidArgument, penny's kinds and its
# finalize and destroy too (penny's part stays for the next try).  A call penny takes inside a group
# runs at the group's end, as NCCL's: after the caller's work before
# ncclGroupEnd, and not at all where ncclGroupSimulateEnd ends the group
# (NCCL simulates it).  PENNY_NCCL_REAL naming a copy of the interposer is
# refused in one line.
# cost: 6
. "$(dirname "$0")/../lib.sh"

. "$TOP/tests/helpers/interposer.sh"

# the calls after penny's error went to NCCL, which ran them: the ranks'
# next calls could split between NCCL and penny (one rank's error not yet
# seen by another), and hang; NCCL's own calls (broadcast, reduce, send)
# ran too
test_expect_success 'after penny'"'"'s async error every call gets it, NCCL'"'"'s too, as after NCCL'"'"'s: nothing runs' '
	PENNY_FAKE_ASYNC_ERROR=1 run "$caller" 2 errlater && all_ok errlater 2 &&
	test "$(nccl_ar)" -eq 0 && ! grep -E "ncclBroadcast|ncclReduce|ncclSend" nccl.log &&
	PENNY_FAKE_ASYNC_ERROR=1 run "$caller" 3 threads:errlater && all_ok errlater 3
'
# penny ran them: a call NCCL refuses (its answer: ncclInvalidArgument)
test_expect_success 'a non-blocking communicator with NCCL'"'"'s call in progress: NCCL refuses penny'"'"'s kinds too' '
	PENNY_FAKE_NCCL_BUSY_MS=800 run "$caller" 2 busyon && all_ok busyon 2 &&
	test "$(grep -c "^rank 0 ncclAllReduce 3 9 0$" nccl.log)" -eq 1 &&
	test "$(grep -c "^rank 1 ncclReduceScatter 2 7 0$" nccl.log)" -eq 1
'
# rank 0's destroy released penny's part alone (its barrier refused by
# NCCL), then NCCL refused the destroy; rank 1's release waited for rank
# 0's barrier until the fake NCCL's timeout (10 s)
test_expect_success 'a destroy NCCL refuses (call in progress) leaves penny'"'"'s part: the peers'"'"' destroys meet' '
	PENNY_FAKE_FINI_BARRIER=1 PENNY_FAKE_NCCL_BUSY_MS=800 PENNY_FAKE_NCCL_TIMEOUT=10 \
		PENNY_NCCL_TIMEOUT=10 run "$caller" 2 destroybusy && all_ok destroybusy 2 &&
	test ! -s err &&
	test "$(grep -c "^rank 0 ncclCommDestroy$" nccl.log)" -eq 2
'
# penny ran a grouped call at once: ncclGroupSimulateEnd left it run (its
# buffer written) and NCCL never saw it; the caller's work on the buffer
# before ncclGroupEnd came after it
test_expect_success 'a call penny takes in a group runs at its end; ncclGroupSimulateEnd: NCCL simulates it' '
	for m in "" threads: maingroup:; do
		run "$caller" 2 ${m}simulate && all_ok simulate 2 &&
		test "$(grep -c "^rank 0 ncclAllReduce 7 7 0 (grouped)$" nccl.log)" -eq 2 &&
		grep -q ncclGroupSimulateEnd nccl.log || return 1
	done
'
# the copy's own ncclAllReduce was not the one it compared with (the
# preloaded library's, which the name binds to): each took the copy for
# the real NCCL, which called itself until the stack ran out (SIGSEGV)
test_expect_success 'PENNY_NCCL_REAL naming a copy of the interposer: ncclSystemError and one line, no crash' '
	cp "$lib" copy.so &&
	PENNY_NCCL_REAL=$PWD/copy.so test_exit 1 ip "$caller" 2 bf16 >out 2>err &&
	grep -q "^ncclGetUniqueId: 2 (unhandled system error)" out && test "$(wc -l <err)" -eq 1 &&
	grep -q "^penny-nccl: the real NCCL PENNY_NCCL_REAL=.*copy.so. is libpenny-nccl.so itself" err &&
	mkdir -p lib && cp "$lib" lib/libnccl.so.2 &&
	env LD_LIBRARY_PATH="$PWD/lib:$fakes/fakecuda" LD_PRELOAD="$lib" timeout 60 "$caller" 2 version \
		>out 2>err; test $? -eq 1 && test "$(wc -l <err)" -eq 1 &&
	grep -q "^penny-nccl: the real NCCL is libpenny-nccl.so itself" err
'
test_done
