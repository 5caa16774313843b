/* SPDX-License-Identifier: MIT */
/* allreduce-test's options as the harness checks them (src/harness/aropts.c):
 * the backend, algorithm and GPU lists, the sizes and --plan against them,
 * nccl-tests' letters, the sweep's parameters, the agreed parameters, and
 * rank 0's output files written and committed, or left as they were; what
 * two self-launched ranks settle before the work, and who says what fails. */
#define _GNU_SOURCE
#include "unit.h"
#include "t_ranks.h"

#include "base/log.h"
#include "base/timing.h"
#include "engine/boot.h"
#include "engine/comm.h"
#include "harness/plansched.h"
#include "harness/aropts.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static struct pn_aropts defaults(void)
{
	return (struct pn_aropts){ .minbytes = 8, .maxbytes = 1024, .stepbytes = 256,
				   .min_busbw = -1, .iters = 2, .check = 1, .algo = "auto",
				   .average = 3, .backends = "host" };
}

TEST(backends_each_once_and_gpu_options_need_a_gpu)
{
	struct pn_aropts o = defaults();
	struct pn_arback bk;

	CHECK_EQ_INT(pn_aropts_backends(&o, &bk), 0);
	CHECK(bk.has_host && bk.ngpu == 0 && bk.ndev == -1);
	o.backends = "host,cuda,nccl";
	CHECK_EQ_INT(pn_aropts_backends(&o, &bk), 0);
	CHECK(bk.has_host && bk.ngpu == 2);
	o.backends = "cuda,cuda";
	CHECK_EQ_INT(pn_aropts_backends(&o, &bk), -EINVAL);
	CHECK_STR(pn_errmsg(-EINVAL), "--backend cuda is listed twice");
	o.backends = "Cuda";
	CHECK_EQ_INT(pn_aropts_backends(&o, &bk), -EINVAL);
	o.backends = ",";
	CHECK_EQ_INT(pn_aropts_backends(&o, &bk), -EINVAL);
	CHECK_STR(pn_errmsg(-EINVAL), "--backend is empty");
	o.backends = "a,b,c,d,e,f,g,h,i";
	CHECK_EQ_INT(pn_aropts_backends(&o, &bk), -EINVAL);
	o.backends = "host";
	o.graph = 4;
	CHECK_EQ_INT(pn_aropts_backends(&o, &bk), -EINVAL);
	o.graph = 0;
	o.gpus = "0,1";
	CHECK_EQ_INT(pn_aropts_backends(&o, &bk), -EINVAL);
	o.backends = "cuda";
	CHECK_EQ_INT(pn_aropts_backends(&o, &bk), 0);
	CHECK(bk.ndev == 2 && bk.dev[0] == 0 && bk.dev[1] == 1);
	CHECK(pn_aropts_has_host("cuda,host") && !pn_aropts_has_host("cuda,hostx"));
}

TEST(gpus_are_indices)
{
	static const char *const bad[] = { "", "x", "1,", "1,,2", "1024", "-1", "2a" };
	struct pn_aropts o = defaults();
	struct pn_arback bk;
	size_t i;

	o.backends = "cuda";
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		o.gpus = bad[i];
		CHECK_EQ_INT(pn_aropts_backends(&o, &bk), -EINVAL);
	}
	o.gpus = "1,";
	pn_aropts_backends(&o, &bk);
	CHECK_STR(pn_errmsg(-EINVAL), "--gpus '1,' ends with a comma");
	o.gpus = "1023,0,7";
	CHECK_EQ_INT(pn_aropts_backends(&o, &bk), 0);
	CHECK(bk.ndev == 3 && bk.dev[0] == 1023 && bk.dev[2] == 7);
}

TEST(algos_once_all_and_gpu_only_names)
{
	enum pn_algo a[PN_SWEEP_MAX_ALGOS];
	int n = -1;

	CHECK_EQ_INT(pn_aropts_algos("ring,one-shot", 1, a, &n), 0);
	CHECK(n == 2 && a[0] == PN_ALGO_RING && a[1] == PN_ALGO_ONE_SHOT);
	CHECK(!pn_aropts_multiring(a, n));
	CHECK_EQ_INT(pn_aropts_algos("all", 1, a, &n), 0);
	CHECK_EQ_INT(n, PN_NALGOS);
	CHECK(pn_aropts_multiring(a, n));
	CHECK_EQ_INT(pn_aropts_algos("ring,all", 1, a, &n), -EINVAL);
	CHECK_STR(pn_errmsg(-EINVAL), "--algo 'ring,all' names ring twice");
	CHECK_EQ_INT(pn_aropts_algos("nosuch", 1, a, &n), -EINVAL);
	/* symmetric is a GPU plugin's: skipped without the host, refused with it */
	CHECK_EQ_INT(pn_aropts_algos("symmetric,ring", 0, a, &n), 0);
	CHECK(n == 1 && a[0] == PN_ALGO_RING);
	CHECK_EQ_INT(pn_aropts_algos("symmetric", 1, a, &n), -EINVAL);
}

static const char *param(const struct pn_job_param *p, int n, const char *name)
{
	int i;

	for (i = 0; i < n; i++)
		if (!strcmp(p[i].name, name))
			return p[i].value;
	return NULL;
}

TEST(params_name_what_changes_the_data)
{
	struct pn_aropts o = defaults();
	struct pn_job_param p[PN_JOB_MAX_PARAMS];
	enum pn_algo a[2] = { PN_ALGO_RING, PN_ALGO_TWO_SHOT };
	int n = pn_aropts_params(&o, PN_FLOAT, PN_SUM, a, 2, p);

	CHECK(n > 0 && n <= PN_JOB_MAX_PARAMS);
	CHECK_STR(param(p, n, "-i"), "256");
	CHECK_STR(param(p, n, "-f"), "none");
	CHECK_STR(param(p, n, "-A"), "ring,two-shot");
	CHECK_STR(param(p, n, "--transport"), "probe");
	CHECK_STR(param(p, n, "--min-busbw"), "none");
	o.factor = 2;
	o.min_busbw = 1.5;
	o.backends = "nccl";
	o.algo = "symmetric";
	n = pn_aropts_params(&o, PN_FLOAT, PN_SUM, a, 2, p);
	CHECK_STR(param(p, n, "-f"), "2");
	CHECK_STR(param(p, n, "-i"), "unused (-f)");
	CHECK_STR(param(p, n, "-A"), "symmetric");
	CHECK_STR(param(p, n, "--min-busbw"), "1.5");
}

static struct pn_sweep *one_row_sweep(void)
{
	static struct pn_sweep sw;
	static struct pn_sweep_row row;
	static uint64_t sizes[1] = { 1024 };

	pn_sweep_init(&sw);
	sw.sizes = sizes;
	sw.nsizes = 1;
	sw.dtype = PN_FLOAT;
	sw.op = PN_SUM;
	memset(&row, 0, sizeof(row));
	snprintf(row.backend, sizeof(row.backend), "host");
	snprintf(row.algo, sizeof(row.algo), "ring");
	row.host_algo = row.host_algo_ip = PN_ALGO_RING;
	row.bytes = 1024;
	row.count = 256;
	row.time_us[0] = row.time_us[1] = 10;
	row.busbw[0] = row.busbw[1] = 1;
	row.algbw[0] = row.algbw[1] = 1;
	sw.rows = &row;
	sw.nrows = 1;
	return &sw;
}

static long file_size(const char *path)
{
	struct stat st;

	return stat(path, &st) ? -1 : (long)st.st_size;
}

TEST(outputs_committed_after_the_run_or_left_alone)
{
	char dir[] = "/tmp/t_aropts.XXXXXX", csv[64], plot[64], tune[64];
	struct pn_aropts o = defaults();
	struct pn_arout w;
	FILE *f;

	CHECK(mkdtemp(dir) != NULL);
	snprintf(csv, sizeof(csv), "%s/a.csv", dir);
	snprintf(plot, sizeof(plot), "%s/a.svg", dir);
	snprintf(tune, sizeof(tune), "%s/a.tune", dir);
	o.csv = csv;
	o.plot = plot;
	/* aborted: nothing appears */
	memset(&w, 0, sizeof(w));
	CHECK_EQ_INT(pn_arout_open(&w, &o), 0);
	CHECK(w.csv != NULL);
	pn_arout_row(&w, one_row_sweep()->rows, one_row_sweep());
	pn_arout_abort(&w);
	CHECK(file_size(csv) < 0 && file_size(plot) < 0);
	/* finished: both written */
	memset(&w, 0, sizeof(w));
	CHECK_EQ_INT(pn_arout_open(&w, &o), 0);
	pn_arout_row(&w, one_row_sweep()->rows, one_row_sweep());
	pn_arout_row(&w, one_row_sweep()->rows, one_row_sweep());
	CHECK_EQ_INT(pn_arout_finish(&w, &o, one_row_sweep(), 2, 1), 0);
	CHECK(w.csv == NULL && !w.csv_of && !w.plot_of);
	CHECK(file_size(csv) > 0 && file_size(plot) > 0);
	/* the header once, before the first row */
	f = fopen(csv, "r");
	CHECK(f != NULL);
	if (f) {
		char line[512];
		int n = 0, head = 0;

		while (fgets(line, sizeof(line), f)) {
			n++;
			head += !strncmp(line, "algo,size,", 10);
		}
		CHECK(n == 3 && head == 1);
		fclose(f);
	}
	pn_arout_abort(&w);
	/* an output that cannot be opened is named */
	o.tune_out = "/nonexistent-dir/x.tune";
	memset(&w, 0, sizeof(w));
	CHECK(pn_arout_open(&w, &o) < 0);
	CHECK(strstr(pn_errmsg(-ENOENT), "--tune-out") != NULL);
	pn_arout_abort(&w);
	o.tune_out = tune;
	memset(&w, 0, sizeof(w));
	CHECK_EQ_INT(pn_arout_open(&w, &o), 0);
	CHECK_EQ_INT(pn_arout_finish(&w, &o, one_row_sweep(), 2, 1), 0);
	f = fopen(tune, "r");
	CHECK(f != NULL);
	if (f)
		fclose(f);
	unlink(csv);
	unlink(plot);
	unlink(tune);
	rmdir(dir);
}

TEST(sizes_and_plan_against_the_backends)
{
	struct pn_aropts o = { .minbytes = 8, .maxbytes = 1024, .algo = "auto", .min_busbw = -1,
			       .iters = PN_TIMING_ITERS_AUTO };
	struct pn_arback host = { .has_host = 1 }, both = { .has_host = 1, .ngpu = 1 };

	CHECK_EQ_INT(pn_aropts_check(&o, &host), 0);
	CHECK_STR(o.algo, "auto");
	/* a bandwidth gate over nothing timed */
	o.min_busbw = 0;
	o.iters = 0;
	CHECK_EQ_INT(pn_aropts_check(&o, &host), -EINVAL);
	CHECK_STR(pn_errmsg(-EINVAL), "--min-busbw needs timed calls of some bytes: not with -n 0");
	o.min_busbw = -1;
	o.iters = PN_TIMING_ITERS_AUTO;
	o.minbytes = 2048;
	CHECK_EQ_INT(pn_aropts_check(&o, &host), -EINVAL);
	CHECK_STR(pn_errmsg(-EINVAL), "-b 2048 is larger than -e 1024");
	o.minbytes = 8;
	o.plan = "p.json";
	CHECK_EQ_INT(pn_aropts_check(&o, &both), -EINVAL);
	CHECK(strstr(pn_errmsg(-EINVAL), "run them in separate jobs") != NULL);
	o.algo = "ring";
	CHECK_EQ_INT(pn_aropts_check(&o, &host), -EINVAL);
	CHECK_STR(pn_errmsg(-EINVAL), "--plan runs the multiring algorithm; it cannot run --algo ring");
	/* the host runs a plan as multiring */
	o.algo = "auto";
	CHECK_EQ_INT(pn_aropts_check(&o, &host), 0);
	CHECK_STR(o.algo, "multiring");
}

TEST(nccl_tests_letters_take_what_penny_does)
{
	struct pn_ar_nccl_tests t = { .nthreads = 1, .ngpus = 1, .agg_iters = 1, .run_cycles = 1,
				      .parallel_init = 1 };
	char w[200];

	CHECK_EQ_INT(pn_aropts_nccl_tests(&t, 1, 0, "auto", w, sizeof(w)), 0);
	CHECK_STR(w, "");
	t.nthreads = 4;
	CHECK_EQ_INT(pn_aropts_nccl_tests(&t, 1, 0, "auto", w, sizeof(w)), -EINVAL);
	CHECK(!strncmp(pn_errmsg(-EINVAL), "-t 4: not supported by penny: it runs one rank", 46));
	t.nthreads = 1;
	t.ngpus = 8;
	CHECK_EQ_INT(pn_aropts_nccl_tests(&t, 1, 0, "auto", w, sizeof(w)), -EINVAL);
	CHECK(!strncmp(pn_errmsg(-EINVAL), "-g 8: not supported by penny:", 29));
	t.ngpus = 1;
	t.run_cycles = 0;
	CHECK_EQ_INT(pn_aropts_nccl_tests(&t, 1, 0, "auto", w, sizeof(w)), -EINVAL);
	CHECK(!strncmp(pn_errmsg(-EINVAL), "-N 0: not supported by penny:", 29));
	/* honoured: -N 3, -m 4; on the host -z, -C and -R 1 are what the engine does */
	t.run_cycles = 3;
	t.agg_iters = 4;
	t.blocking = 1;
	t.cputime = 1;
	t.reg = 1;
	CHECK_EQ_INT(pn_aropts_nccl_tests(&t, 1, 0, "auto", w, sizeof(w)), 0);
	CHECK_STR(w, "");
	/* GPU backends: -R 1 is refused, -z and -C change nothing: a warning */
	CHECK_EQ_INT(pn_aropts_nccl_tests(&t, 0, 1, "auto", w, sizeof(w)), -EINVAL);
	CHECK(!strncmp(pn_errmsg(-EINVAL), "-R 1: not supported by penny:", 29));
	t.reg = 0;
	CHECK_EQ_INT(pn_aropts_nccl_tests(&t, 0, 1, "auto", w, sizeof(w)), 0);
	CHECK(!strncmp(w, "-z 1 changes nothing penny can honour on GPU backends", 53));
	t.blocking = 0;
	CHECK_EQ_INT(pn_aropts_nccl_tests(&t, 1, 1, "auto", w, sizeof(w)), 0);
	CHECK(!strncmp(w, "-C 1 changes nothing", 20));
	t.cputime = 0;
	/* -R 2 is the nccl plugin's symmetric algorithm, nothing else */
	t.reg = 2;
	CHECK_EQ_INT(pn_aropts_nccl_tests(&t, 1, 0, "symmetric", w, sizeof(w)), -EINVAL);
	CHECK_EQ_INT(pn_aropts_nccl_tests(&t, 0, 1, "ring", w, sizeof(w)), -EINVAL);
	CHECK_EQ_INT(pn_aropts_nccl_tests(&t, 0, 1, "symmetric", w, sizeof(w)), 0);
}

TEST(types_and_ops_one_or_all_none_where_nothing_reduces)
{
	struct pn_artypes t;

	CHECK_EQ_INT(pn_aropts_types("half", "max", PN_COLL_ALLREDUCE, &t), 0);
	CHECK(t.ndtypes == 1 && t.dtypes[0] == PN_HALF && t.nops == 1 && t.ops[0] == PN_MAX);
	CHECK_EQ_INT(pn_aropts_types("all", "all", PN_COLL_REDUCE_SCATTER, &t), 0);
	CHECK(t.ndtypes == PN_NDTYPES && t.nops == PN_NREDOPS && t.ops[4] == (enum pn_redop)4);
	/* alltoall does not reduce: one pass whatever -o says */
	CHECK_EQ_INT(pn_aropts_types("all", "all", PN_COLL_ALLTOALL, &t), 0);
	CHECK(t.ndtypes == PN_NDTYPES && t.nops == 1);
	CHECK_STR(pn_sweep_redop_name(PN_COLL_ALLTOALL, t.ops[0]), "none");
	CHECK_STR(pn_sweep_redop_name(PN_COLL_REDUCE, PN_PROD), "prod");
	CHECK_EQ_INT(pn_aropts_types("float7", "sum", PN_COLL_ALLREDUCE, &t), -EINVAL);
	CHECK_EQ_INT(pn_aropts_types("float", "sqrt", PN_COLL_REDUCE, &t), -EINVAL);
	CHECK_EQ_INT(pn_aropts_types("float", "Al", PN_COLL_REDUCE, &t), -EINVAL);
}

TEST(coll_algorithms_those_of_the_collective)
{
	enum pn_calgo a[PN_SWEEP_MAX_ALGOS];
	int n;

	CHECK_EQ_INT(pn_aropts_calgos("all", PN_COLL_ALLTOALL, a, &n), 0);
	CHECK(n == 3 && a[0] == PN_CALGO_ONE_SHOT && a[1] == PN_CALGO_PAIRWISE &&
	      a[2] == PN_CALGO_BRUCK);
	CHECK_EQ_INT(pn_aropts_calgos("auto,all", PN_COLL_BROADCAST, a, &n), 0);
	CHECK(n == 4 && a[0] == PN_CALGO_AUTO);
	CHECK_EQ_INT(pn_aropts_calgos("ring,ring", PN_COLL_ALLGATHER, a, &n), -EINVAL);
	CHECK_STR(pn_errmsg(-EINVAL), "--algo 'ring,ring' names ring twice");
	CHECK_EQ_INT(pn_aropts_calgos("tree", PN_COLL_REDUCE, a, &n), -EINVAL);
	CHECK_STR(pn_errmsg(-EINVAL), "reduce has no algorithm 'tree' (it has auto, ring, one-shot)");
	CHECK_EQ_INT(pn_aropts_calgos("fastest", PN_COLL_REDUCE, a, &n), -EINVAL);
	CHECK_EQ_INT(pn_aropts_calgos(",", PN_COLL_REDUCE, a, &n), -EINVAL);
}

TEST(bus_factor_and_size_per_kind)
{
	/* nccl-tests: allgather (n-1)/n of the whole buffer; broadcast 1 */
	CHECK(fabs(pn_sweep_kind_busbw(PN_COLL_ALLGATHER, 4.0, 4) - 3.0) < 1e-12);
	CHECK(fabs(pn_sweep_kind_busbw(PN_COLL_BROADCAST, 4.0, 4) - 4.0) < 1e-12);
	CHECK(fabs(pn_sweep_kind_busbw(PN_COLL_ALLREDUCE, 4.0, 4) - 6.0) < 1e-12);
	CHECK(fabs(pn_sweep_kind_busbw(PN_COLL_ALLREDUCE, 4.0, 1) - 4.0) < 1e-12);
	CHECK(pn_sweep_same_output(PN_COLL_ALLGATHER) && !pn_sweep_same_output(PN_COLL_ALLTOALL));
}

TEST(sweep_parameters_and_time_over_the_ranks)
{
	static const enum pn_sweep_time want[] = { PN_SWEEP_TIME_RANK0, PN_SWEEP_TIME_MEAN,
						   PN_SWEEP_TIME_MIN, PN_SWEEP_TIME_MAX };
	struct pn_aropts o = { .iters = 7, .warmup = 2, .check = 1, .seed = 42 };
	struct pn_sweep sw;
	int a;

	for (a = 0; a < 4; a++) {
		pn_sweep_init(&sw);
		o.average = a;
		pn_aropts_sweep(&o, &sw);
		CHECK(sw.iters == 7 && sw.warmup == 2 && sw.check == 1 && sw.seed == 42);
		CHECK_EQ_INT(sw.time_of, want[a]);
		pn_sweep_release(&sw);
	}
}

/*
 * Two self-launched ranks settle a job (pn_aropts_prepare): round 0 agrees;
 * 1: rank 1's -n differs; 2: rank 0's --csv cannot be written; 3: the
 * --plan cannot be read; 4: the host's memory cannot hold -e 1T.  Each
 * rank writes "ret rc say channels message".
 */
static void prep_child(struct pn_boot_cfg *cfg, int round, int fd)
{
	enum pn_algo algos[1] = { PN_ALGO_MULTIRING };
	struct pn_aropts o = { .minbytes = 8, .maxbytes = 1024, .stepbytes = 1024, .iters = 5,
			       .algo = "multiring", .backends = "host" };
	struct pn_arprep p = { .dtype = PN_FLOAT, .op = PN_SUM, .algos = algos,
			       .nalgos = 1, .has_host = 1 };
	struct pn_comm_cfg cc = { 0 };
	struct pn_arout w = { 0 };
	struct pn_boot *b = NULL;
	char line[700];
	int ret, n;

	ret = pn_boot_cfg_from_env(cfg);
	if (!ret)
		ret = pn_boot_init(&b, cfg);
	if (!ret) {
		if (round == 1 && cfg->rank == 1)
			o.iters = 6;
		if (round == 2)
			o.csv = "/nonexistent-dir/out.csv";
		if (round == 3)
			o.plan = "/nonexistent-dir/plan.json";
		if (round == 4) {
			o.maxbytes = 1ull << 40;
			p.mem_check = 1;
		}
		ret = pn_aropts_prepare(&o, b, &p, &w, &cc);
	}
	n = snprintf(line, sizeof(line), "%d %d %d %d %d %s\n", cfg->rank, ret, p.rc, p.say,
		     cc.nchannels, ret ? pn_errmsg(ret) : "-");
	if (write(fd, line, (size_t)n) != n)
		ret = -EIO;
	pn_arout_abort(&w);
	pn_planned_free(p.plan);
	pn_boot_free(b);
	_exit(0);
}

static void prep_round(int round, char out[2][T_RANKS_LINE])
{
	t_ranks_run(2, prep_child, round, out);
}

TEST(ranks_settle_the_job_or_fail_together)
{
	char out[2][T_RANKS_LINE], want[600];

	prep_round(0, out);
	CHECK_STR(out[0], "0 0 0 2 -");
	CHECK_STR(out[1], "0 0 0 2 -");
	/* a parameter differs: rank 0 and the rank that differs say it */
	prep_round(1, out);
	snprintf(want, sizeof(want), "%d 2 1 0 ranks disagree on -n: rank 0 5, rank 1 6", -EINVAL);
	CHECK_STR(out[0], want);
	CHECK_STR(out[1], want);
	/* rank 0's file: rank 0 says it, every rank exits 2 */
	prep_round(2, out);
	CHECK(!strncmp(out[0], "-2 2 1 0 ", 9) && strstr(out[0], "out.csv") != NULL);
	CHECK(!strncmp(out[1], "-2 2 0 0 ", 9));
	/* the plan: the lowest rank says it, named */
	prep_round(3, out);
	CHECK(strstr(out[0], " 2 1 2 --plan: ") != NULL);
	CHECK(strstr(out[1], " 2 0 2 --plan: ") != NULL);
	/* the memory: the lowest rank that cannot hold it */
	prep_round(4, out);
	CHECK(!strncmp(out[0], "-", 1) && strstr(out[0], " 2 1 2 ") != NULL);
	CHECK(strstr(out[1], " 2 0 2 ") != NULL);
}

/* Once the job's size is known: -r a rank of it, and --min-busbw over a
 * largest size of one element (per rank where the size is the whole
 * buffer) of the largest type: a row of 0 bytes averages 0 GB/s. */
TEST(the_job_size_checks_the_root_and_the_bandwidth_gate)
{
	struct pn_aropts o = defaults();
	struct pn_artypes t;

	CHECK_EQ_INT(pn_aropts_types("float", "sum", PN_COLL_ALLGATHER, &t), 0);
	o.types = &t;
	o.kind = PN_COLL_BROADCAST;
	o.root = 2;
	CHECK_EQ_INT(pn_aropts_job(&o, 3), 0);
	CHECK_EQ_INT(pn_aropts_job(&o, 2), -EINVAL);
	CHECK_STR(pn_errmsg(-EINVAL), "-r 2: the root is not a rank of the 2 (0..1)");
	o.kind = PN_COLL_ALLGATHER;	/* no root: -r is not looked at */
	CHECK_EQ_INT(pn_aropts_job(&o, 2), 0);
	o.root = 0;
	o.min_busbw = 1;
	o.minbytes = 1, o.maxbytes = 7, o.stepbytes = 2;	/* 1 3 5 7 */
	CHECK_EQ_INT(pn_aropts_job(&o, 1), 0);
	CHECK_EQ_INT(pn_aropts_job(&o, 2), -EINVAL);
	CHECK_STR(pn_errmsg(-EINVAL), "--min-busbw needs timed calls of some bytes: the largest "
		  "size, 7 B, is below one float per rank (8 B: allgather over 2 ranks)");
	o.kind = PN_COLL_ALLREDUCE;
	CHECK_EQ_INT(pn_aropts_job(&o, 8), 0);
	o.maxbytes = 6;	/* 1 3 5 with -i 2: the largest is 5 */
	CHECK_EQ_INT(pn_aropts_job(&o, 8), 0);
	o.maxbytes = 4;
	CHECK_EQ_INT(pn_aropts_job(&o, 8), -EINVAL);
	CHECK_STR(pn_errmsg(-EINVAL), "--min-busbw needs timed calls of some bytes: the largest "
		  "size, 3 B, is below one float (4 B)");
	CHECK_EQ_INT(pn_aropts_types("all", "sum", PN_COLL_ALLREDUCE, &t), 0);
	o.maxbytes = 7;
	CHECK_EQ_INT(pn_aropts_job(&o, 8), -EINVAL);
	CHECK(strstr(pn_errmsg(-EINVAL), "below one int64 (8 B)") != NULL);
	o.min_busbw = -1;	/* no gate: rows of 0 bytes are nccl-tests' */
	CHECK_EQ_INT(pn_aropts_job(&o, 8), 0);
}

/* The CSV row says what the table says: nothing where it says N/A. */
TEST(csv_rows_leave_what_was_not_checked_empty)
{
	struct pn_sweep_row rw = { .backend = "host", .algo = "ring", .dtype = PN_FLOAT,
				   .bytes = 8, .count = 2, .blocks = 5, .calls = 1,
				   .wrong = { 3, 4 }, .differ = { 1, 2 } };
	struct pn_sweep s;
	char buf[512] = "";
	FILE *f;

	pn_sweep_init(&s);
	s.check = 1;
	s.kind = PN_COLL_ALLGATHER;
	f = fmemopen(buf, sizeof(buf) - 1, "w");
	CHECK(f != NULL);
	if (!f)
		return;
	pn_sweep_csv_row(f, &rw, &s);
	s.kind = PN_COLL_REDUCE_SCATTER;	/* ranks hold different outputs */
	pn_sweep_csv_row(f, &rw, &s);
	s.check = 0;
	pn_sweep_csv_row(f, &rw, &s);
	fclose(f);
	CHECK(strstr(buf, ",0.0000,3,0.000,0.0000,0.0000,4,host,1,2,0.000,") != NULL);
	CHECK(strstr(buf, ",0.0000,3,0.000,0.0000,0.0000,4,host,,,0.000,") != NULL);
	CHECK(strstr(buf, ",0.0000,,0.000,0.0000,0.0000,,host,,,0.000,") != NULL);
}

int main(void)
{
	RUN(backends_each_once_and_gpu_options_need_a_gpu);
	RUN(gpus_are_indices);
	RUN(algos_once_all_and_gpu_only_names);
	RUN(params_name_what_changes_the_data);
	RUN(outputs_committed_after_the_run_or_left_alone);
	RUN(sizes_and_plan_against_the_backends);
	RUN(nccl_tests_letters_take_what_penny_does);
	RUN(types_and_ops_one_or_all_none_where_nothing_reduces);
	RUN(coll_algorithms_those_of_the_collective);
	RUN(bus_factor_and_size_per_kind);
	RUN(sweep_parameters_and_time_over_the_ranks);
	RUN(ranks_settle_the_job_or_fail_together);
	RUN(the_job_size_checks_the_root_and_the_bandwidth_gate);
	RUN(csv_rows_leave_what_was_not_checked_empty);
	return unit_done();
}
