// SPDX-License-Identifier: MIT
// The nvshmem plugin's kernels (nv_kernels.cu) on the CPU emulator
// (emu.h) with a stand-in for the few NVSHMEM device calls
// they make: every PE's symmetric work area is a heap of its own, a put
// copies into the peer's heap at the same offset (byte by byte, with random
// fiber switches) and then sets the peer's signal word.  Checked: every
// kernel x type x op on 2, 3 and 4 PEs, odd counts (tails), several blocks,
// calls in sequence (both parities, in place and out of place), kernels of
// different algorithms one after another (auto picks by size), PEs on one
// node (nvshmem_ptr answers: data, fence, signal) and on several (a NIC's
// put-with-signal), bit-exact
// against the host formula (penny_data.h); and a PE that never comes, which
// must end in the error word naming it, not a hang.  TAP output.
#include "emu.h"

#define __launch_bounds__(a, b)

#include "../../../plugins/common/pn_dev.cuh"
#include "../../../plugins/include/penny_plugin.h"

/* ---- the NVSHMEM device calls nv_kernels.cu makes ---- */
#define NVSHMEM_SIGNAL_SET 0
#define NVSHMEM_SIGNAL_ADD 5

struct emu_nv_world {
	std::vector<char *> heap; /* per PE: the symmetric work area */
	size_t bytes;
	int nodes; /* PEs p and q share a node (NVLink) when p % nodes == q % nodes */
};
static emu_nv_world emu_nv;

/* The PE whose heap holds p, and p's offset in it. */
static int emu_nv_locate(const void *p, size_t *off)
{
	for (size_t r = 0; r < emu_nv.heap.size(); r++) {
		const char *h = emu_nv.heap[r];

		if ((const char *)p >= h && (const char *)p < h + emu_nv.bytes) {
			*off = (size_t)((const char *)p - h);
			return (int)r;
		}
	}
	fprintf(stderr, "t_emu_nv: %p is not in any symmetric heap\n", p);
	abort();
}

static uint64_t *emu_nv_remote_sig(uint64_t *sig, int pe)
{
	size_t off;

	emu_nv_locate(sig, &off);
	return (uint64_t *)(emu_nv.heap[pe] + off);
}

static void emu_nv_signal(uint64_t *sig, uint64_t v, int op, int pe)
{
	uint64_t *w = emu_nv_remote_sig(sig, pe);

	*w = op == NVSHMEM_SIGNAL_ADD ? *w + v : v;
}

static uint64_t nvshmem_signal_fetch(uint64_t *sig)
{
	pn_pause();
	return *(volatile uint64_t *)sig;
}

static void nvshmemx_signal_op(uint64_t *sig, uint64_t v, int op, int pe)
{
	emu_nv_signal(sig, v, op, pe);
}

/* Block-collective, data only (ordered for a reader by a later fence + signal). */
static void nvshmemx_putmem_nbi_block(void *dst, const void *src, size_t len, int pe)
{
	size_t off;

	emu_nv_locate(dst, &off);
	char *d = emu_nv.heap[pe] + off;

	pn_sync();
	for (size_t i = pn_tid(); i < len; i += pn_ntid()) {
		pn_maybe_yield();
		d[i] = ((const char *)src)[i];
	}
	pn_sync();
}

/* Block-collective: the data lands (in any order) before the signal. */
static void nvshmemx_putmem_signal_block(void *dst, const void *src, size_t len, uint64_t *sig,
					 uint64_t v, int op, int pe)
{
	nvshmemx_putmem_nbi_block(dst, src, len, pe);
	if (pn_tid() == 0)
		emu_nv_signal(sig, v, op, pe);
	pn_sync();
}

/* A peer on the same node answers with its address; others through a NIC: NULL. */
static void *nvshmem_ptr(const void *p, int pe)
{
	size_t off;
	int me = emu_nv_locate(p, &off);

	if (me % emu_nv.nodes != pe % emu_nv.nodes)
		return NULL;
	return emu_nv.heap[pe] + off;
}

static void nvshmem_quiet(void) {}

#define PN_NV_CHUNK 96ull /* several chunks per ring step even in short calls */
#include "../../../plugins/nvshmem/nv_kernels.cu"
#include "emu_check.h"

#include <map>

template <void (*K)(struct pn_nv_args)> static void call_nv(const void *p)
{
	K(*(const struct pn_nv_args *)p);
}

static std::map<std::string, emu_kernel_fn> kernels;

#define REG_NV(kname, tname, oname)                                                            \
	kernels[#kname "_" #tname "_" #oname] = call_nv<pn_nv_##kname##_##tname##_##oname>;
#define REG_OPS(kname, tname)                                                                  \
	REG_NV(kname, tname, sum)                                                              \
	REG_NV(kname, tname, prod) REG_NV(kname, tname, min) REG_NV(kname, tname, max)         \
		REG_NV(kname, tname, avg)
#define REG_TYPES(kname)                                                                       \
	REG_OPS(kname, int8)                                                                   \
	REG_OPS(kname, uint8)                                                                  \
	REG_OPS(kname, int32)                                                                  \
	REG_OPS(kname, uint32)                                                                 \
	REG_OPS(kname, int64)                                                                  \
	REG_OPS(kname, uint64)                                                                 \
	REG_OPS(kname, half)                                                                   \
	REG_OPS(kname, bfloat16) REG_OPS(kname, float) REG_OPS(kname, double)

static void register_kernels(void)
{
	REG_TYPES(oneshot)
	REG_TYPES(twoshot)
	REG_TYPES(ring)
	REG_TYPES(simple)
	REG_TYPES(oneshot_ll)
}

static const char *knames[] = { "oneshot", "twoshot", "ring", "simple", "oneshot_ll" };

/* n PEs: symmetric heaps as the plugin lays them out, local counters. */
struct world {
	int n;
	unsigned blocks;
	uint64_t slot;
	std::vector<uint64_t *> local; /* per PE: epoch per block, then the error words */
};

static int nodes_now = 1; /* the layout of the next world (emu_nv_world.nodes) */
/* planned rings of the next calls (set_rings' table: order, then places), none when empty */
static std::vector<std::vector<int>> rings_now;
static std::vector<int32_t> rings_tab;

static void rings_build(int n)
{
	rings_tab.clear();
	for (const std::vector<int> &r : rings_now) {
		std::vector<int32_t> pos(n);

		for (int i = 0; i < n; i++) {
			rings_tab.push_back(r[i]);
			pos[r[i]] = i;
		}
		rings_tab.insert(rings_tab.end(), pos.begin(), pos.end());
	}
}

static void world_init(world &w, int n, unsigned blocks, uint64_t slot)
{
	emu_nv.nodes = nodes_now;
	w.n = n;
	w.blocks = blocks;
	w.slot = slot;
	/* data, signals, then the LL area for calls of up to slot bytes */
	emu_nv.bytes = pn_nv_ll_off(n, slot, blocks) + pn_nv_ll_bytes(n, slot);
	for (int r = 0; r < n; r++) {
		char *h = (char *)aligned_alloc(256, (emu_nv.bytes + 255) / 256 * 256);
		uint64_t *l = (uint64_t *)calloc(PN_NV_MAX_BLOCKS + 2, 8);

		memset(h, 0, emu_nv.bytes);
		emu_nv.heap.push_back(h);
		w.local.push_back(l);
	}
}

static void world_free(world &w)
{
	for (char *h : emu_nv.heap)
		free(h);
	for (uint64_t *l : w.local)
		free(l);
	emu_nv.heap.clear();
	w.local.clear();
}

static uint32_t *err_words(const world &w, int r)
{
	return (uint32_t *)(w.local[r] + PN_NV_MAX_BLOCKS);
}

struct call : emu_bufs {
	int kern;
};

static struct pn_nv_args call_args(const world &w, const call &c, int r, uint64_t timeout_ns)
{
	struct pn_nv_args a;

	memset(&a, 0, sizeof(a));
	a.src = (uint64_t)c.send[r];
	a.recv = (uint64_t)c.recv[r];
	a.data = (uint64_t)emu_nv.heap[r];
	a.sig = (uint64_t)emu_nv.heap[r] + pn_nv_sig_off(w.n, w.slot);
	a.ctr = (uint64_t)w.local[r];
	a.err = (uint64_t)err_words(w, r);
	a.bytes = c.count * penny_data_size(c.dt);
	a.slot = w.slot;
	/* PENNY_NVSHMEM_CHUNK's value on odd counts, the kernels' default (96 B here) else */
	a.chunk = c.count % 2 ? 48 : 0;
	a.timeout_ns = timeout_ns;
	a.rank = r;
	a.nranks = w.n;
	a.ll = (uint64_t)emu_nv.heap[r] + pn_nv_ll_off(w.n, w.slot, w.blocks);
	a.ll_slot = pn_nv_ll_slot(w.slot);
	a.llctr = (uint64_t)(w.local[r] + PN_NV_MAX_BLOCKS + 1);
	a.rings = (uint64_t)rings_tab.data();
	a.nrings = (int32_t)rings_now.size();
	for (int q = 1; q < w.n && q < PN_NV_LL_MAX_PES; q++) {
		char *pw = (char *)nvshmem_ptr(emu_nv.heap[r], (r + q) % w.n);

		a.p2p[q] = pw ? pw - emu_nv.heap[r] : 0;
	}
	return a;
}

static std::string kernel_name(const call &c)
{
	return std::string(knames[c.kern]) + "_" + tnames[c.dt] + "_" + onames[c.op];
}

static void call_enqueue(const world &w, const call &c, unsigned grid, unsigned block)
{
	emu_kernel_fn fn = kernels[kernel_name(c)];

	for (int r = 0; r < w.n; r++) {
		struct pn_nv_args a = call_args(w, c, r, 200000000ull);

		emu_launch_kernel(r, fn, grid, block, &a, sizeof(a));
		emu_bufs_snap(c, r);
	}
}

/*
 * Calls queued back to back on every PE's stream: kerns[k % size] for the
 * k-th, so one sequence may mix algorithms.  Returns the wrong elements.
 */
static uint64_t run_sequence(world &w, const std::vector<int> &kerns, int dt, int op,
			     const std::vector<uint64_t> &counts, unsigned grid, unsigned block,
			     std::string &why)
{
	std::vector<call> calls;
	uint64_t wrong = 0;

	for (size_t k = 0; k < counts.size(); k++) {
		call c;

		c.kern = kerns[k % kerns.size()];
		c.dt = dt;
		c.op = op;
		c.count = counts[k];
		c.inplace = k % 2 == 1;
		c.seed = 1000 + dt * 10 + op + (uint32_t)k;
		emu_bufs_alloc(c, w.n);
		calls.push_back(c);
	}
	for (call &c : calls)
		call_enqueue(w, c, grid, block);
	emu_run();
	for (call &c : calls) {
		uint64_t first, bad = emu_bufs_wrong(c, &first);

		if (bad && why.empty()) {
			char buf[200];

			snprintf(buf, sizeof(buf), "%s count %llu%s: %llu wrong, first at %llu",
				 knames[c.kern], (unsigned long long)c.count,
				 c.inplace ? " in place" : "", (unsigned long long)bad,
				 (unsigned long long)first);
			why = buf;
		}
		wrong += bad;
		emu_bufs_free(c);
	}
	for (int r = 0; r < w.n; r++)
		if (err_words(w, r)[0]) {
			wrong++;
			why += " error word set";
		}
	return wrong;
}

static void test_allreduce(int n, const std::vector<int> &kerns, const std::vector<int> &dts,
			   const std::vector<uint64_t> &counts, unsigned grid, unsigned block)
{
	std::string kn;

	for (int k : kerns)
		kn += (kn.empty() ? "" : "+") + std::string(knames[k]);
	for (int dt : dts)
		for (int op = 0; op < PENNY_NREDOPS; op++) {
			world w;
			std::string why;
			uint64_t maxb = 0;
			char name[200];

			for (uint64_t c : counts)
				maxb = c * penny_data_size(dt) > maxb ? c * penny_data_size(dt) : maxb;
			world_init(w, n, grid, (maxb + 15) / 16 * 16);
			rings_build(n);
			uint64_t bad = run_sequence(w, kerns, dt, op, counts, grid, block, why);

			snprintf(name, sizeof(name), "%s %s %s on %d PEs, %s (grid %u x %u)%s%s%s",
				 kn.c_str(), tnames[dt], onames[op], n,
				 nodes_now == 1 ? "one node" : nodes_now >= n ? "one PE per node" : "several nodes",
				 grid, block, rings_now.empty() ? "" : ", planned rings",
				 bad ? ": " : "", why.c_str());
			tap(bad == 0, name);
			world_free(w);
		}
}

/* Only PE 0 launches: its waits time out and the error word names PE 1. */
static void test_dead_peer(int kern)
{
	world w;
	call c;

	world_init(w, 2, 1, 256);
	c.kern = kern;
	c.dt = PENNY_INT32;
	c.op = PENNY_SUM;
	c.count = 40;
	c.inplace = false;
	c.seed = 3;
	emu_bufs_alloc(c, w.n);
	struct pn_nv_args a = call_args(w, c, 0, 3000000ull);

	emu_launch_kernel(0, kernels[kernel_name(c)], 1, 32, &a, sizeof(a));
	emu_run();
	tap((err_words(w, 0)[0] & PN_NV_ERR_TIMEOUT) && err_words(w, 0)[1] == 1,
	    std::string(knames[kern]) + ": a PE that never comes is a timeout naming it");
	emu_bufs_free(c);
	world_free(w);
}

int main(int argc, char **argv)
{
	std::vector<int> all, some = { PENNY_INT8, PENNY_UINT32, PENNY_HALF, PENNY_BFLOAT16, PENNY_DOUBLE };
	bool quick = argc > 1 && !strcmp(argv[1], "--quick");
	/* tails (odd byte counts), slices shorter than a vector, both parities */
	std::vector<uint64_t> counts = { 1, 37, 203, 64, 5, 130 };

	for (int dt = 0; dt < PENNY_NDTYPES; dt++)
		all.push_back(dt);
	register_kernels();
	emu.rng = 54321;
	emu.yield_every = 3;
	emu.stall = 1;
	for (int k = 0; k < PN_NV_NKERNS; k++) {
		test_allreduce(3, { k }, all, counts, 2, 32);
		if (quick)
			continue;
		test_allreduce(2, { k }, some, counts, 3, 32);
		test_allreduce(4, { k }, some, { 3, 250, 1000, 17 }, 2, 64);
	}
	/* PEs on several nodes: put-with-signal to the far ones, NVLink to the near
	 * (the LL one-shot runs only where NVLink reaches every PE) */
	for (int k = 0; k < PN_NV_NKERNS; k++) {
		if (k == PN_NV_ONESHOT_LL)
			continue;
		nodes_now = 2;
		test_allreduce(4, { k }, some, { 3, 250, 1000, 17 }, 2, 32);
		nodes_now = 3;
		if (!quick)
			test_allreduce(3, { k }, some, counts, 2, 32);
		nodes_now = 1;
	}
	/* planned rings: block b follows ring b % 2 (an order and its reverse, as a
	 * rail plan alternates them), on one node and on two */
	rings_now = { { 0, 2, 1, 3 }, { 3, 1, 2, 0 } };
	test_allreduce(4, { PN_NV_RING }, some, { 3, 250, 1000, 17 }, 3, 32);
	nodes_now = 2;
	test_allreduce(4, { PN_NV_RING, PN_NV_ONESHOT, PN_NV_RING }, { PENNY_FLOAT, PENNY_INT8 },
		       { 1000, 41, 300, 7 }, 2, 32);
	nodes_now = 1;
	rings_now = { { 2, 0, 1 } };
	test_allreduce(3, { PN_NV_RING }, { PENNY_HALF, PENNY_UINT32 }, counts, 2, 32);
	rings_now.clear();
	/* auto: one block's calls of different algorithms follow each other */
	test_allreduce(3, { PN_NV_RING, PN_NV_RING, PN_NV_ONESHOT, PN_NV_SIMPLE, PN_NV_ONESHOT_LL,
			    PN_NV_SIMPLE, PN_NV_TWOSHOT, PN_NV_ONESHOT_LL, PN_NV_ONESHOT_LL },
		       { PENNY_FLOAT, PENNY_HALF }, { 40, 41, 300, 7, 96, 1000, 33, 129, 64 }, 2, 32);
	for (int k = 0; k < PN_NV_NKERNS; k++)
		test_dead_peer(k);
	printf("1..%d\n", tap_n);
	return tap_failed ? 1 : 0;
}
