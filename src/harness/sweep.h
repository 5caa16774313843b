/* SPDX-License-Identifier: MIT */
/*
 * The sweep behind `penny allreduce-test` and `penny coll-test` (nccl-tests'
 * all_reduce_perf and its siblings), written once for every backend and
 * collective (s->kind, src/engine/collkind.h).  For each algorithm of
 * a backend and each size, out of place then in place: fill, warm up, time
 * in blocks (base/timing.h: the one timing rule), then fresh data, a
 * poisoned output, one more call and an exact check.  Each block's time is
 * its time per call over the ranks (the slowest rank's, or as time_of
 * says); a size's time is the median block, its fastest and slowest blocks
 * kept; wrong values are summed over the ranks.  A row's size is
 * nccl-tests' (the whole buffer for allgather, reducescatter and alltoall),
 * its count the collective's argument; algbw = size / time, busbw = algbw
 * times nccl-tests' bus factor of the kind (allreduce 2(n-1)/n).
 * A series (one backend, one algorithm) ends with its wrong values and its
 * average out-of-place busbw.
 *
 * A backend is an ops table: the host engine (pn_sweep_host_open) or a GPU
 * plugin (pn_sweep_gpu_open, src/gpu/gpucoll.h).  Nothing here prints: rows
 * go to the caller's sink as they are measured, the results come back in
 * struct pn_sweep, and pn_sweep_csv_*() write the rows' CSV file format.
 */
#ifndef PENNY_SWEEP_H
#define PENNY_SWEEP_H

#include "engine/coll.h"
#include "engine/collkind.h"
#include "engine/dtype.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define PN_SWEEP_MAX_SIZES 100000
#define PN_SWEEP_MAX_ALGOS 16

/* One row of the nccl-tests table: out of place [0], in place [1]. */
struct pn_sweep_row {
	char backend[32];	/* "host", "cuda", ... */
	char algo[24];		/* as asked: "ring", "auto" */
	char ran[24];		/* what ran (GPU auto: the plugin's choice at this size) */
	int host_algo;		/* host allreduce rows: the enum pn_algo that ran out of
				 * place (auto: its pick); -2 otherwise */
	int host_algo_ip;	/* the same in place */
	enum pn_dtype dtype;	/* the sweep's type and op when the row ran */
	enum pn_redop op;
	size_t bytes, count;
	double time_us[2], algbw[2], busbw[2];	/* time: the median block */
	double time_min_us[2], time_max_us[2];	/* the fastest and the slowest block */
	int blocks, calls;	/* timed blocks, calls in each (0: not timed) */
	/* each block's time over the ranks (blocks values) while the sink's
	 * row() runs; NULL in the rows kept */
	const double *block_us[2];
	uint64_t wrong[2];
	/* ranks whose checked output is not bit-identical to rank 0's
	 * (pn_digest64 of the whole output); 0 without a check */
	uint64_t differ[2];
};

/* The end of a series: its wrong values over all ranks and sizes, and the
 * average out-of-place busbw of its sizes. */
struct pn_sweep_series {
	const char *backend, *algo;
	uint64_t wrong, differ;
	double avg_busbw;
};

/* What one rank's check found; first/got only where have_first. */
struct pn_sweep_bad {
	int rank, ip, have_first;
	const char *backend, *algo;
	size_t bytes;
	uint64_t wrong, first, got;
	uint64_t digest;	/* run(): pn_digest64 of the checked output */
};

/* Where the measurements go as they are made (every rank calls them; a
 * sink that presents does so on its rank 0).  Any may be NULL.  begin, row
 * and end take turns with a stop (base/stop.h, pn_sweep_stop_start): one
 * that comes after the output's end is not called. */
struct pn_sweep_sink {
	void *arg;
	void (*begin)(void *arg, const char *backend, const char *algo);
	/* row i of the series' n; a negative errno stops the sweep on every
	 * rank: the presenting rank's error goes to the others with the next
	 * size's times (or at the series' end), then every rank's pn_sweep_run
	 * returns it, in s->sink_err too; no sink call follows it */
	int (*row)(void *arg, const struct pn_sweep_row *row, size_t i, size_t n);
	void (*end)(void *arg, const struct pn_sweep_series *s);
	/* an algorithm the backend cannot run on this job (err: why) */
	void (*skip)(void *arg, const char *backend, const char *algo, int err);
	/* this rank's check found wrong values */
	void (*bad)(void *arg, const struct pn_sweep_bad *bad);
};

struct pn_sweep;
struct pn_sweep_backend;

/* A backend.  Every call is collective; run() measures this rank only. */
struct pn_sweep_ops {
	const char *(*algo_name)(int algo);
	/* 0, or a negative errno: the algorithm is skipped (may be NULL) */
	int (*supported)(struct pn_sweep_backend *be, int algo);
	/* buffers for sizes up to max_bytes, before and after the series */
	int (*start)(struct pn_sweep_backend *be, size_t max_bytes);
	int (*stop)(struct pn_sweep_backend *be);
	/* what runs at this row's count: row->ran, row->host_algo */
	int (*pick)(struct pn_sweep_backend *be, const struct pn_sweep *s, int algo,
		    struct pn_sweep_row *row);
	/* One size on this rank: after the warm-up, pn_sweep_blocks(s) blocks
	 * of pn_sweep_calls(s, bytes) calls each (none when that is 0), each
	 * block's time per call into block_us; and the check's findings
	 * (wrong 0 without a check; the digest of the checked output,
	 * pn_digest64 over its bytes). */
	int (*run)(struct pn_sweep_backend *be, const struct pn_sweep *s, int algo, size_t bytes,
		   int ip, uint64_t seed, double *block_us, struct pn_sweep_bad *bad);
	void (*close)(struct pn_sweep_backend *be);
};

struct pn_sweep_backend {
	const struct pn_sweep_ops *ops;
	char name[32];
	int algos[PN_SWEEP_MAX_ALGOS];
	int nalgos;
	int skips_said;		/* pn_sweep_run: its skipped algorithms were said */
};

/* A size's time over the ranks (nccl-tests' -a 3, 0, 1, 2). */
enum pn_sweep_time {
	PN_SWEEP_TIME_MAX = 0,	/* the slowest rank's (the default) */
	PN_SWEEP_TIME_RANK0,	/* rank 0's */
	PN_SWEEP_TIME_MEAN,	/* the mean */
	PN_SWEEP_TIME_MIN,	/* the fastest rank's */
};

struct pn_sweep {
	/* in */
	struct pn_comm *comm;	/* the job: rank, nranks, the rendezvous */
	enum pn_coll_kind kind;	/* the collective (pn_sweep_init: allreduce) */
	int root;		/* broadcast's and reduce's root */
	int agg;		/* calls per iteration, nccl-tests' -m (pn_sweep_init: 1) */
	enum pn_dtype dtype;
	enum pn_redop op;
	const uint64_t *sizes;
	size_t nsizes;
	/* iters: the timed calls of a size, spread over the blocks (at least
	 * one each); PN_TIMING_ITERS_AUTO: by size; 0: the check only.
	 * blocks: timed blocks of a size (pn_sweep_init: PN_TIMING_BLOCKS).
	 * warmup: untimed calls first */
	int iters, blocks, warmup, check;
	/* fresh_input: every rank rewrites its input before each timed call
	 * and only the calls are timed (the host backend) */
	int fresh_input;
	uint64_t seed;
	int keep;		/* keep the rows (the presenting rank: plot, tuning, ratios) */
	enum pn_sweep_time time_of; /* a size's time over the ranks */
	struct pn_sweep_sink sink;
	/* out, over every pn_sweep_run */
	struct pn_sweep_row *rows;
	size_t nrows, caprows;
	uint64_t wrong;		/* wrong values of every series */
	uint64_t differ;	/* rank outputs unlike rank 0's, every series */
	double worst_avg;	/* smallest average busbw of a series; INFINITY: none ran */
	int sink_err;		/* the presenting rank's sink.row() error, on every rank */
};

/* The sizes from min to max, stepping by factor (> 1) or else by step, each
 * rounded down to whole elements of es bytes; -E2BIG beyond
 * PN_SWEEP_MAX_SIZES of them.  free() *out. */
int pn_sweep_sizes(uint64_t min, uint64_t max, uint64_t step, double factor, size_t es,
		   uint64_t **out, size_t *n);
/* The sizes v[0..*n) of a collective k over nranks ranks as its rows carry
 * them (a whole number of es-byte elements, per rank where the size is the
 * whole buffer: pn_coll_count_for_bytes), each once: a size that rounds to
 * its predecessor's row is dropped and *n shrinks.  nccl-tests prints a row
 * per step, repeats included; a repeated row measures nothing new and
 * weighs twice in the average busbw. */
void pn_sweep_distinct(enum pn_coll_kind k, size_t es, int nranks, uint64_t *v, size_t *n);

/* The time over n ranks' times t[0], t[stride bytes], ... as time_of says. */
double pn_sweep_time_over(const double *t, size_t stride, int n, enum pn_sweep_time time_of);
/*
 * The blocks over the ranks: rank r's block b is t[r * stride bytes + b];
 * each block's time over the ranks (time_of) into per_block[b], and their
 * median, fastest and slowest into st.
 */
struct pn_timing_stat;
void pn_sweep_blocks_over(const double *t, size_t stride, int nranks, int nblocks,
			  enum pn_sweep_time time_of, double *per_block, struct pn_timing_stat *st);
/* The timed blocks of a size (s->blocks, PN_TIMING_BLOCKS when not set) and
 * the calls in each (base/timing.h's rule on s->iters, times s->agg). */
int pn_sweep_blocks(const struct pn_sweep *s);
int pn_sweep_calls(const struct pn_sweep *s, size_t bytes);
/* Set the results of s to none, time_of, blocks, kind (allreduce), root and
 * agg to their defaults; the other inputs are the caller's. */
void pn_sweep_init(struct pn_sweep *s);
/* Collective: every series of backend be.  0 or a negative errno (message
 * in pn_errmsg). */
/* Every algorithm of be the job can run (those it cannot are said to
 * sink.skip, once per backend); -EINVAL when it can run none of them. */
int pn_sweep_run(struct pn_sweep *s, struct pn_sweep_backend *be);
/* Whether be can run one of its algorithms at least, as pn_sweep_run asks
 * (not collective): 0, or -EINVAL with the reason. */
int pn_sweep_runnable(struct pn_sweep_backend *be);
void pn_sweep_release(struct pn_sweep *s);

double pn_sweep_busbw(double algbw, int nranks);
/* busbw of algbw for collective k on nranks (nccl-tests' bus factor;
 * allreduce as pn_sweep_busbw). */
double pn_sweep_kind_busbw(enum pn_coll_kind k, double algbw, int nranks);

/*
 * The planned memory of this host's nlocal ranks of nranks (src/engine/mem.h):
 * the node segment; with the host backend (host_bytes: -e, 0 without it) a
 * send and a receive buffer each in /dev/shm, and one-shot's scratch for
 * in-place runs (auto runs one-shot up to PN_TUNE_ONE_SHOT_MAX, with a tuning
 * file, tuned set, at any size); FIFOs to the ranks on other hosts, or to all when a
 * transport other than shm is forced.
 */
struct pn_mem_job;
void pn_sweep_mem_job(struct pn_mem_job *mj, int nlocal, int nranks, const char *transport,
		      int nchan, uint64_t host_bytes, const enum pn_algo *algos, int nalgos,
		      int tuned);

/* The host rows' fastest correct algorithm at each size, out of place (ip
 * 0) or in place (ip 1): what ran in that mode (ring where none ran).
 * Returns 0, or 1 + the index of the first size where none ran right. */
size_t pn_sweep_best(const struct pn_sweep *s, int ip, size_t *bytes, enum pn_algo *best);

/* The CSV file of the rows: a header line, then one line per row (a write
 * error shows when the file is committed, src/base/ofile.h). */
/* Whether two rows belong to one series (backend and algorithm). */
/*
 * The ratio table's reference: the backend that penny is compared with, of
 * the comma-separated list that produced rows (nccl when it did, else the
 * first); NULL when fewer than two backends produced rows.  At each size
 * the reference is that backend's fastest series there (out of place): NCCL
 * default or NCCL symmetric, whichever won; NULL if it has no timed row.
 */
const char *pn_sweep_ref_backend(const struct pn_sweep *sw, const char *backends);

/*
 * The allreduce verdict, one rule for allreduce-test and check: any wrong
 * value fails, then any rank output unlike rank 0's, then a bus bandwidth
 * (GB/s) not at least min_busbw (min_busbw < 0 or NaN: no floor; a NaN
 * busbw is below any floor).  0 passed; 1 failed, with why (len bytes;
 * "" when passed).
 */
int pn_sweep_verdict(uint64_t wrong, uint64_t differ, double busbw, double min_busbw, char *why,
		     size_t len);
const struct pn_sweep_row *pn_sweep_ref_row(const struct pn_sweep *sw, const char *ref,
					    size_t bytes);
int pn_sweep_same_series(const struct pn_sweep_row *a, const struct pn_sweep_row *b);
/* A row of the ratio table: a series' row against the reference's fastest
 * row of its size, out of place; time_ratio below 1 and busbw_ratio above
 * 1 are faster (NAN where the reference's is 0). */
struct pn_sweep_ratio {
	const struct pn_sweep_row *row, *ref;
	double time_ratio, busbw_ratio;
};
/* Every series but the reference backend ref's, in order of appearance,
 * each row with a reference row of its size: *n of them into *out (free()).
 * 0 or -ENOMEM. */
int pn_sweep_ratios(const struct pn_sweep *sw, const char *ref, struct pn_sweep_ratio **out,
		    size_t *n);
/* --plot: one series per backend and algorithm, out-of-place busbw and time
 * against size, as SVG into f (base/plot.h). */
int pn_sweep_plot(const struct pn_sweep *sw, FILE *f, const char *title);
/* --tune-out: the best algorithm per size as a tuning table into f. */
int pn_sweep_tune_save(const struct pn_sweep *sw, FILE *f, const char *name, int nranks,
		       int nnodes);
/* The header of collective k's rows: allreduce's 22 columns; the others
 * add the table's root (-1 where the collective has none). */
void pn_sweep_csv_header(FILE *f, enum pn_coll_kind k);
/* A row of s's collective; wrong and differ are empty where the table says
 * N/A (without s->check; differ where the ranks hold different outputs). */
void pn_sweep_csv_row(FILE *f, const struct pn_sweep_row *row, const struct pn_sweep *s);
/*
 * The presenting rank: a stop (SIGTERM, SIGINT, SIGHUP) ends its output with
 * cut(arg, "stopped by signal 15 (Terminated)") in the stop's thread, when
 * it has no end yet (base/stop.h: the sink's calls and the caller's writes
 * take turns with it, pn_stop_hold), then the signal's action as it was
 * before (a self-launched rank's: its job cleaned up) ends the process; an
 * output that blocks holds it 3 s at most (then SIGALRM ends it).  Start it
 * before any thread; 0 or a negative errno (the actions stand).
 */
int pn_sweep_stop_start(void (*cut)(void *arg, const char *why), void *arg);
/* The redop column of collective k: the op's name where k reduces, else
 * "none" (nccl-tests'). */
const char *pn_sweep_redop_name(enum pn_coll_kind k, enum pn_redop op);

/* The host engine's allreduce over coll, the algorithms of algos (enum
 * pn_algo), its buffers of max_bytes registered now. */
int pn_sweep_host_open(struct pn_sweep_backend **out, struct pn_coll *coll,
		       const enum pn_algo *algos, int nalgos, size_t max_bytes);
/* The host engine's other collectives (collrun.h) over coll, the algorithms
 * of algos (enum pn_calgo; PN_CALGO_AUTO the tuning table's), each buffer
 * of max_bytes registered now, for collective kind (the sweep's); the rows
 * of auto say in ran what it ran. */
int pn_sweep_coll_open(struct pn_sweep_backend **out, struct pn_coll *coll,
		       enum pn_coll_kind kind, const enum pn_calgo *algos, int nalgos,
		       size_t max_bytes);
/* Whether every rank of collective k ends with the same output (allreduce,
 * allgather, broadcast): only then are the ranks' outputs compared (differ). */
int pn_sweep_same_output(enum pn_coll_kind k);

/*
 * A GPU plugin's allreduce, or another collective (kind; src/gpu/gpucoll.h),
 * opened on every rank.
 * algos: --algo's comma list (auto, one-shot, two-shot, ring, all); graph:
 * calls per CUDA graph (0: none); dev/ndev: the device of each local rank
 * (ndev < 0: the local rank's), gpus the list as written; log: the plugin's
 * log lines.  Any rank's failure fails every rank with the first failing
 * rank's message.
 */
/*
 * The GPU path across nodes' knobs (gpu/gpucoll.h), as the command read
 * and checked them from the environment (PENNY_XNODE, _TRANSPORT, _NIC,
 * _CHUNK, _SLOTS, _WHOLE_MAX, _SOCKETS, _QPS, _LL); 0 or NULL: unset.  A
 * knob that is not valid is not applied but said in bad, which
 * pn_sweep_gpu_open reports as every rank's error.
 */
struct pn_xnode_env {
	int off;			/* PENNY_XNODE=0: the host-staged path */
	const char *transport;		/* tcp, shm, verbs, auto */
	const char *nic;		/* dev or dev:port */
	uint64_t chunk, slots, whole_max, sockets, qps, ll;
	int ll_off;			/* PENNY_XNODE_LL=0: never */
	char bad[160];
};
/*
 * The knobs' values as the command read them (NULL: unset), in the order
 * PENNY_XNODE, _TRANSPORT, _NIC, _CHUNK, _WHOLE_MAX, _LL, _SLOTS, _SOCKETS,
 * _QPS, checked into x; the first knob that is not valid is said in x->bad.
 */
#define PN_XNODE_NKNOBS 9
void pn_xnode_env_parse(struct pn_xnode_env *x, const char *const v[PN_XNODE_NKNOBS]);

struct pn_sweep_gpu_cfg {
	const char *name;
	const char *algos;
	int graph;
	const char *gpus;
	const int *dev;
	int ndev;
	int share;	/* --share-gpus: ranks of one node may share a GPU (a warning) */
	void (*log)(void *arg, int level, const char *msg);
	void *log_arg;
	const struct pn_xnode_env *xnode;	/* NULL: every knob unset */
	int no_mem_check;	/* PENNY_MEM_CHECK=0 (gpucoll.h) */
	/* the collective (allreduce: 0); another runs the plugin's member of it
	 * (gpucoll.h), its own algorithm (algos: auto or all) */
	enum pn_coll_kind kind;
};
int pn_sweep_gpu_open(struct pn_sweep_backend **out, struct pn_coll *coll,
		      const struct pn_sweep_gpu_cfg *cfg);
/* The GPU backend's plugin as it describes itself on every rank: nranks
 * strings of PN_SWEEP_DESC_LEN bytes in *all (free() it). */
#define PN_SWEEP_DESC_LEN 256
int pn_sweep_gpu_describe(struct pn_sweep_backend *be, char **all);
int pn_sweep_gpu_hierarchical(const struct pn_sweep_backend *be);
uint64_t pn_sweep_gpu_xnode_ll(const struct pn_sweep_backend *be);
/* Across nodes GPU-driven: the proxy's transport; NULL otherwise. */
const char *pn_sweep_gpu_xnode(const struct pn_sweep_backend *be);
int pn_sweep_gpu_graph(const struct pn_sweep_backend *be);
/* The host memory a rank of a GPU backend stages its check through, at
 * most: another collective's whole input or output (coll: 1) of max_bytes,
 * the allreduce's output digest in pieces of PN_SWEEP_GPU_PIECE; 0 without
 * the check.  For the planned memory (pn_mem_job's private_bytes). */
#define PN_SWEEP_GPU_PIECE ((uint64_t)16 << 20)
uint64_t pn_sweep_gpu_staged(int coll, int check, uint64_t max_bytes);

void pn_sweep_backend_close(struct pn_sweep_backend *be);

#endif
