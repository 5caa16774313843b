/* SPDX-License-Identifier: MIT */
/*
 * Ring plans in and out: `penny topo --save` files into the model, plans
 * read back from `ring-plan --json`, and NCCL's graph XML both ways
 * (NCCL_GRAPH_FILE to write, NCCL_GRAPH_DUMP_FILE / our own files to read).
 */
#define _GNU_SOURCE
#include "plan/plan.h"

#include "base/log.h"
#include "base/minijson.h"
#include "base/util.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ topo file */

static int json_err(const char *file, const char *fmt, const char *what, unsigned line)
{
	char msg[256];

	snprintf(msg, sizeof(msg), fmt, what);
	return pn_err(-EINVAL, "'%s' line %u: %s", file, line, msg);
}

static int gpu_by_name(const struct pn_plan_layout *l, const char *name)
{
	int g;

	for (g = 0; g < l->ngpus; g++)
		if (!strcmp(l->gpus[g].name, name))
			return g;
	return -1;
}

static int cmp_gpu_index(const void *a, const void *b)
{
	const struct pn_plan_gpu *x = a, *y = b;

	return x->index < y->index ? -1 : x->index > y->index;
}

static int port_active(const char *state)
{
	size_t n = strlen(state);

	/* "ACTIVE" or sysfs style "4: ACTIVE" */
	return n >= 6 && !strcmp(state + n - 6, "ACTIVE");
}

/* Class from a matrix row; missing -> UNKNOWN (counted). */
static int matrix_class(const struct pn_jval *row, const char *key, const char *key2,
			struct pn_plan_path *out, int *missing, const char *file)
{
	const struct pn_jval *v = pn_json_get(row, key);

	if (!v && key2)
		v = pn_json_get(row, key2);
	if (!v) {
		out->cls = PN_PLAN_PATH_UNKNOWN;
		out->nv = 0;
		(*missing)++;
		return 0;
	}
	if (!pn_json_str(v) || pn_plan_path_parse(pn_json_str(v), out))
		return pn_err(-EINVAL, "'%s' line %u: path class for '%s' must be X, NV<n>, PIX, "
				       "PXB, PHB, NODE or SYS",
			      file, v->line, key);
	return 0;
}

int pn_plan_model_add_topo(struct pn_plan_model *m, const char *text, size_t len,
			   const char *file)
{
	struct pn_json_doc doc;
	const struct pn_jval *root, *v, *gpus, *nics, *matrix, *rails;
	struct pn_plan_layout l;
	char host[PN_PLAN_NAME];
	long long ver;
	unsigned i, j, k;
	int ret, missing = 0, asym = 0;
	/* topo NIC i -> first port entry, number of entries */
	int first[PN_PLAN_MAX_NICS], count[PN_PLAN_MAX_NICS];

	memset(&l, 0, sizeof(l));
	ret = pn_json_parse(&doc, text, len);
	if (ret)
		return pn_err_ctx(ret, "'%s'", file);
	root = doc.root;
	if (root->type != PN_JSON_OBJECT) {
		ret = json_err(file, "a topology file is a JSON object%s", "", root->line);
		goto out;
	}
	if (pn_json_get(root, "rings")) {
		ret = pn_err(-EINVAL, "'%s' is a ring plan, not a topology file (see --check)", file);
		goto out;
	}
	v = pn_json_get(root, "version");
	if (pn_json_int(v, &ver) || ver != 1) {
		ret = pn_err(-EINVAL, "'%s': \"version\" must be 1 (a `penny topo --save` file)", file);
		goto out;
	}
	v = pn_json_get(root, "host");
	if (!pn_json_str(v) || !*pn_json_str(v) || strlen(pn_json_str(v)) >= sizeof(host)) {
		ret = pn_err(-EINVAL, "'%s': \"host\" must be a non-empty string under %zu bytes",
			     file, sizeof(host));
		goto out;
	}
	snprintf(host, sizeof(host), "%s", pn_json_str(v));

	gpus = pn_json_get(root, "gpus");
	if (!gpus || gpus->type != PN_JSON_ARRAY) {
		ret = pn_err(-EINVAL, "'%s': \"gpus\" must be an array", file);
		goto out;
	}
	if (gpus->n == 0) {
		ret = pn_err(-EINVAL, "'%s': %s has no GPU", file, host);
		goto out;
	}
	if (gpus->n > PN_PLAN_MAX_GPUS) {
		ret = pn_err(-EINVAL, "'%s': %u GPUs, at most %d per node", file, gpus->n,
			     PN_PLAN_MAX_GPUS);
		goto out;
	}
	l.ngpus = (int)gpus->n;
	for (i = 0; i < gpus->n; i++) {
		const struct pn_jval *gv = pn_json_at(gpus, i);
		const char *name = pn_json_str(pn_json_get(gv, "name"));
		long long idx = i;

		if (!name || !*name || strlen(name) >= sizeof(l.gpus[0].name)) {
			ret = json_err(file, "a GPU needs a \"name\" (under 16 bytes)%s", "", gv->line);
			goto out;
		}
		v = pn_json_get(gv, "index");
		if (v && (pn_json_int(v, &idx) || idx < 0 || idx > 1023)) {
			ret = json_err(file, "GPU '%s': \"index\" must be an integer 0-1023", name,
				       v->line);
			goto out;
		}
		snprintf(l.gpus[i].name, sizeof(l.gpus[i].name), "%s", name);
		l.gpus[i].index = (int)idx;
	}
	qsort(l.gpus, (size_t)l.ngpus, sizeof(l.gpus[0]), cmp_gpu_index);
	for (i = 1; i < (unsigned)l.ngpus; i++) {
		if (l.gpus[i].index == l.gpus[i - 1].index) {
			ret = pn_err(-EINVAL, "'%s': GPUs '%s' and '%s' have the same index %d", file,
				     l.gpus[i - 1].name, l.gpus[i].name, l.gpus[i].index);
			goto out;
		}
	}
	for (i = 0; i < (unsigned)l.ngpus; i++)
		for (j = i + 1; j < (unsigned)l.ngpus; j++)
			if (!strcmp(l.gpus[i].name, l.gpus[j].name)) {
				ret = pn_err(-EINVAL, "'%s': two GPUs named '%s'", file,
					     l.gpus[i].name);
				goto out;
			}

	nics = pn_json_get(root, "nics");
	if (nics && nics->type != PN_JSON_ARRAY) {
		ret = pn_err(-EINVAL, "'%s': \"nics\" must be an array", file);
		goto out;
	}
	if (pn_json_len(nics) > PN_PLAN_MAX_NICS) {
		ret = pn_err(-EINVAL, "'%s': %u NICs, at most %d per node", file, pn_json_len(nics),
			     PN_PLAN_MAX_NICS);
		goto out;
	}
	/* count port entries */
	k = 0;
	for (i = 0; i < pn_json_len(nics); i++) {
		unsigned np = pn_json_len(pn_json_get(pn_json_at(nics, i), "ports"));

		k += np ? np : 1;
	}
	if (k > PN_PLAN_MAX_NICS) {
		ret = pn_err(-EINVAL, "'%s': %u NIC ports, at most %d per node", file, k,
			     PN_PLAN_MAX_NICS);
		goto out;
	}
	l.nnics = 0;
	if (k) {
		l.nics = calloc(k, sizeof(*l.nics));
		l.gn = calloc((size_t)l.ngpus * k, sizeof(*l.gn));
		if (!l.nics || !l.gn) {
			ret = pn_err(-ENOMEM, "out of memory");
			goto out;
		}
	}
	for (i = 0; i < pn_json_len(nics); i++) {
		const struct pn_jval *nv = pn_json_at(nics, i), *ports = pn_json_get(nv, "ports");
		const char *label = pn_json_str(pn_json_get(nv, "name"));
		const char *dev = pn_json_str(pn_json_get(nv, "device"));
		unsigned np = pn_json_len(ports), p;

		if (!dev || !*dev || strlen(dev) >= PN_PLAN_NAME - 4) {
			ret = json_err(file, "a NIC needs a \"device\" name%s", "", nv->line);
			goto out;
		}
		if (!label)
			label = dev;
		if (strlen(label) >= sizeof(l.nics[0].label)) {
			ret = json_err(file, "NIC name '%s' is too long", label, nv->line);
			goto out;
		}
		for (j = 0; j < i; j++) {
			const char *ol = pn_json_str(pn_json_get(pn_json_at(nics, j), "name"));
			const char *od = pn_json_str(pn_json_get(pn_json_at(nics, j), "device"));

			if ((ol && !strcmp(ol, label)) || (od && !strcmp(od, dev))) {
				ret = pn_err(-EINVAL, "'%s': NIC '%s' (%s) is listed twice", file, label,
					     dev);
				goto out;
			}
		}
		first[i] = l.nnics;
		count[i] = np ? (int)np : 1;
		if (!np)
			pn_plan_msg(&m->notes, "%s: %s (%s) lists no ports: not used", host, label, dev);
		for (p = 0; p < (np ? np : 1); p++) {
			struct pn_plan_nic *c = &l.nics[l.nnics];
			const struct pn_jval *pv = pn_json_at(ports, p);
			long long port = 1;
			double rate = 0;
			const char *state = np ? pn_json_str(pn_json_get(pv, "state")) : "NONE";

			v = pn_json_get(pv, "port");
			if (v && (pn_json_int(v, &port) || port < 1 || port > 255)) {
				ret = json_err(file, "%s: \"port\" must be an integer 1-255", dev, v->line);
				goto out;
			}
			v = pn_json_get(pv, "rate_gbps");
			if (v && (pn_json_num(v, &rate) || rate < 0)) {
				ret = json_err(file, "%s: \"rate_gbps\" must be a number >= 0", dev,
					       v->line);
				goto out;
			}
			if (!state)
				state = "UNKNOWN";
			snprintf(c->device, sizeof(c->device), "%s", dev);
			if (np > 1)
				snprintf(c->name, sizeof(c->name), "%s:%lld", dev, port);
			else
				snprintf(c->name, sizeof(c->name), "%s", dev);
			snprintf(c->label, sizeof(c->label), "%s", label);
			snprintf(c->state, sizeof(c->state), "%s", state);
			c->port = (int)port;
			c->rate_gbps = rate;
			c->active = np && port_active(state);
			c->rail = l.nnics;
			c->netdev = -1;
			if (c->active && rate <= 0)
				pn_plan_msg(&m->notes, "%s: %s has no rate: its links count as 0 Gb/s",
					    host, c->name);
			l.nnics++;
		}
	}

	matrix = pn_json_get(root, "matrix");
	if (matrix && matrix->type != PN_JSON_OBJECT) {
		ret = pn_err(-EINVAL, "'%s': \"matrix\" must be an object", file);
		goto out;
	}
	for (i = 0; i < (unsigned)l.ngpus; i++) {
		const struct pn_jval *row = pn_json_get(matrix, l.gpus[i].name);

		for (j = 0; j < (unsigned)l.ngpus; j++) {
			if (i == j) {
				l.gg[i][j].cls = PN_PATH_X;
				continue;
			}
			ret = matrix_class(row, l.gpus[j].name, NULL, &l.gg[i][j], &missing, file);
			if (ret)
				goto out;
		}
		for (j = 0; j < pn_json_len(nics); j++) {
			const struct pn_jval *nv = pn_json_at(nics, j);
			const char *dev = pn_json_str(pn_json_get(nv, "device"));
			const char *label = pn_json_str(pn_json_get(nv, "name"));
			struct pn_plan_path pth;
			int q;

			ret = matrix_class(row, label ? label : dev, dev, &pth, &missing, file);
			if (ret)
				goto out;
			for (q = 0; q < count[j]; q++)
				l.gn[i * l.nnics + first[j] + q] = pth;
		}
	}
	/* an asymmetric matrix counts the worse direction both ways */
	for (i = 0; i < (unsigned)l.ngpus; i++)
		for (j = i + 1; j < (unsigned)l.ngpus; j++)
			if (memcmp(&l.gg[i][j], &l.gg[j][i], sizeof(l.gg[i][j]))) {
				if (pn_plan_path_score(l.gg[i][j]) > pn_plan_path_score(l.gg[j][i]))
					l.gg[j][i] = l.gg[i][j];
				else
					l.gg[i][j] = l.gg[j][i];
				asym++;
			}
	if (missing) {
		pn_plan_msg(&m->notes, "%s: the matrix lacks %d path classes; they count as unknown "
				       "(worst)",
			    host, missing);
	}
	if (asym)
		pn_plan_msg(&m->notes, "%s: %d GPU pairs have different classes each way; the worse "
				       "one is used",
			    host, asym);

	rails = pn_json_get(root, "rails");
	if (rails && rails->type != PN_JSON_ARRAY) {
		ret = pn_err(-EINVAL, "'%s': \"rails\" must be an array", file);
		goto out;
	}
	for (i = 0; i < pn_json_len(rails); i++) {
		const struct pn_jval *rv = pn_json_at(rails, i), *list = pn_json_get(rv, "nics");
		const char *gname = pn_json_str(pn_json_get(rv, "gpu"));
		int g = gname ? gpu_by_name(&l, gname) : -1;

		if (g < 0) {
			ret = json_err(file, "rails: unknown GPU '%s'", gname ? gname : "(none)",
				       rv->line);
			goto out;
		}
		if (list && list->type != PN_JSON_ARRAY) {
			ret = json_err(file, "rails: \"nics\" of %s must be an array", gname, rv->line);
			goto out;
		}
		for (j = 0; j < pn_json_len(list); j++) {
			const char *nn = pn_json_str(pn_json_at(list, j));
			int hit = 0;

			for (k = 0; nn && k < (unsigned)l.nnics; k++)
				if (!strcmp(l.nics[k].label, nn) || !strcmp(l.nics[k].device, nn)) {
					l.gpus[g].near |= 1ull << k;
					hit = 1;
				}
			if (!hit) {
				ret = json_err(file, "rails: %s names an unknown NIC", gname, rv->line);
				goto out;
			}
		}
	}
	if (!rails) {
		/* nearest NIC by path class, ties by index (like penny topo) */
		for (i = 0; i < (unsigned)l.ngpus; i++) {
			int best = INT_MAX, bn = -1;

			for (k = 0; k < (unsigned)l.nnics; k++) {
				int sc = pn_plan_path_score(l.gn[i * l.nnics + k]);

				if (sc < best && sc < 600) {
					best = sc;
					bn = (int)k;
				}
			}
			if (bn >= 0) {
				for (k = 0; k < (unsigned)l.nnics; k++)
					if (!strcmp(l.nics[k].label, l.nics[bn].label))
						l.gpus[i].near |= 1ull << k;
			}
		}
	}
	if (!m->source[0])
		snprintf(m->source, sizeof(m->source), "topo-file");
	ret = pn_plan_model_add_node(m, host, &l);
out:
	pn_plan_layout_release(&l);
	pn_json_release(&doc);
	return ret;
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
		if (pn_json_get(nv, "port") && pn_json_int(pn_json_get(nv, "port"), &port))
			return pn_err(-EINVAL, "layout %u NIC %s: bad \"port\"", li, name);
		if (pn_json_int(pn_json_get(nv, "rail"), &rail) || rail < -1 || rail > 65535)
			return pn_err(-EINVAL, "layout %u NIC %s: \"rail\" must be an integer", li,
				      name);
		c->port = (int)port;
		c->rail = (int)rail;
		if (pn_json_get(nv, "rate_gbps") &&
		    pn_json_num(pn_json_get(nv, "rate_gbps"), &c->rate_gbps))
			return pn_err(-EINVAL, "layout %u NIC %s: bad \"rate_gbps\"", li, name);
		a = pn_json_get(nv, "active");
		c->active = a ? (a->type == PN_JSON_BOOL && a->u.b) : port_active(c->state);
		c->netdev = -1;
	}
	for (i = 0; i < (unsigned)l->ngpus; i++) {
		const struct pn_jval *gv = pn_json_at(gpus, i), *near = pn_json_get(gv, "nics");
		const char *name = pn_json_str(pn_json_get(gv, "name"));
		long long idx;

		if (!name || !*name || strlen(name) >= sizeof(l->gpus[0].name) ||
		    gpu_by_name(l, name) >= 0 || nic_by_name(l, name) >= 0)
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
			ret = matrix_class(row, l->gpus[j].name, NULL, &l->gg[i][j], &missing,
					   "plan");
			if (ret)
				return ret;
		}
		for (j = 0; j < (unsigned)l->nnics; j++) {
			ret = matrix_class(row, l->nics[j].name, NULL, &l->gn[i * l->nnics + j],
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
		FVIOL("the plan's \"%s\" is %lld; it has %d %s", key, x, want, what);
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
	if (!ret)
		check_fields(p, root, rings, &hi);
out:
	free(hi.ord);
	pn_json_release(&doc);
	return ret;
}

/* ------------------------------------------------------ NCCL graph: write */

static const struct pn_plan_seg *seg_of(const struct pn_plan_ring *r, int node)
{
	int i;

	if (node < r->nseg && r->seg[node].node == node)
		return &r->seg[node];
	for (i = 0; i < r->nseg; i++)
		if (r->seg[i].node == node)
			return &r->seg[i];
	return NULL;
}

static int seg_same(const struct pn_plan_ring *ra, const struct pn_plan_seg *a,
		    const struct pn_plan_ring *rb, const struct pn_plan_seg *b)
{
	return a->in_nic == b->in_nic && a->out_nic == b->out_nic && a->n == b->n &&
	       !memcmp(ra->gpus + a->off, rb->gpus + b->off, sizeof(int) * (size_t)a->n);
}

int pn_plan_nccl_shared_ok(const struct pn_plan *p)
{
	const struct pn_plan_model *m = p->model;
	int N = m->nnodes, i, c;

	if (N == 1)
		return 0;
	if (N % 2)
		return pn_err(-EINVAL, "%d nodes: NCCL swaps channel pairs on odd nodes only, so an "
				       "odd node count needs one file per node (%%h or %%n in the "
				       "file name)",
			      N);
	if (p->nrings % 2)
		return pn_err(-EINVAL, "%d rings: NCCL swaps channel pairs only for an even channel "
				       "count; use one file per node (%%h or %%n in the file name)",
			      p->nrings);
	for (i = 1; i < N; i++)
		if (m->nodes[i].layout != m->nodes[0].layout)
			return pn_err(-EINVAL, "%s and %s differ, so one file cannot serve both; use "
					       "one file per node (%%h or %%n in the file name)",
				      m->nodes[0].host, m->nodes[i].host);
	for (c = 0; c < p->nrings; c++) {
		const struct pn_plan_ring *r = &p->rings[c];

		for (i = 0; i < N; i++) {
			const struct pn_plan_ring *r0 = &p->rings[i % 2 ? c ^ 1 : c];
			const struct pn_plan_seg *a = seg_of(r, i), *b = seg_of(r0, 0);

			if (r->nseg != N || r->seg[i].node != i || !a || !b || !seg_same(r, a, r0, b))
				return pn_err(-EINVAL, "ring %d on %s is not what NCCL derives from "
						       "%s's channels (crossnic=2); use one file per "
						       "node (%%h or %%n in the file name)",
					      c, m->nodes[i].host, m->nodes[0].host);
		}
	}
	return 0;
}

static void put_dev(FILE *f, const char *tag, long v, int rank)
{
	/* as NCCL writes them: "%#lx" (0 is "0", 1 is "0x1"), rank in decimal */
	fprintf(f, "      <%s dev=\"", tag);
	if (v)
		fprintf(f, "0x%lx", v);
	else
		fputc('0', f);
	if (rank >= 0)
		fprintf(f, "\" rank=\"%d\"/>\n", rank);
	else
		fputs("\"/>\n", f);
}

/* Text safe inside an XML comment (no "--"). */
static void put_comment_text(FILE *f, const char *s)
{
	for (; *s; s++) {
		if (*s == '-' && s[1] == '-')
			fputs("-_", f);
		else if ((unsigned char)*s >= 0x20)
			fputc(*s, f);
		if (*s == '-' && s[1] == '-')
			s++;
	}
}

int pn_plan_write_nccl(const struct pn_plan *p, int node, FILE *f)
{
	const struct pn_plan_model *m = p->model;
	int N = m->nnodes, shared = node < 0, src = node < 0 ? 0 : node, ranks, c, k;
	const struct pn_plan_layout *l;
	struct pn_plan_path wi = { PN_PATH_X, 0 }, wn = { PN_PATH_PIX, 0 };
	double gbs;
	char num[32];
	int ret;

	if (node >= N)
		return pn_err(-EINVAL, "no node %d", node);
	if (shared) {
		ret = pn_plan_nccl_shared_ok(p);
		if (ret)
			return ret;
	}
	if (p->nrings > 64)
		return pn_err(-EINVAL, "%d rings: NCCL reads at most 64 channels", p->nrings);
	ranks = !shared || N == 1;
	l = &m->layouts[m->nodes[src].layout];
	/* worst classes on this node: NCCL's typeintra / typeinter */
	for (c = 0; c < p->nrings; c++) {
		const struct pn_plan_seg *s = seg_of(&p->rings[c], src);
		const int *g;

		if (!s)
			return pn_err(-EINVAL, "ring %d does not pass %s", c, m->nodes[src].host);
		g = p->rings[c].gpus + s->off;
		for (k = 0; k + 1 < s->n; k++)
			if (pn_plan_path_score(l->gg[g[k]][g[k + 1]]) > pn_plan_path_score(wi))
				wi = l->gg[g[k]][g[k + 1]];
		if (N == 1 && s->n > 1 && pn_plan_path_score(l->gg[g[s->n - 1]][g[0]]) > pn_plan_path_score(wi))
			wi = l->gg[g[s->n - 1]][g[0]];
		if (s->in_nic >= 0 && pn_plan_path_score(l->gn[g[0] * l->nnics + s->in_nic]) >
					      pn_plan_path_score(wn))
			wn = l->gn[g[0] * l->nnics + s->in_nic];
		if (s->out_nic >= 0 && pn_plan_path_score(l->gn[g[s->n - 1] * l->nnics + s->out_nic]) >
					       pn_plan_path_score(wn))
			wn = l->gn[g[s->n - 1] * l->nnics + s->out_nic];
	}
	gbs = (double)(long)(p->ring_gbs * 100 + 0.5) / 100;
	snprintf(num, sizeof(num), "%g", gbs);

	fputs("<!-- penny ring-plan: NCCL_GRAPH_FILE for ", f);
	if (shared && N > 1) {
		fprintf(f, "all %d nodes (channel pairs swap on odd nodes: crossnic=2)", N);
	} else {
		put_comment_text(f, m->nodes[src].host);
		fprintf(f, " (node %d of %d), ranks %d-%d", src + 1, N, m->nodes[src].rank0,
			m->nodes[src].rank0 + l->ngpus - 1);
	}
	fputs(". gpu dev = NVML index", f);
	if (N > 1) {
		fputs("; net dev = NCCL net device:", f);
		for (k = 0; k < l->nnics; k++) {
			if (l->nics[k].netdev < 0)
				continue;
			fprintf(f, " %d=", l->nics[k].netdev);
			put_comment_text(f, l->nics[k].device);
			fprintf(f, ":%d/rail%d", l->nics[k].port, l->nics[k].rail);
		}
	}
	fputs(" -->\n", f);
	fputs("<graphs version=\"1\">\n", f);
	fprintf(f,
		"  <graph id=\"0\" pattern=\"4\" crossnic=\"%d\" nchannels=\"%d\" speedintra=\"%s\" "
		"speedinter=\"%s\" latencyinter=\"0\" typeintra=\"%s\" typeinter=\"%s\" "
		"samechannels=\"0\">\n",
		shared && N > 1 ? 2 : 0, p->nrings, num, num, pn_plan_path_nccl(wi),
		N > 1 ? pn_plan_path_nccl(wn) : "PIX");
	for (c = 0; c < p->nrings; c++) {
		const struct pn_plan_seg *s = seg_of(&p->rings[c], src);
		const int *g = p->rings[c].gpus + s->off;

		fputs("    <channel>\n", f);
		if (N > 1) {
			if (s->in_nic < 0 || l->nics[s->in_nic].netdev < 0)
				return pn_err(-EINVAL, "ring %d on %s: receive NIC is not an NCCL net "
						       "device",
					      c, m->nodes[src].host);
			put_dev(f, "net", l->nics[s->in_nic].netdev, -1);
		}
		for (k = 0; k < s->n; k++)
			put_dev(f, "gpu", l->gpus[g[k]].index,
				ranks ? m->nodes[src].rank0 + g[k] : -1);
		if (N > 1) {
			if (s->out_nic < 0 || l->nics[s->out_nic].netdev < 0)
				return pn_err(-EINVAL, "ring %d on %s: send NIC is not an NCCL net "
						       "device",
					      c, m->nodes[src].host);
			put_dev(f, "net", l->nics[s->out_nic].netdev, -1);
		}
		fputs("    </channel>\n", f);
	}
	fputs("  </graph>\n</graphs>\n", f);
	if (ferror(f))
		return pn_err(-EIO, "write error");
	return 0;
}

/* ------------------------------------------------------- NCCL graph: read */

#define XML_MAX_DEPTH 32
#define XML_MAX_ATTRS 32

struct xel {
	char *name;
	int line;
	int nattr;
	char *ak[XML_MAX_ATTRS], *av[XML_MAX_ATTRS];
	struct xel **kids;
	int nkids, capkids;
};

struct xparser {
	const char *p, *end, *file;
	int line;
	struct pn_plan_msgs *nccl;	/* what NCCL's own parser would choke on */
	int ncclbad;
};

static void xel_free(struct xel *e)
{
	int i;

	if (!e)
		return;
	for (i = 0; i < e->nkids; i++)
		xel_free(e->kids[i]);
	for (i = 0; i < e->nattr; i++) {
		free(e->ak[i]);
		free(e->av[i]);
	}
	free(e->kids);
	free(e->name);
	free(e);
}

static int xfail(struct xparser *x, const char *what)
{
	return pn_err(-EINVAL, "'%s' line %d: %s", x->file, x->line, what);
}

static void xquirk(struct xparser *x, const char *what)
{
	if (x->nccl && x->ncclbad++ < 5)
		pn_plan_msg(x->nccl, "'%s' line %d: NCCL's XML reader cannot read this: %s", x->file,
			    x->line, what);
}

static void xadvance(struct xparser *x)
{
	if (*x->p == '\n')
		x->line++;
	x->p++;
}

/* Whitespace and comments between elements. */
static int xskip(struct xparser *x)
{
	for (;;) {
		while (x->p < x->end && isspace((unsigned char)*x->p)) {
			if (*x->p == '\t')
				xquirk(x, "a tab (it skips only spaces and newlines)");
			xadvance(x);
		}
		if (x->end - x->p >= 4 && !memcmp(x->p, "<!--", 4)) {
			int start = x->line;

			x->p += 4;
			for (;;) {
				if (x->end - x->p < 3) {
					x->line = start;
					return xfail(x, "unterminated comment");
				}
				if (!memcmp(x->p, "--", 2)) {
					if (x->p[2] != '>')
						return xfail(x, "'--' inside a comment");
					x->p += 3;
					break;
				}
				xadvance(x);
			}
			continue;
		}
		return 0;
	}
}

static int is_name_start(char c)
{
	return isalpha((unsigned char)c) || c == '_' || c == ':';
}

static int is_name_char(char c)
{
	return isalnum((unsigned char)c) || c == '_' || c == ':' || c == '-' || c == '.';
}

static char *xname(struct xparser *x)
{
	const char *s = x->p;
	char *n;

	if (x->p >= x->end || !is_name_start(*x->p))
		return NULL;
	while (x->p < x->end && is_name_char(*x->p))
		x->p++;
	n = strndup(s, (size_t)(x->p - s));
	return n;
}

static int xattr_value(struct xparser *x, char **out)
{
	char q, *buf, *d;
	const char *s;

	if (x->p >= x->end || (*x->p != '"' && *x->p != '\''))
		return xfail(x, "attribute value must be quoted");
	q = *x->p++;
	s = x->p;
	while (x->p < x->end && *x->p != q) {
		if (*x->p == '<')
			return xfail(x, "'<' in an attribute value");
		xadvance(x);
	}
	if (x->p >= x->end)
		return xfail(x, "unterminated attribute value");
	buf = malloc((size_t)(x->p - s) + 1);
	if (!buf)
		return pn_err(-ENOMEM, "out of memory");
	for (d = buf; s < x->p; s++) {
		static const struct {
			const char *ent;
			char c;
		} ents[] = { { "&amp;", '&' }, { "&lt;", '<' }, { "&gt;", '>' },
			     { "&quot;", '"' }, { "&apos;", '\'' } };
		size_t e;

		if (*s != '&') {
			*d++ = *s;
			continue;
		}
		for (e = 0; e < PN_ARRAY_SIZE(ents); e++) {
			size_t n = strlen(ents[e].ent);

			if ((size_t)(x->p - s) >= n && !memcmp(s, ents[e].ent, n)) {
				*d++ = ents[e].c;
				s += n - 1;
				break;
			}
		}
		if (e == PN_ARRAY_SIZE(ents)) {
			free(buf);
			return xfail(x, "unknown entity in an attribute value");
		}
	}
	*d = 0;
	x->p++;
	if (strlen(buf) > 255)
		xquirk(x, "an attribute value over 255 bytes");
	*out = buf;
	return 0;
}

static int xelement(struct xparser *x, int depth, struct xel **out)
{
	struct xel *e;
	int ret, i;

	*out = NULL;
	if (depth > XML_MAX_DEPTH)
		return xfail(x, "elements nested too deep");
	if (x->p >= x->end || *x->p != '<')
		return xfail(x, "expected '<'");
	x->p++;
	e = calloc(1, sizeof(*e));
	if (!e)
		return pn_err(-ENOMEM, "out of memory");
	e->line = x->line;
	e->name = xname(x);
	if (!e->name) {
		ret = xfail(x, "expected an element name");
		goto fail;
	}
	for (;;) {
		int nsp = 0, nl = 0;
		char *k, *v = NULL;

		while (x->p < x->end && isspace((unsigned char)*x->p)) {
			if (*x->p == '\n' || *x->p == '\r')
				nl = 1;
			else if (*x->p != ' ')
				nl = 2;
			nsp++;
			xadvance(x);
		}
		if (x->p >= x->end) {
			ret = xfail(x, "unterminated tag");
			goto fail;
		}
		if (*x->p == '/' || *x->p == '>') {
			if (nl)
				xquirk(x, "a line break or tab before the end of a tag");
			break;
		}
		if (!nsp) {
			ret = xfail(x, "attributes must be separated by whitespace");
			goto fail;
		}
		if (nsp != 1 || nl)
			xquirk(x, "attributes must be separated by exactly one space on one line");
		k = xname(x);
		if (!k) {
			ret = xfail(x, "expected an attribute name");
			goto fail;
		}
		if (x->p >= x->end || *x->p != '=') {
			free(k);
			ret = xfail(x, "expected '=' after an attribute name (no spaces around it)");
			goto fail;
		}
		x->p++;
		ret = xattr_value(x, &v);
		if (ret) {
			free(k);
			goto fail;
		}
		for (i = 0; i < e->nattr; i++)
			if (!strcmp(e->ak[i], k))
				break;
		if (i < e->nattr || e->nattr == XML_MAX_ATTRS) {
			free(k);
			free(v);
			ret = xfail(x, i < e->nattr ? "repeated attribute" : "too many attributes");
			goto fail;
		}
		e->ak[e->nattr] = k;
		e->av[e->nattr++] = v;
	}
	if (*x->p == '/') {
		x->p++;
		if (x->p >= x->end || *x->p != '>') {
			ret = xfail(x, "expected '>' after '/'");
			goto fail;
		}
		x->p++;
		*out = e;
		return 0;
	}
	x->p++;
	for (;;) {
		struct xel *kid;

		ret = xskip(x);
		if (ret)
			goto fail;
		if (x->p >= x->end) {
			ret = xfail(x, "unterminated element");
			goto fail;
		}
		if (*x->p != '<') {
			ret = xfail(x, "text content is not expected in a graph file");
			goto fail;
		}
		if (x->end - x->p >= 2 && x->p[1] == '/') {
			char *n;

			x->p += 2;
			n = xname(x);
			if (!n || strcmp(n, e->name)) {
				free(n);
				ret = xfail(x, "closing tag does not match");
				goto fail;
			}
			free(n);
			if (x->p >= x->end || *x->p != '>') {
				ret = xfail(x, "expected '>' in a closing tag");
				goto fail;
			}
			x->p++;
			*out = e;
			return 0;
		}
		ret = xelement(x, depth + 1, &kid);
		if (ret)
			goto fail;
		if (e->nkids == e->capkids) {
			int cap = e->capkids ? e->capkids * 2 : 8;
			struct xel **nk = realloc(e->kids, (size_t)cap * sizeof(*nk));

			if (!nk) {
				xel_free(kid);
				ret = pn_err(-ENOMEM, "out of memory");
				goto fail;
			}
			e->kids = nk;
			e->capkids = cap;
		}
		e->kids[e->nkids++] = kid;
	}
fail:
	xel_free(e);
	return ret;
}

static int xml_parse(const char *text, size_t len, const char *file, struct pn_plan_msgs *nccl,
		     struct xel **root)
{
	struct xparser x = { .p = text, .end = text + len, .file = file, .line = 1, .nccl = nccl };
	int ret;

	*root = NULL;
	if (len >= 3 && !memcmp(text, "\xef\xbb\xbf", 3))
		return xfail(&x, "byte-order mark");
	ret = xskip(&x);
	if (ret)
		return ret;
	if (x.end - x.p >= 5 && !memcmp(x.p, "<?xml", 5)) {
		xquirk(&x, "an XML declaration (<?xml ...?>)");
		while (x.p < x.end - 1 && memcmp(x.p, "?>", 2))
			xadvance(&x);
		if (x.p >= x.end - 1)
			return xfail(&x, "unterminated XML declaration");
		x.p += 2;
		ret = xskip(&x);
		if (ret)
			return ret;
	}
	if (x.end - x.p >= 2 && (x.p[1] == '!' || x.p[1] == '?'))
		return xfail(&x, "DOCTYPE and processing instructions are not supported");
	ret = xelement(&x, 0, root);
	if (ret)
		return ret;
	ret = xskip(&x);
	if (!ret && x.p != x.end)
		ret = xfail(&x, "content after the root element");
	if (ret) {
		xel_free(*root);
		*root = NULL;
	}
	return ret;
}

static const char *xattr(const struct xel *e, const char *k)
{
	int i;

	for (i = 0; i < e->nattr; i++)
		if (!strcmp(e->ak[i], k))
			return e->av[i];
	return NULL;
}

/* NCCL reads dev values with strtol(str, NULL, 16): "0x1" and "1" are both 1. */
static int parse_hex(const char *s, long *v)
{
	char *end;

	if (!s || !*s)
		return -EINVAL;
	errno = 0;
	*v = strtol(s, &end, 16);
	if (*end || errno || *v < 0)
		return -EINVAL;
	return 0;
}

static int parse_dec(const char *s, long *v)
{
	char *end;

	if (!s || !*s)
		return -EINVAL;
	errno = 0;
	*v = strtol(s, &end, 0);
	if (*end || errno || *v < 0 || *v > INT_MAX)
		return -EINVAL;
	return 0;
}

/* One file's ring graph. */
struct ngraph {
	const char *name;
	const struct xel *g;	/* <graph id="0"> */
	int crossnic;
	int nch;		/* <channel> elements */
	const struct xel **ch;
	int has_rank;
};

static int check_graph_attrs(const struct ngraph *ng, struct pn_plan_msgs *viol)
{
	static const char *const req[] = { "id", "pattern", "crossnic", "nchannels", "speedintra",
					   "speedinter", "typeintra", "typeinter", "samechannels" };
	static const char *const types[] = { "LOC", "NVL", "NVB", "PIX", "PXB",
					     "P2C", "PXN", "PHB", "SYS" };
	const struct xel *g = ng->g;
	size_t i, j;
	long v;
	int found = 0;

	for (i = 0; i < PN_ARRAY_SIZE(req); i++) {
		if (!xattr(g, req[i])) {
			pn_plan_msg(viol, "'%s' line %d: <graph> lacks \"%s\" (NCCL fails to load "
					  "the file)",
				    ng->name, g->line, req[i]);
			found++;
		}
	}
	for (i = 0; i < 2; i++) {
		const char *t = xattr(g, i ? "typeinter" : "typeintra");

		if (!t)
			continue;
		for (j = 0; j < PN_ARRAY_SIZE(types) && strcmp(types[j], t); j++)
			;
		if (j == PN_ARRAY_SIZE(types)) {
			pn_plan_msg(viol, "'%s' line %d: %s=\"%s\" is not an NCCL path type", ng->name,
				    g->line, i ? "typeinter" : "typeintra", t);
			found++;
		}
	}
	if (xattr(g, "pattern") && (parse_dec(xattr(g, "pattern"), &v) || v != 4)) {
		pn_plan_msg(viol, "'%s' line %d: the ring graph has pattern=\"%s\", NCCL's ring is 4",
			    ng->name, g->line, xattr(g, "pattern"));
		found++;
	}
	if (xattr(g, "nchannels") &&
	    (parse_dec(xattr(g, "nchannels"), &v) || v != ng->nch)) {
		pn_plan_msg(viol, "'%s' line %d: nchannels=\"%s\" but %d <channel> elements",
			    ng->name, g->line, xattr(g, "nchannels"), ng->nch);
		found++;
	}
	if (ng->nch > 64) {
		pn_plan_msg(viol, "'%s': %d channels, NCCL has at most 64", ng->name, ng->nch);
		found++;
	}
	return found;
}

static int load_graph(const struct xel *root, const char *name, struct ngraph *ng,
		      struct pn_plan_msgs *notes, struct pn_plan_msgs *viol)
{
	static const char *const gnames[] = { "ring", "tree", "collnet chain", "nvls",
					      "collnet direct" };
	long v;
	int i, k;

	memset(ng, 0, sizeof(*ng));
	ng->name = name;
	if (strcmp(root->name, "graphs"))
		return pn_err(-EINVAL, "'%s': not an NCCL graph file (root element <%s>, want "
				       "<graphs>)",
			      name, root->name);
	if (!xattr(root, "version") || parse_dec(xattr(root, "version"), &v) || v != 1)
		pn_plan_msg(viol, "'%s': <graphs version=\"%s\">: NCCL reads version 1 only", name,
			    xattr(root, "version") ? xattr(root, "version") : "(none)");
	for (i = 0; i < root->nkids; i++) {
		const struct xel *g = root->kids[i];
		long id = -1;

		if (strcmp(g->name, "graph")) {
			pn_plan_msg(notes, "'%s' line %d: <%s> ignored (NCCL ignores it too)", name,
				    g->line, g->name);
			continue;
		}
		if (parse_dec(xattr(g, "id"), &id))
			id = -1;
		if (id == 0 && !ng->g) {
			ng->g = g;
			continue;
		}
		for (k = 0, v = 0; k < g->nkids; k++)
			v += !strcmp(g->kids[k]->name, "channel");
		pn_plan_msg(notes, "'%s': graph id %ld (%s) with %ld channels not checked (rings "
				   "only)",
			    name, id, id >= 0 && id < 5 ? gnames[id] : "?", v);
	}
	if (!ng->g)
		return pn_err(-EINVAL, "'%s': no ring graph (<graph id=\"0\">)", name);
	if (xattr(ng->g, "crossnic") && !parse_dec(xattr(ng->g, "crossnic"), &v))
		ng->crossnic = (int)v;
	ng->ch = calloc((size_t)ng->g->nkids + 1, sizeof(*ng->ch));
	if (!ng->ch)
		return pn_err(-ENOMEM, "out of memory");
	for (k = 0; k < ng->g->nkids; k++) {
		const struct xel *c = ng->g->kids[k];
		int j;

		if (strcmp(c->name, "channel")) {
			pn_plan_msg(notes, "'%s' line %d: <%s> in the graph ignored", name, c->line,
				    c->name);
			continue;
		}
		ng->ch[ng->nch++] = c;
		for (j = 0; j < c->nkids; j++)
			if (!strcmp(c->kids[j]->name, "gpu") && xattr(c->kids[j], "rank"))
				ng->has_rank = 1;
	}
	if (!ng->nch)
		return pn_err(-EINVAL, "'%s': the ring graph has no channels", name);
	check_graph_attrs(ng, viol);
	return 0;
}

/* Layout guessed from a file: GPUs and net devs seen; rails = net dev. */
static int derive_layout(const struct ngraph *ng, struct pn_plan_layout *l)
{
	long gd[PN_PLAN_MAX_GPUS], nd[PN_PLAN_MAX_NICS];
	int ng_ = 0, nn = 0, c, j, a, b;

	memset(l, 0, sizeof(*l));
	for (c = 0; c < ng->nch; c++) {
		for (j = 0; j < ng->ch[c]->nkids; j++) {
			const struct xel *e = ng->ch[c]->kids[j];
			int isgpu = !strcmp(e->name, "gpu"), k;
			long v;

			if ((!isgpu && strcmp(e->name, "net")) || parse_hex(xattr(e, "dev"), &v))
				continue;
			if (isgpu) {
				for (k = 0; k < ng_ && gd[k] != v; k++)
					;
				if (k == ng_) {
					if (ng_ == PN_PLAN_MAX_GPUS)
						return pn_err(-EINVAL, "'%s': more than %d GPUs",
							      ng->name, PN_PLAN_MAX_GPUS);
					gd[ng_++] = v;
				}
			} else {
				for (k = 0; k < nn && nd[k] != v; k++)
					;
				if (k == nn) {
					if (nn == PN_PLAN_MAX_NICS)
						return pn_err(-EINVAL, "'%s': more than %d net devices",
							      ng->name, PN_PLAN_MAX_NICS);
					nd[nn++] = v;
				}
			}
		}
	}
	if (!ng_)
		return pn_err(-EINVAL, "'%s': no <gpu dev=...> in the ring graph", ng->name);
	/* sort both */
	for (a = 0; a < ng_; a++)
		for (b = a + 1; b < ng_; b++)
			if (gd[b] < gd[a]) {
				long t = gd[a];

				gd[a] = gd[b];
				gd[b] = t;
			}
	for (a = 0; a < nn; a++)
		for (b = a + 1; b < nn; b++)
			if (nd[b] < nd[a]) {
				long t = nd[a];

				nd[a] = nd[b];
				nd[b] = t;
			}
	l->ngpus = ng_;
	l->nnics = nn;
	if (nn) {
		l->nics = calloc((size_t)nn, sizeof(*l->nics));
		l->gn = calloc((size_t)(nn * ng_), sizeof(*l->gn));
		if (!l->nics || !l->gn)
			return pn_err(-ENOMEM, "out of memory");
	}
	for (a = 0; a < ng_; a++) {
		snprintf(l->gpus[a].name, sizeof(l->gpus[a].name), "GPU%ld", gd[a]);
		l->gpus[a].index = (int)gd[a];
		for (b = 0; b < ng_; b++)
			l->gg[a][b].cls = a == b ? PN_PATH_X : PN_PLAN_PATH_UNKNOWN;
		for (b = 0; b < nn; b++)
			l->gn[a * nn + b].cls = PN_PLAN_PATH_UNKNOWN;
	}
	for (b = 0; b < nn; b++) {
		snprintf(l->nics[b].name, sizeof(l->nics[b].name), "net%ld", nd[b]);
		snprintf(l->nics[b].device, sizeof(l->nics[b].device), "net%ld", nd[b]);
		snprintf(l->nics[b].state, sizeof(l->nics[b].state), "ACTIVE");
		l->nics[b].port = 1;
		l->nics[b].rail = (int)nd[b];
		l->nics[b].active = 1;
		l->nics[b].netdev = (int)nd[b];
	}
	return 0;
}

static int nic_by_netdev(const struct pn_plan_layout *l, long dev)
{
	int k;

	for (k = 0; k < l->nnics; k++)
		if (l->nics[k].netdev == dev)
			return k;
	return -1;
}

/* One channel of node n's file as a ring segment. */
static int channel_seg(const struct pn_plan_model *m, int n, const struct ngraph *ng, int chi,
		       int use_rank, struct pn_plan_ring *ring, int segi, int *off,
		       struct pn_plan_msgs *viol_or_null)
{
	struct pn_plan_msgs scratch = { 0 }, *viol = viol_or_null ? viol_or_null : &scratch;
	const struct xel *c = ng->ch[chi];
	const struct pn_plan_layout *l = &m->layouts[m->nodes[n].layout];
	struct pn_plan_seg *s = &ring->seg[segi];
	const char *host = m->nodes[n].host;
	int j, nets = 0, net[2] = { -1, -1 };

	s->node = n;
	s->in_nic = s->out_nic = -1;
	s->off = *off;
	s->n = 0;
	for (j = 0; j < c->nkids; j++) {
		const struct xel *e = c->kids[j];
		long dev, rank;
		int g;

		if (parse_hex(xattr(e, "dev"), &dev)) {
			pn_plan_msg(viol, "'%s' line %d: <%s> needs a hex dev (NCCL fails to load it)",
				    ng->name, e->line, e->name);
			continue;
		}
		if (!strcmp(e->name, "net")) {
			int k = nic_by_netdev(l, dev);

			if (k < 0)
				pn_plan_msg(viol, "'%s' line %d: net dev 0x%lx does not exist on %s",
					    ng->name, e->line, dev, host);
			if (nets < 2)
				net[nets] = k;
			else
				net[1] = k;
			nets++;
			continue;
		}
		if (strcmp(e->name, "gpu"))
			continue;
		g = -1;
		if (use_rank && !parse_dec(xattr(e, "rank"), &rank)) {
			if (rank < m->nodes[n].rank0 || rank >= m->nodes[n].rank0 + l->ngpus)
				pn_plan_msg(viol, "'%s' line %d: rank %ld is not on %s (ranks %d-%d)",
					    ng->name, e->line, rank, host, m->nodes[n].rank0,
					    m->nodes[n].rank0 + l->ngpus - 1);
			else
				g = (int)(rank - m->nodes[n].rank0);
		}
		if (g < 0) {
			for (g = 0; g < l->ngpus && l->gpus[g].index != dev; g++)
				;
			if (g == l->ngpus) {
				pn_plan_msg(viol, "'%s' line %d: gpu dev 0x%lx does not exist on %s",
					    ng->name, e->line, dev, host);
				continue;
			}
		}
		if (s->n == PN_PLAN_MAX_GPUS) {
			pn_plan_msg(viol, "'%s' line %d: too many GPUs in a channel", ng->name,
				    e->line);
			continue;
		}
		ring->gpus[(*off)++] = g;
		s->n++;
	}
	if (m->nnodes > 1 && nets != 2)
		pn_plan_msg(viol, "'%s' line %d: a channel of a multi-node ring needs 2 <net> (receive "
				  "before the GPUs, send after), found %d",
			    ng->name, c->line, nets);
	if (nets >= 1)
		s->in_nic = net[0];
	if (nets >= 2)
		s->out_nic = net[1];
	pn_plan_msgs_release(&scratch);
	return 0;
}

int pn_plan_read_nccl(struct pn_plan *p, struct pn_plan_model *m, const char *const *texts,
		      const size_t *lens, const char *const *names, int nfiles,
		      struct pn_plan_msgs *notes, struct pn_plan_msgs *viol)
{
	struct xel **roots = NULL;
	struct ngraph *gs = NULL;
	int i, n, c, R, N, ret = 0, derived = 0;

	if (nfiles < 1)
		return pn_err(-EINVAL, "no graph file");
	roots = calloc((size_t)nfiles, sizeof(*roots));
	gs = calloc((size_t)nfiles, sizeof(*gs));
	if (!roots || !gs) {
		ret = pn_err(-ENOMEM, "out of memory");
		goto out;
	}
	for (i = 0; i < nfiles; i++) {
		ret = xml_parse(texts[i], lens[i], names[i], viol, &roots[i]);
		if (ret)
			goto out;
		ret = load_graph(roots[i], names[i], &gs[i], notes, viol);
		if (ret)
			goto out;
	}
	if (!m->nnodes) {
		derived = 1;
		for (i = 0; i < nfiles; i++) {
			struct pn_plan_layout l;
			char host[32];

			ret = derive_layout(&gs[i], &l);
			if (!ret) {
				snprintf(host, sizeof(host), "node%02d", i + 1);
				ret = pn_plan_model_add_node(m, host, &l);
			}
			pn_plan_layout_release(&l);
			if (ret)
				goto out;
		}
		snprintf(m->source, sizeof(m->source), "nccl-xml");
		m->exact = 0;
		m->rails_set = 1;
		ret = pn_plan_model_finish(m);
		if (ret)
			goto out;
		/* the file's net dev numbers are the NCCL numbers */
		for (i = 0; i < m->nlayouts; i++)
			for (n = 0; n < m->layouts[i].nnics; n++)
				m->layouts[i].nics[n].netdev = m->layouts[i].nics[n].rail;
		pn_plan_msg(notes, "no model given: GPUs and net devices taken from the file%s, rails "
				   "= NCCL net dev numbers, path classes not checked",
			    nfiles > 1 ? "s" : "");
	}
	N = m->nnodes;
	if (nfiles > 1 && nfiles != N) {
		ret = pn_err(-EINVAL, "%d graph files for %d nodes: give one shared file or one per "
				      "node",
			     nfiles, N);
		goto out;
	}
	R = gs[0].nch;
	for (i = 1; i < nfiles; i++) {
		if (gs[i].nch != R)
			pn_plan_msg(viol, "'%s' has %d channels, '%s' has %d: NCCL uses the smallest "
					  "count on every rank",
				    names[0], R, names[i], gs[i].nch);
		if (gs[i].nch < R)
			R = gs[i].nch;
	}
	if (nfiles == 1 && N > 1 && gs[0].has_rank)
		pn_plan_msg(viol, "'%s' has rank attributes but serves %d nodes: NCCL would give "
				  "every node the ranks of the first (use one file per node)",
			    names[0], N);
	if (nfiles == 1 && N > 1 && gs[0].crossnic != 2)
		pn_plan_msg(notes, "'%s': crossnic=\"%d\": every node uses the same channels (NCCL "
				   "swaps channel pairs on odd nodes only with crossnic=\"2\")",
			    names[0], gs[0].crossnic);
	pn_plan_init(p, m);
	p->rings = calloc((size_t)R, sizeof(*p->rings));
	if (!p->rings) {
		ret = pn_err(-ENOMEM, "out of memory");
		goto out;
	}
	for (c = 0; c < R; c++) {
		struct pn_plan_ring *ring = &p->rings[c];
		int off = 0, tot = 0;

		for (n = 0; n < N; n++) {
			const struct ngraph *ng = &gs[nfiles > 1 ? n : 0];
			int chi = ng->crossnic == 2 && R % 2 == 0 && n % 2 ? c ^ 1 : c;

			tot += ng->ch[chi]->nkids;
		}
		ret = pn_plan_ring_alloc(ring, N, tot);
		if (ret)
			goto out;
		p->nrings++;
		ring->nseg = N;
		for (n = 0; n < N; n++) {
			const struct ngraph *ng = &gs[nfiles > 1 ? n : 0];
			int chi = ng->crossnic == 2 && R % 2 == 0 && n % 2 ? c ^ 1 : c;
			int use_rank = ng->has_rank && (nfiles > 1 || N == 1) && !derived;

			/* a shared file's channel problems are reported once, for node 0 */
			ret = channel_seg(m, n, ng, chi, use_rank, ring, n, &off,
					  nfiles > 1 || n == 0 ? viol : NULL);
			if (ret)
				goto out;
		}
	}
	ret = pn_plan_analyze(p, 0);
out:
	for (i = 0; i < nfiles && roots; i++)
		xel_free(roots[i]);
	for (i = 0; i < nfiles && gs; i++)
		free(gs[i].ch);
	free(roots);
	free(gs);
	return ret;
}

/* ------------------------------------------------------ live topology */

int pn_plan_model_add_topology(struct pn_plan_model *m, const struct pn_topo *t)
{
	struct pn_plan_layout l;
	int first[PN_PLAN_MAX_NICS], count[PN_PLAN_MAX_NICS];
	int g, h, n, k, nports = 0, ret;

	memset(&l, 0, sizeof(l));
	if (t->ngpus < 1)
		return pn_err(-EINVAL, "%s has no GPU, so there is nothing to plan (give --topo-file "
				       "FILE,... or --nodes N)",
			      t->host);
	if (t->ngpus > PN_PLAN_MAX_GPUS)
		return pn_err(-EINVAL, "%s has %d GPUs, at most %d per node", t->host, t->ngpus,
			      PN_PLAN_MAX_GPUS);
	if (t->nnics > PN_PLAN_MAX_NICS)
		return pn_err(-EINVAL, "%s has %d NICs, at most %d", t->host, t->nnics,
			      PN_PLAN_MAX_NICS);
	for (n = 0; n < t->nnics; n++)
		nports += t->devs[t->ngpus + n].nic.nports ? t->devs[t->ngpus + n].nic.nports : 1;
	if (nports > PN_PLAN_MAX_NICS)
		return pn_err(-EINVAL, "%s has %d NIC ports, at most %d", t->host, nports,
			      PN_PLAN_MAX_NICS);
	l.ngpus = t->ngpus;
	if (nports) {
		l.nics = calloc((size_t)nports, sizeof(*l.nics));
		l.gn = calloc((size_t)(nports * t->ngpus), sizeof(*l.gn));
		if (!l.nics || !l.gn) {
			ret = pn_err(-ENOMEM, "out of memory");
			goto out;
		}
	}
	for (n = 0; n < t->nnics; n++) {
		const struct pn_topo_dev *d = &t->devs[t->ngpus + n];
		int np = d->nic.nports;

		first[n] = l.nnics;
		count[n] = np ? np : 1;
		if (!np)
			pn_plan_msg(&m->notes, "%s: %s has no ports: not used", t->host, d->nic.name);
		for (k = 0; k < count[n]; k++) {
			struct pn_plan_nic *c = &l.nics[l.nnics++];
			const struct pn_port *pt = np ? &d->nic.ports[k] : NULL;

			snprintf(c->device, sizeof(c->device), "%s", d->nic.name);
			if (np > 1)
				snprintf(c->name, sizeof(c->name), "%s:%d", d->nic.name, pt->port);
			else
				snprintf(c->name, sizeof(c->name), "%s", d->nic.name);
			snprintf(c->label, sizeof(c->label), "%s", d->name);
			snprintf(c->state, sizeof(c->state), "%s",
				 pt && pt->state_name[0] ? pt->state_name : "NONE");
			c->port = pt ? pt->port : 1;
			c->rate_gbps = pt ? pt->rate_gbps : 0;
			c->active = pt && pt->state == PN_PORT_ACTIVE;
			c->netdev = -1;
		}
	}
	for (g = 0; g < t->ngpus; g++) {
		int nics[PN_PLAN_MAX_NICS + 1], cls, nr;

		snprintf(l.gpus[g].name, sizeof(l.gpus[g].name), "%s", t->devs[g].name);
		l.gpus[g].index = g; /* PCI order, as penny topo numbers them */
		for (h = 0; h < t->ngpus; h++) {
			int nv = 0, c = g == h ? PN_PATH_X : pn_topo_path(t, g, h, 0, &nv);

			l.gg[g][h].cls = (uint8_t)(c < 0 ? PN_PLAN_PATH_UNKNOWN : c);
			l.gg[g][h].nv = (uint8_t)(nv > 255 ? 255 : nv);
		}
		for (n = 0; n < t->nnics; n++) {
			int c = pn_topo_path(t, g, t->ngpus + n, 0, NULL);

			for (k = 0; k < count[n]; k++)
				l.gn[g * nports + first[n] + k].cls =
					(uint8_t)(c < 0 ? PN_PLAN_PATH_UNKNOWN : c);
		}
		nr = t->nnics ? pn_topo_rail(t, g, nics, &cls) : 0;
		for (h = 0; h < nr; h++) {
			n = nics[h] - t->ngpus;
			if (n < 0 || n >= t->nnics)
				continue;
			for (k = 0; k < count[n]; k++)
				l.gpus[g].near |= 1ull << (first[n] + k);
		}
	}
	if (!m->source[0])
		snprintf(m->source, sizeof(m->source), "%s", t->source ? t->source : "live");
	ret = pn_plan_model_add_node(m, t->host[0] ? t->host : "localhost", &l);
out:
	pn_plan_layout_release(&l);
	return ret;
}
