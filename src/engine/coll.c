/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
#include "engine/coll.h"
#include "base/log.h"
#include "base/util.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int pn_coll_init(struct pn_coll *co, struct pn_comm *c, const struct pn_tune *tune)
{
	int r, ret;

	memset(co, 0, sizeof(*co));
	co->node = malloc(sizeof(int) * (size_t)c->nranks);
	if (!co->node)
		return pn_err(-ENOMEM, "out of memory");
	for (r = 0; r < c->nranks; r++)
		co->node[r] = c->peers[r].node;
	ret = pn_exec_init(&co->exec, c);
	if (ret) {
		/* nothing is left to release: a caller's pn_coll_release is harmless */
		free(co->node);
		memset(co, 0, sizeof(*co));
		return ret;
	}
	co->comm = c;
	co->tune = tune;
	co->nchannels = c->nchannels > 1 ? c->nchannels : 2;
	return 0;
}

static void free_rings(struct pn_coll *co)
{
	int k;

	for (k = 0; co->rings && k < co->nchannels; k++)
		free(co->rings[k]);
	free(co->rings);
	co->rings = NULL;
}

int pn_coll_set_rings(struct pn_coll *co, int n, const int *const *rings)
{
	struct pn_comm *c = co->comm;
	int k, r, *seen;

	if (n < 1 || n > c->nchannels)
		return pn_err(-EINVAL, "%d planned rings, the communicator has %d channels", n,
			      c->nchannels);
	seen = calloc((size_t)c->nranks, sizeof(int));
	if (!seen)
		return pn_err(-ENOMEM, "out of memory");
	for (k = 0; k < n; k++)
		for (r = 0; r < c->nranks; r++) {
			int q = rings[k][r];

			if (q < 0 || q >= c->nranks || seen[q] == k + 1) {
				free(seen);
				return pn_err(-EINVAL, "planned ring %d is not an order of all %d ranks",
					      k, c->nranks);
			}
			seen[q] = k + 1;
		}
	free(seen);
	if (co->cache_valid) {
		pn_sched_release(&co->cache);
		co->cache_valid = 0;
	}
	free_rings(co);
	co->rings = calloc((size_t)n, sizeof(*co->rings));
	if (!co->rings)
		return pn_err(-ENOMEM, "out of memory");
	co->nchannels = n;
	for (k = 0; k < n; k++) {
		co->rings[k] = malloc(sizeof(int) * (size_t)c->nranks);
		if (!co->rings[k]) {
			free_rings(co);
			co->nchannels = c->nchannels > 1 ? c->nchannels : 2;
			return pn_err(-ENOMEM, "out of memory");
		}
		memcpy(co->rings[k], rings[k], sizeof(int) * (size_t)c->nranks);
	}
	return 0;
}

void pn_coll_release(struct pn_coll *co)
{
	if (co->cache_valid)
		pn_sched_release(&co->cache);
	if (co->xcache_valid)
		pn_sched_release(&co->xcache);
	free_rings(co);
	pn_exec_release(&co->exec);
	free(co->node);
	memset(co, 0, sizeof(*co));
}

/* What each channel of a multiring schedule does at this rank (tests compare
 * it with the plan and with ring-plan --show-schedule). */
static void log_multiring(const struct pn_sched *s, int planned)
{
	int k;
	size_t i;

	for (k = 0; k < s->nchan; k++) {
		const struct pn_sched_chan *ch = &s->ch[k];
		int to = -1, from = -1;

		for (i = 0; i < ch->n && (to < 0 || from < 0); i++) {
			if (to < 0 && ch->steps[i].send_peer >= 0)
				to = ch->steps[i].send_peer;
			if (from < 0 && ch->steps[i].recv_peer >= 0)
				from = ch->steps[i].recv_peer;
		}
		PN_DBG(PN_LOG_COLL, "multiring schedule (%s rings), rank %d, %zu elements: channel %d "
		       "sends to %d, receives from %d, %zu steps", planned ? "planned" : "generated",
		       s->rank, s->count, k, to, from, ch->n);
	}
}

/*
 * The tuned pick for a call.  A table written by a sweep that ran
 * multiring (two channels) may name it for a communicator opened with one
 * channel: there the ring, multiring's one-channel form, runs instead.
 */
static enum pn_algo auto_pick(const struct pn_coll *co, size_t bytes, int direct, int inplace)
{
	const struct pn_comm *c = co->comm;
	enum pn_algo a = pn_tune_pick(co->tune, c->nranks, c->nnodes, bytes, direct, inplace);

	if (a == PN_ALGO_MULTIRING && c->nchannels < 2) {
		PN_DBG(PN_LOG_COLL, "tuned multiring at %zu B, the communicator has 1 channel: ring",
		       bytes);
		a = PN_ALGO_RING;
	}
	return a;
}

int pn_coll_schedule(struct pn_coll *co, size_t count, enum pn_dtype t, enum pn_algo algo,
		     int direct, int inplace, const struct pn_sched **out)
{
	struct pn_comm *c = co->comm;
	struct pn_sched_job job;
	size_t es = pn_dtype_size(t);
	int ret;

	if (algo == PN_ALGO_AUTO)
		algo = auto_pick(co, count * es, direct, inplace);
	if (co->cache_valid && co->cache_algo == algo && co->cache_count == count &&
	    co->cache_esize == es && co->cache_direct == direct && co->cache_inplace == inplace) {
		*out = &co->cache;
		return 0;
	}
	if (co->cache_valid) {
		pn_sched_release(&co->cache);
		co->cache_valid = 0;
	}
	memset(&job, 0, sizeof(job));
	job.rank = c->rank;
	job.nranks = c->nranks;
	job.node = co->node;
	job.nchannels = algo == PN_ALGO_MULTIRING ? co->nchannels : 1;
	job.rings = algo == PN_ALGO_MULTIRING ? (const int *const *)co->rings : NULL;
	job.direct = direct;
	job.inplace = inplace;
	ret = pn_sched_build(&co->cache, algo, &job, count, es);
	if (ret)
		return ret;
	if (algo == PN_ALGO_MULTIRING && (pn_debug_mask & PN_LOG_COLL))
		log_multiring(&co->cache, co->rings != NULL);
	if (co->cache.nchan > c->nchannels) {
		pn_sched_release(&co->cache);
		return pn_err(-EINVAL, "%s needs %d channels, the communicator has %d",
			      pn_algo_name(algo), job.nchannels, c->nchannels);
	}
	co->cache_valid = 1;
	co->cache_algo = algo;
	co->cache_count = count;
	co->cache_esize = es;
	co->cache_direct = direct;
	co->cache_inplace = inplace;
	*out = &co->cache;
	return 0;
}

/* Execute one schedule; avg_div: divisor of avg (0: the communicator's size). */
static int run(struct pn_coll *co, const struct pn_sched *s, const void *sendbuf, void *recvbuf,
	       enum pn_dtype t, enum pn_redop op, struct pn_reg *sreg, struct pn_reg *rreg,
	       int avg_div)
{
	struct pn_exec_args a;

	memset(&a, 0, sizeof(a));
	a.sendbuf = sendbuf;
	a.recvbuf = recvbuf;
	a.sreg = sreg;
	a.rreg = rreg;
	a.dtype = t;
	a.op = op;
	a.avg_div = avg_div;
	return pn_exec_run(&co->exec, s, &a);
}

/* Direct loads need every rank on this host over shm, and registrations. */
int pn_coll_direct(const struct pn_coll *co, const struct pn_reg *sreg, const struct pn_reg *rreg)
{
	const struct pn_comm *c = co->comm;
	int direct = sreg && rreg && c->nnodes == 1, p;

	for (p = 0; direct && p < c->nranks; p++)
		if (p != c->rank && c->peers[p].transport != &pn_transport_shm)
			direct = 0;
	return direct;
}

enum pn_algo pn_allreduce_algo(const struct pn_coll *co, size_t count, enum pn_dtype t,
			       enum pn_algo algo, const struct pn_reg *sreg, const struct pn_reg *rreg)
{
	if (algo != PN_ALGO_AUTO)
		return algo;
	/* in place, pn_allreduce is handed one registration for both */
	return auto_pick(co, count * pn_dtype_size(t), pn_coll_direct(co, sreg, rreg),
			 sreg && sreg == rreg);
}

int pn_allreduce(struct pn_coll *co, const void *sendbuf, void *recvbuf, size_t count,
		 enum pn_dtype t, enum pn_redop op, enum pn_algo algo, struct pn_reg *sreg,
		 struct pn_reg *rreg)
{
	const struct pn_sched *s;
	int ret;

	ret = pn_coll_schedule(co, count, t, algo, pn_coll_direct(co, sreg, rreg), sendbuf == recvbuf,
			       &s);
	if (ret)
		return ret;
	return run(co, s, sendbuf, recvbuf, t, op, sreg, rreg, 0);
}

int pn_allreduce_group(struct pn_coll *co, const void *sendbuf, void *recvbuf, size_t count,
		       enum pn_dtype t, enum pn_redop op, const int *group, int m)
{
	struct pn_comm *c = co->comm;
	struct pn_sched_job job;
	struct pn_sched s;
	int ret;

	memset(&job, 0, sizeof(job));
	job.rank = c->rank;
	job.nranks = c->nranks;
	job.node = co->node;
	job.inplace = sendbuf == recvbuf;
	ret = pn_sched_build_ring_group(&s, &job, group, m, count, pn_dtype_size(t));
	if (ret)
		return ret;
	ret = run(co, &s, sendbuf, recvbuf, t, op, NULL, NULL, m);
	pn_sched_release(&s);
	return ret;
}

int pn_allgather_group(struct pn_coll *co, const void *mine, void *all, size_t len,
		       const int *group, int m)
{
	struct pn_comm *c = co->comm;
	size_t shard = PN_ALIGN_UP(len, 16), piece, off, n;
	struct pn_sched_job job;
	struct pn_sched s;
	struct pn_exec_args a;
	char *buf;
	int ret, me = -1, k;

	for (k = 0; k < m; k++)
		if (group[k] == c->rank)
			me = k;
	if (me < 0)
		return pn_err(-EINVAL, "rank %d is not in the group", c->rank);
	memset(&job, 0, sizeof(job));
	job.rank = c->rank;
	job.nranks = c->nranks;
	job.node = co->node;
	ret = pn_sched_build_allgather_group(&s, &job, group, m, shard, 1);
	if (ret)
		return ret;
	buf = calloc(1, shard * (size_t)m + 1);
	if (!buf) {
		pn_sched_release(&s);
		return pn_err(-ENOMEM, "out of memory");
	}
	/* the schedule's chunk-major layout (sched.h), in and out */
	piece = pn_sched_allgather_piece(&job, shard, 1);
	for (off = 0; off < len; off += piece) {
		n = PN_MIN(piece, shard - off);
		memcpy(buf + off * (size_t)m + (size_t)me * n, (const char *)mine + off,
		       PN_MIN(n, len - off));
	}
	memset(&a, 0, sizeof(a));
	a.sendbuf = buf;
	a.recvbuf = buf;
	a.dtype = PN_UINT8;
	a.op = PN_SUM;
	ret = pn_exec_run(&co->exec, &s, &a);
	pn_sched_release(&s);
	for (k = 0; !ret && k < m; k++)
		for (off = 0; off < len; off += piece) {
			n = PN_MIN(piece, shard - off);
			memcpy((char *)all + (size_t)k * len + off, buf + off * (size_t)m + (size_t)k * n,
			       PN_MIN(n, len - off));
		}
	free(buf);
	return ret;
}
