/* SPDX-License-Identifier: MIT */
/*
 * Schedules: every algorithm, n = 1..16 ranks, sizes 0, 1, odd, unaligned,
 * several loop chunks.  A simulator runs the per-rank step lists against
 * bounded FIFOs (a step may only send when the FIFO has room, as in the real
 * transports), detects deadlock, and checks that every rank ends with the
 * exact reduction and all ranks are bit-identical.
 */
#define _GNU_SOURCE
#include "unit.h"

#include "engine/reduce.h"
#include "engine/testdata.h"
#include "engine/sched.h"
#include "transport/transport.h"
#include "base/util.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#define PN_ARRAY_SIZE_T(a) (sizeof(a) / sizeof((a)[0]))
#define MAXR 16
#define MAXQ 4096

struct msg {
	int src, dst, chan;
	size_t bytes;
	char *data;
};

struct sim {
	int n, nchan;
	size_t count, es, cap;
	enum pn_dtype t;
	enum pn_redop op;
	struct pn_sched s[MAXR];
	size_t pc[MAXR][4];
	char *in[MAXR], *out[MAXR], *scratch[MAXR];
	struct msg q[MAXQ];
	int nq;
	int barrier_wait[MAXR];
	int sent[MAXR][4];	/* group step: sends done, waiting for receives */
	int avg_n;		/* avg divides by this (group schedules) */
};

static size_t pending(struct sim *m, int src, int dst, int chan)
{
	size_t b = 0;
	int i;

	for (i = 0; i < m->nq; i++)
		if (m->q[i].src == src && m->q[i].dst == dst && m->q[i].chan == chan)
			b += m->q[i].bytes;
	return b;
}

static int find(struct sim *m, int src, int dst, int chan)
{
	int i;

	for (i = 0; i < m->nq; i++)
		if (m->q[i].src == src && m->q[i].dst == dst && m->q[i].chan == chan)
			return i;
	return -1;
}

static void send(struct sim *m, int src, int dst, int chan, const void *p, size_t bytes)
{
	struct msg *g = &m->q[m->nq++];

	g->src = src;
	g->dst = dst;
	g->chan = chan;
	g->bytes = bytes;
	g->data = malloc(bytes ? bytes : 1);
	memcpy(g->data, p, bytes);
}

static void drop(struct sim *m, int i)
{
	free(m->q[i].data);
	memmove(&m->q[i], &m->q[i + 1], sizeof(m->q[0]) * (size_t)(m->nq - i - 1));
	m->nq--;
}

static char *src_of(struct sim *m, int r, const struct pn_step *st, size_t el)
{
	return (st->src == PN_SRC_OUT ? m->out[r] : m->in[r]) + el * m->es;
}

static void fin(struct sim *m, const struct pn_step *st, void *p, size_t n)
{
	if (st->final)
		pn_reduce_finish(p, n, m->t, m->op, m->avg_n ? m->avg_n : m->n);
}

/* Try to run step pc of rank r on channel c; 1 done, 0 blocked. */
static int try_step(struct sim *m, int r, int c)
{
	const struct pn_step *st = &m->s[r].ch[c].steps[m->pc[r][c]];
	size_t bytes = st->count * m->es;
	char *tmp = malloc(bytes + 16);
	int qi = -1, g, k;

	switch (st->op) {
	case PN_OP_RECV:
	case PN_OP_RECV_REDUCE_SEND:
	case PN_OP_RECV_REDUCE_COPY:
	case PN_OP_RECV_REDUCE_COPY_SEND:
	case PN_OP_RECV_COPY_SEND:
		qi = find(m, st->recv_peer, r, c);
		if (qi < 0 || m->q[qi].bytes != bytes)
			goto blocked;
		/* fallthrough */
	case PN_OP_SEND:
		if (st->send_peer >= 0 && pending(m, r, st->send_peer, c) + bytes > m->cap)
			goto blocked;
		break;
	default:
		break;
	}
	switch (st->op) {
	case PN_OP_SEND:
		send(m, r, st->send_peer, c, src_of(m, r, st, st->off), bytes);
		break;
	case PN_OP_RECV:
		memcpy(m->out[r] + st->off * m->es, m->q[qi].data, bytes);
		break;
	case PN_OP_RECV_REDUCE_SEND:
		pn_reduce2(tmp, m->q[qi].data, src_of(m, r, st, st->off), st->count, m->t, m->op);
		send(m, r, st->send_peer, c, tmp, bytes);
		break;
	case PN_OP_RECV_REDUCE_COPY:
	case PN_OP_RECV_REDUCE_COPY_SEND:
		pn_reduce2(m->out[r] + st->off * m->es, m->q[qi].data, src_of(m, r, st, st->off),
			   st->count, m->t, m->op);
		fin(m, st, m->out[r] + st->off * m->es, st->count);
		if (st->op == PN_OP_RECV_REDUCE_COPY_SEND)
			send(m, r, st->send_peer, c, m->out[r] + st->off * m->es, bytes);
		break;
	case PN_OP_RECV_COPY_SEND:
		memcpy(m->out[r] + st->off * m->es, m->q[qi].data, bytes);
		send(m, r, st->send_peer, c, m->q[qi].data, bytes);
		break;
	case PN_OP_COPY:
		memmove(m->out[r] + st->off * m->es,
			st->scratch ? m->scratch[r] : src_of(m, r, st, st->off), bytes);
		fin(m, st, m->out[r] + st->off * m->es, st->count);
		break;
	case PN_OP_LOCAL_BARRIER: {
		int all = 1;

		m->barrier_wait[r] = 1;
		for (k = 0; k < m->n; k++)
			if (m->barrier_wait[k] != 1)
				all = 0;
		if (!all)
			goto blocked;
		/* everyone arrived: release the others on their next try */
		for (k = 0; k < m->n; k++)
			if (k != r)
				m->barrier_wait[k] = 2;
		m->barrier_wait[r] = 0;
		break;
	}
	case PN_OP_DIRECT_REDUCE: {
		const struct pn_sched_group *gr = &m->s[r].groups[st->group];
		const void *srcs[MAXR];
		char *dst = st->scratch ? m->scratch[r] : m->out[r] + st->off * m->es;

		for (g = 0; g < gr->n; g++)
			srcs[g] = m->in[gr->ranks[g]] + st->off * m->es;
		pn_reduce_n(dst, srcs, gr->n, st->count, m->t, m->op);
		fin(m, st, dst, st->count);
		break;
	}
	case PN_OP_DIRECT_GATHER: {
		const struct pn_sched_group *gr = &m->s[r].groups[st->group];

		for (g = 0; g < gr->n; g++) {
			size_t so, sc;

			if (g == st->shard)
				continue;
			pn_sched_shard(st->count, gr->n, g, &so, &sc);
			so += st->off;
			memcpy(m->out[r] + so * m->es, m->out[gr->ranks[g]] + so * m->es, sc * m->es);
		}
		break;
	}
	case PN_OP_GATHER_REDUCE:
	case PN_OP_SCATTER_REDUCE:
	case PN_OP_ALLGATHER: {
		const struct pn_sched_group *gr = &m->s[r].groups[st->group];
		const void *srcs[MAXR];
		size_t mo = st->off, mc = st->count;

		if (st->op != PN_OP_GATHER_REDUCE) {
			pn_sched_shard(st->count, gr->n, st->shard, &mo, &mc);
			mo += st->off;
		}
		/* phase 1: all sends, once they all have room (they never wait
		 * for a receive, as in the executor) */
		for (g = 0; !m->sent[r][c] && g < gr->n; g++) {
			size_t so = st->off, sc = st->count;
			int p = gr->ranks[g];

			if (p == r)
				continue;
			if (st->op == PN_OP_SCATTER_REDUCE)
				pn_sched_shard(st->count, gr->n, g, &so, &sc);
			if (st->op == PN_OP_ALLGATHER)
				sc = mc;
			if (pending(m, r, p, c) + sc * m->es > m->cap)
				goto blocked;
		}
		for (g = 0; !m->sent[r][c] && g < gr->n; g++) {
			size_t so = st->off, sc = st->count;
			int p = gr->ranks[g];

			if (p == r)
				continue;
			if (st->op == PN_OP_SCATTER_REDUCE) {
				pn_sched_shard(st->count, gr->n, g, &so, &sc);
				so += st->off;
			}
			if (st->op == PN_OP_ALLGATHER)
				send(m, r, p, c, m->out[r] + mo * m->es, mc * m->es);
			else
				send(m, r, p, c, m->in[r] + so * m->es, sc * m->es);
		}
		m->sent[r][c] = 1;
		/* phase 2: everything that must arrive is there */
		for (g = 0; g < gr->n; g++) {
			size_t ro = mo, rc = mc;
			int p = gr->ranks[g];

			if (p == r)
				continue;
			if (st->op == PN_OP_ALLGATHER)
				pn_sched_shard(st->count, gr->n, g, &ro, &rc);
			qi = find(m, p, r, c);
			if (qi < 0 || m->q[qi].bytes != rc * m->es)
				goto blocked;
		}
		m->sent[r][c] = 0;
		if (st->op == PN_OP_ALLGATHER) {
			for (g = 0; g < gr->n; g++) {
				size_t ro, rc;
				int p = gr->ranks[g];

				if (p == r)
					continue;
				pn_sched_shard(st->count, gr->n, g, &ro, &rc);
				ro += st->off;
				qi = find(m, p, r, c);
				memcpy(m->out[r] + ro * m->es, m->q[qi].data, rc * m->es);
				drop(m, qi);
			}
			break;
		}
		char *bufs[MAXR] = { 0 };

		for (g = 0; g < gr->n; g++) {
			int p = gr->ranks[g];

			if (p == r) {
				srcs[g] = m->in[r] + mo * m->es;
				continue;
			}
			qi = find(m, p, r, c);
			bufs[g] = m->q[qi].data;
			m->q[qi].data = NULL;
			drop(m, qi);
			srcs[g] = bufs[g];
		}
		pn_reduce_n(m->out[r] + mo * m->es, srcs, gr->n, mc, m->t, m->op);
		fin(m, st, m->out[r] + mo * m->es, mc);
		for (g = 0; g < gr->n; g++)
			free(bufs[g]);
		break;
	}
	}
	if (qi >= 0 && st->op <= PN_OP_RECV_COPY_SEND && st->op != PN_OP_SEND)
		drop(m, qi);
	free(tmp);
	return 1;
blocked:
	free(tmp);
	return 0;
}

/* Run every rank's steps until all are done or none can move; 1: deadlock. */
static int run_all(struct sim *m)
{
	int n = m->n, r, c, progress, left;

	do {
		progress = 0;
		left = 0;
		for (r = 0; r < n; r++) {
			if (m->barrier_wait[r] == 2) { /* released from a barrier */
				m->barrier_wait[r] = 0;
				for (c = 0; c < m->s[r].nchan; c++)
					if (m->pc[r][c] < m->s[r].ch[c].n &&
					    m->s[r].ch[c].steps[m->pc[r][c]].op == PN_OP_LOCAL_BARRIER) {
						m->pc[r][c]++;
						progress = 1;
						break;
					}
			}
			for (c = 0; c < m->s[r].nchan; c++) {
				while (m->pc[r][c] < m->s[r].ch[c].n && m->barrier_wait[r] != 1 &&
				       try_step(m, r, c)) {
					m->pc[r][c]++;
					progress = 1;
				}
				if (m->pc[r][c] < m->s[r].ch[c].n)
					left++;
			}
		}
	} while (left && progress);
	return left ? 1 : 0;
}

/* Run the schedules of all ranks; returns 0 ok, 1 deadlock, 2 build error. */
static int simulate(enum pn_algo algo, int n, const int *node, size_t count, enum pn_dtype t,
		    enum pn_redop op, int direct, int inplace, size_t step_max, int nchan)
{
	struct sim *m = calloc(1, sizeof(*m));
	int r, ret = 0;
	uint64_t seed = 1234 + count * 31 + (uint64_t)n;

	m->n = n;
	m->count = count;
	m->t = t;
	m->op = op;
	m->es = pn_dtype_size(t);
	m->cap = (size_t)PN_FIFO_SLOTS * PN_FIFO_SLOT_BYTES;
	if (step_max)
		m->cap = 2 * step_max;
	for (r = 0; r < n; r++) {
		struct pn_sched_job job = { .rank = r, .nranks = n, .node = node, .direct = direct,
					    .inplace = inplace, .step_max_bytes = step_max,
					    .nchannels = nchan };

		if (pn_sched_build(&m->s[r], algo, &job, count, m->es)) {
			ret = 2;
			goto out;
		}
		m->in[r] = malloc(count * m->es + 64);
		m->out[r] = inplace ? m->in[r] : malloc(count * m->es + 64);
		m->scratch[r] = malloc(count * m->es + 64);
		pn_testdata_fill(m->in[r], count, t, op, r, seed);
		if (!inplace)
			pn_testdata_poison(m->out[r], count * m->es);
	}
	ret = run_all(m);
	if (ret)
		goto out;

	if (m->nq)
		ret = 3; /* messages nobody received */
	for (r = 0; !ret && r < n; r++) {
		if (pn_testdata_check(m->out[r], count, t, op, n, seed))
			ret = 4;
		if (r && memcmp(m->out[r], m->out[0], count * m->es))
			ret = 5;
	}
out:
	for (r = 0; r < n; r++) {
		pn_sched_release(&m->s[r]);
		free(m->in[r]);
		if (!inplace)
			free(m->out[r]);
		free(m->scratch[r]);
	}
	while (m->nq)
		drop(m, 0);
	free(m);
	return ret;
}

static int fails;

/*
 * Group schedules: n ranks split into L groups {k, k + L, k + 2L, ...} (the
 * inter-node groups of a hierarchical run; odd k in reverse order), all
 * groups at once.  kind 0: ring allreduce (member i holds rank i's data, the
 * result is the reduction over the group's m members); kind 1: allgather of
 * shard elements per member.  Returns like simulate(), 6: a non-member got
 * messages or steps.
 */
static int simulate_groups(int kind, int n, int L, size_t count, enum pn_dtype t,
			   enum pn_redop op, int inplace, size_t step_max)
{
	struct sim *m = calloc(1, sizeof(*m));
	int groups[MAXR][MAXR], gm = n / L, r, k, i, ret = 0;
	uint64_t seed = 777 + count * 7 + (uint64_t)n;
	size_t shard = (count + 15) / 16 * 16, total = kind ? shard * (size_t)gm : count;

	m->n = n;
	m->t = t;
	m->op = op;
	m->es = pn_dtype_size(t);
	m->avg_n = gm;
	m->cap = step_max ? 2 * step_max : (size_t)PN_FIFO_SLOTS * PN_FIFO_SLOT_BYTES;
	for (k = 0; k < L; k++)
		for (i = 0; i < gm; i++)
			groups[k][i] = k % 2 ? (gm - 1 - i) * L + k : i * L + k;
	for (k = 0; k < L; k++)
		for (i = 0; i < gm; i++) {
			struct pn_sched_job job = { .rank = groups[k][i], .nranks = n, .inplace = inplace,
						    .step_max_bytes = step_max };

			r = groups[k][i];
			ret = kind ? pn_sched_build_allgather_group(&m->s[r], &job, groups[k], gm, shard,
								     m->es)
				   : pn_sched_build_ring_group(&m->s[r], &job, groups[k], gm, count, m->es);
			if (ret) {
				ret = 2;
				goto out;
			}
			m->in[r] = malloc(total * m->es + 64);
			m->out[r] = inplace || kind ? m->in[r] : malloc(total * m->es + 64);
			m->scratch[r] = malloc(total * m->es + 64);
			if (kind) {
				/* member i's data, laid out chunk-major (sched.h) */
				size_t piece = pn_sched_allgather_piece(&job, shard, m->es), off;
				char *mine = malloc(shard * m->es + 1);

				pn_testdata_fill(mine, shard, t, op, i, seed);
				pn_testdata_poison(m->out[r], total * m->es);
				for (off = 0; off < shard; off += piece) {
					size_t len = PN_MIN(piece, shard - off);

					memcpy(m->out[r] + (off * (size_t)gm + (size_t)i * len) * m->es,
					       mine + off * m->es, len * m->es);
				}
				free(mine);
			} else {
				pn_testdata_fill(m->in[r], count, t, op, i, seed);
				if (!inplace)
					pn_testdata_poison(m->out[r], count * m->es);
			}
		}
	ret = run_all(m);
	if (ret)
		goto out;
	if (m->nq)
		ret = 3;
	for (k = 0; !ret && k < L; k++)
		for (i = 0; !ret && i < gm; i++) {
			r = groups[k][i];
			if (kind) {
				/* member j's pieces must all be there: compare with a fresh fill */
				struct pn_sched_job job = { .step_max_bytes = step_max };
				size_t piece = pn_sched_allgather_piece(&job, shard, m->es), off;
				char *want = malloc(shard * m->es + 1);

				for (int j = 0; j < gm && !ret; j++) {
					pn_testdata_fill(want, shard, t, op, j, seed);
					for (off = 0; off < shard; off += piece) {
						size_t len = PN_MIN(piece, shard - off);

						if (memcmp(want + off * m->es,
							   m->out[r] + (off * (size_t)gm + (size_t)j * len) * m->es,
							   len * m->es))
							ret = 4;
					}
				}
				free(want);
			} else {
				if (pn_testdata_check(m->out[r], count, t, op, gm, seed))
					ret = 4;
				if (i && memcmp(m->out[r], m->out[groups[k][0]], count * m->es))
					ret = 5;
			}
		}
out:
	for (r = 0; r < n; r++) {
		pn_sched_release(&m->s[r]);
		if (m->out[r] != m->in[r])
			free(m->out[r]);
		free(m->in[r]);
		free(m->scratch[r]);
	}
	while (m->nq)
		drop(m, 0);
	free(m);
	return ret;
}

TEST(group_ring_and_allgather)
{
	static const size_t counts[] = { 0, 1, 7, 16, 17, 333, 4099 };
	static const size_t steps[] = { 0, 64 };
	int n, L, ci, si, kind, ip;

	for (n = 1; n <= MAXR; n++)
		for (L = 1; L <= n; L++) {
			if (n % L)
				continue;
			for (ci = 0; ci < (int)PN_ARRAY_SIZE_T(counts); ci++)
				for (si = 0; si < 2; si++)
					for (kind = 0; kind < 2; kind++)
						for (ip = 0; ip < 2 - kind; ip++) {
							enum pn_dtype t = (ci + ip) % 2 ? PN_FLOAT : PN_INT8;
							enum pn_redop op = (enum pn_redop)((ci + n + L) % PN_NREDOPS);
							int ret = simulate_groups(kind, n, L, counts[ci], t, op,
										  ip, steps[si]);

							if (ret) {
								if (fails++ < 10)
									printf("#   group %s n=%d groups=%d "
									       "count=%zu step=%zu %s %s "
									       "inplace=%d: %d\n",
									       kind ? "allgather" : "ring", n, L,
									       counts[ci], steps[si],
									       pn_dtype_name(t), pn_redop_name(op),
									       ip, ret);
								unit_cur++;
							}
						}
		}
}

TEST(group_errors)
{
	struct pn_sched s;
	struct pn_sched_job job = { .rank = 1, .nranks = 4 };
	int g1[2] = { 0, 2 }, g2[2] = { 1, 1 }, g3[2] = { 1, 4 }, g4[2] = { 1, 3 };

	CHECK(pn_sched_build_ring_group(&s, &job, g1, 2, 10, 4) == -EINVAL);
	CHECK(pn_sched_build_ring_group(&s, &job, g2, 2, 10, 4) == -EINVAL);
	CHECK(pn_sched_build_ring_group(&s, &job, g3, 2, 10, 4) == -EINVAL);
	CHECK(pn_sched_build_allgather_group(&s, &job, g4, 2, 10, 4) == -EINVAL);
	CHECK(!pn_sched_build_allgather_group(&s, &job, g4, 2, 32, 4));
	CHECK(s.nchan == 1 && s.ch[0].n == 1 && s.ch[0].steps[0].op == PN_OP_ALLGATHER &&
	      s.ch[0].steps[0].shard == 0 && s.ch[0].steps[0].count == 64);
	pn_sched_release(&s);
	/* pieces of at most half a FIFO: 4 loop chunks of 2 x 16 elements */
	job.step_max_bytes = 64;
	CHECK(!pn_sched_build_allgather_group(&s, &job, g4, 2, 64, 4));
	CHECK(s.ch[0].n == 4 && s.ch[0].steps[3].off == 96 && s.ch[0].steps[3].count == 32);
	pn_sched_release(&s);
}


static void check_algo(enum pn_algo algo, int direct)
{
	static const size_t counts[] = { 0, 1, 2, 7, 15, 16, 17, 100, 333, 1000, 4099 };
	static const size_t steps[] = { 0, 64, 4096 };
	int node[MAXR], n, ci, si, k;

	for (n = 1; n <= MAXR; n++) {
		for (k = 0; k < n; k++)
			node[k] = algo == PN_ALGO_HIER ? k / (n % 2 == 0 && n > 2 ? 2 : 1) : 0;
		for (ci = 0; ci < (int)PN_ARRAY_SIZE_T(counts); ci++)
			for (si = 0; si < 3; si++) {
				int ip, ret;

				for (ip = 0; ip < 2; ip++) {
					enum pn_dtype t = (ci + ip) % 2 ? PN_FLOAT : PN_INT32;
					enum pn_redop op = (enum pn_redop)((ci + si + n) % PN_NREDOPS);

					ret = simulate(algo, n, node, counts[ci], t, op, direct, ip,
						       steps[si], 3);
					if (ret) {
						if (fails++ < 10)
							printf("#   %s%s n=%d count=%zu step=%zu %s "
							       "%s inplace=%d: %s\n",
							       pn_algo_name(algo), direct ? " direct" : "",
							       n, counts[ci], steps[si], pn_dtype_name(t),
							       pn_redop_name(op), ip,
							       ret == 1 ? "deadlock" : ret == 2 ? "build failed"
							       : ret == 3 ? "unreceived messages"
							       : ret == 4 ? "wrong result" : "ranks differ");
						unit_cur++;
					}
				}
			}
	}
}

TEST(ring) { check_algo(PN_ALGO_RING, 0); }
TEST(simple_ring) { check_algo(PN_ALGO_SIMPLE_RING, 0); }
TEST(one_shot_fifo) { check_algo(PN_ALGO_ONE_SHOT, 0); }
TEST(one_shot_direct) { check_algo(PN_ALGO_ONE_SHOT, 1); }
TEST(two_shot_fifo) { check_algo(PN_ALGO_TWO_SHOT, 0); }
TEST(two_shot_direct) { check_algo(PN_ALGO_TWO_SHOT, 1); }
TEST(hierarchical) { check_algo(PN_ALGO_HIER, 0); }
TEST(multiring) { check_algo(PN_ALGO_MULTIRING, 0); }

TEST(hierarchical_needs_equal_nodes)
{
	int node[3] = { 0, 0, 1 };
	struct pn_sched_job job = { .rank = 0, .nranks = 3, .node = node };

	CHECK(pn_sched_supported(PN_ALGO_HIER, &job) == -EINVAL);
	CHECK(pn_sched_supported(PN_ALGO_RING, &job) == 0);
}

TEST(steps_fit_the_fifo)
{
	int node[8] = { 0 }, r;
	size_t i;

	for (r = 0; r < 8; r++) {
		struct pn_sched s;
		struct pn_sched_job job = { .rank = r, .nranks = 8, .node = node };

		CHECK(!pn_sched_build(&s, PN_ALGO_RING, &job, 10u << 20, 4));
		for (i = 0; i < s.ch[0].n; i++)
			CHECK(s.ch[0].steps[i].count * 4 <= PN_STEP_MAX_BYTES);
		/* 10 Mi elements = 20 loop chunks of 8 x 256 KiB; each loop is
		 * n sends/reductions and n - 1 forwards (the owner's step is fused) */
		CHECK_EQ_INT(s.ch[0].n, 15 * 20);
		pn_sched_release(&s);
	}
}

TEST(algo_names)
{
	enum pn_algo a;
	int i;

	for (i = 0; i < PN_NALGOS; i++) {
		CHECK(!pn_algo_parse(pn_algo_name((enum pn_algo)i), &a));
		CHECK(a == (enum pn_algo)i);
	}
	CHECK(!pn_algo_parse("auto", &a) && a == PN_ALGO_AUTO);
	CHECK(pn_algo_parse("bogus", &a) == -EINVAL);
}

/*
 * In place with registered buffers and two ranks, one-shot and two-shot
 * write every element of the rank's buffer once, straight from the inputs:
 * no result held in scratch and copied back after the peer has read the
 * buffer (that copy's stores hit the lines the peer has just read).
 */
TEST(inplace_writes_once_no_scratch)
{
	static const size_t counts[] = { 1, 17, 333, 4099, 1u << 20 };
	static const enum pn_algo algos[] = { PN_ALGO_ONE_SHOT, PN_ALGO_TWO_SHOT };
	int node[2] = { 0, 0 }, a, r, ci;
	size_t i, e;

	for (a = 0; a < 2; a++)
		for (ci = 0; ci < (int)PN_ARRAY_SIZE_T(counts); ci++)
			for (r = 0; r < 2; r++) {
				struct pn_sched s;
				struct pn_sched_job job = { .rank = r, .nranks = 2, .node = node,
							    .direct = 1, .inplace = 1 };
				size_t n = counts[ci];
				unsigned char *w = calloc(n, 1);
				int bad = 0;

				CHECK(w && !pn_sched_build(&s, algos[a], &job, n, 4));
				for (i = 0; w && i < s.ch[0].n; i++) {
					const struct pn_step *st = &s.ch[0].steps[i];
					size_t o = st->off, c = st->count, so, sc;
					int g;

					if (st->scratch)
						bad = 1;
					switch (st->op) {
					case PN_OP_SCATTER_REDUCE:
						pn_sched_shard(st->count, 2, st->shard, &o, &c);
						o += st->off;
						/* fallthrough */
					case PN_OP_GATHER_REDUCE:
					case PN_OP_DIRECT_REDUCE:
					case PN_OP_COPY:
						for (e = o; e < o + c; e++)
							w[e]++;
						break;
					case PN_OP_ALLGATHER:
					case PN_OP_DIRECT_GATHER:
						for (g = 0; g < 2; g++) {
							if (g == st->shard)
								continue;
							pn_sched_shard(st->count, 2, g, &so, &sc);
							for (e = st->off + so; e < st->off + so + sc; e++)
								w[e]++;
						}
						break;
					default:
						break;
					}
				}
				for (e = 0; w && e < n; e++)
					if (w[e] != 1)
						bad = 1;
				if (bad) {
					if (fails++ < 10)
						printf("#   %s count=%zu rank %d: scratch or an element "
						       "not written once\n", pn_algo_name(algos[a]), n, r);
					unit_cur++;
				}
				free(w);
				pn_sched_release(&s);
			}
}

int main(void)
{
	RUN(ring);
	RUN(simple_ring);
	RUN(one_shot_fifo);
	RUN(one_shot_direct);
	RUN(two_shot_fifo);
	RUN(two_shot_direct);
	RUN(hierarchical);
	RUN(multiring);
	RUN(hierarchical_needs_equal_nodes);
	RUN(steps_fit_the_fifo);
	RUN(algo_names);
	RUN(group_ring_and_allgather);
	RUN(group_errors);
	RUN(inplace_writes_once_no_scratch);
	return unit_done();
}
