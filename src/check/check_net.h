/* SPDX-License-Identifier: MIT */
/*
 * What penny check's network checks share (check_net.c: nic-bw,
 * check_rails.c: rails), and their pure parts, exposed for the unit tests:
 * nic-bw's pairing of nodes in rounds, and the rails check's judgement of
 * every NIC's byte counters against a ring plan.
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
 * Returns the count or -ENOMEM.
 */
int pn_checknet_nics(const struct pn_check *c, struct pn_netnic *out, int max);

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

/* One NIC port of the job as the rails check sees it. */
struct pn_rails_nic {
	int node;		/* job node index */
	char name[64];		/* "rxe0/1" */
	int rail;		/* index on its node: NIC<rail> of the topology, or -d order */
	int planned;		/* the plan sends or receives through it */
	int valid;		/* its byte counters were read before and after */
	uint64_t tx, rx;	/* bytes during the planned allreduce */
};

/* An inter-node connection of the plan: sender NIC -> receiver NIC (indices into nics). */
struct pn_rails_hop {
	int from, to;
};

enum pn_rails_why {
	PN_RAILS_OK = 0,
	PN_RAILS_UNREAD,	/* counters not readable: SKIP */
	PN_RAILS_IDLE,		/* planned, carried nothing beyond the noise */
	PN_RAILS_UNPLANNED,	/* not planned, carried more than the noise */
	PN_RAILS_CROSSED,	/* its rail lost bytes to another rail, and it sent them */
};

struct pn_rails_judged {
	int why;		/* enum pn_rails_why */
	int peer;		/* CROSSED through a planned hop: the receiving NIC, else -1 */
	uint64_t lost;		/* CROSSED: bytes sent across (see pn_rails_judge) */
};

/*
 * Judge every NIC: a planned NIC that carried (tx + rx) no more than noise
 * bytes is IDLE; an unplanned one that carried more is UNPLANNED.  A NIC
 * that sent more than the noise through a planned hop to a NIC of another
 * rail is CROSSED (peer named, lost = what it sent).  Job-wide, the bytes a
 * rail's NICs sent must be received by NICs of that rail: a rail whose NICs
 * sent more than they received, beyond noise per NIC of the rail plus 2 %
 * of what it sent (retransmits), lost bytes to another rail; when no
 * crossing hop explains it, every NIC of the rail that sent more than the
 * noise is CROSSED (peer -1, lost = the rail's loss: cabling, routing).
 * CROSSED wins over the others.  Rails < 0 (unknown) are not judged for
 * crossing.  out has n entries.
 */
void pn_rails_judge(const struct pn_rails_nic *nics, int n, const struct pn_rails_hop *hops,
		    int nhops, uint64_t noise, struct pn_rails_judged *out);

#endif
