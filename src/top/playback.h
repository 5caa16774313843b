/* SPDX-License-Identifier: MIT */
/*
 * Time in `penny top` (playback.c): the playback of a recording on the
 * screen (which sample shows, when the next one is due at the recorded
 * interval over the speed, pause, steps and seeks), the live screen's
 * interval steps and how long a stuck counter read may take.  Times are
 * seconds of a monotonic clock the caller passes in.
 */
#ifndef PENNY_PLAYBACK_H
#define PENNY_PLAYBACK_H

struct pn_playback {
	int n;		/* samples in the recording */
	int pos;	/* the one to show */
	int shown;	/* the one shown, -1 none yet */
	int paused;
	double speed;	/* 1: as recorded; 1/8 .. 64 */
	double due;	/* when the next one shows */
};

void pn_playback_init(struct pn_playback *p, int n, double now);
/* Before drawing: past its time the next sample is due (at the end the
 * playback pauses on the last).  Returns whether pos must be loaded. */
int pn_playback_tick(struct pn_playback *p, double now);
/* pos is loaded and shown; its recorded interval times the next one. */
void pn_playback_shown(struct pn_playback *p, double interval, double now);
/* How long to wait for a key: until the next sample, at most 1 s. */
double pn_playback_wait(const struct pn_playback *p, double now);
/* A key's action (top/topview.h): speed, pause, step, seek. */
void pn_playback_action(struct pn_playback *p, int action, double interval, double now);

/* The live screen's interval one step longer (dir > 0) or shorter. */
double pn_top_next_interval(double cur, int dir);
/* How long a counter read may not return before top gives up. */
double pn_top_stall_limit(double interval);

#endif
