/* SPDX-License-Identifier: MIT */
/*
 * The settings check's pure parts: the walk of the PCIe extended
 * capability list for ACS (node/pcie.h), and the parsers of
 * /proc/self/limits, /proc/mounts and version strings
 * (check/check_settings.h), on good, truncated and hostile input.
 */
#define _GNU_SOURCE
#include "unit.h"

#include "base/log.h"
#include "check/check_platform.h"
#include "check/check_settings.h"
#include "node/pcie.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static unsigned char cfg[4096];

static void put32(unsigned off, uint32_t v)
{
	cfg[off] = v & 255;
	cfg[off + 1] = (v >> 8) & 255;
	cfg[off + 2] = (v >> 16) & 255;
	cfg[off + 3] = v >> 24;
}

/* a function's config space: zeros, NVIDIA's vendor ID */
static void clear(void)
{
	memset(cfg, 0, sizeof(cfg));
	cfg[0] = 0xde;
	cfg[1] = 0x10;
}

/* header id | version 1 | next */
static void cap(unsigned off, unsigned id, unsigned next)
{
	put32(off, id | 1u << 16 | next << 20);
}

TEST(acs_walk)
{
	struct pn_pcie_acs a;
	char bits[32];

	clear();
	cap(0x100, 0x0001, 0x150);	/* AER */
	cap(0x150, 0x000b, 0x200);	/* vendor specific */
	cap(0x200, 0x000d, 0);		/* ACS */
	put32(0x204, 0x001c005f);	/* cap 0x5f, control RR|CR|UF */
	CHECK_EQ_INT(pn_pcie_ext_cap(cfg, sizeof(cfg), 0x000d), 0x200);
	CHECK_EQ_INT(pn_pcie_ext_cap(cfg, sizeof(cfg), 0x0019), -ENOENT);
	CHECK_EQ_INT(pn_pcie_parse_acs(cfg, sizeof(cfg), &a), 0);
	CHECK_EQ_INT(a.present, 1);
	CHECK_EQ_INT((int)a.cap, 0x5f);
	CHECK_EQ_INT((int)a.ctrl, 0x1c);
	pn_pcie_acs_bits(a.ctrl, bits, sizeof(bits));
	CHECK_STR(bits, "RR,CR,UF");
	pn_pcie_acs_bits(0, bits, sizeof(bits));
	CHECK_STR(bits, "none");
	pn_pcie_acs_bits(0x7f, bits, 8);	/* bounded: no overflow */
	CHECK(strlen(bits) < 8);
	/* cut short: not 4096 bytes (0x120, 0x14a, just before ACS) is not judged */
	CHECK_EQ_INT(pn_pcie_parse_acs(cfg, 0x204, &a), -EBADMSG);
	CHECK_EQ_INT(a.present, 0);
	CHECK_EQ_INT(pn_pcie_parse_acs(cfg, 0x120, &a), -EBADMSG);
	CHECK(strstr(pn_errmsg(-EBADMSG), "288 bytes, not 4096: cut short") != NULL);
	CHECK_EQ_INT(pn_pcie_parse_acs(cfg, 0x14a, &a), -EBADMSG);
	CHECK_EQ_INT(pn_pcie_parse_acs(cfg, 4095, &a), -EBADMSG);
	/* 256 bytes (an unprivileged read): no extended space */
	CHECK_EQ_INT(pn_pcie_parse_acs(cfg, 256, &a), -ENODATA);
	CHECK_EQ_INT(pn_pcie_parse_acs(cfg, 64, &a), -ENODATA);
}

TEST(acs_hostile)
{
	struct pn_pcie_acs a;

	/* a loop, a pointer into the standard space, all ones, all zeros */
	clear();
	cap(0x100, 0x0001, 0x140);
	cap(0x140, 0x0002, 0x100);
	CHECK_EQ_INT(pn_pcie_ext_cap(cfg, sizeof(cfg), 0x000d), -EBADMSG);
	CHECK(strstr(pn_errmsg(-EBADMSG), "loops (0x140 points back to 0x100)") != NULL);
	CHECK_EQ_INT(pn_pcie_parse_acs(cfg, sizeof(cfg), &a), -EBADMSG);
	CHECK_EQ_INT(a.present, 0);
	cap(0x140, 0x0002, 0x40);
	CHECK_EQ_INT(pn_pcie_ext_cap(cfg, sizeof(cfg), 0x000d), -EBADMSG);
	CHECK(strstr(pn_errmsg(-EBADMSG), "points to 0x040, outside the extended space") != NULL);
	cap(0x100, 0x0001, 0x100);	/* itself */
	CHECK_EQ_INT(pn_pcie_ext_cap(cfg, sizeof(cfg), 0x000d), -EBADMSG);
	/* a long loop that comes back late */
	for (unsigned o = 0x100; o < 0xffc; o += 4)
		cap(o, 0x0001, o + 4);
	cap(0xffc, 0x0001, 0x800);
	CHECK_EQ_INT(pn_pcie_ext_cap(cfg, sizeof(cfg), 0x000d), -EBADMSG);
	/* the ACS capability found after it would be a PASS: never reached */
	memset(cfg, 0xff, sizeof(cfg));
	CHECK_EQ_INT(pn_pcie_ext_cap(cfg, sizeof(cfg), 0x000d), -EBADMSG);
	CHECK_EQ_INT(pn_pcie_parse_acs(cfg, sizeof(cfg), &a), -EBADMSG);
	CHECK(strstr(pn_errmsg(-EBADMSG), "reads all ones (vendor 0xffff)") != NULL);
	/* a live function, its extended space all ones past 0x100 */
	memset(cfg, 0, 0x100);
	cfg[0] = 0xde;
	cfg[1] = 0x10;
	CHECK_EQ_INT(pn_pcie_parse_acs(cfg, sizeof(cfg), &a), -EBADMSG);
	/* all zeros, vendor ID too: no function's config space, not "no ACS" */
	memset(cfg, 0, sizeof(cfg));
	CHECK_EQ_INT(pn_pcie_parse_acs(cfg, sizeof(cfg), &a), -EBADMSG);
	CHECK(strstr(pn_errmsg(-EBADMSG), "vendor 0x0000") != NULL);
	/* a function with an empty extended list: no ACS */
	clear();
	CHECK_EQ_INT(pn_pcie_parse_acs(cfg, sizeof(cfg), &a), 0);
	CHECK_EQ_INT(a.present, 0);
	/* a pointer to a header of zeros (past 0x100): no list */
	cap(0x100, 0x0001, 0x200);
	CHECK_EQ_INT(pn_pcie_ext_cap(cfg, sizeof(cfg), 0x000d), -EBADMSG);
	/* the reserved low bits of the pointer are masked, as Linux does */
	cap(0x100, 0x0001, 0x203);
	cap(0x200, 0x000d, 0);
	CHECK_EQ_INT(pn_pcie_ext_cap(cfg, sizeof(cfg), 0x000d), 0x200);
	/* the last dword: a header there, its registers beyond the buffer */
	cap(0x100, 0x0001, 0xffc);
	cap(0xffc, 0x000d, 0);
	CHECK_EQ_INT(pn_pcie_ext_cap(cfg, sizeof(cfg), 0x000d), 0xffc);
	CHECK_EQ_INT(pn_pcie_parse_acs(cfg, sizeof(cfg), &a), -EBADMSG);
	CHECK_EQ_INT(a.present, 0);
	/* a short buffer: a pointer past its end */
	cap(0x100, 0x0001, 0x200);
	CHECK_EQ_INT(pn_pcie_ext_cap(cfg, 0x180, 0x000d), -EBADMSG);
	CHECK(strstr(pn_errmsg(-EBADMSG), "points past its end") != NULL);
}

#define S(x) x, strlen(x)

TEST(memlock)
{
	uint64_t v = 0;

	CHECK_EQ_INT(pn_settings_memlock(S("Limit   Soft Limit  Hard Limit  Units\n"
					   "Max locked memory         unlimited            "
					   "unlimited            bytes\n"), &v), 0);
	CHECK(v == UINT64_MAX);
	CHECK_EQ_INT(pn_settings_memlock(S("Max locked memory  8388608  8388608  bytes\n"), &v), 0);
	CHECK(v == 8388608);
	CHECK_EQ_INT(pn_settings_memlock(S("Max locked memory  65536  unlimited  bytes"), &v), 0);
	CHECK(v == 65536);
	CHECK_EQ_INT(pn_settings_memlock(S("Max open files  1024  1024  files\n"), &v), -ENOENT);
	CHECK_EQ_INT(pn_settings_memlock(S("Max locked memory  lots  lots  bytes\n"), &v), -EINVAL);
	CHECK_EQ_INT(pn_settings_memlock(S("Max locked memory  unlimitedx  0  bytes\n"), &v), -EINVAL);
	CHECK_EQ_INT(pn_settings_memlock(S("Max locked memory  99999999999999999999999  0\n"), &v),
		     -EINVAL);
	CHECK_EQ_INT(pn_settings_memlock(S("Max locked memory  12k  0\n"), &v), -EINVAL);
	CHECK_EQ_INT(pn_settings_memlock("", 0, &v), -ENOENT);
	/* not NUL-terminated: only len bytes are read */
	CHECK_EQ_INT(pn_settings_memlock("Max locked memory  64xxxx", 21, &v), 0);
	CHECK(v == 64);
}

TEST(mounts)
{
	const char *m = "sysfs /sys sysfs rw 0 0\n"
			"shm /dev/shm tmpfs rw,nosuid,size=65536k 0 0\n"
			"tmpfs /dev/shm/x tmpfs rw,size=1g 0 0\n";
	char t[40];
	uint64_t v;

	CHECK_EQ_INT(pn_settings_mount_size(S(m), "/dev/shm", &v, t, sizeof(t)), 0);
	CHECK(v == 65536ull * 1024);
	CHECK_STR(t, "tmpfs");
	CHECK_EQ_INT(pn_settings_mount_size(S(m), "/dev/shm/x", &v, t, sizeof(t)), 0);
	CHECK(v == 1ull << 30);
	CHECK_EQ_INT(pn_settings_mount_size(S(m), "/dev", &v, t, sizeof(t)), -ENOENT);
	/* the last mount wins; no size=: 0 */
	CHECK_EQ_INT(pn_settings_mount_size(S("a /dev/shm tmpfs rw,size=1k 0 0\n"
					      "b /dev/shm tmpfs rw,relatime 0 0"), "/dev/shm", &v,
					    t, sizeof(t)), 0);
	CHECK(v == 0);
	CHECK_EQ_INT(pn_settings_mount_size(S("b /dev/shm tmpfs rw,size=1073741824 0 0"),
					    "/dev/shm", &v, t, sizeof(t)), 0);
	CHECK(v == 1ull << 30);
	CHECK_EQ_INT(pn_settings_mount_size(S("b /dev/shm tmpfs rw,size=50% 0 0"), "/dev/shm", &v,
					    t, sizeof(t)), -EINVAL);
	CHECK_EQ_INT(pn_settings_mount_size(S("b /dev/shm tmpfs size=99999999999999999999g 0 0"),
					    "/dev/shm", &v, t, sizeof(t)), -EINVAL);
	CHECK_EQ_INT(pn_settings_mount_size(S("b /dev/shm tmpfs size=17179869184t 0 0"),
					    "/dev/shm", &v, t, sizeof(t)), -EINVAL);
	CHECK_EQ_INT(pn_settings_mount_size(S("b /dev/shm tmpfs size= 0 0"), "/dev/shm", &v, t,
					    sizeof(t)), 0);
	/* size=0 is tmpfs without a limit, not "no size=" (half the memory) */
	CHECK_EQ_INT(pn_settings_mount_size(S("b /dev/shm tmpfs rw,size=0k 0 0"), "/dev/shm", &v,
					    t, sizeof(t)), 0);
	CHECK(v == UINT64_MAX);
	CHECK_EQ_INT(pn_settings_mount_size(S("b /dev/shm tmpfs rw,size=0 0 0"), "/dev/shm", &v, t,
					    sizeof(t)), 0);
	CHECK(v == UINT64_MAX);
	/* fewer than four fields, blank lines, long lines */
	CHECK_EQ_INT(pn_settings_mount_size(S("\n\n /dev/shm tmpfs\n   \n"), "/dev/shm", &v, t,
					    sizeof(t)), -ENOENT);
	CHECK_EQ_INT(pn_settings_mount_size("", 0, "/dev/shm", &v, t, sizeof(t)), -ENOENT);
	{
		/* the options at the very end of a buffer without a NUL (make asan) */
		static const char m2[] = "b /dev/shm tmpfs rw,size=2g";
		char *b = malloc(sizeof(m2) - 1);

		memcpy(b, m2, sizeof(m2) - 1);
		CHECK_EQ_INT(pn_settings_mount_size(b, sizeof(m2) - 1, "/dev/shm", &v, t, sizeof(t)),
			     0);
		CHECK(v == 2ull << 30);
		free(b);
	}
}

TEST(memtotal)
{
	uint64_t v = 0;

	CHECK_EQ_INT(pn_settings_memtotal(S("MemTotal:       16384000 kB\nMemFree: 1 kB\n"), &v), 0);
	CHECK(v == 16384000ull * 1024);
	CHECK_EQ_INT(pn_settings_memtotal(S("MemFree: 1 kB\nMemTotal:\t2048 kB"), &v), 0);
	CHECK(v == 2048ull * 1024);
	CHECK_EQ_INT(pn_settings_memtotal(S("MemFree: 1 kB\n"), &v), -ENOENT);
	CHECK_EQ_INT(pn_settings_memtotal("", 0, &v), -ENOENT);
	/* 2^64-1 kB wrapped to 9223372036854775296 B: out of range now */
	CHECK_EQ_INT(pn_settings_memtotal(S("MemTotal: 18446744073709551615 kB"), &v), -ERANGE);
	CHECK_EQ_INT(pn_settings_memtotal(S("MemTotal: 99999999999999999999999 kB"), &v), -ERANGE);
	CHECK_EQ_INT(pn_settings_memtotal(S("MemTotal: 17592186044417 kB"), &v), -ERANGE);
	CHECK_EQ_INT(pn_settings_memtotal(S("MemTotal: 17592186044416 kB"), &v), 0);
	CHECK(v == 1ull << 54);
	CHECK_EQ_INT(pn_settings_memtotal(S("MemTotal: 0 kB"), &v), -ERANGE);
	CHECK_EQ_INT(pn_settings_memtotal(S("MemTotal: 1023 kB"), &v), -ERANGE);
	CHECK_EQ_INT(pn_settings_memtotal(S("MemTotal: -5 kB"), &v), -EINVAL);
	CHECK_EQ_INT(pn_settings_memtotal(S("MemTotal: 12 MB"), &v), -EINVAL);
	CHECK_EQ_INT(pn_settings_memtotal(S("MemTotal: 12"), &v), -EINVAL);
	CHECK_EQ_INT(pn_settings_memtotal(S("MemTotal: 0x100 kB"), &v), -EINVAL);
	CHECK_EQ_INT(pn_settings_memtotal(S("MemTotal: 12 kB trailing"), &v), -EINVAL);
}

TEST(versions)
{
	char ver[32];
	int a, b, open_mod;

	CHECK_EQ_INT(pn_settings_version("5.15.0-91-generic", &a, &b), 0);
	CHECK_EQ_INT(a, 5);
	CHECK_EQ_INT(b, 15);
	CHECK_EQ_INT(pn_settings_version("535.104.05", &a, &b), 0);
	CHECK_EQ_INT(a, 535);
	CHECK_EQ_INT(pn_settings_version("6", &a, &b), -EINVAL);
	CHECK_EQ_INT(pn_settings_version("x86_64", &a, &b), -EINVAL);
	CHECK_EQ_INT(pn_settings_version("99999999999999999999.1", &a, &b), -EINVAL);
	CHECK_EQ_INT(pn_settings_nvidia_proc(
			     "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 "
			     "01:15:15 UTC 2023\nGCC version:  gcc version 12.3.0\n", ver,
			     sizeof(ver), &open_mod), 0);
	CHECK_STR(ver, "535.104.05");
	CHECK_EQ_INT(open_mod, 0);
	CHECK_EQ_INT(pn_settings_nvidia_proc(
			     "NVRM version: NVIDIA UNIX Open Kernel Module for aarch64  560.35.03  "
			     "Release Build  (dvs-builder@U16-I3-B03-4-3)  Fri Aug 16 2024\n", ver,
			     sizeof(ver), &open_mod), 0);
	CHECK_STR(ver, "560.35.03");
	CHECK_EQ_INT(open_mod, 1);
	CHECK_EQ_INT(pn_settings_nvidia_proc("NVRM version: something else\n", ver, sizeof(ver),
					     &open_mod), -EINVAL);
	CHECK_EQ_INT(pn_settings_nvidia_proc("", ver, sizeof(ver), &open_mod), -EINVAL);
}

/* NCCL's minimum driver per CUDA major, and the versions' verdict */
TEST(driver_rule)
{
	char why[256];

	CHECK_STR(pn_settings_driver_min(12), "525.60.13");
	CHECK_STR(pn_settings_driver_min(11), "450.80.02");
	CHECK_STR(pn_settings_driver_min(13), "580.65.06");
	CHECK(pn_settings_driver_min(10) == NULL);
	CHECK(pn_settings_driver_min(-1) == NULL);
	CHECK_EQ_INT(pn_settings_versions("550.54.15", "2.21.5+cuda12.4", 0, why, sizeof(why)), 1);
	CHECK_EQ_INT(pn_settings_versions("525.60.13", "2.21.5+cuda12.4", 0, why, sizeof(why)), 1);
	CHECK_EQ_INT(pn_settings_versions("525.60.11", "2.21.5+cuda12.4", 0, why, sizeof(why)), 0);
	CHECK(strstr(why, ">= 525.60.13") != NULL);
	CHECK_EQ_INT(pn_settings_versions("525.105", "2.21.5+cuda12.4", 0, why, sizeof(why)), 1);
	CHECK_EQ_INT(pn_settings_versions("470.57.02", "2.18.5+cuda12.2", 0, why, sizeof(why)), 0);
	CHECK_EQ_INT(pn_settings_versions("575.51.03", "2.28.3+cuda13.0", 0, why, sizeof(why)), 0);
	CHECK_EQ_INT(pn_settings_versions("580.65.06", "2.28.3+cuda13.0", 0, why, sizeof(why)), 1);
	/* the driver's own CUDA API older than NCCL's major */
	CHECK_EQ_INT(pn_settings_versions("580.65.06", "2.28.3+cuda13.0", 12090, why, sizeof(why)),
		     0);
	CHECK(strstr(why, "CUDA 12.9") != NULL);
	CHECK_EQ_INT(pn_settings_versions("550.54.15", "", 12040, why, sizeof(why)), 1);
	/* too little known */
	CHECK_EQ_INT(pn_settings_versions("", "2.21.5+cuda12.4", 0, why, sizeof(why)), -ENOENT);
	/* no release (a container): the driver's CUDA API version alone */
	CHECK_EQ_INT(pn_settings_versions("", "2.21.5+cuda12.4", 12020, why, sizeof(why)), 1);
	CHECK(strstr(why, "CUDA API 12.2") != NULL);
	CHECK_EQ_INT(pn_settings_versions("", "2.28.3+cuda13.0", 12090, why, sizeof(why)), 0);
	CHECK(strstr(why, "CUDA 12.9") != NULL);
	CHECK_EQ_INT(pn_settings_versions("550.54.15", "", 0, why, sizeof(why)), -ENOENT);
	CHECK_EQ_INT(pn_settings_versions("550.54.15", "2.21.5", 0, why, sizeof(why)), -ENOENT);
	CHECK_EQ_INT(pn_settings_versions("550.54.15", "2.21.5+cudax", 0, why, sizeof(why)), -ENOENT);
	CHECK_EQ_INT(pn_settings_versions("garbage", "2.21.5+cuda12.4", 0, why, sizeof(why)),
		     -ENOENT);
	CHECK_EQ_INT(pn_settings_versions("550.54.15", "2.1+cuda9.2", 0, why, sizeof(why)), -ENOENT);
	/* bounded message */
	CHECK_EQ_INT(pn_settings_versions("525.60.11", "2.21.5+cuda12.4", 0, why, 8), 0);
	CHECK(strlen(why) < 8);
}

TEST(imex_and_access)
{
	const char *nodes = "# IMEX nodes\n10.0.0.1\n\n   \n\t# off\n  10.0.0.2\nlast";

	CHECK_EQ_INT(pn_settings_imex_nodes(nodes, strlen(nodes)), 3);
	CHECK_EQ_INT(pn_settings_imex_nodes("", 0), 0);
	CHECK_EQ_INT(pn_settings_imex_nodes("\n\n# x\n", 6), 0);
	CHECK_EQ_INT(pn_settings_imex_nodes("10.0.0.1", 3), 1); /* not past len */
	/* owner, group, others: the class that applies, no fallthrough */
	CHECK_EQ_INT(pn_settings_rw_access(0600, 1000, 1000, 1000, 0), 1);
	CHECK_EQ_INT(pn_settings_rw_access(0600, 0, 0, 1000, 0), 0);
	CHECK_EQ_INT(pn_settings_rw_access(0660, 0, 44, 1000, 1), 1);
	CHECK_EQ_INT(pn_settings_rw_access(0660, 0, 44, 1000, 0), 0);
	CHECK_EQ_INT(pn_settings_rw_access(0666, 0, 0, 1000, 0), 1);
	CHECK_EQ_INT(pn_settings_rw_access(0066, 1000, 0, 1000, 1), 0); /* owner bits rule */
	CHECK_EQ_INT(pn_settings_rw_access(0644, 0, 0, 1000, 0), 0);	/* read only */
}

int main(void)
{
	RUN(acs_walk);
	RUN(acs_hostile);
	RUN(memlock);
	RUN(mounts);
	RUN(memtotal);
	RUN(versions);
	RUN(driver_rule);
	RUN(imex_and_access);
	return unit_done();
}
