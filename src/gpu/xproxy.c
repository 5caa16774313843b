/* SPDX-License-Identifier: MIT */
/* The cross-node proxy of the GPU path (xproxy.h). */
#define _GNU_SOURCE
#include "gpu/xproxy.h"
#include "gpu/xproxy_verbs.h"

#include "base/log.h"
#include "base/util.h"
#include "engine/nodeseg.h"
#include "node/sysfs.h"
#include "penny_plugin.h"

#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

/* On the wire before every chunk (tcp). */
struct xwire {
	uint64_t len;
	uint64_t chunk;		/* the sender's count of chunks to me before this one */
};

#define XSOCK_MAX 8

/*
 * The warm-up of a tcp proxy (pn_xproxy_open): before open returns, every
 * socket carries XWARM_FRAMES frames each way, in lockstep (frame i goes
 * once the peer's frame i - 1 came), between the threads that will carry
 * the chunks.  A warm-up frame is a header with chunk XWARM_CHUNK and no
 * data.  The first timed call then finds every connection past its first
 * bytes and every thread scheduled and spinning (lazy set-up that the
 * first size of a run used to pay inside its timed calls).
 */
#define XWARM_CHUNK UINT64_MAX
#define XWARM_FRAMES 64

/* tcp: one socket of a peer; chunk k to the peer (its k-th, counted per
 * peer: tickets whose mask leaves it out are not counted) travels on socket
 * k % nsock */
struct xlane {
	int fd;
	size_t woff;		/* bytes of the current chunk (wire + data) written */
	struct xwire rw;	/* receive: the header being read */
	size_t rgot;		/* of header + data */
	uint64_t rchunk;	/* the next chunk this socket lands */
	/* receive: bytes read ahead of the inbox slot, [rb_head, rb_tail) */
	char *rb;
	size_t rb_head, rb_tail;
	/* warm-up frames sent (by the lane's sender) and received (by its
	 * receiver); atomic */
	uint64_t warm_tx, warm_rx;
};

/*
 * A receiver reads a header and what follows it with one recv into the
 * lane's read-ahead buffer, then copies: one system call per small chunk
 * instead of two.  The rest of a big chunk goes straight into the slot.
 */
#define XRB_BYTES 8192

struct xpeer {
	int q;			/* place in the inter group */
	int rank;
	struct xlane lane[XSOCK_MAX];	/* tcp */
	/* shm */
	char *box;		/* the peer's inbox, mapped */
	uint64_t schunk;	/* chunks put into its inbox */
};

/* A rank of the job on this host, watched: gone, or stopped too long. */
struct xlocal {
	int rank, pid;
	unsigned long long start;	/* its start time: a pid used again is not it */
	double stopped;			/* since when it is seen stopped; 0: it is not */
};

struct pn_xproxy;
struct xrole {
	struct pn_xproxy *p;
	int recv;		/* 0: send (the first one also watches the peers), 1: receive */
	int lane;		/* tcp: its socket of every peer */
	/* a sender's state: every sender walks every ticket in order (tcp: each
	 * sends the copies whose count to their peer falls on its lane) */
	uint64_t ticket;
	uint64_t pending;	/* peers the current ticket still goes to */
	int sending;
	int warming;		/* tcp sender: warm-up frames still to send */
	uint64_t seq[PENNY_XBOX_MAX_NODES];	/* tcp: chunks to each peer so far */
	uint64_t cur[PENNY_XBOX_MAX_NODES];	/* tcp: the current ticket's count to each */
};

struct pn_xproxy {
	struct pn_xproxy_cfg cfg;
	int *ranks;
	int shm;
	struct pn_xverbs *xv;	/* verbs: its half (xproxy_verbs.h), driven by the sending thread */
	char *out, *in;
	size_t out_bytes, in_bytes;
	char in_name[96];	/* shm: my inbox's name until unlinked */
	struct xpeer *peers;	/* [nnodes], mine unused */
	int nsock;		/* tcp: sockets (and sender/receiver thread pairs) per peer */
	uint32_t *acks;		/* tcp, [slots]: senders done with the slot's ticket (atomic) */
	pthread_t thread[2 * XSOCK_MAX];
	struct xrole roles[2 * XSOCK_MAX];
	int started;		/* threads running */
	int stop;		/* main -> thread (atomic) */
	int failed;		/* thread -> main (atomic): msg is set */
	int claimed;		/* a thread is writing msg (atomic) */
	int err;
	char msg[256];
	int echo;		/* the failure is a peer's going: maybe another's echo */
	int told;		/* main thread: explained and told to the job */
	struct pn_comm *c;	/* main thread only (pn_xproxy_error) */
	const char **host;	/* [nranks]: names, read-only after the rendezvous */
	struct xlocal *local;	/* the job's other ranks on this host */
	int nlocal;
	int oversubscribed;	/* more local ranks than cores: yield while spinning */
	uint64_t hot_until;	/* pn_now_ns() until which the threads never nap (atomic) */
	int warm;		/* tcp: the sockets' warm-up runs (until every lane is done) */
	uint64_t warmed;	/* frames each way on every socket, once done */
};

static uint64_t ld_acq(const uint64_t *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static void st_rel(uint64_t *p, uint64_t v)
{
	__atomic_store_n(p, v, __ATOMIC_RELEASE);
}

int pn_xproxy_check_cfg(const struct pn_xproxy_cfg *cfg)
{
	if (cfg->nnodes < 2 || cfg->nnodes > PENNY_XBOX_MAX_NODES || cfg->me < 0 ||
	    cfg->me >= cfg->nnodes)
		return pn_err(-EINVAL, "cross-node proxy: %d nodes (2..%d)", cfg->nnodes,
			      PENNY_XBOX_MAX_NODES);
	if (cfg->slots < 2 || cfg->slots > 1024)
		return pn_err(-EINVAL, "cross-node proxy: %u slots per ring (2..1024)", cfg->slots);
	if (cfg->slot_bytes < 4096 || cfg->slot_bytes > (64u << 20) || cfg->slot_bytes % 16)
		return pn_err(-EINVAL, "cross-node proxy: chunks of %llu bytes (4 KiB..64 MiB, a "
				       "multiple of 16)", (unsigned long long)cfg->slot_bytes);
	/* the boxes are pinned for the GPU (and shared memory with shm): bounded */
	if ((uint64_t)cfg->slots * cfg->slot_bytes > (1ull << 30))
		return pn_err(-EINVAL, "cross-node proxy: %u slots of %llu bytes: at most 1 GiB per "
				       "ring (PENNY_XNODE_SLOTS x PENNY_XNODE_CHUNK)",
			      cfg->slots, (unsigned long long)cfg->slot_bytes);
	if (cfg->sockets < 1 || cfg->sockets > XSOCK_MAX)
		return pn_err(-EINVAL, "cross-node proxy: %d sockets per peer (1..%d)", cfg->sockets,
			      XSOCK_MAX);
	if (cfg->transport && strcmp(cfg->transport, "tcp") && strcmp(cfg->transport, "shm") &&
	    strcmp(cfg->transport, "verbs") && strcmp(cfg->transport, "auto"))
		return pn_err(-EINVAL, "cross-node proxy: unknown transport '%s' (tcp, shm, verbs or "
				       "auto)", cfg->transport);
	if (cfg->qps < 1 || cfg->qps > PN_XVERBS_MAX_QPS)
		return pn_err(-EINVAL, "cross-node proxy: %d QPs per peer (1..%d)", cfg->qps,
			      PN_XVERBS_MAX_QPS);
	return 0;
}

static struct penny_xout_slot *out_slot(struct pn_xproxy *p, uint64_t t)
{
	return (struct penny_xout_slot *)(p->out + PENNY_XBOX_LINE) + t % p->cfg.slots;
}

static char *out_data(struct pn_xproxy *p, uint64_t t)
{
	return p->out + penny_xbox_out_data(p->cfg.slots, p->cfg.slot_bytes,
					    (uint32_t)(t % p->cfg.slots));
}

static struct penny_xin_slot *in_slot(const struct pn_xproxy *p, char *box, int q, uint64_t k)
{
	return (struct penny_xin_slot *)(box + penny_xbox_in_hdr(p->cfg.slots, q,
								   (uint32_t)(k % p->cfg.slots)));
}

static char *in_data(const struct pn_xproxy *p, char *box, int q, uint64_t k)
{
	return box + penny_xbox_in_data(p->cfg.nnodes, p->cfg.slots, p->cfg.slot_bytes, q,
					(uint32_t)(k % p->cfg.slots));
}

/* Chunk k of a ring may land once the kernel has read chunk k - slots. */
static int slot_free(const struct pn_xproxy *p, struct penny_xin_slot *s, uint64_t k)
{
	return pn_xbox_may_land(ld_acq(&s->done), k, p->cfg.slots);
}

/* The thread gives up: the kernels' waits end, the caller hears why. */
static int thread_failv(struct pn_xproxy *p, int echo, int err, const char *fmt, va_list ap)
{
	/* both threads may fail at once: the first one tells */
	if (__atomic_exchange_n(&p->claimed, 1, __ATOMIC_ACQ_REL))
		return err;
	vsnprintf(p->msg, sizeof(p->msg), fmt, ap);
	p->err = err;
	p->echo = echo;
	st_rel(&((struct penny_xctl *)p->out)->abort, 1);
	__atomic_store_n(&p->failed, 1, __ATOMIC_RELEASE);
	return err;
}

static int thread_fail(struct pn_xproxy *p, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int thread_fail(struct pn_xproxy *p, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	err = thread_failv(p, 0, err, fmt, ap);
	va_end(ap);
	return err;
}

/* A peer went (its socket closed): it may have gone for another's reason,
 * which pn_xproxy_error looks for before it blames the peer. */
static int thread_gone(struct pn_xproxy *p, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int thread_gone(struct pn_xproxy *p, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	err = thread_failv(p, 1, err, fmt, ap);
	va_end(ap);
	return err;
}

/* tcp: write what is left of ticket t's chunk, the k-th to peer x, on its
 * socket j; 1 when done. */
static int tcp_send(struct pn_xproxy *p, struct xpeer *x, int j, uint64_t t, uint64_t k,
		    uint64_t len)
{
	struct xlane *l = &x->lane[j];
	struct xwire w = { len, k };
	struct iovec iov[2];
	size_t total = sizeof(w) + len;
	ssize_t n;
	int i = 0;

	if (l->woff < sizeof(w)) {
		iov[i].iov_base = (char *)&w + l->woff;
		iov[i++].iov_len = sizeof(w) - l->woff;
		iov[i].iov_base = out_data(p, t);
		iov[i++].iov_len = len;
	} else {
		iov[i].iov_base = out_data(p, t) + (l->woff - sizeof(w));
		iov[i++].iov_len = total - l->woff;
	}
	n = writev(l->fd, iov, i);
	if (n < 0) {
		if (errno == EAGAIN || errno == EINTR)
			return 0;
		return thread_gone(p, -EPIPE, "cross-node proxy: sending to rank %d (host %s): %s "
				   "(the rank failed or was killed?)", x->rank, p->host[x->rank],
				   strerror(errno));
	}
	l->woff += (size_t)n;
	if (l->woff < total)
		return 0;
	l->woff = 0;
	return 1;
}

/* shm: put ticket t's chunk into peer x's inbox; 1 when done, 0: not free yet. */
static int shm_send(struct pn_xproxy *p, struct xpeer *x, uint64_t t, uint64_t len)
{
	int me = p->cfg.me;
	struct penny_xin_slot *s = in_slot(p, x->box, me, x->schunk);

	if (!slot_free(p, s, x->schunk))
		return 0;
	memcpy(in_data(p, x->box, me, x->schunk), out_data(p, t), len);
	s->len = len;
	st_rel(&s->ready, x->schunk + 1);
	x->schunk++;
	return 1;
}

/* tcp: up to want bytes (or an error) from a lane: its read-ahead first; with
 * ahead, an empty read-ahead is refilled by one recv. */
static ssize_t tcp_read(struct xlane *l, char *dst, size_t want, int ahead)
{
	ssize_t n;

	if (l->rb_head < l->rb_tail) {
		size_t have = l->rb_tail - l->rb_head;

		n = (ssize_t)(have < want ? have : want);
		memcpy(dst, l->rb + l->rb_head, (size_t)n);
		l->rb_head += (size_t)n;
		return n;
	}
	if (!ahead || !l->rb)
		return recv(l->fd, dst, want, 0);
	n = recv(l->fd, l->rb, XRB_BYTES, 0);
	if (n <= 0)
		return n;
	l->rb_head = 0;
	l->rb_tail = (size_t)n;
	return tcp_read(l, dst, want, 0);
}

/* tcp: read from socket j of peer x into my inbox; 1 when something moved, <0 failed. */
static int tcp_recv(struct pn_xproxy *p, struct xpeer *x, int j)
{
	struct xlane *l = &x->lane[j];
	struct penny_xin_slot *s = in_slot(p, p->in, x->q, l->rchunk);
	ssize_t n;

	if (l->rgot < sizeof(l->rw)) {
		/* a new chunk: its header and (a small chunk) its data in one recv */
		n = tcp_read(l, (char *)&l->rw + l->rgot, sizeof(l->rw) - l->rgot, 1);
	} else {
		size_t left = l->rw.len - (l->rgot - sizeof(l->rw));

		if (!slot_free(p, s, l->rchunk))
			return 0;
		n = tcp_read(l, in_data(p, p->in, x->q, l->rchunk) + (l->rgot - sizeof(l->rw)),
			     left, 0);
	}
	if (n == 0)
		return thread_gone(p, -EPIPE, "cross-node proxy: rank %d (host %s) closed its "
					      "connection (the rank failed or was killed)", x->rank,
				   p->host[x->rank]);
	if (n < 0) {
		if (errno == EAGAIN || errno == EINTR)
			return 0;
		return thread_gone(p, -EPIPE, "cross-node proxy: receiving from rank %d (host %s): "
					      "%s (the rank failed or was killed?)", x->rank,
				   p->host[x->rank], strerror(errno));
	}
	l->rgot += (size_t)n;
	if (l->rgot == sizeof(l->rw) && l->rw.chunk == XWARM_CHUNK && !l->rw.len &&
	    ld_acq(&l->warm_rx) < XWARM_FRAMES) {
		st_rel(&l->warm_rx, ld_acq(&l->warm_rx) + 1);
		l->rgot = 0;
		return 1;
	}
	if (l->rgot == sizeof(l->rw) &&
	    (l->rw.len > p->cfg.slot_bytes || l->rw.chunk != l->rchunk))
		return thread_fail(p, -EPROTO, "cross-node proxy: rank %d sent chunk %llu of %llu "
					       "bytes, chunk %llu of at most %llu expected",
				   x->rank, (unsigned long long)l->rw.chunk,
				   (unsigned long long)l->rw.len, (unsigned long long)l->rchunk,
				   (unsigned long long)p->cfg.slot_bytes);
	if (l->rgot == sizeof(l->rw) + l->rw.len) {
		s->len = l->rw.len;
		st_rel(&s->ready, l->rchunk + 1);
		l->rchunk += (uint64_t)p->nsock;
		l->rgot = 0;
	}
	return 1;
}

/* /proc/PID/stat of a process: its state letter and start time; -errno. */
static int proc_stat(int pid, char *state, unsigned long long *start)
{
	char buf[1024], *s;
	int n = pn_sys_read(buf, sizeof(buf), "/proc/%d/stat", pid), i;

	if (n < 0)
		return n;
	/* "PID (COMM) S f4 ... f22": COMM may hold anything, so from its last ')' */
	s = strrchr(buf, ')');
	if (!s || s[1] != ' ' || !s[2])
		return -EINVAL;
	*state = s[2];
	for (s += 2, i = 3; i < 22 && s; i++) {
		s = strchr(s, ' ');
		s = s ? s + 1 : NULL;
	}
	if (!s)
		return -EINVAL;
	*start = strtoull(s, NULL, 10);
	return 0;
}

/*
 * The job's other ranks on this host: one that is gone, or stopped
 * (SIGSTOP, a debugger) for nearly the timeout, is named before the
 * waits on it end in "timed out" somewhere else, as the host engine names
 * them.  Stopped is read from /proc on the live system only.
 */
static int locals_alive(struct pn_xproxy *p)
{
	double now = pn_now(), limit = p->cfg.timeout > 2 ? p->cfg.timeout - 1 : p->cfg.timeout / 2;
	int i, live = pn_sysfs_is_live();

	for (i = 0; i < p->nlocal; i++) {
		struct xlocal *l = &p->local[i];
		unsigned long long start = 0;
		char st = 0;
		int gone = kill(l->pid, 0) && errno == ESRCH;

		if (!gone && live && !proc_stat(l->pid, &st, &start)) {
			gone = st == 'Z' || st == 'X' || (l->start && start != l->start);
			if (st != 'T' && st != 't')
				l->stopped = 0;
			else if (!l->stopped)
				l->stopped = now;
			else if (now - l->stopped >= limit)
				return thread_fail(p, -ETIMEDOUT, "cross-node proxy: rank %d (host %s, "
							  "pid %d) has been stopped for %.0f s (SIGSTOP "
							  "or a debugger): the others cannot go on "
							  "without it", l->rank, p->host[l->rank], l->pid,
						   now - l->stopped);
		}
		/* one that failed tells why before it goes: pn_xproxy_error looks */
		if (gone)
			return thread_gone(p, -EPIPE, "cross-node proxy: rank %d (host %s, pid %d) is "
						      "gone (it failed or was killed)", l->rank,
					   p->host[l->rank], l->pid);
	}
	return 0;
}

/* The job's ranks on this host and the peers' sockets: one that went. */
static int peers_alive(struct pn_xproxy *p)
{
	int q;

	if (locals_alive(p))
		return -EPIPE;
	/* verbs: nothing travels on the peers' sockets, so one that ends is a peer gone */
	for (q = 0; p->xv && q < p->cfg.nnodes; q++) {
		struct pollfd pfd = { .fd = p->peers[q].lane[0].fd, .events = POLLIN };
		char b;

		if (q == p->cfg.me || poll(&pfd, 1, 0) <= 0)
			continue;
		if (recv(pfd.fd, &b, 1, MSG_PEEK | MSG_DONTWAIT) == 0 ||
		    (pfd.revents & (POLLERR | POLLHUP)))
			return thread_gone(p, -EPIPE, "cross-node proxy: rank %d (host %s) closed its "
						      "connection (the rank failed or was killed)",
					   p->peers[q].rank, p->host[p->peers[q].rank]);
	}
	return 0;
}

/* A tcp sender's warm-up pass: the next frame to every peer whose frame
 * before it came; >0 moved, <0 failed, 0 waiting; x->warming 0 when done. */
static int warm_send(struct pn_xproxy *p, struct xrole *x)
{
	int q, r, moved = 0, left = 0;

	for (q = 0; q < p->cfg.nnodes; q++) {
		struct xlane *l = &p->peers[q].lane[x->lane];
		uint64_t tx = ld_acq(&l->warm_tx);

		if (q == p->cfg.me || tx == XWARM_FRAMES)
			continue;
		left = 1;
		if (tx > ld_acq(&l->warm_rx))
			continue; /* lockstep: the peer's frame tx - 1 first */
		r = tcp_send(p, &p->peers[q], x->lane, 0, XWARM_CHUNK, 0);
		if (r < 0)
			return r;
		if (r) {
			st_rel(&l->warm_tx, tx + 1);
			moved = 1;
		}
	}
	if (!left)
		x->warming = 0;
	return moved;
}

/*
 * tcp: ticket t's copies go on the lanes of their counts to their peers
 * (every sender walks every ticket and keeps the counts alike): this
 * sender's part of it, the peers of the mask whose count falls on its lane.
 */
static uint64_t tcp_part(struct pn_xproxy *p, struct xrole *x, uint64_t mask)
{
	uint64_t part = 0;
	int q;

	for (q = 0; q < p->cfg.nnodes; q++) {
		if (!(mask >> q & 1))
			continue;
		x->cur[q] = x->seq[q]++;
		if (x->cur[q] % (uint64_t)p->nsock == (uint64_t)x->lane)
			part |= 1ull << q;
	}
	return part;
}

/* tcp: this sender is done with ticket t; the last one of them raises sent. */
static void tcp_sent(struct pn_xproxy *p, struct penny_xout_slot *o, uint64_t t)
{
	uint32_t *a = &p->acks[t % p->cfg.slots];

	if (p->nsock > 1 && __atomic_add_fetch(a, 1, __ATOMIC_ACQ_REL) < (uint32_t)p->nsock)
		return;
	/* the slot's next ticket comes only after sent: no sender is on it */
	__atomic_store_n(a, 0, __ATOMIC_RELAXED);
	st_rel(&o->sent, t + 1);
}

/*
 * A sender's pass: its outbox tickets to the peers of their masks; >0
 * moved, <0 failed.  A peer's chunks are counted per peer (shm: xpeer's
 * schunk, verbs: its own count, tcp: tcp_part), which is where they land
 * in its inbox: a ticket that leaves a peer out takes none of its slots.
 */
static int pump_send(struct pn_xproxy *p, struct xrole *x)
{
	struct penny_xout_slot *o = out_slot(p, x->ticket);
	uint64_t all = p->cfg.nnodes == 64 ? ~0ull : (1ull << p->cfg.nnodes) - 1;
	int q, moved = 0, r;

	if (x->warming)
		return warm_send(p, x);

	all &= ~(1ull << p->cfg.me);
	if (!x->sending && ld_acq(&o->ready) == x->ticket + 1) {
		if (o->len > p->cfg.slot_bytes)
			return thread_fail(p, -EPROTO, "cross-node proxy: the kernel put %llu bytes in "
						       "a slot of %llu",
					   (unsigned long long)o->len,
					   (unsigned long long)p->cfg.slot_bytes);
		x->pending = p->shm || p->xv ? o->mask & all : tcp_part(p, x, o->mask & all);
		x->sending = 1;
		if (p->xv)
			pn_xverbs_begin(p->xv, x->ticket);
	}
	for (q = 0; x->sending && q < p->cfg.nnodes; q++) {
		if (!(x->pending >> q & 1))
			continue;
		r = p->shm ? shm_send(p, &p->peers[q], x->ticket, o->len)
		    : p->xv ? pn_xverbs_put(p->xv, q, x->ticket, o->len)
			   : tcp_send(p, &p->peers[q], x->lane, x->ticket, x->cur[q], o->len);
		if (r < 0)
			return p->xv ? thread_fail(p, r, "%s", pn_errmsg(r)) : r;
		if (r) {
			x->pending &= ~(1ull << q);
			moved = 1;
		}
	}
	if (x->sending && !x->pending) {
		/* verbs: sent rises when the writes complete (pn_xverbs_progress) */
		if (p->xv)
			pn_xverbs_seal(p->xv, x->ticket);
		else if (p->shm)
			st_rel(&o->sent, x->ticket + 1);
		else
			tcp_sent(p, o, x->ticket);
		x->ticket++;
		x->sending = 0;
		moved = 1;
	}
	return moved;
}

/* A receiver's pass (tcp): its socket of every peer to the inbox. */
static int pump_recv(struct pn_xproxy *p, struct xrole *x)
{
	int q, moved = 0, r;

	for (q = 0; q < p->cfg.nnodes; q++) {
		if (q == p->cfg.me)
			continue;
		/* a few chunks per peer per pass: the others wait less */
		for (int i = 0; i < 4; i++) {
			r = tcp_recv(p, &p->peers[q], x->lane);
			if (r < 0)
				return r;
			if (!r)
				break;
			moved = 1;
		}
	}
	return moved;
}

/* Work begun and not finished (a partial chunk on a socket, a ticket
 * waiting for a slot): what the timeout watches. */
static int busy(const struct pn_xproxy *p, const struct xrole *x)
{
	int q;

	if (!x->recv)
		return x->sending || (p->xv && pn_xverbs_waiting_on(p->xv) >= 0);
	for (q = 0; q < p->cfg.nnodes; q++)
		if (q != p->cfg.me && p->peers[q].lane[x->lane].rgot)
			return 1;
	return 0;
}

/* The rank a stalled role waits on: a sender's first peer still to take
 * the chunk, a receiver's first peer in the middle of one; -1 none. */
static int stalled_on(const struct pn_xproxy *p, const struct xrole *x)
{
	int q;

	for (q = 0; q < p->cfg.nnodes; q++) {
		if (q == p->cfg.me)
			continue;
		if (x->recv ? p->peers[q].lane[x->lane].rgot != 0 : (x->pending >> q & 1))
			return p->peers[q].rank;
	}
	return -1;
}

static void *thread_main(void *arg)
{
	struct xrole *x = arg;
	struct pn_xproxy *p = x->p;
	double last = pn_now(), watched = last;
	unsigned spins = 0;
	int moved = 0;

	while (!__atomic_load_n(&p->stop, __ATOMIC_ACQUIRE)) {
		int r = x->recv ? pump_recv(p, x) : pump_send(p, x);
		double now;

		if (r >= 0 && p->xv) {
			int c = pn_xverbs_progress(p->xv);

			r = c < 0 ? thread_fail(p, c, "%s", pn_errmsg(c)) : r | c;
		}

		if (__atomic_load_n(&p->failed, __ATOMIC_ACQUIRE))
			break;

		if (r < 0)
			break;
		if (r) {
			spins = 0;
			moved = 1;
			continue;
		}
		if (++spins < 256)
			continue;
		spins = 0;
		now = pn_now();
		if (moved) {
			last = now;
			moved = 0;
		}
		if (x == &p->roles[0] && now - watched > 0.1) {
			watched = now;
			if (peers_alive(p))
				break;
		}
		if (busy(p, x) && now - last > p->cfg.timeout) {
			int w = p->xv ? pn_xverbs_waiting_on(p->xv) : -1;

			if (w < 0)
				w = stalled_on(p, x);
			if (p->xv && w >= 0)
				thread_fail(p, -ETIMEDOUT, "cross-node proxy: no progress for %g s over "
							   "verbs (rank %d has not freed its inbox "
							   "slots or acknowledged writes)",
					    p->cfg.timeout, w);
			else if (w >= 0)
				thread_fail(p, -ETIMEDOUT, "cross-node proxy: no progress for %g s %s "
							   "rank %d (host %s): it stopped %s (stopped "
							   "or hung)",
					    p->cfg.timeout, x->recv ? "receiving from" : "sending to", w,
					    p->host[w], x->recv ? "sending" : "taking data");
			else
				thread_fail(p, -ETIMEDOUT, "cross-node proxy: no progress for %g s (a "
							   "peer stopped reading or writing)",
					    p->cfg.timeout);
			break;
		}
		if (now - last > 0.05 &&
		    pn_now_ns() > __atomic_load_n(&p->hot_until, __ATOMIC_ACQUIRE)) {
			/* idle for a while, and no measurement is near
			 * (pn_xproxy_wake): nap (the next call pays at most this) */
			struct timespec ts = { 0, 20000 };

			nanosleep(&ts, NULL);
		} else if (p->oversubscribed || now - last > 50e-6) {
			/* idle 50 us: the thread that feeds this one may be
			 * waiting for a core (returns at once when none is) */
			sched_yield();
		}
	}
	return NULL;
}

/* ---- setup ---- */

static int map_anon(size_t bytes, char **out)
{
	/* populated: no first touch of a box inside a timed call */
	void *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);

	if (m == MAP_FAILED)
		return pn_err(-errno, "cross-node proxy: cannot map %zu bytes: %s", bytes,
			      strerror(errno));
	*out = m;
	return 0;
}

/*
 * Map an inbox: create (mine: O_EXCL, never another's file) or open a
 * peer's, which must be a regular file of this user that no one else may
 * touch (a name another user made is not a peer's inbox).
 */
static int map_shm(const char *name, size_t bytes, int create, char **out)
{
	struct stat st;
	int fd, e;
	void *m;

	fd = shm_open(name, O_RDWR | O_CLOEXEC | O_NOFOLLOW | (create ? O_CREAT | O_EXCL : 0), 0600);
	if (fd < 0)
		return pn_err(-errno, "cross-node proxy: shared memory '%s': %s", name,
			      strerror(errno));
	if (create && ftruncate(fd, (off_t)bytes)) {
		e = errno;
		close(fd);
		return pn_err(-e, "cross-node proxy: cannot size '%s' to %zu bytes: %s", name,
			      bytes, strerror(e));
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
	    (st.st_mode & 077)) {
		close(fd);
		return pn_err(-EPERM, "cross-node proxy: '%s' is not an inbox of this user (uid %u) "
			      "that only it may use: refusing it", name, (unsigned)geteuid());
	}
	if ((size_t)st.st_size != bytes) {
		close(fd);
		return pn_err(-EINVAL, "cross-node proxy: '%s' is not the inbox of %zu bytes", name,
			      bytes);
	}
	m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
	e = errno;
	close(fd);
	if (m == MAP_FAILED)
		return pn_err(-e, "cross-node proxy: cannot map '%s': %s", name, strerror(e));
	*out = m;
	return 0;
}

/*
 * My inbox under a name no one can guess ahead: the pid (what a killed
 * rank's leftovers are told by) and 64 random bits; a name that exists
 * (another user's, made ahead) is passed over, never opened.
 */
static int make_inbox(struct pn_xproxy *p)
{
	int tries, ret = -EEXIST;

	for (tries = 0; tries < 8 && ret == -EEXIST; tries++) {
		uint64_t r;

		if (getrandom(&r, sizeof(r), 0) != (ssize_t)sizeof(r))
			return pn_err(-EIO, "cross-node proxy: no random bytes: %s", strerror(errno));
		snprintf(p->in_name, sizeof(p->in_name), "/penny-xbox-%d-%016llx", (int)getpid(),
			 (unsigned long long)r);
		ret = map_shm(p->in_name, p->in_bytes, 1, &p->in);
	}
	if (ret)
		p->in_name[0] = 0;
	return ret;
}

/* Every member on this host (emulated nodes): shm is possible. */
static int all_here(struct pn_comm *c, const struct pn_xproxy_cfg *cfg)
{
	const char *me = pn_boot_host(c->boot, c->rank);
	int q;

	for (q = 0; q < cfg->nnodes; q++)
		if (strcmp(pn_boot_host(c->boot, cfg->ranks[q]), me))
			return 0;
	return 1;
}

struct xname {
	char name[96];
};

static int setup_shm(struct pn_xproxy *p, struct pn_comm *c)
{
	struct xname mine, *all = calloc((size_t)c->nranks, sizeof(*all));
	int q, ret = 0, ret2;

	if (!all)
		return pn_err(-ENOMEM, "out of memory");
	memset(&mine, 0, sizeof(mine));
	ret = make_inbox(p);
	if (!ret)
		snprintf(mine.name, sizeof(mine.name), "%s", p->in_name);
	/* collective whatever happened: the others wait for the names */
	ret2 = pn_boot_allgather(c->boot, &mine, all, sizeof(mine));
	ret = ret ? ret : ret2;
	for (q = 0; !ret && q < p->cfg.nnodes; q++) {
		const char *n = all[p->cfg.ranks[q]].name;

		if (q == p->cfg.me)
			continue;
		if (!n[0] || memchr(n, 0, sizeof(all->name)) == NULL)
			ret = pn_err(-EPROTO, "cross-node proxy: rank %d has no inbox", p->cfg.ranks[q]);
		else
			ret = map_shm(n, p->in_bytes, 0, &p->peers[q].box);
	}
	free(all);
	/* once every rank mapped what it needs, the names go */
	ret2 = pn_boot_agree_err(c->boot, ret, 1, NULL);
	if (p->in_name[0]) {
		shm_unlink(p->in_name);
		p->in_name[0] = 0;
	}
	return ret2;
}

static int setup_tcp(struct pn_xproxy *p, struct pn_comm *c)
{
	static unsigned serial;
	unsigned char *want = calloc((size_t)c->nranks, 1);
	int *fds = calloc((size_t)c->nranks, sizeof(int));
	int q, j, ret = 0;

	if (!want || !fds) {
		free(want);
		free(fds);
		return pn_err(-ENOMEM, "out of memory");
	}
	for (q = 0; q < p->cfg.nnodes; q++)
		if (q != p->cfg.me)
			want[p->cfg.ranks[q]] = 1;
	/* tags apart from the transport's meshes (their channel counts) */
	for (j = 0; !ret && j < p->nsock; j++) {
		ret = pn_tcp_mesh(&c->tp, want, 0x78700000u | (__atomic_fetch_add(&serial, 1,
										  __ATOMIC_RELAXED) & 0xffff),
				  fds);
		for (q = 0; !ret && q < p->cfg.nnodes; q++)
			if (q != p->cfg.me) {
				p->peers[q].lane[j].fd = fds[p->cfg.ranks[q]];
				p->peers[q].lane[j].rb = malloc(XRB_BYTES);
				if (!p->peers[q].lane[j].rb)
					ret = pn_err(-ENOMEM, "out of memory");
			}
	}
	free(want);
	free(fds);
	return ret;
}

/* Until every socket's warm-up is done both ways, or a thread failed, or
 * the timeout passed. */
static int warm_wait(struct pn_xproxy *p, int rank)
{
	double deadline = pn_now() + p->cfg.timeout;
	int q, j, left = 1;

	while (left) {
		left = 0;
		for (q = 0; q < p->cfg.nnodes && !left; q++)
			for (j = 0; q != p->cfg.me && j < p->nsock && !left; j++)
				left = ld_acq(&p->peers[q].lane[j].warm_tx) < XWARM_FRAMES ||
				       ld_acq(&p->peers[q].lane[j].warm_rx) < XWARM_FRAMES;
		if (__atomic_load_n(&p->failed, __ATOMIC_ACQUIRE))
			return pn_xproxy_error(p);
		if (!left)
			break;
		if (pn_now() > deadline)
			return pn_err(-ETIMEDOUT, "cross-node proxy of rank %d: the warm-up of its "
					      "connections did not end within %g s (a peer stopped)",
				      rank, p->cfg.timeout);
		nanosleep(&(struct timespec){ 0, 50000 }, NULL);
	}
	p->warmed = XWARM_FRAMES;
	return 0;
}

void pn_xproxy_wake(struct pn_xproxy *p)
{
	if (p)
		__atomic_store_n(&p->hot_until, pn_now_ns() + 1000000000ull, __ATOMIC_RELEASE);
}

uint64_t pn_xproxy_warmed(const struct pn_xproxy *p)
{
	return p ? p->warmed : 0;
}

/* Who the threads name, and the job's other ranks on this host they watch. */
static int watch_locals(struct pn_xproxy *p, struct pn_comm *c)
{
	const char *me = pn_boot_host(c->boot, c->rank);
	int r;

	p->c = c;
	p->host = calloc((size_t)c->nranks, sizeof(*p->host));
	p->local = calloc((size_t)c->nranks, sizeof(*p->local));
	if (!p->host || !p->local)
		return pn_err(-ENOMEM, "out of memory");
	for (r = 0; r < c->nranks; r++) {
		struct xlocal *l = &p->local[p->nlocal];
		char st;

		p->host[r] = pn_boot_host(c->boot, r);
		if (r == c->rank || strcmp(p->host[r], me) || pn_boot_pid(c->boot, r) <= 0)
			continue;
		l->rank = r;
		l->pid = pn_boot_pid(c->boot, r);
		if (!pn_sysfs_is_live() || proc_stat(l->pid, &st, &l->start))
			l->start = 0;
		p->nlocal++;
	}
	return 0;
}

int pn_xproxy_open(struct pn_xproxy **out, struct pn_comm *c, const struct pn_xproxy_cfg *cfg)
{
	struct pn_xproxy *p;
	int q, ret, same, verbs;

	*out = NULL;
	ret = pn_xproxy_check_cfg(cfg);
	if (ret)
		return ret;
	p = calloc(1, sizeof(*p));
	if (!p)
		return pn_err(-ENOMEM, "out of memory");
	p->cfg = *cfg;
	p->ranks = calloc((size_t)cfg->nnodes, sizeof(int));
	p->peers = calloc((size_t)cfg->nnodes, sizeof(*p->peers));
	if (!p->ranks || !p->peers) {
		pn_xproxy_close(p);
		return pn_err(-ENOMEM, "out of memory");
	}
	memcpy(p->ranks, cfg->ranks, (size_t)cfg->nnodes * sizeof(int));
	p->cfg.ranks = p->ranks;
	for (q = 0; q < cfg->nnodes; q++) {
		p->peers[q].q = q;
		p->peers[q].rank = cfg->ranks[q];
		for (int j = 0; j < XSOCK_MAX; j++) {
			p->peers[q].lane[j].fd = -1;
			p->peers[q].lane[j].rchunk = (uint64_t)j;
		}
	}
	ret = watch_locals(p, c);
	if (ret) {
		pn_xproxy_close(p);
		return ret;
	}
	/* every member decides alike: "auto" looks at every member's host and
	 * RDMA port (what the ranks published at init) */
	same = all_here(c, cfg);
	if (cfg->transport && !strcmp(cfg->transport, "shm") && !same) {
		pn_xproxy_close(p);
		return pn_err(-EINVAL, "cross-node proxy: shm needs every node on this host "
				       "(emulated nodes); rank %d's peers are elsewhere", c->rank);
	}
	if (cfg->transport && (!strcmp(cfg->transport, "tcp") || !strcmp(cfg->transport, "verbs")))
		p->shm = 0;
	else
		p->shm = same;
	verbs = cfg->transport && !strcmp(cfg->transport, "verbs") ? 1
		: cfg->transport && strcmp(cfg->transport, "auto") ? 0
		: !same && pn_xverbs_possible(c, cfg->ranks, cfg->nnodes);
	/* verbs: one socket per peer, only to hear that a peer is gone */
	p->nsock = p->shm || verbs ? 1 : cfg->sockets;
	p->acks = calloc(cfg->slots, sizeof(*p->acks));
	if (!p->acks) {
		pn_xproxy_close(p);
		return pn_err(-ENOMEM, "out of memory");
	}
	p->out_bytes = penny_xbox_out_bytes(cfg->slots, cfg->slot_bytes);
	p->in_bytes = penny_xbox_in_bytes(cfg->nnodes, cfg->slots, cfg->slot_bytes);
	ret = map_anon(p->out_bytes, &p->out);
	if (!ret && !p->shm)
		ret = map_anon(p->in_bytes, &p->in);
	if (!ret)
		((struct penny_xctl *)p->out)->magic = PENNY_XBOX_MAGIC;
	/* the collective part runs on every rank whatever happened above */
	{
		int r = p->shm ? setup_shm(p, c) : setup_tcp(p, c);

		ret = r ? r : ret;
	}
	if (verbs) {
		struct pn_xverbs_cfg vc = {
			.nnodes = cfg->nnodes, .me = cfg->me, .ranks = cfg->ranks,
			.slots = cfg->slots, .slot_bytes = cfg->slot_bytes, .timeout = cfg->timeout,
			.qps = cfg->qps, .nic = cfg->nic, .out = ret ? NULL : p->out, .in = p->in,
			.out_bytes = p->out_bytes, .in_bytes = p->in_bytes,
		};
		/* collective too: every rank takes part (without boxes after a failure) */
		int r = pn_xverbs_open(&p->xv, c, &vc);

		ret = r ? r : ret;
	}
	/* the proxies and the ranks' threads of this host share its cores */
	{
		const char *me = pn_boot_host(c->boot, c->rank);
		long here = 0, r;

		for (r = 0; r < c->nranks; r++)
			here += !strcmp(pn_boot_host(c->boot, (int)r), me);
		p->oversubscribed = 2 * here > sysconf(_SC_NPROCESSORS_ONLN);
	}
	p->warm = !p->shm && !p->xv;
	pn_xproxy_wake(p);
	for (q = 0; !ret && q < (p->shm || p->xv ? 1 : 2 * p->nsock); q++) {
		p->roles[q].p = p;
		p->roles[q].recv = q >= p->nsock;
		p->roles[q].lane = q % p->nsock;
		p->roles[q].ticket = 0;
		p->roles[q].warming = p->warm && !p->roles[q].recv;
		ret = -pthread_create(&p->thread[q], NULL, thread_main, &p->roles[q]);
		if (ret)
			pn_err(ret, "cross-node proxy: cannot start its thread: %s", strerror(-ret));
		else
			p->started++;
	}
	if (!ret && p->warm)
		ret = warm_wait(p, c->rank);
	if (ret) {
		pn_xproxy_close(p);
		return ret;
	}
	PN_DBG(PN_LOG_PLUGIN, "cross-node proxy of rank %d: %s%s%s, %d nodes, %u slots of %llu bytes",
	       c->rank, pn_xproxy_transport(p), p->xv ? " on " : "", pn_xverbs_nic(p->xv),
	       cfg->nnodes, cfg->slots, (unsigned long long)cfg->slot_bytes);
	if (p->warm)
		PN_DBG(PN_LOG_PLUGIN, "cross-node proxy of rank %d: warmed, %llu frames each way on "
		       "each of %d sockets to %d peers", c->rank, (unsigned long long)p->warmed,
		       p->nsock, cfg->nnodes - 1);
	*out = p;
	return 0;
}

void pn_xproxy_close(struct pn_xproxy *p)
{
	int q;

	if (!p)
		return;
	__atomic_store_n(&p->stop, 1, __ATOMIC_RELEASE);
	for (q = 0; q < p->started; q++)
		pthread_join(p->thread[q], NULL);
	/* its registrations of the boxes go before the boxes */
	pn_xverbs_close(p->xv);
	for (q = 0; p->peers && q < p->cfg.nnodes; q++) {
		for (int j = 0; j < XSOCK_MAX; j++) {
			if (p->peers[q].lane[j].fd >= 0)
				close(p->peers[q].lane[j].fd);
			free(p->peers[q].lane[j].rb);
		}
		if (p->peers[q].box)
			munmap(p->peers[q].box, p->in_bytes);
	}
	if (p->in_name[0])
		shm_unlink(p->in_name);
	if (p->out)
		munmap(p->out, p->out_bytes);
	if (p->in)
		munmap(p->in, p->in_bytes);
	free(p->peers);
	free(p->acks);
	free(p->ranks);
	free(p->host);
	free(p->local);
	free(p);
}

void *pn_xproxy_outbox(const struct pn_xproxy *p)
{
	return p->out;
}

void *pn_xproxy_inbox(const struct pn_xproxy *p)
{
	return p->in;
}

const char *pn_xproxy_transport(const struct pn_xproxy *p)
{
	return p->shm ? "shm" : p->xv ? "verbs" : "tcp";
}

/*
 * The job's reason, where one was told: rank 0's abort over the rendezvous
 * (the first reason it heard, passed to every rank), else the node
 * segment's (a rank of this node gave up), else a rank's connection to
 * the rendezvous seen closed: a rank that heard a notice ends on it, so a
 * closed connection names the rank at fault only where no notice came.
 * 0 when none, else its code with why set.
 */
static int job_reason(struct pn_xproxy *p, char *why, size_t len)
{
	int r = pn_boot_poll_abort(p->c->boot);

	if (r != -ECANCELED && pn_comm_local_notice(p->c, why, len))
		return -ECANCELED;
	if (r)
		snprintf(why, len, "%s", pn_errmsg(r));
	return r;
}

/*
 * A peer that went may have gone for a reason of its own, which the job
 * hears as the engine tells it; waited for up to PN_BOOT_ROOT_GRACE (the
 * others' waits end about when this one did).  None: the peer is blamed.
 */
static void explain(struct pn_xproxy *p)
{
	double until = pn_now() + PN_BOOT_ROOT_GRACE;
	char why[256];
	int r;

	while (!(r = job_reason(p, why, sizeof(why))) && pn_now() < until)
		usleep(10000);
	if (!r)
		return;
	snprintf(p->msg, sizeof(p->msg), "%s", why);
	p->err = r;
}

int pn_xproxy_error(struct pn_xproxy *p)
{
	char why[256];
	int r;

	if (!p)
		return 0;
	if (!__atomic_load_n(&p->failed, __ATOMIC_ACQUIRE)) {
		/* the engine gave up here or on this node (often an echo: a peer
		 * that went): the job's reason when there is one */
		if (p->c && pn_comm_local_notice(p->c, why, sizeof(why))) {
			r = job_reason(p, why, sizeof(why));
			return pn_err(r ? r : -ECANCELED, "%s", why);
		}
		return 0;
	}
	if (!p->told && p->c) {
		p->told = 1;
		if (p->echo)
			explain(p);
		/* the others hear this reason, as from the host engine */
		if (p->err != -ECANCELED) {
			snprintf(why, sizeof(why), "rank %d (host %s): %s", p->c->rank,
				 p->host[p->c->rank], p->msg);
			pn_comm_abort(p->c, why);
		}
	}
	return pn_err(p->err, "%s", p->msg);
}
