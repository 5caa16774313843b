/* SPDX-License-Identifier: MIT */
/* The pure parts of penny check's alltoall (src/check/check_a2a.h): the
 * round-robin tournament of nodes, the shifts of their ranks, the link a
 * pair of rails crosses, the slowest pair and the expectation. */
#include "unit.h"
#include "check/check_a2a.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* For 2..65 nodes: every round a perfect matching (symmetric, nobody with
 * itself), every pair of nodes meets exactly once, at most one node sits
 * out per round (none when even). */
TEST(tournament_meets_every_pair_once)
{
	int n, r, k, bad = 0;

	CHECK_EQ_INT(pn_a2a_rounds(0), 0);
	CHECK_EQ_INT(pn_a2a_rounds(1), 0);
	CHECK_EQ_INT(pn_a2a_rounds(2), 1);
	CHECK_EQ_INT(pn_a2a_rounds(3), 3);
	CHECK_EQ_INT(pn_a2a_rounds(4), 3);
	CHECK_EQ_INT(pn_a2a_rounds(9), 9);
	for (n = 2; n <= 65; n++) {
		int *met = calloc((size_t)(n * n), sizeof(int));

		for (r = 0; r < pn_a2a_rounds(n); r++) {
			int out = 0;

			for (k = 0; k < n; k++) {
				int p = pn_a2a_partner(n, r, k);

				if (p < 0) {
					out++;
					continue;
				}
				if (p == k || p >= n || pn_a2a_partner(n, r, p) != k)
					bad++;
				met[k * n + p]++;
			}
			if (out != n % 2)
				bad++;
		}
		for (k = 0; k < n; k++)
			for (r = 0; r < n; r++)
				if (r != k && met[k * n + r] != 1)
					bad++;
		free(met);
	}
	CHECK_EQ_INT(bad, 0);
	/* out of range asks get no partner */
	CHECK_EQ_INT(pn_a2a_partner(1, 0, 0), -1);
	CHECK_EQ_INT(pn_a2a_partner(4, 3, 0), -1);
	CHECK_EQ_INT(pn_a2a_partner(4, 0, 4), -1);
	CHECK_EQ_INT(pn_a2a_partner(4, -1, 0), -1);
	CHECK_EQ_INT(pn_a2a_partner(4, 0, -1), -1);
}

/* Two nodes of la and lb ranks: over the shifts every rank of one meets every
 * rank of the other exactly once, both sides agree, each shift a matching. */
TEST(shifts_cover_every_rank_pair)
{
	int la, lb, s, i, j, bad = 0;

	CHECK_EQ_INT(pn_a2a_shifts(8, 8), 8);
	CHECK_EQ_INT(pn_a2a_shifts(2, 3), 3);
	CHECK_EQ_INT(pn_a2a_shifts(0, 3), 0);
	for (la = 1; la <= 9; la++)
		for (lb = 1; lb <= 9; lb++) {
			int met[9][9] = { { 0 } };

			for (s = 0; s < pn_a2a_shifts(la, lb); s++) {
				int used[9] = { 0 };

				for (i = 0; i < la; i++) {
					j = pn_a2a_lane(2, 5, i, s, la, lb);
					if (j < 0)
						continue;
					/* the partner node sees the same lane */
					if (j >= lb || pn_a2a_lane(5, 2, j, s, lb, la) != i || used[j]++)
						bad++;
					met[i][j]++;
				}
			}
			for (i = 0; i < la; i++)
				for (j = 0; j < lb; j++)
					bad += met[i][j] != 1;
		}
	CHECK_EQ_INT(bad, 0);
	/* shift 0 of equal nodes is rail-aligned: local i with local i */
	CHECK_EQ_INT(pn_a2a_lane(0, 1, 3, 0, 8, 8), 3);
	CHECK_EQ_INT(pn_a2a_lane(1, 0, 3, 1, 8, 8), 2);
	CHECK_EQ_INT(pn_a2a_lane(0, 1, 7, 1, 8, 8), 0);
	CHECK_EQ_INT(pn_a2a_lane(0, 0, 0, 0, 8, 8), -1);
	CHECK_EQ_INT(pn_a2a_lane(0, 1, 8, 0, 8, 8), -1);
	CHECK_EQ_INT(pn_a2a_lane(0, 1, 0, 8, 8, 8), -1);
}

TEST(link_of_two_rails)
{
	char b[64];

	CHECK_EQ_INT(pn_a2a_link(0, 0), PN_A2A_LEAF);
	CHECK_EQ_INT(pn_a2a_link(3, 1), PN_A2A_SPINE);
	CHECK_EQ_INT(pn_a2a_link(-1, 1), PN_A2A_NET);
	CHECK_EQ_INT(pn_a2a_link(2, -1), PN_A2A_NET);
	pn_a2a_link_name(2, 2, b, sizeof(b));
	CHECK_STR(b, "rail 2 (leaf)");
	pn_a2a_link_name(0, 3, b, sizeof(b));
	CHECK_STR(b, "spine (rail 0 to rail 3)");
	pn_a2a_link_name(-1, -1, b, sizeof(b));
	CHECK_STR(b, "network (rails unknown)");
}

/* A lane of ranks r (node nr, rail) and p (node np, rail). */
static struct pn_a2a_lane lane(int r, int nr, int rail, int p, int np, int prail, double gbps,
			       double bar)
{
	return (struct pn_a2a_lane){ .rank = r, .node = nr, .rail = rail, .peer = p,
				     .peer_node = np, .peer_rail = prail, .gbps = gbps, .bar = bar };
}

/* Four nodes of two ranks (rails 0 and 1); the link n1-n2 of rail 1 is slow:
 * the slowest lane is that one, with its link, from either node's view;
 * lanes are compared by their rate over their bar. */
TEST(slowest_pair_and_its_link)
{
	struct pn_a2a_lane l[8];
	char b[64];
	int k;

	l[0] = lane(0, 0, 0, 2, 1, 0, 95, 50);	/* n0-n1 leaf rail 0 */
	l[1] = lane(1, 0, 1, 2, 1, 0, 40, 25);	/* n0-n1 spine, bar lower */
	l[2] = lane(3, 1, 1, 5, 2, 1, 9, 50);	/* n1-n2 leaf rail 1: slow */
	l[3] = lane(2, 1, 0, 4, 2, 0, 96, 50);
	l[4] = lane(6, 3, 0, 4, 2, 0, 97, 50);
	l[5] = lane(7, 3, 1, 1, 0, 1, 94, 50);
	l[6] = lane(5, 2, 1, 3, 1, 1, 10, 50);	/* the same slow lane from n2 */
	l[7] = lane(4, 2, 0, 7, 3, 1, 30, 25);	/* spine, 1.2 x its bar */
	k = pn_a2a_slowest(l, 8, -1);
	CHECK_EQ_INT(k, 2);
	pn_a2a_link_name(l[k].rail, l[k].peer_rail, b, sizeof(b));
	CHECK_STR(b, "rail 1 (leaf)");
	CHECK_EQ_INT(l[k].node, 1);
	CHECK_EQ_INT(l[k].peer_node, 2);
	/* node 2's slowest is the same link; node 3's its spine lane (1.2 x its
	 * bar), node 0's its spine lane (1.6 x), though the rate of 30 is lower */
	CHECK_EQ_INT(pn_a2a_slowest(l, 8, 2), 2);
	CHECK_EQ_INT(pn_a2a_slowest(l, 8, 3), 7);
	CHECK_EQ_INT(pn_a2a_slowest(l, 8, 0), 1);
	/* by rate alone (no bar anywhere) the slowest is the lowest rate */
	for (k = 0; k < 8; k++)
		l[k].bar = 0;
	CHECK_EQ_INT(pn_a2a_slowest(l, 8, -1), 2);
	CHECK_EQ_INT(pn_a2a_slowest(l, 8, 3), 7);
	/* none: no lane, or none of the node */
	CHECK_EQ_INT(pn_a2a_slowest(l, 0, -1), -1);
	CHECK_EQ_INT(pn_a2a_slowest(l, 8, 9), -1);
}

TEST(expectation_from_topology_config_and_median)
{
	char src[128];
	double e;

	/* over verbs: the slower NIC x efficiency */
	e = pn_a2a_topo_expect("mlx5_0/1", 400, "mlx5_3/1", 200, 1, 0.5, src, sizeof(src));
	CHECK(e == 100);
	CHECK_STR(src, "topology: mlx5_3/1 200 Gb/s x 50%");
	/* tcp, or a rate unknown: none */
	CHECK(pn_a2a_topo_expect("a", 400, "b", 400, 0, 0.5, src, sizeof(src)) == 0);
	CHECK_STR(src, "");
	CHECK(pn_a2a_topo_expect("a", 0, "b", 400, 1, 0.5, src, sizeof(src)) == 0);
	/* the larger of the expectation and the median's share wins */
	e = pn_a2a_bar(100, "topology: x", 300, 12, 0.5, src, sizeof(src));
	CHECK(e == 150);
	CHECK_STR(src, "job median 300 Gb/s of 12 pairs x 50%");
	e = pn_a2a_bar(100, "config: alltoall.min-gbps", 150, 12, 0.5, src, sizeof(src));
	CHECK(e == 100);
	CHECK_STR(src, "config: alltoall.min-gbps");
	/* a median of one pair is no median */
	e = pn_a2a_bar(0, "", 300, 1, 0.5, src, sizeof(src));
	CHECK(e == 0);
	e = pn_a2a_bar(0, "", 8, 3, 0.75, src, sizeof(src));
	CHECK(e == 2);
	CHECK_STR(src, "job median 8 Gb/s of 3 pairs x 25%");
}

int main(void)
{
	RUN(tournament_meets_every_pair_once);
	RUN(shifts_cover_every_rank_pair);
	RUN(link_of_two_rails);
	RUN(slowest_pair_and_its_link);
	RUN(expectation_from_topology_config_and_median);
	return unit_done();
}
