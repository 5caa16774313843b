/* SPDX-License-Identifier: MIT */
/*
 * Output files.  Every file penny writes (top --prom, topo --save,
 * allreduce-test --csv/--plot/--tune-out, ring-plan --nccl-graph, and any
 * later one) is opened here, before the work, and committed after it.
 * penny runs as root: it must never turn /dev/null into a regular file, so
 * nothing but a regular file (or a new name) is ever replaced.
 *
 * What lstat() finds at the name decides (penny(1), OUTPUT FILES):
 *   nothing, or a regular file   a temporary file in the same directory
 *                                (unnamed where the file system allows it,
 *                                else ".NAME.XXXXXX"), renamed over NAME by
 *                                pn_ofile_commit(): readers see the old file
 *                                or the new one, never half of one; a
 *                                replaced file keeps its permission bits
 *                                (and, for root, its owner)
 *   "-", or the same file as standard output or standard error
 *   (/dev/stdout, /dev/stderr, /dev/fd/1, the terminal of stdout ...)
 *                                written in place through that stream
 *                                (standard output refused while --json
 *                                claims it: pn_ofile_claim_stdout)
 *   a symbolic link              refused (-ELOOP): neither replaced nor
 *                                followed; give the target's name
 *   a directory                  refused (-EISDIR)
 *   a device, FIFO or socket     refused (-EINVAL)
 * The check is made again at commit, so a name that became a device or a
 * link in between is refused then.  PN_OFILE_PRIVATE files (secrets, like
 * the rendezvous file) are 0600 whatever they replace.
 */
#ifndef PENNY_OFILE_H
#define PENNY_OFILE_H

#include <stdio.h>

enum {
	PN_OFILE_SYNC = 1u << 0,    /* fsync before the rename (one-shot results) */
	PN_OFILE_PRIVATE = 1u << 1, /* mode 0600, a replaced file's mode too (secrets) */
	/* replaced again within seconds (top --prom): the commit does not make
	 * the file system write the data out first.  ext4 writes a file renamed
	 * over another one out at once (auto_da_alloc): 160 KB of disk I/O a
	 * second for top --prom.  Exchanged with the old file instead
	 * (RENAME_EXCHANGE), which is then removed, so a file replaced before
	 * writeback never reaches the disk; a plain rename where the file
	 * system cannot exchange. */
	PN_OFILE_VOLATILE = 1u << 2,
};

struct pn_ofile;

/* Open PATH for writing; returns 0 or -errno with a one-line message
 * naming PATH.  Nothing at PATH changes until pn_ofile_commit(). */
int pn_ofile_open(struct pn_ofile **of, const char *path, unsigned flags);
/* The stream to write (stdout or stderr for an in-place output). */
FILE *pn_ofile_file(const struct pn_ofile *of);
const char *pn_ofile_path(const struct pn_ofile *of);
/* 1 when the output is standard output or error, written in place. */
int pn_ofile_inplace(const struct pn_ofile *of);
/* Flush (and fsync with PN_OFILE_SYNC), then rename over PATH.  Frees of
 * either way; on an error PATH is left as it was.  Returns 0 or -errno. */
int pn_ofile_commit(struct pn_ofile *of);
/* Drop the temporary file; PATH is left as it was.  NULL is fine. */
void pn_ofile_abort(struct pn_ofile *of);
/* Standard output carries one document, written by WHO (--json): from now
 * on an output file that is standard output ("-", /dev/stdout, its terminal
 * or pipe) is refused (-EINVAL, "... where WHO writes its document"), unless
 * standard output is /dev/null.  NULL gives it back. */
void pn_ofile_claim_stdout(const char *who);
/* Would PATH be written?  pn_ofile_open() then pn_ofile_abort(). */
int pn_ofile_check(const char *path);
/*
 * Open PATH to append to it (top --record): created (0644) when absent,
 * appended to when it is a regular file; "-" or the same file as standard
 * output or error is written in place (a duplicate of that descriptor); a
 * link, directory, device, FIFO or socket is refused as above, never opened
 * (O_NOFOLLOW, O_NONBLOCK, and the descriptor's file checked against what
 * lstat() found).  Returns the descriptor (close-on-exec; O_APPEND for a
 * file) or -errno with a one-line message.
 */
int pn_ofile_append(const char *path);
/* 1 or 2 when PATH is written in place to standard output or error, else 0. */
int pn_ofile_std(const char *path);
/*
 * Do two names reach one file?  The same string, the same standard stream
 * ("-" and /dev/stdout), names that stat() finds to be one file (a hard
 * link), or, where one is not there yet, the same name in the same
 * directory ("./x" and "x").
 */
int pn_ofile_same(const char *a, const char *b);

#endif
