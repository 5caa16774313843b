/* SPDX-License-Identifier: MIT */
/*
 * penny check's driver rules (src/check/check.c, check_base.c): check
 * names and lists, the expectation rule (config > baseline > topology), the
 * job-median rule, and a baseline written and read back.
 */
#define _GNU_SOURCE
#include "unit.h"

#include "base/log.h"
#include "base/verdict.h"
#include "check/check.h"
#include "check/check_base.h"
#include "check/check_cfg.h"
#include "check/check_row.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <unistd.h>

TEST(names)
{
	unsigned m = 0;

	CHECK_STR(pn_check_name(PN_CHECK_INVENTORY), "inventory");
	CHECK_STR(pn_check_name(PN_CHECK_NICBW), "nic-bw");
	CHECK_STR(pn_check_name(PN_CHECK_RAILS), "rails");
	CHECK_STR(pn_check_name(PN_CHECK_SETTINGS), "settings");
	CHECK_STR(pn_check_name(PN_CHECK_NCCLPATH), "nccl-path");
	CHECK_STR(pn_check_name(PN_CHECK_RANKS), "ranks");
	CHECK_STR(pn_check_name(PN_CHECK_ALLTOALL), "alltoall");
	CHECK(pn_check_name(PN_CHECK_COUNT) == NULL);
	CHECK(pn_check_name((enum pn_check_id)-1) == NULL);
	CHECK_EQ_INT(pn_check_parse_list("nic-bw,pcie", &m), 0);
	CHECK_EQ_INT(m, (1u << PN_CHECK_NICBW) | (1u << PN_CHECK_PCIE));
	CHECK_EQ_INT(pn_check_parse_list("inventory,pcie,counters,nic-bw,gpu-copy,allreduce,rails,"
					 "settings,nccl-path,ranks,alltoall", &m), 0);
	CHECK_EQ_INT(m, PN_CHECK_ALL);
	m = 7;
	CHECK_EQ_INT(pn_check_parse_list("pcie,nope", &m), -EINVAL);
	CHECK(strstr(pn_errmsg(-EINVAL), "no check 'nope'"));
	CHECK_EQ_INT(m, 7);
	CHECK_EQ_INT(pn_check_parse_list("", &m), -EINVAL);
	CHECK_EQ_INT(pn_check_parse_list("pcie,", &m), -EINVAL);
	CHECK_EQ_INT(pn_check_parse_list(",pcie", &m), -EINVAL);
	CHECK_EQ_INT(pn_check_parse_list("pci", &m), -EINVAL);
	CHECK_EQ_INT(pn_check_parse_list("pcie2", &m), -EINVAL);
}

static struct pn_verdict_list *bw_list(const double *v, int n, double expected)
{
	struct pn_verdict_list *l = pn_verdict_list_new();
	char node[16];
	int i;

	for (i = 0; i < n; i++) {
		snprintf(node, sizeof(node), "n%d", i);
		pn_verdict_add(l, &(struct pn_verdict_in){
			.check = "nic-bw", .node = node, .target = "mlx5_0/1", .verdict = PN_PASS,
			.measured = PN_VNUM(v[i]), .expected = PN_VNUM(expected), .unit = "Gb/s" });
	}
	return l;
}

TEST(median)
{
	const double v[] = { 380, 378, 382, 330, 379 };
	struct pn_verdict_list *l = bw_list(v, 5, 360);
	const struct pn_verdict_result *r;

	/* median 379; 330 is 12.9% below: more than 10% */
	CHECK_EQ_INT(pn_check_job_median(l, 0.10), 1);
	r = pn_verdict_at(l, 3);
	CHECK_EQ_INT(r->verdict, PN_FAIL);
	CHECK_STR(r->source, "job median of 5");
	CHECK(strstr(r->detail, "12.9% below the job's median 379 Gb/s"));
	CHECK_EQ_INT(pn_verdict_count(l, PN_FAIL), 1);
	CHECK_EQ_INT(pn_verdict_count(l, PN_PASS), 4);
	CHECK_EQ_INT(pn_verdict_exit_code(l), 1);
	pn_verdict_list_free(l);

	/* a wider margin keeps it */
	l = bw_list(v, 5, 360);
	CHECK_EQ_INT(pn_check_job_median(l, 0.15), 0);
	pn_verdict_list_free(l);

	/* one value is no group; an even group's median is the mean of the middle two */
	l = bw_list(v + 3, 1, 360);
	CHECK_EQ_INT(pn_check_job_median(l, 0.0), 0);
	pn_verdict_list_free(l);
	{
		const double w[] = { 100, 90, 80, 70 };

		l = bw_list(w, 4, 50); /* median 85: 70 is 17.6% below, 80 is 5.9% */
		CHECK_EQ_INT(pn_check_job_median(l, 0.10), 1);
		CHECK_EQ_INT(pn_verdict_at(l, 3)->verdict, PN_FAIL);
		CHECK_EQ_INT(pn_verdict_at(l, 2)->verdict, PN_PASS);
		pn_verdict_list_free(l);
	}
}

/* A GPU pair's result is not judged against the GPUs' h2d results even when
 * their expected values happen to be equal; GPU0:h2d and GPU7:h2d are one kind. */
TEST(median_kinds)
{
	struct pn_verdict_list *l = pn_verdict_list_new();
	const char *tg[] = { "GPU0:h2d", "GPU1:h2d", "GPU7:h2d", "GPU0-GPU1" };
	const double v[] = { 50, 51, 49, 20 };
	int i;

	for (i = 0; i < 4; i++)
		pn_verdict_add(l, &(struct pn_verdict_in){
			.check = "gpu-copy", .node = "a", .target = tg[i], .verdict = PN_PASS,
			.measured = PN_VNUM(v[i]), .expected = PN_VNUM(10), .unit = "GB/s" });
	CHECK_EQ_INT(pn_check_job_median(l, 0.10), 0);
	CHECK_EQ_INT(pn_verdict_count(l, PN_FAIL), 0);
	pn_verdict_add(l, &(struct pn_verdict_in){
		.check = "gpu-copy", .node = "b", .target = "GPU3:h2d", .verdict = PN_PASS,
		.measured = PN_VNUM(30), .expected = PN_VNUM(10), .unit = "GB/s" });
	CHECK_EQ_INT(pn_check_job_median(l, 0.10), 1);
	CHECK_STR(pn_verdict_at(l, 4)->source, "job median of 4");
	pn_verdict_list_free(l);
}

TEST(median_groups)
{
	struct pn_verdict_list *l = pn_verdict_list_new();
	const char *nodes[] = { "a", "b", "c" };
	int i;

	/* three groups of one each: other expected values, units or checks; and a
	 * check the rule leaves alone (inventory) */
	for (i = 0; i < 3; i++) {
		pn_verdict_add(l, &(struct pn_verdict_in){
			.check = "nic-bw", .node = nodes[i], .target = "mlx5_0/1",
			.verdict = PN_PASS, .measured = PN_VNUM(i ? 100 : 10),
			.expected = PN_VNUM(9 + i), .unit = "Gb/s" });
		pn_verdict_add(l, &(struct pn_verdict_in){
			.check = "inventory", .node = nodes[i], .target = "mlx5_0/1",
			.verdict = PN_PASS, .measured = PN_VNUM(i ? 400 : 100),
			.expected = PN_VNUM(100), .unit = "Gb/s" });
	}
	pn_verdict_add(l, &(struct pn_verdict_in){
		.check = "gpu-copy", .node = "a", .target = "GPU0", .verdict = PN_PASS,
		.measured = PN_VNUM(10), .expected = PN_VNUM(9), .unit = "GB/s" });
	pn_verdict_add(l, &(struct pn_verdict_in){
		.check = "gpu-copy", .node = "b", .target = "GPU0", .verdict = PN_PASS,
		.measured = PN_VNUM(50), .expected = PN_VNUM(9), .unit = "GB/s" });
	/* a FAIL stays a FAIL, a SKIP is not measured */
	pn_verdict_add(l, &(struct pn_verdict_in){
		.check = "gpu-copy", .node = "c", .target = "GPU0", .verdict = PN_FAIL,
		.measured = PN_VNUM(1), .expected = PN_VNUM(9), .unit = "GB/s",
		.source = "topology", .detail = "slow" });
	pn_verdict_add(l, &(struct pn_verdict_in){
		.check = "gpu-copy", .node = "d", .target = "GPU0", .verdict = PN_SKIP,
		.detail = "no GPU" });
	/* gpu-copy: 10, 50, 1: median 10, nothing PASSing below 9 */
	CHECK_EQ_INT(pn_check_job_median(l, 0.10), 0);
	CHECK_EQ_INT(pn_verdict_count(l, PN_FAIL), 1);
	CHECK_STR(pn_verdict_at(l, 8)->source, "topology");
	pn_verdict_list_free(l);
}

TEST(expect)
{
	struct pn_check_cfg *cfg = pn_check_cfg_new();
	struct pn_verdict_list *l = pn_verdict_list_new();
	struct pn_check_baseline *b = NULL;
	struct pn_check c;
	char src[128], path[] = "/tmp/t_check_base.XXXXXX";
	int fd = mkstemp(path);
	FILE *f = fdopen(fd, "w");
	double v;

	pn_check_init(&c);
	CHECK_EQ_INT(c.mask, PN_CHECK_ALL);
	c.cfg = cfg;
	/* nothing set: the topology's default and its source */
	v = pn_check_expect(&c, "inventory", "mlx5_0/1", "inventory.port-rate", 400,
			    "topology: fastest port", src, sizeof(src));
	CHECK(v == 400);
	CHECK_STR(src, "topology: fastest port");

	/* a baseline: its figure times job.baseline-fraction */
	pn_verdict_add(l, &(struct pn_verdict_in){
		.check = "inventory", .node = "good", .target = "mlx5_0/1", .verdict = PN_PASS,
		.measured = PN_VNUM(200), .expected = PN_VNUM(200), .unit = "Gb/s" });
	pn_verdict_add(l, &(struct pn_verdict_in){
		.check = "pcie", .node = "good", .target = "GPU0", .verdict = PN_PASS,
		.measured = PN_VTEXT("Gen5 x16") });
	pn_verdict_add(l, &(struct pn_verdict_in){
		.check = "nic-bw", .node = "good \"q\"", .target = "mlx5_0/1",
		.verdict = PN_PASS, .measured = PN_VNUM(371.123456789), .unit = "Gb/s" });
	CHECK(f != NULL);
	CHECK_EQ_INT(pn_check_baseline_write(f, l), 0);
	fclose(f);
	CHECK_EQ_INT(pn_check_baseline_load(&b, path), 0);
	CHECK_EQ_INT(pn_check_baseline_find(b, "nic-bw", "mlx5_0/1", &v), 0);
	CHECK(v == 371.123456789);
	CHECK_EQ_INT(pn_check_baseline_find(b, "pcie", "GPU0", &v), -ENOENT); /* text: not saved */
	CHECK_EQ_INT(pn_check_baseline_find(b, "nic-bw", "mlx5_1/1", &v), -ENOENT);
	/* a job's baseline: one row a node of the same check and target (every
	 * rank refused it before, exit 2); the lowest is the figure; the same
	 * node twice is still refused */
	{
		static const char job[] =
			"{\"penny_check_baseline\": 1, \"results\": ["
			"{\"check\": \"alltoall\", \"target\": \"pairs\", \"node\": \"n1\", \"measured\": 9.5},"
			"{\"check\": \"alltoall\", \"target\": \"pairs\", \"node\": \"n2\", \"measured\": 8.25},"
			"{\"check\": \"alltoall\", \"target\": \"pairs\", \"node\": \"n3\", \"measured\": 9}]}";
		static const char twice[] =
			"{\"penny_check_baseline\": 1, \"results\": ["
			"{\"check\": \"nic-bw\", \"target\": \"mlx5_0/1\", \"node\": \"n1\", \"measured\": 9},"
			"{\"check\": \"nic-bw\", \"target\": \"mlx5_0/1\", \"node\": \"n1\", \"measured\": 8}]}";
		struct pn_check_baseline *jb = NULL;

		CHECK_EQ_INT(pn_check_baseline_parse(&jb, job, sizeof(job) - 1, "job.json"), 0);
		CHECK_EQ_INT(pn_check_baseline_find(jb, "alltoall", "pairs", &v), 0);
		CHECK(v == 8.25);
		pn_check_baseline_free(jb);
		CHECK(pn_check_baseline_parse(&jb, twice, sizeof(twice) - 1, "twice.json") < 0);
		CHECK(strstr(pn_errmsg(-EINVAL), "a second result for the same check, target and node"));
	}
	c.baseline = b;
	v = pn_check_expect(&c, "inventory", "mlx5_0/1", "inventory.port-rate", 400,
			    "topology: fastest port", src, sizeof(src));
	CHECK(fabs(v - 180) < 1e-9);
	CHECK_STR(src, "baseline: 90% of 200");
	/* another fraction */
	CHECK_EQ_INT(pn_check_cfg_parse(cfg, "job.baseline-fraction = 0.5", 27, "x"), 0);
	v = pn_check_expect(&c, "inventory", "mlx5_0/1", "inventory.port-rate", 400, "t", src,
			    sizeof(src));
	CHECK(v == 100);
	/* not in the baseline: the default */
	v = pn_check_expect(&c, "inventory", "mlx5_9/1", "inventory.port-rate", 400, "t", src,
			    sizeof(src));
	CHECK(v == 400);
	CHECK_STR(src, "t");
	/* the config beats the baseline */
	CHECK_EQ_INT(pn_check_cfg_parse(cfg, "inventory.port-rate = 50", 24, "x"), 0);
	v = pn_check_expect(&c, "inventory", "mlx5_0/1", "inventory.port-rate", 400, "t", src,
			    sizeof(src));
	CHECK(v == 50);
	CHECK_STR(src, "config: inventory.port-rate");
	/* no key: baseline */
	v = pn_check_expect(&c, "inventory", "mlx5_0/1", NULL, 400, "t", src, sizeof(src));
	CHECK(v == 100);
	pn_check_baseline_free(b);
	unlink(path);
	pn_verdict_list_free(l);
	pn_check_cfg_free(cfg);
}

static int load_text(const char *text, const char *want)
{
	char path[] = "/tmp/t_check_base.XXXXXX";
	struct pn_check_baseline *b = NULL;
	int fd = mkstemp(path), ret;

	if (write(fd, text, strlen(text)) != (ssize_t)strlen(text))
		return -EIO;
	close(fd);
	ret = pn_check_baseline_load(&b, path);
	if (ret && want && !strstr(pn_errmsg(ret), want)) {
		printf("#   '%s': '%s' lacks '%s'\n", text, pn_errmsg(ret), want);
		ret = -999;
	}
	pn_check_baseline_free(b);
	unlink(path);
	return ret;
}

TEST(baseline_errors)
{
	CHECK_EQ_INT(load_text("{\"penny_check_baseline\": 1, \"results\": []}", NULL), 0);
	CHECK_EQ_INT(load_text("[]", "not a penny check baseline"), -EINVAL);
	CHECK_EQ_INT(load_text("{\"results\": []}", "version 1"), -EINVAL);
	CHECK_EQ_INT(load_text("{\"penny_check_baseline\": 2, \"results\": []}", "version 1"),
		     -EINVAL);
	CHECK_EQ_INT(load_text("{\"penny_check_baseline\": 1}", "must be an array"), -EINVAL);
	CHECK_EQ_INT(load_text("{\"penny_check_baseline\": 1, \"results\": [{\"check\": \"a\"}]}",
			       "a result needs"), -EINVAL);
	CHECK_EQ_INT(load_text("{\"penny_check_baseline\": 1, \"results\": [{\"check\": \"a\", "
			       "\"target\": \"b\", \"measured\": \"1\"}]}", "a result needs"),
		     -EINVAL);
	CHECK_EQ_INT(load_text("{\"penny_check_baseline\": 1, \"results\": [", "line"), -EINVAL);
	/* a measured figure below zero: the file's line named */
	CHECK_EQ_INT(load_text("{\"penny_check_baseline\": 1, \"results\": [\n {\"check\": \"a\", "
			       "\"target\": \"b\", \"measured\": 1},\n {\"check\": \"a\", "
			       "\"target\": \"c\",\n  \"measured\": -0.5}]}",
			       ": line 4: \"measured\" must not be negative"), -EINVAL);
	CHECK_EQ_INT(load_text("{\"penny_check_baseline\": 1, \"results\": [{\"check\": \"a\", "
			       "\"target\": \"b\", \"measured\": -1e-300}]}", "negative"), -EINVAL);
	CHECK_EQ_INT(load_text("{\"penny_check_baseline\": 1, \"results\": [{\"check\": \"a\", "
			       "\"target\": \"b\", \"measured\": 0}]}", NULL), 0);
	CHECK(load_text("", NULL) < 0);
	{
		struct pn_check_baseline *b = NULL;

		CHECK(pn_check_baseline_load(&b, "/dev/zero") < 0); /* never read unbounded */
		CHECK(b == NULL);
	}
}

static int find(const struct pn_verdict_list *l, const char *check, const char *target)
{
	int i;

	for (i = 0; i < pn_verdict_n(l); i++)
		if (!strcmp(pn_verdict_at(l, i)->check, check) &&
		    !strcmp(pn_verdict_at(l, i)->target, target))
			return i;
	return -1;
}

TEST(require)
{
	struct pn_verdict_list *l = pn_verdict_list_new();
	const struct pn_verdict_result *r;
	unsigned req = 0;

	pn_verdict_add(l, &(struct pn_verdict_in){ .check = "gpu-copy", .node = "n1",
						   .target = "GPU0", .verdict = PN_SKIP,
						   .detail = "no GPU plugin" });
	pn_verdict_add(l, &(struct pn_verdict_in){ .check = "pcie", .node = "n1",
						   .target = "GPU0", .verdict = PN_SKIP,
						   .detail = "no link" });
	pn_verdict_add(l, &(struct pn_verdict_in){ .check = "pcie", .node = "n1",
						   .target = "mlx5_0", .verdict = PN_PASS });
	CHECK_EQ_INT(pn_verdict_exit_code(l), 0);
	/* nothing required: nothing changes */
	CHECK_EQ_INT(pn_check_require(l, 0, "n1"), 0);
	CHECK_EQ_INT(pn_verdict_exit_code(l), 0);
	CHECK_EQ_INT(pn_check_parse_list("gpu-copy,rails", &req), 0);
	CHECK_EQ_INT(pn_check_require(l, req, "n1"), 2);
	r = pn_verdict_at(l, find(l, "gpu-copy", "GPU0"));
	CHECK(r && r->verdict == PN_FAIL);
	CHECK_STR(r ? r->detail : "", "required, but skipped: no GPU plugin");
	CHECK_STR(r ? r->source : "", "--require");
	/* pcie was not required: its SKIP stays */
	r = pn_verdict_at(l, find(l, "pcie", "GPU0"));
	CHECK(r && r->verdict == PN_SKIP);
	/* a required check without any result fails on its own */
	r = pn_verdict_at(l, find(l, "rails", "-"));
	CHECK(r && r->verdict == PN_FAIL && !strcmp(r->node, "n1"));
	CHECK_EQ_INT(pn_verdict_exit_code(l), 1);
	pn_verdict_list_free(l);
}

int main(void)
{
	RUN(names);
	RUN(median);
	RUN(median_kinds);
	RUN(median_groups);
	RUN(expect);
	RUN(baseline_errors);
	RUN(require);
	return unit_done();
}
