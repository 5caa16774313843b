/* SPDX-License-Identifier: MIT */
/*
 * The cuda plugin's pure decisions (cuda.h): the kernels' names, the size
 * table of auto, each call's plan (direct or staged, in chunks) and each
 * launch's geometry.  No CUDA call: the unit tests drive them directly.
 */
#include "cuda.h"

#include "../../src/base/units.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const pn_kern_names[PN_NKERNS] = { "oneshot", "oneshot_fl", "twoshot_ll", "twoshot",
						 "ring", "twoshot_hy", "ce" };

int pn_kern_algo(int kern)
{
	/* ce: a reduce-scatter and an all-gather, as the two-shot */
	static const int map[PN_NKERNS] = { PENNY_ALGO_ONESHOT, PENNY_ALGO_ONESHOT, PENNY_ALGO_TWOSHOT,
					    PENNY_ALGO_TWOSHOT, PENNY_ALGO_RING, PENNY_ALGO_TWOSHOT,
					    PENNY_ALGO_TWOSHOT };

	return kern >= 0 && kern < PN_NKERNS ? map[kern] : -1;
}

/* ---- settings (PENNY_CUDA_*) ---- */

static uint64_t env_size(const char *name, uint64_t def, int *bad)
{
	const char *s = getenv(name);
	uint64_t v;

	if (!s || !*s)
		return def;
	if (pn_parse_size(s, &v) || v == UINT64_MAX) {
		*bad = 1;
		pn_plugin_fail(-EINVAL, "%s: invalid size '%s'", name, s);
		return def;
	}
	return v;
}

/* Seconds (a duration of units.h: "30", "2m"), 1 s..1 day; def when unset. */
static double env_seconds(const char *name, double def, int *bad)
{
	const char *s = getenv(name);
	double d;

	if (!s || !*s)
		return def;
	if (pn_parse_seconds(s, &d) || d < 1 || d > 86400) {
		*bad = 1;
		pn_plugin_fail(-EINVAL, "%s: '%s' is not a duration from 1 s to 1 day", name, s);
		return def;
	}
	return d;
}

uint64_t pn_cuda_co_two_default(int n)
{
	return n >= 3 ? ((1u << 20) / (uint64_t)(n - 2) + 15) / 16 * 16 : 0;
}

int pn_cuda_read_cfg(struct pn_cuda_cfg *cfg, struct pn_tune *tune_out, int n, int nsm,
		     uint64_t timeout_ns)
{
	const char *tune = getenv("PENNY_CUDA_TUNE");
	int bad = 0;
	uint64_t v;
	double d;

	memset(cfg, 0, sizeof(*cfg));
	memset(tune_out, 0, sizeof(*tune_out));
	cfg->nranks = n;
	cfg->ll_max = env_size("PENNY_CUDA_ONESHOT_MAX", 1u << 20, &bad);
	cfg->oneshot_ll_max = env_size("PENNY_CUDA_ONESHOT_LL_MAX", n <= 2 ? 512u << 10 : 128u << 10, &bad);
	cfg->twoshot_ll_max = env_size("PENNY_CUDA_TWOSHOT_LL_MAX", n <= 2 ? 1u << 20 : 0, &bad);
	cfg->twoshot_hy_max = env_size("PENNY_CUDA_TWOSHOT_HY_MAX", 0, &bad);
	/* LL lines beat the flag kernels (co_kernels.cu) by 20-35 % at every size
	 * to 256 KiB on 2 x H200, in and out of graphs (results/2026-11-29-h200x2) */
	cfg->co_ll_max = env_size("PENNY_CUDA_CO_LL_MAX", 256u << 10, &bad);
	/* broadcast and reduce in two steps through the non-roots (3+ ranks):
	 * the one-step kernels send the root's whole buffer over its links once
	 * a peer.  From this size (bytes of the buffer) on the flag kernels'
	 * sizes; "off": never.  The default is a cost model's, not yet measured
	 * on 3+ GPUs: two steps save (n - 2) x bytes / link bandwidth and cost
	 * one more flag round (1-2 us over the LL lines on 2 x H200, s52; 2 here),
	 * so they pay from about 2 us x 370 GB/s / (n - 2): 1 MiB / (n - 2) */
	{
		const char *s = getenv("PENNY_CUDA_CO_TWOSTEP");

		cfg->co_two_min = s && !strcmp(s, "off")
					  ? UINT64_MAX
					  : env_size("PENNY_CUDA_CO_TWOSTEP", pn_cuda_co_two_default(n), &bad);
	}
	cfg->tile_twoshot = (uint32_t)env_size("PENNY_CUDA_TILE", n <= 2 ? 64u << 10 : 32u << 10, &bad);
	cfg->tile_ring = (uint32_t)env_size("PENNY_CUDA_RING_TILE", n <= 4 ? 128u << 10 : 64u << 10, &bad);
	cfg->stage_bytes = env_size("PENNY_CUDA_STAGING", 64u << 20, &bad);
	v = env_size("PENNY_CUDA_PDL", 1, &bad);
	if (v > 1)
		return pn_plugin_fail(-EINVAL, "PENNY_CUDA_PDL: 0 or 1, not %" PRIu64, v);
	cfg->pdl = (int)v;
	/* PENNY_CUDA_TIMEOUT if set, else the core's --timeout (at least 1 s: a
	 * kernel's wait spans its peers' launches), else 30 s */
	d = timeout_ns ? (double)timeout_ns / 1e9 : 30;
	cfg->timeout_ns = (uint64_t)(env_seconds("PENNY_CUDA_TIMEOUT", d < 1 ? 1 : d, &bad) * 1e9);
	/* one block of 512 threads x 128 registers fills an SM: at most one per SM, so that
	 * every block of a kernel is resident at once (they wait on each other's peers) */
	cfg->blocks = (uint32_t)env_size("PENNY_CUDA_BLOCKS", (uint64_t)nsm, &bad);
	if (bad)
		return -EINVAL;
	if (cfg->blocks > (uint32_t)nsm && nsm > 0)
		cfg->blocks = (uint32_t)nsm;
	if (cfg->ll_max < 16 || cfg->ll_max > (1ull << 30) || cfg->tile_twoshot < 512 ||
	    cfg->tile_twoshot > (16u << 20) || cfg->tile_twoshot % 16 || cfg->tile_ring < 512 ||
	    cfg->tile_ring > (16u << 20) || cfg->tile_ring % 16 || cfg->stage_bytes < 4096 ||
	    !cfg->blocks || cfg->blocks > PN_AR_MAX_BLOCKS)
		return pn_plugin_fail(-EINVAL, "PENNY_CUDA_*: out of range (one-shot max 16 B..1 GiB, "
					       "tiles 512 B..16 MiB in 16 B steps, staging >= 4 KiB, "
					       "blocks 1..%d)",
				      PN_AR_MAX_BLOCKS);
	cfg->slot_bytes = cfg->tile_twoshot > cfg->tile_ring ? cfg->tile_twoshot : cfg->tile_ring;
	cfg->ll_max = (cfg->ll_max + 15) / 16 * 16;
	if (cfg->oneshot_ll_max > cfg->ll_max)
		cfg->oneshot_ll_max = cfg->ll_max;
	if (cfg->twoshot_hy_max > cfg->ll_max)
		cfg->twoshot_hy_max = cfg->ll_max;
	/* a peer's lines and the token line fit one LL slot (2 * ll_max) */
	if (cfg->co_ll_max > cfg->ll_max - 8)
		cfg->co_ll_max = cfg->ll_max - 8;
	if (cfg->twoshot_ll_max > cfg->ll_max / 2 * (uint64_t)n)
		cfg->twoshot_ll_max = cfg->ll_max / 2 * (uint64_t)n;
	if (tune && *tune && pn_tune_parse(tune, tune_out))
		return -EINVAL;
	if (!tune || !*tune)
		pn_tune_default(tune_out, n);
	/* the copy-engine allreduce's slots, where the table names it: they
	 * bound a piece (512 MiB: 1 GiB in 2 pieces on 2 GPUs, 385 GB/s where 4
	 * pieces made 381, results/2026-11-30-h200x2/s58-ce-*); 0: none, its
	 * rows run the ring */
	cfg->ce_bytes = env_size("PENNY_CUDA_CE_BYTES", 512u << 20, &bad);
	if (bad)
		return -EINVAL;
	if (cfg->ce_bytes && (cfg->ce_bytes < (1u << 20) || cfg->ce_bytes > (16ull << 30)))
		return pn_plugin_fail(-EINVAL, "PENNY_CUDA_CE_BYTES: 0 or 1 MiB..16 GiB, not %" PRIu64,
				      cfg->ce_bytes);
	for (v = 0; v < (uint64_t)tune_out->nrows && n > 1; v++)
		if (tune_out->row[v].kern == PN_K_CE)
			return 0;
	cfg->ce_bytes = 0;
	return 0;
}

/* ---- size table ---- */

static int kern_by_name(const char *s, size_t len)
{
	int k;

	for (k = 0; k < PN_NKERNS; k++)
		if (strlen(pn_kern_names[k]) == len && !strncmp(s, pn_kern_names[k], len))
			return k;
	return -1;
}

int pn_tune_parse(const char *s, struct pn_tune *t)
{
	const char *p = s;

	memset(t, 0, sizeof(*t));
	while (*p) {
		size_t n = strcspn(p, ","), an;
		const char *colon = memchr(p, ':', n);
		uint64_t max = UINT64_MAX;
		int algo;

		an = colon ? (size_t)(colon - p) : n;
		algo = kern_by_name(p, an);
		if (algo < 0)
			return pn_plugin_fail(-EINVAL, "PENNY_CUDA_TUNE: unknown kernel '%.*s' in '%s' "
						       "(oneshot, oneshot_fl, twoshot_ll, twoshot_hy, twoshot, ring, ce)",
					      (int)an, p, s);
		if (colon && pn_parse_size_n(colon + 1, n - an - 1, PN_SIZE_INF, &max))
			return pn_plugin_fail(-EINVAL, "PENNY_CUDA_TUNE: bad size '%.*s' in '%s'",
					      (int)(n - an - 1), colon + 1, s);
		if (t->nrows == PN_TUNE_ROWS)
			return pn_plugin_fail(-EINVAL, "PENNY_CUDA_TUNE: more than %d rows in '%s'",
					      PN_TUNE_ROWS, s);
		if (t->nrows && max <= t->row[t->nrows - 1].max_bytes)
			return pn_plugin_fail(-EINVAL, "PENNY_CUDA_TUNE: sizes must grow in '%s'", s);
		t->row[t->nrows].max_bytes = max;
		t->row[t->nrows].kern = algo;
		t->nrows++;
		p += n;
		if (*p == ',')
			p++;
	}
	if (!t->nrows)
		return pn_plugin_fail(-EINVAL, "PENNY_CUDA_TUNE is empty");
	t->row[t->nrows - 1].max_bytes = UINT64_MAX;
	return 0;
}

/*
 * Measured on nvidia-h200-x4 and its 2-GPU subset, bfloat16 sum, with and
 * without CUDA graphs (results/2026-11-21-h200x4/):
 * 2 GPUs: LL one-shot to 512 KiB, one-shot by flags to 4 MiB (both move the
 * buffer once), then the ring (nvidia-h100-x2, results/2026-11-26-h100x2/:
 * from 8 MiB up 0.2-4.5 % faster than the two-shot,
 * whose 64 KiB tiles pay one more flag round).  More GPUs: the one-shot's (n-1)-fold traffic
 * soon costs more than a second flag round: LL one-shot to 128 KiB, one-shot
 * by flags to 512 KiB, two-shot to 16 MiB, then the ring with 128 KiB tiles.
 * The LL and hybrid two-shots measured slower than these on 4 GPUs (LL
 * stores reach about 200 GB/s against 360 for plain stores), so no row
 * names them; PENNY_CUDA_TUNE can.  Copy engines (ce) from 256 MiB on 2 GPUs:
 * 369-385 GB/s where the ring moves 360-365, the ring faster at 128 MiB
 * (results/2026-11-30-h200x2/s58-ce-*); on more GPUs not measured yet.
 */
void pn_tune_default(struct pn_tune *t, int nranks)
{
	memset(t, 0, sizeof(*t));
	t->nrows = 0;
#define ROW(k, max)                                                                            \
	do {                                                                                   \
		t->row[t->nrows].kern = (k);                                                   \
		t->row[t->nrows++].max_bytes = (max);                                          \
	} while (0)
	if (nranks <= 2) {
		ROW(PN_K_ONESHOT, 512u << 10);
		ROW(PN_K_ONESHOT_FL, 4u << 20);
		ROW(PN_K_RING, 128u << 20);
		ROW(PN_K_CE, UINT64_MAX);
	} else {
		ROW(PN_K_ONESHOT, 128u << 10);
		ROW(PN_K_ONESHOT_FL, 512u << 10);
		ROW(PN_K_TWOSHOT, 16u << 20);
		ROW(PN_K_RING, UINT64_MAX);
	}
#undef ROW
}

int pn_tune_select(const struct pn_tune *t, uint64_t bytes)
{
	int i;

	for (i = 0; i < t->nrows; i++)
		if (bytes <= t->row[i].max_bytes)
			return t->row[i].kern;
	return PN_K_TWOSHOT;
}

void pn_tune_format(const struct pn_tune *t, char *buf, size_t len)
{
	size_t used = 0;
	int i;

	buf[0] = 0;
	for (i = 0; i < t->nrows && used < len; i++) {
		uint64_t m = t->row[i].max_bytes;
		int w;

		if (m == UINT64_MAX)
			w = snprintf(buf + used, len - used, "%s%s", i ? "," : "", pn_kern_names[t->row[i].kern]);
		else if (m % (1ull << 20) == 0)
			w = snprintf(buf + used, len - used, "%s%s<=%" PRIu64 "MiB", i ? "," : "",
				     pn_kern_names[t->row[i].kern], m >> 20);
		else if (m % 1024 == 0)
			w = snprintf(buf + used, len - used, "%s%s<=%" PRIu64 "KiB", i ? "," : "",
				     pn_kern_names[t->row[i].kern], m >> 10);
		else
			w = snprintf(buf + used, len - used, "%s%s<=%" PRIu64 "B", i ? "," : "",
				     pn_kern_names[t->row[i].kern], m);
		if (w < 0)
			break;
		used += (size_t)w;
	}
}

/* ---- plans ---- */

int pn_cuda_plan(const struct pn_cuda_cfg *cfg, int kern, uint64_t bytes, uintptr_t send,
		 uintptr_t recv, const struct pn_reg *recv_reg, struct pn_plan *plan)
{
	int aligned = !((send | recv) & 15);
	uint64_t limit;

	plan->kern = kern;
	switch (kern) {
	case PN_K_ONESHOT:
	case PN_K_TWOSHOT_LL:
		plan->staged = !aligned;
		limit = kern == PN_K_ONESHOT ? cfg->ll_max : cfg->ll_max / 2 * (uint64_t)cfg->nranks;
		if (plan->staged && cfg->stage_bytes < limit)
			limit = cfg->stage_bytes;
		break;
	case PN_K_ONESHOT_FL:
		plan->staged = !aligned;
		limit = plan->staged ? cfg->stage_bytes : UINT64_MAX;
		break;
	case PN_K_TWOSHOT_HY:
		plan->staged = !aligned;
		limit = cfg->ll_max;
		if (plan->staged && cfg->stage_bytes < limit)
			limit = cfg->stage_bytes;
		break;
	case PN_K_TWOSHOT:
	case PN_K_RING:
	case PN_K_CE:
		plan->staged = !aligned || !recv_reg;
		limit = plan->staged ? cfg->stage_bytes : UINT64_MAX;
		break;
	default:
		return pn_plugin_fail(-EINVAL, "unknown kernel %d", kern);
	}
	limit &= ~(uint64_t)15;
	if (!limit)
		return pn_plugin_fail(-EINVAL, "the %s buffer is too small",
				      plan->staged ? "staging" : "LL");
	plan->chunk = bytes && bytes < limit ? bytes : limit;
	return 0;
}

uint64_t pn_ce_slot_bytes(uint64_t slots_bytes, int n)
{
	if (n < 2)
		return 0;
	return slots_bytes / (2 * (uint64_t)(n - 1)) / 256 * 256;
}

static uint64_t ce_slice(uint64_t bytes, uint64_t n, uint64_t pieces)
{
	uint64_t unit = 16 * n;

	return ((bytes + pieces - 1) / pieces + unit - 1) / unit * unit / n;
}

int pn_ce_geometry(uint64_t bytes, int n, uint64_t slot_bytes, struct pn_ce_geom *geo)
{
	uint64_t pieces;

	if (n < 2 || slot_bytes < 16 || bytes % 16)
		return pn_plugin_fail(-EINVAL, "copy-engine allreduce: %" PRIu64 " bytes over %d "
					       "ranks with %" PRIu64 "-byte slots", bytes, n, slot_bytes);
	/* the fewest pieces, an even number, whose slices fit a slot */
	pieces = bytes / (slot_bytes / 16 * 16 * (uint64_t)n);
	pieces = pieces < 2 ? 2 : pieces + (pieces & 1);
	while (ce_slice(bytes, (uint64_t)n, pieces) > slot_bytes)
		pieces += 2;
	geo->pieces = pieces;
	geo->slice = ce_slice(bytes, (uint64_t)n, pieces);
	geo->piece = geo->slice * (uint64_t)n;
	return 0;
}

uint64_t pn_ce_len(const struct pn_ce_geom *geo, uint64_t bytes, uint64_t off)
{
	if (off >= bytes)
		return 0;
	return bytes - off < geo->slice ? bytes - off : geo->slice;
}

uint64_t pn_cuda_twoshot_ll_min(int nranks)
{
	return (uint64_t)nranks * 4096;
}

static unsigned round_up(unsigned v, unsigned m)
{
	return (v + m - 1) / m * m;
}

static void ll_geometry(uint64_t lines, uint64_t blocks, struct pn_launch *l)
{
	uint64_t g;

	l->threads = lines >= 512 ? 512 : round_up((unsigned)lines, 32);
	if (l->threads < 64)
		l->threads = 64;
	g = (lines + l->threads - 1) / l->threads;
	l->grid = (unsigned)(g < 1 ? 1 : g > blocks ? blocks : g);
	l->tile = 0;
}

void pn_cuda_geometry(const struct pn_cuda_cfg *cfg, int kern, uint64_t bytes,
		      struct pn_launch *l)
{
	uint64_t blocks = cfg->blocks ? cfg->blocks : 1, n = (uint64_t)cfg->nranks;

	if (kern == PN_K_ONESHOT) {
		ll_geometry((bytes + 7) / 8, blocks, l);
	} else if (kern == PN_K_TWOSHOT_LL) {
		ll_geometry(((bytes + 7) / 8 + n - 1) / n, blocks, l);
	} else if (kern == PN_K_ONESHOT_FL) {
		uint64_t t = (bytes + blocks - 1) / blocks, nt;

		t = (t + 15) / 16 * 16;
		if (t < 512)
			t = 512;
		if (t > cfg->slot_bytes)
			t = cfg->slot_bytes;
		nt = (bytes + t - 1) / t;
		l->tile = (uint32_t)t;
		l->grid = (unsigned)(nt < 1 ? 1 : nt > blocks ? blocks : nt);
		l->threads = round_up((unsigned)(t / 16), 32);
		if (l->threads < 64)
			l->threads = 64;
		if (l->threads > 512)
			l->threads = 512;
	} else { /* twoshot, twoshot_hy, ring */
		uint64_t cap = kern == PN_K_RING ? cfg->tile_ring : cfg->tile_twoshot;
		uint64_t t = (bytes + n * blocks - 1) / (n * blocks), nt;

		t = (t + 15) / 16 * 16;
		if (t < 512)
			t = 512;
		if (t > cap)
			t = cap;
		nt = (bytes + t * n - 1) / (t * n);
		l->tile = (uint32_t)t;
		l->grid = (unsigned)(nt < 1 ? 1 : nt > blocks ? blocks : nt);
		l->threads = round_up((unsigned)(t / 16), 32);
		if (l->threads < 64)
			l->threads = 64;
		if (l->threads > 512)
			l->threads = 512;
	}
}

void pn_cuda_ar_args(const struct pn_cuda_cfg *cfg, int kern, int rank, uint64_t send,
		     uint64_t recv, uint64_t bytes, unsigned esize, const CUdeviceptr *ws,
		     const struct pn_reg *reg, struct pn_ar_args *a, struct pn_launch *l)
{
	pn_cuda_geometry(cfg, kern, bytes, l);
	memset(a, 0, sizeof(*a));
	a->send = send;
	a->recv = recv;
	for (int p = 0; p < cfg->nranks; p++) {
		a->peer_ws[p] = ws[p];
		a->peer_recv[p] = reg ? reg->peer[p] + (recv - reg->base) : 0;
	}
	a->count = bytes / esize;
	a->desc = reg ? ((uint64_t)reg->id << 40 | (recv - reg->base)) : 0;
	a->timeout_ns = cfg->timeout_ns;
	a->tile = l->tile;
	a->slot_bytes = cfg->slot_bytes;
	a->ll_slot_bytes = 2 * cfg->ll_max;
	a->rank = rank;
	a->nranks = cfg->nranks;
}

int pn_cuda_kernel_for(const struct pn_cuda_cfg *cfg, const struct pn_tune *t, int algo,
		       uint64_t bytes)
{
	switch (algo) {
	case PENNY_ALGO_AUTO:
		return pn_tune_select(t, bytes);
	case PENNY_ALGO_ONESHOT:
		return bytes <= cfg->oneshot_ll_max ? PN_K_ONESHOT : PN_K_ONESHOT_FL;
	case PENNY_ALGO_TWOSHOT:
		return bytes <= cfg->twoshot_ll_max	? PN_K_TWOSHOT_LL
		       : bytes <= cfg->twoshot_hy_max ? PN_K_TWOSHOT_HY
						      : PN_K_TWOSHOT;
	case PENNY_ALGO_RING:
		return PN_K_RING;
	}
	return pn_plugin_fail(-EINVAL, "unknown algorithm %d", algo);
}
