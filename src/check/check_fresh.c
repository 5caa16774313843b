/* SPDX-License-Identifier: MIT */
/*
 * A fresh job of the check's ranks (check_fresh.h: pn_check_fresh_job): every
 * rank execs c->exe `allreduce-test --json` (base/run.h; the job's
 * --transport and --sysfs-root, the rank's environment with the caller's
 * variables) as its rank of a new job.  The new ranks meet through penny's
 * own rendezvous (engine/boot.h): rank 0 listens on a free port of the
 * job's rendezvous host, hands the socket to its child (PENNY_ROOT_FD: the
 * port is never free for another process to take) and makes a fresh
 * secret, and the job's bootstrap hands both to every rank.  Used by the
 * job's allreduce row (check_ar.c), the A/B of the decision table
 * (check_ab.c) and NCCL's log of the job (check_ncclrun.c).
 */
#define _GNU_SOURCE
#include "check/check_fresh.h"
#include "check/check_row.h"
#include "base/log.h"
#include "base/run.h"
#include "base/sock.h"
#include "base/util.h"
#include "engine/boot.h"
#include "node/sysfs.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

/* allreduce-test's JSON of a few sizes is a few KiB; more is not its output */
#define FRESH_OUT_MAX (1u << 20)
#define FRESH_ENV_MAX 8
/* connections the fresh job's rendezvous socket queues (as the engine's own) */
#define FRESH_BACKLOG 4096

/* What rank 0 hands every rank: where the fresh ranks meet. */
struct fresh_go {
	int32_t go;
	int32_t port;
	char host[256];
	char secret[65];	/* PENNY_COOKIE of the fresh job (hex) */
	char why[160];		/* !go: why not */
};

/* Rank 0: a port on the job's rendezvous host, listening (*lfd, handed to
 * rank 0's child: no other process can take it in between), and a fresh
 * secret (a stranger on the port could not have joined the fresh ranks). */
static void make_go(const struct pn_check *c, struct fresh_go *go, int *lfd)
{
	const char *root = pn_boot_root(c->boot);
	uint8_t sec[32];
	int fd, port = 0, i;

	memset(go, 0, sizeof(*go));
	if (!c->exe) {
		snprintf(go->why, sizeof(go->why), "no penny binary to run afresh");
		return;
	}
	if (!root || pn_parse_hostport(root, go->host, sizeof(go->host), &port)) {
		snprintf(go->why, sizeof(go->why), "the job's rendezvous address is unknown");
		return;
	}
	if (getrandom(sec, sizeof(sec), 0) != (ssize_t)sizeof(sec)) {
		snprintf(go->why, sizeof(go->why), "no random bytes for a secret");
		return;
	}
	for (i = 0; i < 32; i++)
		snprintf(go->secret + 2 * i, 3, "%02x", sec[i]);
	fd = pn_sock_listen(go->host, 0, FRESH_BACKLOG, &port);
	if (fd < 0) {
		snprintf(go->why, sizeof(go->why), "no free port on %.100s: %s", go->host,
			 strerror(-fd));
		return;
	}
	*lfd = fd;
	go->port = port;
	go->go = 1;
}

int pn_check_ar_argv_tail(const struct pn_check *c, const char **argv, int n, int max,
			  const char *const *extra)
{
	const char *sysroot = pn_sysfs_root();
	int i;

	if (n + 5 > max)
		return -E2BIG;
	if (sysroot && strcmp(sysroot, "/")) {
		argv[n++] = "--sysfs-root";
		argv[n++] = sysroot;
	}
	if (c->transport) {
		argv[n++] = "--transport";
		argv[n++] = c->transport;
	}
	for (i = 0; extra && extra[i] && n < max - 1; i++)
		argv[n++] = extra[i];
	argv[n] = NULL;
	return extra && extra[i] ? -E2BIG : n;
}

/* This rank's child: allreduce-test of the fresh job. */
static int run_child(const struct pn_check *c, const struct fresh_go *go, int lfd,
		     const char *const *add, const char *const *args, struct pn_run *run,
		     struct pn_fresh_end *end)
{
	char rank[16], nranks[16], root[300], tmo[32], cookie[80];
	double t = pn_boot_timeout(c->boot);
	const char *argv[40], *env[FRESH_ENV_MAX + 3];
	int n = 0, ret;

	for (n = 0; add && add[n] && n < FRESH_ENV_MAX; n++)
		env[n] = add[n];
	snprintf(cookie, sizeof(cookie), "PENNY_COOKIE=%s", go->secret);
	env[n++] = cookie;
	/* rank 0's child: the listening socket, as its descriptor 3 */
	if (lfd >= 0)
		env[n++] = "PENNY_ROOT_FD=3";
	env[n] = NULL;
	snprintf(rank, sizeof(rank), "%d", c->rank);
	snprintf(nranks, sizeof(nranks), "%d", c->nranks);
	snprintf(root, sizeof(root), strchr(go->host, ':') ? "[%s]:%d" : "%s:%d", go->host,
		 go->port);
	/* every wait of the fresh job a quarter of --timeout: it ends, or is
	 * killed, well before the job's own ranks give up on this one */
	snprintf(tmo, sizeof(tmo), "%.3f", t / 4 > 1 ? t / 4 : 1);
	n = 0;
	argv[n++] = c->exe;
	argv[n++] = "allreduce-test";
	argv[n++] = "--json";
	argv[n++] = "--rank";
	argv[n++] = rank;
	argv[n++] = "--nranks";
	argv[n++] = nranks;
	argv[n++] = "--root";
	argv[n++] = root;
	argv[n++] = "--timeout";
	argv[n++] = tmo;
	/* the job's own choice of transport (its environment's knobs are the
	 * child's environment already) */
	n = pn_check_ar_argv_tail(c, argv, n, (int)PN_ARRAY_SIZE(argv), args);
	if (n < 0)
		return pn_err(n, "allreduce-test's arguments do not fit");
	*run = (struct pn_run){ .argv = argv, .env = env, .timeout = t * 0.8,
				.out_max = FRESH_OUT_MAX, .pass_fd = lfd >= 0 ? lfd : 0 };
	ret = pn_run(run);
	if (ret < 0)
		return ret;
	if (ret)
		snprintf(end->why, sizeof(end->why), "%s", run->why);
	end->failed = ret != 0;
	end->killed = ret && (run->status < 0 || run->status > 128);
	return 0;
}

int pn_check_fresh_job(struct pn_check *c, int ok, const char *no, const char *const *env,
		       const char *const *args, struct pn_run *run, struct pn_fresh_end *ends,
		       char *why, size_t wlen)
{
	struct pn_fresh_end end = { 0 };
	struct fresh_go go = { 0 };
	struct fresh_ok { int32_t ok; char no[120]; } mine = { .ok = ok }, *oks;
	int r, ret, lfd = -1;

	*run = (struct pn_run){ 0 };
	why[0] = 0;
	snprintf(mine.no, sizeof(mine.no), "%s", ok ? "" : no);
	oks = calloc((size_t)c->nranks, sizeof(*oks));
	if (!oks)
		return pn_err(-ENOMEM, "out of memory for a fresh job");
	ret = pn_boot_allgather(c->boot, &mine, oks, sizeof(mine));
	if (!ret && c->rank == 0) {
		for (r = 0; r < c->nranks && oks[r].ok; r++)
			;
		if (r < c->nranks) {
			oks[r].no[sizeof(oks[r].no) - 1] = 0;
			pn_wire_printable(oks[r].no, sizeof(oks[r].no));
			snprintf(go.why, sizeof(go.why), "rank %d (node %s) %s", r,
				 pn_check_node_of(c, r), oks[r].no);
		} else {
			make_go(c, &go, &lfd);
		}
	}
	free(oks);
	if (!ret)
		ret = pn_boot_bcast(c->boot, &go, sizeof(go), 0);
	if ((ret || !go.go) && lfd >= 0)
		close(lfd);
	if (ret)
		return ret;
	go.host[sizeof(go.host) - 1] = go.secret[sizeof(go.secret) - 1] = 0;
	go.why[sizeof(go.why) - 1] = 0;
	if (!go.go) {
		snprintf(why, wlen, "%s", go.why);
		return 1;
	}
	ret = run_child(c, &go, lfd, env, args, run, &end);
	if (lfd >= 0)
		close(lfd);
	/* every rank reports, also one whose child could not start */
	if (ret) {
		end.failed = 1;
		snprintf(end.why, sizeof(end.why), "%s", pn_errmsg(ret));
	}
	r = pn_boot_allgather(c->boot, &end, ends, sizeof(end));
	if (ret == -ENOMEM || r) {
		pn_run_release(run);
		return ret == -ENOMEM ? ret : r;
	}
	for (r = 0; r < c->nranks; r++) {
		ends[r].why[sizeof(ends[r].why) - 1] = 0;
		pn_wire_printable(ends[r].why, sizeof(ends[r].why));
	}
	return 0;
}

int pn_fresh_failed(const struct pn_fresh_end *ends, int n)
{
	int r, k = -1;

	/* the rank whose child died or was killed is the cause; the others' say so */
	for (r = 0; r < n; r++)
		if (ends[r].failed && (k < 0 || (ends[r].killed && !ends[k].killed)))
			k = r;
	return k;
}

