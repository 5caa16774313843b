/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
#include "engine/mem.h"
#include "engine/comm.h"
#include "engine/nodeseg.h"
#include "base/log.h"
#include "node/sysfs.h"
#include "transport/transport.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>

/* Saturating: a need that does not fit in 64 bits never fits a host. */
static uint64_t add(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

static uint64_t mul(uint64_t a, uint64_t b)
{
	return a && b > UINT64_MAX / a ? UINT64_MAX : a * b;
}

static uint64_t pages(uint64_t bytes)
{
	return bytes > UINT64_MAX - 4095 ? UINT64_MAX : (bytes + 4095) / 4096 * 4096;
}

void pn_mem_plan(const struct pn_mem_job *j, struct pn_mem_plan *p)
{
	uint64_t nl = j->nlocal > 0 ? (uint64_t)j->nlocal : 1;
	uint64_t nr = j->nremote > 0 ? (uint64_t)j->nremote : 0;
	uint64_t nc = j->nchannels > 0 ? (uint64_t)j->nchannels : 1;
	uint64_t fifo = pn_shm_fifo_bytes(), mapped;

	memset(p, 0, sizeof(*p));
	/* pn_nodeseg_bytes' sum, saturating: nothing bounds the counts here */
	if (j->node_segment)
		p->node_shm = pages(add(pn_nodeseg_bytes((int)nl, 0), mul(mul(nl * nl, nc), fifo)));
	/* a zero-byte buffer still maps one page */
	p->rank_shm = j->nbufs > 0 ? mul((uint64_t)j->nbufs, pages(j->buf_bytes ? j->buf_bytes : 1))
				   : 0;
	p->shm = add(p->node_shm, mul(nl, p->rank_shm));
	/*
	 * Private memory of one rank: the base, scratch and other buffers, a
	 * FIFO each way per remote peer and channel (tcp's send and receive
	 * buffers, verbs' ring and staging), and the page tables of what it may
	 * touch: every local rank's registered buffers (direct algorithms load
	 * peers' data) and its own FIFOs both ways (8 bytes per 4 KiB page).
	 */
	mapped = mul(nl, p->rank_shm);
	if (j->node_segment)
		mapped = add(mapped, mul(mul(2, nl), mul(nc, fifo)));
	p->rank_private = add(add(j->base_bytes, j->scratch_bytes), j->private_bytes);
	p->rank_private = add(p->rank_private,
			      mul(mul(2, nr), mul(nc, (uint64_t)PN_FIFO_SLOTS * PN_FIFO_SLOT_BYTES)));
	p->rank_private = add(p->rank_private, mapped / 512);
	p->total = add(p->shm, mul(nl, p->rank_private));
}

const char *pn_mem_fmt(char *buf, unsigned long len, uint64_t bytes, int round_up)
{
	static const char *units[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
	uint64_t unit = 1, whole, rem, tenths;
	unsigned u = 0;

	while (u + 1 < sizeof(units) / sizeof(units[0]) && bytes / unit >= 1024) {
		unit <<= 10;
		u++;
	}
	whole = bytes / unit;
	rem = bytes % unit;
	if (!rem) {
		snprintf(buf, len, "%llu %s", (unsigned long long)whole, units[u]);
		return buf;
	}
	if (whole >= 10) {
		snprintf(buf, len, "%llu %s", (unsigned long long)(whole + (round_up ? 1 : 0)),
			 units[u]);
		return buf;
	}
	/* rem < unit <= 2^60: rem * 10 cannot overflow */
	tenths = rem * 10 / unit;
	if (round_up && rem * 10 % unit)
		tenths++;
	if (tenths == 10) {
		whole++;
		tenths = 0;
	}
	snprintf(buf, len, "%llu.%llu %s", (unsigned long long)whole, (unsigned long long)tenths,
		 units[u]);
	return buf;
}

void pn_mem_free_read(struct pn_mem_free *f)
{
	char buf[8192], *s;
	unsigned long long kb;
	struct statvfs sv;

	memset(f, 0, sizeof(*f));
	if (pn_sys_read(buf, sizeof(buf), "/proc/meminfo") > 0 &&
	    (s = strstr(buf, "MemAvailable:")) && sscanf(s + 13, "%llu kB", &kb) == 1) {
		f->mem_avail = mul(kb, 1024);
		f->have_mem = 1;
	}
	if (!statvfs("/dev/shm", &sv)) {
		f->shm_free = mul(sv.f_bavail, sv.f_frsize);
		f->have_shm = 1;
	}
}

int pn_mem_fits(const struct pn_mem_job *j, const struct pn_mem_plan *p,
		const struct pn_mem_free *f)
{
	char need[32], have[32], each[32], fifos[32], shm[32];
	int n = j->nlocal > 0 ? j->nlocal : 1;

	if (f->have_shm && p->shm > f->shm_free) {
		pn_mem_fmt(need, sizeof(need), p->shm, 1);
		pn_mem_fmt(have, sizeof(have), f->shm_free, 0);
		pn_mem_fmt(fifos, sizeof(fifos), p->node_shm, 1);
		if (!p->rank_shm)
			return pn_err(-ENOSPC, "%d rank%s need %s of FIFOs in /dev/shm, %s free", n,
				      n == 1 ? "" : "s", need, have);
		pn_mem_fmt(each, sizeof(each), j->buf_bytes, 1);
		return pn_err(-ENOSPC, "%d rank%s x %d buffer%s of %s need %s in /dev/shm (with %s of "
			      "FIFOs), %s free", n, n == 1 ? "" : "s", j->nbufs, j->nbufs == 1 ? "" : "s",
			      each, need, fifos, have);
	}
	if (f->have_mem && p->total > f->mem_avail) {
		pn_mem_fmt(need, sizeof(need), p->total, 1);
		pn_mem_fmt(have, sizeof(have), f->mem_avail, 0);
		pn_mem_fmt(each, sizeof(each), p->rank_private, 1);
		if (!p->shm)
			return pn_err(-ENOMEM, "%d rank%s x %s need %s of memory, %s available", n,
				      n == 1 ? "" : "s", each, need, have);
		pn_mem_fmt(shm, sizeof(shm), p->shm, 1);
		return pn_err(-ENOMEM, "%d rank%s x %s and %s in /dev/shm need %s of memory, %s "
			      "available", n, n == 1 ? "" : "s", each, shm, need, have);
	}
	return 0;
}

int pn_mem_check(const struct pn_mem_job *j)
{
	struct pn_mem_plan p;
	struct pn_mem_free f;

	pn_mem_plan(j, &p);
	pn_mem_free_read(&f);
	PN_DBG(PN_LOG_SHM, "planned memory of %d local rank%s: %llu bytes in /dev/shm (%llu free), "
	       "%llu in all (%llu available)", j->nlocal, j->nlocal == 1 ? "" : "s",
	       (unsigned long long)p.shm, (unsigned long long)f.shm_free,
	       (unsigned long long)p.total, (unsigned long long)f.mem_avail);
	return pn_mem_fits(j, &p, &f);
}
