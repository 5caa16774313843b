/* SPDX-License-Identifier: MIT */
/* Output safety: the escapers (JSON, Prometheus, terminal text), the text
 * of unknown values and the output-file helper (src/base/ofile.h). */
#define _GNU_SOURCE
#include "unit.h"

#include "base/log.h"
#include "base/ofile.h"
#include "base/out.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/vfs.h>
#include <unistd.h>

static char esc_buf[1024];

static const char *json(const char *s)
{
	pn_json_escape(esc_buf, sizeof(esc_buf), s);
	return esc_buf;
}

static const char *prom(const char *s)
{
	pn_prom_escape(esc_buf, sizeof(esc_buf), s);
	return esc_buf;
}

static const char *xml(const char *s)
{
	pn_xml_escape(esc_buf, sizeof(esc_buf), s);
	return esc_buf;
}

static const char *text(const char *s, int layout)
{
	pn_text_escape(esc_buf, sizeof(esc_buf), s, layout);
	return esc_buf;
}

/* Every byte of s is part of valid UTF-8. */
static int valid_utf8(const char *s)
{
	int n;

	for (; *s; s += n)
		if (!(n = pn_utf8_len(s)))
			return 0;
	return 1;
}

TEST(utf8_classes)
{
	CHECK_EQ_INT(pn_utf8_len("a"), 1);
	CHECK_EQ_INT(pn_utf8_len("\xc3\xa9"), 2);		/* U+00E9 */
	CHECK_EQ_INT(pn_utf8_len("\xe2\x82\xac"), 3);		/* U+20AC */
	CHECK_EQ_INT(pn_utf8_len("\xf0\x9f\x98\x80"), 4);	/* U+1F600 */
	CHECK_EQ_INT(pn_utf8_len("\xff"), 0);
	CHECK_EQ_INT(pn_utf8_len("\x80"), 0);			/* stray continuation */
	CHECK_EQ_INT(pn_utf8_len("\xc0\xaf"), 0);		/* overlong '/' */
	CHECK_EQ_INT(pn_utf8_len("\xe0\x80\xaf"), 0);		/* overlong */
	CHECK_EQ_INT(pn_utf8_len("\xed\xa0\x80"), 0);		/* surrogate */
	CHECK_EQ_INT(pn_utf8_len("\xf4\x90\x80\x80"), 0);	/* above U+10FFFF */
	CHECK_EQ_INT(pn_utf8_len("\xe2\x82"), 0);		/* cut by the end */
	CHECK_EQ_INT(pn_utf8_len("\xe2\x82x"), 0);
}

TEST(json_escape_invalid_utf8)
{
	CHECK_STR(json("mlx5_0"), "mlx5_0");
	CHECK_STR(json("a\"b\\c\n\t\x01\x1b"), "a\\\"b\\\\c\\n\\t\\u0001\\u001b");
	CHECK_STR(json("caf\xc3\xa9"), "caf\xc3\xa9");
	CHECK_STR(json("bad\xffname"), "bad\\ufffdname");
	CHECK_STR(json("\xe2\x82"), "\\ufffd\\ufffd");
	CHECK_STR(json("\xed\xa0\x80x"), "\\ufffd\\ufffd\\ufffdx");
	CHECK(valid_utf8(json("\xff\xfe\xc0\xaf\xf4\x90\x80\x80 ok")));
	/* the needed length is returned, the buffer always terminated */
	{
		char small[4];

		CHECK_EQ_INT(pn_json_escape(small, sizeof(small), "\xff"), 6);
		CHECK_EQ_INT(strlen(small), 3);
	}
}

TEST(prom_escape_label_value)
{
	CHECK_STR(prom("mlx5_0"), "mlx5_0");
	CHECK_STR(prom("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
	CHECK_STR(prom("x\xffy"), "x\xef\xbf\xbdy");
	CHECK_STR(prom("caf\xc3\xa9"), "caf\xc3\xa9");
	CHECK(valid_utf8(prom("\x80\xc1\xbf\xed\xbf\xbf")));
}

TEST(xml_escape_any_bytes)
{
	CHECK_STR(xml("mlx5_0"), "mlx5_0");
	CHECK_STR(xml("<a & \"b\" 'c'>"), "&lt;a &amp; &quot;b&quot; &apos;c&apos;&gt;");
	CHECK_STR(xml("t\tn\nr\r"), "t&#9;n&#10;r&#13;");
	/* what XML 1.0 cannot hold: C0 controls, U+FFFE, U+FFFF, invalid bytes */
	CHECK_STR(xml("\x01\x1b\xef\xbf\xbe\xef\xbf\xbf\xff\xc3"),
		  "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");
	CHECK_STR(xml("caf\xc3\xa9 \xef\xbf\xbd \xf0\x9f\x98\x80"),
		  "caf\xc3\xa9 \xef\xbf\xbd \xf0\x9f\x98\x80");
	CHECK(valid_utf8(xml("\x80\xc1\xbf\xed\xbf\xbf")));
	/* the length it needs, whatever the buffer */
	CHECK_EQ_INT((int)pn_xml_escape(NULL, 0, "<\x01"), 4 + 3);
}

TEST(text_escape_controls_and_bytes)
{
	CHECK_STR(text("mlx5_0", 0), "mlx5_0");
	CHECK_STR(text("\x1b[31mred\x1b[0m", 0), "\\x1b[31mred\\x1b[0m");
	CHECK_STR(text("a\nb\tc\r\x7f", 0), "a\\x0ab\\x09c\\x0d\\x7f");
	CHECK_STR(text("a\nb\tc\r", 1), "a\nb\tc\\x0d");
	CHECK_STR(text("bad\xff", 0), "bad\\xff");
	CHECK_STR(text("csi\xc2\x9b", 0), "csi\\xc2\\x9b");	/* C1 CSI */
	CHECK_STR(text("caf\xc3\xa9 \xc2\xa0", 0), "caf\xc3\xa9 \xc2\xa0");
}

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

static void hostile(struct pn_out *o)
{
	pn_out_open_object(o, NULL);
	pn_out_str(o, PN_ANY, "host", "%-8s|", "h\x1b]0;x\x07\xff");
	pn_out_text(o, "# %s\t%s\n", "esc\x1b[2J", "ok");
	/* a name's newline or tab is no layout: the format's are */
	pn_out_text(o, "[%-6s|%.2s|%*s|%d %ld %lld %u %zu %x %5.1f %c %%]\n", "a\nb", "xyz", 3, "\t",
		    -1, 2L, 3LL, 4u, (size_t)5, 255u, 2.25, 'q');
	pn_out_str(o, PN_JSON, "\xff key", NULL, "v\xc0");
	pn_out_close_object(o);
}

TEST(out_escapes_names_in_text_and_json)
{
	char *t = render(0, hostile), *j = render(1, hostile);

	CHECK_STR(t, "h\\x1b]0;x\\x07\\xff|# esc\\x1b[2J\tok\n"
		     "[a\\x0ab|xy|\\x09|-1 2 3 4 5 ff   2.2 q %]\n");
	CHECK_STR(j, "{\"version\":1,\"host\":\"h\\u001b]0;x\\u0007\\ufffd\",\"\\ufffd key\":\"v\\ufffd\"}\n");
	CHECK(valid_utf8(j));
	free(t);
	free(j);
}

static void two_docs(struct pn_out *o)
{
	int i;

	for (i = 0; i < 2; i++) {
		pn_out_open_object(o, NULL);
		pn_out_open_object(o, "inner");
		pn_out_int(o, PN_ANY, "n", "%d", i);
		pn_out_close_object(o);
		pn_out_close_object(o);
	}
}

TEST(out_every_json_document_has_a_version)
{
	char *j = render(1, two_docs), *t = render(0, two_docs);

	/* the top-level object, first; not the inner one; each line of a stream */
	CHECK_STR(j, "{\"version\":1,\"inner\":{\"n\":0}}\n{\"version\":1,\"inner\":{\"n\":1}}\n");
	CHECK_STR(t, "01");
	free(j);
	free(t);
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

	/* private (a secret): 0600, whatever the mode of what it replaces */
	CHECK_EQ_INT(pn_ofile_open(&of, p, PN_OFILE_PRIVATE), 0);
	fputs("two\n", pn_ofile_file(of));
	chmod(p, 0644);
	CHECK_EQ_INT(pn_ofile_commit(of), 0);
	CHECK(!stat(p, &b) && (b.st_mode & 0777) == 0600);
	unlink(p);
	CHECK_EQ_INT(pn_ofile_open(&of, p, PN_OFILE_PRIVATE), 0);
	fputs("two\n", pn_ofile_file(of));
	CHECK_EQ_INT(pn_ofile_commit(of), 0);
	CHECK(!stat(p, &b) && (b.st_mode & 0777) == 0600);
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

/* A file system without RENAME_EXCHANGE (ext2's own driver, FUSE, ...):
 * this renameat2 takes the place of the C library's for src/base/ofile.c. */
static int no_exchange;
/* a directory put at the name just before the exchange (a race) */
static int dir_before_exchange;

int renameat2(int olddir, const char *old, int newdir, const char *new, unsigned int flags)
{
	if (no_exchange && (flags & RENAME_EXCHANGE)) {
		errno = EINVAL;
		return -1;
	}
	if (dir_before_exchange && (flags & RENAME_EXCHANGE)) {
		char kept[300];

		dir_before_exchange = 0;
		snprintf(kept, sizeof(kept), "%s/kept", new);
		if (unlinkat(newdir, new, 0) || mkdirat(newdir, new, 0755) ||
		    close(openat(newdir, kept, O_CREAT | O_WRONLY, 0644)))
			return -1;
	}
	return (int)syscall(SYS_renameat2, olddir, old, newdir, new, flags);
}

/* 1 when the file's data are not on the disk yet (one extent, delayed
 * allocation), 0 when they are, -1 unknown (no FIEMAP). */
static int delalloc(const char *p)
{
	struct fiemap *m = calloc(1, sizeof(*m) + 4 * sizeof(struct fiemap_extent));
	int fd = open(p, O_RDONLY), r = -1;

	if (m && fd >= 0) {
		m->fm_length = FIEMAP_MAX_OFFSET;
		m->fm_extent_count = 4;
		if (!ioctl(fd, FS_IOC_FIEMAP, m) && m->fm_mapped_extents >= 1)
			r = !!(m->fm_extents[0].fe_flags & FIEMAP_EXTENT_DELALLOC);
	}
	if (fd >= 0)
		close(fd);
	free(m);
	return r;
}

static void put_big(struct pn_ofile *of, char c)
{
	int i;

	for (i = 0; i < 64 * 1024; i++)
		fputc(c, pn_ofile_file(of));
}

TEST(ofile_volatile_exchanges)
{
	struct pn_ofile *of;
	char p[512], q[512];
	struct stat a, b;
	int fd, i;
	char c;

	path_of(p, sizeof(p), "vol.prom");
	/* a new name, then replaced again and again: the content, the mode
	 * of what it replaces, a new inode each time, nothing left behind */
	for (i = 0; i < 3; i++) {
		if (i == 2) {
			chmod(p, 0640);
			stat(p, &a);
		}
		CHECK_EQ_INT(pn_ofile_open(&of, p, PN_OFILE_VOLATILE), 0);
		fputs(i == 0 ? "one\n" : i == 1 ? "two\n" : "three\n", pn_ofile_file(of));
		CHECK_EQ_INT(pn_ofile_commit(of), 0);
		CHECK_EQ_INT(nentries(), 1);
	}
	CHECK(file_is(p, "three\n"));
	CHECK(!stat(p, &b) && b.st_ino != a.st_ino && (b.st_mode & 0777) == 0640);

	/* a reader that has the old file open keeps reading the old file */
	fd = open(p, O_RDONLY);
	CHECK_EQ_INT(pn_ofile_open(&of, p, PN_OFILE_VOLATILE), 0);
	fputs("four\n", pn_ofile_file(of));
	CHECK_EQ_INT(pn_ofile_commit(of), 0);
	CHECK(fd >= 0 && read(fd, &c, 1) == 1 && c == 't');
	close(fd);
	CHECK(file_is(p, "four\n"));
	CHECK_EQ_INT(nentries(), 1);

	/* absent at the open, a regular file by the commit: replaced; a FIFO
	 * by the commit: refused, left as it is */
	unlink(p);
	CHECK_EQ_INT(pn_ofile_open(&of, p, PN_OFILE_VOLATILE), 0);
	fputs("five\n", pn_ofile_file(of));
	put_file(p, "late\n", 0644);
	CHECK_EQ_INT(pn_ofile_commit(of), 0);
	CHECK(file_is(p, "five\n"));
	CHECK_EQ_INT(pn_ofile_open(&of, p, PN_OFILE_VOLATILE), 0);
	fputs("six\n", pn_ofile_file(of));
	unlink(p);
	CHECK(!mkfifo(p, 0644));
	CHECK_EQ_INT(pn_ofile_commit(of), -EINVAL);
	CHECK(!lstat(p, &a) && S_ISFIFO(a.st_mode));
	CHECK_EQ_INT(nentries(), 1);
	unlink(p);

	/* no exchange on this file system: renamed over it as before */
	no_exchange = 1;
	put_file(p, "old\n", 0644);
	CHECK_EQ_INT(pn_ofile_open(&of, p, PN_OFILE_VOLATILE), 0);
	fputs("seven\n", pn_ofile_file(of));
	CHECK_EQ_INT(pn_ofile_commit(of), 0);
	no_exchange = 0;
	CHECK(file_is(p, "seven\n"));
	CHECK_EQ_INT(nentries(), 1);
	unlink(p);

	/* a directory at the name between the check and the exchange: swapped
	 * back, refused, left as it is with what it holds (a rename would
	 * have failed on it) */
	put_file(p, "old\n", 0644);
	CHECK_EQ_INT(pn_ofile_open(&of, p, PN_OFILE_VOLATILE), 0);
	fputs("eight\n", pn_ofile_file(of));
	dir_before_exchange = 1;
	CHECK_EQ_INT(pn_ofile_commit(of), -EISDIR);
	CHECK(!lstat(p, &a) && S_ISDIR(a.st_mode));
	path_of(q, sizeof(q), "vol.prom/kept");
	CHECK(!access(q, F_OK));
	unlink(q);
	CHECK(!rmdir(p));
	CHECK_EQ_INT(nentries(), 0);

	/* Not forced to the disk by the replacement (ext4 writes a file
	 * renamed over another one out at once).  Judged only where a new
	 * file's data wait for writeback (delayed allocation). */
	path_of(q, sizeof(q), "plain");
	CHECK_EQ_INT(pn_ofile_open(&of, q, 0), 0);
	put_big(of, 'a');
	CHECK_EQ_INT(pn_ofile_commit(of), 0);
	if (delalloc(q) == 1) {
		CHECK_EQ_INT(pn_ofile_open(&of, q, PN_OFILE_VOLATILE), 0);
		put_big(of, 'b');
		CHECK_EQ_INT(pn_ofile_commit(of), 0);
		CHECK_EQ_INT(delalloc(q), 1);
		CHECK_EQ_INT(pn_ofile_open(&of, q, 0), 0);
		put_big(of, 'c');
		CHECK_EQ_INT(pn_ofile_commit(of), 0);
		printf("# a plain replacement: %s\n",
		       delalloc(q) == 0 ? "written out at once" : "left to writeback");
	} else {
		printf("# no delayed allocation here: write-out not judged\n");
	}
	unlink(q);
	CHECK_EQ_INT(nentries(), 0);
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

/* pn_out_flush: the cause of a failed write, also of one whose flush (a
 * command's own) already failed, when stdio no longer knows its errno */
TEST(out_flush_names_the_cause_of_a_write_error)
{
	char big[8192];
	FILE *f = fopen("/dev/full", "w");
	int p[2], fd;

	memset(big, 'x', sizeof(big));
	if (f) {
		CHECK_EQ_INT(pn_out_flush(f), 0);
		fputs("x", f);
		CHECK_EQ_INT(pn_out_flush(f), -ENOSPC);	/* the flush's own */
		CHECK_EQ_INT(pn_out_flush(f), -ENOSPC);	/* stdio forgot it */
		fwrite(big, 1, sizeof(big), f);		/* failed in the middle */
		fflush(f);
		CHECK_EQ_INT(pn_out_flush(f), -ENOSPC);
		fclose(f);
	}
	/* a pipe whose reader went away, SIGPIPE ignored */
	if (!pipe(p) && (f = fdopen(p[1], "w"))) {
		void (*old)(int) = signal(SIGPIPE, SIG_IGN);

		close(p[0]);
		fputs("x", f);
		CHECK_EQ_INT(pn_out_flush(f), -EPIPE);
		fputs("x", f);
		fflush(f);
		CHECK_EQ_INT(pn_out_flush(f), -EPIPE);
		fclose(f);
		signal(SIGPIPE, old);
	}
	/* not open for writing (a closed stdout held by pn_file_hold_std) */
	if (!pipe(p) && (f = fdopen(p[1], "w"))) {
		fd = dup(p[1]);
		CHECK(dup2(p[0], p[1]) == p[1]);
		fputs("x", f);
		CHECK_EQ_INT(pn_out_flush(f), -EBADF);
		CHECK_EQ_INT(pn_out_flush(f), -EBADF);
		fclose(f);
		close(p[0]);
		close(fd);
	}
	/* a full non-blocking pipe */
	if (!pipe(p) && (f = fdopen(p[1], "w"))) {
		fcntl(p[1], F_SETFL, O_NONBLOCK);
		while (write(p[1], big, sizeof(big)) > 0)
			;
		fwrite(big, 1, sizeof(big), f);
		fflush(f);
		CHECK_EQ_INT(pn_out_flush(f), -EAGAIN);
		fclose(f);
		close(p[0]);
	}
	/* and pn_out_free says it */
	if ((f = fopen("/dev/full", "w"))) {
		struct pn_out *o = pn_out_new(f, 0);

		pn_out_text(o, "x\n");
		CHECK_EQ_INT(pn_out_free(o), -ENOSPC);
		fclose(f);
	}
}

int main(void)
{
	snprintf(dir, sizeof(dir), "%s/penny-t_out.XXXXXX",
		 getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	RUN(utf8_classes);
	RUN(json_escape_invalid_utf8);
	RUN(prom_escape_label_value);
	RUN(xml_escape_any_bytes);
	RUN(text_escape_controls_and_bytes);
	RUN(out_escapes_names_in_text_and_json);
	RUN(out_every_json_document_has_a_version);
	RUN(out_na_keeps_the_format_text);
	RUN(ofile_new_and_replaced_files);
	RUN(ofile_refuses_what_is_not_a_regular_file);
	RUN(ofile_commit_checks_again);
	RUN(ofile_volatile_exchanges);
	RUN(ofile_standard_output_in_place);
	RUN(out_flush_names_the_cause_of_a_write_error);
	rmdir(dir);
	return unit_done();
}
