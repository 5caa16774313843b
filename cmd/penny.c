/* SPDX-License-Identifier: MIT */
/*
 * penny: one binary, one table of subcommands.  run_cmd() does the setup a
 * command's flags ask for (sysfs root, debug mask, output, self-launch), so
 * the subcommands stay thin clients of libpenny.
 */
#define _GNU_SOURCE
#include "penny.h"

#include "base/util.h"
#include "base/log.h"
#include "base/file.h"
#include "base/ofile.h"
#include "gpu/plugin.h"
#include "node/nvml.h"
#include "node/sysfs.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct pn_cli pn_cli = { .np = -1, .rank = -1, .nranks = -1, .timeout = 60.0 };
/* a write error on stdout was reported already (by run_cmd) */
static int stdout_error_said;

static const struct pn_cmd commands[] = {
	{ "topo", cmd_topo, topo_options, NULL, 0, "",
	  "GPU/NIC/NUMA topology, PCIe path classes and rails", NULL },
	{ "bw", cmd_bw, bw_options, NULL, CMD_LAUNCH | CMD_OWN_TRANSPORT, "[HOST]",
	  "RDMA bandwidth and latency test (like ib_write_bw)", bw_prelaunch },
	{ "ring-plan", cmd_ring_plan, ring_plan_options, NULL, 0, "",
	  "rail-aligned ring planner, validation and NCCL graph export", NULL },
	{ "allreduce-test", cmd_allreduce_test, allreduce_test_options, sweep_options, CMD_LAUNCH,
	  "", "allreduce correctness and performance sweep (like all_reduce_perf)",
	  allreduce_test_prelaunch },
	{ "coll-test", cmd_coll_test, coll_test_options, sweep_options, CMD_LAUNCH, "COLLECTIVE",
	  "the other collectives' sweep (like all_gather_perf, alltoall_perf, ...)",
	  coll_test_prelaunch },
	{ "top", cmd_top, top_options, NULL, CMD_JSON_LINES, "",
	  "live per-NIC traffic view", NULL },
	{ "check", cmd_check, check_options, NULL, CMD_LAUNCH, "",
	  "one health verdict for a node or a job (PASS/FAIL/SKIP per check)", NULL },
};

static const struct pn_opt common_options[] = {
	{ "json", 0, OPT_BOOL, &pn_cli.json, NULL, "print JSON instead of text", NULL, NULL },
	{ "debug", 'v', OPT_OPTSTRING, &pn_cli.debug, "SUBSYS",
	  "debug log on stderr for SUBSYS (INIT,BOOT,NET,SHM,COLL,TOPO,NIC,PLUGIN,VERBS,TUNE; "
	  "default ALL)",
	  "ALL INIT BOOT NET SHM COLL TOPO NIC PLUGIN VERBS TUNE", OPT_LIST },
	{ "sysfs-root", 0, OPT_STRING, &pn_cli.sysroot, "DIR",
	  "read /sys and /proc below DIR (also PENNY_SYSROOT)", NULL, NULL },
	{ "help", 'h', OPT_BOOL, &pn_cli.help, NULL, "show this help", NULL, NULL },
	OPT_TABLE_END
};

/* --transport first: a command with its own (CMD_OWN_TRANSPORT) takes the rest */
static const struct pn_opt launch_options[] = {
	{ "transport", 0, OPT_STRING, &pn_cli.transport, "NAME",
	  "force a transport between ranks: shm, tcp, verbs (default: probe)", "shm tcp verbs",
	  OPT_ONE_OF },
	{ "np", 0, OPT_INT, &pn_cli.np, "N", "start N local ranks (self-launch)", NULL,
	  OPT_RANGE(1, PN_BOOT_MAX_NP) },
	{ "rank", 0, OPT_INT, &pn_cli.rank, "R", "this process's rank (with --nranks, --root)",
	  NULL, OPT_RANGE(0, PN_BOOT_MAX_RANKS - 1) },
	{ "nranks", 0, OPT_INT, &pn_cli.nranks, "N", "number of ranks in the job", NULL,
	  OPT_RANGE(1, PN_BOOT_MAX_RANKS) },
	{ "root", 0, OPT_STRING, &pn_cli.root, "HOST:PORT",
	  "rendezvous address of rank 0 (also PENNY_ROOT, MASTER_ADDR/MASTER_PORT)", NULL, NULL },
	{ "timeout", 0, OPT_SECONDS, &pn_cli.timeout, "SEC",
	  "bound on every wait; a silent peer fails the job (default 60)", NULL,
	  OPT_RANGE(0.01, 86400) },
	OPT_TABLE_END
};

static const struct pn_opt *launch_of(const struct pn_cmd *c)
{
	return c->flags & CMD_OWN_TRANSPORT ? launch_options + 1 : launch_options;
}

static const struct pn_cmd *find_cmd(const char *name)
{
	size_t i;

	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(commands[i].name, name))
			return &commands[i];
	return NULL;
}

/*
 * A self-launched rank says its errors to the launcher (without the
 * prefix), which prints them once for all ranks (pn_boot_collapse).
 */
static const struct pn_boot_cfg *say_to;

static void say_fmt(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* One write per message, so the lines of several ranks never interleave.
 * Names in it (paths, hosts, devices) may hold any byte: control
 * characters and invalid UTF-8 are shown as \xNN, so a message stays one
 * line and never drives the terminal. */
static char said[1024];

const char *pn_cmd_said(void)
{
	return said;
}

static void say(const char *cmd, const char *fmt, va_list ap)
{
	char msg[1024], line[1024];
	int n = say_to ? 0 : snprintf(line, sizeof(line), "penny%s%s: ", *cmd ? " " : "", cmd), k;

	vsnprintf(msg, sizeof(msg), fmt, ap);
	memcpy(said, msg, sizeof(said));
	if (n < 0 || n >= (int)sizeof(line))
		n = 0;
	k = n;
	pn_text_escape(line + n, sizeof(line) - (size_t)n - 1, msg, 0);
	n = (int)strlen(line);
	line[n++] = '\n';
	if (say_to && !pn_boot_tell(say_to, line, (size_t)n))
		return;
	if (say_to && k == 0) { /* the launcher is gone: say it here */
		say_to = NULL;
		say_fmt(cmd, "%.*s", n - 1, line);
		return;
	}
	if (write(STDERR_FILENO, line, (size_t)n) < 0)
		return;
}

static void say_fmt(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	say(cmd, fmt, ap);
	va_end(ap);
}

void pn_cmd_error(const struct pn_ctx *ctx, int code)
{
	say_fmt(ctx->name, "%s", pn_errmsg(code));
	pn_err_clear();
}

void pn_cmd_say(const struct pn_ctx *ctx, const char *fmt, ...)
{
	char keep[sizeof(said)];
	va_list ap;

	memcpy(keep, said, sizeof(said));
	va_start(ap, fmt);
	say(ctx->name, fmt, ap);
	va_end(ap);
	memcpy(said, keep, sizeof(said));
}

int pn_cmd_fail(const struct pn_ctx *ctx, int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	say(ctx->name, fmt, ap);
	va_end(ap);
	pn_err_clear();	/* said: a later failure shows its own message */
	return code;
}

int pn_cmd_refuse_shared(const struct pn_ctx *ctx, const char *const *names,
			 const char *const *paths, size_t nout, size_t n)
{
	size_t i, j;

	for (i = 0; i < nout; i++)
		for (j = i + 1; j < n; j++)
			if (paths[i] && paths[j] && pn_ofile_same(paths[i], paths[j]))
				return pn_cmd_fail(ctx, 2, "%s and %s name the same file '%s'",
						   names[i], names[j], paths[i]);
	return 0;
}

int pn_cmd_job_cfg(struct pn_ctx *ctx)
{
	struct pn_cmd_job *job = ctx->job;
	int ret;

	if (job->have_env)
		return 0;
	ret = pn_boot_cfg_from_env(&job->cfg);
	if (ret)
		return pn_cmd_fail(ctx, 2, "%s", pn_errmsg(ret));
	job->have_env = 1;
	job->rank = job->cfg.rank;
	job->nranks = job->cfg.nranks;
	return 0;
}

int pn_cmd_job_start(struct pn_ctx *ctx, double timeout)
{
	struct pn_cmd_job *job = ctx->job;
	struct pn_boot_cfg cfg;
	int ret = pn_cmd_job_cfg(ctx);

	if (ret)
		return ret;
	cfg = job->cfg;
	if (timeout > 0)
		cfg.timeout = timeout;
	job->started = 1;
	ret = pn_boot_init(&job->boot, &cfg);
	if (ret)
		return ret;
	job->rank = pn_boot_rank(job->boot);
	job->nranks = pn_boot_nranks(job->boot);
	return 0;
}

/* Where a multi-rank command is in its job before the environment is read. */
static void job_init(struct pn_cmd_job *job, const struct pn_boot_cfg *launch)
{
	memset(job, 0, sizeof(*job));
	if (launch) {
		job->cfg = *launch;
	} else {
		pn_boot_cfg_init(&job->cfg);
		job->cfg.rank = pn_cli.rank;
		job->cfg.nranks = pn_cli.nranks;
		job->cfg.root = pn_cli.root;
	}
	job->cfg.timeout = pn_cli.timeout;
	job->rank = job->cfg.rank;
	job->nranks = job->cfg.nranks;
}

static void usage(FILE *f)
{
	size_t i;

	fprintf(f, "usage: penny [--version] [help] <command> [options]\n\ncommands:\n");
	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(f, "  %-16s %s\n", commands[i].name, commands[i].summary);
	fprintf(f, "\n'penny help <command>' or 'penny <command> --help' shows a command's "
		   "options.\n");
}

static void cmd_help(const struct pn_cmd *c, FILE *f)
{
	fprintf(f, "usage: penny %s [options]%s%s\n\n%s\n", c->name, c->args[0] ? " " : "",
		c->args, c->summary);
	pn_opt_help(f, "options", c->opts);
	if (c->shared)
		pn_opt_help(f, "sweep options (nccl-tests')", c->shared);
	if (c->flags & CMD_LAUNCH)
		pn_opt_help(f, "launch options", launch_of(c));
	pn_opt_help(f, "common options", common_options);
}

extern char **environ;

/* The knobs of the environment (penny(1), ENVIRONMENT), read here once, and
 * the environment the launcher gave, where the engine finds its variables
 * (doc/ARCHITECTURE.md): 0, or -EINVAL (a knob's value) or -ENOMEM (said). */
static int read_env(void)
{
	static const char *const bit[] = { "0", "1", NULL }, *const bind[] = { "none", NULL };
	int ibd = pn_knob_choice("PENNY_IB_DISABLE", getenv("PENNY_IB_DISABLE"), bit, 0);
	int mc = pn_knob_choice("PENNY_MEM_CHECK", getenv("PENNY_MEM_CHECK"), bit, 1);
	int bn = pn_knob_choice("PENNY_BIND", getenv("PENNY_BIND"), bind, -1);
	struct pn_boot_knobs k = { .site_secret = PN_BOOT_SITE_SECRET, .bind_none = !bn,
				   .node_id = getenv("PENNY_NODE_ID"), .root = getenv("PENNY_ROOT"),
				   .root_fd = getenv("PENNY_ROOT_FD"), .cookie = getenv("PENNY_COOKIE"),
				   .cookie_file = getenv("PENNY_COOKIE_FILE"),
				   .env = (const char *const *)environ };

	if (ibd < 0 || mc < 0 || bn < -1) /* garbage: said, not read as something else */
		return -EINVAL;
	pn_cli.node_id = k.node_id;
	pn_boot_set_knobs(&k);
	pn_cli.tune_file = getenv("PENNY_TUNE_FILE"), pn_cli.ib_hca = getenv("PENNY_IB_HCA");
	pn_cli.ib_disable = ibd, pn_cli.mem_check = mc;
	pn_xnode_env_parse(&pn_cli.xnode, (const char *const[PN_XNODE_NKNOBS]){
		getenv("PENNY_XNODE"), getenv("PENNY_XNODE_TRANSPORT"), getenv("PENNY_XNODE_NIC"),
		getenv("PENNY_XNODE_CHUNK"), getenv("PENNY_XNODE_WHOLE_MAX"), getenv("PENNY_XNODE_LL"),
		getenv("PENNY_XNODE_SLOTS"), getenv("PENNY_XNODE_SOCKETS"), getenv("PENNY_XNODE_QPS") });
	pn_cli.plugin_path = getenv("PENNY_PLUGIN_PATH");
	pn_cli.nvml_lib = getenv("PENNY_NVML_LIB");
	if (pn_nvml_set_lib(pn_cli.nvml_lib))
		return pn_err(-ENOMEM, "out of memory");
	return pn_plugin_set_path(pn_cli.plugin_path);
}

static int run_body(const struct pn_cmd *c, struct pn_ctx *ctx, int nargs, char **argv);

/* like git's run_builtin: a result that could not be written is an error
 * (2, as a --csv - that cannot be written: not 1, which says a check failed) */
static int stdout_status(int ret)
{
	int err = pn_out_flush(stdout);

	if (err && !stdout_error_said)
		say_fmt("", "write error on standard output: %s", strerror(-err));
	return err && !ret ? 2 : ret;
}

/* A self-launched rank (--np): the command, its error lines to the launcher. */
struct rank_run {
	const struct pn_cmd *c;
	struct pn_ctx *ctx;
	int nargs;
	char **argv;
};

static int run_rank(struct pn_boot_cfg *cfg, void *arg)
{
	struct rank_run *rr = arg;

	rr->ctx->rank = cfg->rank;
	rr->ctx->launch = cfg;
	say_to = cfg;
	return stdout_status(run_body(rr->c, rr->ctx, rr->nargs, rr->argv));
}

/*
 * A rank of a job whose command line or environment failed before the
 * command ran tells rank 0 why (rank 0 then fails at once, naming it, not
 * after --timeout); argv, when the options did not parse, is scanned for
 * the rank, size and rendezvous alone.
 */
static void tell_job(const struct pn_cmd *c, int argc, char **argv, const char *why)
{
	const struct pn_opt *const tables[] = { launch_options, NULL };
	struct pn_cmd_job job;

	if (!(c->flags & CMD_LAUNCH))
		return;
	if (argv)
		pn_opt_scan(tables, argc, argv);
	if (pn_cli.np > 0)
		return;
	if (read_env())
		pn_err_clear();
	job_init(&job, NULL);
	if (!pn_boot_cfg_from_env(&job.cfg))
		pn_boot_refuse(&job.cfg, why);
	pn_err_clear();
}

static int run_cmd(const struct pn_cmd *c, int argc, char **argv)
{
	const struct pn_opt *tables[5] = { c->opts, common_options, NULL, NULL, NULL };
	struct pn_ctx ctx = { .name = c->name, .rank = -1 };
	const char *root;
	int nargs = 0, ret, status = 0;

	if (c->flags & CMD_LAUNCH)
		tables[2] = launch_of(c);
	if (c->shared)
		tables[tables[2] ? 3 : 2] = c->shared;
	ret = pn_opt_parse(c->name, tables, argc, argv, &nargs);
	if (ret) {
		tell_job(c, argc, argv, pn_opt_error());
		return ret;
	}
	if (pn_cli.help) {
		cmd_help(c, stdout);
		return 0;
	}
	if (pn_cli.debug) {
		ret = pn_debug_parse(pn_cli.debug, &pn_debug_mask);
		if (ret) {
			pn_cmd_error(&ctx, ret);
			tell_job(c, 0, NULL, said);
			return 2;
		}
	} else if (getenv("PENNY_DEBUG")) {
		ret = pn_debug_parse(getenv("PENNY_DEBUG"), &pn_debug_mask);
		if (ret) {
			pn_err_ctx(ret, "PENNY_DEBUG");
			pn_cmd_error(&ctx, ret);
			tell_job(c, 0, NULL, said);
			return 2;
		}
	}
	ret = read_env();
	if (ret) {
		pn_cmd_error(&ctx, ret);
		tell_job(c, 0, NULL, said);
		return 2;
	}
	root = pn_cli.sysroot ? pn_cli.sysroot : getenv("PENNY_SYSROOT");
	if (root) {
		ret = pn_sysfs_set_root(root);
		if (ret) {
			pn_cmd_error(&ctx, ret);
			tell_job(c, 0, NULL, said);
			return 2;
		}
	}
	static struct pn_boot_cfg cfg;

	/* --np and --timeout are in range (the table); -1: no --np */
	if (c->flags & CMD_LAUNCH) {
		if (pn_cli.np > 0 && c->prelaunch) {
			ret = c->prelaunch(&ctx, pn_cli.np);
			if (ret)
				return ret;
		}
		if (pn_cli.np > 0) {
			struct rank_run rr = { c, &ctx, nargs, argv };
			char *report = NULL, *line, *save = NULL;

			pn_boot_cfg_init(&cfg);
			cfg.timeout = pn_cli.timeout;
			cfg.rank = pn_cli.rank, cfg.nranks = pn_cli.nranks, cfg.root = pn_cli.root;
			fflush(NULL);
			ret = pn_boot_run_ranks(pn_cli.np, &cfg, run_rank, &rr, &status, &report);
			if (ret) {
				pn_cmd_error(&ctx, ret);
				return 2;
			}
			/* every rank's errors, each said once */
			for (line = report ? strtok_r(report, "\n", &save) : NULL; line;
			     line = strtok_r(NULL, "\n", &save))
				say_fmt(c->name, "%s", line);
			free(report);
			return status;
		}
	}
	return run_body(c, &ctx, nargs, argv);
}

/* The command itself, in this process or in a self-launched rank. */
static int run_body(const struct pn_cmd *c, struct pn_ctx *ctx, int nargs, char **argv)
{
	struct pn_cmd_job job;
	int ret, err;

	if (c->flags & CMD_LAUNCH) {
		job_init(&job, ctx->launch);
		ctx->job = &job;
	}
	ctx->out = pn_out_new(stdout, pn_cli.json);
	pn_ofile_claim_stdout(pn_cli.json && !(c->flags & CMD_JSON_LINES) ? "--json" : NULL);
	if (!ctx->out)
		return pn_cmd_fail(ctx, 1, "out of memory");
	ret = c->fn(ctx, nargs, argv);
	/* a rank that failed before it met the others tells them why */
	if (ctx->job && ret && !job.started && (job.have_env || !pn_boot_cfg_from_env(&job.cfg)))
		pn_boot_refuse(&job.cfg, said);
	if (ctx->job)
		pn_boot_free(job.boot);
	ctx->job = NULL;
	if ((err = pn_out_free(ctx->out)) && !ret) { /* its cause: full, closed, no reader */
		stdout_error_said = 1;
		ret = pn_cmd_fail(ctx, 2, "write error on standard output: %s", strerror(-err));
	}
	return ret;
}

/* Hidden helpers for the shell completions: the tables are the truth. */
static int complete(int argc, char **argv)
{
	const struct pn_cmd *c;
	size_t i;

	if (argc < 2) {
		for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
			printf("%s\n", commands[i].name);
		printf("help\n");
		return 0;
	}
	c = find_cmd(argv[1]);
	if (!c)
		return 1;
	pn_opt_complete(stdout, c->opts);
	if (c->shared)
		pn_opt_complete(stdout, c->shared);
	if (c->flags & CMD_LAUNCH)
		pn_opt_complete(stdout, launch_of(c));
	pn_opt_complete(stdout, common_options);
	return 0;
}

static int is_help(const char *s)
{
	return s && (!strcmp(s, "help") || !strcmp(s, "--help") || !strcmp(s, "-h"));
}

/* penny --version | help [COMMAND] | COMMAND [...]: one line and 2 for a
 * word it does not take (shown escaped and bounded, as every message) */
static int dispatch(int argc, char **argv)
{
	const char *a = argc > 1 ? argv[1] : "", *name = is_help(a) ? argv[2] : a;
	int help = is_help(a), version = !strcmp(a, "--version") || !strcmp(a, "version");
	const struct pn_cmd *c = name ? find_cmd(name) : NULL;

	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(a, "__complete"))
		return complete(argc - 1, argv + 1);
	if ((help || version) && argc > 2 + (help && name))
		return say_fmt("", "unexpected argument '%.100s' (see 'penny --help')",
			       argv[2 + (help && name)]), 2;
	if (version || (help && (!name || is_help(name)))) {
		version ? (void)printf("penny %s\n", PENNY_VERSION) : usage(stdout);
		return 0;
	}
	if (!c && a[0] == '-' && !help)
		return say_fmt("", "unknown option '%.100s' (see 'penny --help'; a command's "
			       "options follow it)", a), 2;
	if (!c)
		return say_fmt("", "unknown command '%.100s' (see 'penny --help')", name), 2;
	if (!help)
		return run_cmd(c, argc - 1, argv + 1);
	cmd_help(c, stdout);
	return 0;
}

/* What rank 0 says of the strangers it dropped from the rendezvous. */
static void boot_notice(const char *line)
{
	fprintf(stderr, "penny: %s\n", line);
}

int main(int argc, char **argv)
{
	int ret;

	pn_file_hold_std();
	pn_boot_set_notice(boot_notice);
	ret = dispatch(argc, argv);
	return stdout_status(ret);
}
