/* SPDX-License-Identifier: MIT */
/*
 * node/pcie: the kernel's link speed and width strings, bandwidth per
 * generation, verdicts, and whole synthetic sysfs trees (written here into a
 * mkdtemp directory and set as the sysfs root): healthy, downtrained width,
 * downtrained speed under a switch, a downtrained switch uplink above a
 * healthy device, a Gen5 card in a Gen4 slot, and missing or unknown files.
 */
#define _GNU_SOURCE
#include "base/log.h"
#include "node/pcie.h"
#include "node/sysfs.h"
#include "unit.h"

#include <errno.h>
#include <ftw.h>
#include <math.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

TEST(parse_speed)
{
	static const struct {
		const char *s;
		int ret;
		unsigned mts;
	} t[] = {
		{ "2.5 GT/s", 0, 2500 },	   { "5.0 GT/s", 0, 5000 },
		{ "8.0 GT/s", 0, 8000 },	   { "16.0 GT/s", 0, 16000 },
		{ "32.0 GT/s", 0, 32000 },	   { "64.0 GT/s", 0, 64000 },
		{ "2.5 GT/s PCIe", 0, 2500 },	   { "5.0 GT/s PCIe", 0, 5000 },
		{ "8.0 GT/s PCIe", 0, 8000 },	   { "16.0 GT/s PCIe", 0, 16000 },
		{ "32.0 GT/s PCIe", 0, 32000 },	   { "64.0 GT/s PCIe", 0, 64000 },
		/* kernels before 4.17 wrote whole numbers */
		{ "5 GT/s", 0, 5000 },		   { "8 GT/s", 0, 8000 },
		{ "16 GT/s", 0, 16000 },	   { "32 GT/s", 0, 32000 },
		{ "Unknown", 0, 0 },		   { "Unknown speed", 0, 0 },
		{ "", -EINVAL, 0 },		   { "fast", -EINVAL, 0 },
		{ "8.0", -EINVAL, 0 },		   { "8.0GT/s", -EINVAL, 0 },
		{ "8.0 gt/s", -EINVAL, 0 },	   { " 8.0 GT/s", -EINVAL, 0 },
		{ "8.0 GT/s PCIe x", -EINVAL, 0 }, { "8.0 GT/s x16", -EINVAL, 0 },
		{ "80 GT/s", -EINVAL, 0 },	   { "2.5.0 GT/s", -EINVAL, 0 },
		{ "128.0 GT/s PCIe", -EINVAL, 0 }, { "-8.0 GT/s", -EINVAL, 0 },
		{ "unknown", -EINVAL, 0 },	   { "Unknown speedy", -EINVAL, 0 },
		{ "99999999999999999999999 GT/s", -EINVAL, 0 },
	};
	unsigned i, mts;

	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		mts = 12345;
		CHECK_EQ_INT(pn_pcie_parse_speed(t[i].s, &mts), t[i].ret);
		if (!t[i].ret)
			CHECK_EQ_INT(mts, t[i].mts);
		else
			CHECK_EQ_INT(mts, 12345); /* untouched on error */
	}
}

TEST(parse_width)
{
	static const struct {
		const char *s;
		int ret, w;
	} t[] = {
		{ "0", 0, 0 },		{ "1", 0, 1 },		{ "2", 0, 2 },
		{ "4", 0, 4 },		{ "8", 0, 8 },		{ "12", 0, 12 },
		{ "16", 0, 16 },	{ "32", 0, 32 },	{ "33", -EINVAL, 0 },
		{ "", -EINVAL, 0 },	{ "x16", -EINVAL, 0 },	{ "16x", -EINVAL, 0 },
		{ "-1", -EINVAL, 0 },	{ " 16", -EINVAL, 0 },	{ "0x10", -EINVAL, 0 },
		{ "1 6", -EINVAL, 0 },	{ "Unknown", -EINVAL, 0 },
		{ "99999999999999999999999", -EINVAL, 0 },
		{ "4294967312", -EINVAL, 0 },	/* 2^32 + 16 */
	};
	unsigned i;
	int w;

	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		w = -7;
		CHECK_EQ_INT(pn_pcie_parse_width(t[i].s, &w), t[i].ret);
		CHECK_EQ_INT(w, t[i].ret ? -7 : t[i].w);
	}
}

#define CHECK_GBS(mts, w, want) CHECK(fabs(pn_pcie_gbs(mts, w) - (want)) < 0.0005)

TEST(bandwidth)
{
	CHECK_EQ_INT(pn_pcie_gen(2500), 1);
	CHECK_EQ_INT(pn_pcie_gen(5000), 2);
	CHECK_EQ_INT(pn_pcie_gen(8000), 3);
	CHECK_EQ_INT(pn_pcie_gen(16000), 4);
	CHECK_EQ_INT(pn_pcie_gen(32000), 5);
	CHECK_EQ_INT(pn_pcie_gen(64000), 6);
	CHECK_EQ_INT(pn_pcie_gen(0), 0);
	CHECK_EQ_INT(pn_pcie_gen(10000), 0);
	/* 8b/10b */
	CHECK_GBS(2500, 1, 0.25);
	CHECK_GBS(2500, 16, 4.0);
	CHECK_GBS(5000, 1, 0.5);
	CHECK_GBS(5000, 16, 8.0);
	/* 128b/130b */
	CHECK_GBS(8000, 1, 8.0 * 128 / 130 / 8);
	CHECK_GBS(8000, 16, 15.754);
	CHECK_GBS(16000, 16, 31.508);
	CHECK_GBS(32000, 16, 63.015);
	CHECK_GBS(32000, 8, 31.508);
	/* FLIT: 242 of 256 bytes */
	CHECK_GBS(64000, 1, 7.5625);
	CHECK_GBS(64000, 16, 121.0);
	/* unknown */
	CHECK_GBS(0, 16, 0);
	CHECK_GBS(32000, 0, 0);
	CHECK_GBS(12345, 16, 0);
	CHECK_GBS(32000, -4, 0);
}

TEST(judge)
{
	static const struct {
		unsigned cur, max;
		int cw, mw;
		enum pn_pcie_verdict v;
	} t[] = {
		{ 32000, 32000, 16, 16, PN_PCIE_OK },
		{ 16000, 32000, 16, 16, PN_PCIE_DOWN_SPEED },
		{ 32000, 32000, 8, 16, PN_PCIE_DOWN_WIDTH },
		{ 2500, 32000, 1, 16, PN_PCIE_DOWN_BOTH },
		{ 0, 32000, 16, 16, PN_PCIE_UNKNOWN },
		{ 32000, 0, 16, 16, PN_PCIE_UNKNOWN },
		{ 32000, 32000, 0, 16, PN_PCIE_UNKNOWN },
		{ 32000, 32000, 16, 0, PN_PCIE_UNKNOWN },
		{ 12345, 32000, 16, 16, PN_PCIE_UNKNOWN },
	};
	struct pn_pcie_link l;
	unsigned i;

	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		memset(&l, 0, sizeof(l));
		l.cur_mts = t[i].cur;
		l.max_mts = t[i].max;
		l.cur_width = t[i].cw;
		l.max_width = t[i].mw;
		pn_pcie_judge(&l);
		CHECK_EQ_INT(l.verdict, t[i].v);
	}
	CHECK_STR(pn_pcie_verdict_name(PN_PCIE_OK), "ok");
	CHECK_STR(pn_pcie_verdict_name(PN_PCIE_DOWN_SPEED), "downtrained speed");
	CHECK_STR(pn_pcie_verdict_name(PN_PCIE_DOWN_WIDTH), "downtrained width");
	CHECK_STR(pn_pcie_verdict_name(PN_PCIE_DOWN_BOTH), "downtrained speed and width");
	CHECK_STR(pn_pcie_verdict_name(PN_PCIE_UNKNOWN), "unknown");
}

/* ---- synthetic trees ---- */

static char root[64];

static void put(const char *dir, const char *name, const char *val)
{
	char path[512];
	FILE *f;

	if (!val)
		return;
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	CHECK(f != NULL);
	if (!f)
		return;
	fprintf(f, "%s\n", val);
	fclose(f);
}

static void mkdirs(char *path)
{
	char *p;

	for (p = path + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		mkdir(path, 0755);
		*p = '/';
	}
	mkdir(path, 0755);
}

/*
 * The PCI function at PATH below /sys/devices ("pci0000:00/0000:00:01.0/...",
 * its last component its address), with its link files (NULL: not written)
 * and the /sys/bus/pci/devices link, as the kernel lays them out.
 */
static void fn(const char *path, const char *cur, const char *cw, const char *max, const char *mw)
{
	char dir[512], link[512], target[512];
	const char *addr = strrchr(path, '/') + 1;

	snprintf(dir, sizeof(dir), "%s/sys/devices/%s", root, path);
	mkdirs(dir);
	put(dir, "current_link_speed", cur);
	put(dir, "current_link_width", cw);
	put(dir, "max_link_speed", max);
	put(dir, "max_link_width", mw);
	snprintf(dir, sizeof(dir), "%s/sys/bus/pci/devices", root);
	mkdirs(dir);
	snprintf(link, sizeof(link), "%s/%s", dir, addr);
	snprintf(target, sizeof(target), "../../../devices/%s", path);
	CHECK(symlink(target, link) == 0);
}

#define G5 "32.0 GT/s PCIe"
#define G4 "16.0 GT/s PCIe"
#define G3 "8.0 GT/s PCIe"

static int tree(void)
{
	snprintf(root, sizeof(root), "/tmp/t_pcie.XXXXXX");
	if (!mkdtemp(root))
		return -1;
	/* a healthy Gen5 x16 GPU on a root port */
	fn("pci0000:00/0000:00:01.0", G5, "16", G5, "16");
	fn("pci0000:00/0000:00:01.0/0000:01:00.0", G5, "16", G5, "16");
	/* a GPU at Gen5 x8 */
	fn("pci0000:00/0000:00:02.0", G5, "8", G5, "16");
	fn("pci0000:00/0000:00:02.0/0000:02:00.0", G5, "8", G5, "16");
	/* a NIC at Gen3 x16 below a healthy Gen5 switch */
	fn("pci0000:00/0000:00:03.0", G5, "16", G5, "16");
	fn("pci0000:00/0000:00:03.0/0000:03:00.0", G5, "16", G5, "16");
	fn("pci0000:00/0000:00:03.0/0000:03:00.0/0000:04:00.0", G3, "16", G5, "16");
	fn("pci0000:00/0000:00:03.0/0000:03:00.0/0000:04:00.0/0000:05:00.0", G3, "16", G5, "16");
	/* and a healthy GPU below that switch */
	fn("pci0000:00/0000:00:03.0/0000:03:00.0/0000:04:01.0", G5, "16", G5, "16");
	fn("pci0000:00/0000:00:03.0/0000:03:00.0/0000:04:01.0/0000:0d:00.0", G5, "16", G5, "16");
	/* a healthy GPU below a switch whose uplink trained at x4 */
	fn("pci0000:00/0000:00:04.0", G5, "4", G5, "16");
	fn("pci0000:00/0000:00:04.0/0000:06:00.0", G5, "4", G5, "16");
	fn("pci0000:00/0000:00:04.0/0000:06:00.0/0000:07:00.0", G5, "16", G5, "16");
	fn("pci0000:00/0000:00:04.0/0000:06:00.0/0000:07:00.0/0000:08:00.0", G5, "16", G5, "16");
	/* no width files; "Unknown" speed; width 0 */
	fn("pci0000:00/0000:00:05.0", G5, "16", G5, "16");
	fn("pci0000:00/0000:00:05.0/0000:09:00.0", G5, NULL, G5, NULL);
	fn("pci0000:00/0000:00:05.0/0000:0a:00.0", "Unknown", "16", G5, "16");
	fn("pci0000:00/0000:00:05.0/0000:0b:00.0", G5, "0", G5, "16");
	/* a Gen5 card in a Gen4 slot */
	fn("pci0000:00/0000:00:06.0", G4, "16", G4, "16");
	fn("pci0000:00/0000:00:06.0/0000:0c:00.0", G4, "16", G5, "16");
	return pn_sysfs_set_root(root);
}

static int rm(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(p);
}

static void untree(void)
{
	pn_sysfs_set_root(NULL);
	nftw(root, rm, 16, FTW_DEPTH | FTW_PHYS);
}

static enum pn_pcie_verdict verdict(const char *addr)
{
	struct pn_pcie_link l;

	if (pn_pcie_read(addr, &l))
		return (enum pn_pcie_verdict)-1;
	return l.verdict;
}

TEST(tree_read)
{
	struct pn_pcie_link l;

	if (tree()) {
		CHECK(0);
		return;
	}
	CHECK_EQ_INT(pn_pcie_read("0000:01:00.0", &l), 0);
	CHECK_EQ_INT(l.verdict, PN_PCIE_OK);
	CHECK_EQ_INT(l.cur_gen, 5);
	CHECK_EQ_INT(l.max_gen, 5);
	CHECK_EQ_INT(l.cur_width, 16);
	CHECK(fabs(l.cur_gbs - 63.015) < 0.001);
	CHECK_STR(l.why, "");

	CHECK_EQ_INT(pn_pcie_read("0000:02:00.0", &l), 0);
	CHECK_EQ_INT(l.verdict, PN_PCIE_DOWN_WIDTH);
	CHECK_EQ_INT(l.cur_width, 8);
	CHECK_EQ_INT(l.max_width, 16);
	CHECK(fabs(l.cur_gbs - 31.508) < 0.001);
	CHECK(fabs(l.max_gbs - 63.015) < 0.001);

	CHECK_EQ_INT(pn_pcie_read("0000:05:00.0", &l), 0);
	CHECK_EQ_INT(l.verdict, PN_PCIE_DOWN_SPEED);
	CHECK_EQ_INT(l.cur_gen, 3);
	CHECK_EQ_INT(l.max_gen, 5);

	CHECK_EQ_INT(verdict("0000:06:00.0"), PN_PCIE_DOWN_WIDTH);
	CHECK_EQ_INT(verdict("0000:08:00.0"), PN_PCIE_OK);

	CHECK_EQ_INT(pn_pcie_read("0000:09:00.0", &l), 0);
	CHECK_EQ_INT(l.verdict, PN_PCIE_UNKNOWN);
	CHECK(strstr(l.why, "current_link_width") != NULL);
	CHECK_EQ_INT(l.cur_gen, 5); /* what could be read still is */
	CHECK_EQ_INT(pn_pcie_read("0000:0a:00.0", &l), 0);
	CHECK_EQ_INT(l.verdict, PN_PCIE_UNKNOWN);
	CHECK_STR(l.why, "current_link_speed: unknown speed");
	CHECK_EQ_INT(pn_pcie_read("0000:0b:00.0", &l), 0);
	CHECK_EQ_INT(l.verdict, PN_PCIE_UNKNOWN);
	CHECK_STR(l.why, "current_link_width: 0 (unknown)");

	/* against its own max alone, a Gen5 card in a Gen4 slot looks downtrained */
	CHECK_EQ_INT(verdict("0000:0c:00.0"), PN_PCIE_DOWN_SPEED);

	CHECK_EQ_INT(pn_pcie_read("0000:ff:00.0", &l), -ENODEV);
	CHECK(strstr(pn_errmsg(-ENODEV), "0000:ff:00.0") != NULL);
	CHECK_EQ_INT(pn_pcie_read("../../../etc", &l), -EINVAL);
	CHECK_EQ_INT(pn_pcie_read("0000:01:00.8", &l), -EINVAL);
	CHECK_EQ_INT(pn_pcie_read("0000:01:00.0/..", &l), -EINVAL);
	CHECK_EQ_INT(pn_pcie_read("", &l), -EINVAL);
	untree();
}

TEST(tree_path)
{
	struct pn_pcie_path p;

	if (tree()) {
		CHECK(0);
		return;
	}
	/* healthy: one link, root port to GPU, the GPU's own */
	CHECK_EQ_INT(pn_pcie_path("0000:01:00.0", &p), 0);
	CHECK_EQ_INT(p.nlinks, 1);
	CHECK_STR(p.link[0].addr, "0000:01:00.0");
	CHECK_EQ_INT(p.link[0].verdict, PN_PCIE_OK);
	CHECK_EQ_INT(p.weakest, 0);
	CHECK_EQ_INT(p.throttled, 0);

	CHECK_EQ_INT(pn_pcie_path("0000:02:00.0", &p), 0);
	CHECK_EQ_INT(p.link[p.nlinks - 1].verdict, PN_PCIE_DOWN_WIDTH);
	CHECK_EQ_INT(p.throttled, 0);

	/* NIC below a switch: the uplink then the NIC's link; the NIC's is weakest */
	CHECK_EQ_INT(pn_pcie_path("0000:05:00.0", &p), 0);
	CHECK_EQ_INT(p.nlinks, 2);
	CHECK_STR(p.link[0].addr, "0000:03:00.0");
	CHECK_EQ_INT(p.link[0].verdict, PN_PCIE_OK);
	CHECK_STR(p.link[1].addr, "0000:05:00.0");
	CHECK_EQ_INT(p.link[1].verdict, PN_PCIE_DOWN_SPEED);
	CHECK_EQ_INT(p.weakest, 1);
	CHECK_EQ_INT(p.throttled, 0);

	/* all links equal: the device's own is the weakest, nothing throttles */
	CHECK_EQ_INT(pn_pcie_path("0000:0d:00.0", &p), 0);
	CHECK_EQ_INT(p.nlinks, 2);
	CHECK_EQ_INT(p.link[0].verdict, PN_PCIE_OK);
	CHECK_EQ_INT(p.link[1].verdict, PN_PCIE_OK);
	CHECK_EQ_INT(p.weakest, 1);
	CHECK_EQ_INT(p.throttled, 0);

	/* a healthy GPU throttled by its switch's x4 uplink, which is named */
	CHECK_EQ_INT(pn_pcie_path("0000:08:00.0", &p), 0);
	CHECK_EQ_INT(p.nlinks, 2);
	CHECK_EQ_INT(p.link[1].verdict, PN_PCIE_OK);
	CHECK_EQ_INT(p.link[0].verdict, PN_PCIE_DOWN_WIDTH);
	CHECK_EQ_INT(p.weakest, 0);
	CHECK_STR(p.link[p.weakest].addr, "0000:06:00.0");
	CHECK(fabs(p.link[p.weakest].cur_gbs - 15.754) < 0.001);
	CHECK_EQ_INT(p.throttled, 1);

	/* both ends' max: a Gen5 card in a Gen4 slot is ok at Gen4 */
	CHECK_EQ_INT(pn_pcie_path("0000:0c:00.0", &p), 0);
	CHECK_EQ_INT(p.link[0].verdict, PN_PCIE_OK);
	CHECK_EQ_INT(p.link[0].max_gen, 4);

	/* unknown stays unknown on a path; no known bandwidth, no weakest */
	CHECK_EQ_INT(pn_pcie_path("0000:09:00.0", &p), 0);
	CHECK_EQ_INT(p.link[0].verdict, PN_PCIE_UNKNOWN);
	CHECK_EQ_INT(p.weakest, -1);
	CHECK_EQ_INT(p.throttled, 0);

	/* a root port alone: a link with no partner above */
	CHECK_EQ_INT(pn_pcie_path("0000:00:04.0", &p), 0);
	CHECK_EQ_INT(p.nlinks, 1);
	CHECK_EQ_INT(p.link[0].verdict, PN_PCIE_DOWN_WIDTH);

	CHECK_EQ_INT(pn_pcie_path("0000:ff:00.0", &p), -ENODEV);
	CHECK_EQ_INT(pn_pcie_path("junk", &p), -EINVAL);
	untree();
}

int main(void)
{
	RUN(parse_speed);
	RUN(parse_width);
	RUN(bandwidth);
	RUN(judge);
	RUN(tree_read);
	RUN(tree_path);
	return unit_done();
}
