/* SPDX-License-Identifier: MIT */
/*
 * node/sysfs: the sysfs root is a jail.  A tree written here into a mkdtemp
 * directory has a class link to its device (../../devices/...), absolute
 * and relative links that point out of the tree, a link loop and a FIFO;
 * every read, directory read, link read and existence test resolves
 * beneath the root, with openat2 and with the component walk of kernels
 * without it.
 */
#define _GNU_SOURCE
#include "base/log.h"
#include "node/sysfs.h"
#include "unit.h"

#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char top[PATH_MAX], root[PATH_MAX + 16];

static void put(const char *rel, const char *text)
{
	char p[PATH_MAX * 2];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s", root, rel);
	f = fopen(p, "w");
	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

static void mkd(const char *rel)
{
	char p[PATH_MAX * 2];

	snprintf(p, sizeof(p), "%s/%s", root, rel);
	mkdir(p, 0755);
}

static void lnk(const char *target, const char *rel)
{
	char p[PATH_MAX * 2];

	snprintf(p, sizeof(p), "%s/%s", root, rel);
	if (symlink(target, p))
		perror(p);
}

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *f)
{
	(void)st;
	(void)flag;
	(void)f;
	return remove(p);
}

/*
 * TOP/secret (outside the root, "SECRET") and ROOT/secret ("jailed"): a link
 * that escapes must find the second or nothing, never the first.
 */
static int make_tree(void)
{
	char p[PATH_MAX * 2];
	FILE *f;

	snprintf(top, sizeof(top), "/tmp/t_sysfs.XXXXXX");
	if (!mkdtemp(top))
		return -1;
	snprintf(p, sizeof(p), "%s/secret", top);
	f = fopen(p, "w");
	if (!f)
		return -1;
	fputs("SECRET\n", f);
	fclose(f);
	snprintf(root, sizeof(root), "%s/root", top);
	mkdir(root, 0755);
	put("secret", "jailed\n");
	mkd("sys");
	mkd("sys/devices");
	mkd("sys/devices/pci0000:00");
	mkd("sys/devices/pci0000:00/0000:00:01.0");
	mkd("sys/devices/pci0000:00/0000:00:01.0/infiniband");
	mkd("sys/devices/pci0000:00/0000:00:01.0/infiniband/mlx5_0");
	put("sys/devices/pci0000:00/0000:00:01.0/infiniband/mlx5_0/fw_ver", "28.39\n");
	put("sys/devices/pci0000:00/0000:00:01.0/vendor", "0x15b3\n");
	lnk("../../../0000:00:01.0", "sys/devices/pci0000:00/0000:00:01.0/infiniband/mlx5_0/device");
	mkd("sys/class");
	mkd("sys/class/infiniband");
	lnk("../../devices/pci0000:00/0000:00:01.0/infiniband/mlx5_0", "sys/class/infiniband/mlx5_0");
	/* out of the tree: by absolute path, and by more ".." than there are levels */
	snprintf(p, sizeof(p), "%s/secret", top);
	lnk(p, "sys/abs_out");
	lnk("../../secret", "sys/rel_out");
	lnk("/secret", "sys/abs_in");
	lnk("../../../../../../..", "sys/up");
	snprintf(p, sizeof(p), "%s", top);
	lnk(p, "sys/dir_out");
	lnk("loop_b", "sys/loop_a");
	lnk("loop_a", "sys/loop_b");
	lnk("/sys/class/infiniband/mlx5_0/fw_ver", "sys/fw_abs");
	snprintf(p, sizeof(p), "%s/sys/fifo", root);
	mkfifo(p, 0644);
	return 0;
}

/* Does the directory dir (below the root) list name? */
static int lists(const char *dir, const char *name)
{
	DIR *d = pn_sys_opendir("%s", dir);
	struct dirent *de;
	int found = 0;

	while (d && (de = readdir(d)))
		found |= !strcmp(de->d_name, name);
	if (d)
		closedir(d);
	return found;
}

static void jail_checks(void)
{
	char buf[256];
	uint64_t v;
	DIR *d;
	int n;

	/* the kernel's relative links keep working inside the root */
	CHECK(pn_sys_read(buf, sizeof(buf), "/sys/class/infiniband/mlx5_0/fw_ver") == 5);
	CHECK_STR(buf, "28.39");
	CHECK(pn_sys_u64(&v, "/sys/class/infiniband/mlx5_0/device/vendor") == 0);
	CHECK(v == 0x15b3);
	CHECK(pn_sys_readlink(buf, sizeof(buf), "/sys/class/infiniband/mlx5_0/device") > 0);
	CHECK_STR(buf, "../../../0000:00:01.0");
	CHECK(pn_sys_readlink(buf, sizeof(buf), "/sys/class/infiniband/mlx5_0") > 0);
	CHECK(pn_sys_readlink(buf, sizeof(buf), "/sys/class/infiniband/mlx5_0/fw_ver") == -EINVAL);
	CHECK(pn_sys_exists("/sys/class/infiniband/mlx5_0/device/vendor"));
	CHECK(lists("/sys/class/infiniband/mlx5_0", "fw_ver"));

	/* links out of the tree resolve as if the root were / */
	CHECK(pn_sys_read(buf, sizeof(buf), "/sys/abs_out") == -ENOENT);
	CHECK(!pn_sys_exists("/sys/abs_out"));
	n = pn_sys_read(buf, sizeof(buf), "/sys/rel_out");
	CHECK(n == 6);
	CHECK_STR(n > 0 ? buf : "", "jailed");
	n = pn_sys_read(buf, sizeof(buf), "/sys/abs_in");
	CHECK_STR(n > 0 ? buf : "", "jailed");
	n = pn_sys_read(buf, sizeof(buf), "/sys/up/secret");
	CHECK_STR(n > 0 ? buf : "", "jailed");
	n = pn_sys_read(buf, sizeof(buf), "/../../../../secret");
	CHECK_STR(n > 0 ? buf : "", "jailed");
	n = pn_sys_read(buf, sizeof(buf), "/sys/fw_abs");
	CHECK_STR(n > 0 ? buf : "", "28.39");
	/* a directory out of the tree is not listed: the root's own is */
	d = pn_sys_opendir("/sys/dir_out");
	CHECK(d == NULL);
	if (d)
		closedir(d);
	CHECK(lists("/sys/up", "sys"));
	CHECK(pn_sys_read(buf, sizeof(buf), "/sys/dir_out/secret") == -ENOENT);
	CHECK(pn_sys_read(buf, sizeof(buf), "/sys/loop_a") == -ELOOP);
	CHECK(pn_sys_read(buf, sizeof(buf), "/sys/fifo") == -EINVAL);
	CHECK(pn_sys_read(buf, sizeof(buf), "/sys/nothing/here") == -ENOENT);
	CHECK(pn_sys_read(buf, sizeof(buf), "/sys/class/infiniband/mlx5_0/fw_ver/x") == -ENOTDIR);
}

TEST(jail_openat2)
{
	pn_sysfs_force_walk(0);
	CHECK(pn_sysfs_set_root(root) == 0);
	jail_checks();
}

TEST(jail_walk)
{
	pn_sysfs_force_walk(1);
	CHECK(pn_sysfs_set_root(root) == 0);
	jail_checks();
	pn_sysfs_force_walk(0);
}

/*
 * openat2's RESOLVE_IN_ROOT fails with EAGAIN when a rename anywhere on the
 * system races the lookup of a ".." (the kernel cannot prove it stayed
 * beneath the root): on a busy machine a replayed tree's class links
 * (../../devices/...) read as missing now and then, a device as "dangling"
 * (t0840) or a port with no rate (t0504).  A process renaming in a loop
 * beside 20,000 reads through such a link: every read succeeds.
 */
TEST(jail_renames_elsewhere)
{
	char a[PATH_MAX + 8], b[PATH_MAX + 8], buf[64];
	int i, bad = 0, pfd[2];
	pid_t pid;

	snprintf(a, sizeof(a), "%s/a", top);
	snprintf(b, sizeof(b), "%s/b", top);
	put("../a", "x\n");
	CHECK(pipe(pfd) == 0);
	pid = fork();
	if (pid == 0) {
		close(pfd[0]);
		if (write(pfd[1], "r", 1) != 1)
			_exit(1);
		for (;;) /* until killed */
			if (rename(a, b) || rename(b, a))
				_exit(1);
	}
	close(pfd[1]);
	CHECK(pid > 0 && read(pfd[0], buf, 1) == 1);
	close(pfd[0]);
	pn_sysfs_force_walk(0);
	CHECK(pn_sysfs_set_root(root) == 0);
	for (i = 0; pid > 0 && i < 20000; i++) {
		int n = pn_sys_read(buf, sizeof(buf), "/sys/class/infiniband/mlx5_0/device/vendor");

		if (n != 6 && !bad++)
			printf("# read %d: %d (%s)\n", i, n, n < 0 ? strerror(-n) : "short");
	}
	if (pid > 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
	CHECK_EQ_INT(bad, 0);
	unlink(a);
	unlink(b);
}

TEST(live_unchanged)
{
	char buf[64];

	CHECK(pn_sysfs_set_root(NULL) == 0);
	CHECK(pn_sysfs_is_live());
	CHECK(pn_sys_read(buf, sizeof(buf), "/proc/self/stat") > 0);
}

int main(void)
{
	if (make_tree()) {
		printf("Bail out! cannot build the tree\n");
		return 1;
	}
	RUN(jail_openat2);
	RUN(jail_walk);
	RUN(jail_renames_elsewhere);
	RUN(live_unchanged);
	pn_sysfs_set_root(NULL);
	nftw(top, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	return unit_done();
}
