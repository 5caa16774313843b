/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
#include "base/util.h"
#include "base/log.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int pn_natcmp(const char *a, const char *b)
{
	while (*a && *b) {
		if (isdigit((unsigned char)*a) && isdigit((unsigned char)*b)) {
			const char *ea, *eb;
			size_t la, lb;
			int c;

			while (*a == '0' && isdigit((unsigned char)a[1]))
				a++;
			while (*b == '0' && isdigit((unsigned char)b[1]))
				b++;
			for (ea = a; isdigit((unsigned char)*ea); ea++)
				;
			for (eb = b; isdigit((unsigned char)*eb); eb++)
				;
			la = (size_t)(ea - a);
			lb = (size_t)(eb - b);
			if (la != lb)
				return la < lb ? -1 : 1;
			c = memcmp(a, b, la);
			if (c)
				return c < 0 ? -1 : 1;
			a = ea;
			b = eb;
			continue;
		}
		if (*a != *b)
			return (unsigned char)*a < (unsigned char)*b ? -1 : 1;
		a++;
		b++;
	}
	if (*a == *b)
		return 0;
	return *a ? 1 : -1;
}

int pn_natcmp_qsort(const void *a, const void *b)
{
	return pn_natcmp(*(const char *const *)a, *(const char *const *)b);
}

static int parse_u64(const char *s, uint64_t *out, int base)
{
	char *end;
	unsigned long long v;

	if (!s || !*s || *s == '-' || isspace((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, base);
	if (*end || end == s)
		return -EINVAL;
	if (errno)
		return errno == ERANGE ? -ERANGE : -EINVAL;
	*out = v;
	return 0;
}

static int parse_int(const char *s, int *out, int base)
{
	char *end;
	long v;

	if (!s || !*s || isspace((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	v = strtol(s, &end, base);
	if (*end || end == s)
		return -EINVAL;
	if (errno || v < INT_MIN || v > INT_MAX)
		return errno && errno != ERANGE ? -EINVAL : -ERANGE;
	*out = (int)v;
	return 0;
}

int pn_parse_u64(const char *s, uint64_t *out)
{
	return parse_u64(s, out, 0);
}

int pn_parse_int(const char *s, int *out)
{
	return parse_int(s, out, 0);
}

int pn_parse_dec_u64(const char *s, uint64_t *out)
{
	return parse_u64(s, out, 10);
}

int pn_parse_dec_int(const char *s, int *out)
{
	return parse_int(s, out, 10);
}

int pn_knob_choice(const char *name, const char *v, const char *const *words, int dflt)
{
	char want[128] = "";
	size_t len = 0;
	int i;

	if (!v || !*v)
		return dflt;
	for (i = 0; words[i]; i++) {
		if (!strcmp(v, words[i]))
			return i;
		if (len < sizeof(want))
			len += (size_t)snprintf(want + len, sizeof(want) - len, "%s%s",
						i ? " or " : "", words[i]);
	}
	return pn_err(-EINVAL, "%s='%.40s%s': want %s", name, v, strlen(v) > 40 ? "..." : "",
		      want);
}

int pn_parse_double(const char *s, double *out)
{
	char *end;
	double v;

	if (!s || !*s || isspace((unsigned char)*s))
		return -EINVAL;
	/* decimal only, as every other number penny reads: strtod would take
	 * hex (0x10, 0x1p4) */
	if (strpbrk(s, "xX"))
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (errno || *end || !isfinite(v))
		return -EINVAL;
	*out = v;
	return 0;
}

const char *pn_fmt_size(char *buf, size_t len, uint64_t bytes)
{
	static const char *units[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	unsigned u = 0;
	uint64_t v = bytes;

	while (u + 1 < PN_ARRAY_SIZE(units) && v >= 1024 && v % 1024 == 0) {
		v /= 1024;
		u++;
	}
	snprintf(buf, len, "%llu %s", (unsigned long long)v, units[u]);
	return buf;
}

double pn_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void *pn_grow(void *p, size_t *cap, size_t n, size_t elem, size_t first, size_t max)
{
	size_t want;
	void *np;

	if (n < *cap)
		return p;
	if (n >= max || !elem)
		return NULL;
	want = *cap ? (*cap > max / 2 ? max : *cap * 2) : first;
	if (want > max)
		want = max;
	if (want <= n)
		want = n + 1;
	if (want > SIZE_MAX / elem)
		return NULL;
	np = realloc(p, want * elem);
	if (np)
		*cap = want;
	return np;
}

int pn_poll_ms(double seconds, int cap_ms)
{
	double ms = ceil(seconds * 1000);

	if (!(ms > 0)) /* also NaN */
		return 0;
	return ms < (double)cap_ms ? (int)ms : cap_ms;
}

uint64_t pn_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

const char *pn_hostname(void)
{
	static char host[256];

	if (!host[0]) {
		if (gethostname(host, sizeof(host) - 1) || !host[0])
			snprintf(host, sizeof(host), "localhost");
	}
	return host;
}

int pn_parse_hostport(const char *s, char *host, size_t hostlen, int *port)
{
	const char *colon;
	size_t hl;
	int p;

	if (!s || !*s)
		return -EINVAL;
	if (*s == '[') {
		const char *rb = strchr(s, ']');

		if (!rb || rb[1] != ':')
			return -EINVAL;
		hl = (size_t)(rb - s - 1);
		s++;
		colon = rb + 1;
	} else {
		colon = strrchr(s, ':');
		if (!colon)
			return -EINVAL;
		hl = (size_t)(colon - s);
	}
	if (hl >= hostlen)
		return -ENAMETOOLONG;
	if (pn_parse_int(colon + 1, &p) || p < 0 || p > 65535)
		return -EINVAL;
	memcpy(host, s, hl);
	host[hl] = 0;
	*port = p;
	return 0;
}

static uint64_t digest_mix(uint64_t h, uint64_t w)
{
	h ^= w;
	h *= 0x9e3779b97f4a7c15ull;
	return h ^ (h >> 29);
}

uint64_t pn_digest64(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;
	uint64_t w;

	h = digest_mix(h, n);
	for (; n >= 8; n -= 8, b += 8) {
		memcpy(&w, b, 8);
		h = digest_mix(h, w);
	}
	if (n) {
		w = 0;
		memcpy(&w, b, n);
		h = digest_mix(h, w ^ ((uint64_t)n << 56));
	}
	return h;
}
