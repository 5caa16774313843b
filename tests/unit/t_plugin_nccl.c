/* SPDX-License-Identifier: MIT */
/*
 * The nccl plugin with NCCL and the CUDA driver behind fakes: the unique id
 * goes from rank 0 to every rank through the host's allgather, a rank that
 * fails early stops the others before NCCL, penny's types and ops map to
 * NCCL's (min and max are swapped there), NCCL's errors carry its message,
 * NVLink SHARP stays off, and a missing NCCL is one line naming the tries.
 */
#define _GNU_SOURCE
#include "unit.h"

#include "../../plugins/common/cudrv.c"
#include "../../plugins/common/gpu.c"
#include "../../plugins/nccl/nccl.c"

#include "t_plugin_fakecu.h"

#include <errno.h>
#include <stdarg.h>

struct fake_nccl_rank {
	int init_calls, init_nranks, init_rank;
	ncclUniqueId id;
	int ar_calls, ag_calls;
	const void *ar_send;
	void *ar_recv;
	size_t ar_count;
	int ar_dtype, ar_op;
	CUstream ar_stream;
	ncclComm_t ar_comm, comms[2];
	int fail_allreduce;
	int async_error;
	int destroyed;
	int win_reg, win_dereg, mem_alloc, mem_free;
	ncclComm_t win_comm;
	int win_flags;
};
static struct fake_nccl_rank nr[FAKE_MAX_RANKS];
static _Thread_local int my_rank;
static int getid_calls;

static ncclResult_t n_version(int *v)
{
	*v = 22809;
	return 0;
}
static ncclResult_t n_getid(ncclUniqueId *id)
{
	__atomic_add_fetch(&getid_calls, 1, __ATOMIC_SEQ_CST);
	memset(id, 0, sizeof(*id));
	snprintf(id->internal, sizeof(id->internal), "unique-id-from-rank-%d", my_rank);
	return 0;
}
static ncclResult_t n_init(ncclComm_t *c, int n, ncclUniqueId id, int rank)
{
	struct fake_nccl_rank *f = &nr[my_rank];

	f->init_calls++;
	f->init_nranks = n;
	f->init_rank = rank;
	f->id = id;
	*c = (ncclComm_t)(uintptr_t)(0x7000 + 0x100 * f->init_calls + rank);
	if (f->init_calls <= 2)
		f->comms[f->init_calls - 1] = *c;
	return 0;
}
static ncclResult_t n_finalize(ncclComm_t c)
{
	(void)c;
	return 0;
}
static ncclResult_t n_destroy(ncclComm_t c)
{
	(void)c;
	nr[my_rank].destroyed++;
	return 0;
}
static ncclResult_t n_async(ncclComm_t c, ncclResult_t *e)
{
	(void)c;
	*e = nr[my_rank].async_error;
	return 0;
}
static ncclResult_t n_allreduce(const void *s, void *r, size_t count, int dt, int op, ncclComm_t c,
				CUstream st)
{
	struct fake_nccl_rank *f = &nr[my_rank];

	f->ar_comm = c;
	f->ar_calls++;
	f->ar_send = s;
	f->ar_recv = r;
	f->ar_count = count;
	f->ar_dtype = dt;
	f->ar_op = op;
	f->ar_stream = st;
	return f->fail_allreduce;
}
static ncclResult_t n_allgather(const void *s, void *r, size_t count, int dt, ncclComm_t c,
				CUstream st)
{
	struct fake_nccl_rank *f = &nr[my_rank];

	(void)c;
	f->ag_calls++;
	f->ar_send = s;
	f->ar_recv = r;
	f->ar_count = count;
	f->ar_dtype = dt;
	f->ar_stream = st;
	return 0;
}
static const char *n_errstr(ncclResult_t r)
{
	return r == 3 ? "internal error - please report this issue to the NCCL developers" : "error";
}
static const char *n_last(ncclComm_t c)
{
	(void)c;
	return "fake NCCL says why";
}

/* NCCL >= 2.27: symmetric memory */
static ncclResult_t n_memalloc(void **p, size_t size)
{
	nr[my_rank].mem_alloc++;
	*p = malloc(size);
	return *p ? 0 : 1;
}
static ncclResult_t n_memfree(void *p)
{
	nr[my_rank].mem_free++;
	free(p);
	return 0;
}
static ncclResult_t n_winreg(ncclComm_t c, void *buf, size_t size, ncclWindow_t *w, int flags)
{
	(void)size;
	nr[my_rank].win_reg++;
	nr[my_rank].win_comm = c;
	nr[my_rank].win_flags = flags;
	*w = (ncclWindow_t)buf;
	return 0;
}
static ncclResult_t n_windereg(ncclComm_t c, ncclWindow_t w)
{
	(void)c;
	(void)w;
	nr[my_rank].win_dereg++;
	return 0;
}

static const struct pn_nccl_api fake_nccl = {
	.GetVersion = n_version,
	.GetUniqueId = n_getid,
	.CommInitRank = n_init,
	.CommFinalize = n_finalize,
	.CommDestroy = n_destroy,
	.CommGetAsyncError = n_async,
	.AllReduce = n_allreduce,
	.AllGather = n_allgather,
	.GetErrorString = n_errstr,
	.GetLastError = n_last,
	.path = "fake",
};

static void *be[FAKE_MAX_RANKS];
static int rets[FAKE_MAX_RANKS];
static char msgs[FAKE_MAX_RANKS][512];

static void do_init(struct fake_world *w, int r)
{
	my_rank = r;
	be[r] = NULL;
	rets[r] = pn_nccl_init(NULL, &w->host[r], r, &be[r]);
	snprintf(msgs[r], sizeof(msgs[r]), "%s", pn_plugin_errmsg());
}

static void do_fini(struct fake_world *w, int r)
{
	(void)w;
	my_rank = r;
	pn_nccl_fini(be[r]);
	be[r] = NULL;
}

TEST(unique_id_of_rank_0_reaches_every_rank)
{
	struct fake_world w;

	memset(nr, 0, sizeof(nr));
	getid_calls = 0;
	setenv("NCCL_NVLS_ENABLE", "1", 1);
	fake_world_init(&w, 3);
	fake_run(&w, do_init);
	for (int r = 0; r < 3; r++) {
		CHECK_EQ_INT(rets[r], 0);
		CHECK_EQ_INT(nr[r].init_calls, 1);
		CHECK_EQ_INT(nr[r].init_nranks, 3);
		CHECK_EQ_INT(nr[r].init_rank, r);
		CHECK_STR(nr[r].id.internal, "unique-id-from-rank-0");
	}
	CHECK_EQ_INT(getid_calls, 1);
	CHECK_STR(getenv("NCCL_NVLS_ENABLE"), "0");
	CHECK_STR(getenv("NVSHMEM_DISABLE_NVLS"), "1");
	CHECK(be[0] && strstr(pn_nccl_describe(be[0]), "NCCL 2.28.9") != NULL);
	fake_run(&w, do_fini);
	for (int r = 0; r < 3; r++)
		CHECK_EQ_INT(nr[r].destroyed, 1);
	fake_world_free(&w);
}

static void do_init_rank1_fails(struct fake_world *w, int r)
{
	w->rank[r].fail_alloc = r == 1; /* pn_gpu_open's first cuMemAlloc */
	do_init(w, r);
	w->rank[r].fail_alloc = 0;
}

TEST(a_rank_that_fails_early_stops_every_rank_before_nccl)
{
	struct fake_world w;

	memset(nr, 0, sizeof(nr));
	fake_world_init(&w, 3);
	fake_run(&w, do_init_rank1_fails);
	for (int r = 0; r < 3; r++) {
		CHECK(rets[r] < 0);
		CHECK(be[r] == NULL);
		CHECK_EQ_INT(nr[r].init_calls, 0);
	}
	CHECK(strstr(msgs[1], "cuMemAlloc: out of memory") != NULL);
	CHECK(strstr(msgs[0], "rank 1 failed: cuMemAlloc: out of memory") != NULL);
	fake_world_free(&w);
}

TEST(types_and_ops_map_to_nccls)
{
	CHECK_EQ_INT(pn_nccl_dtype(PENNY_INT8), 0);
	CHECK_EQ_INT(pn_nccl_dtype(PENNY_UINT64), 5);
	CHECK_EQ_INT(pn_nccl_dtype(PENNY_HALF), 6);
	CHECK_EQ_INT(pn_nccl_dtype(PENNY_FLOAT), 7);
	CHECK_EQ_INT(pn_nccl_dtype(PENNY_DOUBLE), 8);
	CHECK_EQ_INT(pn_nccl_dtype(PENNY_BFLOAT16), 9);
	CHECK_EQ_INT(pn_nccl_dtype(42), -1);
	CHECK_EQ_INT(pn_nccl_op(PENNY_SUM), 0);
	CHECK_EQ_INT(pn_nccl_op(PENNY_PROD), 1);
	CHECK_EQ_INT(pn_nccl_op(PENNY_MAX), 2);
	CHECK_EQ_INT(pn_nccl_op(PENNY_MIN), 3);
	CHECK_EQ_INT(pn_nccl_op(PENNY_AVG), 4);
	CHECK_EQ_INT(pn_nccl_op(-1), -1);
}

static void do_calls(struct fake_world *w, int r)
{
	struct pn_nccl *c;
	void *s = NULL, *d = NULL;
	struct penny_time_v1 t;

	my_rank = r;
	rets[r] = -1;
	if (!be[r])
		return;
	c = be[r];
	if (pn_nccl_alloc(be[r], 4096, PENNY_MEM_REGISTERED, &s) || pn_nccl_alloc(be[r], 4096, 0, &d))
		return;
	/* min is NCCL's 3 */
	if (pn_nccl_allreduce(be[r], s, d, 100, PENNY_BFLOAT16, PENNY_MIN, PENNY_ALGO_AUTO) ||
	    nr[r].ar_send != s || nr[r].ar_recv != d || nr[r].ar_count != 100 || nr[r].ar_dtype != 9 ||
	    nr[r].ar_op != 3 || nr[r].ar_stream != c->g.stream)
		return;
	/* only auto: NCCL picks its own algorithm */
	if (pn_nccl_allreduce(be[r], s, d, 100, PENNY_BFLOAT16, PENNY_SUM, PENNY_ALGO_RING) != -ENOTSUP)
		return;
	/* timed like the cuda plugin: warm-up, graph of 5, 2 replays + 1 */
	memset(&t, 0, sizeof(t));
	t.send = s;
	t.recv = d;
	t.count = 10;
	t.dtype = PENNY_FLOAT;
	t.warmup = 2;
	t.iters = 10;
	t.graph = 5;
	nr[r].ar_calls = 0;
	if (pn_gpu_be_time(be[r], &t) || nr[r].ar_calls != 7 || t.iters_run != 10 ||
	    w->rank[r].graph_launches != 3)
		return;
	/* time2: the same, and the caller's time per call; a short struct is refused */
	{
		struct penny_time_v2 t2;

		memset(&t2, 0, sizeof(t2));
		t2.size = PENNY_TIME_V2_MIN_SIZE - 8;
		t2.t = t;
		t2.host_usec = -1;
		if (pn_gpu_be_time2(be[r], &t2) != -EINVAL || t2.host_usec != -1)
			return;
		t2.size = sizeof(t2);
		t2.t.iters_run = 0;
		if (pn_gpu_be_time2(be[r], &t2) || t2.t.iters_run != 10 || !(t2.host_usec >= 0))
			return;
	}
	/* NCCL's errors carry its own words */
	nr[r].fail_allreduce = 3;
	if (pn_nccl_allreduce(be[r], s, d, 100, PENNY_FLOAT, PENNY_SUM, PENNY_ALGO_AUTO) != -EIO ||
	    !strstr(pn_plugin_errmsg(), "ncclAllReduce: internal error") ||
	    !strstr(pn_plugin_errmsg(), "fake NCCL says why"))
		return;
	nr[r].fail_allreduce = 0;
	nr[r].async_error = 6;
	if (pn_gpu_be_sync(be[r]) != -EIO)
		return;
	nr[r].async_error = 0;
	if (pn_gpu_be_sync(be[r]))
		return;
	/* all-gather: NCCL's, on the same stream, NCCL's type enum */
	if (pn_nccl_allgather(be[r], (char *)d + 8 * r, d, 4, PENNY_DOUBLE) || nr[r].ag_calls != 1 ||
	    nr[r].ar_send != (char *)d + 8 * r || nr[r].ar_recv != d || nr[r].ar_count != 4 ||
	    nr[r].ar_dtype != 8 || nr[r].ar_stream != c->g.stream)
		return;
	pn_nccl_free(be[r], s);
	pn_nccl_free(be[r], d);
	rets[r] = 0;
}

TEST(allreduce_runs_on_the_plugins_stream_with_nccls_enums)
{
	struct fake_world w;

	memset(nr, 0, sizeof(nr));
	fake_world_init(&w, 2);
	fake_run(&w, do_init);
	fake_run(&w, do_calls);
	CHECK_EQ_INT(rets[0], 0);
	CHECK_EQ_INT(rets[1], 0);
	fake_run(&w, do_fini);
	fake_world_free(&w);
}

/* ---- the other collectives: what reached NCCL, as one line per rank ---- */

static char calls[FAKE_MAX_RANKS][512];
static void *base_of[FAKE_MAX_RANKS];

static void logc(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void logc(const char *fmt, ...)
{
	char *l = calls[my_rank];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(l + strlen(l), sizeof(calls[0]) - strlen(l), fmt, ap);
	va_end(ap);
}
/* offsets from the rank's buffer, so that lines compare across runs */
#define OFF(p) ((long)((const char *)(p) - (const char *)base_of[my_rank]))
static ncclResult_t n_rs(const void *s, void *r, size_t n, int dt, int op, ncclComm_t c,
			 CUstream st)
{
	(void)c;
	logc("RS %ld %ld %zu %d %d %s;", OFF(s), OFF(r), n, dt, op, st ? "st" : "0");
	return 0;
}
static ncclResult_t n_bc(const void *s, void *r, size_t n, int dt, int root, ncclComm_t c,
			 CUstream st)
{
	(void)c;
	(void)st;
	logc("BC %ld %ld %zu %d %d;", OFF(s), OFF(r), n, dt, root);
	return 0;
}
static ncclResult_t n_red(const void *s, void *r, size_t n, int dt, int op, int root,
			  ncclComm_t c, CUstream st)
{
	(void)c;
	(void)st;
	logc("RD %ld %ld %zu %d %d %d;", OFF(s), OFF(r), n, dt, op, root);
	return 0;
}
static ncclResult_t n_send(const void *s, size_t n, int dt, int peer, ncclComm_t c, CUstream st)
{
	(void)c;
	(void)st;
	logc("S%d %ld %zu %d;", peer, OFF(s), n, dt);
	return 0;
}
static ncclResult_t n_recv(void *r, size_t n, int dt, int peer, ncclComm_t c, CUstream st)
{
	(void)c;
	(void)st;
	logc("R%d %ld %zu %d;", peer, OFF(r), n, dt);
	return 0;
}
static ncclResult_t n_gstart(void)
{
	logc("(");
	return 0;
}
static ncclResult_t n_gend(void)
{
	logc(")");
	return 0;
}

static struct pn_nccl_api fake_colls;

static void do_colls(struct fake_world *w, int r)
{
	struct pn_nccl *c = be[r];
	char *b;
	int ok;

	(void)w;
	my_rank = r;
	rets[r] = -1;
	calls[r][0] = 0;
	if (!c || pn_nccl_alloc(be[r], 4096, 0, &base_of[r]))
		return;
	b = base_of[r];
	/* NULL: the plugin's stream; the caller's otherwise */
	ok = !pn_nccl_reduce_scatter(be[r], b, b + 1024, 5, PENNY_FLOAT, PENNY_MIN, NULL) &&
	     !pn_nccl_reduce_scatter(be[r], b, b, 5, PENNY_INT8, PENNY_AVG, (void *)0x5) &&
	     !pn_nccl_broadcast(be[r], b, b + 8, 7, PENNY_DOUBLE, 2, NULL) &&
	     !pn_nccl_reduce(be[r], b, b + 8, 9, PENNY_BFLOAT16, PENNY_MAX, 1, NULL) &&
	     /* alltoall: block p of 3 int32 to and from every peer, in one group */
	     !pn_nccl_alltoall(be[r], b, b + 2048, 3, PENNY_INT32, NULL) &&
	     /* the ring of pairs: to the next rank, from the one before */
	     !pn_nccl_sendrecv(be[r], b, b + 512, 4, PENNY_HALF, NULL) &&
	     /* nothing to move: NCCL is not called */
	     !pn_nccl_alltoall(be[r], b, b, 0, PENNY_INT32, NULL);
	/* a root that is not a rank, a bad type: refused before NCCL */
	ok = ok && pn_nccl_broadcast(be[r], b, b, 1, PENNY_FLOAT, 3, NULL) == -EINVAL &&
	     strstr(pn_plugin_errmsg(), "root 3 is not a rank of 3") &&
	     pn_nccl_reduce(be[r], b, b, 1, 99, PENNY_SUM, 0, NULL) < 0;
	if (ok && !pn_nccl_free(be[r], base_of[r]))
		rets[r] = 0;
}

TEST(the_other_collectives_are_nccls_own_calls)
{
	struct fake_world w;
	char want[512];
	int r;

	memset(nr, 0, sizeof(nr));
	fake_colls = fake_nccl;
	fake_colls.ReduceScatter = n_rs;
	fake_colls.Broadcast = n_bc;
	fake_colls.Reduce = n_red;
	fake_colls.Send = n_send;
	fake_colls.Recv = n_recv;
	fake_colls.GroupStart = n_gstart;
	fake_colls.GroupEnd = n_gend;
	pn_nccl_set_api(&fake_colls);
	fake_world_init(&w, 3);
	fake_run(&w, do_init);
	fake_run(&w, do_colls);
	for (r = 0; r < 3; r++) {
		CHECK_EQ_INT(rets[r], 0);
		/* NCCL's enums: float 7, min 3, int8 0, avg 4, double 8, bfloat16 9, max 2,
		 * int32 2, half 6 */
		snprintf(want, sizeof(want),
			 "RS 0 1024 5 7 3 st;RS 0 0 5 0 4 st;BC 0 8 7 8 2;RD 0 8 9 9 2 1;"
			 "(S0 0 3 2;R0 2048 3 2;S1 12 3 2;R1 2060 3 2;S2 24 3 2;R2 2072 3 2;)"
			 "(S%d 0 4 6;R%d 512 4 6;)", (r + 1) % 3, (r + 2) % 3);
		CHECK_STR(calls[r], want);
	}
	fake_run(&w, do_fini);
	fake_world_free(&w);
	pn_nccl_set_api(&fake_nccl);
}

/* An NCCL without ncclSend: alltoall and sendrecv refused in one line, no group opened. */
static void do_no_send(struct fake_world *w, int r)
{
	char b[64] = "";

	(void)w;
	my_rank = r;
	calls[r][0] = 0;
	base_of[r] = b;
	rets[r] = pn_nccl_alltoall(be[r], b, b, 1, PENNY_FLOAT, NULL);
	snprintf(msgs[r], sizeof(msgs[r]), "%s", pn_plugin_errmsg());
	if (rets[r] == -ENOTSUP && pn_nccl_sendrecv(be[r], b, b, 1, PENNY_FLOAT, NULL) != -ENOTSUP)
		rets[r] = -1;
	if (rets[r] == -ENOTSUP && pn_nccl_reduce_scatter(be[r], b, b, 1, PENNY_FLOAT, PENNY_SUM,
							  NULL) != -ENOTSUP)
		rets[r] = -2;
}

TEST(a_missing_nccl_call_is_refused_in_one_line)
{
	struct fake_world w;
	int r;

	memset(nr, 0, sizeof(nr));
	fake_colls = fake_nccl;
	fake_colls.GroupStart = n_gstart;
	fake_colls.GroupEnd = n_gend;
	pn_nccl_set_api(&fake_colls);
	fake_world_init(&w, 2);
	fake_run(&w, do_init);
	fake_run(&w, do_no_send);
	for (r = 0; r < 2; r++) {
		CHECK_EQ_INT(rets[r], -ENOTSUP);
		CHECK_STR(msgs[r], "this NCCL has no ncclSend");
		CHECK_STR(calls[r], "");
	}
	fake_run(&w, do_fini);
	fake_world_free(&w);
	pn_nccl_set_api(&fake_nccl);
}

/*
 * ---- a fake NCCL that moves grouped ncclSend/ncclRecv data, as NCCL may ----
 * NCCL runs a group's sends and receives at once, in no set order: a
 * receive may land before a send of the same group has read its buffer.
 * Here the ranks' sends are read one rank at a time at ncclGroupEnd, rank
 * 0's first, each landing in its receiver's buffer at once: one legal
 * order, in which an in-place exchange reads blocks already overwritten.
 */
struct p2p_op {
	int send, peer, done;
	const void *s;
	void *r;
	size_t bytes;
};
static struct p2p_op p2p_q[FAKE_MAX_RANKS][2 * FAKE_MAX_RANKS];
static int p2p_n[FAKE_MAX_RANKS], p2p_nranks;
static const void *p2p_first_send[FAKE_MAX_RANKS];
static pthread_barrier_t p2p_bar;

static ncclResult_t p2p_post(int send, const void *s, void *r, size_t n, int dt, int peer)
{
	static const size_t es[] = { 1, 1, 4, 4, 8, 8, 2, 4, 8, 2 };
	int me_ = my_rank;

	if (p2p_n[me_] == 2 * FAKE_MAX_RANKS || dt < 0 || dt > 9)
		return 4;
	if (send && !p2p_n[me_])
		p2p_first_send[me_] = s;
	p2p_q[me_][p2p_n[me_]++] = (struct p2p_op){ send, peer, 0, s, r, n * es[dt] };
	return 0;
}
static ncclResult_t m_send(const void *s, size_t n, int dt, int peer, ncclComm_t c, CUstream st)
{
	(void)c;
	(void)st;
	return p2p_post(1, s, NULL, n, dt, peer);
}
static ncclResult_t m_recv(void *r, size_t n, int dt, int peer, ncclComm_t c, CUstream st)
{
	(void)c;
	(void)st;
	return p2p_post(0, NULL, r, n, dt, peer);
}
static ncclResult_t m_gstart(void)
{
	return 0;
}
static ncclResult_t m_gend(void)
{
	int me_ = my_rank, src, i, j, bad = 0;

	for (src = 0; src < p2p_nranks; src++) {
		pthread_barrier_wait(&p2p_bar);
		for (i = 0; src == me_ && i < p2p_n[me_]; i++) {
			struct p2p_op *o = &p2p_q[me_][i], *q = NULL;

			for (j = 0; o->send && j < p2p_n[o->peer] && !q; j++)
				if (!p2p_q[o->peer][j].send && p2p_q[o->peer][j].peer == me_ &&
				    !p2p_q[o->peer][j].done)
					q = &p2p_q[o->peer][j];
			if (o->send && (!q || q->bytes != o->bytes)) {
				bad = 1;
				continue;
			}
			if (q) {
				q->done = 1;
				memmove(q->r, o->s, o->bytes);
			}
		}
	}
	pthread_barrier_wait(&p2p_bar);
	p2p_n[me_] = 0;
	return bad ? 5 : 0;
}

static struct pn_nccl_api fake_p2p;

/* rank r's int32 element k of block p: r 1000 + p 10 + k */
static int32_t a2a_val(int r, int p, int k)
{
	return r * 1000 + p * 10 + k;
}

/* alltoall and sendrecv of rank r (of n) into d, from s (in place: s ==
 * d); every rank makes both calls, whatever the first gave (the fake's
 * ncclGroupEnd waits for every rank). */
static int p2p_right(int r, int n, int32_t *s, int32_t *d, void *stream)
{
	int p, k, cnt = 5, ok;

	for (p = 0; p < n; p++)
		for (k = 0; k < cnt; k++)
			s[p * cnt + k] = a2a_val(r, p, k);
	if (s != d)
		memset(d, 0, sizeof(int32_t) * (size_t)(n * cnt));
	ok = !pn_nccl_alltoall(be[r], s, d, (size_t)cnt, PENNY_INT32, stream);
	for (p = 0; p < n; p++)
		for (k = 0; k < cnt; k++)
			ok = ok && d[p * cnt + k] == a2a_val(p, r, k);
	/* the ring of pairs: what the rank before held */
	for (k = 0; k < 7; k++)
		s[k] = a2a_val(r, 0, k);
	ok = !pn_nccl_sendrecv(be[r], s, d, 7, PENNY_INT32, stream) && ok;
	for (k = 0; k < 7; k++)
		ok = ok && d[k] == a2a_val((r + n - 1) % n, 0, k);
	return ok;
}

static void do_p2p_data(struct fake_world *w, int r)
{
	struct fake_rank *f = &w->rank[r];
	char *b = NULL;
	int n = w->n, copies;

	my_rank = r;
	rets[r] = -1;
	if (!be[r] || pn_nccl_alloc(be[r], 4096, 0, (void **)&b))
		return;
	/* out of place: sent straight from the caller's buffer, no copy */
	copies = f->ncopy;
	if (!p2p_right(r, n, (int32_t *)(void *)b, (int32_t *)(void *)(b + 2048), NULL))
		rets[r] = -2;
	else if (f->ncopy != copies || p2p_first_send[r] != b)
		rets[r] = -3;
	/* in place (nccl-tests' placement): right in every block */
	if (!p2p_right(r, n, (int32_t *)(void *)b, (int32_t *)(void *)b, (void *)0x6))
		rets[r] = -4;
	if (rets[r] == -1)
		rets[r] = pn_nccl_free(be[r], b);
}

static void p2p_world(struct fake_world *w, int n)
{
	memset(nr, 0, sizeof(nr));
	memset(p2p_n, 0, sizeof(p2p_n));
	fake_p2p = fake_nccl;
	fake_p2p.Send = m_send;
	fake_p2p.Recv = m_recv;
	fake_p2p.GroupStart = m_gstart;
	fake_p2p.GroupEnd = m_gend;
	pn_nccl_set_api(&fake_p2p);
	p2p_nranks = n;
	pthread_barrier_init(&p2p_bar, NULL, (unsigned)n);
	fake_world_init(w, n);
	fake_run(w, do_init);
}

static void p2p_world_free(struct fake_world *w)
{
	fake_run(w, do_fini);
	fake_world_free(w);
	pthread_barrier_destroy(&p2p_bar);
	pn_nccl_set_api(&fake_nccl);
}

TEST(in_place_alltoall_and_sendrecv_are_right_whatever_ncclGroupEnd_reads_first)
{
	struct fake_world w;

	for (int n = 2; n <= 3; n++) {
		p2p_world(&w, n);
		fake_run(&w, do_p2p_data);
		for (int r = 0; r < n; r++)
			CHECK_EQ_INT(rets[r], 0);
		p2p_world_free(&w);
	}
}

/*
 * Under CUDA-graph capture the staging buffer cannot grow (no cuMemAlloc
 * while the stream is captured): a call that needs more is refused in one
 * line saying what to do, before NCCL; one that fits runs.  A buffer a
 * graph was captured with is kept (until fini) when it grows later.
 */
static void do_p2p_capture(struct fake_world *w, int r)
{
	struct pn_nccl *c = be[r];
	struct fake_rank *f = &w->rank[r];
	char *b = NULL;
	CUgraph g;
	int copies;

	my_rank = r;
	rets[r] = -1;
	msgs[r][0] = 0;
	if (!c || pn_nccl_alloc(be[r], 4096, 0, (void **)&b))
		return;
	/* uncaptured: 64 bytes staged (one copy, on the caller's stream, of the input) */
	copies = f->ncopy;
	if (pn_nccl_sendrecv(be[r], b, b, 16, PENNY_INT32, (void *)0x6) || f->ncopy != copies + 1 ||
	    f->copy[copies].src != (CUdeviceptr)(uintptr_t)b || f->copy[copies].bytes != 64 ||
	    f->copy[copies].stream != (CUstream)0x6 || c->stage_len != 64 ||
	    p2p_first_send[r] != (const void *)(uintptr_t)c->stage)
		return;
	c->g.cu->StreamBeginCapture(c->g.stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
	if (pn_nccl_sendrecv(be[r], b, b, 17, PENNY_INT32, NULL) != -ENOTSUP)
		rets[r] = -2;
	snprintf(msgs[r], sizeof(msgs[r]), "%s", pn_plugin_errmsg());
	if (rets[r] == -1 && pn_nccl_sendrecv(be[r], b, b, 16, PENNY_INT32, NULL))
		rets[r] = -3;
	c->g.cu->StreamEndCapture(c->g.stream, &g);
	if (rets[r] != -1 || c->stage_len != 64 || !c->stage_captured)
		return;
	/* grown outside capture: the captured buffer kept, not freed under the graph */
	if (pn_nccl_sendrecv(be[r], b, b, 32, PENNY_INT32, NULL) || c->stage_len != 128 ||
	    !c->retired || c->stage_captured)
		return;
	rets[r] = pn_nccl_free(be[r], b);
}

TEST(in_place_under_graph_capture_never_allocates)
{
	struct fake_world w;

	p2p_world(&w, 2);
	fake_run(&w, do_p2p_capture);
	for (int r = 0; r < 2; r++) {
		CHECK_EQ_INT(rets[r], 0);
		CHECK_STR(msgs[r], "in-place sendrecv of 68 bytes under CUDA-graph capture: the "
			  "staging buffer of its input holds 64 and cannot grow while the stream "
			  "is captured; run one uncaptured call of this size first (a warm-up, -w 1)");
	}
	p2p_world_free(&w);
}

static struct pn_nccl_api fake_symm;

static void do_symm_calls(struct fake_world *w, int r)
{
	struct pn_nccl *c;
	void *s = NULL, *d = NULL, *plain = NULL;

	(void)w;
	my_rank = r;
	rets[r] = -1;
	if (!be[r])
		return;
	c = be[r];
	/* two communicators; REGISTERED = ncclMemAlloc + a symmetric window of the second */
	if (nr[r].init_calls != 2 || c->comm != nr[r].comms[0] || c->symm != nr[r].comms[1])
		return;
	if (pn_nccl_alloc(be[r], 4096, PENNY_MEM_REGISTERED, &s) ||
	    pn_nccl_alloc(be[r], 4096, PENNY_MEM_REGISTERED, &d) ||
	    pn_nccl_alloc(be[r], 4096, 0, &plain))
		return;
	if (nr[r].mem_alloc != 2 || nr[r].win_reg != 2 || nr[r].win_comm != c->symm ||
	    nr[r].win_flags != 1)
		return;
	/* auto: NCCL's default path on the first communicator */
	if (pn_nccl_allreduce(be[r], s, d, 100, PENNY_BFLOAT16, PENNY_SUM, PENNY_ALGO_AUTO) ||
	    nr[r].ar_comm != c->comm)
		return;
	/* symmetric: the windowed communicator, offsets inside the windows too */
	if (pn_nccl_select(be[r], 100, PENNY_BFLOAT16, PENNY_SUM, PENNY_ALGO_SYMMETRIC) !=
		    PENNY_ALGO_SYMMETRIC ||
	    pn_nccl_allreduce(be[r], (char *)s + 64, (char *)d + 64, 100, PENNY_BFLOAT16, PENNY_SUM,
			      PENNY_ALGO_SYMMETRIC) ||
	    nr[r].ar_comm != c->symm || nr[r].ar_send != (char *)s + 64)
		return;
	/* a buffer outside every window, or running past one's end: refused, NCCL not called */
	nr[r].ar_calls = 0;
	if (pn_nccl_allreduce(be[r], plain, d, 100, PENNY_BFLOAT16, PENNY_SUM,
			      PENNY_ALGO_SYMMETRIC) != -EINVAL ||
	    !strstr(pn_plugin_errmsg(), "symmetric windows") ||
	    pn_nccl_allreduce(be[r], (char *)s + 4000, d, 100, PENNY_BFLOAT16, PENNY_SUM,
			      PENNY_ALGO_SYMMETRIC) != -EINVAL ||
	    nr[r].ar_calls != 0)
		return;
	if (pn_nccl_free(be[r], plain) || pn_nccl_free(be[r], s) || nr[r].win_dereg != 1 ||
	    nr[r].mem_free != 1)
		return;
	/* d stays: fini deregisters and frees it */
	rets[r] = 0;
}

TEST(symmetric_windows_on_a_second_communicator)
{
	struct fake_world w;

	memset(nr, 0, sizeof(nr));
	getid_calls = 0;
	fake_symm = fake_nccl;
	fake_symm.MemAlloc = n_memalloc;
	fake_symm.MemFree = n_memfree;
	fake_symm.CommWindowRegister = n_winreg;
	fake_symm.CommWindowDeregister = n_windereg;
	pn_nccl_set_api(&fake_symm);
	fake_world_init(&w, 2);
	fake_run(&w, do_init);
	CHECK_EQ_INT(getid_calls, 2);
	CHECK(be[0] && strstr(pn_nccl_describe(be[0]), "symmetric windows") != NULL);
	fake_run(&w, do_symm_calls);
	CHECK_EQ_INT(rets[0], 0);
	CHECK_EQ_INT(rets[1], 0);
	fake_run(&w, do_fini);
	for (int r = 0; r < 2; r++) {
		CHECK_EQ_INT(nr[r].win_dereg, 2);
		CHECK_EQ_INT(nr[r].mem_free, 2);
		CHECK_EQ_INT(nr[r].destroyed, 2);
	}
	fake_world_free(&w);
	pn_nccl_set_api(&fake_nccl);
}

static void do_symm_refused(struct fake_world *w, int r)
{
	(void)w;
	my_rank = r;
	rets[r] = pn_nccl_select(be[r], 100, PENNY_FLOAT, PENNY_SUM, PENNY_ALGO_SYMMETRIC);
	snprintf(msgs[r], sizeof(msgs[r]), "%s", pn_plugin_errmsg());
}

TEST(without_windows_symmetric_is_refused_naming_the_version)
{
	struct fake_world w;

	memset(nr, 0, sizeof(nr));
	fake_world_init(&w, 2);
	fake_run(&w, do_init);
	CHECK_EQ_INT(nr[0].init_calls, 1);
	CHECK(be[0] && strstr(pn_nccl_describe(be[0]), "no symmetric memory") != NULL);
	fake_run(&w, do_symm_refused);
	CHECK_EQ_INT(rets[0], -ENOTSUP);
	CHECK(strstr(msgs[0], "NCCL 2.28.9 has no symmetric memory") != NULL);
	fake_run(&w, do_fini);
	fake_world_free(&w);
}

/* Emulated nodes: NCCL sees penny's node split through NCCL_HOSTID. */
TEST(emulated_nodes_get_their_own_nccl_hostid)
{
	struct fake_world w;

	memset(nr, 0, sizeof(nr));
	unsetenv("NCCL_HOSTID");
	setenv("PENNY_NODE_ID", "n1", 1);
	fake_world_init(&w, 2);
	for (int r = 0; r < 2; r++)
		w.host[r].nnodes = 2, w.host[r].node = r;
	fake_run(&w, do_init);
	CHECK_EQ_INT(rets[0], 0);
	CHECK_STR(getenv("NCCL_HOSTID"), "penny-node-n1");
	CHECK(be[0] && strstr(pn_nccl_describe(be[0]), "NCCL_HOSTID=penny-node-n1") != NULL);
	fake_run(&w, do_fini);
	/* one node: nothing set; a caller's own NCCL_HOSTID is kept */
	unsetenv("NCCL_HOSTID");
	for (int r = 0; r < 2; r++)
		w.host[r].nnodes = 1, w.host[r].node = 0;
	fake_run(&w, do_init);
	CHECK(getenv("NCCL_HOSTID") == NULL);
	fake_run(&w, do_fini);
	setenv("NCCL_HOSTID", "mine", 1);
	for (int r = 0; r < 2; r++)
		w.host[r].nnodes = 2;
	fake_run(&w, do_init);
	CHECK_STR(getenv("NCCL_HOSTID"), "mine");
	fake_run(&w, do_fini);
	unsetenv("NCCL_HOSTID");
	unsetenv("PENNY_NODE_ID");
	fake_world_free(&w);
}

TEST(a_missing_nccl_is_one_line_naming_what_was_tried)
{
	const struct pn_nccl_api *a;

	pn_nccl_set_api(NULL);
	setenv("PENNY_NCCL_LIB", "/nonexistent/libnccl.so.2", 1);
	a = pn_nccl_api_get();
	CHECK(a == NULL);
	CHECK(strstr(pn_plugin_errmsg(), "cannot load NCCL: /nonexistent/libnccl.so.2 (") != NULL);
	CHECK(strchr(pn_plugin_errmsg(), '\n') == NULL);
	unsetenv("PENNY_NCCL_LIB");
	pn_nccl_set_api(&fake_nccl);
}

/*
 * A stream whose work never ends (NCCL's kernel waits for a peer that never
 * comes, as its graphs of in-place send/recv did on two H200): the plugin's
 * waits give up after the bound (the core's timeout and a grace) in one
 * line, and fini calls nothing that would wait for that work (NCCL's
 * teardown, ncclCommAbort's too, waited for it on the H200s): the process's
 * exit frees it.  Before, cuStreamSynchronize waited past --timeout, forever.
 */
static int stuck[FAKE_MAX_RANKS], waited_stuck[FAKE_MAX_RANKS];
static CUdeviceptr left[FAKE_MAX_RANKS];	/* device memory fini leaves to the exit */
static CUresult s_query(CUstream s)
{
	(void)s;
	return stuck[my_rank] ? CUDA_ERROR_NOT_READY : CUDA_SUCCESS;
}
static CUresult e_query(CUevent e)
{
	(void)e;
	return stuck[my_rank] ? CUDA_ERROR_NOT_READY : CUDA_SUCCESS;
}
static CUresult s_sync(CUstream s)
{
	waited_stuck[my_rank] += stuck[my_rank];
	return f_ssync(s);
}
static CUresult e_sync(CUevent e)
{
	waited_stuck[my_rank] += stuck[my_rank];
	return f_esync(e);
}
static int one_call(void *ctx)
{
	(void)ctx;
	return 0;
}

static void do_stuck(struct fake_world *w, int r)
{
	struct pn_nccl *c = be[r];
	struct penny_time_v2 t = { .size = sizeof(t) };
	double block_us[5];
	double t0, took;

	my_rank = r;
	rets[r] = -1;
	if (!c || c->g.wait_ns != w->host[r].timeout_ns + PN_GPU_WAIT_GRACE_NS)
		return;
	/* a healthy stream: the bounded waits return at once */
	if (pn_gpu_sync(&c->g))
		return;
	left[r] = c->g.result;
	c->g.wait_ns = 50000000;	/* 50 ms: the test's timeout and grace */
	stuck[r] = 1;
	t0 = host_now_us();
	if (pn_gpu_sync(&c->g) != -ETIMEDOUT)
		return;
	took = (host_now_us() - t0) / 1e6;
	snprintf(msgs[r], sizeof(msgs[r]), "%s", pn_plugin_errmsg());
	if (took < 0.05 || took > 2 || !c->g.hung || waited_stuck[r])
		return;
	/* every later wait fails at once, naming why */
	t.t.iters = 1;
	t.blocks = 5;
	t.block_usec = block_us;
	if (pn_gpu_time(&c->g, one_call, NULL, &t) != -ETIMEDOUT ||
	    !strstr(pn_plugin_errmsg(), "an earlier wait for this GPU timed out"))
		return;
	rets[r] = 0;
}

TEST(a_gpu_that_never_finishes_fails_the_wait_and_fini_does_not_wait)
{
	struct fake_world w;
	struct pn_cudrv cu = fake_cu;

	cu.StreamQuery = s_query;
	cu.EventQuery = e_query;
	cu.StreamSynchronize = s_sync;
	cu.EventSynchronize = e_sync;
	pn_cudrv_set(&cu);
	memset(nr, 0, sizeof(nr));
	fake_world_init(&w, 2);
	for (int r = 0; r < 2; r++)
		w.host[r].timeout_ns = 3000000000ull;
	fake_run(&w, do_init);
	fake_run(&w, do_stuck);
	for (int r = 0; r < 2; r++) {
		CHECK_EQ_INT(rets[r], 0);
		CHECK(strstr(msgs[r], "the GPU's work has not finished after 0.05") == msgs[r]);
		CHECK(strstr(msgs[r], "a kernel waits for a peer that does not come, or the GPU is "
			      "stuck (cuStreamSynchronize)") != NULL);
	}
	fake_run(&w, do_fini);
	for (int r = 0; r < 2; r++) {
		CHECK_EQ_INT(waited_stuck[r], 0);	/* fini waited for nothing */
		CHECK_EQ_INT(nr[r].destroyed, 0);	/* nor called NCCL's teardown */
		stuck[r] = 0;
		fake_cu.MemFree(left[r]);	/* what the process's exit would free */
	}
	fake_world_free(&w);
	pn_cudrv_set(&fake_cu);
}

int main(void)
{
	pn_cudrv_set(&fake_cu);
	pn_nccl_set_api(&fake_nccl);
	RUN(unique_id_of_rank_0_reaches_every_rank);
	RUN(a_rank_that_fails_early_stops_every_rank_before_nccl);
	RUN(types_and_ops_map_to_nccls);
	RUN(allreduce_runs_on_the_plugins_stream_with_nccls_enums);
	RUN(symmetric_windows_on_a_second_communicator);
	RUN(without_windows_symmetric_is_refused_naming_the_version);
	RUN(emulated_nodes_get_their_own_nccl_hostid);
	RUN(a_missing_nccl_is_one_line_naming_what_was_tried);
	RUN(the_other_collectives_are_nccls_own_calls);
	RUN(a_missing_nccl_call_is_refused_in_one_line);
	RUN(in_place_alltoall_and_sendrecv_are_right_whatever_ncclGroupEnd_reads_first);
	RUN(in_place_under_graph_capture_never_allocates);
	RUN(a_gpu_that_never_finishes_fails_the_wait_and_fini_does_not_wait);
	fake_funcs_free();
	return unit_done();
}
