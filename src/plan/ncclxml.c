/* SPDX-License-Identifier: MIT */
/*
 * NCCL's graph XML both ways: the NCCL_GRAPH_FILE that ring-plan writes,
 * and graph files read back for --check (NCCL_GRAPH_DUMP_FILE or our own),
 * parsed by the one XML reader (base/xml.h).
 */
#define _GNU_SOURCE
#include "plan/plan.h"

#include "base/log.h"
#include "base/minijson.h"
#include "base/util.h"
#include "base/xml.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

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
		return pn_err(-EINVAL, "%d ring%s: NCCL swaps channel pairs only for an even channel "
				       "count; use one file per node (%%h or %%n in the file name)",
			      p->nrings, PN_PLAN_S(p->nrings));
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

/* A graph file's element, as the checks below walk it (copied out of libxml2's tree). */
struct xel {
	const char *name;
	int line;
	int nattr;
	const char *ak[XML_MAX_ATTRS], *av[XML_MAX_ATTRS];
	struct xel **kids;
	int nkids;
};

struct xread {
	const char *file;
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
	free(e->kids);
	free(e);
}

static int xfail(const struct xread *x, int line, const char *what)
{
	return pn_err(-EINVAL, "'%s' line %d: %s", x->file, line, what);
}

static void xquirk(struct xread *x, int line, const char *what)
{
	if (x->nccl && x->ncclbad++ < 5)
		pn_plan_msg(x->nccl, "'%s' line %d: NCCL's XML reader cannot read this: %s", x->file,
			    line, what);
}

/*
 * NCCL's own reader (xml.cc) is stricter than XML about white space: it
 * skips only spaces and newlines, and wants attributes one space apart
 * on one line with '=' right after the name.  This looks for that in a
 * document libxml2 has already read (so markup is well-formed here).
 */
static void ncclquirks(struct xread *x, const char *p, const char *end)
{
	int line = 1;

	while (p < end) {
		const char *q;
		int nsp, nl;

		if (*p != '<') {
			if (*p == '\t')
				xquirk(x, line, "a tab (it skips only spaces and newlines)");
			line += *p++ == '\n';
			continue;
		}
		if (end - p >= 4 && !memcmp(p, "<!--", 4)) {
			q = memmem(p, (size_t)(end - p), "-->", 3);
			for (q = q ? q + 3 : end; p < q; p++)
				line += *p == '\n';
			continue;
		}
		if (end - p >= 2 && (p[1] == '?' || p[1] == '/' || p[1] == '!')) {
			for (; p < end && *p != '>'; p++)
				line += *p == '\n';
			continue;
		}
		for (p++; p < end && !isspace((unsigned char)*p) && *p != '/' && *p != '>'; p++)
			;
		for (;;) { /* white space, then an attribute or the end of the tag */
			for (nsp = nl = 0; p < end && isspace((unsigned char)*p); p++, nsp++) {
				if (*p == '\n' || *p == '\r')
					nl = 1;
				else if (*p != ' ')
					nl = 2;
				line += *p == '\n';
			}
			if (p >= end)
				return;
			if (*p == '/' || *p == '>') {
				if (nl)
					xquirk(x, line, "a line break or tab before the end of a tag");
				break;
			}
			if (nsp != 1 || nl)
				xquirk(x, line, "attributes must be separated by exactly one space on one "
						"line");
			for (; p < end && *p != '=' && !isspace((unsigned char)*p); p++)
				;
			if (p < end && *p != '=')
				xquirk(x, line, "spaces around '=' in an attribute");
			for (; p < end && *p != '"' && *p != '\''; p++)
				line += *p == '\n';
			if (p >= end)
				return;
			for (q = p++; p < end && *p != *q; p++)
				line += *p == '\n';
			p++;
		}
	}
}

/* Element e (libxml2's) as a struct xel; text, CDATA and processing instructions are refused. */
static int xcopy(struct xread *x, const xmlNode *n, int depth, struct xel **out)
{
	const xmlAttr *a;
	const xmlNode *k;
	struct xel *e;
	int ret = 0, nk = 0;

	*out = NULL;
	if (depth > XML_MAX_DEPTH)
		return xfail(x, pn_xml_line(n), "elements nested too deep");
	for (k = n->children; k; k = k->next)
		nk += k->type == XML_ELEMENT_NODE;
	e = calloc(1, sizeof(*e));
	if (!e || !(e->kids = calloc((size_t)nk + 1, sizeof(*e->kids)))) {
		free(e);
		return pn_err(-ENOMEM, "out of memory");
	}
	e->name = (const char *)n->name;
	e->line = pn_xml_line(n);
	for (a = n->properties; a && !ret; a = a->next) {
		const char *v = pn_xml_attr(n, (const char *)a->name);

		if (e->nattr == XML_MAX_ATTRS)
			ret = xfail(x, e->line, "too many attributes");
		else if (!v || a->ns)
			ret = xfail(x, e->line, "an attribute NCCL cannot read");
		else if (strlen(v) > 255)
			xquirk(x, e->line, "an attribute value over 255 bytes");
		if (!ret) {
			e->ak[e->nattr] = (const char *)a->name;
			e->av[e->nattr++] = v;
		}
	}
	for (k = n->children; k && !ret; k = k->next) {
		if (k->type == XML_ELEMENT_NODE)
			ret = xcopy(x, k, depth + 1, &e->kids[e->nkids++]);
		else if ((k->type == XML_TEXT_NODE && !xmlIsBlankNode(k)) ||
			 k->type == XML_CDATA_SECTION_NODE)
			ret = xfail(x, pn_xml_line(k) ? pn_xml_line(k) : e->line,
				    "text content is not expected in a graph file");
		else if (k->type == XML_PI_NODE)
			ret = xfail(x, pn_xml_line(k),
				    "DOCTYPE and processing instructions are not supported");
	}
	if (ret) {
		xel_free(e);
		return ret;
	}
	*out = e;
	return 0;
}

/* The file as a tree of struct xel (*root) on libxml2's document (*doc, to free after). */
static int xml_parse(const char *text, size_t len, const char *file, struct pn_plan_msgs *nccl,
		     xmlDocPtr *doc, struct xel **root)
{
	struct xread x = { .file = file, .nccl = nccl };
	struct pn_xml_error e;
	const xmlNode *n;
	int ret;

	*root = NULL;
	if (len >= 3 && !memcmp(text, "\xef\xbb\xbf", 3))
		return xfail(&x, 1, "byte-order mark");
	*doc = pn_xml_parse(text, len, &e);
	if (!*doc) {
		if (e.code == PN_XML_E_NOMEM)
			return pn_err(-ENOMEM, "out of memory");
		if (e.code == XML_ERR_DOCUMENT_EMPTY)
			return xfail(&x, e.line, "expected '<'");
		if (e.code == XML_ERR_DOCUMENT_END)
			return xfail(&x, e.line, "content after the root element");
		return xfail(&x, e.line, pn_xml_why(&e, text, len));
	}
	for (n = (*doc)->children; n; n = n->next)
		if (n->type == XML_DTD_NODE || n->type == XML_PI_NODE) {
			ret = xfail(&x, n->type == XML_PI_NODE ? pn_xml_line(n) : 1,
				    "DOCTYPE and processing instructions are not supported");
			goto fail;
		}
	if (len >= 5 && !memcmp(text, "<?xml", 5))
		xquirk(&x, 1, "an XML declaration (<?xml ...?>)");
	ncclquirks(&x, text, text + len);
	ret = xcopy(&x, xmlDocGetRootElement(*doc), 0, root);
	if (!ret)
		return 0;
fail:
	xmlFreeDoc(*doc);
	*doc = NULL;
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
		pn_plan_msg(viol, "'%s' line %d: nchannels=\"%s\" but %d <channel> element%s",
			    ng->name, g->line, xattr(g, "nchannels"), ng->nch, PN_PLAN_S(ng->nch));
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
		pn_plan_msg(notes, "'%s': graph id %ld (%s) with %ld channel%s not checked (rings "
				   "only)",
			    name, id, id >= 0 && id < 5 ? gnames[id] : "?", v, PN_PLAN_S(v));
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
	xmlDocPtr *docs = NULL;
	struct ngraph *gs = NULL;
	int i, n, c, R, N, ret = 0, derived = 0;

	if (nfiles < 1)
		return pn_err(-EINVAL, "no graph file");
	roots = calloc((size_t)nfiles, sizeof(*roots));
	docs = calloc((size_t)nfiles, sizeof(*docs));
	gs = calloc((size_t)nfiles, sizeof(*gs));
	if (!roots || !docs || !gs) {
		ret = pn_err(-ENOMEM, "out of memory");
		goto out;
	}
	for (i = 0; i < nfiles; i++) {
		ret = xml_parse(texts[i], lens[i], names[i], viol, &docs[i], &roots[i]);
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
		ret = pn_err(-EINVAL, "%d graph files for %d node%s: give one shared file or one per "
				      "node",
			     nfiles, N, PN_PLAN_S(N));
		goto out;
	}
	R = gs[0].nch;
	for (i = 1; i < nfiles; i++) {
		if (gs[i].nch != R)
			pn_plan_msg(viol, "'%s' has %d channel%s, '%s' has %d: NCCL uses the smallest "
					  "count on every rank",
				    names[0], R, PN_PLAN_S(R), names[i], gs[i].nch);
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
	for (i = 0; i < nfiles && docs; i++)
		if (docs[i])
			xmlFreeDoc(docs[i]);
	free(docs);
	for (i = 0; i < nfiles && gs; i++)
		free(gs[i].ch);
	free(roots);
	free(gs);
	return ret;
}

