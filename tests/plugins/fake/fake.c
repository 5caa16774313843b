/* SPDX-License-Identifier: MIT */
/*
 * A plugin for tests, on host memory: "device" buffers are malloc'd, the
 * allreduce goes through the host's allgather and reduces in rank order.
 * It lets the loader and the GPU driver be tested on machines without a
 * GPU.  Variants (-D): FAKE_ABI=N (wrong ABI), FAKE_NOSYM (no table),
 * FAKE_VERSION="..." (tell copies apart), FAKE_FAIL_INIT (init fails),
 * FAKE_WRONG (element 1 of every result is off by one), FAKE_SKEW (the
 * same on the last rank only: outputs that differ between ranks), FAKE_DIE (rank 1
 * dies in its first allreduce), FAKE_NOGRAPH (no PENNY_CAP_GRAPH),
 * FAKE_MULTINODE (claims PENNY_CAP_MULTINODE), FAKE_NOXNODE (no xnode_*: the
 * hierarchical path through the host), FAKE_XCOLL2 (xnode_coll as before
 * PENNY_CAP_XCOLL_NODES: reduce, reduce_scatter, alltoall and sendrecv
 * across 2 nodes only), FAKE_OLD_SIZE (a table of
 * the first v1 size, without allgather or the other collectives), FAKE_ALGOS=bits (accepted
 * algorithms), FAKE_NOBW (no bw(), like the nccl plugin).  bw() measures memcpy between host buffers standing for
 * PENNY_FAKE_GPUS devices (default 2); hostbw() measures memcpy from an
 * mlock'ed host buffer to each of them.  describe() names the device
 * opened (the local rank's without --gpus) by a PCI address, bus = device.
 *
 * A modeled clock, PENNY_FAKE_GBS=X, at model_gbs() below.
 *
 * A collective release, as the cuda plugin's: PENNY_FAKE_FINI_BARRIER=1 (at
 * fake_fini() below).
 *
 * One stall, for the timing rule's tests: PENNY_FAKE_STALL=K:MS (and
 * PENNY_FAKE_STALL_RANK=R), at stall_once() below.
 *
 * Slow mode, for the checks that must fail a slow GPU: PENNY_FAKE_SLOW=F
 * (a factor > 1) makes the copies of memcpy, bw() and hostbw() and every
 * allreduce take F times as long (it sleeps for the difference);
 * PENNY_FAKE_SLOW_GPU=N limits it to device N (its copies, the matrix cells
 * from or to it, the allreduce of the rank on it); PENNY_FAKE_SLOW_WHAT=
 * allreduce to the allreduce (a GPU whose SMs another process holds: its
 * copy engines are not slow).  The device a rank opens follows
 * CUDA_VISIBLE_DEVICES (by index) as CUDA's does; the test's driver, like
 * CUDA's, cannot be used by a process forked after it was initialised.
 *
 * FAKE_NCCL_LOG (the test plugin named nccl): with NCCL_DEBUG=INFO and
 * NCCL_DEBUG_FILE set, init writes what NCCL would print there (its %h and
 * %p expanded): the version line and this rank's ring connection, "via"
 * FAKE_NCCL_VIA (default P2P/CUMEM/read); across nodes, the NET/IB Using
 * line and the connections to the next node and from the one before, via
 * FAKE_NCCL_NET_VIA (default NET/IB/<device>/GDRDMA); FAKE_NCCL_LOG_FILE
 * (%n: the rank's node index) writes that captured log instead;
 * FAKE_NCCL_LOG_MS=N makes that init take N ms longer.  For penny check's A/B of the
 * rail NICs: FAKE_NCCL_XNODE_MS=N makes an allreduce across nodes take N
 * ms longer where NCCL_IB_HCA is not set (NCCL's NIC choice gone wrong); FAKE_NCCL_PINNED acts where NCCL_IB_HCA is set (on rank
 * FAKE_NCCL_PINNED_RANK only, when set): "fail" (init fails), "die" (init
 * aborts), "hang" (init never returns), "garbage" (init prints a line on
 * stdout).
 */
#define _GNU_SOURCE
#include "penny_data.h"
#include "penny_plugin.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <sched.h>
#include <unistd.h>
#include <sys/mman.h>

#ifndef FAKE_ABI
#define FAKE_ABI PENNY_PLUGIN_ABI_V1
#endif
#ifndef FAKE_NAME
#define FAKE_NAME "fake"
#endif
#ifndef FAKE_VERSION
#define FAKE_VERSION "first"
#endif
#ifndef FAKE_ALGOS
#define FAKE_ALGOS ((1u << PENNY_ALGO_AUTO) | (1u << PENNY_ALGO_ONESHOT))
#endif
#ifdef FAKE_NOGRAPH
#define FAKE_CAP_GRAPH 0u
#else
#define FAKE_CAP_GRAPH PENNY_CAP_GRAPH
#endif
#ifdef FAKE_MULTINODE
#define FAKE_CAP_MULTINODE PENNY_CAP_MULTINODE
#else
#define FAKE_CAP_MULTINODE 0u
#endif
#if defined(FAKE_XCOLL2) || defined(FAKE_NOXNODE) || defined(FAKE_OLD_SIZE)
#define FAKE_CAP_XCOLL 0u
#else
#define FAKE_CAP_XCOLL PENNY_CAP_XCOLL_NODES
#endif

static _Thread_local char err[256];

static const char *fake_errmsg(void)
{
	return err;
}

static int fail(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, sizeof(err), fmt, ap);
	va_end(ap);
	return code;
}

struct fake_queue;

struct fake {
	struct fake_queue *q;	/* PENNY_FAKE_ASYNC=1: the calls queued (fake_enqueue) */
	const struct penny_host_v1 *host;
	int device;
	char desc[256];
	uint32_t next_reg;	/* registrations so far (reg_buffer) */
	int calls;		/* allreduce calls so far (atomic: async_error reads it
				 * on a watchdog's thread) */
	long stall_calls;	/* allreduce and xnode_allreduce calls so far (PENNY_FAKE_STALL) */
	double stalled_us;	/* time spent in that stall (the modeled clock adds it) */
};

static double now_us(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

#ifdef FAKE_NCCL_LOG
/* FAKE_NCCL_PINNED's mode when it applies to rank (-1: any rank), else NULL */
static const char *pinned(int rank)
{
	const char *hca = getenv("NCCL_IB_HCA"), *m = getenv("FAKE_NCCL_PINNED");
	const char *r = getenv("FAKE_NCCL_PINNED_RANK");

	if (!hca || !*hca || !m || !*m || (rank >= 0 && r && *r && atoi(r) != rank))
		return NULL;
	return m;
}
#endif

/* PENNY_FAKE_SLOW's factor for device dev (-1: any), 1 when not slow;
 * PENNY_FAKE_SLOW_WHAT=allreduce: only the allreduce is slow (the kernels of
 * a GPU another process holds, whose copy engines are not), not copies. */
static double slow_factor_of(int dev, int allreduce)
{
	const char *f = getenv("PENNY_FAKE_SLOW"), *g = getenv("PENNY_FAKE_SLOW_GPU");
	const char *w = getenv("PENNY_FAKE_SLOW_WHAT");
	double x = f ? atof(f) : 1;

	if (!(x > 1) || x > 1e6)
		return 1;
	if (g && *g && dev != atoi(g))
		return 1;
	if (w && !strcmp(w, "allreduce") && !allreduce)
		return 1;
	return x;
}

/*
 * PENNY_FAKE_STALL=K:MS: this process's K-th call of allreduce() and
 * xnode_allreduce() together (1: the first; warm-up and check calls count)
 * stalls MS ms (1..600000) before it starts, once; PENNY_FAKE_STALL_RANK=R
 * limits it to rank R.  The other ranks wait for it in the call, as they
 * would for a GPU that stalled: the tests show that one stalled block
 * leaves a measurement's median where it was.
 */
static void stall_once(struct fake *f)
{
	const char *e = getenv("PENNY_FAKE_STALL"), *r = getenv("PENNY_FAKE_STALL_RANK");
	char *end;
	long k, ms;

	f->stall_calls++;
	if (!e || !*e)
		return;
	k = strtol(e, &end, 10);
	if (*end != ':')
		return;
	ms = strtol(end + 1, &end, 10);
	if (*end || k != f->stall_calls || ms < 1 || ms > 600000)
		return;
	if (r && *r && atoi(r) != f->host->rank)
		return;
	{
		double t0 = now_us();

		nanosleep(&(struct timespec){ .tv_sec = ms / 1000, .tv_nsec = ms % 1000 * 1000000L },
			  NULL);
		f->stalled_us += now_us() - t0;
	}
}

/*
 * PENNY_FAKE_GBS=X (0.001..100000): a modeled clock, for tests that must
 * not depend on how busy the machine is.  Every copy of bw() and hostbw()
 * is timed as moving its bytes at X GB/s, and every timed allreduce call
 * as reaching a bus bandwidth of 0.9 X (nccl-tests' 2(n-1)/n), the slow
 * mode's factor applied and not slept; a stall (PENNY_FAKE_STALL) still
 * adds its real length to its block.  0 when unset.
 */
static double model_gbs(void)
{
	const char *e = getenv("PENNY_FAKE_GBS");
	double x = e && *e ? atof(e) : 0;

	return x >= 0.001 && x <= 100000 ? x : 0;
}

/* bytes at the modeled rate times factor, in us (model_gbs() set) */
static double model_us(double bytes, double factor)
{
	return bytes / (model_gbs() * 1e3) * (factor > 1 ? factor : 1);
}

/* Work that began at t0 (now_us) on device dev takes factor times as long. */
static void slow_down_of(double t0, int dev, int allreduce)
{
	double x = slow_factor_of(dev, allreduce), us;
	struct timespec ts;

	if (x <= 1 || model_gbs() > 0)
		return;
	us = (now_us() - t0) * (x - 1);
	if (us < 1)
		us = 1;
	ts.tv_sec = (time_t)(us / 1e6);
	ts.tv_nsec = (long)((us - ts.tv_sec * 1e6) * 1e3);
	nanosleep(&ts, NULL);
}

static void slow_down(double t0, int dev)
{
	slow_down_of(t0, dev, 0);
}

#define TIMES_MAX 256

/* The median of n (>= 1) copy times in us, which it sorts; at least 1 ns. */
static inline double median_of(double *v, int n)
{
	int i, j;
	double m;

	for (i = 1; i < n; i++)
		for (j = i; j > 0 && v[j - 1] > v[j]; j--) {
			m = v[j];
			v[j] = v[j - 1];
			v[j - 1] = m;
		}
	m = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
	return m > 1e-3 ? m : 1e-3;
}


#ifdef FAKE_NCCL_LOG
/* FAKE_NCCL_LOG_FILE (%n: this rank's node index): a captured log written
 * as this rank's (up to 1 MiB); 1 when it was, f closed */
static int replay(FILE *f, const struct penny_host_v1 *host)
{
	const char *tpl = getenv("FAKE_NCCL_LOG_FILE");
	char name[4096], buf[4096];
	size_t n = 0, k, total = 0;
	FILE *in;

	if (!tpl || !*tpl)
		return 0;
	for (; *tpl && n < sizeof(name) - 16; tpl++) {
		if (tpl[0] == '%' && tpl[1] == 'n')
			n += (size_t)snprintf(name + n, sizeof(name) - n, "%d", host->node), tpl++;
		else
			name[n++] = *tpl;
	}
	name[n] = 0;
	in = fopen(name, "r");
	while (in && total < (1u << 20) && (k = fread(buf, 1, sizeof(buf), in)) > 0) {
		fwrite(buf, 1, k, f);
		total += k;
	}
	if (in)
		fclose(in);
	fclose(f);
	return 1;
}

/* NCCL_DEBUG_FILE with %h (host) and %p (pid) expanded, created as NCCL does */
static void nccl_log(const struct penny_host_v1 *host, int device)
{
	const char *dbg = getenv("NCCL_DEBUG"), *file = getenv("NCCL_DEBUG_FILE");
	const char *via = getenv("FAKE_NCCL_VIA");
	char path[4096], hostname[64] = "fakehost";
	size_t n = 0;
	FILE *f;

	if (!dbg || strcasecmp(dbg, "INFO") || !file)
		return;
	if (getenv("FAKE_NCCL_LOG_MS")) {
		/* a slow init where the log is asked for (the diagnosis's capture) */
		long ms = atol(getenv("FAKE_NCCL_LOG_MS"));
		struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = ms % 1000 * 1000000 };

		if (ms > 0 && ms < 600000)
			nanosleep(&ts, NULL);
	}
	gethostname(hostname, sizeof(hostname) - 1);
	for (; *file && n < sizeof(path) - 80; file++) {
		if (file[0] == '%' && file[1] == 'h')
			n += (size_t)snprintf(path + n, sizeof(path) - n, "%s", hostname), file++;
		else if (file[0] == '%' && file[1] == 'p')
			n += (size_t)snprintf(path + n, sizeof(path) - n, "%d", (int)getpid()), file++;
		else
			path[n++] = *file;
	}
	path[n] = 0;
	f = fopen(path, "w");
	if (!f)
		return;
	if (replay(f, host))
		return;
	fprintf(f, "%s:%d:%d [%d] NCCL INFO NCCL version 2.21.5+cuda12.4\n", hostname,
		(int)getpid(), (int)getpid(), device);
	if (host->nnodes > 1) {
		/* across nodes: the last local rank sends to the next node, the
		 * first receives from the one before, over NIC index = device */
		const char *net = getenv("FAKE_NCCL_NET_VIA");
		char nvia[64];
		int last = host->local_rank == host->local_size - 1;

		snprintf(nvia, sizeof(nvia), "NET/IB/%d/GDRDMA", device);
		fprintf(f, "%s:%d:%d [%d] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_3:1/IB "
			"[RO]; OOB eth0:10.0.0.1<0>\n", hostname, (int)getpid(), (int)getpid(),
			device);
		fprintf(f, "%s:%d:%d [%d] NCCL INFO Channel 00/0 : %d[%d] -> %d[%d]%s via %s\n",
			hostname, (int)getpid(), (int)getpid(), device, host->rank, device,
			(host->rank + 1) % host->nranks, last ? 0 : device + 1,
			last ? " [send]" : "", last ? (net && *net ? net : nvia) :
			via && *via ? via : "P2P/CUMEM/read");
		if (host->local_rank == 0)
			fprintf(f, "%s:%d:%d [%d] NCCL INFO Channel 00/0 : %d[%d] -> %d[%d] [receive] "
				"via %s\n", hostname, (int)getpid(), (int)getpid(), device,
				(host->rank + host->nranks - 1) % host->nranks, host->local_size - 1,
				host->rank, device, net && *net ? net : nvia);
	} else {
		fprintf(f, "%s:%d:%d [%d] NCCL INFO Channel 00/0 : %d[%d] -> %d[%d] via %s\n",
			hostname, (int)getpid(), (int)getpid(), device, host->rank, device,
			(host->rank + 1) % host->nranks, (device + 1) % host->local_size,
			via && *via ? via : "P2P/CUMEM/read");
	}
	fclose(f);
}
#endif

#if !defined(FAKE_NOSYM) && !defined(FAKE_OLD_SIZE)
/* PENNY_FAKE_CUDA_API: the CUDA driver API version this fake reports
 * (12040 for 12.4); unset, there is no driver. */
static int fake_driver_up(void);

static int fake_driver_version(int *version)
{
	const char *e = getenv("PENNY_FAKE_CUDA_API");
	char *end;
	long v = e ? strtol(e, &end, 10) : 0;

	*version = 0;
	if (fake_driver_up())
		return -EIO;
	if (!e || !*e || *end || v < 1 || v > 1000000)
		return fail(-ENODEV, "no CUDA driver (PENNY_FAKE_CUDA_API unset)");
	*version = (int)v;
	return 0;
}
#endif

/*
 * Like the CUDA driver, initialised once per process by the first call
 * that needs a device: a process forked after its parent initialised it
 * cannot use it (cuInit's CUDA_ERROR_INITIALIZATION_ERROR, 3).  So a test
 * with this plugin fails where penny touches the GPU library before it
 * forks a child that needs it, as a real GPU node would.
 */
static int fake_driver_up(void)
{
	static pid_t up; /* atomic: ranks that are threads initialise at once */
	pid_t was = __atomic_load_n(&up, __ATOMIC_ACQUIRE);

	if (was && was != getpid())
		return fail(-EIO, "cuInit: initialization error (CUDA error 3): the fake driver was "
			    "initialised in process %d, which forked this one", (int)was);
	__atomic_store_n(&up, getpid(), __ATOMIC_RELEASE);
	return 0;
}

/* PENNY_FAKE_CPUS_LOG=FILE: "NAME rank R cpus C,C,...\n" appended at init (one
 * write), for tests of where a launcher put the ranks. */
static void log_cpus(int rank)
{
	const char *path = getenv("PENNY_FAKE_CPUS_LOG");
	char line[512];
	cpu_set_t set;
	int fd, c, n;

	if (!path || !*path || sched_getaffinity(0, sizeof(set), &set))
		return;
	n = snprintf(line, sizeof(line), "%s rank %d cpus", FAKE_NAME, rank);
	for (c = 0; c < CPU_SETSIZE && n < (int)sizeof(line) - 8; c++)
		if (CPU_ISSET(c, &set))
			n += snprintf(line + n, sizeof(line) - (size_t)n, "%s%d",
				      line[n - 1] == 's' ? " " : ",", c);
	line[n++] = '\n';
	fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
	if (fd >= 0) {
		if (write(fd, line, (size_t)n) < 0)
			n = 0;
		close(fd);
	}
}

/* The device CUDA_VISIBLE_DEVICES' i-th index entry names (local rank i of
 * n entries: i % n); -1 unset or not by index. */
static int cvd_device(int i)
{
	const char *p = getenv("CUDA_VISIBLE_DEVICES");
	int list[64], n = 0;
	char *end;

	while (p && *p && n < 64) {
		long v = strtol(p, &end, 10);

		if (end == p || v < 0 || v > 255 || (*end && *end != ','))
			break;
		list[n++] = (int)v;
		p = *end ? end + 1 : end;
	}
	return n ? list[i % n] : -1;
}

/*
 * PENNY_FAKE_ASYNC=1 (the interposer's tests): allreduce_stream,
 * reduce_scatter and allgather_stream return once queued, and a thread of
 * the backend runs them in order, as a GPU runs a stream's kernels, so
 * that one thread may call every rank of a communicator inside a group
 * (ncclCommInitAll's, nccl-tests' -g N).  The fake libcuda.so.1's
 * cuStreamSynchronize waits for every backend's queue (fakecuda_sync_hook),
 * but CU_STREAM_PER_THREAD's for the calls the same thread queued on it;
 * its events' for every call.  A queued call that fails says so on
 * stderr; so does a fini that comes before the backend's queued calls are
 * done (the interposer frees penny's buffers only after its last call):
 * they still run, and their results are wrong (0xff bytes), as on a GPU
 * whose memory went under them.  PENNY_FAKE_ASYNC_DELAY_MS=N: each queued
 * call waits N ms first, as a busy GPU's.
 */
#ifndef FAKE_OLD_SIZE
struct fake_job {
	int kind;		/* 0 allreduce, 1 reduce_scatter, 2 allgather */
	const void *send;
	void *recv;
	size_t count;
	int dt, op, algo;
	void *stream;
	uintptr_t key;		/* its stream's (fakecuda_stream_key; 0: any) */
	struct fake_job *next;
};

struct fake_queue {
	pthread_mutex_t m;
	pthread_cond_t c;
	struct fake_job *head, *tail;
	int stop;
	int running;		/* a call is running */
	int late;		/* fini came before the calls were done */
	long delay_ms;		/* PENNY_FAKE_ASYNC_DELAY_MS */
	pthread_t t;
};

static pthread_mutex_t queued_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t queued_none = PTHREAD_COND_INITIALIZER;
static int queued;			/* calls queued or running, every backend's */
static struct {
	uintptr_t key;
	int n;
} keyed[64];				/* of them, those of a per-thread stream */
static uintptr_t (*stream_key)(void *stream);
static _Thread_local int in_worker;	/* this thread runs queued calls */

/* The calls queued of key (0: all of them) change by d (queued_lock held). */
static void keyed_add(uintptr_t *key, int d)
{
	unsigned i, free_slot = 64;

	queued += d;
	for (i = 0; *key && i < 64; i++) {
		if (keyed[i].n && keyed[i].key == *key) {
			keyed[i].n += d;
			return;
		}
		if (!keyed[i].n && free_slot == 64)
			free_slot = i;
	}
	if (*key && d > 0 && free_slot < 64) {
		keyed[free_slot].key = *key;
		keyed[free_slot].n = d;
	} else {
		*key = 0; /* no room: waited for by the stream syncs of every call */
	}
}

static int keyed_n(uintptr_t key)
{
	unsigned i;

	if (!key)
		return queued;
	for (i = 0; i < 64; i++)
		if (keyed[i].n && keyed[i].key == key)
			return keyed[i].n;
	return 0;
}

/* A call that ran after its backend's fini: its result is wrong. */
static void late_call(struct fake *f, const struct fake_job *j)
{
	size_t es = (size_t)penny_data_size(j->dt);

	fprintf(stderr, "fake plugin: rank %d: a queued call ran after the backend's fini "
		"(its buffers freed)\n", f->host->rank);
	if (j->recv)
		memset(j->recv, 0xff, j->count * es * (j->kind == 2 ? (size_t)f->host->nranks : 1));
}

static int fake_allreduce_stream(void *be, const void *send, void *recv, size_t count, int dt,
				 int op, int algo, void *stream);
static int fake_reduce_scatter(void *be, const void *send, void *recv, size_t count, int dt,
			       int op, void *stream);
static int fake_allgather_stream(void *be, const void *send, void *recv, size_t count, int dt,
				 void *stream);

static void *fake_worker(void *arg)
{
	struct fake *f = arg;
	struct fake_queue *q = f->q;
	struct fake_job *j;
	int ret;

	in_worker = 1;
	pthread_mutex_lock(&q->m);
	for (;;) {
		while (!q->head && !q->stop)
			pthread_cond_wait(&q->c, &q->m);
		if (!(j = q->head))
			break;
		q->head = j->next;
		if (!q->head)
			q->tail = NULL;
		q->running = 1;
		pthread_mutex_unlock(&q->m);
		if (q->delay_ms > 0)
			nanosleep(&(struct timespec){ .tv_sec = q->delay_ms / 1000,
						      .tv_nsec = q->delay_ms % 1000 * 1000000L }, NULL);
		ret = j->kind == 0 ? fake_allreduce_stream(f, j->send, j->recv, j->count, j->dt, j->op,
							   j->algo, j->stream)
		      : j->kind == 1 ? fake_reduce_scatter(f, j->send, j->recv, j->count, j->dt, j->op,
							   j->stream)
				     : fake_allgather_stream(f, j->send, j->recv, j->count, j->dt,
							     j->stream);
		if (ret)
			fprintf(stderr, "fake plugin: rank %d: a queued call failed: %s\n",
				f->host->rank, err);
		pthread_mutex_lock(&q->m);
		q->running = 0;
		if (q->late)
			late_call(f, j);
		pthread_mutex_unlock(&q->m);
		pthread_mutex_lock(&queued_lock);
		keyed_add(&j->key, -1);
		pthread_cond_broadcast(&queued_none);
		pthread_mutex_unlock(&queued_lock);
		free(j);
		pthread_mutex_lock(&q->m);
	}
	pthread_mutex_unlock(&q->m);
	return NULL;
}

/* The driver's synchronize: the queued calls of key done (0: every one; not
 * from a worker). */
static void fake_sync_key(uintptr_t key)
{
	if (in_worker)
		return;
	pthread_mutex_lock(&queued_lock);
	while (keyed_n(key))
		pthread_cond_wait(&queued_none, &queued_lock);
	pthread_mutex_unlock(&queued_lock);
}

static int fake_enqueue(struct fake *f, const struct fake_job *how)
{
	struct fake_job *j = malloc(sizeof(*j));

	if (!j)
		return fail(-ENOMEM, "out of memory");
	*j = *how;
	j->next = NULL;
	j->key = __atomic_load_n(&stream_key, __ATOMIC_ACQUIRE)(j->stream);
	pthread_mutex_lock(&queued_lock);
	keyed_add(&j->key, 1);
	pthread_mutex_unlock(&queued_lock);
	pthread_mutex_lock(&f->q->m);
	if (f->q->tail)
		f->q->tail->next = j;
	else
		f->q->head = j;
	f->q->tail = j;
	pthread_cond_signal(&f->q->c);
	pthread_mutex_unlock(&f->q->m);
	return 0;
}

/* PENNY_FAKE_ASYNC=1: f's queue and its thread, the driver's hook set. */
static int fake_async(struct fake *f)
{
	const char *a = getenv("PENNY_FAKE_ASYNC");
	void *cu;
	const char *delay = getenv("PENNY_FAKE_ASYNC_DELAY_MS");
	void (*hook)(void (*)(uintptr_t));
	uintptr_t (*key)(void *);

	if (!a || strcmp(a, "1"))
		return 0;
	cu = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
	hook = cu ? (void (*)(void (*)(uintptr_t)))dlsym(cu, "fakecuda_sync_hook") : NULL;
	*(void **)&key = cu ? dlsym(cu, "fakecuda_stream_key") : NULL;
	if (!hook || !key)
		return fail(-ENOSYS, "PENNY_FAKE_ASYNC=1 wants the tests' libcuda.so.1 loaded");
	__atomic_store_n(&stream_key, key, __ATOMIC_RELEASE);
	hook(fake_sync_key);
	f->q = calloc(1, sizeof(*f->q));
	if (!f->q)
		return fail(-ENOMEM, "out of memory");
	f->q->delay_ms = delay ? atol(delay) : 0;
	pthread_mutex_init(&f->q->m, NULL);
	pthread_cond_init(&f->q->c, NULL);
	if (pthread_create(&f->q->t, NULL, fake_worker, f)) {
		free(f->q);
		f->q = NULL;
		return fail(-EAGAIN, "no thread for the queued calls");
	}
	return 0;
}

/* Its queued calls done, f's thread goes. */
static void fake_async_end(struct fake *f)
{
	if (!f->q)
		return;
	pthread_mutex_lock(&f->q->m);
	if (f->q->head || f->q->running) {
		fprintf(stderr, "fake plugin: rank %d: fini before the queued calls are done\n",
			f->host->rank);
		f->q->late = 1;
	}
	f->q->stop = 1;
	pthread_cond_signal(&f->q->c);
	pthread_mutex_unlock(&f->q->m);
	pthread_join(f->q->t, NULL);
	free(f->q);
	f->q = NULL;
}
#else
/* (a table without the calls that queue) */
static int fake_async(struct fake *f)
{
	(void)f;
	return 0;
}

static void fake_async_end(struct fake *f)
{
	(void)f;
}
#endif

static int fake_init(const struct penny_host_v1 *host, int device, void **be)
{
	struct fake *f;
	int ret = fake_driver_up();

	if (ret)
		return ret;
#ifdef FAKE_FAIL_INIT
	return fail(-ENODEV, "fake device is missing");
#endif
	if (!host || !host->allgather)
		return fail(-EINVAL, "no allgather");
	f = calloc(1, sizeof(*f));
	if (!f)
		return fail(-ENOMEM, "out of memory");
	f->host = host;
	f->device = device >= 0 ? device : host->local_rank;
	/* as CUDA: the visible devices of CUDA_VISIBLE_DEVICES (by index) */
	if (device < 0 && cvd_device(host->local_rank) >= 0)
		f->device = cvd_device(host->local_rank);
	/* the device's PCI address as the GPU plugins name it, bus = the device */
	snprintf(f->desc, sizeof(f->desc), "fake device %d of rank %d/%d (0000:%02x:00.0)", device,
		 host->rank, host->nranks, f->device & 0xff);
#ifdef FAKE_NCCL_LOG
	nccl_log(host, f->device);
	if (pinned(host->rank) && !strcmp(pinned(host->rank), "fail")) {
		free(f);
		return fail(-ENODEV, "fake: NCCL_IB_HCA %s names no usable NIC",
			    getenv("NCCL_IB_HCA"));
	}
	if (pinned(host->rank) && !strcmp(pinned(host->rank), "die"))
		abort();
	while (pinned(host->rank) && !strcmp(pinned(host->rank), "hang"))
		pause();
	if (pinned(host->rank) && !strcmp(pinned(host->rank), "garbage")) {
		printf("fake NCCL says hello\n");
		fflush(stdout);
	}
#endif
	log_cpus(host->rank);
	ret = fake_async(f);
	if (ret) {
		free(f);
		return ret;
	}
	*be = f;
	return 0;
}

/* PENNY_FAKE_FINI_BARRIER=1: fini waits at a host barrier first, as the
 * cuda plugin's release of its registered buffers does. */
static void fake_fini(void *be)
{
	struct fake *f = be;
	const char *b = getenv("PENNY_FAKE_FINI_BARRIER");

	if (f)
		fake_async_end(f);
	if (f && b && !strcmp(b, "1") && f->host && f->host->barrier)
		f->host->barrier(f->host->ctx);
	free(be);
}

#if !defined(FAKE_OLD_SIZE) && !defined(FAKE_NORINGS)
/* Planned rings: checked like a real plugin, shown in the description. */
static int fake_set_rings(void *be, const int32_t *order, int nrings)
{
	struct fake *f = be;
	int n = f->host->nranks, r, i;
	size_t len = strlen(f->desc);

	if (nrings < 0 || nrings > 64 || (nrings && !order))
		return fail(-EINVAL, "%d planned rings", nrings);
	for (r = 0; r < nrings; r++) {
		unsigned long long seen = 0;

		for (i = 0; i < n; i++) {
			int pe = order[r * n + i];

			if (pe < 0 || pe >= n || pe >= 64 || (seen >> pe & 1))
				return fail(-EINVAL, "planned ring %d is not an order of all %d ranks", r,
					    n);
			seen |= 1ull << pe;
		}
	}
	for (r = 0; r < nrings && len + 8 < sizeof(f->desc); r++) {
		len += (size_t)snprintf(f->desc + len, sizeof(f->desc) - len, "%s", r ? " " : ", rings ");
		for (i = 0; i < n && len + 4 < sizeof(f->desc); i++)
			len += (size_t)snprintf(f->desc + len, sizeof(f->desc) - len, "%s%d", i ? ">" : "",
						order[r * n + i]);
	}
	return 0;
}
#endif

static const char *fake_describe(void *be)
{
	return ((struct fake *)be)->desc;
}

static int fake_alloc(void *be, size_t bytes, unsigned flags, void **p)
{
	(void)be;
	(void)flags;
	*p = malloc(bytes ? bytes : 1);
	return *p ? 0 : fail(-ENOMEM, "out of memory");
}

static int fake_free(void *be, void *p)
{
	(void)be;
	free(p);
	return 0;
}

/*
 * No dma-buf exporter exists without a GPU (the lab's kernel has neither
 * udmabuf nor dma-heaps): PENNY_FAKE_DMABUF=memfd hands out a memfd, which
 * is not a dma-buf, so the core's ibv_reg_dmabuf_mr must fail and say so;
 * unset, the export itself fails.
 */
#ifndef FAKE_OLD_SIZE
static int fake_export_dmabuf(void *be, void *ptr, size_t bytes, int *fd, uint64_t *offset)
{
	const char *e = getenv("PENNY_FAKE_DMABUF");
	int f;

	(void)be;
	if (!e || strcmp(e, "memfd"))
		return fail(-EOPNOTSUPP, "fake: no dma-buf exporter (PENNY_FAKE_DMABUF=memfd "
					 "hands out a memfd instead)");
	f = memfd_create("penny-fake-dmabuf", MFD_CLOEXEC);
	if (f < 0)
		return fail(-errno, "fake: memfd_create: %s", strerror(errno));
	if (ftruncate(f, (off_t)(bytes + 4096))) {
		int e2 = errno;

		close(f);
		return fail(-e2, "fake: ftruncate: %s", strerror(e2));
	}
	*fd = f;
	*offset = (uint64_t)(uintptr_t)ptr % 4096;
	return 0;
}
#endif

static int fake_memcpy(void *be, void *dst, const void *src, size_t bytes, int dir)
{
	double t0 = now_us();

	(void)dir;
	memmove(dst, src, bytes);
	slow_down(t0, ((struct fake *)be)->device);
	return 0;
}

static int fake_poison(void *be, void *buf, size_t bytes, int byte)
{
	(void)be;
	memset(buf, byte, bytes);
	return 0;
}

static int fake_fill(void *be, void *buf, size_t count, int dt, int op, uint32_t seed, int rank)
{
	int es = penny_data_size(dt);
	size_t i;

	(void)be;
	if (!es || op < 0 || op >= PENNY_NREDOPS)
		return fail(-EINVAL, "bad type or op");
	for (i = 0; i < count; i++) {
		uint64_t bits = penny_data_input_bits(dt, op, seed, rank, i);

		memcpy((char *)buf + i * es, &bits, (size_t)es);
	}
	return 0;
}

static int fake_check(void *be, const void *buf, size_t count, int dt, int op, uint32_t seed,
		      int nranks, struct penny_check_v1 *res)
{
	int es = penny_data_size(dt);
	size_t i;

	(void)be;
	if (!es || op < 0 || op >= PENNY_NREDOPS)
		return fail(-EINVAL, "bad type or op");
	res->wrong = 0;
	res->first_bad = count;
	for (i = 0; i < count; i++) {
		uint64_t got = 0, want = penny_data_expected_bits(dt, op, seed, nranks, i);

		memcpy(&got, (const char *)buf + i * es, (size_t)es);
		if (got != want) {
			if (!res->wrong)
				res->first_bad = i;
			res->wrong++;
		}
	}
	return 0;
}

/* Element i of rank r's contribution as a double or an integer. */
static double as_double(int dt, const char *p)
{
	uint16_t h;
	float f;
	double d;

	switch (dt) {
	case PENNY_HALF:
		memcpy(&h, p, 2);
		return penny_half_to_f32(h);
	case PENNY_BFLOAT16:
		memcpy(&h, p, 2);
		return penny_bf16_to_f32(h);
	case PENNY_FLOAT:
		memcpy(&f, p, 4);
		return f;
	default:
		memcpy(&d, p, 8);
		return d;
	}
}

static int64_t as_int(int dt, const char *p)
{
	uint64_t u = 0;

	memcpy(&u, p, (size_t)penny_data_size(dt));
	switch (dt) {
	case PENNY_INT8:
		return (int8_t)u;
	case PENNY_INT32:
		return (int32_t)u;
	default:
		return (int64_t)u;
	}
}

/* Element i of the n inputs at src[r] + i * es, reduced in order r = 0..n-1;
 * avg divides by div.  The result's bits. */
static uint64_t combine(int dt, int op, const char *const *src, int n, size_t i, int div)
{
	int es = penny_data_size(dt), r;
	uint64_t bits;

	if (dt >= PENNY_HALF) {
		double a = as_double(dt, src[0] + i * es);

		for (r = 1; r < n; r++) {
			double v = as_double(dt, src[r] + i * es);

			a = op == PENNY_PROD ? a * v : op == PENNY_MIN ? (v < a ? v : a)
				: op == PENNY_MAX ? (v > a ? v : a) : a + v;
		}
		if (dt == PENNY_DOUBLE) {
			if (op == PENNY_AVG)
				a /= div;
			memcpy(&bits, &a, 8);
		} else {
			float x = (float)a;

			if (op == PENNY_AVG)
				x /= (float)div;
			bits = dt == PENNY_HALF ? penny_f32_to_half(x)
			       : dt == PENNY_BFLOAT16 ? penny_f32_to_bf16(x) : penny_f32_bits(x);
		}
	} else {
		int64_t a = as_int(dt, src[0] + i * es);

		for (r = 1; r < n; r++) {
			int64_t v = as_int(dt, src[r] + i * es);

			a = op == PENNY_PROD ? (int64_t)((uint64_t)a * (uint64_t)v)
			    : op == PENNY_MIN ? (v < a ? v : a)
			    : op == PENNY_MAX ? (v > a ? v : a) : (int64_t)((uint64_t)a + (uint64_t)v);
			a = penny_data_wrap(dt, a);
		}
		if (op == PENNY_AVG)
			a = dt == PENNY_UINT64 ? (int64_t)((uint64_t)a / (uint64_t)div) : a / div;
		bits = (uint64_t)a;
	}
	return bits;
}

static int fake_allreduce(void *be, const void *send, void *recv, size_t count, int dt, int op,
			  int algo)
{
	struct fake *f = be;
	int n = f->host->nranks, es = penny_data_size(dt), r, ret;
	size_t i, bytes = count * (size_t)es;
	double t0 = now_us();
	const char *src[1024];
	char *all;

	(void)algo;
	if (!es)
		return fail(-EINVAL, "bad type");
	if (n > 1024)
		return fail(-EINVAL, "more than 1024 ranks");
#ifdef FAKE_DIE
	if (f->host->rank == 1)
		_exit(3);
#endif
	stall_once(f);
	all = malloc(bytes * (size_t)n + 1);
	if (!all)
		return fail(-ENOMEM, "out of memory");
	ret = f->host->allgather(f->host->ctx, send, all, bytes);
	if (ret) {
		free(all);
		return fail(ret, "allgather failed");
	}
	for (r = 0; r < n; r++)
		src[r] = all + (size_t)r * bytes;
	for (i = 0; i < count; i++) {
		uint64_t bits = combine(dt, op, src, n, i, n);

#ifdef FAKE_WRONG
		if (i == 1)
			bits ^= 1;
#endif
#ifdef FAKE_SKEW
		if (i == 1 && f->host->rank == n - 1)
			bits ^= 1;
#endif
		memcpy((char *)recv + i * es, &bits, (size_t)es);
	}
	free(all);
	slow_down_of(t0, f->device, 1);
#ifdef FAKE_NCCL_LOG
	if (f->host->nnodes > 1 && !(getenv("NCCL_IB_HCA") && *getenv("NCCL_IB_HCA")) &&
	    getenv("FAKE_NCCL_XNODE_MS")) {
		int ms = atoi(getenv("FAKE_NCCL_XNODE_MS"));

		if (ms > 0 && ms <= 10000)
			nanosleep(&(struct timespec){ .tv_sec = ms / 1000,
						      .tv_nsec = ms % 1000 * 1000000L }, NULL);
	}
#endif
	return 0;
}

/* PENNY_FAKE_REG_BYTES=N: auto picks the two-shot kernel (which stores into
 * the peers' recv, so wants it registered) from N bytes on.
 * PENNY_FAKE_REFUSE_TYPE=T: no algorithm for penny type T (-EOPNOTSUPP). */
static int fake_select(void *be, size_t count, int dt, int op, int algo)
{
	const char *reg = getenv("PENNY_FAKE_REG_BYTES"), *no = getenv("PENNY_FAKE_REFUSE_TYPE");

	(void)be;
	(void)op;
	if (no && *no && atoi(no) == dt)
		return fail(-EOPNOTSUPP, "fake: no algorithm for type %d", dt);
	if (algo == PENNY_ALGO_AUTO && reg && *reg &&
	    count * (size_t)penny_data_size(dt) >= strtoull(reg, NULL, 10))
		return PENNY_ALGO_TWOSHOT;
	return algo == PENNY_ALGO_AUTO ? PENNY_ALGO_ONESHOT : algo;
}

/*
 * Warm-up, a barrier, then the timed calls of enqueue (graphs: the calls
 * round up to whole graphs, as the real plugins' replays do) in the blocks
 * of t2 (penny_time_v2's rule; t2 NULL or short: one block).
 */
static int time_loop(struct fake *f, struct penny_time_v1 *t, struct penny_time_v2 *t2,
		     int (*enqueue)(void *), void *arg, size_t model_bytes)
{
	int i, b, ret = 0, n = t->graph > 0 ? (t->iters + t->graph - 1) / t->graph * t->graph : t->iters;
	int stamped = t2 && t2->size >= sizeof(*t2) && t2->blocks > 0, blocks = 1;
	double a, total = 0;

	if (stamped && (t2->blocks > PENNY_TIME_MAX_BLOCKS || !t2->block_usec))
		return fail(-EINVAL, "time: bad blocks");
	if (stamped)
		blocks = t2->blocks;
	for (i = 0; i < t->warmup && !ret; i++)
		ret = enqueue(arg);
	if (!ret && f->host->barrier)
		ret = f->host->barrier(f->host->ctx);
	for (b = 0; b < blocks && !ret; b++) {
		double stalled = f->stalled_us;

		a = now_us();
		for (i = 0; i < n && !ret; i++)
			ret = enqueue(arg);
		a = now_us() - a;
		if (model_bytes && model_gbs() > 0) {
			int nr = f->host->nranks;
			double bus = nr > 1 ? 2.0 * (nr - 1) / nr : 1;

			a = n * model_us((double)model_bytes * bus / 0.9,
					 slow_factor_of(f->device, 1)) + (f->stalled_us - stalled);
		}
		total += a;
		if (stamped)
			t2->block_usec[b] = a / (n ? n : 1);
	}
	t->iters_run = n;
	t->usec = total / (n ? n : 1) / blocks;
	if (t2 && t2->size >= sizeof(*t2))
		t2->blocks_run = stamped ? blocks : 0;
	return ret;
}

struct fake_call {
	void *be;
	const struct penny_time_v1 *t;
};

static int fake_one(void *arg)
{
	const struct fake_call *x = arg;

	return fake_allreduce(x->be, x->t->send, x->t->recv, x->t->count, x->t->dtype, x->t->op,
			      x->t->algo);
}

static int fake_time(void *be, struct penny_time_v1 *t)
{
	struct fake_call x = { be, t };

	return time_loop(be, t, NULL, fake_one, &x,
			 t->count * (size_t)penny_data_size(t->dtype));
}

#ifndef FAKE_OLD_SIZE
/* time2 and time_fn: time() in blocks, the caller's cost per call its own */
static int fake_time2_of(void *be, struct penny_time_v2 *t2, int (*enqueue)(void *), void *arg,
			 size_t model_bytes)
{
	struct penny_time_v1 *t = &t2->t;
	int ret;

	if (t2->size < PENNY_TIME_V2_MIN_SIZE || t->iters <= 0 || t->warmup < 0 || t->graph < 0)
		return fail(-EINVAL, "time2: bad arguments");
#ifdef FAKE_NOGRAPH
	if (t->graph > 0)
		return fail(-ENOTSUP, "no graphs");
#endif
	ret = time_loop(be, t, t2, enqueue, arg, model_bytes);
	t2->host_usec = t->usec;
	return ret;
}

static int fake_time2(void *be, struct penny_time_v2 *t2)
{
	struct fake_call x = { be, &t2->t };

	return fake_time2_of(be, t2, fake_one, &x,
			     t2->t.count * (size_t)penny_data_size(t2->t.dtype));
}
#endif

static int fake_sync(void *be)
{
	(void)be;
	return 0;
}

#ifndef FAKE_OLD_SIZE
static int fake_allgather(void *be, const void *send, void *recv, size_t count, int dt)
{
	struct fake *f = be;
	size_t bytes = count * (size_t)penny_data_size(dt);
	char *all;
	int ret;

	if (!penny_data_size(dt))
		return fail(-EINVAL, "bad type");
	all = malloc(bytes * (size_t)f->host->nranks + 1);
	if (!all)
		return fail(-ENOMEM, "out of memory");
	ret = f->host->allgather(f->host->ctx, send, all, bytes);
	if (!ret)
		memcpy(recv, all, bytes * (size_t)f->host->nranks);
	free(all);
	return ret ? fail(ret, "allgather failed") : 0;
}

/* PENNY_FAKE_WANT_STREAM=1: a call of the other collectives on the
 * backend's own stream (NULL) fails, as the interposer's must never be. */
static int own_stream(void *stream)
{
	const char *e = getenv("PENNY_FAKE_WANT_STREAM");

	return !stream && e && !strcmp(e, "1") ? fail(-EINVAL, "fake: called on the backend's stream")
					       : 0;
}

/* On a stream (host memory has none): at once, as allgather(). */
static int fake_allgather_stream(void *be, const void *send, void *recv, size_t count, int dt,
				 void *stream)
{
	struct fake *f = be;

	if (f->q && !in_worker)
		return fake_enqueue(f, &(struct fake_job){ .kind = 2, .send = send, .recv = recv,
							  .count = count, .dt = dt, .stream = stream });
	return own_stream(stream) ? -EINVAL : fake_allgather(be, send, recv, count, dt);
}

/* A registration of a caller's buffer: what the rank passed. */
struct fake_reg {
	char *ptr;
	size_t bytes;
	uint32_t id;
};

/* Collective, as the cuda plugin's: every rank's n-th registration is #n. */
static int fake_reg_buffer(void *be, void *ptr, size_t bytes, void **reg)
{
	struct fake *f = be;
	uint32_t mine = f->next_reg++, all[1024];
	struct fake_reg *r;
	int p, ret;

	if (f->host->nranks > 1024)
		return fail(-EINVAL, "more than 1024 ranks");
	ret = f->host->allgather(f->host->ctx, &mine, all, sizeof(mine));
	if (ret)
		return fail(ret, "allgather failed");
	for (p = 0; p < f->host->nranks; p++)
		if (all[p] != mine)
			return fail(-EINVAL, "registration #%u differs between ranks: rank %d is at #%u",
				    mine, p, all[p]);
	if (!ptr || !bytes)
		return fail(-EINVAL, "no buffer to register");
	r = calloc(1, sizeof(*r));
	if (!r)
		return fail(-ENOMEM, "out of memory");
	r->ptr = ptr;
	r->bytes = bytes;
	r->id = mine;
	*reg = r;
	return 0;
}

static void fake_dereg_buffer(void *be, void *reg)
{
	(void)be;
	free(reg);
}

/*
 * Host memory has no streams: the call runs at once, like allreduce().
 * First every rank says which registration it uses (0: none) and where in
 * it: the ranks must agree, as the cuda plugin's kernels must (they check
 * the same with the buffer identity and store nothing when it differs).
 */
static int fake_allreduce_reg(void *be, void *reg, const void *send, void *recv, size_t count,
			      int dt, int op, int algo, void *stream)
{
	struct fake *f = be;
	const struct fake_reg *r = reg;
	uint64_t mine[2] = { 0, 0 }, all[2 * 1024];
	int p, ret;

	(void)stream;
	if (f->host->nranks > 1024)
		return fail(-EINVAL, "more than 1024 ranks");
	if (r) {
		if ((const char *)recv < r->ptr ||
		    count * (size_t)penny_data_size(dt) > r->bytes - (size_t)((const char *)recv - r->ptr))
			return fail(-EINVAL, "recv is not inside the registered buffer");
		mine[0] = (uint64_t)r->id + 1;
		mine[1] = (uint64_t)((const char *)recv - r->ptr);
	}
	ret = f->host->allgather(f->host->ctx, mine, all, sizeof(mine));
	if (ret)
		return fail(ret, "allgather failed");
	for (p = 0; p < f->host->nranks; p++)
		if (all[2 * p] != mine[0] || all[2 * p + 1] != mine[1])
			return fail(-EINVAL, "allreduce buffers differ between ranks: registration "
					     "%" PRIu64 " at %" PRIu64 " on rank %d, %" PRIu64 " at %" PRIu64
					     " here", all[2 * p], all[2 * p + 1], p, mine[0], mine[1]);
	__atomic_add_fetch(&f->calls, 1, __ATOMIC_RELAXED);
	return fake_allreduce(be, send, recv, count, dt, op, algo);
}

static int fake_allreduce_stream(void *be, const void *send, void *recv, size_t count, int dt,
				 int op, int algo, void *stream)
{
	struct fake *f = be;

	if (f->q && !in_worker)
		return fake_enqueue(f, &(struct fake_job){ .kind = 0, .send = send, .recv = recv,
							  .count = count, .dt = dt, .op = op,
							  .algo = algo, .stream = stream });
	return fake_allreduce_reg(be, NULL, send, recv, count, dt, op, algo, stream);
}

/* PENNY_FAKE_ASYNC_ERROR=1: a kernel "timed out" once a call ran. */
static int fake_async_error(void *be)
{
	struct fake *f = be;
	const char *e = getenv("PENNY_FAKE_ASYNC_ERROR");

	if (!e || strcmp(e, "1") || !__atomic_load_n(&f->calls, __ATOMIC_RELAXED))
		return 0;
	return fail(-ETIMEDOUT, "allreduce on rank %d timed out waiting for rank %d (fake)",
		    f->host->rank, (f->host->rank + 1) % f->host->nranks);
}

/*
 * The other collectives (penny_plugin.h: reduce_scatter ... sendrecv), each
 * from one host allgather of every rank's whole send buffer (so in place is
 * safe: all is read before recv is written), the reductions in rank order
 * (combine).  FAKE_WRONG / FAKE_SKEW: element 1 of the output is off, as
 * allreduce's.
 */
static int gathered(struct fake *f, const void *send, size_t bytes, char **all)
{
	int ret;

	*all = malloc(bytes * (size_t)f->host->nranks + 1);
	if (!*all)
		return fail(-ENOMEM, "out of memory");
	ret = f->host->allgather(f->host->ctx, send, *all, bytes);
	if (ret) {
		free(*all);
		return fail(ret, "allgather failed");
	}
	return 0;
}

static void spoil(const struct fake *f, char *out, size_t count, int es)
{
	(void)f;
	(void)out;
	(void)count;
	(void)es;
#ifdef FAKE_WRONG
	if (count > 1)
		out[es] ^= 1;
#endif
#ifdef FAKE_SKEW
	if (count > 1 && f->host->rank == f->host->nranks - 1)
		out[es] ^= 1;
#endif
}

/* recv := op over the ranks of block `block` (count elements) of all. */
static void reduce_block(const struct fake *f, const char *all, size_t stride, size_t block,
			 void *recv, size_t count, int dt, int op)
{
	int n = f->host->nranks, es = penny_data_size(dt), r;
	const char *src[1024];
	size_t i;

	for (r = 0; r < n; r++)
		src[r] = all + (size_t)r * stride + block * count * es;
	for (i = 0; i < count; i++) {
		uint64_t bits = combine(dt, op, src, n, i, n);

		memcpy((char *)recv + i * es, &bits, (size_t)es);
	}
	spoil(f, recv, count, es);
}

static int coll_args(const struct fake *f, size_t count, int dt, int op, int root)
{
	if (!penny_data_size(dt) || op < 0 || op >= PENNY_NREDOPS)
		return fail(-EINVAL, "bad type or op");
	if (f->host->nranks > 1024)
		return fail(-EINVAL, "more than 1024 ranks");
	if (root < 0 || root >= f->host->nranks)
		return fail(-EINVAL, "root %d is not a rank of %d", root, f->host->nranks);
	return count > ((size_t)1 << 40) ? fail(-EINVAL, "count %zu too large", count) : 0;
}

static int fake_reduce_scatter(void *be, const void *send, void *recv, size_t count, int dt,
			       int op, void *stream)
{
	struct fake *f = be;

	if (f->q && !in_worker)
		return fake_enqueue(f, &(struct fake_job){ .kind = 1, .send = send, .recv = recv,
							  .count = count, .dt = dt, .op = op,
							  .stream = stream });
	size_t bytes = count * (size_t)penny_data_size(dt) * (size_t)f->host->nranks;
	char *all;
	int ret = coll_args(f, count, dt, op, 0);

	if (!ret)
		ret = own_stream(stream);
	if (!ret)
		ret = gathered(f, send, bytes, &all);
	if (ret)
		return ret;
	reduce_block(f, all, bytes, (size_t)f->host->rank, recv, count, dt, op);
	free(all);
	return 0;
}

static int fake_alltoall(void *be, const void *send, void *recv, size_t count, int dt,
			 void *stream)
{
	struct fake *f = be;
	int n = f->host->nranks, es = penny_data_size(dt), ret = coll_args(f, count, dt, 0, 0), j;
	size_t block = count * (size_t)es, bytes = block * (size_t)n;
	char *all;

	(void)stream;
	if (!ret)
		ret = gathered(f, send, bytes, &all);
	if (ret)
		return ret;
	for (j = 0; j < n; j++)
		memcpy((char *)recv + (size_t)j * block,
		       all + (size_t)j * bytes + (size_t)f->host->rank * block, block);
	spoil(f, recv, count * (size_t)n, es);
	free(all);
	return 0;
}

static int fake_broadcast(void *be, const void *send, void *recv, size_t count, int dt, int root,
			  void *stream)
{
	struct fake *f = be;
	int es = penny_data_size(dt), ret = coll_args(f, count, dt, 0, root);
	size_t bytes = count * (size_t)es;
	char *all;

	(void)stream;
	/* send is read on the root only: the others pass what recv holds */
	if (!ret)
		ret = gathered(f, f->host->rank == root ? send : recv, bytes, &all);
	if (ret)
		return ret;
	memcpy(recv, all + (size_t)root * bytes, bytes);
	spoil(f, recv, count, es);
	free(all);
	return 0;
}

static int fake_reduce(void *be, const void *send, void *recv, size_t count, int dt, int op,
		       int root, void *stream)
{
	struct fake *f = be;
	size_t bytes = count * (size_t)penny_data_size(dt);
	char *all;
	int ret = coll_args(f, count, dt, op, root);

	(void)stream;
	if (!ret)
		ret = gathered(f, send, bytes, &all);
	if (ret)
		return ret;
	if (f->host->rank == root)
		reduce_block(f, all, bytes, 0, recv, count, dt, op);
	free(all);
	return 0;
}

static int fake_sendrecv(void *be, const void *send, void *recv, size_t count, int dt,
			 void *stream)
{
	struct fake *f = be;
	int n = f->host->nranks, es = penny_data_size(dt), ret = coll_args(f, count, dt, 0, 0);
	size_t bytes = count * (size_t)es;
	char *all;

	(void)stream;
	if (!ret)
		ret = gathered(f, send, bytes, &all);
	if (ret)
		return ret;
	memcpy(recv, all + (size_t)((f->host->rank + n - 1) % n) * bytes, bytes);
	spoil(f, recv, count, es);
	free(all);
	return 0;
}
#endif

#if !defined(FAKE_OLD_SIZE) && !defined(FAKE_NOXNODE)
/*
 * Across nodes with the core's proxy: the "kernel" runs in the calling
 * thread, chunk by chunk, with the protocol of the boxes (penny_plugin.h):
 * it is what the cuda plugin's xnode kernel does, on the host.
 */
struct fake_xn {
	struct penny_xnode_v1 x;
	uint64_t out_t;				/* next outbox ticket */
	uint64_t in_k[PENNY_XBOX_MAX_NODES];	/* next chunk from each node */
	uint64_t epoch;				/* LL flags: the calls' chunks so far, the
						 * same on every node */
};

static int fake_xnode_open(void *be, const struct penny_xnode_v1 *x, void **xn)
{
	struct fake_xn *n;

	(void)be;
	if (!x || x->size < sizeof(*x) || x->slots < 2 || !x->slot_bytes || x->slot_bytes % 16 ||
	    x->nnodes < 2 || x->nnodes > PENNY_XBOX_MAX_NODES || x->node < 0 ||
	    x->node >= x->nnodes || x->nranks < x->nnodes || !x->outbox || !x->inbox)
		return fail(-EINVAL, "xnode: bad box description");
	if (((const struct penny_xctl *)x->outbox)->magic != PENNY_XBOX_MAGIC)
		return fail(-EINVAL, "xnode: the outbox has no magic");
	n = calloc(1, sizeof(*n));
	if (!n)
		return fail(-ENOMEM, "out of memory");
	n->x = *x;
	*xn = n;
	return 0;
}

static void fake_xnode_close(void *be, void *xn)
{
	(void)be;
	free(xn);
}

/* A waiting loop's check: -ECANCELED when the proxy gave up, -ETIMEDOUT
 * past the timeout (every 64 spins, after a yield), else 0. */
static int xalive(const struct fake_xn *n, unsigned *spins, double *t0, int peer)
{
	const struct penny_xctl *ctl = n->x.outbox;

	if (__atomic_load_n(&ctl->abort, __ATOMIC_ACQUIRE))
		return fail(-ECANCELED, "xnode: the cross-node proxy gave up");
	if (++*spins % 64)
		return 0;
	sched_yield();
	if (!*t0)
		*t0 = now_us();
	else if ((now_us() - *t0) * 1e3 > (double)n->x.timeout_ns)
		return fail(-ETIMEDOUT, "xnode: timed out waiting for node %d", peer);
	return 0;
}

/* Wait until *w >= v; -ECANCELED when the proxy gave up, -ETIMEDOUT. */
static int xwait(const struct fake_xn *n, const uint64_t *w, uint64_t v, int peer)
{
	double t0 = 0;
	unsigned spins = 0;
	int ret = 0;

	while (!ret && __atomic_load_n(w, __ATOMIC_ACQUIRE) < v)
		ret = xalive(n, &spins, &t0, peer);
	return ret;
}

/*
 * LL lines as the cuda plugin's kernel writes them (penny_xnode_v1.ll_max):
 * per 16 bytes of data two 16-byte lines {w0, flag, w1, flag}, the flag
 * being the chunk's epoch + 1 (xcall); the tail is padded with zeros.
 */
static void ll_put(char *dst, const char *src, uint64_t len, uint32_t flag)
{
	uint64_t v;

	for (v = 0; v < (len + 15) / 16; v++) {
		uint32_t w[4] = { 0, 0, 0, 0 }, l[8];

		memcpy(w, src + v * 16, len - v * 16 < 16 ? len - v * 16 : 16);
		for (int i = 0; i < 4; i++) {
			l[2 * i] = w[i];
			l[2 * i + 1] = flag;
		}
		memcpy(dst + v * 32, l, sizeof(l));
	}
}

/* Wait for every line of a chunk to carry flag, then take the data out. */
static int ll_get(const struct fake_xn *n, char *dst, const char *src, uint64_t len, uint32_t flag,
		  int peer)
{
	uint64_t v;
	double t0 = 0;
	int ret;

	for (v = 0; v < (len + 15) / 16; v++) {
		uint32_t l[8], w[4];
		unsigned spins = 0;

		for (;;) {
			/* each {data, flag} pair in one 8-byte load, as the kernel reads
			 * it: word by word, a word read before its flag can be older
			 * than the flag (a writer such as a NIC lands 8 bytes at once,
			 * not the whole line) */
			for (int i = 0; i < 4; i++) {
				uint64_t pr = __atomic_load_n((const uint64_t *)(src + v * 32) + i,
							      __ATOMIC_ACQUIRE);

				memcpy(&l[2 * i], &pr, sizeof(pr));
			}
			if (l[1] == flag && l[3] == flag && l[5] == flag && l[7] == flag)
				break;
			ret = xalive(n, &spins, &t0, peer);
			if (ret)
				return ret;
		}
		for (int i = 0; i < 4; i++)
			w[i] = l[2 * i];
		memcpy(dst + v * 16, w, len - v * 16 < 16 ? len - v * 16 : 16);
	}
	return 0;
}

/*
 * One call on the boxes, the protocol's pieces that fake_xnode_allreduce
 * and fake_xnode_coll share.  An outbox ticket goes to the nodes of its
 * mask; the proxy counts the chunks it lands per pair of nodes, so chunk k
 * from node q sits in inbox slot k % slots of ring q where k counts q's
 * chunks to me only (in_k).  The LL flags cannot be tickets then (a ticket
 * to several nodes is a different count at each): chunk c of a call
 * carries epoch + c + 1, epoch being the chunks of the calls before (a
 * block's, the same on every node, whoever sent), so that a slot's flags
 * only grow.  A call travels as LL lines when a block is small.
 */
struct xcall {
	struct fake_xn *n;
	int ll;
	char *lin;	/* LL: the data of one chunk per node */
};

/* dst := len bytes of the n inputs src[] reduced in order (through tmp:
 * dst may be one of them, in place). */
static void reduce_chunk(char *dst, char *tmp, int dt, int op, const char *const *src, int n,
			 uint64_t len, int div)
{
	int es = penny_data_size(dt);
	uint64_t i;

	for (i = 0; i < len / (uint64_t)es; i++) {
		uint64_t bits = combine(dt, op, src, n, i, div);

		memcpy(tmp + i * es, &bits, (size_t)es);
	}
	memcpy(dst, tmp, len);
}

/* Bit q for every node q of N. */
static uint64_t every_node(int N)
{
	return N == 64 ? ~0ull : (1ull << N) - 1;
}

static int xcall_begin(struct xcall *k, struct fake_xn *n, uint64_t bytes)
{
	const struct penny_xnode_v1 *x = &n->x;

	k->n = n;
	k->ll = bytes <= x->ll_max && 2 * ((bytes + 15) & ~(uint64_t)15) <= x->slot_bytes;
	k->lin = k->ll ? malloc((size_t)x->nnodes * x->slot_bytes / 2) : NULL;
	return k->ll && !k->lin ? fail(-ENOMEM, "out of memory") : 0;
}

/* Outbox ticket t := len bytes of src, to the nodes of mask (LL: lines
 * of flag). */
static int xput(const struct xcall *k, uint64_t t, const char *src, uint64_t len, uint64_t mask,
		uint32_t flag)
{
	const struct penny_xnode_v1 *x = &k->n->x;
	uint64_t S = x->slots, C = x->slot_bytes;
	char *out = x->outbox, *data = out + penny_xbox_out_data(x->slots, C, (uint32_t)(t % S));
	struct penny_xout_slot *o = (struct penny_xout_slot *)(out + PENNY_XBOX_LINE) + t % S;
	int ret = t >= S ? xwait(k->n, &o->sent, t + 1 - S, -1) : 0;

	if (ret)
		return ret;
	if (k->ll)
		ll_put(data, src, len, flag);
	else
		memcpy(data, src, len);
	o->len = k->ll ? (len + 15) / 16 * 32 : len;
	o->mask = mask;
	__atomic_store_n(&o->ready, t + 1, __ATOMIC_RELEASE);
	return 0;
}

/* Chunk c from node q (len bytes; LL: lines of flag): *data := where it
 * is (its inbox slot, or the LL lines' data taken out), until xdone(). */
static int xget(const struct xcall *k, int q, uint64_t c, uint64_t len, uint32_t flag,
		const char **data)
{
	const struct penny_xnode_v1 *x = &k->n->x;
	uint64_t S = x->slots, C = x->slot_bytes;
	const struct penny_xin_slot *s = (const struct penny_xin_slot *)(
		(char *)x->inbox + penny_xbox_in_hdr(x->slots, q, (uint32_t)(c % S)));
	const char *src = (char *)x->inbox + penny_xbox_in_data(x->nnodes, x->slots, C, q,
								(uint32_t)(c % S));
	int ret;

	if (k->ll) {
		/* the lines' flags, not the slot's ready word */
		*data = k->lin + (size_t)q * C / 2;
		return ll_get(k->n, k->lin + (size_t)q * C / 2, src, len, flag, q);
	}
	*data = src;
	ret = xwait(k->n, &s->ready, c + 1, q);
	if (!ret && s->len != len)
		ret = fail(-EPROTO, "xnode: node %d sent %llu bytes, %llu expected", q,
			   (unsigned long long)s->len, (unsigned long long)len);
	return ret;
}

/* Chunk c from node q was read: its inbox slot is free. */
static void xdone(const struct xcall *k, int q, uint64_t c)
{
	const struct penny_xnode_v1 *x = &k->n->x;
	struct penny_xin_slot *s = (struct penny_xin_slot *)(
		(char *)x->inbox + penny_xbox_in_hdr(x->slots, q, (uint32_t)(c % x->slots)));

	__atomic_store_n(&s->done, c + 1, __ATOMIC_RELEASE);
}

/* The call's chunks are spent: my tickets, nch chunks from each node of
 * from, and nch of the epoch.  A failed call leaves the boxes
 * mid-protocol: the proxy has given up (abort) or a peer is gone, and the
 * job ends there. */
static void xcall_end(struct xcall *k, uint64_t tickets, uint64_t nch, uint64_t from)
{
	int q;

	k->n->out_t += tickets;
	for (q = 0; q < k->n->x.nnodes; q++)
		if (from >> q & 1 && q != k->n->x.node)
			k->n->in_k[q] += nch;
	k->n->epoch += nch;
	free(k->lin);
}

static int fake_xnode_allreduce(void *be, void *xnp, const void *send, void *recv, size_t count,
				int dt, int op)
{
	struct fake_xn *n = xnp;
	const struct penny_xnode_v1 *x = &n->x;
	int es = penny_data_size(dt), N = x->nnodes, q, ret = 0;
	uint64_t bytes, nch, c, C = x->slot_bytes;
	struct xcall k;
	char *tmp;

	if (!es || op < 0 || op >= PENNY_NREDOPS)
		return fail(-EINVAL, "bad type or op");
	stall_once(be);
	bytes = (uint64_t)count * (uint64_t)es;
	nch = (bytes + C - 1) / C;
	tmp = malloc(C);
	if (!tmp)
		return fail(-ENOMEM, "out of memory");
	ret = xcall_begin(&k, n, bytes);
	if (ret) {
		free(tmp);
		return ret;
	}
	for (c = 0; c < nch && !ret; c++) {
		uint64_t off = c * C, len = bytes - off < C ? bytes - off : C;
		const char *src[PENNY_XBOX_MAX_NODES];

		const uint32_t flag = (uint32_t)(n->epoch + c + 1);

		ret = xput(&k, n->out_t + c, (const char *)send + off, len,
			   every_node(N) & ~(1ull << x->node), flag);
		for (q = 0; q < N && !ret; q++)
			if (q == x->node)
				src[q] = (const char *)send + off;
			else
				ret = xget(&k, q, n->in_k[q] + c, len, flag, &src[q]);
		if (ret)
			break;
		reduce_chunk((char *)recv + off, tmp, dt, op, src, N, len, x->nranks);
		for (q = 0; q < N; q++)
			if (q != x->node)
				xdone(&k, q, n->in_k[q] + c);
	}
	free(tmp);
	xcall_end(&k, nch, nch, every_node(N));
	return ret;
}

/*
 * The other collectives across nodes (penny_xcoll_v1), on the same
 * protocol, across any number of nodes.  What node me sends (to: the
 * nodes; a ticket per chunk to all of them, or with each, a ticket per
 * chunk and node of its own block) and hears (from):
 *   allgather       its send block 0 to every other node; from all
 *   broadcast       the root its send block 0 to every other node; the
 *                   others from the root
 *   reduce          every node but the root its send block 0 to the root;
 *                   the root from all, reduced in node order
 *   reduce_scatter  its send block q to node q, each; from all, their
 *                   blocks me reduced in node order (direct: one step)
 *   alltoall        its send block q to node q, each; from all
 *   sendrecv        its send block 0 to node me + 1; from node me - 1
 * chunk by chunk: chunk c of every ticket put (blocks for nodes me + 1,
 * me + 2, ... in turn), then chunk c of every node heard from taken (in
 * place, the part of recv a peer's chunk overwrites was sent).
 */
struct xshape {
	uint64_t to, from;	/* bit q: node q */
	int each;		/* a ticket per node of to, with its block */
	const char *payload;	/* send block 0, or with each the send blocks */
	const char *mine;	/* the reduce's operand, or my block that recv keeps */
	int reduces, spread;	/* reduce in node order; recv block q := node q's */
};

static void xshape_of(struct xshape *h, const struct penny_xcoll_v1 *c, int N, int me,
		      uint64_t sstride)
{
	const uint64_t others = every_node(N) & ~(1ull << me);
	const char *send = c->send;

	memset(h, 0, sizeof(*h));
	h->to = h->from = others;
	h->payload = send;
	h->mine = send + (uint64_t)me * sstride;
	switch (c->kind) {
	case PENNY_XC_ALLGATHER:
		h->mine = send;
		h->spread = 1;
		break;
	case PENNY_XC_BROADCAST:
		h->to = me == c->root ? others : 0;
		h->from = me == c->root ? 0 : 1ull << c->root;
		break;
	case PENNY_XC_REDUCE:
		h->to = me == c->root ? 0 : 1ull << c->root;
		h->from = me == c->root ? others : 0;
		h->mine = send;
		h->reduces = 1;
		break;
	case PENNY_XC_REDUCE_SCATTER:
		h->each = h->reduces = 1;
		break;
	case PENNY_XC_ALLTOALL:
		h->each = h->spread = 1;
		break;
	default: /* sendrecv */
		h->to = 1ull << (me + 1) % N;
		h->from = 1ull << (me + N - 1) % N;
		break;
	}
}

/* Chunk ch (at off, len bytes) of every ticket of a call: the block of each
 * node of to (each), or send block 0 to all of them. */
static int xput_chunk(const struct xcall *k, const struct xshape *h, uint64_t t, uint64_t off,
		      uint64_t len, uint64_t sstride, uint32_t flag)
{
	const int N = k->n->x.nnodes, me = k->n->x.node;
	int j, ret = 0;

	if (!h->each)
		return h->to ? xput(k, t, h->payload + off, len, h->to, flag) : 0;
	for (j = 1; j < N && !ret; j++) {
		int q = (me + j) % N;

		if (h->to >> q & 1)
			ret = xput(k, t++, h->payload + (uint64_t)q * sstride + off, len, 1ull << q,
				   flag);
	}
	return ret;
}

static int fake_xnode_coll(void *be, void *xnp, const struct penny_xcoll_v1 *c)
{
	struct fake_xn *n = xnp;
	const struct penny_xnode_v1 *x = &n->x;
	int es, N = x->nnodes, me = x->node, q, ret, root, ntk = 0;
	uint64_t B, sstride, rstride, nch, ch, C = x->slot_bytes;
	const char *src[PENNY_XBOX_MAX_NODES];
	char *recv, *tmp = NULL;
	struct xshape h;
	struct xcall k;

	(void)be;
	if (!c || c->size < sizeof(*c) || c->kind < PENNY_XC_ALLGATHER ||
	    c->kind > PENNY_XC_SENDRECV)
		return fail(-EINVAL, "xnode_coll: bad call description");
	es = penny_data_size(c->dtype);
	root = c->kind == PENNY_XC_BROADCAST || c->kind == PENNY_XC_REDUCE ? c->root : 0;
	if (!es || ((c->kind == PENNY_XC_REDUCE || c->kind == PENNY_XC_REDUCE_SCATTER) &&
		    (c->op < 0 || c->op >= PENNY_NREDOPS)))
		return fail(-EINVAL, "bad type or op");
	if (root < 0 || root >= N)
		return fail(-EINVAL, "xnode_coll: root %d is not a node of %d", root, N);
#ifdef FAKE_XCOLL2
	if (c->kind >= PENNY_XC_REDUCE && N != 2)
		return fail(-EINVAL, "xnode_coll: kind %d sends to one node each: 2 nodes, not %d",
			    (int)c->kind, N);
#endif
	if (c->count > ((uint64_t)1 << 40))
		return fail(-EINVAL, "xnode_coll: count %llu too large",
			    (unsigned long long)c->count);
	B = c->count * (uint64_t)es;
	sstride = c->sstride ? c->sstride : B;
	rstride = c->rstride ? c->rstride : B;
	recv = c->recv;
	nch = (B + C - 1) / C;
	xshape_of(&h, c, N, me, sstride);
	for (q = 0; q < N; q++)
		ntk += h.each ? (int)(h.to >> q & 1) : q == 0 && h.to;
	if (h.spread && h.mine != recv + (uint64_t)me * rstride)
		memcpy(recv + (uint64_t)me * rstride, h.mine, B);
	if (c->kind == PENNY_XC_BROADCAST && me == root && c->send != recv)
		memcpy(recv, c->send, B);
	if (h.reduces && h.from) {
		tmp = malloc(C);
		if (!tmp)
			return fail(-ENOMEM, "out of memory");
	}
	ret = xcall_begin(&k, n, B);
	if (ret) {
		free(tmp);
		return ret;
	}
	for (ch = 0; ch < nch && !ret; ch++) {
		uint64_t off = ch * C, len = B - off < C ? B - off : C;
		const uint32_t flag = (uint32_t)(n->epoch + ch + 1);

		ret = xput_chunk(&k, &h, n->out_t + ch * (uint64_t)ntk, off, len, sstride, flag);
		for (q = 0; q < N && !ret; q++) {
			if (!(h.from >> q & 1))
				continue;
			ret = xget(&k, q, n->in_k[q] + ch, len, flag, &src[q]);
			/* allgather, alltoall: block q; broadcast, sendrecv: block 0 */
			if (!ret && !h.reduces)
				memcpy(recv + (h.spread ? (uint64_t)q * rstride : 0) + off, src[q], len);
		}
		if (!ret && tmp) {
			/* reduce (on the root), reduce_scatter: in node order */
			src[me] = h.mine + off;
			reduce_chunk(recv + off, tmp, c->dtype, c->op, src, N, len, x->nranks);
		}
		for (q = 0; q < N && !ret; q++)
			if (h.from >> q & 1)
				xdone(&k, q, n->in_k[q] + ch);
	}
	free(tmp);
	xcall_end(&k, nch * (uint64_t)ntk, nch, h.from);
	return ret;
}

static int fake_time_fn(void *be, struct penny_time_v2 *t2, int (*enqueue)(void *), void *arg)
{
	return fake_time2_of(be, t2, enqueue, arg, 0);
}
#endif

#ifndef FAKE_NOBW

/* "SM" copies: a loop of 8-byte loads and stores, not memcpy. */
static void sm_copy(void *dst, const void *src, size_t bytes)
{
	volatile uint64_t *d = dst;
	const uint64_t *s = src;
	size_t i;

	for (i = 0; i < bytes / 8; i++)
		d[i] = s[i];
}

/* Host buffers stand for devices; every cell is measured: the median copy. */
static int fake_bw(struct penny_bw_v1 *q)
{
	const char *env = getenv("PENNY_FAKE_GPUS");
	int n = env ? atoi(env) : 2, i, j, it, iters = q->iters > 0 ? q->iters : 10;
	size_t bytes = q->what == PENNY_BW_LATENCY ? 8 : (size_t)q->bytes;
	char *src[PENNY_BW_MAX_DEV] = { 0 }, *dst[PENNY_BW_MAX_DEV] = { 0 };
	double times[TIMES_MAX];
	int ret = fake_driver_up();

	if (ret)
		return ret;

	if (n < 1 || n > PENNY_BW_MAX_DEV)
		return fail(-ENODEV, "PENNY_FAKE_GPUS must be 1..16");
	if (bytes < 8 || bytes > (1u << 30))
		return fail(-EINVAL, "bad size");
	bytes &= ~(size_t)7;
	q->ndev = n;
	for (i = 0; i < n && !ret; i++) {
		src[i] = malloc(bytes);
		dst[i] = malloc(bytes);
		if (!src[i] || !dst[i])
			ret = fail(-ENOMEM, "out of memory");
		else
			memset(src[i], 0x5a, bytes);
		snprintf(q->name[i], sizeof(q->name[i]), "Fake GPU %d", i);
	}
	for (i = 0; i < n && !ret; i++)
		for (j = 0; j < n; j++) {
			double us;

			for (it = -1; it < iters; it++) {
				double c0 = now_us();

				if (q->engine == PENNY_BW_SM)
					sm_copy(dst[j], src[i], bytes);
				else
					memcpy(dst[j], src[i], bytes);
				if (q->bidir && i != j) {
					if (q->engine == PENNY_BW_SM)
						sm_copy(dst[i], src[j], bytes);
					else
						memcpy(dst[i], src[j], bytes);
				}
				slow_down(c0, slow_factor_of(i, 0) > 1 ? i : j);
				if (it >= 0 && it < TIMES_MAX)
					times[it] = model_gbs() > 0
						? model_us((double)bytes * (q->bidir && i != j ? 2 : 1),
							   slow_factor_of(slow_factor_of(i, 0) > 1 ? i : j, 0))
						: now_us() - c0;
			}
			/* as the plugins: the median copy, a stall of the host is no rate */
			us = median_of(times, iters < TIMES_MAX ? iters : TIMES_MAX);
			if (q->what == PENNY_BW_LATENCY)
				q->value[i * n + j] = us;
			else
				q->value[i * n + j] = (double)bytes * (q->bidir && i != j ? 2 : 1) /
						      (us * 1e-6) / 1e9;
		}
	for (i = 0; i < n; i++) {
		free(src[i]);
		free(dst[i]);
	}
	return ret;
}
#endif

#ifndef FAKE_OLD_SIZE
/* Host buffers stand for the devices' memory; the host side is mlock'ed. */
static int fake_hostbw(struct penny_hostbw_v1 *q)
{
	const char *env = getenv("PENNY_FAKE_GPUS");
	int n = env ? atoi(env) : 2, i, it, dir, iters = q->iters > 0 ? q->iters : 10;
	size_t bytes = (size_t)q->bytes;
	char *host, *dev;
	double times[TIMES_MAX];
	int ret = fake_driver_up();

	if (ret)
		return ret;

	if (n < 1 || n > PENNY_BW_MAX_DEV)
		return fail(-ENODEV, "PENNY_FAKE_GPUS must be 1..16");
	if (bytes < 8 || bytes > (1u << 30))
		return fail(-EINVAL, "bad size");
	host = malloc(bytes);
	dev = malloc(bytes);
	if (!host || !dev) {
		free(host);
		free(dev);
		return fail(-ENOMEM, "out of memory");
	}
	memset(host, 0x5a, bytes);
	memset(dev, 0xa5, bytes);
	q->pinned = !mlock(host, bytes);
	q->ndev = n;
	for (i = 0; i < n; i++) {
		snprintf(q->name[i], sizeof(q->name[i]), "Fake GPU %d", i);
		q->busid[i][0] = 0;
		for (dir = 0; dir < 2; dir++) {
			double us;

			for (it = -1; it < iters; it++) {
				double c0 = now_us();

				if (dir == 0)
					memcpy(dev, host, bytes);
				else
					memcpy(host, dev, bytes);
				slow_down(c0, i);
				if (it >= 0 && it < TIMES_MAX)
					times[it] = model_gbs() > 0 ? model_us((double)bytes, slow_factor_of(i, 0))
								    : now_us() - c0;
			}
			us = median_of(times, iters < TIMES_MAX ? iters : TIMES_MAX);
			(dir == 0 ? q->h2d : q->d2h)[i] = (double)bytes / (us * 1e-6) / 1e9;
		}
	}
	if (q->pinned)
		munlock(host, bytes);
	free(host);
	free(dev);
	return ret;
}
#endif

#ifndef FAKE_NOSYM
__attribute__((visibility("default"))) const struct penny_plugin_v1 penny_plugin_v1 = {
	.abi = FAKE_ABI,
#ifdef FAKE_OLD_SIZE
	.size = PENNY_PLUGIN_V1_MIN_SIZE,
#else
	.size = sizeof(struct penny_plugin_v1),
#endif
	.name = FAKE_NAME,
	.version = FAKE_VERSION,
	.algos = FAKE_ALGOS,
#ifdef FAKE_NOBW
	.caps = FAKE_CAP_GRAPH | FAKE_CAP_MULTINODE | FAKE_CAP_XCOLL,
#else
	.caps = FAKE_CAP_GRAPH | FAKE_CAP_MULTINODE | FAKE_CAP_XCOLL | PENNY_CAP_BW,
#endif
	.errmsg = fake_errmsg,
	.init = fake_init,
	.fini = fake_fini,
	.describe = fake_describe,
	.alloc = fake_alloc,
	.free = fake_free,
	.memcpy = fake_memcpy,
	.poison = fake_poison,
	.fill = fake_fill,
	.check = fake_check,
	.allreduce = fake_allreduce,
	.select = fake_select,
	.time = fake_time,
	.sync = fake_sync,
#ifdef FAKE_NOBW
	.bw = NULL,
#else
	.bw = fake_bw,
#endif
#ifndef FAKE_OLD_SIZE
	.allgather = fake_allgather,
	.export_dmabuf = fake_export_dmabuf,
	.hostbw = fake_hostbw,
	.time2 = fake_time2,
#ifndef FAKE_NOXNODE
	.xnode_open = fake_xnode_open,
	.xnode_allreduce = fake_xnode_allreduce,
	.xnode_close = fake_xnode_close,
	.time_fn = fake_time_fn,
#endif
	/* appended for the NCCL interposer */
	.allreduce_stream = fake_allreduce_stream,
	.driver_version = fake_driver_version,
	/* appended for the interposer's registration cache and async errors */
	.reg_buffer = fake_reg_buffer,
	.dereg_buffer = fake_dereg_buffer,
	.allreduce_reg = fake_allreduce_reg,
	.async_error = fake_async_error,
#ifndef FAKE_NORINGS
	.set_rings = fake_set_rings,
#endif
	/* appended for coll-test's other collectives */
	.reduce_scatter = fake_reduce_scatter,
	.alltoall = fake_alltoall,
	.broadcast = fake_broadcast,
	.reduce = fake_reduce,
	.sendrecv = fake_sendrecv,
	/* appended for the interposer's ncclAllGather */
	.allgather_stream = fake_allgather_stream,
#ifndef FAKE_NOXNODE
	/* appended for the other collectives across nodes */
	.xnode_coll = fake_xnode_coll,
#endif
#endif
};
#else
__attribute__((visibility("default"))) const int penny_plugin_something_else = 1;
#endif
