/* SPDX-License-Identifier: MIT */
/*
 * penny topo: the GPU/NIC matrix of path classes (like nvidia-smi topo -m),
 * the RDMA port table (like ibstatus), rails, and NHC-style CI checks.
 */
#define _GNU_SOURCE
#include "penny.h"

#include "base/log.h"
#include "node/nic.h"
#include "base/ofile.h"
#include "node/topo.h"
#include "node/topo_check.h"
#include "plan/topo_json.h"
#include "base/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct {
	const char *xml;
	const char *save;
	const char *devices;
	const char *expect_state;
	int pcie;
	int expect_gpus;
	int expect_nics;
	double expect_rate;
	int expect_rail;
} opt = { .expect_gpus = -1, .expect_nics = -1, .expect_rate = -1 };

const struct pn_opt topo_options[] = {
	{ "topo-xml", 0, OPT_STRING, &opt.xml, "FILE",
	  "read the topology from an hwloc XML file (v1, v2 or v3) instead of the system", NULL,
	  NULL },
	{ "pcie", 0, OPT_BOOL, &opt.pcie, NULL,
	  "PCIe classes even where GPUs have NVLinks (like nvidia-smi topo -mp)", NULL, NULL },
	{ "save", 0, OPT_STRING, &opt.save, "FILE",
	  "also write the JSON to FILE (input of penny ring-plan --topo-file)", NULL, NULL },
	{ "device", 'd', OPT_APPEND, &opt.devices, "DEV[:PORT]",
	  "the port checks look only at these RDMA devices or ports (repeat or comma-separate)",
	  NULL, OPT_LIST },
	{ "expect-gpus", 0, OPT_INT, &opt.expect_gpus, "N", "check: exactly N GPUs", NULL,
	  OPT_RANGE(0, 1024) },
	{ "expect-nics", 0, OPT_INT, &opt.expect_nics, "N", "check: exactly N RDMA NICs", NULL,
	  OPT_RANGE(0, 1024) },
	{ "expect-rate", 0, OPT_DOUBLE, &opt.expect_rate, "GBPS",
	  "check: every checked port runs at GBPS Gb/s or more", NULL, OPT_RANGE(1, 100000) },
	{ "expect-state", 0, OPT_STRING, &opt.expect_state, "STATE",
	  "check: every checked port is in STATE", "ACTIVE INIT ARMED DOWN NOP ACTIVE_DEFER", NULL },
	{ "expect-rail", 0, OPT_BOOL, &opt.expect_rail, NULL,
	  "check: every GPU has an RDMA NIC at PIX or PXB", NULL, NULL },
	OPT_TABLE_END
};

static const char *const legend[][2] = {
	{ "X", "Self" },
	{ "SYS", "Connection traversing PCIe as well as the SMP interconnect between NUMA nodes "
		 "(e.g., QPI/UPI)" },
	{ "NODE", "Connection traversing PCIe as well as the interconnect between PCIe Host "
		  "Bridges within a NUMA node" },
	{ "PHB", "Connection traversing PCIe as well as a PCIe Host Bridge (typically the CPU)" },
	{ "PXB", "Connection traversing multiple PCIe bridges (without traversing the PCIe Host "
		 "Bridge)" },
	{ "PIX", "Connection traversing at most a single PCIe bridge" },
	{ "NV#", "Connection traversing a bonded set of # NVLinks" },
};

/* The path matrix as nvidia-smi topo -m prints it, with its legends. */
static void text_matrix(struct pn_out *o, const struct pn_topo *t, int pcie)
{
	int n = t->ngpus + t->nnics, i, j;
	char cls[16];

	if (!n) {
		pn_out_text(o, "No GPUs or RDMA NICs found.\n");
		return;
	}
	for (j = 0; j < n; j++)
		pn_out_text(o, "\t%s", t->devs[j].name);
	pn_out_text(o, "\tCPU Affinity\tNUMA Affinity\n");
	for (i = 0; i < n; i++) {
		pn_out_text(o, "%s", t->devs[i].name);
		for (j = 0; j < n; j++) {
			int links, c = pn_topo_path(t, i, j, pcie, &links);

			pn_path_name(c, links, cls, sizeof(cls));
			pn_out_text(o, c == PN_PATH_X ? "\t X " : "\t%s", cls);
		}
		pn_out_text(o, "\t%s", t->devs[i].cpus && t->devs[i].cpus[0] ? t->devs[i].cpus
									   : "N/A");
		if (t->devs[i].numa >= 0)
			pn_out_text(o, "\t%d\n", t->devs[i].numa);
		else
			pn_out_text(o, "\tN/A\n");
	}
	pn_out_text(o, "\nLegend:\n\n");
	for (i = 0; i < (int)PN_ARRAY_SIZE(legend); i++)
		pn_out_text(o, "  %-4s = %s\n", legend[i][0], legend[i][1]);
	if (t->nnics) {
		pn_out_text(o, "\nNIC Legend:\n\n");
		for (i = t->ngpus; i < n; i++)
			pn_out_text(o, "  %s: %s\n", t->devs[i].name, t->devs[i].nic.name);
	}
}

/* The RDMA port table, like ibstatus. */
static void text_ports(struct pn_out *o, const struct pn_topo *t)
{
	int i, p;

	if (!t->nnics)
		return;
	pn_out_text(o, "\nPorts:\n%-12s %-4s %-8s %-10s %-22s %-10s %-12s %s\n", "DEVICE", "PORT",
		    "STATE", "PHYS", "RATE", "LINK", "NETDEV", "DEFAULT GID");
	for (i = t->ngpus; i < t->ngpus + t->nnics; i++) {
		const struct pn_nic *nic = &t->devs[i].nic;

		if (!nic->nports)
			pn_out_text(o, "%-12s %-4s (no port information)\n", nic->name, "-");
		for (p = 0; p < nic->nports; p++) {
			const struct pn_port *pt = &nic->ports[p];

			pn_out_text(o, "%-12s %-4d %-8s %-10s %-22s %-10s %-12s %s", nic->name,
				    pt->port, pt->state_name[0] ? pt->state_name : "n/a",
				    pt->phys_state_name[0] ? pt->phys_state_name : "n/a",
				    pt->rate[0] ? pt->rate : "n/a", pt->link_layer,
				    pt->netdev[0] ? pt->netdev : "-", pt->gid[0] ? pt->gid : "-");
			if (pt->gid_index >= 0)
				pn_out_text(o, " (%d%s%s)", pt->gid_index, pt->gid_type[0] ? ", " : "",
					    pt->gid_type);
			pn_out_nl(o);
		}
	}
}

/* The nearest NICs of each GPU. */
static void text_rails(struct pn_out *o, const struct pn_topo *t)
{
	int *nics = calloc((size_t)t->nnics + 1, sizeof(*nics));
	char cls[16];
	int g, k, n, c;

	if (nics && t->nnics && t->ngpus)
		pn_out_text(o, "\nRails (nearest NICs of each GPU):\n");
	for (g = 0; nics && t->nnics && g < t->ngpus; g++) {
		n = pn_topo_rail(t, g, nics, &c);
		pn_path_name(c, 0, cls, sizeof(cls));
		pn_out_str(o, PN_TEXT, NULL, "  %-6s", t->devs[g].name);
		pn_out_str(o, PN_TEXT, NULL, "%-5s", cls);
		for (k = 0; k < n; k++)
			pn_out_text(o, "%s%s (%s)", k ? ", " : " ", t->devs[nics[k]].name,
				    t->devs[nics[k]].nic.name);
		pn_out_nl(o);
	}
	free(nics);
}

/* The text of topology t (the JSON is the document, plan/topo_json.h). */
static void text_topo(struct pn_out *o, const struct pn_topo *t, int pcie)
{
	text_matrix(o, t, pcie);
	text_ports(o, t);
	text_rails(o, t);
	pn_out_text(o, "\nHost %s, topology from %s, NVLinks from %s%s\n", t->host,
		    !strcmp(t->source, "live") ? "this system" : t->source,
		    t->nvlink_source[0] ? t->nvlink_source : "nowhere",
		    pcie ? " (not shown: --pcie)" : "");
}

int cmd_topo(struct pn_ctx *ctx, int argc, char **argv)
{
	struct pn_topo_cfg cfg = { 0 };
	struct pn_topo_viol c = { 0 };
	struct pn_topo_expect e;
	struct pn_topo t;
	struct pn_ofile *save = NULL;
	int ret, i, want_state = -1, checks;

	if (argc > 0)
		return pn_cmd_fail(ctx, 2, "unexpected argument '%s'", argv[0]);
	if (opt.expect_state) {
		want_state = pn_port_state_from_name(opt.expect_state);
		if (want_state < 0)
			return pn_cmd_fail(ctx, 2, "invalid port state '%s' (DOWN, INIT, ARMED, "
					   "ACTIVE, NOP, ACTIVE_DEFER or 0..5)", opt.expect_state);
	}
	/* --expect-gpus, -nics, -rate are in range (the table); -1: not given */
	e = (struct pn_topo_expect){ .gpus = opt.expect_gpus, .nics = opt.expect_nics,
				     .rate = opt.expect_rate, .state = want_state,
				     .state_name = opt.expect_state, .devices = opt.devices,
				     .rail = opt.expect_rail };
	ret = pn_topo_expect_valid(&e);
	if (ret)
		return pn_cmd_fail(ctx, 2, "%s", pn_errmsg(ret));
	checks = pn_topo_expect_any(&e);
	cfg.xml_file = opt.xml;
	if (opt.save && opt.xml && pn_ofile_same(opt.save, opt.xml))
		return pn_cmd_fail(ctx, 2, "--save and --topo-xml name the same file '%s'", opt.save);
	/* the output first: a file that cannot be written fails before the work */
	if (opt.save) {
		ret = pn_ofile_open(&save, opt.save, PN_OFILE_SYNC);
		if (ret)
			return pn_cmd_fail(ctx, 2, "%s", pn_errmsg(ret));
	}
	ret = pn_topo_load(&t, &cfg);
	if (ret) {
		pn_ofile_abort(save);
		pn_cmd_error(ctx, ret);
		return 2;
	}
	ret = checks ? pn_topo_check(&t, &e, &c) : 0;
	if (ret) {
		pn_cmd_error(ctx, ret);
		ret = 2;
		goto out;
	}
	if (pn_out_is_json(ctx->out))
		pn_topo_write(ctx->out, &t, opt.pcie, c.v, c.n, checks);
	else
		text_topo(ctx->out, &t, opt.pcie);
	if (save) {
		ret = pn_topo_save(save, &t, opt.pcie, c.v, c.n, checks);
		save = NULL;
		if (ret) {
			pn_cmd_error(ctx, ret);
			ret = 2;
		}
	}
	if (!ret && c.n) {
		fflush(stdout);
		for (i = 0; i < c.n; i++)
			pn_cmd_fail(ctx, 1, "check failed: %s", c.v[i]);
		ret = 1;
	}
out:
	pn_ofile_abort(save);
	pn_topo_viol_release(&c);
	pn_topo_release(&t);
	return ret;
}
