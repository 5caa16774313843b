/* SPDX-License-Identifier: MIT */
/*
 * penny-gpu-driver: drives the GPU plugins without the engine.  Forks one
 * process per GPU; the parent relays an allgather over socketpairs (the
 * host services of penny_plugin.h); each rank loads the plugins and runs
 *   --check   every dtype x op x count (odd ones too), in and out of place,
 *             every algorithm, registered and staged buffers: fill, poison,
 *             allreduce, check; 0 wrong values expected
 *   --perf    bfloat16 sum from -b to -e, every backend/algorithm, without
 *             and with CUDA graphs (-G), time = slowest rank
 *   --bw      the GPU-to-GPU bandwidth/latency matrix (one process)
 *   --dmabuf  GPU 0 memory exported as a dma-buf (GPUDirect RDMA registration)
 * Tables go to stdout (and --out FILE as TSV).  Exit 0: all good; 1: wrong
 * values or a failed call; 2: bad usage or a backend that cannot start.
 */
#define _GNU_SOURCE
#include "gpu/gpumem.h"
#include "base/log.h"
#include "gpu/plugin.h"
#include "base/units.h"
#include "base/util.h"
#include "../../plugins/include/penny_data.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_RANKS 16
#define MAX_BACKENDS 8

static const char *const dt_names[PENNY_NDTYPES] = {
	"int8", "uint8", "int32", "uint32", "int64", "uint64", "half", "bfloat16", "float", "double",
};
static const int dt_size[PENNY_NDTYPES] = { 1, 1, 4, 4, 8, 8, 2, 2, 4, 8 };
static const char *const op_names[PENNY_NREDOPS] = { "sum", "prod", "min", "max", "avg" };
static const char *const algo_names[PENNY_NALGOS] = { "auto", "oneshot", "twoshot", "ring", "symm",
								       "simple" };

static struct {
	int np;
	int devices[MAX_RANKS];
	int ndevices;
	char backends[256];
	char algos[128];
	int check, perf, bw, dmabuf;
	uint64_t minb, maxb;
	int factor;
	int graph;
	int iters, warmup;
	const char *out;
	const char *label;
	const char *check_counts;
	int quick;
	int order;	/* perf sizes: 0 up, 1 down, 2 random (--order) */
	double timeout;
} opt = {
	.np = 2, .backends = "cuda,nccl", .algos = "auto,oneshot,twoshot,ring,symm",
	.minb = 1024, .maxb = 1u << 30, .factor = 2, .graph = 100, .iters = 0, .warmup = -1,
	.label = "", .timeout = 900,
};

/* ---- the allgather relay: parent = hub, one socketpair per rank ---- */

struct chan {
	int fd, rank, nranks;
};

static int write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -EIO;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static int read_all(int fd, void *buf, size_t len, int timeout_ms)
{
	char *p = buf;

	while (len) {
		struct pollfd pf = { fd, POLLIN, 0 };
		int r = poll(&pf, 1, timeout_ms);
		ssize_t n;

		if (r < 0 && errno == EINTR)
			continue;
		if (r == 0)
			return -ETIMEDOUT;
		n = read(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -EPIPE;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static int pipe_allgather(void *ctx, const void *mine, void *all, size_t len)
{
	struct chan *c = ctx;
	uint64_t l = len;
	int ret;

	ret = write_all(c->fd, &l, sizeof(l));
	if (!ret)
		ret = write_all(c->fd, mine, len);
	if (!ret)
		ret = read_all(c->fd, all, len * (size_t)c->nranks, (int)(opt.timeout * 1000));
	return ret;
}

static int pipe_barrier(void *ctx)
{
	char b = 0, all[MAX_RANKS];

	return pipe_allgather(ctx, &b, all, 1);
}

static void host_log(void *ctx, int level, const char *msg)
{
	struct chan *c = ctx;

	if (level <= PENNY_LOG_INFO || getenv("PENNY_DRIVER_DEBUG"))
		fprintf(stderr, "# rank %d: %s\n", c->rank, msg);
}

/* The hub: gather one message from every rank, send the concatenation back. */
static int hub(int *fds, int n)
{
	char *buf = NULL;
	size_t cap = 0;

	for (;;) {
		uint64_t len = 0, l;
		int r, ret;

		for (r = 0; r < n; r++) {
			ret = read_all(fds[r], &l, sizeof(l), (int)(opt.timeout * 1000));
			if (ret == -EPIPE && r == 0) {
				free(buf);
				return 0; /* every rank is done (or died: waitpid says) */
			}
			if (ret) {
				fprintf(stderr, "penny-gpu-driver: rank %d %s\n", r,
					ret == -ETIMEDOUT ? "timed out in an allgather" : "went away");
				free(buf);
				return -1;
			}
			if (r && l != len) {
				fprintf(stderr, "penny-gpu-driver: allgather of %" PRIu64 " bytes on rank 0 "
						"but %" PRIu64 " on rank %d\n", len, l, r);
				free(buf);
				return -1;
			}
			len = l;
			if (len * n > cap) {
				cap = len * n;
				buf = realloc(buf, cap);
				if (!buf)
					return -1;
			}
			if (read_all(fds[r], buf + (size_t)r * len, len, (int)(opt.timeout * 1000))) {
				fprintf(stderr, "penny-gpu-driver: rank %d went away\n", r);
				free(buf);
				return -1;
			}
		}
		for (r = 0; r < n; r++)
			if (write_all(fds[r], buf, len * n)) {
				fprintf(stderr, "penny-gpu-driver: rank %d went away\n", r);
				free(buf);
				return -1;
			}
	}
}

/* ---- one rank ---- */

struct backend {
	char name[32];
	struct pn_plugin *pl;
	const struct penny_plugin_v1 *ops;
	void *be;
	int algos[PENNY_NALGOS];
	int nalgos;
};

static struct chan chan;
static struct penny_host_v1 host;
static FILE *tsv;
static int failures;

static void rank0(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void rank0(const char *fmt, ...)
{
	va_list ap;

	if (chan.rank)
		return;
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	fflush(stdout);
}

static int fail_call(struct backend *b, int ret, const char *what)
{
	const char *m = b->ops->errmsg();

	fprintf(stderr, "# rank %d: %s: %s: %s (%d)\n", chan.rank, b->name, what,
		m && *m ? m : "failed", ret);
	return ret;
}

/* Every rank's value; returns the sum (wrong counts) or max (times). */
static uint64_t sum_u64(uint64_t v)
{
	uint64_t all[MAX_RANKS], s = 0;
	int r;

	if (pipe_allgather(&chan, &v, all, sizeof(v)))
		exit(1);
	for (r = 0; r < chan.nranks; r++)
		s += all[r];
	return s;
}

static double max_double(double v)
{
	double all[MAX_RANKS], m = 0;
	int r;

	if (pipe_allgather(&chan, &v, all, sizeof(v)))
		exit(1);
	for (r = 0; r < chan.nranks; r++)
		m = all[r] > m ? all[r] : m;
	return m;
}

static int parse_algos(struct backend *b)
{
	char list[128], *save = NULL, *t;
	int a;

	b->nalgos = 0;
	if (!(b->ops->algos & ~(1u << PENNY_ALGO_AUTO))) {
		b->algos[b->nalgos++] = PENNY_ALGO_AUTO;
		return 0;
	}
	snprintf(list, sizeof(list), "%s", opt.algos);
	for (t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		for (a = 0; a < PENNY_NALGOS; a++)
			if (!strcmp(t, algo_names[a]))
				break;
		if (a == PENNY_NALGOS) {
			fprintf(stderr, "penny-gpu-driver: unknown algorithm '%s'\n", t);
			return -EINVAL;
		}
		if (b->ops->algos & (1u << a))
			b->algos[b->nalgos++] = a;
	}
	return 0;
}

/* NCCL is the baseline: its wrong values are reported, never penny's failure. */
static int is_baseline(const struct backend *b)
{
	return !strcmp(b->name, "nccl");
}

/* One checked allreduce; returns wrong elements over all ranks (or ~0 on error). */
static uint64_t check_one(struct backend *b, int algo, int dt, int op, size_t count, int inplace,
			  int staged, void *sbuf, void *rbuf, uint32_t seed)
{
	struct penny_check_v1 res = { 0, 0 };
	int esz = dt_size[dt], ret;
	char *send = sbuf, *recv = inplace ? sbuf : rbuf;

	if (staged == 2) { /* misaligned by one element, same offset on every rank */
		send += esz;
		recv += esz;
	}
	ret = b->ops->fill(b->be, send, count, dt, op, seed, chan.rank);
	if (!ret && !inplace)
		ret = b->ops->poison(b->be, recv, count * esz, 0xff);
	if (!ret)
		ret = b->ops->allreduce(b->be, send, recv, count, dt, op, algo);
	if (!ret)
		ret = b->ops->sync(b->be);
	if (!ret)
		ret = b->ops->check(b->be, recv, count, dt, op, seed, chan.nranks, &res);
	if (ret) {
		fail_call(b, ret, "checked allreduce");
		res.wrong = UINT64_MAX / 2 / MAX_RANKS; /* a failed call ends the sweep */
	}
	if (res.wrong && !ret) {
		uint64_t got = 0, want = penny_data_expected_bits(dt, op, seed, chan.nranks, res.first_bad);

		b->ops->memcpy(b->be, &got, recv + res.first_bad * esz, (size_t)esz, PENNY_D2H);
		fprintf(stderr, "# rank %d: %s %s %s %s count %zu%s%s: %" PRIu64 " wrong, first at %" PRIu64
				" (0x%" PRIx64 ", want 0x%" PRIx64 ")\n",
			chan.rank, b->name, algo_names[algo], dt_names[dt], op_names[op], count,
			inplace ? " in place" : "", staged == 1 ? " unregistered" : staged == 2 ? " misaligned" : "",
			res.wrong, res.first_bad, got, want);
	}
	return sum_u64(res.wrong);
}

static const size_t default_counts[] = { 1, 3, 7, 8, 17, 100, 255, 1000, 4097, 65537, 262147, 1048573 };

static int run_check(struct backend *b)
{
	size_t counts[64], maxc = 0;
	int ncounts = 0, a, dt, op, ip, st;
	uint64_t total_wrong = 0;
	void *sreg = NULL, *rreg = NULL, *splain = NULL, *rplain = NULL;
	uint32_t seed = 11;

	if (opt.check_counts) {
		char list[512], *save = NULL, *t;

		snprintf(list, sizeof(list), "%s", opt.check_counts);
		for (t = strtok_r(list, ",", &save); t && ncounts < 64; t = strtok_r(NULL, ",", &save))
			counts[ncounts++] = strtoull(t, NULL, 0);
	} else {
		for (size_t i = 0; i < PN_ARRAY_SIZE(default_counts); i++)
			counts[ncounts++] = default_counts[i];
	}
	for (int i = 0; i < ncounts; i++)
		maxc = counts[i] > maxc ? counts[i] : maxc;
	size_t bytes = maxc * 8 + 64;

	if (b->ops->alloc(b->be, bytes, PENNY_MEM_REGISTERED, &sreg) ||
	    b->ops->alloc(b->be, bytes, PENNY_MEM_REGISTERED, &rreg) ||
	    b->ops->alloc(b->be, bytes, 0, &splain) || b->ops->alloc(b->be, bytes, 0, &rplain))
		return fail_call(b, -ENOMEM, "alloc");
	for (a = 0; a < b->nalgos; a++) {
		uint64_t wrong_algo = 0, runs_algo = 0;
		double t0 = pn_now();

		for (dt = 0; dt < PENNY_NDTYPES; dt++)
			for (op = 0; op < PENNY_NREDOPS; op++)
				for (int c = 0; c < ncounts; c++)
					for (ip = 0; ip < 2; ip++)
						for (st = 0; st < 3; st++) {
							/* staged paths: a few counts are enough */
							if (st && (c % 3 != 1 || (opt.quick && dt % 3)))
								continue;
							/* symmetric memory needs registered buffers */
							if (st == 1 && b->algos[a] == PENNY_ALGO_SYMMETRIC)
								continue;
							if (opt.quick && c % 2 && !st)
								continue;
							uint64_t w = check_one(b, b->algos[a], dt, op, counts[c], ip, st,
									       st == 1 ? splain : sreg,
									       st == 1 ? rplain : rreg, seed++);

							wrong_algo += w;
							runs_algo++;
							if (w >= UINT64_MAX / 2 / MAX_RANKS)
								goto failed;
						}
		rank0("check %-6s %-8s %2d ranks: %6" PRIu64 " allreduces (10 types x 5 ops x %d counts, "
		      "in/out of place, registered/%smisaligned), %" PRIu64 " wrong values "
		      "(%.1f s)\n", b->name, algo_names[b->algos[a]], chan.nranks, runs_algo, ncounts,
		      b->algos[a] == PENNY_ALGO_SYMMETRIC ? "" : "unregistered/", wrong_algo,
		      pn_now() - t0);
		if (tsv && !chan.rank)
			fprintf(tsv, "check\t%s\t%s\t%s\t%d\t%" PRIu64 "\t%" PRIu64 "\n", opt.label, b->name,
				algo_names[b->algos[a]], chan.nranks, runs_algo, wrong_algo);
		total_wrong += wrong_algo;
		continue;
failed:
		rank0("check %-6s %-8s %2d ranks: a call failed after %" PRIu64 " allreduces; stopped\n",
		      b->name, algo_names[b->algos[a]], chan.nranks, runs_algo);
		total_wrong += 1;
		break;
	}
	b->ops->free(b->be, sreg);
	b->ops->free(b->be, rreg);
	b->ops->free(b->be, splain);
	b->ops->free(b->be, rplain);
	if (total_wrong && is_baseline(b))
		rank0("# %s: %" PRIu64 " wrong values are NCCL's own results (the baseline), reported, "
		      "not counted as penny's failures\n", b->name, total_wrong);
	else if (total_wrong)
		failures++;
	return 0;
}

struct perf_row {
	double usec[MAX_BACKENDS][PENNY_NALGOS][2];
};

static int iters_for(uint64_t bytes)
{
	if (opt.iters > 0)
		return opt.iters;
	if (bytes <= (1u << 20))
		return 1000;
	if (bytes <= (64u << 20))
		return 200;
	return 20;
}

static int run_perf(struct backend *bs, int nb)
{
	const int dt = PENNY_BFLOAT16, op = PENNY_SUM, n = chan.nranks;
	void *send[MAX_BACKENDS], *recv[MAX_BACKENDS];
	uint64_t bytes, sizes[64];
	int i, a, g, ret = 0, nsizes = 0, si;
	uint32_t rnd = 12345;

	for (i = 0; i < nb; i++)
		if (bs[i].ops->alloc(bs[i].be, opt.maxb, PENNY_MEM_REGISTERED, &send[i]) ||
		    bs[i].ops->alloc(bs[i].be, opt.maxb, PENNY_MEM_REGISTERED, &recv[i]))
			return fail_call(&bs[i], -ENOMEM, "alloc");
	/* sizes in the order asked: a stale flag of a larger call must not pass a smaller one */
	for (bytes = opt.minb; bytes <= opt.maxb && nsizes < 64; bytes *= (uint64_t)opt.factor)
		sizes[nsizes++] = bytes;
	for (si = 0; si < nsizes / 2 && opt.order == 1; si++) {
		uint64_t x = sizes[si];

		sizes[si] = sizes[nsizes - 1 - si];
		sizes[nsizes - 1 - si] = x;
	}
	for (si = nsizes - 1; si > 0 && opt.order == 2; si--) {
		int k;
		uint64_t x;

		rnd = rnd * 1103515245u + 12345u; /* the same order on every rank */
		k = (int)((rnd >> 8) % (uint32_t)(si + 1));
		x = sizes[si];
		sizes[si] = sizes[k];
		sizes[k] = x;
	}
	rank0("\n# bfloat16 sum, %d ranks, out of place, time = slowest rank, busbw = bytes/time x "
	      "2(n-1)/n; G = CUDA graph of %d calls; sizes %s; host_us = the calling thread's time "
	      "per call (largest rank), blocks = a launch held the caller (host_us >= 0.8 x time)\n",
	      n, opt.graph, opt.order == 1 ? "largest first" : opt.order == 2 ? "in random order" : "growing");
	rank0("%12s %-6s %-8s %-8s %10s %10s %10s %9s %s\n", "bytes", "backend", "algo", "graph",
	      "time_us", "algbw", "busbw", "host_us", "");
	for (si = 0; si < nsizes && !ret; si++) {
		size_t count;

		bytes = sizes[si];
		count = bytes / 2;
		int iters = iters_for(bytes);

		for (i = 0; i < nb && !ret; i++) {
			/* correct before timed: fill, run once, check */
			struct backend *b = &bs[i];

			for (a = 0; a < b->nalgos && !ret; a++) {
				struct penny_check_v1 res = { 0, 0 };
				int algo = b->algos[a], chosen;

				ret = b->ops->fill(b->be, send[i], count, dt, op, 5, chan.rank);
				if (!ret)
					ret = b->ops->poison(b->be, recv[i], bytes, 0xff);
				if (!ret)
					ret = b->ops->allreduce(b->be, send[i], recv[i], count, dt, op, algo);
				if (!ret)
					ret = b->ops->sync(b->be);
				if (!ret)
					ret = b->ops->check(b->be, recv[i], count, dt, op, 5, n, &res);
				if (ret) {
					fail_call(b, ret, "allreduce before timing");
					break;
				}
				uint64_t wrong = sum_u64(res.wrong);

				if (wrong) {
					rank0("# %s %s %" PRIu64 " bytes: %" PRIu64 " wrong values\n", b->name,
					      algo_names[algo], bytes, wrong);
					failures++;
				}
				chosen = b->ops->select ? b->ops->select(b->be, count, dt, op, algo) : algo;
				for (g = 0; g < 2 && !ret; g++) {
					struct penny_time_v2 t2;
					struct penny_time_v1 t;
					double us, algbw, host_us = -1;

					memset(&t, 0, sizeof(t));
					t.send = send[i];
					t.recv = recv[i];
					t.count = count;
					t.dtype = dt;
					t.op = op;
					t.algo = algo;
					t.iters = iters;
					t.warmup = opt.warmup >= 0 ? opt.warmup : iters / 10 + 2;
					t.graph = g ? (opt.graph < iters ? opt.graph : iters) : 0;
					if (pn_plugin_covers(b->pl, offsetof(struct penny_plugin_v1, time2)) &&
					    b->ops->time2) {
						memset(&t2, 0, sizeof(t2));
						t2.size = sizeof(t2);
						t2.t = t;
						ret = b->ops->time2(b->be, &t2);
						t = t2.t;
						host_us = t2.host_usec;
					} else {
						ret = b->ops->time(b->be, &t);
					}
					if (ret) {
						fail_call(b, ret, "time");
						break;
					}
					us = max_double(t.usec);
					host_us = host_us < 0 ? -1 : max_double(host_us);
					algbw = (double)bytes / (us * 1e-6) / 1e9;
					char an[24];

					snprintf(an, sizeof(an), "%s%s%s", algo_names[algo],
						 algo == PENNY_ALGO_AUTO && chosen > 0 ? ":" : "",
						 algo == PENNY_ALGO_AUTO && chosen > 0 ? algo_names[chosen] : "");
					/* send is unchanged: after back-to-back (graph) calls recv must
					 * still hold the exact result */
					ret = b->ops->check(b->be, recv[i], count, dt, op, 5, n, &res);
					if (ret) {
						fail_call(b, ret, "check after timing");
						break;
					}
					wrong = sum_u64(res.wrong);
					if (wrong) {
						rank0("# %s %s %" PRIu64 " bytes%s: %" PRIu64 " wrong values after the "
						      "timed calls\n", b->name, algo_names[algo], bytes,
						      g ? " (graph)" : "", wrong);
						failures++;
					}
					rank0("%12" PRIu64 " %-6s %-8s %-8s %10.2f %10.2f %10.2f %9.2f %s\n", bytes,
					      b->name, an, g ? "G" : "-", us, algbw, algbw * 2.0 * (n - 1) / n,
					      host_us, host_us >= 0.8 * us ? "blocks" : "");
					if (tsv && !chan.rank)
						fprintf(tsv, "perf\t%s\t%d\t%" PRIu64 "\t%s\t%s\t%d\t%.3f\t%.3f\t%.3f\t%.3f\n",
							opt.label, n, bytes, b->name, an, g, us, algbw,
							algbw * 2.0 * (n - 1) / n, host_us);
				}
			}
		}
		if (tsv && !chan.rank)
			fflush(tsv);
	}
	for (i = 0; i < nb; i++) {
		bs[i].ops->free(bs[i].be, send[i]);
		bs[i].ops->free(bs[i].be, recv[i]);
	}
	return ret;
}

static int rank_main(int rank, int fd)
{
	struct backend bs[MAX_BACKENDS];
	char list[256], *save = NULL, *t;
	int nb = 0, i, ret = 0, started;

	chan.fd = fd;
	chan.rank = rank;
	chan.nranks = opt.np;
	memset(&host, 0, sizeof(host));
	host.size = sizeof(host);
	host.rank = rank;
	host.nranks = opt.np;
	host.local_rank = rank;
	host.local_size = opt.np;
	host.node = 0;
	host.nnodes = 1;
	host.ctx = &chan;
	host.allgather = pipe_allgather;
	host.barrier = pipe_barrier;
	host.log = host_log;
	if (opt.out && rank == 0) {
		tsv = fopen(opt.out, "a");
		if (!tsv) {
			fprintf(stderr, "penny-gpu-driver: cannot open '%s': %s\n", opt.out, strerror(errno));
			return 2;
		}
	}
	memset(bs, 0, sizeof(bs));
	snprintf(list, sizeof(list), "%s", opt.backends);
	for (t = strtok_r(list, ",", &save); t && nb < MAX_BACKENDS; t = strtok_r(NULL, ",", &save)) {
		struct backend *b = &bs[nb];
		int dev = rank < opt.ndevices ? opt.devices[rank] : rank;

		snprintf(b->name, sizeof(b->name), "%s", t);
		ret = pn_plugin_load(t, &b->pl);
		started = !ret;
		if (!ret) {
			b->ops = b->pl->ops;
			ret = b->ops->init(&host, dev, &b->be);
			if (ret)
				pn_plugin_err(b->pl, ret, "init");
			started = !ret;
		}
		/* every rank learns whether every rank started this backend; the first
		 * rank that did not says why, in one line */
		{
			uint64_t all[MAX_RANKS], v = (uint64_t)started;
			int first = -1;

			if (pipe_allgather(&chan, &v, all, sizeof(v)))
				return 2;
			for (int r = 0; r < opt.np && first < 0; r++)
				if (!all[r])
					first = r;
			if (first >= 0) {
				if (first == rank)
					fprintf(stderr, "penny-gpu-driver: %s\n", pn_errmsg(ret));
				return 2;
			}
		}
		ret = parse_algos(b);
		if (ret)
			return 2;
		rank0("# %s: %s\n", b->name, b->ops->describe ? b->ops->describe(b->be) : "");
		nb++;
	}
	for (i = 0; i < nb && opt.check && !ret; i++)
		ret = run_check(&bs[i]);
	if (opt.perf && !ret)
		ret = run_perf(bs, nb);
	for (i = 0; i < nb; i++) {
		if (bs[i].be)
			bs[i].ops->fini(bs[i].be);
		pn_plugin_unload(bs[i].pl);
	}
	if (tsv)
		fclose(tsv);
	return ret ? 1 : failures ? 1 : 0;
}

/* --dmabuf: the cuda plugin's dma-buf export (GPUDirect RDMA registration
 * needs it) on GPU 0, 64 MiB at an offset: the fd must be a dma-buf. */
static int run_dmabuf(void)
{
	struct pn_gpumem *m;
	char path[64], link[256] = "";
	uint64_t off = 0;
	int fd = -1, ret;
	ssize_t n;

	ret = pn_gpumem_open(&m, "cuda", 0, 64u << 20);
	if (!ret)
		ret = pn_gpumem_export(m, &fd, &off);
	if (ret) {
		printf("dmabuf: %s\n", pn_errmsg(ret));
		if (m)
			pn_gpumem_close(m);
		return 1;
	}
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	n = readlink(path, link, sizeof(link) - 1);
	link[n > 0 ? n : 0] = 0;
	printf("dmabuf: %s: 64 MiB at %p exported as fd %d -> %s, offset %llu: %s\n",
	       pn_gpumem_describe(m), pn_gpumem_ptr(m), fd, link, (unsigned long long)off,
	       strstr(link, "dmabuf") ? "a dma-buf" : "NOT a dma-buf");
	fflush(stdout);
	ret = strstr(link, "dmabuf") ? 0 : 1;
	close(fd);
	pn_gpumem_close(m);
	return ret;
}

static int run_bw(void)
{
	static const struct {
		int engine, bidir, what;
		const char *title;
	} kinds[] = {
		{ PENNY_BW_CE, 0, PENNY_BW_BANDWIDTH, "copy engine, unidirectional, GB/s" },
		{ PENNY_BW_CE, 1, PENNY_BW_BANDWIDTH, "copy engine, bidirectional (sum), GB/s" },
		{ PENNY_BW_SM, 0, PENNY_BW_BANDWIDTH, "SM copy (stores to the peer), unidirectional, GB/s" },
		{ PENNY_BW_SM, 1, PENNY_BW_BANDWIDTH, "SM copy, bidirectional (sum), GB/s" },
		{ PENNY_BW_CE, 0, PENNY_BW_LATENCY, "copy engine 4-byte copy latency, us" },
		{ PENNY_BW_SM, 0, PENNY_BW_LATENCY, "SM dependent load latency, us" },
	};
	struct pn_plugin *p;
	struct penny_bw_v1 *q = calloc(1, sizeof(*q));
	size_t k;
	int i, j, ret = pn_plugin_load("cuda", &p);

	if (ret || !q) {
		fprintf(stderr, "penny-gpu-driver: %s\n", pn_errmsg(ret));
		free(q);
		return 2;
	}
	for (k = 0; k < PN_ARRAY_SIZE(kinds); k++) {
		memset(q, 0, sizeof(*q));
		q->bytes = 256u << 20;
		q->iters = kinds[k].what == PENNY_BW_LATENCY ? 100 : 10;
		q->engine = kinds[k].engine;
		q->bidir = kinds[k].bidir;
		q->what = kinds[k].what;
		ret = p->ops->bw(q);
		if (ret) {
			fprintf(stderr, "penny-gpu-driver: bw: %s\n", p->ops->errmsg());
			break;
		}
		printf("\n# %s (%d x %s)\n%8s", kinds[k].title, q->ndev, q->name[0], "src\\dst");
		for (j = 0; j < q->ndev; j++)
			printf(" %8d", j);
		printf("\n");
		for (i = 0; i < q->ndev; i++) {
			printf("%8d", i);
			for (j = 0; j < q->ndev; j++)
				printf(" %8.2f", q->value[i * q->ndev + j]);
			printf("\n");
		}
	}
	free(q);
	pn_plugin_unload(p);
	return ret ? 1 : 0;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: penny-gpu-driver [--np N] [--devices 0,1,..] [--backend cuda,nccl]\n"
		   "       [--algos auto,oneshot,twoshot,ring,symm,simple] [--check [--counts 1,3,..] [--quick]]\n"
		   "       [--perf [-b 1K] [-e 1G] [-f 2] [-G 100] [-n ITERS] [-w WARMUP]\n"
		   "        [--order up|down|random]] [--bw]\n"
		   "       [--out FILE.tsv] [--label TEXT] [--timeout SEC]\n");
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "np", 1, 0, 'N' },	  { "devices", 1, 0, 'D' }, { "backend", 1, 0, 'B' },
		{ "algos", 1, 0, 'A' },	  { "check", 0, 0, 'C' },   { "perf", 0, 0, 'P' },
		{ "bw", 0, 0, 'W' },	  { "out", 1, 0, 'o' },	    { "label", 1, 0, 'l' },
		{ "counts", 1, 0, 'c' },  { "quick", 0, 0, 'q' },   { "timeout", 1, 0, 'T' },
		{ "dmabuf", 0, 0, 'M' },  { "help", 0, 0, 'h' },   { "order", 1, 0, 'O' },
		{ 0, 0, 0, 0 },
	};
	int c, r, fds[MAX_RANKS], status, worst = 0;
	pid_t pids[MAX_RANKS];

	/* the library reads no environment: the plugin path, as penny's does */
	if (pn_plugin_set_path(getenv("PENNY_PLUGIN_PATH")))
		return 2;
	while ((c = getopt_long(argc, argv, "b:e:f:G:n:w:h", lo, NULL)) != -1) {
		switch (c) {
		case 'N':
			opt.np = atoi(optarg);
			break;
		case 'D': {
			char *s = optarg, *end;

			for (opt.ndevices = 0; *s && opt.ndevices < MAX_RANKS; s = *end ? end + 1 : end) {
				opt.devices[opt.ndevices++] = (int)strtol(s, &end, 10);
				if (end == s)
					break;
			}
			break;
		}
		case 'B':
			snprintf(opt.backends, sizeof(opt.backends), "%s", optarg);
			break;
		case 'A':
			snprintf(opt.algos, sizeof(opt.algos), "%s", optarg);
			break;
		case 'C':
			opt.check = 1;
			break;
		case 'P':
			opt.perf = 1;
			break;
		case 'W':
			opt.bw = 1;
			break;
		case 'M':
			opt.dmabuf = 1;
			break;
		case 'O':
			if (!strcmp(optarg, "up"))
				opt.order = 0;
			else if (!strcmp(optarg, "down"))
				opt.order = 1;
			else if (!strcmp(optarg, "random"))
				opt.order = 2;
			else {
				fprintf(stderr, "penny-gpu-driver: --order up, down or random, not '%s'\n",
					optarg);
				return 2;
			}
			break;
		case 'o':
			opt.out = optarg;
			break;
		case 'l':
			opt.label = optarg;
			break;
		case 'c':
			opt.check_counts = optarg;
			break;
		case 'q':
			opt.quick = 1;
			break;
		case 'T':
			opt.timeout = atof(optarg);
			break;
		case 'b':
		case 'e':
			if (pn_parse_size(optarg, c == 'b' ? &opt.minb : &opt.maxb)) {
				fprintf(stderr, "penny-gpu-driver: bad size '%s'\n", optarg);
				return 2;
			}
			break;
		case 'f':
			opt.factor = atoi(optarg);
			break;
		case 'G':
			opt.graph = atoi(optarg);
			break;
		case 'n':
			opt.iters = atoi(optarg);
			break;
		case 'w':
			opt.warmup = atoi(optarg);
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc || opt.np < 1 || opt.np > MAX_RANKS || opt.factor < 2 || opt.minb < 2 ||
	    opt.maxb < opt.minb || opt.graph < 1 || opt.timeout <= 0) {
		usage(stderr);
		return 2;
	}
	/* never NVLink SHARP / multicast on shared machines */
	setenv("NCCL_NVLS_ENABLE", "0", 1);
	setenv("NVSHMEM_DISABLE_NVLS", "1", 1);
	if (opt.bw)
		worst = run_bw();
	if (opt.dmabuf)
		worst = PN_MAX(worst, run_dmabuf());
	if (!opt.check && !opt.perf)
		return worst;
	fflush(NULL);
	for (r = 0; r < opt.np; r++) {
		int sv[2];

		if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv)) {
			perror("socketpair");
			return 2;
		}
		pids[r] = fork();
		if (pids[r] < 0) {
			perror("fork");
			return 2;
		}
		if (pids[r] == 0) {
			for (int k = 0; k < r; k++)
				close(fds[k]);
			close(sv[0]);
			_exit(rank_main(r, sv[1]));
		}
		close(sv[1]);
		fds[r] = sv[0];
	}
	if (hub(fds, opt.np)) {
		for (r = 0; r < opt.np; r++)
			kill(pids[r], SIGKILL);
		worst = 1;
	}
	for (r = 0; r < opt.np; r++) {
		close(fds[r]);
		if (waitpid(pids[r], &status, 0) < 0)
			continue;
		if (WIFEXITED(status)) {
			/* 2: could not run; anything else that is not 0 failed (1) */
			int st = WEXITSTATUS(status) > 2 ? 1 : WEXITSTATUS(status);

			if (st > worst)
				worst = st;
		} else {
			fprintf(stderr, "penny-gpu-driver: rank %d died (signal %d)\n", r, WTERMSIG(status));
			worst = worst > 1 ? worst : 1;
		}
	}
	return worst;
}
