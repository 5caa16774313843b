/* SPDX-License-Identifier: MIT */
/*
 * The runs behind `penny bw` (see bwrun.h): the rails, the hello exchange
 * and QP connect, the socket modes' and the launcher's measurement loops,
 * the --loopback fork, the gathering of every rank's rows, the failure a
 * side tells its peer, and the planned memory.  Nothing here prints.
 */
#define _GNU_SOURCE
#include "harness/bwrun.h"

#include "base/log.h"
#include "base/sock.h"
#include "base/stop.h"
#include "base/util.h"
#include "engine/jobparams.h"
#include "engine/mem.h"
#include "node/nic.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_RAILS PN_BW_MAX_RAILS

void pn_bwrun_init(struct pn_bwrun *r)
{
	memset(r, 0, sizeof(*r));
	pn_bw_cfg_init(&r->cfg);
	r->gid = -1;
	r->inline_size = -1;
	r->use_cuda = -1;
	r->fd = -1;
}

/* ------------------------------------------------------------- memory */

static int mem_check(int nlocal, uint64_t buflen, uint64_t base)
{
	struct pn_mem_job mj = { .nlocal = nlocal, .private_bytes = buflen, .base_bytes = base };

	return pn_mem_check(&mj);
}

int pn_bwrun_mem_ranks(int np, uint64_t max)
{
	return mem_check(np, max > UINT64_MAX / 2 ? UINT64_MAX : 2 * max, PN_MEM_RANK_BASE);
}

int pn_bwrun_mem_local(int nlocal, const struct pn_bw_cfg *cfg)
{
	/* latency: a sample of each timed round trip, on the issuing side */
	uint64_t lat = cfg->flags & PN_BW_LAT ? (cfg->iters ? cfg->iters : 1000) * sizeof(double)
					      : 0;

	return mem_check(nlocal, pn_bw_buflen(cfg) + lat, 0);
}

double pn_bwrun_bound(const struct pn_bw_cfg *c, double timeout, int k0, int k1)
{
	double t = timeout;
	int k;

	for (k = k0; k < k1; k++)
		t += c->iters ? (double)c->iters * ((double)c->sizes[k] / 1e6 + 1e-3) *
					(c->flags & PN_BW_BIDIR ? 2 : 1)
			      : c->duration + 1;
	return t;
}

int pn_bwrun_threshold(const struct pn_bw_cfg *c, double link, double min_gbps,
		       const char *expect, double *want, char *why, size_t len)
{
	double pct = 90;

	if (c->flags & PN_BW_LAT)
		return 0;
	if (min_gbps >= 0) {
		*want = min_gbps;
		snprintf(why, len, "--min-gbps %g", min_gbps);
		return 1;
	}
	if (!expect)
		return 0;
	if (expect[0])
		pn_parse_double(expect, &pct);
	if (link <= 0)
		return -ENODATA;
	*want = pct / 100 * link * (c->flags & PN_BW_BIDIR ? 2 : 1);
	snprintf(why, len, "%g%% of %g Gb/s%s", pct, link,
		 c->flags & PN_BW_BIDIR ? " x 2 directions" : "");
	return 1;
}

double pn_bwrun_link_pct(const struct pn_bw_cfg *c, double gbps, double link)
{
	return link > 0 ? gbps / (link * (c->flags & PN_BW_BIDIR ? 2 : 1)) * 100 : NAN;
}

int pn_bwrun_pairs(int nranks, int single, int nargs, const char *loopback, int all_rails,
		   const char *launcher, int *rank0)
{
	*rank0 = 1;
	if (nranks % 2 && (nranks > 1 || !single))
		return pn_err(-EINVAL, "ranks 2k and 2k+1 pair up: %d rank%s is odd%s", nranks,
			      nranks == 1 ? "" : "s",
			      nranks == 1 ? " (the server is 'penny bw' without --np)" : "");
	if (nranks > 1 && (nargs || loopback))
		return pn_err(-EINVAL, "%s runs one pair of processes; under a launcher (%s) "
				       "ranks 2k and 2k+1 pair up", nargs ? "HOST" : "--loopback",
			      launcher);
	*rank0 = 0;
	if (all_rails && nranks <= 1)
		return pn_err(-EINVAL, "--all-rails runs under a launcher (mpirun, srun, --np)");
	return 0;
}

int pn_bwrun_pair_rails(const struct pn_bwrun *r, int p)
{
	const struct pn_bw_hello *ha = &r->all_hello[2 * p], *hb = &r->all_hello[2 * p + 1];

	return r->tcp ? 1 : (int)PN_MIN(ha->nrails, hb->nrails);
}

void pn_bwrun_pair_link(const struct pn_bwrun *r, int p, int i, struct pn_bwrun_pair_link *l)
{
	const struct pn_bw_hello *ha = &r->all_hello[2 * p], *hb = &r->all_hello[2 * p + 1];

	if (r->tcp) {
		snprintf(l->local, sizeof(l->local), "tcp:%s", ha->host);
		snprintf(l->remote, sizeof(l->remote), "tcp:%s", hb->host);
	} else {
		snprintf(l->local, sizeof(l->local), "%.40s", ha->dev[i]);
		snprintf(l->remote, sizeof(l->remote), "%.40s", hb->dev[i]);
	}
	snprintf(l->name, sizeof(l->name), "%s@%s -> %s@%s", l->local, ha->host, l->remote,
		 hb->host);
	l->rhost = hb->host;
	l->gbps = r->tcp ? 0 : ha->link_gbps[i];
	l->rows = r->all_rows[2 * p].rows[i];
}

void pn_bwrun_link_verdict(const struct pn_bw_cfg *c, double link, double min_gbps,
			   const char *expect, const char *name, double gbps,
			   struct pn_bw_tally *t, struct pn_bw_link_verdict *v)
{
	int ret;

	memset(v, 0, sizeof(*v));
	if (!t->slowest_name[0] || gbps < t->slowest) {
		t->slowest = gbps;
		snprintf(t->slowest_name, sizeof(t->slowest_name), "%s", name);
	}
	ret = pn_bwrun_threshold(c, link, min_gbps, expect, &v->want, v->why, sizeof(v->why));
	v->gated = ret < 0 ? -1 : ret;
	v->passed = ret > 0 && pn_bw_meets(gbps, v->want);
	if (v->gated && !v->passed)
		t->failed_links++;
}

/* The devices to use: -d list, else every device with an ACTIVE port. */
static int pick_devices(struct pn_bwrun *b, const char *list)
{
	struct pn_nic_list l;
	int i, j, ret;

	b->ndevs = 0;
	ret = pn_nic_list_read(&l);
	if (ret)
		return ret;
	i = l.n;
	pn_nic_list_release(&l);
	if (!i)
		return pn_err(-ENODEV, "no RDMA devices (--transport tcp measures the TCP path "
				       "instead)");
	if (list && list[0]) {
		char *dup = strdup(list), *tok, *save = NULL;

		if (!dup)
			return pn_err(-ENOMEM, "out of memory");
		for (tok = strtok_r(dup, ",", &save); tok && b->ndevs < MAX_RAILS;
		     tok = strtok_r(NULL, ",", &save)) {
			if (b->ibport && !strchr(tok, ':'))
				snprintf(b->devs[b->ndevs++], sizeof(b->devs[0]), "%s:%d", tok,
					 b->ibport);
			else
				snprintf(b->devs[b->ndevs++], sizeof(b->devs[0]), "%s", tok);
		}
		free(dup);
		return b->ndevs ? 0 : pn_err(-EINVAL, "no device in '%s'", list);
	}
	ret = pn_nic_list_read(&l);
	if (ret)
		return ret;
	for (i = 0; i < l.n && b->ndevs < MAX_RAILS; i++)
		for (j = 0; j < l.nics[i].nports; j++) {
			const struct pn_port *p = &l.nics[i].ports[j];

			if (p->state != PN_PORT_ACTIVE || (b->ibport && p->port != b->ibport))
				continue;
			snprintf(b->devs[b->ndevs++], sizeof(b->devs[0]), "%s:%d", l.nics[i].name,
				 p->port);
			break;
		}
	pn_nic_list_release(&l);
	if (!b->ndevs)
		return pn_err(-ENODEV, "no RDMA device has an ACTIVE port (--transport tcp "
				       "measures the TCP path instead)");
	return 0;
}

/* ------------------------------------------------------------ the rails */

static int open_rail(struct pn_bwrun *b, struct pn_bwrun_rail *r, const char *spec)
{
	struct pn_verbs_dev_cfg dc;
	struct pn_verbs_conn_cfg cc;
	size_t len = pn_bw_buflen(&b->cfg);
	int ret;

	pn_verbs_dev_cfg_init(&dc);
	dc.gid_index = b->gid;
	ret = pn_verbs_dev_open(&r->dev, spec, &dc);
	if (ret)
		return ret;
	pn_verbs_conn_cfg_init(&cc);
	cc.nqp = (int)b->cfg.nqp;
	cc.sq_depth = (int)b->cfg.tx_depth + 1;
	cc.rq_depth = (int)b->cfg.tx_depth + 2;
	cc.mtu = (int)b->cfg.mtu;
	cc.timeout = b->timeout;
	cc.ack_timeout = b->qp_timeout;
	/* a benchmark polls like perftest; sleeping on the channel costs wakeups */
	cc.spin_us = 1000000;
	/* like perftest: small latency messages go inline (the device may
	 * allow less; the connection takes its limit) */
	cc.max_inline = b->inline_size >= 0 ? b->inline_size
			: (b->cfg.flags & PN_BW_LAT) && b->cfg.op != PN_VERBS_READ ? 220 : 0;
	ret = pn_verbs_conn_create(&r->conn, r->dev, &cc);
	if (ret)
		return ret;
	r->link.conn = r->conn;
	r->link.cfg = &b->cfg;
	r->link.buflen = len;
	if (b->use_cuda >= 0) {
		ret = pn_gpumem_open(&r->gpu, "cuda", b->use_cuda, len);
		if (!ret)
			ret = pn_gpumem_register(r->gpu, r->dev);
		if (ret)
			return ret;
		r->link.buf = pn_gpumem_ptr(r->gpu);
		return pn_verbs_conn_expose(r->conn, r->link.buf, len);
	}
	r->link.buf = calloc(1, len);
	if (!r->link.buf)
		return pn_err(-ENOMEM, "out of memory");
	return pn_verbs_conn_expose(r->conn, r->link.buf, len);
}

static void close_rail(struct pn_bwrun_rail *r)
{
	if (r->conn)
		pn_verbs_conn_free(r->conn);
	if (r->dev) {
		if (r->link.buf)
			pn_verbs_invalidate(r->dev, r->link.buf, r->link.buflen);
		pn_verbs_dev_close(r->dev);
	}
	if (r->gpu)
		pn_gpumem_close(r->gpu);
	else
		free(r->link.buf);
	memset(r, 0, sizeof(*r));
}

void pn_bwrun_release(struct pn_bwrun *r)
{
	int i;

	if (r->fd >= 0)
		close(r->fd);
	r->fd = -1;
	for (i = 0; i < MAX_RAILS; i++)
		close_rail(&r->rails[i]);
	free(r->all_hello);
	free(r->all_rows);
	r->all_hello = NULL;
	r->all_rows = NULL;
}

/* Open the rails of this side (verbs). */
static int open_rails(struct pn_bwrun *b, int n)
{
	int i, ret;

	b->nrails = PN_MIN(n, b->ndevs);
	for (i = 0; i < b->nrails; i++) {
		ret = open_rail(b, &b->rails[i], b->devs[i]);
		if (ret)
			return ret;
	}
	return 0;
}

static void hello_init(struct pn_bwrun *b)
{
	int i;

	memset(&b->me, 0, sizeof(b->me));
	b->me.tcp = (uint32_t)b->tcp;
	b->me.nrails = (uint32_t)b->nrails;
	b->me.cfg = b->cfg;
	snprintf(b->me.host, sizeof(b->me.host), "%s", pn_hostname());
	for (i = 0; i < b->nrails && !b->tcp; i++) {
		const struct pn_verbs_port_info *p = pn_verbs_dev_port(b->rails[i].dev);

		snprintf(b->me.dev[i], sizeof(b->me.dev[i]), "%s", pn_verbs_dev_name(b->rails[i].dev));
		b->me.link_gbps[i] = p->rate_gbps;
		pn_verbs_conn_info(b->rails[i].conn, &b->me.info[i]);
	}
}

/* After the exchange: the peer agrees with us, then the QPs are connected. */
static int agree_and_connect(struct pn_bwrun *b)
{
	const struct pn_bw_hello *p = &b->peer;
	int i, ret;

	if (p->err[0])
		return pn_err(-EIO, "the peer on %.64s failed: %.160s", p->host, p->err);
	if (p->tcp != (uint32_t)b->tcp)
		return pn_err(-EINVAL, "--transport: %s here, %s on the peer", b->tcp ? "tcp" : "verbs",
			      p->tcp ? "tcp" : "verbs");
	ret = pn_bw_cfg_check(&b->cfg, &p->cfg);
	if (ret)
		return pn_err_ctx(ret, "the two sides disagree");
	if (b->tcp)
		return 0;
	b->nrails = PN_MIN(b->nrails, (int)p->nrails);
	for (i = 0; i < b->nrails; i++) {
		ret = pn_verbs_conn_connect(b->rails[i].conn, &p->info[i]);
		if (ret)
			return ret;
		ret = pn_bw_prepare(&b->rails[i].link);
		if (ret)
			return ret;
		b->rails[i].link.initiator = b->initiator;
		b->rails[i].link.peer = p->host;
		/* the socket modes' side channel: the peer lives while it is open */
		pn_verbs_conn_watch(b->rails[i].conn, b->fd);
	}
	return 0;
}

/* ------------------------------------------------------------- a stop */

/*
 * A stop (SIGTERM, SIGINT, SIGHUP: timeout(1), kill, Ctrl-C, a batch
 * system) of a socket mode's run: those signals not ignored (nohup) are
 * blocked and a thread waits for one.  It kills the --loopback peer first
 * (before the connection closes under it and it says so; SIGKILL does the
 * same through the parent-death signal), ends the caller's output through
 * ops->cut unless it was ended already (the caller's callbacks take turns
 * with it, base/stop.h: its --json document is never cut in half), and the
 * signal's default action ends the process.  An output blocked for 2 s (a
 * full pipe) does not hold the stop.
 */
static const struct pn_bwrun_ops *stop_ops;
static pid_t stop_peer;	/* --loopback's peer, while it runs (atomic) */

static void stopped(void *unused, int sig)
{
	pid_t peer = __atomic_load_n(&stop_peer, __ATOMIC_ACQUIRE);
	char why[96];

	(void)unused;
	if (peer > 0)
		kill(peer, SIGKILL);
	/* the turn stays this thread's: nothing is written after the end */
	if (pn_stop_hold(2) && stop_ops->cut) {
		snprintf(why, sizeof(why), "stopped by signal %d (%s)", sig, strsignal(sig));
		stop_ops->cut(stop_ops->arg, why);
	}
}

/* The presenting process of a socket mode: the thread of a stop. */
static void stop_start(const struct pn_bwrun *b)
{
	if (!b->ops || stop_ops)
		return;
	stop_ops = b->ops;
	/* failing, the signals' default actions stand */
	pn_stop_start(stopped, NULL);
}

/* A socket mode's end: a run that failed ends the caller's output with why. */
static int run_end(struct pn_bwrun *b, int ret)
{
	if (ret && b->ops && b->ops->cut && pn_stop_hold(-1)) {
		b->ops->cut(b->ops->arg, pn_errmsg(ret));
		pn_stop_release(1);
	}
	return ret;
}

/* ------------------------------------------------------- one link, socket */

/* A peer that stops answering between the sizes of a test that ran:
 * the test failed (exit 1), as within a size (bwtest.c). */
static int mid_run(int ret)
{
	return ret == -ETIMEDOUT ? pn_err_ctx(-EIO, "the peer stopped answering during the test")
				 : ret;
}

/* Socket modes: one rail, per-size sync and rows exchanged over fd. */
static int run_socket(struct pn_bwrun *b)
{
	const struct pn_bwrun_ops *ops = b->ops;
	struct pn_bwrun_rail *r = &b->rails[0];
	int k, ret;

	if (ops && ops->begin && pn_stop_hold(-1)) {
		ops->begin(ops->arg, b);
		pn_stop_release(0);
	}
	for (k = 0; k < (int)b->cfg.nsizes; k++) {
		struct pn_bw_row mine, theirs, *shown;
		int ok = 1, peer_ok = 0;

		ret = pn_bw_xchg_fd(b->fd, &ok, &peer_ok, sizeof(ok), b->timeout);
		if (ret)
			return k ? mid_run(ret) : ret;
		if (b->tcp)
			ret = pn_bw_tcp_run(b->fd, &b->cfg, b->initiator, k, b->timeout, &mine);
		else if (b->cfg.flags & PN_BW_LAT)
			ret = pn_bw_run_lat(&r->link, k, &mine);
		else
			ret = pn_bw_run(&r->link, k, &mine);
		if (ret)
			return ret;
		/* over verbs the passive side waits here while the size runs;
		 * over TCP both sides ran it together */
		ret = pn_bw_xchg_fd(b->fd, &mine, &theirs, sizeof(mine), b->tcp ? b->timeout :
				    pn_bwrun_bound(&b->cfg, b->timeout, k, k + 1));
		if (!ret)
			ret = pn_bw_row_check(&b->cfg, k, &theirs);
		if (ret)
			return mid_run(ret);
		shown = b->initiator ? &mine : &theirs;
		if (b->cfg.flags & PN_BW_BIDIR)
			pn_bw_row_add(shown, b->initiator ? &theirs : &mine);
		r->rows[k] = *shown;
		if (ops && ops->row && pn_stop_hold(-1)) {
			ops->row(ops->arg, b, k, shown);
			pn_stop_release(0);
		}
	}
	if (ops && ops->end && pn_stop_hold(-1)) {
		ops->end(ops->arg, b);
		pn_stop_release(1);
	}
	return 0;
}

/* Exchange hellos over fd (only send ours when the server read the peer's); agree, connect. */
static int socket_handshake(struct pn_bwrun *b, int have_peer)
{
	int ret;

	hello_init(b);
	ret = pn_bw_hello_send(b->fd, &b->me, b->timeout);
	if (ret)
		return pn_err_ctx(ret, "exchanging the setup with the peer");
	if (!have_peer) {
		ret = pn_bw_hello_recv(b->fd, &b->peer, b->timeout);
		if (ret == -EPIPE || ret == -ETIMEDOUT || ret == -ECONNRESET)
			return pn_err_ctx(ret, "exchanging the setup with the peer");
		if (ret)
			return ret;
	}
	ret = agree_and_connect(b);
	if (ret)
		return ret;
	/* both sides connected their QPs before anyone sends */
	{
		int ok = 1, peer_ok = 0;

		ret = pn_bw_xchg_fd(b->fd, &ok, &peer_ok, sizeof(ok), b->timeout);
	}
	return ret ? pn_err_ctx(ret, "exchanging the setup with the peer") : 0;
}

/* Tell the peer why we cannot go on (best effort), so it does not wait. */
static void send_failure(struct pn_bwrun *b, int code)
{
	struct pn_bw_hello h;
	uint8_t *w = malloc(PN_BW_HELLO_LEN);

	memset(&h, 0, sizeof(h));
	snprintf(h.host, sizeof(h.host), "%s", pn_hostname());
	snprintf(h.err, sizeof(h.err), "%s", pn_errmsg(code));
	if (!w)
		return;
	pn_bw_hello_encode(&h, w);
	if (send(b->fd, w, PN_BW_HELLO_LEN, MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
		w[0] = 0;
	free(w);
}

static int socket_side(struct pn_bwrun *b, const char *devspec, int have_peer)
{
	int ret;

	if (!b->tcp) {
		ret = pick_devices(b, devspec);
		if (!ret)
			ret = open_rails(b, 1);
		if (ret) {
			send_failure(b, ret);
			return ret;
		}
	}
	ret = socket_handshake(b, have_peer);
	if (!ret)
		ret = run_socket(b);
	return ret;
}

int pn_bwrun_client(struct pn_bwrun *b, const char *devspec, const char *host, int port)
{
	int ret;

	b->mode = "client";
	b->initiator = 1;
	stop_start(b);
	ret = b->tcp ? 0 : pick_devices(b, devspec);
	if (!ret) {
		b->fd = pn_bw_connect(host, port, b->timeout, b->ops ? b->ops->refused : NULL,
				      b->ops ? b->ops->arg : NULL);
		ret = b->fd < 0 ? b->fd : socket_side(b, devspec, 0);
	}
	return run_end(b, ret);
}

int pn_bwrun_server(struct pn_bwrun *b, const char *devspec, int port)
{
	int ret, lfd;

	b->mode = "server";
	stop_start(b);
	ret = b->tcp ? 0 : pick_devices(b, devspec);
	lfd = ret ? ret : pn_bw_listen(NULL, port, NULL);
	ret = lfd < 0 ? lfd : 0;
	if (!ret) {
		if (b->ops && b->ops->waiting)
			b->ops->waiting(b->ops->arg, port);
		b->fd = pn_bw_accept_client(lfd, b->timeout, &b->peer, b->ops ? b->ops->dropped : NULL);
		close(lfd);
		ret = b->fd < 0 ? b->fd : socket_side(b, devspec, 1);
	}
	return run_end(b, ret);
}

static pid_t loopback_fork(void)
{
	pid_t parent = getpid(), pid = fork();

	if (pid == 0) {
		/* the peer dies by the signals' default actions, and with penny */
		pn_stop_child();
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(1);
	} else if (pid > 0) {
		__atomic_store_n(&stop_peer, pid, __ATOMIC_RELEASE);
	}
	return pid;
}

int pn_bwrun_loopback(struct pn_bwrun *b, const char *spec)
{
	char d1[64], d2[64];
	const char *comma = strchr(spec, ',');
	int sv[2] = { -1, -1 }, lfd = -1, port = 0, ret, st = 0;
	pid_t pid;

	b->mode = "loopback";
	stop_start(b);
	snprintf(d1, sizeof(d1), "%.*s", comma ? (int)(comma - spec) : 63, spec);
	snprintf(d2, sizeof(d2), "%s", comma ? comma + 1 : d1);
	ret = b->tcp ? 0 : pick_devices(b, spec);
	if (ret)
		return ret;
	if (b->tcp) {
		/* another process of this host may connect first: the key the
		 * peer inherits tells them apart */
		lfd = pn_bw_listen("127.0.0.1", 0, &port);
		ret = lfd < 0 ? lfd : pn_bw_data_key(b->key);
	} else if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv)) {
		ret = pn_err(-errno, "socketpair: %s", strerror(errno));
	}
	fflush(NULL);
	pid = ret ? -1 : loopback_fork();
	if (pid < 0) {
		ret = ret ? ret : pn_err(-errno, "fork: %s", strerror(errno));
		goto out;
	}
	if (pid == 0) {
		/* the passive end: presents nothing, says why it failed */
		const struct pn_bwrun_ops *ops = b->ops;

		b->ops = NULL;
		b->initiator = 0;
		if (lfd >= 0)
			close(lfd);
		if (b->tcp) {
			b->fd = pn_bw_data_connect("127.0.0.1", port, b->key, 0, b->timeout);
			ret = b->fd < 0 ? b->fd : 0;
		} else {
			close(sv[0]);
			b->fd = sv[1];
			ret = 0;
		}
		if (!ret)
			ret = socket_side(b, b->tcp ? NULL : d2, 0);
		if (ret && ops && ops->peer_failed)
			ops->peer_failed(ops->arg, b->tcp ? "tcp" : d2, ret);
		_exit(ret ? 1 : 0);
	}
	b->initiator = 1;
	if (b->tcp) {
		b->fd = pn_bw_data_accept(lfd, b->key, 0, b->timeout,
					  b->ops ? b->ops->dropped : NULL);
		ret = b->fd < 0 ? b->fd : 0;
		close(lfd);
		lfd = -1;
	} else {
		close(sv[1]);
		sv[1] = -1;
		b->fd = sv[0];
		sv[0] = -1;
		ret = 0;
	}
	if (!ret)
		ret = socket_side(b, b->tcp ? NULL : d1, 0);
	if (b->fd >= 0)
		close(b->fd);
	b->fd = -1;
	if (ret)
		kill(pid, SIGTERM);
	waitpid(pid, &st, 0);
	__atomic_store_n(&stop_peer, 0, __ATOMIC_RELEASE);
	if (!ret && (!WIFEXITED(st) || WEXITSTATUS(st)))
		ret = pn_err(-EIO, "the loopback peer failed");
out:
	if (lfd >= 0)
		close(lfd);
	for (st = 0; st < 2; st++)
		if (sv[st] >= 0)
			close(sv[st]);
	return run_end(b, ret);
}

/* ------------------------------------------------------------- launcher */

static int boot_xchg(struct pn_bwrun *b, const void *mine, void *theirs, size_t len, void **all_out)
{
	void *all = calloc((size_t)b->nranks, len);
	int ret;

	if (!all)
		return pn_err(-ENOMEM, "out of memory");
	ret = pn_boot_allgather(b->boot, mine, all, len);
	if (!ret && theirs)
		memcpy(theirs, (char *)all + (size_t)(b->rank ^ 1) * len, len);
	if (!ret && all_out)
		*all_out = all;
	else
		free(all);
	return ret;
}

static void *rail_thread(void *arg)
{
	struct pn_bwrun_rail *r = arg;
	int k;

	for (k = 0; k < (int)r->link.cfg->nsizes && !r->ret; k++)
		r->ret = pn_bw_run(&r->link, k, &r->rows[k]);
	if (r->ret)
		snprintf(r->err, sizeof(r->err), "%s: %s", pn_verbs_dev_name(pn_verbs_conn_dev(r->conn)),
			 pn_errmsg(r->ret));
	return NULL;
}

/* Data connection for TCP under a launcher: the even rank listens. */
static int launcher_tcp(struct pn_bwrun *b, int *lfd)
{
	struct sockaddr_storage ss;
	unsigned sl = sizeof(ss);
	char addr[64] = "127.0.0.1";
	int port = 0;

	if (!pn_boot_local_addr(b->boot, &ss, &sl))
		pn_sock_addr_name(&ss, addr, sizeof(addr), 0);
	if (b->initiator) {
		*lfd = pn_bw_listen(addr, 0, &port);
		if (*lfd < 0)
			return *lfd;
	}
	snprintf(b->me.addr, sizeof(b->me.addr), "%s", addr);
	b->me.port_tcp = (uint32_t)port;
	return b->initiator ? pn_bw_data_key(b->key) : 0;
}

/*
 * The data connection of pair (2p, 2p+1) over TCP: the even rank's key
 * came to the odd one with its hello through the rendezvous, which
 * strangers are not in; the even rank takes the first connection that
 * proves it.
 */
static int launcher_data(struct pn_bwrun *b, int lfd)
{
	if (b->initiator)
		b->fd = pn_bw_data_accept(lfd, b->key, b->rank, b->timeout,
					  b->ops ? b->ops->dropped : NULL);
	else
		b->fd = pn_bw_data_connect(b->peer.addr, (int)b->peer.port_tcp, b->key, b->rank - 1,
					   b->timeout);
	return b->fd < 0 ? b->fd : 0;
}

/* Every rail of every pair p = ranks 2p (initiator) and 2p+1: the sum of
 * both directions into [2p] when bidirectional. */
static void sum_pairs(struct pn_bwrun *b)
{
	int p, i, k;

	if (!(b->cfg.flags & PN_BW_BIDIR))
		return;
	for (p = 0; p < b->nranks / 2; p++) {
		const struct pn_bw_hello *ha = &b->all_hello[2 * p], *hb = &b->all_hello[2 * p + 1];
		int nr = b->tcp ? 1 : (int)PN_MIN(ha->nrails, hb->nrails);

		for (i = 0; i < nr; i++)
			for (k = 0; k < (int)b->cfg.nsizes; k++)
				pn_bw_row_add(&b->all_rows[2 * p].rows[i][k],
					      &b->all_rows[2 * p + 1].rows[i][k]);
	}
}

/*
 * Under a launcher every rank runs the same test: the settings that shape
 * it are compared across all ranks before any connects (per-rank ones, -d
 * -i -x --use_cuda, and the gate rank 0 alone applies, are not).
 */
int pn_bwrun_agree(struct pn_bwrun *b, int all_sizes, int *differs)
{
	const struct pn_bw_cfg *c = &b->cfg;
	struct pn_job_param p[PN_JOB_MAX_PARAMS];
	int n = 0;

	if (all_sizes)
		pn_job_param_set(&p[n++], "-s", "-a (2..8M)");
	else
		pn_job_param_set(&p[n++], "-s", "%llu", (unsigned long long)c->sizes[0]);
	if (c->iters)
		pn_job_param_set(&p[n++], "-n", "%llu", (unsigned long long)c->iters);
	else
		pn_job_param_set(&p[n++], "-n", "none (-D)");
	if (c->duration > 0)
		pn_job_param_set(&p[n++], "-D", "%.15g", c->duration);
	else
		pn_job_param_set(&p[n++], "-D", "none");
	pn_job_param_set(&p[n++], "-q", "%u", c->nqp);
	pn_job_param_set(&p[n++], "-t", "%u", c->tx_depth);
	pn_job_param_set(&p[n++], "--op", "%s", c->op == PN_VERBS_WRITE ? "write"
					     : c->op == PN_VERBS_READ ? "read" : "send");
	pn_job_param_set(&p[n++], "--lat", "%s", c->flags & PN_BW_LAT ? "on" : "off");
	pn_job_param_set(&p[n++], "-b", "%s", c->flags & PN_BW_BIDIR ? "on" : "off");
	if (c->mtu)
		pn_job_param_set(&p[n++], "--mtu", "%u", c->mtu);
	else
		pn_job_param_set(&p[n++], "--mtu", "the ports'");
	if (b->inline_size >= 0)
		pn_job_param_set(&p[n++], "-I", "%d", b->inline_size);
	else
		pn_job_param_set(&p[n++], "-I", "default");
	pn_job_param_set(&p[n++], "--all-rails", "%s", b->all_rails ? "on" : "off");
	pn_job_param_set(&p[n++], "--transport", "%s", b->tcp ? "tcp" : "verbs");
	return pn_job_params_agree(b->boot, p, n, differs);
}

/* A rank's part of the hello exchange: its hello, and its data key. */
#define WIRE_LEN (PN_BW_HELLO_LEN + PN_BW_KEY_LEN)

int pn_bwrun_launcher(struct pn_bwrun *b, const char *devspec)
{
	struct pn_bwrun_rows *mine = NULL;
	uint8_t *wire = NULL, *all_wire = NULL;
	int i, k, ret, lfd = -1;

	b->mode = "launcher";
	b->rank = pn_boot_rank(b->boot);
	b->nranks = pn_boot_nranks(b->boot);
	b->initiator = !(b->rank % 2);
	if (!b->tcp) {
		ret = pick_devices(b, devspec);
		if (!ret)
			ret = open_rails(b, b->all_rails ? MAX_RAILS : 1);
		if (ret)
			goto err_tell;
	}
	if (b->all_rails && (b->cfg.flags & PN_BW_LAT))
		return pn_err(-EINVAL, "--lat measures one link at a time (no --all-rails)");
	hello_init(b);
	if (b->tcp) {
		ret = launcher_tcp(b, &lfd);
		if (ret)
			goto err_tell;
	}
	wire = calloc(1, WIRE_LEN);
	b->all_hello = calloc((size_t)b->nranks, sizeof(*b->all_hello));
	if (!wire || !b->all_hello) {
		ret = pn_err(-ENOMEM, "out of memory");
		goto out;
	}
	/* each rank's hello, and the even ranks' data keys (TCP) after them */
	pn_bw_hello_encode(&b->me, wire);
	memcpy(wire + PN_BW_HELLO_LEN, b->key, PN_BW_KEY_LEN);
	ret = boot_xchg(b, wire, NULL, WIRE_LEN, (void **)&all_wire);
	for (i = 0; !ret && i < b->nranks; i++) /* rank 0 presents them all */
		ret = pn_bw_hello_decode(&b->all_hello[i], all_wire + (size_t)i * WIRE_LEN,
					 PN_BW_HELLO_LEN);
	if (ret)
		goto out;
	b->peer = b->all_hello[b->rank ^ 1];
	if (!b->initiator)
		memcpy(b->key, all_wire + (size_t)(b->rank ^ 1) * WIRE_LEN + PN_BW_HELLO_LEN,
		       PN_BW_KEY_LEN);
	ret = agree_and_connect(b);
	if (!ret && b->tcp)
		ret = launcher_data(b, lfd);
	/* every rank must be connected before any sends (a pair's data
	 * connection may take the timeout) */
	{
		int ok;

		pn_boot_set_extra(b->boot, b->timeout);
		if (pn_boot_agree(b->boot, !ret, &ok) || (!ret && !ok))
			ret = ret ? ret : pn_err(-ENOTCONN, "another rank failed to connect");
	}
	if (ret)
		goto out;
	mine = calloc(1, sizeof(*mine));
	if (!mine) {
		ret = pn_err(-ENOMEM, "out of memory");
		goto out;
	}
	if (b->nrails > 1 || b->all_rails) {
		pthread_t th[MAX_RAILS];

		for (i = 0; i < b->nrails; i++)
			if (pthread_create(&th[i], NULL, rail_thread, &b->rails[i])) {
				b->rails[i].ret = pn_err(-EAGAIN, "cannot start a thread");
				th[i] = 0;
			}
		for (i = 0; i < b->nrails; i++)
			if (th[i])
				pthread_join(th[i], NULL);
		for (i = 0; i < b->nrails; i++) {
			if (b->rails[i].ret) {
				ret = pn_err(b->rails[i].ret, "%s", b->rails[i].err);
				goto out;
			}
			memcpy(mine->rows[i], b->rails[i].rows,
			       sizeof(struct pn_bw_row) * b->cfg.nsizes);
		}
	} else {
		struct pn_bwrun_rail *r = &b->rails[0];

		for (k = 0; k < (int)b->cfg.nsizes; k++) {
			/* the passive side waits here while size k - 1 runs */
			pn_boot_set_extra(b->boot, pn_bwrun_bound(&b->cfg, 0, k ? k - 1 : 0, k));
			ret = pn_boot_barrier(b->boot);
			if (ret)
				goto out;
			if (b->tcp)
				ret = pn_bw_tcp_run(b->fd, &b->cfg, b->initiator, k, b->timeout,
						    &mine->rows[0][k]);
			else if (b->cfg.flags & PN_BW_LAT)
				ret = pn_bw_run_lat(&r->link, k, &mine->rows[0][k]);
			else
				ret = pn_bw_run(&r->link, k, &mine->rows[0][k]);
			if (ret)
				goto out;
		}
	}
	/* the rows, once the last size (every size: one thread a rail) ran */
	k = (int)b->cfg.nsizes;
	pn_boot_set_extra(b->boot, pn_bwrun_bound(&b->cfg, 0, b->nrails > 1 || b->all_rails ? 0
						  : k - 1, k));
	ret = boot_xchg(b, mine, NULL, sizeof(*mine), (void **)&b->all_rows);
	if (!ret)
		sum_pairs(b);
	goto out;
err_tell:
	/* let the other ranks fail fast instead of waiting out their timeout */
	pn_boot_abort(b->boot, pn_errmsg(ret));
out:
	if (lfd >= 0)
		close(lfd);
	free(wire);
	free(all_wire);
	free(mine);
	return ret;
}
