/* SPDX-License-Identifier: MIT */
/*
 * The host executor: runs a schedule over the communicator's transports.
 * Every step moves FIFO-slot-sized slices; sends never block (the FIFO has
 * room for a whole step), so ranks pipeline through each other.  Channels
 * run concurrently (round-robin).  A wait that makes no progress for the
 * timeout fails, naming the rank waited for; a dead local peer or an abort
 * from any rank ends every wait at once.
 */
#ifndef PENNY_EXEC_H
#define PENNY_EXEC_H

#include "engine/comm.h"
#include "engine/dtype.h"
#include "engine/sched.h"

struct pn_exec {
	struct pn_comm *comm;
	void *scratch;
	size_t scratch_len;
	size_t *psent, *precv;	/* per group member progress */
	const void **srcs;	/* per group member source (a group has at most npeer) */
	int npeer;
};

int pn_exec_init(struct pn_exec *e, struct pn_comm *c);
void pn_exec_release(struct pn_exec *e);

struct pn_exec_args {
	const void *sendbuf;
	void *recvbuf;
	struct pn_reg *sreg, *rreg; /* registered buffers (DIRECT_* steps) */
	enum pn_dtype dtype;
	enum pn_redop op;
	int avg_div;		/* avg divides by this (0: the communicator's nranks) */
};

int pn_exec_run(struct pn_exec *e, const struct pn_sched *s, const struct pn_exec_args *a);

#endif
