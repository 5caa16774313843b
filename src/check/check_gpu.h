/* SPDX-License-Identifier: MIT */
/*
 * The gpu-copy check of `penny check` (check_gpu.c): every GPU's copy
 * engines to and from the host and between GPUs, measured in a child
 * (check_gpu_lib.h).
 */
#ifndef PENNY_CHECK_GPU_H
#define PENNY_CHECK_GPU_H

#include <stddef.h>

struct pn_check;

/* The check's entry (check_row.h's rule: results to c->results, 0 also on
 * FAIL or SKIP, a negative errno only when the run cannot go on). */
int pn_check_gpucopy(struct pn_check *c);

/*
 * The node's slowest GPU-to-GPU copy-engine rate (GB/s), measured now in a
 * child (gpu-copy's matrix at a quarter of gpu-copy.size), for an
 * expectation where gpu-copy did not run: 0 with *gbs and its source
 * ("gpu-copy matrix: slowest pair GPU0-GPU1 345 GB/s measured"); -ENOENT
 * (no message) when no plugin measures one here.
 */
int pn_checkgpu_copy_floor(struct pn_check *c, double *gbs, char *src, size_t len);

#endif
