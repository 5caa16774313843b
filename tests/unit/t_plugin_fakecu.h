/* SPDX-License-Identifier: MIT */
/*
 * A fake CUDA driver (the table of plugins/common/cudrv.h) over host memory,
 * and a fake host (penny_host_v1) whose ranks are threads of this process.
 * Device pointers are host pointers, so an "IPC handle" is the pointer
 * itself: a rank that opens a peer's handle gets the peer's buffer, which
 * lets the tests check who maps what.  Kernel launches are recorded, not run.
 */
#ifndef PENNY_T_PLUGIN_FAKECU_H
#define PENNY_T_PLUGIN_FAKECU_H

#include "../../plugins/common/cudrv.h"
#include "../../plugins/common/kargs.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define FAKE_MAX_LAUNCH 256

struct fake_launch {
	char name[64];
	unsigned grid, block;
	struct pn_ar_args ar;	/* an allreduce kernel's, a gate's or another collective's */
	int graph;		/* replayed from a graph */
	int pdl;		/* cuLaunchKernelEx with programmatic stream serialization */
	CUstream stream;	/* the stream it was enqueued on */
};

struct fake_copy {
	CUdeviceptr dst, src;
	size_t bytes;
	CUstream stream;
};

/* Per rank (thread). */
struct fake_rank {
	struct fake_launch launch[FAKE_MAX_LAUNCH];
	int nlaunch;
	struct fake_copy copy[FAKE_MAX_LAUNCH];
	int ncopy;
	int capturing;
	int ncaptured, graph_launches;
	int fail_alloc;		/* cuMemAlloc fails from now on */
	int ipc_open, ipc_close;
	int ipc_same;		/* cuIpcOpenMemHandle fails as in the process that made the
				 * handle (ranks that are threads of one process) */
	int peer_on;		/* cuCtxEnablePeerAccess calls */
	int nstreams;		/* cuStreamCreate calls: the first is 0x2000, then 0x2010 ... */
	/* cuMemcpyHtoD from pageable memory returns before its DMA lands (on
	 * the legacy default stream): the copy waits here until that stream is
	 * synchronized or the next synchronous copy */
	void *htod_dst, *htod_data;
	size_t htod_len;
};

static _Thread_local struct fake_rank *fake_me;
static struct fake_rank fake_solo;
static int fake_nsm[8] = { 132, 100, 132, 132, 132, 132, 132, 132 };

static struct fake_rank *me(void)
{
	return fake_me ? fake_me : &fake_solo;
}

struct fake_func {
	char name[64];
	struct fake_func *next;
};
static struct fake_func *fake_funcs;
static pthread_mutex_t fake_lock = PTHREAD_MUTEX_INITIALIZER;

static CUresult f_ok0(unsigned x)
{
	(void)x;
	return 0;
}
static CUresult f_version(int *v)
{
	*v = 13000;
	return 0;
}
static CUresult f_errstr(CUresult e, const char **s)
{
	*s = e == 2 ? "out of memory" : "fake error";
	return 0;
}
static CUresult f_count(int *n)
{
	*n = 4;
	return 0;
}
static CUresult f_devget(CUdevice *d, int o)
{
	*d = o;
	return 0;
}
static CUresult f_name(char *s, int len, CUdevice d)
{
	snprintf(s, (size_t)len, "Fake GPU %d", d);
	return 0;
}
static CUresult f_attr(int *v, int attr, CUdevice d)
{
	*v = attr == CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT ? fake_nsm[d & 7]
	     : attr == CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR ? 9 : 0;
	return 0;
}
static CUresult f_busid(char *s, int len, CUdevice d)
{
	snprintf(s, (size_t)len, "0000:%02x:00.0", 0x10 + d);
	return 0;
}
static CUresult f_canpeer(int *c, CUdevice a, CUdevice b)
{
	*c = a != b;
	return 0;
}
static CUresult f_retain(CUcontext *c, CUdevice d)
{
	*c = (CUcontext)(uintptr_t)(0x1000 + d);
	return 0;
}
static CUresult f_release(CUdevice d)
{
	(void)d;
	return 0;
}
static CUresult f_setcur(CUcontext c)
{
	(void)c;
	return 0;
}
static CUresult f_peer(CUcontext c, unsigned fl)
{
	(void)c;
	(void)fl;
	me()->peer_on++;
	return 0;
}
/*
 * Host memory standing in for device memory, 256-aligned; blocks of 2 MiB
 * and more on huge pages where the kernel has them (madvise): a page fault
 * per 2 MiB, not per 4 KiB, when tens of MiB per rank are set up and zeroed
 * in every test, which was most of these tests' time.  Freed with free().
 */
#define FAKE_HUGE (2u << 20)
static void *fake_mem_alloc(size_t bytes)
{
	size_t len = (bytes + 255) / 256 * 256;
	size_t align = len >= FAKE_HUGE ? FAKE_HUGE : 256;
	void *m = aligned_alloc(align, (len + align - 1) / align * align);

	if (m && align == FAKE_HUGE)
		madvise(m, (len + align - 1) / align * align, MADV_HUGEPAGE);
	return m;
}

static CUresult f_alloc(CUdeviceptr *p, size_t bytes)
{
	void *m;

	if (me()->fail_alloc)
		return 2;
	m = fake_mem_alloc(bytes);
	if (!m)
		return 2;
	memset(m, 0xee, bytes);
	*p = (CUdeviceptr)(uintptr_t)m;
	return 0;
}
static CUresult f_free(CUdeviceptr p)
{
	free((void *)(uintptr_t)p);
	return 0;
}
static void f_htod_land(void)
{
	struct fake_rank *r = me();

	if (r->htod_data) {
		memcpy(r->htod_dst, r->htod_data, r->htod_len);
		free(r->htod_data);
		r->htod_data = NULL;
	}
}
static CUresult f_htod(CUdeviceptr d, const void *s, size_t n)
{
	struct fake_rank *r = me();

	f_htod_land();
	r->htod_data = malloc(n ? n : 1);
	if (!r->htod_data)
		return 2;
	memcpy(r->htod_data, s, n);
	r->htod_dst = (void *)(uintptr_t)d;
	r->htod_len = n;
	return 0;
}
static CUresult f_dtoh(void *d, CUdeviceptr s, size_t n)
{
	f_htod_land();
	memcpy(d, (const void *)(uintptr_t)s, n);
	return 0;
}
static CUresult f_copy(CUdeviceptr d, CUdeviceptr s, size_t n, CUstream st)
{
	struct fake_rank *r = me();

	memmove((void *)(uintptr_t)d, (const void *)(uintptr_t)s, n);
	if (r->ncopy < FAKE_MAX_LAUNCH)
		r->copy[r->ncopy++] = (struct fake_copy){ d, s, n, st };
	return 0;
}
static CUresult f_memset(CUdeviceptr p, unsigned char v, size_t n, CUstream s)
{
	(void)s;
	memset((void *)(uintptr_t)p, v, n);
	return 0;
}
static CUresult f_screate(CUstream *s, unsigned fl)
{
	(void)fl;
	*s = (CUstream)(uintptr_t)(0x2000 + 0x10 * me()->nstreams++);
	return 0;
}
static CUresult f_sdestroy(CUstream s)
{
	(void)s;
	return 0;
}
static CUresult f_ssync(CUstream s)
{
	if (!s)
		f_htod_land();
	return 0;
}
static CUresult f_ecreate(CUevent *e, unsigned fl)
{
	(void)fl;
	*e = (CUevent)(uintptr_t)0x3000;
	return 0;
}
static CUresult f_edestroy(CUevent e)
{
	(void)e;
	return 0;
}
static CUresult f_erecord(CUevent e, CUstream s)
{
	(void)e;
	(void)s;
	return 0;
}
static CUresult f_esync(CUevent e)
{
	(void)e;
	return 0;
}
static CUresult f_elapsed(float *ms, CUevent a, CUevent b)
{
	(void)a;
	(void)b;
	*ms = 1.0f;
	return 0;
}
static CUresult f_wait(CUstream s, CUevent e, unsigned fl)
{
	(void)s;
	(void)e;
	(void)fl;
	return 0;
}
static CUresult f_capbegin(CUstream s, int mode)
{
	(void)s;
	(void)mode;
	me()->capturing = 1;
	me()->ncaptured = 0;
	return 0;
}
static CUresult f_capend(CUstream s, CUgraph *g)
{
	(void)s;
	me()->capturing = 0;
	*g = (CUgraph)(uintptr_t)0x4000;
	return 0;
}
static CUresult f_iscap(CUstream s, int *status)
{
	(void)s;
	*status = me()->capturing;
	return 0;
}
static CUresult f_inst(CUgraphExec *e, CUgraph g, unsigned long long fl)
{
	(void)g;
	(void)fl;
	*e = (CUgraphExec)(uintptr_t)0x5000;
	return 0;
}
static CUresult f_glaunch(CUgraphExec e, CUstream s)
{
	(void)e;
	(void)s;
	me()->graph_launches++;
	return 0;
}
static CUresult f_gexecdestroy(CUgraphExec e)
{
	(void)e;
	return 0;
}
static CUresult f_gdestroy(CUgraph g)
{
	(void)g;
	return 0;
}
static CUresult f_modload(CUmodule *m, const void *image)
{
	*m = (CUmodule)(uintptr_t)image;
	return 0;
}
static CUresult f_modunload(CUmodule m)
{
	(void)m;
	return 0;
}
static CUresult f_getfunc(CUfunction *f, CUmodule m, const char *name)
{
	struct fake_func *ff = calloc(1, sizeof(*ff));

	(void)m;
	if (!ff)
		return 2;
	snprintf(ff->name, sizeof(ff->name), "%s", name);
	pthread_mutex_lock(&fake_lock);
	ff->next = fake_funcs;
	fake_funcs = ff;
	pthread_mutex_unlock(&fake_lock);
	*f = (CUfunction)ff;
	return 0;
}
static CUresult f_launch(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
			 unsigned by, unsigned bz, unsigned sh, CUstream s, void **params, void **extra)
{
	struct fake_rank *r = me();
	struct fake_launch *l;
	const char *name = ((struct fake_func *)f)->name;

	(void)gy;
	(void)gz;
	(void)by;
	(void)bz;
	(void)sh;
	(void)extra;
	if (r->capturing) {
		r->ncaptured++;
		return 0;
	}
	if (r->nlaunch >= FAKE_MAX_LAUNCH)
		return 0;
	l = &r->launch[r->nlaunch++];
	memset(l, 0, sizeof(*l));
	snprintf(l->name, sizeof(l->name), "%s", name);
	l->grid = gx;
	l->block = bx;
	l->stream = s;
	if (!strncmp(name, "pn_ar_", 6) || !strncmp(name, "pn_co_", 6) || !strcmp(name, "pn_ce_gate"))
		memcpy(&l->ar, params[0], sizeof(l->ar));
	if (!strncmp(name, "pn_check_", 9)) { /* a check that finds nothing wrong */
		const struct pn_testdata_args *a = params[0];
		uint64_t *res = (uint64_t *)(uintptr_t)a->result;

		res[0] = 0;
	}
	return 0;
}
static CUresult f_launch_ex(const CUlaunchConfig *c, CUfunction f, void **params, void **extra)
{
	struct fake_rank *r = me();
	int n = r->nlaunch, pdl = 0;
	CUresult e;

	for (unsigned i = 0; i < c->numAttrs; i++)
		if (c->attrs[i].id == CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION)
			pdl = c->attrs[i].value.programmaticStreamSerializationAllowed;
	e = f_launch(f, c->gridDimX, c->gridDimY, c->gridDimZ, c->blockDimX, c->blockDimY,
		     c->blockDimZ, c->sharedMemBytes, c->hStream, params, extra);
	if (r->nlaunch > n)
		r->launch[n].pdl = pdl;
	return e;
}
static CUresult f_occ(int *n, CUfunction f, int t, size_t sh)
{
	(void)f;
	(void)t;
	(void)sh;
	*n = 1;
	return 0;
}
static CUresult f_ipcget(CUipcMemHandle *h, CUdeviceptr p)
{
	memset(h, 0, sizeof(*h));
	memcpy(h->reserved, "FAKEIPC", 8);
	memcpy(h->reserved + 8, &p, sizeof(p));
	return 0;
}
static CUresult f_ipcopen(CUdeviceptr *p, CUipcMemHandle h, unsigned fl)
{
	(void)fl;
	if (me()->ipc_same)
		return 201; /* CUDA_ERROR_INVALID_CONTEXT */
	if (memcmp(h.reserved, "FAKEIPC", 8))
		return 1;
	memcpy(p, h.reserved + 8, sizeof(*p));
	me()->ipc_open++;
	return 0;
}
static CUresult f_ipcclose(CUdeviceptr p)
{
	(void)p;
	me()->ipc_close++;
	return 0;
}

static const struct pn_cudrv fake_cu = {
	.Init = f_ok0,
	.DriverGetVersion = f_version,
	.GetErrorString = f_errstr,
	.DeviceGetCount = f_count,
	.DeviceGet = f_devget,
	.DeviceGetName = f_name,
	.DeviceGetAttribute = f_attr,
	.DeviceGetPCIBusId = f_busid,
	.DeviceCanAccessPeer = f_canpeer,
	.DevicePrimaryCtxRetain = f_retain,
	.DevicePrimaryCtxRelease = f_release,
	.CtxSetCurrent = f_setcur,
	.CtxEnablePeerAccess = f_peer,
	.MemAlloc = f_alloc,
	.MemFree = f_free,
	.MemcpyHtoD = f_htod,
	.MemcpyDtoH = f_dtoh,
	.MemcpyAsync = f_copy,
	.MemsetD8Async = f_memset,
	.StreamCreate = f_screate,
	.StreamDestroy = f_sdestroy,
	.StreamSynchronize = f_ssync,
	.EventCreate = f_ecreate,
	.EventDestroy = f_edestroy,
	.EventRecord = f_erecord,
	.EventSynchronize = f_esync,
	.EventElapsedTime = f_elapsed,
	.StreamWaitEvent = f_wait,
	.StreamBeginCapture = f_capbegin,
	.StreamEndCapture = f_capend,
	.StreamIsCapturing = f_iscap,
	.GraphInstantiateWithFlags = f_inst,
	.GraphLaunch = f_glaunch,
	.GraphExecDestroy = f_gexecdestroy,
	.GraphDestroy = f_gdestroy,
	.ModuleLoadData = f_modload,
	.ModuleUnload = f_modunload,
	.ModuleGetFunction = f_getfunc,
	.LaunchKernel = f_launch,
	.LaunchKernelEx = f_launch_ex,
	.OccupancyMaxActiveBlocksPerMultiprocessor = f_occ,
	.IpcGetMemHandle = f_ipcget,
	.IpcOpenMemHandle = f_ipcopen,
	.IpcCloseMemHandle = f_ipcclose,
};

static void fake_funcs_free(void)
{
	while (fake_funcs) {
		struct fake_func *f = fake_funcs;

		fake_funcs = f->next;
		free(f);
	}
}

/* ---- the fake host: n ranks as threads, allgather through shared memory ---- */

#define FAKE_MAX_RANKS 8

struct fake_world {
	int n;
	pthread_barrier_t bar;
	char *slots;		/* n * slot_len */
	size_t slot_len;
	struct penny_host_v1 host[FAKE_MAX_RANKS];
	struct fake_rank rank[FAKE_MAX_RANKS];
	int gathers;
};

static int fake_allgather(void *ctx, const void *mine, void *all, size_t len)
{
	struct penny_host_v1 *h = ctx;
	struct fake_world *w = (struct fake_world *)((char *)(h - h->rank) -
						     offsetof(struct fake_world, host));

	if (len > w->slot_len)
		return -EMSGSIZE;
	memcpy(w->slots + (size_t)h->rank * w->slot_len, mine, len);
	pthread_barrier_wait(&w->bar);
	for (int r = 0; r < w->n; r++)
		memcpy((char *)all + (size_t)r * len, w->slots + (size_t)r * w->slot_len, len);
	/* counted before the second barrier, so every rank sees it on return
	 * (counted after it, a rank that read the count at once could miss it) */
	if (h->rank == 0)
		w->gathers++;
	pthread_barrier_wait(&w->bar);
	return 0;
}

static int fake_barrier(void *ctx)
{
	char b = 0, all[FAKE_MAX_RANKS];

	return fake_allgather(ctx, &b, all, 1);
}

static void fake_world_init(struct fake_world *w, int n)
{
	memset(w, 0, sizeof(*w));
	w->n = n;
	w->slot_len = 64 * 1024;
	w->slots = calloc((size_t)n, w->slot_len);
	pthread_barrier_init(&w->bar, NULL, (unsigned)n);
	for (int r = 0; r < n; r++) {
		struct penny_host_v1 *h = &w->host[r];

		h->size = sizeof(*h);
		h->rank = r;
		h->nranks = n;
		h->local_rank = r;
		h->local_size = n;
		h->node = 0;
		h->nnodes = 1;
		h->ctx = h;
		h->allgather = fake_allgather;
		h->barrier = fake_barrier;
	}
}

static void fake_world_free(struct fake_world *w)
{
	pthread_barrier_destroy(&w->bar);
	free(w->slots);
}

/* Run fn(world, rank) on every rank at once. */
struct fake_job {
	struct fake_world *w;
	int rank;
	void (*fn)(struct fake_world *w, int rank);
};

static void *fake_thread(void *p)
{
	struct fake_job *j = p;

	fake_me = &j->w->rank[j->rank];
	j->fn(j->w, j->rank);
	return NULL;
}

static void fake_run(struct fake_world *w, void (*fn)(struct fake_world *w, int rank))
{
	pthread_t t[FAKE_MAX_RANKS];
	struct fake_job j[FAKE_MAX_RANKS];

	for (int r = 0; r < w->n; r++) {
		j[r] = (struct fake_job){ w, r, fn };
		pthread_create(&t[r], NULL, fake_thread, &j[r]);
	}
	for (int r = 0; r < w->n; r++)
		pthread_join(t[r], NULL);
}

#endif
