/* SPDX-License-Identifier: MIT */
/*
 * The allreduce test data on the host (fill, reference, check, poison):
 * the formula of plugins/include/penny_data.h, bit-identical to what the
 * GPU plugins fill and check.
 */
#ifndef PENNY_TESTDATA_H
#define PENNY_TESTDATA_H

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

#endif
