/* SPDX-License-Identifier: MIT */
/* Ring planner: construction, degradation, validation, NCCL graph XML, JSON read-back. */
#define _GNU_SOURCE
#include "unit.h"

#include "base/file.h"
#include "base/log.h"
#include "base/minijson.h"
#include "plan/plan.h"
#include "t_plan_check.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>

static const char *top(void)
{
	const char *t = getenv("TOP");

	return t && *t ? t : ".";
}

static int synth(struct pn_plan_model *m, int N, int G, int K, int M, int nv)
{
	struct pn_plan_synth s = { .nodes = N, .gpus = G, .nics = K, .gpus_per_nic = M,
				   .rate_gbps = 400, .nvlinks = nv };
	int ret;

	pn_plan_model_init(m);
	ret = pn_plan_model_synthetic(m, &s);
	if (!ret)
		ret = pn_plan_model_finish(m);
	return ret;
}

/* Load fixture topo files (names relative to tests/fixtures/plan/topo), NULL-terminated. */
static int topo(struct pn_plan_model *m, const char *rails, ...)
{
	va_list ap;
	const char *f;
	int ret = 0;

	pn_plan_model_init(m);
	va_start(ap, rails);
	while (!ret && (f = va_arg(ap, const char *))) {
		char path[1024], *buf;
		size_t len;

		snprintf(path, sizeof(path), "%s/tests/fixtures/plan/topo/%s", top(), f);
		ret = pn_file_read(path, &buf, &len);
		if (!ret) {
			ret = pn_plan_model_add_topo(m, buf, len, path);
			free(buf);
		}
	}
	va_end(ap);
	if (!ret && rails)
		ret = pn_plan_model_set_rails(m, rails);
	if (!ret)
		ret = pn_plan_model_finish(m);
	if (ret)
		printf("#   topo: %s\n", pn_errmsg(ret));
	return ret;
}

static int gpu_order(const struct pn_plan *p, int r, int seg, const char *want)
{
	const struct pn_plan_ring *ring = &p->rings[r];
	const struct pn_plan_seg *s = &ring->seg[seg];
	char buf[128] = "";
	int k;

	for (k = 0; k < s->n; k++)
		snprintf(buf + strlen(buf), sizeof(buf) - strlen(buf), "%s%d", k ? " " : "",
			 lay(p, s->node)->gpus[ring->gpus[s->off + k]].index);
	if (strcmp(buf, want))
		printf("#   ring %d seg %d: '%s', want '%s'\n", r, seg, buf, want);
	return !strcmp(buf, want);
}

static int has_msg(const struct pn_plan_msgs *m, const char *needle)
{
	int i;

	for (i = 0; i < m->n; i++)
		if (strstr(m->v[i], needle))
			return 1;
	for (i = 0; i < m->n; i++)
		printf("#   msg: %s\n", m->v[i]);
	printf("#   no message with '%s'\n", needle);
	return 0;
}

static int nviol(struct pn_plan *p, struct pn_plan_msgs *v)
{
	memset(v, 0, sizeof(*v));
	return pn_plan_validate(p, v);
}

TEST(path_classes)
{
	struct pn_plan_path p;
	char b[16];

	CHECK(!pn_plan_path_parse("NV18", &p) && p.cls == PN_PATH_NV && p.nv == 18);
	CHECK_STR(pn_plan_path_name(p, b, sizeof(b)), "NV18");
	CHECK_STR(pn_plan_path_nccl(p), "NVL");
	CHECK(!pn_plan_path_parse("PIX", &p) && p.cls == PN_PATH_PIX);
	CHECK(!pn_plan_path_parse("NODE", &p) && !strcmp(pn_plan_path_nccl(p), "PHB"));
	CHECK(!pn_plan_path_parse("SYS", &p) && pn_plan_path_score(p) == 500);
	CHECK(pn_plan_path_parse("NV0", &p) == -EINVAL);
	CHECK(pn_plan_path_parse("NV256", &p) == -EINVAL);
	CHECK(pn_plan_path_parse("NV1x", &p) == -EINVAL);
	CHECK(!pn_plan_path_parse("pix", &p) && p.cls == PN_PATH_PIX); /* as penny topo reads it */
	CHECK(pn_plan_path_parse("PIXX", &p) == -EINVAL);
	CHECK(pn_plan_path_parse("", &p) == -EINVAL);
	CHECK(pn_plan_path_parse(NULL, &p) == -EINVAL);
}

TEST(two_nodes_alternate)
{
	struct pn_plan_model m;
	struct pn_plan p;
	struct pn_plan_msgs v;
	struct pn_plan_opts o = { 0 };
	const struct pn_plan_layout *l;

	CHECK(!synth(&m, 2, 8, 8, 0, 18));
	CHECK(!pn_plan_build(&p, &m, &o));
	l = lay(&p, 0);
	CHECK_EQ_INT(p.nrings, 8);
	CHECK_EQ_INT(p.nrails, 8);
	/* ring 0: node01 enters on rail 0, leaves on rail 1; node02 the mirror */
	CHECK_STR(l->nics[p.rings[0].seg[0].in_nic].name, "mlx5_0");
	CHECK_STR(l->nics[p.rings[0].seg[0].out_nic].name, "mlx5_1");
	CHECK(gpu_order(&p, 0, 0, "0 2 3 4 5 6 7 1"));
	CHECK_STR(l->nics[p.rings[0].seg[1].in_nic].name, "mlx5_1");
	CHECK_STR(l->nics[p.rings[0].seg[1].out_nic].name, "mlx5_0");
	CHECK(gpu_order(&p, 0, 1, "1 7 6 5 4 3 2 0"));
	/* ring 1: the other rail of the pair everywhere, GPUs backwards */
	CHECK_STR(l->nics[p.rings[1].seg[0].in_nic].name, "mlx5_1");
	CHECK(gpu_order(&p, 1, 0, "1 7 6 5 4 3 2 0"));
	CHECK(gpu_order(&p, 1, 1, "0 2 3 4 5 6 7 1"));
	CHECK(gpu_order(&p, 2, 0, "2 4 5 6 7 0 1 3"));
	CHECK(visits_all_once(&p));
	CHECK(hops_on_rail(&p));
	CHECK(loads_are(&p, 1));
	CHECK_EQ_INT(nviol(&p, &v), 0);
	CHECK(p.ring_gbs == 50.0 && p.busbw_gbs == 400.0);
	CHECK(strstr(p.bottleneck.what, "400 Gb/s") != NULL);
	CHECK(!p.degraded);
	pn_plan_msgs_release(&v);
	pn_plan_release(&p);
	pn_plan_model_release(&m);
}

TEST(odd_node_count_turns_once_per_pair)
{
	struct pn_plan_model m;
	struct pn_plan p;
	struct pn_plan_msgs v;
	struct pn_plan_opts o = { 0 };
	int r, i, turns, turn_node[4];

	CHECK(!synth(&m, 3, 4, 4, 0, 18));
	CHECK(!pn_plan_build(&p, &m, &o));
	CHECK_EQ_INT(p.nrings, 4);
	for (r = 0; r < p.nrings; r++) {
		turns = 0;
		turn_node[r] = -1;
		for (i = 0; i < 3; i++)
			if (p.rings[r].seg[i].in_nic == p.rings[r].seg[i].out_nic) {
				turns++;
				turn_node[r] = i;
			}
		CHECK_EQ_INT(turns, 1);
	}
	/* both rings of a pair turn on the same node, pairs on different nodes */
	CHECK_EQ_INT(turn_node[0], 2);
	CHECK_EQ_INT(turn_node[1], 2);
	CHECK_EQ_INT(turn_node[2], 1);
	CHECK_EQ_INT(turn_node[3], 1);
	/* the pair's rings turn on different rails */
	CHECK(p.rings[0].seg[2].in_nic != p.rings[1].seg[2].in_nic);
	CHECK(visits_all_once(&p));
	CHECK(hops_on_rail(&p));
	CHECK(loads_are(&p, 1));
	CHECK_EQ_INT(nviol(&p, &v), 0);
	CHECK(p.ring_gbs == 50.0); /* no PCIe shared by two NIC legs */
	CHECK(has_msg(&p.notes, "odd node count"));
	pn_plan_msgs_release(&v);
	pn_plan_release(&p);
	pn_plan_model_release(&m);
}

TEST(one_node)
{
	struct pn_plan_model m;
	struct pn_plan p;
	struct pn_plan_msgs v;
	struct pn_plan_opts o = { 0 };

	CHECK(!synth(&m, 1, 4, 0, 0, 18));
	CHECK(!pn_plan_build(&p, &m, &o));
	CHECK_EQ_INT(p.nrings, 2);
	CHECK(gpu_order(&p, 0, 0, "0 1 2 3"));
	CHECK(gpu_order(&p, 1, 0, "0 3 2 1"));
	CHECK(p.rings[0].seg[0].in_nic == -1 && p.rings[0].seg[0].out_nic == -1);
	CHECK(visits_all_once(&p));
	CHECK_EQ_INT(nviol(&p, &v), 0);
	/* NV18: 478 GB/s per GPU shared by the two rings */
	CHECK(p.ring_gbs > 239.0 && p.ring_gbs < 239.1);
	pn_plan_msgs_release(&v);
	pn_plan_release(&p);
	o.rings = 5;
	CHECK(!pn_plan_build(&p, &m, &o));
	CHECK_EQ_INT(p.nrings, 5);
	pn_plan_release(&p);
	pn_plan_model_release(&m);
	CHECK(!synth(&m, 1, 1, 1, 0, 18));
	o.rings = 0;
	CHECK(!pn_plan_build(&p, &m, &o));
	CHECK_EQ_INT(p.nrings, 1);
	CHECK_EQ_INT(nviol(&p, &v), 0);
	pn_plan_msgs_release(&v);
	pn_plan_release(&p);
	pn_plan_model_release(&m);
}

TEST(pcie_node_crosses_sockets_once)
{
	struct pn_plan_model m;
	struct pn_plan p;
	struct pn_plan_msgs v;
	struct pn_plan_opts o = { 0 };

	/* GPUs 0,1 + NIC0 under one switch, GPUs 2,3 + NIC1 under another, SYS between */
	CHECK(!topo(&m, NULL, "pcie-node01.json", "pcie-node02.json", NULL));
	CHECK(!pn_plan_build(&p, &m, &o));
	CHECK_EQ_INT(p.nrings, 2);
	CHECK(gpu_order(&p, 0, 0, "0 1 2 3"));
	CHECK(gpu_order(&p, 0, 1, "3 2 1 0"));
	CHECK_EQ_INT(nviol(&p, &v), 0);
	CHECK(p.ring_gbs == 10.0); /* the socket link */
	pn_plan_msgs_release(&v);
	/* an order crossing twice is flagged, with the count */
	p.rings[0].gpus[p.rings[0].seg[0].off + 1] = 2;
	p.rings[0].gpus[p.rings[0].seg[0].off + 2] = 1;
	CHECK_EQ_INT(nviol(&p, &v), 1);
	CHECK(has_msg(&v, "pnode01 order takes 3 steps over SYS (first GPU0->GPU2) where 1 "
			  "suffices from mlx5_0 to mlx5_1"));
	pn_plan_msgs_release(&v);
	pn_plan_release(&p);
	pn_plan_model_release(&m);
}

TEST(degrade_missing_nic)
{
	struct pn_plan_model m;
	struct pn_plan p;
	struct pn_plan_msgs v;
	struct pn_plan_opts o = { 0 };
	int i;

	CHECK(!topo(&m, NULL, "h100-node01.json", "h100-node02.json",
		    "uneven-node03-no-mlx5_5.json", "h100-node04.json", NULL));
	CHECK_EQ_INT(m.nlayouts, 2);
	CHECK(!pn_plan_build(&p, &m, &o));
	CHECK(p.degraded);
	CHECK_EQ_INT(p.nrails, 7);
	for (i = 0; i < p.nrails; i++)
		CHECK(p.rails[i] != 5);
	CHECK(has_msg(&p.notes, "rail 5 left out: node03 has no NIC on rail 5"));
	CHECK(has_msg(&p.notes, "degraded: 7 of 8 rails in use"));
	CHECK(has_msg(&p.notes, "node03 GPU5 has no nearest NIC"));
	CHECK(visits_all_once(&p));
	CHECK(hops_on_rail(&p));
	CHECK(loads_are(&p, 1));
	CHECK_EQ_INT(nviol(&p, &v), 0);
	CHECK(p.ring_gbs == 50.0);
	CHECK_EQ_INT(pn_plan_verdict(&p, &v), PN_PLAN_PASS);
	pn_plan_msgs_release(&v);
	pn_plan_release(&p);
	/* --no-degrade: no rings, the verdict FAIL (exit 1), the rail left out said */
	o.no_degrade = 1;
	CHECK_EQ_INT(pn_plan_build(&p, &m, &o), 0);
	CHECK_EQ_INT(p.nrings, 0);
	CHECK_EQ_INT(p.refused.n, 1);
	CHECK(has_msg(&p.refused, "rail 5 left out: node03 has no NIC on rail 5"));
	CHECK_EQ_INT(pn_plan_verdict(&p, NULL), PN_PLAN_FAIL);
	pn_plan_release(&p);
	pn_plan_model_release(&m);
}

TEST(degrade_port_down_and_rail_counts)
{
	struct pn_plan_model m;
	struct pn_plan p;
	struct pn_plan_msgs v;
	struct pn_plan_opts o = { 0 };

	CHECK(!topo(&m, NULL, "h100-node01.json", "uneven-node02-port-down.json", NULL));
	CHECK(!pn_plan_build(&p, &m, &o));
	CHECK(has_msg(&p.notes, "rail 1 left out: node02 mlx5_1 port 1 is DOWN"));
	CHECK(has_msg(&p.notes, "rail 7 has no partner"));
	CHECK(hops_on_rail(&p) && loads_are(&p, 1) && visits_all_once(&p));
	CHECK_EQ_INT(nviol(&p, &v), 0);
	pn_plan_msgs_release(&v);
	pn_plan_release(&p);
	pn_plan_model_release(&m);

	CHECK(!topo(&m, NULL, "h100-node01.json", "uneven-node05-4nics.json", NULL));
	CHECK(!pn_plan_build(&p, &m, &o));
	CHECK_EQ_INT(p.nrails, 4);
	CHECK(has_msg(&p.notes, "degraded: 4 of 8 rails in use"));
	CHECK(hops_on_rail(&p) && loads_are(&p, 1));
	pn_plan_release(&p);
	pn_plan_model_release(&m);

	CHECK(!topo(&m, NULL, "h100-node01.json", "uneven-node06-nonics.json", NULL));
	CHECK(pn_plan_build(&p, &m, &o) == -EINVAL);
	CHECK(strstr(pn_errmsg(-EINVAL), "no rail has an active NIC on every node") != NULL);
	pn_plan_release(&p);
	pn_plan_model_release(&m);

	CHECK(!topo(&m, NULL, "h100-node01.json", "uneven-node02-gpu3-norail.json", NULL));
	CHECK(!pn_plan_build(&p, &m, &o));
	CHECK(has_msg(&p.notes, "no GPU is near mlx5_3 (rail 3) on node02"));
	CHECK(hops_on_rail(&p) && loads_are(&p, 1) && visits_all_once(&p));
	CHECK_EQ_INT(nviol(&p, &v), 0);
	pn_plan_msgs_release(&v);
	pn_plan_release(&p);
	pn_plan_model_release(&m);
}

TEST(rails_option)
{
	struct pn_plan_model m;
	struct pn_plan p;
	struct pn_plan_opts o = { 0 };

	/* storage NICs mlx5_8/9 left out by listing the compute rails */
	CHECK(!topo(&m, "mlx5_0:1:0,mlx5_1:1:1,mlx5_2:1:2,mlx5_3:1:3,mlx5_4:1:4,mlx5_5:1:5,"
			"mlx5_6:1:6,mlx5_7:1:7",
		    "h100s-node01.json", "h100s-node02.json", NULL));
	CHECK(has_msg(&m.notes, "mlx5_8 port 1 is not in --rails"));
	CHECK(!pn_plan_build(&p, &m, &o));
	CHECK_EQ_INT(p.nrails, 8);
	CHECK(!p.degraded && p.ring_gbs == 50.0);
	pn_plan_release(&p);
	pn_plan_model_release(&m);
	/* rails by name: the second port of a dual-port NIC is its own rail */
	CHECK(!topo(&m, "mlx5_0:1:0,mlx5_0:2:1,mlx5_1:1:2,mlx5_1:2:3", "dualport-node01.json",
		    "dualport-node02.json", NULL));
	CHECK(!pn_plan_build(&p, &m, &o));
	CHECK_EQ_INT(p.nrails, 4);
	CHECK_STR(lay(&p, 0)->nics[1].name, "mlx5_0:2");
	CHECK(hops_on_rail(&p) && loads_are(&p, 1));
	pn_plan_release(&p);
	pn_plan_model_release(&m);

	CHECK(!synth(&m, 2, 8, 8, 0, 18));
	CHECK(pn_plan_model_set_rails(&m, "mlx5_0:1") == -EINVAL);
	CHECK(strstr(pn_errmsg(-EINVAL), "is not dev:port:rail") != NULL);
	CHECK(pn_plan_model_set_rails(&m, "mlx5_0:1:0,mlx5_1:1:0") == -EINVAL);
	CHECK(strstr(pn_errmsg(-EINVAL), "rail 0 given to both") != NULL);
	CHECK(pn_plan_model_set_rails(&m, "mlx5_0:1:0,mlx5_0:1:1") == -EINVAL);
	CHECK(pn_plan_model_set_rails(&m, "mlx5_0:x:0") == -EINVAL);
	CHECK(pn_plan_model_set_rails(&m, "mlx5_0:1:-3") == -EINVAL);
	CHECK(pn_plan_model_set_rails(&m, ",") == -EINVAL);
	pn_plan_model_release(&m);
}

TEST(hosts_order)
{
	struct pn_plan_model m;
	struct pn_plan_synth s = { .nodes = 3, .gpus = 2, .nics = 2, .rate_gbps = 100,
				   .hosts = "a,b,c" };

	pn_plan_model_init(&m);
	CHECK(!pn_plan_model_synthetic(&m, &s));
	CHECK(!pn_plan_model_order_hosts(&m, "c,a,b"));
	CHECK(!pn_plan_model_finish(&m));
	CHECK_STR(m.nodes[0].host, "c");
	CHECK_EQ_INT(m.nodes[1].rank0, 2);
	CHECK(pn_plan_model_order_hosts(&m, "c,a") == -EINVAL);
	CHECK(strstr(pn_errmsg(-EINVAL), "does not name 'b'") != NULL);
	CHECK(pn_plan_model_order_hosts(&m, "c,a,a") == -EINVAL);
	CHECK(pn_plan_model_order_hosts(&m, "c,a,zz") == -EINVAL);
	pn_plan_model_release(&m);

	s.hosts = "a,b";
	pn_plan_model_init(&m);
	CHECK(pn_plan_model_synthetic(&m, &s) == -EINVAL);
	pn_plan_model_release(&m);
	s.hosts = "a,b,a";
	pn_plan_model_init(&m);
	CHECK(!pn_plan_model_synthetic(&m, &s));
	CHECK(pn_plan_model_finish(&m) == -EINVAL);
	CHECK(strstr(pn_errmsg(-EINVAL), "host 'a' appears twice") != NULL);
	pn_plan_model_release(&m);
}

TEST(validator_catches)
{
	struct pn_plan_model m;
	struct pn_plan p;
	struct pn_plan_msgs v;
	struct pn_plan_opts o = { 0 };
	int tmp;

	CHECK(!synth(&m, 4, 8, 8, 0, 18));
	CHECK(!pn_plan_build(&p, &m, &o));
	CHECK_EQ_INT(nviol(&p, &v), 0);
	pn_plan_msgs_release(&v);
	/* ring 0 leaves node02 on rail 2 instead of 0 */
	tmp = p.rings[0].seg[1].out_nic;
	p.rings[0].seg[1].out_nic = 2;
	CHECK(nviol(&p, &v) >= 1);
	CHECK(has_msg(&v, "ring 0: hop node02 mlx5_2 (rail 2) -> node03 mlx5_0 (rail 0) changes rail"));
	pn_plan_msgs_release(&v);
	p.rings[0].seg[1].out_nic = tmp;
	/* a GPU twice, another never */
	tmp = p.rings[3].gpus[5];
	p.rings[3].gpus[5] = p.rings[3].gpus[4];
	pn_plan_analyze(&p, 0);
	CHECK(nviol(&p, &v) >= 2);
	CHECK(has_msg(&v, "ring 3 visits rank"));
	CHECK(has_msg(&v, "ring 3 never visits rank"));
	pn_plan_msgs_release(&v);
	p.rings[3].gpus[5] = tmp;
	/* two rings on one NIC: unbalanced and an idle NIC */
	p.rings[2].seg[0].in_nic = p.rings[0].seg[0].in_nic;
	p.rings[2].seg[3].out_nic = p.rings[0].seg[3].out_nic;
	pn_plan_analyze(&p, 0);
	CHECK(nviol(&p, &v) >= 2);
	CHECK(has_msg(&v, "node01 mlx5_0 (rail 0) receives for 2 rings, balanced is 1"));
	CHECK(has_msg(&v, "node01 mlx5_2 (rail 2) receives for no ring"));
	pn_plan_msgs_release(&v);
	pn_plan_release(&p);
	pn_plan_model_release(&m);
}

/* XML through a memory stream. */
static char *write_xml(const struct pn_plan *p, int node, size_t *len)
{
	char *buf = NULL;
	FILE *f = open_memstream(&buf, len);
	int ret = pn_plan_write_nccl(p, node, f);

	fclose(f);
	if (ret) {
		printf("#   write_nccl: %s\n", pn_errmsg(ret));
		free(buf);
		return NULL;
	}
	return buf;
}

static int same_rings(const struct pn_plan *a, const struct pn_plan *b)
{
	int r, i;

	if (a->nrings != b->nrings)
		return 0;
	for (r = 0; r < a->nrings; r++) {
		const struct pn_plan_ring *x = &a->rings[r], *y = &b->rings[r];

		if (x->nseg != y->nseg)
			return 0;
		for (i = 0; i < x->nseg; i++) {
			const struct pn_plan_seg *s = &x->seg[i], *t = &y->seg[i];

			if (s->node != t->node || s->in_nic != t->in_nic || s->out_nic != t->out_nic ||
			    s->n != t->n ||
			    memcmp(x->gpus + s->off, y->gpus + t->off, sizeof(int) * (size_t)s->n))
				return 0;
		}
	}
	return 1;
}

TEST(nccl_xml_round_trip)
{
	struct pn_plan_model m, m2;
	struct pn_plan p, q;
	struct pn_plan_msgs notes = { 0 }, v = { 0 };
	struct pn_plan_opts o = { 0 };
	char *x, *xs[3];
	size_t len, lens[3];
	const char *names[3] = { "n1.xml", "n2.xml", "n3.xml" };
	int i;

	/* shared file, 2 nodes: crossnic=2, no ranks, NCCL's swap gives node02's channels */
	CHECK(!synth(&m, 2, 8, 8, 0, 18));
	CHECK(!pn_plan_build(&p, &m, &o));
	x = write_xml(&p, -1, &len);
	CHECK(x && strstr(x, "crossnic=\"2\"") && !strstr(x, "rank=") &&
	      strstr(x, "<net dev=\"0x1\"/>") && strstr(x, "<gpu dev=\"0\"/>"));
	CHECK(!pn_plan_read_nccl(&q, &m, (const char *const *)&x, &len, names, 1, &notes, &v));
	CHECK_EQ_INT(v.n, 0);
	CHECK(same_rings(&p, &q));
	pn_plan_release(&q);
	free(x);
	pn_plan_release(&p);
	pn_plan_model_release(&m);

	/* 3 nodes: one file per node, read back in node order */
	CHECK(!synth(&m, 3, 4, 4, 0, 18));
	CHECK(!pn_plan_build(&p, &m, &o));
	CHECK(pn_plan_nccl_shared_ok(&p) == -EINVAL);
	CHECK(write_xml(&p, -1, &len) == NULL);
	for (i = 0; i < 3; i++)
		xs[i] = write_xml(&p, i, &lens[i]);
	CHECK(xs[1] && strstr(xs[1], "crossnic=\"0\"") && strstr(xs[1], "rank=\"4\""));
	CHECK(!pn_plan_read_nccl(&q, &m, (const char *const *)xs, lens, names, 3, &notes, &v));
	CHECK_EQ_INT(v.n, 0);
	CHECK(same_rings(&p, &q));
	pn_plan_release(&q);
	/* the first node's file alone, with no model: one node, rails = net devs */
	pn_plan_model_init(&m2);
	CHECK(!pn_plan_read_nccl(&q, &m2, (const char *const *)xs, lens, names, 1, &notes, &v));
	CHECK_EQ_INT(m2.nnodes, 1);
	CHECK_EQ_INT(m2.nranks, 4);
	CHECK(has_msg(&notes, "no model given"));
	CHECK_EQ_INT(nviol(&q, &v), 0);
	pn_plan_msgs_release(&v);
	pn_plan_release(&q);
	pn_plan_model_release(&m2);
	for (i = 0; i < 3; i++)
		free(xs[i]);
	pn_plan_release(&p);
	pn_plan_model_release(&m);
	pn_plan_msgs_release(&notes);
}

static int read_one(const char *xml, struct pn_plan_model *m, struct pn_plan_msgs *notes,
		    struct pn_plan_msgs *v)
{
	struct pn_plan q;
	size_t len = strlen(xml);
	const char *name = "t.xml";
	int ret;

	memset(notes, 0, sizeof(*notes));
	memset(v, 0, sizeof(*v));
	ret = pn_plan_read_nccl(&q, m, &xml, &len, &name, 1, notes, v);
	if (!ret) {
		pn_plan_validate(&q, v);
		pn_plan_release(&q);
	}
	return ret;
}

TEST(nccl_xml_reader)
{
	struct pn_plan_model m;
	struct pn_plan_msgs n, v;
	static const char good[] =
		"<graphs version=\"1\">\n"
		"  <graph id=\"0\" pattern=\"4\" crossnic=\"0\" nchannels=\"1\" speedintra=\"40\" "
		"speedinter=\"40\" latencyinter=\"0\" typeintra=\"NVL\" typeinter=\"PIX\" "
		"samechannels=\"1\">\n"
		"    <channel>\n      <gpu dev=\"0\"/>\n      <gpu dev=\"0x1\"/>\n    </channel>\n"
		"  </graph>\n</graphs>\n";
	char buf[2048];

	pn_plan_model_init(&m);
	CHECK(!read_one(good, &m, &n, &v) && v.n == 0);
	pn_plan_model_release(&m);
	pn_plan_msgs_release(&n);
	pn_plan_msgs_release(&v);

#define BAD_PARSE(text, msg)                                                                   \
	do {                                                                                   \
		int r_;                                                                        \
		pn_plan_model_init(&m);                                                        \
		r_ = read_one(text, &m, &n, &v);                                               \
		CHECK(r_ == -EINVAL);                                                          \
		if (r_)                                                                        \
			CHECK(strstr(pn_errmsg(r_), msg) != NULL);                             \
		pn_plan_model_release(&m);                                                     \
		pn_plan_msgs_release(&n);                                                      \
		pn_plan_msgs_release(&v);                                                      \
	} while (0)
	BAD_PARSE("<graphs version=\"1\"><graph id=\"0\"></graphs>", "closing tag does not match");
	BAD_PARSE("<graphs version=\"1\"><!-- x", "unterminated comment");
	BAD_PARSE("<graphs><!-- a -- b --></graphs>", "'--' inside a comment");
	BAD_PARSE("<graphs>text</graphs>", "text content");
	BAD_PARSE("<topology/>", "not an NCCL graph file");
	BAD_PARSE("<graphs version=\"1\"><graph id=\"1\"/></graphs>", "no ring graph");
	BAD_PARSE("<graphs version=1/>", "must be quoted");
	BAD_PARSE("<graphs a=\"1\" a=\"2\"/>", "repeated attribute");
	BAD_PARSE("<graphs/><graphs/>", "content after the root element");
	BAD_PARSE("", "expected '<'");

	/* what NCCL itself would not read */
	snprintf(buf, sizeof(buf), "<?xml version=\"1.0\"?>\n%s", good);
	pn_plan_model_init(&m);
	CHECK(!read_one(buf, &m, &n, &v));
	CHECK(has_msg(&v, "XML declaration"));
	pn_plan_model_release(&m);
	pn_plan_msgs_release(&n);
	pn_plan_msgs_release(&v);
	snprintf(buf, sizeof(buf), "%s", good);
	*strstr(buf, " pattern") = '\n';
	*strstr(buf, "      <gpu") = '\t';
	pn_plan_model_init(&m);
	CHECK(!read_one(buf, &m, &n, &v));
	CHECK(has_msg(&v, "exactly one space on one line"));
	CHECK(has_msg(&v, "a tab"));
	pn_plan_model_release(&m);
	pn_plan_msgs_release(&n);
	pn_plan_msgs_release(&v);
	/* NCCL would refuse the graph: attributes, pattern, channel count */
	snprintf(buf, sizeof(buf), "%s", good);
	memcpy(strstr(buf, "samechannels"), "sameXhannels", 12);
	memcpy(strstr(buf, "pattern=\"4\""), "pattern=\"1\"", 11);
	memcpy(strstr(buf, "nchannels=\"1\""), "nchannels=\"2\"", 13);
	memcpy(strstr(buf, "typeintra=\"NVL\""), "typeintra=\"NVX\"", 15);
	pn_plan_model_init(&m);
	CHECK(!read_one(buf, &m, &n, &v));
	CHECK(has_msg(&v, "lacks \"samechannels\""));
	CHECK(has_msg(&v, "pattern=\"1\""));
	CHECK(has_msg(&v, "nchannels=\"2\" but 1 <channel>"));
	CHECK(has_msg(&v, "typeintra=\"NVX\" is not an NCCL path type"));
	pn_plan_model_release(&m);
	pn_plan_msgs_release(&n);
	pn_plan_msgs_release(&v);
	/* a GPU missing from a channel */
	CHECK(!synth(&m, 1, 3, 0, 0, 18));
	CHECK(!read_one(good, &m, &n, &v));
	CHECK(has_msg(&v, "ring 0 never visits rank 2 (node01 GPU2)"));
	pn_plan_model_release(&m);
	pn_plan_msgs_release(&n);
	pn_plan_msgs_release(&v);
}

TEST(nccl_dump_from_nccl_2_28)
{
	struct pn_plan_model m;
	struct pn_plan q;
	struct pn_plan_msgs n = { 0 }, v = { 0 };
	char path[1024], *x;
	size_t len;
	const char *name = "nccl-dump-1x4.xml";

	/* NCCL 2.28.9's own NCCL_GRAPH_DUMP_FILE on 4x H200 (tests/fixtures/plan/nccl) */
	snprintf(path, sizeof(path), "%s/tests/fixtures/plan/nccl/nccl-dump-1x4.xml", top());
	CHECK(!pn_file_read(path, &x, &len));
	CHECK(!synth(&m, 1, 4, 0, 0, 18));
	CHECK(!pn_plan_read_nccl(&q, &m, (const char *const *)&x, &len, &name, 1, &n, &v));
	CHECK_EQ_INT(q.nrings, 12);
	CHECK(gpu_order(&q, 11, 0, "0 1 2 3"));
	CHECK(has_msg(&n, "graph id 1 (tree) with 12 channels not checked"));
	CHECK_EQ_INT(pn_plan_validate(&q, &v), 0);
	CHECK_EQ_INT(v.n, 0);
	pn_plan_release(&q);
	/* the same dump checked as if shared by 3 nodes: NCCL needs nets then */
	pn_plan_model_release(&m);
	CHECK(!synth(&m, 3, 4, 2, 0, 18));
	pn_plan_msgs_release(&n);
	CHECK(!pn_plan_read_nccl(&q, &m, (const char *const *)&x, &len, &name, 1, &n, &v));
	CHECK(has_msg(&v, "needs 2 <net>"));
	pn_plan_release(&q);
	pn_plan_model_release(&m);
	pn_plan_msgs_release(&n);
	pn_plan_msgs_release(&v);
	free(x);
}

TEST(json_read_back_errors)
{
	struct pn_plan_model own, m;
	struct pn_plan q;
	static const char *const bad[][2] = {
		{ "[]", "no \"rings\"" },
		{ "{\"version\":1,\"rings\":[]}", "no model" },
		{ "{\"version\":2,\"rings\":[]}", "\"version\" must be 1" },
		{ "{\"version\":1,\"rings\":[{\"segments\":[{\"node\":\"zz\",\"gpus\":[0]}]}]}",
		  "unknown node 'zz'" },
		{ "{\"version\":1,\"rings\":[{\"segments\":[{\"node\":\"node01\",\"gpus\":[9]}]}]}",
		  "has no GPU with index 9" },
		{ "{\"version\":1,\"rings\":[{\"segments\":[{\"node\":\"node01\",\"gpus\":[0],"
		  "\"recv\":{\"nic\":\"mlx5_9\"}}]}]}",
		  "has no NIC 'mlx5_9'" },
		{ "{\"version\":1,\"rings\":[{\"segments\":[]}]}", "has no \"segments\"" },
	};
	size_t i;
	int ret;

	CHECK(!synth(&m, 2, 2, 2, 0, 18));
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		pn_plan_model_init(&own);
		memset(&q, 0, sizeof(q));
		ret = pn_plan_read_json(&q, &own, i == 1 ? NULL : &m, bad[i][0], strlen(bad[i][0]));
		CHECK(ret < 0);
		if (ret < 0 && !strstr(pn_errmsg(ret), bad[i][1]))
			printf("#   %zu: '%s' lacks '%s'\n", i, pn_errmsg(ret), bad[i][1]);
		CHECK(ret < 0 && strstr(pn_errmsg(ret), bad[i][1]));
		pn_plan_release(&q);
		pn_plan_model_release(&own);
	}
	pn_plan_model_release(&m);
}

TEST(topo_file_errors)
{
	struct pn_plan_model m;
	static const char *const bad[][2] = {
		{ "{\"version\":2}", "\"version\" must be 1" },
		{ "{\"version\":1,\"host\":\"\"}", "\"host\" must be a non-empty string" },
		{ "{\"version\":1,\"host\":\"h\",\"gpus\":[]}", "h has no GPU" },
		{ "{\"version\":1,\"host\":\"h\",\"gpus\":[{\"name\":\"G\",\"index\":0},"
		  "{\"name\":\"H\",\"index\":0}]}",
		  "the same index 0" },
		{ "{\"version\":1,\"host\":\"h\",\"gpus\":[{\"name\":\"G\"}],\"matrix\":{\"G\":"
		  "{\"N\":\"FOO\"}},\"nics\":[{\"name\":\"N\",\"device\":\"d\",\"ports\":[{}]}]}",
		  "path class for 'N'" },
		{ "{\"version\":1,\"host\":\"h\",\"gpus\":[{\"name\":\"G\"}],\"rails\":[{\"gpu\":"
		  "\"X\",\"nics\":[]}]}",
		  "unknown GPU 'X'" },
		{ "{\"version\":1,\"host\":\"h\",\"gpus\":[{\"name\":\"G\"}],\"rails\":[{\"gpu\":"
		  "\"G\",\"nics\":[\"N9\"]}]}",
		  "names an unknown NIC" },
		{ "{\"version\":1,\"rings\":[]}", "is a ring plan" },
		{ "{\"version\":1,", "line 1 column 14" },
	};
	size_t i;
	int ret;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		pn_plan_model_init(&m);
		ret = pn_plan_model_add_topo(&m, bad[i][0], strlen(bad[i][0]), "f.json");
		CHECK(ret == -EINVAL);
		if (ret && !strstr(pn_errmsg(ret), bad[i][1]))
			printf("#   %zu: '%s' lacks '%s'\n", i, pn_errmsg(ret), bad[i][1]);
		CHECK(ret && strstr(pn_errmsg(ret), bad[i][1]));
		pn_plan_model_release(&m);
	}
}

TEST(from_topology)
{
	struct pn_plan_model m;
	struct pn_plan p;
	struct pn_plan_msgs v = { 0 };
	struct pn_plan_opts o = { 0 };
	struct pn_topo t;
	struct pn_topo_cfg cfg = { 0 };
	char path[1024];
	char c[16];

	/* penny topo's model of an hwloc XML: 4 GPUs, NV2 pairs (0,1) and (2,3), SYS between */
	snprintf(path, sizeof(path), "%s/tests/fixtures/hwloc/power8gpudistances.xml", top());
	cfg.xml_file = path;
	memset(&t, 0, sizeof(t));
	CHECK(!pn_topo_load(&t, &cfg));
	pn_plan_model_init(&m);
	CHECK(!pn_plan_model_add_topology(&m, &t));
	pn_topo_release(&t);
	CHECK(!pn_plan_model_finish(&m));
	CHECK_EQ_INT(m.nnodes, 1);
	CHECK_EQ_INT(m.layouts[0].ngpus, 4);
	CHECK_STR(pn_plan_path_name(m.layouts[0].gg[0][1], c, sizeof(c)), "NV2");
	CHECK_STR(pn_plan_path_name(m.layouts[0].gg[1][2], c, sizeof(c)), "SYS");
	CHECK_STR(m.source, "xml");
	CHECK(!pn_plan_build(&p, &m, &o));
	CHECK(gpu_order(&p, 0, 0, "0 1 2 3"));
	CHECK_EQ_INT(pn_plan_validate(&p, &v), 0);
	/* the cycle 0 2 1 3 crosses SYS four times where two suffice */
	p.rings[0].gpus[1] = 2;
	p.rings[0].gpus[2] = 1;
	CHECK_EQ_INT(pn_plan_validate(&p, &v), 1);
	CHECK(has_msg(&v, "order takes 4 steps over SYS (first GPU0->GPU2) where 2 suffice"));
	pn_plan_msgs_release(&v);
	pn_plan_release(&p);
	pn_plan_model_release(&m);
}

TEST(bandwidth_model)
{
	struct pn_plan_model m;
	struct pn_plan p;
	struct pn_plan_opts o = { .pcie_gbs = 40 };

	/* PCIe slower than the NIC: the GPU's PCIe link is the bottleneck */
	CHECK(!synth(&m, 2, 8, 8, 0, 18));
	CHECK(!pn_plan_build(&p, &m, &o));
	CHECK(p.ring_gbs == 40.0);
	CHECK(strstr(p.bottleneck.what, "PCIe") != NULL);
	pn_plan_release(&p);
	pn_plan_model_release(&m);
	/* more NICs than GPUs: two NIC legs share each GPU's PCIe */
	o.pcie_gbs = 0;
	CHECK(!synth(&m, 2, 4, 8, 0, 18));
	CHECK(!pn_plan_build(&p, &m, &o));
	CHECK(p.ring_gbs == 31.5 && p.bottleneck.users == 2);
	pn_plan_release(&p);
	pn_plan_model_release(&m);
}

int main(void)
{
	RUN(path_classes);
	RUN(two_nodes_alternate);
	RUN(odd_node_count_turns_once_per_pair);
	RUN(one_node);
	RUN(pcie_node_crosses_sockets_once);
	RUN(degrade_missing_nic);
	RUN(degrade_port_down_and_rail_counts);
	RUN(rails_option);
	RUN(hosts_order);
	RUN(validator_catches);
	RUN(nccl_xml_round_trip);
	RUN(nccl_xml_reader);
	RUN(nccl_dump_from_nccl_2_28);
	RUN(json_read_back_errors);
	RUN(topo_file_errors);
	RUN(from_topology);
	RUN(bandwidth_model);
	return unit_done();
}
