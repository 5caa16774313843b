/* SPDX-License-Identifier: MIT */
/*
 * The nccl-path check of `penny check` (check_nccl.c): the paths NCCL
 * chose (nccllog.h) judged against the node's topology.
 */
#ifndef PENNY_CHECK_NCCL_H
#define PENNY_CHECK_NCCL_H

struct pn_check;

/* The check's entry (check_row.h's rule: results to c->results, 0 also on
 * FAIL or SKIP, a negative errno only when the run cannot go on). */
int pn_check_ncclpath(struct pn_check *c);
/*
 * Read c->nccl_log (--nccl-log) into c->nccl_text now, before any check
 * runs (base/file.h's reader: a missing, unreadable, special or too large
 * file is refused in one line); 0 also without one.
 */
int pn_check_ncclpath_load(struct pn_check *c);
/*
 * nccl-path across nodes without --nccl-log (check_nccl.c; the capture
 * is check_ncclrun.c's): every rank runs a small allreduce of the job on
 * nccl afresh with NCCL_DEBUG=INFO into a private directory; each node's
 * ranks' logs reach its leader through the job's bootstrap, and it judges
 * them against the node's topology (rows of its node; the gather takes
 * them to rank 0).  Collective.
 */
int pn_check_ncclpath_job(struct pn_check *c);

#endif
