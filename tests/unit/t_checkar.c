/* SPDX-License-Identifier: MIT */
/*
 * The allreduce check's pure parts (src/check/check_ar.h): allreduce-test's
 * JSON read back into a measurement, and the node's expectation from its
 * own slowest GPU-to-GPU copy.
 */
#define _GNU_SOURCE
#include "unit.h"

#include "base/verdict.h"
#include "check/check_ar.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

/* Every row's out-of-place busbw and size, the block extremes, the summary. */
TEST(parse)
{
	static const char ok[] =
		"{\"command\":\"allreduce-test\",\"nranks\":4,\"backend\":\"cuda\",\"results\":["
		"{\"size\":4096,\"oop\":{\"busbw\":1.5},\"ip\":{\"busbw\":9}},"
		"{\"size\":65536,\"oop\":{\"busbw\":41.25,\"time_us\":10,\"time_min_us\":8,"
		"\"time_max_us\":12.5},"
		"\"ip\":{\"busbw\":9}}],"
		"\"summary\":{\"wrong\":7,\"differ\":1}}";
	struct pn_ar_meas m;
	char why[160];

	CHECK_EQ_INT(pn_check_ar_parse(ok, strlen(ok), &m, why, sizeof(why)), 0);
	CHECK_STR(why, "");
	CHECK_EQ_INT(m.nsizes, 2);
	CHECK_EQ_INT(m.nranks, 4);
	CHECK_STR(m.backend, "cuda");
	CHECK(m.bytes[0] == 4096 && m.bytes[1] == 65536);
	CHECK(m.busbw[0] == 1.5 && m.busbw[1] == 41.25);
	CHECK(isnan(m.busbw_min[0]) && isnan(m.busbw_max[0]));
	/* allreduce-test's block times: the slowest block is the lowest rate */
	CHECK(fabs(m.busbw_min[1] - 33) < 1e-9 && fabs(m.busbw_max[1] - 51.5625) < 1e-9);
	CHECK(m.wrong == 7 && m.differ == 1);
}

/* What is not allreduce-test's output, or has no rate, says why. */
TEST(parse_refuses)
{
	static const struct {
		const char *json, *why;
	} bad[] = {
		{ "", "not allreduce-test's JSON" },
		{ "fake NCCL says hello\n{}", "not allreduce-test's JSON" },
		{ "{\"command\":\"bw\",\"results\":[]}", "no \"command\"" },
		{ "[1,2]", "no \"command\"" },
		{ "{\"command\":\"allreduce-test\",\"results\":[]}", "measured no size" },
		{ "{\"command\":\"allreduce-test\"}", "measured no size" },
		{ "{\"command\":\"allreduce-test\",\"results\":[{\"size\":8,\"oop\":{}}]}",
		  "no busbw and size" },
		{ "{\"command\":\"allreduce-test\",\"results\":[{\"size\":8,"
		  "\"oop\":{\"busbw\":\"fast\"}}]}", "no busbw and size" },
		{ "{\"command\":\"allreduce-test\",\"results\":[{\"size\":-8,"
		  "\"oop\":{\"busbw\":1}}]}", "no busbw and size" },
		{ "{\"command\":\"allreduce-test\",\"results\":[{\"size\":8,"
		  "\"oop\":{\"busbw\":-1}}]}", "no busbw and size" },
		{ "{\"command\":\"allreduce-test\",\"results\":[{\"size\":8,"
		  "\"oop\":{\"busbw\":1}},{\"size\":16}]}", "row 2 has no busbw" },
	};
	struct pn_ar_meas m;
	char why[160];
	size_t k;

	for (k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
		int ret = pn_check_ar_parse(bad[k].json, strlen(bad[k].json), &m, why, sizeof(why));

		if (ret != -EINVAL || !strstr(why, bad[k].why))
			fprintf(stderr, "case %zu (%s): %d %s\n", k, bad[k].json, ret, why);
		CHECK_EQ_INT(ret, -EINVAL);
		CHECK(strstr(why, bad[k].why) != NULL);
	}
}

static void add(struct pn_verdict_list *l, const char *check, const char *node, const char *target,
		double meas)
{
	pn_verdict_add(l, &(struct pn_verdict_in){
		.check = check, .node = node, .target = target, .verdict = PN_PASS,
		.measured = PN_VNUM(meas), .expected = PN_VNUM(1), .unit = "GB/s" });
}

/* The slowest GPU pair of this node, times the factor; host copies, other
 * nodes and other checks do not count. */
TEST(copy_expect)
{
	struct pn_verdict_list *l = pn_verdict_list_new();
	char src[128];
	double exp = 0;

	CHECK_EQ_INT(pn_check_ar_copy_expect(l, "n1", 0.75, &exp, src, sizeof(src)), -ENOENT);
	add(l, "gpu-copy", "n1", "GPU0:h2d", 50);
	add(l, "gpu-copy", "n2", "GPU0-GPU1", 100);
	add(l, "nic-bw", "n1", "GPU0-GPU1", 10);
	CHECK_EQ_INT(pn_check_ar_copy_expect(l, "n1", 0.75, &exp, src, sizeof(src)), -ENOENT);
	add(l, "gpu-copy", "n1", "GPU0-GPU1", 390);
	add(l, "gpu-copy", "n1", "GPU0-GPU2", 345.8);
	add(l, "gpu-copy", "n1", "GPU1-GPU2", 360);
	CHECK_EQ_INT(pn_check_ar_copy_expect(l, "n1", 0.75, &exp, src, sizeof(src)), 0);
	CHECK(fabs(exp - 345.8 * 0.75) < 1e-9);
	CHECK_STR(src, "gpu-copy: slowest pair GPU0-GPU2 345.8 GB/s measured x 75%");
	pn_verdict_list_free(l);
}

int main(void)
{
	RUN(parse);
	RUN(parse_refuses);
	RUN(copy_expect);
	return unit_done();
}
