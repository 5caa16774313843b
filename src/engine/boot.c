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


/* Header and payload in one sendmsg: one segment, no Nagle/delayed-ACK stall. */
int pn_boot_send_seq(struct pn_boot *b, int fd, uint16_t type, uint32_t seq, const void *payload,
		    size_t len, double deadline)
{
	struct pn_frame h;

	pn_wire_hdr_init(&h, b->cfg.cookie, type, (uint32_t)b->rank, seq, len);
	return pn_frame_send(fd, &h, payload, deadline);
}

static int send_msg(struct pn_boot *b, int fd, uint16_t type, const void *payload, size_t len,
		    double deadline)
{
	return pn_boot_send_seq(b, fd, type, b->seq, payload, len, deadline);
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

void pn_boot_watch_cont(struct pn_boot *b)
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

int pn_boot_if_stopped(struct pn_boot *b, int err)
{
	char why[300];

	if (!b || err >= 0 || err == -ECANCELED || boot_conts == b->conts)
		return err;
	snprintf(why, sizeof(why), "%s", pn_errmsg(err));
	if (strstr(why, "was stopped and resumed"))
		return err;
	return was_stopped(b, err, why);
}

/* The first way the rendezvous failed under this rank, kept
 * (pn_boot_agreed_error). */
static void note_lost(struct pn_boot *b, int code, int from, const char *why)
{
	if (b->lost)
		return;
	b->lost = code;
	b->lost_from = from;
	snprintf(b->lost_why, sizeof(b->lost_why), "%s", why);
}

/*
 * A step after a step failed under this rank (a rank that did not answer
 * or closed its connection, this rank stopped): the first reason again, at
 * once, rather than the full timeout on the same rank again.  A notice
 * heard is not such a failure: the ranks still agree after one, so that
 * rank 0 names the rank at fault.
 */
static int lost_before(struct pn_boot *b)
{
	if (!b->step_failed)
		return 0;
	b->seq++;
	/* rank 0 answers none of this step: the ranks that wait for it hear
	 * why again (one may have read the first notice in an earlier step) */
	if (b->rank == 0)
		pn_boot_abort(b, b->step_why);
	return pn_err(b->step_failed, "%s", b->step_why);
}

int pn_boot_agreed_error(const struct pn_boot *b, int code)
{
	if (!b || b->rank == 0)
		return code;
	if (b->lost == -ECANCELED)
		return pn_err(-ECANCELED, "rank %d: stopped by an abort notice from rank %d (rank 0 "
			      "says why)", b->rank, b->lost_from);
	return b->lost ? pn_err(b->lost, "rank %d: %s", b->rank, b->lost_why) : 0;
}

/*
 * A step that failed with rank r.  Rank 0 waits on every rank and the
 * others wait longer on rank 0 (PN_BOOT_ROOT_GRACE), so rank 0 names the
 * rank that did not answer or died and tells every rank (an ABORT with the
 * text), and every rank says the same.  A rank that was itself stopped
 * (SIGSTOP) and resumed after the others gave up says so, instead of
 * blaming the rank it waited for.
 */
int pn_boot_peer_error(struct pn_boot *b, int r, int ret, const char *what)
{
	char why[300], pid[24] = "";

	if (ret == -ECANCELED)
		return ret; /* message already set (abort from a peer) */
	if (b->hello && b->hello[r].pid > 0)
		snprintf(pid, sizeof(pid), ", pid %d", b->hello[r].pid);
	if (ret == -ETIMEDOUT) {
		snprintf(why, sizeof(why), "timed out after %g s waiting for rank %d (host %s%s) in "
			 "%s: it did not answer (stopped or hung)", b->cfg.timeout + b->extra, r,
			 rank_host(b, r), pid, what);
	} else if ((ret == -EPIPE || ret == -ECONNRESET) && b->said && b->said[r] && b->heard[0] &&
		   boot_conts == b->conts) {
		/* r said why it failed, then left: its leaving is no news, the
		 * notice is the cause (as pn_boot_poll_abort says); the last one
		 * heard, rank 0's latest word (its agreement names the rank that
		 * did not answer, where its first notice may name a rank that
		 * waited for it on another node).  A rank that left without a
		 * word (killed) is named below. */
		const char *text = b->heard;

		/* rank 0 leaves the step without its answer: the ranks that wait
		 * for it hear why (else they wait out the timeout) */
		if (b->rank == 0)
			pn_boot_abort(b, text);
		ret = pn_err(-ECANCELED, "%s", text);
		note_lost(b, ret, r, text);
		return ret;
	} else if (ret == -EPIPE || ret == -ECONNRESET) {
		ret = -EPIPE;
		snprintf(why, sizeof(why), "rank %d (host %s%s) closed its connection during %s: it "
			 "failed or was killed", r, rank_host(b, r), pid, what);
	} else {
		snprintf(why, sizeof(why), "%s with rank %d (host %s): %s", what, r, rank_host(b, r),
			 strerror(-ret));
	}
	if (boot_conts != b->conts) {
		ret = was_stopped(b, ret, why);
	} else {
		if (b->rank == 0)
			pn_boot_abort(b, why);
		ret = pn_err(ret, "%s", why);
	}
	note_lost(b, ret, r, pn_errmsg(ret));
	if (!b->step_failed) {
		b->step_failed = ret;
		snprintf(b->step_why, sizeof(b->step_why), "%s", pn_errmsg(ret));
	}
	return ret;
}

/* The first notice's text, heard or told, kept: every later poll says it
 * (pn_boot_poll_abort). */
static void keep_notice(struct pn_boot *b, const char *text)
{
	if (text[0] && !b->abort_text[0])
		snprintf(b->abort_text, sizeof(b->abort_text), "%s", text);
}

/* A notice heard from rank from: kept (the first), the last one heard, and
 * that from said why before its connection closes. */
static void heard_notice(struct pn_boot *b, int from, const char *text)
{
	keep_notice(b, text);
	if (text[0])
		snprintf(b->heard, sizeof(b->heard), "%s", text);
	if (!b->said && b->nranks > 0)
		b->said = calloc((size_t)b->nranks, 1);
	if (b->said && from >= 0 && from < b->nranks)
		b->said[from] = 1;
}

/* An ABORT's text (h read already) from rank from: -ECANCELED with it as
 * the message. */
static int recv_abort(struct pn_boot *b, int fd, int from, const struct pn_frame *h,
		      double deadline)
{
	char text[300] = "", all[4096];
	size_t n = PN_MIN(h->len, sizeof(text) - 1);

	/* a notice is said in one write: its text is there with its header,
	 * and is short (pn_boot_abort); anything else is not a notice */
	if (h->len > sizeof(all))
		return pn_err(-EPROTO, "bad message from rank %d (host %s): an abort notice of "
			      "%llu bytes", from, rank_host(b, from), (unsigned long long)h->len);
	if (pn_sock_read_full(fd, all, (size_t)h->len, PN_MIN(deadline, pn_now() + 1.0)))
		n = 0;
	memcpy(text, all, n);
	text[n] = 0;
	pn_wire_printable(text, sizeof(text));
	b->abort_code = h->seq > 0 && h->seq < 4096 ? -(int)h->seq : -ECANCELED;
	heard_notice(b, from, text);
	note_lost(b, -ECANCELED, from, text[0] ? text : "a peer aborted the job");
	/* rank 0 passes it on, as pn_boot_poll_abort does: otherwise the other
	 * ranks see only rank 0's connection close, and blame rank 0 */
	if (b->rank == 0 && text[0])
		pn_boot_abort(b, text);
	if (boot_conts != b->conts)
		return was_stopped(b, -ECANCELED, text[0] ? text : "a peer aborted the job");
	return pn_err(-ECANCELED, "%s", text[0] ? text : "a peer aborted the job");
}

/* Receive one message of the expected type from rank r into buf (len exact). */
int pn_boot_recv_msg(struct pn_boot *b, int r, uint16_t type, void *buf, size_t len,
		    double deadline, const char *what)
{
	struct pn_frame h;
	int fd = b->rank == 0 ? b->fds[r] : b->fds[0];
	int ret;

again:
	ret = pn_frame_recv(fd, &h, deadline);
	if (ret)
		return pn_boot_peer_error(b, r, ret, what);
	ret = pn_wire_hdr_check(&h, b->cfg.cookie, type, UINT64_MAX);
	if (ret)
		return pn_err_ctx(ret, "bad message from rank %d (host %s)", r, rank_host(b, r));
	if (h.type == PN_MSG_ABORT)
		return recv_abort(b, fd, r, &h, deadline);
	/*
	 * A message of an earlier step after a notice: this rank left that
	 * step on the notice (read where the message was to be) while r went
	 * on sending it.  Dropped: read as this step's, it would say "ranks
	 * disagree" and blame r for the notice's cause.
	 */
	if (h.seq < b->seq && b->abort_text[0] && h.len <= PN_BOOT_STALE_MAX) {
		char sink[4096];
		uint64_t left = h.len;

		while (left && !ret) {
			size_t n = (size_t)PN_MIN(left, (uint64_t)sizeof(sink));

			ret = pn_sock_read_full(fd, sink, n, deadline);
			left -= n;
		}
		if (ret)
			return pn_boot_peer_error(b, r, ret, what);
		goto again;
	}
	if (h.len != len || h.seq != b->seq)
		return pn_err(-EPROTO, "rank %d (host %s) sent %llu bytes for step %u, expected %zu for "
			      "step %u (ranks disagree on the work)", r, rank_host(b, r),
			      (unsigned long long)h.len, h.seq, len, b->seq);
	if (len) {
		ret = pn_sock_read_full(fd, buf, len, deadline);
		if (ret)
			return pn_boot_peer_error(b, r, ret, what);
	}
	return 0;
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
	free(b->said);
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
const char *pn_boot_root(const struct pn_boot *b) { return b->nranks > 1 ? b->root : NULL; }

int pn_boot_peer_fd(const struct pn_boot *b, int r)
{
	if (!b || !b->fds || r < 0 || r >= b->nranks || r == b->rank)
		return -1;
	if (b->rank == 0)
		return b->fds[r];
	return r == 0 ? b->fds[0] : -1;
}
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
		return ret ? pn_boot_peer_error(b, 0, ret, what) : 0;
	}
	if (len)
		memmove(all, mine, len);
	/* in rank order: a silent rank is named */
	for (i = 1; i < b->nranks; i++) {
		ret = pn_boot_recv_msg(b, i, PN_MSG_GATHER, len ? (char *)all + len * (size_t)i : NULL, len,
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
		return pn_boot_recv_msg(b, 0, PN_MSG_GATHERED, buf, len, deadline + PN_BOOT_ROOT_GRACE, what);
	for (i = 1; i < b->nranks; i++) {
		ret = send_msg(b, b->fds[i], PN_MSG_GATHERED, buf, len, deadline);
		if (ret)
			return pn_boot_peer_error(b, i, ret, what);
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
	if (b->nranks > 1 && (ret = lost_before(b)))
		return ret;
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
	if ((ret = lost_before(b)))
		return ret;
	if (root != 0 && b->rank == root) {
		ret = send_msg(b, b->fds[0], PN_MSG_GATHER, buf, len, deadline);
		if (ret)
			ret = pn_boot_peer_error(b, 0, ret, "broadcast");
	} else if (root != 0 && b->rank == 0) {
		ret = pn_boot_recv_msg(b, root, PN_MSG_GATHER, buf, len, deadline, "broadcast");
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

	if (b->nranks > 1 && (ret = lost_before(b))) {
		if (all_ok)
			*all_ok = 0;
		return ret;
	}
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
	if ((ret = lost_before(b))) {
		b->seq++;
		return ret;
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
			ret = pn_boot_peer_error(b, 0, ret, "agreement");
	} else if (f != 0 && b->rank == 0) {
		ret = pn_boot_recv_msg(b, f, PN_MSG_GATHER, msg, sizeof(msg), deadline, "agreement");
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

/*
 * Tell the others this rank failed (best effort, never blocks long).  What
 * a rank told is its reason from then on, as a notice it heard is: the
 * ranks it told end on it and close their connections, and a later poll
 * (the cross-node proxy explaining itself) must not blame one of them.
 */
void pn_boot_abort(struct pn_boot *b, const char *why)
{
	double deadline = pn_now() + 0.5;
	int i;

	if (!b || b->nranks == 1)
		return;
	PN_DBG(PN_LOG_BOOT, "rank %d: abort notice: %s", b->rank, why);
	keep_notice(b, why);
	if (b->rank == 0) {
		for (i = 1; i < b->nranks; i++)
			if (b->fds[i] >= 0)
				send_msg(b, b->fds[i], PN_MSG_ABORT, why, strlen(why),
					 PN_MIN(deadline, pn_now() + 0.01));
	} else if (b->fds[0] >= 0) {
		send_msg(b, b->fds[0], PN_MSG_ABORT, why, strlen(why), deadline);
	}
}

/* boot.h: the header's 40 wire bytes decoded (pn_frame_get), not peeked
 * as a struct of this host's byte order and layout. */
int pn_boot_peek_hdr(int fd, struct pn_frame *h)
{
	uint8_t w[PN_FRAME_HDR_LEN];
	ssize_t n = recv(fd, w, sizeof(w), MSG_PEEK | MSG_DONTWAIT);

	/* a peer that ended with data unread reset the connection: gone too */
	if (n == 0 || (n < 0 && (errno == ECONNRESET || errno == EPIPE)))
		return -EPIPE;
	if (n != (ssize_t)sizeof(w))
		return 0;
	pn_frame_get(h, w);
	return 1;
}

/* An ABORT's text (header h peeked) taken whole off fd, its first
 * sizeof(text) - 1 bytes kept: nothing of it is left to be read as a frame. */
static void take_abort(int fd, const struct pn_frame *h, char *text, size_t tl)
{
	uint8_t w[PN_FRAME_HDR_LEN];
	char all[4096];

	text[0] = 0;
	if (pn_sock_read_full(fd, w, sizeof(w), pn_now() + 0.5) ||
	    pn_sock_read_full(fd, all, (size_t)h->len, pn_now() + 0.5))
		return;
	tl = PN_MIN(tl - 1, (size_t)h->len);
	memcpy(text, all, tl);
	text[tl] = 0;
	pn_wire_printable(text, tl + 1);
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
	/* read once, said on every poll: a caller that looks again after the
	 * notice (the cross-node proxy explaining its own failure) must not
	 * find only the closed connection behind it */
	if (b->abort_text[0])
		return boot_conts != b->conts ? was_stopped(b, -ECANCELED, b->abort_text)
					       : pn_err(-ECANCELED, "%s", b->abort_text);
	for (i = lo; i < hi; i++) {
		struct pn_frame h;
		int n;

		if (b->fds[i] < 0)
			continue;
		n = pn_boot_peek_hdr(b->fds[i], &h);
		if (n == -EPIPE) {
			int r = b->rank == 0 ? i : 0;

			pn_err(-EPIPE, "rank %d (host %s, pid %d) closed its connection: it failed or "
			       "was killed", r, rank_host(b, r), b->hello[r].pid);
			if (boot_conts != b->conts) {
				char why[300];

				snprintf(why, sizeof(why), "%s", pn_errmsg(-EPIPE));
				was_stopped(b, -EPIPE, why);
			}
			note_lost(b, -EPIPE, r, pn_errmsg(-EPIPE));
			return -EPIPE;
		}
		if (n == 1 && h.type == PN_MSG_ABORT &&
		    !pn_wire_hdr_check(&h, b->cfg.cookie, PN_MSG_ABORT, 4096)) {
			char text[300];

			take_abort(b->fds[i], &h, text, sizeof(text));
			heard_notice(b, b->rank == 0 ? i : 0, text);
			note_lost(b, -ECANCELED, b->rank == 0 ? i : 0,
				  text[0] ? text : "a peer aborted the job");
			if (b->rank == 0)
				pn_boot_abort(b, text);
			/* a rank stopped past the timeout hears the others gave up:
			 * it says it was stopped, as pn_boot_recv_msg's rank does */
			if (boot_conts != b->conts)
				return was_stopped(b, -ECANCELED,
						   text[0] ? text : "a peer aborted the job");
			return pn_err(-ECANCELED, "%s", text[0] ? text : "a peer aborted the job");
		}
	}
	return 0;
}
