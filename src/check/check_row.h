/* SPDX-License-Identifier: MIT */
/*
 * What every check of `penny check` uses (check_row.c): the checks' ids,
 * the run (struct pn_check: what the caller sets, what the driver fills
 * in, what comes out), the expectation rule, a result row, the progress
 * line and --dev's port selection.  The driver is check.h.
 */
#ifndef PENNY_CHECK_ROW_H
#define PENNY_CHECK_ROW_H

#include "base/verdict.h"

#include <stddef.h>

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
	char *nccl_text;		/* its content (pn_check_ncclpath_load), freed by
					 * pn_check_release; NULL: read when the check runs */
	size_t nccl_len;
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
	/* this node's name: node_id, the tree's host, hostname; one longer
	 * than a row holds (a 64-byte hostname) cut visibly (pn_check_row_name) */
	char node[PN_VERDICT_NAME];
	char *names;			/* every rank's node (PN_VERDICT_NAME bytes each), as
					 * its rows name it; NULL alone (pn_check_node_of) */
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
/*
 * --backend as given, before anything runs: every entry a plugin whose
 * file is in the search path (src/gpu/plugin.h; one found that cannot
 * start is the checks' SKIP later) or "host" (the host engine, no GPU
 * plugin).  0, or -EINVAL / -ENOENT with "--backend: " and the reason (a
 * list too long, not a plugin name, a name no file answers to and where it
 * looked).
 */
int pn_check_backends_found(const char *list);

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
/* name into out (len bytes) whole when it fits, else cut visibly: its
 * first bytes (at a UTF-8 character) and "..."; 1 when it was cut. */
int pn_check_row_name(char *out, size_t len, const char *name);
/* Rank r's node as its rows name it (c->node on every rank; details that
 * name another rank's node use this, never a cut of their own). */
const char *pn_check_node_of(const struct pn_check *c, int r);
/* Is RDMA port dev/port among c->devspec ("mlx5_0,mlx5_1:1"; NULL: all)?
 * port 0: is any port of dev (or dev itself) named? */
int pn_check_port_selected(const struct pn_check *c, const char *dev, int port);
/* -d's first entry that no RDMA device or port of this node answers (1,
 * the entry in out), or 0: a typo there must not pass a node it never
 * looked at. */
#define PN_CHECK_ENTRY_LEN 72
int pn_check_devspec_missing(const struct pn_check *c, char out[PN_CHECK_ENTRY_LEN]);

/* Progress line (when the caller asked for it). */
void pn_check_progress(const struct pn_check *c, const char *check, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/*
 * The checks (each declared in its family's header: check_node.h,
 * check_net.h, check_gpu.h, ...).  Each adds its results to c->results
 * (node c->node) and returns 0, also when it FAILs or SKIPs; a negative
 * errno only when the run cannot go on (memory, a job abort).  The node's
 * own checks run on the node leader only; nic-bw, allreduce and rails are
 * collective under a launcher (every rank calls them).
 */

#endif
