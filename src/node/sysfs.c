/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
#include "node/sysfs.h"
#include "base/log.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int root_fd = -1; /* -1: live system, paths used as they are */
static char root_name[PATH_MAX] = "/";

int pn_sysfs_set_root(const char *dir)
{
	int fd;

	if (!dir || !*dir || !strcmp(dir, "/")) {
		if (root_fd >= 0)
			close(root_fd);
		root_fd = -1;
		snprintf(root_name, sizeof(root_name), "/");
		return 0;
	}
	fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return pn_err(-errno, "cannot open sysfs root '%s': %s", dir, strerror(errno));
	if (root_fd >= 0)
		close(root_fd);
	root_fd = fd;
	snprintf(root_name, sizeof(root_name), "%s", dir);
	return 0;
}

const char *pn_sysfs_root(void)
{
	return root_name;
}

int pn_sysfs_is_live(void)
{
	return root_fd < 0;
}

static int vpath(char *buf, size_t len, const char *fmt, va_list ap)
{
	int n = vsnprintf(buf, len, fmt, ap);

	if (n < 0 || (size_t)n >= len)
		return -ENAMETOOLONG;
	return 0;
}

/*
 * Never blocks: O_NONBLOCK makes opening a FIFO (a captured tree may hold
 * one; real sysfs and procfs never do) return at once.  A --sysfs-root tree
 * is regular files on a disk: penny top rereads a thousand of them every
 * interval, which must not make the kernel update (and write back) their
 * access times, so they are read with O_NOATIME where the owner or root
 * may (the live /sys and /proc have no access times to keep).
 */
static int open_path(const char *path, int flags)
{
	int fd;

	flags |= O_CLOEXEC | O_NONBLOCK | O_NOCTTY;
	if (root_fd < 0)
		return open(path, flags);
	while (*path == '/')
		path++;
	fd = openat(root_fd, *path ? path : ".", flags | O_NOATIME);
	if (fd < 0 && errno == EPERM)
		fd = openat(root_fd, *path ? path : ".", flags);
	return fd;
}

/*
 * Open a file to read values from: a regular file only, as every sysfs
 * attribute and procfs file is.  A FIFO, device or socket in a --sysfs-root
 * tree is refused (-EINVAL, with a message) before anything reads from it.
 */
static int open_regular(const char *path, int flags)
{
	struct stat st;
	int fd = open_path(path, flags);

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		return pn_err(-EINVAL, "'%s%s' is not a regular file", root_fd < 0 ? "" : root_name,
			      path);
	}
	return fd;
}

int pn_sys_open(int flags, const char *fmt, ...)
{
	char path[PATH_MAX];
	va_list ap;
	int ret;

	va_start(ap, fmt);
	ret = vpath(path, sizeof(path), fmt, ap);
	va_end(ap);
	if (ret)
		return ret;
	return open_regular(path, flags);
}

static int read_path(const char *path, char *buf, size_t len)
{
	ssize_t n;
	int fd;

	if (!len)
		return -EINVAL;
	fd = open_regular(path, O_RDONLY);
	if (fd < 0)
		return fd;
	n = read(fd, buf, len - 1);
	if (n < 0) {
		int e = errno;

		close(fd);
		return -e;
	}
	close(fd);
	while (n > 0 && isspace((unsigned char)buf[n - 1]))
		n--;
	buf[n] = 0;
	return (int)n;
}

/* The file FMT names (below the root) into BUF: length, or -errno. */
static int vread(char *buf, size_t len, const char *fmt, va_list ap)
{
	char path[PATH_MAX];
	int ret = vpath(path, sizeof(path), fmt, ap);

	return ret ? ret : read_path(path, buf, len);
}

int pn_sys_read(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;
	int ret;

	va_start(ap, fmt);
	ret = vread(buf, len, fmt, ap);
	va_end(ap);
	return ret;
}

int pn_sys_parse_u64(const char *s, uint64_t *v)
{
	char *end;
	unsigned long long x;

	while (isspace((unsigned char)*s))
		s++;
	if (!*s || *s == '-')
		return -EINVAL;
	errno = 0;
	x = strtoull(s, &end, 0);
	if (errno || end == s)
		return -EINVAL;
	*v = x;
	return 0;
}

int pn_sys_u64(uint64_t *v, const char *fmt, ...)
{
	char buf[64];
	va_list ap;
	int ret;

	va_start(ap, fmt);
	ret = vread(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	return ret < 0 ? ret : pn_sys_parse_u64(buf, v);
}

int pn_sys_parse_int(const char *s, int *v)
{
	char *end;
	long x;

	errno = 0;
	x = strtol(s, &end, 0);
	if (errno || end == s || x < INT_MIN || x > INT_MAX)
		return -EINVAL;
	*v = (int)x;
	return 0;
}

int pn_sys_int(int *v, const char *fmt, ...)
{
	char buf[64];
	va_list ap;
	int ret;

	va_start(ap, fmt);
	ret = vread(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	return ret < 0 ? ret : pn_sys_parse_int(buf, v);
}

DIR *pn_sys_opendir(const char *fmt, ...)
{
	char path[PATH_MAX];
	va_list ap;
	DIR *d;
	int fd;

	va_start(ap, fmt);
	fd = vpath(path, sizeof(path), fmt, ap);
	va_end(ap);
	if (fd) {
		errno = ENAMETOOLONG;
		return NULL;
	}
	fd = open_path(path, O_RDONLY | O_DIRECTORY);
	if (fd < 0)
		return NULL;
	d = fdopendir(fd);
	if (!d)
		close(fd);
	return d;
}

ssize_t pn_sys_readlink(char *buf, size_t len, const char *fmt, ...)
{
	char path[PATH_MAX];
	const char *p = path;
	va_list ap;
	ssize_t n;
	int ret;

	va_start(ap, fmt);
	ret = vpath(path, sizeof(path), fmt, ap);
	va_end(ap);
	if (ret)
		return ret;
	if (!len)
		return -EINVAL;
	if (root_fd < 0) {
		n = readlink(path, buf, len - 1);
	} else {
		while (*p == '/')
			p++;
		n = readlinkat(root_fd, p, buf, len - 1);
	}
	if (n < 0)
		return -errno;
	buf[n] = 0;
	return n;
}

int pn_sys_exists(const char *fmt, ...)
{
	char path[PATH_MAX];
	const char *p = path;
	struct stat st;
	va_list ap;
	int ret;

	va_start(ap, fmt);
	ret = vpath(path, sizeof(path), fmt, ap);
	va_end(ap);
	if (ret)
		return 0;
	if (root_fd < 0)
		return stat(path, &st) == 0;
	while (*p == '/')
		p++;
	return fstatat(root_fd, *p ? p : ".", &st, 0) == 0;
}
