/* SPDX-License-Identifier: MIT */
/* Input files (file.h): the one bounded whole-file reader and pn_file_kind. */
#define _GNU_SOURCE
#include "base/file.h"
#include "base/log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int pn_file_read(const char *path, char **buf, size_t *len)
{
	size_t cap, n = 0;
	struct stat st;
	char *b = NULL;
	int fd, ret = 0;

	/*
	 * O_NONBLOCK: opening a FIFO (or a device) must not wait; what was
	 * opened is checked with fstat before anything is read from it.
	 */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return pn_err(-errno, "cannot open '%s': %s", path, strerror(errno));
	if (fstat(fd, &st)) {
		ret = pn_err(-errno, "cannot read '%s': %s", path, strerror(errno));
		goto fail;
	}
	if (!S_ISREG(st.st_mode)) {
		ret = pn_err(S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL,
			     "'%s' is %s, not a regular file", path, pn_file_kind(st.st_mode));
		goto fail;
	}
	if (st.st_size > PN_FILE_READ_MAX) {
		ret = pn_err(-EFBIG, "'%s' is larger than %d MiB", path, PN_FILE_READ_MAX >> 20);
		goto fail;
	}
	/* the size may be 0 (procfs) or change while reading: read to the end, bounded */
	cap = (size_t)st.st_size + 1 > 4096 ? (size_t)st.st_size + 2 : 4096;
	for (;;) {
		ssize_t r;

		if (!b || cap - n < 2) {
			char *nb;

			if (b)
				cap = cap > PN_FILE_READ_MAX / 2 ? (size_t)PN_FILE_READ_MAX + 2 : cap * 2;
			nb = realloc(b, cap);
			if (!nb) {
				ret = pn_err(-ENOMEM, "out of memory reading '%s'", path);
				goto fail;
			}
			b = nb;
		}
		r = read(fd, b + n, cap - n - 1);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			ret = pn_err(-errno, "cannot read '%s': %s", path, strerror(errno));
			goto fail;
		}
		if (r == 0)
			break;
		n += (size_t)r;
		if (n > PN_FILE_READ_MAX) {
			ret = pn_err(-EFBIG, "'%s' is larger than %d MiB", path, PN_FILE_READ_MAX >> 20);
			goto fail;
		}
	}
	close(fd);
	b[n] = 0;
	*buf = b;
	*len = n;
	return 0;
fail:
	close(fd);
	free(b);
	return ret;
}

const char *pn_file_kind(unsigned int m)
{
	if (S_ISREG(m))
		return "a regular file";
	if (S_ISDIR(m))
		return "a directory";
	if (S_ISLNK(m))
		return "a symbolic link";
	if (S_ISCHR(m))
		return "a character device";
	if (S_ISBLK(m))
		return "a block device";
	if (S_ISFIFO(m))
		return "a FIFO";
	if (S_ISSOCK(m))
		return "a socket";
	return "a special file";
}

int pn_file_own_dir(const char *dir, unsigned int forbid, const char *what, const char *want)
{
	struct stat st;
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	if (dfd < 0)
		return pn_err(errno == ELOOP || errno == ENOTDIR ? -EPERM : -errno,
			      "refusing '%s' for %s: %s", dir, what,
			      errno == ELOOP || errno == ENOTDIR ? "not a directory (a symbolic link?)"
								 : strerror(errno));
	if (fstat(dfd, &st) || st.st_uid != geteuid() || (st.st_mode & forbid)) {
		close(dfd);
		return pn_err(-EPERM, "refusing '%s' for %s: owned by uid %u with mode %03o, not by "
			      "uid %u %s", dir, what, (unsigned)st.st_uid, (unsigned)(st.st_mode & 0777),
			      (unsigned)geteuid(), want);
	}
	return dfd;
}

void pn_file_hold_std(void)
{
	int fd, p[2];

	for (fd = 0; fd <= 2; fd++) {
		if (fcntl(fd, F_GETFD) >= 0 || errno != EBADF)
			continue;
		if (pipe2(p, O_CLOEXEC))
			return;
		/* p[0] is fd, the lowest free; p[1] may be a later closed one */
		close(p[1]);
	}
}
