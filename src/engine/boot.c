/* SPDX-License-Identifier: MIT */
/*
 * The TCP rendezvous through rank 0 (the root's accept of strangers, the
 * file rendezvous of single-host launchers) and the collectives over it
 * (allgather, bcast, barrier, agree, abort).  Its wire format is
 * engine/wire.c; who the ranks are and how they are started is
 * engine/launch.c.
 */
#define _GNU_SOURCE
#include "engine/boot.h"
#include "engine/launch.h"
#include "base/file.h"
#include "base/log.h"
#include "base/sha256.h"
#include "base/sock.h"
#include "base/util.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdarg.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- sockets with deadlines ---- */

struct pn_boot {
	struct pn_boot_cfg cfg;
	int rank, nranks;
	int *fds;		/* root: fd per rank; others: fds[0] = root */
	struct pn_wire_hello *hello; /* every rank's hello */
	int *node;		/* node index per rank */
	int nnodes, local_rank, local_size;
	uint32_t seq;
	double extra;		/* seconds every collective's wait adds (pn_boot_set_extra) */
	sig_atomic_t conts;	/* boot_conts when the job began */
	int abort_code;		/* errno carried by the last ABORT received (rendezvous) */
	char rdv_file[320];	/* rank 0: the rendezvous file it published */
};

/* Header and payload in one sendmsg: one segment, no Nagle/delayed-ACK stall. */
static int send_seq(struct pn_boot *b, int fd, uint16_t type, uint32_t seq, const void *payload,
		    size_t len, double deadline)
{
	struct pn_frame h;

	pn_wire_hdr_init(&h, b->cfg.cookie, type, (uint32_t)b->rank, seq, len);
	return pn_frame_send(fd, &h, payload, deadline);
}

static int send_msg(struct pn_boot *b, int fd, uint16_t type, const void *payload, size_t len,
		    double deadline)
{
	return send_seq(b, fd, type, b->seq, payload, len, deadline);
}

static const char *rank_host(const struct pn_boot *b, int r)
{
	return b->hello && b->hello[r].host[0] ? b->hello[r].host : "?";
}

/* SIGCONTs this process received: a rank stopped and resumed knows it was. */
static volatile sig_atomic_t boot_conts;

static void on_cont(int sig)
{
	(void)sig;
	boot_conts++;
}

static void watch_cont(struct pn_boot *b)
{
	struct sigaction old, act;

	memset(&act, 0, sizeof(act));
	act.sa_handler = on_cont;
	act.sa_flags = SA_RESTART;
	sigemptyset(&act.sa_mask);
	/* only where nobody else handles it */
	if (!sigaction(SIGCONT, NULL, &old) && old.sa_handler == SIG_DFL &&
	    !(old.sa_flags & SA_SIGINFO))
		sigaction(SIGCONT, &act, NULL);
	b->conts = boot_conts;
}

static int was_stopped(struct pn_boot *b, int ret, const char *why)
{
	return pn_err(ret, "this rank (%d, host %s) was stopped and resumed during the job: the "
		      "others gave up waiting for it (%s)", b->rank, rank_host(b, b->rank), why);
}

/*
 * A step that failed with rank r.  Rank 0 waits on every rank and the
 * others wait longer on rank 0 (PN_BOOT_ROOT_GRACE), so rank 0 names the
 * rank that did not answer or died and tells every rank (an ABORT with the
 * text), and every rank says the same.  A rank that was itself stopped
 * (SIGSTOP) and resumed after the others gave up says so, instead of
 * blaming the rank it waited for.
 */
static int peer_error(struct pn_boot *b, int r, int ret, const char *what)
{
	char why[300], pid[24] = "";

	if (ret == -ECANCELED)
		return ret; /* message already set (abort from a peer) */
	if (b->hello && b->hello[r].pid > 0)
		snprintf(pid, sizeof(pid), ", pid %d", b->hello[r].pid);
	if (ret == -ETIMEDOUT) {
		snprintf(why, sizeof(why), "timed out after %.0f s waiting for rank %d (host %s%s) in "
			 "%s: it did not answer (stopped or hung)", b->cfg.timeout + b->extra, r,
			 rank_host(b, r), pid, what);
	} else if (ret == -EPIPE || ret == -ECONNRESET) {
		ret = -EPIPE;
		snprintf(why, sizeof(why), "rank %d (host %s%s) closed its connection during %s: it "
			 "failed or was killed", r, rank_host(b, r), pid, what);
	} else {
		snprintf(why, sizeof(why), "%s with rank %d (host %s): %s", what, r, rank_host(b, r),
			 strerror(-ret));
	}
	if (boot_conts != b->conts)
		return was_stopped(b, ret, why);
	if (b->rank == 0)
		pn_boot_abort(b, why);
	return pn_err(ret, "%s", why);
}

/* An ABORT's text (h read already): -ECANCELED with it as the message. */
static int recv_abort(struct pn_boot *b, int fd, const struct pn_frame *h, double deadline)
{
	char text[300] = "";
	size_t n = h->len < sizeof(text) - 1 ? h->len : sizeof(text) - 1;

	if (pn_sock_read_full(fd, text, n, deadline))
		text[0] = 0;
	text[n] = 0;
	pn_wire_printable(text, sizeof(text));
	b->abort_code = h->seq > 0 && h->seq < 4096 ? -(int)h->seq : -ECANCELED;
	/* rank 0 passes it on, as pn_boot_poll_abort does: otherwise the other
	 * ranks see only rank 0's connection close, and blame rank 0 */
	if (b->rank == 0 && text[0])
		pn_boot_abort(b, text);
	if (boot_conts != b->conts)
		return was_stopped(b, -ECANCELED, text[0] ? text : "a peer aborted the job");
	return pn_err(-ECANCELED, "%s", text[0] ? text : "a peer aborted the job");
}

/* Receive one message of the expected type from rank r into buf (len exact). */
static int recv_msg(struct pn_boot *b, int r, uint16_t type, void *buf, size_t len,
		    double deadline, const char *what)
{
	struct pn_frame h;
	int fd = b->rank == 0 ? b->fds[r] : b->fds[0];
	int ret;

	static const uint8_t zero[16];

	ret = pn_frame_recv(fd, &h, deadline);
	if (ret)
		return peer_error(b, r, ret, what);
	/* while a rank joins, rank 0 speaks with a zero cookie until the rank proved itself */
	ret = pn_wire_hdr_check(&h, b->seq == 0 && b->rank != 0 && !memcmp(h.cookie, zero, 16) ?
				zero : b->cfg.cookie, type, UINT64_MAX);
	if (ret)
		return pn_err_ctx(ret, "bad message from rank %d (host %s)", r, rank_host(b, r));
	if (h.type == PN_MSG_ABORT)
		return recv_abort(b, fd, &h, deadline);
	if (h.len != len || h.seq != b->seq)
		return pn_err(-EPROTO, "rank %d (host %s) sent %llu bytes for step %u, expected %zu for "
			      "step %u (ranks disagree on the work)", r, rank_host(b, r),
			      (unsigned long long)h.len, h.seq, len, b->seq);
	if (len) {
		ret = pn_sock_read_full(fd, buf, len, deadline);
		if (ret)
			return peer_error(b, r, ret, what);
	}
	return 0;
}

static int root_listen(struct pn_boot *b, const char *host, int port)
{
	int fd = pn_sock_listen(host, port, 4096, NULL);

	if (fd == -EHOSTUNREACH)
		return fd;
	if (fd < 0)
		return pn_err(fd, "cannot listen on %s:%d: %s", host, port, strerror(-fd));
	b->cfg.listen_fd = fd;
	return 0;
}

/*
 * Connect to the root before the deadline, retrying while it is not there
 * yet (refused, unreachable, a full backlog).  rejoin: an earlier connection
 * was closed by the root; a refusal now means it is gone.
 */
static int connect_root(struct pn_boot *b, const char *host, int port, double deadline, int rejoin)
{
	struct sockaddr_storage ss;
	socklen_t sl;
	int fd;

	fd = pn_sock_resolve(host, port, 0, &ss, &sl);
	if (fd)
		return fd;
	fd = pn_sock_connect(&ss, sl, deadline, !rejoin, NULL);
	if (fd >= 0) {
		b->fds[0] = fd;
		return 0;
	}
	if (rejoin && fd == -ECONNREFUSED)
		return pn_err(-EPIPE, "rank 0 at %s:%d closed the connection during the rendezvous "
			      "and no longer listens: it failed or was killed", host, port);
	if (fd != -ETIMEDOUT)
		return pn_err(fd, "cannot connect to rank 0 at %s:%d: %s", host, port, strerror(-fd));
	return pn_err(-ETIMEDOUT, "timed out after %.0f s connecting to rank 0 at %s:%d%s",
		      b->cfg.timeout, host, port,
		      rejoin ? " (it had closed an earlier connection)" : "");
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
			send_seq(b, b->fds[i], PN_MSG_ABORT, (uint32_t)-code, why, strlen(why), deadline);
	if (extra_fd >= 0)
		send_seq(b, extra_fd, PN_MSG_ABORT, (uint32_t)-code, why, strlen(why), deadline);
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
 * A frame to a connection that has not proven the secret: a zero cookie
 * (it learns nothing of the job), sent at once or not at all.
 */
static int send_unproven(int fd, uint16_t type, uint32_t seq, const void *payload, size_t len)
{
	static const uint8_t zero[16];
	struct pn_frame h;

	pn_wire_hdr_init(&h, zero, type, 0, seq, len);
	return pn_frame_send(fd, &h, payload, pn_now() + 0.05);
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
	ret = pn_err(-ETIMEDOUT, "timed out after %.0f s waiting for ranks %s to join "
		     "(%d of %d joined)", b->cfg.timeout, missing, have, b->nranks);
	root_refuse(b, ret, pn_errmsg(ret), -1);
	return ret;
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

		if (n > 0)
			p->got += (size_t)n;
		else if (n == 0)
			why = "closed before saying hello";
		else if (errno != EAGAIN && errno != EINTR)
			why = strerror(errno);
	}
	if (!why)
		chk = pn_wire_hello_check(p->msg, p->got, b->cfg.cookie, b->cfg.secret,
					  p->challenge, b->nranks, &h);
	if (chk == -EACCES) {
		char peer[80];

		/* a rank given another secret learns why at once */
		pn_sock_peer_name(p->fd, peer, sizeof(peer));
		snprintf(whybuf, sizeof(whybuf), "%s from %s", pn_errmsg(chk), peer);
		why = whybuf;
		send_unproven(p->fd, PN_MSG_ABORT, EACCES, w->refused, strlen(w->refused));
	}
	if (chk == -EINVAL) {
		snprintf(whybuf, sizeof(whybuf), "%s", pn_errmsg(chk));
		root_refuse(b, chk, whybuf, p->fd);
		return pn_err(-EINVAL, "%s", whybuf);
	}
	if (chk == -EPROTO) {
		snprintf(whybuf, sizeof(whybuf), "%s", pn_errmsg(chk));
		why = whybuf;
	} else if (chk == -EAGAIN && !why && now - p->since > w->hello_secs) {
		snprintf(whybuf, sizeof(whybuf), "no hello within %.0f s (%zu bytes)",
			 w->hello_secs, p->got);
		why = whybuf;
	}
	if (!chk) {
		uint8_t mac[PN_WIRE_MAC_LEN];

		r = (int)h.rank;
		pn_wire_welcome_mac(b->cfg.secret, p->challenge, h.nonce, h.rank, mac);
		if (send_seq(b, p->fd, PN_MSG_WELCOME, 0, mac, sizeof(mac), pn_now() + 0.05)) {
			snprintf(whybuf, sizeof(whybuf), "rank %d (pid %d on %s) proved the "
				 "secret but its connection failed", r, h.pid, h.host);
			chk = -EAGAIN;
			why = whybuf;
		}
	}
	if (!chk) {
		if (b->fds[r] >= 0 && (b->hello[r].pid != h.pid ||
				       strcmp(b->hello[r].host_id, h.host_id))) {
			snprintf(whybuf, sizeof(whybuf), "rank %d joined twice: pid %d on %s "
				 "and pid %d on %s: two jobs on one rendezvous address?",
				 r, b->hello[r].pid, b->hello[r].host, h.pid, h.host);
			root_refuse(b, -EINVAL, whybuf, p->fd);
			return pn_err(-EINVAL, "%s", whybuf);
		}
		if (b->fds[r] >= 0) { /* the same process again: its newest */
			close(b->fds[r]);
			w->have--;
		}
		memset(h.mac, 0, sizeof(h.mac));
		b->hello[r] = h;
		b->fds[r] = p->fd;
		w->have++;
		PN_DBG(PN_LOG_BOOT, "rank %d joined from %s", r, b->hello[r].host);
		return 1;
	}
	if (why) {
		drop_conn(&w->ndrop, why);
		close(p->fd);
		return 1;
	}
	return 0;
}

/*
 * New connections on the listening socket: each is sent a challenge and
 * waits for its hello; when PN_PENDING_MAX wait, the one silent longest
 * makes room.
 */
static void root_take_new(struct pn_boot *b, struct root_wait *w, double now)
{
	struct pending *pend = w->pend;
	int i;

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
		if (pn_boot_random(pend[w->npend].challenge, PN_WIRE_NONCE_LEN) ||
		    send_unproven(fd, PN_MSG_CHALLENGE, 0, pend[w->npend].challenge,
				  PN_WIRE_NONCE_LEN)) {
			drop_conn(&w->ndrop, "could not send the challenge");
			close(fd);
			continue;
		}
		pend[w->npend].fd = fd;
		pend[w->npend].since = now;
		w->npend++;
	}
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
static int root_accept(struct pn_boot *b, double deadline)
{
	struct root_wait w = { .have = 1 };
	struct pollfd *pfd = calloc(PN_PENDING_MAX + 1, sizeof(*pfd));
	int ret = 0, i;

	w.pend = calloc(PN_PENDING_MAX, sizeof(*w.pend));
	w.hello_secs = PN_MIN(PN_HELLO_SECS, b->cfg.timeout);
	snprintf(w.refused, sizeof(w.refused), "rank 0 (host %s) refused this rank: it did not "
		 "prove the job's secret (every rank needs the same PENNY_COOKIE, PENNY_COOKIE_FILE "
		 "or ~/.config/penny/cookie, and the same --root)", pn_hostname());

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
		root_take_new(b, &w, now);
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

/*
 * Launchers that give no rendezvous address but say the job is on one host:
 * rank 0 listens on loopback and publishes "HOST:PORT COOKIE" in a file
 * named after the job id, in a directory only this user can write:
 * ${TMPDIR:-/tmp}/penny-<euid>, created 0700.  Another user could plant a
 * directory or file there first (or a symbolic link): the directory must be
 * a real directory of ours with mode 0700, the file a regular file of ours
 * with mode 0600 (opened without following links), or it is refused.
 */
static int rdv_dir(char *dir, size_t len)
{
	const char *base = getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	uid_t me = geteuid();

	snprintf(dir, len, "%s/penny-%u", base, (unsigned)me);
	if (mkdir(dir, 0700) && errno != EEXIST)
		return pn_err(-errno, "cannot create '%s': %s", dir, strerror(errno));
	return pn_file_own_dir(dir, 077, "the rendezvous", "with mode 700");
}

/* The file's name: the job id, with what could leave the directory replaced. */
static void rdv_name(char *name, size_t len, const char *jobid)
{
	size_t i;

	snprintf(name, len, "%s.root", jobid);
	for (i = 0; name[i]; i++)
		if (!isalnum((unsigned char)name[i]) && !strchr("._-", name[i]))
			name[i] = '_';
}

static int rdv_publish(struct pn_boot *b, int dfd, const char *dir, const char *name)
{
	static char root[64];
	struct pn_boot_cfg *cfg = &b->cfg;
	int port = 0;
	char tmp[300], line[160];
	int fd = pn_sock_listen("127.0.0.1", 0, 4096, &port), n, i, ret = 0;

	if (fd < 0 || pn_boot_random(cfg->secret, sizeof(cfg->secret))) {
		if (fd >= 0)
			close(fd);
		return pn_err(-EIO, "cannot listen on 127.0.0.1 for the rendezvous");
	}
	cfg->listen_fd = fd;
	cfg->have_secret = 1;
	snprintf(root, sizeof(root), "127.0.0.1:%d", port);
	n = snprintf(line, sizeof(line), "%s ", root);
	for (i = 0; i < 32; i++)
		n += snprintf(line + n, sizeof(line) - (size_t)n, "%02x", cfg->secret[i]);
	n += snprintf(line + n, sizeof(line) - (size_t)n, "\n");
	snprintf(tmp, sizeof(tmp), "%s.%d", name, (int)getpid());
	unlinkat(dfd, tmp, 0); /* ours, from a process with our pid */
	fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0 || write(fd, line, (size_t)n) != n || close(fd) ||
	    renameat(dfd, tmp, dfd, name)) {
		ret = pn_err(-errno, "cannot write '%s/%s': %s", dir, name, strerror(errno));
		if (fd >= 0)
			unlinkat(dfd, tmp, 0);
		return ret;
	}
	snprintf(b->rdv_file, sizeof(b->rdv_file), "%s/%s", dir, name);
	cfg->root = root;
	return 0;
}

/* 1: not there yet; 0: read; <0: refused or unreadable */
static int rdv_read(struct pn_boot *b, int dfd, const char *dir, const char *name)
{
	static char root[64];
	struct pn_boot_cfg *cfg = &b->cfg;
	char line[160], hex[72];
	struct stat st;
	ssize_t n;
	int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);

	if (fd < 0 && errno == ENOENT)
		return 1;
	if (fd < 0)
		return pn_err(errno == ELOOP ? -EPERM : -errno, "refusing '%s/%s' for the rendezvous: %s",
			      dir, name, errno == ELOOP ? "a symbolic link" : strerror(errno));
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077)) {
		close(fd);
		return pn_err(-EPERM, "refusing '%s/%s' for the rendezvous: not a regular file of uid "
			      "%u with mode 600", dir, name, (unsigned)geteuid());
	}
	n = read(fd, line, sizeof(line) - 1);
	close(fd);
	if (n <= 0)
		return 1;
	line[n] = 0;
	if (sscanf(line, "%63s %71s", root, hex) != 2 || strlen(hex) != 64)
		return 1; /* rename makes it whole; a partial one is not ours */
	if (pn_boot_hex(hex, cfg->secret, sizeof(cfg->secret)))
		return pn_err(-EPROTO, "'%s/%s' holds no job secret", dir, name);
	cfg->have_secret = 1;
	cfg->root = root;
	return 0;
}

static int file_rendezvous(struct pn_boot *b, double deadline)
{
	char dir[300], name[80];
	int dfd = rdv_dir(dir, sizeof(dir)), ret;

	if (dfd < 0)
		return dfd;
	rdv_name(name, sizeof(name), b->cfg.jobid);
	if (b->rank == 0) {
		ret = rdv_publish(b, dfd, dir, name);
		close(dfd);
		return ret;
	}
	while ((ret = rdv_read(b, dfd, dir, name)) > 0) {
		if (pn_now() > deadline) {
			ret = pn_err(-ETIMEDOUT, "timed out after %.0f s waiting for rank 0 to publish "
				     "'%s/%s'", b->cfg.timeout, dir, name);
			break;
		}
		usleep(10000);
	}
	close(dfd);
	return ret;
}

static void fill_hello(struct pn_wire_hello *h, int rank, int nranks)
{
	memset(h, 0, sizeof(*h));
	h->rank = (uint32_t)rank;
	h->nranks = (uint32_t)nranks;
	h->pid = (int32_t)getpid();
	snprintf(h->host, sizeof(h->host), "%s", pn_hostname());
	snprintf(h->host_id, sizeof(h->host_id), "%s", pn_host_id());
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

/*
 * A rank joins: connect, hello, wait for the table.  The root may close a
 * connection it could not tell from a stranger's in time (a flood of idle
 * connections): then join again, until the deadline.  Rank 0 waits for
 * late ranks until the same deadline and then says why to those that
 * joined, so they wait a second longer to hear it.
 */
static int rank_join(struct pn_boot *b, const char *host, int port, double deadline)
{
	struct pn_wire_hello *me = &b->hello[b->rank];
	uint8_t challenge[PN_WIRE_NONCE_LEN], mac[PN_WIRE_MAC_LEN], hdr[PN_FRAME_HDR_LEN];
	struct pn_frame h;
	int ret, rejoin = 0;

	for (;;) {
		ret = connect_root(b, host, port, deadline, rejoin);
		if (ret)
			return ret;
		/* the challenge, the hello with the proof, rank 0's proof back */
		ret = recv_msg(b, 0, PN_MSG_CHALLENGE, challenge, sizeof(challenge), deadline,
			       "the rendezvous");
		if (!ret && pn_boot_random(me->nonce, sizeof(me->nonce)))
			ret = pn_err(-EIO, "cannot read /dev/urandom");
		if (!ret) {
			pn_wire_hdr_init(&h, b->cfg.cookie, PN_MSG_HELLO, (uint32_t)b->rank, 0,
					 sizeof(*me));
			pn_frame_put(hdr, &h);
			pn_wire_hello_mac(b->cfg.secret, challenge, hdr, me, me->mac);
			ret = send_msg(b, b->fds[0], PN_MSG_HELLO, me, sizeof(*me), deadline);
			if (ret)
				ret = peer_error(b, 0, ret, "the rendezvous");
		}
		if (!ret)
			ret = recv_msg(b, 0, PN_MSG_WELCOME, mac, sizeof(mac), deadline + 1.0,
				       "the rendezvous");
		if (!ret) {
			uint8_t want[PN_WIRE_MAC_LEN];

			pn_wire_welcome_mac(b->cfg.secret, challenge, me->nonce, (uint32_t)b->rank,
					    want);
			if (pn_memeq_ct(want, mac, sizeof(mac)))
				return pn_err(-EACCES, "what listens at %s:%d did not prove the job's "
					      "secret: not rank 0 of this job", host, port);
			ret = recv_msg(b, 0, PN_MSG_TABLE, b->hello,
				       sizeof(*b->hello) * (size_t)b->nranks, deadline + 1.0,
				       "the rendezvous");
		}
		if (ret == -ECANCELED && b->abort_code < 0 && b->abort_code != -ECANCELED) {
			char why[300];

			snprintf(why, sizeof(why), "%s", pn_errmsg(ret));
			return pn_err(b->abort_code, "%s", why);
		}
		if (ret != -EPIPE || pn_now() >= deadline)
			return ret;
		PN_DBG(PN_LOG_BOOT, "rank %d: rank 0 closed the connection before the table: again",
		       b->rank);
		close(b->fds[0]);
		b->fds[0] = -1;
		rejoin = 1;
		usleep(20000);
	}
}

int pn_boot_init(struct pn_boot **out, const struct pn_boot_cfg *cfg)
{
	struct pn_boot *b;
	double deadline, t0 = pn_now(), t1;
	char host[256];
	int port = 0, ret = 0, i;

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
		watch_cont(b);
	fill_hello(&b->hello[b->rank], b->rank, b->nranks);
	deadline = pn_now() + cfg->timeout;
	if (b->nranks > 1) {
		ret = pn_boot_fd_budget(b->nranks, b->rank == 0);
		if (ret)
			goto fail;
	}
	if (b->nranks > 1 && !cfg->root && cfg->single_node && cfg->jobid[0]) {
		ret = file_rendezvous(b, deadline);
		if (ret)
			goto fail;
		cfg = &b->cfg;
	}
	if (b->nranks > 1) {
		if (!cfg->root) {
			ret = pn_err(-EINVAL, "no rendezvous address for %d ranks: give --root HOST:PORT "
				     "or set PENNY_ROOT (or MASTER_ADDR and MASTER_PORT)", b->nranks);
			goto fail;
		}
		ret = pn_boot_secret(&b->cfg);
		if (ret)
			goto fail;
		if (!b->cfg.have_cookie)
			pn_boot_derive_cookie(&b->cfg);
		if (pn_parse_hostport(cfg->root, host, sizeof(host), &port) || !host[0]) {
			ret = pn_err(-EINVAL, "bad rendezvous address '%s' (want HOST:PORT)", cfg->root);
			goto fail;
		}
	}
	if (b->nranks > 1 && b->rank == 0) {
		if (b->cfg.listen_fd < 0) {
			ret = root_listen(b, host, port);
			if (ret)
				goto fail;
		}
		ret = root_accept(b, deadline);
		if (b->rdv_file[0])
			unlink(b->rdv_file);
		close(b->cfg.listen_fd);
		b->cfg.listen_fd = -1;
		if (ret)
			goto fail;
		t1 = pn_now();
		for (i = 1; i < b->nranks; i++) {
			ret = send_msg(b, b->fds[i], PN_MSG_TABLE, b->hello,
				       sizeof(*b->hello) * (size_t)b->nranks, deadline);
			if (ret) {
				ret = peer_error(b, i, ret, "the rendezvous");
				goto fail;
			}
		}
		PN_DBG(PN_LOG_BOOT, "rendezvous of %d ranks: all joined %.3f s after rank 0 began, "
		       "the table (%zu bytes to each) sent in %.3f s", b->nranks, t1 - t0,
		       sizeof(*b->hello) * (size_t)b->nranks, pn_now() - t1);
	} else if (b->nranks > 1) {
		ret = rank_join(b, host, port, deadline);
		if (ret)
			goto fail;
		for (i = 0; i < b->nranks; i++) {
			b->hello[i].host[sizeof(b->hello[i].host) - 1] = 0;
			b->hello[i].host_id[sizeof(b->hello[i].host_id) - 1] = 0;
			pn_wire_printable(b->hello[i].host, sizeof(b->hello[i].host));
			pn_wire_printable(b->hello[i].host_id, sizeof(b->hello[i].host_id));
		}
	}
	b->seq = 1;
	compute_nodes(b);
	PN_DBG(PN_LOG_BOOT, "rank %d/%d node %d/%d local %d/%d launcher %s", b->rank, b->nranks,
	       b->node[b->rank], b->nnodes, b->local_rank, b->local_size, cfg->launcher);
	*out = b;
	return 0;
fail:
	pn_boot_free(b);
	return ret;
}

void pn_boot_free(struct pn_boot *b)
{
	int i;

	if (!b)
		return;
	for (i = 0; b->fds && i < b->nranks; i++)
		if (b->fds[i] >= 0)
			close(b->fds[i]);
	if (b->cfg.listen_fd >= 0)
		close(b->cfg.listen_fd);
	free(b->fds);
	free(b->hello);
	free(b->node);
	free(b);
}

int pn_boot_rank(const struct pn_boot *b) { return b->rank; }
int pn_boot_nranks(const struct pn_boot *b) { return b->nranks; }
int pn_boot_local_rank(const struct pn_boot *b) { return b->local_rank; }
int pn_boot_local_size(const struct pn_boot *b) { return b->local_size; }
int pn_boot_node(const struct pn_boot *b, int rank) { return b->node[rank]; }
int pn_boot_nnodes(const struct pn_boot *b) { return b->nnodes; }
const char *pn_boot_host(const struct pn_boot *b, int rank) { return rank_host(b, rank); }
const char *pn_boot_host_id(const struct pn_boot *b, int rank) { return b->hello[rank].host_id; }

const char *pn_boot_node_name(const struct pn_boot *b, int rank)
{
	const char *id = b->hello[rank].host_id;

	/* pn_host_id(): "node:NAME" from PENNY_NODE_ID */
	return !strncmp(id, "node:", 5) ? id + 5 : rank_host(b, rank);
}
int pn_boot_pid(const struct pn_boot *b, int rank) { return b->hello[rank].pid; }
double pn_boot_timeout(const struct pn_boot *b) { return b->cfg.timeout; }

void pn_boot_set_extra(struct pn_boot *b, double extra)
{
	b->extra = isfinite(extra) && extra > 0 ? PN_MIN(extra, PN_BOOT_MAX_EXTRA) : 0;
}
const char *pn_boot_root(const struct pn_boot *b) { return b->nranks > 1 ? b->cfg.root : NULL; }
const uint8_t *pn_boot_cookie(const struct pn_boot *b) { return b->cfg.cookie; }

int pn_boot_local_addr(const struct pn_boot *b, void *ss, unsigned *len)
{
	socklen_t sl = sizeof(struct sockaddr_storage);
	int fd = b->rank == 0 ? (b->nranks > 1 ? b->fds[1] : -1) : b->fds[0];

	if (fd < 0)
		return -ENOTCONN;
	if (getsockname(fd, (struct sockaddr *)ss, &sl))
		return -errno;
	*len = sl;
	return 0;
}

/*
 * Collectives through rank 0, a star: every rank sends its part to rank 0
 * (gather), rank 0 sends the result to every rank (bcast0).  Barrier and
 * agree move a byte per rank, agree_err 12 bytes per rank and one message,
 * allgather len per rank in and nranks x len to each rank out.  Sizes are
 * size_t products checked against SIZE_MAX; no fixed limit on the job.
 *
 * Measured (2 cores, loopback, --np N -b 8 -e 8, --debug=BOOT, two runs):
 * N = 256: all joined 0.04-0.06 s after rank 0 began, the 45 KB table sent
 * to each in 0.012-0.013 s; N = 512: 0.09-0.13 s, 90 KB in 0.025-0.038 s;
 * N = 1024: 0.23-0.26 s (the ranks are forked in about that time: joining
 * keeps up with fork), 180 KB to each in 0.10-0.19 s (184 MB: 1-1.8 GB/s
 * out of rank 0).
 *
 * The model at N = 4096, one round trip each:
 *  - rendezvous: N - 1 hellos of 216 B in (0.9 MB), N - 1 tables of
 *    40 + 176 N B out: 176 N^2 = 2.95 GB out of rank 0 (1.6-3 s on
 *    loopback at the rate above, 2.4 s at 10 Gb/s, 24 s at 1 Gb/s);
 *  - allgather of L bytes per rank: 2 (N - 1) messages, L N in and L N^2
 *    out (the communicator's 324-byte rank info: 5.4 GB; tcp's addresses:
 *    0.5 GB);
 *  - barrier, agree: 2 (N - 1) messages of 41 B; agree_err: 2 (N - 1) of
 *    44 and 52 B, plus 2 (N - 1) of 340 B when a rank failed;
 *  - rank 0 holds N + 64 descriptors (fd_budget) and a 4096 backlog.
 * Every step is bounded by the timeout.  The bytes out of rank 0 are
 * quadratic: past a few thousand ranks, or on a 1 Gb/s management network,
 * a relay (rank 0 -> one rank per node -> its local ranks, which cuts them
 * by the ranks per node) or a tree would be needed; PN_BOOT_MAX_RANKS stops
 * at 8192 (21.7 GB for the rank info: seconds at 100 Gb/s).
 */
static int gather(struct pn_boot *b, const void *mine, void *all, size_t len, double deadline,
		  const char *what)
{
	int i, ret;

	if (b->rank != 0) {
		ret = send_msg(b, b->fds[0], PN_MSG_GATHER, mine, len, deadline);
		return ret ? peer_error(b, 0, ret, what) : 0;
	}
	if (len)
		memmove(all, mine, len);
	/* in rank order: a silent rank is named */
	for (i = 1; i < b->nranks; i++) {
		ret = recv_msg(b, i, PN_MSG_GATHER, len ? (char *)all + len * (size_t)i : NULL, len,
			       deadline, what);
		if (ret)
			return ret;
	}
	return 0;
}

static int bcast0(struct pn_boot *b, void *buf, size_t len, double deadline, const char *what)
{
	int i, ret;

	if (b->rank != 0)
		return recv_msg(b, 0, PN_MSG_GATHERED, buf, len, deadline + PN_BOOT_ROOT_GRACE, what);
	for (i = 1; i < b->nranks; i++) {
		ret = send_msg(b, b->fds[i], PN_MSG_GATHERED, buf, len, deadline);
		if (ret)
			return peer_error(b, i, ret, what);
	}
	return 0;
}

int pn_boot_allgather(struct pn_boot *b, const void *mine, void *all, size_t len)
{
	double deadline = pn_now() + b->cfg.timeout + b->extra;
	char *out = all;
	int ret = 0;

	if (len && (size_t)b->nranks > SIZE_MAX / len)
		return pn_err(-E2BIG, "allgather of %zu bytes from each of %d ranks", len, b->nranks);
	memmove(out + len * (size_t)b->rank, mine, len);
	if (b->nranks > 1) {
		ret = gather(b, out + len * (size_t)b->rank, out, len, deadline, "allgather");
		if (!ret)
			ret = bcast0(b, out, len * (size_t)b->nranks, deadline, "allgather");
	}
	b->seq++;
	return ret;
}

int pn_boot_bcast(struct pn_boot *b, void *buf, size_t len, int root)
{
	double deadline = pn_now() + b->cfg.timeout + b->extra;
	int ret = 0;

	if (root < 0 || root >= b->nranks)
		return pn_err(-EINVAL, "broadcast from rank %d of %d", root, b->nranks);
	if (b->nranks == 1)
		goto done;
	if (root != 0 && b->rank == root) {
		ret = send_msg(b, b->fds[0], PN_MSG_GATHER, buf, len, deadline);
		if (ret)
			ret = peer_error(b, 0, ret, "broadcast");
	} else if (root != 0 && b->rank == 0) {
		ret = recv_msg(b, root, PN_MSG_GATHER, buf, len, deadline, "broadcast");
	}
	if (!ret)
		ret = bcast0(b, buf, len, deadline, "broadcast");
done:
	b->seq++;
	return ret;
}

/* AND of one byte over all ranks: a byte in from each, a byte out to each. */
static int and_all(struct pn_boot *b, int ok, int *all_ok, const char *what)
{
	double deadline = pn_now() + b->cfg.timeout + b->extra;
	char c = ok ? 1 : 0, *all = NULL;
	int ret = 0, i;

	if (b->nranks > 1 && b->rank == 0 && !(all = malloc((size_t)b->nranks)))
		return pn_err(-ENOMEM, "out of memory");
	if (b->nranks > 1) {
		ret = gather(b, &c, all, 1, deadline, what);
		for (i = 0; !ret && b->rank == 0 && i < b->nranks; i++)
			c &= all[i];
		if (!ret)
			ret = bcast0(b, &c, 1, deadline, what);
	}
	free(all);
	b->seq++;
	if (all_ok)
		*all_ok = !ret && c;
	return ret;
}

int pn_boot_barrier(struct pn_boot *b)
{
	return and_all(b, 1, NULL, "barrier");
}

int pn_boot_agree(struct pn_boot *b, int ok, int *all_ok)
{
	return and_all(b, ok, all_ok, "agreement");
}

int pn_boot_agree_err(struct pn_boot *b, int code, int name_rank, int *first)
{
	double deadline = pn_now() + b->cfg.timeout + b->extra;
	int32_t mine = code, *codes = NULL, verdict[3] = { -1, 0, 0 }; /* first, nfail, code */
	char msg[300];
	int ret = 0, r, f;

	if (first)
		*first = -1;
	memset(msg, 0, sizeof(msg));
	if (code)
		snprintf(msg, sizeof(msg), "%s", pn_errmsg(code));
	if (b->nranks == 1) {
		verdict[0] = code ? 0 : -1;
		verdict[1] = !!code;
		verdict[2] = code;
		goto judged;
	}
	if (b->rank == 0 && !(codes = calloc((size_t)b->nranks, sizeof(*codes))))
		return pn_err(-ENOMEM, "out of memory");
	/* every rank's code, then the first failing rank's message */
	ret = gather(b, &mine, codes, sizeof(mine), deadline, "agreement");
	for (r = 0; !ret && b->rank == 0 && r < b->nranks; r++)
		if (codes[r]) {
			if (verdict[0] < 0) {
				verdict[0] = r;
				verdict[2] = codes[r];
			}
			verdict[1]++;
		}
	free(codes);
	if (!ret)
		ret = bcast0(b, verdict, sizeof(verdict), deadline, "agreement");
	b->seq++;
	f = verdict[0];
	if (ret || f < 0 || f >= b->nranks)
		return ret;
	if (f != 0 && b->rank == f) {
		ret = send_msg(b, b->fds[0], PN_MSG_GATHER, msg, sizeof(msg), deadline);
		if (ret)
			ret = peer_error(b, 0, ret, "agreement");
	} else if (f != 0 && b->rank == 0) {
		ret = recv_msg(b, f, PN_MSG_GATHER, msg, sizeof(msg), deadline, "agreement");
	}
	if (!ret)
		ret = bcast0(b, msg, sizeof(msg), deadline, "agreement");
	b->seq++;
	if (ret)
		return ret;
judged:
	if (verdict[0] < 0)
		return 0;
	f = verdict[0];
	msg[sizeof(msg) - 1] = 0;
	pn_wire_printable(msg, sizeof(msg));
	if (verdict[2] >= 0 || verdict[2] < -4095)
		verdict[2] = -EIO;
	if (name_rank && verdict[1] < b->nranks)
		ret = pn_err(verdict[2], "rank %d (host %s): %s", f, rank_host(b, f), msg);
	else
		ret = pn_err(verdict[2], "%s", msg);
	if (first)
		*first = f;
	return ret;
}

/* Tell the others this rank failed (best effort, never blocks long). */
void pn_boot_abort(struct pn_boot *b, const char *why)
{
	double deadline = pn_now() + 0.5;
	int i;

	if (!b || b->nranks == 1)
		return;
	if (b->rank == 0) {
		for (i = 1; i < b->nranks; i++)
			if (b->fds[i] >= 0)
				send_msg(b, b->fds[i], PN_MSG_ABORT, why, strlen(why),
					 PN_MIN(deadline, pn_now() + 0.01));
	} else if (b->fds[0] >= 0) {
		send_msg(b, b->fds[0], PN_MSG_ABORT, why, strlen(why), deadline);
	}
}

/*
 * Non-blocking check for an ABORT from the root (or, on the root, from any
 * rank, which it forwards).  Returns -ECANCELED with the message, -EPIPE
 * naming a rank whose connection closed, or 0.
 */
int pn_boot_poll_abort(struct pn_boot *b)
{
	int i, lo = b->rank == 0 ? 1 : 0, hi = b->rank == 0 ? b->nranks : 1;

	if (b->nranks == 1)
		return 0;
	for (i = lo; i < hi; i++) {
		struct pn_frame h;
		ssize_t n;

		if (b->fds[i] < 0)
			continue;
		n = recv(b->fds[i], &h, sizeof(h), MSG_PEEK | MSG_DONTWAIT);
		if (n == 0) {
			int r = b->rank == 0 ? i : 0;

			return pn_err(-EPIPE, "rank %d (host %s, pid %d) closed its connection: it "
				      "failed or was killed", r, rank_host(b, r), b->hello[r].pid);
		}
		if (n == (ssize_t)sizeof(h) && h.type == PN_MSG_ABORT &&
		    !pn_wire_hdr_check(&h, b->cfg.cookie, PN_MSG_ABORT, 4096)) {
			char text[300] = "";
			size_t tl = h.len < sizeof(text) - 1 ? h.len : sizeof(text) - 1;

			recv(b->fds[i], &h, sizeof(h), MSG_DONTWAIT);
			pn_sock_read_full(b->fds[i], text, tl, pn_now() + 0.5);
			pn_wire_printable(text, sizeof(text));
			if (b->rank == 0)
				pn_boot_abort(b, text);
			return pn_err(-ECANCELED, "%s", text[0] ? text : "a peer aborted the job");
		}
	}
	return 0;
}
