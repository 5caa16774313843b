/* SPDX-License-Identifier: MIT */
/*
 * The nic-bw check of `penny check` (check_net.c), what the network checks
 * share (check_rails.c uses it too), and its pure part, exposed for the
 * unit tests: nic-bw's pairing of nodes in rounds.
 */
#ifndef PENNY_CHECK_NET_H
#define PENNY_CHECK_NET_H

#include <stddef.h>
#include <stdint.h>

struct pn_check;

/* Shared by check_net.c (nic-bw) and check_rails.c. */
#define PN_NET_MAX 16			/* NIC ports per node the network checks handle */
#define PN_NET_WIRE_MAGIC 0x504e4331u	/* "PNC1": what ranks exchange */

/* One NIC port of this node. */
struct pn_netnic {
	char dev[64];
	int port;
	char name[80];		/* "rxe0/1" */
	int rail;
	int numa;
	int gpu;		/* nearest GPU index, -1 */
	double rate;
	int usable;		/* port ACTIVE */
	char why[160];		/* why not */
};

/* A number key of the config; dflt when it is not in the table.  *set: the config set it. */
double pn_checknet_num(const struct pn_check *c, const char *key, double dflt, int *set);
/*
 * This node's NIC ports in rail order (at most max): the -d list as given,
 * else the topology's NICs (NIC<k> is rail k), else every RDMA device.
 * Returns the count, -EINVAL (a -d entry) or -ENOMEM; *left (may be NULL):
 * how many more there were past max, which the caller must say it did not
 * check.
 */
int pn_checknet_nics(const struct pn_check *c, struct pn_netnic *out, int max, int *left);

/*
 * nic-bw across nodes: round 0 pairs nodes 0-1, 2-3, ...; with an odd node
 * count round 1 pairs the last node with node 0 (everyone else idle).  In a
 * pair both nodes are measured as senders, one after the other.
 * Rounds for nnodes nodes: 0 alone (loopback), 1 even, 2 odd.
 */
int pn_nicbw_rounds(int nnodes);
/* Node's partner in round, -1 idle. */
int pn_nicbw_partner(int nnodes, int round, int node);
/* The round whose measurement of node as the sender is reported (its first). */
int pn_nicbw_report_round(int nnodes, int node);

/* The check's entry (check_row.h's rule: results to c->results, 0 also on
 * FAIL or SKIP, a negative errno only when the run cannot go on). */
int pn_check_nicbw(struct pn_check *c);	/* collective under a launcher */

#endif
