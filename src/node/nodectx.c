/* SPDX-License-Identifier: MIT */
/*
 * The node context of `penny top`'s NIC rows (nodectx.h): NUMA node, rail
 * index and GPUs served, from the topology read once; and the rail view's
 * per-rail sums and shares.
 */
#include "node/nodectx.h"
#include "base/log.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int pn_nodectx_from_topo(struct pn_nodectx *c, const struct pn_topo *t)
{
	int *near = NULL, i, g, k, n;

	memset(c, 0, sizeof(*c));
	if (!t->nnics)
		return 0;
	c->nics = calloc((size_t)t->nnics, sizeof(*c->nics));
	near = malloc((size_t)t->nnics * sizeof(int));
	if (!c->nics || !near) {
		free(c->nics);
		free(near);
		c->nics = NULL;
		return pn_err(-ENOMEM, "out of memory");
	}
	c->nnics = t->nnics;
	c->ngpus = t->ngpus;
	for (i = 0; i < t->nnics; i++) {
		const struct pn_topo_dev *d = &t->devs[t->ngpus + i];

		snprintf(c->nics[i].dev, sizeof(c->nics[i].dev), "%s", d->nic.name);
		c->nics[i].numa = d->numa;
		c->nics[i].rail = i;
	}
	for (g = 0; g < t->ngpus; g++) {
		n = pn_topo_rail(t, g, near, NULL);
		for (k = 0; k < n; k++) {
			struct pn_nicctx *x = &c->nics[near[k] - t->ngpus];

			if (x->ngpus < PN_NODECTX_GPUS)
				x->gpu[x->ngpus] = g;
			x->ngpus++;
		}
	}
	free(near);
	return 0;
}

int pn_nodectx_load(struct pn_nodectx *c, const struct pn_topo_cfg *cfg)
{
	struct pn_topo t;
	int ret;

	memset(c, 0, sizeof(*c));
	ret = pn_topo_load(&t, cfg);
	if (ret) {
		if (ret == -ENOMEM)
			return ret;
		snprintf(c->note, sizeof(c->note), "no GPU context: %s", pn_errmsg(ret));
		return 0;
	}
	ret = pn_nodectx_from_topo(c, &t);
	if (!ret && !t.ngpus)
		snprintf(c->note, sizeof(c->note), "no GPU context: no GPUs in the topology");
	pn_topo_release(&t);
	return ret;
}

void pn_nodectx_release(struct pn_nodectx *c)
{
	free(c->nics);
	memset(c, 0, sizeof(*c));
}

const struct pn_nicctx *pn_nodectx_find(const struct pn_nodectx *c, const char *dev)
{
	int i;

	if (!c || !dev)
		return NULL;
	for (i = 0; i < c->nnics; i++)
		if (!strcmp(c->nics[i].dev, dev))
			return &c->nics[i];
	return NULL;
}

const struct pn_nicctx *pn_nodectx_port(const struct pn_nodectx *c, const struct pn_counters_port *p)
{
	return p->type == PN_PT_RDMA ? pn_nodectx_find(c, p->dev) : NULL;
}

const char *pn_nodectx_gpus(const struct pn_nicctx *n, char *buf, size_t len)
{
	size_t at = 0;
	int k, e, w, m = n ? (n->ngpus < PN_NODECTX_GPUS ? n->ngpus : PN_NODECTX_GPUS) : 0;

	if (!len)
		return buf;
	buf[0] = 0;
	for (k = 0; k < m; k = e + 1) {
		/* three or more consecutive GPUs as a range */
		for (e = k; e + 1 < m && n->gpu[e + 1] == n->gpu[e] + 1; e++)
			;
		if (e - k >= 2)
			w = snprintf(buf + at, len - at, "%s%d-%d", k ? "," : "", n->gpu[k], n->gpu[e]);
		else {
			e = k;
			w = snprintf(buf + at, len - at, "%s%d", k ? "," : "", n->gpu[k]);
		}
		if (w < 0 || (size_t)w >= len - at) {
			buf[at] = 0;
			break;
		}
		at += (size_t)w;
	}
	return buf;
}

static void add(struct pn_rail_sum *r, const struct pn_counters_port *p)
{
	r->nports++;
	if (p->rate_gbps > 0)
		r->rate_gbps += p->rate_gbps;
	if (!isfinite(p->rx_Bps) || !isfinite(p->tx_Bps))
		return;
	if (!r->nknown)
		r->rx_Bps = r->tx_Bps = 0;
	r->nknown++;
	r->rx_Bps += p->rx_Bps;
	r->tx_Bps += p->tx_Bps;
}

int pn_nodectx_rails(const struct pn_nodectx *c, const struct pn_counters_set *v, const int *idx,
		     int n, struct pn_rail_sum *out)
{
	int nr = c ? c->nnics : 0, rows = 0, i, k;
	struct pn_rail_sum other = { .rail = -1, .rx_Bps = NAN, .tx_Bps = NAN };
	double total = 0;

	for (i = 0; i < nr; i++) {
		struct pn_rail_sum r = { .rail = i, .nic = &c->nics[i], .rx_Bps = NAN, .tx_Bps = NAN };

		for (k = 0; k < n; k++) {
			const struct pn_counters_port *p = &v->ports[idx[k]];

			if (pn_nodectx_port(c, p) == &c->nics[i])
				add(&r, p);
		}
		if (r.nports)
			out[rows++] = r;
	}
	for (k = 0; k < n; k++) {
		const struct pn_counters_port *p = &v->ports[idx[k]];

		if (!pn_nodectx_port(c, p))
			add(&other, p);
	}
	if (other.nports)
		out[rows++] = other;
	for (i = 0; i < rows; i++)
		if (out[i].nknown)
			total += out[i].rx_Bps + out[i].tx_Bps;
	for (i = 0; i < rows; i++)
		out[i].share = total > 0 && out[i].nknown ? (out[i].rx_Bps + out[i].tx_Bps) / total : NAN;
	return rows;
}
