/* SPDX-License-Identifier: MIT */
/*
 * The state of `penny top`'s screen and its keys (topview.h).
 */
#define _GNU_SOURCE
#include "top/topview.h"
#include "top/portsel.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { K_ESC = 27, K_BS = 127, K_CTRL_H = 8, K_CTRL_U = 21 };

void pn_topview_init(struct pn_topview *v, const char *filter, int sort, int procs)
{
	memset(v, 0, sizeof(*v));
	v->sort = sort >= 0 && sort < PN_PORT_SORT_COUNT ? sort : PN_PORT_SORT_NAME;
	snprintf(v->filter, sizeof(v->filter), "%s", filter ? filter : "");
	v->show_err = 1;
	v->mode = procs ? PN_TOPV_PROCS : PN_TOPV_LIST;
}

void pn_topview_release(struct pn_topview *v)
{
	free(v->idx);
	v->idx = NULL;
	v->idx_cap = 0;
}

int pn_topview_order(struct pn_topview *v, const struct pn_counters_set *s)
{
	int n = pn_port_order_alloc(s, v->filter, v->sort, &v->idx, &v->idx_cap);

	return n < 0 ? 0 : n;
}

int pn_topview_sel_pos(struct pn_topview *v, const struct pn_counters_set *s, int n)
{
	int i;

	for (i = 0; i < n; i++)
		if (!strcmp(s->ports[v->idx[i]].name, v->sel))
			return i;
	if (n > 0) {
		snprintf(v->sel, sizeof(v->sel), "%s", s->ports[v->idx[0]].name);
		return 0;
	}
	v->sel[0] = 0;
	return -1;
}

int pn_topview_scroll(struct pn_topview *v, const struct pn_counters_set *s, int n, int rows)
{
	int sel;

	v->list_rows = rows > 0 ? rows : 1;
	sel = pn_topview_sel_pos(v, s, n);
	if (sel >= 0) {
		if (sel < v->top)
			v->top = sel;
		if (sel >= v->top + rows)
			v->top = sel - rows + 1;
	}
	if (v->top > n - rows)
		v->top = n - rows;
	if (v->top < 0)
		v->top = 0;
	return sel;
}

const char *pn_topview_detail(const struct pn_topview *v)
{
	if (v->mode == PN_TOPV_DETAIL || (v->mode == PN_TOPV_HELP && v->prev_mode == PN_TOPV_DETAIL))
		return v->sel;
	return NULL;
}

int pn_topview_procs(const struct pn_topview *v)
{
	return v->mode == PN_TOPV_PROCS || (v->mode == PN_TOPV_HELP && v->prev_mode == PN_TOPV_PROCS);
}

static int edit_filter(struct pn_topview *v, int key)
{
	size_t len = strlen(v->filter);

	if (key == '\n' || key == '\r') {
		v->prompt = 0;
	} else if (key == K_ESC) {
		snprintf(v->filter, sizeof(v->filter), "%s", v->saved_filter);
		v->prompt = 0;
	} else if (key == K_BS || key == K_CTRL_H) {
		if (len)
			v->filter[len - 1] = 0;
	} else if (key == K_CTRL_U) {
		v->filter[0] = 0;
	} else if (key >= 32 && key < 127 && len + 1 < sizeof(v->filter)) {
		v->filter[len] = (char)key;
		v->filter[len + 1] = 0;
	}
	v->top = 0;
	return PN_TOPA_REDRAW;
}

static int move_sel(struct pn_topview *v, const struct pn_counters_set *s, int key)
{
	int n, pos, page = v->list_rows > 1 ? v->list_rows - 1 : 1;

	n = pn_topview_order(v, s);
	pos = pn_topview_sel_pos(v, s, n);
	if (pos < 0)
		return PN_TOPA_NONE;
	switch (key) {
	case PN_TOPK_UP:
	case 'k':
		pos--;
		break;
	case PN_TOPK_DOWN:
	case 'j':
		pos++;
		break;
	case PN_TOPK_PGUP:
		pos -= page;
		break;
	case PN_TOPK_PGDN:
		pos += page;
		break;
	case PN_TOPK_HOME:
		pos = 0;
		break;
	case PN_TOPK_END:
	case 'G':
		pos = n - 1;
		break;
	}
	if (pos < 0)
		pos = 0;
	if (pos >= n)
		pos = n - 1;
	snprintf(v->sel, sizeof(v->sel), "%s", s->ports[v->idx[pos]].name);
	return PN_TOPA_REDRAW;
}

static int start_filter(struct pn_topview *v)
{
	snprintf(v->saved_filter, sizeof(v->saved_filter), "%s", v->filter);
	v->prompt = 1;
	return PN_TOPA_REDRAW;
}

/* Keys of every view but the help page; -1: not one of them. */
static int common_key(struct pn_topview *v, int key)
{
	switch (key) {
	case '?':
		v->prev_mode = v->mode;
		v->mode = PN_TOPV_HELP;
		return PN_TOPA_REDRAW;
	case '+':
	case '=':
		return PN_TOPA_SLOWER;
	case '-':
	case '_':
		return PN_TOPA_FASTER;
	case ' ':
		return PN_TOPA_PAUSE;
	case ',':
	case '<':
		return PN_TOPA_STEP_BACK;
	case '.':
	case '>':
		return PN_TOPA_STEP_FWD;
	case '[':
		return PN_TOPA_SEEK_START;
	case ']':
		return PN_TOPA_SEEK_END;
	case 'e':
		v->show_err = !v->show_err;
		return PN_TOPA_REDRAW;
	case 'p':
		if (v->mode == PN_TOPV_PROCS) {
			v->mode = PN_TOPV_LIST;
			return PN_TOPA_REDRAW;
		}
		v->mode = PN_TOPV_PROCS;
		return PN_TOPA_PROCS;
	case 'g':
		v->hide_gpus = !v->hide_gpus;
		return PN_TOPA_REDRAW;
	}
	return -1;
}

static int detail_key(struct pn_topview *v, int key)
{
	switch (key) {
	case K_ESC:
	case K_BS:
	case PN_TOPK_LEFT:
	case 'h':
	case '\n':
	case '\r':
		v->mode = PN_TOPV_LIST;
		return PN_TOPA_REDRAW;
	case PN_TOPK_UP:
	case 'k':
		v->dtop--;
		return PN_TOPA_REDRAW;
	case PN_TOPK_DOWN:
	case 'j':
		v->dtop++;
		return PN_TOPA_REDRAW;
	case PN_TOPK_PGUP:
		v->dtop -= 10;
		return PN_TOPA_REDRAW;
	case PN_TOPK_PGDN:
		v->dtop += 10;
		return PN_TOPA_REDRAW;
	}
	return PN_TOPA_NONE;
}

static int list_key(struct pn_topview *v, int key, const struct pn_counters_set *s)
{
	switch (key) {
	case PN_TOPK_UP:
	case PN_TOPK_DOWN:
	case PN_TOPK_PGUP:
	case PN_TOPK_PGDN:
	case PN_TOPK_HOME:
	case PN_TOPK_END:
	case 'j':
	case 'k':
	case 'G':
		return move_sel(v, s, key);
	case 's':
		v->sort = (v->sort + 1) % PN_PORT_SORT_COUNT;
		v->top = 0;
		return PN_TOPA_REDRAW;
	case 'f':
	case '/':
		return start_filter(v);
	case '\n':
	case '\r':
	case PN_TOPK_RIGHT:
		if (v->sel[0] && pn_counters_set_find(s, v->sel)) {
			v->mode = PN_TOPV_DETAIL;
			v->dtop = 0;
		}
		return PN_TOPA_REDRAW;
	}
	return PN_TOPA_NONE;
}

int pn_topview_key(struct pn_topview *v, int key, const struct pn_counters_set *s)
{
	int ret;

	if (key < 0)
		return PN_TOPA_NONE;
	if (v->prompt)
		return edit_filter(v, key);
	if (key == PN_TOPK_RESIZE)
		return PN_TOPA_REDRAW;
	if (key == 'q' || key == 'Q')
		return PN_TOPA_QUIT;
	if (v->mode == PN_TOPV_HELP) {
		v->mode = v->prev_mode;
		return PN_TOPA_REDRAW;
	}
	ret = common_key(v, key);
	if (ret >= 0)
		return ret;
	if (v->mode == PN_TOPV_PROCS)
		return key == K_ESC ? (v->mode = PN_TOPV_LIST, PN_TOPA_REDRAW) : PN_TOPA_NONE;
	if (v->mode == PN_TOPV_RAILS || (v->mode == PN_TOPV_LIST && key == 'r')) {
		switch (key) {
		case 'r':
		case K_ESC:
			v->mode = v->mode == PN_TOPV_RAILS ? PN_TOPV_LIST : PN_TOPV_RAILS;
			return PN_TOPA_REDRAW;
		case 'f':
		case '/':
			return start_filter(v);
		}
		return PN_TOPA_NONE;
	}
	if (v->mode == PN_TOPV_DETAIL)
		return detail_key(v, key);
	return list_key(v, key, s);
}

void pn_topview_layout(const struct pn_topview *v, const struct pn_counters_set *s, int has_ctx,
		       int cols, struct pn_topview_layout *l)
{
	int i, rest, x;

	memset(l, 0, sizeof(*l));
	l->dev = 6;
	for (i = 0; i < s->n; i++) {
		int len = (int)strlen(s->ports[i].dev);

		if (len > l->dev)
			l->dev = len;
	}
	if (l->dev > 16)
		l->dev = 16;
	l->port = 4;
	l->state = 6;
	l->speed = 5;
	l->rate = 10;
	l->pct = 4;
	l->err = v->show_err ? 6 : 0;
	x = l->dev + 1;
	l->x_port = x;
	x += l->port + 1;
	l->x_state = x;
	x += l->state + 1;
	l->x_speed = x;
	x += l->speed + 1;
	l->x_rx = x;
	x += l->rate + 1;
	l->x_tx = x;
	x += l->rate + 1;
	l->x_pct = x;
	x += l->pct + 1;
	rest = cols - x - (v->show_err ? 2 * (l->err + 1) : 0);
	/* the node context where the topology is known and a bar still fits */
	l->x_ctx = x;
	if (has_ctx && rest >= PN_TOPVIEW_CTX_W + 1 + 13) {
		l->ctx = PN_TOPVIEW_CTX_W;
		x += PN_TOPVIEW_CTX_W + 1;
		rest -= PN_TOPVIEW_CTX_W + 1;
	}
	if (rest < 0)
		rest = 0;
	/* history up to a minute of samples; the bar gets the rest, up to 40 */
	l->spark = rest * 2 / 3;
	if (l->spark > 60)
		l->spark = 60;
	l->bar = rest - l->spark - 1;
	if (l->bar > 40)
		l->bar = 40;
	if (l->bar < 4) {
		l->bar = rest >= 9 ? 4 : 0;
		l->spark = rest - l->bar - (l->bar ? 1 : 0);
		if (l->spark < 0)
			l->spark = 0;
	}
	l->x_bar = x;
	x += l->bar + (l->bar ? 1 : 0);
	l->x_spark = x;
	x += l->spark;
	l->x_err = x + 1;
	l->x_disc = l->x_err + l->err + 1;
}

double pn_topview_hist_max(const struct pn_counters_port *p, int w, int which)
{
	int n = p->hist_n < w ? p->hist_n : w, i;
	double max = 0, rx, tx, v;

	for (i = p->hist_n - n; i < p->hist_n; i++) {
		pn_counters_hist(p, i, &rx, &tx);
		rx = isfinite(rx) && which != PN_TOPV_HIST_TX ? rx : 0;
		tx = isfinite(tx) && which != PN_TOPV_HIST_RX ? tx : 0;
		v = fmax(rx, tx);
		if (v > max)
			max = v;
	}
	return max;
}

int pn_topview_gpu_rows(const struct pn_topview *v, int ngpus, int lines)
{
	int room = (lines - 4) / 2;

	if (v->hide_gpus || ngpus <= 0 || room < 2)
		return 0;
	return ngpus + 1 < room ? ngpus + 1 : room;
}

int pn_topview_detail_top(struct pn_topview *v, int nctr, int rows)
{
	if (v->dtop > nctr - rows)
		v->dtop = nctr - rows;
	if (v->dtop < 0)
		v->dtop = 0;
	return v->dtop;
}
