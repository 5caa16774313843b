/* SPDX-License-Identifier: MIT */
/*
 * The SVG plot of `penny top` (topplot.h): a recording's series turned into
 * the panels and colours of base/plot's time plot.
 */
#include "top/topplot.h"
#include "base/log.h"
#include "base/ofile.h"
#include "base/plot.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NRAIL_COLOURS 8
#define LEGEND_LEN 160

/* Append name to a legend label, after ", " unless the label is empty or
 * ends in a space ("rail 0: ", "; "); a label too long ends in "..." */
static void legend_add(char *l, const char *name)
{
	size_t n = strlen(l);

	if (!*name || (n >= 3 && !strcmp(l + n - 3, "...")))
		return;
	snprintf(l + n, LEGEND_LEN - n, "%s%s", n && l[n - 1] != ' ' && *name != ';' ? ", " : "",
		 name);
	if (strlen(l) >= LEGEND_LEN - 4)
		memcpy(l + LEGEND_LEN - 4, "...", 4);
}

static void to_gbps(double *v, int n)
{
	int i;

	for (i = 0; i < n; i++)
		v[i] = v[i] * 8 / 1e9;
}

int pn_topplot_write(const struct pn_replay *r, const char *path, const char *title)
{
	static const char *const titles[4] = { "NIC RX", "NIC TX", "GPU NVLink RX", "GPU NVLink TX" };
	struct pn_tplot_series *ts = NULL;
	struct pn_tplot_panel panels[4];
	struct pn_replay_series *ss;
	char labels[NRAIL_COLOURS][LEGEND_LEN] = { { 0 } }, gpus[NRAIL_COLOURS][LEGEND_LEN] = { { 0 } };
	const char *legend[NRAIL_COLOURS];
	int railn[NRAIL_COLOURS * 64] = { 0 };
	struct pn_ofile *of;
	int n, i, k, ngpu = 0, nport = 0, maxrail = -1, ret, nlegend = 0;
	size_t np = 0;

	ret = pn_replay_series(r, &ss, &n);
	if (ret)
		return ret;
	if (n)
		ts = calloc((size_t)n * 2, sizeof(*ts));
	if (n && !ts) {
		pn_replay_series_free(ss, n);
		return pn_err(-ENOMEM, "out of memory");
	}
	for (i = 0; i < n; i++) {
		to_gbps(ss[i].rx, ss[i].npts);
		to_gbps(ss[i].tx, ss[i].npts);
		if (ss[i].rail == -2)
			ngpu++;
		else
			nport++;
		if (ss[i].rail > maxrail)
			maxrail = ss[i].rail;
	}
	/* ports: [0, nport) RX, [nport, 2 nport) TX; GPUs after them */
	for (k = 0; k < 4; k++) {
		int gpu = k >= 2, base = (int)np;

		for (i = 0; i < n; i++) {
			struct pn_replay_series *s = &ss[i];
			struct pn_tplot_series *t = &ts[np];

			if ((s->rail == -2) != gpu)
				continue;
			t->label = s->name;
			t->t = s->t;
			t->y = k % 2 ? s->tx : s->rx;
			t->n = (size_t)s->npts;
			if (gpu) {
				t->colour = (int)(np - (size_t)base);
			} else if (maxrail < 0) {
				/* no rails known: a colour a port */
				t->colour = (int)(np - (size_t)base) % NRAIL_COLOURS;
			} else if (s->rail >= 0) {
				t->colour = s->rail % NRAIL_COLOURS;
				if (k == 0 && s->rail < (int)(sizeof(railn) / sizeof(railn[0])))
					railn[s->rail]++;
				t->dashed = s->rail < (int)(sizeof(railn) / sizeof(railn[0])) &&
					    railn[s->rail] > 1 && k == 0;
			} else {
				t->colour = -1;
			}
			np++;
		}
		panels[k] = (struct pn_tplot_panel){ titles[k], "Gb/s", &ts[base], np - (size_t)base };
	}
	/* TX panel: the same dashes as RX */
	for (i = 0; i < nport; i++)
		ts[nport + i].dashed = ts[i].dashed;
	/* the legend names what each colour draws: "rail 0: mlx5_0/1, mlx5_2/1"
	 * (the ports themselves when no rail is known), then "; GPU0" */
	for (k = 0; k <= maxrail && k < NRAIL_COLOURS; k++)
		snprintf(labels[k], LEGEND_LEN, maxrail < NRAIL_COLOURS ? "rail %d: " : "rails %d+%dn: ",
			 k, NRAIL_COLOURS);
	for (i = 0; i < 2 * nport + ngpu; i++) {
		const struct pn_tplot_series *t = &ts[i];
		int c = t->colour % NRAIL_COLOURS;	/* the palette wraps */

		if (t->colour < 0 || (i >= nport && i < 2 * nport))	/* TX: as RX */
			continue;
		legend_add(i < nport ? labels[c] : gpus[c], t->label);
		if (c + 1 > nlegend)
			nlegend = c + 1;
	}
	if (maxrail >= 0 && nlegend < maxrail + 1)
		nlegend = maxrail + 1 < NRAIL_COLOURS ? maxrail + 1 : NRAIL_COLOURS;
	for (k = 0; k < nlegend; k++) {
		if (gpus[k][0] && labels[k][0])
			legend_add(labels[k], "; ");
		legend_add(labels[k], gpus[k]);
		legend[k] = labels[k];
	}
	ret = pn_ofile_open(&of, path, 0);
	if (!ret) {
		struct pn_tplot p = { title, panels, ngpu ? 4 : 2, legend, (size_t)nlegend };

		ret = pn_plot_time_svg(pn_ofile_file(of), &p);
		if (ret)
			pn_ofile_abort(of);
		else
			ret = pn_ofile_commit(of);
	}
	free(ts);
	pn_replay_series_free(ss, n);
	return ret;
}
