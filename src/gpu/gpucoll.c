/* SPDX-License-Identifier: MIT */
/* GPU collectives through a plugin, on the engine's communicator (gpucoll.h). */
#define _GNU_SOURCE
#include "gpu/gpucoll_int.h"
#include "gpu/xproxy.h"

#include "base/log.h"
#include "engine/collrun.h"
#include "engine/mem.h"
#include "engine/reduce.h"
#include "base/util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the plugin's host services ---- */

/* A host service failed: keep the engine's message (which rank, why). */
static int host_failed(struct pn_gpucoll *g, int ret)
{
	if (ret && !__atomic_exchange_n(&g->host_claimed, 1, __ATOMIC_ACQ_REL)) {
		snprintf(g->host_err, sizeof(g->host_err), "%s", pn_errmsg(ret));
		__atomic_store_n(&g->host_ret, ret, __ATOMIC_RELEASE);
	}
	return ret;
}

static int host_allgather(void *ctx, const void *mine, void *all, size_t len)
{
	struct pn_gpucoll *g = ctx;

	if (g->hier)
		return host_failed(g, pn_allgather_group(g->coll, mine, all, len, g->local,
							 g->nlocal));
	return host_failed(g, pn_allgather_group(g->coll, mine, all, len, g->everyone,
						 g->c->nranks));
}

static int host_barrier(void *ctx)
{
	struct pn_gpucoll *g = ctx;

	if (g->hier || g->c->nnodes == 1)
		return host_failed(g, pn_comm_local_barrier(g->c));
	return host_failed(g, pn_comm_barrier(g->c));
}

/*
 * A failed plugin call: "NAME plugin: WHAT: <plugin's message>", or, when a
 * host service the plugin called failed first, the engine's message for
 * that (a rank stopped, gone, timed out): the cause, which the plugin's own
 * "allgather failed" hides.
 */
int pn_gpucoll_plugin_err(struct pn_gpucoll *g, int ret, const char *what)
{
	int host = __atomic_load_n(&g->host_ret, __ATOMIC_ACQUIRE);

	if (host && g->host_err[0])
		return pn_err(ret < 0 ? ret : host, "%s plugin: %s: %s", g->pl->name, what,
			      g->host_err);
	return pn_plugin_err(g->pl, ret, what);
}

static void host_log(void *ctx, int level, const char *msg)
{
	struct pn_gpucoll *g = ctx;

	if (level <= PENNY_LOG_INFO && g->cfg.log)
		g->cfg.log(g->cfg.log_arg, level, msg);
	else
		PN_DBG(PN_LOG_PLUGIN, "%s plugin: %s", g->cfg.plugin, msg);
}

/* Every rank says how its step went (through the rendezvous, which no
 * plugin collective can be blocking); all fail with the first failing
 * rank's message. */
static int agree(struct pn_gpucoll *g, int code)
{
	return pn_boot_agree_err(g->c->boot, code, 1, NULL);
}

/* Groups: this node's ranks, and the ranks of my local index on every node. */
static int make_groups(struct pn_gpucoll *g)
{
	struct pn_comm *c = g->c;
	const int *node = g->coll->node;
	int *lidx, *per = calloc((size_t)c->nranks, sizeof(int)), *rail;
	int r, q, ret = 0;

	g->everyone = calloc((size_t)c->nranks, sizeof(int));
	g->local = calloc((size_t)c->nranks, sizeof(int));
	g->inter = calloc((size_t)c->nranks, sizeof(int));
	lidx = g->lidx = calloc((size_t)c->nranks, sizeof(int));
	g->place = calloc((size_t)c->nranks, sizeof(int));
	/* rail[k]: the ranks of local index k seen so far */
	rail = calloc((size_t)c->nranks, sizeof(int));
	if (!per || !g->everyone || !g->local || !g->inter || !lidx || !g->place || !rail) {
		ret = pn_err(-ENOMEM, "out of memory");
		goto out;
	}
	for (r = 0; r < c->nranks; r++) {
		g->everyone[r] = r;
		lidx[r] = per[node[r]]++;
		g->place[r] = rail[lidx[r]]++;
		if (node[r] == node[c->rank]) {
			if (r == c->rank)
				g->me_local = g->nlocal;
			g->local[g->nlocal++] = r;
		}
	}
	g->blocked = 1;
	for (r = 0; r < c->nranks; r++) {
		if (lidx[r] == g->me_local)
			g->inter[g->ninter++] = r;
		if (g->place[r] * g->nlocal + lidx[r] != r)
			g->blocked = 0;
	}
	for (q = 0; q < c->nranks && g->hier; q++)
		if (per[q] && per[q] != g->nlocal) {
			ret = pn_err(-EINVAL, "the %s backend across nodes is hierarchical and needs the "
					      "same number of ranks on every node (node %d has %d, node %d "
					      "has %d)",
				     g->cfg.plugin, node[c->rank], g->nlocal, q, per[q]);
			break;
		}
out:
	free(rail);
	free(per);
	return ret;
}

/* The plugin has the calls of the GPU-driven path across nodes. */
static int has_xnode(const struct pn_gpucoll *g)
{
	return pn_plugin_covers(g->pl, offsetof(struct penny_plugin_v1, time_fn)) &&
	       g->ops->xnode_open && g->ops->xnode_allreduce && g->ops->xnode_close &&
	       g->ops->time_fn;
}

/* Every rank must cut chunks alike: the same chunk, slots and whole-buffer limit. */
static int agree_geometry(struct pn_gpucoll *g, const struct pn_xproxy_cfg *xc)
{
	uint64_t mine[5] = { xc->slot_bytes, xc->slots, g->cfg.xnode_whole_max,
			     (uint64_t)xc->sockets, g->cfg.xnode_ll }, *all;
	int r, ret;

	all = calloc((size_t)g->c->nranks, sizeof(mine));
	if (!all)
		return pn_err(-ENOMEM, "out of memory");
	ret = pn_boot_allgather(g->c->boot, mine, all, sizeof(mine));
	for (r = 0; !ret && r < g->c->nranks; r++)
		if (memcmp(all + 5 * r, mine, sizeof(mine)))
			ret = pn_err(-EINVAL, "rank %d cuts the cross-node chunks otherwise than rank %d "
					      "(PENNY_XNODE_CHUNK, _SLOTS, _WHOLE_MAX, _SOCKETS or "
					      "_LL differ)",
				     r, g->c->rank);
	free(all);
	return agree(g, ret);
}

/*
 * Collective: start the proxy and hand the plugin its boxes, where every
 * rank can (same plugin, nobody turned it off); otherwise every rank keeps
 * the host-staged path.  A failure on any rank fails every rank.
 */
static int xnode_open(struct pn_gpucoll *g)
{
	struct pn_xproxy_cfg xc;
	struct penny_xnode_v1 x;
	int all_ok = 0, ret, q;

	ret = pn_boot_agree(g->c->boot, g->cfg.xnode >= 0 && has_xnode(g), &all_ok);
	if (ret || !all_ok)
		return ret;
	for (q = 0; q < g->ninter; q++)
		if (g->inter[q] == g->c->rank)
			g->me_inter = q;
	memset(&xc, 0, sizeof(xc));
	xc.nnodes = g->ninter;
	xc.me = g->me_inter;
	xc.ranks = g->inter;
	xc.transport = g->cfg.xnode_transport;
	xc.slots = g->cfg.xnode_slots ? g->cfg.xnode_slots : 8;
	xc.slot_bytes = g->cfg.xnode_chunk ? g->cfg.xnode_chunk : 1u << 20;
	xc.timeout = g->c->timeout;
	xc.sockets = g->cfg.xnode_sockets ? g->cfg.xnode_sockets : 4;
	xc.qps = g->cfg.xnode_qps ? g->cfg.xnode_qps : 1;
	xc.nic = g->cfg.xnode_nic;
	ret = agree_geometry(g, &xc);
	if (ret)
		return ret;
	ret = pn_xproxy_open(&g->xp, g->c, &xc);
	if (!ret) {
		memset(&x, 0, sizeof(x));
		x.size = sizeof(x);
		x.slots = xc.slots;
		x.slot_bytes = xc.slot_bytes;
		x.nnodes = xc.nnodes;
		x.node = xc.me;
		x.nranks = g->c->nranks;
		x.outbox = pn_xproxy_outbox(g->xp);
		x.inbox = pn_xproxy_inbox(g->xp);
		x.timeout_ns = (uint64_t)(g->c->timeout * 1e9);
		/* LL: at most half a slot (the lines are twice the data) */
		{
			uint64_t ll = g->cfg.xnode_ll == PN_XNODE_LL_OFF ? 0
				      : g->cfg.xnode_ll ? g->cfg.xnode_ll : 2u << 10;

			x.ll_max = (uint32_t)(ll < xc.slot_bytes / 2 ? ll : xc.slot_bytes / 2);
			g->xnode_ll = x.ll_max;
		}
		ret = g->ops->xnode_open(g->be, &x, &g->xn);
		if (ret) {
			g->xn = NULL;
			ret = pn_gpucoll_plugin_err(g, ret, "xnode_open");
		}
	}
	return agree(g, ret);
}

/*
 * A plan's rings (pn_coll_set_rings) for a plugin that runs planned rings
 * (set_rings); one that cannot is refused rather than run off the plan.
 */
static int set_rings(struct pn_gpucoll *g)
{
	const struct pn_coll *co = g->coll;
	int n = g->c->nranks, k, r, ret;
	int32_t *order;

	if (!pn_plugin_covers(g->pl, offsetof(struct penny_plugin_v1, set_rings)) ||
	    !g->ops->set_rings)
		return agree(g, pn_err(-ENOTSUP, "the %s plugin plans its own rings: --plan needs a "
						 "plugin that runs planned rings (nvshmem)",
				       g->pl->name));
	if (g->hier)
		return agree(g, pn_err(-ENOTSUP, "the %s plugin spans one node (across nodes penny "
						 "runs it hierarchically): a plan's rings over every "
						 "rank cannot be its rings",
				       g->pl->name));
	order = calloc((size_t)co->nchannels * (size_t)n, sizeof(*order));
	if (!order)
		return agree(g, pn_err(-ENOMEM, "out of memory"));
	for (k = 0; k < co->nchannels; k++)
		for (r = 0; r < n; r++)
			order[k * n + r] = co->rings[k][r];
	ret = g->ops->set_rings(g->be, order, co->nchannels);
	free(order);
	if (ret)
		ret = pn_gpucoll_plugin_err(g, ret, "set_rings");
	else
		g->planned = co->nchannels;
	return agree(g, ret);
}

int pn_gpucoll_open(struct pn_gpucoll **out, struct pn_coll *coll,
		    const struct pn_gpucoll_cfg *cfg)
{
	struct pn_gpucoll *g = calloc(1, sizeof(*g));
	struct pn_comm *c = coll->comm;
	int ret;

	*out = NULL;
	if (!g)
		return pn_err(-ENOMEM, "out of memory");
	g->coll = coll;
	g->c = c;
	g->cfg = *cfg;
	ret = pn_plugin_load(cfg->plugin, &g->pl);
	ret = agree(g, ret);
	if (ret)
		goto fail;
	g->ops = g->pl->ops;
	g->cfg.plugin = g->pl->name;
	g->hier = c->nnodes > 1 && !(g->ops->caps & PENNY_CAP_MULTINODE);
	if (pn_plugin_covers(g->pl, offsetof(struct penny_plugin_v1, allgather)))
		g->allgather = g->ops->allgather;
	ret = make_groups(g);
	if (!ret && g->hier && (!g->allgather || !g->ops->memcpy))
		ret = pn_err(-ENOTSUP, "the %s plugin ('%s') cannot run across nodes: it spans no "
				       "nodes itself and has no %s for the hierarchical allreduce",
			     g->pl->name, g->pl->path, g->allgather ? "memcpy()" : "allgather()");
	ret = agree(g, ret);
	if (ret)
		goto fail;
	g->host.size = sizeof(g->host);
	if (g->hier) {
		g->host.rank = g->me_local;
		g->host.nranks = g->nlocal;
		g->host.node = 0;
		g->host.nnodes = 1;
	} else {
		g->host.rank = c->rank;
		g->host.nranks = c->nranks;
		g->host.node = c->node;
		g->host.nnodes = c->nnodes;
	}
	g->host.local_rank = c->local_rank;
	g->host.local_size = c->local_size;
	g->host.ctx = g;
	g->host.allgather = host_allgather;
	g->host.barrier = host_barrier;
	g->host.log = host_log;
	g->host.timeout_ns = g->c->timeout > 0 ? (uint64_t)(g->c->timeout * 1e9) : 0;
	PN_DBG(PN_LOG_PLUGIN, "%s plugin: init on rank %d (%s, device %d)", g->pl->name, c->rank,
	       g->hier ? "hierarchical" : "flat", cfg->device);
	ret = g->ops->init(&g->host, cfg->device, &g->be);
	if (ret) {
		g->be = NULL;
		ret = pn_gpucoll_plugin_err(g, ret, "init");
	}
	ret = agree(g, ret);
	if (ret) {
		/* fini is collective: a rank whose init succeeded while another's
		 * failed leaves its backend to the process's exit */
		g->be = NULL;
		goto fail;
	}
	if (coll->rings) {
		ret = set_rings(g);
		if (ret)
			goto fail;
	}
	if (g->hier) {
		ret = xnode_open(g);
		if (ret)
			goto fail;
	}
	*out = g;
	return 0;
fail:
	pn_gpucoll_close(g);
	return ret;
}

void pn_gpucoll_close(struct pn_gpucoll *g)
{
	if (!g)
		return;
	if (g->xn)
		g->ops->xnode_close(g->be, g->xn);
	pn_xproxy_close(g->xp);
	if (g->be && g->scratch)
		g->ops->free(g->be, g->scratch);
	if (g->be)
		g->ops->fini(g->be);
	pn_plugin_unload(g->pl);
	free(g->everyone);
	free(g->local);
	free(g->inter);
	free(g->lidx);
	free(g->place);
	free(g->hbuf);
	free(g);
}

const char *pn_gpucoll_name(const struct pn_gpucoll *g)
{
	return g->pl->name;
}

const char *pn_gpucoll_describe(const struct pn_gpucoll *g)
{
	return g->ops->describe ? g->ops->describe(g->be) : g->ops->version;
}

uint32_t pn_gpucoll_algos(const struct pn_gpucoll *g)
{
	return g->ops->algos;
}

uint32_t pn_gpucoll_caps(const struct pn_gpucoll *g)
{
	return g->hier && !g->xp ? g->ops->caps & ~PENNY_CAP_GRAPH : g->ops->caps;
}

const char *pn_gpucoll_xnode(const struct pn_gpucoll *g)
{
	return g->xp ? pn_xproxy_transport(g->xp) : NULL;
}

uint64_t pn_gpucoll_xnode_ll(const struct pn_gpucoll *g)
{
	return g->xp ? g->xnode_ll : 0;
}

int pn_gpucoll_planned(const struct pn_gpucoll *g)
{
	return g->planned;
}

int pn_gpucoll_hierarchical(const struct pn_gpucoll *g)
{
	return g->hier;
}

/* A failed plugin call: "NAME plugin: WHAT: <plugin's message>". */
static int call(struct pn_gpucoll *g, int ret, const char *what)
{
	return ret ? pn_gpucoll_plugin_err(g, ret, what) : 0;
}

int pn_gpucoll_alloc(struct pn_gpucoll *g, size_t bytes, int registered, void **ptr)
{
	return call(g, g->ops->alloc(g->be, bytes, registered ? PENNY_MEM_REGISTERED : 0, ptr),
		    "alloc");
}

int pn_gpucoll_free(struct pn_gpucoll *g, void *ptr)
{
	return ptr ? call(g, g->ops->free(g->be, ptr), "free") : 0;
}

int pn_gpucoll_read(struct pn_gpucoll *g, void *host, const void *dev, size_t bytes)
{
	if (!g->ops->memcpy)
		return pn_err(-ENOTSUP, "the %s plugin has no memcpy()", g->pl->name);
	return call(g, g->ops->memcpy(g->be, host, dev, bytes, PENNY_D2H), "memcpy");
}

int pn_gpucoll_poison(struct pn_gpucoll *g, void *buf, size_t bytes, int byte)
{
	if (!g->ops->poison)
		return pn_err(-ENOTSUP, "the %s plugin has no poison()", g->pl->name);
	return call(g, g->ops->poison(g->be, buf, bytes, byte), "poison");
}

int pn_gpucoll_fill(struct pn_gpucoll *g, void *buf, size_t count, enum pn_dtype t,
		    enum pn_redop op, uint32_t seed)
{
	return call(g, g->ops->fill(g->be, buf, count, (int)t, (int)op, seed, g->c->rank), "fill");
}

int pn_gpucoll_check(struct pn_gpucoll *g, const void *buf, size_t count, enum pn_dtype t,
		     enum pn_redop op, uint32_t seed, struct penny_check_v1 *res)
{
	return call(g, g->ops->check(g->be, buf, count, (int)t, (int)op, seed, g->c->nranks, res),
		    "check");
}

int pn_gpucoll_select(struct pn_gpucoll *g, size_t count, enum pn_dtype t, enum pn_redop op,
		      int algo)
{
	int ret;

	if (!g->ops->select)
		return algo;
	ret = g->ops->select(g->be, count, (int)t, (int)op, algo);
	return ret < 0 ? pn_gpucoll_plugin_err(g, ret, "select") : ret;
}

int pn_gpucoll_sync(struct pn_gpucoll *g)
{
	int ret = call(g, g->ops->sync(g->be), "sync"), px = pn_xproxy_error(g->xp);

	/* the proxy's reason beats the kernel's "gave up" */
	return px ? px : ret;
}

/* The host buffer of the hierarchical paths holds at least bytes. */
int pn_gpucoll_host_room(struct pn_gpucoll *g, size_t bytes)
{
	struct pn_mem_free f;
	char need[32], have[32];
	char *nb;

	if (bytes <= g->hcap)
		return 0;
	/*
	 * Every rank of this node grows its slice alike, and pages come as
	 * they are touched: past what the host has, the OOM killer would
	 * take a rank, not this check.
	 */
	if (!g->cfg.no_mem_check) {
		pn_mem_free_read(&f);
		if (f.have_mem && (bytes - g->hcap) > f.mem_avail / (uint64_t)g->nlocal) {
			pn_mem_fmt(need, sizeof(need), bytes, 1);
			pn_mem_fmt(have, sizeof(have), f.mem_avail, 0);
			return pn_err(-ENOMEM, "the GPU data staged through the host across nodes needs "
					       "%d rank%s x %s of host memory, %s available "
					       "(PENNY_MEM_CHECK=0 skips this check)",
				      g->nlocal, g->nlocal == 1 ? "" : "s", need, have);
		}
	}
	nb = realloc(g->hbuf, bytes);
	if (!nb)
		return pn_err(-ENOMEM, "out of memory");
	g->hbuf = nb;
	g->hcap = bytes;
	return 0;
}

static int hier_allreduce(struct pn_gpucoll *g, const void *send, void *recv, size_t count,
			  enum pn_dtype t, enum pn_redop op, int algo)
{
	const struct penny_plugin_v1 *o = g->ops;
	size_t es = pn_dtype_size(t), L = (size_t)g->nlocal, k = (size_t)g->me_local;
	size_t per = count / L, tail = count - per * L, nh = per + tail;
	enum pn_redop part = op == PN_AVG ? PN_SUM : op;
	char *d = recv;
	int ret;

	/* 1. within the node (sums for avg: one division at the end) */
	ret = call(g, o->allreduce(g->be, send, recv, count, (int)t, (int)part, algo), "allreduce");
	if (!ret)
		ret = pn_gpucoll_sync(g);
	if (ret || !count)
		return ret;
	ret = pn_gpucoll_host_room(g, nh * es);
	if (ret)
		return ret;
	/* 2. my slice and the tail to the host */
	ret = call(g, o->memcpy(g->be, g->hbuf, d + k * per * es, per * es, PENNY_D2H), "memcpy");
	if (!ret && tail)
		ret = call(g, o->memcpy(g->be, g->hbuf + per * es, d + L * per * es, tail * es,
					PENNY_D2H),
			   "memcpy");
	/* 3. across the nodes, among the ranks of my local index */
	if (!ret)
		ret = pn_allreduce_group(g->coll, g->hbuf, g->hbuf, nh, t, part, g->inter, g->ninter);
	if (ret)
		return ret;
	if (op == PN_AVG)
		pn_reduce_finish(g->hbuf, nh, t, op, g->c->nranks);
	/* 4. back, and the slices to every local rank */
	ret = call(g, o->memcpy(g->be, d + k * per * es, g->hbuf, per * es, PENNY_H2D), "memcpy");
	if (!ret && tail)
		ret = call(g, o->memcpy(g->be, d + L * per * es, g->hbuf + per * es, tail * es,
					PENNY_H2D),
			   "memcpy");
	if (!ret && per && L > 1)
		ret = call(g, g->allgather(g->be, d + k * per * es, d, per, (int)t), "allgather");
	if (!ret)
		ret = pn_gpucoll_sync(g);
	return ret;
}

/* The GPU-driven path across nodes: all enqueued, nothing waited for. */
static int xnode_allreduce(struct pn_gpucoll *g, const void *send, void *recv, size_t count,
			   enum pn_dtype t, enum pn_redop op, int algo)
{
	const struct penny_plugin_v1 *o = g->ops;
	size_t es = pn_dtype_size(t), L = (size_t)g->nlocal, k = (size_t)g->me_local;
	size_t per = count / L, tail = count - per * L;
	uint64_t whole_max = g->cfg.xnode_whole_max ? g->cfg.xnode_whole_max : 1u << 20;
	char *d = recv;
	int ret;

	ret = pn_xproxy_error(g->xp);
	if (ret || !count)
		return ret;
	if (L == 1)
		return call(g, o->xnode_allreduce(g->be, g->xn, send, recv, count, (int)t, (int)op),
			    "xnode_allreduce");
	/* 1. within the node (sums for avg: the division comes across nodes) */
	ret = call(g, o->allreduce(g->be, send, recv, count, (int)t,
				   (int)(op == PN_AVG ? PN_SUM : op), algo),
		   "allreduce");
	if (ret)
		return ret;
	/* 2. small, or captured: every local rank exchanges the whole buffer on its rail */
	if (g->capturing || count * es <= whole_max)
		return call(g, o->xnode_allreduce(g->be, g->xn, recv, recv, count, (int)t, (int)op),
			    "xnode_allreduce");
	/* 2'. slice k (and the tail, which every local rank takes), then the all-gather */
	ret = call(g, o->xnode_allreduce(g->be, g->xn, d + k * per * es, d + k * per * es, per,
					 (int)t, (int)op),
		   "xnode_allreduce");
	if (!ret && tail)
		ret = call(g, o->xnode_allreduce(g->be, g->xn, d + L * per * es, d + L * per * es, tail,
						 (int)t, (int)op),
			   "xnode_allreduce");
	if (!ret && per)
		ret = call(g, g->allgather(g->be, d + k * per * es, d, per, (int)t), "allgather");
	return ret;
}

int pn_gpucoll_allreduce(struct pn_gpucoll *g, const void *send, void *recv, size_t count,
			 enum pn_dtype t, enum pn_redop op, int algo)
{
	if (algo < 0 || algo >= PENNY_NALGOS || !(g->ops->algos & (1u << algo)))
		return pn_err(-EINVAL, "the %s plugin has no algorithm %d", g->pl->name, algo);
	if (g->xp)
		return xnode_allreduce(g, send, recv, count, t, op, algo);
	if (g->hier)
		return hier_allreduce(g, send, recv, count, t, op, algo);
	return call(g, g->ops->allreduce(g->be, send, recv, count, (int)t, (int)op, algo),
		    "allreduce");
}

struct xtime {
	struct pn_gpucoll *g;
	const struct penny_time_v1 *t;
};

static int xtime_one(void *arg)
{
	struct xtime *x = arg;

	return xnode_allreduce(x->g, x->t->send, x->t->recv, x->t->count, x->t->dtype, x->t->op,
			       x->t->algo);
}

static int hier_one(void *arg)
{
	struct xtime *x = arg;

	return hier_allreduce(x->g, x->t->send, x->t->recv, x->t->count, x->t->dtype, x->t->op,
			      x->t->algo);
}

/* The hierarchical paths' timing on the host: one(arg) t->t.warmup times, a
 * barrier, then the blocks of t->t.iters calls each (each call returns
 * with its result in place). */
int pn_gpucoll_hier_time(struct pn_gpucoll *g, struct penny_time_v2 *t, int (*one)(void *),
			  void *arg)
{
	struct penny_time_v1 *t1 = &t->t;
	double t0, total = 0;
	int i, b, ret = 0;

	for (i = 0; i < t1->warmup && !ret; i++)
		ret = one(arg);
	if (!ret)
		ret = pn_comm_barrier(g->c);
	for (b = 0; b < t->blocks && !ret; b++) {
		t0 = pn_now();
		for (i = 0; i < t1->iters && !ret; i++)
			ret = one(arg);
		t->block_usec[b] = (pn_now() - t0) * 1e6 / t1->iters;
		total += t->block_usec[b];
	}
	t1->usec = total / t->blocks;
	t1->iters_run = t1->iters;
	t->blocks_run = t->blocks;
	return ret;
}

/* One timing call of the plugin's: the GPU-driven path across nodes
 * (time_fn: events, and graphs with -G), time2, or an older plugin's time. */
static int plugin_time(struct pn_gpucoll *g, struct penny_time_v2 *t)
{
	struct xtime x = { g, &t->t };
	int ret, px;

	if (g->xp) {
		g->capturing = t->t.graph > 0;
		ret = call(g, g->ops->time_fn(g->be, t, xtime_one, &x), "time");
		g->capturing = 0;
		px = pn_xproxy_error(g->xp);
		return px ? px : ret;
	}
	if (pn_plugin_covers(g->pl, offsetof(struct penny_plugin_v1, time2)) && g->ops->time2)
		return call(g, g->ops->time2(g->be, t), "time");
	return call(g, g->ops->time(g->be, &t->t), "time");
}

int pn_gpucoll_time(struct pn_gpucoll *g, struct penny_time_v2 *t)
{
	struct penny_time_v2 u;
	double total;
	int b, ret;

	if (t->t.iters <= 0 || t->t.warmup < 0 || t->t.graph < 0)
		return pn_err(-EINVAL, "time: iterations must be positive");
	if (t->size < sizeof(*t) || t->blocks < 1 || t->blocks > PENNY_TIME_MAX_BLOCKS ||
	    !t->block_usec)
		return pn_err(-EINVAL, "time: 1..%d blocks and room for them", PENNY_TIME_MAX_BLOCKS);
	if (t->t.graph > 0 && !(pn_gpucoll_caps(g) & PENNY_CAP_GRAPH))
		return pn_err(-ENOTSUP, g->hier ? "CUDA graphs cannot capture the hierarchical %s "
						  "allreduce (its steps between nodes run on the host)"
						: "the %s plugin cannot capture CUDA graphs",
			      g->pl->name);
	/* the proxy's threads spin from here, warm-up included */
	pn_xproxy_wake(g->xp);
	PN_DBG(PN_LOG_PLUGIN, "%s plugin: timing %zu elements: %d warm-up calls, then %d blocks of "
	       "%d calls%s", g->pl->name, t->t.count, t->t.warmup, t->blocks, t->t.iters,
	       g->xp ? " across nodes, GPU-driven" : g->hier ? " across nodes, hierarchical" : "");
	if (g->hier && !g->xp) {
		struct xtime x = { g, &t->t };

		return pn_gpucoll_hier_time(g, t, hier_one, &x);
	}
	t->blocks_run = 0;
	ret = plugin_time(g, t);
	if (ret || t->blocks_run == t->blocks)
		return ret;
	/* a plugin of an older header timed one block: it times each of the
	 * others in a call of its own, without a warm-up */
	t->block_usec[0] = t->t.usec;
	total = t->t.usec;
	u = *t;
	u.blocks = 0;
	u.t.warmup = 0;
	for (b = 1; b < t->blocks && !ret; b++) {
		ret = plugin_time(g, &u);
		t->block_usec[b] = u.t.usec;
		total += u.t.usec;
	}
	t->t.usec = total / t->blocks;
	t->blocks_run = t->blocks;
	return ret;
}

int pn_gpucoll_bw(const char *plugin, struct penny_bw_v1 *req)
{
	struct pn_plugin *p;
	int ret = pn_plugin_load(plugin, &p);

	if (ret)
		return ret;
	if (!p->ops->bw || !(p->ops->caps & PENNY_CAP_BW)) {
		ret = pn_err(-ENOTSUP, "the %s plugin ('%s') has no bandwidth matrix (bw)", p->name,
			     p->path);
	} else {
		ret = p->ops->bw(req);
		if (ret)
			ret = pn_plugin_err(p, ret, "bw");
	}
	pn_plugin_unload(p);
	return ret;
}

int pn_gpucoll_write(struct pn_gpucoll *g, void *dev, const void *host, size_t bytes)
{
	if (!g->ops->memcpy)
		return pn_err(-ENOTSUP, "the %s plugin has no memcpy()", g->pl->name);
	return call(g, g->ops->memcpy(g->be, dev, host, bytes, PENNY_H2D), "memcpy");
}
