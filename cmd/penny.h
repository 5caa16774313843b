/* SPDX-License-Identifier: MIT */
/* Shared by the subcommands in cmd/: the command table entry and context. */
#ifndef PENNY_CMD_H
#define PENNY_CMD_H

#include "opt.h"
#include "engine/boot.h"
#include "base/out.h"
#include "harness/sweep.h"

#define PENNY_VERSION "0.1.0"

/* Setup flags of a subcommand (cmd/penny.c commands[]). */
#define CMD_LAUNCH (1u << 1)	/* multi-rank: launch options, self-launch with --np */
#define CMD_JSON_LINES (1u << 2) /* --json: one object a line (top), not one document */
#define CMD_OWN_TRANSPORT (1u << 3) /* its own --transport (bw: tcp, verbs), not the launch one */

/* Common and launch option values (cmd/penny.c). */
struct pn_cli {
	int json;
	const char *debug;
	const char *sysroot;
	int help;
	/* launch */
	int np;
	int rank;
	int nranks;
	const char *root;
	double timeout;
	const char *transport;
	/* the environment's knobs, read once by run_cmd and handed down in the
	 * config structs of the library (it reads no environment of its own) */
	const char *node_id;	/* PENNY_NODE_ID: NULL unset */
	const char *tune_file;	/* PENNY_TUNE_FILE: NULL unset */
	const char *ib_hca;	/* PENNY_IB_HCA: NULL or empty, the ACTIVE ports */
	int ib_disable;		/* PENNY_IB_DISABLE: a non-zero number */
	int mem_check;		/* 0: PENNY_MEM_CHECK=0 */
	struct pn_xnode_env xnode; /* PENNY_XNODE_*, checked */
	const char *plugin_path; /* PENNY_PLUGIN_PATH: NULL unset */
	const char *nvml_lib;	/* PENNY_NVML_LIB: NULL unset */
};
extern struct pn_cli pn_cli;

/*
 * A multi-rank command's place in its job (CMD_LAUNCH; ctx->job), one path
 * for every such command: run_cmd fills cfg from the self-launch (--np) or
 * from --rank, --nranks, --root and --timeout; pn_cmd_job_cfg() adds a
 * launcher's environment; pn_cmd_job_start() meets the other ranks.
 * run_cmd frees the boot after the command returned.
 */
struct pn_cmd_job {
	struct pn_boot_cfg cfg;
	struct pn_boot *boot;	/* NULL until started */
	int rank, nranks;	/* cfg's, then the rendezvous' */
	int have_env;		/* pn_cmd_job_cfg() ran */
	int started;		/* pn_cmd_job_start() ran (whatever it returned) */
};

struct pn_ctx {
	const char *name;	/* subcommand */
	struct pn_out *out;	/* stdout, text or JSON */
	int rank;		/* after self-launch: this process's rank (-1 unknown) */
	const struct pn_boot_cfg *launch; /* self-launch: rank, root, cookie; else NULL */
	struct pn_cmd_job *job;	/* CMD_LAUNCH commands; else NULL */
};

typedef int (*pn_cmd_fn)(struct pn_ctx *ctx, int argc, char **argv);

struct pn_cmd {
	const char *name;
	pn_cmd_fn fn;
	const struct pn_opt *opts;
	const struct pn_opt *shared;	/* a table several commands share; NULL: none */
	unsigned flags;
	const char *args;	/* positional arguments in the usage line */
	const char *summary;
	/* --np N: checks before any rank is forked (planned memory); returns
	 * an exit code, 0 to launch */
	int (*prelaunch)(struct pn_ctx *ctx, int np);
};

/* Print "penny CMD: <engine message>" for a negative engine return code. */
void pn_cmd_error(const struct pn_ctx *ctx, int code);
/* Print "penny CMD: <formatted>" on stderr; returns code. */
/* Print "penny CMD: <formatted>" on stderr, like pn_cmd_fail, for a notice
 * that is no reason of an exit (pn_cmd_said keeps the last failure). */
void pn_cmd_say(const struct pn_ctx *ctx, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
int pn_cmd_fail(const struct pn_ctx *ctx, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/*
 * Output files (paths[0, nout)) that share a file with another output or
 * with an input (paths[nout, n)) would lose one of them: 2 after one line
 * naming both options (names[]), else 0.  NULL paths are not given.
 */
int pn_cmd_refuse_shared(const struct pn_ctx *ctx, const char *const *names,
			 const char *const *paths, size_t nout, size_t n);
/* The last message pn_cmd_fail or pn_cmd_error said (as formatted, before
 * escaping), "" if none: what a CI output names as the reason of an exit. */
const char *pn_cmd_said(void);

/* ctx->job: the launcher's environment into cfg (once); 0, or 2 after one line. */
int pn_cmd_job_cfg(struct pn_ctx *ctx);
/* ctx->job: pn_cmd_job_cfg(), then the rendezvous with every wait bounded
 * by timeout (0: --timeout); 0, 2 after one line (the environment), or a
 * negative errno (message in pn_errmsg) from the rendezvous. */
int pn_cmd_job_start(struct pn_ctx *ctx, double timeout);

/* Subcommands. */
int cmd_allreduce_test(struct pn_ctx *ctx, int argc, char **argv);
int allreduce_test_prelaunch(struct pn_ctx *ctx, int np);
extern const struct pn_opt allreduce_test_options[];
/* allreduce-test's and coll-test's: nccl-tests' sweep options */
extern const struct pn_opt sweep_options[];
int cmd_coll_test(struct pn_ctx *ctx, int argc, char **argv);
int coll_test_prelaunch(struct pn_ctx *ctx, int np);
extern const struct pn_opt coll_test_options[];
/* Both sweeps, after their own options (allreduce-test.c): collective kind,
 * the host algorithms of --algo for it; the command's exit status. */
int sweep_main(struct pn_ctx *ctx, enum pn_coll_kind kind);
int cmd_topo(struct pn_ctx *ctx, int argc, char **argv);
extern const struct pn_opt topo_options[];
int cmd_top(struct pn_ctx *ctx, int argc, char **argv);
extern const struct pn_opt top_options[];
int cmd_ring_plan(struct pn_ctx *ctx, int argc, char **argv);
extern const struct pn_opt ring_plan_options[];
int cmd_bw(struct pn_ctx *ctx, int argc, char **argv);
int cmd_check(struct pn_ctx *ctx, int argc, char **argv);
extern const struct pn_opt check_options[];
int bw_prelaunch(struct pn_ctx *ctx, int np);
extern const struct pn_opt bw_options[];

#endif
