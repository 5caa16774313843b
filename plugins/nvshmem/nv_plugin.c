/* SPDX-License-Identifier: MIT */
/*
 * The nvshmem plugin: penny's allreduce on NVSHMEM's GPU-initiated
 * put-with-signal (nv_kernels.cu), one programming model whose transport is
 * NVLink P2P within a node and RDMA (IBGDA) across nodes, so the plugin
 * spans nodes by itself (PENNY_CAP_MULTINODE).
 *  - Bootstrap through penny's communicator: rank 0 takes an NVSHMEM unique
 *    id, the host services' allgather hands it to every rank together with
 *    each rank's state and settings (a rank that failed to open its GPU makes
 *    every rank fail instead of leaving them in NVSHMEM's bootstrap), then
 *    nvshmemx_set_attr_uniqueid_args + init with NVSHMEMX_INIT_WITH_UNIQUEID.
 *    NVSHMEM_DISABLE_NVLS=1 always: no multicast objects.
 *  - The kernels are one cubin linked against libnvshmem_device.a (nvlink),
 *    embedded here, loaded with cuModuleLoadData and given NVSHMEM's device
 *    state by nvshmemx_cumodule_init; launched with cuLaunchKernel on the
 *    backend's stream (no host work per call beyond the launch: CUDA graphs
 *    capture them).
 *  - Symmetric heap (nvshmem_malloc): the work area (data slots, signals,
 *    LL lines), the staging buffer, and REGISTERED buffers.  When every
 *    peer is reached by NVLink (nvshmem_ptr answers for each) the kernels
 *    read the send buffer with loads wherever it lies; otherwise a NIC
 *    reads it, and a call whose send buffer is not symmetric is staged, as
 *    is one whose buffers are not 16-byte aligned.
 *  - Small calls within one NVLink domain run the LL one-shot (data and
 *    flag in one store, no fence or signal).
 *  - Large calls within one NVLink domain (auto above PENNY_NVSHMEM_RING_MAX)
 *    move by copy engines: the cuda plugin's copy-engine allreduce
 *    (plugins/cuda/cuda_ce.c, its kernels' image embedded here too) on the
 *    symmetric heap, every peer's address from nvshmem_ptr.  Where the
 *    link is the limit a copy engine moves about 394 GB/s and SM stores
 *    about 369 (2 x H200), and the ring lost the difference: 342 GB/s
 *    busbw at 1 GiB against the cuda plugin's 388; by copy engines 388
 *    (results/2026-11-30-h200x2/s60-nvshmem-ce.txt).
 *  - Within one NVLink domain auto (above PENNY_NVSHMEM_CUDA_MIN, default
 *    0) runs the cuda plugin's kernels (plugins/cuda/ar_kernels.cu, images
 *    embedded here; its size table and PENNY_CUDA_* settings) on a
 *    workspace of the symmetric heap, every peer's by nvshmem_ptr: within a
 *    node NVSHMEM's transport is load/store over the same NVLink mappings,
 *    and those kernels' LL lines and flags cost less there than the
 *    nvshmem kernels' (1.15-1.22x the cuda plugin's time to 1 MiB,
 *    0.85-0.90x its busbw at 4-32 MiB; with these kernels 0.94-1.06x and
 *    0.99-1.00x: results/2026-11-30-h200x2/s61-nvshmem-cuda-kernels.txt).
 *    Across nodes, and for an explicit algorithm, the nvshmem kernels run.
 * fill/check/timing/bw come from plugins/common/gpu.c like the cuda plugin.
 */
#define _GNU_SOURCE
#include "nv_plugin.h"
#include "nv_boot.h"
#include "nv_plan.h"
#include "../cuda/cuda_ce.h"
#include "../include/penny_data.h"

#include <errno.h>
#include <stddef.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *const type_names[PENNY_NDTYPES] = { "int8",	 "uint8", "int32",    "uint32",
							"int64", "uint64", "half", "bfloat16",
							"float", "double" };
static const char *const op_names[PENNY_NREDOPS] = { "sum", "prod", "min", "max", "avg" };

/* A symmetric buffer from alloc(PENNY_MEM_REGISTERED); id: its place in
 * the order of allocations, the same on every PE (nvshmem_malloc is
 * collective): the copy engines' check that every PE's recv is the same
 * buffer. */
struct nv_sym {
	CUdeviceptr base;
	size_t bytes;
	uint32_t id;
	struct nv_sym *next;
};

struct pn_nv {
	struct pn_gpu g;
	const struct penny_host_v1 *host;
	int rank, n, nvshmem_up;
	int p2p_all;			/* every PE reached by load/store (nvshmem_ptr) */
	int64_t p2p[PN_NV_LL_MAX_PES];	/* PE rank + q's copy of the work area - ours */
	struct pn_nv_cfg cfg;
	CUmodule mod;
	CUfunction fn[PN_NV_NKERNS][PENNY_NDTYPES][PENNY_NREDOPS];
	CUdeviceptr ws, stage, local;	/* symmetric, symmetric, device: counters + error */
	CUdeviceptr rings;		/* device: planned rings (pn_nv_rings_table), or 0 */
	int nrings;
	struct nv_sym *syms;
	uint32_t sym_ids;
	/* the copy engines (cuda_ce.c): state 0 not made yet, 1 made, -1 none
	 * (a PE could not make them: the ring instead) */
	const void *const *cu_images;	/* the cuda plugin's kernels, [PN_NKERNS] */
	const void *ce_image;
	int ce_state;
	CUmodule ce_mod;
	CUfunction ce_fn[PENNY_NDTYPES][PENNY_NREDOPS];
	struct pn_ce *ce;
	struct pn_reg ce_area, ce_errs;
	/* the cuda plugin's kernels (auto's PN_NV_CUDA): their settings and
	 * table, agreed at init; state as ce_state (-1: cfg.cuda_ok cleared);
	 * their workspace and the staging buffer as those kernels see them */
	struct pn_cuda_cfg ccfg;
	struct pn_tune ctune;
	int cu_state;
	CUmodule cu_mod[PN_NKERNS];
	CUfunction cu_fn[PN_NKERNS][PENNY_NDTYPES][PENNY_NREDOPS];
	struct pn_reg cu_ws, cu_stage;
	char desc[400];
	size_t desc_len;		/* init's description; set_rings adds to it */
};
/* the shared entry points (pn_gpu_be_*) take the backend as its struct pn_gpu */
_Static_assert(offsetof(struct pn_nv, g) == 0, "struct pn_nv begins with its struct pn_gpu");

#define PN_NV_MAGIC 0x70766e73u /* "pnvs" */
/* the copy engines' kernels record errors in the nvshmem kernels' words */
_Static_assert(PN_NV_ERR_TIMEOUT == PN_ERR_TIMEOUT, "one error code for both kernel families");

/* Device memory of one PE (not symmetric): an epoch per block, the error
 * words {bits, peer}, the LL one-shot's {epoch, blocks finished}. */
#define PN_NV_LOCAL_ERR (8ull * PN_NV_MAX_BLOCKS)
#define PN_NV_LOCAL_LL (PN_NV_LOCAL_ERR + 8)
#define PN_NV_LOCAL_BYTES (PN_NV_LOCAL_LL + 8)

/* What every rank announces at init; settings must agree (channels: the
 * fewest), rank 0's id is used. */
struct nv_hello {
	uint32_t magic, version;
	int32_t ok, blocks;
	uint64_t oneshot_max, simple_max, twoshot_max, slot, timeout_ns, ll_max, chunk;
	/* the cuda plugin's kernels: their threshold, settings, table and grid */
	uint64_t cuda_min, cu_ll_max, cu_oneshot_ll_max, cu_twoshot_ll_max, cu_twoshot_hy_max;
	uint32_t cu_tile_twoshot, cu_tile_ring, cu_blocks, cu_pdl;
	char cu_tune[96];
	char err[160];
	unsigned char uid[512];
};

static int agree(struct pn_nv *c, int local, unsigned char *uid)
{
	struct nv_hello mine, *all;
	size_t ulen = pn_nvb_uid_size();
	int p, ret = 0;

	if (ulen > sizeof(mine.uid))
		return pn_plugin_fail(-EOVERFLOW, "NVSHMEM's unique id (%zu bytes) is larger than "
						  "this plugin expects",
				      ulen);
	memset(&mine, 0, sizeof(mine));
	mine.magic = PN_NV_MAGIC;
	mine.version = 4;
	mine.ok = local == 0;
	mine.blocks = (int32_t)c->cfg.blocks;
	mine.oneshot_max = c->cfg.oneshot_max;
	mine.simple_max = c->cfg.simple_max;
	mine.twoshot_max = c->cfg.twoshot_max;
	mine.slot = c->cfg.slot;
	mine.timeout_ns = c->cfg.timeout_ns;
	mine.ll_max = c->cfg.ll_max;
	mine.chunk = c->cfg.chunk;
	mine.cuda_min = c->cfg.cuda_min;
	mine.cu_ll_max = c->ccfg.ll_max;
	mine.cu_oneshot_ll_max = c->ccfg.oneshot_ll_max;
	mine.cu_twoshot_ll_max = c->ccfg.twoshot_ll_max;
	mine.cu_twoshot_hy_max = c->ccfg.twoshot_hy_max;
	mine.cu_tile_twoshot = c->ccfg.tile_twoshot;
	mine.cu_tile_ring = c->ccfg.tile_ring;
	mine.cu_blocks = c->ccfg.blocks;
	mine.cu_pdl = (uint32_t)c->ccfg.pdl;
	pn_tune_format(&c->ctune, mine.cu_tune, sizeof(mine.cu_tune));
	if (local)
		snprintf(mine.err, sizeof(mine.err), "%s", pn_plugin_errmsg());
	else if (c->rank == 0 && pn_nvb_get_uid(mine.uid, ulen))
		mine.ok = 0, snprintf(mine.err, sizeof(mine.err), "nvshmemx_get_uniqueid failed");
	all = calloc((size_t)c->n, sizeof(*all));
	if (!all)
		return pn_plugin_fail(-ENOMEM, "out of memory");
	if (c->host->allgather(c->host->ctx, &mine, all, sizeof(mine))) {
		free(all);
		return pn_plugin_fail(-EIO, "the host allgather failed during init");
	}
	for (p = 0; p < c->n && !ret; p++) {
		const struct nv_hello *h = &all[p];

		if (h->magic != PN_NV_MAGIC || h->version != mine.version)
			ret = pn_plugin_fail(-EPROTO, "rank %d runs another nvshmem plugin", p);
		else if (!h->ok)
			ret = p != c->rank ? pn_plugin_fail(-EIO, "rank %d: %.*s", p, 150, h->err)
			      : local	   ? local
					   : pn_plugin_fail(-EIO, "%.*s", 150, h->err);
		else if (h->oneshot_max != mine.oneshot_max ||
			 h->simple_max != mine.simple_max || h->twoshot_max != mine.twoshot_max ||
			 h->slot != mine.slot || h->timeout_ns != mine.timeout_ns ||
			 h->ll_max != mine.ll_max || h->chunk != mine.chunk || h->cuda_min != mine.cuda_min)
			ret = pn_plugin_fail(-EINVAL, "rank %d has other PENNY_NVSHMEM_* settings than "
						      "rank %d (every rank needs the same)",
					     p, c->rank);
		else if (mine.ok && (h->cu_ll_max != mine.cu_ll_max || h->cu_pdl != mine.cu_pdl ||
			 h->cu_oneshot_ll_max != mine.cu_oneshot_ll_max ||
			 h->cu_twoshot_ll_max != mine.cu_twoshot_ll_max ||
			 h->cu_twoshot_hy_max != mine.cu_twoshot_hy_max ||
			 h->cu_tile_twoshot != mine.cu_tile_twoshot ||
			 h->cu_tile_ring != mine.cu_tile_ring ||
			 memcmp(h->cu_tune, mine.cu_tune, sizeof(mine.cu_tune))))
			ret = pn_plugin_fail(-EINVAL, "rank %d has other PENNY_CUDA_* settings than "
						      "rank %d (the nvshmem plugin runs the cuda plugin's "
						      "kernels too: every rank needs the same)",
					     p, c->rank);
	}
	/* channels: the fewest any rank has (GPUs with fewer SMs, a smaller setting), so
	 * that every PE cuts a call into the same grid */
	for (p = 0; p < c->n && !ret; p++) {
		if (all[p].blocks > 0 && (uint32_t)all[p].blocks < c->cfg.blocks)
			c->cfg.blocks = (uint32_t)all[p].blocks;
		if (all[p].cu_blocks > 0 && all[p].cu_blocks < c->ccfg.blocks)
			c->ccfg.blocks = all[p].cu_blocks;
	}
	if (!ret)
		memcpy(uid, all[0].uid, ulen);
	free(all);
	return ret;
}

/* *v := 1 on every rank when it is 1 on every rank (kernel choices must agree). */
static int pn_nv_agree_int(struct pn_nv *c, int *v)
{
	int32_t mine = *v, *all = calloc((size_t)c->n, sizeof(*all));
	int p;

	if (!all)
		return pn_plugin_fail(-ENOMEM, "out of memory");
	if (c->host->allgather(c->host->ctx, &mine, all, sizeof(mine))) {
		free(all);
		return pn_plugin_fail(-EIO, "the host allgather failed during init");
	}
	for (p = 0; p < c->n; p++)
		if (!all[p])
			*v = 0;
	free(all);
	return 0;
}

static int load_module(struct pn_nv *c, const void *image)
{
	if (!image)
		return pn_plugin_fail(-ENOEXEC, "the nvshmem plugin was built without its kernels");
	PN_CU(c->g.cu, ModuleLoadData(&c->mod, image), "cuModuleLoadData (nvshmem kernels)");
	return 0;
}

static int kernel(struct pn_nv *c, int kern, int dt, int op, CUfunction *f)
{
	char name[64];

	if (!c->fn[kern][dt][op]) {
		snprintf(name, sizeof(name), "pn_nv_%s_%s_%s", pn_nv_kern_names[kern], type_names[dt],
			 op_names[op]);
		PN_CU(c->g.cu, ModuleGetFunction(&c->fn[kern][dt][op], c->mod, name), name);
	}
	*f = c->fn[kern][dt][op];
	return 0;
}

/* Collective: nvshmem_malloc, NULL on every rank when the heap is full. */
static int sym_alloc(struct pn_nv *c, size_t bytes, CUdeviceptr *p)
{
	void *v = pn_nvb_malloc(bytes ? bytes : 16);

	if (!v)
		return pn_plugin_fail(-ENOMEM, "nvshmem_malloc(%zu) failed: the symmetric heap is "
					       "full (NVSHMEM_SYMMETRIC_SIZE)",
				      bytes);
	*p = (CUdeviceptr)(uintptr_t)v;
	return 0;
}

static void teardown(struct pn_nv *c)
{
	if (c->g.hung) {	/* a kernel may still run: the process's exit frees the rest */
		pn_gpu_close(&c->g);
		free(c);
		return;
	}
	if (c->nvshmem_up) {
		c->g.cu->StreamSynchronize(c->g.stream);
		while (c->syms) {
			struct nv_sym *s = c->syms;

			c->syms = s->next;
			pn_nvb_free((void *)(uintptr_t)s->base);
			free(s);
		}
		if (c->ce_area.base)
			pn_nvb_free((void *)(uintptr_t)c->ce_area.base);
		if (c->cu_ws.base)
			pn_nvb_free((void *)(uintptr_t)c->cu_ws.base);
		if (c->stage)
			pn_nvb_free((void *)(uintptr_t)c->stage);
		if (c->ws)
			pn_nvb_free((void *)(uintptr_t)c->ws);
		if (c->mod)
			pn_nvb_module_fini(c->mod);
		pn_nvb_fini();
	}
	pn_ce_close(c->ce);
	if (c->ce_mod)
		c->g.cu->ModuleUnload(c->ce_mod);
	for (int k = 0; k < PN_NKERNS; k++)
		if (c->cu_mod[k])
			c->g.cu->ModuleUnload(c->cu_mod[k]);
	if (c->local)
		c->g.cu->MemFree(c->local);
	if (c->rings)
		c->g.cu->MemFree(c->rings);
	if (c->mod)
		c->g.cu->ModuleUnload(c->mod);
	pn_gpu_close(&c->g);
	free(c);
}

#ifndef PN_NVSHMEM_LIBDIR
#define PN_NVSHMEM_LIBDIR ""
#endif

/*
 * NVSHMEM dlopens its unique-id bootstrap by a name without the ABI suffix
 * (nvshmem_bootstrap_uid.so) that pip's tree does not ship: name the file
 * of the tree the plugin was linked against unless the user named one.
 */
static void uid_plugin(void)
{
	char path[4096];

	if (getenv("NVSHMEM_BOOTSTRAP_UID_PLUGIN") || !*PN_NVSHMEM_LIBDIR)
		return;
	snprintf(path, sizeof(path), "%s/nvshmem_bootstrap_uid.so.3", PN_NVSHMEM_LIBDIR);
	if (access(path, R_OK) == 0)
		setenv("NVSHMEM_BOOTSTRAP_UID_PLUGIN", path, 0);
}

static int kernel_errors(void *be);

static const struct pn_gpu_hooks nv_hooks = {
	.allreduce = pn_nv_allreduce,
	.errors = kernel_errors,
};

int pn_nv_init(const void *data_image, const void *image, const void *const *cu_images,
	       const struct penny_host_v1 *host, int device, void **be)
{
	unsigned char uid[512];
	struct pn_nv *c;
	char tune[160], cu_tune[96] = "";
	int ret;

	*be = NULL;
	if (!host || host->size < sizeof(struct penny_host_v1) || !host->allgather)
		return pn_plugin_fail(-EINVAL, "the host passed no allgather service");
	if (host->nranks < 1 || host->rank < 0 || host->rank >= host->nranks)
		return pn_plugin_fail(-EINVAL, "bad rank %d of %d", host->rank, host->nranks);
	/* never multicast objects (NVLink SHARP): they can take shared machines down */
	setenv("NVSHMEM_DISABLE_NVLS", "1", 1);
	uid_plugin();
	c = calloc(1, sizeof(*c));
	if (!c)
		return pn_plugin_fail(-ENOMEM, "out of memory");
	c->host = host;
	c->rank = host->rank;
	c->n = host->nranks;
	c->cu_images = cu_images;
	c->ce_image = cu_images ? cu_images[PN_K_CE] : NULL;
	ret = pn_nv_read_cfg(&c->cfg, c->n, 0, (double)host->timeout_ns / 1e9);
	if (!ret)
		ret = pn_gpu_open(&c->g, host, device, data_image);
	c->g.hooks = &nv_hooks;
	if (!ret)
		pn_gpu_kernel_timeout(&c->g, c->cfg.timeout_ns);
	if (!ret && c->g.nsm > 0 && c->cfg.blocks > (uint32_t)c->g.nsm)
		c->cfg.blocks = (uint32_t)c->g.nsm;
	if (!ret && cu_images)
		ret = pn_cuda_read_cfg(&c->ccfg, &c->ctune, c->n, c->g.nsm, host->timeout_ns);
	/* its staging: the symmetric one here; its waits: this plugin's timeout */
	c->ccfg.stage_bytes = c->cfg.slot;
	c->ccfg.timeout_ns = c->cfg.timeout_ns;
	if (!ret)
		ret = load_module(c, image);
	ret = agree(c, ret, uid);
	if (ret)
		goto fail;
	if (pn_nvb_init(c->rank, c->n, uid, pn_nvb_uid_size())) {
		ret = pn_plugin_fail(-EIO, "NVSHMEM initialization by unique id failed on rank %d "
					   "(NVSHMEM_DEBUG=WARN says why)",
				     c->rank);
		goto fail;
	}
	c->nvshmem_up = 1;
	if (pn_nvb_module_init(c->mod)) {
		ret = pn_plugin_fail(-EIO, "nvshmemx_cumodule_init failed");
		goto fail;
	}
	ret = sym_alloc(c, pn_nv_ws_bytes(&c->cfg), &c->ws);
	if (!ret)
		ret = sym_alloc(c, c->cfg.slot, &c->stage);
	if (ret)
		goto fail;
	/* the same answer on every PE: NVLink reaches all or the job spans nodes */
	c->p2p_all = 1;
	for (int q = 1; q < c->n; q++) {
		char *pw = pn_nvb_ptr((void *)(uintptr_t)c->ws, (c->rank + q) % c->n);

		if (!pw)
			c->p2p_all = 0;
		else if (q < PN_NV_LL_MAX_PES)
			c->p2p[q] = (int64_t)(pw - (char *)(uintptr_t)c->ws);
	}
	ret = pn_nv_agree_int(c, &c->p2p_all);
	if (ret)
		goto fail;
	c->cfg.ll_ok = c->p2p_all;
	c->cfg.ce_ok = c->p2p_all && c->n <= PN_AR_MAX_RANKS && c->cfg.ce_bytes && c->ce_image;
	c->cfg.cuda_ok = c->p2p_all && c->n <= PN_AR_MAX_RANKS && c->n > 1 && cu_images;
	for (int k = 0; k < PN_NKERNS && c->cfg.cuda_ok; k++)
		c->cfg.cuda_ok = cu_images[k] != NULL;
	PN_CU_GOTO(c->g.cu, MemAlloc(&c->local, PN_NV_LOCAL_BYTES), "cuMemAlloc", ret, fail);
	/* zero signals and epochs before anyone can signal: memset, then a barrier */
	PN_CU_GOTO(c->g.cu, MemsetD8Async(c->ws, 0, pn_nv_ws_bytes(&c->cfg), c->g.stream),
		   "cuMemsetD8Async", ret, fail);
	PN_CU_GOTO(c->g.cu, MemsetD8Async(c->local, 0, PN_NV_LOCAL_BYTES, c->g.stream),
		   "cuMemsetD8Async", ret, fail);
	ret = pn_gpu_sync(&c->g);
	if (ret)
		goto fail;
	if (host->barrier && host->barrier(host->ctx)) {
		ret = pn_plugin_fail(-EIO, "barrier after zeroing the signals failed");
		goto fail;
	}
	pn_nv_format(&c->cfg, tune, sizeof(tune));
	if (c->cfg.cuda_ok)
		pn_tune_format(&c->ctune, cu_tune, sizeof(cu_tune));
	snprintf(c->desc, sizeof(c->desc),
		 "%s (%s) sm_%d%d %d SMs, CUDA driver %d.%d, %s, PE %d of %d, %u channels, "
		 "slot %" PRIu64 " B, auto %s%s%s",
		 c->g.name, c->g.busid, c->g.cc_major, c->g.cc_minor, c->g.nsm,
		 c->g.driver_version / 1000, c->g.driver_version % 1000 / 10, pn_nvb_version(),
		 c->rank, c->n, c->cfg.blocks, c->cfg.slot, tune,
		 c->cfg.cuda_ok ? " (the cuda plugin's " : "", c->cfg.cuda_ok ? cu_tune : "");
	if (c->cfg.cuda_ok && strlen(c->desc) + 2 < sizeof(c->desc))
		strcat(c->desc, ")");
	c->desc_len = strlen(c->desc);
	pn_gpu_log(host, PENNY_LOG_DEBUG, "nvshmem: %s", c->desc);
	*be = c;
	return 0;
fail:
	teardown(c);
	return ret;
}

void pn_nv_fini(void *be)
{
	struct pn_nv *c = be;

	if (!c)
		return;
	pn_gpu_enter(&c->g);
	teardown(c);
}

const char *pn_nv_describe(void *be)
{
	return ((struct pn_nv *)be)->desc;
}

int pn_nv_alloc(void *be, size_t bytes, unsigned flags, void **ptr)
{
	struct pn_nv *c = be;
	struct nv_sym *s;
	int ret = pn_gpu_enter(&c->g);

	if (ret)
		return ret;
	if (!(flags & PENNY_MEM_REGISTERED))
		return pn_gpu_alloc(&c->g, bytes, ptr);
	s = calloc(1, sizeof(*s));
	if (!s)
		return pn_plugin_fail(-ENOMEM, "out of memory");
	ret = sym_alloc(c, bytes, &s->base);
	if (ret) {
		free(s);
		return ret;
	}
	s->bytes = bytes;
	s->id = ++c->sym_ids;
	s->next = c->syms;
	c->syms = s;
	*ptr = (void *)(uintptr_t)s->base;
	return 0;
}

int pn_nv_free(void *be, void *ptr)
{
	struct pn_nv *c = be;
	struct nv_sym **pp;
	int ret = pn_gpu_enter(&c->g);

	if (ret)
		return ret;
	for (pp = &c->syms; *pp; pp = &(*pp)->next) {
		struct nv_sym *s = *pp;

		if (s->base != (CUdeviceptr)(uintptr_t)ptr)
			continue;
		*pp = s->next;
		if (c->g.hung) {	/* the work may still use it: the exit frees it */
			free(s);
			return 0;
		}
		c->g.cu->StreamSynchronize(c->g.stream);
		pn_nvb_free(ptr);
		free(s);
		return 0;
	}
	return pn_gpu_free(&c->g, ptr);
}

static const struct nv_sym *find_sym(const struct pn_nv *c, CUdeviceptr p, uint64_t bytes);

/* [p, p + bytes) inside one symmetric buffer of the same offsets on every PE */
static int is_sym(struct pn_nv *c, CUdeviceptr p, uint64_t bytes)
{
	return find_sym(c, p, bytes) != NULL;
}

int pn_nv_select(void *be, size_t count, int dtype, int op, int algo)
{
	struct pn_nv *c = be;
	int ret = pn_gpu_check_args(count, dtype, op), k;

	if (ret)
		return ret;
	k = pn_nv_kernel_for(&c->cfg, algo, (uint64_t)count * penny_data_size(dtype));
	if (k == PN_NV_CUDA)
		return pn_kern_algo(pn_tune_select(&c->ctune, (uint64_t)count * penny_data_size(dtype)));
	return k < 0 ? k : pn_nv_kern_algo(k);
}

static int launch(struct pn_nv *c, int kern, int dt, int op, CUdeviceptr src, CUdeviceptr recv,
		  uint64_t len)
{
	struct pn_nv_args a;
	CUfunction f = NULL;
	int ret = kernel(c, kern, dt, op, &f);

	if (ret)
		return ret;
	memset(&a, 0, sizeof(a));
	a.src = src;
	a.recv = recv;
	a.data = c->ws;
	a.sig = c->ws + pn_nv_sig_off(c->n, c->cfg.slot);
	a.ctr = c->local;
	a.err = c->local + PN_NV_LOCAL_ERR;
	a.llctr = c->local + PN_NV_LOCAL_LL;
	a.ll = c->ws + pn_nv_ll_off(c->n, c->cfg.slot, PN_NV_MAX_BLOCKS);
	a.ll_slot = pn_nv_ll_slot(c->cfg.ll_max);
	memcpy(a.p2p, c->p2p, sizeof(a.p2p));
	a.rings = c->rings;
	a.nrings = c->nrings;
	a.bytes = len;
	a.slot = c->cfg.slot;
	a.chunk = c->cfg.chunk;
	a.timeout_ns = c->cfg.timeout_ns;
	a.rank = c->rank;
	a.nranks = c->n;
	/* the kernel waits for the previous one (griddepcontrol.wait) first */
	return c->cfg.pdl ? pn_gpu_launch_pdl(&c->g, f, pn_nv_grid(&c->cfg, kern, len), 512, &a)
			  : pn_gpu_launch(&c->g, f, pn_nv_grid(&c->cfg, kern, len), 512, &a);
}

/* kern on [s, s + bytes) into d: launches of at most one slot (every PE
 * cuts the call the same way), through the staging buffer where the
 * kernels cannot read send or store 16-byte vectors. */
static int run(struct pn_nv *c, int kern, int dt, int op, CUdeviceptr s, CUdeviceptr d,
	       uint64_t bytes)
{
	const struct pn_cudrv *cu = c->g.cu;
	int staged = pn_nv_staged((uintptr_t)s, (uintptr_t)d, c->p2p_all || is_sym(c, s, bytes));
	uint64_t off;
	int ret = 0;

	for (off = 0; off < bytes && !ret; off += c->cfg.slot) {
		uint64_t len = bytes - off < c->cfg.slot ? bytes - off : c->cfg.slot;

		if (!staged) {
			ret = launch(c, kern, dt, op, s + off, d + off, len);
			continue;
		}
		PN_CU(cu, MemcpyAsync(c->stage, s + off, len, c->g.stream), "cuMemcpyAsync");
		ret = launch(c, kern, dt, op, c->stage, c->stage, len);
		if (!ret)
			PN_CU(cu, MemcpyAsync(d + off, c->stage, len, c->g.stream), "cuMemcpyAsync");
	}
	return ret;
}

/* The symmetric buffer holding [p, p + bytes), or NULL. */
static const struct nv_sym *find_sym(const struct pn_nv *c, CUdeviceptr p, uint64_t bytes)
{
	const struct nv_sym *s;

	for (s = c->syms; s; s = s->next)
		if (p >= s->base && p - s->base <= s->bytes && bytes <= s->bytes - (p - s->base))
			return s;
	return NULL;
}

/* A symmetric allocation as cuda_ce.c sees a registered buffer: every
 * PE's copy by its NVLink mapping (nvshmem_ptr), the same size on every PE. */
static int sym_reg(const struct pn_nv *c, CUdeviceptr base, size_t bytes, uint32_t id,
		   struct pn_reg *r)
{
	memset(r, 0, sizeof(*r));
	r->id = id;
	r->base = base;
	r->bytes = bytes;
	for (int p = 0; p < c->n; p++) {
		r->peer[p] = (CUdeviceptr)(uintptr_t)pn_nvb_ptr((void *)(uintptr_t)base, p);
		r->peer_bytes[p] = bytes;
		if (!r->peer[p])
			return pn_plugin_fail(-EFAULT, "nvshmem_ptr gave no address of PE %d's "
						       "copy of a symmetric buffer", p);
	}
	return 0;
}

/*
 * The copy engines' slots, made at the first call auto gives them (no
 * cost to a job that never makes one).  Collective: every PE's auto sends
 * the same call here.  Not inside a graph capture (nvshmem_malloc is a
 * barrier): such a call runs the ring.  Zeroed and agreed on before any
 * peer can signal into them; where any PE fails, every PE goes on with
 * the ring.  The kernels record errors as the nvshmem kernels do, in the
 * same two words {bits, detail}: the cuda plugin's kernels find them at
 * PN_WS_COUNTERS + 4 * PN_CNT_ERR of their workspace, so that workspace's
 * address is placed that far before them (nothing else of it is touched).
 */
static int ce_start(struct pn_nv *c)
{
	const struct pn_cudrv *cu = c->g.cu;
	CUdeviceptr base = 0;
	int cap = 0, ok, ret;

	if (cu->StreamIsCapturing && cu->StreamIsCapturing(c->g.stream, &cap) == CUDA_SUCCESS && cap)
		return 0;
	c->ce_state = -1;
	ret = sym_alloc(c, PN_CE_HDR + pn_gpu_alloc_size(c->cfg.ce_bytes), &base);
	if (!ret)
		ret = sym_reg(c, base, PN_CE_HDR + pn_gpu_alloc_size(c->cfg.ce_bytes), 0, &c->ce_area);
	c->ce_area.base = base;
	c->ce_errs.peer[c->rank] = c->local + PN_NV_LOCAL_ERR - PN_WS_COUNTERS - 4 * PN_CNT_ERR;
	if (!ret && cu->ModuleLoadData(&c->ce_mod, c->ce_image) != CUDA_SUCCESS) {
		c->ce_mod = NULL;
		ret = pn_plugin_fail(-EIO, "cuModuleLoadData (copy-engine kernels) failed");
	}
	/* the header zeroed, its word PN_CE_ONE 1 (little-endian) */
	if (!ret && (cu->MemsetD8Async(base, 0, PN_CE_HDR, c->g.stream) != CUDA_SUCCESS ||
		     cu->MemsetD8Async(base + 4 * PN_CE_ONE, 1, 1, c->g.stream) != CUDA_SUCCESS))
		ret = pn_plugin_fail(-EIO, "cuMemsetD8Async failed");
	if (!ret)
		ret = pn_gpu_sync(&c->g);
	if (!ret)
		ret = pn_ce_open(&c->g, c->rank, c->n, &c->ce_area, c->ce_mod, &c->ce);
	ok = !ret;
	if (ret)
		pn_gpu_log(c->host, PENNY_LOG_INFO, "nvshmem: no copy-engine slots on PE %d: %s",
			   c->rank, pn_plugin_errmsg());
	if (pn_nv_agree_int(c, &ok))
		return pn_plugin_fail(-EIO, "copy-engine slots: the PEs could not agree on them");
	if (ok) {
		c->ce_state = 1;
		pn_gpu_log(c->host, PENNY_LOG_DEBUG, "nvshmem: copy-engine slots: %" PRIu64 " bytes of "
						     "the symmetric heap",
			   c->ce_area.bytes);
		return 0;
	}
	pn_ce_close(c->ce);
	c->ce = NULL;
	pn_gpu_log(c->host, PENNY_LOG_INFO, "nvshmem: no copy-engine slots (the ring instead)");
	return 0;
}

static int run_cuda(struct pn_nv *c, int kern, int dt, int op, CUdeviceptr s, CUdeviceptr d,
		    uint64_t bytes);

/* The copy engines where recv lies in a symmetric buffer and the buffers
 * are aligned (the ring otherwise: the cuda plugin's where it runs here),
 * the tail by the one-shot. */
static int run_ce(struct pn_nv *c, int dt, int op, CUdeviceptr s, CUdeviceptr d, uint64_t bytes)
{
	const struct nv_sym *sym = find_sym(c, d, bytes);
	uint64_t main = bytes & ~(uint64_t)15;
	struct pn_ce_call call;
	struct pn_reg reg;
	char name[64];
	int ret;

	if (!c->ce_state) {
		ret = ce_start(c);
		if (ret)
			return ret;
	}
	if (c->ce_state != 1 || !sym || ((s | d) & 15) || main < 16 * (uint64_t)c->n)
		return c->cu_state == 1 ? run_cuda(c, PN_K_RING, dt, op, s, d, bytes)
					: run(c, PN_NV_RING, dt, op, s, d, bytes);
	ret = sym_reg(c, sym->base, sym->bytes, sym->id, &reg);
	if (ret)
		return ret;
	if (!c->ce_fn[dt][op]) {
		snprintf(name, sizeof(name), "pn_ar_ce_%s_%s", type_names[dt], op_names[op]);
		PN_CU(c->g.cu, ModuleGetFunction(&c->ce_fn[dt][op], c->ce_mod, name), name);
	}
	memset(&call, 0, sizeof(call));
	call.reduce = c->ce_fn[dt][op];
	call.send = s;
	call.recv = d;
	call.bytes = main;
	call.esize = (unsigned)penny_data_size(dt);
	call.reg = &reg;
	call.ws = &c->ce_errs;
	call.grid = pn_ce_grid(c->cfg.blocks, c->n);
	call.timeout_ns = c->cfg.timeout_ns;
	ret = pn_ce_run(c->ce, &call);
	if (!ret && main < bytes)
		ret = run(c, pn_nv_kernel_for(&c->cfg, PENNY_ALGO_ONESHOT, bytes - main), dt, op, s + main,
			  d + main, bytes - main);
	return ret;
}

/* ---- the cuda plugin's kernels on the symmetric heap (PN_NV_CUDA) ---- */

/* The staging buffer's identity in the cuda kernels' buffer check: no
 * registered buffer's (those count from 1). */
#define PN_NV_STAGE_ID 0xfffffu

/*
 * Their workspace (the cuda plugin's layout, kargs.h) on the symmetric
 * heap, and their modules, at the first call auto gives them, as the copy
 * engines' slots: collective, not inside a graph capture (nvshmem_malloc
 * is a barrier; such a call runs the nvshmem table), zeroed before any PE
 * can signal into it (the agreement after the zeroing is a barrier), and
 * where any PE fails every PE goes on with the nvshmem table.
 */
static int cu_start(struct pn_nv *c)
{
	const struct pn_cudrv *cu = c->g.cu;
	uint64_t bytes = PN_WS_LL + 4ull * (uint64_t)c->n * c->ccfg.ll_max +
			 (uint64_t)c->ccfg.blocks * 2 * (uint64_t)c->n * c->ccfg.slot_bytes;
	CUdeviceptr base = 0;
	int cap = 0, ok, ret, k;

	if (cu->StreamIsCapturing && cu->StreamIsCapturing(c->g.stream, &cap) == CUDA_SUCCESS && cap)
		return 0;
	ret = sym_alloc(c, bytes, &base);
	if (!ret)
		ret = sym_reg(c, base, bytes, 0, &c->cu_ws);
	c->cu_ws.base = base;
	if (!ret)
		ret = sym_reg(c, c->stage, c->cfg.slot, PN_NV_STAGE_ID, &c->cu_stage);
	for (k = 0; k < PN_NKERNS && !ret; k++)
		if (k != PN_K_CE && cu->ModuleLoadData(&c->cu_mod[k], c->cu_images[k]) != CUDA_SUCCESS) {
			c->cu_mod[k] = NULL;
			ret = pn_plugin_fail(-EIO, "cuModuleLoadData (the cuda plugin's %s kernels) failed",
					     pn_kern_names[k]);
		}
	if (!ret && cu->MemsetD8Async(base, 0, bytes, c->g.stream) != CUDA_SUCCESS)
		ret = pn_plugin_fail(-EIO, "cuMemsetD8Async failed");
	if (!ret)
		ret = pn_gpu_sync(&c->g);
	ok = !ret;
	if (ret)
		pn_gpu_log(c->host, PENNY_LOG_INFO, "nvshmem: no workspace for the cuda kernels on PE %d: %s",
			   c->rank, pn_plugin_errmsg());
	if (pn_nv_agree_int(c, &ok))
		return pn_plugin_fail(-EIO, "the cuda kernels' workspace: the PEs could not agree on it");
	c->cu_state = ok ? 1 : -1;
	c->cfg.cuda_ok = ok;	/* else auto's table is the nvshmem kernels' from now on */
	if (ok)
		pn_gpu_log(c->host, PENNY_LOG_DEBUG, "nvshmem: the cuda kernels' workspace: %" PRIu64
						     " bytes of the symmetric heap", bytes);
	else
		pn_gpu_log(c->host, PENNY_LOG_INFO, "nvshmem: the nvshmem kernels instead of the "
						    "cuda plugin's");
	return 0;
}

/* One launch of the cuda plugin's kernel kern (its launch() in cuda.c):
 * recv inside reg (peers store into it) or, for the LL kernels, anywhere. */
static int cu_launch(struct pn_nv *c, int kern, int dt, int op, CUdeviceptr send, CUdeviceptr recv,
		     uint64_t bytes, const struct pn_reg *reg)
{
	struct pn_ar_args a;
	struct pn_launch l;
	char name[64];
	CUfunction f;

	if (!c->cu_fn[kern][dt][op]) {
		snprintf(name, sizeof(name), "pn_ar_%s_%s_%s", pn_kern_names[kern], type_names[dt],
			 op_names[op]);
		PN_CU(c->g.cu, ModuleGetFunction(&c->cu_fn[kern][dt][op], c->cu_mod[kern], name), name);
	}
	f = c->cu_fn[kern][dt][op];
	pn_cuda_ar_args(&c->ccfg, kern, c->rank, send, recv, bytes, (unsigned)penny_data_size(dt),
			c->cu_ws.peer, reg, &a, &l);
	return c->ccfg.pdl ? pn_gpu_launch_pdl(&c->g, f, l.grid, l.threads, &a)
			   : pn_gpu_launch(&c->g, f, l.grid, l.threads, &a);
}

/* kern over [s, s + bytes) -> [d, ...) as the cuda plugin's run(): planned,
 * in chunks, through the staging buffer where the kernel needs it. */
static int cu_run(struct pn_nv *c, int kern, int dt, int op, CUdeviceptr s, CUdeviceptr d,
		  uint64_t bytes, const struct pn_reg *reg)
{
	const struct pn_cudrv *cu = c->g.cu;
	struct pn_plan plan;
	uint64_t off;
	int ret = pn_cuda_plan(&c->ccfg, kern, bytes, (uintptr_t)s, (uintptr_t)d, reg, &plan);

	for (off = 0; off < bytes && !ret; off += plan.chunk) {
		uint64_t len = bytes - off < plan.chunk ? bytes - off : plan.chunk;
		int k = kern, flags = kern == PN_K_TWOSHOT || kern == PN_K_RING;

		if ((k == PN_K_TWOSHOT_LL || k == PN_K_TWOSHOT_HY) && len < pn_cuda_twoshot_ll_min(c->n))
			k = PN_K_ONESHOT;
		if (!plan.staged) {
			ret = cu_launch(c, k, dt, op, s + off, d + off, len, flags ? reg : NULL);
			continue;
		}
		PN_CU(cu, MemcpyAsync(c->stage, s + off, len, c->g.stream), "cuMemcpyAsync");
		ret = cu_launch(c, k, dt, op, c->stage, c->stage, len, flags ? &c->cu_stage : NULL);
		if (!ret)
			PN_CU(cu, MemcpyAsync(d + off, c->stage, len, c->g.stream), "cuMemcpyAsync");
	}
	return ret;
}

/* The cuda plugin's kernel kern over the call as pn_cuda_allreduce runs
 * it: "ce" by the copy engines here, the flag kernels' last partial vector
 * by the LL one-shot. */
static int run_cuda(struct pn_nv *c, int kern, int dt, int op, CUdeviceptr s, CUdeviceptr d,
		    uint64_t bytes)
{
	const struct nv_sym *sym = find_sym(c, d, bytes);
	struct pn_reg reg;
	uint64_t main;
	int ret;

	if (kern == PN_K_CE && c->cfg.ce_ok)
		return run_ce(c, dt, op, s, d, bytes);
	if (kern == PN_K_CE)
		kern = PN_K_RING;
	ret = sym ? sym_reg(c, sym->base, sym->bytes, sym->id, &reg) : 0;
	if (ret)
		return ret;
	if (kern == PN_K_ONESHOT || kern == PN_K_TWOSHOT_LL)
		return cu_run(c, kern, dt, op, s, d, bytes, sym ? &reg : NULL);
	main = bytes & ~(uint64_t)15;
	ret = main ? cu_run(c, kern, dt, op, s, d, main, sym ? &reg : NULL) : 0;
	if (!ret && main < bytes)
		ret = cu_run(c, PN_K_ONESHOT, dt, op, s + main, d + main, bytes - main, NULL);
	return ret;
}

/* kern (pn_nv_kernel_for's answer) over the call. */
static int dispatch(struct pn_nv *c, int kern, int algo, int dt, int op, CUdeviceptr s,
		    CUdeviceptr d, uint64_t bytes)
{
	int ret;

	if (kern == PN_NV_CUDA && !c->cu_state) {
		ret = cu_start(c);
		if (ret)
			return ret;
	}
	if (kern == PN_NV_CUDA && c->cu_state != 1) {
		/* not made (yet: a capture): this call by the nvshmem table */
		struct pn_nv_cfg t = c->cfg;

		t.cuda_ok = 0;
		kern = pn_nv_kernel_for(&t, algo, bytes);
	}
	if (kern == PN_NV_CUDA)
		return run_cuda(c, pn_tune_select(&c->ctune, bytes), dt, op, s, d, bytes);
	return kern == PN_NV_CE ? run_ce(c, dt, op, s, d, bytes) : run(c, kern, dt, op, s, d, bytes);
}

int pn_nv_allreduce(void *be, const void *send, void *recv, size_t count, int dtype, int op,
		    int algo)
{
	struct pn_nv *c = be;
	CUdeviceptr s = (CUdeviceptr)(uintptr_t)send, d = (CUdeviceptr)(uintptr_t)recv;
	uint64_t bytes;
	int ret, kern;

	ret = pn_gpu_check_args(count, dtype, op);
	if (ret || !count)
		return ret;
	bytes = (uint64_t)count * penny_data_size(dtype);
	kern = pn_nv_kernel_for(&c->cfg, algo, bytes);
	if (kern < 0)
		return kern;
	ret = pn_gpu_enter(&c->g);
	if (ret)
		return ret;
	if (c->n == 1) {
		if (s != d)
			PN_CU(c->g.cu, MemcpyAsync(d, s, bytes, c->g.stream), "cuMemcpyAsync");
		return 0;
	}
	return dispatch(c, kern, algo, dtype, op, s, d, bytes);
}

/*
 * The ring kernel's channels follow planned rings (block b: ring b %
 * nrings).  NVSHMEM picks one NIC per PE at its init (the nearest, or
 * NVSHMEM_HCA_PE_MAPPING / NVSHMEM_HCA_PREFIX): a plan's per-ring NICs
 * cannot be applied per channel; its orders and directions are.
 */
int pn_nv_set_rings(void *be, const int32_t *order, int nrings)
{
	struct pn_nv *c = be;
	int32_t *t = NULL;
	size_t bytes = 2ull * (size_t)c->n * (size_t)(nrings > 0 ? nrings : 0) * sizeof(*t);
	int ret = pn_gpu_enter(&c->g);

	if (!ret && nrings > 0 && !(t = malloc(bytes)))
		ret = pn_plugin_fail(-ENOMEM, "out of memory");
	if (!ret)
		ret = pn_nv_rings_table(order, nrings, c->n, t);
	/* the calls before may still read the old table */
	if (!ret)
		ret = pn_gpu_sync(&c->g);
	if (!ret && c->rings) {
		c->g.cu->MemFree(c->rings);
		c->rings = 0;
		c->nrings = 0;
	}
	if (!ret && nrings > 0) {
		CUresult r = c->g.cu->MemAlloc(&c->rings, bytes);

		if (r != CUDA_SUCCESS) {
			c->rings = 0;
			ret = pn_cu_fail(c->g.cu, r, "cuMemAlloc");
		} else if ((r = c->g.cu->MemcpyHtoD(c->rings, t, bytes)) != CUDA_SUCCESS) {
			ret = pn_cu_fail(c->g.cu, r, "cuMemcpyHtoD");
		} else {
			c->nrings = nrings;
		}
	}
	free(t);
	if (!ret && c->desc_len < sizeof(c->desc)) {
		c->desc[c->desc_len] = 0;
		if (c->nrings)
			snprintf(c->desc + c->desc_len, sizeof(c->desc) - c->desc_len,
				 ", ring channels on %d planned rings", c->nrings);
	}
	return ret;
}

int pn_nv_allreduce_stream(void *be, const void *send, void *recv, size_t count, int dtype,
			   int op, int algo, void *stream)
{
	struct pn_nv *c = be;
	CUstream own = c->g.stream;
	int ret;

	c->g.stream = (CUstream)stream;
	ret = pn_nv_allreduce(be, send, recv, count, dtype, op, algo);
	c->g.stream = own;
	return ret;
}

static int kernel_errors(void *be)
{
	struct pn_nv *c = be;
	uint32_t w[2], zero[2] = { 0, 0 };
	CUdeviceptr at = c->local + PN_NV_LOCAL_ERR;

	PN_CU(c->g.cu, MemcpyDtoH(w, at, sizeof(w)), "cuMemcpyDtoH");
	if (!w[0] && c->cu_state == 1) {
		/* the cuda kernels' words, in their workspace's counters */
		at = c->cu_ws.base + PN_WS_COUNTERS + 4 * PN_CNT_ERR;
		PN_CU(c->g.cu, MemcpyDtoH(w, at, sizeof(w)), "cuMemcpyDtoH");
	}
	if (!w[0])
		return 0;
	PN_CU(c->g.cu, MemcpyHtoD(at, zero, sizeof(zero)), "cuMemcpyHtoD");
	if (w[0] & PN_ERR_DESC)
		return pn_plugin_fail(-EINVAL, "allreduce on PE %d: PE %u's recv was another buffer "
					       "or offset (the buffers must be the same on every PE)",
				      c->rank, PN_ERR_PEER(w[1]));
	return pn_plugin_fail(-ETIMEDOUT, "allreduce on PE %d timed out waiting for PE %u", c->rank,
			      PN_ERR_PEER(w[1]));
}
