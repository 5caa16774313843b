/* SPDX-License-Identifier: MIT */
/* The cuda plugin's exported table (penny_plugin_v1) and embedded kernels. */
#include "cuda.h"
#include "../common/gpu.h"

extern const unsigned char pn_image_data[];
extern const unsigned char pn_image_oneshot[];
extern const unsigned char pn_image_oneshot_fl[];
extern const unsigned char pn_image_twoshot_ll[];
extern const unsigned char pn_image_twoshot[];
extern const unsigned char pn_image_ring[];
extern const unsigned char pn_image_twoshot_hy[];
extern const unsigned char pn_image_ce[];
extern const unsigned char pn_image_xnode[];
extern const unsigned char pn_image_coll[];

static const struct pn_cuda_images images = {
	.data = pn_image_data,
	.kern = { pn_image_oneshot, pn_image_oneshot_fl, pn_image_twoshot_ll, pn_image_twoshot,
		  pn_image_ring, pn_image_twoshot_hy, pn_image_ce },
	.xnode = pn_image_xnode,
	.coll = pn_image_coll,
};

static int init(const struct penny_host_v1 *host, int device, void **be)
{
	pn_plugin_clear_error();
	return pn_cuda_init(&images, host, device, be);
}

static int bw(struct penny_bw_v1 *req)
{
	pn_plugin_clear_error();
	return pn_gpu_bw(images.data, req);
}

__attribute__((visibility("default"))) const struct penny_plugin_v1 penny_plugin_v1 = {
	PN_GPU_ENTRY_COMMON,
	.name = "cuda",
	.version = "penny cuda plugin 1 (CUDA IPC over NVLink: one-shot LL, two-shot LL and flags, ring, copy engines)",
	.algos = (1u << PENNY_ALGO_AUTO) | (1u << PENNY_ALGO_ONESHOT) | (1u << PENNY_ALGO_TWOSHOT) |
		 (1u << PENNY_ALGO_RING),
	.caps = PENNY_CAP_GRAPH | PENNY_CAP_BW | PENNY_CAP_XCOLL_NODES,
	.init = init,
	.fini = pn_cuda_fini,
	.describe = pn_cuda_describe,
	.alloc = pn_cuda_alloc,
	.free = pn_cuda_free,
	.allreduce = pn_cuda_allreduce,
	.select = pn_cuda_select,
	.bw = bw,
	.allgather = pn_cuda_allgather,
	.export_dmabuf = pn_cuda_export_dmabuf,
	.xnode_open = pn_cuda_xnode_open,
	.xnode_allreduce = pn_cuda_xnode_allreduce,
	.xnode_close = pn_cuda_xnode_close,
	.time_fn = pn_gpu_be_time_fn,
	/* appended for the NCCL interposer */
	.allreduce_stream = pn_cuda_allreduce_stream,
	/* appended for penny check's versions row */
	.driver_version = pn_gpu_entry_driver_version,
	/* appended for the interposer's registration cache and async errors */
	.reg_buffer = pn_cuda_reg_buffer,
	.dereg_buffer = pn_cuda_dereg_buffer,
	.allreduce_reg = pn_cuda_allreduce_reg,
	.async_error = pn_cuda_async_error,
	/* appended for penny coll-test's other collectives (one node, co_kernels.cu) */
	.reduce_scatter = pn_cuda_reduce_scatter,
	.alltoall = pn_cuda_alltoall,
	.broadcast = pn_cuda_broadcast,
	.reduce = pn_cuda_reduce,
	.sendrecv = pn_cuda_sendrecv,
	/* appended for the NCCL interposer's ncclAllGather */
	.allgather_stream = pn_cuda_allgather_stream,
	/* appended for the other collectives across nodes (xn_kernels.cu) */
	.xnode_coll = pn_cuda_xnode_coll,
};
