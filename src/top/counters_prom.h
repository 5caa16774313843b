/* SPDX-License-Identifier: MIT */
/*
 * top --prom's exposition of the counter model (counters_prom.c).
 */
#ifndef PENNY_COUNTERS_PROM_H
#define PENNY_COUNTERS_PROM_H

#include <stdio.h>

struct pn_counters_set;

/*
 * The ports idx[0..n) of v as a Prometheus text exposition into f (metrics
 * penny_port_* (the counter files as penny_port_stat_*), the sample's time and interval;
 * counters_prom.c).  ctx (node/nodectx.h, may be NULL) adds numa, rail and
 * gpus labels to penny_port_info.  Write errors show when f is committed
 * (base/ofile.h).
 */
struct pn_nodectx;
void pn_counters_prom_write(FILE *f, const struct pn_counters_set *v, const int *idx, int n,
			    double interval, const struct pn_nodectx *ctx);

#endif
