/* SPDX-License-Identifier: MIT */
/* penny bw's options into its configuration (src/harness/bwopts.c): the
 * defaults, -a's sizes, -D against -n, -w in the table's unit, and the
 * combinations refused with the line that names them. */
#define _GNU_SOURCE
#include "unit.h"

#include "base/log.h"
#include "harness/bwopts.h"
#include "transport/verbs.h"

#include <errno.h>
#include <string.h>

static struct pn_bw_opts defaults(void)
{
	return (struct pn_bw_opts){ .op = "write", .gid = -1, .iters = -1, .qps = 1,
				    .txdepth = 128, .port = 18515, .inline_size = -1,
				    .use_cuda = -1, .size = PN_BW_SIZE_UNSET, .min_gbps = -1,
				    .limit_bw = -1 };
}

TEST(defaults_and_sizes)
{
	struct pn_bw_opts o = defaults();
	struct pn_bw_cfg c;

	CHECK_EQ_INT(pn_bw_opts_cfg(&o, &c), 0);
	CHECK(o.size == 65536 && c.nsizes == 1 && c.sizes[0] == 65536);
	CHECK(c.op == PN_VERBS_WRITE && c.iters == 5000 && c.nqp == 1 && c.tx_depth == 128);
	o = defaults();
	o.lat = 1;
	o.op = "send";
	CHECK_EQ_INT(pn_bw_opts_cfg(&o, &c), 0);
	CHECK(c.op == PN_VERBS_SEND && c.iters == 1000 && (c.flags & PN_BW_LAT));
	o = defaults();
	o.all = 1;
	o.duration = 2;
	CHECK_EQ_INT(pn_bw_opts_cfg(&o, &c), 0);
	CHECK(c.nsizes == 23 && c.sizes[0] == 2 && c.sizes[22] == 1u << 23);
	CHECK(c.iters == 0 && c.duration == 2);
	/* -w in MB/sec (2^20 bytes/s) or, with --report_gbits, Gb/s */
	o = defaults();
	o.limit_bw = 1000;
	CHECK_EQ_INT(pn_bw_opts_cfg(&o, &c), 0);
	CHECK(o.min_gbps > 8.38 && o.min_gbps < 8.39);
	o = defaults();
	o.limit_bw = 100;
	o.report_gbits = 1;
	CHECK_EQ_INT(pn_bw_opts_cfg(&o, &c), 0);
	CHECK(o.min_gbps == 100);
}

TEST(refused_combinations)
{
	struct pn_bw_opts o;
	struct pn_bw_cfg c;

	o = defaults();
	o.lat = 1;
	o.bidir = 1;
	CHECK_EQ_INT(pn_bw_opts_cfg(&o, &c), -EINVAL);
	CHECK_STR(pn_errmsg(-EINVAL), "--lat and -b do not go together");
	o = defaults();
	o.op = "atomic";
	CHECK_EQ_INT(pn_bw_opts_cfg(&o, &c), -EINVAL);
	CHECK_STR(pn_errmsg(-EINVAL), "--op must be write, read or send, not 'atomic'");
	o = defaults();
	o.duration = 1;
	o.iters = 5;
	CHECK_EQ_INT(pn_bw_opts_cfg(&o, &c), -EINVAL);
	o = defaults();
	o.mtu = 1000;
	CHECK_EQ_INT(pn_bw_opts_cfg(&o, &c), -EINVAL);
	o = defaults();
	o.connection = "UD";
	CHECK_EQ_INT(pn_bw_opts_cfg(&o, &c), -EINVAL);
	o.connection = "rc";
	CHECK_EQ_INT(pn_bw_opts_cfg(&o, &c), 0);
	o = defaults();
	o.limit_bw = 1;
	o.min_gbps = 1;
	CHECK_EQ_INT(pn_bw_opts_cfg(&o, &c), -EINVAL);
	o = defaults();
	o.lat = 1;
	o.size = 0;
	CHECK_EQ_INT(pn_bw_opts_cfg(&o, &c), -EINVAL);
	CHECK_STR(pn_errmsg(-EINVAL), "--lat needs -s of at least 1");
	o = defaults();
	o.gpu_engine = "ce";
	CHECK_EQ_INT(pn_bw_opts_cfg(&o, &c), -EINVAL);
}

TEST(devices_of_each_mode)
{
	struct pn_bw_opts o = defaults();

	CHECK_EQ_INT(pn_bw_opts_devices(&o), 0);
	o.loopback = "a,b,c";
	CHECK_EQ_INT(pn_bw_opts_devices(&o), -EINVAL);
	o.loopback = "a,b";
	CHECK_EQ_INT(pn_bw_opts_devices(&o), 0);
	o.dev = "a";
	CHECK_EQ_INT(pn_bw_opts_devices(&o), -EINVAL);
	o.loopback = NULL;
	o.dev = "a,b";
	CHECK_EQ_INT(pn_bw_opts_devices(&o), -EINVAL);
	CHECK_STR(pn_errmsg(-EINVAL), "-d names 2 devices: a list is for --all-rails");
	o.all_rails = 1;
	CHECK_EQ_INT(pn_bw_opts_devices(&o), 0);
	o.dev = "a,b,c,d,e,f,g,h,i";
	CHECK_EQ_INT(pn_bw_opts_devices(&o), -EINVAL);
}

int main(void)
{
	RUN(defaults_and_sizes);
	RUN(refused_combinations);
	RUN(devices_of_each_mode);
	return unit_done();
}
