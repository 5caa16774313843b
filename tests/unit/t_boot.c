/* SPDX-License-Identifier: MIT */
/*
 * Bootstrap pieces that need no peers: the launcher environment (every
 * variable set must be a number in range), the rendezvous hello check,
 * collapsing the ranks' error lines, poll timeouts that cannot overflow.
 */
#define _GNU_SOURCE
#include "unit.h"

#include "engine/boot.h"
#include "base/log.h"
#include "base/util.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>

static const char *const launcher_vars[] = {
	"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
	"OMPI_COMM_WORLD_LOCAL_SIZE", "OMPI_MCA_ess_base_jobid", "PMIX_NAMESPACE", "SLURM_PROCID",
	"SLURM_NTASKS", "SLURM_LOCALID", "SLURM_NNODES", "SLURM_JOB_ID", "PMI_RANK", "PMI_SIZE",
	"MPI_LOCALRANKID", "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "PENNY_ROOT",
	"MASTER_ADDR", "MASTER_PORT", "PENNY_COOKIE", "TORCHELASTIC_RUN_ID",
};

/* pn_boot_cfg_from_env with only "NAME=VALUE" pairs set; its return */
static int from_env(struct pn_boot_cfg *cfg, const char *const *kv)
{
	size_t i;

	for (i = 0; i < PN_ARRAY_SIZE(launcher_vars); i++)
		unsetenv(launcher_vars[i]);
	for (; kv && *kv; kv++) {
		char name[64];
		const char *eq = strchr(*kv, '=');

		snprintf(name, sizeof(name), "%.*s", (int)(eq - *kv), *kv);
		setenv(name, eq + 1, 1);
	}
	pn_boot_cfg_init(cfg);
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
					     "SLURM_NNODES=1", NULL }), 0);
	CHECK(!strcmp(c.launcher, "srun") && c.rank == 1 && c.single_node);
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
		(const char *[]){ "SLURM_PROCID=1", "SLURM_NTASKS=2", "SLURM_NNODES=two", NULL },
		(const char *[]){ "SLURM_PROCID=1", "SLURM_NTASKS=2", "SLURM_LOCALID=9", NULL },
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
	/* --root without --rank: refused, not ignored */
	pn_boot_cfg_init(&c);
	c.root = "127.0.0.1:5000";
	CHECK_EQ_INT(pn_boot_cfg_from_env(&c), -EINVAL);
	CHECK(strstr(pn_errmsg(-EINVAL), "needs --rank") != NULL);
	/* ... but with a launcher it is the rendezvous address */
	from_env(&c, (const char *[]){ "PMI_RANK=1", "PMI_SIZE=2", NULL });
	pn_boot_cfg_init(&c);
	c.root = "10.0.0.1:5000";
	CHECK_EQ_INT(pn_boot_cfg_from_env(&c), 0);
	CHECK(c.rank == 1 && c.have_cookie);
	from_env(&c, NULL);
}

static const uint8_t cookie[16] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 };

struct hello_msg {
	struct pn_frame h;
	struct pn_wire_hello m;
	uint8_t w[PN_FRAME_HDR_LEN + sizeof(struct pn_wire_hello)];
};
#define WHOLE (PN_FRAME_HDR_LEN + sizeof(struct pn_wire_hello))

/* The bytes on the wire: the header encoded, the hello after it. */
static const void *wire(struct hello_msg *x)
{
	pn_frame_put(x->w, &x->h);
	memcpy(x->w + PN_FRAME_HDR_LEN, &x->m, sizeof(x->m));
	return x->w;
}

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
		CHECK_EQ_INT(pn_wire_hello_check(wire(&x), k, cookie, 4, &out), -EAGAIN);
	CHECK_EQ_INT(pn_wire_hello_check(wire(&x), WHOLE, cookie, 4, &out), 0);
	CHECK(out.rank == 2 && out.pid == 77 && !strcmp(out.host, "a"));
	/* strangers: dropped */
	CHECK_EQ_INT(pn_wire_hello_check("GET /", 5, cookie, 4, &out), -EPROTO);
	CHECK_EQ_INT(pn_wire_hello_check("P", 1, cookie, 4, &out), -EPROTO);
	x.h.cookie[3] ^= 1;
	CHECK_EQ_INT(pn_wire_hello_check(wire(&x), PN_FRAME_HDR_LEN, cookie, 4, &out), -EPROTO);
	hello_msg(&x, 2, 4);
	x.h.len = 1ull << 40;
	CHECK_EQ_INT(pn_wire_hello_check(wire(&x), PN_FRAME_HDR_LEN, cookie, 4, &out), -EPROTO);
	hello_msg(&x, 2, 4);
	x.h.type = PN_MSG_ABORT;
	CHECK_EQ_INT(pn_wire_hello_check(wire(&x), WHOLE, cookie, 4, &out), -EPROTO);
	hello_msg(&x, 2, 4);
	x.h.src = 1;
	CHECK_EQ_INT(pn_wire_hello_check(wire(&x), WHOLE, cookie, 4, &out), -EPROTO);
	/* the job's cookie but not of this job: the job fails */
	hello_msg(&x, 2, 8);
	CHECK_EQ_INT(pn_wire_hello_check(wire(&x), WHOLE, cookie, 4, &out), -EINVAL);
	CHECK(strstr(pn_errmsg(-EINVAL), "job of 8 ranks") != NULL);
	hello_msg(&x, 0, 4);
	CHECK_EQ_INT(pn_wire_hello_check(wire(&x), WHOLE, cookie, 4, &out), -EINVAL);
	hello_msg(&x, 4, 4);
	CHECK_EQ_INT(pn_wire_hello_check(wire(&x), WHOLE, cookie, 4, &out), -EINVAL);
	/* what goes to a terminal is printable and terminated */
	hello_msg(&x, 1, 4);
	memset(x.m.host, '\033', sizeof(x.m.host));
	CHECK_EQ_INT(pn_wire_hello_check(wire(&x), WHOLE, cookie, 4, &out), 0);
	CHECK(strlen(out.host) == sizeof(out.host) - 1 && !strchr(out.host, '\033'));
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

int main(void)
{
	RUN(launcher_env);
	RUN(launcher_env_refused);
	RUN(explicit_ranks);
	RUN(hello_check);
	RUN(collapse);
	RUN(poll_ms);
	return unit_done();
}
