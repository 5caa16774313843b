/* SPDX-License-Identifier: MIT */
/*
 * plan_job: a ring plan (`penny ring-plan --json`) placed on a job's ranks,
 * for the engine's multiring algorithm (pure functions, no I/O but the
 * file read of pn_plan_load_file).
 *
 * Nodes: plan node i is the job's node i, the nodes as the engine numbers
 * them (pn_boot_node: in order of their lowest rank) -- unless the plan's
 * host names name the job's nodes (PENNY_NODE_ID, else the hostname), all
 * of them, one each: then nodes are matched by name.  A plan whose names
 * match only some nodes is refused.
 *
 * Ranks: the plan's GPU at position k of a node (its k-th GPU, the order of
 * the plan's layout, which is GPU index order) is the node's k-th rank in
 * rank order, its local rank when ranks are numbered node by node.
 *
 * Rings: planned ring c is channel c; its order of ranks is the plan's (the
 * direction data moves).  Each inter-node connection of a channel has the
 * planned NICs: the sender's "send" NIC and the receiver's "recv" NIC of the
 * hop; a connection the ring does not use (ranks not adjacent in it) gets
 * the NIC on the ring's rail (that of its first hop) at both ends, so every
 * connection stays on one rail.
 */
#ifndef PENNY_PLAN_JOB_H
#define PENNY_PLAN_JOB_H

#include "plan/plan.h"

#include <stddef.h>

struct pn_plan_job {
	const struct pn_plan *plan;	/* borrowed */
	int nranks, nnodes, nrings;
	int by_name;		/* nodes matched by host name (else by position) */
	int *plan_node;		/* [job node] -> plan node */
	int *rank_node;		/* [rank] -> job node */
	int *rank_gpu;		/* [rank] -> GPU position in its plan node's layout */
	int **rings;		/* [ring][i]: rank at position i (pn_sched_job.rings) */
	int *pos;		/* [ring * nranks + rank]: its position in the ring */
	int *seg;		/* [ring * nnodes + plan node]: its segment in the ring */
	int *rail;		/* [ring]: rail of its first inter-node hop, -1 none */
};

/*
 * Read a `penny ring-plan --json` file into *p (model into *own) and
 * validate it.  -EINVAL with a one-line message when it cannot be read or
 * has violations (the first one named, the count given).
 */
int pn_plan_load_file(struct pn_plan *p, struct pn_plan_model *own, const char *path);
/*
 * The same from text, the violations listed: read the plan (on model when
 * it has nodes, else on the model in the text, loaded into *own) and
 * validate it (pn_plan_validate).  -errno when it cannot be read, else the
 * number of violations.  ring-plan --check and --plan both decide with it.
 */
int pn_plan_load_json(struct pn_plan *p, struct pn_plan_model *own, struct pn_plan_model *model,
		      const char *text, size_t len, struct pn_plan_msgs *viol);

/*
 * Place plan p on a job: nranks ranks, node[r] the job's node of rank r
 * (0 .. nnodes-1), names[n] the name of job node n (NULL, or NULL entries:
 * unknown).  -EINVAL with a one-line message when the shapes differ (node
 * count, ranks per node) or the plan's host names match the job's only in
 * part.  j borrows p.
 */
int pn_plan_job_map(struct pn_plan_job *j, const struct pn_plan *p, int nranks, const int *node,
		    int nnodes, const char *const *names);
void pn_plan_job_release(struct pn_plan_job *j);

/*
 * The RDMA port ("device:port") rank uses for its connection to peer on
 * channel ring: 1 and *out filled; 0 when the plan does not bind it (same
 * node); -EINVAL (message) when it cannot be one NIC: two ranks of different
 * nodes that are each other's both neighbours while the plan gives their
 * hops different NICs.
 */
int pn_plan_job_nic(const struct pn_plan_job *j, int rank, int peer, int ring, char *out,
		    size_t len);

#endif
