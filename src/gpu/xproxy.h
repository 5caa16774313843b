/* SPDX-License-Identifier: MIT */
/*
 * The cross-node proxy of the GPU path (the pattern of NCCL's net proxy):
 * one thread per rank that moves the chunks a plugin's kernel puts in its
 * outbox to the ranks of the same local index on the other nodes (those of
 * each chunk's node mask), and lands theirs in its inbox, where the kernel
 * polls for them.  Chunks are counted per pair of nodes: the k-th chunk
 * from a peer, the k-th of its tickets whose mask names me, lands in slot
 * k % slots of that peer's ring.  The boxes
 * and their protocol are the plugin ABI's (penny_xnode_v1 in
 * plugins/include/penny_plugin.h); the kernel needs no host work per call,
 * so the whole allreduce is stream-ordered and captures in a CUDA graph.
 *
 * Transports:
 *   tcp  sockets per peer (transport/tcp.c's mesh), chunk k to a peer on
 *        socket k % sockets, a sending and a receiving thread per socket
 *        (each sender walks every ticket, counting alike, and sends the
 *        copies on its socket; the last one done raises sent); a chunk is written
 *        straight from the outbox and read straight into the inbox slot
 *        (no copy of its own); a slot is read only once the kernel freed it,
 *        so TCP's window is the flow control.
 *   shm  emulated nodes on one host (PENNY_NODE_ID): every inbox is shared
 *        memory, and the sender's proxy copies a chunk into the peer's
 *        inbox slot and raises its ready word, as an RDMA write with
 *        immediate would (no TCP stack: the algorithm alone is measured).
 *   verbs RC QPs per peer over RDMA (gpu/xproxy_verbs.h): the boxes are host
 *        memory registered once; a chunk is RDMA-written into the peer's
 *        inbox slot and its ready word written after it on the same QP; one
 *        sending thread, no receiving one (the peer's NIC lands the data).
 *        A socket per peer only tells that a peer is gone.
 * The proxy threads own their sockets and mappings (a socket's sending and
 * receiving halves belong to two threads); the rank's main thread only
 * reads their error.  It touches no engine state and never calls the
 * rendezvous: a failure sets the outbox's abort word (the kernel's waits
 * end), and pn_xproxy_error() reports it to the caller.
 */
#ifndef PENNY_XPROXY_H
#define PENNY_XPROXY_H

#include <stddef.h>
#include <stdint.h>

#include "engine/comm.h"

struct pn_xproxy;

struct pn_xproxy_cfg {
	int nnodes;		/* members of the inter group (one per node) */
	int me;			/* my place in it */
	const int *ranks;	/* [nnodes]: the global rank of each member */
	const char *transport;	/* "tcp", "shm", "verbs"; NULL or "auto": shm when every
				 * member is on this host, else verbs when every member
				 * published an ACTIVE RDMA port, else tcp */
	uint32_t slots;		/* per ring */
	uint64_t slot_bytes;	/* a multiple of 16 */
	double timeout;		/* seconds a stalled transfer may wait */
	int sockets;		/* tcp: sockets per peer, each with a sending and a
				 * receiving thread (1..8; chunk k to a peer on socket
				 * k % sockets) */
	int qps;		/* verbs: RC QPs per peer (1..8; chunk k on QP k % qps) */
	const char *nic;	/* verbs: "dev[:port]"; NULL: the rank's rail port as the
				 * engine's verbs transport picks it (PENNY_IB_HCA or the
				 * ACTIVE ports, local rank modulo their count) */
};

/*
 * Collective over every rank of c (the tcp mesh and the shm names go
 * through the rendezvous): make the boxes, connect, start the thread.
 */
int pn_xproxy_open(struct pn_xproxy **out, struct pn_comm *c, const struct pn_xproxy_cfg *cfg);
/* Stop the thread, close and unmap (not collective). */
void pn_xproxy_close(struct pn_xproxy *p);

void *pn_xproxy_outbox(const struct pn_xproxy *p);
void *pn_xproxy_inbox(const struct pn_xproxy *p);
const char *pn_xproxy_transport(const struct pn_xproxy *p);
/* 0, or the proxy's failure as a negative errno with its message set. */
int pn_xproxy_error(struct pn_xproxy *p);
/*
 * The warm-up (the timing rule's, base/timing.h): open maps the boxes
 * populated and, over tcp, returns only once every socket carried its
 * warm-up frames both ways between the threads that carry the chunks;
 * pn_xproxy_warmed() says how many each way (0: none ran, shm and verbs).
 * pn_xproxy_wake(): a measurement begins; the threads spin without napping
 * for the next second (they nap after 50 ms idle otherwise).
 */
uint64_t pn_xproxy_warmed(const struct pn_xproxy *p);
void pn_xproxy_wake(struct pn_xproxy *p);

/* Check a transport name and the geometry (pure). */
int pn_xproxy_check_cfg(const struct pn_xproxy_cfg *cfg);

#endif
