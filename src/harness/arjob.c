/* SPDX-License-Identifier: MIT */
/*
 * The allreduce job both commands run (arjob.h): assembled in one order,
 * released in the reverse one.
 */
#include "harness/arjob.h"
#include "base/log.h"

#include <errno.h>
#include <string.h>

int pn_arjob_open(struct pn_arjob *j, struct pn_boot *b, const struct pn_arjob_cfg *cfg)
{
	int ret;

	memset(j, 0, sizeof(*j));
	ret = pn_comm_init(&j->comm, b, &cfg->comm);
	if (!ret && cfg->tune_file && *cfg->tune_file)
		ret = pn_tune_load(&j->tune, cfg->tune_file);
	if (!ret)
		ret = pn_coll_init(&j->coll, j->comm, &j->tune);
	if (!ret && cfg->plan)
		ret = pn_coll_set_rings(&j->coll, cfg->plan->map.nrings,
					(const int *const *)cfg->plan->map.rings);
	return ret;
}

static int room(const struct pn_arjob *j)
{
	return j->nbe < PN_ARJOB_MAX_BACKENDS ? 0
					      : pn_err(-E2BIG, "more than %d backends",
						       PN_ARJOB_MAX_BACKENDS);
}

int pn_arjob_add_host(struct pn_arjob *j, const enum pn_algo *algos, int nalgos,
		      uint64_t max_bytes)
{
	int ret = room(j);

	if (!ret)
		ret = pn_sweep_host_open(&j->be[j->nbe], &j->coll, algos, nalgos, max_bytes);
	if (!ret)
		j->nbe++;
	return ret;
}

int pn_arjob_add_gpu(struct pn_arjob *j, const struct pn_sweep_gpu_cfg *gc)
{
	int ret = room(j);

	if (!ret)
		ret = pn_sweep_gpu_open(&j->be[j->nbe], &j->coll, gc);
	if (!ret)
		j->nbe++;
	return ret;
}

int pn_arjob_run(struct pn_arjob *j, struct pn_sweep *sw)
{
	int a, ret = 0;

	sw->comm = j->comm;
	for (a = 0; a < j->nbe && !ret; a++)
		ret = pn_sweep_run(sw, j->be[a]);
	return ret;
}

void pn_arjob_close(struct pn_arjob *j)
{
	while (j->nbe > 0)
		pn_sweep_backend_close(j->be[--j->nbe]);
	if (j->coll.comm)
		pn_coll_release(&j->coll);
	pn_comm_free(j->comm);
	j->comm = NULL;
	pn_tune_release(&j->tune);
}
