/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
#include "node/sysfs.h"
#include "base/log.h"
#include "base/util.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

static int root_fd = -1; /* -1: live system, paths used as they are */
static char root_name[PATH_MAX] = "/";
static int use_openat2;	  /* the kernel resolves beneath the root (openat2) */
static int force_walk;	  /* tests: the walk even where openat2 works */

#ifndef SYS_openat2
#define SYS_openat2 437	/* the same number on every architecture */
#endif
#ifndef RESOLVE_IN_ROOT
#define RESOLVE_NO_MAGICLINKS 0x02
#define RESOLVE_IN_ROOT 0x10
#endif

/* struct open_how of openat2(2), a stable kernel ABI (Linux 5.6) */
struct pn_open_how {
	uint64_t flags;
	uint64_t mode;
	uint64_t resolve;
};

static int openat2_in_root(const char *path, int flags)
{
	struct pn_open_how how = { .flags = (uint64_t)(unsigned)flags,
				   .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS };

	return (int)syscall(SYS_openat2, root_fd, path, &how, sizeof(how));
}

/* Does this kernel (and its seccomp policy) let openat2 resolve in a root? */
static int probe_openat2(void)
{
	int fd = openat2_in_root(".", O_PATH | O_CLOEXEC);

	if (fd < 0)
		return 0;
	close(fd);
	return 1;
}

void pn_sysfs_force_walk(int on)
{
	force_walk = on;
}

static char fail_suffix[64];	/* tests: opens of paths ending so fail */
static int fail_err, fail_n;

void pn_sysfs_fail_opens(const char *suffix, int err, int n)
{
	snprintf(fail_suffix, sizeof(fail_suffix), "%s", suffix ? suffix : "");
	fail_err = err;
	fail_n = n;
}

static int failing(const char *path)
{
	size_t n = strlen(path), k = strlen(fail_suffix);

	if (fail_n <= 0 || !k || n < k || strcmp(path + n - k, fail_suffix))
		return 0;
	fail_n--;
	return 1;
}

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
	use_openat2 = probe_openat2();
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
 * The walk for kernels without openat2: one component at a time from the
 * root, each opened O_PATH | O_NOFOLLOW below the directory before it, so
 * nothing the kernel resolves can leave the root.  A symbolic link is read
 * and its target walked in its place: a relative one from the link's
 * directory, an absolute one from the root; ".." at the root stays there
 * (what RESOLVE_IN_ROOT does).  The open directories are a stack, so ".."
 * pops one instead of asking the kernel for a parent.  follow_last = 0
 * gives the last component itself (a link to read), opened O_PATH.
 */
#define WALK_DEPTH 128
#define WALK_LINKS 40	/* as the kernel's MAXSYMLINKS */

static int walk_open(const char *path, int flags, int follow_last)
{
	char rest[2 * PATH_MAX], target[PATH_MAX], comp[NAME_MAX + 1];
	int stack[WALK_DEPTH], depth = 0, links = 0, fd = -1, ret;
	size_t off = 0;

	if (strlen(path) >= sizeof(rest))
		return -ENAMETOOLONG;
	snprintf(rest, sizeof(rest), "%s", path);
	stack[0] = root_fd;
	for (;;) {
		struct stat st;
		size_t n;
		int last;

		while (rest[off] == '/')
			off++;
		n = strcspn(rest + off, "/");
		if (!n) { /* the path named a directory (the root, or ended in '/') */
			fd = openat(stack[depth], ".", flags);
			ret = fd < 0 ? -errno : fd;
			goto out;
		}
		if (n >= sizeof(comp)) {
			ret = -ENAMETOOLONG;
			goto out;
		}
		memcpy(comp, rest + off, n);
		comp[n] = 0;
		off += n;
		last = !rest[off + strspn(rest + off, "/")];
		if (!strcmp(comp, ".") || !strcmp(comp, "..")) {
			if (comp[1] && depth > 0)
				close(stack[depth--]);
			if (last) {
				fd = openat(stack[depth], ".", flags);
				ret = fd < 0 ? -errno : fd;
				goto out;
			}
			continue;
		}
		fd = openat(stack[depth], comp, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0 || fstat(fd, &st)) {
			ret = -errno;
			goto out;
		}
		if (S_ISLNK(st.st_mode) && (!last || follow_last)) {
			ssize_t tl = readlinkat(fd, "", target, sizeof(target) - 1);

			close(fd);
			fd = -1;
			if (tl < 0) {
				ret = -errno;
				goto out;
			}
			target[tl] = 0;
			if (++links > WALK_LINKS) {
				ret = -ELOOP;
				goto out;
			}
			if ((size_t)tl + 1 + strlen(rest + off) >= sizeof(rest)) {
				ret = -ENAMETOOLONG;
				goto out;
			}
			/* the target takes the link's place in what is left to walk */
			memmove(rest + tl + 1, rest + off, strlen(rest + off) + 1);
			memcpy(rest, target, (size_t)tl);
			rest[tl] = '/';
			off = 0;
			if (target[0] == '/')
				while (depth > 0)
					close(stack[depth--]);
			continue;
		}
		if (last) {
			if (!follow_last && (flags & O_PATH)) {
				ret = fd;
				fd = -1;
				goto out;
			}
			close(fd);
			fd = openat(stack[depth], comp, flags | O_NOFOLLOW);
			ret = fd < 0 ? -errno : fd;
			goto out;
		}
		if (!S_ISDIR(st.st_mode)) {
			close(fd);
			ret = -ENOTDIR;
			goto out;
		}
		if (depth + 1 >= WALK_DEPTH) {
			close(fd);
			ret = -ENAMETOOLONG;
			goto out;
		}
		stack[++depth] = fd;
	}
out:
	while (depth > 0)
		close(stack[depth--]);
	return ret;
}

/*
 * Open path (absolute, as on the live system) below the root: with openat2
 * and RESOLVE_IN_ROOT where the kernel has it, else the walk above.  Returns
 * a descriptor or -errno.
 */
static int open_in_root(const char *path, int flags, int follow_last)
{
	int fd;

	while (*path == '/')
		path++;
	if (!*path)
		path = ".";
	if (use_openat2 && !force_walk) {
		fd = openat2_in_root(path, follow_last ? flags : flags | O_NOFOLLOW);
		/*
		 * EAGAIN: a rename or mount anywhere on the system raced the
		 * lookup of a "..", and the kernel could not prove the path
		 * stayed beneath the root (openat2(2)).  On a busy machine that
		 * is one lookup in a few through a class link (../../devices):
		 * a device read as missing.  The walk resolves ".." itself.
		 */
		if (fd >= 0 || errno != EAGAIN)
			return fd < 0 ? -errno : fd;
	}
	return walk_open(path, flags, follow_last);
}

/*
 * Never blocks: O_NONBLOCK makes opening a FIFO (a captured tree may hold
 * one; real sysfs and procfs never do) return at once.  A --sysfs-root tree
 * is regular files on a disk: penny top rereads a thousand of them every
 * interval, which must not make the kernel update (and write back) their
 * access times, so they are read with O_NOATIME where the owner or root
 * may (the live /sys and /proc have no access times to keep).  Below a
 * root every path resolves beneath it: a link out of the tree is followed
 * as if the root were / (the live system is never read through a tree).
 * The live system takes the plain open(): penny top's fast path.
 */
static int open_path(const char *path, int flags)
{
	int fd;

	flags |= O_CLOEXEC | O_NONBLOCK | O_NOCTTY;
	if (fail_n > 0 && failing(path))
		return -fail_err;
	if (root_fd < 0) {
		fd = open(path, flags);
		return fd < 0 ? -errno : fd;
	}
	fd = open_in_root(path, flags | O_NOATIME, 1);
	if (fd == -EPERM)
		fd = open_in_root(path, flags, 1);
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
		return fd;
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

int pn_sys_read_bin(void *buf, size_t len, const char *fmt, ...)
{
	char path[PATH_MAX];
	size_t got = 0;
	va_list ap;
	int fd, ret;

	if (!len || len > INT_MAX)
		return -EINVAL;
	va_start(ap, fmt);
	ret = vpath(path, sizeof(path), fmt, ap);
	va_end(ap);
	fd = ret ? ret : open_regular(path, O_RDONLY);
	if (fd < 0)
		return fd;
	/* procfs hands out a page or so per read: read to the end or to len */
	while (got < len) {
		ssize_t n = read(fd, (char *)buf + got, len - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			ret = -errno;
			close(fd);
			return ret;
		}
		if (!n)
			break;
		got += (size_t)n;
	}
	close(fd);
	return (int)got;
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

/* s without the white space around it into buf ("12\n" is 12); -EINVAL when
 * longer than a number can be. */
static int trim(const char *s, char *buf, size_t len)
{
	size_t n;

	while (isspace((unsigned char)*s))
		s++;
	n = strlen(s);
	while (n && isspace((unsigned char)s[n - 1]))
		n--;
	if (n >= len)
		return -EINVAL;
	memcpy(buf, s, n);
	buf[n] = 0;
	return 0;
}

/* The whole value is the number: "12abc" or "1 2" is no 12 (a damaged or
 * foreign file is not read as one), as the counter parser has it. */
int pn_sys_parse_u64(const char *s, uint64_t *v)
{
	char buf[64];

	return trim(s, buf, sizeof(buf)) ? -EINVAL : pn_parse_u64(buf, v);
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
	char buf[64];

	return trim(s, buf, sizeof(buf)) ? -EINVAL : pn_parse_int(buf, v);
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
	if (fd < 0) {
		errno = -fd;
		return NULL;
	}
	d = fdopendir(fd);
	if (!d)
		close(fd);
	return d;
}

ssize_t pn_sys_readlink(char *buf, size_t len, const char *fmt, ...)
{
	char path[PATH_MAX];
	va_list ap;
	ssize_t n;
	int ret, fd;

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
		/* the link itself, its directories resolved beneath the root */
		fd = open_in_root(path, O_PATH | O_CLOEXEC, 0);
		if (fd < 0)
			return fd;
		n = readlinkat(fd, "", buf, len - 1);
		if (n < 0 && errno == ENOENT)
			errno = EINVAL; /* not a link: as readlink(2) says */
		ret = -errno;
		close(fd);
		if (n < 0)
			return ret;
	}
	if (n < 0)
		return -errno;
	buf[n] = 0;
	return n;
}

/* stat() of a path beneath the root, its last component not followed into
 * (O_PATH opens a device or FIFO without touching it). */
static int vstat(struct stat *st, const char *fmt, va_list ap)
{
	char path[PATH_MAX];
	int ret, fd;

	ret = vpath(path, sizeof(path), fmt, ap);
	if (ret)
		return ret;
	if (root_fd < 0)
		return stat(path, st) ? -errno : 0;
	fd = open_in_root(path, O_PATH | O_CLOEXEC, 1);
	if (fd < 0)
		return fd;
	ret = fstat(fd, st) ? -errno : 0;
	close(fd);
	return ret;
}

int pn_sys_exists(const char *fmt, ...)
{
	struct stat st;
	va_list ap;
	int ret;

	va_start(ap, fmt);
	ret = vstat(&st, fmt, ap);
	va_end(ap);
	return ret == 0;
}

int pn_sys_stat(struct stat *st, const char *fmt, ...)
{
	va_list ap;
	int ret;

	va_start(ap, fmt);
	ret = vstat(st, fmt, ap);
	va_end(ap);
	return ret;
}
