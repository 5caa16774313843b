// SPDX-License-Identifier: MIT
/*
 * ce-allreduce: can an allreduce whose bytes move by copy engines beat the
 * cuda plugin's SM stores between two GPUs of one node?  (Issue 41 wants
 * large sizes at >= 0.97x the copy engines' bandwidth; the plugin's ring
 * moves 365 GB/s where a copy engine moves about 394, 2 x H200.)  This
 * measures the design before the plugin gets it.
 *
 * One process, two GPUs with peer access, float sum.  A call is cut into
 * pieces; for piece k each GPU's copy engine pushes the half its peer owns
 * into the peer's scratch (parity k % 2), the owner adds it to its own half
 * with a kernel, and a copy engine pushes the sum into the peer's recv.
 * Three streams a GPU (reduce-scatter copies, additions, all-gather
 * copies); events between the GPUs order them: a push into the peer's
 * scratch waits for the peer's addition two pieces back.  Each size is
 * checked (every float of both recvs against the exact sum) and timed:
 * calls in a loop, both GPUs synchronised after each.
 *
 * The reference, timed the same way: both GPUs copying half the buffer to
 * each other at once (what each phase moves); an allreduce by copy engines
 * can at best take twice that.
 *
 *   nvcc -O3 -arch=sm_90 -o ce-allreduce tests/bench/ce-allreduce.cu
 *   [CE_PULL=1] ./ce-allreduce [PIECE_MIB ...]        (default: 16 32 64)
 * CE_PULL=1: the all-gather reads the peer's sum (a copy from the peer's
 * recv into this GPU's) instead of pushing this GPU's into the peer.
 * Prints one line per size and piece; exit 1 on a wrong value or a CUDA
 * error.
 */
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda_runtime.h>
#include <vector>

#define CK(x)                                                                                  \
	do {                                                                                   \
		cudaError_t e_ = (x);                                                          \
		if (e_ != cudaSuccess) {                                                       \
			fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x,             \
				cudaGetErrorString(e_));                                       \
			exit(1);                                                               \
		}                                                                              \
	} while (0)

static const int MAXP = 1024;

__global__ void add2(float *dst, const float *a, const float *b, size_t n4)
{
	size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
	const size_t stride = (size_t)gridDim.x * blockDim.x;

	for (; i < n4; i += stride) {
		float4 x = ((const float4 *)a)[i], y = ((const float4 *)b)[i];

		((float4 *)dst)[i] = make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w);
	}
}

/* GPU g's input: small sums of quarters, exact in float */
__global__ void fill(float *p, size_t n, int g)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
	     i += (size_t)gridDim.x * blockDim.x)
		p[i] = (float)(g + 1) + (float)(i % 1000) * 0.25f;
}

__global__ void check(const float *p, size_t n, unsigned long long *bad)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
	     i += (size_t)gridDim.x * blockDim.x)
		if (p[i] != 3.0f + (float)(i % 1000) * 0.5f)
			atomicAdd(bad, 1ull);
}

struct gpu {
	float *send, *recv, *scratch;
	cudaStream_t cs, rs, ag;
	cudaEvent_t ev_rs[MAXP], ev_red[MAXP], ev_done;
	int sms;
};

static gpu G[2];
static int pull; /* CE_PULL=1: the all-gather reads the peer's sum instead of pushing it */

/* One allreduce of n floats in pieces of pc floats (pc even, n % pc == 0). */
static void allreduce(size_t n, size_t pc)
{
	const size_t half = pc / 2, np = n / pc;

	for (size_t k = 0; k < np; k++) {
		for (int g = 0; g < 2; g++) {
			const int h = 1 - g;
			gpu &me = G[g], &peer = G[h];
			const size_t o = k * pc;

			CK(cudaSetDevice(g));
			/* reduce-scatter: the peer's half into its scratch, once it added
			 * what was there two pieces back */
			if (k >= 2)
				CK(cudaStreamWaitEvent(me.cs, peer.ev_red[k - 2], 0));
			CK(cudaMemcpyPeerAsync(peer.scratch + (k & 1) * half, h, me.send + o + h * half, g,
					       half * sizeof(float), me.cs));
			CK(cudaEventRecord(me.ev_rs[k], me.cs));
		}
		for (int g = 0; g < 2; g++) {
			const int h = 1 - g;
			gpu &me = G[g], &peer = G[h];
			const size_t o = k * pc + g * half;

			CK(cudaSetDevice(g));
			CK(cudaStreamWaitEvent(me.rs, peer.ev_rs[k], 0));
			add2<<<me.sms, 512, 0, me.rs>>>(me.recv + o, me.send + o, me.scratch + (k & 1) * half,
							half / 4);
			CK(cudaGetLastError());
			CK(cudaEventRecord(me.ev_red[k], me.rs));
			if (pull)
				continue;
			/* all-gather: my sum into the peer's recv */
			CK(cudaStreamWaitEvent(me.ag, me.ev_red[k], 0));
			CK(cudaMemcpyPeerAsync(peer.recv + o, h, me.recv + o, g, half * sizeof(float), me.ag));
		}
		for (int g = 0; g < 2 && pull; g++) {
			const int h = 1 - g;
			gpu &me = G[g], &peer = G[h];
			const size_t o = k * pc + h * half;

			/* all-gather by pulling: the peer's sum from its recv into mine */
			CK(cudaSetDevice(g));
			CK(cudaStreamWaitEvent(me.ag, peer.ev_red[k], 0));
			CK(cudaMemcpyPeerAsync(me.recv + o, g, peer.recv + o, h, half * sizeof(float), me.ag));
		}
	}
	for (int g = 0; g < 2; g++) {
		CK(cudaSetDevice(g));
		CK(cudaDeviceSynchronize());
	}
}

/* Both GPUs copy n / 2 floats to each other at once. */
static void both_ways(size_t n)
{
	for (int g = 0; g < 2; g++) {
		CK(cudaSetDevice(g));
		CK(cudaMemcpyPeerAsync(G[1 - g].scratch, 1 - g, G[g].send, g, n / 2 * sizeof(float), G[g].cs));
	}
	for (int g = 0; g < 2; g++) {
		CK(cudaSetDevice(g));
		CK(cudaDeviceSynchronize());
	}
}

template <typename F> static double time_us(F f, int iters)
{
	f();
	auto t0 = std::chrono::steady_clock::now();

	for (int i = 0; i < iters; i++)
		f();
	return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() /
	       iters;
}

int main(int argc, char **argv)
{
	const size_t sizes[] = { 64ull << 20, 256ull << 20, 1ull << 30 };
	std::vector<size_t> pieces;
	int ndev = 0, ok01 = 0, ok10 = 0;
	unsigned long long *bad;
	int wrong = 0;

	for (int i = 1; i < argc; i++) {
		long v = strtol(argv[i], NULL, 10);

		if (v < 1 || v > 1024) {
			fprintf(stderr, "ce-allreduce: PIECE_MIB must be 1..1024, got '%s'\n", argv[i]);
			return 2;
		}
		pieces.push_back((size_t)v << 20);
	}
	pull = getenv("CE_PULL") && !strcmp(getenv("CE_PULL"), "1");
	if (pieces.empty())
		pieces = { 16ull << 20, 32ull << 20, 64ull << 20 };
	CK(cudaGetDeviceCount(&ndev));
	if (ndev < 2) {
		fprintf(stderr, "ce-allreduce: needs 2 GPUs, found %d\n", ndev);
		return 2;
	}
	CK(cudaDeviceCanAccessPeer(&ok01, 0, 1));
	CK(cudaDeviceCanAccessPeer(&ok10, 1, 0));
	if (!ok01 || !ok10) {
		fprintf(stderr, "ce-allreduce: GPUs 0 and 1 cannot access each other\n");
		return 2;
	}
	for (int g = 0; g < 2; g++) {
		gpu &x = G[g];

		CK(cudaSetDevice(g));
		CK(cudaDeviceEnablePeerAccess(1 - g, 0));
		CK(cudaMalloc(&x.send, 1ull << 30));
		CK(cudaMalloc(&x.recv, 1ull << 30));
		CK(cudaMalloc(&x.scratch, 1ull << 30));
		CK(cudaStreamCreateWithFlags(&x.cs, cudaStreamNonBlocking));
		CK(cudaStreamCreateWithFlags(&x.rs, cudaStreamNonBlocking));
		CK(cudaStreamCreateWithFlags(&x.ag, cudaStreamNonBlocking));
		for (int k = 0; k < MAXP; k++) {
			CK(cudaEventCreateWithFlags(&x.ev_rs[k], cudaEventDisableTiming));
			CK(cudaEventCreateWithFlags(&x.ev_red[k], cudaEventDisableTiming));
		}
		CK(cudaDeviceGetAttribute(&x.sms, cudaDevAttrMultiProcessorCount, g));
		fill<<<x.sms, 512>>>(x.send, (1ull << 30) / sizeof(float), g);
		CK(cudaDeviceSynchronize());
	}
	CK(cudaMallocManaged(&bad, sizeof(*bad)));
	printf("# ce-allreduce: 2 GPUs, float sum, all-gather by %s; busbw = bytes / time (2 ranks);\n"
	       "# both-ways = both GPUs"
	       " copying bytes / 2 to each other at once (a copy engine each), ideal = 2 x that\n",
	       pull ? "pull" : "push");
	printf("%12s %9s %7s %11s %10s %14s %10s %8s\n", "bytes", "piece", "pieces", "time_us",
	       "busbw", "both-ways_us", "ce GB/s", "ideal/t");
	for (size_t bytes : sizes) {
		const size_t n = bytes / sizeof(float);
		const int iters = bytes >= (1ull << 30) ? 10 : 30;
		const double bw_us = time_us([&] { both_ways(n); }, iters);

		for (size_t piece : pieces) {
			const size_t pc = piece / sizeof(float);

			if (piece > bytes || n % pc || n / pc > (size_t)MAXP)
				continue;
			for (int g = 0; g < 2; g++) {
				CK(cudaSetDevice(g));
				CK(cudaMemset(G[g].recv, 0xff, bytes));
			}
			allreduce(n, pc);
			for (int g = 0; g < 2; g++) {
				*bad = 0;
				CK(cudaSetDevice(g));
				check<<<G[g].sms, 512>>>(G[g].recv, n, bad);
				CK(cudaDeviceSynchronize());
				if (*bad) {
					printf("# WRONG: GPU %d: %llu of %zu floats\n", g, *bad, n);
					wrong = 1;
				}
			}
			const double us = time_us([&] { allreduce(n, pc); }, iters);

			printf("%12zu %9zu %7zu %11.1f %10.1f %14.1f %10.1f %8.3f\n", bytes, piece, n / pc, us,
			       bytes / us / 1e3, bw_us, bytes / 2 / bw_us / 1e3, 2 * bw_us / us);
		}
	}
	return wrong;
}
