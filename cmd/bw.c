/* SPDX-License-Identifier: MIT */
/*
 * penny bw: RDMA bandwidth and latency between two ports, in perftest's
 * spelling (ib_write_bw, ib_read_bw, ib_send_bw, ib_write_lat).
 *   penny bw [-d DEV]             server: waits for one client (TCP port -p)
 *   penny bw [-d DEV] HOST        client: connects, runs the test
 *   penny bw --loopback D1[,D2]   both ends in this host (two devices: a link)
 *   mpirun -np 2 penny bw         ranks 2k and 2k+1 test their link(s);
 *                                 --all-rails: every NIC pair of the same index
 * The client (or the even rank) issues the operations; both sides print the
 * same table (under a launcher only rank 0).  --expect / --min-gbps make it
 * a CI gate.  The runs are src/harness/bwrun.c (the measurements
 * src/harness/bwtest.c); this file parses the options, calls them and
 * presents.
 */
#define _GNU_SOURCE
#include "penny.h"
#include "bw-gpu.h"

#include "base/log.h"
#include "base/util.h"
#include "gpu/gpumem.h"
#include "harness/bwopts.h"
#include "harness/bwrun.h"
#include "transport/verbs.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct pn_bw_opts opt = {
	.op = "write", .gid = -1, .iters = -1, .qps = 1, .txdepth = 128, .port = 0,
	.inline_size = -1, .use_cuda = -1, .size = PN_BW_SIZE_UNSET, .min_gbps = -1, .limit_bw = -1,
};

const struct pn_opt bw_options[] = {
	{ "ib-dev", 'd', OPT_STRING, &opt.dev, "DEV[:PORT]",
	  "RDMA device and port (default: the first with an ACTIVE port); a comma list with "
	  "--all-rails", NULL, OPT_LIST },
	{ "ib-port", 'i', OPT_INT, &opt.ibport, "PORT", "port of the device (default 1)", NULL,
	  OPT_RANGE(1, 255) },
	{ "gid-index", 'x', OPT_INT, &opt.gid, "INDEX",
	  "GID index (default: an IPv4-mapped RoCE v2 GID; both sides must agree)", NULL,
	  OPT_RANGE(0, 255) },
	{ "size", 's', OPT_SIZE, &opt.size, "SIZE",
	  "message size (default 65536; --gpu: bytes per copy, 4K..1G, default 256M)", NULL,
	  OPT_RANGE(0, 1 << 30) },
	{ "all", 'a', OPT_BOOL, &opt.all, NULL, "every size from 2 bytes to 8 MiB", NULL, NULL },
	{ "iters", 'n', OPT_INT, &opt.iters, "N",
	  "operations per size (default 5000; latency 1000)", NULL, OPT_RANGE(1, 1000000000) },
	{ "duration", 'D', OPT_SECONDS, &opt.duration, "SEC", "run each size for SEC seconds",
	  NULL, OPT_RANGE(0.1, 86400) },
	{ "qp", 'q', OPT_INT, &opt.qps, "QPS", "queue pairs (default 1)", NULL,
	  OPT_RANGE(1, PN_VERBS_MAX_QPS) },
	{ "bidirectional", 'b', OPT_BOOL, &opt.bidir, NULL,
	  "both sides send at once (the sum is reported)", NULL, NULL },
	{ "mtu", 'm', OPT_INT, &opt.mtu, "BYTES",
	  "path MTU: 256, 512, 1024, 2048 or 4096 (default: the ports')",
	  "256 512 1024 2048 4096", OPT_RANGE(256, 4096) },
	{ "op", 0, OPT_STRING, &opt.op, "OP", "write (default), read or send",
	  "write read send", NULL },
	{ "lat", 0, OPT_BOOL, &opt.lat, NULL,
	  "latency instead of bandwidth: min, median, average, p99, p99.9, max", NULL, NULL },
	{ "tx-depth", 't', OPT_INT, &opt.txdepth, "N",
	  "operations in flight per QP (default 128)", NULL, OPT_RANGE(1, 8192) },
	{ "inline-size", 'I', OPT_INT, &opt.inline_size, "BYTES",
	  "send writes and sends of up to BYTES inline (default 220 with --lat, else 0)", NULL,
	  OPT_RANGE(0, 4096) },
	{ "use_cuda", 0, OPT_INT, &opt.use_cuda, "GPU",
	  "the test buffers in the memory of GPU (an index), registered as a dma-buf "
	  "(GPUDirect RDMA, like perftest's --use_cuda); needs the cuda plugin", NULL,
	  OPT_RANGE(0, 1023) },
	{ "port", 'p', OPT_INT, &opt.port, "PORT",
	  "TCP port of the server (default 18515; or the client's HOST:PORT)", NULL,
	  OPT_RANGE(1, 65535) },
	{ "transport", 0, OPT_STRING, &opt.transport, "NAME", "verbs (default) or tcp: the TCP "
	  "path between the same two ends, labelled as such", "tcp verbs", OPT_ONE_OF },
	{ "loopback", 0, OPT_STRING, &opt.loopback, "DEV1[,DEV2]",
	  "both ends in this host: one device, or a link between two (tcp: lo)", NULL, OPT_LIST },
	{ "all-rails", 0, OPT_BOOL, &opt.all_rails, NULL,
	  "under a launcher: test every NIC pair of the same index at once", NULL, NULL },
	{ "expect", 0, OPT_OPTSTRING, &opt.expect, "PCT",
	  "fail (exit 1) below PCT % of the link rate, doubled when bidirectional (default 90)",
	  NULL, OPT_RANGE(1, 100) },
	{ "min-gbps", 0, OPT_DOUBLE, &opt.min_gbps, "GBPS", "fail (exit 1) below GBPS Gb/s",
	  NULL, OPT_RANGE(0, 1e9) },
	/* perftest's letters (ib_write_bw and friends) */
	{ "report_gbits", 0, OPT_BOOL, &opt.report_gbits, NULL,
	  "BW columns in Gb/sec (10^9 bits) instead of MB/sec (2^20 bytes), as perftest",
	  NULL, NULL },
	{ "CPU-freq", 'F', OPT_BOOL, &opt.cpu_freq, NULL,
	  "accepted for perftest's scripts: penny times with the monotonic clock, so it has "
	  "no CPU-frequency warning to silence", NULL, NULL },
	{ "connection", 'c', OPT_STRING, &opt.connection, "TYPE",
	  "QP type: RC, the only one penny tests (perftest's -c)", "RC", NULL },
	{ "qp-timeout", 'u', OPT_INT, &opt.qp_timeout, "EXP",
	  "QP ACK timeout, 4.096 us * 2^EXP (default 14)", NULL, OPT_RANGE(1, 31) },
	{ "noPeak", 'N', OPT_BOOL, &opt.no_peak, NULL,
	  "no peak bandwidth: BW peak is 0, as perftest's -N", NULL, NULL },
	{ "limit_bw", 'w', OPT_DOUBLE, &opt.limit_bw, "BW",
	  "fail (exit 1) below BW in the table's unit (MB/sec; Gb/sec with --report_gbits), "
	  "as perftest's verifier limit", NULL, OPT_RANGE(0, 1e12) },
	{ "rdma_cm", 'R', OPT_BOOL, &opt.rdma_cm, NULL,
	  "accepted with a warning: penny connects the QPs over its own TCP exchange on -p PORT, "
	  "not rdma_cm; the test is the same", NULL, NULL },
	{ "com_rdma_cm", 'z', OPT_REFUSE, NULL, NULL,
	  "not supported by penny: it exchanges the QP data over TCP on -p PORT (drop -z)",
	  NULL, NULL },
	{ "events", 'e', OPT_BOOL, &opt.events, NULL,
	  "accepted with a warning: penny polls the completion queue instead of sleeping on "
	  "its events (the same bandwidth, a busy CPU, a lower latency)", NULL, NULL },
	{ "sl", 'S', OPT_REFUSE_ARG, NULL, "SL",
	  "penny uses service level 0; another SL is not supported", NULL, NULL },
	{ "cq-mod", 'Q', OPT_REFUSE_ARG, NULL, "N",
	  "penny signals one work request in min(100, tx-depth/2); it cannot be set", NULL,
	  NULL },
	{ "post_list", 'l', OPT_REFUSE_ARG, NULL, "N",
	  "penny posts one work request at a time; use -t N for N in flight", NULL, NULL },
	{ "outs", 'o', OPT_REFUSE_ARG, NULL, "N",
	  "penny asks the device's maximum of outstanding reads; it cannot be set", NULL, NULL },
	{ "dualport", 'O', OPT_REFUSE, NULL, NULL,
	  "penny tests one port per device; test two with -d DEV:1 and -d DEV:2, or every "
	  "NIC with --all-rails", NULL, NULL },
	{ "rx-depth", 'r', OPT_REFUSE_ARG, NULL, "N",
	  "penny sizes the receive queue from -t N", NULL, NULL },
	{ "report-cycles", 'C', OPT_REFUSE, NULL, NULL,
	  "penny reports microseconds, not CPU cycles", NULL, NULL },
	{ "report-histogram", 'H', OPT_REFUSE, NULL, NULL,
	  "penny reports percentiles (--lat; --json for every field), not every sample", NULL,
	  NULL },
	{ "report-unsorted", 'U', OPT_REFUSE, NULL, NULL,
	  "penny reports percentiles (--lat; --json for every field), not every sample", NULL,
	  NULL },
	{ "atomic_type", 'A', OPT_REFUSE_ARG, NULL, "TYPE",
	  "penny has no atomic test: --op write, read or send", NULL, NULL },
	{ "mcg", 'g', OPT_REFUSE, NULL, NULL, "penny has no multicast test", NULL, NULL },
	{ "tos", 'T', OPT_REFUSE_ARG, NULL, "TOS",
	  "penny sets no traffic class (perftest's -T needs rdma_cm)", NULL, NULL },
	{ "hop_limit", 'L', OPT_REFUSE_ARG, NULL, "N", "penny sets no hop limit", NULL, NULL },
	{ "margin", 'f', OPT_REFUSE_ARG, NULL, "SEC",
	  "penny measures the whole -D SEC, without margins", NULL, NULL },
	{ "limit_msgrate", 'y', OPT_REFUSE_ARG, NULL, "MPPS",
	  "penny gates on bandwidth: -w BW, --min-gbps or --expect", NULL, NULL },
	{ "report-counters", 'W', OPT_REFUSE_ARG, NULL, "LIST",
	  "penny top shows the port counters while the test runs", NULL, NULL },
	{ "out_json", 0, OPT_REFUSE, NULL, NULL,
	  "not supported by penny: its report has penny's fields, not perftest's JSON; "
	  "--json writes it on standard output (--json >FILE)", NULL, NULL },
	{ "out_json_file", 0, OPT_REFUSE_ARG, NULL, "FILE",
	  "not supported by penny: its report has penny's fields, not perftest's JSON; "
	  "--json writes it on standard output (--json >FILE)", NULL, NULL },
	{ "gpu", 0, OPT_BOOL, &opt.gpu, NULL,
	  "GPU-to-GPU bandwidth and latency matrices of this host's GPUs (the cuda plugin), "
	  "like p2pBandwidthLatencyTest; -b: bidirectional only, --lat: latency only", NULL, NULL },
	{ "gpu-engine", 0, OPT_STRING, &opt.gpu_engine, "ENGINE",
	  "--gpu copies with ce (copy engines, default), sm (kernel loads and stores) or both",
	  "ce sm both", NULL },
	OPT_TABLE_END
};

struct bw {
	struct pn_ctx *ctx;
	struct pn_bwrun r;
	struct pn_bw_tally tally;	/* the links' verdicts (pn_bwrun_link_verdict) */
	int said;		/* the failure is told already: the exit status */
	char local[96], remote[96];	/* socket modes: the link's ends */
	double link;			/* and its rate */
};

static struct bw bw;	/* one run per process */

/* perftest's rule: 87 dashes */
static const char dashes[] = "-------------------------------------------------------------"
			     "--------------------------";

/* ------------------------------------------------------------- options */

/* An option or setup that cannot run (ret < 0): its line, exit 2; else 0. */
static int bw_fail2(struct pn_ctx *ctx, int ret)
{
	return ret ? pn_cmd_fail(ctx, 2, "%s", pn_errmsg(ret)) : 0;
}

/* --np: before the ranks are forked (options that do not parse are theirs
 * to report; -a's largest size is 8 MiB) */
int bw_prelaunch(struct pn_ctx *ctx, int np)
{
	if (opt.gpu || !pn_cli.mem_check)
		return 0;
	return bw_fail2(ctx, pn_bwrun_mem_ranks(np, opt.all ? 1ull << 23 : opt.size ==
						   PN_BW_SIZE_UNSET ? 65536 : opt.size));
}

/* --------------------------------------------------------------- output */

static void print_header(struct bw *b)
{
	const struct pn_bw_cfg *c = &b->r.cfg;
	struct pn_out *o = b->ctx->out;
	const char *op = c->op == PN_VERBS_WRITE ? "RDMA_Write"
			 : c->op == PN_VERBS_READ ? "RDMA_Read" : "Send";

	pn_out_open_object(o, NULL);
	pn_out_str(o, PN_JSON, "command", NULL, "bw");
	pn_out_str(o, PN_JSON, "mode", NULL, b->r.mode);
	pn_out_str(o, PN_JSON, "transport", NULL, b->r.tcp ? "tcp" : "verbs");
	pn_out_str(o, PN_JSON, "op", NULL, opt.op);
	pn_out_str(o, PN_JSON, "test", NULL, c->flags & PN_BW_LAT ? "latency" : "bandwidth");
	pn_out_bool(o, PN_JSON, "bidirectional", NULL, !!(c->flags & PN_BW_BIDIR));
	if (c->iters)
		pn_out_uint(o, PN_JSON, "iters", NULL, (unsigned long long)c->iters);
	else
		pn_out_float(o, PN_JSON, "duration_s", NULL, c->duration);
	pn_out_text(o, "%s\n%*s%s %s Test%s%s\n", dashes, 20, "",
		    b->r.tcp ? "TCP" : op, c->flags & PN_BW_LAT ? "Latency" : "BW",
		    c->flags & PN_BW_BIDIR ? " (bidirectional)" : "",
		    b->r.tcp ? " -- no RDMA, the TCP path" : "");
	if (b->r.tcp) {	/* one stream: no QPs, no queue depth */
		pn_out_text(o, " Transport       : TCP (one stream)\n Iterations      : ");
	} else {
		pn_out_int(o, PN_JSON, "qps", NULL, c->nqp);
		pn_out_int(o, PN_JSON, "tx_depth", NULL, c->tx_depth);
		pn_out_text(o, " Number of qps   : %-8u  Transport : RC (verbs)\n TX depth        : "
			       "%-8u  Iterations: ", c->nqp, c->tx_depth);
	}
	if (c->iters)
		pn_out_text(o, "%llu\n", (unsigned long long)c->iters);
	else
		pn_out_text(o, "for %g s per size\n", c->duration);
}

/* The text table's bandwidth unit and a value in it (perftest's MB/sec is 2^20 bytes/s). */
static const char *bw_unit(void)
{
	return opt.report_gbits ? "Gb/sec" : "MB/sec";
}

static double bw_in_unit(double gbps)
{
	return opt.report_gbits ? gbps : gbps * PN_BW_MIB_PER_GBIT;
}

/* One link's header (ends, rate, MTU, GID) and table head; its results follow. */
static void print_link(struct bw *b, const char *local, const char *remote, const char *rhost,
		       double gbps, const struct pn_bwrun_rail *r)
{
	struct pn_out *o = b->ctx->out;

	pn_out_str(o, PN_ANY, "local", " Link            : %s", local);
	pn_out_str(o, PN_ANY, "remote", " -> %s", remote);
	pn_out_str(o, PN_ANY, "remote_host", " (%s)\n", rhost);
	if (r && r->conn) {
		const struct pn_verbs_port_info *p = pn_verbs_dev_port(r->dev);

		pn_out_int(o, PN_ANY, "mtu", " Mtu             : %lld[B]",
			   pn_verbs_conn_mtu(r->conn));
		pn_out_int(o, PN_ANY, "gid_index", "   GID index : %lld", p->gid_index);
		pn_out_str(o, PN_ANY, "gid", " (%s)", p->gid_str);
		pn_out_str(o, PN_ANY, "link_layer", "  %s\n", p->ethernet ? "Ethernet" : "InfiniBand");
		pn_out_int(o, PN_ANY, "max_inline", " Max inline data : %lld[B]\n",
			   pn_verbs_conn_max_inline(r->conn));
		if (r->gpu)
			pn_out_str(o, PN_ANY, "gpu_memory", " GPU memory      : %s (dma-buf)\n",
				   pn_gpumem_describe(r->gpu));
	}
	if (gbps > 0) {
		pn_out_float(o, PN_ANY, "link_gbps", " Link rate       : %g Gb/s\n", gbps);
	} else {
		pn_out_null(o, PN_JSON, "link_gbps", NULL);
		pn_out_text(o, " Link rate       : unknown\n");
	}
	pn_out_text(o, "%s\n", dashes);
	/* perftest's column heads (RESULT_FMT_LAT, RESULT_FMT, RESULT_FMT_G) */
	if (b->r.cfg.flags & PN_BW_LAT)
		pn_out_text(o, " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    "
			       "t_avg[usec]    t_stdev[usec]   99%% percentile[usec]   "
			       "99.9%% percentile[usec] \n");
	else
		pn_out_text(o, " #bytes     #iterations    BW peak[%s]    BW average[%s]   "
			       "MsgRate[Mpps]\n", bw_unit(), bw_unit());
	pn_out_open_array(o, "results");
}

static void print_row(struct bw *b, const struct pn_bw_row *r, double link)
{
	struct pn_out *o = b->ctx->out;
	double pct = pn_bwrun_link_pct(&b->r.cfg, r->avg_gbps, link);
	double peak = opt.no_peak ? 0 : r->peak_gbps;

	pn_out_open_object(o, NULL);
	/* the text rows in perftest's layout (REPORT_FMT_LAT, REPORT_FMT) */
	if (b->r.cfg.flags & PN_BW_LAT) {
		pn_out_uint(o, PN_ANY, "bytes", " %-7llu", (unsigned long long)r->bytes);
		pn_out_uint(o, PN_ANY, "iterations", " %-11llu", (unsigned long long)r->iters);
		pn_out_float(o, PN_ANY, "lat_min_us", "  %-13.2f", r->lat_us[0]);
		pn_out_float(o, PN_ANY, "lat_max_us", "  %-13.2f", r->lat_us[5]);
		pn_out_float(o, PN_ANY, "lat_median_us", "  %-15.2f", r->lat_us[1]);
		pn_out_float(o, PN_ANY, "lat_avg_us", "  %-13.2f", r->lat_us[2]);
		pn_out_float(o, PN_ANY, "lat_stdev_us", "  %-15.2f", r->lat_us[6]);
		pn_out_float(o, PN_ANY, "lat_p99_us", "  %-22.2f", r->lat_us[3]);
		pn_out_float(o, PN_ANY, "lat_p999_us", "  %.2f\n", r->lat_us[4]);
	} else {
		pn_out_uint(o, PN_ANY, "bytes", " %-7llu", (unsigned long long)r->bytes);
		pn_out_uint(o, PN_ANY, "iterations", "    %-10llu", (unsigned long long)r->iters);
		pn_out_text(o, "       %-7.2f            %-7.2f            %.6f\n", bw_in_unit(peak),
			    bw_in_unit(r->avg_gbps), r->msg_rate_mpps);
		pn_out_float(o, PN_JSON, "bw_peak_gbps", NULL, peak);
		pn_out_float(o, PN_JSON, "bw_avg_gbps", NULL, r->avg_gbps);
		pn_out_float(o, PN_JSON, "bw_median_gbps", NULL, r->block_median_gbps);
		pn_out_float(o, PN_JSON, "bw_min_gbps", NULL, r->block_min_gbps);
		pn_out_float(o, PN_JSON, "bw_max_gbps", NULL, r->peak_gbps);
		pn_out_floats(o, "blocks_gbps", r->block_gbps, (size_t)PN_MIN(r->nblocks, PN_BW_BLOCKS));
		pn_out_float(o, PN_JSON, "msg_rate_mpps", NULL, r->msg_rate_mpps);
		pn_out_float(o, PN_JSON, "pct_of_link", NULL, pct);
		if (link > 0)
			pn_out_float(o, PN_JSON, "link_gbps", NULL, link);
		else
			pn_out_null(o, PN_JSON, "link_gbps", NULL);
	}
	pn_out_float(o, PN_JSON, "seconds", NULL, r->seconds);
	pn_out_close_object(o);
	fflush(pn_out_file(o));
}

/*
 * A link's results end with the gate: the average of the largest size
 * against --min-gbps or --expect (pn_bwrun_threshold).
 */
static void print_link_end(struct bw *b, const char *name, const struct pn_bw_row *r, double link)
{
	struct pn_out *o = b->ctx->out;
	struct pn_bw_link_verdict v;

	pn_out_close_array(o);
	/* perftest's table has no column for it: one line under the table */
	if (link > 0 && !(b->r.cfg.flags & PN_BW_LAT))
		pn_out_text(o, " Link use        : %.1f %% of %g Gb/s%s at %llu bytes\n",
			    pn_bwrun_link_pct(&b->r.cfg, r->avg_gbps, link), link, b->r.cfg.flags & PN_BW_BIDIR ? " x 2" : "",
			    (unsigned long long)r->bytes);
	pn_bwrun_link_verdict(&b->r.cfg, link, opt.min_gbps, opt.expect, name, r->avg_gbps,
			      &b->tally, &v);
	if (v.gated < 0) {
		pn_out_bool(o, PN_JSON, "passed", NULL, 0);
		pn_cmd_fail(b->ctx, 1, "%s: link rate unknown, cannot check --expect", name);
	} else if (v.gated) {
		pn_out_float(o, PN_JSON, "expect_gbps", NULL, v.want);
		pn_out_bool(o, PN_JSON, "passed", NULL, v.passed);
		char lim[64];

		/* the gate as the user gave it: -w in the table's unit */
		if (opt.limit_bw >= 0)
			snprintf(lim, sizeof(lim), "-w %g %s", opt.limit_bw, bw_unit());
		if (!v.passed)
			pn_cmd_fail(b->ctx, 1, "FAILED %s: %.3f Gb/s at %llu bytes is below "
					       "%.3f Gb/s (%s)", name, r->avg_gbps,
				    (unsigned long long)r->bytes, v.want,
				    opt.limit_bw >= 0 ? lim : v.why);
	}
	pn_out_close_object(o);
}

static void print_end(struct bw *b, int slowest)
{
	struct pn_out *o = b->ctx->out;

	pn_out_close_array(o);
	pn_out_text(o, "%s\n", dashes);
	if (slowest) {
		pn_out_str(o, PN_ANY, "slowest", " Slowest link    : %s", b->tally.slowest_name);
		pn_out_float(o, PN_ANY, "slowest_gbps", " (%.3f Gb/s)\n", b->tally.slowest);
	}
	pn_out_bool(o, PN_JSON, "passed", NULL, !b->tally.failed_links);
	pn_out_close_object(o);
}

/* ------------------------------------------------------- one link, socket */

static void sock_begin(void *arg, const struct pn_bwrun *r)
{
	struct bw *b = arg;

	if (r->tcp) {
		snprintf(b->local, sizeof(b->local), "tcp:%s", r->me.host);
		snprintf(b->remote, sizeof(b->remote), "tcp:%s", r->peer.host);
	} else {
		snprintf(b->local, sizeof(b->local), "%s", pn_verbs_dev_name(r->rails[0].dev));
		snprintf(b->remote, sizeof(b->remote), "%.40s", r->peer.dev[0]);
		b->link = r->initiator ? r->me.link_gbps[0] : r->peer.link_gbps[0];
	}
	print_header(b);
	pn_out_open_array(b->ctx->out, "links");
	pn_out_open_object(b->ctx->out, NULL);
	print_link(b, r->initiator ? b->local : b->remote, r->initiator ? b->remote : b->local,
		   r->peer.host, b->link, r->tcp ? NULL : &r->rails[0]);
}

static void sock_row(void *arg, const struct pn_bwrun *r, int k, const struct pn_bw_row *row)
{
	print_row(arg, row, ((struct bw *)arg)->link);
}

static void sock_end(void *arg, const struct pn_bwrun *r)
{
	struct bw *b = arg;
	char name[200];

	snprintf(name, sizeof(name), "%s -> %s", r->initiator ? b->local : b->remote,
		 r->initiator ? b->remote : b->local);
	print_link_end(b, name, &r->rails[0].rows[r->cfg.nsizes - 1], b->link);
	print_end(b, 0);
}

static void sock_waiting(void *arg, int port)
{
	if (!pn_cli.json)
		pn_cmd_say(((struct bw *)arg)->ctx, "waiting for a client on TCP port %d", port);
}

static void sock_refused(void *arg, const char *host, int port, double timeout)
{
	pn_cmd_say(((struct bw *)arg)->ctx, "%s port %d refused the connection; retrying "
		   "until the server listens (--timeout %g s)", host, port, timeout);
}

/* The server dropped a connection that was not a client of this version. */
static void bw_dropped(const char *who, const char *why)
{
	pn_cmd_say(bw.ctx, "dropped a connection from %s: %s", who, why);
}

/* A run cut short (a failure, a stop): --json ends its document with why. */
static void bw_cut(void *arg, const char *why)
{
	pn_out_end_error(bw.ctx->out, why);
	fflush(pn_out_file(bw.ctx->out));
}

static void loopback_failed(void *arg, const char *dev, int err)
{
	pn_cmd_say(((struct bw *)arg)->ctx, "loopback peer (%s): %s", dev, pn_errmsg(err));
}

/* -R, -e, the RDMA settings unused over TCP: once the options passed */
static void say_notes(struct bw *b)
{
	char u[256];
	int i;

	for (i = 0; pn_bw_opts_note(&opt, b->r.tcp, i, u, sizeof(u)); i++)
		if (u[0])
			pn_cmd_say(b->ctx, "%s", u);
}

/* ------------------------------------------------------------- launcher */

static int run_launcher(struct bw *b)
{
	struct pn_bwrun *r = &b->r;
	struct pn_out *o = b->ctx->out;
	int i, k, p, ret, differs = 0;

	/* the ranks join within --timeout (the test's own waits: pn_bwrun_launcher) */
	ret = pn_cmd_job_start(b->ctx, 0);
	if (ret)
		return ret;
	r->boot = b->ctx->job->boot;
	ret = pn_bwrun_agree(r, opt.all, &differs);
	if (!ret && b->ctx->job->rank == 0)
		say_notes(b);
	if (ret == -EINVAL) {
		/* rank 0 and the ranks that differ from it say which option and ranks */
		if (b->ctx->job->rank == 0 || differs)
			pn_cmd_fail(b->ctx, 2, "%s", pn_errmsg(ret));
		b->said = 2;
	}
	if (!ret)
		ret = pn_bwrun_launcher(r, opt.dev);
	/* rank 0 presents every link: pair p = ranks 2p (initiator) and 2p+1 */
	if (ret || r->rank != 0)
		return ret;
	print_header(b);
	pn_out_int(o, PN_JSON, "nranks", NULL, r->nranks);
	pn_out_open_array(o, "links");
	for (p = 0; p < r->nranks / 2; p++) {
		for (i = 0; i < pn_bwrun_pair_rails(r, p); i++) {
			struct pn_bwrun_pair_link l;

			pn_bwrun_pair_link(r, p, i, &l);
			pn_out_open_object(o, NULL);
			if (p || i)
				pn_out_text(o, "%s\n", dashes);
			pn_out_int(o, PN_JSON, "pair", NULL, p);
			pn_out_int(o, PN_JSON, "rank", NULL, 2 * p);
			pn_out_int(o, PN_JSON, "peer_rank", NULL, 2 * p + 1);
			pn_out_int(o, PN_JSON, "rail", NULL, i);
			pn_out_text(o, " Ranks           : %d -> %d, rail %d\n", 2 * p, 2 * p + 1, i);
			print_link(b, l.local, l.remote, l.rhost, l.gbps,
				   p == 0 && !r->tcp ? &r->rails[i] : NULL);
			for (k = 0; k < (int)r->cfg.nsizes; k++)
				print_row(b, &l.rows[k], l.gbps);
			print_link_end(b, l.name, &l.rows[r->cfg.nsizes - 1], l.gbps);
		}
	}
	print_end(b, opt.all_rails || r->nranks > 2);
	return 0;
}

/* ------------------------------------------------------------- the command */

int cmd_bw(struct pn_ctx *ctx, int argc, char **argv)
{
	struct pn_bwrun_ops ops = {
		.arg = &bw, .begin = sock_begin, .row = sock_row, .end = sock_end,
		.waiting = sock_waiting, .refused = sock_refused, .dropped = bw_dropped,
		.peer_failed = loopback_failed, .cut = bw_cut,
	};
	struct pn_cmd_job *job = ctx->job;
	struct bw *b = &bw;
	int ret, rc, rank0;

	b->ctx = ctx;
	if (opt.gpu) {
		struct pn_bwgpu_cfg g = {
			.bytes = opt.size == PN_BW_SIZE_UNSET ? 0 : opt.size, .iters = opt.iters,
			.engine = opt.gpu_engine, .bidir = opt.bidir, .lat = opt.lat,
		};

		/* one process: not --np, nor a rank of mpirun, srun or --rank */
		rc = pn_cmd_job_cfg(ctx);
		ret = rc ? 0 : pn_bw_opts_gpu(&opt, argc, ctx->launch || job->nranks > 1);
		return rc ? rc : ret ? bw_fail2(ctx, ret) : bw_gpu(ctx, &g);
	}
	pn_bwrun_init(&b->r);
	b->r.ops = &ops;
	b->r.timeout = pn_cli.timeout;
	pn_bw_opts_run(&opt, &b->r);
	rc = bw_fail2(ctx, pn_bw_opts_cfg(&opt, &b->r.cfg));
	/* this process (and the loopback peer it forks); --np checked them all */
	if (!rc && !ctx->launch && pn_cli.mem_check)
		rc = bw_fail2(ctx, pn_bwrun_mem_local(opt.loopback ? 2 : 1, &b->r.cfg));
	if (rc)
		return rc;
	ret = pn_bw_opts_args(&opt, opt.transport, argc, argv, &b->r.tcp);
	/* --expect is a share of the NIC's link rate: the TCP path has none */
	if (!ret && b->r.tcp && opt.expect)
		return pn_cmd_fail(ctx, 2, "--expect compares with the RDMA link rate, which "
				   "--transport tcp has not: gate with --min-gbps GBPS");
	if (ret || (ret = pn_bw_opts_devices(&opt)))
		return bw_fail2(ctx, ret);
	signal(SIGPIPE, SIG_IGN);
	rc = pn_cmd_job_cfg(ctx);
	if (rc)
		return rc;
	/*
	 * Ranks pair up (2k, 2k+1): an odd count is refused before anyone waits
	 * (rank 0 says so).  One rank of an outside launcher (srun -n 1) is a
	 * plain process: server, client or loopback; --np 1 or --nranks 1 is not.
	 */
	ret = pn_bw_opts_pairs(&opt, job->nranks, !ctx->launch && strcmp(job->cfg.launcher,
			       "explicit"), argc, job->cfg.launcher, &rank0);
	if (ret) {
		if (job->rank == 0 || !rank0)
			pn_cmd_error(ctx, ret);
		return 2;
	}
	if (job->nranks <= 1)
		say_notes(b);
	if (opt.loopback)
		ret = pn_bwrun_loopback(&b->r, opt.loopback);
	else if (argc == 1)
		ret = pn_bwrun_client(&b->r, opt.dev, opt.host, opt.port);
	else if (job->nranks > 1)
		ret = run_launcher(b);
	else
		ret = pn_bwrun_server(&b->r, opt.dev, opt.port);
	if (ret && b->said)
		rc = b->said;
	else if (ret && job->boot)
		rc = pn_cmd_fail(ctx, pn_exit_status(ret), "rank %d: %s", job->rank, pn_errmsg(ret));
	else if (ret)
		rc = pn_cmd_fail(ctx, pn_exit_status(ret), "%s", pn_errmsg(ret));
	else
		rc = b->tally.failed_links ? 1 : 0;
	pn_bwrun_release(&b->r);
	return rc;
}
