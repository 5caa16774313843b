/* SPDX-License-Identifier: MIT */
/*
 * Shared memory between the ranks of one host: one node segment (abort
 * notice, barrier flags, a FIFO per ordered pair and channel), created by
 * local rank 0, mapped by all, unlinked as soon as everyone has mapped it
 * (so a crash leaves nothing behind).  Flags are busy-polled with
 * acquire/release atomics: no system call on the hot path.
 */
#define _GNU_SOURCE
#include "engine/comm.h"
#include "base/log.h"
#include "base/util.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define CL 64

struct slot_hdr {
	_Atomic uint64_t seq;	/* n+1 once the n-th message is in the slot */
	uint64_t len;
	char pad[CL - 16];
};

struct fifo {
	_Atomic uint64_t tail;	/* messages consumed by the receiver */
	char pad[CL - 8];
	struct slot_hdr slot[PN_FIFO_SLOTS];
	/* then PN_FIFO_SLOTS * PN_FIFO_SLOT_BYTES of data */
};

#define FIFO_BYTES (sizeof(struct fifo) + (size_t)PN_FIFO_SLOTS * PN_FIFO_SLOT_BYTES)

struct bar {
	_Atomic uint64_t epoch;
	char pad[CL - 8];
};

struct node_hdr {
	_Atomic uint32_t abort_state; /* 0 none, 1 being written, 2 set */
	int32_t abort_rank;
	char abort_msg[256 - 8];
	/* then struct bar[local_size], then the FIFOs */
};

struct pn_node_shm {
	void *base;
	size_t size;
	struct node_hdr *hdr;
	struct bar *bar;
	char *fifos;
	int nlocal, nchan;
	uint64_t reg_serial;
};

struct shm_conn {
	struct fifo *out, *in;
	char *out_data, *in_data;
	uint64_t head;		/* messages posted */
	uint64_t rtail;		/* messages consumed */
};

static size_t node_size(int nlocal, int nchan)
{
	return PN_ALIGN_UP(sizeof(struct node_hdr) + sizeof(struct bar) * (size_t)nlocal, 4096) +
	       FIFO_BYTES * (size_t)nlocal * (size_t)nlocal * (size_t)nchan;
}

uint64_t pn_shm_node_bytes(int nlocal, int nchan)
{
	return node_size(nlocal, nchan);
}

uint64_t pn_shm_fifo_bytes(void)
{
	return FIFO_BYTES;
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
int pn_shm_node_init(struct pn_comm *c)
{
	struct pn_node_shm *s = calloc(1, sizeof(*s));
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
	s->fifos = (char *)s->base +
		   PN_ALIGN_UP(sizeof(struct node_hdr) + sizeof(struct bar) * (size_t)s->nlocal, 4096);
	c->shm = s;
	return 0;
}

void pn_shm_node_free(struct pn_comm *c)
{
	if (!c->shm)
		return;
	munmap(c->shm->base, c->shm->size);
	free(c->shm);
	c->shm = NULL;
}

/* Abort notice shared by the ranks of this host. */
void pn_shm_set_abort(struct pn_comm *c, int rank, const char *why)
{
	uint32_t zero = 0;
	struct node_hdr *h;

	if (!c->shm)
		return;
	h = c->shm->hdr;
	if (!atomic_compare_exchange_strong(&h->abort_state, &zero, 1))
		return;
	h->abort_rank = rank;
	snprintf(h->abort_msg, sizeof(h->abort_msg), "%s", why);
	atomic_store_explicit(&h->abort_state, 2, memory_order_release);
}

int pn_shm_get_abort(struct pn_comm *c, char *buf, size_t len)
{
	struct node_hdr *h;

	if (!c->shm)
		return 0;
	h = c->shm->hdr;
	if (atomic_load_explicit(&h->abort_state, memory_order_acquire) != 2)
		return 0;
	snprintf(buf, len, "%s", h->abort_msg);
	return 1;
}

int pn_comm_local_barrier(struct pn_comm *c)
{
	struct bar *bar = c->shm->bar;
	uint64_t e = ++c->barrier_epoch;
	double since = 0;
	int i, ret;

	atomic_store_explicit(&bar[c->local_rank].epoch, e, memory_order_release);
	for (i = 0; i < c->local_size; i++) {
		while (atomic_load_explicit(&bar[i].epoch, memory_order_acquire) < e) {
			if (since == 0)
				since = pn_now();
			ret = pn_comm_check(c, c->local_ranks[i], since);
			if (ret)
				return ret;
		}
	}
	return 0;
}

/* ---- FIFO transport ---- */

static struct fifo *fifo_at(struct pn_node_shm *s, int src, int dst, int chan)
{
	size_t idx = ((size_t)src * (size_t)s->nlocal + (size_t)dst) * (size_t)s->nchan + (size_t)chan;

	return (struct fifo *)(s->fifos + idx * FIFO_BYTES);
}

static int shm_can_connect(struct pn_comm *c, int peer)
{
	return c->peers[peer].local >= 0 && c->shm != NULL;
}

static int shm_setup(struct pn_comm *c)
{
	int p, ch;

	for (p = 0; p < c->nranks; p++) {
		if (c->peers[p].transport != &pn_transport_shm)
			continue;
		for (ch = 0; ch < c->nchannels; ch++) {
			struct pn_conn *k = pn_comm_conn(c, p, ch);
			struct shm_conn *sc = calloc(1, sizeof(*sc));

			if (!sc)
				return pn_err(-ENOMEM, "out of memory");
			sc->out = fifo_at(c->shm, c->local_rank, c->peers[p].local, ch);
			sc->in = fifo_at(c->shm, c->peers[p].local, c->local_rank, ch);
			sc->out_data = (char *)(sc->out + 1);
			sc->in_data = (char *)(sc->in + 1);
			k->priv = sc;
		}
	}
	return 0;
}

static void *shm_send_slot(struct pn_conn *k, size_t *cap)
{
	struct shm_conn *sc = k->priv;

	if (sc->head - atomic_load_explicit(&sc->out->tail, memory_order_acquire) >= PN_FIFO_SLOTS)
		return NULL;
	*cap = PN_FIFO_SLOT_BYTES;
	return sc->out_data + (sc->head % PN_FIFO_SLOTS) * PN_FIFO_SLOT_BYTES;
}

static int shm_send_post(struct pn_conn *k, size_t len)
{
	struct shm_conn *sc = k->priv;
	struct slot_hdr *h = &sc->out->slot[sc->head % PN_FIFO_SLOTS];

	h->len = len;
	atomic_store_explicit(&h->seq, sc->head + 1, memory_order_release);
	sc->head++;
	return 0;
}

static const void *shm_recv_slot(struct pn_conn *k, size_t *len)
{
	struct shm_conn *sc = k->priv;
	struct slot_hdr *h = &sc->in->slot[sc->rtail % PN_FIFO_SLOTS];

	if (atomic_load_explicit(&h->seq, memory_order_acquire) != sc->rtail + 1)
		return NULL;
	*len = h->len;
	return sc->in_data + (sc->rtail % PN_FIFO_SLOTS) * PN_FIFO_SLOT_BYTES;
}

static int shm_recv_release(struct pn_conn *k)
{
	struct shm_conn *sc = k->priv;

	sc->rtail++;
	atomic_store_explicit(&sc->in->tail, sc->rtail, memory_order_release);
	return 0;
}

static int shm_progress(struct pn_comm *c)
{
	(void)c;
	return 0;
}

static void shm_close(struct pn_comm *c)
{
	int p, ch;

	for (p = 0; p < c->nranks; p++) {
		if (c->peers[p].transport != &pn_transport_shm)
			continue;
		for (ch = 0; ch < c->nchannels; ch++) {
			struct pn_conn *k = pn_comm_conn(c, p, ch);

			free(k->priv);
			k->priv = NULL;
		}
	}
}

const struct pn_transport pn_transport_shm = {
	.name = "shm",
	.can_connect = shm_can_connect,
	.setup = shm_setup,
	.send_slot = shm_send_slot,
	.send_post = shm_send_post,
	.recv_slot = shm_recv_slot,
	.recv_release = shm_recv_release,
	.progress = shm_progress,
	.close = shm_close,
};

/* ---- registered buffers ---- */

int pn_comm_alloc(struct pn_comm *c, size_t len, struct pn_reg **out)
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
	serial = ++c->shm->reg_serial;
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
		pn_comm_reg_free(c, r);
		if (ret || ret2)
			return ret ? ret : ret2;
		return pn_err(-EIO, "another rank could not allocate %zu bytes of shared memory", len);
	}
	*out = r;
	return 0;
}

void pn_comm_reg_free(struct pn_comm *c, struct pn_reg *r)
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
