/* SPDX-License-Identifier: MIT */
/* The one timing rule: blocks, their median, the calls per block (timing.h). */
#include "base/timing.h"

#include <string.h>

void pn_timing_stat(const double *v, size_t n, struct pn_timing_stat *out)
{
	double s[PN_TIMING_MAX_BLOCKS];
	size_t i, j, m = n < PN_TIMING_MAX_BLOCKS ? n : PN_TIMING_MAX_BLOCKS;

	memset(out, 0, sizeof(*out));
	if (!m)
		return;
	/* insertion sort of a copy: at most PN_TIMING_MAX_BLOCKS values */
	for (i = 0; i < m; i++) {
		double x = v[i];

		for (j = i; j > 0 && s[j - 1] > x; j--)
			s[j] = s[j - 1];
		s[j] = x;
	}
	out->min = s[0];
	out->max = s[m - 1];
	out->median = m % 2 ? s[m / 2] : (s[m / 2 - 1] + s[m / 2]) / 2;
}

int pn_timing_calls(uint64_t bytes, long long iters, int blocks)
{
	uint64_t c;

	if (blocks < 1)
		blocks = 1;
	if (iters == 0)
		return 0;
	if (iters > 0)
		return (int)((iters + blocks - 1) / blocks);
	c = PN_TIMING_BLOCK_BYTES / (bytes ? bytes : 1);
	if (c < PN_TIMING_MIN_CALLS)
		c = PN_TIMING_MIN_CALLS;
	if (c > PN_TIMING_MAX_CALLS)
		c = PN_TIMING_MAX_CALLS;
	return (int)c;
}
