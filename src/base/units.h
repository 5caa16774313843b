/* SPDX-License-Identifier: MIT */
/*
 * Sizes and durations: the one rule for every option, setting, file and
 * environment knob of penny and of its plugins (which compile units.c into
 * themselves: it uses the C library only and records no error).
 *
 * A size is decimal digits, optionally followed by K, M, G or T (powers of
 * 1024, like nccl-tests), each optionally followed by B or iB, or by B
 * alone, in any case: "4096", "4096B", "64K", "64KB", "64KiB", "8m", "1T".
 * No sign, space, fraction, hex or other suffix.
 *
 * A duration is a non-negative decimal number of seconds ("60", "1.5",
 * "2e-3"), optionally followed by us, ms, s, m or h: "500ms", "2m".
 */
#ifndef PENNY_UNITS_H
#define PENNY_UNITS_H

#include <stddef.h>
#include <stdint.h>

/* pn_parse_size_n's flags: also take "inf" (any case) as UINT64_MAX. */
#define PN_SIZE_INF 1u

/* A size as above: 0 and *out, -EINVAL (not a size) or -ERANGE (above 2^64 - 1). */
int pn_parse_size(const char *s, uint64_t *out);
/* The same over the len bytes at s (a field of a longer string). */
int pn_parse_size_n(const char *s, size_t len, unsigned flags, uint64_t *out);
/* A duration as above, in seconds (finite: 1e308h is none): 0 and *out, or -EINVAL. */
int pn_parse_seconds(const char *s, double *out);

#endif
