/* SPDX-License-Identifier: MIT */
/*
 * The collectives other than allreduce (collrun.h): check the arguments,
 * pick the algorithm, build (or reuse) the schedule, run it.
 */
#define _GNU_SOURCE
#include "engine/collrun.h"
#include "engine/sched_coll.h"
#include "base/log.h"
#include "base/util.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>

static int overlap(const void *a, size_t na, const void *b, size_t nb)
{
	uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;

	return na && nb && x < y + nb && y < x + na;
}

/* Whether a is nccl-tests' in place for this rank (collkind.h). */
static int is_inplace(const struct pn_coll_args *a, int rank, size_t es)
{
	uintptr_t s = (uintptr_t)a->sendbuf, d = (uintptr_t)a->recvbuf;

	if (!s || !d)
		return 0;
	/* one of the two offsets is 0 */
	return s + pn_coll_inplace_recv_off(a->kind, a->count, rank) * es ==
	       d + pn_coll_inplace_send_off(a->kind, a->count, rank) * es;
}

/* The arguments make sense for this rank: 0 with *inplace set, or -EINVAL. */
static int check_args(const struct pn_coll *co, const struct pn_coll_args *a, int *inplace)
{
	const struct pn_comm *c = co->comm;
	size_t es, sc, rc;
	int need_send, need_recv;

	if (a->kind <= PN_COLL_ALLREDUCE || a->kind >= PN_NCOLLS)
		return pn_err(-EINVAL, "pn_coll_run runs allgather, reducescatter, alltoall, "
			      "broadcast, reduce and sendrecv (allreduce: pn_allreduce)");
	if (a->dtype < 0 || a->dtype >= PN_NDTYPES)
		return pn_err(-EINVAL, "no such element type (%d)", (int)a->dtype);
	if (pn_coll_reduces(a->kind) && (a->op < 0 || a->op >= PN_NREDOPS))
		return pn_err(-EINVAL, "no such reduction (%d)", (int)a->op);
	if (pn_coll_rooted(a->kind) && (a->root < 0 || a->root >= c->nranks))
		return pn_err(-EINVAL, "%s: root %d is not a rank (0..%d)", pn_coll_name(a->kind),
			      a->root, c->nranks - 1);
	if (a->algo != PN_CALGO_AUTO && !pn_calgo_valid(a->kind, a->algo))
		return pn_err(-EINVAL, "%s has no algorithm '%s'", pn_coll_name(a->kind),
			      pn_calgo_name(a->algo));
	es = pn_dtype_size(a->dtype);
	if (a->count > SIZE_MAX / 2 / es / (size_t)c->nranks)
		return pn_err(-EINVAL, "%s of %zu elements of %zu bytes on %d ranks: too large",
			      pn_coll_name(a->kind), a->count, es, c->nranks);
	sc = pn_coll_send_count(a->kind, a->count, c->nranks) * es;
	rc = pn_coll_recv_count(a->kind, a->count, c->nranks) * es;
	need_send = sc && (a->kind != PN_COLL_BROADCAST || a->root == c->rank);
	need_recv = rc && (a->kind != PN_COLL_REDUCE || a->root == c->rank);
	if ((need_send && !a->sendbuf) || (need_recv && !a->recvbuf))
		return pn_err(-EINVAL, "%s: no %s buffer", pn_coll_name(a->kind),
			      need_send && !a->sendbuf ? "send" : "receive");
	*inplace = is_inplace(a, c->rank, es);
	if (!*inplace && need_send && need_recv && overlap(a->sendbuf, sc, a->recvbuf, rc))
		return pn_err(-EINVAL, "%s: the send and receive buffers overlap but are not in "
			      "place (%s)", pn_coll_name(a->kind),
			      a->kind == PN_COLL_ALLGATHER ? "sendbuf = recvbuf + rank * count"
			      : a->kind == PN_COLL_REDUCE_SCATTER ? "recvbuf = sendbuf + rank * count"
			      : "sendbuf == recvbuf");
	return 0;
}

enum pn_calgo pn_coll_algo(const struct pn_coll *co, const struct pn_coll_args *a)
{
	const struct pn_comm *c = co->comm;
	size_t es = a->dtype >= 0 && a->dtype < PN_NDTYPES ? pn_dtype_size(a->dtype) : 1;

	if (a->algo != PN_CALGO_AUTO)
		return a->algo;
	return pn_tune_pick_coll(co->tune, a->kind, c->nranks, c->nnodes,
				 (size_t)pn_coll_algbw_bytes(a->kind, a->count, es, c->nranks),
				 pn_coll_direct(co, a->sreg, a->rreg));
}

/* The schedule for a (checked), from the cache when it is the same. */
static int schedule(struct pn_coll *co, const struct pn_coll_args *a, int inplace,
		    const struct pn_sched **out)
{
	const struct pn_comm *c = co->comm;
	struct pn_sched *s = &co->xcache;
	enum pn_calgo algo = pn_coll_algo(co, a);
	int direct = pn_coll_direct(co, a->sreg, a->rreg);
	int root = pn_coll_rooted(a->kind) ? a->root : 0;
	size_t es = pn_dtype_size(a->dtype);
	struct pn_sched_job job;
	int ret;

	if (co->xcache_valid && s->kind == (int)a->kind && s->calgo == (int)algo &&
	    s->count == a->count && s->esize == es && s->inplace == inplace && s->root == root &&
	    co->xcache_direct == direct) {
		*out = s;
		return 0;
	}
	if (co->xcache_valid)
		pn_sched_release(s);
	co->xcache_valid = 0;
	memset(&job, 0, sizeof(job));
	job.rank = c->rank;
	job.nranks = c->nranks;
	job.node = co->node;
	job.root = root;
	job.direct = direct;
	job.inplace = inplace;
	ret = pn_sched_build_coll(s, a->kind, algo, &job, a->count, es);
	if (ret)
		return ret;
	co->xcache_valid = 1;
	co->xcache_direct = direct;
	*out = s;
	return 0;
}

int pn_coll_sched(struct pn_coll *co, const struct pn_coll_args *a, const struct pn_sched **out)
{
	int inplace, ret = check_args(co, a, &inplace);

	return ret ? ret : schedule(co, a, inplace, out);
}

int pn_coll_run(struct pn_coll *co, const struct pn_coll_args *a)
{
	const struct pn_sched *s;
	struct pn_exec_args x;
	int ret;

	ret = pn_coll_sched(co, a, &s);
	if (ret)
		return ret;
	memset(&x, 0, sizeof(x));
	x.sendbuf = a->sendbuf;
	x.recvbuf = a->recvbuf;
	x.sreg = a->sreg;
	x.rreg = a->rreg;
	x.dtype = a->dtype;
	x.op = pn_coll_reduces(a->kind) ? a->op : PN_SUM;
	return pn_exec_run(&co->exec, s, &x);
}

int pn_sendrecv(struct pn_coll *co, const void *sendbuf, size_t send_count, int send_peer,
		void *recvbuf, size_t recv_count, int recv_peer, enum pn_dtype t)
{
	const struct pn_comm *c = co->comm;
	struct pn_sched_job job;
	struct pn_exec_args x;
	struct pn_sched s;
	size_t es;
	int ret;

	if (t < 0 || t >= PN_NDTYPES)
		return pn_err(-EINVAL, "no such element type (%d)", (int)t);
	es = pn_dtype_size(t);
	if (send_count > SIZE_MAX / 2 / es || recv_count > SIZE_MAX / 2 / es)
		return pn_err(-EINVAL, "sendrecv of %zu / %zu elements: too large", send_count,
			      recv_count);
	if ((send_peer >= 0 && send_count && !sendbuf) || (recv_peer >= 0 && recv_count && !recvbuf))
		return pn_err(-EINVAL, "sendrecv: no %s buffer", !sendbuf ? "send" : "receive");
	if (send_peer >= 0 && recv_peer >= 0 && sendbuf != recvbuf &&
	    overlap(sendbuf, send_count * es, recvbuf, recv_count * es))
		return pn_err(-EINVAL, "sendrecv: the send and receive buffers overlap");
	memset(&job, 0, sizeof(job));
	job.rank = c->rank;
	job.nranks = c->nranks;
	job.node = co->node;
	job.inplace = sendbuf == recvbuf;
	ret = pn_sched_build_p2p(&s, &job, send_peer, send_count, recv_peer, recv_count, es);
	if (ret)
		return ret;
	memset(&x, 0, sizeof(x));
	x.sendbuf = sendbuf;
	x.recvbuf = recvbuf;
	x.dtype = t;
	x.op = PN_SUM;
	ret = pn_exec_run(&co->exec, &s, &x);
	pn_sched_release(&s);
	return ret;
}
