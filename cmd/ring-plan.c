/* SPDX-License-Identifier: MIT */
/*
 * penny ring-plan: rail-aligned alternating rings for a cluster model
 * (synthetic shape or `penny topo --save` files), validated, printed as a
 * diagram or JSON, exported as NCCL graph XML; --check validates a plan
 * read back from JSON or from NCCL graph XML (NCCL's own dumps included).
 */
#define _GNU_SOURCE
#include "penny.h"

#include "base/log.h"
#include "base/minijson.h"
#include "base/ofile.h"
#include "plan/plan.h"
#include "plan/plan_job.h"
#include "engine/plansched.h"
#include "node/topo.h"
#include "base/util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct {
	int nodes, gpus, nics, gpus_per_nic, nvlinks, rings, summary, no_degrade;
	int show_schedule, schedule_rank;
	double nic_rate, pcie_rate;
	uint64_t schedule_size;
	const char *topo_files, *topo_xml, *rails, *hosts, *nccl_graph, *check;
} o = { .nics = -1, .nvlinks = -1, .schedule_size = 1 << 20 };

const struct pn_opt ring_plan_options[] = {
	{ "nodes", 0, OPT_INT, &o.nodes, "N", "synthetic cluster: N nodes", NULL,
	  OPT_RANGE(1, 1 << 20) },
	{ "gpus", 0, OPT_INT, &o.gpus, "G", "synthetic: GPUs per node (default 8)", NULL,
	  OPT_RANGE(1, PN_PLAN_MAX_GPUS) },
	{ "nics", 0, OPT_INT, &o.nics, "K", "synthetic: NIC ports per node (default: --gpus)", NULL,
	  OPT_RANGE(0, PN_PLAN_MAX_NICS) },
	{ "gpus-per-nic", 0, OPT_INT, &o.gpus_per_nic, "M",
	  "synthetic: GPUs i*M..i*M+M-1 are nearest to NIC i (default: spread evenly)", NULL,
	  OPT_RANGE(1, PN_PLAN_MAX_GPUS) },
	{ "nvlinks", 0, OPT_INT, &o.nvlinks, "N",
	  "synthetic: NVLinks between GPUs (default 18; 0: PCIe only)", NULL, OPT_RANGE(0, 64) },
	{ "nic-rate", 0, OPT_DOUBLE, &o.nic_rate, "GBPS",
	  "synthetic: NIC port rate in Gb/s (default 400)", NULL, OPT_RANGE(0.001, 100000) },
	{ "topo-file", 0, OPT_APPEND, &o.topo_files, "FILE,...",
	  "one `penny topo --save` file per node (repeatable)", NULL, OPT_LIST },
	{ "topo-xml", 0, OPT_STRING, &o.topo_xml, "FILE",
	  "plan one node from an hwloc XML file (as penny topo --topo-xml)", NULL, NULL },
	{ "rails", 0, OPT_STRING, &o.rails, "DEV:PORT:RAIL,...",
	  "rail ids of NIC ports (NCCL_IB_HCA style); unlisted ports are not used", NULL,
	  OPT_LIST },
	{ "hosts", 0, OPT_STRING, &o.hosts, "H1,H2,...",
	  "node order of the rings (physical placement); names synthetic nodes", NULL, OPT_LIST },
	{ "rings", 0, OPT_INT, &o.rings, "N",
	  "number of rings (one node: any; several: a multiple of one per rail)", NULL,
	  OPT_RANGE(1, PN_PLAN_MAX_RINGS) },
	{ "pcie-rate", 0, OPT_DOUBLE, &o.pcie_rate, "GBS",
	  "PCIe link rate for the prediction, GB/s per direction (default 63, Gen5 x16)", NULL,
	  OPT_RANGE(0.001, 10000) },
	{ "no-degrade", 0, OPT_BOOL, &o.no_degrade, NULL,
	  "refuse (exit 1) instead of planning around a missing or down rail", NULL, NULL },
	{ "summary", 0, OPT_BOOL, &o.summary, NULL, "text: leave out the per-ring diagrams", NULL,
	  NULL },
	{ "show-schedule", 0, OPT_BOOL, &o.show_schedule, NULL,
	  "print the multiring allreduce schedule the engine runs for these rings", NULL, NULL },
	{ "schedule-rank", 0, OPT_INT, &o.schedule_rank, "R",
	  "--show-schedule: the rank whose steps are printed (default 0)", NULL,
	  OPT_RANGE(0, (1 << 24) - 1) },
	{ "schedule-size", 0, OPT_SIZE, &o.schedule_size, "SIZE",
	  "--show-schedule: allreduce size in bytes, float32 (default 1M)", NULL,
	  OPT_RANGE(4, 1ull << 40) },
	{ "nccl-graph", 0, OPT_STRING, &o.nccl_graph, "FILE",
	  "write NCCL_GRAPH_FILE XML; %h or %n in FILE: one file per node", NULL, NULL },
	{ "check", 0, OPT_STRING, &o.check, "FILE[,FILE...]",
	  "validate a plan: ring-plan JSON, or NCCL graph XML (one shared or one per node)", NULL,
	  OPT_LIST },
	OPT_TABLE_END
};

/* ---------------------------------------------------------------- model */

static int load_model(struct pn_ctx *ctx, struct pn_plan_model *m, int need)
{
	int synth = o.nodes || o.gpus || o.nics >= 0 || o.gpus_per_nic || o.nvlinks >= 0 || o.nic_rate;
	int ret;

	if ((synth != 0) + (o.topo_files != NULL) + (o.topo_xml != NULL) > 1)
		return pn_cmd_fail(ctx, 2, "give one of --topo-file, --topo-xml or a synthetic shape "
					   "(--nodes ...), not both");
	if (synth && !o.nodes)
		return pn_cmd_fail(ctx, 2, "a synthetic cluster needs --nodes N");
	if (synth) {
		struct pn_plan_synth s = {
			.nodes = o.nodes,
			.gpus = o.gpus ? o.gpus : 8,
			.nics = o.nics >= 0 ? o.nics : (o.gpus ? o.gpus : 8),
			.gpus_per_nic = o.gpus_per_nic,
			.rate_gbps = o.nic_rate ? o.nic_rate : 400,
			.nvlinks = o.nvlinks >= 0 ? o.nvlinks : 18,
			.hosts = o.hosts,
		};

		ret = pn_plan_model_synthetic(m, &s);
	} else if (o.topo_files) {
		const char *p = o.topo_files;

		ret = 0;
		while (*p && !ret) {
			char *path, *buf;
			size_t len = strcspn(p, ","), n;

			path = strndup(p, len);
			if (!path)
				return pn_cmd_fail(ctx, 2, "out of memory");
			p += len;
			if (*p == ',')
				p++;
			if (!*path) {
				free(path);
				continue;
			}
			ret = pn_read_file(path, &buf, &n);
			if (!ret) {
				ret = pn_plan_model_add_topo(m, buf, n, path);
				free(buf);
			}
			free(path);
		}
		if (!ret && !m->nnodes)
			return pn_cmd_fail(ctx, 2, "--topo-file names no file");
		if (!ret && o.hosts)
			ret = pn_plan_model_order_hosts(m, o.hosts);
	} else if (need || o.topo_xml) {
		/* this node: live (or the --sysfs-root tree), or an hwloc XML file */
		struct pn_topo t;
		struct pn_topo_cfg cfg = { .xml_file = o.topo_xml };

		memset(&t, 0, sizeof(t));
		ret = pn_topo_load(&t, &cfg);
		if (!ret)
			ret = pn_plan_model_add_topology(m, &t);
		pn_topo_release(&t);
		if (!ret && o.hosts)
			ret = pn_plan_model_order_hosts(m, o.hosts);
	} else {
		return 0;
	}
	if (!ret && o.rails)
		ret = pn_plan_model_set_rails(m, o.rails);
	if (!ret)
		ret = pn_plan_model_finish(m);
	if (ret) {
		pn_cmd_error(ctx, ret);
		return 2;
	}
	return 0;
}

/* ---------------------------------------------------------------- print */

static const struct pn_plan_layout *layout_of(const struct pn_plan_model *m, int node)
{
	return &m->layouts[m->nodes[node].layout];
}

static void print_msgs(struct pn_out *out, const char *key, const char *label,
		       const struct pn_plan_msgs *a, const struct pn_plan_msgs *b)
{
	const struct pn_plan_msgs *ms[2] = { a, b };
	int i, k;

	pn_out_open_array(out, key);
	for (k = 0; k < 2; k++) {
		if (!ms[k])
			continue;
		for (i = 0; i < ms[k]->n; i++) {
			pn_out_text(out, "%s: ", label);
			pn_out_str(out, PN_ANY, NULL, "%s\n", ms[k]->v[i]);
		}
		if (ms[k]->dropped) {
			char more[64];

			snprintf(more, sizeof(more), "... and %d more", ms[k]->dropped);
			pn_out_text(out, "%s: ", label);
			pn_out_str(out, PN_ANY, NULL, "%s\n", more);
		}
	}
	pn_out_close_array(out);
}

static void print_shape(struct pn_out *out, const struct pn_plan_model *m)
{
	const struct pn_plan_layout *l0 = layout_of(m, 0);
	int i, uni_g = 1, uni_n = 1;

	for (i = 0; i < m->nnodes; i++) {
		uni_g &= layout_of(m, i)->ngpus == l0->ngpus;
		uni_n &= layout_of(m, i)->nnics == l0->nnics;
	}
	pn_out_text(out, "%d node%s", m->nnodes, m->nnodes == 1 ? "" : "s");
	if (uni_g)
		pn_out_text(out, " x %d GPUs", l0->ngpus);
	if (uni_n)
		pn_out_text(out, " x %d NIC port%s", l0->nnics, l0->nnics == 1 ? "" : "s");
	pn_out_text(out, " (%s), %d ranks\n", m->source, m->nranks);
}

static void print_nic(struct pn_out *out, const char *key, const struct pn_plan_layout *l, int nic)
{
	if (nic < 0) {
		pn_out_null(out, PN_JSON, key, NULL);
		return;
	}
	pn_out_open_object(out, key);
	pn_out_str(out, PN_JSON, "nic", NULL, l->nics[nic].name);
	pn_out_int(out, PN_JSON, "rail", NULL, l->nics[nic].rail);
	pn_out_close_object(out);
}

static void print_ring(struct pn_out *out, const struct pn_plan *p, int r)
{
	const struct pn_plan_model *m = p->model;
	const struct pn_plan_ring *ring = &p->rings[r];
	int i, k, N = m->nnodes;
	char buf[64];

	pn_out_open_object(out, NULL);
	pn_out_int(out, PN_ANY, "id", "ring %lld", r);
	pn_out_open_array(out, "rails");
	if (ring->rail_a >= 0) {
		pn_out_int(out, PN_ANY, NULL, "  rails %lld", ring->rail_a);
		if (ring->rail_b != ring->rail_a)
			pn_out_int(out, PN_ANY, NULL, ",%lld", ring->rail_b);
	}
	pn_out_close_array(out);
	pn_out_float(out, PN_ANY, "gbs", "  %.2f GB/s", ring->gbs);
	pn_out_str(out, PN_ANY, "bottleneck", "  (limit: %s)\n", ring->bottleneck);
	pn_out_open_array(out, "segments");
	for (i = 0; i < ring->nseg; i++) {
		const struct pn_plan_seg *s = &ring->seg[i];
		const struct pn_plan_layout *l = layout_of(m, s->node);

		pn_out_open_object(out, NULL);
		pn_out_str(out, PN_ANY, "node", "  %-10s", m->nodes[s->node].host);
		if (s->in_nic >= 0)
			pn_out_text(out, " %s r%d >", l->nics[s->in_nic].name, l->nics[s->in_nic].rail);
		print_nic(out, "recv", l, s->in_nic);
		pn_out_open_array(out, "gpus");
		for (k = 0; k < s->n; k++) {
			const struct pn_plan_gpu *g = &l->gpus[ring->gpus[s->off + k]];

			pn_out_int(out, PN_JSON, NULL, NULL, g->index);
			pn_out_text(out, " %s", g->name);
		}
		pn_out_close_array(out);
		if (s->out_nic >= 0)
			pn_out_text(out, " > %s r%d", l->nics[s->out_nic].name,
				    l->nics[s->out_nic].rail);
		else if (N == 1 && s->n > 1)
			pn_out_text(out, " > %s", l->gpus[ring->gpus[s->off]].name);
		print_nic(out, "send", l, s->out_nic);
		pn_out_text(out, "\n");
		pn_out_close_object(out);
	}
	pn_out_close_array(out);
	pn_out_open_array(out, "hops");
	for (i = 0; N > 1 && i < ring->nseg; i++) {
		const struct pn_plan_seg *s = &ring->seg[i], *t = &ring->seg[(i + 1) % ring->nseg];
		const struct pn_plan_layout *ls = layout_of(m, s->node), *lt = layout_of(m, t->node);

		pn_out_open_object(out, NULL);
		pn_out_str(out, PN_JSON, "from", NULL, m->nodes[s->node].host);
		pn_out_int(out, PN_JSON, "from_gpu", NULL,
			   s->n ? ls->gpus[ring->gpus[s->off + s->n - 1]].index : -1);
		if (s->out_nic >= 0)
			pn_out_str(out, PN_JSON, "send_nic", NULL, ls->nics[s->out_nic].name);
		else
			pn_out_null(out, PN_JSON, "send_nic", NULL);
		pn_out_str(out, PN_JSON, "to", NULL, m->nodes[t->node].host);
		pn_out_int(out, PN_JSON, "to_gpu", NULL, t->n ? lt->gpus[ring->gpus[t->off]].index : -1);
		if (t->in_nic >= 0)
			pn_out_str(out, PN_JSON, "recv_nic", NULL, lt->nics[t->in_nic].name);
		else
			pn_out_null(out, PN_JSON, "recv_nic", NULL);
		pn_out_int(out, PN_JSON, "rail", NULL, s->out_nic >= 0 ? ls->nics[s->out_nic].rail : -1);
		pn_out_int(out, PN_JSON, "recv_rail", NULL,
			   t->in_nic >= 0 ? lt->nics[t->in_nic].rail : -1);
		pn_out_close_object(out);
		if (i == ring->nseg - 1 && ring->nseg > 1 && s->out_nic >= 0) {
			snprintf(buf, sizeof(buf), "rail %d", ls->nics[s->out_nic].rail);
			pn_out_text(out, "  (%s -> %s on %s)\n", m->nodes[s->node].host,
				    m->nodes[t->node].host, buf);
		}
	}
	pn_out_close_array(out);
	pn_out_close_object(out);
}

/* NIC load, grouped: rows of (nic, rail, send, recv) with how many nodes share them. */
struct load_group {
	const char *nic;
	int rail, send, recv, active, count, first;
};

static void print_loads(struct pn_out *out, const struct pn_plan *p)
{
	const struct pn_plan_model *m = p->model;
	struct load_group *g = NULL;
	int ng = 0, cap = 0, i, k, j;

	pn_out_open_array(out, "nic_load");
	for (i = 0; i < m->nnodes; i++) {
		const struct pn_plan_layout *l = layout_of(m, i);

		for (k = 0; k < l->nnics; k++) {
			int sd = p->send[p->load_off[i] + k], rv = p->recv[p->load_off[i] + k];

			if (pn_out_is_json(out)) {
				pn_out_open_object(out, NULL);
				pn_out_str(out, PN_JSON, "node", NULL, m->nodes[i].host);
				pn_out_str(out, PN_JSON, "nic", NULL, l->nics[k].name);
				pn_out_int(out, PN_JSON, "rail", NULL, l->nics[k].rail);
				pn_out_bool(out, PN_JSON, "active", NULL, l->nics[k].active);
				pn_out_int(out, PN_JSON, "send", NULL, sd);
				pn_out_int(out, PN_JSON, "recv", NULL, rv);
				pn_out_close_object(out);
				continue;
			}
			for (j = 0; j < ng; j++)
				if (!strcmp(g[j].nic, l->nics[k].name) && g[j].rail == l->nics[k].rail &&
				    g[j].send == sd && g[j].recv == rv &&
				    g[j].active == l->nics[k].active)
					break;
			if (j == ng) {
				if (ng == cap) {
					struct load_group *n;

					cap = cap ? cap * 2 : 16;
					n = realloc(g, (size_t)cap * sizeof(*n));
					if (!n)
						goto out;
					g = n;
				}
				g[ng] = (struct load_group){ l->nics[k].name, l->nics[k].rail, sd, rv,
							     l->nics[k].active, 0, i };
				ng++;
			}
			g[j].count++;
		}
	}
	if (!pn_out_is_json(out) && ng) {
		pn_out_text(out, "\nNIC load (rings per NIC and direction):\n");
		pn_out_text(out, "  %-12s %5s %5s %5s  %s\n", "nic", "rail", "send", "recv", "nodes");
		for (j = 0; j < ng; j++) {
			char rail[16];

			snprintf(rail, sizeof(rail), "%d", g[j].rail);
			pn_out_text(out, "  %-12s %5s %5d %5d  ", g[j].nic, g[j].rail >= 0 ? rail : "-",
				    g[j].send, g[j].recv);
			if (g[j].count == m->nnodes)
				pn_out_text(out, "all %d", g[j].count);
			else
				pn_out_text(out, "%d (%s%s)", g[j].count, m->nodes[g[j].first].host,
					    g[j].count > 1 ? ", ..." : "");
			pn_out_text(out, "%s\n", g[j].active ? "" : "  not usable");
		}
	}
out:
	free(g);
	pn_out_close_array(out);
}

static void print_layouts(struct pn_out *out, const struct pn_plan_model *m)
{
	int li, g, h, k;
	char c[16];

	pn_out_open_array(out, "layouts");
	for (li = 0; li < m->nlayouts; li++) {
		const struct pn_plan_layout *l = &m->layouts[li];

		pn_out_open_object(out, NULL);
		pn_out_open_array(out, "gpus");
		for (g = 0; g < l->ngpus; g++) {
			pn_out_open_object(out, NULL);
			pn_out_str(out, PN_JSON, "name", NULL, l->gpus[g].name);
			pn_out_int(out, PN_JSON, "index", NULL, l->gpus[g].index);
			pn_out_open_array(out, "nics");
			for (k = 0; k < l->nnics; k++)
				if (l->gpus[g].near & (1ull << k))
					pn_out_str(out, PN_JSON, NULL, NULL, l->nics[k].name);
			pn_out_close_array(out);
			pn_out_close_object(out);
		}
		pn_out_close_array(out);
		pn_out_open_array(out, "nics");
		for (k = 0; k < l->nnics; k++) {
			const struct pn_plan_nic *n = &l->nics[k];

			pn_out_open_object(out, NULL);
			pn_out_str(out, PN_JSON, "name", NULL, n->name);
			pn_out_str(out, PN_JSON, "device", NULL, n->device);
			pn_out_str(out, PN_JSON, "label", NULL, n->label);
			pn_out_int(out, PN_JSON, "port", NULL, n->port);
			pn_out_int(out, PN_JSON, "rail", NULL, n->rail);
			pn_out_float(out, PN_JSON, "rate_gbps", NULL, n->rate_gbps);
			pn_out_str(out, PN_JSON, "state", NULL, n->state);
			pn_out_bool(out, PN_JSON, "active", NULL, n->active);
			pn_out_int(out, PN_JSON, "netdev", NULL, n->netdev);
			pn_out_close_object(out);
		}
		pn_out_close_array(out);
		pn_out_open_object(out, "matrix");
		for (g = 0; g < l->ngpus; g++) {
			pn_out_open_object(out, l->gpus[g].name);
			for (h = 0; h < l->ngpus; h++)
				if (l->gg[g][h].cls != PN_PLAN_PATH_UNKNOWN)
					pn_out_str(out, PN_JSON, l->gpus[h].name, NULL,
						   pn_plan_path_name(l->gg[g][h], c, sizeof(c)));
			for (k = 0; k < l->nnics; k++)
				if (l->gn[g * l->nnics + k].cls != PN_PLAN_PATH_UNKNOWN)
					pn_out_str(out, PN_JSON, l->nics[k].name, NULL,
						   pn_plan_path_name(l->gn[g * l->nnics + k], c, sizeof(c)));
			pn_out_close_object(out);
		}
		pn_out_close_object(out);
		pn_out_close_object(out);
	}
	pn_out_close_array(out);
}

static void print_bandwidth(struct pn_out *out, const struct pn_plan *p)
{
	pn_out_open_object(out, "bandwidth");
	pn_out_text(out, "\nbandwidth (predicted from link rates): ");
	pn_out_float(out, PN_ANY, "ring_gbs", "%.2f GB/s per ring", p->ring_gbs);
	pn_out_float(out, PN_ANY, "busbw_gbs", ", %.2f GB/s", p->busbw_gbs);
	pn_out_int(out, PN_ANY, "rings", " over %lld rings\n", p->nrings);
	pn_out_open_object(out, "bottleneck");
	if (p->bottleneck.node >= 0) {
		pn_out_str(out, PN_ANY, "link", "bottleneck: %s", p->bottleneck.what);
		pn_out_float(out, PN_ANY, "cap_gbs", ", %.2f GB/s", p->bottleneck.cap_gbs);
		pn_out_int(out, PN_ANY, "rings", " shared by %lld ring", p->bottleneck.users);
		pn_out_text(out, "%s\n", p->bottleneck.users == 1 ? "" : "s");
	}
	pn_out_close_object(out);
	pn_out_close_object(out);
}

static void print_schedule(struct pn_out *out, const struct pn_plan *p, const struct pn_sched *sc)
{
	const struct pn_plan_model *m = p->model;
	int c, lo = 0, hi = m->nnodes - 1;
	size_t i;
	char sz[32];

	while (lo < hi) { /* node of the rank */
		int mid = (lo + hi + 1) / 2;

		if (m->nodes[mid].rank0 <= sc->rank)
			lo = mid;
		else
			hi = mid - 1;
	}
	pn_out_open_object(out, "schedule");
	pn_out_str(out, PN_ANY, "algo", "\nschedule: %s", pn_algo_name(sc->algo));
	pn_out_int(out, PN_ANY, "rank", ", rank %lld", sc->rank);
	pn_out_str(out, PN_ANY, "node", " (%s", m->nodes[lo].host);
	pn_out_str(out, PN_ANY, "gpu", " %s)",
		   layout_of(m, lo)->gpus[sc->rank - m->nodes[lo].rank0].name);
	pn_out_text(out, ", %s", pn_fmt_size(sz, sizeof(sz), sc->count * sc->esize));
	pn_out_uint(out, PN_ANY, "count", " = %llu float32", sc->count);
	pn_out_uint(out, PN_JSON, "esize", NULL, sc->esize);
	pn_out_int(out, PN_ANY, "nchannels", ", %lld channels (one per ring)\n", sc->nchan);
	pn_out_open_array(out, "channels");
	for (c = 0; c < sc->nchan; c++) {
		const struct pn_sched_chan *ch = &sc->ch[c];

		pn_out_open_object(out, NULL);
		pn_out_int(out, PN_ANY, "channel", "channel %lld", c);
		pn_out_uint(out, PN_ANY, "nsteps", ": %llu steps\n", ch->n);
		pn_out_text(out, "  %5s  %-24s %6s %6s %10s %10s\n", "step", "op", "recv", "send",
			    "offset", "count");
		pn_out_open_array(out, "steps");
		for (i = 0; i < ch->n; i++) {
			const struct pn_step *st = &ch->steps[i];

			pn_out_open_object(out, NULL);
			pn_out_text(out, "  %5zu  ", i);
			pn_out_str(out, PN_ANY, "op", "%-24s", pn_step_op_name((enum pn_step_op)st->op));
			pn_out_int(out, PN_ANY, "recv", " %6lld", st->recv_peer);
			pn_out_int(out, PN_ANY, "send", " %6lld", st->send_peer);
			pn_out_uint(out, PN_ANY, "offset", " %10llu", st->off);
			pn_out_uint(out, PN_ANY, "count", " %10llu\n", st->count);
			pn_out_bool(out, PN_JSON, "final", NULL, st->final);
			pn_out_close_object(out);
		}
		pn_out_close_array(out);
		pn_out_close_object(out);
	}
	pn_out_close_array(out);
	pn_out_close_object(out);
}

static void print_plan(struct pn_out *out, const struct pn_plan *p, const struct pn_plan_msgs *viol,
		       const struct pn_sched *sc)
{
	const struct pn_plan_model *m = p->model;
	int i;

	pn_out_open_object(out, NULL);
	pn_out_int(out, PN_JSON, "version", NULL, 1);
	pn_out_str(out, PN_JSON, "source", NULL, m->source);
	pn_out_text(out, "ring plan: ");
	print_shape(out, m);
	pn_out_int(out, PN_JSON, "nnodes", NULL, m->nnodes);
	pn_out_int(out, PN_JSON, "nranks", NULL, m->nranks);
	pn_out_bool(out, PN_JSON, "degraded", NULL, p->degraded);
	pn_out_open_array(out, "rails");
	if (p->nrails)
		pn_out_text(out, "rails in use:");
	for (i = 0; i < p->nrails; i++)
		pn_out_int(out, PN_ANY, NULL, " %lld", p->rails[i]);
	pn_out_close_array(out);
	pn_out_int(out, PN_ANY, "nrings", p->nrails ? "; %lld rings\n" : "%lld rings\n", p->nrings);
	print_layouts(out, m);
	pn_out_open_array(out, "nodes");
	for (i = 0; i < m->nnodes; i++) {
		pn_out_open_object(out, NULL);
		pn_out_str(out, PN_JSON, "host", NULL, m->nodes[i].host);
		pn_out_int(out, PN_JSON, "layout", NULL, m->nodes[i].layout);
		pn_out_int(out, PN_JSON, "rank0", NULL, m->nodes[i].rank0);
		pn_out_close_object(out);
	}
	pn_out_close_array(out);
	pn_out_open_array(out, "rings");
	for (i = 0; i < p->nrings; i++) {
		if (o.summary && !pn_out_is_json(out))
			break;
		pn_out_text(out, "\n");
		print_ring(out, p, i);
	}
	pn_out_close_array(out);
	if (m->nnodes > 1)
		print_loads(out, p);
	print_bandwidth(out, p);
	if (m->notes.n || p->notes.n)
		pn_out_text(out, "\n");
	print_msgs(out, "notes", "note", &m->notes, &p->notes);
	print_msgs(out, "violations", "violation", viol, NULL);
	pn_out_text(out, "%s%d violations\n", viol->n ? "" : "\n", viol->n + viol->dropped);
	if (sc)
		print_schedule(out, p, sc);
	pn_out_close_object(out);
}

/* ----------------------------------------------------------- NCCL graph */

static int graphs_per_node(void)
{
	return strstr(o.nccl_graph, "%h") || strstr(o.nccl_graph, "%n");
}

/* Node i's file: --nccl-graph with %h (its host name) and %n (its index). */
static int graph_name(const struct pn_plan_model *m, int i, char *path, size_t len)
{
	const char *q, *add;
	char one[2] = "", num[16];
	size_t n = 0, k;

	for (q = o.nccl_graph; *q; q++) {
		if (q[0] == '%' && q[1] == 'h') {
			add = m->nodes[i].host;
			if (strchr(add, '/'))
				return pn_err(-EINVAL, "--nccl-graph: the host name '%s' of node %d "
					      "cannot be part of a file name", add, i);
			q++;
		} else if (q[0] == '%' && q[1] == 'n') {
			snprintf(num, sizeof(num), "%d", i);
			add = num;
			q++;
		} else {
			one[0] = *q;
			add = one;
		}
		k = strlen(add);
		if (n + k >= len)
			return pn_err(-ENAMETOOLONG, "--nccl-graph: the file name of node %d is too "
				      "long", i);
		memcpy(path + n, add, k);
		n += k;
	}
	path[n] = 0;
	return 0;
}

struct graph_file {
	char *name;
	int node;
};

static int graph_cmp(const void *a, const void *b)
{
	const struct graph_file *x = a, *y = b;
	int c = strcmp(x->name, y->name);

	return c ? c : x->node - y->node;
}

/* Before the planning: every file can be written, no two nodes share one. */
static int check_graphs(struct pn_ctx *ctx, const struct pn_plan_model *m)
{
	int n = graphs_per_node() ? m->nnodes : 1, i, ret = 0;
	struct graph_file *g = calloc((size_t)n, sizeof(*g));
	char path[4096];

	if (!g)
		return pn_cmd_fail(ctx, 2, "out of memory");
	for (i = 0; i < n && !ret; i++) {
		ret = graph_name(m, i, path, sizeof(path));
		if (!ret && !(g[i].name = strdup(path)))
			ret = pn_err(-ENOMEM, "out of memory");
		g[i].node = i;
	}
	if (!ret)
		qsort(g, (size_t)n, sizeof(*g), graph_cmp);
	for (i = 1; i < n && !ret; i++)
		if (!strcmp(g[i - 1].name, g[i].name))
			ret = pn_err(-EINVAL, "--nccl-graph: nodes %d and %d would both write '%s'",
				     g[i - 1].node, g[i].node, g[i].name);
	for (i = 0; i < n && !ret; i++)
		ret = pn_ofile_check(g[i].name);
	for (i = 0; i < n; i++)
		free(g[i].name);
	free(g);
	if (ret) {
		pn_cmd_error(ctx, ret);
		return 2;
	}
	return 0;
}

static int write_graphs(struct pn_ctx *ctx, const struct pn_plan *p)
{
	const struct pn_plan_model *m = p->model;
	int per_node = graphs_per_node(), i, ret = 0;

	for (i = 0; i < (per_node ? m->nnodes : 1) && !ret; i++) {
		struct pn_ofile *of;
		char path[4096];

		ret = graph_name(m, i, path, sizeof(path));
		if (!ret)
			ret = pn_ofile_open(&of, path, PN_OFILE_SYNC);
		if (ret)
			break;
		ret = pn_plan_write_nccl(p, per_node ? i : -1, pn_ofile_file(of));
		if (ret)
			pn_ofile_abort(of);
		else
			ret = pn_ofile_commit(of);
	}
	if (ret) {
		pn_cmd_error(ctx, ret);
		return 2;
	}
	return 0;
}

/* ---------------------------------------------------------------- check */

static int check(struct pn_ctx *ctx, struct pn_plan_model *model)
{
	struct pn_plan_model own;
	struct pn_plan plan;
	struct pn_plan_msgs notes = { 0 }, viol = { 0 };
	struct pn_sched sc = { 0 };
	char **texts = NULL, **names = NULL;
	size_t *lens = NULL;
	int nf = 0, i, ret, rc = 2, xml;
	const char *p = o.check, *fmt;

	pn_plan_model_init(&own);
	pn_plan_init(&plan, model);
	/*
	 * The arrays are sized once from the comma count: growing them with
	 * x = realloc(x, ...) lost them on failure, and the clean-up below then
	 * read texts[i] through NULL.
	 */
	for (i = 1, fmt = p; *fmt; fmt++)
		i += *fmt == ',';
	texts = calloc((size_t)i, sizeof(*texts));
	names = calloc((size_t)i, sizeof(*names));
	lens = calloc((size_t)i, sizeof(*lens));
	if (!texts || !names || !lens) {
		pn_cmd_fail(ctx, 2, "out of memory");
		goto out;
	}
	for (; *p; nf++) {
		size_t len = strcspn(p, ",");

		names[nf] = strndup(p, len);
		p += len;
		if (*p == ',')
			p++;
		if (!names[nf]) {
			pn_cmd_fail(ctx, 2, "out of memory");
			goto out;
		}
		ret = pn_read_file(names[nf], &texts[nf], &lens[nf]);
		if (ret) {
			nf++;
			pn_cmd_error(ctx, ret);
			goto out;
		}
	}
	if (!nf) {
		pn_cmd_fail(ctx, 2, "--check needs a file");
		goto out;
	}
	fmt = texts[0] + strspn(texts[0], " \t\r\n");
	xml = *fmt == '<';
	if (xml && o.show_schedule) {
		pn_cmd_fail(ctx, 2, "--show-schedule: the engine runs ring-plan JSON plans "
			    "(allreduce-test --plan), not NCCL graph XML");
		goto out;
	}
	if (!xml && nf > 1) {
		pn_cmd_fail(ctx, 2, "--check takes several files only for NCCL graph XML, one per node");
		goto out;
	}
	if (xml) {
		ret = pn_plan_read_nccl(&plan, model, (const char *const *)texts, lens,
					(const char *const *)names, nf, &notes, &viol);
		if (!ret)
			ret = pn_plan_validate(&plan, &viol);
	} else {
		/* the validator of allreduce-test --plan (plan_job.h) */
		ret = pn_plan_load_json(&plan, &own, model, texts[0], lens[0], &viol);
	}
	if (ret < 0) {
		pn_cmd_error(ctx, ret);
		goto out;
	}
	if (o.show_schedule && (o.schedule_rank < 0 || o.schedule_rank >= plan.model->nranks)) {
		pn_cmd_fail(ctx, 2, "--schedule-rank must be between 0 and %d", plan.model->nranks - 1);
		goto out;
	}
	/* the engine refuses a plan with violations: no schedule for it */
	if (o.show_schedule && !viol.n && !viol.dropped) {
		ret = pn_plan_sched_build(&sc, &plan, o.schedule_rank, (size_t)(o.schedule_size / 4), 4);
		if (ret) {
			pn_cmd_error(ctx, ret);
			goto out;
		}
	}
	pn_out_open_object(ctx->out, NULL);
	pn_out_str(ctx->out, PN_ANY, "file", "check %s: ", o.check);
	pn_out_str(ctx->out, PN_ANY, "format", "%s, ", xml ? "nccl-xml" : "json");
	pn_out_int(ctx->out, PN_ANY, "nnodes", "%lld node", plan.model->nnodes);
	pn_out_int(ctx->out, PN_ANY, "nranks", plan.model->nnodes == 1 ? ", %lld ranks, " : "s, %lld ranks, ",
		   plan.model->nranks);
	pn_out_int(ctx->out, PN_ANY, "nrings", plan.nrings == 1 ? "%lld ring\n" : "%lld rings\n",
		   plan.nrings);
	pn_out_float(ctx->out, PN_JSON, "ring_gbs", NULL, plan.ring_gbs);
	print_msgs(ctx->out, "notes", "note", &notes, &plan.model->notes);
	print_msgs(ctx->out, "violations", "violation", &viol, NULL);
	pn_out_bool(ctx->out, PN_JSON, "ok", NULL, viol.n == 0 && !viol.dropped);
	pn_out_text(ctx->out, "%d violations\n", viol.n + viol.dropped);
	if (sc.ch)
		print_schedule(ctx->out, &plan, &sc);
	pn_out_close_object(ctx->out);
	rc = viol.n || viol.dropped ? 1 : 0;
out:
	pn_sched_release(&sc);
	for (i = 0; i < nf; i++) {
		free(texts[i]);
		free(names[i]);
	}
	free(texts);
	free(names);
	free(lens);
	pn_plan_release(&plan);
	pn_plan_model_release(&own);
	pn_plan_msgs_release(&notes);
	pn_plan_msgs_release(&viol);
	return rc;
}

/* ----------------------------------------------------------------- main */

int cmd_ring_plan(struct pn_ctx *ctx, int argc, char **argv)
{
	struct pn_plan_model model;
	struct pn_plan plan;
	struct pn_plan_msgs viol = { 0 };
	struct pn_plan_opts po = { 0 };
	struct pn_sched sc = { 0 };
	int ret, rc;

	if (argc > 0)
		return pn_cmd_fail(ctx, 2, "unexpected argument '%s'", argv[0]);
	/* counts and rates are in range (the table); 0 and -1 mean "not given" */
	if (o.check && (o.nccl_graph || o.summary || o.rings || o.no_degrade))
		return pn_cmd_fail(ctx, 2, "--check reads a plan; --nccl-graph, --summary, --rings "
					   "and --no-degrade are for planning");
	pn_plan_model_init(&model);
	rc = load_model(ctx, &model, !o.check);
	if (rc)
		goto out_model;
	if (o.check) {
		rc = check(ctx, &model);
		goto out_model;
	}
	if (o.nccl_graph) {
		rc = check_graphs(ctx, &model);
		if (rc)
			goto out_model;
	}
	if (o.no_degrade && model.nnodes > 1) {
		struct pn_plan_msgs why = { 0 };
		int *rails, nrails, i;

		ret = pn_plan_usable_rails(&model, &rails, &nrails, &why);
		free(rails);
		if (!ret && why.n) {
			for (i = 0; i < why.n; i++)
				pn_cmd_fail(ctx, 1, "%s", why.v[i]);
			fprintf(stderr, "penny %s: --no-degrade: refusing to plan around %d missing "
					"rail%s\n",
				ctx->name, why.n, why.n == 1 ? "" : "s");
			pn_plan_msgs_release(&why);
			rc = 1;
			goto out_model;
		}
		pn_plan_msgs_release(&why);
	}
	po.rings = o.rings;
	po.pcie_gbs = o.pcie_rate;
	ret = pn_plan_build(&plan, &model, &po);
	if (ret) {
		pn_cmd_error(ctx, ret);
		rc = 2;
		goto out_plan;
	}
	ret = pn_plan_validate(&plan, &viol);
	if (ret < 0) {
		pn_cmd_error(ctx, ret);
		rc = 2;
		goto out_plan;
	}
	if (o.nccl_graph && !strstr(o.nccl_graph, "%h") && !strstr(o.nccl_graph, "%n")) {
		ret = pn_plan_nccl_shared_ok(&plan);
		if (ret) {
			pn_cmd_error(ctx, ret);
			rc = 2;
			goto out_plan;
		}
	}
	if (o.show_schedule) {
		if (o.schedule_rank < 0 || o.schedule_rank >= model.nranks) {
			rc = pn_cmd_fail(ctx, 2, "--schedule-rank must be between 0 and %d",
					 model.nranks - 1);
			goto out_plan;
		}
		ret = pn_plan_sched_build(&sc, &plan, o.schedule_rank, (size_t)(o.schedule_size / 4), 4);
		if (ret) {
			pn_cmd_error(ctx, ret);
			rc = 2;
			goto out_plan;
		}
	}
	print_plan(ctx->out, &plan, &viol, o.show_schedule ? &sc : NULL);
	rc = viol.n || viol.dropped ? 1 : 0;
	if (o.nccl_graph) {
		ret = write_graphs(ctx, &plan);
		if (ret)
			rc = ret;
	}
out_plan:
	pn_sched_release(&sc);
	pn_plan_msgs_release(&viol);
	pn_plan_release(&plan);
out_model:
	pn_plan_model_release(&model);
	return rc;
}
