/* SPDX-License-Identifier: MIT */
/*
 * The A/B of the decision table (check_ab.c): the job's allreduce rerun
 * with each rank's NCCL_IB_HCA pinned to its GPU's rail NIC.
 */
#ifndef PENNY_CHECK_AB_H
#define PENNY_CHECK_AB_H

struct pn_check;
struct pn_verdict_list;

/*
 * When the job's allreduce on nccl missed its expectation, every rank runs
 * c->exe allreduce-test afresh with NCCL_IB_HCA pinned to its GPU's rail
 * NIC; rank 0 adds the result, target "job-rail" (collective).
 */
int pn_check_rail_ab(struct pn_check *c);

/*
 * The index of the job's allreduce row (target "job") when it missed its
 * expectation on busbw (a FAIL whose measured rate is below its expected
 * one) and no "job-rail" row is there yet; else -1.  Its run's output is
 * read by pn_check_ar_parse (check_ar.h).
 */
int pn_diag_ab_wanted(const struct pn_verdict_list *l);

#endif
