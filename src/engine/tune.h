/* SPDX-License-Identifier: MIT */
/*
 * The tuning table: the algorithm pn_allreduce (coll.h) runs for
 * (nranks, nnodes, bytes) when asked for auto.
 */
#ifndef PENNY_TUNE_H
#define PENNY_TUNE_H

#include "engine/sched.h"

#include <stddef.h>
#include <stdio.h>

struct pn_tune_entry {
	int nranks, nnodes;
	size_t max_bytes;
	enum pn_algo algo;
};

/* A table read from a tuning file (the command reads PENNY_TUNE_FILE and
 * hands it down); zeroed: empty. */
struct pn_tune {
	struct pn_tune_entry *tab;
	int n;
};

/* Tuning: the algorithm for (nranks, nnodes, bytes); t's lines "nranks
 * nnodes max_bytes algo" override the built-in table (t NULL: built in). */
enum pn_algo pn_tune_pick(const struct pn_tune *t, int nranks, int nnodes, size_t bytes,
			  int direct);
/* The built-in table's largest size for one-shot (which reduces in place
 * into a scratch buffer of the whole size). */
#define PN_TUNE_ONE_SHOT_MAX (64u << 10)
/* Read a tuning file (pn_file_read: a regular file, bounded) into t, whose
 * table it replaces on success; t is unchanged on failure. */
int pn_tune_load(struct pn_tune *t, const char *path);
void pn_tune_release(struct pn_tune *t);

#define PN_TUNE_MAX_LINE 255
#define PN_TUNE_MAX_ENTRIES 4096
/*
 * Parse the text of a tuning file (a pure function): lines "nranks nnodes
 * max_bytes algorithm", blank lines and '#' comments; at most
 * PN_TUNE_MAX_LINE bytes a line and PN_TUNE_MAX_ENTRIES entries.  *tab is
 * malloc'ed (NULL when there are no entries).  0, or -EINVAL ("name:line:
 * ...") / -ENOMEM with a message.
 */
int pn_tune_parse(const char *text, size_t len, const char *name, struct pn_tune_entry **tab,
		  int *n);
/* Write the table to f (an output file the caller opened, src/base/ofile.h);
 * name is f's path for messages.  Only lines pn_tune_load accepts: an
 * algorithm outside the runnable ones (auto) is -EINVAL and writes nothing. */
int pn_tune_save(FILE *f, const char *name, int nranks, int nnodes, const size_t *bytes,
		 const enum pn_algo *algo, int n);

#endif
