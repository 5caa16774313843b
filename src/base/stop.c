/* SPDX-License-Identifier: MIT */
/* A stop's thread and the output's turns with it (stop.h). */
#define _GNU_SOURCE
#include "base/stop.h"
#include "base/log.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <time.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int ended;			/* under lock: the output has its end */
static _Thread_local int depth;		/* this thread's holds */
static sigset_t set;
static void (*stop_fn)(void *arg, int sig);
static void *stop_arg;

static void *stop_main(void *unused)
{
	int sig = 0;

	(void)unused;
	while (sigwait(&set, &sig))
		;
	stop_fn(stop_arg, sig);
	signal(sig, SIG_DFL);
	pthread_sigmask(SIG_UNBLOCK, &set, NULL);
	raise(sig);
	return NULL;
}

int pn_stop_start(void (*fn)(void *arg, int sig), void *arg)
{
	static const int sigs[] = { SIGTERM, SIGINT, SIGHUP };
	static int started;
	struct sigaction old;
	pthread_t th;
	size_t i, n = 0;
	int ret;

	if (started)
		return 0;
	started = 1;
	sigemptyset(&set);
	for (i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		if (!sigaction(sigs[i], NULL, &old) && old.sa_handler != SIG_IGN)
			n += !sigaddset(&set, sigs[i]);
	if (!n)
		return 0;
	stop_fn = fn;
	stop_arg = arg;
	ret = -pthread_sigmask(SIG_BLOCK, &set, NULL);
	if (!ret && (ret = -pthread_create(&th, NULL, stop_main, NULL)))
		pthread_sigmask(SIG_UNBLOCK, &set, NULL);
	if (!ret)
		pthread_detach(th);
	return ret ? pn_err(ret, "cannot start the thread that waits for a stop") : 0;
}

int pn_stop_hold(double timeout)
{
	struct timespec ts;

	if (depth)
		return ++depth;
	if (timeout < 0) {
		pthread_mutex_lock(&lock);
	} else {
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += (time_t)timeout;
		ts.tv_nsec += (long)((timeout - (double)(time_t)timeout) * 1e9);
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		if (pthread_mutex_timedlock(&lock, &ts))
			return 0;
	}
	if (!ended)
		return depth = 1;
	pthread_mutex_unlock(&lock);
	return 0;
}

void pn_stop_release(int end)
{
	if (!depth || --depth)
		return;
	ended |= end;
	pthread_mutex_unlock(&lock);
}

void pn_stop_child(void)
{
	pthread_sigmask(SIG_UNBLOCK, &set, NULL);
}
