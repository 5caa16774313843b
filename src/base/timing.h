/* SPDX-License-Identifier: MIT */
/*
 * The one timing rule of every timed figure in penny (allreduce-test, bw,
 * check's rows): after a warm-up that the caller runs (it pays the lazy
 * set-up: connections, proxy threads, registration, first touch), the calls
 * are timed as several blocks back to back; each block gives one figure
 * (its time per call, or its rate), the figure reported is the median
 * block, and the fastest and slowest blocks are kept.  One slow block (a
 * stall, a neighbour's burst) moves the minimum or the maximum, never the
 * median: no figure rests on a single block.
 *
 * Calls per block: with an iteration count given (-n N), N calls spread
 * over the blocks, ceil(N / blocks) each (at least one); without one, by
 * size: PN_TIMING_BLOCK_BYTES / bytes calls, at least PN_TIMING_MIN_CALLS
 * and at most PN_TIMING_MAX_CALLS (32 calls up to 1 MiB, 16 at 2 MiB, 8 at
 * 4 MiB, 4 at 8 MiB, 2 from 16 MiB): small calls fill a block long enough
 * for the clock's resolution, big ones do not take forever.  Pure.
 */
#ifndef PENNY_TIMING_H
#define PENNY_TIMING_H

#include <stddef.h>
#include <stdint.h>

#define PN_TIMING_BLOCKS 5		/* timed blocks by default, and the fewest */
#define PN_TIMING_MAX_BLOCKS 100
#define PN_TIMING_BLOCK_BYTES (32ull << 20)
#define PN_TIMING_MIN_CALLS 2
#define PN_TIMING_MAX_CALLS 32
#define PN_TIMING_ITERS_AUTO (-1)	/* no iteration count given: by size */

/* The blocks of one measurement: the median (of an even count, the mean of
 * the two middle ones), the smallest and the largest. */
struct pn_timing_stat {
	double median, min, max;
};

/* The statistics of n block figures (n 0: all 0); v is not changed. */
void pn_timing_stat(const double *v, size_t n, struct pn_timing_stat *out);

/* Calls per block of a call of bytes bytes: iters PN_TIMING_ITERS_AUTO (or
 * any negative): by size; 0: 0 (nothing timed); else ceil(iters / blocks),
 * at least 1.  blocks below 1 count as 1. */
int pn_timing_calls(uint64_t bytes, long long iters, int blocks);

#endif
