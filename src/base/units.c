/* SPDX-License-Identifier: MIT */
/* Sizes and durations, one rule (units.h). */
#include "base/units.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* The rest of a size after its multiplier: "", "B" or "iB" (any case). */
static int size_tail(const char *s, size_t len, int scaled)
{
	if (!len)
		return 0;
	if (len == 1)
		return toupper((unsigned char)s[0]) == 'B' ? 0 : -EINVAL;
	if (len == 2 && scaled && (s[0] == 'i' || s[0] == 'I'))
		return toupper((unsigned char)s[1]) == 'B' ? 0 : -EINVAL;
	return -EINVAL;
}

int pn_parse_size_n(const char *s, size_t len, unsigned flags, uint64_t *out)
{
	static const char units[] = "KMGT";
	uint64_t v = 0, mul = 1;
	const char *u;
	size_t i = 0;
	int range = 0;

	if (!s)
		return -EINVAL;
	if ((flags & PN_SIZE_INF) && len == 3 && !strncasecmp(s, "inf", 3)) {
		*out = UINT64_MAX;
		return 0;
	}
	if (!len || !isdigit((unsigned char)s[0]))
		return -EINVAL;
	for (; i < len && isdigit((unsigned char)s[i]); i++) {
		if (v > (UINT64_MAX - (uint64_t)(s[i] - '0')) / 10)
			range = 1;
		else
			v = v * 10 + (uint64_t)(s[i] - '0');
	}
	if (i < len && s[i] && (u = strchr(units, toupper((unsigned char)s[i])))) {
		mul = 1ull << (10 * (1 + (u - units)));
		i++;
	}
	if (size_tail(s + i, len - i, mul > 1))
		return -EINVAL;
	if (range || v > UINT64_MAX / mul)
		return -ERANGE;
	*out = v * mul;
	return 0;
}

int pn_parse_size(const char *s, uint64_t *out)
{
	return s ? pn_parse_size_n(s, strlen(s), 0, out) : -EINVAL;
}

int pn_parse_seconds(const char *s, double *out)
{
	static const struct {
		const char *suffix;
		double scale;
	} units[] = { { "", 1 }, { "s", 1 }, { "ms", 1e-3 }, { "us", 1e-6 }, { "m", 60 }, { "h", 3600 } };
	size_t i, digits;
	char *end;
	double v;

	if (!s)
		return -EINVAL;
	/* decimal only: strtod would also take hex, inf, nan and a sign */
	digits = strspn(s, "0123456789.eE+-");
	if (!digits || !(isdigit((unsigned char)s[0]) || s[0] == '.'))
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || (size_t)(end - s) != digits || !isfinite(v) || v < 0)
		return -EINVAL;
	for (i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (!strcmp(end, units[i].suffix) && isfinite(v * units[i].scale)) {
			*out = v * units[i].scale;
			return 0;
		}
	return -EINVAL;
}
