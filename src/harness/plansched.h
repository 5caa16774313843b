/* SPDX-License-Identifier: MIT */
/*
 * A ring plan (plan/plan.h) as the schedule the engine runs for it, without
 * a job: what ring-plan --show-schedule prints.
 */
#ifndef PENNY_PLANSCHED_H
#define PENNY_PLANSCHED_H

#include "base/out.h"
#include "engine/sched.h"
#include "plan/plan.h"

/*
 * The schedule allreduce-test --plan runs at rank for plan p: the plan
 * placed on a job whose ranks are numbered node by node in plan order
 * (pn_plan_job_map, as allreduce-test places it), then the multiring
 * generator with the planned orders, as pn_coll_schedule calls it (in
 * place).  count elements of esize bytes.  0 or -errno with a message;
 * release sc with pn_sched_release.
 */
int pn_plan_sched_build(struct pn_sched *sc, const struct pn_plan *p, int rank, size_t count,
			size_t esize);

/* sc (built for p) into out, text or JSON: the "schedule" object of ring-plan's output. */
void pn_plan_sched_write(struct pn_out *out, const struct pn_plan *p, const struct pn_sched *sc);

#endif
