/* SPDX-License-Identifier: MIT */
/*
 * Which ports `penny top` shows, and in which order (portsel.h): its screen,
 * its batch lines, --record and --prom all take the same selection.
 */
#define _GNU_SOURCE
#include "top/portsel.h"

#include "node/nic.h"

#include <errno.h>
#include <fnmatch.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char *const sort_names[PN_PORT_SORT_COUNT] = { "name", "rx", "tx", "util", "errors" };

int pn_port_sort_parse(const char *s)
{
	int i;

	for (i = 0; i < PN_PORT_SORT_COUNT; i++)
		if (!strcasecmp(s, sort_names[i]))
			return i;
	return -1;
}

const char *pn_port_sort_name(int sort)
{
	return sort >= 0 && sort < PN_PORT_SORT_COUNT ? sort_names[sort] : "?";
}

int pn_port_match(const char *pattern, const struct pn_counters_port *p)
{
	if (!pattern || !*pattern)
		return 1;
	if (strpbrk(pattern, "*?["))
		return !fnmatch(pattern, p->name, 0) || !fnmatch(pattern, p->dev, 0) ||
		       (p->netdev[0] && !fnmatch(pattern, p->netdev, 0));
	return strcasestr(p->name, pattern) || (p->netdev[0] && strcasestr(p->netdev, pattern));
}

struct order_ctx {
	const struct pn_counters_set *s;
	int sort;
};

static double sort_key(const struct pn_counters_port *p, int sort)
{
	double v = NAN;

	switch (sort) {
	case PN_PORT_SORT_RX:
		v = p->rx_Bps;
		break;
	case PN_PORT_SORT_TX:
		v = p->tx_Bps;
		break;
	case PN_PORT_SORT_UTIL:
		v = p->util;
		break;
	case PN_PORT_SORT_ERRORS:
		/* errors in the last interval first, then all-time totals */
		v = (double)(p->err_delta + p->disc_delta) * 1e12 +
		    (double)(p->err_total + p->disc_total);
		break;
	}
	return isfinite(v) ? v : -1;
}

static int order_cmp(const void *a, const void *b, void *arg)
{
	const struct order_ctx *c = arg;
	int ia = *(const int *)a, ib = *(const int *)b;

	if (c->sort != PN_PORT_SORT_NAME) {
		double ka = sort_key(&c->s->ports[ia], c->sort);
		double kb = sort_key(&c->s->ports[ib], c->sort);

		if (ka != kb)
			return ka > kb ? -1 : 1; /* largest first */
	}
	return ia - ib; /* the set is in natural order */
}

int pn_port_order(const struct pn_counters_set *s, const char *filter, int sort, int *idx)
{
	struct order_ctx c = { s, sort };
	int i, n = 0;

	for (i = 0; i < s->n; i++)
		if (pn_port_match(filter, &s->ports[i]))
			idx[n++] = i;
	if (n > 1)
		qsort_r(idx, (size_t)n, sizeof(int), order_cmp, &c);
	return n;
}

int pn_port_order_alloc(const struct pn_counters_set *s, const char *filter, int sort, int **idx,
			int *cap)
{
	if (s->n > *cap || !*idx) {
		int *ni = realloc(*idx, (size_t)(s->n ? s->n : 1) * sizeof(int));

		if (!ni)
			return -ENOMEM;
		*idx = ni;
		*cap = s->n ? s->n : 1;
	}
	return pn_port_order(s, filter, sort, *idx);
}

void pn_port_totals(const struct pn_counters_set *s, const char *filter, struct pn_port_totals *t)
{
	double rx = 0, tx = 0;
	int i, have = 0;

	memset(t, 0, sizeof(*t));
	for (i = 0; i < s->n; i++) {
		const struct pn_counters_port *p = &s->ports[i];

		if (!pn_port_match(filter, p))
			continue;
		t->shown++;
		if (p->state == PN_PORT_ACTIVE)
			t->active++;
		if (isfinite(p->rx_Bps))
			rx += p->rx_Bps, have = 1;
		if (isfinite(p->tx_Bps))
			tx += p->tx_Bps, have = 1;
	}
	t->rx_Bps = have ? rx : NAN;
	t->tx_Bps = have ? tx : NAN;
}
