/* SPDX-License-Identifier: MIT */
/*
 * penny allreduce-test: the options, the job and the presentation of the
 * allreduce sweep (src/harness/sweep.h) with the table of nccl-tests'
 * all_reduce_perf (out-of-place, then in-place), over the engine's
 * algorithms (--backend host) and GPU plugins, and the ratio table that
 * compares the backends.  Only rank 0 prints.
 */
#define _GNU_SOURCE
#include "penny.h"
#include "base/plot.h"

#include "engine/boot.h"
#include "engine/coll.h"
#include "engine/jobparams.h"
#include "base/log.h"
#include "engine/mem.h"
#include "base/minijson.h"
#include "base/ofile.h"
#include "plan/plan_job.h"
#include "gpu/plugin.h"
#include "harness/arjob.h"
#include "harness/plansched.h"
#include "harness/sweep.h"
#include "base/util.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static struct {
	uint64_t minbytes, maxbytes, stepbytes, seed;
	double factor, min_busbw;
	int iters, warmup, check, graph, root;
	/* nccl-tests' -t -g -m -N -p -z -C -R -a */
	int nthreads, ngpus, agg_iters, run_cycles, parallel_init, blocking, cputime, reg, average;
	const char *dtype, *op, *algo;
	const char *backend, *csv, *plot, *tune_out, *gpus, *plan;
} opt = {
	.minbytes = 8, .maxbytes = 32u << 20, .stepbytes = 1u << 20, .seed = 0x9e3779b97f4a7c15ull,
	.min_busbw = -1, .iters = 20, .warmup = 5, .check = 1, .root = -1,
	.dtype = "float", .op = "sum", .algo = "auto",
	.nthreads = 1, .ngpus = 1, .agg_iters = 1, .run_cycles = 1, .average = 3,
};

#define MAX_BYTES (1ull << 40)

const struct pn_opt allreduce_test_options[] = {
	{ "minbytes", 'b', OPT_SIZE, &opt.minbytes, "SIZE", "smallest size (default 8)", NULL,
	  OPT_RANGE(0, MAX_BYTES) },
	{ "maxbytes", 'e', OPT_SIZE, &opt.maxbytes, "SIZE", "largest size (default 32M)", NULL,
	  OPT_RANGE(0, MAX_BYTES) },
	{ "stepbytes", 'i', OPT_SIZE, &opt.stepbytes, "SIZE",
	  "size increment when no factor is given (default 1M)", NULL, OPT_RANGE(1, MAX_BYTES) },
	{ "stepfactor", 'f', OPT_DOUBLE, &opt.factor, "F", "multiply the size by F each step", NULL,
	  OPT_RANGE(1.01, 1024) },
	{ "iters", 'n', OPT_INT, &opt.iters, "N",
	  "timed iterations per size (default 20; 0: the check only)", NULL, OPT_RANGE(0, 1000000) },
	{ "warmup_iters", 'w', OPT_INT, &opt.warmup, "N", "warm-up iterations (default 5)", NULL,
	  OPT_RANGE(0, 1000000) },
	{ "check", 'c', OPT_INT, &opt.check, "0|1", "check results against the exact reference "
	  "(default 1)", "0 1", OPT_RANGE(0, 1) },
	{ "datatype", 'd', OPT_STRING, &opt.dtype, "TYPE", "element type (default float)",
	  "int8 uint8 int32 uint32 int64 uint64 half bfloat16 float double", NULL },
	{ "op", 'o', OPT_STRING, &opt.op, "OP", "reduction: sum prod min max avg (default sum)",
	  "sum prod min max avg", NULL },
	{ "root-rank", 'r', OPT_INT, &opt.root, "R", "accepted for nccl-tests' -r (allreduce has "
	  "no root; --root is the rendezvous address)", NULL, OPT_RANGE(0, 65535) },
	{ "algo", 'A', OPT_STRING, &opt.algo, "NAME",
	  "ring, simple-ring, one-shot, two-shot, hierarchical, multiring, auto or all (GPU "
	  "backends: auto, one-shot, two-shot, ring, simple-ring, symmetric); a comma list runs several "
	  "(default auto)",
	  "auto all ring simple-ring one-shot two-shot hierarchical multiring symmetric", OPT_LIST },
	{ "backend", 0, OPT_APPEND, &opt.backend, "NAME",
	  "host (the engine, default) or a GPU plugin: cuda, nccl, nvshmem; a comma list or repeated runs "
	  "each in turn, then a ratio table", "host cuda nccl nvshmem", OPT_LIST },
	{ "cudagraph", 'G', OPT_INT, &opt.graph, "N",
	  "GPU backends: capture N calls into a CUDA graph and time its replays (nccl-tests -G)",
	  NULL, OPT_RANGE(0, 100000) },
	{ "gpus", 0, OPT_STRING, &opt.gpus, "LIST",
	  "GPU backends: the device of each local rank, like 0,1,2,3 (default: the local rank)",
	  NULL, OPT_LIST },
	/* nccl-tests' letters (all_reduce_perf) */
	{ "nthreads", 't', OPT_INT, &opt.nthreads, "N",
	  "threads per process: 1, as penny runs one rank per process (--np N starts N)", NULL,
	  OPT_RANGE(1, 1024) },
	{ "ngpus", 'g', OPT_INT, &opt.ngpus, "N",
	  "GPUs per thread: 1, as penny drives one GPU per rank (--gpus picks them)", NULL,
	  OPT_RANGE(1, 1024) },
	{ "agg_iters", 'm', OPT_INT, &opt.agg_iters, "N",
	  "operations aggregated per iteration: 1, as penny times one allreduce at a time",
	  NULL, OPT_RANGE(1, 1000000) },
	{ "run_cycles", 'N', OPT_INT, &opt.run_cycles, "N",
	  "sweeps run and printed: 1 (nccl-tests' 0 runs forever; run penny again)", NULL,
	  OPT_RANGE(0, 1000000) },
	{ "parallel_init", 'p', OPT_INT, &opt.parallel_init, "0|1",
	  "accepted: with one thread per rank every rank initialises in parallel anyway", "0 1",
	  OPT_RANGE(0, 1) },
	{ "blocking", 'z', OPT_INT, &opt.blocking, "0|1|2|3",
	  "0 (nccl-tests' default): the iterations back to back, no barrier between them; "
	  "penny has no other", "0 1 2 3", OPT_RANGE(0, 3) },
	{ "report_cputime", 'C', OPT_INT, &opt.cputime, "0|1",
	  "0: each backend's own clock (host: wall clock; GPU: CUDA events); penny has no "
	  "CPU-time report", "0 1", OPT_RANGE(0, 1) },
	{ "local_register", 'R', OPT_INT, &opt.reg, "0|1|2",
	  "0: plain buffers; 2 (symmetric) is --backend nccl --algo symmetric; 1 is not "
	  "supported", "0 1 2", OPT_RANGE(0, 2) },
	{ "average", 'a', OPT_INT, &opt.average, "0|1|2|3",
	  "time of a size over the ranks: 0 rank 0's, 1 the mean, 2 the fastest, 3 the slowest "
	  "(default 3)", "0 1 2 3", OPT_RANGE(0, 3) },
	{ "nccl-timeout", 'T', OPT_SECONDS, &pn_cli.timeout, "SEC",
	  "nccl-tests' -T: the same as --timeout", NULL, OPT_RANGE(0.01, 86400) },
	{ "csv", 0, OPT_STRING, &opt.csv, "FILE", "also write the rows as CSV to FILE", NULL, NULL },
	{ "plot", 0, OPT_STRING, &opt.plot, "FILE", "draw busbw and time against size as SVG",
	  NULL, NULL },
	{ "min-busbw", 0, OPT_DOUBLE, &opt.min_busbw, "GBPS",
	  "fail (exit 1, FAILED) when the average bus bandwidth is below GBPS", NULL,
	  OPT_RANGE(0, 1e9) },
	{ "tune-out", 0, OPT_STRING, &opt.tune_out, "FILE",
	  "write the fastest algorithm per size as a tuning table (use with --algo all)", NULL,
	  NULL },
	{ "plan", 0, OPT_STRING, &opt.plan, "FILE",
	  "run multiring over the rings of FILE (penny ring-plan --json): one channel per ring, "
	  "its NICs on verbs; implies --algo multiring (GPU backends: the nvshmem plugin's ring "
	  "channels follow the rings)", NULL, NULL },
	{ "seed", 0, OPT_U64, &opt.seed, "N",
	  "seed of the check data (default: a fixed seed, the same on every rank)", NULL,
	  OPT_RANGE(0, OPT_U64_MAX) },
	OPT_TABLE_END
};

#define MAX_GPUS 1024

struct job {
	struct pn_ctx *ctx;
	struct pn_planned *plan;
	struct pn_boot *boot;
	struct pn_arjob aj;	/* communicator, collective, backends */
	struct pn_sweep sw;
	int rank, nranks;
	char *desc[PN_ARJOB_MAX_BACKENDS];	/* GPU backends: every rank's device */
	int dev[MAX_GPUS], ndev;	/* --gpus; ndev -1: not given */
	/* rank 0's outputs, opened before the work, committed after it */
	struct pn_ofile *csv_of, *plot_of, *tune_of;
	FILE *csv;
	int progress;
};

/*
 * --plan: every rank reads the plan and places it on the job's nodes and
 * ranks (harness/plansched.h).  A problem anywhere fails every rank with
 * exit 2; only the lowest rank that found one says why.
 */
static int plan_load(struct job *j, int *rc)
{
	int first = -1, mine = 0;
	int ret = pn_planned_load(&j->plan, j->boot, opt.plan, &first, &mine);

	*rc = 0;
	if (first >= 0) {
		if (first == j->rank)
			pn_cmd_fail(j->ctx, 2, "--plan: %s", pn_errmsg(ret));
		*rc = mine == -ENOMEM || ret == -ENOMEM ? 1 : 2;
		return 0;
	}
	return ret;
}

/*
 * Every option that changes the data or the schedule, compared across the
 * ranks before anything runs (per-rank options such as --gpus and the output
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
	pn_job_param_set(&p[n++], "-b", "%llu", (unsigned long long)opt.minbytes);
	pn_job_param_set(&p[n++], "-e", "%llu", (unsigned long long)opt.maxbytes);
	if (opt.factor > 1) {
		pn_job_param_set(&p[n++], "-f", "%.15g", opt.factor);
		pn_job_param_set(&p[n++], "-i", "unused (-f)");
	} else {
		pn_job_param_set(&p[n++], "-f", "none");
		pn_job_param_set(&p[n++], "-i", "%llu", (unsigned long long)opt.stepbytes);
	}
	pn_job_param_set(&p[n++], "-n", "%d", opt.iters);
	pn_job_param_set(&p[n++], "-w", "%d", opt.warmup);
	pn_job_param_set(&p[n++], "-c", "%d", opt.check);
	pn_job_param_set(&p[n++], "-d", "%s", pn_dtype_name(j->sw.dtype));
	pn_job_param_set(&p[n++], "-o", "%s", pn_redop_name(j->sw.op));
	for (a = 0; a < nalgos; a++)
		snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s", a ? "," : "",
			 pn_algo_name(algos[a]));
	/* GPU backends read --algo themselves, names of their own included */
	pn_job_param_set(&p[n++], "-A", "%s", strcmp(backends, "host") ? opt.algo : list);
	pn_job_param_set(&p[n++], "--backend", "%s", backends);
	pn_job_param_set(&p[n++], "-G", "%d", opt.graph);
	pn_job_param_set(&p[n++], "-a", "%d", opt.average);
	pn_job_param_set(&p[n++], "--seed", "%llu", (unsigned long long)opt.seed);
	pn_job_param_file(&p[n++], "--plan", opt.plan);
	pn_job_param_set(&p[n++], "--transport", "%s", pn_cli.transport ? pn_cli.transport : "probe");
	if (opt.min_busbw >= 0)
		pn_job_param_set(&p[n++], "--min-busbw", "%.15g", opt.min_busbw);
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
	const char *paths[] = { opt.csv, opt.plot, opt.tune_out };
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
	pn_out_str(o, PN_ANY, "file", "# Plan %s:", opt.plan);
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

static void print_header(void *arg, const char *backend, const char *algo_name)
{
	struct job *j = arg;
	struct pn_out *o = j->ctx->out;

	if (j->rank != 0)
		return;
	pn_out_text(o, "#\n# algorithm: %s, backend: %s\n#\n", algo_name, backend);
	pn_out_text(o, "#%63s%37s\n", "out-of-place", "in-place");
	pn_out_text(o, "#%11s %13s %9s %7s %7s %9s %7s %7s %6s %9s %7s %7s %6s %6s\n", "size",
		    "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time",
		    "algbw", "busbw", "#wrong", "#diff");
	pn_out_text(o, "#%11s %13s %9s %7s %7s %9s %7s %7s %6s %9s %7s %7s %6s %6s\n", "(B)",
		    "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)",
		    "(GB/s)", "", "ranks");
}

/* Rank 0: a row in the table (or JSON) and in --csv. */
static int print_row(void *arg, const struct pn_sweep_row *rw, size_t i, size_t n)
{
	struct job *j = arg;
	struct pn_out *o = j->ctx->out;
	int k;

	if (j->rank != 0)
		return 0;
	pn_out_open_object(o, NULL);
	pn_out_str(o, PN_JSON, "backend", NULL, rw->backend);
	pn_out_str(o, PN_JSON, "algo", NULL, rw->algo);
	if (rw->ran[0])
		pn_out_str(o, PN_JSON, "ran", NULL, rw->ran);
	pn_out_uint(o, PN_ANY, "size", " %11llu", (unsigned long long)rw->bytes);
	pn_out_uint(o, PN_ANY, "count", " %13llu", (unsigned long long)rw->count);
	pn_out_str(o, PN_ANY, "type", " %9s", pn_dtype_name(j->sw.dtype));
	pn_out_str(o, PN_ANY, "redop", " %7s", pn_redop_name(j->sw.op));
	pn_out_int(o, PN_ANY, "root", " %7lld", -1);
	for (k = 0; k < 2; k++) {
		pn_out_open_object(o, k ? "ip" : "oop");
		pn_out_float(o, PN_ANY, "time_us", rw->time_us[k] >= 1e4 ? " %9.0f" : " %9.2f",
			     rw->time_us[k]);
		pn_out_float(o, PN_ANY, "algbw", " %7.2f", rw->algbw[k]);
		pn_out_float(o, PN_ANY, "busbw", " %7.2f", rw->busbw[k]);
		if (opt.check) {
			pn_out_uint(o, PN_ANY, "wrong", " %6llu", (unsigned long long)rw->wrong[k]);
			pn_out_uint(o, PN_JSON, "differ", NULL, (unsigned long long)rw->differ[k]);
		} else {
			pn_out_str(o, PN_ANY, "wrong", " %6s", "N/A");
		}
		pn_out_close_object(o);
	}
	/* ranks whose output is not bit-identical to rank 0's, out of and in place */
	if (opt.check)
		pn_out_text(o, " %6llu", (unsigned long long)(rw->differ[0] + rw->differ[1]));
	else
		pn_out_text(o, " %6s", "N/A");
	pn_out_text(o, "\n");
	pn_out_close_object(o);
	fflush(pn_out_file(o));
	if (j->csv)
		pn_sweep_csv_row(j->csv, rw, j->sw.dtype, j->sw.op);
	if (j->progress)
		fprintf(stderr, "\r%s %zu/%zu sizes ", rw->algo, i + 1, n);
	return 0;
}

static void print_footer(void *arg, const struct pn_sweep_series *sr)
{
	struct job *j = arg;

	if (j->rank != 0)
		return;
	if (j->progress)
		fprintf(stderr, "\r%40s\r", "");
	pn_out_text(j->ctx->out, "# Out of bounds values : %llu %s\n# Avg bus bandwidth    : %g \n",
		    (unsigned long long)sr->wrong, sr->wrong ? "FAILED" : "OK", sr->avg_busbw);
	if (opt.check)
		pn_out_text(j->ctx->out, "# Rank outputs differ  : %llu %s\n",
			    (unsigned long long)sr->differ, sr->differ ? "FAILED" : "OK");
}

static void print_skip(void *arg, const char *backend, const char *algo, int err)
{
	struct job *j = arg;

	if (j->rank == 0)
		pn_cmd_say(j->ctx, "skipping %s: %s", algo, pn_errmsg(err));
}

/* Every rank: where its check of a GPU backend first went wrong. */
static void print_bad(void *arg, const struct pn_sweep_bad *b)
{
	struct job *j = arg;

	if (b->have_first)
		pn_cmd_fail(j->ctx, 0, "rank %d: %s %s %zu bytes%s: %llu wrong values, the first at "
				       "element %llu (0x%llx)",
			    b->rank, b->backend, b->algo, b->bytes, b->ip ? " in place" : "",
			    (unsigned long long)b->wrong, (unsigned long long)b->first,
			    (unsigned long long)b->got);
}

/*
 * --algo: each algorithm once ("all" is every one but auto); at most 16.
 * ctx NULL: quiet (the prelaunch memory plan; the ranks report).
 */
/* Algorithm names that only GPU plugins have (src/harness/sweep_gpu.c): the
 * host engine's list skips them; a job with the host backend refuses them. */
static int gpu_only_algo(const char *s)
{
	return !strcmp(s, "symmetric");
}

static int parse_algos(struct pn_ctx *ctx, int has_host, enum pn_algo *algos, int *n)
{
	char *list = strdup(opt.algo), *tok, *save = NULL;
	int k = 0, ret = 0, i, m;

	if (!list)
		return -ENOMEM;
	for (tok = strtok_r(list, ",", &save); tok && !ret; tok = strtok_r(NULL, ",", &save)) {
		enum pn_algo a[PN_NALGOS];
		int na = 0;

		if (gpu_only_algo(tok)) {
			if (has_host)
				ret = ctx ? pn_cmd_fail(ctx, -EINVAL, "the host backend has no algorithm "
							"'%s' (a GPU backend's: --backend nccl)", tok)
					  : -EINVAL;
			continue;
		}
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
							opt.algo, pn_algo_name(a[i])) : -EINVAL;
			else if (k == PN_SWEEP_MAX_ALGOS)
				ret = ctx ? pn_cmd_fail(ctx, -EINVAL, "--algo '%s': at most 16 algorithms",
							opt.algo) : -EINVAL;
			else
				algos[k++] = a[i];
		}
	}
	free(list);
	*n = k;
	return ret;
}

static int write_plot(struct job *j)
{
	char title[160];
	int ret;

	snprintf(title, sizeof(title), "penny allreduce-test: %d ranks on %d nodes, %s %s, out of place",
		 j->nranks, j->aj.comm->nnodes, pn_dtype_name(j->sw.dtype), pn_redop_name(j->sw.op));
	ret = pn_sweep_plot(&j->sw, pn_ofile_file(j->plot_of), title);
	if (ret) {
		pn_err_ctx(ret, "'%s'", opt.plot);
	} else {
		ret = pn_ofile_commit(j->plot_of);
		j->plot_of = NULL;
	}
	return ret;
}

static int write_tune(struct job *j)
{
	int ret = pn_sweep_tune_save(&j->sw, pn_ofile_file(j->tune_of), opt.tune_out, j->nranks,
				     j->aj.comm->nnodes);

	if (!ret) {
		ret = pn_ofile_commit(j->tune_of);
		j->tune_of = NULL;
	}
	return ret;
}

/* Rank 0, after the sweep: the tuning table and the plot written, every
 * output committed. */
static int finish_outputs(struct job *j)
{
	int ret;

	if (j->tune_of) {
		ret = write_tune(j);
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

/* --gpus: "0,1,2", each 0..1023; one line and -EINVAL otherwise. */
static int parse_gpus(struct pn_ctx *ctx, const char *list, int *dev, int max, int *n)
{
	const char *p = list;

	*n = 0;
	if (!*p)
		return pn_cmd_fail(ctx, -EINVAL, "--gpus needs a list of GPU indices, like 0,1,2,3");
	while (*p) {
		char *end;
		long v;

		if (*p < '0' || *p > '9')
			return pn_cmd_fail(ctx, -EINVAL, "--gpus '%s': '%s' is not a GPU index", list, p);
		v = strtol(p, &end, 10);
		if (v > 1023 || (*end && *end != ','))
			return pn_cmd_fail(ctx, -EINVAL, "--gpus '%s': '%.*s' is not a GPU index", list,
					   (int)strcspn(p, ","), p);
		if (*n == max)
			return pn_cmd_fail(ctx, -EINVAL, "--gpus '%s': more than %d GPUs", list, max);
		dev[(*n)++] = (int)v;
		p = *end ? end + 1 : end;
		if (*end && !*p)
			return pn_cmd_fail(ctx, -EINVAL, "--gpus '%s' ends with a comma", list);
	}
	return 0;
}

/* --backend: names (host or a plugin), each once; -G and --gpus need a GPU one. */
static int check_backends(struct job *j, const char *list, int *has_host, int *ngpu)
{
	struct pn_ctx *ctx = j->ctx;
	char copy[512], *tok, *save = NULL, seen[PN_ARJOB_MAX_BACKENDS][32];
	int n = 0, k;

	*has_host = 0;
	*ngpu = 0;
	j->ndev = -1;
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
		if (n == PN_ARJOB_MAX_BACKENDS)
			return pn_cmd_fail(ctx, 2, "--backend: at most %d backends",
					   PN_ARJOB_MAX_BACKENDS);
		snprintf(seen[n++], sizeof(seen[0]), "%s", tok);
		if (!strcmp(tok, "host"))
			*has_host = 1;
		else
			(*ngpu)++;
	}
	if (!n)
		return pn_cmd_fail(ctx, 2, "--backend is empty");
	if (opt.graph > 0 && !*ngpu)
		return pn_cmd_fail(ctx, 2, "-G captures CUDA graphs: it needs a GPU backend "
					   "(--backend cuda or nccl)");
	if (opt.gpus && !*ngpu)
		return pn_cmd_fail(ctx, 2, "--gpus picks GPUs: it needs a GPU backend (--backend cuda or "
					   "nccl)");
	if (opt.gpus && parse_gpus(ctx, opt.gpus, j->dev, MAX_GPUS, &j->ndev))
		return 2;
	return 0;
}

static int has_multiring(const enum pn_algo *algos, int nalgos)
{
	while (nalgos-- > 0)
		if (algos[nalgos] == PN_ALGO_MULTIRING)
			return 1;
	return 0;
}

/* --np: the planned memory of the ranks about to be forked (a --plan's rings
 * are not read yet: one channel, the ranks check again with them). */
int allreduce_test_prelaunch(struct pn_ctx *ctx, int np)
{
	const char *backends = opt.backend ? opt.backend : "host";
	char copy[512], *tok, *save = NULL;
	enum pn_algo algos[PN_SWEEP_MAX_ALGOS];
	struct pn_mem_job mj;
	int nalgos, host = 0, ret;

	snprintf(copy, sizeof(copy), "%s", backends);
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
		host |= !strcmp(tok, "host");
	/* options that do not parse are the ranks' to report */
	if (parse_algos(NULL, host, algos, &nalgos))
		return 0;
	pn_sweep_mem_job(&mj, np, np, pn_cli.transport, has_multiring(algos, nalgos) ? 2 : 1,
			 host ? opt.maxbytes : 0, algos, nalgos, pn_cli.tune_file != NULL);
	mj.base_bytes = PN_MEM_RANK_BASE;
	ret = pn_cli.mem_check ? pn_mem_check(&mj) : 0;
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
	pn_sweep_mem_job(&mj, pn_boot_local_size(j->boot), j->nranks, pn_cli.transport, nchan,
			 host ? opt.maxbytes : 0, algos, nalgos, pn_cli.tune_file != NULL);
	ret = pn_boot_agree_err(j->boot, pn_cli.mem_check ? pn_mem_check(&mj) : 0, 1, &first);
	if (first >= 0) {
		if (first == j->rank)
			pn_cmd_fail(j->ctx, 2, "%s", pn_errmsg(ret));
		*rc = 2;
		return 0;
	}
	return ret;
}

/* A GPU plugin's log lines, each with its rank. */
static void plugin_log(void *arg, int level, const char *msg)
{
	struct job *j = arg;

	pn_cmd_fail(j->ctx, 0, "rank %d: %s%s", j->rank, level == PENNY_LOG_ERROR ? "error: " : "",
		    msg);
}

/*
 * Every backend of --backend, in order: the host's buffers, then every GPU
 * backend started (and --algo, -G, --gpus suit it) before any runs, and what
 * each rank's plugin runs on.  0, or the exit code after one line.
 */
static int open_backends(struct job *j, const char *backends, const enum pn_algo *algos,
			 int nalgos, int *err)
{
	char list[512], *tok, *save = NULL;
	int ret;

	snprintf(list, sizeof(list), "%s", backends);
	for (tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		struct pn_sweep_gpu_cfg gc = {
			.name = tok, .algos = opt.algo, .graph = opt.graph, .gpus = opt.gpus,
			.dev = j->dev, .ndev = j->ndev, .log = plugin_log, .log_arg = j,
			.xnode = &pn_cli.xnode,
		};

		if (!strcmp(tok, "host")) {
			*err = pn_arjob_add_host(&j->aj, algos, nalgos, opt.maxbytes);
			if (*err)
				return 0;
			continue;
		}
		ret = pn_arjob_add_gpu(&j->aj, &gc);
		if (ret) {
			/* every rank has the same (first failing rank's) message */
			if (j->rank == 0)
				pn_cmd_error(j->ctx, ret);
			return 2;
		}
		*err = pn_sweep_gpu_describe(j->aj.be[j->aj.nbe - 1], &j->desc[j->aj.nbe - 1]);
		if (*err)
			return 0;
	}
	return 0;
}

/* Rank 0: the job, its ranks, the plan and what each GPU backend runs on. */
static void print_job(struct job *j, const char *backends, const char *launcher)
{
	struct pn_out *o = j->ctx->out;
	int a, r, ngpu = 0;

	pn_out_text(o, "# penny allreduce-test: %d ranks on %d nodes, backend %s, type %s, op %s\n",
		    j->nranks, j->aj.comm->nnodes, backends, pn_dtype_name(j->sw.dtype),
		    pn_redop_name(j->sw.op));
	pn_out_str(o, PN_JSON, "command", NULL, "allreduce-test");
	pn_out_int(o, PN_JSON, "nranks", NULL, j->nranks);
	pn_out_int(o, PN_JSON, "nnodes", NULL, j->aj.comm->nnodes);
	pn_out_str(o, PN_JSON, "backend", NULL, backends);
	pn_out_str(o, PN_JSON, "launcher", NULL, launcher);
	pn_out_int(o, PN_JSON, "iters", NULL, opt.iters);
	pn_out_int(o, PN_JSON, "warmup_iters", NULL, opt.warmup);
	pn_out_text(o, "# minBytes %llu maxBytes %llu step: %g(%s) warmup iters: %d iters: "
		    "%d validation: %d\n#\n# Ranks\n", (unsigned long long)opt.minbytes,
		    (unsigned long long)opt.maxbytes,
		    opt.factor > 1 ? opt.factor : (double)opt.stepbytes,
		    opt.factor > 1 ? "factor" : "bytes", opt.warmup, opt.iters, opt.check);
	pn_out_open_array(o, "ranks");
	for (r = 0; r < j->nranks; r++) {
		pn_out_open_object(o, NULL);
		pn_out_int(o, PN_ANY, "rank", "#  Rank %3lld", r);
		pn_out_int(o, PN_ANY, "node", " Node %3lld", pn_boot_node(j->boot, r));
		pn_out_int(o, PN_ANY, "pid", " Pid %7lld", pn_boot_pid(j->boot, r));
		pn_out_str(o, PN_ANY, "host", " on %s", pn_boot_host(j->boot, r));
		pn_out_str(o, PN_ANY, "transport", " via %s\n",
			   pn_comm_transport_name(j->aj.comm, r == 0 ? (j->nranks > 1 ? 1 : 0) : r));
		pn_out_close_object(o);
	}
	pn_out_close_array(o);
	if (j->plan)
		plan_print(j);
	for (a = 0; a < j->aj.nbe; a++) {
		const struct pn_sweep_backend *be = j->aj.be[a];

		if (!j->desc[a])
			continue; /* the host */
		if (!ngpu++)
			pn_out_open_array(o, "gpu_backends");
		pn_out_open_object(o, NULL);
		pn_out_str(o, PN_JSON, "name", NULL, be->name);
		pn_out_bool(o, PN_JSON, "hierarchical", NULL, pn_sweep_gpu_hierarchical(be));
		pn_out_int(o, PN_JSON, "graph", NULL, pn_sweep_gpu_graph(be));
		pn_out_str(o, PN_JSON, "xnode", NULL, pn_sweep_gpu_xnode(be));
		pn_out_int(o, PN_JSON, "xnode_ll_max", NULL, (long long)pn_sweep_gpu_xnode_ll(be));
		if (pn_sweep_gpu_xnode(be))
			pn_out_text(o, "# %s: across %d nodes GPU-driven (the plugin's kernels hand chunks "
				       "to a proxy thread per rank, %s between nodes, LL lines up to %lld B)\n",
				    be->name, j->aj.comm->nnodes, pn_sweep_gpu_xnode(be),
				    (long long)pn_sweep_gpu_xnode_ll(be));
		else if (pn_sweep_gpu_hierarchical(be))
			pn_out_text(o, "# %s: hierarchical over %d nodes (the plugin within each node, "
				       "the engine's ring between them)\n", be->name, j->aj.comm->nnodes);
		pn_out_open_array(o, "ranks");
		for (r = 0; r < j->nranks; r++) {
			pn_out_open_object(o, NULL);
			pn_out_int(o, PN_ANY, "rank", "#  Rank %3lld", r);
			pn_out_str(o, PN_TEXT, NULL, " %s:", be->name);
			pn_out_str(o, PN_ANY, "device", " %s\n",
				   j->desc[a] + (size_t)r * PN_SWEEP_DESC_LEN);
			pn_out_close_object(o);
		}
		pn_out_close_array(o);
		pn_out_close_object(o);
	}
	if (ngpu)
		pn_out_close_array(o);
}

/*
 * Rank 0, the ratio table: every backend/algorithm against the reference
 * backend's first algorithm, per size, out of place: time ratio (< 1:
 * faster than the reference) and busbw ratio (> 1: more bandwidth).  The
 * reference is nccl when it ran, else the first backend.  Nothing when
 * fewer than two backends ran.
 */
static void print_ratios(struct job *j, const char *backends)
{
	const struct pn_sweep_row *rows = j->sw.rows;
	size_t nrows = j->sw.nrows, i, q, k;
	struct pn_out *o = j->ctx->out;
	const char *ref = pn_sweep_ref_backend(&j->sw, backends);

	if (!ref)
		return;
	pn_out_text(o, "#\n# ratios against %s, its fastest algorithm at each size, out of place "
		       "(time ratio below 1 and busbw ratio above 1: faster than %s)\n",
		    ref, ref);
	pn_out_text(o, "#%11s %-8s %-10s %9s %9s %-10s %7s %7s %7s %7s\n", "size", "backend",
		    "algorithm", "time", "ref time", "ref algo", "time", "busbw", "ref", "busbw");
	pn_out_text(o, "#%11s %-8s %-10s %9s %9s %-10s %7s %7s %7s %7s\n", "(B)", "", "", "(us)",
		    "(us)", "", "ratio", "(GB/s)", "(GB/s)", "ratio");
	pn_out_open_array(o, "ratios");
	for (i = 0; i < nrows; i++) {
		/* each series once, in order of appearance, the reference's excepted */
		for (k = 0; k < i && !pn_sweep_same_series(&rows[k], &rows[i]); k++)
			;
		if (k < i || !strcmp(rows[i].backend, ref))
			continue;
		for (q = i; q < nrows; q++) {
			const struct pn_sweep_row *r = &rows[q], *f;

			if (!pn_sweep_same_series(r, &rows[i]))
				continue;
			f = pn_sweep_ref_row(&j->sw, ref, r->bytes);
			if (!f)
				continue;
			pn_out_open_object(o, NULL);
			pn_out_uint(o, PN_ANY, "size", " %11llu", (unsigned long long)r->bytes);
			pn_out_str(o, PN_ANY, "backend", " %-8s", r->backend);
			pn_out_str(o, PN_ANY, "algo", " %-10s", r->algo);
			pn_out_str(o, PN_JSON, "ref_backend", NULL, f->backend);
			pn_out_float(o, PN_ANY, "time_us", " %9.2f", r->time_us[0]);
			pn_out_float(o, PN_ANY, "ref_time_us", " %9.2f", f->time_us[0]);
			pn_out_str(o, PN_ANY, "ref_algo", " %-10s", f->algo);
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

/*
 * Rank 0, the verdict: the summary object; a failure is "passed": false
 * with its reason, and one FAILED line: on stdout in text, on stderr with
 * --json (stdout carries only the JSON document).  Returns whether failed.
 */
static int print_summary(struct job *j)
{
	struct pn_out *o = j->ctx->out;
	double avg = isfinite(j->sw.worst_avg) ? j->sw.worst_avg : 0;
	char why[160];

	pn_sweep_verdict(j->sw.wrong, j->sw.differ, avg, opt.min_busbw, why, sizeof(why));
	pn_out_open_object(o, "summary");
	pn_out_uint(o, PN_JSON, "wrong", NULL, (unsigned long long)j->sw.wrong);
	pn_out_uint(o, PN_JSON, "differ", NULL, (unsigned long long)j->sw.differ);
	pn_out_float(o, PN_JSON, "avg_busbw", NULL, avg);
	if (opt.min_busbw >= 0)
		pn_out_float(o, PN_JSON, "min_busbw", NULL, opt.min_busbw);
	pn_out_bool(o, PN_JSON, "passed", NULL, !why[0]);
	if (why[0])
		pn_out_str(o, PN_JSON, "reason", NULL, why);
	pn_out_close_object(o);
	pn_out_close_object(o);
	if (why[0] && pn_cli.json)
		pn_cmd_fail(j->ctx, 1, "FAILED: %s", why);
	else if (why[0])
		pn_out_text(o, "# FAILED: %s\n", why);
	return why[0] != 0;
}

/*
 * nccl-tests' letters that penny has no second way for: the value that
 * means what penny does is taken, another is one line naming what to do.
 */
static int nccl_tests_options(struct pn_ctx *ctx, int ngpu)
{
	if (opt.nthreads != 1)
		return pn_cmd_fail(ctx, 2, "-t %d: penny runs one rank per process and thread; "
				   "start %d ranks with --np or the launcher instead", opt.nthreads,
				   opt.nthreads);
	if (opt.ngpus != 1)
		return pn_cmd_fail(ctx, 2, "-g %d: penny drives one GPU per rank; start a rank per "
				   "GPU (--np) and pick the devices with --gpus", opt.ngpus);
	if (opt.agg_iters != 1)
		return pn_cmd_fail(ctx, 2, "-m %d: penny times one allreduce at a time; it cannot "
				   "aggregate operations", opt.agg_iters);
	if (opt.run_cycles != 1)
		return pn_cmd_fail(ctx, 2, "-N %d: penny runs the sweep once; run it again for "
				   "another cycle", opt.run_cycles);
	if (opt.blocking)
		return pn_cmd_fail(ctx, 2, "-z %d: penny runs the iterations back to back without "
				   "a barrier (-z 0) only", opt.blocking);
	if (opt.cputime)
		return pn_cmd_fail(ctx, 2, "-C 1: penny reports each backend's own clock (host: "
				   "wall clock; GPU: CUDA events), not CPU time");
	if (opt.reg == 1)
		return pn_cmd_fail(ctx, 2, "-R 1: penny does not register local buffers; -R 2 is "
				   "--backend nccl --algo symmetric");
	if (opt.reg == 2 && (!ngpu || strcmp(opt.algo, "symmetric")))
		return pn_cmd_fail(ctx, 2, "-R 2: symmetric registration is --backend nccl --algo "
				   "symmetric; give those");
	return 0;
}

static const enum pn_sweep_time time_of[] = {
	PN_SWEEP_TIME_RANK0, PN_SWEEP_TIME_MEAN, PN_SWEEP_TIME_MIN, PN_SWEEP_TIME_MAX,
};

int cmd_allreduce_test(struct pn_ctx *ctx, int argc, char **argv)
{
	struct pn_arjob_cfg jc = { .comm = { .transport = pn_cli.transport,
					     .ib_hca = pn_cli.ib_hca,
					     .ib_disable = pn_cli.ib_disable },
				   .tune_file = pn_cli.tune_file };
	struct pn_comm_cfg *ccfg = &jc.comm;
	struct job j;
	enum pn_algo algos[PN_SWEEP_MAX_ALGOS];
	uint64_t *sizes = NULL;
	int nalgos = 0, a, ret = 0, failed = 0, rc = 0, has_host, ngpu;
	const char *backends = opt.backend ? opt.backend : "host";

	memset(&j, 0, sizeof(j));
	j.ctx = ctx;
	pn_sweep_init(&j.sw);
	if (argc > 0)
		return pn_cmd_fail(ctx, 2, "unexpected argument '%s'", argv[0]);
	if (check_backends(&j, backends, &has_host, &ngpu))
		return 2;
	if (pn_dtype_parse(opt.dtype, &j.sw.dtype) || pn_redop_parse(opt.op, &j.sw.op)) {
		pn_cmd_error(ctx, -EINVAL);
		return 2;
	}
	/* -n -w -c -b -e -i -f -G are in range (the table); -f 0: not given */
	if (opt.minbytes > opt.maxbytes)
		return pn_cmd_fail(ctx, 2, "-b %llu is larger than -e %llu",
				   (unsigned long long)opt.minbytes, (unsigned long long)opt.maxbytes);
	if (opt.plan && has_host && ngpu)
		return pn_cmd_fail(ctx, 2, "--plan: the host engine runs multiring over the plan, a "
				   "GPU plugin its ring algorithm; run them in separate jobs");
	if (opt.plan && has_host && strcmp(opt.algo, "auto") && strcmp(opt.algo, "multiring"))
		return pn_cmd_fail(ctx, 2, "--plan runs the multiring algorithm; it cannot run "
				   "--algo %s", opt.algo);
	if (opt.plan && has_host)
		opt.algo = "multiring";
	if (nccl_tests_options(ctx, ngpu))
		return 2;
	if (parse_algos(ctx, has_host, algos, &nalgos))
		return 2;
	ret = pn_sweep_sizes(opt.minbytes, opt.maxbytes, opt.stepbytes, opt.factor,
			     pn_dtype_size(j.sw.dtype), &sizes, &j.sw.nsizes);
	if (ret == -E2BIG)
		return pn_cmd_fail(ctx, 2, "-b, -e and -i or -f give more than %d sizes",
				   PN_SWEEP_MAX_SIZES);
	if (ret)
		return pn_cmd_fail(ctx, 1, "out of memory");
	j.sw.sizes = sizes;

	rc = pn_cmd_job_cfg(ctx);
	if (rc)
		goto out;
	ret = pn_cmd_job_start(ctx, 0);
	j.boot = ctx->job->boot;
	j.rank = ctx->job->rank;
	j.nranks = ctx->job->nranks;
	if (ret)
		goto fail;
	ret = agree_params(&j, algos, nalgos, backends, &rc);
	if (!ret && !rc)
		ret = open_outputs(&j, &rc);
	if (ret || rc)
		goto fail;
	if (has_multiring(algos, nalgos))
		ccfg->nchannels = 2;
	if (opt.plan) {
		ret = plan_load(&j, &rc);
		if (ret || rc)
			goto fail;
		ccfg->nchannels = j.plan->map.nrings;
		ccfg->verbs_port = pn_planned_port;
		ccfg->verbs_port_arg = j.plan;
	}
	ret = check_memory(&j, ccfg->nchannels, has_host, algos, nalgos, &rc);
	if (ret || rc)
		goto fail;
	jc.plan = j.plan;
	ret = pn_arjob_open(&j.aj, j.boot, &jc);
	if (!ret)
		rc = open_backends(&j, backends, algos, nalgos, &ret);
	if (ret || rc)
		goto fail;
	if (j.csv)
		pn_sweep_csv_header(j.csv);
	j.progress = j.rank == 0 && isatty(STDERR_FILENO) && !pn_cli.json && j.sw.nsizes > 8;
	j.sw.comm = j.aj.comm;
	j.sw.iters = opt.iters;
	j.sw.warmup = opt.warmup;
	j.sw.check = opt.check;
	j.sw.seed = opt.seed;
	j.sw.time_of = time_of[opt.average];	/* 0..3: the table's range */
	j.sw.keep = j.rank == 0;
	j.sw.sink = (struct pn_sweep_sink){ .arg = &j, .begin = print_header, .row = print_row,
					    .end = print_footer, .skip = print_skip,
					    .bad = print_bad };
	/* only rank 0 presents */
	if (j.rank == 0) {
		pn_out_open_object(ctx->out, NULL);
		print_job(&j, backends, ctx->job->cfg.launcher);
		pn_out_open_array(ctx->out, "results");
	}
	if (!ret)
		ret = pn_arjob_run(&j.aj, &j.sw);
	if (ret)
		goto fail;
	if (j.rank == 0) {
		pn_out_close_array(ctx->out);
		print_ratios(&j, backends);
		failed = print_summary(&j);
		ret = finish_outputs(&j);
	}
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
	for (a = 0; a < PN_ARJOB_MAX_BACKENDS; a++)
		free(j.desc[a]);
	/* not committed: a failed run leaves the files as they were */
	pn_ofile_abort(j.csv_of);
	pn_ofile_abort(j.plot_of);
	pn_ofile_abort(j.tune_of);
	pn_arjob_close(&j.aj);
	pn_planned_free(j.plan);
	pn_sweep_release(&j.sw);
	free(sizes);
	return rc;
}
