/* SPDX-License-Identifier: MIT */
/*
 * The cuda plugin's other collectives on one node (penny_plugin_v1's
 * allgather, reduce_scatter, alltoall, broadcast, reduce, sendrecv): one launch of a
 * pn_co_* kernel (co_kernels.cu) per call on the caller's stream, which
 * moves the data through the peers' workspace scratch and syncs by flags
 * there (LL lines up to PENNY_CUDA_CO_LL_MAX bytes a peer): no host work
 * per call beyond the launch, no host barrier, nothing that a CUDA graph
 * could not capture.  Any buffers do (nothing is written
 * into a peer's buffer): no registration, no staging.  One rank: a copy.
 */
#include "cuda.h"
#include "penny_data.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static const char *const co_names[PN_NCO] = { "reduce_scatter", "reduce", "alltoall", "broadcast",
					      "sendrecv", "allgather" };
static const char *const co_types[PENNY_NDTYPES] = {
	"int8", "uint8", "int32", "uint32", "int64", "uint64", "half", "bfloat16", "float", "double",
};
static const char *const co_ops[PENNY_NREDOPS] = { "sum", "prod", "min", "max", "avg" };

const char *pn_cuda_coll_name(uint32_t coll)
{
	if (!coll)
		return "allreduce";
	return coll <= PN_NCO ? co_names[coll - 1] : "collective";
}

static int co_kernel(const struct pn_cuda_co_view *v, int kind, int dt, int op, CUfunction *f)
{
	CUfunction *slot;
	char name[80];

	if (!v->mod)
		return pn_plugin_fail(-ENOEXEC, "the cuda plugin was built without its %s kernels",
				      co_names[kind]);
	if (!PN_CO_REDUCES(kind))
		dt = op = 0; /* one copy kernel for every type */
	slot = &v->fn[((size_t)kind * PENNY_NDTYPES + (size_t)dt) * PENNY_NREDOPS + (size_t)op];
	if (!*slot) {
		if (PN_CO_REDUCES(kind))
			snprintf(name, sizeof(name), "pn_co_%s_%s_%s", co_names[kind], co_types[dt],
				 co_ops[op]);
		else
			snprintf(name, sizeof(name), "pn_co_%s", co_names[kind]);
		PN_CU(v->g->cu, ModuleGetFunction(slot, v->mod, name), name);
	}
	*f = *slot;
	return 0;
}

/* The kernel of kind over count elements (NCCL's count) on the current stream. */
static int co_launch(void *be, const struct pn_cuda_co_view *v, int kind, int dt, int op,
		     CUdeviceptr s, CUdeviceptr d, uint64_t count, int root)
{
	struct pn_ar_args a;
	struct pn_launch l;
	CUfunction f = NULL;
	int p, ret = co_kernel(v, kind, dt, op, &f);

	if (ret)
		return ret;
	const uint64_t bytes = count * (uint64_t)penny_data_size(dt);
	const int ll = pn_co_ll_fits(bytes, v->cfg->co_ll_max, 2 * v->cfg->ll_max);

	/* LL: the one-shot's lines; else the flag one-shot's tiles, a
	 * block's piece of each peer's part */
	pn_cuda_geometry(v->cfg, ll ? PN_K_ONESHOT : PN_K_ONESHOT_FL, bytes, &l);
	memset(&a, 0, sizeof(a));
	a.send = s;
	a.recv = d;
	for (p = 0; p < v->n; p++)
		a.peer_ws[p] = v->ws[p];
	a.count = count;
	a.timeout_ns = v->cfg->timeout_ns;
	a.tile = l.tile;
	a.slot_bytes = v->cfg->slot_bytes;
	a.ll_slot_bytes = 2 * v->cfg->ll_max;
	a.rank = v->rank;
	a.nranks = v->n;
	a.root = root;
	a.esize = (uint32_t)penny_data_size(dt);
	a.coll = 1 + (uint32_t)kind;
	a.ll = (uint32_t)ll;
	a.two = (kind == PN_CO_BROADCAST || kind == PN_CO_REDUCE) && v->n >= 3 && !ll &&
		bytes >= v->cfg->co_two_min;
	return pn_cuda_pdl(be) ? pn_gpu_launch_pdl(v->g, f, l.grid, l.threads, &a)
			       : pn_gpu_launch(v->g, f, l.grid, l.threads, &a);
}

/*
 * One call of kind: checked, then on stream (NULL: the backend's own) one
 * launch, or with one rank the copy of send to recv where they differ.
 */
static int co_call(void *be, int kind, const void *send, void *recv, size_t count, int dt, int op,
		   int root, void *stream)
{
	struct pn_cuda_co_view v;
	CUdeviceptr s = (CUdeviceptr)(uintptr_t)send, d = (CUdeviceptr)(uintptr_t)recv;
	CUstream own;
	uint64_t bytes;
	int ret = pn_gpu_check_args(count, dt, op);

	pn_cuda_co_view(be, &v);
	if (ret)
		return ret;
	if (root < 0 || root >= v.n)
		return pn_plugin_fail(-EINVAL, "%s: root %d is not a rank of %d", co_names[kind], root,
				      v.n);
	if (!count)
		return 0;
	if ((!send && (kind != PN_CO_BROADCAST || v.rank == root)) ||
	    (!recv && (kind != PN_CO_REDUCE || v.rank == root)))
		return pn_plugin_fail(-EINVAL, "%s: a NULL buffer", co_names[kind]);
	ret = pn_gpu_enter(v.g);
	if (ret)
		return ret;
	own = v.g->stream;
	if (stream)
		v.g->stream = (CUstream)stream;
	bytes = (uint64_t)count * penny_data_size(dt);
	if (v.n > 1) {
		ret = co_launch(be, &v, kind, dt, op, s, d, count, root);
	} else if (s != d) {
		CUresult e = v.g->cu->MemcpyAsync(d, s, bytes, v.g->stream);

		if (e != CUDA_SUCCESS)
			ret = pn_cu_fail(v.g->cu, e, "cuMemcpyAsync");
	}
	v.g->stream = own;
	return ret;
}

/* penny_plugin_v1.allgather: on the backend's stream, as allreduce(); the
 * core's paths across nodes gather the slices with it. */
int pn_cuda_allgather(void *be, const void *send, void *recv, size_t count, int dtype)
{
	return co_call(be, PN_CO_ALLGATHER, send, recv, count, dtype, PENNY_SUM, 0, NULL);
}

/* penny_plugin_v1.allgather_stream: the same on the caller's stream (the
 * NCCL interposer's ncclAllGather). */
int pn_cuda_allgather_stream(void *be, const void *send, void *recv, size_t count, int dtype,
			     void *stream)
{
	return co_call(be, PN_CO_ALLGATHER, send, recv, count, dtype, PENNY_SUM, 0, stream);
}

int pn_cuda_reduce_scatter(void *be, const void *send, void *recv, size_t count, int dtype, int op,
			   void *stream)
{
	return co_call(be, PN_CO_REDUCE_SCATTER, send, recv, count, dtype, op, 0, stream);
}

int pn_cuda_alltoall(void *be, const void *send, void *recv, size_t count, int dtype,
		     void *stream)
{
	return co_call(be, PN_CO_ALLTOALL, send, recv, count, dtype, PENNY_SUM, 0, stream);
}

int pn_cuda_broadcast(void *be, const void *send, void *recv, size_t count, int dtype, int root,
		      void *stream)
{
	return co_call(be, PN_CO_BROADCAST, send, recv, count, dtype, PENNY_SUM, root, stream);
}

int pn_cuda_reduce(void *be, const void *send, void *recv, size_t count, int dtype, int op,
		   int root, void *stream)
{
	return co_call(be, PN_CO_REDUCE, send, recv, count, dtype, op, root, stream);
}

int pn_cuda_sendrecv(void *be, const void *send, void *recv, size_t count, int dtype,
		     void *stream)
{
	return co_call(be, PN_CO_SENDRECV, send, recv, count, dtype, PENNY_SUM, 0, stream);
}
