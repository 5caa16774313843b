/* SPDX-License-Identifier: MIT */
/*
 * The other collectives over real ranks (self-launched, tests/unit/t_ranks.h):
 * 2, 3, 4 and 5 ranks over shm and over tcp, and two emulated nodes
 * (PENNY_NODE_ID) of two ranks.  Each job runs every collective x algorithm
 * (auto too) several times with a type, op, odd count, root, in or out of
 * place, registered buffers or not drawn from a seeded generator (the seed
 * is printed; T_COLLS_SEED=N replays one), checks every rank's result
 * exactly (testdata.h), checks that reducescatter and reduce equal the ring
 * allreduce's shard bit for bit on data whose sums depend on the order, runs
 * point-to-point exchanges, and checks that a dead and a stopped rank are
 * named by every other rank within the timeout.
 */
#define _GNU_SOURCE
#include "unit.h"
#include "t_ranks.h"

#include "base/log.h"
#include "base/util.h"
#include "engine/collrun.h"
#include "engine/comm.h"
#include "engine/reduce.h"
#include "engine/testdata.h"

#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAXCOUNT 70001	/* several pieces of the largest step for 4-byte types */

/* What a round runs: ranks, transport, emulated nodes, a fault. */
struct round {
	int np;
	const char *transport;	/* NULL: probe */
	int nodes;		/* emulated nodes (PENNY_NODE_ID) */
	int fault;		/* 1: the last rank exits, 2: it stops (SIGSTOP) */
	int per_algo;		/* configurations of each collective x algorithm */
};

static const struct round rounds[] = {
	{ 2, "shm", 1, 0, 2 }, { 3, "shm", 1, 0, 2 }, { 4, "shm", 1, 0, 2 }, { 5, "shm", 1, 0, 2 },
	{ 2, "tcp", 1, 0, 1 }, { 3, "tcp", 1, 0, 1 }, { 4, "tcp", 1, 0, 1 }, { 5, "tcp", 1, 0, 1 },
	{ 4, NULL, 2, 0, 1 },
	{ 3, "shm", 1, 1, 0 }, { 3, "tcp", 1, 1, 0 }, { 4, NULL, 2, 1, 0 }, { 3, "shm", 1, 2, 0 },
};

/* The communicator's timeout in the fault rounds (seconds). */
#define FAULT_TIMEOUT 1.5

static unsigned base_seed;

struct job {
	struct pn_boot *b;
	struct pn_comm *c;
	struct pn_coll co;
	struct pn_reg *sreg, *rreg;
	char *tmp;
	size_t cap;		/* bytes of each registered buffer */
};

static int job_open(struct job *j, struct pn_boot_cfg *cfg, const struct round *rd)
{
	struct pn_comm_cfg cc = { .transport = rd->transport, .nchannels = 1 };
	int ret;

	static char id[16];

	memset(j, 0, sizeof(*j));
	ret = pn_boot_cfg_from_env(cfg);
	/* PENNY_NODE_ID as cmd/ hands it down (the engine reads no knob) */
	if (rd->nodes > 1) {
		snprintf(id, sizeof(id), "n%d", cfg->rank * rd->nodes / rd->np);
		cfg->knobs.node_id = id;
	}
	if (!ret)
		ret = pn_boot_init(&j->b, cfg);
	if (!ret)
		ret = pn_comm_init(&j->c, j->b, &cc);
	if (!ret && rd->fault)
		j->c->timeout = FAULT_TIMEOUT;
	if (!ret)
		ret = pn_coll_init(&j->co, j->c, NULL);
	j->cap = (size_t)MAXCOUNT * 8 * (size_t)rd->np + 64;
	if (!ret)
		ret = pn_nodeseg_alloc(j->c, j->cap, &j->sreg);
	if (!ret)
		ret = pn_nodeseg_alloc(j->c, j->cap, &j->rreg);
	j->tmp = malloc(j->cap);
	return ret ? ret : j->tmp ? 0 : -ENOMEM;
}

/* A job ends together: a rank that closes its connections early fails the
 * others' waits (tcp), as it would in any tool. */
static void job_close(struct job *j, int barrier)
{
	if (j->c && barrier)
		pn_comm_barrier(j->c);
	if (j->c) {
		pn_nodeseg_reg_free(j->c, j->sreg);
		pn_nodeseg_reg_free(j->c, j->rreg);
	}
	if (j->co.comm)
		pn_coll_release(&j->co);
	pn_comm_free(j->c);
	pn_boot_free(j->b);
	free(j->tmp);
}

struct conf {
	enum pn_coll_kind k;
	enum pn_calgo a;
	enum pn_dtype t;
	enum pn_redop op;
	size_t count;
	int inplace, root, reg;
};

/* The i-th configuration of a round: every collective x algorithm (and auto),
 * the rest drawn from the seed (the same on every rank). */
static int conf_of(int i, const struct round *rd, unsigned *rng, struct conf *f)
{
	static const size_t counts[] = { 1, 3, 17, 127, 1001, 4099 };
	int k, a, idx = i / rd->per_algo, np = rd->np;

	for (k = 1; k < PN_NCOLLS; k++)
		for (a = -1; a < PN_NCALGOS; a++) {
			if (a >= 0 && !pn_calgo_valid((enum pn_coll_kind)k, (enum pn_calgo)a))
				continue;
			if (idx--)
				continue;
			f->k = (enum pn_coll_kind)k;
			f->a = (enum pn_calgo)a;
			f->t = (enum pn_dtype)(rand_r(rng) % PN_NDTYPES);
			f->op = (enum pn_redop)(rand_r(rng) % PN_NREDOPS);
			f->count = rand_r(rng) % 8 == 0 ? MAXCOUNT : counts[rand_r(rng) % 6];
			/* the large count in 8-byte types only for a pipeline of pieces */
			if (f->count == MAXCOUNT && pn_dtype_size(f->t) < 4)
				f->t = PN_FLOAT;
			f->inplace = rand_r(rng) % 2;
			f->root = (int)(rand_r(rng) % (unsigned)np);
			f->reg = rand_r(rng) % 4 != 0;
			return 1;
		}
	return 0;
}

/* Run one configuration and count the wrong elements of this rank's result. */
static int run_conf(struct job *j, const struct conf *f, uint64_t seed, size_t *wrong)
{
	int n = j->c->nranks, r = j->c->rank, ret;
	size_t es = pn_dtype_size(f->t);
	size_t sc = pn_coll_send_count(f->k, f->count, n), rc = pn_coll_recv_count(f->k, f->count, n);
	struct pn_testdata_coll d = { .kind = f->k, .dtype = f->t, .op = f->op, .rank = r,
				      .nranks = n, .root = f->root, .count = f->count,
				      .inplace = f->inplace, .seed = seed };
	struct pn_coll_args a = { .kind = f->k, .count = f->count, .dtype = f->t, .op = f->op,
				  .root = f->root, .algo = f->a };
	char *sbuf = j->sreg->ptr, *rbuf = j->rreg->ptr;

	if (f->inplace) {
		sbuf = rbuf + pn_coll_inplace_send_off(f->k, f->count, r) * es;
		rbuf += pn_coll_inplace_recv_off(f->k, f->count, r) * es;
		pn_testdata_poison(j->rreg->ptr, PN_MAX(sc, rc) * es);
	} else {
		pn_testdata_poison(rbuf, rc * es);
	}
	pn_testdata_coll_fill(&d, sbuf);
	a.sendbuf = sbuf;
	a.recvbuf = rbuf;
	if (f->reg) {
		a.sreg = f->inplace ? j->rreg : j->sreg;
		a.rreg = j->rreg;
	}
	ret = pn_coll_run(&j->co, &a);
	if (!ret)
		*wrong += pn_testdata_coll_check(&d, rbuf);
	return ret;
}

/* Values whose sums depend on the order: any mantissa, exponents -8..8. */
static void random_values(void *buf, size_t count, enum pn_dtype t, unsigned seed)
{
	size_t i;

	for (i = 0; i < count; i++) {
		float f = ((float)rand_r(&seed) / (float)RAND_MAX - 0.5f) *
			  (float)(1 << (rand_r(&seed) % 16)) / 256.0f;

		if (t == PN_HALF)
			((uint16_t *)buf)[i] = pn_float_to_half(f);
		else if (t == PN_BFLOAT16)
			((uint16_t *)buf)[i] = pn_float_to_bf16(f);
		else if (t == PN_DOUBLE)
			((double *)buf)[i] = (double)f * (1.0 + 1e-9 * (double)i);
		else
			((float *)buf)[i] = f;
	}
}

/*
 * Reducescatter (every algorithm) equals the ring allreduce's shard of this
 * rank, and reduce to a root the allreduce's shard of the root, bit for
 * bit, on data where the order of the sums shows: the fixed order.
 */
static int same_as_allreduce(struct job *j, unsigned seed, size_t *differ)
{
	static const enum pn_dtype types[] = { PN_HALF, PN_BFLOAT16, PN_FLOAT, PN_DOUBLE };
	int n = j->c->nranks, r = j->c->rank, ti, a, reg, ret = 0;
	size_t rc = 48, es;
	char *in = j->sreg->ptr, *out = j->rreg->ptr, *ar = j->tmp;

	for (ti = 0; !ret && ti < 4; ti++) {
		enum pn_dtype t = types[ti];
		enum pn_redop op = ti == 3 ? PN_AVG : PN_SUM;
		int root = (int)((seed + (unsigned)ti) % (unsigned)n);

		es = pn_dtype_size(t);
		random_values(in, rc * (size_t)n, t, seed * 31 + (unsigned)r * 7 + (unsigned)ti);
		ret = pn_allreduce(&j->co, in, ar, rc * (size_t)n, t, op, PN_ALGO_RING, NULL, NULL);
		for (a = 0; !ret && a < PN_NCALGOS; a++)
			for (reg = 0; !ret && reg < 2; reg++) {
				struct pn_coll_args x = { .kind = PN_COLL_REDUCE_SCATTER, .sendbuf = in,
							  .recvbuf = out, .count = rc, .dtype = t, .op = op,
							  .algo = (enum pn_calgo)a };

				if (!pn_calgo_valid(x.kind, x.algo))
					continue;
				if (reg) {
					x.sreg = j->sreg;
					x.rreg = j->rreg;
				}
				ret = pn_coll_run(&j->co, &x);
				if (!ret && memcmp(out, ar + (size_t)r * rc * es, rc * es))
					(*differ)++;
				x.kind = PN_COLL_REDUCE;
				x.count = rc * (size_t)n;
				x.root = root;
				if (!ret && pn_calgo_valid(x.kind, x.algo))
					ret = pn_coll_run(&j->co, &x);
				if (!ret && r == root &&
				    memcmp(out + (size_t)root * rc * es, ar + (size_t)root * rc * es, rc * es))
					(*differ)++;
			}
	}
	return ret;
}

/* Point to point: a ring of pairs of different lengths each way, then a
 * reversed ring where only every other rank sends. */
static int point_to_point(struct job *j, unsigned seed, size_t *wrong)
{
	int n = j->c->nranks, r = j->c->rank, ret;
	size_t mine = 1000 + (size_t)r * 77, theirs = 1000 + (size_t)((r + n - 1) % n) * 77;
	char *in = j->sreg->ptr, *out = j->rreg->ptr;

	pn_testdata_fill(in, mine, PN_INT32, PN_SUM, r, seed);
	pn_testdata_poison(out, theirs * 4);
	ret = pn_sendrecv(&j->co, in, mine, (r + 1) % n, out, theirs, (r + n - 1) % n, PN_INT32);
	if (!ret)
		*wrong += pn_testdata_check_fill_at(out, 0, theirs, PN_INT32, PN_SUM, (r + n - 1) % n,
						    seed);
	if (ret || n < 2)
		return ret;
	/* even ranks send 300 doubles to r - 1; odd ranks only receive */
	pn_testdata_fill(in, 300, PN_DOUBLE, PN_SUM, r, seed);
	pn_testdata_poison(out, 300 * 8);
	ret = pn_sendrecv(&j->co, in, 300, r % 2 == 0 && n > 1 ? (r + n - 1) % n : -1, out, 300,
			  (r + 1) % n % 2 == 0 && (r + 1) % n != r ? (r + 1) % n : -1, PN_DOUBLE);
	if (!ret && (r + 1) % n % 2 == 0)
		*wrong += pn_testdata_check_fill_at(out, 0, 300, PN_DOUBLE, PN_SUM, (r + 1) % n, seed);
	return ret;
}

static void say(int fd, const char *line)
{
	if (write(fd, line, strlen(line)) < 0)
		_exit(1);
}

/* A round's fault: the last rank exits or stops; the others must name it. */
static void fault_child(struct job *j, const struct round *rd, int fd)
{
	struct pn_coll_args a = { .kind = PN_COLL_ALLGATHER, .count = 1000, .dtype = PN_FLOAT,
				  .algo = PN_CALGO_RING };
	char line[T_RANKS_LINE];
	double t0;
	int ret, r = j->c->rank;

	if (r == rd->np - 1) {
		if (rd->fault == 1)
			_exit(3);
		raise(SIGSTOP);
		_exit(3);
	}
	a.sendbuf = j->sreg->ptr;
	a.recvbuf = j->rreg->ptr;
	t0 = pn_now();
	ret = pn_coll_run(&j->co, &a);
	snprintf(line, sizeof(line), "%d fault %d %.1f %s\n", r, ret, pn_now() - t0,
		 ret ? pn_errmsg(ret) : "-");
	say(fd, line);
	job_close(j, 0);
	_exit(1);
}

static void child(struct pn_boot_cfg *cfg, int round, int fd)
{
	const struct round *rd = &rounds[round];
	unsigned rng = base_seed + (unsigned)round * 1000;
	size_t wrong = 0, differ = 0;
	char line[T_RANKS_LINE];
	struct conf f;
	struct job j;
	int i, ret, nconf = 0;

	ret = job_open(&j, cfg, rd);
	if (ret)
		snprintf(line, sizeof(line), "%d fail setting up: %s\n", cfg->rank, pn_errmsg(ret));
	if (!ret && rd->fault)
		fault_child(&j, rd, fd);
	for (i = 0; !ret && conf_of(i, rd, &rng, &f); i++, nconf++) {
		ret = run_conf(&j, &f, rng, &wrong);
		if (ret)
			snprintf(line, sizeof(line), "%d fail %s %s %s %s count %zu %s root %d reg %d: %s\n",
				 cfg->rank, pn_coll_name(f.k), pn_calgo_name(f.a), pn_dtype_name(f.t),
				 pn_redop_name(f.op), f.count, f.inplace ? "in place" : "out of place",
				 f.root, f.reg, pn_errmsg(ret));
	}
	if (!ret) {
		ret = same_as_allreduce(&j, rng, &differ);
		if (!ret)
			ret = point_to_point(&j, rng, &wrong);
		snprintf(line, sizeof(line), "%d %s %d confs, %zu wrong, %zu differ, %d nodes%s%s\n",
			 cfg->rank, ret ? "fail" : "ok", nconf, wrong, differ, j.c ? j.c->nnodes : 0,
			 ret ? ": " : "", ret ? pn_errmsg(ret) : "");
	}
	say(fd, line);
	job_close(&j, !ret);
	_exit(ret ? 1 : 0);
}

static void check_round(int round)
{
	const struct round *rd = &rounds[round];
	char out[8][T_RANKS_LINE], want[64];
	int r;

	t_ranks_run(rd->np, child, round, out);
	snprintf(want, sizeof(want), " confs, 0 wrong, 0 differ, %d nodes", rd->nodes);
	for (r = 0; r < rd->np; r++) {
		if (!strncmp(out[r], "ok ", 3) && strstr(out[r], want))
			continue;
		CHECK(!"a rank failed");
		printf("#   %d ranks over %s, %d node(s), seed %u: rank %d: %s\n", rd->np,
		       rd->transport ? rd->transport : "probed transports", rd->nodes, base_seed, r,
		       out[r][0] ? out[r] : "(no line)");
	}
}

/* Every rank but the faulty one fails within the timeout naming it. */
static void check_fault_round(int round)
{
	const struct round *rd = &rounds[round];
	char out[8][T_RANKS_LINE], name[32];
	double t0 = pn_now();
	int r;

	t_ranks_run(rd->np, child, round, out);
	snprintf(name, sizeof(name), "rank %d", rd->np - 1);
	for (r = 0; r < rd->np - 1; r++) {
		double secs = 99;
		int ret = 0;

		if (sscanf(out[r], "fault %d %lf", &ret, &secs) == 2 && ret < 0 &&
		    secs < FAULT_TIMEOUT + 3 &&
		    strstr(out[r], name))
			continue;
		CHECK(!"a rank did not name the faulty one in time");
		printf("#   %d ranks over %s, rank %d %s: rank %d: %s\n", rd->np,
		       rd->transport ? rd->transport : "probed transports", rd->np - 1,
		       rd->fault == 1 ? "exited" : "stopped", r, out[r][0] ? out[r] : "(no line)");
	}
	CHECK(pn_now() - t0 < 20);
}

TEST(two_to_five_ranks_over_shm)
{
	for (int i = 0; i < 4; i++)
		check_round(i);
}

TEST(two_to_five_ranks_over_tcp)
{
	for (int i = 4; i < 8; i++)
		check_round(i);
}

TEST(two_emulated_nodes)
{
	check_round(8);
}

TEST(a_dead_or_stopped_rank_is_named)
{
	for (int i = 9; i < (int)PN_ARRAY_SIZE(rounds); i++)
		check_fault_round(i);
}

int main(void)
{
	const char *s = getenv("T_COLLS_SEED");

	base_seed = s ? (unsigned)strtoul(s, NULL, 10) : 20261128u;
	printf("# seed %u (T_COLLS_SEED)\n", base_seed);
	RUN(two_to_five_ranks_over_shm);
	RUN(two_to_five_ranks_over_tcp);
	RUN(two_emulated_nodes);
	RUN(a_dead_or_stopped_rank_is_named);
	return unit_done();
}
