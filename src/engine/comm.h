/* SPDX-License-Identifier: MIT */
/*
 * The communicator: rank, size, nodes, local ranks, and per peer the
 * transport chosen by ordered probe.  It owns the node segment
 * (engine/nodeseg.h: abort notice, barrier flags, the shm FIFOs) and hands
 * the transports their view of it all (struct pn_tp_group).  Registered
 * buffers (nodeseg.c) are shared memory that local peers load from directly.
 */
#ifndef PENNY_COMM_H
#define PENNY_COMM_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/boot.h"
#include "engine/nodeseg.h"
#include "transport/transport.h"

struct pn_comm_cfg {
	const char *transport;	/* NULL: probe; "shm", "tcp", "verbs": force */
	int nchannels;		/* concurrent FIFO channels per pair (>= 1) */
	pn_verbs_port_fn verbs_port;	/* NULL: the default choice (a ring plan binds NICs) */
	void *verbs_port_arg;
	const char *ib_hca;	/* the verbs ports, comma list (PENNY_IB_HCA); NULL: ACTIVE */
	int ib_disable;		/* no verbs unless forced (PENNY_IB_DISABLE) */
};

struct pn_nodeseg;		/* nodeseg.c */

struct pn_comm {
	/* rank, nranks, local_rank, local_size, nchannels, timeout, peers,
	 * conns, info, ... (transport/transport.h): read as c->rank, handed
	 * to the transports as &c->tp */
	union {
		struct pn_tp_group tp;
		struct {
			PN_TP_GROUP_MEMBERS
		};
	};
	struct pn_boot *boot;
	int node, nnodes;
	int *local_ranks;	/* global rank of each local index */
	struct pn_nodeseg *seg;
	uint64_t barrier_epoch;
	uint64_t spin_checks;
	double last_check;
	int failed;		/* an error was reported; stop waiting */
	int said_waiting;	/* pn_nodeseg_set_waiting told the node this rank waits */
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
/* This rank no longer waits (the end of a collective; cheap when it never said it did). */
void pn_comm_done_waiting(struct pn_comm *c);
/* Report a failure to every rank (shared-memory notice + rendezvous). */
void pn_comm_abort(struct pn_comm *c, const char *why);
/*
 * The cause to report for err, an error a wait met (a peer's connection
 * closed, ...): when a rank that failed first has sent its notice (node
 * segment or rendezvous; waited for up to 50 ms), -ECANCELED with its
 * message, which names the rank at fault; else err with its message.
 */
int pn_comm_first_cause(struct pn_comm *c, int err);
/*
 * A notice from a rank of this node (the node segment): 1 with its text in
 * msg, else 0.  The rendezvous root passes it on to the other nodes' ranks
 * (once), as it does a notice it hears over the rendezvous: it may end on
 * this notice before it reads the same one from the rendezvous, and the
 * others would then hear only that the root's connection closed.
 */
int pn_comm_local_notice(struct pn_comm *c, char *msg, size_t len);

/* Barrier among the local ranks through the node segment's flags
 * (busy-polled, pn_comm_check on every spin). */
int pn_comm_local_barrier(struct pn_comm *c);
/* Barrier over all ranks (rendezvous: slow, for setup). */
int pn_comm_barrier(struct pn_comm *c);

#endif
