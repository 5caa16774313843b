/* SPDX-License-Identifier: MIT */
/*
 * Ring planner: model building, rail-aligned alternating rings, loads,
 * bandwidth prediction and validation.  See plan.h for the construction.
 */
#define _GNU_SOURCE
#include "plan/plan.h"

#include "base/log.h"
#include "base/util.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define MSGS_CAP 1000

struct pn_plan_best {
	int in, out;
	long long cost;	/* see path_cost() */
	int n;
	int8_t path[PN_PLAN_MAX_GPUS];
};

/* ---------------------------------------------------------------- paths */

int pn_plan_path_parse(const char *s, struct pn_plan_path *p)
{
	int nv = 0, cls = pn_path_parse(s, &nv);

	p->cls = 0;
	p->nv = 0;
	if (cls < 0 || (cls == PN_PATH_NV && nv > 255))
		return -EINVAL;
	p->cls = (uint8_t)cls;
	p->nv = (uint8_t)nv;
	return 0;
}

const char *pn_plan_path_name(struct pn_plan_path p, char *buf, size_t len)
{
	if (p.cls >= PN_PLAN_PATH_UNKNOWN) {
		snprintf(buf, len, "?");
		return buf;
	}
	return pn_path_name(p.cls, p.nv, buf, len);
}

int pn_plan_path_score(struct pn_plan_path p)
{
	switch (p.cls) {
	case PN_PATH_X:
		return 0;
	case PN_PATH_NV:
		return 100 - (p.nv > 99 ? 99 : p.nv);
	case PN_PATH_PIX:
		return 100;
	case PN_PATH_PXB:
		return 200;
	case PN_PATH_PHB:
		return 300;
	case PN_PATH_NODE:
		return 400;
	case PN_PATH_SYS:
		return 500;
	default:
		return 600;
	}
}

const char *pn_plan_path_nccl(struct pn_plan_path p)
{
	switch (p.cls) {
	case PN_PATH_X:
		return "LOC";
	case PN_PATH_NV:
		return "NVL";
	case PN_PATH_PIX:
		return "PIX";
	case PN_PATH_PXB:
		return "PXB";
	case PN_PATH_PHB:
	case PN_PATH_NODE: /* NCCL has no NODE: host bridges of one CPU are PHB */
		return "PHB";
	default:
		return "SYS";
	}
}

/* ------------------------------------------------------------- messages */

int pn_plan_msg(struct pn_plan_msgs *m, const char *fmt, ...)
{
	va_list ap;
	char *s;

	if (m->n >= MSGS_CAP) {
		m->dropped++;
		return 0;
	}
	if (m->n == m->cap) {
		int cap = m->cap ? m->cap * 2 : 16;
		char **v = realloc(m->v, (size_t)cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		m->v = v;
		m->cap = cap;
	}
	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) < 0)
		s = NULL;
	va_end(ap);
	if (!s)
		return -ENOMEM;
	m->v[m->n++] = s;
	return 0;
}

void pn_plan_msgs_release(struct pn_plan_msgs *m)
{
	int i;

	for (i = 0; i < m->n; i++)
		free(m->v[i]);
	free(m->v);
	memset(m, 0, sizeof(*m));
}

/* ---------------------------------------------------------------- model */

void pn_plan_model_init(struct pn_plan_model *m)
{
	memset(m, 0, sizeof(*m));
	m->exact = 1;
}

void pn_plan_layout_release(struct pn_plan_layout *l)
{
	free(l->nics);
	free(l->gn);
	free(l->best);
	l->nics = NULL;
	l->gn = NULL;
	l->best = NULL;
	l->nbest = l->capbest = 0;
}

void pn_plan_model_release(struct pn_plan_model *m)
{
	int i;

	for (i = 0; i < m->nlayouts; i++)
		pn_plan_layout_release(&m->layouts[i]);
	free(m->layouts);
	free(m->nodes);
	pn_plan_msgs_release(&m->notes);
	pn_plan_model_init(m);
}

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;
	size_t i;

	for (i = 0; i < n; i++) {
		h ^= b[i];
		h *= 1099511628211ull;
	}
	return h;
}

static uint64_t layout_hash(const struct pn_plan_layout *l)
{
	uint64_t h = 14695981039346656037ull;
	int i;

	h = fnv(h, &l->ngpus, sizeof(l->ngpus));
	h = fnv(h, &l->nnics, sizeof(l->nnics));
	for (i = 0; i < l->ngpus; i++) {
		h = fnv(h, l->gpus[i].name, strlen(l->gpus[i].name));
		h = fnv(h, &l->gpus[i].index, sizeof(int));
		h = fnv(h, &l->gpus[i].near, sizeof(uint64_t));
		h = fnv(h, l->gg[i], sizeof(l->gg[i][0]) * (size_t)l->ngpus);
	}
	for (i = 0; i < l->nnics; i++) {
		const struct pn_plan_nic *n = &l->nics[i];

		h = fnv(h, n->name, strlen(n->name));
		h = fnv(h, n->label, strlen(n->label));
		h = fnv(h, &n->port, sizeof(int));
		h = fnv(h, &n->rail, sizeof(int));
		h = fnv(h, &n->rate_gbps, sizeof(double));
		h = fnv(h, n->state, strlen(n->state));
		h = fnv(h, &n->active, sizeof(int));
	}
	if (l->gn)
		h = fnv(h, l->gn, sizeof(*l->gn) * (size_t)(l->ngpus * l->nnics));
	return h;
}

static int layout_equal(const struct pn_plan_layout *a, const struct pn_plan_layout *b)
{
	int i;

	if (a->hash != b->hash || a->ngpus != b->ngpus || a->nnics != b->nnics)
		return 0;
	for (i = 0; i < a->ngpus; i++) {
		if (strcmp(a->gpus[i].name, b->gpus[i].name) || a->gpus[i].index != b->gpus[i].index ||
		    a->gpus[i].near != b->gpus[i].near ||
		    memcmp(a->gg[i], b->gg[i], sizeof(a->gg[i][0]) * (size_t)a->ngpus))
			return 0;
	}
	for (i = 0; i < a->nnics; i++) {
		const struct pn_plan_nic *x = &a->nics[i], *y = &b->nics[i];

		if (strcmp(x->name, y->name) || strcmp(x->device, y->device) ||
		    strcmp(x->label, y->label) || x->port != y->port || x->rail != y->rail ||
		    x->rate_gbps != y->rate_gbps || strcmp(x->state, y->state) ||
		    x->active != y->active)
			return 0;
	}
	if (a->nnics && memcmp(a->gn, b->gn, sizeof(*a->gn) * (size_t)(a->ngpus * a->nnics)))
		return 0;
	return 1;
}

static int append_node(struct pn_plan_model *m, const char *host, int li)
{
	if ((m->nnodes & (m->nnodes - 1)) == 0) {
		size_t cap = m->nnodes ? (size_t)m->nnodes * 2 : 1;
		struct pn_plan_node *nodes = realloc(m->nodes, cap * sizeof(*nodes));

		if (!nodes)
			return pn_err(-ENOMEM, "out of memory");
		m->nodes = nodes;
	}
	memset(&m->nodes[m->nnodes], 0, sizeof(m->nodes[0]));
	snprintf(m->nodes[m->nnodes].host, sizeof(m->nodes[0].host), "%s", host);
	m->nodes[m->nnodes].layout = li;
	m->nnodes++;
	return 0;
}

int pn_plan_model_add_layout(struct pn_plan_model *m, struct pn_plan_layout *l)
{
	int i, li = -1;

	l->hash = layout_hash(l);
	for (i = m->nlayouts - 1; i >= 0; i--) {
		if (layout_equal(&m->layouts[i], l)) {
			li = i;
			break;
		}
	}
	if (li >= 0) {
		pn_plan_layout_release(l);
		memset(l, 0, sizeof(*l));
		return li;
	}
	if (m->nlayouts == m->caplayouts) {
		int cap = m->caplayouts ? m->caplayouts * 2 : 4;
		struct pn_plan_layout *nl = realloc(m->layouts, (size_t)cap * sizeof(*nl));

		if (!nl) {
			pn_plan_layout_release(l);
			return pn_err(-ENOMEM, "out of memory");
		}
		m->layouts = nl;
		m->caplayouts = cap;
	}
	li = m->nlayouts++;
	m->layouts[li] = *l;
	memset(l, 0, sizeof(*l));
	return li;
}

int pn_plan_model_add_node_ref(struct pn_plan_model *m, const char *host, int layout)
{
	if (layout < 0 || layout >= m->nlayouts)
		return pn_err(-EINVAL, "node '%s': no layout %d", host, layout);
	if (strlen(host) >= PN_PLAN_NAME || !*host)
		return pn_err(-EINVAL, "host name '%.*s' is empty or too long", 80, host);
	return append_node(m, host, layout);
}

int pn_plan_model_add_node(struct pn_plan_model *m, const char *host, struct pn_plan_layout *l)
{
	int li = pn_plan_model_add_layout(m, l);

	if (li < 0)
		return li;
	return pn_plan_model_add_node_ref(m, host, li);
}

int pn_plan_model_find_host(const struct pn_plan_model *m, const char *host)
{
	int i;

	for (i = 0; i < m->nnodes; i++)
		if (!strcmp(m->nodes[i].host, host))
			return i;
	return -1;
}

int pn_plan_layout_nic_on_rail(const struct pn_plan_layout *l, int rail)
{
	int i;

	for (i = 0; i < l->nnics; i++)
		if (l->nics[i].active && l->nics[i].rail == rail)
			return i;
	return -1;
}

static int digits(int n)
{
	int d = 1;

	while (n >= 10) {
		n /= 10;
		d++;
	}
	return d;
}

/* Synthetic PCIe switch of a GPU: the first NIC it is nearest to. */
static int group(int g, int K, int M, int G)
{
	return M ? g / M : g * K / G;
}

int pn_plan_model_synthetic(struct pn_plan_model *m, const struct pn_plan_synth *s)
{
	struct pn_plan_layout l;
	const char *hp = s->hosts;
	int G = s->gpus, K = s->nics, M = s->gpus_per_nic, g, h, n, ret = 0;
	int width = digits(s->nodes) < 2 ? 2 : digits(s->nodes);
	int nv = s->nvlinks;

	if (s->nodes < 1 || s->nodes > (1 << 20))
		return pn_err(-EINVAL, "--nodes must be between 1 and %d", 1 << 20);
	if (G < 1 || G > PN_PLAN_MAX_GPUS)
		return pn_err(-EINVAL, "--gpus must be between 1 and %d", PN_PLAN_MAX_GPUS);
	if (K < 0 || K > PN_PLAN_MAX_NICS)
		return pn_err(-EINVAL, "--nics must be between 0 and %d", PN_PLAN_MAX_NICS);
	if (M < 0 || M > G)
		return pn_err(-EINVAL, "--gpus-per-nic must be between 1 and --gpus (%d)", G);
	if (M && (long)M * K < G)
		return pn_err(-EINVAL,
			      "--gpus-per-nic %d with %d NICs leaves GPUs %d-%d without a NIC", M, K,
			      M * K, G - 1);
	if (s->rate_gbps <= 0)
		return pn_err(-EINVAL, "NIC rate must be positive");

	memset(&l, 0, sizeof(l));
	l.ngpus = G;
	l.nnics = K;
	if (K) {
		l.nics = calloc((size_t)K, sizeof(*l.nics));
		l.gn = calloc((size_t)(G * K), sizeof(*l.gn));
		if (!l.nics || !l.gn) {
			pn_plan_layout_release(&l);
			return pn_err(-ENOMEM, "out of memory");
		}
	}
	for (n = 0; n < K; n++) {
		struct pn_plan_nic *c = &l.nics[n];

		snprintf(c->name, sizeof(c->name), "mlx5_%d", n);
		snprintf(c->device, sizeof(c->device), "mlx5_%d", n);
		snprintf(c->label, sizeof(c->label), "NIC%d", n);
		c->port = 1;
		c->rail = n;
		c->rate_gbps = s->rate_gbps;
		snprintf(c->state, sizeof(c->state), "ACTIVE");
		c->active = 1;
		c->netdev = n;
	}
	for (g = 0; g < G; g++) {
		struct pn_plan_gpu *gp = &l.gpus[g];
		int half_g = G > 1 ? g * 2 / G : 0;

		snprintf(gp->name, sizeof(gp->name), "GPU%d", g);
		gp->index = g;
		if (K) {
			if (M)
				gp->near = 1ull << (g / M);
			else if (G >= K)
				gp->near = 1ull << (g * K / G);
			else
				for (n = g * K / G; n < (g + 1) * K / G; n++)
					gp->near |= 1ull << n;
		}
		for (h = 0; h < G; h++) {
			struct pn_plan_path *p = &l.gg[g][h];
			int half_h = G > 1 ? h * 2 / G : 0;

			if (g == h)
				p->cls = PN_PATH_X;
			else if (nv) {
				p->cls = PN_PATH_NV;
				p->nv = (uint8_t)nv;
			} else if (K && group(g, K, M, G) == group(h, K, M, G))
				p->cls = PN_PATH_PIX;
			else
				p->cls = half_g == half_h ? PN_PATH_NODE : PN_PATH_SYS;
		}
		for (n = 0; n < K; n++) {
			int half_n = K > 1 ? n * 2 / K : 0;
			struct pn_plan_path *p = &l.gn[g * K + n];

			if (gp->near & (1ull << n))
				p->cls = PN_PATH_PIX;
			else
				p->cls = half_g == half_n ? PN_PATH_NODE : PN_PATH_SYS;
		}
	}
	snprintf(m->source, sizeof(m->source), "synthetic");
	m->rails_set = 1;
	for (n = 0; n < s->nodes; n++) {
		char host[PN_PLAN_NAME];

		if (hp) {
			size_t len = strcspn(hp, ",");

			if (!*hp || len == 0 || len >= sizeof(host)) {
				ret = pn_err(-EINVAL, "--hosts: empty or too long host name at position %d",
					     n + 1);
				break;
			}
			memcpy(host, hp, len);
			host[len] = 0;
			hp += len;
			if (*hp == ',')
				hp++;
			else if (n + 1 < s->nodes) {
				ret = pn_err(-EINVAL, "--hosts names %d hosts, --nodes is %d", n + 1,
					     s->nodes);
				break;
			}
		} else {
			snprintf(host, sizeof(host), "node%0*d", width, n + 1);
		}
		/* The first node takes the layout; the others share it. */
		if (n == 0)
			ret = pn_plan_model_add_node(m, host, &l);
		else
			ret = pn_plan_model_add_node_ref(m, host, m->nodes[0].layout);
		if (ret)
			break;
	}
	if (!ret && hp && *hp)
		ret = pn_err(-EINVAL, "--hosts names more hosts than --nodes (%d)", s->nodes);
	if (m->nnodes == 0)
		pn_plan_layout_release(&l);
	return ret;
}

/* "mlx5_0:1:0" entries. */
struct rail_spec {
	char dev[PN_PLAN_NAME];
	int port, rail, seen;
};

int pn_plan_model_set_rails(struct pn_plan_model *m, const char *spec)
{
	struct rail_spec *rs = NULL;
	const char *p = spec;
	int nrs = 0, i, j, k, ret = 0;

	while (*p) {
		char item[160], *a, *b;
		size_t len = strcspn(p, ",");
		long port, rail;
		char *end;

		if (len == 0 || len >= sizeof(item)) {
			ret = pn_err(-EINVAL, "--rails: empty or too long entry in '%s'", spec);
			goto out;
		}
		memcpy(item, p, len);
		item[len] = 0;
		p += len;
		if (*p == ',')
			p++;
		a = strchr(item, ':');
		b = a ? strchr(a + 1, ':') : NULL;
		if (!a || !b || strchr(b + 1, ':') || a == item) {
			ret = pn_err(-EINVAL, "--rails: '%s' is not dev:port:rail", item);
			goto out;
		}
		*a = 0;
		*b = 0;
		errno = 0;
		port = strtol(a + 1, &end, 10);
		if (!a[1] || *end || port < 1 || port > 255) {
			ret = pn_err(-EINVAL, "--rails: bad port '%s' for '%s'", a + 1, item);
			goto out;
		}
		rail = strtol(b + 1, &end, 10);
		if (!b[1] || *end || rail < 0 || rail > 65535) {
			ret = pn_err(-EINVAL, "--rails: bad rail '%s' for '%s'", b + 1, item);
			goto out;
		}
		if (strlen(item) >= PN_PLAN_NAME) {
			ret = pn_err(-EINVAL, "--rails: device name '%s' too long", item);
			goto out;
		}
		for (i = 0; i < nrs; i++) {
			if (!strcmp(rs[i].dev, item) && rs[i].port == port) {
				ret = pn_err(-EINVAL, "--rails: '%s:%ld' is listed twice", item, port);
				goto out;
			}
		}
		if (!(nrs & (nrs - 1)) || !rs) {
			struct rail_spec *n = realloc(rs, (size_t)(nrs ? nrs * 2 : 1) * sizeof(*n));

			if (!n) {
				ret = pn_err(-ENOMEM, "out of memory");
				goto out;
			}
			rs = n;
		}
		snprintf(rs[nrs].dev, sizeof(rs[nrs].dev), "%s", item);
		rs[nrs].port = (int)port;
		rs[nrs].rail = (int)rail;
		rs[nrs].seen = 0;
		nrs++;
	}
	if (!nrs) {
		ret = pn_err(-EINVAL, "--rails is empty");
		goto out;
	}
	/* one rail may have other device names on other nodes, not two ports on one */
	for (i = 0; i < m->nlayouts; i++) {
		const struct pn_plan_layout *l = &m->layouts[i];
		int a, b;

		for (j = 0; j < l->nnics; j++)
			for (k = 0; k < j; k++) {
				for (a = 0; a < nrs && (strcmp(rs[a].dev, l->nics[j].device) ||
							rs[a].port != l->nics[j].port); a++)
					;
				for (b = 0; b < nrs && (strcmp(rs[b].dev, l->nics[k].device) ||
							rs[b].port != l->nics[k].port); b++)
					;
				if (a < nrs && b < nrs && rs[a].rail == rs[b].rail) {
					ret = pn_err(-EINVAL, "--rails: rail %d given to both %s:%d and "
							      "%s:%d, ports of one node",
						     rs[a].rail, rs[b].dev, rs[b].port, rs[a].dev,
						     rs[a].port);
					goto out;
				}
			}
	}
	for (i = 0; i < m->nlayouts; i++) {
		struct pn_plan_layout *l = &m->layouts[i];

		for (j = 0; j < l->nnics; j++) {
			struct pn_plan_nic *n = &l->nics[j];

			for (k = 0; k < nrs; k++)
				if (!strcmp(rs[k].dev, n->device) && rs[k].port == n->port)
					break;
			if (k == nrs) {
				if (n->active)
					pn_plan_msg(&m->notes, "%s port %d is not in --rails: not used",
						    n->device, n->port);
				n->active = 0;
				n->rail = -1;
			} else {
				n->rail = rs[k].rail;
				rs[k].seen = 1;
			}
		}
		l->hash = layout_hash(l);
	}
	m->rails_set = 1;
	for (k = 0; k < nrs; k++)
		if (!rs[k].seen)
			pn_plan_msg(&m->notes, "--rails names %s:%d, which no node has", rs[k].dev,
				    rs[k].port);
out:
	free(rs);
	return ret;
}

int pn_plan_model_order_hosts(struct pn_plan_model *m, const char *hosts)
{
	struct pn_plan_node *order;
	const char *p = hosts;
	char *used;
	int n = 0, ret = 0, i;

	order = calloc((size_t)m->nnodes + 1, sizeof(*order));
	used = calloc((size_t)m->nnodes + 1, 1);
	if (!order || !used) {
		ret = pn_err(-ENOMEM, "out of memory");
		goto out;
	}
	while (*p) {
		char host[PN_PLAN_NAME];
		size_t len = strcspn(p, ",");

		if (len == 0 || len >= sizeof(host)) {
			ret = pn_err(-EINVAL, "--hosts: empty or too long host name");
			goto out;
		}
		memcpy(host, p, len);
		host[len] = 0;
		p += len;
		if (*p == ',')
			p++;
		i = pn_plan_model_find_host(m, host);
		if (i < 0) {
			ret = pn_err(-EINVAL, "--hosts names '%s', which no topology file describes",
				     host);
			goto out;
		}
		if (used[i]) {
			ret = pn_err(-EINVAL, "--hosts names '%s' twice", host);
			goto out;
		}
		used[i] = 1;
		order[n++] = m->nodes[i];
	}
	if (n != m->nnodes) {
		for (i = 0; i < m->nnodes && used[i]; i++)
			;
		ret = pn_err(-EINVAL, "--hosts does not name '%s' (%d of %d hosts named)",
			     m->nodes[i].host, n, m->nnodes);
		goto out;
	}
	memcpy(m->nodes, order, (size_t)n * sizeof(*order));
out:
	free(order);
	free(used);
	return ret;
}

static int cmp_namep(const void *a, const void *b)
{
	return pn_natcmp(*(const char *const *)a, *(const char *const *)b);
}

static int default_rails(struct pn_plan_model *m)
{
	const char **names = NULL;
	int n = 0, cap = 0, i, j, k, u = 0;

	for (i = 0; i < m->nlayouts; i++) {
		const struct pn_plan_layout *l = &m->layouts[i];

		for (j = 0; j < l->nnics; j++) {
			if (n == cap) {
				const char **nn;

				cap = cap ? cap * 2 : 64;
				nn = realloc(names, (size_t)cap * sizeof(*nn));
				if (!nn) {
					free(names);
					return pn_err(-ENOMEM, "out of memory");
				}
				names = nn;
			}
			names[n++] = l->nics[j].name;
		}
	}
	if (n) {
		qsort(names, (size_t)n, sizeof(*names), cmp_namep);
		for (i = 0; i < n; i++) /* unique */
			if (!u || strcmp(names[u - 1], names[i]))
				names[u++] = names[i];
	}
	for (i = 0; i < m->nlayouts; i++) {
		struct pn_plan_layout *l = &m->layouts[i];

		for (j = 0; j < l->nnics; j++) {
			int lo = 0, hi = u - 1;

			k = -1;
			while (lo <= hi) {
				int mid = (lo + hi) / 2, c = pn_natcmp(l->nics[j].name, names[mid]);

				if (!c) {
					k = mid;
					break;
				}
				if (c < 0)
					hi = mid - 1;
				else
					lo = mid + 1;
			}
			l->nics[j].rail = k;
		}
	}
	free(names);
	m->rails_set = 1;
	return 0;
}

static int cmp_hostp(const void *a, const void *b)
{
	return strcmp((*(const struct pn_plan_node *const *)a)->host,
		      (*(const struct pn_plan_node *const *)b)->host);
}

int pn_plan_model_finish(struct pn_plan_model *m)
{
	const struct pn_plan_node **byname;
	int i, j, rank = 0, ret;

	if (!m->nnodes)
		return pn_err(-EINVAL, "the model has no nodes");
	byname = malloc(sizeof(*byname) * (size_t)m->nnodes);
	if (!byname)
		return pn_err(-ENOMEM, "out of memory");
	for (i = 0; i < m->nnodes; i++)
		byname[i] = &m->nodes[i];
	qsort(byname, (size_t)m->nnodes, sizeof(*byname), cmp_hostp);
	for (i = 1; i < m->nnodes; i++) {
		if (!strcmp(byname[i - 1]->host, byname[i]->host)) {
			ret = pn_err(-EINVAL, "host '%s' appears twice", byname[i]->host);
			free(byname);
			return ret;
		}
	}
	free(byname);
	if (!m->rails_set) {
		ret = default_rails(m);
		if (ret)
			return ret;
	}
	for (i = 0; i < m->nlayouts; i++) {
		struct pn_plan_layout *l = &m->layouts[i];
		int nd = 0;

		for (j = 0; j < l->nnics; j++)
			l->nics[j].netdev = l->nics[j].active ? nd++ : -1;
		l->hash = layout_hash(l);
	}
	for (i = 0; i < m->nnodes; i++) {
		const struct pn_plan_layout *l = &m->layouts[m->nodes[i].layout];

		if (l->ngpus < 1)
			return pn_err(-EINVAL, "node '%s' has no GPU", m->nodes[i].host);
		if (rank > INT_MAX - l->ngpus)
			return pn_err(-EINVAL, "too many ranks");
		m->nodes[i].rank0 = rank;
		rank += l->ngpus;
	}
	m->nranks = rank;
	return 0;
}

/* ------------------------------------------------------------ best path */

/*
 * Cost of a GPU order through a node: the sum over its steps (NIC to first
 * GPU, GPU to GPU, last GPU to NIC; the closing hop on a one-node ring) of
 * 18^class.  A path has at most 17 steps, so one step over a worse class
 * outweighs any number over better ones: comparing costs compares how many
 * steps each class needs, worst class first.
 */
#define LEVELS (PN_PLAN_PATH_UNKNOWN + 1)

static long long level_w(int level)
{
	long long w = 1;

	while (level-- > 0)
		w *= 18;
	return w;
}

static int step_level(struct pn_plan_path p)
{
	return p.cls <= PN_PLAN_PATH_UNKNOWN ? p.cls : PN_PLAN_PATH_UNKNOWN;
}

/* Per class: how many steps; also the first step at each class, for messages. */
struct steps {
	int count[LEVELS];
	int from[LEVELS], to[LEVELS];	/* GPU positions; -1 - nic for a NIC end */
};

static void path_steps(const struct pn_plan_layout *l, int in, int out, int cycle,
		       const int8_t *path, int n, struct steps *st)
{
	int i, lv;

	memset(st->count, 0, sizeof(st->count));
#define STEP(p, a, b)                                                                          \
	do {                                                                                   \
		lv = step_level(p);                                                            \
		if (!st->count[lv]++) {                                                        \
			st->from[lv] = (a);                                                    \
			st->to[lv] = (b);                                                      \
		}                                                                              \
	} while (0)
	if (in >= 0)
		STEP(l->gn[path[0] * l->nnics + in], -1 - in, path[0]);
	for (i = 0; i + 1 < n; i++)
		STEP(l->gg[path[i]][path[i + 1]], path[i], path[i + 1]);
	if (cycle && n > 1)
		STEP(l->gg[path[n - 1]][path[0]], path[n - 1], path[0]);
	if (out >= 0)
		STEP(l->gn[path[n - 1] * l->nnics + out], path[n - 1], -1 - out);
#undef STEP
}

static long long steps_cost(const struct steps *st)
{
	long long c = 0;
	int lv;

	for (lv = 0; lv < LEVELS; lv++)
		c += st->count[lv] * level_w(lv);
	return c;
}

static long long path_cost(const struct pn_plan_layout *l, int in, int out, int cycle,
			   const int8_t *path, int n)
{
	struct steps st;

	path_steps(l, in, out, cycle, path, n, &st);
	return steps_cost(&st);
}

static long long gg_w(const struct pn_plan_layout *l, int a, int b)
{
	return level_w(step_level(l->gg[a][b]));
}

static long long gn_w(const struct pn_plan_layout *l, int g, int nic)
{
	return nic < 0 ? 0 : level_w(step_level(l->gn[g * l->nnics + nic]));
}

/*
 * The natural order from GPU s to GPU e: s, the GPUs after s by index
 * (wrapping), e.  With e = s - 1 that is s, s+1, ..., s-1.
 */
static void natural(int G, int s, int e, int8_t *nat)
{
	int k, n = 0;

	nat[n++] = (int8_t)s;
	for (k = 1; k < G; k++)
		if ((s + k) % G != e)
			nat[n++] = (int8_t)((s + k) % G);
	if (e != s)
		nat[n++] = (int8_t)e;
}

/*
 * Exact search over the orders of the node's GPUs (G <= 16) for the least
 * cost; the natural order (first GPU, the following ones by index, last GPU)
 * when it is one of the best, so plans read well.
 */
static int compute_best(const struct pn_plan_layout *l, int in, int out, struct pn_plan_best *b)
{
	int G = l->ngpus, cycle = in < 0 && out < 0, full = (1 << G) - 1, a, c, s, e, mask;
	long long *cost = NULL, best = LLONG_MAX;
	int8_t *par = NULL;
	int best_e = -1;

	b->in = in;
	b->out = out;
	b->n = G;
	if (G == 1) {
		b->path[0] = 0;
		b->cost = path_cost(l, in, out, cycle, b->path, 1);
		return 0;
	}
	cost = malloc(sizeof(*cost) * ((size_t)G << G));
	par = malloc((size_t)G << G);
	if (!cost || !par) {
		free(cost);
		free(par);
		return pn_err(-ENOMEM, "out of memory");
	}
	for (mask = 0; mask <= full; mask++)
		for (a = 0; a < G; a++)
			cost[mask * G + a] = LLONG_MAX;
	for (a = 0; a < (cycle ? 1 : G); a++)
		cost[(1 << a) * G + a] = gn_w(l, a, in);
	for (mask = 1; mask <= full; mask++) {
		for (a = 0; a < G; a++) {
			long long cv = cost[mask * G + a];

			if (cv == LLONG_MAX)
				continue;
			for (c = 0; c < G; c++) {
				int nm = mask | (1 << c);
				long long v;

				if (mask & (1 << c))
					continue;
				v = cv + gg_w(l, a, c);
				if (v < cost[nm * G + c]) {
					cost[nm * G + c] = v;
					par[nm * G + c] = (int8_t)a;
				}
			}
		}
	}
	for (e = 0; e < G; e++) {
		long long v;

		if (cost[full * G + e] == LLONG_MAX)
			continue;
		v = cost[full * G + e] + (cycle ? gg_w(l, e, 0) : gn_w(l, e, out));
		if (v < best) {
			best = v;
			best_e = e;
		}
	}
	b->cost = best;
	/* natural order, if it is one of the best (a one-node ring: 0, 1, ..., G-1) */
	for (s = 0; s < (cycle ? 1 : G); s++) {
		int d;

		for (d = 1; d < G; d++) {
			int8_t nat[PN_PLAN_MAX_GPUS];

			natural(G, s, (s - d + G) % G, nat);
			if (path_cost(l, in, out, cycle, nat, G) == best) {
				memcpy(b->path, nat, (size_t)G);
				goto out;
			}
			if (cycle)
				break;
		}
	}
	mask = full;
	a = best_e;
	for (c = G - 1; c >= 0; c--) {
		int pa;

		b->path[c] = (int8_t)a;
		if (c == 0)
			break;
		pa = par[mask * G + a];
		mask &= ~(1 << a);
		a = pa;
	}
out:
	free(cost);
	free(par);
	return 0;
}

static const struct pn_plan_best *get_best(struct pn_plan_layout *l, int in, int out)
{
	struct pn_plan_best *b;
	int i;

	for (i = 0; i < l->nbest; i++)
		if (l->best[i].in == in && l->best[i].out == out)
			return &l->best[i];
	if (l->nbest == l->capbest) {
		int cap = l->capbest ? l->capbest * 2 : 8;

		b = realloc(l->best, (size_t)cap * sizeof(*b));
		if (!b) {
			pn_err(-ENOMEM, "out of memory");
			return NULL;
		}
		l->best = b;
		l->capbest = cap;
	}
	b = &l->best[l->nbest];
	if (compute_best(l, in, out, b))
		return NULL;
	l->nbest++;
	return b;
}

long long pn_plan_best_cost(struct pn_plan_layout *l, int in, int out)
{
	const struct pn_plan_best *b = get_best(l, in, out);

	return b ? b->cost : -ENOMEM;
}

long long pn_plan_seg_cost(const struct pn_plan *p, const struct pn_plan_ring *r,
			   const struct pn_plan_seg *s, int nnodes)
{
	const struct pn_plan_layout *l = &p->model->layouts[p->model->nodes[s->node].layout];
	int8_t path[PN_PLAN_MAX_GPUS];
	int i, cycle = nnodes == 1 && s->in_nic < 0 && s->out_nic < 0;

	if (s->n < 1 || s->n > PN_PLAN_MAX_GPUS)
		return LLONG_MAX;
	for (i = 0; i < s->n; i++)
		path[i] = (int8_t)r->gpus[s->off + i];
	return path_cost(l, s->in_nic, s->out_nic, cycle, path, s->n);
}

/* ---------------------------------------------------------------- rails */

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return x < y ? -1 : x > y;
}

int pn_plan_usable_rails(const struct pn_plan_model *m, int **rails, int *nrails,
			 struct pn_plan_msgs *notes)
{
	int *all = NULL, nall = 0, cap = 0, i, j, k, *out;
	int nout = 0;

	*rails = NULL;
	*nrails = 0;
	/* every rail id on any layout */
	for (i = 0; i < m->nlayouts; i++) {
		const struct pn_plan_layout *l = &m->layouts[i];

		for (j = 0; j < l->nnics; j++) {
			int r = l->nics[j].rail;

			if (r < 0)
				continue;
			for (k = 0; k < nall && all[k] != r; k++)
				;
			if (k < nall)
				continue;
			if (nall == cap) {
				int *n;

				cap = cap ? cap * 2 : 16;
				n = realloc(all, (size_t)cap * sizeof(*n));
				if (!n) {
					free(all);
					return pn_err(-ENOMEM, "out of memory");
				}
				all = n;
			}
			all[nall++] = r;
		}
	}
	if (nall)
		qsort(all, (size_t)nall, sizeof(int), cmp_int);
	out = malloc(sizeof(int) * (size_t)(nall ? nall : 1));
	if (!out) {
		free(all);
		return pn_err(-ENOMEM, "out of memory");
	}
	for (k = 0; k < nall; k++) {
		int r = all[k], bad = 0, first = -1, inactive = -1;
		char why[256];

		for (i = 0; i < m->nnodes; i++) {
			const struct pn_plan_layout *l = &m->layouts[m->nodes[i].layout];

			if (pn_plan_layout_nic_on_rail(l, r) >= 0)
				continue;
			if (first < 0) {
				first = i;
				for (j = 0; j < l->nnics; j++)
					if (l->nics[j].rail == r)
						inactive = j;
			}
			bad++;
		}
		if (!bad) {
			out[nout++] = r;
			continue;
		}
		if (!notes)
			continue;
		if (inactive >= 0) {
			const struct pn_plan_nic *n = &m->layouts[m->nodes[first].layout].nics[inactive];

			snprintf(why, sizeof(why), "%s %s port %d is %s", m->nodes[first].host,
				 n->device, n->port, n->state);
		} else {
			snprintf(why, sizeof(why), "%s has no NIC on rail %d", m->nodes[first].host, r);
		}
		if (bad > 1)
			pn_plan_msg(notes, "rail %d left out: %s (%d of %d nodes lack an active NIC on it)",
				    r, why, bad, m->nnodes);
		else
			pn_plan_msg(notes, "rail %d left out: %s", r, why);
	}
	free(all);
	*rails = out;
	*nrails = nout;
	return 0;
}

/* ------------------------------------------------------------- building */

void pn_plan_init(struct pn_plan *p, struct pn_plan_model *m)
{
	memset(p, 0, sizeof(*p));
	p->model = m;
}

static void ring_release(struct pn_plan_ring *r)
{
	free(r->seg);
	free(r->gpus);
	r->seg = NULL;
	r->gpus = NULL;
}

void pn_plan_release(struct pn_plan *p)
{
	int i;

	for (i = 0; i < p->nrings; i++)
		ring_release(&p->rings[i]);
	free(p->rings);
	free(p->rails);
	free(p->load_off);
	free(p->send);
	free(p->recv);
	pn_plan_msgs_release(&p->notes);
	pn_plan_msgs_release(&p->file_viol);
	memset(p, 0, sizeof(*p));
}

int pn_plan_ring_alloc(struct pn_plan_ring *r, int nseg, int ngpus)
{
	memset(r, 0, sizeof(*r));
	r->seg = calloc((size_t)(nseg ? nseg : 1), sizeof(*r->seg));
	r->gpus = calloc((size_t)(ngpus ? ngpus : 1), sizeof(*r->gpus));
	r->rail_a = r->rail_b = -1;
	if (!r->seg || !r->gpus) {
		ring_release(r);
		return pn_err(-ENOMEM, "out of memory");
	}
	return 0;
}

/* Near-GPU set of the NIC on a rail in a layout. */
static uint32_t near_set(const struct pn_plan_layout *l, int rail)
{
	int nic = pn_plan_layout_nic_on_rail(l, rail), g;
	uint32_t s = 0;

	if (nic < 0)
		return 0;
	for (g = 0; g < l->ngpus; g++)
		if (l->gpus[g].near & (1ull << nic))
			s |= 1u << g;
	return s;
}

/* Pair rails: the next unpaired rail whose nearest GPUs differ, else the next one. */
static int pair_rails(const struct pn_plan_layout *l, const int *rails, int n, int *pa, int *pb)
{
	char *used = calloc((size_t)n + 1, 1);
	int i, j, np = 0;

	if (!used)
		return pn_err(-ENOMEM, "out of memory");
	for (i = 0; i < n; i++) {
		int pick = -1;
		uint32_t si;

		if (used[i])
			continue;
		used[i] = 1;
		si = near_set(l, rails[i]);
		for (j = i + 1; j < n; j++) {
			if (used[j])
				continue;
			if (pick < 0)
				pick = j;
			if (!(si & near_set(l, rails[j]))) {
				pick = j;
				break;
			}
		}
		pa[np] = rails[i];
		pb[np] = pick >= 0 ? rails[pick] : -1;
		if (pick >= 0)
			used[pick] = 1;
		np++;
	}
	free(used);
	return np;
}

/* Notes for rails whose NIC has no near GPU on some layout (entry over a worse path). */
static void note_far_rails(struct pn_plan *p, const int *rails, int nrails)
{
	struct pn_plan_model *m = p->model;
	int li, k, i;

	for (li = 0; li < m->nlayouts; li++) {
		struct pn_plan_layout *l = &m->layouts[li];
		int first = -1, count = 0;

		for (i = 0; i < m->nnodes; i++) {
			if (m->nodes[i].layout != li)
				continue;
			if (first < 0)
				first = i;
			count++;
		}
		if (first < 0)
			continue;
		for (k = 0; k < nrails; k++) {
			int nic = pn_plan_layout_nic_on_rail(l, rails[k]);

			if (nic >= 0 && !near_set(l, rails[k])) {
				char where[PN_PLAN_NAME + 32];

				if (count > 1)
					snprintf(where, sizeof(where), "%s and %d more nodes",
						 m->nodes[first].host, count - 1);
				else
					snprintf(where, sizeof(where), "%s", m->nodes[first].host);
				p->degraded = 1;
				pn_plan_msg(&p->notes,
					    "no GPU is near %s (rail %d) on %s: rings reach it over a "
					    "longer path",
					    l->nics[nic].name, rails[k], where);
			}
		}
		for (i = 0; i < l->ngpus; i++)
			if (!l->gpus[i].near && l->nnics && m->nnodes > 1)
				pn_plan_msg(&p->notes, "%s %s has no nearest NIC (no rail)%s",
					    m->nodes[first].host, l->gpus[i].name,
					    count > 1 ? " (same on nodes with this layout)" : "");
	}
}

/*
 * GPU orders chosen while building, per layout: for each rail pair and
 * (in, out) NICs the order is chosen once, so every node of a layout in the
 * same role gets the same order (NCCL's shared graph file relies on it) and
 * the pair's second ring mirrors the first.  Among orders as good as the
 * best, the natural ones whose end GPUs carry the least NIC traffic so far
 * win (spreads PCIe load when rails are missing or unpaired).
 */
struct memo_ent {
	int pair, in, out;
	int8_t path[PN_PLAN_MAX_GPUS];
};

struct layout_build {
	struct memo_ent *memo;
	int n, cap;
};

/* u: NIC legs (in + out) per GPU so far on the first node taking this role. */
static int choose_path(struct layout_build *lb, struct pn_plan_layout *l, int pair, int in,
		       int out, const int *u, int8_t *path)
{
	const struct pn_plan_best *b;
	int G = l->ngpus, i, s, e;
	int bk[3] = { INT_MAX, INT_MAX, INT_MAX };

	for (i = 0; i < lb->n; i++) {
		if (lb->memo[i].pair == pair && lb->memo[i].in == in && lb->memo[i].out == out) {
			memcpy(path, lb->memo[i].path, (size_t)G);
			return 0;
		}
	}
	b = get_best(l, in, out);
	if (!b)
		return -ENOMEM;
	memcpy(path, b->path, (size_t)G);
	/* natural orders as good as the best: best entry, best exit, least used ends */
	for (s = 0; s < G && G > 1; s++) {
		int d;

		for (d = 1; d < G; d++) {
			int8_t nat[PN_PLAN_MAX_GPUS];
			int key[3];

			e = (s - d + G) % G;
			natural(G, s, e, nat);
			if (path_cost(l, in, out, 0, nat, G) != b->cost)
				continue;
			key[0] = step_level(l->gn[s * l->nnics + in]);
			key[1] = step_level(l->gn[e * l->nnics + out]);
			key[2] = u[s] + u[e];
			if (key[0] < bk[0] || (key[0] == bk[0] && (key[1] < bk[1] ||
			    (key[1] == bk[1] && key[2] < bk[2])))) {
				memcpy(bk, key, sizeof(bk));
				memcpy(path, nat, (size_t)G);
			}
		}
	}
	if (lb->n == lb->cap) {
		int cap = lb->cap ? lb->cap * 2 : 8;
		struct memo_ent *nm = realloc(lb->memo, (size_t)cap * sizeof(*nm));

		if (!nm)
			return pn_err(-ENOMEM, "out of memory");
		lb->memo = nm;
		lb->cap = cap;
	}
	lb->memo[lb->n].pair = pair;
	lb->memo[lb->n].in = in;
	lb->memo[lb->n].out = out;
	memcpy(lb->memo[lb->n].path, path, (size_t)G);
	lb->n++;
	return 0;
}

/* path backwards, if that is as good as the best order for (in, out); else the best. */
static int reverse_or_best(struct pn_plan_layout *l, int in, int out, int8_t *path)
{
	const struct pn_plan_best *b = get_best(l, in, out);
	int8_t r[PN_PLAN_MAX_GPUS];
	int k;

	if (!b)
		return -ENOMEM;
	for (k = 0; k < l->ngpus; k++)
		r[k] = path[l->ngpus - 1 - k];
	if (path_cost(l, in, out, 0, r, l->ngpus) <= b->cost)
		memcpy(path, r, (size_t)l->ngpus);
	else
		memcpy(path, b->path, (size_t)l->ngpus);
	return 0;
}

static int build_one_node(struct pn_plan *p, const struct pn_plan_opts *o)
{
	struct pn_plan_model *m = p->model;
	struct pn_plan_layout *l = &m->layouts[m->nodes[0].layout];
	const struct pn_plan_best *b = get_best(l, -1, -1);
	int R = o->rings ? o->rings : (l->ngpus == 1 ? 1 : 2), r, k, G = l->ngpus;

	if (!b)
		return -ENOMEM;
	p->rings = calloc((size_t)R, sizeof(*p->rings));
	if (!p->rings)
		return pn_err(-ENOMEM, "out of memory");
	for (r = 0; r < R; r++) {
		struct pn_plan_ring *ring = &p->rings[r];

		if (pn_plan_ring_alloc(ring, 1, G))
			return -ENOMEM;
		p->nrings++;
		ring->nseg = 1;
		ring->seg[0].node = 0;
		ring->seg[0].in_nic = ring->seg[0].out_nic = -1;
		ring->seg[0].off = 0;
		ring->seg[0].n = G;
		/* odd rings: the same cycle backwards (from the same first GPU) */
		for (k = 0; k < G; k++)
			ring->gpus[k] = (r & 1) && k ? b->path[G - k] : b->path[k];
	}
	if (l->nnics)
		pn_plan_msg(&p->notes, "one node: rings stay inside %s, its NICs carry no ring traffic",
			    m->nodes[0].host);
	return 0;
}

int pn_plan_build(struct pn_plan *p, struct pn_plan_model *m, const struct pn_plan_opts *o)
{
	int *rails = NULL, nrails = 0, *pa = NULL, *pb = NULL, np, base, R, r, i, ret;
	int N = m->nnodes, total_rails, solo = N == 2 && m->nranks == 2;
	struct pn_plan_msgs dropped = { 0 };
	struct layout_build *lb = NULL;
	int *use = NULL;

	pn_plan_init(p, m);
	if (N < 1)
		return pn_err(-EINVAL, "the model has no nodes");
	if (o->rings < 0 || o->rings > 4096)
		return pn_err(-EINVAL, "--rings must be between 1 and 4096");
	if (N == 1) {
		ret = build_one_node(p, o);
		if (!ret)
			ret = pn_plan_analyze(p, o->pcie_gbs);
		return ret;
	}
	ret = pn_plan_usable_rails(m, &rails, &nrails, &dropped);
	if (ret)
		goto out;
	total_rails = nrails + dropped.n; /* one note per rail left out */
	if (!nrails) {
		const char *why = dropped.n ? strstr(dropped.v[0], "left out: ") : NULL;

		if (!total_rails)
			ret = pn_err(-EINVAL, "no node has a usable NIC port: rings across %d nodes need "
					      "a rail active on every node",
				     N);
		else
			ret = pn_err(-EINVAL, "no rail has an active NIC on every node (%d rails; "
					      "first: %s)",
				     total_rails, why ? why + 10 : "?");
		goto out;
	}
	if (dropped.n && o->no_degrade) {
		ret = pn_err(-EINVAL, "%s (--no-degrade refuses to plan without it)", dropped.v[0]);
		goto out;
	}
	for (i = 0; i < dropped.n; i++)
		pn_plan_msg(&p->notes, "%s", dropped.v[i]);
	if (dropped.n) {
		p->degraded = 1;
		pn_plan_msg(&p->notes, "degraded: %d of %d rails in use; rings avoid the others",
			    nrails, total_rails);
	}
	p->rails = rails;
	p->nrails = nrails;
	rails = NULL;
	note_far_rails(p, p->rails, p->nrails);

	pa = malloc(sizeof(int) * (size_t)p->nrails);
	pb = malloc(sizeof(int) * (size_t)p->nrails);
	if (!pa || !pb) {
		ret = pn_err(-ENOMEM, "out of memory");
		goto out;
	}
	np = pair_rails(&m->layouts[m->nodes[0].layout], p->rails, p->nrails, pa, pb);
	if (np < 0) {
		ret = np;
		goto out;
	}
	if (solo) {
		/*
		 * Two ranks on two nodes are each other's both neighbours: the
		 * engine's one connection between them has one NIC at each end,
		 * so every ring turns on one rail (each NIC still sends for one
		 * ring and receives for one).
		 */
		for (i = 0; i < p->nrails; i++) {
			pa[i] = p->rails[i];
			pb[i] = -1;
		}
		np = p->nrails;
	}
	base = 0;
	for (i = 0; i < np; i++)
		base += pb[i] >= 0 ? 2 : 1;
	if (o->rings && o->rings % base) {
		ret = pn_err(-EINVAL, "--rings %d is not a multiple of the %d rings of one round",
			     o->rings, base);
		goto out;
	}
	R = o->rings ? o->rings : base;
	p->rings = calloc((size_t)R, sizeof(*p->rings));
	lb = calloc((size_t)m->nlayouts, sizeof(*lb));
	use = calloc((size_t)m->nranks, sizeof(*use));
	if (!p->rings || !lb || !use) {
		ret = pn_err(-ENOMEM, "out of memory");
		goto out;
	}
	for (r = 0; r < R; r++) {
		struct pn_plan_ring *ring = &p->rings[r];
		int q = r % base, pi = 0, side = 0, A, B, j, off = 0;

		/* ring q -> pair pi, side */
		for (j = 0, i = 0; i < np; i++) {
			int w = pb[i] >= 0 ? 2 : 1;

			if (q < j + w) {
				pi = i;
				side = q - j;
				break;
			}
			j += w;
		}
		A = pa[pi];
		B = pb[pi] >= 0 ? pb[pi] : pa[pi];
		ret = pn_plan_ring_alloc(ring, N, m->nranks);
		if (ret)
			goto out;
		p->nrings++;
		ring->rail_a = A;
		ring->rail_b = B;
		ring->nseg = N;
		for (i = 0; i < N; i++) {
			struct pn_plan_layout *l = &m->layouts[m->nodes[i].layout];
			int turn = (N - 1 - pi % N + N) % N, d, x, y, k;
			int8_t path[PN_PLAN_MAX_GPUS];

			/* side 0: (x, y) rails in and out */
			d = N % 2 == 0 ? i : (i - turn - 1 + 2 * N) % N;
			if (A == B || (N % 2 && i == turn)) {
				x = y = A;
			} else {
				x = d % 2 == 0 ? A : B;
				y = d % 2 == 0 ? B : A;
			}
			if (x == B && y == A && A != B) { /* odd nodes: the even order backwards */
				int8_t fw[PN_PLAN_MAX_GPUS];

				ret = choose_path(&lb[m->nodes[i].layout], l, pi,
						  pn_plan_layout_nic_on_rail(l, A),
						  pn_plan_layout_nic_on_rail(l, B),
						  use + m->nodes[i].rank0, fw);
				for (k = 0; k < l->ngpus; k++)
					path[k] = fw[l->ngpus - 1 - k];
			} else {
				ret = choose_path(&lb[m->nodes[i].layout], l, pi,
						  pn_plan_layout_nic_on_rail(l, x),
						  pn_plan_layout_nic_on_rail(l, y),
						  use + m->nodes[i].rank0, path);
			}
			if (ret)
				goto out;
			if (side == 1) {
				/* the other rail of the pair, side 0's GPU order backwards */
				x = x == A ? B : A;
				y = y == A ? B : A;
				ret = reverse_or_best(l, pn_plan_layout_nic_on_rail(l, x),
						      pn_plan_layout_nic_on_rail(l, y), path);
				if (ret)
					goto out;
			}
			ring->seg[i].node = i;
			ring->seg[i].in_nic = pn_plan_layout_nic_on_rail(l, x);
			ring->seg[i].out_nic = pn_plan_layout_nic_on_rail(l, y);
			ring->seg[i].off = off;
			ring->seg[i].n = l->ngpus;
			for (k = 0; k < l->ngpus; k++)
				ring->gpus[off + k] = path[k];
			use[m->nodes[i].rank0 + path[0]]++;
			use[m->nodes[i].rank0 + path[l->ngpus - 1]]++;
			off += l->ngpus;
		}
	}
	if (N % 2)
		pn_plan_msg(&p->notes,
			    "odd node count: in each ring pair one node (%s first) enters and leaves "
			    "on the same rail",
			    m->nodes[N - 1].host);
	if (solo)
		pn_plan_msg(&p->notes, "two ranks on two nodes: each ring enters and leaves both "
				       "nodes on one rail (one connection, one NIC)");
	for (i = 0; i < np && !solo; i++)
		if (pb[i] < 0)
			pn_plan_msg(&p->notes, "rail %d has no partner: its ring enters and leaves "
					       "every node on rail %d", pa[i], pa[i]);
	ret = pn_plan_analyze(p, o->pcie_gbs);
out:
	for (i = 0; lb && i < m->nlayouts; i++)
		free(lb[i].memo);
	free(lb);
	free(use);
	pn_plan_msgs_release(&dropped);
	free(rails);
	free(pa);
	free(pb);
	return ret;
}

/* -------------------------------------------------------------- analyse */

enum { RES_NVOUT, RES_NVIN, RES_PCOUT, RES_PCIN, RES_N };

static double nv_total(const struct pn_plan_layout *l, int g)
{
	int h, best = 0;

	for (h = 0; h < l->ngpus; h++)
		if (h != g && l->gg[g][h].cls == PN_PATH_NV && l->gg[g][h].nv > best)
			best = l->gg[g][h].nv;
	return best * PN_PLAN_NVLINK_GBS;
}

static double hop_ceiling(struct pn_plan_path pth, double pcie)
{
	switch (pth.cls) {
	case PN_PATH_X:
		return 1e12;
	case PN_PATH_NV:
		return pth.nv * PN_PLAN_NVLINK_GBS;
	case PN_PATH_PIX:
	case PN_PATH_PXB:
	case PN_PATH_PHB:
	case PN_PATH_NODE:
		return pcie;
	default:
		return PN_PLAN_SYS_GBS < pcie ? PN_PLAN_SYS_GBS : pcie;
	}
}

struct lim {
	double v;
	int node;
	const char *kind;	/* format piece */
	int a, b;		/* GPU/NIC indices */
	double cap;
	int users;
};

static void consider(struct lim *w, double cap, int users, int node, const char *kind, int a, int b)
{
	double v = users > 0 ? cap / users : cap;

	if (v < w->v) {
		w->v = v;
		w->node = node;
		w->kind = kind;
		w->a = a;
		w->b = b;
		w->cap = cap;
		w->users = users;
	}
}

static void describe(const struct pn_plan_model *m, const struct lim *w, char *buf, size_t len)
{
	const struct pn_plan_layout *l = &m->layouts[m->nodes[w->node].layout];
	const char *host = m->nodes[w->node].host;

	if (!strcmp(w->kind, "nic send") || !strcmp(w->kind, "nic recv"))
		snprintf(buf, len, "%s %s %s (rail %d, %g Gb/s)", host, l->nics[w->a].name,
			 w->kind + 4, l->nics[w->a].rail, l->nics[w->a].rate_gbps);
	else if (!strcmp(w->kind, "hop")) {
		char c[16];

		snprintf(buf, len, "%s %s->%s over %s", host, l->gpus[w->a].name, l->gpus[w->b].name,
			 pn_plan_path_name(l->gg[w->a][w->b], c, sizeof(c)));
	} else if (!strcmp(w->kind, "nichop")) {
		char c[16];

		snprintf(buf, len, "%s %s<->%s over %s", host, l->gpus[w->a].name,
			 l->nics[w->b].name,
			 pn_plan_path_name(l->gn[w->a * l->nnics + w->b], c, sizeof(c)));
	} else {
		snprintf(buf, len, "%s %s %s", host, l->gpus[w->a].name, w->kind);
	}
}

int pn_plan_analyze(struct pn_plan *p, double pcie)
{
	struct pn_plan_model *m = p->model;
	int N = m->nnodes, i, r, k, nh, tot = 0, *use = NULL;
	struct lim glob = { .v = 1e300 };

	if (pcie <= 0)
		pcie = PN_PLAN_PCIE_GBS;
	free(p->load_off);
	free(p->send);
	free(p->recv);
	p->load_off = malloc(sizeof(int) * ((size_t)N + 1));
	if (!p->load_off)
		return pn_err(-ENOMEM, "out of memory");
	for (i = 0; i < N; i++) {
		p->load_off[i] = tot;
		tot += m->layouts[m->nodes[i].layout].nnics;
	}
	p->load_off[N] = tot;
	p->send = calloc((size_t)tot + 1, sizeof(int));
	p->recv = calloc((size_t)tot + 1, sizeof(int));
	use = calloc((size_t)m->nranks * RES_N + 1, sizeof(int));
	if (!p->send || !p->recv || !use) {
		free(use);
		return pn_err(-ENOMEM, "out of memory");
	}
	/* count users of every resource */
	for (r = 0; r < p->nrings; r++) {
		const struct pn_plan_ring *ring = &p->rings[r];

		for (i = 0; i < ring->nseg; i++) {
			const struct pn_plan_seg *s = &ring->seg[i];
			const struct pn_plan_layout *l = &m->layouts[m->nodes[s->node].layout];
			int *u = use + (size_t)m->nodes[s->node].rank0 * RES_N;
			const int *g = ring->gpus + s->off;

			if (s->n < 1)
				continue;
			if (s->in_nic >= 0) {
				p->recv[p->load_off[s->node] + s->in_nic]++;
				u[g[0] * RES_N + RES_PCIN]++;
			}
			if (s->out_nic >= 0) {
				p->send[p->load_off[s->node] + s->out_nic]++;
				u[g[s->n - 1] * RES_N + RES_PCOUT]++;
			}
			nh = s->n - 1 + (N == 1 && s->in_nic < 0 && s->n > 1);
			for (k = 0; k < nh; k++) {
				int a = g[k], b = g[(k + 1) % s->n];

				if (l->gg[a][b].cls == PN_PATH_NV) {
					u[a * RES_N + RES_NVOUT]++;
					u[b * RES_N + RES_NVIN]++;
				} else {
					u[a * RES_N + RES_PCOUT]++;
					u[b * RES_N + RES_PCIN]++;
				}
			}
		}
	}
	/* per ring: the tightest resource it uses */
	p->busbw_gbs = 0;
	p->ring_gbs = p->nrings ? 1e300 : 0;
	for (r = 0; r < p->nrings; r++) {
		struct pn_plan_ring *ring = &p->rings[r];
		struct lim w = { .v = 1e300 };

		for (i = 0; i < ring->nseg; i++) {
			const struct pn_plan_seg *s = &ring->seg[i];
			const struct pn_plan_layout *l = &m->layouts[m->nodes[s->node].layout];
			const int *u = use + (size_t)m->nodes[s->node].rank0 * RES_N;
			const int *g = ring->gpus + s->off;
			int lo = p->load_off[s->node];

			if (s->n < 1)
				continue;
			if (s->in_nic >= 0) {
				const struct pn_plan_nic *n = &l->nics[s->in_nic];

				consider(&w, n->rate_gbps / 8, p->recv[lo + s->in_nic], s->node,
					 "nic recv", s->in_nic, 0);
				consider(&w, pcie, u[g[0] * RES_N + RES_PCIN], s->node, "PCIe in",
					 g[0], 0);
				consider(&w, hop_ceiling(l->gn[g[0] * l->nnics + s->in_nic], pcie), 1,
					 s->node, "nichop", g[0], s->in_nic);
			}
			if (s->out_nic >= 0) {
				const struct pn_plan_nic *n = &l->nics[s->out_nic];
				int e = g[s->n - 1];

				consider(&w, n->rate_gbps / 8, p->send[lo + s->out_nic], s->node,
					 "nic send", s->out_nic, 0);
				consider(&w, pcie, u[e * RES_N + RES_PCOUT], s->node, "PCIe out", e, 0);
				consider(&w, hop_ceiling(l->gn[e * l->nnics + s->out_nic], pcie), 1,
					 s->node, "nichop", e, s->out_nic);
			}
			nh = s->n - 1 + (N == 1 && s->in_nic < 0 && s->n > 1);
			for (k = 0; k < nh; k++) {
				int a = g[k], b = g[(k + 1) % s->n];

				if (l->gg[a][b].cls == PN_PATH_NV) {
					consider(&w, nv_total(l, a), u[a * RES_N + RES_NVOUT], s->node,
						 "NVLink out", a, 0);
					consider(&w, nv_total(l, b), u[b * RES_N + RES_NVIN], s->node,
						 "NVLink in", b, 0);
				} else {
					consider(&w, pcie, u[a * RES_N + RES_PCOUT], s->node, "PCIe out",
						 a, 0);
					consider(&w, pcie, u[b * RES_N + RES_PCIN], s->node, "PCIe in",
						 b, 0);
				}
				consider(&w, hop_ceiling(l->gg[a][b], pcie), 1, s->node, "hop", a, b);
			}
		}
		if (w.v >= 1e299) { /* a single GPU: nothing moves */
			ring->gbs = 0;
			snprintf(ring->bottleneck, sizeof(ring->bottleneck), "no link");
		} else {
			ring->gbs = w.v;
			describe(m, &w, ring->bottleneck, sizeof(ring->bottleneck));
			if (w.v < glob.v)
				glob = w;
		}
		p->busbw_gbs += ring->gbs;
		if (ring->gbs < p->ring_gbs)
			p->ring_gbs = ring->gbs;
	}
	memset(&p->bottleneck, 0, sizeof(p->bottleneck));
	p->bottleneck.node = -1;
	if (glob.v < 1e299) {
		p->bottleneck.node = glob.node;
		describe(m, &glob, p->bottleneck.what, sizeof(p->bottleneck.what));
		p->bottleneck.cap_gbs = glob.cap;
		p->bottleneck.users = glob.users;
	}
	free(use);
	return 0;
}

/* ------------------------------------------------------------- validate */

static void rank_name(const struct pn_plan_model *m, int rank, char *buf, size_t len)
{
	int lo = 0, hi = m->nnodes - 1;

	while (lo < hi) { /* last node with rank0 <= rank */
		int mid = (lo + hi + 1) / 2;

		if (m->nodes[mid].rank0 <= rank)
			lo = mid;
		else
			hi = mid - 1;
	}
	snprintf(buf, len, "rank %d (%s %s)", rank, m->nodes[lo].host,
		 m->layouts[m->nodes[lo].layout].gpus[rank - m->nodes[lo].rank0].name);
}

static const char *nic_name(const struct pn_plan_model *m, int node, int nic)
{
	return m->layouts[m->nodes[node].layout].nics[nic].name;
}

static int nic_rail(const struct pn_plan_model *m, int node, int nic)
{
	return m->layouts[m->nodes[node].layout].nics[nic].rail;
}

static const char *level_name(int lv)
{
	static const char *const names[] = { "X", "NVLink", "PIX", "PXB", "PHB", "NODE", "SYS",
					     "an unknown class" };

	return names[lv < LEVELS ? lv : LEVELS - 1];
}

static void end_name(const struct pn_plan_layout *l, int v, char *buf, size_t len)
{
	snprintf(buf, len, "%s", v < 0 ? l->nics[-1 - v].name : l->gpus[v].name);
}

/*
 * A segment whose GPU order is worse than the best for its NICs: the worst
 * class where it needs more steps, e.g. "2 steps over SYS (first GPU1->GPU2)
 * where 1 suffices".
 */
static void path_excess(struct pn_plan *p, const struct pn_plan_ring *r,
			const struct pn_plan_seg *s, int N, char *buf, size_t len)
{
	struct pn_plan_layout *l = &p->model->layouts[p->model->nodes[s->node].layout];
	int cycle = N == 1 && s->in_nic < 0 && s->out_nic < 0, lv, k;
	const struct pn_plan_best *b = get_best(l, cycle ? -1 : s->in_nic, cycle ? -1 : s->out_nic);
	int8_t path[PN_PLAN_MAX_GPUS];
	struct steps have, best;
	char x[PN_PLAN_NAME], y[PN_PLAN_NAME];

	buf[0] = 0;
	if (!b)
		return;
	for (k = 0; k < s->n; k++)
		path[k] = (int8_t)r->gpus[s->off + k];
	path_steps(l, s->in_nic, s->out_nic, cycle, path, s->n, &have);
	path_steps(l, b->in, b->out, cycle, b->path, b->n, &best);
	for (lv = LEVELS - 1; lv >= 0; lv--)
		if (have.count[lv] != best.count[lv])
			break;
	if (lv < 0 || have.count[lv] < best.count[lv])
		return;
	end_name(l, have.from[lv], x, sizeof(x));
	end_name(l, have.to[lv], y, sizeof(y));
	snprintf(buf, len, "%d step%s over %s (first %s->%s) where %d suffice%s", have.count[lv],
		 have.count[lv] == 1 ? "" : "s", level_name(lv), x, y, best.count[lv],
		 best.count[lv] == 1 ? "s" : "");
}

static const char *range(int lo, int hi, char *buf, size_t len)
{
	if (lo == hi)
		snprintf(buf, len, "%d", lo);
	else
		snprintf(buf, len, "%d-%d", lo, hi);
	return buf;
}

/*
 * What the engine's verbs transport needs of a ring (pn_plan_job_nic): one
 * connection per (peer, ring), so two ranks that are each other's both
 * neighbours (a ring of two ranks on two nodes) use one NIC both ways; and
 * the connections the ring does not use are placed on its rail (that of its
 * first send NIC), so every node needs a NIC on that rail.
 */
static void engine_nics(const struct pn_plan *p, int r, struct pn_plan_msgs *viol, int *found)
{
	const struct pn_plan_model *m = p->model;
	const struct pn_plan_ring *ring = &p->rings[r];
	int i, rail = -1, len = 0;

	for (i = 0; i < ring->nseg; i++)
		len += ring->seg[i].n;
	for (i = 0; i < ring->nseg; i++) {
		const struct pn_plan_seg *s = &ring->seg[i];

		if (rail < 0 && s->out_nic >= 0)
			rail = nic_rail(m, s->node, s->out_nic);
		if (len == 2 && ring->nseg == 2 && s->n == 1 && s->in_nic != s->out_nic) {
			(*found)++;
			pn_plan_msg(viol, "ring %d: %s receives on %s and sends on %s, both with its "
					  "one peer; one connection uses one NIC",
				    r, m->nodes[s->node].host, nic_name(m, s->node, s->in_nic),
				    nic_name(m, s->node, s->out_nic));
		}
	}
	for (i = 0; rail >= 0 && i < m->nnodes; i++) {
		if (pn_plan_layout_nic_on_rail(&m->layouts[m->nodes[i].layout], rail) >= 0)
			continue;
		(*found)++;
		pn_plan_msg(viol, "ring %d: %s has no NIC on rail %d, the ring's rail (its other "
				  "connections there use it)", r, m->nodes[i].host, rail);
	}
}

int pn_plan_validate(struct pn_plan *p, struct pn_plan_msgs *viol)
{
	struct pn_plan_model *m = p->model;
	int N = m->nnodes, r, i, k, found = 0, *rails = NULL, nrails = 0, ret;
	unsigned *seen = NULL, *nseen = NULL;
	char a[256];

#define VIOL(...)                                                                              \
	do {                                                                                   \
		found++;                                                                       \
		pn_plan_msg(viol, __VA_ARGS__);                                                \
	} while (0)

	/* what the file said that its rings do not (plans read back) */
	for (i = 0; i < p->file_viol.n; i++)
		VIOL("%s", p->file_viol.v[i]);
	found += p->file_viol.dropped;
	viol->dropped += p->file_viol.dropped;
	if (!p->nrings) {
		VIOL("the plan has no rings");
		return found;
	}
	if (p->nrings > PN_PLAN_MAX_RINGS)
		VIOL("the plan has %d rings; the engine runs at most %d (one channel each)",
		     p->nrings, PN_PLAN_MAX_RINGS);
	seen = calloc((size_t)m->nranks + 1, sizeof(*seen));
	nseen = calloc((size_t)N + 1, sizeof(*nseen));
	if (!seen || !nseen) {
		ret = pn_err(-ENOMEM, "out of memory");
		goto fail;
	}
	for (r = 0; r < p->nrings; r++) {
		const struct pn_plan_ring *ring = &p->rings[r];
		unsigned stamp = (unsigned)r + 1;
		int dup = 0, miss = 0, nonic = 0, first_nonic = -1;

		for (i = 0; i < ring->nseg; i++) {
			const struct pn_plan_seg *s = &ring->seg[i];
			const struct pn_plan_layout *l = &m->layouts[m->nodes[s->node].layout];
			const struct pn_plan_seg *nx = &ring->seg[(i + 1) % ring->nseg];

			if (nseen[s->node] == stamp)
				VIOL("ring %d passes %s more than once", r, m->nodes[s->node].host);
			nseen[s->node] = stamp;
			for (k = 0; k < s->n; k++) {
				int rank = m->nodes[s->node].rank0 + ring->gpus[s->off + k];

				if (seen[rank] == stamp) {
					if (dup++ < 3) {
						rank_name(m, rank, a, sizeof(a));
						VIOL("ring %d visits %s twice", r, a);
					}
				}
				seen[rank] = stamp;
			}
			if (N < 2)
				continue;
			if (s->in_nic < 0 || s->out_nic < 0) {
				if (!nonic++)
					first_nonic = s->node;
				continue;
			}
			if (!l->nics[s->in_nic].active)
				VIOL("ring %d: %s receives on %s, which is not usable (port %s)", r,
				     m->nodes[s->node].host, l->nics[s->in_nic].name,
				     l->nics[s->in_nic].state);
			if (!l->nics[s->out_nic].active)
				VIOL("ring %d: %s sends on %s, which is not usable (port %s)", r,
				     m->nodes[s->node].host, l->nics[s->out_nic].name,
				     l->nics[s->out_nic].state);
			if (nx->in_nic >= 0 &&
			    nic_rail(m, s->node, s->out_nic) != nic_rail(m, nx->node, nx->in_nic))
				VIOL("ring %d: hop %s %s (rail %d) -> %s %s (rail %d) changes rail", r,
				     m->nodes[s->node].host, nic_name(m, s->node, s->out_nic),
				     nic_rail(m, s->node, s->out_nic), m->nodes[nx->node].host,
				     nic_name(m, nx->node, nx->in_nic),
				     nic_rail(m, nx->node, nx->in_nic));
		}
		if (nonic)
			VIOL("ring %d: %d node%s (%s%s) lack a receive or send NIC", r, nonic,
			     nonic == 1 ? "" : "s", m->nodes[first_nonic].host, nonic > 1 ? ", ..." : "");
		if (N >= 2 && !nonic)
			engine_nics(p, r, viol, &found);
		if (dup > 3)
			VIOL("ring %d: %d more ranks visited twice", r, dup - 3);
		for (k = 0; k < m->nranks; k++) {
			if (seen[k] == stamp)
				continue;
			if (miss++ < 3) {
				rank_name(m, k, a, sizeof(a));
				VIOL("ring %d never visits %s", r, a);
			}
		}
		if (miss > 3)
			VIOL("ring %d: %d more ranks never visited", r, miss - 3);
		/* path classes: only for segments that cover their node */
		if (!m->exact)
			continue;
		for (i = 0; i < ring->nseg; i++) {
			const struct pn_plan_seg *s = &ring->seg[i];
			struct pn_plan_layout *l = &m->layouts[m->nodes[s->node].layout];
			long long have, best;

			if (s->n != l->ngpus)
				continue;
			have = pn_plan_seg_cost(p, ring, s, N);
			best = pn_plan_best_cost(l, N == 1 ? -1 : s->in_nic, N == 1 ? -1 : s->out_nic);
			if (best < 0) {
				ret = (int)best;
				goto fail;
			}
			if (have > best) {
				path_excess(p, ring, s, N, a, sizeof(a));
				VIOL("ring %d: %s order takes %s%s%s%s%s", r, m->nodes[s->node].host, a,
				     s->in_nic >= 0 ? " from " : "",
				     s->in_nic >= 0 ? l->nics[s->in_nic].name : "",
				     s->out_nic >= 0 ? " to " : "",
				     s->out_nic >= 0 ? l->nics[s->out_nic].name : "");
			}
		}
	}
	/* NIC use and balance, several nodes only */
	if (N >= 2) {
		ret = pn_plan_usable_rails(m, &rails, &nrails, NULL);
		if (ret)
			goto fail;
		if (!p->send) {
			ret = pn_plan_analyze(p, 0);
			if (ret)
				goto fail;
		}
		for (i = 0; i < N && nrails; i++) {
			const struct pn_plan_layout *l = &m->layouts[m->nodes[i].layout];
			int lo = p->load_off[i], ts = 0, tr = 0, j, loS, hiS, loR, hiR;

			for (k = 0; k < l->nnics; k++) {
				ts += p->send[lo + k];
				tr += p->recv[lo + k];
			}
			loS = ts / nrails;
			hiS = (ts + nrails - 1) / nrails;
			loR = tr / nrails;
			hiR = (tr + nrails - 1) / nrails;
			for (j = 0; j < nrails; j++) {
				int nic = pn_plan_layout_nic_on_rail(l, rails[j]);
				int sd, rv;
				char bal[32];

				if (nic < 0)
					continue;
				sd = p->send[lo + nic];
				rv = p->recv[lo + nic];
				if (!sd)
					VIOL("%s %s (rail %d) sends for no ring", m->nodes[i].host,
					     l->nics[nic].name, rails[j]);
				else if (sd < loS || sd > hiS)
					VIOL("%s %s (rail %d) sends for %d rings, balanced is %s",
					     m->nodes[i].host, l->nics[nic].name, rails[j], sd,
					     range(loS, hiS, bal, sizeof(bal)));
				if (!rv)
					VIOL("%s %s (rail %d) receives for no ring", m->nodes[i].host,
					     l->nics[nic].name, rails[j]);
				else if (rv < loR || rv > hiR)
					VIOL("%s %s (rail %d) receives for %d rings, balanced is %s",
					     m->nodes[i].host, l->nics[nic].name, rails[j], rv,
					     range(loR, hiR, bal, sizeof(bal)));
			}
		}
	}
	ret = found;
fail:
	free(rails);
	free(seen);
	free(nseen);
	return ret;
#undef VIOL
}
