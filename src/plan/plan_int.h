/* SPDX-License-Identifier: MIT */
/*
 * Shared by plan.c, plan_cost.c, plan_build.c and plan_check.c; not API
 * (plan.h is).
 * The best GPU order through a node for a pair of NICs, cached per layout,
 * and the per-class step counts of a GPU order.
 */
#ifndef PENNY_PLAN_INT_H
#define PENNY_PLAN_INT_H

#include "plan/plan.h"

#include <stdint.h>

struct pn_plan_best {
	int in, out;
	long long cost;	/* see pn_plan_path_cost() */
	int n;
	int8_t path[PN_PLAN_MAX_GPUS];
};

/*
 * Cost of a GPU order through a node: the sum over its steps (NIC to first
 * GPU, GPU to GPU, last GPU to NIC; the closing hop on a one-node ring) of
 * 18^class (plan_cost.c).
 */
#define LEVELS (PN_PLAN_PATH_UNKNOWN + 1)

/* Per class: how many steps; also the first step at each class, for messages. */
struct pn_plan_steps {
	int count[LEVELS];
	int from[LEVELS], to[LEVELS];	/* GPU positions; -1 - nic for a NIC end */
};

/* The steps of path[0..n) from NIC in to NIC out (-1: none), closing the
 * cycle when cycle is set. */
void pn_plan_path_steps(const struct pn_plan_layout *l, int in, int out, int cycle,
			const int8_t *path, int n, struct pn_plan_steps *st);
/* The class of a step, unknown for anything past it. */
int pn_plan_step_level(struct pn_plan_path p);
/* The cost of path[0..n) from NIC in to NIC out (see pn_plan_steps). */
long long pn_plan_path_cost(const struct pn_plan_layout *l, int in, int out, int cycle,
			    const int8_t *path, int n);
/* The natural order from GPU s to GPU e of G: s, the GPUs after s by index
 * (wrapping), e. */
void pn_plan_natural(int G, int s, int e, int8_t *nat);
/* The best order for (in, out), computed once per layout; NULL: no memory. */
const struct pn_plan_best *pn_plan_best_get(struct pn_plan_layout *l, int in, int out);

#endif
