/* SPDX-License-Identifier: MIT */
/*
 * LD_PRELOAD shim for the tests: a self-launched rank stops (SIGSTOP) as it
 * ends, after its work, as a rank that an operator or a debugger stopped
 * just then would: the other ranks have nothing left to wait for, so only
 * the launcher can notice it.
 *
 *   PENNY_TEST_STOP_AT_EXIT=FILE LD_PRELOAD=build/tests/preload/stop-at-exit.so penny ...
 *
 * The first process to call _exit() (a rank of --np ends that way; the
 * launcher returns from main) creates FILE and stops; the others, and it
 * once continued, exit as they would.  Nothing else changes.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

void _exit(int status)
{
	void (*real)(int) __attribute__((noreturn));
	const char *flag = getenv("PENNY_TEST_STOP_AT_EXIT");
	int fd;

	*(void **)&real = dlsym(RTLD_NEXT, "_exit");
	if (flag && *flag) {
		fd = open(flag, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		if (fd >= 0) {
			close(fd);
			raise(SIGSTOP);
		}
	}
	real(status);
}
