/* SPDX-License-Identifier: MIT */
/*
 * penny top's GPU rows: NVLink and PCIe throughput per GPU from NVML's
 * cumulative counters (rates, wraps and resets here; NVML in nvml.c), and
 * their Prometheus exposition.
 */
#include "top/gputraffic.h"
#include "node/nvml.h"
#include "top/record.h"
#include "node/sysfs.h"
#include "base/out.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

int pn_gputraffic_open(struct pn_gputraffic *g)
{
	char why[120] = "";
	int i, n, ret;

	memset(g, 0, sizeof(*g));
	/* a replayed sysfs root is another machine: the live NVML does not
	 * describe it (a test's fake one, PENNY_NVML_LIB, does) */
	if (!pn_sysfs_is_live() && !pn_nvml_forced())
		return 0;
	ret = pn_nvml_open(&g->nvml, why, sizeof(why));
	if (ret == -ENOMEM)
		return ret;
	if (ret) {
		snprintf(g->note, sizeof(g->note), "no GPU rows: %s", why);
		return 0;
	}
	n = pn_nvml_count(g->nvml);
	g->gpus = calloc((size_t)n, sizeof(*g->gpus));
	if (!g->gpus) {
		pn_gputraffic_close(g);
		return -ENOMEM;
	}
	for (i = 0; i < n; i++) {
		struct pn_gpu_row *r = &g->gpus[g->n];
		int k;

		if (pn_nvml_gpu(g->nvml, i, r->name, sizeof(r->name), r->busid, sizeof(r->busid)))
			continue;
		r->index = i;
		for (k = 0; k < PN_GT_N; k++)
			r->Bps[k] = NAN;
		g->n++;
	}
	if (!g->n) {
		snprintf(g->note, sizeof(g->note), "no GPU rows: NVML answered for no GPU");
		pn_gputraffic_close(g); /* the note stays */
	}
	return 0;
}

void pn_gputraffic_close(struct pn_gputraffic *g)
{
	pn_nvml_close(g->nvml);
	g->nvml = NULL;
	free(g->gpus);
	g->gpus = NULL;
	g->n = 0;
}

unsigned pn_gputraffic_delta(uint64_t prev, uint64_t cur, int width, uint64_t *d)
{
	uint64_t max = width >= 64 || width <= 0 ? UINT64_MAX : (1ull << width) - 1;
	uint64_t wrapped;

	if (cur >= prev) {
		*d = cur - prev;
		return 0;
	}
	wrapped = (max - prev) + cur + 1;
	if (prev <= max && wrapped <= max / 2) {
		*d = wrapped;
		return PN_GT_WRAP;
	}
	*d = 0;
	return PN_GT_RESET;
}

static void step(struct pn_gpu_row *r, int k, uint64_t raw, int width, uint64_t scale, double secs)
{
	uint64_t d;
	unsigned f;

	r->valid[k] = 1;
	r->Bps[k] = NAN;
	if (r->had[k] && r->width[k] == width) {
		f = pn_gputraffic_delta(r->raw[k], raw, width, &d);
		r->flags |= f;
		if (f != PN_GT_RESET) {
			r->bytes[k] += d * scale;
			if (secs > 0)
				r->Bps[k] = (double)(d * scale) / secs;
		}
	}
	r->raw[k] = raw;
	r->width[k] = width;
	r->had[k] = 1;
}

void pn_gputraffic_sample(struct pn_gputraffic *g, uint64_t now_ns)
{
	double secs = g->t_ns && now_ns > g->t_ns ? (double)(now_ns - g->t_ns) / 1e9 : 0;
	int i, k;

	g->elapsed = secs;
	g->t_ns = now_ns;
	g->seq++;
	for (i = 0; i < g->n; i++) {
		struct pn_gpu_row *r = &g->gpus[i];
		struct pn_nvml_ctr c;

		r->flags = 0;
		for (k = 0; k < PN_GT_N; k++)
			r->valid[k] = 0;
		if (pn_nvml_read(g->nvml, r->index, &c, 1)) {
			for (k = 0; k < PN_GT_N; k++) {
				r->Bps[k] = NAN;
				r->had[k] = 0;
			}
			continue;
		}
		for (k = 0; k < PN_GT_N; k++) {
			/* NVLink counts KiB, the PCIe counters bytes */
			uint64_t scale = k < PN_GT_PCIE_TX ? 1024 : 1;

			if (c.width[k])
				step(r, k, c.value[k], c.width[k], scale, secs);
			else
				r->Bps[k] = NAN, r->had[k] = 0;
		}
		r->pcie_src = c.width[PN_NVML_PCIE_TX] ? PN_GT_SRC_COUNTERS : PN_GT_SRC_NONE;
		for (k = 0; k < 2; k++)
			if (!c.width[PN_NVML_PCIE_TX + k] && c.pcie_KBps[k] >= 0) {
				r->Bps[PN_GT_PCIE_TX + k] = c.pcie_KBps[k] * 1024;
				r->valid[PN_GT_PCIE_TX + k] = 1;
				r->pcie_src = PN_GT_SRC_SAMPLED;
			}
	}
}

/* ---- Prometheus ---- */

static const struct {
	const char *name, *type, *help;
	int k;		/* PN_GT_*; -1 info */
	int total;	/* the byte total, else the rate */
} gmetrics[] = {
	{ "penny_gpu_info", "gauge", "GPU attributes as labels (value 1).", -1, 0 },
	/* a rate only where no counter is: NVML's sampled PCIe throughput */
	{ "penny_gpu_pcie_transmitted_bytes_per_second", "gauge",
	  "PCIe bytes sent by the GPU over the last interval, where no PCIe counter is "
	  "(nvmlDeviceGetPcieThroughput over 20 ms).", PN_GT_PCIE_TX, 0 },
	{ "penny_gpu_pcie_received_bytes_per_second", "gauge",
	  "PCIe bytes received by the GPU over the last interval, where no PCIe counter is "
	  "(nvmlDeviceGetPcieThroughput over 20 ms).", PN_GT_PCIE_RX, 0 },
	{ "penny_gpu_nvlink_transmitted_bytes_total", "counter",
	  "NVLink data sent since penny top started (NVML field 138).", PN_GT_NVL_TX, 1 },
	{ "penny_gpu_nvlink_received_bytes_total", "counter",
	  "NVLink data received since penny top started (NVML field 139).", PN_GT_NVL_RX, 1 },
	{ "penny_gpu_pcie_transmitted_bytes_total", "counter",
	  "PCIe bytes sent since penny top started (PCIe counters only).", PN_GT_PCIE_TX, 1 },
	{ "penny_gpu_pcie_received_bytes_total", "counter",
	  "PCIe bytes received since penny top started (PCIe counters only).", PN_GT_PCIE_RX, 1 },
};

void pn_gputraffic_prom_write(FILE *f, const struct pn_gputraffic *g)
{
	size_t m;
	int i;

	if (!g || !g->n)
		return;
	for (m = 0; m < sizeof(gmetrics) / sizeof(gmetrics[0]); m++) {
		fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", gmetrics[m].name, gmetrics[m].help,
			gmetrics[m].name, gmetrics[m].type);
		for (i = 0; i < g->n; i++) {
			const struct pn_gpu_row *r = &g->gpus[i];
			int k = gmetrics[m].k;
			char idx[16];
			double v = 1;

			if (k >= 0 && gmetrics[m].total) {
				if (!r->had[k] || (k >= PN_GT_PCIE_TX && r->pcie_src != PN_GT_SRC_COUNTERS))
					continue;
				v = (double)r->bytes[k];
			} else if (k >= 0) {
				if (r->pcie_src == PN_GT_SRC_COUNTERS)
					continue;
				v = r->Bps[k];
				if (!isfinite(v))
					continue;
			}
			snprintf(idx, sizeof(idx), "%d", r->index);
			fprintf(f, "%s{", gmetrics[m].name);
			pn_prom_label(f, "gpu", idx, 1);
			pn_prom_label(f, "bus_id", r->busid, 0);
			if (k < 0)
				pn_prom_label(f, "name", r->name, 0);
			if (v == floor(v) && fabs(v) < 1e18)
				fprintf(f, "} %.0f\n", v);
			else
				fprintf(f, "} %.10g\n", v);
		}
	}
}

int pn_gputraffic_to_record(const struct pn_gputraffic *g, struct pn_record_gpu *out)
{
	int i, n = g && g->n < PN_RECORD_GPUS_MAX ? g->n : g ? PN_RECORD_GPUS_MAX : 0;

	for (i = 0; i < n; i++) {
		const struct pn_gpu_row *x = &g->gpus[i];

		out[i].index = x->index;
		snprintf(out[i].name, sizeof(out[i].name), "%s", x->name);
		out[i].nvlink_tx_Bps = x->Bps[PN_GT_NVL_TX];
		out[i].nvlink_rx_Bps = x->Bps[PN_GT_NVL_RX];
		out[i].pcie_tx_Bps = x->Bps[PN_GT_PCIE_TX];
		out[i].pcie_rx_Bps = x->Bps[PN_GT_PCIE_RX];
	}
	return n;
}

struct pn_gputraffic *pn_gputraffic_from_record(const struct pn_record_sample *s,
						struct pn_gputraffic *g, struct pn_gpu_row *rows)
{
	int i;

	memset(g, 0, sizeof(*g));
	g->gpus = rows;
	g->n = s->ngpus < PN_RECORD_GPUS_MAX ? s->ngpus : PN_RECORD_GPUS_MAX;
	for (i = 0; i < g->n; i++) {
		const struct pn_record_gpu *x = &s->gpus[i];

		memset(&rows[i], 0, sizeof(rows[i]));
		rows[i].index = x->index;
		snprintf(rows[i].name, sizeof(rows[i].name), "%s", x->name);
		rows[i].Bps[PN_GT_NVL_TX] = x->nvlink_tx_Bps;
		rows[i].Bps[PN_GT_NVL_RX] = x->nvlink_rx_Bps;
		rows[i].Bps[PN_GT_PCIE_TX] = x->pcie_tx_Bps;
		rows[i].Bps[PN_GT_PCIE_RX] = x->pcie_rx_Bps;
	}
	return g;
}
