/* SPDX-License-Identifier: MIT */
/*
 * The decision table of `penny check` (check_diag.c): when the allreduce
 * misses its expectation, which measurement comes next and which layer is
 * most likely to blame, from the results of the run (pure: a verdict list
 * in, a decision out, for the unit tests).
 *
 *   allreduce on the node slow, GPU-to-GPU copies slow too   physical path
 *   (P2P, NVLink, PCIe, ACS, IOMMU, a container's PCI tree)
 *   allreduce on the node slow, copies fast                  NCCL path
 *   selection or rank mapping
 *   allreduce of the job slow, NICs slow (or counting errors) network
 *   allreduce of the job slow, NICs fast                     NCCL path
 *   selection (NIC, GPUDirect RDMA, GPU-NIC affinity)
 *   every measurement below it fast, no finding              kernel (the
 *   collective's implementation)
 *
 * A finding of nccl-path, ranks or settings is evidence for the layer it
 * belongs to; a measurement the table needs that did not run is asked for
 * first (gpu-copy for the node, nic-bw for the job, nccl-path).
 *
 * The A/B of the job's NIC choice: a result of check "allreduce", target
 * "job-rail", is the job's allreduce rerun with each rank's NCCL_IB_HCA
 * pinned to its GPU's rail NIC, in fresh processes (check_ab.c runs it
 * when the job's allreduce on nccl missed).  Where the NICs are fast,
 * pn_diag_ab on its busbw against the job's decides: pinning recovers the
 * expectation (or PN_DIAG_AB_GAIN times the busbw as run): NCCL path
 * selection, the row as evidence (also where the NICs were not measured);
 * it changes nothing: NCCL's NIC choice is ruled out, and without another
 * finding the layer is the kernel.
 */
#ifndef PENNY_CHECK_DIAG_H
#define PENNY_CHECK_DIAG_H

#include <stdint.h>

struct pn_check;

#include "base/verdict.h"

#include <stddef.h>

#define PN_DIAG_EVIDENCE 8

struct pn_diag {
	int missed;		/* an allreduce FAILed: the table applies */
	unsigned need;		/* checks (1u << enum pn_check_id) the table wants that did not run */
	const char *layer;	/* "physical path", "NCCL path selection", "network", "kernel",
				 * or "unknown" (a measurement it needs is missing) */
	char why[160];		/* the row of the table that decided */
	int nevidence;		/* results that point at the layer, by index in the list */
	int evidence[PN_DIAG_EVIDENCE];
};

/* What the A/B says: no answer (a value missing or not a rate), the rail
 * NIC is the fix, or it is not. */
enum pn_diag_ab { PN_AB_NONE, PN_AB_RAIL, PN_AB_NOT_RAIL };
#define PN_DIAG_AB_GAIN 1.2

/* as_run, pinned: the job's busbw (GB/s) as run and pinned; expected: the
 * job's expectation (0 or NaN: none). */
enum pn_diag_ab pn_diag_ab(double as_run, double pinned, double expected);

/* Decide over the results l (a run's, or the job's on rank 0). */
void pn_diag_decide(const struct pn_verdict_list *l, struct pn_diag *d);

/*
 * The decision table in the run: after the checks, when
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

#endif
