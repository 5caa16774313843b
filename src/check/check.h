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
 * The run's struct and what every check uses are check_row.h's; each
 * check's entry is its family's header (check_node.h, check_net.h, ...).
 * Nothing here prints: progress goes to the caller's callback.
 */
#ifndef PENNY_CHECK_H
#define PENNY_CHECK_H

#include "check/check_row.h"

#include <stdint.h>

struct pn_boot;
struct pn_check_cfg;
struct pn_verdict_list;

/* "inventory", ...; NULL out of range. */
const char *pn_check_name(enum pn_check_id id);
/* "nic-bw,pcie" into a mask of (1u << id); -EINVAL (message names the word) otherwise. */
int pn_check_parse_list(const char *list, unsigned *mask);

/*
 * The checks a run selects, from the command's options as given (NULL:
 * unset): --only, --skip, --require, --nccl-log (a path), --passive, -d
 * (checked as topo's, node/topo_check.h), --backend (pn_check_backends_found)
 * and --config's path for messages.
 */
struct pn_check_sel {
	const char *only, *skip, *require, *nccl_log, *config, *dev, *backend;
	int passive;
};
/*
 * The mask of checks to run: --only minus --skip; alltoall only when
 * --only or --require names it; --passive keeps the checks that only read
 * (and refuses an --only that names another); -EINVAL (message) when
 * --nccl-log is given without nccl-path, no check is left, -d is not a
 * list of DEV or DEV:PORT or --backend names a plugin not found (-ENOENT).
 */
int pn_check_select(const struct pn_check_sel *s, unsigned *mask);
/*
 * The checks whose SKIP is a FAIL: --require's and the config's
 * job.require (of those in mask); -EINVAL (message) when --require names
 * a check that does not run or a list does not parse.
 */
int pn_check_required(const struct pn_check_sel *s, const struct pn_check_cfg *cfg,
		      unsigned mask, unsigned *req);
/*
 * Under a launcher every rank runs the same checks the same way: the
 * options that choose or shape the work (the checks, --quick, --timeout,
 * --plan's content, --backend, --transport, --require as given) and every
 * configuration key's value are compared before anything runs (collective).
 * A rank that differs fails the job at once: -EINVAL on every rank, one
 * line naming the option or key and the ranks ("ranks disagree on --only:
 * rank 0 inventory,pcie, rank 2 inventory"), *say set on rank 0 and the
 * ranks that differ; another negative errno (*say set) when the exchange
 * fails.  Per-node choices (-d, outputs, --baseline, --nccl-log's path)
 * are not compared.
 */
int pn_check_agree(struct pn_boot *b, const struct pn_check *c, const char *require, int *say);

void pn_check_init(struct pn_check *c);
/*
 * Run the selected checks (collective under a launcher: every rank calls
 * it with the same mask and quick).  Returns 0 when the checks ran (their
 * verdicts are in c->results and c->exit_code), a negative errno (message
 * in pn_errmsg) when they could not run at all (then exit 2).
 */
int pn_check_run(struct pn_check *c);
void pn_check_release(struct pn_check *c);

/* Run check id now (the driver's step: node checks on the node leader). */
int pn_check_run_one(struct pn_check *c, int id);
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
