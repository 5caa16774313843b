/* SPDX-License-Identifier: MIT */
/*
 * Collectives as schedules: for one rank, per channel, an ordered list of
 * steps {op, peers, offsets, count}.  Generators are pure functions of
 * (algorithm, ranks and their nodes, count, element size), so the same
 * schedule can be printed (ring-plan --show-schedule), simulated in tests
 * and run by the host executor.  Allreduce's generators are here; the
 * other collectives' are in sched_coll.h, with the PN_OP_X* steps.
 */
#ifndef PENNY_SCHED_H
#define PENNY_SCHED_H

#include <stddef.h>
#include <stdint.h>

enum pn_algo {
	PN_ALGO_RING = 0,	/* reduce-scatter + all-gather, chunked, pipelined */
	PN_ALGO_SIMPLE_RING,	/* reduce chain then broadcast chain: latency */
	PN_ALGO_ONE_SHOT,	/* everyone reduces everyone's input */
	PN_ALGO_TWO_SHOT,	/* reduce-scatter by direct exchange, then all-gather */
	PN_ALGO_HIER,		/* intra-node RS, inter-node ring, intra-node AG */
	PN_ALGO_MULTIRING,	/* one ring per channel, alternate directions */
	PN_NALGOS,
	PN_ALGO_AUTO = -1,
};

enum pn_step_op {
	PN_OP_SEND,		/* send src[off..] to send_peer */
	PN_OP_RECV,		/* dst[off..] = received */
	PN_OP_RECV_REDUCE_SEND,	/* send (received op src[off..]) */
	PN_OP_RECV_REDUCE_COPY,	/* dst[off..] = received op src[off..] */
	PN_OP_RECV_REDUCE_COPY_SEND, /* the same, and send dst[off..] */
	PN_OP_RECV_COPY_SEND,	/* dst[off..] = received; send it on */
	PN_OP_COPY,		/* dst[off..] = src[off..] */
	PN_OP_GATHER_REDUCE,	/* send src to the group, dst = reduce of all in rank order */
	PN_OP_SCATTER_REDUCE,	/* send shard g of src to g; dst[my shard] = reduce in rank order */
	PN_OP_ALLGATHER,	/* send dst[my shard] to the group; receive the other shards */
	PN_OP_DIRECT_REDUCE,	/* dst[off..] = reduce of the group's registered src, rank order */
	PN_OP_DIRECT_GATHER,	/* dst[shard g] = rank g's registered dst[shard g], all g */
	PN_OP_LOCAL_BARRIER,	/* all local ranks */
	/*
	 * The other collectives (sched_coll.h): buffers are named by src and
	 * dst (PN_SRC_*), off is the offset in dst, soff the one in src.
	 */
	PN_OP_XSEND,		/* send src[soff..] to send_peer */
	PN_OP_XRECV,		/* dst[off..] = received from recv_peer */
	PN_OP_XRECV_SEND,	/* dst[off..] = received; send it on to send_peer */
	PN_OP_XSENDRECV,	/* send src[soff..], dst[off..] = received; slice j of the
				 * send leaves before slice j lands (in place) */
	PN_OP_XRECV_REDUCE_SEND, /* send (received op src[soff..]) to send_peer */
	PN_OP_XRECV_REDUCE,	/* dst[off..] = received op src[soff..] */
	PN_OP_XREDUCE,		/* dst[off..] = scratch[off..] op src[soff..] */
	PN_OP_XCOPY,		/* dst[off..] = src[soff..] */
	PN_OP_XLOAD,		/* dst[off..] = recv_peer's registered src[soff..] */
	PN_OP_XLOAD_REDUCE,	/* dst[off..] = the group's registered src[soff..],
				 * reduced in group order (pn_reduce_chain); send_peer
				 * >= 0: into that rank's registered out[off..] */
	PN_OP_XBRUCK,		/* elements [off, off + count) of scratch's packed blocks
				 * (blocks of blk elements, block i when i & mask): send to
				 * send_peer, receive into the same places from recv_peer */
	PN_NOPS
};

/* Where a step reads its local operand (src) or writes (dst, PN_OP_X*). */
enum { PN_SRC_IN = 0, PN_SRC_OUT = 1, PN_SRC_SCRATCH = 2 };

struct pn_step {
	uint8_t op;
	uint8_t final;		/* the value produced is final: apply avg's division */
	uint8_t src;		/* PN_SRC_IN / PN_SRC_OUT */
	uint8_t shard;		/* SCATTER/ALLGATHER/DIRECT_GATHER: my index in the group */
	uint8_t scratch;	/* DIRECT_REDUCE: into scratch (in place); COPY: from scratch */
	int recv_peer, send_peer;
	int group;		/* index into pn_sched.groups, -1 none */
	size_t off, count;	/* elements */
	/* PN_OP_X* only */
	uint8_t dst;		/* PN_SRC_OUT / PN_SRC_SCRATCH */
	uint32_t mask;		/* XBRUCK: the blocks i with i & mask */
	size_t soff;		/* offset in src (elements) */
	size_t blk;		/* XBRUCK: elements per block */
};

struct pn_sched_chan {
	struct pn_step *steps;
	size_t n, cap;
};

struct pn_sched_group {
	int n;
	int *ranks;		/* in rank order (reduction order) */
};

struct pn_sched {
	enum pn_algo algo;
	int rank, nranks;
	size_t count, esize;
	int nchan;
	struct pn_sched_chan *ch;
	int ngroups;
	struct pn_sched_group *groups;
	int direct;		/* uses registered buffers (DIRECT_* steps) */
	int inplace;
	/* the other collectives (sched_coll.h) */
	int kind;		/* enum pn_coll_kind; 0 (allreduce) for pn_sched_build */
	int calgo;		/* enum pn_calgo */
	int root;
	size_t scratch_count;	/* elements of scratch the steps use */
};

/* What a generator knows of the job. */
struct pn_sched_job {
	int rank, nranks;
	const int *node;	/* node index of every rank */
	int nchannels;		/* multiring: rings (channels) to use */
	int direct;		/* all ranks local and buffers registered */
	int inplace;		/* input and output are the same buffer */
	size_t step_max_bytes;	/* largest step (FIFO capacity / 2); 0 = default */
	const int *const *rings; /* multiring: nchannels orders of all ranks; NULL = generated */
	int root;		/* broadcast, reduce (sched_coll.h) */
};

int pn_sched_build(struct pn_sched *s, enum pn_algo algo, const struct pn_sched_job *job,
		   size_t count, size_t esize);
/*
 * Group collectives: the same steps over a subset of the ranks (group[0..m),
 * global ranks, in ring/reduction order; job->rank must be one of them).
 * Ring allreduce of count elements; avg's division is by the group's size
 * (the executor's pn_exec_args.avg_div).  Allgather of shard elements per
 * member (a multiple of 16), in loop chunks that fit the FIFO: the buffer
 * (m * shard elements) is chunk-major, chunk c holds every member's piece c
 * of len_c = min(piece, shard - c * piece) elements, member i's at
 * c * m * piece + i * len_c, where piece = pn_sched_allgather_piece().
 */
size_t pn_sched_allgather_piece(const struct pn_sched_job *job, size_t shard, size_t esize);
int pn_sched_build_ring_group(struct pn_sched *s, const struct pn_sched_job *job,
			      const int *group, int m, size_t count, size_t esize);
int pn_sched_build_allgather_group(struct pn_sched *s, const struct pn_sched_job *job,
				   const int *group, int m, size_t shard, size_t esize);
void pn_sched_release(struct pn_sched *s);
/* For the generators of sched_coll.c: append a step to channel chan (an
 * empty one, not a barrier, is skipped); add a group (its index, or <0). */
int pn_sched_push(struct pn_sched *s, int chan, const struct pn_step *st);
int pn_sched_add_group(struct pn_sched *s, const int *ranks, int n);

const char *pn_algo_name(enum pn_algo a);
int pn_algo_parse(const char *s, enum pn_algo *a);
const char *pn_step_op_name(enum pn_step_op op);
/* Shard g of [0, count) split over n parts (16-element aligned boundaries). */
void pn_sched_shard(size_t count, int n, int g, size_t *off, size_t *len);
/* Whether algo can run for this job (hierarchical needs equal ranks per node;
 * returns 0 or -EINVAL with the reason). */
int pn_sched_supported(enum pn_algo algo, const struct pn_sched_job *job);

#endif
