/* SPDX-License-Identifier: MIT */
/*
 * One output path for text tables and JSON (iproute2's print_*(PRINT_ANY...)
 * idea).  Every value is printed by one call that names its JSON key and its
 * text format; PN_TEXT/PN_JSON restrict a call to one mode.  In JSON mode
 * each top-level value ends with a newline, so a stream of samples is JSON
 * Lines.  The text format is only used in text mode.
 */
#ifndef PENNY_OUT_H
#define PENNY_OUT_H

#include <stdint.h>
#include <stdio.h>

enum { PN_TEXT = 1, PN_JSON = 2, PN_ANY = 3 };

struct pn_out;

struct pn_out *pn_out_new(FILE *f, int json);
/* Flush; returns 0 or -EIO (write error on the stream); frees the object. */
int pn_out_free(struct pn_out *o);
int pn_out_is_json(const struct pn_out *o);
FILE *pn_out_file(const struct pn_out *o);

void pn_out_open_object(struct pn_out *o, const char *key);
void pn_out_close_object(struct pn_out *o);
void pn_out_open_array(struct pn_out *o, const char *key);
void pn_out_close_array(struct pn_out *o);

void pn_out_str(struct pn_out *o, int where, const char *key, const char *fmt, const char *v);
void pn_out_int(struct pn_out *o, int where, const char *key, const char *fmt, long long v);
void pn_out_uint(struct pn_out *o, int where, const char *key, const char *fmt,
		 unsigned long long v);
/* Non-finite values are JSON null and "n/a" in text. */
void pn_out_float(struct pn_out *o, int where, const char *key, const char *fmt, double v);
void pn_out_bool(struct pn_out *o, int where, const char *key, const char *fmt, int v);
void pn_out_null(struct pn_out *o, int where, const char *key, const char *fmt);
/* Text-only literal text (headers, separators, newlines). */
void pn_out_text(struct pn_out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#define pn_out_nl(o) pn_out_text((o), "\n")

/* JSON string escaping into buf (always terminated); returns needed length. */
size_t pn_json_escape(char *buf, size_t len, const char *s);

#endif
