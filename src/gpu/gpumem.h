/* SPDX-License-Identifier: MIT */
/*
 * GPU memory for RDMA (GPUDirect RDMA through dma-buf): a buffer allocated
 * by a GPU plugin on one device, exported as a dma-buf and registered with
 * ibv_reg_dmabuf_mr on RDMA devices, so verbs operations on its pointers
 * move data between the NIC and GPU memory without the host (perftest's
 * --use_cuda).  One process, no collective: the plugin sees a job of one.
 *
 *	struct pn_gpumem *m;
 *	pn_gpumem_open(&m, "cuda", 0, len);      (plugin, device, bytes)
 *	pn_gpumem_register(m, verbs_dev);        (every device that uses it)
 *	... verbs operations on pn_gpumem_ptr(m) ...
 *	pn_verbs_invalidate(verbs_dev, ptr, len); pn_gpumem_close(m);
 */
#ifndef PENNY_GPUMEM_H
#define PENNY_GPUMEM_H

#include <stddef.h>
#include <stdint.h>

struct pn_gpumem;
struct pn_verbs_dev;

int pn_gpumem_open(struct pn_gpumem **m, const char *plugin, int device, size_t bytes);
void pn_gpumem_close(struct pn_gpumem *m);
void *pn_gpumem_ptr(const struct pn_gpumem *m);
size_t pn_gpumem_bytes(const struct pn_gpumem *m);
/* The plugin's one-line description of the device. */
const char *pn_gpumem_describe(const struct pn_gpumem *m);
/* Register the whole buffer with d (gpumem_verbs.c: needs the verbs layer). */
int pn_gpumem_register(struct pn_gpumem *m, struct pn_verbs_dev *d);
/* The export alone: a dma-buf fd (the caller closes it) and the buffer's
 * offset in it. */
int pn_gpumem_export(struct pn_gpumem *m, int *fd, uint64_t *offset);

#endif
