/* SPDX-License-Identifier: MIT */
/* ring-plan's files (src/plan/plan_files.c): the --topo-file list, the
 * files --check reads and how it tells their format, and the --nccl-graph
 * names (%h, %N, %n; %% a %, another % refused) checked before the planning
 * and written after it; the model's source (a shape, files, this node) and
 * a rank's node. */
#define _GNU_SOURCE
#include "unit.h"

#include "base/log.h"
#include "plan/plan_files.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *top(void)
{
	const char *t = getenv("TOP");

	return t && *t ? t : ".";
}

TEST(topo_files_list_skips_empty_names)
{
	struct pn_plan_model m;
	char list[2048];

	pn_plan_model_init(&m);
	snprintf(list, sizeof(list), ",%s/tests/fixtures/plan/topo/h100-node01.json,,"
		 "%s/tests/fixtures/plan/topo/h100-node02.json,", top(), top());
	CHECK_EQ_INT(pn_plan_model_add_topo_files(&m, list), 0);
	CHECK_EQ_INT(m.nnodes, 2);
	pn_plan_model_release(&m);
	pn_plan_model_init(&m);
	CHECK_EQ_INT(pn_plan_model_add_topo_files(&m, ",,"), -EINVAL);
	CHECK_STR(pn_errmsg(-EINVAL), "--topo-file names no file");
	CHECK(pn_plan_model_add_topo_files(&m, "/nonexistent/t.json") < 0);
	pn_plan_model_release(&m);
}

TEST(check_files_read_whole_and_their_format)
{
	struct pn_plan_files f;
	struct pn_plan_model model, own;
	struct pn_plan plan;
	struct pn_plan_msgs notes = { 0 }, viol = { 0 };
	char list[2048];

	CHECK_EQ_INT(pn_plan_files_read(&f, ""), -EINVAL);
	CHECK_STR(pn_errmsg(-EINVAL), "--check needs a file");
	pn_plan_files_release(&f);
	CHECK(pn_plan_files_read(&f, "/nonexistent/a.xml") < 0);
	pn_plan_files_release(&f);
	snprintf(list, sizeof(list), "%s/tests/fixtures/plan/nccl/penny-1x4.xml,"
		 "%s/tests/fixtures/plan/nccl/penny-1x4-r8.xml", top(), top());
	CHECK_EQ_INT(pn_plan_files_read(&f, list), 0);
	CHECK(f.n == 2 && f.xml && f.lens[0] > 0 && strstr(f.names[1], "r8"));
	pn_plan_files_release(&f);
	/* JSON is one file */
	snprintf(list, sizeof(list), "%s/tests/fixtures/plan/topo/h100-node01.json,"
		 "%s/tests/fixtures/plan/topo/h100-node02.json", top(), top());
	CHECK_EQ_INT(pn_plan_files_read(&f, list), 0);
	CHECK(f.n == 2 && !f.xml);
	pn_plan_model_init(&model);
	pn_plan_model_init(&own);
	pn_plan_init(&plan, &model);
	CHECK_EQ_INT(pn_plan_files_check(&f, &plan, &own, &model, &notes, &viol), -EINVAL);
	CHECK(strstr(pn_errmsg(-EINVAL), "only for NCCL graph XML") != NULL);
	pn_plan_release(&plan);
	pn_plan_model_release(&own);
	pn_plan_model_release(&model);
	pn_plan_msgs_release(&notes);
	pn_plan_msgs_release(&viol);
	pn_plan_files_release(&f);
}

static int synth(struct pn_plan_model *m, int nodes, const char *hosts)
{
	struct pn_plan_synth s = { .nodes = nodes, .gpus = 4, .nics = 4, .rate_gbps = 400,
				   .nvlinks = 18, .hosts = hosts };
	int ret;

	pn_plan_model_init(m);
	ret = pn_plan_model_synthetic(m, &s);
	return ret ? ret : pn_plan_model_finish(m);
}

TEST(graph_names_per_node)
{
	struct pn_plan_model m;
	char path[64];

	CHECK_EQ_INT(synth(&m, 2, "a,b"), 0);
	CHECK(pn_plan_graph_per_node("g-%h.xml") && pn_plan_graph_per_node("g%n") &&
	      pn_plan_graph_per_node("g-%N.xml") && !pn_plan_graph_per_node("g.xml") &&
	      !pn_plan_graph_per_node("g-%%n.xml"));
	CHECK_EQ_INT(pn_plan_graph_name("g-%h-%n.xml", &m, 1, path, sizeof(path)), 0);
	CHECK_STR(path, "g-b-1.xml");
	/* Slurm's spelling: %N the host name, %% a %; any other % is refused */
	CHECK_EQ_INT(pn_plan_graph_name("g-%N-%%n.xml", &m, 1, path, sizeof(path)), 0);
	CHECK_STR(path, "g-b-%n.xml");
	CHECK_EQ_INT(pn_plan_graph_name("g-%h-%n%.xml", &m, 1, path, sizeof(path)), -EINVAL);
	CHECK_STR(pn_errmsg(-EINVAL), "--nccl-graph 'g-%h-%n%.xml': '%.' is not a pattern (%h or "
		  "%N: the host name, %n: the node index, %%: a %)");
	CHECK_EQ_INT(pn_plan_graphs_check("/tmp/t_plan_files-%j.xml", &m, NULL), -EINVAL);
	CHECK_EQ_INT(pn_plan_graph_name("g%", &m, 0, path, sizeof(path)), -EINVAL);
	CHECK_EQ_INT(pn_plan_graph_name("0123456789%h", &m, 0, path, 11), -ENAMETOOLONG);
	/* one file for every node, or one each; never two nodes in one */
	CHECK_EQ_INT(pn_plan_graphs_check("/nonexistent/g.xml", &m, NULL), -ENOENT);
	CHECK_EQ_INT(pn_plan_graphs_check("/tmp/t_plan_files-%n.xml", &m, NULL), 0);
	/* never over a file the model is read from */
	{
		struct pn_plan_source src = { .topo_files = "x.json,/tmp/t_plan_files-1.xml" };

		CHECK_EQ_INT(pn_plan_graphs_check("/tmp/t_plan_files-%n.xml", &m, &src), -EINVAL);
		CHECK_STR(pn_errmsg(-EINVAL),
			  "--nccl-graph and --topo-file name the same file '/tmp/t_plan_files-1.xml'");
		src.topo_files = NULL;
		src.topo_xml = "./g.xml";
		CHECK_EQ_INT(pn_plan_graphs_check("g.xml", &m, &src), -EINVAL);
		CHECK_STR(pn_errmsg(-EINVAL), "--nccl-graph and --topo-xml name the same file 'g.xml'");
	}
	pn_plan_model_release(&m);
	CHECK_EQ_INT(synth(&m, 2, "x/y,b"), 0);
	CHECK_EQ_INT(pn_plan_graph_name("%h", &m, 0, path, sizeof(path)), -EINVAL);
	pn_plan_model_release(&m);
}

TEST(graphs_written_one_per_node)
{
	struct pn_plan_model m;
	struct pn_plan p;
	struct pn_plan_opts o = { 0 };
	char dir[] = "/tmp/t_plan_files.XXXXXX", pat[80], path[96];
	struct stat st;
	int i;

	CHECK(mkdtemp(dir) != NULL);
	CHECK_EQ_INT(synth(&m, 2, NULL), 0);
	pn_plan_init(&p, &m);
	CHECK_EQ_INT(pn_plan_build(&p, &m, &o), 0);
	snprintf(pat, sizeof(pat), "%s/g-%%n.xml", dir);
	CHECK_EQ_INT(pn_plan_graphs_check(pat, &m, NULL), 0);
	CHECK_EQ_INT(pn_plan_graphs_write(pat, &p), 0);
	for (i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), "%s/g-%d.xml", dir, i);
		CHECK(stat(path, &st) == 0 && st.st_size > 0);
		unlink(path);
	}
	rmdir(dir);
	pn_plan_release(&p);
	pn_plan_model_release(&m);
}

TEST(model_from_one_source)
{
	struct pn_plan_source src = { .nics = -1, .nvlinks = -1 };
	struct pn_plan_model m;
	int r;

	/* nothing named and nothing needed: no model */
	pn_plan_model_init(&m);
	CHECK_EQ_INT(pn_plan_model_load(&m, &src, 0), 0);
	CHECK_EQ_INT(m.nnodes, 0);
	pn_plan_model_release(&m);
	/* a shape without --nodes, or with files too */
	src.gpus = 4;
	pn_plan_model_init(&m);
	CHECK_EQ_INT(pn_plan_model_load(&m, &src, 1), -EINVAL);
	CHECK_STR(pn_errmsg(-EINVAL), "a synthetic cluster needs --nodes N");
	src.nodes = 3;
	src.topo_files = "a.json";
	CHECK_EQ_INT(pn_plan_model_load(&m, &src, 1), -EINVAL);
	CHECK(strstr(pn_errmsg(-EINVAL), "not both") != NULL);
	pn_plan_model_release(&m);
	/* 3 nodes of 4 GPUs and (by default) as many NICs, in --hosts' order */
	src.topo_files = NULL;
	src.hosts = "a,b,c";
	pn_plan_model_init(&m);
	CHECK_EQ_INT(pn_plan_model_load(&m, &src, 0), 0);
	CHECK(m.nnodes == 3 && m.nranks == 12);
	CHECK_STR(m.nodes[2].host, "c");
	CHECK_EQ_INT(m.layouts[0].nnics, 4);
	for (r = 0; r < 12; r++)
		CHECK_EQ_INT(pn_plan_model_node_of(&m, r), r / 4);
	pn_plan_model_release(&m);
	/* --rails applies after the shape: a spec it cannot read fails */
	src.rails = "x";
	pn_plan_model_init(&m);
	CHECK_EQ_INT(pn_plan_model_load(&m, &src, 0), -EINVAL);
	CHECK_STR(pn_errmsg(-EINVAL), "--rails: 'x' is not dev:port:rail");
	pn_plan_model_release(&m);
}

int main(void)
{
	RUN(topo_files_list_skips_empty_names);
	RUN(check_files_read_whole_and_their_format);
	RUN(graph_names_per_node);
	RUN(graphs_written_one_per_node);
	RUN(model_from_one_source);
	return unit_done();
}
