/* SPDX-License-Identifier: MIT */
/*
 * Private to the verbs layer (verbs_dev.c, verbs.c): the device handle and
 * the helpers both halves use.  Only the device half's header (verbs_dev.h)
 * is below it, so verbs_dev.c sees nothing of the connection half.  Nothing outside src/transport/ includes it.
 */
#ifndef PENNY_VERBS_IMPL_H
#define PENNY_VERBS_IMPL_H

#include "transport/verbs_dev.h"
#include "transport/mrcache.h"

#include <infiniband/verbs.h>

struct pn_verbs_dev {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_device_attr attr;
	struct pn_verbs_port_info port;
	char name[80];		/* "rxe0:1" */
	struct pn_mrcache cache;
};

static inline const char *gid_type_name(int t)
{
	switch (t) {
	case IBV_GID_TYPE_IB: return "IB";
	case IBV_GID_TYPE_ROCE_V1: return "RoCE v1";
	case IBV_GID_TYPE_ROCE_V2: return "RoCE v2";
	default: return "unknown type";
	}
}

static inline int gid_v4mapped(const uint8_t g[16])
{
	static const uint8_t pre[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

	return !memcmp(g, pre, sizeof(pre));
}

static inline int gid_zero(const uint8_t g[16])
{
	int i;

	for (i = 0; i < 16; i++)
		if (g[i])
			return 0;
	return 1;
}

int pn_verbs_mtu_bytes(enum ibv_mtu m);
enum ibv_mtu pn_verbs_mtu_enum(int b);

#endif
