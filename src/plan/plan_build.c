/* SPDX-License-Identifier: MIT */
/*
 * Ring planner, building: the best GPU order through a node for a pair of
 * NICs (best path), the rails every node can use, and the rail-aligned
 * alternating rings of pn_plan_build().
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

static int step_level(struct pn_plan_path p)
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
		lv = step_level(p);                                                            \
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

static long long path_cost(const struct pn_plan_layout *l, int in, int out, int cycle,
			   const int8_t *path, int n)
{
	struct pn_plan_steps st;

	pn_plan_path_steps(l, in, out, cycle, path, n, &st);
	return steps_cost(&st);
}

static long long gg_w(const struct pn_plan_layout *l, int a, int b)
{
	return level_w(step_level(l->gg[a][b]));
}

static long long gn_w(const struct pn_plan_layout *l, int g, int nic)
{
	return nic < 0 ? 0 : level_w(step_level(l->gn[g * l->nnics + nic]));
}

/*
 * The natural order from GPU s to GPU e: s, the GPUs after s by index
 * (wrapping), e.  With e = s - 1 that is s, s+1, ..., s-1.
 */
static void natural(int G, int s, int e, int8_t *nat)
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
		b->cost = path_cost(l, in, out, cycle, b->path, 1);
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

			natural(G, s, (s - d + G) % G, nat);
			if (path_cost(l, in, out, cycle, nat, G) == best) {
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
	return path_cost(l, s->in_nic, s->out_nic, cycle, path, s->n);
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

/* ------------------------------------------------------------- building */

void pn_plan_init(struct pn_plan *p, struct pn_plan_model *m)
{
	memset(p, 0, sizeof(*p));
	p->model = m;
}

static void ring_release(struct pn_plan_ring *r)
{
	free(r->seg);
	free(r->gpus);
	r->seg = NULL;
	r->gpus = NULL;
}

void pn_plan_release(struct pn_plan *p)
{
	int i;

	for (i = 0; i < p->nrings; i++)
		ring_release(&p->rings[i]);
	free(p->rings);
	free(p->rails);
	free(p->load_off);
	free(p->send);
	free(p->recv);
	pn_plan_msgs_release(&p->notes);
	pn_plan_msgs_release(&p->file_viol);
	memset(p, 0, sizeof(*p));
}

int pn_plan_ring_alloc(struct pn_plan_ring *r, int nseg, int ngpus)
{
	memset(r, 0, sizeof(*r));
	r->seg = calloc((size_t)(nseg ? nseg : 1), sizeof(*r->seg));
	r->gpus = calloc((size_t)(ngpus ? ngpus : 1), sizeof(*r->gpus));
	r->rail_a = r->rail_b = -1;
	if (!r->seg || !r->gpus) {
		ring_release(r);
		return pn_err(-ENOMEM, "out of memory");
	}
	return 0;
}

/* Near-GPU set of the NIC on a rail in a layout. */
static uint32_t near_set(const struct pn_plan_layout *l, int rail)
{
	int nic = pn_plan_layout_nic_on_rail(l, rail), g;
	uint32_t s = 0;

	if (nic < 0)
		return 0;
	for (g = 0; g < l->ngpus; g++)
		if (l->gpus[g].near & (1ull << nic))
			s |= 1u << g;
	return s;
}

/* Pair rails: the next unpaired rail whose nearest GPUs differ, else the next one. */
static int pair_rails(const struct pn_plan_layout *l, const int *rails, int n, int *pa, int *pb)
{
	char *used = calloc((size_t)n + 1, 1);
	int i, j, np = 0;

	if (!used)
		return pn_err(-ENOMEM, "out of memory");
	for (i = 0; i < n; i++) {
		int pick = -1;
		uint32_t si;

		if (used[i])
			continue;
		used[i] = 1;
		si = near_set(l, rails[i]);
		for (j = i + 1; j < n; j++) {
			if (used[j])
				continue;
			if (pick < 0)
				pick = j;
			if (!(si & near_set(l, rails[j]))) {
				pick = j;
				break;
			}
		}
		pa[np] = rails[i];
		pb[np] = pick >= 0 ? rails[pick] : -1;
		if (pick >= 0)
			used[pick] = 1;
		np++;
	}
	free(used);
	return np;
}

/* Notes for rails whose NIC has no near GPU on some layout (entry over a worse path). */
static void note_far_rails(struct pn_plan *p, const int *rails, int nrails)
{
	struct pn_plan_model *m = p->model;
	int li, k, i;

	for (li = 0; li < m->nlayouts; li++) {
		struct pn_plan_layout *l = &m->layouts[li];
		int first = -1, count = 0;

		for (i = 0; i < m->nnodes; i++) {
			if (m->nodes[i].layout != li)
				continue;
			if (first < 0)
				first = i;
			count++;
		}
		if (first < 0)
			continue;
		for (k = 0; k < nrails; k++) {
			int nic = pn_plan_layout_nic_on_rail(l, rails[k]);

			if (nic >= 0 && !near_set(l, rails[k])) {
				char where[PN_PLAN_NAME + 32];

				if (count > 1)
					snprintf(where, sizeof(where), "%s and %d more nodes",
						 m->nodes[first].host, count - 1);
				else
					snprintf(where, sizeof(where), "%s", m->nodes[first].host);
				p->degraded = 1;
				pn_plan_msg(&p->notes,
					    "no GPU is near %s (rail %d) on %s: rings reach it over a "
					    "longer path",
					    l->nics[nic].name, rails[k], where);
			}
		}
		for (i = 0; i < l->ngpus; i++)
			if (!l->gpus[i].near && l->nnics && m->nnodes > 1)
				pn_plan_msg(&p->notes, "%s %s has no nearest NIC (no rail)%s",
					    m->nodes[first].host, l->gpus[i].name,
					    count > 1 ? " (same on nodes with this layout)" : "");
	}
}

/*
 * GPU orders chosen while building, per layout: for each rail pair and
 * (in, out) NICs the order is chosen once, so every node of a layout in the
 * same role gets the same order (NCCL's shared graph file relies on it) and
 * the pair's second ring mirrors the first.  Among orders as good as the
 * best, the natural ones whose end GPUs carry the least NIC traffic so far
 * win (spreads PCIe load when rails are missing or unpaired).
 */
struct memo_ent {
	int pair, in, out;
	int8_t path[PN_PLAN_MAX_GPUS];
};

struct layout_build {
	struct memo_ent *memo;
	int n, cap;
};

/* u: NIC legs (in + out) per GPU so far on the first node taking this role. */
static int choose_path(struct layout_build *lb, struct pn_plan_layout *l, int pair, int in,
		       int out, const int *u, int8_t *path)
{
	const struct pn_plan_best *b;
	int G = l->ngpus, i, s, e;
	int bk[3] = { INT_MAX, INT_MAX, INT_MAX };

	for (i = 0; i < lb->n; i++) {
		if (lb->memo[i].pair == pair && lb->memo[i].in == in && lb->memo[i].out == out) {
			memcpy(path, lb->memo[i].path, (size_t)G);
			return 0;
		}
	}
	b = pn_plan_best_get(l, in, out);
	if (!b)
		return -ENOMEM;
	memcpy(path, b->path, (size_t)G);
	/* natural orders as good as the best: best entry, best exit, least used ends */
	for (s = 0; s < G && G > 1; s++) {
		int d;

		for (d = 1; d < G; d++) {
			int8_t nat[PN_PLAN_MAX_GPUS];
			int key[3];

			e = (s - d + G) % G;
			natural(G, s, e, nat);
			if (path_cost(l, in, out, 0, nat, G) != b->cost)
				continue;
			key[0] = step_level(l->gn[s * l->nnics + in]);
			key[1] = step_level(l->gn[e * l->nnics + out]);
			key[2] = u[s] + u[e];
			if (key[0] < bk[0] || (key[0] == bk[0] && (key[1] < bk[1] ||
			    (key[1] == bk[1] && key[2] < bk[2])))) {
				memcpy(bk, key, sizeof(bk));
				memcpy(path, nat, (size_t)G);
			}
		}
	}
	if (lb->n == lb->cap) {
		int cap = lb->cap ? lb->cap * 2 : 8;
		struct memo_ent *nm = realloc(lb->memo, (size_t)cap * sizeof(*nm));

		if (!nm)
			return pn_err(-ENOMEM, "out of memory");
		lb->memo = nm;
		lb->cap = cap;
	}
	lb->memo[lb->n].pair = pair;
	lb->memo[lb->n].in = in;
	lb->memo[lb->n].out = out;
	memcpy(lb->memo[lb->n].path, path, (size_t)G);
	lb->n++;
	return 0;
}

/* path backwards, if that is as good as the best order for (in, out); else the best. */
static int reverse_or_best(struct pn_plan_layout *l, int in, int out, int8_t *path)
{
	const struct pn_plan_best *b = pn_plan_best_get(l, in, out);
	int8_t r[PN_PLAN_MAX_GPUS];
	int k;

	if (!b)
		return -ENOMEM;
	for (k = 0; k < l->ngpus; k++)
		r[k] = path[l->ngpus - 1 - k];
	if (path_cost(l, in, out, 0, r, l->ngpus) <= b->cost)
		memcpy(path, r, (size_t)l->ngpus);
	else
		memcpy(path, b->path, (size_t)l->ngpus);
	return 0;
}

static int build_one_node(struct pn_plan *p, const struct pn_plan_opts *o)
{
	struct pn_plan_model *m = p->model;
	struct pn_plan_layout *l = &m->layouts[m->nodes[0].layout];
	const struct pn_plan_best *b = pn_plan_best_get(l, -1, -1);
	int R = o->rings ? o->rings : (l->ngpus == 1 ? 1 : 2), r, k, G = l->ngpus;

	if (!b)
		return -ENOMEM;
	p->rings = calloc((size_t)R, sizeof(*p->rings));
	if (!p->rings)
		return pn_err(-ENOMEM, "out of memory");
	for (r = 0; r < R; r++) {
		struct pn_plan_ring *ring = &p->rings[r];

		if (pn_plan_ring_alloc(ring, 1, G))
			return -ENOMEM;
		p->nrings++;
		ring->nseg = 1;
		ring->seg[0].node = 0;
		ring->seg[0].in_nic = ring->seg[0].out_nic = -1;
		ring->seg[0].off = 0;
		ring->seg[0].n = G;
		/* odd rings: the same cycle backwards (from the same first GPU) */
		for (k = 0; k < G; k++)
			ring->gpus[k] = (r & 1) && k ? b->path[G - k] : b->path[k];
	}
	if (l->nnics)
		pn_plan_msg(&p->notes, "one node: rings stay inside %s, its NICs carry no ring traffic",
			    m->nodes[0].host);
	return 0;
}

int pn_plan_build(struct pn_plan *p, struct pn_plan_model *m, const struct pn_plan_opts *o)
{
	int *rails = NULL, nrails = 0, *pa = NULL, *pb = NULL, np, base, R, r, i, ret;
	int N = m->nnodes, total_rails, solo = N == 2 && m->nranks == 2;
	struct pn_plan_msgs dropped = { 0 };
	struct layout_build *lb = NULL;
	int *use = NULL;

	pn_plan_init(p, m);
	if (N < 1)
		return pn_err(-EINVAL, "the model has no nodes");
	if (o->rings < 0 || o->rings > 4096)
		return pn_err(-EINVAL, "--rings must be between 1 and 4096");
	if (N == 1) {
		ret = build_one_node(p, o);
		if (!ret)
			ret = pn_plan_analyze(p, o->pcie_gbs);
		return ret;
	}
	ret = pn_plan_usable_rails(m, &rails, &nrails, &dropped);
	if (ret)
		goto out;
	total_rails = nrails + dropped.n; /* one note per rail left out */
	if (!nrails) {
		const char *why = dropped.n ? strstr(dropped.v[0], "left out: ") : NULL;

		if (!total_rails)
			ret = pn_err(-EINVAL, "no node has a usable NIC port: rings across %d nodes need "
					      "a rail active on every node",
				     N);
		else
			ret = pn_err(-EINVAL, "no rail has an active NIC on every node (%d rails; "
					      "first: %s)",
				     total_rails, why ? why + 10 : "?");
		goto out;
	}
	if (dropped.n && o->no_degrade) {
		ret = pn_err(-EINVAL, "%s (--no-degrade refuses to plan without it)", dropped.v[0]);
		goto out;
	}
	for (i = 0; i < dropped.n; i++)
		pn_plan_msg(&p->notes, "%s", dropped.v[i]);
	if (dropped.n) {
		p->degraded = 1;
		pn_plan_msg(&p->notes, "degraded: %d of %d rails in use; rings avoid the others",
			    nrails, total_rails);
	}
	p->rails = rails;
	p->nrails = nrails;
	rails = NULL;
	note_far_rails(p, p->rails, p->nrails);

	pa = malloc(sizeof(int) * (size_t)p->nrails);
	pb = malloc(sizeof(int) * (size_t)p->nrails);
	if (!pa || !pb) {
		ret = pn_err(-ENOMEM, "out of memory");
		goto out;
	}
	np = pair_rails(&m->layouts[m->nodes[0].layout], p->rails, p->nrails, pa, pb);
	if (np < 0) {
		ret = np;
		goto out;
	}
	if (solo) {
		/*
		 * Two ranks on two nodes are each other's both neighbours: the
		 * engine's one connection between them has one NIC at each end,
		 * so every ring turns on one rail (each NIC still sends for one
		 * ring and receives for one).
		 */
		for (i = 0; i < p->nrails; i++) {
			pa[i] = p->rails[i];
			pb[i] = -1;
		}
		np = p->nrails;
	}
	base = 0;
	for (i = 0; i < np; i++)
		base += pb[i] >= 0 ? 2 : 1;
	if (o->rings && o->rings % base) {
		ret = pn_err(-EINVAL, "--rings %d is not a multiple of the %d rings of one round",
			     o->rings, base);
		goto out;
	}
	R = o->rings ? o->rings : base;
	p->rings = calloc((size_t)R, sizeof(*p->rings));
	lb = calloc((size_t)m->nlayouts, sizeof(*lb));
	use = calloc((size_t)m->nranks, sizeof(*use));
	if (!p->rings || !lb || !use) {
		ret = pn_err(-ENOMEM, "out of memory");
		goto out;
	}
	for (r = 0; r < R; r++) {
		struct pn_plan_ring *ring = &p->rings[r];
		int q = r % base, pi = 0, side = 0, A, B, j, off = 0;

		/* ring q -> pair pi, side */
		for (j = 0, i = 0; i < np; i++) {
			int w = pb[i] >= 0 ? 2 : 1;

			if (q < j + w) {
				pi = i;
				side = q - j;
				break;
			}
			j += w;
		}
		A = pa[pi];
		B = pb[pi] >= 0 ? pb[pi] : pa[pi];
		ret = pn_plan_ring_alloc(ring, N, m->nranks);
		if (ret)
			goto out;
		p->nrings++;
		ring->rail_a = A;
		ring->rail_b = B;
		ring->nseg = N;
		for (i = 0; i < N; i++) {
			struct pn_plan_layout *l = &m->layouts[m->nodes[i].layout];
			int turn = (N - 1 - pi % N + N) % N, d, x, y, k;
			int8_t path[PN_PLAN_MAX_GPUS];

			/* side 0: (x, y) rails in and out */
			d = N % 2 == 0 ? i : (i - turn - 1 + 2 * N) % N;
			if (A == B || (N % 2 && i == turn)) {
				x = y = A;
			} else {
				x = d % 2 == 0 ? A : B;
				y = d % 2 == 0 ? B : A;
			}
			if (x == B && y == A && A != B) { /* odd nodes: the even order backwards */
				int8_t fw[PN_PLAN_MAX_GPUS];

				ret = choose_path(&lb[m->nodes[i].layout], l, pi,
						  pn_plan_layout_nic_on_rail(l, A),
						  pn_plan_layout_nic_on_rail(l, B),
						  use + m->nodes[i].rank0, fw);
				for (k = 0; k < l->ngpus; k++)
					path[k] = fw[l->ngpus - 1 - k];
			} else {
				ret = choose_path(&lb[m->nodes[i].layout], l, pi,
						  pn_plan_layout_nic_on_rail(l, x),
						  pn_plan_layout_nic_on_rail(l, y),
						  use + m->nodes[i].rank0, path);
			}
			if (ret)
				goto out;
			if (side == 1) {
				/* the other rail of the pair, side 0's GPU order backwards */
				x = x == A ? B : A;
				y = y == A ? B : A;
				ret = reverse_or_best(l, pn_plan_layout_nic_on_rail(l, x),
						      pn_plan_layout_nic_on_rail(l, y), path);
				if (ret)
					goto out;
			}
			ring->seg[i].node = i;
			ring->seg[i].in_nic = pn_plan_layout_nic_on_rail(l, x);
			ring->seg[i].out_nic = pn_plan_layout_nic_on_rail(l, y);
			ring->seg[i].off = off;
			ring->seg[i].n = l->ngpus;
			for (k = 0; k < l->ngpus; k++)
				ring->gpus[off + k] = path[k];
			use[m->nodes[i].rank0 + path[0]]++;
			use[m->nodes[i].rank0 + path[l->ngpus - 1]]++;
			off += l->ngpus;
		}
	}
	if (N % 2)
		pn_plan_msg(&p->notes,
			    "odd node count: in each ring pair one node (%s first) enters and leaves "
			    "on the same rail",
			    m->nodes[N - 1].host);
	if (solo)
		pn_plan_msg(&p->notes, "two ranks on two nodes: each ring enters and leaves both "
				       "nodes on one rail (one connection, one NIC)");
	for (i = 0; i < np && !solo; i++)
		if (pb[i] < 0)
			pn_plan_msg(&p->notes, "rail %d has no partner: its ring enters and leaves "
					       "every node on rail %d", pa[i], pa[i]);
	ret = pn_plan_analyze(p, o->pcie_gbs);
out:
	for (i = 0; lb && i < m->nlayouts; i++)
		free(lb[i].memo);
	free(lb);
	free(use);
	pn_plan_msgs_release(&dropped);
	free(rails);
	free(pa);
	free(pb);
	return ret;
}
