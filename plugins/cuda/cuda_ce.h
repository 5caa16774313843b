/* SPDX-License-Identifier: MIT */
/*
 * The copy-engine allreduce (cuda_ce.c; its protocol in kargs.h, its
 * geometry in cuda_plan.c), opened by cuda.c when the size table names
 * "ce", on a CE area the plugin allocated and shared like its workspace.
 */
#ifndef PENNY_PLUGIN_CUDA_CE_H
#define PENNY_PLUGIN_CUDA_CE_H

#include "cuda.h"

struct pn_ce;

/* One call: recv inside reg (shared, the same on every rank), bytes a
 * multiple of 16, on the caller's stream (g->stream). */
struct pn_ce_call {
	CUdeviceptr send, recv;
	uint64_t bytes;
	unsigned esize;
	const struct pn_reg *reg, *ws;
	CUfunction reduce;	/* pn_ar_ce_<type>_<op> */
	unsigned grid;
	uint64_t timeout_ns;
};

/* The reduce kernel's blocks on a GPU of blocks SMs with n ranks: room for
 * the gates (2(n - 1) + 1 spin at once) beside every block, at least 1. */
unsigned pn_ce_grid(unsigned blocks, int n);

int pn_ce_open(struct pn_gpu *g, int rank, int n, const struct pn_reg *area, CUmodule mod,
	       struct pn_ce **out);
void pn_ce_close(struct pn_ce *ce);
int pn_ce_run(struct pn_ce *ce, const struct pn_ce_call *call);

#endif
