/* SPDX-License-Identifier: MIT */
/*
 * The verbs half of the cross-node proxy (gpu/xproxy.h): the boxes of the
 * proxy over RC queue pairs, one connection (PENNY_XNODE_QPS QPs) per peer.
 *
 * The outbox and the inbox are host memory (the GPU sees them mapped); both
 * are registered once, the inbox exposed to every peer, and the peers'
 * addresses and rkeys travel through the rendezvous at setup.  A chunk k to
 * peer q is three writes on QP k % qps of that peer, posted in this order:
 * the slot's len word, the data, the slot's ready word (k + 1, the only one
 * signaled).  An RC QP executes the writes of one QP in order, so ready
 * rises after the data at the peer with no thread of its own there; the
 * completion of the ready write means every byte left the outbox, so the
 * outbox slot's sent rises then.  (The other choice, write with immediate
 * plus a receiving thread that raises ready, costs a receive completion, a
 * thread wake-up and a store per chunk on the critical path, and a thread
 * per rank that polls; the ordered write needs none.)
 *
 * Flow control: chunk k may land once the peer's kernel raised done >=
 * k + 1 - slots in that slot.  The sender keeps a mirror of the peer's
 * header array of my ring and, when the mirror says no, RDMA-reads the
 * array (one read for every slot's done word): the receiver does nothing
 * for flow control, and a read happens only when a sender is a whole ring
 * ahead of its peer, which is when the peer is the slow side anyway.
 *
 * One thread drives it (the verbs layer is not thread-safe).  It calls no
 * function of xproxy.c: errors come back as a negative errno with the
 * message set (pn_errmsg), naming the peer's rank.
 */
#ifndef PENNY_XPROXY_VERBS_H
#define PENNY_XPROXY_VERBS_H

#include <stddef.h>
#include <stdint.h>

#include "engine/comm.h"

struct pn_xverbs;

struct pn_xverbs_cfg {
	int nnodes, me;
	const int *ranks;	/* [nnodes]: global rank of each member */
	uint32_t slots;
	uint64_t slot_bytes;
	double timeout;		/* seconds, every wait of the verbs layer */
	int qps;		/* RC QPs per peer (1..PN_XVERBS_MAX_QPS) */
	const char *nic;	/* "dev" or "dev:port"; NULL or "": the rank's rail port
				 * as the engine's verbs transport picks it */
	char *out, *in;		/* the boxes (host memory) */
	size_t out_bytes, in_bytes;
};

#define PN_XVERBS_MAX_QPS 8

/*
 * Chunk k of a ring may land in its slot once the kernel has read chunk
 * k - slots there: done (that slot's word) >= k + 1 - slots.  Pure.
 */
static inline int pn_xbox_may_land(uint64_t done, uint64_t k, uint32_t slots)
{
	return k < slots || done >= k + 1 - slots;
}

/* Every member of ranks[nnodes] published an ACTIVE RDMA port (pure on c). */
int pn_xverbs_possible(const struct pn_comm *c, const int *ranks, int nnodes);

/*
 * Collective over every rank of c: open the port, register the boxes,
 * connect to every peer.  On failure every rank returns an error.
 */
int pn_xverbs_open(struct pn_xverbs **out, struct pn_comm *c, const struct pn_xverbs_cfg *cfg);
void pn_xverbs_close(struct pn_xverbs *v);

/* A ticket (outbox slot t) starts: its sent rises once it is sealed and
 * every put of it completed. */
void pn_xverbs_begin(struct pn_xverbs *v, uint64_t t);
void pn_xverbs_seal(struct pn_xverbs *v, uint64_t t);
/* Post ticket t's len bytes to peer q's inbox: 1 posted, 0 no room there
 * yet (a read of its done words is under way), <0 failed. */
int pn_xverbs_put(struct pn_xverbs *v, int q, uint64_t t, uint64_t len);
/* Harvest completions: >0 something completed, 0 nothing, <0 failed. */
int pn_xverbs_progress(struct pn_xverbs *v);
/* The rank of a peer with work outstanding (a write not completed, a read
 * under way), or -1 when nothing is outstanding. */
int pn_xverbs_waiting_on(const struct pn_xverbs *v);
/* "rxe0:1" */
const char *pn_xverbs_nic(const struct pn_xverbs *v);

#endif
