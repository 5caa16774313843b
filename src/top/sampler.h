/* SPDX-License-Identifier: MIT */
/*
 * top's counter sampler (sampler.c): a thread over a counter set
 * (node/counters.h).
 */
#ifndef PENNY_SAMPLER_H
#define PENNY_SAMPLER_H

#include <stddef.h>

struct pn_counters_set;

/*
 * Sampler thread: samples `set` (which it takes over) every interval and
 * publishes a snapshot.  The first sample is a baseline; the second comes
 * after first_delay (<= 0: one interval) so rates show up early.
 */
struct pn_counters_sampler;

int pn_sampler_start(struct pn_counters_sampler **sp, struct pn_counters_set *set, double interval,
			 double first_delay);
/* A file descriptor that polls readable when a new snapshot is ready. */
int pn_sampler_fd(const struct pn_counters_sampler *s);
/*
 * Copy the newest snapshot into view if it is newer than view->seq.
 * Returns 1 when copied, 0 when nothing new, -errno on error (the sampler's
 * own error: it stops sampling).
 */
int pn_sampler_take(struct pn_counters_sampler *s, struct pn_counters_set *view);
void pn_sampler_set_interval(struct pn_counters_sampler *s, double interval);
/*
 * Every sample taken (on, batch output: --json, --record): the thread does
 * not sample again before the caller took its last snapshot, so a caller
 * slower than the interval delays the next sample rather than lose one
 * (whose bytes no later rate would count).  Off (the screen): the newest.
 */
void pn_sampler_set_lossless(struct pn_counters_sampler *s, int on);
/* In brief mode: the port that gets every counter (NULL none); samples now. */
void pn_sampler_set_detail(struct pn_counters_sampler *s, const char *name);
double pn_sampler_interval(struct pn_counters_sampler *s);
/*
 * If a sample is in progress: what it is reading (port name) and for how
 * long, in seconds.  Returns 1 while sampling, 0 while idle.
 */
int pn_sampler_busy(struct pn_counters_sampler *s, char *what, size_t len, double *secs);
/*
 * Stop and free.  Waits up to timeout seconds for the thread; a thread stuck
 * in a read is left behind (-ETIMEDOUT) and its memory kept reachable, so
 * the caller can still exit.
 */
int pn_sampler_stop(struct pn_counters_sampler *s, double timeout);

#endif
