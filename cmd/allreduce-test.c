/* SPDX-License-Identifier: MIT */
/*
 * penny allreduce-test: the options, the job and the presentation of the
 * allreduce sweep (src/harness/sweep.h) with the table of nccl-tests'
 * all_reduce_perf (out-of-place, then in-place), over the engine's
 * algorithms (--backend host) and GPU plugins, and the ratio table that
 * compares the backends.  Only rank 0 prints.  The same job and table for
 * coll-test's collectives (sweep_main, cmd/coll-test.c).
 */
#define _GNU_SOURCE
#include "penny.h"

#include "engine/boot.h"
#include "engine/coll.h"
#include "base/log.h"
#include "plan/plan_job.h"
#include "gpu/plugin.h"
#include "harness/arjob.h"
#include "harness/aropts.h"
#include "harness/plansched.h"
#include "harness/sweep.h"
#include "base/stop.h"
#include "base/timing.h"
#include "base/util.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static struct pn_aropts ar = {
	.minbytes = 8, .maxbytes = 32u << 20, .stepbytes = 1u << 20, .seed = 0x9e3779b97f4a7c15ull,
	.min_busbw = -1, .iters = PN_TIMING_ITERS_AUTO, .warmup = 5, .check = 1, .algo = "auto",
	.average = 3, .blocks = PN_TIMING_BLOCKS,
};

static struct {
	int root;
	/* nccl-tests' -t -g -m -N -p -z -C -R */
	struct pn_ar_nccl_tests nt;
	const char *dtype, *op;
} opt = {
	.root = -1, .dtype = "float", .op = "sum",
	.nt = { .nthreads = 1, .ngpus = 1, .agg_iters = 1, .run_cycles = 1 },
};

#define MAX_BYTES (1ull << 40)

const struct pn_opt allreduce_test_options[] = {
	{ "algo", 'A', OPT_STRING, &ar.algo, "NAME",
	  "ring, simple-ring, one-shot, two-shot, hierarchical, multiring, auto or all (GPU "
	  "backends: auto, one-shot, two-shot, ring, simple-ring, symmetric); a comma list runs several "
	  "(default auto)",
	  "auto all ring simple-ring one-shot two-shot hierarchical multiring symmetric", OPT_LIST },
	{ "tune-out", 0, OPT_STRING, &ar.tune_out, "FILE",
	  "write the fastest algorithm per size, in and out of place, as a tuning table (use with "
	  "--algo all)", NULL,
	  NULL },
	{ "plan", 0, OPT_STRING, &ar.plan, "FILE",
	  "host: multiring over the rings of FILE (penny ring-plan --json), one channel per ring, "
	  "its NICs on verbs (implies --algo multiring); nvshmem: its ring follows them", NULL, NULL },
	{ "backend", 0, OPT_APPEND, &ar.backends, "NAME", "host (the engine, default) or a GPU "
	  "plugin: cuda, nccl, nvshmem; a comma list or repeated runs each in turn, then a ratio "
	  "table", "host cuda nccl nvshmem", OPT_LIST },
	OPT_TABLE_END
};

const struct pn_opt coll_test_options[] = {
	{ "algo", 'A', OPT_STRING, &ar.algo, "NAME",
	  "ring, one-shot, pairwise, bruck, tree (those the collective has), auto or all; a comma "
	  "list runs several (default auto)", "auto all ring one-shot pairwise bruck tree", OPT_LIST },
	{ "backend", 0, OPT_APPEND, &ar.backends, "NAME", "host (the engine, default) or a GPU "
	  "plugin: cuda, nccl (nvshmem has no other collectives); a comma list or repeated runs "
	  "each in turn, then a ratio table", "host cuda nccl", OPT_LIST },
	OPT_TABLE_END
};

/* allreduce-test's and coll-test's (cmd/coll-test.c) */
const struct pn_opt sweep_options[] = {
	{ "gpus", 0, OPT_STRING, &ar.gpus, "LIST",
	  "GPU backends: the device of each local rank, like 0,1,2,3 (default: the local rank)",
	  NULL, OPT_LIST },
	{ "share-gpus", 0, OPT_BOOL, &ar.share_gpus, NULL,
	  "GPU backends: let ranks of one node share a GPU (they time-slice it: each call takes "
	  "milliseconds; for checking results with more ranks than GPUs)", NULL, NULL },
	{ "fresh-input", 0, OPT_BOOL, &ar.fresh_input, NULL, "host: every rank rewrites its input "
	  "before each timed call, as a step its gradients; only the calls are timed", NULL, NULL },
	{ "minbytes", 'b', OPT_SIZE, &ar.minbytes, "SIZE", "smallest size (default 8)", NULL,
	  OPT_RANGE(0, MAX_BYTES) },
	{ "maxbytes", 'e', OPT_SIZE, &ar.maxbytes, "SIZE", "largest size (default 32M)", NULL,
	  OPT_RANGE(0, MAX_BYTES) },
	{ "stepbytes", 'i', OPT_SIZE, &ar.stepbytes, "SIZE",
	  "size increment when no factor is given (default 1M)", NULL, OPT_RANGE(1, MAX_BYTES) },
	{ "stepfactor", 'f', OPT_DOUBLE, &ar.factor, "F", "multiply the size by F each step (1: "
	  "no factor, step by -i, as nccl-tests' -f 1)", NULL, OPT_RANGE(1, 1024) },
	{ "iters", 'n', OPT_INT, &ar.iters, "N", "timed iterations per size, spread over the blocks "
	  "(default: by size, 32 per block to 1M, 2 from 16M; 0: the check only)", NULL,
	  OPT_RANGE(0, 1000000) },
	{ "blocks", 0, OPT_INT, &ar.blocks, "N",
	  "timed blocks per size; the time is the median block (default 5)", NULL,
	  OPT_RANGE(PN_TIMING_BLOCKS, PN_TIMING_MAX_BLOCKS) },
	{ "warmup_iters", 'w', OPT_INT, &ar.warmup, "N", "warm-up iterations (default 5)", NULL,
	  OPT_RANGE(0, 1000000) },
	{ "check", 'c', OPT_INT, &ar.check, "0|1", "check results against the exact reference "
	  "(default 1)", "0 1", OPT_RANGE(0, 1) },
	{ "datatype", 'd', OPT_STRING, &opt.dtype, "TYPE", "element type, or all: each in turn "
	  "(default float)", "int8 uint8 int32 uint32 int64 uint64 half bfloat16 float double all",
	  NULL },
	{ "op", 'o', OPT_STRING, &opt.op, "OP", "reduction: sum prod min max avg, or all: each in "
	  "turn (default sum)", "sum prod min max avg all", NULL },
	{ "root-rank", 'r', OPT_INT, &opt.root, "R", "root of broadcast and reduce (default 0; "
	  "allreduce has none; --root is the rendezvous address)", NULL, OPT_RANGE(0, 65535) },
	{ "cudagraph", 'G', OPT_INT, &ar.graph, "N",
	  "GPU backends: capture N calls into a CUDA graph and time its replays (nccl-tests -G)",
	  NULL, OPT_RANGE(0, 100000) },
	/* nccl-tests' letters (all_reduce_perf) */
	{ "nthreads", 't', OPT_INT, &opt.nt.nthreads, "N",
	  "threads per process: 1, as penny runs one rank per process (--np N starts N)", NULL,
	  OPT_RANGE(1, 1024) },
	{ "ngpus", 'g', OPT_INT, &opt.nt.ngpus, "N",
	  "GPUs per thread: 1, as penny drives one GPU per rank (--gpus picks them)", NULL,
	  OPT_RANGE(1, 1024) },
	{ "agg_iters", 'm', OPT_INT, &opt.nt.agg_iters, "N",
	  "calls per iteration, one after another (no group to aggregate them into); the time is "
	  "per call (default 1; -n x N and -w x N at most 2^31-1)", NULL, OPT_RANGE(1, 1000000) },
	{ "run_cycles", 'N', OPT_INT, &opt.nt.run_cycles, "N",
	  "sweeps run and printed (default 1; nccl-tests' 0, forever, is not supported)", NULL,
	  OPT_RANGE(0, 1000000) },
	{ "parallel_init", 'p', OPT_INT, &opt.nt.parallel_init, "0|1",
	  "accepted: with one thread per rank every rank initialises in parallel anyway", "0 1",
	  OPT_RANGE(0, 1) },
	{ "blocking", 'z', OPT_INT, &opt.nt.blocking, "0|1|2|3",
	  "the host's calls block (any value); GPU backends run the iterations back to back "
	  "(a warning for 1..3)", "0 1 2 3", OPT_RANGE(0, 3) },
	{ "report_cputime", 'C', OPT_INT, &opt.nt.cputime, "0|1",
	  "the host is timed with the CPU's wall clock (any value); GPU backends with CUDA events "
	  "(a warning for 1)", "0 1", OPT_RANGE(0, 1) },
	{ "local_register", 'R', OPT_INT, &opt.nt.reg, "0|1|2",
	  "the host's buffers are registered (any of 0, 1); GPU backends: 0 plain buffers, 2 "
	  "--backend nccl --algo symmetric (allreduce-test), 1 not supported", "0 1 2", OPT_RANGE(0, 2) },
	{ "average", 'a', OPT_INT, &ar.average, "0|1|2|3",
	  "time of a size over the ranks: 0 rank 0's, 1 the mean, 2 the fastest, 3 the slowest "
	  "(default 3)", "0 1 2 3", OPT_RANGE(0, 3) },
	{ "nccl-timeout", 'T', OPT_SECONDS, &pn_cli.timeout, "SEC",
	  "nccl-tests' -T: the same as --timeout", NULL, OPT_RANGE(0.01, 86400) },
	{ "csv", 0, OPT_STRING, &ar.csv, "FILE", "also write the rows as CSV to FILE", NULL, NULL },
	{ "plot", 0, OPT_STRING, &ar.plot, "FILE", "draw busbw and time against size as SVG",
	  NULL, NULL },
	{ "min-busbw", 0, OPT_DOUBLE, &ar.min_busbw, "GBPS",
	  "fail (exit 1, FAILED) when the average bus bandwidth is below GBPS", NULL,
	  OPT_RANGE(0, 1e9) },
	{ "seed", 0, OPT_U64, &ar.seed, "N",
	  "seed of the check data (default: a fixed seed, the same on every rank)", NULL,
	  OPT_RANGE(0, OPT_U64_MAX) },
	OPT_TABLE_END
};

struct job {
	struct pn_ctx *ctx;
	struct pn_arprep prep;	/* what the ranks settle before the work; its plan */
	struct pn_boot *boot;
	struct pn_arjob aj;	/* communicator, collective, backends */
	struct pn_sweep sw;
	int rank, nranks, progress;
	struct pn_arback bk;	/* --backend, --gpus */
	struct pn_artypes types; /* -d, -o */
	struct pn_arout files;	/* rank 0's, opened before the work, committed after it */
};

/* The plan in the header: the rings as ranks, in the order data moves. */
static void plan_print(struct job *j)
{
	const struct pn_plan_job *m = &j->prep.plan->map;
	struct pn_out *o = j->ctx->out;
	int k, i;

	pn_out_open_object(o, "plan");
	pn_out_str(o, PN_ANY, "file", "# Plan %s:", ar.plan);
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

/* Rank 0: a row in the table (or JSON) and in --csv (a write error stops the sweep). */
static int print_row(void *arg, const struct pn_sweep_row *rw, size_t i, size_t n)
{
	struct job *j = arg;
	struct pn_out *o = j->ctx->out;
	int k, same = pn_sweep_same_output(j->sw.kind), err;

	if (j->rank != 0)
		return 0;
	pn_out_open_object(o, NULL);
	pn_out_str(o, PN_JSON, "backend", NULL, rw->backend);
	pn_out_str(o, PN_JSON, "algo", NULL, rw->algo);
	if (rw->ran[0])
		pn_out_str(o, PN_JSON, "ran", NULL, rw->ran);
	pn_out_uint(o, PN_ANY, "size", " %11llu", (unsigned long long)rw->bytes);
	pn_out_uint(o, PN_ANY, "count", " %13llu", (unsigned long long)rw->count);
	pn_out_str(o, PN_ANY, "type", " %9s", pn_dtype_name(rw->dtype));
	pn_out_str(o, PN_ANY, "redop", " %7s", pn_sweep_redop_name(j->sw.kind, rw->op));
	pn_out_int(o, PN_ANY, "root", " %7lld", pn_coll_rooted(j->sw.kind) ? j->sw.root : -1);
	pn_out_int(o, PN_JSON, "blocks", NULL, rw->blocks);
	pn_out_int(o, PN_JSON, "iters_per_block", NULL, rw->calls);
	for (k = 0; k < 2; k++) {
		pn_out_open_object(o, k ? "ip" : "oop");
		pn_out_float(o, PN_ANY, "time_us", rw->time_us[k] >= 1e4 ? " %9.0f" : " %9.2f",
			     rw->time_us[k]);
		pn_out_float(o, PN_JSON, "time_min_us", NULL, rw->time_min_us[k]);
		pn_out_float(o, PN_JSON, "time_max_us", NULL, rw->time_max_us[k]);
		pn_out_floats(o, "blocks_us", rw->block_us[k], rw->block_us[k] ? (size_t)rw->blocks : 0);
		pn_out_float(o, PN_ANY, "algbw", " %7.2f", rw->algbw[k]);
		pn_out_float(o, PN_ANY, "busbw", " %7.2f", rw->busbw[k]);
		if (ar.check) {
			pn_out_uint(o, PN_ANY, "wrong", " %6llu", (unsigned long long)rw->wrong[k]);
			if (same)
				pn_out_uint(o, PN_JSON, "differ", NULL,
					    (unsigned long long)rw->differ[k]);
		} else {
			pn_out_null(o, PN_JSON, "wrong", NULL);	/* not checked */
			pn_out_str(o, PN_TEXT, NULL, " %6s", "N/A");
		}
		pn_out_close_object(o);
	}
	/* ranks whose output is not bit-identical to rank 0's, out of and in place
	 * (where every rank holds the same) */
	if (ar.check && same)
		pn_out_text(o, " %6llu", (unsigned long long)(rw->differ[0] + rw->differ[1]));
	else
		pn_out_text(o, " %6s", "N/A");
	pn_out_text(o, "\n");
	pn_out_close_object(o);
	if ((err = pn_out_flush(pn_out_file(o))))
		return err;
	if ((err = pn_arout_row(&j->files, rw, &j->sw)))
		return err;
	if (j->progress)
		fprintf(stderr, "\r%s %zu/%zu sizes ", rw->algo, i + 1, n);
	return 0;
}

/* A stop (SIGTERM, SIGINT, SIGHUP) on rank 0: --json ends its document with why. */
static void cut(void *arg, const char *why)
{
	pn_out_end_error(arg, why);
	fflush(pn_out_file(arg));
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
	if (ar.check && pn_sweep_same_output(j->sw.kind))
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

/* --np: the planned memory of the ranks about to be forked */
static int prelaunch(struct pn_ctx *ctx, int np, int coll)
{
	int ret = pn_aropts_prelaunch(&ar, np, coll, pn_cli.transport, pn_cli.mem_check,
				      pn_cli.tune_file != NULL);

	return ret ? pn_cmd_fail(ctx, 2, "%s", pn_errmsg(ret)) : 0;
}

int allreduce_test_prelaunch(struct pn_ctx *ctx, int np)
{
	return prelaunch(ctx, np, 0);
}

int coll_test_prelaunch(struct pn_ctx *ctx, int np)
{
	return prelaunch(ctx, np, 1);
}

/* A GPU plugin's log lines, each with its rank. */
static void plugin_log(void *arg, int level, const char *msg)
{
	struct job *j = arg;

	pn_cmd_fail(j->ctx, 0, "rank %d: %s%s", j->rank, level == PENNY_LOG_ERROR ? "error: " : "",
		    msg);
}

/* Rank 0: the job, its ranks, the plan and what each GPU backend runs on. */
static void print_job(struct job *j, const char *backends, const char *launcher)
{
	char iters[16] = "auto";
	struct pn_out *o = j->ctx->out;
	int a, r, ngpu = 0;

	pn_out_text(o, "# penny %s%s%s: %d ranks on %d nodes, backend %s, type %s, op %s",
		    j->ctx->name, j->sw.kind ? " " : "", j->sw.kind ? pn_coll_name(j->sw.kind) : "",
		    j->nranks, j->aj.comm->nnodes, backends,
		    j->types.ndtypes > 1 ? "all" : pn_dtype_name(j->sw.dtype),
		    j->types.nops > 1 ? "all" : pn_sweep_redop_name(j->sw.kind, j->sw.op));
	pn_out_text(o, pn_coll_rooted(j->sw.kind) ? ", root %d\n" : "\n", j->sw.root);
	pn_out_str(o, PN_JSON, "command", NULL, j->ctx->name);
	if (j->sw.kind)
		pn_out_str(o, PN_JSON, "collective", NULL, pn_coll_name(j->sw.kind));
	pn_out_int(o, PN_JSON, "nranks", NULL, j->nranks);
	pn_out_int(o, PN_JSON, "nnodes", NULL, j->aj.comm->nnodes);
	pn_out_str(o, PN_JSON, "backend", NULL, backends);
	pn_out_str(o, PN_JSON, "launcher", NULL, launcher);
	if (ar.iters >= 0)
		pn_out_int(o, PN_JSON, "iters", NULL, ar.iters);
	else
		pn_out_null(o, PN_JSON, "iters", NULL);
	pn_out_int(o, PN_JSON, "blocks", NULL, ar.blocks);
	pn_out_int(o, PN_JSON, "warmup_iters", NULL, ar.warmup);
	if (ar.iters >= 0)
		snprintf(iters, sizeof(iters), "%d", ar.iters);
	pn_out_text(o, "# minBytes %llu maxBytes %llu step: %.15g(%s) warmup iters: %d iters: %s "
		    "validation: %d\n# Timing: the median of %d timed blocks per size (a block: its "
		    "time over the ranks, -a); the fastest and slowest in --json and --csv\n",
		    (unsigned long long)ar.minbytes, (unsigned long long)ar.maxbytes,
		    ar.factor > 1 ? ar.factor : (double)ar.stepbytes,
		    ar.factor > 1 ? "factor" : "bytes", ar.warmup, iters, ar.check, ar.blocks);
	pn_out_bool(o, PN_ANY, "fresh_input", "# Inputs rewritten before each call, only the calls "
		    "timed (--fresh-input): %s\n#\n# Ranks\n", ar.fresh_input);
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
	if (j->prep.plan)
		plan_print(j);
	for (a = 0; a < j->aj.nbe; a++) {
		const struct pn_sweep_backend *be = j->aj.be[a];

		if (!j->aj.desc[a])
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
		else if (pn_sweep_gpu_hierarchical(be) && j->sw.kind)
			pn_out_text(o, "# %s: host-staged over %d nodes (the engine's %s over every rank)\n",
				    be->name, j->aj.comm->nnodes, pn_coll_name(j->sw.kind));
		else if (pn_sweep_gpu_hierarchical(be))
			pn_out_text(o, "# %s: hierarchical over %d nodes (the plugin within each node, "
				       "the engine's ring between them)\n", be->name, j->aj.comm->nnodes);
		pn_out_open_array(o, "ranks");
		for (r = 0; r < j->nranks; r++) {
			pn_out_open_object(o, NULL);
			pn_out_int(o, PN_ANY, "rank", "#  Rank %3lld", r);
			pn_out_str(o, PN_TEXT, NULL, " %s:", be->name);
			pn_out_str(o, PN_ANY, "device", " %s\n",
				   j->aj.desc[a] + (size_t)r * PN_SWEEP_DESC_LEN);
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
static int print_ratios(struct job *j, const char *backends)
{
	struct pn_out *o = j->ctx->out;
	const char *ref = pn_sweep_ref_backend(&j->sw, backends);
	struct pn_sweep_ratio *rt;
	size_t i, n;

	if (!ref)
		return 0;
	if (pn_sweep_ratios(&j->sw, ref, &rt, &n))
		return -ENOMEM;
	pn_out_text(o, "#\n# ratios against %s, its fastest algorithm at each size, out of place "
		       "(time ratio below 1 and busbw ratio above 1: faster than %s)\n",
		    ref, ref);
	pn_out_text(o, "#%11s %-8s %-10s %9s %9s %-10s %7s %7s %7s %7s\n", "size", "backend",
		    "algorithm", "time", "ref time", "ref algo", "time", "busbw", "ref", "busbw");
	pn_out_text(o, "#%11s %-8s %-10s %9s %9s %-10s %7s %7s %7s %7s\n", "(B)", "", "", "(us)",
		    "(us)", "", "ratio", "(GB/s)", "(GB/s)", "ratio");
	pn_out_open_array(o, "ratios");
	for (i = 0; i < n; i++) {
		const struct pn_sweep_row *r = rt[i].row, *f = rt[i].ref;

		pn_out_open_object(o, NULL);
		pn_out_uint(o, PN_ANY, "size", " %11llu", (unsigned long long)r->bytes);
		pn_out_str(o, PN_ANY, "backend", " %-8s", r->backend);
		pn_out_str(o, PN_ANY, "algo", " %-10s", r->algo);
		pn_out_str(o, PN_JSON, "ref_backend", NULL, f->backend);
		pn_out_float(o, PN_ANY, "time_us", " %9.2f", r->time_us[0]);
		pn_out_float(o, PN_ANY, "ref_time_us", " %9.2f", f->time_us[0]);
		pn_out_str(o, PN_ANY, "ref_algo", " %-10s", f->algo);
		pn_out_float(o, PN_ANY, "time_ratio", " %7.3f", rt[i].time_ratio);
		pn_out_float(o, PN_ANY, "busbw", " %7.2f", r->busbw[0]);
		pn_out_float(o, PN_ANY, "ref_busbw", " %7.2f", f->busbw[0]);
		pn_out_float(o, PN_ANY, "busbw_ratio", " %7.3f", rt[i].busbw_ratio);
		pn_out_text(o, "\n");
		pn_out_close_object(o);
	}
	pn_out_close_array(o);
	free(rt);
	return 0;
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

	pn_sweep_verdict(j->sw.wrong, j->sw.differ, avg, ar.min_busbw, why, sizeof(why));
	pn_out_open_object(o, "summary");
	pn_out_uint(o, PN_JSON, "wrong", NULL, (unsigned long long)j->sw.wrong);
	pn_out_uint(o, PN_JSON, "differ", NULL, (unsigned long long)j->sw.differ);
	pn_out_float(o, PN_JSON, "avg_busbw", NULL, avg);
	if (ar.min_busbw >= 0)
		pn_out_float(o, PN_JSON, "min_busbw", NULL, ar.min_busbw);
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

/* The options, before the job: 0, or the exit status after one line.  The
 * host's algorithms into algos (allreduce) or calgos (the others). */
static int settle(struct job *j, enum pn_coll_kind kind, enum pn_algo *algos, int *nalgos,
		  enum pn_calgo *calgos, int *ncalgos)
{
	struct pn_ctx *ctx = j->ctx;
	char warn[200] = "";
	int ret;

	ar.transport = pn_cli.transport;
	ar.kind = kind;
	ar.root = opt.root < 0 ? 0 : opt.root;
	ret = pn_aropts_backends(&ar, &j->bk);
	if (!ret)
		ret = pn_aropts_types(opt.dtype, opt.op, kind, &j->types);
	ar.types = &j->types;
	j->sw.dtype = j->types.dtypes[0];
	j->sw.op = j->types.ops[0];
	if (!ret)
		ret = pn_aropts_nccl_tests(&opt.nt, j->bk.has_host, j->bk.ngpu, ar.algo, warn,
					   sizeof(warn));
	ar.agg = opt.nt.agg_iters;
	ar.cycles = opt.nt.run_cycles;
	if (!ret)
		ret = pn_aropts_check(&ar, &j->bk);
	if (!ret && kind)
		ret = pn_aropts_calgos(ar.algo, kind, calgos, ncalgos);
	else if (!ret)
		ret = pn_aropts_algos(ar.algo, j->bk.has_host, algos, nalgos);
	if (ret)
		return pn_cmd_fail(ctx, 2, "%s", pn_errmsg(ret));
	if (warn[0] && ctx->rank <= 0)
		pn_cmd_say(ctx, "warning: %s", warn);
	return 0;
}

int sweep_main(struct pn_ctx *ctx, enum pn_coll_kind kind)
{
	struct pn_arjob_cfg jc = { .comm = { .transport = pn_cli.transport,
					     .ib_hca = pn_cli.ib_hca,
					     .ib_disable = pn_cli.ib_disable },
				   .tune_file = pn_cli.tune_file, .max_bytes = ar.maxbytes,
				   .describe = 1, .kind = kind };
	struct pn_comm_cfg *ccfg = &jc.comm;
	struct pn_arjob_plan plan = { 0 };
	struct job j;
	enum pn_algo algos[PN_SWEEP_MAX_ALGOS] = { PN_ALGO_ONE_SHOT };
	enum pn_calgo calgos[PN_SWEEP_MAX_ALGOS];
	int nalgos = 1, ncalgos = 0, ret = 0, failed = 0, rc = 0;
	const char *backends = ar.backends ? ar.backends : "host";

	memset(&j, 0, sizeof(j));
	j.ctx = ctx;
	pn_sweep_init(&j.sw);
	if ((ret = pn_aropts_refuse_shared(&ar, pn_cli.tune_file)))
		return pn_cmd_fail(ctx, 2, "%s", pn_errmsg(ret));
	ar.backends = jc.backends = backends;
	rc = settle(&j, kind, algos, &nalgos, calgos, &ncalgos);
	if (!rc)
		rc = pn_cmd_job_cfg(ctx);
	if (rc)
		goto out;
	ret = pn_cmd_job_start(ctx, 0);
	j.boot = ctx->job->boot, j.rank = ctx->job->rank, j.nranks = ctx->job->nranks;
	if (ret)
		goto fail;
	if ((ret = pn_aropts_job(&ar, j.nranks))) {
		/* every rank knows; rank 0 says it, and ends its output at a stop */
		rc = j.rank ? 2 : pn_cmd_fail(ctx, 2, "%s", pn_errmsg(ret));
		goto out;
	} else if (j.rank == 0) {
		pn_sweep_stop_start(cut, ctx->out);
	}
	/* the other collectives' memory: one-shot's, a buffer of scratch */
	j.prep = (struct pn_arprep){ .dtype = j.sw.dtype, .op = j.sw.op, .algos = algos,
				     .nalgos = nalgos, .has_host = j.bk.has_host,
				     .mem_check = pn_cli.mem_check, .tuned = pn_cli.tune_file != NULL };
	ret = pn_aropts_prepare(&ar, j.boot, &j.prep, &j.files, ccfg);
	if (ret && j.prep.rc) {
		if (j.prep.say)
			pn_cmd_fail(ctx, 2, "%s", pn_errmsg(ret));
		rc = j.prep.rc;
	}
	if (ret)
		goto fail;
	jc.plan = j.prep.plan, jc.algos = algos, jc.nalgos = nalgos;
	jc.calgos = calgos, jc.ncalgos = ncalgos;
	jc.gpu = (struct pn_sweep_gpu_cfg){ .algos = ar.algo, .graph = ar.graph, .gpus = ar.gpus,
					    .share = ar.share_gpus, .dev = j.bk.dev, .ndev = j.bk.ndev, .log = plugin_log,
					    .log_arg = &j, .xnode = &pn_cli.xnode, .no_mem_check = !pn_cli.mem_check };
	ret = pn_arjob_start(&j.aj, j.boot, &jc);
	if (ret && j.aj.gpu_failed) {
		/* every rank has the first failing rank's message: rank 0 says it */
		if ((rc = pn_boot_agreed_error(j.boot, ret)))
			pn_cmd_error(ctx, rc);
		rc = 2;
	}
	if (ret)
		goto fail;
	j.sw.nsizes = pn_aropts_plan(&ar, &plan);
	j.progress = j.rank == 0 && isatty(STDERR_FILENO) && !pn_cli.json && j.sw.nsizes > 8;
	j.sw.comm = j.aj.comm;
	pn_aropts_sweep(&ar, &j.sw);
	j.sw.keep = j.rank == 0 && (ar.plot || ar.tune_out || strchr(backends, ','));
	j.sw.sink = (struct pn_sweep_sink){ .arg = &j, .begin = print_header, .row = print_row,
					    .end = print_footer, .skip = print_skip,
					    .bad = print_bad };
	/* only rank 0 presents */
	if (j.rank == 0 && pn_stop_hold(-1)) {
		pn_out_open_object(ctx->out, NULL);
		print_job(&j, backends, ctx->job->cfg.launcher);
		pn_out_open_array(ctx->out, "results");
		pn_stop_release(0);
	}
	ret = pn_arjob_sweep(&j.aj, &j.sw, &plan);
	if (ret && j.sw.sink_err) {	/* rank 0's stdout or --csv failed (print_row) */
		ret = j.rank ? 0 : pn_arout_stdout_failed(&j.files, ret);
		if (ret && j.files.csv_err && pn_stop_hold(-1)) {	/* --json ends with why */
			pn_out_end_error(ctx->out, pn_errmsg(ret));
			pn_stop_release(1);
		}
		rc = ret ? pn_cmd_fail(ctx, 2, "%s", pn_errmsg(ret)) : 2;
		goto out;
	}
	if (ret)
		goto fail;
	if (j.rank == 0 && pn_stop_hold(-1)) {
		pn_out_close_array(ctx->out);
		ret = print_ratios(&j, backends);
		failed = print_summary(&j);
		if (!ret)
			ret = pn_arout_finish(&j.files, &ar, &j.sw, j.nranks, j.aj.comm->nnodes);
		fflush(pn_out_file(ctx->out));	/* whole before a stop */
		pn_stop_release(1);
	}
	if (ret) {
		/* the results could not be kept: could not run (rank 0 only) */
		rc = pn_cmd_fail(ctx, 2, "%s", pn_errmsg(ret));
		goto out;
	}
	rc = failed ? 1 : 0;
	goto out;
fail:
	if (pn_stop_hold(-1)) {	/* --json: the document ends, with why, as check's */
		pn_out_end_error(ctx->out, pn_errmsg(ret));
		pn_stop_release(1);
	}
	if (!rc) {
		pn_cmd_fail(ctx, 1, "rank %d: %s", j.rank, pn_errmsg(ret));
		rc = pn_exit_status(ret);
	}
out:
	/* not committed: a failed run leaves the files as they were */
	pn_arout_abort(&j.files);
	pn_arjob_close(&j.aj);
	pn_planned_free(j.prep.plan);
	pn_sweep_release(&j.sw);
	free(plan.sizes);
	return rc;
}

int cmd_allreduce_test(struct pn_ctx *ctx, int argc, char **argv)
{
	if (argc > 0)
		return pn_cmd_fail(ctx, 2, "unexpected argument '%s'", argv[0]);
	return sweep_main(ctx, PN_COLL_ALLREDUCE);
}
