/* SPDX-License-Identifier: MIT */
/*
 * LD_PRELOAD shim for the tests: another process takes a port the moment
 * `penny check` lets it go, as a busy host's other programs can.
 *
 *   PENNY_TEST_STEAL_PORT=1 LD_PRELOAD=build/tests/preload/steal-port.so penny check ...
 *
 * In a process whose first argument is "check", close() of a listening
 * TCP socket closes it and at once listens on its address and port again
 * with a socket of its own that never accepts (a stranger that holds the
 * port); where the port is still held (another descriptor of the socket,
 * a child's), nothing else happens.  Nothing else changes; children that
 * run another command are left alone.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static int armed;

__attribute__((constructor)) static void steal_init(void)
{
	char args[256] = "";
	FILE *f = fopen("/proc/self/cmdline", "r");
	size_t n = f ? fread(args, 1, sizeof(args) - 1, f) : 0;
	size_t first = strnlen(args, n);

	if (f)
		fclose(f);
	/* argv[1] follows argv[0]'s NUL */
	armed = getenv("PENNY_TEST_STEAL_PORT") && first + 1 < n &&
		!strcmp(args + first + 1, "check");
}

int close(int fd)
{
	int (*real)(int);
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss), il = sizeof(int);
	int on = 0, ret, s;

	*(void **)&real = dlsym(RTLD_NEXT, "close");
	if (!armed || getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &on, &il) || !on ||
	    getsockname(fd, (struct sockaddr *)&ss, &sl) ||
	    (ss.ss_family != AF_INET && ss.ss_family != AF_INET6))
		return real(fd);
	ret = real(fd);
	s = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s >= 0 && (bind(s, (struct sockaddr *)&ss, sl) || listen(s, 64)))
		real(s);
	return ret;
}
