/* SPDX-License-Identifier: MIT */
/*
 * Shared by gpucoll.c (the plugin, the proxy, allreduce) and gpucoll_coll.c
 * (the other collectives); not API (gpucoll.h is).
 */
#ifndef PENNY_GPU_GPUCOLL_INT_H
#define PENNY_GPU_GPUCOLL_INT_H

#include "gpu/gpucoll.h"
#include "gpu/plugin.h"

#include <stddef.h>
#include <stdint.h>

struct pn_gpucoll {
	struct pn_coll *coll;
	struct pn_comm *c;
	struct pn_plugin *pl;
	const struct penny_plugin_v1 *ops;
	void *be;
	struct pn_gpucoll_cfg cfg;
	struct penny_host_v1 host;
	int (*allgather)(void *be, const void *send, void *recv, size_t count, int dtype);
	int hier;
	int *everyone;		/* 0..nranks-1 */
	int *local;		/* this node's ranks, in local order */
	int *inter;		/* the ranks of my local index on every node, node order */
	int *lidx, *place;	/* of every rank: its local index, its place (node) on its rail */
	int nlocal, ninter, me_local;
	int blocked;		/* rank r is the r % L-th of its node and the r / L-th of its
				 * rail: a rail's allgather blocks land at their ranks' places */
	unsigned told;		/* 1 << kind: its path across nodes was logged */
	void *scratch;		/* GPU-driven collectives: their step within the node (coll_scratch) */
	size_t scap;
	char *hbuf;		/* hierarchical: the slice on the host */
	size_t hcap;
	struct pn_xproxy *xp;	/* across nodes, GPU-driven (NULL: host-staged) */
	uint64_t xnode_ll;	/* calls up to this size travel as LL lines */
	void *xn;		/* the plugin's handle of the boxes */
	int me_inter;		/* my place among g->inter */
	int capturing;		/* time() with graphs: whole-buffer exchanges only */
	int planned;		/* rings handed to the plugin (set_rings), 0: its own */
	int host_claimed;	/* a host service failed: the first one writes */
	int host_ret;		/* its error, set (release) after host_err */
	char host_err[512];	/* and the engine's message for it: the cause of the
				 * plugin's failure that follows, which says only
				 * "allgather failed" (a plugin may call the services
				 * from a thread of its own) */
};

/* The plugin's failure ret (of its call what) as the core's error. */
int pn_gpucoll_plugin_err(struct pn_gpucoll *g, int ret, const char *what);
/* The host slice (g->hbuf) holds bytes. */
int pn_gpucoll_host_room(struct pn_gpucoll *g, size_t bytes);
/* time() of a host-staged path: one(arg) enqueues a call, timed on the host. */
int pn_gpucoll_hier_time(struct pn_gpucoll *g, struct penny_time_v2 *t, int (*one)(void *),
			 void *arg);

#endif
