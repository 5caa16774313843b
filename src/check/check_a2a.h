/* SPDX-License-Identifier: MIT */
/*
 * The alltoall check of `penny check` (check_a2a.c): an all-to-all across
 * the job, then every pair of nodes exchanging alone (pn_sendrecv) in the
 * rounds of a round-robin tournament, each exchange timed by the timing
 * rule (base/timing.h); the slowest pair is named with the link it crossed:
 * one rail's leaf, or the spine between two rails.  The pure parts here
 * are unit-tested (tests/unit/t_check_a2a.c).
 */
#ifndef PENNY_CHECK_A2A_H
#define PENNY_CHECK_A2A_H

struct pn_check;

#include <stddef.h>

/*
 * The tournament (circle method): rounds of nnodes nodes, nnodes - 1 when
 * even, nnodes when odd (each round one node sits out), 0 below 2; every
 * round pairs the nodes as a perfect matching and every two nodes meet in
 * exactly one round.  pn_a2a_partner: node's partner in round, -1 when it
 * sits out or the arguments are out of range.
 */
int pn_a2a_rounds(int nnodes);
int pn_a2a_partner(int nnodes, int round, int node);

/*
 * The ranks of two nodes in a round: shifts max(lme, lpeer) sub-rounds; in
 * shift s, local rank i of node me (of lme ranks) meets the partner's local
 * rank (i + s) mod L when me < partner, (i - s) mod L otherwise, so every
 * rank of one node meets every rank of the other exactly once and each
 * shift is a perfect matching.  Returns that local rank, -1 when there is
 * none (unequal nodes) or the arguments are out of range.
 */
int pn_a2a_shifts(int lme, int lpeer);
int pn_a2a_lane(int me, int partner, int i, int s, int lme, int lpeer);

/* The link between two ranks' NICs by their rails (-1 unknown). */
enum pn_a2a_link {
	PN_A2A_NET = 0,		/* a rail unknown: "the network" */
	PN_A2A_LEAF,		/* the same rail: that rail's leaf switch */
	PN_A2A_SPINE,		/* different rails: through the spine */
	PN_A2A_NLINKS
};
int pn_a2a_link(int rail_a, int rail_b);
/* "rail 0 (leaf)", "spine (rail 0 to rail 1)", "network (rails unknown)" */
void pn_a2a_link_name(int rail_a, int rail_b, char *out, size_t len);

/* One measured exchange of two ranks of two nodes. */
struct pn_a2a_lane {
	int rank, node, rail;
	int peer, peer_node, peer_rail;
	double gbps;		/* each way, Gb/s of the median block */
	double bar;		/* what it must reach (pn_a2a_bar), <= 0: nothing */
};

/*
 * The slowest lane of l[0, n) with node (either end) when node >= 0, else
 * of all: the lowest gbps / bar among lanes with a bar, else the lowest
 * gbps.  Returns its index, -1 when there is none.
 */
int pn_a2a_slowest(const struct pn_a2a_lane *l, int n, int node);

/*
 * The topology's expectation of an exchange over verbs: the slower of the
 * two NICs' port rates (Gb/s) times eff, its source in src ("topology:
 * mlx5_0/1 400 Gb/s x 50%"); 0 over another transport or with a rate
 * unknown (tcp's rate is not its NIC's).
 */
double pn_a2a_topo_expect(const char *nic_a, double rate_a, const char *nic_b, double rate_b,
			  int verbs, double eff, char *src, size_t len);

/*
 * The bar of a lane: the larger of exp (config, baseline or topology, with
 * its source esrc; <= 0: none) and median x (1 - margin), the job's median
 * of the npairs lanes of its link kind (median <= 0 or npairs < 2: none);
 * the winner's source in src ("job median 8.1 Gb/s of 12 pairs x 50%").
 * Returns 0 when neither.
 */
double pn_a2a_bar(double exp, const char *esrc, double median, int npairs, double margin,
		  char *src, size_t len);

/* The check's entry (check_row.h's rule: results to c->results, 0 also on
 * FAIL or SKIP, a negative errno only when the run cannot go on). */
int pn_check_alltoall(struct pn_check *c);	/* collective, across nodes */

#endif
