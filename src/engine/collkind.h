/* SPDX-License-Identifier: MIT */
/*
 * The collectives and what nccl-tests defines for each, as pure functions:
 * names, the buffers a count argument means, the in-place conventions, the
 * size algbw divides by and the bus factor (nccl-tests doc/PERFORMANCE.md).
 *
 * count is the argument of NCCL's call: allreduce, broadcast, reduce and
 * sendrecv: the elements of the buffer; allgather: the elements each rank
 * sends; reducescatter: the elements each rank receives; alltoall: the
 * elements each rank sends to each rank.
 */
#ifndef PENNY_COLLKIND_H
#define PENNY_COLLKIND_H

#include <stddef.h>

enum pn_coll_kind {
	PN_COLL_ALLREDUCE = 0,
	PN_COLL_ALLGATHER,
	PN_COLL_REDUCE_SCATTER,
	PN_COLL_ALLTOALL,
	PN_COLL_BROADCAST,	/* from a root */
	PN_COLL_REDUCE,		/* to a root */
	PN_COLL_SENDRECV,	/* a ring of pairs: rank r sends to r + 1, receives from r - 1 */
	PN_NCOLLS
};

/*
 * Algorithms of the collectives other than allreduce (allreduce has enum
 * pn_algo, sched.h):
 *   ring      pipelined ring (allgather, reducescatter) or chain (broadcast
 *             from the root along the ring, reduce along the ring to the root)
 *   one-shot  every rank exchanges with every rank at once: over the FIFOs,
 *             or within one node over registered buffers (direct loads)
 *   pairwise  alltoall: n rounds, round k pairs rank r with (k - r) mod n
 *   bruck     alltoall in ceil(log2 n) rounds of packed blocks (small sizes)
 *   tree      broadcast down a binomial tree, pipelined in pieces
 */
enum pn_calgo {
	PN_CALGO_AUTO = -1,
	PN_CALGO_RING = 0,
	PN_CALGO_ONE_SHOT,
	PN_CALGO_PAIRWISE,
	PN_CALGO_BRUCK,
	PN_CALGO_TREE,
	PN_NCALGOS
};

/* "allreduce" "allgather" "reducescatter" "alltoall" "broadcast" "reduce"
 * "sendrecv"; parse also takes nccl-tests' spellings (all_gather,
 * reduce_scatter, ...) and hyphens.  Parse: 0 or -EINVAL with a message. */
const char *pn_coll_name(enum pn_coll_kind k);
int pn_coll_parse(const char *s, enum pn_coll_kind *k);
/* "ring" "one-shot" "pairwise" "bruck" "tree" ("auto" for PN_CALGO_AUTO). */
const char *pn_calgo_name(enum pn_calgo a);
int pn_calgo_parse(const char *s, enum pn_calgo *a);
/* Whether collective k has algorithm a (never allreduce: see pn_algo). */
int pn_calgo_valid(enum pn_coll_kind k, enum pn_calgo a);

/* Whether k reduces (takes an op), has a root. */
int pn_coll_reduces(enum pn_coll_kind k);
int pn_coll_rooted(enum pn_coll_kind k);

/* Elements of the send and receive buffers for count (see above). */
size_t pn_coll_send_count(enum pn_coll_kind k, size_t count, int nranks);
size_t pn_coll_recv_count(enum pn_coll_kind k, size_t count, int nranks);
/*
 * nccl-tests' in place: allgather: sendbuf = recvbuf + rank * count;
 * reducescatter: recvbuf = sendbuf + rank * count; the others sendbuf ==
 * recvbuf.  pn_coll_inplace_send_off: elements from recvbuf to sendbuf;
 * pn_coll_inplace_recv_off: from sendbuf to recvbuf.
 */
size_t pn_coll_inplace_send_off(enum pn_coll_kind k, size_t count, int rank);
size_t pn_coll_inplace_recv_off(enum pn_coll_kind k, size_t count, int rank);

/*
 * nccl-tests' sizes: S of algbw = S / t, in bytes: the whole buffer for
 * allgather, reducescatter and alltoall (count * esize * nranks), else
 * count * esize.  pn_coll_count_for_bytes is the inverse (the count a
 * sweep's size means; rounded down).
 */
double pn_coll_algbw_bytes(enum pn_coll_kind k, size_t count, size_t esize, int nranks);
size_t pn_coll_count_for_bytes(enum pn_coll_kind k, size_t bytes, size_t esize, int nranks);
/* busbw = algbw * factor: allreduce 2(n-1)/n; allgather, reducescatter,
 * alltoall (n-1)/n; broadcast, reduce, sendrecv 1. */
double pn_coll_bus_factor(enum pn_coll_kind k, int nranks);

#endif
