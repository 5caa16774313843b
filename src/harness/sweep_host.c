/* SPDX-License-Identifier: MIT */
/*
 * The sweep's host backend (sweep.h): the engine's allreduce (src/engine/coll.h)
 * or another collective (collrun.h, the sweep's kind) over two registered
 * buffers, filled, timed and checked on the host (testdata.h: every kind's
 * exact result).
 */
#define _GNU_SOURCE
#include "harness/sweep.h"

#include "engine/boot.h"
#include "engine/collrun.h"
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
	enum pn_coll_kind kind;	/* what it opened for: allreduce, or another */
};

static const char *host_algo_name(int algo)
{
	return pn_algo_name((enum pn_algo)algo);
}

static const char *coll_algo_name(int algo)
{
	return pn_calgo_name((enum pn_calgo)algo);
}

/* One call of another collective: its arguments, nccl-tests' layouts in
 * place (collkind.h) within the receive registration. */
static void coll_args(const struct host *h, const struct pn_sweep *s, int algo, size_t count,
		      int ip, struct pn_coll_args *a)
{
	size_t es = pn_dtype_size(s->dtype);
	char *base = h->rreg->ptr;
	int rank = h->coll->comm->rank;

	*a = (struct pn_coll_args){ .kind = s->kind, .sendbuf = h->sreg->ptr, .recvbuf = base,
				    .count = count, .dtype = s->dtype, .op = s->op, .root = s->root,
				    .algo = (enum pn_calgo)algo, .sreg = h->sreg, .rreg = h->rreg };
	if (ip) {
		a->sendbuf = base + pn_coll_inplace_send_off(s->kind, count, rank) * es;
		a->recvbuf = base + pn_coll_inplace_recv_off(s->kind, count, rank) * es;
		a->sreg = h->rreg;
	}
}

/* One call of the sweep's collective. */
static int call(struct host *h, const struct pn_sweep *s, int algo, size_t count, int ip)
{
	struct pn_coll_args a;

	if (s->kind == PN_COLL_ALLREDUCE)
		return pn_allreduce(h->coll, ip ? h->rreg->ptr : h->sreg->ptr, h->rreg->ptr, count,
				    s->dtype, s->op, (enum pn_algo)algo, ip ? h->rreg : h->sreg,
				    h->rreg);
	coll_args(h, s, algo, count, ip, &a);
	return pn_coll_run(h->coll, &a);
}

static int host_supported(struct pn_sweep_backend *be, int algo)
{
	struct host *h = (struct host *)be;
	struct pn_sched_job sj = { .rank = h->coll->comm->rank, .nranks = h->coll->comm->nranks,
				   .node = h->coll->node };

	if (h->kind != PN_COLL_ALLREDUCE)
		return algo == PN_CALGO_AUTO || pn_calgo_valid(h->kind, (enum pn_calgo)algo)
			       ? 0 : pn_err(-ENOTSUP, "%s has no algorithm %s",
					    pn_coll_name(h->kind), coll_algo_name(algo));
	return algo == PN_ALGO_AUTO ? 0 : pn_sched_supported((enum pn_algo)algo, &sj);
}

static int host_pick(struct pn_sweep_backend *be, const struct pn_sweep *s, int algo,
		     struct pn_sweep_row *rw)
{
	struct host *h = (struct host *)be;
	struct pn_coll_args a;

	if (s->kind != h->kind)
		return pn_err(-EINVAL, "the host backend opened for %s runs no %s",
			      pn_coll_name(h->kind), pn_coll_name(s->kind));
	if (s->kind != PN_COLL_ALLREDUCE) {
		/* auto: what the tuning table picks at this size */
		coll_args(h, s, algo, rw->count, 0, &a);
		if (algo == PN_CALGO_AUTO)
			snprintf(rw->ran, sizeof(rw->ran), "%s", pn_calgo_name(pn_coll_algo(h->coll, &a)));
		return 0;
	}
	/* what ran (auto: the pick), which is what a tuning table may name */
	rw->host_algo = pn_allreduce_algo(h->coll, rw->count, s->dtype, (enum pn_algo)algo, h->sreg,
					  h->rreg);
	/* in place, pn_allreduce is handed one registration for both */
	rw->host_algo_ip = pn_allreduce_algo(h->coll, rw->count, s->dtype, (enum pn_algo)algo,
					     h->rreg, h->rreg);
	return 0;
}

static int host_run(struct pn_sweep_backend *be, const struct pn_sweep *s, int algo, size_t bytes,
		    int ip, uint64_t seed, double *block_us, struct pn_sweep_bad *bad)
{
	struct host *h = (struct host *)be;
	struct pn_comm *c = h->coll->comm;
	size_t count = pn_coll_count_for_bytes(s->kind, bytes, pn_dtype_size(s->dtype), c->nranks);
	struct pn_testdata_coll d = { .kind = s->kind, .dtype = s->dtype, .op = s->op,
				      .rank = c->rank, .nranks = c->nranks, .root = s->root,
				      .count = count, .inplace = ip, .seed = seed };
	struct pn_coll_args a;
	int i, b, ret, calls = pn_sweep_calls(s, bytes), blocks = calls ? pn_sweep_blocks(s) : 0;
	double t0;

	/* the send part of the buffers of this call (in place: within recv) */
	coll_args(h, s, algo, count, ip, &a);
	pn_testdata_coll_fill(&d, (void *)a.sendbuf);
	/* align the ranks: the rendezvous barrier leaves them microseconds
	 * apart; the warm-up absorbs that and a shared-memory barrier (one
	 * host) starts the clock within a cache-line transfer */
	ret = pn_boot_barrier(c->boot);
	for (i = 0; !ret && i < s->warmup * PN_MAX(s->agg, 1); i++)
		ret = call(h, s, algo, count, ip);
	if (!ret && c->nnodes == 1)
		ret = pn_comm_local_barrier(c);
	if (ret)
		return ret;
	/* the timed blocks back to back: the calls' own rendezvous keeps the
	 * ranks together.  Fresh input: each call's input written by its rank
	 * just before it (the fill leaves it in this core's cache, where a
	 * step's gradients are), then the ranks meet; each call timed alone */
	for (b = 0; b < blocks; b++) {
		double in_calls = 0;

		t0 = pn_now();
		for (i = 0; i < calls; i++) {
			if (s->fresh_input) {
				pn_testdata_coll_fill(&d, (void *)a.sendbuf);
				ret = c->nnodes == 1 ? pn_comm_local_barrier(c) : pn_boot_barrier(c->boot);
				if (ret)
					return ret;
				t0 = pn_now();
			}
			ret = call(h, s, algo, count, ip);
			if (ret)
				return ret;
			if (s->fresh_input)
				in_calls += pn_now() - t0;
		}
		block_us[b] = (s->fresh_input ? in_calls : pn_now() - t0) / calls * 1e6;
	}
	if (s->check) {
		/* a poisoned output, fresh data (in place: its send part of the
		 * output), one more run, exact check */
		size_t rb = pn_coll_recv_count(s->kind, count, c->nranks) * pn_dtype_size(s->dtype);

		d.seed = seed + 1;
		pn_testdata_poison(a.recvbuf, rb);
		pn_testdata_coll_fill(&d, (void *)a.sendbuf);
		ret = call(h, s, algo, count, ip);
		if (ret)
			return ret;
		bad->wrong = pn_testdata_coll_check(&d, a.recvbuf);
		/* every rank holds the same output: its digest, compared over the ranks */
		bad->digest = pn_sweep_same_output(s->kind) ? pn_digest64(0, a.recvbuf, rb) : 0;
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

static const struct pn_sweep_ops coll_ops = {
	.algo_name = coll_algo_name,
	.supported = host_supported,
	.pick = host_pick,
	.run = host_run,
	.close = host_close,
};

static int host_open(struct pn_sweep_backend **out, struct pn_coll *coll, enum pn_coll_kind kind,
		     const int *algos, int nalgos, size_t max_bytes)
{
	struct host *h = calloc(1, sizeof(*h));
	int a, ret;

	*out = NULL;
	if (!h)
		return pn_err(-ENOMEM, "out of memory");
	h->be.ops = kind == PN_COLL_ALLREDUCE ? &host_ops : &coll_ops;
	h->kind = kind;
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

int pn_sweep_host_open(struct pn_sweep_backend **out, struct pn_coll *coll,
		       const enum pn_algo *algos, int nalgos, size_t max_bytes)
{
	int a[PN_SWEEP_MAX_ALGOS], i;

	for (i = 0; i < nalgos && i < PN_SWEEP_MAX_ALGOS; i++)
		a[i] = (int)algos[i];
	return host_open(out, coll, PN_COLL_ALLREDUCE, a, i, max_bytes);
}

int pn_sweep_coll_open(struct pn_sweep_backend **out, struct pn_coll *coll,
		       enum pn_coll_kind kind, const enum pn_calgo *algos, int nalgos,
		       size_t max_bytes)
{
	int a[PN_SWEEP_MAX_ALGOS], i;

	if (kind <= PN_COLL_ALLREDUCE || kind >= PN_NCOLLS)
		return pn_err(-EINVAL, "pn_sweep_coll_open: not another collective (%d)", (int)kind);
	for (i = 0; i < nalgos && i < PN_SWEEP_MAX_ALGOS; i++)
		a[i] = (int)algos[i];
	return host_open(out, coll, kind, a, i, max_bytes);
}
