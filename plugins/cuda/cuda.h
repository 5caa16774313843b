/* SPDX-License-Identifier: MIT */
/*
 * The cuda plugin's host side: registered (IPC-mapped) buffers, the
 * workspace of flags, LL lines and scratch, algorithm choice, staging and
 * kernel launches (cuda.c).  The pure parts (cuda_plan.c: size table,
 * launch plans) are exposed for the unit tests, which also drive the rest
 * through a fake driver table.
 */
#ifndef PENNY_PLUGIN_CUDA_H
#define PENNY_PLUGIN_CUDA_H

#include "../common/gpu.h"
#include "../common/kargs.h"

/*
 * The kernels: the ABI's algorithms times the protocol.  oneshot and
 * twoshot_ll move LL lines (no barrier, no fence: small sizes); oneshot_fl,
 * twoshot and ring move plain 16-byte stores and sync by flags (mid and
 * large sizes); twoshot_hy reduce-scatters by flags and all-gathers by LL
 * lines (mid sizes).  An explicit PENNY_ALGO_ONESHOT runs the LL kernel up
 * to PENNY_CUDA_ONESHOT_LL_MAX bytes, PENNY_ALGO_TWOSHOT the LL one up to
 * PENNY_CUDA_TWOSHOT_LL_MAX and the hybrid up to PENNY_CUDA_TWOSHOT_HY_MAX;
 * auto follows the size table.
 */
enum pn_kern {
	PN_K_ONESHOT = 0,
	PN_K_ONESHOT_FL,
	PN_K_TWOSHOT_LL,
	PN_K_TWOSHOT,
	PN_K_RING,
	PN_K_TWOSHOT_HY,
	PN_K_CE,
	PN_NKERNS
};
extern const char *const pn_kern_names[PN_NKERNS];
/* The ABI algorithm a kernel implements. */
int pn_kern_algo(int kern);

/* Kernel images (fatbins) the plugin embeds; NULL where not built. */
struct pn_cuda_images {
	const void *data;
	const void *kern[PN_NKERNS];
	const void *xnode;	/* pn_xn_* (xn_kernels.cu) */
	const void *coll;	/* pn_co_* (co_kernels.cu) */
};

/* A buffer mapped into every local rank. */
struct pn_reg {
	uint32_t id;			/* same on every rank */
	CUdeviceptr base;
	size_t bytes;
	CUdeviceptr peer[PN_AR_MAX_RANKS];	/* rank p's buffer as mapped here */
	uint64_t peer_bytes[PN_AR_MAX_RANKS];	/* and its size there */
	uint64_t here;			/* bit p: rank p is in this process (its pointer) */
	struct pn_reg *next;
};

/* Size table for auto: the first row with bytes <= max_bytes wins. */
#define PN_TUNE_ROWS 8
struct pn_tune {
	int nrows;
	struct {
		uint64_t max_bytes;	/* UINT64_MAX: no limit */
		int kern;		/* enum pn_kern */
	} row[PN_TUNE_ROWS];
};

/* Parse "oneshot:64K,twoshot_ll:1M,twoshot:32M,ring" (the last row has no
 * limit); returns 0 or -EINVAL with the plugin error set. */
int pn_tune_parse(const char *s, struct pn_tune *t);
/* The measured default for nranks GPUs. */
void pn_tune_default(struct pn_tune *t, int nranks);
/* The kernel for bytes. */
int pn_tune_select(const struct pn_tune *t, uint64_t bytes);
/* "oneshot<=64KiB,twoshot_ll<=1MiB,twoshot" */
void pn_tune_format(const struct pn_tune *t, char *buf, size_t len);

/* Configuration, from the environment (PENNY_CUDA_*), agreed by all ranks. */
struct pn_cuda_cfg {
	int nranks;
	uint64_t ll_max;	/* one-shot: bytes per launch (LL area = 4 * n * ll_max) */
	uint64_t oneshot_ll_max; /* explicit one-shot: LL lines up to this size */
	uint64_t twoshot_ll_max; /* explicit two-shot: LL lines up to this size */
	uint64_t twoshot_hy_max; /* then the hybrid up to this size */
	uint64_t co_ll_max;	/* other collectives: LL lines up to this many bytes a peer */
	uint64_t co_two_min;	/* broadcast and reduce on 3+ ranks: two steps from this size
				 * (UINT64_MAX: never) */
	uint32_t tile_twoshot;	/* two-shot: largest tile slice */
	uint32_t tile_ring;	/* ring: largest tile slice */
	uint32_t slot_bytes;	/* scratch slot = max of the tiles */
	uint64_t stage_bytes;	/* staging buffer for unregistered or unaligned buffers */
	uint32_t blocks;	/* largest grid (<= SMs: every block resident at once) */
	uint64_t ce_bytes;	/* the copy-engine allreduce's area (0: none) */
	uint64_t timeout_ns;
	int pdl;		/* programmatic dependent launch (PENNY_CUDA_PDL, default on) */
};

/*
 * The settings from PENNY_CUDA_* for n ranks on GPUs of nsm SMs (timeout_ns:
 * the core's --timeout, 0: 30 s) and auto's size table (PENNY_CUDA_TUNE or
 * the measured default); 0 or -EINVAL with the plugin error set.  The nvshmem
 * plugin reads them too: it runs these kernels on its symmetric heap.
 */
int pn_cuda_read_cfg(struct pn_cuda_cfg *cfg, struct pn_tune *tune, int n, int nsm,
		     uint64_t timeout_ns);

/* How a call (or part of it) runs: directly on the user's buffers, or
 * through the staging buffer, in launches of at most chunk bytes. */
struct pn_plan {
	int kern;
	int staged;
	uint64_t chunk;
};

/* One kernel launch. */
struct pn_launch {
	unsigned grid, threads;
	uint32_t tile;		/* two-shot/ring: bytes per rank slice of a tile */
};

/*
 * recv_reg: the registration holding [recv, recv + bytes), or NULL.  The LL
 * kernels need 16-byte aligned buffers; twoshot and ring also need recv
 * registered (peers store into it).  Otherwise the call is staged.
 */
int pn_cuda_plan(const struct pn_cuda_cfg *cfg, int kern, uint64_t bytes, uintptr_t send,
		 uintptr_t recv, const struct pn_reg *recv_reg, struct pn_plan *plan);
/*
 * The copy-engine allreduce's geometry: slots_bytes of slots (PENNY_CUDA_CE_BYTES,
 * after the area's header) make [2 parities][n - 1 senders] slots of
 * pn_ce_slot_bytes each; a call of bytes (a multiple of 16) runs in the
 * fewest even number of pieces of n slices whose slice fits a slot.
 * pn_ce_len: the bytes of the slice at off (0 past the end).
 */
struct pn_ce_geom {
	uint64_t pieces, piece, slice;
};
uint64_t pn_ce_slot_bytes(uint64_t slots_bytes, int n);
int pn_ce_geometry(uint64_t bytes, int n, uint64_t slot_bytes, struct pn_ce_geom *geo);
uint64_t pn_ce_len(const struct pn_ce_geom *geo, uint64_t bytes, uint64_t off);
/* PENNY_CUDA_CO_TWOSTEP's default on n ranks (cuda_plan.c: a cost model's). */
uint64_t pn_cuda_co_two_default(int n);
/* twoshot_ll and twoshot_hy need every rank to own data: below this, one-shot runs. */
uint64_t pn_cuda_twoshot_ll_min(int nranks);
void pn_cuda_geometry(const struct pn_cuda_cfg *cfg, int kern, uint64_t bytes,
		      struct pn_launch *l);
/* One launch of kern over [send, send + bytes) into recv (elements of esize
 * bytes) on rank: its geometry into l, its arguments into a; ws: every
 * rank's workspace as mapped here, reg: the registration holding recv that
 * the peers store into (NULL: none; its id and offset are the buffer's
 * identity).  The cuda plugin's launches and the nvshmem plugin's of these
 * kernels on its symmetric heap. */
void pn_cuda_ar_args(const struct pn_cuda_cfg *cfg, int kern, int rank, uint64_t send,
		     uint64_t recv, uint64_t bytes, unsigned esize, const CUdeviceptr *ws,
		     const struct pn_reg *reg, struct pn_ar_args *a, struct pn_launch *l);
/* The kernel an ABI algorithm runs for bytes (AUTO: from the table). */
int pn_cuda_kernel_for(const struct pn_cuda_cfg *cfg, const struct pn_tune *t, int algo,
		       uint64_t bytes);

struct pn_cuda;
int pn_cuda_init(const struct pn_cuda_images *im, const struct penny_host_v1 *host, int device,
		 void **be);
void pn_cuda_fini(void *be);
const char *pn_cuda_describe(void *be);
int pn_cuda_alloc(void *be, size_t bytes, unsigned flags, void **ptr);
int pn_cuda_free(void *be, void *ptr);
int pn_cuda_allreduce(void *be, const void *send, void *recv, size_t count, int dtype, int op,
		      int algo);
int pn_cuda_select(void *be, size_t count, int dtype, int op, int algo);
/* pn_cuda_allreduce on the caller's stream (penny_plugin_v1.allreduce_stream). */
int pn_cuda_allreduce_stream(void *be, const void *send, void *recv, size_t count, int dtype,
			     int op, int algo, void *stream);
int pn_cuda_reg_buffer(void *be, void *ptr, size_t bytes, void **reg);
void pn_cuda_dereg_buffer(void *be, void *reg);
int pn_cuda_allreduce_reg(void *be, void *reg, const void *send, void *recv, size_t count,
			  int dtype, int op, int algo, void *stream);
int pn_cuda_async_error(void *be);
int pn_cuda_export_dmabuf(void *be, void *ptr, size_t bytes, int *fd, uint64_t *offset);
/* For xnode.c: the device, the kernels' error word, its check. */
struct pn_gpu *pn_cuda_gpu(void *be);
/* programmatic dependent launch on (PENNY_CUDA_PDL) */
int pn_cuda_pdl(void *be);
const void *pn_cuda_xnode_image(void *be);
CUdeviceptr pn_cuda_err_word(void *be);
/* The staging buffer (device memory, stage_bytes). */
void pn_cuda_stage(void *be, CUdeviceptr *p, uint64_t *bytes);
int pn_cuda_kernel_errors(void *be);
/* Across nodes with the core's proxy (xnode.c). */
int pn_cuda_xnode_open(void *be, const struct penny_xnode_v1 *x, void **xn);
int pn_cuda_xnode_allreduce(void *be, void *xn, const void *send, void *recv, size_t count,
			    int dtype, int op);
void pn_cuda_xnode_close(void *be, void *xn);
int pn_cuda_xnode_coll(void *be, void *xn, const struct penny_xcoll_v1 *c);
/* The other collectives on one node (cuda_coll.c; penny_plugin_v1's
 * allgather, reduce_scatter ... sendrecv), kernels of co_kernels.cu. */
int pn_cuda_allgather(void *be, const void *send, void *recv, size_t count, int dtype);
int pn_cuda_allgather_stream(void *be, const void *send, void *recv, size_t count, int dtype,
			     void *stream);
int pn_cuda_reduce_scatter(void *be, const void *send, void *recv, size_t count, int dtype, int op,
			   void *stream);
int pn_cuda_alltoall(void *be, const void *send, void *recv, size_t count, int dtype,
		     void *stream);
int pn_cuda_broadcast(void *be, const void *send, void *recv, size_t count, int dtype, int root,
		      void *stream);
int pn_cuda_reduce(void *be, const void *send, void *recv, size_t count, int dtype, int op,
		   int root, void *stream);
int pn_cuda_sendrecv(void *be, const void *send, void *recv, size_t count, int dtype,
		     void *stream);
/* The collective of a kernel error's detail (pn_ar_args.coll): "allreduce",
 * "allgather" ... */
const char *pn_cuda_coll_name(uint32_t coll);
/* What cuda_coll.c needs of the backend. */
struct pn_cuda_co_view {
	struct pn_gpu *g;
	const struct pn_cuda_cfg *cfg;
	int rank, n;
	const CUdeviceptr *ws;	/* every rank's workspace as mapped here */
	CUmodule mod;		/* NULL: built without the kernels */
	CUfunction *fn;		/* the looked-up kernels, [PN_NCO][PENNY_NDTYPES][PENNY_NREDOPS] */
};
void pn_cuda_co_view(void *be, struct pn_cuda_co_view *v);
/* The registration holding [p, p + bytes), or NULL (tests). */
const struct pn_reg *pn_cuda_find_reg(void *be, const void *p, size_t bytes);

#endif
