/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
#include "engine/exec.h"
#include "base/log.h"
#include "engine/reduce.h"
#include "base/util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct chan_state {
	size_t idx;		/* current step */
	size_t done;		/* slices finished (received, where a step receives) */
	size_t sent;		/* XSENDRECV, XBRUCK: slices sent */
	int started;
};

int pn_exec_init(struct pn_exec *e, struct pn_comm *c)
{
	memset(e, 0, sizeof(*e));
	e->comm = c;
	e->npeer = c->nranks;
	e->psent = calloc((size_t)c->nranks, sizeof(size_t));
	e->precv = calloc((size_t)c->nranks, sizeof(size_t));
	e->srcs = calloc((size_t)c->nranks, sizeof(*e->srcs));
	if (!e->psent || !e->precv || !e->srcs) {
		pn_exec_release(e);
		return pn_err(-ENOMEM, "out of memory");
	}
	return 0;
}

void pn_exec_release(struct pn_exec *e)
{
	free(e->scratch);
	free(e->psent);
	free(e->precv);
	free(e->srcs);
	memset(e, 0, sizeof(*e));
}

struct run {
	struct pn_exec *e;
	struct pn_comm *c;
	const struct pn_sched *s;
	const struct pn_exec_args *a;
	size_t es, slice;	/* element size, elements per slice */
	int waiting_for;	/* rank the last blocked step waited for */
};

static const char *src_ptr(struct run *r, const struct pn_step *st, size_t el)
{
	const char *base = st->src == PN_SRC_OUT ? (const char *)r->a->recvbuf
						 : (const char *)r->a->sendbuf;

	return base + el * r->es;
}

static char *dst_ptr(struct run *r, size_t el)
{
	return (char *)r->a->recvbuf + el * r->es;
}

static void finish(struct run *r, const struct pn_step *st, void *p, size_t n)
{
	if (st->final && r->a->op == PN_AVG)
		pn_reduce_finish(p, n, r->a->dtype, r->a->op,
				 r->a->avg_div > 0 ? r->a->avg_div : r->c->nranks);
}

static size_t nslices(struct run *r, size_t count)
{
	return PN_DIV_UP(count, r->slice);
}

/* Slice j of a range: element offset and count. */
static void slice_of(struct run *r, size_t off, size_t count, size_t j, size_t *o, size_t *n)
{
	*o = off + j * r->slice;
	*n = PN_MIN(r->slice, count - j * r->slice);
}

static int local_of(struct run *r, int rank)
{
	return r->c->peers[rank].local;
}

/*
 * The slots of one slice of a point-to-point step: the received one (of
 * bytes bytes) from in and a free one to out, where the step has them.  1
 * ready, 0 blocked (waiting_for names the peer), <0 error.
 */
static int take_slots(struct run *r, const struct pn_step *st, struct pn_conn *in,
		      struct pn_conn *out, size_t bytes, const void **rs, void **ss)
{
	size_t len = 0, cap = 0;

	if (in) {
		*rs = in->t->recv_slot(in, &len);
		if (!*rs) {
			r->waiting_for = st->recv_peer;
			return 0;
		}
		if (len != bytes)
			return pn_err(-EPROTO, "rank %d sent %zu bytes where %zu were expected (ranks "
				      "disagree on the schedule)", st->recv_peer, len, bytes);
	}
	if (out) {
		*ss = out->t->send_slot(out, &cap);
		if (!*ss) {
			r->waiting_for = st->send_peer;
			return 0;
		}
	}
	return 1;
}

/* Point-to-point steps: returns 1 done, 0 blocked, <0 error. */
static int step_p2p(struct run *r, const struct pn_step *st, struct chan_state *cs, int chan)
{
	size_t ns = nslices(r, st->count);
	struct pn_conn *in = st->recv_peer >= 0 ? pn_comm_conn(r->c, st->recv_peer, chan) : NULL;
	struct pn_conn *out = st->send_peer >= 0 ? pn_comm_conn(r->c, st->send_peer, chan) : NULL;

	while (cs->done < ns) {
		const void *rs = NULL;
		void *ss = NULL;
		size_t o, n, bytes;
		int ret;

		slice_of(r, st->off, st->count, cs->done, &o, &n);
		bytes = n * r->es;
		ret = take_slots(r, st, in, out, bytes, &rs, &ss);
		if (ret <= 0)
			return ret;
		switch (st->op) {
		case PN_OP_SEND:
			memcpy(ss, src_ptr(r, st, o), bytes);
			break;
		case PN_OP_RECV:
			memcpy(dst_ptr(r, o), rs, bytes);
			break;
		case PN_OP_RECV_REDUCE_SEND:
			pn_reduce2(ss, rs, src_ptr(r, st, o), n, r->a->dtype, r->a->op);
			break;
		case PN_OP_RECV_REDUCE_COPY:
			pn_reduce2(dst_ptr(r, o), rs, src_ptr(r, st, o), n, r->a->dtype, r->a->op);
			finish(r, st, dst_ptr(r, o), n);
			break;
		case PN_OP_RECV_REDUCE_COPY_SEND:
			pn_reduce2(dst_ptr(r, o), rs, src_ptr(r, st, o), n, r->a->dtype, r->a->op);
			finish(r, st, dst_ptr(r, o), n);
			memcpy(ss, dst_ptr(r, o), bytes);
			break;
		case PN_OP_RECV_COPY_SEND:
			memcpy(dst_ptr(r, o), rs, bytes);
			memcpy(ss, rs, bytes);
			break;
		}
		if (out && (ret = out->t->send_post(out, bytes)))
			return ret;
		if (in && (ret = in->t->recv_release(in)))
			return ret;
		cs->done++;
	}
	return 1;
}

/* Sends of group steps: slices of range g (or the whole range) to each peer. */
static int group_sends(struct run *r, const struct pn_step *st, const struct pn_sched_group *g,
		       int chan)
{
	int i, ret;

	for (i = 0; i < g->n; i++) {
		int p = g->ranks[i];
		struct pn_conn *k;
		size_t off = st->off, cnt = st->count, ns;

		if (p == r->c->rank)
			continue;
		if (st->op == PN_OP_SCATTER_REDUCE) {
			pn_sched_shard(st->count, g->n, i, &off, &cnt);
			off += st->off;
		} else if (st->op == PN_OP_ALLGATHER) {
			pn_sched_shard(st->count, g->n, st->shard, &off, &cnt);
			off += st->off;
		}
		ns = nslices(r, cnt);
		k = pn_comm_conn(r->c, p, chan);
		while (r->e->psent[i] < ns) {
			size_t o, n, cap;
			void *ss = k->t->send_slot(k, &cap);
			const char *from;

			if (!ss)
				break;
			slice_of(r, off, cnt, r->e->psent[i], &o, &n);
			from = st->op == PN_OP_ALLGATHER ? dst_ptr(r, o) : src_ptr(r, st, o);
			memcpy(ss, from, n * r->es);
			ret = k->t->send_post(k, n * r->es);
			if (ret)
				return ret;
			r->e->psent[i]++;
		}
		if (r->e->psent[i] < ns)
			r->waiting_for = p;
	}
	return 0;
}

static int step_group(struct run *r, const struct pn_step *st, struct chan_state *cs, int chan)
{
	const struct pn_sched_group *g = &r->s->groups[st->group];
	const void **srcs = r->e->srcs;
	size_t off = st->off, cnt = st->count, ns, i;
	int m, ret, all_sent = 1;

	if (!cs->started) {
		memset(r->e->psent, 0, sizeof(size_t) * (size_t)r->e->npeer);
		memset(r->e->precv, 0, sizeof(size_t) * (size_t)r->e->npeer);
		cs->started = 1;
	}
	if (g->n > r->e->npeer)
		return pn_err(-E2BIG, "group of %d ranks in a job of %d", g->n, r->e->npeer);
	ret = group_sends(r, st, g, chan);
	if (ret)
		return ret;
	if (st->op == PN_OP_ALLGATHER) {
		int done = 1;

		for (m = 0; m < g->n; m++) {
			int p = g->ranks[m];
			struct pn_conn *k;
			size_t o, n, so, sc, len;
			const void *rs;

			if (p == r->c->rank)
				continue;
			pn_sched_shard(st->count, g->n, m, &so, &sc);
			so += st->off;
			k = pn_comm_conn(r->c, p, chan);
			while (r->e->precv[m] < nslices(r, sc) && (rs = k->t->recv_slot(k, &len))) {
				slice_of(r, so, sc, r->e->precv[m], &o, &n);
				if (len != n * r->es)
					return pn_err(-EPROTO, "rank %d sent %zu bytes where %zu were "
						      "expected", p, len, n * r->es);
				memcpy(dst_ptr(r, o), rs, len);
				ret = k->t->recv_release(k);
				if (ret)
					return ret;
				r->e->precv[m]++;
			}
			if (r->e->precv[m] < nslices(r, sc)) {
				done = 0;
				r->waiting_for = p;
			}
		}
		for (m = 0; m < g->n; m++) {
			size_t so, sc;

			pn_sched_shard(st->count, g->n, st->shard, &so, &sc);
			if (g->ranks[m] != r->c->rank && r->e->psent[m] < nslices(r, sc))
				done = 0;
		}
		return done;
	}
	/* GATHER_REDUCE (whole range) or SCATTER_REDUCE (my shard) */
	if (st->op == PN_OP_SCATTER_REDUCE) {
		pn_sched_shard(st->count, g->n, st->shard, &off, &cnt);
		off += st->off;
	}
	ns = nslices(r, cnt);
	while (cs->done < ns) {
		size_t o, n, len;

		slice_of(r, off, cnt, cs->done, &o, &n);
		for (m = 0; m < g->n; m++) {
			int p = g->ranks[m];
			struct pn_conn *k;

			if (p == r->c->rank) {
				srcs[m] = src_ptr(r, st, o);
				continue;
			}
			k = pn_comm_conn(r->c, p, chan);
			srcs[m] = k->t->recv_slot(k, &len);
			if (!srcs[m]) {
				r->waiting_for = p;
				return 0;
			}
			if (len != n * r->es)
				return pn_err(-EPROTO, "rank %d sent %zu bytes where %zu were expected", p,
					      len, n * r->es);
		}
		pn_reduce_n(dst_ptr(r, o), srcs, g->n, n, r->a->dtype, r->a->op);
		finish(r, st, dst_ptr(r, o), n);
		for (m = 0; m < g->n; m++) {
			int p = g->ranks[m];

			if (p != r->c->rank) {
				struct pn_conn *k = pn_comm_conn(r->c, p, chan);

				ret = k->t->recv_release(k);
				if (ret)
					return ret;
			}
		}
		cs->done++;
	}
	for (m = 0; m < g->n; m++) {
		size_t so = st->off, sc = st->count;

		if (g->ranks[m] == r->c->rank)
			continue;
		if (st->op == PN_OP_SCATTER_REDUCE)
			pn_sched_shard(st->count, g->n, m, &so, &sc);
		if (r->e->psent[m] < nslices(r, sc))
			all_sent = 0;
	}
	(void)i;
	return all_sent;
}

/* Offset of a buffer inside its registration (peers use the same offset). */
static size_t reg_off(const struct pn_reg *reg, const void *p)
{
	return (size_t)((const char *)p - (const char *)reg->ptr);
}

static int step_direct(struct run *r, const struct pn_step *st)
{
	const struct pn_sched_group *g = &r->s->groups[st->group];
	const struct pn_exec_args *a = r->a;
	const void **srcs = r->e->srcs;
	int m;

	if (!a->sreg || !a->rreg)
		return pn_err(-EINVAL, "direct steps need registered buffers");
	if (g->n > r->e->npeer)
		return pn_err(-E2BIG, "group of %d ranks in a job of %d", g->n, r->e->npeer);
	if (st->op == PN_OP_DIRECT_REDUCE) {
		size_t so = reg_off(a->sreg, a->sendbuf) + st->off * r->es;
		char *dst = dst_ptr(r, st->off);

		for (m = 0; m < g->n; m++)
			srcs[m] = (const char *)a->sreg->peer_ptr[local_of(r, g->ranks[m])] + so;
		if (st->scratch) {
			size_t need = st->count * r->es;

			if (r->e->scratch_len < need) {
				void *p = realloc(r->e->scratch, need);

				if (!p)
					return pn_err(-ENOMEM, "out of memory");
				r->e->scratch = p;
				r->e->scratch_len = need;
			}
			dst = r->e->scratch;
		}
		pn_reduce_n(dst, srcs, g->n, st->count, a->dtype, a->op);
		finish(r, st, dst, st->count);
		return 1;
	}
	/* DIRECT_GATHER */
	for (m = 0; m < g->n; m++) {
		size_t so, sc;

		if (m == st->shard)
			continue;
		pn_sched_shard(st->count, g->n, m, &so, &sc);
		so += st->off;
		if (sc)
			memcpy(dst_ptr(r, so),
			       (const char *)a->rreg->peer_ptr[local_of(r, g->ranks[m])] +
				       reg_off(a->rreg, a->recvbuf) + so * r->es,
			       sc * r->es);
	}
	return 1;
}

/* ---- the other collectives' steps (PN_OP_X*, sched_coll.h) ---- */

/* Buffer which (PN_SRC_*) at element el. */
static char *xbuf(struct run *r, int which, size_t el)
{
	char *base = which == PN_SRC_IN ? (char *)r->a->sendbuf
		     : which == PN_SRC_OUT ? (char *)r->a->recvbuf : (char *)r->e->scratch;

	return base + el * r->es;
}

/*
 * XBRUCK: packed elements [q, q + n) of scratch's selected blocks (i & mask,
 * blk elements each) to slot (pack) or from it.
 */
static void bruck_move(struct run *r, const struct pn_step *st, size_t q, size_t n, char *slot,
		       int pack)
{
	size_t sel = q / st->blk, inner = q % st->blk, done = 0;
	int i;

	for (i = 0; i < r->s->nranks; i++)
		if (((uint32_t)i & st->mask) && sel-- == 0)
			break;
	while (done < n && i < r->s->nranks) {
		size_t m = PN_MIN(st->blk - inner, n - done);
		char *p = xbuf(r, PN_SRC_SCRATCH, (size_t)i * st->blk + inner);

		if (pack)
			memcpy(slot + done * r->es, p, m * r->es);
		else
			memcpy(p, slot + done * r->es, m * r->es);
		done += m;
		inner = 0;
		do
			i++;
		while (i < r->s->nranks && !((uint32_t)i & st->mask));
	}
}

/* XSENDRECV and XBRUCK: sends run ahead; slice j is received only once slice j was sent. */
static int step_x_both(struct run *r, const struct pn_step *st, struct chan_state *cs,
		       struct pn_conn *in, struct pn_conn *out)
{
	size_t ns = nslices(r, st->count), rel, n, len, cap;
	int ret;

	while (cs->sent < ns) {
		char *ss = out->t->send_slot(out, &cap);

		if (!ss) {
			r->waiting_for = st->send_peer;
			break;
		}
		rel = cs->sent * r->slice;
		n = PN_MIN(r->slice, st->count - rel);
		if (st->op == PN_OP_XBRUCK)
			bruck_move(r, st, st->off + rel, n, ss, 1);
		else
			memcpy(ss, xbuf(r, st->src, st->soff + rel), n * r->es);
		ret = out->t->send_post(out, n * r->es);
		if (ret)
			return ret;
		cs->sent++;
	}
	while (cs->done < cs->sent) {
		const char *rs = in->t->recv_slot(in, &len);

		if (!rs) {
			r->waiting_for = st->recv_peer;
			break;
		}
		rel = cs->done * r->slice;
		n = PN_MIN(r->slice, st->count - rel);
		if (len != n * r->es)
			return pn_err(-EPROTO, "rank %d sent %zu bytes where %zu were expected (ranks "
				      "disagree on the schedule)", st->recv_peer, len, n * r->es);
		if (st->op == PN_OP_XBRUCK)
			bruck_move(r, st, st->off + rel, n, (char *)rs, 0);
		else
			memcpy(xbuf(r, st->dst, st->off + rel), rs, len);
		ret = in->t->recv_release(in);
		if (ret)
			return ret;
		cs->done++;
	}
	return cs->done == ns;
}

/* The point-to-point PN_OP_X* steps: 1 done, 0 blocked, <0 error. */
static int step_x(struct run *r, const struct pn_step *st, struct chan_state *cs, int chan)
{
	size_t ns = nslices(r, st->count);
	struct pn_conn *in = st->recv_peer >= 0 ? pn_comm_conn(r->c, st->recv_peer, chan) : NULL;
	struct pn_conn *out = st->send_peer >= 0 ? pn_comm_conn(r->c, st->send_peer, chan) : NULL;

	if (st->op == PN_OP_XSENDRECV || st->op == PN_OP_XBRUCK)
		return step_x_both(r, st, cs, in, out);
	while (cs->done < ns) {
		const void *rs = NULL;
		void *ss = NULL;
		size_t rel = cs->done * r->slice, n = PN_MIN(r->slice, st->count - rel);
		size_t bytes = n * r->es;
		/* a rank may pass no buffer it does not use (broadcast, reduce) */
		char *d = st->op == PN_OP_XSEND || st->op == PN_OP_XRECV_REDUCE_SEND
				  ? NULL : xbuf(r, st->dst, st->off + rel);
		const char *src = st->op == PN_OP_XRECV || st->op == PN_OP_XRECV_SEND
					  ? NULL : xbuf(r, st->src, st->soff + rel);
		int ret = take_slots(r, st, in, out, bytes, &rs, &ss);

		if (ret <= 0)
			return ret;
		switch (st->op) {
		case PN_OP_XSEND:
			memcpy(ss, src, bytes);
			break;
		case PN_OP_XRECV:
			memcpy(d, rs, bytes);
			break;
		case PN_OP_XRECV_SEND:
			memcpy(d, rs, bytes);
			memcpy(ss, d, bytes);
			break;
		case PN_OP_XRECV_REDUCE_SEND:
			pn_reduce2(ss, rs, src, n, r->a->dtype, r->a->op);
			break;
		default: /* PN_OP_XRECV_REDUCE */
			pn_reduce2(d, rs, src, n, r->a->dtype, r->a->op);
			finish(r, st, d, n);
			break;
		}
		if (out && (ret = out->t->send_post(out, bytes)))
			return ret;
		if (in && (ret = in->t->recv_release(in)))
			return ret;
		cs->done++;
	}
	return 1;
}

/* Where rank's registered buffer which (PN_SRC_IN: sreg, else rreg) has element el. */
static int peer_buf(struct run *r, int which, int rank, size_t el, size_t count, const char **p)
{
	const struct pn_exec_args *a = r->a;
	const struct pn_reg *reg = which == PN_SRC_IN ? a->sreg : a->rreg;
	const void *mine = which == PN_SRC_IN ? a->sendbuf : a->recvbuf;
	size_t base, end;

	if (!reg)
		return pn_err(-EINVAL, "direct steps need registered buffers");
	if (local_of(r, rank) < 0)
		return pn_err(-EINVAL, "rank %d is not on this node: no direct load", rank);
	/* a rank that passes no buffer (broadcast's sendbuf off the root) reads offset 0 */
	base = mine ? reg_off(reg, mine) : 0;
	end = base + (el + count) * r->es;
	if (base > reg->len || end > reg->len || end < base)
		return pn_err(-EINVAL, "a direct load of %zu bytes at %zu is outside the %zu "
			      "registered", count * r->es, base + el * r->es, reg->len);
	*p = (const char *)reg->peer_ptr[local_of(r, rank)] + base + el * r->es;
	return 0;
}

/* The local PN_OP_X* steps (copies, loads of registered buffers): 1 or <0. */
static int step_xlocal(struct run *r, const struct pn_step *st)
{
	const struct pn_sched_group *g;
	int direct = st->op == PN_OP_XLOAD || st->op == PN_OP_XLOAD_REDUCE;
	/* direct loads name their sources by registration; a remote
	 * XLOAD_REDUCE writes the peer's buffer, not dst */
	char *d = direct && st->send_peer >= 0 ? NULL : xbuf(r, st->dst, st->off);
	const char *src = direct ? NULL : xbuf(r, st->src, st->soff);
	int m, ret;

	switch (st->op) {
	case PN_OP_XCOPY:
		if (d != src)
			memcpy(d, src, st->count * r->es);
		return 1;
	case PN_OP_XREDUCE:
		pn_reduce2(d, xbuf(r, PN_SRC_SCRATCH, st->off), src, st->count, r->a->dtype,
			   r->a->op);
		break;
	case PN_OP_XLOAD:
		ret = peer_buf(r, st->src, st->recv_peer, st->soff, st->count, &src);
		if (ret)
			return ret;
		memcpy(d, src, st->count * r->es);
		return 1;
	default: /* PN_OP_XLOAD_REDUCE */
		g = &r->s->groups[st->group];
		if (st->send_peer >= 0) {
			/* into that rank's registered receive buffer */
			ret = peer_buf(r, PN_SRC_OUT, st->send_peer, st->off, st->count, &src);
			if (ret)
				return ret;
			d = (char *)src;
		}
		if (g->n > r->e->npeer)
			return pn_err(-E2BIG, "group of %d ranks in a job of %d", g->n, r->e->npeer);
		for (m = 0; m < g->n; m++) {
			ret = peer_buf(r, st->src, g->ranks[m], st->soff, st->count, &src);
			if (ret)
				return ret;
			r->e->srcs[m] = src;
		}
		pn_reduce_chain(d, r->e->srcs, g->n, st->count, r->a->dtype, r->a->op);
		break;
	}
	finish(r, st, d, st->count);
	return 1;
}

static int try_step(struct run *r, int chan, struct chan_state *cs)
{
	const struct pn_step *st = &r->s->ch[chan].steps[cs->idx];

	switch (st->op) {
	case PN_OP_SEND:
	case PN_OP_RECV:
	case PN_OP_RECV_REDUCE_SEND:
	case PN_OP_RECV_REDUCE_COPY:
	case PN_OP_RECV_REDUCE_COPY_SEND:
	case PN_OP_RECV_COPY_SEND:
		return step_p2p(r, st, cs, chan);
	case PN_OP_COPY: {
		void *d = dst_ptr(r, st->off);
		const void *s = st->scratch ? r->e->scratch : src_ptr(r, st, st->off);

		if (d != s)
			memcpy(d, s, st->count * r->es);
		finish(r, st, d, st->count);
		return 1;
	}
	case PN_OP_GATHER_REDUCE:
	case PN_OP_SCATTER_REDUCE:
	case PN_OP_ALLGATHER:
		return step_group(r, st, cs, chan);
	case PN_OP_DIRECT_REDUCE:
	case PN_OP_DIRECT_GATHER:
		return step_direct(r, st);
	case PN_OP_LOCAL_BARRIER: {
		int ret = pn_comm_local_barrier(r->c);

		return ret ? ret : 1;
	}
	case PN_OP_XSEND:
	case PN_OP_XRECV:
	case PN_OP_XRECV_SEND:
	case PN_OP_XSENDRECV:
	case PN_OP_XRECV_REDUCE_SEND:
	case PN_OP_XRECV_REDUCE:
	case PN_OP_XBRUCK:
		return step_x(r, st, cs, chan);
	case PN_OP_XREDUCE:
	case PN_OP_XCOPY:
	case PN_OP_XLOAD:
	case PN_OP_XLOAD_REDUCE:
		return step_xlocal(r, st);
	}
	return pn_err(-EINVAL, "bad schedule step %d", st->op);
}

/* A peer whose posted sends some transport still holds in this rank's
 * memory (-1: none): with every step done, the one the rank waits for. */
static int unsent(struct pn_comm *c)
{
	int i, p;

	for (i = 0; pn_transports[i]; i++)
		if (pn_transports[i]->unsent && (p = pn_transports[i]->unsent(&c->tp)) >= 0)
			return p;
	return -1;
}

int pn_exec_run(struct pn_exec *e, const struct pn_sched *s, const struct pn_exec_args *a)
{
	struct chan_state cs[64];
	struct run r = { .e = e, .c = e->comm, .s = s, .a = a, .waiting_for = -1 };
	double since = 0;
	int ch, left, ret = 0, i;

	if (s->nchan > (int)PN_ARRAY_SIZE(cs))
		return pn_err(-E2BIG, "too many channels");
	r.es = pn_dtype_size(a->dtype);
	r.slice = PN_FIFO_SLOT_BYTES / r.es;
	if (s->esize && s->esize != r.es) {
		ret = pn_err(-EINVAL, "a schedule of %zu-byte elements run on %s", s->esize,
			     pn_dtype_name(a->dtype));
		goto fail;
	}
	if (s->scratch_count > e->scratch_len / r.es) {
		void *p = realloc(e->scratch, s->scratch_count * r.es);

		if (!p) {
			ret = pn_err(-ENOMEM, "out of memory for %zu bytes of scratch",
				     s->scratch_count * r.es);
			goto fail;
		}
		e->scratch = p;
		e->scratch_len = s->scratch_count * r.es;
	}
	memset(cs, 0, sizeof(cs[0]) * (size_t)s->nchan);
	for (;;) {
		int progressed = 0;

		left = 0;
		for (ch = 0; ch < s->nchan; ch++) {
			while (cs[ch].idx < s->ch[ch].n) {
				size_t before = cs[ch].done + cs[ch].sent;

				ret = try_step(&r, ch, &cs[ch]);
				if (ret < 0)
					goto fail;
				if (ret == 0) {
					if (cs[ch].done + cs[ch].sent != before)
						progressed = 1;
					break;
				}
				cs[ch].idx++;
				cs[ch].done = 0;
				cs[ch].sent = 0;
				cs[ch].started = 0;
				progressed = 1;
			}
			if (cs[ch].idx < s->ch[ch].n)
				left++;
		}
		/* every step done and every send out of this rank's memory (a
		 * tcp frame still queued here is data a peer waits for) */
		if (!left) {
			int p = unsent(r.c);

			if (p < 0) {
				pn_comm_done_waiting(r.c);
				return 0;
			}
			r.waiting_for = p;
		}
		for (i = 0; pn_transports[i]; i++) {
			ret = pn_transports[i]->progress(&r.c->tp);
			if (ret < 0)
				goto fail;
		}
		if (progressed) {
			since = 0;
			continue;
		}
		if (since == 0)
			since = pn_now();
		ret = pn_comm_check(r.c, r.waiting_for, since);
		if (ret)
			goto fail;
	}
fail:
	ret = pn_comm_first_cause(r.c, ret);
	if (!r.c->failed && ret != -ECANCELED) {
		char msg[300];

		snprintf(msg, sizeof(msg), "rank %d (host %s): %s", r.c->rank,
			 pn_boot_host(r.c->boot, r.c->rank), pn_errmsg(ret));
		pn_comm_abort(r.c, msg);
	}
	return ret;
}
