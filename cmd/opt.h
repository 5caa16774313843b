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
	OPT_CALLBACK,	/* cb(arg) */
};

struct pn_opt {
	const char *lng;
	int shrt;
	enum pn_opt_type type;
	void *dst;
	const char *arg;	/* value name in --help, "SIZE" */
	const char *help;
	const char *choices;	/* space-separated values, for completion */
	int (*cb)(const char *arg); /* OPT_CALLBACK: 0 ok, <0 invalid value */
};

#define OPT_TABLE_END { NULL, 0, OPT_END, NULL, NULL, NULL, NULL, NULL }

/*
 * Parse argv with the given NULL-terminated list of tables.  On return
 * argv[0..*nargs) are the positional arguments.  Returns 0, or 2 after
 * printing one line "penny CMD: ..." on stderr.
 */
int pn_opt_parse(const char *cmd, const struct pn_opt *const *tables, int argc, char **argv,
		 int *nargs);
void pn_opt_help(FILE *f, const char *title, const struct pn_opt *opts);
/* Completion listing: "long\tshort\targ\tchoices" per option. */
void pn_opt_complete(FILE *f, const struct pn_opt *opts);

#endif
