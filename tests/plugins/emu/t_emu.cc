// SPDX-License-Identifier: MIT
// The allreduce, fill and check kernels run on the CPU emulator (emu.h):
// every algorithm x type x op, odd counts, several tiles per block, calls in
// sequence (both parities, in place and out of place), bit-exact against the
// host formula (penny_data.h); plus a buffer mismatch and a dead peer, which
// must end in an error word, not a hang.  TAP output.
#include "emu.h"

#include "../../../plugins/common/kargs.h"
#include "../../../plugins/cuda/ar_kernels.cu"
#include "../../../plugins/common/data_kernels.cu"
#include "emu_check.h"

#include <map>

template <void (*K)(struct pn_ar_args)> static void call_ar(const void *p)
{
	K(*(const struct pn_ar_args *)p);
}
template <void (*K)(struct pn_testdata_args)> static void call_data(const void *p)
{
	K(*(const struct pn_testdata_args *)p);
}

static std::map<std::string, emu_kernel_fn> kernels;

#define REG_AR(algo, tname, oname)                                                             \
	kernels[#algo "_" #tname "_" #oname] = call_ar<pn_ar_##algo##_##tname##_##oname>;
#define REG_OPS(algo, tname)                                                                   \
	REG_AR(algo, tname, sum)                                                               \
	REG_AR(algo, tname, prod) REG_AR(algo, tname, min) REG_AR(algo, tname, max)            \
		REG_AR(algo, tname, avg)
#define REG_TYPES(algo)                                                                        \
	REG_OPS(algo, int8)                                                                    \
	REG_OPS(algo, uint8)                                                                   \
	REG_OPS(algo, int32)                                                                   \
	REG_OPS(algo, uint32)                                                                  \
	REG_OPS(algo, int64)                                                                   \
	REG_OPS(algo, uint64)                                                                  \
	REG_OPS(algo, half)                                                                    \
	REG_OPS(algo, bfloat16) REG_OPS(algo, float) REG_OPS(algo, double)
#define REG_DATA(tname)                                                                        \
	kernels["fill_" #tname] = call_data<pn_fill_##tname>;                                  \
	kernels["check_" #tname] = call_data<pn_check_##tname>;

static void register_kernels(void)
{
	REG_TYPES(oneshot)
	REG_TYPES(oneshot_fl)
	REG_TYPES(twoshot_ll)
	REG_TYPES(twoshot)
	REG_TYPES(ring)
	REG_TYPES(twoshot_hy)
	REG_DATA(int8) REG_DATA(uint8) REG_DATA(int32) REG_DATA(uint32) REG_DATA(int64)
	REG_DATA(uint64) REG_DATA(half) REG_DATA(bfloat16) REG_DATA(float) REG_DATA(double)
}

/* kernels, as the plugin's enum pn_kern */
enum { K_ONESHOT, K_ONESHOT_FL, K_TWOSHOT_LL, K_TWOSHOT, K_RING, K_TWOSHOT_HY, NK };
static const char *anames[NK] = { "oneshot", "oneshot_fl", "twoshot_ll", "twoshot", "ring", "twoshot_hy" };

/* The world: nranks workspaces laid out as the plugin lays them out. */
struct world {
	int n;
	unsigned blocks_max;
	uint32_t slot_bytes;
	uint64_t ll_slot;
	std::vector<char *> ws;
	size_t ws_bytes;
};

static void world_init(world &w, int n, unsigned blocks_max, uint32_t slot_bytes, uint64_t ll_slot)
{
	w.n = n;
	w.blocks_max = blocks_max;
	w.slot_bytes = slot_bytes;
	w.ll_slot = ll_slot;
	w.ws_bytes = PN_WS_LL + 2ull * n * ll_slot + (size_t)blocks_max * 2 * n * slot_bytes;
	for (int r = 0; r < n; r++) {
		char *p = (char *)aligned_alloc(256, (w.ws_bytes + 255) / 256 * 256);

		memset(p, 0, w.ws_bytes);
		w.ws.push_back(p);
	}
}

static void world_free(world &w)
{
	for (char *p : w.ws)
		free(p);
	w.ws.clear();
}

static uint32_t ws_err(const world &w, int r)
{
	return ((uint32_t *)(w.ws[r] + PN_WS_COUNTERS))[PN_CNT_ERR];
}

struct call : emu_bufs {
	int algo;
	unsigned grid, block;
	uint32_t tile;
};

static void call_enqueue(const world &w, const call &c, uint64_t desc_override_rank1 = 0)
{
	std::string name = std::string(anames[c.algo]) + "_" + tnames[c.dt] + "_" + onames[c.op];
	emu_kernel_fn fn = kernels[name];

	for (int r = 0; r < w.n; r++) {
		struct pn_ar_args a;

		memset(&a, 0, sizeof(a));
		a.send = (uint64_t)c.send[r];
		a.recv = (uint64_t)c.recv[r];
		for (int p = 0; p < w.n; p++) {
			a.peer_recv[p] = (uint64_t)c.recv[p];
			a.peer_ws[p] = (uint64_t)w.ws[p];
		}
		a.count = c.count;
		a.desc = 0x1234;
		if (r == 1 && desc_override_rank1)
			a.desc = desc_override_rank1;
		a.timeout_ns = 200000000ull;
		a.tile = c.tile;
		a.slot_bytes = w.slot_bytes;
		a.ll_slot_bytes = w.ll_slot;
		a.rank = r;
		a.nranks = w.n;
		emu_launch_kernel(r, fn, c.grid, c.block, &a, sizeof(a));
		emu_bufs_snap(c, r);
	}
}

/*
 * A sequence of calls of one algorithm on one world, queued back to back on
 * every rank's stream; returns the wrong elements of all of them.
 */
static uint64_t run_sequence(world &w, int algo, int dt, int op, const std::vector<uint64_t> &counts,
			     unsigned grid, unsigned block, uint32_t tile, std::string &why)
{
	std::vector<call> calls;
	uint64_t wrong = 0;
	uint32_t seed = 1000 + dt * 10 + op;

	for (size_t k = 0; k < counts.size(); k++) {
		call c;

		c.algo = algo;
		c.dt = dt;
		c.op = op;
		c.count = counts[k];
		c.inplace = k % 2 == 1;
		c.seed = seed + (uint32_t)k;
		c.grid = grid;
		c.block = block;
		c.tile = tile;
		emu_bufs_alloc(c, w.n);
		calls.push_back(c);
	}
	for (call &c : calls)
		call_enqueue(w, c);
	emu_run();
	for (call &c : calls) {
		uint64_t first, bad = emu_bufs_wrong(c, &first);

		if (bad && why.empty()) {
			char buf[200];

			snprintf(buf, sizeof(buf), "count %llu%s: %llu wrong, first at %llu",
				 (unsigned long long)c.count, c.inplace ? " in place" : "",
				 (unsigned long long)bad, (unsigned long long)first);
			why = buf;
		}
		wrong += bad;
		emu_bufs_free(c);
	}
	for (int r = 0; r < w.n; r++)
		if (ws_err(w, r)) {
			wrong++;
			why += " error word set";
		}
	return wrong;
}

static void test_allreduce(int n, int algo, const std::vector<int> &dts, const std::vector<uint64_t> &counts,
			   unsigned grid, unsigned block, uint32_t tile)
{
	for (int dt : dts)
		for (int op = 0; op < PENNY_NREDOPS; op++) {
			world w;
			std::string why;
			uint64_t maxb = 0;

			for (uint64_t c : counts)
				maxb = c * penny_data_size(dt) > maxb ? c * penny_data_size(dt) : maxb;
			world_init(w, n, grid, 64, (maxb + 7) / 8 * 16 + 16);
			uint64_t bad = run_sequence(w, algo, dt, op, counts, grid, block, tile, why);
			char name[160];

			snprintf(name, sizeof(name), "%s %s %s on %d ranks (grid %u x %u, tile %u)%s%s",
				 anames[algo], tnames[dt], onames[op], n, grid, block, tile,
				 bad ? ": " : "", why.c_str());
			tap(bad == 0, name);
			world_free(w);
		}
}

static void test_data_kernels(void)
{
	for (int dt = 0; dt < PENNY_NDTYPES; dt++) {
		const int op = dt % PENNY_NREDOPS, nr = 3;
		const uint64_t count = 301;
		int es = penny_data_size(dt);
		std::vector<char> buf(count * es + 16);
		unsigned long long res[2] = { 0, ~0ull };
		struct pn_testdata_args a;
		bool ok = true;

		memset(&a, 0, sizeof(a));
		a.ptr = (uint64_t)buf.data();
		a.count = count;
		a.seed = 7;
		a.rank = 2;
		a.op = op;
		emu_launch_kernel(0, kernels[std::string("fill_") + tnames[dt]], 2, 32, &a, sizeof(a));
		emu_run();
		for (uint64_t i = 0; i < count; i++) {
			uint64_t got = 0, want = penny_data_input_bits(dt, op, 7, 2, i);

			memcpy(&got, buf.data() + i * es, es);
			ok = ok && got == want;
		}
		/* expected result in the buffer: check finds 0, then 2 after 2 flips */
		for (uint64_t i = 0; i < count; i++) {
			uint64_t want = penny_data_expected_bits(dt, op, 7, nr, i);

			memcpy(buf.data() + i * es, &want, es);
		}
		a.result = (uint64_t)res;
		a.nranks = nr;
		emu_launch_kernel(0, kernels[std::string("check_") + tnames[dt]], 3, 32, &a, sizeof(a));
		emu_run();
		ok = ok && res[0] == 0;
		buf[5 * es] ^= 1;
		buf[200 * es] ^= 1;
		emu_launch_kernel(0, kernels[std::string("check_") + tnames[dt]], 3, 32, &a, sizeof(a));
		emu_run();
		ok = ok && res[0] == 2 && res[1] == 5;
		tap(ok, std::string("fill and check kernels agree with the host formula: ") + tnames[dt]);
	}
}

/* A rank whose buffer differs: both sides record PN_ERR_DESC, nobody hangs. */
static void test_desc_mismatch(int algo)
{
	world w;
	call c;

	world_init(w, 2, 2, 64, 256);
	c.algo = algo;
	c.dt = PENNY_FLOAT;
	c.op = PENNY_SUM;
	c.count = 100;
	c.inplace = false;
	c.seed = 3;
	c.grid = 2;
	c.block = 32;
	c.tile = 32;
	emu_bufs_alloc(c, w.n);
	call_enqueue(w, c, 0x9999);
	emu_run();
	bool ok = (ws_err(w, 0) & PN_ERR_DESC) || (ws_err(w, 1) & PN_ERR_DESC);
	tap(ok, std::string(anames[algo]) + ": a buffer that differs between ranks is an error, not a hang");
	emu_bufs_free(c);
	world_free(w);
}

/* Only rank 0 launches: its waits time out and set the error word. */
static void test_dead_peer(int algo)
{
	world w;
	call c;

	world_init(w, 2, 1, 64, 256);
	c.algo = algo;
	c.dt = PENNY_INT32;
	c.op = PENNY_SUM;
	c.count = 40;
	c.inplace = false;
	c.seed = 3;
	c.grid = 1;
	c.block = 32;
	c.tile = 32;
	emu_bufs_alloc(c, w.n);
	{
		std::string name = std::string(anames[algo]) + "_int32_sum";
		struct pn_ar_args a;

		memset(&a, 0, sizeof(a));
		a.send = (uint64_t)c.send[0];
		a.recv = (uint64_t)c.recv[0];
		for (int p = 0; p < 2; p++) {
			a.peer_recv[p] = (uint64_t)c.recv[p];
			a.peer_ws[p] = (uint64_t)w.ws[p];
		}
		a.count = c.count;
		a.desc = 1;
		a.timeout_ns = 3000000;
		a.tile = 32;
		a.slot_bytes = w.slot_bytes;
		a.ll_slot_bytes = w.ll_slot;
		a.rank = 0;
		a.nranks = 2;
		emu_launch_kernel(0, kernels[name], 1, 32, &a, sizeof(a));
	}
	emu_run();
	uint32_t *cnt = (uint32_t *)(w.ws[0] + PN_WS_COUNTERS);
	tap((cnt[PN_CNT_ERR] & PN_ERR_TIMEOUT) && cnt[PN_CNT_ERR_INFO] == 1,
	    std::string(anames[algo]) + ": a peer that never comes is a timeout naming it");
	emu_bufs_free(c);
	world_free(w);
}

int main(int argc, char **argv)
{
	std::vector<int> all, some = { PENNY_INT8, PENNY_UINT32, PENNY_HALF, PENNY_BFLOAT16, PENNY_DOUBLE };
	bool quick = argc > 1 && !strcmp(argv[1], "--quick");

	for (int dt = 0; dt < PENNY_NDTYPES; dt++)
		all.push_back(dt);
	register_kernels();
	emu.rng = 12345;
	emu.yield_every = 3;
	emu.stall = 1;
	test_data_kernels();
	/* counts: tails, partial slices, several tiles per block, both parities */
	std::vector<uint64_t> counts = { 1, 37, 203, 0 + 64, 5, 130 };

	/* two-shot LL: every slice non-empty (the host runs it only then);
	 * hybrid: whole 16-byte vectors and a full first tile, too */
	std::vector<uint64_t> ll_counts = { 333, 1000, 517, 2049 };
	std::vector<uint64_t> hy_counts = { 256, 1024, 512, 2048, 272 };

	for (int k = K_ONESHOT; k < NK; k++) {
		const std::vector<uint64_t> &c = k == K_TWOSHOT_LL ? ll_counts : k == K_TWOSHOT_HY ? hy_counts : counts;

		test_allreduce(3, k, all, c, 2, 32, 32);
		if (quick)
			continue;
		test_allreduce(2, k, some, c, 3, 32, 16);
		test_allreduce(4, k, some, k == K_TWOSHOT_LL ? ll_counts : k == K_TWOSHOT_HY ? hy_counts
								     : std::vector<uint64_t>{ 3, 250, 1000, 17 },
			       2, 64, 48);
	}
	test_desc_mismatch(K_TWOSHOT);
	test_desc_mismatch(K_RING);
	for (int k = K_ONESHOT; k < NK; k++)
		test_dead_peer(k);
	printf("1..%d\n", tap_n);
	return tap_failed ? 1 : 0;
}
