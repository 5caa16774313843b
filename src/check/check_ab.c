/* SPDX-License-Identifier: MIT */
/*
 * The A/B of the decision table (check_ab.h, check_diag.h): the job's allreduce
 * on nccl missed its expectation; is NCCL's choice of NIC the cause?  NCCL
 * reads NCCL_IB_HCA once per process, so the A/B is a fresh job
 * (check_fresh.c): every rank's `allreduce-test --backend nccl --json`
 * with NCCL_IB_HCA pinned to its GPU's rail NIC (the nearest NIC,
 * pn_topo_rail; the GPU as the ranks check finds it), at the job's
 * allreduce.size.  Rank 0 reads its child's JSON and adds the result
 * "allreduce", target "job-rail", against the job's expectation; a rank
 * without a rail NIC SKIPs it, a child that fails, dies, hangs (killed
 * before the job's --timeout runs out) or prints what is not
 * allreduce-test's JSON FAILs it, naming the rank and why.
 */
#define _GNU_SOURCE
#include "check/check_ab.h"
#include "check/check_ar.h"
#include "check/check_cfg.h"
#include "check/check_fresh.h"
#include "check/check_ranks.h"
#include "check/check_row.h"
#include "base/log.h"
#include "base/run.h"
#include "base/util.h"
#include "base/verdict.h"
#include "engine/boot.h"
#include "node/nic.h"
#include "node/topo.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TARGET "job-rail"
#define AB_ITERS "5"
#define SOURCE "the decision table: NCCL_IB_HCA per rank"

/* ------------------------------------------------------------ pure parts */

int pn_diag_ab_wanted(const struct pn_verdict_list *l)
{
	int i, job = -1;

	for (i = 0; i < pn_verdict_n(l); i++) {
		const struct pn_verdict_result *r = pn_verdict_at(l, i);

		if (strcmp(r->check, "allreduce"))
			continue;
		if (!strcmp(r->target, TARGET))
			return -1;
		if (!strcmp(r->target, "job") && r->verdict == PN_FAIL &&
		    r->measured.kind == PN_VAL_NUM && r->expected.kind == PN_VAL_NUM &&
		    r->measured.num < r->expected.num)
			job = i;
	}
	return job;
}

/* ------------------------------------------------------------ in the run */

/* What each rank tells the others before the A/B (fixed size: an allgather). */
struct ab_rank {
	int32_t ok;		/* it has a rail NIC */
	char hca[80];		/* "=mlx5_0:1": NCCL_IB_HCA, exact name */
	char why[120];		/* !ok: why not */
};

/* This rank's GPU's rail NIC as NCCL_IB_HCA wants it ("=mlx5_0:1"). */
static void my_rail(const struct pn_check *c, struct ab_rank *me)
{
	const struct pn_topo *t = c->topo;
	const char *cvd = getenv("CUDA_VISIBLE_DEVICES");
	int *nics, g, n, best, k, j, port;

	memset(me, 0, sizeof(*me));
	g = pn_ranks_visible(cvd, pn_boot_local_rank(c->boot), t->ngpus);
	if (g < 0) {
		snprintf(me->why, sizeof(me->why), "%s", t->ngpus ? "CUDA_VISIBLE_DEVICES names no "
			 "GPU by index" : "no GPU");
		return;
	}
	nics = calloc((size_t)t->nnics + 1, sizeof(*nics));
	if (!nics) {
		snprintf(me->why, sizeof(me->why), "out of memory");
		return;
	}
	n = pn_topo_rail(t, g, nics, &best);
	k = n > 0 ? nics[0] : -1;
	free(nics);
	if (k < 0 || !t->devs[k].nic.nports) {
		snprintf(me->why, sizeof(me->why), "%s has no RDMA NIC with a port",
			 t->devs[g].name);
		return;
	}
	port = t->devs[k].nic.ports[0].port;
	for (j = 0; j < t->devs[k].nic.nports; j++)
		if (pn_port_up(&t->devs[k].nic.ports[j])) {
			port = t->devs[k].nic.ports[j].port;
			break;
		}
	snprintf(me->hca, sizeof(me->hca), "=%s:%d", t->devs[k].nic.name, port);
	me->ok = 1;
}

/* Rank 0: the row. */
static int ab_row(struct pn_check *c, int job, const struct ab_rank *all,
		  const struct pn_fresh_end *ends, const struct pn_run *run)
{
	const struct pn_verdict_result *j = pn_verdict_at(c->results, job);
	char det[PN_VERDICT_DETAIL], why[160], nics[120] = "";
	double as_run = j->measured.num, exp = j->expected.num, bw = NAN;
	unsigned long long bytes = 0;
	struct pn_ar_meas m;
	struct pn_verdict_in in = { .check = "allreduce", .node = "job", .target = TARGET,
				    .verdict = PN_FAIL, .unit = "GB/s", .detail = det,
				    .expected = PN_VNUM(exp), .source = SOURCE };
	int r, k, n;

	/* the rail NICs pinned, each once ("=mlx5_0:1 =mlx5_3:1") */
	for (r = 0; r < c->nranks; r++) {
		int seen = 0;

		for (k = 0; k < r && !seen; k++)
			seen = !strcmp(all[k].hca, all[r].hca);
		n = (int)strlen(nics);
		if (!seen && n + strlen(all[r].hca) + 5 < sizeof(nics))
			snprintf(nics + n, sizeof(nics) - (size_t)n, "%s%s", n ? " " : "",
				 all[r].hca + 1);
	}
	if ((r = pn_fresh_failed(ends, c->nranks)) >= 0) {
		snprintf(det, sizeof(det), "pinned to the rail NICs, rank %d (node %s) failed: "
			 "%s", r, pn_check_node_of(c, r), ends[r].why);
	} else if (pn_check_ar_parse(run->out, run->out_len, &m, why, sizeof(why)) ||
		   (m.wrong && snprintf(why, sizeof(why), "%llu wrong values",
					(unsigned long long)m.wrong))) {
		snprintf(det, sizeof(det), "pinned to the rail NICs, rank 0's allreduce-test: %s",
			 why);
	} else {
		bw = m.busbw[m.nsizes - 1];
		bytes = m.bytes[m.nsizes - 1];
		in.measured = PN_VNUM(bw);
		in.verdict = bw >= exp ? PN_PASS : PN_FAIL;
		snprintf(det, sizeof(det), "NCCL_IB_HCA pinned to each GPU's rail NIC (%s): %.3g "
			 "GB/s, %.3g as run (%llu B, %d ranks)", nics, bw, as_run, bytes, c->nranks);
	}
	return pn_check_add(c, &in);
}

int pn_check_rail_ab(struct pn_check *c)
{
	struct ab_rank me, *all = NULL;
	struct pn_fresh_end *ends = NULL;
	struct pn_run run = { 0 };
	char hca[100], no[120], why[160];
	const char *env[] = { hca, NULL };
	char sz[32];
	const char *args[] = { "--backend", "nccl", "-b", sz, "-e", sz, "-n", AB_ITERS, NULL };
	int32_t want = 0;
	int job = -1, r, ret;
	double size = 0;

	if (!c->boot || c->nranks < 2 || !(c->mask & (1u << PN_CHECK_ALLREDUCE)))
		return 0;
	if (c->rank == 0) {
		job = pn_diag_ab_wanted(c->results);
		want = job >= 0 && !strcmp(c->job_backend, "nccl");
	}
	ret = pn_boot_bcast(c->boot, &want, sizeof(want), 0);
	if (ret || !want)
		return ret;
	pn_check_progress(c, "diagnosis", "the job's allreduce missed: NCCL pinned to each "
			  "GPU's rail NIC");
	all = calloc((size_t)c->nranks, sizeof(*all));
	ends = calloc((size_t)c->nranks, sizeof(*ends));
	if (!all || !ends) {
		ret = pn_err(-ENOMEM, "out of memory for the A/B");
		goto out;
	}
	my_rail(c, &me);
	ret = pn_boot_allgather(c->boot, &me, all, sizeof(me));
	if (ret)
		goto out;
	for (r = 0; r < c->nranks; r++)
		all[r].hca[sizeof(all[r].hca) - 1] = 0;
	snprintf(hca, sizeof(hca), "NCCL_IB_HCA=%s", me.hca);
	snprintf(no, sizeof(no), "has no rail NIC: %.100s", me.why);
	pn_check_cfg_num(c->cfg, "allreduce.size", &size);
	size = size < 4 ? 4 : floor(size / 4) * 4;
	snprintf(sz, sizeof(sz), "%llu", (unsigned long long)size);
	ret = pn_check_fresh_job(c, me.ok, no, env, args, &run, ends, why,
				 sizeof(why));
	if (ret == 1 && c->rank == 0)
		ret = pn_check_add(c, &(struct pn_verdict_in){
			.check = "allreduce", .node = "job", .target = TARGET, .verdict = PN_SKIP,
			.detail = why, .source = SOURCE });
	else if (!ret && c->rank == 0)
		ret = ab_row(c, job, all, ends, &run);
	else if (ret == 1)
		ret = 0;
out:
	pn_run_release(&run);
	free(all);
	free(ends);
	return ret;
}
