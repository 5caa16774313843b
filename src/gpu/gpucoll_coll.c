/* SPDX-License-Identifier: MIT */
/* The other collectives through a plugin, within a node and across nodes (gpucoll.h). */
#define _GNU_SOURCE
#include "gpu/gpucoll_int.h"
#include "gpu/xproxy.h"

#include "base/log.h"
#include "engine/collrun.h"
#include "base/util.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static int call(struct pn_gpucoll *g, int ret, const char *what)
{
	return ret ? pn_gpucoll_plugin_err(g, ret, what) : 0;
}

/* The plugin's member for collective k and its name in the table; NULL
 * where the plugin's header is older than the member or leaves it NULL. */
static const void *coll_member(const struct pn_gpucoll *g, enum pn_coll_kind k, const char **name)
{
	const struct penny_plugin_v1 *o = g->ops;
	size_t off;
	const void *f;

	switch (k) {
	case PN_COLL_ALLGATHER:
		*name = "allgather";
		off = offsetof(struct penny_plugin_v1, allgather);
		f = (const void *)o->allgather;
		break;
	case PN_COLL_REDUCE_SCATTER:
		*name = "reduce_scatter";
		off = offsetof(struct penny_plugin_v1, reduce_scatter);
		f = (const void *)o->reduce_scatter;
		break;
	case PN_COLL_ALLTOALL:
		*name = "alltoall";
		off = offsetof(struct penny_plugin_v1, alltoall);
		f = (const void *)o->alltoall;
		break;
	case PN_COLL_BROADCAST:
		*name = "broadcast";
		off = offsetof(struct penny_plugin_v1, broadcast);
		f = (const void *)o->broadcast;
		break;
	case PN_COLL_REDUCE:
		*name = "reduce";
		off = offsetof(struct penny_plugin_v1, reduce);
		f = (const void *)o->reduce;
		break;
	case PN_COLL_SENDRECV:
		*name = "sendrecv";
		off = offsetof(struct penny_plugin_v1, sendrecv);
		f = (const void *)o->sendrecv;
		break;
	default:
		*name = "allreduce";
		return (const void *)o->allreduce;
	}
	return pn_plugin_covers(g->pl, off) ? f : NULL;
}

int pn_gpucoll_coll_supported(const struct pn_gpucoll *g, enum pn_coll_kind k)
{
	const char *name;

	if (k == PN_COLL_ALLREDUCE)
		return 0;
	if (!coll_member(g, k, &name))
		return pn_err(-ENOTSUP, "the %s plugin does not run %s; --backend nccl does",
			      g->pl->name, name);
	if (g->hier)
		return 0; /* host-staged (hier_coll) */
	if (!pn_plugin_covers(g->pl, offsetof(struct penny_plugin_v1, time_fn)) || !g->ops->time_fn)
		return pn_err(-ENOTSUP, "the %s plugin cannot time %s (it has no time_fn)",
			      g->pl->name, name);
	return 0;
}

/*
 * Another collective across nodes with a plugin that spans none (cuda),
 * where it does not run GPU-driven (coll_driven): host-staged.  This
 * rank's input comes to the host, the engine runs the collective over
 * every rank of the job (its transports, within the node and between
 * nodes) and the output goes back: the result is the engine's, exactly;
 * no NVLink step.
 */
static int hier_coll(struct pn_gpucoll *g, const struct pn_gpucoll_args *a)
{
	const struct penny_plugin_v1 *o = g->ops;
	int n = g->c->nranks, me = g->c->rank;
	size_t es = pn_dtype_size(a->dtype);
	size_t ns = pn_coll_send_count(a->kind, a->count, n);
	size_t nr = pn_coll_recv_count(a->kind, a->count, n);
	int sends = a->kind != PN_COLL_BROADCAST || me == a->root;
	int recvs = a->kind != PN_COLL_REDUCE || me == a->root;
	struct pn_coll_args h;
	int ret;

	if (!a->count)
		return 0;
	if (ns > SIZE_MAX / 2 / es || nr > SIZE_MAX / 2 / es)
		return pn_err(-EOVERFLOW, "%zu elements are too many", a->count);
	ret = pn_gpucoll_host_room(g, (ns + nr) * es);
	/* the input was written in the plugin's stream order */
	if (!ret)
		ret = pn_gpucoll_sync(g);
	if (!ret && sends)
		ret = call(g, o->memcpy(g->be, g->hbuf, a->send, ns * es, PENNY_D2H), "memcpy");
	if (ret)
		return ret;
	memset(&h, 0, sizeof(h));
	h.kind = a->kind;
	h.sendbuf = sends ? g->hbuf : NULL;
	h.recvbuf = recvs ? g->hbuf + ns * es : NULL;
	h.count = a->count;
	h.dtype = a->dtype;
	h.op = a->op;
	h.root = a->root;
	h.algo = PN_CALGO_AUTO;
	ret = pn_coll_run(g->coll, &h);
	if (!ret && recvs)
		ret = call(g, o->memcpy(g->be, a->recv, h.recvbuf, nr * es, PENNY_H2D), "memcpy");
	return ret;
}

/*
 * Across nodes (g->hier), whether collective k (not allreduce) runs
 * GPU-driven: xnode_coll on the rails, with the plugin's own collective
 * within each node; else it is host-staged (hier_coll).  *why: the reason,
 * for the debug line.  The kinds that send each node's blocks to one node
 * (reduce, reduce_scatter, alltoall, sendrecv: outbox tickets to one node)
 * take any number of nodes with a plugin of PENNY_CAP_XCOLL_NODES, 2
 * without.  With several ranks per node: broadcast and reduce; the rest
 * when the ranks are numbered node by node (a rail's blocks then land at
 * their ranks' places, and the ring of sendrecv crosses between the nodes'
 * last and first ranks).
 */
static int coll_driven(const struct pn_gpucoll *g, enum pn_coll_kind k, const char **why)
{
	int one = g->nlocal == 1, any_n = k == PN_COLL_ALLGATHER || k == PN_COLL_BROADCAST ||
					   (g->ops->caps & PENNY_CAP_XCOLL_NODES);

	if (!g->xp) {
		*why = "no GPU-driven path: PENNY_XNODE=0 or a plugin without xnode_*";
		return 0;
	}
	if (!pn_plugin_covers(g->pl, offsetof(struct penny_plugin_v1, xnode_coll)) ||
	    !g->ops->xnode_coll) {
		*why = "the plugin has no xnode_coll";
		return 0;
	}
	if (!any_n && g->ninter != 2) {
		*why = "it sends each node's blocks to one node: the plugin's xnode_coll takes 2 "
		       "nodes for that (no PENNY_CAP_XCOLL_NODES)";
		return 0;
	}
	if (!one && k != PN_COLL_BROADCAST && k != PN_COLL_REDUCE && !g->blocked) {
		*why = "the ranks are not numbered node by node, where a rail's blocks land";
		return 0;
	}
	*why = one ? "xnode_coll between the nodes"
		   : "xnode_coll on a rail, the plugin's own collective within each node";
	return 1;
}

int pn_gpucoll_coll_staged(const struct pn_gpucoll *g, enum pn_coll_kind k)
{
	const char *why;

	if (!g->hier)
		return 0;
	return k == PN_COLL_ALLREDUCE ? !g->xp : !coll_driven(g, k, &why);
}

/* pn_gpucoll_coll_staged for another collective's call (allreduce: 0, it
 * routes itself), its path said once per collective. */
static int coll_staged(struct pn_gpucoll *g, enum pn_coll_kind k)
{
	const char *why;
	int driven;

	if (!g->hier || k == PN_COLL_ALLREDUCE)
		return 0;
	driven = coll_driven(g, k, &why);
	if (!(g->told & 1u << k)) {
		g->told |= 1u << k;
		PN_DBG(PN_LOG_PLUGIN, "%s plugin: %s across %d nodes of %d rank%s: %s (%s)",
		       g->pl->name, pn_coll_name(k), g->ninter, g->nlocal,
		       g->nlocal == 1 ? "" : "s", driven ? "GPU-driven through the proxy" : "host-staged",
		       why);
	}
	return !driven;
}

/* The GPU-driven collective's scratch holds bytes.  Grown outside any capture
 * (a first call, or pn_gpucoll_coll_time before time_fn), after the calls
 * enqueued before, which may still read the old one. */
static int xscratch(struct pn_gpucoll *g, size_t bytes)
{
	void *p;
	int ret;

	if (bytes <= g->scap)
		return 0;
	ret = pn_gpucoll_sync(g);
	if (!ret)
		ret = pn_gpucoll_free(g, g->scratch);
	if (ret)
		return ret;
	g->scratch = NULL;
	g->scap = 0;
	ret = pn_gpucoll_alloc(g, bytes, 0, &p);
	if (!ret) {
		g->scratch = p;
		g->scap = bytes;
	}
	return ret;
}

/*
 * The GPU-driven collective's scratch on this rank (xnode_coll), grown
 * here, before any capture; *part: where the node's step leaves what the
 * rail's step sends.  reduce: the node's partial, in scratch on the root's
 * local index of the other nodes (its recv is NCCL's, written on the root
 * only), else recv (written by the root only).  With several ranks per
 * node: reduce_scatter, the node's sums of my local index's block of
 * every node (N blocks); alltoall, my node's blocks for my local index of
 * every node (N x L blocks); sendrecv, on local index 0, the block of the
 * node's last rank.
 */
static int coll_scratch(struct pn_gpucoll *g, const struct pn_gpucoll_args *a, void **part)
{
	size_t B = a->count * pn_dtype_size(a->dtype), n = 0;
	int ret;

	*part = a->recv;
	if (g->nlocal == 1)
		return 0;
	switch (a->kind) {
	case PN_COLL_REDUCE:
		if (a->root < 0 || a->root >= g->c->nranks || g->lidx[a->root] != g->me_local ||
		    g->place[a->root] == g->me_inter)
			return 0; /* (a root out of range: xnode_coll refuses it) */
		n = 1;
		break;
	case PN_COLL_REDUCE_SCATTER:
		n = (size_t)g->ninter;
		break;
	case PN_COLL_ALLTOALL:
		n = (size_t)g->ninter * (size_t)g->nlocal;
		break;
	case PN_COLL_SENDRECV:
		n = g->me_local == 0;
		break;
	default:
		return 0;
	}
	if (!n)
		return 0;
	if (B && n > SIZE_MAX / B)
		return pn_err(-EOVERFLOW, "%zu elements are too many", a->count);
	ret = xscratch(g, n * B);
	*part = g->scratch;
	return ret;
}

static const int32_t xc_kind[PN_NCOLLS] = {
	[PN_COLL_ALLGATHER] = PENNY_XC_ALLGATHER,
	[PN_COLL_REDUCE_SCATTER] = PENNY_XC_REDUCE_SCATTER,
	[PN_COLL_ALLTOALL] = PENNY_XC_ALLTOALL,
	[PN_COLL_BROADCAST] = PENNY_XC_BROADCAST,
	[PN_COLL_REDUCE] = PENNY_XC_REDUCE,
	[PN_COLL_SENDRECV] = PENNY_XC_SENDRECV,
};

/* One xnode_coll of kind on my rail's boxes: count elements a block of a's
 * dtype and op; root: a node; the strides: penny_xcoll_v1's.  A failure
 * the proxy saw first is the proxy's (its reason beats the kernel's "gave
 * up"). */
static int xcoll(struct pn_gpucoll *g, const struct pn_gpucoll_args *a, int32_t kind,
		 size_t count, const void *send, void *recv, int root, uint64_t sstride,
		 uint64_t rstride)
{
	struct penny_xcoll_v1 x;
	int ret, px;

	memset(&x, 0, sizeof(x));
	x.size = sizeof(x);
	x.kind = kind;
	x.send = send;
	x.recv = recv;
	x.count = count;
	x.dtype = (int32_t)a->dtype;
	x.op = (int32_t)(pn_coll_reduces(a->kind) ? a->op : PN_SUM);
	x.root = root;
	x.sstride = sstride;
	x.rstride = rstride;
	ret = g->ops->xnode_coll(g->be, g->xn, &x);
	px = ret ? pn_xproxy_error(g->xp) : 0;
	return px ? px : call(g, ret, "xnode_coll");
}

/*
 * Another collective across nodes, GPU-driven (coll_driven): all enqueued
 * on the plugin's stream, nothing waited for, so that a CUDA graph
 * captures it.  One rank per node: xnode_coll is the whole collective.
 * L ranks per node across N nodes, on the rails (g->inter) and within the
 * nodes; a step reads this rank's buffers only once the steps before it on
 * this stream are done, and the plugin's collectives read no peer's buffer
 * (so a later step may overwrite what an earlier one read):
 *   allgather  my rail's blocks straight to their ranks' places (rank q *
 *              L + my local index: a stride of L blocks), then each node's
 *              L blocks by the plugin's allgather, in place
 *   broadcast  the rail of the root's local index from the root's node,
 *              then every node's broadcast from that local index, in place
 *   reduce     every node's reduce to the root's local index (sums for avg:
 *              xnode_coll divides by nranks), then that rail's reduce to
 *              the root's node
 *   reduce_scatter  my node's reduce_scatter of each node's L blocks (sums
 *              for avg) into scratch block q, then the rail's
 *              reduce_scatter of the N: op over the ranks of a node in
 *              local order, then over the nodes in node order
 *   alltoall   my node's blocks for node o go through the rank of their
 *              destination's local index here (an alltoall within the
 *              node, into scratch group o of L blocks; my node's own group
 *              too), then cross on that rail, L blocks at a time (the
 *              rail's alltoall of the N groups).  Every message crosses
 *              on its destination's rail, as NCCL's PXN does
 *   sendrecv   the ring within the node, except that local index 0 takes
 *              the last rank's block into scratch and sends it on rail 0
 *              to the next node's first rank, receiving the previous
 *              node's last rank's: the crossing goes through local index 0
 */
static int xnode_coll(struct pn_gpucoll *g, const struct pn_gpucoll_args *a)
{
	const struct penny_plugin_v1 *o = g->ops;
	size_t B = a->count * pn_dtype_size(a->dtype), L = (size_t)g->nlocal;
	size_t k = (size_t)g->me_local, N = (size_t)g->ninter, o2;
	int rooted = pn_coll_rooted(a->kind), dt = (int)a->dtype, lroot = 0, nroot = 0, q, ret;
	int32_t kind = xc_kind[a->kind];
	int op = (int)(a->op == PN_AVG ? PN_SUM : a->op);
	const char *s = a->send;
	char *d = a->recv, *sc;
	void *part;

	if (rooted && (a->root < 0 || a->root >= g->c->nranks))
		return pn_err(-EINVAL, "root %d is not a rank of %d", a->root, g->c->nranks);
	if (rooted) {
		lroot = g->lidx[a->root];
		nroot = g->place[a->root];
	}
	ret = pn_xproxy_error(g->xp);
	if (ret || !a->count)
		return ret;
	if (L == 1)
		return xcoll(g, a, kind, a->count, a->send, a->recv, nroot, 0, 0);
	ret = coll_scratch(g, a, &part);
	if (ret)
		return ret;
	sc = part;
	switch (a->kind) {
	case PN_COLL_ALLGATHER:
		ret = xcoll(g, a, kind, a->count, a->send, d + k * B, 0, 0, L * B);
		for (q = 0; q < g->ninter && !ret; q++)
			ret = call(g, g->allgather(g->be, d + ((size_t)q * L + k) * B,
						   d + (size_t)q * L * B, a->count, dt),
				   "allgather");
		return ret;
	case PN_COLL_BROADCAST:
		if (k == (size_t)lroot)
			ret = xcoll(g, a, kind, a->count, a->send, a->recv, nroot, 0, 0);
		if (!ret)
			ret = call(g, o->broadcast(g->be, a->recv, a->recv, a->count, dt, lroot,
						   NULL),
				   "broadcast");
		return ret;
	case PN_COLL_REDUCE:
		ret = call(g, o->reduce(g->be, a->send, part, a->count, dt, op, lroot, NULL),
			   "reduce");
		if (!ret && k == (size_t)lroot)
			ret = xcoll(g, a, kind, a->count, part, a->recv, nroot, 0, 0);
		return ret;
	case PN_COLL_REDUCE_SCATTER:
		for (o2 = 0; o2 < N && !ret; o2++)
			ret = call(g, o->reduce_scatter(g->be, s + o2 * L * B, sc + o2 * B, a->count,
							dt, op, NULL),
				   "reduce_scatter");
		if (!ret)
			ret = xcoll(g, a, kind, a->count, sc, a->recv, 0, B, 0);
		return ret;
	case PN_COLL_ALLTOALL:
		for (o2 = 0; o2 < N && !ret; o2++)
			ret = call(g, o->alltoall(g->be, s + o2 * L * B, sc + o2 * L * B, a->count, dt,
						  NULL),
				   "alltoall");
		if (!ret)
			ret = xcoll(g, a, kind, L * a->count, sc, a->recv, 0, L * B, L * B);
		return ret;
	default: /* sendrecv */
		ret = call(g, o->sendrecv(g->be, a->send, k ? a->recv : sc, a->count, dt, NULL),
			   "sendrecv");
		if (!ret && !k)
			ret = xcoll(g, a, kind, a->count, sc, a->recv, 0, 0, 0);
		return ret;
	}
}

int pn_gpucoll_coll(struct pn_gpucoll *g, const struct pn_gpucoll_args *a)
{
	const struct penny_plugin_v1 *o = g->ops;
	int dt = (int)a->dtype, op = (int)a->op, ret = pn_gpucoll_coll_supported(g, a->kind);
	const char *name;

	if (ret)
		return ret;
	coll_member(g, a->kind, &name);
	if (coll_staged(g, a->kind))
		return hier_coll(g, a);
	if (g->hier && a->kind != PN_COLL_ALLREDUCE)
		return xnode_coll(g, a);
	switch (a->kind) {
	case PN_COLL_ALLREDUCE:
		return pn_gpucoll_allreduce(g, a->send, a->recv, a->count, a->dtype, a->op,
					    PENNY_ALGO_AUTO);
	case PN_COLL_ALLGATHER:
		ret = o->allgather(g->be, a->send, a->recv, a->count, dt);
		break;
	case PN_COLL_REDUCE_SCATTER:
		ret = o->reduce_scatter(g->be, a->send, a->recv, a->count, dt, op, NULL);
		break;
	case PN_COLL_ALLTOALL:
		ret = o->alltoall(g->be, a->send, a->recv, a->count, dt, NULL);
		break;
	case PN_COLL_BROADCAST:
		ret = o->broadcast(g->be, a->send, a->recv, a->count, dt, a->root, NULL);
		break;
	case PN_COLL_REDUCE:
		ret = o->reduce(g->be, a->send, a->recv, a->count, dt, op, a->root, NULL);
		break;
	default:
		ret = o->sendrecv(g->be, a->send, a->recv, a->count, dt, NULL);
		break;
	}
	return call(g, ret, name);
}

struct coll_time {
	struct pn_gpucoll *g;
	const struct pn_gpucoll_args *a;
	int ret;	/* the first failed call's (its message in pn_errmsg) */
};

static int coll_time_one(void *arg)
{
	struct coll_time *x = arg;
	int ret = pn_gpucoll_coll(x->g, x->a);

	if (ret && !x->ret)
		x->ret = ret;
	return ret;
}

int pn_gpucoll_coll_time(struct pn_gpucoll *g, const struct pn_gpucoll_args *a,
			 struct penny_time_v2 *t)
{
	struct coll_time x = { g, a, 0 };
	int ret = pn_gpucoll_coll_supported(g, a->kind), px;

	if (ret)
		return ret;
	if (t->t.iters <= 0 || t->t.warmup < 0 || t->t.graph < 0)
		return pn_err(-EINVAL, "time: iterations must be positive");
	if (t->size < sizeof(*t) || t->blocks < 1 || t->blocks > PENNY_TIME_MAX_BLOCKS ||
	    !t->block_usec)
		return pn_err(-EINVAL, "time: 1..%d blocks and room for them", PENNY_TIME_MAX_BLOCKS);
	if (coll_staged(g, a->kind)) {
		if (t->t.graph > 0)
			return pn_err(-ENOTSUP, "-G: CUDA graphs cannot capture the %s plugin's %s "
						"across nodes (host-staged)", g->pl->name,
				      pn_coll_name(a->kind));
		ret = pn_gpucoll_hier_time(g, t, coll_time_one, &x);
		return ret ? ret : x.ret;
	}
	if (g->hier && a->kind != PN_COLL_ALLREDUCE) {
		/* no allocation inside a capture; the proxy's threads spin from here */
		void *part;

		ret = coll_scratch(g, a, &part);
		if (ret)
			return ret;
		pn_xproxy_wake(g->xp);
	}
	t->blocks_run = 0;
	ret = g->ops->time_fn(g->be, t, coll_time_one, &x);
	/* the proxy's reason, else a failed call's message (the plugin's,
	 * named), rather than time_fn's */
	px = ret ? pn_xproxy_error(g->xp) : 0;
	if (px)
		return px;
	if (ret && x.ret)
		return x.ret;
	if (!ret && t->blocks_run != t->blocks)
		return pn_err(-EPROTO, "the %s plugin timed %d blocks of %d", g->pl->name,
			      t->blocks_run, t->blocks);
	return call(g, ret, "time_fn");
}
