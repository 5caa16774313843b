/* SPDX-License-Identifier: MIT */
/* The nccl plugin: ncclAllReduce and NCCL's other collectives on the
 * plugin's stream, timed like penny's. */
#define _GNU_SOURCE
#include "nccl.h"

#include "../include/penny_data.h"

#include <dlfcn.h>
#include <errno.h>
#include <stddef.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct pn_nccl_api nccl_real;
static const struct pn_nccl_api *nccl_fake;
static pthread_mutex_t load_lock = PTHREAD_MUTEX_INITIALIZER;
static int loaded;

void pn_nccl_set_api(const struct pn_nccl_api *f)
{
	nccl_fake = f;
}

static int resolve(void *dl, struct pn_nccl_api *a, char *why, size_t len)
{
	static const struct {
		const char *name;
		size_t off;
		int optional;
	} nccl_syms[] = {
		{ "ncclGetVersion", offsetof(struct pn_nccl_api, GetVersion), 0 },
		{ "ncclGetUniqueId", offsetof(struct pn_nccl_api, GetUniqueId), 0 },
		{ "ncclCommInitRank", offsetof(struct pn_nccl_api, CommInitRank), 0 },
		{ "ncclCommFinalize", offsetof(struct pn_nccl_api, CommFinalize), 1 },
		{ "ncclCommDestroy", offsetof(struct pn_nccl_api, CommDestroy), 0 },
		{ "ncclCommGetAsyncError", offsetof(struct pn_nccl_api, CommGetAsyncError), 0 },
		{ "ncclAllReduce", offsetof(struct pn_nccl_api, AllReduce), 0 },
		{ "ncclAllGather", offsetof(struct pn_nccl_api, AllGather), 0 },
		{ "ncclReduceScatter", offsetof(struct pn_nccl_api, ReduceScatter), 1 },
		{ "ncclBroadcast", offsetof(struct pn_nccl_api, Broadcast), 1 },
		{ "ncclReduce", offsetof(struct pn_nccl_api, Reduce), 1 },
		{ "ncclSend", offsetof(struct pn_nccl_api, Send), 1 },
		{ "ncclRecv", offsetof(struct pn_nccl_api, Recv), 1 },
		{ "ncclGroupStart", offsetof(struct pn_nccl_api, GroupStart), 1 },
		{ "ncclGroupEnd", offsetof(struct pn_nccl_api, GroupEnd), 1 },
		{ "ncclGetErrorString", offsetof(struct pn_nccl_api, GetErrorString), 0 },
		{ "ncclGetLastError", offsetof(struct pn_nccl_api, GetLastError), 1 },
		{ "ncclMemAlloc", offsetof(struct pn_nccl_api, MemAlloc), 1 },
		{ "ncclMemFree", offsetof(struct pn_nccl_api, MemFree), 1 },
		{ "ncclCommWindowRegister", offsetof(struct pn_nccl_api, CommWindowRegister), 1 },
		{ "ncclCommWindowDeregister", offsetof(struct pn_nccl_api, CommWindowDeregister), 1 },
	};
	size_t i;

	for (i = 0; i < sizeof(nccl_syms) / sizeof(nccl_syms[0]); i++) {
		void *f = dlsym(dl, nccl_syms[i].name);

		if (!f && !nccl_syms[i].optional) {
			snprintf(why, len, "lacks '%s'", nccl_syms[i].name);
			return -1;
		}
		memcpy((char *)a + nccl_syms[i].off, &f, sizeof(f));
	}
	return 0;
}

/* Try one library; appends "where: why" to tried on failure. */
static int try_lib(const char *path, char *tried, size_t len)
{
	void *dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	char why[200];
	size_t used = strlen(tried);

	if (!dl) {
		const char *e = dlerror();

		snprintf(why, sizeof(why), "%s", e ? e : "not found");
	} else if (resolve(dl, &nccl_real, why, sizeof(why))) {
		dlclose(dl);
		dl = NULL;
	}
	if (!dl) {
		/* dlerror() repeats the path; keep the reason short */
		const char *colon = strstr(why, ": ");

		snprintf(tried + used, len - used, "%s%s (%s)", used ? "; " : "", path,
			 colon && !strncmp(why, path, (size_t)(colon - why)) ? colon + 2 : why);
		return -1;
	}
	snprintf(nccl_real.path, sizeof(nccl_real.path), "%s", path);
	return 0;
}

static int python_nccl_dir(char *dir, size_t len)
{
	FILE *f = popen("python3 -c 'import nvidia.nccl,os;print(nvidia.nccl.__path__[0])' 2>/dev/null",
			"r");
	size_t n;

	if (!f)
		return -1;
	if (!fgets(dir, (int)len, f))
		dir[0] = 0;
	pclose(f);
	n = strlen(dir);
	while (n && (dir[n - 1] == '\n' || dir[n - 1] == '\r'))
		dir[--n] = 0;
	return n ? 0 : -1;
}

const struct pn_nccl_api *pn_nccl_api_get(void)
{
	static char tried[1024];
	const char *env = getenv("PENNY_NCCL_LIB");
	char dir[512], path[600];
	int ok = 0;

	if (nccl_fake)
		return nccl_fake;
	pthread_mutex_lock(&load_lock);
	if (loaded) {
		pthread_mutex_unlock(&load_lock);
		return &nccl_real;
	}
	tried[0] = 0;
	if (env && *env) {
		ok = !try_lib(env, tried, sizeof(tried));
	} else {
		ok = !try_lib("libnccl.so.2", tried, sizeof(tried));
		if (!ok) {
			if (python_nccl_dir(dir, sizeof(dir)) == 0) {
				snprintf(path, sizeof(path), "%s/lib/libnccl.so.2", dir);
				ok = !try_lib(path, tried, sizeof(tried));
			} else {
				size_t used = strlen(tried);

				snprintf(tried + used, sizeof(tried) - used,
					 "; python3 nvidia.nccl (no such package)");
			}
		}
	}
	loaded = ok;
	pthread_mutex_unlock(&load_lock);
	if (!ok) {
		pn_plugin_fail(-ENOENT, "cannot load NCCL: %s%s", tried,
			       env && *env ? "" : " (set PENNY_NCCL_LIB to its path)");
		return NULL;
	}
	return &nccl_real;
}

int pn_nccl_has_symm(const struct pn_nccl_api *a)
{
	return a && a->MemAlloc && a->MemFree && a->CommWindowRegister && a->CommWindowDeregister;
}

int pn_nccl_dtype(int dtype)
{
	static const int map[PENNY_NDTYPES] = {
		[PENNY_INT8] = 0, [PENNY_UINT8] = 1, [PENNY_INT32] = 2, [PENNY_UINT32] = 3,
		[PENNY_INT64] = 4, [PENNY_UINT64] = 5, [PENNY_HALF] = 6, [PENNY_FLOAT] = 7,
		[PENNY_DOUBLE] = 8, [PENNY_BFLOAT16] = 9,
	};

	return dtype >= 0 && dtype < PENNY_NDTYPES ? map[dtype] : -1;
}

int pn_nccl_op(int op)
{
	static const int map[PENNY_NREDOPS] = {
		[PENNY_SUM] = 0, [PENNY_PROD] = 1, [PENNY_MAX] = 2, [PENNY_MIN] = 3, [PENNY_AVG] = 4,
	};

	return op >= 0 && op < PENNY_NREDOPS ? map[op] : -1;
}

/* A REGISTERED allocation: ncclMemAlloc'd and a symmetric window of symm. */
struct pn_nccl_win {
	void *ptr;
	size_t bytes;
	ncclWindow_t win;
	struct pn_nccl_win *next;
};

/* A staging buffer a CUDA graph may still read: kept until fini. */
struct pn_nccl_old {
	CUdeviceptr p;
	struct pn_nccl_old *next;
};

/*
 * Two communicators over the same ranks: comm runs NCCL's default path
 * (PENNY_ALGO_AUTO) and symm, where every REGISTERED allocation is a
 * symmetric window, runs NCCL's symmetric-memory kernels
 * (PENNY_ALGO_SYMMETRIC).  Windows belong to one communicator, so the same
 * buffers serve both without the default path seeing them registered.
 */
struct pn_nccl {
	struct pn_gpu g;
	const struct penny_host_v1 *host;
	const struct pn_nccl_api *api;
	ncclComm_t comm, symm;
	struct pn_nccl_win *wins;
	int version;
	char desc[480];
	/* in-place alltoall and sendrecv: the input staged here (stage_input) */
	CUdeviceptr stage;
	size_t stage_len;
	CUstream stage_stream;	/* the last stream that used it */
	int stage_captured;	/* a graph captured with it may hold it */
	struct pn_nccl_old *retired;
};
/* the shared entry points (pn_gpu_be_*) take the backend as its struct pn_gpu */
_Static_assert(offsetof(struct pn_nccl, g) == 0, "struct pn_nccl begins with its struct pn_gpu");

static int nccl_fail(struct pn_nccl *c, ncclResult_t r, const char *what)
{
	const char *s = c->api->GetErrorString ? c->api->GetErrorString(r) : NULL;
	const char *last = c->api->GetLastError && c->comm ? c->api->GetLastError(c->comm) : NULL;

	return pn_plugin_fail(-EIO, "%s: %s%s%s (NCCL error %d)", what, s ? s : "error",
			      last && *last ? ": " : "", last && *last ? last : "", r);
}

/* NVLink SHARP / multicast stays off on shared machines.  The environment
 * is changed once per process (ranks may be threads of one process). */
static pthread_once_t nvls_once = PTHREAD_ONCE_INIT;
static char nvls_was[64];

static void nvls_off_once(void)
{
	const char *v = getenv("NCCL_NVLS_ENABLE");

	if (v && strcmp(v, "0"))
		snprintf(nvls_was, sizeof(nvls_was), "%s", v);
	setenv("NCCL_NVLS_ENABLE", "0", 1);
	setenv("NVSHMEM_DISABLE_NVLS", "1", 1);
}

static void keep_nvls_off(const struct penny_host_v1 *host)
{
	pthread_once(&nvls_once, nvls_off_once);
	if (nvls_was[0])
		pn_gpu_log(host, PENNY_LOG_INFO, "nccl: NCCL_NVLS_ENABLE=%s overridden to 0",
			   nvls_was);
}

struct pn_nccl_hello {
	int32_t ok;
	int32_t symm;	/* rank 0: a second id for the symmetric communicator */
	int32_t node;	/* host->node */
	char busid[32];	/* the rank's GPU ("" before it opened one) */
	char err[220];
	ncclUniqueId id, id_symm;
};

/* Two ranks of one node on one GPU: NCCL stops them with "invalid usage"
 * in ncclCommInitRank, which names neither; say who, on every rank. */
static int shared_gpu(const struct pn_nccl_hello *all, int n)
{
	for (int p = 0; p < n; p++)
		for (int q = p + 1; q < n; q++)
			if (all[p].busid[0] && all[p].node == all[q].node &&
			    !strncmp(all[p].busid, all[q].busid, sizeof(all[p].busid)))
				return pn_plugin_fail(-EINVAL, "ranks %d and %d share GPU %.31s on one node: "
						      "NCCL runs one rank per GPU (--share-gpus is for "
						      "penny's own kernels)", p, q, all[p].busid);
	return 0;
}

static pthread_mutex_t hostid_lock = PTHREAD_MUTEX_INITIALIZER;

/*
 * Emulated nodes on one host (PENNY_NODE_ID): NCCL must see the same node
 * split as penny, so each emulated node gets its own NCCL_HOSTID (unless the
 * caller set one).  Returns 1 when it set it.
 */
static int emulated_node_hostid(const struct penny_host_v1 *host, char *set, size_t len)
{
	const char *node, *have;
	int ret = 0;

	/* ranks that are threads of one process read and set it one at a time */
	pthread_mutex_lock(&hostid_lock);
	node = getenv("PENNY_NODE_ID");
	have = getenv("NCCL_HOSTID");
	set[0] = 0;
	if (have && *have) {
		snprintf(set, len, "%s", have);
	} else if (node && *node && host->nnodes > 1) {
		snprintf(set, len, "penny-node-%s", node);
		setenv("NCCL_HOSTID", set, 1);
		ret = 1;
	}
	pthread_mutex_unlock(&hostid_lock);
	return ret;
}

static int async_error(void *be);

static const struct pn_gpu_hooks nccl_hooks = {
	.allreduce = pn_nccl_allreduce,
	.errors = async_error,
};

int pn_nccl_init(const void *data_image, const struct penny_host_v1 *host, int device, void **be)
{
	struct pn_nccl *c;
	struct pn_nccl_hello mine, *all = NULL;
	char hostid[96];
	ncclResult_t r;
	int ret = 0, p;

	*be = NULL;
	if (!host || host->size < sizeof(struct penny_host_v1) || !host->allgather)
		return pn_plugin_fail(-EINVAL, "the host passed no allgather service");
	if (host->nranks < 1 || host->rank < 0 || host->rank >= host->nranks)
		return pn_plugin_fail(-EINVAL, "bad rank %d of %d", host->rank, host->nranks);
	c = calloc(1, sizeof(*c));
	all = calloc((size_t)host->nranks, sizeof(*all));
	if (!c || !all) {
		free(c);
		free(all);
		return pn_plugin_fail(-ENOMEM, "out of memory");
	}
	c->host = host;
	keep_nvls_off(host);
	/* every rank says whether it got this far, so that no rank waits alone in NCCL */
	memset(&mine, 0, sizeof(mine));
	c->api = pn_nccl_api_get();
	if (!c->api)
		ret = -ENOENT;
	if (!ret)
		ret = pn_gpu_open(&c->g, host, device, data_image);
	c->g.hooks = &nccl_hooks;
	if (!ret && host->rank == 0) {
		r = c->api->GetUniqueId(&mine.id);
		if (!r && pn_nccl_has_symm(c->api)) {
			r = c->api->GetUniqueId(&mine.id_symm);
			mine.symm = 1;
		}
		if (r)
			ret = nccl_fail(c, r, "ncclGetUniqueId");
	}
	mine.ok = !ret;
	mine.node = host->node;
	if (!ret)
		snprintf(mine.busid, sizeof(mine.busid), "%s", c->g.busid);
	if (ret)
		snprintf(mine.err, sizeof(mine.err), "%s", pn_plugin_errmsg());
	p = host->allgather(host->ctx, &mine, all, sizeof(mine));
	if (p) {
		ret = pn_plugin_fail(p < 0 ? p : -EIO, "allgather through the host failed");
		goto fail;
	}
	if (ret)
		goto fail;
	for (p = 0; p < host->nranks; p++)
		if (!all[p].ok) {
			ret = pn_plugin_fail(-EIO, "rank %d failed: %s", p, all[p].err);
			goto fail;
		}
	ret = shared_gpu(all, host->nranks);
	if (ret)
		goto fail;
	if (all[0].symm && !pn_nccl_has_symm(c->api)) {
		/* every rank goes on to NCCL: fail there together, not here alone */
		ret = pn_plugin_fail(-EIO, "rank 0's NCCL has symmetric memory, this rank's (%s) not",
				     c->api->path);
		goto fail;
	}
	c->api->GetVersion(&c->version);
	if (emulated_node_hostid(host, hostid, sizeof(hostid)))
		pn_gpu_log(host, PENNY_LOG_INFO, "nccl: NCCL_HOSTID=%s (emulated node %d of %d)",
			   hostid, host->node, host->nnodes);
	r = c->api->CommInitRank(&c->comm, host->nranks, all[0].id, host->rank);
	if (r) {
		c->comm = NULL;
		ret = nccl_fail(c, r, "ncclCommInitRank");
		goto fail;
	}
	if (all[0].symm) {
		r = c->api->CommInitRank(&c->symm, host->nranks, all[0].id_symm, host->rank);
		if (r) {
			c->symm = NULL;
			ret = nccl_fail(c, r, "ncclCommInitRank (symmetric)");
			goto fail;
		}
	}
	snprintf(c->desc, sizeof(c->desc),
		 "%s (%s) sm_%d%d %d SMs, CUDA driver %d.%d, rank %d of %d, NCCL %d.%d.%d from %s, "
		 "NCCL_NVLS_ENABLE=0%s%s%s",
		 c->g.name, c->g.busid, c->g.cc_major, c->g.cc_minor, c->g.nsm,
		 c->g.driver_version / 1000, c->g.driver_version % 1000 / 10, host->rank,
		 host->nranks, c->version / 10000, c->version / 100 % 100, c->version % 100,
		 c->api->path[0] ? c->api->path : "(test)",
		 c->symm ? ", symmetric windows" : ", no symmetric memory (NCCL < 2.27)",
		 hostid[0] ? ", NCCL_HOSTID=" : "", hostid);
	free(all);
	*be = c;
	return 0;
fail:
	if (c->symm)
		c->api->CommDestroy(c->symm);
	if (c->comm)
		c->api->CommDestroy(c->comm);
	pn_gpu_close(&c->g);
	free(all);
	free(c);
	return ret;
}

void pn_nccl_fini(void *be)
{
	struct pn_nccl *c = be;

	if (!c)
		return;
	pn_gpu_enter(&c->g);
	if (c->g.hung) {
		/* NCCL's kernels may never end, and every NCCL teardown waits for
		 * them: ncclCommAbort too (its cudaFreeHost blocked on 2 x H200,
		 * NCCL 2.28.9).  The communicators and device memory are left
		 * to the process's exit; only the host's lists go. */
		while (c->wins) {
			struct pn_nccl_win *w = c->wins;

			c->wins = w->next;
			free(w);
		}
		while (c->retired) {
			struct pn_nccl_old *o = c->retired;

			c->retired = o->next;
			free(o);
		}
		pn_gpu_close(&c->g);
		free(c);
		return;
	}
	c->g.cu->StreamSynchronize(c->g.stream);
	if (c->stage_stream)
		c->g.cu->StreamSynchronize(c->stage_stream);
	while (c->wins)
		pn_nccl_free(c, c->wins->ptr);
	if (c->stage)
		c->g.cu->MemFree(c->stage);
	while (c->retired) {
		struct pn_nccl_old *o = c->retired;

		c->retired = o->next;
		c->g.cu->MemFree(o->p);
		free(o);
	}
	if (c->symm) {
		if (c->api->CommFinalize)
			c->api->CommFinalize(c->symm);
		c->api->CommDestroy(c->symm);
	}
	if (c->comm) {
		if (c->api->CommFinalize)
			c->api->CommFinalize(c->comm);
		c->api->CommDestroy(c->comm);
	}
	pn_gpu_close(&c->g);
	free(c);
}

const char *pn_nccl_describe(void *be)
{
	return ((struct pn_nccl *)be)->desc;
}

#define ENTER(c)                                                                               \
	do {                                                                                   \
		int _e = pn_gpu_enter(&(c)->g);                                                \
		if (_e)                                                                        \
			return _e;                                                             \
	} while (0)

/* REGISTERED with a symmetric communicator: ncclMemAlloc (cuMem, as windows
 * need) and a symmetric window of symm (collective, like alloc itself). */
int pn_nccl_alloc(void *be, size_t bytes, unsigned flags, void **ptr)
{
	struct pn_nccl *c = be;
	struct pn_nccl_win *w;
	ncclResult_t r;

	ENTER(c);
	if (!(flags & PENNY_MEM_REGISTERED) || !c->symm)
		return pn_gpu_alloc(&c->g, bytes, ptr);
	w = calloc(1, sizeof(*w));
	if (!w)
		return pn_plugin_fail(-ENOMEM, "out of memory");
	w->bytes = bytes ? bytes : 1;
	r = c->api->MemAlloc(&w->ptr, w->bytes);
	if (r) {
		free(w);
		return nccl_fail(c, r, "ncclMemAlloc");
	}
	r = c->api->CommWindowRegister(c->symm, w->ptr, w->bytes, &w->win,
				       PN_NCCL_WIN_COLL_SYMMETRIC);
	if (r) {
		int ret = nccl_fail(c, r, "ncclCommWindowRegister");

		c->api->MemFree(w->ptr);
		free(w);
		return ret;
	}
	w->next = c->wins;
	c->wins = w;
	*ptr = w->ptr;
	return 0;
}

int pn_nccl_free(void *be, void *ptr)
{
	struct pn_nccl *c = be;
	struct pn_nccl_win **pw, *w;
	ncclResult_t r, r2;

	ENTER(c);
	if (c->g.hung)	/* NCCL's work may still use it: the exit frees it */
		return 0;
	for (pw = &c->wins; *pw && (*pw)->ptr != ptr; pw = &(*pw)->next)
		;
	if (!*pw)
		return pn_gpu_free(&c->g, ptr);
	w = *pw;
	*pw = w->next;
	/* the window's last use must be over before it goes */
	c->g.cu->StreamSynchronize(c->g.stream);
	r = c->api->CommWindowDeregister(c->symm, w->win);
	r2 = c->api->MemFree(w->ptr);
	free(w);
	if (r)
		return nccl_fail(c, r, "ncclCommWindowDeregister");
	return r2 ? nccl_fail(c, r2, "ncclMemFree") : 0;
}

/* Whether [p, p + bytes) lies in one symmetric window. */
static int in_window(const struct pn_nccl *c, const void *p, size_t bytes)
{
	const struct pn_nccl_win *w;

	for (w = c->wins; w; w = w->next) {
		uintptr_t a = (uintptr_t)p, b = (uintptr_t)w->ptr;

		if (a >= b && a - b < w->bytes && bytes <= w->bytes - (a - b))
			return 1;
	}
	return 0;
}

int pn_nccl_select(void *be, size_t count, int dtype, int op, int algo)
{
	struct pn_nccl *c = be;
	int ret = pn_gpu_check_args(count, dtype, op);

	if (ret)
		return ret;
	if (algo == PENNY_ALGO_SYMMETRIC) {
		if (!c->symm)
			return pn_plugin_fail(-ENOTSUP, "NCCL %d.%d.%d has no symmetric memory "
							"(ncclCommWindowRegister: NCCL >= 2.27)",
					      c->version / 10000, c->version / 100 % 100,
					      c->version % 100);
		return PENNY_ALGO_SYMMETRIC;
	}
	if (algo != PENNY_ALGO_AUTO)
		return pn_plugin_fail(-ENOTSUP, "the nccl backend runs NCCL's own algorithm choice "
						"(auto) or its symmetric-memory kernels (symmetric)");
	return PENNY_ALGO_AUTO;
}

int pn_nccl_allreduce(void *be, const void *send, void *recv, size_t count, int dtype, int op,
		      int algo)
{
	struct pn_nccl *c = be;
	ncclResult_t r;
	int ret = pn_nccl_select(be, count, dtype, op, algo);

	if (ret < 0)
		return ret;
	if (!count)
		return 0;
	if (ret == PENNY_ALGO_SYMMETRIC) {
		size_t bytes = count * (size_t)penny_data_size(dtype);

		if (!in_window(c, send, bytes) || !in_window(c, recv, bytes))
			return pn_plugin_fail(-EINVAL, "symmetric: send and recv must lie in "
							"REGISTERED allocations (symmetric windows)");
	}
	ENTER(c);
	r = c->api->AllReduce(send, recv, count, pn_nccl_dtype(dtype), pn_nccl_op(op),
			      ret == PENNY_ALGO_SYMMETRIC ? c->symm : c->comm, c->g.stream);
	return r ? nccl_fail(c, r, "ncclAllReduce") : 0;
}

int pn_nccl_allgather(void *be, const void *send, void *recv, size_t count, int dtype)
{
	struct pn_nccl *c = be;
	ncclResult_t r;
	int ret = pn_gpu_check_args(count, dtype, PENNY_SUM);

	if (ret || !count)
		return ret;
	if (!c->api->AllGather)
		return pn_plugin_fail(-ENOTSUP, "this NCCL has no ncclAllGather");
	ENTER(c);
	r = c->api->AllGather(send, recv, count, pn_nccl_dtype(dtype), c->comm, c->g.stream);
	return r ? nccl_fail(c, r, "ncclAllGather") : 0;
}

/* The caller's stream, or the plugin's own for NULL. */
static CUstream stream_of(const struct pn_nccl *c, void *stream)
{
	return stream ? (CUstream)stream : c->g.stream;
}

/* A call this NCCL lacks: refused in one line. */
static int lacks(const char *sym)
{
	return pn_plugin_fail(-ENOTSUP, "this NCCL has no %s", sym);
}

int pn_nccl_reduce_scatter(void *be, const void *send, void *recv, size_t count, int dtype,
			   int op, void *stream)
{
	struct pn_nccl *c = be;
	ncclResult_t r;
	int ret = pn_gpu_check_args(count, dtype, op);

	if (ret || !count)
		return ret;
	if (!c->api->ReduceScatter)
		return lacks("ncclReduceScatter");
	ENTER(c);
	r = c->api->ReduceScatter(send, recv, count, pn_nccl_dtype(dtype), pn_nccl_op(op), c->comm,
				  stream_of(c, stream));
	return r ? nccl_fail(c, r, "ncclReduceScatter") : 0;
}

static int check_root(const struct pn_nccl *c, int root)
{
	return root < 0 || root >= c->host->nranks
		       ? pn_plugin_fail(-EINVAL, "root %d is not a rank of %d", root, c->host->nranks)
		       : 0;
}

int pn_nccl_broadcast(void *be, const void *send, void *recv, size_t count, int dtype, int root,
		      void *stream)
{
	struct pn_nccl *c = be;
	ncclResult_t r;
	int ret = pn_gpu_check_args(count, dtype, PENNY_SUM);

	if (!ret)
		ret = check_root(c, root);
	if (ret || !count)
		return ret;
	if (!c->api->Broadcast)
		return lacks("ncclBroadcast");
	ENTER(c);
	r = c->api->Broadcast(send, recv, count, pn_nccl_dtype(dtype), root, c->comm,
			      stream_of(c, stream));
	return r ? nccl_fail(c, r, "ncclBroadcast") : 0;
}

int pn_nccl_reduce(void *be, const void *send, void *recv, size_t count, int dtype, int op,
		   int root, void *stream)
{
	struct pn_nccl *c = be;
	ncclResult_t r;
	int ret = pn_gpu_check_args(count, dtype, op);

	if (!ret)
		ret = check_root(c, root);
	if (ret || !count)
		return ret;
	if (!c->api->Reduce)
		return lacks("ncclReduce");
	ENTER(c);
	r = c->api->Reduce(send, recv, count, pn_nccl_dtype(dtype), pn_nccl_op(op), root, c->comm,
			   stream_of(c, stream));
	return r ? nccl_fail(c, r, "ncclReduce") : 0;
}

/*
 * In place (the input overlaps the output, as nccl-tests places alltoall
 * and sendrecv), a group's receive may land in a block before NCCL has
 * read it for a send: NCCL runs a group's sends and receives at once, in
 * no set order.  So the input is staged first: one device-to-device copy,
 * on the caller's stream before the group, into the plugin's staging
 * buffer, and the sends read that.  Out of place sends straight from the
 * caller's buffer.  The buffer grows outside CUDA-graph capture only
 * (cuMemAlloc may not run while the stream is captured): a captured call
 * that needs more fails, asking for an uncaptured call (a warm-up) first.
 * A buffer a graph was captured with is kept until fini, never freed while
 * that graph may still run.  One buffer per backend: in-place calls on
 * several streams at once must be ordered by the caller (penny's are on
 * one stream).
 */
static int overlaps(const void *a, const void *b, size_t bytes)
{
	uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;

	return bytes && x < y + bytes && y < x + bytes;
}

static int capturing(const struct pn_nccl *c, CUstream st)
{
	int status = 0;

	return c->g.cu->StreamIsCapturing && !c->g.cu->StreamIsCapturing(st, &status) && status;
}

static int stage_grow(struct pn_nccl *c, size_t bytes)
{
	const struct pn_cudrv *cu = c->g.cu;
	CUdeviceptr p;
	CUresult r;

	if (c->stage && c->stage_captured) {
		struct pn_nccl_old *o = malloc(sizeof(*o));

		if (!o)
			return pn_plugin_fail(-ENOMEM, "out of memory");
		o->p = c->stage;
		o->next = c->retired;
		c->retired = o;
	} else if (c->stage) {
		/* its last copy and sends are over before it goes (a caller's
		 * stream may be gone by now: cuMemFree waits for the device too) */
		int ret = pn_gpu_wait(&c->g, c->stage_stream, NULL,
				      "cuStreamSynchronize (the in-place staging buffer)");

		if (ret)
			return ret;
		PN_CU(cu, MemFree(c->stage), "cuMemFree");
	}
	c->stage = 0;
	c->stage_len = 0;
	c->stage_captured = 0;
	r = cu->MemAlloc(&p, bytes);
	if (r != CUDA_SUCCESS)
		return pn_cu_fail(cu, r, "cuMemAlloc (the in-place staging buffer)");
	c->stage = p;
	c->stage_len = bytes;
	return 0;
}

/* *send, or its bytes staged when they overlap the output (recv, rbytes). */
static int stage_input(struct pn_nccl *c, const void **send, size_t bytes, const void *recv,
		       CUstream st, const char *coll)
{
	int cap, ret;

	if (!overlaps(*send, recv, bytes))
		return 0;
	cap = capturing(c, st);
	if (bytes > c->stage_len) {
		if (cap)
			return pn_plugin_fail(-ENOTSUP, "in-place %s of %zu bytes under CUDA-graph "
					      "capture: the staging buffer of its input holds %zu "
					      "and cannot grow while the stream is captured; run one "
					      "uncaptured call of this size first (a warm-up, -w 1)",
					      coll, bytes, c->stage_len);
		ret = stage_grow(c, bytes);
		if (ret)
			return ret;
	}
	PN_CU(c->g.cu, MemcpyAsync(c->stage, (CUdeviceptr)(uintptr_t)*send, bytes, st),
	      "cuMemcpyAsync (staging the in-place input)");
	c->stage_stream = st;
	c->stage_captured |= cap;
	*send = (const void *)(uintptr_t)c->stage;
	return 0;
}

/* An NCCL without point-to-point calls: refused before anything runs. */
static int p2p_lacks(const struct pn_nccl *c)
{
	const struct pn_nccl_api *a = c->api;

	if (a->Send && a->Recv && a->GroupStart && a->GroupEnd)
		return 0;
	return lacks(!a->Send ? "ncclSend" : !a->Recv ? "ncclRecv"
		     : !a->GroupStart ? "ncclGroupStart" : "ncclGroupEnd");
}

/*
 * One group of point-to-point calls: to every peer p of to[] count elements
 * at send + soff[p], from every peer of from[] count elements into recv +
 * roff[p] (npeers of each), as NCCL's alltoall and sendrecv examples do.
 * The group ends even after a failed call, so that NCCL is not left inside
 * one.
 */
static int p2p_group(struct pn_nccl *c, const void *send, void *recv, size_t count, int dtype,
		     const int *peers, int npeers, int shift, CUstream st, const char *what)
{
	size_t es = (size_t)penny_data_size(dtype);
	ncclResult_t r, r2;
	int i, to, from;

	r = c->api->GroupStart();
	if (r)
		return nccl_fail(c, r, "ncclGroupStart");
	for (i = 0; i < npeers && !r; i++) {
		/* alltoall (shift 0): block p to p, from p into block p; the ring
		 * (shift 1): the whole buffer to the next rank, from the one before */
		to = shift ? peers[0] : peers[i];
		from = shift ? peers[1] : peers[i];
		r = c->api->Send((const char *)send + (shift ? 0 : (size_t)to * count * es), count,
				 pn_nccl_dtype(dtype), to, c->comm, st);
		if (!r)
			r = c->api->Recv((char *)recv + (shift ? 0 : (size_t)from * count * es), count,
					 pn_nccl_dtype(dtype), from, c->comm, st);
	}
	r2 = c->api->GroupEnd();
	if (r)
		return nccl_fail(c, r, what);
	return r2 ? nccl_fail(c, r2, "ncclGroupEnd") : 0;
}

int pn_nccl_alltoall(void *be, const void *send, void *recv, size_t count, int dtype,
		     void *stream)
{
	struct pn_nccl *c = be;
	int n = c->host->nranks, *peers, i, ret = pn_gpu_check_args(count, dtype, PENNY_SUM);

	if (!ret && count)
		ret = p2p_lacks(c);
	if (ret || !count)
		return ret;
	peers = malloc(sizeof(*peers) * (size_t)n);
	if (!peers)
		return pn_plugin_fail(-ENOMEM, "out of memory");
	for (i = 0; i < n; i++)
		peers[i] = i;
	ret = pn_gpu_enter(&c->g);
	if (!ret)
		ret = stage_input(c, &send, (size_t)n * count * (size_t)penny_data_size(dtype), recv,
				  stream_of(c, stream), "alltoall");
	if (!ret)
		ret = p2p_group(c, send, recv, count, dtype, peers, n, 0, stream_of(c, stream),
				"ncclSend/ncclRecv (alltoall)");
	free(peers);
	return ret;
}

int pn_nccl_sendrecv(void *be, const void *send, void *recv, size_t count, int dtype,
		     void *stream)
{
	struct pn_nccl *c = be;
	int n = c->host->nranks, me = c->host->rank, ret = pn_gpu_check_args(count, dtype, PENNY_SUM);
	int peers[2] = { (me + 1) % n, (me + n - 1) % n };

	if (!ret && count)
		ret = p2p_lacks(c);
	if (ret || !count)
		return ret;
	ENTER(c);
	ret = stage_input(c, &send, count * (size_t)penny_data_size(dtype), recv, stream_of(c, stream),
			  "sendrecv");
	return ret ? ret : p2p_group(c, send, recv, count, dtype, peers, 1, 1, stream_of(c, stream),
				     "ncclSend/ncclRecv (sendrecv)");
}

static int async_error(void *be)
{
	struct pn_nccl *c = be;
	ncclResult_t e = 0, r = c->api->CommGetAsyncError(c->comm, &e);

	if (!r && !e && c->symm)
		r = c->api->CommGetAsyncError(c->symm, &e);
	if (r)
		return nccl_fail(c, r, "ncclCommGetAsyncError");
	return e ? nccl_fail(c, e, "NCCL") : 0;
}
