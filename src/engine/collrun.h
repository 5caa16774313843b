/* SPDX-License-Identifier: MIT */
/*
 * The collectives other than allreduce (collkind.h): allgather,
 * reducescatter, alltoall, broadcast, reduce and sendrecv, on the engine's
 * communicator (coll.h) through the same schedules (sched_coll.h),
 * executor, timeouts and errors as pn_allreduce.  Every rank of the
 * communicator calls with the same kind, count, type, op, root and
 * algorithm, all in place or none (collkind.h: nccl-tests' conventions),
 * and all with registrations or none.
 */
#ifndef PENNY_COLLRUN_H
#define PENNY_COLLRUN_H

#include "engine/coll.h"
#include "engine/collkind.h"

struct pn_coll_args {
	enum pn_coll_kind kind;		/* not PN_COLL_ALLREDUCE (pn_allreduce) */
	const void *sendbuf;		/* broadcast: read on the root only (may be NULL elsewhere) */
	void *recvbuf;			/* reduce: written on the root only (may be NULL elsewhere) */
	size_t count;			/* collkind.h */
	enum pn_dtype dtype;
	enum pn_redop op;		/* reducescatter, reduce */
	int root;			/* broadcast, reduce */
	enum pn_calgo algo;		/* PN_CALGO_AUTO: the tuning table's pick */
	/* registered buffers (pn_nodeseg_alloc) holding sendbuf and recvbuf, at
	 * the same offsets on every rank (in place: where nccl-tests puts them);
	 * NULL: the FIFOs only */
	struct pn_reg *sreg, *rreg;
};

/* Run one collective: 0, or -errno with one pn_err line (a wait past the
 * communicator's timeout names the rank it waited for; every rank fails). */
int pn_coll_run(struct pn_coll *co, const struct pn_coll_args *a);
/* The algorithm pn_coll_run runs for a (auto: the tuning table's pick). */
enum pn_calgo pn_coll_algo(const struct pn_coll *co, const struct pn_coll_args *a);
/* The schedule pn_coll_run would run (for printing and tests); valid until the next call. */
int pn_coll_sched(struct pn_coll *co, const struct pn_coll_args *a, const struct pn_sched **out);

/*
 * A point-to-point exchange, like MPI_Sendrecv: send send_count elements of
 * sendbuf to send_peer while receiving recv_count into recvbuf from
 * recv_peer (a peer of -1: that half is not done).  Only the ranks named
 * take part; each pair must agree on the counts and type.  The ring of pairs
 * (rank r to r + 1) is pn_coll_run with PN_COLL_SENDRECV.
 */
int pn_sendrecv(struct pn_coll *co, const void *sendbuf, size_t send_count, int send_peer,
		void *recvbuf, size_t recv_count, int recv_peer, enum pn_dtype t);

#endif
