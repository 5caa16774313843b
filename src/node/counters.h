/* SPDX-License-Identifier: MIT */
/*
 * Per-port traffic counters: the model behind `penny top` (no screen code).
 *
 * A counter set enumerates RDMA ports (and, optionally, plain netdevs and
 * remote ports reached with PerfMgt MADs) through the sysfs root, reads their
 * counters once per sample and computes deltas and rates over the measured
 * (monotonic) time between two reads of the same port.
 *
 *  - ports/N/counters/port_{xmit,rcv}_data count 4-byte words: scale 4.
 *  - RoCE ports without counters/ (soft-RoCE has only hw_counters/) take
 *    bytes and packets from their netdev's /sys/class/net/IF/statistics.
 *  - Counters never wrap: the legacy 32-bit PortCounters and the IB error
 *    counters of known width saturate at their maximum, the others are
 *    64-bit.  A counter that goes down was reset; a data counter that
 *    moves more than its line can carry in the interval gives no rate.
 *    Utilization is 0..1.
 *  - An unreadable or unparsable file is "not valid" for that sample (n/a),
 *    never an error.
 *  - Ports that appear or disappear between samples are added or dropped.
 *
 * Files are opened once and re-read with pread() at offset 0 (sysfs
 * regenerates an attribute on every read from offset 0): measured here, a
 * sample of 32 ports x 44 files costs 1.3 ms of CPU instead of 6.4 ms with
 * open/read/close.  A port's phys_state and rate are re-read when its state
 * changes and every 16th sample.  (On real NICs every counters/ read is a
 * PMA query to the firmware: reading fewer files matters twice.)
 *
 * top's sampler (top/sampler.h) runs pn_counters_set_sample() on its own
 * thread at a fixed cadence and publishes snapshots (htop's model/screen
 * split): the screen never waits on a slow sysfs read.
 */
#ifndef PENNY_COUNTERS_H
#define PENNY_COUNTERS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define PN_COUNTERS_MAX 256	/* counters per port (errors kept first, the rest counted) */
#define PN_COUNTERS_HIST 256 /* samples of rate history per port */
/* RDMA devices, and netdevs (-e), a set reads: a tree with more is refused
 * (-E2BIG), as a device with more than PN_NIC_MAX_PORTS ports is */
#define PN_COUNTERS_MAX_DEVS 1024

enum pn_counters_group {
	PN_CG_IB = 0,	/* ports/N/counters/ */
	PN_CG_HW = 1,	/* ports/N/hw_counters/ */
	PN_CG_NET = 2,	/* /sys/class/net/IF/statistics/ */
	PN_CG_MAD = 3,	/* PerfMgt PortCounters(Extended) of a remote port */
	PN_CG_COUNT
};

enum pn_counters_kind {
	PN_CK_OTHER = 0,
	PN_CK_RX_BYTES,
	PN_CK_TX_BYTES,
	PN_CK_RX_PKTS,
	PN_CK_TX_PKTS,
	PN_CK_ERR,	/* errors (symbol, rcv, remote phys, link downed, ...) */
	PN_CK_DISC,	/* discards and drops */
	PN_CK_COUNT
};

enum pn_counters_flags {
	PN_CF_VALID = 1u << 0, /* read and parsed in the last sample */
	PN_CF_DELTA = 1u << 1, /* delta and rate valid */
	PN_CF_WRAP = 1u << 2,  /* wrapped at 32 bits: only replayed from older recordings */
	PN_CF_RESET = 1u << 3, /* went back (reset): delta counts from zero */
	PN_CF_SAT = 1u << 4,   /* stuck at its maximum: delta unknown */
	PN_CF_JUMP = 1u << 5,  /* rose more than the line can carry: delta unknown */
};

struct pn_counter {
	char name[48];		/* file name: "port_xmit_data", "out_of_buffer" */
	uint8_t group;		/* enum pn_counters_group */
	uint8_t kind;		/* enum pn_counters_kind */
	uint8_t scale;		/* value = raw * scale (4 for *_data words) */
	uint8_t width;		/* saturating width in bits (IB error counters), 0 unknown */
	uint32_t flags;		/* enum pn_counters_flags */
	uint32_t wraps;		/* 32-bit wraps (older recordings; 0 now) */
	uint64_t raw;		/* last value as read */
	uint64_t value;		/* (raw + wraps * 2^32) * scale: cumulative, in units */
	uint64_t delta;		/* units since the previous sample (PN_CF_DELTA) */
	double rate;		/* delta per second, NAN unknown */
};

enum pn_port_type {
	PN_PT_RDMA = 0,		/* /sys/class/infiniband/DEV/ports/N */
	PN_PT_NETDEV = 1,	/* /sys/class/net/IF (-e) */
	PN_PT_REMOTE = 2,	/* LID[:PORT] through PerfMgt MADs */
};

struct pn_counters_io;

struct pn_counters_port {
	char name[80];		/* "mlx5_0/1", "eth0", "lid:12/1" */
	char dev[64];		/* "mlx5_0", "eth0", "lid:12" */
	int port;		/* port number; 0 for netdevs */
	int type;		/* enum pn_port_type */
	int lid;		/* remote LID (PN_PT_REMOTE), else -1 */
	int state;		/* enum pn_port_state (nic.h); -1 unknown */
	char state_name[16];	/* "ACTIVE", "DOWN", "UP" (netdev), "" unknown */
	char phys_state[24];	/* "LinkUp", "" unknown */
	double rate_gbps;	/* line rate, 0 unknown */
	char rate[48];		/* "400 Gb/sec (4X NDR)" as read */
	char link_layer[16];	/* "InfiniBand", "Ethernet" */
	char netdev[32];	/* netdev of the port, "" none */
	int data_group;		/* group that gives bytes/packets, -1 none */

	/* results of the last sample */
	uint64_t nsamples;	/* samples of this port (1 = baseline only) */
	uint64_t t_ns;		/* monotonic time of the last read */
	double elapsed;		/* seconds between the last two reads, 0 first */
	double rx_Bps, tx_Bps;	/* bytes/s, NAN unknown */
	double rx_pps, tx_pps;	/* packets/s, NAN unknown */
	double util;		/* max(rx, tx) / line rate, 0..1+, NAN unknown */
	uint64_t err_delta;	/* sum of error counter deltas (err_valid) */
	uint64_t disc_delta;	/* sum of discard counter deltas (disc_valid) */
	uint64_t err_total;	/* sum of error counters (cumulative) */
	uint64_t disc_total;
	int err_valid, disc_valid;
	int nunreadable;	/* counters that could not be read this sample */
	int nleft_out;		/* counters beyond PN_COUNTERS_MAX, not read */
	int nleft_out_err;	/* of them error and discard counters */
	uint32_t flags;		/* OR of the counters' WRAP/RESET/SAT flags */

	/* rate history, oldest first through pn_counters_hist() */
	int hist_n, hist_head;
	float hist_rx[PN_COUNTERS_HIST], hist_tx[PN_COUNTERS_HIST];

	struct pn_counters_io *io;	/* held files; NULL in copies */
	uint64_t dev_ino;	/* inode of the device's class entry (identity) */
	int unlisted;		/* a counter directory there could not be listed (no
				 * descriptor, no memory): the next scan lists it again */
	int ix[PN_CK_COUNT];	/* index of the first counter of each kind, -1 */
	int nctr;
	struct pn_counter ctr[PN_COUNTERS_MAX]; /* last member: copies stop at nctr */
};

struct pn_pq;
struct pn_perfquery_counters;

struct pn_counters_remote {
	int lid;
	int port;
};

/*
 * top's --lid list ("LID[:PORT],..."): *out (malloc'd, *n entries; NULL
 * and 0 for a NULL list).  0 or -errno with a message, nothing kept.
 */
int pn_counters_remote_parse(const char *list, struct pn_counters_remote **out, int *n);

struct pn_counters_cfg {
	int ethernet;		/* also plain netdevs from /sys/class/net (not lo) */
	int hold_files;		/* keep counter files open between samples (default 1) */
	/*
	 * brief: read only what byte rates, errors and discards need (bytes,
	 * error and discard counters) except for the port named detail,
	 * which gets every counter; the others are n/a (not read).
	 */
	int brief;
	char detail[80];
	int nremote;		/* remote ports, queried through pq */
	struct pn_counters_remote *remote;
	struct pn_pq *pq;	/* borrowed, may be NULL when nremote == 0 */
	/* remote query; NULL = pn_perfquery_query (tests inject a fake fabric) */
	int (*query)(struct pn_pq *pq, int lid, int port, struct pn_perfquery_counters *c);
	uint64_t (*clock_ns)(void); /* monotonic clock; NULL = pn_now_ns (tests inject) */
	/* progress hook: called with the port name before its reads, NULL after */
	void (*progress)(void *arg, const char *what);
	void *progress_arg;
};

struct pn_counters_set {
	struct pn_counters_cfg cfg;
	int n, cap;
	struct pn_counters_port *ports; /* RDMA (natural order), netdevs, remote */
	uint64_t seq;		/* samples taken */
	uint64_t t_ns;		/* monotonic time of the last sample's start */
	double wall;		/* CLOCK_REALTIME of the last sample, seconds */
	double elapsed;		/* seconds since the previous sample, 0 first */
	double interval;	/* configured interval (informational) */
	int added, removed;	/* ports that appeared/disappeared in the last sample */
	int owner;		/* 1: holds files (not a copy) */
};

void pn_counters_cfg_init(struct pn_counters_cfg *cfg);
/* The set copies cfg (remote is borrowed). */
int pn_counters_set_init(struct pn_counters_set *s, const struct pn_counters_cfg *cfg);
void pn_counters_set_release(struct pn_counters_set *s);
/*
 * One sample: find ports that appeared or went away, read every counter,
 * compute deltas and rates.  Returns 0 (unreadable files are per-counter
 * n/a), or -errno when the set itself cannot be read (out of memory).
 */
int pn_counters_set_sample(struct pn_counters_set *s);
/* Deep copy of the results into dst (dst must be initialised or zeroed). */
int pn_counters_set_copy(struct pn_counters_set *dst, const struct pn_counters_set *src);
const struct pn_counters_port *pn_counters_set_find(const struct pn_counters_set *s, const char *name);

/*
 * Counter arithmetic for one new reading (ok = read and parsed).  max_raw
 * bounds a plausible delta in raw units (0 = no bound): a larger rise is
 * PN_CF_JUMP and a reset to more than it PN_CF_RESET, both without a delta.
 * A counter that goes down was reset (none wraps).
 */
void pn_counters_update(struct pn_counter *c, int ok, uint64_t raw, uint64_t max_raw);
/* Utilization of a line of line_Bps carrying Bps: 0..1, NAN unknown. */
double pn_counters_util(double Bps, double line_Bps);
/* A counter file's text: decimal digits, white space around; 0 or -EINVAL/-ERANGE. */
int pn_counters_parse_value(const char *s, uint64_t *v);
/* History sample i (0 = oldest of hist_n) of rx and tx bytes/s. */
void pn_counters_hist(const struct pn_counters_port *p, int i, double *rx, double *tx);
const char *pn_counters_group_name(int group);	/* "counters", "hw_counters", ... */
const char *pn_port_type_name(int type);	/* "rdma", "netdev", "remote" */
/* Natural order of ports: type, device name (mlx5_2 < mlx5_10), port. */
int pn_counters_port_cmp(const struct pn_counters_port *a, const struct pn_counters_port *b);

#endif
