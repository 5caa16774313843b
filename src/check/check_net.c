/* SPDX-License-Identifier: MIT */
/*
 * penny check's nic-bw: every NIC's RDMA write bandwidth at once, in
 * loopback alone, paired per rail across nodes under a launcher; and what
 * the network checks share (config numbers, this node's NICs in rail
 * order).  rails is check_rails.c; its pure parts are in check_net.h.
 */
#define _GNU_SOURCE
#include "check/check_net.h"
#include "check/check_cfg.h"
#include "check/check_row.h"

#include "base/log.h"
#include "base/util.h"
#include "base/verdict.h"
#include "engine/boot.h"
#include "gpu/gpumem.h"
#include "harness/bwtest.h"
#include "node/nic.h"
#include "node/nodectx.h"
#include "node/sysfs.h"
#include "node/topo.h"
#include "node/topo_check.h"
#include "transport/verbs.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>


/* ---------------------------------------------------------- pure parts */

int pn_nicbw_rounds(int nnodes)
{
	return nnodes < 2 ? 0 : nnodes % 2 ? 2 : 1;
}

int pn_nicbw_partner(int nnodes, int round, int node)
{
	if (node < 0 || node >= nnodes || round < 0 || round >= pn_nicbw_rounds(nnodes))
		return -1;
	if (round == 0)
		return (node ^ 1) < nnodes ? node ^ 1 : -1;
	/* odd count: the last node, idle in round 0, pairs with node 0 */
	if (node == nnodes - 1)
		return 0;
	return node == 0 ? nnodes - 1 : -1;
}

int pn_nicbw_report_round(int nnodes, int node)
{
	int r;

	for (r = 0; r < pn_nicbw_rounds(nnodes); r++)
		if (pn_nicbw_partner(nnodes, r, node) >= 0)
			return r;
	return -1;
}

/* ------------------------------------------------------------- helpers */

double pn_checknet_num(const struct pn_check *c, const char *key, double dflt, int *set)
{
	double v = dflt;
	int r = c->cfg ? pn_check_cfg_num(c->cfg, key, &v) : -EINVAL;

	if (set)
		*set = r == 1;
	return r < 0 ? dflt : v;
}


static void nic_fill(struct pn_netnic *n, const char *dev, int port, int rail)
{
	struct pn_nic nic;
	int i, pick = -1;

	memset(n, 0, sizeof(*n));
	snprintf(n->dev, sizeof(n->dev), "%s", dev);
	n->rail = rail;
	n->numa = -1;
	n->gpu = -1;
	n->port = port > 0 ? port : 1;
	if (pn_nic_read(dev, &nic)) {
		snprintf(n->name, sizeof(n->name), "%s/%d", n->dev, n->port);
		snprintf(n->why, sizeof(n->why), "no RDMA device '%s'", dev);
		return;
	}
	n->numa = nic.numa;
	for (i = 0; i < nic.nports; i++)
		if (port > 0 ? nic.ports[i].port == port
			     : nic.ports[i].state == PN_PORT_ACTIVE && pick < 0)
			pick = i;
	if (pick < 0 && port <= 0 && nic.nports)
		pick = 0;
	if (pick >= 0) {
		const struct pn_port *p = &nic.ports[pick];

		n->port = p->port;
		n->rate = p->rate_gbps;
		n->usable = p->state == PN_PORT_ACTIVE;
		if (!n->usable)
			snprintf(n->why, sizeof(n->why), "port %d is %s (%s)", p->port,
				 p->state_name[0] ? p->state_name : "not ACTIVE",
				 p->phys_state_name[0] ? p->phys_state_name : "physical state unknown");
	} else {
		snprintf(n->why, sizeof(n->why), "%s has no port %d", dev, n->port);
	}
	snprintf(n->name, sizeof(n->name), "%s/%d", n->dev, n->port);
	pn_nic_release(&nic);
}

/* This node's NIC ports, in rail order (check_net.h). */
int pn_checknet_nics(const struct pn_check *c, struct pn_netnic *out, int max, int *left)
{
	struct pn_nodectx ctx;
	int n = 0, i, more = 0;

	memset(&ctx, 0, sizeof(ctx));
	if (c->devspec && c->devspec[0]) {
		char *dup = strdup(c->devspec), *tok, *save = NULL;

		if (!dup)
			return pn_err(-ENOMEM, "out of memory");
		for (tok = strtok_r(dup, ",", &save); tok && n < max; tok = strtok_r(NULL, ",", &save)) {
			int port, ret = pn_topo_dev_entry(tok, &port);

			if (ret) {
				free(dup);
				return ret;
			}
			nic_fill(&out[n], tok, port, n);
			n++;
		}
		for (; tok; tok = strtok_r(NULL, ",", &save))
			more++;
		free(dup);
	} else if (c->topo && c->topo->nnics) {
		for (i = 0; i < c->topo->nnics; i++) {
			const struct pn_topo_dev *d = &c->topo->devs[c->topo->ngpus + i];

			if (!d->nic.name[0])
				continue;
			if (n == max) {
				more++;
				continue;
			}
			nic_fill(&out[n], d->nic.name, 0, i);
			n++;
		}
	} else {
		struct pn_nic_list l;

		if (!pn_nic_list_read(&l)) {
			for (i = 0; i < l.n && n < max; i++) {
				nic_fill(&out[n], l.nics[i].name, 0, i);
				n++;
			}
			more += l.n - i;
			pn_nic_list_release(&l);
		}
	}
	if (c->topo && !pn_nodectx_from_topo(&ctx, c->topo)) {
		for (i = 0; i < n; i++) {
			const struct pn_nicctx *x = pn_nodectx_find(&ctx, out[i].dev);

			if (x && x->ngpus)
				out[i].gpu = x->gpu[0];
			if (x && out[i].numa < 0)
				out[i].numa = x->numa;
		}
		pn_nodectx_release(&ctx);
	}
	if (left)
		*left = more;
	return n;
}

/* ------------------------------------------------------------- nic-bw */

/* One NIC's measurement: its device, connection(s), buffer and row. */
struct nbjob {
	const struct pn_check *c;
	struct pn_netnic nic;
	const struct pn_bw_cfg *cfg;
	struct pn_verbs_dev *dev, *dev2;	/* dev2: the loopback's passive end */
	struct pn_verbs_conn *conn, *conn2;
	struct pn_gpumem *gpu;
	void *buf;
	size_t len;
	struct pn_bw_link link, link2;
	struct pn_bw_row row;
	int ret, measured, connected;
	char err[200];
	char mem[120];
};

/* How long a sender may wait for a completion, and how long its link may
 * take to drain after the timed phase: the others wait in a barrier bounded
 * by the job's timeout T, so the sender's worst case (the duration, a stalled
 * link's wait, the drain) stays below T; 10 s at most, where 8 MiB in flight
 * drains in under a second at 100 Mb/s. */
static double nb_drain_s(const struct nbjob *j)
{
	double t = j->c->boot ? pn_boot_timeout(j->c->boot) : j->c->timeout;

	if (t <= 0)
		t = 30;
	return PN_MAX(1.0, PN_MIN(10.0, (t - j->cfg->duration) / 3));
}

static int nb_side(struct nbjob *j, struct pn_verbs_dev **d, struct pn_verbs_conn **cn)
{
	struct pn_verbs_dev_cfg dc;
	struct pn_verbs_conn_cfg cc;
	char spec[80];
	int ret;

	pn_verbs_dev_cfg_init(&dc);
	snprintf(spec, sizeof(spec), "%s:%d", j->nic.dev, j->nic.port);
	ret = pn_verbs_dev_open(d, spec, &dc);
	if (ret)
		return ret;
	pn_verbs_conn_cfg_init(&cc);
	cc.nqp = (int)j->cfg->nqp;
	cc.sq_depth = (int)j->cfg->tx_depth + 1;
	cc.rq_depth = (int)j->cfg->tx_depth + 2;
	cc.timeout = nb_drain_s(j);
	cc.spin_us = 1000000;
	return pn_verbs_conn_create(cn, *d, &cc);
}

static int want_cuda(const struct pn_check *c)
{
	return !c->backends || strstr(c->backends, "cuda") != NULL;
}

/* The buffer: the NIC's nearest GPU (--use_cuda semantics) when the cuda
 * plugin and dma-buf work, else host memory on the NIC's NUMA node. */
static int nb_buffer(struct nbjob *j)
{
	char gpuwhy[80] = "";
	int ret;

	j->len = pn_bw_buflen(j->cfg);
	if (j->nic.gpu >= 0 && want_cuda(j->c)) {
		ret = pn_gpumem_open(&j->gpu, "cuda", j->nic.gpu, j->len);
		if (!ret)
			ret = pn_gpumem_register(j->gpu, j->dev);
		if (!ret && j->dev2)
			ret = pn_gpumem_register(j->gpu, j->dev2);
		if (!ret) {
			j->buf = pn_gpumem_ptr(j->gpu);
			snprintf(j->mem, sizeof(j->mem), "GPU%d memory (cuda, dma-buf)", j->nic.gpu);
			return 0;
		}
		snprintf(gpuwhy, sizeof(gpuwhy), "; GPU%d: %.60s", j->nic.gpu, pn_errmsg(ret));
		if (j->gpu) {
			pn_verbs_invalidate(j->dev, pn_gpumem_ptr(j->gpu), j->len);
			if (j->dev2)
				pn_verbs_invalidate(j->dev2, pn_gpumem_ptr(j->gpu), j->len);
			pn_gpumem_close(j->gpu);
		}
		j->gpu = NULL;
	}
	j->buf = mmap(NULL, j->len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (j->buf == MAP_FAILED) {
		j->buf = NULL;
		return pn_err(-ENOMEM, "cannot map %zu bytes", j->len);
	}
	if (j->nic.numa >= 0 && j->nic.numa < 64) {
		unsigned long mask = 1ul << j->nic.numa;

		/* MPOL_PREFERRED (1): best effort, before the first touch */
		if (syscall(SYS_mbind, j->buf, j->len, 1, &mask, 65ul, 0ul))
			snprintf(gpuwhy + strlen(gpuwhy), sizeof(gpuwhy) - strlen(gpuwhy),
				 "; mbind failed");
	}
	memset(j->buf, 0, j->len);
	if (j->nic.numa >= 0)
		snprintf(j->mem, sizeof(j->mem), "host memory, NUMA %d%s", j->nic.numa, gpuwhy);
	else
		snprintf(j->mem, sizeof(j->mem), "host memory%s", gpuwhy);
	return 0;
}

static int nb_expose(struct nbjob *j)
{
	int ret;

	j->link.conn = j->conn;
	j->link.cfg = j->cfg;
	j->link.buf = j->buf;
	j->link.buflen = j->len;
	j->link.drain_s = nb_drain_s(j);
	ret = pn_verbs_conn_expose(j->conn, j->buf, j->len);
	if (ret || !j->conn2)
		return ret;
	j->link2 = j->link;
	j->link2.conn = j->conn2;
	return pn_verbs_conn_expose(j->conn2, j->buf, j->len);
}

static void nb_close(struct nbjob *j)
{
	if (j->conn)
		pn_verbs_conn_free(j->conn);
	if (j->conn2)
		pn_verbs_conn_free(j->conn2);
	if (j->buf && j->dev)
		pn_verbs_invalidate(j->dev, j->buf, j->len);
	if (j->buf && j->dev2)
		pn_verbs_invalidate(j->dev2, j->buf, j->len);
	if (j->dev)
		pn_verbs_dev_close(j->dev);
	if (j->dev2)
		pn_verbs_dev_close(j->dev2);
	if (j->gpu)
		pn_gpumem_close(j->gpu);
	else if (j->buf)
		munmap(j->buf, j->len);
	j->conn = j->conn2 = NULL;
	j->dev = j->dev2 = NULL;
	j->gpu = NULL;
	j->buf = NULL;
}

static void nb_fail(struct nbjob *j, int ret)
{
	j->ret = ret;
	snprintf(j->err, sizeof(j->err), "%s", pn_errmsg(ret));
}

/* The sending side of a launcher round (connected before); a loopback's
 * sending end once both are prepared. */
static void *nb_send_thread(void *arg)
{
	struct nbjob *j = arg;
	int ret;

	j->link.initiator = 1;
	ret = pn_bw_run(&j->link, 0, &j->row);
	if (ret)
		nb_fail(j, ret);
	else
		j->measured = 1;
	return NULL;
}

/* Loopback: both ends on the NIC (ib_write_bw -d X twice on one host). */
static void *nb_loop_thread(void *arg)
{
	struct nbjob *j = arg;
	struct pn_verbs_info i1, i2;
	int ret;

	ret = nb_side(j, &j->dev, &j->conn);
	if (!ret)
		ret = nb_side(j, &j->dev2, &j->conn2);
	if (!ret)
		ret = nb_buffer(j);
	if (!ret)
		ret = nb_expose(j);
	if (!ret) {
		pn_verbs_conn_info(j->conn, &i1);
		pn_verbs_conn_info(j->conn2, &i2);
		ret = pn_verbs_conn_connect(j->conn, &i2);
	}
	if (!ret)
		ret = pn_verbs_conn_connect(j->conn2, &i1);
	if (!ret)
		ret = pn_bw_prepare(&j->link2);
	j->link.initiator = 1;
	if (!ret)
		ret = pn_bw_prepare(&j->link);
	if (ret)
		nb_fail(j, ret);
	else
		nb_send_thread(j);
	return NULL;
}

static void nb_threads(struct nbjob *jobs, int n, void *(*fn)(void *), const int *which)
{
	pthread_t th[PN_NET_MAX];
	int started[PN_NET_MAX] = { 0 }, i;

	for (i = 0; i < n; i++) {
		if (which && !which[i])
			continue;
		if (pthread_create(&th[i], NULL, fn, &jobs[i]))
			nb_fail(&jobs[i], pn_err(-EAGAIN, "cannot start a thread"));
		else
			started[i] = 1;
	}
	for (i = 0; i < n; i++)
		if (started[i])
			pthread_join(th[i], NULL);
}

static void nb_cfg(const struct pn_check *c, struct pn_bw_cfg *cfg)
{
	double secs = pn_checknet_num(c, "nic-bw.seconds", 2, NULL);

	pn_bw_cfg_init(cfg);
	cfg->op = PN_VERBS_WRITE;
	cfg->nqp = 4;
	cfg->nsizes = 1;
	cfg->sizes[0] = (uint64_t)pn_checknet_num(c, "nic-bw.size", 1 << 20, NULL);
	if (!cfg->sizes[0])
		cfg->sizes[0] = 1 << 20;
	cfg->iters = 0;
	/* about 8 MiB in flight per NIC (perftest's 128 x 64 KiB): plenty for a
	 * fast port, and a slow one drains in seconds, not minutes */
	cfg->tx_depth = (uint32_t)PN_MAX(1, PN_MIN(128, (8 << 20) / cfg->sizes[0] / cfg->nqp));
	/* --quick: a quarter of the time, at least 0.2 s */
	cfg->duration = c->quick ? PN_MAX(0.2, secs / 4) : secs;
}

/* The result of one NIC's measurement (or why there is none). */
static void nb_result(struct pn_check *c, const struct nbjob *j, const char *how)
{
	struct pn_verdict_in v = { .check = "nic-bw", .target = j->nic.name, .unit = "Gb/s" };
	char dsrc[128], src[128], detail[PN_VERDICT_DETAIL];
	double frac = pn_checknet_num(c, "nic-bw.fraction", 0.9, NULL), want, got = j->row.avg_gbps;
	int set;

	v.seconds = j->row.seconds;
	if (!j->nic.usable) {
		v.verdict = PN_FAIL;
		v.detail = j->nic.why;
		pn_check_add(c, &v);
		return;
	}
	if (!j->measured) {
		snprintf(detail, sizeof(detail), "could not measure: %s", j->err[0] ? j->err : "?");
		v.verdict = PN_FAIL;
		v.detail = detail;
		pn_check_add(c, &v);
		return;
	}
	pn_checknet_num(c, "nic-bw.min-gbps", 0, &set);
	if (j->nic.rate > 0)
		snprintf(dsrc, sizeof(dsrc), "topology: port rate %g Gb/s x %g%%", j->nic.rate,
			 frac * 100);
	else
		snprintf(dsrc, sizeof(dsrc), "port rate unknown");
	want = pn_check_expect(c, "nic-bw", j->nic.name, "nic-bw.min-gbps",
			       j->nic.rate > 0 ? j->nic.rate * frac : NAN, dsrc, src, sizeof(src));
	v.measured = PN_VNUM(got);
	snprintf(detail, sizeof(detail), "%s; %s", how, j->mem);
	v.detail = detail;
	v.source = src;
	if (!isfinite(want)) {
		snprintf(detail, sizeof(detail), "the port's rate is unknown: set nic-bw.min-gbps "
						 "(%s; %s)", how, j->mem);
		v.verdict = PN_SKIP;
		pn_check_add(c, &v);
		return;
	}
	v.expected = PN_VNUM(want);
	v.verdict = pn_bw_meets(got, want) ? PN_PASS : PN_FAIL;
	if (v.verdict == PN_FAIL)
		snprintf(detail, sizeof(detail), "%.3g Gb/s is below %.3g Gb/s (%s); %s; %s", got,
			 want, src, how, j->mem);
	pn_check_add(c, &v);
}

static int nicbw_alone(struct pn_check *c, struct pn_netnic *nics, int n)
{
	struct nbjob *jobs = calloc((size_t)n, sizeof(*jobs));
	struct pn_bw_cfg cfg;
	int which[PN_NET_MAX], i;

	if (!jobs)
		return pn_err(-ENOMEM, "out of memory");
	nb_cfg(c, &cfg);
	for (i = 0; i < n; i++) {
		jobs[i].c = c;
		jobs[i].nic = nics[i];
		jobs[i].cfg = &cfg;
		which[i] = nics[i].usable;
	}
	pn_check_progress(c, "nic-bw", "%d NIC%s in loopback, %g s", n, n == 1 ? "" : "s",
			  cfg.duration);
	nb_threads(jobs, n, nb_loop_thread, which);
	for (i = 0; i < n; i++) {
		char how[120];

		snprintf(how, sizeof(how), "loopback on %s (the NIC and its PCIe path, not the cable)",
			 jobs[i].nic.dev);
		nb_result(c, &jobs[i], how);
		nb_close(&jobs[i]);
	}
	free(jobs);
	return 0;
}

/* What each rank tells the others in a round of nic-bw. */
struct nb_wire_nic {
	char name[80];
	int32_t ok;
	int32_t reserved;
	double rate;
	struct pn_verbs_info info;
};

struct nb_wire {
	uint32_t magic;
	int32_t leader, node, nnics;
	char host[64];
	struct nb_wire_nic nic[PN_NET_MAX];
};

/* The partner's wire (its node leader's) in all, its rank in *rank; NULL none. */
static const struct nb_wire *nb_find(const struct nb_wire *all, int nranks, int node, int *rank)
{
	int r;

	for (r = 0; r < nranks; r++)
		if (all[r].magic == PN_NET_WIRE_MAGIC && all[r].leader && all[r].node == node) {
			*rank = r;
			return &all[r];
		}
	return NULL;
}

static int nicbw_round(struct pn_check *c, struct pn_netnic *nics, int n, int round,
		       const struct pn_bw_cfg *cfg, struct nb_wire *all, struct nbjob *jobs)
{
	int partner = c->node_leader ? pn_nicbw_partner(c->nnodes, round, c->node_index) : -1;
	int report = partner >= 0 && pn_nicbw_report_round(c->nnodes, c->node_index) == round;
	struct nb_wire me;
	const struct nb_wire *peer = NULL;
	int i, d, ret, prank = -1, which[PN_NET_MAX] = { 0 };

	memset(&me, 0, sizeof(me));
	memset(jobs, 0, sizeof(*jobs) * PN_NET_MAX);
	me.magic = PN_NET_WIRE_MAGIC;
	me.leader = c->node_leader;
	me.node = c->node_index;
	snprintf(me.host, sizeof(me.host), "%s", c->node);
	if (partner >= 0) {
		me.nnics = n;
		for (i = 0; i < n; i++) {
			struct nbjob *j = &jobs[i];

			j->c = c;
			j->nic = nics[i];
			j->cfg = cfg;
			snprintf(me.nic[i].name, sizeof(me.nic[i].name), "%s", nics[i].name);
			me.nic[i].rate = nics[i].rate;
			if (!nics[i].usable)
				continue;
			ret = nb_side(j, &j->dev, &j->conn);
			if (!ret)
				ret = nb_buffer(j);
			if (!ret)
				ret = nb_expose(j);
			if (ret) {
				nb_fail(j, ret);
				continue;
			}
			pn_verbs_conn_info(j->conn, &me.nic[i].info);
			me.nic[i].ok = 1;
		}
	}
	ret = pn_boot_allgather(c->boot, &me, all, sizeof(me));
	if (ret)
		return ret;
	for (i = 0; i < c->nranks; i++)	/* the details name a peer's node whole */
		all[i].host[sizeof(all[i].host) - 1] = 0;
	if (partner >= 0)
		peer = nb_find(all, c->nranks, partner, &prank);
	for (i = 0; peer && i < n; i++) {
		struct nbjob *j = &jobs[i];

		if (!me.nic[i].ok)
			continue;
		if (i >= peer->nnics || !peer->nic[i].ok) {
			snprintf(j->err, sizeof(j->err), "its peer %s NIC%d cannot run", peer->host,
				 i);
			continue;
		}
		ret = pn_verbs_conn_connect(j->conn, &peer->nic[i].info);
		/* the partner's process gone (its rendezvous connection closed)
		 * ends a wait on its QPs at once, as in penny bw: a killed peer's
		 * QPs answer until its kernel tears them down, and soft-RoCE
		 * retries towards a dead one forever.  A pair without rank 0 has
		 * no such connection: it waits out its drain bound. */
		pn_verbs_conn_watch(j->conn, pn_boot_peer_fd(c->boot, prank));
		j->link.peer = peer->host;
		if (!ret)
			ret = pn_bw_prepare(&j->link);
		if (ret)
			nb_fail(j, ret);
		else
			j->connected = 1;
	}
	/* every rank connected before anyone sends; then each side in turn */
	for (d = 0; d < 2; d++) {
		int sender = partner >= 0 &&
			     c->node_index == (d == 0 ? PN_MIN(partner, c->node_index)
						      : PN_MAX(partner, c->node_index));

		ret = pn_boot_barrier(c->boot);
		if (ret)
			return ret;
		if (sender) {
			for (i = 0; i < n; i++)
				which[i] = jobs[i].connected;
			pn_check_progress(c, "nic-bw", "round %d: %s sends to %s", round + 1, c->node,
					  peer ? peer->host : "?");
			nb_threads(jobs, n, nb_send_thread, which);
		}
	}
	ret = pn_boot_barrier(c->boot);
	for (i = 0; report && i < n; i++) {
		char how[160];

		if (!jobs[i].connected && !jobs[i].ret && nics[i].usable) {
			struct pn_verdict_in v = { .check = "nic-bw", .target = nics[i].name,
						   .verdict = PN_SKIP, .detail = jobs[i].err };

			if (!jobs[i].err[0])
				snprintf(jobs[i].err, sizeof(jobs[i].err), "no peer NIC%d on %s", i,
					 peer ? peer->host : "the partner node");
			pn_check_add(c, &v);
			continue;
		}
		snprintf(how, sizeof(how), "sent to %s %.70s", peer ? peer->host : "?",
			 peer && i < peer->nnics ? peer->nic[i].name : "?");
		nb_result(c, &jobs[i], how);
	}
	for (i = 0; i < n; i++)
		nb_close(&jobs[i]);
	return ret;
}

int pn_check_nicbw(struct pn_check *c)
{
	struct pn_netnic nics[PN_NET_MAX];
	struct pn_bw_cfg cfg;
	struct nb_wire *all = NULL;
	struct nbjob *jobs = NULL;
	int n = 0, ret = 0, r;

	if (c->node_leader) {
		int left = 0;

		n = pn_checknet_nics(c, nics, PN_NET_MAX, &left);
		if (n < 0)
			return n;
		if (left > 0) {
			char why[160];
			struct pn_verdict_in v = { .check = "nic-bw", .target = "NICs",
						   .verdict = PN_SKIP, .detail = why };

			snprintf(why, sizeof(why), "%d more NIC port%s not checked: nic-bw takes the "
				 "first %d of a node (choose them with -d)", left, left == 1 ? "" : "s",
				 PN_NET_MAX);
			pn_check_add(c, &v);
		}
		if (!n) {
			struct pn_verdict_in v = { .check = "nic-bw", .target = "NICs",
						   .verdict = PN_SKIP,
						   .detail = "no RDMA device on this node" };

			pn_check_add(c, &v);
		}
	}
	if (!pn_sysfs_is_live()) {
		/* a captured or synthetic tree: its ports are judged, nothing is measured */
		for (r = 0; r < n; r++) {
			struct pn_verdict_in v = { .check = "nic-bw", .target = nics[r].name,
						   .verdict = nics[r].usable ? PN_SKIP : PN_FAIL,
						   .detail = nics[r].usable ? "not measured: the sysfs "
						   "root is a captured tree" : nics[r].why };

			pn_check_add(c, &v);
		}
		return 0;
	}
	if (!c->boot || c->nnodes < 2)
		return c->node_leader && n ? nicbw_alone(c, nics, n) : 0;
	nb_cfg(c, &cfg);
	all = calloc((size_t)c->nranks, sizeof(*all));
	jobs = calloc(PN_NET_MAX, sizeof(*jobs));
	if (!all || !jobs) {
		free(all);
		free(jobs);
		return pn_err(-ENOMEM, "out of memory");
	}
	for (r = 0; r < pn_nicbw_rounds(c->nnodes) && !ret; r++)
		ret = nicbw_round(c, nics, n, r, &cfg, all, jobs);
	free(all);
	free(jobs);
	return ret;
}
