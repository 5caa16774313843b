/* SPDX-License-Identifier: MIT */
/*
 * The gpu-copy check of `penny check` (pn_check_gpucopy): every GPU's
 * host-to-device and device-to-host bandwidth from page-locked memory (the
 * plugin's hostbw()) against its PCIe path's usable rate, and the
 * GPU-to-GPU copy-engine matrix (bw()) against the NVLink bond, or the PCIe
 * path, that the topology reports between each pair.  Also the helpers both
 * GPU checks share (check_gpu_lib.h): the rates, ring-plan's prediction and the
 * child process the measurements run in.
 */
#define _GNU_SOURCE
#include "check/check_gpu.h"
#include "check/check_cfg.h"
#include "check/check_gpu_lib.h"
#include "check/check_row.h"

#include "base/log.h"
#include "base/util.h"
#include "base/verdict.h"
#include "gpu/plugin.h"
#include "node/pcie.h"
#include "node/topo.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK "gpu-copy"

/* ------------------------------------------------------------ the check */

/* What the child measured with the plugin. */
struct copy_meas {
	char plugin[32];
	int have_host, have_matrix;
	int host_err, matrix_err;
	char host_msg[256], matrix_msg[256];
	struct penny_hostbw_v1 host;
	struct penny_bw_v1 matrix;
	/* every GPU's copy within its own memory by its own kernels (the
	 * diagonal of the SM matrix): its SMs and memory at work */
	int have_sm, sm_err;
	char sm_msg[256];
	struct penny_bw_v1 sm;
};

struct copy_req {
	const char *list;	/* plugins to try */
	uint64_t bytes;
	int iters;
	int matrix_only;	/* no host copies */
};

/* In the child: the first plugin of the list that loads measures both. */
static int copy_measure(void *arg, void *out)
{
	const struct copy_req *rq = arg;
	struct copy_meas *m = out;
	struct pn_plugin *p = NULL;
	char list[256], *tok, *save = NULL, why[512] = "";
	int ret = -ENOENT;

	snprintf(list, sizeof(list), "%s", rq->list);
	for (tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		/* host: the host engine (--backend), no GPU to copy with */
		ret = strcmp(tok, "host") ? pn_plugin_load(tok, &p) : -ENOENT;
		if (!ret)
			break;
		snprintf(why + strlen(why), sizeof(why) - strlen(why), "%s%s", why[0] ? "; " : "",
			 strcmp(tok, "host") ? pn_errmsg(ret) : "host: the host engine has no GPU");
	}
	if (!p)
		return pn_err(ret, "%s", why[0] ? why : "no GPU plugin to try");
	snprintf(m->plugin, sizeof(m->plugin), "%s", p->name);
	if (rq->matrix_only) {
		m->host_err = -ENOTSUP;
	} else if (pn_plugin_covers(p, offsetof(struct penny_plugin_v1, hostbw)) && p->ops->hostbw) {
		m->host.bytes = rq->bytes;
		m->host.iters = rq->iters;
		m->host_err = p->ops->hostbw(&m->host);
		if (m->host_err)
			snprintf(m->host_msg, sizeof(m->host_msg), "%s",
				 pn_errmsg(pn_plugin_err(p, m->host_err, "hostbw")));
		else
			m->have_host = 1;
	} else {
		m->host_err = -ENOTSUP;
		snprintf(m->host_msg, sizeof(m->host_msg), "the %s plugin has no page-locked copy "
			 "test (hostbw): it predates it", p->name);
	}
	if (p->ops->bw && (p->ops->caps & PENNY_CAP_BW)) {
		m->matrix.bytes = rq->bytes;
		m->matrix.iters = rq->iters;
		m->matrix.engine = PENNY_BW_CE;
		m->matrix.what = PENNY_BW_BANDWIDTH;
		m->matrix_err = p->ops->bw(&m->matrix);
		if (m->matrix_err)
			snprintf(m->matrix_msg, sizeof(m->matrix_msg), "%s",
				 pn_errmsg(pn_plugin_err(p, m->matrix_err, "bw")));
		else
			m->have_matrix = 1;
	} else {
		m->matrix_err = -ENOTSUP;
		snprintf(m->matrix_msg, sizeof(m->matrix_msg), "the %s plugin has no GPU-to-GPU "
			 "matrix (bw)", p->name);
	}
	if (!rq->matrix_only && p->ops->bw && (p->ops->caps & PENNY_CAP_BW)) {
		m->sm.bytes = rq->bytes;
		m->sm.iters = rq->iters;
		m->sm.engine = PENNY_BW_SM;
		m->sm.what = PENNY_BW_BANDWIDTH;
		m->sm_err = p->ops->bw(&m->sm);
		if (m->sm_err)
			snprintf(m->sm_msg, sizeof(m->sm_msg), "%s",
				 pn_errmsg(pn_plugin_err(p, m->sm_err, "bw (SM)")));
		else
			m->have_sm = 1;
	}
	pn_plugin_unload(p);
	return 0;
}

static double cfg_num(const struct pn_check *c, const char *key, int *set)
{
	double v = 0;
	int r = pn_check_cfg_num(c->cfg, key, &v);

	if (set)
		*set = r == 1;
	return v;
}

/* The topology's GPU for plugin device i: by bus id, else by index when the
 * plugin does not say (PCI order on both sides); -1 none. */
static int topo_gpu(const struct pn_topo *t, const char *busid, int i, int ndev)
{
	int g;

	if (!t)
		return -1;
	if (busid && busid[0]) {
		for (g = 0; g < t->ngpus; g++)
			if (pn_checkgpu_busid_eq(t->devs[g].pci_busid, busid))
				return g;
		return -1;
	}
	return ndev == t->ngpus && i < t->ngpus ? i : -1;
}

static int add(struct pn_check *c, const struct pn_verdict_in *in)
{
	int ret = pn_verdict_add(c->results, in);

	return ret == -ENOMEM ? ret : 0;
}

/* One measured rate against its expectation (a fraction of nominal, which
 * basis gives: "topology", "measured"). */
static int judge_by(struct pn_check *c, const char *target, double meas, double nominal,
		    const char *basis, const char *nominal_src, const char *fkey, double seconds,
		    const char *note)
{
	char dsrc[PN_VERDICT_SOURCE], src[PN_VERDICT_SOURCE], detail[PN_VERDICT_DETAIL];
	int fset;
	double frac = cfg_num(c, fkey, &fset), exp;

	if (!(nominal > 0))
		return add(c, &(struct pn_verdict_in){
			.check = CHECK, .node = c->node, .target = target, .verdict = PN_SKIP,
			.measured = PN_VNUM(meas), .unit = "GB/s", .seconds = seconds,
			.detail = "no expectation: the topology gives no rate for it (set a "
				  "baseline to judge it)" });
	snprintf(dsrc, sizeof(dsrc), "%s: %s x %.3g%%", fset ? "config" : basis, nominal_src,
		 frac * 100);
	/* a fraction the config set wins over the baseline, like any key */
	if (fset) {
		exp = nominal * frac;
		snprintf(src, sizeof(src), "%s", dsrc);
	} else {
		exp = pn_check_expect(c, CHECK, target, NULL, nominal * frac, dsrc, src, sizeof(src));
	}
	if (meas >= exp)
		snprintf(detail, sizeof(detail), "%s", note ? note : "");
	else
		snprintf(detail, sizeof(detail), "%s %.3g GB/s is %.0f%% of the expected %.3g GB/s%s%s",
			 target, meas, exp > 0 ? 100 * meas / exp : 0, exp, note ? "; " : "",
			 note ? note : "");
	return add(c, &(struct pn_verdict_in){
		.check = CHECK, .node = c->node, .target = target,
		.verdict = meas >= exp ? PN_PASS : PN_FAIL, .measured = PN_VNUM(meas),
		.expected = PN_VNUM(exp), .unit = "GB/s", .source = src,
		.detail = detail[0] ? detail : NULL, .seconds = seconds });
}

static int judge(struct pn_check *c, const char *target, double meas, double nominal,
		 const char *nominal_src, const char *fkey, double seconds, const char *note)
{
	return judge_by(c, target, meas, nominal, "topology", nominal_src, fkey, seconds, note);
}

static int skip(struct pn_check *c, const char *target, const char *why)
{
	return add(c, &(struct pn_verdict_in){ .check = CHECK, .node = c->node, .target = target,
					       .verdict = PN_SKIP, .detail = why });
}

/* A GPU's name in results: the topology's ("GPU3"), else the plugin's index. */
static void gpu_name(const struct pn_topo *t, int g, int i, char *buf, size_t len)
{
	if (g >= 0)
		snprintf(buf, len, "%s", t->devs[g].name);
	else
		snprintf(buf, len, "GPU%d", i);
}

static int judge_host(struct pn_check *c, const struct copy_meas *m, double secs)
{
	const struct penny_hostbw_v1 *q = &m->host;
	const char *note = q->pinned ? NULL : "pageable host memory: the plugin could not "
					      "page-lock its buffer";
	int i, d, ret = 0;

	for (i = 0; i < q->ndev && i < PENNY_BW_MAX_DEV && !ret; i++) {
		int g = topo_gpu(c->topo, q->busid[i], i, q->ndev);
		const char *addr = g >= 0 ? c->topo->devs[g].pci_busid : q->busid[i];
		struct pn_pcie_path path;
		char name[32], target[PN_VERDICT_NAME], src[PN_VERDICT_SOURCE] = "";
		double nominal = 0;

		gpu_name(c->topo, g, i, name, sizeof(name));
		if (addr && addr[0] && !pn_pcie_path(addr, &path))
			nominal = pn_checkgpu_path_gbs(&path, src, sizeof(src));
		for (d = 0; d < 2 && !ret; d++) {
			snprintf(target, sizeof(target), "%s:%s", name, d ? "d2h" : "h2d");
			ret = judge(c, target, d ? q->d2h[i] : q->h2d[i], nominal, src,
				    "gpu-copy.fraction", secs / q->ndev / 2, note);
		}
	}
	return ret;
}

static int judge_matrix(struct pn_check *c, const struct copy_meas *m, double secs)
{
	const struct penny_bw_v1 *q = &m->matrix;
	const char *busid[PENNY_BW_MAX_DEV] = { 0 };
	double pcie[PENNY_BW_MAX_DEV] = { 0 };
	int n = q->ndev, i, j, ret = 0;

	if (n > PENNY_BW_MAX_DEV)
		n = PENNY_BW_MAX_DEV;
	/* bw() and hostbw() number the devices alike: the bus ids and PCIe
	 * rates come from hostbw */
	for (i = 0; i < n; i++) {
		int g;
		struct pn_pcie_path path;
		char src[PN_VERDICT_SOURCE];

		busid[i] = m->have_host && m->host.ndev == n ? m->host.busid[i] : "";
		g = topo_gpu(c->topo, busid[i], i, n);
		if (g >= 0 && !pn_pcie_path(c->topo->devs[g].pci_busid, &path))
			pcie[i] = pn_checkgpu_path_gbs(&path, src, sizeof(src));
	}
	if (n < 2)
		return 0;
	for (i = 0; i < n && !ret; i++)
		for (j = i + 1; j < n && !ret; j++) {
			int gi = topo_gpu(c->topo, busid[i], i, n), gj = topo_gpu(c->topo, busid[j], j, n);
			char a[32], b[32], target[PN_VERDICT_NAME], src[PN_VERDICT_SOURCE] = "";
			char note[160];
			double ij = q->value[i * n + j], ji = q->value[j * n + i], nominal = 0;
			double p = pcie[i] > 0 && pcie[j] > 0 ? (pcie[i] < pcie[j] ? pcie[i] : pcie[j]) : 0;
			int cls = -1, nv = 0;

			gpu_name(c->topo, gi, i, a, sizeof(a));
			gpu_name(c->topo, gj, j, b, sizeof(b));
			snprintf(target, sizeof(target), "%s-%s", a, b);
			if (gi >= 0 && gj >= 0) {
				cls = pn_topo_path(c->topo, gi, gj, 0, &nv);
				nominal = pn_checkgpu_pair_gbs(cls, nv, p, src, sizeof(src));
			}
			snprintf(note, sizeof(note), "%s->%s %.3g GB/s, %s->%s %.3g GB/s", a, b, ij, b, a,
				 ji);
			ret = judge(c, target, ij < ji ? ij : ji, nominal, src,
				    cls == PN_PATH_NV ? "gpu-copy.nvlink-fraction" : "gpu-copy.fraction",
				    secs * 2 / (n * (n - 1)), note);
		}
	return ret;
}

static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/*
 * Every GPU's copy within its own memory by its own kernels (GPUk:sm),
 * against the node's median of them (two GPUs or more), or, on a node of
 * one GPU, against its copy engines' copy within its memory: a GPU whose
 * SMs another process holds, or whose clocks or memory are down, is named.
 */
static int judge_sm(struct pn_check *c, const struct copy_meas *m, double secs)
{
	const struct penny_bw_v1 *q = &m->sm;
	double d[PENNY_BW_MAX_DEV], med;
	int n = q->ndev < PENNY_BW_MAX_DEV ? q->ndev : PENNY_BW_MAX_DEV, i, ret = 0;
	char src[PN_VERDICT_SOURCE], name[32], target[PN_VERDICT_NAME];

	for (i = 0; i < n; i++)
		d[i] = q->value[i * n + i];
	if (n >= 2) {
		qsort(d, (size_t)n, sizeof(d[0]), cmp_dbl);
		med = n % 2 ? d[n / 2] : (d[n / 2 - 1] + d[n / 2]) / 2;
		snprintf(src, sizeof(src), "the node's median of %d GPUs' SM copies %.4g GB/s", n,
			 med);
	} else if (m->have_matrix && m->matrix.ndev == 1) {
		med = m->matrix.value[0];
		snprintf(src, sizeof(src), "its copy engines' copy %.4g GB/s", med);
	} else {
		med = 0;
		snprintf(src, sizeof(src), "nothing to compare with");
	}
	for (i = 0; i < n && !ret; i++) {
		int g = topo_gpu(c->topo, m->have_host && m->host.ndev == n ? m->host.busid[i] : "",
				 i, n);

		gpu_name(c->topo, g, i, name, sizeof(name));
		snprintf(target, sizeof(target), "%s:sm", name);
		ret = judge_by(c, target, q->value[i * n + i], med, "measured", src,
			       "gpu-copy.sm-fraction", secs / n, NULL);
	}
	return ret;
}

int pn_check_gpucopy(struct pn_check *c)
{
	struct copy_meas *m;
	struct copy_req rq = { .list = pn_check_backend_list(c) };
	double t0 = pn_now(), size = cfg_num(c, "gpu-copy.size", NULL), secs;
	char what[64];
	int ret;

	if (!c->node_leader)
		return 0;
	/* --quick copies as many bytes, fewer times: a smaller copy pays more of
	 * its fixed cost (16 MiB NVLink copies read 334-344 GB/s where 64 MiB
	 * read 387, against an expected 335) */
	rq.bytes = (uint64_t)size;
	if (rq.bytes < 4096)
		rq.bytes = 4096;
	rq.iters = c->quick ? 5 : 20;
	m = calloc(1, sizeof(*m));
	if (!m)
		return pn_err(-ENOMEM, "out of memory");
	pn_check_progress(c, CHECK, "host<->device and GPU-to-GPU copies (%s)", rq.list);
	snprintf(what, sizeof(what), "the GPU copy test");
	ret = pn_checkgpu_child(copy_measure, &rq, m, sizeof(*m), c->timeout, what);
	secs = pn_now() - t0;
	if (ret) {
		/* no plugin, no device, a plugin that crashed: nothing measured */
		char why[PN_VERDICT_DETAIL];

		snprintf(why, sizeof(why), "%s%s", c->topo && c->topo->ngpus ? "" :
			 "no GPU in the topology; ", pn_errmsg(ret));
		ret = skip(c, "node", why);
		free(m);
		return ret;
	}
	if (m->have_host)
		ret = judge_host(c, m, m->have_matrix ? secs / 2 : secs);
	else
		ret = skip(c, "host-copies", m->host_msg);
	if (!ret && m->have_matrix)
		ret = judge_matrix(c, m, m->have_host ? secs / 2 : secs);
	else if (!ret && (!m->have_host || m->host.ndev > 1))
		ret = skip(c, "gpu-matrix", m->matrix_msg);
	if (!ret && m->have_sm)
		ret = judge_sm(c, m, secs / 4);
	free(m);
	return ret;
}

/* In the child: only the GPU-to-GPU matrix. */
static int floor_measure(void *arg, void *out)
{
	struct copy_req rq = *(const struct copy_req *)arg;
	struct copy_meas *m = out;
	int ret = copy_measure(&rq, m);

	return ret ? ret : m->have_matrix ? 0 : pn_err(m->matrix_err ? m->matrix_err : -ENOTSUP,
						       "%s", m->matrix_msg);
}

int pn_checkgpu_copy_floor(struct pn_check *c, double *gbs, char *src, size_t len)
{
	struct copy_req rq = { .list = pn_check_backend_list(c), .iters = 5, .matrix_only = 1 };
	struct copy_meas *m = calloc(1, sizeof(*m));
	double size = cfg_num(c, "gpu-copy.size", NULL), low = 0;
	int i, j, n, li = 0, lj = 0, ret;

	if (!m)
		return pn_err(-ENOMEM, "out of memory");
	rq.bytes = (uint64_t)(size / 4 < 4096 ? 4096 : size / 4);
	pn_check_progress(c, "allreduce", "GPU-to-GPU copies for its expectation (%s)", rq.list);
	ret = pn_checkgpu_child(floor_measure, &rq, m, sizeof(*m), c->timeout,
				"the GPU copy test");
	n = m->matrix.ndev < PENNY_BW_MAX_DEV ? m->matrix.ndev : PENNY_BW_MAX_DEV;
	for (i = 0; !ret && i < n; i++)
		for (j = 0; j < n; j++) {
			double v = m->matrix.value[i * n + j];

			if (i != j && v > 0 && (low == 0 || v < low)) {
				low = v;
				li = i;
				lj = j;
			}
		}
	free(m);
	if (ret || !(low > 0)) {
		pn_err_clear();
		return -ENOENT;
	}
	*gbs = low;
	snprintf(src, len, "gpu-copy matrix: slowest pair GPU%d->GPU%d %.4g GB/s measured", li, lj,
		 low);
	return 0;
}
