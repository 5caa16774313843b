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

/* Every top-level JSON object starts with "version": PN_OUT_VERSION, the
 * schema of the document (man pages: JSON OUTPUT); it changes when a member
 * changes its meaning or type. */
#define PN_OUT_VERSION 1

struct pn_out *pn_out_new(FILE *f, int json);
/* pn_out_flush of its stream; frees the object. */
int pn_out_free(struct pn_out *o);
/*
 * Flush f: 0, or why a write on it failed, now or earlier, as a negative
 * errno: the flush's own; for an earlier failed flush (stdio keeps no
 * errno), what the descriptor shows: -EBADF not open for writing (closed),
 * -EPIPE a pipe or socket without a reader, -ENOSPC /dev/full or a full
 * file system, -EAGAIN non-blocking (a pipe that was full); else -EIO.
 */
int pn_out_flush(FILE *f);
int pn_out_is_json(const struct pn_out *o);
FILE *pn_out_file(const struct pn_out *o);

void pn_out_open_object(struct pn_out *o, const char *key);
void pn_out_close_object(struct pn_out *o);
void pn_out_open_array(struct pn_out *o, const char *key);
/* A document cut short (JSON; nothing in text or when none is open): what
 * is open inside the top-level value is closed, and an object gets
 * "error": why before its end, so the output stays one whole document. */
void pn_out_end_error(struct pn_out *o, const char *why);
void pn_out_close_array(struct pn_out *o);

void pn_out_str(struct pn_out *o, int where, const char *key, const char *fmt, const char *v);
void pn_out_int(struct pn_out *o, int where, const char *key, const char *fmt, long long v);
void pn_out_uint(struct pn_out *o, int where, const char *key, const char *fmt,
		 unsigned long long v);
/* Non-finite values are JSON null and "n/a" in text. */
void pn_out_float(struct pn_out *o, int where, const char *key, const char *fmt, double v);
void pn_out_bool(struct pn_out *o, int where, const char *key, const char *fmt, int v);
void pn_out_null(struct pn_out *o, int where, const char *key, const char *fmt);
/* JSON only: key (NULL in an array) and an array of the n numbers of v. */
void pn_out_floats(struct pn_out *o, const char *key, const double *v, size_t n);
/*
 * Text-only text (headers, separators, newlines): the format's own
 * characters as they are, every %s argument escaped as pn_out_str's are
 * (pn_text_escape without layout: a newline in a host name is \x0a), so
 * the layout comes from the format only.
 */
void pn_out_text(struct pn_out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#define pn_out_nl(o) pn_out_text((o), "\n")

/*
 * Escaping of names read from the system (host, device, rate, counter
 * names ...), which can hold any byte.  Each writes into buf (always
 * terminated when len > 0) and returns the length it needs, without the
 * terminating NUL.
 *
 * JSON: '"', '\\' and control characters escaped (\n, \t, \u00XX); a byte
 * that is not part of valid UTF-8 becomes U+FFFD, written \ufffd, so the
 * output is always valid UTF-8.
 */
size_t pn_json_escape(char *buf, size_t len, const char *s);
/* Prometheus label value: '\\', '"' and newline escaped (the text format's
 * only escapes), invalid UTF-8 bytes replaced by U+FFFD. */
size_t pn_prom_escape(char *buf, size_t len, const char *s);
/* One Prometheus label key="value" (escaped; a comma before it unless first). */
void pn_prom_label(FILE *f, const char *key, const char *v, int first);
/*
 * XML 1.0 character data or attribute value (SVG, JUnit): '&', '<', '>',
 * '"' and '\'' as entities; tab, newline and CR as character references
 * (attribute normalisation would turn them into spaces); what XML 1.0
 * cannot hold at all (C0 controls, U+FFFE, U+FFFF, an invalid UTF-8 byte)
 * becomes U+FFFD, so the document is always well-formed.
 */
size_t pn_xml_escape(char *buf, size_t len, const char *s);
/* s through pn_xml_escape into f. */
void pn_xml_put(FILE *f, const char *s);
/* Terminal text: control characters (C0 incl. ESC, DEL, C1) and invalid
 * UTF-8 bytes shown as \xNN; layout keeps newline and tab as they are. */
size_t pn_text_escape(char *buf, size_t len, const char *s, int layout);
/* Length (1-4) of the valid UTF-8 character at s, 0 for an invalid byte
 * (stray continuation, overlong form, surrogate, above U+10FFFF, cut). */
int pn_utf8_len(const char *s);

#endif
