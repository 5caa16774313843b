/* SPDX-License-Identifier: MIT */
/*
 * One GPU, two ranks (ranks.h): the rule allreduce-test's GPU sweep
 * (sweep_gpu.c) refuses by and penny check's ranks audit reports.
 */
#include "harness/ranks.h"

#include <stdio.h>
#include <string.h>

int pn_ranks_shared_gpu(const struct pn_rank_use *r, int n, int i)
{
	int j;

	for (j = 0; r[i].gpu >= 0 && j < n; j++)
		if (j != i && r[j].gpu >= 0 && !strcmp(r[i].host, r[j].host) &&
		    !strcmp(r[i].busid, r[j].busid))
			return j;
	return -1;
}

int pn_ranks_describe_busid(const char *desc, char *busid, size_t len)
{
	const char *p;
	unsigned d, b, s, f;
	int n;

	for (p = desc ? strchr(desc, '(') : NULL; p; p = strchr(p + 1, '(')) {
		n = -1;
		if (strspn(p + 1, "0123456789abcdefABCDEF:.") == 12 &&
		    sscanf(p + 1, "%4x:%2x:%2x.%1x)%n", &d, &b, &s, &f, &n) == 4 && n == 13) {
			snprintf(busid, len, "%04x:%02x:%02x.%x", d, b, s, f);
			return 0;
		}
	}
	return -1;
}
