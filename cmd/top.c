/* SPDX-License-Identifier: MIT */
/*
 * penny top: live per-port traffic of RDMA NICs.
 *
 * The counter model (src/node/counters.h) samples on its own thread (top/sampler.h)
 * and top's loops (src/top/toploop.h) take, keep and order the samples; this file
 * chooses the presentation: the ncurses screen (cmd/tui.c) on a terminal, or
 * batch output for scripts: a table per sample, JSON Lines (--json), a
 * Prometheus textfile (--prom FILE).  In every mode --record appends each
 * sample to a recording (top/record.h) and --plot draws the run at exit;
 * --replay shows a recording through the same screen and printers.
 */
#define _GNU_SOURCE
#include "top/counters_json.h"
#include "top/counters_prom.h"
#include "penny.h"
#include "tui.h"

#include "node/counters.h"
#include "top/gputraffic.h"
#include "node/nodectx.h"
#include "node/rdmares.h"
#include "base/log.h"
#include "node/nic.h"
#include "base/ofile.h"
#include "base/out.h"
#include "node/perfquery.h"
#include "top/record.h"
#include "top/topplot.h"
#include "top/toploop.h"
#include "top/toprun.h"
#include "base/util.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MIN_INTERVAL 0.05
#define MAX_INTERVAL 86400.0

static struct pn_top_opts opt = { .interval = PN_TOP_INTERVAL_DEFAULT, .record_max = PN_RECORD_MAX_DEFAULT };

const struct pn_opt top_options[] = {
	{ "interval", 'i', OPT_SECONDS, &opt.interval, "SEC",
	  "time between samples (default 1 s; us, ms, s, m, h suffixes)", NULL,
	  OPT_RANGE(MIN_INTERVAL, MAX_INTERVAL) },
	{ "count", 'n', OPT_INT, &opt.count, "N", "print N samples, then exit", NULL,
	  OPT_RANGE(1, 1000000000) },
	{ "once", 0, OPT_BOOL, &opt.once, NULL, "one sample over one interval, then exit", NULL,
	  NULL },
	{ "prom", 0, OPT_STRING, &opt.prom, "FILE",
	  "write Prometheus textfile-collector metrics to FILE at every sample", NULL, NULL },
	{ "ethernet", 'e', OPT_BOOL, &opt.ethernet, NULL,
	  "also show plain netdevs from /sys/class/net", NULL, NULL },
	{ "lid", 0, OPT_APPEND, &opt.lids, "LID[:PORT]",
	  "also show a remote InfiniBand port, read with PerfMgt MADs (repeatable)", NULL,
	  OPT_LIST },
	{ "ca", 0, OPT_STRING, &opt.ca, "DEV[:PORT]",
	  "local InfiniBand port that sends the MADs of --lid (default: first active)", NULL,
	  NULL },
	{ "filter", 'f', OPT_STRING, &opt.filter, "PATTERN",
	  "only ports whose name contains PATTERN (or matches it as a glob)", NULL, NULL },
	{ "sort", 's', OPT_STRING, &opt.sort, "KEY", "order of the rows: name, rx, tx, util, errors",
	  "name rx tx util errors", NULL },
	{ "by-rail", 0, OPT_BOOL, &opt.by_rail, NULL,
	  "one row per rail (a NIC): its ports summed and its share of the node's traffic", NULL,
	  NULL },
	{ "processes", 0, OPT_BOOL, &opt.processes, NULL,
	  "also list the processes that own QPs on each RDMA device (RDMA netlink)", NULL, NULL },
	{ "record", 0, OPT_STRING, &opt.record, "FILE",
	  "append every sample to FILE as JSON Lines (a flight recording)", NULL, NULL },
	{ "record-max", 0, OPT_SIZE, &opt.record_max, "SIZE",
	  "rotate the recording to FILE.1 when FILE would grow past SIZE (default 64M)", NULL,
	  OPT_RANGE(PN_RECORD_MAX_MIN, 1ull << 40) },
	{ "replay", 0, OPT_STRING, &opt.replay, "FILE",
	  "show a recording (--record) in the screen or batch output instead of the counters",
	  NULL, NULL },
	{ "plot", 0, OPT_STRING, &opt.plot, "FILE.svg",
	  "at exit, draw each port's throughput over time as SVG (of the run, or of --replay)",
	  NULL, NULL },
	OPT_TABLE_END
};

static volatile sig_atomic_t got_signal;
static const char *replay_host;	/* the host of the sample shown */

/* GPU rows and QP owners beside the counter snapshot (batch output) */
static struct {
	const struct pn_gputraffic *gpus;
	const struct pn_rdmares *procs;	/* NULL: --processes not given */
} extra;

/* The host of the sample shown: a recording's, or the live counters'. */
static const char *top_host(void)
{
	return replay_host ? replay_host : pn_top_live_host();
}

static void on_signal(int sig)
{
	got_signal = sig;
}

/* How a run ended by a signal exits: SIGINT and SIGTERM are the way to stop
 * top (Ctrl-C, systemctl stop), not a failure: 0; SIGHUP (the terminal went
 * away) 128 + 1. */
static int stop_status(void)
{
	return got_signal == SIGHUP ? 128 + SIGHUP : 0;
}

static void catch_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
}

/* ---- JSON and text table ---- */

static const char *or_null(const char *s)
{
	return s && *s ? s : NULL;
}

/* numa, rail (unless the row is a rail) and gpus of a port or rail: JSON
 * keys, and text columns when the topology is known (text != 0) */
static void out_context(struct pn_out *o, const struct pn_nicctx *x, int text, int rail)
{
	char buf[PN_NODECTX_GPUS * 4];
	int k;

	if (x && x->numa >= 0)
		pn_out_int(o, text ? PN_ANY : PN_JSON, "numa", " %4lld", x->numa);
	else
		pn_out_null(o, text ? PN_ANY : PN_JSON, "numa", " %4s");
	if (rail && x)
		pn_out_int(o, text ? PN_ANY : PN_JSON, "rail", " %4lld", x->rail);
	else if (rail)
		pn_out_null(o, text ? PN_ANY : PN_JSON, "rail", " %4s");
	pn_out_open_array(o, "gpus");
	for (k = 0; x && k < x->ngpus && k < PN_NODECTX_GPUS; k++)
		pn_out_int(o, PN_JSON, NULL, NULL, x->gpu[k]);
	pn_out_close_array(o);
	if (text)
		pn_out_str(o, PN_TEXT, NULL, " %s", x && x->ngpus ? pn_nodectx_gpus(x, buf, sizeof(buf)) : "-");
}

static void print_header(struct pn_out *o, const struct pn_counters_set *v, double interval,
			 const struct pn_nodectx *ctx, int first)
{
	char when[40] = "";
	time_t t = (time_t)v->wall;
	struct tm tm;

	localtime_r(&t, &tm);
	strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", &tm);
	if (!first)
		pn_out_nl(o);
	pn_out_text(o, "# %s  %s  interval %g s  measured %.3f s%s%s%s%s\n", top_host(), when,
		    interval, v->elapsed, ctx->note[0] ? "  " : "", ctx->note,
		    extra.gpus && extra.gpus->note[0] ? "  " : "", extra.gpus ? extra.gpus->note : "");
	pn_out_open_object(o, NULL);
	pn_out_str(o, PN_JSON, "host", NULL, top_host());
	pn_out_float(o, PN_JSON, "timestamp", NULL, floor(v->wall * 1000) / 1000);
	pn_out_float(o, PN_JSON, "interval", NULL, interval);
	pn_out_float(o, PN_JSON, "elapsed", NULL, v->elapsed);
	pn_out_uint(o, PN_JSON, "sample", NULL, v->seq - 1);
}

/* ---- GPU rows and QP owners: a table each after the ports ---- */

static void print_gpus(struct pn_out *o, const struct pn_gputraffic *g)
{
	static const char *const keys[PN_GT_N][2] = {
		{ "nvlink_tx_bytes_per_sec", "nvlink_tx_bytes" },
		{ "nvlink_rx_bytes_per_sec", "nvlink_rx_bytes" },
		{ "pcie_tx_bytes_per_sec", "pcie_tx_bytes" },
		{ "pcie_rx_bytes_per_sec", "pcie_rx_bytes" },
	};
	static const int cols[PN_GT_N] = { PN_GT_NVL_RX, PN_GT_NVL_TX, PN_GT_PCIE_RX, PN_GT_PCIE_TX };
	char buf[64];
	int i, k;

	if (g->n)
		pn_out_text(o, "%-3s %-24s %-12s %11s %11s %11s %11s\n", "GPU", "NAME", "BUS ID",
			    "NVLINK RX", "NVLINK TX", "PCIE RX", "PCIE TX");
	pn_out_open_array(o, "gpus");
	for (i = 0; i < g->n; i++) {
		const struct pn_gpu_row *r = &g->gpus[i];

		pn_out_open_object(o, NULL);
		pn_out_int(o, PN_ANY, "index", "%-3lld ", r->index);
		pn_out_str(o, PN_ANY, "name", "%-24.24s ", r->name);
		pn_out_str(o, PN_ANY, "bus_id", "%-12s", r->busid);
		for (k = 0; k < PN_GT_N; k++)
			pn_out_str(o, PN_TEXT, NULL, " %11s", tui_fmt_bps(buf, sizeof(buf), r->Bps[cols[k]]));
		for (k = 0; k < PN_GT_N; k++) {
			pn_out_float(o, PN_JSON, keys[k][0], NULL, r->Bps[k]);
			if (r->had[k] && (k < PN_GT_PCIE_TX || r->pcie_src == PN_GT_SRC_COUNTERS))
				pn_out_uint(o, PN_JSON, keys[k][1], NULL, r->bytes[k]);
			else
				pn_out_null(o, PN_JSON, keys[k][1], NULL);
		}
		pn_out_str(o, PN_JSON, "pcie_source", NULL,
			   r->pcie_src == PN_GT_SRC_COUNTERS ? "counters" :
			   r->pcie_src == PN_GT_SRC_SAMPLED ? "sampled" : NULL);
		pn_out_bool(o, PN_JSON, "wrapped", NULL, !!(r->flags & PN_GT_WRAP));
		pn_out_bool(o, PN_JSON, "reset", NULL, !!(r->flags & PN_GT_RESET));
		pn_out_nl(o);
		pn_out_close_object(o);
	}
	pn_out_close_array(o);
	pn_out_str(o, PN_JSON, "gpu_note", NULL, or_null(g->note));
}

static void print_procs(struct pn_out *o, const struct pn_rdmares *r)
{
	char buf[160];
	int i, t;

	if (r->note[0])
		pn_out_text(o, "# %s\n", r->note);
	else
		pn_out_text(o, "%-16s %7s %-16s %5s %s\n", "DEVICE", "PID", "COMMAND", "QPS", "TYPES");
	pn_out_open_array(o, "processes");
	for (i = 0; i < r->n; i++) {
		const struct pn_rdmares_proc *p = &r->procs[i];

		pn_out_open_object(o, NULL);
		pn_out_str(o, PN_ANY, "device", "%-16s ", p->dev);
		if (p->kernel) {
			pn_out_str(o, PN_TEXT, NULL, "%7s ", "-");
			pn_out_null(o, PN_JSON, "pid", NULL);
		} else
			pn_out_uint(o, PN_ANY, "pid", "%7llu ", p->pid);
		pn_out_str(o, PN_ANY, "command", "%-16s ", or_null(p->comm));
		pn_out_bool(o, PN_JSON, "kernel", NULL, p->kernel);
		pn_out_int(o, PN_ANY, "qps", "%5lld ", p->nqps);
		pn_out_str(o, PN_TEXT, NULL, "%s", pn_rdmares_types(p->types, buf, sizeof(buf)));
		pn_out_open_array(o, "qp_types");
		for (t = 0; t < 32; t++)
			if (p->types & (1u << t))
				pn_out_str(o, PN_JSON, NULL, NULL, pn_rdmares_type_name(t));
		pn_out_close_array(o);
		pn_out_nl(o);
		pn_out_close_object(o);
	}
	pn_out_close_array(o);
	pn_out_str(o, PN_JSON, "processes_note", NULL, or_null(r->note));
}

static void print_extra(struct pn_out *o)
{
	if (extra.gpus)
		print_gpus(o, extra.gpus);
	if (extra.procs)
		print_procs(o, extra.procs);
}

/* --by-rail: one row per rail, ports summed, the rail's share of the node */
static int print_rails(struct pn_out *o, const struct pn_counters_set *v, const int *idx, int n,
		       double interval, const struct pn_nodectx *ctx, int first)
{
	struct pn_rail_sum *r = calloc((size_t)ctx->nnics + 1, sizeof(*r));
	char buf[64];
	int k, rows;

	if (!r)
		return -ENOMEM;
	rows = pn_nodectx_rails(ctx, v, idx, n, r);
	print_header(o, v, interval, ctx, first);
	pn_out_text(o, "%-4s %-16s %5s %6s %11s %11s %6s %4s %s\n", "RAIL", "DEVICE", "PORTS",
		    "SPEED", "RX", "TX", "SHARE", "NUMA", "GPUS");
	pn_out_open_array(o, "rails");
	for (k = 0; k < rows; k++) {
		pn_out_open_object(o, NULL);
		if (r[k].nic)
			pn_out_int(o, PN_ANY, "rail", "%-4lld ", r[k].rail);
		else
			pn_out_null(o, PN_ANY, "rail", "%-4s ");
		pn_out_str(o, PN_ANY, "device", "%-16s ", r[k].nic ? r[k].nic->dev : NULL);
		pn_out_int(o, PN_ANY, "ports", "%5lld ", r[k].nports);
		pn_out_str(o, PN_TEXT, NULL, "%6s ", tui_fmt_speed(buf, sizeof(buf), r[k].rate_gbps));
		pn_out_float(o, PN_JSON, "rate_gbps", NULL, r[k].rate_gbps > 0 ? r[k].rate_gbps : NAN);
		pn_out_str(o, PN_TEXT, NULL, "%11s ", tui_fmt_bps(buf, sizeof(buf), r[k].rx_Bps));
		pn_out_str(o, PN_TEXT, NULL, "%11s ", tui_fmt_bps(buf, sizeof(buf), r[k].tx_Bps));
		pn_out_float(o, PN_JSON, "rx_bytes_per_sec", NULL, r[k].rx_Bps);
		pn_out_float(o, PN_JSON, "tx_bytes_per_sec", NULL, r[k].tx_Bps);
		if (isfinite(r[k].share))
			pn_out_float(o, PN_TEXT, NULL, "%5.1f%%", r[k].share * 100);
		else
			pn_out_str(o, PN_TEXT, NULL, "%6s", "n/a");
		pn_out_float(o, PN_JSON, "share", NULL, r[k].share);
		out_context(o, r[k].nic, 1, 0);
		pn_out_nl(o);
		pn_out_close_object(o);
	}
	pn_out_close_array(o);
	print_extra(o);
	pn_out_close_object(o);
	fflush(pn_out_file(o));
	free(r);
	return 0;
}

static void print_sample(struct pn_out *o, const struct pn_counters_set *v, const int *idx, int n,
			 double interval, const struct pn_nodectx *ctx, int first)
{
	/* the context columns only where the topology is known: the table of
	 * a node without one stays as it was */
	int cols = ctx->nnics > 0;
	char buf[64];
	int k;

	/* held once for the sample: the thousands of calls below skip the
	 * stream's lock (a recursive lock held by this thread is cheaper) */
	flockfile(pn_out_file(o));
	print_header(o, v, interval, ctx, first);
	pn_out_text(o, "%-16s %-7s %6s %11s %11s %6s %6s %6s%s\n", "PORT", "STATE", "SPEED", "RX",
		    "TX", "UTIL", "ERR", "DISC", cols ? " NUMA RAIL GPUS" : "");
	pn_out_open_array(o, "ports");
	for (k = 0; k < n; k++) {
		const struct pn_counters_port *p = &v->ports[idx[k]];

		pn_out_open_object(o, NULL);
		pn_out_str(o, PN_ANY, "name", "%-16s ", p->name);
		pn_out_str(o, PN_JSON, "device", NULL, p->dev);
		pn_out_int(o, PN_JSON, "port", NULL, p->port);
		pn_out_str(o, PN_JSON, "type", NULL, pn_port_type_name(p->type));
		pn_out_str(o, PN_ANY, "state", "%-7s ", or_null(p->state_name));
		pn_out_str(o, PN_JSON, "phys_state", NULL, or_null(p->phys_state));
		pn_out_str(o, PN_JSON, "link_layer", NULL, or_null(p->link_layer));
		pn_out_str(o, PN_JSON, "rate", NULL, or_null(p->rate));
		pn_out_str(o, PN_TEXT, NULL, "%6s ", tui_fmt_speed(buf, sizeof(buf), p->rate_gbps));
		pn_out_float(o, PN_JSON, "rate_gbps", NULL, p->rate_gbps > 0 ? p->rate_gbps : NAN);
		pn_out_str(o, PN_JSON, "netdev", NULL, or_null(p->netdev));
		pn_out_str(o, PN_JSON, "source", NULL,
			   p->data_group >= 0 ? pn_counters_group_name(p->data_group) : NULL);
		pn_out_float(o, PN_JSON, "elapsed", NULL, p->elapsed);
		pn_out_str(o, PN_TEXT, NULL, "%11s ", tui_fmt_bps(buf, sizeof(buf), p->rx_Bps));
		pn_out_str(o, PN_TEXT, NULL, "%11s ", tui_fmt_bps(buf, sizeof(buf), p->tx_Bps));
		pn_out_float(o, PN_JSON, "rx_bytes_per_sec", NULL, p->rx_Bps);
		pn_out_float(o, PN_JSON, "tx_bytes_per_sec", NULL, p->tx_Bps);
		pn_out_float(o, PN_JSON, "rx_packets_per_sec", NULL, p->rx_pps);
		pn_out_float(o, PN_JSON, "tx_packets_per_sec", NULL, p->tx_pps);
		if (isfinite(p->util))
			pn_out_float(o, PN_TEXT, NULL, "%5.1f%% ", p->util * 100);
		else
			pn_out_str(o, PN_TEXT, NULL, "%6s ", "n/a");
		pn_out_float(o, PN_JSON, "utilization", NULL, p->util);
		if (p->err_valid)
			pn_out_uint(o, PN_ANY, "errors", "%6llu ", p->err_delta);
		else
			pn_out_null(o, PN_ANY, "errors", "%6s ");
		if (p->disc_valid)
			pn_out_uint(o, PN_ANY, "discards", "%6llu", p->disc_delta);
		else
			pn_out_null(o, PN_ANY, "discards", "%6s");
		out_context(o, pn_nodectx_port(ctx, p), cols, 1);
		pn_counters_port_json(o, p);
		pn_out_nl(o);
		pn_out_close_object(o);
	}
	pn_out_close_array(o);
	print_extra(o);
	pn_out_close_object(o);
	fflush(pn_out_file(o));
	funlockfile(pn_out_file(o));
}

/* One sample of the batch output, live or replayed: the rail view or the ports. */
static int print_one(struct pn_out *o, const struct pn_counters_set *v, const int *idx, int n,
		     double interval, const struct pn_nodectx *ctx, int first)
{
	if (opt.by_rail)
		return print_rails(o, v, idx, n, interval, ctx, first);
	print_sample(o, v, idx, n, interval, ctx, first);
	return 0;
}

/* A new file exchanged with FILE (src/base/ofile.h, PN_OFILE_VOLATILE): a
 * collector reads the whole of one sample or the whole of the next.  No
 * fsync, no write-out forced by the rename: the next sample replaces it
 * within one interval. */
#define PROM_BUF (256 << 10)

static int write_prom(const char *path, const struct pn_counters_set *v, const int *idx, int n,
		      double interval, const struct pn_nodectx *ctx)
{
	static char *buf;	/* one write per sample, the buffer kept between samples */
	struct pn_ofile *of;
	int ret = pn_ofile_open(&of, path, PN_OFILE_VOLATILE);

	if (ret)
		return ret;
	if (!buf)
		buf = malloc(PROM_BUF);
	if (buf && !pn_ofile_inplace(of))
		setvbuf(pn_ofile_file(of), buf, _IOFBF, PROM_BUF);
	flockfile(pn_ofile_file(of));
	pn_counters_prom_write(pn_ofile_file(of), v, idx, n, interval, ctx);
	pn_gputraffic_prom_write(pn_ofile_file(of), extra.gpus);
	funlockfile(pn_ofile_file(of));
	return pn_ofile_commit(of);
}

/* ---- the two ways to run ---- */

struct top_run {
	struct pn_ctx *ctx;
	struct pn_toprun run;		/* sampler, snapshot, context, GPUs, recorder */
	struct pn_top loop;		/* the loops (top/toploop.h) */
	struct tui *tui;		/* the screen while it is open */
	int in_screen;			/* warnings wait for the screen to close */
	char warn[600];
};

/* ---- flight recorder and plot ---- */

/* One line "warning: ..." now, or after the screen has closed. */
static void top_warn(void *arg, const char *what, const char *then)
{
	struct top_run *r = arg;

	if (r->in_screen)
		snprintf(r->warn, sizeof(r->warn), "warning: %s%s", what, then);
	else
		pn_cmd_fail(r->ctx, 0, "warning: %s%s", what, then);
}

static int write_plot(struct top_run *r, const struct pn_replay *rp)
{
	char title[400];
	int ret;

	snprintf(title, sizeof(title), "penny top: %s", top_host());
	ret = pn_topplot_write(rp, opt.plot, title);
	if (ret)
		pn_cmd_error(r->ctx, ret);
	return ret ? 2 : 0;
}

/* with --prom, stdout stays quiet unless --json asks for it too */
static int to_stdout(const struct top_run *r)
{
	return !opt.prom || pn_out_is_json(r->ctx->out);
}

/*
 * One sample out in batch mode, live or replayed: the textfile, then past
 * the baseline the table or JSON.  0 go on, 2 an error (said).
 */
static int emit(void *arg, const struct pn_top_sample *s)
{
	struct top_run *r = arg;
	int ret;

	replay_host = s->host;
	extra.gpus = s->gpus;
	if (opt.prom) {
		ret = write_prom(opt.prom, s->set, s->idx, s->n, s->interval, s->ctx);
		if (ret) {
			pn_cmd_error(r->ctx, ret);
			return 2;
		}
	}
	if (s->rates && to_stdout(r) &&
	    print_one(r->ctx->out, s->set, s->idx, s->n, s->interval, s->ctx, s->first))
		return pn_cmd_fail(r->ctx, 2, "out of memory");
	return ferror(pn_out_file(r->ctx->out)) ? -1 : 0; /* stdout gone: said at exit */
}

/* A loop's end: its error said, or how a signal ends top. */
static int done(struct top_run *r, int ret)
{
	if (ret < 0) {
		pn_cmd_error(r->ctx, ret);
		return 2;
	}
	return ret ? ret : stop_status();
}

/* The batch output of a live run (rp NULL) or of a recording. */
static int batch(struct top_run *r, struct pn_replay *rp, struct pn_record_sample *s)
{
	/* a sample is one write (each one ends with a flush) */
	static char outbuf[256 << 10];

	if (!rp && to_stdout(r) && !isatty(fileno(pn_out_file(r->ctx->out))))
		setvbuf(pn_out_file(r->ctx->out), outbuf, _IOFBF, sizeof(outbuf));
	return done(r, rp ? pn_top_replay_batch(&r->loop, rp, s) : pn_top_batch(&r->loop));
}

/* ---- the screen's side of the loops (cmd/tui.c) ---- */

static void screen_draw(void *arg, const struct pn_counters_set *v, const struct pn_top_status *st)
{
	tui_draw(((struct top_run *)arg)->tui, v, st);
}

static int screen_key(void *arg, const struct pn_counters_set *v)
{
	struct top_run *r = arg;
	int key = tui_getkey(r->tui);

	return key < 0 ? -1 : tui_key(r->tui, key, v);
}

static const char *screen_detail(void *arg)
{
	return tui_detail(((struct top_run *)arg)->tui);
}

static int screen_procs(void *arg)
{
	return tui_procs_shown(((struct top_run *)arg)->tui);
}

/* The screen over a live run (rp NULL) or a recording. */
static int screen(struct top_run *r, struct pn_replay *rp, struct pn_record_sample *s)
{
	int ret = tui_open(&r->tui, opt.filter, r->loop.sort, rp ? 0 : opt.processes);

	if (ret)
		return pn_cmd_fail(r->ctx, 2, "cannot open the terminal (TERM=%s)",
				   getenv("TERM") ? getenv("TERM") : "");
	ret = rp ? pn_top_replay_screen(&r->loop, rp, s) : pn_top_screen(&r->loop);
	tui_close(r->tui);
	r->tui = NULL;
	return done(r, ret);
}

/* ---- --replay: a recording through the same printers and screen ---- */

static int replay(struct top_run *r, int use_screen)
{
	struct pn_record_sample *s = malloc(sizeof(*s));
	struct pn_replay *rp;
	int ret;

	if (!s)
		return pn_cmd_fail(r->ctx, 2, "out of memory");
	pn_record_sample_init(s);
	ret = pn_replay_open(&rp, opt.replay);
	if (ret) {
		pn_cmd_error(r->ctx, ret);
		free(s);
		return 2;
	}
	if (*pn_replay_warning(rp) && !use_screen)
		pn_cmd_fail(r->ctx, 0, "warning: %s", pn_replay_warning(rp));
	if (!pn_replay_count(rp))
		ret = pn_cmd_fail(r->ctx, 2, "%s: no samples", opt.replay);
	/* --plot alone draws the recording; --json, --count or --once print it too */
	else if (opt.plot && !pn_out_is_json(r->ctx->out) && !opt.count && !opt.once && !opt.prom)
		ret = 0;
	else
		ret = use_screen ? screen(r, rp, s) : batch(r, rp, s);
	if (*pn_replay_warning(rp) && use_screen)
		pn_cmd_fail(r->ctx, 0, "warning: %s", pn_replay_warning(rp));
	if (!ret && opt.plot && pn_replay_count(rp)) {
		/* titled with the host the recording is of, not this one */
		ret = pn_replay_load(rp, 0, s);
		if (ret) {
			pn_cmd_error(r->ctx, ret);
			ret = 2;
		} else {
			replay_host = s->host;
			ret = write_plot(r, rp);
		}
	}
	pn_record_sample_release(s);
	free(s);
	free(r->loop.idx);
	pn_replay_close(rp);
	return ret;
}

int cmd_top(struct pn_ctx *ctx, int argc, char **argv)
{
	struct top_run r = { .ctx = ctx };
	struct pn_top_ops ops = { .arg = &r, .sample = emit, .draw = screen_draw, .key = screen_key,
				  .detail = screen_detail, .procs_shown = screen_procs,
				  .warn = top_warn };
	int ret, use_screen;

	if (argc > 0)
		return pn_cmd_fail(ctx, 2, "unexpected argument '%s'", argv[0]);
	r.loop = (struct pn_top){ .ops = &ops, .interval = opt.interval, .filter = opt.filter,
				  .want = opt.once ? 1 : opt.count, .processes = opt.processes,
				  .stop = &got_signal };
	opt.sysroot = pn_cli.sysroot;
	ret = pn_top_opts_check(&opt, &r.loop.sort);
	if (ret)
		return pn_cmd_fail(ctx, 2, "%s", pn_errmsg(ret));
	{
		const char *const names[] = { "--prom", "--record", "--plot", "--replay" };
		const char *const paths[] = { opt.prom, opt.record, opt.plot, opt.replay };

		if (pn_cmd_refuse_shared(ctx, names, paths, 3, PN_ARRAY_SIZE(paths)))
			return 2;
	}
	/* before any sampling: a file that cannot be written, or --json's stdout, fails */
	pn_ofile_claim_stdout(pn_out_is_json(ctx->out) ? "--json" : NULL);
	ret = opt.prom ? pn_ofile_check(opt.prom) : 0;
	if (!ret && opt.plot)
		ret = pn_ofile_check(opt.plot);
	pn_ofile_claim_stdout(NULL); /* --record - may interleave its lines */
	if (ret) {
		pn_cmd_error(ctx, ret);
		return 2;
	}
	use_screen = !pn_out_is_json(ctx->out) && !opt.once && !opt.count && !opt.prom &&
		     isatty(STDOUT_FILENO) && isatty(STDIN_FILENO);
	if (use_screen && pn_ofile_std(opt.record))
		return pn_cmd_fail(ctx, 2, "--record to standard output or error needs a batch "
				   "output (--count, --once, --json or a redirection), not the "
				   "screen");
	catch_signals();
	if (opt.replay)
		return replay(&r, use_screen);
	ret = pn_toprun_open(&r.run, &(struct pn_toprun_cfg){
		.record = opt.record, .record_max = opt.record_max, .plot = opt.plot != NULL,
		.lids = opt.lids, .ca = opt.ca, .ethernet = opt.ethernet,
		/* the screen's list and the table need bytes, errors and discards
		 * only; JSON and Prometheus output carry every counter */
		.brief = !pn_out_is_json(ctx->out) && !opt.prom && !opt.record,
		/* the screen shows rates after a short first interval */
		.interval = opt.interval, .first = use_screen ? fmin(opt.interval, 0.25) : 0 });
	if (ret) {
		pn_cmd_error(ctx, ret);
		pn_toprun_close(&r.run);
		return 2;
	}
	extra.gpus = &r.run.gpus;
	extra.procs = opt.processes ? &r.run.procs : NULL;
	r.in_screen = use_screen;
	r.loop.run = &r.run;
	ret = use_screen ? screen(&r, NULL, NULL) : batch(&r, NULL, NULL);
	if (r.warn[0])
		pn_cmd_fail(ctx, 0, "%s", r.warn);
	if (r.run.plot && pn_replay_count(r.run.plot) && write_plot(&r, r.run.plot) && !ret)
		ret = 2;
	free(r.loop.idx);
	if (pn_toprun_stop(&r.run)) {
		/* stuck in a read: it may still use pq and remote; the process ends */
		PN_DBG(PN_LOG_NIC, "%s", pn_errmsg(-ETIMEDOUT));
		return ret;
	}
	pn_toprun_close(&r.run);
	return ret;
}
