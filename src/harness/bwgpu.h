/* SPDX-License-Identifier: MIT */
/*
 * penny bw --gpu: the matrices of p2pBandwidthLatencyTest / nvbandwidth
 * (every source GPU x every destination GPU of this host) from a plugin's
 * bw(): unidirectional and bidirectional bandwidth (GB/s = 1e9 B/s;
 * bidirectional counts both directions) and latency (us), with copy
 * engines (cuMemcpyAsync) and/or SM copies (kernel loads and stores).
 * This file owns which matrices a run asks for and their measurement;
 * nothing here prints.
 */
#ifndef PENNY_BWGPU_H
#define PENNY_BWGPU_H

#include <stdint.h>

#include "penny_plugin.h"

#define PN_BWGPU_PLUGIN "cuda"
#define PN_BWGPU_MAX 6		/* 2 engines x (2 bandwidth + latency) */

struct pn_bwgpu_cfg {
	uint64_t bytes;		/* per copy; 0: 256 MiB */
	int iters;		/* <= 0: 10 (bandwidth), 100 (latency) */
	const char *engine;	/* "ce", "sm", "both"; NULL: ce */
	int bidir;		/* only the bidirectional matrix */
	int lat;		/* only the latency matrix */
};

/* One measured matrix: q.value[src * q.ndev + dst], q.name[] the devices. */
struct pn_bwgpu_matrix {
	int engine;		/* PENNY_BW_CE, PENNY_BW_SM */
	int bidir;
	int what;		/* PENNY_BW_BANDWIDTH, PENNY_BW_LATENCY */
	int iters;
	struct penny_bw_v1 q;
};

struct pn_bwgpu_result {
	uint64_t bytes;		/* per copy */
	int nplanned;		/* matrices asked for */
	int n;			/* matrices measured (in order) */
	struct pn_bwgpu_matrix m[PN_BWGPU_MAX];
};

/* The matrices cfg asks for into *res: 0, or -EINVAL with a message. */
int pn_bwgpu_plan(const struct pn_bwgpu_cfg *cfg, struct pn_bwgpu_result *res);
/*
 * Measure the planned matrices (the ones measured before an error stay in
 * res->m[0 .. n)): 0, -EPROTO for a plugin's nonsense, or the plugin's
 * error: -ENOENT, -ENOEXEC, -ENODEV, -ENOTSUP, -EINVAL when the host
 * cannot run it.
 */
int pn_bwgpu_run(struct pn_bwgpu_result *res);

#endif
