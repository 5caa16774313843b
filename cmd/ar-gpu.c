/* SPDX-License-Identifier: MIT */
/*
 * penny allreduce-test --backend cuda,nccl: the GPU backends' tables and the
 * ratio table (ar-gpu.h).  The data stays on the GPUs: the plugin fills it
 * (the formula of plugins/include/penny_data.h), runs and times the
 * allreduce (CUDA events; -G: CUDA graphs) and checks it exactly; time is
 * the slowest rank's, wrong values are summed over the ranks.
 */
#define _GNU_SOURCE
#include "ar-gpu.h"

#include "engine/boot.h"
#include "gpu/gpucoll.h"
#include "base/log.h"
#include "base/util.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_LIST 1024

static const struct {
	const char *name;
	int algo;
} gpu_algos[] = {
	{ "auto", PENNY_ALGO_AUTO },
	{ "one-shot", PENNY_ALGO_ONESHOT },
	{ "two-shot", PENNY_ALGO_TWOSHOT },
	{ "ring", PENNY_ALGO_RING },
};

static const char *gpu_algo_name(int algo)
{
	size_t i;

	for (i = 0; i < PN_ARRAY_SIZE(gpu_algos); i++)
		if (gpu_algos[i].algo == algo)
			return gpu_algos[i].name;
	return "?";
}

struct ar_gpu {
	struct pn_ctx *ctx;
	struct pn_coll *coll;
	struct pn_comm *c;
	struct pn_gpucoll *gc;
	char name[32];
	int algos[PENNY_NALGOS];
	int nalgos;
	int graph;
	int device;
};

static void plugin_log(void *arg, int level, const char *msg)
{
	struct ar_gpu *g = arg;

	pn_cmd_fail(g->ctx, 0, "rank %d: %s%s", g->c->rank, level == PENNY_LOG_ERROR ? "error: " : "",
		    msg);
}

int ar_gpu_parse_list(struct pn_ctx *ctx, const char *list, int *dev, int max, int *n)
{
	const char *p = list;

	*n = 0;
	if (!*p)
		return pn_cmd_fail(ctx, -EINVAL, "-g needs a list of GPU indices, like 0,1,2,3");
	while (*p) {
		char *end;
		long v;

		if (*p < '0' || *p > '9')
			return pn_cmd_fail(ctx, -EINVAL, "-g '%s': '%s' is not a GPU index", list, p);
		v = strtol(p, &end, 10);
		if (v > 1023 || (*end && *end != ','))
			return pn_cmd_fail(ctx, -EINVAL, "-g '%s': '%.*s' is not a GPU index", list,
					   (int)strcspn(p, ","), p);
		if (*n == max)
			return pn_cmd_fail(ctx, -EINVAL, "-g '%s': more than %d GPUs", list, max);
		dev[(*n)++] = (int)v;
		p = *end ? end + 1 : end;
		if (*end && !*p)
			return pn_cmd_fail(ctx, -EINVAL, "-g '%s' ends with a comma", list);
	}
	return 0;
}

/* The plugin algorithms --algo asks for; one line and -EINVAL otherwise. */
static int parse_algos(struct ar_gpu *g, const char *list, char *why, size_t wlen)
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
	g->nalgos = 0;
	for (tok = strtok_r(copy, ",", &save); tok && !ret; tok = strtok_r(NULL, ",", &save)) {
		if (!strcmp(tok, "all")) {
			for (i = 0; i < PN_ARRAY_SIZE(gpu_algos); i++) {
				a = gpu_algos[i].algo;
				if ((have & (1u << a)) && !(seen & (1u << a))) {
					seen |= 1u << a;
					g->algos[g->nalgos++] = a;
				}
			}
			continue;
		}
		for (i = 0; i < PN_ARRAY_SIZE(gpu_algos); i++)
			if (!strcmp(tok, gpu_algos[i].name))
				break;
		if (i == PN_ARRAY_SIZE(gpu_algos) || !(have & (1u << gpu_algos[i].algo))) {
			snprintf(why, wlen, "the %s backend has no algorithm '%s' (it has %s, all)",
				 g->name, tok, names);
			ret = -EINVAL;
			break;
		}
		a = gpu_algos[i].algo;
		if (!(seen & (1u << a))) {
			seen |= 1u << a;
			g->algos[g->nalgos++] = a;
		}
	}
	free(copy);
	return ret;
}

/*
 * Every rank's verdict on a step; when any failed, rank 0 prints the first
 * failing rank's reason and every rank gets exit code 2.
 */
static int agree(struct ar_gpu *g, const char *why)
{
	int ret = pn_boot_agree_err(g->c->boot, why ? pn_err(-EINVAL, "%s", why) : 0, 0, NULL);

	if (!ret)
		return 0;
	if (g->c->rank == 0)
		pn_cmd_fail(g->ctx, 0, "%s", pn_errmsg(ret));
	return 2;
}

int ar_gpu_open(struct pn_ctx *ctx, struct pn_coll *coll, const char *name,
		const struct ar_gpu_opts *o, struct ar_gpu **out)
{
	struct ar_gpu *g = calloc(1, sizeof(*g));
	struct pn_gpucoll_cfg cfg;
	char why[300];
	int ret, rc, dev[MAX_LIST], n = 0;

	*out = NULL;
	if (!g)
		return pn_cmd_fail(ctx, 1, "out of memory");
	g->ctx = ctx;
	g->coll = coll;
	g->c = coll->comm;
	g->device = -1;
	snprintf(g->name, sizeof(g->name), "%s", name);
	if (o->gpus) {
		/* parsed and checked by the caller; my entry is my local rank's */
		ar_gpu_parse_list(ctx, o->gpus, dev, MAX_LIST, &n);
		if (g->c->local_rank < n)
			g->device = dev[g->c->local_rank];
		else
			snprintf(why, sizeof(why), "-g '%s' names %d GPU%s; local rank %d on host %s "
						   "needs one more",
				 o->gpus, n, n == 1 ? "" : "s", g->c->local_rank,
				 pn_boot_host(g->c->boot, g->c->rank));
		rc = agree(g, g->c->local_rank < n ? NULL : why);
		if (rc)
			goto fail;
	}
	memset(&cfg, 0, sizeof(cfg));
	cfg.plugin = name;
	cfg.device = g->device;
	cfg.log = plugin_log;
	cfg.log_arg = g;
	ret = pn_gpucoll_open(&g->gc, coll, &cfg);
	if (ret) {
		/* every rank has the same (first failing rank's) message */
		if (g->c->rank == 0)
			pn_cmd_error(ctx, ret);
		rc = 2;
		goto fail;
	}
	ret = parse_algos(g, o->algos, why, sizeof(why));
	if (!ret && o->graph > 0 && !(pn_gpucoll_caps(g->gc) & PENNY_CAP_GRAPH)) {
		if (pn_gpucoll_hierarchical(g->gc))
			snprintf(why, sizeof(why), "-G: CUDA graphs cannot capture the %s allreduce across "
						   "%d nodes (hierarchical: its steps between nodes run "
						   "on the host)",
				 g->name, g->c->nnodes);
		else
			snprintf(why, sizeof(why), "-G: the %s plugin cannot capture CUDA graphs (no "
						   "PENNY_CAP_GRAPH)",
				 g->name);
		ret = -ENOTSUP;
	}
	if (ret == -ENOMEM)
		snprintf(why, sizeof(why), "out of memory");
	rc = agree(g, ret ? why : NULL);
	if (rc)
		goto fail;
	g->graph = o->graph;
	*out = g;
	return 0;
fail:
	ar_gpu_close(g);
	return rc;
}

void ar_gpu_close(struct ar_gpu *g)
{
	if (!g)
		return;
	pn_gpucoll_close(g->gc);
	free(g);
}

int ar_gpu_print_ranks(struct ar_gpu *g, struct pn_out *o)
{
	char mine[256], *all;
	int r, ret;

	snprintf(mine, sizeof(mine), "%s", pn_gpucoll_describe(g->gc));
	all = calloc((size_t)g->c->nranks, sizeof(mine));
	if (!all)
		return pn_err(-ENOMEM, "out of memory");
	ret = pn_boot_allgather(g->c->boot, mine, all, sizeof(mine));
	if (ret) {
		free(all);
		return ret;
	}
	pn_out_open_object(o, NULL);
	pn_out_str(o, PN_JSON, "name", NULL, g->name);
	pn_out_bool(o, PN_JSON, "hierarchical", NULL, pn_gpucoll_hierarchical(g->gc));
	pn_out_int(o, PN_JSON, "graph", NULL, g->graph);
	if (pn_gpucoll_hierarchical(g->gc))
		pn_out_text(o, "# %s: hierarchical over %d nodes (the plugin within each node, the "
			       "engine's ring between them)\n",
			    g->name, g->c->nnodes);
	pn_out_open_array(o, "ranks");
	for (r = 0; r < g->c->nranks; r++) {
		pn_out_open_object(o, NULL);
		pn_out_int(o, PN_ANY, "rank", "#  Rank %3lld", r);
		pn_out_str(o, PN_TEXT, NULL, " %s:", g->name);
		pn_out_str(o, PN_ANY, "device", " %s\n", all + (size_t)r * sizeof(mine));
		pn_out_close_object(o);
	}
	pn_out_close_array(o);
	pn_out_close_object(o);
	free(all);
	return 0;
}

/* Largest time and summed wrong values over the ranks. */
static int over_ranks(struct ar_gpu *g, double *t, uint64_t *wrong)
{
	struct {
		double t;
		uint64_t w;
	} mine = { *t, *wrong }, *all = calloc((size_t)g->c->nranks, sizeof(mine));
	int r, ret;

	if (!all)
		return pn_err(-ENOMEM, "out of memory");
	ret = pn_boot_allgather(g->c->boot, &mine, all, sizeof(mine));
	if (!ret) {
		*t = 0;
		*wrong = 0;
		for (r = 0; r < g->c->nranks; r++) {
			*t = PN_MAX(*t, all[r].t);
			*wrong += all[r].w;
		}
	}
	free(all);
	return ret;
}

/* One size, out of place (ip 0) or in place: time, then a checked call. */
static int run_size(struct ar_gpu *g, const struct ar_sweep *s, int algo, void *sbuf, void *rbuf,
		    size_t bytes, int ip, uint64_t seed, double *time_us, uint64_t *wrong)
{
	size_t es = pn_dtype_size(s->dtype), count = bytes / es;
	void *send = ip ? rbuf : sbuf, *recv = rbuf;
	struct penny_time_v1 t;
	double us = 0;
	int ret;

	ret = pn_gpucoll_fill(g->gc, send, count, s->dtype, s->op, (uint32_t)seed);
	if (!ret && s->iters > 0) {
		memset(&t, 0, sizeof(t));
		t.send = send;
		t.recv = recv;
		t.count = count;
		t.dtype = (int)s->dtype;
		t.op = (int)s->op;
		t.algo = algo;
		t.warmup = s->warmup;
		t.iters = s->iters;
		t.graph = g->graph;
		ret = pn_gpucoll_time(g->gc, &t);
		us = t.usec;
	}
	*wrong = 0;
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
			uint64_t got = 0;

			pn_gpucoll_read(g->gc, &got, (char *)recv + res.first_bad * es, es);
			pn_cmd_fail(g->ctx, 0, "rank %d: %s %s %zu bytes%s: %llu wrong values, the first "
					       "at element %llu (0x%llx)",
				    g->c->rank, g->name, gpu_algo_name(algo), bytes, ip ? " in place" : "",
				    (unsigned long long)res.wrong, (unsigned long long)res.first_bad,
				    (unsigned long long)got);
		}
		*wrong = res.wrong;
	}
	if (ret)
		return ret;
	ret = over_ranks(g, &us, wrong);
	*time_us = us;
	return ret;
}

static double busbw_factor(int n)
{
	return n > 1 ? 2.0 * (n - 1) / n : 1.0;
}

int ar_gpu_sweep(struct ar_gpu *g, struct pn_out *o, const struct ar_sweep *s,
		 double *worst_avg, uint64_t *wrong_total)
{
	size_t es = pn_dtype_size(s->dtype), maxb = 16, i;
	void *sbuf = NULL, *rbuf = NULL;
	int a, k, ret;

	for (i = 0; i < s->nsizes; i++)
		maxb = PN_MAX(maxb, s->sizes[i]);
	/* registered buffers: the plugin's kernels use them in place */
	ret = pn_gpucoll_alloc(g->gc, maxb, 1, &sbuf);
	if (!ret)
		ret = pn_gpucoll_alloc(g->gc, maxb, 1, &rbuf);
	for (a = 0; !ret && a < g->nalgos; a++) {
		int algo = g->algos[a];
		uint64_t wrong = 0, seed = s->seed;
		double sum = 0;

		s->sink.header(s->sink.arg, g->name, gpu_algo_name(algo));
		for (i = 0; !ret && i < s->nsizes; i++) {
			struct ar_row rw;
			int ran;

			memset(&rw, 0, sizeof(rw));
			snprintf(rw.backend, sizeof(rw.backend), "%s", g->name);
			snprintf(rw.algo, sizeof(rw.algo), "%s", gpu_algo_name(algo));
			rw.host_algo = -2;
			rw.bytes = s->sizes[i];
			rw.count = s->sizes[i] / es;
			ran = pn_gpucoll_select(g->gc, rw.count, s->dtype, s->op, algo);
			if (ran < 0) {
				ret = ran;
				break;
			}
			snprintf(rw.ran, sizeof(rw.ran), "%s", gpu_algo_name(ran));
			for (k = 0; !ret && k < 2; k++) {
				ret = run_size(g, s, algo, sbuf, rbuf, rw.bytes, k,
					       seed + 2 * i * 7919 + (uint64_t)k * 104729, &rw.time_us[k],
					       &rw.wrong[k]);
				rw.algbw[k] = rw.time_us[k] > 0 ? (double)rw.bytes / rw.time_us[k] / 1e3 : 0;
				rw.busbw[k] = rw.algbw[k] * busbw_factor(g->c->nranks);
				wrong += rw.wrong[k];
			}
			if (!ret)
				ret = s->sink.row(s->sink.arg, &rw);
			sum += rw.busbw[0];
		}
		if (ret)
			break;
		*wrong_total += wrong;
		*worst_avg = PN_MIN(*worst_avg, s->nsizes ? sum / (double)s->nsizes : 0);
		pn_out_text(o, "# Out of bounds values : %llu %s\n# Avg bus bandwidth    : %g \n",
			    (unsigned long long)wrong, wrong ? "FAILED" : "OK",
			    s->nsizes ? sum / (double)s->nsizes : 0);
	}
	if (sbuf && !ret)
		ret = pn_gpucoll_free(g->gc, sbuf);
	if (rbuf && !ret)
		ret = pn_gpucoll_free(g->gc, rbuf);
	return ret;
}

/* ---- ratio table ---- */

static int same_series(const struct ar_row *a, const struct ar_row *b)
{
	return !strcmp(a->backend, b->backend) && !strcmp(a->algo, b->algo);
}

void ar_ratio_table(struct pn_out *o, const struct ar_row *rows, size_t nrows,
		    const char *backends)
{
	char list[256], *tok, *save = NULL, ref[32] = "";
	const struct ar_row *refrow = NULL;
	int distinct = 0;
	size_t i, j, k;

	snprintf(list, sizeof(list), "%s", backends);
	for (tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		for (i = 0; i < nrows && strcmp(rows[i].backend, tok); i++)
			;
		if (i == nrows)
			continue; /* it produced no rows */
		distinct++;
		if (!ref[0] || !strcmp(tok, "nccl"))
			snprintf(ref, sizeof(ref), "%s", tok);
	}
	for (i = 0; i < nrows && !refrow; i++)
		if (!strcmp(rows[i].backend, ref))
			refrow = &rows[i];
	if (distinct < 2 || !refrow)
		return;
	pn_out_text(o, "#\n# ratios against %s %s, out of place (time ratio below 1 and busbw ratio "
		       "above 1: faster than %s)\n",
		    refrow->backend, refrow->algo, refrow->backend);
	pn_out_text(o, "#%11s %-8s %-10s %9s %9s %7s %7s %7s %7s\n", "size", "backend", "algorithm",
		    "time", "ref time", "time", "busbw", "ref", "busbw");
	pn_out_text(o, "#%11s %-8s %-10s %9s %9s %7s %7s %7s %7s\n", "(B)", "", "", "(us)", "(us)",
		    "ratio", "(GB/s)", "(GB/s)", "ratio");
	pn_out_open_array(o, "ratios");
	for (i = 0; i < nrows; i++) {
		/* each series once, in order of appearance, the reference excepted */
		for (k = 0; k < i && !same_series(&rows[k], &rows[i]); k++)
			;
		if (k < i || same_series(&rows[i], refrow))
			continue;
		for (j = i; j < nrows; j++) {
			const struct ar_row *r = &rows[j], *f = NULL;

			if (!same_series(r, &rows[i]))
				continue;
			for (k = 0; k < nrows && !f; k++)
				if (same_series(&rows[k], refrow) && rows[k].bytes == r->bytes)
					f = &rows[k];
			if (!f)
				continue;
			pn_out_open_object(o, NULL);
			pn_out_uint(o, PN_ANY, "size", " %11llu", (unsigned long long)r->bytes);
			pn_out_str(o, PN_ANY, "backend", " %-8s", r->backend);
			pn_out_str(o, PN_ANY, "algo", " %-10s", r->algo);
			pn_out_str(o, PN_JSON, "ref_backend", NULL, f->backend);
			pn_out_str(o, PN_JSON, "ref_algo", NULL, f->algo);
			pn_out_float(o, PN_ANY, "time_us", " %9.2f", r->time_us[0]);
			pn_out_float(o, PN_ANY, "ref_time_us", " %9.2f", f->time_us[0]);
			pn_out_float(o, PN_ANY, "time_ratio", " %7.3f",
				     f->time_us[0] > 0 ? r->time_us[0] / f->time_us[0] : NAN);
			pn_out_float(o, PN_ANY, "busbw", " %7.2f", r->busbw[0]);
			pn_out_float(o, PN_ANY, "ref_busbw", " %7.2f", f->busbw[0]);
			pn_out_float(o, PN_ANY, "busbw_ratio", " %7.3f",
				     f->busbw[0] > 0 ? r->busbw[0] / f->busbw[0] : NAN);
			pn_out_text(o, "\n");
			pn_out_close_object(o);
		}
	}
	pn_out_close_array(o);
}
