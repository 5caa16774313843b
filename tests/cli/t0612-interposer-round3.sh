#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The NCCL interposer (libpenny-nccl.so) when penny's own work fails, and
# against a careless framework's threads and settings, on the CPU
# (nccl-caller over the fake NCCL and CUDA driver and the test cuda plugin,
# as t0610 and t0611).  A failed set-up or call of penny's returns what
# NCCL answers in the same situation (ncclRemoteError for a peer that left
# or never answered, ncclUnhandledCudaError for a CUDA call, NCCL's own
# answer where its call failed), the communicator's async error is the
# same, and ncclGetLastError says penny's line, for NULL too (PyTorch and
# nccl-tests ask it so) until a call of NCCL's fails after it.  A thread
# that ends inside its group leaves nothing behind; communicators made in
# a group and destroyed before its end are not asked about at its end; a
# communicator penny runs, destroyed inside a group, runs no hidden
# collective there; PENNY_NCCL_DEBUG takes on, off, 1 or 0 alone; a
# revoked communicator (ncclCommRevoke, or the parent of a shrink with
# NCCL_SHRINK_ABORT) is NCCL's from then on.  Built
# with TSan (BUILD=build-tsan...), the watchdog cases check that the error
# and its line are read and written without a data race.
# cost: 10
. "$(dirname "$0")/../lib.sh"

. "$TOP/tests/helpers/interposer.sh"
export PENNY_FAKE_REG_BYTES=1048576
# rank $1's failed call gave $2, and the async error is the same
gave() {
	grep -q "^rank $1: [a-z]* $2 async 0 $2$" out || { echo "rank $1: not $2:"; cat out err; return 1; }
}

# NCCL's ncclAllGather under penny's set-up fails when a peer left (the
# fake NCCL's barrier gives up: ncclRemoteError).  The set-up answered
# ncclSystemError whatever failed before, and ncclGetLastError(NULL) was
# NCCL's, which knew nothing of it.
test_expect_success 'a peer gone before penny'"'"'s set-up: ncclRemoteError, the line in ncclGetLastError(NULL)' '
	NCCL_CALLER_LEAVE=1 PENNY_FAKE_NCCL_TIMEOUT=2 run "$caller" 3 setupfail && all_ok setupfail 2 &&
	gave 0 6 && gave 1 6 &&
	grep -q "^rank 0: last error: rank 0: penny.s set-up on NCCL.s communicator failed: NCCL.s ncclAllGather on it failed: .*(NCCL error 6); abort the communicator$" out &&
	test "$(grep -c "^penny-nccl: rank [01]: penny.s set-up on NCCL.s communicator failed" err)" -eq 2
'
test_expect_success 'a CUDA call of the set-up fails on rank 0: ncclUnhandledCudaError there, ncclRemoteError on its peer' '
	NCCL_CALLER_RANK0_ENV=PENNY_FAKE_CU_OOM=1 PENNY_FAKE_NCCL_TIMEOUT=2 run "$caller" 2 setupfail &&
	all_ok setupfail 2 && gave 0 1 && gave 1 6 &&
	grep -q "^penny-nccl: rank 0: penny.s set-up on NCCL.s communicator failed: cuMemAlloc failed: .*(CUDA error 2)" err
'
# a non-blocking communicator whose set-up exchange stays in progress past
# PENNY_NCCL_TIMEOUT: ncclRemoteError (ncclSystemError before), and the
# async error says so at once (ncclInProgress before, NCCL's call still
# going: a watchdog polling it never saw penny's error)
test_expect_success 'a set-up exchange past PENNY_NCCL_TIMEOUT: ncclRemoteError, the async error at once' '
	PENNY_FAKE_NCCL_BUSY_MS=3000 PENNY_NCCL_TIMEOUT=1 run "$caller" 2 setupwait &&
	all_ok setupwait 2 && gave 0 6 && gave 1 6 &&
	grep -q "did not answer within PENNY_NCCL_TIMEOUT (1 s)" err
'
# the test plugin's allreduce runs a host exchange on NCCL's communicator,
# which fails when a peer left: ncclUnhandledCudaError before
test_expect_success 'a peer gone after the set-up: penny'"'"'s next call ncclRemoteError, its line the last error' '
	PENNY_FAKE_NCCL_TIMEOUT=2 run "$caller" 3 callfail && all_ok callfail 2 &&
	gave 0 6 && gave 1 6 &&
	grep -q "^rank 1: last error: rank 1: penny.s allreduce failed: .*NCCL error 6" out
'
test_expect_success 'a watchdog polls the error and its line while it comes: one error, no race' '
	PENNY_FAKE_ASYNC_ERROR=1 run "$caller" 2 dogerr && all_ok dogerr 2 &&
	test "$(grep -c "penny.s allreduce failed" err)" -eq 2 &&
	PENNY_FAKE_ASYNC_ERROR=1 run "$caller" 3 threads:dogerr && all_ok dogerr 3 &&
	test "$(grep -c "penny.s allreduce failed" err)" -eq 3
'
# 300 threads, each making 2 communicators in a group, destroying them and
# ending inside the group: the interposer's list of the group's
# communicators (2.4 KB) stayed behind each (3 KB a thread, the fake
# NCCL's own 0.6 KB)
test_expect_success 'threads that end inside their group leave nothing behind' '
	run "$caller" 2 groupleak && all_ok groupleak 2 &&
	run "$caller" 2 threads:groupleak && all_ok groupleak 2
'
# the group's end asked NCCL whether they were made, on communicators
# destroyed (the real NCCL's freed) inside the group
test_expect_success 'communicators made in a group and destroyed before its end: not asked about at its end' '
	PENNY_FAKE_NCCL_STRICT=1 run "$caller" 2 groupdestroy && all_ok groupdestroy 2 &&
	PENNY_FAKE_NCCL_STRICT=1 run "$caller" 2 threads:groupdestroy && all_ok groupdestroy 2
'
# penny's release ran its barrier (an ncclAllGather) inside the caller's
# group, which NCCL runs at the group's end, on the destroyed communicator
test_expect_success 'a communicator penny runs, destroyed inside a group: no collective of it left in the group' '
	PENNY_FAKE_NCCL_STRICT=1 PENNY_FAKE_FINI_BARRIER=1 run "$caller" 2 groupteardown &&
	all_ok groupteardown 2 && test ! -s err &&
	PENNY_FAKE_NCCL_STRICT=1 PENNY_FAKE_FINI_BARRIER=1 run "$caller" 3 threads:groupteardown &&
	all_ok groupteardown 3 && test ! -s err
'
# any value but 0 and off turned the debug lines on before, silently
test_expect_success 'PENNY_NCCL_DEBUG other than on, off, 1 or 0: one line a process, NCCL runs every call' '
	for bad in yes 2 INFO ON " 1" "1 " -1; do
		env PENNY_NCCL_DEBUG="$bad" LD_LIBRARY_PATH="$fakes/fakecuda" LD_PRELOAD="$lib" \
			PENNY_NCCL_PLUGIN="$fakes/cuda/penny-cuda.so" timeout 60 "$caller" 2 bf16 >out 2>err
		test $? -eq 1 && test "$(wc -l <err)" -eq 2 && test "$(sort -u err | wc -l)" -eq 1 &&
		grep -qx "penny-nccl: PENNY_NCCL_DEBUG=.$bad.: on, off, 1 or 0; penny.s allreduce is off, NCCL runs every call" err ||
		{ echo "PENNY_NCCL_DEBUG=$bad:"; cat err; return 1; }
	done &&
	PENNY_NCCL_DEBUG=on run "$caller" 2 bf16 && all_ok bf16 2 &&
	grep -q "^penny-nccl: penny runs ncclAllReduce (the first of 6 bytes)" err
'
# penny went on taking the calls of a communicator NCCL had revoked (a
# bfloat16 sum, which only penny runs here, succeeded), and its destroy
# waited for penny's release barrier on it
test_expect_success 'a revoked communicator (ncclCommRevoke, a shrink that aborts) is NCCL'"'"'s from then on' '
	for m in "" threads:; do
		LIMIT=30 run "$caller" 2 ${m}revoke && all_ok revoke 2 &&
		test "$(grep -c "ncclCommRevoke" nccl.log)" -eq 2 &&
		LIMIT=30 run "$caller" 3 ${m}shrinkabort && all_ok shrinkabort 3 || return 1
	done
'
test_done
