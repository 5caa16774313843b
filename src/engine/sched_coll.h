/* SPDX-License-Identifier: MIT */
/*
 * Schedules of the collectives other than allreduce (collkind.h): pure
 * generators of PN_OP_X* steps (sched.h), one channel, in pieces of at most
 * job->step_max_bytes (default half a FIFO) so sends never wait for a
 * receive that waits for them.
 *
 * Reductions (reducescatter, reduce) combine the ranks' inputs in one fixed
 * order whatever the algorithm: for the result owned by rank o (shard o's
 * owner, the root), ((x[o+1] op x[o+2]) op ...) op x[o], indices mod n, each
 * op rounded to the type as pn_reduce2 does (half and bfloat16 round at
 * every step).  That is the order of the ring allreduce's chunk owned by o,
 * so a reducescatter's shard s equals the ring allreduce's shard s bit for
 * bit where their chunks coincide; avg divides the final value once.
 *
 * Registered buffers (job->direct: one node, every peer over shm): one-shot
 * loads the peers' buffers (PN_OP_XLOAD*) between two local barriers; a
 * rank's sendbuf and recvbuf must lie at the same offsets in its
 * registrations on every rank, except as nccl-tests' in-place conventions
 * place them (collkind.h), which the generators account for.
 */
#ifndef PENNY_SCHED_COLL_H
#define PENNY_SCHED_COLL_H

#include "engine/collkind.h"
#include "engine/sched.h"

/*
 * Build this rank's schedule of collective k (not allreduce) with algorithm
 * a (not auto) for count (collkind.h) elements of esize bytes: 0, or
 * -EINVAL (an algorithm k does not have, a root out of range, ...) /
 * -ENOMEM with a message.  job: rank, nranks, root, direct, inplace,
 * step_max_bytes.
 */
int pn_sched_build_coll(struct pn_sched *s, enum pn_coll_kind k, enum pn_calgo a,
			const struct pn_sched_job *job, size_t count, size_t esize);
/* 0 when pn_sched_build_coll would build (k, a) for job, else -EINVAL with the reason. */
int pn_sched_coll_supported(enum pn_coll_kind k, enum pn_calgo a, const struct pn_sched_job *job);
/*
 * A point-to-point exchange: send send_count elements to send_peer and
 * receive recv_count from recv_peer (-1: none), at offset 0 of sendbuf and
 * recvbuf; the peers build the matching exchange.  Both peers this rank:
 * a copy (equal counts).
 */
int pn_sched_build_p2p(struct pn_sched *s, const struct pn_sched_job *job, int send_peer,
		       size_t send_count, int recv_peer, size_t recv_count, size_t esize);
/* Binomial tree of broadcast (relative ranks v = rank - root mod n): v's
 * parent (-1 for the root) and children, largest subtree first; returns the
 * number of children (at most 31). */
int pn_sched_tree(int n, int v, int *parent, int *children);

#endif
