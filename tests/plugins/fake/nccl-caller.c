/* SPDX-License-Identifier: MIT */
/*
 * A program that uses NCCL the way a framework does (linked with
 * libnccl.so.2, one process per rank), for the interposer's tests:
 *
 *	nccl-caller NRANKS [MODE:]SCENARIO
 *
 * The parent makes the unique id and forks the ranks; each rank creates
 * its communicator, runs the scenario and prints one line per finding.
 * Buffers are host memory (the fake libcuda and NCCL of the tests).
 * Modes (how the ranks and their communicator are made):
 *   threads:   the ranks are threads of one process, each calling
 *              ncclCommInitRank with the same id (nccl-tests' -t)
 *   threadsmain: as threads:, but the main thread destroys every rank's
 *              communicator, one after another, once the threads are done
 *              (nccl-tests 2.19 does)
 *   initall:   ncclCommInitAll makes every rank's communicator in one
 *              process; a thread each runs the scenario on one
 *   maingroup: the main thread makes every rank's communicator with
 *              ncclCommInitRank in one group (nccl-tests does); a thread
 *              each runs the scenario on one
 *   grouped:teardown (its own scenario) see teardown()
 *   grouped:   made as maingroup:, then the main thread calls every rank
 *              inside groups (nccl-tests' -g N), waits with the driver's
 *              cuStreamSynchronize and checks every rank; then destroys
 *              them one after another (allreduce and colls only, every
 *              call one penny takes: the fake NCCL cannot run one thread's
 *              ranks; with the fake plugin's PENNY_FAKE_ASYNC=1)
 *   untracked: processes, each making its communicator with the
 *              ncclCommInitRank of NCCL's own library (looked up in its
 *              handle, as vLLM's pynccl does), which an interposer in
 *              front of it never sees
 * Scenarios:
 *   allreduce  int32, int64, uint8, float and double with sum, prod, max,
 *              min (and avg for the floats), counts 1..70000, in place and
 *              not, one inside a group, one on a split communicator;
 *              every result checked
 *   bf16       a bfloat16 sum (the fake NCCL has no bfloat16: only penny
 *              can run it)
 *   args       what NCCL answers: NULL communicator, unknown type, count 0,
 *              NULL buffers, a PreMulSum op
 *   version    ncclGetVersion and ncclGetErrorString only
 *   abort      one allreduce, then ncclCommAbort
 *   nonblocking  bf16 on a non-blocking communicator (ncclInProgress polled)
 *   groupfirst a first allreduce inside a group, then one outside
 *   peerdies   the last rank leaves after init; the others' first allreduce
 *              must fail (not hang) and the communicator report it
 *   regcache   in-place float sums of 4096 elements in "device" buffers
 *              (the fake libcuda's cuMemAlloc): reused buffers, rank 0's
 *              buffer freed and its address reused (another size, then
 *              the same size), offsets that differ between ranks, two
 *              more buffers; every result checked
 *   asyncerr   one allreduce, then ncclCommGetAsyncError must report the
 *              error a kernel recorded, and ncclGetLastError say it
 *   asyncdestroy as asyncerr, then ncclCommDestroy: rank 0's returns at
 *              once though rank 1's comes 3 s later
 *   colls      ncclReduceScatter of the allreduce's types and ops and
 *              ncclAllGather of int32, int64, float and double, counts
 *              1..9000, in NCCL's in-place placement and not; one of each
 *              inside a group; every result checked
 *   bf16coll   a bfloat16 reduce-scatter and all-gather (only penny can
 *              reduce bfloat16 here)
 *   offsplit   (4 ranks) one allreduce; then PENNY_NCCL=off (or
 *              NCCL_CALLER_OFF's value) in the environment and a split
 *              (ranks % 2) with one allreduce,
 *              then PENNY_NCCL unset and another split with one: each
 *              checked (the interposer reads it at each set-up)
 *   ctx        the thread's CUDA context (the fake driver's) set before the
 *              first allreduce (penny's set-up inside it) and one more is
 *              still the same after each, as NCCL leaves it
 *   shrinkgrow (processes, 3 ranks or more) the last rank leaves by
 *              ncclCommShrink and comes back by ncclCommGrow (the id from
 *              rank 0 through a pipe); an allreduce on each of the three
 *              communicators, checked
 * The careless or unusual framework (t0611), each answer NCCL's or
 * penny's right result:
 *   nullcomm   NULL communicators to every call that takes one
 *   twice      a split destroyed twice, one aborted then destroyed (the
 *              fake NCCL answers ncclInvalidArgument), calls on them; one
 *              finalized then destroyed
 *   badinit    NULL ids and communicators, ranks and counts of ranks out
 *              of range, a junk id, bad configs (blocking 5, no magic);
 *              NCCL_CALLER_MORE_RANKS: more ranks than come, on an id
 *              of its own
 *   groups     ncclGroupEnd without a start, groups 10000 deep with a
 *              call inside, then calls outside and in a group
 *   groupexit  a group left open with a call in it at exit, nothing
 *              destroyed
 *   counts     counts 0 and SIZE_MAX/2 and the like, NULL buffers, type
 *              and op 99 and -1: nothing written, nothing broken
 *   secondthread  a second thread's calls while the first is in a group
 *   watchdog   a thread polls ncclCommGetAsyncError while its rank calls
 *              and destroys a split
 *   abortwait  (processes) the last rank comes NCCL_CALLER_LATE s (20)
 *              late; the others' watchdog aborts at 1 s, which must end
 *              their first allreduce at once
 *   notready   a call on a non-blocking communicator still in progress
 *              (NCCL's ncclInvalidArgument), then calls once it is made
 *   oddsplit   a non-blocking split the last rank leaves
 *              (NCCL_SPLIT_NOCOLOR), the others reversed, called before
 *              and after it is made
 * Penny's failures in NCCL's terms, and the group list of a thread (t0612):
 *   setupfail  the first allreduce fails in penny's set-up (as the test
 *              makes it; NCCL_CALLER_LEAVE: the last rank leaves first):
 *              its result, the async error, ncclGetLastError of the
 *              communicator and of NULL said; NCCL's last error after a
 *              call of NCCL's fails
 *   setupwait  setupfail on a non-blocking communicator
 *   callfail   one allreduce, then the last rank leaves: the next fails
 *              in penny's call, said as setupfail's
 *   dogerr     a watchdog polls ncclCommGetAsyncError and
 *              ncclGetLastError while a kernel's error comes
 *              (PENNY_FAKE_ASYNC_ERROR=1)
 *   groupleak  300 threads each make communicators in a group, destroy
 *              them and end inside the group: the heap grows by what the
 *              fake NCCL keeps alone
 *   groupdestroy communicators made in a group, destroyed before its end
 *              (with PENNY_FAKE_NCCL_STRICT=1)
 *   groupteardown a split penny runs, destroyed inside a group (with
 *              PENNY_FAKE_NCCL_STRICT=1 and PENNY_FAKE_FINI_BARRIER=1)
 *   revoke     one allreduce, then ncclCommRevoke: a bfloat16 sum (which
 *              only penny runs here) gets NCCL's answer, a second revoke
 *              too; the destroy does not wait for the peers
 *   shrinkabort  as revoke, but an ncclCommShrink with NCCL_SHRINK_ABORT
 *              (none excluded) on the parent, and an allreduce on the new
 *              communicator, checked
 * NCCL's checks of a communicator and its groups (t0613):
 *   errlater   after penny's async error (PENNY_FAKE_ASYNC_ERROR=1) every
 *              call that enqueues work gets it (NCCL's own calls too), as
 *              after NCCL's own error; nothing written
 *   busyon     (non-blocking) an ncclReduce left in progress: NCCL refuses
 *              the calls penny would take (ncclInvalidArgument); penny's
 *              once ready
 *   destroybusy (non-blocking) rank 0's destroy while an ncclReduce is in
 *              progress is refused; both destroys once ready return at once
 *   simulate   an allreduce penny would take in a group that
 *              ncclGroupSimulateEnd ends: simulated by NCCL, not run;
 *              nested groups; ncclGroupSimulateEnd(NULL) runs the group
 * The interposer's wait for its last call before its buffers go (t0614,
 * with the fake plugin's PENNY_FAKE_ASYNC=1):
 *   streamgone an allreduce on a stream of the caller's (cuStreamCreate),
 *              the stream destroyed, then ncclCommDestroy; the result read
 *              once the device is synchronized
 *   ptdsother  an allreduce on CU_STREAM_PER_THREAD by a thread that ends,
 *              then ncclCommDestroy by the rank's own thread; read so
 * peerdies, shrinkgrow, abortwait, setupfail and callfail run in processes
 * only.
 * args also gives ncclReduceScatter and ncclAllGather NCCL's cases.
 * NCCL_CALLER_RANK0_ENV=NAME=VALUE sets NAME in rank 0 alone (processes).
 * Exit: 0 when every rank found what it expected, 1 otherwise, 2 on usage.
 */
#define _GNU_SOURCE
#include "../../../plugins/interpose/nccl_api.h"

#include <dlfcn.h>
#include <malloc.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>

static int bad;
/* shrinkgrow: rank 0 hands the last rank the id of the grown communicator */
static int grow_pipe[2] = { -1, -1 };
/* badinit: an id of its own for ranks that say there are more of them */
static ncclUniqueId more_id;

#define EXPECT(cond, ...)                                                                          \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			printf(__VA_ARGS__);                                                       \
			printf("\n");                                                              \
			bad = 1;                                                                   \
		}                                                                                  \
	} while (0)

/* rank r's element i: small integers, so that every sum and product is exact */
static double input(int r, size_t i)
{
	return (double)((int)(i % 5) + r + 1);
}

static double expect(int n, size_t i, int op)
{
	double a = input(0, i);
	int r;

	for (r = 1; r < n; r++) {
		double v = input(r, i);

		a = op == ncclProd ? a * v : op == ncclMax ? (v > a ? v : a)
					     : op == ncclMin ? (v < a ? v : a) : a + v;
	}
	return op == ncclAvg ? a / n : a;
}

static void put(void *p, ncclDataType_t dt, size_t i, double v)
{
	switch (dt) {
	case ncclInt32:
		((int32_t *)p)[i] = (int32_t)v;
		break;
	case ncclInt64:
		((int64_t *)p)[i] = (int64_t)v;
		break;
	case ncclUint8:
		((uint8_t *)p)[i] = (uint8_t)v;
		break;
	case ncclFloat32:
		((float *)p)[i] = (float)v;
		break;
	default:
		((double *)p)[i] = v;
	}
}

static double get(const void *p, ncclDataType_t dt, size_t i)
{
	switch (dt) {
	case ncclInt32:
		return ((const int32_t *)p)[i];
	case ncclInt64:
		return (double)((const int64_t *)p)[i];
	case ncclUint8:
		return ((const uint8_t *)p)[i];
	case ncclFloat32:
		return ((const float *)p)[i];
	default:
		return ((const double *)p)[i];
	}
}

/* The types of the scenarios; the type and op pairs they check (avg of
 * the floats alone; no product of uint8). */
static const ncclDataType_t types[] = { ncclInt32, ncclInt64, ncclUint8, ncclFloat32, ncclFloat64 };

static int checked(ncclDataType_t dt, int op)
{
	if (op == ncclAvg)
		return dt == ncclFloat32 || dt == ncclFloat64;
	return dt != ncclUint8 || op != ncclProd;
}

/* Rank rank's allreduce result d (count of dt) against the sum (op) of n ranks' inputs. */
static void ar_check(int rank, int n, ncclDataType_t dt, int op, size_t count, const void *d)
{
	size_t i, wrong = 0;

	for (i = 0; i < count; i++) {
		double want = expect(n, i, op);

		if (dt == ncclUint8 || dt == ncclInt32 || dt == ncclInt64)
			want = op == ncclAvg ? (double)((long long)expect(n, i, ncclSum) / n) : want;
		if (dt == ncclUint8)
			want = (double)((unsigned long long)want & 0xff);
		if (dt == ncclFloat32)
			want = (float)want;
		if (get(d, dt, i) != want && !wrong++)
			printf("rank %d: type %d op %d count %zu: element %zu is %g, not %g\n", rank, dt, op,
			       count, i, get(d, dt, i), want);
	}
	if (wrong)
		bad = 1;
}

/* Rank rank's allreduce input (count of dt, 8 bytes an element at most). */
static double *ar_input(int rank, ncclDataType_t dt, size_t count)
{
	double *s = malloc(count * 8);
	size_t i;

	if (!s)
		exit(2);
	for (i = 0; i < count; i++)
		put(s, dt, i, input(rank, i));
	return s;
}

/* One allreduce, checked; returns 1 when it ran. */
static int one(ncclComm_t comm, int rank, int n, ncclDataType_t dt, int op, size_t count,
	       int inplace, int in_group)
{
	double *s = ar_input(rank, dt, count), *d = inplace ? s : malloc(count * 8);
	ncclResult_t r;

	if (!d)
		exit(2);
	if (in_group)
		ncclGroupStart();
	r = ncclAllReduce(s, d, count, dt, (ncclRedOp_t)op, comm, NULL);
	if (in_group)
		ncclGroupEnd();
	EXPECT(r == ncclSuccess, "rank %d: allreduce type %d op %d count %zu: %s", rank, dt, op, count,
	       ncclGetErrorString(r));
	if (r == ncclSuccess)
		ar_check(rank, n, dt, op, count, d);
	if (d != s)
		free(d);
	free(s);
	return 1;
}

static int allreduce(ncclComm_t comm, int rank, int n)
{
	static const size_t counts[] = { 1, 7, 1000, 70000 };
	unsigned t, c;
	int op, calls = 0;
	ncclComm_t sub = NULL;

	for (t = 0; t < sizeof(types) / sizeof(types[0]); t++)
		for (op = 0; op < 5; op++)
			for (c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
				if (!checked(types[t], op))
					continue;
				calls += one(comm, rank, n, types[t], op, counts[c], c & 1, 0);
			}
	calls += one(comm, rank, n, ncclFloat32, ncclSum, 4096, 1, 1);
	EXPECT(ncclCommSplit(comm, rank % 2, rank, &sub, NULL) == ncclSuccess && sub,
	       "rank %d: ncclCommSplit failed", rank);
	if (sub) {
		int sn = 0, sr = -1;

		ncclCommCount(sub, &sn);
		ncclCommUserRank(sub, &sr);
		calls += one(sub, sr, sn, ncclFloat64, ncclMax, 333, 0, 0);
		EXPECT(ncclCommDestroy(sub) == ncclSuccess, "rank %d: destroying the split failed", rank);
	}
	return calls;
}

/*
 * One reduce-scatter (kind 0: send n blocks of count, recv one) or
 * all-gather (kind 1: send one block, recv n), checked; in place at NCCL's
 * placement (the block at rank's offset of the whole buffer).
 */
/* A reduce-scatter's or all-gather's buffers of one rank (coll_make):
 * the whole buffer of n blocks and the rank's block (in place: inside it). */
struct cbuf {
	char *w, *b, *blk;
};

static void coll_make(struct cbuf *c, int rank, int n, int kind, ncclDataType_t dt, size_t count,
		      int inplace)
{
	size_t whole = count * (size_t)n, i, at = count * (size_t)rank;

	c->w = malloc(whole * 8);
	c->b = inplace ? NULL : malloc(count * 8);
	if (!c->w || (!inplace && !c->b))
		exit(2);
	c->blk = inplace ? c->w + at * (dt == ncclUint8 ? 1 : dt == ncclInt32 || dt == ncclFloat32 ? 4 : 8)
			 : c->b;
	if (kind == 0)
		for (i = 0; i < whole; i++)
			put(c->w, dt, i, input(rank, i));
	else
		for (i = 0; i < count; i++)
			put(c->blk, dt, i, input(rank, i));
}

/* kind 0: ncclReduceScatter, 1: ncclAllGather, on c's buffers. */
static ncclResult_t coll_call(struct cbuf *c, int kind, ncclDataType_t dt, int op, size_t count,
			      ncclComm_t comm)
{
	if (kind == 0)
		return ncclReduceScatter(c->w, c->blk, count, dt, (ncclRedOp_t)op, comm, NULL);
	return ncclAllGather(c->blk, c->w, count, dt, comm, NULL);
}

/* c's result checked, then freed. */
static void coll_check(struct cbuf *c, int rank, int n, int kind, ncclDataType_t dt, int op,
		       size_t count, int inplace)
{
	size_t whole = count * (size_t)n, i, wrong = 0, at = count * (size_t)rank;

	for (i = 0; i < (kind ? whole : count); i++) {
		double want = kind ? input((int)(i / count), i % count) : expect(n, at + i, op);
		double got = get(kind ? c->w : c->blk, dt, i);

		if (dt == ncclUint8)
			want = (double)((unsigned long long)want & 0xff);
		if (dt == ncclFloat32)
			want = (float)want;
		if (got != want && !wrong++)
			printf("rank %d: %s type %d op %d count %zu%s: element %zu is %g, not %g\n", rank,
			       kind ? "all-gather" : "reduce-scatter", dt, op, count,
			       inplace ? " in place" : "", i, got, want);
	}
	if (wrong)
		bad = 1;
}

static int one_coll(ncclComm_t comm, int rank, int n, int kind, ncclDataType_t dt, int op,
		    size_t count, int inplace, int in_group)
{
	struct cbuf c;
	ncclResult_t r;

	coll_make(&c, rank, n, kind, dt, count, inplace);
	if (in_group)
		ncclGroupStart();
	r = coll_call(&c, kind, dt, op, count, comm);
	if (in_group)
		ncclGroupEnd();
	EXPECT(r == ncclSuccess, "rank %d: %s type %d op %d count %zu: %s", rank,
	       kind ? "all-gather" : "reduce-scatter", dt, op, count, ncclGetErrorString(r));
	if (r == ncclSuccess)
		coll_check(&c, rank, n, kind, dt, op, count, inplace);
	free(c.b);
	free(c.w);
	return 1;
}

static int colls(ncclComm_t comm, int rank, int n, int *ag)
{
	static const size_t counts[] = { 1, 7, 1000, 9000 };
	unsigned t, c;
	int op, rs = 0;

	for (t = 0; t < sizeof(types) / sizeof(types[0]); t++)
		for (op = 0; op < 5; op++)
			for (c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
				if (!checked(types[t], op))
					continue;
				rs += one_coll(comm, rank, n, 0, types[t], op, counts[c], c & 1, 0);
				/* the all-gathers: not of uint8 (the host services' type) */
				if (op == ncclSum && types[t] != ncclUint8)
					*ag += one_coll(comm, rank, n, 1, types[t], op, counts[c],
							(c & 1) == (t & 1), 0);
			}
	rs += one_coll(comm, rank, n, 0, ncclFloat32, ncclSum, 100, 0, 1);
	*ag += one_coll(comm, rank, n, 1, ncclFloat32, ncclSum, 100, 1, 1);
	return rs;
}

/* NCCL's answer to the call is want. */
#define ANSWER(call, want, what)                                                                   \
	do {                                                                                       \
		ncclResult_t r_ = (call);                                                          \
		EXPECT(r_ == (want), "rank %d: %s gave %d", rank, what, r_);                       \
	} while (0)

static void args(ncclComm_t comm, int rank)
{
	float x[4] = { 1, 2, 3, 4 };
	ncclRedOp_t pre;
	double scale = 0.5;
	const ncclResult_t inval = ncclInvalidArgument;

	ANSWER(ncclAllReduce(x, x, 4, ncclFloat32, ncclSum, NULL, NULL), inval, "NULL comm");
	ANSWER(ncclAllReduce(x, x, 4, (ncclDataType_t)42, ncclSum, comm, NULL), inval, "type 42");
	ANSWER(ncclAllReduce(x, x, 4, ncclFloat32, (ncclRedOp_t)77, comm, NULL), inval, "op 77");
	ANSWER(ncclAllReduce(x, x, 0, ncclFloat32, ncclSum, comm, NULL), ncclSuccess, "count 0");
	ANSWER(ncclAllReduce(NULL, x, 4, ncclFloat32, ncclSum, comm, NULL), inval, "NULL send");
	ANSWER(ncclRedOpCreatePreMulSum(&pre, &scale, ncclFloat64, ncclScalarHostImmediate, comm),
	       ncclSuccess, "PreMulSum");
	ANSWER(ncclAllReduce(x, x, 4, ncclFloat32, pre, comm, NULL), inval, "the PreMulSum op");
	ANSWER(ncclReduceScatter(x, x, 2, ncclFloat32, pre, comm, NULL), inval,
	       "a PreMulSum reduce-scatter");
	ncclRedOpDestroy(pre, comm);
	/* the same answers for reduce-scatter and all-gather (4 floats: 2 a rank) */
	ANSWER(ncclReduceScatter(x, x, 2, ncclFloat32, ncclSum, NULL, NULL), inval,
	       "reduce-scatter, NULL comm");
	ANSWER(ncclReduceScatter(x, x, 2, (ncclDataType_t)42, ncclSum, comm, NULL), inval,
	       "reduce-scatter, type 42");
	ANSWER(ncclReduceScatter(x, x, 2, ncclFloat32, (ncclRedOp_t)77, comm, NULL), inval,
	       "reduce-scatter, op 77");
	ANSWER(ncclReduceScatter(x, NULL, 2, ncclFloat32, ncclSum, comm, NULL), inval,
	       "reduce-scatter, NULL recv");
	ANSWER(ncclReduceScatter(x, x, 0, ncclFloat32, ncclSum, comm, NULL), ncclSuccess,
	       "reduce-scatter, count 0");
	ANSWER(ncclAllGather(x, x + 2, 2, ncclFloat8e4m3, NULL, NULL), inval, "all-gather, NULL comm");
	ANSWER(ncclAllGather(x, x, 1, ncclFloat8e4m3, comm, NULL), inval, "all-gather of fp8");
	ANSWER(ncclAllGather(NULL, x, 2, ncclFloat32, comm, NULL), inval, "all-gather, NULL send");
	ANSWER(ncclAllGather(x, x, 0, ncclFloat32, comm, NULL), ncclSuccess, "all-gather, count 0");
}

/* One in-place float sum of count elements at buf, checked. */
static int one_at(ncclComm_t comm, int rank, int n, float *buf, size_t count)
{
	size_t i, wrong = 0;
	ncclResult_t r;

	for (i = 0; i < count; i++)
		buf[i] = (float)input(rank, i);
	r = ncclAllReduce(buf, buf, count, ncclFloat32, ncclSum, comm, NULL);
	EXPECT(r == ncclSuccess, "rank %d: allreduce at %p: %s", rank, (void *)buf,
	       ncclGetErrorString(r));
	for (i = 0; i < count && r == ncclSuccess; i++)
		if (buf[i] != (float)expect(n, i, ncclSum) && !wrong++)
			printf("rank %d: element %zu is %g, not %g\n", rank, i, buf[i],
			       expect(n, i, ncclSum));
	if (wrong)
		bad = 1;
	return 1;
}

/* "Device" memory of the fake libcuda.so.1 (host memory it keeps track of). */
static float *dev_alloc(size_t bytes)
{
	static int (*alloc)(unsigned long long *p, size_t bytes);
	unsigned long long p = 0;
	void *h;

	if (!alloc && (h = dlopen("libcuda.so.1", RTLD_NOW)))
		*(void **)&alloc = dlsym(h, "cuMemAlloc_v2");
	if (!alloc || alloc(&p, bytes)) {
		printf("no cuMemAlloc_v2 in libcuda.so.1\n");
		exit(2);
	}
	return (float *)(uintptr_t)p;
}

static void dev_free(float *p)
{
	static int (*fr)(unsigned long long p);
	void *h;

	if (!fr && (h = dlopen("libcuda.so.1", RTLD_NOW)))
		*(void **)&fr = dlsym(h, "cuMemFree_v2");
	if (fr)
		fr((unsigned long long)(uintptr_t)p);
}

static int regcache(ncclComm_t comm, int rank, int n)
{
	const size_t count = 4096;
	float *a = dev_alloc(64 << 10), *d, *e;
	int calls = 0;

	calls += one_at(comm, rank, n, a, count); /* registered: a miss */
	calls += one_at(comm, rank, n, a, count); /* hits */
	calls += one_at(comm, rank, n, a, count);
	if (rank == 0) { /* freed; the address comes back, another size */
		dev_free(a);
		d = dev_alloc(32 << 10);
		EXPECT(d == a, "rank 0: the fake cuMemAlloc did not reuse the address");
		a = d;
	}
	calls += one_at(comm, rank, n, a, count); /* rank 0 misses, the others hit: a miss */
	calls += one_at(comm, rank, n, a, count); /* a hit */
	if (rank == 0) { /* freed; the address comes back, the same size */
		dev_free(a);
		d = dev_alloc(32 << 10);
		EXPECT(d == a, "rank 0: the fake cuMemAlloc did not reuse the address");
		a = d;
	}
	calls += one_at(comm, rank, n, a, count); /* a miss (another buffer id) */
	calls += one_at(comm, rank, n, rank ? a : a + 1024, count); /* offsets differ: staged */
	d = dev_alloc(64 << 10);
	e = dev_alloc(64 << 10);
	calls += one_at(comm, rank, n, d, count); /* misses */
	calls += one_at(comm, rank, n, e, count);
	calls += one_at(comm, rank, n, a, count); /* a hit, unless the cache holds 2 */
	dev_free(e);
	dev_free(d);
	dev_free(a);
	return calls;
}

static int shrinkgrow(ncclComm_t comm, int rank, int n)
{
	ncclComm_t small = NULL, big = NULL;
	ncclUniqueId gid;
	int last = n - 1, calls;
	ncclResult_t r;

	calls = one(comm, rank, n, ncclFloat32, ncclSum, 100, 0, 0);
	if (rank != last) {
		r = ncclCommShrink(comm, &last, 1, &small, NULL, 0);
		EXPECT(r == ncclSuccess && small, "rank %d: ncclCommShrink: %s", rank,
		       ncclGetErrorString(r));
		if (!small)
			return calls;
		calls += one(small, rank, n - 1, ncclFloat32, ncclSum, 100, 0, 0);
		if (rank == 0 && (ncclCommGetUniqueId(small, &gid) != ncclSuccess ||
				  write(grow_pipe[1], &gid, sizeof(gid)) != (ssize_t)sizeof(gid))) {
			printf("rank 0: no id to grow by\n");
			bad = 1;
		}
		r = ncclCommGrow(small, n, rank == 0 ? &gid : NULL, -1, &big, NULL);
	} else {
		/* EOF if rank 0 gave up before it wrote */
		if (read(grow_pipe[0], &gid, sizeof(gid)) != (ssize_t)sizeof(gid)) {
			printf("rank %d: no id to grow by\n", rank);
			bad = 1;
			return calls;
		}
		r = ncclCommGrow(NULL, n, &gid, rank, &big, NULL);
	}
	EXPECT(r == ncclSuccess && big, "rank %d: ncclCommGrow: %s", rank, ncclGetErrorString(r));
	if (big) {
		calls += one(big, rank, n, ncclFloat64, ncclSum, 1000, 1, 0);
		EXPECT(ncclCommDestroy(big) == ncclSuccess, "rank %d: ncclCommDestroy (grown)",
		       rank);
	}
	if (small)
		EXPECT(ncclCommDestroy(small) == ncclSuccess, "rank %d: ncclCommDestroy (shrunk)",
		       rank);
	return calls;
}

/* ncclCommInitRank looked up in NCCL's own handle (what an interposer does not see). */
static ncclResult_t init_untracked(ncclComm_t *comm, int n, ncclUniqueId id, int rank)
{
	ncclResult_t (*init)(ncclComm_t *, int, ncclUniqueId, int) = NULL;
	void *h = dlopen("libnccl.so.2", RTLD_NOW | RTLD_NOLOAD);

	if (h)
		*(void **)&init = dlsym(h, "ncclCommInitRank");
	if (!init) {
		printf("rank %d: no ncclCommInitRank in NCCL's handle\n", rank);
		return ncclSystemError;
	}
	return init(comm, n, id, rank);
}

enum { M_PROCS, M_THREADS, M_INITALL, M_UNTRACKED, M_THREADSMAIN, M_MAINGROUP, M_GROUPED };

/* grouped: one thread calls every rank (comms[n]) in a group, then waits
 * (the driver's cuStreamSynchronize on the NULL stream) and checks each */
static int grouped(ncclComm_t *comms, int n, const char *what)
{
	static const size_t ar_counts[] = { 1, 7, 1000, 70000 }, co_counts[] = { 1, 7, 1000, 9000 };
	void *cu = dlopen("libcuda.so.1", RTLD_NOW);
	int (*sync)(void *) = cu ? (int (*)(void *))dlsym(cu, "cuStreamSynchronize") : NULL;
	int colls_too = !strcmp(what, "colls"), op, r, kind, calls = 0;
	unsigned t, c;

	if (!sync || (strcmp(what, "allreduce") && !colls_too)) {
		printf("grouped: %s\n", sync ? "allreduce or colls only" : "no cuStreamSynchronize");
		return 1;
	}
	for (t = 0; t < sizeof(types) / sizeof(types[0]); t++)
		for (op = 0; op < 5; op++)
			for (c = 0; c < 4; c++) {
				size_t count = colls_too ? co_counts[c] : ar_counts[c];

				if (!checked(types[t], op))
					continue;
				for (kind = colls_too ? 0 : 2; kind < (colls_too ? 2 : 3); kind++) {
					double *s[64], *d[64];
					struct cbuf cb[64];
					ncclResult_t res = ncclSuccess;

					if (kind == 1 && (op != ncclSum || types[t] == ncclUint8))
						continue; /* the all-gathers: sum, not uint8 */
					for (r = 0; r < n; r++)
						if (kind == 2) {
							s[r] = ar_input(r, types[t], count);
							d[r] = c & 1 ? s[r] : malloc(count * 8);
						} else
							coll_make(&cb[r], r, n, kind, types[t], count, c & 1);
					ncclGroupStart();
					for (r = 0; r < n && res == ncclSuccess; r++)
						res = kind == 2 ? ncclAllReduce(s[r], d[r], count, types[t],
										(ncclRedOp_t)op, comms[r], NULL)
								: coll_call(&cb[r], kind, types[t], op, count,
									    comms[r]);
					EXPECT(ncclGroupEnd() == ncclSuccess && res == ncclSuccess,
					       "grouped: kind %d type %d op %d count %zu: %s", kind, types[t],
					       op, count, ncclGetErrorString(res));
					sync(NULL);
					for (r = 0; r < n; r++) {
						if (kind == 2) {
							ar_check(r, n, types[t], op, count, d[r]);
							if (d[r] != s[r])
								free(d[r]);
							free(s[r]);
						} else {
							coll_check(&cb[r], r, n, kind, types[t], op, count, c & 1);
							free(cb[r].b);
							free(cb[r].w);
						}
					}
					calls++;
				}
			}
	for (r = 0; r < n; r++)
		EXPECT(ncclCommDestroy(comms[r]) == ncclSuccess, "rank %d: ncclCommDestroy failed", r);
	if (!bad)
		printf("grouped: %s ok, %d grouped calls of %d ranks\n", what, calls, n);
	return bad;
}

/* One grouped float sum of count 7 on every rank of comms, checked. */
static void group_sum(ncclComm_t *comms, int n, int (*sync)(void *))
{
	double *x[64];
	ncclResult_t res = ncclSuccess;
	int r;

	for (r = 0; r < n; r++)
		x[r] = ar_input(r, ncclFloat32, 7);
	ncclGroupStart();
	for (r = 0; r < n && res == ncclSuccess; r++)
		res = ncclAllReduce(x[r], x[r], 7, ncclFloat32, ncclSum, comms[r], NULL);
	EXPECT(ncclGroupEnd() == ncclSuccess && res == ncclSuccess, "teardown: grouped allreduce: %s",
	       ncclGetErrorString(res));
	sync(NULL);
	for (r = 0; r < n; r++) {
		ar_check(r, n, ncclFloat32, ncclSum, 7, x[r]);
		free(x[r]);
	}
}

static int nthreads(void)
{
	char line[200];
	int k = -1;
	FILE *f = fopen("/proc/self/status", "r");

	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, "Threads:", 8))
			k = atoi(line + 8);
	if (f)
		fclose(f);
	return k;
}

/*
 * grouped:teardown: one thread's communicators made and torn down as a
 * framework's watchdog or nccl-tests may.  A group ended by
 * ncclGroupSimulateEnd leaves the next group's set-up to that group's end;
 * ranks made there by ncclCommInitRankConfig are set up at its end; the
 * thread's CUDA context stays the caller's through ncclCommGetAsyncError,
 * ncclCommDestroy and ncclCommAbort; a clique whose ranks are destroyed
 * and aborted leaves no backend behind (with PENNY_FAKE_ASYNC=1 the fake
 * plugin's backends each have a thread); ncclCommInitAll inside a group is
 * set up at the group's end.
 */
static int teardown(int n, ncclUniqueId id)
{
	void *cu = dlopen("libcuda.so.1", RTLD_NOW), *c = NULL;
	int (*sync)(void *) = cu ? (int (*)(void *))dlsym(cu, "cuStreamSynchronize") : NULL;
	int (*set)(void *) = cu ? (int (*)(void *))dlsym(cu, "cuCtxSetCurrent") : NULL;
	int (*cur)(void **) = cu ? (int (*)(void **))dlsym(cu, "cuCtxGetCurrent") : NULL;
	ncclConfig_t cfg = { sizeof(cfg), NCCL_CONFIG_MAGIC, 22809, 1 };
	ncclSimInfo_t si = { sizeof(si), NCCL_SIM_INFO_MAGIC, 22809, 0 };
	ncclComm_t comms[64];
	ncclResult_t ae;
	int r, k, t0;

	if (!sync || !set || !cur) {
		printf("teardown: no cuStreamSynchronize, cuCtxSetCurrent or cuCtxGetCurrent\n");
		return 1;
	}
	ncclGroupStart();
	EXPECT(ncclGroupSimulateEnd(&si) == ncclSuccess, "teardown: ncclGroupSimulateEnd failed");
	ncclGroupStart();
	for (r = 0; r < n; r++)
		EXPECT(ncclCommInitRankConfig(&comms[r], n, id, r, &cfg) == ncclSuccess,
		       "teardown: rank %d: ncclCommInitRankConfig failed", r);
	EXPECT(ncclGroupEnd() == ncclSuccess, "teardown: ncclGroupEnd after the ranks failed");
	if (bad)
		return 1;
	set((void *)(uintptr_t)0x5150);
	group_sum(comms, n, sync);
	for (r = 0; r < n; r++)
		EXPECT(ncclCommGetAsyncError(comms[r], &ae) == ncclSuccess && ae == ncclSuccess,
		       "teardown: rank %d: async error %d", r, ae);
	cur(&c);
	EXPECT(c == (void *)(uintptr_t)0x5150, "teardown: context %p after the calls", c);
	for (r = 0; r < n; r++) {
		EXPECT((r ? ncclCommAbort : ncclCommDestroy)(comms[r]) == ncclSuccess,
		       "teardown: rank %d: %s failed", r, r ? "abort" : "destroy");
		cur(&c);
		EXPECT(c == (void *)(uintptr_t)0x5150, "teardown: context %p after rank %d's %s", c,
		       r, r ? "abort" : "destroy");
	}
	t0 = nthreads();
	for (k = 0; k < 3 && !bad; k++) {
		EXPECT(ncclCommInitAll(comms, n, NULL) == ncclSuccess, "teardown: ncclCommInitAll failed");
		if (bad)
			break;
		group_sum(comms, n, sync);
		/* rank 0 destroyed before the others' aborts, or after (odd rounds) */
		if (!(k & 1))
			ncclCommDestroy(comms[0]);
		for (r = 1; r < n; r++)
			ncclCommAbort(comms[r]);
		if (k & 1)
			ncclCommDestroy(comms[0]);
		EXPECT(nthreads() == t0, "teardown: round %d: %d threads, %d before", k, nthreads(), t0);
	}
	/* ncclCommInitAll inside a group: set up at the group's end (NCCL
	 * makes them there); its allreduces penny's */
	ncclGroupStart();
	EXPECT(ncclCommInitAll(comms, n, NULL) == ncclSuccess, "teardown: ncclCommInitAll in a group");
	EXPECT(ncclGroupEnd() == ncclSuccess, "teardown: ncclGroupEnd after ncclCommInitAll");
	if (!bad) {
		group_sum(comms, n, sync);
		for (r = 0; r < n; r++)
			ncclCommDestroy(comms[r]);
	}
	if (!bad)
		printf("grouped: teardown ok, %d ranks\n", n);
	return bad;
}

/*
 * The careless or unusual framework (tests/cli/t0611-interposer-misuse.sh):
 * every scenario below gets NCCL's answer from the interposer, or penny's
 * right result, and never a crash, a hang or a wrong ncclResult_t.
 */

/* NULL communicators to every entry point that takes one. */
static int nullcomm(ncclComm_t comm, int rank, int n)
{
	float x[4] = { 1, 2, 3, 4 };
	const ncclResult_t inval = ncclInvalidArgument;
	ncclComm_t sub = NULL;
	ncclUniqueId gid;
	ncclRedOp_t pre;
	ncclResult_t ae;
	double scale = 2;
	int v = -7, calls;

	calls = one(comm, rank, n, ncclFloat32, ncclSum, 100, 0, 0);
	ANSWER(ncclAllReduce(x, x, 4, ncclFloat32, ncclSum, NULL, NULL), inval, "allreduce, NULL comm");
	ANSWER(ncclReduceScatter(x, x, 1, ncclFloat32, ncclSum, NULL, NULL), inval,
	       "reduce-scatter, NULL comm");
	ANSWER(ncclAllGather(x, x, 1, ncclFloat32, NULL, NULL), inval, "all-gather, NULL comm");
	ANSWER(ncclBroadcast(x, x, 4, ncclFloat32, 0, NULL, NULL), inval, "broadcast, NULL comm");
	ANSWER(ncclReduce(x, x, 4, ncclFloat32, ncclSum, 0, NULL, NULL), inval, "reduce, NULL comm");
	ANSWER(ncclSend(x, 4, ncclFloat32, 0, NULL, NULL), inval, "send, NULL comm");
	ANSWER(ncclRecv(x, 4, ncclFloat32, 0, NULL, NULL), inval, "recv, NULL comm");
	ANSWER(ncclCommCount(NULL, &v), inval, "ncclCommCount(NULL)");
	ANSWER(ncclCommCuDevice(NULL, &v), inval, "ncclCommCuDevice(NULL)");
	ANSWER(ncclCommUserRank(NULL, &v), inval, "ncclCommUserRank(NULL)");
	ANSWER(ncclCommCount(comm, NULL), inval, "ncclCommCount(comm, NULL)");
	ANSWER(ncclCommCuDevice(comm, NULL), inval, "ncclCommCuDevice(comm, NULL)");
	ANSWER(ncclCommUserRank(comm, NULL), inval, "ncclCommUserRank(comm, NULL)");
	EXPECT(v == -7, "rank %d: a NULL communicator's count, device or rank wrote %d", rank, v);
	ANSWER(ncclCommGetAsyncError(NULL, &ae), inval, "ncclCommGetAsyncError(NULL)");
	ANSWER(ncclCommGetAsyncError(comm, NULL), inval, "ncclCommGetAsyncError(comm, NULL)");
	EXPECT(ncclGetLastError(NULL) != NULL, "rank %d: ncclGetLastError(NULL) is NULL", rank);
	ANSWER(ncclCommSplit(NULL, 0, rank, &sub, NULL), inval, "ncclCommSplit(NULL)");
	ANSWER(ncclCommShrink(NULL, NULL, 0, &sub, NULL, 0), inval, "ncclCommShrink(NULL)");
	ANSWER(ncclCommGetUniqueId(NULL, &gid), inval, "ncclCommGetUniqueId(NULL)");
	ANSWER(ncclRedOpCreatePreMulSum(&pre, &scale, ncclFloat64, ncclScalarHostImmediate, NULL),
	       inval, "ncclRedOpCreatePreMulSum(NULL comm)");
	ANSWER(ncclRedOpDestroy(ncclSum, NULL), inval, "ncclRedOpDestroy(NULL comm)");
	ANSWER(ncclCommFinalize(NULL), inval, "ncclCommFinalize(NULL)");
	/* NCCL: nothing to destroy or abort */
	ANSWER(ncclCommDestroy(NULL), ncclSuccess, "ncclCommDestroy(NULL)");
	ANSWER(ncclCommAbort(NULL), ncclSuccess, "ncclCommAbort(NULL)");
	EXPECT(sub == NULL, "rank %d: a split of NULL made %p", rank, (void *)sub);
	/* the communicator is as it was */
	return calls + one(comm, rank, n, ncclFloat64, ncclSum, 1000, 1, 0);
}

/* A split of comm (every rank, its order) with one allreduce on it. */
static ncclComm_t split_one(ncclComm_t comm, int rank, int n, int *calls)
{
	ncclComm_t sub = NULL;

	EXPECT(ncclCommSplit(comm, 0, rank, &sub, NULL) == ncclSuccess && sub,
	       "rank %d: ncclCommSplit failed", rank);
	if (sub)
		*calls += one(sub, rank, n, ncclFloat32, ncclSum, 100, 0, 0);
	return sub;
}

/* Destroyed communicators used again: a second destroy, an abort then a
 * destroy, calls on them (NCCL's answers: the fake's is ncclInvalidArgument,
 * never penny's run); finalize then destroy, as it should be. */
static int twice(ncclComm_t comm, int rank, int n)
{
	const ncclResult_t inval = ncclInvalidArgument;
	float x[4] = { 1, 2, 3, 4 };
	ncclResult_t ae;
	ncclComm_t sub;
	int calls = 0, v;

	calls += one(comm, rank, n, ncclFloat32, ncclSum, 100, 0, 0);
	if ((sub = split_one(comm, rank, n, &calls))) {
		ANSWER(ncclCommDestroy(sub), ncclSuccess, "ncclCommDestroy");
		ANSWER(ncclCommDestroy(sub), inval, "a second ncclCommDestroy");
		ANSWER(ncclAllReduce(x, x, 4, ncclFloat32, ncclSum, sub, NULL), inval,
		       "an allreduce on a destroyed communicator");
		ANSWER(ncclReduceScatter(x, x, 1, ncclFloat32, ncclSum, sub, NULL), inval,
		       "a reduce-scatter on a destroyed communicator");
		ANSWER(ncclAllGather(x, x, 1, ncclFloat32, sub, NULL), inval,
		       "an all-gather on a destroyed communicator");
		ANSWER(ncclCommGetAsyncError(sub, &ae), inval, "ncclCommGetAsyncError, destroyed");
		ANSWER(ncclCommCount(sub, &v), inval, "ncclCommCount, destroyed");
		ANSWER(ncclCommFinalize(sub), inval, "ncclCommFinalize, destroyed");
		ANSWER(ncclCommAbort(sub), inval, "ncclCommAbort, destroyed");
	}
	if ((sub = split_one(comm, rank, n, &calls))) {
		ANSWER(ncclCommAbort(sub), ncclSuccess, "ncclCommAbort");
		ANSWER(ncclCommDestroy(sub), inval, "ncclCommDestroy after ncclCommAbort");
		ANSWER(ncclCommAbort(sub), inval, "a second ncclCommAbort");
	}
	if ((sub = split_one(comm, rank, n, &calls))) {
		ANSWER(ncclCommFinalize(sub), ncclSuccess, "ncclCommFinalize");
		ANSWER(ncclCommDestroy(sub), ncclSuccess, "ncclCommDestroy after ncclCommFinalize");
	}
	return calls + one(comm, rank, n, ncclFloat64, ncclSum, 1000, 1, 0);
}

/* Communicators asked for with bad arguments: NCCL's answers; none made. */
static int badinit(ncclComm_t comm, int rank, int n, ncclUniqueId id)
{
	const ncclResult_t inval = ncclInvalidArgument;
	ncclConfig_t cfg = { sizeof(cfg), NCCL_CONFIG_MAGIC, 22809, 1 };
	ncclComm_t c = NULL, all[2] = { NULL, NULL };
	ncclUniqueId junk;

	memset(&junk, 0x5a, sizeof(junk));
	ANSWER(ncclGetUniqueId(NULL), inval, "ncclGetUniqueId(NULL)");
	ANSWER(ncclCommInitRank(NULL, n, id, rank), inval, "ncclCommInitRank(NULL)");
	ANSWER(ncclCommInitRank(&c, n, id, -1), inval, "ncclCommInitRank, rank -1");
	ANSWER(ncclCommInitRank(&c, n, id, n), inval, "ncclCommInitRank, rank nranks");
	ANSWER(ncclCommInitRank(&c, 0, id, 0), inval, "ncclCommInitRank, 0 ranks");
	ANSWER(ncclCommInitRank(&c, -1, id, 0), inval, "ncclCommInitRank, -1 ranks");
	ANSWER(ncclCommInitRank(&c, n, junk, rank), inval, "ncclCommInitRank, a junk id");
	ANSWER(ncclCommInitRankConfig(&c, n, id, n + 5, &cfg), inval,
	       "ncclCommInitRankConfig, rank past nranks");
	cfg.blocking = 5;
	ANSWER(ncclCommInitRankConfig(&c, n, id, rank, &cfg), inval,
	       "ncclCommInitRankConfig, blocking 5");
	ANSWER(ncclCommSplit(comm, 0, rank, &c, &cfg), inval, "ncclCommSplit, blocking 5");
	cfg.blocking = 1;
	cfg.magic = 0x12345678;
	ANSWER(ncclCommInitRankConfig(&c, n, id, rank, &cfg), inval,
	       "ncclCommInitRankConfig, a config not from NCCL_CONFIG_INITIALIZER");
	/* more ranks than come (NCCL_CALLER_MORE_RANKS: a fresh id, from the
	 * parent): the last never does (NCCL: an error once it gives up) */
	if (getenv("NCCL_CALLER_MORE_RANKS")) {
		ncclResult_t r = ncclCommInitRank(&c, n + 1, more_id, rank);

		EXPECT(r != ncclSuccess && r != ncclInProgress,
		       "rank %d: ncclCommInitRank of %d ranks, %d came: %d", rank, n + 1, n, r);
	}
	ANSWER(ncclCommInitAll(NULL, 2, NULL), inval, "ncclCommInitAll(NULL)");
	ANSWER(ncclCommInitAll(all, 0, NULL), inval, "ncclCommInitAll, 0 devices");
	ANSWER(ncclCommInitAll(all, -1, NULL), inval, "ncclCommInitAll, -1 devices");
	/* in a group: refused at once, nothing made at its end */
	ncclGroupStart();
	ANSWER(ncclCommInitRank(&c, n, id, -1), inval, "ncclCommInitRank in a group, rank -1");
	ANSWER(ncclGroupEnd(), ncclSuccess, "ncclGroupEnd after a refused ncclCommInitRank");
	/* the communicator made before is as it was */
	return one(comm, rank, n, ncclFloat32, ncclSum, 100, 0, 0);
}

/* ncclGroupEnd without ncclGroupStart, groups 10000 deep: NCCL's answers;
 * then the first allreduce outside a group is penny's (its set-up). */
static int groups(ncclComm_t comm, int rank, int n)
{
	int i, fails = 0, calls;
	double *in_deep;

	ANSWER(ncclGroupEnd(), ncclInvalidUsage, "ncclGroupEnd without ncclGroupStart");
	ANSWER(ncclGroupSimulateEnd(NULL), ncclInvalidUsage,
	       "ncclGroupSimulateEnd without ncclGroupStart");
	for (i = 0; i < 10000; i++)
		fails += ncclGroupStart() != ncclSuccess;
	/* inside (NCCL's, or penny's where the ranks were made by one thread):
	 * run at the outermost end */
	in_deep = ar_input(rank, ncclFloat32, 100);
	fails += ncclAllReduce(in_deep, in_deep, 100, ncclFloat32, ncclSum, comm, NULL) != ncclSuccess;
	for (i = 0; i < 10000; i++)
		fails += ncclGroupEnd() != ncclSuccess;
	ar_check(rank, n, ncclFloat32, ncclSum, 100, in_deep);
	free(in_deep);
	calls = 1;
	EXPECT(!fails, "rank %d: %d of 20000 nested ncclGroupStart and ncclGroupEnd failed", rank,
	       fails);
	ANSWER(ncclGroupEnd(), ncclInvalidUsage, "an extra ncclGroupEnd");
	calls += one(comm, rank, n, ncclFloat32, ncclSum, 100, 0, 0); /* penny's */
	calls += one(comm, rank, n, ncclFloat32, ncclSum, 100, 1, 1); /* penny's, in a group */
	ANSWER(ncclGroupEnd(), ncclInvalidUsage, "one more extra ncclGroupEnd");
	return calls + one(comm, rank, n, ncclFloat64, ncclMax, 1000, 0, 0);
}

/* Counts, buffers, types and ops NCCL refuses or takes as nothing. */
static int counts(ncclComm_t comm, int rank, int n)
{
	const ncclResult_t inval = ncclInvalidArgument;
	float x[8] = { 1, 2, 3, 4, 5, 6, 7, 8 }, y[8] = { -1, -1, -1, -1, -1, -1, -1, -1 };
	static const size_t huge[] = { SIZE_MAX / 2, SIZE_MAX, SIZE_MAX / 16, SIZE_MAX / 16 + 1,
				       SIZE_MAX / 64, (size_t)1 << 40 };
	unsigned i;
	int calls, k;

	calls = one(comm, rank, n, ncclFloat32, ncclSum, 100, 0, 0);
	ANSWER(ncclAllReduce(x, y, 0, ncclFloat32, ncclSum, comm, NULL), ncclSuccess, "count 0");
	ANSWER(ncclAllReduce(NULL, NULL, 0, ncclFloat32, ncclSum, comm, NULL), ncclSuccess,
	       "count 0, NULL buffers");
	ANSWER(ncclReduceScatter(x, y, 0, ncclFloat32, ncclSum, comm, NULL), ncclSuccess,
	       "reduce-scatter, count 0");
	ANSWER(ncclAllGather(x, y, 0, ncclFloat32, comm, NULL), ncclSuccess, "all-gather, count 0");
	for (k = 0; k < 8; k++)
		EXPECT(y[k] == -1, "rank %d: a call of count 0 wrote element %d: %g", rank, k, y[k]);
	for (i = 0; i < sizeof(huge) / sizeof(huge[0]); i++) {
		char what[80];

		snprintf(what, sizeof(what), "count %zu", huge[i]);
		ANSWER(ncclAllReduce(x, y, huge[i], ncclFloat32, ncclSum, comm, NULL), inval, what);
		ANSWER(ncclAllReduce(x, x, huge[i], ncclInt8, ncclMax, comm, NULL), inval, what);
		ANSWER(ncclReduceScatter(x, y, huge[i], ncclFloat32, ncclSum, comm, NULL), inval, what);
		ANSWER(ncclAllGather(x, y, huge[i], ncclFloat32, comm, NULL), inval, what);
	}
	ANSWER(ncclAllReduce(NULL, y, 4, ncclFloat32, ncclSum, comm, NULL), inval, "NULL send");
	ANSWER(ncclAllReduce(x, NULL, 4, ncclFloat32, ncclSum, comm, NULL), inval, "NULL recv");
	ANSWER(ncclReduceScatter(NULL, y, 2, ncclFloat32, ncclSum, comm, NULL), inval,
	       "reduce-scatter, NULL send");
	ANSWER(ncclAllGather(x, NULL, 2, ncclFloat32, comm, NULL), inval, "all-gather, NULL recv");
	ANSWER(ncclAllReduce(x, y, 4, (ncclDataType_t)99, ncclSum, comm, NULL), inval, "type 99");
	ANSWER(ncclAllReduce(x, y, 4, (ncclDataType_t)-1, ncclSum, comm, NULL), inval, "type -1");
	ANSWER(ncclAllReduce(x, y, 4, ncclFloat32, (ncclRedOp_t)99, comm, NULL), inval, "op 99");
	ANSWER(ncclAllReduce(x, y, 4, ncclFloat32, (ncclRedOp_t)-1, comm, NULL), inval, "op -1");
	ANSWER(ncclAllReduce(x, y, 4, ncclFloat32, ncclNumOps, comm, NULL), inval,
	       "op ncclNumOps (no PreMulSum made)");
	ANSWER(ncclReduceScatter(x, y, 2, (ncclDataType_t)99, ncclSum, comm, NULL), inval,
	       "reduce-scatter, type 99");
	ANSWER(ncclReduceScatter(x, y, 2, ncclFloat32, (ncclRedOp_t)99, comm, NULL), inval,
	       "reduce-scatter, op 99");
	ANSWER(ncclAllGather(x, y, 2, (ncclDataType_t)99, comm, NULL), inval, "all-gather, type 99");
	for (k = 0; k < 8; k++)
		EXPECT(y[k] == -1, "rank %d: a refused call wrote element %d: %g", rank, k, y[k]);
	/* nothing above broke the communicator */
	return calls + one(comm, rank, n, ncclFloat64, ncclSum, 1000, 1, 0);
}

/* A split the last rank leaves (NCCL_SPLIT_NOCOLOR), the others in reverse
 * order, non-blocking: a call on it before it is made is NCCL's to refuse;
 * once made, penny's. */
static int oddsplit(ncclComm_t comm, int rank, int n)
{
	ncclConfig_t cfg = { sizeof(cfg), NCCL_CONFIG_MAGIC, 22809, 0 };
	float x[4] = { 1, 2, 3, 4 };
	ncclComm_t sub = NULL;
	ncclResult_t r, ae;
	int calls, sr = -1, sn = 0;

	calls = one(comm, rank, n, ncclFloat32, ncclSum, 100, 0, 0);
	r = ncclCommSplit(comm, rank == n - 1 ? NCCL_SPLIT_NOCOLOR : 0, n - rank, &sub, &cfg);
	if (rank == n - 1) {
		EXPECT(r == ncclSuccess && !sub, "rank %d: a split without color: %d, %p", rank, r,
		       (void *)sub);
		return calls;
	}
	EXPECT((r == ncclSuccess || r == ncclInProgress) && sub, "rank %d: ncclCommSplit: %d", rank,
	       r);
	if (!sub)
		return calls;
	if (r == ncclInProgress)
		ANSWER(ncclAllReduce(x, x, 4, ncclFloat32, ncclSum, sub, NULL), ncclInvalidArgument,
		       "an allreduce on a split in progress");
	while (ncclCommGetAsyncError(sub, &ae) == ncclSuccess && ae == ncclInProgress)
		;
	EXPECT(ae == ncclSuccess, "rank %d: the split is %d once made", rank, ae);
	ncclCommCount(sub, &sn);
	ncclCommUserRank(sub, &sr);
	EXPECT(sn == n - 1 && sr == n - 2 - rank, "rank %d: split rank %d of %d", rank, sr, sn);
	calls += one(sub, sr, sn, ncclFloat64, ncclSum, 1000, 1, 0);
	calls += one(sub, sr, sn, ncclFloat32, ncclMax, 100, 0, 0);
	EXPECT(ncclCommGetAsyncError(sub, &ae) == ncclSuccess && ae == ncclSuccess,
	       "rank %d: the split's async error %d", rank, ae);
	EXPECT(ncclCommDestroy(sub) == ncclSuccess, "rank %d: destroying the split failed", rank);
	return calls;
}

struct side {
	ncclComm_t comm;
	int rank, n, calls;
};

static void *side_main(void *arg)
{
	struct side *s = arg;

	s->calls = one(s->comm, s->rank, s->n, ncclFloat32, ncclSum, 100, 0, 0);
	return NULL;
}

/* A second thread's calls while the first is inside a group: groups are
 * a thread's own (NCCL's), so the second thread's calls are outside one. */
static int secondthread(ncclComm_t comm, int rank, int n)
{
	struct side s = { comm, rank, n, 0 };
	pthread_t t;
	int calls = 0, k;

	for (k = 0; k < 2; k++) {
		double *x = ar_input(rank, ncclFloat64, 1000);

		ANSWER(ncclGroupStart(), ncclSuccess, "ncclGroupStart");
		if (k)	/* one grouped call first: penny's, at the group's end */
			ANSWER(ncclAllReduce(x, x, 1000, ncclFloat64, ncclSum, comm, NULL), ncclSuccess,
			       "an allreduce in the group");
		if (pthread_create(&t, NULL, side_main, &s)) {
			printf("rank %d: no thread\n", rank);
			exit(2);
		}
		pthread_join(t, NULL);
		calls += s.calls;
		ANSWER(ncclGroupEnd(), ncclSuccess, "ncclGroupEnd after the other thread's call");
		if (k)
			ar_check(rank, n, ncclFloat64, ncclSum, 1000, x);
		calls += k;
		free(x);
	}
	return calls + one(comm, rank, n, ncclFloat32, ncclMax, 100, 0, 0);
}

/* A watchdog polls ncclCommGetAsyncError (PyTorch's does) while its rank
 * calls and destroys the communicator: each answer is "no error", or,
 * once it is destroyed, NCCL's (the fake's ncclInvalidArgument). */
struct dog {
	ncclComm_t comm;
	int stop, polls, bad;
	ncclResult_t what;
};

static void *dog_main(void *arg)
{
	struct dog *d = arg;
	ncclResult_t r, ae;

	while (!__atomic_load_n(&d->stop, __ATOMIC_ACQUIRE)) {
		ae = ncclSuccess;
		r = ncclCommGetAsyncError(d->comm, &ae);
		d->polls++;
		if ((r != ncclSuccess || ae != ncclSuccess) && r != ncclInvalidArgument && !d->bad++)
			d->what = r != ncclSuccess ? r : ae;
	}
	return NULL;
}

static int watchdog(ncclComm_t comm, int rank, int n)
{
	struct dog d = { NULL, 0, 0, 0, ncclSuccess };
	pthread_t t;
	ncclComm_t sub;
	int calls = 0, k;

	sub = split_one(comm, rank, n, &calls);
	if (!sub)
		return calls;
	d.comm = sub;
	if (pthread_create(&t, NULL, dog_main, &d)) {
		printf("rank %d: no thread\n", rank);
		exit(2);
	}
	for (k = 0; k < 20; k++)
		calls += one(sub, rank, n, ncclFloat32, ncclSum, 100 + k, k & 1, 0);
	EXPECT(ncclCommDestroy(sub) == ncclSuccess, "rank %d: ncclCommDestroy under the watchdog",
	       rank);
	__atomic_store_n(&d.stop, 1, __ATOMIC_RELEASE);
	pthread_join(t, NULL);
	EXPECT(!d.bad, "rank %d: the watchdog got %d (%d bad answers of %d)", rank, d.what, d.bad,
	       d.polls);
	return calls + one(comm, rank, n, ncclFloat32, ncclSum, 100, 0, 0);
}

/* A watchdog aborts the communicator while its rank waits inside the first
 * allreduce for the last rank, which comes late (NCCL_CALLER_LATE s, 20)
 * or never (NCCL_CALLER_LATE=never): the call returns an error at once,
 * not when NCCL or penny give up waiting; then the abort returns. */
struct abortdog {
	ncclComm_t comm;
	ncclResult_t r;
};

static void *abortdog_main(void *arg)
{
	struct abortdog *a = arg;

	sleep(1);
	a->r = ncclCommAbort(a->comm);
	return NULL;
}

static double secs(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + t.tv_nsec / 1e9;
}

static int abortwait(ncclComm_t comm, int rank, int n)
{
	const char *late = getenv("NCCL_CALLER_LATE");
	struct abortdog a = { comm, ncclInternalError };
	float x[4] = { 1, 2, 3, 4 };
	pthread_t t;
	ncclResult_t r;
	double t0;

	if (rank == n - 1) {
		if (late && !strcmp(late, "never"))
			pause();
		sleep(late ? (unsigned)atoi(late) : 20);
		r = ncclAllReduce(x, x, 4, ncclFloat32, ncclSum, comm, NULL);
		printf("rank %d: late allreduce: %d\n", rank, r);
		ncclCommAbort(comm);
		return 0;
	}
	if (pthread_create(&t, NULL, abortdog_main, &a)) {
		printf("rank %d: no thread\n", rank);
		exit(2);
	}
	t0 = secs();
	r = ncclAllReduce(x, x, 4, ncclFloat32, ncclSum, comm, NULL);
	EXPECT(r != ncclSuccess, "rank %d: an allreduce without its last rank succeeded", rank);
	EXPECT(secs() - t0 < 5, "rank %d: the allreduce returned %.1f s after it began (aborted at 1 s)",
	       rank, secs() - t0);
	pthread_join(t, NULL);
	EXPECT(a.r == ncclSuccess, "rank %d: ncclCommAbort gave %d", rank, a.r);
	EXPECT(secs() - t0 < 5, "rank %d: the abort returned %.1f s after the allreduce began", rank,
	       secs() - t0);
	if (!bad)
		printf("rank %d: aborted after %.1f s\n", rank, secs() - t0);
	return 0;
}

/*
 * Penny's failures in NCCL's terms (tests/cli/t0612-interposer-round3.sh):
 * each call's result is what NCCL answers in the same situation, the
 * communicator's async error the same, and ncclGetLastError (of the
 * communicator, and of NULL as frameworks ask it) penny's line until a
 * call of NCCL's fails after it.
 */
static void said_penny(ncclComm_t comm, int rank, const char *what)
{
	const char *mine = ncclGetLastError(comm), *any = ncclGetLastError(NULL);

	EXPECT(mine && strstr(mine, what), "rank %d: ncclGetLastError(comm) is '%s', not %s", rank,
	       mine ? mine : "(null)", what);
	EXPECT(any && strstr(any, what), "rank %d: ncclGetLastError(NULL) is '%s', not %s", rank,
	       any ? any : "(null)", what);
	printf("rank %d: last error: %s\n", rank, any ? any : "(null)");
	/* a call NCCL refuses after it: NCCL's last error is the newer */
	ncclAllReduce(NULL, NULL, 4, ncclFloat32, ncclSum, NULL, NULL);
	any = ncclGetLastError(NULL);
	EXPECT(any && !strstr(any, "penny"), "rank %d: ncclGetLastError(NULL) after NCCL's error: '%s'",
	       rank, any ? any : "(null)");
}

/* The result of a failed call and the async error after it, said; then
 * the last errors checked and the communicator aborted. */
static void failed_call(ncclComm_t comm, int rank, const char *name, ncclResult_t r,
			const char *what)
{
	ncclResult_t ae = ncclSuccess, ar;

	ar = ncclCommGetAsyncError(comm, &ae);
	printf("rank %d: %s %d async %d %d\n", rank, name, r, ar, ae);
	EXPECT(r != ncclSuccess && r != ncclInProgress, "rank %d: %s gave %d", rank, name, r);
	EXPECT(ar == ncclSuccess && ae == r, "rank %d: async error %d (%d) after %s gave %d", rank, ae,
	       ar, name, r);
	said_penny(comm, rank, what);
	EXPECT(ncclCommAbort(comm) == ncclSuccess, "rank %d: abort failed", rank);
}

/* setupfail, setupwait: the first allreduce fails in penny's set-up (the
 * test makes it fail: NCCL_CALLER_LEAVE, the last rank leaves first). */
static int setupfail(ncclComm_t comm, int rank, int n)
{
	float x[4] = { 1, 2, 3, 4 };

	if (getenv("NCCL_CALLER_LEAVE") && rank == n - 1)
		_exit(0);
	failed_call(comm, rank, "setupfail", ncclAllReduce(x, x, 4, ncclFloat32, ncclSum, comm, NULL),
		    "penny's set-up on NCCL's communicator failed");
	return 0;
}

/* callfail: one allreduce of penny's, then the last rank leaves: the next
 * fails in penny's call (the test plugin's host exchange). */
static int callfail(ncclComm_t comm, int rank, int n)
{
	float x[4] = { 1, 2, 3, 4 };
	int calls = one(comm, rank, n, ncclFloat32, ncclSum, 100, 0, 0);

	if (rank == n - 1)
		_exit(bad);
	failed_call(comm, rank, "callfail", ncclAllReduce(x, x, 4, ncclFloat32, ncclSum, comm, NULL),
		    "penny's allreduce failed");
	return calls;
}

/* dogerr: a watchdog polls ncclCommGetAsyncError and ncclGetLastError while
 * its rank calls, and a kernel's error comes (PENNY_FAKE_ASYNC_ERROR=1): a
 * data race on the error and its line, if any, is TSan's to find. */
static void *errdog_main(void *arg)
{
	struct dog *d = arg;
	ncclResult_t ae;
	const char *s;

	while (!__atomic_load_n(&d->stop, __ATOMIC_ACQUIRE)) {
		ae = ncclSuccess;
		if (ncclCommGetAsyncError(d->comm, &ae) == ncclSuccess && ae == ncclRemoteError)
			__atomic_store_n(&d->what, ae, __ATOMIC_RELAXED);
		s = ncclGetLastError(NULL);
		d->polls += s && strstr(s, "timed out") ? 1 : 0;
	}
	return NULL;
}

static int dogerr(ncclComm_t comm, int rank, int n)
{
	struct dog d = { comm, 0, 0, 0, ncclSuccess };
	ncclResult_t ae = ncclSuccess;
	const char *s = NULL;
	pthread_t t;
	int calls;
	double t0;

	calls = one(comm, rank, n, ncclFloat32, ncclSum, 100, 0, 0);
	if (pthread_create(&t, NULL, errdog_main, &d)) {
		printf("rank %d: no thread\n", rank);
		exit(2);
	}
	/* the line asked for while the watchdog finds the error and writes it */
	for (t0 = secs(); secs() - t0 < 10;) {
		s = ncclGetLastError(comm);
		if (s && strstr(s, "timed out"))
			break;
	}
	EXPECT(s && strstr(s, "timed out"), "rank %d: last error '%s'", rank, s ? s : "(null)");
	for (t0 = secs(); !__atomic_load_n(&d.what, __ATOMIC_RELAXED) && secs() - t0 < 10;)
		sched_yield();
	__atomic_store_n(&d.stop, 1, __ATOMIC_RELEASE);
	pthread_join(t, NULL);
	EXPECT(ncclCommGetAsyncError(comm, &ae) == ncclSuccess && ae == ncclRemoteError,
	       "rank %d: async error %d after a kernel's timeout", rank, ae);
	/* NCCL answers a call on a communicator with an error with that error */
	{
		float x[4] = { 1, 2, 3, 4 };

		ANSWER(ncclAllReduce(x, x, 4, ncclFloat32, ncclSum, comm, NULL), ncclRemoteError,
		       "an allreduce after the error");
	}
	EXPECT(ncclCommAbort(comm) == ncclSuccess, "rank %d: abort failed", rank);
	return calls;
}

/* groupleak: threads that each make communicators inside a group, destroy
 * them and end without ncclGroupEnd (the interposer's list of the group's
 * communicators must go with the thread); the heap grows by what the
 * fake NCCL keeps of a destroyed communicator alone. */
static void *leaker_main(void *arg)
{
	ncclComm_t c[2] = { NULL, NULL };
	int *made = arg;

	ncclGroupStart();
	*made = ncclCommInitAll(c, 2, NULL) == ncclSuccess;
	if (*made) {
		ncclCommDestroy(c[0]);
		ncclCommDestroy(c[1]);
	}
	return NULL;	/* inside the group */
}

static int groupleak(ncclComm_t comm, int rank, int n)
{
	size_t before = 0, after;
	pthread_t t;
	int k, made = 0, rounds = 300, from = 50;

	for (k = 0; k < rounds; k++) {
		if (k == from)
			before = mallinfo2().uordblks;
		if (pthread_create(&t, NULL, leaker_main, &made) || pthread_join(t, NULL) || !made) {
			printf("rank %d: thread %d: no thread or no communicators\n", rank, k);
			exit(2);
		}
	}
	after = mallinfo2().uordblks;
	printf("rank %d: %ld heap bytes a thread\n", rank,
	       (long)(after - before) / (rounds - from));
	EXPECT(after < before + (size_t)(rounds - from) * 1500,
	       "rank %d: the heap grew %zu bytes in %d threads", rank, after - before, rounds - from);
	return one(comm, rank, n, ncclFloat32, ncclSum, 100, 0, 0);
}

/* groupdestroy: communicators made in a group and destroyed before its
 * end: nothing asks NCCL about them at the end (PENNY_FAKE_NCCL_STRICT=1
 * ends the process if anything does: the real NCCL's are freed). */
static int groupdestroy(ncclComm_t comm, int rank, int n)
{
	ncclComm_t c[2] = { NULL, NULL };

	ncclGroupStart();
	ANSWER(ncclCommInitAll(c, 2, NULL), ncclSuccess, "ncclCommInitAll in a group");
	ANSWER(ncclCommDestroy(c[0]), ncclSuccess, "ncclCommDestroy in the group");
	ANSWER(ncclCommDestroy(c[1]), ncclSuccess, "ncclCommDestroy in the group");
	ANSWER(ncclGroupEnd(), ncclSuccess, "ncclGroupEnd after the destroys");
	return one(comm, rank, n, ncclFloat32, ncclSum, 100, 0, 0);
}

/* groupteardown: a split penny runs destroyed inside a group: penny's
 * release runs no host exchange there (PENNY_FAKE_FINI_BARRIER=1: the
 * test plugin's release has a barrier; PENNY_FAKE_NCCL_STRICT=1 ends the
 * process at a destroy inside a group that has a collective of it) */
static int groupteardown(ncclComm_t comm, int rank, int n)
{
	int calls = 0;
	ncclComm_t sub = split_one(comm, rank, n, &calls);

	if (!sub)
		return calls;
	ANSWER(ncclGroupStart(), ncclSuccess, "ncclGroupStart");
	ANSWER(ncclCommDestroy(sub), ncclSuccess, "ncclCommDestroy inside a group");
	ANSWER(ncclGroupEnd(), ncclSuccess, "ncclGroupEnd after the destroy");
	return calls + one(comm, rank, n, ncclFloat32, ncclSum, 100, 0, 0);
}

/* revoke, shrinkabort: penny takes no call of a revoked communicator (or
 * the parent of a shrink that aborts); NCCL answers them */
static int revoked(ncclComm_t comm, int rank, int n, int shrink)
{
	uint16_t v[3] = { 0x3f80, 0x4000, 0x4040 }; /* bfloat16 1, 2, 3 */
	int calls = one(comm, rank, n, ncclFloat32, ncclSum, 100, 0, 0);
	ncclComm_t sub = NULL;

	if (shrink) {
		ANSWER(ncclCommShrink(comm, NULL, 0, &sub, NULL, NCCL_SHRINK_ABORT), ncclSuccess,
		       "ncclCommShrink with NCCL_SHRINK_ABORT");
		if (sub)
			calls += one(sub, rank, n, ncclFloat32, ncclSum, 100, 0, 0);
	} else {
		ANSWER(ncclCommRevoke(comm, 0), ncclSuccess, "ncclCommRevoke");
		ANSWER(ncclCommRevoke(comm, 0), ncclInvalidArgument, "a second ncclCommRevoke");
	}
	ANSWER(ncclAllReduce(v, v, 3, ncclBfloat16, ncclSum, comm, NULL), ncclInvalidArgument,
	       "a bfloat16 allreduce after it");
	if (sub)
		ANSWER(ncclCommDestroy(sub), ncclSuccess, "ncclCommDestroy of the shrunk one");
	return calls;
}

/*
 * Round 4 (tests/cli/t0613-interposer-round4.sh): NCCL checks a
 * communicator before a call's arguments (ncclCommEnsureReady), and runs
 * a group's calls at its end.
 */

/* errlater: once penny's error is the communicator's async error
 * (PENNY_FAKE_ASYNC_ERROR=1), its calls get that error, as after NCCL's
 * own: nothing runs, nothing is written, inside a group too */
static int errlater(ncclComm_t comm, int rank, int n)
{
	float x[8] = { 1, 2, 3, 4, 5, 6, 7, 8 }, y[8];
	ncclResult_t ae = ncclSuccess;
	int calls = one(comm, rank, n, ncclFloat32, ncclSum, 100, 0, 0), k;
	double t0 = secs();
	const char *line;

	for (k = 0; k < 8; k++)
		y[k] = -1;
	while (ncclCommGetAsyncError(comm, &ae) == ncclSuccess && ae == ncclSuccess && secs() - t0 < 10)
		sched_yield();
	EXPECT(ae == ncclRemoteError, "rank %d: async error %d after a kernel's timeout", rank, ae);
	ANSWER(ncclAllReduce(x, y, 4, ncclFloat32, ncclSum, comm, NULL), ncclRemoteError,
	       "an allreduce after penny's error");
	ANSWER(ncclReduceScatter(x, y, 2, ncclFloat32, ncclSum, comm, NULL), ncclRemoteError,
	       "a reduce-scatter after penny's error");
	ANSWER(ncclAllGather(x, y, 2, ncclFloat32, comm, NULL), ncclRemoteError,
	       "an all-gather after penny's error");
	ANSWER(ncclAllReduce(x, y, 4, (ncclDataType_t)99, ncclSum, comm, NULL), ncclRemoteError,
	       "an allreduce of type 99 after penny's error (the communicator first)");
	/* NCCL's other calls on it too */
	ANSWER(ncclBroadcast(x, y, 4, ncclFloat32, 0, comm, NULL), ncclRemoteError,
	       "a broadcast after penny's error");
	ANSWER(ncclReduce(x, y, 4, ncclFloat32, ncclSum, 0, comm, NULL), ncclRemoteError,
	       "a reduce after penny's error");
	ANSWER(ncclSend(x, 4, ncclFloat32, (rank + 1) % n, comm, NULL), ncclRemoteError,
	       "a send after penny's error");
	ANSWER(ncclGroupStart(), ncclSuccess, "ncclGroupStart");
	ANSWER(ncclAllReduce(x, y, 4, ncclFloat32, ncclSum, comm, NULL), ncclRemoteError,
	       "an allreduce in a group after penny's error");
	ANSWER(ncclGroupEnd(), ncclSuccess, "ncclGroupEnd");
	for (k = 0; k < 8; k++)
		EXPECT(y[k] == -1, "rank %d: a call after the error wrote element %d: %g", rank, k, y[k]);
	line = ncclGetLastError(comm);
	EXPECT(line && strstr(line, "penny's allreduce failed"), "rank %d: last error '%s'", rank,
	       line ? line : "(null)");
	EXPECT(ncclCommAbort(comm) == ncclSuccess, "rank %d: abort failed", rank);
	return calls;
}

/* A bfloat16 sum of 1, 2, 3 on each rank (only penny runs bfloat16 here):
 * its result, checked (2 ranks); *v: untouched where refused. */
static ncclResult_t bf16_sum(ncclComm_t comm, int rank, int n, const char *what)
{
	uint16_t v[3] = { 0x3f80, 0x4000, 0x4040 };
	ncclResult_t r = ncclAllReduce(v, v, 3, ncclBfloat16, ncclSum, comm, NULL);

	if (r == ncclSuccess)
		EXPECT(n != 2 || (v[0] == 0x4000 && v[1] == 0x4080 && v[2] == 0x40c0),
		       "rank %d: %s: bfloat16 sum %04x %04x %04x", rank, what, v[0], v[1], v[2]);
	else
		EXPECT(v[0] == 0x3f80 && v[1] == 0x4000 && v[2] == 0x4040,
		       "rank %d: %s: refused, but wrote %04x %04x %04x", rank, what, v[0], v[1], v[2]);
	return r;
}

/* An ncclReduce (NCCL's) left in progress on a non-blocking communicator. */
static void reduce_busy(ncclComm_t comm, int rank)
{
	float x[4] = { 1, 2, 3, 4 }, y[4];

	ANSWER(ncclReduce(x, y, 4, ncclFloat32, ncclSum, 0, comm, NULL), ncclInProgress,
	       "an ncclReduce on the non-blocking communicator");
}

static void wait_ready(ncclComm_t comm, int rank)
{
	ncclResult_t ae = ncclInProgress;

	while (ncclCommGetAsyncError(comm, &ae) == ncclSuccess && ae == ncclInProgress)
		;
	EXPECT(ae == ncclSuccess, "rank %d: the communicator is %d once done", rank, ae);
}

/* busyon: a non-blocking communicator penny runs, whose NCCL call is still
 * in progress (PENNY_FAKE_NCCL_BUSY_MS): NCCL refuses a call on it
 * (ncclInvalidArgument), penny's kinds too; penny's once it is ready */
static int busyon(ncclComm_t comm, int rank, int n)
{
	float x[4] = { 1, 2, 3, 4 }, y[2] = { -1, -1 };

	ANSWER(bf16_sum(comm, rank, n, "the first"), ncclSuccess, "the first bfloat16 sum");
	reduce_busy(comm, rank);
	ANSWER(bf16_sum(comm, rank, n, "in progress"), ncclInvalidArgument,
	       "a bfloat16 allreduce while NCCL's call is in progress");
	ANSWER(ncclReduceScatter(x, y, 2, ncclFloat32, ncclSum, comm, NULL), ncclInvalidArgument,
	       "a reduce-scatter while NCCL's call is in progress");
	EXPECT(y[0] == -1 && y[1] == -1, "rank %d: the refused reduce-scatter wrote %g %g", rank,
	       y[0], y[1]);
	wait_ready(comm, rank);
	ANSWER(bf16_sum(comm, rank, n, "once ready"), ncclSuccess, "a bfloat16 allreduce once ready");
	return 2;
}

/* destroybusy: rank 0 destroys the non-blocking communicator while NCCL's
 * call is in progress: NCCL refuses (ncclInvalidArgument), then takes it
 * once ready; the peer's destroy, made once ready, returns at once, not
 * after PENNY_NCCL_TIMEOUT (penny's release of rank 0 had run alone) */
static int destroybusy(ncclComm_t comm, int rank, int n)
{
	double t0;

	ANSWER(bf16_sum(comm, rank, n, "the first"), ncclSuccess, "the first bfloat16 sum");
	reduce_busy(comm, rank);
	if (rank == 0)
		ANSWER(ncclCommDestroy(comm), ncclInvalidArgument,
		       "ncclCommDestroy while NCCL's call is in progress");
	wait_ready(comm, rank);
	t0 = secs();
	ANSWER(ncclCommDestroy(comm), ncclSuccess, "ncclCommDestroy once ready");
	EXPECT(secs() - t0 < 5, "rank %d: ncclCommDestroy took %.1f s", rank, secs() - t0);
	return 1;
}

/* simulate: an allreduce penny would take, in a group that
 * ncclGroupSimulateEnd ends: NCCL simulates it (its estimate counts it),
 * nothing runs or is written; in a nested group an inner
 * ncclGroupSimulateEnd ends nothing, the outer ncclGroupEnd runs it; work
 * the caller enqueues before ncclGroupEnd comes before a grouped call */
static int simulate(ncclComm_t comm, int rank, int n)
{
	ncclSimInfo_t si = { sizeof(si), NCCL_SIM_INFO_MAGIC, 22809, -1 };
	float x[7] = { 5, 5, 5, 5, 5, 5, 5 };
	double *s;
	int calls = one(comm, rank, n, ncclFloat32, ncclSum, 100, 0, 0), k;

	ANSWER(ncclGroupStart(), ncclSuccess, "ncclGroupStart");
	ANSWER(ncclAllReduce(x, x, 7, ncclFloat32, ncclSum, comm, NULL), ncclSuccess,
	       "an allreduce in the simulated group");
	ANSWER(ncclGroupSimulateEnd(&si), ncclSuccess, "ncclGroupSimulateEnd");
	for (k = 0; k < 7; k++)
		EXPECT(x[k] == 5, "rank %d: the simulated allreduce wrote element %d: %g", rank, k, x[k]);
	EXPECT(si.estimatedTime == 1, "rank %d: NCCL simulated %g calls, not 1", rank,
	       (double)si.estimatedTime);
	/* nested: the inner end ends nothing */
	s = ar_input(rank, ncclFloat32, 7);
	ANSWER(ncclGroupStart(), ncclSuccess, "ncclGroupStart");
	ANSWER(ncclGroupStart(), ncclSuccess, "ncclGroupStart (inner)");
	ANSWER(ncclAllReduce(s, s, 7, ncclFloat32, ncclSum, comm, NULL), ncclSuccess,
	       "an allreduce in the nested group");
	ANSWER(ncclGroupSimulateEnd(&si), ncclSuccess, "the inner ncclGroupSimulateEnd");
	/* the caller's own work on the buffer before the group's end: the
	 * grouped call reads it (NCCL runs the group at its end) */
	for (k = 0; k < 7; k++)
		((float *)s)[k] = (float)input(rank, (size_t)k);
	ANSWER(ncclGroupEnd(), ncclSuccess, "the outer ncclGroupEnd");
	ar_check(rank, n, ncclFloat32, ncclSum, 7, s);
	free(s);
	/* a group ended by ncclGroupSimulateEnd without a simInfo runs (NCCL's) */
	s = ar_input(rank, ncclFloat32, 7);
	ANSWER(ncclGroupStart(), ncclSuccess, "ncclGroupStart");
	ANSWER(ncclAllReduce(s, s, 7, ncclFloat32, ncclSum, comm, NULL), ncclSuccess,
	       "an allreduce in a group");
	ANSWER(ncclGroupSimulateEnd(NULL), ncclSuccess, "ncclGroupSimulateEnd(NULL)");
	ar_check(rank, n, ncclFloat32, ncclSum, 7, s);
	free(s);
	/* the ranks' next calls meet */
	return calls + 2 + one(comm, rank, n, ncclFloat64, ncclMax, 1000, 0, 0);
}

/* ptdsother: the allreduce of a thread of its own, on its per-thread stream */
struct ptds_call {
	ncclComm_t comm;
	float *x;
	size_t count;
	ncclResult_t r;
};

static void *ptds_main(void *arg)
{
	struct ptds_call *a = arg;

	a->r = ncclAllReduce(a->x, a->x, a->count, ncclFloat32, ncclSum, a->comm,
			     (cudaStream_t)(uintptr_t)2); /* CU_STREAM_PER_THREAD */
	return NULL;
}

/*
 * streamgone (ptds 0) and ptdsother (1): penny's allreduce on a stream the
 * destroy cannot wait for (gone, or another thread's), then
 * ncclCommDestroy, which must still wait for it before penny's buffers
 * go; then the device synchronized (the legacy stream's synchronize: every
 * queued call) and the result checked.  comm is destroyed.
 */
static int streamgone(ncclComm_t comm, int rank, int n, int ptds)
{
	void *cu = dlopen("libcuda.so.1", RTLD_NOW), *s = NULL;
	int (*mk)(void **, unsigned) = cu ? (int (*)(void **, unsigned))dlsym(cu, "cuStreamCreate") : NULL;
	int (*rm)(void *) = cu ? (int (*)(void *))dlsym(cu, "cuStreamDestroy_v2") : NULL;
	int (*sync)(void *) = cu ? (int (*)(void *))dlsym(cu, "cuStreamSynchronize") : NULL;
	struct ptds_call a = { comm, NULL, 1000, ncclInternalError };
	size_t i, wrong = 0;
	pthread_t t;

	if (!mk || !rm || !sync || !(a.x = malloc(a.count * sizeof(float)))) {
		printf("rank %d: no cuStreamCreate, cuStreamDestroy_v2 or cuStreamSynchronize\n", rank);
		exit(2);
	}
	for (i = 0; i < a.count; i++)
		a.x[i] = (float)input(rank, i);
	if (ptds) {
		EXPECT(!pthread_create(&t, NULL, ptds_main, &a), "rank %d: no thread", rank);
		pthread_join(t, NULL);
	} else {
		EXPECT(mk(&s, 1) == 0, "rank %d: cuStreamCreate failed", rank);
		a.r = ncclAllReduce(a.x, a.x, a.count, ncclFloat32, ncclSum, comm, (cudaStream_t)s);
		EXPECT(rm(s) == 0, "rank %d: cuStreamDestroy failed", rank);
		EXPECT(sync(s) == 400, "rank %d: a destroyed stream synchronized", rank);
	}
	EXPECT(a.r == ncclSuccess, "rank %d: allreduce: %s", rank, ncclGetErrorString(a.r));
	EXPECT(ncclCommDestroy(comm) == ncclSuccess, "rank %d: ncclCommDestroy failed", rank);
	sync(NULL);
	for (i = 0; i < a.count && a.r == ncclSuccess; i++)
		if (a.x[i] != (float)expect(n, i, ncclSum) && !wrong++)
			printf("rank %d: element %zu is %g, not %g\n", rank, i, a.x[i],
			       expect(n, i, ncclSum));
	if (wrong)
		bad = 1;
	free(a.x);
	return 1;
}

/* threadsmain: the communicators the threads leave to the main thread */
static ncclComm_t kept[64];

/* Rank rank's communicator as mode makes it (nonblocking: by a non-blocking
 * config, polled until made; 2: returned in progress). */
static ncclResult_t make_comm(ncclComm_t *comm, int n, ncclUniqueId id, int rank, int mode,
			      int nonblocking)
{
	ncclConfig_t cfg = { sizeof(cfg), NCCL_CONFIG_MAGIC, 22809, 0 };
	ncclResult_t r;

	if (mode == M_UNTRACKED)
		return init_untracked(comm, n, id, rank);
	if (!nonblocking)
		return ncclCommInitRank(comm, n, id, rank);
	r = ncclCommInitRankConfig(comm, n, id, rank, &cfg);
	if (nonblocking == 2 && r == ncclInProgress)
		return ncclSuccess;
	while (r == ncclInProgress && ncclCommGetAsyncError(*comm, &r) == ncclSuccess)
		;
	return r;
}

/* Rank rank runs scenario what on comm (NULL: it makes its own, as mode says). */
static int run_rank(int n, int rank, ncclUniqueId id, const char *what, int mode, ncclComm_t comm)
{
	ncclResult_t r = ncclSuccess, ae;
	int calls = 0;

	if (!comm)
		r = make_comm(&comm, n, id, rank, mode,
			      !strcmp(what, "nonblocking") || !strcmp(what, "setupwait") ||
				      !strcmp(what, "busyon") || !strcmp(what, "destroybusy") ? 1
			      : !strcmp(what, "notready") ? 2 : 0);
	if (!strcmp(what, "nonblocking"))
		what = "bf16";
	if (r != ncclSuccess) {
		printf("rank %d: ncclCommInitRank: %d %s\n", rank, r, ncclGetErrorString(r));
		return 1;
	}
	if (!strcmp(what, "allreduce"))
		calls = allreduce(comm, rank, n);
	else if (!strcmp(what, "bf16")) {
		uint16_t v[3] = { 0x3f80, 0x4000, 0x4040 }; /* 1, 2, 3 */

		r = ncclAllReduce(v, v, 3, ncclBfloat16, ncclSum, comm, NULL);
		EXPECT(r == ncclSuccess, "rank %d: bfloat16 allreduce: %s", rank, ncclGetErrorString(r));
		EXPECT(r != ncclSuccess || n != 2 || (v[0] == 0x4000 && v[1] == 0x4080 && v[2] == 0x40c0),
		       "rank %d: bfloat16 sum is %04x %04x %04x", rank, v[0], v[1], v[2]);
		calls = 1;
	} else if (!strcmp(what, "args"))
		args(comm, rank);
	else if (!strcmp(what, "peerdies")) {
		float x[4] = { 1, 2, 3, 4 };

		if (rank == n - 1)
			_exit(0);
		r = ncclAllReduce(x, x, 4, ncclFloat32, ncclSum, comm, NULL);
		EXPECT(r != ncclSuccess, "rank %d: an allreduce without its peer succeeded", rank);
		EXPECT(ncclCommGetAsyncError(comm, &ae) == ncclSuccess && ae != ncclSuccess,
		       "rank %d: no async error after the peer left", rank);
		EXPECT(ncclCommAbort(comm) == ncclSuccess, "rank %d: abort failed", rank);
		comm = NULL;
	} else if (!strcmp(what, "groupfirst")) {
		calls = one(comm, rank, n, ncclFloat32, ncclSum, 100, 0, 1);
		calls += one(comm, rank, n, ncclFloat32, ncclSum, 100, 0, 0);
	}
	else if (!strcmp(what, "regcache"))
		calls = regcache(comm, rank, n);
	else if (!strcmp(what, "ctx")) {
		void *cu = dlopen("libcuda.so.1", RTLD_NOW), *c = NULL;
		int (*set)(void *) = cu ? (int (*)(void *))dlsym(cu, "cuCtxSetCurrent") : NULL;
		int (*cur)(void **) = cu ? (int (*)(void **))dlsym(cu, "cuCtxGetCurrent") : NULL;
		int i;

		EXPECT(set && cur, "rank %d: no cuCtxSetCurrent/cuCtxGetCurrent in libcuda.so.1", rank);
		for (i = 0; set && cur && i < 2; i++) {
			set((void *)(uintptr_t)(0x5150 + i));
			calls += one(comm, rank, n, ncclFloat32, ncclSum, 100, 0, 0);
			cur(&c);
			EXPECT(c == (void *)(uintptr_t)(0x5150 + i),
			       "rank %d: call %d: the thread's context is %p, not %#x", rank, i, c,
			       0x5150 + i);
		}
	} else if (!strcmp(what, "ctxnccl")) {
		/* a call NCCL runs (over PENNY_NCCL_MAX_BYTES, 1K) after one penny
		 * took makes no CUDA context call: PyTorch's large calls each paid
		 * a cuCtxGetCurrent and a cuCtxSetCurrent */
		void *cu = dlopen("libcuda.so.1", RTLD_NOW);
		unsigned long (*n_ctx)(void) =
			cu ? (unsigned long (*)(void))dlsym(cu, "fakecuda_ctx_calls") : NULL;
		unsigned long before;

		EXPECT(n_ctx, "rank %d: no fakecuda_ctx_calls in libcuda.so.1", rank);
		calls = one(comm, rank, n, ncclFloat32, ncclSum, 100, 0, 0);
		before = n_ctx ? n_ctx() : 0;
		calls += one(comm, rank, n, ncclFloat32, ncclSum, 1000, 0, 0);
		EXPECT(!n_ctx || n_ctx() == before, "rank %d: NCCL's call made %lu CUDA context calls",
		       rank, n_ctx ? n_ctx() - before : 0);
		/* nor does asking for errors, but once a millisecond: 2,000 asks
		 * made 4,000 context calls */
		{
			struct timespec t0, t1;
			ncclResult_t e;
			double ms;
			int i;

			before = n_ctx ? n_ctx() : 0;
			clock_gettime(CLOCK_MONOTONIC, &t0);
			for (i = 0; i < 2000; i++)
				ncclCommGetAsyncError(comm, &e);
			clock_gettime(CLOCK_MONOTONIC, &t1);
			ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
			EXPECT(!n_ctx || (double)(n_ctx() - before) <= 2 * (ms + 2),
			       "rank %d: 2,000 ncclCommGetAsyncError in %.1f ms made %lu CUDA context calls",
			       rank, ms, n_ctx ? n_ctx() - before : 0);
		}
	} else if (!strcmp(what, "offsplit")) {
		ncclComm_t sub[2] = { NULL, NULL };
		int i, sn = 0, sr = -1;

		calls = one(comm, rank, n, ncclFloat32, ncclSum, 100, 0, 0);
		for (i = 0; i < 2; i++) {
			/* a value neither on nor off is off too, and said (NCCL_CALLER_OFF) */
			if (i == 0)
				setenv("PENNY_NCCL", getenv("NCCL_CALLER_OFF") ? getenv("NCCL_CALLER_OFF")
									: "off", 1);
			else
				unsetenv("PENNY_NCCL");
			EXPECT(ncclCommSplit(comm, rank % 2, rank, &sub[i], NULL) == ncclSuccess &&
				       sub[i], "rank %d: ncclCommSplit failed", rank);
			if (!sub[i])
				continue;
			ncclCommCount(sub[i], &sn);
			ncclCommUserRank(sub[i], &sr);
			calls += one(sub[i], sr, sn, ncclFloat64, ncclSum, 1000 + i, 0, 0);
		}
		for (i = 0; i < 2; i++)
			if (sub[i])
				ncclCommDestroy(sub[i]);
	}
	else if (!strcmp(what, "shrinkgrow"))
		calls = shrinkgrow(comm, rank, n);
	else if (!strcmp(what, "colls")) {
		int ag = 0;

		calls = colls(comm, rank, n, &ag);
		if (!bad)
			printf("rank %d: %d reduce-scatter and %d all-gather calls\n", rank, calls, ag);
		calls = 0;
	} else if (!strcmp(what, "bf16coll")) {
		/* 1, 2, 3 in each block of each rank */
		uint16_t v[3 * 64], g[3 * 64], one[3] = { 0x3f80, 0x4000, 0x4040 };
		int i;

		for (i = 0; i < 3 * n; i++)
			v[i] = one[i % 3];
		r = ncclReduceScatter(v, v + 3 * rank, 3, ncclBfloat16, ncclSum, comm, NULL);
		EXPECT(r == ncclSuccess, "rank %d: bfloat16 reduce-scatter: %s", rank,
		       ncclGetErrorString(r));
		EXPECT(r != ncclSuccess || n != 2 ||
			       (v[3 * rank] == 0x4000 && v[3 * rank + 1] == 0x4080 &&
				v[3 * rank + 2] == 0x40c0),
		       "rank %d: bfloat16 reduce-scatter is %04x %04x %04x", rank, v[3 * rank],
		       v[3 * rank + 1], v[3 * rank + 2]);
		memcpy(g + 3 * rank, one, sizeof(one));
		r = ncclAllGather(g + 3 * rank, g, 3, ncclBfloat16, comm, NULL);
		EXPECT(r == ncclSuccess, "rank %d: bfloat16 all-gather: %s", rank, ncclGetErrorString(r));
		for (i = 0; i < 3 * n && r == ncclSuccess; i++)
			EXPECT(g[i] == one[i % 3], "rank %d: bfloat16 all-gather element %d is %04x",
			       rank, i, g[i]);
		calls = 2;
	}
	else if (!strcmp(what, "asyncerr")) {
		calls = one(comm, rank, n, ncclFloat32, ncclSum, 100, 0, 0);
		EXPECT(ncclCommGetAsyncError(comm, &ae) == ncclSuccess && ae == ncclRemoteError,
		       "rank %d: async error %d after a kernel's timeout, not %d", rank, ae,
		       ncclRemoteError);
		EXPECT(strstr(ncclGetLastError(comm), "timed out"), "rank %d: last error '%s'", rank,
		       ncclGetLastError(comm));
		EXPECT(ncclCommAbort(comm) == ncclSuccess, "rank %d: abort failed", rank);
		comm = NULL;
	} else if (!strcmp(what, "asyncdestroy")) {
		/* after penny's error the communicator is broken: its destroy waits
		 * for no peer (rank 1 comes 3 s late) */
		struct timespec t0, t1;

		calls = one(comm, rank, n, ncclFloat32, ncclSum, 100, 0, 0);
		EXPECT(ncclCommGetAsyncError(comm, &ae) == ncclSuccess && ae == ncclRemoteError,
		       "rank %d: async error %d after a kernel's timeout", rank, ae);
		if (rank == 1)
			sleep(3);
		clock_gettime(CLOCK_MONOTONIC, &t0);
		EXPECT(ncclCommDestroy(comm) == ncclSuccess, "rank %d: ncclCommDestroy failed", rank);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		EXPECT(rank == 1 || t1.tv_sec - t0.tv_sec < 2,
		       "rank %d: ncclCommDestroy after the error took %ld s", rank,
		       (long)(t1.tv_sec - t0.tv_sec));
		comm = NULL;
	} else if (!strcmp(what, "notready")) {
		/* a call before the non-blocking communicator is made: NCCL refuses
		 * it and the communicator stays good; penny's set-up waits */
		float x[4] = { 1, 2, 3, 4 };
		uint16_t v[3] = { 0x3f80, 0x4000, 0x4040 }; /* bfloat16 1, 2, 3 */

		ANSWER(ncclAllReduce(x, x, 4, ncclFloat32, ncclSum, comm, NULL), ncclInvalidArgument,
		       "an allreduce on a communicator in progress");
		while (ncclCommGetAsyncError(comm, &ae) == ncclSuccess && ae == ncclInProgress)
			;
		EXPECT(ae == ncclSuccess, "rank %d: the communicator is %d once made", rank, ae);
		r = ncclAllReduce(v, v, 3, ncclBfloat16, ncclSum, comm, NULL);
		EXPECT(r == ncclSuccess && (n != 2 || (v[0] == 0x4000 && v[1] == 0x4080 &&
						       v[2] == 0x40c0)),
		       "rank %d: bfloat16 allreduce once made: %d, %04x %04x %04x", rank, r, v[0],
		       v[1], v[2]);
		calls = one(comm, rank, n, ncclFloat32, ncclSum, 100, 0, 0);
	} else if (!strcmp(what, "nullcomm"))
		calls = nullcomm(comm, rank, n);
	else if (!strcmp(what, "twice"))
		calls = twice(comm, rank, n);
	else if (!strcmp(what, "badinit"))
		calls = badinit(comm, rank, n, id);
	else if (!strcmp(what, "groups"))
		calls = groups(comm, rank, n);
	else if (!strcmp(what, "counts"))
		calls = counts(comm, rank, n);
	else if (!strcmp(what, "oddsplit"))
		calls = oddsplit(comm, rank, n);
	else if (!strcmp(what, "secondthread"))
		calls = secondthread(comm, rank, n);
	else if (!strcmp(what, "watchdog"))
		calls = watchdog(comm, rank, n);
	else if (!strcmp(what, "abortwait")) {
		calls = abortwait(comm, rank, n);
		comm = NULL;
	} else if (!strcmp(what, "setupfail") || !strcmp(what, "setupwait")) {
		calls = setupfail(comm, rank, n);
		comm = NULL;
	} else if (!strcmp(what, "callfail")) {
		calls = callfail(comm, rank, n);
		comm = NULL;
	} else if (!strcmp(what, "dogerr")) {
		calls = dogerr(comm, rank, n);
		comm = NULL;
	} else if (!strcmp(what, "groupleak"))
		calls = groupleak(comm, rank, n);
	else if (!strcmp(what, "groupdestroy"))
		calls = groupdestroy(comm, rank, n);
	else if (!strcmp(what, "groupteardown"))
		calls = groupteardown(comm, rank, n);
	else if (!strcmp(what, "revoke") || !strcmp(what, "shrinkabort"))
		calls = revoked(comm, rank, n, !strcmp(what, "shrinkabort"));
	else if (!strcmp(what, "errlater")) {
		calls = errlater(comm, rank, n);
		comm = NULL;
	} else if (!strcmp(what, "busyon"))
		calls = busyon(comm, rank, n);
	else if (!strcmp(what, "destroybusy")) {
		calls = destroybusy(comm, rank, n);
		comm = NULL;
	} else if (!strcmp(what, "simulate"))
		calls = simulate(comm, rank, n);
	else if (!strcmp(what, "streamgone") || !strcmp(what, "ptdsother")) {
		calls = streamgone(comm, rank, n, !strcmp(what, "ptdsother"));
		comm = NULL;
	}
	else if (!strcmp(what, "groupexit")) {
		float x[4] = { 1, 2, 3, 4 };

		/* a group left open, a call in it, the communicator never destroyed */
		calls = one(comm, rank, n, ncclFloat32, ncclSum, 100, 0, 0);
		ncclGroupStart();
		ncclGroupStart();
		EXPECT(ncclAllReduce(x, x, 4, ncclFloat32, ncclSum, comm, NULL) == ncclSuccess,
		       "rank %d: an allreduce in the open group failed", rank);
		printf("rank %d: groupexit ok, %d allreduce calls\n", rank, calls + 1);
		exit(bad);
	} else if (!strcmp(what, "abort")) {
		calls = one(comm, rank, n, ncclFloat32, ncclSum, 100, 0, 0);
		EXPECT(ncclCommGetAsyncError(comm, &ae) == ncclSuccess && ae == ncclSuccess,
		       "rank %d: async error before the abort", rank);
		EXPECT(ncclCommAbort(comm) == ncclSuccess, "rank %d: abort failed", rank);
		comm = NULL;
	}
	if (comm) {
		EXPECT(ncclCommGetAsyncError(comm, &ae) == ncclSuccess && ae == ncclSuccess,
		       "rank %d: async error %d", rank, ae);
		if (mode == M_THREADSMAIN)
			kept[rank] = comm;
		else
			EXPECT(ncclCommDestroy(comm) == ncclSuccess, "rank %d: ncclCommDestroy failed",
			       rank);
	}
	if (!bad)
		printf("rank %d: %s ok, %d allreduce calls\n", rank, what, calls);
	return bad;
}

struct rank_thread {
	pthread_t t;
	int n, rank, mode, ret;
	ncclUniqueId id;
	const char *what;
	ncclComm_t comm;
};

static void *rank_main(void *arg)
{
	struct rank_thread *a = arg;

	a->ret = run_rank(a->n, a->rank, a->id, a->what, a->mode, a->comm);
	return NULL;
}

/* The ranks as threads of this process (mode threads, threadsmain, initall or maingroup). */
static int run_threads(int n, ncclUniqueId id, const char *what, int mode)
{
	static struct rank_thread a[64];
	ncclComm_t comms[64] = { NULL };
	ncclResult_t res;
	int r, fails = 0;

	alarm(120);
	if (mode == M_INITALL && (res = ncclCommInitAll(comms, n, NULL)) != ncclSuccess) {
		printf("ncclCommInitAll: %d %s\n", res, ncclGetErrorString(res));
		return 1;
	}
	if (mode == M_MAINGROUP || (mode == M_GROUPED && strcmp(what, "teardown"))) {
		ncclGroupStart();
		for (r = 0; r < n; r++)
			if ((res = ncclCommInitRank(&comms[r], n, id, r)) != ncclSuccess)
				printf("rank %d: ncclCommInitRank in a group: %d %s\n", r, res,
				       ncclGetErrorString(res));
		if ((res = ncclGroupEnd()) != ncclSuccess) {
			printf("ncclGroupEnd after ncclCommInitRank: %d %s\n", res,
			       ncclGetErrorString(res));
			return 1;
		}
	}
	if (mode == M_GROUPED && !strcmp(what, "teardown"))
		return teardown(n, id);
	if (mode == M_GROUPED)
		return grouped(comms, n, what);
	for (r = 0; r < n; r++) {
		a[r] = (struct rank_thread){ .n = n, .rank = r, .mode = mode, .id = id,
					     .what = what, .comm = comms[r], .ret = 1 };
		if (pthread_create(&a[r].t, NULL, rank_main, &a[r])) {
			printf("rank %d: no thread\n", r);
			return 1; /* the others go at exit */
		}
	}
	for (r = 0; r < n; r++) {
		pthread_join(a[r].t, NULL);
		if (a[r].ret) {
			printf("rank %d failed\n", r);
			fails++;
		}
	}
	for (r = 0; r < n; r++)
		if (kept[r] && ncclCommDestroy(kept[r]) != ncclSuccess) {
			printf("rank %d: ncclCommDestroy (main thread) failed\n", r);
			fails++;
		}
	if (mode == M_THREADSMAIN && !fails)
		printf("main thread: %d communicators destroyed\n", n);
	return fails ? 1 : 0;
}

int main(int argc, char **argv)
{
	static const char *const modes[] = { "threads:", "initall:", "untracked:", "threadsmain:",
					     "maingroup:", "grouped:" };
	static const int mode_of[] = { M_THREADS, M_INITALL, M_UNTRACKED, M_THREADSMAIN,
				       M_MAINGROUP, M_GROUPED };
	int n, r, st, mode = M_PROCS, fails = 0;
	const char *what;
	pid_t pid[64];
	ncclUniqueId id;
	ncclResult_t res;

	if (argc != 3 || (n = atoi(argv[1])) < 1 || n > 64) {
		fprintf(stderr, "usage: nccl-caller NRANKS "
				"[threads:|initall:|untracked:|threadsmain:|maingroup:|grouped:]"
				"allreduce|"
				"bf16|args|version|abort|nonblocking|groupfirst|peerdies|regcache|"
				"asyncerr|asyncdestroy|colls|bf16coll|shrinkgrow|offsplit|ctx|nullcomm|"
				"twice|badinit|groups|counts|secondthread|watchdog|abortwait|groupexit|"
				"notready|oddsplit|setupfail|setupwait|callfail|dogerr|groupleak|"
				"groupdestroy|groupteardown|revoke|shrinkabort|errlater|busyon|"
				"destroybusy|simulate|streamgone|ptdsother\n");
		return 2;
	}
	what = argv[2];
	for (r = 0; r < (int)(sizeof(modes) / sizeof(modes[0])); r++)
		if (!strncmp(what, modes[r], strlen(modes[r]))) {
			mode = mode_of[r];
			what += strlen(modes[r]);
		}
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!strcmp(what, "version")) {
		int v = 0;

		res = ncclGetVersion(&v);
		printf("ncclGetVersion: %d (%s) %d\n", res, ncclGetErrorString(res), v);
		return res == ncclSuccess ? 0 : 1;
	}
	if ((!strcmp(what, "shrinkgrow") && (n < 3 || pipe(grow_pipe))) ||
	    (mode != M_PROCS && mode != M_UNTRACKED &&
	     (!strcmp(what, "shrinkgrow") || !strcmp(what, "peerdies") ||
	      !strcmp(what, "abortwait") || !strcmp(what, "setupfail") ||
	      !strcmp(what, "setupwait") || !strcmp(what, "callfail")))) {
		fprintf(stderr, "nccl-caller: %s wants processes (shrinkgrow: 3 or more)\n", what);
		return 2;
	}
	res = ncclGetUniqueId(&id);
	if (res == ncclSuccess && getenv("NCCL_CALLER_MORE_RANKS"))
		res = ncclGetUniqueId(&more_id);
	if (res != ncclSuccess) {
		printf("ncclGetUniqueId: %d (%s)\n", res, ncclGetErrorString(res));
		return 1;
	}
	if (mode != M_PROCS && mode != M_UNTRACKED)
		return run_threads(n, id, what, mode);
	for (r = 0; r < n; r++) {
		pid[r] = fork();
		if (pid[r] == 0) {
			char *e = getenv("NCCL_CALLER_RANK0_ENV"); /* NAME=VALUE for rank 0 alone */

			alarm(120);
			if (r == 0 && e && *e)
				putenv(e);
			if (r != 0 && grow_pipe[1] >= 0)
				close(grow_pipe[1]);
			_exit(run_rank(n, r, id, what, mode, NULL));
		}
	}
	if (grow_pipe[1] >= 0) {
		close(grow_pipe[0]);
		close(grow_pipe[1]);
	}
	for (r = 0; r < n; r++)
		if (pid[r] < 0 || waitpid(pid[r], &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st)) {
			printf("rank %d failed\n", r);
			fails++;
		}
	return fails ? 1 : 0;
}
