/* SPDX-License-Identifier: MIT */
/* Job parameters: digests, the first differing one, the message, and the
 * agreement across real ranks (self-launched over the rendezvous). */
#define _GNU_SOURCE
#include "unit.h"
#include "t_ranks.h"

#include "engine/boot.h"
#include "engine/jobparams.h"
#include "base/log.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

TEST(digests_cover_name_and_whole_value)
{
	struct pn_job_param a, b, c;
	char big1[200], big2[200];

	pn_job_param_set(&a, "-d", "%s", "float");
	pn_job_param_set(&b, "-d", "float");
	CHECK(a.digest == b.digest && a.digest != 0);
	CHECK_STR(a.name, "-d");
	CHECK_STR(a.value, "float");
	pn_job_param_set(&c, "-o", "float");
	CHECK(c.digest != a.digest);
	/* name/value boundaries do not blur: ("-d", "1x") vs ("-d1", "x") */
	pn_job_param_set(&b, "-d1", "x");
	pn_job_param_set(&c, "-d", "1x");
	CHECK(b.digest != c.digest);
	/* a long value is shown cut, but every byte counts */
	memset(big1, 'a', sizeof(big1) - 1);
	big1[sizeof(big1) - 1] = 0;
	memcpy(big2, big1, sizeof(big1));
	big2[150] = 'b';
	pn_job_param_set(&a, "--backend", "%s", big1);
	pn_job_param_set(&b, "--backend", "%s", big2);
	CHECK(a.digest != b.digest);
	CHECK_STR(a.value, b.value);
	CHECK_EQ_INT(strlen(a.value), PN_JOB_VALUE_LEN - 1);
	CHECK(!strcmp(a.value + strlen(a.value) - 3, "..."));
	/* content: equal bytes, equal digest, whatever the file is called */
	pn_job_param_content(&a, "--plan", "abc", 3);
	pn_job_param_content(&b, "--plan", "abc", 3);
	pn_job_param_content(&c, "--plan", "abd", 3);
	CHECK(a.digest == b.digest && a.digest != c.digest);
	CHECK(!strncmp(a.value, "content ", 8) && strlen(a.value) == 8 + 16);
}

TEST(first_difference)
{
	uint64_t d[3 * PN_JOB_MAX_PARAMS] = { 0 };
	int r, i;

	for (r = 0; r < 3; r++)
		for (i = 0; i < 5; i++)
			d[r * PN_JOB_MAX_PARAMS + i] = 100 + (uint64_t)i;
	CHECK_EQ_INT(pn_job_params_first_diff(d, 3), -1);
	CHECK_EQ_INT(pn_job_params_first_diff(d, 1), -1);
	d[2 * PN_JOB_MAX_PARAMS + 3] = 7;
	d[1 * PN_JOB_MAX_PARAMS + 4] = 7;
	CHECK_EQ_INT(pn_job_params_first_diff(d, 3), 3);
	CHECK_EQ_INT(pn_job_params_first_diff(d, 2), 4);
	/* a rank with fewer parameters (0 beyond its count) differs there */
	d[2 * PN_JOB_MAX_PARAMS + 3] = 103;
	d[1 * PN_JOB_MAX_PARAMS + 4] = 104;
	d[1 * PN_JOB_MAX_PARAMS + 5] = 55;
	CHECK_EQ_INT(pn_job_params_first_diff(d, 3), 5);
}

TEST(message_names_a_few_ranks)
{
	uint64_t d[8 * PN_JOB_MAX_PARAMS] = { 0 };
	const char *names[8], *values[8];
	char msg[512];
	int r;

	for (r = 0; r < 8; r++) {
		d[r * PN_JOB_MAX_PARAMS + 2] = r == 3 ? 9 : 1;
		names[r] = "-d";
		values[r] = r == 3 ? "half" : "float";
	}
	pn_job_params_message(msg, sizeof(msg), 2, d, 8, names, values);
	CHECK_STR(msg, "ranks disagree on -d: rank 0 float, rank 3 half");
	for (r = 1; r < 8; r++) {
		d[r * PN_JOB_MAX_PARAMS + 2] = 9;
		values[r] = "int8";
	}
	pn_job_params_message(msg, sizeof(msg), 2, d, 8, names, values);
	CHECK_STR(msg, "ranks disagree on -d: rank 0 float, rank 1 int8, rank 2 int8, rank 3 int8 "
		       "and 4 more");
	/* rank 0 lacks the parameter: the name comes from a rank that has it */
	names[0] = "";
	values[0] = "";
	pn_job_params_message(msg, sizeof(msg), 2, d, 2, names, values);
	CHECK_STR(msg, "ranks disagree on -d: rank 0 (none), rank 1 int8");
	/* a short buffer is cut, never overrun */
	pn_job_params_message(msg, 20, 2, d, 8, names, values);
	CHECK_EQ_INT(strlen(msg), 19);
}

/*
 * Three self-launched ranks agree on their parameters, or rank 2 (and, in
 * the third round, rank 1) differs: every rank gets the same answer and
 * knows whether it is one that differs.  Each child writes one line.
 */
static void child(struct pn_boot_cfg *cfg, int round, int fd)
{
	struct pn_job_param p[3];
	struct pn_boot *b = NULL;
	char line[700];
	int ret, differs = -1, n;

	ret = pn_boot_cfg_from_env(cfg);
	if (!ret)
		ret = pn_boot_init(&b, cfg);
	if (!ret) {
		pn_job_param_set(&p[0], "-b", "%d", 1024);
		pn_job_param_set(&p[1], "-d", "%s",
				 (round == 1 && cfg->rank == 2) || (round == 2 && cfg->rank)
					 ? "half" : "float");
		pn_job_param_set(&p[2], "-n", "%d", 20);
		/* round 3: rank 1 has one parameter fewer */
		ret = pn_job_params_agree(b, p, round == 3 && cfg->rank == 1 ? 2 : 3, &differs);
	}
	n = snprintf(line, sizeof(line), "%d %d %d %s\n", cfg->rank, ret, differs,
		     ret ? pn_errmsg(ret) : "-");
	if (write(fd, line, (size_t)n) != n)
		ret = -EIO;
	pn_boot_free(b);
	_exit(0);
}

static void run_round(int round, char out[3][T_RANKS_LINE])
{
	t_ranks_run(3, child, round, out);
}

TEST(ranks_agree_or_all_fail_the_same_way)
{
	char out[3][T_RANKS_LINE];
	char want[600];

	run_round(0, out);
	CHECK_STR(out[0], "0 0 -");
	CHECK_STR(out[1], "0 0 -");
	CHECK_STR(out[2], "0 0 -");

	run_round(1, out);
	snprintf(want, sizeof(want), "%d 0 ranks disagree on -d: rank 0 float, rank 2 half", -EINVAL);
	CHECK_STR(out[0], want);
	CHECK_STR(out[1], want);
	snprintf(want, sizeof(want), "%d 1 ranks disagree on -d: rank 0 float, rank 2 half", -EINVAL);
	CHECK_STR(out[2], want);

	run_round(2, out);
	snprintf(want, sizeof(want), "%d 1 ranks disagree on -d: rank 0 float, rank 1 half, "
				     "rank 2 half", -EINVAL);
	CHECK_STR(out[1], want);
	CHECK_STR(out[2], want);

	run_round(3, out);
	snprintf(want, sizeof(want), "%d 1 ranks disagree on -n: rank 0 20, rank 1 (none)", -EINVAL);
	CHECK_STR(out[1], want);
	snprintf(want, sizeof(want), "%d 0 ranks disagree on -n: rank 0 20, rank 1 (none)", -EINVAL);
	CHECK_STR(out[2], want);
}

int main(void)
{
	RUN(digests_cover_name_and_whole_value);
	RUN(first_difference);
	RUN(message_names_a_few_ranks);
	RUN(ranks_agree_or_all_fail_the_same_way);
	return unit_done();
}
