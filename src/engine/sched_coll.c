/* SPDX-License-Identifier: MIT */
/*
 * The generators of the collectives other than allreduce (sched_coll.h).
 * Every generator appends to channel 0 of one rank's schedule; "piece" is
 * the largest step (half a FIFO), so every send step fits the FIFO.
 */
#define _GNU_SOURCE
#include "engine/sched_coll.h"
#include "base/log.h"
#include "base/util.h"
#include "transport/transport.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct gen {
	struct pn_sched *s;
	int r, n, root;
	size_t c;		/* the count argument */
	size_t piece;		/* elements per step at most */
	int inplace, direct;
};

static int mod(long a, int n)
{
	return (int)(((a % n) + n) % n);
}

static struct pn_step xstep(int op, int src, size_t soff, int dst, size_t off, size_t count)
{
	struct pn_step st;

	memset(&st, 0, sizeof(st));
	st.op = (uint8_t)op;
	st.src = (uint8_t)src;
	st.dst = (uint8_t)dst;
	st.soff = soff;
	st.off = off;
	st.count = count;
	st.recv_peer = -1;
	st.send_peer = -1;
	st.group = -1;
	return st;
}

static int put(struct gen *g, struct pn_step st)
{
	return pn_sched_push(g->s, 0, &st);
}

static int put_send(struct gen *g, int src, size_t soff, size_t count, int to)
{
	struct pn_step st = xstep(PN_OP_XSEND, src, soff, PN_SRC_OUT, 0, count);

	st.send_peer = to;
	return put(g, st);
}

static int put_recv(struct gen *g, int dst, size_t off, size_t count, int from)
{
	struct pn_step st = xstep(PN_OP_XRECV, PN_SRC_IN, 0, dst, off, count);

	st.recv_peer = from;
	return put(g, st);
}

static int put_copy(struct gen *g, int src, size_t soff, int dst, size_t off, size_t count)
{
	return put(g, xstep(PN_OP_XCOPY, src, soff, dst, off, count));
}

static int put_barrier(struct gen *g)
{
	return put(g, xstep(PN_OP_LOCAL_BARRIER, PN_SRC_IN, 0, PN_SRC_OUT, 0, 0));
}

/*
 * Load-reduce of the chain o+1, ..., o (the fixed order) into out[off..],
 * or into rank to's registered out[off..] (to >= 0).
 */
static int put_load_reduce(struct gen *g, int o, size_t soff, size_t off, size_t count, int to)
{
	int *chain = malloc(sizeof(int) * (size_t)g->n), k, grp;
	struct pn_step st;

	if (!chain)
		return pn_err(-ENOMEM, "out of memory");
	for (k = 0; k < g->n; k++)
		chain[k] = mod((long)o + 1 + k, g->n);
	grp = pn_sched_add_group(g->s, chain, g->n);
	free(chain);
	if (grp < 0)
		return grp;
	st = xstep(PN_OP_XLOAD_REDUCE, PN_SRC_IN, soff, PN_SRC_OUT, off, count);
	st.group = grp;
	st.final = 1;
	st.send_peer = to;
	return put(g, st);
}

/* Receive the chain o+1, ..., o-1 into scratch[b..], then out[b..] = that op in[soff..]. */
static int put_fifo_chain(struct gen *g, size_t b, size_t len, size_t soff)
{
	struct pn_step st;
	int k, ret;

	ret = put_recv(g, PN_SRC_SCRATCH, b, len, mod((long)g->r + 1, g->n));
	for (k = 2; !ret && k < g->n; k++) {
		st = xstep(PN_OP_XRECV_REDUCE, PN_SRC_SCRATCH, b, PN_SRC_SCRATCH, b, len);
		st.recv_peer = mod((long)g->r + k, g->n);
		ret = put(g, st);
	}
	if (ret)
		return ret;
	st = xstep(PN_OP_XREDUCE, PN_SRC_IN, soff, PN_SRC_OUT, b, len);
	st.final = 1;
	if (b + len > g->s->scratch_count)
		g->s->scratch_count = b + len;
	return put(g, st);
}

/* ---- allgather ---- */

static int allgather(struct gen *g, enum pn_calgo a)
{
	int r = g->r, n = g->n, next = mod(r + 1, n), prev = mod(r - 1, n), k, ret = 0;
	size_t c = g->c, b, len;

	if (a == PN_CALGO_ONE_SHOT && g->direct) {
		ret = put_barrier(g);
		for (k = 1; !ret && k < n; k++) {
			int p = mod((long)r + k, n);
			struct pn_step st = g->inplace
				? xstep(PN_OP_XLOAD, PN_SRC_OUT, (size_t)p * c, PN_SRC_OUT, (size_t)p * c, c)
				: xstep(PN_OP_XLOAD, PN_SRC_IN, 0, PN_SRC_OUT, (size_t)p * c, c);

			st.recv_peer = p;
			ret = put(g, st);
		}
		if (!ret && !g->inplace)
			ret = put_copy(g, PN_SRC_IN, 0, PN_SRC_OUT, (size_t)r * c, c);
		return ret ? ret : put_barrier(g);
	}
	for (b = 0; !ret && b < c; b += g->piece) {
		len = PN_MIN(g->piece, c - b);
		if (a == PN_CALGO_ONE_SHOT) {
			for (k = 1; !ret && k < n; k++)
				ret = put_send(g, PN_SRC_IN, b, len, mod((long)r + k, n));
			for (k = 1; !ret && k < n; k++) {
				int p = mod((long)r - k, n);

				ret = put_recv(g, PN_SRC_OUT, (size_t)p * c + b, len, p);
			}
			continue;
		}
		/* ring: block r - k arrives at step k and goes on, but the last */
		ret = put_send(g, PN_SRC_IN, b, len, next);
		for (k = 1; !ret && k < n - 1; k++) {
			struct pn_step st = xstep(PN_OP_XRECV_SEND, PN_SRC_IN, 0, PN_SRC_OUT,
						  (size_t)mod((long)r - k, n) * c + b, len);

			st.recv_peer = prev;
			st.send_peer = next;
			ret = put(g, st);
		}
		if (!ret)
			ret = put_recv(g, PN_SRC_OUT, (size_t)next * c + b, len, prev);
	}
	if (!ret && !g->inplace)
		ret = put_copy(g, PN_SRC_IN, 0, PN_SRC_OUT, (size_t)r * c, c);
	return ret;
}

/* ---- reducescatter: shard s is reduced along the chain s+1, ..., s ---- */

static int reduce_scatter(struct gen *g, enum pn_calgo a)
{
	int r = g->r, n = g->n, next = mod(r + 1, n), prev = mod(r - 1, n), k, ret = 0;
	size_t c = g->c, b, len;
	struct pn_step st;

	if (a == PN_CALGO_ONE_SHOT && g->direct) {
		ret = put_barrier(g);
		if (!ret)
			ret = put_load_reduce(g, r, (size_t)r * c, 0, c, -1);
		return ret ? ret : put_barrier(g);
	}
	for (b = 0; !ret && b < c; b += g->piece) {
		len = PN_MIN(g->piece, c - b);
		if (a == PN_CALGO_ONE_SHOT) {
			for (k = 1; !ret && k < n; k++) {
				int p = mod((long)r + k, n);

				ret = put_send(g, PN_SRC_IN, (size_t)p * c + b, len, p);
			}
			if (!ret)
				ret = put_fifo_chain(g, b, len, (size_t)r * c + b);
			continue;
		}
		/* ring: at step k rank r passes on shard r - 1 - k */
		ret = put_send(g, PN_SRC_IN, (size_t)prev * c + b, len, next);
		for (k = 1; !ret && k < n - 1; k++) {
			st = xstep(PN_OP_XRECV_REDUCE_SEND, PN_SRC_IN,
				   (size_t)mod((long)r - 1 - k, n) * c + b, PN_SRC_OUT, 0, len);
			st.recv_peer = prev;
			st.send_peer = next;
			ret = put(g, st);
		}
		st = xstep(PN_OP_XRECV_REDUCE, PN_SRC_IN, (size_t)r * c + b, PN_SRC_OUT, b, len);
		st.recv_peer = prev;
		st.final = 1;
		if (!ret)
			ret = put(g, st);
	}
	return ret;
}

/* ---- alltoall ---- */

/* Number of blocks i in [0, n) with i & mask. */
static size_t bruck_blocks(int n, uint32_t mask)
{
	size_t k = 0;
	int i;

	for (i = 0; i < n; i++)
		if ((uint32_t)i & mask)
			k++;
	return k;
}

/*
 * Bruck: scratch block i = my block r + i; in round bit, the blocks i with
 * i & bit go to r + bit and come from r - bit; at the end scratch block i
 * holds rank r - i's block for me.
 */
static int alltoall_bruck(struct gen *g)
{
	int r = g->r, n = g->n, ret, i;
	size_t c = g->c, q, total;
	uint32_t bit;

	g->s->scratch_count = c * (size_t)n;
	ret = put_copy(g, PN_SRC_IN, (size_t)r * c, PN_SRC_SCRATCH, 0, (size_t)(n - r) * c);
	if (!ret)
		ret = put_copy(g, PN_SRC_IN, 0, PN_SRC_SCRATCH, (size_t)(n - r) * c, (size_t)r * c);
	for (bit = 1; !ret && bit < (uint32_t)n; bit <<= 1) {
		total = bruck_blocks(n, bit) * c;
		for (q = 0; !ret && q < total; q += g->piece) {
			struct pn_step st = xstep(PN_OP_XBRUCK, PN_SRC_SCRATCH, 0, PN_SRC_SCRATCH, q,
						  PN_MIN(g->piece, total - q));

			st.mask = bit;
			st.blk = c;
			st.send_peer = mod((long)r + (long)bit, n);
			st.recv_peer = mod((long)r - (long)bit, n);
			ret = put(g, st);
		}
	}
	for (i = 0; !ret && i < n; i++)
		ret = put_copy(g, PN_SRC_SCRATCH, (size_t)i * c, PN_SRC_OUT,
			       (size_t)mod((long)r - i, n) * c, c);
	return ret;
}

static int alltoall_direct(struct gen *g)
{
	int r = g->r, n = g->n, k, ret;
	size_t c = g->c;
	int dst = g->inplace ? PN_SRC_SCRATCH : PN_SRC_OUT;

	/* in place, peers read my buffer until the second barrier: land aside */
	if (g->inplace)
		g->s->scratch_count = c * (size_t)n;
	ret = put_barrier(g);
	for (k = 1; !ret && k < n; k++) {
		int p = mod((long)r + k, n);
		struct pn_step st = xstep(PN_OP_XLOAD, PN_SRC_IN, (size_t)r * c, dst, (size_t)p * c, c);

		st.recv_peer = p;
		ret = put(g, st);
	}
	if (!ret && !g->inplace)
		ret = put_copy(g, PN_SRC_IN, (size_t)r * c, PN_SRC_OUT, (size_t)r * c, c);
	if (!ret)
		ret = put_barrier(g);
	if (!ret && g->inplace) {
		ret = put_copy(g, PN_SRC_SCRATCH, 0, PN_SRC_OUT, 0, (size_t)r * c);
		if (!ret)
			ret = put_copy(g, PN_SRC_SCRATCH, (size_t)(r + 1) * c, PN_SRC_OUT,
				       (size_t)(r + 1) * c, (size_t)(n - r - 1) * c);
	}
	return ret;
}

static int alltoall(struct gen *g, enum pn_calgo a)
{
	int r = g->r, n = g->n, k, ret = 0;
	size_t c = g->c, b, len;

	if (a == PN_CALGO_BRUCK)
		return alltoall_bruck(g);
	if (a == PN_CALGO_ONE_SHOT && g->direct)
		return alltoall_direct(g);
	if (a == PN_CALGO_ONE_SHOT) {
		/* every piece to everyone, then every piece from everyone */
		for (b = 0; !ret && b < c; b += g->piece) {
			len = PN_MIN(g->piece, c - b);
			for (k = 1; !ret && k < n; k++) {
				int p = mod((long)r + k, n);

				ret = put_send(g, PN_SRC_IN, (size_t)p * c + b, len, p);
			}
			for (k = 1; !ret && k < n; k++) {
				int p = mod((long)r - k, n);

				ret = put_recv(g, PN_SRC_OUT, (size_t)p * c + b, len, p);
			}
		}
	} else {
		/* pairwise: round k pairs r with (k - r) mod n, both ways at once */
		for (k = 0; !ret && k < n; k++) {
			int p = mod((long)k - r, n);

			for (b = 0; p != r && !ret && b < c; b += g->piece) {
				struct pn_step st;

				len = PN_MIN(g->piece, c - b);
				st = xstep(PN_OP_XSENDRECV, PN_SRC_IN, (size_t)p * c + b, PN_SRC_OUT,
					   (size_t)p * c + b, len);
				st.send_peer = p;
				st.recv_peer = p;
				ret = put(g, st);
			}
		}
	}
	if (!ret && !g->inplace)
		ret = put_copy(g, PN_SRC_IN, (size_t)r * c, PN_SRC_OUT, (size_t)r * c, c);
	return ret;
}

/* ---- broadcast ---- */

int pn_sched_tree(int n, int v, int *parent, int *children)
{
	int mask = 1, m, k = 0;

	*parent = -1;
	for (; mask < n; mask <<= 1)
		if (v & mask) {
			*parent = v - mask;
			break;
		}
	for (m = mask >> 1; m > 0; m >>= 1)
		if (v + m < n)
			children[k++] = v + m;
	return k;
}

static int broadcast(struct gen *g, enum pn_calgo a)
{
	int r = g->r, n = g->n, root = g->root, v = mod((long)r - root, n), k, ret = 0;
	int parent = -1, kids[32], nkids = 0;
	size_t c = g->c, b, len;

	if (a == PN_CALGO_ONE_SHOT && g->direct) {
		ret = put_barrier(g);
		if (!ret && v) {
			struct pn_step st = xstep(PN_OP_XLOAD, PN_SRC_IN, 0, PN_SRC_OUT, 0, c);

			st.recv_peer = root;
			ret = put(g, st);
		}
		if (!ret && !v && !g->inplace)
			ret = put_copy(g, PN_SRC_IN, 0, PN_SRC_OUT, 0, c);
		return ret ? ret : put_barrier(g);
	}
	if (a == PN_CALGO_TREE)
		nkids = pn_sched_tree(n, v, &parent, kids);
	for (b = 0; !ret && b < c; b += g->piece) {
		len = PN_MIN(g->piece, c - b);
		if (a == PN_CALGO_TREE) {
			if (v)
				ret = put_recv(g, PN_SRC_OUT, b, len, mod((long)parent + root, n));
			for (k = 0; !ret && k < nkids; k++)
				ret = put_send(g, v ? PN_SRC_OUT : PN_SRC_IN, b, len,
					       mod((long)kids[k] + root, n));
		} else if (a == PN_CALGO_ONE_SHOT) {
			for (k = 1; !ret && !v && k < n; k++)
				ret = put_send(g, PN_SRC_IN, b, len, mod((long)r + k, n));
			if (v)
				ret = put_recv(g, PN_SRC_OUT, b, len, root);
		} else if (!v) {
			ret = put_send(g, PN_SRC_IN, b, len, mod((long)r + 1, n));
		} else if (v < n - 1) {
			struct pn_step st = xstep(PN_OP_XRECV_SEND, PN_SRC_IN, 0, PN_SRC_OUT, b, len);

			st.recv_peer = mod((long)r - 1, n);
			st.send_peer = mod((long)r + 1, n);
			ret = put(g, st);
		} else {
			ret = put_recv(g, PN_SRC_OUT, b, len, mod((long)r - 1, n));
		}
	}
	if (!ret && !v && !g->inplace)
		ret = put_copy(g, PN_SRC_IN, 0, PN_SRC_OUT, 0, c);
	return ret;
}

/* ---- reduce: along the chain root+1, ..., root ---- */

static int reduce(struct gen *g, enum pn_calgo a)
{
	int r = g->r, n = g->n, root = g->root, v = mod((long)r - root, n), ret = 0;
	size_t c = g->c, b, len;
	struct pn_step st;

	if (a == PN_CALGO_ONE_SHOT && g->direct) {
		size_t off, part;

		/* every rank reduces its shard into the root's registered buffer */
		pn_sched_shard(c, n, r, &off, &part);
		ret = put_barrier(g);
		if (!ret)
			ret = put_load_reduce(g, root, off, off, part, root);
		return ret ? ret : put_barrier(g);
	}
	for (b = 0; !ret && b < c; b += g->piece) {
		len = PN_MIN(g->piece, c - b);
		if (a == PN_CALGO_ONE_SHOT) {
			ret = v ? put_send(g, PN_SRC_IN, b, len, root) : put_fifo_chain(g, b, len, b);
		} else if (v == 1) {
			ret = put_send(g, PN_SRC_IN, b, len, mod((long)r + 1, n));
		} else if (v) {
			st = xstep(PN_OP_XRECV_REDUCE_SEND, PN_SRC_IN, b, PN_SRC_OUT, 0, len);
			st.recv_peer = mod((long)r - 1, n);
			st.send_peer = mod((long)r + 1, n);
			ret = put(g, st);
		} else {
			st = xstep(PN_OP_XRECV_REDUCE, PN_SRC_IN, b, PN_SRC_OUT, b, len);
			st.recv_peer = mod((long)r - 1, n);
			st.final = 1;
			ret = put(g, st);
		}
	}
	return ret;
}

/* ---- sendrecv ---- */

/*
 * Send [0, ns) to sp and receive [0, nr) from rp (-1: none) in pieces.  A
 * stream's steps end at multiples of piece and at its end only (its peer
 * splits it the same way, knowing only its length): pieces of equal length
 * go both ways in one step, others as a send, then a receive.
 */
static int exchange(struct gen *g, int sp, size_t ns, int rp, size_t nr)
{
	size_t b, end;
	int ret = 0;

	if (sp < 0)
		ns = 0;
	if (rp < 0)
		nr = 0;
	end = PN_MAX(ns, nr);
	for (b = 0; !ret && b < end; b += g->piece) {
		size_t sl = b < ns ? PN_MIN(g->piece, ns - b) : 0;
		size_t rl = b < nr ? PN_MIN(g->piece, nr - b) : 0;

		if (sl && sl == rl) {
			struct pn_step st = xstep(PN_OP_XSENDRECV, PN_SRC_IN, b, PN_SRC_OUT, b, sl);

			st.send_peer = sp;
			st.recv_peer = rp;
			ret = put(g, st);
			continue;
		}
		if (sl)
			ret = put_send(g, PN_SRC_IN, b, sl, sp);
		if (!ret && rl)
			ret = put_recv(g, PN_SRC_OUT, b, rl, rp);
	}
	return ret;
}

/* The ring of pairs over registered buffers: load rank r - 1's input. */
static int sendrecv_direct(struct gen *g)
{
	struct pn_step st = xstep(PN_OP_XLOAD, PN_SRC_IN, 0, g->inplace ? PN_SRC_SCRATCH : PN_SRC_OUT,
				  0, g->c);
	int ret;

	/* in place, rank r + 1 reads my buffer until the second barrier */
	if (g->inplace)
		g->s->scratch_count = g->c;
	st.recv_peer = mod((long)g->r - 1, g->n);
	ret = put_barrier(g);
	if (!ret)
		ret = put(g, st);
	if (!ret)
		ret = put_barrier(g);
	if (!ret && g->inplace)
		ret = put_copy(g, PN_SRC_SCRATCH, 0, PN_SRC_OUT, 0, g->c);
	return ret;
}

/* ---- the builders ---- */

int pn_sched_coll_supported(enum pn_coll_kind k, enum pn_calgo a, const struct pn_sched_job *job)
{
	if (k == PN_COLL_ALLREDUCE || k < 0 || k >= PN_NCOLLS)
		return pn_err(-EINVAL, "no such collective here (allreduce has pn_sched_build)");
	if (!pn_calgo_valid(k, a))
		return pn_err(-EINVAL, "%s has no algorithm '%s'", pn_coll_name(k), pn_calgo_name(a));
	if (job->nranks < 1 || job->rank < 0 || job->rank >= job->nranks)
		return pn_err(-EINVAL, "rank %d of %d", job->rank, job->nranks);
	if (pn_coll_rooted(k) && (job->root < 0 || job->root >= job->nranks))
		return pn_err(-EINVAL, "root %d is not a rank (0..%d)", job->root, job->nranks - 1);
	return 0;
}

static int begin(struct pn_sched *s, struct gen *g, const struct pn_sched_job *job, size_t count,
		 size_t esize)
{
	size_t step_bytes = job->step_max_bytes ? job->step_max_bytes : PN_STEP_MAX_BYTES;

	memset(s, 0, sizeof(*s));
	memset(g, 0, sizeof(*g));
	if (!esize)
		return pn_err(-EINVAL, "element size 0");
	s->rank = job->rank;
	s->nranks = job->nranks;
	s->count = count;
	s->esize = esize;
	s->inplace = job->inplace;
	s->root = job->root;
	s->nchan = 1;
	s->ch = calloc(1, sizeof(*s->ch));
	if (!s->ch)
		return pn_err(-ENOMEM, "out of memory");
	g->s = s;
	g->r = job->rank;
	g->n = job->nranks;
	g->root = job->root;
	g->c = count;
	g->piece = PN_MAX(step_bytes / esize / 16 * 16, 16);
	g->inplace = job->inplace;
	return 0;
}

int pn_sched_build_coll(struct pn_sched *s, enum pn_coll_kind k, enum pn_calgo a,
			const struct pn_sched_job *job, size_t count, size_t esize)
{
	struct gen g;
	int ret;

	memset(s, 0, sizeof(*s));
	ret = pn_sched_coll_supported(k, a, job);
	if (!ret)
		ret = begin(s, &g, job, count, esize);
	if (ret)
		goto out;
	s->kind = k;
	s->calgo = a;
	s->direct = g.direct = job->direct && a == PN_CALGO_ONE_SHOT;
	if (!count)
		goto out;
	if (g.n == 1) {
		/* a copy into place; avg over one rank is the value itself */
		size_t ns = pn_coll_send_count(k, count, 1);

		if (!g.inplace)
			ret = put_copy(&g, PN_SRC_IN, 0, PN_SRC_OUT, 0, ns);
		goto out;
	}
	switch (k) {
	case PN_COLL_ALLGATHER: ret = allgather(&g, a); break;
	case PN_COLL_REDUCE_SCATTER: ret = reduce_scatter(&g, a); break;
	case PN_COLL_ALLTOALL: ret = alltoall(&g, a); break;
	case PN_COLL_BROADCAST: ret = broadcast(&g, a); break;
	case PN_COLL_REDUCE: ret = reduce(&g, a); break;
	default:
		ret = g.direct ? sendrecv_direct(&g)
			       : exchange(&g, mod((long)g.r + 1, g.n), count, mod((long)g.r - 1, g.n),
					  count);
		break;
	}
out:
	if (ret)
		pn_sched_release(s);
	return ret;
}

int pn_sched_build_p2p(struct pn_sched *s, const struct pn_sched_job *job, int send_peer,
		       size_t send_count, int recv_peer, size_t recv_count, size_t esize)
{
	struct gen g;
	int ret;

	memset(s, 0, sizeof(*s));
	if (send_peer < -1 || send_peer >= job->nranks || recv_peer < -1 ||
	    recv_peer >= job->nranks)
		return pn_err(-EINVAL, "peers %d and %d: not ranks of 0..%d", send_peer, recv_peer,
			      job->nranks - 1);
	if ((send_peer == job->rank) != (recv_peer == job->rank) ||
	    (send_peer == job->rank && send_count != recv_count))
		return pn_err(-EINVAL, "rank %d sends to itself only with an equal receive from "
			      "itself", job->rank);
	ret = begin(s, &g, job, PN_MAX(send_count, recv_count), esize);
	if (ret)
		goto out;
	s->kind = PN_COLL_SENDRECV;
	s->calgo = PN_CALGO_ONE_SHOT;
	if (send_peer == job->rank)
		ret = g.inplace ? 0 : put_copy(&g, PN_SRC_IN, 0, PN_SRC_OUT, 0, send_count);
	else
		ret = exchange(&g, send_peer, send_count, recv_peer, recv_count);
out:
	if (ret)
		pn_sched_release(s);
	return ret;
}
