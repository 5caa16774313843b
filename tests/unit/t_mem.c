/* SPDX-License-Identifier: MIT */
/* Planned memory (src/engine/mem.h): the need from the job's parameters, the
 * one-line verdict, the free memory as read through the sysfs root. */
#define _GNU_SOURCE
#include "unit.h"

#include "engine/comm.h"
#include "base/log.h"
#include "engine/mem.h"
#include "engine/nodeseg.h"
#include "node/sysfs.h"
#include "transport/transport.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#define MiB (1ull << 20)
#define GiB (1ull << 30)

static uint64_t pages(uint64_t b)
{
	return (b + 4095) / 4096 * 4096;
}

/* allreduce-test --np 2 -e 64M, host backend: the reproducer */
static struct pn_mem_job job_2x64(void)
{
	struct pn_mem_job j = { .nlocal = 2, .nchannels = 1, .node_segment = 1, .nbufs = 2,
				.buf_bytes = 64 * MiB, .base_bytes = PN_MEM_RANK_BASE };

	return j;
}

TEST(fifo_and_node_sizes)
{
	/* 8 slots of 64 KiB, 64-byte slot headers and a tail line */
	CHECK_EQ_INT(pn_shm_fifo_bytes(), 8 * 65536 + 8 * 64 + 64);
	CHECK_EQ_INT(pn_nodeseg_bytes(2, 0), 4096);
	CHECK_EQ_INT(pn_nodeseg_bytes(2, 1), 4096 + 4 * pn_shm_fifo_bytes());
	CHECK_EQ_INT(pn_nodeseg_bytes(4, 2), 4096 + 32 * pn_shm_fifo_bytes());
}

TEST(plan_two_ranks)
{
	struct pn_mem_job j = job_2x64();
	struct pn_mem_plan p;
	uint64_t fifo = pn_shm_fifo_bytes(), mapped;

	pn_mem_plan(&j, &p);
	CHECK_EQ_INT(p.node_shm, pages(pn_nodeseg_bytes(2, 1)));
	CHECK_EQ_INT(p.rank_shm, 128 * MiB);
	CHECK_EQ_INT(p.shm, p.node_shm + 256 * MiB);
	mapped = 2 * 128 * MiB + 2 * 2 * 1 * fifo;
	CHECK_EQ_INT(p.rank_private, PN_MEM_RANK_BASE + mapped / 512);
	CHECK_EQ_INT(p.total, p.shm + 2 * p.rank_private);

	/* ranks that exist already cost no base */
	j.base_bytes = 0;
	pn_mem_plan(&j, &p);
	CHECK_EQ_INT(p.rank_private, mapped / 512);
}

TEST(plan_parts)
{
	struct pn_mem_job j = { .nlocal = 4, .nremote = 3, .nchannels = 2, .node_segment = 1,
				.nbufs = 2, .buf_bytes = 1000, .scratch_bytes = 1000,
				.private_bytes = 5 };
	struct pn_mem_plan p;
	uint64_t fifo = pn_shm_fifo_bytes();

	pn_mem_plan(&j, &p);
	/* buffers are whole pages; remote peers cost a FIFO each way per channel */
	CHECK_EQ_INT(p.rank_shm, 2 * 4096);
	CHECK_EQ_INT(p.node_shm, pages(pn_nodeseg_bytes(4, 2)));
	CHECK_EQ_INT(p.shm, p.node_shm + 4 * 8192);
	CHECK_EQ_INT(p.rank_private, 1000 + 5 + 2 * 3 * 2 * (8 * 65536) +
				     (4 * 8192 + 2 * 4 * 2 * fifo) / 512);
	/* a zero-byte buffer still maps a page; no buffers, no node segment: nothing shared */
	j.buf_bytes = 0;
	pn_mem_plan(&j, &p);
	CHECK_EQ_INT(p.rank_shm, 2 * 4096);
	j.nbufs = 0;
	j.node_segment = 0;
	pn_mem_plan(&j, &p);
	CHECK_EQ_INT(p.shm, 0);
	CHECK_EQ_INT(p.total, 4 * p.rank_private);
}

TEST(plan_saturates)
{
	struct pn_mem_job j = job_2x64();
	struct pn_mem_plan p;
	struct pn_mem_free f = { .mem_avail = UINT64_MAX - 1, .shm_free = UINT64_MAX - 1,
				 .have_mem = 1, .have_shm = 1 };

	j.buf_bytes = UINT64_MAX;
	pn_mem_plan(&j, &p);
	CHECK(p.rank_shm == UINT64_MAX && p.shm == UINT64_MAX && p.total == UINT64_MAX);
	CHECK(pn_mem_fits(&j, &p, &f) == -ENOSPC);
	j = job_2x64();
	j.nlocal = 2147483647;
	j.nchannels = 2147483647;
	pn_mem_plan(&j, &p);
	CHECK(p.node_shm == UINT64_MAX && p.total == UINT64_MAX);
	j = job_2x64();
	j.scratch_bytes = UINT64_MAX - 5;
	j.private_bytes = 10;
	pn_mem_plan(&j, &p);
	CHECK(p.rank_private == UINT64_MAX && p.total == UINT64_MAX);
}

TEST(fmt)
{
	char b[32];

	CHECK_STR(pn_mem_fmt(b, sizeof(b), 0, 1), "0 B");
	CHECK_STR(pn_mem_fmt(b, sizeof(b), 1023, 1), "1023 B");
	CHECK_STR(pn_mem_fmt(b, sizeof(b), 1024, 1), "1 KiB");
	CHECK_STR(pn_mem_fmt(b, sizeof(b), 1536, 0), "1.5 KiB");
	CHECK_STR(pn_mem_fmt(b, sizeof(b), 64 * MiB, 1), "64 MiB");
	CHECK_STR(pn_mem_fmt(b, sizeof(b), 64 * MiB + 1, 1), "65 MiB");
	CHECK_STR(pn_mem_fmt(b, sizeof(b), 64 * MiB + 1, 0), "64 MiB");
	CHECK_STR(pn_mem_fmt(b, sizeof(b), 2 * MiB + 8192, 1), "2.1 MiB");
	CHECK_STR(pn_mem_fmt(b, sizeof(b), 2 * MiB + 8192, 0), "2.0 MiB");
	CHECK_STR(pn_mem_fmt(b, sizeof(b), 10 * GiB - 1, 1), "10.0 GiB");
	CHECK_STR(pn_mem_fmt(b, sizeof(b), 1ull << 40, 1), "1 TiB");
	CHECK_STR(pn_mem_fmt(b, sizeof(b), UINT64_MAX, 1), "16 EiB");
	CHECK_STR(pn_mem_fmt(b, sizeof(b), UINT64_MAX, 0), "15 EiB");
}

/* The line: 2 ranks with 64 MiB buffers on Docker's 64 MB /dev/shm. */
TEST(verdict_shm)
{
	struct pn_mem_job j = job_2x64();
	struct pn_mem_plan p;
	struct pn_mem_free f = { .mem_avail = 20 * GiB, .shm_free = 64 * MiB, .have_mem = 1,
				 .have_shm = 1 };

	pn_mem_plan(&j, &p);
	CHECK(pn_mem_fits(&j, &p, &f) == -ENOSPC);
	CHECK_STR(pn_errmsg(-ENOSPC), "2 ranks x 2 buffers of 64 MiB need 259 MiB in /dev/shm "
				       "(with 2.1 MiB of FIFOs), 64 MiB free");
	f.shm_free = p.shm;
	CHECK_EQ_INT(pn_mem_fits(&j, &p, &f), 0);
	f.shm_free = p.shm - 1;
	CHECK(pn_mem_fits(&j, &p, &f) == -ENOSPC);
	/* unknown: not checked */
	f.have_shm = 0;
	CHECK_EQ_INT(pn_mem_fits(&j, &p, &f), 0);

	/* -e 1T in one process */
	j.nlocal = 1;
	j.buf_bytes = 1ull << 40;
	f.have_shm = 1;
	f.shm_free = 12 * GiB;
	pn_mem_plan(&j, &p);
	CHECK(pn_mem_fits(&j, &p, &f) == -ENOSPC);
	CHECK_STR(pn_errmsg(-ENOSPC), "1 rank x 2 buffers of 1 TiB need 2.1 TiB in /dev/shm "
				       "(with 520 KiB of FIFOs), 12 GiB free");

	/* no buffers (GPU backends): the FIFOs alone */
	j = job_2x64();
	j.nlocal = 512;
	j.nbufs = 0;
	pn_mem_plan(&j, &p);
	CHECK(pn_mem_fits(&j, &p, &f) == -ENOSPC);
	CHECK_STR(pn_errmsg(-ENOSPC), "512 ranks need 129 GiB of FIFOs in /dev/shm, 12 GiB free");
}

TEST(verdict_memory)
{
	struct pn_mem_job j = { .nlocal = 16, .private_bytes = 2 * GiB,
				.base_bytes = PN_MEM_RANK_BASE };
	struct pn_mem_plan p;
	struct pn_mem_free f = { .mem_avail = 23 * GiB, .shm_free = 23 * GiB, .have_mem = 1,
				 .have_shm = 1 };

	/* penny bw --np 16 -s 1G: no shared memory, 2 GiB and the base per rank */
	pn_mem_plan(&j, &p);
	CHECK_EQ_INT(p.total, 16 * (2 * GiB + PN_MEM_RANK_BASE));
	CHECK(pn_mem_fits(&j, &p, &f) == -ENOMEM);
	CHECK_STR(pn_errmsg(-ENOMEM), "16 ranks x 2.1 GiB need 33 GiB of memory, 23 GiB available");
	j.nlocal = 8;
	pn_mem_plan(&j, &p);
	CHECK_EQ_INT(pn_mem_fits(&j, &p, &f), 0);

	/* shared memory counts against memory too */
	j = job_2x64();
	f.mem_avail = 200 * MiB;
	pn_mem_plan(&j, &p);
	CHECK(pn_mem_fits(&j, &p, &f) == -ENOMEM);
	CHECK_STR(pn_errmsg(-ENOMEM), "2 ranks x 8.6 MiB and 259 MiB in /dev/shm need 276 MiB of "
				       "memory, 200 MiB available");
	f.have_mem = 0;
	CHECK_EQ_INT(pn_mem_fits(&j, &p, &f), 0);
}

/* The library reads no knob: PENNY_MEM_CHECK=0 is the command's to honour
 * (it does not call pn_mem_check). */
TEST(check_ignores_the_environment)
{
	struct pn_mem_job j = job_2x64();

	j.buf_bytes = UINT64_MAX;
	CHECK(pn_mem_check(&j) == -ENOSPC);
	setenv("PENNY_MEM_CHECK", "0", 1);
	CHECK(pn_mem_check(&j) == -ENOSPC);
	unsetenv("PENNY_MEM_CHECK");
}

/* MemAvailable comes through the sysfs root (captured trees, tests). */
TEST(free_through_sysfs_root)
{
	char dir[] = "/tmp/penny-t-mem.XXXXXX", path[256];
	struct pn_mem_free f;
	FILE *fp;

	CHECK(mkdtemp(dir) != NULL);
	snprintf(path, sizeof(path), "%s/proc", dir);
	CHECK(mkdir(path, 0755) == 0);
	snprintf(path, sizeof(path), "%s/proc/meminfo", dir);
	fp = fopen(path, "w");
	CHECK(fp != NULL);
	if (!fp)
		return;
	fprintf(fp, "MemTotal:       24684100 kB\nMemFree:        23000000 kB\n"
		    "MemAvailable:      32768 kB\nBuffers:            1000 kB\n");
	fclose(fp);
	CHECK_EQ_INT(pn_sysfs_set_root(dir), 0);
	pn_mem_free_read(&f);
	CHECK(f.have_mem && f.mem_avail == 32 * MiB);
	CHECK(f.have_shm);
	/* no MemAvailable line: unknown, not zero */
	fp = fopen(path, "w");
	if (fp) {
		fprintf(fp, "MemTotal:       24684100 kB\n");
		fclose(fp);
	}
	pn_mem_free_read(&f);
	CHECK(!f.have_mem);
	unlink(path);
	snprintf(path, sizeof(path), "%s/proc", dir);
	rmdir(path);
	rmdir(dir);
	pn_sysfs_set_root(NULL);
	pn_mem_free_read(&f);
	CHECK(f.have_mem && f.mem_avail > 0);
}

int main(void)
{
	RUN(fifo_and_node_sizes);
	RUN(plan_two_ranks);
	RUN(plan_parts);
	RUN(plan_saturates);
	RUN(fmt);
	RUN(verdict_shm);
	RUN(verdict_memory);
	RUN(check_ignores_the_environment);
	RUN(free_through_sysfs_root);
	return unit_done();
}
