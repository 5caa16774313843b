/* SPDX-License-Identifier: MIT */
/*
 * The ranks check of `penny check` (check_ranks.h): under
 * a launcher, the GPU and the NIC each rank of the job uses, audited on
 * rank 0.  A rank's GPU is what the GPU plugins open (and what NCCL's
 * launchers expect): CUDA device local_rank % visible, the visible devices
 * being CUDA_VISIBLE_DEVICES' indices into the node's GPUs in PCI order, or
 * every GPU.  Its NIC is the nearest to that GPU among those NCCL_IB_HCA
 * (else penny's -d) lets it use, as NCCL picks; every NIC when neither
 * says.  Two ranks of one node on one GPU, or a rank whose NIC is NODE or
 * SYS from its GPU while a nearer NIC exists, FAIL naming them.
 */
#define _GNU_SOURCE
#include "check/check_ranks.h"
#include "check/check_row.h"
#include "base/log.h"
#include "base/verdict.h"
#include "engine/boot.h"
#include "node/topo.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK "ranks"

/* ------------------------------------------------------------ pure parts */

int pn_ranks_visible(const char *cvd, int local_rank, int ngpus)
{
	int list[256], n = 0;
	const char *p = cvd;

	if (ngpus <= 0 || local_rank < 0)
		return -1;
	if (!cvd)
		return local_rank % ngpus;
	while (*p && n < 256) {
		char *end;
		long v;

		while (*p == ' ')
			p++;
		if (!isdigit((unsigned char)*p))
			break;	/* a UUID, MIG, or the end: CUDA stops at the first it cannot use */
		v = strtol(p, &end, 10);
		if (v >= ngpus || (*end && *end != ','))
			break;
		list[n++] = (int)v;
		p = *end ? end + 1 : end;
	}
	if (!n)
		return -1;
	return list[local_rank % n];
}

int pn_ranks_visible_count(const char *cvd, int ngpus, char *hidden, size_t hlen)
{
	unsigned char seen[256] = { 0 };
	int r, g, n = 0;

	if (hlen)
		hidden[0] = 0;
	if (!cvd)
		return ngpus;
	if (ngpus > 256)
		return -1;
	if (*cvd && !isdigit((unsigned char)*cvd) && *cvd != ' ')
		return -1;	/* UUIDs or MIG: not by index */
	for (r = 0; r < 256; r++) {
		g = pn_ranks_visible(cvd, r, ngpus);
		if (g < 0 || seen[g])
			break;
		seen[g] = 1;
		n++;
	}
	for (g = 0; g < ngpus && hlen; g++)
		if (!seen[g])
			snprintf(hidden + strlen(hidden), hlen - strlen(hidden), "%sGPU%d",
				 hidden[0] ? "," : "", g);
	return n;
}

int pn_ranks_nic_allowed(const char *hca, const char *nic)
{
	const char *p;
	int exact = 0, exclude = 0, hit = 0;
	size_t nl = strlen(nic);

	if (!hca || !*hca)
		return 1;
	p = hca;
	if (*p == '^')
		exclude = 1, p++;
	if (*p == '=')
		exact = 1, p++;
	while (*p) {
		size_t n = strcspn(p, ","), k = strcspn(p, ":");

		if (k > n)
			k = n;
		/* NCCL matches a prefix unless '=' asks for the exact name */
		if (k && (exact ? k == nl && !strncmp(p, nic, k) : !strncmp(p, nic, k)))
			hit = 1;
		p += n;
		if (*p == ',')
			p++;
	}
	return exclude ? !hit : hit;
}

void pn_ranks_audit(const struct pn_rank_use *r, int n, enum pn_verdict *v, char (*det)[160])
{
	int i, j;

	for (i = 0; i < n; i++) {
		char cls[16], best[16];

		v[i] = PN_PASS;
		det[i][0] = 0;
		if (r[i].gpu < 0) {
			v[i] = PN_SKIP;
			snprintf(det[i], 160, "%s", r[i].why[0] ? r[i].why : "its GPU is unknown");
			continue;
		}
		if ((j = pn_ranks_shared_gpu(r, n, i)) >= 0) {
			v[i] = PN_FAIL;
			snprintf(det[i], 160, "ranks %d and %d share %s (%s) on %s: set "
				 "CUDA_VISIBLE_DEVICES per local rank, or start fewer ranks",
				 r[i].rank, r[j].rank, r[i].gpu_name, r[i].busid, r[i].host);
		}
		if (v[i] != PN_PASS)
			continue;
		if (r[i].nic[0] && r[i].path >= PN_PATH_NODE && r[i].best_path >= 0 &&
		    r[i].best_path < r[i].path) {
			pn_path_name(r[i].path, 0, cls, sizeof(cls));
			pn_path_name(r[i].best_path, 0, best, sizeof(best));
			v[i] = PN_FAIL;
			snprintf(det[i], 160, "rank %d's %s uses %s (%s) while %s is %s: NCCL_IB_HCA "
				 "or -d keeps it off its rail", r[i].rank, r[i].gpu_name, r[i].nic, cls,
				 r[i].best_nic, best);
			continue;
		}
		if (r[i].nic[0]) {
			pn_path_name(r[i].path, 0, cls, sizeof(cls));
			snprintf(det[i], 160, "%s, NIC %s (%s)", r[i].busid, r[i].nic, cls);
		} else {
			snprintf(det[i], 160, "%s, no RDMA NIC it may use", r[i].busid);
		}
	}
}

/* ------------------------------------------------------------ the check */

/* The nearest NIC to GPU g among those allowed (hca; NULL: any): its index, -1 none. */
static int nearest(const struct pn_check *c, int g, const char *hca, int *path)
{
	const struct pn_topo *t = c->topo;
	int i, best = -1, bp = 1 << 30;

	for (i = t->ngpus; i < t->ngpus + t->nnics; i++) {
		int p;

		if (!t->devs[i].pci_busid[0] || (hca && !pn_ranks_nic_allowed(hca, t->devs[i].nic.name)))
			continue;
		p = pn_topo_path(t, g, i, 1, NULL);
		if (p >= 0 && p < bp)
			bp = p, best = i;
	}
	*path = best >= 0 ? bp : -1;
	return best;
}

static void mine(struct pn_check *c, struct pn_rank_use *u)
{
	const struct pn_topo *t = c->topo;
	const char *cvd = getenv("CUDA_VISIBLE_DEVICES"), *hca = getenv("NCCL_IB_HCA");
	char spec[512];
	int g, k, b;

	memset(u, 0, sizeof(*u));
	u->rank = c->rank;
	u->gpu = u->path = u->best_path = -1;
	snprintf(u->host, sizeof(u->host), "%s", c->node);
	if (!t->ngpus) {
		snprintf(u->why, sizeof(u->why), "no GPU on %s", c->node);
		return;
	}
	g = pn_ranks_visible(cvd, pn_boot_local_rank(c->boot), t->ngpus);
	if (g < 0) {
		snprintf(u->why, sizeof(u->why), "CUDA_VISIBLE_DEVICES '%.40s' names no GPU by index",
			 cvd ? cvd : "");
		return;
	}
	u->gpu = g;
	snprintf(u->gpu_name, sizeof(u->gpu_name), "%s", t->devs[g].name);
	snprintf(u->busid, sizeof(u->busid), "%s", t->devs[g].pci_busid);
	if ((!hca || !*hca) && c->devspec && *c->devspec) {
		/* -d names devices exactly */
		snprintf(spec, sizeof(spec), "=%s", c->devspec);
		hca = spec;
	}
	k = nearest(c, g, hca && *hca ? hca : NULL, &u->path);
	b = nearest(c, g, NULL, &u->best_path);
	if (k >= 0)
		snprintf(u->nic, sizeof(u->nic), "%s", t->devs[k].nic.name);
	if (b >= 0)
		snprintf(u->best_nic, sizeof(u->best_nic), "%s", t->devs[b].nic.name);
}

int pn_check_ranks(struct pn_check *c)
{
	struct pn_rank_use *all, me;
	enum pn_verdict *v;
	char (*det)[160];
	int i, ret;

	if (!c->boot)
		return pn_check_add(c, &(struct pn_verdict_in){
			.check = CHECK, .target = "job", .verdict = PN_SKIP,
			.detail = "not under a launcher: no ranks to audit" });
	all = calloc((size_t)c->nranks, sizeof(*all));
	v = calloc((size_t)c->nranks, sizeof(*v));
	det = calloc((size_t)c->nranks, sizeof(*det));
	if (!all || !v || !det) {
		ret = pn_err(-ENOMEM, "out of memory for the ranks' GPUs");
		goto out;
	}
	mine(c, &me);
	ret = pn_boot_allgather(c->boot, &me, all, sizeof(*all));
	if (ret || c->rank != 0)
		goto out;
	for (i = 0; i < c->nranks; i++) {
		/* strings of other processes: terminate them */
		all[i].host[sizeof(all[i].host) - 1] = all[i].busid[sizeof(all[i].busid) - 1] = 0;
		all[i].gpu_name[sizeof(all[i].gpu_name) - 1] = all[i].nic[sizeof(all[i].nic) - 1] = 0;
		all[i].best_nic[sizeof(all[i].best_nic) - 1] = all[i].why[sizeof(all[i].why) - 1] = 0;
	}
	pn_ranks_audit(all, c->nranks, v, det);
	for (i = 0; !ret && i < c->nranks; i++) {
		char target[24];

		snprintf(target, sizeof(target), "rank%d", all[i].rank);
		ret = pn_check_add(c, &(struct pn_verdict_in){
			.check = CHECK, .node = all[i].host, .target = target, .verdict = v[i],
			.measured = all[i].gpu >= 0 ? PN_VTEXT(all[i].gpu_name)
						    : (struct pn_verdict_val){ .kind = PN_VAL_NONE },
			.expected = v[i] == PN_SKIP ? (struct pn_verdict_val){ .kind = PN_VAL_NONE }
						    : PN_VTEXT("own GPU, near NIC"),
			.source = v[i] == PN_SKIP ? NULL : "default: the job's mapping",
			.detail = det[i] });
	}
out:
	free(all);
	free(v);
	free(det);
	return ret;
}
