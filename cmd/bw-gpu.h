/* SPDX-License-Identifier: MIT */
/* penny bw --gpu: GPU-to-GPU bandwidth and latency matrices (cmd/bw-gpu.c). */
#ifndef PENNY_CMD_BW_GPU_H
#define PENNY_CMD_BW_GPU_H

#include "penny.h"
#include "harness/bwgpu.h"

/* Returns the exit code: 0, 1 (a measurement failed), 2 (no GPU, no plugin, bad usage). */
int bw_gpu(struct pn_ctx *ctx, const struct pn_bwgpu_cfg *cfg);

#endif
