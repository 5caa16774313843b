/* SPDX-License-Identifier: MIT */
/*
 * penny's cross-node kernels (struct pn_xn_args): pn_xn_<type>_<op>, the
 * allreduce, reduce and reduce_scatter, and pn_xn_copy, the allgather,
 * broadcast, alltoall and sendrecv (penny_plugin_v1.xnode_allreduce and
 * xnode_coll).
 *
 * Across nodes: chunk c of what this node sends (a.send; pn_xn_coll_args
 * picks it) goes into outbox ticket base + c for the core's proxy thread,
 * which sends it to the nodes of its mask (a.to); with a.sstride, chunk c
 * of block q goes to node q alone, each node of a.to in turn from node +
 * 1 on, in tickets base + c * |to| + j.  The proxy counts chunks per pair
 * of nodes: chunk c from node q arrives in inbox slot (base_q + c) % slots
 * of ring q, base_q counting q's chunks to this node only.  Each block
 * takes chunks c = block, block + grid, ...: it waits for its outbox slots
 * to be free (the proxy sent the tickets slots before), copies the chunks
 * in, raises ready (st.release.sys after __syncthreads: cumulative over
 * the block's stores), waits for the chunk of every node it hears from in
 * this call (a.from), reduces them in node order with this node's operand
 * into recv, or copies node q's into recv + q * rstride (and this node's
 * own block into its place), and frees the inbox slots.  A node that
 * sends nothing in a call (broadcast's others, reduce's root) skips the
 * outbox; one that hears from nobody (broadcast's root, reduce's others)
 * skips the inbox.  Every block is resident at once (grid <= slots and
 * SMs), and a chunk's tickets come before the next chunk's, so the lowest
 * unfinished chunk can always go on.  The tickets live in device memory
 * (the last block moves them on, the outbox's by the call's tickets, node
 * q's where it heard from q, the epoch by the call's chunks): graph
 * replays are safe.  The
 * waits end on the proxy's abort word or after timeout_ns (PN_ERR_XNODE /
 * PN_ERR_TIMEOUT).  Buffers may sit at any element boundary (the blocks of
 * a rail inside a larger buffer): 16-byte vectors where aligned, elements
 * otherwise (one per thread, so a warp's reads and writes of a box still
 * coalesce into whole sectors over PCIe).
 */
#include "ar_block.cuh"

PN_DEV uint64_t pn_ld_acquire_u64(const uint64_t *p)
{
#ifndef PN_EMU
	uint64_t v;

	asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
	return v;
#else
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
#endif
}

PN_DEV void pn_st_release_u64(uint64_t *p, uint64_t v)
{
#ifndef PN_EMU
	asm volatile("st.release.sys.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
#else
	__atomic_store_n(p, v, __ATOMIC_RELEASE);
#endif
}

PN_DEV void pn_xn_fail(const struct pn_xn_args &a, uint32_t bit, int node)
{
	uint32_t *e = (uint32_t *)a.err;

	pn_atomic_or(&e[0], bit);
	e[1] = PN_ERR_DETAIL((uint32_t)node & 0xffffu, a.coll);
}

/*
 * A waiting thread's check every 256 spins: false, with the error word set,
 * when the proxy gave up (its abort word) or the wait passed the timeout.
 */
PN_DEV bool pn_xn_alive(const struct pn_xn_args &a, uint32_t &spins, uint64_t &t0, int node)
{
	if (++spins < 256)
		return true;
	spins = 0;
	if (pn_ld_volatile_u64((const uint64_t *)a.ctl)) {
		pn_xn_fail(a, PN_ERR_XNODE, node);
		return false;
	}
	uint64_t now = pn_clock_ns();

	if (!t0) {
		t0 = now;
	} else if (now - t0 > a.timeout_ns) {
		pn_xn_fail(a, PN_ERR_TIMEOUT, node);
		return false;
	}
	return true;
}

/* Wait until *w >= v (thread 0 of a block); false when the call is dead. */
PN_DEV bool pn_xn_wait(const struct pn_xn_args &a, const uint64_t *w, uint64_t v, int node)
{
	uint32_t spins = 0;
	uint64_t t0 = 0;

	while (pn_ld_acquire_u64(w) < v) {
		pn_pause();
		if (!pn_xn_alive(a, spins, t0, node))
			return false;
	}
	return true;
}

/* The last len % 16 bytes of a chunk, one element per thread: the N
 * sources reduced into dst. */
template <typename T, int OP>
PN_DEV void pn_xn_tail_reduce(const char *const *src, const bool *remote, int nsrc, char *dst,
			      uint64_t from, uint64_t len, int n)
{
	typedef typename pn_xraw<sizeof(T)>::U U;

	for (uint64_t o = from + (uint64_t)pn_tid() * sizeof(T); o < len; o += pn_ntid() * sizeof(T)) {
		pn_pack<T, OP, sizeof(T)> pk;

		for (int s = 0; s < nsrc; s++) {
			U u = remote[s] ? *(const volatile U *)(src[s] + o) : *(const U *)(src[s] + o);

			if (s == 0)
				pk.first(&u);
			else
				pk.add(&u);
		}
		U r;

		pk.out(&r, n, true);
		*(U *)(dst + o) = r;
	}
}

/*
 * LL across nodes (small calls): a chunk travels as 16-byte lines of 8 data
 * bytes and two copies of a flag (low 32 bits of epoch + c + 1 for chunk c
 * of a call, epoch being the chunks of the calls before it: the same on
 * every node, so both ends know it whatever the tickets and counts, and it
 * only grows in a slot), the format of pn_ll_store.  The receiving threads poll their own lines in the inbox:
 * the data comes with its flag in one read over PCIe, where the plain
 * protocol reads the slot's header, then the data.  The proxy moves the
 * bytes unchanged.  Twice the bytes on the wire: small calls only.
 */
PN_DEV pn_v4 pn_xn_ld_part(const char *p, uint64_t n)
{
	pn_v4 x = { 0, 0, 0, 0 };

	if (n >= 16 && !((uintptr_t)p & 15))
		return pn_ld(p);
	pn_ld_bytes(&x, p, (unsigned)(n < 16 ? n : 16), false);
	return x;
}

/* The first min(n, 16) bytes of x to p (any element boundary). */
PN_DEV void pn_xn_st_part(char *p, const pn_v4 &x, uint64_t n)
{
	if (n >= 16 && !((uintptr_t)p & 15))
		pn_st(p, x);
	else
		pn_st_bytes(p, &x, (unsigned)(n < 16 ? n : 16));
}

/* Wait for the 32 bytes of LL lines at p to carry flag f; false: the call is dead. */
PN_DEV bool pn_xn_ll_wait(const struct pn_xn_args &a, const char *p, uint32_t f, int node,
			  pn_v4 *out)
{
	uint32_t spins = 0;
	uint64_t t0 = 0;

	for (;;) {
		pn_v4 u = pn_ll_load(p), w = pn_ll_load(p + 16);

		if (u.y == f && u.w == f && w.y == f && w.w == f) {
			pn_v4 x = { u.x, u.z, w.x, w.z };

			*out = x;
			return true;
		}
		pn_pause();
		if (!pn_xn_alive(a, spins, t0, node))
			return false;
	}
}

/* outbox slots whose sent words a block reads up front (threads 32..) */
#define PN_XN_PREFETCH 32

/*
 * Chunk [0, len) of src into outbox slot t: LL lines (flag f) or plain
 * bytes, elements of es bytes.  from_v0: the block's first chunk of a small
 * call, whose 16 bytes per thread are in v0 already (read before the slot
 * was free).
 */
PN_DEV void pn_xn_put(const struct pn_xn_args &a, const char *src, uint64_t t, uint32_t f,
		      uint64_t len, unsigned es, bool from_v0, const pn_v4 &v0)
{
	char *dst = (char *)(a.out_data + (t % a.slots) * a.stride);

	if (a.ll) {
		const uint64_t nv = (len + 15) / 16;

		for (uint64_t v = pn_tid(); v < nv; v += pn_ntid()) {
			pn_v4 x = from_v0 && v == pn_tid() && v * 16 + 16 <= len
					  ? v0
					  : pn_xn_ld_part(src + v * 16, len - v * 16);

			pn_ll_store(dst + v * 32, x.x, x.y, f);
			pn_ll_store(dst + v * 32 + 16, x.z, x.w, f);
		}
	} else if (from_v0) {
		const uint64_t main = len & ~(uint64_t)15;

		if ((uint64_t)pn_tid() * 16 + 16 <= main)
			pn_st(dst + (uint64_t)pn_tid() * 16, v0);
		pn_block_copy(dst + main, src + main, len - main, false, es);
	} else {
		pn_block_copy(dst, src, len, false, es);
	}
}

/* The inbox slot of node q's ticket k: its header, its data. */
PN_DEV uint64_t *pn_xn_in_hdr(const struct pn_xn_args &a, int q, uint64_t k)
{
	return (uint64_t *)(a.in_hdr + ((uint64_t)q * a.slots + k % a.slots) * PN_XSLOT);
}

PN_DEV const char *pn_xn_in_data(const struct pn_xn_args &a, int q, uint64_t k)
{
	return (const char *)(a.in_data + ((uint64_t)q * a.slots + k % a.slots) * a.stride);
}

/*
 * Chunk c's LL lines from every other node, each line waited for on its
 * own, reduced with this node's [0, len) of own into recv (the kinds that
 * reduce hear from every other node when they hear from any).  A thread
 * whose wait fails sets dead (the block's shared word), which ends every
 * thread's loop.
 */
template <typename T, int OP>
PN_DEV void pn_xn_reduce_ll(const struct pn_xn_args &a, const uint64_t *base_in, uint64_t c,
			    uint32_t f, const char *own, char *recv, uint64_t len, int &dead)
{
	const int N = a.nnodes, me = a.node;
	const uint64_t nv = (len + 15) / 16;

	for (uint64_t v = pn_tid(); v < nv && !dead; v += pn_ntid()) {
		pn_pack<T, OP, 16> pk;
		pn_v4 x[PN_AR_MAX_RANKS], r;
		bool ok = true;

#pragma unroll
		for (int q = 0; q < PN_AR_MAX_RANKS; q++) {
			if (q >= N)
				break;
			if (q == me) {
				x[q] = pn_xn_ld_part(own + v * 16, len - v * 16);
			} else if (ok) {
				uint64_t k = base_in[q] + c;

				ok = pn_xn_ll_wait(a, pn_xn_in_data(a, q, k) + v * 32, f, q, &x[q]);
			}
		}
		if (!ok) {
			dead = 1;
			break;
		}
		pk.first(&x[0]);
#pragma unroll
		for (int q = 1; q < PN_AR_MAX_RANKS; q++)
			if (q < N)
				pk.add(&x[q]);
		pk.out(&r, a.nranks, true);
		pn_xn_st_part(recv + v * 16, r, len - v * 16);
	}
}

/* Chunk c of every other node (their slots' headers seen), reduced with
 * this node's [0, len) of own into recv. */
template <typename T, int OP>
PN_DEV void pn_xn_reduce(const struct pn_xn_args &a, const uint64_t *base_in, uint64_t c,
			 const char *own, char *recv, uint64_t len)
{
	const int N = a.nnodes, me = a.node;
	const char *src[PN_AR_MAX_RANKS];
	bool remote[PN_AR_MAX_RANKS];

#pragma unroll
	for (int q = 0; q < PN_AR_MAX_RANKS; q++) {
		uint64_t k = q < N ? base_in[q] + c : 0;

		src[q] = q == me ? own : pn_xn_in_data(a, q, k);
		remote[q] = q != me;
	}
	const uint64_t main = len & ~(uint64_t)15;

	pn_block_reduce<T, OP>(src, remote, N, recv, NULL, 0, main, a.nranks, true);
	pn_xn_tail_reduce<T, OP>(src, remote, N, recv, main, len, a.nranks);
}

/*
 * Chunk c of every node this call hears from (their slots' headers seen)
 * into recv + q * rstride + off, elements of es bytes.
 */
PN_DEV void pn_xn_recv_copy(const struct pn_xn_args &a, const uint64_t *base_in, uint64_t c,
			    uint64_t off, uint64_t len, unsigned es)
{
	for (int q = 0; q < a.nnodes; q++)
		if (a.from >> q & 1)
			pn_block_copy((char *)a.recv + q * a.rstride + off,
				      pn_xn_in_data(a, q, base_in[q] + c), len, true, es);
}

/* The same from LL lines, each line waited for on its own (dead: as
 * pn_xn_reduce_ll). */
PN_DEV void pn_xn_recv_copy_ll(const struct pn_xn_args &a, const uint64_t *base_in, uint64_t c,
			       uint32_t f, uint64_t off, uint64_t len, int &dead)
{
	const uint64_t nv = (len + 15) / 16;

	for (uint64_t v = pn_tid(); v < nv && !dead; v += pn_ntid())
		for (int q = 0; q < a.nnodes; q++) {
			const uint64_t k = base_in[q] + c;
			pn_v4 x;

			if (!(a.from >> q & 1))
				continue;
			if (!pn_xn_ll_wait(a, pn_xn_in_data(a, q, k) + v * 32, f, q, &x)) {
				dead = 1;
				return;
			}
			pn_xn_st_part((char *)a.recv + q * a.rstride + off + v * 16, x, len - v * 16);
		}
}

/* Thread 0: publish outbox slot t (len bytes of chunk data) to the nodes of mask. */
PN_DEV void pn_xn_publish(const struct pn_xn_args &a, uint64_t t, uint64_t len, uint32_t mask)
{
	uint64_t *o = (uint64_t *)(a.out_hdr + (t % a.slots) * PN_XSLOT);

	pn_st_volatile_u64(o + 1, a.ll ? (len + 15) / 16 * 32 : len);
	pn_st_volatile_u64(o + 2, mask);
	pn_st_release_u64(o, t + 1);
}

/* The tickets of a chunk: one to every node of a.to, or one to each. */
PN_DEV uint64_t pn_xn_tickets(const struct pn_xn_args &a)
{
	uint64_t n = 0;

	for (uint32_t m = a.to; a.sstride && m; m &= m - 1)
		n++;
	return a.sstride ? n : a.to ? 1 : 0;
}

/*
 * The j-th ticket of chunk c of a call (ticket t, flag f, at off, len
 * bytes), every thread of the block: wait for its outbox slot (sent,
 * unless first_ok), fill it, publish it (thread 0).  Its node and block:
 * a.to's j-th node from node + 1 on with sstride, else all of a.to and
 * send.  false: the call is dead.
 */
PN_DEV bool pn_xn_send(const struct pn_xn_args &a, int j, uint64_t t, uint32_t f, uint64_t off,
		       uint64_t len, unsigned es, bool first_ok, bool from_v0, const pn_v4 &v0,
		       int &dead)
{
	const uint64_t *o = (const uint64_t *)(a.out_hdr + (t % a.slots) * PN_XSLOT);
	const char *src = (const char *)a.send + off;
	uint32_t mask = a.to;

	if (a.sstride) {
		int q = a.node;

		for (int i = 0; i <= j; i++)
			do
				q = (q + 1) % a.nnodes;
			while (!(a.to >> q & 1));
		mask = 1u << q;
		src += (uint64_t)q * a.sstride;
	}
	if (pn_tid() == 0 && t >= a.slots && !first_ok && !pn_xn_wait(a, o + 8, t + 1 - a.slots, -1))
		dead = 1;
	pn_sync();
	if (dead)
		return false;
	pn_xn_put(a, src, t, f, len, es, from_v0, v0);
	pn_sync();
	if (pn_tid() == 0)
		pn_xn_publish(a, t, len, mask);
	return true;
}

/* Thread 0, plain protocol: wait for the slot of chunk c of every node this
 * call hears from; false when the call is dead. */
PN_DEV bool pn_xn_wait_from(const struct pn_xn_args &a, const uint64_t *base_in, uint64_t c)
{
	for (int q = 0; q < a.nnodes; q++) {
		uint64_t k = base_in[q] + c;

		if ((a.from >> q & 1) && !pn_xn_wait(a, pn_xn_in_hdr(a, q, k), k + 1, q))
			return false;
	}
	return true;
}

/*
 * Thread 0, after the call: the last block to get here moves the tickets on
 * by the call's nch chunks, dead or not (the job is failing then): the
 * outbox's where this node sent, node q's where it heard from q.
 */
PN_DEV void pn_xn_advance(const struct pn_xn_args &a, uint64_t base_out, const uint64_t *base_in,
			  uint64_t epoch, uint64_t nch)
{
	uint64_t *ctr = (uint64_t *)a.ctr;
	const int N = a.nnodes;

	pn_fence();
	if (pn_atomic_add((uint32_t *)&ctr[1 + N], 1) == pn_nbid() - 1) {
		ctr[1 + N] = 0;
		ctr[0] = base_out + pn_xn_tickets(a) * nch;
		for (int q = 0; q < N; q++)
			ctr[1 + q] = base_in[q] + (a.from >> q & 1 ? nch : 0);
		ctr[2 + N] = epoch + nch;
		pn_fence();
	}
}

/* RED: reduce into recv (T, OP); else copy elements of a.esize bytes. */
template <typename T, int OP, bool RED> PN_DEV void pn_xnode(const struct pn_xn_args &a)
{
	uint64_t *ctr = (uint64_t *)a.ctr;
	const unsigned es = RED ? (unsigned)sizeof(T) : a.esize;
	const uint64_t S = a.slots, C = a.slot_bytes, bytes = a.count * es;
	const uint64_t nch = (bytes + C - 1) / C, base_out = ctr[0], epoch = ctr[2 + a.nnodes];
	const uint64_t ntk = pn_xn_tickets(a);
	const int N = a.nnodes;
	const char *send = (const char *)a.send, *own = (const char *)a.own;
	char *recv = (char *)a.recv;
	PN_SHARED_ARRAY(uint64_t, base_in, PN_XN_MAX_NODES);
	PN_SHARED_ARRAY(uint64_t, sent0, PN_XN_PREFETCH);
	PN_SHARED(int, dead);

	if (pn_tid() < (unsigned)N)
		base_in[pn_tid()] = ctr[1 + pn_tid()];
	if (pn_tid() == 0)
		dead = 0;
	/*
	 * The outbox slots' sent words, read at once beside the tickets (host
	 * memory: a round trip over PCIe each, in parallel here instead of one
	 * after the ticket read), and a small first chunk's data in registers:
	 * the slot check and the copy overlap the reads they used to follow.
	 * Threads 32..32 + S read them; a block of fewer threads (the emulator's)
	 * waits for each slot instead.
	 */
	const bool pre = ntk == 1 && S <= PN_XN_PREFETCH && pn_ntid() >= 32 + S;

	if (pre && pn_tid() >= 32 && pn_tid() < 32 + S)
		sent0[pn_tid() - 32] = pn_ld_acquire_u64((const uint64_t *)(a.out_hdr + (pn_tid() - 32) * PN_XSLOT) + 8);
	const uint64_t off0 = (uint64_t)pn_bid() * C;
	const uint64_t len0 = off0 < bytes ? (bytes - off0 < C ? bytes - off0 : C) : 0;
	const bool small = pre && !a.sstride && !(a.send & 15) &&
			   (len0 & ~(uint64_t)15) <= 16ull * pn_ntid();
	pn_v4 v0;

	if (small && (uint64_t)pn_tid() * 16 + 16 <= len0)
		v0 = pn_ld(send + off0 + (uint64_t)pn_tid() * 16);
	pn_sync();
	for (uint64_t c = pn_bid(); c < nch && !dead; c += pn_nbid()) {
		const uint64_t off = c * C, len = bytes - off < C ? bytes - off : C;
		const uint32_t f = (uint32_t)(epoch + c + 1);
		const bool first = c == pn_bid();

		for (uint64_t j = 0; j < ntk && !dead; j++) {
			const uint64_t t = base_out + c * ntk + j;

			/* pre: one ticket a chunk, t = base_out + c */
			pn_xn_send(a, (int)j, t, f, off, len, es, first && pre && sent0[t % S] >= t + 1 - S,
				   first && small, v0, dead);
		}
		if (dead)
			break;
		/* this node's own block, while thread 0 waits for the others' */
		if (!RED && own)
			pn_block_copy(recv + a.node * a.rstride + off, own + off, len, false, es);
		if (pn_tid() == 0 && !a.ll && !pn_xn_wait_from(a, base_in, c))
			dead = 1;
		pn_sync();
		if (dead)
			break;
		if (!a.from)
			continue;
		if constexpr (RED) {
			if (a.ll)
				pn_xn_reduce_ll<T, OP>(a, base_in, c, f, own + off, recv + off, len, dead);
			else
				pn_xn_reduce<T, OP>(a, base_in, c, own + off, recv + off, len);
		} else {
			if (a.ll)
				pn_xn_recv_copy_ll(a, base_in, c, f, off, len, dead);
			else
				pn_xn_recv_copy(a, base_in, c, off, len, es);
		}
		/*
		 * Free the inbox slots: every thread's reads of them returned (their
		 * values are in recv's stores, issued before the barrier), so a plain
		 * store does; a release would wait for recv's stores as well.
		 */
		pn_sync();
		if (pn_tid() == 0)
			for (int q = 0; q < N; q++)
				if (a.from >> q & 1) {
					uint64_t k = base_in[q] + c;

					pn_st_volatile_u64(pn_xn_in_hdr(a, q, k) + 8, k + 1);
				}
	}
	pn_sync();
	if (pn_tid() == 0)
		pn_xn_advance(a, base_out, base_in, epoch, nch);
}

#define PN_XN_KERNEL(T, tname, OP, oname)                                                      \
	extern "C" __global__ void PN_BOUNDS pn_xn_##tname##_##oname(struct pn_xn_args a)      \
	{                                                                                      \
		pn_pdl_wait();                                                                 \
		pn_pdl_trigger();                                                              \
		pn_xnode<T, OP, true>(a);                                                      \
	}
#define PN_XN_OPS(T, tname)                                                                    \
	PN_XN_KERNEL(T, tname, PENNY_SUM, sum)                                                 \
	PN_XN_KERNEL(T, tname, PENNY_PROD, prod)                                               \
	PN_XN_KERNEL(T, tname, PENNY_MIN, min)                                                 \
	PN_XN_KERNEL(T, tname, PENNY_MAX, max)                                                 \
	PN_XN_KERNEL(T, tname, PENNY_AVG, avg)
PN_XN_OPS(int8_t, int8)
PN_XN_OPS(uint8_t, uint8)
PN_XN_OPS(int32_t, int32)
PN_XN_OPS(uint32_t, uint32)
PN_XN_OPS(int64_t, int64)
PN_XN_OPS(uint64_t, uint64)
PN_XN_OPS(pn_half_t, half)
PN_XN_OPS(pn_bf16_t, bfloat16)
PN_XN_OPS(float, float)
PN_XN_OPS(double, double)

/* The copies move bytes: one kernel, the element size in the arguments. */
extern "C" __global__ void PN_BOUNDS pn_xn_copy(struct pn_xn_args a)
{
	pn_pdl_wait();
	pn_pdl_trigger();
	pn_xnode<uint8_t, PENNY_SUM, false>(a);
}
