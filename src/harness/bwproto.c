/* SPDX-License-Identifier: MIT */
/*
 * penny bw's protocol: the hello frame (encode, check, decode), the
 * sockets of its server and client modes, and the data connection bound
 * to its run with the tcp mesh's hello (see harness/bwproto.h).
 */
#define _GNU_SOURCE
#include "harness/bwproto.h"
#include "base/log.h"
#include "base/util.h"
#include "transport/tcpmesh.h"

#include <errno.h>
#include <math.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

/* ------------------------------------------------------------ the frame */

static uint8_t *put_info(uint8_t *p, const struct pn_verbs_info *v)
{
	int i;

	p = pn_put_u32(p, v->magic);
	p = pn_put_u16(p, v->version);
	p = pn_put_u16(p, v->size);
	p = pn_put_bytes(p, v->gid, sizeof(v->gid));
	p = pn_put_u32(p, v->psn);
	p = pn_put_u32(p, v->rkey);
	p = pn_put_u64(p, v->addr);
	p = pn_put_u64(p, v->len);
	p = pn_put_u16(p, v->lid);
	*p++ = v->port;
	*p++ = v->ethernet;
	*p++ = v->gid_index;
	*p++ = v->gid_type;
	p = pn_put_u16(p, v->mtu);
	p = pn_put_u16(p, v->nqp);
	p = pn_put_u16(p, v->reserved);
	for (i = 0; i < PN_VERBS_MAX_QPS; i++)
		p = pn_put_u32(p, v->qpn[i]);
	return pn_put_bytes(p, v->dev, sizeof(v->dev));
}

static const uint8_t *get_info(const uint8_t *p, struct pn_verbs_info *v)
{
	int i;

	p = pn_get_u32(p, &v->magic);
	p = pn_get_u16(p, &v->version);
	p = pn_get_u16(p, &v->size);
	p = pn_get_bytes(p, v->gid, sizeof(v->gid));
	p = pn_get_u32(p, &v->psn);
	p = pn_get_u32(p, &v->rkey);
	p = pn_get_u64(p, &v->addr);
	p = pn_get_u64(p, &v->len);
	p = pn_get_u16(p, &v->lid);
	v->port = *p++;
	v->ethernet = *p++;
	v->gid_index = *p++;
	v->gid_type = *p++;
	p = pn_get_u16(p, &v->mtu);
	p = pn_get_u16(p, &v->nqp);
	p = pn_get_u16(p, &v->reserved);
	for (i = 0; i < PN_VERBS_MAX_QPS; i++)
		p = pn_get_u32(p, &v->qpn[i]);
	return pn_get_bytes(p, v->dev, sizeof(v->dev));
}

void pn_bw_hello_encode(const struct pn_bw_hello *h, uint8_t out[PN_BW_HELLO_LEN])
{
	const struct pn_bw_cfg *c = &h->cfg;
	struct pn_frame f = { .magic = PN_BW_HELLO_MAGIC, .version = PN_BW_PROTO_VERSION,
			      .type = PN_BW_MSG_HELLO, .len = PN_BW_HELLO_PAYLOAD };
	uint8_t *p = out + PN_FRAME_HDR_LEN;
	int i;

	pn_frame_put(out, &f);
	p = pn_put_u32(p, h->tcp);
	p = pn_put_u32(p, h->nrails);
	p = pn_put_u32(p, h->port_tcp);
	p = pn_put_u32(p, c->magic);
	p = pn_put_u16(p, c->version);
	p = pn_put_u16(p, c->size);
	p = pn_put_u32(p, c->op);
	p = pn_put_u32(p, c->flags);
	p = pn_put_u32(p, c->nqp);
	p = pn_put_u32(p, c->tx_depth);
	p = pn_put_u32(p, c->mtu);
	p = pn_put_u32(p, c->nsizes);
	p = pn_put_u64(p, c->iters);
	p = pn_put_f64(p, c->duration);
	for (i = 0; i < PN_BW_MAX_SIZES; i++)
		p = pn_put_u64(p, c->sizes[i]);
	p = pn_put_bytes(p, h->host, sizeof(h->host));
	p = pn_put_bytes(p, h->addr, sizeof(h->addr));
	for (i = 0; i < PN_BW_MAX_RAILS; i++) {
		p = pn_put_bytes(p, h->dev[i], sizeof(h->dev[i]));
		p = pn_put_f64(p, h->link_gbps[i]);
		p = put_info(p, &h->info[i]);
	}
	pn_put_bytes(p, h->err, sizeof(h->err));
}

static void decode(struct pn_bw_hello *h, const uint8_t *p)
{
	struct pn_bw_cfg *c = &h->cfg;
	int i;

	p = pn_get_u32(p, &h->tcp);
	p = pn_get_u32(p, &h->nrails);
	p = pn_get_u32(p, &h->port_tcp);
	p = pn_get_u32(p, &c->magic);
	p = pn_get_u16(p, &c->version);
	p = pn_get_u16(p, &c->size);
	p = pn_get_u32(p, &c->op);
	p = pn_get_u32(p, &c->flags);
	p = pn_get_u32(p, &c->nqp);
	p = pn_get_u32(p, &c->tx_depth);
	p = pn_get_u32(p, &c->mtu);
	p = pn_get_u32(p, &c->nsizes);
	p = pn_get_u64(p, &c->iters);
	p = pn_get_f64(p, &c->duration);
	for (i = 0; i < PN_BW_MAX_SIZES; i++)
		p = pn_get_u64(p, &c->sizes[i]);
	p = pn_get_bytes(p, h->host, sizeof(h->host));
	p = pn_get_bytes(p, h->addr, sizeof(h->addr));
	for (i = 0; i < PN_BW_MAX_RAILS; i++) {
		p = pn_get_bytes(p, h->dev[i], sizeof(h->dev[i]));
		p = pn_get_f64(p, &h->link_gbps[i]);
		p = get_info(p, &h->info[i]);
	}
	pn_get_bytes(p, h->err, sizeof(h->err));
}

int pn_bw_hello_check(const void *buf, size_t len)
{
	const uint8_t *b = buf;
	uint8_t m[4];
	struct pn_frame f;

	pn_put_u32(m, PN_BW_HELLO_MAGIC);
	if (memcmp(b, m, PN_MIN(len, sizeof(m))))
		return pn_err(-EPROTO, "not a penny bw client");
	if (len >= 6) {
		uint16_t v;

		pn_get_u16(b + 4, &v);
		if (v != PN_BW_PROTO_VERSION)
			return pn_err(-EPROTONOSUPPORT, "penny bw hello version %u; this penny speaks "
				      "bw protocol %u: run the same penny version on both ends", v,
				      PN_BW_PROTO_VERSION);
	}
	if (len < PN_FRAME_HDR_LEN)
		return -EAGAIN;
	pn_frame_get(&f, b);
	if (f.type != PN_BW_MSG_HELLO || f.len != PN_BW_HELLO_PAYLOAD)
		return pn_err(-EPROTO, "a penny bw message of type %u and %llu bytes, not a hello",
			      f.type, (unsigned long long)f.len);
	return len < PN_BW_HELLO_LEN ? -EAGAIN : 0;
}

static int terminated(const char *s, size_t len)
{
	return memchr(s, 0, len) != NULL;
}

int pn_bw_hello_decode(struct pn_bw_hello *h, const void *buf, size_t len)
{
	const char *why = NULL;
	int i, ret = pn_bw_hello_check(buf, len);

	if (ret == -EAGAIN || (!ret && len != PN_BW_HELLO_LEN))
		return pn_err(-EPROTO, "the peer is not a penny bw of this version (%zu bytes of "
			      "setup)", len);
	if (ret)
		return ret;
	decode(h, (const uint8_t *)buf + PN_FRAME_HDR_LEN);
	if (h->tcp > 1)
		why = "transport";
	else if (h->nrails > PN_BW_MAX_RAILS)
		why = "rail count";
	else if (h->port_tcp > 65535)
		why = "TCP port";
	else if (h->cfg.nsizes > PN_BW_MAX_SIZES)
		why = "size count";
	else if (!terminated(h->host, sizeof(h->host)) || !terminated(h->addr, sizeof(h->addr)) ||
		 !terminated(h->err, sizeof(h->err)))
		why = "string";
	for (i = 0; !why && i < PN_BW_MAX_RAILS; i++)
		if (!terminated(h->dev[i], sizeof(h->dev[i])))
			why = "device name";
	if (why)
		return pn_err(-EPROTO, "the peer's setup is malformed (%s)", why);
	return 0;
}

int pn_bw_hello_send(int fd, const struct pn_bw_hello *h, double timeout)
{
	uint8_t *w = malloc(PN_BW_HELLO_LEN);
	int ret;

	if (!w)
		return pn_err(-ENOMEM, "out of memory");
	pn_bw_hello_encode(h, w);
	ret = pn_bw_send_fd(fd, w, PN_BW_HELLO_LEN, timeout);
	free(w);
	return ret;
}

static int io_error(int ret)
{
	if (ret == -ETIMEDOUT)
		return pn_err(ret, "TCP: timed out waiting for the peer");
	if (ret == -EPIPE)
		return pn_err(ret, "TCP: the peer closed the connection");
	return pn_err(ret, "TCP: %s", strerror(-ret));
}

/* The peer's address for a message ("(local)" for a socketpair). */
static void peer_name(int fd, char *buf, size_t len)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);

	snprintf(buf, len, "(local)");
	if (!getpeername(fd, (struct sockaddr *)&ss, &sl) &&
	    (ss.ss_family == AF_INET || ss.ss_family == AF_INET6))
		pn_sock_addr_name(&ss, buf, len, 0);
}

int pn_bw_hello_recv(int fd, struct pn_bw_hello *h, double timeout)
{
	uint8_t *w = malloc(PN_BW_HELLO_LEN);
	double deadline = pn_now() + timeout;
	size_t got = 0, step[] = { 4, 6, PN_FRAME_HDR_LEN };
	char peer[64];
	int ret = 0, i;

	if (!w)
		return pn_err(-ENOMEM, "out of memory");
	/* the header a piece at a time: a peer of another version may send
	 * less, and one that is no penny bw (a banner, a reply) is told by its
	 * first bytes, not by a wait for a whole header */
	for (i = 0; i < 3 && (!ret || ret == -EAGAIN); i++) {
		ret = pn_sock_read_full(fd, w + got, step[i] - got, deadline);
		if (ret) {
			ret = io_error(ret);
			goto out;
		}
		got = step[i];
		ret = pn_bw_hello_check(w, got);
	}
	if (ret == -EPROTONOSUPPORT) {
		uint16_t v;

		pn_get_u16(w + 4, &v);
		peer_name(fd, peer, sizeof(peer));
		pn_err_clear();
		ret = pn_err(-EINVAL, "peer %s speaks bw protocol %u, this penny speaks %u: run the "
			     "same penny version on both ends", peer, v, PN_BW_PROTO_VERSION);
		goto out;
	}
	if (ret && ret != -EAGAIN) {
		peer_name(fd, peer, sizeof(peer));
		pn_err_clear();
		ret = pn_err(-EINVAL, "peer %s is not a penny bw of this version (its first bytes "
			     "are no bw hello): is -p its port?", peer);
		goto out;
	}
	ret = pn_sock_read_full(fd, w + PN_FRAME_HDR_LEN, PN_BW_HELLO_LEN - PN_FRAME_HDR_LEN,
				deadline);
	ret = ret ? io_error(ret) : pn_bw_hello_decode(h, w, PN_BW_HELLO_LEN);
out:
	free(w);
	return ret;
}

/* ------------------------------------------------------------ the server */

#define MAX_PENDING 16
/* the tcp mesh's tag of a bw data connection ("PBWD") */
#define DATA_TAG 0x44574250u

/* A connection the server accepted that has not said a whole hello yet. */
struct pending {
	int fd;
	double deadline;	/* accepted + timeout */
	size_t got;
	char who[80];		/* "address:port" */
	uint8_t challenge[PN_TCPM_NONCE_LEN];	/* a data connection's */
	uint8_t h[PN_BW_HELLO_LEN];
};

/* What the server takes: a client's hello, or the proof of a data key. */
struct gate {
	const uint8_t *key;		/* the data connection's key; NULL: a client */
	int me;				/* data: the listener's rank */
	struct pn_bw_hello *hello;	/* a client's, decoded */
	size_t len;			/* the bytes to read: the hello's */
};

static void drop(struct pending *p, int n, int i, const char *why, pn_bw_drop_fn *fn)
{
	if (fn)
		fn(p[i].who, why);
	close(p[i].fd);
	p[i] = p[n - 1];
}

/* A connection just accepted: a data connection is challenged at once. */
static int greet(const struct gate *g, struct pending *p)
{
	uint8_t c[PN_TCPM_CHALLENGE_LEN];

	if (!g->key)
		return 0;
	if (getrandom(p->challenge, sizeof(p->challenge), 0) != (ssize_t)sizeof(p->challenge))
		return pn_err(-EIO, "no random bytes: %s", strerror(errno));
	pn_tcpm_challenge(c, p->challenge);
	return pn_sock_write_full(p->fd, c, sizeof(c), p->deadline);
}

/* What p said so far: -EAGAIN while it may go on, 0 when it is the one
 * (a data connection: welcomed), else why it is dropped. */
static int gate_check(const struct gate *g, struct pending *p)
{
	uint8_t nonce[PN_TCPM_NONCE_LEN], w[PN_TCPM_WELCOME_LEN];
	int rank, ret;

	if (!g->key) {
		ret = pn_bw_hello_check(p->h, p->got);
		return ret ? ret : pn_bw_hello_decode(g->hello, p->h, p->got);
	}
	if (p->got < PN_TCPM_HELLO_LEN)
		return -EAGAIN;
	if (pn_tcpm_hello_check(p->h, p->got, g->key, p->challenge, DATA_TAG, g->me, g->me + 2,
				&rank, nonce))
		return pn_err(-EACCES, "not the peer of this run (no proof of its key)");
	pn_tcpm_welcome(w, g->key, p->challenge, nonce, (uint32_t)rank);
	ret = pn_sock_write_full(p->fd, w, sizeof(w), p->deadline);
	return ret ? pn_err(ret, "%s", strerror(-ret)) : 0;
}

/* One connection's bytes (POLLIN): -EAGAIN, 0 it is the one, else why it goes. */
static int pending_read(const struct gate *g, struct pending *p)
{
	ssize_t got = recv(p->fd, p->h + p->got, g->len - p->got, 0);

	if (got < 0 && (errno == EAGAIN || errno == EINTR))
		return -EAGAIN;
	if (got <= 0)
		return pn_err(got ? -errno : -EPIPE, "%s", got ? strerror(errno) :
			      g->key ? "closed before it proved the run's key" :
			      "closed before saying a whole hello");
	p->got += (size_t)got;
	return gate_check(g, p);
}

/*
 * accept failed with err: 0 to accept again now, 1 after a pause (the
 * listener stays readable: no spinning on it), -1 the end.  For want of
 * descriptors (EMFILE, ENFILE, ENOBUFS, ENOMEM) the oldest pending
 * connection is dropped for the one waiting; with none, the process's own
 * limit (EMFILE) is the end, the host's may pass.  *last: err, for the
 * timeout's line.
 */
static int accept_failed(int err, struct pending *p, int *n, const struct gate *g, int *last,
			 pn_bw_drop_fn *dropfn)
{
	int i, old = 0;

	if (err == -ETIMEDOUT || err == -EINTR || err == -ECONNABORTED)
		return 0;	/* gone before it was taken (EAGAIN), or a signal */
	*last = -err;
	if (err != -EMFILE && err != -ENFILE && err != -ENOBUFS && err != -ENOMEM)
		return 1;
	if (!*n)
		return err == -EMFILE ? -1 : 1;
	for (i = 1; i < *n; i++)
		if (p[i].deadline < p[old].deadline)
			old = i;
	drop(p, (*n)--, old, g->key ? "proved nothing while the descriptors ran out"
				      : "said no hello while the descriptors ran out", dropfn);
	return 0;
}

/* The server's wait (pn_bw_accept_client, pn_bw_data_accept): the socket
 * of the first connection the gate takes, or -errno. */
static int accept_gated(int lfd, double timeout, const struct gate *g, pn_bw_drop_fn *dropfn)
{
	struct pending *p = calloc(MAX_PENDING, sizeof(*p));
	struct pollfd pfd[MAX_PENDING + 1];
	double until = pn_now() + timeout, paused = 0;
	int n = 0, i, fd = -1, full = 0;
	char why[300];

	if (!p)
		return pn_err(-ENOMEM, "out of memory");
	while (fd < 0) {
		double now = pn_now(), next = now < until ? until : INFINITY;
		int k = 0, listening = now < until && now >= paused;

		for (i = n - 1; i >= 0; i--)
			if (p[i].deadline <= now)
				drop(p, n--, i, g->key ? "proved no key of this run within the timeout"
					       : "said no hello within the timeout", dropfn);
		if (now >= until && !n) {
			fd = pn_err(-ETIMEDOUT, "%s within %g s (--timeout)%s%s", g->key ?
				    "the peer's data connection did not come" : "no client connected",
				    timeout, full ? ": accept: " : "", full ? strerror(full) : "");
			break;
		}
		if (listening)
			pfd[k++] = (struct pollfd){ .fd = lfd, .events = POLLIN };
		else if (now < until)	/* out of descriptors: listen again then */
			next = PN_MIN(next, paused);
		for (i = 0; i < n; i++) {
			pfd[k++] = (struct pollfd){ .fd = p[i].fd, .events = POLLIN };
			next = PN_MIN(next, p[i].deadline);
		}
		if (poll(pfd, (nfds_t)k, (int)((next - now) * 1000) + 1) < 0) {
			if (errno == EINTR)
				continue;
			fd = pn_err(-errno, "poll: %s", strerror(errno));
			break;
		}
		/* the pending ones first: pfd[listening + i] is p[i] until one goes */
		for (i = n - 1; i >= 0 && fd < 0; i--) {
			int chk;

			if (!(pfd[listening + i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			chk = pending_read(g, &p[i]);
			if (chk && chk != -EAGAIN) {
				snprintf(why, sizeof(why), "%s", pn_errmsg(chk));
				drop(p, n--, i, why, dropfn);
			} else if (!chk) {
				fd = p[i].fd;
				p[i] = p[--n];
			}
		}
		if (fd < 0 && listening && (pfd[0].revents & POLLIN)) {
			int c = pn_sock_accept(lfd, 0);

			if (c < 0) {
				int r = accept_failed(c, p, &n, g, &full, dropfn);

				if (r < 0) {
					fd = pn_err(c, "cannot accept a connection: %s (every "
						       "descriptor this process may open is in use: "
						       "ulimit -n)", strerror(-c));
					break;
				}
				paused = r ? pn_now() + 0.1 : 0;
				continue;
			}
			if (n == MAX_PENDING) {
				int old = 0;

				for (i = 1; i < n; i++)
					if (p[i].deadline < p[old].deadline)
						old = i;
				drop(p, n--, old, g->key ? "proved nothing while newer connections waited"
					       : "said no hello while newer connections waited", dropfn);
			}
			p[n] = (struct pending){ .fd = c, .deadline = pn_now() + timeout };
			pn_sock_peer_name(c, p[n].who, sizeof(p[n].who));
			if (greet(g, &p[n]))
				drop(p, n + 1, n, "closed before its challenge", dropfn);
			else
				n++;
		}
	}
	for (i = n - 1; i >= 0; i--)
		drop(p, n--, i, fd < 0 ? "the server gave up" : g->key ?
		     "the peer proved the run's key first" : "another client said its hello first",
		     dropfn);
	free(p);
	if (fd >= 0)
		pn_sock_nonblock(fd, 0);
	return fd;
}

int pn_bw_accept_client(int lfd, double timeout, struct pn_bw_hello *peer, pn_bw_drop_fn *dropfn)
{
	struct gate g = { .hello = peer, .len = PN_BW_HELLO_LEN };

	return accept_gated(lfd, timeout, &g, dropfn);
}

int pn_bw_data_key(uint8_t key[PN_BW_KEY_LEN])
{
	if (getrandom(key, PN_BW_KEY_LEN, 0) != PN_BW_KEY_LEN)
		return pn_err(-EIO, "no random bytes for the data connection's key: %s",
			      strerror(errno));
	return 0;
}

int pn_bw_data_accept(int lfd, const uint8_t key[PN_BW_KEY_LEN], int me, double timeout,
		      pn_bw_drop_fn *dropfn)
{
	struct gate g = { .key = key, .me = me, .len = PN_TCPM_HELLO_LEN };

	return accept_gated(lfd, timeout, &g, dropfn);
}

int pn_bw_listen(const char *host, int port, int *out_port)
{
	int fd = pn_sock_listen(host, port, 4, out_port);

	if (fd == -EHOSTUNREACH)
		return -EINVAL;	/* said: "cannot resolve 'HOST': ..." */
	if (fd < 0)
		return pn_err(fd, "cannot listen on TCP port %d: %s", port, strerror(-fd));
	return fd;
}

int pn_bw_connect(const char *host, int port, double timeout, pn_bw_refused_fn *refused,
		  void *arg)
{
	double deadline = pn_now() + timeout;
	struct sockaddr_storage ss;
	socklen_t sl;
	int fd, last = ECONNREFUSED;

	if (pn_sock_resolve(host, port, 0, &ss, &sl))
		return -EINVAL;	/* said: "cannot resolve 'HOST': ..." */
	/* the server may start a moment later: retry until the timeout, and
	 * say so once the first try is refused */
	fd = pn_sock_connect(&ss, sl, deadline, 0, &last);
	if (fd == -ECONNREFUSED) {
		if (refused)
			refused(arg, host, port, timeout);
		fd = pn_sock_connect(&ss, sl, deadline, 1, &last);
	}
	if (fd >= 0) {
		pn_sock_nonblock(fd, 0);
		return fd;
	}
	if (fd != -ETIMEDOUT)
		last = -fd;
	return pn_err(-last, "cannot connect to %s port %d: %s (is 'penny bw' running there?)",
		      host, port, strerror(last));
}

int pn_bw_data_connect(const char *host, int port, const uint8_t key[PN_BW_KEY_LEN], int me,
		       double timeout)
{
	uint8_t c[PN_TCPM_CHALLENGE_LEN], ch[PN_TCPM_NONCE_LEN], nonce[PN_TCPM_NONCE_LEN];
	uint8_t hello[PN_TCPM_HELLO_LEN], w[PN_TCPM_WELCOME_LEN];
	double deadline = pn_now() + timeout;
	int fd = pn_bw_connect(host, port, timeout, NULL, NULL), ret;

	if (fd < 0)
		return fd;
	/* the listener speaks first: a challenge, answered with the proof of
	 * the key; its welcome proves it holds the key too */
	ret = pn_sock_read_full(fd, c, sizeof(c), deadline);
	if (!ret && pn_tcpm_challenge_parse(c, sizeof(c), ch))
		ret = -EACCES;
	if (!ret && getrandom(nonce, sizeof(nonce), 0) != (ssize_t)sizeof(nonce))
		ret = -EIO;
	if (!ret) {
		pn_tcpm_hello(hello, key, ch, (uint32_t)me + 1, DATA_TAG, nonce);
		ret = pn_sock_write_full(fd, hello, sizeof(hello), deadline);
	}
	if (!ret)
		ret = pn_sock_read_full(fd, w, sizeof(w), deadline);
	if (!ret && pn_tcpm_welcome_check(w, sizeof(w), key, ch, nonce, (uint32_t)me + 1))
		ret = -EACCES;
	if (!ret)
		return fd;
	close(fd);
	pn_err_clear();
	if (ret == -EACCES)
		return pn_err(ret, "%s port %d is not the data listener of this run's peer (no proof "
			      "of its key)", host, port);
	return pn_err(ret, "the data connection to %s port %d: %s", host, port,
		      ret == -ETIMEDOUT ? "timed out waiting for the peer" : ret == -EPIPE ?
		      "the peer closed it" : strerror(-ret));
}
