/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
#include "engine/sched.h"
#include "base/log.h"
#include "transport/transport.h"
#include "base/util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static const char *const algo_names[PN_NALGOS] = {
	"ring", "simple-ring", "one-shot", "two-shot", "hierarchical", "multiring",
};

static const char *const op_names[PN_NOPS] = {
	"send", "recv", "recv-reduce-send", "recv-reduce-copy", "recv-reduce-copy-send",
	"recv-copy-send", "copy", "gather-reduce", "scatter-reduce", "allgather",
	"direct-reduce", "direct-gather", "local-barrier", "send", "recv", "recv-send",
	"send-recv", "recv-reduce-send", "recv-reduce", "reduce", "copy", "load", "load-reduce",
	"bruck-exchange",
};

const char *pn_algo_name(enum pn_algo a)
{
	if (a == PN_ALGO_AUTO)
		return "auto";
	return a >= 0 && a < PN_NALGOS ? algo_names[a] : "?";
}

int pn_algo_parse(const char *s, enum pn_algo *a)
{
	int i;

	if (!strcmp(s, "auto")) {
		*a = PN_ALGO_AUTO;
		return 0;
	}
	for (i = 0; i < PN_NALGOS; i++)
		if (!strcmp(s, algo_names[i])) {
			*a = (enum pn_algo)i;
			return 0;
		}
	if (!strcmp(s, "hier"))
		return *a = PN_ALGO_HIER, 0;
	return pn_err(-EINVAL, "unknown algorithm '%s' (ring, simple-ring, one-shot, two-shot, "
		      "hierarchical, multiring, auto, all)", s);
}

const char *pn_step_op_name(enum pn_step_op op)
{
	return op < PN_NOPS ? op_names[op] : "?";
}

void pn_sched_shard(size_t count, int n, int g, size_t *off, size_t *len)
{
	size_t per = PN_ALIGN_UP(PN_DIV_UP(count, (size_t)n), 16);
	size_t o = per * (size_t)g;

	if (o > count)
		o = count;
	*off = o;
	*len = PN_MIN(per, count - o);
}

static int push(struct pn_sched *s, int chan, struct pn_step st)
{
	struct pn_sched_chan *c = &s->ch[chan];

	if (st.count == 0 && st.op != PN_OP_LOCAL_BARRIER)
		return 0; /* both sides skip an empty step alike */
	if (c->n == c->cap) {
		size_t cap = c->cap ? 2 * c->cap : 64;
		struct pn_step *n = realloc(c->steps, cap * sizeof(*n));

		if (!n)
			return pn_err(-ENOMEM, "out of memory for a schedule");
		c->steps = n;
		c->cap = cap;
	}
	c->steps[c->n++] = st;
	return 0;
}

static struct pn_step step(int op, int recv_peer, int send_peer, size_t off, size_t count)
{
	struct pn_step st;

	memset(&st, 0, sizeof(st));
	st.op = (uint8_t)op;
	st.recv_peer = recv_peer;
	st.send_peer = send_peer;
	st.group = -1;
	st.off = off;
	st.count = count;
	return st;
}

static int add_group(struct pn_sched *s, const int *ranks, int n)
{
	struct pn_sched_group *g = realloc(s->groups, sizeof(*g) * (size_t)(s->ngroups + 1));

	if (!g)
		return pn_err(-ENOMEM, "out of memory");
	s->groups = g;
	g[s->ngroups].n = n;
	g[s->ngroups].ranks = malloc(sizeof(int) * (size_t)n);
	if (!g[s->ngroups].ranks)
		return pn_err(-ENOMEM, "out of memory");
	memcpy(g[s->ngroups].ranks, ranks, sizeof(int) * (size_t)n);
	return s->ngroups++;
}

static int pos_of(const int *ring, int m, int rank)
{
	int i;

	for (i = 0; i < m; i++)
		if (ring[i] == rank)
			return i;
	return -1;
}

/*
 * Ring over the m ranks of ring[] on [base, base + len), in one loop chunk:
 * chunk c is [base + shard(c)].  phase: 1 reduce-scatter, 2 all-gather,
 * 3 both.  src: where the local operand lives.  final: the reduce-scatter
 * result is final (avg divides there).
 */
static int ring_loop(struct pn_sched *s, int chan, const int *ring, int m, size_t base,
		     size_t len, int phase, int src, int final)
{
	int i = pos_of(ring, m, s->rank), k, ret = 0;
	int next, prev;
	size_t off, cnt;
	struct pn_step st;

	if (i < 0 || len == 0)
		return 0;
	if (m == 1) {
		if (phase & 1) {
			st = step(PN_OP_COPY, -1, -1, base, len);
			st.src = (uint8_t)src;
			st.final = (uint8_t)final;
			if (src == PN_SRC_IN || final)
				ret = push(s, chan, st);
		}
		return ret;
	}
	next = ring[(i + 1) % m];
	prev = ring[(i + m - 1) % m];
#define CHUNK(c) pn_sched_shard(len, m, (int)(((c) % m + m) % m), &off, &cnt), off += base
	if (phase & 1) {
		CHUNK(i - 1);
		st = step(PN_OP_SEND, -1, next, off, cnt);
		st.src = (uint8_t)src;
		ret = push(s, chan, st);
		for (k = 1; !ret && k <= m - 2; k++) {
			CHUNK(i - 1 - k);
			st = step(PN_OP_RECV_REDUCE_SEND, prev, next, off, cnt);
			st.src = (uint8_t)src;
			ret = push(s, chan, st);
		}
		if (ret)
			return ret;
		CHUNK(i);
		st = step(phase & 2 ? PN_OP_RECV_REDUCE_COPY_SEND : PN_OP_RECV_REDUCE_COPY, prev,
			  phase & 2 ? next : -1, off, cnt);
		st.src = (uint8_t)src;
		st.final = (uint8_t)final;
		ret = push(s, chan, st);
	} else if (phase & 2) {
		CHUNK(i);
		st = step(PN_OP_SEND, -1, next, off, cnt);
		st.src = PN_SRC_OUT;
		ret = push(s, chan, st);
	}
	if (phase & 2) {
		for (k = 1; !ret && k <= m - 2; k++) {
			CHUNK(i - k);
			ret = push(s, chan, step(PN_OP_RECV_COPY_SEND, prev, next, off, cnt));
		}
		CHUNK(i + 1);
		if (!ret)
			ret = push(s, chan, step(PN_OP_RECV, prev, -1, off, cnt));
	}
#undef CHUNK
	return ret;
}

/* Ring allreduce over [base, base + len) in loop chunks that fit the FIFO. */
static int ring_allreduce(struct pn_sched *s, int chan, const int *ring, int m, size_t base,
			  size_t len, size_t step_el, int src)
{
	size_t loop = step_el * (size_t)m, b;
	int ret = 0;

	for (b = 0; !ret && b < len; b += loop)
		ret = ring_loop(s, chan, ring, m, base + b, PN_MIN(loop, len - b), 3, src, 1);
	return ret;
}

static int gen_simple_ring(struct pn_sched *s, const int *ring, int m, size_t step_el)
{
	int i = pos_of(ring, m, s->rank), ret = 0;
	int next = ring[(i + 1) % m], prev = ring[(i + m - 1) % m];
	size_t b, n;
	struct pn_step st;

	for (b = 0; !ret && b < s->count; b += step_el) {
		n = PN_MIN(step_el, s->count - b);
		if (m == 1) {
			st = step(PN_OP_COPY, -1, -1, b, n);
			st.final = 1;
			ret = push(s, 0, st);
			continue;
		}
		/* reduce chain ring[0] -> ... -> ring[m-1], then broadcast from
		 * ring[m-1] -> ring[0] -> ... -> ring[m-2] */
		if (i == 0) {
			ret = push(s, 0, step(PN_OP_SEND, -1, next, b, n));
			if (!ret)
				ret = push(s, 0, step(m > 2 ? PN_OP_RECV_COPY_SEND : PN_OP_RECV, prev,
						      m > 2 ? next : -1, b, n));
		} else if (i < m - 1) {
			ret = push(s, 0, step(PN_OP_RECV_REDUCE_SEND, prev, next, b, n));
			if (!ret)
				ret = push(s, 0, step(i < m - 2 ? PN_OP_RECV_COPY_SEND : PN_OP_RECV, prev,
						      i < m - 2 ? next : -1, b, n));
		} else {
			st = step(PN_OP_RECV_REDUCE_COPY_SEND, prev, next, b, n);
			st.final = 1;
			ret = push(s, 0, st);
		}
	}
	return ret;
}

static int gen_one_shot(struct pn_sched *s, const int *all, size_t step_el)
{
	int g = add_group(s, all, s->nranks), ret = 0;
	size_t b, n;
	struct pn_step st;

	if (g < 0)
		return g;
	/*
	 * In place with one peer: over the FIFOs, whose slots are the copy of
	 * my input the peer reads, so I reduce straight into my buffer, which
	 * no peer reads.  The direct loads would need the result aside until
	 * the peer is done and a copy back whose stores hit the lines the
	 * peer has just read (README: Tuning).  With more peers the FIFOs
	 * copy the input once per peer: they keep the one copy back.
	 */
	if (s->inplace && s->nranks == 2)
		s->direct = 0;
	if (s->direct) {
		ret = push(s, 0, step(PN_OP_LOCAL_BARRIER, -1, -1, 0, 0));
		st = step(PN_OP_DIRECT_REDUCE, -1, -1, 0, s->count);
		st.group = g;
		st.final = 1;
		/* in place, peers still read my input: reduce aside, copy after */
		st.scratch = (uint8_t)s->inplace;
		if (!ret)
			ret = push(s, 0, st);
		if (!ret)
			ret = push(s, 0, step(PN_OP_LOCAL_BARRIER, -1, -1, 0, 0));
		if (!ret && s->inplace) {
			st = step(PN_OP_COPY, -1, -1, 0, s->count);
			st.scratch = 1;
			ret = push(s, 0, st);
		}
		return ret;
	}
	/* each loop sends a piece to n-1 peers: keep it within the FIFO */
	for (b = 0; !ret && b < s->count; b += step_el) {
		n = PN_MIN(step_el, s->count - b);
		st = step(PN_OP_GATHER_REDUCE, -1, -1, b, n);
		st.group = g;
		st.final = 1;
		ret = push(s, 0, st);
	}
	return ret;
}

static int gen_two_shot(struct pn_sched *s, const int *all, size_t step_el)
{
	int g = add_group(s, all, s->nranks), ret = 0, me = s->rank;
	size_t b, n, loop = step_el * (size_t)s->nranks;
	struct pn_step st;

	if (g < 0)
		return g;
	if (s->direct) {
		size_t off, cnt;

		pn_sched_shard(s->count, s->nranks, me, &off, &cnt);
		ret = push(s, 0, step(PN_OP_LOCAL_BARRIER, -1, -1, 0, 0));
		st = step(PN_OP_DIRECT_REDUCE, -1, -1, off, cnt);
		st.group = g;
		st.final = 1;
		if (!ret && cnt)
			ret = push(s, 0, st);
		if (!ret)
			ret = push(s, 0, step(PN_OP_LOCAL_BARRIER, -1, -1, 0, 0));
		st = step(PN_OP_DIRECT_GATHER, -1, -1, 0, s->count);
		st.group = g;
		st.shard = (uint8_t)me;
		if (!ret)
			ret = push(s, 0, st);
		if (!ret)
			ret = push(s, 0, step(PN_OP_LOCAL_BARRIER, -1, -1, 0, 0));
		return ret;
	}
	for (b = 0; !ret && b < s->count; b += loop) {
		n = PN_MIN(loop, s->count - b);
		st = step(PN_OP_SCATTER_REDUCE, -1, -1, b, n);
		st.group = g;
		st.shard = (uint8_t)me;
		st.final = 1;
		ret = push(s, 0, st);
		st.op = PN_OP_ALLGATHER;
		st.final = 0;
		if (!ret)
			ret = push(s, 0, st);
	}
	return ret;
}

static int gen_hier(struct pn_sched *s, const int *node, size_t step_el)
{
	int *local = malloc(sizeof(int) * (size_t)s->nranks);
	int *inter = malloc(sizeof(int) * (size_t)s->nranks);
	int nl = 0, ni = 0, r, lr = -1, ret = 0;
	size_t loop, b, n;

	if (!local || !inter) {
		free(local);
		free(inter);
		return pn_err(-ENOMEM, "out of memory");
	}
	for (r = 0; r < s->nranks; r++)
		if (node[r] == node[s->rank]) {
			if (r == s->rank)
				lr = nl;
			local[nl++] = r;
		}
	/* same local index on every node, nodes in order of first rank */
	for (r = 0; r < s->nranks; r++) {
		int k = 0, q;

		for (q = 0; q < r; q++)
			if (node[q] == node[r])
				k++;
		if (k == lr)
			inter[ni++] = r;
	}
	loop = step_el * (size_t)nl;
	for (b = 0; !ret && b < s->count; b += loop) {
		size_t off, cnt;

		n = PN_MIN(loop, s->count - b);
		pn_sched_shard(n, nl, lr, &off, &cnt);
		/* node-partial sums of my shard into dst: final only if one node */
		ret = ring_loop(s, 0, local, nl, b, n, 1, PN_SRC_IN, ni == 1);
		if (!ret && ni > 1)
			ret = ring_loop(s, 0, inter, ni, b + off, cnt, 3, PN_SRC_OUT, 1);
		if (!ret)
			ret = ring_loop(s, 0, local, nl, b, n, 2, PN_SRC_OUT, 0);
	}
	free(local);
	free(inter);
	return ret;
}

/*
 * Multi-ring: the buffer is split across channels; channel k runs a ring
 * over rings[k] (from the planner) or, without a plan, over all ranks with
 * every other ring reversed so both directions of every link carry data.
 */
static int gen_multiring(struct pn_sched *s, const struct pn_sched_job *job, size_t step_el)
{
	int k, r, ret = 0;
	int *order = malloc(sizeof(int) * (size_t)s->nranks);

	if (!order)
		return pn_err(-ENOMEM, "out of memory");
	for (k = 0; !ret && k < s->nchan; k++) {
		size_t off, cnt;

		if (job->rings) {
			memcpy(order, job->rings[k], sizeof(int) * (size_t)s->nranks);
		} else {
			for (r = 0; r < s->nranks; r++)
				order[r] = k % 2 ? s->nranks - 1 - r : r;
		}
		pn_sched_shard(s->count, s->nchan, k, &off, &cnt);
		ret = ring_allreduce(s, k, order, s->nranks, off, cnt, step_el, PN_SRC_IN);
	}
	free(order);
	return ret;
}

int pn_sched_supported(enum pn_algo algo, const struct pn_sched_job *job)
{
	int r, q;

	if (algo < 0 || algo >= PN_NALGOS)
		return pn_err(-EINVAL, "no such algorithm");
	if (algo == PN_ALGO_HIER) {
		/* every node needs the same number of ranks */
		int *per = calloc((size_t)job->nranks, sizeof(int)), n0 = -1;

		if (!per)
			return pn_err(-ENOMEM, "out of memory");
		for (r = 0; r < job->nranks; r++)
			per[job->node[r]]++;
		for (q = 0; q < job->nranks; q++) {
			if (!per[q])
				continue;
			if (n0 < 0)
				n0 = per[q];
			if (per[q] != n0) {
				free(per);
				return pn_err(-EINVAL, "hierarchical needs the same number of ranks on "
					      "every node");
			}
		}
		free(per);
	}
	if (algo == PN_ALGO_TWO_SHOT && job->nranks > 255)
		return pn_err(-EINVAL, "two-shot supports at most 255 ranks");
	return 0;
}

int pn_sched_build(struct pn_sched *s, enum pn_algo algo, const struct pn_sched_job *job,
		   size_t count, size_t esize)
{
	size_t step_bytes = job->step_max_bytes ? job->step_max_bytes : PN_STEP_MAX_BYTES;
	size_t step_el = PN_MAX(step_bytes / esize / 16 * 16, 16);
	int *all = NULL, r, ret;

	memset(s, 0, sizeof(*s));
	ret = pn_sched_supported(algo, job);
	if (ret)
		return ret;
	s->algo = algo;
	s->rank = job->rank;
	s->nranks = job->nranks;
	s->count = count;
	s->esize = esize;
	s->direct = job->direct && (algo == PN_ALGO_ONE_SHOT || algo == PN_ALGO_TWO_SHOT);
	s->inplace = job->inplace;
	s->nchan = algo == PN_ALGO_MULTIRING ? PN_MAX(job->nchannels, 1) : 1;
	s->ch = calloc((size_t)s->nchan, sizeof(*s->ch));
	all = malloc(sizeof(int) * (size_t)job->nranks);
	if (!s->ch || !all) {
		free(all);
		pn_sched_release(s);
		return pn_err(-ENOMEM, "out of memory");
	}
	for (r = 0; r < job->nranks; r++)
		all[r] = r;
	if (job->nranks == 1 && count) {
		struct pn_step st = step(PN_OP_COPY, -1, -1, 0, count);

		st.final = 1;
		ret = push(s, 0, st);
		goto out;
	}
	switch (algo) {
	case PN_ALGO_RING:
		ret = ring_allreduce(s, 0, all, job->nranks, 0, count, step_el, PN_SRC_IN);
		break;
	case PN_ALGO_SIMPLE_RING:
		ret = gen_simple_ring(s, all, job->nranks, step_el);
		break;
	case PN_ALGO_ONE_SHOT:
		ret = gen_one_shot(s, all, PN_MAX(step_el / 2, 16));
		break;
	case PN_ALGO_TWO_SHOT:
		ret = gen_two_shot(s, all, step_el);
		break;
	case PN_ALGO_HIER:
		ret = gen_hier(s, job->node, step_el);
		break;
	case PN_ALGO_MULTIRING:
		ret = gen_multiring(s, job, step_el);
		break;
	default:
		ret = pn_err(-EINVAL, "no such algorithm");
	}
out:
	free(all);
	if (ret)
		pn_sched_release(s);
	return ret;
}

/* Common start of the group generators: checks the group, one channel. */
static int group_begin(struct pn_sched *s, const struct pn_sched_job *job, const int *group,
		       int m, size_t count, size_t esize, int *me)
{
	int i, k;

	memset(s, 0, sizeof(*s));
	*me = -1;
	if (m < 1 || !group || esize == 0)
		return pn_err(-EINVAL, "empty group");
	for (i = 0; i < m; i++) {
		if (group[i] < 0 || group[i] >= job->nranks)
			return pn_err(-EINVAL, "group member %d is not a rank (0..%d)", group[i],
				      job->nranks - 1);
		for (k = 0; k < i; k++)
			if (group[k] == group[i])
				return pn_err(-EINVAL, "rank %d is twice in the group", group[i]);
		if (group[i] == job->rank)
			*me = i;
	}
	if (*me < 0)
		return pn_err(-EINVAL, "rank %d is not in the group", job->rank);
	s->algo = PN_ALGO_RING;
	s->rank = job->rank;
	s->nranks = job->nranks;
	s->count = count;
	s->esize = esize;
	s->inplace = job->inplace;
	s->nchan = 1;
	s->ch = calloc(1, sizeof(*s->ch));
	if (!s->ch)
		return pn_err(-ENOMEM, "out of memory");
	return 0;
}

int pn_sched_build_ring_group(struct pn_sched *s, const struct pn_sched_job *job,
			      const int *group, int m, size_t count, size_t esize)
{
	size_t step_bytes = job->step_max_bytes ? job->step_max_bytes : PN_STEP_MAX_BYTES;
	size_t step_el;
	int me, ret;

	ret = group_begin(s, job, group, m, count, esize, &me);
	if (!ret) {
		step_el = PN_MAX(step_bytes / esize / 16 * 16, 16);
		ret = ring_allreduce(s, 0, group, m, 0, count, step_el, PN_SRC_IN);
	}
	if (ret)
		pn_sched_release(s);
	return ret;
}

size_t pn_sched_allgather_piece(const struct pn_sched_job *job, size_t shard, size_t esize)
{
	size_t step_bytes = job->step_max_bytes ? job->step_max_bytes : PN_STEP_MAX_BYTES;
	size_t step_el = PN_MAX(step_bytes / esize / 16 * 16, 16);

	return PN_MAX(PN_MIN(shard, step_el), 16);
}

int pn_sched_build_allgather_group(struct pn_sched *s, const struct pn_sched_job *job,
				   const int *group, int m, size_t shard, size_t esize)
{
	size_t piece, c;
	struct pn_step st;
	int me, g, ret;

	if (shard % 16)
		return pn_err(-EINVAL, "allgather shards must be multiples of 16 elements (%zu)",
			      shard);
	if (m > 255)
		return pn_err(-EINVAL, "an allgather group has at most 255 ranks");
	ret = group_begin(s, job, group, m, shard * (size_t)m, esize, &me);
	if (ret || m == 1)
		goto out;
	g = add_group(s, group, m);
	if (g < 0) {
		ret = g;
		goto out;
	}
	piece = pn_sched_allgather_piece(job, shard, esize);
	for (c = 0; !ret && c * piece < shard; c++) {
		size_t len = PN_MIN(piece, shard - c * piece);

		st = step(PN_OP_ALLGATHER, -1, -1, c * piece * (size_t)m, len * (size_t)m);
		st.group = g;
		st.shard = (uint8_t)me;
		ret = push(s, 0, st);
	}
out:
	if (ret)
		pn_sched_release(s);
	return ret;
}

int pn_sched_push(struct pn_sched *s, int chan, const struct pn_step *st)
{
	return push(s, chan, *st);
}

int pn_sched_add_group(struct pn_sched *s, const int *ranks, int n)
{
	return add_group(s, ranks, n);
}

void pn_sched_release(struct pn_sched *s)
{
	int i;

	for (i = 0; s->ch && i < s->nchan; i++)
		free(s->ch[i].steps);
	for (i = 0; i < s->ngroups; i++)
		free(s->groups[i].ranks);
	free(s->groups);
	free(s->ch);
	memset(s, 0, sizeof(*s));
}
