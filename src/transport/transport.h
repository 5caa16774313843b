/* SPDX-License-Identifier: MIT */
/*
 * Transports between two ranks, as ops tables chosen per peer by an ordered
 * probe (NCCL's canConnect idea): shm (same host), verbs (RDMA ports that
 * reach each other), tcp (any pair).  Every connection is a FIFO of slots
 * per (peer, channel) in each direction; the executor asks for a free send
 * slot, fills it, posts it, and on the other side takes received slots in
 * order and releases them.  None of these calls block: the executor spins,
 * calls progress() and checks for dead peers and the timeout.
 */
#ifndef PENNY_TRANSPORT_H
#define PENNY_TRANSPORT_H

#include <stddef.h>
#include <stdint.h>

#define PN_FIFO_SLOTS 8
#define PN_FIFO_SLOT_BYTES (64u << 10)
/* Largest step of a schedule: half of a FIFO, so the next step can start. */
#define PN_STEP_MAX_BYTES (PN_FIFO_SLOTS * PN_FIFO_SLOT_BYTES / 2)

struct pn_comm;
struct pn_conn;

struct pn_transport {
	const char *name;
	/* 1 if this transport can join this rank and peer (local knowledge and
	 * the peer's published info only: both sides must agree). */
	int (*can_connect)(struct pn_comm *c, int peer);
	/* Collective: connect every peer whose c->peers[p].transport is this
	 * one, all channels. */
	int (*setup)(struct pn_comm *c);
	void *(*send_slot)(struct pn_conn *k, size_t *cap);	/* NULL: FIFO full */
	int (*send_post)(struct pn_conn *k, size_t len);
	const void *(*recv_slot)(struct pn_conn *k, size_t *len); /* NULL: nothing yet */
	int (*recv_release)(struct pn_conn *k);
	/* Move bytes (tcp, verbs completions); <0 when a peer is gone. */
	int (*progress)(struct pn_comm *c);
	void (*close)(struct pn_comm *c);
};

struct pn_conn {
	const struct pn_transport *t;
	struct pn_comm *comm;
	int peer;
	int chan;
	void *priv;
};

extern const struct pn_transport pn_transport_shm;
extern const struct pn_transport pn_transport_tcp;
extern const struct pn_transport pn_transport_verbs;

/* This rank's RDMA port for the verbs transport: PENNY_IB_HCA ("dev[:port]"
 * list, by local rank) or the ACTIVE ports by local rank.  1 found, 0 none. */
int pn_verbs_pick_device(int local_rank, char *out, size_t len);
/* All of this rank's rail ports, in order (PENNY_IB_HCA or ACTIVE ports). */
int pn_verbs_rails(char (*out)[32], int max);

/* Ordered probe list (NULL-terminated) and lookup by name. */
extern const struct pn_transport *const pn_transports[];
const struct pn_transport *pn_transport_find(const char *name);

#endif
