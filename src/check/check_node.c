/* SPDX-License-Identifier: MIT */
/*
 * The node's own checks of `penny check` (check_node.h), all from the
 * topology and sysfs read through the sysfs root:
 *   inventory  GPU and NIC counts, every port ACTIVE/LinkUp at its rate,
 *              every GPU with a NIC on its own PCIe switch (its rail) on
 *              the same, known, NUMA node;
 *   pcie       every GPU's and NIC's link and the links above it at their
 *              maximum speed and width (node/pcie.h);
 *   counters   the increase of every port's error counters between the
 *              sample before the first check and one after the last.
 */
#define _GNU_SOURCE
#include "check/check_node.h"
#include "check/check_base.h"
#include "check/check_cfg.h"
#include "check/check_ranks.h"
#include "check/check_row.h"
#include "base/log.h"
#include "base/util.h"
#include "base/verdict.h"
#include "node/counters.h"
#include "node/pcie.h"
#include "node/sysfs.h"
#include "node/topo.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int skip(struct pn_check *c, const char *check, const char *target, const char *why)
{
	struct pn_verdict_in in = { .check = check, .target = target, .verdict = PN_SKIP,
				    .detail = why };

	return pn_check_add(c, &in);
}

/* ------------------------------------------------------------ inventory */

/* GPU or NIC count against inventory.gpus/nics, else the baseline's, else any. */
static int inv_count(struct pn_check *c, const char *target, const char *key, int n,
		     const char *what)
{
	struct pn_verdict_in in = { .check = "inventory", .target = target,
				    .measured = PN_VNUM(n) };
	char src[96], det[128];
	double want;
	int set = pn_check_cfg_num(c->cfg, key, &want) == 1;

	if (set) {
		snprintf(src, sizeof(src), "config: %s", key);
	} else if (c->baseline && !pn_check_baseline_find(c->baseline, "inventory", target, &want)) {
		set = 1;
		snprintf(src, sizeof(src), "baseline");
	}
	in.source = src;
	if (set) {
		in.expected = PN_VNUM(want);
		in.verdict = n == want ? PN_PASS : PN_FAIL;
		snprintf(det, sizeof(det), "found %d %s%s, expected %g", n, what, n == 1 ? "" : "s",
			 want);
		if (in.verdict == PN_FAIL)
			in.detail = det;
	} else {
		in.expected = PN_VTEXT("any");
		snprintf(src, sizeof(src), "none: %s sets it", key);
		in.verdict = n ? PN_PASS : PN_SKIP;
		snprintf(det, sizeof(det), "no %s found", what);
		if (!n)
			in.detail = det;
	}
	return pn_check_add(c, &in);
}

/* The fastest ACTIVE port of the link layer on the node; 0 none. */
static double fastest_port(const struct pn_topo *t, const char *layer)
{
	double best = 0;
	int i, j;

	for (i = t->ngpus; i < t->ngpus + t->nnics; i++)
		for (j = 0; j < t->devs[i].nic.nports; j++) {
			const struct pn_port *p = &t->devs[i].nic.ports[j];

			if (pn_port_up(p) && !strcmp(p->link_layer, layer) && p->rate_gbps > best)
				best = p->rate_gbps;
		}
	return best;
}

static int inv_port(struct pn_check *c, const struct pn_nic *nic, const struct pn_port *p)
{
	char target[PN_VERDICT_NAME], dsrc[96], src[PN_VERDICT_SOURCE], det[160], meas[48];
	struct pn_verdict_in in = { .check = "inventory", .target = target, .unit = "Gb/s" };
	const char *layer = p->link_layer[0] ? p->link_layer : "unknown";
	double fast = fastest_port(c->topo, p->link_layer), want;

	snprintf(target, sizeof(target), "%s/%d", nic->name, p->port);
	snprintf(dsrc, sizeof(dsrc), "topology: fastest %s port %g Gb/s", layer, fast);
	want = pn_check_expect(c, "inventory", target, "inventory.port-rate", fast > 0 ? fast : NAN,
			       dsrc, src, sizeof(src));
	in.source = src;
	in.expected = PN_VNUM(want);
	if (!pn_port_up(p)) {
		snprintf(meas, sizeof(meas), "%s/%s", p->state_name[0] ? p->state_name : "?",
			 p->phys_state_name[0] ? p->phys_state_name : "?");
		in.measured = PN_VTEXT(meas);
		in.verdict = PN_FAIL;
		snprintf(det, sizeof(det), "port is %s (physical state %s), not ACTIVE/LinkUp",
			 p->state_name[0] ? p->state_name : "unreadable",
			 p->phys_state_name[0] ? p->phys_state_name : "unreadable");
		in.detail = det;
		return pn_check_add(c, &in);
	}
	if (p->rate_gbps <= 0) {
		/* this port's own error, by path and kind, never what the file holds */
		in.measured = PN_VTEXT("unknown");
		in.verdict = PN_FAIL;
		if (p->rate_err && p->rate_err != -EINVAL)
			snprintf(det, sizeof(det), PN_IB_CLASS "/%s/ports/%d/rate cannot be read: %s",
				 nic->name, p->port, strerror(-p->rate_err));
		else
			snprintf(det, sizeof(det), PN_IB_CLASS "/%s/ports/%d/rate is not a link rate "
				 "(%g to %g Gb/s)", nic->name, p->port, PN_RATE_MIN_GBPS,
				 PN_RATE_MAX_GBPS);
		in.detail = det;
		return pn_check_add(c, &in);
	}
	in.measured = PN_VNUM(p->rate_gbps);
	in.verdict = p->rate_gbps >= want * (1 - 1e-9) ? PN_PASS : PN_FAIL;
	if (in.verdict == PN_FAIL) {
		snprintf(det, sizeof(det), "runs at %g of %g Gb/s (%.40s)", p->rate_gbps, want,
			 p->rate);
		in.detail = det;
	}
	return pn_check_add(c, &in);
}

static int inv_no_ports(struct pn_check *c, const struct pn_nic *nic)
{
	char det[PN_VERDICT_DETAIL];
	struct pn_verdict_in in = { .check = "inventory", .target = nic->name,
				    .verdict = PN_FAIL, .measured = PN_VTEXT("no ports"),
				    .expected = PN_VTEXT("ports"), .source = "topology",
				    .detail = det };

	snprintf(det, sizeof(det), PN_IB_CLASS "/%s/ports is missing or has no readable port: "
		 "nothing of the NIC can be judged", nic->name);
	return pn_check_add(c, &in);
}

/* More than one NUMA node on this machine (then every device's must be known)? */
static int multi_numa(void)
{
	char buf[64];

	if (pn_sys_read(buf, sizeof(buf), "/sys/devices/system/node/online") <= 0)
		return 0;
	return strpbrk(buf, "-,") != NULL;
}

static int inv_rail(struct pn_check *c, int g, int maxcls, const char *maxname, int multi)
{
	const struct pn_topo *t = c->topo;
	const struct pn_topo_dev *gpu = &t->devs[g], *nic;
	char meas[PN_VERDICT_VAL], exp[32], cls_name[16], det[200] = "";
	struct pn_verdict_in in = { .check = "inventory", .target = gpu->name,
				    .verdict = PN_PASS, .source = "config: inventory.rail-path" };
	int nics[64], *rail = nics, cls, n, ret;

	if (pn_check_cfg_str(c->cfg, "inventory.rail-path", &(const char *){ NULL }) == 0)
		in.source = "default: a NIC on the GPU's own PCIe switch";
	if (t->nnics > (int)(sizeof(nics) / sizeof(nics[0]))) {
		rail = calloc((size_t)t->nnics, sizeof(int));
		if (!rail)
			return pn_err(-ENOMEM, "out of memory");
	}
	n = pn_topo_rail(t, g, rail, &cls);
	if (n <= 0) {
		ret = skip(c, "inventory", gpu->name, "no RDMA device: no rail to check");
		goto out;
	}
	nic = &t->devs[rail[0]];
	pn_path_name(cls, 0, cls_name, sizeof(cls_name));
	snprintf(meas, sizeof(meas), "%s to %s", cls_name, nic->nic.name);
	snprintf(exp, sizeof(exp), "%s or better", maxname);
	in.measured = PN_VTEXT(meas);
	in.expected = PN_VTEXT(exp);
	if (cls > maxcls) {
		in.verdict = PN_FAIL;
		snprintf(det, sizeof(det), "no NIC within %s: the nearest, %s, is %s away", maxname,
			 nic->nic.name, cls_name);
	} else if (!nic->nic.nports) {
		in.verdict = PN_FAIL;
		snprintf(det, sizeof(det), "its NIC %s has no ports", nic->nic.name);
	} else if (gpu->numa >= 0 && nic->numa >= 0 && gpu->numa != nic->numa) {
		in.verdict = PN_FAIL;
		snprintf(det, sizeof(det), "%s is on NUMA node %d, its NIC %s on %d", gpu->name,
			 gpu->numa, nic->nic.name, nic->numa);
	} else if (multi && (gpu->numa < 0 || nic->numa < 0)) {
		in.verdict = PN_FAIL;
		snprintf(det, sizeof(det), "NUMA node of %s unknown on a machine with several",
			 gpu->numa < 0 ? gpu->name : nic->nic.name);
	}
	in.detail = det;
	ret = pn_check_add(c, &in);
out:
	if (rail != nics)
		free(rail);
	return ret;
}

/*
 * The GPUs: the topology's, less those CUDA_VISIBLE_DEVICES hides from
 * every CUDA program of this environment (what a job here can use).
 */
static int inv_gpus(struct pn_check *c)
{
	const char *cvd = getenv("CUDA_VISIBLE_DEVICES");
	char hidden[PN_VERDICT_DETAIL / 2] = "", det[PN_VERDICT_DETAIL];
	int n = c->topo->ngpus, v = pn_ranks_visible_count(cvd, n, hidden, sizeof(hidden));
	double want;

	if (!cvd || v < 0 || v == n)
		return inv_count(c, "gpus", "inventory.gpus", n, "GPU");
	/* some are hidden: a FAIL where the config or a baseline wants them all */
	if (pn_check_cfg_num(c->cfg, "inventory.gpus", &want) != 1 &&
	    (!c->baseline || pn_check_baseline_find(c->baseline, "inventory", "gpus", &want)))
		want = NAN;
	snprintf(det, sizeof(det), "%d of the node's %d GPUs usable: CUDA_VISIBLE_DEVICES=%.40s "
		 "hides %s", v, n, cvd, hidden);
	return pn_check_add(c, &(struct pn_verdict_in){
		.check = "inventory", .target = "gpus", .measured = PN_VNUM(v),
		.expected = isnan(want) ? PN_VTEXT("any") : PN_VNUM(want),
		.verdict = isnan(want) ? (v ? PN_PASS : PN_SKIP) : v == want ? PN_PASS : PN_FAIL,
		.source = isnan(want) ? "none: inventory.gpus sets it" : "config or baseline: "
									     "inventory.gpus",
		.detail = det });
}

int pn_check_inventory(struct pn_check *c)
{
	const struct pn_topo *t = c->topo;
	const char *maxname;
	int i, j, ret, maxcls, nports = 0, multi;
	char miss[PN_CHECK_ENTRY_LEN], det[160];

	ret = inv_gpus(c);
	if (!ret)
		ret = inv_count(c, "nics", "inventory.nics", t->nnics, "RDMA device");
	if (!ret && pn_check_devspec_missing(c, miss)) {
		snprintf(det, sizeof(det), "-d '%s': no such RDMA device or port on this node", miss);
		ret = pn_check_add(c, &(struct pn_verdict_in){
			.check = "inventory", .target = "selected", .measured = PN_VTEXT("absent"),
			.expected = PN_VTEXT(miss), .verdict = PN_FAIL, .source = "-d",
			.detail = det });
	}
	for (i = t->ngpus; !ret && i < t->ngpus + t->nnics; i++) {
		const struct pn_nic *nic = &t->devs[i].nic;

		if (!nic->nports && pn_check_port_selected(c, nic->name, 0)) {
			/* a NIC penny cannot judge is not a NIC that passed */
			nports++;
			ret = inv_no_ports(c, nic);
		}
		for (j = 0; !ret && j < nic->nports; j++) {
			if (!pn_check_port_selected(c, nic->name, nic->ports[j].port))
				continue;
			nports++;
			ret = inv_port(c, nic, &nic->ports[j]);
		}
	}
	if (!ret && !nports)
		ret = skip(c, "inventory", "ports", t->nnics ? "no port selected (-d)"
							   : "no RDMA device found");
	if (ret)
		return ret;
	if (!t->ngpus)
		return skip(c, "inventory", "rails", "no GPU found: no rail to check");
	pn_check_cfg_str(c->cfg, "inventory.rail-path", &maxname);
	maxcls = pn_path_parse(maxname, NULL);
	if (maxcls < 0)
		return pn_err(-EINVAL, "inventory.rail-path '%s' is not a path class", maxname);
	multi = multi_numa();
	for (i = 0; !ret && i < t->ngpus; i++)
		ret = inv_rail(c, i, maxcls, maxname, multi);
	return ret;
}

/* ------------------------------------------------------------ pcie */

static void link_text(char *buf, size_t len, int gen, int width)
{
	if (gen && width)
		snprintf(buf, len, "Gen%d x%d", gen, width);
	else if (width)
		snprintf(buf, len, "x%d", width);
	else
		snprintf(buf, len, "unknown");
}

/* The link's verdict as judged here: a GPU's own lowered speed may be fine. */
static enum pn_pcie_verdict judged(const struct pn_pcie_link *l, int gpu_own, int idle_ok)
{
	if (!gpu_own || !idle_ok)
		return l->verdict;
	if (l->verdict == PN_PCIE_DOWN_SPEED)
		return PN_PCIE_OK;
	if (l->verdict == PN_PCIE_DOWN_BOTH)
		return PN_PCIE_DOWN_WIDTH;
	return l->verdict;
}

static int pcie_dev(struct pn_check *c, const char *target, const char *addr, int is_gpu,
		    int idle_ok)
{
	struct pn_verdict_in in = { .check = "pcie", .target = target, .verdict = PN_PASS };
	char meas[PN_VERDICT_VAL], exp[PN_VERDICT_VAL], det[PN_VERDICT_DETAIL] = "", cur[24];
	const struct pn_pcie_link *own, *bad = NULL, *unknown = NULL;
	struct pn_pcie_path p;
	int i, nbad = 0, ret;

	if (!addr[0])
		return skip(c, "pcie", target, "a virtual device: no PCIe link");
	ret = pn_pcie_path(addr, &p);
	if (ret == -ENOMEM)
		return ret;
	if (ret || p.nlinks < 1)
		return skip(c, "pcie", target, ret ? pn_errmsg(ret) : "no PCIe link found");
	own = &p.link[p.nlinks - 1];
	/* from the device up: the first bad link is named */
	for (i = p.nlinks - 1; i >= 0; i--) {
		enum pn_pcie_verdict v = judged(&p.link[i], is_gpu && i == p.nlinks - 1, idle_ok);

		if (v == PN_PCIE_UNKNOWN && !unknown)
			unknown = &p.link[i];
		else if (v != PN_PCIE_OK && v != PN_PCIE_UNKNOWN && !nbad++)
			bad = &p.link[i];
	}
	if (own->verdict == PN_PCIE_UNKNOWN && !bad) {
		snprintf(det, sizeof(det), "link state unknown: %s", own->why);
		return skip(c, "pcie", target, det);
	}
	link_text(cur, sizeof(cur), own->cur_gen, own->cur_width);
	snprintf(meas, sizeof(meas), "%s", cur);
	link_text(exp, sizeof(exp), own->max_gen, own->max_width);
	in.source = "topology: the link's maximum";
	if (bad) {
		char more[40] = "";

		in.verdict = PN_FAIL;
		link_text(cur, sizeof(cur), bad->cur_gen, bad->cur_width);
		if (bad != own) {
			snprintf(meas, sizeof(meas), "%s at %s", cur, bad->addr);
			link_text(exp, sizeof(exp), bad->max_gen, bad->max_width);
		}
		if (nbad > 1)
			snprintf(more, sizeof(more), " (and %d more link%s)", nbad - 1,
				 nbad > 2 ? "s" : "");
		snprintf(det, sizeof(det), "%s link at %s%s: %s of %s%s", pn_pcie_verdict_name(
			 judged(bad, is_gpu && bad == own, idle_ok)), bad->addr,
			 bad == own ? "" : " (above the device)", cur, exp, more);
	} else if (is_gpu && own->verdict != PN_PCIE_OK && own->verdict != PN_PCIE_UNKNOWN) {
		snprintf(det, sizeof(det), "speed lowered to Gen%d, as an idle GPU does "
			 "(pcie.gpu-speed = strict fails it)", own->cur_gen);
	} else if (unknown) {
		snprintf(det, sizeof(det), "link at %s unknown: %s", unknown->addr, unknown->why);
	} else if (p.throttled && p.weakest >= 0) {
		link_text(cur, sizeof(cur), p.link[p.weakest].cur_gen, p.link[p.weakest].cur_width);
		snprintf(det, sizeof(det), "the path is narrower: %s at %s", cur,
			 p.link[p.weakest].addr);
	}
	in.measured = PN_VTEXT(meas);
	in.expected = PN_VTEXT(exp);
	in.detail = det;
	return pn_check_add(c, &in);
}

int pn_check_pcie(struct pn_check *c)
{
	const struct pn_topo *t = c->topo;
	const char *mode;
	int i, j, ret = 0, idle_ok, nnic = 0;

	pn_check_cfg_str(c->cfg, "pcie.gpu-speed", &mode);
	idle_ok = strcmp(mode, "strict") != 0;
	if (!t->ngpus)
		ret = skip(c, "pcie", "gpus", "no GPU found");
	for (i = 0; !ret && i < t->ngpus; i++)
		ret = pcie_dev(c, t->devs[i].name, t->devs[i].pci_busid, 1, idle_ok);
	for (i = t->ngpus; !ret && i < t->ngpus + t->nnics; i++) {
		const struct pn_nic *nic = &t->devs[i].nic;
		int sel = !nic->nports;

		for (j = 0; j < nic->nports; j++)
			sel |= pn_check_port_selected(c, nic->name, nic->ports[j].port);
		if (!sel)
			continue;
		nnic++;
		ret = pcie_dev(c, nic->name, t->devs[i].pci_busid, 0, idle_ok);
	}
	if (!ret && !nnic)
		ret = skip(c, "pcie", "nics", t->nnics ? "no NIC selected (-d)"
						       : "no RDMA device found");
	return ret;
}

/* ------------------------------------------------------------ counters */

/* Sequence and retransmission counters of RDMA NICs that are not named *_err. */
static const char *const seq_counters[] = {
	"out_of_sequence", "out_of_seq_request", "duplicate_request", "roce_adp_retrans",
	"roce_adp_retrans_to", "roce_slow_restart",
};

static int judged_counter(const struct pn_counter *k)
{
	size_t i;

	if (k->kind == PN_CK_ERR || k->kind == PN_CK_DISC)
		return 1;
	for (i = 0; i < sizeof(seq_counters) / sizeof(seq_counters[0]); i++)
		if (!strcmp(k->name, seq_counters[i]))
			return 1;
	return 0;
}

static void sleep_until(uint64_t t_ns)
{
	uint64_t now;

	while ((now = pn_now_ns()) < t_ns) {
		uint64_t d = t_ns - now;
		struct timespec ts;

		if (d > 200000000ull)
			d = 200000000ull;
		ts.tv_sec = 0;
		ts.tv_nsec = (long)d;
		nanosleep(&ts, NULL);
	}
}

static int ctr_port(struct pn_check *c, const struct pn_counters_port *p, double maxinc,
		    const char *src, double secs)
{
	struct pn_verdict_in in = { .check = "counters", .target = p->name, .unit = "",
				    .expected = PN_VNUM(maxinc), .source = src,
				    .seconds = secs };
	char det[PN_VERDICT_DETAIL] = "";
	const char *unread = NULL;
	uint64_t sum = 0;
	size_t dl = 0;
	int i, judged = 0, sat = 0, nunread = 0, nrose = 0;

	if (p->nsamples < 2)
		return skip(c, "counters", p->name, "the port appeared during the run");
	for (i = 0; i < p->nctr; i++) {
		const struct pn_counter *k = &p->ctr[i];

		if (!judged_counter(k))
			continue;
		/* not read at both samples (a read error, garbage): said, not left out silently */
		if (!(k->flags & PN_CF_VALID) || !(k->flags & (PN_CF_SAT | PN_CF_DELTA))) {
			unread = nunread++ ? unread : k->name;
			continue;
		}
		if (k->flags & PN_CF_SAT) {
			sat++;
			continue;
		}
		judged++;
		if (!k->delta)
			continue;
		sum += k->delta;
		/* whole names, room kept for how many did not fit and the notes */
		if (dl + strlen(k->name) + 24 + 96 < sizeof(det) && !nrose) {
			int w = snprintf(det + dl, sizeof(det) - dl, "%s%s +%llu", dl ? ", " : "rose: ",
					 k->name, (unsigned long long)k->delta);
			dl = w > 0 ? dl + (size_t)w : dl;
		} else {
			nrose++;
		}
	}
	if (nrose && dl < sizeof(det) - 1)
		snprintf(det + dl, sizeof(det) - dl, "%s%d %s", dl ? " and " : "rose: ", nrose,
			 dl ? "more" : nrose == 1 ? "counter" : "counters");
	dl = strlen(det);
	if (!judged && !sat)
		return skip(c, "counters", p->name, "no error counter readable");
	if (dl >= sizeof(det))
		dl = sizeof(det) - 1;
	if (sat && dl < sizeof(det) - 1)
		snprintf(det + dl, sizeof(det) - dl, "%s%d counter%s stuck at the maximum",
			 dl ? "; " : "", sat, sat == 1 ? "" : "s");
	dl = strlen(det);
	if (nunread && dl < sizeof(det) - 1)
		snprintf(det + dl, sizeof(det) - dl, "%s%d error counter%s not read at both samples "
			 "(%s%s), not judged", dl ? "; " : "", nunread, nunread == 1 ? "" : "s", unread,
			 nunread > 1 ? ", ..." : "");
	in.measured = PN_VNUM((double)sum);
	in.verdict = (double)sum > maxinc ? PN_FAIL : PN_PASS;
	if (p->nleft_out) {
		/* never judged silently short: an error counter left out fails */
		dl = strlen(det);
		if (dl < sizeof(det) - 1)
			snprintf(det + dl, sizeof(det) - dl, "%s%d counter%s left out (more than %d), "
				 "%d of them error counters", dl ? "; " : "", p->nleft_out,
				 p->nleft_out == 1 ? "" : "s", PN_COUNTERS_MAX, p->nleft_out_err);
		if (p->nleft_out_err)
			in.verdict = PN_FAIL;
	}
	in.detail = det;
	return pn_check_add(c, &in);
}

int pn_check_counters(struct pn_check *c)
{
	struct pn_counters_set *s = c->before;
	char (*names)[80] = NULL, src[64];
	double window, maxinc, secs;
	int i, j, n = 0, ret, found = 0;

	if (!s)
		return skip(c, "counters", "ports", "no counters sampled before the checks");
	pn_check_cfg_num(c->cfg, "counters.window", &window);
	if (pn_check_cfg_num(c->cfg, "counters.max-increase", &maxinc) == 1)
		snprintf(src, sizeof(src), "config: counters.max-increase");
	else
		snprintf(src, sizeof(src), "default: no increase");
	if (s->n) {
		names = calloc((size_t)s->n, sizeof(*names));
		if (!names)
			return pn_err(-ENOMEM, "out of memory");
		for (i = 0; i < s->n; i++)
			snprintf(names[i], sizeof(names[i]), "%s", s->ports[i].name);
		n = s->n;
	}
	if (window > 0) {
		pn_check_progress(c, "counters", "watching the counters for %g s", window);
		sleep_until(s->t_ns + (uint64_t)(window * 1e9));
	}
	secs = (double)(pn_now_ns() - s->t_ns) * 1e-9;
	ret = pn_counters_set_sample(s);
	for (i = 0; !ret && i < s->n; i++) {
		const struct pn_counters_port *p = &s->ports[i];

		if (p->type != PN_PT_RDMA || !pn_check_port_selected(c, p->dev, p->port))
			continue;
		found++;
		ret = ctr_port(c, p, maxinc, src, secs);
	}
	/* a port that went away during the run */
	for (j = 0; !ret && j < n; j++) {
		if (pn_counters_set_find(s, names[j]))
			continue;
		struct pn_verdict_in in = { .check = "counters", .target = names[j],
					    .verdict = PN_FAIL, .measured = PN_VTEXT("gone"),
					    .detail = "the port disappeared during the run" };

		found++;
		ret = pn_check_add(c, &in);
	}
	free(names);
	if (!ret && !found)
		ret = skip(c, "counters", "ports", "no RDMA port found");
	return ret;
}
