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

#include <stdio.h>

struct pn_coll {
	struct pn_comm *comm;
	struct pn_exec exec;
	int *node;		/* node of every rank */
	int nchannels;		/* multiring */
	int **rings;		/* multiring: nchannels planned orders of all ranks, NULL: generated */
	struct pn_sched cache;	/* last schedule built */
	int cache_valid;
	enum pn_algo cache_algo;
	size_t cache_count, cache_esize;
	int cache_direct, cache_inplace;
};

/* On failure *co is left zeroed (co->comm NULL): pn_coll_release on it does nothing. */
int pn_coll_init(struct pn_coll *co, struct pn_comm *c);
void pn_coll_release(struct pn_coll *co);
/*
 * Multiring over planned rings (plan_job.h): channel c runs rings[c], an
 * order of all ranks; n must not exceed the communicator's channels.  The
 * orders are copied.
 */
int pn_coll_set_rings(struct pn_coll *co, int n, const int *const *rings);

/* Registered buffers (pn_comm_alloc) let single-node algorithms load peers'
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

/* The algorithm pn_allreduce runs for algo (auto: the tuning table's pick). */
enum pn_algo pn_allreduce_algo(const struct pn_coll *co, size_t count, enum pn_dtype t,
			       enum pn_algo algo, const struct pn_reg *sreg, const struct pn_reg *rreg);

/* The schedule pn_allreduce would run (for printing); valid until the next call. */
int pn_coll_schedule(struct pn_coll *co, size_t count, enum pn_dtype t, enum pn_algo algo,
		     int direct, int inplace, const struct pn_sched **out);

/* Tuning: the algorithm for (nranks, nnodes, bytes); PENNY_TUNE_FILE lines
 * "nranks nnodes max_bytes algo" override the built-in table. */
enum pn_algo pn_tune_pick(int nranks, int nnodes, size_t bytes, int direct);
/* The built-in table's largest size for one-shot (which reduces in place
 * into a scratch buffer of the whole size). */
#define PN_TUNE_ONE_SHOT_MAX (64u << 10)
/* Read a tuning file (pn_read_file: a regular file, bounded) and use its table. */
int pn_tune_load(const char *path);

struct pn_tune_entry {
	int nranks, nnodes;
	size_t max_bytes;
	enum pn_algo algo;
};

#define PN_TUNE_MAX_LINE 255
#define PN_TUNE_MAX_ENTRIES 4096
/*
 * Parse the text of a tuning file (a pure function): lines "nranks nnodes
 * max_bytes algorithm", blank lines and '#' comments; at most
 * PN_TUNE_MAX_LINE bytes a line and PN_TUNE_MAX_ENTRIES entries.  *tab is
 * malloc'ed (NULL when there are no entries).  0, or -EINVAL ("name:line:
 * ...") / -ENOMEM with a message.
 */
int pn_tune_parse(const char *text, size_t len, const char *name, struct pn_tune_entry **tab,
		  int *n);
/* Write the table to f (an output file the caller opened, src/base/ofile.h);
 * name is f's path for messages.  Only lines pn_tune_load accepts: an
 * algorithm outside the runnable ones (auto) is -EINVAL and writes nothing. */
int pn_tune_save(FILE *f, const char *name, int nranks, int nnodes, const size_t *bytes,
		 const enum pn_algo *algo, int n);

#endif
