/* SPDX-License-Identifier: MIT */
/*
 * The A/B of the decision table (harness/check_diag.h): the job's allreduce
 * on nccl missed its expectation; is NCCL's choice of NIC the cause?  NCCL
 * reads NCCL_IB_HCA once per process, and the ranks' NCCL is initialised
 * already, so the A/B runs in fresh processes: every rank execs c->exe
 * `allreduce-test --backend nccl --json` (base/run.h; the job's
 * --transport and --sysfs-root, the rank's environment) with NCCL_IB_HCA
 * pinned to its GPU's rail NIC (the nearest NIC, pn_topo_rail; the GPU as
 * the ranks check finds it), at the job's allreduce.size.  The new ranks
 * meet through penny's own rendezvous (engine/boot.h): rank 0 listens on a
 * free port of the job's rendezvous host, hands the socket to its child
 * (PENNY_ROOT_FD: the port is never free for another process to take) and
 * makes a fresh secret, and the job's bootstrap hands both to every
 * rank.  Rank 0 reads its child's JSON and adds the result "allreduce",
 * target "job-rail", against the job's expectation; a rank without a
 * rail NIC SKIPs it, a child that fails, dies, hangs (killed before the
 * job's --timeout runs out) or prints what is not allreduce-test's JSON
 * FAILs it, naming the rank and why.
 */
#define _GNU_SOURCE
#include "harness/check.h"
#include "harness/check_ar.h"
#include "harness/check_cfg.h"
#include "harness/check_diag.h"
#include "harness/check_gpu.h"
#include "harness/check_ranks.h"
#include "base/log.h"
#include "base/minijson.h"
#include "base/run.h"
#include "base/sock.h"
#include "base/util.h"
#include "base/verdict.h"
#include "engine/boot.h"
#include "node/nic.h"
#include "node/sysfs.h"
#include "node/topo.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#define TARGET "job-rail"
/* allreduce-test's JSON of one size is a few KiB; more is not its output */
#define AB_OUT_MAX (1u << 20)
#define AB_ITERS "5"
#define FRESH_ENV_MAX 8
/* connections the fresh job's rendezvous socket queues (as the engine's own) */
#define AB_BACKLOG 4096
#define SOURCE "the decision table: NCCL_IB_HCA per rank"

/* ------------------------------------------------------------ pure parts */

int pn_diag_ab_wanted(const struct pn_verdict_list *l)
{
	int i, job = -1;

	for (i = 0; i < pn_verdict_n(l); i++) {
		const struct pn_verdict_result *r = pn_verdict_at(l, i);

		if (strcmp(r->check, "allreduce"))
			continue;
		if (!strcmp(r->target, TARGET))
			return -1;
		if (!strcmp(r->target, "job") && r->verdict == PN_FAIL &&
		    r->measured.kind == PN_VAL_NUM && r->expected.kind == PN_VAL_NUM &&
		    r->measured.num < r->expected.num)
			job = i;
	}
	return job;
}

/* ------------------------------------------------------------ in the run */

/* What each rank tells the others before the A/B (fixed size: an allgather). */
struct ab_rank {
	int32_t ok;		/* it has a rail NIC */
	char hca[80];		/* "=mlx5_0:1": NCCL_IB_HCA, exact name */
	char why[120];		/* !ok: why not */
};

/* What rank 0 hands every rank: where the fresh ranks meet. */
struct fresh_go {
	int32_t go;
	int32_t port;
	char host[256];
	char secret[65];	/* PENNY_COOKIE of the fresh job (hex) */
	char why[160];		/* !go: why not */
};

/* This rank's GPU's rail NIC as NCCL_IB_HCA wants it ("=mlx5_0:1"). */
static void my_rail(const struct pn_check *c, struct ab_rank *me)
{
	const struct pn_topo *t = c->topo;
	const char *cvd = getenv("CUDA_VISIBLE_DEVICES");
	int *nics, g, n, best, k, j, port;

	memset(me, 0, sizeof(*me));
	g = pn_ranks_visible(cvd, pn_boot_local_rank(c->boot), t->ngpus);
	if (g < 0) {
		snprintf(me->why, sizeof(me->why), "%s", t->ngpus ? "CUDA_VISIBLE_DEVICES names no "
			 "GPU by index" : "no GPU");
		return;
	}
	nics = calloc((size_t)t->nnics + 1, sizeof(*nics));
	if (!nics) {
		snprintf(me->why, sizeof(me->why), "out of memory");
		return;
	}
	n = pn_topo_rail(t, g, nics, &best);
	k = n > 0 ? nics[0] : -1;
	free(nics);
	if (k < 0 || !t->devs[k].nic.nports) {
		snprintf(me->why, sizeof(me->why), "%s has no RDMA NIC with a port",
			 t->devs[g].name);
		return;
	}
	port = t->devs[k].nic.ports[0].port;
	for (j = 0; j < t->devs[k].nic.nports; j++)
		if (pn_port_up(&t->devs[k].nic.ports[j])) {
			port = t->devs[k].nic.ports[j].port;
			break;
		}
	snprintf(me->hca, sizeof(me->hca), "=%s:%d", t->devs[k].nic.name, port);
	me->ok = 1;
}

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
	fd = pn_sock_listen(go->host, 0, AB_BACKLOG, &port);
	if (fd < 0) {
		snprintf(go->why, sizeof(go->why), "no free port on %.100s: %s", go->host,
			 strerror(-fd));
		return;
	}
	*lfd = fd;
	go->port = port;
	go->go = 1;
}

/* This rank's child: allreduce-test of the fresh job. */
static int run_child(const struct pn_check *c, const struct fresh_go *go, int lfd,
		     const char *const *add, const char *const *args, struct pn_run *run,
		     struct pn_fresh_end *end)
{
	char rank[16], nranks[16], root[300], tmo[32], cookie[80];
	const char *sysroot = pn_sysfs_root();
	double t = pn_boot_timeout(c->boot);
	const char *argv[40], *env[FRESH_ENV_MAX + 3];
	int n = 0, i, ret;

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
	if (sysroot && strcmp(sysroot, "/")) {
		argv[n++] = "--sysfs-root";
		argv[n++] = sysroot;
	}
	/* the job's own choice of transport (its environment's knobs are the
	 * child's environment already) */
	if (c->transport) {
		argv[n++] = "--transport";
		argv[n++] = c->transport;
	}
	for (i = 0; args && args[i] && n < (int)PN_ARRAY_SIZE(argv) - 1; i++)
		argv[n++] = args[i];
	if (args && args[i])
		return pn_err(-E2BIG, "allreduce-test's arguments do not fit");
	argv[n] = NULL;
	*run = (struct pn_run){ .argv = argv, .env = env, .timeout = t * 0.8,
				.out_max = AB_OUT_MAX, .pass_fd = lfd >= 0 ? lfd : 0 };
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
			snprintf(go.why, sizeof(go.why), "rank %d (node %.40s) %s", r,
				 pn_boot_node_name(c->boot, r), oks[r].no);
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

/* Rank 0: the row. */
static int ab_row(struct pn_check *c, int job, const struct ab_rank *all,
		  const struct pn_fresh_end *ends, const struct pn_run *run)
{
	const struct pn_verdict_result *j = pn_verdict_at(c->results, job);
	char det[PN_VERDICT_DETAIL], why[160], nics[120] = "";
	double as_run = j->measured.num, exp = j->expected.num, bw = NAN;
	unsigned long long bytes = 0;
	struct pn_ar_meas m;
	struct pn_verdict_in in = { .check = "allreduce", .node = "job", .target = TARGET,
				    .verdict = PN_FAIL, .unit = "GB/s", .detail = det,
				    .expected = PN_VNUM(exp), .source = SOURCE };
	int r, k, n;

	/* the rail NICs pinned, each once ("=mlx5_0:1 =mlx5_3:1") */
	for (r = 0; r < c->nranks; r++) {
		int seen = 0;

		for (k = 0; k < r && !seen; k++)
			seen = !strcmp(all[k].hca, all[r].hca);
		n = (int)strlen(nics);
		if (!seen && n + strlen(all[r].hca) + 5 < sizeof(nics))
			snprintf(nics + n, sizeof(nics) - (size_t)n, "%s%s", n ? " " : "",
				 all[r].hca + 1);
	}
	if ((r = pn_fresh_failed(ends, c->nranks)) >= 0) {
		snprintf(det, sizeof(det), "pinned to the rail NICs, rank %d (node %.40s) failed: "
			 "%s", r, pn_boot_node_name(c->boot, r), ends[r].why);
	} else if (pn_check_ar_parse(run->out, run->out_len, &m, why, sizeof(why)) ||
		   (m.wrong && snprintf(why, sizeof(why), "%llu wrong values",
					(unsigned long long)m.wrong))) {
		snprintf(det, sizeof(det), "pinned to the rail NICs, rank 0's allreduce-test: %s",
			 why);
	} else {
		bw = m.busbw[m.nsizes - 1];
		bytes = m.bytes[m.nsizes - 1];
		in.measured = PN_VNUM(bw);
		in.verdict = bw >= exp ? PN_PASS : PN_FAIL;
		snprintf(det, sizeof(det), "NCCL_IB_HCA pinned to each GPU's rail NIC (%s): %.3g "
			 "GB/s, %.3g as run (%llu B, %d ranks)", nics, bw, as_run, bytes, c->nranks);
	}
	return pn_check_add(c, &in);
}

int pn_check_rail_ab(struct pn_check *c)
{
	struct ab_rank me, *all = NULL;
	struct pn_fresh_end *ends = NULL;
	struct pn_run run = { 0 };
	char hca[100], no[120], why[160];
	const char *env[] = { hca, NULL };
	char sz[32];
	const char *args[] = { "--backend", "nccl", "-b", sz, "-e", sz, "-n", AB_ITERS, NULL };
	int32_t want = 0;
	int job = -1, r, ret;
	double size = 0;

	if (!c->boot || c->nranks < 2 || !(c->mask & (1u << PN_CHECK_ALLREDUCE)))
		return 0;
	if (c->rank == 0) {
		job = pn_diag_ab_wanted(c->results);
		want = job >= 0 && !strcmp(c->job_backend, "nccl");
	}
	ret = pn_boot_bcast(c->boot, &want, sizeof(want), 0);
	if (ret || !want)
		return ret;
	pn_check_progress(c, "diagnosis", "the job's allreduce missed: NCCL pinned to each "
			  "GPU's rail NIC");
	all = calloc((size_t)c->nranks, sizeof(*all));
	ends = calloc((size_t)c->nranks, sizeof(*ends));
	if (!all || !ends) {
		ret = pn_err(-ENOMEM, "out of memory for the A/B");
		goto out;
	}
	my_rail(c, &me);
	ret = pn_boot_allgather(c->boot, &me, all, sizeof(me));
	if (ret)
		goto out;
	for (r = 0; r < c->nranks; r++)
		all[r].hca[sizeof(all[r].hca) - 1] = 0;
	snprintf(hca, sizeof(hca), "NCCL_IB_HCA=%s", me.hca);
	snprintf(no, sizeof(no), "has no rail NIC: %.100s", me.why);
	pn_check_cfg_num(c->cfg, "allreduce.size", &size);
	size = size < 4 ? 4 : floor(size / 4) * 4;
	snprintf(sz, sizeof(sz), "%llu", (unsigned long long)size);
	ret = pn_check_fresh_job(c, me.ok, no, env, args, &run, ends, why,
				 sizeof(why));
	if (ret == 1 && c->rank == 0)
		ret = pn_check_add(c, &(struct pn_verdict_in){
			.check = "allreduce", .node = "job", .target = TARGET, .verdict = PN_SKIP,
			.detail = why, .source = SOURCE });
	else if (!ret && c->rank == 0)
		ret = ab_row(c, job, all, ends, &run);
	else if (ret == 1)
		ret = 0;
out:
	pn_run_release(&run);
	free(all);
	free(ends);
	return ret;
}
