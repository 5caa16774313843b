/* SPDX-License-Identifier: MIT */
/*
 * The device half of the verbs layer (verbs_dev.c): one device port opened
 * with its context, protection domain, the GID in use and a memory
 * registration cache.  Connections over it are verbs.h.
 */
#ifndef PENNY_VERBS_DEV_H
#define PENNY_VERBS_DEV_H

#include <stddef.h>
#include <stdint.h>

struct pn_verbs_dev;

struct pn_verbs_dev_cfg {
	int gid_index;		/* -1: pn_nic_pick_gid (IPv4-mapped RoCE v2 first) */
	int mrcache_max;	/* cached registrations (0: 1024) */
};

struct pn_verbs_port_info {
	char dev[64];
	int port;
	int ethernet;		/* link layer: 1 Ethernet (RoCE), 0 InfiniBand */
	int lid;
	int active_mtu;		/* bytes */
	double rate_gbps;	/* width x speed of the port, 0 unknown */
	int gid_index;
	int gid_type;		/* enum ibv_gid_type: IB, RoCE v1, RoCE v2 */
	uint8_t gid[16];
	char gid_str[48];	/* "::ffff:10.0.0.1", "fe80::..." */
	uint32_t max_msg;	/* largest message of the port */
};

void pn_verbs_dev_cfg_init(struct pn_verbs_dev_cfg *cfg);
/* spec: "DEV" or "DEV:PORT" (port 1 by default).  The port must be ACTIVE. */
int pn_verbs_dev_open(struct pn_verbs_dev **d, const char *spec, const struct pn_verbs_dev_cfg *cfg);
void pn_verbs_dev_close(struct pn_verbs_dev *d);
const struct pn_verbs_port_info *pn_verbs_dev_port(const struct pn_verbs_dev *d);
/* "rxe0:1" */
const char *pn_verbs_dev_name(const struct pn_verbs_dev *d);

/*
 * Registration through the cache: keys of memory covering [buf, buf+len),
 * held until pn_verbs_unreg.  Memory must be invalidated (pn_verbs_invalidate)
 * before it is freed.
 */
int pn_verbs_reg(struct pn_verbs_dev *d, const void *buf, size_t len, uint32_t *lkey,
		 uint32_t *rkey);
void pn_verbs_unreg(struct pn_verbs_dev *d, const void *buf, size_t len);
int pn_verbs_invalidate(struct pn_verbs_dev *d, const void *buf, size_t len);
void pn_verbs_cache_stats(const struct pn_verbs_dev *d, uint64_t *hits, uint64_t *misses,
			  uint64_t *evictions);
/*
 * Device memory exported as a dma-buf (GPU memory, from the cuda plugin):
 * registers [offset, offset+len) of fd with ibv_reg_dmabuf_mr at address iova
 * and puts it in the cache, so operations on pointers in [iova, iova+len)
 * use it.  Dropped by pn_verbs_invalidate(iova, len) or at close.
 */
int pn_verbs_reg_dmabuf(struct pn_verbs_dev *d, int fd, uint64_t offset, size_t len,
			uint64_t iova);

/* Helpers for callers and tests. */
int pn_verbs_mtu_valid(int bytes);	/* 256, 512, 1024, 2048, 4096 */
/* "::ffff:10.0.0.1" style text of a GID */
const char *pn_verbs_gid_str(const uint8_t gid[16], char *buf, size_t len);

#endif
