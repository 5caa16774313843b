/* SPDX-License-Identifier: MIT */
/*
 * GPU memory registered with a verbs device through its dma-buf (see
 * gpumem.h).  A file of its own so that what uses only the plugin side of
 * gpumem (the GPU bench driver) links without the verbs layer.
 */
#include "gpu/gpumem.h"

#include "transport/verbs.h"

#include <unistd.h>

int pn_gpumem_register(struct pn_gpumem *m, struct pn_verbs_dev *d)
{
	uint64_t off = 0;
	int fd = -1, ret;

	ret = pn_gpumem_export(m, &fd, &off);
	if (ret)
		return ret;
	/* the MR holds its own reference to the dma-buf */
	ret = pn_verbs_reg_dmabuf(d, fd, off, pn_gpumem_bytes(m),
				  (uint64_t)(uintptr_t)pn_gpumem_ptr(m));
	close(fd);
	return ret;
}
