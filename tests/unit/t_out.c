/* SPDX-License-Identifier: MIT */
/* Output safety: text for unknown values and the output-file helper
 * (src/ofile.h). */
#define _GNU_SOURCE
#include "unit.h"

#include "../../src/log.h"
#include "../../src/ofile.h"
#include "../../src/out.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

static char *render(int json_mode, void (*fn)(struct pn_out *))
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	struct pn_out *o = pn_out_new(f, json_mode);

	fn(o);
	pn_out_free(o);
	fclose(f);
	return buf;
}

static void unknowns(struct pn_out *o)
{
	pn_out_float(o, PN_TEXT, NULL, "%5.1f%% ", 0.0 / 0.0);
	pn_out_float(o, PN_TEXT, NULL, "%%%4.0f|", 0.0 / 0.0);
	pn_out_null(o, PN_TEXT, NULL, "[%6s]%%");
}

TEST(out_na_keeps_the_format_text)
{
	char *t = render(0, unknowns);

	/* "%%" around an unknown value is one '%', as printf writes it */
	CHECK_STR(t, "  n/a% % n/a|[   n/a]%");
	free(t);
}

/* ---- output files ---- */

static char dir[256];

static void path_of(char *buf, size_t len, const char *name)
{
	snprintf(buf, len, "%s/%s", dir, name);
}

static int nentries(void)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	while (d && (e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			n++;
	if (d)
		closedir(d);
	return n;
}

static void put_file(const char *p, const char *s, mode_t mode)
{
	FILE *f = fopen(p, "w");

	if (f) {
		fputs(s, f);
		fclose(f);
	}
	chmod(p, mode);
}

static int file_is(const char *p, const char *s)
{
	char buf[256] = "";
	FILE *f = fopen(p, "r");
	size_t n;

	if (!f)
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = 0;
	fclose(f);
	return !strcmp(buf, s);
}

TEST(ofile_new_and_replaced_files)
{
	struct pn_ofile *of;
	char p[512];
	struct stat a, b;
	mode_t um = umask(022);

	path_of(p, sizeof(p), "new.txt");
	CHECK_EQ_INT(pn_ofile_open(&of, p, PN_OFILE_SYNC), 0);
	CHECK(!pn_ofile_inplace(of));
	fputs("one\n", pn_ofile_file(of));
	CHECK(access(p, F_OK) != 0); /* nothing at the name before the commit */
	CHECK_EQ_INT(pn_ofile_commit(of), 0);
	CHECK(file_is(p, "one\n"));
	CHECK(!stat(p, &a) && (a.st_mode & 0777) == 0644);
	CHECK_EQ_INT(nentries(), 1);

	/* replaced by rename: a new inode, the old mode, no temporary left */
	chmod(p, 0600);
	stat(p, &a);
	CHECK_EQ_INT(pn_ofile_open(&of, p, 0), 0);
	fputs("two\n", pn_ofile_file(of));
	CHECK(file_is(p, "one\n"));
	CHECK_EQ_INT(pn_ofile_commit(of), 0);
	CHECK(file_is(p, "two\n"));
	CHECK(!stat(p, &b) && b.st_ino != a.st_ino && (b.st_mode & 0777) == 0600);
	CHECK_EQ_INT(nentries(), 1);

	/* abort: the old file stays, nothing else appears */
	CHECK_EQ_INT(pn_ofile_open(&of, p, 0), 0);
	fputs("three\n", pn_ofile_file(of));
	pn_ofile_abort(of);
	CHECK(file_is(p, "two\n"));
	CHECK_EQ_INT(nentries(), 1);
	CHECK_EQ_INT(pn_ofile_check(p), 0);
	CHECK_EQ_INT(nentries(), 1);
	unlink(p);
	umask(um);
}

TEST(ofile_refuses_what_is_not_a_regular_file)
{
	struct pn_ofile *of = NULL;
	char p[512], q[512];
	struct stat st;

	/* a character device like /dev/null (root only), left as it was */
	path_of(p, sizeof(p), "null");
	if (!mknod(p, S_IFCHR | 0666, makedev(1, 3))) {
		CHECK_EQ_INT(pn_ofile_open(&of, p, 0), -EINVAL);
		CHECK(strstr(pn_errmsg(-EINVAL), "character device") != NULL);
		CHECK(strstr(pn_errmsg(-EINVAL), p) != NULL);
		CHECK(!lstat(p, &st) && S_ISCHR(st.st_mode) && st.st_rdev == makedev(1, 3));
		unlink(p);
	}
	path_of(p, sizeof(p), "fifo");
	CHECK(!mkfifo(p, 0644));
	CHECK_EQ_INT(pn_ofile_open(&of, p, 0), -EINVAL);
	CHECK(strstr(pn_errmsg(-EINVAL), "a FIFO") != NULL);
	CHECK(!lstat(p, &st) && S_ISFIFO(st.st_mode));
	unlink(p);

	path_of(p, sizeof(p), "sub");
	CHECK(!mkdir(p, 0755));
	CHECK_EQ_INT(pn_ofile_open(&of, p, 0), -EISDIR);
	path_of(p, sizeof(p), "sub/");
	CHECK_EQ_INT(pn_ofile_open(&of, p, 0), -EISDIR);
	path_of(p, sizeof(p), "sub");
	rmdir(p);

	/* a symbolic link is neither replaced nor followed */
	path_of(p, sizeof(p), "target");
	put_file(p, "kept\n", 0644);
	path_of(q, sizeof(q), "link");
	CHECK(!symlink("target", q));
	CHECK_EQ_INT(pn_ofile_open(&of, q, 0), -ELOOP);
	CHECK(strstr(pn_errmsg(-ELOOP), "symbolic link") != NULL);
	CHECK(!lstat(q, &st) && S_ISLNK(st.st_mode) && file_is(p, "kept\n"));
	unlink(q);
	unlink(p);

	path_of(p, sizeof(p), "nodir/x");
	CHECK_EQ_INT(pn_ofile_open(&of, p, 0), -ENOENT);
	CHECK(strstr(pn_errmsg(-ENOENT), p) != NULL);
	CHECK_EQ_INT(pn_ofile_open(&of, "", 0), -EINVAL);
	CHECK(of == NULL);
	CHECK_EQ_INT(nentries(), 0);
}

TEST(ofile_commit_checks_again)
{
	struct pn_ofile *of;
	char p[512];
	struct stat st;

	/* the name became a FIFO while the work ran: refused at commit */
	path_of(p, sizeof(p), "late");
	CHECK_EQ_INT(pn_ofile_open(&of, p, 0), 0);
	fputs("x\n", pn_ofile_file(of));
	CHECK(!mkfifo(p, 0644));
	CHECK_EQ_INT(pn_ofile_commit(of), -EINVAL);
	CHECK(!lstat(p, &st) && S_ISFIFO(st.st_mode));
	CHECK_EQ_INT(nentries(), 1);
	unlink(p);
}

TEST(ofile_standard_output_in_place)
{
	struct pn_ofile *of;
	char p[512];
	int saved = dup(1), fd;
	struct stat st;

	CHECK_EQ_INT(pn_ofile_open(&of, "-", 0), 0);
	CHECK(pn_ofile_inplace(of) && pn_ofile_file(of) == stdout);
	pn_ofile_abort(of);
	/* stdout on a file: /dev/stdout is written in place, not replaced */
	fflush(stdout);
	path_of(p, sizeof(p), "stdout.txt");
	fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	stat(p, &st);
	dup2(fd, 1);
	close(fd);
	CHECK_EQ_INT(pn_ofile_open(&of, "/dev/stdout", 0), 0);
	if (of) {
		CHECK(pn_ofile_inplace(of));
		fputs("in place\n", pn_ofile_file(of));
		CHECK_EQ_INT(pn_ofile_commit(of), 0);
	}
	fflush(stdout);
	dup2(saved, 1);
	close(saved);
	CHECK(file_is(p, "in place\n"));
	{
		struct stat now;

		CHECK(!stat(p, &now) && now.st_ino == st.st_ino);
	}
	unlink(p);
}

int main(void)
{
	snprintf(dir, sizeof(dir), "%s/penny-t_out.XXXXXX",
		 getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	RUN(out_na_keeps_the_format_text);
	RUN(ofile_new_and_replaced_files);
	RUN(ofile_refuses_what_is_not_a_regular_file);
	RUN(ofile_commit_checks_again);
	RUN(ofile_standard_output_in_place);
	rmdir(dir);
	return unit_done();
}
