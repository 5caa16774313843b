/* SPDX-License-Identifier: MIT */
/* The memory registration cache (src/transport/mrcache.c), with a fake
 * registration callback instead of ibv_reg_mr. */
#include "unit.h"
#include "transport/mrcache.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

struct fake {
	int regs, deregs, fail;
	uintptr_t last_addr;
	size_t last_len;
	int next;
	int live[64];
};

static int fake_reg(void *ctx, void *addr, size_t len, void **h)
{
	struct fake *f = ctx;

	if (f->fail)
		return -EFAULT;
	f->regs++;
	f->last_addr = (uintptr_t)addr;
	f->last_len = len;
	f->live[f->next] = 1;
	*h = (void *)(uintptr_t)(0x1000 + f->next++);
	return 0;
}

static void fake_dereg(void *ctx, void *h)
{
	struct fake *f = ctx;

	f->deregs++;
	f->live[(uintptr_t)h - 0x1000] = 0;
}

static char *arena(void)
{
	static char *a;

	if (!a)
		a = aligned_alloc(4096, 64 * 4096);
	return a;
}

TEST(hit_after_miss_same_and_sub_range)
{
	struct fake f = { 0 };
	struct pn_mrcache c;
	void *h1, *h2, *h3;
	char *a = arena();

	pn_mrcache_init(&c, 8, fake_reg, fake_dereg, &f);
	CHECK_EQ_INT(pn_mrcache_get(&c, a + 100, 200, &h1), 0);
	CHECK_EQ_INT(c.misses, 1);
	CHECK_EQ_INT(c.hits, 0);
	/* registered page aligned */
	CHECK(f.last_addr == (uintptr_t)a);
	CHECK_EQ_INT(f.last_len, 4096);
	CHECK_EQ_INT(pn_mrcache_get(&c, a + 100, 200, &h2), 0);
	CHECK(h1 == h2);
	CHECK_EQ_INT(pn_mrcache_get(&c, a + 3000, 1000, &h3), 0); /* same page */
	CHECK(h1 == h3);
	CHECK_EQ_INT(c.hits, 2);
	CHECK_EQ_INT(c.misses, 1);
	CHECK_EQ_INT(f.regs, 1);
	pn_mrcache_put(&c, h1);
	pn_mrcache_put(&c, h2);
	pn_mrcache_put(&c, h3);
	pn_mrcache_release(&c);
	CHECK_EQ_INT(f.deregs, 1);
}

TEST(miss_outside_and_across_a_registration)
{
	struct fake f = { 0 };
	struct pn_mrcache c;
	void *h1, *h2, *h3;
	char *a = arena();

	pn_mrcache_init(&c, 8, fake_reg, fake_dereg, &f);
	CHECK_EQ_INT(pn_mrcache_get(&c, a, 4096, &h1), 0);
	CHECK_EQ_INT(pn_mrcache_get(&c, a + 4096, 10, &h2), 0); /* next page */
	CHECK(h1 != h2);
	CHECK_EQ_INT(pn_mrcache_get(&c, a + 4000, 200, &h3), 0); /* spans both */
	CHECK(h3 != h1 && h3 != h2);
	CHECK_EQ_INT(f.last_len, 8192);
	CHECK_EQ_INT(c.misses, 3);
	CHECK_EQ_INT(c.hits, 0);
	/* now anything inside the two pages hits the spanning one or the others */
	CHECK_EQ_INT(pn_mrcache_get(&c, a + 10, 8000, &h1), 0);
	CHECK(h1 == h3);
	CHECK_EQ_INT(c.hits, 1);
	pn_mrcache_release(&c);
	CHECK_EQ_INT(f.deregs, 3);
}

TEST(lru_eviction_spares_held_entries)
{
	struct fake f = { 0 };
	struct pn_mrcache c;
	void *h0, *h1, *h2, *h;
	char *a = arena();

	pn_mrcache_init(&c, 2, fake_reg, fake_dereg, &f);
	CHECK_EQ_INT(pn_mrcache_get(&c, a, 1, &h0), 0);
	CHECK_EQ_INT(pn_mrcache_get(&c, a + 4096, 1, &h1), 0);
	pn_mrcache_put(&c, h0);
	pn_mrcache_put(&c, h1);
	/* touch h0 so h1 is the least recently used */
	CHECK_EQ_INT(pn_mrcache_get(&c, a, 1, &h), 0);
	pn_mrcache_put(&c, h);
	CHECK_EQ_INT(pn_mrcache_get(&c, a + 8192, 1, &h2), 0);
	CHECK_EQ_INT(c.evictions, 1);
	CHECK_EQ_INT(f.live[1], 0); /* h1 went */
	CHECK_EQ_INT(f.live[0], 1);
	/* h2 held, h0 idle: a fourth range evicts h0 */
	CHECK_EQ_INT(pn_mrcache_get(&c, a + 12288, 1, &h), 0);
	CHECK_EQ_INT(f.live[0], 0);
	CHECK_EQ_INT(f.live[2], 1);
	/* both held now: full */
	CHECK_EQ_INT(pn_mrcache_get(&c, a + 16384, 1, &h), -ENOSPC);
	pn_mrcache_release(&c);
	CHECK_EQ_INT(f.regs, f.deregs);
}

TEST(invalidate_refuses_held_then_drops)
{
	struct fake f = { 0 };
	struct pn_mrcache c;
	void *h;
	char *a = arena();

	pn_mrcache_init(&c, 8, fake_reg, fake_dereg, &f);
	CHECK_EQ_INT(pn_mrcache_get(&c, a, 100, &h), 0);
	CHECK_EQ_INT(pn_mrcache_invalidate(&c, a, 100), -EBUSY);
	CHECK_EQ_INT(pn_mrcache_put_range(&c, a + 50, 10), 0);
	CHECK_EQ_INT(pn_mrcache_put_range(&c, a + 50, 10), -ENOENT); /* no hold left */
	CHECK_EQ_INT(pn_mrcache_invalidate(&c, a + 4095, 1), 1);
	CHECK_EQ_INT(f.deregs, 1);
	CHECK_EQ_INT(pn_mrcache_get(&c, a, 100, &h), 0);
	CHECK_EQ_INT(c.misses, 2);
	pn_mrcache_put(&c, h);
	CHECK_EQ_INT(pn_mrcache_invalidate(&c, a + 4096, 10), 0); /* not overlapping */
	pn_mrcache_release(&c);
}

TEST(registration_failure_adds_nothing)
{
	struct fake f = { .fail = 1 };
	struct pn_mrcache c;
	void *h = NULL;
	char *a = arena();

	pn_mrcache_init(&c, 8, fake_reg, fake_dereg, &f);
	CHECK_EQ_INT(pn_mrcache_get(&c, a, 100, &h), -EFAULT);
	CHECK_EQ_INT(c.n, 0);
	CHECK_EQ_INT(c.misses, 0);
	f.fail = 0;
	CHECK_EQ_INT(pn_mrcache_get(&c, a, 100, &h), 0);
	CHECK_EQ_INT(c.n, 1);
	pn_mrcache_release(&c);
}

TEST(inserted_entries_are_pinned_until_invalidated)
{
	struct fake f = { 0 };
	struct pn_mrcache c;
	void *h;
	uintptr_t gpu = (uintptr_t)0x7f0000000000ull;

	pn_mrcache_init(&c, 2, fake_reg, fake_dereg, &f);
	CHECK_EQ_INT(pn_mrcache_insert(&c, (void *)gpu, 1 << 20, (void *)(uintptr_t)0x1005), 0);
	f.live[5] = 1;
	CHECK_EQ_INT(pn_mrcache_get(&c, (void *)(gpu + 4096), 8192, &h), 0);
	CHECK(h == (void *)(uintptr_t)0x1005);
	CHECK_EQ_INT(c.hits, 1);
	pn_mrcache_put(&c, h);
	/* pressure: the pinned entry stays */
	CHECK_EQ_INT(pn_mrcache_get(&c, arena(), 1, &h), 0);
	pn_mrcache_put(&c, h);
	CHECK_EQ_INT(pn_mrcache_get(&c, arena() + 4096, 1, &h), 0);
	pn_mrcache_put(&c, h);
	CHECK_EQ_INT(f.live[5], 1);
	CHECK_EQ_INT(pn_mrcache_invalidate(&c, (void *)gpu, 1 << 20), 1);
	CHECK_EQ_INT(f.live[5], 0);
	pn_mrcache_release(&c);
}

int main(void)
{
	RUN(hit_after_miss_same_and_sub_range);
	RUN(miss_outside_and_across_a_registration);
	RUN(lru_eviction_spares_held_entries);
	RUN(invalidate_refuses_held_then_drops);
	RUN(registration_failure_adds_nothing);
	RUN(inserted_entries_are_pinned_until_invalidated);
	free(arena());
	return unit_done();
}
