/* SPDX-License-Identifier: MIT */
/*
 * What the emulator tests of the cuda and nvshmem kernels share: TAP
 * output, the type and op names the kernels are registered under, the
 * ranks' inputs and expected results from penny_data.h, and a kernel that
 * snapshots recv right after an allreduce on the same stream (an allreduce
 * that ends before its result is complete shows in the snapshot).
 * Include after emu.h and penny_data.h, in one C++ translation unit.
 */
#ifndef PENNY_EMU_CHECK_H
#define PENNY_EMU_CHECK_H

#include <string>
#include <vector>

static int tap_n, tap_failed;

static void tap(bool ok, const std::string &what)
{
	tap_n++;
	if (!ok)
		tap_failed++;
	printf("%s %d - %s\n", ok ? "ok" : "not ok", tap_n, what.c_str());
	fflush(stdout);
}

static const char *tnames[] = { "int8", "uint8", "int32", "uint32", "int64",
				"uint64", "half", "bfloat16", "float", "double" };
static const char *onames[] = { "sum", "prod", "min", "max", "avg" };

/* One allreduce's buffers on every rank: inputs from the formula, recv
 * poisoned (out of place), and each rank's snapshot of recv. */
struct emu_bufs {
	int dt, op;
	uint64_t count;
	bool inplace;
	uint32_t seed;
	std::vector<char *> send, recv, snap; /* per rank */
};

static void emu_bufs_alloc(emu_bufs &c, int nranks)
{
	size_t bytes = c.count * penny_data_size(c.dt) + 16;
	int es = penny_data_size(c.dt);

	for (int r = 0; r < nranks; r++) {
		char *s = (char *)aligned_alloc(256, (bytes + 255) / 256 * 256);
		char *d = c.inplace ? s : (char *)aligned_alloc(256, (bytes + 255) / 256 * 256);

		for (uint64_t i = 0; i < c.count; i++) {
			uint64_t bits = penny_data_input_bits(c.dt, c.op, c.seed, r, i);

			memcpy(s + i * es, &bits, es);
		}
		if (!c.inplace)
			memset(d, 0xA5, bytes);
		c.send.push_back(s);
		c.recv.push_back(d);
		c.snap.push_back((char *)calloc(1, bytes));
	}
}

static void emu_bufs_free(emu_bufs &c)
{
	for (size_t r = 0; r < c.send.size(); r++) {
		if (!c.inplace)
			free(c.recv[r]);
		free(c.send[r]);
		free(c.snap[r]);
	}
	c.send.clear();
	c.recv.clear();
	c.snap.clear();
}

/* Wrong elements in every rank's snapshot; *first: the lowest wrong index. */
static uint64_t emu_bufs_wrong(const emu_bufs &c, uint64_t *first)
{
	uint64_t wrong = 0;
	int es = penny_data_size(c.dt), n = (int)c.snap.size();

	*first = ~0ull;
	for (int r = 0; r < n; r++)
		for (uint64_t i = 0; i < c.count; i++) {
			uint64_t want = penny_data_expected_bits(c.dt, c.op, c.seed, n, i), got = 0;

			memcpy(&got, c.snap[r] + i * es, es);
			if (got != want) {
				wrong++;
				*first = i < *first ? i : *first;
			}
		}
	return wrong;
}

struct emu_snap_args {
	char *dst;
	const char *src;
	size_t len;
};

static void emu_snap_kernel(const void *p)
{
	const emu_snap_args *a = (const emu_snap_args *)p;

	memcpy(a->dst, a->src, a->len);
}

/* Queue rank r's snapshot of recv after what its stream holds. */
static void emu_bufs_snap(const emu_bufs &c, int r)
{
	emu_snap_args sa = { c.snap[r], c.recv[r], c.count * penny_data_size(c.dt) };

	emu_launch_kernel(r, emu_snap_kernel, 1, 1, &sa, sizeof(sa));
}

#endif
