/* SPDX-License-Identifier: MIT */
/* What top's screen shows and how its keys change it (src/top/topview.c):
 * the selection moves over the filtered order and is kept by name, the
 * filter is edited and Escape restores it, Enter opens a port's detail,
 * the help page returns to the view under it, and the caller's actions;
 * the list's columns on a wide and a narrow screen, the history's scale,
 * the GPU rows' room, the detail's scroll and the header's sums. */
#define _GNU_SOURCE
#include "unit.h"

#include "node/nic.h"
#include "top/portsel.h"
#include "top/topview.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static struct pn_counters_port ports[3];
static struct pn_counters_set set = { .n = 3, .ports = ports };

static void ports_init(void)
{
	static const char *const names[] = { "mlx5_0/1", "mlx5_1/1", "eth0" };
	int i;

	memset(ports, 0, sizeof(ports));
	for (i = 0; i < 3; i++) {
		snprintf(ports[i].name, sizeof(ports[i].name), "%s", names[i]);
		snprintf(ports[i].dev, sizeof(ports[i].dev), "%.*s", (int)strcspn(names[i], "/"),
			 names[i]);
		ports[i].rx_Bps = 10.0 * (i + 1);
	}
}

static void keys(struct pn_topview *v, const char *s)
{
	while (*s)
		pn_topview_key(v, (unsigned char)*s++, &set);
}

TEST(selection_moves_over_the_order_and_is_kept_by_name)
{
	struct pn_topview v;
	int n;

	ports_init();
	pn_topview_init(&v, NULL, PN_PORT_SORT_NAME, 0);
	n = pn_topview_order(&v, &set);
	CHECK_EQ_INT(n, 3);
	CHECK_EQ_INT(pn_topview_sel_pos(&v, &set, n), 0);
	CHECK_STR(v.sel, "mlx5_0/1");
	CHECK_EQ_INT(pn_topview_key(&v, PN_TOPK_DOWN, &set), PN_TOPA_REDRAW);
	CHECK_STR(v.sel, "mlx5_1/1");
	CHECK_EQ_INT(pn_topview_key(&v, 'G', &set), PN_TOPA_REDRAW);
	CHECK_STR(v.sel, "eth0");
	pn_topview_key(&v, 'j', &set);	/* the last row stays */
	CHECK_STR(v.sel, "eth0");
	pn_topview_key(&v, PN_TOPK_HOME, &set);
	CHECK_STR(v.sel, "mlx5_0/1");
	/* 's' to rx: largest first; the selection follows its port */
	CHECK_EQ_INT(pn_topview_key(&v, 's', &set), PN_TOPA_REDRAW);
	CHECK_EQ_INT(v.sort, PN_PORT_SORT_RX);
	n = pn_topview_order(&v, &set);
	CHECK(n == 3 && v.idx[0] == 2);
	CHECK_EQ_INT(pn_topview_sel_pos(&v, &set, n), 2);
	/* a page moves list_rows - 1 */
	v.list_rows = 3;
	pn_topview_key(&v, PN_TOPK_PGUP, &set);
	CHECK_STR(v.sel, "eth0");
	pn_topview_release(&v);
}

TEST(filter_is_edited_and_escape_restores_it)
{
	struct pn_topview v;

	ports_init();
	pn_topview_init(&v, "mlx", PN_PORT_SORT_NAME, 0);
	CHECK_EQ_INT(pn_topview_order(&v, &set), 2);
	CHECK_EQ_INT(pn_topview_key(&v, '/', &set), PN_TOPA_REDRAW);
	CHECK(v.prompt);
	keys(&v, "5_1");
	CHECK_STR(v.filter, "mlx5_1");
	CHECK_EQ_INT(pn_topview_key(&v, 'q', &set), PN_TOPA_REDRAW); /* typed, not quit */
	pn_topview_key(&v, 127, &set);
	CHECK_STR(v.filter, "mlx5_1");
	pn_topview_key(&v, 27, &set);
	CHECK(!v.prompt);
	CHECK_STR(v.filter, "mlx");
	keys(&v, "f");
	pn_topview_key(&v, 21, &set);	/* Ctrl-U */
	keys(&v, "eth\r");
	CHECK(!v.prompt);
	CHECK_STR(v.filter, "eth");
	CHECK_EQ_INT(pn_topview_order(&v, &set), 1);
	CHECK_EQ_INT(pn_topview_key(&v, 'q', &set), PN_TOPA_QUIT);
	pn_topview_release(&v);
}

TEST(views_detail_help_rails_and_procs)
{
	struct pn_topview v;
	int n;

	ports_init();
	pn_topview_init(&v, NULL, PN_PORT_SORT_NAME, 1);
	CHECK(pn_topview_procs(&v) && !pn_topview_detail(&v));
	CHECK_EQ_INT(pn_topview_key(&v, 27, &set), PN_TOPA_REDRAW);
	CHECK_EQ_INT(v.mode, PN_TOPV_LIST);
	CHECK_EQ_INT(pn_topview_key(&v, 'p', &set), PN_TOPA_PROCS);
	CHECK_EQ_INT(pn_topview_key(&v, 'p', &set), PN_TOPA_REDRAW);
	CHECK_EQ_INT(v.mode, PN_TOPV_LIST);
	/* Enter on a port that is gone opens nothing */
	snprintf(v.sel, sizeof(v.sel), "gone/1");
	pn_topview_key(&v, '\r', &set);
	CHECK_EQ_INT(v.mode, PN_TOPV_LIST);
	n = pn_topview_order(&v, &set);
	pn_topview_sel_pos(&v, &set, n);
	pn_topview_key(&v, PN_TOPK_RIGHT, &set);
	CHECK_EQ_INT(v.mode, PN_TOPV_DETAIL);
	CHECK_STR(pn_topview_detail(&v), "mlx5_0/1");
	pn_topview_key(&v, PN_TOPK_PGDN, &set);
	CHECK_EQ_INT(v.dtop, 10);
	/* the help page keeps the detail's port sampled, any key returns */
	pn_topview_key(&v, '?', &set);
	CHECK(v.mode == PN_TOPV_HELP && pn_topview_detail(&v) != NULL);
	CHECK_EQ_INT(pn_topview_key(&v, 'x', &set), PN_TOPA_REDRAW);
	CHECK_EQ_INT(v.mode, PN_TOPV_DETAIL);
	pn_topview_key(&v, 'h', &set);
	CHECK_EQ_INT(v.mode, PN_TOPV_LIST);
	pn_topview_key(&v, 'r', &set);
	CHECK_EQ_INT(v.mode, PN_TOPV_RAILS);
	CHECK_EQ_INT(pn_topview_key(&v, 'j', &set), PN_TOPA_NONE);
	pn_topview_key(&v, 'r', &set);
	CHECK_EQ_INT(v.mode, PN_TOPV_LIST);
	/* the caller's actions */
	CHECK_EQ_INT(pn_topview_key(&v, '+', &set), PN_TOPA_SLOWER);
	CHECK_EQ_INT(pn_topview_key(&v, '_', &set), PN_TOPA_FASTER);
	CHECK_EQ_INT(pn_topview_key(&v, ' ', &set), PN_TOPA_PAUSE);
	CHECK_EQ_INT(pn_topview_key(&v, '<', &set), PN_TOPA_STEP_BACK);
	CHECK_EQ_INT(pn_topview_key(&v, ']', &set), PN_TOPA_SEEK_END);
	CHECK_EQ_INT(pn_topview_key(&v, PN_TOPK_OTHER, &set), PN_TOPA_NONE);
	CHECK_EQ_INT(pn_topview_key(&v, -1, &set), PN_TOPA_NONE);
	pn_topview_key(&v, 'e', &set);
	pn_topview_key(&v, 'g', &set);
	CHECK(!v.show_err && v.hide_gpus);
	pn_topview_release(&v);
}

TEST(list_scrolls_to_the_selection)
{
	struct pn_topview v;
	int n;

	ports_init();
	pn_topview_init(&v, NULL, PN_PORT_SORT_NAME, 0);
	n = pn_topview_order(&v, &set);
	CHECK_EQ_INT(pn_topview_scroll(&v, &set, n, 2), 0);
	CHECK(v.top == 0 && v.list_rows == 2);
	pn_topview_key(&v, 'G', &set);
	CHECK_EQ_INT(pn_topview_scroll(&v, &set, n, 2), 2);
	CHECK_EQ_INT(v.top, 1);
	pn_topview_key(&v, PN_TOPK_HOME, &set);
	CHECK_EQ_INT(pn_topview_scroll(&v, &set, n, 2), 0);
	CHECK_EQ_INT(v.top, 0);
	/* more rows than ports: from the first; no room: one row */
	v.top = 2;
	pn_topview_scroll(&v, &set, n, 10);
	CHECK_EQ_INT(v.top, 0);
	pn_topview_scroll(&v, &set, n, 0);
	CHECK_EQ_INT(v.list_rows, 1);
	pn_topview_release(&v);
}

TEST(list_columns_fit_the_screen)
{
	struct pn_topview_layout l;
	struct pn_topview v;

	ports_init();
	pn_topview_init(&v, NULL, PN_PORT_SORT_NAME, 0);
	/* 160 columns: the context, a bar of 40 and a minute of history */
	pn_topview_layout(&v, &set, 1, 160, &l);
	CHECK(l.dev == 6 && l.x_port == 7 && l.x_state == 12 && l.x_speed == 19);
	CHECK(l.x_rx == 25 && l.x_tx == 36 && l.x_pct == 47 && l.x_ctx == 52);
	CHECK_EQ_INT(l.ctx, PN_TOPVIEW_CTX_W);
	CHECK(l.spark == 50 && l.bar == 24 && l.x_bar == 71 && l.x_spark == 96);
	CHECK(l.err == 6 && l.x_err == 147 && l.x_disc == 154);
	/* no topology, no errors: no context, the rest to bar and history */
	v.show_err = 0;
	pn_topview_layout(&v, &set, 0, 160, &l);
	CHECK(l.ctx == 0 && l.err == 0 && l.spark == 60 && l.bar == 40);
	/* narrow: the bar keeps 4 columns while 9 are left, then nothing */
	pn_topview_layout(&v, &set, 1, 62, &l);
	CHECK(l.ctx == 0 && l.bar == 4 && l.spark == 5);
	pn_topview_layout(&v, &set, 1, 40, &l);
	CHECK(l.ctx == 0 && l.bar == 0 && l.spark == 0);
	pn_topview_release(&v);
}

TEST(history_scale_gpu_rows_and_detail_scroll)
{
	struct pn_counters_port p;
	struct pn_topview v;
	int i;

	memset(&p, 0, sizeof(p));
	CHECK(pn_topview_hist_max(&p, 10, PN_TOPV_HIST_BOTH) == 0);
	for (i = 0; i < 5; i++) {
		p.hist_rx[i] = (float)(i * 10);
		p.hist_tx[i] = i == 1 ? 100.0f : (float)NAN;
	}
	p.hist_n = p.hist_head = 5;
	/* the last w samples only; NAN counts as nothing */
	CHECK(pn_topview_hist_max(&p, 5, PN_TOPV_HIST_BOTH) == 100);
	CHECK(pn_topview_hist_max(&p, 3, PN_TOPV_HIST_BOTH) == 40);
	/* one direction: the detail's charts */
	CHECK(pn_topview_hist_max(&p, 5, PN_TOPV_HIST_RX) == 40);
	CHECK(pn_topview_hist_max(&p, 5, PN_TOPV_HIST_TX) == 100);
	CHECK(pn_topview_hist_max(&p, 3, PN_TOPV_HIST_TX) == 0);
	pn_topview_init(&v, NULL, PN_PORT_SORT_NAME, 0);
	CHECK_EQ_INT(pn_topview_gpu_rows(&v, 4, 24), 5);
	CHECK_EQ_INT(pn_topview_gpu_rows(&v, 16, 24), 10);
	CHECK_EQ_INT(pn_topview_gpu_rows(&v, 0, 24), 0);
	CHECK_EQ_INT(pn_topview_gpu_rows(&v, 4, 8), 2);
	CHECK_EQ_INT(pn_topview_gpu_rows(&v, 4, 7), 0);
	v.hide_gpus = 1;
	CHECK_EQ_INT(pn_topview_gpu_rows(&v, 4, 24), 0);
	v.dtop = 50;
	CHECK_EQ_INT(pn_topview_detail_top(&v, 30, 10), 20);
	CHECK_EQ_INT(pn_topview_detail_top(&v, 5, 10), 0);
	pn_topview_release(&v);
}

TEST(header_sums_the_matching_ports)
{
	struct pn_port_totals t;

	ports_init();
	ports[0].state = ports[2].state = PN_PORT_ACTIVE;
	ports[1].tx_Bps = NAN;
	ports[0].tx_Bps = 5;
	ports[2].tx_Bps = 7;
	pn_port_totals(&set, NULL, &t);
	CHECK(t.shown == 3 && t.active == 2 && t.rx_Bps == 60 && t.tx_Bps == 12);
	pn_port_totals(&set, "mlx5", &t);
	CHECK(t.shown == 2 && t.active == 1 && t.rx_Bps == 30 && t.tx_Bps == 5);
	ports[0].rx_Bps = ports[0].tx_Bps = NAN;
	pn_port_totals(&set, "mlx5_0", &t);
	CHECK(t.shown == 1 && isnan(t.rx_Bps) && isnan(t.tx_Bps));
	pn_port_totals(&set, "none", &t);
	CHECK(t.shown == 0 && t.active == 0);
}

int main(void)
{
	RUN(selection_moves_over_the_order_and_is_kept_by_name);
	RUN(filter_is_edited_and_escape_restores_it);
	RUN(views_detail_help_rails_and_procs);
	RUN(list_scrolls_to_the_selection);
	RUN(list_columns_fit_the_screen);
	RUN(history_scale_gpu_rows_and_detail_scroll);
	RUN(header_sums_the_matching_ports);
	return unit_done();
}
