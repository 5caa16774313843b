/* SPDX-License-Identifier: MIT */
/*
 * PCIe link health of one PCI function (a GPU, a NIC) and of the links on
 * its path from the root port, as the kernel reports them in sysfs
 * (current_link_{speed,width} against max_link_{speed,width}), read through
 * the sysfs root (node/sysfs.h).  The engine of the `pcie` check: it judges,
 * never prints.
 *
 * Caveat for callers: many GPUs lower their link to 2.5 GT/s when idle to
 * save power, so a downtrained speed on an idle GPU may be normal; the
 * check decides how to treat it (load the GPU first, or warn only).
 */
#ifndef PENNY_PCIE_H
#define PENNY_PCIE_H

#include <stddef.h>

#define PN_PCIE_ADDR_LEN 24	/* "0000:18:00.0" and wider (8-digit) domains */
#define PN_PCIE_MAX_DEPTH 16	/* PCI functions on one path, root port to device */

enum pn_pcie_verdict {
	PN_PCIE_OK,
	PN_PCIE_DOWN_SPEED,	/* fewer GT/s than both ends can do */
	PN_PCIE_DOWN_WIDTH,	/* fewer lanes than both ends can do */
	PN_PCIE_DOWN_BOTH,
	PN_PCIE_UNKNOWN,	/* a file missing, unreadable, junk or "Unknown": never ok */
};

struct pn_pcie_link {
	char addr[PN_PCIE_ADDR_LEN];	/* the function the numbers were read from */
	unsigned cur_mts, max_mts;	/* transfer rate in MT/s (2500 ... 64000); 0 unknown */
	int cur_width, max_width;	/* lanes; 0 unknown */
	int cur_gen, max_gen;		/* PCIe generation 1 ... 6; 0 unknown */
	double cur_gbs, max_gbs;	/* usable one-direction GB/s (10^9 B/s); 0 unknown */
	enum pn_pcie_verdict verdict;
	char why[96];			/* for PN_PCIE_UNKNOWN: which file and why; else "" */
};

/*
 * The links on the path from the root port down to a device.  A link has
 * two ends: a downstream-facing port above (root port or switch downstream
 * port) and an upstream-facing port below (switch upstream port or the
 * device); it is named by its lower end (the switch upstream port names the
 * switch's uplink).  Its max is the lower of both ends' max, so a Gen5 card
 * in a Gen4 slot is ok at Gen4; its current is what the lower end reports.
 */
struct pn_pcie_path {
	struct pn_pcie_link link[PN_PCIE_MAX_DEPTH / 2 + 1];	/* root side first, the device's last */
	int nlinks;
	int weakest;		/* index of the link with the least current bandwidth (ties: nearest
				 * the device); -1 when no link's bandwidth is known */
	int throttled;		/* the weakest link is not the device's own and has less
				 * current bandwidth than it: the path limits the device */
};

/*
 * Parsers of what the kernel writes (white space stripped).  Speed:
 * "2.5 GT/s", "5.0 GT/s" ... "64.0 GT/s" (older kernels "5 GT/s", "8 GT/s";
 * newer ones add " PCIe"), or "Unknown"/"Unknown speed" (*mts = 0).  Width: a
 * plain decimal 0 ... 32 (0: unknown).  0, or -EINVAL for anything else.
 */
int pn_pcie_parse_speed(const char *s, unsigned *mts);
int pn_pcie_parse_width(const char *s, int *width);

/* Generation of a rate (1 ... 6), 0 when it is not a PCIe rate. */
int pn_pcie_gen(unsigned mts);
/* Usable one-direction GB/s of width lanes at mts after line encoding; 0 when unknown. */
double pn_pcie_gbs(unsigned mts, int width);
/* Judge a link whose cur_* and max_* are filled in (fills gen, gbs, verdict). */
void pn_pcie_judge(struct pn_pcie_link *l);
/* "ok", "downtrained speed", "downtrained width", "downtrained speed and width", "unknown". */
const char *pn_pcie_verdict_name(enum pn_pcie_verdict v);

/*
 * Read and judge the link of the PCI function addr ("0000:18:00.0") against
 * its own max only.  Files that are missing or unreadable make the verdict
 * PN_PCIE_UNKNOWN (0 is returned); -EINVAL for a malformed address, -ENODEV
 * when there is no such device; both with a message.
 */
int pn_pcie_read(const char *addr, struct pn_pcie_link *l);

/*
 * The links from the root port to addr, from the device's real path under
 * /sys/devices (the PCI addresses among its directory names), and the
 * weakest of them.  Errors as pn_pcie_read.
 */
int pn_pcie_path(const char *addr, struct pn_pcie_path *p);

/*
 * The PCI functions from the root port down to addr (root port first, addr
 * last) into chain[PN_PCIE_MAX_DEPTH]: how many, or a negative errno as
 * pn_pcie_path.  Just addr where its sysfs entry is not a link.
 */
int pn_pcie_chain(const char *addr, char (*chain)[PN_PCIE_ADDR_LEN]);

/*
 * PCIe Access Control Services (ACS extended capability, ID 0x000D): its
 * control register at cap + 6.  Set on a switch's downstream port, P2P
 * Request Redirect, Completion Redirect and Upstream Forwarding send
 * peer-to-peer traffic (GPU to GPU, GPU to NIC: GPUDirect) up to the root
 * complex instead of across the switch.
 */
#define PN_PCIE_EXT_CAP_ACS 0x000d
#define PN_ACS_RR (1u << 2)	/* P2P Request Redirect */
#define PN_ACS_CR (1u << 3)	/* P2P Completion Redirect */
#define PN_ACS_UF (1u << 4)	/* Upstream Forwarding */
#define PN_ACS_REDIRECT (PN_ACS_RR | PN_ACS_CR | PN_ACS_UF)

struct pn_pcie_acs {
	int present;		/* the function has the ACS capability */
	unsigned cap, ctrl;	/* its capability and control registers */
};

/*
 * Offset of extended capability id in config space cfg[0, len) (the list
 * from 0x100), -ENOENT when the list ends without it, -EBADMSG with a
 * message when the list is no list: it loops, points below 0x100 or past
 * len, or reaches a header of all ones or (past 0x100) of zeros.
 */
int pn_pcie_ext_cap(const unsigned char *cfg, size_t len, unsigned id);
/*
 * ACS of a config space dump: 0 (a->present 0 without one); -ENODATA when
 * len is 256 bytes or less (no extended space: an unprivileged read);
 * -EBADMSG with a message when it cannot be trusted: all ones (a function
 * that does not answer), not 4096 bytes (cut short), a capability list
 * that is no list (pn_pcie_ext_cap) or an ACS capability past the end.
 */
int pn_pcie_parse_acs(const unsigned char *cfg, size_t len, struct pn_pcie_acs *a);
/* The same from addr's config file through the sysfs root; errors with a
 * message naming the file. */
int pn_pcie_read_acs(const char *addr, struct pn_pcie_acs *a);
/* "RR,CR,UF" of the control bits that are set, "none" without. */
void pn_pcie_acs_bits(unsigned ctrl, char *buf, size_t len);

#endif
