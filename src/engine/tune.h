/* SPDX-License-Identifier: MIT */
/*
 * The tuning table: the algorithm pn_allreduce (coll.h) runs for
 * (nranks, nnodes, bytes) when asked for auto, and the one the other
 * collectives (collrun.h) run for (collective, nranks, nnodes, bytes).
 */
#ifndef PENNY_TUNE_H
#define PENNY_TUNE_H

#include "engine/collkind.h"
#include "engine/sched.h"

#include <stddef.h>
#include <stdio.h>

/* The calls an allreduce line holds for: a line without a mode, both
 * (files written before in place had lines of its own still load). */
enum pn_tune_mode { PN_TUNE_BOTH = 0, PN_TUNE_OOP, PN_TUNE_IP };

struct pn_tune_entry {
	int nranks, nnodes;
	enum pn_tune_mode mode;		/* allreduce's; PN_TUNE_BOTH for the others */
	size_t max_bytes;
	enum pn_algo algo;		/* allreduce's */
	enum pn_coll_kind kind;		/* PN_COLL_ALLREDUCE for a line without one */
	enum pn_calgo calgo;		/* the other collectives' */
};

/* A table read from a tuning file (the command reads PENNY_TUNE_FILE and
 * hands it down); zeroed: empty. */
struct pn_tune {
	struct pn_tune_entry *tab;
	int n;
};

/* Tuning: the algorithm for (nranks, nnodes, bytes); t's lines "nranks
 * nnodes max_bytes algo [mode]" override the built-in table (t NULL: built
 * in): a line of the call's mode (in-place when inplace, out-of-place
 * otherwise) or without one; the smallest max_bytes at or above bytes wins,
 * at equal max_bytes the line of the mode.  direct: one node, every peer
 * over shm, registered buffers; inplace: sendbuf == recvbuf (the built-in
 * table differs there too, README: Tuning). */
enum pn_algo pn_tune_pick(const struct pn_tune *t, int nranks, int nnodes, size_t bytes,
			  int direct, int inplace);
/*
 * The built-in table's sizes with registered buffers, measured with every
 * input rewritten before each call (README: Tuning).  Two ranks: out of
 * place the ring up to PN_TUNE_RING_2_OOP_MAX, then two-shot; in place
 * one-shot (over the FIFOs there) up to PN_TUNE_ONE_SHOT_2_IP_MAX, then
 * two-shot up to PN_TUNE_TWO_SHOT_2_IP_MAX, then the ring.  More ranks:
 * one-shot up to PN_TUNE_ONE_SHOT_MAX (in place it reduces into a scratch
 * buffer of the whole size), then two-shot.
 */
#define PN_TUNE_RING_2_OOP_MAX (32u << 10)
#define PN_TUNE_ONE_SHOT_2_IP_MAX (64u << 10)
#define PN_TUNE_TWO_SHOT_2_IP_MAX (8u << 20)
#define PN_TUNE_ONE_SHOT_MAX (64u << 10)
/* Read a tuning file (pn_file_read: a regular file, bounded) into t, whose
 * table it replaces on success; t is unchanged on failure. */
int pn_tune_load(struct pn_tune *t, const char *path);
void pn_tune_release(struct pn_tune *t);

/*
 * The other collectives: t's lines "collective nranks nnodes max_bytes
 * algorithm" for k first; then the built-in rule (README: Tuning).  bytes
 * is nccl-tests' size (pn_coll_algbw_bytes); direct: one node, every peer
 * over shm, registered buffers.
 */
enum pn_calgo pn_tune_pick_coll(const struct pn_tune *t, enum pn_coll_kind k, int nranks,
				int nnodes, size_t bytes, int direct);
/* The built-in rule's largest sizes (bytes, nccl-tests' size) for one-shot
 * over the FIFOs, and the largest alltoall block for bruck. */
#define PN_TUNE_COLL_ONE_SHOT_MAX (16u << 10)
#define PN_TUNE_BRUCK_BLOCK_MAX 256u

#define PN_TUNE_MAX_LINE 255
#define PN_TUNE_MAX_ENTRIES 4096
/*
 * Parse the text of a tuning file (a pure function): lines "[collective]
 * nranks nnodes max_bytes algorithm [mode]" (mode, allreduce's only:
 * in-place or out-of-place), blank lines and '#' comments; at most
 * PN_TUNE_MAX_LINE bytes a line and PN_TUNE_MAX_ENTRIES entries.  *tab is
 * malloc'ed (NULL when there are no entries).  0, or -EINVAL ("name:line:
 * ...") / -ENOMEM with a message.
 */
int pn_tune_parse(const char *text, size_t len, const char *name, struct pn_tune_entry **tab,
		  int *n);
/* Write the table to f (an output file the caller opened, src/base/ofile.h);
 * name is f's path for messages.  oop[i] and ip[i] are the picks out of
 * place and in place at bytes[i] (ip NULL: oop holds for both): one line
 * without a mode where they agree, else one line per mode.  Only lines
 * pn_tune_load accepts: an algorithm outside the runnable ones (auto) is
 * -EINVAL and writes nothing. */
int pn_tune_save(FILE *f, const char *name, int nranks, int nnodes, const size_t *bytes,
		 const enum pn_algo *oop, const enum pn_algo *ip, int n);

#endif
