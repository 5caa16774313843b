/* SPDX-License-Identifier: MIT */
/*
 * SVG writer for allreduce-test --plot and top --plot.  Layout (pixels): the title on top,
 * two panels side by side (bus bandwidth, time; both against message size,
 * log axes), the legend in rows of four below.  Numbers are written in the
 * C locale whatever the program's locale is.
 */
#define _GNU_SOURCE
#include "base/plot.h"
#include "base/log.h"
#include "base/out.h"

#include <errno.h>
#include <locale.h>
#include <math.h>
#include <string.h>

#define PLOT_W 1120
#define PANEL_W 450		/* plot area of one panel */
#define PANEL_H 360
#define PANEL_TOP 70
#define PANEL_LEFT0 80		/* left edge of the first plot area */
#define PANEL_LEFT1 (PANEL_LEFT0 + PANEL_W + 120)
#define LEGEND_COLS 4
#define LEGEND_ROW_H 22
#define LEGEND_LABEL_MAX 40	/* characters shown in the legend */

/* Okabe-Ito colours (distinguishable with the common colour-vision deficiencies), yellow darkened. */
static const char *const palette[] = { "#0072B2", "#D55E00", "#009E73", "#CC79A7",
				       "#E69F00", "#56B4E9", "#000000", "#B8A000" };
static const char *const dashes[] = { "", "8,4", "2,3" };
/* Markers centred on 0,0; the last one is stroked, not filled. */
static const char *const markers[] = {
	"M-3.5,0a3.5,3.5 0 1,0 7,0a3.5,3.5 0 1,0 -7,0Z", /* circle */
	"M-3.2,-3.2h6.4v6.4h-6.4Z",			   /* square */
	"M0,-4.2L3.8,3.2H-3.8Z",			   /* triangle */
	"M0,-4.5L4,0L0,4.5L-4,0Z",			   /* diamond */
	"M0,4.2L3.8,-3.2H-3.8Z",			   /* triangle down */
	"M-3.5,-3.5L3.5,3.5M-3.5,3.5L3.5,-3.5",		   /* cross */
};
#define NMARKERS (sizeof(markers) / sizeof(markers[0]))
#define NCOLOURS (sizeof(palette) / sizeof(palette[0]))

static const char *series_colour(size_t i) { return palette[i % NCOLOURS]; }
/* colour, marker and dash together tell twelve series apart */
static size_t series_marker(size_t i) { return i % NMARKERS; }
static const char *series_dash(size_t i) { return dashes[(i / 4) % 3]; }

/* A log-scale axis: value v is drawn at lo + (log(v) - l0) / (l1 - l0) * (hi - lo). */
struct axis {
	double l0, l1;	/* log2 (x) or log10 (y) of the range ends */
	double lo, hi;	/* pixels */
	int base2;
};

static double axis_log(const struct axis *a, double v)
{
	return a->base2 ? log2(v) : log10(v);
}

static double axis_pos(const struct axis *a, double v)
{
	return a->lo + (axis_log(a, v) - a->l0) / (a->l1 - a->l0) * (a->hi - a->lo);
}

static int usable(double v)
{
	return isfinite(v) && v > 0;
}

enum panel_kind { PANEL_BUSBW, PANEL_TIME };

static double point_value(const struct pn_plot_point *pt, enum panel_kind k)
{
	return k == PANEL_BUSBW ? pt->busbw_gbps : pt->time_us;
}

static int point_usable(const struct pn_plot_point *pt, enum panel_kind k)
{
	return usable(pt->size_bytes) && usable(point_value(pt, k));
}

const char *pn_plot_size_label(char *buf, size_t len, int e)
{
	static const char units[] = "KMGTPE";

	if (e < 0) {
		snprintf(buf, len, "1/%.0f", ldexp(1.0, -e));
	} else if (e < 10) {
		snprintf(buf, len, "%d", 1 << e);
	} else {
		int u = e / 10 > 6 ? 6 : e / 10;

		snprintf(buf, len, "%.0f%c", ldexp(1.0, e - 10 * u), units[u - 1]);
	}
	return buf;
}

/* Tick label of m * 10^d (m in 1, 2, 5): "0.01", "0.5", "1", "20", "1000", "1e+06". */
static const char *decade_label(char *buf, size_t len, int m, int d)
{
	if (d >= 6 || d <= -5)
		snprintf(buf, len, "%de%+d", m, d);
	else if (d >= 0)
		snprintf(buf, len, "%.0f", m * pow(10, d));
	else
		snprintf(buf, len, "%.*f", -d, m * pow(10, d));
	return buf;
}

/* The range of the usable values of one panel; 0 if there are none. */
static int panel_range(const struct pn_plot *p, enum panel_kind k, double *xmin, double *xmax,
		       double *ymin, double *ymax)
{
	int any = 0;

	*xmin = *ymin = INFINITY;
	*xmax = *ymax = -INFINITY;
	for (size_t s = 0; s < p->nseries; s++) {
		for (size_t i = 0; i < p->series[s].n; i++) {
			const struct pn_plot_point *pt = &p->series[s].pts[i];

			if (!point_usable(pt, k))
				continue;
			any = 1;
			*xmin = fmin(*xmin, pt->size_bytes);
			*xmax = fmax(*xmax, pt->size_bytes);
			*ymin = fmin(*ymin, point_value(pt, k));
			*ymax = fmax(*ymax, point_value(pt, k));
		}
	}
	return any;
}

static void x_axis(FILE *f, const struct axis *x, double top, double bottom)
{
	int e0 = (int)x->l0, e1 = (int)x->l1, span = e1 - e0;
	int step = span <= 10 ? 1 : span <= 20 ? 2 : span <= 50 ? 5 : 10;
	char lab[16];

	for (int e = e0; e <= e1; e++) {
		double px = x->lo + (double)(e - e0) / (x->l1 - x->l0) * (x->hi - x->lo);

		/* a short tick at every power of two, grid and label every step */
		if ((e % step + step) % step) {
			fprintf(f, "<line class=\"tick\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n",
				px, bottom, px, bottom + 3);
			continue;
		}
		fprintf(f, "<line class=\"grid\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n",
			px, top, px, bottom);
		fprintf(f, "<line class=\"tick\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n",
			px, bottom, px, bottom + 5);
		fprintf(f, "<text class=\"xtick\" x=\"%.1f\" y=\"%.1f\">%s</text>\n", px, bottom + 19,
			pn_plot_size_label(lab, sizeof(lab), e));
	}
}

static void y_axis(FILE *f, const struct axis *y, double left, double right)
{
	static const int all[] = { 1, 2, 5 };
	int d0 = (int)y->l0, d1 = (int)y->l1, span = d1 - d0;
	int nm = span <= 2 ? 3 : 1, step = span <= 8 ? 1 : 2;
	char lab[32];

	for (int d = d0; d <= d1; d++) {
		if ((d % step + step) % step)
			continue;
		for (int j = 0; j < nm; j++) {
			double v = all[j] * pow(10, d), py;

			if (log10(v) > y->l1 + 1e-9)
				break;
			py = axis_pos(y, v);
			fprintf(f, "<line class=\"%s\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n",
				j ? "grid minor" : "grid", left, py, right, py);
			fprintf(f, "<line class=\"tick\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n",
				left - 5, py, left, py);
			fprintf(f, "<text class=\"ytick\" x=\"%.1f\" y=\"%.1f\">%s</text>\n", left - 8,
				py + 4, decade_label(lab, sizeof(lab), all[j], d));
		}
	}
}

/* Lines (broken where a point is unusable), then markers with a tooltip each. */
static void panel_series(FILE *f, const struct pn_plot *p, enum panel_kind k,
			 const struct axis *x, const struct axis *y)
{
	char lab[16];

	for (size_t s = 0; s < p->nseries; s++) {
		const struct pn_plot_series *se = &p->series[s];
		const char *dash = series_dash(s);
		int open = 0;

		fprintf(f, "<g class=\"series\" stroke=\"%s\" fill=\"%s\">\n", series_colour(s),
			series_colour(s));
		for (size_t i = 0; i < se->n; i++) {
			const struct pn_plot_point *pt = &se->pts[i];

			if (!point_usable(pt, k)) {
				if (open)
					fputs("\"/>\n", f);
				open = 0;
				continue;
			}
			if (!open)
				fprintf(f, "<polyline class=\"line\"%s%s%s points=\"", *dash ? " stroke-dasharray=\"" : "",
					dash, *dash ? "\"" : "");
			fprintf(f, "%s%.1f,%.1f", open ? " " : "", axis_pos(x, pt->size_bytes),
				axis_pos(y, point_value(pt, k)));
			open = 1;
		}
		if (open)
			fputs("\"/>\n", f);
		for (size_t i = 0; i < se->n; i++) {
			const struct pn_plot_point *pt = &se->pts[i];
			double e;

			if (!point_usable(pt, k))
				continue;
			fprintf(f, "<use xlink:href=\"#m%zu\" x=\"%.1f\" y=\"%.1f\"><title>", series_marker(s),
				axis_pos(x, pt->size_bytes), axis_pos(y, point_value(pt, k)));
			pn_xml_put(f, se->label);
			e = log2(pt->size_bytes);
			if (e == floor(e) && fabs(e) < 60)
				fprintf(f, ": %s B", pn_plot_size_label(lab, sizeof(lab), (int)e));
			else
				fprintf(f, ": %.0f B", pt->size_bytes);
			if (k == PANEL_BUSBW)
				fprintf(f, ", %.3g GB/s</title></use>\n", pt->busbw_gbps);
			else
				fprintf(f, ", %.3g &#181;s</title></use>\n", pt->time_us);
		}
		fputs("</g>\n", f);
	}
}

static void panel(FILE *f, const struct pn_plot *p, enum panel_kind k, double left)
{
	double top = PANEL_TOP, bottom = PANEL_TOP + PANEL_H, right = left + PANEL_W;
	double xmin, xmax, ymin, ymax;
	struct axis x = { 0, 0, left, right, 1 }, y = { 0, 0, bottom, top, 0 };
	const char *name = k == PANEL_BUSBW ? "Bus bandwidth" : "Time";
	const char *ylabel = k == PANEL_BUSBW ? "bus bandwidth (GB/s)" : "time (&#181;s)";

	fprintf(f, "<g class=\"panel\" id=\"%s\">\n", k == PANEL_BUSBW ? "busbw" : "time");
	fprintf(f, "<text class=\"ptitle\" x=\"%.1f\" y=\"%.1f\">%s</text>\n", left + PANEL_W / 2.0,
		top - 12, name);
	fprintf(f, "<text class=\"label\" x=\"%.1f\" y=\"%.1f\">message size (bytes)</text>\n",
		left + PANEL_W / 2.0, bottom + 42);
	fprintf(f, "<text class=\"label\" transform=\"translate(%.1f,%.1f) rotate(-90)\">%s</text>\n",
		left - 58, top + PANEL_H / 2.0, ylabel);
	if (!panel_range(p, k, &xmin, &xmax, &ymin, &ymax)) {
		fprintf(f, "<rect class=\"frame\" x=\"%.1f\" y=\"%.1f\" width=\"%d\" height=\"%d\"/>\n",
			left, top, PANEL_W, PANEL_H);
		fprintf(f, "<text class=\"nodata\" x=\"%.1f\" y=\"%.1f\">no data</text>\n</g>\n",
			left + PANEL_W / 2.0, top + PANEL_H / 2.0);
		return;
	}
	/* whole powers of two / decades at the ends; at least one step wide */
	x.l0 = floor(log2(xmin));
	x.l1 = ceil(log2(xmax));
	if (x.l1 <= x.l0)
		x.l1 = x.l0 + 1;
	y.l0 = floor(log10(ymin));
	y.l1 = ceil(log10(ymax));
	if (y.l1 <= y.l0)
		y.l1 = y.l0 + 1;
	x_axis(f, &x, top, bottom);
	y_axis(f, &y, left, right);
	fprintf(f, "<rect class=\"frame\" x=\"%.1f\" y=\"%.1f\" width=\"%d\" height=\"%d\"/>\n", left,
		top, PANEL_W, PANEL_H);
	panel_series(f, p, k, &x, &y);
	fputs("</g>\n", f);
}

static void legend(FILE *f, const struct pn_plot *p, double top)
{
	double colw = (double)PLOT_W / LEGEND_COLS;

	fputs("<g class=\"legend\">\n", f);
	for (size_t s = 0; s < p->nseries; s++) {
		double x = 20 + colw * (double)(s % LEGEND_COLS);
		double y = top + LEGEND_ROW_H * (double)(s / LEGEND_COLS);
		const char *label = p->series[s].label ? p->series[s].label : "";
		const char *dash = series_dash(s);
		char shown[LEGEND_LABEL_MAX + 4];

		if (strlen(label) > LEGEND_LABEL_MAX)
			snprintf(shown, sizeof(shown), "%.*s...", LEGEND_LABEL_MAX - 3, label);
		else
			snprintf(shown, sizeof(shown), "%s", label);
		fprintf(f, "<g stroke=\"%s\" fill=\"%s\">", series_colour(s), series_colour(s));
		fprintf(f, "<line class=\"line\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"%s%s%s/>",
			x, y, x + 36, y, *dash ? " stroke-dasharray=\"" : "", dash, *dash ? "\"" : "");
		fprintf(f, "<use xlink:href=\"#m%zu\" x=\"%.1f\" y=\"%.1f\"/></g>", series_marker(s),
			x + 18, y);
		fprintf(f, "<text class=\"legend\" x=\"%.1f\" y=\"%.1f\">", x + 44, y + 4);
		pn_xml_put(f, shown);
		fputs("</text>\n", f);
	}
	fputs("</g>\n", f);
}

/* The document's start: prolog, <svg> (with the xlink namespace for <use>
 * markers), and the style both plots share followed by CSS, the plot's own. */
static void svg_begin(FILE *f, int width, double height, int xlink, const char *css)
{
	fputs("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n", f);
	fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" %sversion=\"1.1\" width=\"%d\" "
		   "height=\"%.0f\" viewBox=\"0 0 %d %.0f\">\n",
		xlink ? "xmlns:xlink=\"http://www.w3.org/1999/xlink\" " : "", width, height, width,
		height);
	fputs("<style>\n"
	      "text { font-family: DejaVu Sans, Helvetica, Arial, sans-serif; font-size: 12px; "
	      "fill: #222; stroke: none; }\n"
	      ".title { font-size: 17px; font-weight: bold; text-anchor: middle; }\n"
	      ".ptitle { font-size: 14px; font-weight: bold; text-anchor: middle; }\n"
	      ".label { font-size: 13px; text-anchor: middle; }\n"
	      ".xtick { text-anchor: middle; } .ytick { text-anchor: end; }\n",
	      f);
	fputs(css, f);
	fputs("</style>\n", f);
}

/* The white page and the title over it. */
static void svg_title(FILE *f, int width, double height, const char *title)
{
	fprintf(f, "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%.0f\" fill=\"#fff\"/>\n", width,
		height);
	fprintf(f, "<text class=\"title\" x=\"%d\" y=\"28\">", width / 2);
	pn_xml_put(f, title ? title : "");
	fputs("</text>\n", f);
}

static void write_svg(FILE *f, const struct pn_plot *p)
{
	size_t rows = (p->nseries + LEGEND_COLS - 1) / LEGEND_COLS;
	double legend_top = PANEL_TOP + PANEL_H + 72;
	double height = legend_top + (double)rows * LEGEND_ROW_H + 8;

	svg_begin(f, PLOT_W, height, 1,
		  ".nodata { font-size: 14px; text-anchor: middle; fill: #888; }\n"
		  ".frame { fill: none; stroke: #444; stroke-width: 1; }\n"
		  ".grid { stroke: #ddd; stroke-width: 1; } .grid.minor { stroke: #eee; }\n"
		  ".tick { stroke: #444; stroke-width: 1; }\n"
		  ".line { fill: none; stroke-width: 2; }\n"
		  "use { stroke-width: 1.2; }\n");
	fputs("<defs>\n", f);
	for (size_t m = 0; m < NMARKERS; m++)
		fprintf(f, "<path id=\"m%zu\" d=\"%s\"%s/>\n", m, markers[m],
			m == NMARKERS - 1 ? " fill=\"none\" stroke-width=\"2\"" : "");
	fputs("</defs>\n", f);
	svg_title(f, PLOT_W, height, p->title);
	panel(f, p, PANEL_BUSBW, PANEL_LEFT0);
	panel(f, p, PANEL_TIME, PANEL_LEFT1);
	legend(f, p, legend_top);
	fputs("</svg>\n", f);
}

/* ---- time plot (top --plot) ---- */

#define TPANEL_W 900
#define TPANEL_H 220
#define TPANEL_LEFT 90
#define TPANEL_GAP 70
#define TPLOT_W (TPANEL_LEFT + TPANEL_W + 30)

/* A step of 1, 2 or 5 times a power of ten that cuts span in about 5. */
static double nice_step(double span)
{
	double p = pow(10, floor(log10(span / 5))), m = span / 5 / p;

	return p * (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10);
}

static void tpanel(FILE *f, const struct pn_tplot_panel *pn, double top, double tmax)
{
	double bottom = top + TPANEL_H, left = TPANEL_LEFT, right = left + TPANEL_W;
	double ymax = 0, step, v;
	size_t s, i;

	for (s = 0; s < pn->nseries; s++)
		for (i = 0; i < pn->series[s].n; i++)
			if (isfinite(pn->series[s].y[i]) && pn->series[s].y[i] > ymax)
				ymax = pn->series[s].y[i];
	if (!(ymax > 0))
		ymax = 1;
	step = nice_step(ymax);
	ymax = ceil(ymax / step) * step;
	fprintf(f, "<g class=\"panel\">\n<text class=\"ptitle\" x=\"%.1f\" y=\"%.1f\">", left + TPANEL_W / 2.0,
		top - 10);
	pn_xml_put(f, pn->title);
	fputs("</text>\n", f);
	fprintf(f, "<text class=\"label\" transform=\"translate(%.1f,%.1f) rotate(-90)\">", left - 62,
		top + TPANEL_H / 2.0);
	pn_xml_put(f, pn->ylabel);
	fputs("</text>\n", f);
	for (v = 0; v <= ymax + step / 2; v += step) {
		double py = bottom - v / ymax * TPANEL_H;

		fprintf(f, "<line class=\"grid\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", left, py,
			right, py);
		fprintf(f, "<text class=\"ytick\" x=\"%.1f\" y=\"%.1f\">%g</text>\n", left - 8, py + 4, v);
	}
	step = nice_step(tmax);
	for (v = 0; v <= tmax + step / 2; v += step) {
		double px = left + v / tmax * TPANEL_W;

		fprintf(f, "<line class=\"tick\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", px,
			bottom, px, bottom + 5);
		fprintf(f, "<text class=\"xtick\" x=\"%.1f\" y=\"%.1f\">%g</text>\n", px, bottom + 19, v);
	}
	fprintf(f, "<text class=\"label\" x=\"%.1f\" y=\"%.1f\">time (s)</text>\n", left + TPANEL_W / 2.0,
		bottom + 38);
	fprintf(f, "<rect class=\"frame\" x=\"%.1f\" y=\"%.1f\" width=\"%d\" height=\"%d\"/>\n", left, top,
		TPANEL_W, TPANEL_H);
	for (s = 0; s < pn->nseries; s++) {
		const struct pn_tplot_series *se = &pn->series[s];
		int open = 0;

		fprintf(f, "<path class=\"line\" stroke=\"%s\"%s d=\"",
			se->colour >= 0 ? series_colour((size_t)se->colour) : "#888888",
			se->dashed ? " stroke-dasharray=\"6,3\"" : "");
		for (i = 0; i < se->n; i++) {
			if (!isfinite(se->y[i]) || !isfinite(se->t[i])) {
				open = 0;
				continue;
			}
			fprintf(f, "%s%.1f,%.1f", open ? " L" : (i ? " M" : "M"),
				left + se->t[i] / tmax * TPANEL_W, bottom - se->y[i] / ymax * TPANEL_H);
			open = 1;
		}
		fputs("\"><title>", f);
		pn_xml_put(f, se->label);
		fputs("</title></path>\n", f);
	}
	fputs("</g>\n", f);
}

static void write_tsvg(FILE *f, const struct pn_tplot *p)
{
	double tmax = 0, legend_top = 60 + (double)p->npanels * (TPANEL_H + TPANEL_GAP);
	/* one legend entry a line: it names what its colour draws */
	double height = legend_top + (p->nlegend ? 12 + 18 * (double)p->nlegend : 0) + 10;
	size_t k, s, i;

	for (k = 0; k < p->npanels; k++)
		for (s = 0; s < p->panels[k].nseries; s++)
			for (i = 0; i < p->panels[k].series[s].n; i++)
				if (isfinite(p->panels[k].series[s].t[i]))
					tmax = fmax(tmax, p->panels[k].series[s].t[i]);
	if (!(tmax > 0))
		tmax = 1;
	svg_begin(f, TPLOT_W, height, 0,
		  ".frame { fill: none; stroke: #444; stroke-width: 1; }\n"
		  ".grid { stroke: #ddd; stroke-width: 1; } .tick { stroke: #444; stroke-width: 1; }\n"
		  ".line { fill: none; stroke-width: 1.5; }\n");
	svg_title(f, TPLOT_W, height, p->title);
	for (k = 0; k < p->npanels; k++)
		tpanel(f, &p->panels[k], 70 + (double)k * (TPANEL_H + TPANEL_GAP), tmax);
	fputs("<g class=\"legend\">\n", f);
	for (k = 0; k < p->nlegend; k++) {
		double x = 20, y = legend_top + 10 + 18 * (double)k;

		fprintf(f, "<line class=\"line\" stroke=\"%s\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>",
			series_colour(k), x, y, x + 24, y);
		fprintf(f, "<text x=\"%.1f\" y=\"%.1f\">", x + 30, y + 4);
		pn_xml_put(f, p->legend[k]);
		fputs("</text>\n", f);
	}
	fputs("</g>\n</svg>\n", f);
}

/* both writers: numbers in the C locale, one message on a write error */
static int in_c_locale(FILE *f, void (*write)(FILE *, const void *), const void *p)
{
	locale_t c = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
	locale_t old = c ? uselocale(c) : (locale_t)0;

	write(f, p);
	if (c) {
		uselocale(old);
		freelocale(c);
	}
	if (fflush(f) || ferror(f))
		return pn_err(-EIO, "cannot write the plot: %s", strerror(errno ? errno : EIO));
	return 0;
}

static void write_svg_v(FILE *f, const void *p)
{
	write_svg(f, p);
}

static void write_tsvg_v(FILE *f, const void *p)
{
	write_tsvg(f, p);
}

int pn_plot_svg(FILE *f, const struct pn_plot *p)
{
	return in_c_locale(f, write_svg_v, p);
}

int pn_plot_time_svg(FILE *f, const struct pn_tplot *p)
{
	return in_c_locale(f, write_tsvg_v, p);
}
