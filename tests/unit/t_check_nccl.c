/* SPDX-License-Identifier: MIT */
/*
 * The nccl-path check (src/harness/check_nccl.c) on a hand-made topology:
 * SHM between two GPUs that NVLink connects FAILs, SHM between GPUs without
 * NVLink PASSes; CUDA device indices (through each rank's marked
 * CUDA_VISIBLE_DEVICES) and bus ids name the GPUs.  (The CLI
 * test t0845 covers what sysfs trees can hold: sockets, GDRDMA.)
 */
#define _GNU_SOURCE
#include "unit.h"

#include "base/verdict.h"
#include "harness/check.h"
#include "harness/check_cfg.h"
#include "node/topo.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const struct pn_verdict_result *find(const struct pn_check *c, const char *target)
{
	int i;

	for (i = 0; i < pn_verdict_n(c->results); i++)
		if (!strcmp(pn_verdict_at(c->results, i)->target, target))
			return pn_verdict_at(c->results, i);
	return NULL;
}

static void run(const char *log, int *nvlinks, struct pn_check *c)
{
	static struct pn_topo_dev devs[3];
	static struct pn_topo t;
	char path[] = "/tmp/t_check_nccl.XXXXXX";
	int fd = mkstemp(path);

	CHECK(fd >= 0);
	CHECK(write(fd, log, strlen(log)) == (ssize_t)strlen(log));
	close(fd);
	memset(&t, 0, sizeof(t));
	memset(devs, 0, sizeof(devs));
	snprintf(t.host, sizeof(t.host), "h");
	t.ngpus = 3;
	t.devs = devs;
	t.nvlinks = nvlinks;
	snprintf(devs[0].name, sizeof(devs[0].name), "GPU0");
	snprintf(devs[0].pci_busid, sizeof(devs[0].pci_busid), "0000:18:00.0");
	snprintf(devs[1].name, sizeof(devs[1].name), "GPU1");
	snprintf(devs[1].pci_busid, sizeof(devs[1].pci_busid), "0000:2a:00.0");
	snprintf(devs[2].name, sizeof(devs[2].name), "GPU2");
	snprintf(devs[2].pci_busid, sizeof(devs[2].pci_busid), "0000:9a:00.0");
	devs[0].node = devs[1].node = devs[2].node = -1;
	pn_check_init(c);
	c->topo = &t;
	c->nccl_log = path;
	snprintf(c->node, sizeof(c->node), "h");
	c->results = pn_verdict_list_new();
	CHECK_EQ_INT(pn_check_ncclpath(c), 0);
	unlink(path);
}

TEST(shm_over_nvlink)
{
	/* GPU0-GPU1 by 18 NVLinks, GPU2 by none */
	int nv[9] = { 0, 18, 0, 18, 0, 0, 0, 0, 0 };
	const struct pn_verdict_result *r;
	struct pn_check c;

	run("h:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via SHM/direct/direct\n"
	    "h:1:1 [1] NCCL INFO Channel 00/0 : 1[1] -> 2[2] via SHM/direct/direct\n"
	    "h:1:1 [1] NCCL INFO Channel 01/0 : 1[2a000] -> 0[18000] via SHM/direct/direct\n"
	    "h:1:1 [1] NCCL INFO Channel 02/0 : 1[1] -> 0[0] via P2P/CUMEM/read\n", nv, &c);
	r = find(&c, "ch00/0 0->1");
	CHECK(r && r->verdict == PN_FAIL);
	if (r) {
		CHECK(strstr(r->detail, "SHM between GPU0 and GPU1, which NV18 connects") != NULL);
		CHECK_STR(r->expected.text, "P2P");
	}
	r = find(&c, "ch00/0 1->2");
	CHECK(r && r->verdict == PN_PASS);
	r = find(&c, "ch01/0 1->0");	/* bus ids of NCCL before 2.19 */
	CHECK(r && r->verdict == PN_FAIL);
	r = find(&c, "ch02/0 1->0");
	CHECK(r && r->verdict == PN_PASS);
	/* the four channels and the versions row every nccl-path run adds */
	CHECK(find(&c, "versions") != NULL);
	CHECK_EQ_INT(pn_verdict_n(c.results), 5);
	pn_verdict_list_free(c.results);
}

TEST(no_nvlink_info)
{
	const struct pn_verdict_result *r;
	struct pn_check c;

	run("h:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via SHM/direct/direct\n", NULL, &c);
	r = find(&c, "ch00/0 0->1");
	CHECK(r && r->verdict == PN_PASS);
	pn_verdict_list_free(c.results);
}

/* The row of target has verdict v and its detail holds det. */
static void expect(const struct pn_check *c, const char *target, enum pn_verdict v,
		   const char *det)
{
	const struct pn_verdict_result *r = find(c, target);

	CHECK(r && r->verdict == v);
	CHECK(r && strstr(r->detail, det) != NULL);
	if (r && (r->verdict != v || !strstr(r->detail, det)))
		fprintf(stderr, "# %s: %d %s\n", target, r->verdict, r->detail);
}

/* Each rank's device index through the CUDA_VISIBLE_DEVICES penny marked
 * before its lines: its own and, for SHM, its peer's from the peer's lines. */
TEST(cuda_visible_devices)
{
	/* GPU1-GPU2 by 18 NVLinks */
	int nv[9] = { 0, 0, 0, 0, 0, 18, 0, 18, 0 };
	struct pn_check c;

	run("penny: CUDA_VISIBLE_DEVICES=2\n"
	    "h:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via SHM/direct/direct\n"
	    "penny: CUDA_VISIBLE_DEVICES=0,1\n"
	    "h:2:2 [1] NCCL INFO Channel 00/0 : 1[1] -> 2[0] via SHM/direct/direct\n"
	    "penny: CUDA_VISIBLE_DEVICES=0\n"
	    "h:3:3 [0] NCCL INFO Channel 00/0 : 2[0] -> 3[0] via SHM/direct/direct\n"
	    "penny: CUDA_VISIBLE_DEVICES=MIG-4f3b5e2a\n"
	    "h:4:4 [0] NCCL INFO Channel 00/0 : 3[0] -> 0[0] via SHM/direct/direct\n"
	    "penny: CUDA_VISIBLE_DEVICES unset\n"
	    "h:5:5 [2] NCCL INFO Channel 00/0 : 4[2] -> 1[1] via SHM/direct/direct\n"
	    "h:5:5 [2] NCCL INFO Channel 01/0 : 4[2] -> 9[1] via SHM/direct/direct\n", nv, &c);
	/* rank 0 (GPU2) to rank 1 (its device 1 of 0,1: GPU1), over NVLink */
	expect(&c, "ch00/0 0->1", PN_FAIL, "SHM between GPU2 and GPU1, which NV18 connects");
	/* rank 1 (GPU1) to rank 2 (GPU0): no NVLink */
	expect(&c, "ch00/0 1->2", PN_PASS, "");
	/* rank 2 to rank 3, whose MIG instance penny cannot place, and rank 3's own */
	expect(&c, "ch00/0 2->3", PN_SKIP, "rank 3's GPU is unknown: CUDA device 0 of "
	       "CUDA_VISIBLE_DEVICES=MIG-4f3b5e2a: MIG-4f3b5e2a is a MIG instance");
	expect(&c, "ch00/0 3->0", PN_SKIP, "rank 3's GPU is unknown");
	/* unset: the index is the GPU (GPU2), rank 1's device 1 is GPU1 */
	expect(&c, "ch00/0 4->1", PN_FAIL, "SHM between GPU2 and GPU1");
	/* a peer whose lines are not in the log: no guess */
	expect(&c, "ch01/0 4->9", PN_SKIP, "rank 9's GPU is unknown: its CUDA_VISIBLE_DEVICES is "
	       "not in the log");
	pn_verdict_list_free(c.results);
}

int main(void)
{
	RUN(shm_over_nvlink);
	RUN(cuda_visible_devices);
	RUN(no_nvlink_info);
	return unit_done();
}
