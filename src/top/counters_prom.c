/* SPDX-License-Identifier: MIT */
/*
 * The counter model as a Prometheus text exposition (node_exporter's
 * textfile collector): what `penny top --prom FILE` writes each interval.
 * Metric names, types and help lines are penny-top(1)'s.
 */
#include "top/counters_prom.h"
#include "node/counters.h"
#include "node/nodectx.h"
#include "base/out.h"
#include "node/nic.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* " VALUE\n" at q (room for 23 bytes), without printf: a sample has a
 * thousand; returns the end */
static char *put_count(char *q, unsigned long long v)
{
	char tmp[24], *t = tmp + sizeof(tmp);
	size_t n;

	*--t = '\n';
	do
		*--t = (char)('0' + v % 10);
	while (v /= 10);
	*--t = ' ';
	n = (size_t)(tmp + sizeof(tmp) - t);
	memcpy(q, t, n);
	return q + n;
}

static char *put_str(char *q, const char *s)
{
	size_t n = strlen(s);

	memcpy(q, s, n);
	return q + n;
}

static void prom_labels(FILE *f, const struct pn_counters_port *p)
{
	char port[16];

	snprintf(port, sizeof(port), "%d", p->port);
	pn_prom_label(f, "device", p->dev, 1);
	pn_prom_label(f, "port", port, 0);
}

enum { M_INFO, M_UP, M_SPEED, M_RX_BYTES, M_TX_BYTES, M_RX_PKTS, M_TX_PKTS, M_UTIL, M_ERR, M_DISC,
       M_COUNT };

/* Names after Prometheus' practice (base units in the name, counters in
 * _total) and node_exporter's infiniband collector where they overlap
 * (node_infiniband_port_data_received_bytes_total, ...).  Rates are
 * rate() of the counters; the utilization ratio is penny top's own. */
static const struct {
	const char *name, *type, *help;
} metrics[M_COUNT] = {
	[M_INFO] = { "penny_port_info", "gauge",
		     "Port attributes as labels (value 1)." },
	[M_UP] = { "penny_port_up", "gauge", "1 when the port is ACTIVE (a netdev: up), else 0." },
	[M_SPEED] = { "penny_port_rate_bytes_per_second", "gauge",
		      "Line rate of the port in bytes per second." },
	[M_RX_BYTES] = { "penny_port_data_received_bytes_total", "counter",
			 "Bytes received (port_rcv_data x 4, or the netdev's rx_bytes)." },
	[M_TX_BYTES] = { "penny_port_data_transmitted_bytes_total", "counter",
			 "Bytes transmitted (port_xmit_data x 4, or the netdev's tx_bytes)." },
	[M_RX_PKTS] = { "penny_port_packets_received_total", "counter", "Packets received." },
	[M_TX_PKTS] = { "penny_port_packets_transmitted_total", "counter",
			"Packets transmitted." },
	[M_UTIL] = { "penny_port_utilization_ratio", "gauge",
		     "max(receive, transmit) bytes over the last interval / line rate." },
	[M_ERR] = { "penny_port_errors_total", "counter",
		    "Sum of the port's error counters (symbol, receive, link downed, ...)." },
	[M_DISC] = { "penny_port_discards_total", "counter",
		     "Sum of the port's discard counters (xmit discards, out of buffer, drops)." },
};

/* Every counter file as read, in three families by what it counts. */
enum { F_BYTES, F_PKTS, F_OTHER, F_COUNT };
static const struct {
	const char *name, *help;
} families[F_COUNT] = {
	[F_BYTES] = { "penny_port_stat_bytes_total",
		      "Each byte counter file in bytes (port_*_data: its 4-byte words x 4)." },
	[F_PKTS] = { "penny_port_stat_packets_total", "Each packet counter file." },
	[F_OTHER] = { "penny_port_stat_events_total",
		      "Each other counter file (errors, discards, events) as read." },
};

static int family_of(const struct pn_counter *c)
{
	switch (c->kind) {
	case PN_CK_RX_BYTES:
	case PN_CK_TX_BYTES:
		return F_BYTES;
	case PN_CK_RX_PKTS:
	case PN_CK_TX_PKTS:
		return F_PKTS;
	}
	return F_OTHER;
}

static int ctr_of(const struct pn_counters_port *p, int kind, double *v)
{
	const struct pn_counter *c = p->ix[kind] >= 0 ? &p->ctr[p->ix[kind]] : NULL;

	if (!c || !(c->flags & PN_CF_VALID))
		return 0;
	*v = (double)c->value;
	return 1;
}

static int metric_value(const struct pn_counters_port *p, int m, double *v)
{
	switch (m) {
	case M_INFO:
		*v = 1;
		return 1;
	case M_UP:
		*v = p->state == PN_PORT_ACTIVE;
		return p->state >= 0 || p->type != PN_PT_REMOTE;
	case M_SPEED:
		*v = p->rate_gbps * 1e9 / 8;
		return p->rate_gbps > 0;
	case M_RX_BYTES:
		return ctr_of(p, PN_CK_RX_BYTES, v);
	case M_TX_BYTES:
		return ctr_of(p, PN_CK_TX_BYTES, v);
	case M_RX_PKTS:
		return ctr_of(p, PN_CK_RX_PKTS, v);
	case M_TX_PKTS:
		return ctr_of(p, PN_CK_TX_PKTS, v);
	case M_UTIL:
		*v = p->util;
		break;
	case M_ERR:
		*v = (double)p->err_total;
		return p->ix[PN_CK_ERR] >= 0;
	case M_DISC:
		*v = (double)p->disc_total;
		return p->ix[PN_CK_DISC] >= 0;
	}
	return isfinite(*v);
}

/* penny_port_info's node context (penny-top(1)): only there, so that the
 * other series keep their label sets; ports without one have none. */
static void ctx_labels(FILE *f, const struct pn_nodectx *ctx, const struct pn_counters_port *p)
{
	const struct pn_nicctx *x = pn_nodectx_port(ctx, p);
	char buf[PN_NODECTX_GPUS * 4];

	if (!x)
		return;
	if (x->numa >= 0) {
		snprintf(buf, sizeof(buf), "%d", x->numa);
		pn_prom_label(f, "numa", buf, 0);
	}
	snprintf(buf, sizeof(buf), "%d", x->rail);
	pn_prom_label(f, "rail", buf, 0);
	if (x->ngpus)
		pn_prom_label(f, "gpus", pn_nodectx_gpus(x, buf, sizeof(buf)), 0);
}

struct port_key {
	const char *dev;
	int port, k;
};

static int key_cmp(const void *pa, const void *pb)
{
	const struct port_key *a = pa, *b = pb;
	int c = strcmp(a->dev, b->dev);

	if (c)
		return c;
	if (a->port != b->port)
		return a->port < b->port ? -1 : 1;
	return a->k < b->k ? -1 : a->k > b->k;
}

/*
 * Ports whose labels (device, port) an earlier port of the view already
 * has: a replayed recording may name a port twice, and one series must not
 * appear twice in an exposition.  Returns a mask (1: left out) or NULL
 * when there is none (or no memory: then nothing is left out).
 */
static char *duplicates(const struct pn_counters_set *v, const int *idx, int n)
{
	struct port_key *keys;
	char *dup = NULL;
	int k, any = 0;

	if (n < 2)
		return NULL;
	keys = malloc((size_t)n * sizeof(*keys));
	if (!keys)
		return NULL;
	for (k = 0; k < n; k++)
		keys[k] = (struct port_key){ v->ports[idx[k]].dev, v->ports[idx[k]].port, k };
	qsort(keys, (size_t)n, sizeof(*keys), key_cmp);
	for (k = 1; k < n; k++)
		if (!strcmp(keys[k].dev, keys[k - 1].dev) && keys[k].port == keys[k - 1].port)
			any = 1;
	if (any)
		dup = calloc((size_t)n, 1);
	for (k = 1; dup && k < n; k++)
		if (!strcmp(keys[k].dev, keys[k - 1].dev) && keys[k].port == keys[k - 1].port)
			dup[keys[k].k] = 1;
	free(keys);
	return dup;
}

void pn_counters_prom_write(FILE *f, const struct pn_counters_set *v, const int *idx, int n,
			    double interval, const struct pn_nodectx *ctx)
{
	char *dup = duplicates(v, idx, n);
	int m, k, i;
	double x;

	for (k = 0; dup && k < n; k++) {
		if (!dup[k])
			continue;
		fputs("# penny: a second port with the labels of ", f);
		prom_labels(f, &v->ports[idx[k]]);
		fputs(" is left out\n", f);
	}
	for (m = 0; m < M_COUNT; m++) {
		fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", metrics[m].name, metrics[m].help,
			metrics[m].name, metrics[m].type);
		for (k = 0; k < n; k++) {
			const struct pn_counters_port *p = &v->ports[idx[k]];

			if ((dup && dup[k]) || !metric_value(p, m, &x))
				continue;
			fputs(metrics[m].name, f);
			fputc('{', f);
			prom_labels(f, p);
			if (m == M_INFO) {
				pn_prom_label(f, "type", pn_port_type_name(p->type), 0);
				pn_prom_label(f, "state", p->state_name, 0);
				pn_prom_label(f, "link_layer", p->link_layer, 0);
				pn_prom_label(f, "rate", p->rate, 0);
				pn_prom_label(f, "netdev", p->netdev, 0);
				pn_prom_label(f, "source",
					   p->data_group >= 0 ? pn_counters_group_name(p->data_group) : "",
					   0);
				ctx_labels(f, ctx, p);
			}
			if (x == floor(x) && fabs(x) < 1e18)
				fprintf(f, "} %.0f\n", x);
			else
				fprintf(f, "} %.10g\n", x);
		}
	}
	for (m = 0; m < F_COUNT; m++) {
		fprintf(f, "# HELP %s %s\n# TYPE %s counter\n", families[m].name, families[m].help,
			families[m].name);
		for (k = 0; k < n; k++) {
			const struct pn_counters_port *p = &v->ports[idx[k]];
			char dev[3 * sizeof(p->dev) + 1],
				line[sizeof(dev) + 96 + 3 * sizeof(p->ctr->name) + 64];
			size_t npre, room, e;

			if (dup && dup[k])
				continue;
			/* the port's labels once, not once a counter (about 40 a
			 * port), and each line in one piece */
			pn_prom_escape(dev, sizeof(dev), p->dev);
			npre = (size_t)snprintf(line, sizeof(line), "%s{device=\"%s\",port=\"%d\",group=\"",
						families[m].name, dev, p->port);
			for (i = 0; i < p->nctr; i++) {
				const struct pn_counter *c = &p->ctr[i];
				char *q = line + npre;

				if (!(c->flags & PN_CF_VALID) || family_of(c) != m)
					continue;
				q = put_str(q, pn_counters_group_name(c->group));
				q = put_str(q, "\",counter=\"");
				room = sizeof(line) - (size_t)(q - line) - 32; /* 32: '"}' and the value */
				e = pn_prom_escape(q, room, c->name);
				q += e < room ? e : room - 1;
				q = put_str(q, "\"}");
				q = put_count(q, c->value);
				fwrite(line, 1, (size_t)(q - line), f);
			}
		}
	}
	fprintf(f, "# HELP penny_top_sample_timestamp_seconds When the sample was taken.\n"
		   "# TYPE penny_top_sample_timestamp_seconds gauge\n"
		   "penny_top_sample_timestamp_seconds %.3f\n",
		v->wall);
	fprintf(f, "# HELP penny_top_interval_seconds Time between samples.\n"
		   "# TYPE penny_top_interval_seconds gauge\npenny_top_interval_seconds %g\n",
		interval);
	free(dup);
}

