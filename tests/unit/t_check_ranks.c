/* SPDX-License-Identifier: MIT */
/*
 * The ranks check's pure parts (src/harness/check_ranks.c): the GPU a
 * local rank opens under CUDA_VISIBLE_DEVICES, the GPU a CUDA device of a
 * process is (indices, UUIDs, MIG), NCCL_IB_HCA's syntax, and
 * the audit over a table of synthetic jobs.  (t0846 runs it under --np.)
 */
#define _GNU_SOURCE
#include "unit.h"

#include "harness/check_ranks.h"
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

/* The GPU that CUDA device dev of a process with CUDA_VISIBLE_DEVICES cvd
 * is, on a node of four GPUs (uuids: which of the tables below, 0 none),
 * and what why then says ("" anything). */
TEST(cuda_visible)
{
	static const char *const all[] = { "GPU-8932f937-d72c-4106-c12f-20bd9faed9f6",
		"GPU-8a1b0000-0000-0000-0000-000000000001",
		"GPU-8a1b0000-0000-0000-0000-000000000002",
		"GPU-c0ffee00-0000-0000-0000-000000000003" };
	static const char *const some[] = { "GPU-8932f937", "", NULL, "GPU-c0ffee00" };
	static const char *const *const tables[] = { NULL, all, some };
	static const struct {
		const char *cvd;
		int dev, uuids, want;
		const char *why;
	} cases[] = {
		/* unset: the device is the GPU in PCI order */
		{ NULL, 0, 0, 0, "" },
		{ NULL, 3, 0, 3, "" },
		{ NULL, 4, 0, -1, "CUDA device 4: the node has 4 GPUs" },
		/* indices: device d is the d-th entry */
		{ "1", 0, 0, 1, "" },
		{ "3,1", 1, 0, 1, "" },
		{ " 2 , 0", 0, 0, 2, "" },
		{ " 2 , 0", 1, 0, 0, "" },
		{ "1", 1, 0, -1, "CUDA device 1: CUDA_VISIBLE_DEVICES=1 makes 1 visible" },
		/* CUDA stops at the first entry it cannot use */
		{ "2,7,1", 0, 0, 2, "" },
		{ "2,7,1", 2, 0, -1, "'7' is not a GPU index of this node (4 GPUs)" },
		/* UUIDs and their prefixes */
		{ "GPU-c0ffee00-0000-0000-0000-000000000003", 0, 1, 3, "" },
		{ "GPU-8932,GPU-c0ff", 1, 1, 3, "" },
		{ "GPU-8932,GPU-c0ff", 0, 1, 0, "" },
		{ "GPU-8a1b", 0, 1, -1, "GPU-8a1b names more than one GPU" },
		{ "GPU-8a1b0000-0000-0000-0000-000000000002", 0, 1, 2, "" },
		{ "GPU-deadbeef", 0, 1, -1, "GPU-deadbeef names no GPU of this node" },
		{ "2,GPU-8932", 1, 1, 0, "" },
		/* a UUID longer than the GPU's is no prefix of it */
		{ "GPU-8932f937-d72c-4106-c12f-20bd9faed9f6ff", 0, 1, -1, "names no GPU" },
		/* UUIDs penny does not know: no guess */
		{ "GPU-8932", 0, 0, -1, "GPU0's UUID is unknown" },
		{ "GPU-c0ff", 0, 2, -1, "GPU1's UUID is unknown" },
		/* MIG: the old form is on its GPU, the new one cannot be told */
		{ "MIG-GPU-c0ffee00-0000-0000-0000-000000000003/1/0", 0, 1, 3, "" },
		{ "MIG-4f3b5e2a-1c9d-5f0e-8a7b-2d6c9e1f0a3b", 0, 1, -1,
		  "MIG-4f3b5e2a-1c9d-5f0e-8a7b-2d6c9e1f0a3b is a MIG instance: penny cannot tell "
		  "its GPU" },
		/* empty, garbage, out of range */
		{ "", 0, 1, -1, "CUDA_VISIBLE_DEVICES= makes 0 visible" },
		{ "-1", 0, 1, -1, "'-1' is not a GPU index or UUID" },
		{ "1x", 0, 1, -1, "'1x' is not a GPU index" },
		{ "99999999999999999999", 0, 1, -1, "is not a GPU index" },
		{ "GPU-", 0, 1, -1, "'GPU-' is not a GPU index or UUID" },
		{ "1,,2", 1, 1, -1, "'' is not a GPU index or UUID" },
		{ "<8 bytes, too long>", 0, 1, -1, "is not a GPU index or UUID" },
		{ "1", -1, 1, -1, "CUDA device -1 is not one" },
		{ NULL, 100000, 1, -1, "CUDA device 100000 is not one" },
		{ "0,1,2,3", 300, 1, -1, "CUDA device 300 is not one" },
	};
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char why[200] = "";
		int g = pn_cuda_visible_gpu(cases[i].cvd, cases[i].dev, 4, tables[cases[i].uuids],
					    why, sizeof(why));

		if (g != cases[i].want || !strstr(why, cases[i].why))
			fprintf(stderr, "# case %zu: '%s' device %d: %d (%s)\n", i,
				cases[i].cvd ? cases[i].cvd : "(unset)", cases[i].dev, g, why);
		CHECK_EQ_INT(g, cases[i].want);
		CHECK(strstr(why, cases[i].why) != NULL);
	}
}

int main(void)
{
	RUN(visible);
	RUN(cuda_visible);
	RUN(hca);
	RUN(audit);
	return unit_done();
}
