/* SPDX-License-Identifier: MIT */
/*
 * The nccl-path check (src/check/check_nccl.c) on a hand-made topology:
 * SHM between two GPUs that NVLink connects FAILs, SHM between GPUs without
 * NVLink PASSes; CUDA device indices and bus ids name the GPUs.  (The CLI
 * test t0845 covers what sysfs trees can hold: sockets, GDRDMA.)
 */
#define _GNU_SOURCE
#include "unit.h"

#include "base/verdict.h"
#include "check/check.h"
#include "check/check_nccl.h"
#include "check/check_row.h"
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

/* --nccl-log is read before any check runs: refused then, or kept for nccl-path */
TEST(log_read_up_front)
{
	const char *log = "h:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via SHM/direct/direct\n";
	char path[] = "/tmp/t_check_nccl.XXXXXX";
	int fd = mkstemp(path);
	struct pn_check c;

	CHECK(fd >= 0);
	CHECK(write(fd, log, strlen(log)) == (ssize_t)strlen(log));
	close(fd);
	pn_check_init(&c);
	CHECK_EQ_INT(pn_check_ncclpath_load(&c), 0);	/* none given */
	c.nccl_log = "/";
	CHECK(pn_check_ncclpath_load(&c) < 0);
	CHECK(c.nccl_text == NULL);
	c.nccl_log = path;
	CHECK_EQ_INT(pn_check_ncclpath_load(&c), 0);
	unlink(path);
	CHECK(c.nccl_text && c.nccl_len == strlen(log) && !memcmp(c.nccl_text, log, c.nccl_len));
	pn_check_release(&c);
	CHECK(c.nccl_text == NULL);
}

int main(void)
{
	RUN(shm_over_nvlink);
	RUN(no_nvlink_info);
	RUN(log_read_up_front);
	return unit_done();
}
