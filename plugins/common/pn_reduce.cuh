/* SPDX-License-Identifier: MIT */
/*
 * Element-wise reduction shared by the GPU plugins' kernels (the cuda
 * plugin's ar_kernels.cu and the nvshmem plugin's nv_kernels.cu): the
 * accumulator type of each element type (half and bfloat16 in float), the
 * ops with wrapping integer arithmetic, and pn_pack, a vector of BYTES
 * bytes reduced in the accumulator type.  Include after pn_dev.cuh and
 * penny_plugin.h; PN_DEVM is the inline function prefix.
 */
#ifndef PENNY_REDUCE_CUH
#define PENNY_REDUCE_CUH

#ifndef PN_DEVM
#ifndef PN_EMU
#define PN_DEVM __device__ __forceinline__
#else
#define PN_DEVM inline
#endif
#endif

/* ---- element types: accumulate half/bfloat16 in float ---- */

template <typename T> struct pn_tr {
	typedef T A;
	static PN_DEVM A to(T v) { return v; }
	static PN_DEVM T from(A a) { return a; }
};
template <> struct pn_tr<pn_bf16_t> {
	typedef float A;
	static PN_DEVM A to(pn_bf16_t v) { return pn_bf16_f(v.x); }
	static PN_DEVM pn_bf16_t from(A a)
	{
		pn_bf16_t v;

		v.x = pn_f_bf16(a);
		return v;
	}
};
template <> struct pn_tr<pn_half_t> {
	typedef float A;
	static PN_DEVM A to(pn_half_t v) { return pn_half_f(v.x); }
	static PN_DEVM pn_half_t from(A a)
	{
		pn_half_t v;

		v.x = pn_f_half(a);
		return v;
	}
};

/* Integer sum and product wrap (done in the unsigned type). */
template <typename A> struct pn_ar {
	static PN_DEVM A add(A a, A b) { return a + b; }
	static PN_DEVM A mul(A a, A b) { return a * b; }
	static PN_DEVM A div(A a, int n) { return a / (A)n; }
};
#define PN_AR_INT(S, U)                                                                        \
	template <> struct pn_ar<S> {                                                          \
		static PN_DEVM S add(S a, S b) { return (S)(U)((U)a + (U)b); }                 \
		static PN_DEVM S mul(S a, S b) { return (S)(U)((U)a * (U)b); }                 \
		static PN_DEVM S div(S a, int n) { return (S)(a / (S)n); }                     \
	};
PN_AR_INT(int8_t, uint8_t)
PN_AR_INT(uint8_t, uint8_t)
PN_AR_INT(int32_t, uint32_t)
PN_AR_INT(uint32_t, uint32_t)
PN_AR_INT(int64_t, uint64_t)
PN_AR_INT(uint64_t, uint64_t)
template <> struct pn_ar<float> {
	static PN_DEVM float add(float a, float b) { return a + b; }
	static PN_DEVM float mul(float a, float b) { return a * b; }
	static PN_DEVM float div(float a, int n) { return a / (float)n; }
};

template <int OP, typename A> PN_DEVM A pn_comb(A a, A b)
{
	if (OP == PENNY_PROD)
		return pn_ar<A>::mul(a, b);
	if (OP == PENNY_MIN)
		return b < a ? b : a;
	if (OP == PENNY_MAX)
		return b > a ? b : a;
	return pn_ar<A>::add(a, b);
}

/* An element as raw bits of its size: one load or store of that width
 * (host-mapped memory gets no byte-wise read-modify-write of a shared word,
 * and no byte-wise store of a half or bfloat16 result). */
template <int B> struct pn_xraw;
template <> struct pn_xraw<1> { typedef uint8_t U; };
template <> struct pn_xraw<2> { typedef uint16_t U; };
template <> struct pn_xraw<4> { typedef uint32_t U; };
template <> struct pn_xraw<8> { typedef uint64_t U; };

/* A pack of BYTES bytes of T, reduced element-wise in accumulator type. */
template <typename T, int OP, int BYTES> struct pn_pack {
	enum { N = BYTES / sizeof(T) };
	typedef typename pn_tr<T>::A A;
	A acc[N];

	PN_DEVM void first(const void *raw)
	{
		T e[N];

		memcpy(e, raw, BYTES);
#pragma unroll
		for (int i = 0; i < N; i++)
			acc[i] = pn_tr<T>::to(e[i]);
	}
	PN_DEVM void add(const void *raw)
	{
		T e[N];

		memcpy(e, raw, BYTES);
#pragma unroll
		for (int i = 0; i < N; i++)
			acc[i] = pn_comb<OP, A>(acc[i], pn_tr<T>::to(e[i]));
	}
	/* fin: apply avg's division by n */
	PN_DEVM void out(void *raw, int n, bool fin)
	{
		T e[N];

#pragma unroll
		for (int i = 0; i < N; i++) {
			A a = acc[i];

			if (OP == PENNY_AVG && fin)
				a = pn_ar<A>::div(a, n);
			e[i] = pn_tr<T>::from(a);
		}
		memcpy(raw, e, BYTES);
	}
};

#endif
