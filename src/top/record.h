/* SPDX-License-Identifier: MIT */
/*
 * The flight recorder of `penny top` (--record, --replay): every sample of
 * the counter model as one JSON line, and the reader that turns a recording
 * back into the same counter snapshots and node context, so the same
 * printers and screen show it.  No screen code, no printing.
 *
 * One line per sample (penny-top(1), RECORDING FORMAT), keys in this order:
 *   penny_record  1 (the format's version)
 *   host, seq, mono_ns (CLOCK_MONOTONIC of the sample), wall (CLOCK_REALTIME,
 *   seconds), interval, elapsed, ngpus, note
 *   nics   [{dev, numa, rail, gpus: [GPU indices]}]: the context labels of
 *          every NIC (a port's labels are those of its device)
 *   ports  [{name, dev, port, type, lid, state, state_name, phys_state,
 *          rate, rate_gbps, link_layer, netdev, data_group, nsamples,
 *          t_ns, elapsed, rx_Bps, tx_Bps, rx_pps, tx_pps, util, err,
 *          disc, err_total, disc_total, unreadable, flags, ix,
 *          ctr: [[group, name, kind, scale, width, flags, wraps, raw,
 *          value, delta], ...]}]
 *   gpus   [{index, name, nvlink_tx_Bps, nvlink_rx_Bps, pcie_tx_Bps,
 *          pcie_rx_Bps}] (only when the sample has GPU rows)
 * Doubles are written with 17 significant digits (they read back exactly),
 * NaN as null; 64-bit counters above 2^53 as decimal strings.
 *
 * The file is bounded: a sample that would take it past max_bytes first
 * renames FILE to FILE.1 (replacing an older FILE.1 when that is a regular
 * file) and starts FILE anew: at most twice max_bytes on disk, the newest
 * samples kept.  A failed write or rotation stops recording (the caller
 * says so once).
 */
#ifndef PENNY_RECORD_H
#define PENNY_RECORD_H

#include "node/counters.h"
#include "node/nodectx.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define PN_RECORD_VERSION 1
#define PN_RECORD_MAX_DEFAULT (64ull << 20)	/* --record-max default */
#define PN_RECORD_MAX_MIN (64ull << 10)
/*
 * The longest line: the reader takes no longer one, and the writer writes
 * none longer (the sample is refused and recording stops: a recording penny
 * wrote always replays).  32 MiB is 2,048 ports (1,024 RDMA devices and
 * 1,024 netdevs, a counter set's bound) of 16 KiB each, about 150
 * counters of mlx5's names; an 8 MiB bound cut a fabric of 4,000 ports.
 */
#define PN_RECORD_LINE_MAX (32u << 20)
#define PN_RECORD_SAMPLES_MAX 1000000		/* samples the reader keeps */
#define PN_RECORD_ENTRIES_MAX (4u << 20)	/* port and GPU rates it keeps, in all */
#define PN_RECORD_GPUS_MAX 64			/* GPU rows per sample */

/* One GPU row of a sample (top's GPU view fills these). */
struct pn_record_gpu {
	int index;
	char name[64];
	double nvlink_tx_Bps, nvlink_rx_Bps;	/* NAN unknown */
	double pcie_tx_Bps, pcie_rx_Bps;
};

/* ---- writer ---- */

struct pn_record;

/*
 * Open (append to) path; max_bytes bounds the file (see above).  A last
 * line without its newline (cut by a full disk or a crash) is closed first,
 * so the damage stays on that line.  "-" or standard output or error (as
 * penny(1)'s OUTPUT FILES): written there in place, never rotated.
 */
int pn_record_open(struct pn_record **r, const char *path, uint64_t max_bytes);
/*
 * Append one sample: v with every port, the context ctx (may be NULL), the
 * host, the interval, and ngpus GPU rows (gpus may be NULL).  One write()
 * per sample; a line longer than PN_RECORD_LINE_MAX is refused (-EFBIG).  Returns 0, or -errno (message set): recording has stopped
 * and every later call returns 0 without writing.
 */
int pn_record_write(struct pn_record *r, const struct pn_counters_set *v,
		    const struct pn_nodectx *ctx, const char *host, double interval,
		    const struct pn_record_gpu *gpus, int ngpus);
/* Bytes written in all, and rotations done. */
uint64_t pn_record_bytes(const struct pn_record *r);
int pn_record_rotations(const struct pn_record *r);
void pn_record_close(struct pn_record *r);
/* The line of one sample into buf (grown as needed; *len set).  For tests. */
int pn_record_format(char **buf, size_t *cap, size_t *len, const struct pn_counters_set *v,
		     const struct pn_nodectx *ctx, const char *host, double interval,
		     const struct pn_record_gpu *gpus, int ngpus);

/* ---- reader ---- */

/* A sample read back. */
struct pn_record_sample {
	struct pn_counters_set set;	/* a copy (holds no files) */
	struct pn_nodectx ctx;
	char host[256];
	double interval;
	uint64_t mono_ns;
	int ngpus;
	struct pn_record_gpu gpus[PN_RECORD_GPUS_MAX];
};

void pn_record_sample_init(struct pn_record_sample *s);
void pn_record_sample_release(struct pn_record_sample *s);
/* Parse one line (no newline) into s.  Returns 0 or -EINVAL with a message
 * (a JSON error says its column, not the line: the caller knows which). */
int pn_record_parse(struct pn_record_sample *s, const char *line, size_t len);

/* A recording: an index of its samples and their rates. */
struct pn_replay;

/*
 * Read a recording from f (kept open, read again by pn_replay_load) named
 * name: every line is checked; a damaged one (cut, not JSON, not a sample,
 * too long) is skipped and the reading goes on after it (samples appended
 * after a cut line are read), and pn_replay_warning() says how many were
 * skipped, which was the first and why.  A read error ends the recording
 * there.  Returns 0 (possibly with no samples) or -errno.
 */
int pn_replay_open_file(struct pn_replay **rp, FILE *f, const char *name);
/* Open path (a regular file). */
int pn_replay_open(struct pn_replay **rp, const char *path);
/* An empty index that a live run fills (for --plot at exit). */
int pn_replay_new(struct pn_replay **rp);
/* Add the rates of one live sample; -E2BIG (once, message set) at the bound. */
int pn_replay_add(struct pn_replay *r, const struct pn_counters_set *v,
		  const struct pn_nodectx *ctx, const struct pn_record_gpu *gpus, int ngpus);
void pn_replay_close(struct pn_replay *r);
int pn_replay_count(const struct pn_replay *r);
/* "" when the whole file was read. */
const char *pn_replay_warning(const struct pn_replay *r);
/* Sample i into s, with the rate history of its ports up to it. */
int pn_replay_load(struct pn_replay *r, int i, struct pn_record_sample *s);

/* Rates of the series (ports, GPUs) over the samples, for a plot. */
struct pn_replay_series {
	const char *name;	/* "mlx5_0/1", "GPU0" */
	int rail;		/* rail of a port, -1 none; GPU rows: -2 */
	int npts;
	double *t;		/* seconds since the first sample, never going back */
	double *rx, *tx;	/* bytes/s (GPUs: NVLink rx/tx), NAN unknown */
};
/* Every port and GPU seen, in first-seen order.  Free with pn_replay_series_free. */
int pn_replay_series(const struct pn_replay *r, struct pn_replay_series **out, int *n);
void pn_replay_series_free(struct pn_replay_series *s, int n);

#endif
