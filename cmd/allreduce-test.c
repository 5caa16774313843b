/* SPDX-License-Identifier: MIT */
/*
 * penny allreduce-test: correctness and performance sweep with the table of
 * nccl-tests' all_reduce_perf (out-of-place, then in-place), over the
 * engine's algorithms.  busbw = algbw * 2(n-1)/n.  Only rank 0 prints.
 */
#define _GNU_SOURCE
#include "penny.h"
#include "ar-gpu.h"
#include "base/plot.h"

#include "engine/boot.h"
#include "engine/coll.h"
#include "engine/jobparams.h"
#include "base/log.h"
#include "engine/mem.h"
#include "base/minijson.h"
#include "base/ofile.h"
#include "plan/plan_job.h"
#include "engine/testdata.h"
#include "base/util.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static uint64_t opt_minbytes = 8, opt_maxbytes = 32u << 20, opt_stepbytes = 1u << 20;
static double opt_factor;
static int opt_iters = 20, opt_warmup = 5, opt_check = 1;
static const char *opt_dtype = "float", *opt_op = "sum", *opt_algo = "auto";
static const char *opt_backend, *opt_csv, *opt_plot, *opt_tune_out, *opt_gpus, *opt_plan;
static int opt_graph;
static double opt_min_busbw = -1;
static int opt_root = -1;
static uint64_t opt_seed = 0x9e3779b97f4a7c15ull;

#define MAX_BYTES (1ull << 40)

const struct pn_opt allreduce_test_options[] = {
	{ "minbytes", 'b', OPT_SIZE, &opt_minbytes, "SIZE", "smallest size (default 8)", NULL,
	  OPT_RANGE(0, MAX_BYTES) },
	{ "maxbytes", 'e', OPT_SIZE, &opt_maxbytes, "SIZE", "largest size (default 32M)", NULL,
	  OPT_RANGE(0, MAX_BYTES) },
	{ "stepbytes", 'i', OPT_SIZE, &opt_stepbytes, "SIZE",
	  "size increment when no factor is given (default 1M)", NULL, OPT_RANGE(1, MAX_BYTES) },
	{ "stepfactor", 'f', OPT_DOUBLE, &opt_factor, "F", "multiply the size by F each step", NULL,
	  OPT_RANGE(1.01, 1024) },
	{ "iters", 'n', OPT_INT, &opt_iters, "N",
	  "timed iterations per size (default 20; 0: the check only)", NULL, OPT_RANGE(0, 1000000) },
	{ "warmup_iters", 'w', OPT_INT, &opt_warmup, "N", "warm-up iterations (default 5)", NULL,
	  OPT_RANGE(0, 1000000) },
	{ "check", 'c', OPT_INT, &opt_check, "0|1", "check results against the exact reference "
	  "(default 1)", "0 1", OPT_RANGE(0, 1) },
	{ "datatype", 'd', OPT_STRING, &opt_dtype, "TYPE", "element type (default float)",
	  "int8 uint8 int32 uint32 int64 uint64 half bfloat16 float double", NULL },
	{ "op", 'o', OPT_STRING, &opt_op, "OP", "reduction: sum prod min max avg (default sum)",
	  "sum prod min max avg", NULL },
	{ "root-rank", 'r', OPT_INT, &opt_root, "R", "accepted for nccl-tests' -r (allreduce has "
	  "no root; --root is the rendezvous address)", NULL, OPT_RANGE(0, 65535) },
	{ "algo", 'A', OPT_STRING, &opt_algo, "NAME",
	  "ring, simple-ring, one-shot, two-shot, hierarchical, multiring, auto or all; a comma "
	  "list runs several (default auto)",
	  "auto all ring simple-ring one-shot two-shot hierarchical multiring", OPT_LIST },
	{ "backend", 0, OPT_APPEND, &opt_backend, "NAME",
	  "host (the engine, default) or a GPU plugin: cuda, nccl; a comma list or repeated runs "
	  "each in turn, then a ratio table", "host cuda nccl", OPT_LIST },
	{ "cudagraph", 'G', OPT_INT, &opt_graph, "N",
	  "GPU backends: capture N calls into a CUDA graph and time its replays (nccl-tests -G)",
	  NULL, OPT_RANGE(0, 100000) },
	{ "gpus", 'g', OPT_STRING, &opt_gpus, "LIST",
	  "GPU backends: the device of each local rank, like 0,1,2,3 (default: the local rank)",
	  NULL, OPT_LIST },
	{ "csv", 0, OPT_STRING, &opt_csv, "FILE", "also write the rows as CSV to FILE", NULL, NULL },
	{ "plot", 0, OPT_STRING, &opt_plot, "FILE", "draw busbw and time against size as SVG",
	  NULL, NULL },
	{ "min-busbw", 0, OPT_DOUBLE, &opt_min_busbw, "GBPS",
	  "fail (exit 1, FAILED) when the average bus bandwidth is below GBPS", NULL,
	  OPT_RANGE(0, 1e9) },
	{ "tune-out", 0, OPT_STRING, &opt_tune_out, "FILE",
	  "write the fastest algorithm per size as a tuning table (use with --algo all)", NULL,
	  NULL },
	{ "plan", 0, OPT_STRING, &opt_plan, "FILE",
	  "run multiring over the rings of FILE (penny ring-plan --json): one channel per ring, "
	  "its NICs on verbs; implies --algo multiring", NULL, NULL },
	{ "seed", 0, OPT_U64, &opt_seed, "N",
	  "seed of the check data (default: a fixed seed, the same on every rank)", NULL,
	  OPT_RANGE(0, OPT_U64_MAX) },
	OPT_TABLE_END
};

/* --plan: the plan, placed on this job's ranks (src/plan/plan_job.h). */
struct planned {
	struct pn_plan_model model;
	struct pn_plan plan;
	struct pn_plan_job map;
	int rank;
};

struct job {
	struct pn_ctx *ctx;
	struct planned *plan;
	struct pn_boot *boot;
	struct pn_comm *comm;
	struct pn_coll coll;
	struct pn_reg *sreg, *rreg;
	enum pn_dtype dtype;
	enum pn_redop op;
	size_t es;
	int rank, nranks;
	struct ar_row *rows;
	size_t nrows, caprows;
	/* rank 0's outputs, opened before the work, committed after it */
	struct pn_ofile *csv_of, *plot_of, *tune_of;
	FILE *csv;
	int progress;
};

static int plan_port(void *arg, int peer, int chan, char *out, size_t len)
{
	const struct planned *pl = arg;

	return pn_plan_job_nic(&pl->map, pl->rank, peer, chan, out, len);
}

static void plan_free(struct planned *pl)
{
	if (!pl)
		return;
	pn_plan_job_release(&pl->map);
	pn_plan_release(&pl->plan);
	pn_plan_model_release(&pl->model);
	free(pl);
}

/*
 * Every rank reads the plan and places it on the job's nodes and ranks.
 * A problem anywhere fails every rank with exit 2; only the lowest rank
 * that found one says why (one line, not one per rank).
 */
static int plan_load(struct job *j, int *rc)
{
	struct pn_boot *b = j->boot;
	struct planned *pl = calloc(1, sizeof(*pl));
	int *node = calloc((size_t)j->nranks, sizeof(int));
	const char **names = calloc((size_t)j->nranks, sizeof(char *));
	int r, ret, mine, first = -1;

	*rc = 0;
	if (!pl || !node || !names) {
		ret = pn_err(-ENOMEM, "out of memory");
		goto out;
	}
	pn_plan_model_init(&pl->model);
	pl->rank = j->rank;
	for (r = 0; r < j->nranks; r++) {
		node[r] = pn_boot_node(b, r);
		if (!names[node[r]])
			names[node[r]] = pn_boot_node_name(b, r);
	}
	mine = pn_plan_load_file(&pl->plan, &pl->model, opt_plan);
	if (!mine)
		mine = pn_plan_job_map(&pl->map, &pl->plan, j->nranks, node, pn_boot_nnodes(b),
				       names);
	ret = pn_boot_agree_err(b, mine, 0, &first);
	if (first >= 0) {
		if (first == j->rank)
			pn_cmd_fail(j->ctx, 2, "--plan: %s", pn_errmsg(ret));
		*rc = mine == -ENOMEM || ret == -ENOMEM ? 1 : 2;
		ret = 0;
		goto out;
	}
	if (ret)
		goto out;
	j->plan = pl;
	pl = NULL;
out:
	plan_free(pl);
	free(node);
	free(names);
	return ret;
}

/*
 * Every option that changes the data or the schedule, compared across the
 * ranks before anything runs (per-rank options such as -g and the output
 * files are not).  A mismatch fails every rank with exit 2 and no table;
 * rank 0 and the ranks that differ from it say which option and ranks.
 */
static int agree_params(struct job *j, const enum pn_algo *algos, int nalgos,
			const char *backends, int *rc)
{
	struct pn_job_param p[PN_JOB_MAX_PARAMS];
	char list[160] = "";
	int n = 0, a, differs, ret;

	*rc = 0;
	pn_job_param_set(&p[n++], "-b", "%llu", (unsigned long long)opt_minbytes);
	pn_job_param_set(&p[n++], "-e", "%llu", (unsigned long long)opt_maxbytes);
	if (opt_factor > 1) {
		pn_job_param_set(&p[n++], "-f", "%.15g", opt_factor);
		pn_job_param_set(&p[n++], "-i", "unused (-f)");
	} else {
		pn_job_param_set(&p[n++], "-f", "none");
		pn_job_param_set(&p[n++], "-i", "%llu", (unsigned long long)opt_stepbytes);
	}
	pn_job_param_set(&p[n++], "-n", "%d", opt_iters);
	pn_job_param_set(&p[n++], "-w", "%d", opt_warmup);
	pn_job_param_set(&p[n++], "-c", "%d", opt_check);
	pn_job_param_set(&p[n++], "-d", "%s", pn_dtype_name(j->dtype));
	pn_job_param_set(&p[n++], "-o", "%s", pn_redop_name(j->op));
	for (a = 0; a < nalgos; a++)
		snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s", a ? "," : "",
			 pn_algo_name(algos[a]));
	pn_job_param_set(&p[n++], "-A", "%s", list);
	pn_job_param_set(&p[n++], "--backend", "%s", backends);
	pn_job_param_set(&p[n++], "-G", "%d", opt_graph);
	pn_job_param_set(&p[n++], "--seed", "%llu", (unsigned long long)opt_seed);
	if (opt_plan) {
		char *text;
		size_t len;

		/* the content: the same file name may hold different plans */
		if (pn_read_file(opt_plan, &text, &len)) {
			pn_job_param_set(&p[n++], "--plan", "unreadable");
		} else {
			pn_job_param_content(&p[n++], "--plan", text, len);
			free(text);
		}
	} else {
		pn_job_param_set(&p[n++], "--plan", "none");
	}
	pn_job_param_set(&p[n++], "--transport", "%s", pn_cli.transport ? pn_cli.transport : "probe");
	if (opt_min_busbw >= 0)
		pn_job_param_set(&p[n++], "--min-busbw", "%.15g", opt_min_busbw);
	else
		pn_job_param_set(&p[n++], "--min-busbw", "none");
	ret = pn_job_params_agree(j->boot, p, n, &differs);
	if (ret == -EINVAL) {
		if (j->rank == 0 || differs)
			pn_cmd_fail(j->ctx, 2, "%s", pn_errmsg(ret));
		*rc = 2;
		ret = 0;
	}
	return ret;
}

/*
 * Rank 0 writes --csv, --plot and --tune-out: it opens them (src/base/ofile.h)
 * before any work, and every rank agrees on the outcome, so a path that
 * cannot be written fails the whole job at once, exit 2 on every rank, with
 * one line naming it.
 */
static int open_outputs(struct job *j, int *rc)
{
	static const char *const names[] = { "--csv", "--plot", "--tune-out" };
	const char *paths[] = { opt_csv, opt_plot, opt_tune_out };
	struct pn_ofile **ofs[] = { &j->csv_of, &j->plot_of, &j->tune_of };
	int k, mine = 0, ret, first;

	*rc = 0;
	for (k = 0; j->rank == 0 && k < (int)PN_ARRAY_SIZE(paths) && !mine; k++) {
		if (!paths[k])
			continue;
		mine = pn_ofile_open(ofs[k], paths[k], PN_OFILE_SYNC);
		if (mine)
			pn_err_ctx(mine, "%s", names[k]);
	}
	if (j->csv_of)
		j->csv = pn_ofile_file(j->csv_of);
	ret = pn_boot_agree_err(j->boot, mine, 0, &first);
	if (first >= 0) {
		if (first == j->rank)
			pn_cmd_fail(j->ctx, 2, "%s", pn_errmsg(ret));
		*rc = 2;
		return 0;
	}
	return ret;
}

/* The plan in the header: the rings as ranks, in the order data moves. */
static void plan_print(struct job *j)
{
	const struct pn_plan_job *m = &j->plan->map;
	struct pn_out *o = j->ctx->out;
	int k, i;

	pn_out_open_object(o, "plan");
	pn_out_str(o, PN_ANY, "file", "# Plan %s:", opt_plan);
	pn_out_int(o, PN_ANY, "nrings", " %lld rings", m->nrings);
	pn_out_bool(o, PN_JSON, "by_name", NULL, m->by_name);
	pn_out_text(o, ", nodes matched by %s\n", m->by_name ? "host name" : "position");
	pn_out_open_array(o, "rings");
	for (k = 0; k < m->nrings; k++) {
		pn_out_text(o, "#  Ring %d:", k);
		pn_out_open_array(o, NULL);
		for (i = 0; i < m->nranks; i++)
			pn_out_int(o, PN_ANY, NULL, " %lld", m->rings[k][i]);
		pn_out_close_array(o);
		pn_out_text(o, "\n");
	}
	pn_out_close_array(o);
	pn_out_close_object(o);
}

#define MAX_SIZES 100000

/* The sizes of the sweep; -E2BIG beyond MAX_SIZES of them. */
static int size_list(uint64_t **out, size_t *n, size_t es)
{
	uint64_t *v = NULL, b;
	size_t cap = 0, k = 0;

	for (b = opt_minbytes; b <= opt_maxbytes;) {
		uint64_t nb;

		if (k == MAX_SIZES) {
			free(v);
			return -E2BIG;
		}
		if (k == cap) {
			uint64_t *nv = realloc(v, (cap = cap ? 2 * cap : 32) * sizeof(*v));

			if (!nv) {
				free(v);
				return -ENOMEM;
			}
			v = nv;
		}
		v[k++] = b / es * es;
		if (opt_factor > 1)
			nb = (uint64_t)((double)b * opt_factor);
		else
			nb = b + opt_stepbytes;
		/* a factor that rounds back to b (-b 0, -b 1 -f 1.5) still steps */
		if (nb <= b)
			nb = b + 1;
		b = nb;
	}
	*out = v;
	*n = k;
	return 0;
}

static double busbw_factor(int n)
{
	return n > 1 ? 2.0 * (n - 1) / n : 1.0;
}

/* Largest value over ranks (time), sum over ranks (wrong) via the rendezvous. */
static int reduce_stats(struct job *j, double *t, uint64_t *wrong)
{
	struct {
		double t;
		uint64_t w;
	} mine = { *t, *wrong }, *all = calloc((size_t)j->nranks, sizeof(mine));
	int r, ret;

	if (!all)
		return pn_err(-ENOMEM, "out of memory");
	ret = pn_boot_allgather(j->boot, &mine, all, sizeof(mine));
	if (!ret) {
		*t = 0;
		*wrong = 0;
		for (r = 0; r < j->nranks; r++) {
			*t = PN_MAX(*t, all[r].t);
			*wrong += all[r].w;
		}
	}
	free(all);
	return ret;
}

static int run_size(struct job *j, enum pn_algo algo, size_t bytes, int ip, uint64_t seed,
		    double *time_us, uint64_t *wrong)
{
	size_t count = bytes / j->es;
	void *send = ip ? j->rreg->ptr : j->sreg->ptr, *recv = j->rreg->ptr;
	double t0, t;
	int i, ret;

	pn_data_fill(send, count, j->dtype, j->op, j->rank, seed);
	/* align the ranks: the rendezvous barrier leaves them microseconds
	 * apart; the warm-up absorbs that and a shared-memory barrier (one
	 * host) starts the clock within a cache-line transfer */
	ret = pn_boot_barrier(j->boot);
	for (i = 0; !ret && i < opt_warmup; i++)
		ret = pn_allreduce(&j->coll, send, recv, count, j->dtype, j->op, algo,
				   ip ? j->rreg : j->sreg, j->rreg);
	if (!ret && j->comm->nnodes == 1)
		ret = pn_comm_local_barrier(j->comm);
	if (ret)
		return ret;
	t0 = pn_now();
	for (i = 0; i < opt_iters; i++) {
		ret = pn_allreduce(&j->coll, send, recv, count, j->dtype, j->op, algo,
				   ip ? j->rreg : j->sreg, j->rreg);
		if (ret)
			return ret;
	}
	t = opt_iters ? (pn_now() - t0) / opt_iters * 1e6 : 0;
	*wrong = 0;
	if (opt_check) {
		/* fresh data, a poisoned output, one more run, exact check */
		pn_data_fill(send, count, j->dtype, j->op, j->rank, seed + 1);
		if (!ip)
			pn_data_poison(recv, bytes);
		ret = pn_allreduce(&j->coll, send, recv, count, j->dtype, j->op, algo,
				   ip ? j->rreg : j->sreg, j->rreg);
		if (ret)
			return ret;
		*wrong = pn_data_check(recv, count, j->dtype, j->op, j->nranks, seed + 1);
	}
	ret = reduce_stats(j, &t, wrong);
	*time_us = t;
	return ret;
}

static void print_header(struct job *j, const char *backend, const char *algo_name)
{
	struct pn_out *o = j->ctx->out;

	pn_out_text(o, "#\n# algorithm: %s, backend: %s\n#\n", algo_name, backend);
	pn_out_text(o, "#%63s%37s\n", "out-of-place", "in-place");
	pn_out_text(o, "#%11s %13s %9s %7s %7s %9s %7s %7s %6s %9s %7s %7s %6s\n", "size", "count",
		    "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw",
		    "busbw", "#wrong");
	pn_out_text(o, "#%11s %13s %9s %7s %7s %9s %7s %7s %6s %9s %7s %7s %6s\n", "(B)",
		    "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)",
		    "(GB/s)", "");
}

static void print_row(struct job *j, const struct ar_row *rw)
{
	struct pn_out *o = j->ctx->out;
	int k;

	pn_out_open_object(o, NULL);
	pn_out_str(o, PN_JSON, "backend", NULL, rw->backend);
	pn_out_str(o, PN_JSON, "algo", NULL, rw->algo);
	if (rw->ran[0])
		pn_out_str(o, PN_JSON, "ran", NULL, rw->ran);
	pn_out_uint(o, PN_ANY, "size", " %11llu", (unsigned long long)rw->bytes);
	pn_out_uint(o, PN_ANY, "count", " %13llu", (unsigned long long)rw->count);
	pn_out_str(o, PN_ANY, "type", " %9s", pn_dtype_name(j->dtype));
	pn_out_str(o, PN_ANY, "redop", " %7s", pn_redop_name(j->op));
	pn_out_int(o, PN_ANY, "root", " %7lld", -1);
	for (k = 0; k < 2; k++) {
		pn_out_open_object(o, k ? "ip" : "oop");
		pn_out_float(o, PN_ANY, "time_us", rw->time_us[k] >= 1e4 ? " %9.0f" : " %9.2f",
			     rw->time_us[k]);
		pn_out_float(o, PN_ANY, "algbw", " %7.2f", rw->algbw[k]);
		pn_out_float(o, PN_ANY, "busbw", " %7.2f", rw->busbw[k]);
		if (opt_check)
			pn_out_uint(o, PN_ANY, "wrong", " %6llu", (unsigned long long)rw->wrong[k]);
		else
			pn_out_str(o, PN_ANY, "wrong", " %6s", "N/A");
		pn_out_close_object(o);
	}
	pn_out_text(o, "\n");
	pn_out_close_object(o);
	fflush(pn_out_file(o));
	if (j->csv)
		fprintf(j->csv, "%s,%zu,%zu,%s,%s,%.3f,%.4f,%.4f,%llu,%.3f,%.4f,%.4f,%llu,%s\n",
			rw->algo, rw->bytes, rw->count, pn_dtype_name(j->dtype),
			pn_redop_name(j->op), rw->time_us[0], rw->algbw[0], rw->busbw[0],
			(unsigned long long)rw->wrong[0], rw->time_us[1], rw->algbw[1], rw->busbw[1],
			(unsigned long long)rw->wrong[1], rw->backend);
}

/*
 * --algo: each algorithm once ("all" is every one but auto); at most 16.
 * ctx NULL: quiet (the prelaunch memory plan; the ranks report).
 */
static int parse_algos(struct pn_ctx *ctx, enum pn_algo *algos, int *n)
{
	char *list = strdup(opt_algo), *tok, *save = NULL;
	int k = 0, ret = 0, i, m;

	if (!list)
		return -ENOMEM;
	for (tok = strtok_r(list, ",", &save); tok && !ret; tok = strtok_r(NULL, ",", &save)) {
		enum pn_algo a[PN_NALGOS];
		int na = 0;

		if (!strcmp(tok, "all")) {
			for (i = 0; i < PN_NALGOS; i++)
				a[na++] = (enum pn_algo)i;
		} else {
			ret = pn_algo_parse(tok, &a[na++]);
			if (ret) {
				if (ctx)
					pn_cmd_error(ctx, ret);
				break;
			}
		}
		for (i = 0; i < na && !ret; i++) {
			for (m = 0; m < k; m++)
				if (algos[m] == a[i])
					break;
			if (m < k)
				ret = ctx ? pn_cmd_fail(ctx, -EINVAL, "--algo '%s' names %s twice",
							opt_algo, pn_algo_name(a[i])) : -EINVAL;
			else if (k == 16)
				ret = ctx ? pn_cmd_fail(ctx, -EINVAL, "--algo '%s': at most 16 algorithms",
							opt_algo) : -EINVAL;
			else
				algos[k++] = a[i];
		}
	}
	free(list);
	*n = k;
	return ret;
}

/* Rank 0: print a row and keep it (plot, tuning, ratios). */
static int add_row(struct job *j, const struct ar_row *rw)
{
	if (j->rank != 0)
		return 0;
	print_row(j, rw);
	if (j->nrows == j->caprows) {
		struct ar_row *nr = realloc(j->rows, sizeof(*nr) * (j->caprows = j->caprows
					    ? 2 * j->caprows : 64));

		if (!nr)
			return pn_err(-ENOMEM, "out of memory");
		j->rows = nr;
	}
	j->rows[j->nrows++] = *rw;
	return 0;
}

/* The GPU backends present through the same header and rows. */
static void sink_header(void *arg, const char *backend, const char *algo)
{
	struct job *j = arg;

	if (j->rank == 0)
		print_header(j, backend, algo);
}

static int sink_row(void *arg, const struct ar_row *rw)
{
	return add_row(arg, rw);
}

static int sweep(struct job *j, enum pn_algo algo, const uint64_t *sizes, size_t nsizes,
		 double *avg_busbw, uint64_t *wrong_total)
{
	double sum = 0;
	size_t i, nb = 0;
	int ret, k;
	uint64_t seed = opt_seed;

	if (j->rank == 0)
		print_header(j, "host", pn_algo_name(algo));
	for (i = 0; i < nsizes; i++) {
		struct ar_row rw;

		memset(&rw, 0, sizeof(rw));
		snprintf(rw.backend, sizeof(rw.backend), "host");
		snprintf(rw.algo, sizeof(rw.algo), "%s", pn_algo_name(algo));
		rw.bytes = sizes[i];
		rw.count = sizes[i] / j->es;
		/* what ran (auto: the pick), which is what a tuning table may name */
		rw.host_algo = pn_allreduce_algo(&j->coll, rw.count, j->dtype, algo, j->sreg,
						 j->rreg);
		for (k = 0; k < 2; k++) {
			ret = run_size(j, algo, rw.bytes, k, seed + 2 * i * 7919 + (uint64_t)k * 104729,
				       &rw.time_us[k], &rw.wrong[k]);
			if (ret)
				return ret;
			rw.algbw[k] = rw.time_us[k] > 0 ? (double)rw.bytes / rw.time_us[k] / 1e3 : 0;
			rw.busbw[k] = rw.algbw[k] * busbw_factor(j->nranks);
			*wrong_total += rw.wrong[k];
		}
		sum += rw.busbw[0];
		nb++;
		ret = add_row(j, &rw);
		if (ret)
			return ret;
		if (j->rank == 0 && j->progress)
			fprintf(stderr, "\r%s %zu/%zu sizes ", pn_algo_name(algo), i + 1, nsizes);
	}
	if (j->rank == 0 && j->progress)
		fprintf(stderr, "\r%40s\r", "");
	*avg_busbw = nb ? sum / (double)nb : 0;
	return 0;
}

/* One series per backend and algorithm: out-of-place busbw and time against size. */
static int write_plot(struct job *j)
{
	struct pn_plot_series *series = calloc(j->nrows + 1, sizeof(*series));
	struct pn_plot_point *pts = calloc(j->nrows + 1, sizeof(*pts));
	char title[160], *labels = calloc(j->nrows + 1, 64);
	struct pn_plot plot;
	size_t r, q, k = 0;
	int ret = 0, ns = 0;

	if (!series || !pts || !labels) {
		ret = pn_err(-ENOMEM, "out of memory");
		goto out;
	}
	for (r = 0; r < j->nrows; r++) {
		const struct ar_row *a = &j->rows[r];
		size_t first = k;

		for (q = 0; q < r; q++)
			if (!strcmp(j->rows[q].backend, a->backend) && !strcmp(j->rows[q].algo, a->algo))
				break;
		if (q < r)
			continue; /* this series is drawn already */
		for (q = r; q < j->nrows; q++) {
			if (strcmp(j->rows[q].backend, a->backend) || strcmp(j->rows[q].algo, a->algo))
				continue;
			pts[k].size_bytes = (double)j->rows[q].bytes;
			pts[k].busbw_gbps = j->rows[q].busbw[0];
			pts[k].time_us = j->rows[q].time_us[0];
			k++;
		}
		snprintf(labels + 64 * ns, 64, "%s (%s)", a->algo, a->backend);
		series[ns].label = labels + 64 * ns;
		series[ns].pts = pts + first;
		series[ns].n = k - first;
		ns++;
	}
	snprintf(title, sizeof(title), "penny allreduce-test: %d ranks on %d nodes, %s %s, out of place",
		 j->nranks, j->comm->nnodes, pn_dtype_name(j->dtype), pn_redop_name(j->op));
	plot.title = title;
	plot.series = series;
	plot.nseries = (size_t)ns;
	ret = pn_plot_svg(pn_ofile_file(j->plot_of), &plot);
	if (ret) {
		pn_err_ctx(ret, "'%s'", opt_plot);
	} else {
		ret = pn_ofile_commit(j->plot_of);
		j->plot_of = NULL;
	}
out:
	free(series);
	free(pts);
	free(labels);
	return ret;
}

static int write_tune(struct job *j, const uint64_t *sizes, size_t nsizes)
{
	size_t *bytes = calloc(nsizes, sizeof(size_t)), i, r;
	enum pn_algo *best = calloc(nsizes, sizeof(*best));
	int ret;

	if (!bytes || !best) {
		free(bytes);
		free(best);
		return pn_err(-ENOMEM, "out of memory");
	}
	for (i = 0; i < nsizes; i++) {
		double bt = INFINITY;

		bytes[i] = sizes[i];
		best[i] = PN_ALGO_RING;
		for (r = 0; r < j->nrows; r++)
			if (j->rows[r].host_algo != -2 && j->rows[r].bytes == sizes[i] &&
			    j->rows[r].time_us[0] < bt && !j->rows[r].wrong[0]) {
				bt = j->rows[r].time_us[0];
				best[i] = (enum pn_algo)j->rows[r].host_algo;
			}
	}
	ret = pn_tune_save(pn_ofile_file(j->tune_of), opt_tune_out, j->nranks, j->comm->nnodes,
			   bytes, best, (int)nsizes);
	if (!ret) {
		ret = pn_ofile_commit(j->tune_of);
		j->tune_of = NULL;
	}
	free(bytes);
	free(best);
	return ret;
}

/* Rank 0, after the sweep: the tuning table and the plot written, every
 * output committed. */
static int finish_outputs(struct job *j, const uint64_t *sizes, size_t nsizes)
{
	int ret;

	if (j->tune_of) {
		ret = write_tune(j, sizes, nsizes);
		if (ret)
			return ret;
	}
	if (j->plot_of) {
		ret = write_plot(j);
		if (ret)
			return ret;
	}
	if (j->csv_of) {
		ret = pn_ofile_commit(j->csv_of);
		j->csv_of = NULL;
		j->csv = NULL;
		if (ret)
			return ret;
	}
	return 0;
}

#define MAX_BACKENDS 8

/* --backend: names (host or a plugin), each once; -G and -g need a GPU one. */
static int check_backends(struct pn_ctx *ctx, const char *list, int *has_host, int *ngpu)
{
	char copy[512], *tok, *save = NULL, seen[MAX_BACKENDS][32];
	int n = 0, k, dev[1024], ndev;

	*has_host = 0;
	*ngpu = 0;
	if (strlen(list) >= sizeof(copy))
		return pn_cmd_fail(ctx, 2, "--backend '%s' is too long", list);
	snprintf(copy, sizeof(copy), "%s", list);
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (!tok[0] || strlen(tok) >= 32 || strspn(tok, "abcdefghijklmnopqrstuvwxyz0123456789_-") !=
								   strlen(tok))
			return pn_cmd_fail(ctx, 2, "--backend '%s' is not a backend name (host, cuda, "
						   "nccl or another plugin's)", tok);
		for (k = 0; k < n; k++)
			if (!strcmp(seen[k], tok))
				return pn_cmd_fail(ctx, 2, "--backend %s is listed twice", tok);
		if (n == MAX_BACKENDS)
			return pn_cmd_fail(ctx, 2, "--backend: at most %d backends", MAX_BACKENDS);
		snprintf(seen[n++], sizeof(seen[0]), "%s", tok);
		if (!strcmp(tok, "host"))
			*has_host = 1;
		else
			(*ngpu)++;
	}
	if (!n)
		return pn_cmd_fail(ctx, 2, "--backend is empty");
	if (opt_graph > 0 && !*ngpu)
		return pn_cmd_fail(ctx, 2, "-G captures CUDA graphs: it needs a GPU backend "
					   "(--backend cuda or nccl)");
	if (opt_gpus && !*ngpu)
		return pn_cmd_fail(ctx, 2, "-g picks GPUs: it needs a GPU backend (--backend cuda or "
					   "nccl)");
	if (opt_gpus && ar_gpu_parse_list(ctx, opt_gpus, dev, 1024, &ndev))
		return 2;
	return 0;
}

/*
 * The planned memory of this host's ranks (src/engine/mem.h): the node segment;
 * with the host backend a send and a receive buffer of -e each in /dev/shm,
 * and one-shot's scratch for in-place runs (auto runs one-shot up to
 * PN_TUNE_ONE_SHOT_MAX, a tuning file at any size); FIFOs to the ranks
 * on other hosts, or to all when a transport other than shm is forced.
 */
static void mem_job(struct pn_mem_job *mj, int nlocal, int nranks, int nchan, int host,
		    const enum pn_algo *algos, int nalgos, uint64_t base)
{
	const char *t = pn_cli.transport;
	int a;

	memset(mj, 0, sizeof(*mj));
	mj->nlocal = nlocal;
	mj->nremote = t && strcmp(t, "shm") ? nranks - 1 : nranks - nlocal;
	mj->nchannels = nchan > 0 ? nchan : 1;
	mj->node_segment = 1;
	mj->base_bytes = base;
	if (!host)
		return;
	mj->nbufs = 2;
	mj->buf_bytes = opt_maxbytes;
	for (a = 0; a < nalgos; a++) {
		uint64_t s = 0;

		if (algos[a] == PN_ALGO_ONE_SHOT ||
		    (algos[a] == PN_ALGO_AUTO && getenv("PENNY_TUNE_FILE")))
			s = opt_maxbytes;
		else if (algos[a] == PN_ALGO_AUTO)
			s = PN_MIN(opt_maxbytes, PN_TUNE_ONE_SHOT_MAX);
		mj->scratch_bytes = PN_MAX(mj->scratch_bytes, s);
	}
}

static int has_multiring(const enum pn_algo *algos, int nalgos)
{
	int a;

	for (a = 0; a < nalgos; a++)
		if (algos[a] == PN_ALGO_MULTIRING)
			return 1;
	return 0;
}

/* --np: the planned memory of the ranks about to be forked (a --plan's rings
 * are not read yet: one channel, the ranks check again with them). */
int allreduce_test_prelaunch(struct pn_ctx *ctx, int np)
{
	const char *backends = opt_backend ? opt_backend : "host";
	char copy[512], *tok, *save = NULL;
	enum pn_algo algos[16];
	struct pn_mem_job mj;
	int nalgos, host = 0, ret;

	/* options that do not parse are the ranks' to report */
	if (parse_algos(NULL, algos, &nalgos))
		return 0;
	snprintf(copy, sizeof(copy), "%s", backends);
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
		host |= !strcmp(tok, "host");
	mem_job(&mj, np, np, has_multiring(algos, nalgos) ? 2 : 1, host, algos, nalgos,
		PN_MEM_RANK_BASE);
	ret = pn_mem_check(&mj);
	return ret ? pn_cmd_fail(ctx, 2, "%s", pn_errmsg(ret)) : 0;
}

/*
 * Every rank checks its host's planned memory before anything is mapped;
 * a host that cannot fit fails every rank with exit 2, and only the lowest
 * rank that found it says why.
 */
static int check_memory(struct job *j, int nchan, int host, const enum pn_algo *algos,
			int nalgos, int *rc)
{
	struct pn_mem_job mj;
	int first = -1, ret;

	*rc = 0;
	mem_job(&mj, pn_boot_local_size(j->boot), j->nranks, nchan, host, algos, nalgos, 0);
	ret = pn_boot_agree_err(j->boot, pn_mem_check(&mj), 1, &first);
	if (first >= 0) {
		if (first == j->rank)
			pn_cmd_fail(j->ctx, 2, "%s", pn_errmsg(ret));
		*rc = 2;
		return 0;
	}
	return ret;
}

/* The host backend: one table per algorithm of --algo. */
static int run_host(struct job *j, const enum pn_algo *algos, int nalgos, const uint64_t *sizes,
		    size_t nsizes, uint64_t *wrong_total, double *worst_avg)
{
	int a, ret;

	for (a = 0; a < nalgos; a++) {
		struct pn_sched_job sj = { .rank = j->rank, .nranks = j->nranks, .node = j->coll.node };
		double avg = 0;
		uint64_t wrong = 0;

		if (algos[a] != PN_ALGO_AUTO && pn_sched_supported(algos[a], &sj)) {
			if (j->rank == 0)
				fprintf(stderr, "penny allreduce-test: skipping %s: %s\n",
					pn_algo_name(algos[a]), pn_errmsg(-EINVAL));
			continue;
		}
		ret = sweep(j, algos[a], sizes, nsizes, &avg, &wrong);
		if (ret)
			return ret;
		*wrong_total += wrong;
		*worst_avg = PN_MIN(*worst_avg, avg);
		pn_out_text(j->ctx->out, "# Out of bounds values : %llu %s\n# Avg bus bandwidth    : %g \n",
			    (unsigned long long)wrong, wrong ? "FAILED" : "OK", avg);
	}
	return 0;
}

int cmd_allreduce_test(struct pn_ctx *ctx, int argc, char **argv)
{
	struct pn_boot_cfg cfg;
	struct pn_comm_cfg ccfg = { .transport = pn_cli.transport };
	struct job j;
	enum pn_algo algos[16];
	uint64_t *sizes = NULL, wrong_total = 0;
	size_t nsizes = 0;
	int nalgos = 0, a, ret, failed = 0, rc = 0, has_host, ngpu, ng = 0;
	double worst_avg = INFINITY;
	const char *backends = opt_backend ? opt_backend : "host";
	struct ar_gpu *gpus[MAX_BACKENDS];
	char blist[512], *tok, *save = NULL;

	memset(&j, 0, sizeof(j));
	j.ctx = ctx;
	if (argc > 0)
		return pn_cmd_fail(ctx, 2, "unexpected argument '%s'", argv[0]);
	if (check_backends(ctx, backends, &has_host, &ngpu))
		return 2;
	if (pn_dtype_parse(opt_dtype, &j.dtype) || pn_redop_parse(opt_op, &j.op)) {
		pn_cmd_error(ctx, -EINVAL);
		return 2;
	}
	/* -n -w -c -b -e -i -f -G are in range (the table); -f 0: not given */
	if (opt_minbytes > opt_maxbytes)
		return pn_cmd_fail(ctx, 2, "-b %llu is larger than -e %llu",
				   (unsigned long long)opt_minbytes, (unsigned long long)opt_maxbytes);
	if (opt_plan && strcmp(opt_algo, "auto") && strcmp(opt_algo, "multiring"))
		return pn_cmd_fail(ctx, 2, "--plan runs the multiring algorithm; it cannot run "
				   "--algo %s", opt_algo);
	if (opt_plan && ngpu)
		return pn_cmd_fail(ctx, 2, "--plan runs the host engine's multiring; GPU backends "
				   "plan their own paths");
	if (opt_plan)
		opt_algo = "multiring";
	if (parse_algos(ctx, algos, &nalgos))
		return 2;
	j.es = pn_dtype_size(j.dtype);
	ret = size_list(&sizes, &nsizes, j.es);
	if (ret == -E2BIG)
		return pn_cmd_fail(ctx, 2, "-b, -e and -i or -f give more than %d sizes", MAX_SIZES);
	if (ret)
		return pn_cmd_fail(ctx, 1, "out of memory");

	if (ctx->launch) {
		cfg = *ctx->launch;
	} else {
		pn_boot_cfg_init(&cfg);
		cfg.rank = pn_cli.rank;
		cfg.nranks = pn_cli.nranks;
		cfg.root = pn_cli.root;
	}
	cfg.timeout = pn_cli.timeout;
	ret = pn_boot_cfg_from_env(&cfg);
	if (ret) {
		rc = pn_cmd_fail(ctx, 2, "%s", pn_errmsg(ret));
		goto out;
	}
	j.rank = cfg.rank;
	j.nranks = cfg.nranks;
	ret = pn_boot_init(&j.boot, &cfg);
	if (ret)
		goto fail;
	j.rank = pn_boot_rank(j.boot);
	j.nranks = pn_boot_nranks(j.boot);
	ret = agree_params(&j, algos, nalgos, backends, &rc);
	if (!ret && !rc)
		ret = open_outputs(&j, &rc);
	if (ret || rc)
		goto fail;
	for (a = 0; a < nalgos; a++)
		if (algos[a] == PN_ALGO_MULTIRING)
			ccfg.nchannels = 2;
	if (opt_plan) {
		ret = plan_load(&j, &rc);
		if (ret || rc)
			goto fail;
		ccfg.nchannels = j.plan->map.nrings;
		ccfg.verbs_port = plan_port;
		ccfg.verbs_port_arg = j.plan;
	}
	ret = check_memory(&j, ccfg.nchannels, has_host, algos, nalgos, &rc);
	if (ret || rc)
		goto fail;
	ret = pn_comm_init(&j.comm, j.boot, &ccfg);
	if (ret)
		goto fail;
	ret = pn_coll_init(&j.coll, j.comm);
	if (ret)
		goto fail;
	if (j.plan) {
		ret = pn_coll_set_rings(&j.coll, j.plan->map.nrings,
					(const int *const *)j.plan->map.rings);
		if (ret)
			goto fail;
	}
	if (has_host) {
		ret = pn_comm_alloc(j.comm, opt_maxbytes, &j.sreg);
		if (!ret)
			ret = pn_comm_alloc(j.comm, opt_maxbytes, &j.rreg);
		if (ret)
			goto fail;
	}
	/* every GPU backend starts (and --algo, -G, -g suit it) before any runs */
	snprintf(blist, sizeof(blist), "%s", backends);
	for (tok = strtok_r(blist, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		struct ar_gpu_opts go = { .algos = opt_algo, .graph = opt_graph, .gpus = opt_gpus };

		if (!strcmp(tok, "host"))
			continue;
		rc = ar_gpu_open(ctx, &j.coll, tok, &go, &gpus[ng]);
		if (rc)
			goto out;
		ng++;
	}
	if (j.csv) {
		fprintf(j.csv, "algo,size,count,type,redop,oop_time_us,oop_algbw,oop_busbw,"
			       "oop_wrong,ip_time_us,ip_algbw,ip_busbw,ip_wrong,backend\n");
	}
	j.progress = isatty(STDERR_FILENO) && !pn_cli.json && nsizes > 8;
	if (j.rank != 0) {
		/* only rank 0 presents */
		pn_out_free(ctx->out);
		ctx->out = pn_out_new(fopen("/dev/null", "w"), pn_cli.json);
	}
	pn_out_open_object(ctx->out, NULL);
	pn_out_text(ctx->out, "# penny allreduce-test: %d ranks on %d nodes, backend %s, "
		    "type %s, op %s\n", j.nranks, j.comm->nnodes, backends,
		    pn_dtype_name(j.dtype), pn_redop_name(j.op));
	pn_out_str(ctx->out, PN_JSON, "command", NULL, "allreduce-test");
	pn_out_int(ctx->out, PN_JSON, "nranks", NULL, j.nranks);
	pn_out_int(ctx->out, PN_JSON, "nnodes", NULL, j.comm->nnodes);
	pn_out_str(ctx->out, PN_JSON, "backend", NULL, backends);
	pn_out_str(ctx->out, PN_JSON, "launcher", NULL, cfg.launcher);
	pn_out_int(ctx->out, PN_JSON, "iters", NULL, opt_iters);
	pn_out_int(ctx->out, PN_JSON, "warmup_iters", NULL, opt_warmup);
	pn_out_text(ctx->out, "# minBytes %llu maxBytes %llu step: %g(%s) warmup iters: %d iters: "
		    "%d validation: %d\n#\n# Ranks\n", (unsigned long long)opt_minbytes,
		    (unsigned long long)opt_maxbytes,
		    opt_factor > 1 ? opt_factor : (double)opt_stepbytes,
		    opt_factor > 1 ? "factor" : "bytes", opt_warmup, opt_iters, opt_check);
	pn_out_open_array(ctx->out, "ranks");
	for (a = 0; a < j.nranks; a++) {
		pn_out_open_object(ctx->out, NULL);
		pn_out_int(ctx->out, PN_ANY, "rank", "#  Rank %3lld", a);
		pn_out_int(ctx->out, PN_ANY, "node", " Node %3lld", pn_boot_node(j.boot, a));
		pn_out_int(ctx->out, PN_ANY, "pid", " Pid %7lld", pn_boot_pid(j.boot, a));
		pn_out_str(ctx->out, PN_ANY, "host", " on %s", pn_boot_host(j.boot, a));
		pn_out_str(ctx->out, PN_ANY, "transport", " via %s\n",
			   pn_comm_transport_name(j.comm, a == 0 ? (j.nranks > 1 ? 1 : 0) : a));
		pn_out_close_object(ctx->out);
	}
	pn_out_close_array(ctx->out);
	if (j.plan)
		plan_print(&j);
	if (ng) {
		pn_out_open_array(ctx->out, "gpu_backends");
		for (a = 0; a < ng; a++) {
			ret = ar_gpu_print_ranks(gpus[a], ctx->out);
			if (ret)
				goto fail;
		}
		pn_out_close_array(ctx->out);
	}
	pn_out_open_array(ctx->out, "results");
	snprintf(blist, sizeof(blist), "%s", backends);
	save = NULL;
	for (tok = strtok_r(blist, ",", &save), a = 0; tok; tok = strtok_r(NULL, ",", &save)) {
		struct ar_sweep sw = {
			.dtype = j.dtype, .op = j.op, .sizes = sizes, .nsizes = nsizes,
			.iters = opt_iters, .warmup = opt_warmup, .check = opt_check,
			.seed = opt_seed,
			.sink = { .arg = &j, .header = sink_header, .row = sink_row },
		};

		if (!strcmp(tok, "host"))
			ret = run_host(&j, algos, nalgos, sizes, nsizes, &wrong_total, &worst_avg);
		else
			ret = ar_gpu_sweep(gpus[a++], ctx->out, &sw, &worst_avg, &wrong_total);
		if (ret)
			goto fail;
	}
	pn_out_close_array(ctx->out);
	if (j.rank == 0)
		ar_ratio_table(ctx->out, j.rows, j.nrows, backends);
	if (!isfinite(worst_avg))
		worst_avg = 0;
	failed = wrong_total > 0 || (opt_min_busbw >= 0 && worst_avg < opt_min_busbw);
	pn_out_open_object(ctx->out, "summary");
	pn_out_uint(ctx->out, PN_JSON, "wrong", NULL, (unsigned long long)wrong_total);
	pn_out_float(ctx->out, PN_JSON, "avg_busbw", NULL, worst_avg);
	if (opt_min_busbw >= 0)
		pn_out_float(ctx->out, PN_JSON, "min_busbw", NULL, opt_min_busbw);
	pn_out_bool(ctx->out, PN_JSON, "passed", NULL, !failed);
	pn_out_close_object(ctx->out);
	pn_out_close_object(ctx->out);
	if (j.rank == 0 && failed) {
		if (wrong_total)
			fprintf(stdout, "%sFAILED: %llu wrong values\n", pn_cli.json ? "" : "# ",
				(unsigned long long)wrong_total);
		else
			fprintf(stdout, "%sFAILED: average bus bandwidth %.2f GB/s is below %.2f GB/s\n",
				pn_cli.json ? "" : "# ", worst_avg, opt_min_busbw);
	}
	if (pn_cli.json && failed && j.rank == 0)
		fprintf(stderr, "penny allreduce-test: FAILED\n");
	ret = finish_outputs(&j, sizes, nsizes);
	if (ret) {
		/* the results could not be kept: could not run (rank 0 only) */
		rc = pn_cmd_fail(ctx, 2, "%s", pn_errmsg(ret));
		goto out;
	}
	rc = failed ? 1 : 0;
	goto out;
fail:
	if (!rc) {
		pn_cmd_fail(ctx, 1, "rank %d: %s", j.rank, pn_errmsg(ret));
		rc = pn_cmd_exit_code(ret);
	}
out:
	while (ng > 0)
		ar_gpu_close(gpus[--ng]);
	/* not committed: a failed run leaves the files as they were */
	pn_ofile_abort(j.csv_of);
	pn_ofile_abort(j.plot_of);
	pn_ofile_abort(j.tune_of);
	if (j.comm) {
		pn_comm_reg_free(j.comm, j.sreg);
		pn_comm_reg_free(j.comm, j.rreg);
	}
	if (j.coll.comm)
		pn_coll_release(&j.coll);
	pn_comm_free(j.comm);
	pn_boot_free(j.boot);
	plan_free(j.plan);
	free(j.rows);
	free(sizes);
	return rc;
}
