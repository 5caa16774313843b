/* SPDX-License-Identifier: MIT */
/*
 * The sweep's GPU backends (sweep.h): a plugin's allreduce through
 * src/gpu/gpucoll.h.  The data stays on the GPUs: the plugin fills it (the
 * formula of plugins/include/penny_data.h), runs and times the allreduce
 * (CUDA events; -G: CUDA graphs) and checks it exactly.  The other
 * collectives (coll-test) run the plugin's member of the collective, timed
 * alike (time_fn); their data is made and checked on the host
 * (engine/testdata.h: every collective's exact result) and copied.
 */
#define _GNU_SOURCE
#include "harness/ranks.h"
#include "harness/sweep.h"

#include "engine/boot.h"
#include "engine/comm.h"
#include "engine/testdata.h"
#include "gpu/gpucoll.h"
#include "base/log.h"
#include "base/units.h"
#include "base/util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct {
	const char *name;
	int algo;
} gpu_algos[] = {
	{ "auto", PENNY_ALGO_AUTO },
	{ "one-shot", PENNY_ALGO_ONESHOT },
	{ "two-shot", PENNY_ALGO_TWOSHOT },
	{ "ring", PENNY_ALGO_RING },
	{ "symmetric", PENNY_ALGO_SYMMETRIC },
	{ "simple-ring", PENNY_ALGO_SIMPLE_RING },
};

struct gpu {
	struct pn_sweep_backend be;
	struct pn_comm *c;
	struct pn_gpucoll *gc;
	void *sbuf, *rbuf;
	int graph;
	enum pn_coll_kind kind;	/* what it opened for: allreduce, or another */
};

static const char *gpu_algo_name(int algo)
{
	size_t i;

	for (i = 0; i < PN_ARRAY_SIZE(gpu_algos); i++)
		if (gpu_algos[i].algo == algo)
			return gpu_algos[i].name;
	return "?";
}

/* The plugin algorithms --algo asks for; -EINVAL and why otherwise. */
static int parse_algos(struct gpu *g, const char *list, char *why, size_t wlen)
{
	uint32_t have = pn_gpucoll_algos(g->gc), seen = 0;
	char *copy = strdup(list), *tok, *save = NULL, names[96] = "";
	size_t i;
	int a, ret = 0;

	if (!copy)
		return -ENOMEM;
	for (i = 0; i < PN_ARRAY_SIZE(gpu_algos); i++)
		if (have & (1u << gpu_algos[i].algo))
			snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s",
				 names[0] ? ", " : "", gpu_algos[i].name);
	g->be.nalgos = 0;
	for (tok = strtok_r(copy, ",", &save); tok && !ret; tok = strtok_r(NULL, ",", &save)) {
		if (!strcmp(tok, "all")) {
			for (i = 0; i < PN_ARRAY_SIZE(gpu_algos); i++) {
				a = gpu_algos[i].algo;
				/* listed but not runnable here (NCCL without symmetric
				 * memory): all means every algorithm that can run */
				if ((have & (1u << a)) &&
				    pn_gpucoll_select(g->gc, 1, PN_FLOAT, PN_SUM, a) == -ENOTSUP)
					continue;
				if ((have & (1u << a)) && !(seen & (1u << a))) {
					seen |= 1u << a;
					g->be.algos[g->be.nalgos++] = a;
				}
			}
			continue;
		}
		for (i = 0; i < PN_ARRAY_SIZE(gpu_algos); i++)
			if (!strcmp(tok, gpu_algos[i].name))
				break;
		if (i == PN_ARRAY_SIZE(gpu_algos) || !(have & (1u << gpu_algos[i].algo))) {
			snprintf(why, wlen, "the %s backend has no algorithm '%s' (it has %s, all)",
				 g->be.name, tok, names);
			ret = -EINVAL;
			break;
		}
		a = gpu_algos[i].algo;
		if (!(seen & (1u << a))) {
			seen |= 1u << a;
			g->be.algos[g->be.nalgos++] = a;
		}
	}
	free(copy);
	return ret;
}

/*
 * Another collective: the plugin's member runs its library's own choice
 * (auto; all is that one), on a plugin that has it: -EINVAL or -ENOTSUP
 * and why otherwise.
 */
static int coll_algos(struct gpu *g, const char *list, char *why, size_t wlen)
{
	char *copy = strdup(list), *tok, *save = NULL;
	int ret = 0;

	if (!copy)
		return -ENOMEM;
	for (tok = strtok_r(copy, ",", &save); tok && !ret; tok = strtok_r(NULL, ",", &save))
		if (strcmp(tok, "auto") && strcmp(tok, "all")) {
			snprintf(why, wlen, "the %s backend runs its library's own %s algorithm: "
					    "--algo auto (or all), not '%s'", g->be.name,
				 pn_coll_name(g->kind), tok);
			ret = -EINVAL;
		}
	free(copy);
	if (ret)
		return ret;
	g->be.algos[0] = PENNY_ALGO_AUTO;
	g->be.nalgos = 1;
	ret = pn_gpucoll_coll_supported(g->gc, g->kind);
	if (ret)
		snprintf(why, wlen, "%s", pn_errmsg(ret));
	return ret;
}

/* Every rank's verdict on a step: the first failing rank's reason on all. */
static int agree(struct gpu *g, const char *why)
{
	return pn_boot_agree_err(g->c->boot, why ? pn_err(-EINVAL, "%s", why) : 0, 0, NULL);
}

/* registered buffers: the plugin's kernels use them in place */
static int gpu_start(struct pn_sweep_backend *be, size_t max_bytes)
{
	struct gpu *g = (struct gpu *)be;
	int ret = pn_gpucoll_alloc(g->gc, max_bytes, 1, &g->sbuf);

	return ret ? ret : pn_gpucoll_alloc(g->gc, max_bytes, 1, &g->rbuf);
}

static int gpu_stop(struct pn_sweep_backend *be)
{
	struct gpu *g = (struct gpu *)be;
	int ret = pn_gpucoll_free(g->gc, g->sbuf);

	if (!ret)
		ret = pn_gpucoll_free(g->gc, g->rbuf);
	g->sbuf = g->rbuf = NULL;
	return ret;
}

static int gpu_pick(struct pn_sweep_backend *be, const struct pn_sweep *s, int algo,
		    struct pn_sweep_row *rw)
{
	struct gpu *g = (struct gpu *)be;
	int ran;

	if (s->kind != g->kind)
		return pn_err(-EINVAL, "the %s backend opened for %s runs no %s", g->be.name,
			      pn_coll_name(g->kind), pn_coll_name(s->kind));
	if (s->kind != PN_COLL_ALLREDUCE) {
		/* the library's own choice, as NCCL's */
		snprintf(rw->ran, sizeof(rw->ran), "auto");
		return 0;
	}
	ran = pn_gpucoll_select(g->gc, rw->count, s->dtype, s->op, algo);
	if (ran < 0)
		return ran;
	snprintf(rw->ran, sizeof(rw->ran), "%s", gpu_algo_name(ran));
	return 0;
}

/* pn_digest64 of bytes of device memory, read back in pieces. */
static int output_digest(struct gpu *g, const void *dev, size_t bytes, uint64_t *out)
{
	size_t piece = PN_MIN(bytes, (size_t)PN_SWEEP_GPU_PIECE), done, n;
	unsigned char *buf = malloc(piece ? piece : 1);
	uint64_t h = 0;
	int ret = 0;

	if (!buf)
		return pn_err(-ENOMEM, "out of memory");
	for (done = 0; done < bytes && !ret; done += n) {
		n = PN_MIN(piece, bytes - done);
		ret = pn_gpucoll_read(g->gc, buf, (const char *)dev + done, n);
		if (!ret)
			h = pn_digest64(h, buf, n);
	}
	free(buf);
	*out = h;
	return ret;
}

uint64_t pn_sweep_gpu_staged(int coll, int check, uint64_t max_bytes)
{
	/* coll_fill's and coll_check's buffers are not held at once */
	if (!check)
		return 0;
	return coll ? max_bytes : PN_MIN(max_bytes, PN_SWEEP_GPU_PIECE);
}

/* The host's test data of d into dev (its send part: send count elements). */
static int coll_fill(struct gpu *g, const struct pn_testdata_coll *d, void *dev)
{
	size_t bytes = pn_coll_send_count(d->kind, d->count, d->nranks) * pn_dtype_size(d->dtype);
	void *h = malloc(bytes ? bytes : 1);
	int ret;

	if (!h)
		return pn_err(-ENOMEM, "out of memory");
	pn_testdata_coll_fill(d, h);
	ret = pn_gpucoll_write(g->gc, dev, h, bytes);
	free(h);
	return ret;
}

/* The output of d's call read back and checked exactly on the host. */
static int coll_check(struct gpu *g, const struct pn_testdata_coll *d, const void *dev,
		      struct pn_sweep_bad *bad)
{
	size_t bytes = pn_coll_recv_count(d->kind, d->count, d->nranks) * pn_dtype_size(d->dtype);
	void *h = malloc(bytes ? bytes : 1);
	int ret;

	if (!h)
		return pn_err(-ENOMEM, "out of memory");
	ret = pn_gpucoll_read(g->gc, h, dev, bytes);
	if (!ret) {
		bad->wrong = pn_testdata_coll_check(d, h);
		bad->digest = pn_sweep_same_output(d->kind) ? pn_digest64(0, h, bytes) : 0;
	}
	free(h);
	return ret;
}

/* One size of another collective: host data in, the plugin's calls timed
 * (time_fn), then fresh data, a poisoned output (the bytes the host's check
 * takes for untouched), one more call and the check on the host. */
static int coll_run(struct gpu *g, const struct pn_sweep *s, size_t bytes, int ip, uint64_t seed,
		    double *block_us, struct pn_sweep_bad *bad)
{
	size_t es = pn_dtype_size(s->dtype);
	int n = g->c->nranks, ret, calls = pn_sweep_calls(s, bytes);
	size_t count = pn_coll_count_for_bytes(s->kind, bytes, es, n);
	struct pn_testdata_coll d = { .kind = s->kind, .dtype = s->dtype, .op = s->op,
				      .rank = g->c->rank, .nranks = n, .root = s->root,
				      .count = count, .inplace = ip, .seed = seed };
	struct pn_gpucoll_args a = { .kind = s->kind, .send = g->sbuf, .recv = g->rbuf,
				     .count = count, .dtype = s->dtype, .op = s->op,
				     .root = s->root };
	struct penny_time_v2 t;
	unsigned char poison;

	if (ip) {
		a.send = (char *)g->rbuf + pn_coll_inplace_send_off(s->kind, count, d.rank) * es;
		a.recv = (char *)g->rbuf + pn_coll_inplace_recv_off(s->kind, count, d.rank) * es;
	}
	ret = coll_fill(g, &d, (void *)a.send);
	if (!ret && calls > 0) {
		memset(&t, 0, sizeof(t));
		t.size = sizeof(t);
		t.t.warmup = s->warmup;
		t.t.iters = calls;
		t.t.graph = g->graph;
		t.blocks = pn_sweep_blocks(s);
		t.block_usec = block_us;
		ret = pn_gpucoll_coll_time(g->gc, &a, &t);
	}
	if (ret || !s->check)
		return ret;
	d.seed = seed + 1;
	pn_testdata_poison(&poison, 1);
	ret = pn_gpucoll_poison(g->gc, a.recv, pn_coll_recv_count(s->kind, count, n) * es, poison);
	if (!ret)
		ret = coll_fill(g, &d, (void *)a.send);
	if (!ret)
		ret = pn_gpucoll_coll(g->gc, &a);
	if (!ret)
		ret = pn_gpucoll_sync(g->gc);
	return ret ? ret : coll_check(g, &d, a.recv, bad);
}

static int gpu_run(struct pn_sweep_backend *be, const struct pn_sweep *s, int algo, size_t bytes,
		   int ip, uint64_t seed, double *block_us, struct pn_sweep_bad *bad)
{
	struct gpu *g = (struct gpu *)be;
	size_t es = pn_dtype_size(s->dtype), count = bytes / es;
	void *send = ip ? g->rbuf : g->sbuf, *recv = g->rbuf;
	int ret, calls = pn_sweep_calls(s, bytes);
	struct penny_time_v2 t;

	if (s->kind != PN_COLL_ALLREDUCE)
		return coll_run(g, s, bytes, ip, seed, block_us, bad);
	ret = pn_gpucoll_fill(g->gc, send, count, s->dtype, s->op, (uint32_t)seed);
	if (!ret && calls > 0) {
		/* the warm-up, the graph captured once (-G), then the blocks back
		 * to back between events (penny_time_v2) */
		memset(&t, 0, sizeof(t));
		t.size = sizeof(t);
		t.t.send = send;
		t.t.recv = recv;
		t.t.count = count;
		t.t.dtype = (int)s->dtype;
		t.t.op = (int)s->op;
		t.t.algo = algo;
		t.t.warmup = s->warmup;
		t.t.iters = calls;
		t.t.graph = g->graph;
		t.blocks = pn_sweep_blocks(s);
		t.block_usec = block_us;
		ret = pn_gpucoll_time(g->gc, &t);
	}
	if (!ret && s->check) {
		/* fresh data, a poisoned output, one more call, exact check */
		struct penny_check_v1 res = { 0, 0 };

		ret = pn_gpucoll_fill(g->gc, send, count, s->dtype, s->op, (uint32_t)(seed + 1));
		if (!ret && !ip)
			ret = pn_gpucoll_poison(g->gc, recv, bytes, 0xff);
		if (!ret)
			ret = pn_gpucoll_allreduce(g->gc, send, recv, count, s->dtype, s->op, algo);
		if (!ret)
			ret = pn_gpucoll_sync(g->gc);
		if (!ret)
			ret = pn_gpucoll_check(g->gc, recv, count, s->dtype, s->op, (uint32_t)(seed + 1),
					       &res);
		if (!ret && res.wrong) {
			bad->have_first = 1;
			bad->first = res.first_bad;
			pn_gpucoll_read(g->gc, &bad->got, (char *)recv + res.first_bad * es, es);
		}
		bad->wrong = res.wrong;
		if (!ret)
			ret = output_digest(g, recv, bytes, &bad->digest);
	}
	return ret;
}

static void gpu_close(struct pn_sweep_backend *be)
{
	struct gpu *g = (struct gpu *)be;

	/* a sweep that failed never reached stop (a GPU marked hung frees nothing) */
	if (g->gc)
		gpu_stop(be);
	pn_gpucoll_close(g->gc);
	free(g);
}

static const struct pn_sweep_ops gpu_ops = {
	.algo_name = gpu_algo_name,
	.start = gpu_start,
	.stop = gpu_stop,
	.pick = gpu_pick,
	.run = gpu_run,
	.close = gpu_close,
};

void pn_xnode_env_parse(struct pn_xnode_env *x, const char *const v[PN_XNODE_NKNOBS])
{
	const char *on = v[0], *tp = v[1], *nic = v[2], *p;
	const struct { const char *name, *v; uint64_t lo, hi, *out; } k[] = { /* bytes, then counts */
		{ "PENNY_XNODE_CHUNK", v[3], 4096, 64u << 20, &x->chunk },
		{ "PENNY_XNODE_WHOLE_MAX", v[4], 1, 1ull << 40, &x->whole_max },
		{ "PENNY_XNODE_LL", v[5], 0, 1u << 20, &x->ll },
		{ "PENNY_XNODE_SLOTS", v[6], 2, 1024, &x->slots },
		{ "PENNY_XNODE_SOCKETS", v[7], 1, 8, &x->sockets },
		{ "PENNY_XNODE_QPS", v[8], 1, 8, &x->qps },
	};
	unsigned i, port = 0;
	int n = 0;

	memset(x, 0, sizeof(*x));
	x->off = on && !strcmp(on, "0");
	x->transport = tp && *tp ? tp : NULL;
	x->nic = nic && *nic ? nic : NULL;
	/* a device name of 1 to 63 characters, optionally ":port", 1..255 */
	p = x->nic ? nic + strspn(nic, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")
		   : NULL;
	if (on && *on && strcmp(on, "0") && strcmp(on, "1"))
		snprintf(x->bad, sizeof(x->bad), "PENNY_XNODE='%.40s': 0 or 1", on);
	else if (x->transport && strcmp(tp, "tcp") && strcmp(tp, "shm") && strcmp(tp, "verbs") &&
		 strcmp(tp, "auto"))
		snprintf(x->bad, sizeof(x->bad), "PENNY_XNODE_TRANSPORT='%.40s': tcp, shm, verbs or auto", tp);
	else if (p && (p == nic || p - nic > 63 || (*p && (p[0] != ':' || p[1] < '0' || p[1] > '9' ||
		 sscanf(p + 1, "%3u%n", &port, &n) != 1 || p[1 + n] || !port || port > 255))))
		snprintf(x->bad, sizeof(x->bad), "PENNY_XNODE_NIC='%.40s': an RDMA device, optionally "
			 "with its port (mlx5_0 or mlx5_0:1)", nic);
	for (i = 0; i < PN_ARRAY_SIZE(k) && !x->bad[0]; i++)
		if (k[i].v && *k[i].v && (pn_parse_size(k[i].v, k[i].out) || *k[i].out < k[i].lo ||
					   *k[i].out > k[i].hi))
			snprintf(x->bad, sizeof(x->bad), "%s='%.40s': a %s from %llu to %llu%s", k[i].name,
				 k[i].v, i < 3 ? "size" : "whole number", (unsigned long long)k[i].lo,
				 (unsigned long long)k[i].hi, i < 3 ? " bytes" : "");
		else if (i == 0 && x->chunk % 16)
			snprintf(x->bad, sizeof(x->bad), "PENNY_XNODE_CHUNK: a multiple of 16 bytes");
	x->ll_off = v[5] && *v[5] && !x->ll;
}

/* The GPU path across nodes (gpu/xproxy.h), as the command read it (e; NULL: defaults). */
static void xnode_cfg(const struct pn_xnode_env *e, struct pn_gpucoll_cfg *cfg)
{
	if (!e)
		return;
	cfg->xnode = e->off ? -1 : 0;
	cfg->xnode_transport = e->transport;
	cfg->xnode_nic = e->nic;
	cfg->xnode_chunk = e->chunk;
	cfg->xnode_slots = (uint32_t)e->slots;
	cfg->xnode_whole_max = e->whole_max;
	cfg->xnode_sockets = (int)e->sockets;
	cfg->xnode_qps = (int)e->qps;
	cfg->xnode_ll = e->ll_off ? PN_XNODE_LL_OFF : e->ll;
}

/*
 * Every rank must move chunks between nodes alike (collective): the proxy
 * of each transport meets its peers its own way, so ranks that were given
 * different PENNY_XNODE_TRANSPORT (unset is auto) would read each other's
 * setup as garbage.  -EINVAL naming the setting and a rank that differs, on
 * every rank, before any proxy starts; where the path across nodes is not
 * taken (one node, PENNY_XNODE=0 on a rank) nothing is judged.
 */
static int same_xnode_transport(struct gpu *g, const struct pn_gpucoll_cfg *cfg)
{
	static const char *const names[] = { "auto", "tcp", "shm", "verbs" };
	const char *tp = cfg->xnode_transport ? cfg->xnode_transport : "auto";
	int n = g->c->nranks, me = g->c->rank, r, ret, used = 1;
	uint32_t mine[2] = { 0, cfg->xnode >= 0 }, *all = calloc((size_t)n, sizeof(mine));

	for (r = 0; r < (int)PN_ARRAY_SIZE(names); r++)
		if (!strcmp(tp, names[r]))
			mine[0] = (uint32_t)r;
	ret = pn_boot_agree_err(g->c->boot, all ? 0 : pn_err(-ENOMEM, "out of memory"), 1, NULL);
	if (!ret)
		ret = pn_boot_allgather(g->c->boot, mine, all, sizeof(mine));
	if (ret) {
		free(all);
		return ret;
	}
	for (r = 0; r < n; r++)
		used &= all[2 * r + 1] != 0;
	for (r = 0; r < n && g->c->nnodes > 1 && used && !ret; r++)
		if (all[2 * r] != mine[0] && all[2 * r] < PN_ARRAY_SIZE(names))
			ret = pn_err(-EINVAL, "rank %d (host %s) has PENNY_XNODE_TRANSPORT=%s, rank %d "
				     "(host %s) %s: every rank needs the same transport between nodes",
				     r, pn_boot_host(g->c->boot, r), names[all[2 * r]], me,
				     pn_boot_host(g->c->boot, me), names[mine[0]]);
	free(all);
	return pn_boot_agree_err(g->c->boot, ret, 0, NULL);
}

/*
 * Two ranks of one node on one GPU (collective): every rank's GPU as its
 * plugin's describe() names it (its PCI address; 16 bytes a rank in the
 * allgather), the audit's rule (ranks.h) over the ranks of each
 * node.  A GPU shared runs every backend many times slower and NCCL
 * refuses it ("Duplicate GPU detected"): -EINVAL naming the ranks, the GPU
 * and the node, agreed on every rank.  A plugin that names no address is
 * not judged.
 */
static int shared_gpu(struct gpu *g, const struct pn_sweep_gpu_cfg *o)
{
	struct pn_boot *b = g->c->boot;
	int n = g->c->nranks, me = g->c->rank, i, j = -1, dup = 0, ret;
	struct pn_rank_use *r = calloc((size_t)n, sizeof(*r));
	char (*ids)[16] = calloc((size_t)n, sizeof(*ids)), mine[16] = "";

	ret = pn_boot_agree_err(b, r && ids ? 0 : pn_err(-ENOMEM, "out of memory"), 1, NULL);
	if (!ret) {
		pn_ranks_describe_busid(pn_gpucoll_describe(g->gc), mine, sizeof(mine));
		ret = pn_boot_allgather(b, mine, ids, sizeof(mine));
	}
	if (ret)
		goto out;
	for (i = 0; i < n; i++) {
		r[i].rank = i;
		memcpy(r[i].busid, ids[i], sizeof(r[i].busid) - 1);
		pn_wire_printable(r[i].busid, sizeof(r[i].busid));
		r[i].gpu = r[i].busid[0] ? 0 : -1;
		snprintf(r[i].host, sizeof(r[i].host), "%s", pn_boot_host_id(b, i));
	}
	/* this node's ranks: the first with a partner, and that one (a later rank) */
	for (i = 0; i < n && j < 0 && !o->share; i++)
		if (pn_boot_node(b, i) == pn_boot_node(b, me) && (j = pn_ranks_shared_gpu(r, n, i)) >= 0)
			dup = pn_err(-EINVAL, "ranks %d and %d share one GPU (%s, as the %s plugin names "
				     "it) on %.60s: give each rank of a node its own (--gpus, or "
				     "CUDA_VISIBLE_DEVICES per local rank)", i, j, r[i].busid, g->be.name,
				     pn_boot_node_name(b, i));
	/* every rank stops, with the first such node's reason */
	ret = pn_boot_agree_err(b, dup, 0, NULL);
	/* --share-gpus: rank 0 says the first pair of any node once; when there
	 * is none, a pair of emulated nodes is said below */
	for (i = 0, j = -1; !ret && o->share && me == 0 && o->log && i < n && j < 0; i++)
		if ((j = pn_ranks_shared_gpu(r, n, i)) >= 0) {
			char msg[300];

			snprintf(msg, sizeof(msg), "warning: ranks %d and %d share one GPU (%s) on %.60s "
				 "(--share-gpus): they time-slice it, so the times are not the GPU's",
				 i, j, r[i].busid, pn_boot_node_name(b, i));
			o->log(o->log_arg, PENNY_LOG_INFO, msg);
			goto out;
		}
	/*
	 * Nodes emulated on one host (PENNY_NODE_ID) that share a GPU run, but
	 * each call then costs milliseconds (measured: 2.25 ms for 2 x 2 on
	 * 4 x H200, 6.8 ms for NCCL alike): rank 0 says so once.  The same
	 * rule by hostname: no node has a shared GPU by now, so a pair it
	 * finds is on two emulated nodes.
	 */
	for (i = 0; i < n; i++)
		snprintf(r[i].host, sizeof(r[i].host), "%s", pn_boot_host(b, i));
	for (i = 0, j = -1; !ret && me == 0 && o->log && i < n && j < 0; i++)
		if ((j = pn_ranks_shared_gpu(r, n, i)) >= 0) {
			char msg[300];

			snprintf(msg, sizeof(msg), "warning: ranks %d and %d, on emulated nodes %.40s and "
				 "%.40s of one host, share one GPU (%s): the times measure the GPU "
				 "shared, not the path between nodes (--gpus per node)",
				 i, j, pn_boot_node_name(b, i), pn_boot_node_name(b, j), r[i].busid);
			o->log(o->log_arg, PENNY_LOG_INFO, msg);
		}
out:
	free(r);
	free(ids);
	return ret;
}

int pn_sweep_gpu_open(struct pn_sweep_backend **out, struct pn_coll *coll,
		      const struct pn_sweep_gpu_cfg *o)
{
	struct gpu *g = calloc(1, sizeof(*g));
	struct pn_gpucoll_cfg cfg;
	char why[300];
	int ret, device = -1;

	*out = NULL;
	if (!g)
		return pn_err(-ENOMEM, "out of memory");
	g->be.ops = &gpu_ops;
	g->c = coll->comm;
	snprintf(g->be.name, sizeof(g->be.name), "%s", o->name);
	if (o->ndev >= 0) {
		/* my entry is my local rank's */
		if (g->c->local_rank < o->ndev)
			device = o->dev[g->c->local_rank];
		else
			snprintf(why, sizeof(why), "--gpus '%s' names %d GPU%s; local rank %d on host %s "
						   "needs one more",
				 o->gpus, o->ndev, o->ndev == 1 ? "" : "s", g->c->local_rank,
				 pn_boot_host(g->c->boot, g->c->rank));
		ret = agree(g, g->c->local_rank < o->ndev ? NULL : why);
		if (ret)
			goto fail;
	}
	memset(&cfg, 0, sizeof(cfg));
	cfg.plugin = o->name;
	cfg.device = device;
	cfg.log = o->log;
	cfg.log_arg = o->log_arg;
	cfg.no_mem_check = o->no_mem_check;
	xnode_cfg(o->xnode, &cfg);
	ret = agree(g, o->xnode && o->xnode->bad[0] ? o->xnode->bad : NULL);
	if (!ret)
		ret = same_xnode_transport(g, &cfg);
	if (ret)
		goto fail;
	/* every rank has the same (first failing rank's) message */
	ret = pn_gpucoll_open(&g->gc, coll, &cfg);
	if (ret)
		goto fail;
	g->kind = o->kind;
	if (o->kind == PN_COLL_ALLREDUCE)
		ret = parse_algos(g, o->algos, why, sizeof(why));
	else
		ret = coll_algos(g, o->algos, why, sizeof(why));
	/* across nodes, graphs capture what runs GPU-driven; a host-staged
	 * collective's calls return when done */
	if (!ret && o->graph > 0 &&
	    (!(pn_gpucoll_caps(g->gc) & PENNY_CAP_GRAPH) ||
	     pn_gpucoll_coll_staged(g->gc, o->kind))) {
		if (pn_gpucoll_coll_staged(g->gc, o->kind))
			snprintf(why, sizeof(why), "-G: CUDA graphs cannot capture the %s %s across "
						   "%d nodes (hierarchical: its steps between nodes run "
						   "on the host)",
				 g->be.name, pn_coll_name(o->kind), g->c->nnodes);
		else
			snprintf(why, sizeof(why), "-G: the %s plugin cannot capture CUDA graphs (no "
						   "PENNY_CAP_GRAPH)",
				 g->be.name);
		ret = -ENOTSUP;
	}
	if (ret == -ENOMEM)
		snprintf(why, sizeof(why), "out of memory");
	ret = agree(g, ret ? why : NULL);
	if (!ret)
		ret = shared_gpu(g, o);
	if (ret)
		goto fail;
	g->graph = o->graph;
	*out = &g->be;
	return 0;
fail:
	gpu_close(&g->be);
	return ret;
}

int pn_sweep_gpu_describe(struct pn_sweep_backend *be, char **out)
{
	struct gpu *g = (struct gpu *)be;
	char mine[PN_SWEEP_DESC_LEN], *all;
	int ret;

	*out = NULL;
	snprintf(mine, sizeof(mine), "%s", pn_gpucoll_describe(g->gc));
	all = calloc((size_t)g->c->nranks, sizeof(mine));
	if (!all)
		return pn_err(-ENOMEM, "out of memory");
	ret = pn_boot_allgather(g->c->boot, mine, all, sizeof(mine));
	if (ret) {
		free(all);
		return ret;
	}
	*out = all;
	return 0;
}

/* (the proxy's, where this backend's collective runs GPU-driven) */
const char *pn_sweep_gpu_xnode(const struct pn_sweep_backend *be)
{
	const struct gpu *g = (const struct gpu *)be;

	return pn_gpucoll_coll_staged(g->gc, g->kind) ? NULL : pn_gpucoll_xnode(g->gc);
}

uint64_t pn_sweep_gpu_xnode_ll(const struct pn_sweep_backend *be)
{
	const struct gpu *g = (const struct gpu *)be;

	return pn_gpucoll_coll_staged(g->gc, g->kind) ? 0 : pn_gpucoll_xnode_ll(g->gc);
}

int pn_sweep_gpu_hierarchical(const struct pn_sweep_backend *be)
{
	return pn_gpucoll_hierarchical(((const struct gpu *)be)->gc);
}

int pn_sweep_gpu_graph(const struct pn_sweep_backend *be)
{
	return ((const struct gpu *)be)->graph;
}
