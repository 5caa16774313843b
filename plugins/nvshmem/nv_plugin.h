/* SPDX-License-Identifier: MIT */
/* The nvshmem plugin's entry points (nv_plugin.c), exported by nv_entry.c. */
#ifndef PENNY_NV_PLUGIN_H
#define PENNY_NV_PLUGIN_H

#include "../common/gpu.h"

/* data_image: the fill/check kernels' fatbin; image: the allreduce cubin
 * linked against libnvshmem_device (NULL: not built); cu_images: the cuda
 * plugin's allreduce kernels by enum pn_kern, "ce" the copy-engine
 * allreduce's (NULL, or a NULL image: those calls run the nvshmem kernels). */
int pn_nv_init(const void *data_image, const void *image, const void *const *cu_images,
	       const struct penny_host_v1 *host, int device, void **be);
void pn_nv_fini(void *be);
const char *pn_nv_describe(void *be);
int pn_nv_alloc(void *be, size_t bytes, unsigned flags, void **ptr);
int pn_nv_free(void *be, void *ptr);
int pn_nv_allreduce(void *be, const void *send, void *recv, size_t count, int dtype, int op,
		    int algo);
int pn_nv_allreduce_stream(void *be, const void *send, void *recv, size_t count, int dtype,
			   int op, int algo, void *stream);
int pn_nv_select(void *be, size_t count, int dtype, int op, int algo);
int pn_nv_set_rings(void *be, const int32_t *order, int nrings);

#endif
