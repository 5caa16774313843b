/* SPDX-License-Identifier: MIT */
/*
 * A libcuda.so.1 for tests of the NCCL interposer on machines without a
 * GPU: "device" memory is host memory (cuMemAlloc is malloc, copies are
 * memmove, streams do everything at once, but for the test plugin's
 * queued calls, fakecuda_sync_hook; a destroyed stream's handle fails), so that the fake NCCL
 * (fakenccl.c) and the test plugins work on the pointers it hands out.
 * Every other entry point plugins/common/cudrv.c resolves exists and fails
 * with CUDA_ERROR_NOT_SUPPORTED.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <time.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef unsigned long long CUdeviceptr;
typedef void *CUstream;
typedef void *CUcontext;

#define EXPORT __attribute__((visibility("default")))
#define NOT_SUPPORTED 801

EXPORT CUresult cuInit(unsigned flags)
{
	(void)flags;
	return 0;
}

EXPORT CUresult cuDriverGetVersion(int *v)
{
	*v = 13000;
	return 0;
}

EXPORT CUresult cuGetErrorString(CUresult e, const char **s)
{
	*s = e == NOT_SUPPORTED ? "operation not supported (fake driver)" : "fake driver error";
	return 0;
}

EXPORT CUresult cuDeviceGetCount(int *n)
{
	*n = 8;
	return 0;
}

EXPORT CUresult cuDeviceGet(int *d, int ordinal)
{
	if (ordinal < 0 || ordinal >= 8)
		return 101; /* invalid device */
	*d = ordinal;
	return 0;
}

EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext *c, int d)
{
	*c = (CUcontext)(uintptr_t)(0x1000 + d);
	return 0;
}

EXPORT CUresult cuDevicePrimaryCtxRelease_v2(int d)
{
	(void)d;
	return 0;
}

/* this thread's context, as CUDA's: the interposer gives it back; the
 * calls to either counted for the caller (fakecuda_ctx_calls) */
static _Thread_local CUcontext current;
static _Thread_local unsigned long ctx_calls;

EXPORT CUresult cuCtxSetCurrent(CUcontext c)
{
	ctx_calls++;
	current = c;
	return 0;
}

EXPORT CUresult cuCtxGetCurrent(CUcontext *c)
{
	ctx_calls++;
	*c = current;
	return 0;
}

EXPORT unsigned long fakecuda_ctx_calls(void)
{
	return ctx_calls;
}

/*
 * Allocations as CUDA's caching of virtual addresses makes them: a freed
 * block's address comes back for the next allocation that fits, with a
 * new size and a new buffer id (cuPointerGetAttribute), so that a cache
 * keyed by address alone would take it for the old one.
 */
static struct {
	uintptr_t base;
	size_t bytes, cap;
	unsigned long long id;
	int live;
} blocks[256];
static unsigned long long next_id = 1;
static pthread_mutex_t blocks_lock = PTHREAD_MUTEX_INITIALIZER;

/* PENNY_FAKE_CU_OOM=1: every allocation fails, as on a full GPU. */
EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t bytes)
{
	const char *oom = getenv("PENNY_FAKE_CU_OOM");
	size_t i, pick = sizeof(blocks) / sizeof(blocks[0]);
	void *m = NULL;

	if (oom && !strcmp(oom, "1"))
		return 2; /* out of memory */
	if (!bytes)
		bytes = 1;
	pthread_mutex_lock(&blocks_lock);
	for (i = 0; i < sizeof(blocks) / sizeof(blocks[0]); i++)
		if (blocks[i].base && !blocks[i].live && blocks[i].cap >= bytes)
			break;
	if (i < sizeof(blocks) / sizeof(blocks[0])) {
		pick = i;
	} else {
		m = malloc(bytes);
		for (i = 0; m && i < sizeof(blocks) / sizeof(blocks[0]) && blocks[i].base; i++)
			;
		if (m && i < sizeof(blocks) / sizeof(blocks[0])) {
			pick = i;
			blocks[i].base = (uintptr_t)m;
			blocks[i].cap = bytes;
		}
	}
	if (pick < sizeof(blocks) / sizeof(blocks[0])) {
		blocks[pick].bytes = bytes;
		blocks[pick].id = next_id++;
		blocks[pick].live = 1;
		m = (void *)blocks[pick].base;
	}
	pthread_mutex_unlock(&blocks_lock);
	*p = (CUdeviceptr)(uintptr_t)m;
	return m ? 0 : 2; /* out of memory */
}

/* the live block around p, or -1 */
static long block_of(CUdeviceptr p)
{
	size_t i;

	for (i = 0; i < sizeof(blocks) / sizeof(blocks[0]); i++)
		if (blocks[i].live && p >= blocks[i].base && p - blocks[i].base < blocks[i].bytes)
			return (long)i;
	return -1;
}

EXPORT CUresult cuMemFree_v2(CUdeviceptr p)
{
	long b;

	pthread_mutex_lock(&blocks_lock);
	b = block_of(p);
	if (b >= 0 && blocks[b].base == p)
		blocks[b].live = 0; /* kept for the next allocation that fits */
	pthread_mutex_unlock(&blocks_lock);
	if (b < 0)
		free((void *)(uintptr_t)p);
	return 0;
}

EXPORT CUresult cuMemGetAddressRange_v2(CUdeviceptr *base, size_t *bytes, CUdeviceptr p)
{
	long b;

	pthread_mutex_lock(&blocks_lock);
	b = block_of(p);
	if (b >= 0) {
		if (base)
			*base = blocks[b].base;
		if (bytes)
			*bytes = blocks[b].bytes;
	}
	pthread_mutex_unlock(&blocks_lock);
	return b >= 0 ? 0 : 1; /* invalid value: not device memory */
}

EXPORT CUresult cuPointerGetAttribute(void *data, int attr, CUdeviceptr p)
{
	long b;

	if (attr != 7) /* CU_POINTER_ATTRIBUTE_BUFFER_ID */
		return NOT_SUPPORTED;
	pthread_mutex_lock(&blocks_lock);
	b = block_of(p);
	if (b >= 0)
		*(unsigned long long *)data = blocks[b].id;
	pthread_mutex_unlock(&blocks_lock);
	return b >= 0 ? 0 : 1;
}

EXPORT CUresult cuMemcpyHtoD_v2(CUdeviceptr d, const void *s, size_t n)
{
	memmove((void *)(uintptr_t)d, s, n);
	return 0;
}

EXPORT CUresult cuMemcpyDtoH_v2(void *d, CUdeviceptr s, size_t n)
{
	memmove(d, (const void *)(uintptr_t)s, n);
	return 0;
}

EXPORT CUresult cuMemcpyAsync(CUdeviceptr d, CUdeviceptr s, size_t n, CUstream st)
{
	(void)st;
	memmove((void *)(uintptr_t)d, (const void *)(uintptr_t)s, n);
	return 0;
}

EXPORT CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr d, const void *s, size_t n, CUstream st)
{
	(void)st;
	return cuMemcpyHtoD_v2(d, s, n);
}

/*
 * Streams, as far as the interposer's wait for its last call needs them:
 * cuStreamCreate hands out distinct handles; cuStreamDestroy marks one
 * gone, after which a synchronize or a record on it fails
 * (CUDA_ERROR_INVALID_HANDLE) and waits for nothing; CU_STREAM_PER_THREAD
 * (0x2) is the calling thread's own (fakecuda_stream_key).
 */
#define INVALID_HANDLE 400
#define STREAM_BASE 0x5000u
#define STREAMS 65536u	/* tracked; later handles never go */
static unsigned stream_next;
static unsigned char stream_gone[STREAMS];

/* the slot of handle s, or -1 (not one of cuStreamCreate's, or untracked) */
static long stream_slot(CUstream s)
{
	uintptr_t v = (uintptr_t)s;

	if (v < STREAM_BASE || (v - STREAM_BASE) % 16 || (v - STREAM_BASE) / 16 >= STREAMS)
		return -1;
	return (long)((v - STREAM_BASE) / 16);
}

static int stream_dead(CUstream s)
{
	long i = stream_slot(s);

	return i >= 0 && __atomic_load_n(&stream_gone[i], __ATOMIC_ACQUIRE);
}

EXPORT CUresult cuStreamCreate(CUstream *s, unsigned flags)
{
	unsigned k = __atomic_fetch_add(&stream_next, 1, __ATOMIC_RELAXED);

	(void)flags;
	*s = (CUstream)(uintptr_t)(STREAM_BASE + 16 * (uintptr_t)k);
	return 0;
}

EXPORT CUresult cuStreamDestroy_v2(CUstream s)
{
	long i = stream_slot(s);

	if (stream_dead(s))
		return INVALID_HANDLE;
	if (i >= 0)
		__atomic_store_n(&stream_gone[i], 1, __ATOMIC_RELEASE);
	return 0;
}

/* The key of stream s for the test plugin's queued calls: CU_STREAM_PER_THREAD
 * is the calling thread's own stream (a key a thread, never reused); every
 * other stream 0 (a synchronize waits for every queued call, as before). */
static uintptr_t thread_key_next;
static _Thread_local uintptr_t thread_key;

EXPORT uintptr_t fakecuda_stream_key(CUstream s)
{
	if ((uintptr_t)s != 2)
		return 0;
	if (!thread_key)
		thread_key = __atomic_add_fetch(&thread_key_next, 1, __ATOMIC_RELAXED);
	return thread_key;
}

/* The test plugin's queued calls (PENNY_FAKE_ASYNC=1 in fake.c): a stream's
 * synchronize waits for those of its key (0: every one), as CUDA's waits
 * for a stream's kernels; an event's for every one. */
static void (*sync_hook)(uintptr_t key);

EXPORT void fakecuda_sync_hook(void (*fn)(uintptr_t key))
{
	__atomic_store_n(&sync_hook, fn, __ATOMIC_RELEASE);
}

static void sync_key(uintptr_t key)
{
	void (*fn)(uintptr_t) = __atomic_load_n(&sync_hook, __ATOMIC_ACQUIRE);

	if (fn)
		fn(key);
}

EXPORT CUresult cuStreamSynchronize(CUstream s)
{
	if (stream_dead(s))
		return INVALID_HANDLE;
	sync_key(fakecuda_stream_key(s));
	return 0;
}

EXPORT CUresult cuStreamQuery(CUstream s)
{
	return stream_dead(s) ? INVALID_HANDLE : 0;
}

/* PENNY_FAKE_CAPTURING=1: every stream is being captured into a graph;
 * =2: from the process's second query on. */
EXPORT CUresult cuStreamIsCapturing(CUstream s, int *status)
{
	static int queries;
	const char *c = getenv("PENNY_FAKE_CAPTURING");

	(void)s;
	*status = c && (!strcmp(c, "1") || (!strcmp(c, "2") && __atomic_fetch_add(&queries, 1, __ATOMIC_RELAXED)));
	return 0;
}

/*
 * Enough of a device for the plugins' common open (plugins/common/gpu.c) and
 * their timing: a name, a PCI address by ordinal, attributes, events that
 * stamp the host's clock when recorded (streams do everything at once), and
 * memset.  So the nccl plugin runs on the fake NCCL (coll-test's tests).
 */
EXPORT CUresult cuDeviceGetName(char *name, int len, int d)
{
	snprintf(name, (size_t)len, "Fake GPU %d", d);
	return 0;
}

EXPORT CUresult cuDeviceGetPCIBusId(char *id, int len, int d)
{
	snprintf(id, (size_t)len, "0000:%02x:00.0", d + 0x10);
	return 0;
}

EXPORT CUresult cuDeviceGetAttribute(int *v, int attr, int d)
{
	(void)d;
	/* 16 multiprocessors, compute capability 9.0, every other attribute 0 */
	*v = attr == 16 ? 16 : attr == 75 ? 9 : 0;
	return 0;
}

EXPORT CUresult cuMemsetD8Async(CUdeviceptr p, unsigned char byte, size_t n, CUstream st)
{
	(void)st;
	memset((void *)(uintptr_t)p, byte, n);
	return 0;
}

EXPORT CUresult cuEventCreate(double **e, unsigned flags)
{
	(void)flags;
	*e = calloc(1, sizeof(**e));
	return *e ? 0 : 2; /* out of memory */
}

EXPORT CUresult cuEventDestroy_v2(double *e)
{
	free(e);
	return 0;
}

EXPORT CUresult cuEventRecord(double *e, CUstream st)
{
	struct timespec t;

	if (stream_dead(st))
		return INVALID_HANDLE;
	clock_gettime(CLOCK_MONOTONIC, &t);
	*e = t.tv_sec * 1e3 + t.tv_nsec / 1e6;
	return 0;
}

EXPORT CUresult cuEventSynchronize(double *e)
{
	(void)e;
	sync_key(0);
	return 0;
}

EXPORT CUresult cuEventElapsedTime(float *ms, double *a, double *b)
{
	*ms = (float)(*b - *a);
	return 0;
}

EXPORT CUresult cuStreamWaitEvent(CUstream st, double *e, unsigned flags)
{
	(void)st;
	(void)e;
	(void)flags;
	return 0;
}

/* The rest of what cudrv.c requires: present, never used by these tests. */
#define UNSUPPORTED(name)                                                                          \
	EXPORT CUresult name(void);                                                                \
	EXPORT CUresult name(void)                                                                 \
	{                                                                                          \
		return NOT_SUPPORTED;                                                              \
	}
UNSUPPORTED(cuDeviceCanAccessPeer)
UNSUPPORTED(cuCtxEnablePeerAccess)
UNSUPPORTED(cuStreamBeginCapture_v2)
UNSUPPORTED(cuStreamEndCapture)
UNSUPPORTED(cuGraphInstantiateWithFlags)
UNSUPPORTED(cuGraphLaunch)
UNSUPPORTED(cuGraphExecDestroy)
UNSUPPORTED(cuGraphDestroy)
UNSUPPORTED(cuModuleLoadData)
UNSUPPORTED(cuModuleUnload)
UNSUPPORTED(cuModuleGetFunction)
UNSUPPORTED(cuLaunchKernel)
UNSUPPORTED(cuOccupancyMaxActiveBlocksPerMultiprocessor)
UNSUPPORTED(cuIpcGetMemHandle)
UNSUPPORTED(cuIpcOpenMemHandle_v2)
UNSUPPORTED(cuIpcCloseMemHandle)
