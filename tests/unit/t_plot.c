/* SPDX-License-Identifier: MIT */
/* The SVG plot writer of allreduce-test --plot (src/base/plot.c, compiled in here). */
#define _GNU_SOURCE
#include "unit.h"

#include "../../src/base/plot.c" /* its static helpers are tested too */

#include <stdlib.h>

/* Occurrences of needle in hay. */
static int count(const char *hay, const char *needle)
{
	int n = 0;

	for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

/* The SVG of p as a string (free it). */
static char *render(const struct pn_plot *p, int *rc)
{
	/* static: open_memstream keeps their addresses until fclose */
	static char *buf;
	static size_t len;
	FILE *f;

	buf = NULL;
	f = open_memstream(&buf, &len);

	*rc = pn_plot_svg(f, p);
	fclose(f);
	return buf;
}

static void make_points(struct pn_plot_point *pts, size_t n, double scale)
{
	for (size_t i = 0; i < n; i++) {
		pts[i].size_bytes = ldexp(8.0, (int)i);
		pts[i].time_us = 3.0 + pts[i].size_bytes / (scale * 1e3);
		pts[i].busbw_gbps = pts[i].size_bytes / pts[i].time_us / 1e3;
	}
}

TEST(size_labels)
{
	char b[16];
	static const struct { int e; const char *s; } want[] = {
		{ 0, "1" }, { 3, "8" }, { 9, "512" }, { 10, "1K" }, { 16, "64K" }, { 20, "1M" },
		{ 29, "512M" }, { 30, "1G" }, { 33, "8G" }, { 40, "1T" }, { -1, "1/2" },
	};

	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		CHECK_STR(pn_plot_size_label(b, sizeof(b), want[i].e), want[i].s);
	CHECK_STR(decade_label(b, sizeof(b), 1, -2), "0.01");
	CHECK_STR(decade_label(b, sizeof(b), 5, -1), "0.5");
	CHECK_STR(decade_label(b, sizeof(b), 2, 1), "20");
	CHECK_STR(decade_label(b, sizeof(b), 1, 3), "1000");
	CHECK_STR(decade_label(b, sizeof(b), 1, 7), "1e+7");
}

TEST(one_series)
{
	struct pn_plot_point pts[22];
	struct pn_plot_series s = { "ring", pts, 22 };
	struct pn_plot p = { "float <sum> & \"co\"", &s, 1 };
	char *svg;
	int rc;

	make_points(pts, 22, 20.0); /* 8 B .. 16 MiB */
	svg = render(&p, &rc);
	CHECK_EQ_INT(rc, 0);
	CHECK(!strncmp(svg, "<?xml", 5));
	CHECK(strstr(svg, "</svg>\n") && !strstr(svg, "</svg>\n")[7]);
	CHECK(strstr(svg, "float &lt;sum&gt; &amp; &quot;co&quot;"));
	CHECK(strstr(svg, ">ring</text>"));
	CHECK(strstr(svg, ">1K</text>") && strstr(svg, ">1M</text>"));
	CHECK(strstr(svg, "bus bandwidth (GB/s)") && strstr(svg, "time (&#181;s)"));
	CHECK(strstr(svg, "message size (bytes)"));
	CHECK_EQ_INT(count(svg, "<polyline"), 2);	/* one line per panel */
	CHECK_EQ_INT(count(svg, "<use xlink:href=\"#m0\""), 2 * 22 + 1); /* + legend */
	CHECK(!strstr(svg, "nan") && !strstr(svg, "inf"));
	free(svg);
}

/* NaN, 0, negative and infinite values are left out and break the line. */
TEST(gaps)
{
	struct pn_plot_point pts[10];
	struct pn_plot_series s = { "x", pts, 10 };
	struct pn_plot p = { "gaps", &s, 1 };
	char *svg, *time;
	int rc;

	make_points(pts, 10, 5.0);
	pts[3].busbw_gbps = NAN;	/* busbw panel: 2 lines */
	pts[5].time_us = 0;		/* time panel: 3 lines */
	pts[7].time_us = -4;
	pts[9].size_bytes = INFINITY;	/* both panels lose the last point */
	svg = render(&p, &rc);
	CHECK_EQ_INT(rc, 0);
	time = strstr(svg, "id=\"time\"");
	CHECK(time != NULL);
	if (time) {
		*time = '\0';
		CHECK_EQ_INT(count(svg, "<polyline"), 2);
		CHECK_EQ_INT(count(svg, "<title>"), 8);
		CHECK_EQ_INT(count(time + 1, "<polyline"), 3);
		CHECK_EQ_INT(count(time + 1, "<title>"), 7);
	}
	CHECK(!strstr(time + 1, "nan") && !strstr(svg, "nan") && !strstr(time + 1, "inf"));
	free(svg);
}

TEST(twelve_series)
{
	struct pn_plot_point pts[12][20];
	struct pn_plot_series s[12];
	char labels[12][32];
	struct pn_plot p = { "twelve", s, 12 };
	char *svg, *legend;
	int rc;

	for (int i = 0; i < 12; i++) {
		make_points(pts[i], 20, 10.0 + 7 * i);
		snprintf(labels[i], sizeof(labels[i]), "algo-%d", i);
		s[i] = (struct pn_plot_series){ labels[i], pts[i], 20 };
	}
	/* colour, marker, dash: no two series look alike; the first six differ in each */
	for (size_t i = 0; i < 12; i++)
		for (size_t j = i + 1; j < 12; j++)
			CHECK(strcmp(series_colour(i), series_colour(j)) ||
			      series_marker(i) != series_marker(j) || strcmp(series_dash(i), series_dash(j)));
	for (size_t i = 0; i < 6; i++)
		for (size_t j = i + 1; j < 6; j++)
			CHECK(strcmp(series_colour(i), series_colour(j)) && series_marker(i) != series_marker(j));
	svg = render(&p, &rc);
	CHECK_EQ_INT(rc, 0);
	legend = strstr(svg, "<g class=\"legend\">");
	CHECK(legend != NULL);
	for (int i = 0; legend && i < 12; i++) {
		char want[48];

		snprintf(want, sizeof(want), ">algo-%d</text>", i);
		CHECK(strstr(legend, want));
	}
	CHECK_EQ_INT(count(svg, "<polyline"), 24);
	CHECK(count(svg, "stroke-dasharray") >= 8 * 3);
	free(svg);
}

TEST(empty_and_errors)
{
	struct pn_plot p = { NULL, NULL, 0 };
	struct pn_plot_point pts[2] = { { NAN, 1, 1 }, { 0, 1, 1 } };
	struct pn_plot_series s = { NULL, pts, 2 };
	struct pn_plot q = { "no usable point", &s, 1 };
	char *svg;
	int rc;
	FILE *full;

	svg = render(&p, &rc);
	CHECK_EQ_INT(rc, 0);
	CHECK_EQ_INT(count(svg, ">no data</text>"), 2);
	free(svg);
	svg = render(&q, &rc);
	CHECK_EQ_INT(rc, 0);
	CHECK_EQ_INT(count(svg, ">no data</text>"), 2);
	free(svg);

	/* one point, a single value: still a sensible range */
	struct pn_plot_point one = { 4096, 5.5, 12 };
	struct pn_plot_series s1 = { "one", &one, 1 };
	struct pn_plot p1 = { "one point", &s1, 1 };
	svg = render(&p1, &rc);
	CHECK_EQ_INT(rc, 0);
	CHECK(strstr(svg, ">4K</text>") && !strstr(svg, "nan") && !strstr(svg, "inf"));
	free(svg);

	full = fopen("/dev/full", "w");
	if (full) {
		CHECK_EQ_INT(pn_plot_svg(full, &p1), -EIO);
		fclose(full);
	}
}

static const char *comma_locale;

/* A program with a decimal-comma locale still writes "1.5", not "1,5". */
/* Commas followed by a digit inside <title> elements (a decimal comma). */
static int comma_digits_in_titles(const char *svg)
{
	const char *t, *e, *q;
	int n = 0;

	for (t = svg; (t = strstr(t, "<title>")) && (e = strstr(t, "</title>")); t = e)
		for (q = t; q < e; q++)
			n += q[0] == ',' && q[1] >= '0' && q[1] <= '9';
	return n;
}

/* A locale with a decimal comma: an installed one, else de_DE built with
 * localedef into dir (LOCPATH); NULL when neither can be had. */
static const char *find_comma_locale(char *dir)
{
	static const char *const names[] = { "de_DE.UTF-8", "fr_FR.UTF-8" };
	char cmd[512];
	size_t i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (setlocale(LC_NUMERIC, names[i]))
			return names[i];
	if (!mkdtemp(dir))
		return NULL;
	snprintf(cmd, sizeof(cmd), "localedef -i de_DE -f UTF-8 %s/de_DE.UTF-8 >/dev/null 2>&1",
		 dir);
	if (system(cmd) != 0)
		return NULL;
	setenv("LOCPATH", dir, 1);
	return setlocale(LC_NUMERIC, names[0]) ? names[0] : NULL;
}

TEST(c_locale_numbers)
{
	struct pn_plot_point pts[5];
	struct pn_plot_series s = { "x", pts, 5 };
	struct pn_plot p = { "locale", &s, 1 };
	char *svg;
	int rc;

	setlocale(LC_NUMERIC, comma_locale);
	make_points(pts, 5, 3.0);
	svg = render(&p, &rc);
	setlocale(LC_NUMERIC, "C");
	CHECK_EQ_INT(rc, 0);
	CHECK(!strstr(svg, "x=\"80,0\"") && strstr(svg, "x=\"80.0\""));
	/* the points' titles (%.3g: "8 B, 0.00266 GB/s") have fractions, and
	 * none is written with a decimal comma */
	CHECK(count(svg, " GB/s</title>") == 5);
	CHECK_EQ_INT(comma_digits_in_titles(svg), 0);
	free(svg);
}

int main(void)
{
	char locdir[] = "/tmp/penny-t_plot-locale.XXXXXX";

	RUN(size_labels);
	RUN(one_series);
	RUN(gaps);
	RUN(twelve_series);
	RUN(empty_and_errors);
	comma_locale = find_comma_locale(locdir);
	setlocale(LC_NUMERIC, "C");
	if (comma_locale)
		RUN(c_locale_numbers);
	else
		printf("ok %d # skip c_locale_numbers: no de_DE/fr_FR locale, no localedef\n",
		       ++unit_n);
	if (strcmp(locdir + strlen(locdir) - 6, "XXXXXX")) {
		char cmd[300];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", locdir);
		if (system(cmd) != 0)
			printf("# could not remove %s\n", locdir);
	}
	return unit_done();
}
