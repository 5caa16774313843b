/* SPDX-License-Identifier: MIT */
/*
 * The checks behind `penny check`: one health verdict for a node and for a
 * job.  Each check has a stable name, measures something, compares it with
 * an expectation that comes from the detected topology unless the config
 * (--config) or a baseline (--baseline) says otherwise, and hands its
 * results (base/verdict.h) to the run's list: PASS, FAIL, or SKIP with the
 * reason when it cannot run here (no GPU, no RDMA), never PASS for that.
 *
 * The driver (pn_check_run) loads the topology once, samples every NIC's
 * counters before the first check and after the last (the counters check
 * judges the increase of the error counters over the whole run), runs the
 * selected checks in the order of enum pn_check_id and, under a launcher,
 * gathers every node's results on rank 0, where the job's rule names any
 * node (NIC, GPU) more than a margin below the job's median.
 *
 * Nothing here prints: progress goes to the caller's callback.
 */
#ifndef PENNY_CHECK_H
#define PENNY_CHECK_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct pn_boot;
struct pn_topo;
struct pn_verdict_list;
struct pn_verdict_in;
struct pn_counters_set;
struct pn_check_cfg;
struct pn_check_baseline;
struct pn_xnode_env;

/* In the order they run; the names are the ones --only and --skip take. */
enum pn_check_id {
	PN_CHECK_INVENTORY,	/* "inventory" */
	PN_CHECK_PCIE,		/* "pcie" */
	PN_CHECK_COUNTERS,	/* "counters" (judged last, sampled around all the others) */
	PN_CHECK_NICBW,		/* "nic-bw" */
	PN_CHECK_GPUCOPY,	/* "gpu-copy" */
	PN_CHECK_ALLREDUCE,	/* "allreduce" */
	PN_CHECK_RAILS,		/* "rails" */
	PN_CHECK_SETTINGS,	/* "settings" (runs after pcie) */
	PN_CHECK_NCCLPATH,	/* "nccl-path" (with --nccl-log only) */
	PN_CHECK_RANKS,		/* "ranks" (under a launcher) */
	PN_CHECK_ALLTOALL,	/* "alltoall" (across nodes; runs after rails) */
	PN_CHECK_COUNT
};

#define PN_CHECK_ALL ((1u << PN_CHECK_COUNT) - 1)

/* "inventory", ...; NULL out of range. */
const char *pn_check_name(enum pn_check_id id);
/* "nic-bw,pcie" into a mask of (1u << id); -EINVAL (message names the word) otherwise. */
int pn_check_parse_list(const char *list, unsigned *mask);

/* The run: what the caller sets, and what the driver fills in. */
struct pn_check {
	/* in (pn_check_init gives the defaults) */
	unsigned mask;			/* checks to run: 1u << id */
	unsigned require;		/* of those, checks whose SKIP is a FAIL (--require) */
	int quick;			/* --quick: shorter measurements, see the man page */
	const struct pn_check_cfg *cfg;	/* --config, or the defaults; never NULL when run */
	const struct pn_check_baseline *baseline; /* --baseline, NULL none */
	struct pn_boot *boot;		/* under a launcher (started by the caller), NULL alone */
	double timeout;			/* bound on every wait, seconds */
	const char *plan_path;		/* --plan FILE for allreduce/rails, NULL: built from the topology */
	const char *devspec;		/* RDMA devices to check (bw's -d syntax), NULL: the node's */
	const char *backends;		/* GPU plugins to try in order; NULL: pn_check_backend_list's */
	const char *nccl_log;		/* --nccl-log FILE for nccl-path, NULL none */
	const char *transport;		/* --transport between the allreduce's ranks, NULL: probed */
	void (*progress)(void *arg, const char *check, const char *what); /* may be NULL */
	void *progress_arg;
	/* the environment's knobs, read by the command (penny(1)); NULL: unset */
	const char *node_id;		/* PENNY_NODE_ID: this node's name */
	const char *tune_file;		/* PENNY_TUNE_FILE: the allreduce's tuning table */
	const char *ib_hca;		/* PENNY_IB_HCA: the engine's verbs ports */
	int ib_disable;			/* PENNY_IB_DISABLE: no verbs in the engine */
	const struct pn_xnode_env *xnode; /* PENNY_XNODE_*: the GPU path across nodes */
	const char *exe;		/* the penny binary the decision table's A/B runs
					 * afresh (default "/proc/self/exe"), NULL: no A/B */

	/* filled by the driver before the checks run */
	char node[64];			/* this node's name: node_id, the tree's host, hostname */
	struct pn_topo *topo;		/* this node's topology (through the sysfs root) */
	struct pn_counters_set *before;	/* every NIC port's counters before the first check */
	int rank, nranks;		/* 0, 1 alone */
	int node_index, nnodes;		/* pn_boot_node(rank), pn_boot_nnodes; 0, 1 alone */
	int node_leader;		/* this rank runs the node's own checks (local rank 0) */
	/* the CPUs of this node's ranks (the union of their homes,
	 * pn_boot_home_cpus): what the node's own allreduce runs on */
	unsigned char cpus[128];
	int ncpus;			/* CPUs set in cpus; 0: unknown (the caller's) */

	/* out */
	struct pn_verdict_list *results; /* this rank's; after pn_check_run on rank 0: the job's */
	int exit_code;			/* pn_verdict_exit_code of the job's list, on every rank */
	char job_backend[16];		/* the backend the job's allreduce ran on, "" none */
};

/* The GPU plugins the checks try, in order: --backend's list, else "cuda,nccl". */
const char *pn_check_backend_list(const struct pn_check *c);

void pn_check_init(struct pn_check *c);
/*
 * Run the selected checks (collective under a launcher: every rank calls
 * it with the same mask and quick).  Returns 0 when the checks ran (their
 * verdicts are in c->results and c->exit_code), a negative errno (message
 * in pn_errmsg) when they could not run at all (then exit 2).
 */
int pn_check_run(struct pn_check *c);
void pn_check_release(struct pn_check *c);

/*
 * The expectation of one numeric result where higher is better: the config
 * key (when set, source "config: KEY"), else the baseline's measured value
 * of the same check and target times its fraction (source "baseline: X of
 * Y"), else dflt with dflt_source ("topology: port rate 400 Gb/s x 90%").
 * The source goes to src (len bytes).
 */
double pn_check_expect(const struct pn_check *c, const char *check, const char *target,
		       const char *key, double dflt, const char *dflt_source, char *src, size_t len);

/*
 * Add a result to c->results (node: c->node when in->node is NULL).  A
 * result past the list's cap is counted, not kept, and is no error: 0, or
 * a negative errno only for what should stop the run (-ENOMEM) or a
 * malformed result (-EINVAL, a bug).
 */
int pn_check_add(struct pn_check *c, const struct pn_verdict_in *in);
/* Is RDMA port dev/port among c->devspec ("mlx5_0,mlx5_1:1"; NULL: all)?
 * port 0: is any port of dev (or dev itself) named? */
int pn_check_port_selected(const struct pn_check *c, const char *dev, int port);

/* Progress line (when the caller asked for it). */
void pn_check_progress(const struct pn_check *c, const char *check, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/*
 * The checks.  Each adds its results to c->results (node c->node) and
 * returns 0, also when it FAILs or SKIPs; a negative errno only when the
 * run cannot go on (memory, a job abort).  The node's own checks run on the
 * node leader only; nic-bw, allreduce and rails are collective under a
 * launcher (every rank calls them).
 */
int pn_check_inventory(struct pn_check *c);	/* check_node.c */
int pn_check_pcie(struct pn_check *c);		/* check_node.c */
int pn_check_counters(struct pn_check *c);	/* check_node.c: judged after the others */
int pn_check_nicbw(struct pn_check *c);		/* check_net.c */
int pn_check_gpucopy(struct pn_check *c);	/* check_gpu.c */
int pn_check_allreduce(struct pn_check *c);	/* check_ar.c */
int pn_check_rails(struct pn_check *c);		/* check_net.c */
int pn_check_settings(struct pn_check *c);	/* check_platform.c */
int pn_check_ncclpath(struct pn_check *c);	/* check_nccl.c */
int pn_check_ranks(struct pn_check *c);		/* check_ranks.c */
int pn_check_alltoall(struct pn_check *c);	/* check_a2a.c */

/* Run check id now (the driver's step: node checks on the node leader). */
int pn_check_run_one(struct pn_check *c, int id);
/*
 * The decision table (check_diag.c, check_diag.h): after the checks, when
 * an allreduce missed, run what the table needs that did not run
 * (collective); on rank 0 after the gather, add the "diagnosis" result
 * naming the likely layer and the evidence.
 */
/* The checks (1 << id) the table calls for that did not run, the union over
 * every rank (collective); 0 when the allreduce did not run. */
int pn_check_diag_need(struct pn_check *c, uint32_t *need);
int pn_check_diag_verdict(struct pn_check *c);
/*
 * How much longer than --timeout a rank waits for the others in the steps
 * after the checks (the diagnosis, the A/B, NCCL's log of the job): the
 * longest one rank's step may keep it from the next collective, a node's
 * NCCL log capture (its allreduce killed at 2 x timeout + 10 s) and then
 * the CUDA driver's version asked of each GPU plugin of the list (timeout
 * each).  Every rank computes the same (the ranks agree on --timeout and
 * --backend before anything runs).
 */
double pn_check_diag_bound(const struct pn_check *c);
/*
 * The A/B of the job's NIC choice (check_ab.c, check_diag.h): when the
 * job's allreduce on nccl missed its expectation, every rank runs c->exe
 * allreduce-test afresh with NCCL_IB_HCA pinned to its GPU's rail NIC;
 * rank 0 adds the result, target "job-rail" (collective).
 */
int pn_check_rail_ab(struct pn_check *c);
/*
 * nccl-path across nodes without --nccl-log (check_nccl.c; the capture
 * is check_ncclrun.c's): every rank runs a small allreduce of the job on
 * nccl afresh with NCCL_DEBUG=INFO into a private directory; each node's
 * ranks' logs reach its leader through the job's bootstrap, and it judges
 * them against the node's topology (rows of its node; the gather takes
 * them to rank 0).  Collective.
 */
int pn_check_ncclpath_job(struct pn_check *c);

/*
 * The baseline (check_base.c): --save-baseline writes the numeric results
 * of a run (check, target, measured, unit) as one JSON document; --baseline
 * reads it back (bounded, strict JSON).  A figure is found by check and
 * target, whatever node it was saved on.
 */
int pn_check_baseline_load(struct pn_check_baseline **b, const char *path);
/* The same from buf[0, len) (name: for messages); *b NULL on an error. */
int pn_check_baseline_parse(struct pn_check_baseline **b, const char *buf, size_t len,
			    const char *name);
void pn_check_baseline_free(struct pn_check_baseline *b);
/* The saved measurement of check/target: 0 (*v set), or -ENOENT (no message). */
int pn_check_baseline_find(const struct pn_check_baseline *b, const char *check,
			   const char *target, double *v);
/* Write l's numeric results; 0 or -EIO. */
int pn_check_baseline_write(FILE *f, const struct pn_verdict_list *l);

/*
 * The job's rule (rank 0, after the gather; exposed for tests): results of
 * nic-bw, gpu-copy and allreduce with a numeric measurement, grouped by
 * check, unit, expected value and kind of target (the target with its
 * digits left out: "mlx5_0/1" is one kind with "mlx5_3/1", "GPU0:h2d" is
 * not one with "GPU0-GPU1"), where a group has at least 2; a PASS
 * more than margin (a fraction) below its group's median becomes a FAIL,
 * source "job median of N".  Returns how many it failed.
 */
int pn_check_job_median(struct pn_verdict_list *l, double margin);

/*
 * The rule of --require (rank 0, after the job's median; exposed for
 * tests): every SKIP of a check in require (1u << id) becomes a FAIL,
 * source "--require", its reason kept; a required check with no result at
 * all gets a FAIL of its own (node, target "-").  Returns how many results
 * it failed or added, or -ENOMEM.
 */
int pn_check_require(struct pn_verdict_list *l, unsigned require, const char *node);

#endif
