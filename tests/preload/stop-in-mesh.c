/* SPDX-License-Identifier: MIT */
/*
 * LD_PRELOAD shim for the tests: a rank stops (SIGSTOP) in the middle of
 * the tcp mesh, after it published its listener, as a rank that an
 * operator or a debugger stopped there would; or it only pauses there, so
 * that the other ranks' mesh listeners stay open that long, waiting for it
 * (a stranger on the host then finds every one of them, however fast the
 * machine builds the mesh).
 *
 *   PENNY_TEST_STOP_MESH=1 LD_PRELOAD=build/tests/preload/stop-in-mesh.so penny ...
 *   PENNY_TEST_SLOW_MESH=SECONDS LD_PRELOAD=build/tests/preload/stop-in-mesh.so penny ...
 *
 * The first connect() after the process's first listen() (in a rank other
 * than 0 of an explicit job: the mesh's listener, then its first
 * connection to a lower rank) stops the process before it connects, or
 * sleeps SECONDS (at most 10).  Nothing else changes.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>

static int listened, armed = -1;
static double slow = -1;

int listen(int fd, int backlog)
{
	int (*real)(int, int);

	*(void **)&real = dlsym(RTLD_NEXT, "listen");
	listened = 1;
	return real(fd, backlog);
}

int connect(int fd, const struct sockaddr *sa, socklen_t sl)
{
	int (*real)(int, const struct sockaddr *, socklen_t);

	*(void **)&real = dlsym(RTLD_NEXT, "connect");
	if (armed < 0)
		armed = getenv("PENNY_TEST_STOP_MESH") != NULL;
	if (slow < 0) {
		const char *v = getenv("PENNY_TEST_SLOW_MESH");

		slow = v ? atof(v) : 0;
		slow = slow > 10 ? 10 : slow;
	}
	if (armed && listened) {
		armed = 0;
		raise(SIGSTOP);
	}
	if (slow > 0 && listened) {
		struct timespec ts = { (time_t)slow, (long)((slow - (double)(time_t)slow) * 1e9) };

		slow = 0;
		nanosleep(&ts, NULL);
	}
	return real(fd, sa, sl);
}
