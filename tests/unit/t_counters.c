/* SPDX-License-Identifier: MIT */
/*
 * The counter model over a fake sysfs tree whose files the test advances
 * between samples, with an injected clock so rates are exact: x4 scaling,
 * a counter that goes down (a reset: none wraps), saturation, a jump beyond
 * the line rate, a rate of inf, a port going DOWN, devices appearing and
 * disappearing, unreadable files, soft-RoCE fallback, netdevs, remote ports,
 * 16 devices x 2 ports; a port's counters as top's JSON keys.
 */
#include "top/counters_json.h"
#include "t_counters_fake.h"
#include "unit.h"

#include "node/counters.h"
#include "base/log.h"
#include "base/out.h"
#include "node/nic.h"
#include "node/perfquery.h"
#include "top/portsel.h"
#include "node/sysfs.h"

#include <math.h>

static uint64_t fake_ns;

static uint64_t fake_clock(void)
{
	return fake_ns;
}

#define SEC 1000000000ull

static void set_init(struct pn_counters_set *s, int ethernet)
{
	struct pn_counters_cfg cfg;

	pn_counters_cfg_init(&cfg);
	cfg.clock_ns = fake_clock;
	cfg.ethernet = ethernet;
	pn_counters_set_init(s, &cfg);
}

/* A new set and its baseline sample at 1 s. */
static void baseline(struct pn_counters_set *s)
{
	set_init(s, 0);
	fake_ns = SEC;
	pn_counters_set_sample(s);
}

static const struct pn_counter *ctr(const struct pn_counters_port *p, int group, const char *name)
{
	int i;

	for (i = 0; p && i < p->nctr; i++)
		if (p->ctr[i].group == group && !strcmp(p->ctr[i].name, name))
			return &p->ctr[i];
	return NULL;
}

static int near(double a, double b)
{
	return fabs(a - b) <= 1e-9 * fabs(b) + 1e-12;
}

TEST(update_arithmetic)
{
	struct pn_counter c;

	memset(&c, 0, sizeof(c));
	c.scale = 4;
	c.group = PN_CG_IB;
	pn_counters_update(&c, 1, 100, 0);
	CHECK_EQ_INT(c.flags, PN_CF_VALID); /* baseline: no delta */
	CHECK_EQ_INT(c.value, 400);
	pn_counters_update(&c, 1, 150, 0);
	CHECK_EQ_INT(c.flags, PN_CF_VALID | PN_CF_DELTA);
	CHECK_EQ_INT(c.delta, 200);
	/* no counter wraps: 4294967000 -> 704 is a reset (PortCounters saturate) */
	pn_counters_update(&c, 1, 4294967000ull, 0);
	pn_counters_update(&c, 1, 704, 0);
	CHECK(c.flags & PN_CF_RESET);
	CHECK(!(c.flags & PN_CF_WRAP));
	CHECK_EQ_INT(c.delta, 704 * 4);
	CHECK_EQ_INT(c.wraps, 0);
	CHECK_EQ_INT(c.value, 704 * 4);
	/* a 64-bit value that goes down is a reset: counts from zero */
	pn_counters_update(&c, 1, 1ull << 40, 0);
	pn_counters_update(&c, 1, 5, 0);
	CHECK(c.flags & PN_CF_RESET);
	CHECK(!(c.flags & PN_CF_WRAP));
	CHECK_EQ_INT(c.delta, 20);
	CHECK_EQ_INT(c.wraps, 0);
	CHECK_EQ_INT(c.value, 20);
	/* a reset to more than the line carries has no delta */
	pn_counters_update(&c, 1, 3000000000ull, 0);
	pn_counters_update(&c, 1, 2000000, 1000000);
	CHECK(c.flags & PN_CF_RESET);
	CHECK(!(c.flags & PN_CF_DELTA));
	CHECK_EQ_INT(c.delta, 0);
	/* a rise of more than the line carries is a jump: no delta, no rate */
	pn_counters_update(&c, 1, 10, 0);
	pn_counters_update(&c, 1, 10 + (1ull << 32), 1000000);
	CHECK(c.flags & PN_CF_JUMP);
	CHECK(!(c.flags & PN_CF_DELTA));
	CHECK_EQ_INT(c.delta, 0);
	CHECK_EQ_INT(c.value, (10 + (1ull << 32)) * 4);
	pn_counters_update(&c, 1, 10 + (1ull << 32) + 1000000, 1000000);
	CHECK_EQ_INT(c.flags, PN_CF_VALID | PN_CF_DELTA);
	CHECK_EQ_INT(c.delta, 4000000);
	/* unreadable: no value, and the next reading is a new baseline */
	pn_counters_update(&c, 0, 0, 0);
	CHECK_EQ_INT(c.flags, 0);
	CHECK(isnan(c.rate));
	pn_counters_update(&c, 1, 77, 0);
	CHECK_EQ_INT(c.flags, PN_CF_VALID);
	/* 32-bit counter pinned at its maximum */
	pn_counters_update(&c, 1, UINT32_MAX, 0);
	pn_counters_update(&c, 1, UINT32_MAX, 0);
	CHECK(c.flags & PN_CF_SAT);
	CHECK(!(c.flags & PN_CF_DELTA));
}

TEST(update_saturating_width)
{
	struct pn_counter c;

	memset(&c, 0, sizeof(c));
	c.scale = 1;
	c.width = 8; /* link_downed */
	pn_counters_update(&c, 1, 250, 0);
	pn_counters_update(&c, 1, 255, 0);
	CHECK_EQ_INT(c.delta, 5);
	CHECK(c.flags & PN_CF_SAT); /* reached the top: a lower bound */
	pn_counters_update(&c, 1, 255, 0);
	CHECK(c.flags & PN_CF_SAT);
	CHECK(!(c.flags & PN_CF_DELTA));
	/* cleared (perfquery -R): never a wrap for a saturating counter */
	pn_counters_update(&c, 1, 3, 0);
	CHECK(c.flags & PN_CF_RESET);
	CHECK_EQ_INT(c.delta, 3);
	/* a value 255 in a 64-bit packet counter is just a value */
	memset(&c, 0, sizeof(c));
	c.scale = 1;
	c.group = PN_CG_IB;
	pn_counters_update(&c, 1, 255, 0);
	pn_counters_update(&c, 1, 255, 0);
	CHECK_EQ_INT(c.flags, PN_CF_VALID | PN_CF_DELTA);
	CHECK_EQ_INT(c.delta, 0);
}

TEST(rates_and_x4_scaling)
{
	struct pn_counters_set s;
	const struct pn_counters_port *p;

	fake_reset();
	fake_ib_port("mlx5_0", 1);
	fake_ctr("mlx5_0", 1, "port_xmit_data", 1000);
	fake_ctr("mlx5_0", 1, "port_rcv_data", 2000);
	set_init(&s, 0);
	fake_ns = 10 * SEC;
	CHECK_EQ_INT(pn_counters_set_sample(&s), 0);
	CHECK_EQ_INT(s.n, 1);
	p = &s.ports[0];
	CHECK_STR(p->name, "mlx5_0/1");
	CHECK_STR(p->state_name, "ACTIVE");
	CHECK_STR(p->phys_state, "LinkUp");
	CHECK(near(p->rate_gbps, 100));
	CHECK_EQ_INT(p->data_group, PN_CG_IB);
	CHECK(isnan(p->rx_Bps) && isnan(p->tx_Bps) && isnan(p->util));
	CHECK_EQ_INT(ctr(p, PN_CG_IB, "port_xmit_data")->value, 4000);

	/* 1 GB out, 0.5 GB in over exactly 2 s */
	fake_ctr("mlx5_0", 1, "port_xmit_data", 1000 + 250000000);
	fake_ctr("mlx5_0", 1, "port_rcv_data", 2000 + 125000000);
	fake_ctr("mlx5_0", 1, "port_xmit_packets", 1000);
	fake_ctr("mlx5_0", 1, "port_rcv_packets", 500);
	fake_ns += 2 * SEC;
	CHECK_EQ_INT(pn_counters_set_sample(&s), 0);
	p = &s.ports[0];
	CHECK(near(p->elapsed, 2.0));
	CHECK(near(s.elapsed, 2.0));
	CHECK(near(p->tx_Bps, 5e8));
	CHECK(near(p->rx_Bps, 2.5e8));
	CHECK(near(p->tx_pps, 500));
	CHECK(near(p->rx_pps, 250));
	/* utilisation = max(rx, tx) / line rate: 4 Gb/s of 100 */
	CHECK(near(p->util, 0.04));
	CHECK_EQ_INT(ctr(p, PN_CG_IB, "port_xmit_data")->value, 4ull * (1000 + 250000000));
	CHECK_EQ_INT(p->hist_n, 1);
	pn_counters_set_release(&s);
}

TEST(wrap_reset_errors_in_a_port)
{
	struct pn_counters_set s;
	const struct pn_counters_port *p;

	fake_reset();
	fake_ib_port("mlx4_0", 1);
	fake_ctr("mlx4_0", 1, "port_xmit_data", 4294967000ull);	/* legacy 32-bit */
	fake_ctr("mlx4_0", 1, "port_rcv_data", 5000000000000ull);	/* 64-bit */
	fake_ctr("mlx4_0", 1, "symbol_error", 10);
	fake_ctr("mlx4_0", 1, "link_downed", 255);
	set_init(&s, 0);
	fake_ns = SEC;
	pn_counters_set_sample(&s);
	fake_ctr("mlx4_0", 1, "port_xmit_data", 704);		/* reset: nothing wraps */
	fake_ctr("mlx4_0", 1, "port_rcv_data", 100);		/* reset */
	fake_ctr("mlx4_0", 1, "symbol_error", 12);
	fake_hw("mlx4_0", 1, "out_of_buffer", 7);
	fake_hw("mlx4_0", 1, "packet_seq_err", 1);
	fake_hw("mlx4_0", 1, "req_cqe_flush_error", 100); /* not an error */
	fake_ns += SEC;
	pn_counters_set_sample(&s);
	p = &s.ports[0];
	CHECK(near(p->tx_Bps, 704 * 4));
	CHECK(ctr(p, PN_CG_IB, "port_xmit_data")->flags & PN_CF_RESET);
	CHECK(near(p->rx_Bps, 400));
	CHECK(ctr(p, PN_CG_IB, "port_rcv_data")->flags & PN_CF_RESET);
	CHECK(!(p->flags & PN_CF_WRAP));
	CHECK(p->flags & PN_CF_RESET);
	CHECK(p->flags & PN_CF_SAT); /* link_downed stuck at 255 */
	CHECK(ctr(p, PN_CG_IB, "link_downed")->flags & PN_CF_SAT);
	CHECK(p->err_valid);
	CHECK_EQ_INT(p->err_delta, 2 + 1);	/* symbol_error + packet_seq_err */
	CHECK_EQ_INT(p->disc_delta, 7);	/* out_of_buffer */
	CHECK_EQ_INT(p->err_total, 12 + 255 + 1);
	CHECK(ctr(p, PN_CG_HW, "lifespan") == NULL);
	CHECK_EQ_INT(ctr(p, PN_CG_HW, "req_cqe_flush_error")->kind, PN_CK_OTHER);
	CHECK_EQ_INT(ctr(p, PN_CG_HW, "np_cnp_sent")->kind, PN_CK_OTHER);
	/* counters/ first, in their known order, then hw_counters/ */
	CHECK_STR(p->ctr[0].name, "port_rcv_data");
	CHECK_STR(p->ctr[1].name, "port_xmit_data");
	CHECK_EQ_INT(p->ctr[p->nctr - 1].group, PN_CG_HW);
	pn_counters_set_release(&s);
}

/* A 32-bit jump of port_xmit_data in 0.2 s on a 400 Gb/s port was 171.7 %. */
TEST(no_rate_beyond_the_line)
{
	struct pn_counters_set s;
	const struct pn_counters_port *p;

	fake_reset();
	fake_ib_port("mlx5_0", 1);
	fake_port_attr("mlx5_0", 1, "rate", "400 Gb/sec (4X NDR)");
	fake_ib_port("mlx5_1", 1);
	fake_port_attr("mlx5_1", 1, "rate", "inf Gb/sec (4X NDR)");
	fake_ctr("mlx5_0", 1, "port_xmit_data", 1000);
	fake_ctr("mlx5_0", 1, "port_rcv_data", 1000);
	fake_ctr("mlx5_1", 1, "port_xmit_data", 1000);
	baseline(&s);
	fake_ctr("mlx5_0", 1, "port_xmit_data", 1000 + (1ull << 32));
	/* 10.4 GB in 0.2 s: 104 % of 10 GB, within the timing allowance */
	fake_ctr("mlx5_0", 1, "port_rcv_data", 1000 + 2600000000ull);
	fake_ctr("mlx5_1", 1, "port_xmit_data", 1000 + (1ull << 32));
	fake_ns += SEC / 5;
	pn_counters_set_sample(&s);
	p = pn_counters_set_find(&s, "mlx5_0/1");
	CHECK(p != NULL);
	if (p) {
		CHECK(isnan(p->tx_Bps));
		CHECK(ctr(p, PN_CG_IB, "port_xmit_data")->flags & PN_CF_JUMP);
		CHECK(p->flags & PN_CF_JUMP);
		CHECK(near(p->rx_Bps, 5.2e10));
		CHECK(p->util == 1.0); /* never above 100 % */
	}
	p = pn_counters_set_find(&s, "mlx5_1/1");
	CHECK(p != NULL);
	if (p) {
		CHECK(p->rate_gbps == 0);	/* inf is no line rate */
		CHECK_STR(p->rate, "");		/* and is not shown */
		CHECK(isnan(p->util));
	}
	CHECK(pn_counters_util(-5, 100) == 0);
	CHECK(pn_counters_util(500, 100) == 1);
	CHECK(isnan(pn_counters_util(5, 0)));
	CHECK(isnan(pn_counters_util(5, INFINITY)));
	CHECK(isnan(pn_counters_util(NAN, 100)));
	pn_counters_set_release(&s);
}

/* An error counter at entry 136 of a port was never judged (128 kept). */
TEST(more_counters_than_kept_errors_first)
{
	struct pn_counters_set s;
	const struct pn_counters_port *p;
	char name[48];
	int i;

	fake_reset();
	fake_ib_port("mlx5_0", 1);
	for (i = 0; i < PN_COUNTERS_MAX + 100; i++) {
		snprintf(name, sizeof(name), "aa_other_%03d", i);
		fake_hw("mlx5_0", 1, name, 1);
	}
	fake_hw("mlx5_0", 1, "zz_late_err", 0);
	fake_ib_port("mlx5_1", 1);
	for (i = 0; i < 266; i++) {
		snprintf(name, sizeof(name), "e_%03d_err", i);
		fake_hw("mlx5_1", 1, name, 0);
	}
	baseline(&s);
	fake_hw("mlx5_0", 1, "zz_late_err", 5);
	fake_ns += SEC;
	pn_counters_set_sample(&s);
	p = pn_counters_set_find(&s, "mlx5_0/1");
	CHECK(p != NULL);
	if (p) {
		CHECK_EQ_INT(p->nctr, PN_COUNTERS_MAX);
		CHECK(ctr(p, PN_CG_HW, "zz_late_err") != NULL);
		CHECK_EQ_INT(p->err_delta, 5);
		CHECK(ctr(p, PN_CG_IB, "port_xmit_data") != NULL);
		CHECK_EQ_INT(p->nleft_out, 13 + 100 + 1); /* fake_ib_port has 13 */
		CHECK_EQ_INT(p->nleft_out_err, 0);
	}
	p = pn_counters_set_find(&s, "mlx5_1/1");
	CHECK(p != NULL);
	if (p) {
		CHECK_EQ_INT(p->nctr, PN_COUNTERS_MAX);
		CHECK_EQ_INT(p->nleft_out_err, 7 + 266 - 256); /* counted: check fails it */
		CHECK_EQ_INT(p->nleft_out, 6 + 17);
		CHECK(ctr(p, PN_CG_IB, "symbol_error") != NULL);
	}
	pn_counters_set_release(&s);
}

TEST(port_down_and_back)
{
	struct pn_counters_set s;

	fake_reset();
	fake_ib_port("mlx5_0", 1);
	set_init(&s, 0);
	fake_ns = SEC;
	pn_counters_set_sample(&s);
	CHECK_EQ_INT(s.ports[0].state, PN_PORT_ACTIVE);
	fake_port_attr("mlx5_0", 1, "state", "1: DOWN");
	fake_port_attr("mlx5_0", 1, "phys_state", "3: Disabled");
	fake_ns += SEC;
	pn_counters_set_sample(&s);
	CHECK_EQ_INT(s.ports[0].state, PN_PORT_DOWN);
	CHECK_STR(s.ports[0].state_name, "DOWN");
	CHECK_STR(s.ports[0].phys_state, "Disabled");
	CHECK(near(s.ports[0].tx_Bps, 0)); /* counters still read */
	fake_port_attr("mlx5_0", 1, "state", "4: ACTIVE");
	fake_ns += SEC;
	pn_counters_set_sample(&s);
	CHECK_STR(s.ports[0].state_name, "ACTIVE");
	pn_counters_set_release(&s);
}

/*
 * A counter directory that could not be listed when its port was added (the
 * process out of descriptors) is listed again at the next scan: the port
 * had no counters for the whole run (penny top showed its rates n/a).
 */
TEST(a_directory_not_listed_is_listed_again)
{
	struct pn_counters_set s;
	const struct pn_counters_port *p;

	fake_reset();
	fake_ib_port("mlx5_0", 1);
	fake_ctr("mlx5_0", 1, "port_xmit_data", 1000);
	pn_sysfs_fail_opens("/ports/1/counters", EMFILE, 1);
	set_init(&s, 0);
	fake_ns = SEC;
	CHECK_EQ_INT(pn_counters_set_sample(&s), 0);
	p = &s.ports[0];
	CHECK(s.n == 1 && p->unlisted && !ctr(p, PN_CG_IB, "port_xmit_data"));
	fake_ns += SEC;
	CHECK_EQ_INT(pn_counters_set_sample(&s), 0);
	p = &s.ports[0];
	CHECK(!p->unlisted && ctr(p, PN_CG_IB, "port_xmit_data") && p->data_group == PN_CG_IB);
	CHECK(isnan(p->tx_Bps)); /* listed afresh: its baseline */
	fake_ctr("mlx5_0", 1, "port_xmit_data", 1000 + 250000000);
	fake_ns += SEC;
	CHECK_EQ_INT(pn_counters_set_sample(&s), 0);
	CHECK(near(s.ports[0].tx_Bps, 1e9));
	/* a directory that is not there is no reason to look again */
	fake_rm("sys/class/infiniband/mlx5_0/ports/1/hw_counters");
	pn_counters_set_release(&s);
	set_init(&s, 0);
	CHECK_EQ_INT(pn_counters_set_sample(&s), 0);
	CHECK(s.n == 1 && !s.ports[0].unlisted);
	pn_counters_set_release(&s);
	pn_sysfs_fail_opens(NULL, 0, 0);
}

TEST(devices_appear_and_disappear)
{
	struct pn_counters_set s;
	const struct pn_counters_port *p;

	fake_reset();
	fake_ib_port("mlx5_10", 1);
	fake_ib_port("mlx5_1", 1);
	set_init(&s, 0);
	fake_ns = SEC;
	pn_counters_set_sample(&s);
	CHECK_EQ_INT(s.n, 2);
	CHECK_EQ_INT(s.added, 2);
	/* a device appears between samples, sorted in naturally */
	fake_ib_port("mlx5_2", 1);
	fake_ib_port("mlx5_2", 2);
	fake_ctr("mlx5_1", 1, "port_xmit_data", 100);
	fake_ns += SEC;
	pn_counters_set_sample(&s);
	CHECK_EQ_INT(s.n, 4);
	CHECK_EQ_INT(s.added, 2);
	CHECK_EQ_INT(s.removed, 0);
	CHECK_STR(s.ports[0].name, "mlx5_1/1");
	CHECK_STR(s.ports[1].name, "mlx5_2/1");
	CHECK_STR(s.ports[2].name, "mlx5_2/2");
	CHECK_STR(s.ports[3].name, "mlx5_10/1");
	CHECK(near(s.ports[0].tx_Bps, 400));
	p = pn_counters_set_find(&s, "mlx5_2/2");
	CHECK(p && isnan(p->tx_Bps)); /* new: baseline only */
	fake_ctr("mlx5_2", 2, "port_rcv_data", 50);
	fake_ns += SEC;
	pn_counters_set_sample(&s);
	p = pn_counters_set_find(&s, "mlx5_2/2");
	CHECK(p && near(p->rx_Bps, 200));
	/* a device goes away */
	fake_rm("sys/class/infiniband/mlx5_1");
	fake_ns += SEC;
	pn_counters_set_sample(&s);
	CHECK_EQ_INT(s.n, 3);
	CHECK_EQ_INT(s.removed, 1);
	CHECK(pn_counters_set_find(&s, "mlx5_1/1") == NULL);
	CHECK_STR(s.ports[0].name, "mlx5_2/1");
	pn_counters_set_release(&s);
}

TEST(a_device_replaced_under_its_name_starts_over)
{
	struct pn_counters_set s;
	const struct pn_counters_port *p;
	char from[512], to[512];

	fake_reset();
	fake_ib_port("mlx5_0", 1);
	fake_ctr("mlx5_0", 1, "port_xmit_data", 1000);
	set_init(&s, 0);
	fake_ns = SEC;
	pn_counters_set_sample(&s);
	fake_ns += SEC;
	pn_counters_set_sample(&s);
	CHECK(isfinite(s.ports[0].tx_Bps));
	/* driver reload between two samples: another directory, same name,
	 * counters from zero and one more counter (the old one is moved
	 * aside, so its inode cannot be reused) */
	snprintf(from, sizeof(from), "%s/sys/class/infiniband/mlx5_0", fake_root);
	snprintf(to, sizeof(to), "%s/old-mlx5_0", fake_root);
	CHECK_EQ_INT(rename(from, to), 0);
	fake_ib_port("mlx5_0", 1);
	fake_hw("mlx5_0", 1, "rx_write_requests", 5);
	fake_ns += SEC;
	pn_counters_set_sample(&s);
	CHECK_EQ_INT(s.n, 1);
	CHECK_EQ_INT(s.added, 1);
	CHECK_EQ_INT(s.removed, 1);
	p = &s.ports[0];
	CHECK(isnan(p->tx_Bps)); /* a new baseline, not a reset */
	CHECK(ctr(p, PN_CG_HW, "rx_write_requests") != NULL);
	CHECK_EQ_INT(ctr(p, PN_CG_IB, "port_xmit_data")->value, 0);
	fake_rm("old-mlx5_0");
	pn_counters_set_release(&s);
}

TEST(brief_reads_only_what_the_list_shows)
{
	struct pn_counters_set s;
	struct pn_counters_cfg cfg;
	const struct pn_counters_port *p, *q;

	fake_reset();
	fake_ib_port("mlx5_0", 1);
	fake_ib_port("mlx5_1", 1);
	pn_counters_cfg_init(&cfg);
	cfg.clock_ns = fake_clock;
	cfg.brief = 1;
	snprintf(cfg.detail, sizeof(cfg.detail), "mlx5_1/1");
	pn_counters_set_init(&s, &cfg);
	fake_ns = SEC;
	pn_counters_set_sample(&s);
	fake_ctr("mlx5_0", 1, "port_xmit_data", 10);
	fake_ctr("mlx5_0", 1, "symbol_error", 1);
	fake_hw("mlx5_0", 1, "np_cnp_sent", 4);
	fake_ns += SEC;
	pn_counters_set_sample(&s);
	p = pn_counters_set_find(&s, "mlx5_0/1");
	q = pn_counters_set_find(&s, "mlx5_1/1");
	CHECK(near(p->tx_Bps, 40));
	CHECK_EQ_INT(p->err_delta, 1);
	CHECK(!(ctr(p, PN_CG_HW, "np_cnp_sent")->flags & PN_CF_VALID)); /* not read */
	CHECK(isnan(p->tx_pps));
	CHECK_EQ_INT(p->nunreadable, 0);
	CHECK(ctr(q, PN_CG_HW, "np_cnp_sent")->flags & PN_CF_DELTA); /* the detail port */
	CHECK(isfinite(q->tx_pps));
	pn_counters_set_release(&s);
}

TEST(unreadable_files_are_na)
{
	struct pn_counters_set s;
	const struct pn_counters_port *p;
	char path[512];

	fake_reset();
	fake_ib_port("mlx5_0", 1);
	/* tests run as root, so chmod 000 would not stop a read: a directory
	 * where the file should be does (EISDIR), and garbage does not parse */
	snprintf(path, sizeof(path), "%s/sys/class/infiniband/mlx5_0/ports/1/counters/port_rcv_data",
		 fake_root);
	unlink(path);
	mkdir(path, 0755);
	fake_ctr("mlx5_0", 1, "port_xmit_data", 10);
	fake_port_attr("mlx5_0", 1, "counters/symbol_error", "garbage");
	snprintf(path, sizeof(path), "%s/sys/class/infiniband/mlx5_0/ports/1/rate", fake_root);
	unlink(path);
	mkdir(path, 0755);
	set_init(&s, 0);
	fake_ns = SEC;
	CHECK_EQ_INT(pn_counters_set_sample(&s), 0);
	fake_ctr("mlx5_0", 1, "port_xmit_data", 20);
	fake_ns += SEC;
	CHECK_EQ_INT(pn_counters_set_sample(&s), 0);
	p = &s.ports[0];
	CHECK_EQ_INT(p->nunreadable, 2);
	CHECK(!(ctr(p, PN_CG_IB, "port_rcv_data")->flags & PN_CF_VALID));
	CHECK(!(ctr(p, PN_CG_IB, "symbol_error")->flags & PN_CF_VALID));
	CHECK(isnan(p->rx_Bps));
	CHECK(near(p->tx_Bps, 40));
	CHECK(near(p->rate_gbps, 0)); /* rate unreadable: unknown */
	CHECK(isnan(p->util));
	CHECK(p->err_valid); /* the other error counters still count */
	/* the file comes back: a new baseline, then rates again */
	snprintf(path, sizeof(path), "%s/sys/class/infiniband/mlx5_0/ports/1/counters/port_rcv_data",
		 fake_root);
	rmdir(path);
	fake_ctr("mlx5_0", 1, "port_rcv_data", 1000);
	fake_ns += SEC;
	pn_counters_set_sample(&s);
	p = &s.ports[0];
	CHECK(ctr(p, PN_CG_IB, "port_rcv_data")->flags & PN_CF_VALID);
	CHECK(isnan(p->rx_Bps));
	fake_ctr("mlx5_0", 1, "port_rcv_data", 1100);
	fake_ns += SEC;
	pn_counters_set_sample(&s);
	CHECK(near(s.ports[0].rx_Bps, 400));
	pn_counters_set_release(&s);
}

TEST(without_held_files_a_replaced_file_is_reread)
{
	struct pn_counters_set s;
	struct pn_counters_cfg cfg;
	char path[512];

	fake_reset();
	fake_ib_port("mlx5_0", 1);
	pn_counters_cfg_init(&cfg);
	cfg.clock_ns = fake_clock;
	cfg.hold_files = 0;
	pn_counters_set_init(&s, &cfg);
	fake_ns = SEC;
	pn_counters_set_sample(&s);
	snprintf(path, sizeof(path), "%s/sys/class/infiniband/mlx5_0/ports/1/counters/port_xmit_data",
		 fake_root);
	unlink(path);
	mkdir(path, 0755);
	fake_ns += SEC;
	pn_counters_set_sample(&s);
	CHECK_EQ_INT(s.ports[0].nunreadable, 1);
	CHECK(isnan(s.ports[0].tx_Bps));
	pn_counters_set_release(&s);
}

TEST(soft_roce_uses_parent_netdev)
{
	struct pn_counters_set s;
	const struct pn_counters_port *p;

	fake_reset();
	fake_rxe_port("rxe0", "veth0");
	set_init(&s, 0);
	fake_ns = SEC;
	pn_counters_set_sample(&s);
	CHECK_EQ_INT(s.n, 1);
	p = &s.ports[0];
	CHECK_STR(p->name, "rxe0/1");
	CHECK_STR(p->netdev, "veth0");
	CHECK_STR(p->link_layer, "Ethernet");
	CHECK_EQ_INT(p->data_group, PN_CG_NET);
	fake_net("veth0", "rx_bytes", 3000000);
	fake_net("veth0", "tx_bytes", 1000000);
	fake_net("veth0", "tx_packets", 1000);
	fake_hw("rxe0", 1, "retry_exceeded_err", 2);
	fake_ns += SEC / 2;
	pn_counters_set_sample(&s);
	p = &s.ports[0];
	CHECK(near(p->rx_Bps, 6e6)); /* bytes, no x4 */
	CHECK(near(p->tx_Bps, 2e6));
	CHECK(near(p->tx_pps, 2000));
	CHECK(near(p->util, 6e6 / (10e9 / 8)));
	CHECK_EQ_INT(p->err_delta, 2);
	CHECK(ctr(p, PN_CG_HW, "sent_pkts") != NULL);
	pn_counters_set_release(&s);
}

TEST(plain_netdevs_with_ethernet)
{
	struct pn_counters_set s;
	const struct pn_counters_port *p;

	fake_reset();
	fake_ib_port("mlx5_0", 1);
	fake_net("eth10", "rx_bytes", 0);
	fake_net("eth10", "tx_bytes", 0);
	fake_write("sys/class/net/eth10/operstate", "up");
	fake_write("sys/class/net/eth10/speed", "25000");
	fake_net("eth2", "rx_bytes", 0);
	fake_write("sys/class/net/eth2/operstate", "down");
	fake_write("sys/class/net/eth2/speed", "-1");
	fake_net("lo", "rx_bytes", 0);
	set_init(&s, 0);
	fake_ns = SEC;
	pn_counters_set_sample(&s);
	CHECK_EQ_INT(s.n, 1); /* without -e: RDMA ports only */
	pn_counters_set_release(&s);

	set_init(&s, 1);
	pn_counters_set_sample(&s);
	CHECK_EQ_INT(s.n, 3); /* lo is not a NIC */
	CHECK_STR(s.ports[0].name, "mlx5_0/1");
	CHECK_STR(s.ports[1].name, "eth2");
	CHECK_STR(s.ports[2].name, "eth10");
	p = &s.ports[2];
	CHECK_EQ_INT(p->type, PN_PT_NETDEV);
	CHECK_EQ_INT(p->state, PN_PORT_ACTIVE);
	CHECK_STR(p->state_name, "UP");
	CHECK(near(p->rate_gbps, 25));
	CHECK_EQ_INT(s.ports[1].state, PN_PORT_DOWN);
	CHECK(near(s.ports[1].rate_gbps, 0));
	fake_net("eth10", "rx_bytes", 3125000000ull);
	fake_ns += SEC;
	pn_counters_set_sample(&s);
	CHECK(near(s.ports[2].rx_Bps, 3125000000.0));
	CHECK(near(s.ports[2].util, 1.0));
	pn_counters_set_release(&s);
}

TEST(sixteen_devices_two_ports)
{
	struct pn_counters_set s;
	char dev[32];
	int d, port, i, bad = 0;

	fake_reset();
	for (d = 0; d < 16; d++) {
		snprintf(dev, sizeof(dev), "mlx5_%d", d);
		fake_ib_port(dev, 1);
		fake_ib_port(dev, 2);
	}
	set_init(&s, 0);
	fake_ns = SEC;
	pn_counters_set_sample(&s);
	CHECK_EQ_INT(s.n, 32);
	for (d = 0; d < 16; d++) {
		snprintf(dev, sizeof(dev), "mlx5_%d", d);
		for (port = 1; port <= 2; port++) {
			fake_ctr(dev, port, "port_xmit_data", (uint64_t)(d * 2 + port) * 1000000);
			fake_ctr(dev, port, "port_rcv_data", (uint64_t)(d * 2 + port) * 500000);
		}
	}
	fake_ns += SEC;
	pn_counters_set_sample(&s);
	for (i = 0; i < s.n; i++) {
		const struct pn_counters_port *p = &s.ports[i];
		char want[32];

		snprintf(want, sizeof(want), "mlx5_%d/%d", i / 2, i % 2 + 1);
		if (strcmp(p->name, want) || !near(p->tx_Bps, 4e6 * (i + 1)) ||
		    !near(p->rx_Bps, 2e6 * (i + 1)))
			bad++;
	}
	CHECK_EQ_INT(bad, 0);
	pn_counters_set_release(&s);
}

TEST(copy_is_deep_and_detached)
{
	struct pn_counters_set s, c;

	fake_reset();
	fake_ib_port("mlx5_0", 1);
	fake_ib_port("mlx5_1", 1);
	baseline(&s);
	fake_ctr("mlx5_1", 1, "port_rcv_data", 25);
	fake_ns += SEC;
	pn_counters_set_sample(&s);
	memset(&c, 0, sizeof(c));
	CHECK_EQ_INT(pn_counters_set_copy(&c, &s), 0);
	CHECK_EQ_INT(c.n, 2);
	CHECK_EQ_INT(c.seq, 2);
	CHECK(c.ports[1].io == NULL);
	CHECK_EQ_INT(c.ports[1].nctr, s.ports[1].nctr);
	CHECK(near(c.ports[1].rx_Bps, 100));
	CHECK_EQ_INT(pn_counters_set_sample(&c), -EINVAL); /* copies do not sample */
	CHECK(pn_counters_set_copy(&s, &c) < 0);
	pn_counters_set_release(&s);
	CHECK(near(c.ports[1].rx_Bps, 100)); /* outlives the original */
	pn_counters_set_release(&c);
}

static int fake_query_calls;

static int fake_query(struct pn_pq *pq, int lid, int port, struct pn_perfquery_counters *c)
{
	(void)pq;
	memset(c, 0, sizeof(*c));
	fake_query_calls++;
	if (lid == 99)
		return pn_err(-ETIMEDOUT, "no PerfMgt answer from lid 99");
	c->ext = 1;
	c->v[PN_PERFQUERY_XMIT_DATA] = (uint64_t)fake_query_calls * 1000000 * (uint64_t)port;
	c->v[PN_PERFQUERY_RCV_DATA] = 5;
	c->v[PN_PERFQUERY_SYMBOL_ERROR] = (uint64_t)fake_query_calls;
	c->valid = (1u << PN_PERFQUERY_NFIELDS) - 1;
	return 0;
}

TEST(remote_ports_through_perfmgt)
{
	struct pn_counters_remote rem[2] = { { 99, 1 }, { 12, 2 } };
	struct pn_counters_set s;
	struct pn_counters_cfg cfg;
	const struct pn_counters_port *p;

	fake_reset();
	pn_counters_cfg_init(&cfg);
	cfg.clock_ns = fake_clock;
	cfg.remote = rem;
	cfg.nremote = 2;
	cfg.query = fake_query;
	pn_counters_set_init(&s, &cfg);
	fake_query_calls = 0;
	fake_ns = SEC;
	pn_counters_set_sample(&s);
	fake_ns += SEC;
	pn_counters_set_sample(&s);
	CHECK_EQ_INT(s.n, 2);
	CHECK_STR(s.ports[0].name, "lid:12/2"); /* ordered by LID */
	p = &s.ports[0];
	CHECK_EQ_INT(p->type, PN_PT_REMOTE);
	CHECK_EQ_INT(p->data_group, PN_CG_MAD);
	CHECK(near(p->tx_Bps, 4 * (3 - 1) * 1000000 * 2)); /* calls 1 and 3, x4 */
	CHECK_EQ_INT(p->err_delta, 2);
	CHECK(isnan(p->util)); /* no line rate for remote ports */
	p = &s.ports[1];
	CHECK_STR(p->name, "lid:99/1");
	CHECK_EQ_INT(p->nunreadable, p->nctr); /* unanswered: all n/a, no error */
	CHECK(isnan(p->tx_Bps));
	pn_counters_set_release(&s);
}

TEST(empty_tree_is_an_empty_set)
{
	struct pn_counters_set s;

	fake_reset();
	set_init(&s, 1);
	CHECK_EQ_INT(pn_counters_set_sample(&s), 0);
	CHECK_EQ_INT(s.n, 0);
	pn_counters_set_release(&s);
}

/* top's selection (portsel.h): --filter as substring (name or netdev) or
 * glob (name, device or netdev), --sort largest first, ties and "name" in
 * the set's order; NaN rates last. */
TEST(port_selection_filter_and_sort)
{
	struct pn_counters_port ports[4];
	struct pn_counters_set s = { .n = 4, .ports = ports };
	int idx[4], n;

	memset(ports, 0, sizeof(ports));
	snprintf(ports[0].name, sizeof(ports[0].name), "mlx5_0/1");
	snprintf(ports[0].dev, sizeof(ports[0].dev), "mlx5_0");
	snprintf(ports[0].netdev, sizeof(ports[0].netdev), "ib0");
	ports[0].rx_Bps = 10;
	snprintf(ports[1].name, sizeof(ports[1].name), "mlx5_1/1");
	snprintf(ports[1].dev, sizeof(ports[1].dev), "mlx5_1");
	ports[1].rx_Bps = 30;
	snprintf(ports[2].name, sizeof(ports[2].name), "eth0");
	snprintf(ports[2].dev, sizeof(ports[2].dev), "eth0");
	ports[2].rx_Bps = NAN;
	snprintf(ports[3].name, sizeof(ports[3].name), "mlx5_2/1");
	snprintf(ports[3].dev, sizeof(ports[3].dev), "mlx5_2");
	ports[3].rx_Bps = 30;
	n = pn_port_order(&s, NULL, PN_PORT_SORT_NAME, idx);
	CHECK(n == 4 && idx[0] == 0 && idx[1] == 1 && idx[2] == 2 && idx[3] == 3);
	n = pn_port_order(&s, "", PN_PORT_SORT_RX, idx);
	CHECK(n == 4 && idx[0] == 1 && idx[1] == 3 && idx[2] == 0 && idx[3] == 2);
	n = pn_port_order(&s, "MLX5", PN_PORT_SORT_NAME, idx);
	CHECK_EQ_INT(n, 3);
	n = pn_port_order(&s, "IB0", PN_PORT_SORT_NAME, idx);
	CHECK(n == 1 && idx[0] == 0);
	n = pn_port_order(&s, "mlx5_[12]", PN_PORT_SORT_RX, idx);
	CHECK(n == 2 && idx[0] == 1 && idx[1] == 3);
	n = pn_port_order(&s, "MLX5_*", PN_PORT_SORT_NAME, idx);
	CHECK_EQ_INT(n, 0);	/* a glob is case-sensitive */
	{
		int *grown = NULL, cap = 0;

		CHECK_EQ_INT(pn_port_order_alloc(&s, "mlx5_[12]", PN_PORT_SORT_RX, &grown, &cap), 2);
		CHECK(cap == 4 && grown[0] == 1 && grown[1] == 3);
		CHECK_EQ_INT(pn_port_order_alloc(&s, NULL, PN_PORT_SORT_NAME, &grown, &cap), 4);
		free(grown);
	}
	CHECK_EQ_INT(pn_port_sort_parse("Util"), PN_PORT_SORT_UTIL);
	CHECK_EQ_INT(pn_port_sort_parse("speed"), -1);
	CHECK_STR(pn_port_sort_name(PN_PORT_SORT_ERRORS), "errors");
	CHECK_STR(pn_port_sort_name(PN_PORT_SORT_COUNT), "?");
}

/* A port's JSON keys (counters_json.c): totals, flags and every counter by group. */
TEST(port_counters_as_json)
{
	static struct pn_counters_port p;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	struct pn_out *o = f ? pn_out_new(f, 1) : NULL;
	int k;

	CHECK(o != NULL);
	if (!o)
		return;
	memset(&p, 0, sizeof(p));
	for (k = 0; k < PN_CK_COUNT; k++)
		p.ix[k] = -1;
	p.ix[PN_CK_RX_BYTES] = 0;
	p.ix[PN_CK_TX_BYTES] = 1;
	p.nctr = 3;
	p.ctr[0] = (struct pn_counter){ .name = "port_rcv_data", .group = PN_CG_IB, .scale = 4,
					.flags = PN_CF_VALID | PN_CF_DELTA, .raw = 10, .value = 40,
					.delta = 8 };
	p.ctr[1] = (struct pn_counter){ .name = "port_xmit_data", .group = PN_CG_IB, .scale = 4 };
	p.ctr[2] = (struct pn_counter){ .name = "out_of_buffer", .group = PN_CG_HW, .scale = 1,
					.flags = PN_CF_VALID, .raw = 3, .value = 3 };
	p.err_total = 5;
	p.flags = PN_CF_RESET;
	pn_out_open_object(o, NULL);
	pn_counters_port_json(o, &p);
	pn_out_close_object(o);
	CHECK_EQ_INT(pn_out_free(o), 0);
	fclose(f);
	CHECK_STR(buf, "{\"version\":1,\"rx_bytes\":40,\"tx_bytes\":null,\"rx_packets\":null,\"tx_packets\":null,"
		       "\"errors_total\":5,\"discards_total\":0,\"unreadable\":0,\"wrapped\":false,"
		       "\"reset\":true,\"saturated\":false,\"jumped\":false,\"counters\":{"
		       "\"counters\":{\"port_rcv_data\":{\"value\":10,\"delta\":2},"
		       "\"port_xmit_data\":{\"value\":null,\"delta\":null}},"
		       "\"hw_counters\":{\"out_of_buffer\":{\"value\":3,\"delta\":null}}}}\n");
	free(buf);
}

int main(void)
{
	if (fake_setup()) {
		printf("not ok 1 - cannot create a temporary directory\n");
		return 1;
	}
	if (pn_sysfs_set_root(fake_root)) {
		printf("not ok 1 - %s\n", pn_errmsg(-1));
		return 1;
	}
	RUN(update_arithmetic);
	RUN(update_saturating_width);
	RUN(rates_and_x4_scaling);
	RUN(wrap_reset_errors_in_a_port);
	RUN(no_rate_beyond_the_line);
	RUN(more_counters_than_kept_errors_first);
	RUN(port_down_and_back);
	RUN(a_directory_not_listed_is_listed_again);
	RUN(devices_appear_and_disappear);
	RUN(a_device_replaced_under_its_name_starts_over);
	RUN(brief_reads_only_what_the_list_shows);
	RUN(unreadable_files_are_na);
	RUN(without_held_files_a_replaced_file_is_reread);
	RUN(soft_roce_uses_parent_netdev);
	RUN(plain_netdevs_with_ethernet);
	RUN(sixteen_devices_two_ports);
	RUN(copy_is_deep_and_detached);
	RUN(remote_ports_through_perfmgt);
	RUN(empty_tree_is_an_empty_set);
	RUN(port_selection_filter_and_sort);
	RUN(port_counters_as_json);
	pn_sysfs_set_root(NULL);
	fake_teardown();
	return unit_done();
}
