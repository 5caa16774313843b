/* SPDX-License-Identifier: MIT */
/*
 * Ring planner: path classes, messages and the cluster model (layouts,
 * nodes, synthetic clusters, rails, host order).  Building rings is in
 * plan_build.c, analysing and validating them in plan_check.c; plan.h has
 * the construction.
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
	if (strlen(host) >= PN_PLAN_HOST || !*host)
		return pn_err(-EINVAL, "host name '%.*s' is empty or longer than %d bytes", 80, host,
			      PN_PLAN_HOST - 1);
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

int pn_plan_model_node_of(const struct pn_plan_model *m, int rank)
{
	int lo = 0, hi = m->nnodes - 1;

	while (lo < hi) {
		int mid = (lo + hi + 1) / 2;

		if (m->nodes[mid].rank0 <= rank)
			lo = mid;
		else
			hi = mid - 1;
	}
	return lo;
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

/* "GPU7" or "GPUs 6-7" into buf. */
static const char *span(char *buf, size_t len, const char *what, int lo, int hi)
{
	if (lo == hi)
		snprintf(buf, len, "%s%d", what, lo);
	else
		snprintf(buf, len, "%ss %d-%d", what, lo, hi);
	return buf;
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
	char what[32];

	if (s->nodes < 1 || s->nodes > PN_PLAN_MAX_NODES)
		return pn_err(-EINVAL, "--nodes must be between 1 and %d", PN_PLAN_MAX_NODES);
	if (G < 1 || G > PN_PLAN_MAX_GPUS)
		return pn_err(-EINVAL, "--gpus must be between 1 and %d", PN_PLAN_MAX_GPUS);
	if ((long)s->nodes * G > PN_PLAN_MAX_RANKS)
		return pn_err(-EINVAL, "--nodes %d x --gpus %d is %ld GPUs; ring-plan plans at most %d",
			      s->nodes, G, (long)s->nodes * G, PN_PLAN_MAX_RANKS);
	if (K < 0 || K > PN_PLAN_MAX_NICS)
		return pn_err(-EINVAL, "--nics must be between 0 and %d", PN_PLAN_MAX_NICS);
	if (M < 0 || M > G)
		return pn_err(-EINVAL, "--gpus-per-nic must be between 1 and --gpus (%d)", G);
	/* NIC i is near GPUs i*M..i*M+M-1 (more NICs: pn_plan_model_load refuses them) */
	if (M && (long)M * K < G)
		return pn_err(-EINVAL, "--gpus-per-nic %d and --nics %d leave %s without a NIC "
			      "(%d GPU%s need%s %d NIC%s)", M, K, span(what, sizeof(what), "GPU", M * K,
			      G - 1), G, PN_PLAN_S(G), G == 1 ? "s" : "", (G + M - 1) / M,
			      PN_PLAN_S((G + M - 1) / M));
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
		char host[PN_PLAN_HOST];

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
				ret = pn_err(-EINVAL, "--hosts names %d host%s, --nodes is %d", n + 1,
					     PN_PLAN_S(n + 1), s->nodes);
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
	m->rails_set = m->rails_listed = 1;
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
		char host[PN_PLAN_HOST];
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
		if (rank > PN_PLAN_MAX_RANKS - l->ngpus || m->nnodes > PN_PLAN_MAX_NODES)
			return pn_err(-EINVAL, "%d nodes%s: ring-plan plans at most %d nodes and %d "
				      "GPUs", m->nnodes, m->nnodes > PN_PLAN_MAX_NODES ? "" :
				      " of more GPUs than that", PN_PLAN_MAX_NODES, PN_PLAN_MAX_RANKS);
		m->nodes[i].rank0 = rank;
		rank += l->ngpus;
	}
	m->nranks = rank;
	return 0;
}
