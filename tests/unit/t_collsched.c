/* SPDX-License-Identifier: MIT */
/*
 * The other collectives' schedules (sched_coll.h), run by a symbolic
 * simulator: every element is a symbol (which rank's input element, or a
 * reduction of symbols in a recorded order), so the simulator checks, for
 * every collective x algorithm x 1..MAXR ranks x counts x in/out of place
 * x roots:
 *   - every rank ends with exactly its expected symbols, reductions in the
 *     fixed order (owner + 1, ..., owner) with avg's division once: the
 *     result is bit-identical whatever the type, op and arrival order;
 *   - no step reads an element that has not arrived (or was never written);
 *   - no step reads or writes outside its buffer, writes the send buffer,
 *     or writes an element of the receive buffer twice;
 *   - every slice a rank receives has the length its peer sent; nothing is
 *     left unreceived; bounded FIFOs (slots as the transports have) never
 *     deadlock, executed slice by slice as the executor does;
 *   - direct loads of peers' registered buffers never race with the owner's
 *     writes between local barriers, nor outlive the last barrier.
 * The ranks run in a seeded random order (the seed is printed on failure).
 */
#define _GNU_SOURCE
#include "unit.h"

#include "engine/collkind.h"
#include "engine/sched.h"
#include "engine/sched_coll.h"
#include "base/log.h"
#include "base/util.h"
#include "transport/transport.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#define MAXR 16
#define SLOTS 8

struct sym {
	uint64_t h;
	uint32_t mask;		/* contributing ranks; 0: never written */
	uint8_t fin;		/* avg's division applied */
	int16_t writes;		/* writes into the receive buffer */
	/* the epoch and rank of the last write and of the last load by a peer
	 * (rrank -2: several peers) */
	int32_t wepoch, repoch;
	int16_t wrank, rrank;
};

struct slice {
	struct slice *next;
	size_t n;
	struct sym *v;
};

struct fifo {
	struct slice *head, *tail;
	int len;
};

struct rank {
	struct pn_sched s;
	struct sym *mem, *scr;
	size_t memlen, in_base, out_base, sc, rc;
	size_t pc, done, sent;	/* step, its slices received / sent */
	int epoch, at_barrier;
};

struct sim {
	int n;
	enum pn_coll_kind k;
	size_t c, slice;
	int inplace, root;
	struct rank r[MAXR];
	struct fifo q[MAXR][MAXR];
	char err[200];
	unsigned rng;
	int p2p;		/* pn_sched_build_p2p: rank r receives p2p_rc[r] from p2p_from[r] */
	int p2p_from[MAXR];
	size_t p2p_sc[MAXR], p2p_rc[MAXR];
};

static uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	return x ^ (x >> 33);
}

static struct sym leaf(int r, size_t i)
{
	struct sym s = { 0 };

	s.h = mix(((uint64_t)r << 40) ^ (uint64_t)i ^ 0x5eed);
	s.mask = 1u << r;
	s.wepoch = s.repoch = -1;
	s.wrank = s.rrank = -1;
	return s;
}

static void fail(struct sim *m, const char *what, int r)
{
	if (!m->err[0])
		snprintf(m->err, sizeof(m->err), "rank %d step %zu (%s): %s", r, m->r[r].pc,
			 m->r[r].pc < m->r[r].s.ch[0].n
				 ? pn_step_op_name(m->r[r].s.ch[0].steps[m->r[r].pc].op) : "-",
			 what);
}

/* a op b: commutative (as every op is, bit for bit), not associative: the
 * hash records the order of association. */
static struct sym comb(struct sim *m, int r, struct sym a, struct sym b)
{
	struct sym s = { 0 };
	uint64_t x = PN_MIN(a.h, b.h), y = PN_MAX(a.h, b.h);

	if (!a.mask || !b.mask)
		fail(m, "reduces an element that has not arrived", r);
	if (a.mask & b.mask)
		fail(m, "reduces a rank's input twice", r);
	if (a.fin || b.fin)
		fail(m, "reduces a value already divided", r);
	s.h = mix(x * 0x9e3779b97f4a7c15ull ^ mix(y));
	s.mask = a.mask | b.mask;
	s.wepoch = s.repoch = -1;
	s.wrank = s.rrank = -1;
	return s;
}

/* The fixed order: owner + 1, ..., owner. */
static struct sym reduced(int n, int owner, size_t e)
{
	struct sim dummy = { 0 };
	struct sym acc;
	int k;

	if (n == 1)
		return leaf(0, e);
	acc = leaf((owner + 1) % n, e);
	for (k = 2; k <= n; k++)
		acc = comb(&dummy, 0, acc, leaf((owner + k) % n, e));
	acc.fin = 1;
	return acc;
}

/* Element el of buffer which (PN_SRC_*) of rank r, or NULL (an error) out of bounds. */
static struct sym *at(struct sim *m, int r, int which, size_t el, size_t n)
{
	struct rank *k = &m->r[r];

	if (which == PN_SRC_SCRATCH) {
		if (el + n > k->s.scratch_count) {
			fail(m, "outside the scratch buffer", r);
			return NULL;
		}
		return k->scr + el;
	}
	if (el + n > (which == PN_SRC_IN ? k->sc : k->rc)) {
		fail(m, which == PN_SRC_IN ? "outside the send buffer" : "outside the receive buffer",
		     r);
		return NULL;
	}
	return k->mem + (which == PN_SRC_IN ? k->in_base : k->out_base) + el;
}

static void touch(struct sim *m, int r, int owner, struct sym *p, size_t n, int write);

/* Rank r reads n elements at p: they must have arrived. */
static void rd(struct sim *m, int r, struct sym *p, size_t n)
{
	size_t i;

	touch(m, r, r, p, n, 0);
	for (i = 0; i < n; i++)
		if (!p[i].mask)
			fail(m, "reads an element before it arrived", r);
}

/*
 * Rank r accesses n elements at p of rank owner's memory (scratch is
 * never shared): in one epoch between barriers an element written by one
 * rank is accessed by no other.
 */
static void touch(struct sim *m, int r, int owner, struct sym *p, size_t n, int write)
{
	int e = m->r[r].epoch;
	size_t i;

	for (i = 0; i < n; i++) {
		if (p[i].wepoch == e && p[i].wrank != r)
			fail(m, "accesses what another rank writes in the same epoch", r);
		if (write && p[i].repoch == e && p[i].rrank != r)
			fail(m, "overwrites what another rank loads in the same epoch", r);
		if (write) {
			p[i].wepoch = e;
			p[i].wrank = (int16_t)r;
		} else if (owner != r) {
			p[i].rrank = (int16_t)(p[i].repoch == e && p[i].rrank != r ? -2 : r);
			p[i].repoch = e;
		}
	}
}

/* Rank r stores v into buffer which of rank owner: the checks of a write. */
static void wr_at(struct sim *m, int r, int owner, int which, struct sym *p, const struct sym *v,
		  size_t n)
{
	struct rank *k = &m->r[owner];
	size_t i;

	if (!p)
		return;
	if (which != PN_SRC_SCRATCH)
		touch(m, r, owner, p, n, 1);
	for (i = 0; i < n; i++) {
		if (which == PN_SRC_IN)
			fail(m, "writes the send buffer", r);
		if (which != PN_SRC_SCRATCH) {
			size_t a = (size_t)(p + i - k->mem);

			if (a < k->out_base || a >= k->out_base + k->rc)
				fail(m, "writes the send buffer", r);
			if (++p[i].writes > 1)
				fail(m, "writes a receive element twice", r);
		}
		p[i].h = v[i].h;
		p[i].mask = v[i].mask;
		p[i].fin = v[i].fin;
	}
}

/* Store v into buffer which of rank r. */
static void wr(struct sim *m, int r, int which, size_t el, const struct sym *v, size_t n)
{
	wr_at(m, r, r, which, at(m, r, which, el, n), v, n);
}

static void push(struct sim *m, int from, int to, const struct sym *v, size_t n)
{
	struct slice *s = calloc(1, sizeof(*s));
	struct fifo *f = &m->q[from][to];

	s->n = n;
	s->v = malloc(sizeof(*v) * (n ? n : 1));
	memcpy(s->v, v, sizeof(*v) * n);
	if (f->tail)
		f->tail->next = s;
	else
		f->head = s;
	f->tail = s;
	f->len++;
}

static struct slice *pop(struct sim *m, int from, int to)
{
	struct fifo *f = &m->q[from][to];
	struct slice *s = f->head;

	f->head = s->next;
	if (!f->head)
		f->tail = NULL;
	f->len--;
	return s;
}

/* Bruck's packed element q of rank r's scratch. */
static struct sym *bruck_at(struct sim *m, int r, const struct pn_step *st, size_t q)
{
	size_t sel = q / st->blk;
	int i;

	for (i = 0; i < m->n; i++)
		if (((uint32_t)i & st->mask) && sel-- == 0)
			return at(m, r, PN_SRC_SCRATCH, (size_t)i * st->blk + q % st->blk, 1);
	fail(m, "a packed element past the last block", r);
	return NULL;
}

/* The data of one slice of a sending step (rel: its first element), into v. */
static int slice_out(struct sim *m, int r, const struct pn_step *st, size_t rel, size_t n,
		     const struct slice *in, struct sym *v)
{
	struct sym *p;
	size_t i;

	if (st->op == PN_OP_XBRUCK) {
		for (i = 0; i < n; i++) {
			p = bruck_at(m, r, st, st->off + rel + i);
			if (!p)
				return -1;
			rd(m, r, p, 1);
			v[i] = *p;
		}
		return 0;
	}
	if (st->op == PN_OP_XRECV_SEND) {
		memcpy(v, in->v, sizeof(*v) * n);
		return 0;
	}
	p = at(m, r, st->src, st->soff + rel, n);
	if (!p)
		return -1;
	rd(m, r, p, n);
	for (i = 0; i < n; i++)
		v[i] = st->op == PN_OP_XRECV_REDUCE_SEND ? comb(m, r, in->v[i], p[i]) : p[i];
	return 0;
}

/* What a receiving step does with one slice. */
static void slice_in(struct sim *m, int r, const struct pn_step *st, size_t rel,
		     const struct slice *in)
{
	struct sym *p, *v;
	size_t i, n = in->n;

	if (st->op == PN_OP_XBRUCK) {
		for (i = 0; i < n; i++) {
			p = bruck_at(m, r, st, st->off + rel + i);
			if (p)
				wr(m, r, PN_SRC_SCRATCH, (size_t)(p - m->r[r].scr), &in->v[i], 1);
		}
		return;
	}
	if (st->op == PN_OP_XRECV_REDUCE) {
		p = at(m, r, st->src, st->soff + rel, n);
		if (!p)
			return;
		rd(m, r, p, n);
		v = calloc(n + 1, sizeof(*v));
		for (i = 0; i < n; i++) {
			v[i] = comb(m, r, in->v[i], p[i]);
			v[i].fin = st->final;
		}
		wr(m, r, st->dst, st->off + rel, v, n);
		free(v);
		return;
	}
	if (st->op != PN_OP_XRECV_REDUCE_SEND)
		wr(m, r, st->dst, st->off + rel, in->v, n);
}

/* One p2p step, as far as it goes (exec.c's step_x): 1 done, 0 blocked. */
static int step_p2p(struct sim *m, int r, const struct pn_step *st)
{
	struct rank *k = &m->r[r];
	size_t ns = PN_DIV_UP(st->count, m->slice);
	int both = st->op == PN_OP_XSENDRECV || st->op == PN_OP_XBRUCK;
	int rp = st->recv_peer, sp = st->send_peer, ret = 1;
	struct sym *v = calloc(PN_MIN(m->slice, st->count) + 1, sizeof(*v));

	if (both) {
		while (k->sent < ns && m->q[r][sp].len < SLOTS) {
			size_t rel = k->sent * m->slice, n = PN_MIN(m->slice, st->count - rel);

			if (slice_out(m, r, st, rel, n, NULL, v)) {
				free(v);
				return -1;
			}
			push(m, r, sp, v, n);
			k->sent++;
		}
		while (k->done < k->sent && m->q[rp][r].len) {
			size_t rel = k->done * m->slice, n = PN_MIN(m->slice, st->count - rel);
			struct slice *s = pop(m, rp, r);

			if (s->n != n)
				fail(m, "receives a slice of another length than its peer sent", r);
			else
				slice_in(m, r, st, rel, s);
			free(s->v);
			free(s);
			k->done++;
		}
		free(v);
		return k->done == ns;
	}
	while (ret == 1 && k->done < ns) {
		size_t rel = k->done * m->slice, n = PN_MIN(m->slice, st->count - rel);
		struct slice *s = NULL;

		if ((rp >= 0 && !m->q[rp][r].len) || (sp >= 0 && m->q[r][sp].len >= SLOTS)) {
			ret = 0;
			break;
		}
		if (rp >= 0) {
			s = pop(m, rp, r);
			if (s->n != n)
				fail(m, "receives a slice of another length than its peer sent", r);
			else
				slice_in(m, r, st, rel, s);
		}
		if (sp >= 0 && !m->err[0]) {
			if (slice_out(m, r, st, rel, n, s, v))
				ret = -1;
			else
				push(m, r, sp, v, n);
		}
		if (s) {
			free(s->v);
			free(s);
		}
		k->done++;
	}
	free(v);
	return ret;
}

/* Rank p's registered buffer which, at this rank's offset (exec.c's peer_buf). */
static struct sym *peer_at(struct sim *m, int r, int p, int which, size_t el, size_t n)
{
	struct rank *k = &m->r[r], *q = &m->r[p];
	size_t base = which == PN_SRC_IN ? k->in_base : k->out_base;

	if (base + el + n > q->memlen) {
		fail(m, "a direct load outside the peer's registration", r);
		return NULL;
	}
	return q->mem + base + el;
}

/* Rank r loads n elements at p of rank owner's buffer. */
static void remote_read(struct sim *m, int r, int owner, struct sym *p, size_t n)
{
	touch(m, r, owner, p, n, 0);
	rd(m, r, p, n);
}

static void step_local(struct sim *m, int r, const struct pn_step *st)
{
	struct sym *v = calloc(st->count + 1, sizeof(*v)), *p, *a;
	size_t i;
	int g;

	switch (st->op) {
	case PN_OP_XCOPY:
		p = at(m, r, st->src, st->soff, st->count);
		if (p && at(m, r, st->dst, st->off, st->count) == p)
			break; /* the executor skips a copy onto itself */
		if (p) {
			rd(m, r, p, st->count);
			memcpy(v, p, sizeof(*v) * st->count);
			wr(m, r, st->dst, st->off, v, st->count);
		}
		break;
	case PN_OP_XREDUCE:
		p = at(m, r, st->src, st->soff, st->count);
		a = at(m, r, PN_SRC_SCRATCH, st->off, st->count);
		if (!p || !a)
			break;
		rd(m, r, p, st->count);
		rd(m, r, a, st->count);
		for (i = 0; i < st->count; i++) {
			v[i] = comb(m, r, a[i], p[i]);
			v[i].fin = st->final;
		}
		wr(m, r, st->dst, st->off, v, st->count);
		break;
	case PN_OP_XLOAD:
		p = peer_at(m, r, st->recv_peer, st->src, st->soff, st->count);
		if (!p)
			break;
		remote_read(m, r, st->recv_peer, p, st->count);
		memcpy(v, p, sizeof(*v) * st->count);
		wr(m, r, st->dst, st->off, v, st->count);
		break;
	case PN_OP_XLOAD_REDUCE: {
		const struct pn_sched_group *gr = &m->r[r].s.groups[st->group];

		for (g = 0; g < gr->n; g++) {
			p = peer_at(m, r, gr->ranks[g], st->src, st->soff, st->count);
			if (!p)
				break;
			remote_read(m, r, gr->ranks[g], p, st->count);
			for (i = 0; i < st->count; i++)
				v[i] = g ? comb(m, r, v[i], p[i]) : p[i];
		}
		for (i = 0; gr->n > 1 && i < st->count; i++)
			v[i].fin = st->final;
		if (g < gr->n)
			break;
		if (st->send_peer >= 0) /* into that rank's registered receive buffer */
			wr_at(m, r, st->send_peer, PN_SRC_OUT,
			      peer_at(m, r, st->send_peer, PN_SRC_OUT, st->off, st->count), v, st->count);
		else
			wr(m, r, st->dst, st->off, v, st->count);
		break;
	}
	default:
		fail(m, "an allreduce step in a collective's schedule", r);
	}
	free(v);
}

/* Run rank r as far as it goes; 1 if it moved. */
static int advance(struct sim *m, int r)
{
	struct rank *k = &m->r[r];
	int moved = 0, q, all;

	while (k->pc < k->s.ch[0].n && !m->err[0]) {
		const struct pn_step *st = &k->s.ch[0].steps[k->pc];
		size_t before = k->done + k->sent;
		int ret;

		if (st->op == PN_OP_LOCAL_BARRIER) {
			k->at_barrier = 1;
			for (q = 0, all = 1; q < m->n; q++)
				if (!m->r[q].at_barrier || m->r[q].epoch != k->epoch)
					all = 0;
			if (!all)
				return moved;
			for (q = 0; q < m->n; q++) {
				/* everyone is at this barrier: all pass */
				m->r[q].at_barrier = 0;
				m->r[q].epoch++;
				m->r[q].pc++;
			}
			moved = 1;
			continue;
		}
		if (st->op <= PN_OP_LOCAL_BARRIER) {
			fail(m, "an allreduce step in a collective's schedule", r);
			return 0;
		}
		if (st->op == PN_OP_XCOPY || st->op == PN_OP_XREDUCE || st->op == PN_OP_XLOAD ||
		    st->op == PN_OP_XLOAD_REDUCE) {
			step_local(m, r, st);
			ret = 1;
		} else {
			ret = step_p2p(m, r, st);
		}
		if (ret < 0)
			return 0;
		if (k->done + k->sent != before)
			moved = 1;
		if (!ret)
			return moved;
		k->pc++;
		k->done = k->sent = 0;
		moved = 1;
	}
	return moved;
}

/* The symbol rank r must hold at element i of its receive buffer. */
static struct sym want(struct sim *m, int r, size_t i, int *untouched)
{
	size_t c = m->c;
	int n = m->n;

	*untouched = 0;
	if (m->p2p)
		return leaf(m->p2p_from[r], i);
	switch (m->k) {
	case PN_COLL_ALLGATHER: return leaf((int)(i / c), i % c);
	case PN_COLL_REDUCE_SCATTER: return reduced(n, r, (size_t)r * c + i);
	case PN_COLL_ALLTOALL: return leaf((int)(i / c), (size_t)r * c + i % c);
	case PN_COLL_BROADCAST: return leaf(m->root, i);
	case PN_COLL_REDUCE:
		if (r == m->root)
			return reduced(n, m->root, i);
		*untouched = !m->inplace;
		return leaf(r, i);
	default: return leaf((r + n - 1) % n, i);
	}
}

static void check_result(struct sim *m)
{
	int r, q, untouched;
	size_t i;

	for (r = 0; r < m->n && !m->err[0]; r++)
		for (q = 0; q < m->n; q++)
			if (m->q[r][q].len)
				fail(m, "leaves slices nobody receives", r);
	for (r = 0; r < m->n && !m->err[0]; r++) {
		struct rank *k = &m->r[r];

		for (i = 0; i < k->rc && !m->err[0]; i++) {
			struct sym w = want(m, r, i, &untouched), *p = k->mem + k->out_base + i;

			if (untouched ? p->mask != 0 : (p->h != w.h || p->mask != w.mask || p->fin != w.fin))
				fail(m, "ends with a wrong element", r);
		}
		for (i = 0; i < k->memlen && !m->err[0]; i++)
			if ((k->mem[i].repoch == k->epoch && k->mem[i].rrank != r) ||
			    (k->mem[i].wepoch == k->epoch && k->mem[i].wrank != r))
				fail(m, "is accessed by a peer after the last barrier", r);
	}
}

/* The buffers of rank r as the caller lays them out (collkind.h). */
static void layout(struct sim *m, int r)
{
	struct rank *k = &m->r[r];
	size_t i;

	k->sc = m->p2p ? m->p2p_sc[r] : pn_coll_send_count(m->k, m->c, m->n);
	k->rc = m->p2p ? m->p2p_rc[r] : pn_coll_recv_count(m->k, m->c, m->n);
	if (m->inplace) {
		k->memlen = PN_MAX(k->sc, k->rc);
		k->in_base = pn_coll_inplace_send_off(m->k, m->c, r);
		k->out_base = pn_coll_inplace_recv_off(m->k, m->c, r);
	} else {
		k->memlen = k->sc + k->rc;
		k->in_base = 0;
		k->out_base = k->sc;
	}
	k->mem = calloc(k->memlen + 1, sizeof(*k->mem));
	for (i = 0; i < k->memlen; i++) {
		k->mem[i].wepoch = k->mem[i].repoch = -1;
		k->mem[i].wrank = k->mem[i].rrank = -1;
	}
	/* the caller wrote the inputs just before the call: in epoch 0 */
	for (i = 0; i < k->sc; i++) {
		k->mem[k->in_base + i] = leaf(r, i);
		k->mem[k->in_base + i].wepoch = 0;
		k->mem[k->in_base + i].wrank = (int16_t)r;
	}
	k->scr = calloc(k->s.scratch_count + 1, sizeof(*k->scr));
	for (i = 0; i < k->s.scratch_count; i++)
		k->scr[i].wepoch = k->scr[i].repoch = -1;
}

static void sim_free(struct sim *m)
{
	int r, q;

	for (r = 0; r < m->n; r++) {
		pn_sched_release(&m->r[r].s);
		free(m->r[r].mem);
		free(m->r[r].scr);
		for (q = 0; q < m->n; q++)
			while (m->q[r][q].len) {
				struct slice *s = pop(m, r, q);

				free(s->v);
				free(s);
			}
	}
}

/* Run every rank in a random order until all are done or none moves. */
static void run_all(struct sim *m)
{
	int order[MAXR], r, moved, left;

	do {
		for (r = 0; r < m->n; r++)
			order[r] = r;
		for (r = m->n - 1; r > 0; r--) {
			int j = (int)(rand_r(&m->rng) % (unsigned)(r + 1)), t = order[r];

			order[r] = order[j];
			order[j] = t;
		}
		moved = 0;
		left = 0;
		for (r = 0; r < m->n && !m->err[0]; r++) {
			moved |= advance(m, order[r]);
			left += m->r[order[r]].pc < m->r[order[r]].s.ch[0].n;
		}
	} while (left && moved && !m->err[0]);
	if (left && !m->err[0])
		snprintf(m->err, sizeof(m->err), "deadlock");
}

/* Simulate one configuration; "" or what went wrong in err. */
static void simulate(enum pn_coll_kind k, enum pn_calgo a, int n, size_t c, int inplace,
		     int direct, int root, size_t step_bytes, unsigned seed, char *err, size_t len)
{
	struct sim *m = calloc(1, sizeof(*m));
	int r, ret;

	m->n = n;
	m->k = k;
	m->c = c;
	m->inplace = inplace;
	m->root = root;
	m->rng = seed;
	/* four slices a step, as a FIFO slot is a quarter of the largest step */
	m->slice = PN_MAX(step_bytes / 4 / 4, 1);
	for (r = 0; r < n; r++) {
		struct pn_sched_job job = { .rank = r, .nranks = n, .root = root, .direct = direct,
					    .inplace = inplace, .step_max_bytes = step_bytes };

		ret = pn_sched_build_coll(&m->r[r].s, k, a, &job, c, 4);
		if (ret) {
			snprintf(err, len, "build failed: %s", pn_errmsg(ret));
			m->n = r;
			sim_free(m);
			free(m);
			return;
		}
		layout(m, r);
	}
	run_all(m);
	if (!m->err[0])
		check_result(m);
	snprintf(err, len, "%s", m->err);
	sim_free(m);
	free(m);
}

/*
 * Point-to-point exchanges: rank r sends sc[r] elements to to[r] (-1: none)
 * and receives from the rank that sends to it; in place where asked (then
 * both counts are equal).
 */
static void simulate_p2p(int n, const int *to, const size_t *sc, int inplace, size_t step_bytes,
			 unsigned seed, char *err, size_t len)
{
	struct sim *m = calloc(1, sizeof(*m));
	int r, q, ret;

	m->n = n;
	m->p2p = 1;
	m->inplace = inplace;
	m->rng = seed;
	m->slice = PN_MAX(step_bytes / 4 / 4, 1);
	for (r = 0; r < n; r++)
		m->p2p_from[r] = -1;
	for (r = 0; r < n; r++)
		if (to[r] >= 0) {
			m->p2p_from[to[r]] = r;
			m->p2p_rc[to[r]] = sc[r];
			m->p2p_sc[r] = sc[r];
		}
	for (r = 0; r < n; r++) {
		struct pn_sched_job job = { .rank = r, .nranks = n, .inplace = inplace,
					    .step_max_bytes = step_bytes };

		q = m->p2p_from[r];
		ret = pn_sched_build_p2p(&m->r[r].s, &job, to[r], m->p2p_sc[r], q, m->p2p_rc[r], 4);
		if (ret) {
			snprintf(err, len, "build failed: %s", pn_errmsg(ret));
			m->n = r;
			sim_free(m);
			free(m);
			return;
		}
		layout(m, r);
	}
	run_all(m);
	if (!m->err[0])
		check_result(m);
	snprintf(err, len, "%s", m->err);
	sim_free(m);
	free(m);
}

static int fails;

/* Random permutations (some ranks left out), random counts: every rank gets
 * what its sender sent, whatever the lengths of its two halves. */
TEST(point_to_point)
{
	unsigned seed = 99;
	char err[256];
	int iter, n, r, to[MAXR], perm[MAXR];
	size_t sc[MAXR];

	for (iter = 0; iter < 400; iter++) {
		int inplace = iter % 4 == 3;

		n = 1 + (int)(rand_r(&seed) % MAXR);
		for (r = 0; r < n; r++)
			perm[r] = r;
		for (r = n - 1; r > 0; r--) {
			int j = (int)(rand_r(&seed) % (unsigned)(r + 1)), t = perm[r];

			perm[r] = perm[j];
			perm[j] = t;
		}
		/* a cycle through perm; every fourth round cut into a chain */
		for (r = 0; r < n; r++) {
			to[perm[r]] = r + 1 < n ? perm[r + 1] : iter % 4 == 1 ? -1 : perm[0];
			sc[perm[r]] = inplace ? 37 : rand_r(&seed) % 90;
		}
		if (n == 1 && to[0] == 0 && !inplace)
			sc[0] = 37;
		simulate_p2p(n, to, sc, inplace, iter % 2 ? 64 : 256, seed, err, sizeof(err));
		if (err[0]) {
			if (fails++ < 10)
				printf("#   p2p round %d n=%d seed=%u: %s\n", iter, n, seed, err);
			unit_cur++;
		}
	}
}

static void check_coll(enum pn_coll_kind k)
{
	static const size_t counts[] = { 0, 1, 3, 16, 17, 37, 100 };
	static const size_t steps[] = { 64, 256, 0 };
	unsigned seed = 1234;
	char err[256];
	int a, n, ci, si, ip, direct, root;

	for (a = 0; a < PN_NCALGOS; a++) {
		if (!pn_calgo_valid(k, (enum pn_calgo)a))
			continue;
		for (n = 1; n <= MAXR; n++)
			for (ci = 0; ci < (int)PN_ARRAY_SIZE(counts); ci++)
				for (si = 0; si < 3; si++)
					for (ip = 0; ip < 2; ip++)
						for (direct = 0; direct < 1 + (a == PN_CALGO_ONE_SHOT); direct++) {
							/* rotate the root through the ranks */
							root = pn_coll_rooted(k) ? (ci + si + ip) % n : 0;
							seed = seed * 1103515245u + 12345u;
							simulate(k, (enum pn_calgo)a, n, counts[ci], ip, direct, root,
								 steps[si] ? steps[si] : PN_STEP_MAX_BYTES, seed, err,
								 sizeof(err));
							if (err[0]) {
								if (fails++ < 10)
									printf("#   %s %s%s n=%d count=%zu step=%zu "
									       "%s root=%d seed=%u: %s\n",
									       pn_coll_name(k), pn_calgo_name((enum pn_calgo)a),
									       direct ? " direct" : "", n, counts[ci],
									       steps[si], ip ? "in place" : "out of place",
									       root, seed, err);
								unit_cur++;
							}
						}
	}
}

TEST(allgather) { check_coll(PN_COLL_ALLGATHER); }
TEST(reducescatter) { check_coll(PN_COLL_REDUCE_SCATTER); }
TEST(alltoall) { check_coll(PN_COLL_ALLTOALL); }
TEST(broadcast) { check_coll(PN_COLL_BROADCAST); }
TEST(reduce) { check_coll(PN_COLL_REDUCE); }
TEST(sendrecv) { check_coll(PN_COLL_SENDRECV); }

int main(void)
{
	RUN(allgather);
	RUN(reducescatter);
	RUN(alltoall);
	RUN(broadcast);
	RUN(reduce);
	RUN(sendrecv);
	RUN(point_to_point);
	return unit_done();
}
