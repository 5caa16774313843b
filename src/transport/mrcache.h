/* SPDX-License-Identifier: MIT */
/*
 * Memory registration cache: (pointer, length) -> registration handle.
 * A request is served by any cached registration that covers it (a hit);
 * otherwise the page-aligned range is registered through the callback (a
 * miss).  Entries in use (get without put) are never evicted; the least
 * recently used idle entry goes when the cache is full.  Independent of
 * libibverbs so it is unit-tested without a device.
 *
 * Memory that is freed must be invalidated first (pn_mrcache_invalidate):
 * a registration pins the old pages, and a new allocation at the same
 * address would otherwise hit a stale entry.
 */
#ifndef PENNY_MRCACHE_H
#define PENNY_MRCACHE_H

#include <stddef.h>
#include <stdint.h>

struct pn_mrcache_ent {
	uintptr_t addr;		/* registered range (page aligned) */
	size_t len;
	void *handle;		/* what reg() returned */
	int refs;
	int pinned;		/* inserted: never evicted, only invalidated */
	uint64_t used;		/* LRU tick */
};

struct pn_mrcache {
	struct pn_mrcache_ent *ents;
	int n, cap, max;
	size_t page;
	uint64_t tick;
	uint64_t hits, misses, evictions;
	/* register [addr, addr+len); returns 0 and *handle, or -errno */
	int (*reg)(void *ctx, void *addr, size_t len, void **handle);
	void (*dereg)(void *ctx, void *handle);
	void *ctx;
};

void pn_mrcache_init(struct pn_mrcache *c, int max,
		     int (*reg)(void *ctx, void *addr, size_t len, void **handle),
		     void (*dereg)(void *ctx, void *handle), void *ctx);
/* Deregisters everything (entries still in use too). */
void pn_mrcache_release(struct pn_mrcache *c);
/*
 * Handle covering [addr, addr+len), registering it on a miss; the entry is
 * held until pn_mrcache_put.  Returns 0, or -errno (-ENOSPC: every entry
 * is in use and the cache is full).
 */
int pn_mrcache_get(struct pn_mrcache *c, const void *addr, size_t len, void **handle);
void pn_mrcache_put(struct pn_mrcache *c, void *handle);
/* Release the hold of the entry that covers [addr, addr+len); 0 or -ENOENT. */
int pn_mrcache_put_range(struct pn_mrcache *c, const void *addr, size_t len);
/*
 * Enter a registration made elsewhere (dma-buf) for [addr, addr+len), held
 * until invalidated; overlapping idle entries are dropped.  0 or -errno.
 */
int pn_mrcache_insert(struct pn_mrcache *c, const void *addr, size_t len, void *handle);
/* Drop idle entries overlapping [addr, addr+len); returns how many, or -EBUSY when one is held. */
int pn_mrcache_invalidate(struct pn_mrcache *c, const void *addr, size_t len);

#endif
