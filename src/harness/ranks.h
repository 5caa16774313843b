/* SPDX-License-Identifier: MIT */
/*
 * What one rank of a job uses (its GPU by PCI address, its NIC) and the
 * rule that two ranks of one node must not share a GPU: allreduce-test's
 * GPU sweep refuses by it, penny check's ranks audit (check_ranks.h)
 * reports by it.
 */
#ifndef PENNY_RANKS_H
#define PENNY_RANKS_H

#include <stddef.h>

/* What one rank uses (fixed size: it travels in an allgather). */
struct pn_rank_use {
	int rank;
	int gpu;		/* index into its node's topology, -1 unknown */
	int path;		/* PN_PATH_* from the GPU to nic, -1 no NIC */
	int best_path;		/* from the GPU to the nearest NIC of all, -1 none */
	char host[64];
	char gpu_name[16];	/* "GPU1" */
	char busid[16];		/* the GPU's PCI address: what "one GPU" means */
	char nic[64];		/* the RDMA device it uses, "" none */
	char best_nic[64];	/* the nearest one */
	char why[96];		/* gpu -1: why */
};

/*
 * One GPU, two ranks (the audit's rule, and allreduce-test's on the GPU
 * the plugin opened): the index of another rank of r[0..n) whose GPU is
 * known and on r[i]'s host at r[i]'s PCI address; -1 none.
 */
int pn_ranks_shared_gpu(const struct pn_rank_use *r, int n, int i);
/*
 * The PCI address a GPU plugin's describe() line names in parentheses
 * ("NVIDIA H100 80GB HBM3 (0000:18:00.0) sm_90 ..."), in busid as
 * "dddd:bb:dd.f" (lower case): 0, or -1 when it names none.
 */
int pn_ranks_describe_busid(const char *desc, char *busid, size_t len);

#endif
