/* SPDX-License-Identifier: MIT */
/*
 * Planned memory: what the ranks of a job will hold on one host, computed
 * from the job's parameters before anything is started or mapped, and
 * checked against what the host has (MemAvailable from /proc/meminfo through
 * the sysfs root, the free space of /dev/shm).  A job that cannot fit fails
 * with one line naming the need and what is free, instead of a SIGBUS on a
 * full /dev/shm or the OOM killer.
 */
#ifndef PENNY_MEM_H
#define PENNY_MEM_H

#include <stdint.h>

/*
 * What one rank costs before it does anything: measured VmRSS of an
 * allreduce-test rank at small sizes is 3.0-3.5 MiB (of it 0.3 MiB
 * anonymous, the rest shared pages of the binary and libraries), and
 * MemAvailable drops by about 0.35 MiB per rank at --np 64; this is more
 * than twice the whole RSS, for kernel structures, page tables and the
 * RDMA libraries' contexts.  Counted only for processes not started yet.
 */
#define PN_MEM_RANK_BASE (8ull << 20)

/* One host's part of a job. */
struct pn_mem_job {
	int nlocal;		/* ranks on this host (>= 1) */
	int nremote;		/* ranks on other hosts: a FIFO pair per channel each (tcp, verbs) */
	int nchannels;		/* FIFO channels per pair of ranks (>= 1) */
	int node_segment;	/* the communicator's node segment in /dev/shm (comm.h) */
	int nbufs;		/* registered buffers per rank in /dev/shm (pn_nodeseg_alloc) */
	uint64_t buf_bytes;	/* size of each */
	uint64_t scratch_bytes;	/* private scratch per rank (one-shot in place) */
	uint64_t private_bytes;	/* other private buffers per rank (bw: 2 x -s per rail) */
	uint64_t base_bytes;	/* per rank not started yet: PN_MEM_RANK_BASE; else 0 */
};

/* The need (bytes; UINT64_MAX when it does not fit in 64 bits). */
struct pn_mem_plan {
	uint64_t node_shm;	/* node segment: header, barrier flags, nlocal^2 x nchannels FIFOs */
	uint64_t rank_shm;	/* one rank's registered buffers, whole pages */
	uint64_t shm;		/* this host's /dev/shm: node_shm + nlocal x rank_shm */
	uint64_t rank_private;	/* one rank: base + scratch + private + remote FIFOs + page tables */
	uint64_t total;		/* this host's memory: shm + nlocal x rank_private */
};

/* Pure: the plan of one host's part of a job. */
void pn_mem_plan(const struct pn_mem_job *j, struct pn_mem_plan *p);

/* What the host has now. */
struct pn_mem_free {
	uint64_t mem_avail;	/* MemAvailable */
	uint64_t shm_free;	/* /dev/shm, bytes an unprivileged writer may take */
	int have_mem, have_shm;	/* 0: unknown (not checked) */
};

/* /proc/meminfo through the sysfs root (sysfs.h), statvfs of /dev/shm. */
void pn_mem_free_read(struct pn_mem_free *f);

/*
 * Pure: 0 when the plan fits, else -ENOSPC (/dev/shm) or -ENOMEM (memory)
 * with a one-line message, like "2 ranks x 2 buffers of 64 MiB need 258 MiB
 * in /dev/shm (with 2.0 MiB of FIFOs), 64 MiB free".
 */
int pn_mem_fits(const struct pn_mem_job *j, const struct pn_mem_plan *p,
		const struct pn_mem_free *f);

/* pn_mem_plan, pn_mem_free_read and pn_mem_fits (PENNY_MEM_CHECK=0 makes
 * the command skip it). */
int pn_mem_check(const struct pn_mem_job *j);

/* "64 MiB", "2.0 MiB", "1.5 TiB": rounded up (need) or down (free). */
const char *pn_mem_fmt(char *buf, unsigned long len, uint64_t bytes, int round_up);

#endif
