/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
#include "base/out.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#define OUT_MAX_DEPTH 32

struct pn_out {
	FILE *f;
	int json;
	int depth;
	int first[OUT_MAX_DEPTH]; /* no member printed yet at this depth */
	char close[OUT_MAX_DEPTH]; /* what closes the container at this depth */
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

int pn_out_flush(FILE *f)
{
	struct pollfd p = { .fd = fileno(f), .events = POLLOUT };
	struct stat st, full;
	struct statvfs sv;

	errno = 0;
	if (fflush(f))
		return errno ? -errno : -EIO;
	if (!ferror(f))
		return 0;
	/* an earlier flush failed, and stdio forgot why: ask the descriptor */
	if (write(p.fd, "", 0) < 0 || fstat(p.fd, &st))
		return -errno;	/* EBADF: closed, or not open for writing */
	if ((S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode)) && poll(&p, 1, 0) == 1 &&
	    (p.revents & (POLLERR | POLLHUP)))
		return -EPIPE;
	if (S_ISCHR(st.st_mode) && !stat("/dev/full", &full) && S_ISCHR(full.st_mode) &&
	    st.st_rdev == full.st_rdev)
		return -ENOSPC;
	if (S_ISREG(st.st_mode) && !fstatvfs(p.fd, &sv) && !(geteuid() ? sv.f_bavail : sv.f_bfree))
		return -ENOSPC;
	return fcntl(p.fd, F_GETFL) & O_NONBLOCK ? -EAGAIN : -EIO; /* a full non-blocking pipe */
}

int pn_out_free(struct pn_out *o)
{
	int ret;

	if (!o)
		return 0;
	ret = pn_out_flush(o->f);
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

int pn_utf8_len(const char *s)
{
	const unsigned char *u = (const unsigned char *)s;
	uint32_t cp;
	int n, i;

	if (u[0] < 0x80)
		return 1;
	if (u[0] < 0xc2) /* continuation byte, or an overlong 2-byte form */
		return 0;
	if (u[0] < 0xe0) {
		n = 2;
		cp = u[0] & 0x1f;
	} else if (u[0] < 0xf0) {
		n = 3;
		cp = u[0] & 0x0f;
	} else if (u[0] < 0xf5) {
		n = 4;
		cp = u[0] & 0x07;
	} else {
		return 0;
	}
	for (i = 1; i < n; i++) {
		if ((u[i] & 0xc0) != 0x80) /* the terminating NUL stops here too */
			return 0;
		cp = cp << 6 | (u[i] & 0x3f);
	}
	if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

/* Bytes into a bounded buffer, counting what would be needed. */
struct sink {
	char *buf;
	size_t len, n;
};

static void put_c(struct sink *k, char c)
{
	if (k->n + 1 < k->len)
		k->buf[k->n] = c;
	k->n++;
}

static void put_s(struct sink *k, const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		put_c(k, s[i]);
}

static void put_fmt(struct sink *k, const char *fmt, unsigned v)
{
	char tmp[16];
	int n = snprintf(tmp, sizeof(tmp), fmt, v);

	put_s(k, tmp, (size_t)n);
}

static size_t sink_end(struct sink *k)
{
	if (k->len)
		k->buf[k->n < k->len ? k->n : k->len - 1] = 0;
	return k->n;
}

size_t pn_json_escape(char *buf, size_t len, const char *s)
{
	struct sink k = { buf, len, 0 };

	while (*s) {
		unsigned char c = (unsigned char)*s;
		int n = pn_utf8_len(s);

		if (!n) {
			put_s(&k, "\\ufffd", 6);
			s++;
			continue;
		}
		if (c == '"' || c == '\\') {
			put_c(&k, '\\');
			put_c(&k, (char)c);
		} else if (c == '\n') {
			put_s(&k, "\\n", 2);
		} else if (c == '\t') {
			put_s(&k, "\\t", 2);
		} else if (c < 0x20) {
			put_fmt(&k, "\\u%04x", c);
		} else {
			put_s(&k, s, (size_t)n);
		}
		s += n;
	}
	return sink_end(&k);
}

size_t pn_prom_escape(char *buf, size_t len, const char *s)
{
	struct sink k = { buf, len, 0 };

	while (*s) {
		int n = pn_utf8_len(s);

		if (!n) {
			put_s(&k, "\xef\xbf\xbd", 3); /* U+FFFD */
			s++;
			continue;
		}
		if (*s == '"' || *s == '\\') {
			put_c(&k, '\\');
			put_c(&k, *s);
		} else if (*s == '\n') {
			put_s(&k, "\\n", 2);
		} else {
			put_s(&k, s, (size_t)n);
		}
		s += n;
	}
	return sink_end(&k);
}

size_t pn_xml_escape(char *buf, size_t len, const char *s)
{
	struct sink k = { buf, len, 0 };

	while (*s) {
		const unsigned char *u = (const unsigned char *)s;
		int n = pn_utf8_len(s);

		if (!n || (n == 3 && u[0] == 0xef && u[1] == 0xbf && u[2] >= 0xbe) ||
		    (u[0] < 0x20 && u[0] != '\t' && u[0] != '\n' && u[0] != '\r')) {
			put_s(&k, "\xef\xbf\xbd", 3); /* U+FFFD */
			s += n ? n : 1;
			continue;
		}
		switch (u[0]) {
		case '&':
			put_s(&k, "&amp;", 5);
			break;
		case '<':
			put_s(&k, "&lt;", 4);
			break;
		case '>':
			put_s(&k, "&gt;", 4);
			break;
		case '"':
			put_s(&k, "&quot;", 6);
			break;
		case '\'':
			put_s(&k, "&apos;", 6);
			break;
		case '\t':
		case '\n':
		case '\r':
			put_fmt(&k, "&#%u;", u[0]);
			break;
		default:
			put_s(&k, s, (size_t)n);
		}
		s += n;
	}
	return sink_end(&k);
}

size_t pn_text_escape(char *buf, size_t len, const char *s, int layout)
{
	struct sink k = { buf, len, 0 };

	while (*s) {
		const unsigned char *u = (const unsigned char *)s;
		int n = pn_utf8_len(s), i;

		if (n == 1 && (u[0] >= 0x20 || (layout && (u[0] == '\n' || u[0] == '\t'))) &&
		    u[0] != 0x7f) {
			put_c(&k, *s);
		} else if (n > 1 && !(n == 2 && u[0] == 0xc2 && u[1] < 0xa0)) {
			put_s(&k, s, (size_t)n);
		} else {
			/* a control character (C0, DEL, C1) or an invalid byte */
			if (!n)
				n = 1;
			for (i = 0; i < n; i++)
				put_fmt(&k, "\\x%02x", u[i]);
		}
		s += n;
	}
	return sink_end(&k);
}

/* s through an escaper: in small when it fits, else in *heap (free it). */
static const char *escaped(size_t (*esc)(char *, size_t, const char *, int), const char *s,
			   int arg, char *small, size_t len, char **heap)
{
	size_t need = esc(small, len, s, arg);

	*heap = NULL;
	if (need < len)
		return small;
	*heap = malloc(need + 1);
	if (!*heap)
		return "";
	esc(*heap, need + 1, s, arg);
	return *heap;
}

static size_t json_esc(char *buf, size_t len, const char *s, int arg)
{
	(void)arg;
	return pn_json_escape(buf, len, s);
}

/* Length of s when no byte of it needs escaping in JSON (printable ASCII
 * but '"' and '\\'), else 0 (and for ""). */
static size_t json_plain_len(const char *s)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i;

	for (i = 0; u[i]; i++)
		if (u[i] < 0x20 || u[i] >= 0x80 || u[i] == '"' || u[i] == '\\')
			return 0;
	return i;
}

/* (no printf on these paths: top --json prints thousands of them a second;
 * keys and most values are plain ASCII and go out in one piece) */
static void json_string(FILE *f, const char *s)
{
	char small[256], *heap;
	size_t n = json_plain_len(s);

	fputc('"', f);
	if (n) {
		fwrite(s, 1, n, f);
		fputc('"', f);
		return;
	}
	fputs(escaped(json_esc, s, 0, small, sizeof(small), &heap), f);
	fputc('"', f);
	free(heap);
}

static void json_uint(FILE *f, unsigned long long v, int neg)
{
	char buf[24], *p = buf + sizeof(buf);

	*--p = 0;
	do
		*--p = (char)('0' + v % 10);
	while (v /= 10);
	if (neg)
		*--p = '-';
	fputs(p, f);
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
	int doc = o->depth == 0 && c == '{';

	if (!o->json)
		return;
	json_key(o, key);
	fputc(c, o->f);
	if (o->depth + 1 < OUT_MAX_DEPTH)
		o->depth++;
	o->first[o->depth] = 1;
	o->close[o->depth] = c == '{' ? '}' : ']';
	/* every JSON document penny writes says which schema it follows */
	if (doc)
		pn_out_int(o, PN_JSON, "version", NULL, PN_OUT_VERSION);
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

void pn_out_end_error(struct pn_out *o, const char *why)
{
	if (!o->json || o->depth == 0)
		return;
	while (o->depth > 1)
		close_container(o, o->close[o->depth]);
	if (o->close[1] == '}')
		pn_out_str(o, PN_JSON, "error", NULL, why);
	close_container(o, o->close[1]);
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
		char small[256], *heap;

		fprintf(o->f, fmt,
			escaped(pn_text_escape, v ? v : "n/a", 0, small, sizeof(small), &heap));
		free(heap);
	}
}

void pn_out_int(struct pn_out *o, int where, const char *key, const char *fmt, long long v)
{
	if (!want(o, where))
		return;
	if (o->json) {
		json_key(o, key);
		json_uint(o->f, v < 0 ? 0ull - (unsigned long long)v : (unsigned long long)v, v < 0);
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
		json_uint(o->f, v, 0);
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

void pn_out_floats(struct pn_out *o, const char *key, const double *v, size_t n)
{
	size_t i;

	pn_out_open_array(o, key);
	for (i = 0; i < n; i++)
		pn_out_float(o, PN_JSON, NULL, NULL, v[i]);
	pn_out_close_array(o);
}

/* One printf conversion spec with its '*' arguments taken already. */
struct conv {
	char spec[32];
	int star[2], nstar;
};

#define CONV_PUT(f, c, v)                                                                  \
	((c)->nstar == 2   ? fprintf(f, (c)->spec, (c)->star[0], (c)->star[1], v)          \
	 : (c)->nstar == 1 ? fprintf(f, (c)->spec, (c)->star[0], v)                       \
			   : fprintf(f, (c)->spec, v))

/*
 * The one rule for text: the format's own characters (its newlines and
 * tabs: the layout) are written as they are, and every string argument, a
 * name read from the system that may hold any byte, goes through
 * pn_text_escape without layout, as pn_out_str's do: a host name with a
 * newline stays on its line.  Numbers are printed as printf would.
 */
static void text_vprint(FILE *f, const char *fmt, va_list ap)
{
	const char *p = fmt;

	while (*p) {
		const char *pct = strchr(p, '%'), *q, *mod;
		char small[256], *heap;
		struct conv c = { .nstar = 0 };
		size_t n;

		if (!pct) {
			fputs(p, f);
			return;
		}
		fwrite(p, 1, (size_t)(pct - p), f);
		if (pct[1] == '%') {
			fputc('%', f);
			p = pct + 2;
			continue;
		}
		q = pct + 1 + strspn(pct + 1, "-+ #0");
		if (*q == '*' && q++)
			c.star[c.nstar++] = va_arg(ap, int);
		q += strspn(q, "0123456789");
		if (*q == '.') {
			q++;
			if (*q == '*' && q++)
				c.star[c.nstar++] = va_arg(ap, int);
			q += strspn(q, "0123456789");
		}
		mod = q;
		q += strspn(q, "hlLjzt");
		n = (size_t)(q + 1 - pct);
		if (!*q || n >= sizeof(c.spec)) { /* not a conversion penny writes */
			fputs(pct, f);
			return;
		}
		memcpy(c.spec, pct, n);
		c.spec[n] = 0;
		p = q + 1;
		switch (*q) {
		case 's': {
			const char *v = va_arg(ap, const char *);

			CONV_PUT(f, &c, escaped(pn_text_escape, v ? v : "(null)", 0, small,
						sizeof(small), &heap));
			free(heap);
			break;
		}
		case 'd':
		case 'i':
			if (mod[0] == 'l' && mod[1] == 'l')
				CONV_PUT(f, &c, va_arg(ap, long long));
			else if (*mod == 'l' || *mod == 'z' || *mod == 'j' || *mod == 't')
				CONV_PUT(f, &c, va_arg(ap, long));
			else
				CONV_PUT(f, &c, va_arg(ap, int));
			break;
		case 'u':
		case 'x':
		case 'X':
		case 'o':
			if (mod[0] == 'l' && mod[1] == 'l')
				CONV_PUT(f, &c, va_arg(ap, unsigned long long));
			else if (*mod == 'l' || *mod == 'z' || *mod == 'j' || *mod == 't')
				CONV_PUT(f, &c, va_arg(ap, unsigned long));
			else
				CONV_PUT(f, &c, va_arg(ap, unsigned));
			break;
		case 'c':
			CONV_PUT(f, &c, va_arg(ap, int));
			break;
		case 'p':
			CONV_PUT(f, &c, va_arg(ap, void *));
			break;
		case 'e':
		case 'E':
		case 'f':
		case 'F':
		case 'g':
		case 'G':
		case 'a':
		case 'A':
			if (*mod == 'L')
				CONV_PUT(f, &c, va_arg(ap, long double));
			else
				CONV_PUT(f, &c, va_arg(ap, double));
			break;
		default:
			fputs(pct, f);
			return;
		}
	}
}

#undef CONV_PUT

void pn_out_text(struct pn_out *o, const char *fmt, ...)
{
	va_list ap;

	if (o->json)
		return;
	va_start(ap, fmt);
	text_vprint(o->f, fmt, ap);
	va_end(ap);
}

static size_t xml_esc(char *buf, size_t len, const char *s, int arg)
{
	(void)arg;
	return pn_xml_escape(buf, len, s);
}

void pn_xml_put(FILE *f, const char *s)
{
	char small[256], *heap;

	fputs(escaped(xml_esc, s ? s : "", 0, small, sizeof(small), &heap), f);
	free(heap);
}

/* Whether no byte of s needs escaping in a Prometheus label (ASCII but
 * '"', '\\' and newline). */
static int prom_plain(const char *s)
{
	const unsigned char *u = (const unsigned char *)s;

	for (; *u; u++)
		if (*u >= 0x80 || *u == '"' || *u == '\\' || *u == '\n')
			return 0;
	return 1;
}

void pn_prom_label(FILE *f, const char *key, const char *v, int first)
{
	char small[256], *big = NULL;
	int plain = prom_plain(v);
	size_t need = plain ? 0 : pn_prom_escape(small, sizeof(small), v);

	if (need >= sizeof(small) && (big = malloc(need + 1)))
		pn_prom_escape(big, need + 1, v);
	/* no printf: top --prom writes thousands of labels a second */
	if (!first)
		fputc(',', f);
	fputs(key, f);
	fputs("=\"", f);
	fputs(plain ? v : big ? big : small, f);
	fputc('"', f);
	free(big);
}
