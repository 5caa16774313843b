/* SPDX-License-Identifier: MIT */
/*
 * The ranks check's pure parts (src/check/check_ranks.c): the GPU a
 * local rank opens under CUDA_VISIBLE_DEVICES, NCCL_IB_HCA's syntax, and
 * the audit over a table of synthetic jobs.  (t0846 runs it under --np.)
 */
#define _GNU_SOURCE
#include "unit.h"

#include "check/check_ranks.h"
#include "node/topo.h"

#include <stdio.h>
#include <string.h>

TEST(visible)
{
	CHECK_EQ_INT(pn_ranks_visible(NULL, 0, 8), 0);
	CHECK_EQ_INT(pn_ranks_visible(NULL, 9, 8), 1);
	CHECK_EQ_INT(pn_ranks_visible("3", 0, 8), 3);
	CHECK_EQ_INT(pn_ranks_visible("3", 1, 8), 3);		/* both ranks on GPU 3 */
	CHECK_EQ_INT(pn_ranks_visible("4,5,6", 1, 8), 5);
	CHECK_EQ_INT(pn_ranks_visible("4, 5", 1, 8), 5);
	CHECK_EQ_INT(pn_ranks_visible("4,9,6", 1, 8), 4);	/* CUDA stops at the bad entry */
	CHECK_EQ_INT(pn_ranks_visible("GPU-8a1b", 0, 8), -1);	/* a UUID */
	CHECK_EQ_INT(pn_ranks_visible("", 0, 8), -1);
	CHECK_EQ_INT(pn_ranks_visible("-1", 0, 8), -1);
	CHECK_EQ_INT(pn_ranks_visible("0", 0, 0), -1);
	CHECK_EQ_INT(pn_ranks_visible("99999999999999999999", 0, 8), -1);
	CHECK_EQ_INT(pn_ranks_visible(NULL, -1, 8), -1);
}

TEST(visible_count)
{
	char h[64];

	CHECK_EQ_INT(pn_ranks_visible_count(NULL, 4, h, sizeof(h)), 4);
	CHECK_STR(h, "");
	CHECK_EQ_INT(pn_ranks_visible_count("0,1,2", 4, h, sizeof(h)), 3);
	CHECK_STR(h, "GPU3");
	CHECK_EQ_INT(pn_ranks_visible_count("2, 0", 4, h, sizeof(h)), 2);
	CHECK_STR(h, "GPU1,GPU3");
	CHECK_EQ_INT(pn_ranks_visible_count("1,7,2", 4, h, sizeof(h)), 1);	/* CUDA stops at 7 */
	CHECK_EQ_INT(pn_ranks_visible_count("", 2, h, sizeof(h)), 0);
	CHECK_STR(h, "GPU0,GPU1");
	CHECK_EQ_INT(pn_ranks_visible_count("GPU-8a1b", 4, h, sizeof(h)), -1);
	CHECK_EQ_INT(pn_ranks_visible_count("MIG-1", 4, h, sizeof(h)), -1);
}

TEST(hca)
{
	CHECK_EQ_INT(pn_ranks_nic_allowed(NULL, "mlx5_0"), 1);
	CHECK_EQ_INT(pn_ranks_nic_allowed("", "mlx5_0"), 1);
	CHECK_EQ_INT(pn_ranks_nic_allowed("mlx5_0", "mlx5_0"), 1);
	CHECK_EQ_INT(pn_ranks_nic_allowed("mlx5_0", "mlx5_3"), 0);
	CHECK_EQ_INT(pn_ranks_nic_allowed("mlx5", "mlx5_3"), 1);	/* a prefix */
	CHECK_EQ_INT(pn_ranks_nic_allowed("=mlx5", "mlx5_3"), 0);	/* exact */
	CHECK_EQ_INT(pn_ranks_nic_allowed("=mlx5_3:1,mlx5_4", "mlx5_3"), 1);
	CHECK_EQ_INT(pn_ranks_nic_allowed("mlx5_1:1,mlx5_3:1", "mlx5_3"), 1);
	CHECK_EQ_INT(pn_ranks_nic_allowed("^mlx5_0", "mlx5_3"), 1);
	CHECK_EQ_INT(pn_ranks_nic_allowed("^mlx5_0", "mlx5_0"), 0);
	CHECK_EQ_INT(pn_ranks_nic_allowed("^=mlx5_0", "mlx5_01"), 1);
	CHECK_EQ_INT(pn_ranks_nic_allowed(",,:", "mlx5_0"), 0);
}

static struct pn_rank_use use(int rank, const char *host, int gpu, int path, int best,
			      const char *nic)
{
	struct pn_rank_use u;

	memset(&u, 0, sizeof(u));
	u.rank = rank;
	u.gpu = gpu;
	u.path = path;
	u.best_path = best;
	snprintf(u.host, sizeof(u.host), "%s", host);
	snprintf(u.gpu_name, sizeof(u.gpu_name), "GPU%d", gpu);
	snprintf(u.busid, sizeof(u.busid), "0000:%02x:00.0", gpu + 3);
	snprintf(u.nic, sizeof(u.nic), "%s", nic);
	snprintf(u.best_nic, sizeof(u.best_nic), "mlx5_%d", gpu);
	return u;
}

/* A table of jobs: the verdict each rank gets. */
TEST(audit)
{
	static const struct {
		const char *what;
		int n;
		struct { const char *host; int gpu, path, best; const char *nic; } r[4];
		const char *want;	/* P, F, S per rank */
	} cases[] = {
		{ "one GPU each, rail NICs", 2,
		  { { "a", 0, PN_PATH_PIX, PN_PATH_PIX, "mlx5_0" },
		    { "a", 1, PN_PATH_PIX, PN_PATH_PIX, "mlx5_1" } }, "PP" },
		{ "two ranks on one GPU", 3,
		  { { "a", 0, PN_PATH_PIX, PN_PATH_PIX, "mlx5_0" },
		    { "a", 0, PN_PATH_PIX, PN_PATH_PIX, "mlx5_0" },
		    { "a", 1, PN_PATH_PIX, PN_PATH_PIX, "mlx5_1" } }, "FFP" },
		{ "one GPU index on two hosts is no sharing", 2,
		  { { "a", 0, PN_PATH_PIX, PN_PATH_PIX, "mlx5_0" },
		    { "b", 0, PN_PATH_PIX, PN_PATH_PIX, "mlx5_0" } }, "PP" },
		{ "a SYS NIC while a PIX one exists", 2,
		  { { "a", 0, PN_PATH_SYS, PN_PATH_PIX, "mlx5_9" },
		    { "a", 1, PN_PATH_NODE, PN_PATH_PHB, "mlx5_9" } }, "FF" },
		{ "far, but no nearer NIC exists", 1,
		  { { "a", 0, PN_PATH_SYS, PN_PATH_SYS, "mlx5_0" } }, "P" },
		{ "PHB is near enough", 1,
		  { { "a", 0, PN_PATH_PHB, PN_PATH_PIX, "mlx5_0" } }, "P" },
		{ "no NIC, unknown GPU", 2,
		  { { "a", 0, -1, -1, "" }, { "a", -1, -1, -1, "" } }, "PS" },
	};
	enum pn_verdict v[4];
	char det[4][160];
	size_t k;
	int i;

	for (k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		struct pn_rank_use r[4];

		for (i = 0; i < cases[k].n; i++)
			r[i] = use(i, cases[k].r[i].host, cases[k].r[i].gpu, cases[k].r[i].path,
				   cases[k].r[i].best, cases[k].r[i].nic);
		pn_ranks_audit(r, cases[k].n, v, det);
		for (i = 0; i < cases[k].n; i++) {
			char got = v[i] == PN_PASS ? 'P' : v[i] == PN_FAIL ? 'F' : 'S';

			if (got != cases[k].want[i])
				fprintf(stderr, "%s: rank %d: %c, not %c (%s)\n", cases[k].what, i, got,
					cases[k].want[i], det[i]);
			CHECK(got == cases[k].want[i]);
		}
	}
	/* the messages name what an operator needs */
	{
		struct pn_rank_use r[2] = { use(0, "a", 0, PN_PATH_PIX, PN_PATH_PIX, "mlx5_0"),
					    use(5, "a", 0, PN_PATH_PIX, PN_PATH_PIX, "mlx5_0") };

		pn_ranks_audit(r, 2, v, det);
		CHECK(strstr(det[0], "ranks 0 and 5 share GPU0 (0000:03:00.0) on a") != NULL);
		r[1] = use(5, "a", 1, PN_PATH_SYS, PN_PATH_PIX, "mlx5_0");
		pn_ranks_audit(r, 2, v, det);
		CHECK(strstr(det[1], "rank 5's GPU1 uses mlx5_0 (SYS) while mlx5_1 is PIX") != NULL);
	}
}

/* The PCI address a plugin's describe() names: the GPU allreduce-test compares. */
TEST(describe_busid)
{
	char b[16];

	CHECK_EQ_INT(pn_ranks_describe_busid("NVIDIA H100 80GB HBM3 (0000:1A:00.0) sm_90 132 SMs, "
					     "CUDA driver 12.4", b, sizeof(b)), 0);
	CHECK_STR(b, "0000:1a:00.0");
	CHECK_EQ_INT(pn_ranks_describe_busid("fake device -1 of rank 0/2 (x) (0000:03:00.1)", b,
					     sizeof(b)), 0);
	CHECK_STR(b, "0000:03:00.1");
	CHECK_EQ_INT(pn_ranks_describe_busid("fake device 1 of rank 0/2", b, sizeof(b)), -1);
	CHECK_EQ_INT(pn_ranks_describe_busid("(0000:03:00.1", b, sizeof(b)), -1);
	CHECK_EQ_INT(pn_ranks_describe_busid("(0000:03:00.10)", b, sizeof(b)), -1);
	CHECK_EQ_INT(pn_ranks_describe_busid("(00000:3:00.1)", b, sizeof(b)), -1);
	CHECK_EQ_INT(pn_ranks_describe_busid(NULL, b, sizeof(b)), -1);
}

/* Two ranks on one host and address share a GPU; another host, or an unknown GPU, not. */
TEST(shared_gpu)
{
	struct pn_rank_use r[4] = {
		{ .rank = 0, .gpu = 0, .host = "a", .busid = "0000:18:00.0" },
		{ .rank = 1, .gpu = 0, .host = "b", .busid = "0000:18:00.0" },
		{ .rank = 2, .gpu = -1, .host = "a", .busid = "0000:18:00.0" },
		{ .rank = 3, .gpu = 1, .host = "b", .busid = "0000:18:00.0" },
	};

	CHECK_EQ_INT(pn_ranks_shared_gpu(r, 4, 0), -1);
	CHECK_EQ_INT(pn_ranks_shared_gpu(r, 4, 1), 3);
	CHECK_EQ_INT(pn_ranks_shared_gpu(r, 4, 2), -1);
	CHECK_EQ_INT(pn_ranks_shared_gpu(r, 4, 3), 1);
	CHECK_EQ_INT(pn_ranks_shared_gpu(r, 3, 1), -1);
}

int main(void)
{
	RUN(visible);
	RUN(visible_count);
	RUN(hca);
	RUN(audit);
	RUN(describe_busid);
	RUN(shared_gpu);
	return unit_done();
}
