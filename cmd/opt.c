/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
#include "opt.h"

#include "base/out.h"
#include "base/units.h"
#include "base/util.h"

#include <errno.h>
#include <stdarg.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_OPTS 128

/* The last error said, for a rank that tells its job why it stops. */
static char last_error[512];
static int quiet;

static void opt_err(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void opt_err(const char *cmd, const char *fmt, ...)
{
	char esc[sizeof(last_error)];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(last_error, sizeof(last_error), fmt, ap);
	va_end(ap);
	pn_text_escape(esc, sizeof(esc), last_error, 0); /* a value may hold any byte */
	if (!quiet)
		fprintf(stderr, "penny %s: %s\n", cmd, esc);
}

const char *pn_opt_error(void)
{
	return last_error;
}

static const char *type_name(enum pn_opt_type t)
{
	return t == OPT_SIZE ? "size" : t == OPT_SECONDS ? "duration"
	       : t == OPT_INT || t == OPT_U64 || t == OPT_DOUBLE ? "number" : "value";
}

static const char *size_str(uint64_t v, char *buf, size_t len)
{
	static const char sfx[] = "KMGT";
	int k;

	for (k = 4; k >= 1; k--)
		if (v && !(v % (1ull << (10 * k)))) {
			snprintf(buf, len, "%llu%c", (unsigned long long)(v >> (10 * k)), sfx[k - 1]);
			return buf;
		}
	snprintf(buf, len, "%llu", (unsigned long long)v);
	return buf;
}

/* Seconds as the user would write them: 50ms, 10s, 5m, 24h. */
static const char *secs_str(double v, char *buf, size_t len)
{
	if (v >= 3600 && !fmod(v, 3600))
		snprintf(buf, len, "%gh", v / 3600);
	else if (v >= 60 && !fmod(v, 60))
		snprintf(buf, len, "%gm", v / 60);
	else if (v >= 1 || v == 0)
		snprintf(buf, len, "%gs", v);
	else
		snprintf(buf, len, "%gms", v * 1e3);
	return buf;
}

const char *pn_opt_range_str(const struct pn_opt *o, char *buf, size_t len)
{
	char a[32], b[32];

	if (!o->ext || !(o->ext->flags & OPT_F_RANGE)) {
		snprintf(buf, len, "%s", "");
		return buf;
	}
	switch (o->type) {
	case OPT_INT:
		snprintf(buf, len, "%lld..%lld", (long long)o->ext->min, (long long)o->ext->max);
		break;
	case OPT_U64:
		snprintf(buf, len, "%llu..%llu", (unsigned long long)o->ext->min,
			 o->ext->max >= OPT_U64_MAX ? (unsigned long long)UINT64_MAX
						    : (unsigned long long)o->ext->max);
		break;
	case OPT_SIZE:
		snprintf(buf, len, "%s..%s", size_str((uint64_t)o->ext->min, a, sizeof(a)),
			 size_str((uint64_t)o->ext->max, b, sizeof(b)));
		break;
	case OPT_SECONDS:
		snprintf(buf, len, "%s..%s", secs_str(o->ext->min, a, sizeof(a)),
			 secs_str(o->ext->max, b, sizeof(b)));
		break;
	default:
		snprintf(buf, len, "%.15g..%.15g", o->ext->min, o->ext->max);
		break;
	}
	return buf;
}

static int out_of_range(const struct pn_opt *o, const void *v)
{
	const struct pn_opt_ext *e = o->ext;

	if (!e || !(e->flags & OPT_F_RANGE))
		return 0;
	switch (o->type) {
	case OPT_INT:
		return *(const int *)v < e->min || *(const int *)v > e->max;
	case OPT_U64:
	case OPT_SIZE: {
		uint64_t u = *(const uint64_t *)v;

		return u < (uint64_t)e->min || (e->max < OPT_U64_MAX && u > (uint64_t)e->max);
	}
	default:
		return !(*(const double *)v >= e->min && *(const double *)v <= e->max);
	}
}

/* A string value: not empty (unless the table allows it), no empty list element. */
static int check_string(const char *cmd, const struct pn_opt *o, const char *arg,
			const char *spelled)
{
	unsigned flags = o->ext ? o->ext->flags : 0;

	if (!*arg && !(flags & OPT_F_EMPTY_OK)) {
		opt_err(cmd, "%s must not be empty", spelled);
		return -EINVAL;
	}
	if ((flags & OPT_F_LIST) && *arg &&
	    (arg[0] == ',' || arg[strlen(arg) - 1] == ',' || strstr(arg, ",,"))) {
		opt_err(cmd, "%s '%s' has an empty element", spelled, arg);
		return -EINVAL;
	}
	if ((flags & OPT_F_CHOICE) && o->choices) {
		const char *c = o->choices;
		size_t n = strlen(arg);

		for (; *c; c += strcspn(c, " "), c += *c == ' ')
			if (strcspn(c, " ") == n && !strncmp(c, arg, n))
				return 0;
		opt_err(cmd, "%s must be one of: %s; got '%s'", spelled, o->choices,
			arg);
		return -EINVAL;
	}
	return 0;
}

static int set_value(const char *cmd, const struct pn_opt *o, const char *arg,
		     const char *spelled)
{
	union {
		int i;
		uint64_t u;
		double d;
	} v;
	char range[96];
	int ret = 0;

	switch (o->type) {
	case OPT_BOOL:
		*(int *)o->dst = 1;
		return 0;
	case OPT_INT: /* decimal, as sizes and durations: no '+' */
		ret = *arg == '+' ? -EINVAL : pn_parse_dec_int(arg, &v.i);
		break;
	case OPT_U64:
		ret = *arg == '+' ? -EINVAL : pn_parse_dec_u64(arg, &v.u);
		break;
	case OPT_SIZE:
		ret = pn_parse_size(arg, &v.u);
		break;
	case OPT_DOUBLE:
		ret = *arg == '+' ? -EINVAL : pn_parse_double(arg, &v.d);
		break;
	case OPT_SECONDS:
		ret = pn_parse_seconds(arg, &v.d);
		break;
	case OPT_STRING:
		if (check_string(cmd, o, arg, spelled))
			return -EINVAL;
		*(const char **)o->dst = arg;
		return 0;
	case OPT_OPTSTRING:
		if (!arg) {
			*(const char **)o->dst = "";
			return 0;
		}
		if (check_string(cmd, o, arg, spelled))
			return -EINVAL;
		if (o->ext && (o->ext->flags & OPT_F_RANGE)) {
			ret = pn_parse_double(arg, &v.d);
			if (ret)
				break;
			if (out_of_range(o, &v))
				goto bad_range;
		}
		*(const char **)o->dst = arg;
		return 0;
	case OPT_APPEND: {
		const char **dst = o->dst;
		char *joined;

		if (check_string(cmd, o, arg, spelled))
			return -EINVAL;
		if (!*dst) {
			*dst = arg;
			return 0;
		}
		if (asprintf(&joined, "%s,%s", *dst, arg) < 0)
			return -ENOMEM;
		*dst = joined; /* lives until exit, like argv */
		return 0;
	}
	case OPT_REFUSE:
	case OPT_REFUSE_ARG:
		opt_err(cmd, "%s: %s", spelled, o->help);
		return -EINVAL;
	case OPT_END:
		return -EINVAL;
	}
	if (ret == -ERANGE && o->ext && (o->ext->flags & OPT_F_RANGE))
		goto bad_range; /* a number past the type's range is past the option's */
	if (ret) {
		opt_err(cmd, "invalid %s '%s' for '%s'", type_name(o->type), arg,
			spelled);
		return ret;
	}
	if (out_of_range(o, &v))
		goto bad_range;
	switch (o->type) {
	case OPT_INT:
		*(int *)o->dst = v.i;
		break;
	case OPT_U64:
	case OPT_SIZE:
		*(uint64_t *)o->dst = v.u;
		break;
	default:
		*(double *)o->dst = v.d;
		break;
	}
	return 0;
bad_range:
	opt_err(cmd, "%s must be %s, got %s", spelled,
		pn_opt_range_str(o, range, sizeof(range)), arg);
	return -ERANGE;
}

int pn_opt_parse(const char *cmd, const struct pn_opt *const *tables, int argc, char **argv,
		 int *nargs)
{
	struct option lopts[MAX_OPTS + 1];
	const struct pn_opt *map[MAX_OPTS];
	char shorts[3 * MAX_OPTS + 3] = "-:";
	size_t ns = 2;
	int n = 0, t, c, longidx, i, npos = 0;

	/* "-": positional arguments in order (1), whatever POSIXLY_CORRECT
	 * says; ":": a missing value is ':' */
	memset(lopts, 0, sizeof(lopts));
	for (t = 0; tables[t]; t++) {
		const struct pn_opt *o;

		for (o = tables[t]; o->type != OPT_END; o++) {
			int has = o->type == OPT_BOOL || o->type == OPT_REFUSE ? no_argument
				  : o->type == OPT_OPTSTRING		    ? optional_argument
									    : required_argument;

			if (n >= MAX_OPTS)
				break;
			map[n] = o;
			lopts[n].name = o->lng;
			lopts[n].has_arg = has;
			lopts[n].flag = NULL;
			lopts[n].val = 0x1000 + n;
			n++;
			if (o->shrt) {
				shorts[ns++] = (char)o->shrt;
				if (has == required_argument)
					shorts[ns++] = ':';
				else if (has == optional_argument) {
					shorts[ns++] = ':';
					shorts[ns++] = ':';
				}
			}
		}
	}
	shorts[ns] = 0;

	opterr = 0;
	optind = 0; /* a whole new scan (1 would go on with the last one's state) */
	while ((c = getopt_long(argc, argv, shorts, lopts, &longidx)) != -1) {
		const struct pn_opt *o = NULL;
		char spelled[64];

		if (c == 1) { /* argv[npos] was scanned already */
			argv[npos++] = optarg;
			continue;
		}
		if (c == '?' || c == ':') {
			const char *bad = argv[optind - 1];

			if (optopt && optopt < 0x1000)
				snprintf(spelled, sizeof(spelled), "-%c", optopt);
			else if (optopt >= 0x1000)
				snprintf(spelled, sizeof(spelled), "--%s", map[optopt - 0x1000]->lng);
			else
				snprintf(spelled, sizeof(spelled), "%s", bad ? bad : "?");
			/* strip "=value" of an unknown long option */
			spelled[strcspn(spelled, "=")] = 0;
			if (c == ':')
				opt_err(cmd, "option '%s' needs a value", spelled);
			else if (optopt >= 0x1000 && (map[optopt - 0x1000]->type == OPT_BOOL ||
						    map[optopt - 0x1000]->type == OPT_REFUSE))
				opt_err(cmd, "option '%s' takes no value", spelled);
			else
				opt_err(cmd, "unknown option '%s' (see 'penny %s --help')", spelled,
					cmd);
			if (quiet)
				continue;
			return 2;
		}
		if (c >= 0x1000) {
			/* whole names only (getopt_long takes a prefix): "--i" must
			 * not change its meaning when an option is added */
			const char *tok = argv[optind - (optarg && optarg == argv[optind - 1] ? 2 : 1)];

			o = map[c - 0x1000];
			snprintf(spelled, sizeof(spelled), "--%s", o->lng);
			if (strcspn(tok + 2, "=") != strlen(o->lng)) {
				opt_err(cmd, "unknown option '%.*s' (see 'penny %s --help'; options are "
					"not abbreviated)", (int)strcspn(tok, "="), tok, cmd);
				o = NULL;
			}
		} else {
			for (i = 0; i < n; i++)
				if (map[i]->shrt == c)
					o = map[i];
			snprintf(spelled, sizeof(spelled), "-%c", c);
		}
		if (!o || set_value(cmd, o, optarg, spelled)) {
			if (quiet)
				continue;
			return 2;
		}
	}
	for (i = optind; i < argc; i++) /* after "--" */
		argv[npos++] = argv[i];
	*nargs = npos;
	return 0;
}

void pn_opt_scan(const struct pn_opt *const *tables, int argc, char **argv)
{
	char keep[sizeof(last_error)];
	int nargs;

	memcpy(keep, last_error, sizeof(keep));
	quiet = 1;
	pn_opt_parse("", tables, argc, argv, &nargs);
	quiet = 0;
	memcpy(last_error, keep, sizeof(keep));
}

void pn_opt_help(FILE *f, const char *title, const struct pn_opt *opts)
{
	const struct pn_opt *o;

	if (!opts || opts->type == OPT_END)
		return;
	fprintf(f, "\n%s:\n", title);
	for (o = opts; o->type != OPT_END; o++) {
		char left[64], range[96];
		int k = 0;

		if (o->shrt)
			k = snprintf(left, sizeof(left), "-%c, ", o->shrt);
		else
			k = snprintf(left, sizeof(left), "    ");
		if (o->type == OPT_OPTSTRING)
			snprintf(left + k, sizeof(left) - (size_t)k, "--%s[=%s]", o->lng,
				 o->arg ? o->arg : "X");
		else if (o->type == OPT_BOOL || o->type == OPT_REFUSE)
			snprintf(left + k, sizeof(left) - (size_t)k, "--%s", o->lng);
		else
			snprintf(left + k, sizeof(left) - (size_t)k, "--%s %s", o->lng,
				 o->arg ? o->arg : "X");
		pn_opt_range_str(o, range, sizeof(range));
		if (strlen(left) > 26)
			fprintf(f, "  %s\n  %-26s  %s", left, "", o->help);
		else
			fprintf(f, "  %-26s  %s", left, o->help);
		if (range[0])
			fprintf(f, " [%s]", range);
		fputc('\n', f);
	}
}

void pn_opt_complete(FILE *f, const struct pn_opt *opts)
{
	const struct pn_opt *o;

	for (o = opts; o && o->type != OPT_END; o++) {
		char range[96];

		pn_opt_range_str(o, range, sizeof(range));
		/* every number needs a range: t0002 fails on "unchecked" */
		if (!range[0] && o->type >= OPT_INT && o->type <= OPT_SECONDS)
			snprintf(range, sizeof(range), "unchecked");
		fprintf(f, "--%s\t", o->lng);
		if (o->shrt)
			fprintf(f, "-%c", o->shrt);
		else
			fputc('-', f);
		fprintf(f, "\t%s\t%s\t%s\n",
			o->type == OPT_BOOL || o->type == OPT_REFUSE ? "-" : (o->arg ? o->arg : "X"),
			range[0] ? range : "-", o->choices ? o->choices : "");
	}
}
