/* SPDX-License-Identifier: MIT */
/* Device primitives of pn_dev.cuh for the CPU emulator (emu.h). */
#ifndef PENNY_EMU_DEV_H
#define PENNY_EMU_DEV_H

PN_DEV unsigned pn_tid(void) { return emu.cur->tid; }
PN_DEV unsigned pn_ntid(void) { return emu.cur->ntid; }
PN_DEV unsigned pn_bid(void) { return emu.cur->bid; }
PN_DEV unsigned pn_nbid(void) { return emu.cur->nbid; }

PN_DEV int pn_sync_or(int p)
{
	emu_block *b = emu.cur->blk;
	unsigned g = b->gen;

	b->or_acc |= p;
	if (++b->arrived == b->nthreads) {
		b->arrived = 0;
		b->or_result = b->or_acc;
		b->or_acc = 0;
		b->gen++;
		emu_yield();
	} else {
		while (b->gen == g)
			emu_yield();
	}
	return b->or_result;
}

PN_DEV void pn_sync(void) { (void)pn_sync_or(0); }

/* Shared memory: the block's own bytes, handed out in the order every thread
 * of the block declares its variables, so each gets the same place. */
PN_DEV void *emu_smem(size_t bytes)
{
	emu_fiber *f = emu.cur;
	size_t off = (f->smem_off + 15) & ~(size_t)15;

	if (off + bytes > sizeof(f->blk->smem))
		abort(); /* a kernel wants more than the emulator's block has */
	f->smem_off = off + bytes;
	return f->blk->smem + off;
}
#define PN_SHARED(T, name) T &name = *(T *)emu_smem(sizeof(T))
#define PN_SHARED_ARRAY(T, name, n) T *name = (T *)emu_smem(sizeof(T) * (n))
PN_DEV void pn_pause(void) { emu_yield(); }
/* the emulator runs one kernel at a time: stream order holds already */
PN_DEV void pn_pdl_wait(void) {}
PN_DEV void pn_pdl_trigger(void) {}

PN_DEV void pn_maybe_yield(void)
{
	if (emu.yield_every && emu_rand() % emu.yield_every == 0)
		emu_yield();
}

PN_DEV uint32_t pn_ld_acquire(const uint32_t *p) { return *(const volatile uint32_t *)p; }
PN_DEV void pn_st_release(uint32_t *p, uint32_t v) { *(volatile uint32_t *)p = v; }
PN_DEV uint64_t pn_ld_volatile_u64(const uint64_t *p) { return *(const volatile uint64_t *)p; }
PN_DEV void pn_st_volatile_u64(uint64_t *p, uint64_t v) { *(volatile uint64_t *)p = v; }
PN_DEV uint64_t pn_clock_ns(void) { return emu.clock_ns; }

PN_DEV void pn_ll_store(void *p, uint32_t lo, uint32_t hi, uint32_t flag)
{
	uint32_t v[4] = { lo, flag, hi, flag };

	memcpy(p, v, 16);
}

PN_DEV pn_v4 pn_ll_load(const void *p)
{
	pn_v4 v;

	memcpy(&v, p, 16);
	return v;
}

/* A GPU faults on a 16-byte access that is not 16-byte aligned: so does the emulator. */
static inline void emu_aligned16(const void *p)
{
	if ((uintptr_t)p & 15) {
		fprintf(stderr, "emu: 16-byte access at %p, not 16-byte aligned\n", p);
		abort();
	}
}

PN_DEV pn_v4 pn_ld_cg(const void *p)
{
	pn_v4 v;

	emu_aligned16(p);
	memcpy(&v, p, 16);
	return v;
}

PN_DEV pn_v4 pn_ld(const void *p)
{
	pn_v4 v;

	emu_aligned16(p);
	memcpy(&v, p, 16);
	return v;
}

PN_DEV void pn_st(void *p, pn_v4 v)
{
	emu_aligned16(p);
	memcpy(p, &v, 16);
}
PN_DEV void pn_ld_cg_elem(void *dst, const void *p, int bytes) { memcpy(dst, p, bytes); }
PN_DEV void pn_fence(void) {}
PN_DEV void pn_fence_sys(void) {}

PN_DEV float pn_bf16_f(uint16_t h) { return penny_bf16_to_f32(h); }
PN_DEV uint16_t pn_f_bf16(float f) { return penny_f32_to_bf16(f); }
PN_DEV float pn_half_f(uint16_t h) { return penny_half_to_f32(h); }
PN_DEV uint16_t pn_f_half(float f) { return penny_f32_to_half(f); }

PN_DEV uint32_t pn_atomic_add(uint32_t *p, uint32_t v)
{
	uint32_t o = *p;

	*p = o + v;
	return o;
}

PN_DEV void pn_atomic_or(uint32_t *p, uint32_t v) { *p |= v; }
PN_DEV void pn_atomic_add64(unsigned long long *p, unsigned long long v) { *p += v; }

PN_DEV void pn_atomic_min64(unsigned long long *p, unsigned long long v)
{
	if (v < *p)
		*p = v;
}

#endif
