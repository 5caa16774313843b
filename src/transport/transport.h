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

struct pn_conn;
struct pn_tp_group;
struct pn_tcp_state;		/* tcp.c */
struct pn_verbs_state;		/* verbs_tp.c */

/*
 * What every rank publishes at init (allgathered) for the probes: each
 * transport's publish() fills its part.
 */
#define PN_MAX_RAILS 8
struct pn_rank_info {
	char verbs_dev[64];	/* "rxe0:1" when this rank has an ACTIVE RDMA port */
	/* with several channels (multiring): one port per rail, channel c on
	 * rail c % nrails, the same rail index on every rank */
	int nrails;
	char rail_dev[PN_MAX_RAILS][32];
};

/*
 * The RDMA port ("dev:port") this rank's verbs connection to peer on channel
 * chan must use: 1 with out filled, 0 for the default choice (PENNY_IB_HCA
 * or the ACTIVE ports; with several channels, channel c on rail c), or a
 * negative error with a message.  Called while the verbs transport sets up.
 */
typedef int (*pn_verbs_port_fn)(void *arg, int peer, int chan, char *out, size_t len);

struct pn_peer {
	const struct pn_transport *transport;
	int node;
	int local;		/* local index if on this node, else -1 */
	int pid;
};

/*
 * The rendezvous a transport may use while it sets up (slow, out of band;
 * every call is collective over all ranks).  The engine provides it.
 */
struct pn_tp_oob {
	int (*allgather)(void *ctx, const void *mine, void *all, size_t len);
	int (*agree)(void *ctx, int ok, int *all_ok);
	int (*barrier)(void *ctx);
	const char *(*host)(void *ctx, int rank);	/* hostname of rank */
	const uint8_t *(*cookie)(void *ctx);		/* 16 bytes, the job's */
	int (*local_addr)(void *ctx, void *sockaddr_storage, unsigned *len);
};

/*
 * What a transport is handed: the ranks as a transport sees them.  The
 * engine's communicator (engine/comm.h) overlays exactly these members
 * (PN_TP_GROUP_MEMBERS), so the engine reads c->rank and hands &c->tp.
 */
#define PN_TP_GROUP_MEMBERS							\
	int rank, nranks;							\
	int local_rank, local_size;						\
	int nchannels;			/* concurrent FIFOs per pair (>= 1) */	\
	double timeout;			/* seconds, for setup waits */		\
	struct pn_peer *peers;		/* [rank] */				\
	struct pn_conn *conns;		/* [peer * nchannels + chan] */		\
	struct pn_rank_info *info;	/* [rank], published at init */		\
	pn_verbs_port_fn verbs_port;	/* NULL: default ports (during setup) */	\
	void *verbs_port_arg;							\
	const char *ib_hca;		/* ports, comma list; NULL: ACTIVE */	\
	int ib_disable;			/* no verbs unless forced */		\
	const struct pn_tp_oob *oob;	/* rendezvous (during setup) */		\
	void *oob_ctx;								\
	void *node_fifos;		/* shm: the FIFO area of the node segment */	\
	struct pn_tcp_state *tcp;						\
	struct pn_verbs_state *verbs;

struct pn_tp_group {
	PN_TP_GROUP_MEMBERS
};

struct pn_transport {
	const char *name;
	/* Optional, before the probes: fill this rank's part of what it
	 * publishes (forced: --transport names this one). */
	int (*publish)(struct pn_tp_group *g, int forced, struct pn_rank_info *mine);
	/* 1 if this transport can join this rank and peer (local knowledge and
	 * the peer's published info only: both sides must agree). */
	int (*can_connect)(struct pn_tp_group *g, int peer);
	/* Collective: connect every peer whose g->peers[p].transport is this
	 * one, all channels. */
	int (*setup)(struct pn_tp_group *g);
	void *(*send_slot)(struct pn_conn *k, size_t *cap);	/* NULL: FIFO full */
	int (*send_post)(struct pn_conn *k, size_t len);
	const void *(*recv_slot)(struct pn_conn *k, size_t *len); /* NULL: nothing yet */
	int (*recv_release)(struct pn_conn *k);
	/* Move bytes (tcp, verbs completions); <0 when a peer is gone. */
	int (*progress)(struct pn_tp_group *g);
	/* Optional: a peer whose posted sends wait in this rank's memory for
	 * progress() (tcp: frames not yet in the socket), which a collective
	 * must push out before it returns: that peer may still need them (and
	 * is the one a timeout names); -1 when none wait. */
	int (*unsent)(struct pn_tp_group *g);
	void (*close)(struct pn_tp_group *g);
};

struct pn_conn {
	const struct pn_transport *t;
	struct pn_tp_group *g;
	int peer;
	int chan;
	void *priv;
};

static inline struct pn_conn *pn_tp_conn(struct pn_tp_group *g, int peer, int chan)
{
	return &g->conns[(size_t)peer * (size_t)g->nchannels + (size_t)chan];
}

static inline int pn_tp_allgather(struct pn_tp_group *g, const void *mine, void *all, size_t len)
{
	return g->oob->allgather(g->oob_ctx, mine, all, len);
}

static inline int pn_tp_agree(struct pn_tp_group *g, int ok, int *all_ok)
{
	return g->oob->agree(g->oob_ctx, ok, all_ok);
}

static inline int pn_tp_barrier(struct pn_tp_group *g)
{
	return g->oob->barrier(g->oob_ctx);
}

static inline const char *pn_tp_host(struct pn_tp_group *g, int rank)
{
	return g->oob->host(g->oob_ctx, rank);
}

static inline const uint8_t *pn_tp_cookie(struct pn_tp_group *g)
{
	return g->oob->cookie(g->oob_ctx);
}

static inline int pn_tp_local_addr(struct pn_tp_group *g, void *sockaddr_storage, unsigned *len)
{
	return g->oob->local_addr(g->oob_ctx, sockaddr_storage, len);
}

extern const struct pn_transport pn_transport_shm;
extern const struct pn_transport pn_transport_tcp;
extern const struct pn_transport pn_transport_verbs;

/*
 * Collective over every rank of g: connect this rank with each rank p where
 * want[p] (both sides must agree) by one TCP socket, non-blocking with
 * TCP_NODELAY, in fds[p] (-1 elsewhere).  tag tells this mesh's
 * connections from another's (the transport's are tagged with its channel
 * count).  Each connection is proven both ways with a key the ranks share
 * through the rendezvous (tcpmesh.h); strangers, idle or not, are dropped
 * without holding up the others, and every wait ends at g->timeout, naming
 * the rank still missing.  The tcp transport's own setup and the GPU proxy
 * (gpu/xproxy.c) use it.
 */
int pn_tcp_mesh(struct pn_tp_group *g, const unsigned char *want, uint32_t tag, int *fds);

/* shm: bytes of one FIFO; the node segment holds one per ordered local pair
 * and channel, [src][dst][chan], at g->node_fifos. */
uint64_t pn_shm_fifo_bytes(void);

/* Ordered probe list (NULL-terminated) and lookup by name. */
extern const struct pn_transport *const pn_transports[];
const struct pn_transport *pn_transport_find(const char *name);

#endif
