/* SPDX-License-Identifier: MIT */
/* The nccl plugin's exported table (penny_plugin_v1). */
#include "nccl.h"
#include "../common/gpu.h"

/* The data kernels (fill/check) are linked in when the build had nvcc;
 * without them fill and check run on the host. */
extern const unsigned char pn_image_data[] __attribute__((weak));

static int init(const struct penny_host_v1 *host, int device, void **be)
{
	pn_plugin_clear_error();
	return pn_nccl_init(pn_image_data, host, device, be);
}

__attribute__((visibility("default"))) const struct penny_plugin_v1 penny_plugin_v1 = {
	PN_GPU_ENTRY_COMMON,
	.name = "nccl",
	.version = "penny nccl plugin 1 (NCCL opened at run time)",
	.algos = (1u << PENNY_ALGO_AUTO) | (1u << PENNY_ALGO_SYMMETRIC),
	.caps = PENNY_CAP_GRAPH | PENNY_CAP_MULTINODE,
	.init = init,
	.fini = pn_nccl_fini,
	.describe = pn_nccl_describe,
	.alloc = pn_nccl_alloc,
	.free = pn_nccl_free,
	.allreduce = pn_nccl_allreduce,
	.select = pn_nccl_select,
	.bw = NULL, /* penny bw --gpu uses the cuda plugin */
	.allgather = pn_nccl_allgather,
	.time_fn = pn_gpu_be_time_fn,
	/* appended for penny check's versions row */
	.driver_version = pn_gpu_entry_driver_version,
	/* appended for coll-test's other collectives */
	.reduce_scatter = pn_nccl_reduce_scatter,
	.alltoall = pn_nccl_alltoall,
	.broadcast = pn_nccl_broadcast,
	.reduce = pn_nccl_reduce,
	.sendrecv = pn_nccl_sendrecv,
};
