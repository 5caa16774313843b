/* SPDX-License-Identifier: MIT */
/*
 * Each file format with its writer and reader side by side: written, read
 * back, written again, byte for byte the same (the ring plan JSON, NCCL
 * graph XML); the topology document read back into the same model as the
 * topology it was written from.  (The hwloc 3 -> 2 downgrade has its
 * byte-exact fixtures in t_topo_xml.)
 */
#define _GNU_SOURCE
#include "unit.h"

#include "base/file.h"
#include "base/log.h"
#include "base/minijson.h"
#include "base/out.h"
#include "node/topo.h"
#include "plan/plan.h"
#include "plan/plan_json.h"
#include "plan/topo_json.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *top(void)
{
	const char *t = getenv("TOP");

	return t && *t ? t : ".";
}

static char *slurp(const char *rel, size_t *len)
{
	char path[1024], *buf = NULL;

	snprintf(path, sizeof(path), "%s/%s", top(), rel);
	if (pn_file_read(path, &buf, len)) {
		printf("#   %s\n", pn_errmsg(-EINVAL));
		return NULL;
	}
	return buf;
}

/* The plan document as ring-plan --json writes it. */
static char *plan_json(const struct pn_plan *p, size_t *len)
{
	struct pn_plan_msgs none = { 0 };
	char *buf = NULL;
	FILE *f = open_memstream(&buf, len);
	struct pn_out *o = f ? pn_out_new(f, 1) : NULL;

	if (!o) {
		if (f)
			fclose(f);
		free(buf);
		return NULL;
	}
	pn_plan_write_begin(o, p, 0);
	pn_plan_write_tail(o, p, &none);
	pn_out_close_object(o);
	CHECK_EQ_INT(pn_out_free(o), 0);
	fclose(f);
	return buf;
}

static int same_bytes(const char *a, size_t alen, const char *b, size_t blen)
{
	size_t i;

	if (a && b && alen == blen && !memcmp(a, b, alen))
		return 1;
	for (i = 0; a && b && i < alen && i < blen && a[i] == b[i]; i++)
		;
	printf("#   differ at byte %zu of %zu / %zu: '%.40s' / '%.40s'\n", i, alen, blen,
	       a ? a + i : "(none)", b ? b + i : "(none)");
	return 0;
}

static int synth(struct pn_plan_model *m, int N, int G, int K)
{
	struct pn_plan_synth s = { .nodes = N, .gpus = G, .nics = K, .rate_gbps = 400,
				   .nvlinks = 18 };
	int ret;

	pn_plan_model_init(m);
	ret = pn_plan_model_synthetic(m, &s);
	return ret ? ret : pn_plan_model_finish(m);
}

static int topo_files(struct pn_plan_model *m, const char *const *files)
{
	int ret = 0;

	pn_plan_model_init(m);
	for (; *files && !ret; files++) {
		char rel[256], *buf;
		size_t len;

		snprintf(rel, sizeof(rel), "tests/fixtures/plan/topo/%s", *files);
		buf = slurp(rel, &len);
		ret = buf ? pn_plan_model_add_topo(m, buf, len, rel) : -EIO;
		free(buf);
	}
	return ret ? ret : pn_plan_model_finish(m);
}

/* Plan on m, written, read back on the file's own model, written again. */
static void plan_round_trip(struct pn_plan_model *m, const char *what)
{
	struct pn_plan_opts opts = { 0 };
	struct pn_plan_model own;
	struct pn_plan p, q;
	char *a, *b = NULL;
	size_t alen = 0, blen = 0;
	int ret;

	CHECK_EQ_INT(pn_plan_build(&p, m, &opts), 0);
	a = plan_json(&p, &alen);
	CHECK(a != NULL);
	pn_plan_model_init(&own);
	memset(&q, 0, sizeof(q));
	ret = a ? pn_plan_read_json(&q, &own, NULL, a, alen) : -EIO;
	if (ret)
		printf("#   %s: %s\n", what, pn_errmsg(ret));
	CHECK_EQ_INT(ret, 0);
	if (!ret)
		b = plan_json(&q, &blen);
	/*
	 * What a plan file does not carry back: the planner's notes and
	 * degraded flag, the model's notes; the model read back is "json".
	 */
	if (b) {
		struct pn_plan_msgs pn = p.notes, mn = m->notes;
		int deg = p.degraded;
		char src[sizeof(m->source)];

		memcpy(src, m->source, sizeof(src));
		memset(&p.notes, 0, sizeof(p.notes));
		memset(&m->notes, 0, sizeof(m->notes));
		p.degraded = 0;
		snprintf(m->source, sizeof(m->source), "json");
		free(a);
		a = plan_json(&p, &alen);
		p.notes = pn;
		m->notes = mn;
		p.degraded = deg;
		memcpy(m->source, src, sizeof(src));
	}
	if (!same_bytes(a, alen, b, blen))
		printf("#   %s: the plan JSON changed on its way back\n", what);
	CHECK(a && b && alen == blen && !memcmp(a, b, alen));
	free(a);
	free(b);
	pn_plan_release(&q);
	pn_plan_model_release(&own);
	pn_plan_release(&p);
}

TEST(plan_document)
{
	static const char *const h100[] = { "h100-node01.json", "h100-node02.json",
					    "h100-node03.json", "h100-node04.json", NULL };
	static const char *const uneven[] = { "h100-node01.json", "uneven-node02-port-down.json",
					      "uneven-node03-no-mlx5_5.json", NULL };
	static const int shapes[][3] = { { 1, 8, 8 }, { 2, 8, 8 }, { 3, 4, 2 }, { 1, 4, 0 } };
	struct pn_plan_model m;
	size_t i;

	for (i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
		char what[64];

		snprintf(what, sizeof(what), "synthetic %dx%dx%d", shapes[i][0], shapes[i][1],
			 shapes[i][2]);
		CHECK_EQ_INT(synth(&m, shapes[i][0], shapes[i][1], shapes[i][2]), 0);
		plan_round_trip(&m, what);
		pn_plan_model_release(&m);
	}
	CHECK_EQ_INT(topo_files(&m, h100), 0);
	plan_round_trip(&m, "h100 topo files");
	pn_plan_model_release(&m);
	CHECK_EQ_INT(topo_files(&m, uneven), 0);
	plan_round_trip(&m, "uneven topo files");
	pn_plan_model_release(&m);
}

static char *nccl_xml(const struct pn_plan *p, int node, size_t *len)
{
	char *buf = NULL;
	FILE *f = open_memstream(&buf, len);
	int ret = f ? pn_plan_write_nccl(p, node, f) : -ENOMEM;

	if (f)
		fclose(f);
	if (ret) {
		printf("#   write_nccl: %s\n", pn_errmsg(ret));
		free(buf);
		return NULL;
	}
	return buf;
}

/* NCCL graph XML text read on m and written again (node as for the writer). */
static void nccl_again(struct pn_plan_model *m, const char *text, size_t len, int node,
		       const char *what)
{
	struct pn_plan_msgs notes = { 0 }, viol = { 0 };
	const char *name = what;
	struct pn_plan q;
	char *b = NULL;
	size_t blen = 0;
	int ret = pn_plan_read_nccl(&q, m, &text, &len, &name, 1, &notes, &viol);

	if (ret)
		printf("#   %s: %s\n", what, pn_errmsg(ret));
	CHECK_EQ_INT(ret, 0);
	CHECK_EQ_INT(viol.n, 0);
	if (!ret) {
		b = nccl_xml(&q, node, &blen);
		if (!same_bytes(text, len, b, blen))
			printf("#   %s: the graph XML changed on its way back\n", what);
		CHECK(b && blen == len && !memcmp(text, b, len));
		pn_plan_release(&q);
	}
	free(b);
	pn_plan_msgs_release(&notes);
	pn_plan_msgs_release(&viol);
}

TEST(nccl_graph_xml)
{
	static const char *const fixtures[] = { "penny-1x4.xml", "penny-1x4-r8.xml" };
	struct pn_plan_opts opts = { 0 };
	struct pn_plan_model m;
	struct pn_plan p;
	char *a, rel[256];
	size_t i, len;
	int n;

	/* the files NCCL 2.28.9 loaded (ring-plan --nodes 1 --gpus 4 --nics 0) */
	for (i = 0; i < sizeof(fixtures) / sizeof(fixtures[0]); i++) {
		snprintf(rel, sizeof(rel), "tests/fixtures/plan/nccl/%s", fixtures[i]);
		a = slurp(rel, &len);
		CHECK(a != NULL);
		CHECK_EQ_INT(synth(&m, 1, 4, 0), 0);
		if (a)
			nccl_again(&m, a, len, -1, fixtures[i]);
		free(a);
		pn_plan_model_release(&m);
	}
	/* one shared file for 2 nodes; one file per node for 3 */
	CHECK_EQ_INT(synth(&m, 2, 8, 8), 0);
	CHECK_EQ_INT(pn_plan_build(&p, &m, &opts), 0);
	a = nccl_xml(&p, -1, &len);
	if (a)
		nccl_again(&m, a, len, -1, "shared 2x8x8");
	free(a);
	pn_plan_release(&p);
	pn_plan_model_release(&m);
	CHECK_EQ_INT(synth(&m, 3, 4, 4), 0);
	CHECK_EQ_INT(pn_plan_build(&p, &m, &opts), 0);
	{
		struct pn_plan_msgs notes = { 0 }, viol = { 0 };
		const char *names[3] = { "n1.xml", "n2.xml", "n3.xml" };
		char *xs[3], *again;
		size_t lens[3], alen;
		struct pn_plan q;

		for (n = 0; n < 3; n++)
			xs[n] = nccl_xml(&p, n, &lens[n]);
		CHECK(xs[0] && xs[1] && xs[2]);
		if (xs[0] && xs[1] && xs[2]) {
			CHECK_EQ_INT(pn_plan_read_nccl(&q, &m, (const char *const *)xs, lens, names, 3,
						       &notes, &viol),
				     0);
			CHECK_EQ_INT(viol.n, 0);
			for (n = 0; n < 3; n++) {
				again = nccl_xml(&q, n, &alen);
				CHECK(same_bytes(xs[n], lens[n], again, alen));
				free(again);
			}
			pn_plan_release(&q);
		}
		for (n = 0; n < 3; n++)
			free(xs[n]);
		pn_plan_msgs_release(&notes);
		pn_plan_msgs_release(&viol);
	}
	pn_plan_release(&p);
	pn_plan_model_release(&m);
}

/* The topology document, written from t: read back, the same layout as t itself gives. */
TEST(topo_document)
{
	static const char *const xml[] = { "192em64t-12gr2n8c2t", "24em64t-2n6c2t-pci",
					   "32em64t-2n8c2t-pci-normalio", "power8gpudistances" };
	size_t i;

	for (i = 0; i < sizeof(xml) / sizeof(xml[0]); i++) {
		struct pn_topo_cfg cfg = { 0 };
		struct pn_plan_model a, b;
		struct pn_topo t;
		char path[1024], *buf = NULL, *again = NULL;
		size_t len = 0, alen = 0;
		FILE *f;
		struct pn_out *o;
		int ret;

		snprintf(path, sizeof(path), "%s/tests/fixtures/hwloc/%s.xml", top(), xml[i]);
		cfg.xml_file = path;
		CHECK_EQ_INT(pn_topo_load(&t, &cfg), 0);
		f = open_memstream(&buf, &len);
		o = pn_out_new(f, 1);
		pn_topo_write(o, &t, 0, NULL, 0, 0);
		CHECK_EQ_INT(pn_out_free(o), 0);
		fclose(f);
		pn_plan_model_init(&a);
		pn_plan_model_init(&b);
		ret = pn_plan_model_add_topo(&a, buf, len, xml[i]);
		if (t.ngpus == 0) {
			/* no GPU: the planner refuses both ways */
			CHECK_EQ_INT(ret, -EINVAL);
			CHECK(strstr(pn_errmsg(ret), "has no GPU") != NULL);
			CHECK_EQ_INT(pn_plan_model_add_topology(&b, &t), -EINVAL);
		} else {
			CHECK_EQ_INT(ret, 0);
			CHECK_EQ_INT(pn_plan_model_add_topology(&b, &t), 0);
			CHECK_EQ_INT(ret, 0);
			CHECK(!pn_plan_model_finish(&a) && !pn_plan_model_finish(&b));
			CHECK_EQ_INT(a.nlayouts, 1);
			CHECK_EQ_INT(b.nlayouts, 1);
			if (a.nlayouts == 1 && b.nlayouts == 1) {
				CHECK_STR(a.nodes[0].host, b.nodes[0].host);
				CHECK_EQ_INT(a.layouts[0].ngpus, b.layouts[0].ngpus);
				CHECK_EQ_INT(a.layouts[0].nnics, b.layouts[0].nnics);
				CHECK(!memcmp(a.layouts[0].gg, b.layouts[0].gg, sizeof(a.layouts[0].gg)));
				CHECK(a.layouts[0].hash == b.layouts[0].hash);
			}
		}
		/* and the document written again from the same topology is the same */
		f = open_memstream(&again, &alen);
		o = pn_out_new(f, 1);
		pn_topo_write(o, &t, 0, NULL, 0, 0);
		CHECK_EQ_INT(pn_out_free(o), 0);
		fclose(f);
		CHECK(same_bytes(buf, len, again, alen));
		free(again);
		free(buf);
		pn_plan_model_release(&a);
		pn_plan_model_release(&b);
		pn_topo_release(&t);
	}
}

int main(void)
{
	RUN(plan_document);
	RUN(nccl_graph_xml);
	RUN(topo_document);
	return unit_done();
}
