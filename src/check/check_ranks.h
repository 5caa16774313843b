/* SPDX-License-Identifier: MIT */
/*
 * The pure parts of the ranks check (check_ranks.c), for the unit tests:
 * which GPU a rank opens, which NICs NCCL_IB_HCA lets it use, and the
 * audit of the job's mapping.
 */
#ifndef PENNY_CHECK_RANKS_H
#define PENNY_CHECK_RANKS_H

struct pn_check;

#include "base/verdict.h"
#include "harness/ranks.h"

#include <stddef.h>

/*
 * The GPU (index in PCI order, of ngpus) that local rank opens: CUDA's
 * device local_rank % visible, the visible devices CUDA_VISIBLE_DEVICES'
 * indices (cvd; NULL: all GPUs), which CUDA takes up to the first entry it
 * cannot use.  -1 when none is visible by index (a UUID, MIG, empty).
 */
int pn_ranks_visible(const char *cvd, int local_rank, int ngpus);

/*
 * How many of ngpus GPUs (PCI order) CUDA_VISIBLE_DEVICES (cvd; NULL: all)
 * leaves visible, the hidden ones named into hidden ("GPU3,GPU5", hlen
 * bytes); -1 when cvd names GPUs other than by index (UUIDs, MIG).
 */
int pn_ranks_visible_count(const char *cvd, int ngpus, char *hidden, size_t hlen);

/* Does NCCL_IB_HCA (or -d) hca let a rank use nic ("mlx5_0")?  NCCL's
 * syntax: a list of name prefixes with optional ":port", "=" for exact
 * names, "^" to exclude.  NULL or "": every NIC. */
int pn_ranks_nic_allowed(const char *hca, const char *nic);

/*
 * The audit of n ranks: v[i] and det[i] for rank r[i]: FAIL when another
 * rank of its host uses its GPU, or when its NIC is NODE or SYS from its
 * GPU while a nearer one exists; SKIP when its GPU is unknown; else PASS.
 */
void pn_ranks_audit(const struct pn_rank_use *r, int n, enum pn_verdict *v, char (*det)[160]);

/* The check's entry (check_row.h's rule: results to c->results, 0 also on
 * FAIL or SKIP, a negative errno only when the run cannot go on). */
int pn_check_ranks(struct pn_check *c);	/* under a launcher */

#endif
