// SPDX-License-Identifier: MIT
// The cross-node kernel pn_xn_<type>_<op> (xn_kernels.cu) on the CPU
// emulator, against a stand-in for the core's proxy that keeps the box
// protocol of penny_plugin.h (outbox ready/sent, inbox ready/done): every
// type x op, plain chunks and LL lines, counts with tails, more chunks
// than slots (slots reused, the kernel waits for the proxy's sent word),
// calls in sequence (the tickets in device memory carry on, in place and
// out of place), a slow proxy that lands the lines of a chunk in a random
// order, and the two ends of a dead call: the proxy's abort word
// (PN_ERR_XNODE) and a node that never sends (PN_ERR_TIMEOUT naming it).
// Bit-exact against penny_data.h.  TAP output.
#include "emu.h"

#include "../../../plugins/common/kargs.h"
#include "../../../plugins/cuda/xn_kernels.cu"
#include "../../../plugins/include/penny_plugin.h"
#include "emu_check.h"

#include <algorithm>
#include <map>

template <void (*K)(struct pn_xn_args)> static void call_xn(const void *p)
{
	K(*(const struct pn_xn_args *)p);
}

static std::map<std::string, emu_kernel_fn> kernels;

#define REG_XN(tname, oname) kernels[#tname "_" #oname] = call_xn<pn_xn_##tname##_##oname>;
#define REG_XN_OPS(tname)                                                                      \
	REG_XN(tname, sum) REG_XN(tname, prod) REG_XN(tname, min) REG_XN(tname, max)           \
		REG_XN(tname, avg)

static void register_kernels(void)
{
	REG_XN_OPS(int8) REG_XN_OPS(uint8) REG_XN_OPS(int32) REG_XN_OPS(uint32) REG_XN_OPS(int64)
	REG_XN_OPS(uint64) REG_XN_OPS(half) REG_XN_OPS(bfloat16) REG_XN_OPS(float) REG_XN_OPS(double)
}

/* The nodes: one rank per node (the same local index everywhere), each
 * with its boxes laid out as penny_plugin.h says, its tickets and error word. */
struct xworld {
	int n;
	uint32_t slots;
	uint64_t stride;	/* data bytes per slot */
	std::vector<char *> out, in;
	std::vector<uint64_t *> ctr;
	std::vector<uint32_t *> err;
	bool scramble;		/* the proxy lands a chunk's 16-byte lines in a random order */
};

static void xworld_init(xworld &w, int n, uint32_t slots, uint64_t stride)
{
	w.n = n;
	w.slots = slots;
	w.stride = stride;
	w.scramble = false;
	for (int r = 0; r < n; r++) {
		size_t ob = penny_xbox_out_bytes(slots, stride), ib = penny_xbox_in_bytes(n, slots, stride);

		w.out.push_back((char *)aligned_alloc(4096, (ob + 4095) / 4096 * 4096));
		w.in.push_back((char *)aligned_alloc(4096, (ib + 4095) / 4096 * 4096));
		memset(w.out[r], 0, ob);
		memset(w.in[r], 0, ib);
		w.ctr.push_back((uint64_t *)calloc(n + 2, 8));
		w.err.push_back((uint32_t *)calloc(2, 4));
	}
}

static void xworld_free(xworld &w)
{
	for (int r = 0; r < w.n; r++) {
		free(w.out[r]);
		free(w.in[r]);
		free(w.ctr[r]);
		free(w.err[r]);
	}
	w.out.clear();
	w.in.clear();
	w.ctr.clear();
	w.err.clear();
}

static struct penny_xout_slot *out_slot(const xworld &w, int r, uint64_t t)
{
	return (struct penny_xout_slot *)(w.out[r] + PENNY_XBOX_LINE +
					  (t % w.slots) * sizeof(struct penny_xout_slot));
}

/*
 * The proxy of node r, as a fiber on its own stream: ticket by ticket, it
 * waits for the kernel's ready word, copies the chunk into ring r of every
 * other node's inbox once that slot's done word freed it, raises the
 * inbox's ready word, then the outbox's sent word.  It ends after
 * `tickets` tickets or when a wait passes `spins` polls (a dead call).
 */
struct proxy_args {
	xworld *w;
	int r;
	uint64_t tickets, spins;
};

static bool proxy_wait(const volatile uint64_t *p, uint64_t v, uint64_t &left)
{
	while (__atomic_load_n(p, __ATOMIC_ACQUIRE) < v) {
		if (!left--)
			return false;
		emu_yield();
	}
	return true;
}

static void proxy_kernel(const void *p)
{
	const proxy_args *a = (const proxy_args *)p;
	xworld &w = *a->w;
	uint64_t left = a->spins;

	for (uint64_t t = 0; t < a->tickets; t++) {
		struct penny_xout_slot *o = out_slot(w, a->r, t);

		if (!proxy_wait(&o->ready, t + 1, left))
			return;
		uint64_t len = o->len;
		const char *src = w.out[a->r] + penny_xbox_out_data(w.slots, w.stride, (uint32_t)(t % w.slots));

		if (len > w.stride)
			abort(); /* the kernel wrote past its slot */
		for (int q = 0; q < w.n; q++) {
			if (q == a->r || !(o->mask & (1ull << q)))
				continue;
			struct penny_xin_slot *h =
				(struct penny_xin_slot *)(w.in[q] + penny_xbox_in_hdr(w.slots, a->r, (uint32_t)(t % w.slots)));
			char *dst = w.in[q] + penny_xbox_in_data(w.n, w.slots, w.stride, a->r, (uint32_t)(t % w.slots));

			if (t >= w.slots && !proxy_wait(&h->done, t + 1 - w.slots, left))
				return;
			if (w.scramble) {
				/* 16-byte lines in a random order, a yield between some */
				std::vector<uint64_t> lines;

				for (uint64_t off = 0; off < len; off += 16)
					lines.push_back(off);
				for (size_t i = lines.size(); i > 1; i--)
					std::swap(lines[i - 1], lines[emu_rand() % i]);
				for (uint64_t off : lines) {
					memcpy(dst + off, src + off, len - off < 16 ? len - off : 16);
					if (emu_rand() % 3 == 0)
						emu_yield();
				}
			} else {
				memcpy(dst, src, len);
			}
			h->len = len;
			__atomic_store_n(&h->ready, t + 1, __ATOMIC_RELEASE);
		}
		__atomic_store_n(&o->sent, t + 1, __ATOMIC_RELEASE);
	}
}

struct xcall : emu_bufs {
	uint64_t chunk;
	int ll;
	unsigned grid, block;
};

static struct pn_xn_args xargs(const xworld &w, const xcall &c, int r, uint64_t timeout_ns)
{
	struct pn_xn_args a;

	memset(&a, 0, sizeof(a));
	a.send = (uint64_t)c.send[r];
	a.recv = (uint64_t)c.recv[r];
	a.count = c.count;
	a.ctl = (uint64_t)w.out[r];
	a.out_hdr = (uint64_t)(w.out[r] + PENNY_XBOX_LINE);
	a.out_data = (uint64_t)(w.out[r] + penny_xbox_out_data(w.slots, w.stride, 0));
	a.in_hdr = (uint64_t)(w.in[r] + penny_xbox_in_hdr(w.slots, 0, 0));
	a.in_data = (uint64_t)(w.in[r] + penny_xbox_in_data(w.n, w.slots, w.stride, 0, 0));
	a.ctr = (uint64_t)w.ctr[r];
	a.err = (uint64_t)w.err[r];
	a.slot_bytes = c.chunk;
	a.stride = w.stride;
	a.timeout_ns = timeout_ns;
	a.slots = w.slots;
	a.nnodes = w.n;
	a.node = r;
	a.nranks = w.n;
	a.ll = (uint32_t)c.ll;
	return a;
}

static uint64_t chunks_of(const xcall &c)
{
	uint64_t bytes = c.count * penny_data_size(c.dt);

	return (bytes + c.chunk - 1) / c.chunk;
}

/* Calls in sequence on every node, the proxies beside them; wrong elements. */
static uint64_t run_sequence(xworld &w, std::vector<xcall> &calls, std::string &why)
{
	uint64_t tickets = 0, wrong = 0;

	for (xcall &c : calls) {
		tickets += chunks_of(c);
		for (int r = 0; r < w.n; r++) {
			struct pn_xn_args a = xargs(w, c, r, 200000000ull);

			emu_launch_kernel(r, kernels[std::string(tnames[c.dt]) + "_" + onames[c.op]], c.grid,
					  c.block, &a, sizeof(a));
			emu_bufs_snap(c, r);
		}
	}
	for (int r = 0; r < w.n; r++) {
		proxy_args pa = { &w, r, tickets, 1u << 22 };

		emu_launch_kernel(w.n + r, proxy_kernel, 1, 1, &pa, sizeof(pa));
	}
	emu_run();
	for (xcall &c : calls) {
		uint64_t first, bad = emu_bufs_wrong(c, &first);

		if (bad && why.empty()) {
			char buf[200];

			snprintf(buf, sizeof(buf), "count %llu%s: %llu wrong, first at %llu",
				 (unsigned long long)c.count, c.inplace ? " in place" : "",
				 (unsigned long long)bad, (unsigned long long)first);
			why = buf;
		}
		wrong += bad;
	}
	for (int r = 0; r < w.n; r++) {
		if (w.err[r][0]) {
			wrong++;
			why += " error word set";
		}
		/* the tickets moved on by every chunk of every call */
		if (w.ctr[r][0] != tickets || w.ctr[r][1 + w.n]) {
			wrong++;
			why += " tickets not moved on";
		}
	}
	return wrong;
}

/* A sequence of calls of the given counts on n nodes; one TAP line per type x op. */
static void test_xnode(int n, uint32_t slots, uint64_t stride, uint64_t chunk, int ll, bool scramble,
		       const std::vector<int> &dts, const std::vector<uint64_t> &counts, unsigned block)
{
	for (int dt : dts)
		for (int op = 0; op < PENNY_NREDOPS; op++) {
			xworld w;
			std::vector<xcall> calls;
			std::string why;

			xworld_init(w, n, slots, stride);
			w.scramble = scramble;
			for (size_t k = 0; k < counts.size(); k++) {
				xcall c;

				c.dt = dt;
				c.op = op;
				c.count = counts[k];
				c.inplace = k % 2 == 1;
				c.seed = 500 + dt * 10 + op + (uint32_t)k;
				c.chunk = chunk;
				c.ll = ll;
				c.block = block;
				c.grid = (unsigned)std::min<uint64_t>(chunks_of(c), std::min<uint32_t>(slots, 16));
				emu_bufs_alloc(c, n);
				calls.push_back(c);
			}
			uint64_t bad = run_sequence(w, calls, why);
			char name[200];

			snprintf(name, sizeof(name), "xnode %s %s %s on %d nodes (%u slots, chunk %llu, %u threads%s)%s%s",
				 ll ? "LL" : "plain", tnames[dt], onames[op], n, slots, (unsigned long long)chunk,
				 block, scramble ? ", lines out of order" : "", bad ? ": " : "", why.c_str());
			tap(bad == 0, name);
			for (xcall &c : calls)
				emu_bufs_free(c);
			xworld_free(w);
		}
}

/* One call of count elements of dt (sum) on n nodes: 128-byte chunks, 4 blocks of 32. */
static void small_call(xcall &c, int n, int dt, uint64_t count, int ll)
{
	c.dt = dt;
	c.op = PENNY_SUM;
	c.count = count;
	c.inplace = false;
	c.seed = 3;
	c.chunk = 128;
	c.ll = ll;
	c.grid = 4;
	c.block = 32;
	emu_bufs_alloc(c, n);
}

/*
 * Node 1's proxy gave up (its abort word) and no proxy runs: node 1's
 * kernel stops with PN_ERR_XNODE, not a timeout; node 0's, whose peer
 * never sends, times out (3 ms).
 */
static void test_abort(int ll)
{
	xworld w;
	xcall c;

	xworld_init(w, 2, 4, 256);
	small_call(c, 2, PENNY_FLOAT, 200, ll);
	*(volatile uint64_t *)w.out[1] = 1;
	for (int r = 0; r < 2; r++) {
		struct pn_xn_args a = xargs(w, c, r, r == 0 ? 3000000 : 200000000ull);

		emu_launch_kernel(r, kernels["float_sum"], c.grid, c.block, &a, sizeof(a));
	}
	emu_run();
	tap((w.err[1][0] & PN_ERR_XNODE) && !(w.err[1][0] & PN_ERR_TIMEOUT),
	    std::string(ll ? "LL" : "plain") + ": the proxy's abort word ends the kernel with PN_ERR_XNODE");
	tap((w.err[0][0] & PN_ERR_TIMEOUT) && w.err[0][1] == 1,
	    std::string(ll ? "LL" : "plain") + ": the node whose peer never sends times out naming it");
	emu_bufs_free(c);
	xworld_free(w);
}

/* Node 2 of 3 never runs: the others time out naming it, and stop. */
static void test_dead_node(int ll)
{
	xworld w;
	xcall c;

	xworld_init(w, 3, 4, 256);
	small_call(c, 3, PENNY_INT32, 100, ll);
	for (int r = 0; r < 2; r++) {
		struct pn_xn_args a = xargs(w, c, r, 3000000);
		proxy_args pa = { &w, r, chunks_of(c), 20000 };

		emu_launch_kernel(r, kernels["int32_sum"], c.grid, c.block, &a, sizeof(a));
		emu_launch_kernel(3 + r, proxy_kernel, 1, 1, &pa, sizeof(pa));
	}
	emu_run();
	bool ok = true;

	for (int r = 0; r < 2; r++)
		ok = ok && (w.err[r][0] & PN_ERR_TIMEOUT) && w.err[r][1] == 2 && w.ctr[r][0] == chunks_of(c);
	tap(ok, std::string(ll ? "LL" : "plain") +
			": a node that never sends is a timeout naming it; the tickets still move on");
	emu_bufs_free(c);
	xworld_free(w);
}

int main(int argc, char **argv)
{
	std::vector<int> all, some = { PENNY_INT8, PENNY_HALF, PENNY_BFLOAT16, PENNY_FLOAT, PENNY_DOUBLE };
	bool quick = argc > 1 && !strcmp(argv[1], "--quick");

	for (int dt = 0; dt < PENNY_NDTYPES; dt++)
		all.push_back(dt);
	register_kernels();
	emu.rng = 4242;
	emu.yield_every = 3;
	emu.stall = 1;
	/* counts with tails and more chunks than slots, calls back to back */
	std::vector<uint64_t> counts = { 1, 37, 203, 64, 5, 130 };

	test_xnode(2, 3, 256, 64, 0, false, all, counts, 32);
	test_xnode(2, 3, 256, 64, 1, false, all, counts, 32);
	if (!quick) {
		/* three and four nodes; chunks larger than a block's first vector
		 * pass (the kernel's "small" first chunk and its general path) */
		test_xnode(3, 2, 1024, 1024, 0, false, some, { 1000, 3, 517, 2049 }, 32);
		test_xnode(4, 4, 512, 256, 1, false, some, { 7, 300, 1000, 64 }, 32);
		test_xnode(3, 4, 512, 128, 1, true, some, { 333, 90, 1001 }, 64);
	}
	test_abort(0);
	test_abort(1);
	test_dead_node(0);
	test_dead_node(1);
	printf("1..%d\n", tap_n);
	return tap_failed ? 1 : 0;
}
