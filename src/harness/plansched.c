/* SPDX-License-Identifier: MIT */
/*
 * A ring plan as the engine's multiring schedule at one rank (plansched.h;
 * ring-plan --show-schedule writes it).
 */
#include "harness/plansched.h"
#include "base/log.h"
#include "base/util.h"
#include "plan/plan_job.h"
#include "engine/boot.h"

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

int pn_plan_sched_show(struct pn_sched *sc, const struct pn_plan *p, int rank, uint64_t size,
		       int build)
{
	rank = rank < 0 ? 0 : rank;
	size = size ? size : 1 << 20;
	if (rank >= p->model->nranks)
		return pn_err(-EINVAL, "--schedule-rank must be between 0 and %d",
			      p->model->nranks - 1);
	return build ? pn_plan_sched_build(sc, p, rank, (size_t)(size / 4), 4) : 0;
}

int pn_planned_port(void *arg, int peer, int chan, char *out, size_t len)
{
	const struct pn_planned *pl = arg;

	return pn_plan_job_nic(&pl->map, pl->rank, peer, chan, out, len);
}

void pn_planned_free(struct pn_planned *pl)
{
	if (!pl)
		return;
	pn_plan_job_release(&pl->map);
	pn_plan_release(&pl->plan);
	pn_plan_model_release(&pl->model);
	free(pl);
}

int pn_planned_place(struct pn_planned *pl, struct pn_boot *b)
{
	int nranks = pn_boot_nranks(b), r, ret;
	int *node = calloc((size_t)nranks, sizeof(int));
	const char **names = calloc((size_t)nranks, sizeof(char *));

	ret = node && names ? 0 : pn_err(-ENOMEM, "out of memory");
	for (r = 0; !ret && r < nranks; r++) {
		node[r] = pn_boot_node(b, r);
		if (!names[node[r]])
			names[node[r]] = pn_boot_node_name(b, r);
	}
	if (!ret)
		ret = pn_plan_job_map(&pl->map, &pl->plan, nranks, node, pn_boot_nnodes(b), names);
	free(node);
	free(names);
	return ret;
}

int pn_planned_load(struct pn_planned **out, struct pn_boot *b, const char *path, int *first,
		    int *mine)
{
	struct pn_planned *pl = calloc(1, sizeof(*pl));
	int ret;

	*out = NULL;
	*first = -1;
	*mine = 0;
	if (!pl) {
		ret = pn_err(-ENOMEM, "out of memory");
		goto out;
	}
	pn_plan_model_init(&pl->model);
	pl->rank = pn_boot_rank(b);
	*mine = pn_plan_load_file(&pl->plan, &pl->model, path);
	if (!*mine)
		*mine = pn_planned_place(pl, b);
	ret = pn_boot_agree_err(b, *mine, 0, first);
	if (!ret && *first < 0) {
		*out = pl;
		pl = NULL;
	}
out:
	pn_planned_free(pl);
	return ret;
}
