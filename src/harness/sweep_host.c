/* SPDX-License-Identifier: MIT */
/*
 * The sweep's host backend (sweep.h): the engine's allreduce (src/engine/coll.h)
 * over two registered buffers, filled, timed and checked on the host.
 */
#define _GNU_SOURCE
#include "harness/sweep.h"

#include "engine/boot.h"
#include "engine/comm.h"
#include "engine/testdata.h"
#include "engine/sched.h"
#include "base/log.h"
#include "base/util.h"

#include <errno.h>
#include <stdlib.h>

struct host {
	struct pn_sweep_backend be;
	struct pn_coll *coll;
	struct pn_reg *sreg, *rreg;
};

static const char *host_algo_name(int algo)
{
	return pn_algo_name((enum pn_algo)algo);
}

static int host_supported(struct pn_sweep_backend *be, int algo)
{
	struct host *h = (struct host *)be;
	struct pn_sched_job sj = { .rank = h->coll->comm->rank, .nranks = h->coll->comm->nranks,
				   .node = h->coll->node };

	return algo == PN_ALGO_AUTO ? 0 : pn_sched_supported((enum pn_algo)algo, &sj);
}

static int host_pick(struct pn_sweep_backend *be, const struct pn_sweep *s, int algo,
		     struct pn_sweep_row *rw)
{
	struct host *h = (struct host *)be;

	/* what ran (auto: the pick), which is what a tuning table may name */
	rw->host_algo = pn_allreduce_algo(h->coll, rw->count, s->dtype, (enum pn_algo)algo, h->sreg,
					  h->rreg);
	return 0;
}

static int host_run(struct pn_sweep_backend *be, const struct pn_sweep *s, int algo, size_t bytes,
		    int ip, uint64_t seed, double *block_us, struct pn_sweep_bad *bad)
{
	struct host *h = (struct host *)be;
	struct pn_comm *c = h->coll->comm;
	size_t count = bytes / pn_dtype_size(s->dtype);
	void *send = ip ? h->rreg->ptr : h->sreg->ptr, *recv = h->rreg->ptr;
	struct pn_reg *sreg = ip ? h->rreg : h->sreg;
	int i, b, ret, calls = pn_sweep_calls(s, bytes), blocks = calls ? pn_sweep_blocks(s) : 0;
	double t0;

	pn_testdata_fill(send, count, s->dtype, s->op, c->rank, seed);
	/* align the ranks: the rendezvous barrier leaves them microseconds
	 * apart; the warm-up absorbs that and a shared-memory barrier (one
	 * host) starts the clock within a cache-line transfer */
	ret = pn_boot_barrier(c->boot);
	for (i = 0; !ret && i < s->warmup; i++)
		ret = pn_allreduce(h->coll, send, recv, count, s->dtype, s->op, algo, sreg, h->rreg);
	if (!ret && c->nnodes == 1)
		ret = pn_comm_local_barrier(c);
	if (ret)
		return ret;
	/* the timed blocks back to back: the calls' own rendezvous keeps the
	 * ranks together */
	for (b = 0; b < blocks; b++) {
		t0 = pn_now();
		for (i = 0; i < calls; i++) {
			ret = pn_allreduce(h->coll, send, recv, count, s->dtype, s->op, algo, sreg,
					   h->rreg);
			if (ret)
				return ret;
		}
		block_us[b] = (pn_now() - t0) / calls * 1e6;
	}
	if (s->check) {
		/* fresh data, a poisoned output, one more run, exact check */
		pn_testdata_fill(send, count, s->dtype, s->op, c->rank, seed + 1);
		if (!ip)
			pn_testdata_poison(recv, bytes);
		ret = pn_allreduce(h->coll, send, recv, count, s->dtype, s->op, algo, sreg, h->rreg);
		if (ret)
			return ret;
		bad->wrong = pn_testdata_check(recv, count, s->dtype, s->op, c->nranks, seed + 1);
		bad->digest = pn_digest64(0, recv, bytes);
	}
	return 0;
}

static void host_close(struct pn_sweep_backend *be)
{
	struct host *h = (struct host *)be;

	pn_nodeseg_reg_free(h->coll->comm, h->sreg);
	pn_nodeseg_reg_free(h->coll->comm, h->rreg);
	free(h);
}

static const struct pn_sweep_ops host_ops = {
	.algo_name = host_algo_name,
	.supported = host_supported,
	.pick = host_pick,
	.run = host_run,
	.close = host_close,
};

int pn_sweep_host_open(struct pn_sweep_backend **out, struct pn_coll *coll,
		       const enum pn_algo *algos, int nalgos, size_t max_bytes)
{
	struct host *h = calloc(1, sizeof(*h));
	int a, ret;

	*out = NULL;
	if (!h)
		return pn_err(-ENOMEM, "out of memory");
	h->be.ops = &host_ops;
	snprintf(h->be.name, sizeof(h->be.name), "host");
	for (a = 0; a < nalgos && a < PN_SWEEP_MAX_ALGOS; a++)
		h->be.algos[h->be.nalgos++] = algos[a];
	h->coll = coll;
	ret = pn_nodeseg_alloc(coll->comm, max_bytes, &h->sreg);
	if (!ret)
		ret = pn_nodeseg_alloc(coll->comm, max_bytes, &h->rreg);
	if (ret) {
		host_close(&h->be);
		return ret;
	}
	*out = &h->be;
	return 0;
}
