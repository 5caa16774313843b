/* SPDX-License-Identifier: MIT */
/*
 * The allreduce check of `penny check` (pn_check_allreduce): the allreduce
 * at allreduce.size (and, with the full check, a quarter and a sixteenth
 * of it), judged on the busbw of the largest size and on its values (any
 * wrong value FAILs).
 *
 * Every row is `penny allreduce-test --json` run afresh (base/run.h), the
 * same job path and timing rule the command has, so a row and
 * allreduce-test on the same GPUs agree; no CUDA is ever initialised in
 * the check's own processes, whose later children (gpu-copy, the
 * diagnosis) could then not use it.
 *
 * On the node (the node leader): `allreduce-test --np N`, one rank per GPU
 * on the first GPU plugin of the list that loads ("cuda,nccl"), on the
 * CPUs of the node's ranks (pn_check's cpus: a rank pinned to one core by
 * a launcher must not squeeze the node's ranks onto it).  Expected: the
 * node's own slowest GPU-to-GPU copy (gpu-copy's rows, or measured here
 * when gpu-copy did not run) times allreduce.copy-efficiency; where the
 * copies cannot be measured, ring-plan's predicted busbw for the node's
 * topology times allreduce.efficiency.  Without a GPU plugin, or on a node
 * without GPUs, the host engine runs (two ranks without GPUs) and only
 * allreduce.min-busbw, a baseline or the job's median give it an
 * expectation.
 *
 * Across the job (under a launcher, more than one rank): every rank of the
 * job afresh (pn_check_fresh_job), on the nccl plugin when every rank can
 * load it and has a GPU, else the host engine over the transports the
 * engine picks; target "job", expected from allreduce.min-busbw or the
 * baseline.
 */
#define _GNU_SOURCE
#include "check/check_ar.h"
#include "check/check_base.h"
#include "check/check_cfg.h"
#include "check/check_fresh.h"
#include "check/check_gpu.h"
#include "check/check_gpu_lib.h"
#include "check/check_ranks.h"
#include "check/check_row.h"
#include "harness/sweep.h"

#include "base/log.h"
#include "base/minijson.h"
#include "base/run.h"
#include "base/util.h"
#include "base/verdict.h"
#include "engine/boot.h"
#include "gpu/plugin.h"
#include "node/sysfs.h"
#include "node/topo.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CHECK "allreduce"
/* allreduce-test's JSON of a few sizes and ranks is a few KiB */
#define AR_OUT_MAX (1u << 20)

/* ------------------------------------------------------------ pure parts */

static double block_busbw(const struct pn_jval *oop, const char *key)
{
	double v = NAN;

	if (pn_json_num(pn_json_get(oop, key), &v) || !isfinite(v) || v < 0)
		return NAN;
	return v;
}

int pn_check_ar_parse(const char *json, size_t len, struct pn_ar_meas *m, char *why,
		      size_t wlen)
{
	struct pn_json_doc doc = { 0 };
	const struct pn_jval *res, *row, *oop;
	const char *cmd, *be;
	long long v = 0;
	unsigned i, n;
	int ret;

	memset(m, 0, sizeof(*m));
	why[0] = 0;
	ret = pn_json_parse(&doc, json, len);
	if (ret) {
		snprintf(why, wlen, "not allreduce-test's JSON: %s", pn_errmsg(ret));
		return -EINVAL;
	}
	cmd = pn_json_str(pn_json_get(doc.root, "command"));
	res = pn_json_get(doc.root, "results");
	n = pn_json_len(res);
	if (!cmd || strcmp(cmd, "allreduce-test")) {
		snprintf(why, wlen, "not allreduce-test's JSON (no \"command\": \"allreduce-test\")");
		goto out;
	}
	if (!n) {
		snprintf(why, wlen, "allreduce-test measured no size");
		goto out;
	}
	if (!pn_json_int(pn_json_get(doc.root, "nranks"), &v) && v > 0 && v <= 1 << 20)
		m->nranks = (int)v;
	be = pn_json_str(pn_json_get(doc.root, "backend"));
	snprintf(m->backend, sizeof(m->backend), "%s", be ? be : "?");
	for (i = 0; i < n && i < PN_AR_MAX_SIZES; i++) {
		row = pn_json_at(res, i);
		oop = pn_json_get(row, "oop");
		m->busbw[i] = block_busbw(oop, "busbw");
		if (isnan(m->busbw[i]) || pn_json_int(pn_json_get(row, "size"), &v) || v <= 0) {
			snprintf(why, wlen, "allreduce-test's row %u has no busbw and size", i + 1);
			goto out;
		}
		m->bytes[i] = (uint64_t)v;
		/* the slowest and fastest block's rates, from their times */
		{
			double t = block_busbw(oop, "time_us"), lo = block_busbw(oop, "time_max_us"),
			       hi = block_busbw(oop, "time_min_us");

			m->busbw_min[i] = t > 0 && lo > 0 ? m->busbw[i] * t / lo : NAN;
			m->busbw_max[i] = t > 0 && hi > 0 ? m->busbw[i] * t / hi : NAN;
		}
		m->nsizes = (int)i + 1;
	}
	if (!pn_json_int(pn_json_get(pn_json_get(doc.root, "summary"), "wrong"), &v) && v > 0)
		m->wrong = (uint64_t)v;
	if (!pn_json_int(pn_json_get(pn_json_get(doc.root, "summary"), "differ"), &v) && v > 0)
		m->differ = (uint64_t)v;
out:
	pn_json_release(&doc);
	return why[0] ? -EINVAL : 0;
}

int pn_check_ar_copy_expect(const struct pn_verdict_list *l, const char *node, double factor,
			    double *exp, char *src, size_t len)
{
	const struct pn_verdict_result *r, *low = NULL;
	int i;

	for (i = 0; i < pn_verdict_n(l); i++) {
		r = pn_verdict_at(l, i);
		/* a GPU pair ("GPU0-GPU1"), not a host copy ("GPU0:h2d") */
		if (strcmp(r->check, "gpu-copy") || strcmp(r->node, node) ||
		    strncmp(r->target, "GPU", 3) || !strchr(r->target, '-') ||
		    r->measured.kind != PN_VAL_NUM || !(r->measured.num > 0))
			continue;
		if (!low || r->measured.num < low->measured.num)
			low = r;
	}
	if (!low)
		return -ENOENT;
	*exp = low->measured.num * factor;
	snprintf(src, len, "gpu-copy: slowest pair %s %.4g GB/s measured x %.3g%%", low->target,
		 low->measured.num, factor * 100);
	return 0;
}

/* ------------------------------------------------------------ the runs */

/* What the rows measure, as allreduce-test arguments (after the backend). */
struct ar_args {
	char lo[32], hi[32];
	const char *argv[16];	/* NULL-terminated */
};

/* --quick on the host engine (no GPU): the default allreduce.size (128 MiB)
 * is 20 s and 460 MB on a small machine's CPUs, for a check that only
 * judges correct values there; this many bytes unless the config says */
#define AR_QUICK_HOST_BYTES (4u << 20)

/*
 * The sizes: allreduce.size, and with the full check a quarter and a
 * sixteenth of it (-b, -e, -f 4); whole floats, summed.  allreduce-test's
 * own timing rule, its default counts with the full check; --quick times
 * fewer calls (-n 5 -w 2: one a timed block), as a quick check must, and
 * on the host engine (host) at most AR_QUICK_HOST_BYTES of the default.
 */
static void ar_args(const struct pn_check *c, int host, struct ar_args *a)
{
	double v = 0;
	uint64_t size, lo;
	int n = 0;

	if (pn_check_cfg_num(c->cfg, "allreduce.size", &v) == 0 && c->quick && host)
		v = PN_MIN(v, AR_QUICK_HOST_BYTES);
	size = (uint64_t)v / 4 * 4;
	if (size < 4)
		size = 4;
	lo = size;
	if (!c->quick && size / 16 >= 4)
		lo = size / 16 / 4 * 4;
	else if (!c->quick && size / 4 >= 4)
		lo = size / 4 / 4 * 4;
	snprintf(a->lo, sizeof(a->lo), "%llu", (unsigned long long)lo);
	snprintf(a->hi, sizeof(a->hi), "%llu", (unsigned long long)size);
	a->argv[n++] = "-b";
	a->argv[n++] = a->lo;
	a->argv[n++] = "-e";
	a->argv[n++] = a->hi;
	a->argv[n++] = "-f";
	a->argv[n++] = "4";
	a->argv[n++] = "-d";
	a->argv[n++] = "float";
	a->argv[n++] = "-o";
	a->argv[n++] = "sum";
	if (c->quick) {
		a->argv[n++] = "-n";
		a->argv[n++] = "5";
		a->argv[n++] = "-w";
		a->argv[n++] = "2";
	}
	a->argv[n] = NULL;
}

/* What a fresh allreduce-test on the node must not take from the check's
 * own environment: the job's rendezvous (it launches its own ranks). */
static const char *const node_env[] = { "PENNY_ROOT", "PENNY_ROOT_FD", "PENNY_COOKIE",
					"PENNY_COOKIE_FILE", "MASTER_ADDR", "MASTER_PORT", NULL };

/*
 * argv of `allreduce-test --np N` on this node into argv (max entries);
 * the number strings live in buf (blen bytes).  extra: arguments after
 * the common ones (NULL-terminated), e.g. the sizes.
 */
static int node_argv(const struct pn_check *c, const char *backend, int nranks,
		     const char *const *extra, const char **argv, int max, char *buf, size_t blen)
{
	char *np = buf, *tmo = buf + 16;
	int n = 0;

	if (blen < 64)
		return -EINVAL;
	snprintf(np, 16, "%d", nranks);
	snprintf(tmo, 32, "%.3f", c->timeout);
	argv[n++] = c->exe;
	argv[n++] = "allreduce-test";
	argv[n++] = "--np";
	argv[n++] = np;
	argv[n++] = "--backend";
	argv[n++] = backend;
	argv[n++] = "--json";
	argv[n++] = "--timeout";
	argv[n++] = tmo;
	n = pn_check_ar_argv_tail(c, argv, n, max, extra);
	return n < 0 ? n : 0;
}

/*
 * allreduce-test --np nranks on this node, afresh, on the node's CPUs:
 * 0 with its output in *run (pn_run_release it), 1 when it ran and failed
 * (why), or a negative errno.
 */
static int node_run(const struct pn_check *c, const char *backend, int nranks,
		    const char *const *extra, const char *const *add, struct pn_run *run, char *why,
		    size_t wlen)
{
	const char *argv[40], *env[PN_ARRAY_SIZE(node_env) + 4];
	char buf[64];
	size_t n = 0;
	int ret;

	for (n = 0; node_env[n]; n++)
		env[n] = node_env[n];
	for (; add && *add && n < PN_ARRAY_SIZE(env) - 1; add++)
		env[n++] = *add;
	env[n] = NULL;

	*run = (struct pn_run){ 0 };
	if (!c->exe)
		return pn_err(-ENOENT, "no penny binary to run allreduce-test afresh");
	ret = node_argv(c, backend, nranks, extra, argv, (int)PN_ARRAY_SIZE(argv), buf, sizeof(buf));
	if (ret)
		return pn_err(ret, "allreduce-test's arguments do not fit");
	*run = (struct pn_run){ .argv = argv, .env = env, .timeout = c->timeout * 2 + 10,
				.out_max = AR_OUT_MAX, .cpus = c->ncpus > 0 ? c->cpus : NULL,
				.cpus_len = sizeof(c->cpus) };
	ret = pn_run(run);
	run->argv = NULL;
	run->env = NULL;
	if (ret == 1)
		snprintf(why, wlen, "%s", run->why);
	return ret;
}

int pn_check_ar_probe(const struct pn_check *c, const char *backend, int nranks, uint64_t bytes)
{
	char sz[32], why[300];
	const char *extra[] = { "-b", sz, "-e", sz, "-n", "1", "-w", "1", NULL };
	struct pn_run run;
	int ret;

	snprintf(sz, sizeof(sz), "%llu", (unsigned long long)bytes);
	ret = node_run(c, backend, nranks, extra, NULL, &run, why, sizeof(why));
	pn_run_release(&run);
	if (ret == 1)
		ret = pn_err(-EIO, "allreduce-test on %d ranks: %s", nranks, why);
	return ret;
}

/* The first plugin of the list that loads (no device is opened here). */
static int pick_plugin(const char *list, char *name, size_t len, char *why, size_t wlen)
{
	char copy[256], *tok, *save = NULL;
	struct pn_plugin *p;

	why[0] = 0;
	snprintf(copy, sizeof(copy), "%s", list);
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		int ret = pn_plugin_load(tok, &p);

		if (!ret) {
			snprintf(name, len, "%s", tok);
			pn_plugin_unload(p);
			return 1;
		}
		snprintf(why + strlen(why), wlen - strlen(why), "%s%s", why[0] ? "; " : "",
			 pn_errmsg(ret));
	}
	return 0;
}

/* ------------------------------------------------------------ the rows */

/*
 * What a finished allreduce-test measured: 0 with *m when it printed its
 * JSON and exited 0, or 1 with the verdict in its JSON (wrong values,
 * outputs that differ: exit 1 is its FAILED); 1 with why otherwise (ran:
 * pn_run's value).
 */
static int measured(const struct pn_run *run, int ran, struct pn_ar_meas *m, char *why,
		    size_t wlen)
{
	char perr[200];

	if (ran < 0 || (ran && run->status != 1))
		return 1;
	if (!pn_check_ar_parse(run->out, run->out_len, m, perr, sizeof(perr)) &&
	    (!ran || m->wrong || m->differ))
		return 0;
	if (!ran)
		snprintf(why, wlen, "%s", perr);
	return 1;
}

static double cfg_num(const struct pn_check *c, const char *key)
{
	double v = 0;

	pn_check_cfg_num(c->cfg, key, &v);
	return v;
}

/* One result from a measurement; dflt/dsrc: the expectation of the node's
 * own hardware (0: none), note: why there is none. */
static int ar_judge(struct pn_check *c, const char *node, const char *target,
		    const struct pn_ar_meas *m, double dflt, const char *dsrc, const char *note,
		    double secs)
{
	char src[PN_VERDICT_SOURCE], detail[PN_VERDICT_DETAIL], sizes[160] = "", blocks[64] = "";
	int last = m->nsizes - 1, i, ok;
	double meas = m->busbw[last], exp;

	for (i = 0; i < last; i++)
		snprintf(sizes + strlen(sizes), sizeof(sizes) - strlen(sizes), "%s%llu B %.3g",
			 i ? ", " : "; also ", (unsigned long long)m->bytes[i], m->busbw[i]);
	if (!isnan(m->busbw_min[last]) && !isnan(m->busbw_max[last]))
		snprintf(blocks, sizeof(blocks), ", blocks %.3g-%.3g", m->busbw_min[last],
			 m->busbw_max[last]);
	exp = pn_check_expect(c, CHECK, target, "allreduce.min-busbw", dflt, dsrc, src, sizeof(src));
	if (!(exp > 0)) {
		snprintf(src, sizeof(src), "none: %s (allreduce.min-busbw or --baseline sets one)",
			 note ? note : "no expectation");
		exp = NAN;
	}
	ok = !pn_sweep_verdict(m->wrong, m->differ, meas, isnan(exp) ? -1 : exp, detail,
			       sizeof(detail));
	if (m->wrong)
		snprintf(detail, sizeof(detail), "%llu wrong values (%s, %d ranks)",
			 (unsigned long long)m->wrong, m->backend, m->nranks);
	else if (m->differ)
		snprintf(detail, sizeof(detail), "%llu ranks' outputs differ from rank 0's (%s, %d "
			 "ranks)", (unsigned long long)m->differ, m->backend, m->nranks);
	else if (!ok)
		snprintf(detail, sizeof(detail), "busbw %.3g GB/s is %.0f%% of the expected %.3g "
			 "GB/s (%s, %d ranks, %llu B%s%s)", meas, 100 * meas / exp, exp, m->backend,
			 m->nranks, (unsigned long long)m->bytes[last], blocks, sizes);
	else
		snprintf(detail, sizeof(detail), "%s, %d ranks, %llu B%s, 0 wrong values%s",
			 m->backend, m->nranks, (unsigned long long)m->bytes[last], blocks, sizes);
	return pn_check_add(c, &(struct pn_verdict_in){
		.check = CHECK, .node = node, .target = target, .verdict = ok ? PN_PASS : PN_FAIL,
		.measured = PN_VNUM(meas), .expected = isnan(exp) ? PN_VTEXT("none") : PN_VNUM(exp),
		.unit = "GB/s", .source = src, .detail = detail, .seconds = secs });
}

static int ar_fail(struct pn_check *c, const char *node, const char *target, const char *why,
		   const char *backend)
{
	char detail[PN_VERDICT_DETAIL];

	snprintf(detail, sizeof(detail), "%s allreduce did not run: %s", backend, why);
	return pn_check_add(c, &(struct pn_verdict_in){
		.check = CHECK, .node = node, .target = target, .verdict = PN_FAIL,
		.detail = detail });
}

static int ar_skip(struct pn_check *c, const char *why)
{
	return pn_check_add(c, &(struct pn_verdict_in){
		.check = CHECK, .node = c->node, .target = "node", .verdict = PN_SKIP,
		.detail = why });
}

/* The node's expectation from its hardware: its copies, else ring-plan. */
static void node_expect(struct pn_check *c, double *exp, char *src, size_t len, char *note,
			size_t nlen)
{
	double eff = cfg_num(c, "allreduce.copy-efficiency"), pred = 0, floor = 0;
	char psrc[PN_VERDICT_SOURCE];

	*exp = 0;
	/* the config or a baseline sets it: nothing to measure for it */
	if (pn_check_cfg_num(c->cfg, "allreduce.min-busbw", &pred) == 1 ||
	    (c->baseline && !pn_check_baseline_find(c->baseline, CHECK, "node", &pred)))
		return;
	pred = 0;
	if (!pn_check_ar_copy_expect(c->results, c->node, eff, exp, src, len))
		return;
	if (!pn_checkgpu_copy_floor(c, &floor, psrc, sizeof(psrc))) {
		*exp = floor * eff;
		snprintf(src, len, "%s x %.3g%%", psrc, eff * 100);
		return;
	}
	eff = cfg_num(c, "allreduce.efficiency");
	if (!pn_checkgpu_predict(c->topo, 0, &pred, psrc, sizeof(psrc))) {
		*exp = pred * eff;
		snprintf(src, len, "topology: %s x %.3g%%", psrc, eff * 100);
		return;
	}
	snprintf(note, nlen, "no GPU copies measured and ring-plan predicts nothing here");
}

/* The row just added is a FAIL on its rate (below its expectation, no wrong value). */
static int missed(const struct pn_check *c)
{
	int n = pn_verdict_n(c->results);
	const struct pn_verdict_result *r = n > 0 ? pn_verdict_at(c->results, n - 1) : NULL;

	return r && r->verdict == PN_FAIL && r->measured.kind == PN_VAL_NUM &&
	       r->expected.kind == PN_VAL_NUM && r->measured.num < r->expected.num;
}

/*
 * The node's allreduce missed: the same allreduce on the ring of GPU pairs
 * (GPU i with GPU i+1, of the nranks GPUs CUDA sees), each afresh on those
 * two alone, against the node's expectation: a GPU in every slow pair and
 * in no fast one is the one whose kernels are slow (another process on its
 * SMs, its clocks), which an allreduce of all cannot tell (every GPU waits
 * for the slowest).  The decision table names it (check_diag.c).
 */
static int node_pairs(struct pn_check *c, const char *backend, int nranks,
		      const struct ar_args *a, double exp, const char *src)
{
	const char *cvd = getenv("CUDA_VISIBLE_DEVICES");
	char env1[64], why[300], target[32];
	const char *add[] = { env1, "CUDA_DEVICE_ORDER=PCI_BUS_ID", NULL };
	struct pn_ar_meas m;
	struct pn_run run;
	int i, gi, gj, ret = 0;
	double t0;

	for (i = 0; i < nranks && !ret; i++) {
		gi = pn_ranks_visible(cvd, i, c->topo->ngpus);
		gj = pn_ranks_visible(cvd, (i + 1) % nranks, c->topo->ngpus);
		if (gi < 0 || gj < 0 || gi == gj || (nranks == 2 && i))
			break;
		t0 = pn_now();
		snprintf(env1, sizeof(env1), "CUDA_VISIBLE_DEVICES=%d,%d", gi, gj);
		snprintf(target, sizeof(target), "GPU%d-GPU%d", gi, gj);
		pn_check_progress(c, CHECK, "the node's allreduce missed: %s alone", target);
		ret = node_run(c, backend, 2, a->argv, add, &run, why, sizeof(why));
		ret = measured(&run, ret, &m, why, sizeof(why));
		pn_run_release(&run);
		ret = ret ? ar_fail(c, c->node, target, why, backend)
			  : ar_judge(c, c->node, target, &m, exp, src, NULL, pn_now() - t0);
	}
	return ret;
}

/* The node's own allreduce (node leader). */
static int node_allreduce(struct pn_check *c)
{
	struct pn_ar_meas m;
	struct pn_run run;
	char why[512], src[PN_VERDICT_SOURCE] = "", note[160] = "", backend[32];
	int ngpus = c->topo ? c->topo->ngpus : 0, gpu, nranks, vis, ret;
	double t0 = pn_now(), exp = 0;
	struct ar_args a;

	gpu = ngpus > 0 && pick_plugin(pn_check_backend_list(c), backend, sizeof(backend), why,
				       sizeof(why));
	if (!gpu)
		snprintf(backend, sizeof(backend), "host");
	/* one GPU: nothing crosses a link; the host engine checks nothing either */
	if (gpu && ngpus < 2)
		return ar_skip(c, "one GPU: an allreduce on the node moves no data");
	/* the GPUs CUDA sees here (CUDA_VISIBLE_DEVICES by index), one rank each */
	vis = gpu ? pn_ranks_visible_count(getenv("CUDA_VISIBLE_DEVICES"), ngpus, NULL, 0) : -1;
	nranks = vis > 1 && vis < ngpus ? vis : ngpus > 1 ? ngpus : 2;
	ar_args(c, !gpu, &a);
	pn_check_progress(c, CHECK, "%d ranks on %s", nranks, backend);
	ret = node_run(c, backend, nranks, a.argv, NULL, &run, why, sizeof(why));
	if (ret < 0) {
		snprintf(why, sizeof(why), "%s", pn_errmsg(ret));
		ret = 1;
	}
	ret = measured(&run, ret, &m, why, sizeof(why));
	pn_run_release(&run);
	if (ret && gpu && !pn_sysfs_is_live()) {
		/* the tree's GPUs are another machine's: as gpu-copy, not measured */
		char skip[PN_VERDICT_DETAIL];

		snprintf(skip, sizeof(skip), "not measured: the sysfs root is a captured tree "
			 "(%s: %.180s)", backend, why);
		return ar_skip(c, skip);
	}
	if (ret)
		return ar_fail(c, c->node, "node", why, backend);
	if (gpu)
		node_expect(c, &exp, src, sizeof(src), note, sizeof(note));
	else
		snprintf(note, sizeof(note), "the host engine%s has no topology prediction",
			 ngpus ? " (no GPU plugin)" : "");
	ret = ar_judge(c, c->node, "node", &m, exp, src, note, pn_now() - t0);
	if (!ret && gpu && nranks >= 3 && missed(c))
		ret = node_pairs(c, backend, nranks, &a, exp, src);
	return ret;
}

/* The job's backend: nccl when every rank loads it and has a GPU, else the
 * host engine (every rank gets the same answer). */
static int job_backend(struct pn_check *c, char *backend, size_t len)
{
	int32_t mine = 0, *all;
	struct pn_plugin *p;
	int r, ret, ok = 1;

	if (c->topo && c->topo->ngpus > 0 && strstr(pn_check_backend_list(c), "nccl") &&
	    !pn_plugin_load("nccl", &p)) {
		pn_plugin_unload(p);
		mine = 1;
	}
	all = calloc((size_t)c->nranks, sizeof(*all));
	if (!all)
		return pn_err(-ENOMEM, "out of memory");
	ret = pn_boot_allgather(c->boot, &mine, all, sizeof(mine));
	for (r = 0; r < c->nranks; r++)
		ok &= all[r] == 1;
	free(all);
	snprintf(backend, len, "%s", ok ? "nccl" : "host");
	return ret;
}

/* The job's allreduce: every rank, afresh. */
static int job_allreduce(struct pn_check *c)
{
	struct pn_fresh_end *ends;
	struct pn_ar_meas m;
	struct pn_run run = { 0 };
	char backend[16], why[300];
	const char *args[20] = { "--backend", backend };
	double t0 = pn_now();
	struct ar_args a;
	int k, ret, i;

	ret = job_backend(c, backend, sizeof(backend));
	if (ret)
		return ret;
	ar_args(c, !strcmp(backend, "host"), &a);
	for (i = 0; a.argv[i]; i++)
		args[2 + i] = a.argv[i];
	pn_check_progress(c, CHECK, "the job's %d ranks on %s", c->nranks, backend);
	ends = calloc((size_t)c->nranks, sizeof(*ends));
	if (!ends)
		return pn_err(-ENOMEM, "out of memory");
	ret = pn_check_fresh_job(c, 1, "", NULL, args, &run, ends, why, sizeof(why));
	if (ret < 0 || c->rank != 0)
		goto out;
	snprintf(c->job_backend, sizeof(c->job_backend), "%s", backend);
	k = ret ? -1 : pn_fresh_failed(ends, c->nranks);
	if (ret == 1) {
		ret = ar_fail(c, "job", "job", why, backend);
	} else if (k >= 0 && (ends[k].killed || !run.out_len ||
			      measured(&run, 1, &m, why, sizeof(why)))) {
		/* a rank that failed, save allreduce-test's own FAILED (wrong values) */
		snprintf(why, sizeof(why), "rank %d (node %s): %.200s", k, pn_check_node_of(c, k),
			 ends[k].why);
		ret = ar_fail(c, "job", "job", why, backend);
	} else if (k < 0 && pn_check_ar_parse(run.out, run.out_len, &m, why, sizeof(why))) {
		ret = ar_fail(c, "job", "job", why, backend);
	} else {
		ret = ar_judge(c, "job", "job", &m, 0, "", "ring-plan's job prediction is not used",
			       pn_now() - t0);
	}
out:
	pn_run_release(&run);
	free(ends);
	return ret;
}

/*
 * The longest the node leader's own allreduce can keep it from the job:
 * the row (killed at 2t + 10), the copies for its expectation (t) and, on
 * a miss, the pairs (each 2t + 10).  The other ranks wait that much longer
 * at the barrier after it (a leader that dies is still noticed at once).
 */
static double node_bound(const struct pn_check *c)
{
	int g = c->topo ? c->topo->ngpus : 0;

	return 3 * c->timeout + 10 + (g >= 3 ? g * (2 * c->timeout + 10) : 0);
}

int pn_check_allreduce(struct pn_check *c)
{
	int ret = 0, lost;

	if (c->node_leader)
		ret = node_allreduce(c);
	if (!ret && c->boot && c->nranks > 1) {
		pn_boot_set_extra(c->boot, node_bound(c));
		lost = pn_boot_barrier(c->boot);
		pn_boot_set_extra(c->boot, 0);
		if (lost)
			return 0;
		ret = job_allreduce(c);
	}
	return ret;
}
