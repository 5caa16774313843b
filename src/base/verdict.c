/* SPDX-License-Identifier: MIT */
/*
 * Check results (base/verdict.h): the bounded result list, the exit code
 * rule and the text/JSON, JUnit XML and Prometheus writers.
 */
#define _GNU_SOURCE
#include "base/verdict.h"
#include "base/log.h"
#include "base/out.h"
#include "base/util.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct pn_verdict_list {
	struct pn_verdict_result *r;
	int n;
	size_t cap;
	int count[PN_VERDICT_COUNT];
	int dropped;
};

struct pn_verdict_list *pn_verdict_list_new(void)
{
	struct pn_verdict_list *l = calloc(1, sizeof(*l));

	if (!l)
		pn_err(-ENOMEM, "out of memory for check results");
	return l;
}

void pn_verdict_list_free(struct pn_verdict_list *l)
{
	if (!l)
		return;
	free(l->r);
	free(l);
}

/* Copy s into dst[len], cut at a UTF-8 character boundary. */
static void copy_cut(char *dst, size_t len, const char *s)
{
	size_t n;

	if (!s)
		s = "";
	n = strnlen(s, len);
	if (n >= len) {
		n = len - 1;
		/* back off over continuation bytes to the lead byte, drop it too */
		while (n > 0 && ((unsigned char)s[n] & 0xc0) == 0x80)
			n--;
	}
	memcpy(dst, s, n);
	dst[n] = 0;
}

static void keep_val(struct pn_verdict_kept_val *k, const struct pn_verdict_val *v)
{
	memset(k, 0, sizeof(*k));
	k->kind = v->kind;
	if (v->kind == PN_VAL_NUM) {
		k->num = v->num;
		if (!isfinite(v->num))
			k->kind = PN_VAL_NONE;
	} else if (v->kind == PN_VAL_TEXT && v->text) {
		copy_cut(k->text, sizeof(k->text), v->text);
	} else {
		k->kind = PN_VAL_NONE;
	}
}

static int empty(const char *s)
{
	return !s || !*s;
}

int pn_verdict_add(struct pn_verdict_list *l, const struct pn_verdict_in *in)
{
	struct pn_verdict_result r, *nr;
	int i;

	if (empty(in->check) || empty(in->node) || empty(in->target))
		return pn_err(-EINVAL, "check result without a check, node or target name");
	if ((unsigned)in->verdict >= PN_VERDICT_COUNT)
		return pn_err(-EINVAL, "check '%s': unknown verdict %d", in->check, (int)in->verdict);
	if (in->verdict == PN_SKIP && empty(in->detail))
		return pn_err(-EINVAL, "check '%s' on '%s': a skip without a reason", in->check,
			      in->target);
	memset(&r, 0, sizeof(r));
	copy_cut(r.check, sizeof(r.check), in->check);
	copy_cut(r.node, sizeof(r.node), in->node);
	copy_cut(r.target, sizeof(r.target), in->target);
	/* the names as kept identify a result (its Prometheus series, its testcase) */
	for (i = 0; i < l->n; i++)
		if (!strcmp(l->r[i].check, r.check) && !strcmp(l->r[i].node, r.node) &&
		    !strcmp(l->r[i].target, r.target))
			return pn_err(-EEXIST, "check '%s' on '%s' '%s': a second result",
				      r.check, r.node, r.target);
	if (l->n >= PN_VERDICT_MAX) {
		l->count[in->verdict]++;
		l->dropped++;
		return pn_err(-ENOSPC, "more than %d check results", PN_VERDICT_MAX);
	}
	nr = pn_grow(l->r, &l->cap, (size_t)l->n, sizeof(*nr), 16, PN_VERDICT_MAX);
	if (!nr) {
		l->count[in->verdict]++;
		l->dropped++;
		return pn_err(-ENOMEM, "out of memory for check results");
	}
	l->r = nr;
	r.verdict = in->verdict;
	keep_val(&r.measured, &in->measured);
	keep_val(&r.expected, &in->expected);
	copy_cut(r.unit, sizeof(r.unit), in->unit);
	copy_cut(r.source, sizeof(r.source), in->source);
	copy_cut(r.detail, sizeof(r.detail), in->detail);
	r.seconds = isfinite(in->seconds) && in->seconds > 0 ? in->seconds : 0;
	l->r[l->n++] = r;
	l->count[in->verdict]++;
	return 0;
}

int pn_verdict_n(const struct pn_verdict_list *l)
{
	return l->n;
}

const struct pn_verdict_result *pn_verdict_at(const struct pn_verdict_list *l, int i)
{
	return i >= 0 && i < l->n ? &l->r[i] : NULL;
}

int pn_verdict_count(const struct pn_verdict_list *l, enum pn_verdict v)
{
	return (unsigned)v < PN_VERDICT_COUNT ? l->count[v] : 0;
}

int pn_verdict_dropped(const struct pn_verdict_list *l)
{
	return l->dropped;
}

int pn_verdict_set(struct pn_verdict_list *l, int i, enum pn_verdict v, const char *source,
		   const char *detail)
{
	struct pn_verdict_result *r;

	if (i < 0 || i >= l->n || (unsigned)v >= PN_VERDICT_COUNT)
		return pn_err(-EINVAL, "no check result %d to change", i);
	r = &l->r[i];
	if (v == PN_SKIP && empty(detail) && !*r->detail)
		return pn_err(-EINVAL, "check '%s' on '%s': a skip without a reason", r->check,
			      r->target);
	l->count[r->verdict]--;
	l->count[v]++;
	r->verdict = v;
	if (source)
		copy_cut(r->source, sizeof(r->source), source);
	if (detail)
		copy_cut(r->detail, sizeof(r->detail), detail);
	return 0;
}

void pn_verdict_add_dropped(struct pn_verdict_list *l, enum pn_verdict v, int n)
{
	if ((unsigned)v >= PN_VERDICT_COUNT || n <= 0)
		return;
	l->count[v] += n;
	l->dropped += n;
}

const char *pn_verdict_name(enum pn_verdict v)
{
	static const char *const names[] = { [PN_PASS] = "PASS", [PN_FAIL] = "FAIL",
					     [PN_SKIP] = "SKIP" };

	return (unsigned)v < PN_VERDICT_COUNT ? names[v] : "?";
}

int pn_verdict_exit_code(const struct pn_verdict_list *l)
{
	if (l->count[PN_FAIL])
		return 1;
	if (!l->count[PN_PASS])
		return 2;
	return 0;
}

/* ---- text and JSON ---- */

/* A value as a table cell: "355.2 Gb/s", "x16 Gen5", "-". */
static void val_cell(char *buf, size_t len, const struct pn_verdict_kept_val *v, const char *unit)
{
	if (v->kind == PN_VAL_NUM)
		snprintf(buf, len, "%.6g%s%s", v->num, *unit ? " " : "", unit);
	else if (v->kind == PN_VAL_TEXT)
		snprintf(buf, len, "%s", v->text);
	else
		snprintf(buf, len, "-");
}

enum { C_CHECK, C_NODE, C_TARGET, C_MEAS, C_EXP, C_COLS, COL_MAX = 40 };

static size_t text_width(const char *s)
{
	return pn_text_escape(NULL, 0, s, 0);
}

/* A value as two typed members: key, a number or null, and key_text, the
 * text (a PCIe link "Gen5 x16", a path class) or null. */
static void json_val(struct pn_out *o, const char *key, const struct pn_verdict_kept_val *v)
{
	char tkey[32];

	snprintf(tkey, sizeof(tkey), "%s_text", key);
	if (v->kind == PN_VAL_NUM)
		pn_out_float(o, PN_JSON, key, NULL, v->num);
	else
		pn_out_null(o, PN_JSON, key, NULL);
	pn_out_str(o, PN_JSON, tkey, NULL, v->kind == PN_VAL_TEXT ? v->text : NULL);
}

static void json_opt_str(struct pn_out *o, const char *key, const char *s)
{
	pn_out_str(o, PN_JSON, key, NULL, *s ? s : NULL);
}

void pn_verdict_write_out(struct pn_out *o, const struct pn_verdict_list *l)
{
	static const char *const head[C_COLS] = { "CHECK", "NODE", "TARGET", "MEASURED",
						  "EXPECTED" };
	char cell[C_COLS][PN_VERDICT_VAL + PN_VERDICT_UNIT + 32], fmt[C_COLS][16];
	size_t w[C_COLS];
	int i, c;

	for (c = 0; c < C_COLS; c++)
		w[c] = strlen(head[c]);
	for (i = 0; i < l->n; i++) {
		const struct pn_verdict_result *r = &l->r[i];
		size_t x[C_COLS];

		val_cell(cell[C_MEAS], sizeof(cell[C_MEAS]), &r->measured, r->unit);
		val_cell(cell[C_EXP], sizeof(cell[C_EXP]), &r->expected, r->unit);
		x[C_CHECK] = text_width(r->check);
		x[C_NODE] = text_width(r->node);
		x[C_TARGET] = text_width(r->target);
		x[C_MEAS] = text_width(cell[C_MEAS]);
		x[C_EXP] = text_width(cell[C_EXP]);
		for (c = 0; c < C_COLS; c++)
			if (x[c] > w[c])
				w[c] = x[c] < COL_MAX ? x[c] : COL_MAX;
	}
	for (c = 0; c < C_COLS; c++)
		snprintf(fmt[c], sizeof(fmt[c]), "%%-%zus  ", w[c]);

	pn_out_text(o, "%-*s  %-*s  %-*s  %-*s  %-*s  VERDICT\n", (int)w[0], head[0], (int)w[1],
		    head[1], (int)w[2], head[2], (int)w[3], head[3], (int)w[4], head[4]);
	pn_out_open_array(o, "results");
	for (i = 0; i < l->n; i++) {
		const struct pn_verdict_result *r = &l->r[i];

		val_cell(cell[C_MEAS], sizeof(cell[C_MEAS]), &r->measured, r->unit);
		val_cell(cell[C_EXP], sizeof(cell[C_EXP]), &r->expected, r->unit);
		pn_out_open_object(o, NULL);
		pn_out_str(o, PN_ANY, "check", fmt[C_CHECK], r->check);
		pn_out_str(o, PN_ANY, "node", fmt[C_NODE], r->node);
		pn_out_str(o, PN_ANY, "target", fmt[C_TARGET], r->target);
		pn_out_str(o, PN_TEXT, NULL, fmt[C_MEAS], cell[C_MEAS]);
		pn_out_str(o, PN_TEXT, NULL, fmt[C_EXP], cell[C_EXP]);
		json_val(o, "measured", &r->measured);
		json_opt_str(o, "unit", r->unit);
		json_val(o, "expected", &r->expected);
		json_opt_str(o, "source", r->source);
		pn_out_str(o, PN_ANY, "verdict", "%s", pn_verdict_name(r->verdict));
		json_opt_str(o, "detail", r->detail);
		if (r->seconds > 0)
			pn_out_float(o, PN_JSON, "seconds", NULL, r->seconds);
		else
			pn_out_null(o, PN_JSON, "seconds", NULL);
		if (r->verdict != PN_PASS && *r->detail)
			pn_out_str(o, PN_TEXT, NULL, "  %s", r->detail);
		if (r->verdict == PN_FAIL && *r->source)
			pn_out_str(o, PN_TEXT, NULL, " (expected from %s)", r->source);
		pn_out_nl(o);
		pn_out_close_object(o);
	}
	pn_out_close_array(o);

	pn_out_text(o, "%d passed, %d failed, %d skipped", l->count[PN_PASS], l->count[PN_FAIL],
		    l->count[PN_SKIP]);
	if (l->dropped)
		pn_out_text(o, " (%d results not kept: more than %d)", l->dropped,
			    PN_VERDICT_MAX);
	pn_out_nl(o);
	pn_out_open_object(o, "summary");
	pn_out_int(o, PN_JSON, "pass", NULL, l->count[PN_PASS]);
	pn_out_int(o, PN_JSON, "fail", NULL, l->count[PN_FAIL]);
	pn_out_int(o, PN_JSON, "skip", NULL, l->count[PN_SKIP]);
	pn_out_int(o, PN_JSON, "dropped", NULL, l->dropped);
	pn_out_int(o, PN_JSON, "exit", NULL, pn_verdict_exit_code(l));
	pn_out_close_object(o);
}

/* ---- JUnit XML ---- */

static void xml_attr(FILE *f, const char *name, const char *v)
{
	fprintf(f, " %s=\"", name);
	pn_xml_put(f, v);
	fputc('"', f);
}

static void xml_val(FILE *f, const char *what, const struct pn_verdict_kept_val *v,
		    const char *unit)
{
	char cell[PN_VERDICT_VAL + PN_VERDICT_UNIT + 32];

	val_cell(cell, sizeof(cell), v, unit);
	fprintf(f, "%s: ", what);
	pn_xml_put(f, cell);
	fputc('\n', f);
}

/* The counts of one <testsuites> or <testsuite> element. */
static void junit_counts(FILE *f, const struct pn_verdict_list *l, int errors, double total)
{
	int tests = l->count[PN_PASS] + l->count[PN_FAIL] + l->count[PN_SKIP] + errors;

	fprintf(f, " tests=\"%d\" failures=\"%d\" errors=\"%d\" skipped=\"%d\" time=\"%.3f\">\n",
		tests, l->count[PN_FAIL], errors, l->count[PN_SKIP], total);
}

/* 0 when every write of a writer reached f, else its errno (-EIO when the
 * stream kept none; the writers clear errno first) */
static int flushed(FILE *f)
{
	int e;

	if (!fflush(f) && !ferror(f))
		return 0;
	e = errno;
	return -(e ? e : EIO);
}

int pn_verdict_write_junit(FILE *f, const char *suite, const char *hostname,
			   const struct pn_verdict_list *list, const char *error)
{
	static const struct pn_verdict_list none;
	const struct pn_verdict_list *l = list ? list : &none;
	char num[32], name[2 * PN_VERDICT_NAME + 2];
	double total = 0;
	int i;

	errno = 0;

	/* a run that judged nothing is no success, whatever read the file */
	if (!error && pn_verdict_exit_code(l) == 2)
		error = l->count[PN_SKIP] ? "nothing was judged: every check was skipped"
					  : "nothing was judged: no check result";
	if (!suite)
		suite = "penny";
	for (i = 0; i < l->n; i++)
		total += l->r[i].seconds;
	fputs("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites", f);
	xml_attr(f, "name", suite);
	junit_counts(f, l, !!error, total);
	fputs("  <testsuite", f);
	xml_attr(f, "name", suite);
	xml_attr(f, "hostname", hostname ? hostname : "");
	junit_counts(f, l, !!error, total);
	if (error) {
		snprintf(name, sizeof(name), "%.*s:run", PN_VERDICT_NAME - 1,
			 hostname ? hostname : "");
		fputs("    <testcase", f);
		xml_attr(f, "classname", suite);
		xml_attr(f, "name", name);
		fputs(" time=\"0.000\">\n      <error", f);
		xml_attr(f, "message", error);
		fputs(" type=\"ERROR\"/>\n    </testcase>\n", f);
	}
	for (i = 0; i < l->n; i++) {
		const struct pn_verdict_result *r = &l->r[i];

		snprintf(name, sizeof(name), "%s:%s", r->node, r->target);
		snprintf(num, sizeof(num), "%.3f", r->seconds);
		fputs("    <testcase", f);
		xml_attr(f, "classname", r->check);
		xml_attr(f, "name", name);
		xml_attr(f, "time", num);
		if (r->verdict == PN_PASS) {
			fputs("/>\n", f);
			continue;
		}
		fputs(">\n", f);
		if (r->verdict == PN_SKIP) {
			fputs("      <skipped", f);
			xml_attr(f, "message", r->detail);
			fputs("/>\n", f);
		} else {
			fputs("      <failure", f);
			xml_attr(f, "message", *r->detail ? r->detail : "failed");
			fputs(" type=\"FAIL\">", f);
			xml_val(f, "measured", &r->measured, r->unit);
			xml_val(f, "expected", &r->expected, r->unit);
			if (*r->source) {
				fputs("source: ", f);
				pn_xml_put(f, r->source);
				fputc('\n', f);
			}
			fputs("</failure>\n", f);
		}
		fputs("    </testcase>\n", f);
	}
	if (l->dropped)
		fprintf(f, "    <system-err>%d results not kept: more than %d</system-err>\n",
			l->dropped, PN_VERDICT_MAX);
	fputs("  </testsuite>\n</testsuites>\n", f);
	return flushed(f);
}

/* ---- Prometheus ---- */

static void prom_head(FILE *f, const char *name, const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s gauge\n", name, help, name);
}

static void prom_value(FILE *f, double x)
{
	if (x == floor(x) && fabs(x) < 1e15)
		fprintf(f, "} %.0f\n", x);
	else
		fprintf(f, "} %.10g\n", x);
}

static void prom_series(FILE *f, const char *name, const struct pn_verdict_result *r)
{
	fprintf(f, "%s{", name);
	pn_prom_label(f, "check", r->check, 1);
	pn_prom_label(f, "node", r->node, 0);
	pn_prom_label(f, "target", r->target, 0);
}

/* A result's unit as Prometheus' base unit: the suffix of the metric name
 * and the factor to it ("" and 1: a plain number). */
static const struct prom_unit {
	const char *unit, *suffix, *help;
	double factor;
} prom_units[] = {
	{ "", "", "", 1 },
	{ "Gb/s", "_bytes_per_second", ", in bytes per second", 1e9 / 8 },
	{ "Mb/s", "_bytes_per_second", ", in bytes per second", 1e6 / 8 },
	{ "GB/s", "_bytes_per_second", ", in bytes per second", 1e9 },
	{ "MB/s", "_bytes_per_second", ", in bytes per second", 1e6 },
	{ "B", "_bytes", ", in bytes", 1 },
	{ "s", "_seconds", ", in seconds", 1 },
	{ "ms", "_seconds", ", in seconds", 1e-3 },
	{ "us", "_seconds", ", in seconds", 1e-6 },
	{ "%", "_ratio", ", as a ratio", 1e-2 },
};
#define N_PROM_UNITS (sizeof(prom_units) / sizeof(prom_units[0]))

static const struct prom_unit *prom_unit(const char *unit)
{
	size_t i;

	for (i = 0; i < N_PROM_UNITS; i++)
		if (!strcmp(prom_units[i].unit, unit))
			return &prom_units[i];
	return NULL;
}

/* penny_check_measured or _expected, one family a base unit (the unit in
 * the name, never in a label): the numbers of the results whose unit has
 * that suffix; nothing when none has. */
static void prom_values(FILE *f, const struct pn_verdict_list *l, int expected, const char *suffix)
{
	const char *what = expected ? "expected" : "measured";
	char name[80];
	int i, head = 0;

	snprintf(name, sizeof(name), "penny_check_%s%s", what, suffix);
	for (i = 0; i < l->n; i++) {
		const struct pn_verdict_result *r = &l->r[i];
		const struct pn_verdict_kept_val *v = expected ? &r->expected : &r->measured;
		const struct prom_unit *u = prom_unit(r->unit);

		if (v->kind != PN_VAL_NUM || !u || strcmp(u->suffix, suffix))
			continue;
		if (!head++)
			fprintf(f, "# HELP %s What the check %s%s.\n# TYPE %s gauge\n", name, what,
				u->help, name);
		prom_series(f, name, r);
		prom_value(f, v->num * u->factor);
	}
}

int pn_verdict_write_prom(FILE *f, const struct pn_verdict_list *list, int exit_code)
{
	static const struct pn_verdict_list none;
	const struct pn_verdict_list *l = list ? list : &none;
	struct timespec now;
	size_t u, j;
	int i, v;

	errno = 0;

	if (exit_code < 0)
		exit_code = pn_verdict_exit_code(l);

	prom_head(f, "penny_check_result", "1 when the check passed, 0 when it failed.");
	for (i = 0; i < l->n; i++)
		if (l->r[i].verdict != PN_SKIP) {
			prom_series(f, "penny_check_result", &l->r[i]);
			prom_value(f, l->r[i].verdict == PN_PASS);
		}
	prom_head(f, "penny_check_skipped", "1 when the check could not run.");
	for (i = 0; i < l->n; i++)
		if (l->r[i].verdict == PN_SKIP) {
			prom_series(f, "penny_check_skipped", &l->r[i]);
			prom_value(f, 1);
		}
	/* each base unit once (several units share one) */
	for (u = 0; u < N_PROM_UNITS; u++) {
		for (j = 0; j < u && strcmp(prom_units[j].suffix, prom_units[u].suffix); j++)
			;
		if (j < u)
			continue;
		prom_values(f, l, 0, prom_units[u].suffix);
		prom_values(f, l, 1, prom_units[u].suffix);
	}
	for (i = 0; i < l->n; i++) {
		const struct pn_verdict_result *r = &l->r[i];
		char c[3 * PN_VERDICT_NAME], t[3 * PN_VERDICT_NAME], un[3 * PN_VERDICT_UNIT];

		if (prom_unit(r->unit) ||
		    (r->measured.kind != PN_VAL_NUM && r->expected.kind != PN_VAL_NUM))
			continue;
		pn_prom_escape(c, sizeof(c), r->check);
		pn_prom_escape(t, sizeof(t), r->target);
		pn_prom_escape(un, sizeof(un), r->unit);
		fprintf(f, "# penny: %s %s: unit \"%s\" has no Prometheus base unit, not exported\n",
			c, t, un);
	}
	prom_head(f, "penny_check_results", "Check results per verdict.");
	for (v = 0; v < PN_VERDICT_COUNT; v++) {
		fputs("penny_check_results{", f);
		pn_prom_label(f, "verdict", pn_verdict_name((enum pn_verdict)v), 1);
		prom_value(f, l->count[v]);
	}
	prom_head(f, "penny_check_dropped_results", "Results past the limit, not kept.");
	fprintf(f, "penny_check_dropped_results %d\n", l->dropped);
	prom_head(f, "penny_check_exit_code",
		  "0 all passed, 1 a check failed, 2 could not run or judged nothing.");
	fprintf(f, "penny_check_exit_code %d\n", exit_code);
	clock_gettime(CLOCK_REALTIME, &now);
	prom_head(f, "penny_check_last_run_timestamp_seconds",
		  "When this run of penny check ended, in seconds since the epoch.");
	fprintf(f, "penny_check_last_run_timestamp_seconds %.3f\n",
		(double)now.tv_sec + now.tv_nsec / 1e9);
	return flushed(f);
}
