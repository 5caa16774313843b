/* SPDX-License-Identifier: MIT */
/*
 * The settings check of `penny check` (check_settings.h): the node's settings
 * that make GPU communication slow or fail while every link is healthy, each
 * a result of its own, all read through the sysfs root (/sys and /proc):
 *   TARGET:acs      PCIe ACS redirect on the switch ports above a GPU or an
 *                   RDMA NIC (P2P and GPUDirect RDMA then cross the root
 *                   complex); root ports are not judged: traffic between
 *                   root ports goes through the root complex anyway;
 *   TARGET:iommu    the IOMMU domain of the device: identity (passthrough)
 *                   or no IOMMU pass, DMA translation fails unless
 *                   settings.iommu-dma = allow (a VM that needs it);
 *   gpudirect-rdma  the nvidia_peermem module (or the older nv_peer_mem), or
 *                   dma-buf: the open kernel module >= 515 on Linux >= 5.12;
 *   memlock         the soft RLIMIT_MEMLOCK of penny's own process (the
 *                   user that runs it), from /proc/self/limits, where an
 *                   RDMA device is (registration is what it limits);
 *   dev-shm         the size of the tmpfs at /dev/shm, from /proc/mounts.
 */
#define _GNU_SOURCE
#include "check/check_settings.h"
#include "check/check_cfg.h"
#include "check/check_row.h"
#include "base/log.h"
#include "base/units.h"
#include "base/verdict.h"
#include "node/pcie.h"
#include "node/sysfs.h"
#include "node/topo.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK "settings"
#define NVIDIA_VENDOR 0x10de
/* dma-buf export of GPU memory: NVIDIA's open kernel module from 515, Linux from 5.12 */
#define DMABUF_DRIVER 515
#define DMABUF_KMAJ 5
#define DMABUF_KMIN 12
/* /proc/mounts of a busy container host runs to a few MiB: read whole up to this */
#define MOUNTS_MAX (16u << 20)

/* ------------------------------------------------------------ parsers */

/* The line of text[0, len) that starts with prefix: into line (NUL-terminated). */
static int find_line(const char *text, size_t len, const char *prefix, char *line, size_t llen)
{
	size_t i = 0, pl = strlen(prefix);

	while (i < len) {
		const char *nl = memchr(text + i, '\n', len - i);
		size_t n = nl ? (size_t)(nl - (text + i)) : len - i;

		if (n >= pl && !memcmp(text + i, prefix, pl)) {
			if (n >= llen)
				n = llen - 1;
			memcpy(line, text + i, n);
			line[n] = 0;
			return 0;
		}
		i += n + 1;
	}
	return -ENOENT;
}

int pn_settings_memlock(const char *text, size_t len, uint64_t *bytes)
{
	char line[256], *p, *end;
	unsigned long long v;

	if (find_line(text, len, "Max locked memory", line, sizeof(line)))
		return -ENOENT;
	p = line + strlen("Max locked memory");
	while (*p == ' ' || *p == '\t')
		p++;
	if (!strncmp(p, "unlimited", 9) && (!p[9] || p[9] == ' ' || p[9] == '\t')) {
		*bytes = UINT64_MAX;
		return 0;
	}
	if (!isdigit((unsigned char)*p))
		return -EINVAL;
	errno = 0;
	v = strtoull(p, &end, 10);
	if (errno || (*end && *end != ' ' && *end != '\t'))
		return -EINVAL;
	*bytes = v;
	return 0;
}

int pn_settings_mount_size(const char *text, size_t len, const char *mnt, uint64_t *bytes,
			   char *fstype, size_t tlen)
{
	size_t i = 0, ml = strlen(mnt);
	int found = 0, bad = 0;

	while (i < len) {
		const char *l = text + i, *nl = memchr(l, '\n', len - i), *f[4];
		size_t n = nl ? (size_t)(nl - l) : len - i, fl[4], k = 0, j = 0;

		i += n + 1;
		/* device mountpoint fstype options ... */
		while (k < 4 && j < n) {
			while (j < n && l[j] == ' ')
				j++;
			f[k] = l + j;
			while (j < n && l[j] != ' ')
				j++;
			fl[k] = (size_t)(l + j - f[k]);
			if (fl[k])
				k++;
		}
		if (k < 4 || fl[1] != ml || memcmp(f[1], mnt, ml))
			continue;
		found = 1;
		bad = 0;
		*bytes = 0;
		snprintf(fstype, tlen, "%.*s", (int)(fl[2] < 32 ? fl[2] : 32), f[2]);
		for (j = 0; j < fl[3];) {
			const char *o = f[3] + j, *comma = memchr(o, ',', fl[3] - j);
			size_t ol = comma ? (size_t)(comma - o) : fl[3] - j;

			if (ol > 5 && !memcmp(o, "size=", 5))
				bad = pn_parse_size_n(o + 5, ol - 5, 0, bytes) != 0;
			/* tmpfs's size=0 is no limit at all */
			if (ol > 5 && !memcmp(o, "size=", 5) && !bad && !*bytes)
				*bytes = UINT64_MAX;
			j += ol + 1;
		}
	}
	if (!found)
		return -ENOENT;
	return bad ? -EINVAL : 0;
}

int pn_settings_memtotal(const char *text, size_t len, uint64_t *bytes)
{
	char line[128], *p;
	uint64_t kb = 0;

	if (find_line(text, len, "MemTotal:", line, sizeof(line)))
		return -ENOENT;
	p = line + strlen("MemTotal:");
	while (*p == ' ' || *p == '\t')
		p++;
	if (!isdigit((unsigned char)*p))
		return -EINVAL;
	for (; isdigit((unsigned char)*p); p++) {
		if (kb > (UINT64_MAX - 9) / 10)
			return -ERANGE;
		kb = kb * 10 + (uint64_t)(*p - '0');
	}
	while (*p == ' ' || *p == '\t')
		p++;
	if (strcmp(p, "kB"))
		return -EINVAL;
	/* no machine has less than a MiB or more than 2^54 bytes (16 PiB) */
	if (kb < 1024 || kb > (1ull << 44))
		return -ERANGE;
	*bytes = kb * 1024;
	return 0;
}

int pn_settings_version(const char *s, int *major, int *minor)
{
	char *end;
	long a, b;

	if (!isdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	a = strtol(s, &end, 10);
	if (errno || *end != '.' || !isdigit((unsigned char)end[1]) || a > 100000)
		return -EINVAL;
	b = strtol(end + 1, &end, 10);
	if (errno || b > 100000)
		return -EINVAL;
	*major = (int)a;
	*minor = (int)b;
	return 0;
}

int pn_settings_nvidia_proc(const char *text, char *ver, size_t vlen, int *open_module)
{
	char line[512], *p, *save = NULL;
	int a, b;

	if (find_line(text, strlen(text), "NVRM version:", line, sizeof(line)))
		return -EINVAL;
	p = strstr(line, "Kernel Module");
	if (!p)
		return -EINVAL;
	*open_module = strstr(line, "Open Kernel Module") != NULL;
	for (p = strtok_r(p + strlen("Kernel Module"), " \t", &save); p;
	     p = strtok_r(NULL, " \t", &save))
		if (!pn_settings_version(p, &a, &b)) {
			snprintf(ver, vlen, "%s", p);
			return 0;
		}
	return -EINVAL;
}

void pn_settings_driver(char *ver, size_t len, int *open_module)
{
	char text[1024];
	int n;

	ver[0] = 0;
	*open_module = 0;
	n = pn_sys_read_bin(text, sizeof(text) - 1, "/proc/driver/nvidia/version");
	if (n > 0) {
		text[n] = 0;
		if (pn_settings_nvidia_proc(text, ver, len, open_module))
			ver[0] = 0;
	}
	if (!ver[0] && pn_sys_read(ver, len, "/sys/module/nvidia/version") <= 0)
		ver[0] = 0;
}

/* ------------------------------------------------------------ results */

static int add(struct pn_check *c, const char *target, enum pn_verdict v, const char *meas,
	       const char *exp, const char *src, const char *det)
{
	struct pn_verdict_in in = { .check = CHECK, .target = target, .verdict = v,
				    .source = src, .detail = det };

	if (meas)
		in.measured = PN_VTEXT(meas);
	if (exp)
		in.expected = PN_VTEXT(exp);
	return pn_check_add(c, &in);
}

static int skip(struct pn_check *c, const char *target, const char *why)
{
	return add(c, target, PN_SKIP, NULL, NULL, NULL, why);
}

/*
 * A finding that fails unless its key says "allow": then a PASS that still
 * tells it.  src gets the source ("config: KEY" or "default: KEY = fail").
 */
static enum pn_verdict allowed(const struct pn_check *c, const char *key, char *det, size_t len,
			       char *src, size_t slen)
{
	const char *v;
	size_t n;

	if (pn_check_cfg_str(c->cfg, key, &v) == 1)
		snprintf(src, slen, "config: %s", key);
	else
		snprintf(src, slen, "default: %s = %s", key, v);
	if (strcmp(v, "allow"))
		return PN_FAIL;
	n = strlen(det);
	if (n < len - 1)
		snprintf(det + n, len - n, " (%s = allow)", key);
	return PN_PASS;
}

/* The devices judged one by one: every GPU, every selected NIC. */
static int selected_nic(const struct pn_check *c, const struct pn_nic *nic)
{
	int j, sel = !nic->nports;

	for (j = 0; j < nic->nports; j++)
		sel |= pn_check_port_selected(c, nic->name, nic->ports[j].port);
	return sel;
}

/* ------------------------------------------------------------ acs */

static int acs_dev(struct pn_check *c, const char *name, const char *addr)
{
	char chain[PN_PCIE_MAX_DEPTH][PN_PCIE_ADDR_LEN], target[PN_VERDICT_NAME];
	char det[PN_VERDICT_DETAIL], unread[PN_VERDICT_DETAIL] = "", meas[PN_VERDICT_VAL];
	char bits[32], src[PN_VERDICT_SOURCE];
	int n, i, nports = 0, ret;

	snprintf(target, sizeof(target), "%s:acs", name);
	if (!addr[0])
		return skip(c, target, "a virtual device: no PCIe path");
	n = pn_pcie_chain(addr, chain);
	if (n == -ENOMEM)
		return n;
	if (n < 0)
		return skip(c, target, pn_errmsg(n));
	/* a tree whose bus entry is no link does not show what is above */
	if (n == 1 && pn_sys_readlink(det, sizeof(det), "/sys/bus/pci/devices/%s", addr) < 0) {
		snprintf(det, sizeof(det), "/sys/bus/pci/devices/%s is no link: the PCI path "
			 "above is unknown", addr);
		return skip(c, target, det);
	}
	/*
	 * From the device up, functions alternate: upstream-facing (the device,
	 * a switch's upstream port), downstream-facing (a switch's downstream
	 * port, the root port at the top).  The downstream ports of switches
	 * are where ACS keeps P2P from crossing the switch.
	 */
	for (i = n - 2; i > 0; i -= 2) {
		struct pn_pcie_acs a;

		nports++;
		ret = pn_pcie_read_acs(chain[i], &a);
		if (ret) {
			if (!unread[0])
				snprintf(unread, sizeof(unread), "%s", pn_errmsg(ret));
			continue;
		}
		if (!a.present || !(a.ctrl & PN_ACS_REDIRECT))
			continue;
		pn_pcie_acs_bits(a.ctrl & PN_ACS_REDIRECT, bits, sizeof(bits));
		snprintf(meas, sizeof(meas), "%s at %s", bits, chain[i]);
		snprintf(det, sizeof(det), "ACS on switch port %s above %s redirects P2P (%s) "
			 "to the root complex: GPU P2P and GPUDirect RDMA cross the CPU; turn "
			 "ACS off on switch ports (BIOS, or setpci ECAP_ACS+6.w=0)", chain[i],
			 name, bits);
		return add(c, target, allowed(c, "settings.acs", det, sizeof(det), src,
					      sizeof(src)),
			   meas, "no redirect", src, det);
	}
	if (unread[0])
		return skip(c, target, unread);
	if (!nports)
		return add(c, target, PN_PASS, "no switch", "no redirect",
			   "default: no ACS redirect",
			   "no PCIe switch above: its P2P crosses the root complex anyway");
	snprintf(det, sizeof(det), "%d switch port%s above, none redirects P2P", nports,
		 nports == 1 ? "" : "s");
	return add(c, target, PN_PASS, "off", "no redirect", "default: no ACS redirect", det);
}

/* ------------------------------------------------------------ iommu */

/* Is there an IOMMU at all (a unit in /sys/class/iommu, or a group)? */
static int iommu_present(void)
{
	static const char *const dirs[] = { "/sys/class/iommu", "/sys/kernel/iommu_groups" };
	size_t i;

	for (i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		DIR *d = pn_sys_opendir("%s", dirs[i]);
		struct dirent *e;
		int any = 0;

		if (!d)
			continue;
		while (!any && (e = readdir(d)))
			any = e->d_name[0] != '.';
		closedir(d);
		if (any)
			return 1;
	}
	return 0;
}

static int iommu_dev(struct pn_check *c, const char *name, const char *addr, int present)
{
	char target[PN_VERDICT_NAME], link[256], type[32], det[PN_VERDICT_DETAIL];
	char src[PN_VERDICT_SOURCE];
	const char *group;
	const char *exp = "identity or none", *dsrc = "default: untranslated DMA";
	int ret;

	snprintf(target, sizeof(target), "%s:iommu", name);
	if (!addr[0])
		return skip(c, target, "a virtual device: no PCIe path");
	if (pn_sys_readlink(link, sizeof(link), "/sys/bus/pci/devices/%s/iommu_group", addr) < 0) {
		if (!present)
			return add(c, target, PN_PASS, "no IOMMU", exp, dsrc,
				   "no IOMMU on this node: DMA is not translated");
		return add(c, target, PN_PASS, "no group", exp, dsrc,
			   "in no IOMMU group: its DMA is not translated");
	}
	group = strrchr(link, '/');
	group = group ? group + 1 : link;
	ret = pn_sys_read(type, sizeof(type), "/sys/bus/pci/devices/%s/iommu_group/type", addr);
	if (ret <= 0) {
		snprintf(det, sizeof(det), "IOMMU group %.32s: its type cannot be read (%s; the "
			 "file came with Linux 5.11)", group, ret ? strerror(-ret) : "empty");
		return skip(c, target, det);
	}
	if (!strcmp(type, "identity"))
		return add(c, target, PN_PASS, type, exp, dsrc, "passthrough: DMA not translated");
	if (!strcmp(type, "DMA") || !strcmp(type, "DMA-FQ")) {
		snprintf(det, sizeof(det), "IOMMU group %.32s translates DMA (%s): GPUDirect P2P "
			 "and RDMA pay for every translation, or fail; boot with iommu=pt", group,
			 type);
		return add(c, target, allowed(c, "settings.iommu-dma", det, sizeof(det), src,
					      sizeof(src)), type, exp, src, det);
	}
	snprintf(det, sizeof(det), "IOMMU group %.32s is of type %s: not a domain of the host's "
		 "driver (vfio, or blocked)", group, type);
	return add(c, target, PN_FAIL, type, exp, dsrc, det);
}

/* ------------------------------------------------------------ gpudirect rdma */

/* Append ", what" (or "what" first) to buf. */
static void reason(char *buf, size_t len, const char *what)
{
	size_t n = strlen(buf);

	if (n < len - 1)
		snprintf(buf + n, len - n, "%s%s", n ? ", " : "", what);
}

static int gdr(struct pn_check *c)
{
	const struct pn_topo *t = c->topo;
	char ver[32] = "", kver[64], det[PN_VERDICT_DETAIL], meas[PN_VERDICT_VAL];
	char src[PN_VERDICT_SOURCE], why[128];
	const char *tg = "gpudirect-rdma", *exp = "peermem or dma-buf";
	int i, nv = 0, nics = 0, open_mod = 0, dmaj = 0, dmin, kmaj = 0, kmin = 0;

	for (i = 0; i < t->ngpus; i++)
		nv += t->devs[i].vendor_id == NVIDIA_VENDOR;
	for (i = t->ngpus; i < t->ngpus + t->nnics; i++)
		nics += t->devs[i].pci_busid[0] && selected_nic(c, &t->devs[i].nic);
	if (!t->ngpus)
		return skip(c, tg, "no GPU found");
	if (!nv)
		return skip(c, tg, "no NVIDIA GPU: nvidia_peermem and dma-buf are NVIDIA's");
	if (!nics)
		return skip(c, tg, "no RDMA NIC on PCI: nothing for GPUDirect RDMA");
	/* a captured tree without /sys/module says nothing of the modules */
	if (!pn_sys_exists("/sys/module"))
		return skip(c, tg, "no /sys/module: the loaded modules cannot be read");
	if (pn_sys_exists("/sys/module/nvidia_peermem"))
		return add(c, tg, PN_PASS, "nvidia_peermem", exp, "default: GPUDirect RDMA",
			   "the nvidia_peermem module is loaded");
	if (pn_sys_exists("/sys/module/nv_peer_mem"))
		return add(c, tg, PN_PASS, "nv_peer_mem", exp, "default: GPUDirect RDMA",
			   "the nv_peer_mem module is loaded");
	if (!pn_sys_exists("/sys/module/nvidia")) {
		snprintf(det, sizeof(det), "the NVIDIA driver is not loaded (no /sys/module/nvidia)");
		return add(c, tg, allowed(c, "settings.gpudirect-rdma", det, sizeof(det), src,
					  sizeof(src)),
			   "no driver", exp, src, det);
	}
	pn_settings_driver(ver, sizeof(ver), &open_mod);
	if (!ver[0] || pn_settings_version(ver, &dmaj, &dmin))
		dmaj = 0;
	if (pn_sys_read(kver, sizeof(kver), "/proc/sys/kernel/osrelease") <= 0 ||
	    pn_settings_version(kver, &kmaj, &kmin))
		kmaj = kmin = 0, snprintf(kver, sizeof(kver), "unknown");
	if (open_mod && dmaj >= DMABUF_DRIVER &&
	    (kmaj > DMABUF_KMAJ || (kmaj == DMABUF_KMAJ && kmin >= DMABUF_KMIN))) {
		snprintf(det, sizeof(det), "no nvidia_peermem, but the open kernel module %s on "
			 "Linux %.40s exports GPU memory as dma-buf", ver, kver);
		return add(c, tg, PN_PASS, "dma-buf", exp, "default: GPUDirect RDMA", det);
	}
	snprintf(meas, sizeof(meas), "no peermem, driver %s", ver[0] ? ver : "?");
	why[0] = 0;
	if (!open_mod)
		reason(why, sizeof(why), "not the open kernel module");
	if (!dmaj)
		reason(why, sizeof(why), "driver version unknown");
	else if (dmaj < DMABUF_DRIVER)
		reason(why, sizeof(why), "driver before 515");
	if (!kmaj)
		reason(why, sizeof(why), "kernel version unknown");
	else if (kmaj < DMABUF_KMAJ || (kmaj == DMABUF_KMAJ && kmin < DMABUF_KMIN))
		reason(why, sizeof(why), "Linux before 5.12");
	snprintf(det, sizeof(det), "no nvidia_peermem module, and no dma-buf (%s): NCCL falls "
		 "back to copies through host memory; modprobe nvidia_peermem", why);
	return add(c, tg, allowed(c, "settings.gpudirect-rdma", det, sizeof(det), src,
				  sizeof(src)),
		   meas, exp, src, det);
}

/* ------------------------------------------------------------ memlock, /dev/shm */

static void human(char *buf, size_t len, uint64_t b)
{
	if (b == UINT64_MAX)
		snprintf(buf, len, "unlimited");
	else if (b >= (1ull << 30) && !(b % (1ull << 30)))
		snprintf(buf, len, "%llu GiB", (unsigned long long)(b >> 30));
	else if (b >= (1ull << 20) && !(b % (1ull << 20)))
		snprintf(buf, len, "%llu MiB", (unsigned long long)(b >> 20));
	else if (b >= 1024 && !(b % 1024))
		snprintf(buf, len, "%llu KiB", (unsigned long long)(b >> 10));
	else
		snprintf(buf, len, "%llu B", (unsigned long long)b);
}

static int memlock(struct pn_check *c)
{
	char text[4096], meas[32], exp[40], det[PN_VERDICT_DETAIL], src[PN_VERDICT_SOURCE];
	uint64_t have;
	double want;
	int n, ret, i, nics = 0;

	for (i = c->topo->ngpus; i < c->topo->ngpus + c->topo->nnics; i++)
		nics += selected_nic(c, &c->topo->devs[i].nic);
	if (!nics)
		return skip(c, "memlock", "no RDMA device: locked memory limits RDMA registration");
	n = pn_sys_read_bin(text, sizeof(text), "/proc/self/limits");
	if (n < 0) {
		snprintf(det, sizeof(det), "/proc/self/limits cannot be read: %s", strerror(-n));
		return skip(c, "memlock", det);
	}
	ret = pn_settings_memlock(text, (size_t)n, &have);
	if (ret)
		return skip(c, "memlock", ret == -ENOENT ? "/proc/self/limits has no Max locked memory"
							 : "/proc/self/limits: Max locked memory "
							   "is not a limit");
	if (pn_check_cfg_num(c->cfg, "settings.memlock-min", &want) == 1) {
		snprintf(src, sizeof(src), "config: settings.memlock-min");
		human(exp, sizeof(exp), (uint64_t)want);
		snprintf(exp + strlen(exp), sizeof(exp) - strlen(exp), " or more");
	} else {
		snprintf(src, sizeof(src), "default: unlimited, as RDMA registration wants");
		want = NAN;
		snprintf(exp, sizeof(exp), "unlimited");
	}
	human(meas, sizeof(meas), have);
	if (have == UINT64_MAX || (!isnan(want) && (double)have >= want))
		return add(c, "memlock", PN_PASS, meas, exp, src,
			   "the soft RLIMIT_MEMLOCK of penny's process (its user)");
	snprintf(det, sizeof(det), "the soft RLIMIT_MEMLOCK of penny's process is %s: RDMA "
		 "memory registration fails beyond it; set memlock unlimited "
		 "(/etc/security/limits.conf, systemd LimitMEMLOCK, docker --ulimit)", meas);
	return add(c, "memlock", PN_FAIL, meas, exp, src, det);
}

/* /dev/shm's tmpfs without size= holds half the memory: *have, or a SKIP said */
static int half_memory(struct pn_check *c, uint64_t *have)
{
	char mi[8192], det[PN_VERDICT_DETAIL];
	uint64_t mem = 0;
	int n, ret;

	n = pn_sys_read_bin(mi, sizeof(mi), "/proc/meminfo");
	if (n < 0) {
		snprintf(det, sizeof(det), "/dev/shm has no size=, and /proc/meminfo cannot be read: %s",
			 strerror(-n));
		return skip(c, "dev-shm", det);
	}
	ret = pn_settings_memtotal(mi, (size_t)n, &mem);
	if (ret) {
		snprintf(det, sizeof(det), "/dev/shm has no size=, and /proc/meminfo gives %s to take "
			 "half of", ret == -ENOENT ? "no MemTotal" : ret == -ERANGE ?
			 "a MemTotal out of range" : "a MemTotal that is not a size");
		return skip(c, "dev-shm", det);
	}
	*have = mem / 2;
	return 1;
}

static int dev_shm(struct pn_check *c)
{
	char *text, fstype[40], meas[40], exp[48], det[PN_VERDICT_DETAIL], src[PN_VERDICT_SOURCE];
	uint64_t have = 0;
	double want;
	int n, ret;

	/* read whole, or not judged: a line cut at the end of the buffer is no line */
	text = malloc(MOUNTS_MAX + 1);
	if (!text)
		return pn_err(-ENOMEM, "out of memory");
	n = pn_sys_read_bin(text, MOUNTS_MAX + 1, "/proc/mounts");
	if (n < 0 || n > (int)MOUNTS_MAX) {
		free(text);
		if (n < 0)
			snprintf(det, sizeof(det), "/proc/mounts cannot be read: %s", strerror(-n));
		else
			snprintf(det, sizeof(det), "/proc/mounts is larger than %u MiB: too large to "
				 "read whole", MOUNTS_MAX >> 20);
		return skip(c, "dev-shm", det);
	}
	ret = pn_settings_mount_size(text, (size_t)n, "/dev/shm", &have, fstype, sizeof(fstype));
	free(text);
	if (ret == -ENOENT)
		return skip(c, "dev-shm", "nothing is mounted at /dev/shm: its size is that of the "
			    "file system below");
	if (ret)
		return add(c, "dev-shm", PN_FAIL, "unreadable", NULL, NULL,
			   "/proc/mounts: the size= of /dev/shm is not a size");
	if (strcmp(fstype, "tmpfs")) {
		snprintf(det, sizeof(det), "/dev/shm is %s, not tmpfs: shared memory is not memory",
			 fstype);
		return add(c, "dev-shm", PN_FAIL, fstype, "tmpfs", "default: tmpfs", det);
	}
	if (!have && (ret = half_memory(c, &have)) != 1)
		return ret;
	if (pn_check_cfg_num(c->cfg, "settings.shm-min", &want) == 1)
		snprintf(src, sizeof(src), "config: settings.shm-min");
	else
		snprintf(src, sizeof(src), "default: settings.shm-min");
	human(meas, sizeof(meas), have);
	human(exp, sizeof(exp), (uint64_t)want);
	snprintf(exp + strlen(exp), sizeof(exp) - strlen(exp), " or more");
	if ((double)have >= want)
		return add(c, "dev-shm", PN_PASS, meas, exp, src, "the tmpfs at /dev/shm");
	snprintf(det, sizeof(det), "/dev/shm holds %s: NCCL's SHM transport and its buffers "
		 "fail or fall back; remount it larger (docker: --shm-size)", meas);
	return add(c, "dev-shm", PN_FAIL, meas, exp, src, det);
}

int pn_settings_node(struct pn_check *c)
{
	const struct pn_topo *t = c->topo;
	int i, pass, ret = 0, present = iommu_present();

	/* per device: ACS first for every device, then the IOMMU */
	for (pass = 0; pass < 2 && !ret; pass++)
		for (i = 0; !ret && i < t->ngpus + t->nnics; i++) {
			const struct pn_topo_dev *d = &t->devs[i];
			const char *name = i < t->ngpus ? d->name : d->nic.name;

			if (i >= t->ngpus && !selected_nic(c, &d->nic))
				continue;
			ret = pass ? iommu_dev(c, name, d->pci_busid, present)
				   : acs_dev(c, name, d->pci_busid);
		}
	if (!ret && !t->ngpus && !t->nnics)
		ret = skip(c, "devices", "no GPU and no RDMA device: no ACS or IOMMU to check");
	if (!ret)
		ret = gdr(c);
	if (!ret)
		ret = memlock(c);
	if (!ret)
		ret = dev_shm(c);
	return ret;
}

/* ------------------------------------------------------------ for check_platform.c */

int pn_settings_add(struct pn_check *c, const char *target, enum pn_verdict v, const char *meas,
		    const char *exp, const char *src, const char *det)
{
	return add(c, target, v, meas, exp, src, det);
}

enum pn_verdict pn_settings_allowed(const struct pn_check *c, const char *key, char *det,
				    size_t len, char *src, size_t slen)
{
	return allowed(c, key, det, len, src, slen);
}

int pn_settings_selected_nic(const struct pn_check *c, const struct pn_nic *nic)
{
	return selected_nic(c, nic);
}
