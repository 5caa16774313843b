/* SPDX-License-Identifier: MIT */
/*
 * What the cuda plugin's allreduce kernels (ar_kernels.cu) and its
 * cross-node kernels (xn_kernels.cu) share: the device helpers, the
 * reductions, and the whole block's copy and reduce over 16-byte lines.
 */
#ifndef PENNY_PLUGIN_AR_BLOCK_CUH
#define PENNY_PLUGIN_AR_BLOCK_CUH

#include "../common/kargs.h"
#include "../common/pn_dev.cuh"

#ifndef PN_EMU
#define PN_DEVM __device__ __forceinline__
#define PN_BOUNDS __launch_bounds__(512, 1)
#else
#define PN_DEVM inline
#define PN_BOUNDS
#endif

#include "../common/pn_reduce.cuh"

/* Copy len bytes (a multiple of the element size) with the whole block; in
 * 16-byte vectors where both ends are 16-byte aligned, element by element
 * otherwise (a block of an odd count inside a user's buffer). */
PN_DEV void pn_block_copy(char *dst, const char *src, uint64_t len, bool remote_src,
			  unsigned esize)
{
	const uint64_t nv = (((uintptr_t)dst | (uintptr_t)src) & 15) ? 0 : len / 16, nt = pn_ntid();
	uint64_t v = pn_tid();

	for (; v < nv; v += 4 * nt) {
		pn_v4 x[4];

#pragma unroll
		for (int u = 0; u < 4; u++)
			if (v + u * nt < nv)
				x[u] = remote_src ? pn_ld_cg(src + (v + u * nt) * 16)
						  : pn_ld(src + (v + u * nt) * 16);
#pragma unroll
		for (int u = 0; u < 4; u++)
			if (v + u * nt < nv) {
				pn_maybe_yield();
				pn_st(dst + (v + u * nt) * 16, x[u]);
			}
	}
	for (uint64_t o = nv * 16 + (uint64_t)pn_tid() * esize; o < len; o += nt * esize) {
		unsigned char e[8];

		pn_ld_bytes(e, src + o, esize, remote_src);
		pn_st_bytes(dst + o, e, esize);
	}
}

/*
 * Reduce len bytes from nsrc sources in order (src[i], remote[i]) into the
 * local dst and the ndst extra (peer) destinations; element by element
 * where a buffer is not 16-byte aligned.
 */
template <typename T, int OP>
PN_DEV void pn_block_reduce(const char *const *src, const bool *remote, int nsrc, char *dst,
			    char *const *pdst, int npdst, uint64_t len, int n, bool fin)
{
	uintptr_t al = (uintptr_t)dst;

#pragma unroll
	for (int s = 0; s < PN_AR_MAX_RANKS; s++) {
		if (s < nsrc)
			al |= (uintptr_t)src[s];
		if (s < npdst)
			al |= (uintptr_t)pdst[s];
	}
	const uint64_t nv = (al & 15) ? 0 : len / 16, nt = pn_ntid();

	for (uint64_t v = pn_tid(); v < nv; v += nt) {
		pn_pack<T, OP, 16> pk;
		pn_v4 x[PN_AR_MAX_RANKS], o;

#pragma unroll
		for (int s = 0; s < PN_AR_MAX_RANKS; s++)
			if (s < nsrc)
				x[s] = remote[s] ? pn_ld_cg(src[s] + v * 16) : pn_ld(src[s] + v * 16);
		pk.first(&x[0]);
#pragma unroll
		for (int s = 1; s < PN_AR_MAX_RANKS; s++)
			if (s < nsrc)
				pk.add(&x[s]);
		pk.out(&o, n, fin);
		pn_st(dst + v * 16, o);
#pragma unroll
		for (int d = 0; d < PN_AR_MAX_RANKS; d++)
			if (d < npdst) {
				pn_maybe_yield();
				pn_st(pdst[d] + v * 16, o);
			}
	}
	/* the tail (or an unaligned buffer): one element per thread, loaded and
	 * stored whole (byte stores of a half or bfloat16 result lost its low
	 * byte on sm_90 with nvcc 13.0, as the nvshmem plugin's tail did) */
	typedef typename pn_xraw<sizeof(T)>::U U;

	for (uint64_t o = nv * 16 + (uint64_t)pn_tid() * sizeof(T); o < len; o += nt * sizeof(T)) {
		pn_pack<T, OP, sizeof(T)> pk;
		U e;

#pragma unroll
		for (int s = 0; s < PN_AR_MAX_RANKS; s++) {
			if (s >= nsrc)
				break;
			if (remote[s])
				pn_ld_cg_elem(&e, src[s] + o, sizeof(T));
			else
				e = *(const U *)(src[s] + o);
			if (s == 0)
				pk.first(&e);
			else
				pk.add(&e);
		}
		pk.out(&e, n, fin);
		*(U *)(dst + o) = e;
#pragma unroll
		for (int d = 0; d < PN_AR_MAX_RANKS; d++)
			if (d < npdst)
				*(U *)(pdst[d] + o) = e;
	}
}

#endif
