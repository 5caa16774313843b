/* SPDX-License-Identifier: MIT */
/*
 * A live run of `penny top` (toprun.c): what it opens before sampling and
 * closes after, in one order: the recording (--record), the plot's series
 * (--plot), the remote ports (--lid through --ca), each NIC's context, the
 * GPU rows and the sampler thread; and what it reads beside each counter
 * snapshot.  Errors are one line in pn_errmsg().
 */
#ifndef PENNY_TOPRUN_H
#define PENNY_TOPRUN_H

#include "node/counters.h"
#include "top/gputraffic.h"
#include "node/nodectx.h"
#include "node/perfquery.h"
#include "node/rdmares.h"
#include "top/record.h"

#include <stdint.h>

struct pn_toprun_cfg {
	const char *record;	/* --record: NULL none */
	uint64_t record_max;
	int plot;		/* --plot: keep every sample's rates */
	const char *lids, *ca;	/* --lid, --ca */
	int ethernet;		/* -e */
	int brief;		/* bytes, errors and discards only (pn_counters_cfg) */
	double interval, first;	/* the sampler's interval and first delay */
};

struct pn_toprun {
	struct pn_counters_sampler *sampler;
	struct pn_counters_set view;	/* the last snapshot taken */
	struct pn_nodectx nodectx;
	struct pn_gputraffic gpus;
	struct pn_rdmares procs;
	struct pn_record *rec;		/* --record */
	struct pn_replay *plot;		/* --plot of a live run: its rates */
	struct pn_counters_remote *remote;
	int nremote;
	struct pn_pq *pq;
};

/* Everything of the run, in order; 0 or -errno.  pn_toprun_close releases
 * what was opened either way. */
int pn_toprun_open(struct pn_toprun *r, const struct pn_toprun_cfg *cfg);
/* With every counter snapshot: the GPU rows, and the QP owners when procs
 * (their netlink dump bounded by PN_TOPRUN_PROCS_TIMEOUT). */
#define PN_TOPRUN_PROCS_TIMEOUT 2.0
int pn_toprun_extra(struct pn_toprun *r, int procs);
/* The QP owners read again now. */
int pn_toprun_procs(struct pn_toprun *r);
/* Stop sampling: 0, or -ETIMEDOUT when the thread is stuck in a read (it
 * may still use the remote ports: the process must end without closing). */
int pn_toprun_stop(struct pn_toprun *r);
void pn_toprun_close(struct pn_toprun *r);

#endif
