/* SPDX-License-Identifier: MIT */
/*
 * What both GPU plugins share: one device (primary context, one stream),
 * device memory, the fill/check kernels (or a host fallback when the plugin
 * was built without nvcc), the timing loop with CUDA events and graph
 * capture, and the GPU-to-GPU bandwidth matrix.
 */
#ifndef PENNY_GPU_H
#define PENNY_GPU_H

#include "../include/penny_plugin.h"
#include "cudrv.h"

struct pn_gpu;

/*
 * What a backend adds to the host code every plugin shares (the pn_gpu_be_*
 * entry points below take a backend whose struct begins with its struct
 * pn_gpu, hooks set after pn_gpu_open): its allreduce() and the errors its
 * kernels or library recorded, read once the stream is idle.
 */
struct pn_gpu_hooks {
	int (*allreduce)(void *be, const void *send, void *recv, size_t count, int dtype, int op,
			 int algo);
	int (*errors)(void *be);	/* 0, or the first error (errmsg set) */
};

struct pn_gpu {
	const struct pn_gpu_hooks *hooks;
	const struct pn_cudrv *cu;
	const struct penny_host_v1 *host;
	int ordinal;
	CUdevice dev;
	CUcontext ctx;
	CUstream stream;
	CUevent ev0, ev1;
	CUevent *bev;		/* the timed blocks' events (pn_gpu_time), nbev of them */
	int nbev;
	int nsm, cc_major, cc_minor, driver_version;
	char name[96], busid[32];
	CUmodule data_mod;	/* NULL: fill/check on the host */
	CUfunction fill_fn[PENNY_NDTYPES], check_fn[PENNY_NDTYPES];
	CUdeviceptr result;	/* check: uint64_t[2] */
	/* the longest wait on the GPU's work (pn_gpu_wait): the core's timeout
	 * plus PN_GPU_WAIT_GRACE_NS; 0: unbounded (no timeout given) */
	uint64_t wait_ns;
	int hung;		/* a wait timed out: the GPU's work may never end */
};

#define PN_GPU_WAIT_GRACE_NS 2000000000ull

/* device < 0: host->local_rank modulo the visible devices.  data_image: the
 * fatbin of data_kernels.cu, or NULL. */
int pn_gpu_open(struct pn_gpu *g, const struct penny_host_v1 *host, int device,
		const void *data_image);
void pn_gpu_close(struct pn_gpu *g);
/* Make the device's context current to the calling thread. */
int pn_gpu_enter(struct pn_gpu *g);

/*
 * The size to allocate for bytes: from 2 MiB up, whole 2 MiB pages.  A
 * peer's copy engine writes into an allocation of 512 MiB + 4 KiB at 330
 * GB/s and into one of 1 GiB at 386 (2 x H200, results/2026-11-30-h200x2,
 * s58-ce-alloc-size.txt): an allocation that ends inside a 2 MiB page is
 * mapped with smaller pages, it seems, everywhere.
 */
size_t pn_gpu_alloc_size(size_t bytes);
int pn_gpu_alloc(struct pn_gpu *g, size_t bytes, void **p);
int pn_gpu_free(struct pn_gpu *g, void *p);
int pn_gpu_memcpy(struct pn_gpu *g, void *dst, const void *src, size_t bytes, int dir);
/* penny_plugin_v1.export_dmabuf on this device. */
int pn_gpu_export_dmabuf(struct pn_gpu *g, void *ptr, size_t bytes, int *fd, uint64_t *offset);
int pn_gpu_poison(struct pn_gpu *g, void *buf, size_t bytes, int byte);
int pn_gpu_fill(struct pn_gpu *g, void *buf, size_t count, int dtype, int op, uint32_t seed,
		int rank);
int pn_gpu_check(struct pn_gpu *g, const void *buf, size_t count, int dtype, int op,
		 uint32_t seed, int nranks, struct penny_check_v1 *res);
int pn_gpu_sync(struct pn_gpu *g);
/* Wait for the work on stream s (ev NULL) or for event ev, no longer than
 * g->wait_ns: past it -ETIMEDOUT, the message naming what, and g->hung set
 * (pn_gpu_close then skips the calls that would wait for that work). */
int pn_gpu_wait(struct pn_gpu *g, CUstream s, CUevent ev, const char *what);
/* A plugin whose kernels time out by themselves (after kernel_ns) raises
 * wait_ns to that plus the grace, so that the kernel's message (which names
 * the peer) comes first.  A wait without a bound stays without one. */
void pn_gpu_kernel_timeout(struct pn_gpu *g, uint64_t kernel_ns);
int pn_gpu_launch(struct pn_gpu *g, CUfunction f, unsigned grid, unsigned block, void *args);
/* The same with programmatic dependent launch (gpu.c); a plain launch where
 * the driver lacks cuLaunchKernelEx. */
int pn_gpu_launch_pdl(struct pn_gpu *g, CUfunction f, unsigned grid, unsigned block, void *args);

/*
 * The timing loop of time(), time2() and time_fn() (penny_time_v2's rule):
 * enqueue() adds one call.  The warm-up, the graph captured once (-G), a
 * host barrier, then t's blocks (those its size covers; one otherwise) back
 * to back on the stream between events.
 */
typedef int (*pn_gpu_enqueue_fn)(void *ctx);
int pn_gpu_time(struct pn_gpu *g, pn_gpu_enqueue_fn enqueue, void *ctx, struct penny_time_v2 *t);

/* penny_plugin_v1.bw over every visible device. */
int pn_gpu_bw(const void *data_image, struct penny_bw_v1 *req);
/* penny_plugin_v1.hostbw over every visible device (page-locked host memory). */
int pn_gpu_hostbw(struct penny_hostbw_v1 *req);
/* cuDriverGetVersion through the run-time loaded driver (no cuInit). */
int pn_gpu_driver_version(int *version);

/*
 * penny_plugin_v1.memcpy, poison, fill and check for a backend whose
 * struct begins with its struct pn_gpu (the cuda, nccl and nvshmem
 * plugins'): the device's context made current, then the pn_gpu_* call.
 */
int pn_gpu_be_memcpy(void *be, void *dst, const void *src, size_t bytes, int dir);
int pn_gpu_be_poison(void *be, void *buf, size_t bytes, int byte);
int pn_gpu_be_fill(void *be, void *buf, size_t count, int dtype, int op, uint32_t seed, int rank);
int pn_gpu_be_check(void *be, const void *buf, size_t count, int dtype, int op, uint32_t seed,
		    int nranks, struct penny_check_v1 *res);
/* sync, time, time2 and time_fn of such a backend through its hooks: the
 * context made current, the work (the timing loop on hooks->allreduce or the
 * caller's enqueue), then hooks->errors. */
int pn_gpu_be_sync(void *be);
int pn_gpu_be_time(void *be, struct penny_time_v1 *t);
int pn_gpu_be_time2(void *be, struct penny_time_v2 *t);
int pn_gpu_be_time_fn(void *be, struct penny_time_v2 *t, int (*enqueue)(void *), void *arg);
/* The entry points that need no backend, with the calling thread's error
 * cleared first (penny_plugin_v1.driver_version, hostbw). */
int pn_gpu_entry_driver_version(int *version);
int pn_gpu_entry_hostbw(struct penny_hostbw_v1 *req);

/*
 * The members of penny_plugin_v1 that every GPU plugin's table (its
 * *_entry.c) takes from the code above: the ABI and size, the error text,
 * the data calls, sync and the timing.  The table adds its own name,
 * version, algorithms, capabilities and backend calls after it.
 */
#define PN_GPU_ENTRY_COMMON                                                                        \
	.abi = PENNY_PLUGIN_ABI_V1, .size = sizeof(struct penny_plugin_v1),                        \
	.errmsg = pn_plugin_errmsg, .memcpy = pn_gpu_be_memcpy, .poison = pn_gpu_be_poison,         \
	.fill = pn_gpu_be_fill, .check = pn_gpu_be_check, .time = pn_gpu_be_time,                 \
	.sync = pn_gpu_be_sync, .time2 = pn_gpu_be_time2, .hostbw = pn_gpu_entry_hostbw

/* Checks shared by the plugins' entry points. */
int pn_gpu_check_args(size_t count, int dtype, int op);

void pn_gpu_log(const struct penny_host_v1 *h, int level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif
