/* SPDX-License-Identifier: MIT */
/*
 * The allreduce sweep (sweep.h): the sizes, the loop over series and sizes
 * that drives a backend's ops, the statistics over the ranks, busbw, the
 * best algorithm per size and the CSV rows.  The backends are sweep_host.c
 * and sweep_gpu.c.
 */
#define _GNU_SOURCE
#include "harness/sweep.h"

#include "engine/boot.h"
#include "engine/comm.h"
#include "engine/mem.h"
#include "base/plot.h"
#include "base/log.h"
#include "base/stop.h"
#include "base/timing.h"
#include "base/util.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int pn_sweep_sizes(uint64_t min, uint64_t max, uint64_t step, double factor, size_t es,
		   uint64_t **out, size_t *n)
{
	uint64_t *v = NULL, b;
	size_t cap = 0, k = 0;

	for (b = min; b <= max;) {
		uint64_t nb;

		if (k == PN_SWEEP_MAX_SIZES) {
			free(v);
			return -E2BIG;
		}
		if (k == cap) {
			uint64_t *nv = realloc(v, (cap = cap ? 2 * cap : 32) * sizeof(*v));

			if (!nv) {
				free(v);
				return -ENOMEM;
			}
			v = nv;
		}
		v[k++] = b / es * es;
		if (factor > 1)
			nb = (uint64_t)((double)b * factor);
		else
			nb = b + step;
		/* a factor that rounds back to b (-b 0, -b 1 -f 1.5) still steps */
		if (nb <= b)
			nb = b + 1;
		b = nb;
	}
	*out = v;
	*n = k;
	return 0;
}

void pn_sweep_distinct(enum pn_coll_kind k, size_t es, int nranks, uint64_t *v, size_t *n)
{
	size_t i, m = 0;

	for (i = 0; i < *n; i++) {
		size_t count = pn_coll_count_for_bytes(k, (size_t)v[i], es, nranks);
		uint64_t b = (uint64_t)pn_coll_algbw_bytes(k, count, es, nranks);

		if (!m || v[m - 1] != b)
			v[m++] = b;
	}
	*n = m;
}

double pn_sweep_busbw(double algbw, int nranks)
{
	return algbw * (nranks > 1 ? 2.0 * (nranks - 1) / nranks : 1.0);
}

double pn_sweep_kind_busbw(enum pn_coll_kind k, double algbw, int nranks)
{
	return k == PN_COLL_ALLREDUCE ? pn_sweep_busbw(algbw, nranks)
				      : algbw * pn_coll_bus_factor(k, nranks);
}

void pn_sweep_init(struct pn_sweep *s)
{
	s->rows = NULL;
	s->nrows = s->caprows = 0;
	s->time_of = PN_SWEEP_TIME_MAX;
	s->blocks = PN_TIMING_BLOCKS;
	s->kind = PN_COLL_ALLREDUCE;
	s->root = 0;
	s->agg = 1;
	s->wrong = 0;
	s->worst_avg = INFINITY;
	s->sink_err = 0;
}

void pn_sweep_release(struct pn_sweep *s)
{
	free(s->rows);
	pn_sweep_init(s);
}

double pn_sweep_time_over(const double *t, size_t stride, int n, enum pn_sweep_time time_of)
{
	double v = time_of == PN_SWEEP_TIME_MAX || time_of == PN_SWEEP_TIME_MEAN ? 0 : t[0];
	int r;

	for (r = 0; r < n && time_of != PN_SWEEP_TIME_RANK0; r++) {
		double x = *(const double *)((const char *)t + (size_t)r * stride);

		if (time_of == PN_SWEEP_TIME_MAX)
			v = PN_MAX(v, x);
		else if (time_of == PN_SWEEP_TIME_MIN)
			v = PN_MIN(v, x);
		else
			v += x / n;
	}
	return v;
}

void pn_sweep_blocks_over(const double *t, size_t stride, int nranks, int nblocks,
			  enum pn_sweep_time time_of, double *per_block, struct pn_timing_stat *st)
{
	int b;

	for (b = 0; b < nblocks; b++)
		per_block[b] = pn_sweep_time_over(t + b, stride, nranks, time_of);
	pn_timing_stat(per_block, (size_t)(nblocks > 0 ? nblocks : 0), st);
}

int pn_sweep_blocks(const struct pn_sweep *s)
{
	return s->blocks > 0 ? PN_MIN(s->blocks, PN_TIMING_MAX_BLOCKS) : PN_TIMING_BLOCKS;
}

int pn_sweep_calls(const struct pn_sweep *s, size_t bytes)
{
	return pn_timing_calls(bytes, s->iters, pn_sweep_blocks(s)) * (s->agg > 1 ? s->agg : 1);
}

/* A sink error some rank sent (sink_err words of the records, stride rec
 * words): into s->sink_err on every rank, and returned with its message. */
static int sink_seen(struct pn_sweep *s, const uint64_t *all, size_t rec)
{
	int r;

	for (r = 0; r < s->comm->nranks && !s->sink_err; r++)
		s->sink_err = (int)(int64_t)all[(size_t)r * rec];
	if (!s->sink_err)
		return 0;
	/* the presenting rank says why (its output cannot be written) */
	return pn_err(s->sink_err, "the presenting rank's output failed: %s",
		      strerror(-s->sink_err));
}

/* The presenting rank's sink error, to every rank (one word each). */
static int sink_agree(struct pn_sweep *s)
{
	uint64_t mine = (uint64_t)(int64_t)s->sink_err;
	uint64_t *all = calloc((size_t)s->comm->nranks, 8);
	int ret;

	if (!all)
		return pn_err(-ENOMEM, "out of memory");
	ret = pn_boot_allgather(s->comm->boot, &mine, all, 8);
	if (!ret)
		ret = sink_seen(s, all, 1);
	free(all);
	return ret;
}

/*
 * Over the ranks: each block's time as time_of says (into the row's
 * per_block, nb of them), the median, fastest and slowest block, the wrong
 * values summed, the ranks whose output digest differs from rank 0's, and
 * the presenting rank's sink error (sink_seen).  Every rank sends {wrong,
 * digest, sink error, its nb block times}.
 */
static int over_ranks(struct pn_sweep *s, int nb, double *per_block, struct pn_sweep_row *rw,
		      int k)
{
	struct pn_comm *c = s->comm;
	size_t rec = 3 + (size_t)nb; /* 8-byte words a rank */
	uint64_t *mine = calloc(rec, 8), *all = calloc(rec * (size_t)c->nranks, 8);
	struct pn_timing_stat st;
	int r, ret;

	if (!mine || !all) {
		free(mine);
		free(all);
		return pn_err(-ENOMEM, "out of memory");
	}
	mine[0] = rw->wrong[k];
	mine[1] = rw->differ[k];
	mine[2] = (uint64_t)(int64_t)s->sink_err;
	memcpy(mine + 3, per_block, (size_t)nb * sizeof(double));
	ret = pn_boot_allgather(c->boot, mine, all, rec * 8);
	if (!ret)
		ret = sink_seen(s, all + 2, rec);
	if (!ret) {
		pn_sweep_blocks_over((const double *)(all + 3), rec * 8, c->nranks, nb, s->time_of,
				     per_block, &st);
		rw->time_us[k] = st.median;
		rw->time_min_us[k] = st.min;
		rw->time_max_us[k] = st.max;
		rw->wrong[k] = 0;
		rw->differ[k] = 0;
		for (r = 0; r < c->nranks; r++) {
			rw->wrong[k] += all[r * rec];
			rw->differ[k] += all[r * rec + 1] != all[1];
		}
	}
	free(mine);
	free(all);
	return ret;
}

/* A copy of the row in s->rows (without its block times: they go). */
static int keep_row(struct pn_sweep *s, const struct pn_sweep_row *rw)
{
	if (!s->keep)
		return 0;
	if (s->nrows == s->caprows) {
		size_t cap = s->caprows ? 2 * s->caprows : 64;
		struct pn_sweep_row *nr = realloc(s->rows, sizeof(*nr) * cap);

		if (!nr)
			return pn_err(-ENOMEM, "out of memory");
		s->rows = nr;
		s->caprows = cap;
	}
	s->rows[s->nrows] = *rw;
	s->rows[s->nrows].block_us[0] = s->rows[s->nrows].block_us[1] = NULL;
	s->nrows++;
	return 0;
}

/* One size of a series, out of place and in place, over every rank (each
 * block's time over the ranks into blk[k * blocks + b]). */
static int one_size(struct pn_sweep *s, struct pn_sweep_backend *be, int algo, size_t i,
		    struct pn_sweep_row *rw, double *blk)
{
	const char *name = be->ops->algo_name(algo);
	size_t es = pn_dtype_size(s->dtype);
	int k, ret;

	memset(rw, 0, sizeof(*rw));
	snprintf(rw->backend, sizeof(rw->backend), "%s", be->name);
	snprintf(rw->algo, sizeof(rw->algo), "%s", name);
	rw->host_algo = rw->host_algo_ip = -2;
	rw->dtype = s->dtype;
	rw->op = s->op;
	/* nccl-tests' size: what the count moves (a whole number of elements
	 * per rank where the size is the whole buffer) */
	rw->count = pn_coll_count_for_bytes(s->kind, s->sizes[i], es, s->comm->nranks);
	rw->bytes = (size_t)pn_coll_algbw_bytes(s->kind, rw->count, es, s->comm->nranks);
	rw->calls = pn_sweep_calls(s, rw->bytes);
	rw->blocks = rw->calls ? pn_sweep_blocks(s) : 0;
	ret = be->ops->pick(be, s, algo, rw);
	for (k = 0; !ret && k < 2; k++) {
		struct pn_sweep_bad bad = { .rank = s->comm->rank, .ip = k, .backend = be->name,
					    .algo = name, .bytes = rw->bytes };
		double *mine = blk + (size_t)k * (size_t)pn_sweep_blocks(s);

		memset(mine, 0, (size_t)pn_sweep_blocks(s) * sizeof(*mine));
		ret = be->ops->run(be, s, algo, rw->bytes, k,
				   s->seed + 2 * i * 7919 + (uint64_t)k * 104729, mine, &bad);
		if (ret)
			break;
		if (bad.wrong && s->sink.bad)
			s->sink.bad(s->sink.arg, &bad);
		rw->wrong[k] = bad.wrong;
		rw->differ[k] = s->check ? bad.digest : 0;
		ret = over_ranks(s, rw->blocks, mine, rw, k);
		rw->block_us[k] = mine;
		rw->algbw[k] = rw->time_us[k] > 0 ? (double)rw->bytes / rw->time_us[k] / 1e3 : 0;
		rw->busbw[k] = pn_sweep_kind_busbw(s->kind, rw->algbw[k], s->comm->nranks);
	}
	return ret;
}

static int series(struct pn_sweep *s, struct pn_sweep_backend *be, int algo)
{
	struct pn_sweep_series sr = { .backend = be->name, .algo = be->ops->algo_name(algo) };
	double sum = 0, *blk = calloc(2 * (size_t)pn_sweep_blocks(s), sizeof(double));
	size_t i;
	int ret = 0;

	if (!blk)
		return pn_err(-ENOMEM, "out of memory");
	if (s->sink.begin && pn_stop_hold(-1)) {
		s->sink.begin(s->sink.arg, sr.backend, sr.algo);
		pn_stop_release(0);
	}
	for (i = 0; i < s->nsizes; i++) {
		struct pn_sweep_row rw;

		ret = one_size(s, be, algo, i, &rw, blk);
		s->wrong += rw.wrong[0] + rw.wrong[1];
		sr.wrong += rw.wrong[0] + rw.wrong[1];
		s->differ += rw.differ[0] + rw.differ[1];
		sr.differ += rw.differ[0] + rw.differ[1];
		if (!ret)
			ret = keep_row(s, &rw);
		/* a row that could not be presented: every rank stops with the
		 * next size's times (sink_seen), or below after the last one */
		if (!ret && s->sink.row && !s->sink_err && pn_stop_hold(-1)) {
			s->sink_err = s->sink.row(s->sink.arg, &rw, i, s->nsizes);
			pn_stop_release(0);
		}
		if (ret)
			break;
		sum += rw.busbw[0];
	}
	free(blk);
	if (!ret)
		ret = sink_agree(s);
	if (ret)
		return ret;
	sr.avg_busbw = s->nsizes ? sum / (double)s->nsizes : 0;
	s->worst_avg = PN_MIN(s->worst_avg, sr.avg_busbw);
	if (s->sink.end && pn_stop_hold(-1)) {
		s->sink.end(s->sink.arg, &sr);
		pn_stop_release(0);
	}
	return 0;
}

/* Each algorithm's verdict into err[]: 0, or -EINVAL when be can run none. */
static int runnable(struct pn_sweep_backend *be, int *err)
{
	int a, nrun = 0;

	for (a = 0; a < be->nalgos; a++) {
		err[a] = be->ops->supported ? be->ops->supported(be, be->algos[a]) : 0;
		nrun += !err[a];
	}
	/* nothing to measure: an error, not a sweep of headers and exit 0 */
	if (be->nalgos && !nrun) {
		a = be->nalgos - 1;	/* the last one said why */
		pn_err_ctx(err[a], "%s --algo %s", be->name, be->ops->algo_name(be->algos[a]));
		return -EINVAL;
	}
	return 0;
}

int pn_sweep_runnable(struct pn_sweep_backend *be)
{
	int err[PN_SWEEP_MAX_ALGOS];

	return runnable(be, err);
}

int pn_sweep_run(struct pn_sweep *s, struct pn_sweep_backend *be)
{
	int err[PN_SWEEP_MAX_ALGOS] = { 0 };
	size_t maxb = 16, i;
	int a, ret;

	ret = runnable(be, err);
	if (ret)
		return ret;
	for (i = 0; i < s->nsizes; i++)
		maxb = PN_MAX(maxb, s->sizes[i]);
	ret = be->ops->start ? be->ops->start(be, maxb) : 0;
	for (a = 0; !ret && a < be->nalgos; a++) {
		if (err[a]) {
			if (s->sink.skip && !be->skips_said)
				s->sink.skip(s->sink.arg, be->name, be->ops->algo_name(be->algos[a]),
					     err[a]);
			continue;
		}
		ret = series(s, be, be->algos[a]);
	}
	be->skips_said = 1;
	if (!ret && be->ops->stop)
		ret = be->ops->stop(be);
	return ret;
}

void pn_sweep_mem_job(struct pn_mem_job *mj, int nlocal, int nranks, const char *transport,
		      int nchan, uint64_t host_bytes, const enum pn_algo *algos, int nalgos,
		      int tuned)
{
	int a;

	memset(mj, 0, sizeof(*mj));
	mj->nlocal = nlocal;
	mj->nremote = transport && strcmp(transport, "shm") ? nranks - 1 : nranks - nlocal;
	mj->nchannels = nchan > 0 ? nchan : 1;
	mj->node_segment = 1;
	if (!host_bytes)
		return;
	mj->nbufs = 2;
	mj->buf_bytes = host_bytes;
	for (a = 0; a < nalgos; a++) {
		uint64_t s = 0;

		if (algos[a] == PN_ALGO_ONE_SHOT ||
		    (algos[a] == PN_ALGO_AUTO && tuned))
			s = host_bytes;
		else if (algos[a] == PN_ALGO_AUTO)
			s = PN_MIN(host_bytes, PN_TUNE_ONE_SHOT_MAX);
		mj->scratch_bytes = PN_MAX(mj->scratch_bytes, s);
	}
}

int pn_sweep_verdict(uint64_t wrong, uint64_t differ, double busbw, double min_busbw, char *why,
		     size_t len)
{
	why[0] = 0;
	if (wrong)
		snprintf(why, len, "%llu wrong values", (unsigned long long)wrong);
	else if (differ)
		snprintf(why, len, "%llu rank outputs not bit-identical to rank 0's",
			 (unsigned long long)differ);
	else if (min_busbw >= 0 && !(busbw >= min_busbw))
		snprintf(why, len, "average bus bandwidth %.2f GB/s is below %.2f GB/s", busbw,
			 min_busbw);
	return why[0] != 0;
}

size_t pn_sweep_best(const struct pn_sweep *s, int ip, size_t *bytes, enum pn_algo *best)
{
	size_t i, r, none = 0;

	for (i = 0; i < s->nsizes; i++) {
		double bt = INFINITY;

		bytes[i] = s->sizes[i];
		best[i] = PN_ALGO_RING;
		for (r = 0; r < s->nrows; r++) {
			const struct pn_sweep_row *rw = &s->rows[r];

			int ran = ip ? rw->host_algo_ip : rw->host_algo;

			if (ran != -2 && rw->bytes == s->sizes[i] && rw->time_us[ip] < bt &&
			    !rw->wrong[ip]) {
				bt = rw->time_us[ip];
				best[i] = (enum pn_algo)ran;
			}
		}
		if (bt == INFINITY && none == 0)
			none = i + 1;
	}
	return none;
}

void pn_sweep_csv_header(FILE *f, enum pn_coll_kind k)
{
	fprintf(f, "algo,size,count,type,redop,oop_time_us,oop_algbw,oop_busbw,oop_wrong,"
		   "ip_time_us,ip_algbw,ip_busbw,ip_wrong,backend,oop_differ,ip_differ,"
		   "oop_time_min_us,oop_time_max_us,ip_time_min_us,ip_time_max_us,blocks,"
		   "iters_per_block%s\n", k == PN_COLL_ALLREDUCE ? "" : ",root");
}

int pn_sweep_same_output(enum pn_coll_kind k)
{
	return k == PN_COLL_ALLREDUCE || k == PN_COLL_ALLGATHER || k == PN_COLL_BROADCAST;
}

const char *pn_sweep_redop_name(enum pn_coll_kind k, enum pn_redop op)
{
	return k == PN_COLL_ALLREDUCE || pn_coll_reduces(k) ? pn_redop_name(op) : "none";
}

/* A count of the CSV row into buf, or "" where the table says N/A. */
static const char *csv_count(char *buf, size_t len, int have, uint64_t v)
{
	if (!have)
		return "";
	snprintf(buf, len, "%llu", (unsigned long long)v);
	return buf;
}

void pn_sweep_csv_row(FILE *f, const struct pn_sweep_row *rw, const struct pn_sweep *s)
{
	int same = s->check && pn_sweep_same_output(s->kind);
	char v[4][24];

	fprintf(f, "%s,%zu,%zu,%s,%s,%.3f,%.4f,%.4f,%s,%.3f,%.4f,%.4f,%s,%s,%s,%s,"
		   "%.3f,%.3f,%.3f,%.3f,%d,%d", rw->algo,
		rw->bytes, rw->count, pn_dtype_name(rw->dtype), pn_sweep_redop_name(s->kind, rw->op),
		rw->time_us[0], rw->algbw[0], rw->busbw[0],
		csv_count(v[0], sizeof(v[0]), s->check, rw->wrong[0]), rw->time_us[1],
		rw->algbw[1], rw->busbw[1], csv_count(v[1], sizeof(v[1]), s->check, rw->wrong[1]),
		rw->backend, csv_count(v[2], sizeof(v[2]), same, rw->differ[0]),
		csv_count(v[3], sizeof(v[3]), same, rw->differ[1]),
		rw->time_min_us[0], rw->time_max_us[0], rw->time_min_us[1], rw->time_max_us[1],
		rw->blocks, rw->calls);
	/* the other collectives: the table's root column (-1: none) */
	if (s->kind != PN_COLL_ALLREDUCE)
		fprintf(f, ",%d", pn_coll_rooted(s->kind) ? s->root : -1);
	fputc('\n', f);
}

/* The stop of the presenting rank (pn_sweep_stop_start). */
static const int stop_sigs[] = { SIGTERM, SIGINT, SIGHUP };
static struct sigaction stop_was[PN_ARRAY_SIZE(stop_sigs)];
static void (*stop_cut)(void *arg, const char *why);
static void *stop_arg;

static void stopped(void *unused, int sig)
{
	char why[96];
	size_t i;

	(void)unused;
	/* the turn stays this thread's: nothing is written after the end; an
	 * output that blocks (a reader that stopped reading) holds the stop 3 s
	 * at most, then SIGALRM ends the process */
	alarm(3);
	if (pn_stop_hold(2)) {
		snprintf(why, sizeof(why), "stopped by signal %d (%s)", sig, strsignal(sig));
		stop_cut(stop_arg, why);
	}
	alarm(0);
	/* the handler it had (a self-launched rank's exits); else the default */
	for (i = 0; i < PN_ARRAY_SIZE(stop_sigs); i++)
		if (stop_sigs[i] == sig && !(stop_was[i].sa_flags & SA_SIGINFO) &&
		    stop_was[i].sa_handler != SIG_DFL && stop_was[i].sa_handler != SIG_IGN)
			stop_was[i].sa_handler(sig);
}

int pn_sweep_stop_start(void (*cut)(void *arg, const char *why), void *arg)
{
	size_t i;

	for (i = 0; i < PN_ARRAY_SIZE(stop_sigs); i++)
		sigaction(stop_sigs[i], NULL, &stop_was[i]);
	stop_cut = cut;
	stop_arg = arg;
	return pn_stop_start(stopped, NULL);
}

void pn_sweep_backend_close(struct pn_sweep_backend *be)
{
	if (be)
		be->ops->close(be);
}

int pn_sweep_same_series(const struct pn_sweep_row *a, const struct pn_sweep_row *b)
{
	return !strcmp(a->backend, b->backend) && !strcmp(a->algo, b->algo) &&
	       a->dtype == b->dtype && a->op == b->op;
}

const char *pn_sweep_ref_backend(const struct pn_sweep *sw, const char *backends)
{
	char list[256], *tok, *save = NULL;
	const char *ref = NULL;
	size_t i;
	int distinct = 0;

	snprintf(list, sizeof(list), "%s", backends);
	for (tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		for (i = 0; i < sw->nrows && strcmp(sw->rows[i].backend, tok); i++)
			;
		if (i == sw->nrows)
			continue; /* it produced no rows */
		distinct++;
		if (!ref || !strcmp(tok, "nccl"))
			ref = sw->rows[i].backend;
	}
	return distinct >= 2 ? ref : NULL;
}

/* The reference's fastest timed row of a size (and of like's type and op). */
static const struct pn_sweep_row *ref_of(const struct pn_sweep *sw, const char *ref, size_t bytes,
					 const struct pn_sweep_row *like)
{
	const struct pn_sweep_row *best = NULL;
	size_t i;

	for (i = 0; i < sw->nrows; i++) {
		const struct pn_sweep_row *r = &sw->rows[i];

		if (strcmp(r->backend, ref) || r->bytes != bytes || !(r->time_us[0] > 0) ||
		    (like && (r->dtype != like->dtype || r->op != like->op)))
			continue;
		if (!best || r->time_us[0] < best->time_us[0])
			best = r;
	}
	return best;
}

const struct pn_sweep_row *pn_sweep_ref_row(const struct pn_sweep *sw, const char *ref,
					    size_t bytes)
{
	return ref_of(sw, ref, bytes, NULL);
}

int pn_sweep_ratios(const struct pn_sweep *sw, const char *ref, struct pn_sweep_ratio **out,
		    size_t *n)
{
	const struct pn_sweep_row *rows = sw->rows;
	size_t i, q, k;

	*n = 0;
	*out = calloc(sw->nrows + 1, sizeof(**out));
	if (!*out)
		return pn_err(-ENOMEM, "out of memory");
	for (i = 0; i < sw->nrows; i++) {
		/* each series once, in order of appearance, the reference's excepted */
		for (k = 0; k < i && !pn_sweep_same_series(&rows[k], &rows[i]); k++)
			;
		if (k < i || !strcmp(rows[i].backend, ref))
			continue;
		for (q = i; q < sw->nrows; q++) {
			const struct pn_sweep_row *r = &rows[q], *f;

			if (!pn_sweep_same_series(r, &rows[i]))
				continue;
			f = ref_of(sw, ref, r->bytes, r);
			if (!f)
				continue;
			(*out)[(*n)++] = (struct pn_sweep_ratio){
				.row = r, .ref = f,
				.time_ratio = f->time_us[0] > 0 ? r->time_us[0] / f->time_us[0] : NAN,
				.busbw_ratio = f->busbw[0] > 0 ? r->busbw[0] / f->busbw[0] : NAN };
		}
	}
	return 0;
}

int pn_sweep_plot(const struct pn_sweep *sw, FILE *f, const char *title)
{
	const struct pn_sweep_row *rows = sw->rows;
	size_t nrows = sw->nrows, r, q, k = 0;
	struct pn_plot_series *series = calloc(nrows + 1, sizeof(*series));
	struct pn_plot_point *pts = calloc(nrows + 1, sizeof(*pts));
	char *labels = calloc(nrows + 1, 64);
	struct pn_plot plot;
	int ret = 0, ns = 0, mixed = 0;

	if (!series || !pts || !labels) {
		ret = pn_err(-ENOMEM, "out of memory");
		goto out;
	}
	/* several types or ops (-d all, -o all): the labels name them */
	for (r = 0; r < nrows; r++)
		mixed |= rows[r].dtype != rows[0].dtype || rows[r].op != rows[0].op;
	for (r = 0; r < nrows; r++) {
		size_t first = k;

		for (q = 0; q < r && !pn_sweep_same_series(&rows[q], &rows[r]); q++)
			;
		if (q < r)
			continue; /* this series is drawn already */
		for (q = r; q < nrows; q++) {
			if (!pn_sweep_same_series(&rows[q], &rows[r]))
				continue;
			pts[k].size_bytes = (double)rows[q].bytes;
			pts[k].busbw_gbps = rows[q].busbw[0];
			pts[k].time_us = rows[q].time_us[0];
			k++;
		}
		if (mixed)
			snprintf(labels + 64 * ns, 64, "%s (%s, %s %s)", rows[r].algo, rows[r].backend,
				 pn_dtype_name(rows[r].dtype), pn_redop_name(rows[r].op));
		else
			snprintf(labels + 64 * ns, 64, "%s (%s)", rows[r].algo, rows[r].backend);
		series[ns].label = labels + 64 * ns;
		series[ns].pts = pts + first;
		series[ns].n = k - first;
		ns++;
	}
	plot.title = title;
	plot.series = series;
	plot.nseries = (size_t)ns;
	ret = pn_plot_svg(f, &plot);
out:
	free(series);
	free(pts);
	free(labels);
	return ret;
}

int pn_sweep_tune_save(const struct pn_sweep *sw, FILE *f, const char *name, int nranks,
		       int nnodes)
{
	size_t *bytes = calloc(sw->nsizes, sizeof(size_t));
	enum pn_algo *best = calloc(2 * sw->nsizes, sizeof(*best));
	int ret;

	if (bytes && best) {
		size_t none = pn_sweep_best(sw, 0, bytes, best), ip = 0;

		if (!none) {
			none = pn_sweep_best(sw, 1, bytes, best + sw->nsizes);
			ip = 1;
		}
		if (none)
			ret = pn_err(-EINVAL, "--tune-out: no host algorithm ran %s at %zu bytes without "
					      "wrong values: no table written",
				     ip ? "in place" : "out of place", sw->sizes[none - 1]);
		else
			ret = pn_tune_save(f, name, nranks, nnodes, bytes, best, best + sw->nsizes,
					   (int)sw->nsizes);
	} else {
		ret = pn_err(-ENOMEM, "out of memory");
	}
	free(bytes);
	free(best);
	return ret;
}
