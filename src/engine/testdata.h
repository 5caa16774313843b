/* SPDX-License-Identifier: MIT */
/*
 * The test data on the host (fill, reference, check, poison): the formula
 * of plugins/include/penny_data.h, bit-identical to what the GPU plugins
 * fill and check; and for every collective (collkind.h) each rank's input
 * and the exact result each rank must hold.
 */
#ifndef PENNY_TESTDATA_H
#define PENNY_TESTDATA_H

#include "engine/collkind.h"
#include "engine/dtype.h"

#include <stddef.h>
#include <stdint.h>

/*
 * Test data: element i on rank r is a small integer derived from
 * pn_testdata_hash(seed, r, i), so every sum and product is exact in every type
 * and in any order (bfloat16 sums up to 32 ranks, half up to 256), and the
 * exact result can be computed without the other ranks' buffers.
 *   prod:  h % 8 == 0 ? 2 : (signed type (floats too) && (h & 16)) ? -1 : 1
 *   other: signed (floats too): (int)(h % 17) - 8;  unsigned: h % 9
 */
uint32_t pn_testdata_hash(uint64_t seed, int rank, size_t i);
void pn_testdata_fill(void *buf, size_t count, enum pn_dtype t, enum pn_redop op, int rank,
		  uint64_t seed);
/* The reference result over ranks 0..nranks-1 (avg divided as pn_reduce_finish does). */
void pn_testdata_expected(void *buf, size_t count, enum pn_dtype t, enum pn_redop op, int nranks,
		      uint64_t seed);
/* Number of elements not bit-identical to the reference; no allocation. */
size_t pn_testdata_check(const void *buf, size_t count, enum pn_dtype t, enum pn_redop op,
		     int nranks, uint64_t seed);
/* 0xA5 bytes: not a value any reduction of the test data produces (see testdata.c). */
void pn_testdata_poison(void *buf, size_t bytes);

/*
 * The same from element first on: buf holds elements [first, first +
 * count) of rank's input (fill), of the reference (expected, check), and
 * pn_testdata_check_fill_at counts the elements of buf that differ from
 * rank's input there.
 */
void pn_testdata_fill_at(void *buf, size_t first, size_t count, enum pn_dtype t,
			 enum pn_redop op, int rank, uint64_t seed);
void pn_testdata_expected_at(void *buf, size_t first, size_t count, enum pn_dtype t,
			     enum pn_redop op, int nranks, uint64_t seed);
size_t pn_testdata_check_at(const void *buf, size_t first, size_t count, enum pn_dtype t,
			    enum pn_redop op, int nranks, uint64_t seed);
size_t pn_testdata_check_fill_at(const void *buf, size_t first, size_t count, enum pn_dtype t,
				 enum pn_redop op, int rank, uint64_t seed);

/*
 * Every collective: rank r's send buffer is its input (pn_testdata_fill of
 * its send count, with the op for the reductions, as for sum otherwise);
 * the receive buffer must then hold exactly:
 *   allreduce      the reference (pn_testdata_expected)
 *   allgather      block j = rank j's input
 *   reducescatter  the reference's elements [r * count, (r + 1) * count)
 *   alltoall       block j = rank j's elements [r * count, (r + 1) * count)
 *   broadcast      the root's input
 *   reduce         on the root the reference; elsewhere the buffer as it
 *                  was: its own input in place, else the caller's poison
 *   sendrecv       rank r - 1's input (mod nranks)
 * In place (collkind.h), fill writes the send part of the one buffer.
 * pn_testdata_coll_check counts the elements that are not bit-identical;
 * it allocates nothing.
 */
struct pn_testdata_coll {
	enum pn_coll_kind kind;
	enum pn_dtype dtype;
	enum pn_redop op;	/* the reductions' */
	int rank, nranks, root;
	size_t count;		/* the collective's count (collkind.h) */
	int inplace;
	uint64_t seed;
};
void pn_testdata_coll_fill(const struct pn_testdata_coll *d, void *sendbuf);
void pn_testdata_coll_expected(const struct pn_testdata_coll *d, void *recvbuf);
size_t pn_testdata_coll_check(const struct pn_testdata_coll *d, const void *recvbuf);

#endif
