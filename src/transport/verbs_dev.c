/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
/*
 * The verbs layer, devices: opening a device port by name, its GID choice and
 * rate, memory registration through the cache (dma-buf included).
 * Connections, completions and posting are in verbs.c.
 */
#include "transport/verbs_dev.h"
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

/* ---------------------------------------------------------------- helpers */

int pn_verbs_mtu_valid(int b)
{
	return b == 256 || b == 512 || b == 1024 || b == 2048 || b == 4096;
}

int pn_verbs_mtu_bytes(enum ibv_mtu m)
{
	return m >= IBV_MTU_256 && m <= IBV_MTU_4096 ? 128 << m : 0;
}

enum ibv_mtu pn_verbs_mtu_enum(int b)
{
	switch (b) {
	case 256: return IBV_MTU_256;
	case 512: return IBV_MTU_512;
	case 1024: return IBV_MTU_1024;
	case 2048: return IBV_MTU_2048;
	default: return IBV_MTU_4096;
	}
}

const char *pn_verbs_gid_str(const uint8_t gid[16], char *buf, size_t len)
{
	if (!inet_ntop(AF_INET6, gid, buf, (socklen_t)len))
		snprintf(buf, len, "?");
	return buf;
}

/* Port rate from the verbs width and speed codes (Gb/s of data). */
static double port_rate(uint8_t width, uint8_t speed)
{
	double lanes, per;

	switch (width) {
	case 1: lanes = 1; break;
	case 2: lanes = 4; break;
	case 4: lanes = 8; break;
	case 8: lanes = 12; break;
	case 16: lanes = 2; break;
	default: return 0;
	}
	switch (speed) {
	case 1: per = 2.5; break;	/* SDR */
	case 2: per = 5; break;		/* DDR */
	case 4: per = 10; break;	/* QDR */
	case 8: per = 10; break;	/* FDR10 */
	case 16: per = 14; break;	/* FDR */
	case 32: per = 25; break;	/* EDR */
	case 64: per = 50; break;	/* HDR */
	case 128: per = 100; break;	/* NDR */
	default: return 0;
	}
	return lanes * per;
}

/* ----------------------------------------------------------------- device */

static int cache_reg(void *ctx, void *addr, size_t len, void **handle)
{
	struct pn_verbs_dev *d = ctx;
	struct ibv_mr *mr;

	mr = ibv_reg_mr(d->pd, addr, len,
			IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	if (!mr) {
		int e = errno ? errno : ENOMEM;

		return pn_err(-e, "ibv_reg_mr of %zu bytes at %p on %s: %s", len, addr, d->name,
			      strerror(e));
	}
	PN_DBG(PN_LOG_VERBS, "%s: registered %zu bytes at %p (lkey 0x%x)", d->name, len, addr,
	       mr->lkey);
	*handle = mr;
	return 0;
}

static void cache_dereg(void *ctx, void *handle)
{
	struct ibv_mr *mr = handle;
	struct pn_verbs_dev *d = ctx;
	int ret = ibv_dereg_mr(mr);

	if (ret)
		PN_DBG(PN_LOG_VERBS, "%s: ibv_dereg_mr: %s", d->name, strerror(ret));
}

void pn_verbs_dev_cfg_init(struct pn_verbs_dev_cfg *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->gid_index = -1;
}

static int parse_spec(const char *spec, char *dev, size_t len, int *port)
{
	const char *colon = strrchr(spec, ':');
	size_t n = colon ? (size_t)(colon - spec) : strlen(spec);

	*port = 1;
	if (!n || n >= len)
		return pn_err(-EINVAL, "invalid device '%s' (want DEV or DEV:PORT)", spec);
	memcpy(dev, spec, n);
	dev[n] = 0;
	if (colon && (pn_parse_int(colon + 1, port) || *port < 1 || *port > 255))
		return pn_err(-EINVAL, "invalid port in '%s' (want DEV:PORT, port from 1)", spec);
	return 0;
}

static struct ibv_context *open_by_name(const char *name)
{
	struct ibv_device **list;
	struct ibv_context *ctx = NULL;
	char have[256] = "";
	size_t hl = 0;
	int n = 0, i;

	list = ibv_get_device_list(&n);
	if (!list) {
		pn_err(-ENODEV, "no RDMA devices (ibv_get_device_list: %s)", strerror(errno));
		return NULL;
	}
	for (i = 0; i < n; i++) {
		const char *dn = ibv_get_device_name(list[i]);

		if (!strcmp(dn, name)) {
			ctx = ibv_open_device(list[i]);
			if (!ctx)
				pn_err(-ENODEV, "ibv_open_device of '%s': %s", name,
				       strerror(errno ? errno : ENODEV));
			break;
		}
		if (hl < sizeof(have))
			hl += (size_t)snprintf(have + hl, sizeof(have) - hl, "%s%s", hl ? ", " : "", dn);
	}
	if (i == n)
		pn_err(-ENODEV, n ? "no RDMA device '%s' (have: %s)" : "no RDMA device '%s' (none found)",
		       name, have);
	ibv_free_device_list(list);
	return ctx;
}

/* First IPv4-mapped RoCE v2 GID, then any RoCE v2, then index 0 (verbs only). */
static int pick_gid_verbs(struct pn_verbs_dev *d, int tbl)
{
	int i, best = -1, best_score = -1;

	for (i = 0; i < tbl; i++) {
		struct ibv_gid_entry e;
		int score;

		if (ibv_query_gid_ex(d->ctx, (uint32_t)d->port.port, (uint32_t)i, &e, 0) ||
		    gid_zero(e.gid.raw))
			continue;
		if (e.gid_type == IBV_GID_TYPE_ROCE_V2)
			score = gid_v4mapped(e.gid.raw) ? 3 : 2;
		else
			score = i == 0 ? 1 : 0;
		if (score > best_score) {
			best_score = score;
			best = i;
		}
	}
	return best;
}

static int dev_gid(struct pn_verbs_dev *d, int want, int tbl)
{
	struct pn_verbs_port_info *p = &d->port;
	struct ibv_gid_entry e;
	int idx = want, ret;

	if (idx < 0 && p->ethernet) {
		idx = pn_nic_pick_gid(p->dev, p->port, NULL, 0, NULL, 0);
		if (idx < 0)
			idx = pick_gid_verbs(d, tbl);
		if (idx < 0)
			return pn_err(-ENOENT, "%s has no usable GID (RoCE needs one: is an IP "
					       "address set on its netdev?)", d->name);
	} else if (idx < 0) {
		idx = 0;
	}
	if (idx >= tbl)
		return pn_err(-EINVAL, "GID index %d is beyond the table of %s (%d entries)", idx,
			      d->name, tbl);
	ret = ibv_query_gid_ex(d->ctx, (uint32_t)p->port, (uint32_t)idx, &e, 0);
	if (ret || gid_zero(e.gid.raw))
		return pn_err(-ENOENT, "GID index %d of %s is empty%s%s", idx, d->name,
			      ret ? ": ibv_query_gid_ex: " : "", ret ? strerror(ret) : "");
	p->gid_index = idx;
	p->gid_type = (int)e.gid_type;
	memcpy(p->gid, e.gid.raw, 16);
	pn_verbs_gid_str(p->gid, p->gid_str, sizeof(p->gid_str));
	return 0;
}

int pn_verbs_dev_open(struct pn_verbs_dev **out, const char *spec,
		      const struct pn_verbs_dev_cfg *cfg)
{
	struct pn_verbs_dev_cfg defcfg;
	struct ibv_port_attr pa;
	struct pn_verbs_dev *d;
	int port, ret;

	*out = NULL;
	if (!cfg) {
		pn_verbs_dev_cfg_init(&defcfg);
		cfg = &defcfg;
	}
	d = calloc(1, sizeof(*d));
	if (!d)
		return pn_err(-ENOMEM, "out of memory");
	ret = parse_spec(spec, d->port.dev, sizeof(d->port.dev), &port);
	if (ret)
		goto err_free;
	d->port.port = port;
	snprintf(d->name, sizeof(d->name), "%s:%d", d->port.dev, port);
	d->ctx = open_by_name(d->port.dev);
	if (!d->ctx) {
		ret = -ENODEV;
		goto err_free;
	}
	ret = ibv_query_device(d->ctx, &d->attr);
	if (ret) {
		ret = pn_err(-ret, "ibv_query_device on %s: %s", d->port.dev, strerror(ret));
		goto err_close;
	}
	if (port > d->attr.phys_port_cnt) {
		ret = pn_err(-ENODEV, "'%s' has no port %d (ports 1..%d)", d->port.dev, port,
			     d->attr.phys_port_cnt);
		goto err_close;
	}
	ret = ibv_query_port(d->ctx, (uint8_t)port, &pa);
	if (ret) {
		ret = pn_err(-ret, "ibv_query_port on %s: %s", d->name, strerror(ret));
		goto err_close;
	}
	if (pa.state != IBV_PORT_ACTIVE) {
		ret = pn_err(-ENETDOWN, "port %d of %s is %s, not ACTIVE", port, d->port.dev,
			     ibv_port_state_str(pa.state));
		goto err_close;
	}
	d->port.ethernet = pa.link_layer == IBV_LINK_LAYER_ETHERNET;
	d->port.lid = pa.lid;
	d->port.active_mtu = pn_verbs_mtu_bytes(pa.active_mtu);
	d->port.rate_gbps = port_rate(pa.active_width, pa.active_speed);
	d->port.max_msg = pa.max_msg_sz;
	ret = dev_gid(d, cfg->gid_index, pa.gid_tbl_len);
	if (ret)
		goto err_close;
	d->pd = ibv_alloc_pd(d->ctx);
	if (!d->pd) {
		ret = pn_err(-ENOMEM, "ibv_alloc_pd on %s: %s", d->name,
			     strerror(errno ? errno : ENOMEM));
		goto err_close;
	}
	pn_mrcache_init(&d->cache, cfg->mrcache_max, cache_reg, cache_dereg, d);
	PN_DBG(PN_LOG_VERBS, "%s: %s, mtu %d, %.0f Gb/s, GID %d %s (%s)", d->name,
	       d->port.ethernet ? "Ethernet" : "InfiniBand", d->port.active_mtu, d->port.rate_gbps,
	       d->port.gid_index, d->port.gid_str, gid_type_name(d->port.gid_type));
	*out = d;
	return 0;

err_close:
	ibv_close_device(d->ctx);
err_free:
	free(d);
	return ret;
}

void pn_verbs_dev_close(struct pn_verbs_dev *d)
{
	if (!d)
		return;
	pn_mrcache_release(&d->cache);
	ibv_dealloc_pd(d->pd);
	ibv_close_device(d->ctx);
	free(d);
}

const struct pn_verbs_port_info *pn_verbs_dev_port(const struct pn_verbs_dev *d)
{
	return &d->port;
}

const char *pn_verbs_dev_name(const struct pn_verbs_dev *d)
{
	return d->name;
}

int pn_verbs_reg(struct pn_verbs_dev *d, const void *buf, size_t len, uint32_t *lkey,
		 uint32_t *rkey)
{
	void *h;
	int ret = pn_mrcache_get(&d->cache, buf, len, &h);

	if (ret)
		return ret;
	if (lkey)
		*lkey = ((struct ibv_mr *)h)->lkey;
	if (rkey)
		*rkey = ((struct ibv_mr *)h)->rkey;
	return 0;
}

void pn_verbs_unreg(struct pn_verbs_dev *d, const void *buf, size_t len)
{
	pn_mrcache_put_range(&d->cache, buf, len);
}

int pn_verbs_invalidate(struct pn_verbs_dev *d, const void *buf, size_t len)
{
	return pn_mrcache_invalidate(&d->cache, buf, len);
}

void pn_verbs_cache_stats(const struct pn_verbs_dev *d, uint64_t *hits, uint64_t *misses,
			  uint64_t *evictions)
{
	if (hits)
		*hits = d->cache.hits;
	if (misses)
		*misses = d->cache.misses;
	if (evictions)
		*evictions = d->cache.evictions;
}

int pn_verbs_reg_dmabuf(struct pn_verbs_dev *d, int fd, uint64_t offset, size_t len,
			uint64_t iova)
{
	struct ibv_mr *mr;
	int ret;

	mr = ibv_reg_dmabuf_mr(d->pd, offset, len, iova, fd,
			       IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				       IBV_ACCESS_REMOTE_READ);
	if (!mr) {
		int e2 = errno ? errno : EOPNOTSUPP;

		return pn_err(-e2, "ibv_reg_dmabuf_mr of %zu bytes (fd %d, offset %llu) on %s: %s",
			      len, fd, (unsigned long long)offset, d->name, strerror(e2));
	}
	ret = pn_mrcache_insert(&d->cache, (void *)(uintptr_t)iova, len, mr);
	if (ret)
		goto err;
	PN_DBG(PN_LOG_VERBS, "%s: dma-buf fd %d registered at 0x%llx (%zu bytes)", d->name, fd,
	       (unsigned long long)iova, len);
	return 0;
err:
	ibv_dereg_mr(mr);
	return ret;
}

