/* SPDX-License-Identifier: MIT */
/* A ring plan placed on a job (plan_job.h): node and rank mapping, shape errors, NIC binding;
 * ring-plan --show-schedule's rank rule and schedule (harness/plansched.h). */
#define _GNU_SOURCE
#include "unit.h"

#include "base/log.h"
#include "plan/plan.h"
#include "plan/plan_job.h"
#include "engine/sched.h"
#include "harness/plansched.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static int synth(struct pn_plan_model *m, struct pn_plan *p, int N, int G, int K,
		 const char *hosts)
{
	struct pn_plan_synth s = { .nodes = N, .gpus = G, .nics = K, .rate_gbps = 400,
				   .nvlinks = 18, .hosts = hosts };
	struct pn_plan_opts o = { 0 };
	int ret;

	pn_plan_model_init(m);
	ret = pn_plan_model_synthetic(m, &s);
	if (!ret)
		ret = pn_plan_model_finish(m);
	if (!ret)
		ret = pn_plan_build(p, m, &o);
	return ret;
}

static void done(struct pn_plan_model *m, struct pn_plan *p, struct pn_plan_job *j)
{
	pn_plan_job_release(j);
	pn_plan_release(p);
	pn_plan_model_release(m);
}

static int ring_is(const struct pn_plan_job *j, int k, const int *want)
{
	int i;

	for (i = 0; i < j->nranks; i++)
		if (j->rings[k][i] != want[i])
			return 0;
	return 1;
}

/* 2 nodes x 2 GPUs x 2 NICs: ring 0 is node01 GPU0 GPU1 > node02 GPU1 GPU0, ring 1 the reverse. */
TEST(by_position)
{
	struct pn_plan_model m;
	struct pn_plan p;
	struct pn_plan_job j;
	const int node[] = { 0, 0, 1, 1 }, r0[] = { 0, 1, 3, 2 }, r1[] = { 1, 0, 2, 3 };

	CHECK_EQ_INT(synth(&m, &p, 2, 2, 2, NULL), 0);
	CHECK_EQ_INT(p.nrings, 2);
	CHECK_EQ_INT(pn_plan_job_map(&j, &p, 4, node, 2, NULL), 0);
	CHECK_EQ_INT(j.by_name, 0);
	CHECK_EQ_INT(j.nrings, 2);
	CHECK(ring_is(&j, 0, r0));
	CHECK(ring_is(&j, 1, r1));
	CHECK_EQ_INT(j.rank_gpu[3], 1);
	CHECK_EQ_INT(j.pos[0 * 4 + 3], 2);
	pn_plan_job_release(&j);
	{
		/* names that are not the plan's: still by position */
		const char *names[] = { "x", "y" };

		CHECK_EQ_INT(pn_plan_job_map(&j, &p, 4, node, 2, names), 0);
		CHECK_EQ_INT(j.by_name, 0);
		CHECK(ring_is(&j, 0, r0));
	}
	done(&m, &p, &j);
}

/* Ranks alternate between the nodes: a node's k-th rank in rank order is its GPU k. */
TEST(interleaved_ranks)
{
	struct pn_plan_model m;
	struct pn_plan p;
	struct pn_plan_job j;
	const int node[] = { 0, 1, 0, 1 }, r0[] = { 0, 2, 3, 1 };

	CHECK_EQ_INT(synth(&m, &p, 2, 2, 2, NULL), 0);
	CHECK_EQ_INT(pn_plan_job_map(&j, &p, 4, node, 2, NULL), 0);
	CHECK(ring_is(&j, 0, r0));
	CHECK_EQ_INT(j.rank_gpu[2], 1);
	CHECK_EQ_INT(j.rank_gpu[1], 0);
	done(&m, &p, &j);
}

/* Host names that name every node: the plan's node02 is the job's node 0. */
TEST(by_name)
{
	struct pn_plan_model m;
	struct pn_plan p;
	struct pn_plan_job j;
	const int node[] = { 0, 0, 1, 1 }, r0[] = { 2, 3, 1, 0 };
	const char *names[] = { "b", "a" };

	CHECK_EQ_INT(synth(&m, &p, 2, 2, 2, "a,b"), 0);
	CHECK_EQ_INT(pn_plan_job_map(&j, &p, 4, node, 2, names), 0);
	CHECK_EQ_INT(j.by_name, 1);
	CHECK_EQ_INT(j.plan_node[0], 1);
	CHECK(ring_is(&j, 0, r0));
	done(&m, &p, &j);
}

TEST(partial_names_refused)
{
	struct pn_plan_model m;
	struct pn_plan p;
	struct pn_plan_job j;
	const int node[] = { 0, 0, 1, 1 };
	const char *names[] = { "a", "c" };

	CHECK_EQ_INT(synth(&m, &p, 2, 2, 2, "a,b"), 0);
	CHECK_EQ_INT(pn_plan_job_map(&j, &p, 4, node, 2, names), -EINVAL);
	CHECK(strstr(pn_errmsg(-EINVAL), "name only 1 of the job's 2 nodes") != NULL);
	CHECK(strstr(pn_errmsg(-EINVAL), "'b' is not in the job") != NULL);
	CHECK(j.rings == NULL);
	done(&m, &p, &j);
}

TEST(shape_mismatch)
{
	struct pn_plan_model m;
	struct pn_plan p;
	struct pn_plan_job j;
	const int one[] = { 0, 0, 0, 0 }, three_one[] = { 0, 0, 0, 1 }, six[] = { 0, 0, 0, 1, 1, 1 };

	CHECK_EQ_INT(synth(&m, &p, 2, 2, 2, NULL), 0);
	CHECK_EQ_INT(pn_plan_job_map(&j, &p, 4, one, 1, NULL), -EINVAL);
	CHECK_STR(pn_errmsg(-EINVAL), "the plan is for 2 nodes, the job runs on 1");
	CHECK_EQ_INT(pn_plan_job_map(&j, &p, 6, six, 2, NULL), -EINVAL);
	CHECK_STR(pn_errmsg(-EINVAL), "the plan is for 4 ranks, the job has 6");
	CHECK_EQ_INT(pn_plan_job_map(&j, &p, 4, three_one, 2, NULL), -EINVAL);
	CHECK_STR(pn_errmsg(-EINVAL), "plan node 'node01' has 2 GPUs, the job's node 0 has 3 ranks");
	done(&m, &p, &j);
}

/* The hop's NICs at both ends; pairs a ring does not join on its rail; none within a node. */
TEST(nic_binding)
{
	struct pn_plan_model m;
	struct pn_plan p;
	struct pn_plan_job j;
	const int node[] = { 0, 0, 1, 1 };
	char a[64], b[64];
	int k, s, t;

	CHECK_EQ_INT(synth(&m, &p, 2, 2, 2, NULL), 0);
	CHECK_EQ_INT(pn_plan_job_map(&j, &p, 4, node, 2, NULL), 0);
	/* ring 0: 0 1 | 3 2: node01 receives on mlx5_0, sends on mlx5_1 */
	CHECK_EQ_INT(pn_plan_job_nic(&j, 1, 3, 0, a, sizeof(a)), 1);
	CHECK_STR(a, "mlx5_1:1");
	CHECK_EQ_INT(pn_plan_job_nic(&j, 3, 1, 0, a, sizeof(a)), 1);
	CHECK_STR(a, "mlx5_1:1");
	CHECK_EQ_INT(pn_plan_job_nic(&j, 2, 0, 0, a, sizeof(a)), 1);
	CHECK_STR(a, "mlx5_0:1");
	CHECK_EQ_INT(pn_plan_job_nic(&j, 0, 2, 0, a, sizeof(a)), 1);
	CHECK_STR(a, "mlx5_0:1");
	/* ring 1 (1 0 | 2 3) runs the same pairs the other way: 0 -> 2 on rail 0, 3 -> 1 on rail 1 */
	CHECK_EQ_INT(pn_plan_job_nic(&j, 0, 2, 1, a, sizeof(a)), 1);
	CHECK_STR(a, "mlx5_0:1");
	CHECK_EQ_INT(pn_plan_job_nic(&j, 3, 1, 1, a, sizeof(a)), 1);
	CHECK_STR(a, "mlx5_1:1");
	/* 0 and 3 are not neighbours in ring 0: its first hop's rail (1) */
	CHECK_EQ_INT(pn_plan_job_nic(&j, 0, 3, 0, a, sizeof(a)), 1);
	CHECK_STR(a, "mlx5_1:1");
	CHECK_EQ_INT(pn_plan_job_nic(&j, 0, 1, 0, a, sizeof(a)), 0);
	CHECK_STR(a, "");
	/* every inter-node connection: the same NIC name (= rail here) at both ends */
	for (k = 0; k < j.nrings; k++)
		for (s = 0; s < 4; s++)
			for (t = 0; t < 4; t++) {
				if (node[s] == node[t])
					continue;
				CHECK_EQ_INT(pn_plan_job_nic(&j, s, t, k, a, sizeof(a)), 1);
				CHECK_EQ_INT(pn_plan_job_nic(&j, t, s, k, b, sizeof(b)), 1);
				CHECK_STR(a, b);
			}
	done(&m, &p, &j);
}

/*
 * Two ranks on two nodes are each other's both neighbours: one QP cannot use
 * two NICs.  The planner turns such rings on one rail; a plan that does not
 * is refused at run time and by the validator alike.
 */
TEST(nic_conflict)
{
	struct pn_plan_model m;
	struct pn_plan p;
	struct pn_plan_job j;
	struct pn_plan_msgs v = { 0 };
	const int node[] = { 0, 1 };
	char a[64];
	int i;

	CHECK_EQ_INT(synth(&m, &p, 2, 1, 2, NULL), 0);
	CHECK_EQ_INT(pn_plan_validate(&p, &v), 0);
	for (i = 0; i < p.rings[0].nseg; i++)
		CHECK_EQ_INT(p.rings[0].seg[i].in_nic, p.rings[0].seg[i].out_nic);
	CHECK_EQ_INT(pn_plan_job_map(&j, &p, 2, node, 2, NULL), 0);
	CHECK_EQ_INT(pn_plan_job_nic(&j, 0, 1, 0, a, sizeof(a)), 1);
	pn_plan_job_release(&j);
	/* enter on mlx5_0 and leave on mlx5_1 (and back on the other node) */
	p.rings[0].seg[0].in_nic = 0;
	p.rings[0].seg[0].out_nic = 1;
	p.rings[0].seg[1].in_nic = 1;
	p.rings[0].seg[1].out_nic = 0;
	CHECK(pn_plan_validate(&p, &v) > 0);
	CHECK(v.n > 0 && strstr(v.v[0], "one connection uses one NIC") != NULL);
	pn_plan_msgs_release(&v);
	CHECK_EQ_INT(pn_plan_job_map(&j, &p, 2, node, 2, NULL), 0);
	CHECK_EQ_INT(pn_plan_job_nic(&j, 0, 1, 0, a, sizeof(a)), -EINVAL);
	CHECK(strstr(pn_errmsg(-EINVAL), "cannot use both mlx5_1 and mlx5_0") != NULL);
	done(&m, &p, &j);
	/* one NIC per node: the same NIC both ways is fine */
	CHECK_EQ_INT(synth(&m, &p, 2, 1, 1, NULL), 0);
	CHECK_EQ_INT(pn_plan_job_map(&j, &p, 2, node, 2, NULL), 0);
	CHECK_EQ_INT(pn_plan_job_nic(&j, 0, 1, 0, a, sizeof(a)), 1);
	CHECK_STR(a, "mlx5_0:1");
	done(&m, &p, &j);
}

/* The multiring schedule over the mapped rings: every channel sends to the ring's next rank. */
TEST(schedule_follows_rings)
{
	struct pn_plan_model m;
	struct pn_plan p;
	struct pn_plan_job j;
	const int node[] = { 0, 1, 0, 1, 0, 1, 0, 1 };
	int r, k, N = 8;

	CHECK_EQ_INT(synth(&m, &p, 2, 4, 4, NULL), 0);
	CHECK_EQ_INT(pn_plan_job_map(&j, &p, N, node, 2, NULL), 0);
	CHECK_EQ_INT(j.nrings, 4);
	for (r = 0; r < N; r++) {
		struct pn_sched s;
		struct pn_sched_job job = { .rank = r, .nranks = N, .node = node,
					    .nchannels = j.nrings,
					    .rings = (const int *const *)j.rings };

		CHECK_EQ_INT(pn_sched_build(&s, PN_ALGO_MULTIRING, &job, 1 << 16, 4), 0);
		CHECK_EQ_INT(s.nchan, 4);
		for (k = 0; k < s.nchan; k++) {
			int i = j.pos[k * N + r];

			CHECK(s.ch[k].n > 0);
			CHECK_EQ_INT(s.ch[k].steps[0].send_peer, j.rings[k][(i + 1) % N]);
			CHECK_EQ_INT(s.ch[k].steps[1].recv_peer, j.rings[k][(i + N - 1) % N]);
		}
		pn_sched_release(&s);
	}
	done(&m, &p, &j);
}

TEST(show_schedule_of_a_rank)
{
	struct pn_plan_model m;
	struct pn_plan p;
	struct pn_plan_job j = { 0 };
	struct pn_sched sc = { 0 };

	CHECK_EQ_INT(synth(&m, &p, 2, 2, 2, NULL), 0);
	CHECK_EQ_INT(pn_plan_sched_show(&sc, &p, 4, 1 << 20, 1), -EINVAL);
	CHECK_STR(pn_errmsg(-EINVAL), "--schedule-rank must be between 0 and 3");
	/* -1 and 0: not given (ring-plan's table), rank 0 and 1 MiB */
	CHECK_EQ_INT(pn_plan_sched_show(&sc, &p, -1, 0, 1), 0);
	CHECK(sc.ch != NULL && sc.rank == 0 && sc.count == (1 << 18));
	pn_sched_release(&sc);
	/* not built: the rank is checked all the same */
	CHECK_EQ_INT(pn_plan_sched_show(&sc, &p, 3, 1 << 20, 0), 0);
	CHECK(sc.ch == NULL);
	CHECK_EQ_INT(pn_plan_sched_show(&sc, &p, 3, 1 << 20, 1), 0);
	CHECK(sc.ch != NULL && sc.rank == 3 && sc.count == (1 << 18) && sc.esize == 4);
	CHECK_EQ_INT(sc.nchan, p.nrings);
	pn_sched_release(&sc);
	done(&m, &p, &j);
}

int main(void)
{
	RUN(by_position);
	RUN(interleaved_ranks);
	RUN(by_name);
	RUN(partial_names_refused);
	RUN(shape_mismatch);
	RUN(nic_binding);
	RUN(nic_conflict);
	RUN(schedule_follows_rings);
	RUN(show_schedule_of_a_rank);
	return unit_done();
}
