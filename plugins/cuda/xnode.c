/* SPDX-License-Identifier: MIT */
/*
 * The cuda plugin across nodes (penny_plugin_v1.xnode_*): the core's boxes
 * registered as mapped host memory (cuMemHostRegister with DEVICEMAP), the
 * kernels' ticket counters in device memory, and the launch of pn_xn_*
 * (xn_kernels.cu) on the plugin's stream: the allreduce and, through
 * pn_xn_coll_args (kargs.h), the other collectives.
 */
#include "cuda.h"
#include "penny_data.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

_Static_assert(sizeof(struct penny_xout_slot) == PN_XSLOT, "outbox slot header");
_Static_assert(sizeof(struct penny_xin_slot) == PN_XSLOT, "inbox slot header");

struct pn_cuda_xn {
	struct penny_xnode_v1 x;
	CUdeviceptr out_d, in_d;	/* the boxes as the device sees them */
	int out_reg, in_reg;
	CUdeviceptr ctr;		/* uint64 [1 + nnodes + 2] (pn_xn_args.ctr) */
	CUmodule mod;
	CUfunction fn[PENNY_NDTYPES][PENNY_NREDOPS];
	CUfunction copy;		/* pn_xn_copy */
	unsigned blocks;		/* largest grid */
};

static const char *const xn_types[PENNY_NDTYPES] = {
	"int8", "uint8", "int32", "uint32", "int64", "uint64", "half", "bfloat16", "float", "double",
};
static const char *const xn_ops[PENNY_NREDOPS] = { "sum", "prod", "min", "max", "avg" };

static int map_box(const struct pn_cudrv *cu, void *p, size_t bytes, CUdeviceptr *d, int *reg)
{
	PN_CU(cu, MemHostRegister(p, bytes, CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP),
	      "cuMemHostRegister");
	*reg = 1;
	PN_CU(cu, MemHostGetDevicePointer(d, p, 0), "cuMemHostGetDevicePointer");
	return 0;
}

void pn_cuda_xnode_close(void *be, void *xnp)
{
	struct pn_cuda_xn *n = xnp;
	struct pn_gpu *g = pn_cuda_gpu(be);
	const struct pn_cudrv *cu = g->cu;

	if (!n)
		return;
	pn_gpu_enter(g);
	cu->StreamSynchronize(g->stream);
	if (n->out_reg)
		cu->MemHostUnregister(n->x.outbox);
	if (n->in_reg)
		cu->MemHostUnregister(n->x.inbox);
	if (n->ctr)
		cu->MemFree(n->ctr);
	if (n->mod)
		cu->ModuleUnload(n->mod);
	free(n);
}

int pn_cuda_xnode_open(void *be, const struct penny_xnode_v1 *x, void **xn)
{
	struct pn_gpu *g = pn_cuda_gpu(be);
	const struct pn_cudrv *cu = g->cu;
	const void *image = pn_cuda_xnode_image(be);
	struct pn_cuda_xn *n;
	size_t ctr_bytes;
	int ret;

	*xn = NULL;
	if (!x || x->size < sizeof(*x) || x->slots < 2 || x->slot_bytes < 16 || x->slot_bytes % 16 ||
	    x->nnodes < 2 || x->node < 0 || x->node >= x->nnodes || x->nranks < x->nnodes ||
	    !x->outbox || !x->inbox)
		return pn_plugin_fail(-EINVAL, "xnode: a bad description of the boxes");
	if (x->nnodes > PN_XN_MAX_NODES)
		return pn_plugin_fail(-EOPNOTSUPP, "xnode: %d nodes; the kernel reduces at most %d "
						   "(PENNY_XNODE=0 runs the host-staged path)",
				      x->nnodes, PN_XN_MAX_NODES);
	if (!image)
		return pn_plugin_fail(-ENOEXEC, "the cuda plugin was built without its xnode kernels");
	if (!cu->MemHostRegister || !cu->MemHostUnregister || !cu->MemHostGetDevicePointer)
		return pn_plugin_fail(-EOPNOTSUPP, "the CUDA driver has no cuMemHostRegister");
	ret = pn_gpu_enter(g);
	if (ret)
		return ret;
	n = calloc(1, sizeof(*n));
	if (!n)
		return pn_plugin_fail(-ENOMEM, "out of memory");
	n->x = *x;
	n->blocks = x->slots < 16 ? x->slots : 16;
	if (n->blocks > (unsigned)g->nsm)
		n->blocks = (unsigned)g->nsm;
	ctr_bytes = 8 * ((size_t)x->nnodes + 3);
	ret = map_box(cu, x->outbox, penny_xbox_out_bytes(x->slots, x->slot_bytes), &n->out_d,
		      &n->out_reg);
	if (!ret)
		ret = map_box(cu, x->inbox, penny_xbox_in_bytes(x->nnodes, x->slots, x->slot_bytes),
			      &n->in_d, &n->in_reg);
	if (!ret) {
		CUresult r = cu->MemAlloc(&n->ctr, ctr_bytes);

		if (r != CUDA_SUCCESS) {
			n->ctr = 0;
			ret = pn_cu_fail(cu, r, "cuMemAlloc");
		}
	}
	if (!ret) {
		CUresult r = cu->MemsetD8Async(n->ctr, 0, ctr_bytes, g->stream);

		ret = r != CUDA_SUCCESS ? pn_cu_fail(cu, r, "cuMemsetD8Async") : pn_gpu_sync(g);
	}
	if (!ret) {
		CUresult r = cu->ModuleLoadData(&n->mod, image);

		if (r != CUDA_SUCCESS) {
			n->mod = NULL;
			ret = pn_cu_fail(cu, r, "cuModuleLoadData (xnode)");
		}
	}
	if (ret) {
		pn_cuda_xnode_close(be, n);
		return ret;
	}
	*xn = n;
	return 0;
}

/*
 * The chunk of a call of bytes: at least 8 chunks in flight where that keeps
 * them >= 64 KiB (the GPU's copy out, the wire and the reduce overlap), at
 * most a slot; below 512 KiB, 4 chunks of at least 16 KiB (over tcp
 * consecutive chunks take different sockets: 4 x 1 H100 64 KiB 72 us against
 * 124 us as one chunk, while 8 chunks of 16 KiB cost shm up to 20 % at
 * 128-512 KiB).  Every rank computes the same from the same call.
 */
static uint64_t xn_chunk(const struct penny_xnode_v1 *x, uint64_t bytes)
{
	uint64_t c = (bytes / 8 + 4095) & ~(uint64_t)4095;

	if (c < (64u << 10)) {
		c = (bytes / 4 + 4095) & ~(uint64_t)4095;
		c = c < (16u << 10) ? 16u << 10 : c > (64u << 10) ? 64u << 10 : c;
	}
	return c < x->slot_bytes ? c : x->slot_bytes;
}

/* The kernel of dtype x op (dtype < 0: pn_xn_copy), looked up once. */
static int xn_fn(struct pn_gpu *g, struct pn_cuda_xn *n, int dtype, int op, CUfunction *f)
{
	CUfunction *slot = dtype < 0 ? &n->copy : &n->fn[dtype][op];

	if (!*slot) {
		char name[64] = "pn_xn_copy";

		if (dtype >= 0)
			snprintf(name, sizeof(name), "pn_xn_%s_%s", xn_types[dtype], xn_ops[op]);
		PN_CU(g->cu, ModuleGetFunction(slot, n->mod, name), name);
	}
	*f = *slot;
	return 0;
}

/* Whether a call of bytes (a block's) travels as LL lines in chunks of
 * chunk: by its size, the same on every rank (alignment may differ). */
static int xn_ll(const struct penny_xnode_v1 *x, uint64_t bytes, uint64_t chunk)
{
	return bytes <= x->ll_max && 2 * ((chunk + 15) & ~(uint64_t)15) <= x->slot_bytes;
}

/* The boxes' part of a call's arguments (its buffers are the caller's). */
static void xn_args(void *be, const struct pn_cuda_xn *n, uint64_t count, uint64_t chunk, int ll,
		    struct pn_xn_args *a)
{
	const struct penny_xnode_v1 *x = &n->x;

	memset(a, 0, sizeof(*a));
	a->count = count;
	a->ctl = n->out_d;
	a->out_hdr = n->out_d + PENNY_XBOX_LINE;
	a->out_data = n->out_d + penny_xbox_out_data(x->slots, x->slot_bytes, 0);
	a->in_hdr = n->in_d + penny_xbox_in_hdr(x->slots, 0, 0);
	a->in_data = n->in_d + penny_xbox_in_data(x->nnodes, x->slots, x->slot_bytes, 0, 0);
	a->ctr = n->ctr;
	a->err = pn_cuda_err_word(be);
	a->slot_bytes = chunk;
	a->stride = x->slot_bytes;
	a->timeout_ns = x->timeout_ns;
	a->slots = x->slots;
	a->nnodes = x->nnodes;
	a->node = x->node;
	a->nranks = x->nranks;
	a->ll = (uint32_t)ll;
}

/* One launch of f over a call of bytes (a block's) in chunks of a->slot_bytes. */
static int xn_launch(void *be, struct pn_cuda_xn *n, CUfunction f, struct pn_xn_args *a,
		     uint64_t bytes)
{
	struct pn_gpu *g = pn_cuda_gpu(be);
	uint64_t nch = (bytes + a->slot_bytes - 1) / a->slot_bytes;
	unsigned grid = nch < n->blocks ? (unsigned)nch : n->blocks;

	/* the kernel waits for the previous one (griddepcontrol.wait) first */
	return pn_cuda_pdl(be) ? pn_gpu_launch_pdl(g, f, grid, 512, a)
			       : pn_gpu_launch(g, f, grid, 512, a);
}

/* The allreduce over [send, + count elements) -> recv (both 16-byte aligned). */
static int xn_allreduce(void *be, struct pn_cuda_xn *n, CUdeviceptr send, CUdeviceptr recv,
			uint64_t count, int dtype, int op, uint64_t chunk, int ll)
{
	struct pn_xn_args a;
	CUfunction f;
	int ret = xn_fn(pn_cuda_gpu(be), n, dtype, op, &f);

	if (ret)
		return ret;
	xn_args(be, n, count, chunk, ll, &a);
	a.send = a.own = send;
	a.recv = recv;
	a.from = a.to = ((1u << n->x.nnodes) - 1) & ~(1u << n->x.node);
	return xn_launch(be, n, f, &a, count * (uint64_t)penny_data_size(dtype));
}

/*
 * The kernel moves 16-byte vectors: buffers that are not 16-byte aligned go
 * through the staging buffer, in pieces of whole chunks, so the chunks on
 * the wire are the same as an aligned peer's (alignment may differ between
 * ranks).
 */
int pn_cuda_xnode_allreduce(void *be, void *xnp, const void *send, void *recv, size_t count,
			    int dtype, int op)
{
	struct pn_cuda_xn *n = xnp;
	struct pn_gpu *g = pn_cuda_gpu(be);
	CUdeviceptr s = (CUdeviceptr)(uintptr_t)send, d = (CUdeviceptr)(uintptr_t)recv, st;
	uint64_t es, bytes, piece, off, stage_bytes, chunk;
	int ll, ret = pn_gpu_check_args(count, dtype, op);

	if (ret || !count)
		return ret;
	ret = pn_gpu_enter(g);
	if (ret)
		return ret;
	es = (uint64_t)penny_data_size(dtype);
	bytes = count * es;
	chunk = xn_chunk(&n->x, bytes);
	/* LL by the call's size, the same on every rank (alignment may differ) */
	ll = xn_ll(&n->x, bytes, chunk);
	if (!((s | d) & 15))
		return xn_allreduce(be, n, s, d, count, dtype, op, chunk, ll);
	pn_cuda_stage(be, &st, &stage_bytes);
	piece = stage_bytes / chunk * chunk;
	if (!piece)
		return pn_plugin_fail(-EINVAL, "xnode: chunks of %llu bytes do not fit the staging "
					       "buffer (PENNY_CUDA_STAGING, %llu bytes) that unaligned "
					       "buffers need",
				      (unsigned long long)chunk, (unsigned long long)stage_bytes);
	for (off = 0; off < bytes && !ret; off += piece) {
		uint64_t len = bytes - off < piece ? bytes - off : piece;

		PN_CU(g->cu, MemcpyAsync(st, s + off, len, g->stream), "cuMemcpyAsync");
		ret = xn_allreduce(be, n, st, st, len / es, dtype, op, chunk, ll);
		if (!ret)
			PN_CU(g->cu, MemcpyAsync(d + off, st, len, g->stream), "cuMemcpyAsync");
	}
	return ret;
}

static int xc_reduces(int kind)
{
	return kind == PENNY_XC_REDUCE || kind == PENNY_XC_REDUCE_SCATTER;
}

/*
 * A call the kernels take: every kind across any number of nodes (outbox
 * tickets to the nodes of their masks, PENNY_CAP_XCOLL_NODES), elements whole
 * (the kernels load and store elements where buffers are not 16-byte
 * aligned) and the blocks of a side with several apart.
 */
static int xc_check(const struct penny_xnode_v1 *x, const struct penny_xcoll_v1 *c)
{
	uint64_t es, bytes, ss, rs;
	const char *name;
	int ret;

	if (!c || c->size < sizeof(*c))
		return pn_plugin_fail(-EINVAL, "xnode_coll: a bad call description");
	if (!pn_xc_coll(c->kind))
		return pn_plugin_fail(-EINVAL, "xnode_coll: unknown collective %d", c->kind);
	name = pn_cuda_coll_name(pn_xc_coll(c->kind));
	ret = pn_gpu_check_args(c->count, c->dtype, xc_reduces(c->kind) ? c->op : PENNY_SUM);
	if (ret)
		return ret;
	if ((c->kind == PENNY_XC_BROADCAST || c->kind == PENNY_XC_REDUCE) &&
	    (c->root < 0 || c->root >= x->nnodes))
		return pn_plugin_fail(-EINVAL, "xnode_coll: root %d is not one of %d nodes", c->root,
				      x->nnodes);
	es = (uint64_t)penny_data_size(c->dtype);
	bytes = c->count * es;
	/* the strides the kind uses */
	ss = c->kind == PENNY_XC_REDUCE_SCATTER || c->kind == PENNY_XC_ALLTOALL ? c->sstride : 0;
	rs = c->kind == PENNY_XC_ALLGATHER || c->kind == PENNY_XC_ALLTOALL ? c->rstride : 0;
	if (((uintptr_t)c->send | (uintptr_t)c->recv | ss | rs) % es || (ss && ss < bytes) ||
	    (rs && rs < bytes))
		return pn_plugin_fail(-EINVAL, "xnode_coll: %s buffers or strides (%llu, %llu bytes) "
					       "that are not whole elements or overlap blocks of "
					       "%llu bytes",
				      name, (unsigned long long)c->sstride,
				      (unsigned long long)c->rstride, (unsigned long long)bytes);
	return 0;
}

/*
 * penny_plugin_v1.xnode_coll: one launch on the user's buffers (the kernels
 * take any element boundary, so no staging), the allreduce's chunks and LL
 * choice by a block's bytes.
 */
int pn_cuda_xnode_coll(void *be, void *xnp, const struct penny_xcoll_v1 *c)
{
	struct pn_cuda_xn *n = xnp;
	struct pn_gpu *g = pn_cuda_gpu(be);
	struct pn_xn_args a;
	uint64_t bytes, chunk;
	CUfunction f;
	int ret = xc_check(&n->x, c);

	if (ret || !c->count)
		return ret;
	ret = pn_gpu_enter(g);
	if (!ret)
		ret = xn_fn(g, n, xc_reduces(c->kind) ? c->dtype : -1, c->op, &f);
	if (ret)
		return ret;
	bytes = c->count * (uint64_t)penny_data_size(c->dtype);
	chunk = xn_chunk(&n->x, bytes);
	xn_args(be, n, c->count, chunk, xn_ll(&n->x, bytes, chunk), &a);
	pn_xn_coll_args(&a, c, bytes, n->x.node, n->x.nnodes);
	a.esize = (uint32_t)penny_data_size(c->dtype);
	return xn_launch(be, n, f, &a, bytes);
}
