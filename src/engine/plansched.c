/* SPDX-License-Identifier: MIT */
/*
 * A ring plan as the engine's multiring schedule at one rank (plansched.h).
 */
#include "engine/plansched.h"
#include "base/log.h"
#include "plan/plan_job.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int pn_plan_sched_build(struct pn_sched *sc, const struct pn_plan *p, int rank, size_t count,
			size_t esize)
{
	const struct pn_plan_model *m = p->model;
	struct pn_plan_job pj;
	struct pn_sched_job job;
	int *node, i, k, ret;

	if (rank < 0 || rank >= m->nranks)
		return pn_err(-EINVAL, "rank %d: the plan has ranks 0-%d", rank, m->nranks - 1);
	node = malloc(sizeof(int) * (size_t)m->nranks);
	if (!node)
		return pn_err(-ENOMEM, "out of memory");
	for (i = 0; i < m->nnodes; i++)
		for (k = 0; k < m->layouts[m->nodes[i].layout].ngpus; k++)
			node[m->nodes[i].rank0 + k] = i;
	ret = pn_plan_job_map(&pj, p, m->nranks, node, m->nnodes, NULL);
	if (!ret) {
		memset(&job, 0, sizeof(job));
		job.rank = rank;
		job.nranks = m->nranks;
		job.node = node;
		job.nchannels = pj.nrings;
		job.inplace = 1;
		job.rings = (const int *const *)pj.rings;
		ret = pn_sched_build(sc, PN_ALGO_MULTIRING, &job, count, esize);
		pn_plan_job_release(&pj);
	}
	free(node);
	return ret;
}
