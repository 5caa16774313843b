/* SPDX-License-Identifier: MIT */
/* GPU memory for RDMA through a plugin's dma-buf export (see gpumem.h). */
#include "gpu/gpumem.h"

#include "base/log.h"
#include "gpu/plugin.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct pn_gpumem {
	struct pn_plugin *pl;
	struct penny_host_v1 host;
	void *be;
	void *ptr;
	size_t bytes;
};

/* A job of one: the allgather hands back what it was given. */
static int solo_allgather(void *ctx, const void *mine, void *all, size_t len)
{
	(void)ctx;
	memcpy(all, mine, len);
	return 0;
}

static int solo_barrier(void *ctx)
{
	(void)ctx;
	return 0;
}

int pn_gpumem_open(struct pn_gpumem **out, const char *plugin, int device, size_t bytes)
{
	struct pn_gpumem *m = calloc(1, sizeof(*m));
	int ret;

	*out = NULL;
	if (!m)
		return pn_err(-ENOMEM, "out of memory");
	ret = pn_plugin_load(plugin, &m->pl);
	if (ret)
		goto err;
	if (!pn_plugin_covers(m->pl, offsetof(struct penny_plugin_v1, export_dmabuf)) ||
	    !m->pl->ops->export_dmabuf) {
		ret = pn_err(-EOPNOTSUPP, "the %s plugin (%s) cannot export GPU memory as a dma-buf",
			     m->pl->name, m->pl->path);
		goto err;
	}
	m->host = (struct penny_host_v1){ .size = sizeof(m->host), .rank = 0, .nranks = 1,
					   .local_rank = 0, .local_size = 1, .node = 0,
					   .nnodes = 1, .ctx = m, .allgather = solo_allgather,
					   .barrier = solo_barrier };
	ret = m->pl->ops->init(&m->host, device, &m->be);
	if (ret) {
		m->be = NULL;
		ret = pn_plugin_err(m->pl, ret, "init");
		goto err;
	}
	ret = m->pl->ops->alloc(m->be, bytes, 0, &m->ptr);
	if (ret) {
		m->ptr = NULL;
		ret = pn_plugin_err(m->pl, ret, "alloc");
		goto err;
	}
	m->bytes = bytes;
	*out = m;
	return 0;
err:
	pn_gpumem_close(m);
	return ret;
}

void pn_gpumem_close(struct pn_gpumem *m)
{
	if (!m)
		return;
	if (m->ptr)
		m->pl->ops->free(m->be, m->ptr);
	if (m->be)
		m->pl->ops->fini(m->be);
	if (m->pl)
		pn_plugin_unload(m->pl);
	free(m);
}

void *pn_gpumem_ptr(const struct pn_gpumem *m)
{
	return m->ptr;
}

size_t pn_gpumem_bytes(const struct pn_gpumem *m)
{
	return m->bytes;
}

const char *pn_gpumem_describe(const struct pn_gpumem *m)
{
	return m->pl->ops->describe ? m->pl->ops->describe(m->be) : m->pl->name;
}

int pn_gpumem_export(struct pn_gpumem *m, int *fd, uint64_t *offset)
{
	int ret = m->pl->ops->export_dmabuf(m->be, m->ptr, m->bytes, fd, offset);

	return ret ? pn_plugin_err(m->pl, ret, "dma-buf export") : 0;
}
