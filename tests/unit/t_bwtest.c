/* SPDX-License-Identifier: MIT */
/* The pure parts of src/harness/bwtest.c: percentiles, the timed blocks, the check
 * that both sides of penny bw agree; of bwrun.c: the link's use, how a job's
 * ranks pair up and a pair's link as rank 0 shows it. */
#include "unit.h"
#include "harness/bwproto.h"
#include "harness/bwrun.h"
#include "harness/bwtest.h"
#include "base/log.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

TEST(percentiles_nearest_rank)
{
	double s[1000], out[7];
	int i;

	for (i = 0; i < 1000; i++)
		s[i] = 1000 - i; /* 1000 .. 1, unsorted */
	pn_bw_percentiles(s, 1000, out);
	CHECK(out[0] == 1);
	CHECK(out[1] == 500.5);	/* even count: mean of the middle two */
	CHECK(fabs(out[2] - 500.5) < 1e-9);
	CHECK(out[3] == 990);		/* 99th of 1000: the 990th value */
	CHECK(out[4] == 999);
	CHECK(out[5] == 1000);
	/* 1..1000: population standard deviation sqrt((1000^2 - 1) / 12) */
	CHECK(fabs(out[6] - sqrt((1000.0 * 1000 - 1) / 12)) < 1e-9);
	s[0] = 7;
	pn_bw_percentiles(s, 1, out);
	CHECK(out[0] == 7 && out[1] == 7 && out[3] == 7 && out[4] == 7 && out[5] == 7);
	CHECK(out[6] == 0);
	s[0] = 3, s[1] = 1, s[2] = 2;
	pn_bw_percentiles(s, 3, out);
	CHECK(out[1] == 2 && out[3] == 3);
	pn_bw_percentiles(s, 0, out);
	CHECK(out[0] == 0 && out[5] == 0 && out[6] == 0);
}

/* Completions of 1e9 bytes each at times t[0..n) from 0: the row's blocks. */
static void blocks_of(const double *t, int n, uint64_t iters, double dur, int step,
		      struct pn_bw_row *row)
{
	struct pn_bw_blocks b;
	int i;

	memset(row, 0, sizeof(*row));
	row->avg_gbps = 12345;
	pn_bw_blocks_start(&b, iters, dur, 0, 1e9);
	for (i = step - 1; i < n; i += step)
		pn_bw_blocks_push(&b, (uint64_t)i + 1, t[i]);
	pn_bw_blocks_end(&b, (uint64_t)n, t[n - 1], row);
}

TEST(peak_is_the_best_block_median_and_min_kept)
{
	/* 100 completions: 1 s apart, but the 3rd fifth 10 times faster */
	double t[100], now = 0;
	struct pn_bw_row r;
	int i;

	for (i = 0; i < 100; i++)
		t[i] = now += i >= 40 && i < 60 ? 0.1 : 1;
	blocks_of(t, 100, 100, 0, 1, &r);
	CHECK_EQ_INT(r.nblocks, 5);
	/* 20 completions of 8 Gbit a block: 8 Gb/s, the fast one 80 */
	CHECK(fabs(r.block_gbps[0] - 8) < 1e-9 && fabs(r.block_gbps[2] - 80) < 1e-6);
	CHECK(fabs(r.peak_gbps - 80) < 1e-6 && fabs(r.block_median_gbps - 8) < 1e-9 &&
	      fabs(r.block_min_gbps - 8) < 1e-9);
	/* completions in bursts of 7 (CQ moderation): the blocks still cover
	 * every completion once, each closed where its burst ended */
	blocks_of(t, 100, 100, 0, 7, &r);
	CHECK(r.nblocks >= 4 && r.nblocks <= 5);
	CHECK(r.peak_gbps > 8 && r.block_min_gbps > 0 && isfinite(r.peak_gbps));
	/* by time: a 100 s run in 5 blocks of 20 s */
	for (i = 0; i < 100; i++)
		t[i] = i + 1;
	blocks_of(t, 100, 0, 100, 1, &r);
	CHECK_EQ_INT(r.nblocks, 5);
	CHECK(fabs(r.block_median_gbps - 8) < 1e-9 && fabs(r.peak_gbps - 8) < 1e-9);
	/* one completion: no block closes before the end, which closes one */
	blocks_of(t, 1, 1, 0, 1, &r);
	CHECK_EQ_INT(r.nblocks, 1);
	CHECK(fabs(r.peak_gbps - 8) < 1e-9);
	/* nothing completed: no blocks, the peak is the average */
	{
		struct pn_bw_blocks b;

		memset(&r, 0, sizeof(r));
		r.avg_gbps = 3;
		pn_bw_blocks_start(&b, 10, 0, 0, 1e9);
		pn_bw_blocks_end(&b, 0, 1, &r);
		CHECK(r.nblocks == 0 && r.peak_gbps == 3);
	}
}

TEST(sides_must_agree)
{
	struct pn_bw_cfg a, b;

	pn_bw_cfg_init(&a);
	a.sizes[a.nsizes++] = 65536;
	b = a;
	CHECK_EQ_INT(pn_bw_cfg_check(&a, &b), 0);
	b.sizes[0] = 4096;
	CHECK_EQ_INT(pn_bw_cfg_check(&a, &b), -EINVAL);
	CHECK_STR(pn_errmsg(-EINVAL), "-s: 65536 here, 4096 on the peer");
	b = a;
	b.nqp = 4;
	CHECK_EQ_INT(pn_bw_cfg_check(&a, &b), -EINVAL);
	CHECK_STR(pn_errmsg(-EINVAL), "-q: 1 here, 4 on the peer");
	b = a;
	b.flags = PN_BW_BIDIR;
	CHECK_EQ_INT(pn_bw_cfg_check(&a, &b), -EINVAL);
	CHECK_STR(pn_errmsg(-EINVAL), "-b: off here, on on the peer");
	b = a;
	b.op = PN_VERBS_READ;
	CHECK_EQ_INT(pn_bw_cfg_check(&a, &b), -EINVAL);
	CHECK_STR(pn_errmsg(-EINVAL), "--op: rdma write here, rdma read on the peer");
	b = a;
	b.version = PN_BW_VERSION + 1;
	CHECK_EQ_INT(pn_bw_cfg_check(&a, &b), -EPROTO);
	b = a;
	b.nsizes = 1000;
	CHECK_EQ_INT(pn_bw_cfg_check(&a, &b), -EINVAL);
}

TEST(buffer_and_sum)
{
	struct pn_bw_cfg c;
	struct pn_bw_row x = { .iters = 10, .seconds = 2, .peak_gbps = 5, .avg_gbps = 4,
			       .msg_rate_mpps = 1, .nblocks = 2, .block_gbps = { 1, 2 },
			       .block_median_gbps = 1.5, .block_min_gbps = 1 };
	struct pn_bw_row y = { .iters = 10, .seconds = 3, .peak_gbps = 6, .avg_gbps = 3,
			       .msg_rate_mpps = 2, .nblocks = 3, .block_gbps = { 10, 20, 30 },
			       .block_median_gbps = 20, .block_min_gbps = 10 };

	pn_bw_cfg_init(&c);
	c.sizes[c.nsizes++] = 4096;
	c.sizes[c.nsizes++] = 1 << 20;
	c.sizes[c.nsizes++] = 2;
	CHECK_EQ_INT(pn_bw_max_size(&c), 1 << 20);
	CHECK_EQ_INT(pn_bw_buflen(&c), 2 << 20);
	pn_bw_row_add(&x, &y);
	CHECK_EQ_INT(x.iters, 20);
	CHECK(x.avg_gbps == 7 && x.peak_gbps == 11 && x.msg_rate_mpps == 3 && x.seconds == 3);
	/* the directions' blocks added in order, as many as both have */
	CHECK(x.nblocks == 2 && x.block_gbps[0] == 11 && x.block_gbps[1] == 22);
	CHECK(x.block_median_gbps == 21.5 && x.block_min_gbps == 11);
}

/* A peer's hello: only a whole, well-formed frame of this version is used. */
static int decode(struct pn_bw_hello *h, const struct pn_bw_hello *in, size_t len)
{
	static uint8_t w[PN_BW_HELLO_LEN];

	pn_bw_hello_encode(in, w);
	return pn_bw_hello_decode(h, w, len);
}

TEST(hello_from_the_peer)
{
	static uint8_t w[PN_BW_HELLO_LEN];
	struct pn_bw_hello h, in;

	memset(&in, 0, sizeof(in));
	in.nrails = 2;
	in.cfg.sizes[3] = 0x0102030405060708ull;
	in.link_gbps[1] = 100;
	in.info[1].qpn[31] = 0xabcdef01u;
	snprintf(in.host, sizeof(in.host), "node01");
	memset(&h, 0, sizeof(h)); /* the padding */
	CHECK_EQ_INT(decode(&h, &in, PN_BW_HELLO_LEN), 0);
	CHECK_STR(h.host, "node01");
	CHECK(!memcmp(&h, &in, sizeof(h))); /* every field comes back */
	/* explicit byte order: the magic "PBWO" and version 2, little-endian */
	pn_bw_hello_encode(&in, w);
	CHECK(w[0] == 0x4f && w[1] == 0x57 && w[2] == 0x42 && w[3] == 0x50 &&
	      w[4] == PN_BW_PROTO_VERSION && !w[5]);
	CHECK_EQ_INT(decode(&h, &in, PN_BW_HELLO_LEN - 1), -EPROTO);
	w[0] ^= 1;
	CHECK_EQ_INT(pn_bw_hello_decode(&h, w, sizeof(w)), -EPROTO);
	CHECK_EQ_INT(pn_bw_hello_check(w, 1), -EPROTO);
	w[0] ^= 1;
	CHECK_EQ_INT(pn_bw_hello_check(w, 5), -EAGAIN);
	/* another version is a penny bw, not a stranger: named as such */
	w[4] = 1;
	CHECK_EQ_INT(pn_bw_hello_check(w, 6), -EPROTONOSUPPORT);
	CHECK(strstr(pn_errmsg(-EPROTONOSUPPORT), "hello version 1; this penny speaks bw protocol 3") != NULL);
	/* what rank 0 would print or index: more rails than there are, a host without its NUL */
	in.nrails = PN_BW_MAX_RAILS + 1;
	CHECK_EQ_INT(decode(&h, &in, PN_BW_HELLO_LEN), -EPROTO);
	CHECK(strstr(pn_errmsg(-EPROTO), "rail count") != NULL);
	in.nrails = 1;
	memset(in.host, 'x', sizeof(in.host));
	CHECK_EQ_INT(decode(&h, &in, PN_BW_HELLO_LEN), -EPROTO);
	in.host[0] = 0;
	memset(in.dev[PN_BW_MAX_RAILS - 1], 'y', sizeof(in.dev[0]));
	CHECK_EQ_INT(decode(&h, &in, PN_BW_HELLO_LEN), -EPROTO);
	memset(in.dev, 0, sizeof(in.dev));
	in.tcp = 2;
	CHECK_EQ_INT(decode(&h, &in, PN_BW_HELLO_LEN), -EPROTO);
	in.tcp = 1;
	in.cfg.nsizes = PN_BW_MAX_SIZES + 1;
	CHECK_EQ_INT(decode(&h, &in, PN_BW_HELLO_LEN), -EPROTO);
	in.cfg.nsizes = 0;
	CHECK_EQ_INT(decode(&h, &in, PN_BW_HELLO_LEN), 0);
}

/* bw's gate, decided in the harness: each link against --min-gbps or
 * --expect, the failed links counted, the slowest kept. */
TEST(link_verdicts_and_tally)
{
	struct pn_bw_cfg c = { 0 };
	struct pn_bw_tally t = { 0 };
	struct pn_bw_link_verdict v;

	/* no gate: nothing fails, the slowest is still tracked */
	pn_bwrun_link_verdict(&c, 100, -1, NULL, "a", 80, &t, &v);
	CHECK(v.gated == 0 && t.failed_links == 0);
	CHECK_STR(t.slowest_name, "a");
	/* --expect (90 %) of 100 Gb/s: 95 passes, 85 fails */
	pn_bwrun_link_verdict(&c, 100, -1, "", "b", 95, &t, &v);
	CHECK(v.gated == 1 && v.passed && fabs(v.want - 90) < 1e-9 && t.failed_links == 0);
	CHECK_STR(v.why, "90% of 100 Gb/s");
	CHECK_STR(t.slowest_name, "a");
	pn_bwrun_link_verdict(&c, 100, -1, "", "c", 70, &t, &v);
	CHECK(v.gated == 1 && !v.passed && t.failed_links == 1);
	CHECK_STR(t.slowest_name, "c");
	CHECK(t.slowest == 70);
	/* the rate unknown: --expect cannot be checked, a failure */
	pn_bwrun_link_verdict(&c, 0, -1, "50", "d", 75, &t, &v);
	CHECK(v.gated == -1 && !v.passed && t.failed_links == 2);
	/* --min-gbps wins, bidirectional doubles --expect's threshold */
	pn_bwrun_link_verdict(&c, 0, 60, "", "e", 60, &t, &v);
	CHECK(v.gated == 1 && v.passed && t.failed_links == 2);
	CHECK_STR(v.why, "--min-gbps 60");
	c.flags = PN_BW_BIDIR;
	pn_bwrun_link_verdict(&c, 100, -1, "50", "f", 99, &t, &v);
	CHECK(v.gated == 1 && !v.passed && fabs(v.want - 100) < 1e-9 && t.failed_links == 3);
	/* latency: no gate */
	c.flags = PN_BW_LAT;
	pn_bwrun_link_verdict(&c, 100, 1e9, "", "g", 1, &t, &v);
	CHECK(v.gated == 0 && t.failed_links == 3);
	CHECK_STR(t.slowest_name, "g");
	CHECK(pn_bw_meets(10, 10) && !pn_bw_meets(9.99, 10));
}

TEST(link_use_and_pairs)
{
	struct pn_bw_cfg c = { 0 };
	struct pn_bw_hello h[4];
	struct pn_bwrun_rows rows[4];
	struct pn_bwrun r;
	struct pn_bwrun_pair_link l;
	int rank0;

	CHECK(fabs(pn_bwrun_link_pct(&c, 90, 100) - 90) < 1e-9);
	c.flags = PN_BW_BIDIR;
	CHECK(fabs(pn_bwrun_link_pct(&c, 90, 100) - 45) < 1e-9);
	CHECK(isnan(pn_bwrun_link_pct(&c, 90, 0)));

	/* one rank of an outside launcher is a plain process; --np 1 is not */
	CHECK_EQ_INT(pn_bwrun_pairs(1, 1, 0, NULL, 0, "srun", &rank0), 0);
	CHECK_EQ_INT(pn_bwrun_pairs(1, 0, 0, NULL, 0, "explicit", &rank0), -EINVAL);
	CHECK_STR(pn_errmsg(-EINVAL), "ranks 2k and 2k+1 pair up: 1 rank is odd (the server is "
				      "'penny bw' without --np)");
	CHECK_EQ_INT(rank0, 1);
	CHECK_EQ_INT(pn_bwrun_pairs(3, 1, 0, NULL, 0, "mpirun", &rank0), -EINVAL);
	CHECK_STR(pn_errmsg(-EINVAL), "ranks 2k and 2k+1 pair up: 3 ranks is odd");
	CHECK_EQ_INT(pn_bwrun_pairs(2, 1, 1, NULL, 0, "mpirun", &rank0), -EINVAL);
	CHECK(!strncmp(pn_errmsg(-EINVAL), "HOST runs one pair of processes; under a launcher "
					   "(mpirun)", 58));
	CHECK_EQ_INT(pn_bwrun_pairs(2, 1, 0, "mlx5_0", 0, "mpirun", &rank0), -EINVAL);
	CHECK(!strncmp(pn_errmsg(-EINVAL), "--loopback runs", 15));
	CHECK_EQ_INT(pn_bwrun_pairs(1, 1, 0, NULL, 1, "srun", &rank0), -EINVAL);
	CHECK_EQ_INT(rank0, 0);
	CHECK_EQ_INT(pn_bwrun_pairs(4, 1, 0, NULL, 1, "mpirun", &rank0), 0);

	/* pair 1 (ranks 2 and 3): the fewer rails of the two */
	memset(h, 0, sizeof(h));
	memset(&r, 0, sizeof(r));
	snprintf(h[2].host, sizeof(h[2].host), "n2");
	snprintf(h[3].host, sizeof(h[3].host), "n3");
	h[2].nrails = 2;
	h[3].nrails = 1;
	snprintf(h[2].dev[0], sizeof(h[2].dev[0]), "mlx5_0");
	snprintf(h[3].dev[0], sizeof(h[3].dev[0]), "mlx5_4");
	h[2].link_gbps[0] = 400;
	rows[2].rows[0][1].avg_gbps = 7;
	r.all_hello = h;
	r.all_rows = rows;
	CHECK_EQ_INT(pn_bwrun_pair_rails(&r, 1), 1);
	pn_bwrun_pair_link(&r, 1, 0, &l);
	CHECK_STR(l.local, "mlx5_0");
	CHECK_STR(l.remote, "mlx5_4");
	CHECK_STR(l.name, "mlx5_0@n2 -> mlx5_4@n3");
	CHECK_STR(l.rhost, "n3");
	CHECK(l.gbps == 400 && l.rows[1].avg_gbps == 7);
	r.tcp = 1;
	CHECK_EQ_INT(pn_bwrun_pair_rails(&r, 1), 1);
	pn_bwrun_pair_link(&r, 1, 0, &l);
	CHECK_STR(l.name, "tcp:n2@n2 -> tcp:n3@n3");
	CHECK(l.gbps == 0);
}

int main(void)
{
	RUN(percentiles_nearest_rank);
	RUN(peak_is_the_best_block_median_and_min_kept);
	RUN(sides_must_agree);
	RUN(buffer_and_sum);
	RUN(hello_from_the_peer);
	RUN(link_verdicts_and_tally);
	RUN(link_use_and_pairs);
	return unit_done();
}
