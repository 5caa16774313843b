/* SPDX-License-Identifier: MIT */
/*
 * Ring planner, building: the rail-aligned alternating rings of
 * pn_plan_build() over the costs of plan_cost.c.
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
	pn_plan_msgs_release(&p->refused);
	memset(p, 0, sizeof(*p));
}

int pn_plan_verdict(const struct pn_plan *p, const struct pn_plan_msgs *viol)
{
	if (p->refused.n || (viol && (viol->n || viol->dropped)))
		return PN_PLAN_FAIL;
	return PN_PLAN_PASS;
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
				char where[PN_PLAN_HOST + 32];

				if (count > 1)
					snprintf(where, sizeof(where), "%s and %d more node%s",
						 m->nodes[first].host, count - 1, PN_PLAN_S(count - 1));
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
			pn_plan_natural(G, s, e, nat);
			if (pn_plan_path_cost(l, in, out, 0, nat, G) != b->cost)
				continue;
			key[0] = pn_plan_step_level(l->gn[s * l->nnics + in]);
			key[1] = pn_plan_step_level(l->gn[e * l->nnics + out]);
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
	if (pn_plan_path_cost(l, in, out, 0, r, l->ngpus) <= b->cost)
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

/* The rails the rings use (p->rails): those every node can use; the others
 * noted as left out (degraded), or, with --no-degrade, none: p->refused
 * says which would be. */
static int choose_rails(struct pn_plan *p, const struct pn_plan_opts *o)
{
	const struct pn_plan_model *m = p->model;
	int *rails = NULL, nrails = 0, N = m->nnodes, total_rails, i, ret;
	struct pn_plan_msgs dropped = { 0 };

	ret = pn_plan_usable_rails(m, &rails, &nrails, &dropped);
	if (ret)
		goto out;
	total_rails = nrails + dropped.n; /* one note per rail left out */
	if (!nrails) {
		const char *why = dropped.n ? strstr(dropped.v[0], "left out: ") : NULL;

		if (!total_rails)
			ret = pn_err(-EINVAL, "no node has a usable NIC port%s: rings across %d nodes "
					      "need a rail active on every node",
				     m->rails_listed ? " among those --rails names" : "", N);
		else
			ret = pn_err(-EINVAL, "no rail has an active NIC on every node (%d rail%s; "
					      "first: %s)",
				     total_rails, PN_PLAN_S(total_rails), why ? why + 10 : "?");
		goto out;
	}
	if (dropped.n && o->no_degrade) {
		p->refused = dropped;
		memset(&dropped, 0, sizeof(dropped));
		ret = 0;
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
	ret = 0;
out:
	pn_plan_msgs_release(&dropped);
	free(rails);
	return ret;
}

/* Notes on what the rings of rail pairs pa/pb (np of them) cannot avoid. */
static void note_shape(struct pn_plan *p, const int *pa, const int *pb, int np, int solo)
{
	const struct pn_plan_model *m = p->model;
	int i, N = m->nnodes;

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
}

int pn_plan_build(struct pn_plan *p, struct pn_plan_model *m, const struct pn_plan_opts *o)
{
	int *pa = NULL, *pb = NULL, np, base, R, r, i, ret;
	int N = m->nnodes, solo = N == 2 && m->nranks == 2;
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
	ret = choose_rails(p, o);
	if (ret || p->refused.n)
		goto out;

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
	note_shape(p, pa, pb, np, solo);
	ret = pn_plan_analyze(p, o->pcie_gbs);
out:
	for (i = 0; lb && i < m->nlayouts; i++)
		free(lb[i].memo);
	free(lb);
	free(use);
	free(pa);
	free(pb);
	return ret;
}
