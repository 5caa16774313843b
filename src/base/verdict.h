/* SPDX-License-Identifier: MIT */
/*
 * Check results and their writers: the model behind `penny check` (what
 * was checked, on which node and target, what was measured against what
 * expectation and where it came from, PASS / FAIL / SKIP with a reason),
 * the exit code rule, and the four presentations of one result list: the
 * text table and JSON (through base/out.h), JUnit XML for CI systems and a
 * Prometheus textfile for node_exporter.
 *
 * A list is bounded: at most PN_VERDICT_MAX results are kept, every string
 * is copied and cut to its field's size (at a UTF-8 character boundary).
 * Results past the cap are counted (their verdicts still decide the exit
 * code) but not kept; every writer says how many were dropped.
 */
#ifndef PENNY_VERDICT_H
#define PENNY_VERDICT_H

#include <stdio.h>

struct pn_out;

#define PN_VERDICT_MAX 4096

enum pn_verdict { PN_PASS, PN_FAIL, PN_SKIP, PN_VERDICT_COUNT };

/* A measured or expected value: nothing, a number (with the result's unit) or text. */
enum pn_verdict_kind { PN_VAL_NONE, PN_VAL_NUM, PN_VAL_TEXT };

struct pn_verdict_val {
	enum pn_verdict_kind kind;
	double num;		/* PN_VAL_NUM; a non-finite number is stored as none */
	const char *text;	/* PN_VAL_TEXT */
};

#define PN_VNUM(x) ((struct pn_verdict_val){ .kind = PN_VAL_NUM, .num = (x) })
#define PN_VTEXT(s) ((struct pn_verdict_val){ .kind = PN_VAL_TEXT, .text = (s) })

/*
 * One result as the check hands it in (designated initializers; what is
 * left out is none / empty).  check, node and target are required; a SKIP
 * requires detail (its reason); a FAIL should say why in detail too.
 */
struct pn_verdict_in {
	const char *check;	/* "nic-bw" */
	const char *node;	/* host name */
	const char *target;	/* "mlx5_0/1", "GPU0", "GPU0-GPU1" */
	enum pn_verdict verdict;
	struct pn_verdict_val measured, expected;
	const char *unit;	/* of both numbers: "Gb/s", "GB/s", "" */
	const char *source;	/* "topology: port rate 400 Gb/s x 90%", "config", "baseline" */
	const char *detail;	/* one line: the reason of a SKIP or FAIL, or a note */
	double seconds;		/* how long it took; 0 unknown */
};

/* Field sizes of a kept result (with the NUL). */
enum {
	PN_VERDICT_NAME = 64,	/* check, node, target */
	PN_VERDICT_UNIT = 16,
	PN_VERDICT_VAL = 64,	/* a text value */
	PN_VERDICT_SOURCE = 128,
	PN_VERDICT_DETAIL = 256,
};

struct pn_verdict_kept_val {
	enum pn_verdict_kind kind;
	double num;
	char text[PN_VERDICT_VAL];
};

/* A kept result: bounded copies of what was handed in. */
struct pn_verdict_result {
	char check[PN_VERDICT_NAME], node[PN_VERDICT_NAME], target[PN_VERDICT_NAME];
	enum pn_verdict verdict;
	struct pn_verdict_kept_val measured, expected;
	char unit[PN_VERDICT_UNIT];
	char source[PN_VERDICT_SOURCE];
	char detail[PN_VERDICT_DETAIL];
	double seconds;
};

struct pn_verdict_list;

/* NULL on allocation failure (pn_err recorded). */
struct pn_verdict_list *pn_verdict_list_new(void);
void pn_verdict_list_free(struct pn_verdict_list *l);

/*
 * Append a result.  Returns 0; -EINVAL (nothing added, pn_err says why) for
 * a missing check, node or target, an unknown verdict or a SKIP without a
 * reason; -EEXIST for a second result of the same check, node and target;
 * -ENOSPC when PN_VERDICT_MAX results are kept already (the result is
 * counted, not kept); -ENOMEM (counted, not kept).
 */
int pn_verdict_add(struct pn_verdict_list *l, const struct pn_verdict_in *in);

/* Kept results, in the order added. */
int pn_verdict_n(const struct pn_verdict_list *l);
const struct pn_verdict_result *pn_verdict_at(const struct pn_verdict_list *l, int i);
/* Results with verdict v, kept or dropped; pn_verdict_dropped: not kept. */
int pn_verdict_count(const struct pn_verdict_list *l, enum pn_verdict v);
int pn_verdict_dropped(const struct pn_verdict_list *l);

/*
 * Change kept result i (a rule over several results, like penny check's job
 * median): its verdict, and source and detail when not NULL; the counts
 * follow.  0, or -EINVAL for a bad index or verdict.
 */
int pn_verdict_set(struct pn_verdict_list *l, int i, enum pn_verdict v, const char *source,
		   const char *detail);
/* Count n results of verdict v that were not kept elsewhere (gathered lists). */
void pn_verdict_add_dropped(struct pn_verdict_list *l, enum pn_verdict v, int n);

/* "PASS", "FAIL", "SKIP" ("?" out of range). */
const char *pn_verdict_name(enum pn_verdict v);

/*
 * The exit code of a run (penny check's):
 *   1  any result FAILed (whatever else happened),
 *   2  nothing could run: no result at all, or every result is a SKIP,
 *   0  otherwise: at least one PASS and no FAIL (SKIPs beside passes are fine).
 * A command that could not even start its checks exits 2 on its own.
 */
int pn_verdict_exit_code(const struct pn_verdict_list *l);

/*
 * The results through the one output path.  Text: a table with columns
 * CHECK NODE TARGET MEASURED EXPECTED VERDICT, a FAIL or SKIP row followed
 * by its reason (and for a FAIL where its expectation came from), then a
 * summary line.  JSON: members "results" (an array of objects with keys
 * check, node, target, measured, measured_text, unit, expected,
 * expected_text, source, verdict, detail, seconds; measured/expected a
 * number (in unit) or null, measured_text/expected_text the value when it
 * is text, else null; unit, source,
 * detail and seconds null when empty) and "summary" (pass, fail, skip,
 * dropped, exit) written into the object the caller has open.
 */
void pn_verdict_write_out(struct pn_out *o, const struct pn_verdict_list *l);

/*
 * JUnit XML (the Jenkins / GitLab schema): <testsuites> holding one
 * <testsuite name=suite hostname=host tests failures errors skipped time>,
 * one <testcase classname=check name="node:target" time> per result, a FAIL
 * with <failure message=detail type="FAIL">, a SKIP with <skipped
 * message=reason/>.  A run that could not run (error: why, one line) or
 * judged nothing (exit code 2: no result, or every one a SKIP) has a first
 * <testcase classname=suite name="host:run"> with <error message=why
 * type="ERROR"/>, counted in errors and tests, so that a gate reading only
 * the JUnit file never passes it.  l may be NULL (no result).  Every
 * attribute and text goes through pn_xml_escape (base/out.h).  Returns 0,
 * or -EIO on a write error of f.
 */
int pn_verdict_write_junit(FILE *f, const char *suite, const char *hostname,
			   const struct pn_verdict_list *l, const char *error);

/*
 * Prometheus text exposition (node_exporter's textfile collector), every
 * family with HELP and TYPE before its samples, labels escaped:
 *   penny_check_result{check,node,target}          1 PASS, 0 FAIL (no SKIP)
 *   penny_check_skipped{check,node,target}         1 for a SKIP
 *   penny_check_measured{check,node,target}        numeric measurements and
 *   penny_check_expected{check,node,target}        expectations, one family a
 *                                                  base unit, in its name:
 *       _bytes_per_second (Gb/s, Mb/s, GB/s, MB/s), _bytes (B), _seconds (s,
 *       ms, us), _ratio (%), none (""); another unit: a comment, no sample
 *   penny_check_results{verdict}                   results per verdict
 *   penny_check_dropped_results                    results not kept
 *   penny_check_exit_code                          exit_code: the run's own
 *                                                  (< 0: pn_verdict_exit_code)
 *   penny_check_last_run_timestamp_seconds         now (the run's end)
 * l may be NULL (a run that could not run).  Returns 0, or -EIO on a write
 * error of f.
 */
int pn_verdict_write_prom(FILE *f, const struct pn_verdict_list *l, int exit_code);

#endif
