/* SPDX-License-Identifier: MIT */
/*
 * The node's own checks of `penny check` (check_node.c): inventory, pcie
 * and counters, run on the node leader only.
 */
#ifndef PENNY_CHECK_NODE_H
#define PENNY_CHECK_NODE_H

struct pn_check;

/* The check's entry (check_row.h's rule: results to c->results, 0 also on
 * FAIL or SKIP, a negative errno only when the run cannot go on). */
int pn_check_inventory(struct pn_check *c);
int pn_check_pcie(struct pn_check *c);
/* Judged after the others, from the counters sampled around the whole run. */
int pn_check_counters(struct pn_check *c);

#endif
