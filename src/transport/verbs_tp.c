/* SPDX-License-Identifier: MIT */
/*
 * The engine's verbs transport: the FIFO of a (peer, channel) pair as an
 * RDMA ring.  The receiver exposes PN_FIFO_SLOTS slots plus a credit word;
 * the sender writes a slot with RDMA write-with-immediate (the immediate is
 * the length: put with signal), the receiver learns of it from the receive
 * completion and, once it has consumed the slot, RDMA-writes its consumed
 * count into the sender's credit word.  One RC QP per channel, so slots
 * arrive in order.  Chosen between ranks on different hosts when both have
 * an ACTIVE RDMA port (PENNY_IB_HCA picks devices; --transport verbs forces).
 * Each connection has its own device: a ring plan binds (peer, channel) to
 * a NIC (g->verbs_port); otherwise channel c is on rail c.
 */
#define _GNU_SOURCE
#include "transport/transport.h"
#include "base/log.h"
#include "node/nic.h"
#include "base/util.h"
#include "transport/verbs.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RING_BYTES ((size_t)PN_FIFO_SLOTS * PN_FIFO_SLOT_BYTES)
#define CREDIT_OFF RING_BYTES

struct vconn {
	struct pn_verbs_conn *qc;
	char *ring;		/* exposed: slots, then the credit word */
	char *sbuf;		/* local send slots */
	uint64_t *tailword;	/* our consumed count, written to the peer */
	uint64_t head, sdone;	/* slots posted, send completions */
	uint64_t filled, rtail;	/* slots received, consumed */
	size_t rlen[PN_FIFO_SLOTS];
	int dev;		/* index into pn_verbs_state.dev */
};

struct vdev {
	struct pn_verbs_dev *dev;
	char name[64];		/* "dev:port" */
};

struct pn_verbs_state {
	struct vdev *dev;	/* opened devices, each once */
	int ndev, capdev;
};

static struct pn_verbs_state *vstate(struct pn_tp_group *g)
{
	return g->verbs;
}

/* This rank's ports: the group's ib_hca (PENNY_IB_HCA, a comma list) or
 * the ACTIVE ports in natural order. */
static int rails(const struct pn_tp_group *g, char (*specs)[32], int max)
{
	const char *env = g->ib_hca;
	struct pn_nic_list l;
	int n = 0, i, p;

	if (env && *env) {
		char *dup = strdup(env), *tok, *save = NULL;

		if (!dup)
			return 0;
		for (tok = strtok_r(dup, ",", &save); tok && n < max; tok = strtok_r(NULL, ",", &save))
			snprintf(specs[n++], 32, "%s", tok);
		free(dup);
		return n;
	}
	if (pn_nic_list_read(&l))
		return 0;
	for (i = 0; i < l.n && n < max; i++)
		for (p = 0; p < l.nics[i].nports && n < max; p++)
			if (l.nics[i].ports[p].state == PN_PORT_ACTIVE)
				snprintf(specs[n++], 32, "%s:%d", l.nics[i].name, l.nics[i].ports[p].port);
	pn_nic_list_release(&l);
	return n;
}

/* One channel: the local rank's share of the ports. */
static int pick_device(const struct pn_tp_group *g, char *out, size_t len)
{
	char specs[PN_MAX_RAILS][32];
	int n = rails(g, specs, PN_MAX_RAILS);

	out[0] = 0;
	if (!n)
		return 0;
	snprintf(out, len, "%s", specs[g->local_rank % n]);
	return 1;
}

/* What this rank publishes: its port, and its rails for multiring; nothing
 * alone or with ib_disable (PENNY_IB_DISABLE; then only a forced verbs fails). */
static int verbs_publish(struct pn_tp_group *g, int forced, struct pn_rank_info *mine)
{
	if (g->nranks > 1 && !g->ib_disable) {
		pick_device(g, mine->verbs_dev, sizeof(mine->verbs_dev));
		mine->nrails = rails(g, mine->rail_dev, PN_MAX_RAILS);
	}
	if (forced && !mine->verbs_dev[0])
		return pn_err(-ENODEV, "--transport verbs: rank %d (host %s) has no ACTIVE RDMA port",
			      g->rank, pn_tp_host(g, g->rank));
	return 0;
}

/* Default port of a channel: one channel uses the rank's own port; several
 * channels are rails, channel c on rail c % nrails on every rank. */
static const char *chan_port(const struct pn_tp_group *g, int chan)
{
	const struct pn_rank_info *me = &g->info[g->rank];

	if (g->nchannels > 1 && me->nrails > 1)
		return me->rail_dev[chan % me->nrails];
	return me->verbs_dev;
}

/* The opened device for spec ("dev" or "dev:port"), opening it the first time. */
static int dev_get(struct pn_verbs_state *vs, const char *spec, int *idx)
{
	struct pn_verbs_dev_cfg dcfg;
	char name[64];
	int i, ret;

	snprintf(name, sizeof(name), strchr(spec, ':') ? "%s" : "%s:1", spec);
	for (i = 0; i < vs->ndev; i++)
		if (!strcmp(vs->dev[i].name, name)) {
			*idx = i;
			return 0;
		}
	if (vs->ndev == vs->capdev) {
		int cap = vs->capdev ? 2 * vs->capdev : 4;
		struct vdev *n = realloc(vs->dev, sizeof(*n) * (size_t)cap);

		if (!n)
			return pn_err(-ENOMEM, "out of memory");
		vs->dev = n;
		vs->capdev = cap;
	}
	pn_verbs_dev_cfg_init(&dcfg);
	ret = pn_verbs_dev_open(&vs->dev[vs->ndev].dev, name, &dcfg);
	if (ret)
		return ret;
	snprintf(vs->dev[vs->ndev].name, sizeof(vs->dev[vs->ndev].name), "%s", name);
	PN_DBG(PN_LOG_VERBS, "verbs transport on %s", spec);
	*idx = vs->ndev++;
	return 0;
}

/* Open (once) the device of the connection to peer on channel ch. */
static int conn_dev(struct pn_tp_group *g, struct pn_verbs_state *vs, int peer, int ch, int *idx)
{
	char port[64];
	int ret = 0;

	if (g->verbs_port)
		ret = g->verbs_port(g->verbs_port_arg, peer, ch, port, sizeof(port));
	if (ret < 0)
		return ret;
	if (!ret)
		return dev_get(vs, chan_port(g, ch), idx);
	ret = dev_get(vs, port, idx);
	if (ret)
		return pn_err_ctx(ret, "rank %d (host %s): planned NIC '%s' for channel %d to rank %d",
				  g->rank, pn_tp_host(g, g->rank), port, ch, peer);
	return 0;
}

static int verbs_can_connect(struct pn_tp_group *g, int peer)
{
	return g->info[g->rank].verbs_dev[0] && g->info[peer].verbs_dev[0];
}

static int verbs_setup(struct pn_tp_group *g)
{
	struct pn_verbs_state *vs;
	struct pn_verbs_info *mine = NULL, *all = NULL;
	struct pn_verbs_conn_cfg ccfg;
	size_t per = (size_t)g->nranks * (size_t)g->nchannels;
	int p, ch, ret = 0, i, used = 0, none;

	/* collective: every rank takes part in the exchange, unless no rank
	 * has a verbs peer (one host, or tcp only): then nothing is exchanged,
	 * and nothing of nranks^2 size is allocated */
	for (p = 0; p < g->nranks; p++)
		used |= g->peers[p].transport == &pn_transport_verbs;
	ret = pn_tp_agree(g, !used, &none);
	if (ret || none)
		return ret;
	if (per > SIZE_MAX / sizeof(*mine) / (size_t)g->nranks)
		return pn_err(-E2BIG, "verbs connection info of %d ranks x %d channels does not fit "
			      "in memory", g->nranks, g->nchannels);
	mine = calloc(per, sizeof(*mine));
	all = calloc(per * (size_t)g->nranks, sizeof(*all));
	vs = calloc(1, sizeof(*vs));
	if (!mine || !all || !vs) {
		ret = pn_err(-ENOMEM, "out of memory");
		goto out;
	}
	g->verbs = vs;
	pn_verbs_conn_cfg_init(&ccfg);
	ccfg.timeout = g->timeout;
	ccfg.rq_depth = PN_FIFO_SLOTS * 2;
	ccfg.sq_depth = 256;
	for (p = 0; !ret && p < g->nranks; p++) {
		if (g->peers[p].transport != &pn_transport_verbs)
			continue;
		for (ch = 0; !ret && ch < g->nchannels; ch++) {
			struct pn_conn *k = pn_tp_conn(g, p, ch);
			struct vconn *v = calloc(1, sizeof(*v));

			if (!v) {
				ret = pn_err(-ENOMEM, "out of memory");
				break;
			}
			k->priv = v;
			v->dev = -1;
			ret = conn_dev(g, vs, p, ch, &v->dev);
			if (ret)
				break;
			if (posix_memalign((void **)&v->ring, 4096, RING_BYTES + 64) ||
			    posix_memalign((void **)&v->sbuf, 4096, RING_BYTES) ||
			    posix_memalign((void **)&v->tailword, 64, 64)) {
				ret = pn_err(-ENOMEM, "out of memory");
				break;
			}
			memset(v->ring, 0, RING_BYTES + 64);
			*v->tailword = 0;
			ret = pn_verbs_conn_create(&v->qc, vs->dev[v->dev].dev, &ccfg);
			if (!ret)
				ret = pn_verbs_conn_expose(v->qc, v->ring, RING_BYTES + 64);
			for (i = 0; !ret && i < PN_FIFO_SLOTS * 2; i++) {
				struct pn_verbs_wr wr = { .op = PN_VERBS_RECV, .qp = 0 };

				ret = pn_verbs_post(v->qc, &wr);
			}
			if (!ret)
				pn_verbs_conn_info(v->qc, &mine[(size_t)p * (size_t)g->nchannels + (size_t)ch]);
		}
	}
	{
		int ok, ret2 = pn_tp_agree(g, ret == 0, &ok);

		if (!ret && !ret2 && !ok)
			ret = pn_err(-EIO, "another rank could not set up its verbs device");
		if (!ret)
			ret = ret2;
	}
	if (!ret)
		ret = pn_tp_allgather(g, mine, all, per * sizeof(*mine));
	for (p = 0; !ret && p < g->nranks; p++) {
		if (g->peers[p].transport != &pn_transport_verbs)
			continue;
		for (ch = 0; !ret && ch < g->nchannels; ch++) {
			struct vconn *v = pn_tp_conn(g, p, ch)->priv;
			const struct pn_verbs_info *pi =
				&all[(size_t)p * per + (size_t)g->rank * (size_t)g->nchannels + (size_t)ch];

			ret = pn_verbs_info_check(pi);
			if (!ret)
				ret = pn_verbs_conn_connect(v->qc, pi);
			if (ret)
				ret = pn_err_ctx(ret, "verbs to rank %d (host %s)", p,
						 pn_tp_host(g, p));
		}
	}
	/* nobody writes before every QP is ready to receive */
	if (!ret)
		ret = pn_tp_barrier(g);
out:
	free(mine);
	free(all);
	return ret;
}

static void *verbs_send_slot(struct pn_conn *k, size_t *cap)
{
	struct vconn *v = k->priv;
	uint64_t credit = __atomic_load_n((uint64_t *)(v->ring + CREDIT_OFF), __ATOMIC_ACQUIRE);

	if (v->head - credit >= PN_FIFO_SLOTS || v->head - v->sdone >= PN_FIFO_SLOTS)
		return NULL;
	*cap = PN_FIFO_SLOT_BYTES;
	return v->sbuf + (v->head % PN_FIFO_SLOTS) * PN_FIFO_SLOT_BYTES;
}

static int verbs_send_post(struct pn_conn *k, size_t len)
{
	struct vconn *v = k->priv;
	size_t slot = v->head % PN_FIFO_SLOTS;
	struct pn_verbs_wr wr = {
		.op = PN_VERBS_WRITE_IMM,
		.qp = 0,
		.buf = v->sbuf + slot * PN_FIFO_SLOT_BYTES,
		.len = len,
		.roff = slot * PN_FIFO_SLOT_BYTES,
		.imm = (uint32_t)len,
		.id = 1,
	};
	int ret;

	if (!len) {
		/* a zero-byte write still carries the immediate */
		wr.buf = NULL;
	}
	ret = pn_verbs_post(v->qc, &wr);
	if (ret)
		return pn_err_ctx(ret, "verbs send to rank %d", k->peer);
	v->head++;
	return 0;
}

static const void *verbs_recv_slot(struct pn_conn *k, size_t *len)
{
	struct vconn *v = k->priv;

	if (v->filled == v->rtail)
		return NULL;
	*len = v->rlen[v->rtail % PN_FIFO_SLOTS];
	return v->ring + (v->rtail % PN_FIFO_SLOTS) * PN_FIFO_SLOT_BYTES;
}

static int verbs_recv_release(struct pn_conn *k)
{
	struct vconn *v = k->priv;
	struct pn_verbs_wr wr = {
		.op = PN_VERBS_WRITE,
		.qp = 0,
		.buf = v->tailword,
		.len = sizeof(uint64_t),
		.roff = CREDIT_OFF,
		.id = 2,
	};

	v->rtail++;
	*v->tailword = v->rtail;
	return pn_verbs_post(v->qc, &wr);
}

static int harvest(struct pn_tp_group *g, struct pn_conn *k)
{
	struct vconn *v = k->priv;
	struct pn_verbs_cqe cqe[32];
	int n, i, ret;

	n = pn_verbs_poll(v->qc, cqe, 32, 0);
	if (n < 0)
		return pn_err_ctx(n, "verbs with rank %d (host %s)", k->peer,
				  pn_tp_host(g, k->peer));
	for (i = 0; i < n; i++) {
		if (cqe[i].op == PN_VERBS_RECV) {
			struct pn_verbs_wr wr = { .op = PN_VERBS_RECV, .qp = 0 };

			if (!cqe[i].has_imm)
				continue;
			v->rlen[v->filled % PN_FIFO_SLOTS] = cqe[i].imm;
			v->filled++;
			ret = pn_verbs_post(v->qc, &wr);
			if (ret)
				return ret;
		} else if (cqe[i].op == PN_VERBS_WRITE_IMM) {
			v->sdone++;
		}
	}
	return 0;
}

static int verbs_progress(struct pn_tp_group *g)
{
	int p, ch, ret;

	if (!g->verbs)
		return 0;
	for (p = 0; p < g->nranks; p++) {
		if (g->peers[p].transport != &pn_transport_verbs)
			continue;
		for (ch = 0; ch < g->nchannels; ch++) {
			ret = harvest(g, pn_tp_conn(g, p, ch));
			if (ret)
				return ret;
		}
	}
	return 0;
}

static void verbs_close(struct pn_tp_group *g)
{
	struct pn_verbs_state *vs = vstate(g);
	int p, ch, i;

	if (!vs)
		return;
	for (p = 0; p < g->nranks; p++) {
		if (g->peers[p].transport != &pn_transport_verbs)
			continue;
		for (ch = 0; ch < g->nchannels; ch++) {
			struct pn_conn *k = pn_tp_conn(g, p, ch);
			struct vconn *v = k->priv;

			if (!v)
				continue;
			if (v->qc)
				pn_verbs_conn_free(v->qc);
			if (v->dev >= 0) {
				struct pn_verbs_dev *d = vs->dev[v->dev].dev;

				pn_verbs_invalidate(d, v->sbuf, RING_BYTES);
				pn_verbs_invalidate(d, v->tailword, 64);
				pn_verbs_invalidate(d, v->ring, RING_BYTES + 64);
			}
			free(v->ring);
			free(v->sbuf);
			free(v->tailword);
			free(v);
			k->priv = NULL;
		}
	}
	for (i = 0; i < vs->ndev; i++)
		pn_verbs_dev_close(vs->dev[i].dev);
	free(vs->dev);
	free(vs);
	g->verbs = NULL;
}

const struct pn_transport pn_transport_verbs = {
	.name = "verbs",
	.publish = verbs_publish,
	.can_connect = verbs_can_connect,
	.setup = verbs_setup,
	.send_slot = verbs_send_slot,
	.send_post = verbs_send_post,
	.recv_slot = verbs_recv_slot,
	.recv_release = verbs_recv_release,
	.progress = verbs_progress,
	.close = verbs_close,
};
