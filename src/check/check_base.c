/* SPDX-License-Identifier: MIT */
/*
 * The baseline of `penny check` (check_base.h): a known-good run's
 * numeric results written as JSON (--save-baseline) and read back
 * (--baseline), bounded and strict, as the expectations' second source:
 *   {"penny_check_baseline": 1,
 *    "results": [{"check": "nic-bw", "target": "mlx5_0/1", "node": "n1",
 *                 "measured": 371.2, "unit": "Gb/s"}, ...]}
 */
#include "check/check_base.h"
#include "base/file.h"
#include "base/log.h"
#include "base/minijson.h"
#include "base/out.h"
#include "base/verdict.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define BASE_VERSION 1

struct base_entry {
	char check[PN_VERDICT_NAME], target[PN_VERDICT_NAME], node[PN_VERDICT_NAME];
	double v;
};

struct pn_check_baseline {
	int n;
	struct base_entry *e;
};

static void put_str(FILE *f, const char *key, const char *s, const char *sep)
{
	char buf[PN_VERDICT_DETAIL * 6 + 8];

	pn_json_escape(buf, sizeof(buf), s);
	fprintf(f, "\"%s\": \"%s\"%s", key, buf, sep);
}

int pn_check_baseline_write(FILE *f, const struct pn_verdict_list *l)
{
	int i, n = 0;

	fprintf(f, "{\"penny_check_baseline\": %d,\n \"results\": [", BASE_VERSION);
	for (i = 0; i < pn_verdict_n(l); i++) {
		const struct pn_verdict_result *r = pn_verdict_at(l, i);

		if (r->measured.kind != PN_VAL_NUM)
			continue;
		fprintf(f, "%s\n  {", n++ ? "," : "");
		put_str(f, "check", r->check, ", ");
		put_str(f, "target", r->target, ", ");
		put_str(f, "node", r->node, ", ");
		fprintf(f, "\"measured\": %.17g, ", r->measured.num);
		put_str(f, "unit", r->unit, "}");
	}
	fprintf(f, "\n ]}\n");
	return ferror(f) ? -EIO : 0;
}

static int bad(const char *path, const struct pn_jval *v, const char *why)
{
	return pn_err(-EINVAL, "%s: line %u: %s", path, v ? v->line : 1, why);
}

static int parse(struct pn_check_baseline *b, const struct pn_jval *root, const char *path)
{
	const struct pn_jval *res = pn_json_get(root, "results");
	long long ver;
	unsigned i, j, n;

	if (!root || root->type != PN_JSON_OBJECT)
		return bad(path, root, "not a penny check baseline (an object expected)");
	if (pn_json_int(pn_json_get(root, "penny_check_baseline"), &ver) || ver != BASE_VERSION)
		return bad(path, root, "not a penny check baseline of version 1");
	if (!res || res->type != PN_JSON_ARRAY)
		return bad(path, root, "\"results\" must be an array");
	n = pn_json_len(res);
	if (n > PN_VERDICT_MAX)
		return bad(path, res, "more results than a run can have");
	b->e = calloc(n ? n : 1, sizeof(*b->e));
	if (!b->e)
		return pn_err(-ENOMEM, "out of memory");
	for (i = 0; i < n; i++) {
		const struct pn_jval *r = pn_json_at(res, i);
		const char *check = pn_json_str(pn_json_get(r, "check"));
		const char *target = pn_json_str(pn_json_get(r, "target"));
		const char *node = pn_json_str(pn_json_get(r, "node"));
		struct base_entry *e = &b->e[b->n];

		if (!check || !target || pn_json_num(pn_json_get(r, "measured"), &e->v))
			return bad(path, r, "a result needs \"check\", \"target\" (strings) and "
				   "\"measured\" (a number)");
		/* every figure penny measures is a size or rate: never below zero */
		if (e->v < 0)
			return bad(path, pn_json_get(r, "measured"),
				   "\"measured\" must not be negative");
		/* a count compared for equality: 2.5 GPUs would fail every run */
		if (!strcmp(check, "inventory") && e->v != floor(e->v))
			return bad(path, pn_json_get(r, "measured"),
				   "an inventory count must be a whole number");
		if (strlen(check) >= sizeof(e->check) || strlen(target) >= sizeof(e->target) ||
		    (node && strlen(node) >= sizeof(e->node)))
			return bad(path, r, "a check, target or node name longer than 63 bytes");
		/* a run saves one result a check, target and node (a job's run
		 * one per node of the same check and target): a second would be
		 * left unread without a word */
		for (j = 0; j < (unsigned)b->n; j++)
			if (!strcmp(b->e[j].check, check) && !strcmp(b->e[j].target, target) &&
			    !strcmp(b->e[j].node, node ? node : ""))
				return bad(path, r, "a second result for the same check, target and node");
		strcpy(e->check, check);
		strcpy(e->target, target);
		strcpy(e->node, node ? node : "");
		b->n++;
	}
	return 0;
}

int pn_check_baseline_parse(struct pn_check_baseline **out, const char *buf, size_t len,
			    const char *name)
{
	struct pn_check_baseline *b = calloc(1, sizeof(*b));
	struct pn_json_doc doc = { 0 };
	int ret;

	*out = NULL;
	if (!b)
		return pn_err(-ENOMEM, "out of memory");
	ret = pn_json_parse(&doc, buf, len);
	if (ret)
		ret = pn_err_ctx(ret, "%s", name);
	if (!ret)
		ret = parse(b, doc.root, name);
	pn_json_release(&doc);
	if (ret) {
		pn_check_baseline_free(b);
		return ret;
	}
	*out = b;
	return 0;
}

int pn_check_baseline_load(struct pn_check_baseline **out, const char *path)
{
	char *buf = NULL;
	size_t len;
	int ret = pn_file_read(path, &buf, &len);

	*out = NULL;
	if (!ret)
		ret = pn_check_baseline_parse(out, buf, len, path);
	free(buf);
	return ret;
}

void pn_check_baseline_free(struct pn_check_baseline *b)
{
	if (!b)
		return;
	free(b->e);
	free(b);
}

int pn_check_baseline_find(const struct pn_check_baseline *b, const char *check,
			   const char *target, double *v)
{
	int i, found = 0;

	/* saved from a job, one a node: the lowest, so that no healthy node is
	 * held to another's best */
	for (i = 0; b && i < b->n; i++)
		if (!strcmp(b->e[i].check, check) && !strcmp(b->e[i].target, target) &&
		    (!found++ || b->e[i].v < *v))
			*v = b->e[i].v;
	return found ? 0 : -ENOENT;
}
