/* SPDX-License-Identifier: MIT */
/*
 * The settings check's node part (check_settings.c) and what its platform
 * part (check_platform.h) and NVLink rows (check_p2p.h) share with it; the
 * pure parts for the unit tests: what the kernel writes in the files it
 * reads.
 */
#ifndef PENNY_CHECK_SETTINGS_H
#define PENNY_CHECK_SETTINGS_H

#include <stddef.h>
#include <stdint.h>

/*
 * The soft "Max locked memory" limit of a /proc/<pid>/limits text (len
 * bytes, not NUL-terminated): 0 with *bytes (UINT64_MAX for "unlimited"),
 * -ENOENT without the line, -EINVAL when it is malformed.
 */
int pn_settings_memlock(const char *text, size_t len, uint64_t *bytes);

/*
 * The size of the tmpfs mounted at mnt in a /proc/mounts text (the last
 * mount of mnt wins, as it hides the others): 0 with *bytes (the size=
 * option: "65536k", "1g", a plain number of bytes; UINT64_MAX for size=0,
 * tmpfs's "no limit") or *bytes 0 when the mount has no size= (tmpfs then
 * takes half the memory); *fstype (len tlen) set either way.  -ENOENT when
 * nothing is mounted at mnt, -EINVAL for a size that is not one.  text
 * must be the whole file: a line cut short would be judged as it is.
 */
int pn_settings_mount_size(const char *text, size_t len, const char *mnt, uint64_t *bytes,
			   char *fstype, size_t tlen);

/*
 * MemTotal of a /proc/meminfo text, in bytes: 0, -ENOENT without the line,
 * -EINVAL when it is not "MemTotal: N kB", -ERANGE for a size no machine
 * has (under 1 MiB, over 16 PiB: overflow-checked).
 */
int pn_settings_memtotal(const char *text, size_t len, uint64_t *bytes);

/* "5.15.0-91-generic" -> major 5, minor 15; "535.104.05" -> 535, 104.  0 or -EINVAL. */
int pn_settings_version(const char *s, int *major, int *minor);

/*
 * /proc/driver/nvidia/version: the driver version ("535.104.05") into ver,
 * and whether it is the open kernel module.  0 or -EINVAL.
 */
int pn_settings_nvidia_proc(const char *text, char *ver, size_t vlen, int *open_module);

/* -------- shared with check_platform.c and check_p2p.c (not pure) */
#include "base/verdict.h"
struct pn_check;
struct pn_nic;

/* The NVIDIA driver's version ("" none) and whether it is the open module:
 * /proc/driver/nvidia/version, else /sys/module/nvidia/version. */
void pn_settings_driver(char *ver, size_t len, int *open_module);
/* A result of the settings check (measured, expected may be NULL). */
int pn_settings_add(struct pn_check *c, const char *target, enum pn_verdict v, const char *meas,
		    const char *exp, const char *src, const char *det);
/* The finding of key: FAIL, or PASS when it says "allow" (noted in det). */
enum pn_verdict pn_settings_allowed(const struct pn_check *c, const char *key, char *det,
				    size_t len, char *src, size_t slen);
int pn_settings_selected_nic(const struct pn_check *c, const struct pn_nic *nic);
/* The node's part of the settings check (ACS, IOMMU, GPUDirect RDMA,
 * memlock, /dev/shm); pn_check_settings (check_platform.h) runs it, then
 * the platform's. */
int pn_settings_node(struct pn_check *c);
#endif
