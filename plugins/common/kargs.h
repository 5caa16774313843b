/* SPDX-License-Identifier: MIT */
/*
 * Kernel parameter blocks, shared by the host code (C) and the kernels
 * (CUDA).  Each kernel takes one of these by value; device addresses are
 * uint64_t.
 */
#ifndef PENNY_KARGS_H
#define PENNY_KARGS_H

#include <stdint.h>

#include "../include/penny_plugin.h"

/* pn_fill_<type>, pn_check_<type> */
struct pn_testdata_args {
	uint64_t ptr;
	uint64_t count;
	uint64_t result;	/* check: device uint64_t[2] = {wrong, first_bad} */
	uint32_t seed;
	int32_t rank;		/* fill: whose data */
	int32_t nranks;		/* check: ranks reduced */
	int32_t op;
};

/* pn_copy_sm: bytes from src to dst with 16-byte loads/stores */
struct pn_copy_args {
	uint64_t dst, src, bytes;
};

/* pn_chase: iters dependent loads through a chain of uint32 indices */
struct pn_chase_args {
	uint64_t buf, out;
	uint32_t iters;
	uint32_t pad;
};

/* Maximum ranks the allreduce kernels handle (one node). */
#define PN_AR_MAX_RANKS 8
/* Maximum blocks of one allreduce kernel (flag and counter arrays). */
#define PN_AR_MAX_BLOCKS 512

/*
 * Allreduce kernels: pn_ar_<algo>_<type>_<op>.  The workspace of each rank
 * (one IPC-mapped allocation) is laid out by pn_ws_* offsets below.
 */
struct pn_ar_args {
	uint64_t send, recv;		/* local */
	uint64_t peer_recv[PN_AR_MAX_RANKS];	/* recv of rank p (same offset), twoshot/ring */
	uint64_t peer_ws[PN_AR_MAX_RANKS];	/* workspace of rank p (mine at [rank]) */
	uint64_t count;			/* elements */
	uint64_t desc;			/* buffer identity; must match on every rank */
	uint64_t timeout_ns;		/* a wait longer than this fails the call */
	uint32_t tile;			/* twoshot/ring: bytes per rank slice of a tile */
	uint32_t slot_bytes;		/* twoshot/ring: capacity of one scratch slot */
	uint64_t ll_slot_bytes;		/* oneshot: capacity of one LL slot (16 B per 8 B) */
	int32_t rank, nranks;
	int32_t root;			/* co_kernels.cu: broadcast and reduce */
	uint32_t esize;			/* co_kernels.cu: element bytes of the copies */
	uint32_t coll;			/* the collective, for the error detail: 0 the
					 * allreduce, 1 + enum pn_co the others */
	uint32_t ll;			/* co_kernels.cu: 1 LL lines (pn_co_ll_fits) */
	/* ce_kernels.cu (the copy-engine allreduce): every rank's CE area, the
	 * reduction's sources in rank order (this rank's send slice, the
	 * peers' in its CE area), the gate's steps and its peer */
	uint64_t peer_ce[PN_AR_MAX_RANKS];
	uint64_t ce_src[PN_AR_MAX_RANKS];
	uint32_t ce_steps;
	int32_t ce_peer;
	uint32_t ce_piece;		/* the gate's piece of the call */
	uint32_t two;			/* co_kernels.cu: broadcast and reduce in two steps
					 * through the non-roots (3+ ranks, flag kernels) */
};

/*
 * The copy-engine allreduce (cuda_ce.c, ce_kernels.cu).  A call is cut into
 * an even number of pieces, a piece into n slices, slice j owned by rank j.
 * Copy engines push each slice into its owner's CE area (a slot per sender
 * and piece parity), the owner's kernel reduces the n contributions in rank
 * order into its recv, and the owner's copy engines push the result into
 * every peer's recv (at the same offset: the plugin ABI's registered
 * buffers are symmetric).  The copy streams tell the peers that their
 * copies have landed by a copy of a flag word after them on the same
 * stream (the word PN_CE_ONE of this rank's area into the peer's flag),
 * and the flag's reader puts it back to 0: a graph's replay copies the
 * same values again.  What waits is a kernel, never the copy engine, so
 * that every wait gives up at the timeout: the reduce kernel waits for
 * the pushes itself (with fewer blocks than the GPU has SMs, so that the
 * gates always find room), and one-thread gate kernels wait for a slot to
 * be free and for the peers' results; the reductions are counted in
 * device memory by the kernels.  A rank's CE area: the header of uint32
 * words below, then the slots [2 parities][n - 1 senders][slot bytes].
 */
#define PN_CE_RSF 0		/* [parity][sender] (8 a parity): the sender's push of this
				 * parity's piece into my slot landed (flag) */
#define PN_CE_RED 16		/* [owner]: pieces the owner has reduced */
#define PN_CE_AGF 24		/* [sender]: the sender's results are in my recv (flag) */
#define PN_CE_DESC 32		/* uint64 [sender] at word 32 + 2 * sender: its recv's identity */
#define PN_CE_SIG_RED 48	/* pieces I reduced */
#define PN_CE_BASE_RED 56	/* [peer]: pieces the peer had reduced when this call began */
#define PN_CE_DONE 64		/* the reduce kernel's finished blocks */
#define PN_CE_ONE 66		/* 1, the value every flag is set to (from the area's start) */
#define PN_CE_MYDESC 68		/* uint64: my recv's identity in this call, for the peers' DESC */
#define PN_CE_HDR (2u << 20)	/* a 2 MiB page of its own: the slots start on one */
/* gate steps (ce_steps), run in this order */
#define PN_CE_FREE 2u		/* wait until ce_peer reduced piece ce_piece - 2 of this call */
#define PN_CE_FINAL 8u		/* wait until every peer's results are in my recv (from the
				 * same buffer as mine) */


/*
 * The other collectives on one node (co_kernels.cu): pn_co_<name>_<type>_<op>
 * for those that reduce, pn_co_<name> for the copies; count in
 * struct pn_ar_args is NCCL's count of the collective.
 */
enum pn_co {
	PN_CO_REDUCE_SCATTER = 0,
	PN_CO_REDUCE,
	PN_CO_ALLTOALL,
	PN_CO_BROADCAST,
	PN_CO_SENDRECV,
	PN_CO_ALLGATHER,
	PN_NCO
};
#define PN_CO_REDUCES(k) ((k) <= PN_CO_REDUCE)

/*
 * Whether a call of the other collectives takes the LL lines (co_kernels.cu,
 * pn_co_ll): bytes, what a rank sends to or receives from one peer (NCCL's
 * count in bytes), at most max (the host's limit) and below the LL slot,
 * whose last line is the call's token (ll_slot_bytes: 16 B per 8 data
 * bytes).  It depends on nothing that differs between ranks (not the
 * buffers' alignment: the LL path takes any), so every rank decides alike.
 */
static inline int pn_co_ll_fits(uint64_t bytes, uint64_t max, uint64_t ll_slot_bytes)
{
	return bytes > 0 && bytes <= max && ll_slot_bytes >= 32 && bytes <= ll_slot_bytes / 2 - 8;
}

/* Workspace layout (bytes from the start of a rank's workspace). */
#define PN_WS_FLAGS 0	/* uint32 [MAX_BLOCKS][MAX_RANKS]: flag from rank p to block b */
#define PN_WS_BFLAGS (PN_WS_FLAGS + 4 * PN_AR_MAX_BLOCKS * PN_AR_MAX_RANKS)
#define PN_WS_DESCS (PN_WS_BFLAGS + 4 * PN_AR_MAX_BLOCKS * PN_AR_MAX_RANKS)	/* uint64 */
#define PN_WS_COUNTERS (PN_WS_DESCS + 8 * PN_AR_MAX_BLOCKS * PN_AR_MAX_RANKS)
/* counters: uint32 [0..MAX_BLOCKS) barrier seq, [MAX_BLOCKS..2*MAX_BLOCKS) tiles,
 * [2*MAX_BLOCKS..3*MAX_BLOCKS) kernels, then LL epoch, LL done, error word,
 * error detail */
#define PN_CNT_SEQ 0
#define PN_CNT_TILES PN_AR_MAX_BLOCKS
#define PN_CNT_KERNELS (2 * PN_AR_MAX_BLOCKS)
#define PN_CNT_LL_EPOCH (3 * PN_AR_MAX_BLOCKS)
#define PN_CNT_LL_DONE (3 * PN_AR_MAX_BLOCKS + 1)
#define PN_CNT_ERR (3 * PN_AR_MAX_BLOCKS + 2)
#define PN_CNT_ERR_INFO (3 * PN_AR_MAX_BLOCKS + 3)
#define PN_WS_LL (PN_WS_COUNTERS + 4 * (3 * PN_AR_MAX_BLOCKS + 64))
/* LL area: [2 parities][MAX_RANKS slots][ll_slot_bytes]; then the tile
 * scratch: [MAX_BLOCKS... blocks][2 parities][MAX_RANKS slots][slot_bytes]. */

/*
 * The cross-node kernels (penny_plugin_v1.xnode_*, xn_kernels.cu):
 * pn_xn_<type>_<op> for the allreduce, reduce and reduce_scatter (this
 * node's operand and the peers' chunks reduced in node order into recv),
 * pn_xn_copy for the other collectives (node q's chunks into recv + q *
 * rstride).  The boxes as the device sees them: penny_plugin.h's layout,
 * slot headers of PN_XSLOT bytes with the ready word at 0, len at 8, mask
 * at 16 and the other side's word, sent or done, at 64.
 */
#define PN_XSLOT 128
#define PN_XN_MAX_NODES PN_AR_MAX_RANKS
struct pn_xn_args {
	uint64_t send;			/* what this node sends, count elements (to 0: nothing) */
	uint64_t sstride;		/* 0: send goes to every node of to in one ticket a
					 * chunk; else node q's block is at send + q * sstride,
					 * a ticket a chunk to each node of to */
	uint64_t own;			/* reduce: this node's operand; copy: its own block,
					 * copied to recv + node * rstride (0: none) */
	uint64_t recv, rstride;		/* node q's chunks land at recv + q * rstride */
	uint64_t count;			/* elements */
	uint64_t ctl;			/* outbox control line (abort word at 0) */
	uint64_t out_hdr, out_data;	/* outbox slot headers, data */
	uint64_t in_hdr, in_data;	/* inbox: [node][slot] headers, data */
	uint64_t ctr;			/* device uint64 [1 + nnodes + 2]: next outbox ticket,
					 * next chunk from each node, blocks done, the epoch
					 * (the chunks of the calls before: LL flags) */
	uint64_t err;			/* device uint32 [2]: error word, detail */
	uint64_t slot_bytes;		/* this call's chunk (<= stride) */
	uint64_t stride;		/* bytes between two slots' data */
	uint64_t timeout_ns;
	uint32_t slots;
	int32_t nnodes, node, nranks;
	uint32_t ll;			/* chunks travel as LL lines (4 data bytes + a flag) */
	uint32_t from;			/* bit q: this call receives node q's chunks */
	uint32_t to;			/* bit q: this call sends to node q */
	uint32_t esize;			/* pn_xn_copy: element bytes */
	uint32_t coll;			/* the error detail's collective (pn_ar_args.coll) */
};

/* The error detail's collective (pn_ar_args.coll: 1 + PN_CO_*) of an
 * xnode_coll kind (PENNY_XC_*; 0 for none). */
static inline uint32_t pn_xc_coll(int kind)
{
	switch (kind) {
	case PENNY_XC_ALLGATHER: return 1 + PN_CO_ALLGATHER;
	case PENNY_XC_BROADCAST: return 1 + PN_CO_BROADCAST;
	case PENNY_XC_REDUCE: return 1 + PN_CO_REDUCE;
	case PENNY_XC_REDUCE_SCATTER: return 1 + PN_CO_REDUCE_SCATTER;
	case PENNY_XC_ALLTOALL: return 1 + PN_CO_ALLTOALL;
	case PENNY_XC_SENDRECV: return 1 + PN_CO_SENDRECV;
	default: return 0;
	}
}

/*
 * penny_xcoll_v1 c on node me of n as the kernels take it (bytes: a
 * block's; the boxes, count and ll are the caller's).  An outbox ticket
 * goes to the nodes of its mask: one ticket a chunk to every node of to,
 * or with sstride one a chunk to each node of to with its own block
 * (reduce_scatter and alltoall: block q to node q).  Broadcast's root and
 * reduce's others send, to every other node / the root; sendrecv to node
 * me + 1.  Shared by xnode.c and the emulator test.
 */
static inline void pn_xn_coll_args(struct pn_xn_args *a, const struct penny_xcoll_v1 *c,
				   uint64_t bytes, int me, int n)
{
	const uint64_t s = (uint64_t)(uintptr_t)c->send, d = (uint64_t)(uintptr_t)c->recv;
	const uint64_t ss = c->sstride ? c->sstride : bytes, rs = c->rstride ? c->rstride : bytes;
	const uint32_t others = ((1u << n) - 1) & ~(1u << me);	/* n <= PN_XN_MAX_NODES */

	a->send = s;
	a->own = a->rstride = a->sstride = 0;
	a->recv = d;
	a->from = a->to = others;
	a->coll = pn_xc_coll(c->kind);
	switch (c->kind) {
	case PENNY_XC_ALLGATHER:
		a->own = s != d + (uint64_t)me * rs ? s : 0;
		a->rstride = rs;
		break;
	case PENNY_XC_BROADCAST:
		a->to = me == c->root ? others : 0;
		a->own = me == c->root && s != d ? s : 0;
		a->from = me == c->root ? 0 : 1u << c->root;
		break;
	case PENNY_XC_REDUCE:
		a->to = me == c->root ? 0 : 1u << c->root;
		a->own = s;
		a->from = me == c->root ? others : 0;
		break;
	case PENNY_XC_REDUCE_SCATTER:
		a->sstride = ss;
		a->own = s + (uint64_t)me * ss;
		break;
	case PENNY_XC_ALLTOALL:
		a->sstride = ss;
		a->own = s + (uint64_t)me * ss != d + (uint64_t)me * rs ? s + (uint64_t)me * ss : 0;
		a->rstride = rs;
		break;
	default: /* sendrecv: to the next node, from the one before */
		a->to = 1u << (me + 1) % n;
		a->from = 1u << (me + n - 1) % n;
		break;
	}
}

/* error word bits */
#define PN_ERR_TIMEOUT 1u	/* a wait timed out; detail = peer rank */
#define PN_ERR_DESC 2u		/* buffers differ between ranks */
#define PN_ERR_XNODE 4u		/* the cross-node proxy gave up; detail = node */
/* the detail word: the peer (rank or node) in the low 16 bits, the
 * collective whose kernel recorded it (pn_ar_args.coll) above them */
#define PN_ERR_DETAIL(peer, coll) ((uint32_t)(peer) | (uint32_t)(coll) << 16)
#define PN_ERR_PEER(detail) ((detail) & 0xffffu)
#define PN_ERR_COLL(detail) ((detail) >> 16)

#endif
