/* SPDX-License-Identifier: MIT */
/*
 * The screen of `penny top` (ncursesw): a port list with the GPU rows under
 * it, a rail view (the ports of each rail summed), a process view (who owns
 * QPs), a detail view of one port and a help page.  It only draws a snapshot
 * of the counter model, in the order top/portsel.h gives it, as the view
 * state of top/topview.h says, with what top/toploop.h's pn_top_status
 * knows beside it, and hands the terminal's keys to that state, which returns
 * actions for the loops (quit, interval, pause); it never samples (htop's
 * model/screen split).
 *
 * The formatting helpers are shared with the batch table.
 */
#ifndef PENNY_TUI_H
#define PENNY_TUI_H

#include "node/counters.h"
#include "top/gputraffic.h"
#include "node/nodectx.h"
#include "top/portsel.h"
#include "node/rdmares.h"
#include "top/toploop.h"
#include "top/topview.h"

#include <stddef.h>

struct tui;

/* Bits per second with a unit that fits: "12.35 Gb/s", "n/a". */
const char *tui_fmt_bps(char *buf, size_t len, double bytes_per_sec);
/* Line rate: "400G", "2.5G", "100M", "-". */
const char *tui_fmt_speed(char *buf, size_t len, double gbps);

/* procs: open on the process view (--processes) */
int tui_open(struct tui **t, const char *filter, int sort, int procs);
void tui_close(struct tui *t);
void tui_draw(struct tui *t, const struct pn_counters_set *view, const struct pn_top_status *st);
/* The port of the detail view, NULL in the list and help. */
const char *tui_detail(const struct tui *t);
/* The process view is on screen: the caller reads its list at each sample. */
int tui_procs_shown(const struct tui *t);
/* Next key without waiting, or -1. */
int tui_getkey(struct tui *t);
/* Apply a key to the view state (top/topview.h); returns an enum pn_topview_action. */
int tui_key(struct tui *t, int key, const struct pn_counters_set *view);

#endif
