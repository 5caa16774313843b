/* SPDX-License-Identifier: MIT */
/*
 * A libcuda.so.1 for tests of the NCCL interposer on machines without a
 * GPU: "device" memory is host memory (cuMemAlloc is malloc, copies are
 * memmove, streams do everything at once), so that the fake NCCL
 * (fakenccl.c) and the test plugins work on the pointers it hands out.
 * Every other entry point plugins/common/cudrv.c resolves exists and fails
 * with CUDA_ERROR_NOT_SUPPORTED.
 */
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

EXPORT CUresult cuCtxSetCurrent(CUcontext c)
{
	(void)c;
	return 0;
}

EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t bytes)
{
	void *m = malloc(bytes ? bytes : 1);

	*p = (CUdeviceptr)(uintptr_t)m;
	return m ? 0 : 2; /* out of memory */
}

EXPORT CUresult cuMemFree_v2(CUdeviceptr p)
{
	free((void *)(uintptr_t)p);
	return 0;
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

EXPORT CUresult cuStreamCreate(CUstream *s, unsigned flags)
{
	(void)flags;
	*s = (CUstream)(uintptr_t)0x5000;
	return 0;
}

EXPORT CUresult cuStreamDestroy_v2(CUstream s)
{
	(void)s;
	return 0;
}

EXPORT CUresult cuStreamSynchronize(CUstream s)
{
	(void)s;
	return 0;
}

EXPORT CUresult cuStreamQuery(CUstream s)
{
	(void)s;
	return 0;
}

/* PENNY_FAKE_CAPTURING=1: every stream is being captured into a graph. */
EXPORT CUresult cuStreamIsCapturing(CUstream s, int *status)
{
	const char *c = getenv("PENNY_FAKE_CAPTURING");

	(void)s;
	*status = c && !strcmp(c, "1");
	return 0;
}

/* The rest of what cudrv.c requires: present, never used by these tests. */
#define UNSUPPORTED(name)                                                                          \
	EXPORT CUresult name(void);                                                                \
	EXPORT CUresult name(void)                                                                 \
	{                                                                                          \
		return NOT_SUPPORTED;                                                              \
	}
UNSUPPORTED(cuDeviceGetName)
UNSUPPORTED(cuDeviceGetAttribute)
UNSUPPORTED(cuDeviceGetPCIBusId)
UNSUPPORTED(cuDeviceCanAccessPeer)
UNSUPPORTED(cuCtxEnablePeerAccess)
UNSUPPORTED(cuMemsetD8Async)
UNSUPPORTED(cuEventCreate)
UNSUPPORTED(cuEventDestroy_v2)
UNSUPPORTED(cuEventRecord)
UNSUPPORTED(cuEventSynchronize)
UNSUPPORTED(cuEventElapsedTime)
UNSUPPORTED(cuStreamWaitEvent)
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
