/* SPDX-License-Identifier: MIT */
/*
 * The counter sampler: a thread that samples a counter set (counters.c)
 * every interval, so a stuck sysfs read or MAD never freezes the screen of
 * `penny top`; the caller takes the newest results under a lock, woken by
 * an eventfd.
 *
 * The thread gives itself a private copy of the descriptor table
 * (unshare(CLONE_FILES)): the counter files it holds open are its own, and
 * each of the thousand preads a sample makes skips the reference counting
 * that a table shared between threads costs.  So the thread closes them
 * itself (the set is released before it ends); descriptors made before the
 * start (the eventfd, a PerfMgt port) are in both tables.
 *
 * ThreadSanitizer models one descriptor table per process, indexed by
 * number (its tsan_fd.cpp): with two tables one number names two files at
 * once, and the main thread's open and close of its "fd 5" (a hostname, a
 * --record file) read as races with the sampler's fstat and pread of its
 * own.  A TSan build keeps the table shared (as a failed unshare does):
 * there its model holds, so a close racing a use is still reported.
 */
#define _GNU_SOURCE
#include "top/sampler.h"
#include "node/counters.h"
#include "base/log.h"
#include "base/util.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

struct pn_counters_sampler {
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct pn_counters_set live;	/* the thread's own */
	struct pn_counters_set snap;	/* newest results, under lock */
	int efd;
	double interval, first_delay;
	int stop, done, err, kick, brief;
	int lossless;			/* wait for each snapshot to be taken */
	uint64_t taken;			/* seq of the last snapshot taken */
	char detail[80];	/* for live.cfg.detail, under lock */
	char busy_what[80];
	char errmsg[1024];	/* the thread's message of err (pn_errmsg is per thread) */
	uint64_t busy_since;	/* 0: idle */
	struct pn_counters_sampler *next_abandoned;
};

/* Samplers whose thread was stuck at stop time: kept reachable, never freed. */
static struct pn_counters_sampler *abandoned;
static pthread_mutex_t abandoned_lock = PTHREAD_MUTEX_INITIALIZER;

static void sampler_progress(void *arg, const char *what)
{
	struct pn_counters_sampler *s = arg;

	pthread_mutex_lock(&s->lock);
	if (what) {
		snprintf(s->busy_what, sizeof(s->busy_what), "%s", what);
		s->busy_since = pn_now_ns();
	} else {
		s->busy_what[0] = 0;
	}
	pthread_mutex_unlock(&s->lock);
}

static void ns_to_ts(uint64_t ns, struct timespec *ts)
{
	ts->tv_sec = (time_t)(ns / 1000000000ull);
	ts->tv_nsec = (long)(ns % 1000000000ull);
}

#if defined(__SANITIZE_THREAD__)
#define SHARE_FILES 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define SHARE_FILES 1
#endif
#endif
#ifndef SHARE_FILES
#define SHARE_FILES 0
#endif

static void *sampler_main(void *arg)
{
	struct pn_counters_sampler *s = arg;
	uint64_t start, next;
	int first = 1, ret;

	if (!SHARE_FILES && unshare(CLONE_FILES))
		PN_DBG(PN_LOG_NIC, "the sampler shares the descriptor table: %s", strerror(errno));
	for (;;) {
		uint64_t one = 1;

		pthread_mutex_lock(&s->lock);
		if (s->stop) {
			pthread_mutex_unlock(&s->lock);
			break;
		}
		s->busy_since = pn_now_ns();
		s->busy_what[0] = 0;
		s->kick = 0;
		memcpy(s->live.cfg.detail, s->detail, sizeof(s->detail));
		pthread_mutex_unlock(&s->lock);

		start = pn_now_ns();
		ret = pn_counters_set_sample(&s->live);

		pthread_mutex_lock(&s->lock);
		s->busy_since = 0;
		s->busy_what[0] = 0;
		s->live.interval = s->interval;
		if (!ret)
			ret = pn_counters_set_copy(&s->snap, &s->live);
		if (ret) {
			s->err = ret;
			snprintf(s->errmsg, sizeof(s->errmsg), "%s", pn_errmsg(ret));
		}
		pthread_mutex_unlock(&s->lock);
		if (write(s->efd, &one, sizeof(one)) < 0) {
			/* the counter cannot overflow in practice; nothing to do */
		}
		if (ret)
			break;

		pthread_mutex_lock(&s->lock);
		/* batch output: not one sample lost to a slow caller */
		while (s->lossless && s->taken < s->snap.seq && !s->stop)
			pthread_cond_wait(&s->cond, &s->lock);
		for (;;) {
			double wait = first && s->first_delay > 0 ? s->first_delay : s->interval;
			struct timespec ts;

			next = start + (uint64_t)(wait * 1e9);
			if (s->stop || s->kick || pn_now_ns() >= next)
				break;
			ns_to_ts(next, &ts);
			pthread_cond_timedwait(&s->cond, &s->lock, &ts);
			/* a new interval recomputes next from the same start */
		}
		first = 0;
		pthread_mutex_unlock(&s->lock);
	}
	/* its files are in this thread's table: closed here */
	pn_counters_set_release(&s->live);
	pthread_mutex_lock(&s->lock);
	s->done = 1;
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

int pn_sampler_start(struct pn_counters_sampler **sp, struct pn_counters_set *set, double interval,
			 double first_delay)
{
	struct pn_counters_sampler *s;
	pthread_condattr_t ca;
	sigset_t all, old;
	int ret;

	*sp = NULL;
	if (!(interval > 0))
		return pn_err(-EINVAL, "interval must be positive");
	s = calloc(1, sizeof(*s));
	if (!s)
		return pn_err(-ENOMEM, "out of memory");
	s->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (s->efd < 0) {
		ret = pn_err(-errno, "cannot create an eventfd: %s", strerror(errno));
		goto err_free;
	}
	pthread_mutex_init(&s->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&s->cond, &ca);
	pthread_condattr_destroy(&ca);
	s->live = *set;	/* take over */
	memset(set, 0, sizeof(*set));
	s->live.cfg.progress = sampler_progress;
	s->live.cfg.progress_arg = s;
	s->live.interval = interval;
	pn_counters_set_init(&s->snap, &s->live.cfg);
	s->snap.owner = 0;
	s->interval = interval;
	s->first_delay = first_delay;
	s->brief = s->live.cfg.brief;
	/* signals (SIGWINCH, SIGINT) stay with the caller's thread */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	ret = -pthread_create(&s->thread, NULL, sampler_main, s);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (ret) {
		pn_err(ret, "cannot start the sampler thread: %s", strerror(-ret));
		goto err_cond;
	}
	*sp = s;
	return 0;

err_cond:
	*set = s->live;
	set->cfg.progress = NULL;
	pthread_cond_destroy(&s->cond);
	pthread_mutex_destroy(&s->lock);
	close(s->efd);
err_free:
	free(s);
	return ret;
}

int pn_sampler_fd(const struct pn_counters_sampler *s)
{
	return s->efd;
}

int pn_sampler_take(struct pn_counters_sampler *s, struct pn_counters_set *view)
{
	uint64_t v;
	int ret = 0;

	/* clear first: a snapshot published after this point wakes the caller again */
	if (read(s->efd, &v, sizeof(v)) < 0) {
		/* EAGAIN: nothing pending */
	}
	pthread_mutex_lock(&s->lock);
	if (s->snap.seq > view->seq) {
		ret = pn_counters_set_copy(view, &s->snap);
		if (!ret) {
			ret = 1;
			s->taken = s->snap.seq;
			if (s->lossless)
				pthread_cond_broadcast(&s->cond);
		}
	} else if (s->err) {
		ret = pn_err(s->err, "%s", s->errmsg);
	}
	pthread_mutex_unlock(&s->lock);
	return ret;
}

void pn_sampler_set_interval(struct pn_counters_sampler *s, double interval)
{
	if (!(interval > 0))
		return;
	pthread_mutex_lock(&s->lock);
	s->interval = interval;
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);
}

void pn_sampler_set_lossless(struct pn_counters_sampler *s, int on)
{
	pthread_mutex_lock(&s->lock);
	s->lossless = !!on;
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);
}

void pn_sampler_set_detail(struct pn_counters_sampler *s, const char *name)
{
	pthread_mutex_lock(&s->lock);
	if (strcmp(s->detail, name ? name : "")) {
		snprintf(s->detail, sizeof(s->detail), "%s", name ? name : "");
		if (s->brief && name) {
			s->kick = 1; /* read its counters now */
			pthread_cond_broadcast(&s->cond);
		}
	}
	pthread_mutex_unlock(&s->lock);
}

double pn_sampler_interval(struct pn_counters_sampler *s)
{
	double v;

	pthread_mutex_lock(&s->lock);
	v = s->interval;
	pthread_mutex_unlock(&s->lock);
	return v;
}

int pn_sampler_busy(struct pn_counters_sampler *s, char *what, size_t len, double *secs)
{
	int busy;

	pthread_mutex_lock(&s->lock);
	busy = s->busy_since != 0;
	if (what && len)
		snprintf(what, len, "%s", busy ? s->busy_what : "");
	if (secs)
		*secs = busy ? (double)(pn_now_ns() - s->busy_since) * 1e-9 : 0;
	pthread_mutex_unlock(&s->lock);
	return busy;
}

int pn_sampler_stop(struct pn_counters_sampler *s, double timeout)
{
	char what[sizeof(s->busy_what)];
	struct timespec ts;
	int done;

	if (!s)
		return 0;
	pthread_mutex_lock(&s->lock);
	s->stop = 1;
	pthread_cond_broadcast(&s->cond);
	ns_to_ts(pn_now_ns() + (uint64_t)(timeout > 0 ? timeout * 1e9 : 0), &ts);
	while (!s->done) {
		if (pthread_cond_timedwait(&s->cond, &s->lock, &ts) == ETIMEDOUT)
			break;
	}
	done = s->done;
	snprintf(what, sizeof(what), "%s", s->busy_what);
	pthread_mutex_unlock(&s->lock);
	if (!done) {
		pthread_detach(s->thread);
		pthread_mutex_lock(&abandoned_lock);
		s->next_abandoned = abandoned;
		abandoned = s;
		pthread_mutex_unlock(&abandoned_lock);
		return pn_err(-ETIMEDOUT, "the sampler is stuck reading '%s'", what);
	}
	pthread_join(s->thread, NULL);
	pn_counters_set_release(&s->live);
	pn_counters_set_release(&s->snap);
	pthread_cond_destroy(&s->cond);
	pthread_mutex_destroy(&s->lock);
	close(s->efd);
	free(s);
	return 0;
}
