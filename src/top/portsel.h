/* SPDX-License-Identifier: MIT */
/*
 * Port selection for `penny top` (portsel.c): the --filter match and the
 * --sort order over a counters set, the same for the screen and for batch,
 * --record and --prom output.
 */
#ifndef PENNY_PORTSEL_H
#define PENNY_PORTSEL_H

#include "node/counters.h"

enum pn_port_sort { PN_PORT_SORT_NAME, PN_PORT_SORT_RX, PN_PORT_SORT_TX, PN_PORT_SORT_UTIL,
		    PN_PORT_SORT_ERRORS, PN_PORT_SORT_COUNT };

/* "name", "rx", "tx", "util", "errors" (any case): the sort, -1 none. */
int pn_port_sort_parse(const char *s);
const char *pn_port_sort_name(int sort);
/* Name (or netdev) matches: a glob when pattern has * ? [, else a substring. */
int pn_port_match(const char *pattern, const struct pn_counters_port *p);
/* Indices of the ports to show, filtered and sorted (largest first, then in
 * the set's natural order); idx has room for s->n.  Returns the count. */
int pn_port_order(const struct pn_counters_set *s, const char *filter, int sort, int *idx);
/* The same into *idx, grown to s->n (*cap: its room, 0 at first; free()
 * *idx): the count, or -ENOMEM. */
int pn_port_order_alloc(const struct pn_counters_set *s, const char *filter, int sort, int **idx,
			int *cap);

/* The ports that match filter, summed for the screen's header: how many,
 * how many are ACTIVE, and their RX and TX (NAN when none has a rate). */
struct pn_port_totals {
	int shown, active;
	double rx_Bps, tx_Bps;
};
void pn_port_totals(const struct pn_counters_set *s, const char *filter, struct pn_port_totals *t);

#endif
