/* SPDX-License-Identifier: MIT */
/*
 * A port's counters as `penny top --json` writes them (counters_json.h,
 * pn_counters_port_json): JSON keys only, through the one output path.
 */
#include "top/counters_json.h"
#include "node/counters.h"

#include "base/out.h"

static void out_ctr_value(struct pn_out *o, const char *key, const struct pn_counters_port *p,
			  int kind)
{
	const struct pn_counter *c = p->ix[kind] >= 0 ? &p->ctr[p->ix[kind]] : NULL;

	if (c && (c->flags & PN_CF_VALID))
		pn_out_uint(o, PN_JSON, key, NULL, c->value);
	else
		pn_out_null(o, PN_JSON, key, NULL);
}

static void out_counters(struct pn_out *o, const struct pn_counters_port *p)
{
	int g, i;

	pn_out_open_object(o, "counters");
	for (g = 0; g < PN_CG_COUNT; g++) {
		int opened = 0;

		for (i = 0; i < p->nctr; i++) {
			const struct pn_counter *c = &p->ctr[i];

			if (c->group != g)
				continue;
			if (!opened) {
				pn_out_open_object(o, pn_counters_group_name(g));
				opened = 1;
			}
			pn_out_open_object(o, c->name);
			if (c->flags & PN_CF_VALID)
				pn_out_uint(o, PN_JSON, "value", NULL, c->raw);
			else
				pn_out_null(o, PN_JSON, "value", NULL);
			if (c->flags & PN_CF_DELTA)
				pn_out_uint(o, PN_JSON, "delta", NULL, c->delta / c->scale);
			else
				pn_out_null(o, PN_JSON, "delta", NULL);
			pn_out_close_object(o);
		}
		if (opened)
			pn_out_close_object(o);
	}
	pn_out_close_object(o);
}

void pn_counters_port_json(struct pn_out *o, const struct pn_counters_port *p)
{
	out_ctr_value(o, "rx_bytes", p, PN_CK_RX_BYTES);
	out_ctr_value(o, "tx_bytes", p, PN_CK_TX_BYTES);
	out_ctr_value(o, "rx_packets", p, PN_CK_RX_PKTS);
	out_ctr_value(o, "tx_packets", p, PN_CK_TX_PKTS);
	pn_out_uint(o, PN_JSON, "errors_total", NULL, p->err_total);
	pn_out_uint(o, PN_JSON, "discards_total", NULL, p->disc_total);
	pn_out_int(o, PN_JSON, "unreadable", NULL, p->nunreadable);
	pn_out_bool(o, PN_JSON, "wrapped", NULL, !!(p->flags & PN_CF_WRAP));
	pn_out_bool(o, PN_JSON, "reset", NULL, !!(p->flags & PN_CF_RESET));
	pn_out_bool(o, PN_JSON, "saturated", NULL, !!(p->flags & PN_CF_SAT));
	pn_out_bool(o, PN_JSON, "jumped", NULL, !!(p->flags & PN_CF_JUMP));
	out_counters(o, p);
}
