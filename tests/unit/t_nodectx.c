/* SPDX-License-Identifier: MIT */
/*
 * penny top's node context (node/nodectx.h) without a topology: the GPU
 * list's text and the rail view's sums and shares over hand-made ports.
 */
#include "node/nodectx.h"
#include "unit.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

TEST(gpu_list_text)
{
	struct pn_nicctx n = { .ngpus = 6, .gpu = { 0, 1, 2, 4, 6, 7 } };
	char buf[64];

	CHECK_STR(pn_nodectx_gpus(&n, buf, sizeof(buf)), "0-2,4,6,7");
	n.ngpus = 1;
	CHECK_STR(pn_nodectx_gpus(&n, buf, sizeof(buf)), "0");
	n.ngpus = 0;
	CHECK_STR(pn_nodectx_gpus(&n, buf, sizeof(buf)), "");
	CHECK_STR(pn_nodectx_gpus(NULL, buf, sizeof(buf)), "");
	n.ngpus = 6;
	/* too small: whole entries only */
	CHECK_STR(pn_nodectx_gpus(&n, buf, 6), "0-2,4");
}

static void port(struct pn_counters_port *p, const char *dev, int type, double rx, double tx)
{
	snprintf(p->dev, sizeof(p->dev), "%s", dev);
	p->type = type;
	p->rx_Bps = rx;
	p->tx_Bps = tx;
	p->rate_gbps = 400;
}

TEST(rail_sums_and_shares)
{
	struct pn_nicctx nics[3] = { { .dev = "mlx5_0", .numa = 0, .rail = 0 },
				     { .dev = "mlx5_1", .numa = 1, .rail = 1 },
				     { .dev = "mlx5_2", .numa = 1, .rail = 2 } };
	struct pn_nodectx c = { .ngpus = 0, .nnics = 3, .nics = nics };
	struct pn_counters_set v = { .n = 5 };
	struct pn_rail_sum r[4];
	int idx[5] = { 0, 1, 2, 3, 4 }, n;

	v.ports = calloc(5, sizeof(*v.ports));
	CHECK(v.ports != NULL);
	port(&v.ports[0], "mlx5_0", PN_PT_RDMA, 100, 200);
	port(&v.ports[1], "mlx5_0", PN_PT_RDMA, 300, 400);
	port(&v.ports[2], "mlx5_1", PN_PT_RDMA, NAN, NAN);
	port(&v.ports[3], "eth0", PN_PT_NETDEV, 0, 1000);
	port(&v.ports[4], "mlx5_9", PN_PT_RDMA, 0, 0);
	n = pn_nodectx_rails(&c, &v, idx, 5, r);
	CHECK_EQ_INT(n, 3); /* rail 2 has no port: no row */
	CHECK_EQ_INT(r[0].rail, 0);
	CHECK_EQ_INT(r[0].nports, 2);
	CHECK(r[0].rx_Bps == 400 && r[0].tx_Bps == 600 && r[0].rate_gbps == 800);
	CHECK(fabs(r[0].share - 0.5) < 1e-12);
	CHECK_EQ_INT(r[1].rail, 1);
	CHECK(isnan(r[1].rx_Bps) && isnan(r[1].share) && r[1].nknown == 0);
	CHECK_EQ_INT(r[2].rail, -1);
	CHECK(r[2].nic == NULL && r[2].nports == 2 && r[2].tx_Bps == 1000);
	CHECK(fabs(r[2].share - 0.5) < 1e-12);
	/* the filter's ports only; no traffic: no share */
	idx[0] = 4;
	n = pn_nodectx_rails(&c, &v, idx, 1, r);
	CHECK_EQ_INT(n, 1);
	CHECK(r[0].rail == -1 && isnan(r[0].share));
	/* no context at all: one row */
	n = pn_nodectx_rails(NULL, &v, (int[]){ 0, 1 }, 2, r);
	CHECK_EQ_INT(n, 1);
	CHECK(r[0].rail == -1 && r[0].nports == 2 && fabs(r[0].share - 1) < 1e-12);
	CHECK(pn_nodectx_port(&c, &v.ports[3]) == NULL);
	CHECK(pn_nodectx_port(&c, &v.ports[1]) == &nics[0]);
	free(v.ports);
}

int main(void)
{
	RUN(gpu_list_text);
	RUN(rail_sums_and_shares);
	return unit_done();
}
