/* SPDX-License-Identifier: MIT */
/*
 * How the ranks of a job meet (boot.h, "Joining"): where (--root,
 * PENNY_ROOT, a single-host launcher's file, the launcher's own rendezvous),
 * rank 0's side (listen, challenge every connection, check each hello
 * before anything it says, prove itself back, drop strangers) and the
 * other ranks' side (try each candidate address until rank 0 proves
 * itself).  The collectives that follow are engine/boot.c.
 */
#define _GNU_SOURCE
#include "engine/boot.h"
#include "engine/launch.h"
#include "base/log.h"
#include "base/sha256.h"
#include "base/sock.h"
#include "base/util.h"

#include <errno.h>
#include <math.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* Every address, IPv6 and IPv4, on port: a descriptor or -errno. */
static int listen_any(int port)
{
	struct sockaddr_in6 a6 = { .sin6_family = AF_INET6, .sin6_port = htons((uint16_t)port),
				   .sin6_addr = IN6ADDR_ANY_INIT };
	struct sockaddr_in a4 = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	int fd = pn_sock_listen_addr((struct sockaddr *)&a6, sizeof(a6), 4096, NULL, NULL);

	if (fd == -EAFNOSUPPORT || fd == -EADDRNOTAVAIL)
		fd = pn_sock_listen_addr((struct sockaddr *)&a4, sizeof(a4), 4096, NULL, NULL);
	return fd;
}

/*
 * Rank 0 listens: on the given address, or (a derived rendezvous) on every
 * address at the first of the job's ports that is free.
 */
int pn_boot_root_listen(struct pn_boot *b)
{
	struct pn_rdv *r = &b->cfg.rdv;
	int fd = -EADDRINUSE, i;

	if (!r->any) {
		fd = pn_sock_listen(r->hosts[0], r->ports[0], 4096, NULL);
		if (fd == -EHOSTUNREACH)
			return fd;
		if (fd < 0)
			return pn_err(fd, "cannot listen on %s:%d: %s", r->hosts[0], r->ports[0],
				      strerror(-fd));
		b->cfg.listen_fd = fd;
		return 0;
	}
	for (i = 0; i < r->nports; i++) {
		fd = listen_any(r->ports[i]);
		if (fd >= 0)
			break;
		PN_DBG(PN_LOG_BOOT, "port %d is taken (%s): the next of the job's", r->ports[i],
		       strerror(-fd));
	}
	if (fd < 0)
		return pn_err(fd == -EADDRINUSE ? -EADDRINUSE : fd, "cannot listen on any of the %d "
			      "ports of the job (%d, ...): %s (%s)", r->nports, r->ports[0],
			      strerror(-fd), r->how);
	snprintf(b->root, sizeof(b->root), strchr(r->hosts[0], ':') ? "[%s]:%d" : "%s:%d",
		 r->hosts[0], r->ports[i]);
	PN_DBG(PN_LOG_BOOT, "rank 0 listens on port %d, every address", r->ports[i]);
	b->cfg.listen_fd = fd;
	return 0;
}

/* A connection to the root that has not yet said who it is. */
struct pending {
	int fd;
	size_t got;
	double since;
	uint8_t challenge[PN_WIRE_NONCE_LEN];
	uint8_t msg[PN_FRAME_HDR_LEN + sizeof(struct pn_wire_hello)];
};

/* Connections the root tracks before they said hello, and how long they may take. */
#define PN_PENDING_MAX 256
#define PN_HELLO_SECS 2.0
#define PN_DROP_LINES 8

/* Rank 0 ends the rendezvous for every rank that joined: the reason, its errno. */
static void root_refuse(struct pn_boot *b, int code, const char *why, int extra_fd)
{
	double deadline = pn_now() + 0.5;
	int i;

	for (i = 1; i < b->nranks; i++)
		if (b->fds[i] >= 0)
			pn_boot_send_seq(b, b->fds[i], PN_MSG_ABORT, (uint32_t)-code, why, strlen(why), deadline);
	if (extra_fd >= 0)
		pn_boot_send_seq(b, extra_fd, PN_MSG_ABORT, (uint32_t)-code, why, strlen(why), deadline);
}

static pn_boot_notice_fn *notice_fn;

void pn_boot_set_notice(pn_boot_notice_fn *fn)
{
	notice_fn = fn;
}

static void notice(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void notice(const char *fmt, ...)
{
	char line[512];
	va_list ap;

	if (!notice_fn)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	notice_fn(line);
}

/*
 * A frame to a connection that has not proven the secret, or been proven:
 * under the job's public tag (it learns nothing secret), sent at once or
 * not at all.
 */
static int send_tagged(struct pn_boot *b, int fd, uint16_t type, uint32_t seq,
		       const void *payload, size_t len)
{
	struct pn_frame h;

	pn_wire_hdr_init(&h, b->tag, type, (uint32_t)b->rank, seq, len);
	return pn_frame_send(fd, &h, payload, pn_now() + 0.05);
}

/*
 * The job a rank has met, in its hello's sequence number (covered by the
 * hello's proof): 0 while it knows no job's nonce, else the first 4 bytes of
 * SHA-256("penny job mark\0" + the job's nonce) read little-endian, never 0.
 * A rank learns the nonce from a proven rank 0 (the WELCOME), or before it
 * starts (a self-launch's); from then on it is of that job: a rank 0 that
 * took the address since (a restarted job, the same secret) refuses it, and
 * it refuses that rank 0.
 */
static uint32_t job_mark(const uint8_t nonce[PN_WIRE_NONCE_LEN])
{
	static const char label[] = "penny job mark";
	uint8_t h[PN_SHA256_LEN];
	struct pn_sha256 s;
	uint32_t m;

	pn_sha256_init(&s);
	pn_sha256_update(&s, label, sizeof(label));
	pn_sha256_update(&s, nonce, PN_WIRE_NONCE_LEN);
	pn_sha256_final(&s, h);
	pn_get_u32(h, &m);
	return m ? m : 1;
}

/* Rank 0 proves itself to the rank whose proven hello h came on p. */
static int send_welcome(struct pn_boot *b, const struct pending *p, const struct pn_wire_hello *h)
{
	uint8_t w[PN_WIRE_MAC_LEN + PN_WIRE_NONCE_LEN];

	pn_wire_welcome_mac(b->cfg.secret, p->challenge, h->nonce, h->rank, b->tag, b->cfg.nonce,
			    w);
	memcpy(w + PN_WIRE_MAC_LEN, b->cfg.nonce, PN_WIRE_NONCE_LEN);
	return send_tagged(b, p->fd, PN_MSG_WELCOME, 0, w, sizeof(w));
}

/*
 * A proven hello (its bytes in p) of a rank that met another job's rank 0
 * (its mark is not ours): 1 with why, else 0.
 */
static int other_job(const struct pn_boot *b, const struct pending *p,
		     const struct pn_wire_hello *h, char *why, size_t wl)
{
	uint32_t ours = job_mark(b->cfg.nonce);
	struct pn_frame f;

	pn_frame_get(&f, p->msg);
	if (!f.seq || f.seq == ours)
		return 0;
	snprintf(why, wl, "rank %u (pid %d on %s) is of another job: it met another rank 0 at "
		 "this address (job %08x; this one is job %08x)", h->rank, h->pid, h->host, f.seq,
		 ours);
	return 1;
}

static void drop_conn(int *ndrop, const char *why)
{
	PN_DBG(PN_LOG_BOOT, "dropped a connection to the rendezvous: %s", why);
	if ((*ndrop)++ < PN_DROP_LINES)
		notice("rank 0: dropped a connection to the rendezvous: %s", why);
}

/* The root's state while ranks join: the connections that said no hello yet. */
struct root_wait {
	struct pending *pend;
	int npend, have, ndrop;
	double hello_secs;
	char refused[200];	/* what a rank without the secret is told */
};

/* The job's deadline passed: name the ranks that never joined. */
static int root_missing(struct pn_boot *b, int have)
{
	char missing[256] = "";
	size_t n = 0;
	int i, ret;

	for (i = 1; i < b->nranks && n < sizeof(missing) - 16; i++)
		if (b->fds[i] < 0)
			n += (size_t)snprintf(missing + n, sizeof(missing) - n, "%s%d",
					      n ? "," : "", i);
	if (n >= sizeof(missing) - 16)
		snprintf(missing + n, sizeof(missing) - n, ",...");
	ret = pn_err(-ETIMEDOUT, "timed out after %g s waiting for ranks %s to join "
		     "(%d of %d joined)", b->cfg.timeout, missing, have, b->nranks);
	root_refuse(b, ret, pn_errmsg(ret), -1);
	return ret;
}

/*
 * A proven rank that cannot run the job (PN_HELLO_REFUSE) sent its reason
 * after its hello: the job fails with it, on every rank that joined.
 */
static int root_refused(struct pn_boot *b, const struct pending *p, const struct pn_wire_hello *h)
{
	struct pn_frame f;
	char text[300] = "", why[400];
	double deadline = pn_now() + 1.0;
	int code = -EINVAL;

	if (!pn_frame_recv(p->fd, &f, deadline) && f.type == PN_MSG_ABORT &&
	    !pn_wire_hdr_check(&f, b->tag, PN_MSG_ABORT, 4096)) {
		size_t n = PN_MIN(f.len, sizeof(text) - 1);

		if (pn_sock_read_full(p->fd, text, n, deadline))
			text[0] = 0;
		text[n] = 0;
		pn_wire_printable(text, sizeof(text));
		if (f.seq > 0 && f.seq < 4096)
			code = -(int)f.seq;
	}
	close(p->fd);
	snprintf(why, sizeof(why), "rank %u (host %s, pid %d) cannot run the job: %s", h->rank,
		 h->host, h->pid, text[0] ? text : "it did not say why");
	root_refuse(b, code, why, -1);
	return pn_err(code, "%s", why);
}

/*
 * Rank 0 takes the rank of a proven hello h of this job (on p): 1, or
 * -EINVAL when another process has that rank already (two jobs on one
 * address, or a rank started twice), failing the job.  A process that
 * took the rank and has gone since (its connection closed: killed, and
 * started again) leaves it to the new one, with a notice.
 */
static int root_take(struct pn_boot *b, struct root_wait *w, const struct pending *p,
		     struct pn_wire_hello *h)
{
	struct pn_frame f;
	char why[300];
	int r = (int)h->rank;

	if (b->fds[r] >= 0 && (b->hello[r].pid != h->pid ||
			       strcmp(b->hello[r].host_id, h->host_id))) {
		if (pn_boot_peek_hdr(b->fds[r], &f) != -EPIPE) {
			snprintf(why, sizeof(why), "rank %d joined twice: pid %d on %s and pid %d "
				 "on %s: two jobs on one rendezvous address?", r, b->hello[r].pid,
				 b->hello[r].host, h->pid, h->host);
			root_refuse(b, -EINVAL, why, p->fd);
			return pn_err(-EINVAL, "%s", why);
		}
		notice("rank 0: rank %d (pid %d on %s) left before the job began; pid %d on %s "
		       "takes its place", r, b->hello[r].pid, b->hello[r].host, h->pid, h->host);
	}
	if (b->fds[r] >= 0) { /* the same process again (its newest), or one gone */
		close(b->fds[r]);
		w->have--;
	}
	memset(h->mac, 0, sizeof(h->mac));
	b->hello[r] = *h;
	b->fds[r] = p->fd;
	w->have++;
	PN_DBG(PN_LOG_BOOT, "rank %d joined from %s", r, b->hello[r].host);
	return 1;
}

/*
 * One waiting connection: read what came (revents), check its hello and
 * take the rank it proves.  Returns 1 when it leaves the waiting list
 * (joined, or dropped and closed), 0 when it stays, -errno when the job
 * fails (it stays listed, closed with the others).
 */
static int root_hello(struct pn_boot *b, struct root_wait *w, struct pending *p, short revents,
		      double now)
{
	struct pn_wire_hello h;
	const char *why = NULL;
	char whybuf[300];
	int r = 0, chk = -EAGAIN;

	if (revents) {
		ssize_t n = recv(p->fd, p->msg + p->got, sizeof(p->msg) - p->got, 0);

		if (n > 0) {
			p->got += (size_t)n;
		} else if (!p->got && (n == 0 || errno == ECONNRESET)) {
			/* a rank of another job on a shared port moved on (closing
			 * with our challenge unread: a reset), or a probe */
			PN_DBG(PN_LOG_BOOT, "a connection closed before saying anything");
			close(p->fd);
			return 1;
		} else if (n == 0) {
			why = "closed before saying hello";
		} else if (errno != EAGAIN && errno != EINTR) {
			why = strerror(errno);
		}
	}
	if (!why)
		chk = pn_wire_hello_check(p->msg, p->got, b->tag, b->cfg.secret, p->challenge,
					  b->nranks, &h);
	if (chk == -ESRCH) {
		/* a rank of another job: it saw our tag and should have gone */
		drop_conn(&w->ndrop, pn_errmsg(chk));
		close(p->fd);
		return 1;
	}
	if (chk == -EACCES) {
		char peer[80];

		/* a rank given another secret learns that it was refused */
		pn_sock_peer_name(p->fd, peer, sizeof(peer));
		snprintf(whybuf, sizeof(whybuf), "%s from %s", pn_errmsg(chk), peer);
		why = whybuf;
		send_tagged(b, p->fd, PN_MSG_ABORT, EACCES, w->refused, strlen(w->refused));
	}
	if ((!chk || chk == -EINVAL) && other_job(b, p, &h, whybuf, sizeof(whybuf))) {
		/* a rank of a job that met another rank 0 here (a straggler of a
		 * job restarted with the same secret): the job goes on without it;
		 * our WELCOME's nonce tells it, proven, that we are not its rank 0 */
		send_welcome(b, p, &h);
		drop_conn(&w->ndrop, whybuf);
		close(p->fd);
		return 1;
	}
	if (chk == -EINVAL) {
		/* proven, but not of this job: it hears why from a proven rank 0 */
		snprintf(whybuf, sizeof(whybuf), "%s", pn_errmsg(chk));
		send_welcome(b, p, &h);
		root_refuse(b, chk, whybuf, p->fd);
		return pn_err(-EINVAL, "%s", whybuf);
	}
	if (chk == -EPROTO) {
		snprintf(whybuf, sizeof(whybuf), "%s", pn_errmsg(chk));
		why = whybuf;
	} else if (chk == -EAGAIN && !why && now - p->since > w->hello_secs) {
		snprintf(whybuf, sizeof(whybuf), "no hello within %g s (%zu bytes)",
			 w->hello_secs, p->got);
		why = whybuf;
	}
	if (!chk) {
		r = (int)h.rank;
		if (send_welcome(b, p, &h)) {
			snprintf(whybuf, sizeof(whybuf), "rank %d (pid %d on %s) proved the "
				 "secret but its connection failed", r, h.pid, h.host);
			chk = -EAGAIN;
			why = whybuf;
		}
	}
	if (!chk && (h.flags & PN_HELLO_REFUSE))
		return root_refused(b, p, &h);
	if (!chk && b->cfg.refuse) {
		/* rank 0 cannot run the job: each rank that comes is told why */
		char text[400];

		snprintf(text, sizeof(text), "rank 0 (host %s) cannot run the job: %s", pn_hostname(),
			 b->cfg.refuse);
		pn_boot_send_seq(b, p->fd, PN_MSG_ABORT, EINVAL, text, strlen(text), pn_now() + 0.5);
		close(p->fd);
		w->have++;
		return 1;
	}
	if (!chk)
		return root_take(b, w, p, &h);
	if (why) {
		drop_conn(&w->ndrop, why);
		close(p->fd);
		return 1;
	}
	return 0;
}

/*
 * A new connection's CHALLENGE: 16 random bytes, and when rank 0 hands
 * out the secret through MUNGE, a credential for it that only the job's
 * user can decode (a fresh one for each: MUNGE refuses a replay).  -EACCES
 * with a message when MUNGE no longer answers.
 */
static int challenge(struct pn_boot *b, int fd, uint8_t c[PN_WIRE_NONCE_LEN])
{
	uint8_t msg[PN_WIRE_NONCE_LEN + PN_WIRE_CRED_MAX];
	size_t len = PN_WIRE_NONCE_LEN;
	char *cred = NULL;
	int ret;

	if (pn_boot_random(c, PN_WIRE_NONCE_LEN))
		return -EIO;
	memcpy(msg, c, PN_WIRE_NONCE_LEN);
	if (b->cfg.munge) {
		ret = pn_boot_munge_encode(b->tag, b->cfg.secret, &cred);
		if (ret)
			return pn_err_ctx(-EACCES, "rank 0 cannot hand out the job's secret");
		len += strlen(cred);
		if (len > sizeof(msg)) {
			free(cred);
			return pn_err(-EACCES, "a MUNGE credential of %zu bytes", len);
		}
		memcpy(msg + PN_WIRE_NONCE_LEN, cred, len - PN_WIRE_NONCE_LEN);
		free(cred);
	}
	return send_tagged(b, fd, PN_MSG_CHALLENGE, 0, msg, len);
}

/*
 * New connections on the listening socket: each is sent a challenge and
 * waits for its hello; when PN_PENDING_MAX wait, the one silent longest
 * makes room.
 */
static int root_take_new(struct pn_boot *b, struct root_wait *w, double now)
{
	struct pending *pend = w->pend;
	int i, ret;

	for (i = 0; i < 64; i++) {
		int fd = pn_sock_accept(b->cfg.listen_fd, 0);

		if (fd < 0)
			break;
		if (w->npend == PN_PENDING_MAX) {
			int old = 0, k;
			char whybuf[96];

			for (k = 1; k < w->npend; k++)
				if (pend[k].since < pend[old].since ||
				    (pend[k].since == pend[old].since && pend[k].got < pend[old].got))
					old = k;
			snprintf(whybuf, sizeof(whybuf), "%d connections without a hello: closed "
				 "one silent for %.1f s", w->npend, now - pend[old].since);
			drop_conn(&w->ndrop, whybuf);
			close(pend[old].fd);
			pend[old] = pend[--w->npend];
		}
		memset(&pend[w->npend], 0, sizeof(pend[w->npend]));
		ret = challenge(b, fd, pend[w->npend].challenge);
		if (ret == -EACCES) {
			close(fd);
			return ret;
		}
		if (ret) {
			drop_conn(&w->ndrop, "could not send the challenge");
			close(fd);
			continue;
		}
		pend[w->npend].fd = fd;
		pend[w->npend].since = now;
		w->npend++;
	}
	return 0;
}

/*
 * Root: accept until every rank said a valid hello.  Strangers (wrong
 * magic, version, cookie, size) are logged and dropped; a connection must
 * say hello within PN_HELLO_SECS, and when PN_PENDING_MAX connections are
 * waiting the one waiting longest makes room, so idle strangers cannot keep
 * a rank out (and a rank whose connection was dropped joins again).  A hello
 * with the job's cookie that is not of this job (a rank that joins twice,
 * another job size) fails the job, on every rank that joined.
 */
int pn_boot_root_accept(struct pn_boot *b, double deadline)
{
	struct root_wait w = { .have = 1 };
	struct pollfd *pfd = calloc(PN_PENDING_MAX + 1, sizeof(*pfd));
	int ret = 0, i;

	w.pend = calloc(PN_PENDING_MAX, sizeof(*w.pend));
	w.hello_secs = PN_MIN(PN_HELLO_SECS, b->cfg.timeout);
	snprintf(w.refused, sizeof(w.refused), "rank 0 (host %s) refused this rank: it did not "
		 "prove the job's secret", pn_hostname());

	if (!w.pend || !pfd) {
		free(w.pend);
		free(pfd);
		return pn_err(-ENOMEM, "out of memory");
	}
	pn_sock_nonblock(b->cfg.listen_fd, 1);
	while (w.have < b->nranks && !ret) {
		int ms = pn_poll_ms(deadline - pn_now(), 200);
		double now;

		if (ms <= 0) {
			ret = root_missing(b, w.have);
			break;
		}
		pfd[0].fd = b->cfg.listen_fd;
		pfd[0].events = POLLIN;
		for (i = 0; i < w.npend; i++) {
			pfd[i + 1].fd = w.pend[i].fd;
			pfd[i + 1].events = POLLIN;
			pfd[i + 1].revents = 0;
		}
		if (poll(pfd, (nfds_t)w.npend + 1, ms) < 0 && errno != EINTR) {
			ret = pn_err(-errno, "poll: %s", strerror(errno));
			break;
		}
		now = pn_now();
		/* look at the connections we have before new ones move them */
		for (i = 0; i < w.npend && !ret; i++) {
			int gone = root_hello(b, &w, &w.pend[i], pfd[i + 1].revents, now);

			if (gone < 0) {
				ret = gone;
			} else if (gone) {
				w.pend[i] = w.pend[--w.npend];
				pfd[i + 1] = pfd[w.npend + 1];
				i--;
			}
		}
		if (ret || !(pfd[0].revents & POLLIN))
			continue;
		ret = root_take_new(b, &w, now);
	}
	if (w.ndrop > PN_DROP_LINES)
		notice("rank 0: dropped %d more connections to the rendezvous",
		       w.ndrop - PN_DROP_LINES);
	for (i = 0; i < w.npend; i++)
		close(w.pend[i].fd);
	free(w.pend);
	free(pfd);
	return ret;
}

/* What one attempt to join at a candidate address found, least telling first. */
enum join_kind { JOIN_NOBODY, JOIN_STRANGER, JOIN_OTHER_JOB, JOIN_UNPROVEN, JOIN_REFUSED,
		 JOIN_REPLACED /* a proven rank 0 of another job (another nonce) */ };

/* One address (host and port) where rank 0 may listen. */
struct cand {
	struct sockaddr_storage ss;
	socklen_t sl;
	char name[300];
};

/*
 * The rendezvous' addresses in the order they are tried: every address of
 * every host for the first port, then for the next: rank 0 takes the first
 * free port.  0, or -EHOSTUNREACH naming the host that does not resolve.
 */
static int candidates(struct pn_boot *b, struct cand **out, int *n)
{
	const struct pn_rdv *r = &b->cfg.rdv;
	struct sockaddr_storage a[PN_RDV_MAX_HOSTS * 4];
	socklen_t al[PN_RDV_MAX_HOSTS * 4];
	int na = 0, i, j, k;
	char why[200] = "";

	for (i = 0; i < r->nhosts; i++) {
		struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM };
		struct addrinfo *res = NULL, *ai;
		int e = getaddrinfo(r->hosts[i], "1", &hints, &res);

		if (e) {
			snprintf(why, sizeof(why), "'%s' does not resolve: %s", r->hosts[i],
				 gai_strerror(e));
			continue;
		}
		for (ai = res, k = 0; ai && k < 4 && na < (int)PN_ARRAY_SIZE(a); ai = ai->ai_next) {
			for (j = 0; j < na && (al[j] != ai->ai_addrlen ||
					       memcmp(&a[j], ai->ai_addr, ai->ai_addrlen)); j++)
				;
			if (j < na)
				continue;
			memcpy(&a[na], ai->ai_addr, ai->ai_addrlen);
			al[na++] = ai->ai_addrlen;
			k++;
		}
		freeaddrinfo(res);
	}
	if (!na)
		return pn_err(-EHOSTUNREACH, "rank 0's host %s (%s): give --root HOST:PORT or "
			      "PENNY_ROOT", why, r->how);
	*out = calloc((size_t)(na * r->nports), sizeof(**out));
	if (!*out)
		return pn_err(-ENOMEM, "out of memory");
	for (*n = 0, i = 0; i < r->nports; i++)
		for (j = 0; j < na; j++) {
			struct cand *c = &(*out)[(*n)++];

			c->ss = a[j];
			c->sl = al[j];
			if (c->ss.ss_family == AF_INET6)
				((struct sockaddr_in6 *)&c->ss)->sin6_port = htons((uint16_t)r->ports[i]);
			else
				((struct sockaddr_in *)&c->ss)->sin_port = htons((uint16_t)r->ports[i]);
			pn_sock_addr_name(&c->ss, c->name, sizeof(c->name), 1);
		}
	return 0;
}

/* Frame h from the candidate, before the WELCOME: 0 when it is of type want under our tag. */
static int join_frame(struct pn_boot *b, const struct cand *c, const struct pn_frame *h,
		      uint16_t want, int *kind, char *why, size_t wl)
{
	if (h->magic != PN_BOOT_MAGIC || h->version != PN_BOOT_VERSION) {
		*kind = JOIN_STRANGER;
		snprintf(why, wl, "what listens at %s is not penny's rendezvous (magic 0x%08x, "
			 "version %u)", c->name, h->magic, h->version);
		return 1;
	}
	if (memcmp(h->cookie, b->tag, 16)) {
		*kind = JOIN_OTHER_JOB;
		if (b->cfg.root && !b->cfg.jobid[0])
			snprintf(why, wl, "rank 0 of another job listens at %s (one given "
				 "another rendezvous address than this rank's '%s': give every "
				 "rank the same, written alike)", c->name, b->cfg.root);
		else
			snprintf(why, wl, "rank 0 of another job listens at %s (another job id or "
				 "rendezvous address)", c->name);
		return 1;
	}
	if (h->type == PN_MSG_ABORT) {
		/* unproven: its text and code are never shown as rank 0's */
		*kind = JOIN_REFUSED;
		snprintf(why, wl, "what listens at %s refused this rank's proof of the job's secret: "
			 "it is not rank 0 of this job, or rank 0 has another secret (this rank's: "
			 "%s)", c->name, b->cfg.secret_src);
		return 1;
	}
	if (h->type != want) {
		*kind = JOIN_STRANGER;
		snprintf(why, wl, "what listens at %s sent a message of type %u, not penny's "
			 "rendezvous", c->name, h->type);
		return 1;
	}
	return 0;
}

/*
 * The CHALLENGE: its nonce, and the job's secret from rank 0's MUNGE
 * credential when this rank takes it (cfg.munge).  0, 1 (not this job's
 * rank 0: *kind, why), or -errno when this rank has no secret at all.
 */
static int join_challenge(struct pn_boot *b, const struct cand *c, double t,
			  uint8_t challenge[PN_WIRE_NONCE_LEN], int *kind, char *why, size_t wl)
{
	char msg[PN_WIRE_NONCE_LEN + PN_WIRE_CRED_MAX + 1];
	struct pn_frame h;
	int ret = pn_frame_recv(b->fds[0], &h, t);

	if (ret) {
		snprintf(why, wl, "what listens at %s %s", c->name, ret == -ETIMEDOUT ?
			 "said nothing" : "closed the connection");
		*kind = ret == -ETIMEDOUT ? JOIN_STRANGER : JOIN_NOBODY;
		return 1;
	}
	if ((ret = join_frame(b, c, &h, PN_MSG_CHALLENGE, kind, why, wl)))
		return ret;
	if (h.len < PN_WIRE_NONCE_LEN || h.len > PN_WIRE_NONCE_LEN + PN_WIRE_CRED_MAX ||
	    pn_sock_read_full(b->fds[0], msg, h.len, t)) {
		*kind = JOIN_STRANGER;
		snprintf(why, wl, "what listens at %s sent a challenge of %llu bytes", c->name,
			 (unsigned long long)h.len);
		return 1;
	}
	memcpy(challenge, msg, PN_WIRE_NONCE_LEN);
	msg[h.len] = 0;
	if (h.len > PN_WIRE_NONCE_LEN && b->cfg.munge) {
		ret = pn_boot_munge_decode(msg + PN_WIRE_NONCE_LEN, b->tag, b->cfg.secret);
		if (ret) {
			*kind = JOIN_REFUSED;
			snprintf(why, wl, "%s", pn_errmsg(ret));
			return 1;
		}
		b->cfg.have_secret = 1;
		snprintf(b->cfg.secret_src, sizeof(b->cfg.secret_src), "rank 0's, through MUNGE");
		PN_DBG(PN_LOG_BOOT, "rank %d: the secret: rank 0's, through MUNGE", b->rank);
	}
	if (!b->cfg.have_secret && (ret = pn_boot_secret_later(&b->cfg)))
		return ret;
	return 0;
}

/* The HELLO with this rank's proof; a rank that cannot run the job says why after it. */
static int join_hello(struct pn_boot *b, const uint8_t challenge[PN_WIRE_NONCE_LEN], double t)
{
	struct pn_wire_hello *me = &b->hello[b->rank];
	uint8_t hdr[PN_FRAME_HDR_LEN];
	struct pn_frame h;
	int ret;

	if (pn_boot_random(me->nonce, sizeof(me->nonce)))
		return pn_err(-EIO, "cannot read /dev/urandom");
	me->flags = b->cfg.refuse ? PN_HELLO_REFUSE : 0;
	pn_wire_hdr_init(&h, b->tag, PN_MSG_HELLO, (uint32_t)b->rank,
			 b->cfg.have_nonce ? job_mark(b->cfg.nonce) : 0, sizeof(*me));
	pn_frame_put(hdr, &h);
	pn_wire_hello_mac(b->cfg.secret, challenge, hdr, me, me->mac);
	ret = pn_frame_send(b->fds[0], &h, me, t);
	if (!ret && b->cfg.refuse)
		ret = send_tagged(b, b->fds[0], PN_MSG_ABORT, EINVAL, b->cfg.refuse,
				  PN_MIN(strlen(b->cfg.refuse), 299));
	return ret;
}

/* The WELCOME: rank 0's proof and the job's nonce.  0, or 1 with *kind and why. */
static int join_welcome(struct pn_boot *b, const struct cand *c, double t,
			const uint8_t challenge[PN_WIRE_NONCE_LEN], int *kind, char *why, size_t wl)
{
	uint8_t w[PN_WIRE_MAC_LEN + PN_WIRE_NONCE_LEN], want[PN_WIRE_MAC_LEN];
	struct pn_frame h;
	int ret = pn_frame_recv(b->fds[0], &h, t);

	if (ret) {
		*kind = JOIN_NOBODY;
		snprintf(why, wl, "what listens at %s %s after this rank's hello", c->name,
			 ret == -ETIMEDOUT ? "said nothing" : "closed the connection");
		return 1;
	}
	if ((ret = join_frame(b, c, &h, PN_MSG_WELCOME, kind, why, wl)))
		return ret;
	*kind = JOIN_UNPROVEN;
	snprintf(why, wl, "what listens at %s did not prove the job's secret: not rank 0 of this "
		 "job", c->name);
	if (h.len != sizeof(w) || pn_sock_read_full(b->fds[0], w, sizeof(w), t))
		return 1;
	pn_wire_welcome_mac(b->cfg.secret, challenge, b->hello[b->rank].nonce, (uint32_t)b->rank,
			    b->tag, w + PN_WIRE_MAC_LEN, want);
	if (pn_memeq_ct(want, w, sizeof(want)))
		return 1;
	if (b->cfg.have_nonce && memcmp(b->cfg.nonce, w + PN_WIRE_MAC_LEN, PN_WIRE_NONCE_LEN)) {
		*kind = JOIN_REPLACED;
		snprintf(why, wl, "rank 0 at %s is of another job (job %08x; this rank's is job "
			 "%08x): this rank's rank 0 is gone, and one started since with the same "
			 "secret took its address", c->name, job_mark(w + PN_WIRE_MAC_LEN),
			 job_mark(b->cfg.nonce));
		return 1;
	}
	memcpy(b->cfg.nonce, w + PN_WIRE_MAC_LEN, PN_WIRE_NONCE_LEN);
	b->cfg.have_nonce = 1;
	pn_boot_derive_cookie(&b->cfg);
	return 0;
}

/*
 * One try to join at candidate c: 0 joined (or, refusing, told rank 0),
 * 1 not there (*kind, why; JOIN_NOBODY also for a proven rank 0 that closed
 * before the table: *proven set), -errno the job fails.
 */
static int join_at(struct pn_boot *b, const struct cand *c, double deadline, int *kind,
		   int *proven, char *why, size_t wl)
{
	double t = PN_MIN(deadline, pn_now() + PN_HELLO_SECS);
	uint8_t challenge[PN_WIRE_NONCE_LEN];
	int fd, ret, last = 0;

	*kind = JOIN_NOBODY;
	*proven = 0;
	fd = pn_sock_connect(&c->ss, c->sl, t, 0, &last);
	if (fd < 0) {
		snprintf(why, wl, "nothing listens at %s (%s)", c->name,
			 strerror(fd == -ETIMEDOUT && last ? -last : -fd));
		return 1;
	}
	b->fds[0] = fd;
	ret = join_challenge(b, c, t, challenge, kind, why, wl);
	if (!ret && (ret = join_hello(b, challenge, t)))
		ret = 1;
	if (!ret)
		ret = join_welcome(b, c, b->cfg.rdv.probe ? PN_MIN(deadline + 1.0, pn_now() + 2 *
				   PN_HELLO_SECS) : deadline + 1.0, challenge, kind, why, wl);
	if (!ret && b->cfg.refuse)
		return 0;
	if (!ret) {
		*proven = 1;
		ret = pn_boot_recv_msg(b, 0, PN_MSG_TABLE, b->hello, sizeof(*b->hello) * (size_t)b->nranks,
			       deadline + 1.0, "the rendezvous");
		if (ret == -ECANCELED && b->abort_code < 0 && b->abort_code != -ECANCELED) {
			char text[300];

			snprintf(text, sizeof(text), "%s", pn_errmsg(ret));
			return pn_err(b->abort_code, "%s", text);
		}
		if (ret != -EPIPE || pn_now() >= deadline)
			return ret;
		PN_DBG(PN_LOG_BOOT, "rank %d: rank 0 closed the connection before the table: again",
		       b->rank);
		*kind = JOIN_NOBODY;
		ret = 1;
	}
	close(b->fds[0]);
	b->fds[0] = -1;
	return ret;
}

/*
 * A rank joins: at each candidate address in turn (one for --root, the
 * job's ports for a derived rendezvous), until rank 0 proved itself and
 * sent the table, or the deadline.  With one address, what answers there
 * and is not this job's rank 0 fails the rank at once; with several, it is
 * passed by.  Rank 0 waits for late ranks until the same deadline and then
 * says why to those that joined, so they wait a second longer to hear it.
 */
int pn_boot_rank_join(struct pn_boot *b, double deadline)
{
	const struct pn_rdv *r = &b->cfg.rdv;
	struct cand *c = NULL;
	char why[400], seen[400] = "";
	int n = 0, i, kind, proven, ours = -1, worst = -1, ret, ms = 10;

	ret = candidates(b, &c, &n);
	for (; !ret;) {
		for (i = 0; i < n && !ret; i++) {
			if (ours >= 0 && i != ours)
				continue;
			ret = join_at(b, &c[i], deadline, &kind, &proven, why, sizeof(why));
			if (ret <= 0)
				break;
			ret = 0;
			if (proven) {
				ours = i;
			} else if (ours >= 0 && kind == JOIN_NOBODY) {
				ret = pn_err(-EPIPE, "rank 0 at %s closed the connection during the "
					     "rendezvous and no longer listens: it failed or was "
					     "killed", c[i].name);
			}
			if (kind > worst) {
				worst = kind;
				snprintf(seen, sizeof(seen), "%s", why);
			}
			/* its job is gone: no other address can be its rank 0 */
			if (!ret && kind == JOIN_REPLACED)
				ret = pn_err(-EACCES, "%s", why);
			if (!ret && !r->probe && kind != JOIN_NOBODY)
				ret = pn_err(kind == JOIN_STRANGER ? -EPROTO : -EACCES, "%s", why);
		}
		if (ret || i < n)
			break;
		if (pn_now() >= deadline) {
			ret = r->probe ? pn_err(-ETIMEDOUT, "timed out after %g s waiting for rank 0 "
						"(%s): %s", b->cfg.timeout, r->how, seen)
				       : worst > JOIN_NOBODY
				       ? pn_err(-ETIMEDOUT, "timed out after %g s connecting to rank 0 "
						"at %s: %s", b->cfg.timeout, c[0].name, seen)
				       : pn_err(-ETIMEDOUT, "timed out after %g s connecting to rank 0 "
						"at %s", b->cfg.timeout, c[0].name);
			break;
		}
		usleep((useconds_t)ms * 1000);
		ms = PN_MIN(ms * 2, 200);
	}
	free(c);
	return ret;
}

/*
 * Where the ranks meet and with what secret: --root, PENNY_ROOT, a
 * single-host launcher's rendezvous file, else the launcher's own
 * (pn_rdv_launcher); then the secret, the job's tag and, on rank 0, the
 * job's nonce and cookie.
 */
int pn_boot_where(struct pn_boot *b, double deadline)
{
	struct pn_boot_cfg *cfg = &b->cfg;
	struct pn_rdv *r = &cfg->rdv;
	const char *root = cfg->root ? cfg->root : cfg->knobs.root && *cfg->knobs.root ?
			   cfg->knobs.root : NULL;
	int port = 0, ret;

	if (!root && cfg->single_node && cfg->jobid[0] &&
	    !pn_boot_env(cfg->knobs.env, "MASTER_ADDR")) {
		ret = pn_rdv_file(cfg, deadline, b->rdv_file, sizeof(b->rdv_file));
		if (ret)
			return ret;
		root = cfg->root;
	}
	memset(r, 0, sizeof(*r));
	if (root) {
		cfg->root = root;
		if (pn_parse_hostport(root, r->hosts[0], sizeof(r->hosts[0]), &port) ||
		    !r->hosts[0][0])
			return pn_err(-EINVAL, "bad rendezvous address '%s' (want HOST:PORT)", root);
		/* port 0: rank 0 listens on a port of its own choosing; another
		 * rank cannot reach it there (it tried until the timeout) */
		if (!port && b->rank != 0)
			return pn_err(-EINVAL, "rendezvous address '%s': port 0 cannot be reached "
					       "(give the port rank 0 listens on)", root);
		r->nhosts = 1;
		r->ports[r->nports++] = port;
		snprintf(r->how, sizeof(r->how), "%s", root);
		snprintf(b->root, sizeof(b->root), "%s", root);
	} else {
		ret = pn_rdv_launcher(cfg);
		if (ret)
			return ret;
		if (b->rank == 0 && (ret = pn_rdv_check_root(cfg)))
			return ret;
		snprintf(b->root, sizeof(b->root), strchr(r->hosts[0], ':') ? "[%s]:%d" : "%s:%d",
			 r->hosts[0], r->ports[0]);
	}
	ret = pn_boot_secret(cfg);
	if (ret)
		return ret;
	pn_boot_tag(cfg, b->tag);
	if (b->rank == 0 && !cfg->have_nonce) {
		if (pn_boot_random(cfg->nonce, sizeof(cfg->nonce)))
			return pn_err(-EIO, "cannot read /dev/urandom");
		cfg->have_nonce = 1;
	}
	if (b->rank == 0)
		pn_boot_derive_cookie(cfg);
	PN_DBG(PN_LOG_BOOT, "rank %d: rendezvous %s; the secret: %s", b->rank, r->how,
	       cfg->secret_src);
	return 0;
}

static void fill_hello(struct pn_wire_hello *h, int rank, int nranks, const char *node_id)
{
	memset(h, 0, sizeof(*h));
	h->rank = (uint32_t)rank;
	h->nranks = (uint32_t)nranks;
	h->pid = (int32_t)getpid();
	snprintf(h->host, sizeof(h->host), "%s", pn_hostname());
	pn_host_id(node_id, h->host_id, sizeof(h->host_id));
}

static void compute_nodes(struct pn_boot *b)
{
	int r, s;

	b->nnodes = 0;
	for (r = 0; r < b->nranks; r++) {
		b->node[r] = -1;
		/* a node's first rank: usually one of the last few */
		for (s = r - 1; s >= 0; s--)
			if (!strcmp(b->hello[s].host_id, b->hello[r].host_id)) {
				b->node[r] = b->node[s];
				break;
			}
		if (b->node[r] < 0)
			b->node[r] = b->nnodes++;
	}
	b->local_rank = 0;
	b->local_size = 0;
	for (r = 0; r < b->nranks; r++) {
		if (b->node[r] != b->node[b->rank])
			continue;
		if (r < b->rank)
			b->local_rank++;
		b->local_size++;
	}
}

int pn_boot_init(struct pn_boot **out, const struct pn_boot_cfg *cfg)
{
	struct pn_boot *b;
	double deadline, t0 = pn_now(), t1;
	int ret = 0, i;

	if (!(cfg->timeout > 0) || !isfinite(cfg->timeout))
		return pn_err(-EINVAL, "the timeout must be a positive number of seconds");
	if (cfg->nranks > PN_BOOT_MAX_RANKS)
		return pn_err(-EINVAL, "a job of %d ranks: at most %d", cfg->nranks, PN_BOOT_MAX_RANKS);
	if (cfg->nranks > 1 && (cfg->rank < 0 || cfg->rank >= cfg->nranks))
		return pn_err(-EINVAL, "rank %d of %d", cfg->rank, cfg->nranks);
	b = calloc(1, sizeof(*b));
	if (!b)
		return pn_err(-ENOMEM, "out of memory");
	b->cfg = *cfg;
	b->rank = cfg->rank < 0 ? 0 : cfg->rank;
	b->nranks = cfg->nranks < 1 ? 1 : cfg->nranks;
	b->fds = malloc(sizeof(int) * (size_t)b->nranks);
	b->hello = calloc((size_t)b->nranks, sizeof(*b->hello));
	b->node = calloc((size_t)b->nranks, sizeof(int));
	if (!b->fds || !b->hello || !b->node) {
		ret = pn_err(-ENOMEM, "out of memory");
		goto fail;
	}
	for (i = 0; i < b->nranks; i++)
		b->fds[i] = -1;
	if (b->nranks > 1)
		pn_boot_watch_cont(b);
	fill_hello(&b->hello[b->rank], b->rank, b->nranks, cfg->knobs.node_id);
	deadline = pn_now() + cfg->timeout;
	if (b->nranks > 1) {
		ret = pn_boot_fd_budget(b->nranks, b->rank == 0);
		if (ret)
			goto fail;
	}
	if (b->nranks > 1) {
		ret = pn_boot_where(b, deadline);
		if (ret)
			goto fail;
		cfg = &b->cfg;
	}
	if (b->nranks > 1 && b->rank == 0) {
		if (b->cfg.listen_fd < 0) {
			ret = pn_boot_root_listen(b);
			if (ret)
				goto fail;
		}
		ret = pn_boot_root_accept(b, deadline);
		if (b->rdv_file[0])
			unlink(b->rdv_file);
		close(b->cfg.listen_fd);
		b->cfg.listen_fd = -1;
		if (ret)
			goto fail;
		if (b->cfg.refuse) {
			ret = -ECANCELED;
			goto fail;
		}
		t1 = pn_now();
		for (i = 1; i < b->nranks; i++) {
			ret = pn_boot_send_seq(b, b->fds[i], PN_MSG_TABLE, b->seq, b->hello,
				       sizeof(*b->hello) * (size_t)b->nranks, deadline);
			if (ret) {
				ret = pn_boot_peer_error(b, i, ret, "the rendezvous");
				goto fail;
			}
		}
		PN_DBG(PN_LOG_BOOT, "rendezvous of %d ranks: all joined %.3f s after rank 0 began, "
		       "the table (%zu bytes to each) sent in %.3f s", b->nranks, t1 - t0,
		       sizeof(*b->hello) * (size_t)b->nranks, pn_now() - t1);
	} else if (b->nranks > 1) {
		ret = pn_boot_rank_join(b, deadline);
		if (ret || b->cfg.refuse) {
			ret = ret ? ret : -ECANCELED;
			goto fail;
		}
		for (i = 0; i < b->nranks; i++) {
			b->hello[i].host[sizeof(b->hello[i].host) - 1] = 0;
			b->hello[i].host_id[sizeof(b->hello[i].host_id) - 1] = 0;
			pn_wire_printable(b->hello[i].host, sizeof(b->hello[i].host));
			pn_wire_printable(b->hello[i].host_id, sizeof(b->hello[i].host_id));
		}
	}
	b->seq = 1;
	compute_nodes(b);
	if (pn_debug_mask & PN_LOG_BOOT) {
		uint8_t fp[PN_SHA256_LEN];

		/* the cookie's fingerprint, never the cookie: another for every job */
		pn_sha256(b->cfg.cookie, sizeof(b->cfg.cookie), fp);
		PN_DBG(PN_LOG_BOOT, "rank %d/%d node %d/%d local %d/%d launcher %s, job %02x%02x%02x%02x",
		       b->rank, b->nranks, b->node[b->rank], b->nnodes, b->local_rank,
		       b->local_size, cfg->launcher, fp[0], fp[1], fp[2], fp[3]);
	}
	*out = b;
	return 0;
fail:
	pn_boot_free(b);
	return ret;
}

int pn_boot_refuse(const struct pn_boot_cfg *cfg, const char *why)
{
	struct pn_boot_cfg c = *cfg;
	struct pn_boot *b = NULL;
	int ret;

	if (c.nranks < 2 || c.rank < 0 || !strcmp(c.launcher, "self") ||
	    !strcmp(c.launcher, "none"))
		return 0;
	c.refuse = why && *why ? why : "it did not say why";
	ret = pn_boot_init(&b, &c);
	pn_boot_free(b);
	if (ret == -ECANCELED)
		return 0;
	PN_DBG(PN_LOG_BOOT, "could not tell the job why this rank cannot run it: %s",
	       pn_errmsg(ret));
	pn_err_clear();
	return ret;
}
