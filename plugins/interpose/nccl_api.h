/* SPDX-License-Identifier: MIT */
/*
 * The part of NCCL's C API (nccl.h of NCCL 2.28) that the interposer
 * exports, declared here so that nothing of NCCL is needed at build time.
 * Types and values are NCCL's; the lists of forwarded calls are NCCL_FORWARDS
 * and NCCL_ENQUEUES
 * (interpose.c defines the calls it changes itself).
 */
#ifndef PENNY_NCCL_API_H
#define PENNY_NCCL_API_H

#include <stddef.h>
#include <stdint.h>

typedef struct ncclComm *ncclComm_t;
typedef struct ncclWindow_vidmem *ncclWindow_t;
typedef struct CUstream_st *cudaStream_t;
#define NCCL_UNIQUE_ID_BYTES 128
typedef struct {
	char internal[NCCL_UNIQUE_ID_BYTES];
} ncclUniqueId;

typedef enum {
	ncclSuccess = 0,
	ncclUnhandledCudaError = 1,
	ncclSystemError = 2,
	ncclInternalError = 3,
	ncclInvalidArgument = 4,
	ncclInvalidUsage = 5,
	ncclRemoteError = 6,
	ncclInProgress = 7,
	ncclTimeout = 8,
	ncclNumResults = 9
} ncclResult_t;

typedef enum {
	ncclInt8 = 0,
	ncclUint8 = 1,
	ncclInt32 = 2,
	ncclUint32 = 3,
	ncclInt64 = 4,
	ncclUint64 = 5,
	ncclFloat16 = 6,
	ncclFloat32 = 7,
	ncclFloat64 = 8,
	ncclBfloat16 = 9,
	ncclFloat8e4m3 = 10,
	ncclFloat8e5m2 = 11,
	ncclNumTypes = 12
} ncclDataType_t;

typedef enum {
	ncclSum = 0,
	ncclProd = 1,
	ncclMax = 2,
	ncclMin = 3,
	ncclAvg = 4,
	ncclNumOps = 5,	/* ncclRedOpCreatePreMulSum hands out values from here */
	ncclMaxRedOp = 0x7fffffff
} ncclRedOp_t;

typedef enum { ncclScalarDevice = 0, ncclScalarHostImmediate = 1 } ncclScalarResidence_t;

/* The leading members of ncclConfig_t (every version has them first). */
typedef struct {
	size_t size;
	unsigned int magic;	/* NCCL_CONFIG_MAGIC */
	unsigned int version;
	int blocking;		/* NCCL_CONFIG_UNDEF_INT: NCCL's default (NCCL_COMM_BLOCKING) */
} ncclConfig_t;
#define NCCL_CONFIG_MAGIC 0xcafebeefu
#define NCCL_CONFIG_UNDEF_INT (-2147483647 - 1)
#define NCCL_SPLIT_NOCOLOR (-1)
#define NCCL_SHRINK_ABORT 0x01

/* ncclGroupSimulateEnd's (NCCL_SIM_INFO_INITIALIZER: its size, the magic,
 * NCCL's version, estimatedTime undefined). */
typedef struct {
	size_t size;
	unsigned int magic;	/* NCCL_SIM_INFO_MAGIC */
	unsigned int version;
	float estimatedTime;
} ncclSimInfo_t;
#define NCCL_SIM_INFO_MAGIC 0x74685283u
typedef struct ncclWaitSignalDesc ncclWaitSignalDesc_t;
typedef int ncclCommMemStat_t;

/*
 * Calls passed to the real NCCL unchanged: X(name, (parameters), (arguments)).
 * Each one is exported; with LD_PRELOAD a call the interposer does not
 * export goes straight to the real NCCL anyway, installed as libnccl.so.2
 * it would be missing, so this list, NCCL_ENQUEUES and NCCL_OWN are NCCL
 * 2.28's whole C API.
 */
#define NCCL_FORWARDS(X)                                                                           \
	X(ncclMemAlloc, (void **ptr, size_t size), (ptr, size))                                    \
	X(ncclMemFree, (void *ptr), (ptr))                                                         \
	X(ncclGetVersion, (int *version), (version))                                               \
	X(ncclGetUniqueId, (ncclUniqueId * uniqueId), (uniqueId))                                  \
	X(ncclCommGetUniqueId, (ncclComm_t comm, ncclUniqueId * id), (comm, id))                   \
	X(ncclCommCount, (const ncclComm_t comm, int *count), (comm, count))                       \
	X(ncclCommCuDevice, (const ncclComm_t comm, int *device), (comm, device))                  \
	X(ncclCommUserRank, (const ncclComm_t comm, int *rank), (comm, rank))                      \
	X(ncclCommRegister, (const ncclComm_t comm, void *buff, size_t size, void **handle),      \
	  (comm, buff, size, handle))                                                              \
	X(ncclCommDeregister, (const ncclComm_t comm, void *handle), (comm, handle))              \
	X(ncclCommSuspend, (ncclComm_t comm, int flags), (comm, flags))                            \
	X(ncclCommResume, (ncclComm_t comm), (comm))                                               \
	X(ncclCommMemStats, (ncclComm_t comm, ncclCommMemStat_t stat, uint64_t *value),           \
	  (comm, stat, value))                                                                     \
	X(ncclCommWindowRegister,                                                                  \
	  (ncclComm_t comm, void *buff, size_t size, ncclWindow_t *win, int flags),                \
	  (comm, buff, size, win, flags))                                                          \
	X(ncclCommWindowDeregister, (ncclComm_t comm, ncclWindow_t win), (comm, win))             \
	X(ncclWinGetUserPtr, (ncclComm_t comm, ncclWindow_t win, void **ptr), (comm, win, ptr))   \
	X(ncclRedOpCreatePreMulSum,                                                                \
	  (ncclRedOp_t * op, void *scalar, ncclDataType_t dt, ncclScalarResidence_t res,           \
	   ncclComm_t comm),                                                                       \
	  (op, scalar, dt, res, comm))                                                             \
	X(ncclRedOpDestroy, (ncclRedOp_t op, ncclComm_t comm), (op, comm))

/*
 * The other calls that enqueue work on a communicator (each has a
 * parameter comm): passed on unchanged but where the communicator has
 * penny's error, which NCCL answers them with as after its own (NCCL's
 * ncclCommEnsureReady).
 */
#define NCCL_ENQUEUES(X)                                                                           \
	X(ncclReduce,                                                                              \
	  (const void *s, void *r, size_t count, ncclDataType_t dt, ncclRedOp_t op, int root,      \
	   ncclComm_t comm, cudaStream_t st),                                                      \
	  (s, r, count, dt, op, root, comm, st))                                                   \
	X(ncclBcast, (void *b, size_t count, ncclDataType_t dt, int root, ncclComm_t comm,         \
		      cudaStream_t st),                                                            \
	  (b, count, dt, root, comm, st))                                                          \
	X(ncclBroadcast,                                                                           \
	  (const void *s, void *r, size_t count, ncclDataType_t dt, int root, ncclComm_t comm,     \
	   cudaStream_t st),                                                                       \
	  (s, r, count, dt, root, comm, st))                                                       \
	X(ncclAlltoAll,                                                                            \
	  (const void *s, void *r, size_t count, ncclDataType_t dt, ncclComm_t comm,               \
	   cudaStream_t st),                                                                       \
	  (s, r, count, dt, comm, st))                                                             \
	X(ncclGather,                                                                              \
	  (const void *s, void *r, size_t count, ncclDataType_t dt, int root, ncclComm_t comm,     \
	   cudaStream_t st),                                                                       \
	  (s, r, count, dt, root, comm, st))                                                       \
	X(ncclScatter,                                                                             \
	  (const void *s, void *r, size_t count, ncclDataType_t dt, int root, ncclComm_t comm,     \
	   cudaStream_t st),                                                                       \
	  (s, r, count, dt, root, comm, st))                                                       \
	X(ncclSend, (const void *s, size_t count, ncclDataType_t dt, int peer, ncclComm_t comm,    \
		     cudaStream_t st),                                                             \
	  (s, count, dt, peer, comm, st))                                                          \
	X(ncclRecv, (void *r, size_t count, ncclDataType_t dt, int peer, ncclComm_t comm,          \
		     cudaStream_t st),                                                             \
	  (r, count, dt, peer, comm, st))                                                          \
	X(ncclPutSignal,                                                                           \
	  (const void *s, size_t count, ncclDataType_t dt, int peer, ncclWindow_t win, size_t off, \
	   int sig, int ctx, unsigned int flags, ncclComm_t comm, cudaStream_t st),                \
	  (s, count, dt, peer, win, off, sig, ctx, flags, comm, st))                               \
	X(ncclSignal, (int peer, int sig, int ctx, unsigned int flags, ncclComm_t comm,            \
		       cudaStream_t st),                                                           \
	  (peer, sig, ctx, flags, comm, st))                                                       \
	X(ncclWaitSignal, (int n, ncclWaitSignalDesc_t * d, ncclComm_t comm, cudaStream_t st),    \
	  (n, d, comm, st))

/* Calls interpose.c defines (it forwards them too, around its own work). */
#define NCCL_OWN(X)                                                                                \
	X(ncclCommInitRank, (ncclComm_t * comm, int nranks, ncclUniqueId id, int rank),            \
	  (comm, nranks, id, rank))                                                                \
	X(ncclCommInitRankConfig,                                                                  \
	  (ncclComm_t * comm, int nranks, ncclUniqueId id, int rank, ncclConfig_t *config),        \
	  (comm, nranks, id, rank, config))                                                        \
	X(ncclCommInitRankScalable,                                                                \
	  (ncclComm_t * comm, int nranks, int rank, int nid, ncclUniqueId *ids,                    \
	   ncclConfig_t *config),                                                                  \
	  (comm, nranks, rank, nid, ids, config))                                                  \
	X(ncclCommSplit,                                                                           \
	  (ncclComm_t comm, int color, int key, ncclComm_t *newcomm, ncclConfig_t *config),        \
	  (comm, color, key, newcomm, config))                                                     \
	X(ncclCommInitAll, (ncclComm_t * comm, int ndev, const int *devlist), (comm, ndev, devlist)) \
	X(ncclCommShrink,                                                                          \
	  (ncclComm_t comm, int *excl, int nexcl, ncclComm_t *newcomm, ncclConfig_t *config,       \
	   int flags),                                                                             \
	  (comm, excl, nexcl, newcomm, config, flags))                                             \
	X(ncclCommGrow,                                                                            \
	  (ncclComm_t comm, int nranks, const ncclUniqueId *id, int rank, ncclComm_t *newcomm,     \
	   ncclConfig_t *config),                                                                  \
	  (comm, nranks, id, rank, newcomm, config))                                               \
	X(ncclCommFinalize, (ncclComm_t comm), (comm))                                             \
	X(ncclCommRevoke, (ncclComm_t comm, int flags), (comm, flags))                             \
	X(ncclCommDestroy, (ncclComm_t comm), (comm))                                              \
	X(ncclCommAbort, (ncclComm_t comm), (comm))                                                \
	X(ncclCommGetAsyncError, (ncclComm_t comm, ncclResult_t * err), (comm, err))              \
	X(ncclAllReduce,                                                                           \
	  (const void *s, void *r, size_t count, ncclDataType_t dt, ncclRedOp_t op,                \
	   ncclComm_t comm, cudaStream_t st),                                                      \
	  (s, r, count, dt, op, comm, st))                                                         \
	X(ncclReduceScatter,                                                                       \
	  (const void *s, void *r, size_t count, ncclDataType_t dt, ncclRedOp_t op,                \
	   ncclComm_t comm, cudaStream_t st),                                                      \
	  (s, r, count, dt, op, comm, st))                                                         \
	X(ncclAllGather,                                                                           \
	  (const void *s, void *r, size_t count, ncclDataType_t dt, ncclComm_t comm,               \
	   cudaStream_t st),                                                                       \
	  (s, r, count, dt, comm, st))                                                             \
	X(ncclGroupStart, (void), ())                                                              \
	X(ncclGroupEnd, (void), ())                                                                \
	X(ncclGroupSimulateEnd, (ncclSimInfo_t * info), (info))

#define NCCL_DECLARE(name, params, args) ncclResult_t name params;
NCCL_FORWARDS(NCCL_DECLARE)
NCCL_ENQUEUES(NCCL_DECLARE)
NCCL_OWN(NCCL_DECLARE)
#undef NCCL_DECLARE
const char *ncclGetErrorString(ncclResult_t result);
const char *ncclGetLastError(ncclComm_t comm);

#endif
