/* SPDX-License-Identifier: MIT */
/* Input files: the one bounded reader, and what a file is for messages. */
#ifndef PENNY_FILE_H
#define PENNY_FILE_H

#include <stddef.h>

/*
 * The one reader of whole input files (plans, topology files, hwloc and NCCL
 * XML, tuning tables): a regular file (symbolic links are followed) of at
 * most PN_READ_MAX bytes, read into a NUL-terminated malloc'ed buffer.
 * FIFOs, devices, sockets and directories are refused without blocking
 * (the open is non-blocking and fstat decides before any read), with one
 * line naming the path; so is a file over the cap ("'F' is larger than
 * 64 MiB").  Returns 0 or -errno with a message.
 */
#define PN_FILE_READ_MAX (64 << 20)
int pn_file_read(const char *path, char **buf, size_t *len);

/* First of all in main: a closed standard input, output or error takes the
 * read end of an empty pipe, so that no file penny opens takes its number
 * (and gets the table or the messages: `penny top --record r >&-` wrote
 * its table into r); reading it gives the end, writing it EBADF. */
void pn_file_hold_std(void);

/* What a file of mode m is, for messages: "a directory", "a symbolic link",
 * "a character device", "a block device", "a FIFO", "a socket", "a regular
 * file" or "a special file". */
const char *pn_file_kind(unsigned int m);

/*
 * A directory penny (maybe root) may create files in: opened without
 * following a link, it must be a real directory owned by the effective uid
 * with none of the mode bits in forbid (077: private; 022: writable by its
 * owner alone).  Returns its fd, or -EPERM/-errno with one line "refusing
 * 'DIR' for WHAT: ..." (want: what it should have been, for that line).
 */
int pn_file_own_dir(const char *dir, unsigned int forbid, const char *what, const char *want);

#endif
