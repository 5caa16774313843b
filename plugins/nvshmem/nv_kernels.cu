/* SPDX-License-Identifier: MIT */
/*
 * The nvshmem plugin's allreduce kernels: every byte moves into a peer's
 * symmetric work area, by the block's own stores where NVLink reaches the
 * peer (nvshmem_ptr answers) and by nvshmemx_putmem_signal_block elsewhere,
 * and every wait polls a local signal word, so one kernel runs over NVLink
 * within a node and over RDMA (IBGDA: GPU-initiated) across nodes, with no
 * host work per call.  Kernels are pn_nv_<kern>_<type>_<op> and take one struct
 * pn_nv_args (nv_kargs.h, which describes the work area).
 *
 * Each block (channel) owns a slice of the call's bytes (one-shot) or of
 * every segment (two-shot, rings) and runs the whole protocol for it:
 *  - one-shot: put the slice to every peer's slot [me]; wait for the n - 1
 *    signals; reduce slots 0..n-1 in rank order into recv.
 *  - two-shot: put segment q's slice to PE q's slot [me] (reduce-scatter);
 *    reduce segment me in rank order into the gather slot and recv; put it
 *    to every peer's gather slot (all-gather); copy what arrives to recv.
 *  - ring: n - 1 reduce-scatter steps, each a put of the partial sum to the
 *    right neighbour's slot [step], then n - 1 all-gather steps forwarding
 *    the reduced segments through the gather slots.
 *  - simple ring (latency): the whole slice travels 0 -> 1 -> ... -> n-1
 *    gathering the sum in rank order, then n-1 -> 0 -> ... -> n-2 with the
 *    result: 2(n - 1) hops of the whole slice, one put each.
 * Signals carry the block's epoch (SET); a writer waits for the reader's
 * ack of epoch - 2 before writing a parity again.  Every wait gives up
 * after timeout_ns, records PN_NV_ERR_TIMEOUT and lets the block finish.
 */
#ifndef PN_EMU
#include <nvshmem.h>
#include <nvshmemx.h>
#endif

#include "../common/pn_dev.cuh"
#include "../include/penny_plugin.h"

#define PN_DEVM __device__ __forceinline__
#include "../common/pn_reduce.cuh"

#include "nv_kargs.h"

struct pn_nv_ctx {
	const pn_nv_args *a;
	uint64_t epoch;
	int par;
	uint64_t *sig;		/* this block's signals */
	bool dead;
};

PN_DEVM uint64_t *nv_sig(pn_nv_ctx &c, int kind, int idx)
{
	return c.sig + ((uint64_t)(c.par * 2 + kind) * c.a->nranks + idx);
}

PN_DEVM uint64_t *nv_ack(pn_nv_ctx &c, int idx)
{
	return c.sig + 4ull * c.a->nranks + idx;
}

PN_DEVM char *nv_slot(pn_nv_ctx &c, int s)
{
	return (char *)c.a->data + ((uint64_t)c.par * (c.a->nranks + 1) + s) * c.a->slot;
}

/*
 * A waiting thread's clock, read every 1024 spins: past the timeout it
 * records PN_NV_ERR_TIMEOUT naming peer and sets dead.
 */
PN_DEVM void nv_spin(const pn_nv_args &a, uint32_t &spins, uint64_t &t0, int peer, bool &dead)
{
	if (++spins < 1024)
		return;
	spins = 0;
	uint64_t now = pn_clock_ns();

	if (!t0) {
		t0 = now;
	} else if (now - t0 > a.timeout_ns) {
		uint32_t *e = (uint32_t *)a.err;

		pn_atomic_or(&e[0], PN_NV_ERR_TIMEOUT);
		e[1] = (uint32_t)peer;
		dead = true;
	}
}

/* Thread 0: wait until the local signal word reaches v. */
PN_DEVM void nv_wait(pn_nv_ctx &c, uint64_t *w, uint64_t v, int peer)
{
	uint64_t t0 = 0;
	uint32_t spins = 0;

	while (!c.dead && nvshmem_signal_fetch(w) < v)
		nv_spin(*c.a, spins, t0, peer, c.dead);
}

/* The block waits for one signal (thread 0 polls; the data it guards is then visible). */
PN_DEVM void nv_block_wait(pn_nv_ctx &c, uint64_t *w, uint64_t v, int peer)
{
	if (pn_tid() == 0) {
		nv_wait(c, w, v, peer);
		pn_fence();
	}
	c.dead = pn_sync_or(c.dead);
}

/*
 * A data signal's value: the epoch above, the chunk (1, 2, ...) below, so
 * that a receiver waits for chunk j of this call with one >= and every call
 * of any algorithm finds the words of the calls before it smaller.
 */
PN_DEVM uint64_t nv_val(const pn_nv_ctx &c, uint64_t chunk)
{
	return (c.epoch << 16) | (chunk + 1);
}

/* Chunks of a ring step's slice: each travels and is signalled on its own,
 * so the next PE works on one while this one sends the next (the emulator
 * test makes them small so that its short calls have several). */
#ifndef PN_NV_CHUNK
#define PN_NV_CHUNK (64ull << 10)
#endif

/* A quarter of the slice, from a.chunk (PENNY_NVSHMEM_CHUNK) to 4 x that:
 * large calls pay the per-chunk fence and signal less often (4 x H200,
 * 1 GiB: 64 KiB chunks gave 325 GB/s busbw), small ones still pipeline. */
PN_DEVM uint64_t nv_chunk_size(const pn_nv_args &a, uint64_t len)
{
	const uint64_t m = a.chunk ? a.chunk : PN_NV_CHUNK;
	uint64_t c = (len / 4 + 15) & ~(uint64_t)15;

	return c < m ? m : c > 4 * m ? 4 * m : c;
}

PN_DEVM uint64_t nv_nchunks(const pn_nv_args &a, uint64_t len)
{
	uint64_t c = nv_chunk_size(a, len);

	return len ? (len + c - 1) / c : 1;
}

PN_DEVM void nv_chunk(const pn_nv_args &a, uint64_t len, uint64_t j, uint64_t *co, uint64_t *cl)
{
	uint64_t c = nv_chunk_size(a, len);

	*co = j * c;
	*cl = *co < len ? (len - *co < c ? len - *co : c) : 0;
}

/*
 * dst (and dst2 when not NULL) := src, len bytes, by the whole block;
 * either may be a peer's memory reached by NVLink stores.  Four 16-byte
 * vectors a thread in flight, as the cuda plugin's copy (2 x H200, 1 GiB
 * ring with 32 MiB slots: 296 GB/s busbw when NVLink peers got NVSHMEM's
 * putmem_nbi_block, 309-313 with these stores).  Ends with a barrier.
 */
PN_DEVM void nv_copy(char *dst, const char *src, uint64_t len, char *dst2 = NULL)
{
	const uint64_t al = (uintptr_t)dst | (uintptr_t)src | (uintptr_t)dst2;
	const uint64_t nv = (al & 15) ? 0 : len / 16, nt = pn_ntid();

	for (uint64_t v = pn_tid(); v < nv; v += 4 * nt) {
		pn_v4 x[4];

#pragma unroll
		for (int u = 0; u < 4; u++)
			if (v + u * nt < nv)
				x[u] = pn_ld_cg(src + (v + u * nt) * 16);
#pragma unroll
		for (int u = 0; u < 4; u++)
			if (v + u * nt < nv) {
				pn_maybe_yield();
				pn_st(dst + (v + u * nt) * 16, x[u]);
				if (dst2)
					pn_st(dst2 + (v + u * nt) * 16, x[u]);
			}
	}
	for (uint64_t i = nv * 16 + pn_tid(); i < len; i += nt) {
		pn_ld_cg_elem(dst + i, src + i, 1);
		if (dst2)
			dst2[i] = dst[i];
	}
	pn_sync();
}

/*
 * After the block's own stores into pe's memory over NVLink (and a
 * barrier, which nv_reduce and nv_copy end with): one system fence and the
 * signal, from thread 0.
 */
PN_DEVM void nv_signal_stores(pn_nv_ctx &c, uint64_t *sig, int pe, uint64_t val)
{
	if (pn_tid() == 0 && !c.dead) {
		pn_fence_sys();
		nvshmemx_signal_op(sig, val, NVSHMEM_SIGNAL_SET, pe);
	}
}

/*
 * len bytes from src to dst on pe, then pe's signal word set to val: by
 * stores and a system fence where pe is reached by NVLink (nvshmem_ptr
 * answers), else NVSHMEM's put-with-signal (IBGDA or the proxy).
 */
PN_DEVM void nv_put(pn_nv_ctx &c, void *dst, const void *src, uint64_t len, uint64_t *sig,
		    int pe, uint64_t val)
{
	char *p = (char *)nvshmem_ptr(dst, pe);

	if (p) {
		nv_copy(p, (const char *)src, len);
		nv_signal_stores(c, sig, pe, val);
	} else if (len)
		nvshmemx_putmem_signal_block(dst, src, len, sig, val, NVSHMEM_SIGNAL_SET, pe);
	else if (pn_tid() == 0)
		nvshmemx_signal_op(sig, val, NVSHMEM_SIGNAL_SET, pe);
	pn_sync();
}

/* Before writing parity par of pe's slots: pe finished epoch - 2. */
PN_DEVM void nv_wait_ack(pn_nv_ctx &c, int pe)
{
	if (c.epoch > 2)
		nv_block_wait(c, nv_ack(c, pe), c.epoch - 2, pe);
}

/*
 * Every peer's word at once, one thread per peer: its data signal of kind
 * (kind 0 or 1, reaching v) or its ack (kind 2: finished epoch - 2).
 */
PN_DEVM void nv_wait_peers(pn_nv_ctx &c, int kind)
{
	const int me = c.a->rank, n = c.a->nranks;

	if (kind == 2 && c.epoch <= 2)
		return;
	for (int q = 1 + (int)pn_tid(); q < n; q += (int)pn_ntid()) {
		int pe = (me + q) % n;

		nv_wait(c, kind == 2 ? nv_ack(c, pe) : nv_sig(c, kind, pe),
			kind == 2 ? c.epoch - 2 : nv_val(c, 0), pe);
		pn_fence();
	}
	c.dead = pn_sync_or(c.dead);
}

/*
 * A put to every peer, part(pe, &dst, &src, &len) naming what goes where,
 * signalled on the peer's word (kind, me).  Peers reached by load/store
 * (NVLink: nvshmem_ptr answers) get their data first, all of them, and then
 * their signals, each from its own thread after a system fence: one fence's
 * latency instead of one per peer.  Other peers (another node: IBGDA or the
 * proxy) get put-with-signal, ordered by NVSHMEM.
 */
template <typename F> PN_DEVM void nv_put_all(pn_nv_ctx &c, int kind, F part)
{
	const int me = c.a->rank, n = c.a->nranks;
	uint64_t *sig = nv_sig(c, kind, me);

	if (c.dead)
		return;
	for (int q = 1; q < n; q++) {
		int pe = (me + q) % n;
		char *d;
		const char *s;
		uint64_t len;

		part(pe, &d, &s, &len);
		if (!nvshmem_ptr(sig, pe))
			nv_put(c, d, s, len, sig, pe, nv_val(c, 0));
		else if (len)
			nv_copy((char *)nvshmem_ptr(d, pe), s, len);
	}
	pn_sync();
	for (int q = 1 + (int)pn_tid(); q < n; q += (int)pn_ntid()) {
		int pe = (me + q) % n;

		if (nvshmem_ptr(sig, pe)) {
			pn_fence_sys();
			nvshmemx_signal_op(sig, nv_val(c, 0), NVSHMEM_SIGNAL_SET, pe);
		}
	}
}

/*
 * This block finished epoch: every peer may write parity epoch % 2 of its
 * slots here again.  Every algorithm acknowledges to every peer, so a call of
 * one algorithm may follow a call of another (auto picks by size).
 */
PN_DEVM void nv_send_acks(pn_nv_ctx &c)
{
	const int me = c.a->rank, n = c.a->nranks;

	for (int q = 1 + (int)pn_tid(); q < n; q += (int)pn_ntid())
		nvshmemx_signal_op(nv_ack(c, me), c.epoch, NVSHMEM_SIGNAL_SET, (me + q) % n);
}

/*
 * dst[0, len) := op over srcs (in their order) of src[k][0, len); fin: avg's
 * division; the same into dst + more[m] for m < nmore (peers' slots over
 * NVLink, at most PN_NV_LL_MAX_PES).  16-byte vectors, then single elements
 * for a tail.  Remote data is read at L2 (another GPU or NIC wrote it).
 */
template <typename T, int OP>
PN_DEVM void nv_reduce(char *dst, const char *const *srcs, int nsrc, uint64_t len, int n, bool fin,
		       const int64_t *more = NULL, int nmore = 0)
{
	uint64_t vec = len & ~(uint64_t)15, i;

	for (i = (uint64_t)pn_tid() * 16; i < vec; i += (uint64_t)pn_ntid() * 16) {
		pn_pack<T, OP, 16> p;
		pn_v4 v = pn_ld_cg(srcs[0] + i);

		p.first(&v);
		for (int k = 1; k < nsrc; k++) {
			v = pn_ld_cg(srcs[k] + i);
			p.add(&v);
		}
		p.out(&v, n, fin);
		pn_st(dst + i, v);
#pragma unroll
		for (int m = 0; m < PN_NV_LL_MAX_PES; m++)
			if (m < nmore)
				pn_st(dst + more[m] + i, v);
	}
	/* the tail: one element per thread, loaded and stored whole (a half or
	 * bfloat16 result stored through memcpy came out with a wrong low byte) */
	for (i = vec + (uint64_t)pn_tid() * sizeof(T); i < len; i += (uint64_t)pn_ntid() * sizeof(T)) {
		typedef typename pn_xraw<sizeof(T)>::U U;
		pn_pack<T, OP, sizeof(T)> p;
		U e;

		pn_ld_cg_elem(&e, srcs[0] + i, sizeof(T));
		p.first(&e);
		for (int k = 1; k < nsrc; k++) {
			pn_ld_cg_elem(&e, srcs[k] + i, sizeof(T));
			p.add(&e);
		}
		p.out(&e, n, fin);
		*(U *)(dst + i) = e;
		for (int m = 0; m < nmore; m++)
			*(U *)(dst + more[m] + i) = e;
	}
	pn_sync();
}

/* [*off, *off + *len) of part [base, base + plen) that block b of g owns (16-byte steps). */
PN_DEVM void nv_slice(uint64_t plen, uint64_t *off, uint64_t *len, uint64_t full = 0)
{
	/* full: cut as if the part had full bytes (a ring's segments, so that a
	 * block's place in a slot is the same whichever segment it carries) */
	uint64_t f = full ? full : plen;
	uint64_t per = ((f + pn_nbid() - 1) / pn_nbid() + 15) & ~(uint64_t)15;
	uint64_t o = per * pn_bid();

	*off = o < plen ? o : plen;
	*len = o < plen ? (plen - o < per ? plen - o : per) : 0;
}

/* Segment j of n of bytes: [j * seg, ...) clipped. */
PN_DEVM void nv_segment(uint64_t bytes, int n, int j, uint64_t *start, uint64_t *len)
{
	uint64_t seg = ((bytes + n - 1) / n + 15) & ~(uint64_t)15, s = seg * (uint64_t)j;

	*start = s < bytes ? s : bytes;
	*len = s < bytes ? (bytes - s < seg ? bytes - s : seg) : 0;
}

template <typename T, int OP> PN_DEVM void nv_oneshot(pn_nv_ctx &c)
{
	const pn_nv_args &a = *c.a;
	const int me = a.rank, n = a.nranks;
	const char *src = (const char *)a.src;
	const char *srcs[PN_NV_MAX_PES];
	uint64_t off, len;
	int q;

	nv_slice(a.bytes, &off, &len);
	nv_wait_peers(c, 2);
	nv_put_all(c, 0, [&](int, char **d, const char **s, uint64_t *l) {
		*d = nv_slot(c, me) + off;
		*s = src + off;
		*l = len;
	});
	nv_wait_peers(c, 0);
	for (q = 0; q < n; q++)
		srcs[q] = q == me ? src + off : nv_slot(c, q) + off;
	if (!c.dead)
		nv_reduce<T, OP>((char *)a.recv + off, srcs, n, len, n, true);
	nv_send_acks(c);
}

template <typename T, int OP> PN_DEVM void nv_twoshot(pn_nv_ctx &c)
{
	const pn_nv_args &a = *c.a;
	const int me = a.rank, n = a.nranks;
	const char *src = (const char *)a.src;
	const char *srcs[PN_NV_MAX_PES];
	char *gath = nv_slot(c, n);
	uint64_t s0, slen, off, len;
	int q;

	nv_wait_peers(c, 2);
	/* reduce-scatter: segment pe's slice to pe's slot [me] */
	nv_put_all(c, 0, [&](int pe, char **d, const char **s, uint64_t *l) {
		uint64_t p0, plen, poff;

		nv_segment(a.bytes, n, pe, &p0, &plen);
		nv_slice(plen, &poff, l);
		*d = nv_slot(c, me) + p0 + poff;
		*s = src + p0 + poff;
	});
	nv_segment(a.bytes, n, me, &s0, &slen);
	nv_slice(slen, &off, &len);
	nv_wait_peers(c, 0);
	for (q = 0; q < n; q++)
		srcs[q] = (q == me ? src : nv_slot(c, q)) + s0 + off;
	/* every peer by NVLink (and few of them): the reduced slice goes straight
	 * into recv and every peer's gather slot, then a fence and the signals */
	int64_t more[PN_NV_LL_MAX_PES];
	int nmore = 0;
	char *mine = (char *)a.recv + s0 + off;

	for (q = 1; q < n && n <= PN_NV_LL_MAX_PES; q++) {
		char *pg = (char *)nvshmem_ptr(gath, (me + q) % n);

		if (!pg)
			break;
		more[nmore++] = pg + s0 + off - mine;
	}
	if (nmore == n - 1) {
		if (!c.dead)
			nv_reduce<T, OP>(mine, srcs, n, len, n, true, more, nmore);
		for (q = 1 + (int)pn_tid(); q < n && !c.dead; q += (int)pn_ntid()) {
			pn_fence_sys();
			nvshmemx_signal_op(nv_sig(c, 1, me), nv_val(c, 0), NVSHMEM_SIGNAL_SET,
					   (me + q) % n);
		}
	} else {
		if (!c.dead)
			nv_reduce<T, OP>(gath + s0 + off, srcs, n, len, n, true);
		/* all-gather: the reduced slice to every peer's gather slot */
		nv_put_all(c, 1, [&](int, char **d, const char **s, uint64_t *l) {
			*d = gath + s0 + off;
			*s = gath + s0 + off;
			*l = len;
		});
		if (!c.dead)
			nv_copy(mine, gath + s0 + off, len);
	}
	nv_wait_peers(c, 1);
	for (q = 1; q < n && !c.dead; q++) {
		nv_segment(a.bytes, n, (me + q) % n, &s0, &slen);
		nv_slice(slen, &off, &len);
		nv_copy((char *)a.recv + s0 + off, gath + s0 + off, len);
	}
	nv_send_acks(c);
}

/*
 * This block's ring: 0, 1, ..., n - 1, or planned ring bid % nrings (its
 * order of PEs and each PE's position in it).  *pos is this PE's place;
 * segments are numbered by place, so every PE cuts them alike.
 */
PN_DEVM void nv_ring_of(const pn_nv_args &a, int *pos, int *left, int *right)
{
	const int n = a.nranks;

	*pos = a.rank;
	if (a.nrings > 0) {
		const int32_t *t = (const int32_t *)a.rings + 2ull * n * (pn_bid() % (unsigned)a.nrings);

		*pos = t[n + a.rank];
		*left = t[(*pos + n - 1) % n];
		*right = t[(*pos + 1) % n];
		return;
	}
	*left = (a.rank + n - 1) % n;
	*right = (a.rank + 1) % n;
}

template <typename T, int OP> PN_DEVM void nv_ring(pn_nv_ctx &c)
{
	const pn_nv_args &a = *c.a;
	const int n = a.nranks;
	int me, left, right; /* me: this PE's place in its ring */
	/* blocks of planned rings carry different segments in one step: slots
	 * are cut by the full segment so that their places never overlap */
	const uint64_t seg = ((a.bytes + n - 1) / n + 15) & ~(uint64_t)15;

	nv_ring_of(a, &me, &left, &right);
	const char *src = (const char *)a.src;
	char *gath = nv_slot(c, n), *recv = (char *)a.recv;
	uint64_t s0, slen, off, len, nch, j, co, cl;
	int k;
	/* right reached by NVLink: reduce and forward straight into its slots
	 * (one pass over the data instead of a reduce, then a put) */
	char *rgath = (char *)nvshmem_ptr(gath, right);
	const int64_t rdiff = rgath ? (int64_t)(rgath - gath) : 0;
#define RIGHT(p) ((char *)(p) + rdiff)

	/* SEG(j): segment j and this block's slice of it (every PE slices a segment alike),
	 * and the slice's chunks */
#define SEG(j)                                                                                 \
	do {                                                                                   \
		nv_segment(a.bytes, n, (j), &s0, &slen);                                       \
		nv_slice(slen, &off, &len, seg);                                               \
		nch = nv_nchunks(a, len);                                                      \
	} while (0)
	/* The last segment to arrive (me + 2) goes from the gather slot to recv
	 * chunk by chunk, one chunk behind, between the chunks this PE sends last
	 * (the last reduce-scatter step on 2 PEs, else the last all-gather step):
	 * the local copy then overlaps the NVLink traffic instead of following
	 * it (2 x H200, 1 GiB ring in 128 MiB slots: 330 -> 341 GB/s busbw). */
	uint64_t f0, flen, foff, fl, fdone = 0;

	nv_segment(a.bytes, n, (me + 2) % n, &f0, &flen);
	nv_slice(flen, &foff, &fl, seg);
	const uint64_t fnch = nv_nchunks(a, fl);
	auto final_copy = [&](uint64_t upto) {
		for (; fdone < upto && fdone < fnch && !c.dead; fdone++) {
			uint64_t fco, fcl;

			nv_chunk(a, fl, fdone, &fco, &fcl);
			nv_block_wait(c, nv_sig(c, 1, n - 2), nv_val(c, fdone), left);
			if (!c.dead)
				nv_copy(recv + f0 + foff + fco, gath + f0 + foff + fco, fcl);
		}
	};

	nv_wait_ack(c, right);
	SEG(me);
	for (j = 0; j < nch && !c.dead; j++) {
		nv_chunk(a, len, j, &co, &cl);
		nv_put(c, nv_slot(c, 0) + off + co, src + s0 + off + co, cl, nv_sig(c, 0, 0), right,
		       nv_val(c, j));
	}
	/* reduce-scatter: step k adds this PE's part of segment me - k to what came */
	for (k = 1; k < n && !c.dead; k++) {
		int t = (me + n - k) % n;
		char *part;

		SEG(t);
		part = nv_slot(c, k - 1) + off;
		for (j = 0; j < nch; j++) {
			const char *srcs[2];
			char *g;

			nv_chunk(a, len, j, &co, &cl);
			nv_block_wait(c, nv_sig(c, 0, k - 1), nv_val(c, j), left);
			if (c.dead)
				break;
			srcs[0] = part + co;
			srcs[1] = src + s0 + off + co;
			if (k < n - 1 && rgath) {
				nv_reduce<T, OP>(RIGHT(nv_slot(c, k) + off + co), srcs, 2, cl, n, false);
				nv_signal_stores(c, nv_sig(c, 0, k), right, nv_val(c, j));
			} else if (k < n - 1) {
				nv_reduce<T, OP>(part + co, srcs, 2, cl, n, false);
				nv_put(c, nv_slot(c, k) + off + co, part + co, cl, nv_sig(c, 0, k), right,
				       nv_val(c, j));
			} else if (rgath) {
				/* t == me + 1: complete here; the all-gather starts with it */
				g = gath + s0 + off + co;
				int64_t more = RIGHT(g) - (recv + s0 + off + co);

				nv_reduce<T, OP>(recv + s0 + off + co, srcs, 2, cl, n, true, &more, 1);
				nv_signal_stores(c, nv_sig(c, 1, 0), right, nv_val(c, j));
			} else {
				g = gath + s0 + off + co;
				nv_reduce<T, OP>(g, srcs, 2, cl, n, true);
				nv_put(c, g, g, cl, nv_sig(c, 1, 0), right, nv_val(c, j));
				nv_copy(recv + s0 + off + co, g, cl);
			}
			if (k == n - 1 && n == 2)
				final_copy(j);
		}
	}
	/* all-gather: step k forwards segment me + 1 - k */
	for (k = 1; k < n - 1 && !c.dead; k++) {
		SEG((me + 1 + n - k) % n);
		for (j = 0; j < nch; j++) {
			char *g;

			nv_chunk(a, len, j, &co, &cl);
			nv_block_wait(c, nv_sig(c, 1, k - 1), nv_val(c, j), left);
			if (c.dead)
				break;
			g = gath + s0 + off + co;
			if (rgath) {
				nv_copy(recv + s0 + off + co, g, cl, RIGHT(g));
				nv_signal_stores(c, nv_sig(c, 1, k), right, nv_val(c, j));
			} else {
				nv_put(c, g, g, cl, nv_sig(c, 1, k), right, nv_val(c, j));
				nv_copy(recv + s0 + off + co, g, cl);
			}
			if (k == n - 2)
				final_copy(j);
		}
	}
	final_copy(fnch);
#undef SEG
#undef RIGHT
	nv_send_acks(c);
}

template <typename T, int OP> PN_DEVM void nv_simple(pn_nv_ctx &c)
{
	const pn_nv_args &a = *c.a;
	const int me = a.rank, n = a.nranks, right = (me + 1) % n, left = (me + n - 1) % n;
	const char *src = (const char *)a.src;
	char *part = nv_slot(c, 0), *gath = nv_slot(c, n);
	uint64_t off, len;

	nv_slice(a.bytes, &off, &len);
	nv_wait_ack(c, right);
	if (me == 0) {
		nv_put(c, part + off, src + off, len, nv_sig(c, 0, 0), right, nv_val(c, 0));
	} else {
		const char *srcs[2] = { part + off, src + off };

		nv_block_wait(c, nv_sig(c, 0, 0), nv_val(c, 0), left);
		if (!c.dead && me < n - 1) {
			nv_reduce<T, OP>(part + off, srcs, 2, len, n, false);
			nv_put(c, part + off, part + off, len, nv_sig(c, 0, 0), right, nv_val(c, 0));
		} else if (!c.dead) {
			nv_reduce<T, OP>(gath + off, srcs, 2, len, n, true);
			nv_put(c, gath + off, gath + off, len, nv_sig(c, 1, 0), right, nv_val(c, 0));
			nv_copy((char *)a.recv + off, gath + off, len);
		}
	}
	if (me < n - 1) {
		nv_block_wait(c, nv_sig(c, 1, 0), nv_val(c, 0), left);
		if (!c.dead && right != n - 1)
			nv_put(c, gath + off, gath + off, len, nv_sig(c, 1, 0), right, nv_val(c, 0));
		if (!c.dead)
			nv_copy((char *)a.recv + off, gath + off, len);
	}
	nv_send_acks(c);
}

/*
 * LL one-shot (small calls, every peer reached by NVLink): each thread
 * stores its 8-byte lines of the input, each with the call's flag, straight
 * into every peer's LL slot [me], then polls its lines in its own slots and
 * reduces them in rank order.  No fence, no signal, no acknowledgement (the
 * parity argument in nv_kargs.h): one NVLink crossing per call.  The same
 * thread handles line i in both loops, so in place is safe.
 */
/* Poll one LL line until it carries flag (v: its first read); false: timed out. */
PN_DEVM pn_v4 nv_ll_wait(const pn_nv_args &a, const char *p, pn_v4 v, uint32_t flag, int peer,
			 bool &dead)
{
	uint64_t t0 = 0;
	uint32_t spins = 0;

	while (!(v.y == flag && v.w == flag) && !dead) {
		pn_pause();
		v = pn_ll_load(p);
		nv_spin(a, spins, t0, peer, dead);
	}
	return v;
}

template <typename T, int OP> PN_DEVM void nv_oneshot_ll(const pn_nv_args &a)
{
	uint32_t *lc = (uint32_t *)a.llctr;
	const uint32_t flag = lc[0] + 1, par = flag & 1;
	const int me = a.rank, n = a.nranks;
	const uint64_t bytes = a.bytes, lines = (bytes + 7) / 8;
	const uint64_t stride = (uint64_t)pn_nbid() * pn_ntid();
	const uint64_t first = (uint64_t)pn_bid() * pn_ntid() + pn_tid();
	const char *src = (const char *)a.src;
	char *recv = (char *)a.recv, *area = (char *)a.ll + (uint64_t)par * n * a.ll_slot;
	bool dead = false;

	char *mine = area + (uint64_t)me * a.ll_slot;

	/* PE me + q's slot [me] is mine + a.p2p[q] (the host's nvshmem_ptr: no
	 * device-state lookups before the first store) */
	for (uint64_t i = first; i < lines; i += stride) {
		pn_v2 d = pn_load8(src, i, bytes);

#pragma unroll
		for (int q = 1; q < PN_NV_LL_MAX_PES; q++) {
			if (q >= n)
				break;
			pn_maybe_yield();
			pn_ll_store(mine + a.p2p[q] + i * 16, d.x, d.y, flag);
		}
	}
	for (uint64_t i = first; i < lines; i += stride) {
		pn_pack<T, OP, 8> pk;
		pn_v4 v[PN_NV_LL_MAX_PES];
		pn_v2 o, mine = pn_load8(src, i, bytes);

		/* every peer's line read at once, then the late ones polled */
#pragma unroll
		for (int q = 0; q < PN_NV_LL_MAX_PES; q++)
			if (q < n && q != me)
				v[q] = pn_ll_load(area + (uint64_t)q * a.ll_slot + i * 16);
#pragma unroll
		for (int q = 0; q < PN_NV_LL_MAX_PES; q++)
			if (q < n && q != me)
				v[q] = nv_ll_wait(a, area + (uint64_t)q * a.ll_slot + i * 16, v[q], flag,
						  q, dead);
#pragma unroll
		for (int q = 0; q < PN_NV_LL_MAX_PES; q++) {
			if (q >= n)
				break;
			pn_v2 d = mine;

			if (q != me)
				d.x = v[q].x, d.y = v[q].z;
			if (q == 0)
				pk.first(&d);
			else
				pk.add(&d);
		}
		pk.out(&o, n, true);
		pn_store8(recv, i, bytes, o);
	}
	/* the last block to finish moves the epoch on (in memory: graph replays see it) */
	pn_sync();
	if (pn_tid() == 0 && pn_atomic_add(&lc[1], 1) == pn_nbid() - 1) {
		lc[1] = 0;
		lc[0] = flag;
	}
}

template <typename T, int OP, int K> PN_DEVM void nv_run(const pn_nv_args &a)
{
	if (K == PN_NV_ONESHOT_LL) {
		nv_oneshot_ll<T, OP>(a);
		return;
	}
	uint64_t *ctr = (uint64_t *)a.ctr + pn_bid();
	/* every thread reads the block's counter before thread 0 bumps it */
	uint64_t epoch = *ctr + 1;
	pn_nv_ctx c;

	pn_sync();
	if (pn_tid() == 0)
		*ctr = epoch;
	c.a = &a;
	c.epoch = epoch;
	c.par = (int)(epoch & 1);
	c.sig = (uint64_t *)a.sig + pn_nv_sig_words(a.nranks) * pn_bid();
	c.dead = false;
	if (K == PN_NV_ONESHOT)
		nv_oneshot<T, OP>(c);
	else if (K == PN_NV_TWOSHOT)
		nv_twoshot<T, OP>(c);
	else if (K == PN_NV_RING)
		nv_ring<T, OP>(c);
	else
		nv_simple<T, OP>(c);
	/* puts through a NIC (a peer without a load/store mapping) complete
	 * before the stream moves on; NVLink stores need no more than their fences */
	pn_sync();
	if (pn_tid() == 0)
		for (int q = 0; q < a.nranks; q++)
			if (!nvshmem_ptr((void *)a.sig, q)) {
				nvshmem_quiet();
				break;
			}
}

#define PN_NV_KERNEL(kname, K, T, tname, OP, oname)                                            \
	extern "C" __global__ void __launch_bounds__(512, 1)                                   \
		pn_nv_##kname##_##tname##_##oname(struct pn_nv_args a)                         \
	{                                                                                      \
		pn_pdl_wait();                                                                 \
		pn_pdl_trigger();                                                              \
		nv_run<T, OP, K>(a);                                                           \
	}
#define PN_NV_OPS(kname, K, T, tname)                                                          \
	PN_NV_KERNEL(kname, K, T, tname, PENNY_SUM, sum)                                       \
	PN_NV_KERNEL(kname, K, T, tname, PENNY_PROD, prod)                                     \
	PN_NV_KERNEL(kname, K, T, tname, PENNY_MIN, min)                                       \
	PN_NV_KERNEL(kname, K, T, tname, PENNY_MAX, max)                                       \
	PN_NV_KERNEL(kname, K, T, tname, PENNY_AVG, avg)
#ifdef PN_NV_FEW_TYPES
/* make nvshmem-check: a syntax check of every kernel on two types */
#define PN_NV_TYPES(kname, K)                                                                  \
	PN_NV_OPS(kname, K, int32_t, int32)                                                    \
	PN_NV_OPS(kname, K, pn_bf16_t, bfloat16)
#else
#define PN_NV_TYPES(kname, K)                                                                  \
	PN_NV_OPS(kname, K, int8_t, int8)                                                      \
	PN_NV_OPS(kname, K, uint8_t, uint8)                                                    \
	PN_NV_OPS(kname, K, int32_t, int32)                                                    \
	PN_NV_OPS(kname, K, uint32_t, uint32)                                                  \
	PN_NV_OPS(kname, K, int64_t, int64)                                                    \
	PN_NV_OPS(kname, K, uint64_t, uint64)                                                  \
	PN_NV_OPS(kname, K, pn_half_t, half)                                                   \
	PN_NV_OPS(kname, K, pn_bf16_t, bfloat16)                                               \
	PN_NV_OPS(kname, K, float, float)                                                      \
	PN_NV_OPS(kname, K, double, double)
#endif

PN_NV_TYPES(oneshot, PN_NV_ONESHOT)
PN_NV_TYPES(twoshot, PN_NV_TWOSHOT)
PN_NV_TYPES(ring, PN_NV_RING)
PN_NV_TYPES(simple, PN_NV_SIMPLE)
PN_NV_TYPES(oneshot_ll, PN_NV_ONESHOT_LL)
