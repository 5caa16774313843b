/* SPDX-License-Identifier: MIT */
/*
 * The few CUDA driver API types and functions the plugins use, declared
 * here (no CUDA headers at build time) and resolved from libcuda.so.1 with
 * dlopen/dlsym at run time.  The table is also the plugins' test seam: unit
 * tests install a table of fakes with pn_cudrv_set().
 */
#ifndef PENNY_CUDRV_H
#define PENNY_CUDRV_H

#include <stddef.h>
#include <stdint.h>

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st *CUcontext;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUgraph_st *CUgraph;
typedef struct CUgraphExec_st *CUgraphExec;
typedef struct {
	char reserved[64];
} CUipcMemHandle;

/* cuLaunchKernelEx's configuration (CUDA 12.0+ drivers), as cuda.h lays it out */
typedef union {
	char pad[64];
	int programmaticStreamSerializationAllowed;
} CUlaunchAttributeValue;
typedef struct {
	int id;			/* CUlaunchAttributeID */
	char pad[8 - sizeof(int)];
	CUlaunchAttributeValue value;
} CUlaunchAttribute;
typedef struct {
	unsigned gridDimX, gridDimY, gridDimZ;
	unsigned blockDimX, blockDimY, blockDimZ;
	unsigned sharedMemBytes;
	CUstream hStream;
	CUlaunchAttribute *attrs;
	unsigned numAttrs;
} CUlaunchConfig;
#define CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION 6

#define CUDA_SUCCESS 0
#define CUDA_ERROR_NOT_READY 600
#define CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED 704
#define CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS 1u
#define CU_STREAM_NON_BLOCKING 1u
#define CU_EVENT_DISABLE_TIMING 2u
#define CU_MEMHOSTALLOC_PORTABLE 1u
#define CU_MEMHOSTREGISTER_PORTABLE 1u
#define CU_MEMHOSTREGISTER_DEVICEMAP 2u
#define CU_EVENT_DEFAULT 0u
#define CU_STREAM_CAPTURE_MODE_THREAD_LOCAL 1
#define CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT 16
#define CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR 75
#define CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR 76
#define CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED 124
#define CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD 1
#define CU_POINTER_ATTRIBUTE_BUFFER_ID 7 /* unsigned long long, unique per allocation */
#define CU_STREAM_CAPTURE_MODE_RELAXED 2

struct pn_cudrv {
	CUresult (*Init)(unsigned flags);
	CUresult (*DriverGetVersion)(int *v);
	CUresult (*GetErrorString)(CUresult e, const char **s);
	CUresult (*DeviceGetCount)(int *n);
	CUresult (*DeviceGet)(CUdevice *d, int ordinal);
	CUresult (*DeviceGetName)(char *name, int len, CUdevice d);
	CUresult (*DeviceGetAttribute)(int *v, int attr, CUdevice d);
	CUresult (*DeviceGetPCIBusId)(char *id, int len, CUdevice d);
	CUresult (*DeviceCanAccessPeer)(int *can, CUdevice d, CUdevice peer);
	CUresult (*DevicePrimaryCtxRetain)(CUcontext *c, CUdevice d);
	CUresult (*DevicePrimaryCtxRelease)(CUdevice d);
	CUresult (*CtxSetCurrent)(CUcontext c);
	CUresult (*CtxEnablePeerAccess)(CUcontext peer, unsigned flags);
	CUresult (*MemAlloc)(CUdeviceptr *p, size_t bytes);
	CUresult (*MemFree)(CUdeviceptr p);
	CUresult (*MemcpyHtoD)(CUdeviceptr dst, const void *src, size_t bytes);
	CUresult (*MemcpyDtoH)(void *dst, CUdeviceptr src, size_t bytes);
	CUresult (*MemcpyAsync)(CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream s);
	CUresult (*MemsetD8Async)(CUdeviceptr p, unsigned char v, size_t n, CUstream s);
	CUresult (*StreamCreate)(CUstream *s, unsigned flags);
	CUresult (*StreamDestroy)(CUstream s);
	CUresult (*StreamSynchronize)(CUstream s);
	CUresult (*EventCreate)(CUevent *e, unsigned flags);
	CUresult (*EventDestroy)(CUevent e);
	CUresult (*EventRecord)(CUevent e, CUstream s);
	CUresult (*EventSynchronize)(CUevent e);
	CUresult (*EventElapsedTime)(float *ms, CUevent a, CUevent b);
	CUresult (*StreamWaitEvent)(CUstream s, CUevent e, unsigned flags);
	CUresult (*StreamBeginCapture)(CUstream s, int mode);
	CUresult (*StreamEndCapture)(CUstream s, CUgraph *g);
	CUresult (*GraphInstantiateWithFlags)(CUgraphExec *e, CUgraph g, unsigned long long fl);
	CUresult (*GraphLaunch)(CUgraphExec e, CUstream s);
	CUresult (*GraphExecDestroy)(CUgraphExec e);
	CUresult (*GraphDestroy)(CUgraph g);
	CUresult (*ModuleLoadData)(CUmodule *m, const void *image);
	CUresult (*ModuleUnload)(CUmodule m);
	CUresult (*ModuleGetFunction)(CUfunction *f, CUmodule m, const char *name);
	CUresult (*LaunchKernel)(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
				 unsigned bx, unsigned by, unsigned bz, unsigned shmem,
				 CUstream s, void **params, void **extra);
	CUresult (*OccupancyMaxActiveBlocksPerMultiprocessor)(int *n, CUfunction f, int threads,
								size_t shmem);
	CUresult (*IpcGetMemHandle)(CUipcMemHandle *h, CUdeviceptr p);
	CUresult (*IpcOpenMemHandle)(CUdeviceptr *p, CUipcMemHandle h, unsigned flags);
	CUresult (*IpcCloseMemHandle)(CUdeviceptr p);
	/* optional (CUDA 11.7+ drivers): NULL when the driver lacks it */
	CUresult (*MemGetHandleForAddressRange)(void *handle, CUdeviceptr p, size_t bytes, int type,
						unsigned long long flags);
	/* page-locked host memory and async host copies (hostbw) */
	CUresult (*MemHostAlloc)(void **p, size_t bytes, unsigned flags);
	CUresult (*MemFreeHost)(void *p);
	CUresult (*MemcpyHtoDAsync)(CUdeviceptr dst, const void *src, size_t bytes, CUstream s);
	CUresult (*MemcpyDtoHAsync)(void *dst, CUdeviceptr src, size_t bytes, CUstream s);
	/* optional (CUDA 12.0+ drivers): launches with attributes (programmatic
	 * dependent launch) */
	CUresult (*LaunchKernelEx)(const CUlaunchConfig *cfg, CUfunction f, void **params,
				   void **extra);
	/* optional: host memory mapped for the device (the cross-node boxes) */
	CUresult (*MemHostRegister)(void *p, size_t bytes, unsigned flags);
	CUresult (*MemHostUnregister)(void *p);
	CUresult (*MemHostGetDevicePointer)(CUdeviceptr *d, void *p, unsigned flags);
	/* optional (the interposer, pn_gpu_wait): a bounded wait on a stream or
	 * an event; whether a stream is being captured (status 0: no) */
	CUresult (*StreamQuery)(CUstream s);
	CUresult (*EventQuery)(CUevent e);
	CUresult (*StreamIsCapturing)(CUstream s, int *status);
	/* optional (the interposer's registration cache): the allocation
	 * around p; a pointer attribute (CU_POINTER_ATTRIBUTE_*) */
	CUresult (*MemGetAddressRange)(CUdeviceptr *base, size_t *bytes, CUdeviceptr p);
	CUresult (*PointerGetAttribute)(void *data, int attr, CUdeviceptr p);
	/* optional: this thread's stream-capture interaction mode
	 * (CU_STREAM_CAPTURE_MODE_*), the old one into *mode */
	CUresult (*ThreadExchangeStreamCaptureMode)(int *mode);
	/* optional (the interposer): this thread's context, given back to a
	 * caller whose call penny ran on another device's */
	CUresult (*CtxGetCurrent)(CUcontext *c);
};

/*
 * Load libcuda.so.1 once (thread-safe); returns the table, or NULL with the
 * plugin error message set ("cannot load the CUDA driver 'libcuda.so.1':
 * ...").  A table installed with pn_cudrv_set() wins (tests).
 */
const struct pn_cudrv *pn_cudrv_get(void);
void pn_cudrv_set(const struct pn_cudrv *fake);

/* "cuMemAlloc: out of memory (2)" into the plugin error; returns -EIO
 * (-ENOMEM for out of memory, -ENODEV for no device). */
int pn_cu_fail(const struct pn_cudrv *cu, CUresult r, const char *what);

/* Thread-local error message of the plugin (penny_plugin_v1.errmsg). */
int pn_plugin_fail(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
const char *pn_plugin_errmsg(void);
void pn_plugin_clear_error(void);

/* 64 random bits (getrandom; the clock where it has none). */
uint64_t pn_plugin_random(void);
/*
 * This process apart from any other: a number drawn once, and the pid
 * (pids repeat across hosts and containers; a child forked after the draw
 * has another pid).  Threads of one process share both.
 */
void pn_plugin_process(uint64_t *id, int32_t *pid);

#define PN_CU_GOTO(cu, call, what, ret, label)                                                 \
	do {                                                                                   \
		CUresult _r = (cu)->call;                                                      \
		if (_r != CUDA_SUCCESS) {                                                      \
			(ret) = pn_cu_fail((cu), _r, (what));                                  \
			goto label;                                                            \
		}                                                                              \
	} while (0)

#define PN_CU(cu, call, what)                                                                 \
	do {                                                                                   \
		CUresult _r = (cu)->call;                                                      \
		if (_r != CUDA_SUCCESS)                                                        \
			return pn_cu_fail((cu), _r, (what));                                   \
	} while (0)

#endif
