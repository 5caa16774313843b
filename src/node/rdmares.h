/* SPDX-License-Identifier: MIT */
/*
 * Who owns the QPs of each RDMA device, for `penny top --processes`: the
 * RDMA netlink resource interface (NETLINK_RDMA, the source of `rdma
 * resource show qp`): a RDMA_NLDEV_CMD_GET dump names the devices, one
 * RDMA_NLDEV_CMD_RES_QP_GET dump per device lists its QPs with the pid that
 * created each (or the kernel module's name).  QPs are grouped per device
 * and owner; the command name is /proc/PID/comm read through the sysfs root.
 *
 * The parser is bounded and separate from the socket (fuzzed and unit
 * tested).  Under a replayed sysfs root the messages come from the tree's
 * file penny/rdma-nldev (the replies as the kernel sent them, concatenated),
 * never from the live kernel.  A kernel that does not allow it (no RDMA
 * netlink, EPERM, no devices) is no error: the view is empty and note says why.
 */
#ifndef PENNY_RDMARES_H
#define PENNY_RDMARES_H

#include <stddef.h>
#include <stdint.h>

#define PN_RDMARES_MAX_DEVS 256
#define PN_RDMARES_MAX_PROCS 4096	/* owner rows kept; the rest counted in dropped */
#define PN_RDMARES_REPLAY "/penny/rdma-nldev"

struct pn_rdmares_proc {
	char dev[64];		/* RDMA device name */
	uint32_t pid;		/* 0: a kernel owner (kern names it) */
	char comm[64];		/* /proc/PID/comm, or the kernel owner's name; "" unknown */
	int kernel;		/* owned by the kernel: no pid */
	int nqps;
	uint32_t types;		/* bit t: a QP of type t (pn_rdmares_type_name) */
};

struct pn_rdmares {
	int n, cap;
	struct pn_rdmares_proc *procs;	/* by device, then pid, in the kernel's order */
	int ndevs;
	struct { uint32_t index; char name[64]; } devs[PN_RDMARES_MAX_DEVS];
	int nqps;		/* QP entries read */
	int dropped;		/* entries past PN_RDMARES_MAX_PROCS owners */
	char note[160];		/* why there is no view ("" when read) */
	/* parser state: the device of the message being read */
	char cur_dev[64];
};

/* Read the whole view within timeout seconds.  0 (perhaps with a note), or -ENOMEM. */
int pn_rdmares_read(struct pn_rdmares *r, double timeout);
void pn_rdmares_release(struct pn_rdmares *r);

/*
 * Parse len bytes of netlink messages (one datagram, or a replay file):
 * device lists and QP lists are added to r.  Returns 0 when more are to
 * come, 1 after NLMSG_DONE, the error of an NLMSG_ERROR (-EPERM, ...),
 * -EBADMSG when a length does not fit, -ENOMEM.
 */
int pn_rdmares_parse(struct pn_rdmares *r, const void *buf, size_t len);
/* The pids' command names from /proc/PID/comm (through the sysfs root). */
void pn_rdmares_comms(struct pn_rdmares *r);
/* Types of a mask: "RC,UD", "" none; returns buf. */
const char *pn_rdmares_types(uint32_t types, char *buf, size_t len);
/* Name of QP type bit t: "RC", "UD", ..., "DRIVER" (bit 31), NULL unknown. */
const char *pn_rdmares_type_name(int t);

#endif
