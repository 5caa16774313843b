#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The NCCL interposer (libpenny-nccl.so) waits for penny's last call of a
# communicator before its destroy frees penny's buffers, on the CPU
# (nccl-caller over the fake NCCL and CUDA driver and the test cuda
# plugin, as t0610-t0613; the plugin queues each call, PENNY_FAKE_ASYNC=1,
# and runs it 300 ms later, as a busy GPU).  It waits for an event it
# recorded after the call, not for the caller's stream: a stream the
# caller destroyed before ncclCommDestroy (legal: CUDA finishes its work
# later) cannot be synchronized, and CU_STREAM_PER_THREAD on the
# destroying thread is that thread's own stream.
# cost: 2
. "$(dirname "$0")/../lib.sh"

. "$TOP/tests/helpers/interposer.sh"

export PENNY_FAKE_ASYNC=1 PENNY_FAKE_ASYNC_DELAY_MS=300

# before, the destroy's cuStreamSynchronize on the destroyed stream failed
# and waited for nothing: the fake plugin's fini came with the call still
# queued, which then ran on freed buffers (a wrong result, said on stderr)
test_expect_success 'the caller'"'"'s stream destroyed before ncclCommDestroy: the destroy waits for penny'"'"'s call' '
	run "$caller" 2 streamgone && all_ok streamgone 2 && test ! -s err &&
	test "$(nccl_ar)" -eq 0 &&
	run "$caller" 3 streamgone && all_ok streamgone 3 && test ! -s err
'
# before, the destroying thread's cuStreamSynchronize(CU_STREAM_PER_THREAD)
# waited for its own per-thread stream, not the caller's thread's
test_expect_success 'an allreduce on CU_STREAM_PER_THREAD, destroyed from another thread: the destroy waits' '
	run "$caller" 2 ptdsother && all_ok ptdsother 2 && test ! -s err &&
	test "$(nccl_ar)" -eq 0 &&
	run "$caller" 2 threads:ptdsother && all_ok ptdsother 2 && test ! -s err
'
test_done
