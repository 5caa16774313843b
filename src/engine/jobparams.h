/* SPDX-License-Identifier: MIT */
/*
 * Job parameters every rank must agree on (sizes, type, iterations ...).
 * A command fills one pn_job_param per option from its parsed values (the
 * canonical value, so "1K" and "1024" agree); pn_job_params_agree() compares
 * them across the job at start-up, before anything could run with ranks that
 * disagree (wrong values that look like corruption, deadlocks).
 *
 * One allgather of a fixed-size digest per rank (one 64-bit digest per
 * parameter); only on a mismatch a second round carries the first differing
 * parameter's value from every rank, for the message:
 *   "ranks disagree on -d: rank 0 float, rank 3 half"
 * Every rank gets the same result.
 */
#ifndef PENNY_JOBPARAMS_H
#define PENNY_JOBPARAMS_H

#include <stddef.h>
#include <stdint.h>

#define PN_JOB_MAX_PARAMS 32
#define PN_JOB_NAME_LEN 24
#define PN_JOB_VALUE_LEN 72 /* shown in the message; the digest covers all of it */
#define PN_JOB_MSG_RANKS 3  /* differing ranks named before "and N more" */

struct pn_job_param {
	char name[PN_JOB_NAME_LEN];   /* as the user spells the option: "-d" */
	char value[PN_JOB_VALUE_LEN]; /* canonical value, truncated for the message */
	uint64_t digest;	      /* of name and the whole value */
};

/* Set p to name = the formatted value. */
void pn_job_param_set(struct pn_job_param *p, const char *name, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Set p to name = a digest of len bytes (a file's content): "content 0123abcd...". */
void pn_job_param_content(struct pn_job_param *p, const char *name, const void *data,
			  size_t len);
/*
 * Set p to name = a digest of the file at path's content (the same name may
 * hold different files on different hosts): "none" when path is NULL,
 * "unreadable" when it cannot be read (the command says why later).
 */
void pn_job_param_file(struct pn_job_param *p, const char *name, const char *path);
/* 64-bit digest of bytes (FNV-1a, then a 64-bit finalizer). */
uint64_t pn_job_digest(const void *data, size_t len, uint64_t seed);

struct pn_boot;

/*
 * Compare p[0..n) (n <= PN_JOB_MAX_PARAMS) with every rank's.  0 when all
 * agree; else -EINVAL on every rank with the message set (pn_errmsg), and
 * *differs (may be NULL) is 1 on the ranks whose value differs from rank
 * 0's (the ranks the message is about besides rank 0).  Other errors are
 * the rendezvous's.
 */
int pn_job_params_agree(struct pn_boot *b, const struct pn_job_param *p, int n, int *differs);

/*
 * The comparison itself, for the tests: digests[r * PN_JOB_MAX_PARAMS + i]
 * is rank r's digest of parameter i (0 beyond its count).  Returns the
 * first parameter index where some rank differs from rank 0, or -1.
 */
int pn_job_params_first_diff(const uint64_t *digests, int nranks);
/*
 * The message for parameter index i, from every rank's name and value of
 * it (names[r], values[r]) and digests as above: "ranks disagree on NAME:
 * rank 0 V0, rank 3 V3, rank 5 V5, rank 7 V7 and 2 more".
 */
void pn_job_params_message(char *out, size_t len, int i, const uint64_t *digests, int nranks,
			   const char *const *names, const char *const *values);

#endif
