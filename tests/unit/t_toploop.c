/* SPDX-License-Identifier: MIT */
/* top's run loops (src/top/toploop.c) over an empty sysfs tree and a
 * recording: what each sample hands the printers, --count's end, a
 * printer's exit status and a signal ending the loop, the screen's keys
 * (interval, pause, quit), a recording played in order with its host, and
 * the options that do not go together. */
#define _GNU_SOURCE
#include "top/sampler.h"
#include "unit.h"

#include "base/log.h"
#include "top/playback.h"
#include "top/portsel.h"
#include "node/sysfs.h"
#include "top/toploop.h"
#include "top/topview.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char root[] = "/tmp/t_toploop.XXXXXX";
static volatile sig_atomic_t stop;

struct seen {
	int samples, rates, firsts, status, stop_after, draws, keys_left;
	const int *keys;
	char host[64];
	double interval;
	uint64_t seq[8];
};

static int on_sample(void *arg, const struct pn_top_sample *s)
{
	struct seen *w = arg;

	if (w->samples < 8)
		w->seq[w->samples] = s->set->seq;
	w->samples++;
	w->rates += s->rates;
	w->firsts += s->rates && s->first;
	snprintf(w->host, sizeof(w->host), "%s", s->host);
	if (w->stop_after && w->samples >= w->stop_after)
		stop = SIGINT;
	return w->status;
}

static void on_draw(void *arg, const struct pn_counters_set *v, const struct pn_top_status *st)
{
	struct seen *w = arg;

	w->draws++;
	w->interval = st->interval;
	snprintf(w->host, sizeof(w->host), "%s", st->host ? st->host : "");
}

static int on_key(void *arg, const struct pn_counters_set *v)
{
	struct seen *w = arg;

	if (!w->keys_left)
		return -1;
	w->keys_left--;
	return *w->keys++;
}

static const char *on_detail(void *arg)
{
	return NULL;
}

static int on_procs(void *arg)
{
	return 0;
}

static void on_warn(void *arg, const char *what, const char *then)
{
}

static void setup(struct pn_top *t, struct pn_top_ops *ops, struct pn_toprun *r, struct seen *w)
{
	memset(w, 0, sizeof(*w));
	*ops = (struct pn_top_ops){ .arg = w, .sample = on_sample, .draw = on_draw, .key = on_key,
				    .detail = on_detail, .procs_shown = on_procs, .warn = on_warn };
	*t = (struct pn_top){ .ops = ops, .run = r, .interval = 0.05, .stop = &stop };
	stop = 0;
	if (r)
		CHECK_EQ_INT(pn_toprun_open(r, &(struct pn_toprun_cfg){ .interval = 0.05, .brief = 1 }),
			     0);
}

static void finish(struct pn_top *t, struct pn_toprun *r)
{
	if (r) {
		CHECK_EQ_INT(pn_toprun_stop(r), 0);
		pn_toprun_close(r);
	}
	free(t->idx);
}

TEST(batch_ends_at_count)
{
	struct pn_toprun r;
	struct pn_top_ops ops;
	struct pn_top t;
	struct seen w;

	setup(&t, &ops, &r, &w);
	t.want = 2;
	CHECK_EQ_INT(pn_top_batch(&t), 0);
	/* the baseline has no rates; two printed, the first of them marked */
	CHECK_EQ_INT(w.samples, 3);
	CHECK_EQ_INT(w.rates, 2);
	CHECK_EQ_INT(w.firsts, 1);
	CHECK(w.seq[0] == 1 && w.seq[1] == 2 && w.seq[2] == 3);
	CHECK_STR(w.host, "node-a");
	finish(&t, &r);
}

TEST(batch_status_and_signal)
{
	struct pn_toprun r;
	struct pn_top_ops ops;
	struct pn_top t;
	struct seen w;

	setup(&t, &ops, &r, &w);
	w.status = 2;
	CHECK_EQ_INT(pn_top_batch(&t), 2);
	CHECK_EQ_INT(w.samples, 1);
	finish(&t, &r);

	setup(&t, &ops, &r, &w);
	w.stop_after = 3;
	CHECK_EQ_INT(pn_top_batch(&t), 0);
	CHECK_EQ_INT(w.samples, 3);
	finish(&t, &r);
}

TEST(screen_keys)
{
	static const int keys[] = { PN_TOPA_SLOWER, PN_TOPA_PAUSE, PN_TOPA_REDRAW, PN_TOPA_QUIT };
	struct pn_toprun r;
	struct pn_top_ops ops;
	struct pn_top t;
	struct seen w;

	setup(&t, &ops, &r, &w);
	w.keys = keys;
	w.keys_left = 4;
	CHECK_EQ_INT(pn_top_screen(&t), 0);
	CHECK_EQ_INT(w.keys_left, 0);
	CHECK(w.draws >= 1);
	CHECK_STR(w.host, "node-a");
	CHECK_EQ_INT(w.samples, 0);
	CHECK(pn_sampler_interval(r.sampler) == pn_top_next_interval(0.05, 1));
	finish(&t, &r);
}

/* Three samples recorded from the empty tree, played back. */
TEST(replay_in_order)
{
	char path[sizeof(root) + 16];
	struct pn_counters_set v;
	struct pn_counters_cfg cc;
	struct pn_record *rec;
	struct pn_replay *rp;
	struct pn_record_sample *s = malloc(sizeof(*s));
	struct pn_top_ops ops;
	struct pn_top t;
	struct seen w;
	int i;

	snprintf(path, sizeof(path), "%s/rec.jsonl", root);
	CHECK(s != NULL);
	if (!s)
		return;
	pn_counters_cfg_init(&cc);
	pn_counters_set_init(&v, &cc);
	CHECK_EQ_INT(pn_record_open(&rec, path, 1 << 20), 0);
	for (i = 0; i < 3; i++) {
		v.seq = (uint64_t)i + 1;
		v.wall = 1000 + i;
		CHECK_EQ_INT(pn_record_write(rec, &v, NULL, "node-b", 1.0, NULL, 0), 0);
	}
	pn_record_close(rec);
	pn_counters_set_release(&v);
	pn_record_sample_init(s);
	CHECK_EQ_INT(pn_replay_open(&rp, path), 0);
	CHECK_EQ_INT(pn_replay_count(rp), 3);
	setup(&t, &ops, NULL, &w);
	CHECK_EQ_INT(pn_top_replay_batch(&t, rp, s), 0);
	CHECK_EQ_INT(w.samples, 3);
	CHECK_STR(w.host, "node-b");
	free(t.idx);
	setup(&t, &ops, NULL, &w);
	t.want = 1;
	CHECK_EQ_INT(pn_top_replay_batch(&t, rp, s), 0);
	CHECK(w.samples <= 2 && w.rates == 1);
	pn_replay_close(rp);
	pn_record_sample_release(s);
	free(s);
	free(t.idx);
	unlink(path);
}

TEST(options_that_do_not_go_together)
{
	struct pn_top_opts o = { .interval = 1, .record_max = PN_RECORD_MAX_DEFAULT };
	int sort = -1;

	CHECK_EQ_INT(pn_top_opts_check(&o, &sort), 0);
	CHECK_EQ_INT(sort, PN_PORT_SORT_NAME);
	o.sort = "RX";
	CHECK_EQ_INT(pn_top_opts_check(&o, &sort), 0);
	CHECK_EQ_INT(sort, PN_PORT_SORT_RX);
	o.sort = "speed";
	CHECK_EQ_INT(pn_top_opts_check(&o, &sort), -EINVAL);
	CHECK_STR(pn_errmsg(-EINVAL), "unknown sort key 'speed' (name, rx, tx, util, errors)");
	o.sort = NULL;
	o.once = 1;
	o.count = 3;
	CHECK_EQ_INT(pn_top_opts_check(&o, &sort), -EINVAL);
	CHECK_STR(pn_errmsg(-EINVAL), "--once and --count exclude each other");
	o.count = 0;
	o.prom = "";
	CHECK_EQ_INT(pn_top_opts_check(&o, &sort), -EINVAL);
	CHECK_STR(pn_errmsg(-EINVAL), "--prom needs a file name");
	o.prom = NULL;
	o.plot = "";
	CHECK_EQ_INT(pn_top_opts_check(&o, &sort), -EINVAL);
	o.plot = NULL;
	o.record_max = 1 << 20;
	CHECK_EQ_INT(pn_top_opts_check(&o, &sort), -EINVAL);
	CHECK_STR(pn_errmsg(-EINVAL), "--record-max is for --record");
	o.record = "r.jsonl";
	CHECK_EQ_INT(pn_top_opts_check(&o, &sort), 0);
	o.replay = "old.jsonl";
	CHECK_EQ_INT(pn_top_opts_check(&o, &sort), -EINVAL);
	CHECK_STR(pn_errmsg(-EINVAL), "--record and --replay exclude each other");
	o.record = NULL;
	o.record_max = PN_RECORD_MAX_DEFAULT;
	CHECK_EQ_INT(pn_top_opts_check(&o, &sort), 0);
	o.ethernet = 1;
	CHECK_EQ_INT(pn_top_opts_check(&o, &sort), -EINVAL);
	CHECK_STR(pn_errmsg(-EINVAL), "--lid, --ca and -e are for a live run, not --replay");
	/* options that a replay would ignore are refused too */
	o.ethernet = 0;
	o.processes = 1;
	CHECK_EQ_INT(pn_top_opts_check(&o, &sort), -EINVAL);
	CHECK_STR(pn_errmsg(-EINVAL),
		  "--processes is for a live run: --replay shows the recorded ports, not the processes");
	o.processes = 0;
	o.interval = 5;
	CHECK_EQ_INT(pn_top_opts_check(&o, &sort), -EINVAL);
	CHECK_STR(pn_errmsg(-EINVAL),
		  "--interval is for a live run: --replay shows each sample for its recorded interval");
	o.interval = PN_TOP_INTERVAL_DEFAULT;
	o.sysroot = "tree";
	CHECK_EQ_INT(pn_top_opts_check(&o, &sort), -EINVAL);
	CHECK_STR(pn_errmsg(-EINVAL),
		  "--sysfs-root is for a live run: --replay shows the recorded host's counters");
	o.sysroot = NULL;
	CHECK_EQ_INT(pn_top_opts_check(&o, &sort), 0);
}

int main(void)
{
	static const char *const dirs[] = { "proc", "proc/sys", "proc/sys/kernel" };
	char path[sizeof(root) + 32];
	size_t i;
	FILE *f;

	if (!mkdtemp(root) || pn_sysfs_set_root(root)) {
		printf("not ok 1 - cannot make an empty sysfs root\n");
		return 1;
	}
	/* the tree's own host name */
	for (i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", root, dirs[i]);
		mkdir(path, 0755);
	}
	snprintf(path, sizeof(path), "%s/proc/sys/kernel/hostname", root);
	f = fopen(path, "w");
	if (!f || fputs("node-a\n", f) < 0 || fclose(f)) {
		printf("not ok 1 - cannot write %s\n", path);
		return 1;
	}
	RUN(batch_ends_at_count);
	RUN(batch_status_and_signal);
	RUN(screen_keys);
	RUN(replay_in_order);
	RUN(options_that_do_not_go_together);
	unlink(path);
	for (i = sizeof(dirs) / sizeof(dirs[0]); i-- > 0;) {
		snprintf(path, sizeof(path), "%s/%s", root, dirs[i]);
		rmdir(path);
	}
	rmdir(root);
	return unit_done();
}
