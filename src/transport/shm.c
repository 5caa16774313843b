/* SPDX-License-Identifier: MIT */
/*
 * The shm transport between the ranks of one host: a FIFO per ordered pair
 * and channel, in the FIFO area of the node segment the engine maps
 * (g->node_fifos, engine/nodeseg.c).  Slots are busy-polled with
 * acquire/release atomics: no system call on the hot path.
 */
#define _GNU_SOURCE
#include "transport/transport.h"
#include "base/log.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>

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

struct shm_conn {
	struct fifo *out, *in;
	char *out_data, *in_data;
	uint64_t head;		/* messages posted */
	uint64_t rtail;		/* messages consumed */
};

uint64_t pn_shm_fifo_bytes(void)
{
	return FIFO_BYTES;
}

static struct fifo *fifo_at(struct pn_tp_group *g, int src, int dst, int chan)
{
	size_t idx = ((size_t)src * (size_t)g->local_size + (size_t)dst) * (size_t)g->nchannels +
		     (size_t)chan;

	return (struct fifo *)((char *)g->node_fifos + idx * FIFO_BYTES);
}

static int shm_can_connect(struct pn_tp_group *g, int peer)
{
	return g->peers[peer].local >= 0 && g->node_fifos != NULL;
}

static int shm_setup(struct pn_tp_group *g)
{
	int p, ch;

	for (p = 0; p < g->nranks; p++) {
		if (g->peers[p].transport != &pn_transport_shm)
			continue;
		for (ch = 0; ch < g->nchannels; ch++) {
			struct pn_conn *k = pn_tp_conn(g, p, ch);
			struct shm_conn *sc = calloc(1, sizeof(*sc));

			if (!sc)
				return pn_err(-ENOMEM, "out of memory");
			sc->out = fifo_at(g, g->local_rank, g->peers[p].local, ch);
			sc->in = fifo_at(g, g->peers[p].local, g->local_rank, ch);
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

static int shm_progress(struct pn_tp_group *g)
{
	(void)g;
	return 0;
}

static void shm_close(struct pn_tp_group *g)
{
	int p, ch;

	for (p = 0; p < g->nranks; p++) {
		if (g->peers[p].transport != &pn_transport_shm)
			continue;
		for (ch = 0; ch < g->nchannels; ch++) {
			struct pn_conn *k = pn_tp_conn(g, p, ch);

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

