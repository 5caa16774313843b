/* SPDX-License-Identifier: MIT */
/*
 * What the interposer's files share (interpose.c: the real NCCL, NCCL's
 * calls, the communicators and their host services; together.c: the calls
 * that make communicators, and those one thread made every rank of;
 * regcache.c: the registration cache of the allreduce; settings.c:
 * PENNY_NCCL*, the one-line messages and the errors penny reports;
 * lastcall.c: the wait for penny's last call of a communicator).
 * Nothing here is exported from the library (it is built with hidden
 * visibility; only NCCL's names are exported).
 */
#ifndef PENNY_INTERPOSE_H
#define PENNY_INTERPOSE_H

#include "nccl_api.h"

#include "../common/cudrv.h"
#include "penny_plugin.h"

#include <stddef.h>
#include <stdint.h>

/* The real NCCL's calls (interpose.c; NULL where it lacks one). */
struct real_nccl {
#define X(name, params, args) ncclResult_t(*name) params;
	NCCL_FORWARDS(X)
	NCCL_ENQUEUES(X)
	NCCL_OWN(X)
#undef X
	const char *(*ncclGetErrorString)(ncclResult_t r);
	const char *(*ncclGetLastError)(ncclComm_t comm);
};
extern struct real_nccl R;
/* 1 when the real NCCL is there (else says why, once); the answer to a
 * call it lacks. */
int real(void);
ncclResult_t lacks(const char *name);
extern char real_err[512];	/* why not */
/* This thread's depth of ncclGroupStart (NCCL's groups are a thread's own). */
extern _Thread_local int group_depth;

/* PENNY_NCCL_DEBUG; one line "penny-nccl: ..." on stderr. */
extern int debug_on;
void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The settings (PENNY_NCCL*), read once. */
struct ip_cfg {
	int enabled;		/* PENNY_NCCL: 0 forwards every call */
	uint64_t max_bytes;	/* PENNY_NCCL_MAX_BYTES; 0: auto */
	uint64_t eager_max;	/* PENNY_NCCL_EAGER_MAX_BYTES: calls outside a graph capture
				 * penny takes up to this size; UINT64_MAX: no such limit */
	int timeout_s;		/* PENNY_NCCL_TIMEOUT */
	int regcache;		/* PENNY_NCCL_REGCACHE: registrations kept per communicator */
	char bad[200];		/* a setting that could not be read */
};
extern struct ip_cfg cfg;
/* cfg and debug_on from the environment, once (settings.c). */
void cfg_read(void);
/* PENNY_NCCL now: 1 on, 0 off (a value neither said of comm when speak). */
int cfg_wanted(int speak, const void *comm);

/* The penny plugin (NULL until loaded). */
extern const struct penny_plugin_v1 *P;
/* The plugin has member m (its table is long enough and m is set). */
#define PLUGIN_HAS_(m) (P->size >= offsetof(struct penny_plugin_v1, m) + sizeof(void (*)(void)) && P->m)
#define PLUGIN_HAS(what) PLUGIN_HAS_##what
#define PLUGIN_HAS_reg_cache (PLUGIN_HAS_(reg_buffer) && PLUGIN_HAS_(dereg_buffer) && PLUGIN_HAS_(allreduce_reg))
#define PLUGIN_HAS_async_error PLUGIN_HAS_(async_error)

/* The calls penny may run: bit (1 << kind) of a communicator's colls. */
enum { K_ALLREDUCE = 0, K_REDUCE_SCATTER, K_ALLGATHER, K_N };
extern const char *const kind_name[K_N];	/* NCCL's calls of each kind */

/* Who runs a call of a communicator penny runs, and why (WHY_PENNY: penny);
 * settings.c's tell() says it (PENNY_NCCL_DEBUG), once a reason and kind. */
enum { WHY_PENNY = 0, WHY_GROUP, WHY_ARGS, WHY_TYPE, WHY_PLUGIN, WHY_SIZE, WHY_EAGER };
struct pcomm;
void tell(struct pcomm *p, int kind, int why, size_t bytes);
/* PENNY_NCCL_DEBUG: who runs communicator c of n ranks that how made, and
 * why (all_here: every rank in this process); why NCCL runs p where
 * nothing failed (its nodes, its ranks in this process). */
void tell_new(ncclComm_t c, const char *how, int n, int all_here);
void tell_off(const struct pcomm *p, int nnodes, int here);

/*
 * One allocation of the caller's (cuMemGetAddressRange: base and size;
 * its buffer id tells a new allocation at a reused address) registered
 * with the plugin, under registration number gen, the same on every rank.
 */
struct rc_entry {
	CUdeviceptr base;
	size_t bytes;
	unsigned long long bufid;
	void *reg;		/* the plugin's handle */
	uint32_t gen;		/* 1, 2, ...: the communicator's registration count */
	uint64_t tick;		/* last use */
};

/* A communicator's penny state: made at its first allreduce, then on or off
 * (one thread's, every rank made by it: made at once, together.c). */
enum { PC_PENDING = 0, PC_ON, PC_OFF };

struct pcomm {
	ncclComm_t real;
	int state;		/* PC_* */
	int rank, n, dev;
	const struct pn_cudrv *cu;
	CUcontext ctx;
	CUstream hs;		/* the host services' stream */
	CUdeviceptr buf;	/* their device buffer */
	size_t buf_bytes;
	struct penny_host_v1 host;
	void *be;		/* the plugin's backend (PC_ON) */
	CUstream last;		/* the stream of penny's last call */
	CUevent done;		/* recorded on the caller's stream after each call penny
				 * ran at once (none in a capture; NULL until the first) */
	int done_set;		/* done follows penny's last such call (else wait_last
				 * waits for the stream last) */
	int used;		/* penny ran a call */
	uint64_t poll_next;	/* ncclCommGetAsyncError asks the plugin from then on
				 * (CLOCK_MONOTONIC ns; atomic) */
	int colls;		/* the kinds every rank's plugin has (bit 1 << K_*) */
	unsigned said[K_N];	/* PENNY_NCCL_DEBUG: the reasons told, per kind (1 << WHY_*) */
	int aborting;		/* host services fail at once (abort; atomic) */
	int revoked;		/* ncclCommRevoke or a shrink that aborts: NCCL runs every
				 * later call, the destroy is an abort (atomic) */
	uint64_t clique;	/* every rank a thread of this process: the set-up's key
				 * (0: ranks in processes of their own) */
	int quiet;		/* host barriers answer at once: every rank's work is done */
	int together;		/* one thread made every rank (its calls come in groups,
				 * which penny takes): set up at once, a thread a rank */
	int inflight;		/* calls using it now (hold/unhold; atomic) */
	int in_nccl;		/* of them, those inside the host services' ncclAllGather,
				 * which may wait there for a peer until NCCL's abort (atomic) */
	ncclResult_t err;	/* a failed penny call: the communicator's async error
				 * (atomic; set once, by set_err) */
	int err_claim;		/* set_err's: the first error's writer owns errmsg (atomic) */
	char errmsg[300];	/* its line, read once err is seen set */
	ncclResult_t hs_res;	/* the host services' last failure in NCCL's terms
				 * (ncclSuccess: none since the call began) */
	char hs_why[200];	/* and what it was */
	struct rc_entry *rc;	/* the registration cache: cfg.regcache entries */
	int rc_n;		/* entries in use */
	uint64_t rc_tick;	/* the calls that consulted it (LRU clock) */
	uint32_t rc_gen;	/* registrations made (the same count on every rank) */
	uint64_t rc_hits, rc_misses, rc_evicted, rc_staged;
	struct pcomm *next;
};

/* interpose.c: a communicator in the table, in state st (NULL: no memory,
 * NCCL runs it); its state held for a call (NULL: not in the table) and let
 * go; penny's set-up beside it (once: a communicator no longer pending is
 * left as it is); NCCL's ncclCommGetAsyncError (nonzero: the call failed);
 * the thread's CUDA context into *was (1: to be given back after penny's
 * work). */
struct pcomm *add(ncclComm_t c, int st);
int ctx_keep(const struct pn_cudrv *cu, CUcontext *was);
struct pcomm *hold(ncclComm_t c);
void unhold(struct pcomm *p);
ncclResult_t attach(struct pcomm *p);
int real_async_error(ncclComm_t c, ncclResult_t *ae);
void pcomm_fini(struct pcomm *p);
/* lastcall.c: penny's call just made on the caller's stream s marked by
 * p->done (1; 0: not, wait_last waits for the stream); penny's calls of p
 * so far done on the GPU (p->used). */
int mark_done(struct pcomm *p, cudaStream_t s);
void wait_last(struct pcomm *p);

/* together.c: communicators one thread made every rank of, set up at once
 * (a thread a rank); one made in this thread's group (id: its unique id),
 * remembered until the group's end, where born_settle (made: the group
 * succeeded) sets up the ids it made whole; a thread that ends inside its
 * group leaves nothing behind. */
void together(struct pcomm **v, int k);
/* interpose.c: penny's part of c takes no more calls (revoked). */
void revoke_comm(ncclComm_t c);
void park(struct pcomm *p);
void born_add(ncclComm_t c, const ncclUniqueId *id, int rank, int n, const char *how);
void born_settle(int made);

/*
 * settings.c: the errors penny reports.  errno_result: a plugin's or the
 * host services' negative errno in NCCL's terms (what NCCL answers in the
 * same situation).  set_err: p's error, once (the first stays), with its
 * line, said on stderr and kept as the process's last error; returns res.
 * last_error: that line into buf (1) while no call of NCCL's failed since
 * (seen(): every result of the real NCCL's passes it), else 0.
 */
ncclResult_t errno_result(int ret);
extern int penny_errs;		/* set_err's calls, of every communicator */
ncclResult_t set_err(struct pcomm *p, ncclResult_t res, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
int last_error(char *buf, size_t len);
extern int penny_last;
static inline ncclResult_t seen(ncclResult_t r)
{
	if (r != ncclSuccess && r != ncclInProgress)
		__atomic_store_n(&penny_last, 0, __ATOMIC_RELAXED);
	return r;
}

/*
 * One call of penny's kinds (K_*) as the caller made it (op: the
 * allreduce's and the reduce-scatter's).  Inside a group, a call penny
 * takes runs at the group's end, as NCCL's grouped calls do (together.c
 * keeps them): interpose.c's run_later runs one there (ncclSuccess or
 * what failed), nccl_call gives one to the real NCCL (an
 * ncclGroupSimulateEnd's group: NCCL simulates it, nothing runs).
 */
struct call {
	ncclComm_t comm;
	int kind;
	const void *s;
	void *r;
	size_t count;
	ncclDataType_t dt;
	ncclRedOp_t op;
	cudaStream_t st;
};
ncclResult_t run_later(const struct call *c);
ncclResult_t nccl_call(const struct call *c);
/* together.c: c kept for this thread's group's end (0; -1: no memory). */
int later_add(const struct call *c);

/* penny_host_v1.allgather: ncclAllGather on the real communicator. */
int hs_allgather(void *ctx, const void *mine, void *all, size_t len);

/* regcache.c: an allreduce through the registration cache (0 or a
 * negative errno, p->errmsg set); every registration goes. */
int reg_allreduce(struct pcomm *p, const void *s, void *r, size_t count, int pdt, int pop,
		  cudaStream_t st);
void rc_clear(struct pcomm *p);

#endif
