// SPDX-License-Identifier: MIT
/*
 * ce-allreduce: can an allreduce whose bytes move by copy engines beat the
 * cuda plugin's SM stores between the GPUs of one node?  (Issue 41 wants
 * large sizes at >= 0.97x the copy engines' bandwidth; the plugin's ring
 * moves 365 GB/s where a copy engine moves about 394, 2 x H200.)  This
 * measures the design before the plugin gets it.
 *
 * One process, N GPUs with peer access (2, 4 or 8; default the most of
 * those that are visible), float sum.  A call is cut into pieces, a piece
 * into N slices, slice j owned by GPU j.  For piece k each GPU's copy engines push slice j into
 * GPU j's scratch (slot of the sender, parity k % 2), one stream a peer;
 * the owner adds the N copies with a kernel; then the sum goes into every
 * peer's recv, pushed by the owner or (CE_PULL=1) pulled by each peer.
 * Events between the GPUs order it all: a push into a peer's scratch
 * waits for that peer's addition two pieces back.  Each size is checked
 * (every float of every recv against the exact sum) and timed: calls in a
 * loop, every GPU synchronised after each.
 *
 * The reference, timed the same way: every GPU copying a slice to every
 * other at once (what each phase moves); an allreduce by copy engines can
 * at best take twice that.  busbw = bytes / time x 2 (N - 1) / N.
 *
 *   nvcc -O3 -arch=sm_90 -o ce-allreduce tests/bench/ce-allreduce.cu
 *   [CE_GPUS=N] [CE_PULL=1] ./ce-allreduce [PIECE_MIB ...]   (default: 16 32 64)
 * Prints one line per size and piece; exit 1 on a wrong value or a CUDA
 * error, 2 on bad arguments or too few GPUs.
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

static const int MAXG = 8, MAXP = 64;

struct srcs {
	const float *p[MAXG];
	int n;
};

/* dst = the sum of the n sources, float4 at a time (n4 of them) */
__global__ void addn(float *dst, srcs s, size_t n4)
{
	const size_t stride = (size_t)gridDim.x * blockDim.x;

	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n4; i += stride) {
		float4 x = ((const float4 *)s.p[0])[i];

		for (int j = 1; j < s.n; j++) {
			float4 y = ((const float4 *)s.p[j])[i];

			x = make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w);
		}
		((float4 *)dst)[i] = x;
	}
}

/* GPU g's input: small sums of quarters, exact in float for 8 GPUs */
__global__ void fill(float *p, size_t n, int g)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
	     i += (size_t)gridDim.x * blockDim.x)
		p[i] = (float)(g + 1) + (float)(i % 1000) * 0.25f;
}

__global__ void check(const float *p, size_t n, int ngpu, unsigned long long *bad)
{
	const float base = (float)(ngpu * (ngpu + 1) / 2);

	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
	     i += (size_t)gridDim.x * blockDim.x)
		if (p[i] != base + (float)(i % 1000) * 0.25f * (float)ngpu)
			atomicAdd(bad, 1ull);
}

struct gpu {
	float *send, *recv, *scratch;
	cudaStream_t cs[MAXG], ag[MAXG], rs;	/* copies to or from each peer, additions */
	cudaEvent_t ev_rs[MAXG][MAXP];		/* [to peer][piece]: the push into its scratch */
	cudaEvent_t ev_red[MAXP];		/* [piece]: the addition */
	int sms;
};

static gpu G[MAXG];
static int ng;
static int pull; /* CE_PULL=1: the all-gather reads the owner's sum instead of it pushing it */

/* Scratch of GPU j: [parity][sender][slice] floats. */
static float *slot(int j, size_t k, int from, size_t slice)
{
	return G[j].scratch + ((k & 1) * ng + from) * slice;
}

/* One allreduce of n floats in pieces of pc floats (pc % (4 ng) == 0, n % pc == 0). */
static void allreduce(size_t n, size_t pc)
{
	const size_t slice = pc / ng, np = n / pc;

	for (size_t k = 0; k < np; k++) {
		const size_t o = k * pc;

		/* reduce-scatter: slice j into GPU j's scratch, once it added what
		 * was there two pieces back */
		for (int g = 0; g < ng; g++) {
			CK(cudaSetDevice(g));
			for (int j = 0; j < ng; j++) {
				if (j == g)
					continue;
				if (k >= 2)
					CK(cudaStreamWaitEvent(G[g].cs[j], G[j].ev_red[k - 2], 0));
				CK(cudaMemcpyPeerAsync(slot(j, k, g, slice), j, G[g].send + o + j * slice, g,
						       slice * sizeof(float), G[g].cs[j]));
				CK(cudaEventRecord(G[g].ev_rs[j][k], G[g].cs[j]));
			}
		}
		for (int g = 0; g < ng; g++) {
			srcs s;

			CK(cudaSetDevice(g));
			s.n = ng;
			for (int j = 0; j < ng; j++) {
				s.p[j] = j == g ? G[g].send + o + g * slice : slot(g, k, j, slice);
				if (j != g)
					CK(cudaStreamWaitEvent(G[g].rs, G[j].ev_rs[g][k], 0));
			}
			addn<<<G[g].sms, 512, 0, G[g].rs>>>(G[g].recv + o + g * slice, s, slice / 4);
			CK(cudaGetLastError());
			CK(cudaEventRecord(G[g].ev_red[k], G[g].rs));
		}
		/* all-gather: slice j's sum into every recv */
		for (int g = 0; g < ng; g++) {
			CK(cudaSetDevice(g));
			for (int j = 0; j < ng; j++) {
				const int owner = pull ? j : g, to = pull ? g : j;
				const size_t at = o + owner * slice;

				if (j == g)
					continue;
				CK(cudaStreamWaitEvent(G[g].ag[j], G[owner].ev_red[k], 0));
				CK(cudaMemcpyPeerAsync(G[to].recv + at, to, G[owner].recv + at, owner,
						       slice * sizeof(float), G[g].ag[j]));
			}
		}
	}
	for (int g = 0; g < ng; g++) {
		CK(cudaSetDevice(g));
		CK(cudaDeviceSynchronize());
	}
}

/* Every GPU copies n / ng floats to every other at once. */
static void all_to_all(size_t n)
{
	const size_t slice = n / ng;

	for (int g = 0; g < ng; g++) {
		CK(cudaSetDevice(g));
		for (int j = 0; j < ng; j++)
			if (j != g)
				CK(cudaMemcpyPeerAsync(slot(j, 0, g, slice), j, G[g].send + j * slice, g,
						       slice * sizeof(float), G[g].cs[j]));
	}
	for (int g = 0; g < ng; g++) {
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
	size_t maxpiece = 0;
	int ndev = 0, wrong = 0;
	unsigned long long *bad;

	for (int i = 1; i < argc; i++) {
		char *end;
		long v = strtol(argv[i], &end, 10);

		if (*end || v < 1 || v > 1024) {
			fprintf(stderr, "ce-allreduce: PIECE_MIB must be 1..1024, got '%s'\n", argv[i]);
			return 2;
		}
		pieces.push_back((size_t)v << 20);
	}
	pull = getenv("CE_PULL") && !strcmp(getenv("CE_PULL"), "1");
	if (pieces.empty())
		pieces = { 16ull << 20, 32ull << 20, 64ull << 20 };
	for (size_t p : pieces)
		maxpiece = p > maxpiece ? p : maxpiece;
	CK(cudaGetDeviceCount(&ndev));
	ng = 2;	/* default: the most GPUs, a power of two, up to 8 */
	while (ng * 2 <= ndev && ng * 2 <= MAXG)
		ng *= 2;
	if (getenv("CE_GPUS"))
		ng = atoi(getenv("CE_GPUS"));
	if (ng < 2 || ng > ndev || (ng & (ng - 1)) || ng > MAXG) {
		fprintf(stderr, "ce-allreduce: runs on 2, 4 or 8 GPUs (CE_GPUS=%d, %d found)\n", ng,
			ndev);
		return 2;
	}
	for (int g = 0; g < ng; g++)
		for (int j = 0; j < ng; j++) {
			int ok = 1;

			if (j != g)
				CK(cudaDeviceCanAccessPeer(&ok, g, j));
			if (!ok) {
				fprintf(stderr, "ce-allreduce: GPU %d cannot access GPU %d\n", g, j);
				return 2;
			}
		}
	for (int g = 0; g < ng; g++) {
		gpu &x = G[g];

		CK(cudaSetDevice(g));
		for (int j = 0; j < ng; j++)
			if (j != g)
				CK(cudaDeviceEnablePeerAccess(j, 0));
		CK(cudaMalloc(&x.send, 1ull << 30));
		CK(cudaMalloc(&x.recv, 1ull << 30));
		/* two parities of a slot per sender, a slice each: 2 x maxpiece */
		CK(cudaMalloc(&x.scratch, 2 * (maxpiece > (1ull << 30) / 2 ? maxpiece : (1ull << 30) / 2)));
		CK(cudaStreamCreateWithFlags(&x.rs, cudaStreamNonBlocking));
		for (int j = 0; j < ng; j++) {
			CK(cudaStreamCreateWithFlags(&x.cs[j], cudaStreamNonBlocking));
			CK(cudaStreamCreateWithFlags(&x.ag[j], cudaStreamNonBlocking));
			for (int k = 0; k < MAXP; k++)
				CK(cudaEventCreateWithFlags(&x.ev_rs[j][k], cudaEventDisableTiming));
		}
		for (int k = 0; k < MAXP; k++)
			CK(cudaEventCreateWithFlags(&x.ev_red[k], cudaEventDisableTiming));
		CK(cudaDeviceGetAttribute(&x.sms, cudaDevAttrMultiProcessorCount, g));
		fill<<<x.sms, 512>>>(x.send, (1ull << 30) / sizeof(float), g);
		CK(cudaDeviceSynchronize());
	}
	CK(cudaMallocManaged(&bad, sizeof(*bad)));
	printf("# ce-allreduce: %d GPUs, float sum, all-gather by %s; busbw = bytes / time x 2(n-1)/n;\n"
	       "# all-to-all = every GPU copying a slice to every other at once (copy engines), ideal = 2 x"
	       " that\n", ng, pull ? "pull" : "push");
	printf("%12s %9s %7s %11s %10s %14s %10s %8s\n", "bytes", "piece", "pieces", "time_us",
	       "busbw", "all-to-all_us", "ce GB/s", "ideal/t");
	for (size_t bytes : sizes) {
		const size_t n = bytes / sizeof(float);
		const int iters = bytes >= (1ull << 30) ? 10 : 30;
		const double a2a_us = time_us([&] { all_to_all(n); }, iters);
		const double factor = 2.0 * (ng - 1) / ng;

		for (size_t piece : pieces) {
			const size_t pc = piece / sizeof(float);

			if (piece > bytes || n % pc || pc % (4 * (size_t)ng) || n / pc > (size_t)MAXP)
				continue;
			for (int g = 0; g < ng; g++) {
				CK(cudaSetDevice(g));
				CK(cudaMemset(G[g].recv, 0xff, bytes));
			}
			allreduce(n, pc);
			for (int g = 0; g < ng; g++) {
				*bad = 0;
				CK(cudaSetDevice(g));
				check<<<G[g].sms, 512>>>(G[g].recv, n, ng, bad);
				CK(cudaDeviceSynchronize());
				if (*bad) {
					printf("# WRONG: GPU %d: %llu of %zu floats\n", g, *bad, n);
					wrong = 1;
				}
			}
			const double us = time_us([&] { allreduce(n, pc); }, iters);

			/* the all-to-all moves bytes / ng out of each GPU to each peer */
			printf("%12zu %9zu %7zu %11.1f %10.1f %14.1f %10.1f %8.3f\n", bytes, piece, n / pc, us,
			       bytes / us / 1e3 * factor, a2a_us, bytes / ng * (ng - 1) / a2a_us / 1e3,
			       2 * a2a_us / us);
		}
	}
	return wrong;
}
