/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
#include "harness/bwtest.h"
#include "base/log.h"
#include "base/sock.h"
#include "base/util.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define MARK_ID UINT64_MAX	/* the END send */

void pn_bw_cfg_init(struct pn_bw_cfg *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->magic = PN_BW_MAGIC;
	cfg->version = PN_BW_VERSION;
	cfg->size = sizeof(*cfg);
	cfg->op = PN_VERBS_WRITE;
	cfg->nqp = 1;
	cfg->tx_depth = 128;
	cfg->iters = 5000;
}

uint64_t pn_bw_max_size(const struct pn_bw_cfg *cfg)
{
	uint64_t m = 1;
	uint32_t i;

	for (i = 0; i < cfg->nsizes && i < PN_BW_MAX_SIZES; i++)
		m = PN_MAX(m, cfg->sizes[i]);
	return m;
}

size_t pn_bw_buflen(const struct pn_bw_cfg *cfg)
{
	return 2 * (size_t)pn_bw_max_size(cfg);
}

int pn_bw_cfg_check(const struct pn_bw_cfg *a, const struct pn_bw_cfg *b)
{
	uint32_t i;

	if (b->magic != PN_BW_MAGIC || b->version != PN_BW_VERSION || b->size != sizeof(*b))
		return pn_err(-EPROTO, "the peer speaks another protocol (magic 0x%08x version %u, "
				       "%u bytes)", b->magic, b->version, b->size);
	if (a->op != b->op)
		return pn_err(-EINVAL, "--op: %s here, %s on the peer", pn_verbs_op_name((int)a->op),
			      pn_verbs_op_name((int)b->op));
	if ((a->flags & PN_BW_LAT) != (b->flags & PN_BW_LAT))
		return pn_err(-EINVAL, "--lat: %s here, %s on the peer",
			      a->flags & PN_BW_LAT ? "on" : "off", b->flags & PN_BW_LAT ? "on" : "off");
	if ((a->flags & PN_BW_BIDIR) != (b->flags & PN_BW_BIDIR))
		return pn_err(-EINVAL, "-b: %s here, %s on the peer",
			      a->flags & PN_BW_BIDIR ? "on" : "off",
			      b->flags & PN_BW_BIDIR ? "on" : "off");
	if (a->nqp != b->nqp)
		return pn_err(-EINVAL, "-q: %u here, %u on the peer", a->nqp, b->nqp);
	if (a->tx_depth != b->tx_depth)
		return pn_err(-EINVAL, "--tx-depth: %u here, %u on the peer", a->tx_depth,
			      b->tx_depth);
	if (a->iters != b->iters)
		return pn_err(-EINVAL, "-n: %llu here, %llu on the peer",
			      (unsigned long long)a->iters, (unsigned long long)b->iters);
	if (a->duration != b->duration)
		return pn_err(-EINVAL, "-D: %g here, %g on the peer", a->duration, b->duration);
	if (a->nsizes != b->nsizes || b->nsizes > PN_BW_MAX_SIZES)
		return pn_err(-EINVAL, "sizes: %u here, %u on the peer (-s, -a)", a->nsizes,
			      b->nsizes);
	for (i = 0; i < a->nsizes; i++)
		if (a->sizes[i] != b->sizes[i])
			return pn_err(-EINVAL, "-s: %llu here, %llu on the peer",
				      (unsigned long long)a->sizes[i],
				      (unsigned long long)b->sizes[i]);
	return 0;
}

/* ------------------------------------------------------------- statistics */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* nearest-rank percentile of sorted samples */
static double pct(const double *s, size_t n, double p)
{
	/* less a hair: 0.999 * 1000 is 999.0000000000001 in binary */
	size_t r = (size_t)ceil(p / 100.0 * (double)n - 1e-9);

	return s[r ? r - 1 : 0];
}

void pn_bw_percentiles(double *s, size_t n, double out[7])
{
	double sum = 0, var = 0;
	size_t i;

	if (!n) {
		for (i = 0; i < 7; i++)
			out[i] = 0;
		return;
	}
	qsort(s, n, sizeof(*s), cmp_double);
	for (i = 0; i < n; i++)
		sum += s[i];
	out[0] = s[0];
	out[1] = n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
	out[2] = sum / (double)n;
	out[3] = pct(s, n, 99);
	out[4] = pct(s, n, 99.9);
	out[5] = s[n - 1];
	for (i = 0; i < n; i++)
		var += (s[i] - out[2]) * (s[i] - out[2]);
	out[6] = sqrt(var / (double)n);
}

void pn_bw_blocks_start(struct pn_bw_blocks *b, uint64_t iters, double duration, double t0,
			double bytes)
{
	memset(b, 0, sizeof(*b));
	b->limit = iters;
	b->dur = duration > 0 ? duration : 0;
	b->t0 = b->tb = t0;
	b->bytes = bytes;
}

/* Close the running block at (done, now) when it has moved anything. */
static void block_close(struct pn_bw_blocks *b, uint64_t done, double now)
{
	if (done > b->db && now > b->tb && b->nr < PN_BW_BLOCKS)
		b->gbps[b->nr++] = (double)(done - b->db) * b->bytes * 8 / (now - b->tb) / 1e9;
	b->tb = now;
	b->db = done;
}

void pn_bw_blocks_push(struct pn_bw_blocks *b, uint64_t done, double now)
{
	int k;

	/* the last block, and the one of the last operation (fewer than
	 * PN_BW_BLOCKS of them), end with the run (pn_bw_blocks_end) */
	if (b->k >= PN_BW_BLOCKS - 1 || (b->limit && done >= b->limit))
		return;
	/* the block this completion falls in; a burst of completions that
	 * crosses several boundaries closes one block, the next ones start
	 * from here */
	if (b->limit)
		k = (int)PN_MIN((double)PN_BW_BLOCKS - 1,
				(double)done * PN_BW_BLOCKS / (double)b->limit);
	else
		k = b->dur > 0 ? (int)PN_MIN((double)PN_BW_BLOCKS - 1,
					     (now - b->t0) * PN_BW_BLOCKS / b->dur)
			       : 0;
	if (k <= b->k)
		return;
	block_close(b, done, now);
	b->k = k;
}

void pn_bw_blocks_end(struct pn_bw_blocks *b, uint64_t done, double now, struct pn_bw_row *row)
{
	struct pn_timing_stat st;
	int i;

	block_close(b, done, now);
	row->nblocks = b->nr;
	for (i = 0; i < b->nr; i++)
		row->block_gbps[i] = b->gbps[i];
	pn_timing_stat(b->gbps, (size_t)b->nr, &st);
	row->block_median_gbps = st.median;
	row->block_min_gbps = st.min;
	row->peak_gbps = b->nr ? st.max : row->avg_gbps;
}

int pn_bw_row_check(const struct pn_bw_cfg *c, int k, const struct pn_bw_row *r)
{
	double v[4 + 7 + PN_BW_BLOCKS + 2] = { r->seconds, r->peak_gbps, r->avg_gbps,
					       r->msg_rate_mpps };
	const char *why = NULL;
	size_t i, n = 4;

	for (i = 0; i < 7; i++)
		v[n++] = r->lat_us[i];
	for (i = 0; i < PN_BW_BLOCKS; i++)
		v[n++] = r->block_gbps[i];
	v[n++] = r->block_median_gbps;
	v[n++] = r->block_min_gbps;
	if (k < 0 || k >= (int)c->nsizes || r->bytes != c->sizes[k])
		why = "size";
	else if (c->iters && r->iters > c->iters)
		why = "operation count";
	else if (r->nblocks < 0 || r->nblocks > PN_BW_BLOCKS)
		why = "block count";
	for (i = 0; !why && i < n; i++)
		if (!isfinite(v[i]) || v[i] < 0)
			why = "a time or rate";
	if (why)
		return pn_err(-EPROTO, "the peer's results are malformed (%s): not a penny bw of "
				       "this version", why);
	return 0;
}

void pn_bw_row_add(struct pn_bw_row *sum, const struct pn_bw_row *o)
{
	int i;

	sum->iters += o->iters;
	sum->peak_gbps += o->peak_gbps;
	sum->avg_gbps += o->avg_gbps;
	/* the blocks of the two directions, in the order they ran */
	sum->nblocks = PN_MIN(sum->nblocks, o->nblocks);
	for (i = 0; i < sum->nblocks; i++)
		sum->block_gbps[i] += o->block_gbps[i];
	sum->block_median_gbps += o->block_median_gbps;
	sum->block_min_gbps += o->block_min_gbps;
	sum->msg_rate_mpps += o->msg_rate_mpps;
	sum->seconds = PN_MAX(sum->seconds, o->seconds);
}

/* ---------------------------------------------------------------- verbs */

static int post_recv(struct pn_bw_link *l, int qp, uint64_t max)
{
	struct pn_verbs_wr w = { .op = PN_VERBS_RECV, .qp = qp, .buf = l->buf, .len = max,
				 .id = (uint64_t)qp };

	return pn_verbs_post(l->conn, &w);
}

int pn_bw_prepare(struct pn_bw_link *l)
{
	const struct pn_bw_cfg *c = l->cfg;
	uint64_t max = pn_bw_max_size(c);
	uint32_t q, i;
	int ret;

	/* the local half is a source/target that may be registered up front */
	ret = pn_verbs_reg(pn_verbs_conn_dev(l->conn), l->buf + max, max, NULL, NULL);
	if (ret)
		return ret;
	pn_verbs_unreg(pn_verbs_conn_dev(l->conn), l->buf + max, max);
	if (c->op != PN_VERBS_SEND)
		return 0;
	/* receivers keep every QP's receive queue full (latency: one each) */
	if (!(c->flags & PN_BW_BIDIR) && l->initiator && !(c->flags & PN_BW_LAT))
		return 0;
	for (q = 0; q < c->nqp; q++)
		for (i = 0; i < (c->flags & PN_BW_LAT ? 2 : c->tx_depth); i++) {
			ret = post_recv(l, (int)q, max);
			if (ret)
				return ret;
		}
	return 0;
}

/* A peer that stops answering once the test runs has vanished: the test ran
 * and failed (EIO, exit status 1), unlike one that never came (ETIMEDOUT,
 * "could not run").  Whether the dead peer's QP reports an error completion
 * before --timeout (rxe's retry timer) must not decide the exit status.  One
 * whose side channel closed (pn_verbs_conn_watch) is gone. */
static int mid_test(const char *peer, int ret)
{
	const char *on = peer ? " on " : "", *host = peer ? peer : "";

	if (ret == -ETIMEDOUT)
		return pn_err_ctx(-EIO, "the peer%s%s stopped answering during the test", on, host);
	if (ret == -ECONNRESET)
		return pn_err_ctx(-EIO, "the peer%s%s went away during the test", on, host);
	return ret;
}

/* A sender whose operations outlive the timed phase by drain_s. */
static int no_drain(const struct pn_bw_link *l, uint64_t size, uint64_t done, int outstanding,
		    double secs)
{
	double gbps = secs > 0 ? (double)done * (double)size * 8 / secs / 1e9 : 0;

	pn_err_clear();
	return pn_err(-EIO, "moved %.3g Gb/s, and %d operation%s still in flight %.3g s after the "
			    "timed phase: the link does not drain", gbps, outstanding,
		      outstanding == 1 ? "" : "s", l->drain_s);
}

int pn_bw_run(struct pn_bw_link *l, int k, struct pn_bw_row *row)
{
	const struct pn_bw_cfg *c = l->cfg;
	uint64_t size = c->sizes[k], max = pn_bw_max_size(c);
	uint64_t posted = 0, done = 0, limit = c->iters ? c->iters : UINT64_MAX;
	int sender = l->initiator || (c->flags & PN_BW_BIDIR);
	int receiver = c->op == PN_VERBS_SEND && (!l->initiator || (c->flags & PN_BW_BIDIR));
	int end_posted = 0, end_done = 0, end_seen = 0, draining = 0, ret = 0, i, j, n;
	int nqp = (int)c->nqp, depth = (int)(c->tx_depth * c->nqp);
	/* CQ moderation: one signaled operation in `mod` per QP */
	int mod = (int)PN_MAX(1u, PN_MIN(100u, c->tx_depth / 2));
	int unsig[PN_VERBS_MAX_QPS] = { 0 };
	double t0, tlast, stop_at;
	struct pn_verbs_cqe cq[64];
	struct pn_bw_blocks bk;

	memset(row, 0, sizeof(*row));
	row->bytes = size;
	if (!sender)
		end_posted = end_done = 1;
	if (!receiver)
		end_seen = 1;
	t0 = tlast = pn_now();
	stop_at = c->iters ? INFINITY : t0 + c->duration;
	pn_bw_blocks_start(&bk, c->iters, c->duration, t0, (double)size);
	while (!(end_done && end_seen)) {
		int outstanding = (int)(posted - done) + (end_posted && !end_done);
		int want;

		if (l->drain_s > 0 && outstanding > 0 && !c->iters &&
		    pn_now() > stop_at + l->drain_s) {
			ret = no_drain(l, size, done, outstanding, tlast - t0);
			goto out;
		}

		/* keep the queues full */
		while (sender && !end_posted && !draining && posted < limit && outstanding < depth) {
			int q = (int)(posted % (uint64_t)nqp);
			int last = c->iters && posted + (uint64_t)nqp >= limit;
			struct pn_verbs_wr wr = { .op = (int)c->op, .qp = q, .buf = l->buf + max,
						  .len = size, .roff = 0, .id = posted };

			if (!c->iters && posted % 16 == 0 && pn_now() >= stop_at) {
				draining = 1;
				break;
			}
			if (!last && unsig[q] + 1 < mod)
				wr.flags = PN_VERBS_F_UNSIGNALED;
			ret = pn_verbs_post(l->conn, &wr);
			if (ret)
				goto out;
			unsig[q] = wr.flags ? unsig[q] + 1 : 0;
			posted++;
			outstanding++;
		}
		/* out of time: a signaled operation behind every unsignaled one */
		if (draining) {
			for (j = 0; j < nqp; j++) {
				struct pn_verbs_wr wr = { .op = (int)c->op, .qp = j, .buf = l->buf + max,
							  .len = size, .roff = 0, .id = posted };

				if (!unsig[j])
					continue;
				ret = pn_verbs_post(l->conn, &wr);
				if (ret)
					goto out;
				unsig[j] = 0;
				posted++;
			}
			draining = 0;
			limit = posted;
			continue;
		}
		if (sender && !end_posted && posted == done &&
		    (posted == limit || (!c->iters && pn_now() >= stop_at))) {
			if (c->op == PN_VERBS_SEND) {
				/* a zero-byte send that says "that was all" */
				struct pn_verbs_wr wr = { .op = PN_VERBS_SEND, .qp = 0,
							  .flags = PN_VERBS_F_IMM, .imm = PN_BW_END,
							  .id = MARK_ID };

				ret = pn_verbs_post(l->conn, &wr);
				if (ret)
					goto out;
				end_posted = 1;
			} else {
				end_posted = end_done = 1;
			}
			continue;
		}
		want = outstanding > 0 || (receiver && !end_seen) ? 1 : 0;
		n = pn_verbs_poll(l->conn, cq, (int)PN_ARRAY_SIZE(cq), want);
		if (n == -ETIMEDOUT && l->drain_s > 0 && !c->iters && pn_now() > stop_at) {
			ret = no_drain(l, size, done, outstanding, tlast - t0);
			goto out;
		}
		if (n < 0) {
			ret = n;
			goto out;
		}
		for (i = 0; i < n; i++) {
			if (cq[i].op == PN_VERBS_RECV) {
				if (cq[i].has_imm && cq[i].imm == PN_BW_END)
					end_seen = 1;
				ret = post_recv(l, cq[i].qp, max);
				if (ret)
					goto out;
			} else if (cq[i].id == MARK_ID) {
				end_done = 1;
			} else {
				done += (uint64_t)cq[i].count;
				tlast = pn_now();
				pn_bw_blocks_push(&bk, done, tlast);
			}
		}
	}
	if (sender && done) {
		row->iters = done;
		row->seconds = tlast - t0;
		row->avg_gbps = row->seconds > 0 ? (double)done * (double)size * 8 / row->seconds / 1e9
						 : 0;
		row->msg_rate_mpps = row->seconds > 0 ? (double)done / row->seconds / 1e6 : 0;
		pn_bw_blocks_end(&bk, done, tlast, row);
	}
out:
	return mid_test(l->peer, ret);
}

/* Busy-poll one byte of memory the peer writes, bounded by the timeout.  A
 * pure spin first (as ib_write_lat: giving way costs the next packet a
 * scheduler round trip); after a millisecond without the byte the CPU is
 * probably needed by the one delivering it (soft-RoCE, more processes than
 * CPUs), so the wait yields from then on. */
static int wait_byte(struct pn_bw_link *l, volatile uint8_t *p, uint8_t want, double deadline)
{
	double start = 0, now;
	unsigned spins = 0;
	int yield = 0, ret;

	/* an acquire load: what the peer wrote before this byte is visible */
	while (__atomic_load_n(p, __ATOMIC_ACQUIRE) != want) {
		if (++spins % 1024)
			continue;
		now = pn_now();
		if (!start)
			start = now;
		else if (now - start > 1e-3)
			yield = 1;
		if (now > deadline)
			return pn_err(-ETIMEDOUT, "timed out after %g s waiting for the peer's write on "
					"%s", pn_verbs_conn_timeout(l->conn),
				      pn_verbs_dev_name(pn_verbs_conn_dev(l->conn)));
		if (yield) {
			/* slow already: is the peer still there? */
			ret = pn_verbs_conn_alive(l->conn, "waiting for the peer's write");
			if (ret)
				return ret;
			sched_yield();
		}
	}
	return 0;
}

/* Completions of a latency run: receives that come while waiting for
 * something else are counted (and reposted), so a ping-pong never loses the
 * peer's answer; send-side completions are counted against those asked for. */
struct lat_state {
	int recvd;		/* receives not yet consumed */
	uint64_t sig_posted;	/* signaled operations posted */
	uint64_t sig_done;	/* and completed */
};

static int lat_poll(struct pn_bw_link *l, struct lat_state *st, int min)
{
	struct pn_verbs_cqe q[16];
	int n, i, ret;

	n = pn_verbs_poll(l->conn, q, (int)PN_ARRAY_SIZE(q), min);
	if (n < 0)
		return n;
	for (i = 0; i < n; i++) {
		if (q[i].op == PN_VERBS_RECV) {
			ret = post_recv(l, q[i].qp, pn_bw_max_size(l->cfg));
			if (ret)
				return ret;
			st->recvd++;
		} else {
			st->sig_done++;
		}
	}
	return 0;
}

/* Wait for a receive (op RECV) or for every signaled operation (else). */
static int lat_wait(struct pn_bw_link *l, struct lat_state *st, int op)
{
	int ret;

	for (;;) {
		if (op == PN_VERBS_RECV && st->recvd > 0) {
			st->recvd--;
			return 0;
		}
		if (op != PN_VERBS_RECV && st->sig_done == st->sig_posted)
			return 0;
		ret = lat_poll(l, st, 1);
		if (ret)
			return ret;
	}
}

int pn_bw_run_lat(struct pn_bw_link *l, int k, struct pn_bw_row *row)
{
	const struct pn_bw_cfg *c = l->cfg;
	uint64_t size = c->sizes[k], max = pn_bw_max_size(c), iters = c->iters ? c->iters : 1000;
	uint64_t warm = 16; /* untimed round trips first: caches, registrations */
	volatile uint8_t *in = l->buf + size - 1; /* where the peer's last byte lands */
	uint8_t *out = l->buf + max;		    /* what we write */
	struct lat_state st = { 0 };
	double *lat = NULL, t0, t, deadline;
	uint64_t i, nlat = 0;
	int ret = 0, first = l->initiator;

	memset(row, 0, sizeof(*row));
	row->bytes = size;
	if (!size)
		return pn_err(-EINVAL, "latency needs a size of at least 1 byte");
	if (l->initiator) {
		lat = malloc(iters * sizeof(*lat));
		if (!lat)
			return pn_err(-ENOMEM, "out of memory");
	}
	iters += warm;
	t0 = pn_now();
	for (i = 0; i < iters; i++) {
		uint8_t v = (uint8_t)(i % 255 + 1);
		struct pn_verbs_wr w = { .op = (int)c->op, .qp = 0, .buf = out, .len = size,
					 .roff = 0, .id = i };
		/* nobody waits for a write's or send's own completion (as in
		 * ib_write_lat): one in 16 is signaled to free the queue */
		int sig = i % 16 == 15 || i + 1 == iters;

		t = pn_now();
		deadline = t + pn_verbs_conn_timeout(l->conn);
		if (c->op == PN_VERBS_READ) {
			if (!l->initiator)
				break; /* the reader's peer has nothing to do */
			st.sig_posted++;
			ret = pn_verbs_post(l->conn, &w);
			if (!ret)
				ret = lat_wait(l, &st, PN_VERBS_READ);
		} else {
			/* ping-pong: the initiator sends first, the other answers */
			if (!first) {
				ret = c->op == PN_VERBS_WRITE ? wait_byte(l, in, v, deadline)
							      : lat_wait(l, &st, PN_VERBS_RECV);
				if (ret)
					break;
			}
			out[size - 1] = v;
			if (!sig)
				w.flags = PN_VERBS_F_UNSIGNALED;
			else
				st.sig_posted++;
			ret = pn_verbs_post(l->conn, &w);
			if (!ret && first)
				ret = c->op == PN_VERBS_WRITE ? wait_byte(l, in, v, deadline)
							      : lat_wait(l, &st, PN_VERBS_RECV);
			if (!ret && sig)
				ret = lat_poll(l, &st, 0);
		}
		if (ret)
			break;
		if (i == warm)
			t0 = t;
		if (lat && i >= warm)
			lat[nlat++] = (pn_now() - t) * 1e6 / (c->op == PN_VERBS_READ ? 1 : 2);
	}
	/* the last operations have landed before anyone moves on */
	if (!ret && c->op != PN_VERBS_READ)
		ret = lat_wait(l, &st, (int)c->op);
	if (!ret && lat) {
		row->iters = nlat;
		row->seconds = pn_now() - t0;
		pn_bw_percentiles(lat, nlat, row->lat_us);
	}
	free(lat);
	/* clear what the peer wrote, for the next size */
	memset(l->buf, 0, max);
	return mid_test(l->peer, ret);
}

/* ------------------------------------------------------------------ TCP */

static int tcp_io(int fd, void *buf, size_t len, int wr, double deadline)
{
	int ret = wr ? pn_sock_write_full(fd, buf, len, deadline)
		     : pn_sock_read_full(fd, buf, len, deadline);

	if (ret == -ETIMEDOUT)
		return pn_err(ret, "TCP: timed out waiting for the peer");
	if (ret == -EPIPE)
		return pn_err(ret, "TCP: the peer closed the connection");
	return ret ? pn_err(ret, "TCP: %s", strerror(-ret)) : 0;
}

int pn_bw_xchg_fd(int fd, const void *mine, void *theirs, size_t len, double timeout)
{
	double deadline = pn_now() + timeout;
	int ret = tcp_io(fd, (void *)mine, len, 1, deadline);

	return ret ? ret : tcp_io(fd, theirs, len, 0, deadline);
}

int pn_bw_send_fd(int fd, const void *buf, size_t len, double timeout)
{
	return tcp_io(fd, (void *)buf, len, 1, pn_now() + timeout);
}

/* TCP latency: ping-pong of size bytes, iters timed round trips after 16
 * untimed ones (as over verbs); the sender's half round trips into row. */
static int tcp_lat(int fd, const struct pn_bw_cfg *c, int sender, uint64_t size, uint8_t *buf,
		   double timeout, struct pn_bw_row *row)
{
	uint64_t iters = c->iters ? c->iters : 1000, warm = 16, i;
	double *lat = NULL, t0 = pn_now(), deadline;
	int ret = 0;

	if (sender && !(lat = malloc(iters * sizeof(*lat))))
		return pn_err(-ENOMEM, "out of memory");
	for (i = 0; i < iters + warm && !ret; i++) {
		double t = pn_now();

		if (i == warm)
			t0 = t;
		deadline = t + timeout;
		if (sender) {
			ret = tcp_io(fd, buf, size, 1, deadline);
			if (!ret)
				ret = tcp_io(fd, buf, size, 0, deadline);
			if (!ret && i >= warm)
				lat[i - warm] = (pn_now() - t) * 1e6 / 2;
		} else {
			ret = tcp_io(fd, buf, size, 0, deadline);
			if (!ret)
				ret = tcp_io(fd, buf, size, 1, deadline);
		}
	}
	if (!ret && sender) {
		row->iters = iters;
		row->seconds = pn_now() - t0;
		pn_bw_percentiles(lat, iters, row->lat_us);
	}
	free(lat);
	return ret;
}

/*
 * TCP bandwidth: each message is a flag byte (1: data follows, 0: the end)
 * and the data; the receiver answers the end with one byte.  The sender's
 * messages, then its end: *count of them sent, the blocks pushed.
 */
static int tcp_send(int fd, const struct pn_bw_cfg *c, uint64_t size, uint8_t *buf, double t0,
		    double timeout, uint64_t *count, struct pn_bw_blocks *bk)
{
	uint64_t iters = c->iters ? c->iters : UINT64_MAX, i;
	double stop_at = c->iters ? INFINITY : t0 + c->duration, now = t0;
	uint8_t end = 0;
	int ret = 0;

	buf[0] = 1;
	for (i = 0; i < iters && now < stop_at && !ret; i++) {
		ret = tcp_io(fd, buf, size + 1, 1, now + timeout);
		(*count)++;
		now = pn_now();
		pn_bw_blocks_push(bk, *count, now);
	}
	return ret ? ret : tcp_io(fd, &end, 1, 1, pn_now() + timeout);
}

/* The receiver's side: the peer's messages up to its end.  A peer that
 * sends more than -n messages, or still sends twice -D and the timeout
 * after the start (slack for its clock and its last message), is not a
 * penny bw sender: refused, not drained for ever. */
static int tcp_drain(int fd, const struct pn_bw_cfg *c, uint64_t size, uint8_t *buf, double t0,
		     double timeout)
{
	uint64_t n = 0;
	int ret;

	for (;;) {
		ret = tcp_io(fd, buf, 1, 0, pn_now() + timeout);
		if (ret || !buf[0])
			return ret;
		if (c->iters ? ++n > c->iters : pn_now() > t0 + 2 * c->duration + timeout + 1) {
			pn_err_clear();
			if (c->iters)
				return pn_err(-EPROTO, "the peer sent more than the %llu messages of -n",
					      (unsigned long long)c->iters);
			return pn_err(-EPROTO, "the peer went on sending long after the %g s of -D",
				      c->duration);
		}
		ret = tcp_io(fd, buf + 1, size, 0, pn_now() + timeout);
		if (ret)
			return ret;
	}
}

/* -b over TCP: the peer's messages drained by a thread while this one sends. */
struct tcp_rx {
	int fd;
	const struct pn_bw_cfg *c;
	uint64_t size;
	uint8_t *buf;
	double t0, timeout;
	int ret;
	char err[256];
};

static void *tcp_rx_thread(void *arg)
{
	struct tcp_rx *x = arg;

	x->ret = tcp_drain(x->fd, x->c, x->size, x->buf, x->t0, x->timeout);
	if (x->ret)
		snprintf(x->err, sizeof(x->err), "%s", pn_errmsg(x->ret));
	return NULL;
}

/*
 * One direction's bandwidth (sender: the row), or both at once (bidir):
 * each side sends its messages and its end while a thread drains the
 * peer's, then answers the peer's end and waits for the answer to its own;
 * each row is its own direction over the whole exchange.
 */
static int tcp_bw(int fd, const struct pn_bw_cfg *c, int sender, uint64_t size, uint8_t *buf,
		  double timeout, struct pn_bw_row *row)
{
	int bidir = !!(c->flags & PN_BW_BIDIR), ret = 0;
	struct tcp_rx x = { .fd = fd, .c = c, .size = size, .timeout = timeout };
	double t0 = pn_now();
	uint8_t ack = 1;
	uint64_t count = 0;
	struct pn_bw_blocks bk;
	pthread_t th;

	if (!sender && !bidir) {
		ret = tcp_drain(fd, c, size, buf, t0, timeout);
		return ret ? ret : tcp_io(fd, &ack, 1, 1, pn_now() + timeout);
	}
	x.t0 = t0;
	if (bidir && !(x.buf = malloc(size + 1)))
		return pn_err(-ENOMEM, "out of memory");
	if (bidir && pthread_create(&th, NULL, tcp_rx_thread, &x)) {
		free(x.buf);
		return pn_err(-EAGAIN, "cannot start a thread");
	}
	pn_bw_blocks_start(&bk, c->iters, c->duration, t0, (double)size);
	ret = tcp_send(fd, c, size, buf, t0, timeout, &count, &bk);
	if (bidir) {
		/* the thread ends: the peer's end came, or its reads timed out */
		pthread_join(th, NULL);
		free(x.buf);
		if (!ret && x.ret)
			ret = pn_err(x.ret, "%s", x.err);
		if (!ret)
			ret = tcp_io(fd, &ack, 1, 1, pn_now() + timeout);
	}
	if (!ret)
		ret = tcp_io(fd, &ack, 1, 0, pn_now() + timeout);
	if (!ret) {
		row->iters = count;
		row->seconds = pn_now() - t0;
		row->avg_gbps = (double)count * (double)size * 8 / row->seconds / 1e9;
		row->msg_rate_mpps = (double)count / row->seconds / 1e6;
		/* the last block ends with the receiver's answer */
		pn_bw_blocks_end(&bk, count, t0 + row->seconds, row);
	}
	return ret;
}

int pn_bw_tcp_run(int fd, const struct pn_bw_cfg *c, int sender, int k, double timeout,
		  struct pn_bw_row *row)
{
	uint64_t size = c->sizes[k];
	uint8_t *buf;
	int ret;

	memset(row, 0, sizeof(*row));
	row->bytes = size;
	buf = calloc(1, size + 1);
	if (!buf)
		return pn_err(-ENOMEM, "out of memory");
	if (c->flags & PN_BW_LAT)
		ret = tcp_lat(fd, c, sender, size, buf, timeout, row);
	else
		ret = tcp_bw(fd, c, sender, size, buf, timeout, row);
	free(buf);
	return mid_test(NULL, ret);
}

int pn_bw_meets(double got, double want)
{
	return got >= want;
}
