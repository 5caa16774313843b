// SPDX-License-Identifier: MIT
// The copy-engine allreduce on the CPU emulator (emu.h): the plugin's own
// host code (cuda_ce.c) enqueues its copies, events and kernels through a
// stand-in driver whose streams are the emulator's (a copy, an event
// record and an event wait are small kernels there, the copy in pieces
// that interleave with everything else), and the real kernels
// (ce_kernels.cu) run.  Every type, every op for some, 2..4 ranks, calls
// back to back of sizes whose piece counts differ (slots of a few hundred
// bytes: many pieces, both parities, every call's first pieces without a
// gate), in place and out of place, bit-exact against the host formula;
// a rank whose recv is another buffer, and a rank that never calls, must
// end in an error word, not a hang.  TAP output.
#include "emu.h"

#include "../../../plugins/common/kargs.h"
#include "../../../plugins/cuda/ce_kernels.cu"
#include "emu_check.h"

extern "C" {
#include "../../../plugins/cuda/cuda_ce.h"
}

#include <map>
#include <string>

/* ---- the stand-in driver: CUstream n is the emulator's stream n - 1 ---- */

template <void (*K)(struct pn_ar_args)> static void call_ar(const void *p)
{
	K(*(const struct pn_ar_args *)p);
}

struct fn_token {
	emu_kernel_fn fn;
};
static std::map<std::string, fn_token> fns;
static int nstreams;

struct fake_event {
	uint64_t recorded;		/* records enqueued */
	volatile uint64_t done;		/* records the stream has passed */
};
struct ev_args {
	fake_event *ev;
	uint64_t gen;
};
static void k_record(const void *p)
{
	const ev_args *a = (const ev_args *)p;

	a->ev->done = a->gen;
}

static void k_wait(const void *p)
{
	const ev_args *a = (const ev_args *)p;

	while (a->ev->done < a->gen)
		emu_yield();
}

/* a copy engine: a few hundred bytes at a time, others running between
 * (its arguments: the snapshot's, emu_check.h) */
static void k_copy(const void *p)
{
	const emu_snap_args *a = (const emu_snap_args *)p;

	for (size_t off = 0; off < a->len; off += 96) {
		memcpy(a->dst + off, a->src + off, a->len - off < 96 ? a->len - off : 96);
		emu_yield();
	}
}

static int sidx(CUstream s)
{
	return (int)(uintptr_t)s - 1;
}

static CUresult f_getfunc(CUfunction *f, CUmodule m, const char *name)
{
	(void)m;
	if (!fns.count(name))
		return (CUresult)500; /* CUDA_ERROR_NOT_FOUND */
	*f = (CUfunction)&fns[name];
	return CUDA_SUCCESS;
}
static CUresult f_screate(CUstream *s, unsigned fl)
{
	(void)fl;
	*s = (CUstream)(uintptr_t)(1 + nstreams++);
	return CUDA_SUCCESS;
}
static CUresult f_sdestroy(CUstream s)
{
	(void)s;
	return CUDA_SUCCESS;
}
static CUresult f_ecreate(CUevent *e, unsigned fl)
{
	(void)fl;
	*e = (CUevent) new fake_event();
	return CUDA_SUCCESS;
}
static CUresult f_edestroy(CUevent e)
{
	delete (fake_event *)e;
	return CUDA_SUCCESS;
}
static CUresult f_erecord(CUevent e, CUstream s)
{
	fake_event *ev = (fake_event *)e;
	ev_args a = { ev, ++ev->recorded };

	emu_launch_kernel(sidx(s), k_record, 1, 1, &a, sizeof(a));
	return CUDA_SUCCESS;
}
static CUresult f_wait(CUstream s, CUevent e, unsigned fl)
{
	fake_event *ev = (fake_event *)e;
	ev_args a = { ev, ev->recorded };

	(void)fl;
	emu_launch_kernel(sidx(s), k_wait, 1, 1, &a, sizeof(a));
	return CUDA_SUCCESS;
}
static CUresult f_copy(CUdeviceptr d, CUdeviceptr s, size_t n, CUstream st)
{
	emu_snap_args a = { (char *)(uintptr_t)d, (const char *)(uintptr_t)s, n };

	emu_launch_kernel(sidx(st), k_copy, 1, 1, &a, sizeof(a));
	return CUDA_SUCCESS;
}
static CUresult f_errstr(CUresult r, const char **s)
{
	(void)r;
	*s = "stand-in driver error";
	return CUDA_SUCCESS;
}

static struct pn_cudrv fake_cu;

/* the plugin's launch (plugins/common/gpu.c), on the emulator */
extern "C" int pn_gpu_launch(struct pn_gpu *g, CUfunction f, unsigned grid, unsigned block, void *args)
{
	emu_launch_kernel(sidx(g->stream), ((fn_token *)f)->fn, grid, block, args,
			  sizeof(struct pn_ar_args));
	return 0;
}

#define REG_CE(tname, oname) fns["pn_ar_ce_" #tname "_" #oname].fn = call_ar<pn_ar_ce_##tname##_##oname>;
#define REG_OPS(tname)                                                                         \
	REG_CE(tname, sum) REG_CE(tname, prod) REG_CE(tname, min) REG_CE(tname, max) REG_CE(tname, avg)

static void setup(void)
{
	REG_OPS(int8) REG_OPS(uint8) REG_OPS(int32) REG_OPS(uint32) REG_OPS(int64) REG_OPS(uint64)
	REG_OPS(half) REG_OPS(bfloat16) REG_OPS(float) REG_OPS(double)
	fns["pn_ce_gate"].fn = call_ar<pn_ce_gate>;
	fake_cu.ModuleGetFunction = f_getfunc;
	fake_cu.StreamCreate = f_screate;
	fake_cu.StreamDestroy = f_sdestroy;
	fake_cu.EventCreate = f_ecreate;
	fake_cu.EventDestroy = f_edestroy;
	fake_cu.EventRecord = f_erecord;
	fake_cu.StreamWaitEvent = f_wait;
	fake_cu.MemcpyAsync = f_copy;
	fake_cu.GetErrorString = f_errstr;
}

/* ---- a world: n ranks, each a GPU with its workspace (the error word),
 * CE area and a registered buffer that holds send and recv ---- */

struct world {
	int n;
	uint64_t slots;
	struct pn_gpu g[PN_AR_MAX_RANKS];
	struct pn_reg ws[PN_AR_MAX_RANKS], area[PN_AR_MAX_RANKS], buf[PN_AR_MAX_RANKS];
	struct pn_ce *ce[PN_AR_MAX_RANKS];
	size_t buf_bytes;
};

static char *zalloc(size_t bytes)
{
	char *p = (char *)aligned_alloc(256, (bytes + 255) / 256 * 256);

	memset(p, 0, (bytes + 255) / 256 * 256);
	return p;
}

static bool world_init(world &w, int n, uint64_t slots, size_t buf_bytes)
{
	w.n = n;
	w.slots = slots;
	w.buf_bytes = buf_bytes;
	for (int r = 0; r < n; r++) {
		memset(&w.g[r], 0, sizeof(w.g[r]));
		w.g[r].cu = &fake_cu;
		f_screate(&w.g[r].stream, 0);
		memset(&w.ws[r], 0, sizeof(w.ws[r]));
		memset(&w.area[r], 0, sizeof(w.area[r]));
		memset(&w.buf[r], 0, sizeof(w.buf[r]));
		w.ws[r].base = (CUdeviceptr)zalloc(PN_WS_LL);
		w.area[r].bytes = PN_CE_HDR + slots;
		w.area[r].base = (CUdeviceptr)zalloc(w.area[r].bytes);
		((uint32_t *)w.area[r].base)[PN_CE_ONE] = 1; /* as cuda.c's ce_start */
		w.buf[r].id = 7;
		w.buf[r].bytes = buf_bytes;
		w.buf[r].base = (CUdeviceptr)zalloc(buf_bytes);
	}
	for (int r = 0; r < n; r++)
		for (int p = 0; p < n; p++) {
			w.ws[r].peer[p] = w.ws[p].base;
			w.area[r].peer[p] = w.area[p].base;
			w.buf[r].peer[p] = w.buf[p].base;
			w.buf[r].peer_bytes[p] = buf_bytes;
		}
	for (int r = 0; r < n; r++)
		if (pn_ce_open(&w.g[r], r, n, &w.area[r], NULL, &w.ce[r]))
			return false;
	return true;
}

static void world_free(world &w)
{
	for (int r = 0; r < w.n; r++) {
		pn_ce_close(w.ce[r]);
		free((void *)w.ws[r].base);
		free((void *)w.area[r].base);
		free((void *)w.buf[r].base);
	}
	emu.streams.clear();
	nstreams = 0;
}

static uint32_t err_word(const world &w, int r)
{
	return ((const uint32_t *)(w.ws[r].base + PN_WS_COUNTERS))[PN_CNT_ERR];
}

/* One call: count elements of dt at elements off of every rank's buffer
 * (send there, recv after it or in place), inputs from the formula; the
 * snapshots of recv are taken on each rank's stream after the call. */
struct ce_call {
	int dt, op;
	uint64_t count, off;
	bool inplace;
	uint32_t seed;
	std::vector<std::vector<char> > snap;
};

static uint64_t send_at(const world &w, int r, const ce_call &c)
{
	return w.buf[r].base + c.off * penny_data_size(c.dt);
}

static uint64_t recv_at(const world &w, int r, const ce_call &c)
{
	return c.inplace ? send_at(w, r, c) : send_at(w, r, c) + c.count * penny_data_size(c.dt);
}

/* skip: the rank that never calls (-1: none); off_of: a rank whose buffer
 * is 16 bytes further on (-1: none) */
static int enqueue(world &w, ce_call &c, int skip, int off_of)
{
	int es = penny_data_size(c.dt);

	c.snap.assign(w.n, std::vector<char>(c.count * es));
	for (int r = 0; r < w.n; r++) {
		char *s = (char *)send_at(w, r, c);

		for (uint64_t i = 0; i < c.count; i++) {
			uint64_t bits = penny_data_input_bits(c.dt, c.op, c.seed, r, i);

			memcpy(s + i * es, &bits, es);
		}
		if (!c.inplace)
			memset((char *)recv_at(w, r, c), 0xA5, c.count * es);
	}
	for (int r = 0; r < w.n; r++) {
		struct pn_ce_call k;
		std::string name = std::string("pn_ar_ce_") + tnames[c.dt] + "_" + onames[c.op];
		int ret;

		if (r == skip)
			continue;
		memset(&k, 0, sizeof(k));
		k.send = send_at(w, r, c);
		k.recv = recv_at(w, r, c) + (r == off_of ? 16 : 0);
		k.bytes = c.count * es;
		k.esize = (unsigned)es;
		k.reg = &w.buf[r];
		k.ws = &w.ws[r];
		k.reduce = (CUfunction)&fns[name];
		k.grid = 3;
		k.timeout_ns = 20000000ull;
		ret = pn_ce_run(w.ce[r], &k);
		if (ret)
			return ret;
		emu_snap_args sa = { c.snap[r].data(), (const char *)recv_at(w, r, c), c.count * es };

		emu_launch_kernel(sidx(w.g[r].stream), emu_snap_kernel, 1, 1, &sa, sizeof(sa));
	}
	return 0;
}

static uint64_t wrong(const world &w, const ce_call &c, uint64_t *first)
{
	uint64_t bad = 0;
	int es = penny_data_size(c.dt);

	*first = ~0ull;
	for (int r = 0; r < w.n; r++)
		for (uint64_t i = 0; i < c.count; i++) {
			uint64_t want = penny_data_expected_bits(c.dt, c.op, c.seed, w.n, i), got = 0;

			memcpy(&got, c.snap[r].data() + i * es, es);
			if (got != want) {
				bad++;
				*first = i < *first ? i : *first;
			}
		}
	return bad;
}

/* Calls of these byte sizes back to back (every other in place) on a world
 * of n ranks with slots of slot bytes each. */
static void test_sequence(int n, int dt, int op, uint64_t slot, const std::vector<uint64_t> &sizes)
{
	int es = penny_data_size(dt);
	uint64_t most = 0;
	world w;
	std::vector<ce_call> calls;
	std::string why;
	char name[200];

	/* each call its own part of the buffer (all are enqueued, inputs
	 * written, before any runs), at offsets of 0, 16 or 32 bytes */
	for (uint64_t b : sizes)
		most += 2 * b + 48;
	if (!world_init(w, n, slot * 2 * (n - 1), most)) {
		tap(false, std::string("pn_ce_open: ") + pn_plugin_errmsg());
		return;
	}
	for (size_t k = 0, at = 0; k < sizes.size(); at += 2 * sizes[k] + 48, k++) {
		ce_call c;

		c.dt = dt;
		c.op = op;
		c.count = sizes[k] / es;
		c.off = (at + 16 * (k % 3)) / es;
		c.inplace = k % 2 == 1;
		c.seed = 500 + (uint32_t)(dt * 10 + op + k);
		calls.push_back(c);
	}
	for (ce_call &c : calls)
		if (enqueue(w, c, -1, -1))
			why = std::string("pn_ce_run: ") + pn_plugin_errmsg();
	emu_run();
	uint64_t bad = 0;
	for (ce_call &c : calls) {
		uint64_t first, b = wrong(w, c, &first);

		if (b && why.empty()) {
			char buf[160];

			snprintf(buf, sizeof(buf), "%llu bytes%s: %llu wrong, first at %llu",
				 (unsigned long long)(c.count * es), c.inplace ? " in place" : "",
				 (unsigned long long)b, (unsigned long long)first);
			why = buf;
		}
		bad += b;
	}
	for (int r = 0; r < n; r++)
		if (err_word(w, r)) {
			bad++;
			why += " error word set";
		}
	snprintf(name, sizeof(name), "ce %s %s on %d ranks, %llu-byte slots, %zu calls%s%s", tnames[dt],
		 onames[op], n, (unsigned long long)slot, sizes.size(), bad || !why.empty() ? ": " : "",
		 why.c_str());
	tap(bad == 0 && why.empty(), name);
	world_free(w);
}

/* A rank's recv 16 bytes off (another buffer), or a rank that never calls:
 * an error word, and the emulator's run ends. */
static void test_faults(int n)
{
	for (int fault = 0; fault < 2; fault++) {
		world w;
		ce_call c;
		bool ok;

		world_init(w, n, 2 * 2 * (n - 1) * 512, 8192 + 64);
		c.dt = 8; /* float */
		c.op = PENNY_SUM;
		c.count = 1024;
		c.off = 0;
		c.inplace = false;
		c.seed = 9;
		ok = enqueue(w, c, fault ? n - 1 : -1, fault ? -1 : 1) == 0;
		emu_run();
		if (fault == 0) {
			/* rank 1 stored at its offset into the others' recv: they say so */
			ok = ok && (err_word(w, 0) & PN_ERR_DESC);
			tap(ok, "ce: a rank whose recv is another buffer: PN_ERR_DESC on " + std::to_string(n) + " ranks");
		} else {
			for (int r = 0; r < n - 1; r++)
				ok = ok && (err_word(w, r) & PN_ERR_TIMEOUT);
			tap(ok, "ce: a rank that never calls: the others time out, no hang, on " +
					std::to_string(n) + " ranks");
		}
		world_free(w);
	}
}

int main(void)
{
	setup();
	emu.rng = 0x5eed;
	emu.yield_every = 3;
	emu.stall = 1;
	/* sizes: 16-byte lines, odd counts of them; slots of 256 or 512 bytes:
	 * from 1 piece's worth to dozens, odd and even counts of pieces before
	 * rounding up */
	const std::vector<uint64_t> sizes = { 16 * 333, 16, 16 * 7, 16 * 1001, 16 * 96, 16 * 65 };

	for (int dt = 0; dt < PENNY_NDTYPES; dt++)
		test_sequence(2 + dt % 3, dt, dt % PENNY_NREDOPS, dt % 2 ? 256 : 512, sizes);
	for (int op = 0; op < PENNY_NREDOPS; op++)
		test_sequence(3, 8, op, 256, sizes); /* float, every op */
	test_sequence(4, 7, PENNY_SUM, 1024, sizes); /* bfloat16 */
	test_sequence(2, 9, PENNY_AVG, 4096, { 16 * 4096 + 16 * 3, 16 * 5 });
	for (int n = 2; n <= 3; n++)
		test_faults(n);
	printf("1..%d\n", tap_n);
	return tap_failed ? 1 : 0;
}
