/* SPDX-License-Identifier: MIT */
/* The nvshmem plugin's exported table (penny_plugin_v1) and embedded kernels. */
#include "nv_plugin.h"
#include "../common/gpu.h"
#include "../cuda/cuda.h"

extern const unsigned char pn_image_data[];
extern const unsigned char pn_image_nvshmem[];
extern const unsigned char pn_image_oneshot[], pn_image_oneshot_fl[], pn_image_twoshot_ll[],
	pn_image_twoshot[], pn_image_ring[], pn_image_twoshot_hy[], pn_image_ce[];

_Static_assert(PN_NKERNS == 7, "one image a kernel of the cuda plugin");

static int init(const struct penny_host_v1 *host, int device, void **be)
{
	/* the cuda plugin's kernels, by enum pn_kern */
	static const void *const cu_images[PN_NKERNS] = {
		pn_image_oneshot, pn_image_oneshot_fl, pn_image_twoshot_ll, pn_image_twoshot,
		pn_image_ring,	  pn_image_twoshot_hy, pn_image_ce,
	};

	pn_plugin_clear_error();
	return pn_nv_init(pn_image_data, pn_image_nvshmem, cu_images, host, device, be);
}

__attribute__((visibility("default"))) const struct penny_plugin_v1 penny_plugin_v1 = {
	PN_GPU_ENTRY_COMMON,
	.name = "nvshmem",
	.version = "penny nvshmem plugin 1 (NVSHMEM put-with-signal: one-shot, two-shot, ring, "
		   "simple ring; NVLink within a node, IBGDA across nodes)",
	.algos = (1u << PENNY_ALGO_AUTO) | (1u << PENNY_ALGO_ONESHOT) | (1u << PENNY_ALGO_TWOSHOT) |
		 (1u << PENNY_ALGO_RING) | (1u << PENNY_ALGO_SIMPLE_RING),
	/* NVSHMEM reaches every PE itself: no proxy around it across nodes */
	.caps = PENNY_CAP_GRAPH | PENNY_CAP_MULTINODE,
	.init = init,
	.fini = pn_nv_fini,
	.describe = pn_nv_describe,
	.alloc = pn_nv_alloc,
	.free = pn_nv_free,
	.allreduce = pn_nv_allreduce,
	.select = pn_nv_select,
	.time_fn = pn_gpu_be_time_fn,
	.allreduce_stream = pn_nv_allreduce_stream,
	.set_rings = pn_nv_set_rings,
};
