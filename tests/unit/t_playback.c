/* SPDX-License-Identifier: MIT */
/* Time in penny top (src/top/playback.c): a recording played at its
 * recorded interval over the speed, pausing on the last sample, the keys'
 * steps and seeks, and the live screen's interval steps and stall limit. */
#define _GNU_SOURCE
#include "unit.h"

#include "top/playback.h"
#include "top/record.h"
#include "top/topview.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

TEST(plays_at_the_recorded_interval_and_stops_on_the_last)
{
	struct pn_playback p;

	pn_playback_init(&p, 3, 100);
	CHECK(pn_playback_tick(&p, 100) && p.pos == 0);	/* the first loads at once */
	pn_playback_shown(&p, 2, 100);
	CHECK(!pn_playback_tick(&p, 101.9) && p.pos == 0);
	CHECK(pn_playback_wait(&p, 101.5) > 0.49 && pn_playback_wait(&p, 101.5) < 0.51);
	CHECK_EQ_INT(pn_playback_wait(&p, 50) == 1, 1);	/* at most a second */
	CHECK(pn_playback_tick(&p, 102) && p.pos == 1);
	pn_playback_shown(&p, 2, 102);
	CHECK(pn_playback_tick(&p, 104) && p.pos == 2);
	pn_playback_shown(&p, 2, 104);
	CHECK(!pn_playback_tick(&p, 200) && p.pos == 2 && p.paused);
	CHECK_EQ_INT(pn_playback_wait(&p, 200) == 1, 1);
}

TEST(keys_change_speed_step_and_seek)
{
	struct pn_playback p;

	pn_playback_init(&p, 5, 0);
	pn_playback_tick(&p, 0);
	pn_playback_shown(&p, 1, 0);
	pn_playback_action(&p, PN_TOPA_FASTER, 1, 0);
	CHECK(p.speed == 2 && p.due == 0.5);
	pn_playback_action(&p, PN_TOPA_SLOWER, 1, 0);
	pn_playback_action(&p, PN_TOPA_SLOWER, 1, 0);
	CHECK(p.speed == 0.5 && p.due == 2);
	for (int i = 0; i < 10; i++)
		pn_playback_action(&p, PN_TOPA_SLOWER, 1, 0);
	CHECK(p.speed == 0.125);
	for (int i = 0; i < 20; i++)
		pn_playback_action(&p, PN_TOPA_FASTER, 1, 0);
	CHECK(p.speed == 64);
	/* a recorded interval of 0 counts as 10 ms */
	pn_playback_action(&p, PN_TOPA_PAUSE, 0, 10);
	CHECK(p.paused && p.due > 10 && p.due < 10.001);
	pn_playback_action(&p, PN_TOPA_PAUSE, 1, 0);
	CHECK(!p.paused);
	pn_playback_action(&p, PN_TOPA_STEP_FWD, 1, 0);
	CHECK(p.paused && p.pos == 1 && pn_playback_tick(&p, 0));
	pn_playback_action(&p, PN_TOPA_SEEK_END, 1, 0);
	CHECK_EQ_INT(p.pos, 4);
	pn_playback_action(&p, PN_TOPA_STEP_FWD, 1, 0);
	CHECK_EQ_INT(p.pos, 4);
	pn_playback_action(&p, PN_TOPA_SEEK_START, 1, 0);
	pn_playback_action(&p, PN_TOPA_STEP_BACK, 1, 0);
	CHECK_EQ_INT(p.pos, 0);
	pn_playback_action(&p, PN_TOPA_REDRAW, 1, 0);
	CHECK(p.pos == 0 && p.paused);
}

TEST(live_interval_steps_and_stall_limit)
{
	CHECK(pn_top_next_interval(1, 1) == 2 && pn_top_next_interval(1, -1) == 0.5);
	CHECK(pn_top_next_interval(0.05, -1) == 0.05 && pn_top_next_interval(0.05, 1) == 0.1);
	CHECK(pn_top_next_interval(60, 1) == 60 && pn_top_next_interval(300, -1) == 60);
	CHECK(pn_top_next_interval(1.5, 1) == 2 && pn_top_next_interval(1.5, -1) == 1);
	CHECK(pn_top_stall_limit(0.1) == 5 && pn_top_stall_limit(2) == 20);
}

/* n ports of 256 counters whose names escape to 6 bytes a byte (\\u0001) */
static void big_set(struct pn_counters_set *v, int n)
{
	int i, k;

	memset(v, 0, sizeof(*v));
	v->ports = calloc((size_t)n, sizeof(*v->ports));
	if (!v->ports)
		return;
	v->n = v->cap = n;
	v->seq = 1;
	v->wall = 1000;
	v->interval = 1;
	for (i = 0; i < n; i++) {
		struct pn_counters_port *p = &v->ports[i];

		snprintf(p->name, sizeof(p->name), "mlx5_%d/1", i);
		snprintf(p->dev, sizeof(p->dev), "mlx5_%d", i);
		p->port = 1;
		p->lid = p->state = p->data_group = -1;
		p->rx_Bps = p->tx_Bps = p->rx_pps = p->tx_pps = p->util = NAN;
		for (k = 0; k < PN_CK_COUNT; k++)
			p->ix[k] = -1;
		p->nctr = PN_COUNTERS_MAX;
		for (k = 0; k < PN_COUNTERS_MAX; k++) {
			memset(p->ctr[k].name, 1, 43);
			snprintf(p->ctr[k].name + 43, 5, "%04d", k);
			p->ctr[k].rate = 0;
		}
	}
}

/* The writer writes no line the reader would skip: a sample past the bound
 * is refused (the file untouched), one just within it replays. */
TEST(record_lines_replay_up_to_the_bound)
{
	char path[] = "/tmp/t_playback.XXXXXX";
	struct pn_counters_set v;
	struct pn_record *rec;
	struct pn_replay *rp;
	struct stat st;
	char *buf = NULL;
	size_t cap = 0, one, two;
	int fd = mkstemp(path), n;

	CHECK(fd >= 0);
	if (fd < 0)
		return;
	close(fd);
	big_set(&v, 2);
	CHECK_EQ_INT(pn_record_format(&buf, &cap, &one, &v, NULL, "h", 1, NULL, 0), 0);
	v.n = 1;
	CHECK_EQ_INT(pn_record_format(&buf, &cap, &two, &v, NULL, "h", 1, NULL, 0), 0);
	free(v.ports);
	one -= two; /* a port's bytes */
	CHECK(one > 50000);	/* about 80 KB: 400 ports to the bound */
	n = (int)(PN_RECORD_LINE_MAX / one);
	big_set(&v, n + 1);
	CHECK_EQ_INT(pn_record_open(&rec, path, 1ull << 30), 0);
	CHECK_EQ_INT(pn_record_write(rec, &v, NULL, "h", 1, NULL, 0), -EFBIG);
	pn_record_close(rec);
	CHECK_EQ_INT(stat(path, &st) == 0 && st.st_size == 0, 1);	/* nothing written */
	v.n = n - 1;
	CHECK_EQ_INT(pn_record_open(&rec, path, 1ull << 30), 0);
	CHECK_EQ_INT(pn_record_write(rec, &v, NULL, "h", 1, NULL, 0), 0);
	CHECK(pn_record_bytes(rec) > (8u << 20) && pn_record_bytes(rec) <= PN_RECORD_LINE_MAX + 1);
	pn_record_close(rec);
	free(v.ports);
	CHECK_EQ_INT(pn_replay_open(&rp, path), 0);
	CHECK_EQ_INT(pn_replay_count(rp), 1);
	CHECK_STR(pn_replay_warning(rp), "");
	pn_replay_close(rp);
	free(buf);
	unlink(path);
}

int main(void)
{
	RUN(plays_at_the_recorded_interval_and_stops_on_the_last);
	RUN(keys_change_speed_step_and_seek);
	RUN(live_interval_steps_and_stall_limit);
	RUN(record_lines_replay_up_to_the_bound);
	return unit_done();
}
