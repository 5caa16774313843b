/* SPDX-License-Identifier: MIT */
/*
 * The copy-engine allreduce's kernels (cuda_ce.c; the protocol is in
 * kargs.h): pn_ar_ce_<type>_<op> waits for every peer's push of one
 * piece, reduces this rank's slice in rank order and tells every peer;
 * pn_ce_gate runs on the copy streams between the copies and waits or
 * signals for them.  Every count they compare lives in device memory and
 * moves on by one a piece or a call, or is a flag the copy streams set
 * and its reader clears, so a CUDA graph's replay finds the values it
 * needs.  Every wait gives up after timeout_ns and records
 * PN_ERR_TIMEOUT; a peer whose recv was another buffer records
 * PN_ERR_DESC.  Unlike the SM kernels, which check a peer's buffer before
 * they store into it, the copies are enqueued by the host and cannot be
 * held back: the check comes after them, and the call fails.
 */
#include "ar_sync.cuh"

PN_DEV uint32_t *pn_ce_w(uint64_t area, unsigned word)
{
	return (uint32_t *)area + word;
}

PN_DEV uint64_t *pn_ce_desc(uint64_t area, int owner)
{
	return (uint64_t *)(pn_ce_w(area, PN_CE_DESC) + 2 * owner);
}

/* Wait until the peer's counter at word reaches target (mod 2^32); targets
 * of 0 or less (relative: lag) need nothing. */
PN_DEV void pn_ce_wait(const struct pn_ar_args &a, unsigned word, int peer, uint32_t target,
		       pn_wait_state &w)
{
	pn_wait_flag(a, pn_ce_w(a.peer_ce[a.rank], word + peer), target, peer, w);
}

/* Wait until the peer's copy stream set its flag at word, then clear it
 * for the next write (nothing writes it again before this rank has gone
 * on: the protocol in kargs.h).  After a failed wait it stays as it is. */
PN_DEV void pn_ce_take(const struct pn_ar_args &a, unsigned word, int peer, pn_wait_state &w)
{
	pn_ce_wait(a, word, peer, 1, w);
	if (!w.dead)
		*pn_ce_w(a.peer_ce[a.rank], word + peer) = 0;
}

template <typename T, int OP> PN_DEV void pn_ar_ce(const struct pn_ar_args &a)
{
	const int n = a.nranks, r = a.rank;
	const uint64_t me = a.peer_ce[r];
	const uint64_t bytes = a.count * sizeof(T), nb = pn_nbid();
	const uint64_t per = ((bytes + nb - 1) / nb + 15) / 16 * 16, off = per * pn_bid();
	const unsigned rsf = PN_CE_RSF + PN_AR_MAX_RANKS * (a.ce_piece & 1);
	pn_wait_state w = { false };
	int t = (int)pn_tid(), bad = 0;

	/* every peer's push of this piece has landed (the last block to
	 * finish clears the flags, when every block has seen them); after a
	 * failed wait nothing is reduced, but the peers are still told */
	if (t < n && t != r) {
		pn_ce_wait(a, rsf, t, 1, w);
		bad = w.dead;
	}
	if (!pn_sync_or(bad) && off < bytes) {
		const char *src[PN_AR_MAX_RANKS];
		bool remote[PN_AR_MAX_RANKS];
		char *pdst[PN_AR_MAX_RANKS] = { NULL };

#pragma unroll
		for (int p = 0; p < PN_AR_MAX_RANKS; p++) {
			src[p] = p < n ? (const char *)a.ce_src[p] + off : NULL;
			remote[p] = p != r; /* written by a peer's copy engine */
		}
		pn_block_reduce<T, OP>(src, remote, n, (char *)a.recv + off, pdst, 0,
				       bytes - off < per ? bytes - off : per, n, true);
	}
	/* the last block to finish clears the flags and tells every peer */
	pn_sync();
	if (pn_tid() == 0) {
		uint32_t *done = pn_ce_w(me, PN_CE_DONE);

		pn_fence_sys();
		if (pn_atomic_add(done, 1) == pn_nbid() - 1) {
			uint32_t v = *pn_ce_w(me, PN_CE_SIG_RED) + 1;

			pn_fence_sys();
			*done = 0;
			for (int p = 0; p < n; p++)
				*pn_ce_w(me, rsf + p) = 0;
			/* for the all-gather's copy of it after this piece */
			*(uint64_t *)pn_ce_w(me, PN_CE_MYDESC) = a.desc;
			pn_fence_sys();
			*pn_ce_w(me, PN_CE_SIG_RED) = v;
			for (int p = 0; p < n; p++) {
				if (p == r)
					continue;
				pn_st_release(pn_ce_w(a.peer_ce[p], PN_CE_RED + r), v);
			}
		}
	}
}

/* One thread: the steps of a.ce_steps for peer a.ce_peer (FINAL: every
 * peer). */
PN_DEV void pn_ce_gate_run(const struct pn_ar_args &a)
{
	const int r = a.rank, q = a.ce_peer;
	const uint64_t me = a.peer_ce[r];
	pn_wait_state w = { false };

	if (pn_tid() != 0 || pn_bid() != 0)
		return;
	if (a.ce_steps & PN_CE_FREE) {
		/* the slot of this parity was last read by the peer's reduction of
		 * piece ce_piece - 2 (pieces 0 and 1 need no gate: the last call
		 * ended after every peer had reduced all of its pieces) */
		pn_ce_wait(a, PN_CE_RED, q, *pn_ce_w(me, PN_CE_BASE_RED + q) + a.ce_piece - 1, w);
	}
	if (a.ce_steps & PN_CE_FINAL) {
		for (int p = 0; p < a.nranks; p++) {
			if (p == r)
				continue;
			pn_ce_take(a, PN_CE_AGF, p, w);
			if (w.dead)
				continue;
			/* the peer stored into my recv at my offset: if its recv was
			 * another buffer, the caller broke the ABI's contract
			 * (registered buffers are symmetric), and it is said */
			if (pn_ld_volatile_u64(pn_ce_desc(me, p)) != a.desc)
				pn_fail(a, PN_ERR_DESC, (uint32_t)p);
			/* every piece of the peer's is reduced: the next call's
			 * pieces 0 and 1 find their slots free */
			*pn_ce_w(me, PN_CE_BASE_RED + p) = pn_ld_acquire(pn_ce_w(me, PN_CE_RED + p));
		}
	}
}

extern "C" __global__ void pn_ce_gate(struct pn_ar_args a)
{
	pn_ce_gate_run(a);
}

#define PN_CE_KERNEL(T, tname, OP, oname)                                                      \
	extern "C" __global__ void PN_BOUNDS pn_ar_ce_##tname##_##oname(struct pn_ar_args a)    \
	{                                                                                      \
		pn_ar_ce<T, OP>(a);                                                            \
	}
#define PN_CE_OPS(T, tname)                                                                    \
	PN_CE_KERNEL(T, tname, PENNY_SUM, sum)                                                 \
	PN_CE_KERNEL(T, tname, PENNY_PROD, prod)                                               \
	PN_CE_KERNEL(T, tname, PENNY_MIN, min)                                                 \
	PN_CE_KERNEL(T, tname, PENNY_MAX, max)                                                 \
	PN_CE_KERNEL(T, tname, PENNY_AVG, avg)

PN_CE_OPS(int8_t, int8)
PN_CE_OPS(uint8_t, uint8)
PN_CE_OPS(int32_t, int32)
PN_CE_OPS(uint32_t, uint32)
PN_CE_OPS(int64_t, int64)
PN_CE_OPS(uint64_t, uint64)
PN_CE_OPS(pn_half_t, half)
PN_CE_OPS(pn_bf16_t, bfloat16)
PN_CE_OPS(float, float)
PN_CE_OPS(double, double)
