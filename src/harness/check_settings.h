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
 * option: "65536k", "1g", a plain number of bytes) or *bytes 0 when the
 * mount has no size= (tmpfs then takes half the memory); *fstype (len
 * tlen) set either way.  -ENOENT when nothing is mounted at mnt, -EINVAL
 * for a size that is not one.
 */
int pn_settings_mount_size(const char *text, size_t len, const char *mnt, uint64_t *bytes,
			   char *fstype, size_t tlen);

/* "5.15.0-91-generic" -> major 5, minor 15; "535.104.05" -> 535, 104.  0 or -EINVAL. */
int pn_settings_version(const char *s, int *major, int *minor);

/*
 * /proc/driver/nvidia/version: the driver version ("535.104.05") into ver,
 * and whether it is the open kernel module.  0 or -EINVAL.
 */
int pn_settings_nvidia_proc(const char *text, char *ver, size_t vlen, int *open_module);

#endif
