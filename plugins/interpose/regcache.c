/* SPDX-License-Identifier: MIT */
/*
 * The interposer's registration cache (man/penny-nccl.7, REGISTRATION
 * CACHE): the caller's receive buffers' allocations registered with the
 * plugin once, per communicator, so that two-shot and ring allreduces store
 * into the peers' buffers without the staging copy.
 */
#include "interpose.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The calls that used e's registration are done; then it goes. */
static void rc_drop(struct pcomm *p, struct rc_entry *e, int sync)
{
	if (e->reg) {
		if (sync)
			wait_last(p);
		P->dereg_buffer(p->be, e->reg);
	}
	*e = p->rc[--p->rc_n];
}

/*
 * This rank's registration of the allocation [base, + bytes) with buffer
 * id bufid, or NULL.  Entries at the same address for another size or
 * buffer id are of freed allocations: they go.
 */
static struct rc_entry *rc_find(struct pcomm *p, CUdeviceptr base, size_t bytes,
				unsigned long long bufid)
{
	int i;

	for (i = 0; i < p->rc_n; i++) {
		struct rc_entry *e = &p->rc[i];

		if (e->base != base)
			continue;
		if (e->bytes == bytes && e->bufid == bufid)
			return e;
		rc_drop(p, e, 1);
		i--;
	}
	return NULL;
}

/* A free entry: the least recently used one goes when the cache is full. */
static struct rc_entry *rc_slot(struct pcomm *p)
{
	struct rc_entry *old = p->rc;
	int i;

	if (p->rc_n == cfg.regcache) {
		for (i = 1; i < p->rc_n; i++)
			if (p->rc[i].tick < old->tick)
				old = &p->rc[i];
		rc_drop(p, old, 1);
		p->rc_evicted++;
	}
	return &p->rc[p->rc_n++];
}

/* What every rank says about its recv before a call that wants it registered. */
struct regsay {
	uint32_t gen;		/* its registration of recv's allocation (0: none) */
	int32_t ok;		/* recv's allocation known and registrable */
	uint64_t off;		/* recv's offset in it */
};

/*
 * An allreduce whose kernel stores into the peers' recv: registered (no
 * staging copy) when every rank has its recv's allocation registered under
 * the same registration at the same offset; registered now, collectively,
 * when every rank's recv is at the same offset in an allocation but some
 * rank lacks the registration; staged otherwise.  The ranks decide
 * together on what they all said (one small allgather on the host
 * services), so that a rank whose buffer is cached and one whose buffer is
 * new never take different paths.  Not during a graph capture (no host
 * collective there): the caller stages those.
 */
int reg_allreduce(struct pcomm *p, const void *s, void *r, size_t count, int pdt, int pop,
			 cudaStream_t st)
{
	const struct pn_cudrv *cu = p->cu;
	struct regsay mine = { 0, 0, 0 }, *all;
	CUdeviceptr base = 0;
	size_t bytes = 0;
	unsigned long long bufid = 0;
	struct rc_entry *e = NULL;
	void *h = NULL;
	int q, ret, agreed = 1, same = 1;

	p->rc_tick++;
	if (!p->rc)
		p->rc = calloc((size_t)cfg.regcache, sizeof(*p->rc));
	if (p->rc && !cu->MemGetAddressRange(&base, &bytes, (CUdeviceptr)(uintptr_t)r) && base) {
		if (cu->PointerGetAttribute)
			cu->PointerGetAttribute(&bufid, CU_POINTER_ATTRIBUTE_BUFFER_ID, base);
		e = rc_find(p, base, bytes, bufid);
		mine.ok = !e || e->reg;	/* known unregistrable: staged */
		mine.gen = e ? e->gen : 0;
		mine.off = (CUdeviceptr)(uintptr_t)r - base;
	}
	all = calloc((size_t)p->n, sizeof(*all));
	ret = all ? hs_allgather(p, &mine, all, sizeof(mine)) : -ENOMEM;
	if (ret)
		goto broken;
	for (q = 0; q < p->n; q++) {
		agreed &= all[q].ok && all[q].off == mine.off;
		same &= all[q].gen == mine.gen;
	}
	if (!agreed) {
		p->rc_staged++;
		free(all);
		return P->allreduce_reg(p->be, NULL, s, r, count, pdt, pop, PENNY_ALGO_AUTO, st);
	}
	if (!same || !mine.gen) {
		/* every rank registers its allocation anew, under the same number */
		p->rc_misses++;
		if (e)
			rc_drop(p, e, 1);
		e = rc_slot(p);
		e->base = base;
		e->bytes = bytes;
		e->bufid = bufid;
		e->gen = ++p->rc_gen;
		ret = P->reg_buffer(p->be, (void *)(uintptr_t)base, bytes, &h);
		if (ret && debug_on)
			say("rank %d: cannot register %zu bytes at %#llx: %s", p->rank, bytes,
			    (unsigned long long)base, P->errmsg());
		mine.ok = !ret;
		ret = hs_allgather(p, &mine, all, sizeof(mine));
		if (ret) {
			if (h)
				P->dereg_buffer(p->be, h);
			rc_drop(p, e, 0);
			goto broken;
		}
		for (q = 0; q < p->n && all[q].ok; q++)
			;
		if (q < p->n && h) {
			P->dereg_buffer(p->be, h);
			h = NULL;
		}
		e->reg = h; /* NULL: known unregistrable (on some rank): staged */
	} else {
		p->rc_hits++;
	}
	e->tick = p->rc_tick;
	free(all);
	if (!e->reg)
		p->rc_staged++;
	return P->allreduce_reg(p->be, e->reg, s, r, count, pdt, pop, PENNY_ALGO_AUTO, st);
broken:
	set_err(p, p->hs_res != ncclSuccess ? p->hs_res : errno_result(ret),
		"penny's buffer agreement on NCCL's communicator failed: %s",
		p->hs_why[0] ? p->hs_why : strerror(-ret));
	free(all);
	return ret;
}

/* Every registration goes (the backend's last call is done). */
void rc_clear(struct pcomm *p)
{
	if (debug_on && p->rc_tick)
		say("rank %d: registration cache: %" PRIu64 " hits, %" PRIu64 " misses, %" PRIu64
		    " evicted, %" PRIu64 " staged", p->rank, p->rc_hits, p->rc_misses, p->rc_evicted,
		    p->rc_staged);
	while (p->rc_n)
		rc_drop(p, &p->rc[0], 0);
	free(p->rc);
	p->rc = NULL;
}
