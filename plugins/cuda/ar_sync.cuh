/* SPDX-License-Identifier: MIT */
/*
 * How the cuda plugin's one-node kernels (ar_kernels.cu: allreduce;
 * co_kernels.cu: the other collectives) wait and signal through the
 * workspace: timed waits that record an error word instead of hanging, LL
 * line polls, per-block flags from every peer (st.release.sys /
 * ld.acquire.sys) with the buffer identity beside them, and the tile
 * scratch slots.
 */
#ifndef PENNY_PLUGIN_AR_SYNC_CUH
#define PENNY_PLUGIN_AR_SYNC_CUH

#include "ar_block.cuh"

/* ---- waits ---- */

struct pn_wait_state {
	bool dead;	/* a wait timed out: stop waiting, finish the protocol */
};

PN_DEV void pn_fail(const struct pn_ar_args &a, uint32_t bit, uint32_t info)
{
	uint32_t *cnt = (uint32_t *)(a.peer_ws[a.rank] + PN_WS_COUNTERS);

	pn_atomic_or(&cnt[PN_CNT_ERR], bit);
	cnt[PN_CNT_ERR_INFO] = PN_ERR_DETAIL(info, a.coll);
}

/* An earlier wait of this or an earlier kernel has failed (the host has not
 * read the error yet): the calls queued behind a timed-out one give up at
 * once instead of each waiting timeout_ns, so a stopped peer fails a loop
 * of calls within the timeout, not within calls x timeout. */
PN_DEV bool pn_failed(const struct pn_ar_args &a)
{
	return ((const volatile uint32_t *)(a.peer_ws[a.rank] + PN_WS_COUNTERS))[PN_CNT_ERR] != 0;
}

/* Wait until *f >= target (mod 2^32). */
PN_DEV void pn_wait_flag(const struct pn_ar_args &a, const uint32_t *f, uint32_t target,
			 int peer, pn_wait_state &w)
{
	uint32_t spins = 0;
	uint64_t t0 = 0;

	while (!w.dead && (int32_t)(pn_ld_acquire(f) - target) < 0) {
		pn_pause();
		if (++spins < 1024)
			continue;
		spins = 0;
		uint64_t now = pn_clock_ns();

		if (pn_failed(a)) {
			w.dead = true;
		} else if (!t0) {
			t0 = now;
		} else if (now - t0 > a.timeout_ns) {
			pn_fail(a, PN_ERR_TIMEOUT, (uint32_t)peer);
			w.dead = true;
		}
	}
}

PN_DEV pn_v2 pn_ll_wait(const struct pn_ar_args &a, const char *p, uint32_t epoch, int peer,
			pn_wait_state &w)
{
	uint32_t spins = 0;
	uint64_t t0 = 0;

	for (;;) {
		pn_v4 v = pn_ll_load(p);

		if ((v.y == epoch && v.w == epoch) || w.dead) {
			pn_v2 d = { v.x, v.z };

			return d;
		}
		pn_pause();
		if (++spins < 1024)
			continue;
		spins = 0;
		uint64_t now = pn_clock_ns();

		if (pn_failed(a)) {
			w.dead = true;
		} else if (!t0) {
			t0 = now;
		} else if (now - t0 > a.timeout_ns) {
			pn_fail(a, PN_ERR_TIMEOUT, (uint32_t)peer);
			w.dead = true;
		}
	}
}

PN_DEV uint32_t *pn_ws_u32(uint64_t ws, uint64_t off)
{
	return (uint32_t *)(ws + off);
}

/* One 8-byte line reduced over every rank in rank order 0..n-1 (PENNY_AVG
 * divided once): own is this rank's, the peers' are polled from line i of
 * their LL slots in this rank's area (mine) as they arrive. */
template <typename T, int OP>
PN_DEV pn_v2 pn_ll_reduce8(const struct pn_ar_args &a, const char *mine, pn_v2 own, uint64_t i,
			   uint32_t epoch, pn_wait_state &w)
{
	pn_pack<T, OP, 8> pk;
	pn_v2 o;

#pragma unroll
	for (int p = 0; p < PN_AR_MAX_RANKS; p++) {
		if (p >= a.nranks)
			break;
		pn_v2 d = p == a.rank ? own
				      : pn_ll_wait(a, mine + (uint64_t)p * a.ll_slot_bytes + i * 16,
						   epoch, p, w);
		if (p == 0)
			pk.first(&d);
		else
			pk.add(&d);
	}
	pk.out(&o, a.nranks, true);
	return o;
}

/* The last block of an LL kernel moves the epoch on (graph-safe: in memory). */
PN_DEV void pn_ll_done(uint32_t *cnt, uint32_t epoch)
{
	pn_sync();
	if (pn_tid() == 0 && pn_atomic_add(&cnt[PN_CNT_LL_DONE], 1) == pn_nbid() - 1) {
		cnt[PN_CNT_LL_DONE] = 0;
		cnt[PN_CNT_LL_EPOCH] = epoch;
	}
}

PN_DEV uint64_t pn_scratch(const struct pn_ar_args &a, int rank, unsigned b, unsigned par,
			   int slot)
{
	return a.peer_ws[rank] + PN_WS_LL + 2ull * a.nranks * a.ll_slot_bytes +
	       (((uint64_t)b * 2 + par) * a.nranks + slot) * a.slot_bytes;
}

/* ---- flags ---- */

PN_DEV void pn_signal(const struct pn_ar_args &a, int peer, unsigned b, uint32_t v, bool desc)
{
	if (desc) {
		uint64_t *d = (uint64_t *)(a.peer_ws[peer] + PN_WS_DESCS) +
			      (uint64_t)b * PN_AR_MAX_RANKS + a.rank;
		pn_st_volatile_u64(d, a.desc);
	}
	pn_maybe_yield();
	pn_st_release(pn_ws_u32(a.peer_ws[peer], PN_WS_FLAGS) + b * PN_AR_MAX_RANKS + a.rank, v);
}

/* Threads 0..n-1 wait for their peer's flag; returns true (block-wide) if a
 * wait failed or, with check_desc, a peer's buffer differs. */
PN_DEV bool pn_wait_all(const struct pn_ar_args &a, unsigned b, uint32_t v, bool check_desc,
			pn_wait_state &w)
{
	int t = (int)pn_tid(), bad = 0;

	if (t < a.nranks && t != a.rank) {
		const uint32_t *f = pn_ws_u32(a.peer_ws[a.rank], PN_WS_FLAGS) + b * PN_AR_MAX_RANKS + t;

		pn_wait_flag(a, f, v, t, w);
		if (w.dead) {
			bad = 1;
		} else if (check_desc) {
			const uint64_t *d = (const uint64_t *)(a.peer_ws[a.rank] + PN_WS_DESCS) +
					    (uint64_t)b * PN_AR_MAX_RANKS + t;

			if (pn_ld_volatile_u64(d) != a.desc) {
				pn_fail(a, PN_ERR_DESC, (uint32_t)t);
				bad = 1;
			}
		}
	}
	return pn_sync_or(bad) != 0;
}

#endif
