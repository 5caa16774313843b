/* SPDX-License-Identifier: MIT */
/* Small shared helpers: natural sort, number parsing, clocks, hosts (sizes and
 * durations: units.h). */
#ifndef PENNY_UTIL_H
#define PENNY_UTIL_H

#include <stddef.h>
#include <stdint.h>

#define PN_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define PN_MIN(a, b) ((a) < (b) ? (a) : (b))
#define PN_MAX(a, b) ((a) > (b) ? (a) : (b))
#define PN_DIV_UP(a, b) (((a) + (b)-1) / (b))
#define PN_ALIGN_UP(a, b) (PN_DIV_UP(a, b) * (b))

/* Natural order: "mlx5_2" < "mlx5_10"; digit runs compare as numbers. */
int pn_natcmp(const char *a, const char *b);
/* qsort adaptor for arrays of char *. */
int pn_natcmp_qsort(const void *a, const void *b);

/* Format bytes as "8 MiB", "512 KiB", "3 B" (exact multiples) into buf. */
const char *pn_fmt_size(char *buf, size_t len, uint64_t bytes);
/* Whole-string numbers: C's prefixes (0x hex, 0 octal) for what files say
 * (sysfs, LIDs); the _dec forms, decimal only (leading zeros allowed), for
 * what a user types: an option's 010 is ten, its 0x10 refused.  -EINVAL
 * for what is no number, -ERANGE for one the type cannot hold. */
int pn_parse_u64(const char *s, uint64_t *out);
int pn_parse_int(const char *s, int *out);
int pn_parse_dec_u64(const char *s, uint64_t *out);
int pn_parse_dec_int(const char *s, int *out);
/* A finite decimal number (1.5, 2e3; not 0x10, 0x1p4, inf or nan). */
int pn_parse_double(const char *s, double *out);
/*
 * An environment knob that takes one of a few words: the index in words
 * (NULL-terminated) of v, dflt when v is NULL or empty, else -EINVAL with
 * "NAME='v': want w0 or w1 ..." (v cut at 40 characters).
 */
int pn_knob_choice(const char *name, const char *v, const char *const *words, int dflt);

/* Monotonic clock in seconds / nanoseconds. */
double pn_now(void);
uint64_t pn_now_ns(void);
/*
 * A poll(2) timeout in ms for a wait of seconds, rounded up: 0 when not
 * positive, at most cap_ms (>= 0); no overflow whatever the seconds (a
 * --timeout of years, inf, NaN).
 */
int pn_poll_ms(double seconds, int cap_ms);

/*
 * Room for one more element in an array of elem-byte elements that holds n
 * of *cap: p itself while n < *cap, else p reallocated to twice *cap (first
 * when empty; never above max), *cap updated.  NULL, with p and *cap as
 * they were, when memory runs out or n has reached max.
 */
void *pn_grow(void *p, size_t *cap, size_t n, size_t elem, size_t first, size_t max);

/* Hostname (cached, never empty). */
const char *pn_hostname(void);

/* Parse "host:port" / "[v6]:port"; host may be empty (NULL out). */
int pn_parse_hostport(const char *s, char *host, size_t hostlen, int *port);

/*
 * A 64-bit digest of n bytes, chained from h (start with 0): eight bytes a
 * step, a multiply-xor mix.  Not cryptographic: it tells whether two
 * buffers hold the same bits (allreduce outputs of different ranks).
 */
uint64_t pn_digest64(uint64_t h, const void *p, size_t n);

#endif
