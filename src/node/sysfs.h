/* SPDX-License-Identifier: MIT */
/*
 * Every /sys and /proc read of penny (and the few /dev and /etc entries the
 * settings check looks at) goes through one root directory
 * (--sysfs-root DIR, PENNY_SYSROOT), like hwloc's HWLOC_FSROOT, so captured
 * trees replay real machines.  Paths are absolute ("/sys/class/...") and are
 * resolved relative to the root; printf-style formats build them.
 *
 * The root is a jail: every open, directory read, link read and existence
 * test below it resolves beneath it, symbolic links included (a relative
 * link from its own directory, an absolute one as if the root were /, ".."
 * never above the root): openat2(RESOLVE_IN_ROOT) where the kernel has it
 * (Linux 5.6), else a walk of one component at a time that does the same.
 * A tree cannot make penny read (and print) a file outside it.
 */
#ifndef PENNY_SYSFS_H
#define PENNY_SYSFS_H

#include <dirent.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#define PN_FMT(a, b) __attribute__((format(printf, a, b)))

/* NULL or "/" selects the live system.  Returns 0 or -errno with a message. */
int pn_sysfs_set_root(const char *dir);
/* The root directory as given ("/" for the live system). */
const char *pn_sysfs_root(void);
int pn_sysfs_is_live(void);
/* Tests: resolve with the component walk even where openat2 works (1), or not (0). */
void pn_sysfs_force_walk(int on);
/* Tests: the next n opens of a path ending in suffix fail with -err (as when
 * the process is out of descriptors); n = 0 ends it. */
void pn_sysfs_fail_opens(const char *suffix, int err, int n);

/*
 * Nothing here blocks: files are opened non-blocking, and only regular files
 * (what sysfs attributes and procfs files are) are opened or read; a FIFO,
 * device or socket in a --sysfs-root tree gives -EINVAL with a message.
 * Reads never go past the caller's buffer.
 */
int pn_sys_open(int flags, const char *fmt, ...) PN_FMT(2, 3);
/* Read a file, strip trailing white space; returns its length or -errno. */
int pn_sys_read(char *buf, size_t len, const char *fmt, ...) PN_FMT(3, 4);
/*
 * Read up to len bytes of a file as they are (binary: PCI config space; or
 * a procfs file longer than one read gives, /proc/mounts): the bytes read,
 * len when the file is longer, or -errno.
 */
int pn_sys_read_bin(void *buf, size_t len, const char *fmt, ...) PN_FMT(3, 4);
/* Read a decimal or 0x-hex unsigned number. */
int pn_sys_u64(uint64_t *v, const char *fmt, ...) PN_FMT(2, 3);
int pn_sys_int(int *v, const char *fmt, ...) PN_FMT(2, 3);
DIR *pn_sys_opendir(const char *fmt, ...) PN_FMT(1, 2);
/* The parsers of pn_sys_u64 and pn_sys_int: the whole value (white space
 * around it allowed) is one decimal, 0x-hex (or 0-octal) number; "12abc",
 * "1 2", "" and "0x" are -EINVAL.  No caller reads a file with units. */
int pn_sys_parse_u64(const char *s, uint64_t *v);
int pn_sys_parse_int(const char *s, int *v);
ssize_t pn_sys_readlink(char *buf, size_t len, const char *fmt, ...) PN_FMT(3, 4);
int pn_sys_exists(const char *fmt, ...) PN_FMT(1, 2);
/* stat(2) of a path (links followed, beneath the root): 0 or -errno.  Opens
 * nothing that could block: a device node's mode and owner are read only. */
int pn_sys_stat(struct stat *st, const char *fmt, ...) PN_FMT(2, 3);

#endif
