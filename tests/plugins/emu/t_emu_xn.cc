// SPDX-License-Identifier: MIT
// The cross-node kernels pn_xn_<type>_<op> and pn_xn_copy (xn_kernels.cu)
// on the CPU emulator, against a stand-in for the core's proxy that keeps
// the box protocol of penny_plugin.h (outbox ready/sent, inbox ready/done).
// The allreduce: every type x op, plain chunks and LL lines, counts with
// tails, more chunks than slots (slots reused, the kernel waits for the
// proxy's sent word), calls in sequence (the tickets in device memory carry
// on, in place and out of place), a slow proxy that lands the lines of a
// chunk in a random order.  The other collectives (xnode_coll, their
// arguments from pn_xn_coll_args as the plugin makes them): every kind,
// every type x op of the two that reduce, in sequences that mix kinds, the
// allreduce and calls where a node sends or hears nothing (the tickets of
// each ring checked after them), roots, in place, strides that put blocks
// off 16-byte boundaries, poison around every block (nothing else
// written), across 2, 3 and 4 nodes (the kinds that send a block to one
// node: outbox tickets whose masks leave nodes out, which the stand-in
// proxy counts per pair of nodes as the core's does).  The ends of a dead
// call: the proxy's abort word
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
	kernels["copy"] = call_xn<pn_xn_copy>;
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
		w.ctr.push_back((uint64_t *)calloc(n + 3, 8));
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
 * waits for the kernel's ready word, copies the chunk into ring r of the
 * inbox of every node of its mask (its k-th chunk to that node: counted
 * per node) once that slot's done word freed it, raises the inbox's ready
 * word, then the outbox's sent word.  It ends after `tickets` tickets or
 * when a wait passes `spins` polls (a dead call).
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
	std::vector<uint64_t> sent_to(w.n);

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
			const uint64_t k = sent_to[q]++;
			struct penny_xin_slot *h =
				(struct penny_xin_slot *)(w.in[q] + penny_xbox_in_hdr(w.slots, a->r, (uint32_t)(k % w.slots)));
			char *dst = w.in[q] + penny_xbox_in_data(w.n, w.slots, w.stride, a->r, (uint32_t)(k % w.slots));

			if (k >= w.slots && !proxy_wait(&h->done, k + 1 - w.slots, left))
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
			__atomic_store_n(&h->ready, k + 1, __ATOMIC_RELEASE);
		}
		__atomic_store_n(&o->sent, t + 1, __ATOMIC_RELEASE);
	}
}

struct xcall : emu_bufs {
	uint64_t chunk;
	int ll;
	unsigned grid, block;
};

/* Node r's boxes, tickets and error word for a call of count elements. */
static struct pn_xn_args xbox_args(const xworld &w, int r, uint64_t count, uint64_t chunk, int ll,
				   uint64_t timeout_ns)
{
	struct pn_xn_args a;

	memset(&a, 0, sizeof(a));
	a.count = count;
	a.ctl = (uint64_t)w.out[r];
	a.out_hdr = (uint64_t)(w.out[r] + PENNY_XBOX_LINE);
	a.out_data = (uint64_t)(w.out[r] + penny_xbox_out_data(w.slots, w.stride, 0));
	a.in_hdr = (uint64_t)(w.in[r] + penny_xbox_in_hdr(w.slots, 0, 0));
	a.in_data = (uint64_t)(w.in[r] + penny_xbox_in_data(w.n, w.slots, w.stride, 0, 0));
	a.ctr = (uint64_t)w.ctr[r];
	a.err = (uint64_t)w.err[r];
	a.slot_bytes = chunk;
	a.stride = w.stride;
	a.timeout_ns = timeout_ns;
	a.slots = w.slots;
	a.nnodes = w.n;
	a.node = r;
	a.nranks = w.n;
	a.ll = (uint32_t)ll;
	return a;
}

/* The allreduce's arguments, as xnode.c's xn_allreduce makes them. */
static struct pn_xn_args xargs(const xworld &w, const xcall &c, int r, uint64_t timeout_ns)
{
	struct pn_xn_args a = xbox_args(w, r, c.count, c.chunk, c.ll, timeout_ns);

	a.send = a.own = (uint64_t)c.send[r];
	a.recv = (uint64_t)c.recv[r];
	a.from = a.to = ((1u << w.n) - 1) & ~(1u << r);
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

/*
 * The other collectives.  One call of a sequence: the allreduce (kind 0)
 * or a PENNY_XC_*, with its buffers on every node: a region of poison with
 * the send blocks in it (node q's send block j, element i: the formula of
 * (seed + j, q, i)), the recv blocks in the same region (in place) or in a
 * poisoned one of their own, and after the kernel a snapshot of both.
 */
struct xop {
	int kind, dt, op, root, ll;
	uint64_t count, sstride, rstride;	/* strides as passed (0: count elements) */
	uint64_t shift;		/* bytes from a 16-byte boundary to the first block */
	bool inplace;
	uint32_t seed;
	uint64_t chunk;
	unsigned block;
	size_t sbytes, rbytes;	/* the regions' sizes */
	std::vector<char *> sreg, rreg, sinit, rinit, ssnap, rsnap;
	std::vector<char *> send, recv;
};

#define XGUARD 64	/* poison before and after the blocks */

static int xc_sblocks(int kind, int n)
{
	return kind == PENNY_XC_REDUCE_SCATTER || kind == PENNY_XC_ALLTOALL ? n : 1;
}

static int xc_rblocks(int kind, int n)
{
	return kind == PENNY_XC_ALLGATHER || kind == PENNY_XC_ALLTOALL ? n : 1;
}

static bool xc_reduces(int kind)
{
	return kind == 0 || kind == PENNY_XC_REDUCE || kind == PENNY_XC_REDUCE_SCATTER;
}

static uint64_t xop_bytes(const xop &o)
{
	return o.count * penny_data_size(o.dt);
}

static uint64_t xop_chunks(const xop &o)
{
	return (xop_bytes(o) + o.chunk - 1) / o.chunk;
}

/* The formula's op for a call's inputs (the copies: sum's values). */
static int xop_iop(const xop &o)
{
	return xc_reduces(o.kind) ? o.op : PENNY_SUM;
}

static void put_elem(char *p, const xop &o, uint64_t bits)
{
	memcpy(p, &bits, penny_data_size(o.dt));
}

static void xop_alloc(xop &o, int n)
{
	const uint64_t bytes = xop_bytes(o), es = penny_data_size(o.dt);
	const uint64_t ss = o.sstride ? o.sstride : bytes, rs = o.rstride ? o.rstride : bytes;
	const uint64_t sspan = (xc_sblocks(o.kind, n) - 1) * ss + bytes;
	const uint64_t rspan = (xc_rblocks(o.kind, n) - 1) * rs + bytes;

	o.sbytes = XGUARD + o.shift + std::max(sspan, rspan) + XGUARD;
	o.rbytes = XGUARD + o.shift + rspan + XGUARD;
	for (int r = 0; r < n; r++) {
		char *sr = (char *)aligned_alloc(64, (o.sbytes + 63) / 64 * 64);
		char *rr = o.inplace ? sr : (char *)aligned_alloc(64, (o.rbytes + 63) / 64 * 64);
		char *s = sr + XGUARD + o.shift, *d = o.inplace ? s : rr + XGUARD + o.shift;

		memset(sr, 0xA5, o.sbytes);
		if (!o.inplace)
			memset(rr, 0x5A, o.rbytes);
		/* nccl-tests' in place: send is recv's block me (allgather), recv send's block me
		 * (reduce_scatter) */
		if (o.inplace && o.kind == PENNY_XC_ALLGATHER)
			s += r * rs;
		if (o.inplace && o.kind == PENNY_XC_REDUCE_SCATTER)
			d += r * ss;
		for (int j = 0; j < xc_sblocks(o.kind, n); j++)
			for (uint64_t i = 0; i < o.count; i++)
				put_elem(s + j * ss + i * es, o,
					 penny_data_input_bits(o.dt, xop_iop(o), o.seed + j, r, i));
		o.sreg.push_back(sr);
		o.rreg.push_back(rr);
		o.send.push_back(s);
		o.recv.push_back(d);
		o.sinit.push_back((char *)malloc(o.sbytes));
		o.rinit.push_back((char *)malloc(o.inplace ? o.sbytes : o.rbytes));
		memcpy(o.sinit[r], sr, o.sbytes);
		memcpy(o.rinit[r], rr, o.inplace ? o.sbytes : o.rbytes);
		o.ssnap.push_back((char *)calloc(1, o.sbytes));
		o.rsnap.push_back((char *)calloc(1, o.inplace ? o.sbytes : o.rbytes));
	}
}

static void xop_free(xop &o)
{
	for (size_t r = 0; r < o.sreg.size(); r++) {
		if (!o.inplace)
			free(o.rreg[r]);
		free(o.sreg[r]);
		free(o.sinit[r]);
		free(o.rinit[r]);
		free(o.ssnap[r]);
		free(o.rsnap[r]);
	}
}

/* Node r's recv region as it must be after the call (penny_plugin.h's
 * semantics; the rest keeps its poison or, in place, its send data). */
static std::vector<char> xop_expected(const xop &o, int r, int n)
{
	const uint64_t bytes = xop_bytes(o), es = penny_data_size(o.dt);
	const uint64_t rs = o.rstride ? o.rstride : bytes;
	const size_t len = o.inplace ? o.sbytes : o.rbytes;
	std::vector<char> e(o.rinit[r], o.rinit[r] + len);
	char *d = e.data() + (o.recv[r] - o.rreg[r]);

	for (uint64_t i = 0; i < o.count; i++) {
		const uint64_t at = i * es;

		switch (o.kind) {
		case 0:
			put_elem(d + at, o, penny_data_expected_bits(o.dt, o.op, o.seed, n, i));
			break;
		case PENNY_XC_ALLGATHER:
			for (int q = 0; q < n; q++)
				put_elem(d + q * rs + at, o, penny_data_input_bits(o.dt, PENNY_SUM, o.seed, q, i));
			break;
		case PENNY_XC_BROADCAST:
			put_elem(d + at, o, penny_data_input_bits(o.dt, PENNY_SUM, o.seed, o.root, i));
			break;
		case PENNY_XC_REDUCE:
			if (r == o.root)
				put_elem(d + at, o, penny_data_expected_bits(o.dt, o.op, o.seed, n, i));
			break;
		case PENNY_XC_REDUCE_SCATTER:
			put_elem(d + at, o, penny_data_expected_bits(o.dt, o.op, o.seed + r, n, i));
			break;
		case PENNY_XC_ALLTOALL:
			for (int q = 0; q < n; q++)
				put_elem(d + q * rs + at, o, penny_data_input_bits(o.dt, PENNY_SUM, o.seed + r, q, i));
			break;
		default:
			put_elem(d + at, o, penny_data_input_bits(o.dt, PENNY_SUM, o.seed, (r + n - 1) % n, i));
		}
	}
	return e;
}

/* The tickets node r sends a chunk of call o / whether it hears from node
 * q (the kinds' rules, independent of pn_xn_coll_args: the tickets the
 * kernel must move on). */
static uint64_t xop_sends(const xop &o, int r, int n)
{
	if ((o.kind == PENNY_XC_BROADCAST && r != o.root) || (o.kind == PENNY_XC_REDUCE && r == o.root))
		return 0;
	return o.kind == PENNY_XC_REDUCE_SCATTER || o.kind == PENNY_XC_ALLTOALL ? n - 1 : 1;
}

static bool xop_hears(const xop &o, int r, int q, int n)
{
	return q != r && !(o.kind == PENNY_XC_BROADCAST && q != o.root) &&
	       !(o.kind == PENNY_XC_REDUCE && r != o.root) &&
	       !(o.kind == PENNY_XC_SENDRECV && q != (r + n - 1) % n);
}

/* Node r's kernel arguments for o: the allreduce's, or xnode_coll's from
 * pn_xn_coll_args as pn_cuda_xnode_coll makes them. */
static struct pn_xn_args xop_args(const xworld &w, const xop &o, int r, uint64_t timeout_ns)
{
	struct pn_xn_args a = xbox_args(w, r, o.count, o.chunk, o.ll, timeout_ns);

	if (!o.kind) {
		a.send = a.own = (uint64_t)o.send[r];
		a.recv = (uint64_t)o.recv[r];
		a.from = a.to = ((1u << w.n) - 1) & ~(1u << r);
		return a;
	}
	struct penny_xcoll_v1 c;

	memset(&c, 0, sizeof(c));
	c.size = sizeof(c);
	c.kind = o.kind;
	c.send = o.send[r];
	c.recv = o.recv[r];
	c.count = o.count;
	c.dtype = o.dt;
	c.op = o.op;
	c.root = o.root;
	c.sstride = o.sstride;
	c.rstride = o.rstride;
	pn_xn_coll_args(&a, &c, xop_bytes(o), r, w.n);
	a.esize = (uint32_t)penny_data_size(o.dt);
	return a;
}

static emu_kernel_fn xop_kernel(const xop &o)
{
	return kernels[xc_reduces(o.kind) ? std::string(tnames[o.dt]) + "_" + onames[o.op] : "copy"];
}

static const char *xc_name(int kind)
{
	static const char *const names[] = { "allreduce", "allgather", "broadcast", "reduce",
					     "reduce_scatter", "alltoall", "sendrecv" };
	return names[kind];
}

/* The calls in sequence on every node, the proxies beside them; the
 * regions and tickets checked after.  Returns the number of wrong things. */
static uint64_t run_ops(xworld &w, std::vector<xop> &ops, std::string &why)
{
	std::vector<uint64_t> tickets(w.n), heard((size_t)w.n * w.n);
	uint64_t wrong = 0;

	for (xop &o : ops) {
		xop_alloc(o, w.n);
		for (int r = 0; r < w.n; r++) {
			struct pn_xn_args a = xop_args(w, o, r, 200000000ull);
			const uint64_t nch = xop_chunks(o);
			unsigned grid = (unsigned)std::min<uint64_t>(nch, std::min<uint32_t>(w.slots, 16));
			emu_snap_args rs = { o.rsnap[r], o.rreg[r], o.inplace ? o.sbytes : o.rbytes };
			emu_snap_args ss = { o.ssnap[r], o.sreg[r], o.sbytes };

			emu_launch_kernel(r, xop_kernel(o), grid, o.block, &a, sizeof(a));
			emu_launch_kernel(r, emu_snap_kernel, 1, 1, &rs, sizeof(rs));
			emu_launch_kernel(r, emu_snap_kernel, 1, 1, &ss, sizeof(ss));
			tickets[r] += xop_sends(o, r, w.n) * nch;
			for (int q = 0; q < w.n; q++)
				heard[r * w.n + q] += xop_hears(o, r, q, w.n) ? nch : 0;
		}
	}
	for (int r = 0; r < w.n; r++) {
		proxy_args pa = { &w, r, tickets[r], 1u << 22 };

		emu_launch_kernel(w.n + r, proxy_kernel, 1, 1, &pa, sizeof(pa));
	}
	emu_run();
	for (size_t k = 0; k < ops.size(); k++) {
		xop &o = ops[k];

		for (int r = 0; r < w.n; r++) {
			std::vector<char> e = xop_expected(o, r, w.n);
			bool rok = !memcmp(e.data(), o.rsnap[r], e.size());
			bool sok = o.inplace || !memcmp(o.sinit[r], o.ssnap[r], o.sbytes);

			if ((!rok || !sok) && why.empty()) {
				char buf[200];
				size_t at = 0;

				while (!rok && e[at] == o.rsnap[r][at])
					at++;
				/* the first wrong byte from recv (negative: in the guard before it) */
				snprintf(buf, sizeof(buf), "call %zu (%s, count %llu%s) on node %d: %s %lld",
					 k, xc_name(o.kind), (unsigned long long)o.count,
					 o.inplace ? " in place" : "", r,
					 rok ? "send written" : "recv wrong at byte",
					 rok ? 0ll : (long long)at - (long long)(o.recv[r] - o.rreg[r]));
				why = buf;
			}
			wrong += !rok + !sok;
		}
	}
	for (int r = 0; r < w.n; r++) {
		bool ok = !w.err[r][0] && w.ctr[r][0] == tickets[r] && !w.ctr[r][1 + w.n];

		for (int q = 0; q < w.n; q++)
			ok = ok && w.ctr[r][1 + q] == heard[r * w.n + q];
		if (!ok) {
			wrong++;
			why += w.err[r][0] ? " error word set" : " tickets wrong";
		}
	}
	return wrong;
}

/*
 * Call k of a sequence of kind on n nodes: counts with tails and more
 * chunks than slots, roots taking turns, every other call in place,
 * strides past the block by an element or 16 bytes (blocks off 16-byte
 * boundaries), the first block off one too.
 */
static xop xop_make(int kind, int dt, int op, int k, int n, int ll, unsigned block)
{
	static const uint64_t counts[] = { 37, 203, 130, 1, 64 };
	const uint64_t es = penny_data_size(dt);
	xop o;

	o.kind = kind;
	o.dt = dt;
	o.op = op;
	o.root = (k + 1) % n;
	o.ll = ll;
	o.count = counts[k % 5];
	o.inplace = k % 2 == 1;
	o.sstride = k % 3 == 1 ? (o.count + 1) * es : k % 3 == 2 ? o.count * es + 16 : 0;
	o.rstride = k % 3 == 2 ? (o.count + 3) * es : 0;
	if (o.inplace && kind == PENNY_XC_ALLTOALL)
		o.rstride = o.sstride; /* send == recv: the same blocks */
	o.shift = k == 2 ? es : 0;
	o.seed = 900 + 37 * kind + 11 * dt + op + (uint32_t)k;
	o.chunk = 64;
	o.block = block;
	return o;
}

/*
 * A sequence of calls of kind (dt, op) on n nodes, calls where some node
 * sends or hears nothing (broadcast, reduce) and the allreduce between
 * them: plain chunks or LL lines; one TAP line.
 */
static void test_coll_seq(int kind, int n, int dt, int op, int ll, bool scramble, unsigned block)
{
	xworld w;
	std::vector<xop> ops;
	std::string why;

	xworld_init(w, n, 3, 256);
	w.scramble = scramble;
	for (int k = 0; k < 5; k++) {
		ops.push_back(xop_make(kind, dt, op, k, n, ll, block));
		if (k == 1) {
			/* a node that sends nothing: reduce or broadcast */
			xop o = xop_make(kind != PENNY_XC_REDUCE ? PENNY_XC_REDUCE : PENNY_XC_BROADCAST,
					 dt, PENNY_SUM, 3, n, !ll, block);

			o.root = n - 1;
			ops.push_back(o);
		}
		if (k == 3)
			ops.push_back(xop_make(0, dt, op, 4, n, ll, block));
	}
	uint64_t bad = run_ops(w, ops, why);
	char name[300];

	snprintf(name, sizeof(name), "xnode_coll %s %s %s%s%s on %d nodes (%u threads%s)%s%s",
		 ll ? "LL" : "plain", xc_name(kind), tnames[dt], xc_reduces(kind) ? " " : "",
		 xc_reduces(kind) ? onames[op] : "", n, block, scramble ? ", lines out of order" : "",
		 bad ? ": " : "", why.c_str());
	tap(bad == 0, name);
	for (xop &o : ops)
		xop_free(o);
	xworld_free(w);
}

/*
 * pn_xn_copy's dead calls: an alltoall whose node 1 sees its proxy's abort
 * word (PN_ERR_XNODE) while node 0, no proxy running, times out naming it
 * as the alltoall; a broadcast whose root (node 2 of 3) never runs: the
 * others time out naming it and move on its ring's tickets, not their
 * outboxes'.
 */
static void test_coll_dead(int ll)
{
	const std::string p = ll ? "LL" : "plain";
	xworld w;
	xop o = xop_make(PENNY_XC_ALLTOALL, PENNY_FLOAT, PENNY_SUM, 0, 2, ll, 32);

	o.count = 200;
	xworld_init(w, 2, 4, 256);
	xop_alloc(o, 2);
	*(volatile uint64_t *)w.out[1] = 1;
	for (int r = 0; r < 2; r++) {
		struct pn_xn_args a = xop_args(w, o, r, r == 0 ? 3000000 : 200000000ull);

		emu_launch_kernel(r, kernels["copy"], 4, 32, &a, sizeof(a));
	}
	emu_run();
	tap((w.err[1][0] & PN_ERR_XNODE) && !(w.err[1][0] & PN_ERR_TIMEOUT),
	    p + ": the proxy's abort word ends pn_xn_copy with PN_ERR_XNODE");
	tap((w.err[0][0] & PN_ERR_TIMEOUT) && w.err[0][1] == PN_ERR_DETAIL(1, 1 + PN_CO_ALLTOALL),
	    p + ": an alltoall whose peer never sends times out naming it and the alltoall");
	xop_free(o);
	xworld_free(w);

	xop b = xop_make(PENNY_XC_BROADCAST, PENNY_HALF, PENNY_SUM, 0, 3, ll, 32);
	bool ok = true;

	b.root = 2;
	xworld_init(w, 3, 4, 256);
	xop_alloc(b, 3);
	for (int r = 0; r < 2; r++) {
		struct pn_xn_args a = xop_args(w, b, r, 3000000);

		emu_launch_kernel(r, kernels["copy"], 1, 32, &a, sizeof(a));
	}
	emu_run();
	for (int r = 0; r < 2; r++)
		ok = ok && (w.err[r][0] & PN_ERR_TIMEOUT) &&
		     w.err[r][1] == PN_ERR_DETAIL(2, 1 + PN_CO_BROADCAST) && w.ctr[r][0] == 0 &&
		     w.ctr[r][1] == 0 && w.ctr[r][2] == 0 && w.ctr[r][3] == xop_chunks(b);
	tap(ok, p + ": a broadcast whose root never sends is a timeout naming it; its tickets move on");
	xop_free(b);
	xworld_free(w);
}

static void test_coll(bool quick)
{
	static const int copies[] = { PENNY_XC_ALLGATHER, PENNY_XC_BROADCAST, PENNY_XC_ALLTOALL,
				      PENNY_XC_SENDRECV };
	static const int cdts[] = { PENNY_INT8, PENNY_HALF, PENNY_FLOAT, PENNY_DOUBLE };

	for (int ll = 0; ll < 2; ll++) {
		for (int kind : { PENNY_XC_REDUCE, PENNY_XC_REDUCE_SCATTER })
			for (int dt = 0; dt < PENNY_NDTYPES; dt++)
				for (int op = 0; op < PENNY_NREDOPS; op++) {
					test_coll_seq(kind, 2, dt, op, ll, false, 32);
					/* 3 and 4 nodes: in node order, a type each */
					if (dt % 3 == (op + ll) % 3)
						test_coll_seq(kind, 3 + (dt + op) % 2, dt, op, ll, false, 32);
				}
		for (int kind : copies)
			for (int dt : cdts) {
				test_coll_seq(kind, 2, dt, PENNY_SUM, ll, false, 32);
				test_coll_seq(kind, 3, dt, PENNY_SUM, ll, false, 32);
				if (dt == PENNY_HALF || dt == PENNY_DOUBLE)
					test_coll_seq(kind, 4, dt, PENNY_SUM, ll, false, 32);
			}
	}
	if (!quick)
		for (int kind : copies)
			test_coll_seq(kind, 3 + (kind == PENNY_XC_ALLTOALL), PENNY_BFLOAT16, PENNY_SUM, 1,
				      true, 64);
	test_coll_dead(0);
	test_coll_dead(1);
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
	test_coll(quick);
	printf("1..%d\n", tap_n);
	return tap_failed ? 1 : 0;
}
