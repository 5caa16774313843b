/* SPDX-License-Identifier: MIT */
/*
 * GPU collectives through a plugin (plugins/include/penny_plugin.h), bound
 * to the engine: the plugin's host services (rank, nodes, allgather,
 * barrier, log) come from the communicator, and every plugin call returns
 * 0 or a negative errno with a one-line message naming the plugin.
 *
 * One node, or a plugin that spans nodes itself (PENNY_CAP_MULTINODE, NCCL):
 * the plugin sees every rank and runs the whole allreduce.  Several nodes
 * and a plugin without that cap (cuda): hierarchical.  The plugin sees only
 * the ranks of its node; an allreduce is
 *   1. the plugin's allreduce among the node's L local ranks (avg as sum),
 *   2. local rank k copies slice k (count / L elements) and the tail
 *      (count % L elements, which every local rank takes) to the host,
 *   3. an engine ring allreduce over the ranks of local index k on every
 *      node (shm/tcp/verbs transports), avg divided by nranks once here,
 *   4. the result goes back to the device and the plugin's allgather puts
 *      the slices together on every local rank.
 * Every element is reduced in one fixed order, so all ranks are
 * bit-identical.  Every node needs the same number of ranks.
 *
 * With a plugin that has the xnode_* calls (cuda, and the test plugin) the
 * path across nodes is GPU-driven instead (gpu/xproxy.h): steps 2-3 are
 * one kernel that hands chunks to this rank's proxy thread through mapped
 * host memory and reduces the peers' chunks as they land, pipelined, with
 * no host synchronisation per call.  One GPU per node: that kernel is the
 * whole allreduce.  Several: the node's allreduce, then the kernel over
 * the whole buffer (up to xnode_whole_max, and always under graph capture:
 * no all-gather after it) or over slice k followed by step 4's all-gather.
 * Without the host in the loop, the allreduce captures in a CUDA graph.
 */
#ifndef PENNY_GPUCOLL_H
#define PENNY_GPUCOLL_H

#include <stddef.h>
#include <stdint.h>

#include "engine/coll.h"
#include "engine/collkind.h"
#include "gpu/plugin.h"

struct pn_gpucoll;

struct pn_gpucoll_cfg {
	const char *plugin;	/* "cuda", "nccl" (penny-NAME.so) */
	int device;		/* index among the visible devices; -1: local rank */
	/* The plugin's log lines (INFO and ERROR; DEBUG goes to PN_DBG); NULL:
	 * everything to PN_DBG(PN_LOG_PLUGIN). */
	void (*log)(void *arg, int level, const char *msg);
	void *log_arg;
	/* Across nodes with a plugin that has xnode_* (gpu/xproxy.h): */
	int xnode;		/* 0: default (on), -1: off (the host-staged path) */
	const char *xnode_transport;	/* NULL: auto; "tcp", "shm", "verbs" */
	uint64_t xnode_chunk;	/* bytes per chunk (0: 1 MiB) */
	uint32_t xnode_slots;	/* chunks in flight per ring (0: 8) */
	int xnode_sockets;	/* tcp sockets per peer (0: 4) */
	uint64_t xnode_whole_max;	/* several GPUs per node: up to this size every
					 * local rank exchanges the whole buffer (no
					 * all-gather after); 0: 1 MiB */
	uint64_t xnode_ll;	/* calls up to this size travel as LL lines (0:
				 * 2 KiB, PN_XNODE_LL_OFF: never) */
	/* the proxy over verbs */
	int xnode_qps;		/* RC QPs per peer (0: 1) */
	const char *xnode_nic;	/* "dev[:port]" (NULL or "": the rank's rail port) */
	int no_mem_check;	/* PENNY_MEM_CHECK=0: no check of the host memory the
				 * host-staged paths take */
};

#define PN_XNODE_LL_OFF UINT64_MAX

/*
 * Collective over the communicator: load the plugin and init it on every
 * rank.  A rank that cannot load or init makes every rank fail with that
 * rank's message (the first failing rank's): -ENOENT (not installed),
 * -ENOEXEC (unusable), or the plugin's init error.
 */
int pn_gpucoll_open(struct pn_gpucoll **out, struct pn_coll *coll,
		    const struct pn_gpucoll_cfg *cfg);
/* Collective (frees registered memory left over). */
void pn_gpucoll_close(struct pn_gpucoll *g);

const char *pn_gpucoll_name(const struct pn_gpucoll *g);
const char *pn_gpucoll_describe(const struct pn_gpucoll *g);
/* The plugin's algorithms (bits 1 << PENNY_ALGO_*) and capabilities. */
uint32_t pn_gpucoll_algos(const struct pn_gpucoll *g);
/* PENNY_CAP_GRAPH only where time() can capture the whole allreduce (not
 * the host-staged hierarchical path). */
uint32_t pn_gpucoll_caps(const struct pn_gpucoll *g);
int pn_gpucoll_hierarchical(const struct pn_gpucoll *g);
/* Rings of the collective's plan the plugin runs (set_rings); 0: its own. */
int pn_gpucoll_planned(const struct pn_gpucoll *g);
/* Across nodes: the proxy's transport ("tcp", "shm"), or NULL when the
 * host-staged path runs (or one node). */
const char *pn_gpucoll_xnode(const struct pn_gpucoll *g);
/* Across nodes, GPU-driven: calls up to this many bytes travel as LL lines (0: none). */
uint64_t pn_gpucoll_xnode_ll(const struct pn_gpucoll *g);

/* Registered (collective) device memory, or plain with registered = 0. */
int pn_gpucoll_alloc(struct pn_gpucoll *g, size_t bytes, int registered, void **ptr);
int pn_gpucoll_free(struct pn_gpucoll *g, void *ptr);
/* Copy bytes of device memory to the host (for reports). */
int pn_gpucoll_read(struct pn_gpucoll *g, void *host, const void *dev, size_t bytes);
int pn_gpucoll_poison(struct pn_gpucoll *g, void *buf, size_t bytes, int byte);
/* The test data of this rank / the exact check over every rank of the job. */
int pn_gpucoll_fill(struct pn_gpucoll *g, void *buf, size_t count, enum pn_dtype t,
		    enum pn_redop op, uint32_t seed);
int pn_gpucoll_check(struct pn_gpucoll *g, const void *buf, size_t count, enum pn_dtype t,
		     enum pn_redop op, uint32_t seed, struct penny_check_v1 *res);

/* One allreduce over every rank of the job; algo: PENNY_ALGO_* (the
 * plugin's algorithm for its part).  Enqueued (pn_gpucoll_sync waits) when
 * the plugin runs it all; hierarchical returns when it is done. */
int pn_gpucoll_allreduce(struct pn_gpucoll *g, const void *send, void *recv, size_t count,
			 enum pn_dtype t, enum pn_redop op, int algo);
/* The algorithm the plugin runs for this call (AUTO resolved). */
int pn_gpucoll_select(struct pn_gpucoll *g, size_t count, enum pn_dtype t, enum pn_redop op,
		      int algo);
int pn_gpucoll_sync(struct pn_gpucoll *g);
/*
 * Warm-up and timed blocks (penny_time_v2's rule, plugins/include/
 * penny_plugin.h; the caller sets size to its sizeof, blocks 1..
 * PENNY_TIME_MAX_BLOCKS and block_usec): block_usec[b] is this rank's time
 * per call in block b and t.usec the mean, whatever the plugin's header (an
 * older plugin is called once per block, the warm-up in the first only).
 */
int pn_gpucoll_time(struct pn_gpucoll *g, struct penny_time_v2 *t);

/*
 * The other collectives (engine/collkind.h), through the plugin's members
 * of the same names (penny_plugin_v1: allgather, reduce_scatter, alltoall,
 * broadcast, reduce, sendrecv) on its own stream: one node, or a plugin
 * that spans nodes itself.  Across nodes otherwise (hierarchical), with
 * the GPU-driven path (the proxy) and a plugin that has xnode_coll, these
 * run GPU-driven, enqueued like allreduce's (graphs capture them):
 *   one rank per node   every collective across any number of nodes
 *   L ranks per node    broadcast and reduce; allgather, reduce_scatter,
 *                       alltoall and sendrecv when the ranks are numbered
 *                       node by node: xnode_coll on one rail (or each) and
 *                       the plugin's collective within each node
 *                       (gpucoll_coll.c)
 * (a plugin without PENNY_CAP_XCOLL_NODES: reduce, reduce_scatter, alltoall
 * and sendrecv across 2 nodes only; the proxy sends an outbox ticket to
 * the nodes of its mask, penny_plugin.h)
 * The others, or all of them without that path, are host-staged: the input
 * to the host, the engine's collective over every rank (pn_coll_run), the
 * output back, each call returning when done (no graphs).
 * pn_gpucoll_coll_staged says which (1: host-staged; also allreduce's
 * hierarchical path without the proxy); the first call of each collective
 * says it and why in a PLUGIN debug line.  pn_gpucoll_coll_supported: 0,
 * or -ENOTSUP and one line ("the cuda plugin does not run reduce_scatter;
 * --backend nccl does") for a plugin without the member or, on one node,
 * without time_fn.  pn_gpucoll_coll enqueues one call (count is
 * collkind.h's, in place as nccl-tests puts it); pn_gpucoll_coll_time
 * times calls of it as pn_gpucoll_time does allreduce's (t.send ... algo
 * are not read).
 */
struct pn_gpucoll_args {
	enum pn_coll_kind kind;
	const void *send;
	void *recv;
	size_t count;
	enum pn_dtype dtype;
	enum pn_redop op;
	int root;
};
int pn_gpucoll_coll_supported(const struct pn_gpucoll *g, enum pn_coll_kind k);
int pn_gpucoll_coll_staged(const struct pn_gpucoll *g, enum pn_coll_kind k);
int pn_gpucoll_coll(struct pn_gpucoll *g, const struct pn_gpucoll_args *a);
int pn_gpucoll_coll_time(struct pn_gpucoll *g, const struct pn_gpucoll_args *a,
			 struct penny_time_v2 *t);
/* Copy bytes of host memory to the device (test data the host made). */
int pn_gpucoll_write(struct pn_gpucoll *g, void *dev, const void *host, size_t bytes);

/* The GPU-to-GPU matrix of a plugin's bw() (no communicator needed):
 * -ENOENT/-ENOEXEC (plugin), -ENOTSUP (no bw), or the plugin's error. */
int pn_gpucoll_bw(const char *plugin, struct penny_bw_v1 *req);

#endif
