/* SPDX-License-Identifier: MIT */
/*
 * NCCL's log captured from an allreduce on the nccl plugin, for nccl-path
 * without --nccl-log (check_ncclrun.c), and the CUDA driver API version
 * asked of the GPU plugins.
 */
#ifndef PENNY_CHECK_NCCLRUN_H
#define PENNY_CHECK_NCCLRUN_H

#include <stddef.h>

struct pn_check;

/*
 * This node's NCCL log for nccl-path without --nccl-log (check_ncclrun.c):
 * one small allreduce over the nccl plugin, one rank per GPU, with
 * NCCL_DEBUG=INFO into a private directory.  0 with the log in *buf
 * (malloc'ed, *len bytes), 1 when it cannot run here (why says why: no
 * plugin, fewer than 2 GPUs, the allreduce failed), or a negative errno.
 */
int pn_ncclpath_capture(struct pn_check *c, char **buf, size_t *len, char *why, size_t wlen);
/*
 * The job's NCCL log across nodes for nccl-path (check_ncclrun.c,
 * collective): the same debug variables in a fresh job of every rank
 * (pn_check_fresh_job), each rank's log (JOB_LOG_MAX, cut at a line) to
 * the first rank of its node through the job's bootstrap.  0 with, on a
 * node's first rank, its ranks' logs in *node (malloc'ed, *nlen bytes; may
 * be NULL when empty); 1 with why on every rank when it did not run or a
 * rank's allreduce failed (named); a negative errno.
 */
int pn_ncclpath_capture_job(struct pn_check *c, char **node, size_t *nlen, char *why,
			    size_t wlen);

/*
 * The CUDA driver API version (12040 for 12.4) the first GPU plugin of
 * list ("cuda,nccl") that reports one gives (its driver_version: the
 * driver's cuDriverGetVersion), asked in a child as every GPU call is
 * (check_ncclrun.c).  0 with *version; 1 when none could (why says why);
 * a negative errno only for what should stop the run.
 */
int pn_check_cuda_api(const char *list, double timeout, int *version, char *why, size_t wlen);

#endif
