/* SPDX-License-Identifier: MIT */
/*
 * penny's test data formula, the one definition used by the host
 * (src/engine/testdata.c, whose fill/check loops vectorize the hash), the
 * plugins' host fallbacks and their fill/check kernels, so that every
 * backend checks the same bits.  Plain C99, also compiled as CUDA/C++.
 *
 * Element i of rank r with seed s:
 *	h = fmix32(s * 0x9E3779B1 + r * 0x85EBCA77 + (uint32_t)i * 0xC2B2AE3D)
 * (fmix32: MurmurHash3's finalizer), and the value is
 *	PROD:        h % 8 == 0 ? 2 : (signed type && (h & 16) ? -1 : 1)
 *	other ops:   signed types (int)(h % 17) - 8, unsigned types h % 9
 * Floating types count as signed.  The expected result is the exact
 * sum/prod/min/max over ranks 0..nranks-1 in the type's arithmetic (integers
 * wrap); avg is the sum divided by nranks once (integers truncate; half,
 * bfloat16 and float divide in float, double in double), rounded to the type
 * to nearest even.
 */
#ifndef PENNY_DATA_H
#define PENNY_DATA_H

#include <stdint.h>
#include <string.h>

#include "penny_plugin.h"

#if defined(__CUDACC__)
#define PENNY_DATA_FN static __host__ __device__ __forceinline__
#else
#define PENNY_DATA_FN static inline
#endif

PENNY_DATA_FN uint32_t penny_fmix32(uint32_t h)
{
	h ^= h >> 16;
	h *= 0x85ebca6bu;
	h ^= h >> 13;
	h *= 0xc2b2ae35u;
	h ^= h >> 16;
	return h;
}

/* The hash input of element 0 of rank; element i adds i * PENNY_DATA_HASH_STEP
 * (mod 2^32), so loops over i can step it. */
#define PENNY_DATA_HASH_STEP 0xC2B2AE3Du

PENNY_DATA_FN uint32_t penny_data_hash_base(uint32_t seed, uint32_t rank)
{
	return seed * 0x9E3779B1u + rank * 0x85EBCA77u;
}

PENNY_DATA_FN uint32_t penny_data_hash(uint32_t seed, uint32_t rank, uint64_t i)
{
	return penny_fmix32(penny_data_hash_base(seed, rank) + (uint32_t)i * PENNY_DATA_HASH_STEP);
}

PENNY_DATA_FN int penny_data_signed(int dtype)
{
	return !(dtype == PENNY_UINT8 || dtype == PENNY_UINT32 || dtype == PENNY_UINT64);
}

PENNY_DATA_FN int penny_data_value(uint32_t h, int is_signed, int op)
{
	if (op == PENNY_PROD)
		return (h % 8 == 0) ? 2 : ((is_signed && (h & 16)) ? -1 : 1);
	return is_signed ? (int)(h % 17) - 8 : (int)(h % 9);
}

PENNY_DATA_FN int penny_data_size(int dtype)
{
	switch (dtype) {
	case PENNY_INT8:
	case PENNY_UINT8:
		return 1;
	case PENNY_HALF:
	case PENNY_BFLOAT16:
		return 2;
	case PENNY_INT32:
	case PENNY_UINT32:
	case PENNY_FLOAT:
		return 4;
	case PENNY_INT64:
	case PENNY_UINT64:
	case PENNY_DOUBLE:
		return 8;
	}
	return 0;
}

PENNY_DATA_FN uint32_t penny_f32_bits(float f)
{
	uint32_t u;

	memcpy(&u, &f, 4);
	return u;
}

PENNY_DATA_FN float penny_bits_f32(uint32_t u)
{
	float f;

	memcpy(&f, &u, 4);
	return f;
}

/* float -> bfloat16, round to nearest even (NaN stays NaN). */
PENNY_DATA_FN uint16_t penny_f32_to_bf16(float f)
{
	uint32_t u = penny_f32_bits(f);

	if ((u & 0x7fffffffu) > 0x7f800000u)
		return (uint16_t)((u >> 16) | 0x40);
	u += 0x7fffu + ((u >> 16) & 1);
	return (uint16_t)(u >> 16);
}

PENNY_DATA_FN float penny_bf16_to_f32(uint16_t h)
{
	return penny_bits_f32((uint32_t)h << 16);
}

/* float -> IEEE binary16, round to nearest even, with subnormals. */
PENNY_DATA_FN uint16_t penny_f32_to_half(float f)
{
	uint32_t x = penny_f32_bits(f);
	uint32_t sign = (x >> 16) & 0x8000u, ax = x & 0x7fffffffu, r, rem, e, m, shift, half;

	if (ax >= 0x7f800000u)
		return (uint16_t)(sign | (ax > 0x7f800000u ? 0x7e00u : 0x7c00u));
	if (ax >= 0x477ff000u) /* >= 65520: rounds to infinity */
		return (uint16_t)(sign | 0x7c00u);
	if (ax < 0x38800000u) { /* below 2^-14: subnormal or zero */
		e = ax >> 23;
		if (e < 102)
			return (uint16_t)sign;
		m = (ax & 0x7fffffu) | 0x800000u;
		shift = 126 - e;
		r = m >> shift;
		rem = m & ((1u << shift) - 1);
		half = 1u << (shift - 1);
		if (rem > half || (rem == half && (r & 1)))
			r++;
		return (uint16_t)(sign | r);
	}
	r = (ax - 0x38000000u) >> 13;
	rem = ax & 0x1fffu;
	if (rem > 0x1000u || (rem == 0x1000u && (r & 1)))
		r++;
	return (uint16_t)(sign | r);
}

PENNY_DATA_FN float penny_half_to_f32(uint16_t h)
{
	uint32_t s = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;

	if (e == 0) {
		float v = (float)m * 5.9604644775390625e-8f; /* m * 2^-24, exact */
		return s ? -v : v;
	}
	if (e == 31)
		return penny_bits_f32(s | 0x7f800000u | (m << 13));
	return penny_bits_f32(s | ((e + 112) << 23) | (m << 13));
}

/* The bits of an integer-valued v in dtype (v small enough to be exact). */
PENNY_DATA_FN uint64_t penny_data_bits_of(int dtype, int64_t v)
{
	double d;

	switch (dtype) {
	case PENNY_INT8:
	case PENNY_UINT8:
		return (uint8_t)v;
	case PENNY_INT32:
	case PENNY_UINT32:
		return (uint32_t)v;
	case PENNY_INT64:
	case PENNY_UINT64:
		return (uint64_t)v;
	case PENNY_HALF:
		return penny_f32_to_half((float)v);
	case PENNY_BFLOAT16:
		return penny_f32_to_bf16((float)v);
	case PENNY_FLOAT:
		return penny_f32_bits((float)v);
	case PENNY_DOUBLE: {
		uint64_t u;

		d = (double)v;
		memcpy(&u, &d, 8);
		return u;
	}
	}
	return 0;
}

/* Bits of element i of rank's input. */
PENNY_DATA_FN uint64_t penny_data_input_bits(int dtype, int op, uint32_t seed, int rank, uint64_t i)
{
	uint32_t h = penny_data_hash(seed, (uint32_t)rank, i);

	return penny_data_bits_of(dtype, penny_data_value(h, penny_data_signed(dtype), op));
}

/* Wrap an exact integer to the type's width (two's complement). */
PENNY_DATA_FN int64_t penny_data_wrap(int dtype, int64_t v)
{
	switch (dtype) {
	case PENNY_INT8:
		return (int8_t)(uint8_t)v;
	case PENNY_UINT8:
		return (uint8_t)v;
	case PENNY_INT32:
		return (int32_t)(uint32_t)v;
	case PENNY_UINT32:
		return (uint32_t)v;
	}
	return v;
}

/* Bits of element i of the expected allreduce result over nranks ranks. */
PENNY_DATA_FN uint64_t penny_data_expected_bits(int dtype, int op, uint32_t seed, int nranks,
					  uint64_t i)
{
	int sgn = penny_data_signed(dtype);
	int isint = dtype <= PENNY_UINT64;
	int64_t acc = 0;
	int r;

	for (r = 0; r < nranks; r++) {
		int64_t v = penny_data_value(penny_data_hash(seed, (uint32_t)r, i), sgn, op);

		if (r == 0) {
			acc = v;
			continue;
		}
		switch (op) {
		case PENNY_PROD:
			acc = (int64_t)((uint64_t)acc * (uint64_t)v);
			break;
		case PENNY_MIN:
			acc = v < acc ? v : acc;
			break;
		case PENNY_MAX:
			acc = v > acc ? v : acc;
			break;
		default:
			acc = (int64_t)((uint64_t)acc + (uint64_t)v);
			break;
		}
		if (isint)
			acc = penny_data_wrap(dtype, acc);
	}
	if (op != PENNY_AVG)
		return penny_data_bits_of(dtype, acc);
	if (isint) {
		if (dtype == PENNY_UINT64)
			return (uint64_t)acc / (uint64_t)nranks;
		return penny_data_bits_of(dtype, acc / nranks);
	}
	if (dtype == PENNY_DOUBLE) {
		double d = (double)acc / (double)nranks;
		uint64_t u;

		memcpy(&u, &d, 8);
		return u;
	}
	{
		float f = (float)acc / (float)nranks;

		if (dtype == PENNY_HALF)
			return penny_f32_to_half(f);
		if (dtype == PENNY_BFLOAT16)
			return penny_f32_to_bf16(f);
		return penny_f32_bits(f);
	}
}

#endif
