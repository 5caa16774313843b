/* SPDX-License-Identifier: MIT */
/*
 * The interposer's settings (PENNY_NCCL*, man/penny-nccl.7), read once
 * (PENNY_NCCL also at each communicator's set-up), its one-line messages
 * and the errors it reports (man/penny-nccl.7, ERRORS): ncclCommGetAsyncError
 * and ncclGetLastError.
 */
#define _GNU_SOURCE
#include "interpose.h"

#include "../../src/base/units.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define EXPORT __attribute__((visibility("default")))

int debug_on;

void say(const char *fmt, ...)
{
	char line[600];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	fprintf(stderr, "penny-nccl: %s\n", line);
}

struct ip_cfg cfg;

/* A size or count of units.h up to max. */
static int parse_u64(const char *s, uint64_t max, uint64_t *out)
{
	uint64_t v;

	if (pn_parse_size(s, &v) || v > max)
		return -1;
	*out = v;
	return 0;
}

static void read_cfg(void)
{
	const char *on = getenv("PENNY_NCCL"), *max = getenv("PENNY_NCCL_MAX_BYTES");
	const char *eager = getenv("PENNY_NCCL_EAGER_MAX_BYTES");
	const char *to = getenv("PENNY_NCCL_TIMEOUT"), *dbg = getenv("PENNY_NCCL_DEBUG");
	const char *rc = getenv("PENNY_NCCL_REGCACHE");
	uint64_t v;
	double d;

	cfg.enabled = 1;
	cfg.timeout_s = 300;
	/* off by default: its per-call host agreement cost more than the staging copy it
	 * saves in eager mode (4 x H100, PyTorch, 1-4 MiB: 175-516 us against 48-72) */
	cfg.regcache = 0;
	/* PENNY_NCCL's values */
	if (dbg && *dbg) {
		if (!strcmp(dbg, "1") || !strcmp(dbg, "on"))
			debug_on = 1;
		else if (strcmp(dbg, "0") && strcmp(dbg, "off"))
			snprintf(cfg.bad, sizeof(cfg.bad), "PENNY_NCCL_DEBUG='%.40s': on, off, 1 or 0",
				 dbg);
	}
	if (on && *on) {
		if (!strcmp(on, "0") || !strcmp(on, "off"))
			cfg.enabled = 0;
		else if (strcmp(on, "1") && strcmp(on, "on"))
			snprintf(cfg.bad, sizeof(cfg.bad), "PENNY_NCCL='%.40s': on, off, 1 or 0", on);
	}
	if (max && *max && strcmp(max, "auto")) {
		if (parse_u64(max, 1ull << 40, &v) || !v)
			snprintf(cfg.bad, sizeof(cfg.bad),
				 "PENNY_NCCL_MAX_BYTES='%.40s': auto or a size 1..1T (K, M, G, T)", max);
		else
			cfg.max_bytes = v;
	}
	/*
	 * Calls outside a graph capture (eager, PyTorch's default) cost the
	 * caller's host work, about 30 us a call on H200s, which hides what
	 * penny's kernels save.  A default limit for them was tried and not
	 * kept: on 2 x H200 (2026-11-29) the same NCCL measured 0.73-2.28x
	 * itself from one eager run to the next, so none could be told.
	 * Unset or auto: no limit of its own (PENNY_NCCL_MAX_BYTES's rule).
	 */
	cfg.eager_max = UINT64_MAX;
	if (eager && *eager && strcmp(eager, "auto")) {
		if (parse_u64(eager, 1ull << 40, &v))
			snprintf(cfg.bad, sizeof(cfg.bad),
				 "PENNY_NCCL_EAGER_MAX_BYTES='%.40s': auto or a size 0..1T (K, M, G, T)",
				 eager);
		else
			cfg.eager_max = v;
	}
	if (to && *to) {
		if (pn_parse_seconds(to, &d) || d < 1 || d > 86400)
			snprintf(cfg.bad, sizeof(cfg.bad), "PENNY_NCCL_TIMEOUT='%.40s': a duration, 1 s..1 day",
				 to);
		else
			cfg.timeout_s = (int)d;
	}
	if (rc && *rc) {
		if (parse_u64(rc, 4096, &v))
			snprintf(cfg.bad, sizeof(cfg.bad), "PENNY_NCCL_REGCACHE='%.40s': 0..4096 buffers",
				 rc);
		else
			cfg.regcache = (int)v;
	}
	if (cfg.bad[0]) {
		say("%s; penny's allreduce is off, NCCL runs every call", cfg.bad);
		cfg.enabled = 0;
	}
}

void cfg_read(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, read_cfg);
}

/* PENNY_NCCL as it is now (a program may turn penny off for the
 * communicators it makes next, as the bench's in-process A/B does); a
 * value read_cfg refused keeps penny off.  A value set since that is none
 * of on, off, 1, 0 is off too, which speak (rank 0) says of comm. */
int cfg_wanted(int speak, const void *comm)
{
	const char *on = getenv("PENNY_NCCL");

	cfg_read();
	if (!cfg.enabled && cfg.bad[0])
		return 0;
	if (!on || !*on || !strcmp(on, "1") || !strcmp(on, "on"))
		return 1;
	if (speak && strcmp(on, "0") && strcmp(on, "off"))
		say("PENNY_NCCL='%.40s' at communicator %p's set-up: on, off, 1 or 0; NCCL runs it",
		    on, comm);
	return 0;
}

/*
 * A negative errno of the plugin or the host services in NCCL's terms: what
 * NCCL answers in the same situation (nccl.h's ncclResult_t): arguments
 * refused, a peer that left or never answered, the system (memory, files),
 * a CUDA call; anything else is an internal check (a bug, in penny or the
 * plugin).
 */
ncclResult_t errno_result(int ret)
{
	switch (ret) {
	case 0:
		return ncclSuccess;
	case -EINVAL:
	case -EFAULT:
	case -EOVERFLOW:
	case -ERANGE:
		return ncclInvalidArgument;
	case -ETIMEDOUT:
	case -EREMOTEIO:
	case -ECONNRESET:
	case -ECONNREFUSED:
	case -ECONNABORTED:
	case -EPIPE:
	case -ENOTCONN:
	case -EHOSTUNREACH:
	case -ENETUNREACH:
		return ncclRemoteError;
	case -ENOMEM:
	case -EMFILE:
	case -ENFILE:
	case -ENOSPC:
	case -EAGAIN:
	case -EPERM:
	case -EACCES:
	case -ENOENT:
		return ncclSystemError;
	case -EIO:
	case -ENODEV:
	case -ENXIO:
		return ncclUnhandledCudaError;
	default:
		return ncclInternalError;
	}
}

/* The process's last error of penny's (last_line), while penny_last: no
 * call of the real NCCL's failed since (seen() clears it). */
static pthread_mutex_t last_lock = PTHREAD_MUTEX_INITIALIZER;
static char last_line[sizeof(((struct pcomm *)0)->errmsg) + 16];
int penny_last, penny_errs;

ncclResult_t set_err(struct pcomm *p, ncclResult_t res, const char *fmt, ...)
{
	va_list ap;

	/* the first error stays: a watchdog's poll and the caller's failed call may
	 * both come here, and ncclGetLastError reads errmsg once err is set */
	if (__atomic_exchange_n(&p->err_claim, 1, __ATOMIC_ACQ_REL))
		return res;
	va_start(ap, fmt);
	vsnprintf(p->errmsg, sizeof(p->errmsg), fmt, ap);
	va_end(ap);
	__atomic_add_fetch(&penny_errs, 1, __ATOMIC_RELEASE);
	__atomic_store_n(&p->err, res, __ATOMIC_RELEASE);
	say("rank %d: %s", p->rank, p->errmsg);
	pthread_mutex_lock(&last_lock);
	snprintf(last_line, sizeof(last_line), "rank %d: %s", p->rank, p->errmsg);
	__atomic_store_n(&penny_last, 1, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&last_lock);
	return res;
}

int last_error(char *buf, size_t len)
{
	int yes;

	pthread_mutex_lock(&last_lock);
	yes = __atomic_load_n(&penny_last, __ATOMIC_RELAXED);
	if (yes)
		snprintf(buf, len, "%s", last_line);
	pthread_mutex_unlock(&last_lock);
	return yes;
}

const char *const kind_name[K_N] = { "ncclAllReduce", "ncclReduceScatter", "ncclAllGather" };

/*
 * PENNY_NCCL_DEBUG: rank 0 says who runs a kind of call and why, the first
 * time each reason comes for that kind on the communicator (every rank
 * decides alike, so rank 0 speaks for all; a line per call would flood a
 * framework's log).
 */
void tell(struct pcomm *p, int kind, int why, size_t bytes)
{
	const char *name = kind_name[kind];

	if (!debug_on || p->rank != 0 || p->said[kind] & 1u << why)
		return;
	p->said[kind] |= 1u << why;
	switch (why) {
	case WHY_PENNY:
		say("penny runs %s (the first of %zu bytes)", name, bytes);
		break;
	case WHY_GROUP:
		say("NCCL runs %s inside a group (with the group, at ncclGroupEnd)", name);
		break;
	case WHY_ARGS:
		say("NCCL runs %s with count 0, a NULL buffer or a count past penny's "
		    "(NCCL's answer)", name);
		break;
	case WHY_TYPE:
		say("NCCL runs %s of a type or op penny lacks (fp8, PreMulSum)", name);
		break;
	case WHY_PLUGIN:
		say("NCCL runs %s of %zu bytes: the %s plugin does not take it", name, bytes, P->name);
		break;
	case WHY_EAGER:
		say("NCCL runs %s of %zu bytes outside a graph capture: above "
		    "PENNY_NCCL_EAGER_MAX_BYTES (%" PRIu64 ")", name, bytes, cfg.eager_max);
		break;
	default:
		if (cfg.max_bytes)
			say("NCCL runs %s of %zu bytes: above PENNY_NCCL_MAX_BYTES (%" PRIu64 ")", name,
			    bytes, cfg.max_bytes);
		else
			say("NCCL runs %s of %zu bytes: above the plugin's one-shot sizes "
			    "(PENNY_NCCL_MAX_BYTES=auto)", name, bytes);
	}
}

/* PENNY_NCCL_DEBUG: why NCCL runs a communicator where nothing failed. */
void tell_off(const struct pcomm *p, int nnodes, int here)
{
	say("NCCL runs communicator %p of %d ranks (%s)", (void *)p->real, p->n,
	    nnodes > 1 ? "more than one node"
	    : here > 1 && here < p->n ? "some ranks threads of one process, some not: penny runs "
					"either kind, not both"
	    : "PENNY_NCCL=off on some rank");
}

/* PENNY_NCCL_DEBUG: who runs communicator c of n ranks that how made, and
 * why (all_here: every rank in this process). */
void tell_new(ncclComm_t c, const char *how, int n, int all_here)
{
	if (n < 2)
		say("NCCL runs communicator %p (%s: 1 rank; penny runs 2 ranks or more)", (void *)c,
		    how);
	else if (all_here)
		say("penny's set-up of communicator %p runs now (%s: its %d ranks made by one "
		    "thread, which calls them in groups), a thread for each rank", (void *)c, how, n);
	else
		say("NCCL runs communicator %p (%s: %d ranks) until its first ncclAllReduce, "
		    "ncclReduceScatter or ncclAllGather outside a group and a graph capture, where "
		    "penny's set-up decides", (void *)c, how, n);
}

/*
 * Whether ncclCommGetAsyncError asks the plugin about penny's kernels now:
 * at most once a millisecond (the plugin's own poll is no more frequent).
 * PyTorch asks at every collective, NCCL's too, and each time the plugin
 * was asked, the thread's context was kept and given back: two driver
 * calls on every eager call of a communicator penny set up.
 */
static int poll_due(struct pcomm *p)
{
	struct timespec t;
	uint64_t now;

	clock_gettime(CLOCK_MONOTONIC, &t);
	now = (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
	if (now < __atomic_load_n(&p->poll_next, __ATOMIC_RELAXED))
		return 0;
	__atomic_store_n(&p->poll_next, now + 1000000ull, __ATOMIC_RELAXED);
	return 1;
}

EXPORT ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *err)
{
	struct pcomm *p;
	ncclResult_t r, mine;
	CUcontext was;
	int ret, back;

	if (!real())
		return ncclSystemError;
	r = seen(R.ncclCommGetAsyncError(comm, err));
	/* penny's error once there is one, also while a call of NCCL's is in
	 * progress (the communicator wants an abort, which may come at once) */
	if (r == ncclSuccess && err && (*err == ncclSuccess || *err == ncclInProgress) &&
	    (p = hold(comm))) {
		/* what penny's kernels found since (a peer that never came) */
		ret = 0;
		if (*err == ncclSuccess && !__atomic_load_n(&p->err, __ATOMIC_ACQUIRE) &&
		    !__atomic_load_n(&p->revoked, __ATOMIC_ACQUIRE) &&
		    __atomic_load_n(&p->state, __ATOMIC_ACQUIRE) == PC_ON && PLUGIN_HAS(async_error) &&
		    poll_due(p)) {
			back = ctx_keep(p->cu, &was);
			ret = P->async_error(p->be);
			if (back)
				p->cu->CtxSetCurrent(was);
		}
		/* buffers that differ between the ranks are the caller's misuse */
		if (ret)
			set_err(p, ret == -EINVAL ? ncclInvalidUsage : ncclRemoteError,
				"penny's allreduce failed: %s", P->errmsg());
		if ((mine = __atomic_load_n(&p->err, __ATOMIC_ACQUIRE)))
			*err = mine;
		unhold(p);
	}
	return r;
}

/*
 * comm's error where penny's call failed on it; else penny's line while
 * it is the process's last error (NCCL's ncclGetLastError is the
 * process's, whatever comm: frameworks pass NULL), else NCCL's.
 */
EXPORT const char *ncclGetLastError(ncclComm_t comm)
{
	static _Thread_local char last[sizeof(((struct pcomm *)0)->errmsg) + 16];
	struct pcomm *p;
	int mine = 0;

	if (!real())
		return real_err;
	if ((p = hold(comm))) {
		/* errmsg is written once, before err */
		if ((mine = __atomic_load_n(&p->err, __ATOMIC_ACQUIRE) != ncclSuccess))
			snprintf(last, sizeof(last), "%s", p->errmsg);
		unhold(p);
	}
	if (mine || last_error(last, sizeof(last)))
		return last;
	return R.ncclGetLastError ? R.ncclGetLastError(comm) : "";
}
