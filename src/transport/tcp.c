/* SPDX-License-Identifier: MIT */
/*
 * TCP between any two ranks: one nonblocking socket per peer, channels
 * multiplexed by a small frame header.  progress() writes posted slots and
 * reads into free receive slots of every peer, so two ranks sending to each
 * other at once never deadlock.  The sockets come from the tcp mesh
 * (tcpmesh.c), whose hello is proven with a key of the job's ranks.
 */
#define _GNU_SOURCE
#include "transport/transport.h"
#include "base/log.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

struct tcp_frame {
	uint32_t chan;
	uint32_t len;
};

struct tcp_conn {
	char *sbuf, *rbuf;
	size_t slen[PN_FIFO_SLOTS], rlen[PN_FIFO_SLOTS];
	uint64_t head, done;	/* posted, fully written */
	uint64_t filled, rtail;	/* fully received, consumed */
};

struct tcp_peer {
	int fd;
	int rank;
	/* posted slots in order: channel of each */
	int *q;
	uint64_t qhead, qtail;
	size_t qcap;
	size_t off;		/* bytes of the current item written (frame + data) */
	/* receive state */
	struct tcp_frame fr;
	size_t fr_got, data_got;
};

struct pn_tcp_state {
	int listen_fd;
	int npeers;
	struct tcp_peer *peers;	/* [rank], fd -1 when not tcp */
};

static int tcp_can_connect(struct pn_tp_group *c, int peer)
{
	(void)c;
	(void)peer;
	return 1;
}

static int peer_gone(struct pn_tp_group *c, int r, const char *what, int err)
{
	return pn_err(-EPIPE, "rank %d (host %s) %s: %s", r, pn_tp_host(c, r), what,
		      err ? strerror(err) : "connection closed (the rank failed or was killed)");
}

static int alloc_conns(struct pn_tp_group *c, int p)
{
	struct tcp_peer *tp = &c->tcp->peers[p];
	int ch;

	tp->qcap = (size_t)PN_FIFO_SLOTS * (size_t)c->nchannels;
	tp->q = calloc(tp->qcap, sizeof(int));
	if (!tp->q)
		return pn_err(-ENOMEM, "out of memory");
	for (ch = 0; ch < c->nchannels; ch++) {
		struct pn_conn *k = pn_tp_conn(c, p, ch);
		struct tcp_conn *tc = calloc(1, sizeof(*tc));

		if (!tc)
			return pn_err(-ENOMEM, "out of memory");
		tc->sbuf = malloc((size_t)PN_FIFO_SLOTS * PN_FIFO_SLOT_BYTES);
		tc->rbuf = malloc((size_t)PN_FIFO_SLOTS * PN_FIFO_SLOT_BYTES);
		k->priv = tc;
		if (!tc->sbuf || !tc->rbuf)
			return pn_err(-ENOMEM, "out of memory");
	}
	return 0;
}

static int tcp_setup(struct pn_tp_group *c)
{
	struct pn_tcp_state *t;
	unsigned char *want;
	int *fds;
	int p, ret = 0;

	t = calloc(1, sizeof(*t));
	want = calloc((size_t)c->nranks, 1);
	fds = calloc((size_t)c->nranks, sizeof(int));
	if (!t || !want || !fds) {
		free(t);
		free(want);
		free(fds);
		return pn_err(-ENOMEM, "out of memory");
	}
	c->tcp = t;
	t->listen_fd = -1;
	t->npeers = c->nranks;
	t->peers = calloc((size_t)c->nranks, sizeof(*t->peers));
	if (!t->peers)
		ret = pn_err(-ENOMEM, "out of memory");
	for (p = 0; p < c->nranks && !ret; p++) {
		t->peers[p].fd = -1;
		t->peers[p].rank = p;
		want[p] = c->peers[p].transport == &pn_transport_tcp;
		if (want[p])
			ret = alloc_conns(c, p);
	}
	/* collective even when this rank failed: the others wait for it */
	if (t->peers) {
		int r = pn_tcp_mesh(c, want, (uint32_t)c->nchannels, fds);

		ret = ret ? ret : r;
		for (p = 0; p < c->nranks; p++)
			t->peers[p].fd = r ? -1 : fds[p];
	}
	free(want);
	free(fds);
	return ret;
}

static void *tcp_send_slot(struct pn_conn *k, size_t *cap)
{
	struct tcp_conn *tc = k->priv;

	if (tc->head - tc->done >= PN_FIFO_SLOTS)
		return NULL;
	*cap = PN_FIFO_SLOT_BYTES;
	return tc->sbuf + (tc->head % PN_FIFO_SLOTS) * PN_FIFO_SLOT_BYTES;
}

/* Write as much of the posted queue as the socket takes. */
static int peer_write(struct pn_tp_group *c, struct tcp_peer *tp)
{
	while (tp->qtail < tp->qhead) {
		int ch = tp->q[tp->qtail % tp->qcap];
		struct tcp_conn *tc = pn_tp_conn(c, tp->rank, ch)->priv;
		size_t slot = tc->done % PN_FIFO_SLOTS, len = tc->slen[slot];
		struct tcp_frame fr = { .chan = (uint32_t)ch, .len = (uint32_t)len };
		struct iovec iov[2];
		struct msghdr mh = { .msg_iov = iov };
		ssize_t n;

		if (tp->off < sizeof(fr)) {
			iov[0].iov_base = (char *)&fr + tp->off;
			iov[0].iov_len = sizeof(fr) - tp->off;
			iov[1].iov_base = tc->sbuf + slot * PN_FIFO_SLOT_BYTES;
			iov[1].iov_len = len;
			mh.msg_iovlen = 2;
		} else {
			iov[0].iov_base = tc->sbuf + slot * PN_FIFO_SLOT_BYTES + (tp->off - sizeof(fr));
			iov[0].iov_len = len - (tp->off - sizeof(fr));
			mh.msg_iovlen = 1;
		}
		n = sendmsg(tp->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
				return 0;
			return peer_gone(c, tp->rank, "tcp send failed", errno);
		}
		tp->off += (size_t)n;
		if (tp->off < sizeof(fr) + len)
			return 0;
		tp->off = 0;
		tp->qtail++;
		tc->done++;
	}
	return 0;
}

/* Read frames into free receive slots; stop when the channel's FIFO is full. */
static int peer_read(struct pn_tp_group *c, struct tcp_peer *tp)
{
	for (;;) {
		struct tcp_conn *tc;
		ssize_t n;

		if (tp->fr_got < sizeof(tp->fr)) {
			n = recv(tp->fd, (char *)&tp->fr + tp->fr_got, sizeof(tp->fr) - tp->fr_got,
				 MSG_DONTWAIT);
			if (n == 0)
				return peer_gone(c, tp->rank, "closed the tcp connection", 0);
			if (n < 0)
				return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR
					       ? 0
					       : peer_gone(c, tp->rank, "tcp receive failed", errno);
			tp->fr_got += (size_t)n;
			if (tp->fr_got < sizeof(tp->fr))
				return 0;
			/* unsigned: a channel past INT_MAX is no negative index */
			if (tp->fr.chan >= (uint32_t)c->nchannels || tp->fr.len > PN_FIFO_SLOT_BYTES)
				return pn_err(-EPROTO, "rank %d (host %s) sent a bad tcp frame "
					      "(channel %u, %u bytes)", tp->rank,
					      pn_tp_host(c, tp->rank), tp->fr.chan, tp->fr.len);
			tp->data_got = 0;
		}
		tc = pn_tp_conn(c, tp->rank, (int)tp->fr.chan)->priv;
		if (tc->filled - tc->rtail >= PN_FIFO_SLOTS)
			return 0; /* receiver is behind: back-pressure */
		if (tp->data_got < tp->fr.len) {
			n = recv(tp->fd, tc->rbuf + (tc->filled % PN_FIFO_SLOTS) * PN_FIFO_SLOT_BYTES +
						 tp->data_got,
				 tp->fr.len - tp->data_got, MSG_DONTWAIT);
			if (n == 0)
				return peer_gone(c, tp->rank, "closed the tcp connection", 0);
			if (n < 0)
				return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR
					       ? 0
					       : peer_gone(c, tp->rank, "tcp receive failed", errno);
			tp->data_got += (size_t)n;
			if (tp->data_got < tp->fr.len)
				return 0;
		}
		tc->rlen[tc->filled % PN_FIFO_SLOTS] = tp->fr.len;
		tc->filled++;
		tp->fr_got = 0;
	}
}

static int tcp_send_post(struct pn_conn *k, size_t len)
{
	struct tcp_conn *tc = k->priv;
	struct tcp_peer *tp = &k->g->tcp->peers[k->peer];

	tc->slen[tc->head % PN_FIFO_SLOTS] = len;
	tc->head++;
	tp->q[tp->qhead % tp->qcap] = k->chan;
	tp->qhead++;
	return peer_write(k->g, tp);
}

static const void *tcp_recv_slot(struct pn_conn *k, size_t *len)
{
	struct tcp_conn *tc = k->priv;

	if (tc->filled == tc->rtail)
		return NULL;
	*len = tc->rlen[tc->rtail % PN_FIFO_SLOTS];
	return tc->rbuf + (tc->rtail % PN_FIFO_SLOTS) * PN_FIFO_SLOT_BYTES;
}

static int tcp_recv_release(struct pn_conn *k)
{
	struct tcp_conn *tc = k->priv;

	tc->rtail++;
	return 0;
}

static int tcp_progress(struct pn_tp_group *c)
{
	struct pn_tcp_state *t = c->tcp;
	int p, ret;

	if (!t)
		return 0;
	for (p = 0; p < t->npeers; p++) {
		struct tcp_peer *tp = &t->peers[p];

		if (tp->fd < 0)
			continue;
		ret = peer_write(c, tp);
		if (!ret)
			ret = peer_read(c, tp);
		if (ret)
			return ret;
	}
	return 0;
}

static int tcp_unsent(struct pn_tp_group *c)
{
	struct pn_tcp_state *t = c->tcp;
	int p;

	for (p = 0; t && p < t->npeers; p++)
		if (t->peers[p].fd >= 0 && t->peers[p].qtail < t->peers[p].qhead)
			return p;
	return -1;
}

static void tcp_close(struct pn_tp_group *c)
{
	struct pn_tcp_state *t = c->tcp;
	int p, ch;

	if (!t)
		return;
	for (p = 0; p < t->npeers; p++) {
		if (t->peers[p].fd >= 0)
			close(t->peers[p].fd);
		free(t->peers[p].q);
		if (c->peers[p].transport != &pn_transport_tcp)
			continue;
		for (ch = 0; ch < c->nchannels; ch++) {
			struct pn_conn *k = pn_tp_conn(c, p, ch);
			struct tcp_conn *tc = k->priv;

			if (tc) {
				free(tc->sbuf);
				free(tc->rbuf);
				free(tc);
			}
			k->priv = NULL;
		}
	}
	if (t->listen_fd >= 0)
		close(t->listen_fd);
	free(t->peers);
	free(t);
	c->tcp = NULL;
}

const struct pn_transport pn_transport_tcp = {
	.name = "tcp",
	.can_connect = tcp_can_connect,
	.setup = tcp_setup,
	.send_slot = tcp_send_slot,
	.send_post = tcp_send_post,
	.recv_slot = tcp_recv_slot,
	.recv_release = tcp_recv_release,
	.progress = tcp_progress,
	.unsent = tcp_unsent,
	.close = tcp_close,
};
