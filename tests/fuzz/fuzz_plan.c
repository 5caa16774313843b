/* SPDX-License-Identifier: MIT */
/*
 * Fuzz harness: a ring plan read back from JSON and validated (the one
 * validator of ring-plan --check and allreduce-test --plan:
 * pn_plan_load_json), on its own model and on a synthetic one; a plan that
 * passes is placed on a job as --plan does (pn_plan_job_map, the NIC of
 * every connection) and written as NCCL graph XML.
 */
#include "fuzz.h"

#include "plan/plan.h"
#include "plan/plan_job.h"

#include <stdio.h>

static FILE *devnull;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	devnull = fopen("/dev/null", "w");
	return 0;
}

/* What --plan does with a plan that passed. */
static void run_like_plan(const struct pn_plan *p)
{
	const struct pn_plan_model *m = p->model;
	struct pn_plan_job j;
	int *node, n, g, r, q, k;
	char nic[96];

	if (m->nranks > 64)
		return;
	node = malloc(sizeof(int) * (size_t)m->nranks);
	if (!node)
		return;
	for (n = 0; n < m->nnodes; n++)
		for (g = 0; g < m->layouts[m->nodes[n].layout].ngpus; g++)
			node[m->nodes[n].rank0 + g] = n;
	/* the validator passed it: the engine must accept it */
	FUZZ_ASSERT(!pn_plan_job_map(&j, p, m->nranks, node, m->nnodes, NULL));
	for (k = 0; k < j.nrings; k++)
		for (r = 0; r < m->nranks; r++)
			for (q = 0; q < m->nranks; q++)
				if (r != q)
					FUZZ_ASSERT(pn_plan_job_nic(&j, r, q, k, nic, sizeof(nic)) >= 0);
	pn_plan_job_release(&j);
	free(node);
	if (devnull) {
		pn_plan_write_nccl(p, 0, devnull);
		if (!pn_plan_nccl_shared_ok(p))
			pn_plan_write_nccl(p, -1, devnull);
	}
}

static void check(const uint8_t *data, size_t size, struct pn_plan_model *model)
{
	struct pn_plan_model own;
	struct pn_plan p;
	struct pn_plan_msgs viol = { 0 };
	int ret;

	pn_plan_model_init(&own);
	memset(&p, 0, sizeof(p));
	ret = pn_plan_load_json(&p, &own, model, (const char *)data, size, &viol);
	if (ret == 0)
		run_like_plan(&p);
	pn_plan_release(&p);
	pn_plan_model_release(&own);
	pn_plan_msgs_release(&viol);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pn_plan_synth s = { .nodes = 2, .gpus = 2, .nics = 2, .rate_gbps = 400,
				   .nvlinks = 18 };
	struct pn_plan_model m;

	check(data, size, NULL);
	pn_plan_model_init(&m);
	if (!pn_plan_model_synthetic(&m, &s) && !pn_plan_model_finish(&m))
		check(data, size, &m);
	pn_plan_model_release(&m);
	return 0;
}
