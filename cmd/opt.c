/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
#include "opt.h"

#include "../src/util.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_OPTS 128

static const char *type_name(enum pn_opt_type t)
{
	switch (t) {
	case OPT_INT:
	case OPT_U64:
		return "number";
	case OPT_SIZE:
		return "size";
	case OPT_DOUBLE:
		return "number";
	case OPT_SECONDS:
		return "duration";
	default:
		return "value";
	}
}

static int set_value(const char *cmd, const struct pn_opt *o, const char *arg,
		     const char *spelled)
{
	int ret = 0;

	switch (o->type) {
	case OPT_BOOL:
		*(int *)o->dst = 1;
		return 0;
	case OPT_INT:
		ret = pn_parse_int(arg, (int *)o->dst);
		break;
	case OPT_U64:
		ret = pn_parse_u64(arg, (uint64_t *)o->dst);
		break;
	case OPT_SIZE:
		ret = pn_parse_size(arg, (uint64_t *)o->dst);
		break;
	case OPT_DOUBLE:
		ret = pn_parse_double(arg, (double *)o->dst);
		break;
	case OPT_SECONDS:
		ret = pn_parse_seconds(arg, (double *)o->dst);
		break;
	case OPT_STRING:
		*(const char **)o->dst = arg;
		return 0;
	case OPT_OPTSTRING:
		*(const char **)o->dst = arg ? arg : "";
		return 0;
	case OPT_APPEND: {
		const char **dst = o->dst;
		char *joined;

		if (!*dst) {
			*dst = arg;
			return 0;
		}
		if (asprintf(&joined, "%s,%s", *dst, arg) < 0)
			return -ENOMEM;
		*dst = joined; /* lives until exit, like argv */
		return 0;
	}
	case OPT_CALLBACK:
		ret = o->cb(arg);
		if (ret < 0)
			fprintf(stderr, "penny %s: invalid value '%s' for '%s'\n", cmd, arg, spelled);
		return ret < 0 ? -EINVAL : 0;
	case OPT_END:
		return -EINVAL;
	}
	if (ret)
		fprintf(stderr, "penny %s: invalid %s '%s' for '%s'\n", cmd, type_name(o->type), arg,
			spelled);
	return ret;
}

int pn_opt_parse(const char *cmd, const struct pn_opt *const *tables, int argc, char **argv,
		 int *nargs)
{
	struct option lopts[MAX_OPTS + 1];
	const struct pn_opt *map[MAX_OPTS];
	char shorts[3 * MAX_OPTS + 2];
	size_t ns = 0;
	int n = 0, t, c, longidx, i;

	memset(lopts, 0, sizeof(lopts));
	shorts[ns++] = ':'; /* report missing values as ':' */
	for (t = 0; tables[t]; t++) {
		const struct pn_opt *o;

		for (o = tables[t]; o->type != OPT_END; o++) {
			int has = o->type == OPT_BOOL	   ? no_argument
				  : o->type == OPT_OPTSTRING ? optional_argument
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
	optind = 1;
	while ((c = getopt_long(argc, argv, shorts, lopts, &longidx)) != -1) {
		const struct pn_opt *o = NULL;
		char spelled[64];

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
				fprintf(stderr, "penny %s: option '%s' needs a value\n", cmd, spelled);
			else if (optopt >= 0x1000 && map[optopt - 0x1000]->type == OPT_BOOL)
				fprintf(stderr, "penny %s: option '%s' takes no value\n", cmd, spelled);
			else
				fprintf(stderr, "penny %s: unknown option '%s' (see 'penny %s --help')\n",
					cmd, spelled, cmd);
			return 2;
		}
		if (c >= 0x1000) {
			o = map[c - 0x1000];
			snprintf(spelled, sizeof(spelled), "--%s", o->lng);
		} else {
			for (i = 0; i < n; i++)
				if (map[i]->shrt == c)
					o = map[i];
			snprintf(spelled, sizeof(spelled), "-%c", c);
		}
		if (!o)
			return 2;
		if (set_value(cmd, o, optarg, spelled))
			return 2;
	}
	/* positional arguments to the front */
	for (i = optind; i < argc; i++)
		argv[i - optind] = argv[i];
	*nargs = argc - optind;
	return 0;
}

void pn_opt_help(FILE *f, const char *title, const struct pn_opt *opts)
{
	const struct pn_opt *o;

	if (!opts || opts->type == OPT_END)
		return;
	fprintf(f, "\n%s:\n", title);
	for (o = opts; o->type != OPT_END; o++) {
		char left[64];
		int k = 0;

		if (o->shrt)
			k = snprintf(left, sizeof(left), "-%c, ", o->shrt);
		else
			k = snprintf(left, sizeof(left), "    ");
		if (o->type == OPT_OPTSTRING)
			snprintf(left + k, sizeof(left) - (size_t)k, "--%s[=%s]", o->lng,
				 o->arg ? o->arg : "X");
		else if (o->type == OPT_BOOL)
			snprintf(left + k, sizeof(left) - (size_t)k, "--%s", o->lng);
		else
			snprintf(left + k, sizeof(left) - (size_t)k, "--%s %s", o->lng,
				 o->arg ? o->arg : "X");
		if (strlen(left) > 26)
			fprintf(f, "  %s\n  %-26s  %s\n", left, "", o->help);
		else
			fprintf(f, "  %-26s  %s\n", left, o->help);
	}
}

void pn_opt_complete(FILE *f, const struct pn_opt *opts)
{
	const struct pn_opt *o;

	for (o = opts; o && o->type != OPT_END; o++) {
		fprintf(f, "--%s\t", o->lng);
		if (o->shrt)
			fprintf(f, "-%c", o->shrt);
		else
			fputc('-', f);
		fprintf(f, "\t%s\t%s\n", o->type == OPT_BOOL ? "-" : (o->arg ? o->arg : "X"),
			o->choices ? o->choices : "");
	}
}
