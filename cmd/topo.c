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

#include <errno.h>
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
	e = (struct pn_topo_expect){ .gpus = opt.expect_gpus, .nics = opt.expect_nics,
				     .rate = opt.expect_rate, .state = want_state,
				     .state_name = opt.expect_state, .devices = opt.devices,
				     .rail = opt.expect_rail };
	ret = checks ? pn_topo_check(&t, &e, &c) : 0;
	if (ret) {
		pn_cmd_error(ctx, ret);
		ret = 2;
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
	pn_topo_viol_release(&c);
	pn_topo_release(&t);
	return ret;
}
