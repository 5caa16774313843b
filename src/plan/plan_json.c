/* SPDX-License-Identifier: MIT */
/*
 * The ring plan as a document: what `ring-plan` writes (its text diagram
 * and its --json, one pn_out writer), and the JSON read back for --check
 * and for allreduce-test --plan.
 */
#define _GNU_SOURCE
#include "plan/plan.h"
#include "plan/plan_json.h"
#include "plan/topo_json.h"

#include "base/log.h"
#include "base/minijson.h"
#include "base/out.h"
#include "base/util.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ write */

static const struct pn_plan_layout *layout_of(const struct pn_plan_model *m, int node)
{
	return &m->layouts[m->nodes[node].layout];
}

void pn_plan_write_msgs(struct pn_out *out, const char *key, const char *label,
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
	pn_out_text(out, "%d node%s", m->nnodes, PN_PLAN_S(m->nnodes));
	if (uni_g)
		pn_out_text(out, " x %d GPU%s", l0->ngpus, PN_PLAN_S(l0->ngpus));
	if (uni_n)
		pn_out_text(out, " x %d NIC port%s", l0->nnics, PN_PLAN_S(l0->nnics));
	pn_out_text(out, " (%s), %d rank%s\n", m->source, m->nranks, PN_PLAN_S(m->nranks));
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
		pn_out_int(out, PN_ANY, NULL, ring->rail_b != ring->rail_a ? "  rails %lld" : "  rail %lld",
			   ring->rail_a);
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

static void print_loads(struct pn_out *out, const struct pn_plan *p)
{
	const struct pn_plan_model *m = p->model;
	int i, k;

	pn_out_open_array(out, "nic_load");
	for (i = 0; i < m->nnodes; i++) {
		const struct pn_plan_layout *l = layout_of(m, i);

		for (k = 0; k < l->nnics; k++) {
			pn_out_open_object(out, NULL);
			pn_out_str(out, PN_JSON, "node", NULL, m->nodes[i].host);
			pn_out_str(out, PN_JSON, "nic", NULL, l->nics[k].name);
			pn_out_int(out, PN_JSON, "rail", NULL, l->nics[k].rail);
			pn_out_bool(out, PN_JSON, "active", NULL, l->nics[k].active);
			pn_out_int(out, PN_JSON, "send", NULL, p->send[p->load_off[i] + k]);
			pn_out_int(out, PN_JSON, "recv", NULL, p->recv[p->load_off[i] + k]);
			pn_out_close_object(out);
		}
	}
	pn_out_close_array(out);
}

int pn_plan_load_groups(const struct pn_plan *p, struct pn_plan_load_group **out, int *n)
{
	const struct pn_plan_model *m = p->model;
	struct pn_plan_load_group *g = NULL, *nw;
	size_t cap = 0;
	int ng = 0, i, k, j;

	*out = NULL;
	*n = 0;
	for (i = 0; i < m->nnodes; i++) {
		const struct pn_plan_layout *l = layout_of(m, i);

		for (k = 0; k < l->nnics; k++) {
			int sd = p->send[p->load_off[i] + k], rv = p->recv[p->load_off[i] + k];

			for (j = 0; j < ng; j++)
				if (!strcmp(g[j].nic, l->nics[k].name) && g[j].rail == l->nics[k].rail &&
				    g[j].send == sd && g[j].recv == rv &&
				    g[j].active == l->nics[k].active)
					break;
			if (j == ng) {
				nw = pn_grow(g, &cap, (size_t)ng, sizeof(*g), 16, SIZE_MAX);
				if (!nw) {
					free(g);
					return pn_err(-ENOMEM, "out of memory");
				}
				g = nw;
				g[ng] = (struct pn_plan_load_group){ l->nics[k].name, l->nics[k].rail,
								     sd, rv, l->nics[k].active, 0, i };
				ng++;
			}
			g[j].count++;
		}
	}
	*out = g;
	*n = ng;
	return 0;
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
	pn_out_int(out, PN_ANY, "rings", p->nrings == 1 ? " over %lld ring\n" : " over %lld rings\n",
		   p->nrings);
	pn_out_open_object(out, "bottleneck");
	if (p->bottleneck.node >= 0) {
		pn_out_str(out, PN_ANY, "link", "bottleneck: %s", p->bottleneck.what);
		pn_out_float(out, PN_ANY, "cap_gbs", ", %.2f GB/s", p->bottleneck.cap_gbs);
		pn_out_int(out, PN_ANY, "rings", " shared by %lld ring", p->bottleneck.users);
		pn_out_text(out, "%s\n", PN_PLAN_S(p->bottleneck.users));
	}
	pn_out_close_object(out);
	pn_out_close_object(out);
}

void pn_plan_write_begin(struct pn_out *out, const struct pn_plan *p, int summary)
{
	const struct pn_plan_model *m = p->model;
	int i;

	pn_out_open_object(out, NULL);
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
	pn_out_text(out, "%s", p->nrails ? "; " : "");
	pn_out_int(out, PN_ANY, "nrings", p->nrings == 1 ? "%lld ring\n" : "%lld rings\n", p->nrings);
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
		if (summary && !pn_out_is_json(out))
			break;
		pn_out_text(out, "\n");
		print_ring(out, p, i);
	}
	pn_out_close_array(out);
	if (m->nnodes > 1 && pn_out_is_json(out))
		print_loads(out, p);
}

void pn_plan_write_tail(struct pn_out *out, const struct pn_plan *p,
			const struct pn_plan_msgs *viol)
{
	const struct pn_plan_model *m = p->model;

	print_bandwidth(out, p);
	if (m->notes.n || p->notes.n)
		pn_out_text(out, "\n");
	pn_plan_write_msgs(out, "notes", "note", &m->notes, &p->notes);
	pn_plan_write_msgs(out, "violations", "violation", viol, NULL);
	if (!viol->n)
		pn_out_nl(out);
	pn_out_text(out, "%d violation%s\n", viol->n + viol->dropped,
		    PN_PLAN_S(viol->n + viol->dropped));
}

/* ----------------------------------------------------- plan read-back */

struct host_index {
	const struct pn_plan_model *m;
	int *ord;	/* node indices sorted by host */
};

static int cmp_host_idx(const void *a, const void *b, void *arg)
{
	const struct pn_plan_model *m = arg;

	return strcmp(m->nodes[*(const int *)a].host, m->nodes[*(const int *)b].host);
}

static int host_index_init(struct host_index *hi, const struct pn_plan_model *m)
{
	int i;

	hi->m = m;
	hi->ord = malloc(sizeof(int) * ((size_t)m->nnodes + 1));
	if (!hi->ord)
		return pn_err(-ENOMEM, "out of memory");
	for (i = 0; i < m->nnodes; i++)
		hi->ord[i] = i;
	qsort_r(hi->ord, (size_t)m->nnodes, sizeof(int), cmp_host_idx, (void *)m);
	return 0;
}

static int host_index_find(const struct host_index *hi, const char *host)
{
	int lo = 0, hi_ = hi->m->nnodes - 1;

	while (lo <= hi_) {
		int mid = (lo + hi_) / 2;
		int c = strcmp(host, hi->m->nodes[hi->ord[mid]].host);

		if (!c)
			return hi->ord[mid];
		if (c < 0)
			hi_ = mid - 1;
		else
			lo = mid + 1;
	}
	return -1;
}

static int nic_by_name(const struct pn_plan_layout *l, const char *name)
{
	int k;

	for (k = 0; k < l->nnics; k++)
		if (!strcmp(l->nics[k].name, name))
			return k;
	return -1;
}

static int nic_rail_of(const struct pn_plan_model *m, int node, int nic)
{
	return m->layouts[m->nodes[node].layout].nics[nic].rail;
}

static int read_layout(const struct pn_jval *lv, struct pn_plan_layout *l, unsigned li)
{
	const struct pn_jval *gpus = pn_json_get(lv, "gpus"), *nics = pn_json_get(lv, "nics");
	const struct pn_jval *matrix = pn_json_get(lv, "matrix");
	unsigned i, j;
	int missing = 0;

	memset(l, 0, sizeof(*l));
	if (!gpus || gpus->type != PN_JSON_ARRAY || !gpus->n || gpus->n > PN_PLAN_MAX_GPUS)
		return pn_err(-EINVAL, "layout %u: \"gpus\" must list 1-%d GPUs", li,
			      PN_PLAN_MAX_GPUS);
	if (nics && (nics->type != PN_JSON_ARRAY || nics->n > PN_PLAN_MAX_NICS))
		return pn_err(-EINVAL, "layout %u: \"nics\" must list at most %d NICs", li,
			      PN_PLAN_MAX_NICS);
	l->ngpus = (int)gpus->n;
	l->nnics = (int)pn_json_len(nics);
	if (l->nnics) {
		l->nics = calloc((size_t)l->nnics, sizeof(*l->nics));
		l->gn = calloc((size_t)(l->nnics * l->ngpus), sizeof(*l->gn));
		if (!l->nics || !l->gn)
			return pn_err(-ENOMEM, "out of memory");
	}
	for (i = 0; i < (unsigned)l->nnics; i++) {
		const struct pn_jval *nv = pn_json_at(nics, i), *a;
		struct pn_plan_nic *c = &l->nics[i];
		const char *name = pn_json_str(pn_json_get(nv, "name"));
		const char *dev = pn_json_str(pn_json_get(nv, "device"));
		const char *label = pn_json_str(pn_json_get(nv, "label"));
		const char *state = pn_json_str(pn_json_get(nv, "state"));
		long long port = 1, rail = -1;

		if (!name || !*name || strlen(name) >= sizeof(c->name) || nic_by_name(l, name) >= 0)
			return pn_err(-EINVAL, "layout %u NIC %u: missing, long or repeated \"name\"",
				      li, i);
		snprintf(c->name, sizeof(c->name), "%s", name);
		snprintf(c->device, sizeof(c->device), "%s", dev ? dev : name);
		snprintf(c->label, sizeof(c->label), "%s", label ? label : "");
		snprintf(c->state, sizeof(c->state), "%s", state ? state : "ACTIVE");
		/* as a topo file's (topo_json.c) */
		if (pn_json_get(nv, "port") &&
		    (pn_json_int(pn_json_get(nv, "port"), &port) || port < 1 || port > 255))
			return pn_err(-EINVAL, "layout %u NIC %s: \"port\" must be an integer 1-255",
				      li, name);
		if (pn_json_int(pn_json_get(nv, "rail"), &rail) || rail < -1 || rail > 65535)
			return pn_err(-EINVAL, "layout %u NIC %s: \"rail\" must be an integer", li,
				      name);
		c->port = (int)port;
		c->rail = (int)rail;
		if (pn_json_get(nv, "rate_gbps") &&
		    (pn_json_num(pn_json_get(nv, "rate_gbps"), &c->rate_gbps) || c->rate_gbps < 0))
			return pn_err(-EINVAL, "layout %u NIC %s: \"rate_gbps\" must be a number >= 0",
				      li, name);
		a = pn_json_get(nv, "active");
		c->active = a ? (a->type == PN_JSON_BOOL && a->u.b) : pn_plan_port_active(c->state);
		c->netdev = -1;
	}
	for (i = 0; i < (unsigned)l->ngpus; i++) {
		const struct pn_jval *gv = pn_json_at(gpus, i), *near = pn_json_get(gv, "nics");
		const char *name = pn_json_str(pn_json_get(gv, "name"));
		long long idx;

		if (!name || !*name || strlen(name) >= sizeof(l->gpus[0].name) ||
		    pn_plan_gpu_by_name(l, name) >= 0 || nic_by_name(l, name) >= 0)
			return pn_err(-EINVAL, "layout %u GPU %u: missing, long or repeated \"name\"",
				      li, i);
		if (pn_json_int(pn_json_get(gv, "index"), &idx) || idx < 0 || idx > 1023)
			return pn_err(-EINVAL, "layout %u GPU %s: \"index\" must be 0-1023", li, name);
		snprintf(l->gpus[i].name, sizeof(l->gpus[i].name), "%s", name);
		l->gpus[i].index = (int)idx;
		for (j = 0; j < pn_json_len(near); j++) {
			const char *nn = pn_json_str(pn_json_at(near, j));
			int k = nn ? nic_by_name(l, nn) : -1;

			if (k < 0)
				return pn_err(-EINVAL, "layout %u GPU %s: unknown nearest NIC", li, name);
			l->gpus[i].near |= 1ull << k;
		}
	}
	for (i = 0; i < (unsigned)l->ngpus; i++) {
		const struct pn_jval *row = pn_json_get(matrix, l->gpus[i].name);
		int ret;

		for (j = 0; j < (unsigned)l->ngpus; j++) {
			if (i == j) {
				l->gg[i][j].cls = PN_PATH_X;
				continue;
			}
			ret = pn_plan_matrix_class(row, l->gpus[j].name, NULL, &l->gg[i][j], &missing,
					   "plan");
			if (ret)
				return ret;
		}
		for (j = 0; j < (unsigned)l->nnics; j++) {
			ret = pn_plan_matrix_class(row, l->nics[j].name, NULL, &l->gn[i * l->nnics + j],
					   &missing, "plan");
			if (ret)
				return ret;
		}
	}
	return 0;
}

static int read_model(struct pn_plan_model *m, const struct pn_jval *root)
{
	const struct pn_jval *layouts = pn_json_get(root, "layouts");
	const struct pn_jval *nodes = pn_json_get(root, "nodes");
	int *map = NULL, ret = 0;
	unsigned i;

	if (!layouts || layouts->type != PN_JSON_ARRAY || !layouts->n || !nodes ||
	    nodes->type != PN_JSON_ARRAY || !nodes->n)
		return pn_err(-EINVAL, "the plan has no model (\"layouts\" and \"nodes\"); give "
				       "--topo-file or a synthetic shape");
	map = calloc(layouts->n, sizeof(int));
	if (!map)
		return pn_err(-ENOMEM, "out of memory");
	for (i = 0; i < layouts->n; i++) {
		struct pn_plan_layout l;

		ret = read_layout(pn_json_at(layouts, i), &l, i);
		if (ret) {
			pn_plan_layout_release(&l);
			goto out;
		}
		ret = pn_plan_model_add_layout(m, &l);
		if (ret < 0)
			goto out;
		map[i] = ret;
		ret = 0;
	}
	for (i = 0; i < nodes->n; i++) {
		const struct pn_jval *nv = pn_json_at(nodes, i);
		const char *host = pn_json_str(pn_json_get(nv, "host"));
		long long li;

		if (!host || pn_json_int(pn_json_get(nv, "layout"), &li) || li < 0 ||
		    li >= layouts->n) {
			ret = pn_err(-EINVAL, "line %u: a node needs \"host\" and a valid \"layout\"",
				     nv->line);
			goto out;
		}
		ret = pn_plan_model_add_node_ref(m, host, map[li]);
		if (ret)
			goto out;
	}
	snprintf(m->source, sizeof(m->source), "json");
	m->rails_set = 1;
	ret = pn_plan_model_finish(m);
out:
	free(map);
	return ret;
}

/* {"nic": "mlx5_0", ...} or null -> NIC index, -1 for null. */
static int seg_nic(const struct pn_jval *v, const struct pn_plan_layout *l, const char *host,
		   int *out)
{
	const char *name;

	*out = -1;
	if (!v || v->type == PN_JSON_NULL)
		return 0;
	name = pn_json_str(pn_json_get(v, "nic"));
	if (!name)
		return pn_err(-EINVAL, "line %u: \"recv\"/\"send\" need a \"nic\"", v->line);
	*out = nic_by_name(l, name);
	if (*out < 0)
		return pn_err(-EINVAL, "line %u: %s has no NIC '%s'", v->line, host, name);
	return 0;
}

/*
 * What a plan file says besides its rings' segments -- the header (nnodes,
 * nranks, nrings, rails, nodes), each ring's id and rails, each segment's
 * NIC rails and each ring's hops -- must agree with the rings and the
 * model they are read on: what does not becomes a violation (p->file_viol,
 * reported by pn_plan_validate).  nnodes, nranks and nrings must be there;
 * the rest is checked where present.  The predictions (gbs, bottleneck,
 * bandwidth, nic_load) and notes are output only and not read.
 */
#define FVIOL(...) pn_plan_msg(&p->file_viol, __VA_ARGS__)

static void check_count(struct pn_plan *p, const struct pn_jval *root, const char *key, int want,
			const char *what)
{
	const struct pn_jval *v = pn_json_get(root, key);
	long long x;

	if (!v)
		FVIOL("the plan lacks \"%s\" (the number of %s)", key, what);
	else if (pn_json_int(v, &x))
		FVIOL("the plan's \"%s\" must be an integer", key);
	else if (x != want)
		FVIOL("the plan's \"%s\" is %lld; it has %d %.*s", key, x, want,
		      (int)strlen(what) - (want == 1), what);	/* "1 rank" */
}

/* A set of rails as a bit mask (rails 0-63; others are ignored: bit 63 stands in). */
static uint64_t rail_bit(int rail)
{
	return rail < 0 ? 0 : 1ull << (rail < 63 ? rail : 63);
}

/* An array of rails in a file as a mask; -1 when it is not an array of integers. */
static int rails_of(const struct pn_jval *v, uint64_t *mask)
{
	unsigned i;

	*mask = 0;
	if (!v || v->type != PN_JSON_ARRAY)
		return -1;
	for (i = 0; i < v->n; i++) {
		long long r;

		if (pn_json_int(pn_json_at(v, i), &r) || r < 0 || r > 65535)
			return -1;
		*mask |= rail_bit((int)r);
	}
	return 0;
}

static const char *fmt_rails(uint64_t mask, char *buf, size_t len)
{
	size_t n = 0;
	int r;

	buf[0] = 0;
	for (r = 0; r < 64 && n + 8 < len; r++)
		if (mask & (1ull << r))
			n += (size_t)snprintf(buf + n, len - n, "%s%d", n ? " " : "", r);
	if (!n)
		snprintf(buf, len, "none");
	return buf;
}

/* The NIC of a hop end in a file: a name, or null for none. */
static int hop_nic_is(const struct pn_jval *v, const char *want)
{
	if (!want)
		return v && v->type == PN_JSON_NULL;
	return pn_json_str(v) && !strcmp(pn_json_str(v), want);
}

static int hop_int_is(const struct pn_jval *v, long long want)
{
	long long x;

	return !pn_json_int(v, &x) && x == want;
}

static void check_hops(struct pn_plan *p, int r, const struct pn_jval *hops)
{
	const struct pn_plan_model *m = p->model;
	const struct pn_plan_ring *ring = &p->rings[r];
	int N = m->nnodes, nh = N > 1 ? ring->nseg : 0, i;

	if (!hops)
		return;
	if (hops->type != PN_JSON_ARRAY || (int)hops->n != nh) {
		FVIOL("ring %d: \"hops\" must list its %d hop%s", r, nh, nh == 1 ? "" : "s");
		return;
	}
	for (i = 0; i < nh; i++) {
		const struct pn_plan_seg *a = &ring->seg[i], *b = &ring->seg[(i + 1) % ring->nseg];
		const struct pn_plan_layout *la = &m->layouts[m->nodes[a->node].layout];
		const struct pn_plan_layout *lb = &m->layouts[m->nodes[b->node].layout];
		const struct pn_jval *h = pn_json_at(hops, (unsigned)i);
		const char *bad = NULL;

		if (!h || h->type != PN_JSON_OBJECT)
			bad = "an object";
		else if (!pn_json_str(pn_json_get(h, "from")) ||
			 strcmp(pn_json_str(pn_json_get(h, "from")), m->nodes[a->node].host))
			bad = "\"from\"";
		else if (!hop_int_is(pn_json_get(h, "from_gpu"),
				     a->n ? la->gpus[ring->gpus[a->off + a->n - 1]].index : -1))
			bad = "\"from_gpu\"";
		else if (!hop_nic_is(pn_json_get(h, "send_nic"),
				     a->out_nic >= 0 ? la->nics[a->out_nic].name : NULL))
			bad = "\"send_nic\"";
		else if (!pn_json_str(pn_json_get(h, "to")) ||
			 strcmp(pn_json_str(pn_json_get(h, "to")), m->nodes[b->node].host))
			bad = "\"to\"";
		else if (!hop_int_is(pn_json_get(h, "to_gpu"),
				     b->n ? lb->gpus[ring->gpus[b->off]].index : -1))
			bad = "\"to_gpu\"";
		else if (!hop_nic_is(pn_json_get(h, "recv_nic"),
				     b->in_nic >= 0 ? lb->nics[b->in_nic].name : NULL))
			bad = "\"recv_nic\"";
		else if (!hop_int_is(pn_json_get(h, "rail"),
				     a->out_nic >= 0 ? la->nics[a->out_nic].rail : -1))
			bad = "\"rail\"";
		else if (!hop_int_is(pn_json_get(h, "recv_rail"),
				     b->in_nic >= 0 ? lb->nics[b->in_nic].rail : -1))
			bad = "\"recv_rail\"";
		if (bad)
			FVIOL("ring %d hop %d (%s -> %s): %s does not match its segments", r, i,
			      m->nodes[a->node].host, m->nodes[b->node].host, bad);
	}
}

/* The rail a segment's NIC entry names must be its NIC's. */
static void check_seg_rail(struct pn_plan *p, int r, int i, const struct pn_jval *v, int nic,
			   const char *dir)
{
	const struct pn_plan_model *m = p->model;
	const struct pn_plan_seg *s = &p->rings[r].seg[i];
	const struct pn_plan_nic *n;
	const struct pn_jval *rv = pn_json_get(v, "rail");

	if (nic < 0 || !rv)
		return;
	n = &m->layouts[m->nodes[s->node].layout].nics[nic];
	if (!hop_int_is(rv, n->rail))
		FVIOL("ring %d segment %d (%s): %s \"rail\" must be %d, the rail of %s", r, i,
		      m->nodes[s->node].host, dir, n->rail, n->name);
}

static void check_fields(struct pn_plan *p, const struct pn_jval *root,
			 const struct pn_jval *rings, struct host_index *hi)
{
	const struct pn_plan_model *m = p->model;
	const struct pn_jval *nodes = pn_json_get(root, "nodes");
	uint64_t all = 0, mask;
	char a[160], b[160];
	int r, i;

	check_count(p, root, "nnodes", m->nnodes, "nodes");
	check_count(p, root, "nranks", m->nranks, "ranks");
	check_count(p, root, "nrings", p->nrings, "rings");
	if (nodes && nodes->type == PN_JSON_ARRAY) {
		for (i = 0; i < (int)nodes->n; i++) {
			const struct pn_jval *nv = pn_json_at(nodes, (unsigned)i);
			const char *host = pn_json_str(pn_json_get(nv, "host"));
			int q = host ? host_index_find(hi, host) : -1;

			if (q < 0) {
				FVIOL("the plan's node %d (%s) is not in the model", i,
				      host ? host : "no \"host\"");
				continue;
			}
			if (pn_json_get(nv, "rank0") &&
			    !hop_int_is(pn_json_get(nv, "rank0"), m->nodes[q].rank0))
				FVIOL("the plan's node %s: \"rank0\" must be %d", host,
				      m->nodes[q].rank0);
		}
	} else if (nodes) {
		FVIOL("the plan's \"nodes\" must be an array");
	}
	for (r = 0; r < p->nrings; r++) {
		const struct pn_jval *rv = pn_json_at(rings, (unsigned)r);
		const struct pn_jval *segs = pn_json_get(rv, "segments");
		const struct pn_plan_ring *ring = &p->rings[r];
		uint64_t used = 0;

		if (pn_json_get(rv, "id") && !hop_int_is(pn_json_get(rv, "id"), r))
			FVIOL("ring %d: \"id\" must be %d", r, r);
		for (i = 0; i < ring->nseg; i++) {
			const struct pn_plan_seg *s = &ring->seg[i];
			const struct pn_jval *sv = pn_json_at(segs, (unsigned)i);

			check_seg_rail(p, r, i, pn_json_get(sv, "recv"), s->in_nic, "recv");
			check_seg_rail(p, r, i, pn_json_get(sv, "send"), s->out_nic, "send");
			if (m->nnodes > 1 && s->out_nic >= 0)
				used |= rail_bit(nic_rail_of(m, s->node, s->out_nic));
			if (m->nnodes > 1 && s->in_nic >= 0)
				used |= rail_bit(nic_rail_of(m, s->node, s->in_nic));
		}
		all |= used;
		if (pn_json_get(rv, "rails")) {
			if (rails_of(pn_json_get(rv, "rails"), &mask))
				FVIOL("ring %d: \"rails\" must be an array of rails", r);
			else if (mask != used)
				FVIOL("ring %d: \"rails\" lists %s; its hops use %s", r,
				      fmt_rails(mask, a, sizeof(a)), fmt_rails(used, b, sizeof(b)));
		}
		check_hops(p, r, pn_json_get(rv, "hops"));
	}
	if (pn_json_get(root, "rails")) {
		if (rails_of(pn_json_get(root, "rails"), &mask))
			FVIOL("the plan's \"rails\" must be an array of rails");
		else if (mask != all)
			FVIOL("the plan's \"rails\" lists %s; its rings use %s",
			      fmt_rails(mask, a, sizeof(a)), fmt_rails(all, b, sizeof(b)));
	}
}
#undef FVIOL

/*
 * The rails the file names (the plan's, each ring's one or two), kept as
 * the file orders them so that the plan writes back the same (the hops'
 * NICs decide the rails; check_fields reports a list that differs).
 */
static int keep_rails(struct pn_plan *p, const struct pn_jval *root, const struct pn_jval *rings)
{
	const struct pn_jval *all = pn_json_get(root, "rails");
	long long a, b;
	unsigned i;
	int r;

	for (r = 0; r < p->nrings; r++) {
		const struct pn_jval *rv = pn_json_get(pn_json_at(rings, (unsigned)r), "rails");

		if (pn_json_len(rv) < 1 || pn_json_len(rv) > 2 || pn_json_int(pn_json_at(rv, 0), &a) ||
		    a < 0 || a > 65535)
			continue;
		b = a;
		if (pn_json_len(rv) == 2 && (pn_json_int(pn_json_at(rv, 1), &b) || b < 0 || b > 65535))
			continue;
		p->rings[r].rail_a = (int)a;
		p->rings[r].rail_b = (int)b;
	}
	if (!pn_json_len(all) || pn_json_len(all) > PN_PLAN_MAX_NICS || p->rails)
		return 0;
	p->rails = calloc(pn_json_len(all), sizeof(*p->rails));
	if (!p->rails)
		return pn_err(-ENOMEM, "out of memory");
	for (i = 0; i < pn_json_len(all); i++) {
		if (pn_json_int(pn_json_at(all, i), &a) || a < 0 || a > 65535) {
			free(p->rails);
			p->rails = NULL;
			p->nrails = 0;
			return 0;
		}
		p->rails[p->nrails++] = (int)a;
	}
	return 0;
}

int pn_plan_read_json(struct pn_plan *p, struct pn_plan_model *own, struct pn_plan_model *model,
		      const char *text, size_t len)
{
	struct pn_json_doc doc;
	struct host_index hi = { 0 };
	const struct pn_jval *root, *rings;
	struct pn_plan_model *m;
	long long ver;
	unsigned r, i, k;
	int ret;

	ret = pn_json_parse(&doc, text, len);
	if (ret)
		return ret;
	root = doc.root;
	rings = pn_json_get(root, "rings");
	if (!rings || rings->type != PN_JSON_ARRAY) {
		ret = pn_err(-EINVAL, "not a ring plan: no \"rings\" array%s",
			     pn_json_get(root, "gpus") ? " (a topology file? see --topo-file)" : "");
		goto out;
	}
	if (pn_json_int(pn_json_get(root, "version"), &ver) || ver != 1) {
		ret = pn_err(-EINVAL, "plan \"version\" must be 1");
		goto out;
	}
	if (model && model->nnodes) {
		m = model;
	} else {
		ret = read_model(own, root);
		if (ret)
			goto out;
		m = own;
	}
	pn_plan_init(p, m);
	ret = host_index_init(&hi, m);
	if (ret)
		goto out;
	if (!rings->n) {
		ret = pn_err(-EINVAL, "the plan has no rings");
		goto out;
	}
	p->rings = calloc(rings->n, sizeof(*p->rings));
	if (!p->rings) {
		ret = pn_err(-ENOMEM, "out of memory");
		goto out;
	}
	for (r = 0; r < rings->n; r++) {
		const struct pn_jval *rv = pn_json_at(rings, r), *segs = pn_json_get(rv, "segments");
		struct pn_plan_ring *ring = &p->rings[r];
		unsigned ng = 0;
		int off = 0;

		if (!segs || segs->type != PN_JSON_ARRAY || !segs->n) {
			ret = pn_err(-EINVAL, "line %u: ring %u has no \"segments\"", rv->line, r);
			goto out;
		}
		for (i = 0; i < segs->n; i++) {
			unsigned n = pn_json_len(pn_json_get(pn_json_at(segs, i), "gpus"));

			if (n > PN_PLAN_MAX_GPUS || ng > (unsigned)INT_MAX - n) {
				ret = pn_err(-EINVAL, "ring %u: a segment lists too many GPUs", r);
				goto out;
			}
			ng += n;
		}
		ret = pn_plan_ring_alloc(ring, (int)segs->n, (int)ng);
		if (ret)
			goto out;
		p->nrings++;
		ring->nseg = (int)segs->n;
		for (i = 0; i < segs->n; i++) {
			const struct pn_jval *sv = pn_json_at(segs, i), *gl = pn_json_get(sv, "gpus");
			const char *host = pn_json_str(pn_json_get(sv, "node"));
			struct pn_plan_seg *s = &ring->seg[i];
			const struct pn_plan_layout *l;

			s->node = host ? host_index_find(&hi, host) : -1;
			if (s->node < 0) {
				ret = pn_err(-EINVAL, "line %u: ring %u segment %u: unknown node '%s'",
					     sv->line, r, i, host ? host : "(none)");
				goto out;
			}
			l = &m->layouts[m->nodes[s->node].layout];
			ret = seg_nic(pn_json_get(sv, "recv"), l, host, &s->in_nic);
			if (!ret)
				ret = seg_nic(pn_json_get(sv, "send"), l, host, &s->out_nic);
			if (ret)
				goto out;
			if (!gl || gl->type != PN_JSON_ARRAY || !gl->n) {
				ret = pn_err(-EINVAL, "line %u: ring %u segment %u: \"gpus\" must be a "
						      "non-empty array",
					     sv->line, r, i);
				goto out;
			}
			s->off = off;
			s->n = (int)gl->n;
			for (k = 0; k < gl->n; k++) {
				long long idx;
				int g;

				if (pn_json_int(pn_json_at(gl, k), &idx)) {
					ret = pn_err(-EINVAL, "line %u: GPU indices must be integers",
						     sv->line);
					goto out;
				}
				for (g = 0; g < l->ngpus && l->gpus[g].index != idx; g++)
					;
				if (g == l->ngpus) {
					ret = pn_err(-EINVAL, "line %u: %s has no GPU with index %lld",
						     sv->line, host, idx);
					goto out;
				}
				ring->gpus[off++] = g;
			}
		}
	}
	ret = pn_plan_analyze(p, 0);
	if (!ret) {
		check_fields(p, root, rings, &hi);
		ret = keep_rails(p, root, rings);
	}
out:
	free(hi.ord);
	pn_json_release(&doc);
	return ret;
}

