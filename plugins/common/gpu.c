/* SPDX-License-Identifier: MIT */
/* One GPU for a plugin: memory, data kernels, timing, bandwidth matrix. */
#define _GNU_SOURCE
#include "gpu.h"

#include "../include/penny_data.h"
#include "kargs.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char *const data_type_names[PENNY_NDTYPES] = {
	"int8", "uint8", "int32", "uint32", "int64", "uint64", "half", "bfloat16", "float", "double",
};

void pn_gpu_log(const struct penny_host_v1 *h, int level, const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	if (!h || !h->log)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	h->log(h->ctx, level, buf);
}

int pn_gpu_check_args(size_t count, int dtype, int op)
{
	if (dtype < 0 || dtype >= PENNY_NDTYPES)
		return pn_plugin_fail(-EINVAL, "unknown data type %d", dtype);
	if (op < 0 || op >= PENNY_NREDOPS)
		return pn_plugin_fail(-EINVAL, "unknown reduction op %d", op);
	if (count > ((size_t)1 << 40))
		return pn_plugin_fail(-EINVAL, "count %zu is too large", count);
	return 0;
}

int pn_gpu_enter(struct pn_gpu *g)
{
	PN_CU(g->cu, CtxSetCurrent(g->ctx), "cuCtxSetCurrent");
	return 0;
}

static int load_data_module(struct pn_gpu *g, const void *image)
{
	char name[64];
	int i;

	PN_CU(g->cu, ModuleLoadData(&g->data_mod, image), "cuModuleLoadData (data kernels)");
	for (i = 0; i < PENNY_NDTYPES; i++) {
		snprintf(name, sizeof(name), "pn_fill_%s", data_type_names[i]);
		PN_CU(g->cu, ModuleGetFunction(&g->fill_fn[i], g->data_mod, name), name);
		snprintf(name, sizeof(name), "pn_check_%s", data_type_names[i]);
		PN_CU(g->cu, ModuleGetFunction(&g->check_fn[i], g->data_mod, name), name);
	}
	return 0;
}

int pn_gpu_open(struct pn_gpu *g, const struct penny_host_v1 *host, int device,
		const void *data_image)
{
	const struct pn_cudrv *cu;
	int n = 0, ret;

	memset(g, 0, sizeof(*g));
	g->host = host;
	if (host && host->timeout_ns)
		g->wait_ns = host->timeout_ns + PN_GPU_WAIT_GRACE_NS;
	cu = pn_cudrv_get();
	if (!cu)
		return -ENODEV;
	g->cu = cu;
	PN_CU(cu, Init(0), "cuInit");
	PN_CU(cu, DeviceGetCount(&n), "cuDeviceGetCount");
	if (n <= 0)
		return pn_plugin_fail(-ENODEV, "no CUDA device is visible");
	if (device < 0)
		device = (host ? host->local_rank : 0) % n;
	if (device >= n)
		return pn_plugin_fail(-ENODEV, "CUDA device %d does not exist (%d visible)", device, n);
	g->ordinal = device;
	PN_CU(cu, DeviceGet(&g->dev, device), "cuDeviceGet");
	PN_CU(cu, DeviceGetName(g->name, sizeof(g->name), g->dev), "cuDeviceGetName");
	PN_CU(cu, DeviceGetPCIBusId(g->busid, sizeof(g->busid), g->dev), "cuDeviceGetPCIBusId");
	PN_CU(cu, DeviceGetAttribute(&g->nsm, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, g->dev),
	      "cuDeviceGetAttribute");
	PN_CU(cu, DeviceGetAttribute(&g->cc_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, g->dev),
	      "cuDeviceGetAttribute");
	PN_CU(cu, DeviceGetAttribute(&g->cc_minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, g->dev),
	      "cuDeviceGetAttribute");
	PN_CU(cu, DriverGetVersion(&g->driver_version), "cuDriverGetVersion");
	PN_CU(cu, DevicePrimaryCtxRetain(&g->ctx, g->dev), "cuDevicePrimaryCtxRetain");
	PN_CU_GOTO(cu, CtxSetCurrent(g->ctx), "cuCtxSetCurrent", ret, fail);
	PN_CU_GOTO(cu, StreamCreate(&g->stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate", ret, fail);
	PN_CU_GOTO(cu, EventCreate(&g->ev0, CU_EVENT_DEFAULT), "cuEventCreate", ret, fail);
	PN_CU_GOTO(cu, EventCreate(&g->ev1, CU_EVENT_DEFAULT), "cuEventCreate", ret, fail);
	PN_CU_GOTO(cu, MemAlloc(&g->result, 16), "cuMemAlloc", ret, fail);
	if (data_image) {
		ret = load_data_module(g, data_image);
		if (ret)
			goto fail;
	}
	return 0;
fail:
	pn_gpu_close(g);
	return ret;
}

void pn_gpu_close(struct pn_gpu *g)
{
	const struct pn_cudrv *cu = g->cu;

	if (!cu || !g->ctx)
		return;
	cu->CtxSetCurrent(g->ctx);
	if (g->hung) {
		/* the stream's work may never end: every call below could wait
		 * for it (cuMemFree, cuStreamDestroy, the context's release);
		 * the process's exit frees what is left on the device */
		free(g->bev);
		g->bev = NULL;
		g->nbev = 0;
		g->ctx = NULL;
		return;
	}
	if (g->stream)
		cu->StreamSynchronize(g->stream);
	if (g->data_mod)
		cu->ModuleUnload(g->data_mod);
	if (g->result)
		cu->MemFree(g->result);
	for (int i = 0; i < g->nbev; i++)
		cu->EventDestroy(g->bev[i]);
	free(g->bev);
	g->bev = NULL;
	g->nbev = 0;
	if (g->ev1)
		cu->EventDestroy(g->ev1);
	if (g->ev0)
		cu->EventDestroy(g->ev0);
	if (g->stream)
		cu->StreamDestroy(g->stream);
	cu->DevicePrimaryCtxRelease(g->dev);
	g->ctx = NULL;
}

size_t pn_gpu_alloc_size(size_t bytes)
{
	const size_t page = (size_t)2 << 20;

	if (!bytes)
		return 1;
	if (bytes < page || bytes > SIZE_MAX - page)
		return bytes;
	return (bytes + page - 1) / page * page;
}

int pn_gpu_alloc(struct pn_gpu *g, size_t bytes, void **p)
{
	CUdeviceptr d = 0;

	PN_CU(g->cu, MemAlloc(&d, pn_gpu_alloc_size(bytes)), "cuMemAlloc");
	*p = (void *)(uintptr_t)d;
	return 0;
}

int pn_gpu_free(struct pn_gpu *g, void *p)
{
	if (!p || g->hung)	/* hung: the work may still use it; the exit frees it */
		return 0;
	PN_CU(g->cu, StreamSynchronize(g->stream), "cuStreamSynchronize");
	PN_CU(g->cu, MemFree((CUdeviceptr)(uintptr_t)p), "cuMemFree");
	return 0;
}

int pn_gpu_sync(struct pn_gpu *g)
{
	return pn_gpu_wait(g, g->stream, NULL, "cuStreamSynchronize");
}

static double host_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

void pn_gpu_kernel_timeout(struct pn_gpu *g, uint64_t kernel_ns)
{
	if (g->wait_ns && kernel_ns + PN_GPU_WAIT_GRACE_NS > g->wait_ns)
		g->wait_ns = kernel_ns + PN_GPU_WAIT_GRACE_NS;
}

int pn_gpu_wait(struct pn_gpu *g, CUstream s, CUevent ev, const char *what)
{
	const struct pn_cudrv *cu = g->cu;
	struct timespec nap = { 0, 10000 };
	double t0, el;
	CUresult r;

	if (g->hung)
		return pn_plugin_fail(-ETIMEDOUT, "%s: an earlier wait for this GPU timed out", what);
	if (!g->wait_ns || (ev ? !cu->EventQuery : !cu->StreamQuery)) {
		r = ev ? cu->EventSynchronize(ev) : cu->StreamSynchronize(s);
		return r == CUDA_SUCCESS ? 0 : pn_cu_fail(cu, r, what);
	}
	t0 = host_now_us();
	for (;;) {
		r = ev ? cu->EventQuery(ev) : cu->StreamQuery(s);
		if (r == CUDA_SUCCESS)
			return 0;
		if (r != CUDA_ERROR_NOT_READY)
			return pn_cu_fail(cu, r, what);
		el = host_now_us() - t0;
		if (el * 1e3 >= (double)g->wait_ns) {
			g->hung = 1;
			return pn_plugin_fail(-ETIMEDOUT, "the GPU's work has not finished after "
					      "%.3g s (the timeout and %.0f s): a kernel waits for a "
					      "peer that does not come, or the GPU is stuck (%s)",
					      el / 1e6, PN_GPU_WAIT_GRACE_NS / 1e9, what);
		}
		/* spin the first 100 us (a call's own wait), then back off to 1 ms */
		if (el > 100) {
			nanosleep(&nap, NULL);
			if (nap.tv_nsec < 1000000)
				nap.tv_nsec *= 2;
		}
	}
}

int pn_gpu_memcpy(struct pn_gpu *g, void *dst, const void *src, size_t bytes, int dir)
{
	const struct pn_cudrv *cu = g->cu;

	if (!bytes)
		return 0;
	switch (dir) {
	case PENNY_H2D:
		PN_CU(cu, StreamSynchronize(g->stream), "cuStreamSynchronize");
		PN_CU(cu, MemcpyHtoD((CUdeviceptr)(uintptr_t)dst, src, bytes), "cuMemcpyHtoD");
		/* from pageable memory cuMemcpyHtoD returns once the data is
		 * staged, before the DMA lands, on the legacy default stream
		 * (which our stream does not wait for, nor does a peer reading
		 * this memory over IPC after a host barrier): wait for it */
		PN_CU(cu, StreamSynchronize(NULL), "cuStreamSynchronize (default stream)");
		return 0;
	case PENNY_D2H:
		PN_CU(cu, StreamSynchronize(g->stream), "cuStreamSynchronize");
		PN_CU(cu, MemcpyDtoH(dst, (CUdeviceptr)(uintptr_t)src, bytes), "cuMemcpyDtoH");
		return 0;
	case PENNY_D2D:
		PN_CU(cu, MemcpyAsync((CUdeviceptr)(uintptr_t)dst, (CUdeviceptr)(uintptr_t)src, bytes,
				      g->stream),
		      "cuMemcpyAsync");
		return 0;
	}
	return pn_plugin_fail(-EINVAL, "unknown copy direction %d", dir);
}

int pn_gpu_export_dmabuf(struct pn_gpu *g, void *ptr, size_t bytes, int *fd, uint64_t *offset)
{
	const struct pn_cudrv *cu = g->cu;
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE), p = (uint64_t)(uintptr_t)ptr, base, end;
	int ok = 0, f = -1;
	CUresult r;

	if (!bytes)
		return pn_plugin_fail(-EINVAL, "nothing to export (0 bytes)");
	if (!cu->MemGetHandleForAddressRange)
		return pn_plugin_fail(-EOPNOTSUPP, "the CUDA driver has no cuMemGetHandleForAddressRange "
						   "(dma-buf export needs a CUDA 11.7 or newer driver)");
	if (cu->DeviceGetAttribute(&ok, CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED, g->dev) !=
		    CUDA_SUCCESS ||
	    !ok)
		return pn_plugin_fail(-EOPNOTSUPP, "%s (%s) cannot export dma-bufs (the driver reports "
						   "no DMA_BUF_SUPPORTED: open kernel modules and a "
						   "dma-buf capable kernel are needed)",
				      g->name, g->busid);
	/* the range must be whole host pages; allocations are 2 MiB aligned */
	base = p / page * page;
	end = (p + bytes + page - 1) / page * page;
	r = cu->MemGetHandleForAddressRange(&f, (CUdeviceptr)base, (size_t)(end - base),
					    CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0);
	if (r != CUDA_SUCCESS)
		return pn_cu_fail(cu, r, "cuMemGetHandleForAddressRange (dma-buf)");
	if (f < 0)
		return pn_plugin_fail(-EIO, "cuMemGetHandleForAddressRange gave no file descriptor");
	*fd = f;
	*offset = p - base;
	return 0;
}

int pn_gpu_poison(struct pn_gpu *g, void *buf, size_t bytes, int byte)
{
	if (!bytes)
		return 0;
	PN_CU(g->cu, MemsetD8Async((CUdeviceptr)(uintptr_t)buf, (unsigned char)byte, bytes, g->stream),
	      "cuMemsetD8Async");
	return 0;
}

int pn_gpu_launch(struct pn_gpu *g, CUfunction f, unsigned grid, unsigned block, void *args)
{
	void *params[1] = { args };

	PN_CU(g->cu, LaunchKernel(f, grid, 1, 1, block, 1, 1, 0, g->stream, params, NULL),
	      "cuLaunchKernel");
	return 0;
}

/*
 * Programmatic dependent launch: the kernel may be scheduled while the
 * previous one on the stream still runs, once every block of that one has
 * said so (griddepcontrol.launch_dependents); it must wait for it
 * (griddepcontrol.wait) before touching memory, and then sees all of its
 * writes, as in plain stream order.  Only the launch overlaps.  Without
 * cuLaunchKernelEx, a plain launch.
 */
int pn_gpu_launch_pdl(struct pn_gpu *g, CUfunction f, unsigned grid, unsigned block, void *args)
{
	void *params[1] = { args };
	CUlaunchAttribute at;
	CUlaunchConfig cfg;

	if (!g->cu->LaunchKernelEx)
		return pn_gpu_launch(g, f, grid, block, args);
	memset(&at, 0, sizeof(at));
	at.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
	at.value.programmaticStreamSerializationAllowed = 1;
	memset(&cfg, 0, sizeof(cfg));
	cfg.gridDimX = grid;
	cfg.gridDimY = cfg.gridDimZ = 1;
	cfg.blockDimX = block;
	cfg.blockDimY = cfg.blockDimZ = 1;
	cfg.hStream = g->stream;
	cfg.attrs = &at;
	cfg.numAttrs = 1;
	PN_CU(g->cu, LaunchKernelEx(&cfg, f, params, NULL), "cuLaunchKernelEx");
	return 0;
}

static unsigned data_grid(const struct pn_gpu *g, size_t count)
{
	size_t want = (count + 255) / 256;
	size_t cap = (size_t)(g->nsm > 0 ? g->nsm : 1) * 8;

	if (want < 1)
		want = 1;
	return (unsigned)(want < cap ? want : cap);
}

#define HOST_CHUNK ((size_t)16 << 20)

int pn_gpu_fill(struct pn_gpu *g, void *buf, size_t count, int dtype, int op, uint32_t seed,
		int rank)
{
	struct pn_testdata_args a;
	unsigned char *h;
	size_t es, done, i;
	int ret;

	ret = pn_gpu_check_args(count, dtype, op);
	if (ret || !count)
		return ret;
	if (g->data_mod) {
		memset(&a, 0, sizeof(a));
		a.ptr = (uint64_t)(uintptr_t)buf;
		a.count = count;
		a.seed = seed;
		a.rank = rank;
		a.op = op;
		return pn_gpu_launch(g, g->fill_fn[dtype], data_grid(g, count), 256, &a);
	}
	/* host fallback: compute in chunks, copy up */
	es = (size_t)penny_data_size(dtype);
	h = malloc(HOST_CHUNK);
	if (!h)
		return pn_plugin_fail(-ENOMEM, "out of memory");
	for (done = 0; done < count && !ret; done += HOST_CHUNK / es) {
		size_t n = count - done < HOST_CHUNK / es ? count - done : HOST_CHUNK / es;

		for (i = 0; i < n; i++) {
			uint64_t bits = penny_data_input_bits(dtype, op, seed, rank, done + i);

			memcpy(h + i * es, &bits, es);
		}
		ret = pn_gpu_memcpy(g, (char *)buf + done * es, h, n * es, PENNY_H2D);
	}
	free(h);
	return ret;
}

int pn_gpu_check(struct pn_gpu *g, const void *buf, size_t count, int dtype, int op,
		 uint32_t seed, int nranks, struct penny_check_v1 *res)
{
	struct pn_testdata_args a;
	uint64_t init[2] = { 0, count }, out[2];
	unsigned char *h;
	size_t es, done, i;
	int ret;

	res->wrong = 0;
	res->first_bad = count;
	ret = pn_gpu_check_args(count, dtype, op);
	if (ret || !count)
		return ret;
	if (nranks < 1)
		return pn_plugin_fail(-EINVAL, "check over %d ranks", nranks);
	if (g->data_mod) {
		ret = pn_gpu_memcpy(g, (void *)(uintptr_t)g->result, init, sizeof(init), PENNY_H2D);
		if (ret)
			return ret;
		memset(&a, 0, sizeof(a));
		a.ptr = (uint64_t)(uintptr_t)buf;
		a.count = count;
		a.result = g->result;
		a.seed = seed;
		a.nranks = nranks;
		a.op = op;
		ret = pn_gpu_launch(g, g->check_fn[dtype], data_grid(g, count), 256, &a);
		if (!ret)
			ret = pn_gpu_memcpy(g, out, (void *)(uintptr_t)g->result, sizeof(out), PENNY_D2H);
		if (ret)
			return ret;
		res->wrong = out[0];
		res->first_bad = out[0] ? out[1] : count;
		return 0;
	}
	es = (size_t)penny_data_size(dtype);
	h = malloc(HOST_CHUNK);
	if (!h)
		return pn_plugin_fail(-ENOMEM, "out of memory");
	for (done = 0; done < count; done += HOST_CHUNK / es) {
		size_t n = count - done < HOST_CHUNK / es ? count - done : HOST_CHUNK / es;

		ret = pn_gpu_memcpy(g, h, (const char *)buf + done * es, n * es, PENNY_D2H);
		if (ret)
			break;
		for (i = 0; i < n; i++) {
			uint64_t got = 0, want = penny_data_expected_bits(dtype, op, seed, nranks, done + i);

			memcpy(&got, h + i * es, es);
			if (got != want) {
				if (!res->wrong)
					res->first_bad = done + i;
				res->wrong++;
			}
		}
	}
	free(h);
	return ret;
}

/* Events for n timed blocks (n + 1 of them), made once and kept. */
static int block_events(struct pn_gpu *g, int n)
{
	CUevent *e;

	if (n + 1 <= g->nbev)
		return 0;
	e = realloc(g->bev, (size_t)(n + 1) * sizeof(*e));
	if (!e)
		return pn_plugin_fail(-ENOMEM, "out of memory");
	g->bev = e;
	while (g->nbev < n + 1) {
		PN_CU(g->cu, EventCreate(&g->bev[g->nbev], CU_EVENT_DEFAULT), "cuEventCreate");
		g->nbev++;
	}
	return 0;
}

/* The graph of t->graph calls, captured once and replayed once (the replay
 * is warm-up too). */
static int capture(struct pn_gpu *g, pn_gpu_enqueue_fn enqueue, void *ctx, int n, CUgraph *graph,
		   CUgraphExec *exec)
{
	const struct pn_cudrv *cu = g->cu;
	CUresult r = cu->StreamBeginCapture(g->stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
	int i, ret = 0;

	if (r != CUDA_SUCCESS)
		return pn_cu_fail(cu, r, "cuStreamBeginCapture");
	for (i = 0; i < n && !ret; i++)
		ret = enqueue(ctx);
	r = cu->StreamEndCapture(g->stream, graph);
	if (ret)
		return ret;
	if (r != CUDA_SUCCESS)
		return pn_cu_fail(cu, r, "cuStreamEndCapture");
	PN_CU(cu, GraphInstantiateWithFlags(exec, *graph, 0), "cuGraphInstantiate");
	PN_CU(cu, GraphLaunch(*exec, g->stream), "cuGraphLaunch");
	return pn_gpu_sync(g);
}

/* One block: iters calls (or whole graphs of them) between events a and b. */
static int block(struct pn_gpu *g, pn_gpu_enqueue_fn enqueue, void *ctx,
		 const struct penny_time_v1 *t, CUgraphExec exec, CUevent b, double *host_us)
{
	const struct pn_cudrv *cu = g->cu;
	double h0 = host_now_us();
	int i, ret = 0, launches = exec ? (t->iters + t->graph - 1) / t->graph : 0;

	for (i = 0; i < launches; i++)
		PN_CU(cu, GraphLaunch(exec, g->stream), "cuGraphLaunch");
	for (i = 0; !exec && i < t->iters && !ret; i++)
		ret = enqueue(ctx);
	*host_us += host_now_us() - h0;
	if (!ret)
		PN_CU(cu, EventRecord(b, g->stream), "cuEventRecord");
	return ret;
}

int pn_gpu_time(struct pn_gpu *g, pn_gpu_enqueue_fn enqueue, void *ctx, struct penny_time_v2 *t2)
{
	struct penny_time_v1 *t = &t2->t;
	const struct pn_cudrv *cu = g->cu;
	int blocks = 1, stamped = 0, i, ret = 0, per;
	CUgraph graph = NULL;
	CUgraphExec exec = NULL;
	double host = 0, total = 0;
	float ms = 0;

	if (t2->size < PENNY_TIME_V2_MIN_SIZE)
		return pn_plugin_fail(-EINVAL, "time2: struct of %u bytes, %zu needed", t2->size,
				      PENNY_TIME_V2_MIN_SIZE);
	if (t->iters <= 0 || t->warmup < 0 || t->graph < 0)
		return pn_plugin_fail(-EINVAL, "time: iters must be positive (got %d)", t->iters);
	if (t2->size >= sizeof(*t2) && t2->blocks > 0) {
		if (t2->blocks > PENNY_TIME_MAX_BLOCKS || !t2->block_usec)
			return pn_plugin_fail(-EINVAL, "time: %d blocks (1..%d, with room for them)",
					      t2->blocks, PENNY_TIME_MAX_BLOCKS);
		blocks = t2->blocks;
		stamped = 1;
	}
	ret = block_events(g, blocks);
	for (i = 0; i < t->warmup && !ret; i++)
		ret = enqueue(ctx);
	if (!ret)
		ret = pn_gpu_sync(g);
	if (!ret && t->graph > 0)
		ret = capture(g, enqueue, ctx, t->graph, &graph, &exec);
	if (ret)
		goto out;
	per = exec ? (t->iters + t->graph - 1) / t->graph * t->graph : t->iters;
	if (g->host && g->host->barrier) {
		ret = g->host->barrier(g->host->ctx);
		if (ret) {
			pn_plugin_fail(ret, "barrier before timing failed");
			goto out;
		}
	}
	PN_CU_GOTO(cu, EventRecord(g->bev[0], g->stream), "cuEventRecord", ret, out);
	for (i = 0; i < blocks && !ret; i++)
		ret = block(g, enqueue, ctx, t, exec, g->bev[i + 1], &host);
	if (ret)
		goto out;
	/* block by block: the bound is on a block's time, not the whole loop's */
	for (i = 1; i <= blocks && !ret; i++)
		ret = pn_gpu_wait(g, NULL, g->bev[i], "cuEventSynchronize (a timed block)");
	if (ret)
		goto out;
	for (i = 0; i < blocks; i++) {
		PN_CU_GOTO(cu, EventElapsedTime(&ms, g->bev[i], g->bev[i + 1]), "cuEventElapsedTime",
			   ret, out);
		total += (double)ms * 1000.0;
		if (stamped)
			t2->block_usec[i] = (double)ms * 1000.0 / per;
	}
	t->iters_run = per;
	t->usec = total / ((double)per * blocks);
	t2->host_usec = host / ((double)per * blocks);
	if (t2->size >= sizeof(*t2))
		t2->blocks_run = stamped ? blocks : 0;
out:
	if (exec && !g->hung)	/* a graph that may still run is left to the exit */
		cu->GraphExecDestroy(exec);
	if (graph && !g->hung)
		cu->GraphDestroy(graph);
	return ret;
}

/* ---- bandwidth / latency matrix ---- */

/* a copy rate is the median of this many timed blocks (fewer with fewer copies) */
#define PN_BW_BLOCKS 5

struct bw_dev {
	CUdevice dev;
	CUcontext ctx;
	CUstream s;
	CUevent e0, e1, ex;
	CUevent eb[PN_BW_BLOCKS + 1];	/* the ends of back-to-back timed blocks */
	CUdeviceptr src, dst;
	CUmodule mod;
	CUfunction copy, chase;
	int nsm;
};

static int bw_setup(const struct pn_cudrv *cu, struct bw_dev *d, int i, size_t bytes,
		    const void *image)
{
	PN_CU(cu, DeviceGet(&d->dev, i), "cuDeviceGet");
	PN_CU(cu, DevicePrimaryCtxRetain(&d->ctx, d->dev), "cuDevicePrimaryCtxRetain");
	PN_CU(cu, CtxSetCurrent(d->ctx), "cuCtxSetCurrent");
	PN_CU(cu, DeviceGetAttribute(&d->nsm, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, d->dev),
	      "cuDeviceGetAttribute");
	PN_CU(cu, StreamCreate(&d->s, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
	PN_CU(cu, EventCreate(&d->e0, CU_EVENT_DEFAULT), "cuEventCreate");
	PN_CU(cu, EventCreate(&d->e1, CU_EVENT_DEFAULT), "cuEventCreate");
	PN_CU(cu, EventCreate(&d->ex, CU_EVENT_DEFAULT), "cuEventCreate");
	for (int b = 0; b <= PN_BW_BLOCKS; b++)
		PN_CU(cu, EventCreate(&d->eb[b], CU_EVENT_DEFAULT), "cuEventCreate");
	PN_CU(cu, MemAlloc(&d->src, bytes), "cuMemAlloc");
	PN_CU(cu, MemAlloc(&d->dst, bytes), "cuMemAlloc");
	PN_CU(cu, MemsetD8Async(d->src, 0x5a, bytes, d->s), "cuMemsetD8Async");
	if (image) {
		PN_CU(cu, ModuleLoadData(&d->mod, image), "cuModuleLoadData");
		PN_CU(cu, ModuleGetFunction(&d->copy, d->mod, "pn_copy_sm"), "pn_copy_sm");
		PN_CU(cu, ModuleGetFunction(&d->chase, d->mod, "pn_chase"), "pn_chase");
	}
	return 0;
}

static void bw_release(const struct pn_cudrv *cu, struct bw_dev *d)
{
	if (!d->ctx)
		return;
	cu->CtxSetCurrent(d->ctx);
	if (d->s)
		cu->StreamSynchronize(d->s);
	if (d->mod)
		cu->ModuleUnload(d->mod);
	if (d->src)
		cu->MemFree(d->src);
	if (d->dst)
		cu->MemFree(d->dst);
	for (int b = 0; b <= PN_BW_BLOCKS; b++)
		if (d->eb[b])
			cu->EventDestroy(d->eb[b]);
	if (d->e0)
		cu->EventDestroy(d->e0);
	if (d->e1)
		cu->EventDestroy(d->e1);
	if (d->ex)
		cu->EventDestroy(d->ex);
	if (d->s)
		cu->StreamDestroy(d->s);
	cu->DevicePrimaryCtxRelease(d->dev);
}

/* One transfer from a to b (dst of b), enqueued on a's stream. */
static int bw_one(const struct pn_cudrv *cu, const struct penny_bw_v1 *q, struct bw_dev *a,
		  CUdeviceptr dst, size_t bytes)
{
	PN_CU(cu, CtxSetCurrent(a->ctx), "cuCtxSetCurrent");
	if (q->engine == PENNY_BW_SM) {
		struct pn_copy_args ca = { dst, a->src, bytes };
		void *params[1] = { &ca };
		unsigned grid = (unsigned)a->nsm * 2;

		PN_CU(cu, LaunchKernel(a->copy, grid, 1, 1, 512, 1, 1, 0, a->s, params, NULL),
		      "cuLaunchKernel");
		return 0;
	}
	PN_CU(cu, MemcpyAsync(dst, a->src, bytes, a->s), "cuMemcpyAsync");
	return 0;
}

/* The median of n values (n <= PN_BW_BLOCKS), which it sorts. */
static double bw_median(double *v, int n)
{
	int i, j;

	for (i = 1; i < n; i++)
		for (j = i; j > 0 && v[j - 1] > v[j]; j--) {
			double t = v[j];

			v[j] = v[j - 1];
			v[j - 1] = t;
		}
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* iters copies in at most PN_BW_BLOCKS blocks: a rate is never one block */
static int bw_blocks(int iters)
{
	return iters < PN_BW_BLOCKS ? iters : PN_BW_BLOCKS;
}

/* One timed block of per transfers from a to b (b's stream joins in for
 * bidirectional); the warm-up is a block too. */
static int bw_block(const struct pn_cudrv *cu, const struct penny_bw_v1 *q, struct bw_dev *a,
		    struct bw_dev *b, CUdeviceptr chain, size_t bytes, int per, float *ms)
{
	int it, ret;

	PN_CU(cu, CtxSetCurrent(a->ctx), "cuCtxSetCurrent");
	PN_CU(cu, StreamSynchronize(a->s), "cuStreamSynchronize");
	if (q->bidir && b != a) {
		PN_CU(cu, CtxSetCurrent(b->ctx), "cuCtxSetCurrent");
		PN_CU(cu, StreamSynchronize(b->s), "cuStreamSynchronize");
		PN_CU(cu, CtxSetCurrent(a->ctx), "cuCtxSetCurrent");
	}
	PN_CU(cu, EventRecord(a->e0, a->s), "cuEventRecord");
	if (q->bidir && b != a) {
		PN_CU(cu, CtxSetCurrent(b->ctx), "cuCtxSetCurrent");
		PN_CU(cu, StreamWaitEvent(b->s, a->e0, 0), "cuStreamWaitEvent");
	}
	for (it = 0; it < per; it++) {
		if (q->what == PENNY_BW_LATENCY && q->engine == PENNY_BW_SM) {
			struct pn_chase_args ch = { chain, a->src, 1000, 0 };
			void *params[1] = { &ch };

			PN_CU(cu, CtxSetCurrent(a->ctx), "cuCtxSetCurrent");
			PN_CU(cu, LaunchKernel(a->chase, 1, 1, 1, 32, 1, 1, 0, a->s, params, NULL),
			      "cuLaunchKernel");
			continue;
		}
		ret = bw_one(cu, q, a, b->dst, bytes);
		if (!ret && q->bidir && b != a)
			ret = bw_one(cu, q, b, a->dst, bytes);
		if (ret)
			return ret;
	}
	if (q->bidir && b != a) {
		PN_CU(cu, CtxSetCurrent(b->ctx), "cuCtxSetCurrent");
		PN_CU(cu, EventRecord(b->ex, b->s), "cuEventRecord");
		PN_CU(cu, CtxSetCurrent(a->ctx), "cuCtxSetCurrent");
		PN_CU(cu, StreamWaitEvent(a->s, b->ex, 0), "cuStreamWaitEvent");
	}
	PN_CU(cu, CtxSetCurrent(a->ctx), "cuCtxSetCurrent");
	PN_CU(cu, EventRecord(a->e1, a->s), "cuEventRecord");
	PN_CU(cu, EventSynchronize(a->e1), "cuEventSynchronize");
	PN_CU(cu, EventElapsedTime(ms, a->e0, a->e1), "cuEventElapsedTime");
	return 0;
}

/* A cell's figure from the time of per transfers of bytes. */
static double bw_figure(const struct penny_bw_v1 *q, size_t bytes, int per, int both, float ms)
{
	if (q->what == PENNY_BW_LATENCY)
		return ms * 1000.0 / per / (q->engine == PENNY_BW_SM ? 1000.0 : 1.0);
	return ms > 0 ? (double)bytes * per * (both ? 2 : 1) / (ms * 1e-3) / 1e9 : 0;
}

/* One direction: the warm-up block waited for, then the timed blocks
 * enqueued back to back on a's stream, each between two events. */
static int bw_cell_b2b(const struct pn_cudrv *cu, const struct penny_bw_v1 *q, struct bw_dev *a,
		       struct bw_dev *b, CUdeviceptr chain, size_t bytes, int iters, double *out)
{
	int nb = bw_blocks(iters), blk, it, per, ret;
	double v[PN_BW_BLOCKS];
	float ms = 0;

	ret = bw_block(cu, q, a, b, chain, bytes, 1, &ms);
	if (ret)
		return ret;
	PN_CU(cu, CtxSetCurrent(a->ctx), "cuCtxSetCurrent");
	PN_CU(cu, EventRecord(a->eb[0], a->s), "cuEventRecord");
	for (blk = 0; blk < nb; blk++) {
		per = iters / nb + (blk < iters % nb);
		for (it = 0; it < per; it++) {
			if (q->what == PENNY_BW_LATENCY && q->engine == PENNY_BW_SM) {
				struct pn_chase_args ch = { chain, a->src, 1000, 0 };
				void *params[1] = { &ch };

				PN_CU(cu, LaunchKernel(a->chase, 1, 1, 1, 32, 1, 1, 0, a->s, params,
						       NULL), "cuLaunchKernel");
			} else if ((ret = bw_one(cu, q, a, b->dst, bytes))) {
				return ret;
			}
		}
		PN_CU(cu, EventRecord(a->eb[blk + 1], a->s), "cuEventRecord");
	}
	PN_CU(cu, EventSynchronize(a->eb[nb]), "cuEventSynchronize");
	for (blk = 0; blk < nb; blk++) {
		per = iters / nb + (blk < iters % nb);
		PN_CU(cu, EventElapsedTime(&ms, a->eb[blk], a->eb[blk + 1]), "cuEventElapsedTime");
		v[blk] = bw_figure(q, bytes, per, 0, ms);
	}
	*out = bw_median(v, nb);
	return 0;
}

/* A cell: warm up, then iters transfers in blocks (bw_blocks), the median
 * block's figure (both directions at once: each block waited for). */
static int bw_cell(const struct pn_cudrv *cu, const struct penny_bw_v1 *q, struct bw_dev *a,
		   struct bw_dev *b, CUdeviceptr chain, double *out)
{
	int iters = q->iters > 0 ? q->iters : 10, nb = bw_blocks(iters), blk, per, ret;
	size_t bytes = q->what == PENNY_BW_LATENCY ? 4 : (size_t)q->bytes;
	double v[PN_BW_BLOCKS];
	float ms = 0;

	if (!(q->bidir && b != a))
		return bw_cell_b2b(cu, q, a, b, chain, bytes, iters, out);
	for (blk = -1; blk < nb; blk++) {
		per = blk < 0 ? 1 : iters / nb + (blk < iters % nb);
		ret = bw_block(cu, q, a, b, chain, bytes, per, &ms);
		if (ret)
			return ret;
		if (blk < 0)
			continue;
		v[blk] = bw_figure(q, bytes, per, 1, ms);
	}
	*out = bw_median(v, nb);
	return 0;
}

/* A pointer-chasing cycle over 4096 entries 128 bytes apart, in dev's memory. */
static int bw_chain(const struct pn_cudrv *cu, struct bw_dev *d, CUdeviceptr *chain)
{
	enum { N = 4096, STRIDE = 16 /* uint64 entries per 128 bytes */ };
	uint64_t *h = calloc((size_t)N * STRIDE, sizeof(uint64_t));
	uint32_t perm[N], i, x = 2463534242u;

	if (!h)
		return pn_plugin_fail(-ENOMEM, "out of memory");
	for (i = 0; i < N; i++)
		perm[i] = i;
	for (i = N - 1; i > 0; i--) { /* Sattolo: one cycle through all entries */
		uint32_t j, t;

		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		j = x % i;
		t = perm[i];
		perm[i] = perm[j];
		perm[j] = t;
	}
	for (i = 0; i < N; i++)
		h[(size_t)i * STRIDE] = (uint64_t)perm[i] * STRIDE; /* next entry, in uint64 units */
	*chain = d->dst;
	PN_CU(cu, CtxSetCurrent(d->ctx), "cuCtxSetCurrent");
	if (cu->MemcpyHtoD(d->dst, h, (size_t)N * STRIDE * 8) != CUDA_SUCCESS ||
	    cu->StreamSynchronize(NULL) != CUDA_SUCCESS) { /* the DMA has landed */
		free(h);
		return pn_plugin_fail(-EIO, "cannot write the latency chain");
	}
	free(h);
	return 0;
}


/* The visible devices for a matrix, at most PENNY_BW_MAX_DEV of them. */
static int bw_devices(const struct pn_cudrv *cu, int *n)
{
	PN_CU(cu, Init(0), "cuInit");
	PN_CU(cu, DeviceGetCount(n), "cuDeviceGetCount");
	if (*n <= 0)
		return pn_plugin_fail(-ENODEV, "no CUDA device is visible");
	if (*n > PENNY_BW_MAX_DEV)
		*n = PENNY_BW_MAX_DEV;
	return 0;
}

int pn_gpu_bw(const void *image, struct penny_bw_v1 *q)
{
	const struct pn_cudrv *cu = pn_cudrv_get();
	struct bw_dev d[PENNY_BW_MAX_DEV];
	size_t bytes;
	int n = 0, i, j, ret = 0;

	if (!cu)
		return -ENODEV;
	if (q->engine == PENNY_BW_SM && !image)
		return pn_plugin_fail(-ENOTSUP, "SM copies need the plugin's kernels (built without nvcc)");
	bytes = q->what == PENNY_BW_LATENCY ? ((size_t)4096 * 128) : (size_t)q->bytes;
	if (bytes < 4096)
		bytes = 4096;
	memset(d, 0, sizeof(d));
	ret = bw_devices(cu, &n);
	if (ret)
		return ret;
	q->ndev = n;
	for (i = 0; i < n && !ret; i++) {
		ret = bw_setup(cu, &d[i], i, bytes, image);
		if (!ret && cu->DeviceGetName(q->name[i], sizeof(q->name[i]), d[i].dev) != CUDA_SUCCESS)
			snprintf(q->name[i], sizeof(q->name[i]), "GPU %d", i);
	}
	for (i = 0; i < n && !ret; i++)
		for (j = 0; j < n && !ret; j++) {
			int can = 0;
			CUresult r;

			if (i == j)
				continue;
			cu->DeviceCanAccessPeer(&can, d[i].dev, d[j].dev);
			if (!can)
				continue;
			cu->CtxSetCurrent(d[i].ctx);
			r = cu->CtxEnablePeerAccess(d[j].ctx, 0);
			if (r != CUDA_SUCCESS && r != CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED)
				ret = pn_cu_fail(cu, r, "cuCtxEnablePeerAccess");
		}
	for (i = 0; i < n && !ret; i++)
		for (j = 0; j < n && !ret; j++) {
			CUdeviceptr chain = 0;

			if (q->what == PENNY_BW_LATENCY && q->engine == PENNY_BW_SM)
				ret = bw_chain(cu, &d[j], &chain);
			if (!ret)
				ret = bw_cell(cu, q, &d[i], &d[j], chain, &q->value[i * n + j]);
		}
	for (i = 0; i < n; i++)
		bw_release(cu, &d[i]);
	return ret;
}

/* ---- host<->device bandwidth ---- */

/* iters copies between the page-locked host buffer and d's memory after
 * one warm-up copy, in blocks (bw_blocks) enqueued back to back, each
 * between two events: the median block's rate, so a stall of the host
 * does not fail a link, and no block pays for the host's launch. */
static int hostbw_dir(const struct pn_cudrv *cu, struct bw_dev *d, void *host, size_t bytes,
		      int iters, int h2d, double *out)
{
	double rate[PN_BW_BLOCKS];
	int nb = bw_blocks(iters), b, it, per;
	float ms = 0;

	PN_CU(cu, CtxSetCurrent(d->ctx), "cuCtxSetCurrent");
	for (b = -1; b < nb; b++) {
		/* block -1: the warm-up copy, waited for */
		per = b < 0 ? 1 : iters / nb + (b < iters % nb);
		if (b <= 0)
			PN_CU(cu, EventRecord(d->eb[0], d->s), "cuEventRecord");
		for (it = 0; it < per; it++) {
			if (h2d)
				PN_CU(cu, MemcpyHtoDAsync(d->dst, host, bytes, d->s),
				      "cuMemcpyHtoDAsync");
			else
				PN_CU(cu, MemcpyDtoHAsync(host, d->src, bytes, d->s),
				      "cuMemcpyDtoHAsync");
		}
		if (b < 0)
			PN_CU(cu, StreamSynchronize(d->s), "cuStreamSynchronize");
		else
			PN_CU(cu, EventRecord(d->eb[b + 1], d->s), "cuEventRecord");
	}
	PN_CU(cu, EventSynchronize(d->eb[nb]), "cuEventSynchronize");
	for (b = 0; b < nb; b++) {
		per = iters / nb + (b < iters % nb);
		PN_CU(cu, EventElapsedTime(&ms, d->eb[b], d->eb[b + 1]), "cuEventElapsedTime");
		rate[b] = ms > 0 ? (double)bytes * per / (ms * 1e-3) / 1e9 : 0;
	}
	*out = bw_median(rate, nb);
	return 0;
}

int pn_gpu_driver_version(int *version)
{
	const struct pn_cudrv *cu = pn_cudrv_get();

	*version = 0;
	if (!cu)
		return -ENODEV;
	PN_CU(cu, DriverGetVersion(version), "cuDriverGetVersion");
	return 0;
}

int pn_gpu_hostbw(struct penny_hostbw_v1 *q)
{
	const struct pn_cudrv *cu = pn_cudrv_get();
	struct bw_dev d[PENNY_BW_MAX_DEV];
	size_t bytes = (size_t)q->bytes;
	int n = 0, i, ret = 0, iters = q->iters > 0 ? q->iters : 10;
	void *host = NULL;
	CUresult r;

	if (!cu)
		return -ENODEV;
	if (!cu->MemHostAlloc || !cu->MemFreeHost || !cu->MemcpyHtoDAsync || !cu->MemcpyDtoHAsync)
		return pn_plugin_fail(-ENOTSUP, "the CUDA driver lacks cuMemHostAlloc or the "
						"async host copies (driver too old)");
	if (bytes < 4096)
		bytes = 4096;
	memset(d, 0, sizeof(d));
	ret = bw_devices(cu, &n);
	if (ret)
		return ret;
	q->ndev = n;
	q->pinned = 0;
	for (i = 0; i < n && !ret; i++) {
		ret = bw_setup(cu, &d[i], i, bytes, NULL);
		if (!ret && cu->DeviceGetName(q->name[i], sizeof(q->name[i]), d[i].dev) != CUDA_SUCCESS)
			snprintf(q->name[i], sizeof(q->name[i]), "GPU %d", i);
		if (!ret && cu->DeviceGetPCIBusId(q->busid[i], sizeof(q->busid[i]), d[i].dev) !=
				    CUDA_SUCCESS)
			q->busid[i][0] = 0;
	}
	if (!ret) {
		/* portable: page-locked for every context, one buffer for all */
		r = cu->MemHostAlloc(&host, bytes, CU_MEMHOSTALLOC_PORTABLE);
		if (r != CUDA_SUCCESS) {
			host = NULL;
			ret = pn_cu_fail(cu, r, "cuMemHostAlloc");
		}
	}
	if (!ret) {
		q->pinned = 1;
		memset(host, 0x5a, bytes);
	}
	for (i = 0; i < n && !ret; i++) {
		ret = hostbw_dir(cu, &d[i], host, bytes, iters, 1, &q->h2d[i]);
		if (!ret)
			ret = hostbw_dir(cu, &d[i], host, bytes, iters, 0, &q->d2h[i]);
	}
	for (i = 0; i < n; i++)
		bw_release(cu, &d[i]);
	if (host)
		cu->MemFreeHost(host);
	return ret;
}

int pn_gpu_be_memcpy(void *be, void *dst, const void *src, size_t bytes, int dir)
{
	struct pn_gpu *g = be;
	int ret = pn_gpu_enter(g);

	return ret ? ret : pn_gpu_memcpy(g, dst, src, bytes, dir);
}

int pn_gpu_be_poison(void *be, void *buf, size_t bytes, int byte)
{
	struct pn_gpu *g = be;
	int ret = pn_gpu_enter(g);

	return ret ? ret : pn_gpu_poison(g, buf, bytes, byte);
}

int pn_gpu_be_fill(void *be, void *buf, size_t count, int dtype, int op, uint32_t seed, int rank)
{
	struct pn_gpu *g = be;
	int ret = pn_gpu_enter(g);

	return ret ? ret : pn_gpu_fill(g, buf, count, dtype, op, seed, rank);
}

int pn_gpu_be_check(void *be, const void *buf, size_t count, int dtype, int op, uint32_t seed,
		    int nranks, struct penny_check_v1 *res)
{
	struct pn_gpu *g = be;
	int ret = pn_gpu_enter(g);

	return ret ? ret : pn_gpu_check(g, buf, count, dtype, op, seed, nranks, res);
}

int pn_gpu_be_sync(void *be)
{
	struct pn_gpu *g = be;
	int ret = pn_gpu_enter(g);

	if (!ret)
		ret = pn_gpu_sync(g);
	return ret ? ret : g->hooks->errors(be);
}

/* The timing loop on enqueue, then the backend's errors. */
static int be_time(void *be, struct penny_time_v2 *t, pn_gpu_enqueue_fn enqueue, void *arg)
{
	struct pn_gpu *g = be;
	int ret = pn_gpu_enter(g);

	if (!ret)
		ret = pn_gpu_time(g, enqueue, arg, t);
	return ret ? ret : g->hooks->errors(be);
}

/* One allreduce() of the call a time()/time2() describes. */
struct be_call {
	void *be;
	const struct penny_time_v1 *t;
};

static int be_one(void *arg)
{
	const struct be_call *x = arg;
	const struct pn_gpu *g = x->be;

	return g->hooks->allreduce(x->be, x->t->send, x->t->recv, x->t->count, x->t->dtype,
				   x->t->op, x->t->algo);
}

int pn_gpu_be_time(void *be, struct penny_time_v1 *t)
{
	struct penny_time_v2 t2;
	struct be_call x = { be, t };
	int ret;

	memset(&t2, 0, sizeof(t2));
	t2.size = (uint32_t)PENNY_TIME_V2_MIN_SIZE;
	t2.t = *t;
	x.t = &t2.t;
	ret = be_time(be, &t2, be_one, &x);
	*t = t2.t;
	return ret;
}

int pn_gpu_be_time2(void *be, struct penny_time_v2 *t)
{
	struct be_call x = { be, &t->t };

	return be_time(be, t, be_one, &x);
}

int pn_gpu_be_time_fn(void *be, struct penny_time_v2 *t, int (*enqueue)(void *), void *arg)
{
	return be_time(be, t, enqueue, arg);
}

int pn_gpu_entry_driver_version(int *version)
{
	pn_plugin_clear_error();
	return pn_gpu_driver_version(version);
}

int pn_gpu_entry_hostbw(struct penny_hostbw_v1 *req)
{
	pn_plugin_clear_error();
	return pn_gpu_hostbw(req);
}
