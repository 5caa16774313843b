/* SPDX-License-Identifier: MIT */
/*
 * The baseline file of `penny check` (check_base.c).
 */
#ifndef PENNY_CHECK_BASE_H
#define PENNY_CHECK_BASE_H

#include <stddef.h>
#include <stdio.h>

struct pn_check_baseline;
struct pn_verdict_list;

/*
 * The baseline (check_base.c): --save-baseline writes the numeric results
 * of a run (check, target, measured, unit) as one JSON document; --baseline
 * reads it back (bounded, strict JSON).  A figure is found by check and
 * target, whatever node it was saved on; a job's baseline holds one a
 * node, and the lowest is taken.
 */
int pn_check_baseline_load(struct pn_check_baseline **b, const char *path);
/* The same from buf[0, len) (name: for messages); *b NULL on an error. */
int pn_check_baseline_parse(struct pn_check_baseline **b, const char *buf, size_t len,
			    const char *name);
void pn_check_baseline_free(struct pn_check_baseline *b);
/* The saved measurement of check/target (the lowest of a job's nodes'): 0 (*v
 * set), or -ENOENT (no message). */
int pn_check_baseline_find(const struct pn_check_baseline *b, const char *check,
			   const char *target, double *v);
/* Write l's numeric results; 0 or -EIO. */
int pn_check_baseline_write(FILE *f, const struct pn_verdict_list *l);

#endif
