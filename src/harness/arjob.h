/* SPDX-License-Identifier: MIT */
/*
 * One allreduce job (arjob.c), the same for `penny allreduce-test` and
 * `penny check`'s allreduce: over a started boot, the communicator, the
 * tuning table, the collective (with a plan's rings), its backends (the
 * host engine, GPU plugins) and the sweep over each of them.
 */
#ifndef PENNY_ARJOB_H
#define PENNY_ARJOB_H

#include "engine/boot.h"
#include "engine/coll.h"
#include "engine/comm.h"
#include "engine/tune.h"
#include "harness/plansched.h"
#include "harness/sweep.h"

#define PN_ARJOB_MAX_BACKENDS 8

struct pn_arjob_cfg {
	struct pn_comm_cfg comm;	/* transport, channels, planned ports, IB knobs */
	const char *tune_file;		/* PENNY_TUNE_FILE (NULL or "": the built-in table) */
	const struct pn_planned *plan;	/* multiring over its rings; NULL: none */
};

struct pn_arjob {
	struct pn_comm *comm;
	struct pn_tune tune;
	struct pn_coll coll;
	struct pn_sweep_backend *be[PN_ARJOB_MAX_BACKENDS];
	int nbe;
};

/*
 * Collective over the boot's ranks: the communicator, the table, the
 * collective and the plan's rings, in that order.  0 or -errno with a
 * message; pn_arjob_close releases what was opened either way.
 */
int pn_arjob_open(struct pn_arjob *j, struct pn_boot *b, const struct pn_arjob_cfg *cfg);
/* A backend, collective: the host engine running algos (buffers up to
 * max_bytes) or a GPU plugin (the GPU plugin's own messages: gc's log). */
int pn_arjob_add_host(struct pn_arjob *j, const enum pn_algo *algos, int nalgos,
		      uint64_t max_bytes);
int pn_arjob_add_gpu(struct pn_arjob *j, const struct pn_sweep_gpu_cfg *gc);
/* The sweep sw (its sizes, type, iterations and sink set) over every backend
 * in order; stops at the first error. */
int pn_arjob_run(struct pn_arjob *j, struct pn_sweep *sw);
void pn_arjob_close(struct pn_arjob *j);

#endif
