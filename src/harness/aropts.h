/* SPDX-License-Identifier: MIT */
/*
 * The options of an allreduce job as allreduce-test takes them (aropts.c):
 * the backend, algorithm and GPU lists checked and parsed, the parameters
 * every rank must agree on, and rank 0's output files (--csv, --plot,
 * --tune-out) opened before the work and written and committed after it.
 * Errors are one line in pn_errmsg(); cmd/ says them.
 */
#ifndef PENNY_AROPTS_H
#define PENNY_AROPTS_H

#include "base/ofile.h"
#include "engine/coll.h"
#include "engine/jobparams.h"
#include "harness/sweep.h"

#include <stdint.h>
#include <stdio.h>

#define PN_AROPTS_MAX_GPUS 1024

/* The options, as given; cmd/ fills them from its option table. */
struct pn_aropts {
	uint64_t minbytes, maxbytes, stepbytes, seed;
	double factor, min_busbw;	/* factor 0: not given; min_busbw < 0: none */
	int iters, warmup, check, graph, average;
	int blocks;			/* timed blocks per size (0: PN_TIMING_BLOCKS) */
	int agg, cycles;		/* nccl-tests' -m and -N, checked (0: 1) */
	enum pn_coll_kind kind;		/* 0: allreduce (allreduce-test); coll-test's */
	int root;			/* broadcast's and reduce's root (-r) */
	int share_gpus;			/* --share-gpus (GPU backends) */
	int fresh_input;		/* --fresh-input (the host backend) */
	const struct pn_artypes *types;	/* -d and -o as lists; NULL: the one dtype and op */
	const char *algo, *backends, *gpus, *plan, *transport;
	const char *csv, *plot, *tune_out;
};

/* nccl-tests' letters of all_reduce_perf that penny has no second way for
 * (-t -g -m -N -p -z -C -R), as given. */
struct pn_ar_nccl_tests {
	int nthreads, ngpus, agg_iters, run_cycles, parallel_init, blocking, cputime, reg;
};

/* -d and -o as nccl-tests takes them: one name or "all". */
struct pn_artypes {
	enum pn_dtype dtypes[PN_NDTYPES];
	int ndtypes;
	enum pn_redop ops[PN_NREDOPS];
	int nops;
};
/* d: a type or "all" (every type); op: an op or "all" (every op); for a
 * collective that does not reduce (collkind.h) the op is "none": one pass,
 * whatever op says.  0 or -EINVAL naming the option. */
int pn_aropts_types(const char *d, const char *op, enum pn_coll_kind k, struct pn_artypes *t);
/* coll-test's --algo for collective k: a comma list of pn_calgo names, each
 * once, "auto", or "all" (every algorithm k has).  0 or -EINVAL. */
int pn_aropts_calgos(const char *list, enum pn_coll_kind k, enum pn_calgo *algos, int *n);

/* What --backend and --gpus name, checked (aropts_backends). */
struct pn_arback {
	int has_host, ngpu;
	int dev[PN_AROPTS_MAX_GPUS], ndev;	/* --gpus; ndev -1: not given */
};

/* --backend (each name once, at most PN_ARJOB_MAX_BACKENDS) and --gpus, and
 * -G / --gpus only with a GPU backend.  0 or -EINVAL. */
int pn_aropts_backends(const struct pn_aropts *o, struct pn_arback *bk);
/* The host backend is in the list (no check: the prelaunch's quick look). */
int pn_aropts_has_host(const char *backends);
/* --algo: each algorithm once ("all" is every one but auto), at most
 * PN_SWEEP_MAX_ALGOS; names only GPU plugins have are skipped, and refused
 * when has_host.  0 or -EINVAL (-ENOMEM). */
int pn_aropts_algos(const char *list, int has_host, enum pn_algo *algos, int *n);
int pn_aropts_multiring(const enum pn_algo *algos, int nalgos);
/* --np: the planned memory of the np ranks about to be forked (coll: 1 for
 * coll-test's collectives; a --plan's rings are not read yet: one channel,
 * the ranks check again with them), when mem_check; 0, or -ENOSPC/-ENOMEM
 * with one line (options that do not parse: 0, the ranks report them). */
int pn_aropts_prelaunch(const struct pn_aropts *o, int np, int coll, const char *transport,
			int mem_check, int tuned);
/* -b against -e, and --plan against the backends and --algo: a --plan run
 * by the host is multiring (o->algo becomes it).  0 or -EINVAL. */
int pn_aropts_check(struct pn_aropts *o, const struct pn_arback *bk);
/* The run as the options give it (pn_arjob_sweep: the sizes, o->types'
 * lists, -N) into p, with the sizes in bytes (p->sizes, free() it; NULL on
 * an error pn_aropts_check said); returns how many. */
struct pn_arjob_plan;
size_t pn_aropts_plan(const struct pn_aropts *o, struct pn_arjob_plan *p);
/* Once the job is started, what its size nranks decides: -r a rank of it
 * (broadcast, reduce), and with --min-busbw a largest size of one element
 * at least (per rank where the size is the whole buffer: allgather,
 * reducescatter, alltoall) of every type of o->types.  0 or -EINVAL. */
int pn_aropts_job(const struct pn_aropts *o, int nranks);
/*
 * nccl-tests' letters: what penny honours is taken (-m, -N from 1, and on
 * the host -z, -C and -R 1, which the engine does anyway); what changes
 * nothing penny can honour is taken with a warning into warn (len bytes,
 * "" if none: -z and -C on GPU backends); another is -EINVAL with one line
 * "not supported by penny" and what to do (has_host, ngpu: the backends
 * given, algo: --algo).
 */
int pn_aropts_nccl_tests(const struct pn_ar_nccl_tests *t, int has_host, int ngpu,
			 const char *algo, char *warn, size_t len);
/* The sweep's parameters from the options: iterations (PN_TIMING_ITERS_AUTO:
 * by size), blocks, warm-up, the check, its seed, a size's time over the
 * ranks (--average 0..3), the collective, its root and -m. */
void pn_aropts_sweep(const struct pn_aropts *o, struct pn_sweep *sw);
/* Every option that changes the data or the schedule into p (at least
 * PN_JOB_MAX_PARAMS), as the ranks compare them; returns how many. */
int pn_aropts_params(const struct pn_aropts *o, enum pn_dtype dtype, enum pn_redop op,
		     const enum pn_algo *algos, int nalgos, struct pn_job_param *p);


/* Rank 0's output files. */
struct pn_arout {
	struct pn_ofile *csv_of, *plot_of, *tune_of;
	FILE *csv;	/* the rows' CSV while open */
	size_t csv_rows;	/* written to it */
	int csv_err;	/* a write error of the CSV file (not standard output) */
};

/* What the ranks settle before the work (pn_aropts_prepare). */
struct pn_arprep {
	/* in */
	enum pn_dtype dtype;
	enum pn_redop op;
	const enum pn_algo *algos;	/* the host's */
	int nalgos, has_host;
	int mem_check;			/* PENNY_MEM_CHECK: check the planned memory */
	int tuned;			/* a tuning file is given */
	/* out */
	struct pn_planned *plan;	/* --plan placed on the job (pn_planned_free) */
	int rc;				/* on an error the job found: its exit status */
	int say;			/* ... and this rank says it (pn_errmsg) */
};

/*
 * Every rank, before the work, each step agreed by all of them so that they
 * fail together: the parameters that change the data or the schedule (a
 * mismatch is -EINVAL naming the option and ranks, said by rank 0 and the
 * ranks that differ), rank 0's output files opened into w, --plan read and
 * placed on the job (its rings as cfg's channels and ports; multiring
 * without a plan: 2 channels), and the host's planned memory.  0, or the
 * error: p->rc set (2, or 1 for a plan out of memory) when the job found
 * it, with p->say on the rank that says it (the lowest that found it);
 * p->rc 0 when the agreement itself failed.
 */
struct pn_comm_cfg;
int pn_aropts_prepare(const struct pn_aropts *o, struct pn_boot *b, struct pn_arprep *p,
		      struct pn_arout *w, struct pn_comm_cfg *cfg);

/* -EINVAL with the line to say when two of --csv, --plot and --tune-out,
 * or one of them and --plan or PENNY_TUNE_FILE (tune_file), name one file. */
int pn_aropts_refuse_shared(const struct pn_aropts *o, const char *tune_file);
/* Open the files o names (nothing written yet); 0 or an error naming the
 * option. */
int pn_arout_open(struct pn_arout *w, const struct pn_aropts *o);
/*
 * A row of s into --csv, if open (its header line before the first),
 * flushed: 0, or the write error (a negative errno; in w->csv_err too
 * unless the CSV is standard output), so that a full disk stops the sweep
 * at once, not at the commit after the whole sweep ran.
 */
int pn_arout_row(struct pn_arout *w, const struct pn_sweep_row *rw, const struct pn_sweep *s);
/* After the sweep: the tuning table and the plot written, every file
 * committed. */
int pn_arout_finish(struct pn_arout *w, const struct pn_aropts *o, const struct pn_sweep *sw,
		    int nranks, int nnodes);
/* Not committed: a failed run leaves the files as they were. */
void pn_arout_abort(struct pn_arout *w);
/*
 * A row could not be written (pn_arout_row's err, a negative errno):
 * returns it with the line to say.  The CSV file (w->csv_err): "write
 * error on 'FILE': ...", standard output untouched.  Else standard output:
 * "write error on standard output: ..." or, where --csv, --plot or
 * --tune-out writes there too, "write error on '-': ..." as their commit
 * says it; stdout's unwritten bytes and error flag are dropped, so that
 * the exit's flush does not say it again.
 */
int pn_arout_stdout_failed(const struct pn_arout *w, int err);

#endif
