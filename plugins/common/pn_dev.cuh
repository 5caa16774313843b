/* SPDX-License-Identifier: MIT */
/*
 * Device primitives of penny's kernels: memory-model operations (acquire /
 * release at system scope, LL volatile lines), 16-byte vector accesses,
 * half/bfloat16 conversions, thread indices.  With PN_EMU defined they map to
 * the host emulator (tests/plugins/emu/emu.h), which runs the same kernel
 * source on the CPU for the unit tests.
 */
#ifndef PENNY_DEV_CUH
#define PENNY_DEV_CUH

#include <stdint.h>
#include <string.h>

#include "../include/penny_data.h"

struct __align__(16) pn_v4 {
	uint32_t x, y, z, w;
};

struct __align__(8) pn_v2 {
	uint32_t x, y;
};

#ifndef PN_EMU

#define PN_DEV static __device__ __forceinline__

PN_DEV unsigned pn_tid(void) { return threadIdx.x; }
PN_DEV unsigned pn_ntid(void) { return blockDim.x; }
PN_DEV unsigned pn_bid(void) { return blockIdx.x; }
PN_DEV unsigned pn_nbid(void) { return gridDim.x; }
PN_DEV void pn_sync(void) { __syncthreads(); }
PN_DEV int pn_sync_or(int p) { return __syncthreads_or(p); }
PN_DEV void pn_pause(void) {}
PN_DEV void pn_maybe_yield(void) {}

PN_DEV uint32_t pn_ld_acquire(const uint32_t *p)
{
	uint32_t v;

	asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
	return v;
}

PN_DEV void pn_st_release(uint32_t *p, uint32_t v)
{
	asm volatile("st.release.sys.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

PN_DEV uint64_t pn_ld_volatile_u64(const uint64_t *p)
{
	uint64_t v;

	asm volatile("ld.volatile.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
	return v;
}

PN_DEV void pn_st_volatile_u64(uint64_t *p, uint64_t v)
{
	asm volatile("st.volatile.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

PN_DEV uint64_t pn_clock_ns(void)
{
	uint64_t t;

	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
	return t;
}

/* LL line: 8 data bytes + two copies of the flag, one 16-byte store. */
PN_DEV void pn_ll_store(void *p, uint32_t lo, uint32_t hi, uint32_t flag)
{
	asm volatile("st.volatile.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(lo),
		     "r"(flag), "r"(hi), "r"(flag)
		     : "memory");
}

PN_DEV pn_v4 pn_ll_load(const void *p)
{
	pn_v4 v;

	asm volatile("ld.volatile.global.v4.u32 {%0, %1, %2, %3}, [%4];"
		     : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
		     : "l"(p)
		     : "memory");
	return v;
}

/* Data written by another GPU: read at L2 (not a stale L1 line). */
PN_DEV pn_v4 pn_ld_cg(const void *p)
{
	uint4 u = __ldcg((const uint4 *)p);
	pn_v4 v = { u.x, u.y, u.z, u.w };

	return v;
}

PN_DEV pn_v4 pn_ld(const void *p)
{
	return *(const pn_v4 *)p;
}

PN_DEV void pn_st(void *p, pn_v4 v)
{
	*(pn_v4 *)p = v;
}

PN_DEV float pn_bf16_f(uint16_t h)
{
	return __uint_as_float((uint32_t)h << 16);
}

PN_DEV uint16_t pn_f_bf16(float f)
{
	uint16_t h;

	asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(f));
	return h;
}

PN_DEV float pn_half_f(uint16_t h)
{
	float f;

	asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
	return f;
}

PN_DEV uint16_t pn_f_half(float f)
{
	uint16_t h;

	asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
	return h;
}

/*
 * Programmatic dependent launch (sm_90): wait until the previous kernel of
 * the stream has finished and its writes are visible (a no-op when it was
 * not launched as a dependent), and let the next kernel be scheduled early.
 */
PN_DEV void pn_pdl_wait(void)
{
#if __CUDA_ARCH__ >= 900
	asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

PN_DEV void pn_pdl_trigger(void)
{
#if __CUDA_ARCH__ >= 900
	asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

/* One element of 1, 2, 4 or 8 bytes read at L2 (another GPU or a NIC wrote it):
 * a plain load may return a line an earlier call left in this SM's L1. */
PN_DEV void pn_ld_cg_elem(void *dst, const void *p, int bytes)
{
	if (bytes == 8) {
		unsigned long long v = __ldcg((const unsigned long long *)p);
		memcpy(dst, &v, 8);
	} else if (bytes == 4) {
		unsigned int v = __ldcg((const unsigned int *)p);
		memcpy(dst, &v, 4);
	} else if (bytes == 2) {
		unsigned short v = __ldcg((const unsigned short *)p);
		memcpy(dst, &v, 2);
	} else {
		unsigned char v = __ldcg((const unsigned char *)p);
		memcpy(dst, &v, 1);
	}
}

PN_DEV void pn_fence(void) { __threadfence(); }
PN_DEV void pn_fence_sys(void) { __threadfence_system(); }

/* A block's shared variable / array (the emulator gives each block its own). */
#define PN_SHARED(T, name) __shared__ T name
#define PN_SHARED_ARRAY(T, name, n) __shared__ T name[n]

PN_DEV uint32_t pn_atomic_add(uint32_t *p, uint32_t v) { return atomicAdd(p, v); }
PN_DEV void pn_atomic_or(uint32_t *p, uint32_t v) { atomicOr(p, v); }
PN_DEV void pn_atomic_add64(unsigned long long *p, unsigned long long v) { atomicAdd(p, v); }
PN_DEV void pn_atomic_min64(unsigned long long *p, unsigned long long v) { atomicMin(p, v); }

#else /* PN_EMU: the host emulator provides these */

#define PN_DEV static inline
#include "emu_dev.h" /* tests/plugins/emu/, on the emulator's -I */

#endif

/* Byte helpers for tails (fewer than 16 bytes). */

PN_DEV void pn_ld_bytes(void *dst, const char *src, unsigned n, bool remote)
{
	unsigned char *d = (unsigned char *)dst;

	for (unsigned i = 0; i < n; i++)
		d[i] = remote ? *(const volatile unsigned char *)(src + i) : (unsigned char)src[i];
}

/* In 16-bit halves where dst and n allow (every tail of 16-bit or wider
 * elements): byte stores of a 16-bit result can lose its low byte on sm_90
 * (nvcc 13.0; see pn_block_reduce). */
PN_DEV void pn_st_bytes(char *dst, const void *src, unsigned n)
{
	const unsigned char *s = (const unsigned char *)src;
	unsigned i = 0;

	if (!(((uintptr_t)dst | n) & 1))
		for (; i < n; i += 2) {
			uint16_t u;

			memcpy(&u, s + i, 2);
			*(uint16_t *)(dst + i) = u;
		}
	for (; i < n; i++)
		dst[i] = (char)s[i];
}

/* 8-byte line i of a buffer of bytes (a short last line zero-filled). */
PN_DEV pn_v2 pn_load8(const char *p, uint64_t i, uint64_t bytes)
{
	pn_v2 d = { 0, 0 };

	if (i * 8 + 8 <= bytes)
		return *(const pn_v2 *)(p + i * 8);
	pn_ld_bytes(&d, p + i * 8, (unsigned)(bytes - i * 8), false);
	return d;
}

/* Store 8-byte line i of a buffer of bytes (a short last line in part). */
PN_DEV void pn_store8(char *p, uint64_t i, uint64_t bytes, pn_v2 v)
{
	if (i * 8 + 8 <= bytes)
		*(pn_v2 *)(p + i * 8) = v;
	else
		pn_st_bytes(p + i * 8, &v, (unsigned)(bytes - i * 8));
}

/* Element types as stored. */
struct pn_bf16_t {
	uint16_t x;
};
struct pn_half_t {
	uint16_t x;
};

#endif
