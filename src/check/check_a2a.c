/* SPDX-License-Identifier: MIT */
/*
 * penny check's alltoall (pn_check_alltoall): across the job's nodes, the
 * traffic of an all-to-all crosses rails, which no rail-aligned allreduce
 * does: a node whose spine uplinks are degraded shows here.
 *
 * Every rank of the job, in host memory, over the engine's transports
 * (--transport, else probed: verbs where RDMA works, else tcp), each rank's
 * verbs connections bound to its rail NIC (the NIC nearest its GPU, else
 * NIC <local rank> of -d or the topology):
 *   1. the job's all-to-all, alltoall.size bytes from every rank in all
 *      (row "job": busbw by nccl-tests' factor, against alltoall.min-busbw
 *      or a baseline; any wrong value FAILs);
 *   2. the pairs: the nodes meet in the rounds of a round-robin tournament
 *      (pn_a2a_partner), the ranks of two nodes in shifts (pn_a2a_lane), so
 *      each sub-round is a perfect matching and every two ranks of
 *      different nodes exchange alltoall.size bytes each way, alone on
 *      their link: one warm-up exchange (its values checked), then
 *      alltoall.iters exchanges (10; --quick: half) in 5 timed blocks, the
 *      median block.  Each lane is
 *      judged against the larger of the config's alltoall.min-gbps, a
 *      baseline or the topology (over verbs: the slower NIC's rate x
 *      alltoall.efficiency) and the job's median of its link kind (leaf,
 *      spine) less alltoall.pair-margin.  Rows: per node "pairs" (its
 *      slowest lane, the nodes of its lanes below the bar), and the job's
 *      "slowest-pair", naming the two nodes, ranks, NICs and the link.
 */
#define _GNU_SOURCE
#include "check/check_a2a.h"
#include "check/check_net.h"
#include "check/check_ranks.h"
#include "check/check_row.h"

#include "base/log.h"
#include "base/timing.h"
#include "base/util.h"
#include "base/verdict.h"
#include "engine/boot.h"
#include "engine/coll.h"
#include "engine/collrun.h"
#include "engine/comm.h"
#include "node/sysfs.h"
#include "node/topo.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK "alltoall"
#define A2A_MAGIC 0x504e4133u	/* "PNA3": struct a2a_sum with nfail_nodes */
#define A2A_FAILNODES 4

/* ------------------------------------------------------------ pure parts */

int pn_a2a_rounds(int nnodes)
{
	return nnodes < 2 ? 0 : nnodes % 2 ? nnodes : nnodes - 1;
}

int pn_a2a_partner(int nnodes, int round, int node)
{
	int m = nnodes + nnodes % 2, p;	/* an odd count plays a ghost: its partner sits out */

	if (nnodes < 2 || round < 0 || round >= pn_a2a_rounds(nnodes) || node < 0 || node >= nnodes)
		return -1;
	if (node == m - 1)
		p = round;
	else {
		p = ((2 * round - node) % (m - 1) + (m - 1)) % (m - 1);
		if (p == node)
			p = m - 1;
	}
	return p < nnodes ? p : -1;
}

int pn_a2a_shifts(int lme, int lpeer)
{
	return lme < 1 || lpeer < 1 ? 0 : PN_MAX(lme, lpeer);
}

int pn_a2a_lane(int me, int partner, int i, int s, int lme, int lpeer)
{
	int l = pn_a2a_shifts(lme, lpeer), j;

	if (!l || me == partner || i < 0 || i >= lme || s < 0 || s >= l)
		return -1;
	j = me < partner ? (i + s) % l : ((i - s) % l + l) % l;
	return j < lpeer ? j : -1;
}

int pn_a2a_link(int rail_a, int rail_b)
{
	return rail_a < 0 || rail_b < 0 ? PN_A2A_NET : rail_a == rail_b ? PN_A2A_LEAF : PN_A2A_SPINE;
}

void pn_a2a_link_name(int rail_a, int rail_b, char *out, size_t len)
{
	switch (pn_a2a_link(rail_a, rail_b)) {
	case PN_A2A_LEAF:
		snprintf(out, len, "rail %d (leaf)", rail_a);
		break;
	case PN_A2A_SPINE:
		snprintf(out, len, "spine (rail %d to rail %d)", rail_a, rail_b);
		break;
	default:
		snprintf(out, len, "network (rails unknown)");
	}
}

int pn_a2a_slowest(const struct pn_a2a_lane *l, int n, int node)
{
	int i, best = -1, barred = 0;
	double key = 0, k;

	for (i = 0; i < n; i++)
		barred |= l[i].bar > 0 && (node < 0 || l[i].node == node || l[i].peer_node == node);
	for (i = 0; i < n; i++) {
		if (node >= 0 && l[i].node != node && l[i].peer_node != node)
			continue;
		if (l[i].rank < 0 || (barred && !(l[i].bar > 0)))
			continue;
		k = barred ? l[i].gbps / l[i].bar : l[i].gbps;
		if (best < 0 || k < key) {
			best = i;
			key = k;
		}
	}
	return best;
}

double pn_a2a_topo_expect(const char *nic_a, double rate_a, const char *nic_b, double rate_b,
			  int verbs, double eff, char *src, size_t len)
{
	int a_slower = rate_a <= rate_b;

	src[0] = 0;
	if (!verbs || !(rate_a > 0) || !(rate_b > 0) || !(eff > 0))
		return 0;
	snprintf(src, len, "topology: %s %.4g Gb/s x %.3g%%", a_slower ? nic_a : nic_b,
		 a_slower ? rate_a : rate_b, eff * 100);
	return (a_slower ? rate_a : rate_b) * eff;
}

double pn_a2a_bar(double exp, const char *esrc, double median, int npairs, double margin,
		  char *src, size_t len)
{
	double m = median > 0 && npairs >= 2 ? median * (1 - margin) : 0;

	src[0] = 0;
	if (!(exp > 0) && !(m > 0))
		return 0;
	if (exp >= m) {
		snprintf(src, len, "%s", esrc);
		return exp;
	}
	snprintf(src, len, "job median %.4g Gb/s of %d pairs x %.3g%%", median, npairs,
		 (1 - margin) * 100);
	return m;
}

/* ------------------------------------------------------------ the run */

/* What each rank tells the others before the work: its rail NIC. */
struct a2a_info {
	uint32_t magic;
	int32_t rail;
	double rate;			/* Gb/s of its NIC's port, 0 unknown */
	char nic[64];			/* "mlx5_0/1", "" none */
};

/* After the work: its lanes' rates by link kind (up to A2A_Q of them, else
 * A2A_Q evenly spaced of the sorted rates), its all-to-all. */
#define A2A_Q 16
struct a2a_meas {
	uint32_t magic;
	int32_t n[PN_A2A_NLINKS], nq[PN_A2A_NLINKS];
	double q[PN_A2A_NLINKS][A2A_Q];
	double job_t, job_lo, job_hi;	/* seconds per all-to-all: median, fastest, slowest block */
	uint64_t job_wrong;
};

/* After judging: its slowest lane and the nodes of its lanes below the bar. */
struct a2a_sum {
	uint32_t magic;
	int32_t nlanes, nfail;
	char tp[16];			/* the worst lane's transport */
	uint64_t wrong;
	struct pn_a2a_lane worst;	/* worst.rank -1: no lane */
	double lo, hi;			/* the worst lane's slowest and fastest block, Gb/s */
	int32_t fail_node[A2A_FAILNODES];
	int32_t nfail_nodes;		/* the nodes of its lanes below the bar, all counted */
	char src[PN_VERDICT_SOURCE];
};

struct a2a_run {
	struct pn_check *c;
	int rank, nranks, nnodes;
	int *node_of, *local_of, *first, *count, *by_node; /* by_node[first[k] + i]: local i of node k */
	struct a2a_info *info;		/* every rank's */
	char bind[80];			/* "dev:port" this rank's verbs connections use, "" default */
	size_t bytes;			/* per exchange, each way */
	int iters;			/* timed exchanges per lane (over PN_TIMING_BLOCKS blocks) */
	struct pn_comm *comm;
	struct pn_coll co;
	uint32_t *sbuf, *rbuf;
	struct pn_a2a_lane *lanes;	/* this rank's */
	double *lo, *hi;		/* per lane: slowest and fastest block, Gb/s */
	const char **tp;		/* per lane: the transport */
	uint64_t wrong;			/* in the lanes' checked exchanges */
	int nlanes;
	double job_t, job_lo, job_hi;
	uint64_t job_wrong;
};

static uint32_t val(int from, int to, size_t i)
{
	return (uint32_t)from * 2654435761u ^ (uint32_t)to * 40503u ^ (uint32_t)i;
}

/* pn_comm_cfg.verbs_port: this rank's rail NIC towards other nodes. */
static int a2a_port(void *arg, int peer, int chan, char *out, size_t len)
{
	const struct a2a_run *st = arg;

	if (!st->bind[0] || peer < 0 || peer >= st->nranks ||
	    st->node_of[peer] == st->node_of[st->rank])
		return 0;
	snprintf(out, len, "%s", st->bind);
	return 1;
}

/* This rank's rail NIC: the one nearest its GPU, else NIC <local rank mod n>. */
static int a2a_mine(struct a2a_run *st, struct a2a_info *me)
{
	struct pn_check *c = st->c;
	struct pn_netnic nics[PN_NET_MAX];
	int n = pn_checknet_nics(c, nics, PN_NET_MAX, NULL), local = st->local_of[st->rank], gpu = -1, i,
	    k = -1;

	memset(me, 0, sizeof(*me));
	me->magic = A2A_MAGIC;
	me->rail = -1;
	if (n < 0)
		return n;
	if (!n)
		return 0;
	if (c->topo && c->topo->ngpus > 0)
		gpu = pn_ranks_visible(getenv("CUDA_VISIBLE_DEVICES"), local, c->topo->ngpus);
	for (i = 0; gpu >= 0 && i < n && k < 0; i++)
		if (nics[i].gpu == gpu)
			k = i;
	if (k < 0)
		k = local % n;
	me->rail = nics[k].rail;
	me->rate = nics[k].rate;
	snprintf(me->nic, sizeof(me->nic), "%s", nics[k].name);
	/* a captured tree's NICs are another machine's: the engine's default then */
	if (nics[k].usable && pn_sysfs_is_live())
		snprintf(st->bind, sizeof(st->bind), "%s:%d", nics[k].dev, nics[k].port);
	return 0;
}

/* Ranks by node: node_of, local_of, and each node's ranks in order. */
static int a2a_tables(struct a2a_run *st)
{
	struct pn_boot *b = st->c->boot;
	int r, k;

	st->node_of = calloc((size_t)st->nranks, sizeof(int));
	st->local_of = calloc((size_t)st->nranks, sizeof(int));
	st->by_node = calloc((size_t)st->nranks, sizeof(int));
	st->first = calloc((size_t)st->nnodes + 1, sizeof(int));
	st->count = calloc((size_t)st->nnodes + 1, sizeof(int));
	st->info = calloc((size_t)st->nranks, sizeof(*st->info));
	st->lanes = calloc((size_t)st->nranks, sizeof(*st->lanes));
	st->lo = calloc((size_t)st->nranks, sizeof(double));
	st->hi = calloc((size_t)st->nranks, sizeof(double));
	st->tp = calloc((size_t)st->nranks, sizeof(*st->tp));
	if (!st->node_of || !st->local_of || !st->by_node || !st->first || !st->count ||
	    !st->info || !st->lanes || !st->lo || !st->hi || !st->tp)
		return pn_err(-ENOMEM, "out of memory");
	for (r = 0; r < st->nranks; r++) {
		k = pn_boot_node(b, r);
		if (k < 0 || k >= st->nnodes)
			return pn_err(-EPROTO, "rank %d is on no node of the job", r);
		st->node_of[r] = k;
		st->local_of[r] = st->count[k]++;
	}
	for (k = 0; k < st->nnodes; k++)
		st->first[k + 1] = st->first[k] + st->count[k];
	for (r = 0; r < st->nranks; r++)
		st->by_node[st->first[st->node_of[r]] + st->local_of[r]] = r;
	return 0;
}

/* Seconds of one block of calls exchanges with peer (pn_sendrecv), or of
 * the job's all-to-all (peer -1). */
static int a2a_block(struct a2a_run *st, int peer, size_t count, int calls, double *secs)
{
	struct pn_coll_args a = { .kind = PN_COLL_ALLTOALL, .sendbuf = st->sbuf,
				  .recvbuf = st->rbuf, .count = count, .dtype = PN_UINT32,
				  .op = PN_SUM, .algo = PN_CALGO_AUTO };
	double t0 = pn_now();
	int i, ret = 0;

	for (i = 0; !ret && i < calls; i++)
		ret = peer < 0 ? pn_coll_run(&st->co, &a)
			       : pn_sendrecv(&st->co, st->sbuf, count, peer, st->rbuf, count, peer,
					     PN_UINT32);
	*secs = pn_now() - t0;
	return ret;
}

/* A warm-up call with its values checked, then the timed blocks: the median
 * seconds per call and the fastest and slowest block. */
static int a2a_timed(struct a2a_run *st, int peer, size_t count, struct pn_timing_stat *per,
		     uint64_t *wrong)
{
	double secs[PN_TIMING_BLOCKS];
	size_t i, n = peer < 0 ? count * (size_t)st->nranks : count, per_peer = count;
	int calls = pn_timing_calls((uint64_t)n * 4, st->iters, PN_TIMING_BLOCKS), b, ret, from;

	for (i = 0; i < n; i++) {
		int to = peer < 0 ? (int)(i / per_peer) : peer;

		st->sbuf[i] = val(st->rank, to, i % per_peer);
		st->rbuf[i] = 0;
	}
	ret = a2a_block(st, peer, count, 1, &secs[0]);
	for (i = 0; !ret && i < n; i++) {
		from = peer < 0 ? (int)(i / per_peer) : peer;
		*wrong += st->rbuf[i] != val(from, st->rank, i % per_peer);
	}
	for (b = 0; !ret && b < PN_TIMING_BLOCKS; b++) {
		ret = a2a_block(st, peer, count, calls, &secs[b]);
		secs[b] /= calls;
	}
	if (!ret)
		pn_timing_stat(secs, PN_TIMING_BLOCKS, per);
	return ret;
}

/* The job's all-to-all, then every lane of this rank, round by round. */
static int a2a_measure(struct a2a_run *st)
{
	struct pn_check *c = st->c;
	size_t count = PN_MAX((size_t)1, st->bytes / 4 / (size_t)st->nranks);
	int me = st->node_of[st->rank], i = st->local_of[st->rank], r, s, p, j, peer, ret;
	struct pn_timing_stat t;
	double bits = (double)st->bytes * 8;

	pn_check_progress(c, CHECK, "the job's all-to-all: %d ranks, %zu bytes each", st->nranks,
			  count * 4 * (size_t)st->nranks);
	ret = a2a_timed(st, -1, count, &t, &st->job_wrong);
	if (ret)
		return ret;
	st->job_t = t.median;
	st->job_lo = t.min;
	st->job_hi = t.max;
	pn_check_progress(c, CHECK, "%d rounds of node pairs, %zu bytes each way",
			  pn_a2a_rounds(st->nnodes), st->bytes);
	for (r = 0; r < pn_a2a_rounds(st->nnodes); r++) {
		p = pn_a2a_partner(st->nnodes, r, me);
		if (p < 0)
			continue;
		for (s = 0; s < pn_a2a_shifts(st->count[me], st->count[p]); s++) {
			struct pn_a2a_lane *l = &st->lanes[st->nlanes];

			j = pn_a2a_lane(me, p, i, s, st->count[me], st->count[p]);
			if (j < 0)
				continue;
			peer = st->by_node[st->first[p] + j];
			ret = a2a_timed(st, peer, st->bytes / 4, &t, &st->wrong);
			if (ret)
				return ret;
			*l = (struct pn_a2a_lane){ .rank = st->rank, .node = me,
						   .rail = st->info[st->rank].rail, .peer = peer,
						   .peer_node = p, .peer_rail = st->info[peer].rail,
						   .gbps = bits / t.median / 1e9 };
			st->lo[st->nlanes] = bits / t.max / 1e9;
			st->hi[st->nlanes] = bits / t.min / 1e9;
			st->tp[st->nlanes] = pn_comm_transport_name(st->comm, peer);
			st->nlanes++;
		}
	}
	return 0;
}

static double a2a_num(const struct pn_check *c, const char *key, double dflt)
{
	return pn_checknet_num(c, key, dflt, NULL);
}

/* Each lane's bar; this rank's summary.  0 or -ENOMEM. */
static int a2a_judge(struct a2a_run *st, const struct a2a_meas *all, struct a2a_sum *sum)
{
	struct pn_check *c = st->c;
	double eff = a2a_num(c, "alltoall.efficiency", 0.5);
	double margin = a2a_num(c, "alltoall.pair-margin", 0.5), med[PN_A2A_NLINKS];
	double *v = calloc((size_t)st->nranks * A2A_Q + 1, sizeof(double));
	char tsrc[PN_VERDICT_SOURCE], esrc[PN_VERDICT_SOURCE];
	char (*src)[PN_VERDICT_SOURCE] = calloc((size_t)st->nlanes + 1, sizeof(*src));
	char *met = calloc((size_t)st->nnodes + 1, 1);
	int npairs[PN_A2A_NLINKS], k, r, m, i, w, nf;

	memset(sum, 0, sizeof(*sum));
	if (!v || !src || !met) {
		free(v);
		free(src);
		free(met);
		return pn_err(-ENOMEM, "out of memory");
	}
	sum->magic = A2A_MAGIC;
	sum->worst.rank = -1;
	sum->nlanes = st->nlanes;
	sum->wrong = st->wrong;
	for (k = 0; k < PN_A2A_NLINKS; k++) {
		struct pn_timing_stat ts;

		npairs[k] = 0;
		med[k] = 0;
		for (r = m = 0; r < st->nranks; r++) {
			for (i = 0; i < all[r].nq[k] && i < A2A_Q; i++)
				v[m++] = all[r].q[k][i];
			npairs[k] += all[r].n[k];
		}
		/* every lane was measured from both ends */
		npairs[k] /= 2;
		if (m) {
			pn_timing_stat(v, (size_t)m, &ts);
			med[k] = ts.median;
		}
	}
	free(v);
	for (w = 0; w < A2A_FAILNODES; w++)
		sum->fail_node[w] = -1;
	for (i = 0, nf = 0; i < st->nlanes; i++) {
		struct pn_a2a_lane *l = &st->lanes[i];
		const struct a2a_info *a = &st->info[l->rank], *b = &st->info[l->peer];
		double topo, exp;

		k = pn_a2a_link(l->rail, l->peer_rail);
		topo = pn_a2a_topo_expect(a->nic, a->rate, b->nic, b->rate,
					  !strcmp(st->tp[i], "verbs"), eff, tsrc, sizeof(tsrc));
		exp = pn_check_expect(c, CHECK, "pairs", "alltoall.min-gbps", topo, tsrc, esrc,
				      sizeof(esrc));
		l->bar = pn_a2a_bar(exp, esrc, med[k], npairs[k], margin, src[i], sizeof(src[i]));
		if (!(l->bar > 0 && l->gbps < l->bar))
			continue;
		sum->nfail++;
		if (l->peer_node >= 0 && l->peer_node < st->nnodes && !met[l->peer_node]) {
			met[l->peer_node] = 1;
			sum->nfail_nodes++;
		}
		for (w = 0; w < nf && sum->fail_node[w] != l->peer_node; w++)
			;
		if (w == nf && nf < A2A_FAILNODES)
			sum->fail_node[nf++] = l->peer_node;
	}
	free(met);
	i = pn_a2a_slowest(st->lanes, st->nlanes, -1);
	if (i >= 0) {
		sum->worst = st->lanes[i];
		sum->lo = st->lo[i];
		sum->hi = st->hi[i];
		snprintf(sum->tp, sizeof(sum->tp), "%s", st->tp[i]);
		snprintf(sum->src, sizeof(sum->src), "%s", src[i]);
	}
	free(src);
	return 0;
}

static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* This rank's rates by link kind, for the job's medians. */
static void a2a_medians(const struct a2a_run *st, struct a2a_meas *m)
{
	double *v = calloc((size_t)st->nlanes + 1, sizeof(double));
	int k, i, n;

	memset(m, 0, sizeof(*m));
	m->magic = A2A_MAGIC;
	m->job_t = st->job_t;
	m->job_lo = st->job_lo;
	m->job_hi = st->job_hi;
	m->job_wrong = st->job_wrong;
	for (k = 0; v && k < PN_A2A_NLINKS; k++) {
		for (i = n = 0; i < st->nlanes; i++)
			if (pn_a2a_link(st->lanes[i].rail, st->lanes[i].peer_rail) == k)
				v[n++] = st->lanes[i].gbps;
		qsort(v, (size_t)n, sizeof(double), cmp_dbl);
		m->n[k] = n;
		m->nq[k] = PN_MIN(n, A2A_Q);
		for (i = 0; i < m->nq[k]; i++)
			m->q[k][i] = n <= A2A_Q ? v[i] : v[(size_t)(2 * i + 1) * (size_t)n / (2 * A2A_Q)];
	}
	free(v);
}

/*
 * "n1-n2: rank 0 (mlx5_0/1) - rank 3 (mlx5_0/1) over rail 0 (leaf)", the
 * node names at most width bytes each, a longer one cut visibly ("...";
 * node names of 63 are kept whole where the detail holds them: two names
 * cut at 30 bytes were often one, "rack07-node01" and "-node02").
 */
static void lane_name(const struct a2a_run *st, const struct pn_a2a_lane *l, int width, char *out,
		      size_t len)
{
	const struct a2a_info *x = &st->info[l->rank], *y = &st->info[l->peer];
	char link[64], a[PN_VERDICT_NAME], b[PN_VERDICT_NAME];

	pn_a2a_link_name(l->rail, l->peer_rail, link, sizeof(link));
	pn_check_row_name(a, (size_t)PN_MIN(width + 1, PN_VERDICT_NAME),
			  pn_check_node_of(st->c, l->rank));
	pn_check_row_name(b, (size_t)PN_MIN(width + 1, PN_VERDICT_NAME),
			  pn_check_node_of(st->c, l->peer));
	snprintf(out, len, "%s-%s: rank %d%s%.20s%s - rank %d%s%.20s%s over %s", a, b, l->rank,
		 x->nic[0] ? " (" : "", x->nic, x->nic[0] ? ")" : "", l->peer,
		 y->nic[0] ? " (" : "", y->nic, y->nic[0] ? ")" : "", link);
}

/*
 * The detail of a row: its slowest lane l (the node names whole where the
 * detail holds them, else as long as it does), then the nodes below, as
 * many as fit whole, and how many more there are: those left out of below
 * ("N more"; "at least N more" where a rank's list was full).
 */
static void row_detail(const struct a2a_run *st, const struct pn_a2a_lane *l, const char *tp,
		       double lo, double hi, int fail, int lanes, uint64_t wrong, const char *below,
		       int more, int at_least, char *detail, size_t len)
{
	const char *least = at_least ? "at least " : "", *p;
	char name[PN_VERDICT_DETAIL];
	int width, n = 0, k, total = more;
	size_t at, tail = 0;

	for (p = below; *p; total++)
		p = strstr(p, ", ") ? strstr(p, ", ") + 2 : p + strlen(p);
	/* the least room the nodes below take: ": with N nodes" */
	if (!wrong && total)
		tail = (size_t)snprintf(NULL, 0, ": with %s%d nodes", least, total);
	for (width = PN_VERDICT_NAME - 1; width >= 16; width -= 8) {
		lane_name(st, l, width, name, sizeof(name));
		if (wrong)
			n = snprintf(detail, len, "%llu wrong values received in the pair exchanges; "
				     "slowest %s", (unsigned long long)wrong, name);
		else
			n = snprintf(detail, len, "slowest %s, %s, blocks %.3g-%.3g Gb/s; %d of %d "
				     "pairs below", name, tp, lo, hi, fail, lanes);
		if (n >= 0 && (size_t)n + tail < len)
			break;
	}
	if (!tail || n < 0 || (size_t)n + tail >= len)
		return;
	at = (size_t)n;
	/* the names that fit whole, then how many did not */
	snprintf(detail + at, len - at, ": with ");
	at += strlen(detail + at);
	for (k = 0; *below; k++) {
		const char *end = strstr(below, ", ");
		size_t w = end ? (size_t)(end - below) : strlen(below);
		int left = total - k - 1;
		size_t need = left ? (size_t)snprintf(NULL, 0, " and %s%d more", least, left) : 0;

		if (at + (k ? 2 : 0) + w + need >= len)
			break;
		snprintf(detail + at, len - at, "%s%.*s", k ? ", " : "", (int)w, below);
		at += strlen(detail + at);
		below = end ? end + 2 : below + w;
	}
	if (!k && *below) {
		/* not even one whole: the first as long as fits, "...", and the count */
		size_t w = strstr(below, ", ") ? (size_t)(strstr(below, ", ") - below) : strlen(below);
		size_t need = total > 1 ? (size_t)snprintf(NULL, 0, " and %s%d more", least,
							   total - 1) : 0;

		if (at + need + 4 < len) {
			w = PN_MIN(w, len - at - need - 4);
			snprintf(detail + at, len - at, "%.*s...", (int)w, below);
			at += strlen(detail + at);
			k = 1;
		}
	}
	more = total - k;
	if (more && k)
		snprintf(detail + at, len - at, " and %s%d more", least, more);
	else if (more)
		snprintf(detail + at, len - at, "%s%d node%s", least, more, more == 1 ? "" : "s");
}

/* One row of the slowest lane of sums (of node, or all with node -1). */
/*
 * The nodes that are slow themselves: more than half of their lanes below
 * the bar (a node whose NIC or uplinks are degraded is slow with every
 * other).  A node below the bar only with such nodes is not failed for
 * them: a health gate that drains every node of a job beside one slow node
 * drains the healthy ones.  A link slow between two nodes that are not
 * (tc on one veth, a bad cable) still fails both ends, which the link
 * serves.  With two nodes every lane is between them: both are.
 */
static char *a2a_slow_nodes(const struct a2a_run *st, const struct a2a_sum *sums)
{
	int *f = calloc((size_t)st->nnodes + 1, sizeof(int));
	int *n = calloc((size_t)st->nnodes + 1, sizeof(int));
	char *slow = calloc((size_t)st->nnodes + 1, 1);
	int r, k;

	for (r = 0; f && n && slow && r < st->nranks; r++) {
		k = st->node_of[r];
		if (sums[r].magic != A2A_MAGIC || k < 0 || k >= st->nnodes)
			continue;
		f[k] += sums[r].nfail;
		n[k] += sums[r].nlanes;
	}
	for (k = 0; f && n && slow && k < st->nnodes; k++)
		slow[k] = n[k] > 0 && 2 * f[k] > n[k];
	free(f);
	free(n);
	if (!f || !n) {
		free(slow);
		return NULL;
	}
	return slow;
}

static int a2a_row(struct a2a_run *st, const struct a2a_sum *sums, int node, const char *rnode,
		   const char *target)
{
	struct pn_a2a_lane *l = calloc((size_t)st->nranks + 1, sizeof(*l));
	char detail[PN_VERDICT_DETAIL], below[PN_VERDICT_DETAIL] = "";
	int r, n = 0, w, fail = 0, lanes = 0, k, more = 0, nbelow = 0, maxr = 0, cut = 0, nr = 0;
	uint64_t wrong = 0;
	const struct a2a_sum *s;
	int *idx = calloc((size_t)st->nranks + 1, sizeof(int));
	char *seen = calloc((size_t)st->nnodes + 1, 1);
	char *slow = node >= 0 ? a2a_slow_nodes(st, sums) : NULL;
	/* below the bar only with nodes slow themselves (every such node seen) */
	int others_only = node >= 0 && slow && !slow[node];

	if (!l || !idx || !seen || (node >= 0 && !slow)) {
		free(l);
		free(idx);
		free(seen);
		free(slow);
		return pn_err(-ENOMEM, "out of memory");
	}
	for (r = 0; r < st->nranks; r++) {
		s = &sums[r];
		if (s->magic != A2A_MAGIC || (node >= 0 && st->node_of[r] != node))
			continue;
		fail += s->nfail;
		lanes += s->nlanes;
		wrong += s->wrong;
		/* a full list left nodes out: counted, not named */
		if (node >= 0 && s->nfail_nodes > A2A_FAILNODES)
			others_only = 0, cut = 1;
		maxr = PN_MAX(maxr, (int)s->nfail_nodes);
		nr += s->nfail_nodes > 0;
		for (w = 0; node >= 0 && w < A2A_FAILNODES; w++) {
			int f = s->fail_node[w];

			if (f < 0 || f >= st->nnodes || seen[f])
				continue;
			seen[f] = 1;
			nbelow++;
			others_only &= slow[f];
			/* room for one more name and its mark: else counted */
			if (strlen(below) + PN_VERDICT_NAME + 24 >= sizeof(below)) {
				more++;
				continue;
			}
			snprintf(below + strlen(below), sizeof(below) - strlen(below), "%s%.63s%s",
				 below[0] ? ", " : "",
				 pn_check_node_of(st->c, st->by_node[st->first[f]]),
				 slow[f] && !slow[node] ? " (slow with most)" : "");
		}
		if (s->worst.rank >= 0) {
			idx[n] = r;
			l[n++] = s->worst;
		}
	}
	free(seen);
	free(slow);
	/* a rank's full list: its own count of nodes (one rank's is the node's) */
	if (cut && maxr > nbelow)
		more += maxr - nbelow;
	cut = cut && nr > 1;
	k = pn_a2a_slowest(l, n, -1);
	if (k < 0) {
		free(l);
		free(idx);
		return pn_check_add(st->c, &(struct pn_verdict_in){
			.check = CHECK, .node = rnode, .target = target, .verdict = PN_SKIP,
			.detail = "no pair of ranks of different nodes measured" });
	}
	s = &sums[idx[k]];
	if (node < 0)
		lanes /= 2, fail /= 2;	/* the job's lanes, each seen from both ends */
	row_detail(st, &l[k], s->tp, s->lo, s->hi, fail, lanes, wrong, below, more, cut, detail,
		   sizeof(detail));
	r = pn_check_add(st->c, &(struct pn_verdict_in){
		.check = CHECK, .node = rnode, .target = target,
		.verdict = wrong || (fail && !others_only) ? PN_FAIL : PN_PASS,
		.measured = PN_VNUM(l[k].gbps),
		.expected = l[k].bar > 0 ? PN_VNUM(l[k].bar) : PN_VTEXT("none"), .unit = "Gb/s",
		.source = l[k].bar > 0 ? s->src : "none: no expectation (alltoall.min-gbps or "
						   "--baseline sets one)",
		.detail = detail });
	free(l);
	free(idx);
	return r;
}

/* Rank 0: the job's all-to-all from every rank's timing (the slowest rank's median). */
static int a2a_job_row(struct a2a_run *st, const struct a2a_meas *all, double secs)
{
	struct pn_check *c = st->c;
	char src[PN_VERDICT_SOURCE], detail[PN_VERDICT_DETAIL];
	double t = 0, lo = 0, hi = 0, busbw, exp, algo;
	size_t count = PN_MAX((size_t)1, st->bytes / 4 / (size_t)st->nranks);
	uint64_t wrong = 0;
	int r, ok;

	for (r = 0; r < st->nranks; r++) {
		t = PN_MAX(t, all[r].job_t);
		lo = PN_MAX(lo, all[r].job_lo);
		hi = PN_MAX(hi, all[r].job_hi);
		wrong += all[r].job_wrong;
	}
	algo = pn_coll_algbw_bytes(PN_COLL_ALLTOALL, count, 4, st->nranks);
	busbw = t > 0 ? algo / t / 1e9 * pn_coll_bus_factor(PN_COLL_ALLTOALL, st->nranks) : 0;
	exp = pn_check_expect(c, CHECK, "job", "alltoall.min-busbw", 0, "", src, sizeof(src));
	if (!(exp > 0))
		snprintf(src, sizeof(src), "none: measured (alltoall.min-busbw or --baseline sets "
			 "one; the pairs are judged)");
	ok = !wrong && (!(exp > 0) || busbw >= exp);
	if (wrong)
		snprintf(detail, sizeof(detail), "%llu wrong values (%d ranks on %d nodes)",
			 (unsigned long long)wrong, st->nranks, st->nnodes);
	else
		snprintf(detail, sizeof(detail), "%d ranks on %d nodes, %.0f B per rank, %.3g us per "
			 "call (blocks %.3g-%.3g), 0 wrong values", st->nranks, st->nnodes, algo,
			 t * 1e6, lo * 1e6, hi * 1e6);
	return pn_check_add(c, &(struct pn_verdict_in){
		.check = CHECK, .node = "job", .target = "job", .verdict = ok ? PN_PASS : PN_FAIL,
		.measured = PN_VNUM(busbw), .expected = exp > 0 ? PN_VNUM(exp) : PN_VTEXT("none"),
		.unit = "GB/s", .source = src, .detail = detail, .seconds = secs });
}

static void a2a_job_result(struct pn_check *c, enum pn_verdict v, const char *why)
{
	if (c->rank == 0)
		pn_check_add(c, &(struct pn_verdict_in){ .check = CHECK, .node = "job",
							 .target = "job", .verdict = v,
							 .detail = why });
}

static void a2a_free(struct a2a_run *st)
{
	if (st->co.comm)
		pn_coll_release(&st->co);
	pn_comm_free(st->comm);
	free(st->node_of);
	free(st->local_of);
	free(st->by_node);
	free(st->first);
	free(st->count);
	free(st->info);
	free(st->lanes);
	free(st->lo);
	free(st->hi);
	free(st->tp);
	free(st->sbuf);
	free(st->rbuf);
}

int pn_check_alltoall(struct pn_check *c)
{
	struct a2a_run st;
	struct a2a_info me;
	struct a2a_meas mine, *meas = NULL;
	struct a2a_sum sum, *sums = NULL;
	char why[PN_VERDICT_DETAIL];
	double t0 = pn_now();
	size_t n;
	int ret, code, first = -1;

	if (!c->boot || c->nnodes < 2) {
		if (c->node_leader)
			pn_check_add(c, &(struct pn_verdict_in){
				.check = CHECK, .node = c->node, .target = "job", .verdict = PN_SKIP,
				.detail = "needs at least 2 nodes under a launcher (within a node "
					  "an all-to-all crosses no network link)" });
		return 0;
	}
	memset(&st, 0, sizeof(st));
	st.c = c;
	st.rank = c->rank;
	st.nranks = c->nranks;
	st.nnodes = c->nnodes;
	st.bytes = (size_t)a2a_num(c, "alltoall.size", 1 << 20) / 4 * 4;
	if (c->quick)
		st.bytes = PN_MAX((size_t)4096, st.bytes / 4 / 4 * 4);
	st.iters = (int)a2a_num(c, "alltoall.iters", 2 * PN_TIMING_BLOCKS);
	if (c->quick)
		st.iters = PN_MAX(PN_TIMING_BLOCKS, st.iters / 2);
	n = PN_MAX(st.bytes / 4, PN_MAX((size_t)1, st.bytes / 4 / (size_t)st.nranks) *
				 (size_t)st.nranks);
	code = a2a_tables(&st);
	if (!code)
		code = a2a_mine(&st, &me);
	if (!code) {
		st.sbuf = calloc(n, 4);
		st.rbuf = calloc(n, 4);
		if (!st.sbuf || !st.rbuf)
			code = pn_err(-ENOMEM, "out of memory");
	}
	ret = pn_boot_agree_err(c->boot, code, 1, NULL);
	if (!ret)
		ret = pn_boot_allgather(c->boot, &me, st.info, sizeof(me));
	if (ret)
		goto out;
	{
		/* a captured tree's RDMA ports are another machine's: not probed */
		struct pn_comm_cfg cc = { .transport = c->transport, .nchannels = 1,
					  .verbs_port = a2a_port, .verbs_port_arg = &st,
					  .ib_hca = c->ib_hca,
					  .ib_disable = c->ib_disable || !pn_sysfs_is_live() };

		code = pn_comm_init(&st.comm, c->boot, &cc);
		if (!code)
			code = pn_coll_init(&st.co, st.comm, NULL);
	}
	ret = pn_boot_agree_err(c->boot, code, 1, &first);
	if (!ret)
		ret = pn_boot_agree_err(c->boot, a2a_measure(&st), 1, &first);
	if (ret) {
		/* the agreement itself failed (a rank lost): the job cannot go on */
		if (ret == -ENOMEM || first < 0)
			goto out;
		/* the rank's message names the rank it waited for */
		snprintf(why, sizeof(why), "the all-to-all did not run: %s", pn_errmsg(ret));
		a2a_job_result(c, PN_FAIL, why);
		ret = 0;
		goto out;
	}
	/* every rank done before any closes its connections */
	a2a_medians(&st, &mine);
	meas = calloc((size_t)st.nranks, sizeof(*meas));
	sums = calloc((size_t)st.nranks, sizeof(*sums));
	ret = meas && sums ? 0 : pn_err(-ENOMEM, "out of memory");
	ret = pn_boot_agree_err(c->boot, ret, 1, NULL);
	if (!ret)
		ret = pn_boot_allgather(c->boot, &mine, meas, sizeof(mine));
	if (ret)
		goto out;
	ret = pn_boot_agree_err(c->boot, a2a_judge(&st, meas, &sum), 1, NULL);
	if (!ret)
		ret = pn_boot_allgather(c->boot, &sum, sums, sizeof(sum));
	if (ret)
		goto out;
	if (c->rank == 0)
		ret = a2a_job_row(&st, meas, pn_now() - t0);
	if (!ret && c->node_leader)
		ret = a2a_row(&st, sums, c->node_index, c->node, "pairs");
	if (!ret && c->rank == 0)
		ret = a2a_row(&st, sums, -1, "job", "slowest-pair");
out:
	a2a_free(&st);
	free(meas);
	free(sums);
	return ret;
}
