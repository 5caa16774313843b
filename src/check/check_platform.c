/* SPDX-License-Identifier: MIT */
/*
 * The settings check's results of the platform around the links
 * (check_platform.h, check_settings.c), all read through the sysfs root
 * (/sys, /proc and the few /dev and /etc entries below it):
 *   nvidia-driver     the NVIDIA driver's version, where NVIDIA GPUs are;
 *   fabric-manager    on a node with NVSwitches (/dev/nvidia-nvswitchN, or
 *                     a PCI bridge of NVIDIA's, class 0x0680): the
 *                     nv-fabricmanager process or its systemd unit running;
 *   imex-nodes, imex-service, imex-channel
 *                     on a multi-node NVLink system (/etc/nvidia-imex or
 *                     /dev/nvidia-caps-imex-channels): the IMEX node list,
 *                     the nvidia-imex daemon, channel0 that the job's user
 *                     can open;
 *   DEV/PORT:roce-gid a RoCE port's GID types: a RoCE v2 GID;
 *   DEV/PORT:ecn      mlx5's ECN (ecn/roce_np, ecn/roce_rp) on its netdev;
 *   DEV/PORT:pfc      PFC on a priority that ECN covers, and the trust
 *                     state, where the driver shows them in sysfs
 *                     (MLNX_OFED's mlx5: qos/pfc, qos/trust);
 *   DEV:pci-path      the device's sysfs link reaches a PCI root bus (a
 *                     container's /sys may hide it: a dangling link, a
 *                     plain directory, a chain that ends early).
 * The versions row (driver, CUDA driver API, NCCL) is the nccl-path
 * check's, where NCCL's version is known; its rule is here.
 */
#define _GNU_SOURCE
#include "check/check_platform.h"
#include "check/check_cfg.h"
#include "check/check_p2p.h"
#include "check/check_row.h"
#include "check/check_settings.h"
#include "base/log.h"
#include "base/verdict.h"
#include "node/nic.h"
#include "node/pcie.h"
#include "node/sysfs.h"
#include "node/topo.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define NVIDIA_VENDOR 0x10de
/* processes looked at in /proc: a bound on a hostile or huge tree */
#define PROC_MAX 1000000
/* GID table entries looked at per port (mlx5 has 255) */
#define GID_MAX 1024
/* PCI functions looked at */
#define PCI_MAX 65536
#define IMEX_CFG "/etc/nvidia-imex/nodes_config.cfg"
#define IMEX_CHANNEL "/dev/nvidia-caps-imex-channels/channel0"

/* ------------------------------------------------------------ pure parts */

const char *pn_settings_driver_min(int cuda_major)
{
	/* CUDA's minimum driver for minor version compatibility, Linux */
	switch (cuda_major) {
	case 11:
		return "450.80.02";
	case 12:
		return "525.60.13";
	case 13:
		return "580.65.06";
	default:
		return NULL;
	}
}

/* "550.54.15" against "525.60.13": <0, 0, >0; a part missing is 0. */
static int cmp_release(const char *a, const char *b)
{
	while (*a || *b) {
		unsigned long x = strtoul(a, (char **)&a, 10), y = strtoul(b, (char **)&b, 10);

		if (x != y)
			return x < y ? -1 : 1;
		if (*a == '.')
			a++;
		else if (*a)
			break;
		if (*b == '.')
			b++;
		else if (*b)
			break;
	}
	return 0;
}

int pn_settings_versions(const char *driver, const char *nccl, int cuda_api, char *why,
			 size_t len)
{
	const char *cu = nccl ? strstr(nccl, "+cuda") : NULL, *min;
	int dmaj, dmin, cmaj = 0, cmin = 0;

	if (!driver || !driver[0] || pn_settings_version(driver, &dmaj, &dmin))
		driver = NULL;
	if (!driver && cuda_api <= 0) {
		snprintf(why, len, "the NVIDIA driver's version is unknown");
		return -ENOENT;
	}
	if (cu && pn_settings_version(cu + 5, &cmaj, &cmin))
		cu = NULL;
	if (!cu && !cuda_api) {
		snprintf(why, len, "%s", nccl && nccl[0] ? "NCCL's version line names no CUDA"
							 : "NCCL's version is unknown");
		return -ENOENT;
	}
	if (cu && cuda_api > 0 && cuda_api / 1000 < cmaj) {
		snprintf(why, len, "NCCL %s is built for CUDA %d.%d, the driver's API is CUDA "
			 "%d.%d: a newer major than the driver runs", nccl, cmaj, cmin,
			 cuda_api / 1000, cuda_api % 1000 / 10);
		return 0;
	}
	if (!cu) {
		snprintf(why, len, "driver %s gives CUDA %d.%d (NCCL's CUDA unknown)",
			 driver ? driver : "?", cuda_api / 1000, cuda_api % 1000 / 10);
		return 1;
	}
	if (!driver) {
		/* no release to compare (a container without /proc/driver/nvidia): the
		 * driver's own API version is the rule, minor version compatibility */
		snprintf(why, len, "the driver's CUDA API %d.%d runs NCCL %s's CUDA %d.%d (the "
			 "same major: minor version compatibility)", cuda_api / 1000,
			 cuda_api % 1000 / 10, nccl, cmaj, cmin);
		return 1;
	}
	min = pn_settings_driver_min(cmaj);
	if (!min) {
		snprintf(why, len, "NCCL %s: CUDA %d has no minimum driver in penny's table", nccl,
			 cmaj);
		return -ENOENT;
	}
	if (cmp_release(driver, min) < 0) {
		snprintf(why, len, "NCCL %s needs a driver >= %s for CUDA %d, the driver is %s",
			 nccl, min, cmaj, driver);
		return 0;
	}
	snprintf(why, len, "driver %s >= %s, the minimum for NCCL's CUDA %d.%d", driver, min,
		 cmaj, cmin);
	return 1;
}

int pn_settings_imex_nodes(const char *text, size_t len)
{
	size_t i = 0;
	int n = 0;

	while (i < len) {
		const char *l = text + i, *nl = memchr(l, '\n', len - i);
		size_t k = nl ? (size_t)(nl - l) : len - i, j = 0;

		i += k + 1;
		while (j < k && isspace((unsigned char)l[j]))
			j++;
		n += j < k && l[j] != '#';
	}
	return n;
}

int pn_settings_rw_access(unsigned mode, unsigned fuid, unsigned fgid, unsigned uid,
			  int ingroup)
{
	unsigned bits;

	(void)fgid;
	if (fuid == uid)
		bits = mode >> 6;
	else if (ingroup)
		bits = mode >> 3;
	else
		bits = mode;
	return (bits & 6) == 6;
}

/* ------------------------------------------------------------ shared */

static int nvidia_gpus(const struct pn_topo *t)
{
	int i, n = 0;

	for (i = 0; i < t->ngpus; i++)
		n += t->devs[i].vendor_id == NVIDIA_VENDOR;
	return n;
}

int pn_settings_versions_row(struct pn_check *c, const char *check, const char *nccl,
			     int cuda_api)
{
	char ver[32], meas[PN_VERDICT_VAL], det[PN_VERDICT_DETAIL], why[200], src[PN_VERDICT_SOURCE];
	struct pn_verdict_in in = { .check = check, .target = "versions", .detail = det,
				    .measured = PN_VTEXT(meas) };
	int open_mod, r;

	pn_settings_driver(ver, sizeof(ver), &open_mod);
	snprintf(meas, sizeof(meas), "driver %s, NCCL %s", ver[0] ? ver : "?",
		 nccl && nccl[0] ? nccl : "?");
	if (cuda_api > 0)
		snprintf(meas + strlen(meas), sizeof(meas) - strlen(meas), ", CUDA API %d.%d",
			 cuda_api / 1000, cuda_api % 1000 / 10);
	r = pn_settings_versions(ver, nccl, cuda_api, why, sizeof(why));
	if (r < 0) {
		in.verdict = PN_SKIP;
		in.measured = (struct pn_verdict_val){ .kind = PN_VAL_NONE };
		snprintf(det, sizeof(det), "%s: no rule to apply", why);
		return pn_check_add(c, &in);
	}
	in.expected = PN_VTEXT("NCCL's minimum driver");
	in.source = "default: settings.versions = fail";
	if (r) {
		in.verdict = PN_PASS;
		snprintf(det, sizeof(det), "%s", why);
		return pn_check_add(c, &in);
	}
	snprintf(det, sizeof(det), "%s: NCCL fails to start or falls back (MNNVL off); upgrade "
		 "the driver or use an NCCL built for the driver's CUDA", why);
	in.verdict = pn_settings_allowed(c, "settings.versions", det, sizeof(det), src,
					 sizeof(src));
	in.source = src;
	return pn_check_add(c, &in);
}

/* ------------------------------------------------------------ driver */

static int driver(struct pn_check *c)
{
	char ver[32], det[PN_VERDICT_DETAIL];
	int open_mod;

	if (!nvidia_gpus(c->topo))
		return pn_settings_add(c, "nvidia-driver", PN_SKIP, NULL, NULL, NULL,
				       "no NVIDIA GPU");
	pn_settings_driver(ver, sizeof(ver), &open_mod);
	/* a captured tree without /sys/module says nothing of the modules */
	if (!ver[0] && !pn_sys_exists("/sys/module"))
		return pn_settings_add(c, "nvidia-driver", PN_SKIP, NULL, NULL, NULL,
				       "no /proc/driver/nvidia/version and no /sys/module: the "
				       "driver cannot be read");
	if (!ver[0])
		return pn_settings_add(c, "nvidia-driver", PN_FAIL, "none", "loaded",
				       "default: NVIDIA GPUs", "NVIDIA GPUs, but neither "
				       "/proc/driver/nvidia/version nor /sys/module/nvidia/version: "
				       "the driver is not loaded");
	snprintf(det, sizeof(det), "the %s kernel module, version %s",
		 open_mod ? "open" : "proprietary (or unnamed)", ver);
	return pn_settings_add(c, "nvidia-driver", PN_PASS, ver, "loaded", "default: NVIDIA GPUs",
			       det);
}

/* ------------------------------------------------------------ processes */

/*
 * Is a process whose comm starts with name running (comm is cut at 15
 * bytes)?  1 yes, 0 no, -errno when /proc cannot be listed.
 */
static int process_running(const char *name)
{
	char comm[32];
	size_t nl = strlen(name) > 15 ? 15 : strlen(name);
	struct dirent *e;
	long seen = 0;
	int found = 0;
	DIR *d = pn_sys_opendir("/proc");

	if (!d)
		return -errno;
	while (!found && seen++ < PROC_MAX && (e = readdir(d))) {
		if (!isdigit((unsigned char)e->d_name[0]) ||
		    strspn(e->d_name, "0123456789") != strlen(e->d_name))
			continue;
		if (pn_sys_read(comm, sizeof(comm), "/proc/%s/comm", e->d_name) > 0 &&
		    !strncmp(comm, name, nl))
			found = 1;
	}
	closedir(d);
	return found;
}

/* The service runs: its process, or its systemd unit's invocation link. */
static int service_running(const char *process, const char *unit, char *how, size_t len)
{
	char link[128];
	int r = process_running(process);

	if (r > 0) {
		snprintf(how, len, "process %s", process);
		return 1;
	}
	/* systemd's link of a started unit: its target is the invocation id, no file */
	if (pn_sys_readlink(link, sizeof(link), "/run/systemd/units/invocation:%s", unit) > 0) {
		snprintf(how, len, "unit %s active", unit);
		return 1;
	}
	return r < 0 ? r : 0;
}

/* ------------------------------------------------------------ NVSwitch */

/* How many NVSwitches: /dev/nvidia-nvswitchN, else NVIDIA PCI bridges of class 0x0680. */
static int nvswitches(char *how, size_t len)
{
	struct dirent *e;
	int n = 0;
	DIR *d = pn_sys_opendir("/dev");

	if (d) {
		while ((e = readdir(d)))
			n += !strncmp(e->d_name, "nvidia-nvswitch", 15) &&
			     isdigit((unsigned char)e->d_name[15]);
		closedir(d);
	}
	if (n) {
		snprintf(how, len, "%d /dev/nvidia-nvswitch", n);
		return n;
	}
	d = pn_sys_opendir("/sys/bus/pci/devices");
	if (!d)
		return 0;
	while ((e = readdir(d))) {
		uint64_t vendor, cls;

		if (e->d_name[0] == '.')
			continue;
		if (!pn_sys_u64(&vendor, "/sys/bus/pci/devices/%s/vendor", e->d_name) &&
		    vendor == NVIDIA_VENDOR &&
		    !pn_sys_u64(&cls, "/sys/bus/pci/devices/%s/class", e->d_name) &&
		    (cls >> 8) == 0x0680)
			n++;
	}
	closedir(d);
	snprintf(how, len, "%d NVIDIA PCI bridge%s (class 0x0680)", n, n == 1 ? "" : "s");
	return n;
}

static int fabric_manager(struct pn_check *c)
{
	char how[64], run[80], det[PN_VERDICT_DETAIL], src[PN_VERDICT_SOURCE];
	const char *tg = "fabric-manager";
	int n = nvswitches(how, sizeof(how)), r;

	if (!n)
		return pn_settings_add(c, tg, PN_SKIP, NULL, NULL, NULL,
				       "no NVSwitch (no /dev/nvidia-nvswitchN, no NVIDIA bridge "
				       "of class 0x0680): no fabric manager needed");
	r = service_running("nv-fabricmanager", "nvidia-fabricmanager.service", run, sizeof(run));
	if (r < 0) {
		snprintf(det, sizeof(det), "%s, but /proc cannot be listed: %s", how, strerror(-r));
		return pn_settings_add(c, tg, PN_SKIP, NULL, NULL, NULL, det);
	}
	if (r) {
		snprintf(det, sizeof(det), "%s; the fabric manager runs (%s)", how, run);
		return pn_settings_add(c, tg, PN_PASS, "running", "running",
				       "default: NVSwitch present", det);
	}
	snprintf(det, sizeof(det), "%s, but no nv-fabricmanager process and no active "
		 "nvidia-fabricmanager.service: CUDA fails to start on the GPUs (or NVLink "
		 "stays down); systemctl start nvidia-fabricmanager", how);
	return pn_settings_add(c, tg, pn_settings_allowed(c, "settings.fabric-manager", det,
							  sizeof(det), src, sizeof(src)),
			       "not running", "running", src, det);
}

/* ------------------------------------------------------------ IMEX */

static int imex_finding(struct pn_check *c, const char *tg, const char *meas, const char *exp,
			char *det, size_t len)
{
	char src[PN_VERDICT_SOURCE];

	return pn_settings_add(c, tg, pn_settings_allowed(c, "settings.imex", det, len, src,
							  sizeof(src)),
			       meas, exp, src, det);
}

/* Is penny's own process in group gid? */
static int in_group(unsigned gid)
{
	gid_t g[256];
	int n = getgroups(256, g), i;

	if (gid == (unsigned)getegid())
		return 1;
	for (i = 0; i < n; i++)
		if ((unsigned)g[i] == gid)
			return 1;
	return 0;
}

static int imex_channel(struct pn_check *c)
{
	char det[PN_VERDICT_DETAIL], meas[PN_VERDICT_VAL], who[48];
	const char *tg = "imex-channel";
	struct stat st;
	double juid;
	unsigned uid;
	int ret = pn_sys_stat(&st, IMEX_CHANNEL), grp;

	if (ret) {
		snprintf(det, sizeof(det), "no %s (%s): MNNVL jobs cannot import memory; create "
			 "it (NVreg_CreateImexChannel0=1, or mknod) and pass it into containers",
			 IMEX_CHANNEL, strerror(-ret));
		return imex_finding(c, tg, "missing", "rw for the job", det, sizeof(det));
	}
	/* a captured tree holds a regular file where the live node has the device */
	if (!S_ISCHR(st.st_mode) && !(S_ISREG(st.st_mode) && !pn_sysfs_is_live())) {
		snprintf(det, sizeof(det), "%s is not a character device", IMEX_CHANNEL);
		return imex_finding(c, tg, "not a device", "rw for the job", det, sizeof(det));
	}
	if (pn_check_cfg_num(c->cfg, "settings.job-uid", &juid) == 1) {
		uid = (unsigned)juid;
		grp = 0;
		snprintf(who, sizeof(who), "uid %u (settings.job-uid)", uid);
	} else {
		uid = (unsigned)getuid();
		grp = in_group((unsigned)st.st_gid);
		snprintf(who, sizeof(who), "uid %u (penny's)", uid);
		if (!uid) {
			/* root opens anything: a job's user is someone else */
			grp = 0;
			uid = (unsigned)-1;
			snprintf(who, sizeof(who), "any user (penny runs as root)");
		}
	}
	snprintf(meas, sizeof(meas), "%04o %u:%u", (unsigned)st.st_mode & 07777,
		 (unsigned)st.st_uid, (unsigned)st.st_gid);
	if (pn_settings_rw_access(st.st_mode, st.st_uid, st.st_gid, uid, grp)) {
		snprintf(det, sizeof(det), "%s can open %s read-write", who, IMEX_CHANNEL);
		return pn_settings_add(c, tg, PN_PASS, meas, "rw for the job",
				       "default: MNNVL system", det);
	}
	snprintf(det, sizeof(det), "%s cannot open %s read-write (mode %s): NCCL's MNNVL "
		 "fails for the job; chmod or chgrp the channel, or set settings.job-uid",
		 who, IMEX_CHANNEL, meas);
	return imex_finding(c, tg, meas, "rw for the job", det, sizeof(det));
}

static int imex(struct pn_check *c)
{
	char det[PN_VERDICT_DETAIL], meas[PN_VERDICT_VAL], text[65536], run[80];
	int n, ret, r;

	if (!pn_sys_exists("/etc/nvidia-imex") && !pn_sys_exists("/dev/nvidia-caps-imex-channels"))
		return pn_settings_add(c, "imex", PN_SKIP, NULL, NULL, NULL,
				       "not a multi-node NVLink system (no /etc/nvidia-imex, no "
				       "/dev/nvidia-caps-imex-channels)");
	n = pn_sys_read_bin(text, sizeof(text), IMEX_CFG);
	if (n < 0) {
		snprintf(det, sizeof(det), "%s cannot be read (%s): the IMEX daemon knows no "
			 "peers", IMEX_CFG, n == -EINVAL ? "not a regular file" : strerror(-n));
		ret = imex_finding(c, "imex-nodes", "missing", "1 node or more", det, sizeof(det));
	} else if (!(r = pn_settings_imex_nodes(text, (size_t)n))) {
		snprintf(det, sizeof(det), "%s names no node: the IMEX domain is empty", IMEX_CFG);
		ret = imex_finding(c, "imex-nodes", "0 nodes", "1 node or more", det, sizeof(det));
	} else {
		snprintf(meas, sizeof(meas), "%d node%s", r, r == 1 ? "" : "s");
		snprintf(det, sizeof(det), "%s%s", IMEX_CFG,
			 n == (int)sizeof(text) ? " (its first 64 KiB)" : "");
		ret = pn_settings_add(c, "imex-nodes", PN_PASS, meas, "1 node or more",
				      "default: MNNVL system", det);
	}
	if (ret)
		return ret;
	r = service_running("nvidia-imex", "nvidia-imex.service", run, sizeof(run));
	if (r < 0) {
		snprintf(det, sizeof(det), "/proc cannot be listed: %s", strerror(-r));
		ret = pn_settings_add(c, "imex-service", PN_SKIP, NULL, NULL, NULL, det);
	} else if (r) {
		snprintf(det, sizeof(det), "the IMEX daemon runs (%s)", run);
		ret = pn_settings_add(c, "imex-service", PN_PASS, "running", "running",
				      "default: MNNVL system", det);
	} else {
		snprintf(det, sizeof(det), "no nvidia-imex process and no active nvidia-imex."
			 "service: multi-node NVLink is off (NCCL falls back to the network); "
			 "systemctl start nvidia-imex");
		ret = imex_finding(c, "imex-service", "not running", "running", det, sizeof(det));
	}
	return ret ? ret : imex_channel(c);
}

/* ------------------------------------------------------------ RoCE */

static int roce_gid(struct pn_check *c, const struct pn_nic *nic, const struct pn_port *p)
{
	char tg[PN_VERDICT_NAME], type[32], det[PN_VERDICT_DETAIL], meas[PN_VERDICT_VAL];
	char src[PN_VERDICT_SOURCE];
	int i, v1 = 0, v2 = 0, first = -1;
	struct dirent *e;
	DIR *d;

	snprintf(tg, sizeof(tg), "%s/%d:roce-gid", nic->name, p->port);
	d = pn_sys_opendir("/sys/class/infiniband/%s/ports/%d/gid_attrs/types", nic->name,
			   p->port);
	if (!d)
		return pn_settings_add(c, tg, PN_SKIP, NULL, NULL, NULL,
				       "no gid_attrs/types: the GID types cannot be read");
	for (i = 0; i < GID_MAX && (e = readdir(d)); i++) {
		int idx;

		if (pn_sys_parse_int(e->d_name, &idx) ||
		    pn_sys_read(type, sizeof(type), "/sys/class/infiniband/%s/ports/%d/gid_attrs/"
				"types/%d", nic->name, p->port, idx) <= 0)
			continue;
		if (!strcasecmp(type, "RoCE v2")) {
			if (first < 0 || idx < first)
				first = idx;
			v2++;
		} else {
			v1 += !strcasecmp(type, "IB/RoCE v1");
		}
	}
	closedir(d);
	if (v2) {
		snprintf(meas, sizeof(meas), "%d RoCE v2", v2);
		snprintf(det, sizeof(det), "first RoCE v2 GID at index %d (%d v1)", first, v1);
		return pn_settings_add(c, tg, PN_PASS, meas, "a RoCE v2 GID", "default: RoCE", det);
	}
	snprintf(meas, sizeof(meas), "%d v1, no v2", v1);
	snprintf(det, sizeof(det), "RoCE port with no RoCE v2 GID (%d v1): v1 is not routable and "
		 "NCCL_IB_ROCE_VERSION_NUM=2 finds nothing; give %s an IP address (v2 GIDs follow "
		 "it)", v1, p->netdev[0] ? p->netdev : "its netdev");
	return pn_settings_add(c, tg, pn_settings_allowed(c, "settings.roce-v1", det, sizeof(det),
							  src, sizeof(src)),
			       meas, "a RoCE v2 GID", src, det);
}

/* The priorities (0..7) whose ecn/KIND/enable/N holds 1, as a mask; -1 none readable. */
static int ecn_prios(const char *netdev, const char *kind)
{
	int prio, v, mask = 0, any = 0;

	for (prio = 0; prio < 8; prio++)
		if (!pn_sys_int(&v, "/sys/class/net/%s/ecn/%s/enable/%d", netdev, kind, prio)) {
			any = 1;
			mask |= (v != 0) << prio;
		}
	return any ? mask : -1;
}

static void prios(char *buf, size_t len, int mask)
{
	int i;
	size_t n = 0;

	buf[0] = 0;
	for (i = 0; i < 8; i++)
		if (mask & (1 << i) && n < len)
			n += (size_t)snprintf(buf + n, len - n, "%s%d", n ? "," : "", i);
	if (!mask)
		snprintf(buf, len, "none");
}

static int roce_ecn(struct pn_check *c, const struct pn_nic *nic, const struct pn_port *p)
{
	char tg[PN_VERDICT_NAME], det[PN_VERDICT_DETAIL], meas[PN_VERDICT_VAL], a[24], b[24];
	char src[PN_VERDICT_SOURCE];
	int np, rp;

	snprintf(tg, sizeof(tg), "%s/%d:ecn", nic->name, p->port);
	if (!p->netdev[0])
		return pn_settings_add(c, tg, PN_SKIP, NULL, NULL, NULL,
				       "the port has no netdev: its ECN cannot be read");
	np = ecn_prios(p->netdev, "roce_np");
	rp = ecn_prios(p->netdev, "roce_rp");
	if (np < 0 && rp < 0) {
		snprintf(det, sizeof(det), "not exposed in sysfs (no /sys/class/net/%s/ecn/roce_np"
			 ", an mlx5 file)", p->netdev);
		return pn_settings_add(c, tg, PN_SKIP, NULL, NULL, NULL, det);
	}
	prios(a, sizeof(a), np < 0 ? 0 : np);
	prios(b, sizeof(b), rp < 0 ? 0 : rp);
	snprintf(meas, sizeof(meas), "np %s, rp %s", a, b);
	if (np > 0 && rp > 0 && (np & rp)) {
		snprintf(det, sizeof(det), "%s: DCQCN marks (np) and reacts (rp) on priority %s",
			 p->netdev, a);
		return pn_settings_add(c, tg, PN_PASS, meas, "np and rp on one priority",
				       "default: RoCE", det);
	}
	snprintf(det, sizeof(det), "%s: ECN notification (roce_np) and reaction (roce_rp) are not "
		 "both on for one priority: congestion turns into drops or PFC storms; enable "
		 "them on the RoCE traffic's priority", p->netdev);
	return pn_settings_add(c, tg, pn_settings_allowed(c, "settings.roce-ecn", det, sizeof(det),
							  src, sizeof(src)),
			       meas, "np and rp on one priority", src, det);
}

/*
 * A qos/pfc file as a mask of priorities: eight 0/1 values separated by
 * commas or white space ("0,0,0,1,0,0,0,0"), or mlnx_qos's table, whose
 * line "enabled" holds them.  -1 when it is neither.
 */
static int pfc_mask(const char *text)
{
	const char *s = text, *e;
	int n = 0, mask = 0, line = 0;

	for (e = text; (e = strstr(e, "enabled")); e++)
		if (e == text || e[-1] == '\n') {
			s = e + strlen("enabled");
			line = 1;	/* that line only */
			break;
		}
	for (;;) {
		s += strspn(s, line ? " \t,:" : " \t,:\n");
		if (!*s || *s == '\n')
			break;
		if ((*s != '0' && *s != '1') || (s[1] && !strchr(" \t,:\n", s[1])) || n >= 8)
			return -1;
		mask |= (*s - '0') << n++;
		s++;
	}
	return n == 8 ? mask : -1;
}

static int roce_pfc(struct pn_check *c, const struct pn_nic *nic, const struct pn_port *p)
{
	char tg[PN_VERDICT_NAME], det[PN_VERDICT_DETAIL], meas[PN_VERDICT_VAL], a[24], b[24];
	char src[PN_VERDICT_SOURCE], text[512], trust[32] = "";
	int pfc, ecn, np, rp, n;

	snprintf(tg, sizeof(tg), "%s/%d:pfc", nic->name, p->port);
	if (!p->netdev[0])
		return pn_settings_add(c, tg, PN_SKIP, NULL, NULL, NULL,
				       "the port has no netdev: its PFC cannot be read");
	n = pn_sys_read(text, sizeof(text), "/sys/class/net/%s/qos/pfc", p->netdev);
	if (n == -ENOENT || n == -ENOTDIR) {
		snprintf(det, sizeof(det), "not exposed in sysfs (no /sys/class/net/%s/qos/pfc, "
			 "MLNX_OFED's mlx5; the upstream driver sets PFC through DCB netlink only)",
			 p->netdev);
		return pn_settings_add(c, tg, PN_SKIP, NULL, NULL, NULL, det);
	}
	if (n < 0 || (pfc = pfc_mask(text)) < 0) {
		snprintf(det, sizeof(det), "/sys/class/net/%s/qos/pfc: %s", p->netdev,
			 n < 0 ? pn_errmsg(n) : "not eight 0/1 values");
		return pn_settings_add(c, tg, PN_SKIP, NULL, NULL, NULL, det);
	}
	if (pn_sys_read(trust, sizeof(trust), "/sys/class/net/%s/qos/trust", p->netdev) < 0 ||
	    (strcmp(trust, "pcp") && strcmp(trust, "dscp")))
		snprintf(trust, sizeof(trust), "?");
	np = ecn_prios(p->netdev, "roce_np");
	rp = ecn_prios(p->netdev, "roce_rp");
	ecn = np >= 0 && rp >= 0 ? np & rp : -1;
	prios(a, sizeof(a), pfc);
	snprintf(meas, sizeof(meas), "pfc %s, trust %s", a, trust);
	if (pfc && (ecn < 0 || (pfc & ecn))) {
		prios(b, sizeof(b), ecn < 0 ? pfc : pfc & ecn);
		snprintf(det, sizeof(det), "%s: lossless priority %s%s%s", p->netdev, b,
			 ecn < 0 ? "" : " with ECN", trust[0] == '?' ? "" : ", trust ");
		if (trust[0] != '?')
			snprintf(det + strlen(det), sizeof(det) - strlen(det), "%s%s", trust,
				 !strcmp(trust, "pcp") ? " (the priority travels in a VLAN tag: "
				 "untagged RoCE lands on priority 0)" : "");
		return pn_settings_add(c, tg, PN_PASS, meas, "PFC on an ECN priority",
				       "default: RoCE", det);
	}
	prios(b, sizeof(b), ecn < 0 ? 0 : ecn);
	if (!pfc)
		snprintf(det, sizeof(det), "%s: PFC is on for no priority: RoCE is lossy, a drop "
			 "costs a timeout and a retransmission; enable PFC on the RoCE traffic's "
			 "priority (mlnx_qos -f, dcb pfc), or allow a lossy fabric", p->netdev);
	else
		snprintf(det, sizeof(det), "%s: PFC on priority %s, ECN on %s: the RoCE traffic's "
			 "priority needs both (PFC alone pauses the fabric under congestion)",
			 p->netdev, a, b);
	return pn_settings_add(c, tg, pn_settings_allowed(c, "settings.roce-pfc", det, sizeof(det),
							  src, sizeof(src)),
			       meas, "PFC on an ECN priority", src, det);
}

static int roce(struct pn_check *c)
{
	const struct pn_topo *t = c->topo;
	int i, j, ret = 0, any = 0;

	for (i = t->ngpus; !ret && i < t->ngpus + t->nnics; i++) {
		const struct pn_nic *nic = &t->devs[i].nic;

		for (j = 0; !ret && j < nic->nports; j++) {
			const struct pn_port *p = &nic->ports[j];

			if (strcmp(p->link_layer, "Ethernet") ||
			    !pn_check_port_selected(c, nic->name, p->port))
				continue;
			any = 1;
			ret = roce_gid(c, nic, p);
			if (!ret)
				ret = roce_ecn(c, nic, p);
			if (!ret)
				ret = roce_pfc(c, nic, p);
		}
	}
	if (!ret && !any)
		ret = pn_settings_add(c, "roce", PN_SKIP, NULL, NULL, NULL,
				      "no RoCE port (no RDMA port on Ethernet)");
	return ret;
}

/* ------------------------------------------------------------ hidden PCI paths */

static int pci_path(struct pn_check *c, const char *name, const char *addr)
{
	char tg[PN_VERDICT_NAME], link[1024], det[PN_VERDICT_DETAIL], src[PN_VERDICT_SOURCE];
	char meas[PN_VERDICT_VAL];
	const char *dev, *top;
	ssize_t n;
	int depth = 0;

	snprintf(tg, sizeof(tg), "%s:pci-path", name);
	if (!addr[0])
		return pn_settings_add(c, tg, PN_SKIP, NULL, NULL, NULL,
				       "a virtual device: no PCIe path");
	n = pn_sys_readlink(link, sizeof(link), "/sys/bus/pci/devices/%s", addr);
	if (n == -ENOENT) {
		snprintf(meas, sizeof(meas), "missing");
		snprintf(det, sizeof(det), "no /sys/bus/pci/devices/%s: the device is not in this "
			 "/sys", addr);
	} else if (n < 0) {
		snprintf(meas, sizeof(meas), "no link");
		snprintf(det, sizeof(det), "/sys/bus/pci/devices/%s is no link (%s): the bridges "
			 "above it are hidden", addr, strerror((int)-n));
	} else if (!pn_sys_exists("/sys/bus/pci/devices/%s", addr)) {
		snprintf(meas, sizeof(meas), "dangling");
		snprintf(det, sizeof(det), "/sys/bus/pci/devices/%s points at %.120s, which this "
			 "/sys does not hold", addr, link);
	} else {
		/* ../../../devices/pci0000:00/0000:00:01.0/.../ADDR */
		dev = strstr(link, "devices/");
		top = dev ? dev + 8 : NULL;
		if (top && !strncmp(top, "pci", 3) && strchr(top, '/')) {
			const char *s;

			for (s = strchr(top, '/'); s; s = strchr(s + 1, '/'))
				depth++;
			snprintf(meas, sizeof(meas), "%.*s +%d", (int)(strchr(top, '/') - top),
				 top, depth);
			snprintf(det, sizeof(det), "the device's link reaches the root bus %.*s",
				 (int)(strchr(top, '/') - top), top);
			return pn_settings_add(c, tg, PN_PASS, meas, "a root bus",
					       "default: a whole PCI tree", det);
		}
		snprintf(meas, sizeof(meas), "no root bus");
		snprintf(det, sizeof(det), "/sys/bus/pci/devices/%s points at %.120s: the chain "
			 "ends before a PCI root bus (pciDDDD:BB)", addr, link);
	}
	snprintf(det + strlen(det), sizeof(det) - strlen(det), "; a container's /sys that hides "
		 "the PCI tree: NCCL and penny cannot see the switches (mount the host's /sys)");
	return pn_settings_add(c, tg, pn_settings_allowed(c, "settings.pci-hidden", det,
							  sizeof(det), src, sizeof(src)),
			       meas, "a root bus", src, det);
}

/* Is addr a device of the topology? */
static int topo_has(const struct pn_topo *t, const char *addr)
{
	int i;

	for (i = 0; i < t->ngpus + t->nnics; i++)
		if (!strcmp(t->devs[i].pci_busid, addr))
			return 1;
	return 0;
}

static int pci_paths(struct pn_check *c)
{
	const struct pn_topo *t = c->topo;
	struct dirent *e;
	int i, ret = 0, seen = 0;
	DIR *d;

	for (i = 0; !ret && i < t->ngpus + t->nnics; i++) {
		const struct pn_topo_dev *dv = &t->devs[i];

		if (i >= t->ngpus && !pn_settings_selected_nic(c, &dv->nic))
			continue;
		ret = pci_path(c, i < t->ngpus ? dv->name : dv->nic.name, dv->pci_busid);
	}
	/* a dangling bus link hides its device from the topology itself: by address */
	d = ret ? NULL : pn_sys_opendir("/sys/bus/pci/devices");
	while (d && !ret && seen++ < PCI_MAX && (e = readdir(d)))
		if (e->d_name[0] != '.' && strlen(e->d_name) < 16 && !topo_has(t, e->d_name) &&
		    !pn_sys_exists("/sys/bus/pci/devices/%s", e->d_name))
			ret = pci_path(c, e->d_name, e->d_name);
	if (d)
		closedir(d);
	return ret;
}

int pn_settings_platform(struct pn_check *c)
{
	int ret = driver(c);

	if (!ret)
		ret = fabric_manager(c);
	if (!ret)
		ret = imex(c);
	if (!ret)
		ret = roce(c);
	if (!ret)
		ret = pci_paths(c);
	if (!ret)
		ret = pn_settings_nvlink_p2p(c);
	return ret;
}

/* The settings check: the node's PCIe, IOMMU, GPUDirect, memory and shared
 * memory settings (check_settings.c), then the platform's (here). */
int pn_check_settings(struct pn_check *c)
{
	int ret = pn_settings_node(c);

	return ret ? ret : pn_settings_platform(c);
}
