/* SPDX-License-Identifier: MIT */
/*
 * The tcp mesh (pn_tcp_mesh, transport.h) and its hello (tcpmesh.h).
 *
 * One loop over poll(2) runs every connection of this rank at once: its
 * connections to lower ranks (connect, read the challenge, send the hello,
 * read the welcome) and the ones the listener accepts from higher ranks
 * (send a challenge, read the hello, send the welcome).  A connection that
 * is idle or says nothing of this mesh holds up no other one: strangers
 * are dropped when they say something else, and the oldest unproven one
 * gives way when PEND_MAX wait.  Everything ends at one deadline, the
 * timeout, naming the ranks still missing.
 */
#define _GNU_SOURCE
#include "transport/tcpmesh.h"
#include "transport/transport.h"
#include "base/log.h"
#include "base/sha256.h"
#include "base/sock.h"
#include "base/util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

/* ------------------------------------------------------------ the wire */

static const char hello_tag[] = "penny tcp hello";
static const char welcome_tag[] = "penny tcp welcome";

void pn_tcpm_challenge(uint8_t out[PN_TCPM_CHALLENGE_LEN],
		       const uint8_t challenge[PN_TCPM_NONCE_LEN])
{
	uint8_t *p = pn_put_u32(out, PN_TCPM_MAGIC);

	p = pn_put_u32(p, PN_TCPM_VERSION);
	pn_put_bytes(p, challenge, PN_TCPM_NONCE_LEN);
}

int pn_tcpm_challenge_parse(const uint8_t *in, size_t len, uint8_t challenge[PN_TCPM_NONCE_LEN])
{
	uint32_t magic, version;

	if (len != PN_TCPM_CHALLENGE_LEN)
		return -EPROTO;
	in = pn_get_u32(pn_get_u32(in, &magic), &version);
	if (magic != PN_TCPM_MAGIC || version != PN_TCPM_VERSION)
		return -EPROTO;
	pn_get_bytes(in, challenge, PN_TCPM_NONCE_LEN);
	return 0;
}

static void hello_mac(uint8_t mac[PN_TCPM_MAC_LEN], const uint8_t key[PN_TCPM_KEY_LEN],
		      const uint8_t challenge[PN_TCPM_NONCE_LEN], uint32_t rank, uint32_t tag,
		      const uint8_t nonce[PN_TCPM_NONCE_LEN])
{
	uint8_t rt[8];
	const void *p[4] = { hello_tag, challenge, rt, nonce };
	size_t l[4] = { sizeof(hello_tag), PN_TCPM_NONCE_LEN, sizeof(rt), PN_TCPM_NONCE_LEN };

	pn_put_u32(pn_put_u32(rt, rank), tag);
	pn_hmac_sha256(key, PN_TCPM_KEY_LEN, 4, p, l, mac);
}

void pn_tcpm_hello(uint8_t out[PN_TCPM_HELLO_LEN], const uint8_t key[PN_TCPM_KEY_LEN],
		   const uint8_t challenge[PN_TCPM_NONCE_LEN], uint32_t rank, uint32_t tag,
		   const uint8_t nonce[PN_TCPM_NONCE_LEN])
{
	uint8_t *p = pn_put_u32(out, PN_TCPM_MAGIC);

	p = pn_put_u32(p, PN_TCPM_VERSION);
	p = pn_put_u32(p, rank);
	p = pn_put_u32(p, tag);
	p = pn_put_bytes(p, nonce, PN_TCPM_NONCE_LEN);
	hello_mac(p, key, challenge, rank, tag, nonce);
}

int pn_tcpm_hello_check(const uint8_t *in, size_t len, const uint8_t key[PN_TCPM_KEY_LEN],
			const uint8_t challenge[PN_TCPM_NONCE_LEN], uint32_t tag, int me,
			int nranks, int *rank, uint8_t nonce[PN_TCPM_NONCE_LEN])
{
	uint32_t magic, version, r, t;
	uint8_t mac[PN_TCPM_MAC_LEN];

	if (len != PN_TCPM_HELLO_LEN)
		return -EPROTO;
	in = pn_get_u32(pn_get_u32(in, &magic), &version);
	in = pn_get_u32(pn_get_u32(in, &r), &t);
	if (magic != PN_TCPM_MAGIC || version != PN_TCPM_VERSION || t != tag || me < 0 ||
	    r <= (uint32_t)me || r >= (uint32_t)nranks)
		return -EPROTO;
	hello_mac(mac, key, challenge, r, t, in);
	if (pn_memeq_ct(mac, in + PN_TCPM_NONCE_LEN, PN_TCPM_MAC_LEN))
		return -EACCES;
	memcpy(nonce, in, PN_TCPM_NONCE_LEN);
	*rank = (int)r;
	return 0;
}

void pn_tcpm_welcome(uint8_t out[PN_TCPM_WELCOME_LEN], const uint8_t key[PN_TCPM_KEY_LEN],
		     const uint8_t challenge[PN_TCPM_NONCE_LEN],
		     const uint8_t nonce[PN_TCPM_NONCE_LEN], uint32_t rank)
{
	uint8_t r[4];
	const void *p[4] = { welcome_tag, nonce, challenge, r };
	size_t l[4] = { sizeof(welcome_tag), PN_TCPM_NONCE_LEN, PN_TCPM_NONCE_LEN, sizeof(r) };

	pn_put_u32(r, rank);
	pn_hmac_sha256(key, PN_TCPM_KEY_LEN, 4, p, l, out);
}

int pn_tcpm_welcome_check(const uint8_t *in, size_t len, const uint8_t key[PN_TCPM_KEY_LEN],
			  const uint8_t challenge[PN_TCPM_NONCE_LEN],
			  const uint8_t nonce[PN_TCPM_NONCE_LEN], uint32_t rank)
{
	uint8_t mac[PN_TCPM_WELCOME_LEN];

	if (len != PN_TCPM_WELCOME_LEN)
		return -EACCES;
	pn_tcpm_welcome(mac, key, challenge, nonce, rank);
	return pn_memeq_ct(mac, in, PN_TCPM_WELCOME_LEN) ? -EACCES : 0;
}

/* ------------------------------------------------------------ the mesh */

/* Unproven connections held at once: the oldest gives way to a new one. */
#define PEND_MAX 256
/* A connection to a lower rank that closed before its welcome is made again. */
#define RETRY_MIN 0.01
#define RETRY_MAX 0.2

/* What every rank publishes: where it listens, and its key for this mesh. */
struct tcp_addr {
	struct sockaddr_storage ss;
	uint32_t len;
	uint32_t ok;
	uint8_t key[PN_TCPM_KEY_LEN];
};

enum { OUT_IDLE, OUT_CONNECTING, OUT_CHALLENGE, OUT_WELCOME, OUT_DONE };

/* to a lower rank */
struct out_conn {
	int fd, state;
	size_t got;
	uint8_t buf[PN_TCPM_WELCOME_LEN];	/* the challenge (24), then the welcome (32) */
	uint8_t challenge[PN_TCPM_NONCE_LEN], nonce[PN_TCPM_NONCE_LEN];
	double retry_at, backoff;
};

/* accepted, not proven yet */
struct in_conn {
	int fd;
	size_t got;
	uint8_t buf[PN_TCPM_HELLO_LEN];
	uint8_t challenge[PN_TCPM_NONCE_LEN];
	double since;
};

struct mesh {
	struct pn_tp_group *c;
	const unsigned char *want;
	uint32_t tag;
	int *fds;
	struct tcp_addr me, *all;
	int lfd;
	double deadline, lfd_after;	/* accept again after (out of descriptors) */
	struct out_conn *out;		/* [nranks] */
	struct in_conn pend[PEND_MAX];
	int npend, nin;			/* unproven; higher ranks still to come */
	unsigned dropped;
};

static void tune_socket(int fd)
{
	int one = 1, buf = 4 << 20;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &buf, sizeof(buf));
	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof(buf));
}

static int random_bytes(void *buf, size_t len)
{
	if (getrandom(buf, len, 0) != (ssize_t)len)
		return pn_err(-EIO, "tcp transport: no random bytes: %s", strerror(errno));
	return 0;
}

static int mesh_listen(struct mesh *m)
{
	struct tcp_addr *me = &m->me;
	struct sockaddr_storage bound;
	socklen_t sl;
	unsigned l = 0;
	int fd;

	if (pn_tp_local_addr(m->c, &me->ss, &l)) {
		struct sockaddr_in *in = (struct sockaddr_in *)&me->ss;

		in->sin_family = AF_INET;
		in->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		l = sizeof(*in);
	}
	if (me->ss.ss_family == AF_INET)
		((struct sockaddr_in *)&me->ss)->sin_port = 0;
	else
		((struct sockaddr_in6 *)&me->ss)->sin6_port = 0;
	fd = pn_sock_listen_addr((struct sockaddr *)&me->ss, l, 1024, &bound, &sl);
	if (fd < 0)
		return pn_err(fd, "tcp transport cannot listen: %s", strerror(-fd));
	pn_sock_nonblock(fd, 1);
	me->ss = bound;
	me->len = sl;
	me->ok = 1;
	m->lfd = fd;
	return random_bytes(me->key, sizeof(me->key));
}

/* ---- to lower ranks ---- */

static int out_start(struct mesh *m, int p)
{
	struct out_conn *o = &m->out[p];
	const struct tcp_addr *a = &m->all[p];
	int fd = socket(a->ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return pn_err(-errno, "tcp connect to rank %d (host %s): %s", p,
			      pn_tp_host(m->c, p), strerror(errno));
	o->fd = fd;
	o->got = 0;
	o->state = OUT_CONNECTING;
	if (connect(fd, (const struct sockaddr *)&a->ss, a->len) && errno != EINPROGRESS)
		return -errno;	/* out_error decides */
	return 0;
}

/* The connection to rank p failed with err before it was proven: again
 * (it may have given way to strangers), or the rank is gone. */
static int out_error(struct mesh *m, int p, int err)
{
	struct out_conn *o = &m->out[p];

	if (o->fd >= 0)
		close(o->fd);
	o->fd = -1;
	o->state = OUT_IDLE;
	if (err == -ECONNREFUSED)
		return pn_err(-EPIPE, "rank %d (host %s) refused the tcp connection: it failed or was "
			      "killed", p, pn_tp_host(m->c, p));
	if (err != -ECONNRESET && err != -EPIPE && err != -ECONNABORTED && err != -ETIMEDOUT)
		return pn_err(err, "tcp connect to rank %d (host %s): %s", p, pn_tp_host(m->c, p),
			      strerror(-err));
	o->backoff = o->backoff < RETRY_MIN ? RETRY_MIN : o->backoff * 2;
	if (o->backoff > RETRY_MAX)
		o->backoff = RETRY_MAX;
	o->retry_at = pn_now() + o->backoff;
	return 0;
}

/* Read what the state waits for: 1 when it is all there, 0 not yet, -errno. */
static int read_some(int fd, uint8_t *buf, size_t *got, size_t want)
{
	ssize_t n = recv(fd, buf + *got, want - *got, MSG_DONTWAIT);

	if (n == 0)
		return -ECONNRESET;
	if (n < 0)
		return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? 0 : -errno;
	*got += (size_t)n;
	return *got == want;
}

static int out_event(struct mesh *m, int p, short rev)
{
	struct out_conn *o = &m->out[p];
	const uint8_t *key = m->all[p].key;
	uint8_t hello[PN_TCPM_HELLO_LEN];
	int r, e;
	socklen_t el = sizeof(e);

	if (o->state == OUT_CONNECTING) {
		if (!(rev & (POLLOUT | POLLERR | POLLHUP)))
			return 0;
		if (getsockopt(o->fd, SOL_SOCKET, SO_ERROR, &e, &el))
			e = errno;
		if (e)
			return out_error(m, p, -e);
		o->state = OUT_CHALLENGE;
		return 0;
	}
	r = read_some(o->fd, o->buf, &o->got,
		      o->state == OUT_CHALLENGE ? PN_TCPM_CHALLENGE_LEN : PN_TCPM_WELCOME_LEN);
	if (r <= 0)
		return r < 0 ? out_error(m, p, r) : 0;
	if (o->state == OUT_CHALLENGE) {
		if (pn_tcpm_challenge_parse(o->buf, o->got, o->challenge))
			return pn_err(-EPROTO, "the tcp listener of rank %d (host %s) sent no challenge "
				      "of this mesh", p, pn_tp_host(m->c, p));
		if (random_bytes(o->nonce, sizeof(o->nonce)))
			return -EIO;
		pn_tcpm_hello(hello, key, o->challenge, (uint32_t)m->c->rank, m->tag, o->nonce);
		/* a fresh socket takes 64 bytes at once; else it is made again */
		if (send(o->fd, hello, sizeof(hello), MSG_NOSIGNAL | MSG_DONTWAIT) !=
		    (ssize_t)sizeof(hello))
			return out_error(m, p, -ECONNRESET);
		o->state = OUT_WELCOME;
		o->got = 0;
		return 0;
	}
	if (pn_tcpm_welcome_check(o->buf, o->got, key, o->challenge, o->nonce,
				  (uint32_t)m->c->rank))
		return pn_err(-EACCES, "the tcp listener of rank %d (host %s) did not prove the "
			      "mesh's key: not that rank", p, pn_tp_host(m->c, p));
	tune_socket(o->fd);
	m->fds[p] = o->fd;
	o->fd = -1;
	o->state = OUT_DONE;
	return 0;
}

/* ---- from higher ranks ---- */

static void pend_drop(struct mesh *m, int i)
{
	close(m->pend[i].fd);
	m->pend[i] = m->pend[--m->npend];
	m->dropped++;
}

static int oldest_pending(const struct mesh *m)
{
	int i, o = 0;

	for (i = 1; i < m->npend; i++)
		if (m->pend[i].since < m->pend[o].since)
			o = i;
	return o;
}

/* Every connection that waits on the listener gets a challenge. */
static int accept_all(struct mesh *m)
{
	for (;;) {
		uint8_t ch[PN_TCPM_CHALLENGE_LEN];
		struct in_conn *in;
		int fd = accept4(m->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd < 0 && (errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
			       errno == ENOMEM)) {
			/* out of descriptors: the oldest stranger goes, or wait a little */
			if (m->npend) {
				pend_drop(m, oldest_pending(m));
				continue;
			}
			m->lfd_after = pn_now() + 0.05;
			return 0;
		}
		if (fd < 0)
			return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ||
					       errno == ECONNABORTED
				       ? 0
				       : pn_err(-errno, "tcp transport: accept: %s", strerror(errno));
		if (m->npend == PEND_MAX)
			pend_drop(m, oldest_pending(m));
		in = &m->pend[m->npend];
		memset(in, 0, sizeof(*in));
		in->fd = fd;
		in->since = pn_now();
		if (random_bytes(in->challenge, sizeof(in->challenge))) {
			close(fd);
			return -EIO;
		}
		pn_tcpm_challenge(ch, in->challenge);
		if (send(fd, ch, sizeof(ch), MSG_NOSIGNAL | MSG_DONTWAIT) != (ssize_t)sizeof(ch)) {
			close(fd);
			m->dropped++;
			continue;
		}
		m->npend++;
	}
}

/* A pending connection spoke: a proven hello joins, anything else is dropped. */
static void pend_event(struct mesh *m, int i)
{
	struct in_conn *in = &m->pend[i];
	uint8_t nonce[PN_TCPM_NONCE_LEN], w[PN_TCPM_WELCOME_LEN];
	int r = read_some(in->fd, in->buf, &in->got, sizeof(in->buf)), rank;

	if (!r)
		return;
	if (r < 0 || pn_tcpm_hello_check(in->buf, in->got, m->me.key, in->challenge, m->tag,
					 m->c->rank, m->c->nranks, &rank, nonce) ||
	    !m->want[rank]) {
		PN_DBG(PN_LOG_NET, "dropped a stranger on the tcp listener");
		pend_drop(m, i);
		return;
	}
	pn_tcpm_welcome(w, m->me.key, in->challenge, nonce, (uint32_t)rank);
	if (send(in->fd, w, sizeof(w), MSG_NOSIGNAL | MSG_DONTWAIT) != (ssize_t)sizeof(w)) {
		pend_drop(m, i);
		return;
	}
	/* proven: a rank that connected again (its first try given up) replaces it */
	if (m->fds[rank] >= 0)
		close(m->fds[rank]);
	else
		m->nin--;
	tune_socket(in->fd);
	m->fds[rank] = in->fd;
	m->pend[i] = m->pend[--m->npend];
}

/* ---- the loop ---- */

static int missing(const struct mesh *m, int *first)
{
	int p, n = 0;

	*first = -1;
	for (p = 0; p < m->c->nranks; p++)
		if (m->want[p] && p != m->c->rank && m->fds[p] < 0 && n++ == 0)
			*first = p;
	return n;
}

static int timed_out(const struct mesh *m)
{
	int first, n = missing(m, &first);
	char more[64] = "";

	if (n > 1)
		snprintf(more, sizeof(more), " (and %d more rank%s)", n - 1, n == 2 ? "" : "s");
	if (first < m->c->rank)
		return pn_err(-ETIMEDOUT, "timed out after %g s waiting for rank %d (host %s) to "
			      "answer its tcp connection%s: it did not (stopped or hung)",
			      m->c->timeout, first, pn_tp_host(m->c, first), more);
	return pn_err(-ETIMEDOUT, "timed out after %g s waiting for the tcp connection of rank "
		      "%d (host %s)%s: it did not connect (stopped, hung or failed)",
		      m->c->timeout, first, pn_tp_host(m->c, first), more);
}

static int mesh_loop(struct mesh *m)
{
	int n = m->c->nranks, np, p, i, ret = 0;
	struct pollfd *pf = calloc((size_t)(1 + n + PEND_MAX), sizeof(*pf));
	int *who = calloc((size_t)(1 + n + PEND_MAX), sizeof(int));

	if (!pf || !who) {
		free(pf);
		free(who);
		return pn_err(-ENOMEM, "out of memory");
	}
	while (!ret) {
		double now = pn_now(), wake = m->deadline;
		int first, left = missing(m, &first), ms;

		if (!left)
			break;
		if (now >= m->deadline) {
			ret = timed_out(m);
			break;
		}
		np = 0;
		for (p = 0; p < m->c->rank && !ret; p++) {
			struct out_conn *o = &m->out[p];

			if (!m->want[p] || o->state == OUT_DONE)
				continue;
			if (o->state == OUT_IDLE && now >= o->retry_at) {
				int r = out_start(m, p);

				ret = r ? out_error(m, p, r) : 0;
			}
			if (o->state == OUT_IDLE) {
				wake = o->retry_at < wake ? o->retry_at : wake;
				continue;
			}
			pf[np] = (struct pollfd){ .fd = o->fd,
						  .events = o->state == OUT_CONNECTING ? POLLOUT : POLLIN };
			who[np++] = p;
		}
		if (m->nin > 0 && now >= m->lfd_after) {
			pf[np] = (struct pollfd){ .fd = m->lfd, .events = POLLIN };
			who[np++] = -1;
		} else if (m->nin > 0) {
			wake = m->lfd_after < wake ? m->lfd_after : wake;
		}
		for (i = 0; i < m->npend; i++) {
			pf[np] = (struct pollfd){ .fd = m->pend[i].fd, .events = POLLIN };
			who[np++] = n + i;
		}
		if (ret)
			break;
		ms = wake - now > 1.0 ? 1000 : (int)((wake - now) * 1000.0) + 1;
		if (poll(pf, (nfds_t)np, ms) < 0 && errno != EINTR) {
			ret = pn_err(-errno, "tcp transport: poll: %s", strerror(errno));
			break;
		}
		/* pending ones from the end: a drop moves the last into its place */
		for (i = np - 1; i >= 0 && !ret; i--) {
			if (!pf[i].revents)
				continue;
			if (who[i] >= n)
				pend_event(m, who[i] - n);
			else if (who[i] < 0)
				ret = accept_all(m);
			else
				ret = out_event(m, who[i], pf[i].revents);
		}
	}
	free(pf);
	free(who);
	return ret;
}

int pn_tcp_mesh(struct pn_tp_group *c, const unsigned char *want, uint32_t tag, int *fds)
{
	struct mesh *m;
	int p, ret, need = 0, n = c->nranks;

	if (n <= 0)
		return pn_err(-EINVAL, "tcp mesh of %d ranks", n);
	m = calloc(1, sizeof(*m));
	if (!m)
		return pn_err(-ENOMEM, "out of memory");
	m->c = c;
	m->want = want;
	m->tag = tag;
	m->fds = fds;
	m->lfd = -1;
	m->deadline = pn_now() + c->timeout;
	for (p = 0; p < c->nranks; p++) {
		fds[p] = -1;
		if (want[p] && p != c->rank)
			need = 1;
		if (want[p] && p > c->rank)
			m->nin++;
	}
	m->all = calloc((size_t)n, sizeof(*m->all));
	m->out = calloc((size_t)n, sizeof(*m->out));
	if (!m->all || !m->out) {
		free(m->all);
		free(m->out);
		free(m);
		return pn_err(-ENOMEM, "out of memory");
	}
	for (p = 0; p < c->nranks; p++)
		m->out[p].fd = -1;
	ret = need ? mesh_listen(m) : 0;
	/* everyone takes part: the pairs are known from both sides */
	{
		int r = pn_tp_allgather(c, &m->me, m->all, sizeof(m->me));

		ret = ret ? ret : r;
	}
	for (p = 0; !ret && p < c->rank; p++)
		if (want[p] && !m->all[p].ok)
			ret = pn_err(-EPROTO, "rank %d has no tcp listener", p);
	if (!ret)
		ret = mesh_loop(m);
	PN_DBG(PN_LOG_NET, "tcp mesh (tag %#x): %u strangers dropped", tag, m->dropped);
	for (p = 0; p < c->nranks; p++)
		if (m->out[p].fd >= 0)
			close(m->out[p].fd);
	while (m->npend)
		pend_drop(m, m->npend - 1);
	if (m->lfd >= 0)
		close(m->lfd);
	explicit_bzero(m->me.key, sizeof(m->me.key));
	explicit_bzero(m->all, (size_t)c->nranks * sizeof(*m->all));
	free(m->all);
	free(m->out);
	free(m);
	if (ret)
		for (p = 0; p < c->nranks; p++)
			if (fds[p] >= 0) {
				close(fds[p]);
				fds[p] = -1;
			}
	/* connected and accepted sockets are non-blocking (base/sock.h) */
	return ret;
}
