/* SPDX-License-Identifier: MIT */
/*
 * Ring planner, checking: the predicted bandwidth and the limiting link of
 * a plan (pn_plan_analyze), and its violations of the rules of plan.h
 * (pn_plan_validate).
 */
#define _GNU_SOURCE
#include "plan/plan.h"
#include "plan/plan_int.h"

#include "base/log.h"
#include "base/util.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* -------------------------------------------------------------- analyse */

enum { RES_NVOUT, RES_NVIN, RES_PCOUT, RES_PCIN, RES_N };

static double nv_total(const struct pn_plan_layout *l, int g)
{
	int h, best = 0;

	for (h = 0; h < l->ngpus; h++)
		if (h != g && l->gg[g][h].cls == PN_PATH_NV && l->gg[g][h].nv > best)
			best = l->gg[g][h].nv;
	return best * PN_PLAN_NVLINK_GBS;
}

static double hop_ceiling(struct pn_plan_path pth, double pcie)
{
	switch (pth.cls) {
	case PN_PATH_X:
		return 1e12;
	case PN_PATH_NV:
		return pth.nv * PN_PLAN_NVLINK_GBS;
	case PN_PATH_PIX:
	case PN_PATH_PXB:
	case PN_PATH_PHB:
	case PN_PATH_NODE:
		return pcie;
	default:
		return PN_PLAN_SYS_GBS < pcie ? PN_PLAN_SYS_GBS : pcie;
	}
}

struct lim {
	double v;
	int node;
	const char *kind;	/* format piece */
	int a, b;		/* GPU/NIC indices */
	double cap;
	int users;
};

static void consider(struct lim *w, double cap, int users, int node, const char *kind, int a, int b)
{
	double v = users > 0 ? cap / users : cap;

	if (v < w->v) {
		w->v = v;
		w->node = node;
		w->kind = kind;
		w->a = a;
		w->b = b;
		w->cap = cap;
		w->users = users;
	}
}

static void describe(const struct pn_plan_model *m, const struct lim *w, char *buf, size_t len)
{
	const struct pn_plan_layout *l = &m->layouts[m->nodes[w->node].layout];
	const char *host = m->nodes[w->node].host;

	if (!strcmp(w->kind, "nic send") || !strcmp(w->kind, "nic recv"))
		snprintf(buf, len, "%s %s %s (rail %d, %g Gb/s)", host, l->nics[w->a].name,
			 w->kind + 4, l->nics[w->a].rail, l->nics[w->a].rate_gbps);
	else if (!strcmp(w->kind, "hop")) {
		char c[16];

		snprintf(buf, len, "%s %s->%s over %s", host, l->gpus[w->a].name, l->gpus[w->b].name,
			 pn_plan_path_name(l->gg[w->a][w->b], c, sizeof(c)));
	} else if (!strcmp(w->kind, "nichop")) {
		char c[16];

		snprintf(buf, len, "%s %s<->%s over %s", host, l->gpus[w->a].name,
			 l->nics[w->b].name,
			 pn_plan_path_name(l->gn[w->a * l->nnics + w->b], c, sizeof(c)));
	} else {
		snprintf(buf, len, "%s %s %s", host, l->gpus[w->a].name, w->kind);
	}
}

int pn_plan_analyze(struct pn_plan *p, double pcie)
{
	struct pn_plan_model *m = p->model;
	int N = m->nnodes, i, r, k, nh, tot = 0, *use = NULL;
	struct lim glob = { .v = 1e300 };

	if (pcie <= 0)
		pcie = PN_PLAN_PCIE_GBS;
	free(p->load_off);
	free(p->send);
	free(p->recv);
	p->load_off = malloc(sizeof(int) * ((size_t)N + 1));
	if (!p->load_off)
		return pn_err(-ENOMEM, "out of memory");
	for (i = 0; i < N; i++) {
		p->load_off[i] = tot;
		tot += m->layouts[m->nodes[i].layout].nnics;
	}
	p->load_off[N] = tot;
	p->send = calloc((size_t)tot + 1, sizeof(int));
	p->recv = calloc((size_t)tot + 1, sizeof(int));
	use = calloc((size_t)m->nranks * RES_N + 1, sizeof(int));
	if (!p->send || !p->recv || !use) {
		free(use);
		return pn_err(-ENOMEM, "out of memory");
	}
	/* count users of every resource */
	for (r = 0; r < p->nrings; r++) {
		const struct pn_plan_ring *ring = &p->rings[r];

		for (i = 0; i < ring->nseg; i++) {
			const struct pn_plan_seg *s = &ring->seg[i];
			const struct pn_plan_layout *l = &m->layouts[m->nodes[s->node].layout];
			int *u = use + (size_t)m->nodes[s->node].rank0 * RES_N;
			const int *g = ring->gpus + s->off;

			if (s->n < 1)
				continue;
			if (s->in_nic >= 0) {
				p->recv[p->load_off[s->node] + s->in_nic]++;
				u[g[0] * RES_N + RES_PCIN]++;
			}
			if (s->out_nic >= 0) {
				p->send[p->load_off[s->node] + s->out_nic]++;
				u[g[s->n - 1] * RES_N + RES_PCOUT]++;
			}
			nh = s->n - 1 + (N == 1 && s->in_nic < 0 && s->n > 1);
			for (k = 0; k < nh; k++) {
				int a = g[k], b = g[(k + 1) % s->n];

				if (l->gg[a][b].cls == PN_PATH_NV) {
					u[a * RES_N + RES_NVOUT]++;
					u[b * RES_N + RES_NVIN]++;
				} else {
					u[a * RES_N + RES_PCOUT]++;
					u[b * RES_N + RES_PCIN]++;
				}
			}
		}
	}
	/* per ring: the tightest resource it uses */
	p->busbw_gbs = 0;
	p->ring_gbs = p->nrings ? 1e300 : 0;
	for (r = 0; r < p->nrings; r++) {
		struct pn_plan_ring *ring = &p->rings[r];
		struct lim w = { .v = 1e300 };

		for (i = 0; i < ring->nseg; i++) {
			const struct pn_plan_seg *s = &ring->seg[i];
			const struct pn_plan_layout *l = &m->layouts[m->nodes[s->node].layout];
			const int *u = use + (size_t)m->nodes[s->node].rank0 * RES_N;
			const int *g = ring->gpus + s->off;
			int lo = p->load_off[s->node];

			if (s->n < 1)
				continue;
			if (s->in_nic >= 0) {
				const struct pn_plan_nic *n = &l->nics[s->in_nic];

				consider(&w, n->rate_gbps / 8, p->recv[lo + s->in_nic], s->node,
					 "nic recv", s->in_nic, 0);
				consider(&w, pcie, u[g[0] * RES_N + RES_PCIN], s->node, "PCIe in",
					 g[0], 0);
				consider(&w, hop_ceiling(l->gn[g[0] * l->nnics + s->in_nic], pcie), 1,
					 s->node, "nichop", g[0], s->in_nic);
			}
			if (s->out_nic >= 0) {
				const struct pn_plan_nic *n = &l->nics[s->out_nic];
				int e = g[s->n - 1];

				consider(&w, n->rate_gbps / 8, p->send[lo + s->out_nic], s->node,
					 "nic send", s->out_nic, 0);
				consider(&w, pcie, u[e * RES_N + RES_PCOUT], s->node, "PCIe out", e, 0);
				consider(&w, hop_ceiling(l->gn[e * l->nnics + s->out_nic], pcie), 1,
					 s->node, "nichop", e, s->out_nic);
			}
			nh = s->n - 1 + (N == 1 && s->in_nic < 0 && s->n > 1);
			for (k = 0; k < nh; k++) {
				int a = g[k], b = g[(k + 1) % s->n];

				if (l->gg[a][b].cls == PN_PATH_NV) {
					consider(&w, nv_total(l, a), u[a * RES_N + RES_NVOUT], s->node,
						 "NVLink out", a, 0);
					consider(&w, nv_total(l, b), u[b * RES_N + RES_NVIN], s->node,
						 "NVLink in", b, 0);
				} else {
					consider(&w, pcie, u[a * RES_N + RES_PCOUT], s->node, "PCIe out",
						 a, 0);
					consider(&w, pcie, u[b * RES_N + RES_PCIN], s->node, "PCIe in",
						 b, 0);
				}
				consider(&w, hop_ceiling(l->gg[a][b], pcie), 1, s->node, "hop", a, b);
			}
		}
		if (w.v >= 1e299) { /* a single GPU: nothing moves */
			ring->gbs = 0;
			snprintf(ring->bottleneck, sizeof(ring->bottleneck), "no link");
		} else {
			ring->gbs = w.v;
			describe(m, &w, ring->bottleneck, sizeof(ring->bottleneck));
			if (w.v < glob.v)
				glob = w;
		}
		p->busbw_gbs += ring->gbs;
		if (ring->gbs < p->ring_gbs)
			p->ring_gbs = ring->gbs;
	}
	memset(&p->bottleneck, 0, sizeof(p->bottleneck));
	p->bottleneck.node = -1;
	if (glob.v < 1e299) {
		p->bottleneck.node = glob.node;
		describe(m, &glob, p->bottleneck.what, sizeof(p->bottleneck.what));
		p->bottleneck.cap_gbs = glob.cap;
		p->bottleneck.users = glob.users;
	}
	free(use);
	return 0;
}

/* ------------------------------------------------------------- validate */

static void rank_name(const struct pn_plan_model *m, int rank, char *buf, size_t len)
{
	int lo = 0, hi = m->nnodes - 1;

	while (lo < hi) { /* last node with rank0 <= rank */
		int mid = (lo + hi + 1) / 2;

		if (m->nodes[mid].rank0 <= rank)
			lo = mid;
		else
			hi = mid - 1;
	}
	snprintf(buf, len, "rank %d (%s %s)", rank, m->nodes[lo].host,
		 m->layouts[m->nodes[lo].layout].gpus[rank - m->nodes[lo].rank0].name);
}

static const char *nic_name(const struct pn_plan_model *m, int node, int nic)
{
	return m->layouts[m->nodes[node].layout].nics[nic].name;
}

static int nic_rail(const struct pn_plan_model *m, int node, int nic)
{
	return m->layouts[m->nodes[node].layout].nics[nic].rail;
}

static const char *level_name(int lv)
{
	static const char *const names[] = { "X", "NVLink", "PIX", "PXB", "PHB", "NODE", "SYS",
					     "an unknown class" };

	return names[lv < LEVELS ? lv : LEVELS - 1];
}

static void end_name(const struct pn_plan_layout *l, int v, char *buf, size_t len)
{
	snprintf(buf, len, "%s", v < 0 ? l->nics[-1 - v].name : l->gpus[v].name);
}

/*
 * A segment whose GPU order is worse than the best for its NICs: the worst
 * class where it needs more steps, e.g. "2 steps over SYS (first GPU1->GPU2)
 * where 1 suffices".
 */
static void path_excess(struct pn_plan *p, const struct pn_plan_ring *r,
			const struct pn_plan_seg *s, int N, char *buf, size_t len)
{
	struct pn_plan_layout *l = &p->model->layouts[p->model->nodes[s->node].layout];
	int cycle = N == 1 && s->in_nic < 0 && s->out_nic < 0, lv, k;
	const struct pn_plan_best *b = pn_plan_best_get(l, cycle ? -1 : s->in_nic, cycle ? -1 : s->out_nic);
	int8_t path[PN_PLAN_MAX_GPUS];
	struct pn_plan_steps have, best;
	char x[PN_PLAN_NAME], y[PN_PLAN_NAME];

	buf[0] = 0;
	if (!b)
		return;
	for (k = 0; k < s->n; k++)
		path[k] = (int8_t)r->gpus[s->off + k];
	pn_plan_path_steps(l, s->in_nic, s->out_nic, cycle, path, s->n, &have);
	pn_plan_path_steps(l, b->in, b->out, cycle, b->path, b->n, &best);
	for (lv = LEVELS - 1; lv >= 0; lv--)
		if (have.count[lv] != best.count[lv])
			break;
	if (lv < 0 || have.count[lv] < best.count[lv])
		return;
	end_name(l, have.from[lv], x, sizeof(x));
	end_name(l, have.to[lv], y, sizeof(y));
	snprintf(buf, len, "%d step%s over %s (first %s->%s) where %d suffice%s", have.count[lv],
		 have.count[lv] == 1 ? "" : "s", level_name(lv), x, y, best.count[lv],
		 best.count[lv] == 1 ? "s" : "");
}

static const char *range(int lo, int hi, char *buf, size_t len)
{
	if (lo == hi)
		snprintf(buf, len, "%d", lo);
	else
		snprintf(buf, len, "%d-%d", lo, hi);
	return buf;
}

/*
 * What the engine's verbs transport needs of a ring (pn_plan_job_nic): one
 * connection per (peer, ring), so two ranks that are each other's both
 * neighbours (a ring of two ranks on two nodes) use one NIC both ways; and
 * the connections the ring does not use are placed on its rail (that of its
 * first send NIC), so every node needs a NIC on that rail.
 */
static void engine_nics(const struct pn_plan *p, int r, struct pn_plan_msgs *viol, int *found)
{
	const struct pn_plan_model *m = p->model;
	const struct pn_plan_ring *ring = &p->rings[r];
	int i, rail = -1, len = 0;

	for (i = 0; i < ring->nseg; i++)
		len += ring->seg[i].n;
	for (i = 0; i < ring->nseg; i++) {
		const struct pn_plan_seg *s = &ring->seg[i];

		if (rail < 0 && s->out_nic >= 0)
			rail = nic_rail(m, s->node, s->out_nic);
		if (len == 2 && ring->nseg == 2 && s->n == 1 && s->in_nic != s->out_nic) {
			(*found)++;
			pn_plan_msg(viol, "ring %d: %s receives on %s and sends on %s, both with its "
					  "one peer; one connection uses one NIC",
				    r, m->nodes[s->node].host, nic_name(m, s->node, s->in_nic),
				    nic_name(m, s->node, s->out_nic));
		}
	}
	for (i = 0; rail >= 0 && i < m->nnodes; i++) {
		if (pn_plan_layout_nic_on_rail(&m->layouts[m->nodes[i].layout], rail) >= 0)
			continue;
		(*found)++;
		pn_plan_msg(viol, "ring %d: %s has no NIC on rail %d, the ring's rail (its other "
				  "connections there use it)", r, m->nodes[i].host, rail);
	}
}

/* Every rail's NIC of every node sends and receives for some ring, and as
 * many as the others (within one): violations counted in *found. */
static int nic_balance(struct pn_plan *p, struct pn_plan_msgs *viol, int *found)
{
	struct pn_plan_model *m = p->model;
	int N = m->nnodes, i, k, *rails = NULL, nrails = 0, ret;

#define VIOL(...)                                                                              \
	do {                                                                                   \
		(*found)++;                                                                    \
		pn_plan_msg(viol, __VA_ARGS__);                                                \
	} while (0)

	ret = pn_plan_usable_rails(m, &rails, &nrails, NULL);
	if (ret)
		goto fail;
	if (!p->send) {
		ret = pn_plan_analyze(p, 0);
		if (ret)
			goto fail;
	}
	for (i = 0; i < N && nrails; i++) {
		const struct pn_plan_layout *l = &m->layouts[m->nodes[i].layout];
		int lo = p->load_off[i], ts = 0, tr = 0, j, loS, hiS, loR, hiR;

		for (k = 0; k < l->nnics; k++) {
			ts += p->send[lo + k];
			tr += p->recv[lo + k];
		}
		loS = ts / nrails;
		hiS = (ts + nrails - 1) / nrails;
		loR = tr / nrails;
		hiR = (tr + nrails - 1) / nrails;
		for (j = 0; j < nrails; j++) {
			int nic = pn_plan_layout_nic_on_rail(l, rails[j]);
			int sd, rv;
			char bal[32];

			if (nic < 0)
				continue;
			sd = p->send[lo + nic];
			rv = p->recv[lo + nic];
			if (!sd)
				VIOL("%s %s (rail %d) sends for no ring", m->nodes[i].host,
				     l->nics[nic].name, rails[j]);
			else if (sd < loS || sd > hiS)
				VIOL("%s %s (rail %d) sends for %d ring%s, balanced is %s",
				     m->nodes[i].host, l->nics[nic].name, rails[j], sd, PN_PLAN_S(sd),
				     range(loS, hiS, bal, sizeof(bal)));
			if (!rv)
				VIOL("%s %s (rail %d) receives for no ring", m->nodes[i].host,
				     l->nics[nic].name, rails[j]);
			else if (rv < loR || rv > hiR)
				VIOL("%s %s (rail %d) receives for %d ring%s, balanced is %s",
				     m->nodes[i].host, l->nics[nic].name, rails[j], rv, PN_PLAN_S(rv),
				     range(loR, hiR, bal, sizeof(bal)));
		}
	}
	ret = 0;
fail:
	free(rails);
	return ret;
#undef VIOL
}

int pn_plan_validate(struct pn_plan *p, struct pn_plan_msgs *viol)
{
	struct pn_plan_model *m = p->model;
	int N = m->nnodes, r, i, k, found = 0, ret;
	unsigned *seen = NULL, *nseen = NULL;
	char a[256];

#define VIOL(...)                                                                              \
	do {                                                                                   \
		found++;                                                                       \
		pn_plan_msg(viol, __VA_ARGS__);                                                \
	} while (0)

	/* what the file said that its rings do not (plans read back) */
	for (i = 0; i < p->file_viol.n; i++)
		VIOL("%s", p->file_viol.v[i]);
	found += p->file_viol.dropped;
	viol->dropped += p->file_viol.dropped;
	if (!p->nrings) {
		VIOL("the plan has no rings");
		return found;
	}
	if (p->nrings > PN_PLAN_MAX_RINGS)
		VIOL("the plan has %d rings; the engine runs at most %d (one channel each)",
		     p->nrings, PN_PLAN_MAX_RINGS);
	seen = calloc((size_t)m->nranks + 1, sizeof(*seen));
	nseen = calloc((size_t)N + 1, sizeof(*nseen));
	if (!seen || !nseen) {
		ret = pn_err(-ENOMEM, "out of memory");
		goto fail;
	}
	for (r = 0; r < p->nrings; r++) {
		const struct pn_plan_ring *ring = &p->rings[r];
		unsigned stamp = (unsigned)r + 1;
		int dup = 0, miss = 0, nonic = 0, first_nonic = -1;

		for (i = 0; i < ring->nseg; i++) {
			const struct pn_plan_seg *s = &ring->seg[i];
			const struct pn_plan_layout *l = &m->layouts[m->nodes[s->node].layout];
			const struct pn_plan_seg *nx = &ring->seg[(i + 1) % ring->nseg];

			if (nseen[s->node] == stamp)
				VIOL("ring %d passes %s more than once", r, m->nodes[s->node].host);
			nseen[s->node] = stamp;
			for (k = 0; k < s->n; k++) {
				int rank = m->nodes[s->node].rank0 + ring->gpus[s->off + k];

				if (seen[rank] == stamp) {
					if (dup++ < 3) {
						rank_name(m, rank, a, sizeof(a));
						VIOL("ring %d visits %s twice", r, a);
					}
				}
				seen[rank] = stamp;
			}
			if (N < 2)
				continue;
			if (s->in_nic < 0 || s->out_nic < 0) {
				if (!nonic++)
					first_nonic = s->node;
				continue;
			}
			if (!l->nics[s->in_nic].active)
				VIOL("ring %d: %s receives on %s, which is not usable (port %s)", r,
				     m->nodes[s->node].host, l->nics[s->in_nic].name,
				     l->nics[s->in_nic].state);
			if (!l->nics[s->out_nic].active)
				VIOL("ring %d: %s sends on %s, which is not usable (port %s)", r,
				     m->nodes[s->node].host, l->nics[s->out_nic].name,
				     l->nics[s->out_nic].state);
			if (nx->in_nic >= 0 &&
			    nic_rail(m, s->node, s->out_nic) != nic_rail(m, nx->node, nx->in_nic))
				VIOL("ring %d: hop %s %s (rail %d) -> %s %s (rail %d) changes rail", r,
				     m->nodes[s->node].host, nic_name(m, s->node, s->out_nic),
				     nic_rail(m, s->node, s->out_nic), m->nodes[nx->node].host,
				     nic_name(m, nx->node, nx->in_nic),
				     nic_rail(m, nx->node, nx->in_nic));
		}
		if (nonic)
			VIOL("ring %d: %d node%s (%s%s) lack%s a receive or send NIC", r, nonic,
			     PN_PLAN_S(nonic), m->nodes[first_nonic].host, nonic > 1 ? ", ..." : "",
			     nonic == 1 ? "s" : "");
		if (N >= 2 && !nonic)
			engine_nics(p, r, viol, &found);
		if (dup > 3)
			VIOL("ring %d: %d more rank%s visited twice", r, dup - 3, PN_PLAN_S(dup - 3));
		for (k = 0; k < m->nranks; k++) {
			if (seen[k] == stamp)
				continue;
			if (miss++ < 3) {
				rank_name(m, k, a, sizeof(a));
				VIOL("ring %d never visits %s", r, a);
			}
		}
		if (miss > 3)
			VIOL("ring %d: %d more rank%s never visited", r, miss - 3, PN_PLAN_S(miss - 3));
		/* path classes: only for segments that cover their node */
		if (!m->exact)
			continue;
		for (i = 0; i < ring->nseg; i++) {
			const struct pn_plan_seg *s = &ring->seg[i];
			struct pn_plan_layout *l = &m->layouts[m->nodes[s->node].layout];
			long long have, best;

			if (s->n != l->ngpus)
				continue;
			have = pn_plan_seg_cost(p, ring, s, N);
			best = pn_plan_best_cost(l, N == 1 ? -1 : s->in_nic, N == 1 ? -1 : s->out_nic);
			if (best < 0) {
				ret = (int)best;
				goto fail;
			}
			if (have > best) {
				path_excess(p, ring, s, N, a, sizeof(a));
				VIOL("ring %d: %s order takes %s%s%s%s%s", r, m->nodes[s->node].host, a,
				     s->in_nic >= 0 ? " from " : "",
				     s->in_nic >= 0 ? l->nics[s->in_nic].name : "",
				     s->out_nic >= 0 ? " to " : "",
				     s->out_nic >= 0 ? l->nics[s->out_nic].name : "");
			}
		}
	}
	/* NIC use and balance, several nodes only */
	if (N >= 2) {
		ret = nic_balance(p, viol, &found);
		if (ret)
			goto fail;
	}
	ret = found;
fail:
	free(seen);
	free(nseen);
	return ret;
#undef VIOL
}
