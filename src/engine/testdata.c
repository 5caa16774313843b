/* SPDX-License-Identifier: MIT */
/*
 * The allreduce test data on the host: fill a rank's input, compute the
 * exact reference, count the elements that differ from it, poison.  The
 * formula is plugins/include/penny_data.h (shared with the GPU plugins);
 * here its hash runs in fixed-length blocks that gcc vectorizes, compiled
 * for the baseline ISA and for AVX2 like the kernels of reduce.c.
 */
#include "engine/testdata.h"
#include "engine/reduce.h"
#include "engine/simd.h"
#include "penny_data.h"

#include <math.h>
#include <string.h>

/* Elements per block of the data functions. */
#define PN_DATA_BLK 1024
/* Elements per fixed-length inner loop of the hash loops. */
#define PN_HASH_VEC 32

/* The hash input of element 0 of rank r (penny_data.h). */
PN_INLINE uint32_t hash_base(uint64_t seed, int rank)
{
	return penny_data_hash_base((uint32_t)seed, (uint32_t)rank);
}

uint32_t pn_testdata_hash(uint64_t seed, int rank, size_t i)
{
	return penny_data_hash((uint32_t)seed, (uint32_t)rank, i);
}

/* Element values (pn_testdata_fill). */
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
PN_INLINE int32_t comb_min(int32_t x, int32_t y) { return x < y ? x : y; }
PN_INLINE int32_t comb_max(int32_t x, int32_t y) { return x > y ? x : y; }

/* v[j] = val(hash of element i0 + j), j < m. */
PN_INLINE void hash_values(int32_t *restrict v, uint32_t x0, size_t m, int32_t (*val)(uint32_t))
{
	size_t j = 0;

	for (; j + PN_HASH_VEC <= m; j += PN_HASH_VEC)
		PN_UNROLL
		for (uint32_t l = 0; l < PN_HASH_VEC; l++)
			v[j + l] = val(penny_fmix32(x0 + ((uint32_t)j + l) * PENNY_DATA_HASH_STEP));
	for (; j < m; j++)
		v[j] = val(penny_fmix32(x0 + (uint32_t)j * PENNY_DATA_HASH_STEP));
}

/* acc[j] = comb(acc[j], val(hash of element i0 + j)), j < m. */
PN_INLINE void hash_combine(int32_t *restrict acc, uint32_t x0, size_t m,
			    int32_t (*val)(uint32_t), int32_t (*comb)(int32_t, int32_t))
{
	size_t j = 0;

	for (; j + PN_HASH_VEC <= m; j += PN_HASH_VEC)
		PN_UNROLL
		for (uint32_t l = 0; l < PN_HASH_VEC; l++)
			acc[j + l] = comb(acc[j + l],
					  val(penny_fmix32(x0 + ((uint32_t)j + l) * PENNY_DATA_HASH_STEP)));
	for (; j < m; j++)
		acc[j] = comb(acc[j], val(penny_fmix32(x0 + (uint32_t)j * PENNY_DATA_HASH_STEP)));
}

static int dtype_signed(enum pn_dtype t)
{
	return t != PN_UINT8 && t != PN_UINT32 && t != PN_UINT64;
}

/* Element j of a buffer of some type from a small integer (put_loop inlines them). */
PN_INLINE void put_8(void *o, size_t j, int32_t v) { ((uint8_t *)o)[j] = (uint8_t)v; }
PN_INLINE void put_32(void *o, size_t j, int32_t v) { ((uint32_t *)o)[j] = (uint32_t)v; }
PN_INLINE void put_64(void *o, size_t j, int32_t v) { ((uint64_t *)o)[j] = (uint64_t)(int64_t)v; }
PN_INLINE void put_half(void *o, size_t j, int32_t v) { ((uint16_t *)o)[j] = pn_float_to_half((float)v); }
PN_INLINE void put_bf16(void *o, size_t j, int32_t v) { ((uint16_t *)o)[j] = pn_float_to_bf16((float)v); }
PN_INLINE void put_float(void *o, size_t j, int32_t v) { ((float *)o)[j] = (float)v; }
PN_INLINE void put_double(void *o, size_t j, int32_t v) { ((double *)o)[j] = (double)v; }

PN_INLINE void put_loop(void *restrict out, const int32_t *restrict v, size_t m,
			void (*put)(void *, size_t, int32_t))
{
	size_t j = 0;

	for (; j + PN_HASH_VEC <= m; j += PN_HASH_VEC)
		PN_UNROLL
		for (size_t l = 0; l < PN_HASH_VEC; l++)
			put(out, j + l, v[j + l]);
	for (; j < m; j++)
		put(out, j, v[j]);
}

/* Store small integers v[0..m) as type t; 8-bit values wrap like a sum in the type. */
PN_INLINE void store_ints(void *out, const int32_t *restrict v, size_t m, enum pn_dtype t)
{
	switch (t) {
	case PN_INT8:
	case PN_UINT8: put_loop(out, v, m, put_8); break;
	case PN_INT32:
	case PN_UINT32: put_loop(out, v, m, put_32); break;
	case PN_INT64:
	case PN_UINT64: put_loop(out, v, m, put_64); break;
	case PN_HALF: put_loop(out, v, m, put_half); break;
	case PN_BFLOAT16: put_loop(out, v, m, put_bf16); break;
	case PN_FLOAT: put_loop(out, v, m, put_float); break;
	case PN_DOUBLE: put_loop(out, v, m, put_double); break;
	default: break;
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

PN_INLINE void fill_body(void *buf, size_t first, size_t count, enum pn_dtype t,
			 enum pn_redop op, int rank, uint64_t seed)
{
	int32_t v[PN_DATA_BLK];
	size_t es = pn_dtype_size(t);
	uint32_t base = hash_base(seed, rank);
	int sgn = dtype_signed(t);

	for (size_t i = 0; i < count; i += PN_DATA_BLK) {
		size_t m = count - i < PN_DATA_BLK ? count - i : PN_DATA_BLK;
		uint32_t x0 = base + (uint32_t)(first + i) * PENNY_DATA_HASH_STEP;

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
		uint32_t x0 = hash_base(seed, r) + (uint32_t)i0 * PENNY_DATA_HASH_STEP;

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
				hash_combine(acc, x0, m, val_signed, comb_min);
			else
				hash_combine(acc, x0, m, val_unsigned, comb_min);
			break;
		case PN_MAX:
			if (sgn)
				hash_combine(acc, x0, m, val_signed, comb_max);
			else
				hash_combine(acc, x0, m, val_unsigned, comb_max);
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

PN_INLINE void expected_body(void *buf, size_t first, size_t count, enum pn_dtype t,
			     enum pn_redop op, int nranks, uint64_t seed)
{
	size_t es = pn_dtype_size(t);

	for (size_t i = 0; i < count; i += PN_DATA_BLK) {
		size_t m = count - i < PN_DATA_BLK ? count - i : PN_DATA_BLK;

		expected_block((char *)buf + i * es, first + i, m, t, op, nranks, seed);
	}
}

/* Does element j differ between a and b (diff_loop inlines them)? */
PN_INLINE size_t ne_8(const void *a, const void *b, size_t j)
{
	return ((const uint8_t *)a)[j] != ((const uint8_t *)b)[j];
}

PN_INLINE size_t ne_16(const void *a, const void *b, size_t j)
{
	return ((const uint16_t *)a)[j] != ((const uint16_t *)b)[j];
}

PN_INLINE size_t ne_32(const void *a, const void *b, size_t j)
{
	return ((const uint32_t *)a)[j] != ((const uint32_t *)b)[j];
}

PN_INLINE size_t ne_64(const void *a, const void *b, size_t j)
{
	return ((const uint64_t *)a)[j] != ((const uint64_t *)b)[j];
}

PN_INLINE size_t diff_loop(const void *a, const void *b, size_t n,
			   size_t (*ne)(const void *, const void *, size_t))
{
	size_t bad = 0, j = 0;

	for (; j + PN_HASH_VEC <= n; j += PN_HASH_VEC)
		PN_UNROLL
		for (size_t l = 0; l < PN_HASH_VEC; l++)
			bad += ne(a, b, j + l);
	for (; j < n; j++)
		bad += ne(a, b, j);
	return bad;
}

/* Elements of a and b (n elements of es bytes) whose bits differ. */
PN_INLINE size_t count_diff(const void *a, const void *b, size_t n, size_t es)
{
	switch (es) {
	case 1: return diff_loop(a, b, n, ne_8);
	case 2: return diff_loop(a, b, n, ne_16);
	case 4: return diff_loop(a, b, n, ne_32);
	default: return diff_loop(a, b, n, ne_64);
	}
}

/*
 * The reference is never NaN (finite integers, or +-Inf for half/float
 * products of more than 15/127 twos), so comparing bits also counts every
 * NaN in buf as wrong.
 */
/*
 * nranks > 0: the reduction's reference; nranks < 0: rank -nranks - 1's
 * input (what a collective that moves data delivers).
 */
PN_INLINE size_t check_body(const void *buf, size_t first, size_t count, enum pn_dtype t,
			    enum pn_redop op, int nranks, uint64_t seed)
{
	uint64_t ref[PN_DATA_BLK];
	size_t es = pn_dtype_size(t), bad = 0;

	for (size_t i = 0; i < count; i += PN_DATA_BLK) {
		size_t m = count - i < PN_DATA_BLK ? count - i : PN_DATA_BLK;

		if (nranks > 0)
			expected_block(ref, first + i, m, t, op, nranks, seed);
		else
			fill_body(ref, first + i, m, t, op, -nranks - 1, seed);
		bad += count_diff((const char *)buf + i * es, ref, m, es);
	}
	return bad;
}

static void fill_generic(void *buf, size_t first, size_t count, enum pn_dtype t,
			 enum pn_redop op, int rank, uint64_t seed)
{
	fill_body(buf, first, count, t, op, rank, seed);
}

static void expected_generic(void *buf, size_t first, size_t count, enum pn_dtype t,
			     enum pn_redop op, int nranks, uint64_t seed)
{
	expected_body(buf, first, count, t, op, nranks, seed);
}

static size_t check_generic(const void *buf, size_t first, size_t count, enum pn_dtype t,
			    enum pn_redop op, int nranks, uint64_t seed)
{
	return check_body(buf, first, count, t, op, nranks, seed);
}

#if PN_HAVE_X86
PN_TARGET_AVX2 static void fill_avx2(void *buf, size_t first, size_t count, enum pn_dtype t,
				     enum pn_redop op, int rank, uint64_t seed)
{
	fill_body(buf, first, count, t, op, rank, seed);
}

PN_TARGET_AVX2 static void expected_avx2(void *buf, size_t first, size_t count,
					 enum pn_dtype t, enum pn_redop op, int nranks,
					 uint64_t seed)
{
	expected_body(buf, first, count, t, op, nranks, seed);
}

PN_TARGET_AVX2 static size_t check_avx2(const void *buf, size_t first, size_t count,
					enum pn_dtype t, enum pn_redop op, int nranks,
					uint64_t seed)
{
	return check_body(buf, first, count, t, op, nranks, seed);
}
#endif

void pn_testdata_fill_at(void *buf, size_t first, size_t count, enum pn_dtype t,
			 enum pn_redop op, int rank, uint64_t seed)
{
#if PN_HAVE_X86
	if (pn_reduce_simd_now() == PN_SIMD_AVX2) {
		fill_avx2(buf, first, count, t, op, rank, seed);
		return;
	}
#endif
	fill_generic(buf, first, count, t, op, rank, seed);
}

void pn_testdata_fill(void *buf, size_t count, enum pn_dtype t, enum pn_redop op, int rank,
		  uint64_t seed)
{
	pn_testdata_fill_at(buf, 0, count, t, op, rank, seed);
}

void pn_testdata_expected_at(void *buf, size_t first, size_t count, enum pn_dtype t,
			     enum pn_redop op, int nranks, uint64_t seed)
{
	if (nranks < 1)
		nranks = 1;
#if PN_HAVE_X86
	if (pn_reduce_simd_now() == PN_SIMD_AVX2) {
		expected_avx2(buf, first, count, t, op, nranks, seed);
		return;
	}
#endif
	expected_generic(buf, first, count, t, op, nranks, seed);
}

void pn_testdata_expected(void *buf, size_t count, enum pn_dtype t, enum pn_redop op, int nranks,
		      uint64_t seed)
{
	pn_testdata_expected_at(buf, 0, count, t, op, nranks, seed);
}

/* check_body's dispatch (nranks < 0: against rank -nranks - 1's input). */
static size_t check_any(const void *buf, size_t first, size_t count, enum pn_dtype t,
			enum pn_redop op, int nranks, uint64_t seed)
{
#if PN_HAVE_X86
	if (pn_reduce_simd_now() == PN_SIMD_AVX2)
		return check_avx2(buf, first, count, t, op, nranks, seed);
#endif
	return check_generic(buf, first, count, t, op, nranks, seed);
}

size_t pn_testdata_check_at(const void *buf, size_t first, size_t count, enum pn_dtype t,
			    enum pn_redop op, int nranks, uint64_t seed)
{
	return check_any(buf, first, count, t, op, nranks < 1 ? 1 : nranks, seed);
}

size_t pn_testdata_check(const void *buf, size_t count, enum pn_dtype t, enum pn_redop op,
		     int nranks, uint64_t seed)
{
	return pn_testdata_check_at(buf, 0, count, t, op, nranks, seed);
}

size_t pn_testdata_check_fill_at(const void *buf, size_t first, size_t count, enum pn_dtype t,
				 enum pn_redop op, int rank, uint64_t seed)
{
	return check_any(buf, first, count, t, op, -rank - 1, seed);
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
void pn_testdata_poison(void *buf, size_t bytes)
{
	memset(buf, 0xA5, bytes);
}

/* ---- the collectives (testdata.h) ---- */

/* The op the data is made for: a reduction's, else sum's values. */
static enum pn_redop data_op(const struct pn_testdata_coll *d)
{
	return pn_coll_reduces(d->kind) ? d->op : PN_SUM;
}

void pn_testdata_coll_fill(const struct pn_testdata_coll *d, void *sendbuf)
{
	pn_testdata_fill(sendbuf, pn_coll_send_count(d->kind, d->count, d->nranks), d->dtype,
			 data_op(d), d->rank, d->seed);
}

/*
 * Where this rank's receive buffer comes from, one part at a time: part i
 * (of *nparts) is count elements at dst element *at; they are rank *src's
 * input from element *first (*src >= 0), the reduction's reference from
 * element *first (*src == -1), or untouched poison (*src == -2).
 */
static void coll_part(const struct pn_testdata_coll *d, size_t i, int *nparts, int *src,
		      size_t *at, size_t *first, size_t *count)
{
	int n = d->nranks, r = d->rank;

	*nparts = 1;
	*at = 0;
	*first = 0;
	*count = d->count;
	*src = -1;
	switch (d->kind) {
	case PN_COLL_ALLGATHER: /* block i is rank i's input */
	case PN_COLL_ALLTOALL: /* block i is rank i's block r */
		*nparts = n;
		*src = (int)i;
		*at = i * d->count;
		*first = d->kind == PN_COLL_ALLTOALL ? (size_t)r * d->count : 0;
		break;
	case PN_COLL_REDUCE_SCATTER:
		*first = (size_t)r * d->count;
		break;
	case PN_COLL_BROADCAST:
		*src = d->root;
		break;
	case PN_COLL_REDUCE:
		if (r != d->root)
			*src = d->inplace ? r : -2;
		break;
	case PN_COLL_SENDRECV:
		*src = (r + n - 1) % n;
		break;
	default:
		break;
	}
}

void pn_testdata_coll_expected(const struct pn_testdata_coll *d, void *recvbuf)
{
	size_t es = pn_dtype_size(d->dtype), at, first, count, i;
	int nparts, src;

	for (i = 0, nparts = 1; i < (size_t)nparts; i++) {
		coll_part(d, i, &nparts, &src, &at, &first, &count);
		if (src >= 0)
			pn_testdata_fill_at((char *)recvbuf + at * es, first, count, d->dtype,
					    data_op(d), src, d->seed);
		else if (src == -1)
			pn_testdata_expected_at((char *)recvbuf + at * es, first, count, d->dtype,
						d->op, d->nranks, d->seed);
		else
			pn_testdata_poison((char *)recvbuf + at * es, count * es);
	}
}

size_t pn_testdata_coll_check(const struct pn_testdata_coll *d, const void *recvbuf)
{
	size_t es = pn_dtype_size(d->dtype), at, first, count, i, j, bad = 0;
	int nparts, src;

	for (i = 0, nparts = 1; i < (size_t)nparts; i++) {
		const char *p;

		coll_part(d, i, &nparts, &src, &at, &first, &count);
		p = (const char *)recvbuf + at * es;
		if (src >= 0) {
			bad += pn_testdata_check_fill_at(p, first, count, d->dtype, data_op(d), src,
							 d->seed);
		} else if (src == -1) {
			bad += pn_testdata_check_at(p, first, count, d->dtype, d->op, d->nranks,
						    d->seed);
		} else {
			/* an element is wrong when any of its bytes is not the poison */
			for (j = 0; j < count * es; j += es) {
				size_t k;

				for (k = 0; k < es && (unsigned char)p[j + k] == 0xA5; k++)
					;
				bad += k < es;
			}
		}
	}
	return bad;
}
