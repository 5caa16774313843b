/* SPDX-License-Identifier: MIT */
/*
 * LD_PRELOAD shim for the tests: reads of one regular file hang, as a sysfs
 * attribute of a wedged driver can (penny refuses FIFOs and opens files
 * non-blocking, so nothing in a fake tree blocks by itself).
 *
 *   PENNY_TEST_BLOCK=FILE LD_PRELOAD=build/tests/preload/block-read.so penny ...
 *
 * read() and pread() of a descriptor of FILE (same device and inode as FILE
 * when the process started) never return.  Nothing else changes.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

static dev_t block_dev;
static ino_t block_ino;
static int armed;

__attribute__((constructor)) static void block_init(void)
{
	const char *f = getenv("PENNY_TEST_BLOCK");
	struct stat st;

	if (f && *f && !stat(f, &st)) {
		block_dev = st.st_dev;
		block_ino = st.st_ino;
		armed = 1;
	}
}

static void hang_if_blocked(int fd)
{
	struct stat st;

	if (!armed || fstat(fd, &st) || st.st_dev != block_dev || st.st_ino != block_ino)
		return;
	for (;;)
		sleep(1);
}

ssize_t read(int fd, void *buf, size_t n)
{
	ssize_t (*real)(int, void *, size_t);

	hang_if_blocked(fd);
	*(void **)&real = dlsym(RTLD_NEXT, "read");
	return real(fd, buf, n);
}

ssize_t pread(int fd, void *buf, size_t n, off_t off)
{
	ssize_t (*real)(int, void *, size_t, off_t);

	hang_if_blocked(fd);
	*(void **)&real = dlsym(RTLD_NEXT, "pread");
	return real(fd, buf, n, off);
}
