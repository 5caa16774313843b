/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
#include "transport/mrcache.h"
#include "base/log.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void pn_mrcache_init(struct pn_mrcache *c, int max,
		     int (*reg)(void *ctx, void *addr, size_t len, void **handle),
		     void (*dereg)(void *ctx, void *handle), void *ctx)
{
	long pg = sysconf(_SC_PAGESIZE);

	memset(c, 0, sizeof(*c));
	c->max = max > 0 ? max : 1024;
	c->page = pg > 0 ? (size_t)pg : 4096;
	c->reg = reg;
	c->dereg = dereg;
	c->ctx = ctx;
}

void pn_mrcache_release(struct pn_mrcache *c)
{
	int i;

	for (i = 0; i < c->n; i++)
		c->dereg(c->ctx, c->ents[i].handle);
	free(c->ents);
	c->ents = NULL;
	c->n = c->cap = 0;
}

static void drop(struct pn_mrcache *c, int i)
{
	c->dereg(c->ctx, c->ents[i].handle);
	c->ents[i] = c->ents[--c->n];
}

static int grow(struct pn_mrcache *c)
{
	int cap;
	struct pn_mrcache_ent *ne;

	if (c->n < c->cap)
		return 0;
	cap = c->cap ? 2 * c->cap : 16;
	ne = realloc(c->ents, (size_t)cap * sizeof(*ne));
	if (!ne)
		return pn_err(-ENOMEM, "out of memory");
	c->ents = ne;
	c->cap = cap;
	return 0;
}

/* Room for one more entry: evict the least recently used idle one if full. */
static int make_room(struct pn_mrcache *c)
{
	int i, lru = -1;

	if (c->n >= c->max) {
		for (i = 0; i < c->n; i++)
			if (!c->ents[i].refs && !c->ents[i].pinned &&
			    (lru < 0 || c->ents[i].used < c->ents[lru].used))
				lru = i;
		if (lru < 0)
			return pn_err(-ENOSPC, "registration cache full: %d registrations in use",
				      c->n);
		drop(c, lru);
		c->evictions++;
	}
	return grow(c);
}

int pn_mrcache_get(struct pn_mrcache *c, const void *addr, size_t len, void **handle)
{
	uintptr_t a = (uintptr_t)addr, start, end;
	int i, ret;
	void *h;

	if (!len)
		len = 1;
	if (a + len < a)
		return pn_err(-EINVAL, "cannot register %zu bytes at %p: range wraps", len, addr);
	for (i = 0; i < c->n; i++) {
		struct pn_mrcache_ent *e = &c->ents[i];

		if (e->addr <= a && a + len <= e->addr + e->len) {
			e->refs++;
			e->used = ++c->tick;
			c->hits++;
			*handle = e->handle;
			return 0;
		}
	}
	ret = make_room(c);
	if (ret)
		return ret;
	start = a & ~(uintptr_t)(c->page - 1);
	end = (a + len + c->page - 1) & ~(uintptr_t)(c->page - 1);
	if (end < start) /* the last page of the address space */
		end = a + len;
	ret = c->reg(c->ctx, (void *)start, end - start, &h);
	if (ret)
		return ret;
	c->misses++;
	c->ents[c->n] = (struct pn_mrcache_ent){ .addr = start, .len = end - start,
						 .handle = h, .refs = 1, .used = ++c->tick };
	c->n++;
	*handle = h;
	return 0;
}

void pn_mrcache_put(struct pn_mrcache *c, void *handle)
{
	int i;

	for (i = 0; i < c->n; i++)
		if (c->ents[i].handle == handle) {
			if (c->ents[i].refs > 0)
				c->ents[i].refs--;
			return;
		}
}

int pn_mrcache_put_range(struct pn_mrcache *c, const void *addr, size_t len)
{
	uintptr_t a = (uintptr_t)addr;
	int i;

	if (!len)
		len = 1;
	for (i = 0; i < c->n; i++) {
		struct pn_mrcache_ent *e = &c->ents[i];

		if (e->refs && e->addr <= a && a + len <= e->addr + e->len) {
			e->refs--;
			return 0;
		}
	}
	return -ENOENT;
}

int pn_mrcache_insert(struct pn_mrcache *c, const void *addr, size_t len, void *handle)
{
	int ret = pn_mrcache_invalidate(c, addr, len);

	if (ret < 0)
		return ret;
	ret = make_room(c);
	if (ret)
		return ret;
	c->ents[c->n++] = (struct pn_mrcache_ent){ .addr = (uintptr_t)addr, .len = len,
						   .handle = handle, .pinned = 1,
						   .used = ++c->tick };
	return 0;
}

int pn_mrcache_invalidate(struct pn_mrcache *c, const void *addr, size_t len)
{
	uintptr_t a = (uintptr_t)addr;
	int i, n = 0;

	for (i = 0; i < c->n; i++) {
		struct pn_mrcache_ent *e = &c->ents[i];

		if (e->addr < a + len && a < e->addr + e->len && e->refs)
			return pn_err(-EBUSY, "cannot drop the registration at %p: in use",
				      (void *)e->addr);
	}
	for (i = 0; i < c->n;) {
		struct pn_mrcache_ent *e = &c->ents[i];

		if (e->addr < a + len && a < e->addr + e->len) {
			drop(c, i);
			n++;
		} else {
			i++;
		}
	}
	return n;
}
