/* SPDX-License-Identifier: MIT */
/*
 * The node segment: one shared memory segment per host (abort notice, a
 * barrier flag per local rank, then the shm transport's FIFOs), created by
 * local rank 0, mapped by all, unlinked as soon as everyone has mapped it
 * (so a crash leaves nothing behind); and the registered buffers that local
 * peers map.  Flags are busy-polled with acquire/release atomics: no system
 * call on the hot path.
 */
#define _GNU_SOURCE
#include "engine/nodeseg.h"
#include "engine/comm.h"
#include "base/log.h"
#include "base/util.h"
#include "transport/transport.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define CL 64

struct bar {
	_Atomic uint64_t epoch;
	/* what the rank waits for (a global rank, -1 none) and when it last said so (ms) */
	_Atomic int32_t waiting_for;
	_Atomic uint32_t wait_ms;
	char pad[CL - 16];
};

struct node_hdr {
	_Atomic uint32_t abort_state; /* 0 none, 1 being written, 2 set */
	int32_t abort_rank;
	char abort_msg[256 - 8];
	/* then struct bar[local_size], then the FIFOs */
};

struct pn_nodeseg {
	void *base;
	size_t size;
	struct node_hdr *hdr;
	struct bar *bar;
	int nlocal, nchan;
	uint64_t reg_serial;
};

static size_t node_size(int nlocal, int nchan)
{
	return PN_ALIGN_UP(sizeof(struct node_hdr) + sizeof(struct bar) * (size_t)nlocal, 4096) +
	       (size_t)pn_shm_fifo_bytes() * (size_t)nlocal * (size_t)nlocal * (size_t)nchan;
}

uint64_t pn_nodeseg_bytes(int nlocal, int nchan)
{
	return node_size(nlocal, nchan);
}

static void shm_name(char *buf, size_t len, const struct pn_comm *c, const char *what, int a,
		     uint64_t b)
{
	const uint8_t *k = pn_boot_cookie(c->boot);

	snprintf(buf, len, "/penny-%02x%02x%02x%02x%02x%02x%02x%02x-%s-%d-%llu", k[0], k[1], k[2],
		 k[3], k[4], k[5], k[6], k[7], what, a, (unsigned long long)b);
}

/*
 * Create (creator) or open a segment; map it.  The creator reserves every
 * page now (posix_fallocate), so a full /dev/shm is this error and not a
 * SIGBUS when a page is first touched; on any failure after shm_open the
 * creator unlinks the name, so nothing is left behind.
 */
static int seg_map(const char *name, size_t size, int create, void **out)
{
	int fd, e;
	void *p;

	if (create) {
		fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
		if (fd < 0 && errno == EEXIST) { /* stale from a killed job */
			shm_unlink(name);
			fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
		}
		if (fd >= 0) {
			do
				e = posix_fallocate(fd, 0, (off_t)size);
			while (e == EINTR);
			if (e) {
				close(fd);
				shm_unlink(name);
				return pn_err(-e, "cannot reserve %zu bytes of shared memory for '%s' "
					      "in /dev/shm: %s", size, name, strerror(e));
			}
		}
	} else {
		fd = shm_open(name, O_RDWR, 0600);
	}
	if (fd < 0)
		return pn_err(-errno, "cannot %s shared memory '%s': %s", create ? "create" : "open",
			      name, strerror(errno));
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	e = errno;
	close(fd);
	if (p == MAP_FAILED) {
		if (create)
			shm_unlink(name);
		return pn_err(-e, "cannot map shared memory '%s' (%zu bytes): %s", name, size,
			      strerror(e));
	}
	*out = p;
	return 0;
}

/* Node segment: called by pn_comm_init for every rank (collective). */
int pn_nodeseg_init(struct pn_comm *c)
{
	struct pn_nodeseg *s = calloc(1, sizeof(*s));
	char name[128];
	int ret, ret2, ok;

	if (!s)
		return pn_err(-ENOMEM, "out of memory");
	s->nlocal = c->local_size;
	s->nchan = c->nchannels;
	s->size = node_size(s->nlocal, s->nchan);
	shm_name(name, sizeof(name), c, "node", c->node, 0);
	ret = 0;
	if (c->local_rank == 0)
		ret = seg_map(name, s->size, 1, &s->base);
	ret2 = pn_boot_agree(c->boot, ret == 0, &ok);
	if (!ret && !ret2 && ok && c->local_rank != 0)
		ret = seg_map(name, s->size, 0, &s->base);
	ret2 = ret2 ? ret2 : pn_boot_agree(c->boot, ret == 0, &ok);
	if (c->local_rank == 0 && s->base)
		shm_unlink(name);
	if (ret || ret2 || !ok) {
		if (s->base)
			munmap(s->base, s->size);
		free(s);
		if (ret || ret2)
			return ret ? ret : ret2;
		return pn_err(-EIO, "another rank on this host could not set up shared memory");
	}
	s->hdr = s->base;
	s->bar = (struct bar *)((char *)s->base + sizeof(struct node_hdr));
	c->node_fifos = (char *)s->base +
		   PN_ALIGN_UP(sizeof(struct node_hdr) + sizeof(struct bar) * (size_t)s->nlocal, 4096);
	c->seg = s;
	return 0;
}

void pn_nodeseg_free(struct pn_comm *c)
{
	if (!c->seg)
		return;
	munmap(c->seg->base, c->seg->size);
	free(c->seg);
	c->seg = NULL;
	c->node_fifos = NULL;
}

/* Abort notice shared by the ranks of this host. */
void pn_nodeseg_set_abort(struct pn_comm *c, int rank, const char *why)
{
	uint32_t zero = 0;
	struct node_hdr *h;

	if (!c->seg)
		return;
	h = c->seg->hdr;
	if (!atomic_compare_exchange_strong(&h->abort_state, &zero, 1))
		return;
	h->abort_rank = rank;
	snprintf(h->abort_msg, sizeof(h->abort_msg), "%s", why);
	atomic_store_explicit(&h->abort_state, 2, memory_order_release);
}

int pn_nodeseg_get_abort(struct pn_comm *c, char *buf, size_t len)
{
	struct node_hdr *h;

	if (!c->seg)
		return 0;
	h = c->seg->hdr;
	if (atomic_load_explicit(&h->abort_state, memory_order_acquire) != 2)
		return 0;
	snprintf(buf, len, "%s", h->abort_msg);
	return 1;
}

uint64_t pn_nodeseg_arrive(struct pn_comm *c)
{
	uint64_t e = ++c->barrier_epoch;

	atomic_store_explicit(&c->seg->bar[c->local_rank].epoch, e, memory_order_release);
	return e;
}

int pn_nodeseg_arrived(const struct pn_comm *c, int i, uint64_t epoch)
{
	return atomic_load_explicit(&c->seg->bar[i].epoch, memory_order_acquire) >= epoch;
}

static uint32_t ms_of(double now)
{
	return (uint32_t)(uint64_t)(now * 1e3);
}

void pn_nodeseg_set_waiting(struct pn_comm *c, int waiting_for, double now)
{
	struct bar *b;

	if (!c->seg)
		return;
	b = &c->seg->bar[c->local_rank];
	atomic_store_explicit(&b->waiting_for, waiting_for, memory_order_relaxed);
	atomic_store_explicit(&b->wait_ms, ms_of(now), memory_order_release);
}

int pn_nodeseg_waiting(const struct pn_comm *c, int i, double now)
{
	struct bar *b;
	uint32_t said;

	if (!c->seg || i < 0 || i >= c->seg->nlocal)
		return -1;
	b = &c->seg->bar[i];
	said = atomic_load_explicit(&b->wait_ms, memory_order_acquire);
	/* unsigned difference: the clock may wrap */
	if (!said || ms_of(now) - said > PN_NODESEG_WAIT_FRESH_MS)
		return -1;
	return atomic_load_explicit(&b->waiting_for, memory_order_relaxed);
}

/* ---- registered buffers ---- */

int pn_nodeseg_alloc(struct pn_comm *c, size_t len, struct pn_reg **out)
{
	struct pn_reg *r = calloc(1, sizeof(*r));
	size_t maplen = len ? len : 1;
	char name[128];
	int ret = 0, ret2, ok, i;
	uint64_t serial;

	if (!r)
		return pn_err(-ENOMEM, "out of memory");
	r->len = len;
	r->peer_ptr = calloc((size_t)c->local_size, sizeof(void *));
	if (!r->peer_ptr) {
		free(r);
		return pn_err(-ENOMEM, "out of memory");
	}
	serial = ++c->seg->reg_serial;
	shm_name(name, sizeof(name), c, "buf", c->rank, serial);
	ret = seg_map(name, maplen, 1, &r->ptr);
	ret2 = pn_boot_agree(c->boot, ret == 0, &ok);
	for (i = 0; !ret && !ret2 && ok && i < c->local_size; i++) {
		char pname[128];

		if (i == c->local_rank) {
			r->peer_ptr[i] = r->ptr;
			continue;
		}
		shm_name(pname, sizeof(pname), c, "buf", c->local_ranks[i], serial);
		ret = seg_map(pname, maplen, 0, &r->peer_ptr[i]);
	}
	ret2 = ret2 ? ret2 : pn_boot_agree(c->boot, ret == 0, &ok);
	if (r->ptr)
		shm_unlink(name);
	if (ret || ret2 || !ok) {
		pn_nodeseg_reg_free(c, r);
		if (ret || ret2)
			return ret ? ret : ret2;
		return pn_err(-EIO, "another rank could not allocate %zu bytes of shared memory", len);
	}
	*out = r;
	return 0;
}

void pn_nodeseg_reg_free(struct pn_comm *c, struct pn_reg *r)
{
	size_t maplen;
	int i;

	if (!r)
		return;
	maplen = r->len ? r->len : 1;
	for (i = 0; i < c->local_size; i++)
		if (r->peer_ptr[i] && r->peer_ptr[i] != r->ptr)
			munmap(r->peer_ptr[i], maplen);
	if (r->ptr)
		munmap(r->ptr, maplen);
	free(r->peer_ptr);
	free(r);
}
