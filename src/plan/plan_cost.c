/* SPDX-License-Identifier: MIT */
/*
 * Ring planner, costs: the best GPU order through a node for a pair of NICs
 * (best path), a segment's cost and the rails every node can use; shared by
 * building (plan_build.c) and checking (plan_check.c).
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

/* ------------------------------------------------------------ best path */

/*
 * Cost of a GPU order through a node: the sum over its steps (NIC to first
 * GPU, GPU to GPU, last GPU to NIC; the closing hop on a one-node ring) of
 * 18^class.  A path has at most 17 steps, so one step over a worse class
 * outweighs any number over better ones: comparing costs compares how many
 * steps each class needs, worst class first.
 */
static long long level_w(int level)
{
	long long w = 1;

	while (level-- > 0)
		w *= 18;
	return w;
}

int pn_plan_step_level(struct pn_plan_path p)
{
	return p.cls <= PN_PLAN_PATH_UNKNOWN ? p.cls : PN_PLAN_PATH_UNKNOWN;
}

void pn_plan_path_steps(const struct pn_plan_layout *l, int in, int out, int cycle,
			const int8_t *path, int n, struct pn_plan_steps *st)
{
	int i, lv;

	memset(st->count, 0, sizeof(st->count));
#define STEP(p, a, b)                                                                          \
	do {                                                                                   \
		lv = pn_plan_step_level(p);                                                    \
		if (!st->count[lv]++) {                                                        \
			st->from[lv] = (a);                                                    \
			st->to[lv] = (b);                                                      \
		}                                                                              \
	} while (0)
	if (in >= 0)
		STEP(l->gn[path[0] * l->nnics + in], -1 - in, path[0]);
	for (i = 0; i + 1 < n; i++)
		STEP(l->gg[path[i]][path[i + 1]], path[i], path[i + 1]);
	if (cycle && n > 1)
		STEP(l->gg[path[n - 1]][path[0]], path[n - 1], path[0]);
	if (out >= 0)
		STEP(l->gn[path[n - 1] * l->nnics + out], path[n - 1], -1 - out);
#undef STEP
}

static long long steps_cost(const struct pn_plan_steps *st)
{
	long long c = 0;
	int lv;

	for (lv = 0; lv < LEVELS; lv++)
		c += st->count[lv] * level_w(lv);
	return c;
}

long long pn_plan_path_cost(const struct pn_plan_layout *l, int in, int out, int cycle,
			  const int8_t *path, int n)
{
	struct pn_plan_steps st;

	pn_plan_path_steps(l, in, out, cycle, path, n, &st);
	return steps_cost(&st);
}

static long long gg_w(const struct pn_plan_layout *l, int a, int b)
{
	return level_w(pn_plan_step_level(l->gg[a][b]));
}

static long long gn_w(const struct pn_plan_layout *l, int g, int nic)
{
	return nic < 0 ? 0 : level_w(pn_plan_step_level(l->gn[g * l->nnics + nic]));
}

/*
 * The natural order from GPU s to GPU e: s, the GPUs after s by index
 * (wrapping), e.  With e = s - 1 that is s, s+1, ..., s-1.
 */
void pn_plan_natural(int G, int s, int e, int8_t *nat)
{
	int k, n = 0;

	nat[n++] = (int8_t)s;
	for (k = 1; k < G; k++)
		if ((s + k) % G != e)
			nat[n++] = (int8_t)((s + k) % G);
	if (e != s)
		nat[n++] = (int8_t)e;
}

/*
 * Exact search over the orders of the node's GPUs (G <= 16) for the least
 * cost; the natural order (first GPU, the following ones by index, last GPU)
 * when it is one of the best, so plans read well.
 */
static int compute_best(const struct pn_plan_layout *l, int in, int out, struct pn_plan_best *b)
{
	int G = l->ngpus, cycle = in < 0 && out < 0, full = (1 << G) - 1, a, c, s, e, mask;
	long long *cost = NULL, best = LLONG_MAX;
	int8_t *par = NULL;
	int best_e = -1;

	b->in = in;
	b->out = out;
	b->n = G;
	if (G == 1) {
		b->path[0] = 0;
		b->cost = pn_plan_path_cost(l, in, out, cycle, b->path, 1);
		return 0;
	}
	cost = malloc(sizeof(*cost) * ((size_t)G << G));
	par = malloc((size_t)G << G);
	if (!cost || !par) {
		free(cost);
		free(par);
		return pn_err(-ENOMEM, "out of memory");
	}
	for (mask = 0; mask <= full; mask++)
		for (a = 0; a < G; a++)
			cost[mask * G + a] = LLONG_MAX;
	for (a = 0; a < (cycle ? 1 : G); a++)
		cost[(1 << a) * G + a] = gn_w(l, a, in);
	for (mask = 1; mask <= full; mask++) {
		for (a = 0; a < G; a++) {
			long long cv = cost[mask * G + a];

			if (cv == LLONG_MAX)
				continue;
			for (c = 0; c < G; c++) {
				int nm = mask | (1 << c);
				long long v;

				if (mask & (1 << c))
					continue;
				v = cv + gg_w(l, a, c);
				if (v < cost[nm * G + c]) {
					cost[nm * G + c] = v;
					par[nm * G + c] = (int8_t)a;
				}
			}
		}
	}
	for (e = 0; e < G; e++) {
		long long v;

		if (cost[full * G + e] == LLONG_MAX)
			continue;
		v = cost[full * G + e] + (cycle ? gg_w(l, e, 0) : gn_w(l, e, out));
		if (v < best) {
			best = v;
			best_e = e;
		}
	}
	b->cost = best;
	/* natural order, if it is one of the best (a one-node ring: 0, 1, ..., G-1) */
	for (s = 0; s < (cycle ? 1 : G); s++) {
		int d;

		for (d = 1; d < G; d++) {
			int8_t nat[PN_PLAN_MAX_GPUS];

			pn_plan_natural(G, s, (s - d + G) % G, nat);
			if (pn_plan_path_cost(l, in, out, cycle, nat, G) == best) {
				memcpy(b->path, nat, (size_t)G);
				goto out;
			}
			if (cycle)
				break;
		}
	}
	mask = full;
	a = best_e;
	for (c = G - 1; c >= 0; c--) {
		int pa;

		b->path[c] = (int8_t)a;
		if (c == 0)
			break;
		pa = par[mask * G + a];
		mask &= ~(1 << a);
		a = pa;
	}
out:
	free(cost);
	free(par);
	return 0;
}

const struct pn_plan_best *pn_plan_best_get(struct pn_plan_layout *l, int in, int out)
{
	struct pn_plan_best *b;
	int i;

	for (i = 0; i < l->nbest; i++)
		if (l->best[i].in == in && l->best[i].out == out)
			return &l->best[i];
	if (l->nbest == l->capbest) {
		int cap = l->capbest ? l->capbest * 2 : 8;

		b = realloc(l->best, (size_t)cap * sizeof(*b));
		if (!b) {
			pn_err(-ENOMEM, "out of memory");
			return NULL;
		}
		l->best = b;
		l->capbest = cap;
	}
	b = &l->best[l->nbest];
	if (compute_best(l, in, out, b))
		return NULL;
	l->nbest++;
	return b;
}

long long pn_plan_best_cost(struct pn_plan_layout *l, int in, int out)
{
	const struct pn_plan_best *b = pn_plan_best_get(l, in, out);

	return b ? b->cost : -ENOMEM;
}

long long pn_plan_seg_cost(const struct pn_plan *p, const struct pn_plan_ring *r,
			   const struct pn_plan_seg *s, int nnodes)
{
	const struct pn_plan_layout *l = &p->model->layouts[p->model->nodes[s->node].layout];
	int8_t path[PN_PLAN_MAX_GPUS];
	int i, cycle = nnodes == 1 && s->in_nic < 0 && s->out_nic < 0;

	if (s->n < 1 || s->n > PN_PLAN_MAX_GPUS)
		return LLONG_MAX;
	for (i = 0; i < s->n; i++)
		path[i] = (int8_t)r->gpus[s->off + i];
	return pn_plan_path_cost(l, s->in_nic, s->out_nic, cycle, path, s->n);
}

/* ---------------------------------------------------------------- rails */

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return x < y ? -1 : x > y;
}

int pn_plan_usable_rails(const struct pn_plan_model *m, int **rails, int *nrails,
			 struct pn_plan_msgs *notes)
{
	int *all = NULL, nall = 0, cap = 0, i, j, k, *out;
	int nout = 0;

	*rails = NULL;
	*nrails = 0;
	/* every rail id on any layout */
	for (i = 0; i < m->nlayouts; i++) {
		const struct pn_plan_layout *l = &m->layouts[i];

		for (j = 0; j < l->nnics; j++) {
			int r = l->nics[j].rail;

			if (r < 0)
				continue;
			for (k = 0; k < nall && all[k] != r; k++)
				;
			if (k < nall)
				continue;
			if (nall == cap) {
				int *n;

				cap = cap ? cap * 2 : 16;
				n = realloc(all, (size_t)cap * sizeof(*n));
				if (!n) {
					free(all);
					return pn_err(-ENOMEM, "out of memory");
				}
				all = n;
			}
			all[nall++] = r;
		}
	}
	if (nall)
		qsort(all, (size_t)nall, sizeof(int), cmp_int);
	out = malloc(sizeof(int) * (size_t)(nall ? nall : 1));
	if (!out) {
		free(all);
		return pn_err(-ENOMEM, "out of memory");
	}
	for (k = 0; k < nall; k++) {
		int r = all[k], bad = 0, first = -1, inactive = -1;
		char why[256];

		for (i = 0; i < m->nnodes; i++) {
			const struct pn_plan_layout *l = &m->layouts[m->nodes[i].layout];

			if (pn_plan_layout_nic_on_rail(l, r) >= 0)
				continue;
			if (first < 0) {
				first = i;
				for (j = 0; j < l->nnics; j++)
					if (l->nics[j].rail == r)
						inactive = j;
			}
			bad++;
		}
		if (!bad) {
			out[nout++] = r;
			continue;
		}
		if (!notes)
			continue;
		if (inactive >= 0) {
			const struct pn_plan_nic *n = &m->layouts[m->nodes[first].layout].nics[inactive];

			snprintf(why, sizeof(why), "%s %s port %d is %s", m->nodes[first].host,
				 n->device, n->port, n->state);
		} else {
			snprintf(why, sizeof(why), "%s has no NIC on rail %d", m->nodes[first].host, r);
		}
		if (bad > 1)
			pn_plan_msg(notes, "rail %d left out: %s (%d of %d nodes lack an active NIC on it)",
				    r, why, bad, m->nnodes);
		else
			pn_plan_msg(notes, "rail %d left out: %s", r, why);
	}
	free(all);
	*rails = out;
	*nrails = nout;
	return 0;
}
