/* SPDX-License-Identifier: MIT */
/*
 * The collective engine's entry point: pn_allreduce() picks an algorithm
 * (tuning table or forced), builds and caches its schedule, and runs it on
 * the host executor.
 */
#ifndef PENNY_COLL_H
#define PENNY_COLL_H

#include "engine/comm.h"
#include "engine/dtype.h"
#include "engine/exec.h"
#include "engine/sched.h"
#include "engine/tune.h"

#include <stdio.h>

struct pn_coll {
	struct pn_comm *comm;
	struct pn_exec exec;
	int *node;		/* node of every rank */
	const struct pn_tune *tune;	/* the caller's; NULL: the built-in table */
	int nchannels;		/* multiring */
	int **rings;		/* multiring: nchannels planned orders of all ranks, NULL: generated */
	struct pn_sched cache;	/* last schedule built */
	int cache_valid;
	enum pn_algo cache_algo;
	size_t cache_count, cache_esize;
	int cache_direct, cache_inplace;
	/* the other collectives' last schedule (collrun.c) */
	struct pn_sched xcache;
	int xcache_valid, xcache_direct;
};

/* tune: the table auto picks from (the caller keeps it; NULL: built in).
 * On failure *co is left zeroed (co->comm NULL): pn_coll_release on it does nothing. */
int pn_coll_init(struct pn_coll *co, struct pn_comm *c, const struct pn_tune *tune);
void pn_coll_release(struct pn_coll *co);
/*
 * Multiring over planned rings (plan_job.h): channel c runs rings[c], an
 * order of all ranks; n must not exceed the communicator's channels.  The
 * orders are copied.
 */
int pn_coll_set_rings(struct pn_coll *co, int n, const int *const *rings);

/* Registered buffers (pn_nodeseg_alloc) let single-node algorithms load peers'
 * data directly; NULL registrations use the FIFOs. */
int pn_allreduce(struct pn_coll *co, const void *sendbuf, void *recvbuf, size_t count,
		 enum pn_dtype t, enum pn_redop op, enum pn_algo algo, struct pn_reg *sreg,
		 struct pn_reg *rreg);

/*
 * Collectives over a group of ranks (global ranks, in order; this rank one of
 * them), through the same executor and transports; every member calls with
 * the same arguments, the other ranks do not take part.  Allreduce: a ring
 * over the group, avg divided by the group's size.  Allgather: member i's
 * bytes are at [i * len, (i + 1) * len) of all (nranks * len bytes); mine is
 * copied from mine (which may be that place already).
 */
int pn_allreduce_group(struct pn_coll *co, const void *sendbuf, void *recvbuf, size_t count,
		       enum pn_dtype t, enum pn_redop op, const int *group, int m);
int pn_allgather_group(struct pn_coll *co, const void *mine, void *all, size_t len,
		       const int *group, int m);

/* The algorithm pn_allreduce runs for algo (auto: the tuning table's pick;
 * in place when sreg is rreg, as pn_allreduce in place is handed them). */
enum pn_algo pn_allreduce_algo(const struct pn_coll *co, size_t count, enum pn_dtype t,
			       enum pn_algo algo, const struct pn_reg *sreg, const struct pn_reg *rreg);

/* Whether single-node algorithms can load peers' buffers directly: every
 * rank on this host over shm, and both registrations given. */
int pn_coll_direct(const struct pn_coll *co, const struct pn_reg *sreg, const struct pn_reg *rreg);

/* The schedule pn_allreduce would run (for printing); valid until the next call. */
int pn_coll_schedule(struct pn_coll *co, size_t count, enum pn_dtype t, enum pn_algo algo,
		     int direct, int inplace, const struct pn_sched **out);

#endif
