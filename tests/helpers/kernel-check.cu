// SPDX-License-Identifier: MIT
/*
 * The cuda plugin's block helpers on a real GPU: pn_block_reduce and
 * pn_block_copy (plugins/cuda/ar_block.cuh), which every one-node kernel
 * uses for its tiles, against a host reference, for every type and op,
 * 2, 3 and 8 sources (local and peer-read), with and without an extra
 * destination, aligned and misaligned by one element, over lengths with
 * and without a tail.  The CPU emulator runs the same source but not the
 * GPU's compiler: half and bfloat16 results stored byte by byte came out
 * with their low byte 0 on sm_90 (nvcc 13.0), which only this program saw.
 * One GPU is enough.  TAP output; exit 1 when a check fails, 2 when the
 * GPU cannot run it.
 *   make kernel-check && build/tests/helpers/kernel-check
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "../../plugins/cuda/ar_block.cuh"

#define MAXLEN (12663 * 8 + 64)

template <typename T, int OP>
__global__ void k_reduce(const char *const *src, const bool *remote, int nsrc, char *dst, char *pdst,
			 uint64_t len, int n)
{
	char *pd[PN_AR_MAX_RANKS] = { pdst };

	pn_block_reduce<T, OP>(src, remote, nsrc, dst, pd, pdst ? 1 : 0, len, n, true);
}

__global__ void k_copy(char *dst, const char *src, uint64_t len, bool remote, unsigned esize)
{
	pn_block_copy(dst, src, len, remote, esize);
}

/* ---- the host reference: pn_reduce.cuh's order and arithmetic ---- */

template <typename T> struct host_tr {
	typedef T A;
	static A to(T v) { return v; }
	static T from(A a) { return a; }
};
template <> struct host_tr<pn_half_t> {
	typedef float A;
	static float to(pn_half_t v)
	{
		__half_raw r;

		r.x = v.x;
		return __half2float(__half(r));
	}
	static pn_half_t from(float a)
	{
		__half_raw r = __half_raw(__float2half_rn(a));
		pn_half_t v;

		v.x = r.x;
		return v;
	}
};
template <> struct host_tr<pn_bf16_t> {
	typedef float A;
	static float to(pn_bf16_t v)
	{
		uint32_t u = (uint32_t)v.x << 16;
		float f;

		memcpy(&f, &u, 4);
		return f;
	}
	static pn_bf16_t from(float a)
	{
		__nv_bfloat16_raw r = __nv_bfloat16_raw(__float2bfloat16_rn(a));
		pn_bf16_t v;

		v.x = r.x;
		return v;
	}
};

template <typename A> static A h_comb(int op, A a, A b)
{
	if (op == PENNY_PROD)
		return (A)(a * b);
	if (op == PENNY_MIN)
		return b < a ? b : a;
	if (op == PENNY_MAX)
		return b > a ? b : a;
	return (A)(a + b);
}
/* integer sum and product wrap, as on the GPU */
#define H_INT(S, U)                                                                                \
	template <> S h_comb<S>(int op, S a, S b)                                                  \
	{                                                                                          \
		if (op == PENNY_PROD)                                                              \
			return (S)(U)((U)a * (U)b);                                                \
		if (op == PENNY_MIN)                                                               \
			return b < a ? b : a;                                                      \
		if (op == PENNY_MAX)                                                               \
			return b > a ? b : a;                                                      \
		return (S)(U)((U)a + (U)b);                                                        \
	}
H_INT(int8_t, uint8_t)
H_INT(uint8_t, uint8_t)
H_INT(int32_t, uint32_t)
H_INT(uint32_t, uint32_t)
H_INT(int64_t, uint64_t)
H_INT(uint64_t, uint64_t)

template <typename T> static void h_reduce(int op, char *const *src, int nsrc, char *out, uint64_t cnt, int n)
{
	typedef typename host_tr<T>::A A;

	for (uint64_t i = 0; i < cnt; i++) {
		T e;
		A a;

		memcpy(&e, src[0] + i * sizeof(T), sizeof(T));
		a = host_tr<T>::to(e);
		for (int s = 1; s < nsrc; s++) {
			memcpy(&e, src[s] + i * sizeof(T), sizeof(T));
			a = h_comb<A>(op, a, host_tr<T>::to(e));
		}
		if (op == PENNY_AVG)
			a = (A)(a / (A)n);
		e = host_tr<T>::from(a);
		memcpy(out + i * sizeof(T), &e, sizeof(T));
	}
}

/* Values that keep every float op finite: small integers and halves. */
template <typename T> static void fill(char *p, uint64_t cnt, unsigned seed)
{
	srand(seed);
	for (uint64_t i = 0; i < cnt; i++) {
		typedef typename host_tr<T>::A A;
		T e = host_tr<T>::from((A)(rand() % 7 - 3) + (A)((rand() % 2) ? 0.5 : 0));

		memcpy(p + i * sizeof(T), &e, sizeof(T));
	}
}
template <> void fill<float>(char *p, uint64_t cnt, unsigned seed)
{
	srand(seed);
	for (uint64_t i = 0; i < cnt; i++) {
		float f = (float)(rand() % 2001 - 1000) / 64.0f;

		memcpy(p + i * 4, &f, 4);
	}
}
template <> void fill<double>(char *p, uint64_t cnt, unsigned seed)
{
	srand(seed);
	for (uint64_t i = 0; i < cnt; i++) {
		double f = (double)(rand() % 2001 - 1000) / 64.0;

		memcpy(p + i * 8, &f, 8);
	}
}
#define FILL_INT(S)                                                                                \
	template <> void fill<S>(char *p, uint64_t cnt, unsigned seed)                             \
	{                                                                                          \
		srand(seed);                                                                       \
		for (uint64_t i = 0; i < cnt; i++) {                                               \
			S v = (S)(rand() * 2654435761u);                                           \
			memcpy(p + i * sizeof(S), &v, sizeof(S));                                  \
		}                                                                                  \
	}
FILL_INT(int8_t)
FILL_INT(uint8_t)
FILL_INT(int32_t)
FILL_INT(uint32_t)
FILL_INT(int64_t)
FILL_INT(uint64_t)

static int tap_n, tap_failed;

static void tap(bool ok, const char *what)
{
	printf("%s %d - %s\n", ok ? "ok" : "not ok", ++tap_n, what);
	if (!ok)
		tap_failed++;
}

static bool cuda_ok(cudaError_t e, const char *what)
{
	if (e == cudaSuccess)
		return true;
	fprintf(stderr, "kernel-check: %s: %s\n", what, cudaGetErrorString(e));
	exit(2);
}

/* device buffers: 8 sources, the destination, the extra one, the tables */
static char *d_src[8], *d_dst, *d_pdst;
static const char **d_srctab;
static bool *d_remote;

static const char *const op_name[] = { "sum", "prod", "min", "max", "avg" };

template <typename T, int OP> static void check_reduce(const char *tname)
{
	static const uint64_t counts[] = { 1, 7, 9, 18, 342, 12663 };
	static const int nsrcs[] = { 2, 3, 8 };
	char *h_src[8], *h_out = (char *)malloc(MAXLEN), *h_ref = (char *)malloc(MAXLEN),
			*h_pout = (char *)malloc(MAXLEN);
	char first_bad[160] = "";
	int bad = 0, cases = 0;

	for (int s = 0; s < 8; s++)
		h_src[s] = (char *)malloc(MAXLEN);
	for (unsigned ci = 0; ci < sizeof(counts) / sizeof(counts[0]); ci++)
		for (unsigned ni = 0; ni < 3; ni++)
			for (int mis = 0; mis < 2; mis++)
				for (int extra = 0; extra < 2; extra++) {
					const uint64_t cnt = counts[ci], len = cnt * sizeof(T);
					const int nsrc = nsrcs[ni];
					/* misaligned: source 1 and the destination one element
					 * past a 16-byte boundary (a block of an odd count) */
					const uint64_t soff = mis ? sizeof(T) : 0, doff = mis ? sizeof(T) : 0;
					const char *tab[PN_AR_MAX_RANKS];
					bool rem[PN_AR_MAX_RANKS];

					for (int s = 0; s < nsrc; s++) {
						fill<T>(h_src[s], cnt, 1000u * ci + 10u * s + (unsigned)mis);
						cuda_ok(cudaMemcpy(d_src[s] + (s == 1 ? soff : 0), h_src[s], len,
								   cudaMemcpyHostToDevice), "copy in");
						tab[s] = d_src[s] + (s == 1 ? soff : 0);
						rem[s] = s % 2 == 1;
					}
					cuda_ok(cudaMemcpy(d_srctab, tab, sizeof(tab), cudaMemcpyHostToDevice), "table");
					cuda_ok(cudaMemcpy(d_remote, rem, sizeof(rem), cudaMemcpyHostToDevice), "table");
					cuda_ok(cudaMemset(d_dst, 0x5a, MAXLEN), "memset");
					cuda_ok(cudaMemset(d_pdst, 0x5a, MAXLEN), "memset");
					k_reduce<T, OP><<<1, 512>>>(d_srctab, d_remote, nsrc, d_dst + doff,
								   extra ? d_pdst + doff : NULL, len, nsrc);
					cuda_ok(cudaGetLastError(), "launch");
					cuda_ok(cudaDeviceSynchronize(), "kernel");
					cuda_ok(cudaMemcpy(h_out, d_dst + doff, len + 16, cudaMemcpyDeviceToHost), "copy out");
					cuda_ok(cudaMemcpy(h_pout, d_pdst + doff, len + 16, cudaMemcpyDeviceToHost),
						"copy out");
					h_reduce<T>(OP, h_src, nsrc, h_ref, cnt, nsrc);
					cases++;
					uint64_t i = 0;
					bool ok = true;

					for (; i < cnt && ok; i++)
						ok = !memcmp(h_out + i * sizeof(T), h_ref + i * sizeof(T), sizeof(T)) &&
						     (!extra || !memcmp(h_pout + i * sizeof(T), h_ref + i * sizeof(T),
									sizeof(T)));
					/* nothing written past the end */
					for (int b = 0; b < 16 && ok; b++)
						ok = (unsigned char)h_out[len + b] == 0x5a;
					if (!ok && !bad++)
						snprintf(first_bad, sizeof(first_bad),
							 " (first wrong: %llu elements, %d sources, %s%s, element %llu)",
							 (unsigned long long)cnt, nsrc, mis ? "misaligned" : "aligned",
							 extra ? ", extra destination" : "",
							 (unsigned long long)(i ? i - 1 : 0));
				}
	char what[256];

	snprintf(what, sizeof(what), "pn_block_reduce %s %s: %d of %d cases right%s", tname, op_name[OP],
		 cases - bad, cases, first_bad);
	tap(!bad, what);
	for (int s = 0; s < 8; s++)
		free(h_src[s]);
	free(h_out);
	free(h_ref);
	free(h_pout);
}

template <typename T> static void check_type(const char *tname)
{
	check_reduce<T, PENNY_SUM>(tname);
	check_reduce<T, PENNY_PROD>(tname);
	check_reduce<T, PENNY_MIN>(tname);
	check_reduce<T, PENNY_MAX>(tname);
	check_reduce<T, PENNY_AVG>(tname);
}

static void check_copy(unsigned es)
{
	static const uint64_t counts[] = { 1, 7, 9, 342, 12663 };
	char *h_in = (char *)malloc(MAXLEN), *h_out = (char *)malloc(MAXLEN);
	int bad = 0, cases = 0;
	char what[160];

	for (uint64_t i = 0; i < MAXLEN; i++)
		h_in[i] = (char)(i * 131 + 7);
	for (unsigned ci = 0; ci < sizeof(counts) / sizeof(counts[0]); ci++)
		for (int mis = 0; mis < 2; mis++)
			for (int remote = 0; remote < 2; remote++) {
				const uint64_t len = counts[ci] * es, off = mis ? es : 0;
				bool ok = true;

				cuda_ok(cudaMemcpy(d_src[0] + off, h_in, len, cudaMemcpyHostToDevice), "copy in");
				cuda_ok(cudaMemset(d_dst, 0x5a, MAXLEN), "memset");
				k_copy<<<1, 512>>>(d_dst + off, d_src[0] + off, len, remote, es);
				cuda_ok(cudaGetLastError(), "launch");
				cuda_ok(cudaDeviceSynchronize(), "kernel");
				cuda_ok(cudaMemcpy(h_out, d_dst + off, len + 16, cudaMemcpyDeviceToHost), "copy out");
				ok = !memcmp(h_out, h_in, len);
				for (int b = 0; b < 16 && ok; b++)
					ok = (unsigned char)h_out[len + b] == 0x5a;
				cases++;
				bad += !ok;
			}
	snprintf(what, sizeof(what), "pn_block_copy %u-byte elements: %d of %d cases right", es, cases - bad,
		 cases);
	tap(!bad, what);
	free(h_in);
	free(h_out);
}

int main(void)
{
	int ndev = 0;
	cudaDeviceProp prop;

	if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev < 1) {
		fprintf(stderr, "kernel-check: no CUDA device\n");
		return 2;
	}
	cuda_ok(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
	printf("# %s, sm_%d%d\n", prop.name, prop.major, prop.minor);
	for (int s = 0; s < 8; s++)
		cuda_ok(cudaMalloc(&d_src[s], MAXLEN), "cudaMalloc");
	cuda_ok(cudaMalloc(&d_dst, MAXLEN), "cudaMalloc");
	cuda_ok(cudaMalloc(&d_pdst, MAXLEN), "cudaMalloc");
	cuda_ok(cudaMalloc(&d_srctab, sizeof(char *) * PN_AR_MAX_RANKS), "cudaMalloc");
	cuda_ok(cudaMalloc(&d_remote, sizeof(bool) * PN_AR_MAX_RANKS), "cudaMalloc");
	check_type<int8_t>("int8");
	check_type<uint8_t>("uint8");
	check_type<int32_t>("int32");
	check_type<uint32_t>("uint32");
	check_type<int64_t>("int64");
	check_type<uint64_t>("uint64");
	check_type<pn_half_t>("half");
	check_type<pn_bf16_t>("bfloat16");
	check_type<float>("float");
	check_type<double>("double");
	check_copy(1);
	check_copy(2);
	check_copy(4);
	check_copy(8);
	printf("1..%d\n", tap_n);
	return tap_failed ? 1 : 0;
}
