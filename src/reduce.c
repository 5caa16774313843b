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
 */
#include "reduce.h"

#include <errno.h>
#include <math.h>
#include <stdatomic.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <immintrin.h>
#define PN_HAVE_X86 1
#define PN_TARGET_AVX2 __attribute__((target("avx2,f16c")))
#else
#define PN_HAVE_X86 0
#endif

#define PN_INLINE static inline __attribute__((always_inline))

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

/* Float accumulator step for half/bfloat16: acc = acc op s. */
PN_INLINE void f32_acc_op(float *restrict acc, const float *restrict s, size_t n,
			  enum pn_redop op)
{
	switch (op) {
	case PN_PROD: f32_acc(acc, s, n, f32_prod); break;
	case PN_MIN: f32_acc(acc, s, n, f32_min); break;
	case PN_MAX: f32_acc(acc, s, n, f32_max); break;
	default: f32_acc(acc, s, n, f32_sum); break;
	}
}

/* ---- half and bfloat16 blocks -------------------------------------------- */

PN_INLINE void half_load_c(float *restrict d, const uint16_t *restrict s, size_t n)
{
	const size_t blk = PN_VEC_BYTES / sizeof(float);
	size_t i = 0;

	for (; i + blk <= n; i += blk)
		for (size_t j = 0; j < blk; j++)
			d[i + j] = pn_half_to_float(s[i + j]);
	for (; i < n; i++)
		d[i] = pn_half_to_float(s[i]);
}

PN_INLINE void half_store_c(uint16_t *restrict d, const float *restrict s, size_t n)
{
	const size_t blk = PN_VEC_BYTES / sizeof(float);
	size_t i = 0;

	for (; i + blk <= n; i += blk)
		for (size_t j = 0; j < blk; j++)
			d[i + j] = pn_float_to_half(s[i + j]);
	for (; i < n; i++)
		d[i] = pn_float_to_half(s[i]);
}

PN_INLINE void bf16_load(float *restrict d, const uint16_t *restrict s, size_t n)
{
	const size_t blk = PN_VEC_BYTES / sizeof(float);
	size_t i = 0;

	for (; i + blk <= n; i += blk)
		for (size_t j = 0; j < blk; j++)
			d[i + j] = pn_bf16_to_float(s[i + j]);
	for (; i < n; i++)
		d[i] = pn_bf16_to_float(s[i]);
}

PN_INLINE void bf16_store(uint16_t *restrict d, const float *restrict s, size_t n)
{
	const size_t blk = PN_VEC_BYTES / sizeof(float);
	size_t i = 0;

	for (; i + blk <= n; i += blk)
		for (size_t j = 0; j < blk; j++)
			d[i + j] = pn_float_to_bf16(s[i + j]);
	for (; i < n; i++)
		d[i] = pn_float_to_bf16(s[i]);
}

#if PN_HAVE_X86
/* F16C: the same bits as the C conversions, 8 elements per instruction. */
PN_TARGET_AVX2 static inline void half_load_f16c(float *restrict d, const uint16_t *restrict s,
						size_t n)
{
	size_t i = 0;

	for (; i + 8 <= n; i += 8)
		_mm256_storeu_ps(d + i, _mm256_cvtph_ps(_mm_loadu_si128((const void *)(s + i))));
	for (; i < n; i++)
		d[i] = pn_half_to_float(s[i]);
}

PN_TARGET_AVX2 static inline void half_store_f16c(uint16_t *restrict d, const float *restrict s,
						 size_t n)
{
	size_t i = 0;

	for (; i + 8 <= n; i += 8)
		_mm_storeu_si128((void *)(d + i),
				 _mm256_cvtps_ph(_mm256_loadu_ps(s + i),
						 _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
	for (; i < n; i++)
		d[i] = pn_float_to_half(s[i]);
}
#endif

PN_INLINE void half_load(float *restrict d, const uint16_t *restrict s, size_t n, int f16c)
{
#if PN_HAVE_X86
	if (f16c) {
		half_load_f16c(d, s, n);
		return;
	}
#endif
	half_load_c(d, s, n);
}

PN_INLINE void half_store(uint16_t *restrict d, const float *restrict s, size_t n, int f16c)
{
#if PN_HAVE_X86
	if (f16c) {
		half_store_f16c(d, s, n);
		return;
	}
#endif
	half_store_c(d, s, n);
}

PN_INLINE void f16ish_load(float *restrict d, const uint16_t *restrict s, size_t n,
			   enum pn_dtype t, int f16c)
{
	if (t == PN_HALF)
		half_load(d, s, n, f16c);
	else
		bf16_load(d, s, n);
}

PN_INLINE void f16ish_store(uint16_t *restrict d, const float *restrict s, size_t n,
			    enum pn_dtype t, int f16c)
{
	if (t == PN_HALF)
		half_store(d, s, n, f16c);
	else
		bf16_store(d, s, n);
}

/*
 * half/bfloat16: per block, convert srcs[0] to float, combine the others in
 * order, round once.  Every block is read completely before its output is
 * written, so dst may equal any source.
 */
PN_INLINE void f16ish_reduce(uint16_t *dst, const void *const *srcs, int k, size_t n,
			     enum pn_dtype t, enum pn_redop op, int f16c)
{
	float acc[PN_TMP_ELEMS], tmp[PN_TMP_ELEMS];

	for (size_t i = 0; i < n; i += PN_TMP_ELEMS) {
		size_t m = n - i < PN_TMP_ELEMS ? n - i : PN_TMP_ELEMS;

		f16ish_load(acc, (const uint16_t *)srcs[0] + i, m, t, f16c);
		for (int s = 1; s < k; s++) {
			f16ish_load(tmp, (const uint16_t *)srcs[s] + i, m, t, f16c);
			f32_acc_op(acc, tmp, m, op);
		}
		f16ish_store(dst + i, acc, m, t, f16c);
	}
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
	case PN_BFLOAT16: {
		float acc[PN_TMP_ELEMS];
		uint16_t *h = d;

		for (size_t i = 0; i < n; i += PN_TMP_ELEMS) {
			size_t m = n - i < PN_TMP_ELEMS ? n - i : PN_TMP_ELEMS;

			f16ish_load(acc, h + i, m, t, f16c);
			f32_map(acc, m, f32_div, r);
			f16ish_store(h + i, acc, m, t, f16c);
		}
		break;
	}
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

/* ---- test data ------------------------------------------------------------ */

/* Elements per block of the data functions. */
#define PN_DATA_BLK 1024
/* Elements per fixed-length inner loop of the hash loops. */
#define PN_HASH_VEC 32

PN_INLINE uint32_t fmix32(uint32_t h)
{
	h ^= h >> 16;
	h *= 0x85ebca6bu;
	h ^= h >> 13;
	h *= 0xc2b2ae35u;
	h ^= h >> 16;
	return h;
}

/* The hash input of element 0 of rank r; element i adds i * 0xC2B2AE3D (mod 2^32). */
PN_INLINE uint32_t hash_base(uint64_t seed, int rank)
{
	return (uint32_t)seed * 0x9E3779B1u + (uint32_t)rank * 0x85EBCA77u;
}

uint32_t pn_data_hash(uint64_t seed, int rank, size_t i)
{
	return fmix32(hash_base(seed, rank) + (uint32_t)i * 0xC2B2AE3Du);
}

/* Element values (pn_data_fill). */
PN_INLINE int32_t val_signed(uint32_t h) { return (int32_t)(h % 17u) - 8; }
PN_INLINE int32_t val_unsigned(uint32_t h) { return (int32_t)(h % 9u); }
PN_INLINE int32_t val_prod_signed(uint32_t h) { return (h & 7u) == 0 ? 2 : (h & 16u) ? -1 : 1; }
PN_INLINE int32_t val_prod_unsigned(uint32_t h) { return (h & 7u) == 0 ? 2 : 1; }
/*
 * Products are counted, not multiplied: bits 0-15 count the 2s, bits 16-30
 * the -1s (nranks < 32768), so the product is (-1)^(bit 16) * 2^(bits 0-15).
 */
PN_INLINE int32_t enc_prod_signed(uint32_t h) { return (h & 7u) == 0 ? 1 : (h & 16u) ? 0x10000 : 0; }
PN_INLINE int32_t enc_prod_unsigned(uint32_t h) { return (h & 7u) == 0 ? 1 : 0; }
PN_INLINE int32_t comb_sum(int32_t x, int32_t y) { return x + y; }

/* v[j] = val(hash of element i0 + j), j < m. */
PN_INLINE void hash_values(int32_t *restrict v, uint32_t x0, size_t m, int32_t (*val)(uint32_t))
{
	size_t j = 0;

	for (; j + PN_HASH_VEC <= m; j += PN_HASH_VEC)
		for (uint32_t l = 0; l < PN_HASH_VEC; l++)
			v[j + l] = val(fmix32(x0 + ((uint32_t)j + l) * 0xC2B2AE3Du));
	for (; j < m; j++)
		v[j] = val(fmix32(x0 + (uint32_t)j * 0xC2B2AE3Du));
}

/* acc[j] = comb(acc[j], val(hash of element i0 + j)), j < m. */
PN_INLINE void hash_combine(int32_t *restrict acc, uint32_t x0, size_t m,
			    int32_t (*val)(uint32_t), int32_t (*comb)(int32_t, int32_t))
{
	size_t j = 0;

	for (; j + PN_HASH_VEC <= m; j += PN_HASH_VEC)
		for (uint32_t l = 0; l < PN_HASH_VEC; l++)
			acc[j + l] = comb(acc[j + l],
					  val(fmix32(x0 + ((uint32_t)j + l) * 0xC2B2AE3Du)));
	for (; j < m; j++)
		acc[j] = comb(acc[j], val(fmix32(x0 + (uint32_t)j * 0xC2B2AE3Du)));
}

static int dtype_signed(enum pn_dtype t)
{
	return t != PN_UINT8 && t != PN_UINT32 && t != PN_UINT64;
}

/* Store small integers v[0..m) as type t. */
PN_INLINE void store_ints(void *out, const int32_t *restrict v, size_t m, enum pn_dtype t)
{
	size_t j;

	switch (t) {
	case PN_INT8:
	case PN_UINT8:
		for (j = 0; j < m; j++)
			((uint8_t *)out)[j] = (uint8_t)v[j]; /* wraps like the sum in the type */
		break;
	case PN_INT32:
	case PN_UINT32:
		for (j = 0; j < m; j++)
			((uint32_t *)out)[j] = (uint32_t)v[j];
		break;
	case PN_INT64:
	case PN_UINT64:
		for (j = 0; j < m; j++)
			((uint64_t *)out)[j] = (uint64_t)(int64_t)v[j];
		break;
	case PN_HALF:
		for (j = 0; j < m; j++)
			((uint16_t *)out)[j] = pn_float_to_half((float)v[j]);
		break;
	case PN_BFLOAT16:
		for (j = 0; j < m; j++)
			((uint16_t *)out)[j] = pn_float_to_bf16((float)v[j]);
		break;
	case PN_FLOAT:
		for (j = 0; j < m; j++)
			((float *)out)[j] = (float)v[j];
		break;
	case PN_DOUBLE:
		for (j = 0; j < m; j++)
			((double *)out)[j] = (double)v[j];
		break;
	default:
		break;
	}
}

/* Store counted products (enc_prod_*) as type t: integers wrap like the product in the type. */
static void store_prods(void *out, const int32_t *v, size_t m, enum pn_dtype t)
{
	for (size_t j = 0; j < m; j++) {
		int twos = v[j] & 0xffff, neg = (v[j] >> 16) & 1;
		uint64_t u = twos < 64 ? (uint64_t)1 << twos : 0;
		double d = ldexp(neg ? -1.0 : 1.0, twos);

		if (neg)
			u = 0 - u;
		switch (t) {
		case PN_INT8:
		case PN_UINT8: ((uint8_t *)out)[j] = (uint8_t)u; break;
		case PN_INT32:
		case PN_UINT32: ((uint32_t *)out)[j] = (uint32_t)u; break;
		case PN_INT64:
		case PN_UINT64: ((uint64_t *)out)[j] = u; break;
		case PN_HALF: ((uint16_t *)out)[j] = pn_float_to_half((float)d); break;
		case PN_BFLOAT16: ((uint16_t *)out)[j] = pn_float_to_bf16((float)d); break;
		case PN_FLOAT: ((float *)out)[j] = (float)d; break;
		case PN_DOUBLE: ((double *)out)[j] = d; break;
		default: break;
		}
	}
}

PN_INLINE void fill_body(void *buf, size_t count, enum pn_dtype t, enum pn_redop op, int rank,
			 uint64_t seed)
{
	int32_t v[PN_DATA_BLK];
	size_t es = pn_dtype_size(t);
	uint32_t base = hash_base(seed, rank);
	int sgn = dtype_signed(t);

	for (size_t i = 0; i < count; i += PN_DATA_BLK) {
		size_t m = count - i < PN_DATA_BLK ? count - i : PN_DATA_BLK;
		uint32_t x0 = base + (uint32_t)i * 0xC2B2AE3Du;

		if (op == PN_PROD)
			hash_values(v, x0, m, sgn ? val_prod_signed : val_prod_unsigned);
		else if (sgn)
			hash_values(v, x0, m, val_signed);
		else
			hash_values(v, x0, m, val_unsigned);
		store_ints((char *)buf + i * es, v, m, t);
	}
}

/* The reference for elements [i0, i0 + m), m <= PN_DATA_BLK, into out. */
PN_INLINE void expected_block(void *out, size_t i0, size_t m, enum pn_dtype t,
			      enum pn_redop op, int nranks, uint64_t seed)
{
	int32_t acc[PN_DATA_BLK];
	int sgn = dtype_signed(t);

	for (int r = 0; r < nranks; r++) {
		uint32_t x0 = hash_base(seed, r) + (uint32_t)i0 * 0xC2B2AE3Du;

		/* rank 0 starts from its own values (comb with 0 would break min/max) */
		if (r == 0 && op != PN_PROD) {
			if (sgn)
				hash_values(acc, x0, m, val_signed);
			else
				hash_values(acc, x0, m, val_unsigned);
			continue;
		}
		if (r == 0)
			memset(acc, 0, m * sizeof(acc[0]));
		switch (op) {
		case PN_PROD:
			if (sgn)
				hash_combine(acc, x0, m, enc_prod_signed, comb_sum);
			else
				hash_combine(acc, x0, m, enc_prod_unsigned, comb_sum);
			break;
		case PN_MIN:
			if (sgn)
				hash_combine(acc, x0, m, val_signed, i32_min);
			else
				hash_combine(acc, x0, m, val_unsigned, i32_min);
			break;
		case PN_MAX:
			if (sgn)
				hash_combine(acc, x0, m, val_signed, i32_max);
			else
				hash_combine(acc, x0, m, val_unsigned, i32_max);
			break;
		default:
			if (sgn)
				hash_combine(acc, x0, m, val_signed, comb_sum);
			else
				hash_combine(acc, x0, m, val_unsigned, comb_sum);
			break;
		}
	}
	if (op == PN_PROD) {
		store_prods(out, acc, m, t);
		return;
	}
	store_ints(out, acc, m, t);
	if (op == PN_AVG)
		pn_reduce_finish(out, m, t, op, nranks);
}

PN_INLINE void expected_body(void *buf, size_t count, enum pn_dtype t, enum pn_redop op,
			     int nranks, uint64_t seed)
{
	size_t es = pn_dtype_size(t);

	for (size_t i = 0; i < count; i += PN_DATA_BLK) {
		size_t m = count - i < PN_DATA_BLK ? count - i : PN_DATA_BLK;

		expected_block((char *)buf + i * es, i, m, t, op, nranks, seed);
	}
}

/* Elements of a and b (n elements of es bytes) whose bits differ. */
PN_INLINE size_t count_diff(const void *a, const void *b, size_t n, size_t es)
{
	size_t bad = 0, j;

	switch (es) {
	case 1:
		for (j = 0; j < n; j++)
			bad += ((const uint8_t *)a)[j] != ((const uint8_t *)b)[j];
		break;
	case 2:
		for (j = 0; j < n; j++)
			bad += ((const uint16_t *)a)[j] != ((const uint16_t *)b)[j];
		break;
	case 4:
		for (j = 0; j < n; j++)
			bad += ((const uint32_t *)a)[j] != ((const uint32_t *)b)[j];
		break;
	default:
		for (j = 0; j < n; j++)
			bad += ((const uint64_t *)a)[j] != ((const uint64_t *)b)[j];
		break;
	}
	return bad;
}

/*
 * The reference is never NaN (finite integers, or +-Inf for half/float
 * products of more than 15/127 twos), so comparing bits also counts every
 * NaN in buf as wrong.
 */
PN_INLINE size_t check_body(const void *buf, size_t count, enum pn_dtype t, enum pn_redop op,
			    int nranks, uint64_t seed)
{
	uint64_t ref[PN_DATA_BLK];
	size_t es = pn_dtype_size(t), bad = 0;

	for (size_t i = 0; i < count; i += PN_DATA_BLK) {
		size_t m = count - i < PN_DATA_BLK ? count - i : PN_DATA_BLK;

		expected_block(ref, i, m, t, op, nranks, seed);
		bad += count_diff((const char *)buf + i * es, ref, m, es);
	}
	return bad;
}

static void fill_generic(void *buf, size_t count, enum pn_dtype t, enum pn_redop op, int rank,
			 uint64_t seed)
{
	fill_body(buf, count, t, op, rank, seed);
}

static void expected_generic(void *buf, size_t count, enum pn_dtype t, enum pn_redop op,
			     int nranks, uint64_t seed)
{
	expected_body(buf, count, t, op, nranks, seed);
}

static size_t check_generic(const void *buf, size_t count, enum pn_dtype t, enum pn_redop op,
			    int nranks, uint64_t seed)
{
	return check_body(buf, count, t, op, nranks, seed);
}

#if PN_HAVE_X86
PN_TARGET_AVX2 static void fill_avx2(void *buf, size_t count, enum pn_dtype t,
				     enum pn_redop op, int rank, uint64_t seed)
{
	fill_body(buf, count, t, op, rank, seed);
}

PN_TARGET_AVX2 static void expected_avx2(void *buf, size_t count, enum pn_dtype t,
					 enum pn_redop op, int nranks, uint64_t seed)
{
	expected_body(buf, count, t, op, nranks, seed);
}

PN_TARGET_AVX2 static size_t check_avx2(const void *buf, size_t count, enum pn_dtype t,
					enum pn_redop op, int nranks, uint64_t seed)
{
	return check_body(buf, count, t, op, nranks, seed);
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

static int simd(void)
{
	int l = atomic_load_explicit(&simd_level, memory_order_relaxed);

	return l == PN_SIMD_AUTO ? pn_reduce_simd(PN_SIMD_AUTO) : l;
}

const char *pn_reduce_simd_name(void)
{
	return simd() == PN_SIMD_AVX2 ? "avx2" : "generic";
}

void pn_reduce2(void *dst, const void *a, const void *b, size_t count, enum pn_dtype t,
		enum pn_redop op)
{
	if (!count)
		return;
#if PN_HAVE_X86
	if (simd() == PN_SIMD_AVX2) {
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
	if (simd() == PN_SIMD_AVX2) {
		reduce_n_avx2(dst, srcs, k, count, t, op);
		return;
	}
#endif
	reduce_n_generic(dst, srcs, k, count, t, op);
}

void pn_reduce_finish(void *dst, size_t count, enum pn_dtype t, enum pn_redop op, int nranks)
{
	if (op != PN_AVG || nranks <= 1 || !count)
		return;
#if PN_HAVE_X86
	if (simd() == PN_SIMD_AVX2) {
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

void pn_data_fill(void *buf, size_t count, enum pn_dtype t, enum pn_redop op, int rank,
		  uint64_t seed)
{
#if PN_HAVE_X86
	if (simd() == PN_SIMD_AVX2) {
		fill_avx2(buf, count, t, op, rank, seed);
		return;
	}
#endif
	fill_generic(buf, count, t, op, rank, seed);
}

void pn_data_expected(void *buf, size_t count, enum pn_dtype t, enum pn_redop op, int nranks,
		      uint64_t seed)
{
	if (nranks < 1)
		nranks = 1;
#if PN_HAVE_X86
	if (simd() == PN_SIMD_AVX2) {
		expected_avx2(buf, count, t, op, nranks, seed);
		return;
	}
#endif
	expected_generic(buf, count, t, op, nranks, seed);
}

size_t pn_data_check(const void *buf, size_t count, enum pn_dtype t, enum pn_redop op,
		     int nranks, uint64_t seed)
{
	if (nranks < 1)
		nranks = 1;
#if PN_HAVE_X86
	if (simd() == PN_SIMD_AVX2)
		return check_avx2(buf, count, t, op, nranks, seed);
#endif
	return check_generic(buf, count, t, op, nranks, seed);
}

/*
 * 0xA5 in every byte: as int32/int64 and unsigned, not a sum of
 * 8 * nranks-bounded values, nor a (negated) power of two; as half,
 * bfloat16, float, double a tiny negative non-integer (|x| < 1/32), which
 * no sum, product or average over fewer than 32 ranks gives; as int8 -91
 * and uint8 165, out of reach of min, max, avg and prod.  Only an 8-bit sum
 * over 12 or more ranks can equal it (|sum| <= 8 * nranks), and for an
 * element to do so its ranks' values must add up to exactly that.
 */
void pn_data_poison(void *buf, size_t bytes)
{
	memset(buf, 0xA5, bytes);
}
