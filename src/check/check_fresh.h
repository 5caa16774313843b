/* SPDX-License-Identifier: MIT */
/*
 * A fresh job of the check's ranks, each an `allreduce-test` (check_fresh.c):
 * the job's allreduce row, the A/B (check_ab.c) and NCCL's log of the job
 * (check_ncclrun.c) run in it.
 */
#ifndef PENNY_CHECK_FRESH_H
#define PENNY_CHECK_FRESH_H

#include <stddef.h>
#include <stdint.h>

struct pn_check;

/*
 * A fresh job of the job's ranks (check_ab.c): the job's allreduce row,
 * and what the ranks' own NCCL cannot do once initialised (it reads its
 * environment once per process): every rank execs c->exe `allreduce-test
 * --json` with args (NULL-terminated: the backend, the sizes, ...) as rank
 * c->rank of a new job with env ("NAME=VALUE", at most 8) added to its
 * environment; the new ranks meet
 * on a free port of the job's rendezvous host with a fresh secret, handed
 * out through the job's bootstrap.  Each of its waits gets a quarter of
 * --timeout and it is killed at 0.8 times --timeout, before the job's own
 * ranks give up on this one.  Collective; ok: this rank can take part (no:
 * why not, "has no rail NIC: ..."), else none runs.  0: *run is this
 * rank's child (its output; pn_run_release it), ends[c->nranks] how every
 * rank's ended; 1 when it did not start (why: "rank R (node N) NO", or
 * rank 0's reason, on every rank); a negative errno when the job cannot
 * go on.
 */
struct pn_fresh_end {
	int32_t failed;
	int32_t killed;		/* by a signal, or at the deadline */
	char why[228];
};
struct pn_run;
int pn_check_fresh_job(struct pn_check *c, int ok, const char *no, const char *const *env,
		       const char *const *args, struct pn_run *run, struct pn_fresh_end *ends,
		       char *why, size_t wlen);
/*
 * The arguments every fresh allreduce-test of check ends with, appended to
 * argv from argv[n] (max entries in all, NULL-terminated): the sysfs root
 * the check reads, the job's --transport, then extra (NULL-terminated).
 * The new count, or -E2BIG when they do not fit.
 */
int pn_check_ar_argv_tail(const struct pn_check *c, const char **argv, int n, int max,
			  const char *const *extra);
/* The rank whose fresh child died or was killed (its end the cause, the
 * others' the effect), else the first that failed; -1 none. */
int pn_fresh_failed(const struct pn_fresh_end *ends, int n);

#endif
