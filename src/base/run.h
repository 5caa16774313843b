/* SPDX-License-Identifier: MIT */
/*
 * Another program run to its end, bounded: what a measurement needs when
 * it must start afresh (a library that reads its environment once per
 * process, as NCCL does).  The child gets the caller's environment with
 * some variables added or replaced, /dev/null as stdin and no other file
 * descriptor of the caller but the one it passes (pass_fd, as descriptor
 * 3); it dies with the caller.  Its stdout is kept
 * up to a cap, the last line of its stderr is kept as the reason of a
 * failure, and a child that outlives the deadline is killed.  Nothing is
 * printed.
 */
#ifndef PENNY_RUN_H
#define PENNY_RUN_H

#include <stddef.h>

struct pn_run {
	/* in */
	const char *const *argv;	/* argv[0] is the program's path; NULL-terminated */
	const char *const *env;		/* "NAME=VALUE" to add or replace, "NAME" to remove,
					 * NULL-terminated (NULL: none) */
	double timeout;			/* seconds from the start to the kill (SIGKILL) */
	size_t out_max;			/* stdout past this many bytes: the child is killed */
	int pass_fd;			/* > 2: a descriptor the child gets as its descriptor 3
					 * (0: none) */
	const unsigned char *cpus;	/* the CPUs the child may run on, a bit mask of
					 * cpus_len bytes (bit c of byte c / 8: CPU c);
					 * NULL: the caller's */
	size_t cpus_len;
	/* out */
	char *out;			/* stdout, NUL-terminated, malloc'ed (free it) */
	size_t out_len;
	int status;			/* the exit status, 128 + the signal, -1 not ended */
	char why[256];			/* on a failure: what happened, with stderr's last line */
};

/*
 * Run r->argv to its end.  0 when it exited 0; 1 when it ran and failed
 * (an exit status other than 0, a signal, killed at the timeout or for
 * printing more than out_max bytes: r->why says which, with the last line
 * it wrote to stderr); a negative errno with a message when it could not
 * be started (pipe, fork, memory).  r->out holds what it printed in every
 * case but the last.
 */
int pn_run(struct pn_run *r);
void pn_run_release(struct pn_run *r);

#endif
