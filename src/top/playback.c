/* SPDX-License-Identifier: MIT */
/*
 * top's playback of a recording and its intervals (playback.h).
 */
#include "top/playback.h"
#include "top/topview.h"

#include "base/util.h"

#include <math.h>

void pn_playback_init(struct pn_playback *p, int n, double now)
{
	p->n = n;
	p->pos = 0;
	p->shown = -1;
	p->paused = 0;
	p->speed = 1;
	p->due = now;
}

int pn_playback_tick(struct pn_playback *p, double now)
{
	if (!p->paused && now >= p->due && p->shown == p->pos && p->pos + 1 < p->n)
		p->pos++;
	if (!p->paused && p->shown == p->pos && p->pos + 1 >= p->n)
		p->paused = 1; /* the end: stay on the last sample */
	return p->pos != p->shown;
}

static void next_due(struct pn_playback *p, double interval, double now)
{
	p->due = now + fmax(interval, 0.01) / p->speed;
}

void pn_playback_shown(struct pn_playback *p, double interval, double now)
{
	p->shown = p->pos;
	/* the next one after this one's recorded interval */
	next_due(p, interval, now);
}

double pn_playback_wait(const struct pn_playback *p, double now)
{
	return p->paused ? 1 : fmin(fmax(p->due - now, 0), 1);
}

void pn_playback_action(struct pn_playback *p, int action, double interval, double now)
{
	switch (action) {
	case PN_TOPA_SLOWER:
	case PN_TOPA_FASTER:
		p->speed = action == PN_TOPA_SLOWER ? fmax(p->speed / 2, 0.125)
						    : fmin(p->speed * 2, 64);
		next_due(p, interval, now);
		break;
	case PN_TOPA_PAUSE:
		p->paused = !p->paused;
		next_due(p, interval, now);
		break;
	case PN_TOPA_STEP_BACK:
		p->paused = 1;
		p->pos = p->pos > 0 ? p->pos - 1 : 0;
		break;
	case PN_TOPA_STEP_FWD:
		p->paused = 1;
		p->pos = p->pos + 1 < p->n ? p->pos + 1 : p->pos;
		break;
	case PN_TOPA_SEEK_START:
		p->pos = 0;
		break;
	case PN_TOPA_SEEK_END:
		p->paused = 1;
		p->pos = p->n - 1;
		break;
	}
}

double pn_top_next_interval(double cur, int dir)
{
	static const double steps[] = { 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60 };
	int i;

	if (dir > 0) {
		for (i = 0; i < (int)PN_ARRAY_SIZE(steps); i++)
			if (steps[i] > cur + 1e-9)
				return steps[i];
		return cur;
	}
	for (i = (int)PN_ARRAY_SIZE(steps) - 1; i >= 0; i--)
		if (steps[i] < cur - 1e-9)
			return steps[i];
	return cur;
}

double pn_top_stall_limit(double interval)
{
	return interval * 10 > 5 ? interval * 10 : 5;
}
