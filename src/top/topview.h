/* SPDX-License-Identifier: MIT */
/*
 * What `penny top`'s screen shows, apart from how it draws it (topview.c,
 * htop's model/screen split): the view (the port list, a port's detail, the
 * rails, the processes, the help page), the selected port, the filter being
 * edited, the order, what is hidden, and the keys that change them.  The
 * screen (cmd/tui.c) turns its terminal's keys into the ones below and
 * draws the state; what a key asks of the caller comes back as an action.
 */
#ifndef PENNY_TOPVIEW_H
#define PENNY_TOPVIEW_H

#include "node/counters.h"

enum pn_topview_mode {
	PN_TOPV_LIST, PN_TOPV_DETAIL, PN_TOPV_HELP, PN_TOPV_RAILS, PN_TOPV_PROCS,
};

/* Keys: printable ASCII, '\r' (Enter), 27 (Escape), 127 (Backspace), 8, 21
 * (Ctrl-U) as themselves; the terminal's other keys as these. */
enum pn_topview_key {
	PN_TOPK_UP = 0x100, PN_TOPK_DOWN, PN_TOPK_PGUP, PN_TOPK_PGDN, PN_TOPK_HOME, PN_TOPK_END,
	PN_TOPK_LEFT, PN_TOPK_RIGHT, PN_TOPK_RESIZE,
	PN_TOPK_OTHER,		/* any other key */
};

enum pn_topview_action {
	PN_TOPA_NONE = 0,
	PN_TOPA_REDRAW,		/* the view changed */
	PN_TOPA_QUIT,
	PN_TOPA_SLOWER,		/* '+': longer interval */
	PN_TOPA_FASTER,		/* '-': shorter interval */
	PN_TOPA_PAUSE,		/* Space: toggle */
	PN_TOPA_PROCS,		/* 'p' opened the process view: read its list */
	PN_TOPA_STEP_BACK,	/* ',' '<': a recording's previous sample */
	PN_TOPA_STEP_FWD,	/* '.' '>': its next sample */
	PN_TOPA_SEEK_START,	/* '[': its first sample */
	PN_TOPA_SEEK_END,	/* ']': its last sample */
};

struct pn_topview {
	int sort;		/* enum pn_port_sort */
	char filter[64], saved_filter[64];
	int show_err;		/* 'e' */
	int hide_gpus;		/* 'g' */
	int mode, prev_mode;	/* enum pn_topview_mode; prev_mode: under the help */
	int prompt;		/* editing the filter */
	char sel[80];		/* selected port, by name */
	int top;		/* first list row on screen */
	int dtop;		/* first counter row in the detail view */
	int list_rows;		/* list rows that fit (for paging; the screen sets it) */
	int *idx;		/* the ports shown, in order (pn_topview_order) */
	int idx_cap;
};

/* procs: open on the process view (--processes). */
void pn_topview_init(struct pn_topview *v, const char *filter, int sort, int procs);
void pn_topview_release(struct pn_topview *v);
/* The ports shown, filtered and sorted, into v->idx: their count (0 when
 * out of memory). */
int pn_topview_order(struct pn_topview *v, const struct pn_counters_set *s);
/* The selection's place among the n ports of v->idx; selects the first
 * when it is gone, -1 when there is none. */
int pn_topview_sel_pos(struct pn_topview *v, const struct pn_counters_set *s, int n);
/* The list shows rows of the n ports (pn_topview_order): list_rows and the
 * first row shown (top) so that the selection is on screen; returns the
 * selection's place (pn_topview_sel_pos). */
int pn_topview_scroll(struct pn_topview *v, const struct pn_counters_set *s, int n, int rows);
/* The port of the detail view (also under its help), NULL otherwise. */
const char *pn_topview_detail(const struct pn_topview *v);
/* The process view is shown (also under its help). */
int pn_topview_procs(const struct pn_topview *v);
/* A key applied to the view over the snapshot s: an enum pn_topview_action. */
int pn_topview_key(struct pn_topview *v, int key, const struct pn_counters_set *s);

/* The port list's columns for a screen cols wide (x_*: where each starts;
 * a width 0: not shown): device, port, state, speed, RX, TX, util, the
 * NIC's context (NUMA, RAIL, GPUS) where the topology is known (has_ctx)
 * and a bar still fits, the utilisation bar, the history and, when shown,
 * errors and discards. */
struct pn_topview_layout {
	int dev, port, state, speed, rate, pct, bar, spark, err, ctx;
	int x_port, x_state, x_speed, x_rx, x_tx, x_pct, x_ctx, x_bar, x_spark, x_err, x_disc;
};

/* NUMA, RAIL, GPUS: 4 + 1 + 4 + 1 + 8 columns */
#define PN_TOPVIEW_CTX_W 18

void pn_topview_layout(const struct pn_topview *v, const struct pn_counters_set *s, int has_ctx,
		       int cols, struct pn_topview_layout *l);
/* The largest of the last w samples of port p (0: none) of max(rx, tx) (the
 * history column's scale), or of one direction (the detail's charts). */
enum pn_topview_hist { PN_TOPV_HIST_BOTH, PN_TOPV_HIST_RX, PN_TOPV_HIST_TX };
double pn_topview_hist_max(const struct pn_counters_port *p, int w, int which);
/* Screen rows of the GPU table under the list of a screen lines high: a
 * title and a row per GPU (ngpus), at most half of the list's room; 0
 * hidden or none. */
int pn_topview_gpu_rows(const struct pn_topview *v, int ngpus, int lines);
/* The detail view's first counter row, kept so that rows of the port's
 * nctr counters fill the screen. */
int pn_topview_detail_top(struct pn_topview *v, int nctr, int rows);

#endif
