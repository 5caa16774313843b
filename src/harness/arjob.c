/* SPDX-License-Identifier: MIT */
/*
 * The allreduce job both commands run (arjob.h): assembled in one order,
 * released in the reverse one.
 */
#define _GNU_SOURCE
#include "harness/arjob.h"
#include "base/log.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int job_open(struct pn_arjob *j, struct pn_boot *b, const struct pn_arjob_cfg *cfg)
{
	int ret;

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

/* One backend of the list, opened on every rank. */
static int add_backend(struct pn_arjob *j, const struct pn_arjob_cfg *cfg, const char *name)
{
	struct pn_sweep_gpu_cfg gc = cfg->gpu;
	int ret;

	if (j->nbe == PN_ARJOB_MAX_BACKENDS)
		return pn_err(-E2BIG, "more than %d backends", PN_ARJOB_MAX_BACKENDS);
	if (!strcmp(name, "host")) {
		ret = cfg->kind == PN_COLL_ALLREDUCE
			      ? pn_sweep_host_open(&j->be[j->nbe], &j->coll, cfg->algos, cfg->nalgos,
						   cfg->max_bytes)
			      : pn_sweep_coll_open(&j->be[j->nbe], &j->coll, cfg->kind, cfg->calgos,
						   cfg->ncalgos, cfg->max_bytes);
		if (!ret)
			j->nbe++;
		return ret;
	}
	gc.name = name;
	gc.kind = cfg->kind;
	ret = pn_sweep_gpu_open(&j->be[j->nbe], &j->coll, &gc);
	if (ret) {
		j->gpu_failed = 1;
		return ret;
	}
	j->nbe++;
	return cfg->describe ? pn_sweep_gpu_describe(j->be[j->nbe - 1], &j->desc[j->nbe - 1]) : 0;
}

int pn_arjob_start(struct pn_arjob *j, struct pn_boot *b, const struct pn_arjob_cfg *cfg)
{
	char list[512], *tok, *save = NULL;
	int ret, i;

	memset(j, 0, sizeof(*j));
	ret = job_open(j, b, cfg);
	snprintf(list, sizeof(list), "%s", cfg->backends);
	for (tok = strtok_r(list, ",", &save); tok && !ret; tok = strtok_r(NULL, ",", &save))
		ret = add_backend(j, cfg, tok);
	/* a backend that can run none of its algorithms: said before any header */
	for (i = 0; !ret && i < j->nbe; i++)
		ret = pn_sweep_runnable(j->be[i]);
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

int pn_arjob_sweep(struct pn_arjob *j, struct pn_sweep *sw, struct pn_arjob_plan *p)
{
	int c, t, o, ret = 0;

	for (c = 0; c < p->cycles && !ret; c++)
		for (t = 0; t < p->ndtypes && !ret; t++)
			for (o = 0; o < p->nops && !ret; o++) {
				sw->dtype = p->dtypes[t];
				sw->op = p->ops[o];
				free(p->sizes);
				ret = pn_sweep_sizes(p->minbytes, p->maxbytes, p->stepbytes, p->factor,
						     pn_dtype_size(sw->dtype), &p->sizes, &sw->nsizes);
				if (ret == -E2BIG)
					return pn_err(ret, "more than %d sizes", PN_SWEEP_MAX_SIZES);
				if (ret)
					return pn_err(ret, "out of memory");
				pn_sweep_distinct(sw->kind, pn_dtype_size(sw->dtype), j->comm->nranks,
						  p->sizes, &sw->nsizes);
				sw->sizes = p->sizes;
				ret = pn_arjob_run(j, sw);
			}
	return ret;
}

void pn_arjob_close(struct pn_arjob *j)
{
	int a;

	for (a = 0; a < PN_ARJOB_MAX_BACKENDS; a++) {
		free(j->desc[a]);
		j->desc[a] = NULL;
	}
	while (j->nbe > 0)
		pn_sweep_backend_close(j->be[--j->nbe]);
	if (j->coll.comm)
		pn_coll_release(&j->coll);
	pn_comm_free(j->comm);
	j->comm = NULL;
	pn_tune_release(&j->tune);
}
