/* SPDX-License-Identifier: MIT */
/*
 * The wait for penny's last call of a communicator before its buffers go
 * (its destroy or finalize): penny's kernels ran on the caller's stream,
 * which by then may be gone (cuStreamDestroy: CUDA finishes its work
 * later) or mean another stream on the destroying thread
 * (CU_STREAM_PER_THREAD, a per-thread default stream).  An event recorded
 * after each call penny ran at once is waited for instead: one
 * cuEventRecord a call.  A call in a graph capture records none (it would
 * be a node of the caller's graph): a communicator whose calls were all
 * captured waits for the last one's stream, as before.
 */
#include "interpose.h"

/* The plugin's call left the rank's context current; the event is made in
 * it, at the first call. */
int mark_done(struct pcomm *p, cudaStream_t s)
{
	if (!p->done && (p->cu->CtxSetCurrent(p->ctx) ||
			 p->cu->EventCreate(&p->done, CU_EVENT_DISABLE_TIMING))) {
		p->done = NULL;
		return 0;
	}
	return p->cu->EventRecord(p->done, (CUstream)s) == CUDA_SUCCESS;
}

/* The caller's context is the caller's to keep (detach's and the
 * registration cache's); an event's wait needs none. */
void wait_last(struct pcomm *p)
{
	if (p->done_set)
		p->cu->EventSynchronize(p->done);
	else if (p->used)
		p->cu->StreamSynchronize(p->last);
}
