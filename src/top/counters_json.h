/* SPDX-License-Identifier: MIT */
/*
 * A port's counters as top --json's keys (counters_json.c).
 */
#ifndef PENNY_COUNTERS_JSON_H
#define PENNY_COUNTERS_JSON_H

struct pn_counters_port;

/*
 * Port p's counters as the keys of `penny top --json` (counters_json.c):
 * the totals of its bytes and packets, of its errors and discards, the
 * unreadable count, the flags, and every counter by group with its value
 * and delta (null where not read).  JSON only: the text table is top's.
 */
struct pn_out;
void pn_counters_port_json(struct pn_out *o, const struct pn_counters_port *p);

#endif
