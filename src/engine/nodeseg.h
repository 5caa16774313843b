/* SPDX-License-Identifier: MIT */
/*
 * The node segment: shared memory of the ranks of one host (abort notice,
 * local barrier flags, and the area the shm transport's FIFOs live in),
 * plus the registered buffers local peers map (pn_nodeseg_alloc, comm.h).
 */
#ifndef PENNY_NODESEG_H
#define PENNY_NODESEG_H

#include <stddef.h>
#include <stdint.h>

struct pn_comm;

/* Collective over the local ranks: create (local rank 0) or map the
 * segment; c->seg and c->node_fifos are set on success. */
int pn_nodeseg_init(struct pn_comm *c);
void pn_nodeseg_free(struct pn_comm *c);
/* Abort notice shared by the ranks of this host: the first one wins. */
void pn_nodeseg_set_abort(struct pn_comm *c, int rank, const char *why);
/* 1 with the notice in buf once a local rank has set it, else 0. */
int pn_nodeseg_get_abort(struct pn_comm *c, char *buf, size_t len);

/* Planning (mem.h): bytes of the node segment for nlocal ranks and nchan
 * channels (nchan 0: its header and barrier flags). */
uint64_t pn_nodeseg_bytes(int nlocal, int nchan);

/* Registered buffers: allocated in shared memory, mapped by local peers
 * (nodeseg.c). */
struct pn_reg {
	void *ptr;
	size_t len;
	void **peer_ptr;	/* [local index] mapping of that peer's buffer */
};
/* Collective over all ranks: every rank allocates len bytes. */
int pn_nodeseg_alloc(struct pn_comm *c, size_t len, struct pn_reg **reg);
void pn_nodeseg_reg_free(struct pn_comm *c, struct pn_reg *reg);

/* The local barrier's flags (pn_comm_local_barrier waits on them): this
 * rank arrives at its next epoch (returned); whether local index i has
 * arrived at epoch. */
uint64_t pn_nodeseg_arrive(struct pn_comm *c);
int pn_nodeseg_arrived(const struct pn_comm *c, int i, uint64_t epoch);

/*
 * What each local rank waits for, so a timeout can name the rank at the end
 * of a chain of waits (comm.c): this rank says it waits for waiting_for (a
 * global rank, -1 none) at time now (pn_now()); pn_nodeseg_waiting gives
 * what local index i said within the last PN_NODESEG_WAIT_FRESH_MS, else -1
 * (a stopped or busy rank says nothing).
 */
#define PN_NODESEG_WAIT_FRESH_MS 1000u
void pn_nodeseg_set_waiting(struct pn_comm *c, int waiting_for, double now);
int pn_nodeseg_waiting(const struct pn_comm *c, int i, double now);

#endif
