/* SPDX-License-Identifier: MIT */
/* Strict JSON reader: recursive descent into an arena (see minijson.h). */
#define _GNU_SOURCE
#include "base/minijson.h"

#include "base/file.h"
#include "base/log.h"
#include "base/util.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CHUNK_MIN (64u * 1024)

struct pn_json_chunk {
	struct pn_json_chunk *next;
	size_t used, cap;
	_Alignas(16) char data[];
};

struct parser {
	const char *p, *end;
	const char *line_start;
	unsigned line;
	int depth;
	struct pn_json_doc *doc;
	struct pn_jval *vstack;
	size_t vn, vcap;
	struct pn_json_member *mstack;
	size_t mn, mcap;
};

static void *arena_alloc(struct pn_json_doc *doc, size_t n)
{
	struct pn_json_chunk *c = doc->chunks;
	void *r;

	n = (n + 15) & ~(size_t)15;
	if (!c || c->cap - c->used < n) {
		size_t cap = n > CHUNK_MIN ? n : CHUNK_MIN;

		c = malloc(sizeof(*c) + cap);
		if (!c)
			return NULL;
		c->used = 0;
		c->cap = cap;
		c->next = doc->chunks;
		doc->chunks = c;
	}
	r = c->data + c->used;
	c->used += n;
	return r;
}

static int fail(struct parser *ps, const char *what)
{
	unsigned col = (unsigned)(ps->p - ps->line_start) + 1;

	if (ps->p >= ps->end)
		return pn_err(-EINVAL, "line %u column %u: %s (unexpected end of input)", ps->line,
			      col, what);
	if ((unsigned char)*ps->p >= 0x20 && (unsigned char)*ps->p < 0x7f)
		return pn_err(-EINVAL, "line %u column %u: %s, got '%c'", ps->line, col, what,
			      *ps->p);
	return pn_err(-EINVAL, "line %u column %u: %s, got byte 0x%02x", ps->line, col, what,
		      (unsigned char)*ps->p);
}

static void skip_ws(struct parser *ps)
{
	while (ps->p < ps->end) {
		char c = *ps->p;

		if (c == '\n') {
			ps->line++;
			ps->line_start = ps->p + 1;
		} else if (c != ' ' && c != '\t' && c != '\r') {
			return;
		}
		ps->p++;
	}
}

static int literal(struct parser *ps, const char *word)
{
	size_t n = strlen(word);

	if ((size_t)(ps->end - ps->p) < n || memcmp(ps->p, word, n))
		return fail(ps, "invalid literal");
	ps->p += n;
	return 0;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static int read_u4(struct parser *ps, unsigned *out)
{
	unsigned v = 0;
	int i;

	if (ps->end - ps->p < 4)
		return fail(ps, "short \\u escape");
	for (i = 0; i < 4; i++) {
		int h = hexval(ps->p[i]);

		if (h < 0) {
			ps->p += i;
			return fail(ps, "invalid \\u escape");
		}
		v = v << 4 | (unsigned)h;
	}
	ps->p += 4;
	*out = v;
	return 0;
}

static size_t put_utf8(char *d, unsigned cp)
{
	if (cp < 0x80) {
		d[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		d[0] = (char)(0xc0 | cp >> 6);
		d[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		d[0] = (char)(0xe0 | cp >> 12);
		d[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		d[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	d[0] = (char)(0xf0 | cp >> 18);
	d[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
	d[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
	d[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

/* Length of a valid UTF-8 sequence at p (lead byte >= 0x80), 0 if invalid. */
static size_t utf8_len(const unsigned char *p, const unsigned char *end)
{
	unsigned cp;
	size_t n, i;

	if (p[0] >= 0xc2 && p[0] <= 0xdf) {
		n = 2;
		cp = p[0] & 0x1f;
	} else if (p[0] >= 0xe0 && p[0] <= 0xef) {
		n = 3;
		cp = p[0] & 0x0f;
	} else if (p[0] >= 0xf0 && p[0] <= 0xf4) {
		n = 4;
		cp = p[0] & 0x07;
	} else {
		return 0;
	}
	if ((size_t)(end - p) < n)
		return 0;
	for (i = 1; i < n; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (p[i] & 0x3f);
	}
	if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

/* At the opening quote; decodes into the arena. */
static int parse_string(struct parser *ps, const char **out, unsigned *outlen)
{
	const char *q = ps->p + 1;
	size_t raw = 0, n = 0;
	char *d;

	/* find the closing quote to size the buffer */
	while (q < ps->end && *q != '"') {
		if (*q == '\\' && q + 1 < ps->end)
			q++;
		q++;
	}
	raw = (size_t)(q - ps->p);
	if (raw > UINT_MAX - 8) {
		return fail(ps, "string too long");
	}
	d = arena_alloc(ps->doc, raw + 1);
	if (!d)
		return pn_err(-ENOMEM, "out of memory");
	ps->p++;
	for (;;) {
		unsigned char c;

		if (ps->p >= ps->end)
			return fail(ps, "unterminated string");
		c = (unsigned char)*ps->p;
		if (c == '"') {
			ps->p++;
			break;
		}
		if (c < 0x20)
			return fail(ps, "raw control character in string");
		if (c == '\\') {
			unsigned cp, lo;

			ps->p++;
			if (ps->p >= ps->end)
				return fail(ps, "unterminated escape");
			switch (*ps->p) {
			case '"': d[n++] = '"'; break;
			case '\\': d[n++] = '\\'; break;
			case '/': d[n++] = '/'; break;
			case 'b': d[n++] = '\b'; break;
			case 'f': d[n++] = '\f'; break;
			case 'n': d[n++] = '\n'; break;
			case 'r': d[n++] = '\r'; break;
			case 't': d[n++] = '\t'; break;
			case 'u':
				ps->p++;
				if (read_u4(ps, &cp))
					return -EINVAL;
				if (cp >= 0xdc00 && cp <= 0xdfff) {
					ps->p -= 6;
					return fail(ps, "lone low surrogate in \\u escape");
				}
				if (cp >= 0xd800 && cp <= 0xdbff) {
					if (ps->end - ps->p < 2 || ps->p[0] != '\\' || ps->p[1] != 'u')
						return fail(ps, "high surrogate without low surrogate");
					ps->p += 2;
					if (read_u4(ps, &lo))
						return -EINVAL;
					if (lo < 0xdc00 || lo > 0xdfff) {
						ps->p -= 6;
						return fail(ps, "high surrogate without low surrogate");
					}
					cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
				}
				if (cp == 0) {
					ps->p -= 6;
					return fail(ps, "\\u0000 is not accepted");
				}
				n += put_utf8(d + n, cp);
				continue; /* p already past the escape */
			default:
				return fail(ps, "invalid escape");
			}
			ps->p++;
			continue;
		}
		if (c >= 0x80) {
			size_t l = utf8_len((const unsigned char *)ps->p,
					    (const unsigned char *)ps->end);

			if (!l)
				return fail(ps, "invalid UTF-8 in string");
			memcpy(d + n, ps->p, l);
			n += l;
			ps->p += l;
			continue;
		}
		d[n++] = (char)c;
		ps->p++;
	}
	d[n] = 0;
	*out = d;
	*outlen = (unsigned)n;
	return 0;
}

static int parse_number(struct parser *ps, double *out)
{
	const char *s = ps->p, *q = ps->p;
	char small[64], *buf = small, *endp;
	size_t n;

	if (q < ps->end && *q == '-')
		q++;
	if (q >= ps->end || *q < '0' || *q > '9') {
		ps->p = q;
		return fail(ps, "invalid number");
	}
	if (*q == '0') {
		q++;
		if (q < ps->end && *q >= '0' && *q <= '9') {
			ps->p = q;
			return fail(ps, "leading zero in number");
		}
	} else {
		while (q < ps->end && *q >= '0' && *q <= '9')
			q++;
	}
	if (q < ps->end && *q == '.') {
		q++;
		if (q >= ps->end || *q < '0' || *q > '9') {
			ps->p = q;
			return fail(ps, "digit expected after decimal point");
		}
		while (q < ps->end && *q >= '0' && *q <= '9')
			q++;
	}
	if (q < ps->end && (*q == 'e' || *q == 'E')) {
		q++;
		if (q < ps->end && (*q == '+' || *q == '-'))
			q++;
		if (q >= ps->end || *q < '0' || *q > '9') {
			ps->p = q;
			return fail(ps, "digit expected in exponent");
		}
		while (q < ps->end && *q >= '0' && *q <= '9')
			q++;
	}
	n = (size_t)(q - s);
	if (n >= sizeof(small)) {
		buf = arena_alloc(ps->doc, n + 1);
		if (!buf)
			return pn_err(-ENOMEM, "out of memory");
	}
	memcpy(buf, s, n);
	buf[n] = 0;
	*out = strtod(buf, &endp);
	if (endp != buf + n)
		return fail(ps, "invalid number");
	if (!isfinite(*out))
		return fail(ps, "number out of range");
	ps->p = q;
	return 0;
}

static int push_value(struct parser *ps, const struct pn_jval *v)
{
	if (ps->vn == ps->vcap) {
		size_t cap = ps->vcap ? ps->vcap * 2 : 64;
		struct pn_jval *nv = realloc(ps->vstack, cap * sizeof(*nv));

		if (!nv)
			return pn_err(-ENOMEM, "out of memory");
		ps->vstack = nv;
		ps->vcap = cap;
	}
	ps->vstack[ps->vn++] = *v;
	return 0;
}

static int push_member(struct parser *ps, const char *key, const struct pn_jval *v)
{
	if (ps->mn == ps->mcap) {
		size_t cap = ps->mcap ? ps->mcap * 2 : 64;
		struct pn_json_member *nm = realloc(ps->mstack, cap * sizeof(*nm));

		if (!nm)
			return pn_err(-ENOMEM, "out of memory");
		ps->mstack = nm;
		ps->mcap = cap;
	}
	ps->mstack[ps->mn].key = key;
	ps->mstack[ps->mn].val = *v;
	ps->mn++;
	return 0;
}

static int cmp_keyp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Duplicate key among n members; returns its name or NULL. */
static const char *find_dup(const struct pn_json_member *m, size_t n)
{
	const char **keys, *dup = NULL;
	size_t i, j;

	if (n <= 16) {
		for (i = 0; i < n; i++)
			for (j = i + 1; j < n; j++)
				if (!strcmp(m[i].key, m[j].key))
					return m[i].key;
		return NULL;
	}
	keys = malloc(n * sizeof(*keys));
	if (!keys)
		return NULL;
	for (i = 0; i < n; i++)
		keys[i] = m[i].key;
	qsort(keys, n, sizeof(*keys), cmp_keyp);
	for (i = 1; i < n && !dup; i++)
		if (!strcmp(keys[i - 1], keys[i]))
			dup = keys[i];
	free(keys);
	return dup;
}

static int parse_value(struct parser *ps, struct pn_jval *v);

static int parse_array(struct parser *ps, struct pn_jval *v)
{
	size_t base = ps->vn, n;
	struct pn_jval item, *items;
	int ret;

	ps->p++;
	skip_ws(ps);
	if (ps->p < ps->end && *ps->p == ']') {
		ps->p++;
		v->type = PN_JSON_ARRAY;
		v->n = 0;
		v->u.items = NULL;
		return 0;
	}
	for (;;) {
		ret = parse_value(ps, &item);
		if (ret)
			return ret;
		ret = push_value(ps, &item);
		if (ret)
			return ret;
		skip_ws(ps);
		if (ps->p < ps->end && *ps->p == ',') {
			ps->p++;
			continue;
		}
		if (ps->p < ps->end && *ps->p == ']') {
			ps->p++;
			break;
		}
		return fail(ps, "expected ',' or ']'");
	}
	n = ps->vn - base;
	if (n > UINT_MAX)
		return fail(ps, "array too long");
	items = arena_alloc(ps->doc, n * sizeof(*items));
	if (!items)
		return pn_err(-ENOMEM, "out of memory");
	memcpy(items, ps->vstack + base, n * sizeof(*items));
	ps->vn = base;
	v->type = PN_JSON_ARRAY;
	v->n = (unsigned)n;
	v->u.items = items;
	return 0;
}

static int parse_object(struct parser *ps, struct pn_jval *v)
{
	size_t base = ps->mn, n;
	struct pn_json_member *members;
	const char *dup;
	int ret;

	ps->p++;
	skip_ws(ps);
	if (ps->p < ps->end && *ps->p == '}') {
		ps->p++;
		v->type = PN_JSON_OBJECT;
		v->n = 0;
		v->u.members = NULL;
		return 0;
	}
	for (;;) {
		const char *key;
		unsigned klen;
		struct pn_jval val;

		skip_ws(ps);
		if (ps->p >= ps->end || *ps->p != '"')
			return fail(ps, "expected a string key");
		ret = parse_string(ps, &key, &klen);
		if (ret)
			return ret;
		skip_ws(ps);
		if (ps->p >= ps->end || *ps->p != ':')
			return fail(ps, "expected ':'");
		ps->p++;
		ret = parse_value(ps, &val);
		if (ret)
			return ret;
		ret = push_member(ps, key, &val);
		if (ret)
			return ret;
		skip_ws(ps);
		if (ps->p < ps->end && *ps->p == ',') {
			ps->p++;
			continue;
		}
		if (ps->p < ps->end && *ps->p == '}') {
			ps->p++;
			break;
		}
		return fail(ps, "expected ',' or '}'");
	}
	n = ps->mn - base;
	dup = find_dup(ps->mstack + base, n);
	if (dup)
		return pn_err(-EINVAL, "line %u: duplicate key '%s' in object", v->line, dup);
	members = arena_alloc(ps->doc, n * sizeof(*members));
	if (!members)
		return pn_err(-ENOMEM, "out of memory");
	memcpy(members, ps->mstack + base, n * sizeof(*members));
	ps->mn = base;
	v->type = PN_JSON_OBJECT;
	v->n = (unsigned)n;
	v->u.members = members;
	return 0;
}

static int parse_value(struct parser *ps, struct pn_jval *v)
{
	int ret;

	skip_ws(ps);
	memset(v, 0, sizeof(*v));
	v->line = ps->line;
	if (ps->p >= ps->end)
		return fail(ps, "value expected");
	switch (*ps->p) {
	case '{':
	case '[':
		if (++ps->depth > PN_JSON_MAX_DEPTH)
			return fail(ps, "nesting too deep");
		ret = *ps->p == '{' ? parse_object(ps, v) : parse_array(ps, v);
		ps->depth--;
		return ret;
	case '"':
		v->type = PN_JSON_STRING;
		return parse_string(ps, &v->u.s, &v->n);
	case 't':
		v->type = PN_JSON_BOOL;
		v->u.b = 1;
		return literal(ps, "true");
	case 'f':
		v->type = PN_JSON_BOOL;
		return literal(ps, "false");
	case 'n':
		v->type = PN_JSON_NULL;
		return literal(ps, "null");
	default:
		if (*ps->p == '-' || (*ps->p >= '0' && *ps->p <= '9')) {
			v->type = PN_JSON_NUMBER;
			return parse_number(ps, &v->u.num);
		}
		return fail(ps, "value expected");
	}
}

int pn_json_parse(struct pn_json_doc *doc, const char *text, size_t len)
{
	struct parser ps = { .p = text, .end = text + len, .line_start = text, .line = 1,
			     .doc = doc };
	struct pn_jval *root;
	int ret;

	doc->root = NULL;
	doc->chunks = NULL;
	if (len >= 3 && !memcmp(text, "\xef\xbb\xbf", 3)) {
		ret = pn_err(-EINVAL, "line 1 column 1: byte-order mark is not accepted");
		goto out;
	}
	root = arena_alloc(doc, sizeof(*root));
	if (!root) {
		ret = pn_err(-ENOMEM, "out of memory");
		goto out;
	}
	ret = parse_value(&ps, root);
	if (ret)
		goto out;
	skip_ws(&ps);
	if (ps.p != ps.end) {
		ret = fail(&ps, "trailing data after the JSON value");
		goto out;
	}
	doc->root = root;
out:
	free(ps.vstack);
	free(ps.mstack);
	if (ret)
		pn_json_release(doc);
	return ret;
}


int pn_json_parse_file(struct pn_json_doc *doc, const char *path)
{
	char *buf;
	size_t len;
	int ret;

	doc->root = NULL;
	doc->chunks = NULL;
	ret = pn_file_read(path, &buf, &len);
	if (ret)
		return ret;
	ret = pn_json_parse(doc, buf, len);
	free(buf);
	if (ret)
		return pn_err_ctx(ret, "'%s'", path);
	return 0;
}

void pn_json_release(struct pn_json_doc *doc)
{
	struct pn_json_chunk *c = doc->chunks, *next;

	for (; c; c = next) {
		next = c->next;
		free(c);
	}
	doc->chunks = NULL;
	doc->root = NULL;
}

const struct pn_jval *pn_json_get(const struct pn_jval *v, const char *key)
{
	unsigned i;

	if (!v || v->type != PN_JSON_OBJECT)
		return NULL;
	for (i = 0; i < v->n; i++)
		if (!strcmp(v->u.members[i].key, key))
			return &v->u.members[i].val;
	return NULL;
}

const struct pn_jval *pn_json_at(const struct pn_jval *v, unsigned i)
{
	if (!v || v->type != PN_JSON_ARRAY || i >= v->n)
		return NULL;
	return &v->u.items[i];
}

unsigned pn_json_len(const struct pn_jval *v)
{
	if (!v || (v->type != PN_JSON_ARRAY && v->type != PN_JSON_OBJECT))
		return 0;
	return v->n;
}

const char *pn_json_str(const struct pn_jval *v)
{
	return v && v->type == PN_JSON_STRING ? v->u.s : NULL;
}

int pn_json_num(const struct pn_jval *v, double *out)
{
	if (!v || v->type != PN_JSON_NUMBER)
		return -EINVAL;
	*out = v->u.num;
	return 0;
}

int pn_json_int(const struct pn_jval *v, long long *out)
{
	double d;

	if (pn_json_num(v, &d))
		return -EINVAL;
	if (d != floor(d) || d >= 9007199254740992.0 || d <= -9007199254740992.0)
		return -EINVAL;
	*out = (long long)d;
	return 0;
}

const char *pn_json_type_name(enum pn_json_type t)
{
	switch (t) {
	case PN_JSON_NULL:
		return "null";
	case PN_JSON_BOOL:
		return "boolean";
	case PN_JSON_NUMBER:
		return "number";
	case PN_JSON_STRING:
		return "string";
	case PN_JSON_ARRAY:
		return "array";
	case PN_JSON_OBJECT:
		return "object";
	}
	return "?";
}
