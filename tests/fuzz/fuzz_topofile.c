/* SPDX-License-Identifier: MIT */
/*
 * Fuzz harness: a `penny topo --save` file read back as a node of a ring
 * plan model (ring-plan --topo-file: pn_plan_model_add_topo), then planned
 * and validated as ring-plan does.
 */
#include "fuzz.h"

#include "plan/plan.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pn_plan_model m;
	struct pn_plan p;
	struct pn_plan_msgs viol = { 0 };
	struct pn_plan_opts o = { 0 };

	pn_plan_model_init(&m);
	if (!pn_plan_model_add_topo(&m, (const char *)data, size, "fuzz.json") &&
	    !pn_plan_model_finish(&m)) {
		FUZZ_ASSERT(m.nnodes == 1 && m.nranks >= 1);
		if (!pn_plan_build(&p, &m, &o))
			FUZZ_ASSERT(pn_plan_validate(&p, &viol) >= 0);
		pn_plan_release(&p);
		pn_plan_msgs_release(&viol);
	}
	pn_plan_model_release(&m);
	return 0;
}
