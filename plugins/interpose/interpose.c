/* SPDX-License-Identifier: MIT */
/*
 * libpenny-nccl.so: NCCL's C API in front of the real NCCL.  ncclAllReduce,
 * ncclReduceScatter and ncclAllGather run on a penny plugin (the cuda
 * plugin: CUDA IPC kernels) where the plugin supports the call; every other
 * call, and every call penny does not take, goes to the real NCCL
 * unchanged.  See man/penny-nccl.7.
 *
 * Communicators stay NCCL's: the caller holds the real ncclComm_t, and a
 * side table, which every call that makes a communicator fills, maps it to
 * penny's backend, made beside it at its first allreduce, reduce-scatter
 * or all-gather outside a group and a graph capture (or, where one thread
 * made every rank, when they are made: together.c).  The
 * plugin's host services (allgather, barrier) run on the real
 * communicator: ncclAllGather of a small device buffer on a stream of our
 * own, waited for with a timeout.
 */
#define _GNU_SOURCE
#include "interpose.h"

#include "../../src/gpu/plugin_open.h"
#include "penny_data.h"

#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

#ifndef PENNY_PLUGINDIR
#define PENNY_PLUGINDIR "/usr/local/lib/penny"
#endif

/* ---- the real NCCL ---- */

struct real_nccl R;
static pthread_once_t real_once = PTHREAD_ONCE_INIT;
static int real_ok, real_told;
char real_err[512];

/* Calls without which the interposer cannot stand in for NCCL. */
static const char *const required[] = { "ncclGetErrorString", "ncclGetUniqueId", "ncclCommInitRank",
					"ncclCommCount", "ncclCommUserRank", "ncclCommCuDevice",
					"ncclCommDestroy", "ncclCommAbort", "ncclCommGetAsyncError",
					"ncclAllReduce", "ncclAllGather", "ncclGroupStart",
					"ncclGroupEnd" };

static void load_real(void);

/* f is a function of this very object (the name ncclAllReduce here may be
 * bound to another copy of the interposer's, preloaded before it). */
static int ours(void *f)
{
	Dl_info a, b;

	return f && dladdr(f, &a) && dladdr((void *)load_real, &b) && a.dli_fbase == b.dli_fbase;
}

static void load_real(void)
{
	const char *path = getenv("PENNY_NCCL_REAL");
	void *h = NULL, *f;
	Dl_info other;
	size_t i;

	if (path && *path) {
		char why[200] = "";

		/* a regular file, as a plugin: dlopen of a FIFO or device would block or read
		 * without end */
		if (pn_plugin_dlopen(path, &h, why, sizeof(why))) {
			snprintf(real_err, sizeof(real_err), "cannot open the real NCCL PENNY_NCCL_REAL='%.200s': %s",
				 path, why);
			return;
		}
	} else {
		/* LD_PRELOAD: the NCCL the program is linked with comes next */
		f = dlsym(RTLD_NEXT, "ncclAllReduce");
		if (f && dladdr(f, &other) && other.dli_fname)
			h = dlopen(other.dli_fname, RTLD_NOW | RTLD_NOLOAD);
		if (!h)
			h = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
		if (!h) {
			snprintf(real_err, sizeof(real_err), "cannot find the real NCCL: no libnccl.so.2 "
							     "on the library path (set PENNY_NCCL_REAL=/path/to/libnccl.so.2)");
			return;
		}
	}
	/* this very file, or a copy of it (whose own load_real would take itself
	 * for the real NCCL and call itself without end) */
	f = dlsym(h, "ncclAllReduce");
	if (f == (void *)ncclAllReduce || ours(f)) {
		snprintf(real_err, sizeof(real_err), "the real NCCL%s%s%s is libpenny-nccl.so itself "
						     "(set PENNY_NCCL_REAL=/path/to/the/real/libnccl.so.2)",
			 path && *path ? " PENNY_NCCL_REAL='" : "", path && *path ? path : "",
			 path && *path ? "'" : "");
		return;
	}
#define X(name, params, args) *(void **)&R.name = dlsym(h, #name);
	NCCL_FORWARDS(X)
	NCCL_ENQUEUES(X)
	NCCL_OWN(X)
#undef X
	*(void **)&R.ncclGetErrorString = dlsym(h, "ncclGetErrorString");
	*(void **)&R.ncclGetLastError = dlsym(h, "ncclGetLastError");
	for (i = 0; i < sizeof(required) / sizeof(required[0]); i++)
		if (!dlsym(h, required[i])) {
			snprintf(real_err, sizeof(real_err), "the real NCCL%s%s%s lacks %s (not an NCCL library?)",
				 path && *path ? " '" : "", path && *path ? path : "",
				 path && *path ? "'" : "", required[i]);
			return;
		}
	real_ok = 1;
}

/* 1 when the real NCCL is there; else says why, once, and returns 0. */
int real(void)
{
	pthread_once(&real_once, load_real);
	if (!real_ok && !__atomic_exchange_n(&real_told, 1, __ATOMIC_RELAXED))
		say("%s", real_err);
	return real_ok;
}

ncclResult_t lacks(const char *name)
{
	say("the real NCCL lacks %s (older than the caller expects)", name);
	return ncclInvalidUsage;
}

#define X(name, params, args)                                                                      \
	EXPORT ncclResult_t name params                                                            \
	{                                                                                          \
		if (!real())                                                                       \
			return ncclSystemError;                                                    \
		if (!R.name)                                                                       \
			return lacks(#name);                                                       \
		return seen(R.name args);                                                          \
	}
NCCL_FORWARDS(X)
#undef X

/*
 * NCCL's answer to a call that enqueues work on comm where penny's error is
 * its asynchronous error (ncclSuccess: none, or NCCL answers it itself: a
 * revoked communicator, one with NCCL's own error or in progress).
 */
static ncclResult_t refused(ncclComm_t comm)
{
	ncclResult_t e = ncclSuccess, ae;
	struct pcomm *p;

	if (!__atomic_load_n(&penny_errs, __ATOMIC_ACQUIRE) || !(p = hold(comm)))
		return ncclSuccess;
	if (!__atomic_load_n(&p->revoked, __ATOMIC_ACQUIRE))
		e = __atomic_load_n(&p->err, __ATOMIC_ACQUIRE);
	if (e && (real_async_error(comm, &ae) || ae != ncclSuccess))
		e = ncclSuccess;
	unhold(p);
	return e;
}

#define X(name, params, args)                                                                      \
	EXPORT ncclResult_t name params                                                            \
	{                                                                                          \
		ncclResult_t e_;                                                                   \
                                                                                                   \
		if (!real())                                                                       \
			return ncclSystemError;                                                    \
		if (!R.name)                                                                       \
			return lacks(#name);                                                       \
		if ((e_ = refused(comm)) != ncclSuccess)                                           \
			return e_;                                                                 \
		return seen(R.name args);                                                          \
	}
NCCL_ENQUEUES(X)
#undef X

static const char *const own_strings[ncclNumResults] = {
	"no error", "unhandled cuda error", "unhandled system error", "internal error",
	"invalid argument", "invalid usage", "remote process exited or there was a network error",
	"NCCL operation in progress", "operation timed out",
};

EXPORT const char *ncclGetErrorString(ncclResult_t r)
{
	pthread_once(&real_once, load_real);
	if (real_ok)
		return R.ncclGetErrorString(r);
	return (unsigned)r < ncclNumResults ? own_strings[r] : "unknown result code";
}

/* ---- the penny plugin ---- */

const struct penny_plugin_v1 *P;
static pthread_once_t plugin_once = PTHREAD_ONCE_INIT;
static char plugin_err[300];

#define PLUGIN_NEEDS (offsetof(struct penny_plugin_v1, allreduce_stream) + sizeof(void (*)(void)))

/* The kinds this process's plugin has (allreduce: every plugin taken). */
static int plugin_colls(void)
{
	return 1 << K_ALLREDUCE | (PLUGIN_HAS_(reduce_scatter) ? 1 << K_REDUCE_SCATTER : 0) |
	       (PLUGIN_HAS_(allgather_stream) ? 1 << K_ALLGATHER : 0);
}

/*
 * The penny plugin, by the loader's rules (src/gpu/plugin_open.h):
 * PENNY_NCCL_PLUGIN names its file; else penny-cuda.so is searched beside
 * this library (also when it is loaded through a link named libnccl.so.2),
 * then in the install directory.
 */
static void load_plugin(void)
{
	const char *path = getenv("PENNY_NCCL_PLUGIN"), *name = NULL;
	char found[PATH_MAX + 32], dirs[2 * PATH_MAX + 8], me[PATH_MAX], *slash;
	const struct penny_plugin_v1 *t;
	char why[PATH_MAX + 256] = "";
	unsigned abi;
	Dl_info self;
	void *h;

	if (!path || !*path) {
		name = "cuda";
		snprintf(dirs, sizeof(dirs), "%s", PENNY_PLUGINDIR);
		if (dladdr((void *)load_plugin, &self) && self.dli_fname &&
		    realpath(self.dli_fname, me) && (slash = strrchr(me, '/'))) {
			*slash = 0;
			snprintf(dirs, sizeof(dirs), "%s:%s", me, PENNY_PLUGINDIR);
		}
		pn_plugin_find(dirs, name, found, sizeof(found));
		path = found;
	}
	if (pn_plugin_dlopen(path, &h, why, sizeof(why))) {
		snprintf(plugin_err, sizeof(plugin_err), "cannot load the penny plugin %.200s: %s", path, why);
		return;
	}
	if (pn_plugin_table(h, path, name, &t, &abi, why, sizeof(why))) {
		snprintf(plugin_err, sizeof(plugin_err), "%s", why);
		return;
	}
	if (t->size < PLUGIN_NEEDS || !t->allreduce_stream || !t->select) {
		snprintf(plugin_err, sizeof(plugin_err), "the %s plugin %s has no allreduce_stream "
							 "(older than this interposer)",
			 t->name ? t->name : "?", path);
		return;
	}
	P = t;
}

/* ---- communicators ---- */

static pthread_mutex_t comms_lock = PTHREAD_MUTEX_INITIALIZER;
static struct pcomm *comms;
_Thread_local int group_depth;

/*
 * A communicator's state for one call (NULL: not penny's); unhold() when
 * done.  Another thread may abort or destroy the communicator meanwhile
 * (a framework's watchdog does): take() waits for the calls that hold it,
 * an abort only for those not inside NCCL (in_nccl), which NCCL's abort
 * ends (detach).
 */
struct pcomm *hold(ncclComm_t c)
{
	struct pcomm *p;

	if (!c)
		return NULL;
	pthread_mutex_lock(&comms_lock);
	for (p = comms; p && p->real != c; p = p->next)
		;
	if (p)
		__atomic_add_fetch(&p->inflight, 1, __ATOMIC_ACQUIRE);
	pthread_mutex_unlock(&comms_lock);
	return p;
}

void unhold(struct pcomm *p)
{
	if (p)
		__atomic_sub_fetch(&p->inflight, 1, __ATOMIC_RELEASE);
}

/* Out of the table, once no call holds it; abort: the host services of a
 * call in progress give up at once, and the calls inside NCCL (in_nccl)
 * are not waited for: NCCL's abort ends them (detach). */
static struct pcomm *take(ncclComm_t c, int abort)
{
	struct pcomm **pp, *p = NULL;
	struct timespec nap = { 0, 1000000 };

	pthread_mutex_lock(&comms_lock);
	for (pp = &comms; *pp; pp = &(*pp)->next)
		if ((*pp)->real == c) {
			p = *pp;
			*pp = p->next;
			break;
		}
	pthread_mutex_unlock(&comms_lock);
	if (!p)
		return NULL;
	/* sequentially consistent with hs_allgather's in_nccl and its look at
	 * aborting: a call either sees the abort or is counted in in_nccl */
	if (abort)
		__atomic_store_n(&p->aborting, 1, __ATOMIC_SEQ_CST);
	/* out of the table: no new holds, inflight only falls */
	while (__atomic_load_n(&p->inflight, __ATOMIC_SEQ_CST) >
	       (abort ? __atomic_load_n(&p->in_nccl, __ATOMIC_SEQ_CST) : 0))
		nanosleep(&nap, NULL);
	return p;
}

static int aborting(const struct pcomm *p)
{
	return __atomic_load_n(&p->aborting, __ATOMIC_SEQ_CST);
}

/*
 * The host services failed (ret, a negative errno, the plugin's answer)
 * for why, which NCCL would answer res to (the call's result where it was
 * penny's set-up or its buffer agreement: errno_result cannot tell a peer
 * that left from a CUDA call that failed).
 */
static int hs_fail(struct pcomm *p, int ret, ncclResult_t res, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static int hs_fail(struct pcomm *p, int ret, ncclResult_t res, const char *fmt, ...)
{
	va_list ap;

	p->hs_res = res;
	va_start(ap, fmt);
	vsnprintf(p->hs_why, sizeof(p->hs_why), fmt, ap);
	va_end(ap);
	return ret;
}

static int hs_cuda(struct pcomm *p, const char *call, CUresult r)
{
	const char *s = NULL;

	if (!p->cu->GetErrorString || p->cu->GetErrorString(r, &s) || !s)
		s = "unknown CUDA error";
	return hs_fail(p, -EIO, ncclUnhandledCudaError, "%s failed: %s (CUDA error %d)", call, s, (int)r);
}

/* An NCCL result the real NCCL's call gave, in words (its ncclGetErrorString). */
static int hs_nccl(struct pcomm *p, int ret, const char *what, ncclResult_t r)
{
	return hs_fail(p, ret, r, "%s: %s (NCCL error %d)", what, R.ncclGetErrorString(r), (int)r);
}

static int hs_aborted(struct pcomm *p)
{
	return hs_fail(p, -ECANCELED, ncclInternalError, "ncclCommAbort from another thread ended it");
}

/* Wait for the host services' stream, at most PENNY_NCCL_TIMEOUT. */
static int hs_wait(struct pcomm *p)
{
	const struct pn_cudrv *cu = p->cu;
	struct timespec t0, t, nap = { 0, 20000 };
	ncclResult_t ae, r;
	CUresult c;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		if (aborting(p))
			return hs_aborted(p);
		/* a non-blocking communicator enqueues the call once it says ncclSuccess;
		 * data that has arrived stands, whatever a peer did since */
		if ((r = R.ncclCommGetAsyncError(p->real, &ae)) != ncclSuccess)
			return hs_nccl(p, -EREMOTEIO, "NCCL's ncclCommGetAsyncError on it failed", r);
		if (ae != ncclInProgress) {
			c = cu->StreamQuery ? cu->StreamQuery(p->hs) : ae ? CUDA_ERROR_NOT_READY
								   : cu->StreamSynchronize(p->hs);
			if (c == CUDA_SUCCESS)
				return 0;
			if (c != CUDA_ERROR_NOT_READY)
				return hs_cuda(p, cu->StreamQuery ? "cuStreamQuery" : "cuStreamSynchronize", c);
			if (ae != ncclSuccess)
				return hs_nccl(p, -EREMOTEIO, "NCCL's communicator has an error", ae);
		}
		clock_gettime(CLOCK_MONOTONIC, &t);
		if (t.tv_sec - t0.tv_sec >= cfg.timeout_s)
			return hs_fail(p, -ETIMEDOUT, ncclRemoteError,
				       "some rank did not answer within PENNY_NCCL_TIMEOUT (%d s): it left, "
				       "or never made this call", cfg.timeout_s);
		nanosleep(&nap, NULL);
		if (nap.tv_nsec < 1000000)
			nap.tv_nsec *= 2;
	}
}

/* penny_host_v1.allgather: ncclAllGather on the real communicator. */
int hs_allgather(void *ctx, const void *mine, void *all, size_t len)
{
	struct pcomm *p = ctx;
	const struct pn_cudrv *cu = p->cu;
	size_t need;
	CUdeviceptr at;
	ncclResult_t r;
	CUresult c;
	int ret;

	/* quiet: a parked clique's release, its real communicator gone */
	if (aborting(p) || p->quiet)
		return hs_aborted(p);
	if (!len)
		return 0;
	if (len > (SIZE_MAX >> 8) / (size_t)(p->n + 1))
		return hs_fail(p, -EINVAL, ncclInternalError, "a host exchange of %zu bytes a rank", len);
	need = len * (size_t)(p->n + 1);
	if ((c = cu->CtxSetCurrent(p->ctx)))
		return hs_cuda(p, "cuCtxSetCurrent", c);
	if (need > p->buf_bytes) {
		if (p->buf)
			cu->MemFree(p->buf);
		p->buf = 0;
		p->buf_bytes = 0;
		if ((c = cu->MemAlloc(&p->buf, need)))
			return hs_cuda(p, "cuMemAlloc", c);
		p->buf_bytes = need;
	}
	at = p->buf + len * (size_t)p->n;
	c = cu->MemcpyHtoDAsync ? cu->MemcpyHtoDAsync(at, mine, len, p->hs) : cu->MemcpyHtoD(at, mine, len);
	if (c || (!cu->MemcpyHtoDAsync && (c = cu->StreamSynchronize(NULL))))
		return hs_cuda(p, "cuMemcpyHtoD", c);
	/*
	 * NCCL's ncclAllGather may wait on the host for the peers (the
	 * connections of a communicator's first collective): a peer that
	 * never comes leaves it there until NCCL's abort, which a watchdog's
	 * ncclCommAbort on another thread must reach (in_nccl); once the
	 * abort is seen, the real communicator is not touched again.  NCCL's
	 * answer there, where it gave one, is the call's.
	 */
	__atomic_add_fetch(&p->in_nccl, 1, __ATOMIC_SEQ_CST);
	r = aborting(p) ? ncclSuccess
			: R.ncclAllGather((const void *)(uintptr_t)at, (void *)(uintptr_t)p->buf, len,
					  ncclUint8, p->real, p->hs);
	__atomic_sub_fetch(&p->in_nccl, 1, __ATOMIC_SEQ_CST);
	if (r != ncclSuccess && r != ncclInProgress)
		return hs_nccl(p, aborting(p) ? -ECANCELED : -EIO, "NCCL's ncclAllGather on it failed", r);
	if (aborting(p))
		return hs_aborted(p);
	ret = hs_wait(p);
	if (ret)
		return ret;
	if ((c = cu->MemcpyDtoH(all, p->buf, len * (size_t)p->n)))
		return hs_cuda(p, "cuMemcpyDtoH", c);
	return 0;
}

static int hs_barrier(void *ctx)
{
	struct pcomm *p = ctx;
	char one = 1, *all;
	int ret;

	if (p->quiet)
		return 0;
	all = malloc((size_t)p->n);
	if (!all)
		return -ENOMEM;
	ret = hs_allgather(ctx, &one, all, 1);
	free(all);
	return ret;
}

static void hs_log(void *ctx, int level, const char *msg)
{
	struct pcomm *p = ctx;

	if (level == PENNY_LOG_ERROR || debug_on)
		say("rank %d: %s", p->rank, msg);
}

/* The host services' stream, buffer and context reference go. */
static void release(struct pcomm *p)
{
	const struct pn_cudrv *cu = p->cu;

	if (!cu)
		return;
	if (p->ctx)
		cu->CtxSetCurrent(p->ctx);
	if (p->hs)
		cu->StreamDestroy(p->hs);
	if (p->done)
		cu->EventDestroy(p->done);
	p->done = NULL;
	p->done_set = 0;
	if (p->buf)
		cu->MemFree(p->buf);
	if (p->ctx)
		cu->DevicePrimaryCtxRelease(p->dev);
	p->hs = NULL;
	p->buf = 0;
	p->buf_bytes = 0;
	p->ctx = NULL;
}

/* What every rank says before penny's backend is made. */
struct hello {
	uint32_t magic;
	int32_t want, plugin_ok;
	uint64_t max_bytes, eager_max;
	int32_t regcache;	/* on every rank alike: the cache's calls are collective */
	int32_t colls;		/* the kinds its plugin has: penny runs those all have */
	uint64_t proc;		/* its process (pn_plugin_process), with pid: the same for threads of one */
	uint64_t key;		/* drawn for this set-up: rank 0's names a clique of threads */
	int32_t pid;
	char host[64];
	char err[300];
};
#define HELLO_MAGIC 0x706e636cu /* "pncl" */

/* The ranks (of n) in my process (mine: my hello): threads of one process
 * share their proc and pid. */
static int in_process(const struct hello *all, int n, const struct hello *mine)
{
	int r, k = 0;

	for (r = 0; r < n; r++)
		k += all[r].proc == mine->proc && all[r].pid == mine->pid;
	return k;
}

/*
 * Penny's backend beside a communicator, at its first allreduce outside a
 * group and a graph capture (collective over its ranks: every rank makes
 * that call at the same point of the same sequence).  Sets p->state;
 * returns ncclSuccess also when penny stays off, an error only when the
 * host services failed on the real communicator (which then wants an
 * abort, as after NCCL's own asynchronous errors).
 */
ncclResult_t attach(struct pcomm *p)
{
	struct hello mine, *all = NULL;
	int r, ret, nnodes = 0, first_bad = -1, here = 1, pending = PC_PENDING;
	ncclResult_t res;
	CUdevice d;

	/* once, by one thread (two calling one communicator at once is NCCL's misuse) */
	if (!__atomic_compare_exchange_n(&p->state, &pending, PC_OFF, 0, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE))
		return ncclSuccess;
	p->hs_res = ncclSuccess;
	p->hs_why[0] = 0;
	cfg_read();
	if (R.ncclCommCount(p->real, &p->n) || R.ncclCommUserRank(p->real, &p->rank) ||
	    R.ncclCommCuDevice(p->real, &p->dev) || p->n < 2)
		return ncclSuccess;
	p->cu = pn_cudrv_get();
	if (!p->cu || p->cu->Init(0) || p->cu->DeviceGet(&d, p->dev) ||
	    p->cu->DevicePrimaryCtxRetain(&p->ctx, d) || p->cu->CtxSetCurrent(p->ctx) ||
	    p->cu->StreamCreate(&p->hs, CU_STREAM_NON_BLOCKING)) {
		/* NCCL runs on this GPU, so this does not happen on one rank alone */
		say("rank %d: no CUDA driver for penny (%s); NCCL runs this communicator", p->rank,
		    p->cu ? "a driver call failed" : pn_plugin_errmsg());
		release(p);
		return ncclSuccess;
	}
	p->host.size = sizeof(p->host);
	p->host.rank = p->rank;
	p->host.nranks = p->n;
	p->host.ctx = p;
	p->host.allgather = hs_allgather;
	p->host.barrier = hs_barrier;
	p->host.log = hs_log;

	memset(&mine, 0, sizeof(mine));
	mine.magic = HELLO_MAGIC;
	pn_plugin_process(&mine.proc, &mine.pid);
	mine.key = pn_plugin_random() | 1;
	mine.want = cfg_wanted(p->rank == 0, (void *)p->real);
	if (mine.want) {
		pthread_once(&plugin_once, load_plugin);
		mine.plugin_ok = P != NULL;
		mine.colls = P ? plugin_colls() : 0;
		snprintf(mine.err, sizeof(mine.err), "%s", P ? "" : plugin_err);
	}
	mine.max_bytes = cfg.max_bytes;
	mine.eager_max = cfg.eager_max;
	mine.regcache = cfg.regcache > 0;
	gethostname(mine.host, sizeof(mine.host) - 1);
	all = calloc((size_t)p->n, sizeof(*all));
	ret = all ? hs_allgather(p, &mine, all, sizeof(mine)) : -ENOMEM;
	if (ret)
		goto broken;
	for (r = 0; r < p->n; r++) {
		int q;

		for (q = 0; q < r && strncmp(all[q].host, all[r].host, sizeof(all[r].host)); q++)
			;
		if (q == r)
			nnodes++;
		if (!strncmp(all[r].host, mine.host, sizeof(mine.host))) {
			if (r < p->rank)
				p->host.local_rank++;
			p->host.local_size++;
		}
		if (first_bad < 0 && all[r].want && (!all[r].plugin_ok || all[r].magic != HELLO_MAGIC))
			first_bad = r;
	}
	p->host.nnodes = nnodes;
	if (nnodes == 1)
		here = in_process(all, p->n, &mine);
	p->colls = mine.colls;
	for (r = 0; r < p->n; r++)
		p->colls &= all[r].colls;
	for (r = 0; r < p->n && (all[r].want && all[r].max_bytes == mine.max_bytes &&
				 all[r].eager_max == mine.eager_max &&
				 all[r].regcache == mine.regcache); r++)
		;
	if (r < p->n || first_bad >= 0 || nnodes > 1 || (here > 1 && here < p->n)) {
		if (first_bad >= 0 && p->rank == 0)
			say("rank %d: %s; NCCL runs every call", first_bad, all[first_bad].err);
		else if (r < p->n && p->rank == 0 && all[r].want && mine.want)
			say("PENNY_NCCL_MAX_BYTES, PENNY_NCCL_EAGER_MAX_BYTES or PENNY_NCCL_REGCACHE "
			    "(0 or not) differs between ranks 0 and %d; NCCL runs every call", r);
		else if (debug_on && p->rank == 0)
			tell_off(p, nnodes, here);
		goto off;
	}
	p->clique = here == p->n ? all[0].key : 0;

	/* the backend, then whether every rank has one */
	ret = P->init(&p->host, p->dev, &p->be);
	mine.plugin_ok = !ret;
	snprintf(mine.err, sizeof(mine.err), "%s", ret ? P->errmsg() : "");
	if (ret)
		p->be = NULL;
	ret = hs_allgather(p, &mine, all, sizeof(mine));
	if (ret)
		goto broken;
	for (r = 0; r < p->n && all[r].plugin_ok; r++)
		;
	if (r < p->n) {
		if (p->rank == 0)
			say("rank %d: the %s plugin: %s; NCCL runs every call", r, P->name, all[r].err);
		if (p->be) {
			__atomic_store_n(&p->aborting, 1, __ATOMIC_RELEASE); /* peers' backends are gone */
			P->fini(p->be);
			p->be = NULL;
		}
		goto off;
	}
	if (debug_on && p->rank == 0)
		say("penny runs %s%s%s of communicator %p of %d ranks: %s", kind_name[K_ALLREDUCE],
		    p->colls & 1 << K_REDUCE_SCATTER ? ", ncclReduceScatter" : "",
		    p->colls & 1 << K_ALLGATHER ? ", ncclAllGather" : "", (void *)p->real, p->n,
		    P->describe ? P->describe(p->be) : P->name);
	free(all);
	__atomic_store_n(&p->state, PC_ON, __ATOMIC_RELEASE);
	return ncclSuccess;
off:
	free(all);
	release(p);
	return ncclSuccess;
broken:
	/* what NCCL answers where it failed the same way (before the release's
	 * barriers, which fail at once, say otherwise) */
	res = set_err(p, p->hs_res != ncclSuccess ? p->hs_res : errno_result(ret),
		      "penny's set-up on NCCL's communicator failed: %s; abort the communicator",
		      p->hs_why[0] ? p->hs_why : strerror(-ret));
	free(all);
	if (p->be) {
		__atomic_store_n(&p->aborting, 1, __ATOMIC_RELEASE);
		P->fini(p->be);
		p->be = NULL;
	}
	release(p);
	return res;
}

/* Communicator c in the table, in state st (NULL: no memory, NCCL runs it). */
struct pcomm *add(ncclComm_t c, int st)
{
	struct pcomm *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->real = c;
	__atomic_store_n(&p->state, st, __ATOMIC_RELAXED);	/* published by the lock */
	pthread_mutex_lock(&comms_lock);
	p->next = comms;
	comms = p;
	pthread_mutex_unlock(&comms_lock);
	return p;
}

/* Whether work on stream s is being captured into a graph now (unknown: yes). */
static int capturing(cudaStream_t s)
{
	const struct pn_cudrv *cu = pn_cudrv_get();
	int status = 0;

	if (!cu || !cu->StreamIsCapturing)
		return 0;
	return cu->StreamIsCapturing((CUstream)s, &status) != CUDA_SUCCESS || status != 0;
}

/* Penny's backend and the host services' resources go (p stays, off). */
static void unmake(struct pcomm *p)
{
	if (__atomic_load_n(&p->state, __ATOMIC_ACQUIRE) == PC_ON) {
		rc_clear(p);
		P->fini(p->be);
	}
	__atomic_store_n(&p->state, PC_OFF, __ATOMIC_RELEASE);
	release(p);
}

void pcomm_fini(struct pcomm *p)
{
	unmake(p);
	free(p);
}

/* The thread's CUDA context (1), given back after penny's work on the
 * thread, as NCCL's calls leave it: one thread may call ranks of several
 * GPUs, and penny's plugin enters its own. */
int ctx_keep(const struct pn_cudrv *cu, CUcontext *was)
{
	*was = NULL;
	return cu && cu->CtxGetCurrent && cu->CtxGetCurrent(was) == CUDA_SUCCESS;
}

/*
 * Penny's backend goes before the real communicator (abort: at once).  An
 * abort while another thread's call waits inside the host services'
 * ncclAllGather (a peer that never came to penny's set-up: only NCCL's
 * abort ends that wait) aborts the real communicator first, *r its answer
 * (1: done; 0: the caller's to do).
 */
static int detach(ncclComm_t comm, int abort, ncclResult_t *r)
{
	struct pcomm *p = take(comm, abort);
	struct timespec nap = { 0, 1000000 };
	CUcontext was;
	int back = ctx_keep(p ? p->cu : NULL, &was), done = 0;

	if (!p)
		return 0;
	/* the calls take() left were inside NCCL, and touch nothing of it after */
	if (abort && __atomic_load_n(&p->inflight, __ATOMIC_SEQ_CST)) {
		*r = R.ncclCommAbort(comm);
		done = 1;
		while (__atomic_load_n(&p->inflight, __ATOMIC_SEQ_CST))
			nanosleep(&nap, NULL);
	}
	/* after penny's kernels failed, or a revoke, no peer is waited for: as
	 * an abort */
	if (!abort && (__atomic_load_n(&p->err, __ATOMIC_ACQUIRE) ||
		       __atomic_load_n(&p->revoked, __ATOMIC_ACQUIRE))) {
		abort = 1;
		__atomic_store_n(&p->aborting, 1, __ATOMIC_RELEASE);
	}
	/* inside the caller's group no host exchange can run (NCCL would run the
	 * host services' ncclAllGather at the group's end, on a communicator gone
	 * by then): the release's barriers answer at once (a clique's are quiet) */
	if (group_depth && !p->clique)
		__atomic_store_n(&p->aborting, 1, __ATOMIC_RELEASE);
	if (__atomic_load_n(&p->state, __ATOMIC_ACQUIRE) == PC_ON) {
		/* the buffers go: penny's last call on the caller's stream must be done */
		p->cu->CtxSetCurrent(p->ctx);
		if (!abort)
			wait_last(p);
		if (p->clique) {
			/* an abort's backend goes at once; its place in the clique
			 * stays, so that the others' release still comes */
			if (abort)
				unmake(p);
			park(p);
			p = NULL;
		}
	}
	if (p)
		pcomm_fini(p);
	if (back)
		pn_cudrv_get()->CtxSetCurrent(was);
	return done;
}

/*
 * NCCL 2.28's revoke ends the communicator's calls in flight and leaves it
 * to a destroy, split or shrink (as does a shrink with NCCL_SHRINK_ABORT,
 * to its parent): from here on NCCL runs and answers every call of it,
 * penny's host exchanges give up, and its destroy does not wait for
 * penny's last call or its peers.
 */
void revoke_comm(ncclComm_t comm)
{
	struct pcomm *p = hold(comm);

	if (!p)
		return;
	__atomic_store_n(&p->revoked, 1, __ATOMIC_SEQ_CST);
	__atomic_store_n(&p->aborting, 1, __ATOMIC_SEQ_CST);
	unhold(p);
}

EXPORT ncclResult_t ncclCommRevoke(ncclComm_t comm, int flags)
{
	if (!real())
		return ncclSystemError;
	if (!R.ncclCommRevoke)
		return lacks("ncclCommRevoke");
	/* NCCL refuses other flags, and a revoke of a communicator being
	 * destroyed: penny's part stays as it is then */
	if (!flags)
		revoke_comm(comm);
	return seen(R.ncclCommRevoke(comm, flags));
}

/*
 * NCCL takes a finalize or destroy of comm now: its last call done and no
 * error (else it refuses, ncclInvalidArgument while in progress, or the
 * error: penny's part stays for the caller's next try, or its abort; a
 * release of penny's there would not meet its peers', who wait for it),
 * or revoked (its abort flag set: NCCL takes them whatever its error).
 */
static int settled(ncclComm_t comm)
{
	struct pcomm *p = hold(comm);
	ncclResult_t ae = ncclSuccess;
	int yes = !p || __atomic_load_n(&p->revoked, __ATOMIC_ACQUIRE) ||
		  (!real_async_error(comm, &ae) && ae == ncclSuccess);

	unhold(p);
	return yes;
}

EXPORT ncclResult_t ncclCommFinalize(ncclComm_t comm)
{
	ncclResult_t r;

	if (!real())
		return ncclSystemError;
	if (!R.ncclCommFinalize)
		return lacks("ncclCommFinalize");
	if (settled(comm))
		detach(comm, 0, &r);
	return seen(R.ncclCommFinalize(comm));
}

EXPORT ncclResult_t ncclCommDestroy(ncclComm_t comm)
{
	ncclResult_t r;

	if (!real())
		return ncclSystemError;
	if (settled(comm))
		detach(comm, 0, &r);
	return seen(R.ncclCommDestroy(comm));
}

EXPORT ncclResult_t ncclCommAbort(ncclComm_t comm)
{
	ncclResult_t r;

	if (!real())
		return ncclSystemError;
	if (detach(comm, 1, &r))
		return seen(r);
	return seen(R.ncclCommAbort(comm));
}

int real_async_error(ncclComm_t c, ncclResult_t *ae)
{
	return R.ncclCommGetAsyncError(c, ae) != ncclSuccess;
}

/* NCCL's types and ops in penny's numbering (-1: NCCL's alone). */
static int penny_dtype(ncclDataType_t t)
{
	static const int map[] = { PENNY_INT8,	 PENNY_UINT8, PENNY_INT32, PENNY_UINT32,
				   PENNY_INT64,	 PENNY_UINT64, PENNY_HALF, PENNY_FLOAT,
				   PENNY_DOUBLE, PENNY_BFLOAT16 };

	return (unsigned)t < sizeof(map) / sizeof(map[0]) ? map[t] : -1;
}

static int penny_op(ncclRedOp_t o)
{
	static const int map[] = { PENNY_SUM, PENNY_PROD, PENNY_MAX, PENNY_MIN, PENNY_AVG };

	return (unsigned)o < sizeof(map) / sizeof(map[0]) ? map[o] : -1;
}

/* A call penny enqueued failed (ret): the communicator is broken, as after
 * NCCL's asynchronous errors (its peers may be inside the call). */
static ncclResult_t failed(struct pcomm *p, int kind, int ret)
{
	static const char *const what[K_N] = { "allreduce", "reduce-scatter", "all-gather" };
	int hs = p->hs_res != ncclSuccess;

	/* the host services' failure where it was theirs (a peer that left) */
	return set_err(p, hs ? p->hs_res : errno_result(ret), "penny's %s failed: %s%s%s%s", what[kind],
		       P->errmsg(), hs ? " (" : "", p->hs_why, hs ? ")" : "");
}

/*
 * The thread's CUDA context around one call: kept before penny's first
 * work in it (its set-up, or the plugin's call, which enters its own
 * context) and given back at the call's end; a call NCCL runs makes no
 * driver call for it (PyTorch's large calls, which NCCL runs, paid two on
 * every call).
 */
struct ctx_guard {
	const struct pn_cudrv *cu;
	CUcontext was;
	int kept, back;
};

static void ctx_enter(struct ctx_guard *g)
{
	if (!g->kept) {
		g->kept = 1;
		g->back = ctx_keep(g->cu, &g->was);
	}
}

static void ctx_leave(struct ctx_guard *g)
{
	if (g->kept && g->back)
		g->cu->CtxSetCurrent(g->was);
}

/*
 * Whether penny may run c at all (WHY_* but WHY_SIZE; -1: NCCL's
 * communicator, NCCL runs and answers it; -2: penny answers *res), with
 * penny's set-up at a communicator's first such call outside a group and a
 * capture.  NCCL checks a communicator before a call's arguments: a
 * non-blocking one whose last call is still in progress gets
 * ncclInvalidArgument, one with an asynchronous error that error
 * (ncclCommEnsureReady).  So a call NCCL would refuse is NCCL's to answer,
 * before the set-up too (whose ncclAllGather would fail there and break
 * the communicator: it waits for a call made once it is ready, as the
 * caller's next must be), and one on a communicator with penny's error
 * gets that error, as NCCL's would after its own.
 */
static int may_run(struct pcomm *p, const struct call *c, int pdt, int pop, int *cap,
		   struct ctx_guard *cg, ncclResult_t *res)
{
	ncclResult_t ae, e = __atomic_load_n(&p->err, __ATOMIC_ACQUIRE);

	*cap = -1;
	if (__atomic_load_n(&p->revoked, __ATOMIC_ACQUIRE) ||
	    (__atomic_load_n(&p->state, __ATOMIC_ACQUIRE) == PC_OFF && !e))
		return -1;
	if (real_async_error(p->real, &ae) || ae != ncclSuccess)
		return -1;
	if (e) {
		*res = e;
		return -2;
	}
	if (__atomic_load_n(&p->state, __ATOMIC_ACQUIRE) == PC_PENDING && group_depth == 0 &&
	    !(*cap = capturing(c->st))) {
		ctx_enter(cg);
		if ((*res = attach(p)) != ncclSuccess)
			return -2;
	}
	if (__atomic_load_n(&p->state, __ATOMIC_ACQUIRE) != PC_ON)
		return -1;
	/* NCCL's own checks and answers for what penny does not take */
	if (!c->count || !c->s || !c->r)
		return WHY_ARGS;
	if (pdt < 0 || pop < 0)
		return WHY_TYPE;
	if (!(p->colls & 1 << c->kind))
		return WHY_PLUGIN;
	/* one thread's ranks come in groups alone, each rank's launch on its way */
	if (c->kind != K_ALLREDUCE && group_depth && !p->together)
		return WHY_GROUP;
	return WHY_PENNY;
}

/*
 * Whether a call of bytes that passed may_run is penny's by size (algo: the
 * plugin's choice under auto): WHY_PENNY, WHY_SIZE or WHY_EAGER.  *cap
 * (may_run's: -1 unknown) is asked of the stream only when the eager
 * limit could matter.
 */
static int size_rule(size_t bytes, int algo, cudaStream_t st, int *cap)
{
	if (algo < 0)
		return WHY_PLUGIN;
	if (cfg.max_bytes ? bytes > cfg.max_bytes : algo != PENNY_ALGO_ONESHOT)
		return WHY_SIZE;
	if (bytes > cfg.eager_max) {
		if (*cap < 0)
			*cap = capturing(st);
		if (!*cap)
			return WHY_EAGER;
	}
	return WHY_PENNY;
}

/* CUDA's CU_STREAM_LEGACY: the caller's NULL stream, which the plugin's
 * other collectives would take for the backend's own. */
#define STREAM_LEGACY ((void *)(uintptr_t)1)

/*
 * Penny's kernels of c that penny took, on its stream.  An allreduce whose
 * kernels store into the peers' recv (algo) wants it registered: the
 * agreement on it is a host collective, never in a group, at a group's end
 * (one thread may call every rank there) or in a capture (cap: -1
 * unknown).  A reduce-scatter (send: n blocks of count elements, recv:
 * one) or an all-gather (send: one block, recv: n) in place is NCCL's
 * placement (the block at rank's offset in the whole buffer), which the
 * plugin's kernels take; other overlaps are undefined, as in NCCL (and not
 * looked for: ranks must never decide apart).
 */
static ncclResult_t enqueue(struct pcomm *p, const struct call *c, int algo, int cap,
			    struct ctx_guard *cg)
{
	int pdt = penny_dtype(c->dt), pop = c->kind == K_ALLGATHER ? PENNY_SUM : penny_op(c->op);
	void *st = c->st ? (void *)c->st : STREAM_LEGACY;
	int ret;

	ctx_enter(cg);
	if (c->kind == K_REDUCE_SCATTER)
		ret = P->reduce_scatter(p->be, c->s, c->r, c->count, pdt, pop, st);
	else if (c->kind == K_ALLGATHER)
		ret = P->allgather_stream(p->be, c->s, c->r, c->count, pdt, st);
	else if ((algo == PENNY_ALGO_TWOSHOT || algo == PENNY_ALGO_RING) && cfg.regcache &&
		 PLUGIN_HAS(reg_cache) && p->cu->MemGetAddressRange && group_depth == 0 &&
		 !(cap < 0 ? (cap = capturing(c->st)) : cap))
		ret = reg_allreduce(p, c->s, c->r, c->count, pdt, pop, c->st);
	else
		ret = P->allreduce_stream(p->be, c->s, c->r, c->count, pdt, pop, PENNY_ALGO_AUTO, c->st);
	if (ret)
		return failed(p, c->kind, ret);
	p->last = c->st;
	p->used = 1;
	/* never in a capture: the record would be a node of the caller's graph */
	if (!(cap < 0 ? capturing(c->st) : cap))
		p->done_set = mark_done(p, c->st);
	return ncclSuccess;
}

/*
 * Whether penny takes c (1: *res is its answer) or NCCL runs it (0).  The
 * size that counts is the whole buffer's (n blocks, nccl-tests' size),
 * which the plugin's allreduce of that size must run one-shot under auto.
 * Inside a group, a call penny takes runs at the group's end, as NCCL's
 * grouped calls do (the ranks make the same calls, so they decide alike).
 */
static int penny_call(struct pcomm *p, const struct call *c, struct ctx_guard *cg,
		      ncclResult_t *res)
{
	int pdt = penny_dtype(c->dt), pop = c->kind == K_ALLGATHER ? PENNY_SUM : penny_op(c->op);
	int cap, algo, why = may_run(p, c, pdt, pop, &cap, cg, res);
	size_t n, bytes;

	if (why == -2)
		return 1;
	n = c->kind == K_ALLREDUCE || why ? 1 : (size_t)p->n;
	if (why == WHY_PENNY && c->count > SIZE_MAX / 16 / n)
		why = WHY_ARGS;
	if (why) {
		if (why > 0)
			tell(p, c->kind, why, 0);
		return 0;
	}
	bytes = c->count * n * (size_t)penny_data_size(pdt);
	algo = P->select(p->be, c->count * n, pdt, pop, PENNY_ALGO_AUTO);
	why = size_rule(bytes, algo, c->st, &cap);
	tell(p, c->kind, why, bytes);
	if (why)
		return 0;
	/* no room to keep it: at once, as every rank's call of it is penny's */
	if (group_depth && !later_add(c))
		return 1;
	*res = enqueue(p, c, algo, cap, cg);
	return 1;
}

/* Whether penny takes c (1: *res is its answer), or NCCL runs it (0). */
static int taken(const struct call *c, ncclResult_t *res)
{
	struct pcomm *p = hold(c->comm);
	struct ctx_guard cg = { p ? pn_cudrv_get() : NULL, NULL, 0, 0 };
	int yes;

	*res = ncclSuccess;
	if (!p)
		return 0;
	p->hs_res = ncclSuccess;
	p->hs_why[0] = 0;
	yes = penny_call(p, c, &cg, res);
	ctx_leave(&cg);
	unhold(p);
	return yes;
}

/*
 * A call penny took inside a group, at the group's end: not run where its
 * communicator went meanwhile (destroyed, aborted or revoked inside the
 * group: NCCL's group would use it after it is gone), or has penny's
 * error since (an earlier call of the group failed).
 */
ncclResult_t run_later(const struct call *c)
{
	struct pcomm *p = hold(c->comm);
	struct ctx_guard cg = { pn_cudrv_get(), NULL, 0, 0 };
	ncclResult_t res;

	if (!p || __atomic_load_n(&p->revoked, __ATOMIC_ACQUIRE) ||
	    __atomic_load_n(&p->state, __ATOMIC_ACQUIRE) != PC_ON) {
		say("%s of communicator %p in a group not run: the communicator was destroyed, "
		    "aborted or revoked before the group's end", kind_name[c->kind], (void *)c->comm);
		unhold(p);
		return ncclInvalidUsage;
	}
	p->hs_res = ncclSuccess;
	p->hs_why[0] = 0;
	res = __atomic_load_n(&p->err, __ATOMIC_ACQUIRE);
	if (res == ncclSuccess)
		res = enqueue(p, c, -1, -1, &cg);
	ctx_leave(&cg);
	unhold(p);
	return res;
}

ncclResult_t nccl_call(const struct call *c)
{
	if (c->kind == K_REDUCE_SCATTER)
		return seen(R.ncclReduceScatter(c->s, c->r, c->count, c->dt, c->op, c->comm, c->st));
	if (c->kind == K_ALLGATHER)
		return seen(R.ncclAllGather(c->s, c->r, c->count, c->dt, c->comm, c->st));
	return seen(R.ncclAllReduce(c->s, c->r, c->count, c->dt, c->op, c->comm, c->st));
}

EXPORT ncclResult_t ncclAllReduce(const void *s, void *r, size_t count, ncclDataType_t dt,
				  ncclRedOp_t op, ncclComm_t comm, cudaStream_t st)
{
	struct call c = { comm, K_ALLREDUCE, s, r, count, dt, op, st };
	ncclResult_t res;

	if (!real())
		return ncclSystemError;
	return taken(&c, &res) ? res : nccl_call(&c);
}

EXPORT ncclResult_t ncclReduceScatter(const void *s, void *r, size_t count, ncclDataType_t dt,
				      ncclRedOp_t op, ncclComm_t comm, cudaStream_t st)
{
	struct call c = { comm, K_REDUCE_SCATTER, s, r, count, dt, op, st };
	ncclResult_t res;

	if (!real())
		return ncclSystemError;
	if (!R.ncclReduceScatter)
		return lacks("ncclReduceScatter");
	return taken(&c, &res) ? res : nccl_call(&c);
}

EXPORT ncclResult_t ncclAllGather(const void *s, void *r, size_t count, ncclDataType_t dt,
				  ncclComm_t comm, cudaStream_t st)
{
	struct call c = { comm, K_ALLGATHER, s, r, count, dt, ncclSum, st };
	ncclResult_t res;

	if (!real())
		return ncclSystemError;
	return taken(&c, &res) ? res : nccl_call(&c);
}
