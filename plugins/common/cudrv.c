/* SPDX-License-Identifier: MIT */
/* CUDA driver API resolved at run time from libcuda.so.1 (see cudrv.h). */
#define _GNU_SOURCE
#include "cudrv.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

static _Thread_local char plugin_err[512];

int pn_plugin_fail(int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(plugin_err, sizeof(plugin_err), fmt, ap);
	va_end(ap);
	return code;
}

const char *pn_plugin_errmsg(void)
{
	return plugin_err;
}

void pn_plugin_clear_error(void)
{
	plugin_err[0] = 0;
}

uint64_t pn_plugin_random(void)
{
	struct timespec t;
	uint64_t v;

	if (getrandom(&v, sizeof(v), GRND_NONBLOCK) == (ssize_t)sizeof(v))
		return v;
	clock_gettime(CLOCK_REALTIME, &t);
	return ((uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec) ^ (uintptr_t)&t;
}

static uint64_t proc_id;
static pthread_once_t proc_once = PTHREAD_ONCE_INIT;

static void draw_proc_id(void)
{
	proc_id = pn_plugin_random();
}

void pn_plugin_process(uint64_t *id, int32_t *pid)
{
	pthread_once(&proc_once, draw_proc_id);
	*id = proc_id;
	*pid = (int32_t)getpid();
}

static struct pn_cudrv real;
static const struct pn_cudrv *fake;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static char load_err[400];
static int loaded;

struct sym {
	const char *name;	/* newest first, '|' separates fallbacks */
	size_t off;
	int optional;		/* missing: the field stays NULL */
};

#define S(field, names) { names, offsetof(struct pn_cudrv, field), 0 }
#define OPT(field, names) { names, offsetof(struct pn_cudrv, field), 1 }
static const struct sym syms[] = {
	S(Init, "cuInit"),
	S(DriverGetVersion, "cuDriverGetVersion"),
	S(GetErrorString, "cuGetErrorString"),
	S(DeviceGetCount, "cuDeviceGetCount"),
	S(DeviceGet, "cuDeviceGet"),
	S(DeviceGetName, "cuDeviceGetName"),
	S(DeviceGetAttribute, "cuDeviceGetAttribute"),
	S(DeviceGetPCIBusId, "cuDeviceGetPCIBusId"),
	S(DeviceCanAccessPeer, "cuDeviceCanAccessPeer"),
	S(DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain"),
	S(DevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2|cuDevicePrimaryCtxRelease"),
	S(CtxSetCurrent, "cuCtxSetCurrent"),
	S(CtxEnablePeerAccess, "cuCtxEnablePeerAccess"),
	S(MemAlloc, "cuMemAlloc_v2"),
	S(MemFree, "cuMemFree_v2"),
	S(MemcpyHtoD, "cuMemcpyHtoD_v2"),
	S(MemcpyDtoH, "cuMemcpyDtoH_v2"),
	S(MemcpyAsync, "cuMemcpyAsync"),
	S(MemsetD8Async, "cuMemsetD8Async"),
	S(StreamCreate, "cuStreamCreate"),
	S(StreamDestroy, "cuStreamDestroy_v2"),
	S(StreamSynchronize, "cuStreamSynchronize"),
	S(EventCreate, "cuEventCreate"),
	S(EventDestroy, "cuEventDestroy_v2"),
	S(EventRecord, "cuEventRecord"),
	S(EventSynchronize, "cuEventSynchronize"),
	S(EventElapsedTime, "cuEventElapsedTime_v2|cuEventElapsedTime"),
	S(StreamWaitEvent, "cuStreamWaitEvent"),
	S(StreamBeginCapture, "cuStreamBeginCapture_v2"),
	S(StreamEndCapture, "cuStreamEndCapture"),
	S(GraphInstantiateWithFlags, "cuGraphInstantiateWithFlags"),
	S(GraphLaunch, "cuGraphLaunch"),
	S(GraphExecDestroy, "cuGraphExecDestroy"),
	S(GraphDestroy, "cuGraphDestroy"),
	S(ModuleLoadData, "cuModuleLoadData"),
	S(ModuleUnload, "cuModuleUnload"),
	S(ModuleGetFunction, "cuModuleGetFunction"),
	S(LaunchKernel, "cuLaunchKernel"),
	S(OccupancyMaxActiveBlocksPerMultiprocessor, "cuOccupancyMaxActiveBlocksPerMultiprocessor"),
	S(IpcGetMemHandle, "cuIpcGetMemHandle"),
	S(IpcOpenMemHandle, "cuIpcOpenMemHandle_v2"),
	S(IpcCloseMemHandle, "cuIpcCloseMemHandle"),
	OPT(MemGetHandleForAddressRange, "cuMemGetHandleForAddressRange"),
	OPT(MemHostAlloc, "cuMemHostAlloc"),
	OPT(MemFreeHost, "cuMemFreeHost"),
	OPT(MemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2"),
	OPT(MemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2"),
	OPT(LaunchKernelEx, "cuLaunchKernelEx"),
	OPT(MemHostRegister, "cuMemHostRegister_v2|cuMemHostRegister"),
	OPT(MemHostUnregister, "cuMemHostUnregister"),
	OPT(MemHostGetDevicePointer, "cuMemHostGetDevicePointer_v2|cuMemHostGetDevicePointer"),
	OPT(StreamQuery, "cuStreamQuery"),
	OPT(EventQuery, "cuEventQuery"),
	OPT(StreamIsCapturing, "cuStreamIsCapturing"),
	OPT(MemGetAddressRange, "cuMemGetAddressRange_v2"),
	OPT(PointerGetAttribute, "cuPointerGetAttribute"),
	OPT(ThreadExchangeStreamCaptureMode, "cuThreadExchangeStreamCaptureMode"),
	OPT(CtxGetCurrent, "cuCtxGetCurrent"),
};
#undef S
#undef OPT

static void *lookup(void *dl, const char *names)
{
	char buf[128];
	const char *p = names;

	while (*p) {
		size_t n = strcspn(p, "|");
		void *f;

		if (n >= sizeof(buf))
			return NULL;
		memcpy(buf, p, n);
		buf[n] = 0;
		f = dlsym(dl, buf);
		if (f)
			return f;
		p += n;
		if (*p == '|')
			p++;
	}
	return NULL;
}

static void load(void)
{
	void *dl = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	size_t i;

	if (!dl) {
		const char *e = dlerror();

		snprintf(load_err, sizeof(load_err),
			 "cannot load the CUDA driver 'libcuda.so.1' (is an NVIDIA driver "
			 "installed?): %s", e ? e : "not found");
		return;
	}
	for (i = 0; i < sizeof(syms) / sizeof(syms[0]); i++) {
		void *f = lookup(dl, syms[i].name);

		if (!f && syms[i].optional)
			continue;
		if (!f) {
			snprintf(load_err, sizeof(load_err),
				 "the CUDA driver 'libcuda.so.1' lacks '%s' (driver too old)",
				 syms[i].name);
			dlclose(dl);
			return;
		}
		memcpy((char *)&real + syms[i].off, &f, sizeof(f));
	}
	loaded = 1;
}

void pn_cudrv_set(const struct pn_cudrv *f)
{
	fake = f;
}

const struct pn_cudrv *pn_cudrv_get(void)
{
	if (fake)
		return fake;
	pthread_once(&once, load);
	if (!loaded) {
		pn_plugin_fail(-ENODEV, "%s", load_err);
		return NULL;
	}
	return &real;
}

int pn_cu_fail(const struct pn_cudrv *cu, CUresult r, const char *what)
{
	const char *s = NULL;
	int code = -EIO;

	if (cu && cu->GetErrorString)
		cu->GetErrorString(r, &s);
	if (r == 2)
		code = -ENOMEM;
	else if (r == 100 || r == 101 || r == 35 || r == 3)
		code = -ENODEV;
	return pn_plugin_fail(code, "%s: %s (CUDA error %d)", what, s ? s : "unknown error", r);
}
