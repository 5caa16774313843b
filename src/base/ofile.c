/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
#include "base/ofile.h"
#include "base/file.h"
#include "base/log.h"
#include "base/out.h"
#include "base/util.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

struct pn_ofile {
	char *path;		/* as given, for messages */
	char *dir;		/* copy of path cut at the last '/' */
	const char *base;	/* last component of path (in dir's buffer) */
	int dirfd;		/* the directory of base (O_PATH) */
	int fd;			/* the temporary file */
	FILE *f;
	char tmp[NAME_MAX + 1];	/* its name once it has one, else "" (O_TMPFILE) */
	unsigned flags;
	int inplace;		/* stdout or stderr: f is that stream */
};

/* Whose document standard output carries (pn_ofile_claim_stdout); NULL: none */
static const char *stdout_owner;

void pn_ofile_claim_stdout(const char *who)
{
	stdout_owner = who;
}

/* An output file that is standard output, where a document goes: refused,
 * unless that is /dev/null (nothing is kept there to break). */
static int stdout_taken(const char *path)
{
	struct stat st;

	if (!stdout_owner || (!fstat(STDOUT_FILENO, &st) && S_ISCHR(st.st_mode) &&
			      st.st_rdev == makedev(1, 3)))
		return 0;
	return pn_err(-EINVAL, "cannot write '%s': it is standard output, where %s writes its "
		      "document", path, stdout_owner);
}

static int refuse(const char *path, mode_t m)
{
	int code = S_ISDIR(m) ? -EISDIR : S_ISLNK(m) ? -ELOOP : -EINVAL;

	return pn_err(code, "refusing to write '%s': it is %s, not a regular file%s", path,
		      pn_file_kind(m), S_ISLNK(m) ? " (give the name of its target)" : "");
}

static int fail_errno(const char *path, int e)
{
	return pn_err(-e, "cannot write '%s': %s", path, strerror(e));
}

/* 1 or 2 when path names standard output or error ("-" is stdout), else 0. */
static int std_stream(const char *path)
{
	struct stat a, b;
	int fd;

	if (!strcmp(path, "-"))
		return 1;
	if (stat(path, &a))
		return 0;
	for (fd = 1; fd <= 2; fd++)
		if (!fstat(fd, &b) && a.st_dev == b.st_dev && a.st_ino == b.st_ino &&
		    (a.st_mode & S_IFMT) == (b.st_mode & S_IFMT))
			return fd;
	return 0;
}

/* ".BASE.xxxxxx": hidden, and not ending in BASE's suffix (a textfile
 * collector reading *.prom skips it while it is written). */
static void tmp_name(struct pn_ofile *of)
{
	static unsigned counter;
	struct timespec ts;
	uint64_t x;

	clock_gettime(CLOCK_REALTIME, &ts);
	x = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 30) ^ ((uint64_t)getpid() << 20) ^
	    (uint64_t)__atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED) * 0x9e3779b97f4a7c15ull;
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	snprintf(of->tmp, sizeof(of->tmp), ".%.*s.%06x", NAME_MAX - 9, of->base,
		 (unsigned)(x & 0xffffff));
}

static int make_temp(struct pn_ofile *of)
{
	mode_t mode = of->flags & PN_OFILE_PRIVATE ? 0600 : 0644;
	int i, e;

	/* unnamed until commit: a run that is killed leaves nothing behind */
	of->fd = openat(of->dirfd, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, mode);
	if (of->fd >= 0)
		return 0;
	e = errno;
	if (e != EOPNOTSUPP && e != EISDIR && e != EINVAL)
		return fail_errno(of->path, e);
	for (i = 0; i < 100; i++) {
		tmp_name(of);
		of->fd = openat(of->dirfd, of->tmp,
				O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
		if (of->fd >= 0)
			return 0;
		if (errno != EEXIST)
			break;
	}
	e = errno;
	of->tmp[0] = 0;
	return fail_errno(of->path, e);
}

/* Give the unnamed temporary file a name in the directory. */
static int link_temp(struct pn_ofile *of)
{
	char proc[64];
	int i, e;

	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", of->fd);
	for (i = 0; i < 100; i++) {
		tmp_name(of);
		/* root links the descriptor itself (no walk through /proc);
		 * others need /proc */
		if (!linkat(of->fd, "", of->dirfd, of->tmp, AT_EMPTY_PATH))
			return 0;
		if (errno == EEXIST)
			continue;
		if (!linkat(AT_FDCWD, proc, of->dirfd, of->tmp, AT_SYMLINK_FOLLOW))
			return 0;
		if (errno != EEXIST)
			break;
	}
	e = errno;
	of->tmp[0] = 0;
	return fail_errno(of->path, e);
}

static void free_of(struct pn_ofile *of)
{
	if (of->dirfd >= 0)
		close(of->dirfd);
	free(of->path);
	free(of->dir);
	free(of);
}

int pn_ofile_open(struct pn_ofile **ofp, const char *path, unsigned flags)
{
	struct pn_ofile *of;
	struct stat st;
	const char *dir;
	char *slash;
	int have, ret, s;

	*ofp = NULL;
	if (!path || !*path)
		return pn_err(-EINVAL, "an output file needs a name");
	of = calloc(1, sizeof(*of));
	if (!of)
		return pn_err(-ENOMEM, "out of memory");
	of->dirfd = -1;
	of->fd = -1;
	of->flags = flags;
	of->path = strdup(path);
	of->dir = strdup(path);
	if (!of->path || !of->dir) {
		ret = pn_err(-ENOMEM, "out of memory");
		goto fail;
	}
	s = std_stream(path);
	if (s == 1 && (ret = stdout_taken(path)))
		goto fail;
	if (s) {
		of->inplace = 1;
		of->f = s == 1 ? stdout : stderr;
		*ofp = of;
		return 0;
	}
	slash = strrchr(of->dir, '/');
	if (slash) {
		*slash = 0;
		of->base = slash + 1;
		dir = slash == of->dir ? "/" : of->dir;
	} else {
		of->base = of->dir;
		dir = ".";
	}
	if (!*of->base || !strcmp(of->base, ".") || !strcmp(of->base, "..")) {
		if (!lstat(path, &st))
			ret = refuse(path, st.st_mode);
		else
			ret = pn_err(-EISDIR, "cannot write '%s': not a file name", path);
		goto fail;
	}
	of->dirfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (of->dirfd < 0) {
		ret = fail_errno(path, errno);
		goto fail;
	}
	have = !fstatat(of->dirfd, of->base, &st, AT_SYMLINK_NOFOLLOW);
	if (!have && errno != ENOENT) {
		ret = fail_errno(path, errno);
		goto fail;
	}
	if (have && !S_ISREG(st.st_mode)) {
		ret = refuse(path, st.st_mode);
		goto fail;
	}
	/* what could not be written in place is not replaced either */
	if (have && faccessat(of->dirfd, of->base, W_OK, AT_EACCESS)) {
		ret = fail_errno(path, errno);
		goto fail;
	}
	ret = make_temp(of);
	if (ret)
		goto fail;
	if (have) {
		/* best effort: the file stays whose it was, as writing in place did */
		if (geteuid() == 0 && (st.st_uid != geteuid() || st.st_gid != getegid()) &&
		    fchown(of->fd, st.st_uid, st.st_gid)) {
		}
		if (!(flags & PN_OFILE_PRIVATE) && fchmod(of->fd, st.st_mode & 0777)) {
		}
	}
	of->f = fdopen(of->fd, "w");
	if (!of->f) {
		ret = fail_errno(path, errno);
		goto fail;
	}
	*ofp = of;
	return 0;
fail:
	pn_ofile_abort(of);
	return ret;
}

FILE *pn_ofile_file(const struct pn_ofile *of)
{
	return of->f;
}

const char *pn_ofile_path(const struct pn_ofile *of)
{
	return of->path;
}

int pn_ofile_inplace(const struct pn_ofile *of)
{
	return of->inplace;
}

void pn_ofile_abort(struct pn_ofile *of)
{
	if (!of)
		return;
	if (of->inplace && ferror(of->f)) {
		/* the caller says why it gives up: the final flush of stdout
		 * must not report the same write error again */
		__fpurge(of->f);
		clearerr(of->f);
	}
	if (!of->inplace) {
		if (of->f)
			fclose(of->f);
		else if (of->fd >= 0)
			close(of->fd);
		if (of->tmp[0] && of->dirfd >= 0)
			unlinkat(of->dirfd, of->tmp, 0);
	}
	free_of(of);
}

/*
 * PN_OFILE_VOLATILE: swap the new file with the old one, then remove the
 * old one.  Returns 0 when done, 1 where the file system cannot swap (the
 * caller renames), or -errno.  What was swapped out must be a regular file:
 * anything else put at the name since the last check (a directory, which a
 * rename would have failed on) is swapped back and refused.
 */
static int exchange(struct pn_ofile *of)
{
	struct stat st;
	int e;

	if (renameat2(of->dirfd, of->tmp, of->dirfd, of->base, RENAME_EXCHANGE)) {
		e = errno;
		if (e == EINVAL || e == ENOSYS || e == EOPNOTSUPP || e == ENOENT)
			return 1;
		return pn_err(-e, "cannot rename onto '%s': %s", of->path, strerror(e));
	}
	if (fstatat(of->dirfd, of->tmp, &st, AT_SYMLINK_NOFOLLOW)) {
		e = errno;
		of->tmp[0] = 0;
		return e == ENOENT ? 0 : pn_err(-e, "cannot remove the old '%s': %s", of->path, strerror(e));
	}
	if (!S_ISREG(st.st_mode)) {
		if (!renameat2(of->dirfd, of->tmp, of->dirfd, of->base, RENAME_EXCHANGE))
			return refuse(of->path, st.st_mode);
		/* the new file stays at the name; what is at tmp is not ours */
		e = pn_err(-errno, "'%s' became %s while it was written, now named '%s': %s",
			   of->path, pn_file_kind(st.st_mode), of->tmp, strerror(errno));
		of->tmp[0] = 0;
		return e;
	}
	if (unlinkat(of->dirfd, of->tmp, 0)) {
		e = errno;
		pn_err(-e, "cannot remove the old '%s' (now '%s'): %s", of->path, of->tmp, strerror(e));
		of->tmp[0] = 0;
		return -e;
	}
	return 0;
}

int pn_ofile_commit(struct pn_ofile *of)
{
	struct stat st;
	int ret, e, have;

	if (!of)
		return pn_err(-EINVAL, "no output file");
	e = -pn_out_flush(of->f);
	if (e) {
		ret = pn_err(-e, "write error on '%s': %s", of->path, strerror(e));
		goto fail;
	}
	if (of->inplace) {
		free_of(of);
		return 0;
	}
	if ((of->flags & PN_OFILE_SYNC) && fsync(of->fd)) {
		ret = pn_err(-errno, "write error on '%s': %s", of->path, strerror(errno));
		goto fail;
	}
	/* it may have changed since the open */
	have = !fstatat(of->dirfd, of->base, &st, AT_SYMLINK_NOFOLLOW);
	if (have && !S_ISREG(st.st_mode)) {
		ret = refuse(of->path, st.st_mode);
		goto fail;
	}
	if (!of->tmp[0]) {
		ret = link_temp(of);
		if (ret)
			goto fail;
	}
	e = fclose(of->f) ? errno : 0;
	of->f = NULL;
	of->fd = -1;
	if (e) {
		ret = pn_err(-e, "write error on '%s': %s", of->path, strerror(e));
		goto fail;
	}
	if ((of->flags & PN_OFILE_VOLATILE) && have) {
		ret = exchange(of);
		if (ret <= 0) {
			if (ret)
				goto fail;
			free_of(of);
			return 0;
		}
	}
	if (renameat(of->dirfd, of->tmp, of->dirfd, of->base)) {
		ret = pn_err(-errno, "cannot rename onto '%s': %s", of->path, strerror(errno));
		goto fail;
	}
	free_of(of);
	return 0;
fail:
	pn_ofile_abort(of);
	return ret;
}

int pn_ofile_check(const char *path)
{
	struct pn_ofile *of;
	int ret = pn_ofile_open(&of, path, 0);

	if (!ret)
		pn_ofile_abort(of);
	return ret;
}

int pn_ofile_std(const char *path)
{
	return path ? std_stream(path) : 0;
}

/* The directory of path (stat) and its last component; 0, or -1. */
static int dir_entry(const char *path, struct stat *dir, const char **base)
{
	const char *slash = strrchr(path, '/');
	char *d;
	int ret;

	*base = slash ? slash + 1 : path;
	if (!slash)
		return stat(".", dir);
	d = strndup(path, slash == path ? 1 : (size_t)(slash - path));
	if (!d)
		return -1;
	ret = stat(d, dir);
	free(d);
	return ret;
}

int pn_ofile_same(const char *a, const char *b)
{
	struct stat x, y;
	const char *ba, *bb;
	int s = std_stream(a);

	if (!strcmp(a, b) || (s && s == std_stream(b)))
		return 1;
	if (!stat(a, &x) && !stat(b, &y))
		return x.st_dev == y.st_dev && x.st_ino == y.st_ino;
	/* a name not there yet: the same entry of the same directory */
	return !dir_entry(a, &x, &ba) && !dir_entry(b, &y, &bb) && x.st_dev == y.st_dev &&
	       x.st_ino == y.st_ino && *ba && !strcmp(ba, bb);
}

int pn_ofile_append(const char *path)
{
	struct stat a, b;
	int fd, have, e, s;

	if (!path || !*path)
		return pn_err(-EINVAL, "an output file needs a name");
	s = std_stream(path);
	if (s == 1 && (e = stdout_taken(path)))
		return e;
	if (s) {
		fd = fcntl(s, F_DUPFD_CLOEXEC, 3);
		return fd >= 0 ? fd : fail_errno(path, errno);
	}
	have = !lstat(path, &a);
	if (!have && errno != ENOENT)
		return fail_errno(path, errno);
	if (have && !S_ISREG(a.st_mode))
		return refuse(path, a.st_mode);
	fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC,
		  0644);
	if (fd < 0) {
		e = errno;
		if (!lstat(path, &a) && !S_ISREG(a.st_mode))
			return refuse(path, a.st_mode);
		return fail_errno(path, e);
	}
	/* it may have been replaced between the lstat and the open */
	if (fstat(fd, &b) || !S_ISREG(b.st_mode) || (have && (a.st_dev != b.st_dev || a.st_ino != b.st_ino))) {
		e = S_ISREG(b.st_mode) ? -EAGAIN : 0;
		close(fd);
		if (e)
			return pn_err(e, "cannot write '%s': it changed while it was opened", path);
		return refuse(path, b.st_mode);
	}
	return fd;
}
