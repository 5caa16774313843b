/* SPDX-License-Identifier: MIT */
/*
 * The pure parts of the settings check (check_settings.c), for the unit
 * tests: what the kernel writes in the files it reads.
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

/*
 * NCCL's rule for the driver (CUDA's minor version compatibility, which
 * NCCL's install guide defers to): a library built for CUDA MAJOR.x needs
 * a driver of at least the release this gives ("525.60.13" for 12), NULL
 * for a major the table does not know.
 */
const char *pn_settings_driver_min(int cuda_major);

/*
 * Do the versions match?  driver "550.54.15" (may be ""), nccl NCCL's
 * version line "2.21.5+cuda12.4" (may be ""), cuda_api the CUDA driver
 * API version the driver reports (12040; 0 unknown).  1 match, 0 not
 * (why says which rule), -ENOENT too little known (why says what).  With
 * the driver's release unknown the API version alone is judged (NCCL's
 * CUDA major no newer than it).
 */
int pn_settings_versions(const char *driver, const char *nccl, int cuda_api, char *why,
			 size_t len);

/* Of a nodes_config.cfg text: the lines naming a node (not empty, not a
 * comment). */
int pn_settings_imex_nodes(const char *text, size_t len);

/*
 * Can user uid (in group gid, or in its supplementary groups: ingroup)
 * read and write a file of mode, owner fuid, group fgid?  The bits of the
 * class the user falls in, as the kernel picks them (owner, group,
 * others); root's override is not counted.  1 or 0.
 */
int pn_settings_rw_access(unsigned mode, unsigned fuid, unsigned fgid, unsigned uid,
			  int ingroup);

/* -------- shared by check_settings.c and check_platform.c (not pure) */
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
/* check_settings.c: the node's part of the settings check (ACS, IOMMU,
 * GPUDirect RDMA, memlock, /dev/shm); pn_check_settings (check_platform.c)
 * runs it, then the platform's. */
int pn_settings_node(struct pn_check *c);
/* check_platform.c: driver, NVSwitch fabric manager, IMEX, RoCE GIDs and
 * ECN, hidden PCI paths. */
int pn_settings_platform(struct pn_check *c);
/* check_p2p.c: every NVIDIA GPU's NVLinks up and down, every pair's P2P. */
int pn_settings_nvlink_p2p(struct pn_check *c);
/* The versions row of check (the driver's, NCCL's, the CUDA driver API's). */
int pn_settings_versions_row(struct pn_check *c, const char *check, const char *nccl,
			     int cuda_api);

#endif
