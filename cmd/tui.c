/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
#include "tui.h"

#include "node/nic.h"
#include "top/topview.h"
#include "base/util.h"

#include <curses.h>
#include <term.h>
#include <errno.h>
#include <langinfo.h>
#include <locale.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>
#include <wchar.h>

enum { C_HEAD = 1, C_ALERT, C_WARN, C_BAR, C_SPARK, C_TITLE, C_GOOD };
enum { K_CTRL_L = 12 };

struct tui {
	struct pn_topview v;	/* what is shown (top/topview.h) */
	int utf8, color;
	SCREEN *scr;
};

const char *tui_fmt_bps(char *buf, size_t len, double Bps)
{
	static const char *units[] = { "b/s", "kb/s", "Mb/s", "Gb/s", "Tb/s" };
	double v = Bps * 8;
	int u = 0;

	if (!isfinite(Bps) || Bps < 0) {
		snprintf(buf, len, "n/a");
		return buf;
	}
	while (v >= 999.5 && u < 4) {
		v /= 1000;
		u++;
	}
	if (u == 0)
		snprintf(buf, len, "%.0f %s", v, units[u]);
	else
		snprintf(buf, len, v < 9.995 ? "%.2f %s" : v < 99.95 ? "%.1f %s" : "%.0f %s", v,
			 units[u]);
	return buf;
}

const char *tui_fmt_speed(char *buf, size_t len, double gbps)
{
	if (!(gbps > 0))
		snprintf(buf, len, "-");
	else if (gbps >= 1)
		snprintf(buf, len, "%.4gG", gbps);
	else
		snprintf(buf, len, "%.4gM", gbps * 1000);
	return buf;
}

static const char *fmt_pps(char *buf, size_t len, double pps)
{
	if (!isfinite(pps))
		snprintf(buf, len, "n/a");
	else if (pps >= 1e6)
		snprintf(buf, len, "%.2f Mpps", pps / 1e6);
	else if (pps >= 1e3)
		snprintf(buf, len, "%.1f kpps", pps / 1e3);
	else
		snprintf(buf, len, "%.0f pps", pps);
	return buf;
}

/* ---- drawing primitives ---- */

static attr_t attr_of(const struct tui *t, int pair, attr_t mono)
{
	return t->color ? (attr_t)COLOR_PAIR(pair) : mono;
}

/* ASCII text s into [x, x+w) on row y, padded, cut, left or right aligned.
 * Names read from the system may hold any byte: a control character (ESC
 * too) or a byte outside ASCII shows as '?', never reaches the terminal. */
static void put(int y, int x, int w, int right, attr_t a, const char *s)
{
	char buf[512];
	int len = (int)strlen(s), pad, i;

	if (w <= 0 || x >= COLS)
		return;
	if (x + w > COLS)
		w = COLS - x;
	if (w >= (int)sizeof(buf))
		w = (int)sizeof(buf) - 1;
	if (len > w)
		len = w;
	pad = w - len;
	/* padded by hand: printw's formatting showed in the profile */
	memset(buf, ' ', (size_t)w);
	memcpy(buf + (right ? pad : 0), s, (size_t)len);
	for (i = 0; i < w; i++)
		if ((unsigned char)buf[i] < 0x20 || (unsigned char)buf[i] >= 0x7f)
			buf[i] = '?';
	buf[w] = 0;
	attron(a);
	mvaddnstr(y, x, buf, w);
	attroff(a);
}

/* Row y from x to the end of the line: text, cut at the edge. */
static void line(int y, int x, attr_t a, const char *s)
{
	put(y, x, COLS - x, 0, a, s);
}

static const char *const blocks_utf8[9] = { " ", "\u2581", "\u2582", "\u2583", "\u2584",
					    "\u2585", "\u2586", "\u2587", "\u2588" };
static const char *const blocks_ascii[9] = { " ", "_", "_", ".", "-", "-", "=", "*", "#" };
static const char *const hblocks_utf8[9] = { "", "\u258f", "\u258e", "\u258d", "\u258c",
					     "\u258b", "\u258a", "\u2589", "\u2588" };

/* Horizontal bar of w cells for fraction f (0..1). */
static void bar(const struct tui *t, int y, int x, int w, double f, attr_t a)
{
	int eighths, full, i;

	if (w <= 0)
		return;
	if (!isfinite(f) || f < 0)
		f = 0;
	if (f > 1)
		f = 1;
	eighths = (int)lround(f * w * 8);
	full = eighths / 8;
	move(y, x);
	attron(a);
	for (i = 0; i < w; i++) {
		if (i < full)
			addstr(t->utf8 ? hblocks_utf8[8] : "|");
		else if (i == full && eighths % 8 && t->utf8)
			addstr(hblocks_utf8[eighths % 8]);
		else
			addch(' ');
	}
	attroff(a);
}

/* Sparkline of the last w samples of max(rx, tx) on the scale 0..max, the
 * one scale of every row (shown in the HISTORY header). */
static void sparkline(const struct tui *t, int y, int x, int w, const struct pn_counters_port *p,
		      double max, attr_t a)
{
	static const wchar_t wblocks[9] = { L' ', 0x2581, 0x2582, 0x2583, 0x2584,
					    0x2585, 0x2586, 0x2587, 0x2588 };
	int n = p->hist_n < w ? p->hist_n : w, i, k = 0;
	double rx, tx, v;
	wchar_t ws[PN_COUNTERS_HIST + 1];
	char cs[PN_COUNTERS_HIST + 1];

	if (w <= 0)
		return;
	/* one call per line, in wide characters: ncurses' cost is per call
	 * and per multibyte decode as much as per cell (profiled) */
	for (i = p->hist_n - n; i < p->hist_n; i++, k++) {
		int level = 0;

		pn_counters_hist(p, i, &rx, &tx);
		if (isfinite(rx) || isfinite(tx)) {
			v = fmax(isfinite(rx) ? rx : 0, isfinite(tx) ? tx : 0);
			level = max > 0 ? 1 + (int)lround(v / max * 7) : 1;
			if (level > 8)
				level = 8;
		}
		ws[k] = wblocks[level];
		cs[k] = blocks_ascii[level][0];
	}
	ws[k] = 0;
	cs[k] = 0;
	attron(a);
	if (t->utf8)
		mvaddnwstr(y, x + w - n, ws, k);
	else
		mvaddnstr(y, x + w - n, cs, k);
	attroff(a);
}

/* Vertical chart of one direction over h rows and w columns. */
static void chart(const struct tui *t, int y, int x, int w, int h, const struct pn_counters_port *p,
		  int tx_side, attr_t a)
{
	int n = p->hist_n < w ? p->hist_n : w, i, r;
	double max = pn_topview_hist_max(p, w, tx_side ? PN_TOPV_HIST_TX : PN_TOPV_HIST_RX), rx, tx, v;
	char buf[32], label[64];

	snprintf(label, sizeof(label), "%s  (top of scale %s, %d samples)", tx_side ? "TX" : "RX",
		 tui_fmt_bps(buf, sizeof(buf), max), n);
	line(y, x, A_BOLD, label);
	for (r = 0; r < h; r++) {
		move(y + 1 + r, x);
		clrtoeol();
	}
	attron(a);
	for (i = 0; i < n; i++) {
		int col = x + w - n + i, cells;

		pn_counters_hist(p, p->hist_n - n + i, &rx, &tx);
		v = tx_side ? tx : rx;
		if (!isfinite(v) || max <= 0)
			continue;
		cells = (int)lround(v / max * h * 8); /* in eighths of a row */
		for (r = 0; r < h && cells > 0; r++, cells -= 8) {
			int lvl = cells >= 8 ? 8 : cells;

			mvaddstr(y + h - r, col, t->utf8 ? blocks_utf8[lvl] : (lvl >= 4 ? "#" : "."));
		}
	}
	attroff(a);
}

/* ---- views ---- */

static void header(struct tui *t, const struct pn_counters_set *v, const struct pn_top_status *st)
{
	char buf[512], rx[32], tx[32], clock[16] = "--:--:--";
	struct pn_port_totals tot;

	pn_port_totals(v, t->v.filter, &tot);
	if (v->seq) {
		time_t now = (time_t)v->wall;
		struct tm tm;

		localtime_r(&now, &tm);
		strftime(clock, sizeof(clock), "%H:%M:%S", &tm);
	}
	snprintf(buf, sizeof(buf), "penny top  %s  %s  %gs  %d ports, %d up  RX %s  TX %s",
		 st->host ? st->host : pn_hostname(), clock, st->interval, tot.shown, tot.active,
		 tui_fmt_bps(rx, sizeof(rx), tot.rx_Bps), tui_fmt_bps(tx, sizeof(tx), tot.tx_Bps));
	move(0, 0);
	clrtoeol();
	line(0, 0, A_BOLD, buf);
	if (st->paused && COLS > 10)
		put(0, COLS - 8, 8, 1, A_BOLD | A_REVERSE, "PAUSED");
	move(1, 0);
	clrtoeol();
	if (st->busy) {
		snprintf(buf, sizeof(buf), "waiting %.1f s on a slow sysfs read (%s); the screen stays live",
			 st->busy_secs, st->busy_what && *st->busy_what ? st->busy_what : "scanning");
		line(1, 0, attr_of(t, C_WARN, A_BOLD), buf);
	} else if (v->seq == 0) {
		line(1, 0, A_NORMAL, "reading counters...");
	} else if (v->seq == 1) {
		line(1, 0, A_NORMAL, "first sample taken: rates after the next one");
	} else {
		snprintf(buf, sizeof(buf), "sort %s%s%s%s%s%s", pn_port_sort_name(t->v.sort),
			 t->v.filter[0] ? "  filter '" : "", t->v.filter, t->v.filter[0] ? "'" : "",
			 st->gpus && st->gpus->note[0] ? "  " : "", st->gpus ? st->gpus->note : "");
		line(1, 0, A_NORMAL, buf);
	}
	if (st->replay && COLS > (int)strlen(st->replay) + 30)
		put(1, COLS - (int)strlen(st->replay), (int)strlen(st->replay), 1, A_BOLD, st->replay);
}

static void footer(struct tui *t, const char *keys)
{
	char buf[128];

	move(LINES - 1, 0);
	clrtoeol();
	if (t->v.prompt) {
		snprintf(buf, sizeof(buf), "filter: %s", t->v.filter);
		line(LINES - 1, 0, A_BOLD, buf);
		move(LINES - 1, (int)strlen(buf) < COLS ? (int)strlen(buf) : COLS - 1);
		return;
	}
	line(LINES - 1, 0, attr_of(t, C_TITLE, A_REVERSE), keys);
}

static void delta_cell(const struct tui *t, int y, int x, int w, int valid, uint64_t d)
{
	char buf[32];

	if (!valid) {
		put(y, x, w, 1, A_DIM, "-");
		return;
	}
	snprintf(buf, sizeof(buf), "%llu", (unsigned long long)d);
	put(y, x, w, 1, d ? attr_of(t, C_ALERT, A_BOLD | A_UNDERLINE) | A_BOLD : A_NORMAL, buf);
}

/* NUMA, RAIL, GPUS of a NIC at x (PN_TOPVIEW_CTX_W columns); "-" unknown */
static void ctx_cells(int y, int x, const struct pn_nicctx *c)
{
	char buf[PN_NODECTX_GPUS * 4];

	if (c && c->numa >= 0)
		snprintf(buf, sizeof(buf), "%d", c->numa);
	else
		snprintf(buf, sizeof(buf), "-");
	put(y, x, 4, 1, c ? A_NORMAL : A_DIM, buf);
	if (c)
		snprintf(buf, sizeof(buf), "%d", c->rail);
	else
		snprintf(buf, sizeof(buf), "-");
	put(y, x + 5, 4, 1, c ? A_NORMAL : A_DIM, buf);
	if (!c || !pn_nodectx_gpus(c, buf, sizeof(buf))[0])
		snprintf(buf, sizeof(buf), "-");
	put(y, x + 10, 8, 0, c ? A_NORMAL : A_DIM, buf);
}

static void list_row(struct tui *t, const struct pn_topview_layout *l, int y,
		     const struct pn_counters_port *p, const struct pn_nodectx *ctx,
		     int show_dev, int selected, double hmax)
{
	char buf[64];
	attr_t st_attr = A_NORMAL;

	move(y, 0);
	clrtoeol();
	put(y, 0, l->dev, 0, A_BOLD, show_dev ? p->dev : "");
	if (p->type == PN_PT_NETDEV)
		snprintf(buf, sizeof(buf), "-");
	else
		snprintf(buf, sizeof(buf), "%d", p->port);
	put(y, l->x_port, l->port, 1, A_NORMAL, buf);
	if (p->state != PN_PORT_ACTIVE)
		st_attr = attr_of(t, C_WARN, A_BOLD);
	put(y, l->x_state, l->state, 0, st_attr, p->state_name[0] ? p->state_name : "?");
	put(y, l->x_speed, l->speed, 1, A_NORMAL, tui_fmt_speed(buf, sizeof(buf), p->rate_gbps));
	put(y, l->x_rx, l->rate, 1, A_NORMAL, tui_fmt_bps(buf, sizeof(buf), p->rx_Bps));
	put(y, l->x_tx, l->rate, 1, A_NORMAL, tui_fmt_bps(buf, sizeof(buf), p->tx_Bps));
	if (isfinite(p->util))
		snprintf(buf, sizeof(buf), "%.0f%%", p->util * 100);
	else
		snprintf(buf, sizeof(buf), "-");
	put(y, l->x_pct, l->pct, 1, A_NORMAL, buf);
	if (l->ctx)
		ctx_cells(y, l->x_ctx, pn_nodectx_port(ctx, p));
	bar(t, y, l->x_bar, l->bar, p->util, attr_of(t, C_BAR, A_NORMAL));
	sparkline(t, y, l->x_spark, l->spark, p, hmax, attr_of(t, C_SPARK, A_NORMAL));
	if (t->v.show_err) {
		delta_cell(t, y, l->x_err, l->err, p->err_valid, p->err_delta);
		delta_cell(t, y, l->x_disc, l->err, p->disc_valid, p->disc_delta);
	}
	if (selected)
		mvchgat(y, 0, -1, A_REVERSE, 0, NULL);
}

/* ---- GPU rows ('g') and the process view ('p') ---- */

/* Screen rows of the GPU table under the list (top/topview.h). */
static int gpu_rows(const struct tui *t, const struct pn_top_status *st)
{
	return pn_topview_gpu_rows(&t->v, st->gpus ? st->gpus->n : 0, LINES);
}

static void draw_gpus(struct tui *t, const struct pn_gputraffic *g, int y, int rows)
{
	static const int cols[PN_GT_N] = { PN_GT_NVL_RX, PN_GT_NVL_TX, PN_GT_PCIE_RX, PN_GT_PCIE_TX };
	static const char *const heads[PN_GT_N] = { "NVLINK RX", "NVLINK TX", "PCIE RX", "PCIE TX" };
	attr_t a = attr_of(t, C_TITLE, A_REVERSE);
	int i, k, w = COLS - 4 - 13 - PN_GT_N * 11;
	char buf[64];

	if (w > 24)
		w = 24;
	attron(a);
	mvhline(y, 0, ' ', COLS);
	attroff(a);
	put(y, 0, 3, 0, a, "GPU");
	if (w >= 4)
		put(y, 4, w, 0, a, "NAME");
	put(y, 4 + (w >= 4 ? w + 1 : 0), 12, 0, a, "BUS ID");
	for (k = 0; k < PN_GT_N; k++)
		put(y, 4 + (w >= 4 ? w + 1 : 0) + 13 + k * 11, 10, 1, a, heads[k]);
	for (i = 0; i < g->n && i < rows - 1; i++) {
		const struct pn_gpu_row *r = &g->gpus[i];
		int x = 4 + (w >= 4 ? w + 1 : 0);

		move(y + 1 + i, 0);
		clrtoeol();
		snprintf(buf, sizeof(buf), "%d", r->index);
		put(y + 1 + i, 0, 3, 1, A_BOLD, buf);
		if (w >= 4)
			put(y + 1 + i, 4, w, 0, A_NORMAL, r->name);
		put(y + 1 + i, x, 12, 0, A_NORMAL, r->busid);
		for (k = 0; k < PN_GT_N; k++)
			put(y + 1 + i, x + 13 + k * 11, 10, 1, A_NORMAL,
			    tui_fmt_bps(buf, sizeof(buf), r->Bps[cols[k]]));
	}
}

/* A view below the header: its rows cleared, its title bar drawn in a. */
static void begin_view(struct tui *t, const struct pn_counters_set *v,
		       const struct pn_top_status *st, attr_t a)
{
	int y;

	header(t, v, st);
	for (y = 2; y < LINES - 1; y++) {
		move(y, 0);
		clrtoeol();
	}
	attron(a);
	mvhline(2, 0, ' ', COLS);
	attroff(a);
}

static void draw_procs(struct tui *t, const struct pn_counters_set *v,
		       const struct pn_top_status *st)
{
	const struct pn_rdmares *r = st->procs;
	attr_t a = attr_of(t, C_TITLE, A_REVERSE);
	char buf[160];
	int i, y;

	begin_view(t, v, st, a);
	put(2, 0, 16, 0, a, "DEVICE");
	put(2, 17, 7, 1, a, "PID");
	put(2, 25, 16, 0, a, "COMMAND");
	put(2, 42, 5, 1, a, "QPS");
	put(2, 48, COLS - 48, 0, a, "TYPES");
	if (!r || r->note[0] || !r->n)
		line(4, 2, A_NORMAL, !r ? "" : r->note[0] ? r->note : "no process owns a QP");
	for (i = 0, y = 3; r && i < r->n && y < LINES - 1; i++, y++) {
		const struct pn_rdmares_proc *p = &r->procs[i];

		put(y, 0, 16, 0, A_BOLD, i && !strcmp(r->procs[i - 1].dev, p->dev) ? "" : p->dev);
		if (p->kernel)
			snprintf(buf, sizeof(buf), "-");
		else
			snprintf(buf, sizeof(buf), "%u", p->pid);
		put(y, 17, 7, 1, A_NORMAL, buf);
		if (p->kernel)
			snprintf(buf, sizeof(buf), "[%s]", p->comm);
		else
			snprintf(buf, sizeof(buf), "%s", p->comm[0] ? p->comm : "?");
		put(y, 25, 16, 0, p->kernel ? A_DIM : A_NORMAL, buf);
		snprintf(buf, sizeof(buf), "%d", p->nqps);
		put(y, 42, 5, 1, A_NORMAL, buf);
		put(y, 48, COLS - 48, 0, A_NORMAL, pn_rdmares_types(p->types, buf, sizeof(buf)));
	}
	if (r && i < r->n) {
		snprintf(buf, sizeof(buf), "... %d more", r->n - i);
		put(LINES - 2, 0, COLS, 0, A_DIM, buf);
	}
	footer(t, "q:quit p:ports Space:pause +/-:interval ?:help");
}

int tui_procs_shown(const struct tui *t)
{
	return pn_topview_procs(&t->v);
}

static void draw_list(struct tui *t, const struct pn_counters_set *v,
		      const struct pn_top_status *st)
{
	struct pn_topview_layout l;
	int n, i, y, sel, rows, grows;
	char buf[160];
	double hmax = 0;

	header(t, v, st);
	pn_topview_layout(&t->v, v, st->ctx && st->ctx->nnics, COLS, &l);
	move(2, 0);
	clrtoeol();
	attron(attr_of(t, C_TITLE, A_REVERSE));
	mvhline(2, 0, ' ', COLS);
	attroff(attr_of(t, C_TITLE, A_REVERSE));
	{
		attr_t a = attr_of(t, C_TITLE, A_REVERSE);

		put(2, 0, l.dev, 0, a, "DEVICE");
		put(2, l.x_port, l.port, 1, a, "PORT");
		put(2, l.x_state, l.state, 0, a, "STATE");
		put(2, l.x_speed, l.speed, 1, a, "SPEED");
		put(2, l.x_rx, l.rate, 1, a, "RX");
		put(2, l.x_tx, l.rate, 1, a, "TX");
		put(2, l.x_pct, l.pct, 1, a, "UTIL");
		if (l.ctx) {
			put(2, l.x_ctx, 4, 1, a, "NUMA");
			put(2, l.x_ctx + 5, 4, 1, a, "RAIL");
			put(2, l.x_ctx + 10, 8, 0, a, "GPUS");
		}
		if (t->v.show_err) {
			put(2, l.x_err, l.err, 1, a, "ERR");
			put(2, l.x_disc, l.err, 1, a, "DISC");
		}
	}
	n = pn_topview_order(&t->v, v);
	/* one scale for every row's history: the largest of the listed ports */
	for (i = 0; i < n; i++)
		hmax = fmax(hmax, pn_topview_hist_max(&v->ports[t->v.idx[i]], l.spark, PN_TOPV_HIST_BOTH));
	if (l.spark) {
		char scale[48], head[64];

		/* the scale as wide as the column allows: "HISTORY max 40.0 Gb/s",
		 * "max 40.0 Gb/s", "max 40G" (as SPEED writes it), else the name */
		tui_fmt_bps(scale, sizeof(scale), hmax);
		snprintf(head, sizeof(head), "HISTORY max %s", scale);
		if ((int)strlen(head) > l.spark)
			snprintf(head, sizeof(head), "max %s", scale);
		if ((int)strlen(head) > l.spark) {
			if (hmax > 0)
				tui_fmt_speed(scale, sizeof(scale), hmax * 8 / 1e9);
			snprintf(head, sizeof(head), "max %s", hmax > 0 ? scale : "0");
		}
		if ((int)strlen(head) > l.spark)
			snprintf(head, sizeof(head), "HISTORY");
		put(2, l.x_spark, l.spark, 1, attr_of(t, C_TITLE, A_REVERSE), head);
	}
	grows = gpu_rows(t, st);
	rows = LINES - 4 - grows;
	sel = pn_topview_scroll(&t->v, v, n, rows);
	for (y = 3; y < LINES - 1; y++) {
		move(y, 0);
		clrtoeol();
	}
	if (n == 0) {
		if (t->v.filter[0])
			snprintf(buf, sizeof(buf), "no port matches '%s'", t->v.filter);
		else if (v->seq)
			snprintf(buf, sizeof(buf), "no RDMA ports in /sys/class/infiniband%s",
				 v->cfg.ethernet ? " and no netdevs" : " (-e adds netdevs)");
		else
			buf[0] = 0;
		line(4, 2, A_NORMAL, buf);
	}
	for (i = t->v.top, y = 3; i < n && y < LINES - 1 - grows; i++, y++) {
		const struct pn_counters_port *p = &v->ports[t->v.idx[i]];
		int show_dev = 1;

		if (t->v.sort == PN_PORT_SORT_NAME && i > t->v.top && p->type != PN_PT_NETDEV &&
		    !strcmp(v->ports[t->v.idx[i - 1]].dev, p->dev))
			show_dev = 0; /* grouped by device */
		list_row(t, &l, y, p, st->ctx, show_dev, i == sel, hmax);
	}
	if (grows)
		draw_gpus(t, st->gpus, LINES - 1 - grows, grows);
	footer(t, "q:quit j/k:move s:sort f:filter e:err g:gpus p:procs r:rails Space:pause "
		  "Enter:detail ?:help");
}

/* 'r': one row per rail, the filtered ports summed, and the rail's share
 * of the node's RX + TX as a number and a bar */
static void draw_rails(struct tui *t, const struct pn_counters_set *v,
		       const struct pn_top_status *st)
{
	const struct pn_nodectx *ctx = st->ctx;
	struct pn_rail_sum *r = NULL;
	attr_t a = attr_of(t, C_TITLE, A_REVERSE);
	int n, i, y, rows = 0, x_bar = 65, w_bar = COLS - 65 - PN_TOPVIEW_CTX_W - 1;
	int grows = gpu_rows(t, st);
	char buf[64];

	begin_view(t, v, st, a);
	put(2, 0, 4, 1, a, "RAIL");
	put(2, 5, 16, 0, a, "DEVICE");
	put(2, 22, 5, 1, a, "PORTS");
	put(2, 28, 5, 1, a, "SPEED");
	put(2, 34, 10, 1, a, "RX");
	put(2, 45, 10, 1, a, "TX");
	put(2, 56, 7, 1, a, "SHARE");
	if (w_bar < 4)
		w_bar = 0;
	n = pn_topview_order(&t->v, v);
	if (n)
		r = calloc((size_t)(ctx ? ctx->nnics : 0) + 1, sizeof(*r));
	if (r)
		rows = pn_nodectx_rails(ctx, v, t->v.idx, n, r);
	put(2, x_bar + w_bar + (w_bar ? 1 : 0), 4, 1, a, "NUMA");
	put(2, x_bar + w_bar + (w_bar ? 1 : 0) + 10, 8, 0, a, "GPUS");
	for (i = 0, y = 3; i < rows && y < LINES - 1 - grows; i++, y++) {
		if (r[i].nic)
			snprintf(buf, sizeof(buf), "%d", r[i].rail);
		else
			snprintf(buf, sizeof(buf), "-");
		put(y, 0, 4, 1, A_BOLD, buf);
		put(y, 5, 16, 0, A_BOLD, r[i].nic ? r[i].nic->dev : "(no rail)");
		snprintf(buf, sizeof(buf), "%d", r[i].nports);
		put(y, 22, 5, 1, A_NORMAL, buf);
		put(y, 28, 5, 1, A_NORMAL, tui_fmt_speed(buf, sizeof(buf), r[i].rate_gbps));
		put(y, 34, 10, 1, A_NORMAL, tui_fmt_bps(buf, sizeof(buf), r[i].rx_Bps));
		put(y, 45, 10, 1, A_NORMAL, tui_fmt_bps(buf, sizeof(buf), r[i].tx_Bps));
		if (isfinite(r[i].share))
			snprintf(buf, sizeof(buf), "%.1f%%", r[i].share * 100);
		else
			snprintf(buf, sizeof(buf), "-");
		put(y, 56, 7, 1, A_NORMAL, buf);
		if (w_bar)
			bar(t, y, x_bar, w_bar, isfinite(r[i].share) ? r[i].share : 0,
			    attr_of(t, C_BAR, A_NORMAL));
		/* NUMA and GPUS; the RAIL cell blanked: the row starts with it */
		ctx_cells(y, x_bar + w_bar + (w_bar ? 1 : 0), r[i].nic);
		put(y, x_bar + w_bar + (w_bar ? 1 : 0) + 5, 4, 1, A_NORMAL, "");
	}
	if (!rows)
		line(4, 2, A_NORMAL, n ? "out of memory" : "no ports to sum");
	free(r);
	/* the GPUs' NVLink and PCIe beside the rails' traffic */
	if (grows)
		draw_gpus(t, st->gpus, LINES - 1 - grows, grows);
	footer(t, "q:quit r:ports f:filter g:gpus +/-:interval Space:pause ?:help");
}

static void draw_detail(struct tui *t, const struct pn_counters_set *v,
			const struct pn_top_status *st)
{
	const struct pn_counters_port *p = pn_counters_set_find(v, t->v.sel);
	char buf[512], a[96], b[32], c[32], d[32];
	int y, gh, i, rows;

	header(t, v, st);
	for (y = 2; y < LINES; y++) {
		move(y, 0);
		clrtoeol();
	}
	if (!p) {
		snprintf(buf, sizeof(buf), "port %s went away (Esc: back to the list)", t->v.sel);
		line(3, 2, attr_of(t, C_WARN, A_BOLD), buf);
		footer(t, "Esc:back q:quit ?:help");
		return;
	}
	if (p->type == PN_PT_NETDEV)
		snprintf(a, sizeof(a), "%s", p->dev);
	else
		snprintf(a, sizeof(a), "%s port %d", p->dev, p->port);
	snprintf(buf, sizeof(buf), "%s  %s%s%s  %s  %s%s%s  bytes: %s%s", a,
		 p->state_name[0] ? p->state_name : "?", p->phys_state[0] ? "/" : "",
		 p->phys_state, p->rate[0] ? p->rate : "rate unknown",
		 p->link_layer, p->netdev[0] && p->type != PN_PT_NETDEV ? "  netdev " : "",
		 p->type != PN_PT_NETDEV ? p->netdev : "",
		 p->data_group >= 0 ? pn_counters_group_name(p->data_group) : "nowhere",
		 p->data_group >= 0 ? "/" : "");
	line(2, 0, A_BOLD, buf);
	{
		char u[16] = "n/a", e[32] = "n/a", ds[32] = "n/a";

		if (isfinite(p->util))
			snprintf(u, sizeof(u), "%.1f%%", p->util * 100);
		if (p->err_valid)
			snprintf(e, sizeof(e), "+%llu", (unsigned long long)p->err_delta);
		if (p->disc_valid)
			snprintf(ds, sizeof(ds), "+%llu", (unsigned long long)p->disc_delta);
		snprintf(buf, sizeof(buf), "RX %s %s   TX %s %s   util %s   errors %s   discards %s",
			 tui_fmt_bps(a, sizeof(a), p->rx_Bps), fmt_pps(b, sizeof(b), p->rx_pps),
			 tui_fmt_bps(c, sizeof(c), p->tx_Bps), fmt_pps(d, sizeof(d), p->tx_pps), u, e,
			 ds);
	}
	line(3, 0, A_NORMAL, buf);
	gh = (LINES - 10) / 4;
	if (gh > 8)
		gh = 8;
	y = 4;
	if (gh >= 2) {
		chart(t, y, 0, COLS, gh, p, 0, attr_of(t, C_SPARK, A_NORMAL));
		y += gh + 1;
		chart(t, y, 0, COLS, gh, p, 1, attr_of(t, C_BAR, A_NORMAL));
		y += gh + 1;
	}
	attron(attr_of(t, C_TITLE, A_REVERSE));
	mvhline(y, 0, ' ', COLS);
	attroff(attr_of(t, C_TITLE, A_REVERSE));
	{
		attr_t ta = attr_of(t, C_TITLE, A_REVERSE);
		int w = COLS - 3 * 15 - 3;

		if (w < 20)
			w = 20;
		put(y, 0, w, 0, ta, "COUNTER");
		put(y, w + 1, 15, 1, ta, "VALUE");
		put(y, w + 17, 15, 1, ta, "DELTA");
		put(y, w + 33, 14, 1, ta, "PER SEC");
		y++;
		rows = LINES - 1 - y;
		for (i = pn_topview_detail_top(&t->v, p->nctr, rows); i < p->nctr && y < LINES - 1; i++, y++) {
			const struct pn_counter *k = &p->ctr[i];
			attr_t da = A_NORMAL;

			snprintf(buf, sizeof(buf), "%s/%s%s%s%s%s", pn_counters_group_name(k->group),
				 k->name, k->flags & PN_CF_WRAP ? " (wrapped)" : "",
				 k->flags & PN_CF_RESET ? " (reset)" : "",
				 k->flags & PN_CF_SAT ? " (saturated)" : "",
				 k->flags & PN_CF_JUMP ? " (jumped)" : "");
			put(y, 0, w, 0, A_NORMAL, buf);
			if (k->flags & PN_CF_VALID)
				snprintf(buf, sizeof(buf), "%llu", (unsigned long long)k->raw);
			else
				snprintf(buf, sizeof(buf), "n/a");
			put(y, w + 1, 15, 1, A_NORMAL, buf);
			if (k->flags & PN_CF_DELTA) {
				snprintf(buf, sizeof(buf), "%llu", (unsigned long long)(k->delta / k->scale));
				if (k->delta && (k->kind == PN_CK_ERR || k->kind == PN_CK_DISC))
					da = attr_of(t, C_ALERT, A_BOLD | A_UNDERLINE) | A_BOLD;
			} else {
				snprintf(buf, sizeof(buf), "-");
			}
			put(y, w + 17, 15, 1, da, buf);
			if (isfinite(k->rate))
				snprintf(buf, sizeof(buf), "%.1f", k->rate / k->scale);
			else
				snprintf(buf, sizeof(buf), "-");
			put(y, w + 33, 14, 1, A_NORMAL, buf);
		}
	}
	footer(t, "Esc:back j/k:scroll +/-:interval Space:pause q:quit ?:help");
}

static void draw_help(struct tui *t, const struct pn_counters_set *v,
		      const struct pn_top_status *st)
{
	static const char *const help_text[] = {
		"penny top: live per-port traffic of RDMA NICs (and netdevs with -e)",
		"",
		"  q           quit",
		"  j/k Up/Down PgUp/PgDn Home End/G  move (detail view: scroll)",
		"  s           sort: name, rx, tx, util, errors",
		"  f or /      filter by name (substring, or a glob with * ? [ ]);",
		"              Enter keeps it, Esc restores the previous one",
		"  e           show/hide the error and discard columns",
		"  r           rail view: each rail's ports summed, its share of the node",
		"  g           show/hide the GPU rows (NVLink and PCIe traffic from NVML)",
		"  p           process view: who owns QPs on each device (RDMA netlink)",
		"  + / -       longer/shorter interval;  Space  pause (sampling goes on)",
		"  Enter, Esc  detail view (every counter, its delta, graphs), and back",
		"  Ctrl-L      redraw;  ?  this help (any key returns)",
		"",
		"RX/TX are bits per second over the measured time between two reads.",
		"UTIL = max(RX, TX) / line rate.  ERR/DISC: errors and discards in the",
		"last interval.  port_{xmit,rcv}_data count 4-byte words (shown x4).",
		"n/a: a file that could not be read or no rate yet.  NUMA, RAIL, GPUS:",
		"the NIC's NUMA node, rail (index in the topology) and the GPUs it serves.",
	};
	size_t i;
	int y;

	header(t, v, st);
	for (y = 2; y < LINES; y++) {
		move(y, 0);
		clrtoeol();
	}
	for (i = 0, y = 3; i < PN_ARRAY_SIZE(help_text) && y < LINES - 1; i++, y++)
		line(y, 2, i == 0 ? A_BOLD : A_NORMAL, help_text[i]);
	footer(t, "any key:back q:quit");
}

void tui_draw(struct tui *t, const struct pn_counters_set *v, const struct pn_top_status *st)
{
	if (COLS < 40 || LINES < 8) {
		erase();
		mvprintw(0, 0, "penny top: terminal too small (%dx%d, need 40x8)", COLS, LINES);
		refresh();
		return;
	}
	if (t->v.mode == PN_TOPV_HELP)
		draw_help(t, v, st);
	else if (t->v.mode == PN_TOPV_DETAIL)
		draw_detail(t, v, st);
	else if (t->v.mode == PN_TOPV_RAILS)
		draw_rails(t, v, st);
	else if (t->v.mode == PN_TOPV_PROCS)
		draw_procs(t, v, st);
	else
		draw_list(t, v, st);
	curs_set(t->v.prompt ? 1 : 0);
	refresh();
}

/* ---- input ---- */

const char *tui_detail(const struct tui *t)
{
	return pn_topview_detail(&t->v);
}

int tui_getkey(struct tui *t)
{
	int ch = getch();

	(void)t;
	return ch == ERR ? -1 : ch;
}

/* The terminal's keys that are not characters, as the view's. */
static const int keymap[][2] = {
	{ KEY_UP, PN_TOPK_UP },	      { KEY_DOWN, PN_TOPK_DOWN },   { KEY_PPAGE, PN_TOPK_PGUP },
	{ KEY_NPAGE, PN_TOPK_PGDN },  { KEY_HOME, PN_TOPK_HOME },   { KEY_END, PN_TOPK_END },
	{ KEY_LEFT, PN_TOPK_LEFT },   { KEY_RIGHT, PN_TOPK_RIGHT }, { KEY_RESIZE, PN_TOPK_RESIZE },
	{ KEY_ENTER, '\r' },	      { KEY_BACKSPACE, 127 },
};

int tui_key(struct tui *t, int key, const struct pn_counters_set *v)
{
	int k = key > 255 ? PN_TOPK_OTHER : key;
	size_t i;

	if (key == K_CTRL_L && !t->v.prompt) {
		clearok(curscr, TRUE);
		return PN_TOPA_REDRAW;
	}
	for (i = 0; key > 255 && i < PN_ARRAY_SIZE(keymap); i++)
		if (keymap[i][0] == key)
			k = keymap[i][1];
	return pn_topview_key(&t->v, k, v);
}

/* ---- setup ---- */

int tui_open(struct tui **tp, const char *filter, int sort, int procs)
{
	struct tui *t = calloc(1, sizeof(*t));
	const char *cs;
	int err = 0;

	*tp = NULL;
	if (!t)
		return -ENOMEM;
	setlocale(LC_ALL, "");
	setlocale(LC_NUMERIC, "C"); /* numbers keep their '.' */
	cs = nl_langinfo(CODESET);
	t->utf8 = cs && !strcasecmp(cs, "UTF-8");
	pn_topview_init(&t->v, filter, sort, procs);
	/* a terminal type that terminfo does not know: newterm() would leak
	 * its half-made screen, setupterm() does not */
	if (setupterm(NULL, fileno(stdout), &err) != OK) {
		free(t);
		return -ENOTTY;
	}
	del_curterm(cur_term);
	t->scr = newterm(NULL, stdout, stdin);
	if (!t->scr) {
		free(t);
		return -ENOTTY;
	}
	cbreak();
	noecho();
	nonl();
	keypad(stdscr, TRUE);
	nodelay(stdscr, TRUE);
	set_escdelay(25);
	curs_set(0);
	t->color = has_colors() && !getenv("NO_COLOR");
	if (t->color) {
		start_color();
		use_default_colors();
		init_pair(C_HEAD, COLOR_CYAN, -1);
		init_pair(C_ALERT, COLOR_RED, -1);
		init_pair(C_WARN, COLOR_YELLOW, -1);
		init_pair(C_BAR, COLOR_GREEN, -1);
		init_pair(C_SPARK, COLOR_CYAN, -1);
		init_pair(C_TITLE, COLOR_BLACK, COLOR_GREEN);
		init_pair(C_GOOD, COLOR_GREEN, -1);
	}
	erase();
	*tp = t;
	return 0;
}

void tui_close(struct tui *t)
{
	if (!t)
		return;
	curs_set(1);
	endwin();
	delscreen(t->scr);
	pn_topview_release(&t->v);
	free(t);
}
