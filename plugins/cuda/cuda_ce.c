/* SPDX-License-Identifier: MIT */
/*
 * The copy-engine allreduce (kernel "ce" of the size table): large sizes,
 * where one GPU's copy engines move about 394 GB/s over NVLink and its SMs'
 * stores about 369 (penny bw --gpu --gpu-engine both, 2 x H200).  The
 * protocol is in kargs.h.  Per piece, on streams of their own:
 *  - push, one stream a peer: copy this rank's slice of the peer into its
 *    CE area, then set the peer's flag for it (a copy); from the third
 *    piece on the copy first waits for an event of the peer's free stream,
 *    where a gate kernel waits until the peer's slot of this parity is
 *    free (off the push stream: a kernel between two copies idles the
 *    link while it starts);
 *  - the caller's stream: the reduce kernel (waits for every push into
 *    this rank's slots, reduces, tells every peer);
 *  - all-gather, one stream a peer: once the reduction is done, copy this
 *    rank's slice of its recv into the peer's recv; after the last piece
 *    copy this recv's identity (the reduce kernel wrote it) and set the
 *    peer's flag.
 * The flags are 4-byte copies behind the data on the same stream, not
 * kernels: a gate kernel between two pushes left the link idle about
 * 11 us (s58-ce-trace.txt), and the peer saw a push that late.  Stream
 * writes (cuStreamWriteValue32) into the peer's memory cost more: 351
 * GB/s at 1 GiB against 386 (s59-ce-flags.txt).
 * Pulling the results instead (each rank reading its peers' recv) keeps
 * every write in memory the writer can check, but a copy engine's remote
 * reads reach 370 GB/s where its writes reach 386 (results/2026-11-30-h200x2,
 * s58-ce-trace.txt).
 * The side streams fork from the caller's stream at the start and join it
 * at the end, so the call orders with the caller's work and a graph
 * captured on that stream holds all of it.  The last gate on the caller's
 * stream waits until every peer's results are in recv and checks that they
 * came from the same buffer (the ABI's registered buffers are symmetric).
 */
#include "cuda_ce.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

struct pn_ce {
	struct pn_gpu *g;
	int rank, n;
	const struct pn_reg *area;
	uint64_t slot_bytes;
	CUfunction gate;
	CUstream push[PN_AR_MAX_RANKS], ag[PN_AR_MAX_RANKS], fr[PN_AR_MAX_RANKS];
	CUevent fork, red, join[2 * PN_AR_MAX_RANKS], freed[PN_AR_MAX_RANKS];
};

unsigned pn_ce_grid(unsigned blocks, int n)
{
	return blocks > 2u * (unsigned)n + 8 ? blocks - 2u * (unsigned)n - 8 : 1;
}

int pn_ce_open(struct pn_gpu *g, int rank, int n, const struct pn_reg *area, CUmodule mod,
	       struct pn_ce **out)
{
	const struct pn_cudrv *cu = g->cu;
	struct pn_ce *ce;
	int p, ret = 0;

	*out = NULL;
	if (n < 2 || area->bytes <= PN_CE_HDR)
		return pn_plugin_fail(-EINVAL, "copy-engine allreduce: no room for its slots");
	ce = calloc(1, sizeof(*ce));
	if (!ce)
		return pn_plugin_fail(-ENOMEM, "out of memory");
	ce->g = g;
	ce->rank = rank;
	ce->n = n;
	ce->area = area;
	ce->slot_bytes = pn_ce_slot_bytes(area->bytes - PN_CE_HDR, n);
	PN_CU_GOTO(cu, ModuleGetFunction(&ce->gate, mod, "pn_ce_gate"), "pn_ce_gate", ret, fail);
	/* CU_STREAM_NON_BLOCKING, CU_EVENT_DISABLE_TIMING */
	PN_CU_GOTO(cu, EventCreate(&ce->fork, 2), "cuEventCreate", ret, fail);
	PN_CU_GOTO(cu, EventCreate(&ce->red, 2), "cuEventCreate", ret, fail);
	for (p = 0; p < n; p++) {
		if (p == rank)
			continue;
		PN_CU_GOTO(cu, StreamCreate(&ce->push[p], 1), "cuStreamCreate", ret, fail);
		PN_CU_GOTO(cu, StreamCreate(&ce->ag[p], 1), "cuStreamCreate", ret, fail);
		PN_CU_GOTO(cu, StreamCreate(&ce->fr[p], 1), "cuStreamCreate", ret, fail);
		PN_CU_GOTO(cu, EventCreate(&ce->freed[p], 2), "cuEventCreate", ret, fail);
		PN_CU_GOTO(cu, EventCreate(&ce->join[2 * p], 2), "cuEventCreate", ret, fail);
		PN_CU_GOTO(cu, EventCreate(&ce->join[2 * p + 1], 2), "cuEventCreate", ret, fail);
	}
	*out = ce;
	return 0;
fail:
	pn_ce_close(ce);
	return ret;
}

void pn_ce_close(struct pn_ce *ce)
{
	const struct pn_cudrv *cu;
	int p;

	if (!ce)
		return;
	cu = ce->g->cu;
	for (p = 0; p < PN_AR_MAX_RANKS; p++) {
		if (ce->push[p])
			cu->StreamDestroy(ce->push[p]);
		if (ce->ag[p])
			cu->StreamDestroy(ce->ag[p]);
		if (ce->fr[p])
			cu->StreamDestroy(ce->fr[p]);
		if (ce->freed[p])
			cu->EventDestroy(ce->freed[p]);
	}
	for (p = 0; p < 2 * PN_AR_MAX_RANKS; p++)
		if (ce->join[p])
			cu->EventDestroy(ce->join[p]);
	if (ce->fork)
		cu->EventDestroy(ce->fork);
	if (ce->red)
		cu->EventDestroy(ce->red);
	free(ce);
}

/* A gate of steps for peer q on stream s. */
static int gate(struct pn_ce *ce, struct pn_ar_args *a, CUstream s, uint32_t steps, int q)
{
	CUstream own = ce->g->stream;
	int ret;

	a->ce_steps = steps;
	a->ce_peer = q;
	ce->g->stream = s;
	ret = pn_gpu_launch(ce->g, ce->gate, 1, 32, a);
	ce->g->stream = own;
	return ret;
}

/* Copy bytes from word mine of this rank's CE area to word theirs of peer
 * p's on stream s, behind the stream's earlier copies. */
static int flag(struct pn_ce *ce, CUstream s, int p, unsigned theirs, unsigned mine, size_t bytes)
{
	const struct pn_cudrv *cu = ce->g->cu;

	PN_CU(cu, MemcpyAsync(ce->area->peer[p] + 4 * (uint64_t)theirs,
			      ce->area->base + 4 * (uint64_t)mine, bytes, s),
	      "cuMemcpyAsync (flag)");
	return 0;
}

int pn_ce_run(struct pn_ce *ce, const struct pn_ce_call *call)
{
	const struct pn_cudrv *cu = ce->g->cu;
	const int n = ce->n, r = ce->rank;
	CUstream main = ce->g->stream;
	struct pn_ce_geom geo;
	struct pn_ar_args a;
	uint64_t k, roff = call->recv - call->reg->base;
	int p, ret;

	ret = pn_ce_geometry(call->bytes, n, ce->slot_bytes, &geo);
	if (ret)
		return ret;
	for (p = 0; p < n; p++)
		if (roff + call->bytes > call->reg->peer_bytes[p])
			return pn_plugin_fail(-EINVAL, "recv ends past rank %d's registered buffer "
						       "(%" PRIu64 " bytes)", p, call->reg->peer_bytes[p]);
	memset(&a, 0, sizeof(a));
	for (p = 0; p < n; p++) {
		a.peer_ws[p] = call->ws->peer[p];
		a.peer_ce[p] = ce->area->peer[p];
	}
	a.desc = (uint64_t)call->reg->id << 40 | roff;
	a.timeout_ns = call->timeout_ns;
	a.rank = r;
	a.nranks = n;

	/* fork */
	PN_CU(cu, EventRecord(ce->fork, main), "cuEventRecord");
	for (p = 0; p < n; p++) {
		if (p == r)
			continue;
		PN_CU(cu, StreamWaitEvent(ce->push[p], ce->fork, 0), "cuStreamWaitEvent");
		PN_CU(cu, StreamWaitEvent(ce->ag[p], ce->fork, 0), "cuStreamWaitEvent");
	}
	for (k = 0; k < geo.pieces && !ret; k++) {
		uint64_t base = k * geo.piece, par = k & 1;
		uint64_t off = base + (uint64_t)r * geo.slice, len = pn_ce_len(&geo, call->bytes, off);

		/* pushes: my slice of owner p into slot [par][sender] of p's area */
		a.ce_piece = (uint32_t)k;
		for (p = 0; p < n && !ret; p++) {
			uint64_t po = base + (uint64_t)p * geo.slice, pl = pn_ce_len(&geo, call->bytes, po);
			int slot = (r - p - 1 + n) % n;

			if (p == r)
				continue;
			if (k >= 2) {
				/* the free stream joins the call at its first gate */
				if (k == 2)
					PN_CU(cu, StreamWaitEvent(ce->fr[p], ce->fork, 0), "cuStreamWaitEvent");
				ret = gate(ce, &a, ce->fr[p], PN_CE_FREE, p);
				if (ret)
					break;
				PN_CU(cu, EventRecord(ce->freed[p], ce->fr[p]), "cuEventRecord");
				PN_CU(cu, StreamWaitEvent(ce->push[p], ce->freed[p], 0), "cuStreamWaitEvent");
			}
			if (!ret && pl)
				PN_CU(cu, MemcpyAsync(ce->area->peer[p] + PN_CE_HDR +
							      (par * (uint64_t)(n - 1) + (uint64_t)slot) *
								      ce->slot_bytes,
						      call->send + po, pl, ce->push[p]),
				      "cuMemcpyAsync (push)");
			if (!ret)
				ret = flag(ce, ce->push[p], p,
					   PN_CE_RSF + PN_AR_MAX_RANKS * (unsigned)par + (unsigned)r,
					   PN_CE_ONE, 4);
		}
		if (ret)
			break;
		/* my slice, reduced in rank order into my recv */
		for (p = 0; p < n; p++) {
			int slot = (p - r - 1 + n) % n;

			a.ce_src[p] = p == r ? call->send + off
					     : ce->area->base + PN_CE_HDR +
						       (par * (uint64_t)(n - 1) + (uint64_t)slot) *
							       ce->slot_bytes;
		}
		a.send = call->send + off;
		a.recv = call->recv + off;
		a.count = len / call->esize;
		ret = pn_gpu_launch(ce->g, call->reduce, call->grid, 512, &a);
		if (ret)
			break;
		PN_CU(cu, EventRecord(ce->red, main), "cuEventRecord");
		/* all-gather: my reduced slice into every peer's recv */
		for (p = 0; p < n; p++) {
			if (p == r)
				continue;
			PN_CU(cu, StreamWaitEvent(ce->ag[p], ce->red, 0), "cuStreamWaitEvent");
			if (len)
				PN_CU(cu, MemcpyAsync(call->reg->peer[p] + roff + off, call->recv + off, len,
						      ce->ag[p]),
				      "cuMemcpyAsync (all-gather)");
		}
	}
	/* the results and their buffer's identity are in the peers' recv */
	for (p = 0; p < n && !ret; p++) {
		if (p == r)
			continue;
		ret = flag(ce, ce->ag[p], p, PN_CE_DESC + 2 * (unsigned)r, PN_CE_MYDESC, 8);
		if (!ret)
			ret = flag(ce, ce->ag[p], p, PN_CE_AGF + (unsigned)r, PN_CE_ONE, 4);
		if (ret)
			break;
		PN_CU(cu, EventRecord(ce->join[2 * p], ce->push[p]), "cuEventRecord");
		PN_CU(cu, EventRecord(ce->join[2 * p + 1], ce->ag[p]), "cuEventRecord");
	}
	/* every peer's results are in my recv (waited for beside my own copies'
	 * end, not after it); then the join */
	if (!ret)
		ret = gate(ce, &a, main, PN_CE_FINAL, r);
	for (p = 0; p < n && !ret; p++) {
		if (p == r)
			continue;
		PN_CU(cu, StreamWaitEvent(main, ce->join[2 * p], 0), "cuStreamWaitEvent");
		PN_CU(cu, StreamWaitEvent(main, ce->join[2 * p + 1], 0), "cuStreamWaitEvent");
	}
	return ret;
}
