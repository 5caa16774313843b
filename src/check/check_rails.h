/* SPDX-License-Identifier: MIT */
/*
 * The rails check of `penny check` (check_rails.c) and its pure part,
 * exposed for the unit tests: the judgement of every NIC's byte counters
 * against a ring plan.
 */
#ifndef PENNY_CHECK_RAILS_H
#define PENNY_CHECK_RAILS_H

#include <stdint.h>

struct pn_check;

/* The check's entry (check_row.h's rule: results to c->results, 0 also on
 * FAIL or SKIP, a negative errno only when the run cannot go on). */
int pn_check_rails(struct pn_check *c);	/* collective under a launcher */

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
