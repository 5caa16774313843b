/* SPDX-License-Identifier: MIT */
/*
 * allreduce-test's options checked and turned into the job's lists and
 * agreed parameters, and rank 0's output files (aropts.h).
 */
#define _GNU_SOURCE
#include "harness/aropts.h"
#include "harness/arjob.h"

#include "base/log.h"
#include "base/ofile.h"
#include "base/out.h"
#include "base/util.h"
#include "engine/mem.h"
#include "harness/plansched.h"

#include <errno.h>
#include <limits.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>

/* --gpus: "0,1,2", each 0..1023. */
static int parse_gpus(const char *list, int *dev, int max, int *n)
{
	const char *p = list;

	*n = 0;
	if (!*p)
		return pn_err(-EINVAL, "--gpus needs a list of GPU indices, like 0,1,2,3");
	while (*p) {
		char *end;
		long v;

		if (*p < '0' || *p > '9')
			return pn_err(-EINVAL, "--gpus '%s': '%s' is not a GPU index", list, p);
		v = strtol(p, &end, 10);
		if (v > 1023 || (*end && *end != ','))
			return pn_err(-EINVAL, "--gpus '%s': '%.*s' is not a GPU index", list,
				      (int)strcspn(p, ","), p);
		if (*n == max)
			return pn_err(-EINVAL, "--gpus '%s': more than %d GPUs", list, max);
		dev[(*n)++] = (int)v;
		p = *end ? end + 1 : end;
		if (*end && !*p)
			return pn_err(-EINVAL, "--gpus '%s' ends with a comma", list);
	}
	return 0;
}

int pn_aropts_backends(const struct pn_aropts *o, struct pn_arback *bk)
{
	const char *list = o->backends;
	char copy[512], *tok, *save = NULL, seen[PN_ARJOB_MAX_BACKENDS][32];
	int n = 0, k;

	bk->has_host = 0;
	bk->ngpu = 0;
	bk->ndev = -1;
	if (strlen(list) >= sizeof(copy))
		return pn_err(-EINVAL, "--backend '%s' is too long", list);
	snprintf(copy, sizeof(copy), "%s", list);
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (!tok[0] || strlen(tok) >= 32 || strspn(tok, "abcdefghijklmnopqrstuvwxyz0123456789_-") !=
								   strlen(tok))
			return pn_err(-EINVAL, "--backend '%s' is not a backend name (host, cuda, "
					       "nccl or another plugin's)", tok);
		for (k = 0; k < n; k++)
			if (!strcmp(seen[k], tok))
				return pn_err(-EINVAL, "--backend %s is listed twice", tok);
		if (n == PN_ARJOB_MAX_BACKENDS)
			return pn_err(-EINVAL, "--backend: at most %d backends",
				      PN_ARJOB_MAX_BACKENDS);
		snprintf(seen[n++], sizeof(seen[0]), "%s", tok);
		if (!strcmp(tok, "host"))
			bk->has_host = 1;
		else
			bk->ngpu++;
	}
	if (!n)
		return pn_err(-EINVAL, "--backend is empty");
	if (o->graph > 0 && !bk->ngpu)
		return pn_err(-EINVAL, "-G captures CUDA graphs: it needs a GPU backend "
				       "(--backend cuda or nccl)");
	if (o->gpus && !bk->ngpu)
		return pn_err(-EINVAL, "--gpus picks GPUs: it needs a GPU backend (--backend cuda or "
				       "nccl)");
	if (o->share_gpus && !bk->ngpu)
		return pn_err(-EINVAL, "--share-gpus lets ranks share a GPU: it needs a GPU backend "
				       "(--backend cuda or nccl)");
	if (o->fresh_input && bk->ngpu)
		return pn_err(-EINVAL, "--fresh-input rewrites host memory between calls: the host "
				       "backend only (not with --backend %s)", o->backends);
	if (o->gpus)
		return parse_gpus(o->gpus, bk->dev, PN_AROPTS_MAX_GPUS, &bk->ndev);
	return 0;
}

/* Whether the list names the host (*host) and a GPU plugin (returned). */
static int names_gpu(const char *backends, int *host)
{
	char copy[512], *tok, *save = NULL;
	int gpu = 0;

	*host = 0;
	snprintf(copy, sizeof(copy), "%s", backends);
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		*host |= !strcmp(tok, "host");
		gpu |= strcmp(tok, "host") != 0;
	}
	return gpu;
}

int pn_aropts_has_host(const char *backends)
{
	int host;

	names_gpu(backends, &host);
	return host;
}

/* A rank's host memory for a GPU backend's check (sweep_gpu.c), if any. */
static uint64_t gpu_staged(const struct pn_aropts *o, int coll)
{
	int host;

	return names_gpu(o->backends ? o->backends : "host", &host)
		       ? pn_sweep_gpu_staged(coll, o->check, o->maxbytes) : 0;
}

/* Algorithm names that only GPU plugins have (src/harness/sweep_gpu.c): the
 * host engine's list skips them; a job with the host backend refuses them. */
static int gpu_only_algo(const char *s)
{
	return !strcmp(s, "symmetric");
}

/* One name of the list into a[] (every one for "all"): how many, or -errno. */
static int one_algo(const char *tok, enum pn_algo *a)
{
	int i, ret;

	if (strcmp(tok, "all")) {
		ret = pn_algo_parse(tok, &a[0]);
		return ret ? ret : 1;
	}
	for (i = 0; i < PN_NALGOS; i++)
		a[i] = (enum pn_algo)i;
	return PN_NALGOS;
}

int pn_aropts_algos(const char *spec, int has_host, enum pn_algo *algos, int *n)
{
	char *list = strdup(spec), *tok, *save = NULL;
	int k = 0, ret = 0, i, m;

	if (!list)
		return -ENOMEM;
	for (tok = strtok_r(list, ",", &save); tok && !ret; tok = strtok_r(NULL, ",", &save)) {
		enum pn_algo a[PN_NALGOS];
		int na;

		if (gpu_only_algo(tok)) {
			if (has_host)
				ret = pn_err(-EINVAL, "the host backend has no algorithm '%s' (a GPU "
						      "backend's: --backend nccl)", tok);
			continue;
		}
		na = one_algo(tok, a);
		if (na < 0) {
			ret = na;
			break;
		}
		for (i = 0; i < na && !ret; i++) {
			for (m = 0; m < k; m++)
				if (algos[m] == a[i])
					break;
			if (m < k)
				ret = pn_err(-EINVAL, "--algo '%s' names %s twice", spec,
					     pn_algo_name(a[i]));
			else if (k == PN_SWEEP_MAX_ALGOS)
				ret = pn_err(-EINVAL, "--algo '%s': at most 16 algorithms", spec);
			else
				algos[k++] = a[i];
		}
	}
	free(list);
	*n = k;
	return ret;
}

int pn_aropts_prelaunch(const struct pn_aropts *o, int np, int coll, const char *transport,
			int mem_check, int tuned)
{
	enum pn_algo algos[PN_SWEEP_MAX_ALGOS] = { PN_ALGO_ONE_SHOT };
	struct pn_mem_job mj;
	int nalgos = 1, host = pn_aropts_has_host(o->backends ? o->backends : "host");

	/* options that do not parse are the ranks' to report; the other
	 * collectives' scratch (exec.c) is at most a buffer, one-shot's */
	if (!mem_check || (!coll && pn_aropts_algos(o->algo, host, algos, &nalgos)))
		return 0;
	pn_sweep_mem_job(&mj, np, np, transport, pn_aropts_multiring(algos, nalgos) ? 2 : 1,
			 host ? o->maxbytes : 0, algos, nalgos, tuned);
	mj.base_bytes = PN_MEM_RANK_BASE;
	mj.private_bytes = gpu_staged(o, coll);
	return pn_mem_check(&mj);
}

int pn_aropts_multiring(const enum pn_algo *algos, int nalgos)
{
	while (nalgos-- > 0)
		if (algos[nalgos] == PN_ALGO_MULTIRING)
			return 1;
	return 0;
}

/* How many host algorithms --algo names, auto one of them (2 when it does
 * not parse: pn_aropts_algos says why, later). */
static int tune_choices(const char *spec)
{
	enum pn_algo a[PN_SWEEP_MAX_ALGOS];
	int n;

	return pn_aropts_algos(spec, 1, a, &n) ? 2 : n;
}

int pn_aropts_check(struct pn_aropts *o, const struct pn_arback *bk)
{
	uint64_t *sizes = NULL;
	size_t n;
	int ret;

	/* -n -w -c -b -e -i -f -G are in range (the table); -f 0: not given */
	if (o->minbytes > o->maxbytes)
		return pn_err(-EINVAL, "-b %llu is larger than -e %llu",
			      (unsigned long long)o->minbytes, (unsigned long long)o->maxbytes);
	/* the sizes' number does not depend on the type */
	ret = pn_sweep_sizes(o->minbytes, o->maxbytes, o->stepbytes, o->factor, 1, &sizes, &n);
	free(sizes);
	if (ret == -E2BIG)
		return pn_err(-EINVAL, "-b, -e and -i or -f give more than %d sizes",
			      PN_SWEEP_MAX_SIZES);
	if (ret)
		return pn_err(ret, "out of memory");
	/* -m repeats every call: a size's calls are counted in an int */
	if (o->agg > 1 && (long long)PN_MAX(o->iters, o->warmup) * o->agg > INT_MAX)
		return pn_err(-EINVAL, "-%c %d with -m %d is %lld calls a size: at most %d", o->iters >=
			      o->warmup ? 'n' : 'w', PN_MAX(o->iters, o->warmup), o->agg,
			      (long long)PN_MAX(o->iters, o->warmup) * o->agg, INT_MAX);
	if (o->plan && bk->has_host && bk->ngpu)
		return pn_err(-EINVAL, "--plan: the host engine runs multiring over the plan, a "
				       "GPU plugin its ring algorithm; run them in separate jobs");
	if (o->plan && bk->has_host && strcmp(o->algo, "auto") && strcmp(o->algo, "multiring"))
		return pn_err(-EINVAL, "--plan runs the multiring algorithm; it cannot run "
				       "--algo %s", o->algo);
	if (o->tune_out && ((o->types && (o->types->ndtypes > 1 || o->types->nops > 1)) ||
			    o->cycles > 1))
		return pn_err(-EINVAL, "--tune-out tunes one type and op over one sweep: not with "
				       "-d all, -o all or -N");
	if (o->tune_out && !bk->has_host)
		return pn_err(-EINVAL, "--tune-out writes the host engine's table: the run needs "
				       "--backend host (alone or in its list)");
	if (o->tune_out && o->iters == 0)
		return pn_err(-EINVAL, "--tune-out needs timed calls: not with -n 0");
	/* a table of one algorithm, or of auto's own picks, chooses nothing */
	if (o->tune_out && o->plan)
		return pn_err(-EINVAL, "--tune-out writes the fastest of the algorithms it measures: "
				       "--plan runs one (multiring)");
	if (o->tune_out && tune_choices(o->algo) < 2)
		return pn_err(-EINVAL, "--tune-out writes the fastest of the algorithms it measures: "
				       "give --algo all (or two or more), not --algo %s", o->algo);
	/* a bandwidth gate over nothing timed would fail a healthy run */
	if (o->min_busbw >= 0 && (o->iters == 0 || o->maxbytes == 0))
		return pn_err(-EINVAL, "--min-busbw needs timed calls of some bytes: not with %s",
			      o->iters == 0 ? "-n 0" : "-e 0");
	if (o->plan && bk->has_host)
		o->algo = "multiring";
	return 0;
}

int pn_aropts_job(const struct pn_aropts *o, int nranks)
{
	uint64_t *sizes = NULL, top;
	size_t n, es = 0, need;
	int t, big = 0;

	if (pn_coll_rooted(o->kind) && o->root >= nranks)
		return pn_err(-EINVAL, "-r %d: the root is not a rank of the %d (0..%d)", o->root,
			      nranks, nranks - 1);
	if (o->min_busbw < 0 || !o->types)
		return 0;
	if (pn_sweep_sizes(o->minbytes, o->maxbytes, o->stepbytes, o->factor, 1, &sizes, &n))
		return 0; /* pn_aropts_check said it */
	top = n ? sizes[n - 1] : 0;
	free(sizes);
	/* a size of no element is a row of 0 GB/s: the type's sweep averages
	 * nothing and the gate fails a healthy run */
	for (t = 0; t < o->types->ndtypes; t++)
		if (pn_dtype_size(o->types->dtypes[t]) > es)
			es = pn_dtype_size(o->types->dtypes[big = t]);
	need = (size_t)pn_coll_algbw_bytes(o->kind, 1, es, nranks);
	if (top >= need)
		return 0;
	if (need == es)
		return pn_err(-EINVAL, "--min-busbw needs timed calls of some bytes: the largest "
				       "size, %llu B, is below one %s (%zu B)", (unsigned long long)top,
			      pn_dtype_name(o->types->dtypes[big]), es);
	return pn_err(-EINVAL, "--min-busbw needs timed calls of some bytes: the largest size, "
			       "%llu B, is below one %s per rank (%zu B: %s over %d ranks)",
		      (unsigned long long)top, pn_dtype_name(o->types->dtypes[big]), need,
		      pn_coll_name(o->kind), nranks);
}

size_t pn_aropts_plan(const struct pn_aropts *o, struct pn_arjob_plan *p)
{
	size_t n = 0;

	*p = (struct pn_arjob_plan){ .minbytes = o->minbytes, .maxbytes = o->maxbytes,
				     .stepbytes = o->stepbytes, .factor = o->factor,
				     .cycles = o->cycles };
	if (o->types) {
		p->dtypes = o->types->dtypes;
		p->ndtypes = o->types->ndtypes;
		p->ops = o->types->ops;
		p->nops = o->types->nops;
	}
	if (pn_sweep_sizes(o->minbytes, o->maxbytes, o->stepbytes, o->factor, 1, &p->sizes, &n))
		p->sizes = NULL;
	return n;
}

int pn_aropts_nccl_tests(const struct pn_ar_nccl_tests *t, int has_host, int ngpu,
			 const char *algo, char *warn, size_t len)
{
	warn[0] = 0;
	if (t->nthreads != 1)
		return pn_err(-EINVAL, "-t %d: not supported by penny: it runs one rank per "
				       "process; start a rank for each thread instead (--np or the "
				       "launcher)", t->nthreads);
	if (t->ngpus != 1)
		return pn_err(-EINVAL, "-g %d: not supported by penny: it drives one GPU per rank; "
				       "start a rank per GPU (--np) and pick the devices with --gpus",
			      t->ngpus);
	if (t->run_cycles < 1)
		return pn_err(-EINVAL, "-N %d: not supported by penny: nccl-tests' 0 runs "
				       "forever; give the number of cycles", t->run_cycles);
	if (t->reg == 1 && ngpu)
		return pn_err(-EINVAL, "-R 1: not supported by penny: its GPU plugins do not "
				       "register local buffers; -R 2 is --backend nccl --algo symmetric");
	if (t->reg == 2 && (!ngpu || strcmp(algo, "symmetric")))
		return pn_err(-EINVAL, "-R 2: symmetric registration is --backend nccl --algo "
				       "symmetric; give those");
	/* the host engine's calls block and are timed with the CPU's clock */
	if (ngpu && t->blocking)
		snprintf(warn, len, "-z %d changes nothing penny can honour on GPU backends: they "
			 "time the calls back to back on the stream", t->blocking);
	else if (ngpu && t->cputime)
		snprintf(warn, len, "-C 1 changes nothing penny can honour on GPU backends: they "
			 "are timed with CUDA events%s", has_host ? " (the host with the CPU's clock)" : "");
	return 0;
}

/* -d or -o (what) that names no type or op: every name it takes, "all" too
 * (the engine's line leaves it out), and that it takes one, not a list. */
static int not_one(char what, const char *v)
{
	char names[160] = "";
	int i, n = what == 'd' ? PN_NDTYPES : PN_NREDOPS;

	for (i = 0; i < n; i++)
		snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s ", what == 'd'
			 ? pn_dtype_name((enum pn_dtype)i) : pn_redop_name((enum pn_redop)i));
	return pn_err(-EINVAL, "unknown %s '%s' (valid: %sor all%s)", what == 'd' ? "data type"
		      : "reduction operation", v, names, strchr(v, ',') ? "; one name, not a list" : "");
}

int pn_aropts_types(const char *d, const char *op, enum pn_coll_kind k, struct pn_artypes *t)
{
	int i;

	t->ndtypes = t->nops = 0;
	if (!strcmp(d, "all"))
		for (i = 0; i < PN_NDTYPES; i++)
			t->dtypes[t->ndtypes++] = (enum pn_dtype)i;
	else if (pn_dtype_parse(d, &t->dtypes[t->ndtypes++]))
		return not_one('d', d);
	if (!strcmp(op, "all"))
		for (i = 0; i < PN_NREDOPS; i++)
			t->ops[t->nops++] = (enum pn_redop)i;
	else if (pn_redop_parse(op, &t->ops[t->nops++]))
		return not_one('o', op);
	if (!pn_coll_reduces(k)) {
		t->ops[0] = PN_SUM;	/* the data's; the table says none */
		t->nops = 1;
	}
	return 0;
}

int pn_aropts_calgos(const char *spec, enum pn_coll_kind k, enum pn_calgo *algos, int *n)
{
	char list[160], *tok, *save = NULL;
	enum pn_calgo a;
	int i, m;

	*n = 0;
	if (strlen(spec) >= sizeof(list))
		return pn_err(-EINVAL, "--algo '%.40s...' is too long", spec);
	snprintf(list, sizeof(list), "%s", spec);
	for (tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		enum pn_calgo one[PN_NCALGOS + 1];
		int na = 0;

		if (!strcmp(tok, "all")) {
			for (i = 0; i < PN_NCALGOS; i++)
				if (pn_calgo_valid(k, (enum pn_calgo)i))
					one[na++] = (enum pn_calgo)i;
		} else if (pn_calgo_parse(tok, &a)) {
			return -EINVAL;
		} else if (a != PN_CALGO_AUTO && !pn_calgo_valid(k, a)) {
			char names[80] = "";

			for (i = 0; i < PN_NCALGOS; i++)
				if (pn_calgo_valid(k, (enum pn_calgo)i))
					snprintf(names + strlen(names), sizeof(names) - strlen(names),
						 ", %s", pn_calgo_name((enum pn_calgo)i));
			return pn_err(-EINVAL, "%s has no algorithm '%s' (it has auto%s)",
				      pn_coll_name(k), tok, names);
		} else {
			one[na++] = a;
		}
		for (i = 0; i < na; i++) {
			for (m = 0; m < *n && algos[m] != one[i]; m++)
				;
			if (m < *n)
				return pn_err(-EINVAL, "--algo '%s' names %s twice", spec,
					      pn_calgo_name(one[i]));
			algos[(*n)++] = one[i];
		}
	}
	return *n ? 0 : pn_err(-EINVAL, "--algo is empty");
}

void pn_aropts_sweep(const struct pn_aropts *o, struct pn_sweep *sw)
{
	static const enum pn_sweep_time time_of[] = {
		PN_SWEEP_TIME_RANK0, PN_SWEEP_TIME_MEAN, PN_SWEEP_TIME_MIN, PN_SWEEP_TIME_MAX,
	};

	sw->iters = o->iters;
	if (o->blocks > 0)
		sw->blocks = o->blocks;
	sw->warmup = o->warmup;
	sw->check = o->check;
	sw->fresh_input = o->fresh_input;
	sw->seed = o->seed;
	sw->kind = o->kind;
	sw->root = o->root;
	sw->agg = o->agg > 1 ? o->agg : 1;
	if (o->average >= 0 && o->average < (int)PN_ARRAY_SIZE(time_of))
		sw->time_of = time_of[o->average];
}

int pn_aropts_params(const struct pn_aropts *o, enum pn_dtype dtype, enum pn_redop op,
		     const enum pn_algo *algos, int nalgos, struct pn_job_param *p)
{
	char list[160] = "";
	int n = 0, a;

	pn_job_param_set(&p[n++], "-b", "%llu", (unsigned long long)o->minbytes);
	pn_job_param_set(&p[n++], "-e", "%llu", (unsigned long long)o->maxbytes);
	if (o->factor > 1) {
		pn_job_param_set(&p[n++], "-f", "%.15g", o->factor);
		pn_job_param_set(&p[n++], "-i", "unused (-f)");
	} else {
		pn_job_param_set(&p[n++], "-f", "none");
		pn_job_param_set(&p[n++], "-i", "%llu", (unsigned long long)o->stepbytes);
	}
	if (o->iters < 0)
		pn_job_param_set(&p[n++], "-n", "by size");
	else
		pn_job_param_set(&p[n++], "-n", "%d", o->iters);
	pn_job_param_set(&p[n++], "--blocks", "%d", o->blocks);
	pn_job_param_set(&p[n++], "-w", "%d", o->warmup);
	pn_job_param_set(&p[n++], "-c", "%d", o->check);
	pn_job_param_set(&p[n++], "-d", "%s", o->types && o->types->ndtypes > 1 ? "all"
							     : pn_dtype_name(dtype));
	pn_job_param_set(&p[n++], "-o", "%s", o->types && o->types->nops > 1 ? "all"
							     : pn_redop_name(op));
	for (a = 0; a < nalgos; a++)
		snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s", a ? "," : "",
			 pn_algo_name(algos[a]));
	/* GPU backends and the other collectives: --algo as given */
	pn_job_param_set(&p[n++], "-A", "%s", strcmp(o->backends, "host") || o->kind ? o->algo
										      : list);
	pn_job_param_set(&p[n++], "COLLECTIVE", "%s", pn_coll_name(o->kind));
	pn_job_param_set(&p[n++], "-r", "%d", pn_coll_rooted(o->kind) ? o->root : -1);
	pn_job_param_set(&p[n++], "-m", "%d", o->agg > 1 ? o->agg : 1);
	pn_job_param_set(&p[n++], "-N", "%d", o->cycles > 1 ? o->cycles : 1);
	pn_job_param_set(&p[n++], "--backend", "%s", o->backends);
	pn_job_param_set(&p[n++], "-G", "%d", o->graph);
	pn_job_param_set(&p[n++], "-a", "%d", o->average);
	pn_job_param_set(&p[n++], "--fresh-input", "%d", o->fresh_input);
	pn_job_param_set(&p[n++], "--seed", "%llu", (unsigned long long)o->seed);
	pn_job_param_file(&p[n++], "--plan", o->plan);
	pn_job_param_set(&p[n++], "--transport", "%s", o->transport ? o->transport : "probe");
	if (o->min_busbw >= 0)
		pn_job_param_set(&p[n++], "--min-busbw", "%.15g", o->min_busbw);
	else
		pn_job_param_set(&p[n++], "--min-busbw", "none");
	return n;
}

int pn_arout_open(struct pn_arout *w, const struct pn_aropts *o)
{
	static const char *const names[] = { "--csv", "--plot", "--tune-out" };
	const char *paths[] = { o->csv, o->plot, o->tune_out };
	struct pn_ofile **ofs[] = { &w->csv_of, &w->plot_of, &w->tune_of };
	int k, ret = 0;

	for (k = 0; k < (int)PN_ARRAY_SIZE(paths) && !ret; k++) {
		if (!paths[k])
			continue;
		ret = pn_ofile_open(ofs[k], paths[k], PN_OFILE_SYNC);
		if (ret)
			pn_err_ctx(ret, "%s", names[k]);
	}
	if (w->csv_of)
		w->csv = pn_ofile_file(w->csv_of);
	return ret;
}

int pn_arout_row(struct pn_arout *w, const struct pn_sweep_row *rw, const struct pn_sweep *s)
{
	int err;

	if (!w->csv)
		return 0;
	if (!w->csv_rows++)
		pn_sweep_csv_header(w->csv, s->kind);
	pn_sweep_csv_row(w->csv, rw, s);
	err = pn_out_flush(w->csv);
	/* in place ("-", /dev/stdout): standard output's error */
	if (err && !pn_ofile_inplace(w->csv_of))
		w->csv_err = err;
	return err;
}

int pn_aropts_refuse_shared(const struct pn_aropts *o, const char *tune_file)
{
	static const char *const names[] = { "--csv", "--plot", "--tune-out", "--plan",
					     "PENNY_TUNE_FILE" };
	const char *const paths[] = { o->csv, o->plot, o->tune_out, o->plan, tune_file };
	size_t i, j;

	/* two outputs, or an output and an input, on one file */
	for (i = 0; i < 3; i++)
		for (j = i + 1; j < PN_ARRAY_SIZE(paths); j++)
			if (paths[i] && paths[j] && pn_ofile_same(paths[i], paths[j]))
				return pn_err(-EINVAL, "%s and %s name the same file '%s'",
					      names[i], names[j], paths[i]);
	return 0;
}

/* Commit the file, or drop it after an error (it is closed either way). */
/* An error the job found: who says it, the exit status. */
static int found(struct pn_arprep *p, int say, int rc, int ret)
{
	p->say = say;
	p->rc = rc;
	return ret;
}

int pn_aropts_prepare(const struct pn_aropts *o, struct pn_boot *b, struct pn_arprep *p,
		      struct pn_arout *w, struct pn_comm_cfg *cfg)
{
	struct pn_job_param jp[PN_JOB_MAX_PARAMS];
	struct pn_mem_job mj;
	int rank = pn_boot_rank(b), first = -1, mine, differs, n, ret;

	p->plan = NULL;
	p->rc = p->say = 0;
	n = pn_aropts_params(o, p->dtype, p->op, p->algos, p->nalgos, jp);
	ret = pn_job_params_agree(b, jp, n, &differs);
	if (ret == -EINVAL)
		return found(p, rank == 0 || differs, 2, ret);
	/* a path that cannot be written fails the whole job at once */
	mine = ret ? 0 : rank == 0 ? pn_arout_open(w, o) : 0;
	ret = ret ? ret : pn_boot_agree_err(b, mine, 0, &first);
	if (first >= 0)
		return found(p, first == rank, 2, ret);
	if (ret)
		return ret;
	if (pn_aropts_multiring(p->algos, p->nalgos))
		cfg->nchannels = 2;
	if (o->plan) {
		ret = pn_planned_load(&p->plan, b, o->plan, &first, &mine);
		if (first >= 0)
			return found(p, first == rank, mine == -ENOMEM || ret == -ENOMEM ? 1 : 2,
				     pn_err_ctx(ret, "--plan"));
		if (ret)
			return ret;
		cfg->nchannels = p->plan->map.nrings;
		cfg->verbs_port = pn_planned_port;
		cfg->verbs_port_arg = p->plan;
	}
	/* the host's planned memory, before anything is mapped */
	pn_sweep_mem_job(&mj, pn_boot_local_size(b), pn_boot_nranks(b), o->transport,
			 cfg->nchannels, p->has_host ? o->maxbytes : 0, p->algos, p->nalgos,
			 p->tuned);
	mj.private_bytes = gpu_staged(o, o->kind != PN_COLL_ALLREDUCE);
	ret = pn_boot_agree_err(b, p->mem_check ? pn_mem_check(&mj) : 0, 1, &first);
	return first >= 0 ? found(p, first == rank, 2, ret) : ret;
}

static int commit(struct pn_ofile **of, int ret)
{
	if (!ret)
		ret = pn_ofile_commit(*of);
	else
		pn_ofile_abort(*of);
	*of = NULL;
	return ret;
}

int pn_arout_finish(struct pn_arout *w, const struct pn_aropts *o, const struct pn_sweep *sw,
		    int nranks, int nnodes)
{
	char title[160];
	int ret;

	if (w->tune_of) {
		ret = pn_sweep_tune_save(sw, pn_ofile_file(w->tune_of), o->tune_out, nranks, nnodes);
		ret = commit(&w->tune_of, ret);
		if (ret)
			return ret;
	}
	if (w->plot_of) {
		snprintf(title, sizeof(title), "penny %s%s: %d ranks on %d nodes, %s %s, out of place",
			 sw->kind ? "coll-test " : "allreduce-test", sw->kind ? pn_coll_name(sw->kind)
			 : "", nranks, nnodes, o->types && o->types->ndtypes > 1 ? "all types" :
			 pn_dtype_name(sw->dtype), o->types && o->types->nops > 1 ? "all ops" :
			 pn_sweep_redop_name(sw->kind, sw->op));
		ret = pn_sweep_plot(sw, pn_ofile_file(w->plot_of), title);
		if (ret)
			pn_err_ctx(ret, "'%s'", o->plot);
		ret = commit(&w->plot_of, ret);
		if (ret)
			return ret;
	}
	if (w->csv_of) {
		w->csv = NULL;
		return commit(&w->csv_of, 0);
	}
	return 0;
}

int pn_arout_stdout_failed(const struct pn_arout *w, int err)
{
	struct pn_ofile *const ofs[] = { w->csv_of, w->plot_of, w->tune_of };
	size_t k;

	if (w->csv_err && w->csv_of)
		return pn_err(err, "write error on '%s': %s", pn_ofile_path(w->csv_of),
			      strerror(-err));
	__fpurge(stdout);
	clearerr(stdout);
	for (k = 0; k < PN_ARRAY_SIZE(ofs); k++)
		if (ofs[k] && pn_ofile_inplace(ofs[k]) && pn_ofile_file(ofs[k]) == stdout)
			return pn_err(err, "write error on '%s': %s", pn_ofile_path(ofs[k]),
				      strerror(-err));
	return pn_err(err, "write error on standard output: %s", strerror(-err));
}

void pn_arout_abort(struct pn_arout *w)
{
	pn_ofile_abort(w->csv_of);
	pn_ofile_abort(w->plot_of);
	pn_ofile_abort(w->tune_of);
	w->csv_of = w->plot_of = w->tune_of = NULL;
	w->csv = NULL;
}
