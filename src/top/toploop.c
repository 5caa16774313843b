/* SPDX-License-Identifier: MIT */
/*
 * top's run loops, live and replayed (toploop.h).
 */
#define _GNU_SOURCE
#include "top/sampler.h"
#include "top/toploop.h"

#include "base/log.h"
#include "base/util.h"
#include "top/playback.h"
#include "top/portsel.h"
#include "node/sysfs.h"
#include "top/topview.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int pn_top_opts_check(const struct pn_top_opts *o, int *sort)
{
	/* --interval and --count are in range (the table); --count 0: not given */
	if (o->once && o->count)
		return pn_err(-EINVAL, "--once and --count exclude each other");
	*sort = o->sort ? pn_port_sort_parse(o->sort) : PN_PORT_SORT_NAME;
	if (*sort < 0)
		return pn_err(-EINVAL, "unknown sort key '%s' (name, rx, tx, util, errors)", o->sort);
	if (o->prom && !*o->prom)
		return pn_err(-EINVAL, "--prom needs a file name");
	if ((o->record && !*o->record) || (o->replay && !*o->replay) || (o->plot && !*o->plot))
		return pn_err(-EINVAL, "--record, --replay and --plot need a file name");
	if (o->record && o->replay)
		return pn_err(-EINVAL, "--record and --replay exclude each other");
	if (!o->record && o->record_max != PN_RECORD_MAX_DEFAULT)
		return pn_err(-EINVAL, "--record-max is for --record");
	if (o->replay && (o->lids || o->ca || o->ethernet))
		return pn_err(-EINVAL, "--lid, --ca and -e are for a live run, not --replay");
	/* a recording carries its host's ports and GPUs: no tree is read */
	if (o->replay && o->sysroot)
		return pn_err(-EINVAL, "--sysfs-root is for a live run: --replay shows the recorded "
			      "host's counters");
	/* a replay shows each sample for its recorded interval; QP owners are
	 * not recorded */
	if (o->replay && (o->processes || o->interval != PN_TOP_INTERVAL_DEFAULT))
		return pn_err(-EINVAL, "--%s is for a live run: --replay shows %s",
			      o->processes ? "processes" : "interval",
			      o->processes ? "the recorded ports, not the processes"
					   : "each sample for its recorded interval");
	return 0;
}

const char *pn_top_live_host(void)
{
	static char host[256];

	if (pn_sysfs_is_live())
		return pn_hostname();
	if (!host[0] && pn_sys_read(host, sizeof(host), "/proc/sys/kernel/hostname") <= 0)
		snprintf(host, sizeof(host), "%s", pn_sysfs_root());
	return host;
}

/* A recorded sample's GPU rows for the printers (one sample at a time). */
static struct pn_gputraffic *gpus_from_record(const struct pn_record_sample *s)
{
	static struct pn_gpu_row rows[PN_RECORD_GPUS_MAX];
	static struct pn_gputraffic g;

	return pn_gputraffic_from_record(s, &g, rows);
}

/* A sample taken: into the recording and the plot's series. */
static void keep(struct pn_top *t)
{
	static struct pn_record_gpu gpus[PN_RECORD_GPUS_MAX];
	struct pn_toprun *r = t->run;
	double interval = r->view.interval > 0 ? r->view.interval : t->interval;
	int ret, ngpus = (r->rec || r->plot) ? pn_gputraffic_to_record(&r->gpus, gpus) : 0;

	if (r->rec) {
		ret = pn_record_write(r->rec, &r->view, &r->nodectx, pn_top_live_host(), interval,
				      ngpus ? gpus : NULL, ngpus);
		if (ret)
			t->ops->warn(t->ops->arg, pn_errmsg(ret), "; recording stopped");
	}
	if (r->plot && pn_replay_add(r->plot, &r->view, &r->nodectx, ngpus ? gpus : NULL, ngpus))
		t->ops->warn(t->ops->arg, pn_errmsg(-E2BIG), "");
}

/*
 * One sample to the batch output: every sample (a textfile is written from
 * the first); past the baseline (no rates yet; a replay's live run printed
 * nothing there either) it counts.  0 go on, -1 enough printed, else the
 * ops' exit status.
 */
static int emit(struct pn_top *t, const struct pn_counters_set *v, int n, double interval,
		const struct pn_nodectx *ctx, const struct pn_gputraffic *gpus, int *printed)
{
	struct pn_top_sample s = { .set = v, .idx = t->idx, .n = n, .interval = interval,
				   .ctx = ctx, .gpus = gpus, .host = t->host, .rates = v->seq >= 2,
				   .first = *printed == 0 };
	int ret = t->ops->sample(t->ops->arg, &s);

	if (ret || !s.rates)
		return ret;
	++*printed;
	return t->want && *printed >= t->want ? -1 : 0;
}

int pn_top_batch(struct pn_top *t)
{
	struct pn_toprun *r = t->run;
	struct pollfd pfd = { .fd = pn_sampler_fd(r->sampler), .events = POLLIN };
	int printed = 0;

	t->host = pn_top_live_host();
	/* a line for every sample: none skipped when this loop is slow */
	pn_sampler_set_lossless(r->sampler, 1);
	while (!*t->stop) {
		char what[80];
		double secs;
		int ret, n;

		/* woken by a sample or a signal; the timeout only checks for a
		 * stuck read, which counts in seconds */
		ret = poll(&pfd, 1, 1000);
		if (ret < 0 && errno != EINTR)
			return pn_err(-errno, "poll: %s", strerror(errno));
		ret = pn_sampler_take(r->sampler, &r->view);
		if (ret < 0)
			return ret;
		if (ret == 0) {
			if (pn_sampler_busy(r->sampler, what, sizeof(what), &secs) &&
			    secs > pn_top_stall_limit(t->interval))
				return pn_err(-ETIMEDOUT,
					      "reading the counters of '%s' has not returned for %.0f s",
					      what[0] ? what : "the device list", secs);
			continue;
		}
		n = pn_port_order_alloc(&r->view, t->filter, t->sort, &t->idx, &t->idx_cap);
		if (n < 0 || pn_toprun_extra(r, t->processes && r->view.seq >= 2))
			return pn_err(-ENOMEM, "out of memory");
		keep(t);
		ret = emit(t, &r->view, n, t->interval, &r->nodectx, &r->gpus, &printed);
		if (ret)
			return ret < 0 ? 0 : ret;
	}
	return 0;
}

/* The screen's keys: the interval, pause, redraw, the process view. */
static int screen_keys(struct pn_top *t, struct pn_top_status *st, int *quit, int *dirty)
{
	struct pn_toprun *r = t->run;
	int action, err = 0;

	while ((action = t->ops->key(t->ops->arg, &r->view)) >= 0) {
		switch (action) {
		case PN_TOPA_QUIT:
			*quit = 1;
			break;
		case PN_TOPA_SLOWER:
		case PN_TOPA_FASTER:
			st->interval = pn_top_next_interval(st->interval, action == PN_TOPA_SLOWER ? 1 : -1);
			pn_sampler_set_interval(r->sampler, st->interval);
			*dirty = 1;
			break;
		case PN_TOPA_PAUSE:
			st->paused = !st->paused;
			*dirty = 1;
			break;
		case PN_TOPA_REDRAW:
			*dirty = 1;
			break;
		case PN_TOPA_PROCS: /* the view opened: its first list now */
			if (pn_toprun_procs(r))
				err = -ENOMEM;
			*dirty = 1;
			break;
		}
		/* the detail view's port gets every counter read */
		pn_sampler_set_detail(r->sampler, t->ops->detail(t->ops->arg));
	}
	return err;
}

int pn_top_screen(struct pn_top *t)
{
	struct pn_toprun *r = t->run;
	struct pollfd pfd[2] = { { .fd = STDIN_FILENO, .events = POLLIN },
				 { .fd = pn_sampler_fd(r->sampler), .events = POLLIN } };
	struct pn_top_status st = { .interval = t->interval, .host = pn_top_live_host(),
				    .ctx = &r->nodectx, .gpus = &r->gpus, .procs = &r->procs };
	char what[80] = "";
	int ret, quit = 0, dirty = 1, was_busy = 0, err = 0;

	t->host = st.host;
	if (t->processes && pn_toprun_procs(r))
		return pn_err(-ENOMEM, "out of memory");
	while (!quit && !*t->stop && !err) {
		if (dirty) {
			t->ops->draw(t->ops->arg, &r->view, &st);
			dirty = 0;
		}
		/* paused: leave the snapshots queued, look only at the keyboard */
		if (poll(pfd, st.paused ? 1 : 2, 1000) < 0 && errno != EINTR)
			return pn_err(-errno, "poll: %s", strerror(errno));
		if (!st.paused) {
			ret = pn_sampler_take(r->sampler, &r->view);
			if (ret < 0)
				err = ret;
			else if (ret > 0 && pn_toprun_extra(r, t->ops->procs_shown(t->ops->arg)))
				err = -ENOMEM;
			else if (ret > 0)
				dirty = 1;
			if (ret > 0)
				keep(t);
		}
		st.busy = pn_sampler_busy(r->sampler, what, sizeof(what), &st.busy_secs) &&
			  st.busy_secs > (st.interval > 1 ? st.interval : 1);
		st.busy_what = what;
		if (st.busy || was_busy)
			dirty = 1;
		was_busy = st.busy;
		ret = screen_keys(t, &st, &quit, &dirty);
		if (ret)
			err = ret;
	}
	return err;
}

int pn_top_replay_batch(struct pn_top *t, struct pn_replay *rp, struct pn_record_sample *s)
{
	int printed = 0, i, n, ret;

	for (i = 0; i < pn_replay_count(rp) && !*t->stop; i++) {
		ret = pn_replay_load(rp, i, s);
		if (ret)
			return ret;
		t->host = s->host;
		n = pn_port_order_alloc(&s->set, t->filter, t->sort, &t->idx, &t->idx_cap);
		if (n < 0)
			return pn_err(-ENOMEM, "out of memory");
		ret = emit(t, &s->set, n, s->interval, &s->ctx, gpus_from_record(s), &printed);
		if (ret)
			return ret < 0 ? 0 : ret;
	}
	return 0;
}

/* Playback: one sample per recorded interval / speed; keys step and seek. */
int pn_top_replay_screen(struct pn_top *t, struct pn_replay *rp, struct pn_record_sample *s)
{
	struct pollfd pfd = { .fd = STDIN_FILENO, .events = POLLIN };
	struct pn_top_status st = { 0 };
	struct pn_playback pb;
	int quit = 0, action, ret = 0;
	char status[80];

	pn_playback_init(&pb, pn_replay_count(rp), pn_now());
	while (!quit && !*t->stop) {
		if (pn_playback_tick(&pb, pn_now())) {
			ret = pn_replay_load(rp, pb.pos, s);
			if (ret)
				break;
			pn_playback_shown(&pb, s->interval, pn_now());
		}
		t->host = s->host;
		st.host = s->host;
		st.ctx = &s->ctx;
		st.interval = s->interval;
		snprintf(status, sizeof(status), "replay %d/%d x%g", pb.pos + 1, pb.n, pb.speed);
		st.replay = status;
		st.paused = pb.paused;
		st.gpus = gpus_from_record(s);
		t->ops->draw(t->ops->arg, &s->set, &st);
		if (poll(&pfd, 1, (int)(pn_playback_wait(&pb, pn_now()) * 1000)) < 0 && errno != EINTR)
			break;
		while ((action = t->ops->key(t->ops->arg, &s->set)) >= 0) {
			quit |= action == PN_TOPA_QUIT;
			pn_playback_action(&pb, action, s->interval, pn_now());
		}
	}
	return ret;
}
