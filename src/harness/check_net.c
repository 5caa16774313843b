/* SPDX-License-Identifier: MIT */
/*
 * penny check's network checks: nic-bw (every NIC's RDMA write bandwidth at
 * once, in loopback alone, paired per rail across nodes under a launcher)
 * and rails (an allreduce over a ring plan with every NIC's byte counters
 * read before and after: the plan's NICs carried the traffic, the others
 * did not, nothing crossed rails).  The pure parts are in check_net.h.
 */
#define _GNU_SOURCE
#include "harness/check_net.h"
#include "harness/check.h"
#include "harness/check_cfg.h"

#include "base/file.h"
#include "base/log.h"
#include "base/out.h"
#include "base/util.h"
#include "base/verdict.h"
#include "engine/boot.h"
#include "engine/coll.h"
#include "engine/comm.h"
#include "gpu/gpumem.h"
#include "harness/bwtest.h"
#include "harness/plansched.h"
#include "node/counters.h"
#include "node/nic.h"
#include "node/nodectx.h"
#include "node/sysfs.h"
#include "node/topo.h"
#include "plan/plan.h"
#include "plan/plan_job.h"
#include "plan/topo_json.h"
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

#define NET_MAX 16		/* NIC ports per node the network checks handle */
#define WIRE_MAGIC 0x504e4331u	/* "PNC1" */

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

void pn_rails_judge(const struct pn_rails_nic *nics, int n, const struct pn_rails_hop *hops,
		    int nhops, uint64_t noise, struct pn_rails_judged *out)
{
	int i, h, rail, maxrail = -1;

	for (i = 0; i < n; i++) {
		const struct pn_rails_nic *x = &nics[i];
		uint64_t moved = x->tx + x->rx;

		out[i].why = !x->valid ? PN_RAILS_UNREAD
			     : x->planned && moved <= noise ? PN_RAILS_IDLE
			     : !x->planned && moved > noise ? PN_RAILS_UNPLANNED
			     : PN_RAILS_OK;
		out[i].peer = -1;
		out[i].lost = 0;
		maxrail = PN_MAX(maxrail, x->rail);
	}
	/* a planned hop between rails moved its sender's bytes to the other rail */
	for (h = 0; h < nhops; h++) {
		int f = hops[h].from, t = hops[h].to;

		if (f < 0 || f >= n || t < 0 || t >= n || nics[f].rail < 0 || nics[t].rail < 0 ||
		    nics[f].rail == nics[t].rail || !nics[f].valid || nics[f].tx <= noise)
			continue;
		out[f].why = PN_RAILS_CROSSED;
		out[f].peer = t;
		out[f].lost = nics[f].tx;
	}
	for (rail = 0; rail <= maxrail; rail++) {
		uint64_t tx = 0, rx = 0, tol;
		int nrail = 0, explained = 0, all_valid = 1;

		for (i = 0; i < n; i++)
			if (nics[i].rail == rail) {
				tx += nics[i].tx;
				rx += nics[i].rx;
				nrail++;
				all_valid &= nics[i].valid;
			}
		tol = noise * (uint64_t)nrail + tx / 50;
		if (!nrail || !all_valid || tx <= rx + tol)
			continue;
		/* rail lost tx - rx bytes: explained by a crossing hop above, or named here */
		for (i = 0; i < n; i++)
			explained |= nics[i].rail == rail && out[i].why == PN_RAILS_CROSSED;
		for (i = 0; i < n && !explained; i++)
			if (nics[i].rail == rail && nics[i].tx > noise) {
				out[i].why = PN_RAILS_CROSSED;
				out[i].lost = tx - rx;
			}
	}
}

/* ------------------------------------------------------------- helpers */

static double cfgnum(const struct pn_check *c, const char *key, double dflt, int *set)
{
	double v = dflt;
	int r = c->cfg ? pn_check_cfg_num(c->cfg, key, &v) : -EINVAL;

	if (set)
		*set = r == 1;
	return r < 0 ? dflt : v;
}

static void add(struct pn_check *c, const struct pn_verdict_in *in)
{
	pn_check_add(c, in);
}

/* One NIC port of this node. */
struct netnic {
	char dev[64];
	int port;
	char name[80];		/* "rxe0/1" */
	int rail;
	int numa;
	int gpu;		/* nearest GPU index, -1 */
	double rate;
	int usable;		/* port ACTIVE */
	char why[160];		/* why not */
};

static void nic_fill(struct netnic *n, const char *dev, int port, int rail)
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

/*
 * This node's NIC ports, in rail order: the -d list as given, else the
 * topology's NICs (NIC<k> is rail k), else every RDMA device.
 */
static int node_nics(const struct pn_check *c, struct netnic *out, int max)
{
	struct pn_nodectx ctx;
	int n = 0, i;

	memset(&ctx, 0, sizeof(ctx));
	if (c->devspec && c->devspec[0]) {
		char *dup = strdup(c->devspec), *tok, *save = NULL;

		if (!dup)
			return pn_err(-ENOMEM, "out of memory");
		for (tok = strtok_r(dup, ",", &save); tok && n < max; tok = strtok_r(NULL, ",", &save)) {
			char *colon = strchr(tok, ':');
			int port = 0;

			if (colon) {
				*colon = 0;
				if (pn_parse_int(colon + 1, &port) || port < 1 || port > 255)
					port = 1;
			}
			nic_fill(&out[n], tok, port, n);
			n++;
		}
		free(dup);
	} else if (c->topo && c->topo->nnics) {
		for (i = 0; i < c->topo->nnics && n < max; i++) {
			const struct pn_topo_dev *d = &c->topo->devs[c->topo->ngpus + i];

			if (!d->nic.name[0])
				continue;
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
	return n;
}

/* ------------------------------------------------------------- nic-bw */

/* One NIC's measurement: its device, connection(s), buffer and row. */
struct nbjob {
	const struct pn_check *c;
	struct netnic nic;
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
	cc.timeout = j->c->timeout > 0 ? j->c->timeout : 30;
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
	if (!ret)
		ret = pn_bw_run(&j->link, 0, &j->row);
	if (ret)
		nb_fail(j, ret);
	else
		j->measured = 1;
	return NULL;
}

/* The sending side of a launcher round (connected before). */
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

static void nb_threads(struct nbjob *jobs, int n, void *(*fn)(void *), const int *which)
{
	pthread_t th[NET_MAX];
	int started[NET_MAX] = { 0 }, i;

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
	double secs = cfgnum(c, "nic-bw.seconds", 2, NULL);

	pn_bw_cfg_init(cfg);
	cfg->op = PN_VERBS_WRITE;
	cfg->nqp = 4;
	cfg->nsizes = 1;
	cfg->sizes[0] = (uint64_t)cfgnum(c, "nic-bw.size", 1 << 20, NULL);
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
	double frac = cfgnum(c, "nic-bw.fraction", 0.9, NULL), want, got = j->row.avg_gbps;
	int set;

	v.seconds = j->row.seconds;
	if (!j->nic.usable) {
		v.verdict = PN_FAIL;
		v.detail = j->nic.why;
		add(c, &v);
		return;
	}
	if (!j->measured) {
		snprintf(detail, sizeof(detail), "could not measure: %s", j->err[0] ? j->err : "?");
		v.verdict = PN_FAIL;
		v.detail = detail;
		add(c, &v);
		return;
	}
	cfgnum(c, "nic-bw.min-gbps", 0, &set);
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
		add(c, &v);
		return;
	}
	v.expected = PN_VNUM(want);
	v.verdict = got >= want ? PN_PASS : PN_FAIL;
	if (v.verdict == PN_FAIL)
		snprintf(detail, sizeof(detail), "%.1f Gb/s is below %.1f Gb/s (%s); %s; %s", got,
			 want, src, how, j->mem);
	add(c, &v);
}

static int nicbw_alone(struct pn_check *c, struct netnic *nics, int n)
{
	struct nbjob *jobs = calloc((size_t)n, sizeof(*jobs));
	struct pn_bw_cfg cfg;
	int which[NET_MAX], i;

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
	struct nb_wire_nic nic[NET_MAX];
};

/* The partner's wire (its node leader's) in all, NULL none. */
static const struct nb_wire *nb_find(const struct nb_wire *all, int nranks, int node)
{
	int r;

	for (r = 0; r < nranks; r++)
		if (all[r].magic == WIRE_MAGIC && all[r].leader && all[r].node == node)
			return &all[r];
	return NULL;
}

static int nicbw_round(struct pn_check *c, struct netnic *nics, int n, int round,
		       const struct pn_bw_cfg *cfg, struct nb_wire *all, struct nbjob *jobs)
{
	int partner = c->node_leader ? pn_nicbw_partner(c->nnodes, round, c->node_index) : -1;
	int report = partner >= 0 && pn_nicbw_report_round(c->nnodes, c->node_index) == round;
	struct nb_wire me;
	const struct nb_wire *peer = NULL;
	int i, d, ret, which[NET_MAX] = { 0 };

	memset(&me, 0, sizeof(me));
	memset(jobs, 0, sizeof(*jobs) * NET_MAX);
	me.magic = WIRE_MAGIC;
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
	if (partner >= 0)
		peer = nb_find(all, c->nranks, partner);
	for (i = 0; peer && i < n; i++) {
		struct nbjob *j = &jobs[i];

		if (!me.nic[i].ok)
			continue;
		if (i >= peer->nnics || !peer->nic[i].ok) {
			snprintf(j->err, sizeof(j->err), "its peer %.60s NIC%d cannot run", peer->host, i);
			continue;
		}
		ret = pn_verbs_conn_connect(j->conn, &peer->nic[i].info);
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
				snprintf(jobs[i].err, sizeof(jobs[i].err), "no peer NIC%d on %.60s", i,
					 peer ? peer->host : "the partner node");
			add(c, &v);
			continue;
		}
		snprintf(how, sizeof(how), "sent to %.60s %.70s", peer ? peer->host : "?",
			 peer && i < peer->nnics ? peer->nic[i].name : "?");
		nb_result(c, &jobs[i], how);
	}
	for (i = 0; i < n; i++)
		nb_close(&jobs[i]);
	return ret;
}

int pn_check_nicbw(struct pn_check *c)
{
	struct netnic nics[NET_MAX];
	struct pn_bw_cfg cfg;
	struct nb_wire *all = NULL;
	struct nbjob *jobs = NULL;
	int n = 0, ret = 0, r;

	if (c->node_leader) {
		n = node_nics(c, nics, NET_MAX);
		if (n < 0)
			return n;
		if (!n) {
			struct pn_verdict_in v = { .check = "nic-bw", .target = "NICs",
						   .verdict = PN_SKIP,
						   .detail = "no RDMA device on this node" };

			add(c, &v);
		}
	}
	if (!pn_sysfs_is_live()) {
		/* a captured or synthetic tree: its ports are judged, nothing is measured */
		for (r = 0; r < n; r++) {
			struct pn_verdict_in v = { .check = "nic-bw", .target = nics[r].name,
						   .verdict = nics[r].usable ? PN_SKIP : PN_FAIL,
						   .detail = nics[r].usable ? "not measured: the sysfs "
						   "root is a captured tree" : nics[r].why };

			add(c, &v);
		}
		return 0;
	}
	if (!c->boot || c->nnodes < 2)
		return c->node_leader && n ? nicbw_alone(c, nics, n) : 0;
	nb_cfg(c, &cfg);
	all = calloc((size_t)c->nranks, sizeof(*all));
	jobs = calloc(NET_MAX, sizeof(*jobs));
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

/* -------------------------------------------------------------- rails */

/* Every rank's NICs and their counters, for the job-wide judgement. */
struct rl_wire_nic {
	char name[80];
	int32_t rail, valid;
	uint64_t tx, rx;
};

struct rl_wire {
	uint32_t magic;
	int32_t leader, node, nnics;
	char host[64];
	struct rl_wire_nic nic[NET_MAX];
};

/* A planned inter-node connection by node and NIC name. */
struct rl_hop {
	int from_node, to_node;
	char from[80], to[80];
};

/* "dev:port" (the plan's) as "dev/port" (the counters'). */
static void port_name(const char *spec, char *out, size_t len)
{
	const char *colon = strrchr(spec, ':');

	if (colon)
		snprintf(out, len, "%.*s/%s", (int)(colon - spec), spec, colon + 1);
	else
		snprintf(out, len, "%s/1", spec);
}

/* The plan's inter-node connections, in ring order. */
static int rails_hops(const struct pn_plan_job *m, struct rl_hop **out, int *nout)
{
	struct rl_hop *h = NULL;
	int ring, i, n = 0, cap = 0, ret;

	for (ring = 0; ring < m->nrings; ring++)
		for (i = 0; i < m->nranks; i++) {
			int r = m->rings[ring][i], nx = m->rings[ring][(i + 1) % m->nranks];
			char s[80], t[80];

			if (m->rank_node[r] == m->rank_node[nx])
				continue;
			ret = pn_plan_job_nic(m, r, nx, ring, s, sizeof(s));
			if (ret == 1)
				ret = pn_plan_job_nic(m, nx, r, ring, t, sizeof(t));
			if (ret < 0) {
				free(h);
				return ret;
			}
			if (ret != 1)
				continue;
			if (n == cap) {
				struct rl_hop *g = realloc(h, (size_t)(cap = cap ? 2 * cap : 16) * sizeof(*h));

				if (!g) {
					free(h);
					return pn_err(-ENOMEM, "out of memory");
				}
				h = g;
			}
			h[n].from_node = m->rank_node[r];
			h[n].to_node = m->rank_node[nx];
			port_name(s, h[n].from, sizeof(h[n].from));
			port_name(t, h[n].to, sizeof(h[n].to));
			n++;
		}
	*out = h;
	*nout = n;
	return 0;
}

/* Leaders' topology documents gathered; every rank plans the same rings. */
static int rails_build(struct pn_check *c, struct pn_planned *pl)
{
	char *text = NULL, *all = NULL;
	size_t tlen = 0;
	uint64_t mine[2], *lens = NULL, max = 0;
	int r, k, ret;
	struct pn_plan_opts o = { 0 };

	if (c->node_leader && c->topo) {
		FILE *f = open_memstream(&text, &tlen);
		struct pn_out *out = f ? pn_out_new(f, 1) : NULL;

		if (out) {
			pn_topo_write(out, c->topo, 0, NULL, 0, 0);
			pn_out_free(out);
		}
		if (f)
			fclose(f);
		if (!out) {
			free(text);
			text = NULL;
			tlen = 0;
		}
	}
	mine[0] = c->node_leader ? (uint64_t)tlen : 0;
	mine[1] = (uint64_t)c->node_index;
	lens = calloc((size_t)c->nranks, sizeof(mine));
	if (!lens) {
		free(text);
		return pn_err(-ENOMEM, "out of memory");
	}
	ret = pn_boot_allgather(c->boot, mine, lens, sizeof(mine));
	for (r = 0; !ret && r < c->nranks; r++)
		max = PN_MAX(max, lens[2 * r]);
	if (!ret && (max == 0 || max * (uint64_t)c->nranks > (32u << 20)))
		ret = pn_err(-ENOTSUP, max ? "the topologies are too large to gather: give --plan FILE"
					   : "no node has a topology to plan with: give --plan FILE");
	all = ret ? NULL : calloc((size_t)c->nranks, (size_t)max);
	if (!ret && !all)
		ret = pn_err(-ENOMEM, "out of memory");
	if (!ret) {
		char *pad = calloc(1, (size_t)max);

		if (!pad)
			ret = pn_err(-ENOMEM, "out of memory");
		else {
			if (text)
				memcpy(pad, text, tlen);
			ret = pn_boot_allgather(c->boot, pad, all, (size_t)max);
			free(pad);
		}
	}
	for (k = 0; !ret && k < c->nnodes; k++) {
		for (r = 0; r < c->nranks; r++)
			if (lens[2 * r] && (int)lens[2 * r + 1] == k)
				break;
		if (r == c->nranks) {
			for (r = 0; r < c->nranks && pn_boot_node(c->boot, r) != k; r++)
				;
			ret = pn_err(-ENOTSUP, "node %s has no topology to plan with: give --plan FILE",
				     r < c->nranks ? pn_boot_node_name(c->boot, r) : "?");
			break;
		}
		ret = pn_plan_model_add_topo(&pl->model, all + (size_t)r * max, lens[2 * r],
					     pn_boot_node_name(c->boot, r));
		/* the job's node name, not the host in the document (one host, several nodes) */
		if (!ret)
			snprintf(pl->model.nodes[pl->model.nnodes - 1].host, PN_PLAN_NAME, "%s",
				 pn_boot_node_name(c->boot, r));
		else
			ret = pn_err_ctx(-ENOTSUP, "no plan from %s's topology",
					 pn_boot_node_name(c->boot, r));
	}
	if (!ret)
		ret = pn_plan_model_finish(&pl->model);
	if (!ret)
		ret = pn_plan_build(&pl->plan, &pl->model, &o);
	if (ret && ret != -ENOMEM && ret != -ENOTSUP)
		ret = pn_err_ctx(-ENOTSUP, "no ring plan from the nodes' topologies (give --plan "
				 "FILE)");
	free(text);
	free(all);
	free(lens);
	return ret;
}

/*
 * The plan: --plan FILE as given (its validator's findings become a note:
 * the counters judge what it does), else planned from the gathered
 * topologies; placed on the job.  -ENOTSUP: the check cannot run here.
 */
static int rails_plan(struct pn_check *c, struct pn_planned *pl, char *note, size_t len)
{
	struct pn_plan_msgs viol = { 0 };
	int *node = calloc((size_t)c->nranks, sizeof(int));
	const char **names = calloc((size_t)c->nranks, sizeof(char *));
	char *text = NULL;
	size_t tlen = 0;
	int r, ret;

	note[0] = 0;
	pn_plan_model_init(&pl->model);
	pn_plan_init(&pl->plan, &pl->model);
	pl->rank = c->rank;
	if (!node || !names) {
		ret = pn_err(-ENOMEM, "out of memory");
		goto out;
	}
	if (c->plan_path) {
		ret = pn_file_read(c->plan_path, &text, &tlen);
		if (!ret)
			ret = pn_plan_load_json(&pl->plan, &pl->model, NULL, text, tlen, &viol);
		if (ret < 0) {
			ret = ret == -ENOMEM ? ret : pn_err_ctx(-EINVAL, "plan '%s'", c->plan_path);
			goto out;
		}
		if (ret > 0 || viol.dropped)
			snprintf(note, len, "plan %s (%d violation%s: run as given)", c->plan_path,
				 viol.n + viol.dropped, viol.n + viol.dropped == 1 ? "" : "s");
		else
			snprintf(note, len, "plan %s", c->plan_path);
	} else {
		/* every rank takes part in the gathering; an error is agreed below */
		ret = rails_build(c, pl);
		if (ret)
			goto out;
		snprintf(note, len, "plan built from the nodes' topologies");
	}
	for (r = 0; r < c->nranks; r++) {
		node[r] = pn_boot_node(c->boot, r);
		if (!names[node[r]])
			names[node[r]] = pn_boot_node_name(c->boot, r);
	}
	ret = pn_plan_job_map(&pl->map, &pl->plan, c->nranks, node, c->nnodes, names);
	if (ret)
		ret = pn_err_ctx(-ENOTSUP, "rails runs one rank per GPU of the plan");
out:
	pn_plan_msgs_release(&viol);
	free(text);
	free(node);
	free(names);
	return ret;
}

/* The planned allreduce (multiring, one channel per ring, the plan's NICs). */
static int rails_allreduce(struct pn_check *c, struct pn_planned *pl, size_t bytes, int iters)
{
	struct pn_comm_cfg cc = { .nchannels = PN_MAX(1, pl->map.nrings),
				  .verbs_port = pn_planned_port, .verbs_port_arg = pl };
	struct pn_comm *comm = NULL;
	struct pn_coll co;
	size_t count = PN_MAX((size_t)1, bytes / sizeof(float));
	float *a = calloc(count, sizeof(float)), *b = calloc(count, sizeof(float));
	int i, ret;

	memset(&co, 0, sizeof(co));
	ret = a && b ? 0 : pn_err(-ENOMEM, "out of memory");
	if (!ret)
		ret = pn_comm_init(&comm, c->boot, &cc);
	if (!ret)
		ret = pn_coll_init(&co, comm);
	if (!ret)
		ret = pn_coll_set_rings(&co, pl->map.nrings, (const int *const *)pl->map.rings);
	for (i = 0; !ret && i < iters; i++)
		ret = pn_allreduce(&co, a, b, count, PN_FLOAT, PN_SUM, PN_ALGO_MULTIRING, NULL, NULL);
	/* every rank done (or failed) before any closes its connections: a
	 * socket closed with the peer's last bytes unread resets the peer's */
	ret = pn_boot_agree_err(c->boot, ret, 1, NULL);
	if (co.comm)
		pn_coll_release(&co);
	pn_comm_free(comm);
	free(a);
	free(b);
	return ret;
}

static struct pn_counters_port *find_port(struct pn_counters_set *s, const char *name)
{
	int i;

	for (i = 0; i < s->n; i++)
		if (s->ports[i].type == PN_PT_RDMA && !strcmp(s->ports[i].name, name))
			return &s->ports[i];
	return NULL;
}

static int ctr_delta(const struct pn_counters_port *p, int kind, uint64_t *v)
{
	const struct pn_counter *k;

	if (p->ix[kind] < 0)
		return 0;
	k = &p->ctr[p->ix[kind]];
	if (!(k->flags & PN_CF_DELTA) || (k->flags & PN_CF_SAT))
		return 0;
	*v = k->delta;
	return 1;
}

/* This leader's NICs as the wire carries them: the node's, then the planned ones it lacks. */
static int rails_mine(struct pn_check *c, const struct rl_hop *hops, int nhops, struct rl_wire *w)
{
	struct netnic nics[NET_MAX];
	int n = node_nics(c, nics, NET_MAX), h, i;

	if (n < 0)
		return n;
	for (i = 0; i < n; i++) {
		snprintf(w->nic[i].name, sizeof(w->nic[i].name), "%s", nics[i].name);
		w->nic[i].rail = nics[i].rail;
	}
	for (h = 0; h < 2 * nhops && n < NET_MAX; h++) {
		const char *name = h % 2 ? hops[h / 2].to : hops[h / 2].from;
		int node = h % 2 ? hops[h / 2].to_node : hops[h / 2].from_node;

		if (node != c->node_index)
			continue;
		for (i = 0; i < n && strcmp(w->nic[i].name, name); i++)
			;
		if (i < n)
			continue;
		snprintf(w->nic[n].name, sizeof(w->nic[n].name), "%s", name);
		w->nic[n].rail = -1;
		n++;
	}
	w->nnics = n;
	return 0;
}

static void rails_result(struct pn_check *c, const struct pn_rails_nic *x,
			 const struct pn_rails_judged *j, const struct pn_rails_nic *all,
			 const struct rl_wire *const *leader, uint64_t noise, const char *note)
{
	struct pn_verdict_in v = { .check = "rails", .target = x->name,
				   .unit = "B", .source = note };
	char detail[PN_VERDICT_DETAIL], exp[64];
	uint64_t moved = x->tx + x->rx;

	v.measured = PN_VNUM((double)moved);
	snprintf(exp, sizeof(exp), x->planned ? "> %llu (planned)" : "<= %llu (not planned)",
		 (unsigned long long)noise);
	v.expected = PN_VTEXT(exp);
	v.detail = detail;
	switch (j->why) {
	case PN_RAILS_UNREAD:
		/* a planned NIC the node does not have fails; unreadable counters cannot judge */
		v.verdict = x->rail < 0 ? PN_FAIL : PN_SKIP;
		v.measured = PN_VTEXT("n/a");
		snprintf(detail, sizeof(detail), x->rail < 0 ? "the plan uses %s, which is not among "
			 "this node's NICs" : "%s: byte counters not readable", x->name);
		break;
	case PN_RAILS_IDLE:
		v.verdict = PN_FAIL;
		snprintf(detail, sizeof(detail), "planned NIC carried nothing: tx %llu B, rx %llu B "
			 "(rails.noise-bytes %llu)", (unsigned long long)x->tx,
			 (unsigned long long)x->rx, (unsigned long long)noise);
		break;
	case PN_RAILS_UNPLANNED:
		v.verdict = PN_FAIL;
		snprintf(detail, sizeof(detail), "carried bytes outside the plan: tx %llu B, rx %llu B "
			 "(more than rails.noise-bytes %llu)", (unsigned long long)x->tx,
			 (unsigned long long)x->rx, (unsigned long long)noise);
		break;
	case PN_RAILS_CROSSED:
		v.verdict = PN_FAIL;
		if (j->peer >= 0)
			snprintf(detail, sizeof(detail), "bytes crossed rails: %llu B sent from rail %d "
				 "through the plan's hop to %.40s %.40s on rail %d",
				 (unsigned long long)j->lost, x->rail,
				 leader[all[j->peer].node] ? leader[all[j->peer].node]->host : "?",
				 all[j->peer].name, all[j->peer].rail);
		else
			snprintf(detail, sizeof(detail), "bytes crossed rails: rail %d's NICs sent %llu B "
				 "more than they received, no planned hop explains it (cabling or "
				 "routing); this NIC sent %llu B", x->rail, (unsigned long long)j->lost,
				 (unsigned long long)x->tx);
		break;
	default:
		v.verdict = PN_PASS;
		snprintf(detail, sizeof(detail), "rail %d, %s: tx %llu B, rx %llu B", x->rail,
			 x->planned ? "planned" : "not planned", (unsigned long long)x->tx,
			 (unsigned long long)x->rx);
	}
	add(c, &v);
}

/* Every leader: the job's NICs from the gathered wires, the hops by index, the verdicts. */
static int rails_judge(struct pn_check *c, const struct rl_wire *all, const struct rl_hop *hops,
		       int nhops, uint64_t noise, const char *note)
{
	const struct rl_wire **leader = calloc((size_t)c->nnodes, sizeof(*leader));
	struct pn_rails_nic *nics = calloc((size_t)c->nnodes * NET_MAX, sizeof(*nics));
	struct pn_rails_judged *out = calloc((size_t)c->nnodes * NET_MAX, sizeof(*out));
	struct pn_rails_hop *hx = calloc((size_t)nhops + 1, sizeof(*hx));
	int *first = calloc((size_t)c->nnodes + 1, sizeof(int));
	int r, i, k, h, n = 0, ret = 0;

	if (!leader || !nics || !out || !hx || !first) {
		ret = pn_err(-ENOMEM, "out of memory");
		goto out;
	}
	for (r = 0; r < c->nranks; r++)
		if (all[r].magic == WIRE_MAGIC && all[r].leader && all[r].node >= 0 &&
		    all[r].node < c->nnodes)
			leader[all[r].node] = &all[r];
	for (k = 0; k < c->nnodes; k++) {
		first[k] = n;
		for (i = 0; leader[k] && i < leader[k]->nnics && i < NET_MAX; i++, n++) {
			const struct rl_wire_nic *w = &leader[k]->nic[i];

			nics[n].node = k;
			snprintf(nics[n].name, sizeof(nics[n].name), "%s", w->name);
			nics[n].rail = w->rail;
			nics[n].valid = w->valid;
			nics[n].tx = w->tx;
			nics[n].rx = w->rx;
		}
	}
	first[c->nnodes] = n;
	for (h = 0; h < nhops; h++) {
		hx[h].from = hx[h].to = -1;
		for (i = first[hops[h].from_node]; i < first[hops[h].from_node + 1]; i++)
			if (!strcmp(nics[i].name, hops[h].from))
				hx[h].from = i;
		for (i = first[hops[h].to_node]; i < first[hops[h].to_node + 1]; i++)
			if (!strcmp(nics[i].name, hops[h].to))
				hx[h].to = i;
		if (hx[h].from >= 0)
			nics[hx[h].from].planned = 1;
		if (hx[h].to >= 0)
			nics[hx[h].to].planned = 1;
	}
	pn_rails_judge(nics, n, hx, nhops, noise, out);
	for (i = first[c->node_index]; i < first[c->node_index + 1]; i++)
		rails_result(c, &nics[i], &out[i], nics, leader, noise, note);
out:
	free(leader);
	free(nics);
	free(out);
	free(hx);
	free(first);
	return ret;
}

static void rails_job_result(struct pn_check *c, enum pn_verdict v, const char *why)
{
	struct pn_verdict_in in = { .check = "rails", .target = "plan", .verdict = v, .detail = why };

	if (c->node_leader)
		add(c, &in);
}

int pn_check_rails(struct pn_check *c)
{
	struct pn_planned *pl = NULL;
	struct pn_counters_set set;
	struct pn_counters_cfg ccfg;
	struct rl_hop *hops = NULL;
	struct rl_wire me, *all = NULL;
	char note[PN_VERDICT_SOURCE], why[PN_VERDICT_DETAIL];
	uint64_t noise = (uint64_t)cfgnum(c, "rails.noise-bytes", 1 << 20, NULL);
	size_t bytes = (size_t)cfgnum(c, "rails.size", 16 << 20, NULL);
	int nhops = 0, ret, code, first, have_set = 0, i;

	if (!c->boot || c->nnodes < 2) {
		rails_job_result(c, PN_SKIP, "needs at least 2 nodes under a launcher (one rank per "
					     "GPU of the ring plan)");
		return 0;
	}
	if (!pn_sysfs_is_live()) {
		rails_job_result(c, PN_SKIP, "not run: the sysfs root is a captured tree");
		return 0;
	}
	if (c->quick)
		bytes = PN_MAX((size_t)4096, bytes / 4);
	memset(&me, 0, sizeof(me));
	memset(&set, 0, sizeof(set));
	pl = calloc(1, sizeof(*pl));
	if (!pl)
		return pn_err(-ENOMEM, "out of memory");
	pn_check_progress(c, "rails", "placing the ring plan on %d ranks", c->nranks);
	code = rails_plan(c, pl, note, sizeof(note));
	if (!code)
		code = rails_hops(&pl->map, &hops, &nhops);
	ret = pn_boot_agree_err(c->boot, code, 1, &first);
	if (ret) {
		if (ret == -ENOMEM || ret == -ECANCELED || ret == -EPIPE)
			goto out;
		snprintf(why, sizeof(why), "%s", pn_errmsg(ret));
		rails_job_result(c, ret == -ENOTSUP ? PN_SKIP : PN_FAIL, why);
		ret = 0;
		goto out;
	}
	/* every node leader: its NICs, and their counters before */
	me.magic = WIRE_MAGIC;
	me.leader = c->node_leader;
	me.node = c->node_index;
	snprintf(me.host, sizeof(me.host), "%s", c->node);
	code = c->node_leader ? rails_mine(c, hops, nhops, &me) : 0;
	if (!code && c->node_leader) {
		pn_counters_cfg_init(&ccfg);
		ccfg.brief = 1;
		code = pn_counters_set_init(&set, &ccfg);
		have_set = !code;
		if (!code)
			code = pn_counters_set_sample(&set);
	}
	ret = pn_boot_agree_err(c->boot, code, 1, &first);
	if (!ret) {
		pn_check_progress(c, "rails", "allreduce of %zu bytes over %d ring%s", bytes,
				  pl->map.nrings, pl->map.nrings == 1 ? "" : "s");
		ret = rails_allreduce(c, pl, bytes, 4);
	}
	if (ret) {
		if (ret == -ENOMEM)
			goto out;
		snprintf(why, sizeof(why), "the allreduce over the plan failed: %s", pn_errmsg(ret));
		rails_job_result(c, PN_FAIL, why);
		ret = 0;
		goto out;
	}
	if (c->node_leader && !pn_counters_set_sample(&set))
		for (i = 0; i < me.nnics; i++) {
			struct pn_counters_port *p = find_port(&set, me.nic[i].name);

			me.nic[i].valid = p && ctr_delta(p, PN_CK_TX_BYTES, &me.nic[i].tx) &&
					  ctr_delta(p, PN_CK_RX_BYTES, &me.nic[i].rx);
		}
	all = calloc((size_t)c->nranks, sizeof(*all));
	if (!all) {
		ret = pn_err(-ENOMEM, "out of memory");
		goto out;
	}
	ret = pn_boot_allgather(c->boot, &me, all, sizeof(me));
	if (!ret && c->node_leader)
		ret = rails_judge(c, all, hops, nhops, noise, note);
out:
	if (have_set)
		pn_counters_set_release(&set);
	free(all);
	free(hops);
	pn_planned_free(pl);
	return ret;
}
