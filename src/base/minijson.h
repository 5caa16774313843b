/* SPDX-License-Identifier: MIT */
/*
 * minijson: a small, strict JSON reader (RFC 8259) for files penny reads
 * back: `penny topo --save` files, ring plans, tuning tables.
 *
 * Strict means: one value per document, no trailing commas, no comments,
 * no NaN/Infinity, no leading zeros, no byte-order mark, valid UTF-8,
 * no raw control characters in strings, no duplicate keys in an object,
 * nesting at most PN_JSON_MAX_DEPTH.  Errors carry the line and column.
 *
 * The whole tree lives in one arena owned by struct pn_json_doc; values
 * are read-only views into it.  Lookups never fail on a wrong type: they
 * return NULL, so chains like pn_json_get(pn_json_get(v, "a"), "b") are
 * safe and the caller checks once.
 */
#ifndef PENNY_MINIJSON_H
#define PENNY_MINIJSON_H

#include <stddef.h>

#define PN_JSON_MAX_DEPTH 128

enum pn_json_type {
	PN_JSON_NULL,
	PN_JSON_BOOL,
	PN_JSON_NUMBER,
	PN_JSON_STRING,
	PN_JSON_ARRAY,
	PN_JSON_OBJECT,
};

struct pn_json_member;

struct pn_jval {
	enum pn_json_type type;
	unsigned n;	/* array items, object members, string bytes */
	unsigned line;	/* where the value starts (1-based), for messages */
	union {
		int b;
		double num;
		const char *s;	/* NUL-terminated (a \u0000 escape is refused) */
		const struct pn_jval *items;
		const struct pn_json_member *members;
	} u;
};

struct pn_json_member {
	const char *key;
	struct pn_jval val;
};

struct pn_json_chunk;

struct pn_json_doc {
	const struct pn_jval *root;
	struct pn_json_chunk *chunks;	/* arena */
};

/* Parse len bytes of text; on error records "line L column C: ..." and returns -EINVAL. */
int pn_json_parse(struct pn_json_doc *doc, const char *text, size_t len);
/* Read and parse a file; errors are prefixed with the file name. */
int pn_json_parse_file(struct pn_json_doc *doc, const char *path);
void pn_json_release(struct pn_json_doc *doc);

/* Member of an object, NULL if v is not an object or has no such key. */
const struct pn_jval *pn_json_get(const struct pn_jval *v, const char *key);
/* Item i of an array, NULL if v is not an array or i is out of range. */
const struct pn_jval *pn_json_at(const struct pn_jval *v, unsigned i);
/* Number of items of an array / members of an object, 0 otherwise. */
unsigned pn_json_len(const struct pn_jval *v);
/* The string, or NULL when v is not a string. */
const char *pn_json_str(const struct pn_jval *v);
/* An integral number in (-2^53, 2^53), exact in a double: 0, or -EINVAL otherwise. */
int pn_json_int(const struct pn_jval *v, long long *out);
/* A number: 0, or -EINVAL. */
int pn_json_num(const struct pn_jval *v, double *out);
const char *pn_json_type_name(enum pn_json_type t);


#endif
