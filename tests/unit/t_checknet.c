/* SPDX-License-Identifier: MIT */
/* The pure parts of penny check's network checks (src/check/check_net.h,
 * check_rails.h):
 * nic-bw's pairing of nodes in rounds, and the rails check's judgement of
 * byte counters (planned, unplanned, crossed). */
#include "unit.h"
#include "check/check_net.h"
#include "check/check_rails.h"

#include <stdio.h>
#include <string.h>

/* Every node is measured as a sender exactly in its report round, paired
 * symmetrically, in at most two rounds, for 1..N nodes. */
TEST(pairing_covers_every_node)
{
	int n, r, k, bad = 0;

	CHECK_EQ_INT(pn_nicbw_rounds(0), 0);
	CHECK_EQ_INT(pn_nicbw_rounds(1), 0);
	CHECK_EQ_INT(pn_nicbw_rounds(2), 1);
	CHECK_EQ_INT(pn_nicbw_rounds(3), 2);
	CHECK_EQ_INT(pn_nicbw_rounds(64), 1);
	CHECK_EQ_INT(pn_nicbw_rounds(65), 2);
	CHECK_EQ_INT(pn_nicbw_partner(1, 0, 0), -1);
	CHECK_EQ_INT(pn_nicbw_report_round(1, 0), -1);
	for (n = 2; n <= 257; n++) {
		for (k = 0; k < n; k++) {
			int rr = pn_nicbw_report_round(n, k);

			if (rr < 0 || pn_nicbw_partner(n, rr, k) < 0)
				bad++;
			for (r = 0; r < pn_nicbw_rounds(n); r++) {
				int p = pn_nicbw_partner(n, r, k);

				if (p >= 0 && (p == k || p >= n || pn_nicbw_partner(n, r, p) != k))
					bad++;
			}
		}
	}
	CHECK_EQ_INT(bad, 0);
	/* out of range asks get no partner */
	CHECK_EQ_INT(pn_nicbw_partner(4, 1, 0), -1);
	CHECK_EQ_INT(pn_nicbw_partner(4, 0, 4), -1);
	CHECK_EQ_INT(pn_nicbw_partner(4, -1, 0), -1);
}

TEST(pairing_odd_and_even)
{
	/* 4 nodes: 0-1, 2-3 in one round */
	CHECK_EQ_INT(pn_nicbw_partner(4, 0, 0), 1);
	CHECK_EQ_INT(pn_nicbw_partner(4, 0, 3), 2);
	/* 5 nodes: 0-1, 2-3, then 4-0; node 4 reports round 1, node 0 round 0 */
	CHECK_EQ_INT(pn_nicbw_partner(5, 0, 4), -1);
	CHECK_EQ_INT(pn_nicbw_partner(5, 1, 4), 0);
	CHECK_EQ_INT(pn_nicbw_partner(5, 1, 0), 4);
	CHECK_EQ_INT(pn_nicbw_partner(5, 1, 2), -1);
	CHECK_EQ_INT(pn_nicbw_report_round(5, 4), 1);
	CHECK_EQ_INT(pn_nicbw_report_round(5, 0), 0);
	/* 3 nodes: 0-1, then 2-0 */
	CHECK_EQ_INT(pn_nicbw_partner(3, 1, 2), 0);
	CHECK_EQ_INT(pn_nicbw_report_round(3, 2), 1);
}

static void nic(struct pn_rails_nic *x, int node, const char *name, int rail, int planned,
		uint64_t tx, uint64_t rx)
{
	memset(x, 0, sizeof(*x));
	x->node = node;
	snprintf(x->name, sizeof(x->name), "%s", name);
	x->rail = rail;
	x->planned = planned;
	x->valid = 1;
	x->tx = tx;
	x->rx = rx;
}

/* The lab's two nodes x two rails: a (rxe0 rail 0, rxe2 rail 1), b (rxe1, rxe3). */
static void lab(struct pn_rails_nic *n, uint64_t t0, uint64_t r0, uint64_t t2, uint64_t r2,
		uint64_t t1, uint64_t r1, uint64_t t3, uint64_t r3)
{
	nic(&n[0], 0, "rxe0/1", 0, 1, t0, r0);
	nic(&n[1], 0, "rxe2/1", 1, 1, t2, r2);
	nic(&n[2], 1, "rxe1/1", 0, 1, t1, r1);
	nic(&n[3], 1, "rxe3/1", 1, 1, t3, r3);
}

TEST(rails_all_good)
{
	struct pn_rails_nic n[4];
	struct pn_rails_hop h[4] = { { 0, 2 }, { 2, 0 }, { 1, 3 }, { 3, 1 } };
	struct pn_rails_judged j[4];
	int i;

	/* each rail's ends mirror each other (acks included), a little background */
	lab(n, 100000000, 90000000, 80000000, 70000000, 90000100, 100000000, 70000000, 80000200);
	pn_rails_judge(n, 4, h, 4, 1 << 20, j);
	for (i = 0; i < 4; i++)
		CHECK_EQ_INT(j[i].why, PN_RAILS_OK);
}

TEST(rails_planned_idle_and_unplanned)
{
	struct pn_rails_nic n[5];
	struct pn_rails_hop h[2] = { { 0, 2 }, { 2, 0 } };
	struct pn_rails_judged j[5];

	/* rail 1 planned on both but idle; an unplanned extra NIC on a */
	lab(n, 5000000, 5000000, 100, 0, 5000000, 5000000, 0, 0);
	nic(&n[4], 0, "mlx5_9/1", 2, 0, 3 << 20, 0);
	pn_rails_judge(n, 5, h, 2, 1 << 20, j);
	CHECK_EQ_INT(j[0].why, PN_RAILS_OK);
	CHECK_EQ_INT(j[1].why, PN_RAILS_IDLE);
	CHECK_EQ_INT(j[3].why, PN_RAILS_IDLE);
	/* 3 MiB sent by rail 2's only NIC and received by none: crossed wins */
	CHECK_EQ_INT(j[4].why, PN_RAILS_CROSSED);
	CHECK_EQ_INT(j[4].peer, -1);
	/* unplanned below the noise is fine, above it fails */
	nic(&n[4], 0, "mlx5_9/1", 2, 0, 1 << 19, 1 << 19);
	pn_rails_judge(n, 5, h, 2, 1 << 20, j);
	CHECK_EQ_INT(j[4].why, PN_RAILS_OK);
	nic(&n[4], 0, "mlx5_9/1", 2, 0, 1 << 20, 1 << 20);
	pn_rails_judge(n, 5, h, 2, 1 << 20, j);
	CHECK_EQ_INT(j[4].why, PN_RAILS_UNPLANNED);
	/* counters that could not be read: neither pass nor fail */
	n[1].valid = 0;
	pn_rails_judge(n, 5, h, 2, 1 << 20, j);
	CHECK_EQ_INT(j[1].why, PN_RAILS_UNREAD);
}

TEST(rails_crossed_by_a_planned_hop)
{
	struct pn_rails_nic n[4];
	/* a's rxe0 (rail 0) sends to b's rxe3 (rail 1): the crossed hop */
	struct pn_rails_hop h[4] = { { 0, 3 }, { 2, 0 }, { 1, 3 }, { 3, 1 } };
	struct pn_rails_judged j[4];

	/* rxe0 sent 50 MB to rxe3 beyond the mirrored traffic; acks came back on rail 0 */
	lab(n, 100000000, 52000000, 40000000, 48000000, 50000000, 50000000, 48000000, 88000000);
	pn_rails_judge(n, 4, h, 4, 1 << 20, j);
	CHECK_EQ_INT(j[0].why, PN_RAILS_CROSSED);
	CHECK_EQ_INT(j[0].peer, 3);
	CHECK(j[0].lost == 100000000);
	CHECK_EQ_INT(j[1].why, PN_RAILS_OK);
	CHECK_EQ_INT(j[2].why, PN_RAILS_OK);
	CHECK_EQ_INT(j[3].why, PN_RAILS_OK);
}

TEST(rails_crossed_outside_the_plan)
{
	struct pn_rails_nic n[4];
	struct pn_rails_hop h[4] = { { 0, 2 }, { 2, 0 }, { 1, 3 }, { 3, 1 } };
	struct pn_rails_judged j[4];

	/* a rail-aligned plan, but a's rail-0 traffic lands on b's rail-1 NIC
	 * (miscabled): every rail-0 NIC that sent is named */
	lab(n, 60000000, 10000000, 10000000, 10000000, 1000, 0, 10000000, 70000000);
	pn_rails_judge(n, 4, h, 4, 1 << 20, j);
	CHECK_EQ_INT(j[0].why, PN_RAILS_CROSSED);
	CHECK_EQ_INT(j[0].peer, -1);
	CHECK_EQ_INT(j[2].why, PN_RAILS_IDLE); /* below the noise, not a sender */
	CHECK_EQ_INT(j[1].why, PN_RAILS_OK);
	/* within 2 % (retransmits) is not a crossing */
	lab(n, 100000000, 100000000, 1 << 21, 1 << 21, 100000000, 98500000, 1 << 21, 1 << 21);
	pn_rails_judge(n, 4, h, 4, 1 << 20, j);
	CHECK_EQ_INT(j[0].why, PN_RAILS_OK);
	CHECK_EQ_INT(j[2].why, PN_RAILS_OK);
}

TEST(rails_crossed_both_ways_balances_the_sums)
{
	struct pn_rails_nic n[4];
	struct pn_rails_hop h[4] = { { 0, 2 }, { 2, 0 }, { 1, 3 }, { 3, 1 } };
	struct pn_rails_judged j[4];
	int i;

	/* b's rails swapped (rxe1 on rail 1, rxe3 on rail 0): every hop crosses,
	 * and each rail receives what the other sends, so the sums balance */
	lab(n, 50000000, 50000000, 50000000, 50000000, 50000000, 50000000, 50000000, 50000000);
	n[2].rail = 1;
	n[3].rail = 0;
	pn_rails_judge(n, 4, h, 4, 1 << 20, j);
	for (i = 0; i < 4; i++)
		CHECK_EQ_INT(j[i].why, PN_RAILS_CROSSED);
	CHECK_EQ_INT(j[0].peer, 2);
	CHECK_EQ_INT(j[3].peer, 1);
	/* a hop to a NIC of unknown rail is not judged */
	n[2].rail = -1;
	n[3].rail = 1;
	pn_rails_judge(n, 4, h, 4, 1 << 20, j);
	CHECK_EQ_INT(j[0].why, PN_RAILS_OK);
	CHECK_EQ_INT(j[1].why, PN_RAILS_OK);
}

int main(void)
{
	RUN(pairing_covers_every_node);
	RUN(pairing_odd_and_even);
	RUN(rails_all_good);
	RUN(rails_planned_idle_and_unplanned);
	RUN(rails_crossed_by_a_planned_hop);
	RUN(rails_crossed_outside_the_plan);
	RUN(rails_crossed_both_ways_balances_the_sums);
	return unit_done();
}
