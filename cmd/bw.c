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
 * a CI gate.  The measurements are src/harness/bwtest.c; this file connects, agrees
 * and presents.
 */
#define _GNU_SOURCE
#include "penny.h"
#include "bw-gpu.h"

#include "engine/boot.h"
#include "harness/bwproto.h"
#include "harness/bwtest.h"
#include "gpu/gpumem.h"
#include "engine/jobparams.h"
#include "base/log.h"
#include "engine/mem.h"
#include "node/nic.h"
#include "transport/verbs.h"
#include "base/util.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_RAILS PN_BW_MAX_RAILS

static const char *opt_dev, *opt_op = "write", *opt_loopback, *opt_expect;
static int opt_ibport, opt_gid = -1, opt_all, opt_iters = -1, opt_qps = 1, opt_bidir;
static int opt_mtu, opt_lat, opt_txdepth = 128, opt_port = 18515, opt_all_rails;
static int opt_inline = -1, opt_use_cuda = -1;
#define SIZE_UNSET UINT64_MAX
static uint64_t opt_size = SIZE_UNSET; /* 65536 (RDMA) or 256 MiB (--gpu) when not given */
static int opt_gpu;
static const char *opt_gpu_engine;
static double opt_duration, opt_min_gbps = -1;

const struct pn_opt bw_options[] = {
	{ "ib-dev", 'd', OPT_STRING, &opt_dev, "DEV[:PORT]",
	  "RDMA device and port (default: the first with an ACTIVE port); a comma list with "
	  "--all-rails", NULL, OPT_LIST },
	{ "ib-port", 'i', OPT_INT, &opt_ibport, "PORT", "port of the device (default 1)", NULL,
	  OPT_RANGE(1, 255) },
	{ "gid-index", 'x', OPT_INT, &opt_gid, "INDEX",
	  "GID index (default: an IPv4-mapped RoCE v2 GID; both sides must agree)", NULL,
	  OPT_RANGE(0, 255) },
	{ "size", 's', OPT_SIZE, &opt_size, "SIZE",
	  "message size (default 65536; --gpu: bytes per copy, 4K..1G, default 256M)", NULL,
	  OPT_RANGE(0, 1 << 30) },
	{ "all", 'a', OPT_BOOL, &opt_all, NULL, "every size from 2 bytes to 8 MiB", NULL, NULL },
	{ "iters", 'n', OPT_INT, &opt_iters, "N",
	  "operations per size (default 5000; latency 1000)", NULL, OPT_RANGE(1, 1000000000) },
	{ "duration", 'D', OPT_SECONDS, &opt_duration, "SEC", "run each size for SEC seconds",
	  NULL, OPT_RANGE(0.1, 86400) },
	{ "qp", 'q', OPT_INT, &opt_qps, "QPS", "queue pairs (default 1)", NULL,
	  OPT_RANGE(1, PN_VERBS_MAX_QPS) },
	{ "bidirectional", 'b', OPT_BOOL, &opt_bidir, NULL,
	  "both sides send at once (the sum is reported)", NULL, NULL },
	{ "mtu", 0, OPT_INT, &opt_mtu, "BYTES",
	  "path MTU: 256, 512, 1024, 2048 or 4096 (default: the ports')",
	  "256 512 1024 2048 4096", OPT_RANGE(256, 4096) },
	{ "op", 0, OPT_STRING, &opt_op, "OP", "write (default), read or send",
	  "write read send", NULL },
	{ "lat", 0, OPT_BOOL, &opt_lat, NULL,
	  "latency instead of bandwidth: min, median, average, p99, p99.9, max", NULL, NULL },
	{ "tx-depth", 't', OPT_INT, &opt_txdepth, "N",
	  "operations in flight per QP (default 128)", NULL, OPT_RANGE(1, 8192) },
	{ "inline-size", 'I', OPT_INT, &opt_inline, "BYTES",
	  "send writes and sends of up to BYTES inline (default 220 with --lat, else 0)", NULL,
	  OPT_RANGE(0, 4096) },
	{ "use_cuda", 0, OPT_INT, &opt_use_cuda, "GPU",
	  "the test buffers in the memory of GPU (an index), registered as a dma-buf "
	  "(GPUDirect RDMA, like perftest's --use_cuda); needs the cuda plugin", NULL,
	  OPT_RANGE(0, 1023) },
	{ "port", 'p', OPT_INT, &opt_port, "PORT",
	  "TCP port of the server (default 18515)", NULL, OPT_RANGE(1, 65535) },
	{ "loopback", 0, OPT_STRING, &opt_loopback, "DEV1[,DEV2]",
	  "both ends in this host: on one device, or a link between two", NULL, OPT_LIST },
	{ "all-rails", 0, OPT_BOOL, &opt_all_rails, NULL,
	  "under a launcher: test every NIC pair of the same index at once", NULL, NULL },
	{ "expect", 0, OPT_OPTSTRING, &opt_expect, "PCT",
	  "fail (exit 1) below PCT % of the link rate, doubled when bidirectional (default 90)",
	  NULL, OPT_RANGE(1, 100) },
	{ "min-gbps", 0, OPT_DOUBLE, &opt_min_gbps, "GBPS", "fail (exit 1) below GBPS Gb/s",
	  NULL, OPT_RANGE(0, 1e9) },
	{ "gpu", 0, OPT_BOOL, &opt_gpu, NULL,
	  "GPU-to-GPU bandwidth and latency matrices of this host's GPUs (the cuda plugin), "
	  "like p2pBandwidthLatencyTest; -b: bidirectional only, --lat: latency only", NULL, NULL },
	{ "gpu-engine", 0, OPT_STRING, &opt_gpu_engine, "ENGINE",
	  "--gpu copies with ce (copy engines, default), sm (kernel loads and stores) or both",
	  "ce sm both", NULL },
	OPT_TABLE_END
};

struct rail {
	struct pn_gpumem *gpu;		/* --use_cuda: the buffer is GPU memory */
	struct pn_verbs_dev *dev;
	struct pn_verbs_conn *conn;
	struct pn_bw_link link;
	struct pn_bw_row rows[PN_BW_MAX_SIZES]; /* this side's measurement per size */
	int ret;
	char err[256];
};

struct bw {
	struct pn_ctx *ctx;
	struct pn_bw_cfg cfg;
	int tcp;
	int initiator;
	int nrails;
	struct rail rails[MAX_RAILS];
	char devs[MAX_RAILS][40];
	int ndevs;
	struct pn_bw_hello me, peer;
	/* socket modes */
	int fd;
	const char *mode;	/* "server", "client", "loopback", "launcher" */
	/* launcher */
	struct pn_boot *boot;
	int rank, nranks;
	int print;		/* this process presents */
	int quiet;		/* the loopback peer: no gate lines either */
	int failed_links;
	int said;		/* the failure is told already: the exit status */
	double slowest;
	char slowest_name[96];
};

/* ------------------------------------------------------------- options */

static int parse_cfg(struct bw *b)
{
	struct pn_bw_cfg *c = &b->cfg;
	int i;

	pn_bw_cfg_init(c);
	if (opt_size == SIZE_UNSET)
		opt_size = 65536;
	if (opt_gpu_engine)
		return pn_cmd_fail(b->ctx, 2, "--gpu-engine goes with --gpu");
	if (!strcmp(opt_op, "write"))
		c->op = PN_VERBS_WRITE;
	else if (!strcmp(opt_op, "read"))
		c->op = PN_VERBS_READ;
	else if (!strcmp(opt_op, "send"))
		c->op = PN_VERBS_SEND;
	else
		return pn_cmd_fail(b->ctx, 2, "--op must be write, read or send, not '%s'", opt_op);
	if (opt_lat)
		c->flags |= PN_BW_LAT;
	if (opt_bidir)
		c->flags |= PN_BW_BIDIR;
	/*
	 * Ranges are the table's (-q -t -I -n -D -p -s --mtu --use_cuda
	 * --expect); the initial values -1 and 0 mean "not given".
	 */
	if (opt_lat && opt_bidir)
		return pn_cmd_fail(b->ctx, 2, "--lat and -b do not go together");
	if (opt_lat && opt_qps != 1)
		return pn_cmd_fail(b->ctx, 2, "--lat uses one QP");
	if (opt_use_cuda >= 0 && opt_lat)
		return pn_cmd_fail(b->ctx, 2, "--use_cuda measures bandwidth; --lat polls host memory");
	if (opt_mtu && !pn_verbs_mtu_valid(opt_mtu))
		return pn_cmd_fail(b->ctx, 2, "--mtu must be 256, 512, 1024, 2048 or 4096");
	if (opt_duration > 0 && opt_iters > 0)
		return pn_cmd_fail(b->ctx, 2, "-n and -D exclude each other");
	if (opt_duration > 0 && opt_lat)
		return pn_cmd_fail(b->ctx, 2, "--lat counts iterations (-n), not seconds");
	c->nqp = (uint32_t)opt_qps;
	c->tx_depth = (uint32_t)opt_txdepth;
	c->mtu = (uint32_t)opt_mtu;
	c->iters = opt_duration > 0 ? 0 : opt_iters > 0 ? (uint64_t)opt_iters : opt_lat ? 1000 : 5000;
	c->duration = opt_duration;
	if (opt_all) {
		for (i = 1; i <= 23; i++)
			c->sizes[c->nsizes++] = 1ull << i;
	} else {
		if (opt_lat && !opt_size)
			return pn_cmd_fail(b->ctx, 2, "--lat needs -s of at least 1");
		c->sizes[c->nsizes++] = opt_size;
	}
	return 0;
}

/*
 * Planned memory (src/engine/mem.h): every rank holds twice the largest size per
 * rail (pn_bw_buflen: the verbs buffer; tcp needs one size), one rail
 * counted (the devices are not picked yet).
 */
static int bw_mem_fail(struct pn_ctx *ctx, int nlocal, uint64_t buflen, uint64_t base)
{
	struct pn_mem_job mj = { .nlocal = nlocal, .private_bytes = buflen, .base_bytes = base };
	int ret = pn_mem_check(&mj);

	return ret ? pn_cmd_fail(ctx, 2, "%s", pn_errmsg(ret)) : 0;
}

/* --np: before the ranks are forked (options that do not parse are theirs
 * to report; -a's largest size is 8 MiB) */
int bw_prelaunch(struct pn_ctx *ctx, int np)
{
	uint64_t max = opt_all ? 1ull << 23 : opt_size == SIZE_UNSET ? 65536 : opt_size;

	if (opt_gpu)
		return 0;
	return bw_mem_fail(ctx, np, max > UINT64_MAX / 2 ? UINT64_MAX : 2 * max, PN_MEM_RANK_BASE);
}

static int list_len(const char *list)
{
	int n = 1;

	for (; *list; list++)
		n += *list == ',';
	return n;
}

/* -d and --loopback name what their mode uses (no empty element: the table). */
static int check_devices(struct pn_ctx *ctx)
{
	int nd = opt_dev ? list_len(opt_dev) : 0;

	if (opt_loopback && list_len(opt_loopback) > 2)
		return pn_cmd_fail(ctx, 2, "--loopback takes DEV1 or DEV1,DEV2, not '%s'",
				   opt_loopback);
	if (opt_loopback && opt_dev)
		return pn_cmd_fail(ctx, 2, "--loopback names the devices; -d is for the other modes");
	if (nd > MAX_RAILS)
		return pn_cmd_fail(ctx, 2, "-d names %d devices, at most %d", nd, MAX_RAILS);
	if (nd > 1 && !opt_all_rails)
		return pn_cmd_fail(ctx, 2, "-d names %d devices: a list is for --all-rails", nd);
	return 0;
}

static int transport_tcp(struct bw *b)
{
	const char *t = pn_cli.transport;

	if (!t || !strcmp(t, "verbs"))
		return 0;
	if (!strcmp(t, "tcp"))
		return 1;
	return pn_cmd_fail(b->ctx, -2, "penny bw measures verbs or tcp, not '%s'", t);
}

/* The devices to use: -d list, else every device with an ACTIVE port. */
static int pick_devices(struct bw *b, const char *list)
{
	struct pn_nic_list l;
	int i, j, ret;

	b->ndevs = 0;
	ret = pn_nic_list_read(&l);
	if (ret)
		return ret;
	i = l.n;
	pn_nic_list_release(&l);
	if (!i)
		return pn_err(-ENODEV, "no RDMA devices (--transport tcp measures the TCP path "
				       "instead)");
	if (list && list[0]) {
		char *dup = strdup(list), *tok, *save = NULL;

		if (!dup)
			return pn_err(-ENOMEM, "out of memory");
		for (tok = strtok_r(dup, ",", &save); tok && b->ndevs < MAX_RAILS;
		     tok = strtok_r(NULL, ",", &save)) {
			if (opt_ibport && !strchr(tok, ':'))
				snprintf(b->devs[b->ndevs++], sizeof(b->devs[0]), "%s:%d", tok,
					 opt_ibport);
			else
				snprintf(b->devs[b->ndevs++], sizeof(b->devs[0]), "%s", tok);
		}
		free(dup);
		return b->ndevs ? 0 : pn_err(-EINVAL, "no device in '%s'", list);
	}
	ret = pn_nic_list_read(&l);
	if (ret)
		return ret;
	for (i = 0; i < l.n && b->ndevs < MAX_RAILS; i++)
		for (j = 0; j < l.nics[i].nports; j++) {
			const struct pn_port *p = &l.nics[i].ports[j];

			if (p->state != PN_PORT_ACTIVE || (opt_ibport && p->port != opt_ibport))
				continue;
			snprintf(b->devs[b->ndevs++], sizeof(b->devs[0]), "%s:%d", l.nics[i].name,
				 p->port);
			break;
		}
	pn_nic_list_release(&l);
	if (!b->ndevs)
		return pn_err(-ENODEV, "no RDMA device has an ACTIVE port (--transport tcp "
				       "measures the TCP path instead)");
	return 0;
}

/* ------------------------------------------------------------ the rails */

static int open_rail(struct bw *b, struct rail *r, const char *spec)
{
	struct pn_verbs_dev_cfg dc;
	struct pn_verbs_conn_cfg cc;
	size_t len = pn_bw_buflen(&b->cfg);
	int ret;

	pn_verbs_dev_cfg_init(&dc);
	dc.gid_index = opt_gid;
	ret = pn_verbs_dev_open(&r->dev, spec, &dc);
	if (ret)
		return ret;
	pn_verbs_conn_cfg_init(&cc);
	cc.nqp = (int)b->cfg.nqp;
	cc.sq_depth = (int)b->cfg.tx_depth + 1;
	cc.rq_depth = (int)b->cfg.tx_depth + 2;
	cc.mtu = (int)b->cfg.mtu;
	cc.timeout = pn_cli.timeout;
	/* a benchmark polls like perftest; sleeping on the channel costs wakeups */
	cc.spin_us = 1000000;
	/* like perftest: small latency messages go inline (the device may
	 * allow less; the connection takes its limit) */
	cc.max_inline = opt_inline >= 0 ? opt_inline : opt_lat && b->cfg.op != PN_VERBS_READ ? 220 : 0;
	ret = pn_verbs_conn_create(&r->conn, r->dev, &cc);
	if (ret)
		return ret;
	r->link.conn = r->conn;
	r->link.cfg = &b->cfg;
	r->link.buflen = len;
	if (opt_use_cuda >= 0) {
		ret = pn_gpumem_open(&r->gpu, "cuda", opt_use_cuda, len);
		if (!ret)
			ret = pn_gpumem_register(r->gpu, r->dev);
		if (ret)
			return ret;
		r->link.buf = pn_gpumem_ptr(r->gpu);
		return pn_verbs_conn_expose(r->conn, r->link.buf, len);
	}
	r->link.buf = calloc(1, len);
	if (!r->link.buf)
		return pn_err(-ENOMEM, "out of memory");
	return pn_verbs_conn_expose(r->conn, r->link.buf, len);
}

static void close_rail(struct rail *r)
{
	if (r->conn)
		pn_verbs_conn_free(r->conn);
	if (r->dev) {
		if (r->link.buf)
			pn_verbs_invalidate(r->dev, r->link.buf, r->link.buflen);
		pn_verbs_dev_close(r->dev);
	}
	if (r->gpu)
		pn_gpumem_close(r->gpu);
	else
		free(r->link.buf);
	memset(r, 0, sizeof(*r));
}

static void hello_init(struct bw *b)
{
	int i;

	memset(&b->me, 0, sizeof(b->me));
	b->me.tcp = (uint32_t)b->tcp;
	b->me.nrails = (uint32_t)b->nrails;
	b->me.cfg = b->cfg;
	snprintf(b->me.host, sizeof(b->me.host), "%s", pn_hostname());
	for (i = 0; i < b->nrails && !b->tcp; i++) {
		const struct pn_verbs_port_info *p = pn_verbs_dev_port(b->rails[i].dev);

		snprintf(b->me.dev[i], sizeof(b->me.dev[i]), "%s", pn_verbs_dev_name(b->rails[i].dev));
		b->me.link_gbps[i] = p->rate_gbps;
		pn_verbs_conn_info(b->rails[i].conn, &b->me.info[i]);
	}
}

/* After the exchange: the peer agrees with us, then the QPs are connected. */
static int agree_and_connect(struct bw *b)
{
	const struct pn_bw_hello *p = &b->peer;
	int i, ret;

	if (p->err[0])
		return pn_err(-EIO, "the peer on %.64s failed: %.160s", p->host, p->err);
	if (p->tcp != (uint32_t)b->tcp)
		return pn_err(-EINVAL, "--transport: %s here, %s on the peer", b->tcp ? "tcp" : "verbs",
			      p->tcp ? "tcp" : "verbs");
	ret = pn_bw_cfg_check(&b->cfg, &p->cfg);
	if (ret)
		return pn_err_ctx(ret, "the two sides disagree");
	if (b->tcp)
		return 0;
	b->nrails = PN_MIN(b->nrails, (int)p->nrails);
	for (i = 0; i < b->nrails; i++) {
		ret = pn_verbs_conn_connect(b->rails[i].conn, &p->info[i]);
		if (ret)
			return ret;
		ret = pn_bw_prepare(&b->rails[i].link);
		if (ret)
			return ret;
		b->rails[i].link.initiator = b->initiator;
	}
	return 0;
}

/* --------------------------------------------------------------- output */

static const char *test_title(const struct bw *b)
{
	static char t[96];
	const char *op = b->cfg.op == PN_VERBS_WRITE ? "RDMA_Write"
			 : b->cfg.op == PN_VERBS_READ ? "RDMA_Read" : "Send";

	if (b->tcp)
		op = "TCP";
	snprintf(t, sizeof(t), "%s %s Test%s%s", op, b->cfg.flags & PN_BW_LAT ? "Latency" : "BW",
		 b->cfg.flags & PN_BW_BIDIR ? " (bidirectional)" : "",
		 b->tcp ? " -- no RDMA, the TCP path" : "");
	return t;
}

static void print_header(struct bw *b)
{
	struct pn_out *o = b->ctx->out;
	const char *line = "---------------------------------------------------------------------"
			   "------------------------------";

	pn_out_str(o, PN_JSON, "command", NULL, "bw");
	pn_out_str(o, PN_JSON, "mode", NULL, b->mode);
	pn_out_str(o, PN_JSON, "transport", NULL, b->tcp ? "tcp" : "verbs");
	pn_out_str(o, PN_JSON, "op", NULL, opt_op);
	pn_out_str(o, PN_JSON, "test", NULL, b->cfg.flags & PN_BW_LAT ? "latency" : "bandwidth");
	pn_out_bool(o, PN_JSON, "bidirectional", NULL, !!(b->cfg.flags & PN_BW_BIDIR));
	pn_out_int(o, PN_JSON, "qps", NULL, b->cfg.nqp);
	pn_out_int(o, PN_JSON, "tx_depth", NULL, b->cfg.tx_depth);
	if (b->cfg.iters)
		pn_out_uint(o, PN_JSON, "iters", NULL, (unsigned long long)b->cfg.iters);
	else
		pn_out_float(o, PN_JSON, "duration_s", NULL, b->cfg.duration);
	pn_out_text(o, "%s\n%*s%s\n", line, 20, "", test_title(b));
	pn_out_text(o, " Number of qps   : %-8u  Transport : %s\n", b->cfg.nqp,
		    b->tcp ? "TCP" : "RC (verbs)");
	pn_out_text(o, " TX depth        : %-8u  Iterations: ", b->cfg.tx_depth);
	if (b->cfg.iters)
		pn_out_text(o, "%llu\n", (unsigned long long)b->cfg.iters);
	else
		pn_out_text(o, "for %g s per size\n", b->cfg.duration);
}

/* Link header: local and remote ends, rate, MTU, GID. */
static void print_link(struct bw *b, const char *local, const char *remote, const char *rhost,
		       double gbps, const struct rail *r)
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
}

static void print_table_head(struct bw *b)
{
	struct pn_out *o = b->ctx->out;

	pn_out_text(o, "------------------------------------------------------------------------"
		       "---------------------------\n");
	if (b->cfg.flags & PN_BW_LAT)
		pn_out_text(o, " #bytes #iterations   t_min[usec] t_median[usec]  t_avg[usec]  "
			       "t_p99[usec] t_p99.9[usec]  t_max[usec]\n");
	else
		pn_out_text(o, " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   "
			       "MsgRate[Mpps]   %% of link\n");
}

static void print_row(struct bw *b, const struct pn_bw_row *r, double link)
{
	struct pn_out *o = b->ctx->out;
	double pct = link > 0 ? r->avg_gbps / (link * (b->cfg.flags & PN_BW_BIDIR ? 2 : 1)) * 100
			      : NAN;

	pn_out_open_object(o, NULL);
	if (b->cfg.flags & PN_BW_LAT) {
		pn_out_uint(o, PN_ANY, "bytes", " %-6llu", (unsigned long long)r->bytes);
		pn_out_uint(o, PN_ANY, "iterations", " %-11llu", (unsigned long long)r->iters);
		pn_out_float(o, PN_ANY, "lat_min_us", " %13.2f", r->lat_us[0]);
		pn_out_float(o, PN_ANY, "lat_median_us", " %14.2f", r->lat_us[1]);
		pn_out_float(o, PN_ANY, "lat_avg_us", " %12.2f", r->lat_us[2]);
		pn_out_float(o, PN_ANY, "lat_p99_us", " %12.2f", r->lat_us[3]);
		pn_out_float(o, PN_ANY, "lat_p999_us", " %13.2f", r->lat_us[4]);
		pn_out_float(o, PN_ANY, "lat_max_us", " %12.2f\n", r->lat_us[5]);
	} else {
		pn_out_uint(o, PN_ANY, "bytes", " %-10llu", (unsigned long long)r->bytes);
		pn_out_uint(o, PN_ANY, "iterations", " %-14llu", (unsigned long long)r->iters);
		pn_out_float(o, PN_ANY, "bw_peak_gbps", " %-18.3f", r->peak_gbps);
		pn_out_float(o, PN_ANY, "bw_avg_gbps", " %-20.3f", r->avg_gbps);
		pn_out_float(o, PN_ANY, "msg_rate_mpps", " %-15.6f", r->msg_rate_mpps);
		pn_out_float(o, PN_ANY, "pct_of_link", " %9.1f\n", pct);
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
 * The gate: the average of the largest size against --min-gbps or --expect.
 * Returns 1 when the link passes (or no gate was asked for).
 */
static int gate(struct bw *b, const char *name, const struct pn_bw_row *r, double link)
{
	double want = -1, got = r->avg_gbps, pct = 90;
	struct pn_out *o = b->ctx->out;
	char why[160] = "";

	if (!b->slowest_name[0] || got < b->slowest) {
		b->slowest = got;
		snprintf(b->slowest_name, sizeof(b->slowest_name), "%s", name);
	}
	if (b->cfg.flags & PN_BW_LAT)
		return 1;
	if (opt_min_gbps >= 0) {
		want = opt_min_gbps;
		snprintf(why, sizeof(why), "--min-gbps %g", opt_min_gbps);
	} else if (opt_expect) {
		if (opt_expect[0])
			pn_parse_double(opt_expect, &pct);
		if (link <= 0) {
			pn_out_bool(o, PN_JSON, "passed", NULL, 0);
			if (!b->quiet)
				fprintf(stderr, "penny bw: %s: link rate unknown, cannot check --expect\n",
					name);
			b->failed_links++;
			return 0;
		}
		want = pct / 100 * link * (b->cfg.flags & PN_BW_BIDIR ? 2 : 1);
		snprintf(why, sizeof(why), "%g%% of %g Gb/s%s", pct, link,
			 b->cfg.flags & PN_BW_BIDIR ? " x 2 directions" : "");
	}
	if (want < 0)
		return 1;
	pn_out_float(o, PN_JSON, "expect_gbps", NULL, want);
	pn_out_bool(o, PN_JSON, "passed", NULL, got >= want);
	if (got >= want)
		return 1;
	if (!b->quiet)
		fprintf(stderr, "penny bw: FAILED %s: %.3f Gb/s at %llu bytes is below %.3f Gb/s "
				"(%s)\n", name, got, (unsigned long long)r->bytes, want, why);
	b->failed_links++;
	return 0;
}

/*
 * How long the passive side may wait for the active one to finish: the
 * timeout plus the test itself, at no less than 1 MB/s and 1 ms per
 * operation (a bound for a hung peer; a dead one closes the connection).
 */
static double run_bound(const struct pn_bw_cfg *c, int k0, int k1)
{
	double t = pn_cli.timeout;
	int k;

	for (k = k0; k < k1; k++)
		t += c->iters ? (double)c->iters * ((double)c->sizes[k] / 1e6 + 1e-3) *
					(c->flags & PN_BW_BIDIR ? 2 : 1)
			      : c->duration + 1;
	return t;
}

/* ------------------------------------------------------- one link, socket */

/* Socket modes: one rail, per-size sync and rows exchanged over fd. */
static int run_socket(struct bw *b)
{
	struct pn_out *o = b->ctx->out;
	struct rail *r = &b->rails[0];
	char local[96], remote[96];
	double link = 0;
	int k, ret;

	b->print = 1;
	if (b->tcp) {
		snprintf(local, sizeof(local), "tcp:%s", b->me.host);
		snprintf(remote, sizeof(remote), "tcp:%s", b->peer.host);
	} else {
		snprintf(local, sizeof(local), "%s", pn_verbs_dev_name(r->dev));
		snprintf(remote, sizeof(remote), "%.40s", b->peer.dev[0]);
		link = b->initiator ? b->me.link_gbps[0] : b->peer.link_gbps[0];
	}
	pn_out_open_object(o, NULL);
	print_header(b);
	pn_out_open_array(o, "links");
	pn_out_open_object(o, NULL);
	if (b->initiator)
		print_link(b, local, remote, b->peer.host, link, b->tcp ? NULL : r);
	else
		print_link(b, remote, local, b->peer.host, link, b->tcp ? NULL : r);
	print_table_head(b);
	pn_out_open_array(o, "results");
	for (k = 0; k < (int)b->cfg.nsizes; k++) {
		struct pn_bw_row mine, theirs, *shown;
		int ok = 1, peer_ok = 0;

		ret = pn_bw_xchg_fd(b->fd, &ok, &peer_ok, sizeof(ok), pn_cli.timeout);
		if (ret)
			goto out;
		if (b->tcp)
			ret = pn_bw_tcp_run(b->fd, &b->cfg, b->initiator, k, pn_cli.timeout, &mine);
		else if (b->cfg.flags & PN_BW_LAT)
			ret = pn_bw_run_lat(&r->link, k, &mine);
		else
			ret = pn_bw_run(&r->link, k, &mine);
		if (ret)
			goto out;
		ret = pn_bw_xchg_fd(b->fd, &mine, &theirs, sizeof(mine), run_bound(&b->cfg, k, k + 1));
		if (ret)
			goto out;
		shown = b->initiator ? &mine : &theirs;
		if (b->cfg.flags & PN_BW_BIDIR)
			pn_bw_row_add(shown, b->initiator ? &theirs : &mine);
		r->rows[k] = *shown;
		print_row(b, shown, link);
	}
	pn_out_close_array(o);
	{
		char name[200];

		snprintf(name, sizeof(name), "%s -> %s", b->initiator ? local : remote,
			 b->initiator ? remote : local);
		gate(b, name, &r->rows[b->cfg.nsizes - 1], link);
	}
	pn_out_close_object(o);
	pn_out_close_array(o);
	pn_out_text(o, "------------------------------------------------------------------------"
		       "---------------------------\n");
	pn_out_bool(o, PN_JSON, "passed", NULL, !b->failed_links);
	pn_out_close_object(o);
	ret = 0;
out:
	return ret;
}

/* Exchange hellos over fd (only send ours when the server read the peer's); agree, connect. */
static int socket_handshake(struct bw *b, int have_peer)
{
	int ret;

	hello_init(b);
	ret = pn_bw_hello_send(b->fd, &b->me, pn_cli.timeout);
	if (ret)
		return pn_err_ctx(ret, "exchanging the setup with the peer");
	if (!have_peer) {
		ret = pn_bw_hello_recv(b->fd, &b->peer, pn_cli.timeout);
		if (ret == -EPIPE || ret == -ETIMEDOUT || ret == -ECONNRESET)
			return pn_err_ctx(ret, "exchanging the setup with the peer");
		if (ret)
			return ret;
	}
	ret = agree_and_connect(b);
	if (ret)
		return ret;
	/* both sides connected their QPs before anyone sends */
	{
		int ok = 1, peer_ok = 0;

		ret = pn_bw_xchg_fd(b->fd, &ok, &peer_ok, sizeof(ok), pn_cli.timeout);
	}
	return ret;
}

/* Open the rails of this side (verbs). */
static int open_rails(struct bw *b, int n)
{
	int i, ret;

	b->nrails = PN_MIN(n, b->ndevs);
	for (i = 0; i < b->nrails; i++) {
		ret = open_rail(b, &b->rails[i], b->devs[i]);
		if (ret)
			return ret;
	}
	return 0;
}

/* Tell the peer why we cannot go on (best effort), so it does not wait. */
static void send_failure(struct bw *b, int code)
{
	struct pn_bw_hello h;
	uint8_t *w = malloc(PN_BW_HELLO_LEN);

	memset(&h, 0, sizeof(h));
	snprintf(h.host, sizeof(h.host), "%s", pn_hostname());
	snprintf(h.err, sizeof(h.err), "%s", pn_errmsg(code));
	if (!w)
		return;
	pn_bw_hello_encode(&h, w);
	if (send(b->fd, w, PN_BW_HELLO_LEN, MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
		w[0] = 0;
	free(w);
}

static int socket_side(struct bw *b, const char *devspec, int have_peer)
{
	int ret;

	if (!b->tcp) {
		ret = pick_devices(b, devspec);
		if (!ret)
			ret = open_rails(b, 1);
		if (ret) {
			send_failure(b, ret);
			return ret;
		}
	}
	ret = socket_handshake(b, have_peer);
	if (!ret)
		ret = run_socket(b);
	return ret;
}

/* ------------------------------------------------------------- launcher */

struct gathered {
	struct pn_bw_row rows[MAX_RAILS][PN_BW_MAX_SIZES];
};

static int boot_xchg(struct bw *b, const void *mine, void *theirs, size_t len, void **all_out)
{
	void *all = calloc((size_t)b->nranks, len);
	int ret;

	if (!all)
		return pn_err(-ENOMEM, "out of memory");
	ret = pn_boot_allgather(b->boot, mine, all, len);
	if (!ret && theirs)
		memcpy(theirs, (char *)all + (size_t)(b->rank ^ 1) * len, len);
	if (!ret && all_out)
		*all_out = all;
	else
		free(all);
	return ret;
}

static void *rail_thread(void *arg)
{
	struct rail *r = arg;
	int k;

	for (k = 0; k < (int)r->link.cfg->nsizes && !r->ret; k++)
		r->ret = pn_bw_run(&r->link, k, &r->rows[k]);
	if (r->ret)
		snprintf(r->err, sizeof(r->err), "%s: %s", pn_verbs_dev_name(pn_verbs_conn_dev(r->conn)),
			 pn_errmsg(r->ret));
	return NULL;
}

/* Data connection for TCP under a launcher: the even rank listens. */
static int launcher_tcp(struct bw *b, int *lfd)
{
	struct sockaddr_storage ss;
	unsigned sl = sizeof(ss);
	char addr[64] = "127.0.0.1";
	int port = 0;

	if (!pn_boot_local_addr(b->boot, &ss, &sl))
		pn_sock_addr_name(&ss, addr, sizeof(addr), 0);
	if (b->initiator) {
		*lfd = pn_bw_listen(addr, 0, &port);
		if (*lfd < 0)
			return *lfd;
	}
	snprintf(b->me.addr, sizeof(b->me.addr), "%s", addr);
	b->me.port_tcp = (uint32_t)port;
	return 0;
}

/*
 * Under a launcher every rank runs the same test: the settings that shape
 * it are compared across all ranks before any connects (per-rank ones, -d
 * -i -x --use_cuda, and the gate rank 0 alone applies, are not).  A
 * mismatch fails every rank with exit 2; rank 0 and the ranks that differ
 * from it say which option and ranks.
 */
static int agree_params(struct bw *b)
{
	const struct pn_bw_cfg *c = &b->cfg;
	struct pn_job_param p[PN_JOB_MAX_PARAMS];
	int n = 0, differs, ret;

	if (opt_all)
		pn_job_param_set(&p[n++], "-s", "-a (2..8M)");
	else
		pn_job_param_set(&p[n++], "-s", "%llu", (unsigned long long)c->sizes[0]);
	if (c->iters)
		pn_job_param_set(&p[n++], "-n", "%llu", (unsigned long long)c->iters);
	else
		pn_job_param_set(&p[n++], "-n", "none (-D)");
	if (c->duration > 0)
		pn_job_param_set(&p[n++], "-D", "%.15g", c->duration);
	else
		pn_job_param_set(&p[n++], "-D", "none");
	pn_job_param_set(&p[n++], "-q", "%u", c->nqp);
	pn_job_param_set(&p[n++], "-t", "%u", c->tx_depth);
	pn_job_param_set(&p[n++], "--op", "%s", opt_op);
	pn_job_param_set(&p[n++], "--lat", "%s", opt_lat ? "on" : "off");
	pn_job_param_set(&p[n++], "-b", "%s", opt_bidir ? "on" : "off");
	if (c->mtu)
		pn_job_param_set(&p[n++], "--mtu", "%u", c->mtu);
	else
		pn_job_param_set(&p[n++], "--mtu", "the ports'");
	if (opt_inline >= 0)
		pn_job_param_set(&p[n++], "-I", "%d", opt_inline);
	else
		pn_job_param_set(&p[n++], "-I", "default");
	pn_job_param_set(&p[n++], "--all-rails", "%s", opt_all_rails ? "on" : "off");
	pn_job_param_set(&p[n++], "--transport", "%s", b->tcp ? "tcp" : "verbs");
	ret = pn_job_params_agree(b->boot, p, n, &differs);
	if (ret == -EINVAL) {
		if (b->rank == 0 || differs)
			pn_cmd_fail(b->ctx, 2, "%s", pn_errmsg(ret));
		b->said = 2;
	}
	return ret;
}

static int run_launcher(struct bw *b, const struct pn_boot_cfg *cfg)
{
	struct pn_out *o = b->ctx->out;
	struct pn_bw_hello *all_hello = NULL;
	struct gathered *mine = NULL, *all_rows = NULL;
	uint8_t *wire = NULL, *all_wire = NULL;
	int i, k, p, ret, lfd = -1;

	/* the passive ranks wait in the rendezvous while the test runs */
	{
		struct pn_boot_cfg bc = *cfg;

		bc.timeout = run_bound(&b->cfg, 0, (int)b->cfg.nsizes);
		ret = pn_boot_init(&b->boot, &bc);
		if (ret)
			return ret;
	}
	b->rank = pn_boot_rank(b->boot);
	b->nranks = pn_boot_nranks(b->boot);
	b->print = b->rank == 0;
	ret = agree_params(b);
	if (ret)
		return ret;
	b->initiator = !(b->rank % 2);
	if (!b->tcp) {
		ret = pick_devices(b, opt_dev);
		if (!ret)
			ret = open_rails(b, opt_all_rails ? MAX_RAILS : 1);
		if (ret)
			goto err_tell;
	}
	if (opt_all_rails && (b->cfg.flags & PN_BW_LAT))
		return pn_err(-EINVAL, "--lat measures one link at a time (no --all-rails)");
	hello_init(b);
	if (b->tcp) {
		ret = launcher_tcp(b, &lfd);
		if (ret)
			goto err_tell;
	}
	wire = malloc(PN_BW_HELLO_LEN);
	all_hello = calloc((size_t)b->nranks, sizeof(*all_hello));
	if (!wire || !all_hello) {
		ret = pn_err(-ENOMEM, "out of memory");
		goto out;
	}
	pn_bw_hello_encode(&b->me, wire);
	ret = boot_xchg(b, wire, NULL, PN_BW_HELLO_LEN, (void **)&all_wire);
	for (i = 0; !ret && i < b->nranks; i++) /* rank 0 prints them all */
		ret = pn_bw_hello_decode(&all_hello[i], all_wire + (size_t)i * PN_BW_HELLO_LEN,
					 PN_BW_HELLO_LEN);
	if (ret)
		goto out;
	b->peer = all_hello[b->rank ^ 1];
	ret = agree_and_connect(b);
	if (!ret && b->tcp) {
		b->fd = b->initiator ? pn_bw_accept_one(lfd, pn_cli.timeout)
				     : pn_bw_connect(b->peer.addr, (int)b->peer.port_tcp, pn_cli.timeout);
		ret = b->fd < 0 ? b->fd : 0;
	}
	/* every rank must be connected before any sends */
	{
		int ok;

		if (pn_boot_agree(b->boot, !ret, &ok) || (!ret && !ok))
			ret = ret ? ret : pn_err(-EIO, "another rank failed to connect");
	}
	if (ret)
		goto out;
	mine = calloc(1, sizeof(*mine));
	if (!mine) {
		ret = pn_err(-ENOMEM, "out of memory");
		goto out;
	}
	if (b->nrails > 1 || opt_all_rails) {
		pthread_t th[MAX_RAILS];

		for (i = 0; i < b->nrails; i++)
			if (pthread_create(&th[i], NULL, rail_thread, &b->rails[i])) {
				b->rails[i].ret = pn_err(-EAGAIN, "cannot start a thread");
				th[i] = 0;
			}
		for (i = 0; i < b->nrails; i++)
			if (th[i])
				pthread_join(th[i], NULL);
		for (i = 0; i < b->nrails; i++) {
			if (b->rails[i].ret) {
				ret = pn_err(b->rails[i].ret, "%s", b->rails[i].err);
				goto out;
			}
			memcpy(mine->rows[i], b->rails[i].rows,
			       sizeof(struct pn_bw_row) * b->cfg.nsizes);
		}
	} else {
		struct rail *r = &b->rails[0];

		for (k = 0; k < (int)b->cfg.nsizes; k++) {
			ret = pn_boot_barrier(b->boot);
			if (ret)
				goto out;
			if (b->tcp)
				ret = pn_bw_tcp_run(b->fd, &b->cfg, b->initiator, k, pn_cli.timeout,
						    &mine->rows[0][k]);
			else if (b->cfg.flags & PN_BW_LAT)
				ret = pn_bw_run_lat(&r->link, k, &mine->rows[0][k]);
			else
				ret = pn_bw_run(&r->link, k, &mine->rows[0][k]);
			if (ret)
				goto out;
		}
	}
	ret = boot_xchg(b, mine, NULL, sizeof(*mine), (void **)&all_rows);
	if (ret)
		goto out;
	/* rank 0 presents every link: pair p = ranks 2p (initiator) and 2p+1 */
	if (b->rank != 0)
		goto out;
	pn_out_open_object(o, NULL);
	print_header(b);
	pn_out_int(o, PN_JSON, "nranks", NULL, b->nranks);
	pn_out_open_array(o, "links");
	for (p = 0; p < b->nranks / 2; p++) {
		const struct pn_bw_hello *ha = &all_hello[2 * p], *hb = &all_hello[2 * p + 1];
		int nr = (int)PN_MIN(ha->nrails, hb->nrails);

		if (b->tcp)
			nr = 1;
		for (i = 0; i < nr; i++) {
			char local[96], remote[96], name[200];
			double link = b->tcp ? 0 : ha->link_gbps[i];

			if (b->tcp) {
				snprintf(local, sizeof(local), "tcp:%s", ha->host);
				snprintf(remote, sizeof(remote), "tcp:%s", hb->host);
			} else {
				snprintf(local, sizeof(local), "%.40s", ha->dev[i]);
				snprintf(remote, sizeof(remote), "%.40s", hb->dev[i]);
			}
			pn_out_open_object(o, NULL);
			if (p || i)
				pn_out_text(o, "------------------------------------------------"
					       "---------------------------------------------------\n");
			pn_out_int(o, PN_JSON, "pair", NULL, p);
			pn_out_int(o, PN_JSON, "rank", NULL, 2 * p);
			pn_out_int(o, PN_JSON, "peer_rank", NULL, 2 * p + 1);
			pn_out_int(o, PN_JSON, "rail", NULL, i);
			pn_out_text(o, " Ranks           : %d -> %d, rail %d\n", 2 * p, 2 * p + 1, i);
			print_link(b, local, remote, hb->host, link,
				   p == 0 && !b->tcp ? &b->rails[i] : NULL);
			print_table_head(b);
			pn_out_open_array(o, "results");
			for (k = 0; k < (int)b->cfg.nsizes; k++) {
				struct pn_bw_row row = all_rows[2 * p].rows[i][k];

				if (b->cfg.flags & PN_BW_BIDIR)
					pn_bw_row_add(&row, &all_rows[2 * p + 1].rows[i][k]);
				all_rows[2 * p].rows[i][k] = row;
				print_row(b, &row, link);
			}
			pn_out_close_array(o);
			snprintf(name, sizeof(name), "%s@%s -> %s@%s", local, ha->host, remote,
				 hb->host);
			gate(b, name, &all_rows[2 * p].rows[i][b->cfg.nsizes - 1], link);
			pn_out_close_object(o);
		}
	}
	pn_out_close_array(o);
	pn_out_text(o, "------------------------------------------------------------------------"
		       "---------------------------\n");
	if (opt_all_rails || b->nranks > 2) {
		pn_out_str(o, PN_ANY, "slowest", " Slowest link    : %s", b->slowest_name);
		pn_out_float(o, PN_ANY, "slowest_gbps", " (%.3f Gb/s)\n", b->slowest);
	}
	pn_out_bool(o, PN_JSON, "passed", NULL, !b->failed_links);
	pn_out_close_object(o);
	goto out;
err_tell:
	/* let the other ranks fail fast instead of waiting out their timeout */
	pn_boot_abort(b->boot, pn_errmsg(ret));
out:
	if (lfd >= 0)
		close(lfd);
	free(all_hello);
	free(wire);
	free(all_wire);
	free(mine);
	free(all_rows);
	return ret;
}

/* ------------------------------------------------------------- the command */

/* The server dropped a connection that was not a client of this version. */
static void bw_dropped(const char *who, const char *why)
{
	fprintf(stderr, "penny bw: dropped a connection from %s: %s\n", who, why);
}

static int loopback(struct bw *b)
{
	char d1[64], d2[64];
	const char *comma = strchr(opt_loopback, ',');
	int sv[2] = { -1, -1 }, lfd = -1, port = 0, ret, st = 0;
	pid_t pid;

	snprintf(d1, sizeof(d1), "%.*s", comma ? (int)(comma - opt_loopback) : 63, opt_loopback);
	snprintf(d2, sizeof(d2), "%s", comma ? comma + 1 : d1);
	if (!b->tcp) {
		ret = pick_devices(b, opt_loopback);
		if (ret)
			return ret;
	}
	if (b->tcp) {
		lfd = pn_bw_listen("127.0.0.1", 0, &port);
		if (lfd < 0)
			return lfd;
	} else if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv)) {
		return pn_err(-errno, "socketpair: %s", strerror(errno));
	}
	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return pn_err(-errno, "fork: %s", strerror(errno));
	if (pid == 0) {
		/* the passive end: prints nothing, says why it failed */
		b->initiator = 0;
		b->quiet = 1;
		b->ctx->out = pn_out_new(fopen("/dev/null", "w"), pn_cli.json);
		if (b->tcp) {
			b->fd = pn_bw_connect("127.0.0.1", port, pn_cli.timeout);
			ret = b->fd < 0 ? b->fd : 0;
		} else {
			close(sv[0]);
			b->fd = sv[1];
			ret = 0;
		}
		if (!ret)
			ret = socket_side(b, b->tcp ? NULL : d2, 0);
		if (ret)
			fprintf(stderr, "penny bw: loopback peer (%s): %s\n", b->tcp ? "tcp" : d2,
				pn_errmsg(ret));
		_exit(ret ? 1 : 0);
	}
	b->initiator = 1;
	if (b->tcp) {
		b->fd = pn_bw_accept_one(lfd, pn_cli.timeout);
		close(lfd);
		ret = b->fd < 0 ? b->fd : 0;
	} else {
		close(sv[1]);
		b->fd = sv[0];
		ret = 0;
	}
	if (!ret)
		ret = socket_side(b, b->tcp ? NULL : d1, 0);
	if (b->fd >= 0)
		close(b->fd);
	b->fd = -1;
	if (ret)
		kill(pid, SIGTERM);
	waitpid(pid, &st, 0);
	if (!ret && (!WIFEXITED(st) || WEXITSTATUS(st)))
		ret = pn_err(-EIO, "the loopback peer failed");
	return ret;
}

int cmd_bw(struct pn_ctx *ctx, int argc, char **argv)
{
	struct pn_boot_cfg cfg;
	struct bw *b;
	int ret, rc, i, tcp;

	b = calloc(1, sizeof(*b));
	if (!b)
		return pn_cmd_fail(ctx, 1, "out of memory");
	b->ctx = ctx;
	b->fd = -1;
	if (opt_gpu) {
		struct bw_gpu_opts g = {
			.bytes = opt_size == SIZE_UNSET ? 0 : opt_size, .iters = opt_iters,
			.engine = opt_gpu_engine, .bidir = opt_bidir, .lat = opt_lat,
		};

		/* RDMA options have no meaning for GPU copies */
		if (argc || opt_loopback || opt_all_rails || opt_dev || opt_duration > 0 || opt_all ||
		    opt_expect || opt_min_gbps >= 0 || ctx->launch || opt_qps != 1 || strcmp(opt_op, "write"))
			rc = pn_cmd_fail(ctx, 2, "--gpu measures this host's GPUs in one process: it takes "
						 "-s, -n, -b, --lat and --gpu-engine only");
		else
			rc = bw_gpu(ctx, &g);
		goto done;
	}
	rc = parse_cfg(b);
	/* this process (and the loopback peer it forks); --np checked them all */
	if (!rc && !ctx->launch)
		rc = bw_mem_fail(ctx, opt_loopback ? 2 : 1, pn_bw_buflen(&b->cfg), 0);
	if (rc)
		goto done;
	tcp = transport_tcp(b);
	if (tcp < 0) {
		rc = 2;
		goto done;
	}
	b->tcp = tcp;
	if (argc > 1) {
		rc = pn_cmd_fail(ctx, 2, "one HOST at most (got '%s' and '%s')", argv[0], argv[1]);
		goto done;
	}
	if (argc == 1 && opt_expect && !opt_expect[0] && strspn(argv[0], "0123456789.") ==
								  strlen(argv[0])) {
		rc = pn_cmd_fail(ctx, 2, "'%s' is not a host: write --expect=%s", argv[0], argv[0]);
		goto done;
	}
	if (opt_all_rails && (argc || opt_loopback)) {
		rc = pn_cmd_fail(ctx, 2, "--all-rails runs under a launcher (mpirun, srun, --np)");
		goto done;
	}
	rc = check_devices(ctx);
	if (rc)
		goto done;
	signal(SIGPIPE, SIG_IGN);
	if (ctx->launch) {
		cfg = *ctx->launch;
	} else {
		pn_boot_cfg_init(&cfg);
		cfg.rank = pn_cli.rank;
		cfg.nranks = pn_cli.nranks;
		cfg.root = pn_cli.root;
	}
	cfg.timeout = pn_cli.timeout;
	ret = pn_boot_cfg_from_env(&cfg);
	if (ret) {
		rc = pn_cmd_fail(ctx, 2, "%s", pn_errmsg(ret));
		goto done;
	}
	/*
	 * Ranks pair up (2k, 2k+1): an odd count is refused before anyone waits
	 * (rank 0 says so).  One rank of an outside launcher (srun -n 1) is a
	 * plain process: server, client or loopback; --np 1 or --nranks 1 is not.
	 */
	if (cfg.nranks % 2 && (cfg.nranks > 1 || ctx->launch || !strcmp(cfg.launcher, "explicit"))) {
		rc = 2;
		if (cfg.rank == 0)
			pn_cmd_fail(ctx, 2, "ranks 2k and 2k+1 pair up: %d rank%s is odd%s",
				    cfg.nranks, cfg.nranks == 1 ? "" : "s",
				    cfg.nranks == 1 ? " (the server is 'penny bw' without --np)" : "");
		goto done;
	}
	if (cfg.nranks > 1 && (argc || opt_loopback)) {
		rc = 2;
		if (cfg.rank == 0)
			pn_cmd_fail(ctx, 2, "%s runs one pair of processes; under a launcher (%s) "
					    "ranks 2k and 2k+1 pair up", argc ? "HOST" : "--loopback",
				    cfg.launcher);
		goto done;
	}
	if (opt_loopback) {
		b->mode = "loopback";
		ret = loopback(b);
	} else if (argc == 1) {
		b->mode = "client";
		b->initiator = 1;
		ret = b->tcp ? 0 : pick_devices(b, opt_dev);
		if (!ret) {
			b->fd = pn_bw_connect(argv[0], opt_port, pn_cli.timeout);
			ret = b->fd < 0 ? b->fd : socket_side(b, opt_dev, 0);
		}
	} else if (cfg.nranks > 1) {
		b->mode = "launcher";
		ret = run_launcher(b, &cfg);
	} else {
		int lfd;

		b->mode = "server";
		if (opt_all_rails) {
			rc = pn_cmd_fail(ctx, 2, "--all-rails runs under a launcher (mpirun, srun, --np)");
			goto done;
		}
		ret = b->tcp ? 0 : pick_devices(b, opt_dev);
		lfd = ret ? ret : pn_bw_listen(NULL, opt_port, NULL);
		ret = lfd < 0 ? lfd : 0;
		if (!ret) {
			if (!pn_cli.json)
				fprintf(stderr, "penny bw: waiting for a client on TCP port %d\n",
					opt_port);
			b->fd = pn_bw_accept_client(lfd, pn_cli.timeout, &b->peer, bw_dropped);
			close(lfd);
			ret = b->fd < 0 ? b->fd : socket_side(b, opt_dev, 1);
		}
	}
	if (ret && b->said) {
		rc = b->said;
		goto done;
	}
	if (ret) {
		if (b->boot)
			rc = pn_cmd_fail(ctx, 1, "rank %d: %s", b->rank, pn_errmsg(ret));
		else
			rc = pn_cmd_fail(ctx, pn_cmd_exit_code(ret), "%s", pn_errmsg(ret));
		goto done;
	}
	rc = b->failed_links ? 1 : 0;
done:
	if (b->fd >= 0)
		close(b->fd);
	for (i = 0; i < MAX_RAILS; i++)
		close_rail(&b->rails[i]);
	if (b->boot)
		pn_boot_free(b->boot);
	free(b);
	return rc;
}
