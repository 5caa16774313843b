/* SPDX-License-Identifier: MIT */
/*
 * penny's allreduce kernels over CUDA IPC (NVLink): one-shot (LL lines),
 * two-shot and ring.  Every kernel is pn_ar_<algo>_<type>_<op> and takes one
 * struct pn_ar_args.
 *
 * Memory protocol (all data moves by stores into a peer's memory; every
 * read is local):
 *  - one-shot: each rank stores its input as LL lines (8 data bytes + the
 *    call's epoch twice, one 16-byte volatile store) into slot [rank] of every
 *    peer's LL area, then polls its own LL area and reduces the n inputs in
 *    rank order 0..n-1.  No barrier, no fence.  Two parities of the area,
 *    chosen by the epoch: a rank writes call k+2 only after it has read every
 *    peer's call k+1, which each peer wrote after finishing call k.  The epoch
 *    lives in device memory (the last block bumps it), so CUDA-graph replays
 *    are safe.
 *  - two-shot: the buffer is cut into tiles of n slices.  Reduce-scatter:
 *    slice j goes to rank j's scratch slot [rank]; __syncthreads, then one
 *    st.release.sys flag per peer (cumulative over the block's stores); the
 *    peers poll with ld.acquire.sys.  Rank j reduces slice j in rank order,
 *    writes it to its recv and stores it into every peer's recv (all-gather).
 *    A last flag round ("done") tells each rank that all slices arrived.
 *  - ring: per tile, n-1 reduce-scatter steps into the next rank's scratch,
 *    then n-1 all-gather steps straight into the next rank's recv, each step
 *    signalled by one flag to the next rank.
 * Flags and tile counters are per block and monotonic (compared modulo
 * 2^32); scratch has two parities per block, chosen by the block's tile
 * count.  Every wait gives up after timeout_ns and records PN_ERR_TIMEOUT.
 * Buffers written in a peer (its recv) must be the same allocation and
 * offset there: the buffer identity (desc) travels with the flags and a
 * mismatch records PN_ERR_DESC and writes nothing into the peer.
 */
#include "ar_sync.cuh"

/* ---- one-shot with LL lines ---- */

template <typename T, int OP> PN_DEV void pn_ar_oneshot(const struct pn_ar_args &a)
{
	const int n = a.nranks, r = a.rank;
	uint32_t *cnt = pn_ws_u32(a.peer_ws[r], PN_WS_COUNTERS);
	const uint32_t epoch = cnt[PN_CNT_LL_EPOCH] + 1, par = epoch & 1;
	const uint64_t bytes = a.count * sizeof(T), lines = (bytes + 7) / 8;
	const uint64_t stride = (uint64_t)pn_nbid() * pn_ntid();
	const uint64_t first = (uint64_t)pn_bid() * pn_ntid() + pn_tid();
	const char *send = (const char *)a.send;
	char *recv = (char *)a.recv;
	const char *mine = (const char *)(a.peer_ws[r] + PN_WS_LL) + (uint64_t)par * n * a.ll_slot_bytes;
	pn_wait_state w = { false };

	for (uint64_t i = first; i < lines; i += stride) {
		pn_v2 d = pn_load8(send, i, bytes);

#pragma unroll
		for (int q = 1; q < PN_AR_MAX_RANKS; q++) {
			if (q >= n)
				break;
			int p = (r + q) % n;
			char *dst = (char *)(a.peer_ws[p] + PN_WS_LL) +
				    ((uint64_t)par * n + r) * a.ll_slot_bytes + i * 16;

			pn_maybe_yield();
			pn_ll_store(dst, d.x, d.y, epoch);
		}
	}
	for (uint64_t i = first; i < lines; i += stride)
		pn_store8(recv, i, bytes,
			  pn_ll_reduce8<T, OP>(a, mine, pn_load8(send, i, bytes), i, epoch, w));
	pn_ll_done(cnt, epoch);
}

/*
 * Two-shot with LL lines, for mid sizes: no barrier and no fence at all.
 * The 8-byte lines are dealt out in n contiguous slices of L lines.
 * Reduce-scatter: slice j goes, as LL lines, to rank j's slot [rank] (first
 * half); rank j polls, reduces in rank order, writes its recv and sends the
 * result as LL lines to every peer's slot [j] (second half); every rank
 * polls those into its recv.  Each rank hears from every peer in both
 * phases (the host runs it only when no slice is empty), which keeps the
 * one-shot's parity argument.  The same thread handles line i in every loop,
 * so in place is safe.
 */
template <typename T, int OP> PN_DEV void pn_ar_twoshot_ll(const struct pn_ar_args &a)
{
	const int n = a.nranks, r = a.rank;
	uint32_t *cnt = pn_ws_u32(a.peer_ws[r], PN_WS_COUNTERS);
	const uint32_t epoch = cnt[PN_CNT_LL_EPOCH] + 1, par = epoch & 1;
	const uint64_t bytes = a.count * sizeof(T), lines = (bytes + 7) / 8;
	const uint64_t L = (lines + n - 1) / n, half = a.ll_slot_bytes / 2;
	const uint64_t stride = (uint64_t)pn_nbid() * pn_ntid();
	const uint64_t first = (uint64_t)pn_bid() * pn_ntid() + pn_tid();
	const char *send = (const char *)a.send;
	char *recv = (char *)a.recv;
	const char *mine = (const char *)(a.peer_ws[r] + PN_WS_LL) + (uint64_t)par * n * a.ll_slot_bytes;
	pn_wait_state w = { false };

#define PN_SLICE_LINES(j) ((uint64_t)(j) * L >= lines ? 0 : (lines - (uint64_t)(j) * L < L ? lines - (uint64_t)(j) * L : L))
	/* reduce-scatter: my data of slice j to rank j */
#pragma unroll
	for (int q = 1; q < PN_AR_MAX_RANKS; q++) {
		if (q >= n)
			break;
		const int j = (r + q) % n;
		const uint64_t lj = PN_SLICE_LINES(j);
		char *dst = (char *)(a.peer_ws[j] + PN_WS_LL) + ((uint64_t)par * n + r) * a.ll_slot_bytes;

		for (uint64_t k = first; k < lj; k += stride) {
			pn_v2 d = pn_load8(send, (uint64_t)j * L + k, bytes);

			pn_maybe_yield();
			pn_ll_store(dst + k * 16, d.x, d.y, epoch);
		}
	}
	/* my slice: reduce in rank order, keep, send to everyone */
	{
		const uint64_t lr = PN_SLICE_LINES(r);

		for (uint64_t k = first; k < lr; k += stride) {
			const uint64_t i = (uint64_t)r * L + k;
			const pn_v2 o = pn_ll_reduce8<T, OP>(a, mine, pn_load8(send, i, bytes), k, epoch, w);

#pragma unroll
			for (int q = 1; q < PN_AR_MAX_RANKS; q++) {
				if (q >= n)
					break;
				const int j = (r + q) % n;
				char *dst = (char *)(a.peer_ws[j] + PN_WS_LL) +
					    ((uint64_t)par * n + r) * a.ll_slot_bytes + half;

				pn_maybe_yield();
				pn_ll_store(dst + k * 16, o.x, o.y, epoch);
			}
			pn_store8(recv, i, bytes, o);
		}
	}
	/* all-gather: the other slices, as their owners send them */
#pragma unroll
	for (int q = 1; q < PN_AR_MAX_RANKS; q++) {
		if (q >= n)
			break;
		const int j = (r + q) % n;
		const uint64_t lj = PN_SLICE_LINES(j);
		const char *src = mine + (uint64_t)j * a.ll_slot_bytes + half;

		for (uint64_t k = first; k < lj; k += stride) {
			const uint64_t i = (uint64_t)j * L + k;
			pn_v2 o = pn_ll_wait(a, src + k * 16, epoch, j, w);

			pn_store8(recv, i, bytes, o);
		}
	}
#undef PN_SLICE_LINES
	pn_ll_done(cnt, epoch);
}

/* ---- one-shot with flags (mid sizes: plain 16-byte stores, one flag round) ---- */

/*
 * Each tile of the buffer goes to slot [rank] of every peer's scratch; one
 * flag round; every rank reduces the n copies in rank order into its own
 * recv.  Nothing is written into a peer's recv, so any aligned buffers do.
 */
template <typename T, int OP> PN_DEV void pn_ar_oneshot_fl(const struct pn_ar_args &a)
{
	const int n = a.nranks, r = a.rank;
	const unsigned b = pn_bid(), nb = pn_nbid();
	uint32_t *cnt = pn_ws_u32(a.peer_ws[r], PN_WS_COUNTERS);
	uint32_t seq = cnt[PN_CNT_SEQ + b], tiles = cnt[PN_CNT_TILES + b];
	const uint64_t bytes = a.count * sizeof(T), tile = a.tile;
	const uint64_t ntiles = (bytes + tile - 1) / tile;
	const char *send = (const char *)a.send;
	char *recv = (char *)a.recv;
	pn_wait_state w = { false };

	for (uint64_t k = b; k < ntiles; k += nb, tiles++) {
		const unsigned par = tiles & 1;
		const uint64_t base = k * tile;
		const uint64_t len = bytes - base < tile ? bytes - base : tile;
		const char *src[PN_AR_MAX_RANKS];
		bool remote[PN_AR_MAX_RANKS];
		char *pdst[PN_AR_MAX_RANKS];

		/* my tile into every peer's slot [r]: load once, store n-1 times */
#pragma unroll
		for (int q = 0; q < PN_AR_MAX_RANKS; q++) {
			src[q] = send + base;
			remote[q] = false;
			pdst[q] = q + 2 < n ? (char *)pn_scratch(a, (r + q + 2) % n, b, par, r) : NULL;
		}
		pn_block_reduce<T, OP>(src, remote, 1, (char *)pn_scratch(a, (r + 1) % n, b, par, r), pdst,
				       n - 2, len, n, false);
		pn_sync();
		seq++;
		if ((int)pn_tid() < n && (int)pn_tid() != r)
			pn_signal(a, (int)pn_tid(), b, seq, false);
		pn_wait_all(a, b, seq, false, w);
#pragma unroll
		for (int p = 0; p < PN_AR_MAX_RANKS; p++) {
			src[p] = p == r ? send + base : (p < n ? (const char *)pn_scratch(a, r, b, par, p) : send);
			remote[p] = p != r;
		}
		pn_block_reduce<T, OP>(src, remote, n, recv + base, pdst, 0, len, n, true);
	}
	if (pn_tid() == 0) {
		cnt[PN_CNT_SEQ + b] = seq;
		cnt[PN_CNT_TILES + b] = tiles;
	}
}

/* ---- two-shot ---- */

template <typename T, int OP> PN_DEV void pn_ar_twoshot(const struct pn_ar_args &a)
{
	const int n = a.nranks, r = a.rank;
	const unsigned b = pn_bid(), nb = pn_nbid();
	uint32_t *cnt = pn_ws_u32(a.peer_ws[r], PN_WS_COUNTERS);
	uint32_t seq = cnt[PN_CNT_SEQ + b], tiles = cnt[PN_CNT_TILES + b];
	const uint64_t bytes = a.count * sizeof(T), tile_bytes = (uint64_t)a.tile * n;
	const uint64_t ntiles = (bytes + tile_bytes - 1) / tile_bytes;
	const char *send = (const char *)a.send;
	char *recv = (char *)a.recv;
	pn_wait_state w = { false };
	bool ok = true;

	for (uint64_t k = b; k < ntiles; k += nb, tiles++) {
		const unsigned par = tiles & 1;
		const uint64_t base = k * tile_bytes;
		const uint64_t len = bytes - base < tile_bytes ? bytes - base : tile_bytes;
		const uint64_t slice = ((len + n - 1) / n + 15) / 16 * 16;

		/* reduce-scatter: slice j to rank j's slot [r] */
		for (int q = 1; q < n; q++) {
			int j = (r + q) % n;
			uint64_t off = (uint64_t)j * slice;

			if (off >= len)
				continue;
			pn_block_copy((char *)pn_scratch(a, j, b, par, r), send + base + off,
				      len - off < slice ? len - off : slice, false, sizeof(T));
		}
		pn_sync();
		seq++;
		if ((int)pn_tid() < n && (int)pn_tid() != r)
			pn_signal(a, (int)pn_tid(), b, seq, true);
		if (pn_wait_all(a, b, seq, true, w))
			ok = false;

		/* reduce slice r in rank order, all-gather it into every recv */
		uint64_t off = (uint64_t)r * slice;

		if (off < len) {
			const char *src[PN_AR_MAX_RANKS];
			bool remote[PN_AR_MAX_RANKS];
			char *pdst[PN_AR_MAX_RANKS];

			/* source p: my own input, or p's slice r in my scratch slot [p] */
#pragma unroll
			for (int p = 0; p < PN_AR_MAX_RANKS; p++) {
				src[p] = p == r ? send + base + off
						: (p < n ? (const char *)pn_scratch(a, r, b, par, p) : send);
				remote[p] = p != r;
				pdst[p] = p + 1 < n ? (char *)a.peer_recv[(r + p + 1) % n] + base + off
						    : NULL;
			}
			pn_block_reduce<T, OP>(src, remote, n, recv + base + off, pdst, ok ? n - 1 : 0,
					       len - off < slice ? len - off : slice, n, true);
		}
	}
	/* done: every peer's slices are in my recv */
	pn_sync();
	seq++;
	if ((int)pn_tid() < n && (int)pn_tid() != r)
		pn_signal(a, (int)pn_tid(), b, seq, false);
	pn_wait_all(a, b, seq, false, w);
	if (pn_tid() == 0) {
		cnt[PN_CNT_SEQ + b] = seq;
		cnt[PN_CNT_TILES + b] = tiles;
	}
}

/* ---- two-shot, hybrid: reduce-scatter by flags, all-gather by LL lines ---- */

/*
 * Mid sizes: the reduce-scatter is the flag two-shot's (plain 16-byte
 * stores, one flag round per tile); the reduced slice then goes to every
 * peer as LL lines (line = byte offset / 8 in slot [rank] of the LL area),
 * which the peers poll into their recv: no second flag round, nothing
 * stored into a peer's recv.  It uses the LL epoch like the LL kernels (the
 * host runs it only when every rank owns data in the first tile, and on
 * whole 16-byte vectors).
 */
template <typename T, int OP> PN_DEV void pn_ar_twoshot_hy(const struct pn_ar_args &a)
{
	const int n = a.nranks, r = a.rank;
	const unsigned b = pn_bid(), nb = pn_nbid();
	uint32_t *cnt = pn_ws_u32(a.peer_ws[r], PN_WS_COUNTERS);
	uint32_t seq = cnt[PN_CNT_SEQ + b], tiles = cnt[PN_CNT_TILES + b];
	const uint32_t epoch = cnt[PN_CNT_LL_EPOCH] + 1, lpar = epoch & 1;
	const uint64_t bytes = a.count * sizeof(T), tile_bytes = (uint64_t)a.tile * n;
	const uint64_t ntiles = (bytes + tile_bytes - 1) / tile_bytes, nt = pn_ntid();
	const char *send = (const char *)a.send;
	char *recv = (char *)a.recv;
	const char *mine_ll = (const char *)(a.peer_ws[r] + PN_WS_LL) + (uint64_t)lpar * n * a.ll_slot_bytes;
	pn_wait_state w = { false };

	for (uint64_t k = b; k < ntiles; k += nb, tiles++) {
		const unsigned par = tiles & 1;
		const uint64_t base = k * tile_bytes;
		const uint64_t len = bytes - base < tile_bytes ? bytes - base : tile_bytes;
		const uint64_t slice = ((len + n - 1) / n + 15) / 16 * 16;

		for (int q = 1; q < n; q++) {
			int j = (r + q) % n;
			uint64_t off = (uint64_t)j * slice;

			if (off >= len)
				continue;
			pn_block_copy((char *)pn_scratch(a, j, b, par, r), send + base + off,
				      len - off < slice ? len - off : slice, false, sizeof(T));
		}
		pn_sync();
		seq++;
		if ((int)pn_tid() < n && (int)pn_tid() != r)
			pn_signal(a, (int)pn_tid(), b, seq, false);
		pn_wait_all(a, b, seq, false, w);

		/* my slice: reduce in rank order, keep it, send it as LL lines */
		uint64_t off = (uint64_t)r * slice;

		if (off < len) {
			const uint64_t nv = (len - off < slice ? len - off : slice) / 16;

			for (uint64_t v = pn_tid(); v < nv; v += nt) {
				pn_pack<T, OP, 16> pk;
				pn_v4 x[PN_AR_MAX_RANKS], o;
				const uint64_t line = (base + off + v * 16) / 8;

#pragma unroll
				for (int p = 0; p < PN_AR_MAX_RANKS; p++)
					if (p < n)
						x[p] = p == r ? pn_ld(send + base + off + v * 16)
							      : pn_ld_cg((const char *)pn_scratch(a, r, b, par, p) + v * 16);
				pk.first(&x[0]);
#pragma unroll
				for (int p = 1; p < PN_AR_MAX_RANKS; p++)
					if (p < n)
						pk.add(&x[p]);
				pk.out(&o, n, true);
#pragma unroll
				for (int q = 1; q < PN_AR_MAX_RANKS; q++) {
					if (q >= n)
						break;
					char *dst = (char *)(a.peer_ws[(r + q) % n] + PN_WS_LL) +
						    ((uint64_t)lpar * n + r) * a.ll_slot_bytes + line * 16;

					pn_maybe_yield();
					pn_ll_store(dst, o.x, o.y, epoch);
					pn_ll_store(dst + 16, o.z, o.w, epoch);
				}
				pn_st(recv + base + off + v * 16, o);
			}
		}
		/* the other slices of this tile, as their owners send them */
		for (int q = 1; q < n; q++) {
			const int j = (r + q) % n;
			const uint64_t offj = (uint64_t)j * slice;

			if (offj >= len)
				continue;
			const uint64_t nv = (len - offj < slice ? len - offj : slice) / 16;
			const char *src = mine_ll + (uint64_t)j * a.ll_slot_bytes;

			for (uint64_t v = pn_tid(); v < nv; v += nt) {
				const uint64_t line = (base + offj + v * 16) / 8;
				pn_v2 lo = pn_ll_wait(a, src + line * 16, epoch, j, w);
				pn_v2 hi = pn_ll_wait(a, src + line * 16 + 16, epoch, j, w);
				pn_v4 o = { lo.x, lo.y, hi.x, hi.y };

				pn_st(recv + base + offj + v * 16, o);
			}
		}
	}
	if (pn_tid() == 0) {
		cnt[PN_CNT_SEQ + b] = seq;
		cnt[PN_CNT_TILES + b] = tiles;
	}
	pn_ll_done(cnt, epoch);
}

/* ---- ring ---- */

template <typename T, int OP> PN_DEV void pn_ar_ring(const struct pn_ar_args &a)
{
	const int n = a.nranks, r = a.rank, next = (r + 1) % n, prev = (r + n - 1) % n;
	const unsigned b = pn_bid(), nb = pn_nbid();
	uint32_t *cnt = pn_ws_u32(a.peer_ws[r], PN_WS_COUNTERS);
	uint32_t seq = cnt[PN_CNT_SEQ + b], tiles = cnt[PN_CNT_TILES + b];
	const uint32_t kc = cnt[PN_CNT_KERNELS + b] + 1;
	const uint64_t bytes = a.count * sizeof(T), tile_bytes = (uint64_t)a.tile * n;
	const uint64_t ntiles = (bytes + tile_bytes - 1) / tile_bytes;
	const char *send = (const char *)a.send;
	char *recv = (char *)a.recv, *nrecv = (char *)a.peer_recv[next];
	const uint32_t *from_prev = pn_ws_u32(a.peer_ws[r], PN_WS_FLAGS) + b * PN_AR_MAX_RANKS + prev;
	pn_wait_state w = { false };
	bool ok = true, checked = false;

	/* prev stores into my recv: tell it which buffer this is */
	if (pn_tid() == 0) {
		uint64_t *d = (uint64_t *)(a.peer_ws[prev] + PN_WS_DESCS) + (uint64_t)b * PN_AR_MAX_RANKS + r;

		pn_st_volatile_u64(d, a.desc);
		pn_st_release(pn_ws_u32(a.peer_ws[prev], PN_WS_BFLAGS) + b * PN_AR_MAX_RANKS + r, kc);
	}
	for (uint64_t k = b; k < ntiles; k += nb, tiles++) {
		const unsigned par = tiles & 1;
		const uint64_t base = k * tile_bytes;
		const uint64_t len = bytes - base < tile_bytes ? bytes - base : tile_bytes;
		const uint64_t c = ((len + n - 1) / n + 15) / 16 * 16;
#define PN_CHUNK_LEN(ch) ((uint64_t)(ch) * c >= len ? 0 : (len - (uint64_t)(ch) * c < c ? len - (uint64_t)(ch) * c : c))

		/* reduce-scatter: step s sends chunk r-s (own data + what came from prev) */
		for (int s = 0; s < n - 1; s++) {
			int ch = (r - s + n) % n;
			uint64_t off = (uint64_t)ch * c, l = PN_CHUNK_LEN(ch);
			char *dst = (char *)pn_scratch(a, next, b, par, s);

			if (l && s == 0) {
				pn_block_copy(dst, send + base + off, l, false, sizeof(T));
			} else if (l) {
				const char *src[PN_AR_MAX_RANKS] = { (const char *)pn_scratch(a, r, b, par, s - 1),
								     send + base + off };
				const bool remote[PN_AR_MAX_RANKS] = { true, false };
				char *pdst[PN_AR_MAX_RANKS] = { NULL };

				pn_block_reduce<T, OP>(src, remote, 2, dst, pdst, 0, l, n, false);
			}
			pn_sync();
			seq++;
			if (pn_tid() == 0) {
				pn_maybe_yield();
				pn_st_release(pn_ws_u32(a.peer_ws[next], PN_WS_FLAGS) + b * PN_AR_MAX_RANKS + r, seq);
				pn_wait_flag(a, from_prev, seq, prev, w);
			}
			pn_sync();
		}
		if (!checked) {
			int bad = 0;

			if (pn_tid() == 0) {
				const uint32_t *bf = pn_ws_u32(a.peer_ws[r], PN_WS_BFLAGS) + b * PN_AR_MAX_RANKS + next;
				const uint64_t *d = (const uint64_t *)(a.peer_ws[r] + PN_WS_DESCS) +
						    (uint64_t)b * PN_AR_MAX_RANKS + next;

				pn_wait_flag(a, bf, kc, next, w);
				if (w.dead) {
					bad = 1;
				} else if (pn_ld_volatile_u64(d) != a.desc) {
					pn_fail(a, PN_ERR_DESC, (uint32_t)next);
					bad = 1;
				}
			}
			if (pn_sync_or(bad))
				ok = false;
			checked = true;
		}
		/* the chunk r+1 is complete here: finish it, start the all-gather */
		{
			int ch = (r + 1) % n;
			uint64_t off = (uint64_t)ch * c, l = PN_CHUNK_LEN(ch);

			if (l) {
				const char *src[PN_AR_MAX_RANKS] = { (const char *)pn_scratch(a, r, b, par, n - 2),
								     send + base + off };
				const bool remote[PN_AR_MAX_RANKS] = { true, false };
				char *pdst[PN_AR_MAX_RANKS] = { nrecv + base + off };

				pn_block_reduce<T, OP>(src, remote, 2, recv + base + off, pdst, ok ? 1 : 0,
						       l, n, true);
			}
		}
		pn_sync();
		seq++;
		if (pn_tid() == 0)
			pn_st_release(pn_ws_u32(a.peer_ws[next], PN_WS_FLAGS) + b * PN_AR_MAX_RANKS + r, seq);
		/* all-gather: forward what prev stored into my recv */
		for (int s = 1; s < n - 1; s++) {
			int ch = (r + 1 - s + n) % n;
			uint64_t off = (uint64_t)ch * c, l = PN_CHUNK_LEN(ch);

			if (pn_tid() == 0)
				pn_wait_flag(a, from_prev, seq, prev, w);
			pn_sync();
			if (l && ok)
				pn_block_copy(nrecv + base + off, recv + base + off, l, true, sizeof(T));
			pn_sync();
			seq++;
			if (pn_tid() == 0) {
				pn_maybe_yield();
				pn_st_release(pn_ws_u32(a.peer_ws[next], PN_WS_FLAGS) + b * PN_AR_MAX_RANKS + r, seq);
			}
		}
		if (pn_tid() == 0)
			pn_wait_flag(a, from_prev, seq, prev, w);
		pn_sync();
#undef PN_CHUNK_LEN
	}
	if (pn_tid() == 0) {
		cnt[PN_CNT_SEQ + b] = seq;
		cnt[PN_CNT_TILES + b] = tiles;
		cnt[PN_CNT_KERNELS + b] = kc;
	}
}

#define PN_AR_KERNEL(algo, T, tname, OP, oname)                                                 \
	extern "C" __global__ void PN_BOUNDS pn_ar_##algo##_##tname##_##oname(struct pn_ar_args a) \
	{                                                                                      \
		pn_pdl_wait();                                                                 \
		pn_pdl_trigger();                                                              \
		pn_ar_##algo<T, OP>(a);                                                        \
	}
#define PN_AR_OPS(algo, T, tname)                                                              \
	PN_AR_KERNEL(algo, T, tname, PENNY_SUM, sum)                                           \
	PN_AR_KERNEL(algo, T, tname, PENNY_PROD, prod)                                         \
	PN_AR_KERNEL(algo, T, tname, PENNY_MIN, min)                                           \
	PN_AR_KERNEL(algo, T, tname, PENNY_MAX, max)                                           \
	PN_AR_KERNEL(algo, T, tname, PENNY_AVG, avg)

#ifndef PN_AR_ALGO
#define PN_AR_ALGO_LIST(X) X(oneshot) X(oneshot_fl) X(twoshot_ll) X(twoshot) X(ring) X(twoshot_hy)
#else
#define PN_AR_ALGO_LIST(X) X(PN_AR_ALGO)
#endif

#define PN_AR_TYPES(algo)                                                                      \
	PN_AR_OPS(algo, int8_t, int8)                                                          \
	PN_AR_OPS(algo, uint8_t, uint8)                                                        \
	PN_AR_OPS(algo, int32_t, int32)                                                        \
	PN_AR_OPS(algo, uint32_t, uint32)                                                      \
	PN_AR_OPS(algo, int64_t, int64)                                                        \
	PN_AR_OPS(algo, uint64_t, uint64)                                                      \
	PN_AR_OPS(algo, pn_half_t, half)                                                       \
	PN_AR_OPS(algo, pn_bf16_t, bfloat16)                                                   \
	PN_AR_OPS(algo, float, float)                                                          \
	PN_AR_OPS(algo, double, double)

PN_AR_ALGO_LIST(PN_AR_TYPES)
