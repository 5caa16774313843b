/* SPDX-License-Identifier: MIT */
/*
 * Bootstrap pieces that need no peers: the launcher environment (every
 * variable set must be a number in range), the rendezvous hello check and
 * its proof of the job's secret (SHA-256 and HMAC against published vectors),
 * collapsing the ranks' error lines, poll timeouts that cannot overflow.
 */
#define _GNU_SOURCE
#include "unit.h"

#include "engine/boot.h"
#include "engine/launch.h"
#include "base/log.h"
#include "base/sha256.h"
#include "base/util.h"
#include "t_ranks.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <stdlib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

/* pn_boot_cfg_from_env with only the "NAME=VALUE" pairs kv in the
 * environment snapshot (the engine reads no other); its return */
static int from_env(struct pn_boot_cfg *cfg, const char *const *kv)
{
	pn_boot_cfg_init(cfg);
	cfg->knobs.env = kv;
	return pn_boot_cfg_from_env(cfg);
}

TEST(launcher_env)
{
	struct pn_boot_cfg c;

	CHECK_EQ_INT(from_env(&c, NULL), 0);
	CHECK_STR(c.launcher, "none");
	CHECK_EQ_INT(c.nranks, 1);
	CHECK_EQ_INT(from_env(&c, (const char *[]){ "OMPI_COMM_WORLD_RANK=3", "OMPI_COMM_WORLD_SIZE=4",
					     "OMPI_COMM_WORLD_LOCAL_SIZE=4", NULL }), 0);
	CHECK_STR(c.launcher, "mpirun");
	CHECK(c.rank == 3 && c.nranks == 4 && c.single_node);
	CHECK_EQ_INT(from_env(&c, (const char *[]){ "SLURM_PROCID=1", "SLURM_NTASKS=2",
					     "SLURM_NNODES=1", "SLURM_STEP_ID=0", NULL }), 0);
	CHECK(!strcmp(c.launcher, "srun") && c.rank == 1 && c.single_node);
	/* a step's own node count, not the allocation's */
	CHECK_EQ_INT(from_env(&c, (const char *[]){ "SLURM_PROCID=0", "SLURM_NTASKS=2",
					     "SLURM_NNODES=2", "SLURM_STEP_NUM_NODES=1",
					     "SLURM_STEPID=3", "SLURM_JOB_ID=12", NULL }), 0);
	CHECK(c.single_node && !strcmp(c.jobid, "12.3"));
	/* a batch script has SLURM_PROCID and SLURM_NTASKS but no step: one process */
	CHECK_EQ_INT(from_env(&c, (const char *[]){ "SLURM_PROCID=0", "SLURM_NTASKS=4",
					     "SLURM_JOB_ID=12", NULL }), 0);
	CHECK(!strcmp(c.launcher, "none") && c.nranks == 1);
	CHECK_EQ_INT(from_env(&c, (const char *[]){ "RANK=1", "WORLD_SIZE=2", NULL }), 0);
	CHECK(!strcmp(c.launcher, "torchrun") && c.rank == 1 && c.nranks == 2);
	/* RANK alone is too common a name: not a launcher */
	CHECK_EQ_INT(from_env(&c, (const char *[]){ "RANK=x", NULL }), 0);
	CHECK_STR(c.launcher, "none");
}

TEST(launcher_env_refused)
{
	const char *const *bad[] = {
		(const char *[]){ "OMPI_COMM_WORLD_RANK=x", NULL },
		(const char *[]){ "OMPI_COMM_WORLD_RANK=x", "OMPI_COMM_WORLD_SIZE=2", NULL },
		(const char *[]){ "OMPI_COMM_WORLD_RANK=2", "OMPI_COMM_WORLD_SIZE=2", NULL },
		(const char *[]){ "OMPI_COMM_WORLD_RANK=-1", "OMPI_COMM_WORLD_SIZE=2", NULL },
		(const char *[]){ "OMPI_COMM_WORLD_RANK=1", "OMPI_COMM_WORLD_SIZE=0", NULL },
		(const char *[]){ "OMPI_COMM_WORLD_RANK=0", "OMPI_COMM_WORLD_SIZE=2000000000", NULL },
		(const char *[]){ "OMPI_COMM_WORLD_RANK=0", "OMPI_COMM_WORLD_SIZE=99999999999999999999",
				  NULL },
		(const char *[]){ "OMPI_COMM_WORLD_RANK=0", "OMPI_COMM_WORLD_SIZE=2 ", NULL },
		(const char *[]){ "OMPI_COMM_WORLD_RANK=", "OMPI_COMM_WORLD_SIZE=2", NULL },
		(const char *[]){ "OMPI_COMM_WORLD_RANK=1", "OMPI_COMM_WORLD_SIZE=4",
				  "OMPI_COMM_WORLD_LOCAL_RANK=2", "OMPI_COMM_WORLD_LOCAL_SIZE=2", NULL },
		(const char *[]){ "OMPI_COMM_WORLD_RANK=1", "OMPI_COMM_WORLD_SIZE=4",
				  "OMPI_COMM_WORLD_LOCAL_SIZE=5", NULL },
		(const char *[]){ "SLURM_PROCID=1", "SLURM_NTASKS=2", "SLURM_NNODES=two",
				  "SLURM_STEP_ID=0", NULL },
		(const char *[]){ "SLURM_PROCID=1", "SLURM_NTASKS=2", "SLURM_LOCALID=9",
				  "SLURM_STEP_ID=0", NULL },
		(const char *[]){ "SLURM_PROCID=1", "SLURM_NTASKS=2", "SLURM_STEP_NUM_NODES=3",
				  "SLURM_STEP_ID=0", NULL },
		(const char *[]){ "PMI_RANK=0", NULL },
		(const char *[]){ "PMI_RANK=0", "PMI_SIZE=1e3", NULL },
		(const char *[]){ "RANK=1", "WORLD_SIZE=0x2", NULL },
		(const char *[]){ "RANK=3", "WORLD_SIZE=2", NULL },
	};
	struct pn_boot_cfg c;
	size_t i;

	for (i = 0; i < PN_ARRAY_SIZE(bad); i++) {
		int ret = from_env(&c, bad[i]);

		CHECK_EQ_INT(ret, -EINVAL);
		if (ret != -EINVAL)
			printf("#   accepted: %s %s\n", bad[i][0], bad[i][1] ? bad[i][1] : "");
		CHECK(strstr(pn_errmsg(ret), "launcher environment") != NULL);
	}
}

TEST(explicit_ranks)
{
	struct pn_boot_cfg c;

	from_env(&c, NULL);
	pn_boot_cfg_init(&c);
	c.rank = 0;
	c.nranks = 2000000000;
	CHECK_EQ_INT(pn_boot_cfg_from_env(&c), -EINVAL);
	CHECK(strstr(pn_errmsg(-EINVAL), "more than 8192") != NULL);
	pn_boot_cfg_init(&c);
	c.rank = 0;
	c.nranks = PN_BOOT_MAX_RANKS;
	CHECK_EQ_INT(pn_boot_cfg_from_env(&c), 0);
	/* PENNY_NODE_ID: printable ASCII, what every rank's hello shows alike */
	pn_boot_cfg_init(&c);
	c.knobs.node_id = "rack1/node-07.a b";
	CHECK_EQ_INT(pn_boot_cfg_from_env(&c), 0);
	c.knobs.node_id = "a\tb";
	CHECK_EQ_INT(pn_boot_cfg_from_env(&c), -EINVAL);
	CHECK_STR(pn_errmsg(-EINVAL), "PENNY_NODE_ID='a\tb' has a byte that is not printable ASCII "
				      "(at 2)");
	c.knobs.node_id = "n\xc3\xa9";
	CHECK_EQ_INT(pn_boot_cfg_from_env(&c), -EINVAL);
	/* --root without --rank: refused, not ignored */
	pn_boot_cfg_init(&c);
	c.root = "127.0.0.1:5000";
	CHECK_EQ_INT(pn_boot_cfg_from_env(&c), -EINVAL);
	CHECK(strstr(pn_errmsg(-EINVAL), "needs --rank") != NULL);
	/* ... but with a launcher it is the rendezvous address */
	pn_boot_cfg_init(&c);
	c.knobs.env = (const char *[]){ "PMI_RANK=1", "PMI_SIZE=2", NULL };
	c.root = "10.0.0.1:5000";
	CHECK_EQ_INT(pn_boot_cfg_from_env(&c), 0);
	CHECK(c.rank == 1);
	/* PENNY_ROOT (a knob) too, and --root before it */
	pn_boot_cfg_init(&c);
	c.knobs.env = (const char *[]){ "PMI_RANK=1", "PMI_SIZE=2", NULL };
	c.knobs.root = "10.0.0.2:6000";
	CHECK_EQ_INT(pn_boot_cfg_from_env(&c), 0);
	CHECK(c.root && !strcmp(c.root, "10.0.0.2:6000"));
	/* an inherited PENNY_ROOT_FD: refused for a rank of a launcher, not
	 * looked at by a self-launched rank */
	pn_boot_cfg_init(&c);
	c.knobs.env = (const char *[]){ "PMI_RANK=1", "PMI_SIZE=2", NULL };
	c.knobs.root_fd = "7";
	c.root = "10.0.0.1:5000";
	CHECK_EQ_INT(pn_boot_cfg_from_env(&c), -EINVAL);
	CHECK(strstr(pn_errmsg(-EINVAL), "PENNY_ROOT_FD") != NULL);
	pn_boot_cfg_init(&c);
	c.knobs.root_fd = "7";
	c.rank = 1;
	c.nranks = 2;
	c.root = "127.0.0.1:5000";
	snprintf(c.launcher, sizeof(c.launcher), "self");
	CHECK_EQ_INT(pn_boot_cfg_from_env(&c), 0);
	CHECK_EQ_INT(c.listen_fd, -1);
}

static const uint8_t cookie[16] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 };
static const uint8_t secret[32] = { 's', 'e', 'c', 'r', 'e', 't' };
static const uint8_t challenge[16] = { 9, 9, 9 };
static const uint8_t guess[32] = { 'g' };

struct hello_msg {
	struct pn_frame h;
	struct pn_wire_hello m;
	uint8_t w[PN_FRAME_HDR_LEN + sizeof(struct pn_wire_hello)];
};
#define WHOLE (PN_FRAME_HDR_LEN + sizeof(struct pn_wire_hello))

/* The bytes on the wire: the header encoded, the hello after it, signed with key. */
static const void *wire_key(struct hello_msg *x, const uint8_t *key)
{
	pn_frame_put(x->w, &x->h);
	pn_wire_hello_mac(key, challenge, x->w, &x->m, x->m.mac);
	memcpy(x->w + PN_FRAME_HDR_LEN, &x->m, sizeof(x->m));
	return x->w;
}

static const void *wire(struct hello_msg *x)
{
	return wire_key(x, secret);
}

#define HELLO_CHECK(buf, len, out) \
	pn_wire_hello_check((buf), (len), cookie, secret, challenge, 4, (out))

static void hello_msg(struct hello_msg *x, uint32_t rank, uint32_t nranks)
{
	memset(x, 0, sizeof(*x));
	pn_wire_hdr_init(&x->h, cookie, PN_MSG_HELLO, rank, 0, sizeof(x->m));
	x->m.rank = rank;
	x->m.nranks = nranks;
	x->m.pid = 77;
	snprintf(x->m.host, sizeof(x->m.host), "a");
	snprintf(x->m.host_id, sizeof(x->m.host_id), "a/ns");
}

TEST(hello_check)
{
	struct hello_msg x;
	struct pn_wire_hello out;
	size_t k;

	hello_msg(&x, 2, 4);
	for (k = 0; k < WHOLE; k++)
		CHECK_EQ_INT(HELLO_CHECK(wire(&x), k, &out), -EAGAIN);
	CHECK_EQ_INT(HELLO_CHECK(wire(&x), WHOLE, &out), 0);
	CHECK(out.rank == 2 && out.pid == 77 && !strcmp(out.host, "a"));
	/* strangers: dropped */
	CHECK_EQ_INT(HELLO_CHECK("GET /", 5, &out), -EPROTO);
	CHECK_EQ_INT(HELLO_CHECK("P", 1, &out), -EPROTO);
	/* a rank of another job (another tag): known by its header alone */
	x.h.cookie[3] ^= 1;
	CHECK_EQ_INT(HELLO_CHECK(wire(&x), PN_FRAME_HDR_LEN, &out), -ESRCH);
	hello_msg(&x, 2, 4);
	x.h.len = 1ull << 40;
	CHECK_EQ_INT(HELLO_CHECK(wire(&x), PN_FRAME_HDR_LEN, &out), -EPROTO);
	hello_msg(&x, 2, 4);
	x.h.type = PN_MSG_ABORT;
	CHECK_EQ_INT(HELLO_CHECK(wire(&x), WHOLE, &out), -EPROTO);
	/* well formed, the job's cookie, but no proof of the secret: dropped,
	 * whatever it claims (another job size, a rank already there) */
	hello_msg(&x, 2, 8);
	CHECK_EQ_INT(HELLO_CHECK(wire_key(&x, guess), WHOLE, &out), -EACCES);
	CHECK(strstr(pn_errmsg(-EACCES), "claiming rank 2 of 8 (pid 77 on a) without the proof") != NULL);
	hello_msg(&x, 2, 4);
	wire(&x);
	x.w[WHOLE - 1] ^= 1;
	CHECK_EQ_INT(HELLO_CHECK(x.w, WHOLE, &out), -EACCES);
	/* the proof answers one challenge: a replayed hello does not pass */
	hello_msg(&x, 2, 4);
	CHECK_EQ_INT(pn_wire_hello_check(wire(&x), WHOLE, cookie, secret, cookie, 4, &out), -EACCES);
	/* the proof covers the header (here its sequence number) */
	hello_msg(&x, 2, 4);
	wire(&x);
	x.w[28] ^= 1;
	CHECK_EQ_INT(HELLO_CHECK(x.w, WHOLE, &out), -EACCES);
	/* proven, but inconsistent: the job fails */
	hello_msg(&x, 2, 4);
	x.h.src = 1;
	CHECK_EQ_INT(HELLO_CHECK(wire(&x), WHOLE, &out), -EINVAL);
	/* the job's secret but not of this job: the job fails */
	hello_msg(&x, 2, 8);
	CHECK_EQ_INT(HELLO_CHECK(wire(&x), WHOLE, &out), -EINVAL);
	CHECK(strstr(pn_errmsg(-EINVAL), "job of 8 ranks") != NULL);
	hello_msg(&x, 0, 4);
	CHECK_EQ_INT(HELLO_CHECK(wire(&x), WHOLE, &out), -EINVAL);
	hello_msg(&x, 4, 4);
	CHECK_EQ_INT(HELLO_CHECK(wire(&x), WHOLE, &out), -EINVAL);
	/* what goes to a terminal is printable and terminated */
	hello_msg(&x, 1, 4);
	memset(x.m.host, '\033', sizeof(x.m.host));
	CHECK_EQ_INT(HELLO_CHECK(wire(&x), WHOLE, &out), 0);
	CHECK(strlen(out.host) == sizeof(out.host) - 1 && !strchr(out.host, '\033'));
}

/* Rank 1 of a job of 2 (cookie ck) whose connection to rank 0 is fd, as
 * pn_boot_init leaves it. */
static struct pn_boot *fake_rank1(const uint8_t ck[16], int fd)
{
	struct pn_boot *b = calloc(1, sizeof(*b));

	CHECK(b != NULL);
	if (!b)
		return NULL;
	pn_boot_cfg_init(&b->cfg);
	memcpy(b->cfg.cookie, ck, 16);
	b->rank = 1;
	b->nranks = 2;
	b->fds = malloc(2 * sizeof(int));
	b->hello = calloc(2, sizeof(*b->hello));
	CHECK(b->fds && b->hello);
	b->fds[0] = fd;
	b->fds[1] = -1;
	return b;
}

/*
 * The frame header on the wire, byte by byte (little-endian, boot.h): what
 * pn_frame_put writes and what a rank's non-blocking look for an ABORT
 * (pn_boot_peek_hdr, pn_boot_poll_abort) reads, whatever the host's byte
 * order.  An ABORT is taken whole off the connection, however long its
 * text: nothing of it is left behind to be read as the next frame.
 */
TEST(frame_layout)
{
	static const uint8_t want[PN_FRAME_HDR_LEN] = {
		0x4e, 0x4e, 0x45, 0x50,		/* magic "PENN", 0x50454e4e */
		0x03, 0x00, 0x05, 0x00,		/* version 3, type 5 (ABORT) */
		0xc0, 0xc1, 0xc2, 0xc3, 0xc4, 0xc5, 0xc6, 0xc7,
		0xc8, 0xc9, 0xca, 0xcb, 0xcc, 0xcd, 0xce, 0xcf, /* cookie */
		0x00, 0x00, 0x00, 0x00,		/* src 0 */
		0x0d, 0x00, 0x00, 0x00,		/* seq 13 */
		0xe8, 0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* len 1000 */
	};
	uint8_t ck[16], w[PN_FRAME_HDR_LEN], msg[PN_FRAME_HDR_LEN + 1000], rest[8];
	struct pn_frame h;
	struct pn_boot *b;
	int sv[2], i;

	for (i = 0; i < 16; i++)
		ck[i] = (uint8_t)(0xc0 + i);
	CHECK_EQ_INT(PN_BOOT_VERSION, 3);
	pn_wire_hdr_init(&h, ck, PN_MSG_ABORT, 0, 13, 1000);
	pn_frame_put(w, &h);
	CHECK(!memcmp(w, want, sizeof(want)));
	memcpy(msg, want, sizeof(want));
	memset(msg + PN_FRAME_HDR_LEN, 'a', 1000);
	memcpy(msg + PN_FRAME_HDR_LEN, "stop: ", 6);

	CHECK(!socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
	if (!(b = fake_rank1(ck, sv[0])))
		return;
	/* a part of a header: nothing yet */
	CHECK(write(sv[1], msg, 20) == 20);
	CHECK_EQ_INT(pn_boot_peek_hdr(sv[0], &h), 0);
	CHECK_EQ_INT(pn_boot_poll_abort(b), 0);
	CHECK(write(sv[1], msg + 20, sizeof(msg) - 20) == (ssize_t)sizeof(msg) - 20);
	CHECK_EQ_INT(pn_boot_peek_hdr(sv[0], &h), 1);
	CHECK(h.magic == PN_BOOT_MAGIC && h.version == 3 && h.type == PN_MSG_ABORT && h.src == 0 &&
	      h.seq == 13 && h.len == 1000 && !memcmp(h.cookie, ck, 16));
	CHECK_EQ_INT(pn_boot_poll_abort(b), -ECANCELED);
	CHECK(!strncmp(pn_errmsg(-ECANCELED), "stop: aaa", 9) &&
	      strlen(pn_errmsg(-ECANCELED)) == 299);
	/* taken whole: the 1000 bytes of text too */
	CHECK(recv(sv[0], rest, sizeof(rest), MSG_DONTWAIT) < 0 && errno == EAGAIN);
	pn_boot_free(b);
	close(sv[1]);

	/* the same frame with its type written big-endian (0x0005): not an ABORT */
	CHECK(!socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
	if (!(b = fake_rank1(ck, sv[0])))
		return;
	msg[6] = 0x00;
	msg[7] = 0x05;
	CHECK(write(sv[1], msg, sizeof(msg)) == (ssize_t)sizeof(msg));
	CHECK_EQ_INT(pn_boot_peek_hdr(sv[0], &h), 1);
	CHECK(h.type == 0x0500);
	CHECK_EQ_INT(pn_boot_poll_abort(b), 0);
	CHECK(recv(sv[0], w, sizeof(w), MSG_DONTWAIT) == (ssize_t)sizeof(w));
	/* the peer gone */
	close(sv[1]);
	while (recv(sv[0], msg, sizeof(msg), MSG_DONTWAIT) > 0)
		;
	CHECK_EQ_INT(pn_boot_peek_hdr(sv[0], &h), -EPIPE);
	CHECK_EQ_INT(pn_boot_poll_abort(b), -EPIPE);
	pn_boot_free(b);
}

/* A peer killed with data it never read resets its TCP connection: the
 * first look already says it is gone (it said nothing, once). */
TEST(poll_reset)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct linger lg = { .l_onoff = 1, .l_linger = 0 };
	socklen_t al = sizeof(a);
	uint8_t ck[16] = { 0 };
	struct pn_boot *b;
	int l = socket(AF_INET, SOCK_STREAM, 0), c = socket(AF_INET, SOCK_STREAM, 0), s;
	struct pollfd p;

	CHECK(l >= 0 && c >= 0 && !bind(l, (struct sockaddr *)&a, sizeof(a)) && !listen(l, 1) &&
	      !getsockname(l, (struct sockaddr *)&a, &al) &&
	      !connect(c, (struct sockaddr *)&a, sizeof(a)));
	s = accept(l, NULL, NULL);
	close(l);
	CHECK(s >= 0 && write(c, "unread", 6) == 6);
	if (s < 0 || !(b = fake_rank1(ck, c)))
		return;
	/* the peer: its data unread, linger 0: a reset */
	usleep(20000);
	setsockopt(s, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	close(s);
	p = (struct pollfd){ .fd = c, .events = POLLIN };
	CHECK_EQ_INT(poll(&p, 1, 5000), 1);
	CHECK_EQ_INT(pn_boot_poll_abort(b), -EPIPE);
	CHECK(strstr(pn_errmsg(-EPIPE), "rank 0 (host ?, pid 0) closed its connection") != NULL);
	pn_boot_free(b);
}

/* Slurm's host lists: every host, its count, and what is not a list. */
TEST(hostlist)
{
	static const struct {
		const char *list;
		long count;
		const char *hosts; /* the hosts, space-separated */
	} v[] = {
		{ "n1", 1, "n1" },
		{ "n[1-2]", 2, "n1 n2" },
		{ "node[01-04,07]", 5, "node01 node02 node03 node04 node07" },
		{ "a1,b[8-10]c,d", 5, "a1 b8c b9c b10c d" },
		{ "gpu[1-2]x[3-4]", 4, "gpu1x3 gpu1x4 gpu2x3 gpu2x4" },
		{ "r[009-011]", 3, "r009 r010 r011" },
		{ "[1-3]", 3, "1 2 3" },
		{ "host-a.example.com", 1, "host-a.example.com" },
	};
	static const char *const bad[] = { "", "n[", "n[1-", "n[2-1]", "n]", "n[a]", "a,,b", ",a",
					   "a,", "n[1-2", "n[1-2]]", "a b", "n[-1]", "n[1,]",
					   "n[1-9999999999]", "x[1-999999][1-999999][1-999999][1-999999]" };
	char h[64], want[200], got[200];
	size_t i, k;

	for (i = 0; i < PN_ARRAY_SIZE(v); i++) {
		CHECK_EQ_INT(pn_hostlist_count(v[i].list), v[i].count);
		got[0] = 0;
		for (k = 0; !pn_hostlist_nth(v[i].list, (long)k, h, sizeof(h)); k++)
			snprintf(got + strlen(got), sizeof(got) - strlen(got), "%s%s", k ? " " : "", h);
		snprintf(want, sizeof(want), "%s", v[i].hosts);
		CHECK_STR(got, want);
		CHECK_EQ_INT(pn_hostlist_nth(v[i].list, v[i].count, h, sizeof(h)), 1);
	}
	for (i = 0; i < PN_ARRAY_SIZE(bad); i++) {
		CHECK(pn_hostlist_count(bad[i]) < 0);
		if (pn_hostlist_count(bad[i]) >= 0)
			printf("#   accepted '%s'\n", bad[i]);
		CHECK_EQ_INT(pn_hostlist_nth(bad[i], 0, h, sizeof(h)), -EINVAL);
	}
	CHECK_EQ_INT(pn_hostlist_nth("averylongname[1-2]", 0, h, 8), -ENAMETOOLONG);
	CHECK_EQ_INT(pn_hostlist_count(NULL), -EINVAL);
	/* a million hosts: the last one without listing them */
	CHECK_EQ_INT(pn_hostlist_count("n[0-999],m[000000-999999]"), 1001000);
	CHECK_EQ_INT(pn_hostlist_nth("n[0-999],m[000000-999999]", 1000999, h, sizeof(h)), 0);
	CHECK_STR(h, "m999999");
}

/* The ports of a derived rendezvous: in range, distinct, the same for one
 * job everywhere, others for another job. */
TEST(rdv_ports)
{
	int a[PN_RDV_DERIVED], b[PN_RDV_DERIVED], c[PN_RDV_DERIVED], i, j, n;

	n = pn_rdv_ports("srun:12.0", a, PN_RDV_DERIVED);
	CHECK_EQ_INT(n, PN_RDV_DERIVED);
	CHECK_EQ_INT(pn_rdv_ports("srun:12.0", b, PN_RDV_DERIVED), n);
	CHECK(!memcmp(a, b, sizeof(a)));
	pn_rdv_ports("srun:12.1", c, PN_RDV_DERIVED);
	CHECK(memcmp(a, c, sizeof(a)));
	for (i = 0; i < n; i++) {
		CHECK(a[i] >= PN_RDV_PORT_LO && a[i] < PN_RDV_PORT_LO + PN_RDV_PORT_SPAN);
		for (j = 0; j < i; j++)
			CHECK(a[i] != a[j]);
	}
}

/* The launcher's own rendezvous from its environment, or one line naming
 * the launcher and the recipe. */
static int rdv_of(struct pn_boot_cfg *c, const char *const *env)
{
	int ret = from_env(c, env);

	return ret ? ret : pn_rdv_launcher(c);
}

TEST(rdv_launcher)
{
	struct pn_boot_cfg c;
	char dir[] = "/tmp/penny-t_boot.XXXXXX", hf[64];
	FILE *f;

	/* Slurm: the step's first node, the job's ports; two steps differ */
	CHECK_EQ_INT(rdv_of(&c, (const char *[]){ "SLURM_PROCID=1", "SLURM_NTASKS=4",
		"SLURM_STEP_ID=0", "SLURM_JOB_ID=77", "SLURM_STEP_NUM_NODES=2",
		"SLURM_JOB_NODELIST=a[1-9]", "SLURM_STEP_NODELIST=gpu[07-08]", NULL }), 0);
	CHECK(c.rdv.nhosts == 1 && !strcmp(c.rdv.hosts[0], "gpu07") && c.rdv.any && c.rdv.probe);
	CHECK_EQ_INT(c.rdv.nports, PN_RDV_DERIVED);
	CHECK(strstr(c.rdv.how, "SLURM_STEP_NODELIST") != NULL);
	{
		int p0 = c.rdv.ports[0];

		rdv_of(&c, (const char *[]){ "SLURM_PROCID=1", "SLURM_NTASKS=4", "SLURM_STEP_ID=1",
			"SLURM_JOB_ID=77", "SLURM_STEP_NODELIST=gpu[07-08]", NULL });
		CHECK(c.rdv.ports[0] != p0);
	}
	/* the step's reserved ports first; a node alias gives the address */
	CHECK_EQ_INT(rdv_of(&c, (const char *[]){ "SLURM_PROCID=1", "SLURM_NTASKS=2",
		"SLURM_STEP_ID=0", "SLURM_JOB_ID=7", "SLURM_STEP_NODELIST=c[1-2]",
		"SLURM_STEP_RESV_PORTS=12001-12003",
		"SLURM_NODE_ALIASES=c1:[fd00::1]:c1,c2:10.0.0.2:c2", NULL }), 0);
	CHECK(c.rdv.ports[0] == 12001 && c.rdv.ports[2] == 12003 && c.rdv.nports == 11);
	CHECK_STR(c.rdv.hosts[0], "fd00::1");
	/* a heterogeneous step: rank 0 is in its first component */
	CHECK_EQ_INT(rdv_of(&c, (const char *[]){ "SLURM_PROCID=1", "SLURM_NTASKS=3",
		"SLURM_STEP_ID=0", "SLURM_JOB_ID=1", "SLURM_HET_SIZE=2",
		"SLURM_STEP_NODELIST=n[1-2]", "SLURM_JOB_NODELIST_HET_GROUP_0=n2", NULL }), 0);
	CHECK_STR(c.rdv.hosts[0], "n2");
	/* -m arbitrary: the hostfile's first line */
	CHECK(mkdtemp(dir) != NULL);
	snprintf(hf, sizeof(hf), "%s/hosts", dir);
	f = fopen(hf, "w");
	if (f) {
		fputs("n2\nn1\nn1\n", f);
		fclose(f);
	}
	{
		char var[80];

		snprintf(var, sizeof(var), "SLURM_HOSTFILE=%s", hf);
		CHECK_EQ_INT(rdv_of(&c, (const char *[]){ "SLURM_PROCID=1", "SLURM_NTASKS=3",
			"SLURM_STEP_ID=0", "SLURM_JOB_ID=1", "SLURM_DISTRIBUTION=arbitrary",
			"SLURM_STEP_NODELIST=n[1-2]", var, NULL }), 0);
		CHECK_STR(c.rdv.hosts[0], "n2");
	}
	unlink(hf);
	rmdir(dir);
	/* rank 0 on another node than the others expect: it says so at once
	 * (the environment outlives the CHECK's block: pn_rdv_check_root reads it) */
	const char *n2[] = { "SLURM_PROCID=0", "SLURM_NTASKS=3", "SLURM_STEP_ID=0", "SLURM_JOB_ID=1",
			     "SLURM_STEP_NODELIST=n[1-2]", "SLURMD_NODENAME=n2", NULL };
	CHECK_EQ_INT(rdv_of(&c, n2), 0);
	CHECK_EQ_INT(pn_rdv_check_root(&c), -EINVAL);
	CHECK(strstr(pn_errmsg(-EINVAL), "rank 0 runs on node n2, but the other ranks look for it on n1"));
	c.knobs.env = (const char *[]){ "SLURMD_NODENAME=n1", NULL };
	CHECK_EQ_INT(pn_rdv_check_root(&c), 0);
	/* a list that is not one */
	CHECK_EQ_INT(rdv_of(&c, (const char *[]){ "SLURM_PROCID=1", "SLURM_NTASKS=2",
		"SLURM_STEP_ID=0", "SLURM_JOB_ID=1", "SLURM_STEP_NODELIST=n[1-", NULL }), -EINVAL);
	CHECK(strstr(pn_errmsg(-EINVAL), "under srun") && strstr(pn_errmsg(-EINVAL), "--root"));
	/* Open MPI: mpirun's addresses, IPv4 first */
	CHECK_EQ_INT(rdv_of(&c, (const char *[]){ "OMPI_COMM_WORLD_RANK=1",
		"OMPI_COMM_WORLD_SIZE=2", "OMPI_MCA_ess_base_jobid=4242",
		"OMPI_MCA_orte_hnp_uri=4241.0;tcp6://[fd00::2]:44461;tcp://192.0.2.2,10.1.1.1:4456",
		NULL }), 0);
	CHECK(c.rdv.nhosts == 3 && c.rdv.hnp);
	CHECK_STR(c.rdv.hosts[0], "192.0.2.2");
	CHECK_STR(c.rdv.hosts[1], "10.1.1.1");
	CHECK_STR(c.rdv.hosts[2], "fd00::2");
	/* torchrun: MASTER_ADDR, MASTER_PORT first unless its agent holds it */
	CHECK_EQ_INT(rdv_of(&c, (const char *[]){ "RANK=1", "WORLD_SIZE=2", "MASTER_ADDR=m",
		"MASTER_PORT=29500", NULL }), 0);
	CHECK(c.rdv.ports[0] == 29500 && c.rdv.nports == 1 + PN_RDV_DERIVED);
	CHECK_EQ_INT(rdv_of(&c, (const char *[]){ "RANK=1", "WORLD_SIZE=2", "MASTER_ADDR=m",
		"MASTER_PORT=29500", "TORCHELASTIC_USE_AGENT_STORE=True", NULL }), 0);
	CHECK(c.rdv.ports[0] != 29500);
	/* a MASTER_PORT that is no port, or one of the two alone: named, not "none" */
	CHECK_EQ_INT(rdv_of(&c, (const char *[]){ "RANK=1", "WORLD_SIZE=2", "MASTER_ADDR=m",
		"MASTER_PORT=99999", NULL }), -EINVAL);
	CHECK(strstr(pn_errmsg(-EINVAL), "(MASTER_PORT='99999' is not a port 1..65535)") != NULL);
	CHECK_EQ_INT(rdv_of(&c, (const char *[]){ "RANK=1", "WORLD_SIZE=2", "MASTER_ADDR=m",
		NULL }), -EINVAL);
	CHECK(strstr(pn_errmsg(-EINVAL), "(MASTER_ADDR=m without MASTER_PORT)") != NULL);
	CHECK_EQ_INT(rdv_of(&c, (const char *[]){ "RANK=1", "WORLD_SIZE=2", "MASTER_PORT=29500",
		NULL }), -EINVAL);
	CHECK(strstr(pn_errmsg(-EINVAL), "(MASTER_PORT=29500 without MASTER_ADDR)") != NULL);
	/* PMI (MPICH's hydra) says nothing of rank 0: the launcher, the recipe */
	CHECK_EQ_INT(rdv_of(&c, (const char *[]){ "PMI_RANK=1", "PMI_SIZE=2", NULL }), -EINVAL);
	CHECK(strstr(pn_errmsg(-EINVAL), "no rendezvous address for 2 ranks under pmi") &&
	      strstr(pn_errmsg(-EINVAL), "PENNY_ROOT=HOST:PORT"));
}

/* Where a rank's secret comes from, in order, and what is refused. */
TEST(secret_sources)
{
	char dir[] = "/tmp/penny-t_boot.XXXXXX", path[80], home[90];
	struct pn_boot_cfg c, d;
	uint8_t s1[32];
	FILE *f;

	CHECK(mkdtemp(dir) != NULL);
	snprintf(path, sizeof(path), "%s/site", dir);
	snprintf(home, sizeof(home), "HOME=%s", dir);
	f = fopen(path, "w");
	if (f) {
		fputs("site secret\n", f);
		fclose(f);
	}
	/* the site's file, when this user may read it and no one else */
	chmod(path, 0640);
	from_env(&c, (const char *[]){ home, NULL });
	c.knobs.site_secret = path;
	CHECK_EQ_INT(pn_boot_secret(&c), 0);
	CHECK_STR(c.secret_src, path);
	memcpy(s1, c.secret, 32);
	chmod(path, 0644);
	from_env(&c, (const char *[]){ home, NULL });
	c.knobs.site_secret = path;
	CHECK_EQ_INT(pn_boot_secret(&c), -EPERM);
	CHECK(strstr(pn_errmsg(-EPERM), "refusing the site's job secret") != NULL);
	/* Open MPI's job key before it; PENNY_COOKIE before both */
	chmod(path, 0600);
	from_env(&c, (const char *[]){ home, "OMPI_MCA_orte_precondition_transports="
		 "2589b624164c9464-eb5d51af20e3d5ef", NULL });
	c.knobs.site_secret = path;
	CHECK_EQ_INT(pn_boot_secret(&c), 0);
	CHECK(strstr(c.secret_src, "Open MPI") && memcmp(c.secret, s1, 32));
	from_env(&c, (const char *[]){ home, NULL });
	c.knobs.site_secret = path;
	c.knobs.cookie = "x";
	CHECK_EQ_INT(pn_boot_secret(&c), 0);
	CHECK_STR(c.secret_src, "PENNY_COOKIE");
	/* no site file: the per-user one, made once */
	from_env(&c, (const char *[]){ home, NULL });
	c.knobs.site_secret = "/nonexistent/penny/secret";
	CHECK_EQ_INT(pn_boot_secret(&c), 0);
	CHECK(strstr(c.secret_src, "made just now") != NULL);
	from_env(&d, (const char *[]){ home, NULL });
	d.knobs.site_secret = "/nonexistent/penny/secret";
	CHECK_EQ_INT(pn_boot_secret(&d), 0);
	CHECK(!memcmp(c.secret, d.secret, 32) && !strstr(d.secret_src, "made"));
	/* a relative HOME is what it is, not "not set" */
	from_env(&c, (const char *[]){ "HOME=rel/dir", NULL });
	c.knobs.site_secret = NULL;
	CHECK_EQ_INT(pn_boot_secret(&c), -EINVAL);
	CHECK(strstr(pn_errmsg(-EINVAL), "HOME='rel/dir' is not an absolute path") != NULL);
	from_env(&c, (const char *[]){ "PATH=/bin", NULL });
	c.knobs.site_secret = NULL;
	CHECK_EQ_INT(pn_boot_secret(&c), -EINVAL);
	CHECK(strstr(pn_errmsg(-EINVAL), "HOME is not set") != NULL);
	/* a launcher's rank without a secret of its own waits for rank 0's
	 * MUNGE credential; without one, the per-user file, or why not */
	from_env(&c, (const char *[]){ "SLURM_PROCID=1", "SLURM_NTASKS=2", "SLURM_STEP_ID=0",
		 "SLURM_JOB_ID=5", NULL });
	c.knobs.site_secret = NULL;
	CHECK_EQ_INT(pn_boot_secret(&c), 0);
	CHECK(!c.have_secret && c.munge);
	CHECK_EQ_INT(pn_boot_secret_later(&c), -EINVAL);
	CHECK(strstr(pn_errmsg(-EINVAL), "HOME is not set") != NULL);
	snprintf(path, sizeof(path), "rm -rf %s", dir);
	CHECK_EQ_INT(system(path), 0);
}

/* The job's public tag and its cookie: another for every context and nonce. */
TEST(cookie_per_job)
{
	struct pn_boot_cfg a, b;
	uint8_t ta[16], tb[16];

	pn_boot_cfg_init(&a);
	memset(a.secret, 7, sizeof(a.secret));
	a.root = "h:1";
	b = a;
	pn_boot_tag(&a, ta);
	pn_boot_tag(&b, tb);
	CHECK(!memcmp(ta, tb, 16));
	a.nonce[0] = 1;
	pn_boot_derive_cookie(&a);
	pn_boot_derive_cookie(&b);
	CHECK(memcmp(a.cookie, b.cookie, 16));
	/* the tag is public: no secret in it */
	memset(b.secret, 8, sizeof(b.secret));
	pn_boot_tag(&b, tb);
	CHECK(!memcmp(ta, tb, 16));
	snprintf(b.jobid, sizeof(b.jobid), "12.0");
	snprintf(b.launcher, sizeof(b.launcher), "srun");
	pn_boot_tag(&b, tb);
	CHECK(memcmp(ta, tb, 16));
	/* rank 0's proof covers the job's nonce and tag */
	{
		uint8_t m1[32], m2[32], n[16] = { 1 }, n2[16] = { 2 };

		pn_wire_welcome_mac(a.secret, challenge, n, 1, ta, n, m1);
		pn_wire_welcome_mac(a.secret, challenge, n, 1, ta, n2, m2);
		CHECK(memcmp(m1, m2, 32));
		pn_wire_welcome_mac(a.secret, challenge, n, 1, tb, n, m2);
		CHECK(memcmp(m1, m2, 32));
	}
}

TEST(sha256_vectors)
{
	/* FIPS 180-4 examples and RFC 4231 test cases 1, 2 and 6 */
	static const struct {
		const char *key, *msg, *want;
	} v[] = {
		{ NULL, "", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" },
		{ NULL, "abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" },
		{ NULL, "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
		  "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1" },
		{ "\x0b\x0b\x0b\x0b\x0b\x0b\x0b\x0b\x0b\x0b\x0b\x0b\x0b\x0b\x0b\x0b\x0b\x0b\x0b\x0b",
		  "Hi There", "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7" },
		{ "Jefe", "what do ya want for nothing?",
		  "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843" },
	};
	char key[131], hex[65];
	uint8_t md[32];
	struct pn_sha256 s;
	size_t i, k;

	for (i = 0; i < PN_ARRAY_SIZE(v); i++) {
		if (v[i].key) {
			const void *p[1] = { v[i].msg };
			size_t l[1] = { strlen(v[i].msg) };

			pn_hmac_sha256(v[i].key, strlen(v[i].key), 1, p, l, md);
		} else {
			pn_sha256(v[i].msg, strlen(v[i].msg), md);
		}
		for (k = 0; k < 32; k++)
			snprintf(hex + 2 * k, 3, "%02x", md[k]);
		CHECK_STR(hex, v[i].want);
	}
	/* a key longer than a block, a million 'a' fed in uneven pieces */
	memset(key, 0xaa, sizeof(key));
	{
		static const char msg[] = "Test Using Larger Than Block-Size Key - Hash Key First";
		const void *p[2] = { msg, msg + 10 };
		size_t l[2] = { 10, sizeof(msg) - 11 };

		pn_hmac_sha256(key, sizeof(key), 2, p, l, md);
		for (k = 0; k < 32; k++)
			snprintf(hex + 2 * k, 3, "%02x", md[k]);
		CHECK_STR(hex, "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
	}
	pn_sha256_init(&s);
	for (i = 0, k = 1; i < 1000000; i += k, k = k % 97 + 1)
		pn_sha256_update(&s, key, 0), pn_sha256_update(&s, (memset(key, 'a', 97), key),
							    PN_MIN(k, 1000000 - i));
	pn_sha256_final(&s, md);
	for (k = 0; k < 32; k++)
		snprintf(hex + 2 * k, 3, "%02x", md[k]);
	CHECK_STR(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

static void check_collapse(const char *in, const char *want)
{
	char *out = pn_boot_collapse(in, strlen(in));

	CHECK(out != NULL);
	if (out)
		CHECK_STR(out, want);
	free(out);
}

TEST(collapse)
{
	check_collapse("", "");
	check_collapse("rank 3: boom\n", "rank 3: boom\n");
	check_collapse("rank 3: rank 2 died\nrank 0: rank 2 died\nrank 1: rank 2 died\n",
		       "ranks 0,1,3: rank 2 died\n");
	check_collapse("rank 0: a\nrank 1: a\nrank 2: a\nrank 5: a\nrank 7: b\nrank 6: a\n",
		       "ranks 0-2,5,6: a\nrank 7: b\n");
	/* other lines: once each, in order; a missing last newline is fine */
	check_collapse("x\nrank 1: a\nx\nranks: y\nrank 2 died\nrank 1: a",
		       "x\nrank 1: a\nranks: y\nrank 2 died\n");
	check_collapse("\n\nrank 9999999999999: z\n", "rank 9999999999999: z\n");
	/* a rank naming itself says the same as the others naming themselves */
	check_collapse("rank 2: x: rank 2 (host a) has none\nrank 12: x: rank 12 (host a) has none\n"
		       "rank 1: x: rank 12 (host a) has none\nrank 3: rank 31 and rank 3b\n",
		       "ranks 2,12: x: this rank (host a) has none\n"
		       "rank 1: x: rank 12 (host a) has none\nrank 3: rank 31 and rank 3b\n");
}

TEST(poll_ms)
{
	CHECK_EQ_INT(pn_poll_ms(0, 100), 0);
	CHECK_EQ_INT(pn_poll_ms(-5, 100), 0);
	CHECK_EQ_INT(pn_poll_ms(NAN, 100), 0);
	CHECK_EQ_INT(pn_poll_ms(0.0001, 100), 1);
	CHECK_EQ_INT(pn_poll_ms(0.05, 100), 50);
	CHECK_EQ_INT(pn_poll_ms(2147484.0, INT_MAX), INT_MAX);
	CHECK_EQ_INT(pn_poll_ms(INFINITY, 200), 200);
	CHECK_EQ_INT(pn_poll_ms(1e300, 200), 200);
}

/* pn_boot_run_ranks: every multi-rank run's self-launch.  Each rank runs
 * the function, meets the others and ends with its return; a rank's line
 * through pn_boot_tell reaches the launcher's report. */
static int one_rank(struct pn_boot_cfg *cfg, void *arg)
{
	struct pn_boot *b = NULL;
	int fail = *(int *)arg, ret = pn_boot_init(&b, cfg);

	if (!ret && pn_boot_nranks(b) != 3)
		ret = -EINVAL;
	if (!ret && fail && cfg->rank == 1) {
		char line[64];
		int n = snprintf(line, sizeof(line), "rank %d: boom\n", cfg->rank);

		ret = pn_boot_tell(cfg, line, (size_t)n) ? -EIO : 2;
	}
	pn_boot_free(b);
	return ret < 0 ? 1 : ret;
}

/* Rank 0 holds a connection to every rank, the others one to rank 0; when
 * rank 2's process ends without a word, rank 0's connection to it hangs up
 * (what a transfer with rank 2 watches: pn_verbs_conn_watch). */
static int peer_fd_rank(struct pn_boot_cfg *cfg, void *arg)
{
	struct pn_boot *b = NULL;
	struct pollfd p;
	int ret = pn_boot_init(&b, cfg), me = cfg->rank, r;

	(void)arg;
	if (ret)
		return 1;
	for (r = 0; r < 3; r++)
		if ((pn_boot_peer_fd(b, r) >= 0) != (r != me && (me == 0 || r == 0)))
			ret = 3;
	if (pn_boot_peer_fd(b, 3) != -1 || pn_boot_peer_fd(b, -1) != -1 ||
	    pn_boot_peer_fd(NULL, 0) != -1)
		ret = 3;
	if (!ret && pn_boot_barrier(b))
		ret = 4;
	if (me == 2)
		_exit(ret); /* gone, as a killed process is: no goodbye */
	p = (struct pollfd){ .fd = pn_boot_peer_fd(b, me == 0 ? 2 : 0), .events = POLLRDHUP };
	if (!ret && me == 0 && (poll(&p, 1, 10000) != 1 || !(p.revents & (POLLRDHUP | POLLHUP))))
		ret = 5;
	pn_boot_free(b);
	return ret;
}

TEST(run_ranks)
{
	struct pn_boot_cfg cfg;
	char *report = NULL;
	int status = -1, fail = 0;

	pn_boot_cfg_init(&cfg);
	cfg.timeout = 10;
	fflush(NULL);
	CHECK_EQ_INT(pn_boot_run_ranks(3, &cfg, one_rank, &fail, &status, &report), 0);
	CHECK_EQ_INT(status, 0);
	CHECK(!report || !report[0]);
	free(report);
	report = NULL;
	fail = 1;
	pn_boot_cfg_init(&cfg);
	cfg.timeout = 10;
	CHECK_EQ_INT(pn_boot_run_ranks(3, &cfg, one_rank, &fail, &status, &report), 0);
	CHECK_EQ_INT(status, 2);
	CHECK(report && strstr(report, "rank 1: boom\n"));
	free(report);
	report = NULL;
	/* a rank, size or rendezvous of its own is refused, nothing started */
	pn_boot_cfg_init(&cfg);
	cfg.nranks = 4;
	CHECK_EQ_INT(pn_boot_run_ranks(2, &cfg, one_rank, &fail, &status, &report), -EINVAL);
	CHECK(strstr(pn_errmsg(-EINVAL), "--rank, --nranks and --root") != NULL);
	pn_boot_cfg_init(&cfg);
	cfg.root = "127.0.0.1:1";
	CHECK_EQ_INT(pn_boot_run_ranks(2, &cfg, one_rank, &fail, &status, &report), -EINVAL);
	/* the connection to a rank's process, and its hang-up when it is gone */
	pn_boot_cfg_init(&cfg);
	cfg.timeout = 10;
	CHECK_EQ_INT(pn_boot_run_ranks(3, &cfg, peer_fd_rank, NULL, &status, &report), 0);
	CHECK_EQ_INT(status, 0);
	free(report);
	report = NULL;
	/* no launcher to tell */
	pn_boot_cfg_init(&cfg);
	CHECK(pn_boot_tell(&cfg, "x\n", 2) < 0);
}

/*
 * A rendezvous that failed under a rank fails its later steps at once with
 * the first reason.  Rank 1 gave up on rank 2 (a transfer timed out): it
 * tells rank 0, then joins the agreement.  Rank 0 meets the notice where
 * rank 1's agreement message was to be and stops there, a step ahead of
 * it; its next step (check's agreement after each check) read that message
 * and said "rank 1 sent 4 bytes for step 1, expected 4 for step 2 (ranks
 * disagree on the work)", naming rank 1 (t0860, once in a CI run).
 */
static void lost_rank(struct pn_boot_cfg *cfg, int round, int fd)
{
	struct pn_boot *b = NULL;
	char line[T_RANKS_LINE], why[T_RANKS_LINE / 2];
	int me = cfg->rank, r1 = 0, r2 = 0, r3 = 0, ok = 1, n;

	(void)round;
	if (pn_boot_init(&b, cfg)) {
		n = snprintf(line, sizeof(line), "%d init failed\n", me);
		n = (int)write(fd, line, (size_t)n);
		return;
	}
	if (me == 1) {
		pn_boot_abort(b, "timed out waiting for rank 2 (a test)");
		r1 = pn_boot_agree_err(b, -ETIMEDOUT, 1, NULL);
	} else if (me == 0) {
		usleep(200000); /* rank 1's notice and its message are both there */
		r1 = pn_boot_agree_err(b, -ETIMEDOUT, 1, NULL);
		r2 = pn_boot_agree_err(b, r1, 1, NULL);
		snprintf(why, sizeof(why), "%s", pn_errmsg(r2));
		/* every kind of step says the same */
		if (pn_boot_barrier(b) != r1 || pn_boot_agree(b, 1, &ok) != r1 || ok ||
		    pn_boot_bcast(b, &n, sizeof(n), 1) != r1 ||
		    pn_boot_allgather(b, &me, &n, sizeof(me)) != r1 || strcmp(pn_errmsg(r1), why))
			r3 = -EINVAL;
	} else {
		usleep(400000);
		r1 = pn_boot_barrier(b);
		snprintf(why, sizeof(why), "%s", pn_errmsg(r1));
	}
	if (me == 1)
		snprintf(why, sizeof(why), "%s", pn_errmsg(r1));
	n = snprintf(line, sizeof(line), "%d %d %d %d %s\n", me, r1, r2, r3, why);
	n = (int)write(fd, line, (size_t)n);
	pn_boot_free(b);
}

TEST(lost_steps)
{
	char out[3][T_RANKS_LINE], want[T_RANKS_LINE];

	t_ranks_run(3, lost_rank, 0, out);
	snprintf(want, sizeof(want), "%d %d 0 timed out waiting for rank 2 (a test)", -ECANCELED,
		 -ECANCELED);
	CHECK_STR(out[0], want);
	snprintf(want, sizeof(want), "%d 0 0 timed out waiting for rank 2 (a test)", -ECANCELED);
	CHECK_STR(out[1], want);
	CHECK_STR(out[2], want);
}

/*
 * A step that timed out on a rank: every later step says so at once, not
 * after the full timeout on the same rank again (check's agreement after
 * each check waited it out once more: 3 s in t0860).
 */
static void silent_rank(struct pn_boot_cfg *cfg, int round, int fd)
{
	struct pn_boot *b = NULL;
	char line[T_RANKS_LINE], why[T_RANKS_LINE / 2] = "";
	int me = cfg->rank, r1, r2 = 0, n;
	double t;

	(void)round;
	if (pn_boot_init(&b, cfg)) {
		n = snprintf(line, sizeof(line), "%d init failed\n", me);
		n = (int)write(fd, line, (size_t)n);
		return;
	}
	if (me == 2)
		usleep(2500000); /* stopped, past rank 0's timeout */
	r1 = pn_boot_barrier(b);
	snprintf(why, sizeof(why), "%s", pn_errmsg(r1));
	t = pn_now();
	if (me == 0)
		r2 = pn_boot_agree_err(b, 0, 1, NULL);
	n = snprintf(line, sizeof(line), "%d %d %d %d|%s|%s\n", me, r1, r2,
		     pn_now() - t < 0.5, why, me == 0 ? pn_errmsg(r2) : "");
	n = (int)write(fd, line, (size_t)n);
	pn_boot_free(b);
}

TEST(failed_steps)
{
	char out[3][T_RANKS_LINE], want[T_RANKS_LINE];
	const char *a, *b;

	t_ranks_timeout = 1;
	t_ranks_run(3, silent_rank, 0, out);
	t_ranks_timeout = 10;
	snprintf(want, sizeof(want), "%d %d 1|timed out after 1 s waiting for rank 2 (host ",
		 -ETIMEDOUT, -ETIMEDOUT);
	CHECK(!strncmp(out[0], want, strlen(want)) && strstr(out[0], "in barrier: it did not answer"));
	/* the second step says the first's words */
	a = strchr(out[0], '|');
	b = a ? strchr(a + 1, '|') : NULL;
	CHECK(b && strlen(b + 1) == (size_t)(b - a - 1) && !strncmp(a + 1, b + 1, (size_t)(b - a - 1)));
	snprintf(want, sizeof(want), "%d 0 1|timed out after 1 s waiting for rank 2 (host ",
		 -ECANCELED);
	CHECK(!strncmp(out[1], want, strlen(want)));
}

int main(void)
{
	RUN(launcher_env);
	RUN(launcher_env_refused);
	RUN(explicit_ranks);
	RUN(hello_check);
	RUN(frame_layout);
	RUN(poll_reset);
	RUN(hostlist);
	RUN(rdv_ports);
	RUN(rdv_launcher);
	RUN(secret_sources);
	RUN(cookie_per_job);
	RUN(sha256_vectors);
	RUN(collapse);
	RUN(poll_ms);
	RUN(run_ranks);
	RUN(lost_steps);
	RUN(failed_steps);
	return unit_done();
}
