/* SPDX-License-Identifier: MIT */
/* What top's screen shows and how its keys change it (src/node/topview.c):
 * the selection moves over the filtered order and is kept by name, the
 * filter is edited and Escape restores it, Enter opens a port's detail,
 * the help page returns to the view under it, and the caller's actions. */
#define _GNU_SOURCE
#include "unit.h"

#include "node/portsel.h"
#include "node/topview.h"

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

int main(void)
{
	RUN(selection_moves_over_the_order_and_is_kept_by_name);
	RUN(filter_is_edited_and_escape_restores_it);
	RUN(views_detail_help_rails_and_procs);
	RUN(list_scrolls_to_the_selection);
	return unit_done();
}
