/* SPDX-License-Identifier: MIT */
/*
 * penny check: one health verdict for a node, or for a job under a
 * launcher.  The checks and the job's rules are src/check/check*.c; this
 * file parses the options, opens the output files before the work, calls
 * pn_check_run and presents the results (rank 0 only): the table or --json
 * on stdout, --junit, --prom and --save-baseline through base/ofile.h.
 */
#define _GNU_SOURCE
#include "penny.h"

#include "base/log.h"
#include "base/ofile.h"
#include "base/stop.h"
#include "base/util.h"
#include "base/verdict.h"
#include "check/check.h"
#include "check/check_base.h"
#include "check/check_cfg.h"
#include "check/check_nccl.h"
#include "check/check_row.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static struct {
	const char *config, *only, *skip, *require, *junit, *prom, *baseline, *save, *plan, *dev,
		*backend, *nccl_log;
	int quick, passive, list_keys;
} opt;

const struct pn_opt check_options[] = {
	{ "config", 0, OPT_STRING, &opt.config, "FILE",
	  "expectations: one 'key = value' a line (see --list-keys)", NULL, NULL },
	{ "only", 0, OPT_STRING, &opt.only, "LIST", "run only these checks (comma list)",
	  "inventory pcie counters nic-bw gpu-copy allreduce rails settings nccl-path ranks alltoall", OPT_LIST },
	{ "skip", 0, OPT_STRING, &opt.skip, "LIST", "run every check but these (comma list)",
	  "inventory pcie counters nic-bw gpu-copy allreduce rails settings nccl-path ranks alltoall", OPT_LIST },
	{ "require", 0, OPT_STRING, &opt.require, "LIST",
	  "a SKIP of these checks is a FAIL (comma list; adds to job.require)",
	  "inventory pcie counters nic-bw gpu-copy allreduce rails settings nccl-path ranks alltoall", OPT_LIST },
	{ "quick", 0, OPT_BOOL, &opt.quick, NULL,
	  "shorter measurements (see the man page for what is left out)", NULL, NULL },
	{ "passive", 0, OPT_BOOL, &opt.passive, NULL,
	  "read the node's state only, send no traffic: inventory, pcie, counters, settings, "
	  "ranks (nccl-path with --nccl-log)", NULL, NULL },
	{ "junit", 0, OPT_STRING, &opt.junit, "FILE", "also write JUnit XML to FILE", NULL, NULL },
	{ "prom", 0, OPT_STRING, &opt.prom, "FILE",
	  "also write a node_exporter textfile to FILE (by rename)", NULL, NULL },
	{ "baseline", 0, OPT_STRING, &opt.baseline, "FILE",
	  "expect at least job.baseline-fraction of a saved baseline's figures", NULL, NULL },
	{ "save-baseline", 0, OPT_STRING, &opt.save, "FILE",
	  "save this run's figures as a baseline (only when every check passed)", NULL, NULL },
	{ "plan", 0, OPT_STRING, &opt.plan, "FILE",
	  "ring plan for allreduce and rails (default: built from the topology)", NULL, NULL },
	{ "ib-dev", 'd', OPT_STRING, &opt.dev, "DEV[:PORT]",
	  "check only these RDMA devices (comma list; default: every one)", NULL, OPT_LIST },
	{ "backend", 0, OPT_STRING, &opt.backend, "LIST",
	  "GPU plugins to try, in order, e.g. cuda,nccl (default: cuda,nccl)", NULL, OPT_LIST },
	{ "nccl-log", 0, OPT_STRING, &opt.nccl_log, "FILE",
	  "judge this NCCL_DEBUG=INFO log (nccl-path; default: one it captures)", NULL, NULL },
	{ "list-keys", 0, OPT_BOOL, &opt.list_keys, NULL,
	  "list the configuration keys with their defaults and ranges", NULL, NULL },
	OPT_TABLE_END
};

static int list_keys(struct pn_ctx *ctx)
{
	struct pn_out *o = ctx->out;
	size_t n, i;
	const struct pn_check_key *k = pn_check_keys(&n);

	pn_out_open_object(o, NULL);
	pn_out_open_array(o, "keys");
	for (i = 0; i < n; i++) {
		char dflt[64], range[128];
		const char *type = pn_check_key_text(&k[i], dflt, sizeof(dflt), range, sizeof(range));

		pn_out_open_object(o, NULL);
		pn_out_str(o, PN_ANY, "key", "%-24s", k[i].key);
		pn_out_str(o, PN_JSON, "type", NULL, type);
		pn_out_str(o, PN_ANY, "default", " default %-8s", dflt);
		pn_out_str(o, PN_ANY, "range", " (%s)", range);
		pn_out_str(o, PN_ANY, "doc", "\n    %s\n", k[i].doc);
		pn_out_close_object(o);
	}
	pn_out_close_array(o);
	pn_out_close_object(o);
	return 0;
}

static void progress(void *arg, const char *check, const char *what)
{
	fprintf(stderr, "penny check: %s: %s\n", check, what);
}

struct outputs {
	struct pn_ofile *junit, *prom, *save;
	int open;	/* rank 0 opened them: every exit writes them */
	struct pn_ctx *ctx;	/* for a stop's thread */
	struct pn_check *c;
};

/* Write and commit one output file; 0, or 2 after one line. */
static int commit(struct pn_ctx *ctx, struct pn_ofile **of, const char *path, int ret)
{
	if (!*of)
		return 0;
	if (ret) {
		pn_err(ret, "%s: write error: %s", path, strerror(-ret));
		pn_ofile_abort(*of);
	} else {
		ret = pn_ofile_commit(*of); /* frees it either way */
	}
	*of = NULL;
	if (ret)
		return pn_cmd_fail(ctx, 2, "%s", pn_errmsg(ret));
	return 0;
}

/*
 * Every exit after the outputs were opened, once (the run or a stop's
 * thread): the baseline (only when every check passed), then JUnit and
 * Prometheus with the run's real exit code, and for an exit 2 the reason
 * it said; a job's other ranks: their own results (a node's first rank).
 */
static int write_outputs(struct pn_ctx *ctx, struct outputs *f, struct pn_check *c, int code)
{
	const char *host = c->node[0] ? c->node : pn_hostname();
	const char *why = NULL;
	int ran = c->results != NULL && code != 2;

	if (!f->open || !pn_stop_hold(-1))
		return code;
	if (ctx->job->rank > 0 && c->nranks > 1 && !c->node_leader) { /* its node's first's */
		pn_ofile_abort(f->junit);
		pn_ofile_abort(f->prom);
		f->junit = f->prom = NULL;
	}
	if (f->save && code == 0) {
		code |= commit(ctx, &f->save, opt.save,
			       pn_check_baseline_write(pn_ofile_file(f->save), c->results));
	} else if (f->save) {
		pn_ofile_abort(f->save);
		f->save = NULL;
		if (ran)
			code = pn_cmd_fail(ctx, code,
					   "--save-baseline: %s not written: the run did not pass",
					   opt.save);
	}
	if (code == 2)
		why = *pn_cmd_said() ? pn_cmd_said() : "penny check could not run";
	if (f->junit && commit(ctx, &f->junit, opt.junit,
			       pn_verdict_write_junit(pn_ofile_file(f->junit), "penny check",
						      host, c->results, why)))
		code = 2;
	if (f->prom)
		code |= commit(ctx, &f->prom, opt.prom,
			       pn_verdict_write_prom(pn_ofile_file(f->prom), c->results, code));
	f->open = 0;
	pn_stop_release(1);
	return code & 2 ? 2 : code;
}

/* The stop's thread (SIGTERM, SIGINT, SIGHUP) before the outputs were written: exit 2. */
static void stopped(void *arg, int sig)
{
	struct outputs *f = arg;
	struct pn_check none;

	if (!pn_stop_hold(-1))
		return; /* they hold the verdict: the signal's default action */
	none = *f->c, none.results = NULL; /* its name, its place in a job: no result */
	_exit(write_outputs(f->ctx, f, &none, pn_cmd_fail(f->ctx, 2, "stopped by signal %d (%s) "
							   "before the verdict", sig, strsignal(sig))));
}

/*
 * Every rank opens its output files (the baseline rank 0 alone) before the
 * work: a refused name fails now.  The others are still opened, to say why.
 */
static int open_outputs(struct pn_ctx *ctx, struct outputs *f, struct pn_check *c)
{
	const char *paths[] = { opt.junit, opt.prom, ctx->job->rank <= 0 ? opt.save : NULL };
	struct pn_ofile **of[] = { &f->junit, &f->prom, &f->save };
	size_t i;
	int ret, rc = 0;

	*f = (struct outputs){ .open = 1, .ctx = ctx, .c = c };
	for (i = 0; i < 3; i++)
		if (paths[i] && (ret = pn_ofile_open(of[i], paths[i], PN_OFILE_SYNC)) && !rc)
			rc = pn_cmd_fail(ctx, 2, "%s", pn_errmsg(ret));
	/* a stop (SIGTERM, SIGINT) writes them too, a job's rank's as well */
	if (opt.junit || opt.prom || opt.save)
		pn_stop_start(stopped, f);
	return rc;
}

/*
 * Rank 0: the verdict said, the output files written, then the document
 * (valid also when the run could not finish) with the status the command
 * exits with: 2 also when an output file could not be written.
 */
static int present(struct pn_ctx *ctx, struct pn_check *c, int ret, struct outputs *f)
{
	struct pn_out *o = ctx->out;
	int code = ret ? 2 : c->exit_code, nfail = ret ? 0 : pn_verdict_count(c->results, PN_FAIL);
	char err[1024];

	snprintf(err, sizeof(err), "%s", ret ? pn_errmsg(ret) : "");
	if (ret)
		pn_cmd_fail(ctx, 2, "%s", err);
	else if (code == 1 && pn_cli.json)
		pn_cmd_fail(ctx, 1, "FAILED: %d check result%s failed", nfail, nfail == 1 ? "" : "s");
	else if (code == 2)
		pn_cmd_fail(ctx, 2, "nothing could be checked here: every check was skipped");
	code = write_outputs(ctx, f, c, code);
	pn_out_open_object(o, NULL);
	/* no empty table and "0 passed" above the error that stopped the run */
	if (c->results && (!ret || pn_cli.json || pn_verdict_n(c->results)))
		pn_verdict_write_out(o, c->results);
	if (ret)
		pn_out_str(o, PN_JSON, "error", NULL, err);
	pn_out_int(o, PN_JSON, "exit", NULL, code);
	pn_out_close_object(o);
	return code;
}

static int setup(struct pn_ctx *ctx, struct pn_check_cfg *cfg, struct pn_check_baseline **base,
		 struct pn_check *c)
{
	const struct pn_check_sel s = { .only = opt.only, .skip = opt.skip, .require = opt.require,
					.nccl_log = opt.nccl_log, .config = opt.config,
					.passive = opt.passive, .dev = opt.dev, .backend = opt.backend };
	int ret = pn_check_select(&s, &c->mask);

	if (!ret && opt.baseline && opt.save)
		ret = pn_err(-EINVAL, "--baseline and --save-baseline exclude each other");
	if (!ret && opt.config)
		ret = pn_check_cfg_load(cfg, opt.config);
	if (!ret)
		ret = pn_check_required(&s, cfg, c->mask, &c->require);
	if (!ret && opt.baseline)
		ret = pn_check_baseline_load(base, opt.baseline);
	c->nccl_log = opt.nccl_log;
	if (!ret)
		ret = pn_check_ncclpath_load(c);
	return ret ? pn_cmd_fail(ctx, 2, "%s", pn_errmsg(ret)) : 0;
}

int cmd_check(struct pn_ctx *ctx, int argc, char **argv)
{
	struct pn_cmd_job *job = ctx->job;
	static struct outputs files;
	struct pn_check_baseline *base = NULL;
	struct pn_check_cfg *cfg;
	struct pn_check c;
	int rc, ret = 0, rank0, say = 0;

	if (opt.list_keys)
		return list_keys(ctx);
	{
		/* two outputs, or an output and an input, on one file: refused */
		const char *const names[] = { "--junit", "--prom", "--save-baseline", "--config",
					      "--baseline", "--plan", "--nccl-log" };
		const char *const paths[] = { opt.junit, opt.prom, opt.save, opt.config,
					      opt.baseline, opt.plan, opt.nccl_log };

		if ((rc = pn_cmd_refuse_shared(ctx, names, paths, 3, PN_ARRAY_SIZE(paths))))
			return rc;
	}
	pn_check_init(&c);
	rc = pn_cmd_job_cfg(ctx);
	rank0 = job->rank <= 0;
	rc |= open_outputs(ctx, &files, &c);	/* every exit from here rewrites them (0 or 2) */
	cfg = pn_check_cfg_new();
	if (!rc && !cfg)
		rc = pn_cmd_fail(ctx, 2, "%s", pn_errmsg(-ENOMEM));
	if (!rc && argc > 0)
		rc = pn_cmd_fail(ctx, 2, "unexpected argument '%s'", argv[0]);
	if (!rc)
		rc = setup(ctx, cfg, &base, &c);
	c.cfg = cfg;
	c.baseline = base;
	if (rc)
		goto out;
	c.quick = opt.quick, c.timeout = pn_cli.timeout, c.plan_path = opt.plan, c.devspec = opt.dev;
	c.backends = opt.backend, c.transport = pn_cli.transport, c.node_id = pn_cli.node_id;
	c.tune_file = pn_cli.tune_file, c.ib_hca = pn_cli.ib_hca, c.ib_disable = pn_cli.ib_disable;
	c.xnode = &pn_cli.xnode;
	if (rank0 && isatty(STDERR_FILENO))
		c.progress = progress;
	c.rank = rank0 ? 0 : job->rank;
	if (job->nranks > 1) {
		ret = pn_cmd_job_start(ctx, 0);
		if (ret == 2) { /* the environment, said */
			rc = 2;
			goto out;
		}
		c.boot = job->boot;
		if (!ret && (ret = pn_check_agree(c.boot, &c, opt.require, &say))) {
			rc = say ? pn_cmd_fail(ctx, 2, "%s", pn_errmsg(ret)) : 2;
			goto out;
		}
	}
	if (!ret)
		ret = pn_check_run(&c);
	if (c.rank != 0) /* first: where a node shares a file with rank 0, the job's is kept */
		rc = write_outputs(ctx, &files, &c, ret ? pn_cmd_fail(ctx, 2, "rank %d: %s", c.rank,
								  pn_errmsg(ret)) : c.exit_code);
	if (c.boot && !ret)
		pn_boot_barrier(c.boot);
	if (c.rank != 0)
		goto out;
	rc = present(ctx, &c, ret, &files);
out:
	rc = write_outputs(ctx, &files, &c, rc);
	pn_check_release(&c);
	pn_check_baseline_free(base);
	pn_check_cfg_free(cfg);
	return rc;
}
