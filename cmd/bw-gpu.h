/* SPDX-License-Identifier: MIT */
/* penny bw --gpu: GPU-to-GPU bandwidth and latency matrices (cmd/bw-gpu.c). */
#ifndef PENNY_CMD_BW_GPU_H
#define PENNY_CMD_BW_GPU_H

#include "penny.h"

#include <stdint.h>

struct bw_gpu_opts {
	uint64_t bytes;		/* per copy; 0: 256 MiB */
	int iters;		/* <= 0: 10 (bandwidth), 100 (latency) */
	const char *engine;	/* "ce", "sm", "both"; NULL: ce */
	int bidir;		/* only the bidirectional matrix */
	int lat;		/* only the latency matrix */
};

/* Returns the exit code: 0, 1 (a measurement failed), 2 (no GPU, no plugin, bad usage). */
int bw_gpu(struct pn_ctx *ctx, const struct bw_gpu_opts *o);

#endif
