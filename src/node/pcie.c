/* SPDX-License-Identifier: MIT */
/*
 * PCIe link health: the kernel's link speed and width strings, the bandwidth
 * they give, the verdict on one link, and the links on a device's path from
 * its root port (pcie.h).  Everything is read through node/sysfs.h.
 */
#define _GNU_SOURCE
#include "node/pcie.h"
#include "base/log.h"
#include "node/sysfs.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static const struct {
	const char *num;	/* as the kernel writes it, old and new */
	unsigned mts;
} speeds[] = {
	{ "2.5", 2500 },  { "5.0", 5000 },   { "5", 5000 },	{ "8.0", 8000 },
	{ "8", 8000 },	  { "16.0", 16000 }, { "16", 16000 }, { "32.0", 32000 },
	{ "32", 32000 }, { "64.0", 64000 }, { "64", 64000 },
};

int pn_pcie_parse_speed(const char *s, unsigned *mts)
{
	size_t i, n;

	if (!strcmp(s, "Unknown") || !strcmp(s, "Unknown speed")) {
		*mts = 0;
		return 0;
	}
	for (i = 0; i < sizeof(speeds) / sizeof(speeds[0]); i++) {
		n = strlen(speeds[i].num);
		if (strncmp(s, speeds[i].num, n))
			continue;
		if (strcmp(s + n, " GT/s") && strcmp(s + n, " GT/s PCIe"))
			continue;
		*mts = speeds[i].mts;
		return 0;
	}
	return -EINVAL;
}

int pn_pcie_parse_width(const char *s, int *width)
{
	int w = 0;

	if (!*s)
		return -EINVAL;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return -EINVAL;
		w = w * 10 + (*s - '0');
		if (w > 32)	/* the widest link the spec has; also stops overflow */
			return -EINVAL;
	}
	*width = w;
	return 0;
}

int pn_pcie_gen(unsigned mts)
{
	switch (mts) {
	case 2500: return 1;
	case 5000: return 2;
	case 8000: return 3;
	case 16000: return 4;
	case 32000: return 5;
	case 64000: return 6;
	default: return 0;
	}
}

double pn_pcie_gbs(unsigned mts, int width)
{
	double lane;	/* usable Mb/s per lane */

	if (width <= 0)
		return 0;
	switch (pn_pcie_gen(mts)) {
	case 1:
	case 2:
		lane = mts * 8.0 / 10.0;	/* 8b/10b */
		break;
	case 3:
	case 4:
	case 5:
		lane = mts * 128.0 / 130.0;	/* 128b/130b */
		break;
	case 6:
		/*
		 * Gen6 is PAM4 with 256-byte FLITs: 242 of the 256 bytes carry
		 * TLP payload (the rest is DLP, CRC and FEC), so 64 GT/s x
		 * 242/256.  This is the FLIT efficiency only; TLP headers cost
		 * more at every generation and are not counted anywhere here.
		 */
		lane = mts * 242.0 / 256.0;
		break;
	default:
		return 0;
	}
	return lane * width / 8.0 / 1000.0;
}

void pn_pcie_judge(struct pn_pcie_link *l)
{
	int speed, width;

	l->cur_gen = pn_pcie_gen(l->cur_mts);
	l->max_gen = pn_pcie_gen(l->max_mts);
	l->cur_gbs = pn_pcie_gbs(l->cur_mts, l->cur_width);
	l->max_gbs = pn_pcie_gbs(l->max_mts, l->max_width);
	if (!l->cur_gen || !l->max_gen || l->cur_width <= 0 || l->max_width <= 0) {
		if (!l->why[0])
			snprintf(l->why, sizeof(l->why), "link speed or width unknown");
		l->verdict = PN_PCIE_UNKNOWN;
		return;
	}
	l->why[0] = 0;
	speed = l->cur_mts < l->max_mts;
	width = l->cur_width < l->max_width;
	l->verdict = speed && width ? PN_PCIE_DOWN_BOTH :
		     speed	    ? PN_PCIE_DOWN_SPEED :
		     width	    ? PN_PCIE_DOWN_WIDTH :
				      PN_PCIE_OK;
}

const char *pn_pcie_verdict_name(enum pn_pcie_verdict v)
{
	switch (v) {
	case PN_PCIE_OK: return "ok";
	case PN_PCIE_DOWN_SPEED: return "downtrained speed";
	case PN_PCIE_DOWN_WIDTH: return "downtrained width";
	case PN_PCIE_DOWN_BOTH: return "downtrained speed and width";
	default: return "unknown";
	}
}

/* DDDD:BB:DD.F with a 4- to 8-digit hex domain, n characters of s. */
static int is_pci_addr(const char *s, size_t n)
{
	static const char tail[] = "xx:xx:xx.x";	/* x: hex digit; the last one 0-7 */
	size_t dom, i;

	if (n < 12 || n > 16)
		return 0;
	dom = n - 8;
	for (i = 0; i < dom; i++)
		if (!s[i] || !strchr("0123456789abcdefABCDEF", s[i]))
			return 0;
	for (i = 2; i < sizeof(tail) - 1; i++) {
		char c = s[dom + i - 2];

		if (tail[i] == 'x' ? !c || !strchr("0123456789abcdefABCDEF", c) : c != tail[i])
			return 0;
	}
	return s[n - 1] >= '0' && s[n - 1] <= '7';
}

static void why(struct pn_pcie_link *l, const char *file, const char *fmt, const char *what)
{
	char msg[64];

	if (l->why[0])
		return;
	snprintf(msg, sizeof(msg), fmt, what);
	snprintf(l->why, sizeof(l->why), "%s: %s", file, msg);
}

static void read_speed(struct pn_pcie_link *l, const char *file, unsigned *mts)
{
	char buf[64];
	int ret = pn_sys_read(buf, sizeof(buf), "/sys/bus/pci/devices/%s/%s", l->addr, file);

	*mts = 0;
	if (ret < 0)
		why(l, file, "%s", strerror(-ret));
	else if (pn_pcie_parse_speed(buf, mts))
		why(l, file, "%s", "not a link speed"); /* never what it holds */
	else if (!*mts)
		why(l, file, "%s", "unknown speed");
}

static void read_width(struct pn_pcie_link *l, const char *file, int *width)
{
	char buf[64];
	int ret = pn_sys_read(buf, sizeof(buf), "/sys/bus/pci/devices/%s/%s", l->addr, file);

	*width = 0;
	if (ret < 0)
		why(l, file, "%s", strerror(-ret));
	else if (pn_pcie_parse_width(buf, width))
		why(l, file, "%s", "not a link width");
	else if (!*width)
		why(l, file, "%s", "0 (unknown)");
}

/* Fill cur_* and max_* of l from sysfs, addr set; nothing judged. */
static void read_link(struct pn_pcie_link *l)
{
	l->why[0] = 0;
	read_speed(l, "current_link_speed", &l->cur_mts);
	read_width(l, "current_link_width", &l->cur_width);
	read_speed(l, "max_link_speed", &l->max_mts);
	read_width(l, "max_link_width", &l->max_width);
}

static int check_addr(const char *addr)
{
	if (!is_pci_addr(addr, strlen(addr)))
		return pn_err(-EINVAL, "'%s' is not a PCI address (like 0000:18:00.0)", addr);
	if (!pn_sys_exists("/sys/bus/pci/devices/%s", addr))
		return pn_err(-ENODEV, "no PCI device %s under %s", addr, pn_sysfs_root());
	return 0;
}

int pn_pcie_read(const char *addr, struct pn_pcie_link *l)
{
	int ret = check_addr(addr);

	memset(l, 0, sizeof(*l));
	if (ret)
		return ret;
	snprintf(l->addr, sizeof(l->addr), "%s", addr);
	read_link(l);
	pn_pcie_judge(l);
	return 0;
}

/* The link below upper (NULL: none known) whose lower end is addr. */
static void path_link(struct pn_pcie_link *l, const char *addr, const char *upper)
{
	struct pn_pcie_link up;

	memset(l, 0, sizeof(*l));
	snprintf(l->addr, sizeof(l->addr), "%s", addr);
	read_link(l);
	if (upper) {
		memset(&up, 0, sizeof(up));
		snprintf(up.addr, sizeof(up.addr), "%s", upper);
		read_link(&up);
		/* what the link can do is what both ends can do */
		if (up.max_mts && up.max_mts < l->max_mts)
			l->max_mts = up.max_mts;
		if (up.max_width > 0 && up.max_width < l->max_width)
			l->max_width = up.max_width;
	}
	pn_pcie_judge(l);
}

int pn_pcie_chain(const char *addr, char (*chain)[PN_PCIE_ADDR_LEN])
{
	char real[4096], *s, *save = NULL;
	int ret = check_addr(addr), n = 0;
	ssize_t len;

	if (ret)
		return ret;
	len = pn_sys_readlink(real, sizeof(real), "/sys/bus/pci/devices/%s", addr);
	if (len >= 0) {
		for (s = strtok_r(real, "/", &save); s; s = strtok_r(NULL, "/", &save)) {
			if (!is_pci_addr(s, strlen(s)))
				continue;
			if (n == PN_PCIE_MAX_DEPTH)
				return pn_err(-E2BIG, "PCI path of %s deeper than %d functions", addr,
					      PN_PCIE_MAX_DEPTH);
			snprintf(chain[n++], PN_PCIE_ADDR_LEN, "%s", s);
		}
	}
	/* not a link (a captured tree may hold a plain directory), or not ending at addr */
	if (!n || strcmp(chain[n - 1], addr)) {
		snprintf(chain[0], PN_PCIE_ADDR_LEN, "%s", addr);
		n = 1;
	}
	return n;
}

int pn_pcie_path(const char *addr, struct pn_pcie_path *p)
{
	char comp[PN_PCIE_MAX_DEPTH][PN_PCIE_ADDR_LEN];
	int n, i, k;

	memset(p, 0, sizeof(*p));
	p->weakest = -1;
	n = pn_pcie_chain(addr, comp);
	if (n < 0)
		return n;
	/*
	 * From the device up, functions alternate: upstream-facing port (the
	 * device, a switch upstream port), then the downstream-facing port
	 * above it (switch downstream port, root port).  Pair them.
	 */
	k = (n + 1) / 2;
	p->nlinks = k;
	for (i = n - 1; i >= 0; i -= 2)
		path_link(&p->link[--k], comp[i], i ? comp[i - 1] : NULL);
	for (i = p->nlinks - 1; i >= 0; i--)
		if (p->link[i].cur_gbs > 0 &&
		    (p->weakest < 0 || p->link[i].cur_gbs < p->link[p->weakest].cur_gbs))
			p->weakest = i;
	p->throttled = p->weakest >= 0 && p->weakest != p->nlinks - 1 &&
		       p->link[p->nlinks - 1].cur_gbs > 0 &&
		       p->link[p->weakest].cur_gbs < p->link[p->nlinks - 1].cur_gbs;
	return 0;
}

/* ------------------------------------------------------------ ACS */

static unsigned le16(const uint8_t *b)
{
	return (unsigned)b[0] | (unsigned)b[1] << 8;
}

int pn_pcie_ext_cap(const unsigned char *cfg, size_t len, unsigned id)
{
	uint32_t seen[(4096 - 0x100) / 4 / 32] = { 0 };
	unsigned off = 0x100, prev = 0;

	if (len > 4096)
		len = 4096;
	for (;;) {
		unsigned d = (off - 0x100) / 4;
		uint32_t h;

		if (off + 4 > len)
			return pn_err(-EBADMSG, "the capability at 0x%03x points past its end, 0x%03zx",
				      prev, len);
		if (seen[d / 32] >> (d % 32) & 1)
			return pn_err(-EBADMSG, "the capability list loops (0x%03x points back to "
				      "0x%03x)", prev, off);
		seen[d / 32] |= 1u << (d % 32);
		h = (uint32_t)le16(cfg + off) | (uint32_t)le16(cfg + off + 2) << 16;
		if (h == 0xffffffffu)
			return pn_err(-EBADMSG, "the capability header at 0x%03x reads all ones (the "
				      "function does not answer)", off);
		/* an empty list is one header of zeros at 0x100; elsewhere a zero header is
		 * no capability at all */
		if (h == 0 && off == 0x100)
			return -ENOENT;
		if (h == 0)
			return pn_err(-EBADMSG, "0x%03x points to an empty capability header at 0x%03x",
				      prev, off);
		if ((h & 0xffff) == id)
			return (int)off;
		prev = off;
		off = (h >> 20) & 0xffc;	/* the low two bits are reserved, as Linux reads it */
		if (!off)
			return -ENOENT;
		if (off < 0x100)
			return pn_err(-EBADMSG, "the capability at 0x%03x points to 0x%03x, outside the "
				      "extended space", prev, off);
	}
}

int pn_pcie_parse_acs(const unsigned char *cfg, size_t len, struct pn_pcie_acs *a)
{
	int cap;

	memset(a, 0, sizeof(*a));
	if (len <= 0x100)
		return -ENODATA;
	/* a function that does not answer reads all ones, vendor ID included */
	if (cfg[0] == 0xff && cfg[1] == 0xff)
		return pn_err(-EBADMSG, "it reads all ones (vendor 0xffff): the function does not "
			      "answer (a dead link or switch port)");
	/* no vendor is 0x0000: a file of zeros is no function's config space */
	if (!cfg[0] && !cfg[1])
		return pn_err(-EBADMSG, "vendor 0x0000: not a function's config space (zeros)");
	/* the kernel gives 256 bytes or all 4096 of a PCIe function: else it was cut */
	if (len != 4096)
		return pn_err(-EBADMSG, "%zu bytes, not 4096: cut short", len);
	cap = pn_pcie_ext_cap(cfg, len, PN_PCIE_EXT_CAP_ACS);
	if (cap == -ENOENT)
		return 0;
	if (cap < 0)
		return cap;
	if ((size_t)cap + 8 > len)
		return pn_err(-EBADMSG, "the ACS capability at 0x%03x runs past the end", cap);
	a->present = 1;
	a->cap = le16(cfg + cap + 4);
	a->ctrl = le16(cfg + cap + 6);
	return 0;
}

int pn_pcie_read_acs(const char *addr, struct pn_pcie_acs *a)
{
	uint8_t cfg[4097];
	int ret = check_addr(addr), n;

	memset(a, 0, sizeof(*a));
	if (ret)
		return ret;
	/* one byte more than a config space: a longer file is no config space */
	n = pn_sys_read_bin(cfg, sizeof(cfg), "/sys/bus/pci/devices/%s/config", addr);
	if (n < 0)
		return pn_err(n, "%s/config: %s", addr, strerror(-n));
	if (n > 4096)
		return pn_err(-EBADMSG, "/sys/bus/pci/devices/%s/config is longer than 4096 bytes: no "
			      "config space", addr);
	ret = pn_pcie_parse_acs(cfg, (size_t)n, a);
	if (ret == -ENODATA)
		return pn_err(ret, "%s/config is %d bytes, without the extended space (only root "
			      "reads it)", addr, n);
	if (ret)
		return pn_err_ctx(ret, "/sys/bus/pci/devices/%s/config is no config space to trust",
				  addr);
	return 0;
}

void pn_pcie_acs_bits(unsigned ctrl, char *buf, size_t len)
{
	static const char *const names[] = { "SV", "TB", "RR", "CR", "UF", "EC", "DT" };
	size_t i, l = 0;

	buf[0] = 0;
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		int w;

		if (!(ctrl & (1u << i)) || l >= len)
			continue;
		w = snprintf(buf + l, len - l, "%s%s", l ? "," : "", names[i]);
		if (w > 0)
			l += (size_t)w;
	}
	if (!l)
		snprintf(buf, len, "none");
}
