/* SPDX-License-Identifier: MIT */
/*
 * The cuda plugin: allreduce over CUDA IPC between the GPUs of one node.
 * Host side only (the kernels are in ar_kernels.cu and xn_kernels.cu);
 * every CUDA call goes through the driver table of cudrv.h.
 */
#define _GNU_SOURCE
#include "cuda.h"
#include "cuda_ce.h"

#include "../include/penny_data.h"
#include "../../src/base/units.h"

#include <errno.h>
#include <stddef.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *const ar_type_names[PENNY_NDTYPES] = {
	"int8", "uint8", "int32", "uint32", "int64", "uint64", "half", "bfloat16", "float", "double",
};
static const char *const op_names[PENNY_NREDOPS] = { "sum", "prod", "min", "max", "avg" };

/* ---- the backend ---- */

struct pn_cuda {
	struct pn_gpu g;
	const struct penny_host_v1 *host;
	int rank, n;
	struct pn_cuda_cfg cfg;
	struct pn_tune tune;
	CUmodule mod[PN_NKERNS];
	CUfunction fn[PN_NKERNS][PENNY_NDTYPES][PENNY_NREDOPS];
	struct pn_reg *regs;
	uint32_t next_id;
	uint64_t peer_on;	/* devices of ranks in this process: peer access enabled */
	struct pn_reg *ws, *stage;
	size_t ws_bytes;
	/* the interposer's registrations of its caller's buffers (apart from
	 * regs: find_reg() never takes them on its own) and the one the call
	 * in progress uses */
	struct pn_reg *xregs, *use_reg;
	int use_set;
	/* async_error()'s poll: its copies' stream and event, the pinned
	 * word they fill, the next look's time (CLOCK_MONOTONIC ns), a copy in
	 * flight, a thread looking, the poll off (a driver call failed) */
	CUstream poll;
	CUevent poll_ev;
	uint32_t *poll_word;
	uint64_t poll_next;
	int poll_busy, polling, poll_off;
	int async_err;		/* the sticky kernel error async_error() found */
	char async_msg[200];
	const void *xnode_image;	/* the cross-node kernels (xnode.c), NULL if not built */
	CUmodule co_mod;		/* the other collectives (cuda_coll.c), NULL if not built */
	CUfunction co_fn[PN_NCO][PENNY_NDTYPES][PENNY_NREDOPS];
	/* the copy-engine allreduce's (cuda_ce.c), from its first call on */
	struct pn_reg *ce_area;
	struct pn_ce *ce;
	char desc[512];
};
/* the shared entry points (pn_gpu_be_*) take the backend as its struct pn_gpu */
_Static_assert(offsetof(struct pn_cuda, g) == 0, "struct pn_cuda begins with its struct pn_gpu");

/* What every rank announces at init; all but busid must agree. */
struct pn_cuda_hello {
	uint32_t magic, version;
	char busid[32];
	int32_t nsm, blocks;
	uint64_t ll_max, oneshot_ll_max, twoshot_ll_max, twoshot_hy_max, co_ll_max, co_two_min,
		stage_bytes, timeout_ns, ce_bytes;
	uint32_t tile_twoshot, tile_ring;
	int32_t ok;		/* 0: this rank failed before the exchange (err says why) */
	char tune[96];
	char err[200];
};

#define PN_CUDA_MAGIC 0x70637564u /* "pcud" */

static int allgather(struct pn_cuda *c, const void *mine, void *all, size_t len)
{
	int ret = c->host->allgather(c->host->ctx, mine, all, len);

	if (ret)
		return pn_plugin_fail(ret < 0 ? ret : -EIO, "allgather through the host failed");
	return 0;
}

/* Close this rank's mappings of the peers' parts of r (a peer in this
 * process has its pointer, not a mapping). */
static void unmap_peers(struct pn_cuda *c, struct pn_reg *r)
{
	int p;

	for (p = 0; p < c->n; p++)
		if (p != c->rank && r->peer[p] && !(r->here >> p & 1))
			c->g.cu->IpcCloseMemHandle(r->peer[p]);
	memset(r->peer, 0, sizeof(r->peer));
	r->here = 0;
}

/*
 * Ranks that are threads of one process (pn_plugin_process alike): CUDA IPC
 * does not open a handle in the process that made it ("invalid device
 * context"), so where the open fails they take each other's pointers (one
 * address space) with peer access.
 */

/* Peer access from this rank's context to device d's (a rank in this
 * process), once per device. */
static int peer_access(struct pn_cuda *c, int d)
{
	const struct pn_cudrv *cu = c->g.cu;
	CUdevice dev;
	CUcontext pc;
	CUresult e;
	int can = 0;

	if (d < 0 || d >= 64)
		return pn_plugin_fail(-EINVAL, "a peer in this process on device %d", d);
	if (c->peer_on >> d & 1)
		return 0;
	PN_CU(cu, DeviceGet(&dev, d), "cuDeviceGet");
	PN_CU(cu, DeviceCanAccessPeer(&can, c->g.dev, dev), "cuDeviceCanAccessPeer");
	if (!can)
		return pn_plugin_fail(-ENOTSUP, "device %d cannot reach device %d's memory (no P2P "
						"between them)", c->g.ordinal, d);
	PN_CU(cu, DevicePrimaryCtxRetain(&pc, dev), "cuDevicePrimaryCtxRetain");
	e = cu->CtxEnablePeerAccess(pc, 0);
	cu->DevicePrimaryCtxRelease(dev);
	if (e != CUDA_SUCCESS && e != CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED)
		return pn_cu_fail(cu, e, "cuCtxEnablePeerAccess");
	c->peer_on |= 1ull << d;
	return 0;
}

/*
 * Collective: export r->base (allocated here, or the caller's with
 * external), exchange, map every peer's buffer.  e: this rank's failure
 * before the exchange (CUDA_SUCCESS: none).  Plugin allocations must have
 * the same size on every rank; a caller's may differ.
 */
static int reg_share(struct pn_cuda *c, struct pn_reg *r, size_t bytes, int external, CUresult e)
{
	const struct pn_cudrv *cu = c->g.cu;
	struct {
		CUipcMemHandle h;
		uint64_t bytes, proc, ptr;
		uint32_t id;
		int32_t ok, pid, dev;
		char err[128];
	} mine, *all = NULL;
	int ret = 0, p;

	memset(&mine, 0, sizeof(mine));
	mine.bytes = bytes;
	mine.id = c->next_id;
	mine.ok = 1;
	pn_plugin_process(&mine.proc, &mine.pid);
	mine.dev = c->g.ordinal;
	mine.ptr = r ? (uint64_t)r->base : 0;
	all = calloc((size_t)c->n, sizeof(*all));
	if (!r || !all) {
		mine.ok = 0;
		snprintf(mine.err, sizeof(mine.err), "out of memory");
	} else {
		if (e == CUDA_SUCCESS)
			e = cu->IpcGetMemHandle(&mine.h, r->base);
		if (e != CUDA_SUCCESS) {
			pn_cu_fail(cu, e, external ? "cuIpcGetMemHandle" : "cuMemAlloc/cuIpcGetMemHandle");
			mine.ok = 0;
			snprintf(mine.err, sizeof(mine.err), "%s", pn_plugin_errmsg());
		}
	}
	if (!all) {
		ret = pn_plugin_fail(-ENOMEM, "out of memory");
		goto out;
	}
	ret = allgather(c, &mine, all, sizeof(mine));
	if (ret)
		goto out;
	for (p = 0; p < c->n; p++) {
		if (!all[p].ok) {
			ret = pn_plugin_fail(-ENOMEM, "rank %d cannot %s %" PRIu64 " bytes of GPU "
						      "memory: %s", p, external ? "share" : "allocate",
					     all[p].bytes, all[p].err);
			goto out;
		}
		if ((!external && all[p].bytes != bytes) || all[p].id != mine.id) {
			ret = pn_plugin_fail(-EINVAL, "registered allocation #%u differs between ranks: "
						      "rank %d asked for %" PRIu64 " bytes, rank %d for %zu",
					     mine.id, p, all[p].bytes, c->rank, bytes);
			goto out;
		}
	}
	r->id = mine.id;
	r->bytes = bytes;
	for (p = 0; p < c->n; p++)
		r->peer_bytes[p] = all[p].bytes;
	for (p = 0; p < c->n; p++) {
		if (p == c->rank) {
			r->peer[p] = r->base;
			continue;
		}
		e = cu->IpcOpenMemHandle(&r->peer[p], all[p].h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
		if (e != CUDA_SUCCESS && all[p].proc == mine.proc && all[p].pid == mine.pid) {
			/* a handle of this process (rank p is a thread of it): its pointer */
			r->peer[p] = 0;
			ret = peer_access(c, all[p].dev);
			if (ret)
				goto out;
			r->peer[p] = (CUdeviceptr)all[p].ptr;
			r->here |= 1ull << p;
			continue;
		}
		if (e != CUDA_SUCCESS) {
			char why[256];

			ret = pn_cu_fail(cu, e, "cuIpcOpenMemHandle");
			snprintf(why, sizeof(why), "%s", pn_plugin_errmsg());
			pn_plugin_fail(ret, "cannot map rank %d's GPU memory (CUDA IPC): %s", p, why);
			goto out;
		}
	}
out:
	if (ret && r)
		unmap_peers(c, r);
	free(all);
	c->next_id++;
	return ret;
}

/* Collective: allocate, export, exchange, map every peer's buffer. */
static int reg_alloc(struct pn_cuda *c, size_t bytes, struct pn_reg **out)
{
	struct pn_reg *r = calloc(1, sizeof(*r));
	CUresult e = r ? c->g.cu->MemAlloc(&r->base, pn_gpu_alloc_size(bytes)) : CUDA_SUCCESS;
	int ret = reg_share(c, r, bytes, 0, e);

	if (ret) {
		if (r && r->base)
			c->g.cu->MemFree(r->base);
		free(r);
		return ret;
	}
	r->next = c->regs;
	c->regs = r;
	*out = r;
	return 0;
}

/* Collective: unmap peers, wait until every rank did, free. */
static int reg_release(struct pn_cuda *c, struct pn_reg *r)
{
	const struct pn_cudrv *cu = c->g.cu;
	struct pn_reg **pp;
	int ret = 0;

	for (pp = &c->regs; *pp; pp = &(*pp)->next)
		if (*pp == r) {
			*pp = r->next;
			break;
		}
	cu->StreamSynchronize(c->g.stream);
	unmap_peers(c, r);
	if (c->host->barrier && c->host->barrier(c->host->ctx))
		ret = pn_plugin_fail(-EIO, "barrier before freeing a registered buffer failed");
	cu->MemFree(r->base);
	free(r);
	return ret;
}

static struct pn_reg *find_reg(struct pn_cuda *c, CUdeviceptr p, uint64_t bytes)
{
	struct pn_reg *r;

	for (r = c->regs; r; r = r->next)
		if (r != c->ws && p >= r->base && p + bytes <= r->base + r->bytes && p + bytes >= p)
			return r;
	return NULL;
}

/* penny_plugin_v1.reg_buffer: a caller's allocation, shared once (collective). */
int pn_cuda_reg_buffer(void *be, void *ptr, size_t bytes, void **reg)
{
	struct pn_cuda *c = be;
	struct pn_reg *r;
	int ret = pn_gpu_enter(&c->g);

	if (ret)
		return ret;
	r = calloc(1, sizeof(*r));
	if (r)
		r->base = (CUdeviceptr)(uintptr_t)ptr;
	ret = reg_share(c, r, bytes, 1, ptr && bytes ? CUDA_SUCCESS : 1 /* invalid value */);
	if (ret) {
		free(r);
		return ret;
	}
	r->next = c->xregs;
	c->xregs = r;
	*reg = r;
	return 0;
}

/* penny_plugin_v1.dereg_buffer: the peers' parts unmapped; the caller's memory stays. */
void pn_cuda_dereg_buffer(void *be, void *reg)
{
	struct pn_cuda *c = be;
	struct pn_reg **pp;

	for (pp = &c->xregs; *pp; pp = &(*pp)->next)
		if (*pp == reg) {
			*pp = ((struct pn_reg *)reg)->next;
			pn_gpu_enter(&c->g);
			unmap_peers(c, reg);
			free(reg);
			return;
		}
}

const struct pn_reg *pn_cuda_find_reg(void *be, const void *p, size_t bytes)
{
	return find_reg(be, (CUdeviceptr)(uintptr_t)p, bytes);
}

static int load_modules(struct pn_cuda *c, const struct pn_cuda_images *im)
{
	int k;

	for (k = 0; k < PN_NKERNS; k++) {
		if (!im->kern[k])
			return pn_plugin_fail(-ENOEXEC, "the cuda plugin was built without its %s kernels",
					      pn_kern_names[k]);
		PN_CU(c->g.cu, ModuleLoadData(&c->mod[k], im->kern[k]), "cuModuleLoadData");
	}
	if (im->coll)
		PN_CU(c->g.cu, ModuleLoadData(&c->co_mod, im->coll), "cuModuleLoadData (coll)");
	return 0;
}

static int kernel(struct pn_cuda *c, int kern, int dt, int op, CUfunction *f)
{
	char name[64];

	if (!c->fn[kern][dt][op]) {
		snprintf(name, sizeof(name), "pn_ar_%s_%s_%s", pn_kern_names[kern], ar_type_names[dt],
			 op_names[op]);
		PN_CU(c->g.cu, ModuleGetFunction(&c->fn[kern][dt][op], c->mod[kern], name), name);
	}
	*f = c->fn[kern][dt][op];
	return 0;
}

/*
 * Every rank says whether it got this far (local: its result so far) and
 * with which settings, so that a rank that cannot open its GPU does not
 * leave the others waiting in a later exchange: all fail, naming it.
 */
static int agree(struct pn_cuda *c, int local)
{
	struct pn_cuda_hello mine, *all;
	int p, ret = 0;

	memset(&mine, 0, sizeof(mine));
	mine.magic = PN_CUDA_MAGIC;
	mine.version = 5;
	snprintf(mine.busid, sizeof(mine.busid), "%s", c->g.busid);
	mine.nsm = c->g.nsm;
	mine.blocks = (int32_t)c->cfg.blocks;
	mine.ll_max = c->cfg.ll_max;
	mine.oneshot_ll_max = c->cfg.oneshot_ll_max;
	mine.twoshot_ll_max = c->cfg.twoshot_ll_max;
	mine.twoshot_hy_max = c->cfg.twoshot_hy_max;
	mine.co_ll_max = c->cfg.co_ll_max;
	mine.co_two_min = c->cfg.co_two_min;
	mine.stage_bytes = c->cfg.stage_bytes;
	mine.timeout_ns = c->cfg.timeout_ns;
	mine.ce_bytes = c->cfg.ce_bytes;
	mine.tile_twoshot = c->cfg.tile_twoshot;
	mine.tile_ring = c->cfg.tile_ring;
	mine.ok = !local;
	if (local)
		snprintf(mine.err, sizeof(mine.err), "%s", pn_plugin_errmsg());
	pn_tune_format(&c->tune, mine.tune, sizeof(mine.tune));
	all = calloc((size_t)c->n, sizeof(*all));
	if (!all)
		return pn_plugin_fail(-ENOMEM, "out of memory");
	ret = allgather(c, &mine, all, sizeof(mine));
	if (!ret && local) {
		/* this rank's own message stands */
		pn_plugin_fail(local, "%s", mine.err);
		ret = local;
	}
	for (p = 0; p < c->n && !ret; p++)
		if (all[p].magic == PN_CUDA_MAGIC && all[p].version == mine.version && !all[p].ok)
			ret = pn_plugin_fail(-EIO, "rank %d failed: %s", p, all[p].err);
	for (p = 0; p < c->n && !ret; p++) {
		if (all[p].magic != PN_CUDA_MAGIC || all[p].version != mine.version)
			ret = pn_plugin_fail(-EPROTO, "rank %d runs another version of the cuda plugin", p);
		else if (all[p].ll_max != mine.ll_max || all[p].stage_bytes != mine.stage_bytes ||
			 all[p].twoshot_ll_max != mine.twoshot_ll_max ||
			 all[p].oneshot_ll_max != mine.oneshot_ll_max ||
			 all[p].twoshot_hy_max != mine.twoshot_hy_max ||
			 all[p].co_ll_max != mine.co_ll_max || all[p].co_two_min != mine.co_two_min ||
			 all[p].ce_bytes != mine.ce_bytes ||
			 all[p].tile_twoshot != mine.tile_twoshot || all[p].tile_ring != mine.tile_ring ||
			 strcmp(all[p].tune, mine.tune))
			ret = pn_plugin_fail(-EINVAL, "PENNY_CUDA_* settings differ between rank %d and "
						      "rank %d (tune '%s' vs '%s')",
					     c->rank, p, mine.tune, all[p].tune);
		else if (all[p].blocks < (int32_t)c->cfg.blocks)
			c->cfg.blocks = (uint32_t)all[p].blocks; /* the smallest GPU sets the grid */
	}
	for (p = 0; p < c->n && !ret; p++)
		if (p != c->rank && !strcmp(all[p].busid, mine.busid))
			pn_gpu_log(c->host, PENNY_LOG_INFO, "cuda: ranks %d and %d share GPU %s", c->rank,
				   p, mine.busid);
	free(all);
	return ret;
}

static const struct pn_gpu_hooks cuda_hooks = {
	.allreduce = pn_cuda_allreduce,
	.errors = pn_cuda_kernel_errors,
};

int pn_cuda_init(const struct pn_cuda_images *im, const struct penny_host_v1 *host, int device,
		 void **be)
{
	struct pn_cuda *c;
	char tune[96], two[40];
	int ret;

	*be = NULL;
	if (!host || host->size < sizeof(struct penny_host_v1) || !host->allgather)
		return pn_plugin_fail(-EINVAL, "the host passed no allgather service");
	if (host->nranks < 1 || host->rank < 0 || host->rank >= host->nranks)
		return pn_plugin_fail(-EINVAL, "bad rank %d of %d", host->rank, host->nranks);
	if (host->nnodes > 1 || host->local_size != host->nranks)
		return pn_plugin_fail(-ENOTSUP, "the cuda backend runs on one node; these %d ranks "
						"span %d nodes (penny's core runs it hierarchically: the "
						"plugin on each node's ranks)",
				      host->nranks, host->nnodes);
	if (host->nranks > PN_AR_MAX_RANKS)
		return pn_plugin_fail(-ENOTSUP, "the cuda backend handles at most %d GPUs (%d ranks)",
				      PN_AR_MAX_RANKS, host->nranks);
	c = calloc(1, sizeof(*c));
	if (!c)
		return pn_plugin_fail(-ENOMEM, "out of memory");
	c->host = host;
	c->rank = host->rank;
	c->n = host->nranks;
	c->xnode_image = im->xnode;
	ret = pn_gpu_open(&c->g, host, device, im->data);
	c->g.hooks = &cuda_hooks;
	if (!ret)
		ret = pn_cuda_read_cfg(&c->cfg, &c->tune, c->n, c->g.nsm, c->host->timeout_ns);
	if (!ret)
		pn_gpu_kernel_timeout(&c->g, c->cfg.timeout_ns);
	if (!ret)
		ret = load_modules(c, im);
	ret = agree(c, ret);
	if (ret)
		goto fail_gpu;
	c->ws_bytes = PN_WS_LL + 4ull * c->n * c->cfg.ll_max +
		      (uint64_t)c->cfg.blocks * 2 * c->n * c->cfg.slot_bytes;
	ret = reg_alloc(c, c->ws_bytes, &c->ws);
	if (ret)
		goto fail_gpu;
	/* zero flags and counters before anyone can signal: memset, then a barrier */
	PN_CU_GOTO(c->g.cu, MemsetD8Async(c->ws->base, 0, c->ws_bytes, c->g.stream), "cuMemsetD8Async",
		   ret, fail_gpu);
	ret = pn_gpu_sync(&c->g);
	if (ret)
		goto fail_gpu;
	ret = reg_alloc(c, c->cfg.stage_bytes, &c->stage);
	if (ret)
		goto fail_gpu;
	if (host->barrier && host->barrier(host->ctx)) {
		ret = pn_plugin_fail(-EIO, "barrier after mapping the peers' memory failed");
		goto fail_gpu;
	}
	pn_tune_format(&c->tune, tune, sizeof(tune));
	if (c->n < 3 || c->cfg.co_two_min == UINT64_MAX)
		snprintf(two, sizeof(two), "off");
	else
		snprintf(two, sizeof(two), "from %" PRIu64 " B", c->cfg.co_two_min);
	snprintf(c->desc, sizeof(c->desc),
		 "%s (%s) sm_%d%d %d SMs, CUDA driver %d.%d, rank %d of %d, %u blocks, "
		 "LL one-shot <= %" PRIu64 " B, LL two-shot <= %" PRIu64 " B, hybrid two-shot <= %" PRIu64
		 " B, other collectives LL <= %" PRIu64 " B a peer, broadcast/reduce in two steps %s, "
		 "tiles %u/%u B, "
		 "staging %" PRIu64 " B, copy-engine slots %" PRIu64 " B, PDL %s, auto %s",
		 c->g.name, c->g.busid, c->g.cc_major, c->g.cc_minor, c->g.nsm,
		 c->g.driver_version / 1000, c->g.driver_version % 1000 / 10, c->rank, c->n,
		 c->cfg.blocks, c->cfg.oneshot_ll_max, c->cfg.twoshot_ll_max, c->cfg.twoshot_hy_max,
		 c->cfg.co_ll_max, two, c->cfg.tile_twoshot,
		 c->cfg.tile_ring, c->cfg.stage_bytes, c->cfg.ce_bytes,
		 !c->cfg.pdl ? "off" : c->g.cu->LaunchKernelEx ? "on" : "unavailable", tune);
	pn_gpu_log(host, PENNY_LOG_DEBUG, "cuda: %s", c->desc);
	*be = c;
	return 0;
fail_gpu:
	while (c->regs) {
		struct pn_reg *r = c->regs;

		c->regs = r->next;
		unmap_peers(c, r);
		c->g.cu->MemFree(r->base);
		free(r);
	}
	for (int k = 0; k < PN_NKERNS; k++)
		if (c->mod[k])
			c->g.cu->ModuleUnload(c->mod[k]);
	if (c->co_mod)
		c->g.cu->ModuleUnload(c->co_mod);
	pn_gpu_close(&c->g);
	free(c);
	return ret;
}

void pn_cuda_fini(void *be)
{
	struct pn_cuda *c = be;
	int a;

	if (!c)
		return;
	pn_gpu_enter(&c->g);
	if (c->g.hung) {	/* a kernel may still run: nothing below may wait for it */
		pn_gpu_close(&c->g);
		free(c);
		return;
	}
	c->g.cu->StreamSynchronize(c->g.stream);
	pn_ce_close(c->ce);
	while (c->xregs)
		pn_cuda_dereg_buffer(c, c->xregs);
	while (c->regs)
		reg_release(c, c->regs);
	if (c->poll) {
		c->g.cu->StreamSynchronize(c->poll); /* its copy into poll_word */
		c->g.cu->StreamDestroy(c->poll);
	}
	if (c->poll_ev)
		c->g.cu->EventDestroy(c->poll_ev);
	if (c->poll_word)
		c->g.cu->MemFreeHost(c->poll_word);
	for (a = 0; a < PN_NKERNS; a++)
		if (c->mod[a])
			c->g.cu->ModuleUnload(c->mod[a]);
	if (c->co_mod)
		c->g.cu->ModuleUnload(c->co_mod);
	pn_gpu_close(&c->g);
	free(c);
}

const char *pn_cuda_describe(void *be)
{
	return ((struct pn_cuda *)be)->desc;
}

int pn_cuda_alloc(void *be, size_t bytes, unsigned flags, void **ptr)
{
	struct pn_cuda *c = be;
	struct pn_reg *r;
	int ret = pn_gpu_enter(&c->g);

	if (ret)
		return ret;
	if (!(flags & PENNY_MEM_REGISTERED))
		return pn_gpu_alloc(&c->g, bytes, ptr);
	ret = reg_alloc(c, bytes, &r);
	if (!ret)
		*ptr = (void *)(uintptr_t)r->base;
	return ret;
}

int pn_cuda_free(void *be, void *ptr)
{
	struct pn_cuda *c = be;
	struct pn_reg *r;
	int ret = pn_gpu_enter(&c->g);

	if (ret || !ptr)
		return ret;
	for (r = c->regs; r; r = r->next)
		if (r->base == (CUdeviceptr)(uintptr_t)ptr && r != c->ws && r != c->stage &&
		    r != c->ce_area)
			return reg_release(c, r);
	return pn_gpu_free(&c->g, ptr);
}

int pn_cuda_select(void *be, size_t count, int dtype, int op, int algo)
{
	struct pn_cuda *c = be;
	int ret = pn_gpu_check_args(count, dtype, op), k;

	if (ret)
		return ret;
	k = pn_cuda_kernel_for(&c->cfg, &c->tune, algo, (uint64_t)count * penny_data_size(dtype));
	return k < 0 ? k : pn_kern_algo(k);
}

static int launch(struct pn_cuda *c, int kern, int dt, int op, CUdeviceptr send, CUdeviceptr recv,
		  uint64_t bytes, const struct pn_reg *reg)
{
	struct pn_ar_args a;
	struct pn_launch l;
	CUfunction f = NULL;
	int ret;

	ret = kernel(c, kern, dt, op, &f);
	if (ret)
		return ret;
	pn_cuda_ar_args(&c->cfg, kern, c->rank, send, recv, bytes, (unsigned)penny_data_size(dt),
			c->ws->peer, reg, &a, &l);
	return c->cfg.pdl ? pn_gpu_launch_pdl(&c->g, f, l.grid, l.threads, &a)
			  : pn_gpu_launch(&c->g, f, l.grid, l.threads, &a);
}

/* Run kernel kern over [s, s + bytes) -> [d, ...): planned, chunked, staged. */
static int run(struct pn_cuda *c, int kern, int dt, int op, CUdeviceptr s, CUdeviceptr d,
	       uint64_t bytes)
{
	const struct pn_cudrv *cu = c->g.cu;
	struct pn_reg *reg = c->use_set ? c->use_reg : find_reg(c, d, bytes);
	struct pn_plan plan;
	uint64_t off;
	int ret;

	ret = pn_cuda_plan(&c->cfg, kern, bytes, (uintptr_t)s, (uintptr_t)d, reg, &plan);
	for (off = 0; off < bytes && !ret; off += plan.chunk) {
		uint64_t len = bytes - off < plan.chunk ? bytes - off : plan.chunk;
		int k = kern;
		int flags = k == PN_K_TWOSHOT || k == PN_K_RING; /* they store into peers' recv */

		if ((k == PN_K_TWOSHOT_LL || k == PN_K_TWOSHOT_HY) && len < pn_cuda_twoshot_ll_min(c->n))
			k = PN_K_ONESHOT;
		if (!plan.staged) {
			ret = launch(c, k, dt, op, s + off, d + off, len, flags ? reg : NULL);
			continue;
		}
		PN_CU(cu, MemcpyAsync(c->stage->base, s + off, len, c->g.stream), "cuMemcpyAsync");
		ret = launch(c, k, dt, op, c->stage->base, c->stage->base, len, flags ? c->stage : NULL);
		if (!ret)
			PN_CU(cu, MemcpyAsync(d + off, c->stage->base, len, c->g.stream), "cuMemcpyAsync");
	}
	return ret;
}

/*
 * The copy-engine allreduce's slots, made at the first call the table gives
 * it (PENNY_CUDA_CE_BYTES of GPU memory a rank: no cost to a communicator
 * that never makes one, as the NCCL interposer's, which leaves large sizes
 * to NCCL).  Collective: every rank's table sends the same call here.  Not
 * inside a graph capture (no allocation or host barrier there): such a call
 * runs the ring.  Zeroed and agreed on before any peer can signal into it;
 * where any rank fails, every rank goes on without it (the ring).
 */
static int ce_start(struct pn_cuda *c)
{
	const struct pn_cudrv *cu = c->g.cu;
	int cap = 0, ok, *all, ret, p;

	if (cu->StreamIsCapturing && cu->StreamIsCapturing(c->g.stream, &cap) == CUDA_SUCCESS && cap)
		return 0;
	ret = reg_alloc(c, PN_CE_HDR + pn_gpu_alloc_size(c->cfg.ce_bytes), &c->ce_area);
	if (ret) {
		c->cfg.ce_bytes = 0; /* reg_alloc fails on every rank together */
		pn_gpu_log(c->host, PENNY_LOG_INFO, "cuda: no copy-engine slots (the ring instead): %s",
			   pn_plugin_errmsg());
		return 0;
	}
	/* the header zeroed, its word PN_CE_ONE 1 (little-endian) */
	if (cu->MemsetD8Async(c->ce_area->base, 0, PN_CE_HDR, c->g.stream) != CUDA_SUCCESS ||
	    cu->MemsetD8Async(c->ce_area->base + 4 * PN_CE_ONE, 1, 1, c->g.stream) != CUDA_SUCCESS)
		ret = pn_plugin_fail(-EIO, "cuMemsetD8Async failed");
	else
		ret = pn_gpu_sync(&c->g);
	if (!ret)
		ret = pn_ce_open(&c->g, c->rank, c->n, c->ce_area, c->mod[PN_K_CE], &c->ce);
	all = calloc((size_t)c->n, sizeof(*all));
	ok = !ret;
	if (!all || allgather(c, &ok, all, sizeof(ok))) {
		free(all);
		return pn_plugin_fail(-EIO, "copy-engine slots: the ranks could not agree on them");
	}
	for (p = 0; p < c->n; p++)
		ok &= all[p];
	free(all);
	if (!ok) {
		pn_ce_close(c->ce);
		c->ce = NULL;
		reg_release(c, c->ce_area);
		c->ce_area = NULL;
		c->cfg.ce_bytes = 0;
		pn_gpu_log(c->host, PENNY_LOG_INFO, "cuda: no copy-engine slots (the ring instead): "
						    "a rank could not set them up");
	}
	return 0;
}

/* The copy-engine allreduce where recv is registered and the buffers
 * aligned (the ring otherwise, as it would stage), the tail by LL. */
static int run_ce(struct pn_cuda *c, int dt, int op, CUdeviceptr s, CUdeviceptr d, uint64_t bytes)
{
	struct pn_reg *reg = c->use_set ? c->use_reg : find_reg(c, d, bytes);
	uint64_t main = bytes & ~(uint64_t)15;
	struct pn_ce_call call;
	int ret;

	if (!c->ce && c->cfg.ce_bytes) {
		ret = ce_start(c);
		if (ret)
			return ret;
	}
	if (!c->ce || !reg || ((s | d) & 15) || main < 16 * (uint64_t)c->n)
		return run(c, PN_K_RING, dt, op, s, d, bytes);
	memset(&call, 0, sizeof(call));
	ret = kernel(c, PN_K_CE, dt, op, &call.reduce);
	if (ret)
		return ret;
	call.send = s;
	call.recv = d;
	call.bytes = main;
	call.esize = (unsigned)penny_data_size(dt);
	call.reg = reg;
	call.ws = c->ws;
	call.grid = pn_ce_grid(c->cfg.blocks, c->n);
	call.timeout_ns = c->cfg.timeout_ns;
	ret = pn_ce_run(c->ce, &call);
	if (!ret && main < bytes)
		ret = run(c, PN_K_ONESHOT, dt, op, s + main, d + main, bytes - main);
	return ret;
}

int pn_cuda_allreduce(void *be, const void *send, void *recv, size_t count, int dtype, int op,
		      int algo)
{
	struct pn_cuda *c = be;
	CUdeviceptr s = (CUdeviceptr)(uintptr_t)send, d = (CUdeviceptr)(uintptr_t)recv;
	uint64_t bytes, main;
	int ret, kern;

	ret = pn_gpu_check_args(count, dtype, op);
	if (ret || !count)
		return ret;
	bytes = (uint64_t)count * penny_data_size(dtype);
	ret = pn_gpu_enter(&c->g);
	if (ret)
		return ret;
	if (c->n == 1) {
		if (s != d)
			PN_CU(c->g.cu, MemcpyAsync(d, s, bytes, c->g.stream), "cuMemcpyAsync");
		return 0;
	}
	kern = pn_cuda_kernel_for(&c->cfg, &c->tune, algo, bytes);
	if (kern < 0)
		return kern;
	if (kern == PN_K_ONESHOT || kern == PN_K_TWOSHOT_LL)
		return run(c, kern, dtype, op, s, d, bytes);
	if (kern == PN_K_CE)
		return run_ce(c, dtype, op, s, d, bytes);
	/* the flag kernels move whole 16-byte vectors; a last partial one goes by LL */
	main = bytes & ~(uint64_t)15;
	ret = main ? run(c, kern, dtype, op, s, d, main) : 0;
	if (!ret && main < bytes)
		ret = run(c, PN_K_ONESHOT, dtype, op, s + main, d + main, bytes - main);
	return ret;
}

/*
 * The same on the caller's stream: every launch and copy of the call goes
 * there (the backend's stream stands in for it for the call's duration),
 * so the call orders with the caller's work and a graph captured on that
 * stream replays it.  The kernels are replay-safe: their arguments do not
 * change between calls on the same buffers.
 */
int pn_cuda_allreduce_stream(void *be, const void *send, void *recv, size_t count, int dtype,
			     int op, int algo, void *stream)
{
	struct pn_cuda *c = be;
	CUstream own = c->g.stream;
	int ret;

	c->g.stream = (CUstream)stream;
	ret = pn_cuda_allreduce(be, send, recv, count, dtype, op, algo);
	c->g.stream = own;
	return ret;
}

/* penny_plugin_v1.allreduce_reg: the same with recv in a caller's registration. */
int pn_cuda_allreduce_reg(void *be, void *reg, const void *send, void *recv, size_t count,
			  int dtype, int op, int algo, void *stream)
{
	struct pn_cuda *c = be;
	struct pn_reg *r = reg;
	CUdeviceptr d = (CUdeviceptr)(uintptr_t)recv;
	int ret;

	if (r && (pn_gpu_check_args(count, dtype, op) || d < r->base ||
		  (uint64_t)count * penny_data_size(dtype) > r->bytes - (d - r->base)))
		return pn_plugin_fail(-EINVAL, "recv is not inside the registered buffer");
	c->use_reg = r;
	c->use_set = r != NULL;
	ret = pn_cuda_allreduce_stream(be, send, recv, count, dtype, op, algo, stream);
	c->use_set = 0;
	c->use_reg = NULL;
	return ret;
}

/* The error of the kernels' error word w (w[0] not 0; w[1] the detail:
 * peer and collective), into errmsg. */
static int word_error(const struct pn_cuda *c, const uint32_t w[2])
{
	uint32_t peer = PN_ERR_PEER(w[1]);

	if (w[0] & PN_ERR_XNODE)
		return pn_plugin_fail(-ECANCELED, "the cross-node proxy gave up (node %u)", peer);
	if (w[0] & PN_ERR_DESC)
		return pn_plugin_fail(-EINVAL, "%s buffers differ between ranks (rank %u passed "
					       "another buffer or offset, or a buffer registered on "
					       "some ranks only)", pn_cuda_coll_name(PN_ERR_COLL(w[1])),
				      peer);
	return pn_plugin_fail(-ETIMEDOUT, "%s on rank %d timed out waiting for rank %u",
			      pn_cuda_coll_name(PN_ERR_COLL(w[1])), c->rank, peer);
}

/* The async_error() poll's stream, event and pinned word, made at its first
 * call (0), or -1 when a driver call failed: the poll stays off. */
static int poll_open(struct pn_cuda *c)
{
	const struct pn_cudrv *cu = c->g.cu;
	void *host = NULL;

	if (c->poll)
		return 0;
	if (cu->StreamCreate(&c->poll, CU_STREAM_NON_BLOCKING)) {
		c->poll = NULL;
		return -1;
	}
	if (cu->EventCreate(&c->poll_ev, CU_EVENT_DISABLE_TIMING)) {
		c->poll_ev = NULL;
		return -1;
	}
	if (cu->MemHostAlloc(&host, 2 * sizeof(uint32_t), 0))
		return -1;
	c->poll_word = host;
	c->poll_word[0] = c->poll_word[1] = 0;
	return 0;
}

/*
 * penny_plugin_v1.async_error: the kernels' error word, copied on a stream
 * of its own (never behind the caller's work) into pinned host memory, and
 * looked at once that copy is done.  The call never waits for the GPU, and
 * looks at most once every POLL_NS: PyTorch asks at every collective, and a
 * synchronous read there cost each call a round trip (12 us on H200), the
 * five driver calls of a look 5 us.  An error shows at the first look after
 * a copy that saw it completed; it is kept once seen.  One thread looks at a
 * time; another finds nothing new meanwhile.
 */
#define POLL_NS 1000000ull
int pn_cuda_async_error(void *be)
{
	struct pn_cuda *c = be;
	const struct pn_cudrv *cu = c->g.cu;
	uint32_t w[2] = { 0, 0 };
	int ret, mode = CU_STREAM_CAPTURE_MODE_RELAXED;
	struct timespec ts;
	uint64_t now;
	CUresult q;

	if (__atomic_load_n(&c->async_err, __ATOMIC_ACQUIRE))
		return pn_plugin_fail(c->async_err, "%s", c->async_msg);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	now = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	if (now < __atomic_load_n(&c->poll_next, __ATOMIC_RELAXED))
		return 0;
	__atomic_store_n(&c->poll_next, now + POLL_NS, __ATOMIC_RELAXED);
	ret = pn_gpu_enter(&c->g);
	if (ret)
		return 0;
	/*
	 * The caller (a framework's watchdog thread) may run while another of
	 * its threads captures a CUDA graph in global mode: a stream creation
	 * or a copy from this thread would invalidate that capture (PyTorch:
	 * "operation failed due to a previous error during capture").  This
	 * thread's calls run in relaxed capture mode, as NCCL's own threads
	 * do; without that mode, or the driver calls below, there is no poll.
	 */
	if (!cu->ThreadExchangeStreamCaptureMode || !cu->MemcpyDtoHAsync || !cu->EventQuery ||
	    !cu->MemHostAlloc || !cu->MemFreeHost)
		return 0;
	if (__atomic_exchange_n(&c->polling, 1, __ATOMIC_ACQUIRE))
		return 0;
	if (c->poll_off || cu->ThreadExchangeStreamCaptureMode(&mode)) {
		__atomic_store_n(&c->polling, 0, __ATOMIC_RELEASE);
		return 0;
	}
	if (poll_open(c))
		c->poll_off = 1;
	else if (c->poll_busy && (q = cu->EventQuery(c->poll_ev)) != CUDA_ERROR_NOT_READY) {
		c->poll_busy = 0;
		if (q == CUDA_SUCCESS) {
			w[0] = __atomic_load_n(&c->poll_word[0], __ATOMIC_ACQUIRE);
			w[1] = __atomic_load_n(&c->poll_word[1], __ATOMIC_ACQUIRE);
		}
	}
	if (!c->poll_off && !c->poll_busy && !w[0])
		c->poll_busy = !cu->MemcpyDtoHAsync(c->poll_word, pn_cuda_err_word(c), sizeof(w),
						    c->poll) &&
			       !cu->EventRecord(c->poll_ev, c->poll);
	cu->ThreadExchangeStreamCaptureMode(&mode);
	__atomic_store_n(&c->polling, 0, __ATOMIC_RELEASE);
	if (!w[0])
		return 0;
	ret = word_error(c, w);
	snprintf(c->async_msg, sizeof(c->async_msg), "%s", pn_plugin_errmsg());
	__atomic_store_n(&c->async_err, ret, __ATOMIC_RELEASE);
	return ret;
}

int pn_cuda_export_dmabuf(void *be, void *ptr, size_t bytes, int *fd, uint64_t *offset)
{
	struct pn_cuda *c = be;
	int ret = pn_gpu_enter(&c->g);

	return ret ? ret : pn_gpu_export_dmabuf(&c->g, ptr, bytes, fd, offset);
}

struct pn_gpu *pn_cuda_gpu(void *be)
{
	return &((struct pn_cuda *)be)->g;
}

int pn_cuda_pdl(void *be)
{
	return ((struct pn_cuda *)be)->cfg.pdl;
}

void pn_cuda_co_view(void *be, struct pn_cuda_co_view *v)
{
	struct pn_cuda *c = be;

	v->g = &c->g;
	v->cfg = &c->cfg;
	v->rank = c->rank;
	v->n = c->n;
	v->ws = c->ws->peer;
	v->mod = c->co_mod;
	v->fn = &c->co_fn[0][0][0];
}

const void *pn_cuda_xnode_image(void *be)
{
	return ((struct pn_cuda *)be)->xnode_image;
}

void pn_cuda_stage(void *be, CUdeviceptr *p, uint64_t *bytes)
{
	struct pn_cuda *c = be;

	*p = c->stage->base;
	*bytes = c->cfg.stage_bytes;
}

CUdeviceptr pn_cuda_err_word(void *be)
{
	struct pn_cuda *c = be;

	return c->ws->base + PN_WS_COUNTERS + 4 * PN_CNT_ERR;
}

/* Errors the kernels recorded in the workspace since the last check. */
static int kernel_errors(struct pn_cuda *c)
{
	uint32_t w[2], zero[2] = { 0, 0 };
	CUdeviceptr at = c->ws->base + PN_WS_COUNTERS + 4 * PN_CNT_ERR;

	PN_CU(c->g.cu, MemcpyDtoH(w, at, sizeof(w)), "cuMemcpyDtoH");
	if (!w[0])
		return 0;
	PN_CU(c->g.cu, MemcpyHtoD(at, zero, sizeof(zero)), "cuMemcpyHtoD");
	PN_CU(c->g.cu, StreamSynchronize(NULL), "cuStreamSynchronize (default stream)");
	return word_error(c, w);
}

int pn_cuda_kernel_errors(void *be)
{
	return kernel_errors(be);
}
