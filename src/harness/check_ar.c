/* SPDX-License-Identifier: MIT */
/*
 * The allreduce check of `penny check` (pn_check_allreduce): the allreduce
 * sweep (sweep.h) at allreduce.size, judged on its busbw and on its wrong
 * values (any wrong value FAILs).
 *
 * On the node (the node leader): one rank per GPU, self-launched in a child
 * process (check_gpu.h says why), on the first GPU plugin of the list that
 * loads ("cuda,nccl"), expected to reach ring-plan's predicted busbw for the
 * node's topology times allreduce.efficiency.  Without a GPU plugin, or on
 * a node without GPUs, the host engine runs (one rank per GPU, two without
 * GPUs); ring-plan predicts nothing for it, so only allreduce.min-busbw or
 * a baseline give it an expectation, and without one it PASSes on correct
 * values alone with expected "none" (it ran; the source says there was no
 * expectation).
 *
 * Across the job (under a launcher, more than one rank): every rank of the
 * job, on the nccl plugin when every rank can load it, else the host engine
 * over the transports the engine picks (verbs between nodes); target "job",
 * expected from allreduce.min-busbw or the baseline.
 */
#define _GNU_SOURCE
#include "harness/arjob.h"
#include "harness/check.h"
#include "harness/check_cfg.h"
#include "harness/check_gpu.h"
#include "harness/sweep.h"

#include "base/log.h"
#include "base/util.h"
#include "base/verdict.h"
#include "engine/boot.h"
#include "engine/comm.h"
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
#define AR_MAX_SIZES 3

struct ar_meas {
	char backend[32];
	int nranks;
	int nsizes;
	uint64_t bytes[AR_MAX_SIZES];
	double busbw[AR_MAX_SIZES];
	uint64_t wrong;
};

struct ar_req {
	char backend[32];	/* "host" or a plugin */
	int nranks;
	uint64_t sizes[AR_MAX_SIZES];
	int nsizes, iters;
	double timeout;
	const char *tune_file;	/* the check's knobs (check.h) */
	const char *transport;
	const char *ib_hca;
	int ib_disable;
	const struct pn_xnode_env *xnode;
};

/* The sweep's rows into the measurement (rank 0 keeps them). */
static int ar_row(void *arg, const struct pn_sweep_row *row, size_t i, size_t n)
{
	struct ar_meas *m = arg;

	(void)n;
	if (i < AR_MAX_SIZES) {
		m->bytes[i] = row->bytes;
		m->busbw[i] = row->busbw[0];
		if ((int)i + 1 > m->nsizes)
			m->nsizes = (int)i + 1;
	}
	return 0;
}

/* The sweep over a started boot: every rank; rank 0 fills *m. */
static int ar_sweep(struct pn_boot *b, const struct ar_req *rq, struct ar_meas *m)
{
	enum pn_algo algo = PN_ALGO_AUTO;
	struct pn_arjob_cfg jc = {
		.comm = { .nchannels = 1, .transport = rq->transport, .ib_hca = rq->ib_hca,
			  .ib_disable = rq->ib_disable },
		.tune_file = rq->tune_file, .backends = rq->backend, .algos = &algo, .nalgos = 1,
		.max_bytes = rq->sizes[rq->nsizes - 1],
		.gpu = { .algos = "auto", .ndev = -1, .xnode = rq->xnode },
	};
	struct pn_arjob job;
	struct pn_sweep sw;
	struct ar_meas mine;
	int ret;

	memset(&mine, 0, sizeof(mine));
	pn_sweep_init(&sw);
	ret = pn_arjob_start(&job, b, &jc);
	if (!ret) {
		sw.dtype = PN_FLOAT;
		sw.op = PN_SUM;
		sw.sizes = rq->sizes;
		sw.nsizes = (size_t)rq->nsizes;
		sw.iters = rq->iters;
		sw.warmup = 2;
		sw.check = 1;
		sw.seed = 1;
		sw.sink = (struct pn_sweep_sink){ .arg = &mine, .row = ar_row };
		ret = pn_arjob_run(&job, &sw);
	}
	if (!ret && pn_boot_rank(b) == 0) {
		*m = mine;
		m->wrong = sw.wrong;
		m->nranks = pn_boot_nranks(b);
		snprintf(m->backend, sizeof(m->backend), "%s", rq->backend);
	}
	pn_sweep_release(&sw);
	pn_arjob_close(&job);
	return ret;
}

/* A rank of the node's allreduce: its error line to the launcher. */
struct ar_rank {
	const struct ar_req *rq;
	void *out;
};

static int ar_rank(struct pn_boot_cfg *cfg, void *arg)
{
	struct ar_rank *a = arg;
	struct pn_boot *b = NULL;
	int ret = pn_boot_init(&b, cfg);

	if (!ret)
		ret = ar_sweep(b, a->rq, a->out);
	if (ret) {
		char line[320];
		int n = snprintf(line, sizeof(line), "rank %d: %s\n", cfg->rank, pn_errmsg(ret));

		pn_boot_tell(cfg, line, (size_t)(n < (int)sizeof(line) ? n : (int)sizeof(line) - 1));
	}
	pn_boot_free(b);
	return ret ? 1 : 0;
}

/* In a child: launch the node's ranks (the commands' self-launch), rank 0
 * writes the measurement; the first rank's error is the child's. */
static int ar_node(void *arg, void *out)
{
	struct ar_rank a = { arg, out };
	struct pn_boot_cfg cfg;
	char *report = NULL, *nl;
	int status = 0, ret;

	pn_boot_cfg_init(&cfg);
	cfg.timeout = a.rq->timeout;
	ret = pn_boot_run_ranks(a.rq->nranks, &cfg, ar_rank, &a, &status, &report);
	if (!ret && status) {
		nl = report ? strchr(report, '\n') : NULL;
		if (nl)
			*nl = 0;
		ret = pn_err(-EIO, "%s", report && report[0] ? report : "a rank failed");
	}
	free(report);
	return ret;
}

static double cfg_num(const struct pn_check *c, const char *key, int *set)
{
	double v = 0;
	int r = pn_check_cfg_num(c->cfg, key, &v);

	if (set)
		*set = r == 1;
	return v;
}

/* The sizes: allreduce.size, and with the full check two smaller ones. */
static void ar_sizes(const struct pn_check *c, struct ar_req *rq)
{
	uint64_t size = (uint64_t)cfg_num(c, "allreduce.size", NULL) / 4 * 4;

	if (size < 4)
		size = 4;
	rq->nsizes = 0;
	if (!c->quick) {
		if (size / 16 >= 4)
			rq->sizes[rq->nsizes++] = size / 16 / 4 * 4;
		if (size / 4 >= 4)
			rq->sizes[rq->nsizes++] = size / 4 / 4 * 4;
	}
	rq->sizes[rq->nsizes++] = size;
	rq->iters = c->quick ? 5 : 20;
	rq->timeout = c->timeout;
	rq->tune_file = c->tune_file;
	rq->transport = c->transport;
	rq->ib_hca = c->ib_hca;
	rq->ib_disable = c->ib_disable;
	rq->xnode = c->xnode;
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

/* One result from a measurement; dflt/dsrc: the topology's expectation (0: none). */
static int ar_judge(struct pn_check *c, const char *node, const char *target,
		    const struct ar_meas *m, double dflt, const char *dsrc, const char *note,
		    double secs)
{
	char src[PN_VERDICT_SOURCE], detail[PN_VERDICT_DETAIL], sizes[160] = "";
	double meas = m->busbw[m->nsizes - 1], exp;
	int i, ok, ret;

	for (i = 0; i < m->nsizes - 1; i++)
		snprintf(sizes + strlen(sizes), sizeof(sizes) - strlen(sizes), "%s%llu B %.3g",
			 i ? ", " : "; also ", (unsigned long long)m->bytes[i], m->busbw[i]);
	exp = pn_check_expect(c, CHECK, target, "allreduce.min-busbw", dflt, dsrc, src, sizeof(src));
	if (!(exp > 0)) {
		snprintf(src, sizeof(src), "none: %s (allreduce.min-busbw or --baseline sets one)",
			 note);
		exp = NAN;
	}
	ok = !pn_sweep_verdict(m->wrong, 0, meas, isnan(exp) ? -1 : exp, detail, sizeof(detail));
	if (m->wrong)
		snprintf(detail, sizeof(detail), "%llu wrong values (%s, %d ranks)",
			 (unsigned long long)m->wrong, m->backend, m->nranks);
	else if (!ok)
		snprintf(detail, sizeof(detail), "busbw %.3g GB/s is %.0f%% of the expected %.3g "
			 "GB/s (%s, %d ranks, %llu B%s)", meas, 100 * meas / exp, exp, m->backend,
			 m->nranks, (unsigned long long)m->bytes[m->nsizes - 1], sizes);
	else
		snprintf(detail, sizeof(detail), "%s, %d ranks, %llu B, 0 wrong values%s", m->backend,
			 m->nranks, (unsigned long long)m->bytes[m->nsizes - 1], sizes);
	ret = pn_verdict_add(c->results, &(struct pn_verdict_in){
		.check = CHECK, .node = node, .target = target, .verdict = ok ? PN_PASS : PN_FAIL,
		.measured = PN_VNUM(meas), .expected = isnan(exp) ? PN_VTEXT("none") : PN_VNUM(exp),
		.unit = "GB/s", .source = src, .detail = detail, .seconds = secs });
	return ret == -ENOMEM ? ret : 0;
}

static int ar_fail(struct pn_check *c, const char *node, const char *target, int err,
		   const char *backend)
{
	char detail[PN_VERDICT_DETAIL];
	int ret;

	snprintf(detail, sizeof(detail), "%s allreduce did not run: %s", backend, pn_errmsg(err));
	ret = pn_verdict_add(c->results, &(struct pn_verdict_in){
		.check = CHECK, .node = node, .target = target, .verdict = PN_FAIL,
		.detail = detail });
	return ret == -ENOMEM ? ret : 0;
}

/* The node's own allreduce (node leader). */
static int node_allreduce(struct pn_check *c)
{
	struct ar_req rq;
	struct ar_meas m;
	char why[512], src[PN_VERDICT_SOURCE] = "", dsrc[PN_VERDICT_SOURCE], note[160];
	int ngpus = c->topo ? c->topo->ngpus : 0, gpu, ret;
	double t0 = pn_now(), pred = 0, eff = cfg_num(c, "allreduce.efficiency", NULL);

	memset(&rq, 0, sizeof(rq));
	memset(&m, 0, sizeof(m));
	ar_sizes(c, &rq);
	gpu = ngpus > 0 && pick_plugin(pn_check_backend_list(c), rq.backend,
				       sizeof(rq.backend), why, sizeof(why));
	if (!gpu)
		snprintf(rq.backend, sizeof(rq.backend), "host");
	rq.nranks = ngpus > 1 ? ngpus : 2;
	if (gpu && ngpus < 2) {
		/* one GPU: nothing crosses a link; the host engine checks nothing either */
		return pn_verdict_add(c->results, &(struct pn_verdict_in){
			.check = CHECK, .node = c->node, .target = "node", .verdict = PN_SKIP,
			.detail = "one GPU: an allreduce on the node moves no data" }) == -ENOMEM
			       ? -ENOMEM : 0;
	}
	pn_check_progress(c, CHECK, "%d ranks on %s", rq.nranks, rq.backend);
	ret = pn_checkgpu_child(ar_node, &rq, &m, sizeof(m), c->timeout * 2 + 10,
				"the node's allreduce");
	if (ret && gpu && !pn_sysfs_is_live()) {
		/* the tree's GPUs are another machine's: as gpu-copy, not measured */
		snprintf(why, sizeof(why), "not measured: the sysfs root is a captured tree "
			 "(%s: %s)", rq.backend, pn_errmsg(ret));
		return pn_verdict_add(c->results, &(struct pn_verdict_in){
			.check = CHECK, .node = c->node, .target = "node", .verdict = PN_SKIP,
			.detail = why }) == -ENOMEM ? -ENOMEM : 0;
	}
	if (ret)
		return ar_fail(c, c->node, "node", ret, rq.backend);
	if (m.nsizes < 1)
		return ar_fail(c, c->node, "node", pn_err(-EIO, "no size was measured"), rq.backend);
	if (gpu && !pn_checkgpu_predict(c->topo, 0, &pred, src, sizeof(src))) {
		snprintf(dsrc, sizeof(dsrc), "topology: %s x %.3g%%", src, eff * 100);
		return ar_judge(c, c->node, "node", &m, pred * eff, dsrc, NULL, pn_now() - t0);
	}
	if (gpu)
		snprintf(note, sizeof(note), "ring-plan predicts nothing here: %s", pn_errmsg(-EINVAL));
	else
		snprintf(note, sizeof(note), "the host engine%s has no topology prediction",
			 ngpus ? " (no GPU plugin)" : "");
	return ar_judge(c, c->node, "node", &m, 0, "", note, pn_now() - t0);
}

/* The job's allreduce: every rank. */
static int job_allreduce(struct pn_check *c)
{
	struct ar_req rq;
	struct ar_meas m;
	const char *list = pn_check_backend_list(c);
	double t0 = pn_now();
	int ret = -ENOENT;

	memset(&rq, 0, sizeof(rq));
	memset(&m, 0, sizeof(m));
	ar_sizes(c, &rq);
	pn_check_progress(c, CHECK, "the job's %d ranks", c->nranks);
	if (strstr(list, "nccl")) {
		snprintf(rq.backend, sizeof(rq.backend), "nccl");
		ret = ar_sweep(c->boot, &rq, &m);
	}
	if (ret) {
		/* every rank got the same verdict from the collective open */
		snprintf(rq.backend, sizeof(rq.backend), "host");
		ret = ar_sweep(c->boot, &rq, &m);
	}
	if (c->rank != 0)
		return 0;
	if (ret)
		return ar_fail(c, "job", "job", ret, rq.backend);
	snprintf(c->job_backend, sizeof(c->job_backend), "%s", rq.backend);
	return ar_judge(c, "job", "job", &m, 0, "", "ring-plan's job prediction is not used",
			pn_now() - t0);
}

int pn_check_allreduce(struct pn_check *c)
{
	int ret = 0;

	/* the node's ranks are forked before any GPU is opened in this process */
	if (c->node_leader)
		ret = node_allreduce(c);
	if (!ret && c->boot && c->nranks > 1) {
		if (c->boot && pn_boot_barrier(c->boot))
			return 0;
		ret = job_allreduce(c);
	}
	return ret;
}

int pn_check_ar_probe(const char *backend, int nranks, uint64_t bytes, double timeout)
{
	struct ar_req rq;
	struct ar_meas m;

	memset(&rq, 0, sizeof(rq));
	snprintf(rq.backend, sizeof(rq.backend), "%s", backend);
	rq.nranks = nranks;
	rq.sizes[0] = bytes;
	rq.nsizes = 1;
	rq.iters = 1;
	rq.timeout = timeout;
	return pn_checkgpu_child(ar_node, &rq, &m, sizeof(m), timeout * 2 + 10,
				 "the logged allreduce");
}
