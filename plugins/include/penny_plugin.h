/* SPDX-License-Identifier: MIT */
/*
 * penny's plugin ABI, version 1.  Self-contained: a plugin needs only this
 * header (and penny_data.h for the data formula).  A plugin is a shared
 * object that exports one data symbol
 *
 *	const struct penny_plugin_v1 penny_plugin_v1 = { ... };
 *
 * The core looks the symbols up with dlsym, newest version first
 * ("penny_plugin_v2" when it exists, then "penny_plugin_v1"), and accepts a
 * table whose abi field matches and whose size covers at least the members
 * of the first v1 table (up to bw).  Later versions only append members;
 * the core reads an appended member only when size covers it (a plugin
 * built against an older header simply lacks it).
 *
 * Conventions: every function returns 0 or a negative errno; after a
 * failure, errmsg() gives one line (lowercase, no full stop) for the calling
 * thread.  Pointers to device memory are plain void *.  All work is
 * enqueued on the backend's own stream (one per backend); sync() waits for
 * it.  Collective functions (init, alloc with PENNY_MEM_REGISTERED, free of
 * such a buffer, allreduce, time, fini) must be called by every rank in the
 * same order with the same sizes, like NCCL's; so must allgather and the
 * other collectives appended at the end of the table (reduce_scatter ...
 * sendrecv).
 */
#ifndef PENNY_PLUGIN_H
#define PENNY_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PENNY_PLUGIN_ABI_V1 1u
#define PENNY_PLUGIN_SYMBOL_V1 "penny_plugin_v1"

/* Element types: the same values as enum pn_dtype (src/engine/dtype.h). */
enum penny_dtype {
	PENNY_INT8 = 0,
	PENNY_UINT8,
	PENNY_INT32,
	PENNY_UINT32,
	PENNY_INT64,
	PENNY_UINT64,
	PENNY_HALF,
	PENNY_BFLOAT16,
	PENNY_FLOAT,
	PENNY_DOUBLE,
	PENNY_NDTYPES
};

/* Reduction ops: the same values as enum pn_redop (src/engine/dtype.h). */
enum penny_redop {
	PENNY_SUM = 0,
	PENNY_PROD,
	PENNY_MIN,
	PENNY_MAX,
	PENNY_AVG, /* sum, then divided by nranks once */
	PENNY_NREDOPS
};

/* Allreduce algorithms.  A plugin lists the ones it accepts in .algos. */
enum penny_algo {
	PENNY_ALGO_AUTO = 0,	/* the plugin's choice from its size table */
	PENNY_ALGO_ONESHOT,	/* every rank gets every input, reduces locally */
	PENNY_ALGO_TWOSHOT,	/* reduce-scatter by direct exchange, then all-gather */
	PENNY_ALGO_RING,	/* chunked, pipelined ring */
	PENNY_ALGO_SYMMETRIC,	/* the library's symmetric-memory kernels on REGISTERED
				 * buffers (NCCL: windows registered with
				 * NCCL_WIN_COLL_SYMMETRIC); appended, plugins of older
				 * headers never list it */
	/* ---- appended for the nvshmem plugin ---- */
	PENNY_ALGO_SIMPLE_RING,	/* the whole buffer around the ring twice (reduce, then
				 * broadcast): 2(n - 1) hops, one message each (latency) */
	PENNY_NALGOS
};

/* Log levels of penny_host_v1.log. */
enum penny_log_level { PENNY_LOG_ERROR = 0, PENNY_LOG_INFO = 1, PENNY_LOG_DEBUG = 2 };

/*
 * Host services the core hands to init().  allgather: every rank passes len
 * bytes in mine and gets nranks * len bytes in all (rank order); barrier:
 * returns when every rank has entered it.  Both return 0 or a negative
 * errno and are bounded by the core's timeout.  The struct must stay valid
 * until fini().  size = sizeof(struct penny_host_v1).
 */
struct penny_host_v1 {
	uint32_t size;
	int rank, nranks;
	int local_rank, local_size;	/* among the ranks of this node */
	int node, nnodes;
	void *ctx;
	int (*allgather)(void *ctx, const void *mine, void *all, size_t len);
	int (*barrier)(void *ctx);
	void (*log)(void *ctx, int level, const char *msg); /* may be NULL */
	/* the core's bound on every wait (--timeout): a kernel's wait for a peer
	 * gives up after it unless the plugin's own knob says otherwise; 0: the
	 * plugin's default (the interposer's case) */
	uint64_t timeout_ns;
};

/* alloc() flags */
#define PENNY_MEM_REGISTERED 1u /* collective: mapped into every local peer (CUDA IPC) */

/* memcpy() directions */
enum penny_copy { PENNY_H2D = 0, PENNY_D2H, PENNY_D2D };

/* check() result: elements whose bits differ from the expected result. */
struct penny_check_v1 {
	uint64_t wrong;
	uint64_t first_bad;	/* index of the first wrong element (count if none) */
};

/*
 * time(): warmup calls, then (after a host barrier) iters calls between two
 * events on the stream.  graph > 0: the calls are captured, graph at a time,
 * into a CUDA graph that is replayed (like nccl-tests -G); iters is rounded
 * up to a multiple of graph.  usec: mean time of one call on this rank.
 */
struct penny_time_v1 {
	const void *send;
	void *recv;
	size_t count;
	int dtype, op, algo;
	int warmup, iters, graph;
	double usec;		/* out */
	int iters_run;		/* out: calls timed */
};

/*
 * time2(): time() plus what the calling thread pays.  size =
 * sizeof(struct penny_time_v2) of the caller's header (the plugin reads and
 * fills only what size covers; at least PENNY_TIME_V2_MIN_SIZE).
 * host_usec: wall time the calling thread spent issuing the timed calls,
 * per call: without graphs one allreduce() enqueue, with graphs a
 * cuGraphLaunch divided by the calls it holds.  A host_usec near usec
 * means the launch blocks the caller until the GPU catches up.
 *
 * Timed blocks (appended; read only when size covers them): with blocks
 * > 0, the warm-up (and the graph's capture) once, the host barrier once,
 * then blocks blocks of t.iters calls each, back to back on the stream,
 * each between two events; block_usec[b] := block b's mean time of one
 * call, blocks_run := blocks, t.iters_run := calls timed per block, t.usec
 * := the mean over every timed call.  The core takes the median block.  A
 * plugin of an older header leaves blocks_run 0 (the caller zeroes it): it
 * timed one block of t.iters calls, and the core times the others with
 * more calls of time2().
 */
struct penny_time_v2 {
	uint32_t size;
	uint32_t reserved;
	struct penny_time_v1 t;
	double host_usec;	/* out */
	/* ---- appended: timed blocks ---- */
	int blocks;		/* in: timed blocks (0: one; at most PENNY_TIME_MAX_BLOCKS) */
	int blocks_run;		/* out: blocks timed into block_usec */
	double *block_usec;	/* in: room for blocks values; out: each block's time per call */
};
#define PENNY_TIME_V2_MIN_SIZE (offsetof(struct penny_time_v2, host_usec) + sizeof(double))
#define PENNY_TIME_MAX_BLOCKS 1000

/* bw(): a GPU-to-GPU matrix over every visible GPU, in one process. */
#define PENNY_BW_MAX_DEV 16
enum penny_bw_engine { PENNY_BW_CE = 0, PENNY_BW_SM };
enum penny_bw_what { PENNY_BW_BANDWIDTH = 0, PENNY_BW_LATENCY };
struct penny_bw_v1 {
	uint64_t bytes;		/* per copy (bandwidth); ignored for latency */
	int iters;		/* timed repetitions per cell */
	int engine;		/* PENNY_BW_CE: copy engine; PENNY_BW_SM: kernel loads/stores */
	int bidir;		/* both directions at once (bandwidth counts both) */
	int what;		/* PENNY_BW_BANDWIDTH (GB/s = 1e9 B/s) or PENNY_BW_LATENCY (us) */
	int ndev;		/* out */
	double value[PENNY_BW_MAX_DEV * PENNY_BW_MAX_DEV]; /* out: [src * ndev + dst] */
	char name[PENNY_BW_MAX_DEV][64]; /* out: device names */
};

/*
 * hostbw(): host-to-device and device-to-host bandwidth of every visible
 * GPU, in one process (needs no init).  The host buffer is page-locked
 * (cuMemHostAlloc: the DMA engines read it directly; pageable memory is
 * staged by the driver and measures the staging, not the link), and the
 * iters copies of bytes each are timed between two events on the device's
 * stream after a warm-up copy, so the time is the transfers' own.
 */
struct penny_hostbw_v1 {
	uint64_t bytes;		/* per copy */
	int iters;		/* timed copies per direction and GPU */
	int ndev;		/* out */
	int pinned;		/* out: 1 when the host buffers were page-locked */
	double h2d[PENNY_BW_MAX_DEV], d2h[PENNY_BW_MAX_DEV]; /* out: GB/s (1e9 B/s) */
	char name[PENNY_BW_MAX_DEV][64];	/* out: device names */
	char busid[PENNY_BW_MAX_DEV][32];	/* out: PCI bus ids "0000:18:00.0" ("" unknown) */
};


/*
 * Across nodes with a proxy (xnode_*): the core runs one proxy thread per
 * rank that moves data between this rank and the ranks of its local index
 * on the other nodes (its rail); the plugin's kernel does the GPU side
 * without the host: it copies chunks of its data into the outbox (host
 * memory the plugin maps for the device), raises each slot's ready word,
 * polls the inbox for the peers' chunks the proxy lands there, reduces
 * them in node order and frees the inbox slots.  Every word below is
 * written by one side only; values are tickets + 1 (monotonic, never
 * reset), so replays of a CUDA graph are safe when the kernel keeps its
 * ticket counters in device memory.
 *
 * Outbox: a control line, then slots headers, then slots * slot_bytes of data.
 * Inbox: for every node q (nnodes, mine unused) slots headers, then for every
 * node slots * slot_bytes of data.  Slot s of a ring holds ticket t where
 * t % slots == s; a kernel fills outbox ticket t only when ticket t - slots
 * was sent, and the proxy lands the k-th chunk from node q in inbox slot
 * k % slots only when the kernel freed chunk k - slots.  An outbox ticket
 * goes to the nodes of its mask only, and chunks are counted per pair of
 * nodes: the k-th chunk from node q is the k-th ticket of q whose mask has
 * my bit (tickets that leave me out take no slot of mine).  (A core older
 * than PENNY_CAP_XCOLL_NODES carried over tcp only tickets to every other
 * node; it called xnode_coll's kinds that send to one node across 2 nodes
 * only, where that node is every other node.)
 */
#define PENNY_XBOX_LINE 64u
#define PENNY_XBOX_MAX_NODES 64

struct penny_xctl {
	uint64_t abort;		/* proxy: nonzero = give up (a peer died, a timeout) */
	uint64_t magic;		/* PENNY_XBOX_MAGIC */
	uint64_t reserved[6];
};
#define PENNY_XBOX_MAGIC 0x786f62796e6e6570ull /* "pennybox" */

struct penny_xout_slot {
	uint64_t ready;		/* kernel: ticket + 1 when len bytes are in */
	uint64_t len;		/* kernel */
	uint64_t mask;		/* kernel: bit q = send to node q (PENNY_XBOX_MAX_NODES);
				 * the nodes left out do not count the ticket */
	uint64_t pad0[5];
	uint64_t sent;		/* proxy: ticket + 1 when every copy left */
	uint64_t pad1[7];
};

struct penny_xin_slot {
	uint64_t ready;		/* proxy: chunk + 1 when len bytes landed */
	uint64_t len;		/* proxy */
	uint64_t pad0[6];
	uint64_t done;		/* kernel: chunk + 1 when read */
	uint64_t pad1[7];
};

static inline uint64_t penny_xbox_out_bytes(uint32_t slots, uint64_t slot_bytes)
{
	return PENNY_XBOX_LINE + (uint64_t)slots * (sizeof(struct penny_xout_slot) + slot_bytes);
}

static inline uint64_t penny_xbox_in_bytes(int nnodes, uint32_t slots, uint64_t slot_bytes)
{
	return (uint64_t)nnodes * slots * (sizeof(struct penny_xin_slot) + slot_bytes);
}

/* Data of outbox slot s / headers and data of node q's inbox ring. */
static inline uint64_t penny_xbox_out_data(uint32_t slots, uint64_t slot_bytes, uint32_t s)
{
	return PENNY_XBOX_LINE + (uint64_t)slots * sizeof(struct penny_xout_slot) +
	       (uint64_t)s * slot_bytes;
}

static inline uint64_t penny_xbox_in_hdr(uint32_t slots, int q, uint32_t s)
{
	return ((uint64_t)q * slots + s) * sizeof(struct penny_xin_slot);
}

static inline uint64_t penny_xbox_in_data(int nnodes, uint32_t slots, uint64_t slot_bytes, int q,
					  uint32_t s)
{
	return (uint64_t)nnodes * slots * sizeof(struct penny_xin_slot) +
	       ((uint64_t)q * slots + s) * slot_bytes;
}

/* xnode_open()'s description of the boxes. size = sizeof(struct penny_xnode_v1). */
struct penny_xnode_v1 {
	uint32_t size;
	uint32_t slots;		/* slots per ring (>= 2) */
	uint64_t slot_bytes;	/* data bytes per slot (a multiple of 16) */
	int nnodes, node;	/* the ranks of my local index on every node; my place */
	int nranks;		/* ranks of the whole job: avg divides by it */
	uint32_t ll_max;	/* calls of at most this many bytes may travel as LL
				 * lines (the plugin's own format, twice the bytes;
				 * <= slot_bytes / 2, the same on every node); 0: never */
	void *outbox;		/* host memory, page-aligned, penny_xbox_out_bytes() */
	void *inbox;		/* host memory, page-aligned, penny_xbox_in_bytes() */
	uint64_t timeout_ns;	/* a kernel wait longer than this fails the call */
};

/*
 * The other collectives across nodes (penny_plugin_v1.xnode_coll), among
 * the ranks of the boxes: one rank per node (my local index on every node:
 * my rail), in node order.  A block is count elements of dtype; node q's
 * block of send is at send + q * sstride bytes and of recv at recv + q *
 * rstride bytes (a stride of 0: count elements), so that the core can put
 * a rail's blocks inside a larger buffer.  me is xnode_open()'s node, N its
 * nnodes, root a node:
 *   PENNY_XC_ALLGATHER       recv block q := node q's send block 0 (mine
 *                            copied unless it is already there)
 *   PENNY_XC_BROADCAST       recv block 0 := root's send block 0 (the
 *                            root copies unless send == recv; send is
 *                            read on the root only)
 *   PENNY_XC_REDUCE          on root, recv block 0 := op, in node order,
 *                            over the nodes' send block 0; recv is not
 *                            written elsewhere
 *   PENNY_XC_REDUCE_SCATTER  recv block 0 := op, in node order, over the
 *                            nodes' send block me
 *   PENNY_XC_ALLTOALL        recv block q := node q's send block me
 *   PENNY_XC_SENDRECV        recv block 0 := node (me - 1 + N) % N's send
 *                            block 0 (it sends to (me + 1) % N)
 * PENNY_AVG divides the sum by xnode_open()'s nranks.  "In node order" is
 * op(...op(op(node 0's, node 1's), node 2's)..., node N - 1's), whatever
 * the order the blocks arrive in, so that every run gives the same bits.
 * A plugin with PENNY_CAP_XCOLL_NODES takes every kind across any number
 * of nodes (the four that send a node's blocks to one node each: reduce,
 * reduce_scatter, alltoall and sendrecv, with outbox tickets to one node,
 * their masks honoured); without it the core calls those four across 2
 * nodes only (a plugin of an older header may refuse more, -EINVAL).  In
 * place is nccl-tests' (send == recv, or for allgather send == recv block
 * me, for reduce_scatter recv == send block me) and any other overlap is
 * undefined.
 */
#define PENNY_XC_ALLGATHER 1
#define PENNY_XC_BROADCAST 2
#define PENNY_XC_REDUCE 3
#define PENNY_XC_REDUCE_SCATTER 4
#define PENNY_XC_ALLTOALL 5
#define PENNY_XC_SENDRECV 6

struct penny_xcoll_v1 {
	uint32_t size;		/* sizeof(struct penny_xcoll_v1) */
	int32_t kind;		/* PENNY_XC_* */
	const void *send;
	void *recv;
	uint64_t count;		/* elements of a block */
	int32_t dtype, op;	/* op: reduce, reduce_scatter (else PENNY_SUM) */
	int32_t root;		/* broadcast, reduce: the root's node */
	int32_t pad;
	uint64_t sstride, rstride;	/* bytes from a node's block to the next; 0: count elements */
};

/* caps */
#define PENNY_CAP_GRAPH 1u	/* time() supports graph > 0 */
#define PENNY_CAP_BW 2u		/* bw() is provided */
#define PENNY_CAP_MULTINODE 4u	/* allreduce() spans nodes by itself (NCCL, NVSHMEM); without
				 * it the core runs it hierarchically across nodes */
#define PENNY_CAP_XCOLL_NODES 8u /* xnode_coll() takes every kind across any number of
				 * nodes (penny_xcoll_v1); without it reduce,
				 * reduce_scatter, alltoall and sendrecv across 2 only */

struct penny_plugin_v1 {
	uint32_t abi;		/* PENNY_PLUGIN_ABI_V1 */
	uint32_t size;		/* sizeof(struct penny_plugin_v1) */
	const char *name;	/* "cuda", "nccl" */
	const char *version;	/* the plugin's version text */
	uint32_t algos;		/* accepted algorithms: bit (1u << PENNY_ALGO_*) */
	uint32_t caps;		/* PENNY_CAP_* */

	/* Last error message of the calling thread ("" if none). */
	const char *(*errmsg)(void);

	/* Open device (an index among the visible devices; -1: local_rank). */
	int (*init)(const struct penny_host_v1 *host, int device, void **be);
	void (*fini)(void *be);
	/* One line: device, driver and library versions. */
	const char *(*describe)(void *be);

	/* Device memory.  REGISTERED buffers are collective and symmetric:
	 * every rank passes the same offsets into the same allocation. */
	int (*alloc)(void *be, size_t bytes, unsigned flags, void **ptr);
	int (*free)(void *be, void *ptr);
	int (*memcpy)(void *be, void *dst, const void *src, size_t bytes, int dir);
	/* Fill bytes with one byte value (enqueued). */
	int (*poison)(void *be, void *buf, size_t bytes, int byte);
	/* Element i := the data formula (penny_data.h) of (seed, rank, i). */
	int (*fill)(void *be, void *buf, size_t count, int dtype, int op, uint32_t seed, int rank);
	/* Compare with the exact result over nranks ranks; synchronizes. */
	int (*check)(void *be, const void *buf, size_t count, int dtype, int op, uint32_t seed,
		     int nranks, struct penny_check_v1 *res);

	/* Enqueue one allreduce (send == recv: in place). */
	int (*allreduce)(void *be, const void *send, void *recv, size_t count, int dtype,
			 int op, int algo);
	/* The algorithm allreduce() would run for this call (AUTO resolved). */
	int (*select)(void *be, size_t count, int dtype, int op, int algo);
	int (*time)(void *be, struct penny_time_v1 *t);
	/* Wait for the stream; reports errors raised by earlier calls. */
	int (*sync)(void *be);

	/* GPU-to-GPU matrix; needs no init().  NULL if not provided. */
	int (*bw)(struct penny_bw_v1 *req);

	/* ---- appended to v1 (read only when size covers them) ---- */

	/* Enqueue an allgather (collective, like ncclAllGather): rank r's count
	 * elements of send land at recv + r * count elements; send may be that
	 * place in recv (in place).  NULL if not provided. */
	int (*allgather)(void *be, const void *send, void *recv, size_t count, int dtype);

	/* Export [ptr, ptr + bytes) of device memory from alloc() as a dma-buf
	 * for RDMA registration (ibv_reg_dmabuf_mr: GPUDirect RDMA without
	 * nvidia-peermem).  *fd (the caller closes it) covers the pages around
	 * the range; ptr lies *offset bytes into it.  NULL if not provided;
	 * -EOPNOTSUPP when the driver or device cannot. */
	int (*export_dmabuf)(void *be, void *ptr, size_t bytes, int *fd, uint64_t *offset);

	/* Host<->device bandwidth of every visible GPU (struct
	 * penny_hostbw_v1); needs no init().  NULL if not provided.  Its
	 * device order is bw()'s. */
	int (*hostbw)(struct penny_hostbw_v1 *req);

	/* time() with the caller's cost per call (struct penny_time_v2).
	 * NULL if not provided. */
	int (*time2)(void *be, struct penny_time_v2 *t);

	/* ---- across nodes with the core's proxy (read only when size covers them) ---- */

	/* Map the boxes of x for the device and keep the kernel's ticket
	 * counters; *xn is the handle.  Not collective. */
	int (*xnode_open)(void *be, const struct penny_xnode_v1 *x, void **xn);
	/* Enqueue: recv = op over the nodes, in node order, of send (count
	 * elements, this node's partial result) and the peers' chunks; with
	 * PENNY_AVG the sum is divided by x->nranks.  Stream-ordered, no host
	 * work per call, CUDA-graph capturable.  Every node's rank calls it
	 * with the same count, dtype and op, in the same order. */
	int (*xnode_allreduce)(void *be, void *xn, const void *send, void *recv, size_t count,
			       int dtype, int op);
	void (*xnode_close)(void *be, void *xn);
	/* time2() of a caller's enqueue function: warm-up, graph capture when
	 * t->t.graph > 0, timing, as time2() does for allreduce().  The
	 * fields send ... algo of t are not read. */
	int (*time_fn)(void *be, struct penny_time_v2 *t, int (*enqueue)(void *arg), void *arg);

	/* ---- appended for libpenny-nccl.so (the NCCL interposer) ---- */

	/* allreduce() enqueued on the caller's stream (a CUstream; NULL: the
	 * legacy default stream) instead of the backend's, so that it orders
	 * with the caller's work and a CUDA graph the caller captures on that
	 * stream holds it.  The caller orders the streams it uses with one
	 * backend (like NCCL's calls on one communicator).  NULL if not
	 * provided. */
	int (*allreduce_stream)(void *be, const void *send, void *recv, size_t count, int dtype,
				int op, int algo, void *stream);

	/* ---- appended for penny check's versions row (read only when size covers it) ---- */

	/* The CUDA driver API version the driver reports (cuDriverGetVersion:
	 * 12040 for 12.4) into *version; needs no init() and opens no device.
	 * NULL if not provided; a negative errno (errmsg) without a driver. */
	int (*driver_version)(int *version);
	/* ---- appended for the interposer's registration cache and async
	 * errors (issue 29) ---- */

	/* Collective: map every rank's [ptr, ptr + bytes) (the start and size
	 * of one of the caller's device allocations; the plugin neither owns
	 * nor frees it; bytes may differ between ranks) for its peers, once,
	 * so that allreduce_reg() stores into the peers' recv without a
	 * staging copy.  Every rank calls it at the same point; the plugin's
	 * failure on one rank may leave the others with a handle (the caller
	 * agrees on the outcome and drops the handles).  *reg: the handle.
	 * NULL if not provided. */
	int (*reg_buffer)(void *be, void *ptr, size_t bytes, void **reg);
	/* Not collective: unmap the peers' buffers of reg; the caller's memory
	 * stays.  The caller's calls that use reg must be done. */
	void (*dereg_buffer)(void *be, void *reg);
	/* allreduce_stream() with recv inside reg (from reg_buffer(); at the
	 * same offset from ptr on every rank, which the caller ensures); reg
	 * NULL: as allreduce_stream(). */
	int (*allreduce_reg)(void *be, void *reg, const void *send, void *recv, size_t count,
			     int dtype, int op, int algo, void *stream);
	/* Non-blocking, any thread: 0, or the error a kernel of the backend
	 * recorded since init (a wait for a peer that timed out: -ETIMEDOUT;
	 * ranks that passed different buffers: -EINVAL; the cross-node proxy
	 * gave up: -ECANCELED), with errmsg() set; it stays set. */
	int (*async_error)(void *be);

	/* ---- appended for planned rings (penny ring-plan, --plan) ---- */

	/* Run the ring algorithm over these rings: ring r visits the ranks
	 * order[r * nranks + 0 .. nranks - 1] in the order data moves (the
	 * plan's direction), each rank once; channel c follows ring c % nrings.
	 * Every rank passes the same rings, after init() and before its
	 * calls; nrings 0 returns to the plugin's own ring.  -EINVAL for an
	 * order that is not one of all ranks.  NULL if not provided (the
	 * plugin's rings are its own). */
	int (*set_rings)(void *be, const int32_t *order, int nrings);

	/* ---- appended for penny coll-test's other collectives (read only
	 * when size covers them) ----
	 *
	 * Each is collective (every rank calls it in the same order with the
	 * same count, dtype, op and root, like NCCL's), enqueued on stream (a
	 * CUstream; NULL: the backend's own stream, the one sync() waits for
	 * and time_fn() times, unlike allreduce_stream's NULL), with no host
	 * work per call that a CUDA graph could not capture, so that
	 * time_fn() times them (with graphs too) through the caller's enqueue
	 * function.  count is NCCL's: the elements each rank receives
	 * (reduce_scatter), sends to each peer (alltoall), or of the whole
	 * buffer (broadcast, reduce, sendrecv).  In place is where nccl-tests
	 * puts it: send == recv, except reduce_scatter's recv = send + rank *
	 * count elements.  NULL if not provided (the core refuses the
	 * collective on this backend in one line). */

	/* recv := op over the ranks of elements [rank * count, (rank + 1) *
	 * count) of send (nranks * count elements); PENNY_AVG divides the sum
	 * by nranks, as allreduce() does (ncclReduceScatter). */
	int (*reduce_scatter)(void *be, const void *send, void *recv, size_t count, int dtype,
			      int op, void *stream);
	/* Block j of recv (count elements at recv + j * count) := block rank
	 * of rank j's send (nranks * count elements each; grouped
	 * ncclSend/ncclRecv in the nccl plugin). */
	int (*alltoall)(void *be, const void *send, void *recv, size_t count, int dtype,
			void *stream);
	/* recv := root's send (count elements; send is read on root only)
	 * (ncclBroadcast). */
	int (*broadcast)(void *be, const void *send, void *recv, size_t count, int dtype, int root,
			 void *stream);
	/* On root, recv := op over the ranks of send (count elements); recv
	 * is not written elsewhere (ncclReduce). */
	int (*reduce)(void *be, const void *send, void *recv, size_t count, int dtype, int op,
		      int root, void *stream);
	/* The ring of pairs: send (count elements) goes to rank (rank + 1) %
	 * nranks while recv gets rank (rank - 1 + nranks) % nranks's (one
	 * rank: a copy) (grouped ncclSend/ncclRecv in the nccl plugin). */
	int (*sendrecv)(void *be, const void *send, void *recv, size_t count, int dtype,
			void *stream);

	/* ---- appended for the NCCL interposer's ncclAllGather (read only
	 * when size covers it) ---- */

	/* allgather() on stream, as the collectives above take it (NULL: the
	 * backend's own), so that it orders with the caller's work and a
	 * graph captured on that stream holds it.  NULL if not provided. */
	int (*allgather_stream)(void *be, const void *send, void *recv, size_t count, int dtype,
				void *stream);

	/* ---- appended for the other collectives across nodes (read only
	 * when size covers it) ---- */

	/* Enqueue c (struct penny_xcoll_v1: its kinds, layout and limits) on
	 * the boxes of xn (xnode_open()), on the backend's stream: no host
	 * work per call, CUDA-graph capturable, in order with the other
	 * xnode_* calls on xn, as xnode_allreduce().  Every node's rank calls
	 * it with the same kind, count, dtype, op and root, in the same order.
	 * -EINVAL for a kind the node count does not allow.  NULL if not
	 * provided (the core stages these collectives through the host). */
	int (*xnode_coll)(void *be, void *xn, const struct penny_xcoll_v1 *c);
};

/* Size of the first v1 table (every member up to bw). */
#define PENNY_PLUGIN_V1_MIN_SIZE (offsetof(struct penny_plugin_v1, bw) + sizeof(void (*)(void)))

typedef const struct penny_plugin_v1 penny_plugin_v1_t;

#ifdef __cplusplus
}
#endif

#endif
