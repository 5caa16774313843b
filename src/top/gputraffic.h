/* SPDX-License-Identifier: MIT */
/*
 * The GPU rows of `penny top`: per GPU, NVLink TX/RX and PCIe TX/RX
 * throughput from NVML (src/node/nvml.h).  NVLink rates come from the
 * cumulative NVLINK_THROUGHPUT_DATA_TX/RX counters (KiB, all links), PCIe
 * rates from the cumulative PCIE_COUNT_TX/RX_BYTES counters, or where those
 * are missing from nvmlDeviceGetPcieThroughput (KB/s over 20 ms).  A counter
 * that goes down wraps at its width when that is plausible, else it was
 * reset (driver reload): that interval has no rate, as for the NIC counters.
 * Without NVML or GPUs the model is empty and note says why: never an error.
 */
#ifndef PENNY_GPUTRAFFIC_H
#define PENNY_GPUTRAFFIC_H

#include <stdint.h>
#include <stdio.h>

struct pn_nvml;

enum { PN_GT_NVL_TX, PN_GT_NVL_RX, PN_GT_PCIE_TX, PN_GT_PCIE_RX, PN_GT_N };
enum { PN_GT_SRC_NONE, PN_GT_SRC_COUNTERS, PN_GT_SRC_SAMPLED };
#define PN_GT_WRAP 1u
#define PN_GT_RESET 2u

struct pn_gpu_row {
	int index;		/* NVML's index (nvidia-smi's) */
	char name[96];		/* "NVIDIA H100 80GB HBM3", "" unknown */
	char busid[32];		/* "0000:07:00.0" */
	double Bps[PN_GT_N];	/* bytes per second over the last interval; NAN unknown */
	uint64_t bytes[PN_GT_N]; /* bytes counted since the first sample (counters only) */
	int valid[PN_GT_N];	/* the counter answered this sample */
	int pcie_src;		/* PN_GT_SRC_*: where the PCIe rates come from */
	unsigned flags;		/* PN_GT_WRAP, PN_GT_RESET: this interval */
	/* the previous reading */
	uint64_t raw[PN_GT_N];
	int width[PN_GT_N];
	int had[PN_GT_N];
};

struct pn_gputraffic {
	int n;			/* GPU rows; 0: none, note says why */
	struct pn_gpu_row *gpus;
	char note[160];		/* "no GPU rows: ..." or "" */
	uint64_t t_ns;		/* monotonic time of the last sample */
	double elapsed;		/* seconds between the last two samples, 0 first */
	uint64_t seq;		/* samples taken */
	struct pn_nvml *nvml;
};

/* Open NVML and list its GPUs.  0 (perhaps with no rows and a note), or -ENOMEM. */
int pn_gputraffic_open(struct pn_gputraffic *g);
void pn_gputraffic_close(struct pn_gputraffic *g);
/* Read every GPU at monotonic time now_ns; the rates from the second sample on. */
void pn_gputraffic_sample(struct pn_gputraffic *g, uint64_t now_ns);
/*
 * One counter's step from prev to cur at width bits (<= 64): *d is the
 * increase.  Returns 0, PN_GT_WRAP (went down; wrapped at the width, the
 * increase below half the range) or PN_GT_RESET (went down otherwise; no
 * increase).
 */
unsigned pn_gputraffic_delta(uint64_t prev, uint64_t cur, int width, uint64_t *d);
/* The rows as a Prometheus exposition (penny-top(1)'s names). */
void pn_gputraffic_prom_write(FILE *f, const struct pn_gputraffic *g);

struct pn_record_gpu;
struct pn_record_sample;
/* g's rows (NULL: none) as a recording keeps them, rates only, into out
 * (room for PN_RECORD_GPUS_MAX, top/record.h): how many. */
int pn_gputraffic_to_record(const struct pn_gputraffic *g, struct pn_record_gpu *out);
/* A recorded sample's GPU rows into g over rows (room for
 * PN_RECORD_GPUS_MAX): the rates, no totals; returns g. */
struct pn_gputraffic *pn_gputraffic_from_record(const struct pn_record_sample *s,
						struct pn_gputraffic *g, struct pn_gpu_row *rows);

#endif
