/* SPDX-License-Identifier: MIT */
/*
 * The measurements behind `penny bw` (perftest's ib_write_bw, ib_read_bw,
 * ib_send_bw, ib_write_lat), over one verbs connection ("a link") or a TCP
 * socket.  The two sides agree on a struct pn_bw_cfg; the caller carries
 * the structs between them (socket, bootstrap).  Nothing here prints.
 *
 * Bandwidth: the initiator keeps tx_depth operations per QP in flight, round
 * robin over the QPs, for `iters` operations or `duration` seconds.  Average
 * = bytes / (last completion - first post), as perftest's; the run is also
 * timed as PN_BW_BLOCKS blocks (the timing rule of base/timing.h:
 * consecutive fifths of the operations, or of the duration, each closed at
 * the completion that ends it): each block's rate, their median and
 * slowest, and peak = the best block; Gb/s = 1e9 bits per second.  A send test ends
 * with a zero-byte send carrying PN_BW_END as immediate, so the receiver
 * knows when to stop.  Bidirectional: both sides initiate at once; each
 * measures its own direction.
 * Latency: ping-pong for write (the receiver polls the last byte of its
 * buffer, as ib_write_lat) and send; a read waits for each completion.
 * Half the round trip (write, send) or the read's time, in microseconds.
 */
#ifndef PENNY_BWTEST_H
#define PENNY_BWTEST_H

#include <stddef.h>
#include <stdint.h>

#include "base/timing.h"
#include "transport/verbs.h"

#define PN_BW_MAGIC 0x50425731u /* "PBW1" */
#define PN_BW_VERSION 2
#define PN_BW_MAX_SIZES 32
#define PN_BW_END 0xe0dull

enum { PN_BW_LAT = 1, PN_BW_BIDIR = 2 };

/* What both sides must agree on (exchanged byte for byte). */
struct pn_bw_cfg {
	uint32_t magic;
	uint16_t version;
	uint16_t size;		/* sizeof(struct pn_bw_cfg) */
	uint32_t op;		/* PN_VERBS_WRITE, PN_VERBS_READ, PN_VERBS_SEND */
	uint32_t flags;		/* PN_BW_LAT, PN_BW_BIDIR */
	uint32_t nqp;
	uint32_t tx_depth;	/* operations in flight per QP */
	uint32_t mtu;		/* 0: the ports' */
	uint32_t nsizes;
	uint64_t iters;		/* per size; 0 with duration */
	double duration;	/* seconds per size when iters is 0 */
	uint64_t sizes[PN_BW_MAX_SIZES];
};

#define PN_BW_BLOCKS PN_TIMING_BLOCKS

/* One measured size.  In latency mode the *_gbps fields are 0. */
struct pn_bw_row {
	uint64_t bytes;
	uint64_t iters;		/* operations completed */
	double seconds;
	double peak_gbps, avg_gbps, msg_rate_mpps;	/* peak: the best block */
	double lat_us[7];	/* min, median, average, p99, p99.9, max, stdev */
	/* bandwidth: the timed blocks' rates, in the order they ran (nblocks
	 * of them, fewer when there were fewer completions), their median
	 * and slowest */
	int nblocks;
	double block_gbps[PN_BW_BLOCKS];
	double block_median_gbps, block_min_gbps;
};

void pn_bw_cfg_init(struct pn_bw_cfg *cfg);
uint64_t pn_bw_max_size(const struct pn_bw_cfg *cfg);
/*
 * Compare the peer's configuration with ours: 0, or -EINVAL with a message
 * naming the first setting that differs ("-s: 65536 here, 4096 on the peer").
 */
int pn_bw_cfg_check(const struct pn_bw_cfg *mine, const struct pn_bw_cfg *peer);

/* One side of a link: a connected verbs connection and its buffer. */
struct pn_bw_link {
	struct pn_verbs_conn *conn;
	const struct pn_bw_cfg *cfg;
	int initiator;		/* issues the operations (both sides when bidirectional) */
	uint8_t *buf;		/* exposed to the peer: [0, max) is where the peer writes
				 * and reads, [max, 2 max) is the local source/target */
	size_t buflen;		/* 2 * max size */
	double spin_s;		/* latency mode: spin this long between checks */
	double drain_s;		/* bandwidth by duration: > 0, operations still in
				 * flight this long after the timed phase fail the
				 * run (a link that stalls, not one that is slow) */
	const char *peer;	/* the peer's host, for messages (NULL: unnamed) */
};

/* Buffer size a link needs (pn_bw_link.buf) for cfg. */
size_t pn_bw_buflen(const struct pn_bw_cfg *cfg);
/* Post the receives a send test needs (before the peer starts). */
int pn_bw_prepare(struct pn_bw_link *l);
/* Bandwidth of size index k; row filled on the initiator. */
int pn_bw_run(struct pn_bw_link *l, int k, struct pn_bw_row *row);
/* Latency of size index k: both sides call it; row filled on the initiator. */
int pn_bw_run_lat(struct pn_bw_link *l, int k, struct pn_bw_row *row);

/* TCP: the same measurements over a connected stream socket (-b: both
 * sides send at once, a thread drains the peer's); a peer that sends more
 * than -n messages, or long past -D, is refused (-EPROTO). */
int pn_bw_tcp_run(int fd, const struct pn_bw_cfg *cfg, int sender, int k, double timeout,
		  struct pn_bw_row *row);

/* Send mine, then read the peer's (same length), bounded by the timeout. */
int pn_bw_xchg_fd(int fd, const void *mine, void *theirs, size_t len, double timeout);
/* Send len bytes, bounded by the timeout (the peer's part was read already). */
int pn_bw_send_fd(int fd, const void *buf, size_t len, double timeout);

/* Helpers (exposed for the unit tests). */
/* min, median, average, p99, p99.9, max and the (population) standard
 * deviation of n samples (sorted in place). */
void pn_bw_percentiles(double *samples, size_t n, double out[7]);
/*
 * The blocks of a bandwidth run (pure; exposed for the unit tests): start
 * at t0 with iters operations (0: by time, duration seconds) of bytes each;
 * push the completions done so far at time now as they come; end fills
 * row's blocks, their median and slowest, and peak (avg_gbps when no block
 * closed).
 */
struct pn_bw_blocks {
	uint64_t limit, db;	/* operations in all (0: by time); done at the block's start */
	double t0, dur, tb;	/* start, duration, the block's start */
	double bytes;
	int k, nr;		/* the block running; blocks closed */
	double gbps[PN_BW_BLOCKS];
};
void pn_bw_blocks_start(struct pn_bw_blocks *b, uint64_t iters, double duration, double t0,
			double bytes);
void pn_bw_blocks_push(struct pn_bw_blocks *b, uint64_t done, double now);
void pn_bw_blocks_end(struct pn_bw_blocks *b, uint64_t done, double now, struct pn_bw_row *row);
/*
 * A row the peer sent for size index k (pure): 0, or -EPROTO with a message
 * when it is not one a penny bw of cfg measures: another size, more
 * operations than -n, a block count outside 0..PN_BW_BLOCKS, a time or
 * rate that is negative or not finite.
 */
int pn_bw_row_check(const struct pn_bw_cfg *cfg, int k, const struct pn_bw_row *row);
/* Sum of the two directions of a bidirectional row. */
void pn_bw_row_add(struct pn_bw_row *sum, const struct pn_bw_row *other);

/* The rule of every bandwidth gate (bw's and check's nic-bw): a rate of
 * got Gb/s meets a threshold of want when got >= want. */
int pn_bw_meets(double got, double want);

#endif
