/* SPDX-License-Identifier: MIT */
#include "out.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define OUT_MAX_DEPTH 32

struct pn_out {
	FILE *f;
	int json;
	int depth;
	int first[OUT_MAX_DEPTH]; /* no member printed yet at this depth */
};

struct pn_out *pn_out_new(FILE *f, int json)
{
	struct pn_out *o = calloc(1, sizeof(*o));

	if (!o)
		return NULL;
	o->f = f;
	o->json = json;
	o->first[0] = 1;
	return o;
}

int pn_out_free(struct pn_out *o)
{
	int ret = 0;

	if (!o)
		return 0;
	if (fflush(o->f) || ferror(o->f))
		ret = -EIO;
	free(o);
	return ret;
}

int pn_out_is_json(const struct pn_out *o)
{
	return o->json;
}

FILE *pn_out_file(const struct pn_out *o)
{
	return o->f;
}

size_t pn_json_escape(char *buf, size_t len, const char *s)
{
	size_t n = 0;

#define PUT(c)                                                                 \
	do {                                                                   \
		if (n + 1 < len)                                               \
			buf[n] = (c);                                          \
		n++;                                                           \
	} while (0)
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\') {
			PUT('\\');
			PUT((char)c);
		} else if (c == '\n') {
			PUT('\\');
			PUT('n');
		} else if (c == '\t') {
			PUT('\\');
			PUT('t');
		} else if (c < 0x20) {
			char hex[8];
			int i;

			snprintf(hex, sizeof(hex), "\\u%04x", c);
			for (i = 0; hex[i]; i++)
				PUT(hex[i]);
		} else {
			PUT((char)c);
		}
	}
#undef PUT
	if (len)
		buf[n < len ? n : len - 1] = 0;
	return n;
}

static void json_string(FILE *f, const char *s)
{
	char small[256];
	size_t need = pn_json_escape(small, sizeof(small), s);

	if (need < sizeof(small)) {
		fprintf(f, "\"%s\"", small);
	} else {
		char *big = malloc(need + 1);

		if (!big) {
			fputs("\"\"", f);
			return;
		}
		pn_json_escape(big, need + 1, s);
		fprintf(f, "\"%s\"", big);
		free(big);
	}
}

/* Separator and key before a JSON value. */
static void json_key(struct pn_out *o, const char *key)
{
	if (!o->first[o->depth])
		fputc(',', o->f);
	o->first[o->depth] = 0;
	if (key && o->depth > 0) {
		json_string(o->f, key);
		fputc(':', o->f);
	}
}

static void open_container(struct pn_out *o, const char *key, char c)
{
	if (!o->json)
		return;
	json_key(o, key);
	fputc(c, o->f);
	if (o->depth + 1 < OUT_MAX_DEPTH)
		o->depth++;
	o->first[o->depth] = 1;
}

static void close_container(struct pn_out *o, char c)
{
	if (!o->json)
		return;
	fputc(c, o->f);
	if (o->depth > 0)
		o->depth--;
	if (o->depth == 0) {
		fputc('\n', o->f);
		o->first[0] = 1;
	}
}

void pn_out_open_object(struct pn_out *o, const char *key)
{
	open_container(o, key, '{');
}

void pn_out_close_object(struct pn_out *o)
{
	close_container(o, '}');
}

void pn_out_open_array(struct pn_out *o, const char *key)
{
	open_container(o, key, '[');
}

void pn_out_close_array(struct pn_out *o)
{
	close_container(o, ']');
}

static int want(const struct pn_out *o, int where)
{
	return o->json ? (where & PN_JSON) : (where & PN_TEXT);
}

void pn_out_str(struct pn_out *o, int where, const char *key, const char *fmt, const char *v)
{
	if (!want(o, where))
		return;
	if (o->json) {
		json_key(o, key);
		if (v)
			json_string(o->f, v);
		else
			fputs("null", o->f);
	} else if (fmt) {
		fprintf(o->f, fmt, v ? v : "n/a");
	}
}

void pn_out_int(struct pn_out *o, int where, const char *key, const char *fmt, long long v)
{
	if (!want(o, where))
		return;
	if (o->json) {
		json_key(o, key);
		fprintf(o->f, "%lld", v);
	} else if (fmt) {
		fprintf(o->f, fmt, v);
	}
}

void pn_out_uint(struct pn_out *o, int where, const char *key, const char *fmt,
		 unsigned long long v)
{
	if (!want(o, where))
		return;
	if (o->json) {
		json_key(o, key);
		fprintf(o->f, "%llu", v);
	} else if (fmt) {
		fprintf(o->f, fmt, v);
	}
}

/* Literal text of a format: n bytes of s, "%%" written as "%". */
static void fmt_literal(FILE *f, const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (s[i] == '%' && i + 1 < n && s[i + 1] == '%')
			i++;
		fputc(s[i], f);
	}
}

/* The conversion of a format: its first '%' that is not "%%". */
static const char *fmt_conversion(const char *fmt)
{
	const char *p = fmt;

	while ((p = strchr(p, '%')) && p[1] == '%')
		p += 2;
	return p;
}

/* Text width of a printf conversion such as "%8.2f " for the n/a case. */
static void text_na(FILE *f, const char *fmt)
{
	const char *p = fmt_conversion(fmt);
	int width = 0;

	if (p) {
		fmt_literal(f, fmt, (size_t)(p - fmt));
		p++;
		while (*p == '-' || *p == '+' || *p == ' ' || *p == '0')
			p++;
		width = atoi(p);
		while (*p && !strchr("diouxXeEfFgGs", *p))
			p++;
		if (*p)
			p++;
	}
	fprintf(f, "%*s", width, "n/a");
	if (p)
		fmt_literal(f, p, strlen(p));
}

void pn_out_float(struct pn_out *o, int where, const char *key, const char *fmt, double v)
{
	if (!want(o, where))
		return;
	if (o->json) {
		json_key(o, key);
		if (isfinite(v))
			fprintf(o->f, "%.17g", v);
		else
			fputs("null", o->f);
	} else if (fmt) {
		if (isfinite(v))
			fprintf(o->f, fmt, v);
		else
			text_na(o->f, fmt);
	}
}

void pn_out_bool(struct pn_out *o, int where, const char *key, const char *fmt, int v)
{
	if (!want(o, where))
		return;
	if (o->json) {
		json_key(o, key);
		fputs(v ? "true" : "false", o->f);
	} else if (fmt) {
		fprintf(o->f, fmt, v ? "yes" : "no");
	}
}

void pn_out_null(struct pn_out *o, int where, const char *key, const char *fmt)
{
	if (!want(o, where))
		return;
	if (o->json) {
		json_key(o, key);
		fputs("null", o->f);
	} else if (fmt) {
		text_na(o->f, fmt);
	}
}

void pn_out_text(struct pn_out *o, const char *fmt, ...)
{
	va_list ap;

	if (o->json)
		return;
	va_start(ap, fmt);
	vfprintf(o->f, fmt, ap);
	va_end(ap);
}
