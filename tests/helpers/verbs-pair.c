/* SPDX-License-Identifier: MIT */
/*
 * verbs-pair: two processes (A = parent, B = child) connect through the verbs
 * layer (src/transport/verbs.h), exchanging struct pn_verbs_info and control
 * messages over a socketpair, and check what arrives.  For the lab tests.
 *
 * usage: verbs-pair [-d DEV_A] [-D DEV_B] [-x GID_A] [-X GID_B] [-q QPS] [-Q QPS_B]
 *                   [-m MTU_A] [-M MTU_B] [-c CHUNK] [-s SIZES] [-o OPS]
 *                   [-t TIMEOUT] CASE
 *   CASE  xfer     every op of -o (write,write_imm,read,send) at every size of
 *                  -s (default 1,7,64,1000,4096,65536,1M,8M), data checked on
 *                  the other side, guard bytes around it untouched
 *         ooo      one big write on QP 0 and small ones on the others:
 *                  completions come back out of order, each exactly once
 *         cache    registration cache hits and misses through posts
 *         connect  connect only (prints the path MTU and QPs; wrong GIDs fail)
 *         kill     B is killed in the middle of a stream of writes: A fails
 *                  within the timeout
 *         norecv   A sends, B never posts a receive: A times out
 *         dmabuf   register a dma-buf: there is no exporter in the lab, so this
 *                  checks only that a file that is not a dma-buf fails clearly
 * Exit: 0 all checks passed, 1 a check or the verbs layer failed, 2 usage.
 */
#define _GNU_SOURCE
#include "base/log.h"
#include "transport/verbs.h"
#include "base/units.h"
#include "base/util.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAXSIZE (8u << 20)
#define GUARD 4096
/* room for the data at an unaligned offset (< 64) with a guard on both sides */
#define BUFSZ (MAXSIZE + 2 * GUARD + 64)
#define CANARY 0xa5

enum { C_PREP = 1, C_FILL, C_RECV, C_CHECK, C_STATS, C_QUIT, C_REPLY };

struct ctl {
	uint32_t type, op;
	uint64_t size, roff;
	uint32_t seed;
	int32_t n, status, qp;
	uint64_t v1, v2;
	char text[400];
};

static struct {
	const char *dev[2];
	int gid[2], mtu[2], nqp, nqp_b;
	size_t chunk;
	double timeout;
	uint64_t sizes[32];
	int nsizes;
	int ops[8], nops;
} opt = { { "rxe0", "rxe1" }, { -1, -1 }, { 0, 0 }, 1, 0, 0, 20, { 0 }, 0, { 0 }, 0 };

static int side; /* 0 = A, 1 = B */

static void die(const char *what, int code)
{
	fprintf(stderr, "verbs-pair %c: %s: %s\n", "AB"[side], what, pn_errmsg(code));
	exit(1);
}

static uint8_t pat(uint32_t seed, size_t i)
{
	return (uint8_t)(((uint32_t)i * 2654435761u + seed * 40503u + (uint32_t)(i >> 12)) >> 13);
}

static void fill(uint8_t *p, size_t n, uint32_t seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = pat(seed, i);
}

/* First byte of [p, p+n) that differs from the pattern, or -1. */
static long check_pat(const uint8_t *p, size_t n, uint32_t seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (p[i] != pat(seed, i))
			return (long)i;
	return -1;
}

static long check_canary(const uint8_t *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (p[i] != CANARY)
			return (long)i;
	return -1;
}

/* Full-size read/write on the control socket, bounded by the timeout. */
static int xfer_all_tmo(int fd, void *buf, size_t len, int wr, double tmo)
{
	double deadline = pn_now() + tmo;
	size_t done = 0;

	while (done < len) {
		struct pollfd p = { .fd = fd, .events = wr ? POLLOUT : POLLIN };
		double left = deadline - pn_now();
		ssize_t n;

		if (left <= 0)
			return pn_err(-ETIMEDOUT, "control socket: timed out after %g s", tmo);
		if (poll(&p, 1, (int)(left * 1000) + 1) <= 0)
			continue;
		n = wr ? write(fd, (char *)buf + done, len - done)
		       : read(fd, (char *)buf + done, len - done);
		if (n == 0)
			return pn_err(-EPIPE, "control socket: the other side went away");
		if (n < 0 && errno != EINTR && errno != EAGAIN)
			return pn_err(-errno, "control socket: %s", strerror(errno));
		if (n > 0)
			done += (size_t)n;
	}
	return 0;
}

static int xfer_all(int fd, void *buf, size_t len, int wr)
{
	return xfer_all_tmo(fd, buf, len, wr, opt.timeout);
}

static void send_ctl(int fd, struct ctl *m)
{
	int ret = xfer_all(fd, m, sizeof(*m), 1);

	if (ret)
		die("control", ret);
}

static void recv_ctl(int fd, struct ctl *m)
{
	int ret = xfer_all(fd, m, sizeof(*m), 0);

	if (ret)
		die("control", ret);
}

/* A: send a command, wait for the reply; fails the run on a bad status. */
static struct ctl ask(int fd, struct ctl m)
{
	send_ctl(fd, &m);
	recv_ctl(fd, &m);
	if (m.type != C_REPLY)
		die("control", pn_err(-EPROTO, "unexpected message %u", m.type));
	return m;
}

struct ep {
	struct pn_verbs_dev *d;
	struct pn_verbs_conn *c;
	uint8_t *xbuf;		/* exposed: BUFSZ */
	uint8_t *lbuf;		/* local source/destination */
	uint8_t *rbuf;		/* receive buffer */
};

static void setup(struct ep *e, int fd)
{
	struct pn_verbs_dev_cfg dc;
	struct pn_verbs_conn_cfg cc;
	struct pn_verbs_info mine, peer;
	int ret;

	pn_verbs_dev_cfg_init(&dc);
	dc.gid_index = opt.gid[side];
	ret = pn_verbs_dev_open(&e->d, opt.dev[side], &dc);
	if (ret)
		die("open", ret);
	pn_verbs_conn_cfg_init(&cc);
	cc.nqp = side && opt.nqp_b ? opt.nqp_b : opt.nqp;
	cc.mtu = opt.mtu[side];
	cc.timeout = opt.timeout;
	ret = pn_verbs_conn_create(&e->c, e->d, &cc);
	if (ret)
		die("create", ret);
	e->xbuf = malloc(BUFSZ);
	e->lbuf = malloc(BUFSZ);
	e->rbuf = malloc(BUFSZ);
	if (!e->xbuf || !e->lbuf || !e->rbuf)
		die("setup", -ENOMEM);
	memset(e->xbuf, CANARY, BUFSZ);
	ret = pn_verbs_conn_expose(e->c, e->xbuf, BUFSZ);
	if (ret)
		die("expose", ret);
	pn_verbs_conn_info(e->c, &mine);
	/* A speaks first, then B: a byte-for-byte struct, no text parsing */
	if (side == 0) {
		ret = xfer_all(fd, &mine, sizeof(mine), 1);
		if (!ret)
			ret = xfer_all(fd, &peer, sizeof(peer), 0);
	} else {
		ret = xfer_all(fd, &peer, sizeof(peer), 0);
		if (!ret)
			ret = xfer_all(fd, &mine, sizeof(mine), 1);
	}
	if (ret)
		die("exchange", ret);
	ret = pn_verbs_conn_connect(e->c, &peer);
	if (ret)
		die("connect", ret);
}

static void teardown(struct ep *e)
{
	pn_verbs_conn_free(e->c);
	pn_verbs_invalidate(e->d, e->xbuf, BUFSZ);
	pn_verbs_dev_close(e->d);
	free(e->xbuf);
	free(e->lbuf);
	free(e->rbuf);
}

static struct pn_verbs_cqe wait1(struct ep *e, const char *what)
{
	struct pn_verbs_cqe q;
	int ret = pn_verbs_poll(e->c, &q, 1, 1);

	if (ret < 0)
		die(what, ret);
	return q;
}

/* ------------------------------------------------------------------- side B */

static void serve(struct ep *e, int fd)
{
	struct ctl m;
	int ret, i;

	for (;;) {
		recv_ctl(fd, &m);
		m.status = 0;
		m.text[0] = 0;
		switch (m.type) {
		case C_PREP:
			memset(e->xbuf, CANARY, BUFSZ);
			memset(e->rbuf, CANARY, BUFSZ);
			break;
		case C_FILL:
			memset(e->xbuf, CANARY, BUFSZ);
			fill(e->xbuf + m.roff, m.size, m.seed);
			break;
		case C_RECV: /* n receives (zero-length for immediates) or one of size */
			for (i = 0; i < m.n && !m.status; i++) {
				struct pn_verbs_wr w = {
					.op = PN_VERBS_RECV, .qp = m.size ? m.qp : i,
					.buf = m.size ? e->rbuf + GUARD : NULL, .len = m.size,
					.id = 1000 + (uint64_t)i,
				};

				ret = pn_verbs_post(e->c, &w);
				if (ret) {
					m.status = ret;
					snprintf(m.text, sizeof(m.text), "%s", pn_errmsg(ret));
				}
			}
			break;
		case C_CHECK: {
			const uint8_t *b = m.op == PN_VERBS_SEND ? e->rbuf + GUARD : e->xbuf + m.roff;
			const uint8_t *lo = m.op == PN_VERBS_SEND ? e->rbuf : e->xbuf;
			size_t before = (size_t)(b - lo);
			long bad;
			int seen = 0;

			for (i = 0; i < m.n; i++) {
				struct pn_verbs_cqe q;

				ret = pn_verbs_poll(e->c, &q, 1, 1);
				if (ret < 0) {
					m.status = ret;
					snprintf(m.text, sizeof(m.text), "%s", pn_errmsg(ret));
					break;
				}
				if (q.op != PN_VERBS_RECV ||
				    (m.op == PN_VERBS_WRITE_IMM &&
				     (!q.has_imm || !q.rdma || q.imm != m.seed || (seen & (1 << q.qp)))) ||
				    (m.op == PN_VERBS_SEND && (q.len != m.size || q.rdma))) {
					m.status = -EPROTO;
					snprintf(m.text, sizeof(m.text),
						 "bad receive completion: op %d qp %d len %zu imm %u/%d "
						 "rdma %d (want imm %u)",
						 q.op, q.qp, q.len, q.imm, q.has_imm, q.rdma, m.seed);
					break;
				}
				seen |= 1 << q.qp;
			}
			if (m.status)
				break;
			if ((bad = check_pat(b, m.size, m.seed)) >= 0)
				snprintf(m.text, sizeof(m.text), "data differs at byte %ld of %llu",
					 bad, (unsigned long long)m.size);
			else if (m.v1)
				; /* no guard check asked for */
			else if ((bad = check_canary(lo, before)) >= 0)
				snprintf(m.text, sizeof(m.text), "guard before the data changed at %ld",
					 bad);
			else if ((bad = check_canary(b + m.size, GUARD)) >= 0)
				snprintf(m.text, sizeof(m.text), "guard after the data changed at +%ld",
					 bad);
			if (m.text[0])
				m.status = -EBADMSG;
			break;
		}
		case C_STATS:
			pn_verbs_cache_stats(e->d, &m.v1, &m.v2, NULL);
			break;
		case C_QUIT:
			m.type = C_REPLY;
			send_ctl(fd, &m);
			return;
		default:
			die("control", pn_err(-EPROTO, "unknown command %u", m.type));
		}
		m.type = C_REPLY;
		send_ctl(fd, &m);
	}
}

/* ------------------------------------------------------------------- side A */

static int failures;

static void report(int ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void report(int ok, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	printf("%s ", ok ? "ok" : "FAIL");
	vprintf(fmt, ap);
	printf("\n");
	fflush(stdout);
	va_end(ap);
	if (!ok)
		failures++;
}

static void one_op(struct ep *e, int fd, int op, uint64_t size, uint32_t seed)
{
	uint64_t roff = seed % 61;	/* unaligned on both sides */
	uint8_t *local = e->lbuf + GUARD + seed % 53;
	size_t chunk = opt.chunk ? opt.chunk : (opt.nqp > 1 ? 256u << 10 : 0);
	struct pn_verbs_wr w = { .op = op, .qp = -1, .buf = local, .len = size, .roff = roff,
				 .imm = seed, .chunk = op == PN_VERBS_SEND ? 0 : chunk,
				 .id = seed };
	int nimm = op == PN_VERBS_WRITE_IMM ? pn_verbs_stripe_qps(e->c, size, w.chunk) : 0;
	struct pn_verbs_cqe q;
	struct ctl r;
	double t0, dt;
	long bad;
	int ret;

	if (size > MAXSIZE)
		return;
	r = ask(fd, (struct ctl){ .type = op == PN_VERBS_READ ? C_FILL : C_PREP, .size = size,
				  .roff = roff, .seed = seed });
	if (op == PN_VERBS_WRITE_IMM)
		r = ask(fd, (struct ctl){ .type = C_RECV, .n = nimm });
	if (op == PN_VERBS_SEND)
		r = ask(fd, (struct ctl){ .type = C_RECV, .n = 1, .size = size, .qp = 0 });
	if (r.status) {
		report(0, "%s %llu B: peer: %s", pn_verbs_op_name(op), (unsigned long long)size,
		       r.text);
		return;
	}
	if (op == PN_VERBS_SEND)
		w.qp = 0;
	memset(e->lbuf, CANARY, BUFSZ);
	if (op != PN_VERBS_READ)
		fill(local, size, seed);
	t0 = pn_now();
	ret = pn_verbs_post(e->c, &w);
	if (ret)
		die(pn_verbs_op_name(op), ret);
	q = wait1(e, pn_verbs_op_name(op));
	dt = pn_now() - t0;
	if (q.id != seed || q.op != op || q.len != size) {
		report(0, "%s %llu B: completion id %llu op %d len %zu", pn_verbs_op_name(op),
		       (unsigned long long)size, (unsigned long long)q.id, q.op, q.len);
		return;
	}
	if (op == PN_VERBS_READ) {
		if ((bad = check_pat(local, size, seed)) >= 0)
			report(0, "rdma read %llu B: data differs at byte %ld",
			       (unsigned long long)size, bad);
		else if (check_canary(e->lbuf, (size_t)(local - e->lbuf)) >= 0 ||
			 check_canary(local + size, GUARD) >= 0)
			report(0, "rdma read %llu B: wrote outside the buffer",
			       (unsigned long long)size);
		else
			report(1, "rdma read %llu B x %d QP%s: %.2f MB/s", (unsigned long long)size,
			       opt.nqp, opt.nqp > 1 ? "s" : "", size / dt / 1e6);
		return;
	}
	r = ask(fd, (struct ctl){ .type = C_CHECK, .op = (uint32_t)op, .size = size, .roff = roff,
				  .seed = seed, .n = op == PN_VERBS_SEND ? 1 : nimm });
	if (r.status)
		report(0, "%s %llu B: %s", pn_verbs_op_name(op), (unsigned long long)size, r.text);
	else
		report(1, "%s %llu B x %d QP%s%s: %.2f MB/s", pn_verbs_op_name(op),
		       (unsigned long long)size, opt.nqp, opt.nqp > 1 ? "s" : "",
		       nimm > 1 ? " (an immediate on each)" : "", size / dt / 1e6);
}

static void case_xfer(struct ep *e, int fd)
{
	int i, j;
	uint32_t seed = 1;

	report(pn_verbs_conn_mtu(e->c) > 0, "connected: path MTU %d, %d QPs",
	       pn_verbs_conn_mtu(e->c), pn_verbs_conn_nqp(e->c));
	for (i = 0; i < opt.nops; i++)
		for (j = 0; j < opt.nsizes; j++)
			one_op(e, fd, opt.ops[i], opt.sizes[j], seed++);
}

/* One big write on QP 0, then small ones on the other QPs: the small ones
 * complete first; every completion arrives exactly once. */
static void case_ooo(struct ep *e, int fd)
{
	enum { N = 48 };
	struct pn_verbs_cqe q[N];
	uint64_t off[N], len[N];
	int seen[N] = { 0 }, order[N], got = 0, inv = 0, i, j, ret;
	uint64_t o = 0;
	struct ctl r;

	if (opt.nqp < 2) {
		report(0, "ooo needs -q 2 or more");
		return;
	}
	ask(fd, (struct ctl){ .type = C_PREP });
	for (i = 0; i < N; i++) {
		len[i] = i == 0 ? (4u << 20) : 1 + (uint64_t)(i * 997) % 3000;
		off[i] = o;
		o += len[i];
		fill(e->lbuf + off[i], len[i], 100 + (uint32_t)i);
	}
	for (i = 0; i < N; i++) {
		struct pn_verbs_wr w = { .op = PN_VERBS_WRITE, .qp = i == 0 ? 0 : 1 + i % (opt.nqp - 1),
					 .buf = e->lbuf + off[i], .len = len[i], .roff = off[i],
					 .id = (uint64_t)i };

		ret = pn_verbs_post(e->c, &w);
		if (ret)
			die("post", ret);
	}
	while (got < N) {
		ret = pn_verbs_poll(e->c, q, N, 1);
		if (ret < 0)
			die("poll", ret);
		for (j = 0; j < ret; j++) {
			if (q[j].id >= N || seen[q[j].id]++) {
				report(0, "completion id %llu unknown or repeated",
				       (unsigned long long)q[j].id);
				return;
			}
			order[got++] = (int)q[j].id;
		}
	}
	for (i = 0; i < N; i++)
		for (j = i + 1; j < N; j++)
			inv += order[i] > order[j];
	report(pn_verbs_outstanding(e->c) == 0, "%d writes on %d QPs: %d completions, each once; "
						 "first one back: #%d, %d inversions",
	       N, opt.nqp, got, order[0], inv);
	for (i = 0; i < N && order[i] != 0; i++)
		;
	report(inv > 0, "completions came back out of posting order (the big write on qp 0 "
			"came back as #%d of %d)", i + 1, N);
	for (i = 0; i < N; i++) {
		r = ask(fd, (struct ctl){ .type = C_CHECK, .op = PN_VERBS_WRITE, .size = len[i],
					  .roff = off[i], .seed = 100 + (uint32_t)i, .n = 0,
					  .v1 = 1 /* neighbours: no guard check */ });
		if (r.status) {
			report(0, "write #%d (%llu B at %llu): %s", i, (unsigned long long)len[i],
			       (unsigned long long)off[i], r.text);
			return;
		}
	}
	report(1, "all %d writes landed intact", N);
}

static void case_cache(struct ep *e, int fd)
{
	uint64_t h0, m0, h1, m1, h2, m2;
	struct ctl r;
	int i;

	/* the exposed buffers are registered (one miss each side) */
	pn_verbs_cache_stats(e->d, &h0, &m0, NULL);
	report(m0 == 1 && h0 == 0, "after connect: %llu hits, %llu misses (want 0, 1)",
	       (unsigned long long)h0, (unsigned long long)m0);
	/* ten writes from one buffer: one miss, nine hits */
	for (i = 0; i < 10; i++)
		one_op(e, fd, PN_VERBS_WRITE, 65536, 500 + (uint32_t)i);
	pn_verbs_cache_stats(e->d, &h1, &m1, NULL);
	/* lbuf + GUARD + seed % 53 stays inside one registration after the first */
	report(m1 - m0 == 1 && h1 - h0 == 9, "10 writes from one buffer: %llu hits, %llu misses "
					     "(want 9, 1)",
	       (unsigned long long)(h1 - h0), (unsigned long long)(m1 - m0));
	/* a different buffer: a miss; invalidated memory: a miss again */
	one_op(e, fd, PN_VERBS_READ, 4096, 600);
	pn_verbs_invalidate(e->d, e->lbuf, BUFSZ);
	one_op(e, fd, PN_VERBS_READ, 4096, 601);
	pn_verbs_cache_stats(e->d, &h2, &m2, NULL);
	report(m2 - m1 == 1 && h2 - h1 == 1, "read into the same buffer, invalidated in between: "
					     "%llu hits, %llu misses (want 1, 1)",
	       (unsigned long long)(h2 - h1), (unsigned long long)(m2 - m1));
	r = ask(fd, (struct ctl){ .type = C_STATS });
	/* B: its exposed buffer (1 miss); targets of writes need no registration */
	report(r.v2 == 1 && r.v1 == 0, "peer (target of RDMA only): %llu hits, %llu misses "
				       "(want 0, 1)",
	       (unsigned long long)r.v1, (unsigned long long)r.v2);
}

static void case_kill(struct ep *e, int fd, pid_t child)
{
	double t_kill = 0, t_err;
	uint64_t n = 0;
	int ret = 0;

	fill(e->lbuf, 1u << 20, 7);
	for (;;) {
		struct pn_verbs_wr w = { .op = PN_VERBS_WRITE, .qp = -1, .buf = e->lbuf,
					 .len = 1u << 20, .roff = 0, .id = n };
		struct pn_verbs_cqe q[8];

		if (!t_kill && n == 8) {
			kill(child, SIGKILL);
			t_kill = pn_now();
		}
		ret = pn_verbs_post(e->c, &w);
		if (!ret)
			ret = pn_verbs_poll(e->c, q, 8, pn_verbs_outstanding(e->c) > 4 ? 1 : 0);
		if (ret < 0)
			break;
		n++;
		if (t_kill && pn_now() - t_kill > opt.timeout + 5)
			break;
	}
	t_err = pn_now();
	if (ret >= 0) {
		report(0, "no error %.1f s after the peer was killed", t_err - t_kill);
		return;
	}
	printf("# error: %s\n", pn_errmsg(ret));
	report(t_err - t_kill <= opt.timeout + 1, "peer killed after 8 MiB: error %.2f s later "
						  "(timeout %g s)",
	       t_err - t_kill, opt.timeout);
}

static void case_norecv(struct ep *e, int fd)
{
	struct pn_verbs_wr w = { .op = PN_VERBS_SEND, .qp = 0, .buf = e->lbuf, .len = 64, .id = 1 };
	struct pn_verbs_cqe q;
	double t0 = pn_now();
	int ret;

	ret = pn_verbs_post(e->c, &w);
	if (!ret)
		ret = pn_verbs_poll(e->c, &q, 1, 1);
	if (ret >= 0) {
		report(0, "a send with no receive posted completed");
		return;
	}
	printf("# error: %s\n", pn_errmsg(ret));
	report(ret == -ETIMEDOUT && pn_now() - t0 < opt.timeout + 2,
	       "send without a receive: timed out after %.1f s", pn_now() - t0);
}

static void case_dmabuf(struct ep *e)
{
	FILE *f = tmpfile();
	int ret;

	if (!f) {
		report(0, "tmpfile: %s", strerror(errno));
		return;
	}
	ret = pn_verbs_reg_dmabuf(e->d, fileno(f), 0, 4096, 0x10000000);
	fclose(f);
	printf("# %s\n", ret ? pn_errmsg(ret) : "registered");
	report(ret < 0 && strstr(pn_errmsg(ret), "ibv_reg_dmabuf_mr") &&
		       strstr(pn_errmsg(ret), pn_verbs_dev_name(e->d)),
	       "a file that is not a dma-buf is refused, naming the call and the device");
}

/* ---------------------------------------------------------------------- main */

static int parse_list(const char *s, int sizes)
{
	char *dup = strdup(s), *tok, *save = NULL;
	int ret = 0;

	for (tok = strtok_r(dup, ",", &save); tok && !ret; tok = strtok_r(NULL, ",", &save)) {
		if (sizes) {
			if (opt.nsizes == 32 || pn_parse_size(tok, &opt.sizes[opt.nsizes++]))
				ret = -1;
		} else if (opt.nops == 8) {
			ret = -1;
		} else if (!strcmp(tok, "write")) {
			opt.ops[opt.nops++] = PN_VERBS_WRITE;
		} else if (!strcmp(tok, "write_imm")) {
			opt.ops[opt.nops++] = PN_VERBS_WRITE_IMM;
		} else if (!strcmp(tok, "read")) {
			opt.ops[opt.nops++] = PN_VERBS_READ;
		} else if (!strcmp(tok, "send")) {
			opt.ops[opt.nops++] = PN_VERBS_SEND;
		} else {
			ret = -1;
		}
	}
	free(dup);
	return ret;
}

static void usage(void)
{
	fprintf(stderr, "usage: verbs-pair [-d DEV_A] [-D DEV_B] [-x GID_A] [-X GID_B] [-q QPS] [-Q QPS_B] "
			"[-m MTU_A] [-M MTU_B] [-c CHUNK] [-s SIZES] [-o OPS] [-t TIMEOUT] "
			"xfer|ooo|cache|connect|kill|norecv|dmabuf\n");
	exit(2);
}

int main(int argc, char **argv)
{
	const char *what;
	struct ep e = { 0 };
	int sv[2], c, st = 0;
	uint64_t v;
	pid_t pid;

	while ((c = getopt(argc, argv, "d:D:x:X:q:Q:m:M:c:s:o:t:")) != -1) {
		switch (c) {
		case 'd': opt.dev[0] = optarg; break;
		case 'D': opt.dev[1] = optarg; break;
		case 'x': opt.gid[0] = atoi(optarg); break;
		case 'X': opt.gid[1] = atoi(optarg); break;
		case 'q': opt.nqp = atoi(optarg); break;
		case 'Q': opt.nqp_b = atoi(optarg); break;
		case 'm': opt.mtu[0] = atoi(optarg); break;
		case 'M': opt.mtu[1] = atoi(optarg); break;
		case 'c':
			if (pn_parse_size(optarg, &v))
				usage();
			opt.chunk = v;
			break;
		case 's': if (parse_list(optarg, 1)) usage(); break;
		case 'o': if (parse_list(optarg, 0)) usage(); break;
		case 't': opt.timeout = atof(optarg); break;
		default: usage();
		}
	}
	if (optind != argc - 1)
		usage();
	what = argv[optind];
	if (!strstr(" xfer ooo cache connect kill norecv dmabuf ", what) || strchr(what, ' ') ||
	    opt.nqp < 1)
		usage();
	if (!opt.nsizes)
		parse_list("1,7,64,1000,4096,65536,1M,8M", 1);
	if (!opt.nops)
		parse_list("write,write_imm,read,send", 0);
	signal(SIGPIPE, SIG_IGN);
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
		return perror("socketpair"), 1;
	pid = fork();
	if (pid < 0)
		return perror("fork"), 1;
	if (pid == 0) {
		side = 1;
		close(sv[0]);
		setup(&e, sv[1]);
		if (!strcmp(what, "kill") || !strcmp(what, "norecv") || !strcmp(what, "connect") ||
		    !strcmp(what, "dmabuf")) {
			struct ctl m;
			/* until A is done (or we are killed); A may wait out its timeout first */
			int ret = xfer_all_tmo(sv[1], &m, sizeof(m), 0, 3 * opt.timeout + 10);

			if (ret)
				die("control", ret);
		} else {
			serve(&e, sv[1]);
		}
		teardown(&e);
		_exit(0);
	}
	close(sv[1]);
	setup(&e, sv[0]);
	if (!strcmp(what, "connect"))
		report(1, "connected %s to %s: path MTU %d, %d QPs (qp 0x%x)", opt.dev[0], opt.dev[1],
		       pn_verbs_conn_mtu(e.c), pn_verbs_conn_nqp(e.c), pn_verbs_conn_qpn(e.c, 0));
	else if (!strcmp(what, "xfer"))
		case_xfer(&e, sv[0]);
	else if (!strcmp(what, "ooo"))
		case_ooo(&e, sv[0]);
	else if (!strcmp(what, "cache"))
		case_cache(&e, sv[0]);
	else if (!strcmp(what, "kill"))
		case_kill(&e, sv[0], pid);
	else if (!strcmp(what, "norecv"))
		case_norecv(&e, sv[0]);
	else if (!strcmp(what, "dmabuf"))
		case_dmabuf(&e);
	else
		usage();
	if (strcmp(what, "kill")) {
		struct ctl m = { .type = C_QUIT };

		if (strcmp(what, "connect") && strcmp(what, "norecv") && strcmp(what, "dmabuf"))
			ask(sv[0], m);
		else
			send_ctl(sv[0], &m);
	}
	teardown(&e);
	close(sv[0]);
	waitpid(pid, &st, 0);
	if (strcmp(what, "kill") && (!WIFEXITED(st) || WEXITSTATUS(st))) {
		fprintf(stderr, "verbs-pair: side B failed (status 0x%x)\n", st);
		failures++;
	}
	return failures ? 1 : 0;
}
