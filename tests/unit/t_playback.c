/* SPDX-License-Identifier: MIT */
/* Time in penny top (src/top/playback.c): a recording played at its
 * recorded interval over the speed, pausing on the last sample, the keys'
 * steps and seeks, and the live screen's interval steps and stall limit. */
#define _GNU_SOURCE
#include "unit.h"

#include "top/playback.h"
#include "top/topview.h"

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

int main(void)
{
	RUN(plays_at_the_recorded_interval_and_stops_on_the_last);
	RUN(keys_change_speed_step_and_seek);
	RUN(live_interval_steps_and_stall_limit);
	return unit_done();
}
