/* SPDX-License-Identifier: MIT */
/*
 * Host reduction kernels (the test data is in testdata.h).
 *
 * Semantics shared by every rank, so all ranks get bit-identical results:
 * - Integers wrap around (two's complement) on sum and prod.
 * - half and bfloat16 are computed in float: each pn_reduce2 step converts
 *   both inputs to float, applies the operation once and rounds to nearest
 *   even; pn_reduce_n accumulates all k inputs in float and rounds once.
 * - min and max propagate NaN (the result is NaN when either input is NaN,
 *   with the OR of both inputs' bits, so the payload does not depend on
 *   the operand order) and order -0 below +0 (IEEE 754-2019 minimum and
 *   maximum).  sum and prod of NaNs give a NaN, payload unspecified.
 * - PN_AVG: the reduction steps are sums; pn_reduce_finish divides once.
 * - dst may be equal to a source; partially overlapping buffers are not
 *   allowed.
 */
#ifndef PENNY_REDUCE_H
#define PENNY_REDUCE_H

#include "engine/dtype.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* dst[i] = a[i] op b[i]; PN_AVG sums.  dst may equal a or b. */
void pn_reduce2(void *dst, const void *a, const void *b, size_t count, enum pn_dtype t,
		enum pn_redop op);
/*
 * dst = ((srcs[0] op srcs[1]) op srcs[2]) ... op srcs[k-1], in exactly this
 * order; half/bfloat16 accumulate in float and round once.  k >= 1 (k == 1
 * copies); dst may equal any source.
 */
void pn_reduce_n(void *dst, const void *const *srcs, int k, size_t count, enum pn_dtype t,
		 enum pn_redop op);
/*
 * The chain ((srcs[0] op srcs[1]) op srcs[2]) ... op srcs[k-1] with every
 * step rounded to the type as pn_reduce2 rounds it (half and bfloat16 at
 * each step, unlike pn_reduce_n): what a ring computes hop by hop, done in
 * one place.  k >= 1; dst may equal any source.
 */
void pn_reduce_chain(void *dst, const void *const *srcs, int k, size_t count, enum pn_dtype t,
		     enum pn_redop op);
/*
 * PN_AVG: divide the summed values by nranks (integers: C division, which
 * truncates toward zero; float/double in their own precision; half and
 * bfloat16 in float, rounded once).  No-op for the other operations.
 */
void pn_reduce_finish(void *dst, size_t count, enum pn_dtype t, enum pn_redop op, int nranks);
/*
 * Copy for the executor: glibc's memcpy, measured as fast as an AVX2 loop
 * and rep movsb from 4 KiB to 64 MiB; non-temporal stores only win for
 * cold copies of 16 MiB and more, whose data peers then read from memory.
 */
void pn_copy(void *dst, const void *src, size_t bytes);

/*
 * Kernel set: PN_SIMD_AUTO picks the best the CPU has; the others force one
 * (for tests and benchmarks; not thread-safe while kernels run).  Returns
 * the set now in use, or -EINVAL (-22) when the CPU lacks the one asked for.
 */
enum pn_simd { PN_SIMD_AUTO = -1, PN_SIMD_GENERIC = 0, PN_SIMD_AVX2 = 1 };
int pn_reduce_simd(int want);
/* The set in use (picked on first use unless forced). */
int pn_reduce_simd_now(void);
const char *pn_reduce_simd_name(void);

/*
 * IEEE binary16 and bfloat16 <-> float.  Round to nearest even; overflow
 * gives Inf; subnormals are kept; NaNs are quieted and keep the top payload
 * bits (the same bits as x86 F16C's vcvtph2ps/vcvtps2ph).  Branch-free, so
 * loops over them vectorize.
 */
static inline uint32_t pn_f32_bits(float f)
{
	uint32_t u;

	memcpy(&u, &f, sizeof(u));
	return u;
}

static inline float pn_f32_from_bits(uint32_t u)
{
	float f;

	memcpy(&f, &u, sizeof(f));
	return f;
}

/* All ones if c, else 0: selecting with masks keeps the conversions free of branches. */
static inline uint32_t pn_mask32(int c)
{
	return 0u - (uint32_t)(c != 0);
}

static inline float pn_half_to_float(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
	uint32_t em = h & 0x7fffu;	/* exponent and mantissa */
	/* normal: move the fields, rebias the exponent from 15 to 127 */
	uint32_t normal = (em << 13) + ((127u - 15u) << 23);
	/* Inf/NaN: all-ones exponent, payload kept, quiet bit set for NaN */
	uint32_t special = (em << 13) | 0x7f800000u | (pn_mask32(em > 0x7c00u) & 0x00400000u);
	/* zero and subnormal: mantissa * 2^-24, exact in float */
	uint32_t sub = pn_f32_bits((float)(int32_t)em * 0x1p-24f);
	uint32_t is_special = pn_mask32(em >= 0x7c00u);
	uint32_t is_normal = pn_mask32(em >= 0x0400u) & ~is_special;
	uint32_t is_sub = ~(is_special | is_normal);

	return pn_f32_from_bits((special & is_special) | (normal & is_normal) | (sub & is_sub) |
				sign);
}

static inline uint16_t pn_float_to_half(float f)
{
	uint32_t u = pn_f32_bits(f);
	uint32_t sign = (u >> 16) & 0x8000u;
	uint32_t a = u & 0x7fffffffu;
	/* half normal range [2^-14, 65520): rebias, add half an ulp (ties to even), shift */
	uint32_t normal = (a - ((127u - 15u) << 23) + 0x0fffu + ((a >> 13) & 1u)) >> 13;
	/*
	 * Below 2^-14: adding 0.5 puts the value's half-subnormal ulp (2^-24)
	 * at the float ulp of 0.5, so the float addition rounds to nearest even.
	 */
	uint32_t sub = pn_f32_bits(pn_f32_from_bits(a) + 0.5f) - 0x3f000000u;
	uint32_t nan = 0x7e00u | ((a >> 13) & 0x03ffu);
	uint32_t is_nan = pn_mask32(a > 0x7f800000u);
	uint32_t is_inf = pn_mask32(a >= 0x477ff000u) & ~is_nan; /* Inf, or rounds to it */
	uint32_t is_normal = pn_mask32(a >= 0x38800000u) & ~(is_nan | is_inf);
	uint32_t is_sub = ~(is_nan | is_inf | is_normal);

	return (uint16_t)((nan & is_nan) | (0x7c00u & is_inf) | (normal & is_normal) |
			  (sub & is_sub) | sign);
}

static inline float pn_bf16_to_float(uint16_t b)
{
	uint32_t u = (uint32_t)b << 16;
	/* quiet a signalling NaN, like the half conversion */
	uint32_t quiet = (u & 0x7fffffffu) > 0x7f800000u ? 0x00400000u : 0;

	return pn_f32_from_bits(u | quiet);
}

static inline uint16_t pn_float_to_bf16(float f)
{
	uint32_t u = pn_f32_bits(f);
	uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
	uint32_t nan = (u >> 16) | 0x0040u;

	return (uint16_t)((u & 0x7fffffffu) > 0x7f800000u ? nan : rounded);
}

#endif
