/* SPDX-License-Identifier: MIT */
/*
 * The verbs layer: reliable-connected queue pairs over libibverbs, shared by
 * `penny bw` and the engine's verbs transport, independent of both.  The
 * device half (opening a port, registration) is verbs_dev.h; this is the
 * connection half (verbs.c).
 *
 *   struct pn_verbs_dev    one device port: context, protection domain, the
 *                          GID in use, and a memory registration cache
 *   struct pn_verbs_conn   a connection to one peer: a completion queue (with
 *                          a completion channel) and nqp RC QPs
 *   struct pn_verbs_info   what the two sides exchange to connect: a
 *                          versioned, fixed-size struct (the caller carries it:
 *                          bootstrap, a socket, a pipe)
 *
 * Connecting:  pn_verbs_dev_open -> pn_verbs_conn_create -> (post receives)
 *   -> pn_verbs_conn_expose (optional: a buffer the peer may write and read)
 *   -> pn_verbs_conn_info -> exchange -> pn_verbs_conn_connect (INIT, RTR,
 *   RTS; rejects a peer whose GID kind, link layer or QP count differs).
 * Operations (pn_verbs_post): RDMA write, write with immediate (put with
 * signal), RDMA read, send, and receives; each operation gives exactly one
 * completion (pn_verbs_poll), whatever the number of pieces it was posted as.
 * A striped operation splits its range over all QPs (pieces of at most
 * `chunk` bytes, piece i on QP i % nqp); with write-with-immediate the peer
 * sees one immediate on each QP used (pn_verbs_stripe_qps).  Local memory is
 * registered on first use through the device's cache.
 *
 * Every wait is bounded by the connection's timeout.  Errors name the device,
 * port, QP number and the verbs call or completion status.  Not thread-safe:
 * one thread drives a connection.
 */
#ifndef PENNY_VERBS_H
#define PENNY_VERBS_H

#include "transport/verbs_dev.h"

#include <stddef.h>
#include <stdint.h>

#define PN_VERBS_INFO_MAGIC 0x50564931u /* "PVI1" */
#define PN_VERBS_INFO_VERSION 1
#define PN_VERBS_MAX_QPS 32

struct pn_verbs_conn;

struct pn_verbs_conn_cfg {
	int nqp;		/* QPs to the peer, 1..PN_VERBS_MAX_QPS (default 1) */
	int sq_depth;		/* send work requests per QP (default 128) */
	int rq_depth;		/* receive work requests per QP (default 128) */
	int max_inline;		/* inline sends/writes up to this size (default 0) */
	int mtu;		/* path MTU in bytes: 0 = the smaller active MTU of the two
				 * ports; 256..4096 asks for that (the smaller request of
				 * the two sides wins) */
	double timeout;		/* seconds, bound on every wait (default 30) */
	int spin_us;		/* busy-poll this long before sleeping (default 20) */
	int ack_timeout;	/* QP local ACK timeout exponent: 4.096 us << x (default 14) */
	int retry_cnt;		/* transport retries (default 7) */
};

/* Exchanged by the caller, byte for byte.  Host byte order; see magic. */
struct pn_verbs_info {
	uint32_t magic;		/* PN_VERBS_INFO_MAGIC */
	uint16_t version;	/* PN_VERBS_INFO_VERSION */
	uint16_t size;		/* sizeof(struct pn_verbs_info) */
	uint8_t gid[16];
	uint32_t psn;		/* QP i starts at psn + i */
	uint32_t rkey;		/* exposed buffer (0 if none) */
	uint64_t addr;
	uint64_t len;
	uint16_t lid;
	uint8_t port;
	uint8_t ethernet;
	uint8_t gid_index;
	uint8_t gid_type;
	uint16_t mtu;		/* bytes this side asks for (override or active) */
	uint16_t nqp;
	uint16_t reserved;
	uint32_t qpn[PN_VERBS_MAX_QPS];
	char dev[32];		/* "rxe0", for messages */
};

void pn_verbs_conn_cfg_init(struct pn_verbs_conn_cfg *cfg);
/* The QPs are created in INIT: receives may be posted before connecting. */
int pn_verbs_conn_create(struct pn_verbs_conn **c, struct pn_verbs_dev *d,
			 const struct pn_verbs_conn_cfg *cfg);
void pn_verbs_conn_free(struct pn_verbs_conn *c);
/* The buffer the peer may write to and read from (registered, held). */
int pn_verbs_conn_expose(struct pn_verbs_conn *c, void *buf, size_t len);
void pn_verbs_conn_info(const struct pn_verbs_conn *c, struct pn_verbs_info *info);
/* Check the peer's info (magic, version, size); 0 or -EPROTO with a message. */
int pn_verbs_info_check(const struct pn_verbs_info *peer);
int pn_verbs_conn_connect(struct pn_verbs_conn *c, const struct pn_verbs_info *peer);
/* After connecting: the path MTU in bytes, the QP count, QP i's number. */
int pn_verbs_conn_mtu(const struct pn_verbs_conn *c);
int pn_verbs_conn_nqp(const struct pn_verbs_conn *c);
/* Inline limit in effect (the request, capped by the device). */
int pn_verbs_conn_max_inline(const struct pn_verbs_conn *c);
uint32_t pn_verbs_conn_qpn(const struct pn_verbs_conn *c, int i);
struct pn_verbs_dev *pn_verbs_conn_dev(const struct pn_verbs_conn *c);
/* The completion channel's fd (readable when pn_verbs_poll has work). */
int pn_verbs_conn_fd(const struct pn_verbs_conn *c);
/* The bound on every wait, seconds (pn_verbs_conn_cfg.timeout). */
double pn_verbs_conn_timeout(const struct pn_verbs_conn *c);
/*
 * Watch fd (-1: nothing), a connection to the peer's process that stays open
 * while it lives (a TCP or socketpair side channel; what it carries is left
 * alone): once it hangs up, every wait of the connection fails at once with
 * -ECONNRESET.  A peer's QPs answer until its process is torn down, and a
 * dead peer's QP is not always reported by the HCA (rxe retries forever
 * with retry_cnt 7), so this, not the timeout, tells a peer that is gone.
 */
void pn_verbs_conn_watch(struct pn_verbs_conn *c, int fd);
/* 0, or the error of a watched side channel that hung up (checked at most
 * every 10 ms): for waits outside the verbs layer (a spin on memory). */
int pn_verbs_conn_alive(struct pn_verbs_conn *c, const char *what);

enum pn_verbs_op {
	PN_VERBS_WRITE = 1,
	PN_VERBS_WRITE_IMM,	/* write, then the peer gets a receive completion with imm */
	PN_VERBS_READ,
	PN_VERBS_SEND,		/* the peer must have a receive posted */
	PN_VERBS_RECV,
};

#define PN_VERBS_F_IMM 1	/* SEND with immediate */
/*
 * No completion of its own: the operation is counted in the completion of
 * the next signaled operation on the same QP (pn_verbs_cqe.count), which
 * the caller must post (perftest's CQ moderation).  Not with chunk.
 */
#define PN_VERBS_F_UNSIGNALED 2

struct pn_verbs_wr {
	int op;			/* enum pn_verbs_op */
	int qp;			/* QP index; -1: the next one in turn */
	void *buf;		/* local memory (NULL when len is 0) */
	size_t len;
	uint64_t roff;		/* WRITE, WRITE_IMM, READ: offset in the peer's exposed buffer */
	uint32_t imm;
	int flags;
	size_t chunk;		/* > 0: stripe over all QPs in pieces of at most chunk bytes */
	uint64_t id;		/* returned in the completion */
};

struct pn_verbs_cqe {
	uint64_t id;
	int op;			/* what was posted (PN_VERBS_RECV for receives) */
	int qp;			/* QP index (the first one, for a striped operation) */
	size_t len;		/* bytes: posted, or received */
	uint32_t imm;
	int has_imm;		/* a receive that carried an immediate */
	int rdma;		/* a receive consumed by a write with immediate */
	int count;		/* operations this completion stands for: 1, plus the
				 * unsignaled ones posted before it on its QP */
};

/* Post one operation; waits (bounded) for room in the send queues. */
int pn_verbs_post(struct pn_verbs_conn *c, const struct pn_verbs_wr *wr);
/* Number of QPs a striped operation of len bytes in pieces of chunk uses. */
int pn_verbs_stripe_qps(const struct pn_verbs_conn *c, size_t len, size_t chunk);
/*
 * Completions: up to max into out, waiting (spin, then sleep on the channel)
 * until at least min are there.  Returns the count, -ETIMEDOUT, or -EIO when
 * a work request failed (the QP is then unusable).
 */
int pn_verbs_poll(struct pn_verbs_conn *c, struct pn_verbs_cqe *out, int max, int min);
/* Outstanding operations (posted, completion not yet returned by poll). */
int pn_verbs_outstanding(const struct pn_verbs_conn *c);

/* "rdma write", "receive", ... for messages. */
const char *pn_verbs_op_name(int op);

#endif
