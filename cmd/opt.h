/* SPDX-License-Identifier: MIT */
/*
 * Option tables: one table per subcommand drives parsing (getopt_long),
 * --help, shell completion (penny __complete) and the man-page check test.
 */
#ifndef PENNY_OPT_H
#define PENNY_OPT_H

#include <stdint.h>
#include <stdio.h>

enum pn_opt_type {
	OPT_END = 0,
	OPT_BOOL,	/* int: set to 1 */
	OPT_INT,	/* int */
	OPT_U64,	/* uint64_t */
	OPT_SIZE,	/* uint64_t, "8M" style */
	OPT_DOUBLE,	/* double */
	OPT_SECONDS,	/* double, "500ms" / "2s" / "1m" */
	OPT_STRING,	/* const char * */
	OPT_OPTSTRING,	/* const char *, optional value ("" when absent) */
	OPT_APPEND,	/* const char *: repeated values joined with ',' */
	/*
	 * Another tool's option (perftest's, nccl-tests') that penny cannot
	 * honour: parsing stops with "penny CMD: -X: <help>", exit 2.  help
	 * names the penny equivalent; dst is unused.
	 */
	OPT_REFUSE,	/* takes no value */
	OPT_REFUSE_ARG,	/* takes a value */
};

/* pn_opt_ext.flags */
#define OPT_F_RANGE (1u << 0)	 /* numeric value (OPT_OPTSTRING: when given) in [min, max] */
#define OPT_F_LIST (1u << 1)	 /* comma list: no empty element */
#define OPT_F_EMPTY_OK (1u << 2) /* a string value may be "" */
#define OPT_F_CHOICE (1u << 3)	 /* a string value must be one of the choices */

/*
 * What the table says about a value beyond its type: its range, list-ness.
 * Every numeric option has a range (a test checks it); a value outside it
 * is refused at parsing, "penny CMD: --gpus must be 1..16, got 0", exit 2.
 * A default the user cannot type (-1 for "not given") stays possible: it is
 * the variable's initial value, never checked.  String values may not be
 * empty unless OPT_F_EMPTY_OK.
 */
struct pn_opt_ext {
	double min, max;	/* OPT_F_RANGE, inclusive; U64/SIZE compare as integers */
	unsigned flags;
};

/* The largest OPT_U64 bound (UINT64_MAX, printed as such). */
#define OPT_U64_MAX 18446744073709551615.0

#define OPT_RANGE(lo, hi) (&(const struct pn_opt_ext){ .min = (lo), .max = (hi), .flags = OPT_F_RANGE })
#define OPT_LIST (&(const struct pn_opt_ext){ .flags = OPT_F_LIST })
#define OPT_ONE_OF (&(const struct pn_opt_ext){ .flags = OPT_F_CHOICE })

struct pn_opt {
	const char *lng;
	int shrt;
	enum pn_opt_type type;
	void *dst;
	const char *arg;	/* value name in --help, "SIZE" */
	const char *help;
	const char *choices;	/* space-separated values, for completion */
	const struct pn_opt_ext *ext; /* range, list, callback; NULL: none */
};

#define OPT_TABLE_END { NULL, 0, OPT_END, NULL, NULL, NULL, NULL, NULL }

/*
 * Parse argv with the given NULL-terminated list of tables.  On return
 * argv[0..*nargs) are the positional arguments.  Returns 0, or 2 after
 * printing one line "penny CMD: ..." on stderr.
 */
int pn_opt_parse(const char *cmd, const struct pn_opt *const *tables, int argc, char **argv,
		 int *nargs);
/* The last error pn_opt_parse said (without "penny CMD: "), or "". */
const char *pn_opt_error(void);
/*
 * Set what the options of tables among argv say, passing by silently what
 * is unknown or invalid (the rank, size and rendezvous of a command line
 * that failed to parse, so that the rank can tell its job why).
 */
void pn_opt_scan(const struct pn_opt *const *tables, int argc, char **argv);
void pn_opt_help(FILE *f, const char *title, const struct pn_opt *opts);
/* The range of a ranged option as help and the man pages write it ("1..16"); "" if none. */
const char *pn_opt_range_str(const struct pn_opt *o, char *buf, size_t len);
/*
 * Completion listing: "long\tshort\targ\trange\tchoices" per option ("-":
 * none; range "unchecked": a number without a range, a bug t0002 finds).
 */
void pn_opt_complete(FILE *f, const struct pn_opt *opts);

#endif
