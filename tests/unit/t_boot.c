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
#include "base/log.h"
#include "base/sha256.h"
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
	"MASTER_ADDR", "MASTER_PORT", "PENNY_COOKIE", "PENNY_COOKIE_FILE", "TORCHELASTIC_RUN_ID",
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
	CHECK(c.rank == 1);
	from_env(&c, NULL);
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
	x.h.cookie[3] ^= 1;
	CHECK_EQ_INT(HELLO_CHECK(wire(&x), PN_FRAME_HDR_LEN, &out), -EACCES);
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
	/* no launcher to tell */
	pn_boot_cfg_init(&cfg);
	CHECK(pn_boot_tell(&cfg, "x\n", 2) < 0);
}

int main(void)
{
	RUN(launcher_env);
	RUN(launcher_env_refused);
	RUN(explicit_ranks);
	RUN(hello_check);
	RUN(sha256_vectors);
	RUN(collapse);
	RUN(poll_ms);
	RUN(run_ranks);
	return unit_done();
}
