/* SPDX-License-Identifier: MIT */
/*
 * The runs behind `penny bw`: the rails (a verbs device, its connection and
 * buffer, host or GPU memory), the hello exchange and QP connect, and the
 * four modes that drive src/harness/bwtest.c: server and client (one link
 * over a socket), --loopback (both ends in this host: a forked peer) and
 * the launcher (ranks 2k and 2k+1 pair up; every rank's rows gathered).
 * Also the planned memory of a bw run.  Nothing here prints: the socket
 * modes hand their progress to the caller's struct pn_bwrun_ops; the
 * launcher mode leaves every rank's hello and rows in the struct.
 */
#ifndef PENNY_BWRUN_H
#define PENNY_BWRUN_H

#include <stddef.h>
#include <stdint.h>

#include "engine/boot.h"
#include "gpu/gpumem.h"
#include "harness/bwproto.h"
#include "harness/bwtest.h"
#include "transport/verbs.h"

/* One rail of this side: a device, its connection and the test buffer. */
struct pn_bwrun_rail {
	struct pn_gpumem *gpu;		/* --use_cuda: the buffer is GPU memory */
	struct pn_verbs_dev *dev;
	struct pn_verbs_conn *conn;
	struct pn_bw_link link;
	struct pn_bw_row rows[PN_BW_MAX_SIZES]; /* the shown measurement per size */
	int ret;
	char err[256];
};

/* One rank's rows, every rail and size (what the launcher mode gathers). */
struct pn_bwrun_rows {
	struct pn_bw_row rows[PN_BW_MAX_RAILS][PN_BW_MAX_SIZES];
};

struct pn_bwrun;

/* The socket modes' progress, for the caller to present (any may be NULL). */
struct pn_bwrun_ops {
	void *arg;
	/* agreed and connected: the measurements start */
	void (*begin)(void *arg, const struct pn_bwrun *r);
	/* size k measured (both directions summed when bidirectional) */
	void (*row)(void *arg, const struct pn_bwrun *r, int k, const struct pn_bw_row *row);
	/* every size measured (rails[0].rows holds them) */
	void (*end)(void *arg, const struct pn_bwrun *r);
	/* the server listens on TCP port */
	void (*waiting)(void *arg, int port);
	/* the client's first connection was refused: it retries until the timeout */
	pn_bw_refused_fn *refused;
	/* the server dropped a connection that was not a client of this version */
	pn_bw_drop_fn *dropped;
	/* --loopback: the forked peer (on dev, "tcp" for TCP) failed with err */
	void (*peer_failed)(void *arg, const char *dev, int err);
	/* the run was cut short after begin, or before it (the output may be
	 * empty): by a failure, or by a stop (SIGTERM, SIGINT, SIGHUP; its
	 * default action follows) from another thread, why as "stopped by
	 * signal 15 (Terminated)": end the output.  begin, row, end and cut
	 * run one at a time, and none after end or cut. */
	void (*cut)(void *arg, const char *why);
};

struct pn_bwrun {
	/* set by the caller (pn_bwrun_init gives the defaults) */
	struct pn_bw_cfg cfg;
	int tcp;		/* measure the TCP path, not verbs */
	int ibport;		/* -i: the port of each device; 0: the ACTIVE one */
	int gid;		/* -x: GID index; -1: the default */
	int inline_size;	/* -I; -1: 220 for write and send latency, else 0 */
	int use_cuda;		/* --use_cuda GPU index; -1: host memory */
	int qp_timeout;		/* -u: QP ACK timeout exponent; 0: the default (14) */
	int all_rails;		/* launcher: every NIC pair of the same index */
	double timeout;		/* bound on every wait */
	const struct pn_bwrun_ops *ops;
	struct pn_boot *boot;	/* launcher mode: the job (the caller's) */
	/* filled by the run */
	const char *mode;	/* "server", "client", "loopback", "launcher" */
	int initiator;		/* this side issues the operations */
	int nrails;
	struct pn_bwrun_rail rails[PN_BW_MAX_RAILS];
	char devs[PN_BW_MAX_RAILS][40];
	int ndevs;
	struct pn_bw_hello me, peer;
	int fd;			/* socket modes: the connection to the peer */
	uint8_t key[PN_BW_KEY_LEN];	/* TCP data connection (launcher, --loopback):
					 * the initiator's key (pn_bw_data_accept) */
	int rank, nranks;	/* launcher mode */
	struct pn_bw_hello *all_hello;	/* launcher mode: every rank's, by rank */
	struct pn_bwrun_rows *all_rows;	/* launcher mode: every rank's; pair p's
					 * sum in [2p] when bidirectional */
};

void pn_bwrun_init(struct pn_bwrun *r);
/* Close the connection and the rails, free the gathered results. */
void pn_bwrun_release(struct pn_bwrun *r);

/*
 * How long the passive side may wait for the active one to finish sizes
 * [k0, k1): the timeout plus the test itself, at no less than 1 MB/s and
 * 1 ms per operation (a bound for a hung peer; a dead one closes the
 * connection).
 */
double pn_bwrun_bound(const struct pn_bw_cfg *c, double timeout, int k0, int k1);

/*
 * Planned memory (src/engine/mem.h): 0, or the error of pn_mem_check.
 * --np ranks not started yet (devices not picked, one rail counted):
 * twice the largest size each; this process and nlocal - 1 forked peers:
 * pn_bw_buflen(cfg) each, and with --lat 8 bytes per iteration (the
 * samples).
 */
int pn_bwrun_mem_ranks(int np, uint64_t max_size);
int pn_bwrun_mem_local(int nlocal, const struct pn_bw_cfg *cfg);

/*
 * The gate's threshold for a link of rate link Gb/s (0: unknown): with
 * --min-gbps (min_gbps >= 0) that, else with --expect[=PCT] (expect not
 * NULL; "" is 90) PCT % of the link rate, doubled when bidirectional.
 * 1 with *want and *why (for the FAILED line), 0 when no gate applies
 * (latency, neither option), -ENODATA when --expect meets an unknown rate.
 */
int pn_bwrun_threshold(const struct pn_bw_cfg *c, double link, double min_gbps,
		       const char *expect, double *want, char *why, size_t len);

/* A run's links so far: how many failed their gate, and the slowest. */
struct pn_bw_tally {
	int failed_links;
	double slowest;			/* Gb/s, of slowest_name */
	char slowest_name[96];		/* "" before the first link */
};

/* One link's verdict (pn_bwrun_link_verdict), for the command to show. */
struct pn_bw_link_verdict {
	int gated;		/* 1: checked against want; 0: no gate; -1: the
				 * link rate is unknown, --expect cannot be checked
				 * (a failure) */
	int passed;		/* gated 1: got >= want */
	double want;		/* gated 1: the threshold, Gb/s */
	char why[160];		/* gated 1: where want comes from */
};

/*
 * The link name measured gbps Gb/s at its largest size, against the gate
 * of pn_bwrun_threshold (link: its rate in Gb/s, 0 unknown): fills v and
 * counts it in t (a failed gate, the slowest link).
 */
void pn_bwrun_link_verdict(const struct pn_bw_cfg *c, double link, double min_gbps,
			   const char *expect, const char *name, double gbps,
			   struct pn_bw_tally *t, struct pn_bw_link_verdict *v);

/* The average gbps of a link of rate link Gb/s, in % of it (twice it when
 * bidirectional); NAN: the rate is unknown. */
double pn_bwrun_link_pct(const struct pn_bw_cfg *c, double gbps, double link);

/*
 * How a job of nranks pairs up (2k, 2k+1) for the mode: an odd count is
 * refused unless it is one rank of an outside launcher (single: a plain
 * process), as are a HOST (nargs) or --loopback with more than one rank,
 * and --all-rails with one.  0, or -EINVAL; *rank0: only rank 0 says it.
 */
int pn_bwrun_pairs(int nranks, int single, int nargs, const char *loopback, int all_rails,
		   const char *launcher, int *rank0);

/* Launcher mode, rank 0: pair p's rail i as the table shows it. */
struct pn_bwrun_pair_link {
	char local[96], remote[96];	/* the ends: devices, or tcp:HOST */
	char name[200];			/* local@host -> remote@host */
	const char *rhost;		/* the passive rank's host */
	double gbps;			/* the link's rate, 0 unknown */
	const struct pn_bw_row *rows;	/* every size's row */
};
/* How many rails pair p tested (1 over TCP). */
int pn_bwrun_pair_rails(const struct pn_bwrun *r, int p);
void pn_bwrun_pair_link(const struct pn_bwrun *r, int p, int i, struct pn_bwrun_pair_link *l);

/*
 * The socket modes (server, client, --loopback) block SIGTERM, SIGINT and
 * SIGHUP (those not ignored) in every thread and wait for them in one of
 * their own: a stop kills the --loopback peer, ends the output (ops->cut)
 * and the process by the signal's default action.  A run that fails ends
 * it too (ops->cut, why: its error).
 */
/* Server: listen on port, take the first client of this version, run. */
int pn_bwrun_server(struct pn_bwrun *r, const char *devspec, int port);
/* Client: connect to host:port, run (the initiator). */
int pn_bwrun_client(struct pn_bwrun *r, const char *devspec, const char *host, int port);
/* --loopback DEV1[,DEV2]: fork the passive end on DEV2, run on DEV1. */
int pn_bwrun_loopback(struct pn_bwrun *r, const char *spec);
/*
 * Under a launcher (r->boot started): every rank must run the same test.
 * all_sizes: -a.  0, or -EINVAL naming the option and the ranks that differ
 * (*differs: this rank is one), as pn_job_params_agree.
 */
int pn_bwrun_agree(struct pn_bwrun *r, int all_sizes, int *differs);
/*
 * Under a launcher (r->boot started): open the rails, exchange the hellos,
 * connect the pairs, measure, gather every rank's hello and rows.
 */
int pn_bwrun_launcher(struct pn_bwrun *r, const char *devspec);

#endif
