/* SPDX-License-Identifier: MIT */
/*
 * The one timing rule (src/base/timing.h): the median, fastest and slowest
 * of the timed blocks, and the calls per block (given -n spread over the
 * blocks; without it, by size).
 */
#include "unit.h"

#include "base/timing.h"

TEST(the_median_of_odd_and_even_counts_min_and_max)
{
	const double odd[5] = { 9, 1, 5, 3, 7 }, even[4] = { 4, 1, 3, 2 }, one = 6;
	double copy[5] = { 9, 1, 5, 3, 7 };
	struct pn_timing_stat st;

	pn_timing_stat(odd, 5, &st);
	CHECK(st.median == 5 && st.min == 1 && st.max == 9);
	pn_timing_stat(even, 4, &st);
	CHECK(st.median == 2.5 && st.min == 1 && st.max == 4);
	pn_timing_stat(&one, 1, &st);
	CHECK(st.median == 6 && st.min == 6 && st.max == 6);
	pn_timing_stat(odd, 0, &st);
	CHECK(st.median == 0 && st.min == 0 && st.max == 0);
	/* the caller's values stay in their order */
	pn_timing_stat(copy, 5, &st);
	CHECK(copy[0] == 9 && copy[1] == 1 && copy[4] == 7);
}

/* A stall in one block of five moves the maximum, not the median. */
TEST(one_stalled_block_leaves_the_median)
{
	const double calm[5] = { 10.2, 10.0, 10.1, 9.9, 10.3 };
	const double stall[5] = { 10.2, 10.0, 510.1, 9.9, 10.3 };
	struct pn_timing_stat a, b;

	pn_timing_stat(calm, 5, &a);
	pn_timing_stat(stall, 5, &b);
	CHECK(a.median == 10.1 && b.median == 10.2);
	CHECK(b.max == 510.1 && b.min == 9.9);
}

TEST(calls_per_block_when_n_is_given)
{
	CHECK_EQ_INT(pn_timing_calls(1024, 20, 5), 4);
	CHECK_EQ_INT(pn_timing_calls(1024, 21, 5), 5);	/* rounds up */
	CHECK_EQ_INT(pn_timing_calls(1024, 1, 5), 1);	/* at least one per block */
	CHECK_EQ_INT(pn_timing_calls(1u << 30, 3, 5), 1);	/* the size does not matter */
	CHECK_EQ_INT(pn_timing_calls(1024, 0, 5), 0);	/* -n 0: nothing timed */
	CHECK_EQ_INT(pn_timing_calls(1024, 1000000, 5), 200000);
	CHECK_EQ_INT(pn_timing_calls(1024, 7, 0), 7);	/* no blocks count as one */
}

TEST(calls_per_block_by_size_without_n)
{
	long long a = PN_TIMING_ITERS_AUTO;

	CHECK_EQ_INT(pn_timing_calls(0, a, 5), 32);
	CHECK_EQ_INT(pn_timing_calls(8, a, 5), 32);
	CHECK_EQ_INT(pn_timing_calls(1u << 20, a, 5), 32);
	CHECK_EQ_INT(pn_timing_calls(2u << 20, a, 5), 16);
	CHECK_EQ_INT(pn_timing_calls(3u << 20, a, 5), 10);
	CHECK_EQ_INT(pn_timing_calls(4u << 20, a, 5), 8);
	CHECK_EQ_INT(pn_timing_calls(8u << 20, a, 5), 4);
	CHECK_EQ_INT(pn_timing_calls(16u << 20, a, 5), 2);
	CHECK_EQ_INT(pn_timing_calls(128u << 20, a, 5), 2);
	CHECK_EQ_INT(pn_timing_calls(1ull << 40, a, 5), 2);
	/* the same whatever the blocks: the blocks multiply the calls */
	CHECK_EQ_INT(pn_timing_calls(8, a, 20), 32);
}

int main(void)
{
	RUN(the_median_of_odd_and_even_counts_min_and_max);
	RUN(one_stalled_block_leaves_the_median);
	RUN(calls_per_block_when_n_is_given);
	RUN(calls_per_block_by_size_without_n);
	return unit_done();
}
