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
#include "plan/topo_json.h"
#include "base/util.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
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
	  "check: every checked port is in STATE", "ACTIVE INIT ARMED DOWN", NULL },
	{ "expect-rail", 0, OPT_BOOL, &opt.expect_rail, NULL,
	  "check: every GPU has an RDMA NIC at PIX or PXB", NULL, NULL },
	OPT_TABLE_END
};

struct checks {
	char **v;
	int n, cap, oom;
};

static void violation(struct checks *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void violation(struct checks *c, const char *fmt, ...)
{
	va_list ap;
	char *s;

	if (c->n == c->cap) {
		int cap = c->cap ? 2 * c->cap : 16;
		char **v = realloc(c->v, (size_t)cap * sizeof(*v));

		if (!v) {
			c->oom = 1;
			return;
		}
		c->v = v;
		c->cap = cap;
	}
	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) < 0)
		c->oom = 1;
	else
		c->v[c->n++] = s;
	va_end(ap);
}

/* Is port p of device dev selected by --device? */
static int selected(const char *dev, int port, int *hits, int nsel, char **sel)
{
	int i, any = 0;

	if (!nsel)
		return 1;
	for (i = 0; i < nsel; i++) {
		const char *colon = strrchr(sel[i], ':');
		size_t len = colon ? (size_t)(colon - sel[i]) : strlen(sel[i]);

		if (strlen(dev) != len || strncmp(dev, sel[i], len))
			continue;
		if (colon && atoi(colon + 1) != port)
			continue;
		hits[i]++;
		any = 1;
	}
	return any;
}

static void check_ports(struct checks *c, const struct pn_topo *t, int want_state)
{
	char *list = opt.devices ? strdup(opt.devices) : NULL, *tok, *save = NULL;
	char *sel[64];
	int hits[64] = { 0 }, nsel = 0, i, p, nchecked = 0;

	for (tok = list ? strtok_r(list, ",", &save) : NULL; tok && nsel < 64;
	     tok = strtok_r(NULL, ",", &save))
		if (*tok)
			sel[nsel++] = tok;
	for (i = t->ngpus; i < t->ngpus + t->nnics; i++) {
		const struct pn_nic *nic = &t->devs[i].nic;

		if (!nic->nports && selected(nic->name, 0, hits, nsel, sel)) {
			violation(c, "%s: no port information", nic->name);
			nchecked++;
		}
		for (p = 0; p < nic->nports; p++) {
			const struct pn_port *pt = &nic->ports[p];

			if (!selected(nic->name, pt->port, hits, nsel, sel))
				continue;
			nchecked++;
			if (want_state >= 0 && pt->state != want_state)
				violation(c, "%s port %d: state %s, expected %s", nic->name, pt->port,
					  pt->state_name[0] ? pt->state_name : "unknown",
					  opt.expect_state);
			if (opt.expect_rate >= 0 && !(pt->rate_gbps >= opt.expect_rate)) {
				if (pt->rate_gbps > 0)
					violation(c, "%s port %d: rate %g Gb/s, expected at least %g Gb/s",
						  nic->name, pt->port, pt->rate_gbps, opt.expect_rate);
				else
					violation(c, "%s port %d: rate unknown, expected at least %g Gb/s",
						  nic->name, pt->port, opt.expect_rate);
			}
		}
	}
	for (i = 0; i < nsel; i++)
		if (!hits[i])
			violation(c, "no RDMA device or port '%s'", sel[i]);
	if (!nchecked && !nsel)
		violation(c, "no RDMA ports to check");
	free(list);
}

static void run_checks(struct checks *c, const struct pn_topo *t, int want_state)
{
	int g;

	if (opt.expect_gpus >= 0 && t->ngpus != opt.expect_gpus)
		violation(c, "found %d GPU%s, expected %d", t->ngpus, t->ngpus == 1 ? "" : "s",
			  opt.expect_gpus);
	if (opt.expect_nics >= 0 && t->nnics != opt.expect_nics)
		violation(c, "found %d RDMA NIC%s, expected %d", t->nnics, t->nnics == 1 ? "" : "s",
			  opt.expect_nics);
	if (want_state >= 0 || opt.expect_rate >= 0)
		check_ports(c, t, want_state);
	if (opt.expect_rail) {
		int *nics = calloc((size_t)t->nnics + 1, sizeof(*nics));

		if (!nics) {
			c->oom = 1;
			return;
		}
		for (g = 0; g < t->ngpus; g++) {
			char cls[16];
			int cl, n = pn_topo_rail(t, g, nics, &cl);

			if (!n)
				violation(c, "%s (%s): no RDMA NIC", t->devs[g].name,
					  t->devs[g].pci_busid);
			else if (cl != PN_PATH_PIX && cl != PN_PATH_PXB)
				violation(c, "%s (%s): nearest NIC %s (%s) is %s, expected PIX or PXB",
					  t->devs[g].name, t->devs[g].pci_busid,
					  t->devs[nics[0]].name, t->devs[nics[0]].nic.name,
					  pn_path_name(cl, 0, cls, sizeof(cls)));
		}
		free(nics);
	}
}

/*
 * -d: only with a port check, at most 64 entries, each DEV or DEV:PORT with
 * PORT 1..255 (empty entries are refused by the table).  A device or port
 * that does not exist is a failed check (exit 1), as a vanished NIC is.
 */
static int check_devices(struct pn_ctx *ctx, int want_state)
{
	char *list, *tok, *save = NULL;
	int n = 0, ret = 0;

	if (want_state < 0 && opt.expect_rate < 0)
		return pn_cmd_fail(ctx, 2, "-d picks the ports that --expect-state and --expect-rate "
					   "check; give one of them");
	list = strdup(opt.devices);
	if (!list)
		return pn_cmd_fail(ctx, 2, "out of memory");
	for (tok = strtok_r(list, ",", &save); tok && !ret; tok = strtok_r(NULL, ",", &save)) {
		char *colon = strrchr(tok, ':');
		int port;

		if (++n > 64)
			ret = pn_cmd_fail(ctx, 2, "-d names more than 64 devices or ports");
		else if (colon && (colon == tok || pn_parse_int(colon + 1, &port) || port < 1 ||
				   port > 255))
			ret = pn_cmd_fail(ctx, 2, "-d '%s': want DEV or DEV:PORT, PORT 1..255", tok);
	}
	free(list);
	return ret;
}

/* Write the JSON into the file opened before the work and commit it. */
static int save_json(struct pn_ctx *ctx, struct pn_ofile *of, const struct pn_topo *t,
		     char **viol, int nv, int checks)
{
	struct pn_out *o;
	int ret;

	o = pn_out_new(pn_ofile_file(of), 1);
	if (!o) {
		pn_ofile_abort(of);
		return pn_cmd_fail(ctx, 2, "out of memory");
	}
	pn_topo_write(o, t, opt.pcie, viol, nv, checks);
	if (pn_out_free(o)) {
		ret = errno ? errno : EIO;
		pn_ofile_abort(of);
		return pn_cmd_fail(ctx, 2, "write error on '%s': %s", opt.save, strerror(ret));
	}
	ret = pn_ofile_commit(of);
	if (ret) {
		pn_cmd_error(ctx, ret);
		return 2;
	}
	return 0;
}

int cmd_topo(struct pn_ctx *ctx, int argc, char **argv)
{
	struct pn_topo_cfg cfg = { 0 };
	struct checks c = { 0 };
	struct pn_topo t;
	struct pn_ofile *save = NULL;
	int ret, i, want_state = -1, checks;

	if (argc > 0)
		return pn_cmd_fail(ctx, 2, "unexpected argument '%s'", argv[0]);
	if (opt.expect_state) {
		want_state = pn_port_state_from_name(opt.expect_state);
		if (want_state < 0)
			return pn_cmd_fail(ctx, 2,
					   "invalid port state '%s' (DOWN, INIT, ARMED, ACTIVE)",
					   opt.expect_state);
	}
	/* --expect-gpus, -nics, -rate are in range (the table); -1: not given */
	if (opt.devices && check_devices(ctx, want_state))
		return 2;
	checks = opt.expect_gpus >= 0 || opt.expect_nics >= 0 || opt.expect_rate >= 0 ||
		 want_state >= 0 || opt.expect_rail;
	cfg.xml_file = opt.xml;
	/* the output first: a file that cannot be written fails before the work */
	if (opt.save) {
		ret = pn_ofile_open(&save, opt.save, PN_OFILE_SYNC);
		if (ret) {
			pn_cmd_error(ctx, ret);
			return 2;
		}
	}
	ret = pn_topo_load(&t, &cfg);
	if (ret) {
		pn_ofile_abort(save);
		pn_cmd_error(ctx, ret);
		return 2;
	}
	if (checks)
		run_checks(&c, &t, want_state);
	ret = 0;
	if (c.oom) {
		ret = pn_cmd_fail(ctx, 2, "out of memory");
		goto out;
	}
	pn_topo_write(ctx->out, &t, opt.pcie, c.v, c.n, checks);
	if (save) {
		ret = save_json(ctx, save, &t, c.v, c.n, checks);
		save = NULL;
	}
	if (!ret && c.n) {
		fflush(stdout);
		for (i = 0; i < c.n; i++)
			pn_cmd_fail(ctx, 1, "check failed: %s", c.v[i]);
		ret = 1;
	}
out:
	pn_ofile_abort(save);
	for (i = 0; i < c.n; i++)
		free(c.v[i]);
	free(c.v);
	pn_topo_release(&t);
	return ret;
}
