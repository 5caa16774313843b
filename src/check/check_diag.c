/* SPDX-License-Identifier: MIT */
/*
 * The decision table (check_diag.h) and its place in the run
 * (check.h): after the checks, when an allreduce missed, the
 * measurements the table needs are run if they did not (every rank agrees
 * on them: the union of what each rank's results ask for), and rank 0 adds
 * one result, check "diagnosis", that names the layer and the evidence.
 */
#define _GNU_SOURCE
#include "check/check_diag.h"
#include "check/check_row.h"
#include "base/log.h"
#include "base/verdict.h"
#include "engine/boot.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What the results of one check say: no row, only SKIPs, all PASS, some FAIL. */
enum seen { NONE, SKIPPED, PASSED, FAILED };

static int is(const struct pn_verdict_result *r, const char *check)
{
	return !strcmp(r->check, check);
}

/* A GPU pair's copy ("GPU0-GPU1"), not a host copy ("GPU0:h2d"). */
static int gpu_pair(const struct pn_verdict_result *r)
{
	return is(r, "gpu-copy") && strchr(r->target, '-') && !strchr(r->target, ':');
}

/* settings rows that are the physical path's (P2P, PCIe, NVLink, a hidden tree) */
static int path_setting(const struct pn_verdict_result *r)
{
	static const char *const tails[] = { ":acs", ":iommu", ":p2p", ":nvlink", ":pci-path" };
	size_t i, n = strlen(r->target);

	if (!is(r, "settings"))
		return 0;
	for (i = 0; i < sizeof(tails) / sizeof(tails[0]); i++) {
		size_t k = strlen(tails[i]);

		if (n >= k && !strcmp(r->target + n - k, tails[i]))
			return 1;
	}
	return 0;
}

/* settings rows that are NCCL's choice of path across nodes */
static int net_setting(const struct pn_verdict_result *r)
{
	return is(r, "settings") && (!strcmp(r->target, "gpudirect-rdma") ||
				     !strcmp(r->target, "memlock") || strstr(r->target, ":roce-gid"));
}

static enum seen seen(const struct pn_verdict_list *l, int (*match)(const struct pn_verdict_result *,
								    const void *),
		      const void *arg)
{
	enum seen s = NONE;
	int i;

	for (i = 0; i < pn_verdict_n(l); i++) {
		const struct pn_verdict_result *r = pn_verdict_at(l, i);

		if (!match(r, arg))
			continue;
		if (r->verdict == PN_SKIP) {
			if (s == NONE)
				s = SKIPPED;
			continue;
		}
		if (r->verdict == PN_FAIL)
			return FAILED;
		s = PASSED;
	}
	return s;
}

static int match_check(const struct pn_verdict_result *r, const void *arg)
{
	return is(r, arg);
}

static int match_pairs(const struct pn_verdict_result *r, const void *arg)
{
	(void)arg;
	return gpu_pair(r);
}

static int match_target(const struct pn_verdict_result *r, const void *arg)
{
	return is(r, "allreduce") && !strcmp(r->target, arg);
}

/* The allreduce row of target (index), -1 none. */
static int find_target(const struct pn_verdict_list *l, const char *target)
{
	int i;

	for (i = 0; i < pn_verdict_n(l); i++)
		if (match_target(pn_verdict_at(l, i), target))
			return i;
	return -1;
}

/* A kept value as a number, NaN when it is not one. */
static double num(const struct pn_verdict_kept_val *v)
{
	return v->kind == PN_VAL_NUM ? v->num : NAN;
}

enum pn_diag_ab pn_diag_ab(double as_run, double pinned, double expected)
{
	if (!isfinite(as_run) || !isfinite(pinned) || as_run < 0 || pinned <= 0)
		return PN_AB_NONE;
	if (isfinite(expected) && expected > 0 && as_run < expected && pinned >= expected)
		return PN_AB_RAIL;
	return pinned >= as_run * PN_DIAG_AB_GAIN ? PN_AB_RAIL : PN_AB_NOT_RAIL;
}

static void evidence(const struct pn_verdict_list *l, struct pn_diag *d,
		     int (*match)(const struct pn_verdict_result *))
{
	int i;

	for (i = 0; i < pn_verdict_n(l) && d->nevidence < PN_DIAG_EVIDENCE; i++) {
		const struct pn_verdict_result *r = pn_verdict_at(l, i);

		if (r->verdict == PN_FAIL && match(r))
			d->evidence[d->nevidence++] = i;
	}
}

static int ev_pairs(const struct pn_verdict_result *r)
{
	return gpu_pair(r) || path_setting(r);
}

static int ev_nccl_node(const struct pn_verdict_result *r)
{
	return is(r, "nccl-path") || is(r, "ranks");
}

static int ev_net(const struct pn_verdict_result *r)
{
	return is(r, "nic-bw") || is(r, "counters") || is(r, "rails");
}

static int ev_nccl_net(const struct pn_verdict_result *r)
{
	return is(r, "nccl-path") || is(r, "ranks") || net_setting(r);
}

/* The A/B of the job's NIC choice (its job-rail row), if it ran; for
 * PN_AB_RAIL the layer, why (after pre) and the evidence are set. */
static enum pn_diag_ab ab_decide(const struct pn_verdict_list *l, struct pn_diag *d,
				 const char *pre)
{
	const struct pn_verdict_result *rr, *rj;
	int ab = find_target(l, "job-rail"), j = find_target(l, "job");
	double as_run, pinned;

	if (ab < 0 || j < 0)
		return PN_AB_NONE;
	rr = pn_verdict_at(l, ab);
	rj = pn_verdict_at(l, j);
	as_run = num(&rj->measured);
	pinned = num(&rr->measured);
	if (pn_diag_ab(as_run, pinned, num(&rj->expected)) != PN_AB_RAIL)
		return pn_diag_ab(as_run, pinned, num(&rj->expected));
	d->layer = "NCCL path selection";
	snprintf(d->why, sizeof(d->why), "%spinned to each GPU's rail NIC (NCCL_IB_HCA) the job's "
		 "allreduce reaches %.3g GB/s, %.3g as run: NCCL's NIC choice", pre, pinned, as_run);
	d->evidence[d->nevidence++] = ab;
	evidence(l, d, ev_nccl_net);
	return PN_AB_RAIL;
}

static int gpu_suspect(const struct pn_verdict_list *l, struct pn_diag *d);

void pn_diag_decide(const struct pn_verdict_list *l, struct pn_diag *d)
{
	enum seen node = seen(l, match_target, "node"), job = seen(l, match_target, "job");
	enum seen pairs = seen(l, match_pairs, NULL), nic = seen(l, match_check, "nic-bw");
	enum seen path = seen(l, match_check, "nccl-path"), ctr = seen(l, match_check, "counters");
	int ruled_out = 0;

	memset(d, 0, sizeof(*d));
	d->layer = "unknown";
	if (node != FAILED && job != FAILED)
		return;
	d->missed = 1;
	if (path == NONE)
		d->need |= 1u << PN_CHECK_NCCLPATH;
	if (node == FAILED) {
		if (pairs == NONE || pairs == SKIPPED) {
			if (pairs == NONE)
				d->need |= 1u << PN_CHECK_GPUCOPY;
			snprintf(d->why, sizeof(d->why), "the node's allreduce missed; GPU-to-GPU "
				 "copies were not measured%s", pairs == NONE ? "" : " (skipped)");
			return;
		}
		if (pairs == FAILED) {
			d->layer = "physical path";
			snprintf(d->why, sizeof(d->why), "the node's allreduce and its GPU-to-GPU "
				 "copies are slow: P2P, NVLink, PCIe, ACS or the container's topology");
			evidence(l, d, ev_pairs);
			return;
		}
		if (gpu_suspect(l, d))
			return;
		evidence(l, d, ev_nccl_node);
		if (d->nevidence || path != PASSED) {
			d->layer = "NCCL path selection";
			snprintf(d->why, sizeof(d->why), "the node's allreduce is slow, its GPU-to-GPU "
				 "copies are fast: NCCL's path selection or the rank mapping");
			return;
		}
		d->layer = "kernel";
		snprintf(d->why, sizeof(d->why), "the node's copies are fast and NCCL's paths are "
			 "right: the collective's kernels (the plugin, its algorithm)");
		return;
	}
	/* the job's allreduce */
	if (nic == NONE || nic == SKIPPED) {
		if (nic == NONE)
			d->need |= 1u << PN_CHECK_NICBW;
		/* pinning each GPU's rail NIC recovers it: NCCL's NIC choice, whatever
		 * the NICs would measure */
		if (ab_decide(l, d, "the NICs were not measured; ") == PN_AB_RAIL)
			return;
		snprintf(d->why, sizeof(d->why), "the job's allreduce missed; the NICs were not "
			 "measured%s", nic == NONE ? "" : " (skipped)");
		return;
	}
	if (nic == FAILED || ctr == FAILED) {
		d->layer = "network";
		snprintf(d->why, sizeof(d->why), "the job's allreduce and the NICs are slow (or "
			 "count errors): the network");
		evidence(l, d, ev_net);
		return;
	}
	switch (ab_decide(l, d, "the NICs are fast; ")) {
	case PN_AB_RAIL:
		return;
	case PN_AB_NOT_RAIL:
		ruled_out = 1;
		break;
	case PN_AB_NONE:
		break;
	}
	evidence(l, d, ev_nccl_net);
	if (d->nevidence || (path != PASSED && !ruled_out)) {
		d->layer = "NCCL path selection";
		snprintf(d->why, sizeof(d->why), "the NICs are fast, the job's allreduce is slow: "
			 "NCCL's NIC, GPUDirect RDMA or the GPU-NIC affinity");
		return;
	}
	d->layer = "kernel";
	snprintf(d->why, sizeof(d->why), "the NICs are fast and %s: the collective's kernels "
		 "(the plugin, its algorithm)", ruled_out ? "pinning each GPU's rail NIC "
		 "changes nothing" : "NCCL's paths are right");
}

/* An allreduce of two GPUs ("GPU2-GPU3", check_ar.c's pairs): 1 with both. */
static int ar_pair(const struct pn_verdict_result *r, int *a, int *b)
{
	char tail;

	return is(r, "allreduce") && sscanf(r->target, "GPU%d-GPU%d%c", a, b, &tail) == 2 &&
	       *a >= 0 && *b >= 0 && *a < 4096 && *b < 4096;
}

static int ev_gpu(const struct pn_verdict_result *r)
{
	int a, b;
	size_t n = strlen(r->target);

	return ar_pair(r, &a, &b) || (is(r, "gpu-copy") && n > 3 && !strcmp(r->target + n - 3, ":sm"));
}

/*
 * One GPU the node's kernels are slow on: its own SM copy FAILed, or it is
 * in every two-GPU allreduce that FAILed while a pair without it PASSed.
 * 1 with the layer and why set; 0 when no one GPU stands out.
 */
static int gpu_suspect(const struct pn_verdict_list *l, struct pn_diag *d)
{
	int i, a, b, g = -1, sm = -1, nfail = 0, npass_without = 0;
	unsigned char in_all[4096];

	memset(in_all, 1, sizeof(in_all));
	for (i = 0; i < pn_verdict_n(l); i++) {
		const struct pn_verdict_result *r = pn_verdict_at(l, i);
		size_t n = strlen(r->target);

		if (r->verdict == PN_FAIL && is(r, "gpu-copy") && n > 3 &&
		    !strcmp(r->target + n - 3, ":sm") && sscanf(r->target, "GPU%d", &a) == 1 &&
		    a >= 0 && a < 4096)
			sm = sm < 0 ? a : -2;	/* -2: more than one */
		if (!ar_pair(r, &a, &b) || r->verdict != PN_FAIL)
			continue;
		nfail++;
		for (g = 0; g < 4096; g++)
			if (g != a && g != b)
				in_all[g] = 0;
	}
	for (g = -1, i = 0; nfail && i < 4096; i++)
		if (in_all[i])
			g = g < 0 ? i : -2;
	for (i = 0; g >= 0 && i < pn_verdict_n(l); i++) {
		const struct pn_verdict_result *r = pn_verdict_at(l, i);

		if (ar_pair(r, &a, &b) && r->verdict == PN_PASS && a != g && b != g)
			npass_without++;
	}
	if (sm >= 0 && (g < 0 || g == sm)) {
		snprintf(d->why, sizeof(d->why), "the node's copies are fast but GPU%d's own kernels "
			 "are slow (its SM copy): another process on its SMs, its clocks or its memory",
			 sm);
	} else if (g >= 0 && npass_without) {
		snprintf(d->why, sizeof(d->why), "the node's copies are fast, but every allreduce with "
			 "GPU%d is slow and those without it are not: GPU%d's kernels (another process "
			 "on its SMs, its clocks)", g, g);
	} else {
		return 0;
	}
	d->layer = "kernel";
	evidence(l, d, ev_gpu);
	return 1;
}

/* ------------------------------------------------------------ in the run */

int pn_check_diag_need(struct pn_check *c, uint32_t *out)
{
	struct pn_diag d;
	uint32_t need, *all = NULL;
	int i, ret = 0;

	*out = 0;
	if (!(c->mask & (1u << PN_CHECK_ALLREDUCE)))
		return 0;
	pn_diag_decide(c->results, &d);
	need = d.need & ~c->mask;
	if (c->boot) {
		/* every rank runs the same checks: the union of what each asks for */
		all = calloc((size_t)c->nranks, sizeof(*all));
		if (!all)
			return pn_err(-ENOMEM, "out of memory");
		ret = pn_boot_allgather(c->boot, &need, all, sizeof(need));
		for (i = 0; !ret && i < c->nranks; i++)
			need |= all[i];
		free(all);
		if (ret)
			return ret;
	}
	*out = need;
	return 0;
}

double pn_check_diag_bound(const struct pn_check *c)
{
	const char *list = pn_check_backend_list(c), *p;
	int nplugins = 1;

	for (p = list; *p; p++)
		nplugins += *p == ',';
	return 2 * c->timeout + 10 + nplugins * c->timeout;
}

int pn_check_diag_verdict(struct pn_check *c)
{
	char ev[PN_VERDICT_DETAIL] = "", det[PN_VERDICT_DETAIL];
	struct pn_diag d;
	int i;
	size_t n;

	pn_diag_decide(c->results, &d);
	if (!d.missed)
		return 0;
	for (i = 0; i < d.nevidence; i++) {
		const struct pn_verdict_result *r = pn_verdict_at(c->results, d.evidence[i]);

		n = strlen(ev);
		snprintf(ev + n, sizeof(ev) - n, "%s%s %s/%s", i ? ", " : "", r->check, r->node,
			 r->target);
	}
	snprintf(det, sizeof(det), "%s%s%s", d.why, ev[0] ? "; evidence: " : "", ev);
	return pn_check_add(c, &(struct pn_verdict_in){
		.check = "diagnosis", .target = "allreduce", .verdict = PN_FAIL,
		.measured = PN_VTEXT(d.layer), .source = "the decision table", .detail = det });
}
