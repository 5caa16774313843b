/* SPDX-License-Identifier: MIT */
/*
 * The expectation math of the GPU checks (src/check/check_gpu_lib.h): a PCIe
 * path's usable rate at its max, the nominal rate between two GPUs by path
 * class and NVLink count, ring-plan's predicted busbw for a node, PCI
 * address matching, and the child process the measurements run in.
 */
#include "unit.h"

#include "base/log.h"
#include "check/check_gpu_lib.h"
#include "node/pcie.h"
#include "node/topo.h"
#include "plan/plan.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <unistd.h>

static int near(double a, double b)
{
	return fabs(a - b) < 1e-6 * (fabs(b) + 1);
}

static void link_set(struct pn_pcie_link *l, const char *addr, unsigned mts, int w)
{
	snprintf(l->addr, sizeof(l->addr), "%s", addr);
	l->cur_mts = l->max_mts = mts;
	l->cur_width = l->max_width = w;
	pn_pcie_judge(l);
}

TEST(path_device_link)
{
	struct pn_pcie_path p = { .nlinks = 1 };
	char src[128];

	link_set(&p.link[0], "0000:18:00.0", 32000, 16);
	CHECK(near(pn_checkgpu_path_gbs(&p, src, sizeof(src)), pn_pcie_gbs(32000, 16)));
	CHECK_STR(src, "Gen5 x16 = 63 GB/s");
}

TEST(path_uplink_limits)
{
	struct pn_pcie_path p = { .nlinks = 2 };
	char src[128];

	/* a Gen5 GPU behind a Gen4 x16 switch uplink: the uplink is the rate */
	link_set(&p.link[0], "0000:17:00.0", 16000, 16);
	link_set(&p.link[1], "0000:18:00.0", 32000, 16);
	CHECK(near(pn_checkgpu_path_gbs(&p, src, sizeof(src)), pn_pcie_gbs(16000, 16)));
	CHECK_STR(src, "Gen4 x16 = 31.5 GB/s (uplink 0000:17:00.0)");
	/* the max, not the current: an idle GPU's 2.5 GT/s does not lower it */
	p.link[1].cur_mts = 2500;
	pn_pcie_judge(&p.link[1]);
	link_set(&p.link[0], "0000:17:00.0", 32000, 16);
	CHECK(near(pn_checkgpu_path_gbs(&p, src, sizeof(src)), pn_pcie_gbs(32000, 16)));
	CHECK_STR(src, "Gen5 x16 = 63 GB/s");
}

TEST(path_unknown)
{
	struct pn_pcie_path p = { .nlinks = 1 };
	char src[128];

	CHECK(pn_checkgpu_path_gbs(&p, src, sizeof(src)) == 0);
	CHECK_STR(src, "PCIe rate unknown");
}

TEST(pair_rates)
{
	char src[128];

	CHECK(near(pn_checkgpu_pair_gbs(PN_PATH_NV, 18, 63, src, sizeof(src)), 18 * 26.56));
	CHECK_STR(src, "NV18 x 26.56 GB/s = 478.1 GB/s");
	CHECK(near(pn_checkgpu_pair_gbs(PN_PATH_NV, 4, 63, src, sizeof(src)), 4 * 26.56));
	CHECK(near(pn_checkgpu_pair_gbs(PN_PATH_PIX, 0, 63, src, sizeof(src)), 63));
	CHECK_STR(src, "PIX: PCIe 63 GB/s");
	CHECK(near(pn_checkgpu_pair_gbs(PN_PATH_NODE, 0, 31.5, src, sizeof(src)), 31.5));
	/* across sockets: the socket link's 10 GB/s (ring-plan's figure) */
	CHECK(near(pn_checkgpu_pair_gbs(PN_PATH_SYS, 0, 63, src, sizeof(src)), PN_PLAN_SYS_GBS));
	CHECK_STR(src, "SYS: socket link 10 GB/s");
	CHECK(near(pn_checkgpu_pair_gbs(PN_PATH_SYS, 0, 4, src, sizeof(src)), 4));
	CHECK(pn_checkgpu_pair_gbs(PN_PATH_PXB, 0, 0, src, sizeof(src)) == 0);
	CHECK_STR(src, "PXB: PCIe rate unknown");
}

TEST(busid_match)
{
	CHECK(pn_checkgpu_busid_eq("0000:18:00.0", "00000000:18:00.0"));
	CHECK(pn_checkgpu_busid_eq("0000:AB:00.1", "0000:ab:00.1"));
	CHECK(!pn_checkgpu_busid_eq("0000:18:00.0", "0000:18:00.1"));
	CHECK(!pn_checkgpu_busid_eq("", "0000:18:00.0"));
	CHECK(!pn_checkgpu_busid_eq("0000:18:00.0x", "0000:18:00.0"));
}

/* n GPUs under one host bridge, each on its own root port; NV nv between all. */
static void topo_gpus(struct pn_topo *t, int n, int nv)
{
	int i, j;

	memset(t, 0, sizeof(*t));
	snprintf(t->host, sizeof(t->host), "node01");
	t->source = "test";
	t->nvlink_source = nv ? "xml" : "";
	t->ngpus = n;
	t->devs = calloc((size_t)n, sizeof(*t->devs));
	t->nnodes = 2 + 2 * n;
	t->nodes = calloc((size_t)t->nnodes, sizeof(*t->nodes));
	t->nvlinks = calloc((size_t)(n * n), sizeof(int));
	t->nodes[0] = (struct pn_tnode){ PN_TN_CPU, -1, 0 };
	t->nodes[1] = (struct pn_tnode){ PN_TN_HOSTBRIDGE, 0, 0 };
	for (i = 0; i < n; i++) {
		t->nodes[2 + 2 * i] = (struct pn_tnode){ PN_TN_BRIDGE, 1, 0 };
		t->nodes[3 + 2 * i] = (struct pn_tnode){ PN_TN_PCI, 2 + 2 * i, 0 };
		snprintf(t->devs[i].name, sizeof(t->devs[i].name), "GPU%d", i);
		snprintf(t->devs[i].pci_busid, sizeof(t->devs[i].pci_busid), "0000:%02x:00.0", i + 1);
		t->devs[i].node = 3 + 2 * i;
		t->devs[i].numa = 0;
		t->devs[i].cpus = (char *)"0-7";
		for (j = 0; j < n; j++)
			t->nvlinks[i * n + j] = i == j ? 0 : nv;
	}
}

static void topo_free(struct pn_topo *t)
{
	free(t->devs);
	free(t->nodes);
	free(t->nvlinks);
}

TEST(predict_nvlink)
{
	struct pn_topo t;
	double bw = 0;
	char src[256] = "";

	/* 8 GPUs, NV18 everywhere: every GPU's 478 GB/s of NVLink is the limit */
	topo_gpus(&t, 8, 18);
	CHECK_EQ_INT(pn_checkgpu_predict(&t, 0, &bw, src, sizeof(src)), 0);
	CHECK(near(bw, 18 * PN_PLAN_NVLINK_GBS));
	CHECK(!strncmp(src, "ring-plan: ", 11) && strstr(src, "NVLink"));
	topo_free(&t);
}

TEST(predict_pcie)
{
	struct pn_topo t;
	double bw = 0, bw2 = 0;
	char src[256] = "";

	/* PCIe only: the PCIe rate given bounds it, half the rate half the busbw */
	topo_gpus(&t, 4, 0);
	CHECK_EQ_INT(pn_checkgpu_predict(&t, 63, &bw, src, sizeof(src)), 0);
	CHECK_EQ_INT(pn_checkgpu_predict(&t, 31.5, &bw2, src, sizeof(src)), 0);
	CHECK(bw > 0 && bw <= 2 * 63 + 1e-9);
	CHECK(near(bw2 * 2, bw));
	topo_free(&t);
}

TEST(predict_needs_two_gpus)
{
	struct pn_topo t;
	double bw = 1;
	char src[256] = "";

	topo_gpus(&t, 1, 0);
	CHECK_EQ_INT(pn_checkgpu_predict(&t, 0, &bw, src, sizeof(src)), -EINVAL);
	CHECK(bw == 0);
	CHECK(strstr(pn_errmsg(-EINVAL), "1 GPU") != NULL);
	topo_free(&t);
}

static int child_ok(void *arg, void *out)
{
	*(int *)out = *(int *)arg * 2;
	return 0;
}

static int child_fails(void *arg, void *out)
{
	(void)arg;
	(void)out;
	return pn_err(-ENODEV, "no such device here");
}

static int child_dies(void *arg, void *out)
{
	(void)arg;
	(void)out;
	abort();
}

static int child_hangs(void *arg, void *out)
{
	(void)arg;
	(void)out;
	for (;;)
		pause();
	return 0;
}

TEST(child_process)
{
	int in = 21, out = 0;

	CHECK_EQ_INT(pn_checkgpu_child(child_ok, &in, &out, sizeof(out), 10, "t"), 0);
	CHECK_EQ_INT(out, 42);
	out = 7;
	CHECK_EQ_INT(pn_checkgpu_child(child_fails, &in, &out, sizeof(out), 10, "t"), -ENODEV);
	CHECK(strstr(pn_errmsg(-ENODEV), "no such device here") != NULL);
	CHECK_EQ_INT(out, 7);
	CHECK_EQ_INT(pn_checkgpu_child(child_dies, &in, &out, sizeof(out), 10, "the test"), -EIO);
	CHECK(strstr(pn_errmsg(-EIO), "the test died of signal 6") != NULL);
	CHECK_EQ_INT(pn_checkgpu_child(child_hangs, &in, &out, sizeof(out), 0.3, "the test"),
		     -ETIMEDOUT);
	CHECK(strstr(pn_errmsg(-ETIMEDOUT), "did not end in 0.3 s") != NULL);
}

int main(void)
{
	RUN(path_device_link);
	RUN(path_uplink_limits);
	RUN(path_unknown);
	RUN(pair_rates);
	RUN(busid_match);
	RUN(predict_nvlink);
	RUN(predict_pcie);
	RUN(predict_needs_two_gpus);
	RUN(child_process);
	return unit_done();
}
