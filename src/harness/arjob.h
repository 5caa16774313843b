/* SPDX-License-Identifier: MIT */
/*
 * One allreduce job (arjob.c), the same for `penny allreduce-test` and
 * `penny check`'s allreduce: over a started boot, the communicator, the
 * tuning table, the collective (with a plan's rings), its backends (the
 * host engine, GPU plugins) and the sweep over each of them.  `penny
 * coll-test` runs the same job for another collective (cfg.kind), on the
 * host engine and on GPU plugins that have it.
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
	/* the backends in the order they run: a comma list of "host" (the
	 * engine) and GPU plugins, each name checked (aropts.h) */
	const char *backends;
	const enum pn_algo *algos;	/* the host's algorithms */
	int nalgos;
	enum pn_coll_kind kind;		/* 0: allreduce; another: the host's calgos, the
					 * GPU plugins' member of it */
	const enum pn_calgo *calgos;
	int ncalgos;
	uint64_t max_bytes;		/* the host's buffers */
	struct pn_sweep_gpu_cfg gpu;	/* every GPU backend's (its name is set for each) */
	int describe;			/* GPU backends: every rank's device into desc[] */
};

struct pn_arjob {
	struct pn_comm *comm;
	struct pn_tune tune;
	struct pn_coll coll;
	struct pn_sweep_backend *be[PN_ARJOB_MAX_BACKENDS];
	int nbe;
	char *desc[PN_ARJOB_MAX_BACKENDS];	/* describe: a GPU backend's every rank's
						 * device (PN_SWEEP_DESC_LEN each); NULL host */
	int gpu_failed;		/* the error is a GPU backend's that did not open: every
				 * rank has the same (first failing rank's) message */
};

/*
 * Collective over the boot's ranks: the communicator, the table, the
 * collective and the plan's rings, then every backend of the list, in that
 * order; -EINVAL when a backend can run none of its algorithms (the job
 * agrees on that: pn_sweep_runnable).  0 or -errno with a message;
 * pn_arjob_close releases what was opened either way.
 */
int pn_arjob_start(struct pn_arjob *j, struct pn_boot *b, const struct pn_arjob_cfg *cfg);
/* The sweep sw (its sizes, type, iterations and sink set) over every backend
 * in order; stops at the first error. */
int pn_arjob_run(struct pn_arjob *j, struct pn_sweep *sw);
/*
 * The whole run, as nccl-tests orders it: cycles times (-N), every type of
 * dtypes (-d all), every op of ops (-o all), the sizes of min..max (by
 * factor, else step; pn_sweep_sizes in the type's elements, each row's
 * size once: pn_sweep_distinct) over every
 * backend.  sw->sizes and nsizes, dtype and op are set for each (sizes:
 * p->sizes, the last combination's after it, free() it); the rows
 * accumulate in sw.
 */
struct pn_arjob_plan {
	uint64_t minbytes, maxbytes, stepbytes;
	double factor;
	const enum pn_dtype *dtypes;
	int ndtypes;
	const enum pn_redop *ops;
	int nops;
	int cycles;
	uint64_t *sizes;	/* out */
};
int pn_arjob_sweep(struct pn_arjob *j, struct pn_sweep *sw, struct pn_arjob_plan *p);
void pn_arjob_close(struct pn_arjob *j);

#endif
