/* SPDX-License-Identifier: MIT */
/*
 * The allreduce sweep's reference for the ratio table (src/harness/sweep.h):
 * nccl when it produced rows, else the first backend that did; at each size
 * the reference backend's fastest out-of-place series there (NCCL default
 * or NCCL symmetric, whichever won); the ratio table's rows against it.
 */
#define _GNU_SOURCE
#include "unit.h"

#include "harness/sweep.h"
#include "base/timing.h"

#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

static struct pn_sweep_row rows[8];

static void row(size_t i, const char *be, const char *algo, size_t bytes, double us)
{
	memset(&rows[i], 0, sizeof(rows[i]));
	snprintf(rows[i].backend, sizeof(rows[i].backend), "%s", be);
	snprintf(rows[i].algo, sizeof(rows[i].algo), "%s", algo);
	rows[i].bytes = bytes;
	rows[i].time_us[0] = us;
	rows[i].time_us[1] = us / 10; /* in place: never the one compared */
}

static struct pn_sweep sample(void)
{
	struct pn_sweep s;

	memset(&s, 0, sizeof(s));
	row(0, "cuda", "auto", 1024, 3.0);
	row(1, "cuda", "auto", 1 << 20, 13.0);
	row(2, "nccl", "auto", 1024, 9.0);
	row(3, "nccl", "auto", 1 << 20, 17.0);
	row(4, "nccl", "symmetric", 1024, 4.2);
	row(5, "nccl", "symmetric", 1 << 20, 20.8);
	row(6, "nccl", "symmetric", 4096, 0);	/* not timed (-n 0): never the reference */
	s.rows = rows;
	s.nrows = 7;
	return s;
}

TEST(the_reference_is_nccls_fastest_algorithm_at_each_size)
{
	struct pn_sweep s = sample();
	const char *ref = pn_sweep_ref_backend(&s, "cuda,nccl");
	const struct pn_sweep_row *r;

	CHECK(ref && !strcmp(ref, "nccl"));
	r = pn_sweep_ref_row(&s, ref, 1024);
	CHECK(r == &rows[4]);	/* symmetric wins small */
	r = pn_sweep_ref_row(&s, ref, 1 << 20);
	CHECK(r == &rows[3]);	/* default wins at 1 MiB */
	CHECK(pn_sweep_ref_row(&s, ref, 4096) == NULL);
	CHECK(pn_sweep_ref_row(&s, ref, 12345) == NULL);
}

TEST(without_nccl_the_first_backend_with_rows_and_none_alone)
{
	struct pn_sweep s = sample();
	const char *ref;

	ref = pn_sweep_ref_backend(&s, "host,cuda,nccl");	/* host made no rows */
	CHECK(ref && !strcmp(ref, "nccl"));
	s.nrows = 2;	/* cuda's rows alone */
	CHECK(pn_sweep_ref_backend(&s, "cuda,nccl") == NULL);
	row(2, "fake", "auto", 1024, 5.0);
	s.nrows = 3;
	ref = pn_sweep_ref_backend(&s, "cuda,fake");
	CHECK(ref && !strcmp(ref, "cuda"));
	CHECK(pn_sweep_ref_row(&s, ref, 1024) == &rows[0]);
}

/* One verdict rule for allreduce-test and check: wrong values first, then
 * outputs that differ, then a floor (none when negative or NaN). */
TEST(ratio_rows_each_series_against_the_reference)
{
	struct pn_sweep s = sample();
	struct pn_sweep_ratio *rt;
	size_t n;

	/* a host series after cuda's, one size without a reference row */
	row(7, "host", "ring", 1024, 6.0);
	rows[7].busbw[0] = 2;
	rows[4].busbw[0] = 4;
	s.nrows = 8;
	CHECK_EQ_INT(pn_sweep_ratios(&s, "nccl", &rt, &n), 0);
	CHECK_EQ_INT(n, 3);
	CHECK(rt[0].row == &rows[0] && rt[0].ref == &rows[4]);
	CHECK(fabs(rt[0].time_ratio - 3.0 / 4.2) < 1e-12 && rt[0].busbw_ratio == 0);
	/* the reference without a busbw: no ratio */
	CHECK(rt[1].row == &rows[1] && rt[1].ref == &rows[3] && isnan(rt[1].busbw_ratio));
	CHECK(rt[2].row == &rows[7] && rt[2].ref == &rows[4]);
	CHECK(fabs(rt[2].busbw_ratio - 0.5) < 1e-12);
	free(rt);
	/* against cuda: nccl's and host's rows of the sizes cuda timed */
	CHECK_EQ_INT(pn_sweep_ratios(&s, "cuda", &rt, &n), 0);
	CHECK_EQ_INT(n, 5);
	CHECK(rt[0].row == &rows[2] && rt[1].row == &rows[3] && rt[2].row == &rows[4]);
	CHECK(rt[3].row == &rows[5] && rt[4].row == &rows[7]);
	free(rt);
}

TEST(the_verdict_rule)
{
	char why[160];

	CHECK_EQ_INT(pn_sweep_verdict(0, 0, 10, -1, why, sizeof(why)), 0);
	CHECK_STR(why, "");
	CHECK_EQ_INT(pn_sweep_verdict(0, 0, 10, 10, why, sizeof(why)), 0);
	CHECK_EQ_INT(pn_sweep_verdict(0, 0, 9.5, 10, why, sizeof(why)), 1);
	CHECK_STR(why, "average bus bandwidth 9.50 GB/s is below 10.00 GB/s");
	CHECK_EQ_INT(pn_sweep_verdict(0, 0, NAN, 1, why, sizeof(why)), 1);
	CHECK_EQ_INT(pn_sweep_verdict(0, 0, NAN, NAN, why, sizeof(why)), 0);
	CHECK_EQ_INT(pn_sweep_verdict(0, 2, 1, 10, why, sizeof(why)), 1);
	CHECK_STR(why, "2 rank outputs not bit-identical to rank 0's");
	CHECK_EQ_INT(pn_sweep_verdict(3, 2, 1, 10, why, sizeof(why)), 1);
	CHECK_STR(why, "3 wrong values");
}

/* nccl-tests' -a: a size's time over the ranks (here every other double). */
TEST(the_time_over_the_ranks_as_nccl_tests_average_says)
{
	const double t[] = { 4, -1, 9, -1, 2, -1, 5, -1 };
	size_t stride = 2 * sizeof(double);

	CHECK(pn_sweep_time_over(t, stride, 4, PN_SWEEP_TIME_MAX) == 9);
	CHECK(pn_sweep_time_over(t, stride, 4, PN_SWEEP_TIME_MIN) == 2);
	CHECK(pn_sweep_time_over(t, stride, 4, PN_SWEEP_TIME_MEAN) == 5);
	CHECK(pn_sweep_time_over(t, stride, 4, PN_SWEEP_TIME_RANK0) == 4);
	CHECK(pn_sweep_time_over(t, stride, 1, PN_SWEEP_TIME_MIN) == 4);
}

/*
 * Blocks x ranks: each block's time over the ranks first (as -a says), then
 * the median, fastest and slowest of the blocks.  Rank r's 5 blocks are a
 * row of t; rank 2 stalls in block 3.
 */
TEST(the_blocks_over_the_ranks_then_their_median)
{
	const double t[3][5] = {
		{ 10, 11, 12, 10, 11 },
		{ 12, 10, 11, 11, 10 },
		{ 11, 12, 10, 900, 12 },
	};
	double per[5];
	struct pn_timing_stat st;

	pn_sweep_blocks_over(&t[0][0], sizeof(t[0]), 3, 5, PN_SWEEP_TIME_MAX, per, &st);
	CHECK(per[0] == 12 && per[1] == 12 && per[2] == 12 && per[3] == 900 && per[4] == 12);
	CHECK(st.median == 12 && st.min == 12 && st.max == 900);
	pn_sweep_blocks_over(&t[0][0], sizeof(t[0]), 3, 5, PN_SWEEP_TIME_MIN, per, &st);
	CHECK(per[3] == 10 && st.median == 10 && st.max == 10 && st.min == 10);
	pn_sweep_blocks_over(&t[0][0], sizeof(t[0]), 3, 5, PN_SWEEP_TIME_RANK0, per, &st);
	CHECK(st.median == 11 && st.min == 10 && st.max == 12);
	pn_sweep_blocks_over(&t[0][0], sizeof(t[0]), 3, 5, PN_SWEEP_TIME_MEAN, per, &st);
	CHECK(fabs(per[3] - 307) < 1e-9 && fabs(st.median - 11) < 1e-9 && st.max == per[3]);
	/* one rank: its own blocks */
	pn_sweep_blocks_over(&t[2][0], sizeof(t[2]), 1, 5, PN_SWEEP_TIME_MAX, per, &st);
	CHECK(st.median == 12 && st.max == 900);
	/* nothing timed (-n 0) */
	pn_sweep_blocks_over(&t[0][0], sizeof(t[0]), 3, 0, PN_SWEEP_TIME_MAX, per, &st);
	CHECK(st.median == 0 && st.max == 0);
}

/* The sweep's blocks and the calls in each, from its iters and blocks. */
TEST(blocks_and_calls_of_a_sweep)
{
	struct pn_sweep s;

	memset(&s, 0, sizeof(s));
	pn_sweep_init(&s);
	CHECK_EQ_INT(pn_sweep_blocks(&s), 5);
	s.iters = PN_TIMING_ITERS_AUTO;
	CHECK_EQ_INT(pn_sweep_calls(&s, 8), 32);
	CHECK_EQ_INT(pn_sweep_calls(&s, 128u << 20), 2);
	s.iters = 20;
	CHECK_EQ_INT(pn_sweep_calls(&s, 128u << 20), 4);
	s.blocks = 7;
	CHECK_EQ_INT(pn_sweep_blocks(&s), 7);
	CHECK_EQ_INT(pn_sweep_calls(&s, 8), 3);
	s.blocks = 0; /* not set: the default */
	CHECK_EQ_INT(pn_sweep_blocks(&s), 5);
	s.blocks = 1000000;
	CHECK_EQ_INT(pn_sweep_blocks(&s), PN_TIMING_MAX_BLOCKS);
	s.iters = 0;
	CHECK_EQ_INT(pn_sweep_calls(&s, 8), 0);
}

/* PENNY_XNODE_* (pn_xnode_env_parse): values in range taken, the first bad
 * knob said, 0 for PENNY_XNODE_LL "never" */
TEST(the_xnode_knobs_checked)
{
	struct pn_xnode_env x;
	const char *v[PN_XNODE_NKNOBS] = { NULL };

	pn_xnode_env_parse(&x, v);
	CHECK(!x.off && !x.transport && !x.nic && !x.chunk && !x.ll_off && !x.bad[0]);
	v[0] = "0", v[1] = "tcp", v[2] = "mlx5_0:1", v[3] = "1M", v[5] = "0", v[8] = "8";
	pn_xnode_env_parse(&x, v);
	CHECK(x.off && !strcmp(x.transport, "tcp") && !strcmp(x.nic, "mlx5_0:1"));
	CHECK(x.chunk == 1u << 20 && x.ll_off && x.qps == 8 && !x.bad[0]);
	v[3] = "17";
	pn_xnode_env_parse(&x, v);
	CHECK_STR(x.bad, "PENNY_XNODE_CHUNK='17': a size from 4096 to 67108864 bytes");
	v[3] = "4104";
	pn_xnode_env_parse(&x, v);
	CHECK_STR(x.bad, "PENNY_XNODE_CHUNK: a multiple of 16 bytes");
	v[3] = NULL, v[2] = "mlx5_0:256";
	pn_xnode_env_parse(&x, v);
	CHECK(strstr(x.bad, "PENNY_XNODE_NIC='mlx5_0:256'") == x.bad);
	v[2] = NULL, v[1] = "udp";
	pn_xnode_env_parse(&x, v);
	CHECK_STR(x.bad, "PENNY_XNODE_TRANSPORT='udp': tcp, shm, verbs or auto");
	v[1] = NULL, v[0] = "2";
	pn_xnode_env_parse(&x, v);
	CHECK_STR(x.bad, "PENNY_XNODE='2': 0 or 1");
	v[0] = NULL, v[8] = "9";
	pn_xnode_env_parse(&x, v);
	CHECK_STR(x.bad, "PENNY_XNODE_QPS='9': a whole number from 1 to 8");
}

int main(void)
{
	RUN(the_reference_is_nccls_fastest_algorithm_at_each_size);
	RUN(without_nccl_the_first_backend_with_rows_and_none_alone);
	RUN(ratio_rows_each_series_against_the_reference);
	RUN(the_verdict_rule);
	RUN(the_time_over_the_ranks_as_nccl_tests_average_says);
	RUN(the_blocks_over_the_ranks_then_their_median);
	RUN(blocks_and_calls_of_a_sweep);
	RUN(the_xnode_knobs_checked);
	return unit_done();
}
