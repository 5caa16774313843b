/* SPDX-License-Identifier: MIT */
/*
 * LD_PRELOAD shim for the tests: a rank stops (SIGSTOP) in the middle of
 * the tcp mesh, after it published its listener, as a rank that an
 * operator or a debugger stopped there would.
 *
 *   PENNY_TEST_STOP_MESH=1 LD_PRELOAD=build/tests/preload/stop-in-mesh.so penny ...
 *
 * The first connect() after the process's first listen() (in a rank other
 * than 0 of an explicit job: the mesh's listener, then its first
 * connection to a lower rank) stops the process before it connects.
 * Nothing else changes.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>

static int listened, armed = -1;

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
	if (armed && listened) {
		armed = 0;
		raise(SIGSTOP);
	}
	return real(fd, sa, sl);
}
