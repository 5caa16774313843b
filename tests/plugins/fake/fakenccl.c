/* SPDX-License-Identifier: MIT */
/*
 * A libnccl.so.2 for tests of the NCCL interposer without a GPU: NCCL's C
 * API over host memory between processes.  The unique id names a file
 * (PENNY_FAKE_NCCL_DIR, default /tmp) that the ranks map: a header with a
 * barrier and one slot per rank; a collective copies each rank's part into
 * its slot, waits for all, and reads every slot, a slot at a time.  The
 * file is unlinked once every rank has joined.  Every call is logged as one
 * line "rank R call args" to PENNY_FAKE_NCCL_LOG when set, so that tests
 * count what reached NCCL.  A rank that aborts makes its peers' waits give
 * up (ncclRemoteError, also from ncclCommGetAsyncError), and a wait for
 * ranks that never come gives up after PENNY_FAKE_NCCL_TIMEOUT s.  As
 * NCCL's checks answer: a destroyed or aborted communicator gets
 * ncclInvalidArgument for every later call (drop()), a non-blocking one
 * while its last call is in progress (ready(); its finalize and destroy
 * too, and those of one with an async error get that error, as NCCL's
 * ncclCommEnsureReady answers), a config not from
 * NCCL_CONFIG_INITIALIZER or with blocking other than 0 or 1 too.  Reductions
 * (ncclAllReduce, ncclReduceScatter, ncclReduce): int8, uint8, int32, uint32, int64,
 * uint64, float, double with sum, prod, max, min and avg; others (half,
 * bfloat16, fp8, PreMulSum ops) are logged and answered ncclInvalidArgument.
 * Collectives inside a group are checked and logged at the call (marked
 * "(grouped)") and run at the group's end, in call order (later_flush), as
 * NCCL's;
 * ncclSend and ncclRecv are matched at the end of their group (p2p_flush),
 * their data read and delivered in an order NCCL may take; groups are a
 * thread's own, as NCCL's (ncclGroupSimulateEnd with a simInfo ends one,
 * running none of its collectives, sends and receives).  ncclCommInitRank inside a group joins at its
 * end (join_flush), so one thread may make every rank of an id.  ncclCommInitAll makes its communicators in one
 * process, to be used by a thread each (a collective waits for every rank);
 * ncclCommShrink and ncclCommGrow make theirs on files named after the
 * communicator they start from.  PENNY_FAKE_NCCL_STRICT=1: a call on a
 * destroyed or aborted communicator ends the process with one line (the
 * real NCCL's reads freed memory there), for tests of what the interposer
 * itself calls; PENNY_FAKE_NCCL_BUSY_MS: how long a non-blocking
 * communicator's call stays in progress (20 ms).
 */
#define _GNU_SOURCE
#include "../../../plugins/interpose/nccl_api.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>

#define EXPORT __attribute__((visibility("default")))
#define SLOT (256u << 10)
#define ID_PREFIX "pennyfakenccl:"
#define FAKE_MAGIC 0x666b6e63u

struct hdr {
	uint32_t magic;
	int32_t nranks, joined, count, aborted;
	uint32_t gen;
};

struct ncclComm {
	uint32_t magic;
	int rank, n, splits, shrinks, grows;
	int failed;		/* a barrier gave up: the async error */
	int nonblocking;	/* config blocking=0: calls say ncclInProgress once */
	int revoked;		/* ncclCommRevoke: every later collective refused */
	double busy_until;	/* ncclCommGetAsyncError says ncclInProgress until then (now()) */
	struct hdr *h;
	char *slots;
	size_t len;
	char path[200];
	struct ncclComm *next_dead;	/* destroyed: drop() */
};

static void logline(int rank, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void logline(int rank, const char *fmt, ...)
{
	const char *path = getenv("PENNY_FAKE_NCCL_LOG");
	char line[300];
	va_list ap;
	int fd, n;

	if (!path || !*path)
		return;
	n = snprintf(line, sizeof(line), "rank %d ", rank);
	va_start(ap, fmt);
	n += vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
	va_end(ap);
	if (n > (int)sizeof(line) - 2)
		n = (int)sizeof(line) - 2;
	line[n++] = '\n';
	fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
	if (fd >= 0) {
		if (write(fd, line, (size_t)n) < 0)
			n = 0;
		close(fd);
	}
}

static int ok(const struct ncclComm *c)
{
	const char *e = getenv("PENNY_FAKE_NCCL_STRICT");

	if (c && !__atomic_load_n(&c->magic, __ATOMIC_ACQUIRE) && e && !strcmp(e, "1")) {
		fprintf(stderr, "fake NCCL: a call on destroyed communicator %p (rank %d)\n",
			(const void *)c, c->rank);
		abort();
	}
	return c && __atomic_load_n(&c->magic, __ATOMIC_ACQUIRE) == FAKE_MAGIC;
}

static double now(void);

/* A call may use c: NCCL refuses (ncclInvalidArgument) a communicator whose
 * last non-blocking call is still in progress ("Attempt to use communicator
 * before the previous operation returned ncclSuccess"), and the
 * communicator stays as it was. */
static int ready(const struct ncclComm *c)
{
	return ok(c) && !c->revoked && now() >= c->busy_until;
}

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + t.tv_nsec / 1e9;
}

/* How long a rank waits for its peers: PENNY_FAKE_NCCL_TIMEOUT s (60). */
static double wait_limit(void)
{
	const char *e = getenv("PENNY_FAKE_NCCL_TIMEOUT");
	double s = e ? atof(e) : 60;

	return s > 0 && s <= 3600 ? s : 60;
}

/* Every rank in, or -1 after wait_limit() or when a rank aborted. */
static int barrier(struct ncclComm *c)
{
	uint32_t g = __atomic_load_n(&c->h->gen, __ATOMIC_ACQUIRE);
	double t0 = now(), limit = wait_limit();

	if (__atomic_add_fetch(&c->h->count, 1, __ATOMIC_ACQ_REL) == c->n) {
		__atomic_store_n(&c->h->count, 0, __ATOMIC_RELAXED);
		__atomic_add_fetch(&c->h->gen, 1, __ATOMIC_RELEASE);
		return 0;
	}
	while (__atomic_load_n(&c->h->gen, __ATOMIC_ACQUIRE) == g) {
		if (__atomic_load_n(&c->h->aborted, __ATOMIC_RELAXED) || now() - t0 > limit) {
			c->failed = 1;
			return -1;
		}
		sched_yield();
	}
	return 0;
}

EXPORT ncclResult_t ncclGetVersion(int *v)
{
	logline(-1, "ncclGetVersion");
	if (!v)
		return ncclInvalidArgument;
	*v = 22809;
	return ncclSuccess;
}

/* A new id: a file's path in PENNY_FAKE_NCCL_DIR (default /tmp). */
static ncclResult_t make_id(ncclUniqueId *id)
{
	static int seq;
	const char *dir = getenv("PENNY_FAKE_NCCL_DIR");

	memset(id, 0, sizeof(*id));
	snprintf(id->internal, sizeof(id->internal), ID_PREFIX "%s/penny-fakenccl-%d-%d",
		 dir && *dir ? dir : "/tmp", (int)getpid(),
		 __atomic_fetch_add(&seq, 1, __ATOMIC_RELAXED));
	return id->internal[sizeof(id->internal) - 2] ? ncclInvalidArgument : ncclSuccess;
}

EXPORT ncclResult_t ncclGetUniqueId(ncclUniqueId *id)
{
	logline(-1, "ncclGetUniqueId");
	if (!id)
		return ncclInvalidArgument;
	return make_id(id);
}

/* Rank rank's communicator of n on the file at path, counted in (not waited for). */
static ncclResult_t map_rank(ncclComm_t *out, int n, const char *path, int rank)
{
	struct ncclComm *c;
	size_t len = sizeof(struct hdr) + 64 + (size_t)n * SLOT;
	void *m;
	int fd;

	if (n < 1 || n > 64 || rank < 0 || rank >= n || strlen(path) >= sizeof(c->path))
		return ncclInvalidArgument;
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0 || ftruncate(fd, (off_t)len)) {
		if (fd >= 0)
			close(fd);
		return ncclSystemError;
	}
	m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (m == MAP_FAILED)
		return ncclSystemError;
	c = calloc(1, sizeof(*c));
	if (!c) {
		munmap(m, len);
		return ncclSystemError;
	}
	c->magic = FAKE_MAGIC;
	c->rank = rank;
	c->n = n;
	c->h = m;
	c->slots = (char *)m + sizeof(struct hdr) + 64;
	c->len = len;
	snprintf(c->path, sizeof(c->path), "%s", path);
	__atomic_add_fetch(&c->h->joined, 1, __ATOMIC_ACQ_REL);
	*out = c;
	return ncclSuccess;
}

/* c's wait for every rank to join (0, or -1: it never came). */
static int joined(struct ncclComm *c)
{
	double t0 = now();

	while (__atomic_load_n(&c->h->joined, __ATOMIC_ACQUIRE) < c->n)
		if (now() - t0 > wait_limit())
			return -1;
		else
			sched_yield();
	if (barrier(c))
		return -1;
	if (c->rank == 0)
		unlink(c->path);
	return 0;
}

static ncclResult_t join(ncclComm_t *out, int n, const char *path, int rank)
{
	struct ncclComm *c;
	ncclResult_t r = map_rank(&c, n, path, rank);

	if (r != ncclSuccess)
		return r;
	if (joined(c)) {
		munmap(c->h, c->len);
		free(c);
		return ncclSystemError;
	}
	*out = c;
	return ncclSuccess;
}

/*
 * Inside a group, as NCCL's, a rank's communicator is handed out at once
 * and joins its peers at the group's end, where one thread's ranks (nccl-
 * tests makes every rank so) wait on a thread each: one thread can make
 * every rank of an id.
 */
#define MAX_JOIN 64
static _Thread_local struct ncclComm *to_join[MAX_JOIN];
static _Thread_local int njoin;

static void *join_main(void *arg)
{
	struct ncclComm *c = arg;

	if (joined(c))
		c->failed = 1;
	return NULL;
}

static ncclResult_t join_flush(void)
{
	pthread_t t[MAX_JOIN];
	char made[MAX_JOIN];
	int i, n = njoin, bad = 0;

	njoin = 0;
	for (i = 0; i < n; i++) {
		made[i] = !pthread_create(&t[i], NULL, join_main, to_join[i]);
		if (!made[i])
			to_join[i]->failed = 1;
	}
	for (i = 0; i < n; i++) {
		if (made[i])
			pthread_join(t[i], NULL);
		bad |= to_join[i]->failed;
	}
	return bad ? ncclSystemError : ncclSuccess;
}

static _Thread_local int group;

/*
 * PENNY_FAKE_NCCL_STRICT=1: NCCL runs a group's collectives at its end
 * (these run at once), so a communicator destroyed or aborted inside the
 * group that has a collective in it would be used after it is gone: the
 * collectives of this thread's open group, by communicator, end the
 * process at such a destroy.
 */
#define MAX_PENDING 64
static _Thread_local const struct ncclComm *pending[MAX_PENDING];
static _Thread_local int npending;

static int strict(void)
{
	const char *e = getenv("PENNY_FAKE_NCCL_STRICT");

	return e && !strcmp(e, "1");
}

static void pend(const struct ncclComm *c)
{
	if (group && npending < MAX_PENDING)
		pending[npending++] = c;
}

static void pending_check(const struct ncclComm *c, const char *call)
{
	int i;

	for (i = 0; strict() && i < npending; i++)
		if (pending[i] == c) {
			fprintf(stderr, "fake NCCL: %s of communicator %p (rank %d) inside a group with "
					"a collective of it\n", call, (const void *)c, c->rank);
			abort();
		}
}

/* ncclCommInitRank's work; ncclCommInitRankConfig calls it here, not through
 * the exported name, which an interposer in front of this library takes */
static ncclResult_t init_rank(ncclComm_t *comm, int n, ncclUniqueId id, int rank)
{
	ncclResult_t r;

	logline(rank, "ncclCommInitRank %d", n);
	if (!comm || strncmp(id.internal, ID_PREFIX, strlen(ID_PREFIX)))
		return ncclInvalidArgument;
	id.internal[sizeof(id.internal) - 1] = 0;
	if (!group)
		return join(comm, n, id.internal + strlen(ID_PREFIX), rank);
	if (njoin == MAX_JOIN)
		return ncclInvalidUsage;
	r = map_rank(comm, n, id.internal + strlen(ID_PREFIX), rank);
	if (r == ncclSuccess)
		to_join[njoin++] = *comm;
	return r;
}

EXPORT ncclResult_t ncclCommInitRank(ncclComm_t *comm, int n, ncclUniqueId id, int rank)
{
	return init_rank(comm, n, id, rank);
}

/* A non-blocking communicator (blocking=0) answers ncclInProgress to its
 * creation and its collectives, as NCCL's may, and its
 * ncclCommGetAsyncError says ncclInProgress for PENNY_FAKE_NCCL_BUSY_MS
 * (20 ms) after, its calls refused meanwhile (ready()). */
static ncclResult_t progress(struct ncclComm *c, ncclResult_t r)
{
	const char *e = getenv("PENNY_FAKE_NCCL_BUSY_MS");
	double ms = e ? atof(e) : 20;

	if (r != ncclSuccess || !c->nonblocking)
		return r;
	c->busy_until = now() + (ms > 0 && ms <= 600000 ? ms : 20) / 1e3;
	return ncclInProgress;
}

/* NCCL's checks of a config: NCCL_CONFIG_INITIALIZER's magic, blocking
 * undefined, 0 or 1 (else ncclInvalidArgument, nothing made). */
static int config_ok(const ncclConfig_t *config)
{
	return !config || (config->magic == NCCL_CONFIG_MAGIC &&
			   (config->blocking == NCCL_CONFIG_UNDEF_INT || config->blocking == 0 ||
			    config->blocking == 1));
}

EXPORT ncclResult_t ncclCommInitRankConfig(ncclComm_t *comm, int n, ncclUniqueId id, int rank,
					   ncclConfig_t *config)
{
	ncclResult_t r = config_ok(config) ? init_rank(comm, n, id, rank) : ncclInvalidArgument;

	if (r == ncclSuccess && config && config->blocking == 0) {
		(*comm)->nonblocking = 1;
		r = progress(*comm, r);
	}
	return r;
}

/*
 * A communicator destroyed or aborted: its struct stays (on a list, never
 * freed), so that a call on it (a second destroy, an abort then a destroy,
 * a watchdog's poll that comes late) is answered ncclInvalidArgument, as
 * NCCL's check of its communicator's magic and "comm has already been
 * destroyed" answer, where NCCL's would read freed memory.  A destroy
 * unmaps the file (unmap); an abort leaves it, as another thread's call
 * inside it (which the abort ends) still reads it.
 */
static struct ncclComm *dead;
static pthread_mutex_t dead_lock = PTHREAD_MUTEX_INITIALIZER;

static void drop(struct ncclComm *c, int unmap)
{
	__atomic_store_n(&c->magic, 0, __ATOMIC_RELEASE);
	if (unmap) {
		munmap(c->h, c->len);
		c->h = NULL;
		c->slots = NULL;
	}
	pthread_mutex_lock(&dead_lock);
	c->next_dead = dead;
	dead = c;
	pthread_mutex_unlock(&dead_lock);
}

/* ndev ranks in this process, every one mapped before any returns (devlist:
 * ignored, a rank's device is rank % 8 as everywhere here). */
EXPORT ncclResult_t ncclCommInitAll(ncclComm_t *comm, int ndev, const int *devlist)
{
	ncclUniqueId id;
	const char *path = id.internal + strlen(ID_PREFIX);
	ncclResult_t r;
	int i;

	(void)devlist;
	logline(-1, "ncclCommInitAll %d", ndev);
	if (!comm || ndev < 1 || ndev > 64)
		return ncclInvalidArgument;
	r = make_id(&id);
	if (r != ncclSuccess)
		return r;
	for (i = 0; i < ndev; i++) {
		r = map_rank(&comm[i], ndev, path, i);
		if (r != ncclSuccess)
			break;
	}
	unlink(path);
	/* a rank that failed: those before it go */
	while (r != ncclSuccess && i-- > 0)
		drop(comm[i], 1);
	return r;
}

/* NCCL's ncclCommEnsureReady before a finalize or destroy: refused while the
 * last call is in progress, or with the async error (nothing done). */
static ncclResult_t settled(const struct ncclComm *c)
{
	return c->failed ? ncclRemoteError : now() < c->busy_until ? ncclInvalidArgument : ncclSuccess;
}

EXPORT ncclResult_t ncclCommFinalize(ncclComm_t c)
{
	if (!ok(c))
		return ncclInvalidArgument;
	logline(c->rank, "ncclCommFinalize");
	return settled(c);
}

EXPORT ncclResult_t ncclCommDestroy(ncclComm_t c)
{
	ncclResult_t r;

	if (!c)
		return ncclSuccess;
	if (!ok(c))
		return ncclInvalidArgument;
	logline(c->rank, "ncclCommDestroy");
	if ((r = settled(c)) != ncclSuccess)
		return r;
	pending_check(c, "ncclCommDestroy");
	drop(c, 1);
	return ncclSuccess;
}

EXPORT ncclResult_t ncclCommAbort(ncclComm_t c)
{
	if (!c)
		return ncclSuccess;
	if (!ok(c))
		return ncclInvalidArgument;
	logline(c->rank, "ncclCommAbort");
	pending_check(c, "ncclCommAbort");
	__atomic_store_n(&c->h->aborted, 1, __ATOMIC_RELAXED);
	drop(c, 0);
	return ncclSuccess;
}

/* NCCL 2.28's revoke (flags 0 only, once): this rank's calls in flight end
 * and later collectives are refused; destroy and abort as ever. */
EXPORT ncclResult_t ncclCommRevoke(ncclComm_t c, int flags)
{
	if (!c)
		return ncclSuccess;
	if (!ok(c) || flags || c->revoked)
		return ncclInvalidArgument;
	logline(c->rank, "ncclCommRevoke");
	c->revoked = 1;
	return ncclSuccess;
}

EXPORT ncclResult_t ncclCommGetAsyncError(ncclComm_t c, ncclResult_t *e)
{
	if (!ok(c) || !e)
		return ncclInvalidArgument;
	*e = c->failed ? ncclRemoteError : now() < c->busy_until ? ncclInProgress : ncclSuccess;
	return ncclSuccess;
}

EXPORT ncclResult_t ncclCommCount(const ncclComm_t c, int *n)
{
	if (!ok(c) || !n)
		return ncclInvalidArgument;
	*n = c->n;
	return ncclSuccess;
}

EXPORT ncclResult_t ncclCommCuDevice(const ncclComm_t c, int *d)
{
	if (!ok(c) || !d)
		return ncclInvalidArgument;
	*d = c->rank % 8;
	return ncclSuccess;
}

EXPORT ncclResult_t ncclCommUserRank(const ncclComm_t c, int *r)
{
	if (!ok(c) || !r)
		return ncclInvalidArgument;
	*r = c->rank;
	return ncclSuccess;
}

EXPORT const char *ncclGetErrorString(ncclResult_t r)
{
	return r == ncclSuccess ? "no error" : "fake NCCL error";
}

EXPORT const char *ncclGetLastError(ncclComm_t c)
{
	(void)c;
	return "fake NCCL: no last error";
}

static const size_t type_size[] = { 1, 1, 4, 4, 8, 8, 2, 4, 8, 2 };

/*
 * A collective inside a group, checked, kept for the group's end (where
 * later_flush runs it, unless an ncclGroupSimulateEnd ends the group);
 * pend(): a destroy of its communicator before then is a use after free
 * in NCCL (PENNY_FAKE_NCCL_STRICT).
 */
enum { L_ALLREDUCE, L_REDUCE_SCATTER, L_REDUCE, L_ALLGATHER, L_BROADCAST };
struct later {
	int kind, root;
	const void *s;
	void *r;
	size_t count;
	ncclDataType_t dt;
	ncclRedOp_t op;
	struct ncclComm *c;
};
#define MAX_LATER 256
static _Thread_local struct later lq[MAX_LATER];
static _Thread_local int nlq;

/* The log's mark of a collective made inside a group (run at its end). */
static const char *grouped(void)
{
	return group ? " (grouped)" : "";
}

static ncclResult_t later(int kind, const void *s, void *r, size_t count, ncclDataType_t dt,
			  ncclRedOp_t op, int root, struct ncclComm *c)
{
	if (nlq == MAX_LATER)
		return ncclInvalidUsage;
	pend(c);
	lq[nlq++] = (struct later){ .kind = kind, .root = root, .s = s, .r = r, .count = count,
				    .dt = dt, .op = op, .c = c };
	return ncclSuccess;
}

static ncclResult_t later_flush(void);
static ncclResult_t gather(struct ncclComm *c, const char *send, size_t bytes, char *all,
			   size_t stride);

/*
 * Point-to-point calls wait for the end of their group (a call outside one
 * is a group of its own).  NCCL runs a group's sends and receives at once,
 * in no set order: a receive may land in a buffer before a send of the
 * same group has read it.  Here the ranks take turns, rank 0 first: in
 * rank s's turn it packs its sends (count, then each as peer, bytes, data),
 * the pack reaches every rank, and each receive from s takes the next send
 * of s to this rank, in call order (NCCL's matching), at once.  So a rank's
 * sends are read after the receives from the ranks before it have landed:
 * one legal order, in which an in-place exchange goes wrong as it can on a
 * GPU.  One communicator per group (a thread's).
 */
struct p2p {
	int send, peer;
	const void *s;
	void *r;
	size_t bytes;
};
#define MAX_P2P 1024
static _Thread_local struct p2p pq[MAX_P2P];
static _Thread_local int npq;
static _Thread_local struct ncclComm *pq_comm;

/* Rank src's turn: its sends packed and delivered to the receives from it. */
static ncclResult_t p2p_turn(struct ncclComm *c, int n, int src)
{
	size_t most, at, cur;
	uint64_t *sizes = NULL, v, k = 0;
	char *pack = NULL, *all = NULL;
	const char *p;
	ncclResult_t ret = ncclSystemError;
	int i, mine = c->rank == src;

	v = 8;
	for (i = 0; mine && i < n; i++)
		if (pq[i].send)
			v += 16 + pq[i].bytes;
	sizes = calloc((size_t)c->n, sizeof(*sizes));
	if (!sizes)
		goto out;
	if (gather(c, (const char *)&v, sizeof(v), (char *)sizes, sizeof(v)))
		goto remote;
	most = sizes[src];
	pack = calloc(1, most);
	all = malloc(most * (size_t)c->n);
	if (!pack || !all)
		goto out;
	for (i = 0, at = 8; mine && i < n; i++)
		if (pq[i].send) {
			v = (uint64_t)pq[i].peer;
			memcpy(pack + at, &v, 8);
			v = pq[i].bytes;
			memcpy(pack + at + 8, &v, 8);
			memcpy(pack + at + 16, pq[i].s, pq[i].bytes);
			at += 16 + pq[i].bytes;
			k++;
		}
	memcpy(pack, &k, 8);
	if (gather(c, pack, most, all, most))
		goto remote;
	p = all + (size_t)src * most;
	for (i = 0, cur = 8; i < n; i++) {
		uint64_t peer, bytes;

		if (pq[i].send || pq[i].peer != src)
			continue;
		/* the next send of rank src to me */
		for (;;) {
			if (cur + 16 > most)
				goto out_inval;
			memcpy(&peer, p + cur, 8);
			memcpy(&bytes, p + cur + 8, 8);
			cur += 16 + bytes;
			if ((int)peer == c->rank)
				break;
		}
		if (bytes != pq[i].bytes)
			goto out_inval;
		memcpy(pq[i].r, p + cur - bytes, bytes);
	}
	ret = ncclSuccess;
	goto out;
out_inval:
	ret = ncclInvalidUsage;
	goto out;
remote:
	ret = ncclRemoteError;
out:
	free(sizes);
	free(pack);
	free(all);
	return ret;
}

static ncclResult_t p2p_flush(void)
{
	struct ncclComm *c = pq_comm;
	ncclResult_t ret = ncclSuccess;
	int src, n = npq;

	npq = 0;
	pq_comm = NULL;
	if (!n)
		return ncclSuccess;
	/* every turn runs on every rank, even after a failed one: no rank left waiting */
	for (src = 0; src < c->n; src++) {
		ncclResult_t r = p2p_turn(c, n, src);

		if (ret == ncclSuccess)
			ret = r;
		if (r == ncclRemoteError)
			break;
	}
	return progress(c, ret);
}

EXPORT ncclResult_t ncclGroupStart(void)
{
	logline(-1, "ncclGroupStart");
	group++;
	return ncclSuccess;
}

/* The end of a group (name: the call's, for the log): at the outermost,
 * its communicators join, and its point-to-point calls run (run) or are
 * dropped (NCCL's simulation runs nothing). */
static ncclResult_t group_end(const char *name, int run)
{
	ncclResult_t r, r2;

	logline(-1, "%s", name);
	if (!group)
		return ncclInvalidUsage;
	group--;
	if (group)
		return ncclSuccess;
	npending = 0;
	r = njoin ? join_flush() : ncclSuccess;
	if (!run || r != ncclSuccess) {
		npq = 0;
		pq_comm = NULL;
		nlq = 0;
		return r;
	}
	r = later_flush();
	r2 = p2p_flush();
	return r != ncclSuccess ? r : r2;
}

EXPORT ncclResult_t ncclGroupEnd(void)
{
	return group_end("ncclGroupEnd", 1);
}

/* NCCL's: without info the group ends as at ncclGroupEnd (NCCL runs it);
 * info not from NCCL_SIM_INFO_INITIALIZER: ncclInvalidArgument, the group
 * dropped; else nothing runs, and estimatedTime is 1 us a collective of the
 * group (so that tests count what NCCL simulated). */
EXPORT ncclResult_t ncclGroupSimulateEnd(ncclSimInfo_t *info)
{
	int outer = group == 1, calls = nlq;
	ncclResult_t r;

	if (!info)
		return group_end("ncclGroupSimulateEnd", 1);
	r = group_end("ncclGroupSimulateEnd", 0);
	if (r != ncclSuccess || !outer)
		return r;
	if (info->magic != NCCL_SIM_INFO_MAGIC)
		return ncclInvalidArgument;
	info->estimatedTime = (float)calls;
	return ncclSuccess;
}

static ncclResult_t p2p_post(int send, const void *s, void *r, size_t count, ncclDataType_t dt,
			     int peer, struct ncclComm *c)
{
	logline(ok(c) ? c->rank : -1, "%s %zu %d %d", send ? "ncclSend" : "ncclRecv", count, (int)dt,
		peer);
	if (!ready(c) || (unsigned)dt >= 10 || peer < 0 || peer >= c->n || count > (1u << 28) ||
	    (count && !(send ? s : r)) || npq == MAX_P2P || (pq_comm && pq_comm != c))
		return ncclInvalidArgument;
	pq[npq++] = (struct p2p){ .send = send, .peer = peer, .s = s, .r = r,
				  .bytes = count * type_size[dt] };
	pq_comm = c;
	return group ? ncclSuccess : p2p_flush();
}

EXPORT ncclResult_t ncclSend(const void *s, size_t count, ncclDataType_t dt, int peer,
			     ncclComm_t c, cudaStream_t st)
{
	(void)st;
	return p2p_post(1, s, NULL, count, dt, peer, c);
}

EXPORT ncclResult_t ncclRecv(void *r, size_t count, ncclDataType_t dt, int peer, ncclComm_t c,
			     cudaStream_t st)
{
	(void)st;
	return p2p_post(0, NULL, r, count, dt, peer, c);
}

/*
 * Every rank's bytes of send, slot by slot, land in all (rank order,
 * stride bytes apart): the allgather all collectives here are made of.
 */
static ncclResult_t gather(struct ncclComm *c, const char *send, size_t bytes, char *all,
			   size_t stride)
{
	size_t off, len;
	int r;

	pend(c);
	for (off = 0; off < bytes || (!bytes && !off); off += SLOT) {
		len = bytes - off < SLOT ? bytes - off : SLOT;
		memcpy(c->slots + (size_t)c->rank * SLOT, send + off, len);
		if (barrier(c))
			return ncclRemoteError;
		for (r = 0; r < c->n; r++)
			memcpy(all + (size_t)r * stride + off, c->slots + (size_t)r * SLOT, len);
		if (barrier(c))
			return ncclRemoteError;
		if (!bytes)
			break;
	}
	return ncclSuccess;
}

#define REDUCE(T)                                                                                  \
	do {                                                                                       \
		T *o = (T *)(void *)recv;                                                          \
		const T *in = (const T *)(const void *)all;                                        \
		for (i = 0; i < count; i++) {                                                      \
			T a = in[i];                                                               \
			for (r = 1; r < c->n; r++) {                                               \
				T v = in[(size_t)r * count + i];                                   \
				a = op == ncclProd ? (T)(a * v)                                    \
				    : op == ncclMax ? (v > a ? v : a)                              \
				    : op == ncclMin ? (v < a ? v : a) : (T)(a + v);                \
			}                                                                          \
			o[i] = op == ncclAvg ? (T)(a / (T)c->n) : a;                               \
		}                                                                                  \
	} while (0)

/* recv := op over the c->n blocks of count elements in all (rank order). */
static void reduce_all(const struct ncclComm *c, const char *all, void *recv, size_t count,
		       ncclDataType_t dt, ncclRedOp_t op)
{
	size_t i;
	int r;

	switch (dt) {
	case ncclInt8:
		REDUCE(int8_t);
		break;
	case ncclUint8:
		REDUCE(uint8_t);
		break;
	case ncclInt32:
		REDUCE(int32_t);
		break;
	case ncclUint32:
		REDUCE(uint32_t);
		break;
	case ncclInt64:
		REDUCE(int64_t);
		break;
	case ncclUint64:
		REDUCE(uint64_t);
		break;
	case ncclFloat32:
		REDUCE(float);
		break;
	default:
		REDUCE(double);
		break;
	}
}

/* The reductions' arguments: the types and ops reduce_all has. */
static int reducible(const struct ncclComm *c, const void *s, const void *recv, size_t count,
		     ncclDataType_t dt, ncclRedOp_t op)
{
	return ready(c) && (unsigned)dt < 10 && (unsigned)op < 5 && dt != ncclFloat16 &&
	       dt != ncclBfloat16 && !(count && (!s || !recv)) && count <= (1u << 28);
}

static ncclResult_t allreduce_run(const void *s, void *recv, size_t count, ncclDataType_t dt,
				  ncclRedOp_t op, struct ncclComm *c)
{
	size_t es;
	char *all;
	ncclResult_t ret;

	if (!count)
		return ncclSuccess;
	es = type_size[dt];
	all = malloc(count * es * (size_t)c->n);
	if (!all)
		return ncclSystemError;
	ret = gather(c, s, count * es, all, count * es);
	if (ret == ncclSuccess)
		reduce_all(c, all, recv, count, dt, op);
	free(all);
	return progress(c, ret);
}

EXPORT ncclResult_t ncclAllReduce(const void *s, void *recv, size_t count, ncclDataType_t dt,
				  ncclRedOp_t op, ncclComm_t c, cudaStream_t st)
{
	(void)st;
	logline(ok(c) ? c->rank : -1, "ncclAllReduce %zu %d %d%s", count, (int)dt, (int)op, grouped());
	if (!reducible(c, s, recv, count, dt, op))
		return ncclInvalidArgument;
	if (group)
		return later(L_ALLREDUCE, s, recv, count, dt, op, 0, c);
	return allreduce_run(s, recv, count, dt, op, c);
}

/* recv (count elements) := op over the ranks of block rank of s (c->n blocks). */
static ncclResult_t reduce_scatter_run(const void *s, void *recv, size_t count, ncclDataType_t dt,
				       ncclRedOp_t op, struct ncclComm *c)
{
	size_t es, block;
	char *all;
	ncclResult_t ret;
	int r;

	if (!count)
		return ncclSuccess;
	es = type_size[dt];
	block = count * es;
	all = malloc(block * (size_t)c->n * (size_t)c->n);
	if (!all)
		return ncclSystemError;
	ret = gather(c, s, block * (size_t)c->n, all, block * (size_t)c->n);
	/* every rank's block of mine, packed in rank order, then reduced */
	for (r = 0; r < c->n && ret == ncclSuccess; r++)
		memmove(all + (size_t)r * block, all + ((size_t)r * c->n + c->rank) * block, block);
	if (ret == ncclSuccess)
		reduce_all(c, all, recv, count, dt, op);
	free(all);
	return progress(c, ret);
}

EXPORT ncclResult_t ncclReduceScatter(const void *s, void *recv, size_t count, ncclDataType_t dt,
				      ncclRedOp_t op, ncclComm_t c, cudaStream_t st)
{
	(void)st;
	logline(ok(c) ? c->rank : -1, "ncclReduceScatter %zu %d %d%s", count, (int)dt, (int)op,
		grouped());
	if (!reducible(c, s, recv, count, dt, op))
		return ncclInvalidArgument;
	if (group)
		return later(L_REDUCE_SCATTER, s, recv, count, dt, op, 0, c);
	return reduce_scatter_run(s, recv, count, dt, op, c);
}

/* On root, recv := op over the ranks of s; recv is not written elsewhere. */
static ncclResult_t reduce_run(const void *s, void *recv, size_t count, ncclDataType_t dt,
			       ncclRedOp_t op, int root, struct ncclComm *c)
{
	size_t es;
	char *all, *out;
	ncclResult_t ret;

	if (!count)
		return ncclSuccess;
	es = type_size[dt];
	all = malloc(count * es * (size_t)(c->n + 1));
	if (!all)
		return ncclSystemError;
	out = all + count * es * (size_t)c->n;
	ret = gather(c, s, count * es, all, count * es);
	if (ret == ncclSuccess && c->rank == root) {
		reduce_all(c, all, out, count, dt, op);
		memcpy(recv, out, count * es);
	}
	free(all);
	return progress(c, ret);
}

EXPORT ncclResult_t ncclReduce(const void *s, void *recv, size_t count, ncclDataType_t dt,
			       ncclRedOp_t op, int root, ncclComm_t c, cudaStream_t st)
{
	(void)st;
	logline(ok(c) ? c->rank : -1, "ncclReduce %zu %d %d %d%s", count, (int)dt, (int)op, root,
		grouped());
	if (!reducible(c, s, s, count, dt, op) || root < 0 || root >= c->n ||
	    (count && c->rank == root && !recv))
		return ncclInvalidArgument;
	if (group)
		return later(L_REDUCE, s, recv, count, dt, op, root, c);
	return reduce_run(s, recv, count, dt, op, root, c);
}

EXPORT ncclResult_t ncclAllGather(const void *s, void *recv, size_t count, ncclDataType_t dt,
				  ncclComm_t c, cudaStream_t st)
{
	size_t bytes;

	(void)st;
	logline(ok(c) ? c->rank : -1, "ncclAllGather %zu %d%s", count, (int)dt, grouped());
	if (!ready(c) || (unsigned)dt >= 10 || (count && (!s || !recv)) || count > (1u << 28))
		return ncclInvalidArgument;
	if (group)
		return later(L_ALLGATHER, s, recv, count, dt, ncclSum, 0, c);
	bytes = count * type_size[dt];
	return progress(c, gather(c, s, bytes, recv, bytes));
}

static ncclResult_t broadcast_run(const void *s, void *recv, size_t count, ncclDataType_t dt,
				  int root, struct ncclComm *c)
{
	size_t bytes;
	char *all;
	ncclResult_t ret;

	bytes = count * type_size[dt];
	all = malloc(bytes * (size_t)c->n + 1);
	if (!all)
		return ncclSystemError;
	ret = gather(c, c->rank == root ? s : recv, bytes, all, bytes);
	if (ret == ncclSuccess)
		memcpy(recv, all + (size_t)root * bytes, bytes);
	free(all);
	return ret;
}

EXPORT ncclResult_t ncclBroadcast(const void *s, void *recv, size_t count, ncclDataType_t dt,
				  int root, ncclComm_t c, cudaStream_t st)
{
	(void)st;
	logline(ok(c) ? c->rank : -1, "ncclBroadcast %zu %d %d%s", count, (int)dt, root, grouped());
	if (!ready(c) || (unsigned)dt >= 10 || root < 0 || root >= c->n || count > (1u << 28))
		return ncclInvalidArgument;
	if (group)
		return later(L_BROADCAST, s, recv, count, dt, ncclSum, root, c);
	return broadcast_run(s, recv, count, dt, root, c);
}

/* The group's collectives, in call order (the first failure is the group's;
 * one of a communicator destroyed since: ncclInvalidArgument). */
static ncclResult_t later_flush(void)
{
	ncclResult_t r, ret = ncclSuccess;
	int i, n = nlq;

	nlq = 0;
	for (i = 0; i < n; i++) {
		const struct later *l = &lq[i];

		if (!ok(l->c))
			r = ncclInvalidArgument;
		else if (l->kind == L_ALLREDUCE)
			r = allreduce_run(l->s, l->r, l->count, l->dt, l->op, l->c);
		else if (l->kind == L_REDUCE_SCATTER)
			r = reduce_scatter_run(l->s, l->r, l->count, l->dt, l->op, l->c);
		else if (l->kind == L_REDUCE)
			r = reduce_run(l->s, l->r, l->count, l->dt, l->op, l->root, l->c);
		else if (l->kind == L_ALLGATHER)
			r = progress(l->c, gather(l->c, l->s, l->count * type_size[l->dt], l->r,
						  l->count * type_size[l->dt]));
		else
			r = broadcast_run(l->s, l->r, l->count, l->dt, l->root, l->c);
		if (ret == ncclSuccess || ret == ncclInProgress)
			ret = r == ncclSuccess ? ret : r;
	}
	return ret;
}

/* The new communicator of a color: its ranks ordered by key, then old rank
 * (non-blocking by its config, as ncclCommInitRankConfig's). */
EXPORT ncclResult_t ncclCommSplit(ncclComm_t c, int color, int key, ncclComm_t *newcomm,
				  ncclConfig_t *config)
{
	int mine[2] = { color, key }, *all, r, n = 0, rank = 0;
	char path[sizeof(c->path) + 32];
	ncclResult_t ret;

	if (!ready(c) || !newcomm || !config_ok(config))
		return ncclInvalidArgument;
	logline(c->rank, "ncclCommSplit %d %d", color, key);
	all = malloc(sizeof(mine) * (size_t)c->n);
	if (!all)
		return ncclSystemError;
	ret = gather(c, (const char *)mine, sizeof(mine), (char *)all, sizeof(mine));
	for (r = 0; r < c->n && ret == ncclSuccess; r++)
		if (all[2 * r] == color) {
			n++;
			if (all[2 * r + 1] < key || (all[2 * r + 1] == key && r < c->rank))
				rank++;
		}
	free(all);
	snprintf(path, sizeof(path), "%s.s%dc%d", c->path, c->splits++, color);
	*newcomm = NULL;
	if (ret != ncclSuccess || color == NCCL_SPLIT_NOCOLOR)
		return ret;
	ret = join(newcomm, n, path, rank);
	if (ret == ncclSuccess && config && config->blocking == 0) {
		(*newcomm)->nonblocking = 1;
		ret = progress(*newcomm, ret);
	}
	return ret;
}

/* The communicator of the ranks not in excl (which do not call), in their order. */
EXPORT ncclResult_t ncclCommShrink(ncclComm_t c, int *excl, int nexcl, ncclComm_t *newcomm,
				   ncclConfig_t *config, int flags)
{
	char path[sizeof(c->path) + 32];
	int i, rank;

	(void)config;
	(void)flags;
	if (!ok(c) || !newcomm || nexcl < 0 || nexcl >= c->n || (nexcl && !excl))
		return ncclInvalidArgument;
	logline(c->rank, "ncclCommShrink %d", nexcl);
	for (i = 0, rank = c->rank; i < nexcl; i++) {
		if (excl[i] < 0 || excl[i] >= c->n || excl[i] == c->rank)
			return ncclInvalidArgument;
		if (excl[i] < c->rank)
			rank--;
	}
	snprintf(path, sizeof(path), "%s.k%d", c->path, c->shrinks++);
	*newcomm = NULL;
	return join(newcomm, c->n - nexcl, path, rank);
}

/* The id of the communicator's next ncclCommGrow, for its new ranks. */
EXPORT ncclResult_t ncclCommGetUniqueId(ncclComm_t c, ncclUniqueId *id)
{
	if (!ok(c) || !id)
		return ncclInvalidArgument;
	logline(c->rank, "ncclCommGetUniqueId");
	memset(id, 0, sizeof(*id));
	snprintf(id->internal, sizeof(id->internal), ID_PREFIX "%s.g%d", c->path, c->grows);
	return id->internal[sizeof(id->internal) - 2] ? ncclInvalidArgument : ncclSuccess;
}

/* A larger communicator: its ranks keep their rank (rank -1), the new ones
 * (c NULL) take theirs and the id of ncclCommGetUniqueId. */
EXPORT ncclResult_t ncclCommGrow(ncclComm_t c, int n, const ncclUniqueId *id, int rank,
				 ncclComm_t *newcomm, ncclConfig_t *config)
{
	char path[sizeof(c->path) + 32];

	(void)config;
	logline(ok(c) ? c->rank : rank, "ncclCommGrow %d", n);
	if (!newcomm || (c && (!ok(c) || n <= c->n || rank != -1)) ||
	    (!c && (!id || strncmp(id->internal, ID_PREFIX, strlen(ID_PREFIX)) ||
		    !memchr(id->internal, 0, sizeof(id->internal)))))
		return ncclInvalidArgument;
	*newcomm = NULL;
	if (c)
		snprintf(path, sizeof(path), "%s.g%d", c->path, c->grows++);
	else
		snprintf(path, sizeof(path), "%s", id->internal + strlen(ID_PREFIX));
	return join(newcomm, n, path, c ? c->rank : rank);
}

EXPORT ncclResult_t ncclMemAlloc(void **p, size_t size)
{
	logline(-1, "ncclMemAlloc %zu", size);
	if (!p)
		return ncclInvalidArgument;
	*p = malloc(size ? size : 1);
	return *p ? ncclSuccess : ncclSystemError;
}

EXPORT ncclResult_t ncclMemFree(void *p)
{
	logline(-1, "ncclMemFree");
	free(p);
	return ncclSuccess;
}

EXPORT ncclResult_t ncclRedOpCreatePreMulSum(ncclRedOp_t *op, void *scalar, ncclDataType_t dt,
					     ncclScalarResidence_t res, ncclComm_t c)
{
	(void)scalar;
	(void)dt;
	(void)res;
	logline(ok(c) ? c->rank : -1, "ncclRedOpCreatePreMulSum");
	if (!op || !ok(c))
		return ncclInvalidArgument;
	*op = ncclNumOps;
	return ncclSuccess;
}

EXPORT ncclResult_t ncclRedOpDestroy(ncclRedOp_t op, ncclComm_t c)
{
	logline(ok(c) ? c->rank : -1, "ncclRedOpDestroy %d", (int)op);
	return ok(c) ? ncclSuccess : ncclInvalidArgument;
}
