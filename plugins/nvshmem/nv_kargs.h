/* SPDX-License-Identifier: MIT */
/*
 * The nvshmem plugin's kernel parameter block and symmetric work-area
 * layout, shared by the host code (C, nvshmem.c) and the kernels
 * (nv_kernels.cu).  Device addresses are uint64_t.
 */
#ifndef PENNY_NV_KARGS_H
#define PENNY_NV_KARGS_H

#include <stdint.h>

#ifdef __CUDACC__
#define PN_NV_HD __host__ __device__
#else
#define PN_NV_HD
#endif

/* Kernels (pn_nv_<kern>_<type>_<op>) and their algorithm. */
enum pn_nv_kern {
	PN_NV_ONESHOT = 0,
	PN_NV_TWOSHOT,
	PN_NV_RING,
	PN_NV_SIMPLE,
	PN_NV_ONESHOT_LL,	/* one-shot as LL lines: every peer reached by NVLink */
	PN_NV_NKERNS
};

#define PN_NV_MAX_PES 64	/* PEs of one job this plugin handles */
#define PN_NV_MAX_BLOCKS 132	/* channels: one block per SM at most */
#define PN_NV_LL_MAX_PES 8	/* the LL one-shot: PEs of one NVLink domain it handles */

/*
 * Symmetric work area (nvshmem_malloc, the same layout on every PE):
 *   data[2 parities][nranks + 1 slots][slot bytes]: slot r receives PE r's
 *     part (one-shot, two-shot) or ring step r's segment; slot nranks
 *     gathers the reduced segments (two-shot, rings).
 *   signals, uint64_t, per block: [2 parities][2 kinds][nranks] then
 *     ack[nranks]: PE q sets ack[me] on PE p to the epoch it finished, so
 *     p writes parity e % 2 of q's slots only after q acknowledged e - 2.
 *   ll[2 parities][nranks][ll_slot bytes] (after the signals): the LL
 *     one-shot's lines, 16 bytes for every 8 data bytes (two 4-byte data
 *     words, each beside a copy of the call's flag), slot r written by PE r
 *     with plain stores over NVLink.  Only LL lines ever land here, so a
 *     stale line carries an older flag, never the current one.
 * Epochs are per block, kept in device memory (counters, not symmetric),
 * bumped once per launch and never reset: CUDA-graph replays are safe.  The
 * LL one-shot keeps its own epoch for the whole grid (llctr: the epoch, then
 * the count of finished blocks; the last one moves the epoch on) and needs
 * no acknowledgement: PE q writes parity e % 2 of p's lines for call e only
 * after its call e - 1 read p's lines of e - 1, which p wrote after its own
 * call e - 2 (that read the same parity) had ended.
 */
static inline PN_NV_HD uint64_t pn_nv_data_bytes(int nranks, uint64_t slot)
{
	return 2ull * (uint64_t)(nranks + 1) * slot;
}

static inline PN_NV_HD uint64_t pn_nv_sig_words(int nranks)
{
	return 5ull * (uint64_t)nranks; /* 2 x 2 x nranks + nranks */
}

/* The LL area for calls of up to ll_max bytes. */
static inline PN_NV_HD uint64_t pn_nv_ll_slot(uint64_t ll_max)
{
	return 2 * ((ll_max + 7) & ~(uint64_t)7);
}

static inline PN_NV_HD uint64_t pn_nv_ll_bytes(int nranks, uint64_t ll_max)
{
	return 2ull * (uint64_t)nranks * pn_nv_ll_slot(ll_max);
}

/* Where the signals and the LL area start in a work area of blocks channels. */
static inline PN_NV_HD uint64_t pn_nv_sig_off(int nranks, uint64_t slot)
{
	return pn_nv_data_bytes(nranks, slot);
}

static inline PN_NV_HD uint64_t pn_nv_ll_off(int nranks, uint64_t slot, uint64_t blocks)
{
	return pn_nv_sig_off(nranks, slot) + 8ull * pn_nv_sig_words(nranks) * blocks;
}

struct pn_nv_args {
	uint64_t src;		/* symmetric copy of the input (the send buffer itself when
				 * it is symmetric, else the staging buffer) */
	uint64_t recv;		/* result, local stores only (any device memory) */
	uint64_t data;		/* symmetric work area: data */
	uint64_t sig;		/* symmetric: signals, pn_nv_sig_words() per block */
	uint64_t ctr;		/* local: uint64_t epoch per block */
	uint64_t err;		/* local: uint32_t[2] = {error bits, peer} */
	uint64_t bytes;		/* this launch */
	uint64_t slot;		/* bytes per slot */
	uint64_t timeout_ns;
	int32_t rank, nranks;
	uint64_t ll;		/* symmetric: the LL area */
	uint64_t ll_slot;	/* bytes per LL slot (pn_nv_ll_slot) */
	uint64_t llctr;		/* local: uint32_t {LL epoch, blocks finished} */
	int64_t p2p[PN_NV_LL_MAX_PES];	/* LL one-shot: PE rank + q's copy of a symmetric
					 * address X is X + p2p[q] (q = 1 .. nranks - 1) */
	uint64_t rings;		/* device: int32 [nrings][2][nranks]: a planned ring's
				 * order of PEs, then each PE's position in it */
	int32_t nrings;		/* 0: the ring 0, 1, ..., n - 1 */
	uint64_t chunk;		/* a ring step's slice travels in chunks of a quarter of it,
				 * from chunk to 4 x chunk bytes (0: the kernels' default) */
};

#define PN_NV_MAX_RINGS 64	/* planned rings (set_rings) */

#define PN_NV_ERR_TIMEOUT 1u

#endif
