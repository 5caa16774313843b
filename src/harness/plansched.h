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
#include "plan/plan_job.h"

struct pn_boot;

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

/*
 * ring-plan --show-schedule: rank's schedule of an allreduce of size bytes
 * of float32 over p (pn_plan_sched_build), when build; -EINVAL naming
 * --schedule-rank when p has no such rank, built or not.  rank -1 and size
 * 0 are not given: rank 0, 1 MiB.
 */
int pn_plan_sched_show(struct pn_sched *sc, const struct pn_plan *p, int rank, uint64_t size,
		       int build);

/* A plan placed on a running job's ranks (allreduce-test --plan). */
struct pn_planned {
	struct pn_plan_model model;
	struct pn_plan plan;
	struct pn_plan_job map;
	int rank;
};

/*
 * Every rank of the job reads the plan at path and places it on the job's
 * nodes (in order of lowest rank) and ranks; the ranks agree on the result
 * (pn_boot_agree_err).  0 and *out set; or an error, with *first the lowest
 * rank that failed (-1: none, the agreement itself failed) and *mine this
 * rank's own result.
 */
int pn_planned_load(struct pn_planned **out, struct pn_boot *b, const char *path, int *first,
		    int *mine);
void pn_planned_free(struct pn_planned *pl);
/* Place pl->plan on b's nodes (in order of lowest rank, or by host name) and
 * ranks: pn_plan_job_map into pl->map.  0 or -errno with a message. */
int pn_planned_place(struct pn_planned *pl, struct pn_boot *b);
/* pn_comm_cfg.verbs_port for a planned job: the NIC of (peer, channel). */
int pn_planned_port(void *arg, int peer, int chan, char *out, size_t len);

#endif
