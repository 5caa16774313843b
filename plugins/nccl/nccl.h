/* SPDX-License-Identifier: MIT */
/*
 * The nccl plugin: NCCL's allreduce and its other collectives inside
 * penny's harness, as the baseline.
 * NCCL is opened at run time (no headers or libraries at build time): the
 * few types and functions used are declared here.
 */
#ifndef PENNY_PLUGIN_NCCL_H
#define PENNY_PLUGIN_NCCL_H

#include "../common/gpu.h"

typedef int ncclResult_t;
typedef struct ncclComm *ncclComm_t;
typedef struct {
	char internal[128];
} ncclUniqueId;
typedef struct ncclWindow_vidmem *ncclWindow_t;
#define PN_NCCL_WIN_COLL_SYMMETRIC 0x01	/* NCCL_WIN_COLL_SYMMETRIC */

struct pn_nccl_api {
	ncclResult_t (*GetVersion)(int *v);
	ncclResult_t (*GetUniqueId)(ncclUniqueId *id);
	ncclResult_t (*CommInitRank)(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank);
	ncclResult_t (*CommFinalize)(ncclComm_t comm);	/* may be NULL (NCCL < 2.14) */
	ncclResult_t (*CommDestroy)(ncclComm_t comm);
	ncclResult_t (*CommGetAsyncError)(ncclComm_t comm, ncclResult_t *err);
	ncclResult_t (*AllReduce)(const void *send, void *recv, size_t count, int dtype, int op,
				  ncclComm_t comm, CUstream stream);
	ncclResult_t (*AllGather)(const void *send, void *recv, size_t count, int dtype,
				  ncclComm_t comm, CUstream stream);
	/* the other collectives (coll-test); each may be NULL: that call is refused */
	ncclResult_t (*ReduceScatter)(const void *send, void *recv, size_t recvcount, int dtype,
				      int op, ncclComm_t comm, CUstream stream);
	ncclResult_t (*Broadcast)(const void *send, void *recv, size_t count, int dtype, int root,
				  ncclComm_t comm, CUstream stream);
	ncclResult_t (*Reduce)(const void *send, void *recv, size_t count, int dtype, int op,
			       int root, ncclComm_t comm, CUstream stream);
	ncclResult_t (*Send)(const void *send, size_t count, int dtype, int peer, ncclComm_t comm,
			     CUstream stream);
	ncclResult_t (*Recv)(void *recv, size_t count, int dtype, int peer, ncclComm_t comm,
			     CUstream stream);
	ncclResult_t (*GroupStart)(void);
	ncclResult_t (*GroupEnd)(void);
	const char *(*GetErrorString)(ncclResult_t r);
	const char *(*GetLastError)(ncclComm_t comm);	/* may be NULL */
	/* NCCL >= 2.27 (symmetric memory); each may be NULL */
	ncclResult_t (*MemAlloc)(void **ptr, size_t size);
	ncclResult_t (*MemFree)(void *ptr);
	ncclResult_t (*CommWindowRegister)(ncclComm_t comm, void *buff, size_t size,
					   ncclWindow_t *win, int flags);
	ncclResult_t (*CommWindowDeregister)(ncclComm_t comm, ncclWindow_t win);
	char path[256];	/* where it was loaded from */
};

/*
 * Open NCCL: PENNY_NCCL_LIB (a path) if set, else libnccl.so.2 (ldconfig,
 * LD_LIBRARY_PATH), else the Python nvidia.nccl package's lib/.  On failure
 * the plugin error lists every place tried.  A table installed with
 * pn_nccl_set_api() wins (tests).
 */
const struct pn_nccl_api *pn_nccl_api_get(void);
void pn_nccl_set_api(const struct pn_nccl_api *fake);

/* Whether this NCCL has symmetric memory: ncclMemAlloc, ncclMemFree and
 * window (de)registration. */
int pn_nccl_has_symm(const struct pn_nccl_api *a);

/* penny's dtype/op -> NCCL's enum values (-1 if none). */
int pn_nccl_dtype(int dtype);
int pn_nccl_op(int op);

int pn_nccl_init(const void *data_image, const struct penny_host_v1 *host, int device, void **be);
void pn_nccl_fini(void *be);
const char *pn_nccl_describe(void *be);
int pn_nccl_alloc(void *be, size_t bytes, unsigned flags, void **ptr);
int pn_nccl_free(void *be, void *ptr);
int pn_nccl_allreduce(void *be, const void *send, void *recv, size_t count, int dtype, int op,
		      int algo);
int pn_nccl_select(void *be, size_t count, int dtype, int op, int algo);
int pn_nccl_allgather(void *be, const void *send, void *recv, size_t count, int dtype);
/* penny_plugin_v1's other collectives with NCCL's calls: ncclReduceScatter,
 * ncclBroadcast, ncclReduce, and grouped ncclSend/ncclRecv for alltoall and
 * the ring of pairs (sendrecv); stream NULL: the plugin's own. */
int pn_nccl_reduce_scatter(void *be, const void *send, void *recv, size_t count, int dtype,
			   int op, void *stream);
int pn_nccl_alltoall(void *be, const void *send, void *recv, size_t count, int dtype,
		     void *stream);
int pn_nccl_broadcast(void *be, const void *send, void *recv, size_t count, int dtype, int root,
		      void *stream);
int pn_nccl_reduce(void *be, const void *send, void *recv, size_t count, int dtype, int op,
		   int root, void *stream);
int pn_nccl_sendrecv(void *be, const void *send, void *recv, size_t count, int dtype,
		     void *stream);

#endif
