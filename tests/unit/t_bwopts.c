/* SPDX-License-Identifier: MIT */
/* penny bw's options into its configuration (src/harness/bwopts.c): the
 * defaults, -a's sizes, -D against -n, -w in the table's unit, and the
 * combinations refused with the line that names them; --gpu's options,
 * the HOST arguments and the transport; HOST, HOST:PORT and [IPV6]:PORT
 * against -p; how a job pairs up; the notes said before a run. */
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

/* o refused with the line want (NULL: any line). */
static void refused(struct pn_bw_opts o, const char *want)
{
	struct pn_bw_cfg c;

	CHECK_EQ_INT(pn_bw_opts_cfg(&o, &c), -EINVAL);
	if (want)
		CHECK_STR(pn_errmsg(-EINVAL), want);
}

TEST(refused_combinations)
{
	struct {
		struct pn_bw_opts o;
		const char *want;
	} t[11];
	struct pn_bw_cfg c;
	size_t i;

	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		t[i].o = defaults();
		t[i].want = NULL;
	}
	t[0].o.lat = t[0].o.bidir = 1;
	t[0].want = "--lat and -b do not go together";
	t[1].o.op = "atomic";
	t[1].want = "--op must be write, read or send, not 'atomic'";
	t[2].o.duration = 1;
	t[2].o.iters = 5;
	t[2].want = "-n and -D exclude each other";
	t[3].o.mtu = 1000;
	t[4].o.connection = "UD";
	t[5].o.limit_bw = t[5].o.min_gbps = 1;
	t[5].want = "-w and --min-gbps are one gate: give one";
	t[6].o.lat = 1;
	t[6].o.size = 0;
	t[6].want = "--lat needs -s of at least 1";
	t[7].o.gpu_engine = "ce";
	t[7].want = "--gpu-engine goes with --gpu";
	t[8].o.all = 1;
	t[8].o.size = 64;
	t[8].want = "-a runs every size from 2 bytes to 8 MiB, -s one size: give one of them";
	/* they were taken and ignored: a latency run passed any gate */
	t[9].o.lat = 1;
	t[9].o.min_gbps = 1e9;
	t[9].want = "--min-gbps is a bandwidth gate; --lat measures latency";
	t[10].o.lat = 1;
	t[10].o.expect = "90";
	t[10].want = "--expect is a bandwidth gate; --lat measures latency";
	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		refused(t[i].o, t[i].want);
	t[4].o.connection = "rc";
	CHECK_EQ_INT(pn_bw_opts_cfg(&t[4].o, &c), 0);
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

TEST(gpu_options_hosts_and_transport)
{
	struct pn_bw_opts o = defaults();
	char *one[] = { "10.0.0.2" }, *pct[] = { "95" }, *two[] = { "a", "b" };
	int tcp = -1;

	CHECK_EQ_INT(pn_bw_opts_gpu(&o, 0, 0), 0);
	CHECK_EQ_INT(pn_bw_opts_gpu(&o, 0, 1), -EINVAL);
	CHECK(strstr(pn_errmsg(-EINVAL), "--gpu measures this host's GPUs") != NULL);
	CHECK_EQ_INT(pn_bw_opts_gpu(&o, 1, 0), -EINVAL);
	o.op = "read";
	CHECK_EQ_INT(pn_bw_opts_gpu(&o, 0, 0), -EINVAL);
	o = defaults();
	o.min_gbps = 10;
	CHECK_EQ_INT(pn_bw_opts_gpu(&o, 0, 0), -EINVAL);

	o = defaults();
	CHECK_EQ_INT(pn_bw_opts_args(&o, NULL, 1, one, &tcp), 0);
	CHECK_EQ_INT(tcp, 0);
	CHECK_EQ_INT(pn_bw_opts_args(&o, "tcp", 0, NULL, &tcp), 0);
	CHECK_EQ_INT(tcp, 1);
	CHECK_EQ_INT(pn_bw_opts_args(&o, "verbs", 0, NULL, &tcp), 0);
	CHECK_EQ_INT(tcp, 0);
	CHECK_EQ_INT(pn_bw_opts_args(&o, "shm", 0, NULL, &tcp), -EINVAL);
	CHECK_STR(pn_errmsg(-EINVAL), "penny bw measures verbs or tcp, not 'shm'");
	CHECK_EQ_INT(pn_bw_opts_args(&o, NULL, 2, two, &tcp), -EINVAL);
	CHECK_STR(pn_errmsg(-EINVAL), "one HOST at most (got 'a' and 'b')");
	/* "--expect 95" took 95 for the HOST; an address stays one */
	o.expect = "";
	CHECK_EQ_INT(pn_bw_opts_args(&o, NULL, 1, pct, &tcp), -EINVAL);
	CHECK_STR(pn_errmsg(-EINVAL), "'95' is not a host: write --expect=95");
	CHECK_EQ_INT(pn_bw_opts_args(&o, NULL, 1, one, &tcp), 0);
	o.expect = "95";
	CHECK_EQ_INT(pn_bw_opts_args(&o, NULL, 1, pct, &tcp), 0);
	o.all_rails = 1;
	CHECK_EQ_INT(pn_bw_opts_args(&o, NULL, 1, one, &tcp), -EINVAL);
	CHECK_EQ_INT(pn_bw_opts_args(&o, NULL, 0, NULL, &tcp), 0);
	/* --loopback runs both ends here: a HOST would be ignored */
	o = defaults();
	o.loopback = "mlx5_0";
	CHECK_EQ_INT(pn_bw_opts_args(&o, NULL, 1, one, &tcp), -EINVAL);
	CHECK_STR(pn_errmsg(-EINVAL), "--loopback runs both ends in this host: no HOST (got '10.0.0.2')");
	/* over TCP both ends talk through lo, whatever device is named */
	CHECK_EQ_INT(pn_bw_opts_args(&o, "tcp", 0, NULL, &tcp), -EINVAL);
	CHECK_STR(pn_errmsg(-EINVAL), "--loopback mlx5_0: over --transport tcp both ends talk "
				      "through this host's loopback interface, never a NIC: give "
				      "--loopback lo");
	o.loopback = "lo,lo";
	CHECK_EQ_INT(pn_bw_opts_args(&o, "tcp", 0, NULL, &tcp), -EINVAL);
	o.loopback = "lo";
	CHECK_EQ_INT(pn_bw_opts_args(&o, "tcp", 0, NULL, &tcp), 0);
	CHECK_EQ_INT(pn_bw_opts_args(&o, NULL, 0, NULL, &tcp), 0);
	/* "--loopback --transport tcp": the option taken for the device */
	o.loopback = "--transport";
	CHECK_EQ_INT(pn_bw_opts_args(&o, NULL, 1, one, &tcp), -EINVAL);
	CHECK_STR(pn_errmsg(-EINVAL), "--loopback '--transport': that is an option, not a "
				      "device (--loopback needs its DEV)");
	o.loopback = NULL;
	o.dev = "-a";
	CHECK_EQ_INT(pn_bw_opts_args(&o, NULL, 0, NULL, &tcp), -EINVAL);
	CHECK_STR(pn_errmsg(-EINVAL), "-d '-a': that is an option, not a device (-d needs its DEV)");
	o.dev = NULL;
	o.loopback = "lo";
	/* tcp sends host memory: --use_cuda is refused, not ignored */
	o.use_cuda = 0;
	CHECK_EQ_INT(pn_bw_opts_args(&o, "tcp", 0, NULL, &tcp), -EINVAL);
	CHECK_STR(pn_errmsg(-EINVAL), "--use_cuda registers GPU memory with an RDMA device; "
				      "--transport tcp measures the TCP path, with host memory");
	CHECK_EQ_INT(pn_bw_opts_args(&o, "verbs", 0, NULL, &tcp), 0);
	CHECK_EQ_INT(pn_bw_opts_args(&o, NULL, 0, NULL, &tcp), 0);
}

/* HOST, [IPV6], HOST:PORT and [IPV6]:PORT, against -p (port_set): the
 * host and port taken, or the line of the refusal. */
TEST(host_and_port)
{
	static const struct {
		const char *arg;
		int port_set;		/* -p 6000 given */
		const char *host;	/* NULL: refused */
		int port;		/* taken; or the refusal's line */
		const char *why;
	} t[] = {
		{ "10.0.0.2", 0, "10.0.0.2", 18515, NULL },
		{ "node1", 1, "node1", 6000, NULL },
		{ "node1:5000", 0, "node1", 5000, NULL },
		{ "node1:1", 0, "node1", 1, NULL },
		{ "node1:65535", 0, "node1", 65535, NULL },
		{ "node1:00080", 0, "node1", 80, NULL },	/* decimal, as -p */
		{ "node1:010", 0, "node1", 10, NULL },
		{ "10.0.0.2:6000", 1, "10.0.0.2", 6000, NULL },
		{ "[::1]:5000", 0, "::1", 5000, NULL },
		{ "[fe80::1%eth0]:7", 0, "fe80::1%eth0", 7, NULL },
		{ "[::1]", 0, "::1", 18515, NULL },
		{ "[2001:db8::2]", 1, "2001:db8::2", 6000, NULL },
		/* a bare IPv6 address is a HOST, its last group no port */
		{ "::1", 0, "::1", 18515, NULL },
		{ "2001:db8::5:18515", 1, "2001:db8::5:18515", 6000, NULL },
		{ "fe80::1%lo", 0, "fe80::1%lo", 18515, NULL },
		{ "", 0, NULL, 0, "the HOST is empty" },
		{ "node1:5000", 1, NULL, 0, "'node1:5000' and -p 6000 name two ports: give one" },
		{ "[::1]:5000", 1, NULL, 0, "'[::1]:5000' and -p 6000 name two ports: give one" },
		{ "node1:0", 0, NULL, 0, "'node1:0' is not HOST:PORT with a port of 1..65535 (or "
					  "give the HOST and -p PORT)" },
		{ "node1:65536", 0, NULL, 0, NULL }, { "node1:", 0, NULL, 0, NULL },
		{ ":5000", 0, NULL, 0, NULL }, { "[]:5000", 0, NULL, 0, NULL },
		{ "[]", 0, NULL, 0, NULL }, { "[::1", 0, NULL, 0, NULL },
		{ "[::1]x", 0, NULL, 0, NULL }, { "[::1]:", 0, NULL, 0, NULL },
		{ "[::1]:99999", 0, NULL, 0, NULL }, { "[node1]", 0, NULL, 0, NULL },
		{ "node1:5x", 0, NULL, 0, NULL }, { "node1:0x50", 0, NULL, 0, NULL },
		{ "node1:+80", 0, NULL, 0, NULL }, { "node1:-1", 0, NULL, 0, NULL },
		{ "node1: 80", 0, NULL, 0, NULL }, { "node1:99999999999", 0, NULL, 0, NULL },
	};
	size_t i;

	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		struct pn_bw_opts o = defaults();
		char *arg = (char *)t[i].arg;
		int tcp, ret;

		if (t[i].port_set) {
			o.port = 6000;
			o.port_set = 1;
		}
		ret = pn_bw_opts_args(&o, "tcp", 1, &arg, &tcp);
		CHECK_EQ_INT(ret, t[i].host ? 0 : -EINVAL);
		if (t[i].host && !ret) {
			CHECK_STR(o.host, t[i].host);
			CHECK_EQ_INT(o.port, t[i].port);
		}
		if (!t[i].host && t[i].why)
			CHECK_STR(pn_errmsg(-EINVAL), t[i].why);
		else if (!t[i].host && !t[i].port_set)
			CHECK(strstr(pn_errmsg(-EINVAL), "is not HOST:PORT with a port of 1..65535"));
	}
	{
		struct pn_bw_opts o = defaults();
		char arg[400], *a = arg;
		int tcp;

		memset(arg, 'a', 300);
		strcpy(arg + 300, ":80");
		CHECK_EQ_INT(pn_bw_opts_args(&o, NULL, 1, &a, &tcp), -ENAMETOOLONG);
	}
}

/* How a job pairs up, and -p under a launcher; rank0: only rank 0 says it. */
TEST(pairs)
{
	static const struct {
		int nranks, single, nargs, all_rails, port_set;
		const char *loopback;
		int ret, rank0;
		const char *why;
	} t[] = {
		{ 2, 0, 0, 0, 0, NULL, 0, 0, NULL },
		{ 8, 0, 0, 1, 0, NULL, 0, 0, NULL },
		{ 1, 1, 0, 0, 0, NULL, 0, 0, NULL },	/* srun -n 1: a plain process */
		{ 1, 1, 1, 0, 1, NULL, 0, 0, NULL },	/* its client, -p allowed */
		{ 1, 1, 0, 0, 1, "lo", 0, 0, NULL },
		{ 1, 0, 0, 0, 0, NULL, -EINVAL, 1, "ranks 2k and 2k+1 pair up: 1 rank is odd "
			"(the server is 'penny bw' without --np)" },
		{ 3, 0, 0, 0, 0, NULL, -EINVAL, 1, "ranks 2k and 2k+1 pair up: 3 ranks is odd" },
		{ 3, 1, 0, 0, 0, NULL, -EINVAL, 1, NULL },
		{ 2, 0, 1, 0, 0, NULL, -EINVAL, 1, "HOST runs one pair of processes; under a "
			"launcher (mpirun) ranks 2k and 2k+1 pair up" },
		{ 2, 0, 0, 0, 0, "lo", -EINVAL, 1, "--loopback runs one pair of processes; under "
			"a launcher (mpirun) ranks 2k and 2k+1 pair up" },
		{ 1, 1, 0, 1, 0, NULL, -EINVAL, 0, "--all-rails runs under a launcher (mpirun, "
			"srun, --np)" },
		{ 2, 0, 0, 0, 1, NULL, -EINVAL, 1, "-p is the server's port; under a launcher "
			"(mpirun) ranks 2k and 2k+1 meet through the job's rendezvous: drop -p" },
		{ 4, 0, 0, 1, 1, NULL, -EINVAL, 1, NULL },
	};
	size_t i;

	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		struct pn_bw_opts o = defaults();
		int rank0 = -1;

		o.all_rails = t[i].all_rails;
		o.port_set = t[i].port_set;
		o.loopback = t[i].loopback;
		CHECK_EQ_INT(pn_bw_opts_pairs(&o, t[i].nranks, t[i].single, t[i].nargs, "mpirun",
					      &rank0), t[i].ret);
		if (t[i].ret)
			CHECK_EQ_INT(rank0, t[i].rank0);
		if (t[i].why)
			CHECK_STR(pn_errmsg(-EINVAL), t[i].why);
	}
}

/* -R, -e and the RDMA settings unused over TCP: the lines said before a run */
TEST(notes)
{
	struct pn_bw_opts o = defaults();
	char buf[256];
	int i, n = 0;

	for (i = 0; pn_bw_opts_note(&o, 1, i, buf, sizeof(buf)); i++)
		n += !!buf[0];
	CHECK_EQ_INT(i, 3);
	CHECK_EQ_INT(n, 0);
	o.rdma_cm = o.events = 1;
	o.qps = 2;
	o.op = "read";
	CHECK_EQ_INT(pn_bw_opts_note(&o, 1, 0, buf, sizeof(buf)), 1);
	CHECK_STR(buf, "-R: penny connects the QPs over its own TCP exchange, not rdma_cm (both "
		       "ends must be penny bw); the test is the same");
	CHECK_EQ_INT(pn_bw_opts_note(&o, 1, 1, buf, sizeof(buf)), 1);
	CHECK(strstr(buf, "the bandwidth is the same") != NULL);
	CHECK_EQ_INT(pn_bw_opts_note(&o, 1, 2, buf, sizeof(buf)), 1);
	CHECK_STR(buf, "-q 2, --op read: RDMA settings, unused by --transport tcp (one TCP "
		       "stream)");
	CHECK_EQ_INT(pn_bw_opts_note(&o, 0, 2, buf, sizeof(buf)), 1);
	CHECK_STR(buf, "");
	CHECK_EQ_INT(pn_bw_opts_note(&o, 0, 3, buf, sizeof(buf)), 0);
}

int main(void)
{
	RUN(defaults_and_sizes);
	RUN(refused_combinations);
	RUN(devices_of_each_mode);
	RUN(gpu_options_hosts_and_transport);
	RUN(host_and_port);
	RUN(pairs);
	RUN(notes);
	return unit_done();
}
