/* SPDX-License-Identifier: MIT */
/*
 * SVG plots.  allreduce-test --plot FILE.svg: two panels side by side, bus
 * bandwidth (GB/s) and time (us) against message size, log-scale axes, one
 * line per series (algorithm/backend) with its own colour, dash and marker.
 * top --plot FILE.svg: panels stacked, throughput against time, linear
 * axes, one path per series (port, GPU) in the colour the caller picks.
 */
#ifndef PENNY_PLOT_H
#define PENNY_PLOT_H

#include <stddef.h>
#include <stdio.h>

struct pn_plot_point {
	double size_bytes;
	double busbw_gbps;
	double time_us;
};

struct pn_plot_series {
	const char *label;
	const struct pn_plot_point *pts;
	size_t n;
};

struct pn_plot {
	const char *title;
	const struct pn_plot_series *series;
	size_t nseries;
};

/*
 * Write the plot as one SVG document.  Points whose size or value is NaN,
 * infinite, zero or negative are left out of that panel (a line breaks
 * there).  Returns 0, or -EIO (message via pn_errmsg) if writing failed.
 */
int pn_plot_svg(FILE *f, const struct pn_plot *p);

/* Time plot: one series is one <path> of its panel (broken at NaN). */
struct pn_tplot_series {
	const char *label;
	int colour;		/* palette index; < 0: grey */
	int dashed;
	const double *t, *y;	/* seconds, value */
	size_t n;
};

struct pn_tplot_panel {
	const char *title;	/* "NIC RX" */
	const char *ylabel;	/* "Gb/s" */
	const struct pn_tplot_series *series;
	size_t nseries;
};

struct pn_tplot {
	const char *title;
	const struct pn_tplot_panel *panels;
	size_t npanels;
	const char *const *legend;	/* labels of the palette's colours, or NULL */
	size_t nlegend;
};

/* Write a time plot as one SVG document: 0, or -EIO (message set). */
int pn_plot_time_svg(FILE *f, const struct pn_tplot *p);

/* Tick label of 2^e bytes: "8", "512", "1K", "64K", "1M", "2G" (buf of 16). */
const char *pn_plot_size_label(char *buf, size_t len, int e);

#endif
