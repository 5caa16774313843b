/* SPDX-License-Identifier: MIT */
/* Independent checks of a ring plan, shared by t_plan.c and t_plan_prop.c (not pn_plan_validate). */
#ifndef PENNY_T_PLAN_CHECK_H
#define PENNY_T_PLAN_CHECK_H

#include "plan/plan.h"

#include <stdlib.h>
#include <string.h>

static inline const struct pn_plan_layout *lay(const struct pn_plan *p, int node)
{
	return &p->model->layouts[p->model->nodes[node].layout];
}

/* Independent checks (not pn_plan_validate): every rank once per ring. */
static inline int visits_all_once(const struct pn_plan *p)
{
	int r, i, k, bad = 0, n = p->model->nranks;
	int *seen = calloc((size_t)n, sizeof(int));

	for (r = 0; r < p->nrings; r++) {
		const struct pn_plan_ring *ring = &p->rings[r];

		memset(seen, 0, sizeof(int) * (size_t)n);
		for (i = 0; i < ring->nseg; i++)
			for (k = 0; k < ring->seg[i].n; k++)
				seen[p->model->nodes[ring->seg[i].node].rank0 +
				     ring->gpus[ring->seg[i].off + k]]++;
		for (k = 0; k < n; k++)
			bad += seen[k] != 1;
	}
	free(seen);
	return !bad;
}

/* Every inter-node hop keeps its rail (several nodes). */
static inline int hops_on_rail(const struct pn_plan *p)
{
	int r, i;

	for (r = 0; r < p->nrings; r++) {
		const struct pn_plan_ring *ring = &p->rings[r];

		for (i = 0; i < ring->nseg; i++) {
			const struct pn_plan_seg *s = &ring->seg[i], *t = &ring->seg[(i + 1) % ring->nseg];

			if (s->out_nic < 0 || t->in_nic < 0)
				return 0;
			if (lay(p, s->node)->nics[s->out_nic].rail != lay(p, t->node)->nics[t->in_nic].rail)
				return 0;
			if (!lay(p, s->node)->nics[s->out_nic].active || !lay(p, t->node)->nics[t->in_nic].active)
				return 0;
		}
	}
	return 1;
}

/* Every NIC on a rail in p->rails sends and receives for exactly `want` rings; others none. */
static inline int loads_are(const struct pn_plan *p, int want)
{
	int i, k, j;

	for (i = 0; i < p->model->nnodes; i++) {
		const struct pn_plan_layout *l = lay(p, i);

		for (k = 0; k < l->nnics; k++) {
			int used = 0, sd = p->send[p->load_off[i] + k], rv = p->recv[p->load_off[i] + k];

			for (j = 0; j < p->nrails; j++)
				used |= l->nics[k].active && l->nics[k].rail == p->rails[j];
			if (sd != (used ? want : 0) || rv != (used ? want : 0))
				return 0;
		}
	}
	return 1;
}

#endif
