/* SPDX-License-Identifier: MIT */
/*
 * Fuzz harness: NCCL graph XML read back (ring-plan --check FILE.xml:
 * pn_plan_read_nccl), on no model (derived from the file) and on a
 * synthetic one, then validated.
 */
#include "fuzz.h"

#include "plan/plan.h"

static void check(const uint8_t *data, size_t size, struct pn_plan_model *m)
{
	const char *text = (const char *)data, *name = "fuzz.xml";
	struct pn_plan_msgs notes = { 0 }, viol = { 0 };
	struct pn_plan p;

	memset(&p, 0, sizeof(p));
	if (!pn_plan_read_nccl(&p, m, &text, &size, &name, 1, &notes, &viol))
		FUZZ_ASSERT(pn_plan_validate(&p, &viol) >= 0);
	pn_plan_release(&p);
	pn_plan_msgs_release(&notes);
	pn_plan_msgs_release(&viol);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pn_plan_synth s = { .nodes = 2, .gpus = 4, .nics = 2, .rate_gbps = 400,
				   .nvlinks = 18 };
	struct pn_plan_model m;

	pn_plan_model_init(&m);
	check(data, size, &m);
	pn_plan_model_release(&m);
	pn_plan_model_init(&m);
	if (!pn_plan_model_synthetic(&m, &s) && !pn_plan_model_finish(&m))
		check(data, size, &m);
	pn_plan_model_release(&m);
	return 0;
}
