/* SPDX-License-Identifier: MIT */
/*
 * The decision table (src/check/check_diag.c) over a table of synthetic
 * runs: which layer, which evidence, which measurement is asked for next.
 */
#define _GNU_SOURCE
#include "unit.h"

#include "base/verdict.h"
#include "check/check_ab.h"
#include "check/check_diag.h"
#include "check/check_row.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

/* "check target VERDICT [MEASURED [EXPECTED]]" rows, ';'-separated: P, F, S */
static struct pn_verdict_list *list(const char *rows)
{
	struct pn_verdict_list *l = pn_verdict_list_new();
	char copy[1024], *row, *save = NULL;

	snprintf(copy, sizeof(copy), "%s", rows);
	for (row = strtok_r(copy, ";", &save); row; row = strtok_r(NULL, ";", &save)) {
		char check[64], target[64], v;
		double m = 0, e = 0;
		int n = sscanf(row, " %63s %63s %c %lf %lf", check, target, &v, &m, &e);

		if (n < 3)
			continue;
		pn_verdict_add(l, &(struct pn_verdict_in){
			.check = check, .node = "n1", .target = target,
			.verdict = v == 'P' ? PN_PASS : v == 'F' ? PN_FAIL : PN_SKIP,
			.measured = n >= 4 ? PN_VNUM(m) : (struct pn_verdict_val){ 0 },
			.expected = n >= 5 ? PN_VNUM(e) : (struct pn_verdict_val){ 0 },
			.detail = v == 'S' ? "skipped" : NULL });
	}
	return l;
}

TEST(table)
{
	static const struct {
		const char *rows, *layer;
		unsigned need;
		int nevidence;
	} cases[] = {
		{ "allreduce node P;gpu-copy GPU0-GPU1 F", "unknown", 0, 0 },
		{ "allreduce node F;gpu-copy GPU0-GPU1 F;gpu-copy GPU0:h2d P;nccl-path log S",
		  "physical path", 0, 1 },
		{ "allreduce node F;gpu-copy GPU0-GPU1 F;settings GPU0:acs F;settings memlock F;"
		  "nccl-path ch00/0 P", "physical path", 0, 2 },
		{ "allreduce node F;gpu-copy GPU0-GPU1 P;nccl-path ch00/0 F;ranks rank1 F",
		  "NCCL path selection", 0, 2 },
		{ "allreduce node F;gpu-copy GPU0-GPU1 P;nccl-path ch00/0 P", "kernel", 0, 0 },
		{ "allreduce node F;gpu-copy GPU0:h2d F", "unknown",
		  1u << PN_CHECK_GPUCOPY | 1u << PN_CHECK_NCCLPATH, 0 },
		{ "allreduce node F;gpu-copy GPU0-GPU1 P", "NCCL path selection",
		  1u << PN_CHECK_NCCLPATH, 0 },
		{ "allreduce job F;nccl-path ch00/0 P", "unknown", 1u << PN_CHECK_NICBW, 0 },
		{ "allreduce job F;nic-bw mlx5_0/1 F;nic-bw mlx5_1/1 P;nccl-path ch00/0 F",
		  "network", 0, 1 },
		{ "allreduce job F;nic-bw mlx5_0/1 P;counters mlx5_0/1 F;nccl-path x P", "network",
		  0, 1 },
		{ "allreduce job F;nic-bw mlx5_0/1 P;nccl-path ch01/0 F;settings gpudirect-rdma F;"
		  "settings GPU0:acs F", "NCCL path selection", 0, 2 },
		{ "allreduce job F;nic-bw mlx5_0/1 P;nccl-path ch01/0 P", "kernel", 0, 0 },
		{ "allreduce job S;nic-bw mlx5_0/1 F", "unknown", 0, 0 },
		{ "allreduce node F;gpu-copy gpu-matrix S;nccl-path log S", "unknown", 0, 0 },
		{ "allreduce job F;nic-bw mlx5_0/1 S;nccl-path log S", "unknown", 0, 0 },
		/* the A/B of the rail NICs (job-rail) */
		{ "allreduce job F 20 40;nic-bw mlx5_0/1 P;nccl-path ch01/0 P;"
		  "allreduce job-rail P 41", "NCCL path selection", 0, 1 },
		{ "allreduce job F 20 40;nic-bw mlx5_0/1 P;nccl-path ch01/0 F;"
		  "allreduce job-rail F 30", "NCCL path selection", 0, 2 },
		{ "allreduce job F 20 40;nic-bw mlx5_0/1 P;nccl-path log S;"
		  "allreduce job-rail F 21", "kernel", 0, 0 },
		{ "allreduce job F 20 40;nic-bw mlx5_0/1 P;"
		  "allreduce job-rail F 21", "kernel", 1u << PN_CHECK_NCCLPATH, 0 },
		{ "allreduce job F 20 40;nic-bw mlx5_0/1 P;nccl-path ch01/0 F;"
		  "allreduce job-rail F 21", "NCCL path selection", 0, 1 },
		{ "allreduce job F 20 40;nic-bw mlx5_0/1 F;nccl-path x P;allreduce job-rail P 41",
		  "network", 0, 1 },
		{ "allreduce job F;nic-bw mlx5_0/1 P;nccl-path log S;allreduce job-rail F",
		  "NCCL path selection", 0, 0 },
		/* the NICs not measured: an A/B that recovers it still names NCCL's choice */
		{ "allreduce job F 20 40;nic-bw mlx5_0/1 S;nccl-path ch01/0 P;"
		  "allreduce job-rail P 41", "NCCL path selection", 0, 1 },
		{ "allreduce job F 20 40;nccl-path ch01/0 F;allreduce job-rail F 30",
		  "NCCL path selection", 1u << PN_CHECK_NICBW, 2 },
		{ "allreduce job F 20 40;nic-bw mlx5_0/1 S;nccl-path ch01/0 P;"
		  "allreduce job-rail F 21", "unknown", 0, 0 },
		{ "allreduce job F 20 40;nic-bw mlx5_0/1 S;nccl-path ch01/0 P;"
		  "allreduce job-rail F", "unknown", 0, 0 },
	};
	size_t k;

	for (k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		struct pn_verdict_list *l = list(cases[k].rows);
		struct pn_diag d;

		pn_diag_decide(l, &d);
		if (strcmp(d.layer, cases[k].layer) || d.need != cases[k].need ||
		    d.nevidence != cases[k].nevidence)
			fprintf(stderr, "case %zu (%s): %s need %#x evidence %d (%s)\n", k,
				cases[k].rows, d.layer, d.need, d.nevidence, d.why);
		CHECK_STR(d.layer, cases[k].layer);
		CHECK_EQ_INT((int)d.need, (int)cases[k].need);
		CHECK_EQ_INT(d.nevidence, cases[k].nevidence);
		CHECK_EQ_INT(d.missed, strstr(cases[k].rows, "allreduce node F") ||
				       strstr(cases[k].rows, "allreduce job F"));
		pn_verdict_list_free(l);
	}
}

TEST(evidence_bounded)
{
	char rows[1024] = "allreduce node F";
	struct pn_verdict_list *l;
	struct pn_diag d;
	int i;

	for (i = 0; i < 20; i++)
		snprintf(rows + strlen(rows), sizeof(rows) - strlen(rows),
			 ";gpu-copy GPU%d-GPU%d F", i, i + 1);
	l = list(rows);
	pn_diag_decide(l, &d);
	CHECK_STR(d.layer, "physical path");
	CHECK_EQ_INT(d.nevidence, PN_DIAG_EVIDENCE);
	CHECK_STR(pn_verdict_at(l, d.evidence[0])->target, "GPU0-GPU1");
	pn_verdict_list_free(l);
}

TEST(ab)
{
	CHECK_EQ_INT(pn_diag_ab(20, 41, 40), PN_AB_RAIL);	/* reaches the expectation */
	CHECK_EQ_INT(pn_diag_ab(20, 24, 0), PN_AB_RAIL);	/* the gain, no expectation */
	CHECK_EQ_INT(pn_diag_ab(20, 24, NAN), PN_AB_RAIL);
	CHECK_EQ_INT(pn_diag_ab(20, 23.9, 40), PN_AB_NOT_RAIL);
	CHECK_EQ_INT(pn_diag_ab(20, 18, 40), PN_AB_NOT_RAIL);
	CHECK_EQ_INT(pn_diag_ab(45, 46, 40), PN_AB_NOT_RAIL);	/* as run met it already */
	CHECK_EQ_INT(pn_diag_ab(0, 5, 40), PN_AB_RAIL);	/* as run moved nothing */
	CHECK_EQ_INT(pn_diag_ab(20, 0, 40), PN_AB_NONE);	/* the pinned run moved nothing */
	CHECK_EQ_INT(pn_diag_ab(NAN, 30, 40), PN_AB_NONE);
	CHECK_EQ_INT(pn_diag_ab(20, NAN, 40), PN_AB_NONE);
	CHECK_EQ_INT(pn_diag_ab(20, INFINITY, 40), PN_AB_NONE);
	CHECK_EQ_INT(pn_diag_ab(-1, 30, 40), PN_AB_NONE);
}

/* When the A/B runs: the job's row missed on busbw, and no A/B is there yet. */
TEST(ab_wanted)
{
	static const struct {
		const char *rows;
		int want;
	} cases[] = {
		{ "allreduce node F 1 40;allreduce job F 20 40", 1 },
		{ "allreduce job F 20 40;nic-bw mlx5_0/1 P 50 40", 0 },
		{ "allreduce job P 41 40", -1 },		/* it met it */
		{ "allreduce job F 41 40", -1 },		/* wrong values, busbw fine */
		{ "allreduce job F", -1 },			/* it did not run */
		{ "allreduce job F 20", -1 },			/* no expectation */
		{ "allreduce node F 1 40", -1 },		/* a node alone */
		{ "allreduce job F 20 40;allreduce job-rail F 21 40", -1 }, /* done already */
		{ "nic-bw job F 20 40", -1 },
	};
	size_t k;

	for (k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		struct pn_verdict_list *l = list(cases[k].rows);

		if (pn_diag_ab_wanted(l) != cases[k].want)
			fprintf(stderr, "case %zu (%s): %d\n", k, cases[k].rows, pn_diag_ab_wanted(l));
		CHECK_EQ_INT(pn_diag_ab_wanted(l), cases[k].want);
		pn_verdict_list_free(l);
	}
}

int main(void)
{
	RUN(table);
	RUN(ab);
	RUN(ab_wanted);
	RUN(evidence_bounded);
	return unit_done();
}
