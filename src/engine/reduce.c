/* SPDX-License-Identifier: MIT */
/*
 * Host reduction kernels: the inner loops of the host allreduce.
 *
 * How the loops are written so that gcc -O2 vectorizes them: gcc's -O2
 * vectorizer ("very cheap" cost model) only takes loops that need neither
 * a scalar epilogue nor a run-time alias check.  So every element loop is
 * an outer loop over fixed blocks of PN_VEC_BYTES with an inner loop of
 * constant length (vectorized completely), then a scalar tail; pointers
 * are restrict.  The operation is a static inline function passed as a
 * constant function pointer, which the compiler inlines into the loop.
 *
 * Every kernel is compiled twice from the same always_inline bodies: for
 * the baseline ISA (SSE2 on x86-64) and with target("avx2,f16c"), picked
 * at run time by the CPU's features.  The half <-> float conversions use
 * F16C's vcvtph2ps/vcvtps2ph in the AVX2 set (bit-identical to the C
 * conversions in reduce.h, which the unit tests check exhaustively).
 * The test data (fill, reference, check) is in testdata.c.
 * Measured (tests/bench/reduce-speed.sh, in-place sum): the AVX2 set is
 * 1.8x the generic one while the data is in cache (4 KiB float: 98 vs
 * 55 GB/s), equal at DRAM sizes; for half it is 26 vs 0.56 GB/s.
 */
#include "engine/reduce.h"
#include "engine/simd.h"
#include "base/util.h"

#include <errno.h>
#include <math.h>
#include <stdatomic.h>
#include <string.h>

/* Bytes handled by one fully vectorized inner loop. */
#define PN_VEC_BYTES 128
/* Elements per block of the k-input and half/bfloat16 kernels (float temporaries). */
#define PN_TMP_ELEMS 1024

/* ---- element operations ------------------------------------------------- */

/* Signed sum and prod use the unsigned ones: same bits, no overflow UB. */
PN_INLINE uint8_t u8_sum(uint8_t x, uint8_t y) { return (uint8_t)(x + y); }
PN_INLINE uint8_t u8_prod(uint8_t x, uint8_t y) { return (uint8_t)(x * y); }
PN_INLINE uint8_t u8_min(uint8_t x, uint8_t y) { return x < y ? x : y; }
PN_INLINE uint8_t u8_max(uint8_t x, uint8_t y) { return x > y ? x : y; }
PN_INLINE int8_t i8_min(int8_t x, int8_t y) { return x < y ? x : y; }
PN_INLINE int8_t i8_max(int8_t x, int8_t y) { return x > y ? x : y; }

PN_INLINE uint32_t u32_sum(uint32_t x, uint32_t y) { return x + y; }
PN_INLINE uint32_t u32_prod(uint32_t x, uint32_t y) { return x * y; }
PN_INLINE uint32_t u32_min(uint32_t x, uint32_t y) { return x < y ? x : y; }
PN_INLINE uint32_t u32_max(uint32_t x, uint32_t y) { return x > y ? x : y; }
PN_INLINE int32_t i32_min(int32_t x, int32_t y) { return x < y ? x : y; }
PN_INLINE int32_t i32_max(int32_t x, int32_t y) { return x > y ? x : y; }

PN_INLINE uint64_t u64_sum(uint64_t x, uint64_t y) { return x + y; }
PN_INLINE uint64_t u64_prod(uint64_t x, uint64_t y) { return x * y; }
PN_INLINE uint64_t u64_min(uint64_t x, uint64_t y) { return x < y ? x : y; }
PN_INLINE uint64_t u64_max(uint64_t x, uint64_t y) { return x > y ? x : y; }
PN_INLINE int64_t i64_min(int64_t x, int64_t y) { return x < y ? x : y; }
PN_INLINE int64_t i64_max(int64_t x, int64_t y) { return x > y ? x : y; }

PN_INLINE float f32_sum(float x, float y) { return x + y; }
PN_INLINE float f32_prod(float x, float y) { return x * y; }
/*
 * Ordered inputs compare; equal ones (also +0/-0) and unordered ones (a NaN)
 * combine bitwise: OR gives -0 for min and keeps a NaN a NaN, AND gives +0
 * for max.  The result does not depend on the operand order.
 */
PN_INLINE float f32_min(float x, float y)
{
	uint32_t tie = pn_f32_bits(x) | pn_f32_bits(y);

	return x < y ? x : y < x ? y : pn_f32_from_bits(tie);
}

PN_INLINE float f32_max(float x, float y)
{
	uint32_t bx = pn_f32_bits(x), by = pn_f32_bits(y);
	uint32_t tie = x == y ? bx & by : bx | by;

	return x > y ? x : y > x ? y : pn_f32_from_bits(tie);
}

PN_INLINE uint64_t f64_bits(double d)
{
	uint64_t u;

	memcpy(&u, &d, sizeof(u));
	return u;
}

PN_INLINE double f64_from_bits(uint64_t u)
{
	double d;

	memcpy(&d, &u, sizeof(d));
	return d;
}

PN_INLINE double f64_sum(double x, double y) { return x + y; }
PN_INLINE double f64_prod(double x, double y) { return x * y; }

PN_INLINE double f64_min(double x, double y)
{
	uint64_t tie = f64_bits(x) | f64_bits(y);

	return x < y ? x : y < x ? y : f64_from_bits(tie);
}

PN_INLINE double f64_max(double x, double y)
{
	uint64_t bx = f64_bits(x), by = f64_bits(y);
	uint64_t tie = x == y ? bx & by : bx | by;

	return x > y ? x : y > x ? y : f64_from_bits(tie);
}

/* ---- element loops ------------------------------------------------------ */

/*
 * For element type T, two loops with the operation fn inlined:
 *   NAME_oop(d, a, b, n, fn)  d[i] = fn(a[i], b[i])   (no overlap)
 *   NAME_acc(d, s, n, fn)     d[i] = fn(d[i], s[i])   (d != s)
 * NAME_run(d, a, b, n, fn) picks one by aliasing (every fn here is
 * bit-for-bit commutative, so d == b is d = fn(d, a)), and
 *   NAME_map(d, n, fn, r)     d[i] = fn(d[i], r)
 */
#define PN_DEFINE_LOOPS(T, NAME)                                                          \
	PN_INLINE void NAME##_oop(T *restrict d, const T *restrict a, const T *restrict b,  \
				  size_t n, T (*fn)(T, T))                                   \
	{                                                                                   \
		const size_t blk = PN_VEC_BYTES / sizeof(T);                                \
		size_t i = 0;                                                               \
                                                                                            \
		for (; i + blk <= n; i += blk)                                              \
			PN_UNROLL                                                           \
			for (size_t j = 0; j < blk; j++)                                    \
				d[i + j] = fn(a[i + j], b[i + j]);                          \
		for (; i < n; i++)                                                          \
			d[i] = fn(a[i], b[i]);                                              \
	}                                                                                   \
	PN_INLINE void NAME##_acc(T *restrict d, const T *restrict s, size_t n,             \
				  T (*fn)(T, T))                                             \
	{                                                                                   \
		const size_t blk = PN_VEC_BYTES / sizeof(T);                                \
		size_t i = 0;                                                               \
                                                                                            \
		for (; i + blk <= n; i += blk)                                              \
			PN_UNROLL                                                           \
			for (size_t j = 0; j < blk; j++)                                    \
				d[i + j] = fn(d[i + j], s[i + j]);                          \
		for (; i < n; i++)                                                          \
			d[i] = fn(d[i], s[i]);                                              \
	}                                                                                   \
	/* d[i] = fn(d[i], d[i]) through a copy, as two restrict pointers may not alias */ \
	PN_INLINE void NAME##_self(T *d, size_t n, T (*fn)(T, T))                           \
	{                                                                                   \
		T tmp[PN_TMP_ELEMS];                                                        \
                                                                                            \
		for (size_t i = 0; i < n; i += PN_TMP_ELEMS) {                              \
			size_t m = n - i < PN_TMP_ELEMS ? n - i : PN_TMP_ELEMS;             \
                                                                                            \
			memcpy(tmp, d + i, m * sizeof(T));                                  \
			NAME##_acc(d + i, tmp, m, fn);                                      \
		}                                                                           \
	}                                                                                   \
	PN_INLINE void NAME##_run(void *d, const void *a, const void *b, size_t n,          \
				  T (*fn)(T, T))                                             \
	{                                                                                   \
		if (d == a && d == b)                                                       \
			NAME##_self(d, n, fn);                                              \
		else if (d == a)                                                            \
			NAME##_acc(d, b, n, fn);                                            \
		else if (d == b)                                                            \
			NAME##_acc(d, a, n, fn);                                            \
		else                                                                        \
			NAME##_oop(d, a, b, n, fn);                                         \
	}                                                                                   \
	PN_INLINE void NAME##_map(T *restrict d, size_t n, T (*fn)(T, double), double r)    \
	{                                                                                   \
		const size_t blk = PN_VEC_BYTES / sizeof(T);                                \
		size_t i = 0;                                                               \
                                                                                            \
		for (; i + blk <= n; i += blk)                                              \
			PN_UNROLL                                                           \
			for (size_t j = 0; j < blk; j++)                                    \
				d[i + j] = fn(d[i + j], r);                                 \
		for (; i < n; i++)                                                          \
			d[i] = fn(d[i], r);                                                 \
	}

PN_DEFINE_LOOPS(uint8_t, u8)
PN_DEFINE_LOOPS(int8_t, i8)
PN_DEFINE_LOOPS(uint32_t, u32)
PN_DEFINE_LOOPS(int32_t, i32)
PN_DEFINE_LOOPS(uint64_t, u64)
PN_DEFINE_LOOPS(int64_t, i64)
PN_DEFINE_LOOPS(float, f32)
PN_DEFINE_LOOPS(double, f64)

/* ---- one reduction step per storage type ---------------------------------- */

/*
 * d = a op b for the types computed in their own precision.  Signed
 * integers sum and multiply with the unsigned loops.  Returns 0 if t is
 * half/bfloat16 (computed through float by the caller).
 */
PN_INLINE int native_step(void *d, const void *a, const void *b, size_t n, enum pn_dtype t,
			  enum pn_redop op)
{
	int signed_minmax = op == PN_MIN || op == PN_MAX;

	switch (t) {
	case PN_INT8:
		if (signed_minmax) {
			if (op == PN_MIN)
				i8_run(d, a, b, n, i8_min);
			else
				i8_run(d, a, b, n, i8_max);
			return 1;
		}
		/* fall through */
	case PN_UINT8:
		switch (op) {
		case PN_PROD: u8_run(d, a, b, n, u8_prod); break;
		case PN_MIN: u8_run(d, a, b, n, u8_min); break;
		case PN_MAX: u8_run(d, a, b, n, u8_max); break;
		default: u8_run(d, a, b, n, u8_sum); break;
		}
		return 1;
	case PN_INT32:
		if (signed_minmax) {
			if (op == PN_MIN)
				i32_run(d, a, b, n, i32_min);
			else
				i32_run(d, a, b, n, i32_max);
			return 1;
		}
		/* fall through */
	case PN_UINT32:
		switch (op) {
		case PN_PROD: u32_run(d, a, b, n, u32_prod); break;
		case PN_MIN: u32_run(d, a, b, n, u32_min); break;
		case PN_MAX: u32_run(d, a, b, n, u32_max); break;
		default: u32_run(d, a, b, n, u32_sum); break;
		}
		return 1;
	case PN_INT64:
		if (signed_minmax) {
			if (op == PN_MIN)
				i64_run(d, a, b, n, i64_min);
			else
				i64_run(d, a, b, n, i64_max);
			return 1;
		}
		/* fall through */
	case PN_UINT64:
		switch (op) {
		case PN_PROD: u64_run(d, a, b, n, u64_prod); break;
		case PN_MIN: u64_run(d, a, b, n, u64_min); break;
		case PN_MAX: u64_run(d, a, b, n, u64_max); break;
		default: u64_run(d, a, b, n, u64_sum); break;
		}
		return 1;
	case PN_FLOAT:
		switch (op) {
		case PN_PROD: f32_run(d, a, b, n, f32_prod); break;
		case PN_MIN: f32_run(d, a, b, n, f32_min); break;
		case PN_MAX: f32_run(d, a, b, n, f32_max); break;
		default: f32_run(d, a, b, n, f32_sum); break;
		}
		return 1;
	case PN_DOUBLE:
		switch (op) {
		case PN_PROD: f64_run(d, a, b, n, f64_prod); break;
		case PN_MIN: f64_run(d, a, b, n, f64_min); break;
		case PN_MAX: f64_run(d, a, b, n, f64_max); break;
		default: f64_run(d, a, b, n, f64_sum); break;
		}
		return 1;
	default:
		return 0;
	}
}

/* ---- half and bfloat16 ------------------------------------------------------ */

/*
 * Computed in float: loads convert to float, stores round to nearest even.
 * The kernels load bfloat16 without pn_bf16_to_float's NaN quieting: every
 * store quiets NaNs, so the results have the same bits.
 */
PN_INLINE float bf16_load_raw(uint16_t b)
{
	return pn_f32_from_bits((uint32_t)b << 16);
}

typedef float (*pn_ld16)(uint16_t);
typedef uint16_t (*pn_st16)(float);
typedef float (*pn_op32)(float, float);

/* The C loops for half without F16C (and any ld/st pair); ld, st, fn are inlined. */

/* d[i] = st(fn(ld(a[i]), ld(b[i]))) */
PN_INLINE void c16_oop(uint16_t *restrict d, const uint16_t *restrict a,
		       const uint16_t *restrict b, size_t n, pn_ld16 ld, pn_st16 st, pn_op32 fn)
{
	const size_t blk = PN_VEC_BYTES / sizeof(float);
	size_t i = 0;

	for (; i + blk <= n; i += blk)
		PN_UNROLL
		for (size_t j = 0; j < blk; j++)
			d[i + j] = st(fn(ld(a[i + j]), ld(b[i + j])));
	for (; i < n; i++)
		d[i] = st(fn(ld(a[i]), ld(b[i])));
}

/* d[i] = st(fn(ld(d[i]), ld(s[i]))) */
PN_INLINE void c16_inplace(uint16_t *restrict d, const uint16_t *restrict s, size_t n,
			   pn_ld16 ld, pn_st16 st, pn_op32 fn)
{
	const size_t blk = PN_VEC_BYTES / sizeof(float);
	size_t i = 0;

	for (; i + blk <= n; i += blk)
		PN_UNROLL
		for (size_t j = 0; j < blk; j++)
			d[i + j] = st(fn(ld(d[i + j]), ld(s[i + j])));
	for (; i < n; i++)
		d[i] = st(fn(ld(d[i]), ld(s[i])));
}

/* acc[i] = fn(ld(a[i]), ld(b[i])) */
PN_INLINE void c16_first(float *restrict acc, const uint16_t *restrict a,
			 const uint16_t *restrict b, size_t n, pn_ld16 ld, pn_op32 fn)
{
	const size_t blk = PN_VEC_BYTES / sizeof(float);
	size_t i = 0;

	for (; i + blk <= n; i += blk)
		PN_UNROLL
		for (size_t j = 0; j < blk; j++)
			acc[i + j] = fn(ld(a[i + j]), ld(b[i + j]));
	for (; i < n; i++)
		acc[i] = fn(ld(a[i]), ld(b[i]));
}

/* acc[i] = fn(acc[i], ld(s[i])) */
PN_INLINE void c16_more(float *restrict acc, const uint16_t *restrict s, size_t n, pn_ld16 ld,
			pn_op32 fn)
{
	const size_t blk = PN_VEC_BYTES / sizeof(float);
	size_t i = 0;

	for (; i + blk <= n; i += blk)
		PN_UNROLL
		for (size_t j = 0; j < blk; j++)
			acc[i + j] = fn(acc[i + j], ld(s[i + j]));
	for (; i < n; i++)
		acc[i] = fn(acc[i], ld(s[i]));
}

/* d[i] = st(acc[i]) */
PN_INLINE void c16_store(uint16_t *restrict d, const float *restrict acc, size_t n, pn_st16 st)
{
	const size_t blk = PN_VEC_BYTES / sizeof(float);
	size_t i = 0;

	for (; i + blk <= n; i += blk)
		PN_UNROLL
		for (size_t j = 0; j < blk; j++)
			d[i + j] = st(acc[i + j]);
	for (; i < n; i++)
		d[i] = st(acc[i]);
}

/* d[i] = st(ld(d[i]) / r) */
PN_INLINE void c16_div(uint16_t *restrict d, size_t n, pn_ld16 ld, pn_st16 st, float r)
{
	const size_t blk = PN_VEC_BYTES / sizeof(float);
	size_t i = 0;

	for (; i + blk <= n; i += blk)
		PN_UNROLL
		for (size_t j = 0; j < blk; j++)
			d[i + j] = st(ld(d[i + j]) / r);
	for (; i < n; i++)
		d[i] = st(ld(d[i]) / r);
}

/*
 * k >= 2 sources: two with one rounding straight into d (fn is bit-for-bit
 * commutative, so d == b is d = fn(d, a)); more, or d equal to both, through
 * a float block, read completely before d's block is written.
 */
PN_INLINE void c16_reduce(uint16_t *d, const void *const *srcs, int k, size_t n, pn_ld16 ld,
			  pn_st16 st, pn_op32 fn)
{
	const uint16_t *a = srcs[0], *b = srcs[1];
	float acc[PN_TMP_ELEMS];

	if (k == 2 && !(d == a && d == b)) {
		if (d == a)
			c16_inplace(d, b, n, ld, st, fn);
		else if (d == b)
			c16_inplace(d, a, n, ld, st, fn);
		else
			c16_oop(d, a, b, n, ld, st, fn);
		return;
	}
	for (size_t i = 0; i < n; i += PN_TMP_ELEMS) {
		size_t m = n - i < PN_TMP_ELEMS ? n - i : PN_TMP_ELEMS;

		c16_first(acc, a + i, b + i, m, ld, fn);
		for (int s = 2; s < k; s++)
			c16_more(acc, (const uint16_t *)srcs[s] + i, m, ld, fn);
		c16_store(d + i, acc, m, st);
	}
}

PN_INLINE void c16_reduce_op(uint16_t *d, const void *const *srcs, int k, size_t n, pn_ld16 ld,
			     pn_st16 st, enum pn_redop op)
{
	switch (op) {
	case PN_PROD: c16_reduce(d, srcs, k, n, ld, st, f32_prod); break;
	case PN_MIN: c16_reduce(d, srcs, k, n, ld, st, f32_min); break;
	case PN_MAX: c16_reduce(d, srcs, k, n, ld, st, f32_max); break;
	default: c16_reduce(d, srcs, k, n, ld, st, f32_sum); break;
	}
}

/*
 * bfloat16 two at a time: a 32-bit word holding two neighbours gives both
 * as floats with one shift and one mask (no widening or narrowing
 * shuffles); the two results are rounded and put back in the same places.
 * About 1.7x faster than one at a time with AVX2.  Either element order in
 * the word works, as every operation is element-wise.
 */
PN_INLINE uint32_t word_load(const uint16_t *p)
{
	uint32_t w;

	memcpy(&w, p, sizeof(w));
	return w;
}

PN_INLINE void word_store(uint16_t *p, uint32_t w)
{
	memcpy(p, &w, sizeof(w));
}

PN_INLINE float bf16_lo(uint32_t w) { return pn_f32_from_bits(w << 16); }
PN_INLINE float bf16_hi(uint32_t w) { return pn_f32_from_bits(w & 0xffff0000u); }

/* pn_float_to_bf16(f) in the upper 16 bits; the lower 16 are not cleared. */
PN_INLINE uint32_t bf16_round_hi(float f)
{
	uint32_t u = pn_f32_bits(f);
	uint32_t rounded = u + 0x7fffu + ((u >> 16) & 1u);
	uint32_t nan = u | 0x00400000u;

	return (u & 0x7fffffffu) > 0x7f800000u ? nan : rounded;
}

PN_INLINE uint32_t bf16_pack(float lo, float hi)
{
	return (bf16_round_hi(hi) & 0xffff0000u) | (bf16_round_hi(lo) >> 16);
}

PN_INLINE uint32_t bf16x2_op(uint32_t x, uint32_t y, pn_op32 fn)
{
	return bf16_pack(fn(bf16_lo(x), bf16_lo(y)), fn(bf16_hi(x), bf16_hi(y)));
}

/* d = a op b for np pairs */
PN_INLINE void bf16x2_oop(uint16_t *restrict d, const uint16_t *restrict a,
			  const uint16_t *restrict b, size_t np, pn_op32 fn)
{
	const size_t blk = PN_VEC_BYTES / sizeof(uint32_t);
	size_t i = 0;

	for (; i + blk <= np; i += blk)
		PN_UNROLL
		for (size_t j = 0; j < blk; j++)
			word_store(d + 2 * (i + j),
				   bf16x2_op(word_load(a + 2 * (i + j)), word_load(b + 2 * (i + j)), fn));
	for (; i < np; i++)
		word_store(d + 2 * i, bf16x2_op(word_load(a + 2 * i), word_load(b + 2 * i), fn));
}

/* d = d op s for np pairs */
PN_INLINE void bf16x2_inplace(uint16_t *restrict d, const uint16_t *restrict s, size_t np,
			      pn_op32 fn)
{
	const size_t blk = PN_VEC_BYTES / sizeof(uint32_t);
	size_t i = 0;

	for (; i + blk <= np; i += blk)
		PN_UNROLL
		for (size_t j = 0; j < blk; j++)
			word_store(d + 2 * (i + j),
				   bf16x2_op(word_load(d + 2 * (i + j)), word_load(s + 2 * (i + j)), fn));
	for (; i < np; i++)
		word_store(d + 2 * i, bf16x2_op(word_load(d + 2 * i), word_load(s + 2 * i), fn));
}

/* lo/hi = a op b for np pairs, kept in float */
PN_INLINE void bf16x2_first(float *restrict lo, float *restrict hi, const uint16_t *restrict a,
			    const uint16_t *restrict b, size_t np, pn_op32 fn)
{
	const size_t blk = PN_VEC_BYTES / sizeof(uint32_t);
	size_t i = 0;

	for (; i + blk <= np; i += blk)
		PN_UNROLL
		for (size_t j = 0; j < blk; j++) {
			uint32_t x = word_load(a + 2 * (i + j)), y = word_load(b + 2 * (i + j));

			lo[i + j] = fn(bf16_lo(x), bf16_lo(y));
			hi[i + j] = fn(bf16_hi(x), bf16_hi(y));
		}
	for (; i < np; i++) {
		uint32_t x = word_load(a + 2 * i), y = word_load(b + 2 * i);

		lo[i] = fn(bf16_lo(x), bf16_lo(y));
		hi[i] = fn(bf16_hi(x), bf16_hi(y));
	}
}

/* lo/hi = lo/hi op s for np pairs */
PN_INLINE void bf16x2_more(float *restrict lo, float *restrict hi, const uint16_t *restrict s,
			   size_t np, pn_op32 fn)
{
	const size_t blk = PN_VEC_BYTES / sizeof(uint32_t);
	size_t i = 0;

	for (; i + blk <= np; i += blk)
		PN_UNROLL
		for (size_t j = 0; j < blk; j++) {
			uint32_t x = word_load(s + 2 * (i + j));

			lo[i + j] = fn(lo[i + j], bf16_lo(x));
			hi[i + j] = fn(hi[i + j], bf16_hi(x));
		}
	for (; i < np; i++) {
		uint32_t x = word_load(s + 2 * i);

		lo[i] = fn(lo[i], bf16_lo(x));
		hi[i] = fn(hi[i], bf16_hi(x));
	}
}

PN_INLINE void bf16x2_store(uint16_t *restrict d, const float *restrict lo,
			    const float *restrict hi, size_t np)
{
	const size_t blk = PN_VEC_BYTES / sizeof(uint32_t);
	size_t i = 0;

	for (; i + blk <= np; i += blk)
		PN_UNROLL
		for (size_t j = 0; j < blk; j++)
			word_store(d + 2 * (i + j), bf16_pack(lo[i + j], hi[i + j]));
	for (; i < np; i++)
		word_store(d + 2 * i, bf16_pack(lo[i], hi[i]));
}

PN_INLINE void bf16x2_div(uint16_t *restrict d, size_t np, float r)
{
	const size_t blk = PN_VEC_BYTES / sizeof(uint32_t);
	size_t i = 0;

	for (; i + blk <= np; i += blk)
		PN_UNROLL
		for (size_t j = 0; j < blk; j++) {
			uint32_t x = word_load(d + 2 * (i + j));

			word_store(d + 2 * (i + j), bf16_pack(bf16_lo(x) / r, bf16_hi(x) / r));
		}
	for (; i < np; i++) {
		uint32_t x = word_load(d + 2 * i);

		word_store(d + 2 * i, bf16_pack(bf16_lo(x) / r, bf16_hi(x) / r));
	}
}

/* bfloat16, k >= 2 sources, as c16_reduce; an odd last element on its own. */
PN_INLINE void bf16_reduce(uint16_t *d, const void *const *srcs, int k, size_t n, pn_op32 fn)
{
	const uint16_t *a = srcs[0], *b = srcs[1];
	size_t np = n / 2;
	float lo[PN_TMP_ELEMS / 2], hi[PN_TMP_ELEMS / 2];

	if (n & 1) {
		float acc = fn(bf16_load_raw(a[n - 1]), bf16_load_raw(b[n - 1]));

		for (int s = 2; s < k; s++)
			acc = fn(acc, bf16_load_raw(((const uint16_t *)srcs[s])[n - 1]));
		d[n - 1] = pn_float_to_bf16(acc);
	}
	if (k == 2 && !(d == a && d == b)) {
		if (d == a)
			bf16x2_inplace(d, b, np, fn);
		else if (d == b)
			bf16x2_inplace(d, a, np, fn);
		else
			bf16x2_oop(d, a, b, np, fn);
		return;
	}
	for (size_t i = 0; i < np; i += PN_TMP_ELEMS / 2) {
		size_t m = np - i < PN_TMP_ELEMS / 2 ? np - i : PN_TMP_ELEMS / 2;

		bf16x2_first(lo, hi, a + 2 * i, b + 2 * i, m, fn);
		for (int s = 2; s < k; s++)
			bf16x2_more(lo, hi, (const uint16_t *)srcs[s] + 2 * i, m, fn);
		bf16x2_store(d + 2 * i, lo, hi, m);
	}
}

PN_INLINE void bf16_reduce_op(uint16_t *d, const void *const *srcs, int k, size_t n,
			      enum pn_redop op)
{
	switch (op) {
	case PN_PROD: bf16_reduce(d, srcs, k, n, f32_prod); break;
	case PN_MIN: bf16_reduce(d, srcs, k, n, f32_min); break;
	case PN_MAX: bf16_reduce(d, srcs, k, n, f32_max); break;
	default: bf16_reduce(d, srcs, k, n, f32_sum); break;
	}
}

PN_INLINE void bf16_div(uint16_t *d, size_t n, float r)
{
	if (n & 1)
		d[n - 1] = pn_float_to_bf16(bf16_load_raw(d[n - 1]) / r);
	bf16x2_div(d, n / 2, r);
}

#if PN_HAVE_X86
/*
 * half with F16C, 8 elements per vcvtph2ps/vcvtps2ph (the same bits as the
 * C conversions).  Each step loads its vectors before it stores, so exact
 * aliasing of d with a source needs no care here.  The vector operations
 * have the element functions' semantics (f32_min/f32_max: same ties).
 */
#define PN_INLINE_AVX2 PN_TARGET_AVX2 static inline __attribute__((always_inline))

typedef __m256 (*pn_vop)(__m256, __m256);

PN_INLINE_AVX2 __m256 v_sum(__m256 x, __m256 y) { return _mm256_add_ps(x, y); }
PN_INLINE_AVX2 __m256 v_prod(__m256 x, __m256 y) { return _mm256_mul_ps(x, y); }

PN_INLINE_AVX2 __m256 v_min(__m256 x, __m256 y)
{
	__m256 x_lt = _mm256_cmp_ps(x, y, _CMP_LT_OQ), y_lt = _mm256_cmp_ps(y, x, _CMP_LT_OQ);
	__m256 tie = _mm256_or_ps(x, y);

	return _mm256_blendv_ps(_mm256_blendv_ps(tie, y, y_lt), x, x_lt);
}

PN_INLINE_AVX2 __m256 v_max(__m256 x, __m256 y)
{
	__m256 x_gt = _mm256_cmp_ps(x, y, _CMP_GT_OQ), y_gt = _mm256_cmp_ps(y, x, _CMP_GT_OQ);
	__m256 eq = _mm256_cmp_ps(x, y, _CMP_EQ_OQ);
	__m256 tie = _mm256_blendv_ps(_mm256_or_ps(x, y), _mm256_and_ps(x, y), eq);

	return _mm256_blendv_ps(_mm256_blendv_ps(tie, y, y_gt), x, x_gt);
}

PN_INLINE_AVX2 __m256 h8_load(const uint16_t *p)
{
	return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)p));
}

PN_INLINE_AVX2 void h8_store(uint16_t *p, __m256 v)
{
	_mm_storeu_si128((__m128i *)(void *)p,
			 _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}

PN_INLINE_AVX2 void h16c_reduce_fn(uint16_t *d, const void *const *srcs, int k, size_t n,
				   pn_vop vfn, pn_op32 fn)
{
	const uint16_t *a = srcs[0], *b = srcs[1];
	float acc[PN_TMP_ELEMS];
	size_t i = 0;

	if (k == 2) {
		for (; i + 8 <= n; i += 8)
			h8_store(d + i, vfn(h8_load(a + i), h8_load(b + i)));
		for (; i < n; i++)
			d[i] = pn_float_to_half(fn(pn_half_to_float(a[i]), pn_half_to_float(b[i])));
		return;
	}
	for (; i < n; i += PN_TMP_ELEMS) {
		size_t m = n - i < PN_TMP_ELEMS ? n - i : PN_TMP_ELEMS, j;

		for (j = 0; j + 8 <= m; j += 8)
			_mm256_storeu_ps(acc + j, vfn(h8_load(a + i + j), h8_load(b + i + j)));
		for (; j < m; j++)
			acc[j] = fn(pn_half_to_float(a[i + j]), pn_half_to_float(b[i + j]));
		for (int s = 2; s < k; s++) {
			const uint16_t *src = (const uint16_t *)srcs[s] + i;

			for (j = 0; j + 8 <= m; j += 8)
				_mm256_storeu_ps(acc + j, vfn(_mm256_loadu_ps(acc + j), h8_load(src + j)));
			for (; j < m; j++)
				acc[j] = fn(acc[j], pn_half_to_float(src[j]));
		}
		for (j = 0; j + 8 <= m; j += 8)
			h8_store(d + i + j, _mm256_loadu_ps(acc + j));
		for (; j < m; j++)
			d[i + j] = pn_float_to_half(acc[j]);
	}
}

PN_TARGET_AVX2 static void h16c_reduce(uint16_t *d, const void *const *srcs, int k, size_t n,
				       enum pn_redop op)
{
	switch (op) {
	case PN_PROD: h16c_reduce_fn(d, srcs, k, n, v_prod, f32_prod); break;
	case PN_MIN: h16c_reduce_fn(d, srcs, k, n, v_min, f32_min); break;
	case PN_MAX: h16c_reduce_fn(d, srcs, k, n, v_max, f32_max); break;
	default: h16c_reduce_fn(d, srcs, k, n, v_sum, f32_sum); break;
	}
}

PN_TARGET_AVX2 static void h16c_div(uint16_t *d, size_t n, float r)
{
	__m256 vr = _mm256_set1_ps(r);
	size_t i = 0;

	for (; i + 8 <= n; i += 8)
		h8_store(d + i, _mm256_div_ps(h8_load(d + i), vr));
	for (; i < n; i++)
		d[i] = pn_float_to_half(pn_half_to_float(d[i]) / r);
}
#endif

/* half/bfloat16 reduction of k >= 2 sources; f16c: use F16C for half. */
PN_INLINE void f16ish_reduce(void *d, const void *const *srcs, int k, size_t n, enum pn_dtype t,
			     enum pn_redop op, int f16c)
{
#if PN_HAVE_X86
	if (t == PN_HALF && f16c) {
		h16c_reduce(d, srcs, k, n, op);
		return;
	}
#endif
	if (t == PN_HALF)
		c16_reduce_op(d, srcs, k, n, pn_half_to_float, pn_float_to_half, op);
	else
		bf16_reduce_op(d, srcs, k, n, op);
}

PN_INLINE void f16ish_div(void *d, size_t n, enum pn_dtype t, float r, int f16c)
{
#if PN_HAVE_X86
	if (t == PN_HALF && f16c) {
		h16c_div(d, n, r);
		return;
	}
#endif
	if (t == PN_HALF)
		c16_div(d, n, pn_half_to_float, pn_float_to_half, r);
	else
		bf16_div(d, n, r);
}

/* ---- the kernels, generic and AVX2 --------------------------------------- */

PN_INLINE void reduce2_body(void *dst, const void *a, const void *b, size_t n,
			    enum pn_dtype t, enum pn_redop op, int f16c)
{
	const void *srcs[2] = { a, b };

	if (!native_step(dst, a, b, n, t, op))
		f16ish_reduce(dst, srcs, 2, n, t, op, f16c);
}

/* Is p one of srcs[from..k-1]? */
static int among(const void *p, const void *const *srcs, int from, int k)
{
	for (int s = from; s < k; s++)
		if (srcs[s] == p)
			return 1;
	return 0;
}

PN_INLINE void reduce_n_body(void *dst, const void *const *srcs, int k, size_t n,
			     enum pn_dtype t, enum pn_redop op, int f16c)
{
	size_t es = pn_dtype_size(t);
	size_t blk = PN_TMP_ELEMS * sizeof(float) / es;
	uint64_t tmp[PN_TMP_ELEMS * sizeof(float) / sizeof(uint64_t)];
	char *d = dst;
	int direct;

	if (t == PN_HALF || t == PN_BFLOAT16) {
		f16ish_reduce(dst, srcs, k, n, t, op, f16c);
		return;
	}
	/*
	 * Blocks of 4 KiB: acc = s0 op s1, then acc = acc op s for the others.
	 * acc is dst itself unless dst is a later source, else a temporary.
	 */
	direct = !among(dst, srcs, 2, k);
	for (size_t i = 0; i < n; i += blk) {
		size_t m = n - i < blk ? n - i : blk;
		size_t off = i * es;
		void *acc = direct ? (void *)(d + off) : (void *)tmp;

		native_step(acc, (const char *)srcs[0] + off, (const char *)srcs[1] + off, m, t,
			    op);
		for (int s = 2; s < k; s++)
			native_step(acc, acc, (const char *)srcs[s] + off, m, t, op);
		if (!direct)
			memcpy(d + off, tmp, m * es);
	}
}

/*
 * Average: x / r, r = nranks > 1.  Integers: C division (truncation toward
 * zero) of the wrapped sum.  8-bit values are divided in float and 32-bit
 * ones in double, then truncated, which vectorizes.  That is exact: for a
 * quotient q = x/r that is not an integer, the gap to the next integer is at
 * least 1/r, while the rounding error of q is at most |x|/r * 2^-24 (float),
 * |x|/r * 2^-53 (double), which is smaller as 8-bit |x| < 2^24 and 32-bit
 * |x| < 2^53.  A float r is exact below 2^24; above it |q| < 1 either way.
 */
PN_INLINE int8_t i8_div(int8_t x, double r) { return (int8_t)((float)x / (float)r); }
PN_INLINE uint8_t u8_div(uint8_t x, double r) { return (uint8_t)(int32_t)((float)x / (float)r); }
PN_INLINE int32_t i32_div(int32_t x, double r) { return (int32_t)((double)x / r); }
PN_INLINE uint32_t u32_div(uint32_t x, double r) { return (uint32_t)((double)x / r); }
PN_INLINE int64_t i64_div(int64_t x, double r) { return x / (int64_t)r; }
PN_INLINE uint64_t u64_div(uint64_t x, double r) { return x / (uint64_t)r; }
PN_INLINE float f32_div(float x, double r) { return x / (float)r; }
PN_INLINE double f64_div(double x, double r) { return x / r; }

PN_INLINE void finish_body(void *d, size_t n, enum pn_dtype t, int nranks, int f16c)
{
	double r = nranks;

	switch (t) {
	case PN_INT8: i8_map(d, n, i8_div, r); break;
	case PN_UINT8: u8_map(d, n, u8_div, r); break;
	case PN_INT32: i32_map(d, n, i32_div, r); break;
	case PN_UINT32: u32_map(d, n, u32_div, r); break;
	case PN_INT64: i64_map(d, n, i64_div, r); break;
	case PN_UINT64: u64_map(d, n, u64_div, r); break;
	case PN_FLOAT: f32_map(d, n, f32_div, r); break;
	case PN_DOUBLE: f64_map(d, n, f64_div, r); break;
	case PN_HALF:
	case PN_BFLOAT16: f16ish_div(d, n, t, (float)nranks, f16c); break;
	default:
		break;
	}
}

static void reduce2_generic(void *dst, const void *a, const void *b, size_t n,
			    enum pn_dtype t, enum pn_redop op)
{
	reduce2_body(dst, a, b, n, t, op, 0);
}

static void reduce_n_generic(void *dst, const void *const *srcs, int k, size_t n,
			     enum pn_dtype t, enum pn_redop op)
{
	reduce_n_body(dst, srcs, k, n, t, op, 0);
}

static void finish_generic(void *dst, size_t n, enum pn_dtype t, int nr)
{
	finish_body(dst, n, t, nr, 0);
}

#if PN_HAVE_X86
PN_TARGET_AVX2 static void reduce2_avx2(void *dst, const void *a, const void *b, size_t n,
					enum pn_dtype t, enum pn_redop op)
{
	reduce2_body(dst, a, b, n, t, op, 1);
}

PN_TARGET_AVX2 static void reduce_n_avx2(void *dst, const void *const *srcs, int k, size_t n,
					 enum pn_dtype t, enum pn_redop op)
{
	reduce_n_body(dst, srcs, k, n, t, op, 1);
}

PN_TARGET_AVX2 static void finish_avx2(void *dst, size_t n, enum pn_dtype t, int nr)
{
	finish_body(dst, n, t, nr, 1);
}
#endif

/* ---- kernel selection ---------------------------------------------------- */

static atomic_int simd_level = PN_SIMD_AUTO;

static int cpu_has_avx2(void)
{
#if PN_HAVE_X86
	unsigned a, b, c, d;

	__builtin_cpu_init();
	if (!__builtin_cpu_supports("avx2") || !__get_cpuid(1, &a, &b, &c, &d))
		return 0;
	return !!(c & bit_F16C);
#else
	return 0;
#endif
}

int pn_reduce_simd(int want)
{
	int have = cpu_has_avx2() ? PN_SIMD_AVX2 : PN_SIMD_GENERIC;

	if (want == PN_SIMD_AUTO)
		want = have;
	else if (want != PN_SIMD_GENERIC && want != PN_SIMD_AVX2)
		return -EINVAL;
	else if (want > have)
		return -EINVAL;
	atomic_store_explicit(&simd_level, want, memory_order_relaxed);
	return want;
}

int pn_reduce_simd_now(void)
{
	int l = atomic_load_explicit(&simd_level, memory_order_relaxed);

	return l == PN_SIMD_AUTO ? pn_reduce_simd(PN_SIMD_AUTO) : l;
}

const char *pn_reduce_simd_name(void)
{
	return pn_reduce_simd_now() == PN_SIMD_AVX2 ? "avx2" : "generic";
}

void pn_reduce2(void *dst, const void *a, const void *b, size_t count, enum pn_dtype t,
		enum pn_redop op)
{
	if (!count)
		return;
#if PN_HAVE_X86
	if (pn_reduce_simd_now() == PN_SIMD_AVX2) {
		reduce2_avx2(dst, a, b, count, t, op);
		return;
	}
#endif
	reduce2_generic(dst, a, b, count, t, op);
}

void pn_reduce_n(void *dst, const void *const *srcs, int k, size_t count, enum pn_dtype t,
		 enum pn_redop op)
{
	if (!count || k < 1)
		return;
	if (k == 1) {
		if (dst != srcs[0])
			memcpy(dst, srcs[0], count * pn_dtype_size(t));
		return;
	}
#if PN_HAVE_X86
	if (pn_reduce_simd_now() == PN_SIMD_AVX2) {
		reduce_n_avx2(dst, srcs, k, count, t, op);
		return;
	}
#endif
	reduce_n_generic(dst, srcs, k, count, t, op);
}

void pn_reduce_chain(void *dst, const void *const *srcs, int k, size_t count, enum pn_dtype t,
		     enum pn_redop op)
{
	uint16_t tmp[2048];

	/* only half and bfloat16 round differently from pn_reduce_n's chain */
	if ((t != PN_HALF && t != PN_BFLOAT16) || k < 3) {
		pn_reduce_n(dst, srcs, k, count, t, op);
		return;
	}
	for (size_t i = 0; i < count; i += PN_ARRAY_SIZE(tmp)) {
		size_t m = PN_MIN(PN_ARRAY_SIZE(tmp), count - i);

		pn_reduce2(tmp, (const uint16_t *)srcs[0] + i, (const uint16_t *)srcs[1] + i, m, t, op);
		for (int s = 2; s < k; s++)
			pn_reduce2(tmp, tmp, (const uint16_t *)srcs[s] + i, m, t, op);
		memcpy((uint16_t *)dst + i, tmp, m * sizeof(tmp[0]));
	}
}

void pn_reduce_finish(void *dst, size_t count, enum pn_dtype t, enum pn_redop op, int nranks)
{
	if (op != PN_AVG || nranks <= 1 || !count)
		return;
#if PN_HAVE_X86
	if (pn_reduce_simd_now() == PN_SIMD_AVX2) {
		finish_avx2(dst, count, t, nranks);
		return;
	}
#endif
	finish_generic(dst, count, t, nranks);
}

void pn_copy(void *dst, const void *src, size_t bytes)
{
	if (bytes && dst != src)
		memcpy(dst, src, bytes);
}
