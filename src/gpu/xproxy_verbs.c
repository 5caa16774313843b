/* SPDX-License-Identifier: MIT */
/* The verbs half of the cross-node proxy (xproxy_verbs.h). */
#define _GNU_SOURCE
#include "gpu/xproxy_verbs.h"

#include "base/log.h"
#include "base/util.h"
#include "engine/boot.h"
#include "penny_plugin.h"
#include "transport/verbs.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* completion ids: what a completion stands for, in the low two bits */
#define ID_READY 1u		/* the ready write of ticket id >> 2 */
#define ID_READ 2u		/* the read of the peer's done words */
#define ID_DATA 3u		/* a data write too big to go unsignaled */

/* what the sender writes from: the slot's ready and len words */
struct xstage {
	uint64_t ready;
	uint64_t len;
};

struct vpeer {
	int rank;
	struct pn_verbs_conn *qc;
	uint64_t chunk;		/* chunks posted to its inbox */
	int reading;		/* a read of its done words is under way */
	int starved;		/* the last put found no room */
	int outstanding;	/* signaled writes not yet completed */
	struct xstage *stage;	/* [slots] */
	struct penny_xin_slot *mirror;	/* [slots]: its headers of my ring, as last read */
};

struct pn_xverbs {
	struct pn_xverbs_cfg cfg;
	struct pn_verbs_dev *dev;
	struct vpeer *peers;	/* [nnodes], mine unused */
	char *local;		/* the stages and mirrors, registered */
	size_t local_bytes;
	uint32_t *held;		/* [slots]: of ticket t % slots, what keeps sent down */
	size_t maxmsg;
	int out_reg, in_reg;
};

int pn_xverbs_possible(const struct pn_comm *c, const int *ranks, int nnodes)
{
	int q;

	if (!c->info)
		return 0;
	for (q = 0; q < nnodes; q++)
		if (!c->info[ranks[q]].verbs_dev[0])
			return 0;
	return 1;
}

const char *pn_xverbs_nic(const struct pn_xverbs *v)
{
	return v && v->dev ? pn_verbs_dev_name(v->dev) : "";
}

static struct penny_xout_slot *out_slot(struct pn_xverbs *v, uint64_t t)
{
	return (struct penny_xout_slot *)(v->cfg.out + PENNY_XBOX_LINE) + t % v->cfg.slots;
}

static void release(struct pn_xverbs *v, uint64_t t)
{
	uint32_t *h = &v->held[t % v->cfg.slots];

	if (*h && !--*h)
		__atomic_store_n(&out_slot(v, t)->sent, t + 1, __ATOMIC_RELEASE);
}

void pn_xverbs_begin(struct pn_xverbs *v, uint64_t t)
{
	v->held[t % v->cfg.slots] = 1;
}

void pn_xverbs_seal(struct pn_xverbs *v, uint64_t t)
{
	release(v, t);
}

/* Set up the port, the registrations and the QPs to every peer (local). */
static int open_local(struct pn_xverbs *v, struct pn_comm *c, struct pn_verbs_info *mine)
{
	const struct pn_xverbs_cfg *cfg = &v->cfg;
	const char *nic = cfg->nic && *cfg->nic ? cfg->nic
			: c->info ? c->info[c->rank].verbs_dev : "";
	struct pn_verbs_conn_cfg ccfg;
	struct pn_verbs_dev_cfg dcfg;
	size_t per = cfg->slots * (sizeof(struct xstage) + sizeof(struct penny_xin_slot));
	int q, ret;

	if (!*nic)
		return pn_err(-ENODEV, "cross-node proxy over verbs: rank %d (host %s) has no ACTIVE "
				       "RDMA port (PENNY_XNODE_NIC names one)",
			      c->rank, pn_boot_host(c->boot, c->rank));
	pn_verbs_dev_cfg_init(&dcfg);
	ret = pn_verbs_dev_open(&v->dev, nic, &dcfg);
	if (ret)
		return pn_err_ctx(ret, "cross-node proxy over verbs: rank %d: NIC '%s'%s", c->rank, nic,
				  cfg->nic && *cfg->nic ? " (PENNY_XNODE_NIC)" : "");
	v->maxmsg = pn_verbs_dev_port(v->dev)->max_msg ? pn_verbs_dev_port(v->dev)->max_msg
						      : 1u << 30;
	v->local_bytes = per * (size_t)cfg->nnodes;
	v->local = mmap(NULL, v->local_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			-1, 0);
	if (v->local == MAP_FAILED) {
		v->local = NULL;
		return pn_err(-ENOMEM, "cross-node proxy over verbs: cannot map %zu bytes",
			      v->local_bytes);
	}
	/* registered once: every post below hits these registrations */
	ret = pn_verbs_reg(v->dev, cfg->out, cfg->out_bytes, NULL, NULL);
	v->out_reg = !ret;
	if (!ret)
		ret = pn_verbs_reg(v->dev, cfg->in, cfg->in_bytes, NULL, NULL);
	v->in_reg = v->out_reg && !ret;
	if (!ret)
		ret = pn_verbs_reg(v->dev, v->local, v->local_bytes, NULL, NULL);
	if (ret)
		return pn_err_ctx(ret, "cross-node proxy over verbs: registering the boxes on %s",
				  pn_verbs_dev_name(v->dev));
	pn_verbs_conn_cfg_init(&ccfg);
	ccfg.nqp = cfg->qps;
	ccfg.timeout = cfg->timeout;
	ccfg.rq_depth = 1;	/* nothing is received: writes and reads only */
	/* three writes per chunk and a read, a ring of chunks at most in flight */
	ccfg.sq_depth = (int)(3 * cfg->slots + 8);
	ccfg.max_inline = (int)sizeof(uint64_t);
	for (q = 0; q < cfg->nnodes; q++) {
		struct vpeer *x = &v->peers[q];

		x->stage = (struct xstage *)(v->local + per * (size_t)q);
		x->mirror = (struct penny_xin_slot *)(x->stage + cfg->slots);
		if (q == cfg->me)
			continue;
		ret = pn_verbs_conn_create(&x->qc, v->dev, &ccfg);
		if (!ret)
			ret = pn_verbs_conn_expose(x->qc, cfg->in, cfg->in_bytes);
		if (ret)
			return pn_err_ctx(ret, "cross-node proxy over verbs: to rank %d", x->rank);
		pn_verbs_conn_info(x->qc, &mine[q]);
	}
	return 0;
}

int pn_xverbs_open(struct pn_xverbs **out, struct pn_comm *c, const struct pn_xverbs_cfg *cfg)
{
	struct pn_verbs_info *mine = NULL, *all = NULL;
	struct pn_xverbs *v;
	size_t n = (size_t)cfg->nnodes;
	int q, ret, ret2;

	*out = NULL;
	v = calloc(1, sizeof(*v));
	if (v) {
		v->cfg = *cfg;
		v->peers = calloc(n, sizeof(*v->peers));
		v->held = calloc(cfg->slots, sizeof(*v->held));
		mine = calloc(n, sizeof(*mine));
		all = calloc(n * (size_t)c->nranks, sizeof(*all));
	}
	if (!v || !v->peers || !v->held || !mine || !all) {
		ret = pn_err(-ENOMEM, "out of memory");
	} else if (!cfg->out || !cfg->in) {
		ret = pn_err(-EINVAL, "cross-node proxy over verbs: no boxes to register");
	} else if (cfg->qps < 1 || cfg->qps > PN_XVERBS_MAX_QPS) {
		ret = pn_err(-EINVAL, "cross-node proxy: %d QPs per peer (1..%d)", cfg->qps,
			     PN_XVERBS_MAX_QPS);
	} else {
		for (q = 0; q < cfg->nnodes; q++)
			v->peers[q].rank = cfg->ranks[q];
		v->cfg.ranks = NULL;	/* the caller's: not kept */
		ret = open_local(v, c, mine);
	}
	/* collective whatever happened: the others wait for the connection info */
	ret2 = pn_boot_allgather(c->boot, mine, all, n * sizeof(*mine));
	ret = ret ? ret : ret2;
	for (q = 0; !ret && q < cfg->nnodes; q++) {
		const struct pn_verbs_info *pi = &all[(size_t)cfg->ranks[q] * n + (size_t)cfg->me];

		if (q == cfg->me)
			continue;
		ret = pn_verbs_info_check(pi);
		if (!ret)
			ret = pn_verbs_conn_connect(v->peers[q].qc, pi);
		if (!ret && pi->len != cfg->in_bytes)
			ret = pn_err(-EPROTO, "its inbox is %llu bytes, %zu expected",
				     (unsigned long long)pi->len, cfg->in_bytes);
		if (ret)
			ret = pn_err_ctx(ret, "cross-node proxy over verbs: to rank %d (host %s)",
					 cfg->ranks[q], pn_boot_host(c->boot, cfg->ranks[q]));
	}
	free(mine);
	free(all);
	/* nobody writes before every QP is ready to receive */
	ret = pn_boot_agree_err(c->boot, ret, 1, NULL);
	if (ret) {
		pn_xverbs_close(v);
		return ret;
	}
	*out = v;
	return 0;
}

void pn_xverbs_close(struct pn_xverbs *v)
{
	int q;

	if (!v)
		return;
	for (q = 0; v->peers && q < v->cfg.nnodes; q++)
		if (v->peers[q].qc)
			pn_verbs_conn_free(v->peers[q].qc);
	if (v->dev) {
		/* the registrations go before the memory does (the caller unmaps it) */
		if (v->out_reg)
			pn_verbs_unreg(v->dev, v->cfg.out, v->cfg.out_bytes);
		if (v->in_reg)
			pn_verbs_unreg(v->dev, v->cfg.in, v->cfg.in_bytes);
		pn_verbs_invalidate(v->dev, v->cfg.out, v->cfg.out_bytes);
		pn_verbs_invalidate(v->dev, v->cfg.in, v->cfg.in_bytes);
		if (v->local)
			pn_verbs_invalidate(v->dev, v->local, v->local_bytes);
		pn_verbs_dev_close(v->dev);
	}
	if (v->local)
		munmap(v->local, v->local_bytes);
	free(v->held);
	free(v->peers);
	free(v);
}

static int post(struct pn_xverbs *v, struct vpeer *x, const struct pn_verbs_wr *wr)
{
	int ret = pn_verbs_post(x->qc, wr);

	if (ret)
		return pn_err_ctx(ret, "cross-node proxy: verbs to rank %d", x->rank);
	(void)v;
	return 0;
}

int pn_xverbs_put(struct pn_xverbs *v, int q, uint64_t t, uint64_t len)
{
	struct vpeer *x = &v->peers[q];
	uint32_t slots = v->cfg.slots, s = (uint32_t)(x->chunk % slots);
	uint64_t hdr = penny_xbox_in_hdr(slots, v->cfg.me, s);
	uint64_t k = x->chunk;
	struct xstage *st = &x->stage[s];
	int qp = (int)(k % (uint64_t)pn_verbs_conn_nqp(x->qc)), ret;

	if (!pn_xbox_may_land(__atomic_load_n(&x->mirror[s].done, __ATOMIC_ACQUIRE), k, slots)) {
		struct pn_verbs_wr rd = {
			.op = PN_VERBS_READ, .qp = 0, .buf = x->mirror,
			.len = slots * sizeof(*x->mirror),
			.roff = penny_xbox_in_hdr(slots, v->cfg.me, 0), .id = ID_READ,
		};

		x->starved = 1;
		if (x->reading)
			return 0;
		ret = post(v, x, &rd);
		if (ret)
			return ret;
		x->reading = 1;
		return 0;
	}
	x->starved = 0;
	st->len = len;
	st->ready = k + 1;
	{
		struct pn_verbs_wr w[3] = {
			{ .op = PN_VERBS_WRITE, .qp = qp, .buf = &st->len, .len = sizeof(st->len),
			  .roff = hdr + offsetof(struct penny_xin_slot, len),
			  .flags = PN_VERBS_F_UNSIGNALED },
			{ .op = PN_VERBS_WRITE, .qp = qp, .buf = v->cfg.out +
			  penny_xbox_out_data(slots, v->cfg.slot_bytes, (uint32_t)(t % slots)),
			  .len = len,
			  .roff = penny_xbox_in_data(v->cfg.nnodes, slots, v->cfg.slot_bytes,
						     v->cfg.me, s),
			  /* too big for one work request: pieces, with a completion of its own */
			  .flags = len <= v->maxmsg ? PN_VERBS_F_UNSIGNALED : 0, .id = ID_DATA },
			{ .op = PN_VERBS_WRITE, .qp = qp, .buf = &st->ready, .len = sizeof(st->ready),
			  .roff = hdr + offsetof(struct penny_xin_slot, ready),
			  .id = t << 2 | ID_READY },
		};

		for (int i = 0; i < 3; i++) {
			if (!w[i].len)
				continue;
			ret = post(v, x, &w[i]);
			if (ret)
				return ret;
			x->outstanding += !(w[i].flags & PN_VERBS_F_UNSIGNALED);
		}
	}
	v->held[t % slots]++;
	x->chunk++;
	return 1;
}

int pn_xverbs_progress(struct pn_xverbs *v)
{
	struct pn_verbs_cqe cqe[32];
	int q, i, n, moved = 0;

	for (q = 0; q < v->cfg.nnodes; q++) {
		struct vpeer *x = &v->peers[q];

		if (q == v->cfg.me || (!x->outstanding && !x->reading))
			continue;
		n = pn_verbs_poll(x->qc, cqe, (int)PN_ARRAY_SIZE(cqe), 0);
		if (n < 0)
			return pn_err_ctx(n, "cross-node proxy: verbs to rank %d (the rank failed, was "
					     "killed or its port went down?)", x->rank);
		for (i = 0; i < n; i++) {
			switch (cqe[i].id & 3) {
			case ID_READ:
				/* not progress: a sender waiting for room reads again and
				 * again, and the timeout must still see it stuck */
				x->reading = 0;
				continue;
			case ID_READY:
				release(v, cqe[i].id >> 2);
				x->outstanding--;
				break;
			default:
				x->outstanding--;
				break;
			}
			moved = 1;
		}
	}
	return moved;
}

int pn_xverbs_waiting_on(const struct pn_xverbs *v)
{
	int q, w = -1;

	/* one whose slots are full first: that is the one holding the others up */
	for (q = 0; q < v->cfg.nnodes; q++)
		if (q != v->cfg.me && (v->peers[q].starved || v->peers[q].reading))
			return v->peers[q].rank;
		else if (q != v->cfg.me && v->peers[q].outstanding && w < 0)
			w = v->peers[q].rank;
	return w;
}
