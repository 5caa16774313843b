/* SPDX-License-Identifier: MIT */
/*
 * The collectives' names, buffers, in-place conventions, nccl-tests' sizes
 * and bus factors, and their test data: each rank's exact expected result.
 */
#define _GNU_SOURCE
#include "unit.h"

#include "engine/collkind.h"
#include "engine/testdata.h"
#include "base/util.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>

static int near(double a, double b)
{
	return fabs(a - b) < 1e-12;
}

TEST(names_round_trip)
{
	enum pn_coll_kind k;
	enum pn_calgo a;
	int i;

	for (i = 0; i < PN_NCOLLS; i++) {
		CHECK(!pn_coll_parse(pn_coll_name((enum pn_coll_kind)i), &k));
		CHECK_EQ_INT(k, i);
	}
	/* nccl-tests' spellings */
	CHECK(!pn_coll_parse("all_gather", &k) && k == PN_COLL_ALLGATHER);
	CHECK(!pn_coll_parse("reduce_scatter", &k) && k == PN_COLL_REDUCE_SCATTER);
	CHECK(!pn_coll_parse("ReduceScatter", &k) && k == PN_COLL_REDUCE_SCATTER);
	CHECK(!pn_coll_parse("all-reduce", &k) && k == PN_COLL_ALLREDUCE);
	CHECK(!pn_coll_parse("AlltoAll", &k) && k == PN_COLL_ALLTOALL);
	CHECK(pn_coll_parse("gather", &k) == -EINVAL);
	CHECK(pn_coll_parse("", &k) == -EINVAL);
	/* a long name is not cut into a known one */
	CHECK(pn_coll_parse("allgather________________________________x", &k) == -EINVAL);
	CHECK_STR(pn_coll_name(PN_NCOLLS), "?");
	for (i = 0; i < PN_NCALGOS; i++) {
		CHECK(!pn_calgo_parse(pn_calgo_name((enum pn_calgo)i), &a));
		CHECK_EQ_INT(a, i);
	}
	CHECK(!pn_calgo_parse("auto", &a) && a == PN_CALGO_AUTO);
	CHECK(pn_calgo_parse("two-shot", &a) == -EINVAL);
}

TEST(algorithms_of_each_collective)
{
	int k, a, n;

	for (k = 0; k < PN_NCOLLS; k++) {
		for (a = 0, n = 0; a < PN_NCALGOS; a++)
			n += pn_calgo_valid((enum pn_coll_kind)k, (enum pn_calgo)a);
		/* allreduce has its own (pn_algo); every other has one at least */
		CHECK(k == PN_COLL_ALLREDUCE ? n == 0 : n >= 1);
		CHECK(!pn_calgo_valid((enum pn_coll_kind)k, PN_CALGO_AUTO));
	}
	CHECK(pn_calgo_valid(PN_COLL_ALLTOALL, PN_CALGO_BRUCK));
	CHECK(pn_calgo_valid(PN_COLL_ALLTOALL, PN_CALGO_PAIRWISE));
	CHECK(!pn_calgo_valid(PN_COLL_ALLTOALL, PN_CALGO_RING));
	CHECK(pn_calgo_valid(PN_COLL_BROADCAST, PN_CALGO_TREE));
	/* reduce has no tree: its pairwise order would differ from the ring's */
	CHECK(!pn_calgo_valid(PN_COLL_REDUCE, PN_CALGO_TREE));
	CHECK(!pn_calgo_valid(PN_NCOLLS, PN_CALGO_RING));
	CHECK(pn_coll_reduces(PN_COLL_REDUCE_SCATTER) && pn_coll_reduces(PN_COLL_REDUCE) &&
	      pn_coll_reduces(PN_COLL_ALLREDUCE) && !pn_coll_reduces(PN_COLL_ALLGATHER));
	CHECK(pn_coll_rooted(PN_COLL_BROADCAST) && pn_coll_rooted(PN_COLL_REDUCE) &&
	      !pn_coll_rooted(PN_COLL_SENDRECV));
}

/* nccl-tests' *GetCollByteCount: send and receive elements, in-place offsets. */
TEST(buffers_and_in_place)
{
	CHECK_EQ_INT(pn_coll_send_count(PN_COLL_ALLGATHER, 10, 4), 10);
	CHECK_EQ_INT(pn_coll_recv_count(PN_COLL_ALLGATHER, 10, 4), 40);
	CHECK_EQ_INT(pn_coll_send_count(PN_COLL_REDUCE_SCATTER, 10, 4), 40);
	CHECK_EQ_INT(pn_coll_recv_count(PN_COLL_REDUCE_SCATTER, 10, 4), 10);
	CHECK_EQ_INT(pn_coll_send_count(PN_COLL_ALLTOALL, 10, 4), 40);
	CHECK_EQ_INT(pn_coll_recv_count(PN_COLL_ALLTOALL, 10, 4), 40);
	CHECK_EQ_INT(pn_coll_send_count(PN_COLL_BROADCAST, 10, 4), 10);
	CHECK_EQ_INT(pn_coll_recv_count(PN_COLL_REDUCE, 10, 4), 10);
	CHECK_EQ_INT(pn_coll_recv_count(PN_COLL_SENDRECV, 10, 4), 10);
	CHECK_EQ_INT(pn_coll_recv_count(PN_COLL_ALLREDUCE, 10, 4), 10);
	/* allgather: sendbuf = recvbuf + rank * count; reducescatter: recvbuf = sendbuf + rank * count */
	CHECK_EQ_INT(pn_coll_inplace_send_off(PN_COLL_ALLGATHER, 10, 3), 30);
	CHECK_EQ_INT(pn_coll_inplace_recv_off(PN_COLL_ALLGATHER, 10, 3), 0);
	CHECK_EQ_INT(pn_coll_inplace_recv_off(PN_COLL_REDUCE_SCATTER, 10, 3), 30);
	CHECK_EQ_INT(pn_coll_inplace_send_off(PN_COLL_REDUCE_SCATTER, 10, 3), 0);
	CHECK_EQ_INT(pn_coll_inplace_send_off(PN_COLL_ALLTOALL, 10, 3), 0);
	CHECK_EQ_INT(pn_coll_inplace_recv_off(PN_COLL_BROADCAST, 10, 3), 0);
}

/* doc/PERFORMANCE.md of nccl-tests: factors and the size S of algbw = S / t. */
TEST(bus_factors_and_sizes)
{
	int n;

	for (n = 1; n <= 9; n++) {
		double f = (double)(n - 1) / n;

		CHECK(near(pn_coll_bus_factor(PN_COLL_ALLREDUCE, n), 2 * f));
		CHECK(near(pn_coll_bus_factor(PN_COLL_ALLGATHER, n), f));
		CHECK(near(pn_coll_bus_factor(PN_COLL_REDUCE_SCATTER, n), f));
		CHECK(near(pn_coll_bus_factor(PN_COLL_ALLTOALL, n), f));
		CHECK(near(pn_coll_bus_factor(PN_COLL_BROADCAST, n), 1));
		CHECK(near(pn_coll_bus_factor(PN_COLL_REDUCE, n), 1));
		CHECK(near(pn_coll_bus_factor(PN_COLL_SENDRECV, n), 1));
	}
	CHECK(near(pn_coll_bus_factor(PN_COLL_ALLREDUCE, 8), 1.75));
	CHECK(near(pn_coll_bus_factor(PN_COLL_ALLGATHER, 4), 0.75));
	CHECK(near(pn_coll_bus_factor(PN_COLL_ALLGATHER, 0), 0));
	/* the whole buffer for allgather, reducescatter, alltoall: count * esize * n */
	CHECK(near(pn_coll_algbw_bytes(PN_COLL_ALLGATHER, 256, 4, 4), 4096));
	CHECK(near(pn_coll_algbw_bytes(PN_COLL_REDUCE_SCATTER, 256, 4, 4), 4096));
	CHECK(near(pn_coll_algbw_bytes(PN_COLL_ALLTOALL, 256, 4, 4), 4096));
	CHECK(near(pn_coll_algbw_bytes(PN_COLL_ALLREDUCE, 256, 4, 4), 1024));
	CHECK(near(pn_coll_algbw_bytes(PN_COLL_BROADCAST, 256, 4, 4), 1024));
	CHECK(near(pn_coll_algbw_bytes(PN_COLL_REDUCE, 256, 4, 4), 1024));
	CHECK(near(pn_coll_algbw_bytes(PN_COLL_SENDRECV, 256, 2, 4), 512));
	/* and back: the count a sweep's size means, rounded down */
	CHECK_EQ_INT(pn_coll_count_for_bytes(PN_COLL_ALLGATHER, 4096, 4, 4), 256);
	CHECK_EQ_INT(pn_coll_count_for_bytes(PN_COLL_ALLTOALL, 4100, 4, 4), 256);
	CHECK_EQ_INT(pn_coll_count_for_bytes(PN_COLL_BROADCAST, 4096, 4, 4), 1024);
	CHECK_EQ_INT(pn_coll_count_for_bytes(PN_COLL_REDUCE, 7, 2, 4), 3);
	CHECK_EQ_INT(pn_coll_count_for_bytes(PN_COLL_ALLGATHER, 4096, 0, 4), 0);
}

/* What rank r must receive, built from whole inputs and the allreduce reference. */
static void by_hand(const struct pn_testdata_coll *d, char *want, char *tmp)
{
	size_t c = d->count, es = pn_dtype_size(d->dtype);
	int n = d->nranks, r = d->rank, j;
	enum pn_redop op = pn_coll_reduces(d->kind) ? d->op : PN_SUM;

	switch (d->kind) {
	case PN_COLL_ALLGATHER:
		for (j = 0; j < n; j++)
			pn_testdata_fill(want + (size_t)j * c * es, c, d->dtype, op, j, d->seed);
		break;
	case PN_COLL_REDUCE_SCATTER:
		pn_testdata_expected(tmp, c * (size_t)n, d->dtype, d->op, n, d->seed);
		memcpy(want, tmp + (size_t)r * c * es, c * es);
		break;
	case PN_COLL_ALLTOALL:
		for (j = 0; j < n; j++) {
			pn_testdata_fill(tmp, c * (size_t)n, d->dtype, op, j, d->seed);
			memcpy(want + (size_t)j * c * es, tmp + (size_t)r * c * es, c * es);
		}
		break;
	case PN_COLL_BROADCAST:
		pn_testdata_fill(want, c, d->dtype, op, d->root, d->seed);
		break;
	case PN_COLL_REDUCE:
		if (r == d->root)
			pn_testdata_expected(want, c, d->dtype, d->op, n, d->seed);
		else if (d->inplace)
			pn_testdata_fill(want, c, d->dtype, op, r, d->seed);
		else
			pn_testdata_poison(want, c * es);
		break;
	case PN_COLL_SENDRECV:
		pn_testdata_fill(want, c, d->dtype, op, (r + n - 1) % n, d->seed);
		break;
	default:
		pn_testdata_expected(want, c, d->dtype, d->op, n, d->seed);
		break;
	}
}

/* Every collective's reference equals the one built by hand, checks to 0
 * wrong, and counts a poisoned buffer and a changed element. */
TEST(test_data_of_each_collective)
{
	static const size_t counts[] = { 1, 7, 300, 1500 };
	char *want = malloc(5 * 1500 * 8 + 64), *got = malloc(5 * 1500 * 8 + 64);
	char *tmp = malloc(5 * 1500 * 8 + 64);
	int k, n, r, t, ci, ip;

	for (k = 0; k < PN_NCOLLS; k++)
		for (n = 1; n <= 5; n++)
			for (r = 0; r < n; r++)
				for (ip = 0; ip < 2; ip++) {
					struct pn_testdata_coll d = { .kind = (enum pn_coll_kind)k, .rank = r,
								      .nranks = n, .inplace = ip };
					size_t rc, es;

					ci = (k + n + r + ip) % 4;
					t = (k * 3 + n + r) % PN_NDTYPES;
					d.dtype = (enum pn_dtype)t;
					d.op = (enum pn_redop)((k + r + ip) % PN_NREDOPS);
					d.root = (n + k) % n;
					d.count = counts[ci];
					d.seed = 77 + (uint64_t)k;
					es = pn_dtype_size(d.dtype);
					rc = pn_coll_recv_count(d.kind, d.count, n);
					by_hand(&d, want, tmp);
					memset(got, 0x5a, rc * es + 8);
					pn_testdata_coll_expected(&d, got);
					CHECK(!memcmp(got, want, rc * es));
					CHECK((unsigned char)got[rc * es] == 0x5a);
					CHECK_EQ_INT(pn_testdata_coll_check(&d, want), 0);
					/* one changed element, then a poisoned buffer */
					want[(rc / 2) * es] ^= 0x10;
					CHECK_EQ_INT(pn_testdata_coll_check(&d, want), 1);
					pn_testdata_poison(want, rc * es);
					if (d.kind == PN_COLL_REDUCE && r != d.root && !ip)
						CHECK_EQ_INT(pn_testdata_coll_check(&d, want), 0);
					else if (es > 1) /* no 8-bit sum can meet 0xA5 here */
						CHECK_EQ_INT(pn_testdata_coll_check(&d, want), rc);
				}
	free(want);
	free(got);
	free(tmp);
}

/* The input of a collective is rank r's fill of its send count; in place, the
 * send part of the one buffer. */
TEST(fill_at_is_a_window_of_fill)
{
	static char whole[4000 * 8], part[4000 * 8];
	int t;

	for (t = 0; t < PN_NDTYPES; t++) {
		size_t es = pn_dtype_size((enum pn_dtype)t);

		pn_testdata_fill(whole, 4000, (enum pn_dtype)t, PN_PROD, 3, 9);
		pn_testdata_fill_at(part, 1234, 2000, (enum pn_dtype)t, PN_PROD, 3, 9);
		CHECK(!memcmp(part, whole + 1234 * es, 2000 * es));
		CHECK_EQ_INT(pn_testdata_check_fill_at(part, 1234, 2000, (enum pn_dtype)t, PN_PROD, 3, 9), 0);
		CHECK(pn_testdata_check_fill_at(part, 1234, 2000, (enum pn_dtype)t, PN_PROD, 2, 9) > 100);
		pn_testdata_expected(whole, 4000, (enum pn_dtype)t, PN_MAX, 5, 9);
		pn_testdata_expected_at(part, 1025, 2000, (enum pn_dtype)t, PN_MAX, 5, 9);
		CHECK(!memcmp(part, whole + 1025 * es, 2000 * es));
		CHECK_EQ_INT(pn_testdata_check_at(part, 1025, 2000, (enum pn_dtype)t, PN_MAX, 5, 9), 0);
	}
	{
		struct pn_testdata_coll d = { .kind = PN_COLL_ALLGATHER, .dtype = PN_FLOAT, .rank = 2,
					      .nranks = 4, .count = 10, .inplace = 1, .seed = 5 };

		/* allgather in place: fill the rank's block, the others arrive */
		pn_testdata_coll_expected(&d, whole);
		pn_testdata_coll_fill(&d, part);
		CHECK(!memcmp(part, whole + 2 * 10 * 4, 10 * 4));
	}
}

int main(void)
{
	RUN(names_round_trip);
	RUN(algorithms_of_each_collective);
	RUN(buffers_and_in_place);
	RUN(bus_factors_and_sizes);
	RUN(test_data_of_each_collective);
	RUN(fill_at_is_a_window_of_fill);
	return unit_done();
}
