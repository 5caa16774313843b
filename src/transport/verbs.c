/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
/*
 * The verbs layer, connections: RC QPs to a peer, completions, posting
 * (write, write-with-immediate, read, send/recv, striping over QPs).
 * Devices and registration are in verbs_dev.c.
 */
#include "transport/verbs.h"
#include "transport/verbs_impl.h"
#include "base/log.h"
#include "node/nic.h"
#include "base/util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>



struct sq_slot {
	int xfer;		/* signaled piece of this transfer, -1 otherwise */
	int op;
	void *mr;		/* cache handle to put on retirement, NULL inline/empty */
};

struct rq_slot {
	uint64_t id;
	void *mr;
};

struct vqp {
	struct ibv_qp *qp;
	struct sq_slot *sq;
	uint64_t sq_head, sq_tail;	/* next to post, oldest not retired */
	struct rq_slot *rq;
	uint64_t rq_head, rq_tail;
	int unsig_ops;		/* unsignaled operations since the last signaled one */
};

struct xfer {
	uint64_t id;
	int op, qp, pending, next_free, count;
	size_t len;
};

struct pn_verbs_conn {
	struct pn_verbs_dev *d;
	struct pn_verbs_conn_cfg cfg;
	struct ibv_comp_channel *ch;
	struct ibv_cq *cq;
	int cq_size;
	unsigned unacked;	/* CQ events not yet acknowledged */
	struct vqp *qps;
	int nqp, next_qp;
	uint32_t psn;
	int connected, mtu;
	int failed;		/* first error (negative), with c->why */
	char why[384];
	/* the exposed buffer and the peer's */
	void *xbuf;
	size_t xlen;
	void *xmr;
	uint64_t raddr, rlen;
	uint32_t rkey;
	uint32_t rqpn[PN_VERBS_MAX_QPS];
	char rname[48];		/* "rxe1:1" */
	int watch;		/* the peer's side channel (-1: none), pn_verbs_conn_watch */
	double watch_next;	/* when a spinning wait looks at it again */
	/* transfers awaiting their signaled pieces */
	struct xfer *xfers;
	int nxfers, free_xfer, live_xfers;
	/* completions ready for pn_verbs_poll */
	struct pn_verbs_cqe *ready;
	int rcap, rhead, rcount;
};

/* work request ids: QP index, receive bit, sequence number (low 47 bits) */
#define WR_SEQ_MASK 0x7fffffffffffull
#define WR_RECV (1ull << 47)
#define WRID(q, seq) (((uint64_t)(q) << 48) | ((seq) & WR_SEQ_MASK))
#define WRID_QP(id) ((int)((id) >> 48))
/* the full sequence number, from the low bits and the oldest one outstanding */
#define WRID_SEQ(id, tail) ((tail) + ((((id) & WR_SEQ_MASK) - (tail)) & WR_SEQ_MASK))

const char *pn_verbs_op_name(int op)
{
	switch (op) {
	case PN_VERBS_WRITE: return "rdma write";
	case PN_VERBS_WRITE_IMM: return "rdma write with immediate";
	case PN_VERBS_READ: return "rdma read";
	case PN_VERBS_SEND: return "send";
	case PN_VERBS_RECV: return "receive";
	default: return "unknown operation";
	}
}

/* ------------------------------------------------------------- connection */

static int d_max_rd(const struct pn_verbs_conn *c)
{
	return PN_MIN(c->d->attr.max_qp_rd_atom, c->d->attr.max_qp_init_rd_atom);
}

void pn_verbs_conn_cfg_init(struct pn_verbs_conn_cfg *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->nqp = 1;
	cfg->sq_depth = 128;
	cfg->rq_depth = 128;
	cfg->timeout = 30;
	cfg->spin_us = 20;
	cfg->ack_timeout = 14;
	cfg->retry_cnt = 7;
}

/* Record the connection's first error; later calls return it again. */
static int conn_fail(struct pn_verbs_conn *c, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int conn_fail(struct pn_verbs_conn *c, int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	if (!c->failed) {
		c->failed = code;
		vsnprintf(c->why, sizeof(c->why), fmt, ap);
	}
	va_end(ap);
	return pn_err(c->failed, "%s", c->why);
}

static int qp_init(struct pn_verbs_conn *c, struct ibv_qp *qp)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT,
		.pkey_index = 0,
		.port_num = (uint8_t)c->d->port.port,
		.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				   IBV_ACCESS_REMOTE_READ,
	};
	int ret = ibv_modify_qp(qp, &a,
				IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);

	if (ret)
		return pn_err(-ret, "ibv_modify_qp(INIT) on %s qp 0x%x: %s", c->d->name, qp->qp_num,
			      strerror(ret));
	return 0;
}

int pn_verbs_conn_create(struct pn_verbs_conn **out, struct pn_verbs_dev *d,
			 const struct pn_verbs_conn_cfg *given)
{
	struct pn_verbs_conn_cfg *cfg;
	struct pn_verbs_conn *c;
	int i, ret, max_wr = d->attr.max_qp_wr > 0 ? d->attr.max_qp_wr : 1024;

	*out = NULL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return pn_err(-ENOMEM, "out of memory");
	c->d = d;
	c->watch = -1;
	if (given)
		c->cfg = *given;
	else
		pn_verbs_conn_cfg_init(&c->cfg);
	cfg = &c->cfg;
	if (cfg->nqp < 1 || cfg->nqp > PN_VERBS_MAX_QPS) {
		ret = pn_err(-EINVAL, "%d QPs asked for, %d at most", cfg->nqp, PN_VERBS_MAX_QPS);
		goto err;
	}
	if (cfg->mtu && !pn_verbs_mtu_valid(cfg->mtu)) {
		ret = pn_err(-EINVAL, "invalid MTU %d (256, 512, 1024, 2048 or 4096)", cfg->mtu);
		goto err;
	}
	if (cfg->mtu > d->port.active_mtu) {
		ret = pn_err(-EINVAL, "MTU %d exceeds the active MTU %d of %s", cfg->mtu,
			     d->port.active_mtu, d->name);
		goto err;
	}
	if (cfg->sq_depth < 1)
		cfg->sq_depth = 128;
	if (cfg->rq_depth < 1)
		cfg->rq_depth = 128;
	cfg->sq_depth = PN_MIN(cfg->sq_depth, max_wr);
	cfg->rq_depth = PN_MIN(cfg->rq_depth, max_wr);
	if (cfg->timeout <= 0)
		cfg->timeout = 30;
	if (cfg->spin_us < 0)
		cfg->spin_us = 0;
	if (!cfg->ack_timeout)
		cfg->ack_timeout = 14;
	if (!cfg->retry_cnt)
		cfg->retry_cnt = 7;
	c->nqp = cfg->nqp;
	c->cq_size = c->nqp * (cfg->sq_depth + cfg->rq_depth);
	if (d->attr.max_cqe > 0)
		c->cq_size = PN_MIN(c->cq_size, d->attr.max_cqe);

	c->ch = ibv_create_comp_channel(d->ctx);
	if (!c->ch) {
		ret = pn_err(-errno, "ibv_create_comp_channel on %s: %s", d->name, strerror(errno));
		goto err;
	}
	i = fcntl(c->ch->fd, F_GETFL);
	if (i < 0 || fcntl(c->ch->fd, F_SETFL, i | O_NONBLOCK) < 0) {
		ret = pn_err(-errno, "cannot make the completion channel of %s non-blocking: %s",
			     d->name, strerror(errno));
		goto err;
	}
	c->cq = ibv_create_cq(d->ctx, c->cq_size, c, c->ch, 0);
	if (!c->cq) {
		ret = pn_err(-(errno ? errno : ENOMEM), "ibv_create_cq(%d) on %s: %s", c->cq_size,
			     d->name, strerror(errno ? errno : ENOMEM));
		goto err;
	}
	c->qps = calloc((size_t)c->nqp, sizeof(*c->qps));
	c->nxfers = c->nqp * cfg->sq_depth;
	c->xfers = calloc((size_t)c->nxfers, sizeof(*c->xfers));
	c->rcap = c->nqp * (cfg->sq_depth + cfg->rq_depth);
	c->ready = calloc((size_t)c->rcap, sizeof(*c->ready));
	if (!c->qps || !c->xfers || !c->ready) {
		ret = pn_err(-ENOMEM, "out of memory");
		goto err;
	}
	for (i = 0; i < c->nxfers; i++)
		c->xfers[i].next_free = i + 1 < c->nxfers ? i + 1 : -1;
	c->free_xfer = 0;
	for (i = 0; i < c->nqp; i++) {
		struct ibv_qp_init_attr qa = {
			.send_cq = c->cq,
			.recv_cq = c->cq,
			.cap = {
				.max_send_wr = (uint32_t)cfg->sq_depth,
				.max_recv_wr = (uint32_t)cfg->rq_depth,
				.max_send_sge = 1,
				.max_recv_sge = 1,
				.max_inline_data = (uint32_t)PN_MAX(cfg->max_inline, 0),
			},
			.qp_type = IBV_QPT_RC,
			.sq_sig_all = 0,
		};
		struct vqp *v = &c->qps[i];

		v->sq = calloc((size_t)cfg->sq_depth, sizeof(*v->sq));
		v->rq = calloc((size_t)cfg->rq_depth, sizeof(*v->rq));
		if (!v->sq || !v->rq) {
			ret = pn_err(-ENOMEM, "out of memory");
			goto err;
		}
		v->qp = ibv_create_qp(d->pd, &qa);
		if (!v->qp) {
			int e = errno ? errno : ENOMEM;

			ret = pn_err(-e, "ibv_create_qp(RC, %d/%d WRs, inline %d) #%d on %s: %s",
				     cfg->sq_depth, cfg->rq_depth, cfg->max_inline, i, d->name,
				     strerror(e));
			goto err;
		}
		if (cfg->max_inline > 0 && (int)qa.cap.max_inline_data < cfg->max_inline)
			cfg->max_inline = (int)qa.cap.max_inline_data;
		ret = qp_init(c, v->qp);
		if (ret)
			goto err;
	}
	if (getrandom(&c->psn, sizeof(c->psn), 0) != sizeof(c->psn))
		c->psn = (uint32_t)(pn_now_ns() ^ (uint64_t)getpid());
	c->psn &= 0xffffff;
	if (c->psn + (uint32_t)c->nqp > 0xffffff)
		c->psn -= (uint32_t)c->nqp;
	ret = ibv_req_notify_cq(c->cq, 0);
	if (ret) {
		ret = pn_err(-ret, "ibv_req_notify_cq on %s: %s", d->name, strerror(ret));
		goto err;
	}
	*out = c;
	return 0;
err:
	pn_verbs_conn_free(c);
	return ret;
}

static void drop_slots(struct pn_verbs_conn *c)
{
	int i;

	for (i = 0; i < c->nqp && c->qps; i++) {
		struct vqp *v = &c->qps[i];

		for (; v->sq && v->sq_tail < v->sq_head; v->sq_tail++) {
			struct sq_slot *s = &v->sq[v->sq_tail % (uint64_t)c->cfg.sq_depth];

			if (s->mr)
				pn_mrcache_put(&c->d->cache, s->mr);
		}
		for (; v->rq && v->rq_tail < v->rq_head; v->rq_tail++) {
			struct rq_slot *s = &v->rq[v->rq_tail % (uint64_t)c->cfg.rq_depth];

			if (s->mr)
				pn_mrcache_put(&c->d->cache, s->mr);
		}
	}
}

void pn_verbs_conn_free(struct pn_verbs_conn *c)
{
	int i;

	if (!c)
		return;
	/* Error state first: the work still in flight is flushed at once.  A
	 * QP destroyed while it still retransmits to a stalled link can block
	 * for a minute (rxe: 50 s for 436 writes at 256 kbit/s), holding up
	 * whoever waits for this rank. */
	for (i = 0; c->qps && i < c->nqp; i++) {
		struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };

		if (c->qps[i].qp && c->qps[i].sq_head != c->qps[i].sq_tail &&
		    ibv_modify_qp(c->qps[i].qp, &a, IBV_QP_STATE))
			PN_DBG(PN_LOG_VERBS, "%s: to the error state: %s", c->d->name,
			       strerror(errno));
	}
	for (i = 0; c->qps && i < c->nqp; i++)
		if (c->qps[i].qp && ibv_destroy_qp(c->qps[i].qp))
			PN_DBG(PN_LOG_VERBS, "%s: ibv_destroy_qp: %s", c->d->name, strerror(errno));
	drop_slots(c);
	for (i = 0; c->qps && i < c->nqp; i++) {
		free(c->qps[i].sq);
		free(c->qps[i].rq);
	}
	if (c->xmr)
		pn_mrcache_put(&c->d->cache, c->xmr);
	if (c->cq) {
		if (c->unacked)
			ibv_ack_cq_events(c->cq, c->unacked);
		ibv_destroy_cq(c->cq);
	}
	if (c->ch)
		ibv_destroy_comp_channel(c->ch);
	free(c->qps);
	free(c->xfers);
	free(c->ready);
	free(c);
}

int pn_verbs_conn_expose(struct pn_verbs_conn *c, void *buf, size_t len)
{
	void *h;
	int ret;

	if (c->xmr) {
		pn_mrcache_put(&c->d->cache, c->xmr);
		c->xmr = NULL;
	}
	ret = pn_mrcache_get(&c->d->cache, buf, len, &h);
	if (ret)
		return ret;
	c->xmr = h;
	c->xbuf = buf;
	c->xlen = len;
	return 0;
}

void pn_verbs_conn_info(const struct pn_verbs_conn *c, struct pn_verbs_info *info)
{
	const struct pn_verbs_port_info *p = &c->d->port;
	int i;

	memset(info, 0, sizeof(*info));
	info->magic = PN_VERBS_INFO_MAGIC;
	info->version = PN_VERBS_INFO_VERSION;
	info->size = sizeof(*info);
	memcpy(info->gid, p->gid, 16);
	info->psn = c->psn;
	if (c->xmr) {
		info->rkey = ((struct ibv_mr *)c->xmr)->rkey;
		info->addr = (uint64_t)(uintptr_t)c->xbuf;
		info->len = c->xlen;
	}
	info->lid = (uint16_t)p->lid;
	info->port = (uint8_t)p->port;
	info->ethernet = (uint8_t)p->ethernet;
	info->gid_index = (uint8_t)p->gid_index;
	info->gid_type = (uint8_t)p->gid_type;
	info->mtu = (uint16_t)(c->cfg.mtu ? c->cfg.mtu : p->active_mtu);
	info->nqp = (uint16_t)c->nqp;
	for (i = 0; i < c->nqp; i++)
		info->qpn[i] = c->qps[i].qp->qp_num;
	snprintf(info->dev, sizeof(info->dev), "%s", p->dev);
}

int pn_verbs_info_check(const struct pn_verbs_info *peer)
{
	if (peer->magic == __builtin_bswap32(PN_VERBS_INFO_MAGIC))
		return pn_err(-EPROTO, "peer's connection info has the other byte order");
	if (peer->magic != PN_VERBS_INFO_MAGIC)
		return pn_err(-EPROTO, "peer's connection info has a bad magic 0x%08x", peer->magic);
	if (peer->version != PN_VERBS_INFO_VERSION || peer->size != sizeof(*peer))
		return pn_err(-EPROTO, "peer's connection info is version %u (%u bytes), this side "
				       "speaks version %u (%zu bytes)",
			      peer->version, peer->size, PN_VERBS_INFO_VERSION, sizeof(*peer));
	if (!peer->nqp || peer->nqp > PN_VERBS_MAX_QPS)
		return pn_err(-EPROTO, "peer's connection info has %u QPs", peer->nqp);
	if (!pn_verbs_mtu_valid(peer->mtu))
		return pn_err(-EPROTO, "peer's connection info has MTU %u", peer->mtu);
	if (memchr(peer->dev, 0, sizeof(peer->dev)) == NULL)
		return pn_err(-EPROTO, "peer's connection info has an unterminated device name");
	return 0;
}

/* The two sides must use the same kind of GID, or RTR/RTS "succeed" and the
 * packets go nowhere. */
static int check_peer(struct pn_verbs_conn *c, const struct pn_verbs_info *r)
{
	const struct pn_verbs_port_info *p = &c->d->port;
	char lg[48], rg[48];

	if (r->nqp != c->nqp)
		return pn_err(-EINVAL, "peer %s:%u has %u QPs, %s has %d: use the same QP count on "
				       "both sides", r->dev, r->port, r->nqp, c->d->name, c->nqp);
	if (r->ethernet != p->ethernet)
		return pn_err(-EINVAL, "link layers differ: %s is %s, peer %s:%u is %s", c->d->name,
			      p->ethernet ? "Ethernet" : "InfiniBand", r->dev, r->port,
			      r->ethernet ? "Ethernet" : "InfiniBand");
	pn_verbs_gid_str(r->gid, rg, sizeof(rg));
	pn_verbs_gid_str(p->gid, lg, sizeof(lg));
	if (p->ethernet && (gid_zero(r->gid) || r->gid_type != p->gid_type ||
			    gid_v4mapped(r->gid) != gid_v4mapped(p->gid)))
		return pn_err(-EINVAL, "GID mismatch: %s uses index %d %s (%s, %s), peer %s:%u uses "
				       "index %u %s (%s, %s): choose the same kind of GID on both "
				       "sides (-x)",
			      c->d->name, p->gid_index, lg, gid_type_name(p->gid_type),
			      gid_v4mapped(p->gid) ? "IPv4" : "IPv6", r->dev, r->port, r->gid_index,
			      rg, gid_type_name(r->gid_type), gid_v4mapped(r->gid) ? "IPv4" : "IPv6");
	if (!p->ethernet && !r->lid)
		return pn_err(-EINVAL, "peer %s:%u has no LID (is its subnet manager running?)",
			      r->dev, r->port);
	return 0;
}

int pn_verbs_conn_connect(struct pn_verbs_conn *c, const struct pn_verbs_info *r)
{
	const struct pn_verbs_port_info *p = &c->d->port;
	int i, ret, mtu, rd_atom;

	if (c->connected)
		return pn_err(-EISCONN, "%s: already connected", c->d->name);
	ret = pn_verbs_info_check(r);
	if (!ret)
		ret = check_peer(c, r);
	if (ret)
		return pn_err_ctx(ret, "cannot connect %s", c->d->name);
	mtu = PN_MIN(c->cfg.mtu ? c->cfg.mtu : p->active_mtu, (int)r->mtu);
	mtu = PN_MIN(mtu, p->active_mtu);
	rd_atom = PN_MAX(1, PN_MIN(d_max_rd(c), 16));
	for (i = 0; i < c->nqp; i++) {
		struct ibv_qp *qp = c->qps[i].qp;
		struct ibv_qp_attr a;

		memset(&a, 0, sizeof(a));
		a.qp_state = IBV_QPS_RTR;
		a.path_mtu = pn_verbs_mtu_enum(mtu);
		a.dest_qp_num = r->qpn[i];
		a.rq_psn = (r->psn + (uint32_t)i) & 0xffffff;
		a.max_dest_rd_atomic = (uint8_t)rd_atom;
		a.min_rnr_timer = 12; /* 0.64 ms */
		a.ah_attr.dlid = r->lid;
		a.ah_attr.sl = 0;
		a.ah_attr.port_num = (uint8_t)p->port;
		if (p->ethernet || !r->lid) {
			a.ah_attr.is_global = 1;
			memcpy(a.ah_attr.grh.dgid.raw, r->gid, 16);
			a.ah_attr.grh.sgid_index = (uint8_t)p->gid_index;
			a.ah_attr.grh.hop_limit = 64;
		}
		ret = ibv_modify_qp(qp, &a,
				    IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
					    IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
					    IBV_QP_MIN_RNR_TIMER);
		if (ret)
			return pn_err(-ret, "ibv_modify_qp(RTR) on %s qp 0x%x to %s:%u qp 0x%x: %s",
				      c->d->name, qp->qp_num, r->dev, r->port, r->qpn[i],
				      strerror(ret));
		memset(&a, 0, sizeof(a));
		a.qp_state = IBV_QPS_RTS;
		a.timeout = (uint8_t)c->cfg.ack_timeout;
		a.retry_cnt = (uint8_t)c->cfg.retry_cnt;
		a.rnr_retry = 7; /* the peer posts receives late: wait (bounded by our timeout) */
		a.sq_psn = (c->psn + (uint32_t)i) & 0xffffff;
		a.max_rd_atomic = (uint8_t)rd_atom;
		ret = ibv_modify_qp(qp, &a,
				    IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
					    IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
		if (ret)
			return pn_err(-ret, "ibv_modify_qp(RTS) on %s qp 0x%x: %s", c->d->name,
				      qp->qp_num, strerror(ret));
	}
	c->mtu = mtu;
	memcpy(c->rqpn, r->qpn, sizeof(c->rqpn));
	snprintf(c->rname, sizeof(c->rname), "%s:%u", r->dev, r->port);
	c->raddr = r->addr;
	c->rlen = r->len;
	c->rkey = r->rkey;
	c->connected = 1;
	PN_DBG(PN_LOG_VERBS, "%s: %d QPs connected to %s:%u (mtu %d, peer buffer %llu bytes)",
	       c->d->name, c->nqp, r->dev, r->port, mtu, (unsigned long long)r->len);
	return 0;
}

int pn_verbs_conn_mtu(const struct pn_verbs_conn *c)
{
	return c->mtu;
}

int pn_verbs_conn_max_inline(const struct pn_verbs_conn *c)
{
	return c->cfg.max_inline;
}

int pn_verbs_conn_nqp(const struct pn_verbs_conn *c)
{
	return c->nqp;
}

uint32_t pn_verbs_conn_qpn(const struct pn_verbs_conn *c, int i)
{
	return i >= 0 && i < c->nqp ? c->qps[i].qp->qp_num : 0;
}

struct pn_verbs_dev *pn_verbs_conn_dev(const struct pn_verbs_conn *c)
{
	return c->d;
}

int pn_verbs_conn_fd(const struct pn_verbs_conn *c)
{
	return c->ch->fd;
}

double pn_verbs_conn_timeout(const struct pn_verbs_conn *c)
{
	return c->cfg.timeout;
}

void pn_verbs_conn_watch(struct pn_verbs_conn *c, int fd)
{
	c->watch = fd;
	c->watch_next = 0;
}

int pn_verbs_outstanding(const struct pn_verbs_conn *c)
{
	int i, n = c->live_xfers;

	for (i = 0; i < c->nqp; i++)
		n += (int)(c->qps[i].rq_head - c->qps[i].rq_tail);
	return n;
}

/* ------------------------------------------------------------ completions */

static int ready_push(struct pn_verbs_conn *c, const struct pn_verbs_cqe *e)
{
	if (c->rcount == c->rcap) {
		int ncap = 2 * c->rcap, i;
		struct pn_verbs_cqe *n = malloc((size_t)ncap * sizeof(*n));

		if (!n)
			return conn_fail(c, -ENOMEM, "out of memory");
		for (i = 0; i < c->rcount; i++)
			n[i] = c->ready[(c->rhead + i) % c->rcap];
		free(c->ready);
		c->ready = n;
		c->rcap = ncap;
		c->rhead = 0;
	}
	c->ready[(c->rhead + c->rcount) % c->rcap] = *e;
	c->rcount++;
	return 0;
}

static void xfer_free(struct pn_verbs_conn *c, int x)
{
	c->xfers[x].next_free = c->free_xfer;
	c->free_xfer = x;
	c->live_xfers--;
}

static int handle_send(struct pn_verbs_conn *c, const struct ibv_wc *wc)
{
	int q = WRID_QP(wc->wr_id);
	uint64_t seq;
	struct vqp *v;
	int ret = 0;

	if (q < 0 || q >= c->nqp || (wc->wr_id & WR_RECV))
		return conn_fail(c, -EIO, "%s: completion with a bad id 0x%llx", c->d->name,
				 (unsigned long long)wc->wr_id);
	v = &c->qps[q];
	seq = WRID_SEQ(wc->wr_id, v->sq_tail);
	if (seq >= v->sq_head)
		return conn_fail(c, -EIO, "%s qp 0x%x: completion for a work request not posted",
				 c->d->name, v->qp->qp_num);
	/* RC send queues complete in order: this retires every earlier piece */
	for (; v->sq_tail <= seq; v->sq_tail++) {
		struct sq_slot *s = &v->sq[v->sq_tail % (uint64_t)c->cfg.sq_depth];

		if (s->mr)
			pn_mrcache_put(&c->d->cache, s->mr);
		s->mr = NULL;
		if (v->sq_tail == seq && s->xfer >= 0) {
			struct xfer *x = &c->xfers[s->xfer];

			if (--x->pending == 0) {
				struct pn_verbs_cqe e = { .id = x->id, .op = x->op, .qp = x->qp,
							  .len = x->len, .count = x->count };

				ret = ready_push(c, &e);
				xfer_free(c, s->xfer);
			}
		}
		s->xfer = -1;
	}
	return ret;
}

static int handle_recv(struct pn_verbs_conn *c, const struct ibv_wc *wc)
{
	int q = WRID_QP(wc->wr_id);
	struct pn_verbs_cqe e = { 0 };
	struct rq_slot *s;
	struct vqp *v;

	if (q < 0 || q >= c->nqp || !(wc->wr_id & WR_RECV) ||
	    WRID_SEQ(wc->wr_id, c->qps[q].rq_tail) != c->qps[q].rq_tail)
		return conn_fail(c, -EIO, "%s: receive completion out of order (id 0x%llx)",
				 c->d->name, (unsigned long long)wc->wr_id);
	v = &c->qps[q];
	s = &v->rq[v->rq_tail % (uint64_t)c->cfg.rq_depth];
	if (s->mr)
		pn_mrcache_put(&c->d->cache, s->mr);
	s->mr = NULL;
	v->rq_tail++;
	e.id = s->id;
	e.op = PN_VERBS_RECV;
	e.qp = q;
	e.len = wc->byte_len;
	e.has_imm = !!(wc->wc_flags & IBV_WC_WITH_IMM);
	e.imm = e.has_imm ? ntohl(wc->imm_data) : 0;
	e.rdma = wc->opcode == IBV_WC_RECV_RDMA_WITH_IMM;
	e.count = 1;
	return ready_push(c, &e);
}

/* What a failed completion was: from our records (the opcode of a failed
 * completion is undefined). */
static const char *wc_what(const struct pn_verbs_conn *c, const struct ibv_wc *wc)
{
	int q = WRID_QP(wc->wr_id);
	const struct vqp *v;

	if (q < 0 || q >= c->nqp)
		return "work request";
	v = &c->qps[q];
	if (wc->wr_id & WR_RECV)
		return "receive";
	return pn_verbs_op_name(v->sq[WRID_SEQ(wc->wr_id, v->sq_tail) %
				      (uint64_t)c->cfg.sq_depth].op);
}

/* Harvest the CQ once; returns completions handled or -errno. */
static int cq_harvest(struct pn_verbs_conn *c)
{
	struct ibv_wc wc[32];
	int n, i, ret;

	n = ibv_poll_cq(c->cq, (int)PN_ARRAY_SIZE(wc), wc);
	if (n < 0)
		return conn_fail(c, -EIO, "ibv_poll_cq on %s failed", c->d->name);
	for (i = 0; i < n; i++) {
		int q = WRID_QP(wc[i].wr_id);
		uint32_t qpn = q >= 0 && q < c->nqp ? c->qps[q].qp->qp_num : wc[i].qp_num;

		if (wc[i].status != IBV_WC_SUCCESS)
			return conn_fail(c, -EIO, "%s on %s qp 0x%x (to %s qp 0x%x) failed: %s "
						  "(status %d, vendor error 0x%x)",
					 wc_what(c, &wc[i]), c->d->name, qpn,
					 c->rname[0] ? c->rname : "peer",
					 q >= 0 && q < c->nqp ? c->rqpn[q] : 0,
					 ibv_wc_status_str(wc[i].status), wc[i].status,
					 wc[i].vendor_err);
		if (wc[i].opcode & IBV_WC_RECV)
			ret = handle_recv(c, &wc[i]);
		else
			ret = handle_send(c, &wc[i]);
		if (ret)
			return ret;
	}
	return n;
}

/* The watched side channel hung up (revents of a poll that asked for
 * POLLRDHUP): the peer's process is gone, whatever its QPs still answer. */
static int watch_gone(struct pn_verbs_conn *c, short revents, const char *what)
{
	if (!(revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)))
		return 0;
	return conn_fail(c, -ECONNRESET, "its connection closed while %s on %s (qp 0x%x to %s)", what,
			 c->d->name, c->qps[0].qp->qp_num, c->rname[0] ? c->rname : "no peer yet");
}

/* Ask the watched side channel at most every 10 ms (a system call). */
static int watch_check(struct pn_verbs_conn *c, double now, const char *what)
{
	struct pollfd pfd = { .fd = c->watch, .events = POLLRDHUP };

	if (c->watch < 0 || now < c->watch_next)
		return 0;
	c->watch_next = now + 0.01;
	if (poll(&pfd, 1, 0) <= 0)
		return 0;
	return watch_gone(c, pfd.revents, what);
}

int pn_verbs_conn_alive(struct pn_verbs_conn *c, const char *what)
{
	if (c->failed)
		return pn_err(c->failed, "%s", c->why);
	return c->watch < 0 ? 0 : watch_check(c, pn_now(), what);
}

/* Wait for at least one completion until the deadline: spin, then sleep;
 * a hang-up of the watched side channel ends the wait. */
static int cq_wait(struct pn_verbs_conn *c, double deadline, const char *what)
{
	double spin_end = pn_now() + c->cfg.spin_us * 1e-6;
	unsigned spins = 0;
	int n, ret;

	for (;;) {
		n = cq_harvest(c);
		if (n)
			return n;
		/* the clock can be a system call (a VM's HPET): read it now and then */
		if (++spins % 16 == 0) {
			double now = pn_now();

			if (now >= spin_end)
				break;
			ret = watch_check(c, now, what);
			if (ret)
				return ret;
		}
		/* a long spin gives way: soft-RoCE and the network stack need this
		 * CPU too (a VM with as many spinners as CPUs stalls for ms) */
		if (spins > 256)
			sched_yield();
	}
	for (;;) {
		struct pollfd pfd[2] = { { .fd = c->ch->fd, .events = POLLIN },
					 { .fd = c->watch, .events = POLLRDHUP } };
		struct ibv_cq *ecq;
		void *ectx;
		double left;

		/* armed on creation and after each event; re-check after arming */
		n = cq_harvest(c);
		if (n)
			return n;
		left = deadline - pn_now();
		if (left <= 0)
			return 0;
		ret = poll(pfd, c->watch >= 0 ? 2 : 1, pn_poll_ms(left, INT_MAX - 1) + 1);
		if (ret < 0 && errno != EINTR)
			return conn_fail(c, -errno, "poll on the completion channel of %s: %s",
					 c->d->name, strerror(errno));
		if (ret <= 0)
			continue;
		ret = c->watch >= 0 ? watch_gone(c, pfd[1].revents, what) : 0;
		if (ret)
			return ret;
		if (!pfd[0].revents)
			continue;
		if (ibv_get_cq_event(c->ch, &ecq, &ectx) == 0) {
			if (++c->unacked >= 64) {
				ibv_ack_cq_events(c->cq, c->unacked);
				c->unacked = 0;
			}
			ret = ibv_req_notify_cq(c->cq, 0);
			if (ret)
				return conn_fail(c, -ret, "ibv_req_notify_cq on %s: %s", c->d->name,
						 strerror(ret));
		}
	}
}

static int timed_out(struct pn_verbs_conn *c, const char *what)
{
	int i, sq = 0, rq = 0;

	for (i = 0; i < c->nqp; i++) {
		sq += (int)(c->qps[i].sq_head - c->qps[i].sq_tail);
		rq += (int)(c->qps[i].rq_head - c->qps[i].rq_tail);
	}
	return pn_err(-ETIMEDOUT, "timed out after %g s %s on %s (%d QP%s from qp 0x%x to %s: %d "
				  "sends and %d receives outstanding)",
		      c->cfg.timeout, what, c->d->name, c->nqp, c->nqp > 1 ? "s" : "",
		      c->qps[0].qp->qp_num, c->rname[0] ? c->rname : "no peer yet", sq, rq);
}

int pn_verbs_poll(struct pn_verbs_conn *c, struct pn_verbs_cqe *out, int max, int min)
{
	double deadline = 0;
	int n, ret;

	if (c->failed)
		return pn_err(c->failed, "%s", c->why);
	if (min > max)
		min = max;
	ret = cq_harvest(c);
	if (ret < 0)
		return ret;
	if (c->rcount < min)
		deadline = pn_now() + c->cfg.timeout;
	while (c->rcount < min) {
		ret = cq_wait(c, deadline, "waiting for completions");
		if (ret < 0)
			return ret;
		if (!ret)
			return timed_out(c, "waiting for completions");
	}
	for (n = 0; n < max && c->rcount; n++) {
		out[n] = c->ready[c->rhead];
		c->rhead = (c->rhead + 1) % c->rcap;
		c->rcount--;
	}
	return n;
}

/* ------------------------------------------------------------------ posting */

static int sq_room(struct pn_verbs_conn *c, int q)
{
	struct vqp *v = &c->qps[q];
	double deadline;
	int ret;

	if (v->sq_head - v->sq_tail < (uint64_t)c->cfg.sq_depth)
		return 0; /* the common case: no clock read */
	deadline = pn_now() + c->cfg.timeout;
	while (v->sq_head - v->sq_tail >= (uint64_t)c->cfg.sq_depth) {
		ret = cq_wait(c, deadline, "waiting for room in the send queue");
		if (ret < 0)
			return ret;
		if (!ret)
			return timed_out(c, "waiting for room in the send queue");
	}
	return 0;
}

/* Post one piece on QP q; signaled pieces count for transfer x. */
static int post_piece(struct pn_verbs_conn *c, int q, int op, char *buf, size_t len,
		      uint64_t roff, uint32_t imm, int with_imm, int x)
{
	struct vqp *v = &c->qps[q];
	struct ibv_send_wr wr, *bad = NULL;
	struct ibv_sge sge;
	struct sq_slot *s;
	void *mr = NULL;
	int ret, inl;

	ret = sq_room(c, q);
	if (ret)
		return ret;
	memset(&wr, 0, sizeof(wr));
	inl = len && (int)len <= c->cfg.max_inline && op != PN_VERBS_READ;
	if (len && !inl) {
		ret = pn_mrcache_get(&c->d->cache, buf, len, &mr);
		if (ret)
			return pn_err_ctx(ret, "%s on %s qp 0x%x", pn_verbs_op_name(op), c->d->name,
					  v->qp->qp_num);
	}
	sge.addr = (uint64_t)(uintptr_t)buf;
	sge.length = (uint32_t)len;
	sge.lkey = mr ? ((struct ibv_mr *)mr)->lkey : 0;
	wr.wr_id = WRID(q, v->sq_head);
	wr.sg_list = len ? &sge : NULL;
	wr.num_sge = len ? 1 : 0;
	wr.send_flags = (x >= 0 ? IBV_SEND_SIGNALED : 0) | (inl ? IBV_SEND_INLINE : 0);
	switch (op) {
	case PN_VERBS_WRITE:
	case PN_VERBS_WRITE_IMM:
		wr.opcode = with_imm ? IBV_WR_RDMA_WRITE_WITH_IMM : IBV_WR_RDMA_WRITE;
		break;
	case PN_VERBS_READ:
		wr.opcode = IBV_WR_RDMA_READ;
		break;
	default:
		wr.opcode = with_imm ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND;
		break;
	}
	if (with_imm)
		wr.imm_data = htonl(imm);
	if (op != PN_VERBS_SEND) {
		wr.wr.rdma.remote_addr = c->raddr + roff;
		wr.wr.rdma.rkey = c->rkey;
	}
	/* An unsignaled piece is retired by a later signaled one on this QP:
	 * signal at least every half queue so the queue never fills up with
	 * pieces nothing retires. */
	if (x < 0 && (v->sq_head + 1) % (uint64_t)PN_MAX(c->cfg.sq_depth / 2, 1) == 0)
		wr.send_flags |= IBV_SEND_SIGNALED;
	ret = ibv_post_send(v->qp, &wr, &bad);
	if (ret) {
		if (mr)
			pn_mrcache_put(&c->d->cache, mr);
		return conn_fail(c, -ret, "ibv_post_send(%s, %zu bytes) on %s qp 0x%x: %s",
				 pn_verbs_op_name(op), len, c->d->name, v->qp->qp_num,
				 strerror(ret));
	}
	s = &v->sq[v->sq_head % (uint64_t)c->cfg.sq_depth];
	s->mr = mr;
	s->xfer = x;
	s->op = op;
	if (x >= 0)
		c->xfers[x].pending++;
	v->sq_head++;
	return 0;
}

static int post_recv(struct pn_verbs_conn *c, const struct pn_verbs_wr *w, int q)
{
	struct vqp *v = &c->qps[q];
	struct ibv_recv_wr wr, *bad = NULL;
	struct ibv_sge sge;
	struct rq_slot *s;
	void *mr = NULL;
	int ret;

	if (v->rq_head - v->rq_tail >= (uint64_t)c->cfg.rq_depth)
		return pn_err(-ENOBUFS, "receive queue of %s qp 0x%x is full (%d posted)",
			      c->d->name, v->qp->qp_num, c->cfg.rq_depth);
	if (w->len > UINT32_MAX)
		return pn_err(-EMSGSIZE, "receive of %zu bytes on %s: too large", w->len,
			      c->d->name);
	if (w->len) {
		ret = pn_mrcache_get(&c->d->cache, w->buf, w->len, &mr);
		if (ret)
			return pn_err_ctx(ret, "receive on %s qp 0x%x", c->d->name, v->qp->qp_num);
	}
	sge.addr = (uint64_t)(uintptr_t)w->buf;
	sge.length = (uint32_t)w->len;
	sge.lkey = mr ? ((struct ibv_mr *)mr)->lkey : 0;
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = WRID(q, v->rq_head) | WR_RECV;
	wr.sg_list = w->len ? &sge : NULL;
	wr.num_sge = w->len ? 1 : 0;
	ret = ibv_post_recv(v->qp, &wr, &bad);
	if (ret) {
		if (mr)
			pn_mrcache_put(&c->d->cache, mr);
		return conn_fail(c, -ret, "ibv_post_recv(%zu bytes) on %s qp 0x%x: %s", w->len,
				 c->d->name, v->qp->qp_num, strerror(ret));
	}
	s = &v->rq[v->rq_head % (uint64_t)c->cfg.rq_depth];
	s->id = w->id;
	s->mr = mr;
	v->rq_head++;
	return 0;
}

int pn_verbs_stripe_qps(const struct pn_verbs_conn *c, size_t len, size_t chunk)
{
	size_t pieces;

	if (!chunk)
		return 1;
	pieces = len ? PN_DIV_UP(len, chunk) : 1;
	return (int)PN_MIN(pieces, (size_t)c->nqp);
}

int pn_verbs_post(struct pn_verbs_conn *c, const struct pn_verbs_wr *w)
{
	size_t maxmsg = c->d->port.max_msg ? c->d->port.max_msg : (1u << 30);
	size_t chunk, off, plen, npieces, pi = 0;
	int q, x, ret = 0, nq, with_imm;
	char *buf = w->buf;

	if (c->failed)
		return pn_err(c->failed, "%s", c->why);
	if (w->qp >= c->nqp)
		return pn_err(-EINVAL, "QP index %d on %s: %d QPs", w->qp, c->d->name, c->nqp);
	q = w->qp >= 0 ? w->qp : c->next_qp;
	if (w->qp < 0)
		c->next_qp = (c->next_qp + 1) % c->nqp;
	if (w->len && !w->buf)
		return pn_err(-EINVAL, "%s of %zu bytes without a buffer", pn_verbs_op_name(w->op),
			      w->len);
	if (w->op == PN_VERBS_RECV)
		return post_recv(c, w, q);
	if (!c->connected)
		return pn_err(-ENOTCONN, "%s on %s: not connected", pn_verbs_op_name(w->op),
			      c->d->name);
	switch (w->op) {
	case PN_VERBS_WRITE:
	case PN_VERBS_WRITE_IMM:
	case PN_VERBS_READ:
		if ((w->len && !c->rkey) || w->roff > c->rlen || w->len > c->rlen - w->roff)
			return pn_err(-EINVAL, "%s of %zu bytes at offset %llu: outside the peer's "
					       "buffer (%llu bytes)",
				      pn_verbs_op_name(w->op), w->len, (unsigned long long)w->roff,
				      (unsigned long long)c->rlen);
		break;
	case PN_VERBS_SEND:
		if (w->len > maxmsg)
			return pn_err(-EMSGSIZE, "send of %zu bytes on %s: the port's largest "
						 "message is %zu bytes",
				      w->len, c->d->name, maxmsg);
		if (w->chunk)
			return pn_err(-EINVAL, "a send cannot be striped");
		break;
	default:
		return pn_err(-EINVAL, "unknown operation %d", w->op);
	}
	if (w->flags & PN_VERBS_F_UNSIGNALED) {
		if (w->chunk || (w->len > maxmsg && w->op != PN_VERBS_SEND))
			return pn_err(-EINVAL, "an unsignaled operation is one work request (no "
					       "chunk, at most %zu bytes)", maxmsg);
		with_imm = w->op == PN_VERBS_WRITE_IMM ||
			   (w->op == PN_VERBS_SEND && (w->flags & PN_VERBS_F_IMM));
		ret = post_piece(c, q, w->op, buf, w->len, w->roff, w->imm, with_imm, -1);
		if (!ret)
			c->qps[q].unsig_ops++;
		return ret;
	}
	if (c->free_xfer < 0)
		return pn_err(-ENOBUFS, "%s: too many operations outstanding", c->d->name);
	x = c->free_xfer;
	c->free_xfer = c->xfers[x].next_free;
	c->live_xfers++;
	c->xfers[x] = (struct xfer){ .id = w->id, .op = w->op, .qp = q, .len = w->len,
				     .pending = 0, .next_free = -1,
				     .count = 1 + (w->chunk ? 0 : c->qps[q].unsig_ops) };
	if (!w->chunk)
		c->qps[q].unsig_ops = 0;
	/* one extra count held while posting, so no piece completes the transfer early */
	c->xfers[x].pending = 1;
	with_imm = w->op == PN_VERBS_WRITE_IMM || (w->op == PN_VERBS_SEND && (w->flags & PN_VERBS_F_IMM));
	if (w->op == PN_VERBS_SEND) {
		ret = post_piece(c, q, w->op, buf, w->len, 0, w->imm, with_imm, x);
		goto out;
	}
	chunk = w->chunk ? PN_MIN(w->chunk, maxmsg) : maxmsg;
	nq = w->chunk ? pn_verbs_stripe_qps(c, w->len, chunk) : 1;
	if (w->chunk) {
		q = 0;
		c->xfers[x].qp = 0;
	}
	/* Piece i goes on QP i % nq (striped) or all on q; the last piece on each
	 * QP is signaled and carries the immediate. */
	npieces = w->len ? PN_DIV_UP(w->len, chunk) : 1;
	for (pi = 0, off = 0; pi < npieces; pi++, off += plen) {
		int pq = w->chunk ? (int)(pi % (size_t)nq) : q;
		int last_on_qp = pi + (size_t)nq >= npieces;

		plen = PN_MIN(chunk, w->len - off);
		ret = post_piece(c, pq, w->op, buf + off, plen, w->roff + off, w->imm,
				 with_imm && last_on_qp, last_on_qp ? x : -1);
		if (ret)
			break;
	}
	/* a transfer posted in part cannot be taken back */
	if (ret && pi > 0 && !c->failed)
		ret = conn_fail(c, ret, "%s", pn_errmsg(ret));
out:
	if (--c->xfers[x].pending == 0) {
		if (!ret) {
			struct pn_verbs_cqe e = { .id = w->id, .op = w->op, .qp = c->xfers[x].qp,
						  .len = w->len, .count = c->xfers[x].count };

			ret = ready_push(c, &e);
		}
		xfer_free(c, x);
	} else if (ret) {
		/* pieces in flight still refer to it; the QP is failed anyway */
		c->xfers[x].id = w->id;
	}
	return ret;
}
