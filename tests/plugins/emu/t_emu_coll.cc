// SPDX-License-Identifier: MIT
// The other collectives' kernels (plugins/cuda/co_kernels.cu) on the CPU
// emulator (emu.h): reduce-scatter, reduce, all-to-all, broadcast,
// send/recv and all-gather on 2, 3 and 4 ranks, queued back to back on every
// rank's stream (every kind after every other, so the shared flag, sequence
// and parity counters carry across kernels), in place (nccl-tests'
// placement) and out of place, odd counts (blocks not 16-byte aligned),
// several tiles per block; every element of every rank's output against
// the host formula (penny_data.h) and the reference's order (the reduction
// in rank order, as the allreduce's); a recv that must stay untouched (a
// reduce's non-roots) must.  The same with LL lines for the calls that fit
// (pn_co_ll_fits), mixed with flag calls on the same workspaces.  Plus a
// peer that never comes: an error word naming it, not a hang.  TAP output.
#include "emu.h"

#include "../../../plugins/common/kargs.h"
#include "../../../plugins/cuda/co_kernels.cu"
#include "emu_check.h"

#include <map>

template <void (*K)(struct pn_ar_args)> static void call_co(const void *p)
{
	K(*(const struct pn_ar_args *)p);
}

static std::map<std::string, emu_kernel_fn> kernels;

#define REG_CO(name, tname, oname)                                                             \
	kernels[#name "_" #tname "_" #oname] = call_co<pn_co_##name##_##tname##_##oname>;
#define REG_OPS(name, tname)                                                                   \
	REG_CO(name, tname, sum)                                                               \
	REG_CO(name, tname, prod) REG_CO(name, tname, min) REG_CO(name, tname, max)            \
		REG_CO(name, tname, avg)
#define REG_TYPES(name)                                                                        \
	REG_OPS(name, int8)                                                                    \
	REG_OPS(name, uint8)                                                                   \
	REG_OPS(name, int32)                                                                   \
	REG_OPS(name, uint32)                                                                  \
	REG_OPS(name, int64)                                                                   \
	REG_OPS(name, uint64)                                                                  \
	REG_OPS(name, half)                                                                    \
	REG_OPS(name, bfloat16) REG_OPS(name, float) REG_OPS(name, double)

static const char *knames[PN_NCO] = { "reduce_scatter", "reduce", "alltoall", "broadcast",
				      "sendrecv", "allgather" };

static void register_kernels(void)
{
	REG_TYPES(reduce_scatter)
	REG_TYPES(reduce)
	kernels["alltoall"] = call_co<pn_co_alltoall>;
	kernels["broadcast"] = call_co<pn_co_broadcast>;
	kernels["sendrecv"] = call_co<pn_co_sendrecv>;
	kernels["allgather"] = call_co<pn_co_allgather>;
}

/* nranks workspaces as the plugin lays them out: an LL area of two
 * parities of n slots of ll_slot bytes (0: none), then the scratch. */
struct world {
	int n;
	uint32_t slot_bytes;
	uint64_t ll_slot;
	std::vector<char *> ws;
};

static void world_init(world &w, int n, unsigned blocks, uint32_t slot_bytes, uint64_t ll_slot = 0)
{
	size_t bytes = PN_WS_LL + 2 * (size_t)n * ll_slot + (size_t)blocks * 2 * n * slot_bytes;

	w.n = n;
	w.slot_bytes = slot_bytes;
	w.ll_slot = ll_slot;
	for (int r = 0; r < n; r++) {
		char *p = (char *)aligned_alloc(256, (bytes + 255) / 256 * 256);

		memset(p, 0, bytes);
		w.ws.push_back(p);
	}
}

static void world_free(world &w)
{
	for (char *p : w.ws)
		free(p);
	w.ws.clear();
}

static uint32_t *ws_cnt(const world &w, int r)
{
	return (uint32_t *)(w.ws[r] + PN_WS_COUNTERS);
}

/* Elements of each rank's send and recv for collective k of count. */
static uint64_t send_elems(int k, uint64_t count, int n)
{
	return k == PN_CO_REDUCE_SCATTER || k == PN_CO_ALLTOALL ? count * n : count;
}

static uint64_t recv_elems(int k, uint64_t count, int n)
{
	return k == PN_CO_ALLTOALL || k == PN_CO_ALLGATHER ? count * n : count;
}

/* One call: every rank's buffer (in place: one), its send and recv in it. */
struct call {
	int k, dt, op, root;
	uint64_t count;
	bool inplace, ll, two;
	uint32_t seed;
	unsigned grid, block;
	uint32_t tile;
	std::vector<char *> mem, send, recv;
};

/* Rank r's input element i (its send, index in send) from the formula. */
static uint64_t input(const call &c, int r, uint64_t i)
{
	return penny_data_input_bits(c.dt, PN_CO_REDUCES(c.k) ? c.op : PENNY_SUM, c.seed, r, i);
}

static void call_alloc(call &c, int n)
{
	const int es = penny_data_size(c.dt);
	const uint64_t se = send_elems(c.k, c.count, n), re = recv_elems(c.k, c.count, n);
	const uint64_t room = ((se > re ? se : re) * es + 16 + 255) / 256 * 256;

	for (int r = 0; r < n; r++) {
		/* out of place, an odd count: recv one element into its
		 * allocation (not 16-byte aligned: the kernels' element path) */
		char *m = (char *)aligned_alloc(256, 2 * room + 256);
		char *s = c.inplace ? m : m + room + 256;
		char *d = c.inplace ? m : m + (c.count % 2 ? es : 16);

		memset(m, 0xA5, 2 * room + 256);
		if (c.inplace && c.k == PN_CO_REDUCE_SCATTER)
			d = m + (uint64_t)r * c.count * es;
		if (c.inplace && c.k == PN_CO_ALLGATHER)
			s = m + (uint64_t)r * c.count * es;
		if (c.k != PN_CO_BROADCAST || r == c.root)
			for (uint64_t i = 0; i < se; i++) {
				uint64_t bits = input(c, r, i);

				memcpy(s + i * es, &bits, es);
			}
		c.mem.push_back(m);
		c.send.push_back(s);
		c.recv.push_back(d);
	}
}

static void call_free(call &c)
{
	for (char *m : c.mem)
		free(m);
	c.mem.clear();
}

/* The expected bits of rank r's recv element i; false: must be untouched. */
static bool expected(const call &c, int n, int r, uint64_t i, uint64_t *want)
{
	const uint64_t blk = c.count ? i / c.count : 0, off = c.count ? i % c.count : 0;

	switch (c.k) {
	case PN_CO_REDUCE_SCATTER:
		*want = penny_data_expected_bits(c.dt, c.op, c.seed, n, (uint64_t)r * c.count + i);
		return true;
	case PN_CO_REDUCE:
		if (r != c.root)
			return false;
		*want = penny_data_expected_bits(c.dt, c.op, c.seed, n, i);
		return true;
	case PN_CO_ALLTOALL:
		*want = input(c, (int)blk, (uint64_t)r * c.count + off);
		return true;
	case PN_CO_BROADCAST:
		*want = input(c, c.root, i);
		return true;
	case PN_CO_SENDRECV:
		*want = input(c, (r + n - 1) % n, i);
		return true;
	default:
		*want = input(c, (int)blk, off);
		return true;
	}
}

/* Wrong elements of every rank's recv; why: the first. */
static uint64_t call_wrong(const call &c, int n, std::string &why)
{
	const int es = penny_data_size(c.dt);
	uint64_t wrong = 0;

	for (int r = 0; r < n; r++)
		for (uint64_t i = 0; i < recv_elems(c.k, c.count, n); i++) {
			uint64_t want = 0, got = 0;

			memcpy(&got, c.recv[r] + i * es, es);
			if (!expected(c, n, r, i, &want)) {
				if (c.inplace)
					continue; /* a non-root's in-place recv is its send */
				memset(&want, 0xA5, sizeof(want));
				want &= es == 8 ? ~0ull : (1ull << (8 * es)) - 1;
			}
			if (got == want)
				continue;
			if (!wrong++ && why.empty()) {
				char buf[200];

				snprintf(buf, sizeof(buf), "%s count %llu%s root %d: rank %d element %llu is "
					 "%#llx, not %#llx", knames[c.k], (unsigned long long)c.count,
					 c.inplace ? " in place" : "", c.root, r, (unsigned long long)i,
					 (unsigned long long)got, (unsigned long long)want);
				why = buf;
			}
		}
	return wrong;
}

static void call_enqueue(const world &w, const call &c)
{
	std::string name = knames[c.k];

	if (PN_CO_REDUCES(c.k))
		name += std::string("_") + tnames[c.dt] + "_" + onames[c.op];
	for (int r = 0; r < w.n; r++) {
		struct pn_ar_args a;

		memset(&a, 0, sizeof(a));
		a.send = (uint64_t)c.send[r];
		a.recv = (uint64_t)c.recv[r];
		for (int p = 0; p < w.n; p++)
			a.peer_ws[p] = (uint64_t)w.ws[p];
		a.count = c.count;
		a.timeout_ns = 200000000ull;
		a.tile = c.tile;
		a.slot_bytes = w.slot_bytes;
		a.ll_slot_bytes = w.ll_slot;
		a.ll = c.ll;
		a.two = c.two;
		a.rank = r;
		a.nranks = w.n;
		a.root = c.root;
		a.esize = (uint32_t)penny_data_size(c.dt);
		emu_launch_kernel(r, kernels[name], c.grid, c.block, &a, sizeof(a));
	}
}

/*
 * Every collective at every count, in turn, on one world: each in place
 * at every other count, the root moving; with ll_max, LL lines for the
 * calls that fit (as the plugin decides; *nll counts them).  Returns the
 * wrong elements.
 */
static uint64_t run_sequence(int n, int dt, int op, const std::vector<uint64_t> &counts,
			     unsigned grid, unsigned block, uint32_t tile, uint64_t ll_max, bool two,
			     int *nll, int *ntwo, std::string &why)
{
	std::vector<call> calls;
	uint64_t wrong = 0;
	world w;
	int i = 0;

	/* the plugin's slot: 2 x its one-shot maximum, above ll_max + 8 */
	world_init(w, n, grid, tile, ll_max ? 2 * (ll_max + 64) : 0);
	*nll = *ntwo = 0;
	for (size_t ci = 0; ci < counts.size(); ci++)
		for (int k = 0; k < PN_NCO; k++, i++) {
			const uint64_t count = counts[ci];
			call c;

			c.k = k;
			c.dt = dt;
			c.op = op;
			c.root = (i + 1) % n;
			c.count = count;
			c.inplace = (k + ci) % 2 == 1; /* each kind both ways */
			c.seed = 500 + (uint32_t)i + 37 * (uint32_t)dt;
			c.grid = grid;
			c.block = block;
			c.tile = tile;
			c.ll = pn_co_ll_fits(count * penny_data_size(dt), ll_max, w.ll_slot);
			*nll += c.ll;
			/* two steps for broadcast and reduce at every other count, so
			 * that one-step and two-step calls share the counters */
			c.two = two && !c.ll && ci % 2 == 0 &&
				(k == PN_CO_BROADCAST || k == PN_CO_REDUCE);
			*ntwo += c.two;
			call_alloc(c, n);
			calls.push_back(c);
		}
	for (call &c : calls)
		call_enqueue(w, c);
	emu_run();
	for (call &c : calls) {
		wrong += call_wrong(c, n, why);
		call_free(c);
	}
	for (int r = 0; r < n; r++) {
		if (ws_cnt(w, r)[PN_CNT_ERR]) {
			wrong++;
			why += " error word set";
		}
		/* each call on LL lines moved the epoch on once, the others not */
		if (ws_cnt(w, r)[PN_CNT_LL_EPOCH] != (uint32_t)*nll) {
			wrong++;
			why += " rank " + std::to_string(r) + " LL epoch " +
			       std::to_string(ws_cnt(w, r)[PN_CNT_LL_EPOCH]) + ", not " + std::to_string(*nll);
		}
	}
	world_free(w);
	return wrong;
}

/* ll_max: LL lines up to that many bytes a peer (0: flags only); then at
 * least one call of each sequence must take them. */
static void test_colls(int n, const std::vector<int> &dts, const std::vector<int> &ops,
		       const std::vector<uint64_t> &counts, unsigned grid, unsigned block, uint32_t tile,
		       uint64_t ll_max = 0, bool two = false)
{
	for (int dt : dts)
		for (int op : ops) {
			std::string why;
			int nll = 0, ntwo = 0;
			uint64_t bad = run_sequence(n, dt, op, counts, grid, block, tile, ll_max, two,
						    &nll, &ntwo, why);
			char name[400], lls[80] = "";

			if (ll_max)
				snprintf(lls, sizeof(lls), ", LL lines for %d of %zu calls", nll,
					 counts.size() * PN_NCO);
			if (two)
				snprintf(lls + strlen(lls), sizeof(lls) - strlen(lls),
					 ", %d calls in two steps", ntwo);
			snprintf(name, sizeof(name), "every collective, %s %s on %d ranks (grid %u x %u, "
				 "tile %u%s)%s%s", tnames[dt], onames[op], n, grid, block, tile, lls,
				 bad ? ": " : "", why.c_str());
			tap(bad == 0 && (!ll_max || nll > 0) && (!two || ntwo > 0), name);
		}
}

/* Only rank 0 launches: its waits time out and set the error word naming
 * rank 1 (ll: on the LL lines). */
static void test_dead_peer(int k, bool ll)
{
	world w;
	call c;

	world_init(w, 2, 1, 64, ll ? 1024 : 0);
	c.k = k;
	c.dt = PENNY_INT32;
	c.op = PENNY_SUM;
	c.root = 0;
	c.count = 40;
	c.inplace = false;
	c.seed = 3;
	c.grid = 1;
	c.block = 32;
	c.tile = 64;
	call_alloc(c, 2);
	std::string name = knames[k];
	struct pn_ar_args a;

	if (PN_CO_REDUCES(k))
		name += "_int32_sum";
	memset(&a, 0, sizeof(a));
	a.send = (uint64_t)c.send[0];
	a.recv = (uint64_t)c.recv[0];
	for (int p = 0; p < 2; p++)
		a.peer_ws[p] = (uint64_t)w.ws[p];
	a.count = c.count;
	a.timeout_ns = 3000000;
	a.tile = c.tile;
	a.slot_bytes = w.slot_bytes;
	a.ll_slot_bytes = w.ll_slot;
	a.ll = ll;
	a.rank = 0;
	a.nranks = 2;
	a.esize = 4;
	a.coll = 1 + (uint32_t)k;
	emu_launch_kernel(0, kernels[name], 1, 32, &a, sizeof(a));
	emu_run();
	uint32_t *cnt = ws_cnt(w, 0);
	const std::string kn = std::string(knames[k]) + (ll ? " (LL lines)" : "");

	tap((cnt[PN_CNT_ERR] & PN_ERR_TIMEOUT) && cnt[PN_CNT_ERR_INFO] == PN_ERR_DETAIL(1, 1 + k),
	    kn + ": a peer that never comes is a timeout naming it and the collective");
	/* a call queued behind it (the host has not read the error yet) gives up
	 * at once, not after its own timeout: a loop of calls fails within one */
	a.timeout_ns = 2000000000ull;
	uint64_t t0 = emu.clock_ns; /* the emulator's clock */

	emu_launch_kernel(0, kernels[name], 1, 32, &a, sizeof(a));
	emu_run();
	double s = (double)(emu.clock_ns - t0) / 1e9;

	tap(s < 1.0, kn + ": the next call gives up at once after a timeout (" + std::to_string(s) +
			     " s, its own timeout 2 s)");
	call_free(c);
	world_free(w);
}

int main(void)
{
	const std::vector<int> all_ops = { PENNY_SUM, PENNY_PROD, PENNY_MIN, PENNY_MAX, PENNY_AVG };

	register_kernels();
	emu.rng = 4242;
	emu.yield_every = 3;
	emu.stall = 1;
	/* tile 64 B: 203 floats are 13 tiles, several per block of a grid of 2
	 * or 3; 1, 37 and 203 leave blocks of an odd size (unaligned) */
	std::vector<int> all_types;

	for (int dt = 0; dt < PENNY_NDTYPES; dt++)
		all_types.push_back(dt);
	test_colls(3, all_types, all_ops, { 37, 1, 203 }, 2, 32, 64);
	test_colls(2, { PENNY_FLOAT, PENNY_HALF }, { PENNY_SUM, PENNY_AVG, PENNY_MIN }, { 64, 5, 130 },
		   3, 32, 48);
	test_colls(4, { PENNY_DOUBLE, PENNY_BFLOAT16 }, { PENNY_SUM, PENNY_PROD, PENNY_AVG },
		   { 250, 3, 17 }, 2, 64, 96);
	/* LL lines up to 256 B a peer, the rest flags, on the same workspaces
	 * (an odd count out of place puts recv one element into its
	 * allocation: LL lines at any alignment): counts 1-8 fit every type,
	 * 17-64 the types up to 4 bytes (32 and 64 doubles not), 130-250 the
	 * 1-byte ones */
	test_colls(3, all_types, all_ops, { 40, 1, 203, 8 }, 2, 32, 64, 256);
	test_colls(2, { PENNY_FLOAT, PENNY_HALF, PENNY_INT8 }, { PENNY_SUM, PENNY_AVG, PENNY_MIN },
		   { 64, 5, 130, 7 }, 3, 32, 48, 256);
	test_colls(4, { PENNY_DOUBLE, PENNY_BFLOAT16 }, { PENNY_SUM, PENNY_PROD, PENNY_AVG },
		   { 250, 3, 17, 32 }, 2, 64, 96, 256);
	/* broadcast and reduce in two steps through the non-roots (3+ ranks),
	 * beside one-step calls and LL lines: pieces of 32 B, tails of odd
	 * counts; on 5 ranks a tile of 80 B leaves the last piece empty */
	test_colls(3, all_types, all_ops, { 37, 1, 203 }, 2, 32, 64, 0, true);
	test_colls(4, { PENNY_DOUBLE, PENNY_BFLOAT16, PENNY_INT8 }, all_ops, { 250, 3, 17, 40 }, 2,
		   64, 96, 0, true);
	test_colls(5, { PENNY_FLOAT, PENNY_HALF }, { PENNY_SUM, PENNY_AVG, PENNY_MAX },
		   { 301, 7, 45 }, 3, 32, 80, 0, true);
	test_colls(3, { PENNY_FLOAT, PENNY_UINT8 }, { PENNY_SUM, PENNY_MIN }, { 703, 40, 97, 8 }, 2,
		   32, 64, 256, true);
	for (int k = 0; k < PN_NCO; k++) {
		test_dead_peer(k, false);
		test_dead_peer(k, true);
	}
	printf("1..%d\n", tap_n);
	return tap_failed ? 1 : 0;
}
