/* SPDX-License-Identifier: MIT */
/*
 * The allreduce check of `penny check` (check_ar.c): its rows are
 * `penny allreduce-test` runs, started afresh, so that a row and
 * allreduce-test on the same GPUs are one measurement by one timing rule;
 * the pure parts here are unit-tested (tests/unit/t_checkar.c).
 */
#ifndef PENNY_CHECK_AR_H
#define PENNY_CHECK_AR_H

#include <stddef.h>
#include <stdint.h>

struct pn_check;
struct pn_verdict_list;

#define PN_AR_MAX_SIZES 4

/* What one allreduce-test run measured (its --json), out of place. */
struct pn_ar_meas {
	char backend[32];
	int nranks;
	int nsizes;
	uint64_t bytes[PN_AR_MAX_SIZES];
	double busbw[PN_AR_MAX_SIZES];	/* GB/s of the time allreduce-test reports */
	/* the busbw of its slowest and fastest timed block (NAN: not reported) */
	double busbw_min[PN_AR_MAX_SIZES], busbw_max[PN_AR_MAX_SIZES];
	uint64_t wrong, differ;
};

/*
 * allreduce-test's --json output (len bytes) into *m: every row's size and
 * out-of-place busbw (the first PN_AR_MAX_SIZES rows), the block extremes
 * where the rows carry them, the summary's wrong and differing outputs.
 * 0; -EINVAL with why (wlen bytes) for what is not that output, no row, or
 * a row that is not a rate.
 */
int pn_check_ar_parse(const char *json, size_t len, struct pn_ar_meas *m, char *why,
		      size_t wlen);

/*
 * The node's expectation from its own copies: the slowest GPU pair of the
 * gpu-copy results of node in l (targets "GPUa-GPUb" with a measured
 * rate), times factor, with its source in src ("gpu-copy: slowest pair
 * GPU0-GPU2 345.8 GB/s measured x 75%").  0 with *exp; -ENOENT when l has
 * no such pair.
 */
int pn_check_ar_copy_expect(const struct pn_verdict_list *l, const char *node, double factor,
			    double *exp, char *src, size_t len);

/*
 * One allreduce of bytes on nranks ranks of this node over plugin backend,
 * run afresh (for what it leaves behind: NCCL's debug log, the environment
 * the caller set).  0, or a negative errno with a message.
 */
int pn_check_ar_probe(const struct pn_check *c, const char *backend, int nranks,
		      uint64_t bytes);

/* The check's entry (check_row.h's rule: results to c->results, 0 also on
 * FAIL or SKIP, a negative errno only when the run cannot go on). */
int pn_check_allreduce(struct pn_check *c);	/* collective under a launcher */

#endif
