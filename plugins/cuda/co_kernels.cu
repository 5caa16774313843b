/* SPDX-License-Identifier: MIT */
/*
 * penny's other collectives over CUDA IPC (NVLink) on one node:
 * reduce-scatter, reduce (to a root), all-to-all, broadcast, send/recv (a
 * ring of pairs) and all-gather, in the allreduce's one-shot-with-flags
 * scheme (ar_kernels.cu, pn_ar_oneshot_fl):
 *
 *  - The buffer (each rank's block of it, for reduce-scatter, all-to-all and
 *    all-gather) is cut into tiles of at most slot_bytes; block b takes
 *    tiles b, b + grid, ...
 *  - Push: for tile k, every rank stores what rank j needs of it (its block
 *    j; its whole tile for the root, the next rank, every rank) into slot
 *    [rank] of rank j's scratch (plain 16-byte stores into the peer); every
 *    read of a user buffer is local.
 *  - One flag round per tile: __syncthreads, one st.release.sys flag to
 *    every peer, a timed wait for every peer's (a wait past timeout_ns
 *    records PN_ERR_TIMEOUT naming the peer and, from pn_ar_args.coll, the
 *    collective, and the kernel finishes).
 *  - Consume: each rank reads its own scratch slots (ld.cg) into its recv;
 *    reductions in rank order 0..n-1 as the allreduce's (PENNY_AVG divides
 *    the sum by n once), so results are bit-identical to the allreduce's.
 *
 * Nothing is written into a peer's user buffer, so any buffers do (no
 * registration, no staging); a tile's own data is pushed before the flag
 * and its recv written after it, by the same block, so in place (nccl-tests'
 * placement) is safe.  Every rank signals every peer in every tile, which
 * keeps the scratch parity argument of pn_ar_oneshot_fl: a rank writes a
 * peer's slot of parity p for tile t + 2 only after that peer's flag of tile
 * t + 1, which the peer raised after reading tile t.  The flags, sequence
 * and tile counters are the allreduce kernels' (per block, in device
 * memory): calls of every kind interleave on one stream and CUDA-graph
 * replays are safe.
 *
 * Small calls (a.ll, chosen by the host with pn_co_ll_fits) take LL lines
 * instead, as the allreduce's one-shot does (ar_kernels.cu): pn_co_ll.
 */
#include "ar_sync.cuh"

/* What rank r pushes to rank j (NULL: nothing) for collective K. */
template <int K>
PN_DEV const char *pn_co_push_src(const struct pn_ar_args &a, int j, uint64_t bytes)
{
	const char *send = (const char *)a.send;
	const int r = a.rank, n = a.nranks;

	switch (K) {
	case PN_CO_REDUCE_SCATTER:
	case PN_CO_ALLTOALL:
		return send + (uint64_t)j * bytes;
	case PN_CO_REDUCE:
		return j == a.root ? send : NULL;
	case PN_CO_BROADCAST:
		return r == a.root ? send : NULL;
	case PN_CO_SENDRECV:
		return j == (r + 1) % n ? send : NULL;
	default: /* all-gather */
		return send;
	}
}

/* Consume tile [base, base + len) of every block from the scratch slots. */
template <int K, typename T, int OP>
PN_DEV void pn_co_consume(const struct pn_ar_args &a, unsigned b, unsigned par, uint64_t base,
			  uint64_t len, uint64_t bytes, unsigned es)
{
	const int n = a.nranks, r = a.rank;
	const char *send = (const char *)a.send;
	char *recv = (char *)a.recv;

	if constexpr (K == PN_CO_REDUCE_SCATTER || K == PN_CO_REDUCE) {
		const char *src[PN_AR_MAX_RANKS];
		bool remote[PN_AR_MAX_RANKS];
		char *pdst[PN_AR_MAX_RANKS];
		const char *mine = send + (K == PN_CO_REDUCE_SCATTER ? (uint64_t)r * bytes : 0) + base;

		if (K == PN_CO_REDUCE && r != a.root)
			return;
#pragma unroll
		for (int p = 0; p < PN_AR_MAX_RANKS; p++) {
			src[p] = p == r ? mine : (p < n ? (const char *)pn_scratch(a, r, b, par, p) : mine);
			remote[p] = p != r;
			pdst[p] = NULL;
		}
		pn_block_reduce<T, OP>(src, remote, n, recv + base, pdst, 0, len, n, true);
	} else if constexpr (K == PN_CO_ALLTOALL || K == PN_CO_ALLGATHER) {
		for (int q = 0; q < n; q++) {
			const int p = (r + q) % n;
			char *dst = recv + (uint64_t)p * bytes + base;

			if (p != r)
				pn_block_copy(dst, (const char *)pn_scratch(a, r, b, par, p), len, true, es);
			else if (K == PN_CO_ALLTOALL && dst != send + (uint64_t)r * bytes + base)
				pn_block_copy(dst, send + (uint64_t)r * bytes + base, len, false, es);
			else if (K == PN_CO_ALLGATHER && dst != send + base)
				pn_block_copy(dst, send + base, len, false, es);
		}
	} else {
		/* broadcast: the root's slot; send/recv: the previous rank's */
		const int from = K == PN_CO_BROADCAST ? a.root : (r + n - 1) % n;

		if (from != r)
			pn_block_copy(recv + base, (const char *)pn_scratch(a, r, b, par, from), len, true, es);
		else if (recv != send)
			pn_block_copy(recv + base, send + base, len, false, es);
	}
}

/* Line i of a buffer of bytes at any alignment (the LL path takes any
 * buffers: every rank must choose it alike). */
PN_DEV pn_v2 pn_co_ld8(const char *p, uint64_t i, uint64_t bytes)
{
	pn_v2 d = { 0, 0 };

	if (!((uintptr_t)(p + i * 8) & 7))
		return pn_load8(p, i, bytes);
	pn_ld_bytes(&d, p + i * 8, (unsigned)(bytes - i * 8 < 8 ? bytes - i * 8 : 8), false);
	return d;
}

/* Store line i of a buffer of bytes at any element-aligned address (16-bit
 * halves where it allows: pn_st_bytes). */
PN_DEV void pn_co_st8(char *p, uint64_t i, uint64_t bytes, pn_v2 v)
{
	if (!((uintptr_t)(p + i * 8) & 7))
		pn_store8(p, i, bytes, v);
	else
		pn_st_bytes(p + i * 8, &v, (unsigned)(bytes - i * 8 < 8 ? bytes - i * 8 : 8));
}

/*
 * LL lines, for small calls: no flag round, no fence.  What rank r pushes
 * to rank j (pn_co_push_src) goes as LL lines (8 data bytes + the call's
 * epoch twice, one 16-byte store) into slot [r] of j's LL area, of the
 * epoch's parity; each rank polls the lines of the slots it consumes and
 * reduces (in rank order, as the allreduce) or copies them into its recv.
 * The one-shot's parity argument needs every rank to hear from every peer
 * in every call, which broadcast, reduce and send/recv do not: so every
 * rank also stores a token line (the slot's last, which data never
 * reaches: pn_co_ll_fits) into every peer, and waits for every peer's
 * before the kernel ends.  A rank then writes a slot of parity p for call
 * k + 2 only after its call k + 1 heard the peer's token, which the peer
 * stored after finishing call k.  The same thread handles line i in every
 * loop (of every block of a per-rank kind), so in place is safe.
 */
template <int K, typename T, int OP> PN_DEV void pn_co_ll(const struct pn_ar_args &a)
{
	const int n = a.nranks, r = a.rank;
	const unsigned es = PN_CO_REDUCES(K) ? (unsigned)sizeof(T) : a.esize;
	uint32_t *cnt = pn_ws_u32(a.peer_ws[r], PN_WS_COUNTERS);
	const uint32_t epoch = cnt[PN_CNT_LL_EPOCH] + 1, par = epoch & 1;
	const uint64_t bytes = a.count * es, lines = (bytes + 7) / 8;
	const uint64_t tok = (a.ll_slot_bytes / 16 - 1) * 16;
	const uint64_t stride = (uint64_t)pn_nbid() * pn_ntid();
	const uint64_t first = (uint64_t)pn_bid() * pn_ntid() + pn_tid();
	const char *send = (const char *)a.send;
	char *recv = (char *)a.recv;
	const char *mine = (const char *)(a.peer_ws[r] + PN_WS_LL) + (uint64_t)par * n * a.ll_slot_bytes;
	const bool tokens = pn_bid() == 0 && (int)pn_tid() < n && (int)pn_tid() != r;
	pn_wait_state w = { false };

	if (tokens)
		pn_ll_store((char *)(a.peer_ws[pn_tid()] + PN_WS_LL) +
				    ((uint64_t)par * n + r) * a.ll_slot_bytes + tok,
			    0, 0, epoch);
	for (int q = 1; q < n; q++) {
		const int j = (r + q) % n;
		const char *src = pn_co_push_src<K>(a, j, bytes);
		char *dst = (char *)(a.peer_ws[j] + PN_WS_LL) + ((uint64_t)par * n + r) * a.ll_slot_bytes;

		if (!src)
			continue;
		for (uint64_t i = first; i < lines; i += stride) {
			pn_v2 d = pn_co_ld8(src, i, bytes);

			pn_maybe_yield();
			pn_ll_store(dst + i * 16, d.x, d.y, epoch);
		}
	}
	if constexpr (K == PN_CO_REDUCE_SCATTER || K == PN_CO_REDUCE) {
		const char *own = send + (K == PN_CO_REDUCE_SCATTER ? (uint64_t)r * bytes : 0);

		if (K == PN_CO_REDUCE_SCATTER || r == a.root)
			for (uint64_t i = first; i < lines; i += stride)
				pn_co_st8(recv, i, bytes,
					  pn_ll_reduce8<T, OP>(a, mine, pn_co_ld8(own, i, bytes), i, epoch,
							       w));
	} else if constexpr (K == PN_CO_ALLTOALL || K == PN_CO_ALLGATHER) {
		const char *own = send + (K == PN_CO_ALLTOALL ? (uint64_t)r * bytes : 0);

		for (int q = 0; q < n; q++) {
			const int p = (r + q) % n;
			char *dst = recv + (uint64_t)p * bytes;

			if (p == r && dst == own)
				continue;
			for (uint64_t i = first; i < lines; i += stride)
				pn_co_st8(dst, i, bytes,
					  p == r ? pn_co_ld8(own, i, bytes)
						 : pn_ll_wait(a, mine + (uint64_t)p * a.ll_slot_bytes + i * 16,
							      epoch, p, w));
		}
	} else {
		/* broadcast: the root's lines; send/recv: the previous rank's */
		const int from = K == PN_CO_BROADCAST ? a.root : (r + n - 1) % n;

		if (from != r || recv != send)
			for (uint64_t i = first; i < lines; i += stride)
				pn_co_st8(recv, i, bytes,
					  from == r ? pn_co_ld8(send, i, bytes)
						    : pn_ll_wait(a, mine + (uint64_t)from * a.ll_slot_bytes +
									 i * 16,
							         epoch, from, w));
	}
	if (tokens)
		pn_ll_wait(a, mine + (uint64_t)pn_tid() * a.ll_slot_bytes + tok, epoch, (int)pn_tid(), w);
	pn_ll_done(cnt, epoch);
}

/*
 * Broadcast and reduce in two steps (a.two: the host's choice for 3 or more
 * ranks at the flag kernels' sizes).  In one step the root's links carry
 * the tile once a peer, n - 1 times its bytes, where a ring carries it
 * once.  Here a tile is cut into n - 1 pieces, piece i belonging to the
 * non-root rank root + 1 + i, and no GPU sends or receives more than the
 * tile:
 *  - broadcast: step 1, the root pushes piece i to its rank; step 2, each
 *    non-root copies its piece into its recv and pushes it to every other
 *    non-root, which copies the pieces into its recv.
 *  - reduce: step 1, every rank pushes piece i of its send to rank i (its
 *    own piece stays); step 2, each non-root reduces its piece in rank
 *    order 0..n-1 (the one-step kernel's order: the same bits) straight
 *    into the root's scratch, and the root copies the pieces into its recv.
 * Each step is a flag round of the tile loop (a tile counts twice in the
 * scratch parity and the flag sequence), and step 2's pushes happen after
 * step 1's round, into the next parity: pn_co's parity argument holds as
 * it stands, and one-step and two-step calls mix on one workspace.
 */
PN_DEV int pn_co_two_idx(const struct pn_ar_args &a, int j)
{
	return (j - a.root - 1 + a.nranks) % a.nranks;
}

/* Piece i of a tile of len bytes: its offset, and its length in *plen
 * (16-byte multiples but the last; 0 past the end). */
PN_DEV uint64_t pn_co_two_piece(const struct pn_ar_args &a, uint64_t len, int i, uint64_t *plen)
{
	const uint64_t m = (uint64_t)a.nranks - 1, sub = ((len + m - 1) / m + 15) / 16 * 16;
	const uint64_t off = (uint64_t)i * sub < len ? (uint64_t)i * sub : len;

	*plen = len - off < sub ? len - off : sub;
	return off;
}

/* Step 1's pushes of the tile [base, base + len). */
template <int K>
PN_DEV void pn_co_two_push(const struct pn_ar_args &a, unsigned b, unsigned par, uint64_t base,
			   uint64_t len, unsigned es)
{
	const int n = a.nranks, r = a.rank;
	const char *send = (const char *)a.send + base;

	if (K == PN_CO_BROADCAST && r != a.root)
		return;
	for (int i = 0; i < n - 1; i++) {
		const int j = (a.root + 1 + i) % n;
		uint64_t pl;
		const uint64_t po = pn_co_two_piece(a, len, i, &pl);

		if (j != r && pl)
			pn_block_copy((char *)pn_scratch(a, j, b, par, r), send + po, pl, false, es);
	}
}

/* After step's flag round: what this rank takes from its scratch (par),
 * and after step 1 the pushes of step 2 (the next parity). */
template <int K, typename T, int OP>
PN_DEV void pn_co_two_consume(const struct pn_ar_args &a, unsigned b, unsigned par, uint64_t base,
			      uint64_t len, unsigned es, int step)
{
	const int n = a.nranks, r = a.rank, me = pn_co_two_idx(a, r);
	const char *send = (const char *)a.send + base;
	char *recv = (char *)a.recv + base;
	uint64_t ml;
	const uint64_t mo = pn_co_two_piece(a, len, me, &ml);

	if (step == 0 && r == a.root) {
		if (K == PN_CO_BROADCAST && recv != send)
			pn_block_copy(recv, send, len, false, es);
		return;
	}
	if (step == 0) {
		if constexpr (K == PN_CO_BROADCAST) {
			const char *mine = (const char *)pn_scratch(a, r, b, par, a.root);

			pn_block_copy(recv + mo, mine, ml, true, es);
			for (int q = 1; q < n; q++) {
				const int j = (r + q) % n;

				if (j != a.root && ml)
					pn_block_copy((char *)pn_scratch(a, j, b, par ^ 1, r), mine, ml, true,
						      es);
			}
		} else {
			const char *src[PN_AR_MAX_RANKS];
			bool remote[PN_AR_MAX_RANKS];
			char *pdst[PN_AR_MAX_RANKS];

#pragma unroll
			for (int p = 0; p < PN_AR_MAX_RANKS; p++) {
				src[p] = p == r || p >= n ? send + mo
							  : (const char *)pn_scratch(a, r, b, par, p);
				remote[p] = p != r;
				pdst[p] = NULL;
			}
			if (ml)
				pn_block_reduce<T, OP>(src, remote, n,
						       (char *)pn_scratch(a, a.root, b, par ^ 1, r), pdst,
						       0, ml, n, true);
		}
		return;
	}
	/* step 2: the other non-roots' pieces (broadcast), every non-root's
	 * reduced piece (reduce, at the root) */
	if (K == PN_CO_BROADCAST ? r == a.root : r != a.root)
		return;
	for (int q = 1; q < n; q++) {
		const int j = (r + q) % n;
		uint64_t pl;
		const uint64_t po = pn_co_two_piece(a, len, pn_co_two_idx(a, j), &pl);

		if (j != a.root && pl)
			pn_block_copy(recv + po, (const char *)pn_scratch(a, r, b, par, j), pl, true, es);
	}
}

template <int K, typename T, int OP> PN_DEV void pn_co(const struct pn_ar_args &a)
{
	const int n = a.nranks, r = a.rank;
	const unsigned b = pn_bid(), nb = pn_nbid();
	const unsigned es = PN_CO_REDUCES(K) ? (unsigned)sizeof(T) : a.esize;
	uint32_t *cnt = pn_ws_u32(a.peer_ws[r], PN_WS_COUNTERS);
	uint32_t seq = cnt[PN_CNT_SEQ + b], tiles = cnt[PN_CNT_TILES + b];
	const uint64_t bytes = a.count * es, tile = a.tile;
	const uint64_t ntiles = (bytes + tile - 1) / tile;
	const bool two = (K == PN_CO_BROADCAST || K == PN_CO_REDUCE) && a.two;
	pn_wait_state w = { false };

	if (a.ll) {
		pn_co_ll<K, T, OP>(a);
		return;
	}
	for (uint64_t k = b; k < ntiles; k += nb) {
		const uint64_t base = k * tile;
		const uint64_t len = bytes - base < tile ? bytes - base : tile;

		for (int step = 0; step < (two ? 2 : 1); step++, tiles++) {
			const unsigned par = tiles & 1;

			if constexpr (K == PN_CO_BROADCAST || K == PN_CO_REDUCE) {
				if (two && !step)
					pn_co_two_push<K>(a, b, par, base, len, es);
			}
			if (!two) {
				for (int q = 1; q < n; q++) {
					const int j = (r + q) % n;
					const char *src = pn_co_push_src<K>(a, j, bytes);

					if (src)
						pn_block_copy((char *)pn_scratch(a, j, b, par, r), src + base,
							      len, false, es);
				}
			}
			pn_sync();
			seq++;
			if ((int)pn_tid() < n && (int)pn_tid() != r)
				pn_signal(a, (int)pn_tid(), b, seq, false);
			pn_wait_all(a, b, seq, false, w);
			if constexpr (K == PN_CO_BROADCAST || K == PN_CO_REDUCE) {
				if (two) {
					pn_co_two_consume<K, T, OP>(a, b, par, base, len, es, step);
					continue;
				}
			}
			pn_co_consume<K, T, OP>(a, b, par, base, len, bytes, es);
		}
	}
	if (pn_tid() == 0) {
		cnt[PN_CNT_SEQ + b] = seq;
		cnt[PN_CNT_TILES + b] = tiles;
	}
}

#define PN_CO_KERNEL(name, K, T, tname, OP, oname)                                              \
	extern "C" __global__ void PN_BOUNDS pn_co_##name##_##tname##_##oname(struct pn_ar_args a) \
	{                                                                                      \
		pn_pdl_wait();                                                                 \
		pn_pdl_trigger();                                                              \
		pn_co<K, T, OP>(a);                                                            \
	}
#define PN_CO_OPS(name, K, T, tname)                                                           \
	PN_CO_KERNEL(name, K, T, tname, PENNY_SUM, sum)                                        \
	PN_CO_KERNEL(name, K, T, tname, PENNY_PROD, prod)                                      \
	PN_CO_KERNEL(name, K, T, tname, PENNY_MIN, min)                                        \
	PN_CO_KERNEL(name, K, T, tname, PENNY_MAX, max)                                        \
	PN_CO_KERNEL(name, K, T, tname, PENNY_AVG, avg)
#define PN_CO_TYPES(name, K)                                                                   \
	PN_CO_OPS(name, K, int8_t, int8)                                                       \
	PN_CO_OPS(name, K, uint8_t, uint8)                                                     \
	PN_CO_OPS(name, K, int32_t, int32)                                                     \
	PN_CO_OPS(name, K, uint32_t, uint32)                                                   \
	PN_CO_OPS(name, K, int64_t, int64)                                                     \
	PN_CO_OPS(name, K, uint64_t, uint64)                                                   \
	PN_CO_OPS(name, K, pn_half_t, half)                                                    \
	PN_CO_OPS(name, K, pn_bf16_t, bfloat16)                                                \
	PN_CO_OPS(name, K, float, float)                                                       \
	PN_CO_OPS(name, K, double, double)

PN_CO_TYPES(reduce_scatter, PN_CO_REDUCE_SCATTER)
PN_CO_TYPES(reduce, PN_CO_REDUCE)

/* The copies move bytes: one kernel each, the element size in the arguments. */
#define PN_CO_COPY(name, K)                                                                     \
	extern "C" __global__ void PN_BOUNDS pn_co_##name(struct pn_ar_args a)                   \
	{                                                                                      \
		pn_pdl_wait();                                                                 \
		pn_pdl_trigger();                                                              \
		pn_co<K, uint8_t, PENNY_SUM>(a);                                               \
	}
PN_CO_COPY(alltoall, PN_CO_ALLTOALL)
PN_CO_COPY(broadcast, PN_CO_BROADCAST)
PN_CO_COPY(sendrecv, PN_CO_SENDRECV)
PN_CO_COPY(allgather, PN_CO_ALLGATHER)
