/* SPDX-License-Identifier: MIT */
/*
 * The nvshmem plugin's host decisions, free of NVSHMEM and of the GPU (the
 * unit test tests/unit/t_nvshmem.c runs them): configuration from the
 * environment, the kernel an algorithm runs for a size, the grid, and
 * whether a call goes through the symmetric staging buffer.
 */
#ifndef PENNY_NV_PLAN_H
#define PENNY_NV_PLAN_H

#include <stdint.h>

#include "nv_kargs.h"

extern const char *const pn_nv_kern_names[PN_NV_NKERNS];

/* What pn_nv_kernel_for answers for the copy-engine allreduce (the cuda
 * plugin's cuda_ce.c on the symmetric heap's NVLink mappings): not an
 * nvshmem kernel. */
#define PN_NV_CE PN_NV_NKERNS
/* ... and for the cuda plugin's kernels (its size table, cuda_plan.c) on the
 * symmetric heap's NVLink mappings: the call's kernel is that table's. */
#define PN_NV_CUDA (PN_NV_NKERNS + 1)

struct pn_nv_cfg {
	int nranks;
	uint64_t ll_max;	/* the LL one-shot up to this many bytes (0: never) */
	int ll_ok;		/* every peer reached by NVLink, at most PN_NV_LL_MAX_PES */
	uint64_t oneshot_max;	/* auto: one-shot up to this many bytes */
	uint64_t simple_max;	/* then the simple ring up to this (0: never) */
	uint64_t twoshot_max;	/* then two-shot up to this, then the ring */
	uint64_t ring_max;	/* then the ring up to this, then copy engines where ce_ok */
	uint64_t ce_bytes;	/* the copy engines' slots (0: none, the ring instead) */
	int ce_ok;		/* every peer reached by NVLink, at most PN_AR_MAX_RANKS, ce_bytes */
	uint64_t cuda_min;	/* auto: the cuda plugin's kernels above this many bytes ... */
	int cuda_ok;		/* ... where every peer is reached by NVLink, at most
				 * PN_AR_MAX_RANKS (the plugin's answer) */
	uint64_t slot;		/* bytes per work-area slot = most bytes of one launch */
	uint64_t chunk;		/* the ring's smallest chunk (PENNY_NVSHMEM_CHUNK) */
	uint32_t blocks;	/* channels: most blocks of a launch */
	uint64_t timeout_ns;
	int pdl;		/* programmatic dependent launch (PENNY_NVSHMEM_PDL) */
};

/* From PENNY_NVSHMEM_* (nsm: SMs of the device, the most blocks; timeout_s:
 * the core's --timeout, the kernels' timeout unless PENNY_NVSHMEM_TIMEOUT
 * says, 0: 30 s); 0 or -EINVAL with the plugin error set. */
int pn_nv_read_cfg(struct pn_nv_cfg *cfg, int nranks, int nsm, double timeout_s);
/* The kernel that algo (enum penny_algo) runs for bytes (PN_NV_CE: the copy
 * engines, PN_NV_CUDA: the cuda plugin's table; auto only); -ENOTSUP. */
int pn_nv_kernel_for(const struct pn_nv_cfg *cfg, int algo, uint64_t bytes);
/* The ABI algorithm of a kernel. */
int pn_nv_kern_algo(int kern);
/* Blocks of one launch of len bytes (the same on every PE). */
unsigned pn_nv_grid(const struct pn_nv_cfg *cfg, int kern, uint64_t len);
/* The kernels read send from the symmetric heap and store 16-byte vectors:
 * a call runs on the user's buffers when send lies in a symmetric buffer
 * (sym) and both are 16-byte aligned, else through the staging buffer. */
int pn_nv_staged(uintptr_t send, uintptr_t recv, int sym);
/* Planned rings (set_rings): order[r * n + i] is ring r's i-th PE; out
 * (2 * n * nrings) gets each ring's order, then each PE's place in it.
 * -EINVAL (plugin error set) unless each ring is an order of all n PEs and
 * 0 <= nrings <= PN_NV_MAX_RINGS. */
int pn_nv_rings_table(const int32_t *order, int nrings, int n, int32_t *out);
/* Work-area bytes: data slots and signals (symmetric). */
uint64_t pn_nv_ws_bytes(const struct pn_nv_cfg *cfg);
/* "oneshot_ll<=64KiB,oneshot<=64KiB,twoshot<=8MiB,ring<=128MiB,ce", where
 * cuda_ok followed by ";cuda>524288B" (the cuda plugin's table above it) */
void pn_nv_format(const struct pn_nv_cfg *cfg, char *buf, unsigned len);

#endif
