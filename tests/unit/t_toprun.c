/* SPDX-License-Identifier: MIT */
/* top's live run (src/top/toprun.c): opened in one order with the first
 * failure's line (a --ca without --lid, a recording that cannot be
 * written), sampling an empty tree, stopped and closed. */
#define _GNU_SOURCE
#include "top/sampler.h"
#include "unit.h"

#include "base/log.h"
#include "node/sysfs.h"
#include "top/toprun.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static char root[] = "/tmp/t_toprun.XXXXXX";

TEST(refused_before_sampling)
{
	struct pn_toprun r;
	struct pn_toprun_cfg cfg = { .ca = "mlx5_0:1", .interval = 0.05 };

	CHECK_EQ_INT(pn_toprun_open(&r, &cfg), -EINVAL);
	CHECK_STR(pn_errmsg(-EINVAL), "--ca is for --lid");
	CHECK(r.sampler == NULL);
	pn_toprun_close(&r);
	cfg.ca = NULL;
	cfg.record = "/nonexistent-dir/rec.jsonl";
	cfg.record_max = 1 << 20;
	CHECK(pn_toprun_open(&r, &cfg) < 0);
	CHECK(strstr(pn_errmsg(-ENOENT), "rec.jsonl") != NULL);
	CHECK(r.sampler == NULL && r.rec == NULL);
	pn_toprun_close(&r);
	cfg.record = NULL;
	cfg.lids = "x";
	CHECK_EQ_INT(pn_toprun_open(&r, &cfg), -EINVAL);
	pn_toprun_close(&r);
}

TEST(samples_an_empty_tree)
{
	struct pn_toprun r;
	struct pn_toprun_cfg cfg = { .interval = 0.05, .plot = 1, .brief = 1 };
	int i, ret = 0;

	CHECK_EQ_INT(pn_toprun_open(&r, &cfg), 0);
	CHECK(r.sampler != NULL && r.plot != NULL);
	for (i = 0; i < 200 && r.view.seq < 2 && ret >= 0; i++) {
		nanosleep(&(struct timespec){ .tv_nsec = 10 * 1000 * 1000 }, NULL);
		ret = pn_sampler_take(r.sampler, &r.view);
	}
	CHECK(r.view.seq >= 2 && r.view.n == 0);
	CHECK_EQ_INT(pn_toprun_extra(&r, 0), 0);
	CHECK_EQ_INT(pn_toprun_stop(&r), 0);
	CHECK(r.sampler == NULL);
	pn_toprun_close(&r);
	CHECK(r.plot == NULL);
}

int main(void)
{
	if (!mkdtemp(root) || pn_sysfs_set_root(root)) {
		printf("not ok 1 - cannot make an empty sysfs root\n");
		return 1;
	}
	RUN(refused_before_sampling);
	RUN(samples_an_empty_tree);
	rmdir(root);
	return unit_done();
}
