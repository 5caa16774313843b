/* SPDX-License-Identifier: MIT */
/*
 * penny bw's options (bwopts.c), in perftest's spelling, checked and turned
 * into the test's configuration (bwtest.h): which combinations go
 * together, the sizes, the iterations or seconds, and what -d and
 * --loopback may name.  Errors are one line in pn_errmsg(); cmd/ says them.
 */
#ifndef PENNY_BWOPTS_H
#define PENNY_BWOPTS_H

#include "harness/bwtest.h"

#include <stdint.h>

#define PN_BW_SIZE_UNSET UINT64_MAX
/* perftest's MB/sec: 2^20 bytes per second (its --report_gbits: 10^9 bits) */
#define PN_BW_MIB_PER_GBIT (1e9 / 8 / 1048576.0)

#define PN_BW_PORT 18515	/* -p when not given (perftest's) */

/* The options as given; the initial values -1, 0 and PN_BW_SIZE_UNSET mean
 * "not given" (cmd/bw.c's table; -p: 0). */
struct pn_bw_opts {
	const char *dev, *op, *loopback, *expect, *gpu_engine, *connection;
	const char *transport;	/* --transport: verbs, tcp; NULL: not given */
	int ibport, gid, all, iters, qps, bidir, mtu, lat, txdepth, port, all_rails;
	int inline_size, use_cuda, gpu, cpu_freq, report_gbits, qp_timeout, no_peak;
	int rdma_cm, events;	/* accepted, warned: penny's TCP exchange, CQ polling */
	uint64_t size;		/* 65536 (RDMA) or 256 MiB (--gpu) when not given */
	double duration, min_gbps, limit_bw;
	/* set from the above */
	int port_set;		/* -p was given (pn_bw_opts_cfg) */
	const char *host;	/* the client's HOST, without a :PORT (pn_bw_opts_args) */
	char hostbuf[256];
};

/*
 * The RDMA test's configuration from o into c: 0, or -EINVAL naming the
 * options that do not go together.  Sets o->size and o->port (0: not
 * given) when not given, o->port_set, and o->min_gbps from -w (perftest's
 * limit, in the table's unit).
 */
int pn_bw_opts_cfg(struct pn_bw_opts *o, struct pn_bw_cfg *c);
/* -d and --loopback name what their mode uses: 0 or -EINVAL. */
int pn_bw_opts_devices(const struct pn_bw_opts *o);
/* --gpu measures this host's GPUs in one process: the RDMA and TCP
 * options (-p, --transport, the gates, the table's columns), a HOST
 * (nargs), --np (launched) and -s 0 are refused.  0 or -EINVAL. */
int pn_bw_opts_gpu(const struct pn_bw_opts *o, int nargs, int launched);
/*
 * The HOST arguments and the transport (--transport: verbs, the default,
 * or tcp: *tcp): a bare percentage taken for a HOST after --expect, more
 * than one HOST, --all-rails with a HOST or --loopback, --loopback with a
 * HOST, tcp with --use_cuda (GPU memory; tcp sends host memory) or
 * --all-rails (one stream; no NIC pairs), tcp with a --loopback other
 * than lo (both ends talk through it), and a -d or --loopback that is an
 * option ("--loopback --transport tcp").  The HOST into o->host: HOST or
 * [IPV6], or HOST:PORT and [IPV6]:PORT, whose port (decimal, 1..65535)
 * goes to o->port (refused when -p names another; a bare IPv6 address is
 * a HOST).  0, -EINVAL or -ENAMETOOLONG.
 */
int pn_bw_opts_args(struct pn_bw_opts *o, const char *transport, int nargs, char *const *args,
		    int *tcp);
/*
 * How the job pairs up (pn_bwrun_pairs, for o's --loopback and
 * --all-rails), and -p, the server's port, refused under a launcher of
 * more than one rank, whose pairs meet through the job's rendezvous.
 */
int pn_bw_opts_pairs(const struct pn_bw_opts *o, int nranks, int single, int nargs,
		     const char *launcher, int *rank0);
struct pn_bwrun;
/* The run's settings that are o's (-i -x -I --use_cuda --all-rails -u). */
void pn_bw_opts_run(const struct pn_bw_opts *o, struct pn_bwrun *r);
/*
 * The lines said before a run, warnings and not errors, note i of them
 * into buf: -R (penny's own TCP exchange on -p, not rdma_cm), -e (CQ
 * polling, not events) and, with the TCP path (tcp), the RDMA settings
 * given that it does not use (-d -i -x -q -t --mtu --op -I -u: "-q 2, --op
 * read: RDMA settings, unused by --transport tcp ..."; they stay accepted:
 * both sides, and the ranks of a job, still compare them).  1 while i
 * names a note (buf "" when it does not apply), 0 past the last.
 */
int pn_bw_opts_note(const struct pn_bw_opts *o, int tcp, int i, char *buf, size_t len);

#endif
