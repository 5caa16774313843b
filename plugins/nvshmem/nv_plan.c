/* SPDX-License-Identifier: MIT */
/* The nvshmem plugin's host decisions (nv_plan.h). */
#include "nv_plan.h"
#include "../common/cudrv.h"
#include "../include/penny_plugin.h"
#include "../../src/base/units.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const pn_nv_kern_names[PN_NV_NKERNS] = { "oneshot", "twoshot", "ring", "simple",
							"oneshot_ll" };

/* A size of units.h ("64K", "8MiB", plain bytes) from min to max; def when unset. */
static int env_u64(const char *name, uint64_t def, uint64_t min, uint64_t max, uint64_t *out)
{
	const char *s = getenv(name);
	uint64_t v;

	*out = def;
	if (!s || !*s)
		return 0;
	if (pn_parse_size(s, &v) || v < min || v > max)
		return pn_plugin_fail(-EINVAL, "%s: '%s' is not a number from %" PRIu64 " to %" PRIu64,
				      name, s, min, max);
	*out = v;
	return 0;
}

/* A duration of units.h ("30", "2m") from 1 s to max_s, in ns; def_s when unset. */
static int env_ns(const char *name, double def_s, double max_s, uint64_t *out)
{
	const char *s = getenv(name);
	double d = def_s;

	if (s && *s && (pn_parse_seconds(s, &d) || d < 1 || d > max_s))
		return pn_plugin_fail(-EINVAL, "%s: '%s' is not a duration from 1 s to %g s", name, s,
				      max_s);
	*out = (uint64_t)(d * 1e9);
	return 0;
}

int pn_nv_read_cfg(struct pn_nv_cfg *cfg, int nranks, int nsm, double timeout_s)
{
	uint64_t v, slot_def;
	int ret = 0;

	memset(cfg, 0, sizeof(*cfg));
	if (nranks < 1 || nranks > PN_NV_MAX_PES)
		return pn_plugin_fail(-ENOTSUP, "the nvshmem backend handles 1 to %d PEs, not %d",
				      PN_NV_MAX_PES, nranks);
	cfg->nranks = nranks;
	/* the work area is 2 (n + 1) slots, at most 768 MiB by default (with the
	 * staging slot it stays under NVSHMEM's default 1 GiB heap).  A larger
	 * call is cut into launches of one slot, each paying the ring's pipeline
	 * fill: 2 x H200, 1 GiB ring, 314 GB/s busbw with 32 MiB slots, 342 with
	 * 128 MiB (results/2026-11-30-h200x2/s57-nvshmem-*). */
	slot_def = (768ull << 20) / (2ull * (uint64_t)(nranks + 1));
	slot_def = slot_def > (128ull << 20) ? 128ull << 20 : slot_def & ~(uint64_t)4095;
	/* 4 x H200: one-shot 15 us at 512 KiB on 4 ranks against two-shot's 22,
	 * 22 us at 4 MiB on 2 against 23-24 */
	ret |= env_u64("PENNY_NVSHMEM_ONESHOT_MAX", nranks <= 2 ? 4u << 20 : 1u << 20, 0,
		       1ull << 30, &cfg->oneshot_max);
	/* LL lines over NVLink where every peer is (4 x H200: the LL one-shot at
	 * 1 KiB 3.6 us against 7.8 for the plain one; the cuda plugin's limits) */
	ret |= env_u64("PENNY_NVSHMEM_LL_MAX", nranks <= 2 ? 512u << 10 : 128u << 10, 0, 1u << 20,
		       &cfg->ll_max);
	ret |= env_u64("PENNY_NVSHMEM_SIMPLE_MAX", 0, 0, 1ull << 30, &cfg->simple_max);
	ret |= env_u64("PENNY_NVSHMEM_TWOSHOT_MAX", 8u << 20, 0, 1ull << 40, &cfg->twoshot_max);
	/* copy engines above 32 MiB on 2 PEs: 2 x H200, graphs, busbw at 64 MiB
	 * 338 GB/s against the ring's 328, 128 MiB 363 against 342, 32 MiB
	 * 294 against 312, in results/2026-11-30-h200x2/s60-nvshmem-ring-vs-ce.txt
	 * (the cuda plugin's SM ring is faster and keeps them to 128 MiB); on
	 * more PEs not measured, the ring */
	ret |= env_u64("PENNY_NVSHMEM_RING_MAX", nranks <= 2 ? 32u << 20 : 1ull << 40, 0, 1ull << 40,
		       &cfg->ring_max);
	/* their slots on the symmetric heap, made at the first call auto gives
	 * them: 512 MiB carries 1 GiB in 2 pieces on 2 PEs */
	ret |= env_u64("PENNY_NVSHMEM_CE_BYTES", 512u << 20, 0, 16ull << 30, &cfg->ce_bytes);
	/* within one NVLink domain, above this size auto runs the cuda plugin's
	 * kernels on the symmetric heap (its table: LL and flag one-shots, ring,
	 * copy engines).  2 x H200, bfloat16, graphs, in one call: the nvshmem
	 * kernels took 1.21x the cuda plugin's time at 1 MiB and 0.85-0.90x its
	 * busbw at 4-32 MiB; with these kernels 1.00x (and 0.99-1.00x) from
	 * 1 MiB; below, its LL one-shot took 1.15-1.22x (1-256 KiB) where
	 * theirs takes 0.94-1.06x: every size by default
	 * (results/2026-11-30-h200x2/s61-nvshmem-cuda-kernels.txt) */
	ret |= env_u64("PENNY_NVSHMEM_CUDA_MIN", 0, 0, 1ull << 40, &cfg->cuda_min);
	ret |= env_u64("PENNY_NVSHMEM_SLOT", slot_def, 64u << 10, 1ull << 30, &cfg->slot);
	/* the ring's chunk: each is signalled on its own, so the next PE works on
	 * one while this one sends the next */
	ret |= env_u64("PENNY_NVSHMEM_CHUNK", 64u << 10, 4u << 10, 16u << 20, &cfg->chunk);
	/* every SM by default: a large call's bandwidth grows with the channels (4 x H100,
	 * 256 MiB: ring busbw 222 GB/s on 32 blocks, 285 on 132); small calls use few */
	ret |= env_u64("PENNY_NVSHMEM_BLOCKS",
		       nsm > 0 && nsm < PN_NV_MAX_BLOCKS ? (uint64_t)nsm : PN_NV_MAX_BLOCKS, 1,
		       PN_NV_MAX_BLOCKS, &v);
	cfg->blocks = (uint32_t)v;
	/* unset: the core's --timeout (timeout_s, at least 1 s), else 30 s */
	ret |= env_ns("PENNY_NVSHMEM_TIMEOUT", timeout_s > 0 ? (timeout_s < 1 ? 1 : timeout_s) : 30,
		      3600, &cfg->timeout_ns);
	/* a kernel's launch overlaps the previous kernel's end (it waits for it
	 * before touching memory): 4 x H200, 1 KiB in graphs, 0.7 us of the
	 * LL one-shot's 3.2 against the cuda plugin's 2.5 with it */
	ret |= env_u64("PENNY_NVSHMEM_PDL", 1, 0, 1, &v);
	cfg->pdl = (int)v;
	if (ret)
		return -EINVAL;
	if (nsm > 0 && cfg->blocks > (uint32_t)nsm)
		cfg->blocks = (uint32_t)nsm; /* every block resident: they wait on each other */
	cfg->slot &= ~(uint64_t)15;
	cfg->chunk &= ~(uint64_t)15;
	if (cfg->ll_max > cfg->slot)
		cfg->ll_max = cfg->slot;
	if (cfg->ce_bytes && cfg->ce_bytes < (1u << 20))
		return pn_plugin_fail(-EINVAL, "PENNY_NVSHMEM_CE_BYTES: 0 or 1 MiB..16 GiB, not %" PRIu64,
				      cfg->ce_bytes);
	return 0;
}

int pn_nv_kernel_for(const struct pn_nv_cfg *cfg, int algo, uint64_t bytes)
{
	int ll = cfg->ll_ok && cfg->nranks <= PN_NV_LL_MAX_PES && bytes <= cfg->ll_max;

	switch (algo) {
	case PENNY_ALGO_ONESHOT:
		return ll ? PN_NV_ONESHOT_LL : PN_NV_ONESHOT;
	case PENNY_ALGO_TWOSHOT:
		return PN_NV_TWOSHOT;
	case PENNY_ALGO_RING:
		return PN_NV_RING;
	case PENNY_ALGO_SIMPLE_RING:
		return PN_NV_SIMPLE;
	case PENNY_ALGO_AUTO:
		if (cfg->cuda_ok && bytes > cfg->cuda_min)
			return PN_NV_CUDA;
		if (ll)
			return PN_NV_ONESHOT_LL;
		if (bytes <= cfg->oneshot_max)
			return PN_NV_ONESHOT;
		if (bytes <= cfg->simple_max)
			return PN_NV_SIMPLE;
		if (bytes <= cfg->twoshot_max)
			return PN_NV_TWOSHOT;
		return cfg->ce_ok && bytes > cfg->ring_max ? PN_NV_CE : PN_NV_RING;
	default:
		return pn_plugin_fail(-ENOTSUP, "the nvshmem backend has no algorithm %d (auto, "
						"oneshot, twoshot, ring, simple ring)",
				      algo);
	}
}

int pn_nv_kern_algo(int kern)
{
	/* the copy engines: a reduce-scatter and an all-gather, as the two-shot */
	return kern == PN_NV_ONESHOT || kern == PN_NV_ONESHOT_LL ? PENNY_ALGO_ONESHOT
	       : kern == PN_NV_TWOSHOT || kern == PN_NV_CE ? PENNY_ALGO_TWOSHOT
	       : kern == PN_NV_RING    ? PENNY_ALGO_RING
				       : PENNY_ALGO_SIMPLE_RING;
}

unsigned pn_nv_grid(const struct pn_nv_cfg *cfg, int kern, uint64_t len)
{
	/* the bytes a block handles of one part: the whole call (one-shot, simple ring)
	 * or one of n segments; at least 16 KiB per block so small calls use few signals
	 * (the one-shots: 4 KiB per block; the LL one: one 8-byte line per thread) */
	uint64_t part = kern == PN_NV_ONESHOT || kern == PN_NV_SIMPLE || kern == PN_NV_ONESHOT_LL
				? len
				: len / (uint64_t)cfg->nranks;
	uint64_t per = kern == PN_NV_ONESHOT_LL || kern == PN_NV_ONESHOT ? 4u << 10 : 16u << 10;
	uint64_t g = (part + per - 1) / per;

	if (g < 1)
		g = 1;
	return g > cfg->blocks ? cfg->blocks : (unsigned)g;
}

int pn_nv_staged(uintptr_t send, uintptr_t recv, int sym)
{
	return !sym || send % 16 || recv % 16;
}

int pn_nv_rings_table(const int32_t *order, int nrings, int n, int32_t *out)
{
	int r, i;

	if (nrings < 0 || nrings > PN_NV_MAX_RINGS || (nrings && !order))
		return pn_plugin_fail(-EINVAL, "%d planned rings: the nvshmem backend runs 0 to %d",
				      nrings, PN_NV_MAX_RINGS);
	for (r = 0; r < nrings; r++) {
		int32_t *ord = out + 2ull * n * r, *pos = ord + n;

		for (i = 0; i < n; i++)
			pos[i] = -1;
		for (i = 0; i < n; i++) {
			int32_t pe = order[(size_t)r * n + i];

			if (pe < 0 || pe >= n || pos[pe] >= 0)
				return pn_plugin_fail(-EINVAL, "planned ring %d is not an order of all "
							       "%d PEs (PE %d at place %d)",
						      r, n, (int)pe, i);
			ord[i] = pe;
			pos[pe] = i;
		}
	}
	return 0;
}

uint64_t pn_nv_ws_bytes(const struct pn_nv_cfg *cfg)
{
	return pn_nv_ll_off(cfg->nranks, cfg->slot, PN_NV_MAX_BLOCKS) +
	       (cfg->ll_max ? pn_nv_ll_bytes(cfg->nranks, cfg->ll_max) : 0);
}

void pn_nv_format(const struct pn_nv_cfg *cfg, char *buf, unsigned len)
{
	char simple[40] = "", ll[40] = "", ce[40] = "", cuda[40] = "";

	if (cfg->ll_max && cfg->ll_ok)
		snprintf(ll, sizeof(ll), "oneshot_ll<=%" PRIu64 "B,", cfg->ll_max);
	if (cfg->simple_max)
		snprintf(simple, sizeof(simple), "simple<=%" PRIu64 "B,", cfg->simple_max);
	if (cfg->ce_ok)
		snprintf(ce, sizeof(ce), "<=%" PRIu64 "B,ce", cfg->ring_max);
	if (cfg->cuda_ok)
		snprintf(cuda, sizeof(cuda), ";cuda>%" PRIu64 "B", cfg->cuda_min);
	snprintf(buf, len, "%soneshot<=%" PRIu64 "B,%stwoshot<=%" PRIu64 "B,ring%s%s", ll,
		 cfg->oneshot_max, simple, cfg->twoshot_max, ce, cuda);
}
