/* SPDX-License-Identifier: MIT */
/*
 * The communicator: rank, size, nodes, local ranks, and per peer the
 * transport chosen by ordered probe.  Also the node-local shared segment
 * (abort notice, barrier flags, shm FIFOs) and registered buffers that local
 * peers can load from directly.
 */
#ifndef PENNY_COMM_H
#define PENNY_COMM_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/boot.h"
#include "transport/transport.h"

/*
 * The RDMA port ("dev:port") this rank's verbs connection to peer on channel
 * chan must use: 1 with out filled, 0 for the default choice (PENNY_IB_HCA
 * or the ACTIVE ports; with several channels, channel c on rail c), or a
 * negative error with a message.  Called while pn_comm_init sets up verbs.
 */
typedef int (*pn_verbs_port_fn)(void *arg, int peer, int chan, char *out, size_t len);

struct pn_comm_cfg {
	const char *transport;	/* NULL: probe; "shm", "tcp", "verbs": force */
	int nchannels;		/* concurrent FIFO channels per pair (>= 1) */
	pn_verbs_port_fn verbs_port;	/* NULL: the default choice (a ring plan binds NICs) */
	void *verbs_port_arg;
};

struct pn_peer {
	const struct pn_transport *transport;
	int node;
	int local;		/* local index if on this node, else -1 */
	int pid;
};

/* What every rank publishes at init (allgathered). */
#define PN_MAX_RAILS 8
struct pn_rank_info {
	char verbs_dev[64];	/* "rxe0:1" when this rank has an ACTIVE RDMA port */
	/* with several channels (multiring): one port per rail, channel c on
	 * rail c % nrails, the same rail index on every rank */
	int nrails;
	char rail_dev[PN_MAX_RAILS][32];
};

struct pn_node_shm;		/* shm.c */
struct pn_verbs_state;		/* verbs_tp.c */
struct pn_tcp_state;		/* tcp.c */

struct pn_comm {
	struct pn_boot *boot;
	int rank, nranks;
	int node, nnodes;
	int local_rank, local_size;
	int *local_ranks;	/* global rank of each local index */
	int nchannels;
	double timeout;
	struct pn_peer *peers;
	struct pn_conn *conns;	/* [peer * nchannels + chan] */
	struct pn_node_shm *shm;
	struct pn_tcp_state *tcp;
	struct pn_verbs_state *verbs;
	struct pn_rank_info *info; /* [rank] */
	pn_verbs_port_fn verbs_port;	/* from pn_comm_cfg, during init */
	void *verbs_port_arg;
	uint64_t barrier_epoch;
	uint64_t spin_checks;
	double last_check;
	int failed;		/* an error was reported; stop waiting */
	int oversubscribed;	/* more local ranks than online CPUs */
};

int pn_comm_init(struct pn_comm **c, struct pn_boot *b, const struct pn_comm_cfg *cfg);
void pn_comm_free(struct pn_comm *c);
struct pn_conn *pn_comm_conn(struct pn_comm *c, int peer, int chan);
/* Name of the transport used towards peer, "self" for this rank. */
const char *pn_comm_transport_name(const struct pn_comm *c, int peer);

/*
 * Called from every spin loop: notices an abort from any rank, a dead local
 * peer (waiting_for >= 0) and the timeout (since = when the wait began).
 * Cheap: does real work once every few thousand calls.  Returns 0 or a
 * negative error whose message names the rank and host.
 */
int pn_comm_check(struct pn_comm *c, int waiting_for, double since);
/* Report a failure to every rank (shared-memory notice + rendezvous). */
void pn_comm_abort(struct pn_comm *c, const char *why);

/* Registered buffers: allocated in shared memory, mapped by local peers. */
struct pn_reg {
	void *ptr;
	size_t len;
	void **peer_ptr;	/* [local index] mapping of that peer's buffer */
};
/* Collective over all ranks: every rank allocates len bytes. */
int pn_comm_alloc(struct pn_comm *c, size_t len, struct pn_reg **reg);
void pn_comm_reg_free(struct pn_comm *c, struct pn_reg *reg);

/* Planning (mem.h): bytes of the node segment for nlocal ranks and nchan
 * channels (nchan 0: its header and barrier flags), and of one FIFO in it. */
uint64_t pn_shm_node_bytes(int nlocal, int nchan);
uint64_t pn_shm_fifo_bytes(void);

/* Barrier among the local ranks through shared flags (busy-polled). */
int pn_comm_local_barrier(struct pn_comm *c);
/* Barrier over all ranks (rendezvous: slow, for setup). */
int pn_comm_barrier(struct pn_comm *c);

#endif
