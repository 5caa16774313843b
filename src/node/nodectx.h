/* SPDX-License-Identifier: MIT */
/*
 * Where each NIC sits in the node, for `penny top`: its NUMA node, its rail
 * (the NIC's index in the topology's NIC order, NIC<rail>, as topo and
 * ring-plan number them) and the GPUs it serves (those whose rail, the
 * nearest NICs of pn_topo_rail(), contains it).  Read once from the topology
 * (through the sysfs root) before sampling; the rail view's sums are a pure
 * function of a counter snapshot and this map.
 */
#ifndef PENNY_NODECTX_H
#define PENNY_NODECTX_H

#include "node/counters.h"
#include "node/topo.h"

#include <stddef.h>

#define PN_NODECTX_GPUS 64	/* GPUs remembered per NIC */

struct pn_nicctx {
	char dev[64];		/* RDMA device name, "mlx5_0" */
	int numa;		/* NUMA node, -1 unknown */
	int rail;		/* index in the topology's NIC order */
	int ngpus;		/* GPUs served (gpu[] holds the first PN_NODECTX_GPUS) */
	int gpu[PN_NODECTX_GPUS]; /* GPU indices (GPU<i>), ascending */
};

struct pn_nodectx {
	int ngpus, nnics;	/* of the topology; 0 when it could not be read */
	struct pn_nicctx *nics;	/* nnics, in rail order */
	char note[200];		/* why there is no GPU context, "" when there is */
};

/*
 * Read the topology once (pn_topo_load with cfg) and map every NIC.  A
 * topology that cannot be read, or one without GPUs, is not an error: the
 * map is empty or has no GPUs and note says why.  Returns 0, or -ENOMEM.
 */
int pn_nodectx_load(struct pn_nodectx *c, const struct pn_topo_cfg *cfg);
/* Build from a loaded topology (tests). */
int pn_nodectx_from_topo(struct pn_nodectx *c, const struct pn_topo *t);
void pn_nodectx_release(struct pn_nodectx *c);
/* The NIC of an RDMA device name; NULL when c is NULL or it is not known. */
const struct pn_nicctx *pn_nodectx_find(const struct pn_nodectx *c, const char *dev);
/* The context of a counter port (RDMA ports only), NULL none. */
const struct pn_nicctx *pn_nodectx_port(const struct pn_nodectx *c, const struct pn_counters_port *p);
/* GPU indices, "0-3,6" (three or more in a row as a range), "" none; returns buf. */
const char *pn_nodectx_gpus(const struct pn_nicctx *n, char *buf, size_t len);

/* One row of the rail view. */
struct pn_rail_sum {
	int rail;		/* -1: ports without a rail (netdevs, remote, unknown) */
	const struct pn_nicctx *nic; /* NULL for rail -1 */
	int nports;
	int nknown;		/* ports whose rx and tx rates are known */
	double rx_Bps, tx_Bps;	/* sums of the known rates; NAN when none known */
	double rate_gbps;	/* sum of the line rates */
	double share;		/* (rx + tx) / the node's (rx + tx), NAN when that is 0 */
};

/*
 * Sum the ports idx[0..n) of v per rail into out (room for c->nnics + 1
 * rows): rails in order, each with at least one port, then one row for
 * ports without a rail if any.  Returns the number of rows.
 */
int pn_nodectx_rails(const struct pn_nodectx *c, const struct pn_counters_set *v, const int *idx,
		     int n, struct pn_rail_sum *out);

#endif
