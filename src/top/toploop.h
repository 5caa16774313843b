/* SPDX-License-Identifier: MIT */
/*
 * The run loops of `penny top` (toploop.c): the batch loop over a live
 * run's samples, the screen's loop over samples and keys, and the two over
 * a recording (--replay).  They decide what is taken, kept (--record,
 * --plot), ordered and shown, and when the run ends; how a sample looks is
 * the caller's (cmd/top.c and its screen, cmd/tui.c), through the ops
 * below.  Errors are one line in pn_errmsg().
 */
#ifndef PENNY_TOPLOOP_H
#define PENNY_TOPLOOP_H

#include "node/counters.h"
#include "top/gputraffic.h"
#include "node/nodectx.h"
#include "node/rdmares.h"
#include "top/record.h"
#include "top/toprun.h"

#include <signal.h>
#include <stdint.h>

/* top's options as given: cmd/top.c's table fills them (0 and NULL: not
 * given; record_max: PN_RECORD_MAX_DEFAULT, interval:
 * PN_TOP_INTERVAL_DEFAULT unless given). */
#define PN_TOP_INTERVAL_DEFAULT 1.0	/* --interval default, seconds */
struct pn_top_opts {
	double interval;
	int count;
	int once;
	const char *prom;
	int ethernet;
	const char *lids;
	const char *ca;
	const char *filter;
	const char *sort;
	int by_rail;
	int processes;
	const char *record;
	uint64_t record_max;
	const char *replay;
	const char *plot;
	const char *sysroot;	/* --sysfs-root as given (a live run's; the command sets it) */
};

/* The options that do not go together, the sort key into *sort (enum
 * pn_port_sort), the file names that are empty: 0 or -EINVAL. */
int pn_top_opts_check(const struct pn_top_opts *o, int *sort);

/* What the screen shows beside the snapshot. */
struct pn_top_status {
	const char *host;	/* whose counters: the header names it */
	const struct pn_nodectx *ctx; /* NUMA, rail, GPUs of each NIC (NULL none) */
	const struct pn_gputraffic *gpus; /* GPU rows (NULL none) */
	const struct pn_rdmares *procs;	/* QP owners, read while their view shows */
	double interval;
	int paused;
	int busy;		/* the sampler is stuck: busy_what for busy_secs */
	const char *busy_what;
	double busy_secs;
	const char *replay;	/* --replay: "replay 3/120 x2", NULL live */
};

/* One sample for the batch output, live or replayed. */
struct pn_top_sample {
	const struct pn_counters_set *set;
	const int *idx;		/* the ports shown, in order (top/portsel.h) */
	int n;
	double interval;
	const struct pn_nodectx *ctx;
	const struct pn_gputraffic *gpus;
	const char *host;
	int rates;		/* past the baseline: it has rates to print */
	int first;		/* none printed before it */
};

struct pn_top_ops {
	void *arg;
	/* Batch: every sample; 0 go on, -1 end the run as --count does (the
	 * output can no longer be written: the command says so at its exit),
	 * else an exit status (the caller said why). */
	int (*sample)(void *arg, const struct pn_top_sample *s);
	/* Screen: draw; the next key's action (enum pn_topview_action), -1
	 * when no key waits; the detail view's port (NULL none); whether the
	 * process view shows. */
	void (*draw)(void *arg, const struct pn_counters_set *v, const struct pn_top_status *st);
	int (*key)(void *arg, const struct pn_counters_set *v);
	const char *(*detail)(void *arg);
	int (*procs_shown)(void *arg);
	/* A line "warning: <what><then>" (the recording stopped, ...). */
	void (*warn)(void *arg, const char *what, const char *then);
};

struct pn_top {
	const struct pn_top_ops *ops;
	struct pn_toprun *run;		/* the live run (NULL: a replay) */
	double interval;		/* --interval */
	int want;			/* samples printed before the end; 0: no end */
	const char *filter;		/* --filter */
	int sort;			/* enum pn_port_sort */
	int processes;			/* --processes */
	volatile sig_atomic_t *stop;	/* a signal asked to stop */
	int *idx, idx_cap;		/* the ports shown, in order */
	const char *host;		/* the host of the sample shown last */
};

/* The host the live counters are of: under --sysfs-root the tree's own host
 * name (its /proc/sys/kernel/hostname), else the tree's path. */
const char *pn_top_live_host(void);

/* The loops: 0 at the end (--count reached, a signal, 'q'), an exit
 * status the ops returned, or -errno. */
int pn_top_batch(struct pn_top *t);
int pn_top_screen(struct pn_top *t);
/* Over a recording: s is loaded with each sample in turn (the screen: at
 * the recorded interval, and as its keys step and seek). */
int pn_top_replay_batch(struct pn_top *t, struct pn_replay *rp, struct pn_record_sample *s);
int pn_top_replay_screen(struct pn_top *t, struct pn_replay *rp, struct pn_record_sample *s);

#endif
