/* SPDX-License-Identifier: MIT */
/*
 * The nccl-path check of `penny check` (check_nccl.h): the paths an
 * NCCL job chose, from its NCCL_DEBUG=INFO log (--nccl-log FILE, parsed by
 * check/nccllog.h), one result per channel connection of this node,
 * judged against this node's topology:
 *   NET/Socket while an RDMA port of the node is ACTIVE;
 *   NET without GDRDMA where the rank's GPU and the NIC share a PCIe
 *   switch (PIX or PXB);
 *   SHM between two GPUs of the node that NVLink connects;
 *   NET over a NIC that is not the rank's GPU's rail (pn_topo_rail: the
 *   NICs nearest it), unless settings.nccl-rail = allow.
 * A rank's GPU is what the log's brackets hold: a CUDA device index (NCCL
 * 2.19 on; taken in PCI order, CUDA's order for GPUs of one kind unless
 * CUDA_VISIBLE_DEVICES reorders them) or an older NCCL's bus id.
 */
#define _GNU_SOURCE
#include "check/check_nccl.h"
#include "check/check_ncclrun.h"
#include "check/check_platform.h"
#include "check/check_row.h"
#include "check/check_settings.h"
#include "check/nccllog.h"
#include "base/file.h"
#include "base/log.h"
#include "base/verdict.h"
#include "engine/boot.h"
#include "node/nic.h"
#include "node/topo.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK "nccl-path"

/* The GPU (index into t->devs) a bracket names, -1 unknown. */
static int gpu_of(const struct pn_topo *t, const char *dev)
{
	char busid[16];
	unsigned long v;
	char *end;
	int i;

	if (!dev[0])
		return -1;
	v = strtoul(dev, &end, 10);
	if (!*end && v < (unsigned long)t->ngpus && strlen(dev) <= 3)
		return (int)v;
	/* NCCL's int64 bus id: the hex digits of "dddd:bb:dd.f" */
	v = strtoul(dev, &end, 16);
	if (*end || strlen(dev) < 4)
		return -1;
	snprintf(busid, sizeof(busid), "%04lx:%02lx:%02lx.%lx", (v >> 20) & 0xffff,
		 (v >> 12) & 0xff, (v >> 4) & 0xff, v & 0xf);
	for (i = 0; i < t->ngpus; i++)
		if (!strcasecmp(t->devs[i].pci_busid, busid))
			return i;
	return -1;
}

/* The NIC (index into t->devs) of "mlx5_3:1", -1 unknown. */
static int nic_of(const struct pn_topo *t, const char *name)
{
	size_t n = strcspn(name, ":");
	int i;

	for (i = t->ngpus; n && i < t->ngpus + t->nnics; i++)
		if (strlen(t->devs[i].nic.name) == n && !strncmp(t->devs[i].nic.name, name, n))
			return i;
	return -1;
}

/* An ACTIVE RDMA port of the node ("mlx5_0/1" into buf), 0 none. */
static int rdma_up(const struct pn_topo *t, char *buf, size_t len)
{
	int i, j;

	for (i = t->ngpus; i < t->ngpus + t->nnics; i++)
		for (j = 0; j < t->devs[i].nic.nports; j++)
			if (pn_port_up(&t->devs[i].nic.ports[j])) {
				snprintf(buf, len, "%s/%d", t->devs[i].nic.name,
					 t->devs[i].nic.ports[j].port);
				return 1;
			}
	return 0;
}

/* A NET connection of GPU g over NIC k (device indices): the GPU's rail
 * (the NICs nearest it) or a FAIL naming the rail NIC to pin. */
static int judge_rail(struct pn_check *c, struct pn_verdict_in *in, char *det, int g, int k,
		      int rank)
{
	const struct pn_topo *t = c->topo;
	char exp[PN_VERDICT_VAL], src[PN_VERDICT_SOURCE], cls[16];
	int *nics = calloc((size_t)t->nnics + 1, sizeof(*nics)), n, i, best, port = 1;

	if (!nics)
		return pn_err(-ENOMEM, "out of memory");
	n = pn_topo_rail(t, g, nics, &best);
	for (i = 0; i < n && nics[i] != k; i++)
		;
	if (!n || i < n) {
		free(nics);
		if (n)
			snprintf(det + strlen(det), PN_VERDICT_DETAIL - strlen(det), ", %s's rail",
				 t->devs[g].name);
		return pn_check_add(c, in);
	}
	if (t->devs[nics[0]].nic.nports)
		port = t->devs[nics[0]].nic.ports[0].port;
	pn_path_name(best, 0, cls, sizeof(cls));
	snprintf(exp, sizeof(exp), "%s:%d", t->devs[nics[0]].nic.name, port);
	snprintf(det, PN_VERDICT_DETAIL, "rank %d's %s uses %s, not its rail NIC %s (%s): pin "
		 "it with NCCL_IB_HCA==%s per rank, or see the rank-to-GPU mapping "
		 "(CUDA_VISIBLE_DEVICES)", rank, t->devs[g].name, t->devs[k].nic.name, exp, cls,
		 exp);
	free(nics);
	in->expected = PN_VTEXT(exp);
	in->verdict = pn_settings_allowed(c, "settings.nccl-rail", det, PN_VERDICT_DETAIL, src,
					  sizeof(src));
	in->source = src;
	return pn_check_add(c, in);
}

static int judge(struct pn_check *c, const struct pn_nccl_path *p, const char *up)
{
	const struct pn_topo *t = c->topo;
	char target[PN_VERDICT_NAME], det[PN_VERDICT_DETAIL] = "", cls[16];
	struct pn_verdict_in in = { .check = CHECK, .target = target, .verdict = PN_PASS,
				    .measured = PN_VTEXT(p->via), .source = "topology",
				    .detail = det };
	int local = !strcmp(p->dir, "receive") ? p->to : p->from;
	const char *ldev = !strcmp(p->dir, "receive") ? p->to_dev : p->from_dev;
	int g = gpu_of(t, ldev), k = -1, pc, nv = 0;

	snprintf(target, sizeof(target), "ch%02d/%d %d->%d%s%s", p->channel, p->conn, p->from,
		 p->to, p->dir[0] ? " " : "", p->dir);
	if (p->transport == PN_NT_NET && !strcmp(p->net, "Socket") && up[0]) {
		in.verdict = PN_FAIL;
		in.expected = PN_VTEXT("NET/IB");
		snprintf(det, sizeof(det), "NCCL sends over sockets while %s is ACTIVE: see "
			 "NCCL_IB_DISABLE, NCCL_IB_HCA and NCCL_NET (NCCL_SOCKET_IFNAME only picks "
			 "the socket interface)", up);
	} else if (p->transport == PN_NT_NET && !p->gdr && g >= 0 &&
		   (k = nic_of(t, p->nic_name)) >= 0 &&
		   (pc = pn_topo_path(t, g, k, 1, NULL)) <= PN_PATH_PXB && pc >= 0) {
		in.verdict = PN_FAIL;
		in.expected = PN_VTEXT("GDRDMA");
		pn_path_name(pc, 0, cls, sizeof(cls));
		snprintf(det, sizeof(det), "rank %d's %s and %s share a PCIe switch (%s), but no "
			 "GPUDirect RDMA: see the settings check (nvidia_peermem, ACS), "
			 "NCCL_NET_GDR_LEVEL", local, t->devs[g].name, p->nic_name, cls);
	} else if (p->transport == PN_NT_SHM && g >= 0) {
		int a = gpu_of(t, p->from_dev), b = gpu_of(t, p->to_dev);

		if (a >= 0 && b >= 0 && a != b && pn_topo_path(t, a, b, 0, &nv) == PN_PATH_NV) {
			in.verdict = PN_FAIL;
			in.expected = PN_VTEXT("P2P");
			pn_path_name(PN_PATH_NV, nv, cls, sizeof(cls));
			snprintf(det, sizeof(det), "SHM between %s and %s, which %s connects: P2P "
				 "is off (NCCL_P2P_DISABLE, NCCL_P2P_LEVEL, a container's own IPC "
				 "namespace, CUDA_VISIBLE_DEVICES)", t->devs[a].name,
				 t->devs[b].name, cls);
		}
	}
	if (in.verdict == PN_PASS && p->transport == PN_NT_NET)
		snprintf(det, sizeof(det), "NIC %s", p->nic_name[0] ? p->nic_name : "unknown");
	if (in.verdict == PN_PASS && p->transport == PN_NT_NET && g >= 0 &&
	    (k = nic_of(t, p->nic_name)) >= 0)
		return judge_rail(c, &in, det, g, k, local);
	return pn_check_add(c, &in);
}

/* Is the log's host h this node? */
static int this_host(const struct pn_check *c, const char *h)
{
	return !strcmp(h, c->node) || (c->topo->host[0] && !strcmp(h, c->topo->host));
}

static int judge_log(struct pn_check *c, const char *buf, size_t len, const char *name);

int pn_check_ncclpath(struct pn_check *c)
{
	char *buf, det[PN_VERDICT_DETAIL];
	size_t len;
	int ret;

	if (!c->nccl_log && c->boot && c->nnodes > 1)
		return 0;	/* the job's log, after the checks (pn_check_ncclpath_job) */
	if (!c->nccl_log) {
		ret = pn_ncclpath_capture(c, &buf, &len, det, sizeof(det));
		if (ret > 0)
			return pn_check_add(c, &(struct pn_verdict_in){
				.check = CHECK, .target = "log", .verdict = PN_SKIP, .detail = det });
	} else if (c->nccl_text) {	/* read before the checks: pn_check_ncclpath_load */
		return judge_log(c, c->nccl_text, c->nccl_len, c->nccl_log);
	} else {
		ret = pn_file_read(c->nccl_log, &buf, &len);
	}
	if (ret)
		return ret;
	ret = judge_log(c, buf, len, c->nccl_log ? c->nccl_log : "the logged allreduce");
	free(buf);
	return ret;
}

int pn_check_ncclpath_load(struct pn_check *c)
{
	if (!c->nccl_log || c->nccl_text)
		return 0;
	return pn_file_read(c->nccl_log, &c->nccl_text, &c->nccl_len);
}

/* The nccl-path rows of NCCL log text buf[0, len) (name: the log's, for
 * messages), judged against this node's topology. */
static int judge_log(struct pn_check *c, const char *buf, size_t len, const char *name)
{
	struct pn_nccl_log l;
	char up[80] = "", det[PN_VERDICT_DETAIL];
	const char *other = NULL;
	int i, mine = 0, single = 1, cuda_api = 0, ret;

	memset(&l, 0, sizeof(l));
	ret = pn_nccl_log_parse(&l, buf, len);
	if (!ret)
		ret = pn_check_cuda_api(c->backends, c->timeout, &cuda_api, det, sizeof(det));
	if (ret > 0)
		ret = 0;	/* unknown (no plugin, no driver): NCCL's "+cuda" is judged alone */
	if (!ret)
		ret = pn_settings_versions_row(c, CHECK, l.version, cuda_api);
	if (ret)
		goto out;
	for (i = 0; i < l.npaths; i++) {
		mine += this_host(c, l.paths[i].host);
		if (!other)
			other = l.paths[i].host;
		else if (strcmp(other, l.paths[i].host))
			single = 0;
	}
	if (!l.npaths) {
		snprintf(det, sizeof(det), "%.200s: no channel connection line (run with "
			 "NCCL_DEBUG=INFO)", name);
		ret = pn_check_add(c, &(struct pn_verdict_in){ .check = CHECK, .target = "log",
			.verdict = PN_SKIP, .detail = det });
		goto out;
	}
	if (!mine && !single) {
		snprintf(det, sizeof(det), "no line of this node (%s) among the log's hosts",
			 c->node);
		ret = pn_check_add(c, &(struct pn_verdict_in){ .check = CHECK, .target = "log",
			.verdict = PN_SKIP, .detail = det });
		goto out;
	}
	rdma_up(c->topo, up, sizeof(up));
	/* a log of one host (or of none named) is taken as this node's */
	for (i = 0; !ret && i < l.npaths; i++)
		if (!mine || this_host(c, l.paths[i].host))
			ret = judge(c, &l.paths[i], up);
out:
	pn_nccl_log_release(&l);
	return ret;
}

int pn_check_ncclpath_job(struct pn_check *c)
{
	char why[PN_VERDICT_DETAIL], *node = NULL;
	size_t nlen = 0;
	int32_t want = 0;
	int ret;

	if (!c->boot || c->nnodes < 2)
		return 0;
	if (c->rank == 0)
		want = (c->mask & (1u << PN_CHECK_NCCLPATH)) && !c->nccl_log;
	ret = pn_boot_bcast(c->boot, &want, sizeof(want), 0);
	if (ret || !want)
		return ret;
	pn_check_progress(c, CHECK, "the job's %d ranks on nccl with NCCL_DEBUG=INFO", c->nranks);
	ret = pn_ncclpath_capture_job(c, &node, &nlen, why, sizeof(why));
	if (ret < 0 || !c->node_leader)
		ret = ret < 0 ? ret : 0;
	else if (ret)
		ret = pn_check_add(c, &(struct pn_verdict_in){
			.check = CHECK, .target = "log", .verdict = PN_SKIP, .detail = why });
	else
		ret = judge_log(c, node ? node : "", nlen, "the job's logged allreduce");
	free(node);
	return ret;
}
