/* SPDX-License-Identifier: MIT */
/*
 * Element types, half/bfloat16 conversions, reduction kernels (against
 * scalar references written independently here) and the allreduce test data.
 * The kernel tests run once per kernel set the CPU has (generic, avx2).
 */
#define _GNU_SOURCE
#include "unit.h"

#include "engine/dtype.h"
#include "base/log.h"
#include "engine/reduce.h"
#include "engine/testdata.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <immintrin.h>
#define HAVE_X86 1
#else
#define HAVE_X86 0
#endif

static uint64_t rng = 0x9E3779B97F4A7C15ull;

static uint64_t rnd(void)
{
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return rng * 0x2545F4914F6CDD1Dull;
}

static const size_t counts[] = { 0, 1, 2, 3, 7, 15, 16, 17, 31, 33, 63, 64, 65, 127, 129, 1000, 1023,
				 1025, 2049, 4099 };
#define MAXCOUNT 4099

/* ---- scalar references ---------------------------------------------------- */

static uint32_t fbits(float f)
{
	uint32_t u;

	memcpy(&u, &f, 4);
	return u;
}

static float ffrom(uint32_t u)
{
	float f;

	memcpy(&f, &u, 4);
	return f;
}

/* min/max reference: NaN if either is NaN; -0 < +0. */
static double ref_min(double x, double y)
{
	if (isnan(x) || isnan(y))
		return NAN;
	if (x != y)
		return x < y ? x : y;
	return signbit(x) ? x : y;
}

static double ref_max(double x, double y)
{
	if (isnan(x) || isnan(y))
		return NAN;
	if (x != y)
		return x > y ? x : y;
	return signbit(x) ? y : x;
}

static float ref_fop(float x, float y, enum pn_redop op)
{
	switch (op) {
	case PN_PROD: return x * y;
	case PN_MIN: return (float)ref_min(x, y);
	case PN_MAX: return (float)ref_max(x, y);
	default: return x + y;
	}
}

static double ref_dop(double x, double y, enum pn_redop op)
{
	switch (op) {
	case PN_PROD: return x * y;
	case PN_MIN: return ref_min(x, y);
	case PN_MAX: return ref_max(x, y);
	default: return x + y;
	}
}

/* Integers as int64 (signed types) or uint64; wrap to the width at the end. */
static uint64_t ref_iop(uint64_t x, uint64_t y, int is_signed, enum pn_redop op)
{
	switch (op) {
	case PN_PROD: return x * y;
	case PN_MIN:
		if (is_signed)
			return (int64_t)x < (int64_t)y ? x : y;
		return x < y ? x : y;
	case PN_MAX:
		if (is_signed)
			return (int64_t)x > (int64_t)y ? x : y;
		return x > y ? x : y;
	default: return x + y;
	}
}

static uint64_t load_int(const void *p, size_t i, enum pn_dtype t)
{
	switch (t) {
	case PN_INT8: return (uint64_t)(int64_t)((const int8_t *)p)[i];
	case PN_UINT8: return ((const uint8_t *)p)[i];
	case PN_INT32: return (uint64_t)(int64_t)((const int32_t *)p)[i];
	case PN_UINT32: return ((const uint32_t *)p)[i];
	default: return ((const uint64_t *)p)[i];
	}
}

static void store_int(void *p, size_t i, enum pn_dtype t, uint64_t v)
{
	switch (t) {
	case PN_INT8:
	case PN_UINT8: ((uint8_t *)p)[i] = (uint8_t)v; break;
	case PN_INT32:
	case PN_UINT32: ((uint32_t *)p)[i] = (uint32_t)v; break;
	default: ((uint64_t *)p)[i] = v; break;
	}
}

static int is_signed_int(enum pn_dtype t)
{
	return t == PN_INT8 || t == PN_INT32 || t == PN_INT64;
}

static float load16(const void *p, size_t i, enum pn_dtype t)
{
	uint16_t h = ((const uint16_t *)p)[i];

	return t == PN_HALF ? pn_half_to_float(h) : pn_bf16_to_float(h);
}

static uint16_t round16(float f, enum pn_dtype t)
{
	return t == PN_HALF ? pn_float_to_half(f) : pn_float_to_bf16(f);
}

/* out = fold of the k sources in order (half/bfloat16 in float, rounded once). */
static void ref_reduce(void *out, const void *const *srcs, int k, size_t n, enum pn_dtype t,
		       enum pn_redop op)
{
	for (size_t i = 0; i < n; i++) {
		switch (t) {
		case PN_FLOAT: {
			float a = ((const float *)srcs[0])[i];

			for (int s = 1; s < k; s++)
				a = ref_fop(a, ((const float *)srcs[s])[i], op);
			((float *)out)[i] = a;
			break;
		}
		case PN_DOUBLE: {
			double a = ((const double *)srcs[0])[i];

			for (int s = 1; s < k; s++)
				a = ref_dop(a, ((const double *)srcs[s])[i], op);
			((double *)out)[i] = a;
			break;
		}
		case PN_HALF:
		case PN_BFLOAT16: {
			float a = load16(srcs[0], i, t);

			for (int s = 1; s < k; s++)
				a = ref_fop(a, load16(srcs[s], i, t), op);
			((uint16_t *)out)[i] = round16(a, t);
			break;
		}
		default: {
			uint64_t a = load_int(srcs[0], i, t);

			for (int s = 1; s < k; s++)
				a = ref_iop(a, load_int(srcs[s], i, t), is_signed_int(t), op);
			store_int(out, i, t, a);
			break;
		}
		}
	}
}

static int elem_is_nan(const void *p, size_t i, enum pn_dtype t)
{
	switch (t) {
	case PN_FLOAT: return isnan(((const float *)p)[i]);
	case PN_DOUBLE: return isnan(((const double *)p)[i]);
	case PN_HALF:
	case PN_BFLOAT16: return isnan(load16(p, i, t));
	default: return 0;
	}
}

/* Elements that differ; where the reference is NaN any NaN matches. */
static size_t mismatches(const void *got, const void *want, size_t n, enum pn_dtype t)
{
	size_t es = pn_dtype_size(t), bad = 0;

	for (size_t i = 0; i < n; i++) {
		if (elem_is_nan(want, i, t)) {
			bad += !elem_is_nan(got, i, t);
			continue;
		}
		bad += memcmp((const char *)got + i * es, (const char *)want + i * es, es) != 0;
	}
	return bad;
}

/* Random inputs: integers any bits; floats mostly moderate values, some specials. */
static void random_fill(void *p, size_t n, enum pn_dtype t, enum pn_redop op)
{
	static const float specials[] = { 0.0f, -0.0f, INFINITY, -INFINITY, NAN, 1e-40f, -1e-40f,
					  65504.0f, 65520.0f, 6.1e-5f, 1.0f, -1.0f };

	for (size_t i = 0; i < n; i++) {
		uint64_t r = rnd();
		int special = (r & 63) == 0;
		float f = (float)((int64_t)(r >> 40) - (1 << 23)) / (float)(1 << (r >> 36 & 15));

		if (op == PN_PROD)
			f = (float)((r >> 40 & 7) + 1) / 4.0f * ((r & 64) ? -1.0f : 1.0f);
		if (special)
			f = specials[(r >> 8) % (sizeof(specials) / sizeof(specials[0]))];
		switch (t) {
		case PN_FLOAT: ((float *)p)[i] = (r & 128) && !special ? ffrom((uint32_t)(r >> 16)) : f; break;
		case PN_DOUBLE: ((double *)p)[i] = (double)f * ((r & 256) ? 1.0 + 1.0 / 3 : 1.0); break;
		case PN_HALF:
		case PN_BFLOAT16:
			if ((r & 128) && !special)
				((uint16_t *)p)[i] = (uint16_t)(r >> 24);
			else
				((uint16_t *)p)[i] = round16(t == PN_HALF ? f / 256 : f, t);
			break;
		default: store_int(p, i, t, rnd()); break;
		}
	}
}

static double as_double_f(const void *p, size_t i, enum pn_dtype t)
{
	if (t == PN_FLOAT)
		return ((const float *)p)[i];
	if (t == PN_DOUBLE)
		return ((const double *)p)[i];
	return load16(p, i, t);
}

/* ---- dtype ---------------------------------------------------------------- */

TEST(dtype_names)
{
	static const char *names[] = { "int8", "uint8", "int32", "uint32", "int64", "uint64",
				       "half", "bfloat16", "float", "double" };
	static const size_t sizes[] = { 1, 1, 4, 4, 8, 8, 2, 2, 4, 8 };
	enum pn_dtype t;
	enum pn_redop op;

	for (int i = 0; i < PN_NDTYPES; i++) {
		CHECK_STR(pn_dtype_name((enum pn_dtype)i), names[i]);
		CHECK_EQ_INT(pn_dtype_size((enum pn_dtype)i), sizes[i]);
		CHECK(!pn_dtype_parse(names[i], &t) && t == (enum pn_dtype)i);
		CHECK_EQ_INT(pn_dtype_is_float((enum pn_dtype)i), i >= PN_HALF);
	}
	CHECK(!pn_dtype_parse("fp16", &t) && t == PN_HALF);
	CHECK(!pn_dtype_parse("bf16", &t) && t == PN_BFLOAT16);
	CHECK(!pn_dtype_parse("f32", &t) && t == PN_FLOAT);
	CHECK(!pn_dtype_parse("fp32", &t) && t == PN_FLOAT);
	CHECK(!pn_dtype_parse("float32", &t) && t == PN_FLOAT);
	CHECK(!pn_dtype_parse("f64", &t) && t == PN_DOUBLE);
	CHECK(!pn_dtype_parse("int", &t) && t == PN_INT32);
	CHECK(!pn_dtype_parse("char", &t) && t == PN_INT8);
	CHECK_EQ_INT(pn_dtype_parse("float16x", &t), -EINVAL);
	CHECK_STR(pn_errmsg(-EINVAL), "unknown data type 'float16x' (valid: int8 uint8 int32 uint32 "
				      "int64 uint64 half bfloat16 float double)");
	CHECK_EQ_INT(pn_dtype_parse("", &t), -EINVAL);
	CHECK_EQ_INT(pn_dtype_parse("Float", &t), -EINVAL);
	CHECK_EQ_INT(pn_dtype_size(PN_NDTYPES), 0);
	CHECK_STR(pn_dtype_name(PN_NDTYPES), "?");

	static const char *ops[] = { "sum", "prod", "min", "max", "avg" };
	for (int i = 0; i < PN_NREDOPS; i++) {
		CHECK_STR(pn_redop_name((enum pn_redop)i), ops[i]);
		CHECK(!pn_redop_parse(ops[i], &op) && op == (enum pn_redop)i);
	}
	CHECK_EQ_INT(pn_redop_parse("mean", &op), -EINVAL);
	CHECK_STR(pn_errmsg(-EINVAL),
		  "unknown reduction operation 'mean' (valid: sum prod min max avg)");
	CHECK_STR(pn_redop_name(PN_NREDOPS), "?");
}

/* ---- conversions ---------------------------------------------------------- */

/* binary16 value by its definition. */
static double half_value(uint16_t h)
{
	int e = h >> 10 & 0x1f, m = h & 0x3ff;
	double v = e ? ldexp(1024 + m, e - 25) : ldexp(m, -24);

	return (h & 0x8000) ? -v : v;
}

TEST(half_to_float_exhaustive)
{
	for (uint32_t h = 0; h < 65536; h++) {
		float f = pn_half_to_float((uint16_t)h);
		int e = h >> 10 & 0x1f, m = h & 0x3ff;

		if (e == 0x1f && m) {
			/* quiet NaN, same sign, payload in the top mantissa bits */
			CHECK_EQ_INT(fbits(f), (h & 0x8000u) << 16 | 0x7fc00000u | (uint32_t)m << 13);
		} else if (e == 0x1f) {
			CHECK(isinf(f) && !!signbit(f) == !!(h & 0x8000));
		} else {
			CHECK((double)f == half_value((uint16_t)h));
			CHECK(!!signbit(f) == !!(h & 0x8000));
		}
	}
}

TEST(half_round_trip_exhaustive)
{
	for (uint32_t h = 0; h < 65536; h++) {
		uint16_t back = pn_float_to_half(pn_half_to_float((uint16_t)h));
		int nan = (h & 0x7c00) == 0x7c00 && (h & 0x3ff);

		CHECK_EQ_INT(back, nan ? (h | 0x200) : h);
	}
}

/* Round to nearest even by definition: the nearest of the two neighbours. */
TEST(float_to_half_rounding)
{
	/* every midpoint between neighbouring finite halves, and one float ulp either side */
	for (uint32_t h = 0; h < 0x7c00; h++) {
		double lo = half_value((uint16_t)h), hi = h == 0x7bff ? 65536.0 : half_value((uint16_t)(h + 1));
		float mid = (float)((lo + hi) / 2);
		uint16_t even = (h & 1) ? (uint16_t)(h + 1) : (uint16_t)h;

		CHECK((double)mid == (lo + hi) / 2); /* exact in float */
		CHECK_EQ_INT(pn_float_to_half(mid), even);
		CHECK_EQ_INT(pn_float_to_half(-mid), even | 0x8000);
		CHECK_EQ_INT(pn_float_to_half(nextafterf(mid, 0)), h);
		CHECK_EQ_INT(pn_float_to_half(nextafterf(mid, INFINITY)), h + 1);
	}
	CHECK_EQ_INT(pn_float_to_half(65519.99f), 0x7bff);
	CHECK_EQ_INT(pn_float_to_half(65520.0f), 0x7c00);
	CHECK_EQ_INT(pn_float_to_half(1e30f), 0x7c00);
	CHECK_EQ_INT(pn_float_to_half(-INFINITY), 0xfc00);
	CHECK_EQ_INT(pn_float_to_half(1e-30f), 0);
	CHECK_EQ_INT(pn_float_to_half(-1e-30f), 0x8000);
	CHECK_EQ_INT(pn_float_to_half(ffrom(1)), 0);		    /* float subnormal */
	CHECK_EQ_INT(pn_float_to_half(0x1p-25f), 0);		    /* tie to even: 0 */
	CHECK_EQ_INT(pn_float_to_half(nextafterf(0x1p-25f, 1)), 1); /* above the tie */
	CHECK_EQ_INT(pn_float_to_half(0x1.8p-24f), 2);		    /* 1.5 ulp: to even 2 */
	CHECK_EQ_INT(pn_float_to_half(ffrom(0x7f800001)), 0x7e00);  /* sNaN, low payload */
	CHECK_EQ_INT(pn_float_to_half(ffrom(0xffa00000)), 0xff00);
	/* random floats against the definition: nearest half, ties to even */
	for (int i = 0; i < 200000; i++) {
		float f = ffrom((uint32_t)rnd());
		uint16_t h = pn_float_to_half(f);
		double a = fabs((double)f);

		if (isnan(f)) {
			CHECK((h & 0x7c00) == 0x7c00 && (h & 0x3ff));
			continue;
		}
		if (a >= 65520.0) {
			CHECK_EQ_INT(h & 0x7fff, 0x7c00);
			continue;
		}
		double got = fabs(half_value(h));
		double ulp = a < 0x1p-14 ? 0x1p-24 : ldexp(1.0, ilogb(a) - 10);
		CHECK(fabs(got - a) <= ulp / 2);
		if (fabs(got - a) == ulp / 2)
			CHECK((h & 1) == 0);
		if (got != 0)
			CHECK(!!signbit(f) == !!(h & 0x8000));
	}
}

TEST(bfloat16_exhaustive)
{
	for (uint32_t b = 0; b < 65536; b++) {
		float f = pn_bf16_to_float((uint16_t)b);
		int nan = (b & 0x7f80) == 0x7f80 && (b & 0x7f);

		CHECK_EQ_INT(fbits(f), (b << 16) | (nan ? 0x400000u : 0));
		CHECK_EQ_INT(pn_float_to_bf16(f), nan ? (b | 0x40) : b);
		if (nan || (b & 0x7fff) >= 0x7f80)
			continue;
		/* midpoint to the next bfloat16 (away from zero) rounds to even */
		uint32_t mid = (b << 16) + 0x8000;
		uint16_t even = (b & 1) ? (uint16_t)(b + 1) : (uint16_t)b;

		CHECK_EQ_INT(pn_float_to_bf16(ffrom(mid)), even);
		CHECK_EQ_INT(pn_float_to_bf16(ffrom(mid - 1)), b);
		CHECK_EQ_INT(pn_float_to_bf16(ffrom(mid + 1)), b + 1);
	}
	CHECK_EQ_INT(pn_float_to_bf16(ffrom(0x7f7fffff)), 0x7f80); /* FLT_MAX rounds to Inf */
	CHECK_EQ_INT(pn_float_to_bf16(ffrom(0x7f800001)), 0x7fc0);
	CHECK_EQ_INT(pn_float_to_bf16(ffrom(0x00000001)), 0);	    /* subnormal rounds */
	CHECK_EQ_INT(pn_float_to_bf16(ffrom(0x00018000)), 2);	    /* subnormal tie to even */
}

#if HAVE_X86
static int have_f16c(void)
{
	unsigned a, b, c, d;

	return __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C) && (c & bit_AVX);
}

__attribute__((target("avx,f16c"))) static int f16c_agrees(void)
{
	int bad = 0;

	for (uint32_t h = 0; h < 65536; h += 8) {
		uint16_t in[8];
		float out[8];

		for (int j = 0; j < 8; j++)
			in[j] = (uint16_t)(h + (uint32_t)j);
		_mm256_storeu_ps(out, _mm256_cvtph_ps(_mm_loadu_si128((const void *)in)));
		for (int j = 0; j < 8; j++)
			bad += fbits(out[j]) != fbits(pn_half_to_float(in[j]));
	}
	for (int i = 0; i < 400000; i += 8) {
		float in[8];
		uint16_t out[8];

		for (int j = 0; j < 8; j++)
			in[j] = ffrom((uint32_t)rnd() >> (j & 4)); /* many near-zero exponents too */
		_mm_storeu_si128((void *)out, _mm256_cvtps_ph(_mm256_loadu_ps(in),
							       _MM_FROUND_TO_NEAREST_INT));
		for (int j = 0; j < 8; j++)
			bad += out[j] != pn_float_to_half(in[j]);
	}
	return bad;
}
#endif

TEST(half_matches_f16c)
{
#if HAVE_X86
	if (have_f16c())
		CHECK_EQ_INT(f16c_agrees(), 0);
#endif
}

/* ---- kernels -------------------------------------------------------------- */

static _Alignas(64) unsigned char A[MAXCOUNT * 8 + 64], B[MAXCOUNT * 8 + 64],
	D[MAXCOUNT * 8 + 64], R[MAXCOUNT * 8 + 64], S[16][MAXCOUNT * 8 + 64];

/* Each dtype x op x count, out of place and with dst == a, dst == b, dst == a == b. */
TEST(reduce2_matrix)
{
	for (int t = 0; t < PN_NDTYPES; t++) {
		for (int op = 0; op < PN_NREDOPS; op++) {
			for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
				size_t n = counts[c], es = pn_dtype_size((enum pn_dtype)t);
				/* odd offsets: unaligned buffers too */
				unsigned char *a = A + (c & 1) * es, *b = B + (c & 2) * es;
				const void *srcs[2] = { a, b };

				random_fill(a, n, (enum pn_dtype)t, (enum pn_redop)op);
				random_fill(b, n, (enum pn_dtype)t, (enum pn_redop)op);
				ref_reduce(R, srcs, 2, n, (enum pn_dtype)t, (enum pn_redop)op);

				memset(D, 0x5a, sizeof(D));
				pn_reduce2(D, a, b, n, (enum pn_dtype)t, (enum pn_redop)op);
				CHECK_EQ_INT(mismatches(D, R, n, (enum pn_dtype)t), 0);
				CHECK(D[n * es] == 0x5a); /* nothing past the end */

				/* commutative bit for bit */
				pn_reduce2(D, b, a, n, (enum pn_dtype)t, (enum pn_redop)op);
				CHECK_EQ_INT(mismatches(D, R, n, (enum pn_dtype)t), 0);

				memcpy(D, a, n * es);
				pn_reduce2(D, D, b, n, (enum pn_dtype)t, (enum pn_redop)op);
				CHECK_EQ_INT(mismatches(D, R, n, (enum pn_dtype)t), 0);

				memcpy(D, b, n * es);
				pn_reduce2(D, a, D, n, (enum pn_dtype)t, (enum pn_redop)op);
				CHECK_EQ_INT(mismatches(D, R, n, (enum pn_dtype)t), 0);

				const void *same[2] = { a, a };
				ref_reduce(R, same, 2, n, (enum pn_dtype)t, (enum pn_redop)op);
				memcpy(D, a, n * es);
				pn_reduce2(D, D, D, n, (enum pn_dtype)t, (enum pn_redop)op);
				CHECK_EQ_INT(mismatches(D, R, n, (enum pn_dtype)t), 0);
			}
		}
	}
}

/* The OR of element k's bits in x and y, as a NaN min/max result stores it, into out. */
static void or_bits(void *out, const void *x, const void *y, size_t k, enum pn_dtype t)
{
	if (t == PN_DOUBLE) {
		uint64_t a, b;

		memcpy(&a, (const double *)x + k, 8);
		memcpy(&b, (const double *)y + k, 8);
		a |= b;
		memcpy(out, &a, 8);
	} else if (t == PN_FLOAT) {
		uint32_t v = fbits(((const float *)x)[k]) | fbits(((const float *)y)[k]);

		memcpy(out, &v, 4);
	} else {
		uint16_t v = round16(ffrom(fbits(load16(x, k, t)) | fbits(load16(y, k, t))), t);

		memcpy(out, &v, 2);
	}
}

/* Every pair of NaN/Inf/zero/normal specials through min and max, in each float type. */
TEST(minmax_nan_and_zero)
{
	/* the last one is replaced by a signalling NaN with a low payload */
	static const float fa[] = { NAN, -NAN, INFINITY, -INFINITY, 0.0f, -0.0f, 1.0f, -2.0f, 0.5f, 0.0f };
	enum { N = sizeof(fa) / sizeof(fa[0]) };
	static const enum pn_dtype types[] = { PN_FLOAT, PN_DOUBLE, PN_HALF, PN_BFLOAT16 };

	for (size_t ti = 0; ti < 4; ti++) {
		enum pn_dtype t = types[ti];
		size_t es = pn_dtype_size(t);
		unsigned char x[N * N * 8], y[N * N * 8], lo[N * N * 8], hi[N * N * 8],
			lo2[N * N * 8], hi2[N * N * 8];

		for (size_t i = 0; i < N; i++) {
			for (size_t j = 0; j < N; j++) {
				size_t k = i * N + j;

				if (t == PN_FLOAT) {
					((float *)x)[k] = fa[i];
					((float *)y)[k] = fa[j];
				} else if (t == PN_DOUBLE) {
					((double *)x)[k] = fa[i];
					((double *)y)[k] = fa[j];
				} else {
					((uint16_t *)x)[k] = round16(fa[i], t);
					((uint16_t *)y)[k] = round16(fa[j], t);
				}
			}
		}
		for (size_t k = 0; k < N; k++) {
			size_t last = (N - 1) * N + k, col = k * N + N - 1;

			switch (t) {
			case PN_FLOAT:
				((float *)x)[last] = ((float *)y)[col] = ffrom(0x7f800001);
				break;
			case PN_DOUBLE: {
				uint64_t snan = 0x7ff0000000000001ull;

				memcpy((double *)x + last, &snan, 8);
				memcpy((double *)y + col, &snan, 8);
				break;
			}
			default:
				((uint16_t *)x)[last] = ((uint16_t *)y)[col] = t == PN_HALF ? 0x7c01 : 0x7f81;
				break;
			}
		}
		pn_reduce2(lo, x, y, N * N, t, PN_MIN);
		pn_reduce2(hi, x, y, N * N, t, PN_MAX);
		pn_reduce2(lo2, y, x, N * N, t, PN_MIN);
		pn_reduce2(hi2, y, x, N * N, t, PN_MAX);
		CHECK(!memcmp(lo, lo2, N * N * es) && !memcmp(hi, hi2, N * N * es));
		for (size_t k = 0; k < N * N; k++) {
			double a = as_double_f(x, k, t), b = as_double_f(y, k, t);
			double l = as_double_f(lo, k, t), h = as_double_f(hi, k, t);

			if (isnan(a) || isnan(b)) {
				/* documented: the OR of both inputs' bits (16-bit types: quieted) */
				unsigned char want[8];

				or_bits(want, x, y, k, t);
				CHECK(isnan(l) && isnan(h));
				CHECK(!memcmp(lo + k * es, want, es) && !memcmp(hi + k * es, want, es));
			} else if (a == 0 && b == 0) {
				CHECK(!!signbit(l) == (signbit(a) || signbit(b)));
				CHECK(!!signbit(h) == (signbit(a) && signbit(b)));
			} else {
				CHECK(l == fmin(a, b) && h == fmax(a, b));
			}
		}
	}
}

TEST(reduce_n_matrix)
{
	for (int t = 0; t < PN_NDTYPES; t++) {
		for (int op = 0; op < PN_NREDOPS; op++) {
			for (int k = 1; k <= 8; k++) {
				size_t n = counts[(size_t)(t * 5 + op + k) % (sizeof(counts) / sizeof(counts[0]))];
				size_t es = pn_dtype_size((enum pn_dtype)t);
				const void *srcs[8];

				if (t == PN_FLOAT && op == PN_SUM && k == 3)
					n = MAXCOUNT; /* several blocks */
				for (int s = 0; s < k; s++) {
					random_fill(S[s], n, (enum pn_dtype)t, (enum pn_redop)op);
					srcs[s] = S[s];
				}
				ref_reduce(R, srcs, k, n, (enum pn_dtype)t, (enum pn_redop)op);
				memset(D, 0x5a, sizeof(D));
				pn_reduce_n(D, srcs, k, n, (enum pn_dtype)t, (enum pn_redop)op);
				CHECK_EQ_INT(mismatches(D, R, n, (enum pn_dtype)t), 0);
				CHECK(D[n * es] == 0x5a);
				/* dst may be any of the sources */
				for (int s = 0; s < k; s++) {
					unsigned char save[MAXCOUNT * 8];

					memcpy(save, S[s], n * es);
					pn_reduce_n(S[s], srcs, k, n, (enum pn_dtype)t, (enum pn_redop)op);
					CHECK_EQ_INT(mismatches(S[s], R, n, (enum pn_dtype)t), 0);
					memcpy(S[s], save, n * es);
				}
			}
		}
	}
}

/* Float results depend on the order; pn_reduce_n folds srcs[0], srcs[1], ... in order. */
TEST(reduce_n_order)
{
	float big[3] = { 1e8f, 1e8f, 1e8f }, one[3] = { 1.0f, 1.0f, 1.0f },
	      neg[3] = { -1e8f, -1e8f, -1e8f }, out[3];
	const void *o1[3] = { big, one, neg }, *o2[3] = { big, neg, one }, *o3[3] = { one, big, neg };

	pn_reduce_n(out, o1, 3, 3, PN_FLOAT, PN_SUM); /* (1e8 + 1) - 1e8: 1 is lost */
	CHECK(out[0] == 0.0f && out[2] == 0.0f);
	pn_reduce_n(out, o2, 3, 3, PN_FLOAT, PN_SUM); /* (1e8 - 1e8) + 1 */
	CHECK(out[0] == 1.0f && out[2] == 1.0f);
	pn_reduce_n(out, o3, 3, 3, PN_FLOAT, PN_SUM); /* (1 + 1e8) - 1e8 */
	CHECK(out[0] == 0.0f);

	/* half: the float accumulator rounds once; chained pn_reduce2 rounds every step */
	uint16_t h2048[1] = { pn_float_to_half(2048.0f) }, h1[1] = { pn_float_to_half(1.0f) }, hout[1];
	const void *hs[3] = { h2048, h1, h1 };

	pn_reduce_n(hout, hs, 3, 1, PN_HALF, PN_SUM);
	CHECK(pn_half_to_float(hout[0]) == 2050.0f);
	pn_reduce2(hout, h2048, h1, 1, PN_HALF, PN_SUM); /* 2049 ties to 2048 */
	CHECK(pn_half_to_float(hout[0]) == 2048.0f);
	pn_reduce2(hout, hout, h1, 1, PN_HALF, PN_SUM);
	CHECK(pn_half_to_float(hout[0]) == 2048.0f);
}

/*
 * pn_reduce_chain is chained pn_reduce2 (every step rounded as the ring
 * rounds it), in blocks: identical to the chain for every type, op and
 * length, with dst any of the sources; half differs from pn_reduce_n.
 */
TEST(reduce_chain)
{
	for (int t = 0; t < PN_NDTYPES; t++) {
		for (int op = 0; op < PN_NREDOPS; op++) {
			for (int k = 1; k <= 8; k++) {
				size_t n = k == 5 ? MAXCOUNT
					   : counts[(size_t)(t * 3 + op + k) % (sizeof(counts) / sizeof(counts[0]))];
				size_t es = pn_dtype_size((enum pn_dtype)t);
				const void *srcs[8];

				for (int s = 0; s < k; s++) {
					random_fill(S[s], n, (enum pn_dtype)t, (enum pn_redop)op);
					srcs[s] = S[s];
				}
				memcpy(R, S[0], n * es);
				for (int s = 1; s < k; s++)
					pn_reduce2(R, R, S[s], n, (enum pn_dtype)t, (enum pn_redop)op);
				memset(D, 0x5a, sizeof(D));
				pn_reduce_chain(D, srcs, k, n, (enum pn_dtype)t, (enum pn_redop)op);
				/* bit for bit but NaN payloads (unspecified for sum and prod) */
				CHECK_EQ_INT(mismatches(D, R, n, (enum pn_dtype)t), 0);
				CHECK(D[n * es] == 0x5a);
				for (int s = 0; s < k; s++) {
					unsigned char save[MAXCOUNT * 8];

					memcpy(save, S[s], n * es);
					pn_reduce_chain(S[s], srcs, k, n, (enum pn_dtype)t, (enum pn_redop)op);
					CHECK_EQ_INT(mismatches(S[s], R, n, (enum pn_dtype)t), 0);
					memcpy(S[s], save, n * es);
				}
			}
		}
	}
	/* 2048 + 1 + 1 in half: the chain rounds 2049 to 2048 twice, reduce_n sums in float */
	uint16_t h2048[1] = { pn_float_to_half(2048.0f) }, h1[1] = { pn_float_to_half(1.0f) }, hout[1];
	const void *hs[3] = { h2048, h1, h1 };

	pn_reduce_chain(hout, hs, 3, 1, PN_HALF, PN_SUM);
	CHECK(pn_half_to_float(hout[0]) == 2048.0f);
	pn_reduce_n(hout, hs, 3, 1, PN_HALF, PN_SUM);
	CHECK(pn_half_to_float(hout[0]) == 2050.0f);
}

/* C division of the summed value, nranks 2..300 and the large-nranks paths. */
TEST(finish_avg)
{
	static const int nrs[] = { 1, 2, 3, 4, 5, 7, 8, 13, 16, 17, 100, 255, 256, 300, 65535,
				   65536, 70001, (1 << 20) - 1, 1 << 20, 3000017, (1 << 24) + 1,
				   2147483647 };

	for (size_t ni = 0; ni < sizeof(nrs) / sizeof(nrs[0]); ni++) {
		int nr = nrs[ni];
		int8_t i8[256], i8w[256];
		uint8_t u8[256], u8w[256];

		for (int v = 0; v < 256; v++) {
			i8[v] = (int8_t)(v - 128);
			u8[v] = (uint8_t)v;
			i8w[v] = (int8_t)(i8[v] / nr);
			u8w[v] = (uint8_t)(u8[v] / nr);
		}
		pn_reduce_finish(i8, 256, PN_INT8, PN_AVG, nr);
		pn_reduce_finish(u8, 256, PN_UINT8, PN_AVG, nr);
		CHECK(!memcmp(i8, i8w, 256));
		CHECK(!memcmp(u8, u8w, 256));

		int32_t i32[512], i32w[512];
		uint32_t u32[512], u32w[512];
		int64_t i64[512], i64w[512];
		uint64_t u64[512], u64w[512];
		float f[512], fw[512];
		double d[512], dw[512];
		uint16_t h[512], hw[512], bf[512], bfw[512];

		for (int i = 0; i < 512; i++) {
			uint64_t r = rnd();
			/* near multiples of nr, the extremes, and random values */
			int64_t near = (int64_t)(r % 1000) * nr + (int64_t)(r >> 60) - 8;

			i32[i] = i < 4 ? (int32_t[]){ INT32_MIN, INT32_MAX, -1, 0 }[i]
				       : (r & 1) ? (int32_t)near : (int32_t)(r >> 32);
			u32[i] = i < 2 ? (uint32_t[]){ UINT32_MAX, 0 }[i]
				       : (r & 1) ? (uint32_t)near : (uint32_t)(r >> 32);
			i64[i] = (int64_t)r;
			u64[i] = r;
			f[i] = (float)((int64_t)r >> 40) / 7.0f;
			d[i] = (double)(int64_t)r / 3.0;
			h[i] = (uint16_t)(r >> 7);
			bf[i] = (uint16_t)(r >> 9);
			i32w[i] = i32[i] / nr;
			u32w[i] = u32[i] / (uint32_t)nr;
			i64w[i] = i64[i] / nr;
			u64w[i] = u64[i] / (uint64_t)nr;
			fw[i] = f[i] / (float)nr;
			dw[i] = d[i] / nr;
			hw[i] = pn_float_to_half(pn_half_to_float(h[i]) / (float)nr);
			bfw[i] = pn_float_to_bf16(pn_bf16_to_float(bf[i]) / (float)nr);
		}
		pn_reduce_finish(i32, 512, PN_INT32, PN_AVG, nr);
		pn_reduce_finish(u32, 512, PN_UINT32, PN_AVG, nr);
		pn_reduce_finish(i64, 512, PN_INT64, PN_AVG, nr);
		pn_reduce_finish(u64, 512, PN_UINT64, PN_AVG, nr);
		pn_reduce_finish(f, 512, PN_FLOAT, PN_AVG, nr);
		pn_reduce_finish(d, 512, PN_DOUBLE, PN_AVG, nr);
		pn_reduce_finish(h, 512, PN_HALF, PN_AVG, nr);
		pn_reduce_finish(bf, 512, PN_BFLOAT16, PN_AVG, nr);
		CHECK(!memcmp(i32, i32w, sizeof(i32)));
		CHECK(!memcmp(u32, u32w, sizeof(u32)));
		CHECK(!memcmp(i64, i64w, sizeof(i64)));
		CHECK(!memcmp(u64, u64w, sizeof(u64)));
		CHECK_EQ_INT(mismatches(f, fw, 512, PN_FLOAT), 0);
		CHECK_EQ_INT(mismatches(d, dw, 512, PN_DOUBLE), 0);
		CHECK_EQ_INT(mismatches(h, hw, 512, PN_HALF), 0);
		CHECK_EQ_INT(mismatches(bf, bfw, 512, PN_BFLOAT16), 0);
	}
	/* other operations: untouched */
	float keep[3] = { 1, 2, 3 };
	pn_reduce_finish(keep, 3, PN_FLOAT, PN_SUM, 4);
	CHECK(keep[0] == 1 && keep[1] == 2 && keep[2] == 3);
}

TEST(copy)
{
	for (size_t n = 0; n < 300; n += 7) {
		random_fill(A, n, PN_UINT8, PN_SUM);
		memset(D, 0, n + 1);
		pn_copy(D, A + 1, n);
		CHECK(!memcmp(D, A + 1, n) && D[n] == 0);
	}
}

/* ---- test data -------------------------------------------------------------- */

/* The spec's formula, written out independently. */
static uint32_t spec_hash(uint64_t seed, int rank, size_t i)
{
	uint32_t h = (uint32_t)(seed * 0x9E3779B1u + (uint32_t)rank * 0x85EBCA77u +
				(uint32_t)i * 0xC2B2AE3Du);

	h ^= h >> 16;
	h *= 0x85ebca6b;
	h ^= h >> 13;
	h *= 0xc2b2ae35;
	h ^= h >> 16;
	return h;
}

static int64_t spec_value(uint32_t h, enum pn_dtype t, enum pn_redop op)
{
	int sgn = t != PN_UINT8 && t != PN_UINT32 && t != PN_UINT64;

	if (op == PN_PROD)
		return h % 8 == 0 ? 2 : (sgn && (h & 16)) ? -1 : 1;
	return sgn ? (int64_t)(h % 17) - 8 : (int64_t)(h % 9);
}

/* Element i of a buffer of type t as a double (integers exactly). */
static double as_double(const void *p, size_t i, enum pn_dtype t)
{
	switch (t) {
	case PN_INT8: return ((const int8_t *)p)[i];
	case PN_UINT8: return ((const uint8_t *)p)[i];
	case PN_INT32: return ((const int32_t *)p)[i];
	case PN_UINT32: return ((const uint32_t *)p)[i];
	case PN_INT64: return (double)((const int64_t *)p)[i];
	case PN_UINT64: return (double)((const uint64_t *)p)[i];
	case PN_HALF:
	case PN_BFLOAT16: return load16(p, i, t);
	case PN_FLOAT: return ((const float *)p)[i];
	default: return ((const double *)p)[i];
	}
}

TEST(data_hash_and_fill)
{
	CHECK_EQ_INT(pn_testdata_hash(0, 0, 0), 0);
	for (int i = 0; i < 10000; i++) {
		uint64_t seed = rnd();
		int rank = (int)(rnd() % 64);
		size_t idx = (size_t)rnd();

		CHECK_EQ_INT(pn_testdata_hash(seed, rank, idx), spec_hash(seed, rank, idx));
	}
	for (int t = 0; t < PN_NDTYPES; t++)
		for (int op = 0; op < PN_NREDOPS; op++) {
			size_t n = 1000 + (size_t)t;

			pn_testdata_fill(D, n, (enum pn_dtype)t, (enum pn_redop)op, 5, 42);
			for (size_t i = 0; i < n; i++)
				CHECK(as_double(D, i, (enum pn_dtype)t) ==
				      (double)spec_value(spec_hash(42, 5, i), (enum pn_dtype)t, (enum pn_redop)op));
		}
}

/* The reference, computed here from the spec: fold over ranks in the type, then avg. */
static void spec_expected(void *out, size_t n, enum pn_dtype t, enum pn_redop op, int nranks,
			  uint64_t seed)
{
	size_t es = pn_dtype_size(t);
	unsigned char one[8];

	for (size_t i = 0; i < n; i++) {
		const void *srcs[64];
		unsigned char vals[64][8];

		for (int r = 0; r < nranks; r++) {
			int64_t v = spec_value(spec_hash(seed, r, i), t, op);

			switch (t) {
			case PN_HALF:
			case PN_BFLOAT16: *(uint16_t *)vals[r] = round16((float)v, t); break;
			case PN_FLOAT: *(float *)vals[r] = (float)v; break;
			case PN_DOUBLE: *(double *)vals[r] = (double)v; break;
			default: store_int(vals[r], 0, t, (uint64_t)v); break;
			}
			srcs[r] = vals[r];
		}
		ref_reduce(one, srcs, nranks, 1, t, op);
		if (op == PN_AVG) {
			if (pn_dtype_is_float(t)) {
				if (t == PN_FLOAT)
					*(float *)one /= (float)nranks;
				else if (t == PN_DOUBLE)
					*(double *)one /= nranks;
				else
					*(uint16_t *)one = round16(load16(one, 0, t) / (float)nranks, t);
			} else if (is_signed_int(t)) {
				store_int(one, 0, t, (uint64_t)((int64_t)load_int(one, 0, t) / nranks));
			} else {
				store_int(one, 0, t, load_int(one, 0, t) / (uint64_t)nranks);
			}
		}
		memcpy((char *)out + i * es, one, es);
	}
}

TEST(data_expected_and_check)
{
	static const size_t ns[] = { 0, 1, 5, 1023, 1024, 1025, 3001 };

	for (int nr = 1; nr <= 16; nr++) {
		for (int t = 0; t < PN_NDTYPES; t++) {
			for (int op = 0; op < PN_NREDOPS; op++) {
				size_t n = ns[(size_t)(nr + t + op) % (sizeof(ns) / sizeof(ns[0]))];
				size_t es = pn_dtype_size((enum pn_dtype)t);
				uint64_t seed = 1000 + (uint64_t)nr;
				const void *srcs[16];

				spec_expected(R, n, (enum pn_dtype)t, (enum pn_redop)op, nr, seed);
				pn_testdata_expected(D, n, (enum pn_dtype)t, (enum pn_redop)op, nr, seed);
				CHECK(!memcmp(D, R, n * es));
				CHECK_EQ_INT(pn_testdata_check(R, n, (enum pn_dtype)t, (enum pn_redop)op, nr, seed), 0);

				/* the kernels, in the fixed order and pairwise in reverse, match exactly */
				{
					for (int r = 0; r < nr; r++) {
						pn_testdata_fill(S[r], n, (enum pn_dtype)t, (enum pn_redop)op, r, seed);
						srcs[r] = S[r];
					}
					pn_reduce_n(D, srcs, nr, n, (enum pn_dtype)t, (enum pn_redop)op);
					pn_reduce_finish(D, n, (enum pn_dtype)t, (enum pn_redop)op, nr);
					CHECK_EQ_INT(pn_testdata_check(D, n, (enum pn_dtype)t, (enum pn_redop)op, nr, seed), 0);
					memcpy(D, S[nr - 1], n * es);
					for (int r = nr - 2; r >= 0; r--)
						pn_reduce2(D, D, S[r], n, (enum pn_dtype)t, (enum pn_redop)op);
					pn_reduce_finish(D, n, (enum pn_dtype)t, (enum pn_redop)op, nr);
					CHECK_EQ_INT(pn_testdata_check(D, n, (enum pn_dtype)t, (enum pn_redop)op, nr, seed), 0);
				}

				if (!n)
					continue;
				/* one changed element counts 1: lowest bit, then a NaN for floats */
				memcpy(D, R, n * es);
				D[(n / 2) * es] ^= 1;
				CHECK_EQ_INT(pn_testdata_check(D, n, (enum pn_dtype)t, (enum pn_redop)op, nr, seed), 1);
				if (t == PN_FLOAT) {
					memcpy(D, R, n * es);
					((float *)D)[n - 1] = NAN;
					CHECK_EQ_INT(pn_testdata_check(D, n, (enum pn_dtype)t, (enum pn_redop)op, nr, seed), 1);
				}
				/* the wrong seed or rank count is noticed */
				if (n > 100)
					CHECK(pn_testdata_check(R, n, (enum pn_dtype)t, (enum pn_redop)op, nr, seed + 1) > n / 20);

				/* poison: every element wrong, except an 8-bit sum that happens to equal 0xA5 */
				size_t coincide = 0;

				for (size_t i = 0; i < n * es; i += es)
					coincide += es == 1 && R[i] == 0xA5;
				CHECK(!coincide || ((t == PN_INT8 || t == PN_UINT8) && op == PN_SUM && nr >= 12));
				pn_testdata_poison(D, n * es);
				CHECK_EQ_INT(pn_testdata_check(D, n, (enum pn_dtype)t, (enum pn_redop)op, nr, seed), n - coincide);
			}
		}
	}
}

/* Many ranks: products overflow half (Inf) and the 8-bit types wrap, consistently. */
TEST(data_many_ranks)
{
	enum { NR = 40, N = 2000 };
	static unsigned char bufs[NR][N * 8];
	const void *srcs[NR];

	for (int t = 0; t < PN_NDTYPES; t++) {
		for (int op = 0; op < PN_NREDOPS; op++) {
			size_t es = pn_dtype_size((enum pn_dtype)t);

			if (t == PN_BFLOAT16 && (op == PN_SUM || op == PN_AVG))
				continue; /* sums exact in bfloat16 up to 32 ranks only */
			for (int r = 0; r < NR; r++) {
				pn_testdata_fill(bufs[r], N, (enum pn_dtype)t, (enum pn_redop)op, r, 7);
				srcs[r] = bufs[r];
			}
			pn_reduce_n(D, srcs, NR, N, (enum pn_dtype)t, (enum pn_redop)op);
			pn_reduce_finish(D, N, (enum pn_dtype)t, (enum pn_redop)op, NR);
			CHECK_EQ_INT(pn_testdata_check(D, N, (enum pn_dtype)t, (enum pn_redop)op, NR, 7), 0);
			pn_testdata_expected(R, N, (enum pn_dtype)t, (enum pn_redop)op, NR, 7);
			CHECK(!memcmp(D, R, N * es));
		}
	}
}

static void run_kernel_tests(const char *set)
{
	char name[64];

#define RUN_SET(fn)                                                            \
	do {                                                                   \
		snprintf(name, sizeof(name), "%s (%s)", #fn, set);              \
		unit_run(name, fn);                                            \
	} while (0)
	RUN_SET(reduce2_matrix);
	RUN_SET(minmax_nan_and_zero);
	RUN_SET(reduce_n_matrix);
	RUN_SET(reduce_n_order);
	RUN_SET(reduce_chain);
	RUN_SET(finish_avg);
	RUN_SET(data_hash_and_fill);
	RUN_SET(data_expected_and_check);
	RUN_SET(data_many_ranks);
#undef RUN_SET
}

int main(void)
{
	RUN(dtype_names);
	RUN(half_to_float_exhaustive);
	RUN(half_round_trip_exhaustive);
	RUN(float_to_half_rounding);
	RUN(bfloat16_exhaustive);
	RUN(half_matches_f16c);
	RUN(copy);

	CHECK(pn_reduce_simd(PN_SIMD_GENERIC) == PN_SIMD_GENERIC);
	run_kernel_tests("generic");
	if (pn_reduce_simd(PN_SIMD_AVX2) == PN_SIMD_AVX2)
		run_kernel_tests("avx2");
	else
		printf("ok %d # skip avx2 kernels: this CPU has no AVX2/F16C\n", ++unit_n);
	return unit_done();
}
