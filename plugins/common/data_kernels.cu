/* SPDX-License-Identifier: MIT */
/*
 * Data kernels shared by the cuda and nccl plugins: fill with the test
 * formula, check against the exact result (penny_data.h, the same functions
 * the host uses), and the copy / pointer-chase kernels of the bandwidth
 * matrix.  Loaded with cuModuleLoadData from an embedded fatbin.
 */
#include "kargs.h"
#include "pn_dev.cuh"

template <int DT> static __device__ void pn_store_bits(char *p, uint64_t bits)
{
	switch (penny_data_size(DT)) {
	case 1:
		*(uint8_t *)p = (uint8_t)bits;
		break;
	case 2:
		*(uint16_t *)p = (uint16_t)bits;
		break;
	case 4:
		*(uint32_t *)p = (uint32_t)bits;
		break;
	default:
		*(uint64_t *)p = bits;
		break;
	}
}

template <int DT> static __device__ uint64_t pn_load_bits(const char *p)
{
	switch (penny_data_size(DT)) {
	case 1:
		return *(const uint8_t *)p;
	case 2:
		return *(const uint16_t *)p;
	case 4:
		return *(const uint32_t *)p;
	default:
		return *(const uint64_t *)p;
	}
}

template <int DT> static __device__ void pn_fill(const struct pn_testdata_args &a)
{
	uint64_t i = (uint64_t)pn_bid() * pn_ntid() + pn_tid();
	uint64_t stride = (uint64_t)pn_nbid() * pn_ntid();
	char *p = (char *)a.ptr;

	for (; i < a.count; i += stride)
		pn_store_bits<DT>(p + i * penny_data_size(DT),
				  penny_data_input_bits(DT, a.op, a.seed, a.rank, i));
}

template <int DT> static __device__ void pn_check(const struct pn_testdata_args &a)
{
	uint64_t i = (uint64_t)pn_bid() * pn_ntid() + pn_tid();
	uint64_t stride = (uint64_t)pn_nbid() * pn_ntid();
	const char *p = (const char *)a.ptr;
	unsigned long long *res = (unsigned long long *)a.result;
	unsigned long long wrong = 0, first = ~0ull;

	for (; i < a.count; i += stride) {
		uint64_t got = pn_load_bits<DT>(p + i * penny_data_size(DT));

		if (got != penny_data_expected_bits(DT, a.op, a.seed, a.nranks, i)) {
			wrong++;
			if (first == ~0ull)
				first = i;
		}
	}
	if (wrong) {
		pn_atomic_add64(&res[0], wrong);
		pn_atomic_min64(&res[1], first);
	}
}

#define PN_DATA_KERNELS(DT, name)                                                              \
	extern "C" __global__ void pn_fill_##name(struct pn_testdata_args a) { pn_fill<DT>(a); }   \
	extern "C" __global__ void pn_check_##name(struct pn_testdata_args a) { pn_check<DT>(a); }

PN_DATA_KERNELS(PENNY_INT8, int8)
PN_DATA_KERNELS(PENNY_UINT8, uint8)
PN_DATA_KERNELS(PENNY_INT32, int32)
PN_DATA_KERNELS(PENNY_UINT32, uint32)
PN_DATA_KERNELS(PENNY_INT64, int64)
PN_DATA_KERNELS(PENNY_UINT64, uint64)
PN_DATA_KERNELS(PENNY_HALF, half)
PN_DATA_KERNELS(PENNY_BFLOAT16, bfloat16)
PN_DATA_KERNELS(PENNY_FLOAT, float)
PN_DATA_KERNELS(PENNY_DOUBLE, double)

/* SM copy for the bandwidth matrix: 16-byte loads and stores, 4 in flight. */
extern "C" __global__ void pn_copy_sm(struct pn_copy_args a)
{
	uint64_t nv = a.bytes / 16, stride = (uint64_t)pn_nbid() * pn_ntid();
	uint64_t v = (uint64_t)pn_bid() * pn_ntid() + pn_tid();
	const char *src = (const char *)a.src;
	char *dst = (char *)a.dst;

	for (; v < nv; v += 4 * stride) {
		pn_v4 x[4];
		int u;

#pragma unroll
		for (u = 0; u < 4; u++)
			if (v + u * stride < nv)
				x[u] = pn_ld(src + (v + u * stride) * 16);
#pragma unroll
		for (u = 0; u < 4; u++)
			if (v + u * stride < nv)
				pn_st(dst + (v + u * stride) * 16, x[u]);
	}
}

/* Latency: one thread follows a chain of indices (each load depends on the last). */
extern "C" __global__ void pn_chase(struct pn_chase_args a)
{
	const uint32_t *buf = (const uint32_t *)a.buf;
	uint32_t idx = 0, i;

	if (pn_tid() || pn_bid())
		return;
	for (i = 0; i < a.iters; i++)
		idx = (uint32_t)pn_ld_volatile_u64((const uint64_t *)(buf + 2 * idx));
	*(uint32_t *)a.out = idx;
}
