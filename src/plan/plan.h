/* SPDX-License-Identifier: MIT */
/*
 * plan: rail-aligned ring planning for clusters of GPU nodes (pure functions).
 *
 * Model: nodes, each with a layout (GPUs, NIC ports with rail ids, path
 * classes GPU<->GPU and GPU<->NIC, each GPU's nearest NICs).  Nodes with the
 * same hardware share one layout, so 4096 identical nodes cost one layout.
 *
 * Plan: rings; a ring is a cyclic list of segments, one per node it passes:
 * (node, receive NIC, GPUs in order, send NIC).  The send NIC of a segment
 * and the receive NIC of the next one form an inter-node hop; a rail-aligned
 * hop has the same rail id on both ends.
 *
 * Construction (penny's version of NCCL's "alternate rings to avoid crossing
 * rails", connect.cc): rails are paired (A, B).  Ring 2p enters even nodes on
 * A and leaves on B, enters odd nodes on B and leaves on A (odd nodes walk
 * the GPUs in reverse); ring 2p+1 uses the other rail of the pair at every
 * node and walks the GPUs the other way, so each NIC sends for one ring and
 * receives for one ring.  With an odd number of nodes one node per ring pair
 * enters and leaves on the same rail (the "turnaround"); pairs place it on
 * different nodes.  An unpaired rail gets one ring that turns on it at every
 * node.  All rings go through the nodes in the same order, as NCCL's do.
 */
#ifndef PENNY_PLAN_H
#define PENNY_PLAN_H

#include "node/topo.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct pn_plan_best;

#define PN_PLAN_MAX_GPUS 16	/* per node (exact path search is 2^G) */
#define PN_PLAN_MAX_NICS 64	/* NIC ports per node */
#define PN_PLAN_NAME 64
#define PN_PLAN_HOST 65	/* a host name: Linux's HOST_NAME_MAX (64) and its NUL */
#define PN_PLAN_MAX_RINGS 64	/* the engine runs one channel per ring, 64 at most (exec.c) */
/* A cluster: the largest GPU fabrics are ~200k GPUs on 25k-50k nodes; a plan
 * costs nodes x rings (65536 x 64: 270 MB, 1.4 GB of JSON), refused above. */
#define PN_PLAN_MAX_NODES 65536
#define PN_PLAN_MAX_RANKS (1 << 19)

/* The plural s of a count in the text and messages: "1 ring", "2 rings". */
#define PN_PLAN_S(n) ((n) == 1 ? "" : "s")

/* Nominal link rates for the bandwidth prediction (GB/s, one direction). */
#define PN_PLAN_NVLINK_GBS 26.56 /* per NVLink (NVLink4: NV18 = 478 GB/s) */
#define PN_PLAN_PCIE_GBS 63.0	 /* PCIe Gen5 x16 (default of --pcie-rate) */
#define PN_PLAN_SYS_GBS 10.0	 /* a hop across CPU sockets (NCCL's figure) */

/* Path classes: topo.h's enum pn_path (X NV PIX PXB PHB NODE SYS), plus unknown. */
#define PN_PLAN_PATH_UNKNOWN (PN_PATH_SYS + 1)

struct pn_plan_path {
	uint8_t cls;	/* enum pn_path, or PN_PLAN_PATH_UNKNOWN */
	uint8_t nv;	/* NVLink count for PN_PATH_NV */
};

/* "NV18" -> {NV,18}, "PIX", ... (topo.h's names); -EINVAL for anything else. */
int pn_plan_path_parse(const char *s, struct pn_plan_path *p);
/* "NV18", "PIX", ... into buf. */
const char *pn_plan_path_name(struct pn_plan_path p, char *buf, size_t len);
/* Order of goodness: lower is better (X 0, NV18 82, PIX 100, ... SYS 500). */
int pn_plan_path_score(struct pn_plan_path p);
/* NCCL's graph type name for a path: LOC NVL PIX PXB PHB SYS. */
const char *pn_plan_path_nccl(struct pn_plan_path p);

struct pn_plan_gpu {
	char name[16];		/* "GPU0" */
	int index;		/* NVML / CUDA (PCI order) index: NCCL's gpu dev */
	uint64_t near;		/* bit n: NIC n is one of its nearest */
};

struct pn_plan_nic {
	char name[PN_PLAN_NAME];	/* "mlx5_0", or "mlx5_0:2" on a multi-port NIC */
	char device[PN_PLAN_NAME];	/* "mlx5_0" */
	char label[16];			/* the topo file's "NIC0" (matrix key) */
	int port;
	int rail;
	double rate_gbps;
	char state[16];			/* "ACTIVE", "DOWN", ... */
	int active;			/* port ACTIVE and selected (--rails) */
	int netdev;			/* NCCL net dev index: position among active ports, -1 */
};

struct pn_plan_layout {
	int ngpus, nnics;
	struct pn_plan_gpu gpus[PN_PLAN_MAX_GPUS];
	struct pn_plan_nic *nics;
	struct pn_plan_path gg[PN_PLAN_MAX_GPUS][PN_PLAN_MAX_GPUS];
	struct pn_plan_path *gn;	/* [gpu * nnics + nic] */
	uint64_t hash;			/* of the content above, to share layouts */
	struct pn_plan_best *best;	/* cache of best paths (pn_plan_best_cost) */
	int nbest, capbest;
};

struct pn_plan_node {
	char host[PN_PLAN_HOST];
	int layout;
	int rank0;	/* global rank of its first GPU */
};

/* Messages (notes, violations): bounded, with a count of what was left out. */
struct pn_plan_msgs {
	int n, cap, dropped;
	char **v;
};
int pn_plan_msg(struct pn_plan_msgs *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void pn_plan_msgs_release(struct pn_plan_msgs *m);

struct pn_plan_model {
	int nnodes, nlayouts, caplayouts;
	struct pn_plan_node *nodes;
	struct pn_plan_layout *layouts;
	int nranks;
	char source[16];		/* "synthetic", "topo-file", "json", "nccl-xml" */
	struct pn_plan_msgs notes;	/* what loading found (uneven inputs) */
	int exact;			/* classes/rates known (not guessed from a graph file) */
	int rails_set;			/* rails given (--rails, synthetic, read back) */
	int rails_listed;		/* --rails: the ports not listed are not used */
};

void pn_plan_model_init(struct pn_plan_model *m);
void pn_plan_model_release(struct pn_plan_model *m);

struct pn_plan_synth {
	int nodes, gpus, nics, gpus_per_nic;	/* gpus_per_nic 0: spread evenly */
	double rate_gbps;			/* NIC port rate, default 400 */
	int nvlinks;				/* NV count between GPUs, default 18; 0: PCIe only */
	const char *hosts;			/* comma list, or NULL: node01.. */
};
int pn_plan_model_synthetic(struct pn_plan_model *m, const struct pn_plan_synth *s);

/*
 * Add a node with layout *l; the model takes l's allocations (sharing an
 * identical layout when there is one) and clears *l.
 */
int pn_plan_model_add_node(struct pn_plan_model *m, const char *host, struct pn_plan_layout *l);
/* The same in two steps: a layout (index returned, or -errno), then nodes using it. */
int pn_plan_model_add_layout(struct pn_plan_model *m, struct pn_plan_layout *l);
int pn_plan_model_add_node_ref(struct pn_plan_model *m, const char *host, int layout);
/* Free a layout's allocations (one not given to a model). */
void pn_plan_layout_release(struct pn_plan_layout *l);
/* Add one node from the JSON text of `penny topo --save` (file name for messages). */
int pn_plan_model_add_topo(struct pn_plan_model *m, const char *text, size_t len,
			   const char *file);
/*
 * Add this node from a loaded topology (penny topo's model: live, sysfs
 * root or hwloc XML): classes from pn_topo_path, nearest NICs from
 * pn_topo_rail, one NIC entry per port.  -EINVAL when it has no GPU.
 */
int pn_plan_model_add_topology(struct pn_plan_model *m, const struct pn_topo *t);
/* Apply "dev:port:rail,..." (NCCL_IB_HCA style): listed ports get the rail, others are unused. */
int pn_plan_model_set_rails(struct pn_plan_model *m, const char *spec);
/* Reorder nodes to follow "h1,h2,..." (every node named exactly once). */
int pn_plan_model_order_hosts(struct pn_plan_model *m, const char *hosts);
/*
 * After loading: check host names, number ranks and NCCL net devs; unless
 * rails were set, the rail of a NIC port is the position of its name in the
 * naturally sorted list of all port names of the cluster (mlx5_0 -> 0, ...),
 * so equal device names share a rail even where a node lacks one.
 */
int pn_plan_model_finish(struct pn_plan_model *m);
/* NIC index on a rail in a layout, or -1. */
int pn_plan_layout_nic_on_rail(const struct pn_plan_layout *l, int rail);
/* Node index by host name, or -1. */
int pn_plan_model_find_host(const struct pn_plan_model *m, const char *host);
/* The node of a global rank (ranks are numbered node by node): its index,
 * the last node whose first rank is not above it. */
int pn_plan_model_node_of(const struct pn_plan_model *m, int rank);

struct pn_plan_seg {
	int node;
	int in_nic, out_nic;	/* NIC index in the node's layout, -1: none (one node) */
	int off, n;		/* GPUs: ring->gpus[off .. off+n), GPU positions in the layout */
};

struct pn_plan_ring {
	int nseg;
	struct pn_plan_seg *seg;
	int *gpus;
	int rail_a, rail_b;	/* the rail pair it was built for (-1: none) */
	double gbs;		/* predicted bandwidth */
	char bottleneck[160];
};

/* A shared resource and how many rings use it (bandwidth model). */
struct pn_plan_limit {
	int node;
	char what[96];	/* "mlx5_1 send", "GPU3 NVLink out" */
	double cap_gbs;
	int users;
};

struct pn_plan {
	struct pn_plan_model *model;
	int nrings;
	struct pn_plan_ring *rings;
	int nrails;
	int *rails;			/* rails the plan uses (usable on every node) */
	int *load_off;			/* per node: offset into send/recv */
	int *send, *recv;		/* rings sending / receiving per (node, NIC) */
	double ring_gbs;		/* slowest ring */
	double busbw_gbs;		/* sum over rings */
	struct pn_plan_limit bottleneck;
	struct pn_plan_msgs notes;	/* degradations, flagged */
	int degraded;
	struct pn_plan_msgs refused;	/* --no-degrade: the rails it would leave out (no rings) */
	struct pn_plan_msgs file_viol;	/* read back: what the file says that its rings do not */
};

struct pn_plan_opts {
	int rings;		/* 0: one per usable rail (two on one node) */
	int no_degrade;		/* refuse instead of leaving rails out */
	double pcie_gbs;	/* 0: PN_PLAN_PCIE_GBS */
};

void pn_plan_init(struct pn_plan *p, struct pn_plan_model *m);
void pn_plan_release(struct pn_plan *p);
/*
 * Plan rings; then analyse.  -EINVAL (message) when the model cannot be
 * planned.  With o->no_degrade and a rail that some node cannot use, 0 and
 * no rings: p->refused says, a line a rail, what would be left out.
 */
int pn_plan_build(struct pn_plan *p, struct pn_plan_model *m, const struct pn_plan_opts *o);
/*
 * ring-plan's verdict on a plan it built or read, its exit status:
 * PN_PLAN_PASS (0) when it has no violation (viol NULL: none counted),
 * PN_PLAN_FAIL (1) when it has one or was refused (p->refused).  A model or
 * file that cannot be planned or read is an error (2), not a verdict.
 */
enum { PN_PLAN_PASS = 0, PN_PLAN_FAIL = 1 };
int pn_plan_verdict(const struct pn_plan *p, const struct pn_plan_msgs *viol);
/* Rails usable on every node (active NIC on that rail everywhere); notes for the rest. */
int pn_plan_usable_rails(const struct pn_plan_model *m, int **rails, int *nrails,
			 struct pn_plan_msgs *notes);
/* Loads and bandwidth from the rings (also for plans read back). */
int pn_plan_analyze(struct pn_plan *p, double pcie_gbs);
/*
 * The one validator of plans, built or read back (ring-plan, ring-plan
 * --check, allreduce-test --plan): what a read-back file says that its
 * rings do not, rings that miss or repeat ranks or nodes, hops that change
 * rails or use unusable ports, worse paths than the best, unbalanced NICs,
 * and what the engine cannot run (more than PN_PLAN_MAX_RINGS rings, a
 * connection that would need two NICs, a node without a NIC on a ring's
 * rail).  Appends one line per violation; returns the number found (>= 0)
 * or -errno.
 */
int pn_plan_validate(struct pn_plan *p, struct pn_plan_msgs *viol);

/*
 * Path cost through a node (steps NIC->GPU, GPU->GPU, GPU->NIC, and the
 * closing hop of a one-node ring): lower is better, comparing the number of
 * steps per path class, worst class first.  Best achievable for given NICs
 * (-1: none), and that of one segment of a ring.
 */
long long pn_plan_best_cost(struct pn_plan_layout *l, int in_nic, int out_nic);
long long pn_plan_seg_cost(const struct pn_plan *p, const struct pn_plan_ring *r,
			   const struct pn_plan_seg *s, int nnodes);

/* Allocate a ring with room for nseg segments and ngpus GPU entries. */
int pn_plan_ring_alloc(struct pn_plan_ring *r, int nseg, int ngpus);

/*
 * Read back a plan written by `penny ring-plan --json`.  When model is
 * non-NULL and already loaded, the plan is checked against it (hosts
 * matched by name); otherwise the model embedded in the file is loaded
 * into *own.
 */
int pn_plan_read_json(struct pn_plan *p, struct pn_plan_model *own, struct pn_plan_model *model,
		      const char *text, size_t len);

/*
 * NCCL graph XML (NCCL_GRAPH_FILE / NCCL_GRAPH_DUMP_FILE format).
 *   node >= 0: that node's channels with rank attributes, crossnic="0".
 *   node == -1: one file for every node (uniform layouts, even node count
 *   or one node): the even-node channels with crossnic="2", so NCCL swaps
 *   channel pairs on odd nodes itself; no rank attributes for >1 node.
 * Returns -EINVAL (message) when the plan cannot be expressed that way.
 */
int pn_plan_write_nccl(const struct pn_plan *p, int node, FILE *f);
int pn_plan_nccl_shared_ok(const struct pn_plan *p);

/*
 * Read NCCL graph XML files (one shared by all nodes, or one per node in
 * node order) into a plan on model m.  When m has no nodes yet, a model
 * is derived from the files (rails = net dev index; classes unknown).
 * notes gets what was ignored (other graphs, ...); viol what NCCL itself
 * would get wrong (rank attributes in a shared file, ...).
 */
int pn_plan_read_nccl(struct pn_plan *p, struct pn_plan_model *m, const char *const *texts,
		      const size_t *lens, const char *const *names, int nfiles,
		      struct pn_plan_msgs *notes, struct pn_plan_msgs *viol);

#endif
