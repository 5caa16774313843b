/* SPDX-License-Identifier: MIT */
/*
 * penny allreduce-test's GPU backends (--backend cuda,nccl,...): one table
 * per backend and algorithm through a plugin (src/gpu/gpucoll.h), and the ratio
 * table that compares the backends.  cmd/allreduce-test.c owns the options,
 * the communicator and the presentation of rows (through a sink).
 */
#ifndef PENNY_CMD_AR_GPU_H
#define PENNY_CMD_AR_GPU_H

#include "penny.h"

#include "engine/coll.h"
#include "engine/dtype.h"
#include "base/out.h"

#include <stddef.h>
#include <stdint.h>

/* One row of the nccl-tests table: out of place [0], in place [1]. */
struct ar_row {
	char backend[32];	/* "host", "cuda", ... */
	char algo[24];		/* as asked: "ring", "auto" */
	char ran[24];		/* what ran (GPU auto: the plugin's choice at this size) */
	int host_algo;		/* host rows: the enum pn_algo that ran (auto: its pick); -2 otherwise */
	size_t bytes, count;
	double time_us[2], algbw[2], busbw[2];
	uint64_t wrong[2];
};

/* allreduce-test.c presents: a table's header and each row (rank 0 prints
 * and records, the other ranks do nothing). */
struct ar_sink {
	void *arg;
	void (*header)(void *arg, const char *backend, const char *algo);
	int (*row)(void *arg, const struct ar_row *row);
};

struct ar_gpu_opts {
	const char *algos;	/* --algo: auto, one-shot, two-shot, ring, all (comma list) */
	int graph;		/* -G: calls per CUDA graph (0: none) */
	const char *gpus;	/* -g: device per local rank ("0,2,4,6"); NULL: local rank */
};

struct ar_sweep {
	enum pn_dtype dtype;
	enum pn_redop op;
	const uint64_t *sizes;
	size_t nsizes;
	int iters, warmup, check;
	uint64_t seed;
	struct ar_sink sink;
};

struct ar_gpu;

/*
 * Collective: open backend name on every rank, check --algo, -G and -g
 * against it.  Returns 0, or the exit code (2: cannot run) after rank 0
 * printed one line.
 */
int ar_gpu_open(struct pn_ctx *ctx, struct pn_coll *coll, const char *name,
		const struct ar_gpu_opts *o, struct ar_gpu **out);
/* Collective: "#  Rank R NAME: <device and library>" lines (rank 0 prints). */
int ar_gpu_print_ranks(struct ar_gpu *g, struct pn_out *o);
/* Collective: every algorithm's table; *worst_avg: the smallest average
 * busbw of its tables, *wrong: wrong values over all ranks.  Returns 0 or a
 * negative engine error (message in pn_errmsg). */
int ar_gpu_sweep(struct ar_gpu *g, struct pn_out *o, const struct ar_sweep *s,
		 double *worst_avg, uint64_t *wrong);
void ar_gpu_close(struct ar_gpu *g);

/* Whether -g parses ("0,1,2", each 0..1023); prints the error otherwise. */
int ar_gpu_parse_list(struct pn_ctx *ctx, const char *list, int *dev, int max, int *n);

/*
 * The ratio table (rank 0): every backend/algorithm against the reference
 * backend's first algorithm, per size, out of place: time ratio (< 1:
 * faster than the reference) and busbw ratio (> 1: more bandwidth).  The
 * reference is nccl when it ran, else the first backend.  Nothing when
 * fewer than two backends ran.
 */
void ar_ratio_table(struct pn_out *o, const struct ar_row *rows, size_t nrows,
		    const char *backends);

#endif
