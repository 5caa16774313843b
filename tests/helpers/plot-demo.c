/* SPDX-License-Identifier: MIT */
/*
 * Writes an allreduce-test style SVG plot of made-up data, for the plot
 * tests: plot-demo NSERIES FILE.svg [--gaps] [--title TEXT].
 * --gaps adds NaN, zero and negative values (which must be left out).
 */
#define _GNU_SOURCE
#include "base/log.h"
#include "base/plot.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const names[] = { "ring", "simple-ring", "one-shot", "two-shot",
				      "hierarchical", "auto", "nccl ring", "nccl tree",
				      "cuda one-shot", "cuda two-shot", "tcp ring", "shm <direct> & co" };

int main(int argc, char **argv)
{
	struct pn_plot_series series[64];
	struct pn_plot_point pts[64][26];
	const char *title = "allreduce-test: float sum, 4 ranks";
	int ns, gaps = 0, rc;
	FILE *f;

	if (argc < 3 || (ns = atoi(argv[1])) < 0 || ns > 64) {
		fprintf(stderr, "usage: plot-demo NSERIES FILE.svg [--gaps] [--title TEXT]\n");
		return 2;
	}
	for (int i = 3; i < argc; i++) {
		if (!strcmp(argv[i], "--gaps"))
			gaps = 1;
		else if (!strcmp(argv[i], "--title") && i + 1 < argc)
			title = argv[++i];
	}
	for (int s = 0; s < ns; s++) {
		for (int i = 0; i < 26; i++) {
			double size = ldexp(8.0, i); /* 8 B .. 256 MiB */
			double lat = 2.0 + s * 0.7, bw = 20.0 + 8.0 * s;
			double t = lat + size / (bw * 1e3);

			pts[s][i].size_bytes = size;
			pts[s][i].time_us = t;
			pts[s][i].busbw_gbps = size / t / 1e3 * 1.5;
		}
		if (gaps) {
			pts[s][5].busbw_gbps = NAN;
			pts[s][6].time_us = 0;
			pts[s][9].busbw_gbps = -1;
			pts[s][12].size_bytes = INFINITY;
		}
		series[s].label = names[s % (sizeof(names) / sizeof(names[0]))];
		series[s].pts = pts[s];
		series[s].n = 26;
	}
	struct pn_plot p = { title, series, (size_t)ns };

	f = fopen(argv[2], "w");
	if (!f) {
		perror(argv[2]);
		return 1;
	}
	rc = pn_plot_svg(f, &p);
	if (fclose(f) || rc) {
		fprintf(stderr, "plot-demo: %s\n", rc ? pn_errmsg(rc) : "write error");
		return 1;
	}
	return 0;
}
