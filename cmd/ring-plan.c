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
#include "plan/plan.h"
#include "plan/plan_files.h"
#include "plan/plan_json.h"
#include "plan/plan_job.h"
#include "harness/plansched.h"
#include "base/util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct {
	struct pn_plan_source src;	/* the cluster model */
	int rings, summary, no_degrade;
	int show_schedule, schedule_rank;
	double pcie_rate;
	uint64_t schedule_size;
	const char *nccl_graph, *check;
} opt = { .src = { .nics = -1, .nvlinks = -1 }, .schedule_rank = -1 };

const struct pn_opt ring_plan_options[] = {
	{ "nodes", 0, OPT_INT, &opt.src.nodes, "N", "synthetic cluster: N nodes (524288 GPUs in all "
	  "at most)", NULL, OPT_RANGE(1, PN_PLAN_MAX_NODES) },
	{ "gpus", 0, OPT_INT, &opt.src.gpus, "G", "synthetic: GPUs per node (default 8)", NULL,
	  OPT_RANGE(1, PN_PLAN_MAX_GPUS) },
	{ "nics", 0, OPT_INT, &opt.src.nics, "K", "synthetic: NIC ports per node (default: --gpus "
	  "/ --gpus-per-nic)", NULL, OPT_RANGE(0, PN_PLAN_MAX_NICS) },
	{ "gpus-per-nic", 0, OPT_INT, &opt.src.gpus_per_nic, "M",
	  "synthetic: GPUs i*M..i*M+M-1 are nearest to NIC i (default: spread evenly)", NULL,
	  OPT_RANGE(1, PN_PLAN_MAX_GPUS) },
	{ "nvlinks", 0, OPT_INT, &opt.src.nvlinks, "N",
	  "synthetic: NVLinks between GPUs (default 18; 0: PCIe only)", NULL, OPT_RANGE(0, 64) },
	{ "nic-rate", 0, OPT_DOUBLE, &opt.src.nic_rate, "GBPS",
	  "synthetic: NIC port rate in Gb/s (default 400)", NULL, OPT_RANGE(0.001, 100000) },
	{ "topo-file", 0, OPT_APPEND, &opt.src.topo_files, "FILE,...",
	  "one `penny topo --save` file per node (repeatable)", NULL, OPT_LIST },
	{ "topo-xml", 0, OPT_STRING, &opt.src.topo_xml, "FILE",
	  "plan one node from an hwloc XML file (as penny topo --topo-xml)", NULL, NULL },
	{ "rails", 0, OPT_STRING, &opt.src.rails, "DEV:PORT:RAIL,...",
	  "rail ids of NIC ports (NCCL_IB_HCA style); unlisted ports are not used", NULL,
	  OPT_LIST },
	{ "hosts", 0, OPT_STRING, &opt.src.hosts, "H1,H2,...",
	  "node order of the rings (physical placement); names synthetic nodes", NULL, OPT_LIST },
	{ "rings", 0, OPT_INT, &opt.rings, "N",
	  "number of rings (one node: any; several: a multiple of one per rail)", NULL,
	  OPT_RANGE(1, PN_PLAN_MAX_RINGS) },
	{ "pcie-rate", 0, OPT_DOUBLE, &opt.pcie_rate, "GBS",
	  "PCIe link rate for the prediction, GB/s per direction (default 63, Gen5 x16)", NULL,
	  OPT_RANGE(0.001, 10000) },
	{ "no-degrade", 0, OPT_BOOL, &opt.no_degrade, NULL,
	  "refuse (exit 1) instead of planning around a missing or down rail", NULL, NULL },
	{ "summary", 0, OPT_BOOL, &opt.summary, NULL, "text: leave out the per-ring diagrams", NULL,
	  NULL },
	{ "show-schedule", 0, OPT_BOOL, &opt.show_schedule, NULL,
	  "print the multiring allreduce schedule the engine runs for these rings", NULL, NULL },
	{ "schedule-rank", 0, OPT_INT, &opt.schedule_rank, "R",
	  "--show-schedule: the rank whose steps are printed (default 0)", NULL,
	  OPT_RANGE(0, PN_PLAN_MAX_RANKS - 1) },
	{ "schedule-size", 0, OPT_SIZE, &opt.schedule_size, "SIZE",
	  "--show-schedule: allreduce size in bytes, float32 (default 1M)", NULL,
	  OPT_RANGE(4, 1ull << 40) },
	{ "nccl-graph", 0, OPT_STRING, &opt.nccl_graph, "FILE", "write NCCL_GRAPH_FILE XML; %h "
	  "or %N (host), %n (index) in FILE: one file per node (%%: a %)", NULL, NULL },
	{ "check", 0, OPT_STRING, &opt.check, "FILE[,FILE...]",
	  "validate a plan: ring-plan JSON, or NCCL graph XML (one shared or one per node)", NULL,
	  OPT_LIST },
	OPT_TABLE_END
};

/* ------------------------------------------------------------- schedule */

/* sc (built for p) into out, text or JSON: the "schedule" object of the output. */
static void write_schedule(struct pn_out *out, const struct pn_plan *p, const struct pn_sched *sc)
{
	const struct pn_plan_model *m = p->model;
	int c, lo = pn_plan_model_node_of(m, sc->rank);
	size_t i;
	char sz[32];

	pn_out_open_object(out, "schedule");
	pn_out_str(out, PN_ANY, "algo", "\nschedule: %s", pn_algo_name(sc->algo));
	pn_out_int(out, PN_ANY, "rank", ", rank %lld", sc->rank);
	pn_out_str(out, PN_ANY, "node", " (%s", m->nodes[lo].host);
	pn_out_str(out, PN_ANY, "gpu", " %s)",
		   m->layouts[m->nodes[lo].layout].gpus[sc->rank - m->nodes[lo].rank0].name);
	pn_out_text(out, ", %s", pn_fmt_size(sz, sizeof(sz), sc->count * sc->esize));
	pn_out_uint(out, PN_ANY, "count", " = %llu float32", sc->count);
	pn_out_uint(out, PN_JSON, "esize", NULL, sc->esize);
	pn_out_int(out, PN_ANY, "nchannels", ", %lld channel", sc->nchan);
	pn_out_text(out, "%s (one per ring)\n", PN_PLAN_S(sc->nchan));
	pn_out_open_array(out, "channels");
	for (c = 0; c < sc->nchan; c++) {
		const struct pn_sched_chan *ch = &sc->ch[c];

		pn_out_open_object(out, NULL);
		pn_out_int(out, PN_ANY, "channel", "channel %lld", c);
		pn_out_uint(out, PN_ANY, "nsteps", ch->n == 1 ? ": %llu step\n" : ": %llu steps\n", ch->n);
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

/* NIC load, grouped: rows of (nic, rail, send, recv) with how many nodes
 * share them (the JSON lists every NIC, plan_json.c). */
static void text_loads(struct pn_out *out, const struct pn_plan *p)
{
	struct pn_plan_load_group *g;
	int ng, j;

	if (pn_plan_load_groups(p, &g, &ng) || !ng)
		return;
	pn_out_text(out, "\nNIC load (rings per NIC and direction):\n");
	pn_out_text(out, "  %-12s %5s %5s %5s  %s\n", "nic", "rail", "send", "recv", "nodes");
	for (j = 0; j < ng; j++) {
		char rail[16];

		snprintf(rail, sizeof(rail), "%d", g[j].rail);
		pn_out_text(out, "  %-12s %5s %5d %5d  ", g[j].nic, g[j].rail >= 0 ? rail : "-",
			    g[j].send, g[j].recv);
		if (g[j].count == p->model->nnodes)
			pn_out_text(out, "all %d", g[j].count);
		else
			pn_out_text(out, "%d (%s%s)", g[j].count, p->model->nodes[g[j].first].host,
				    g[j].count > 1 ? ", ..." : "");
		pn_out_text(out, "%s\n", g[j].active ? "" : "  not usable");
	}
	free(g);
}

/* ---------------------------------------------------------------- check */

static int check(struct pn_ctx *ctx, struct pn_plan_model *model)
{
	struct pn_plan_model own;
	struct pn_plan plan;
	struct pn_plan_msgs notes = { 0 }, viol = { 0 };
	struct pn_sched sc = { 0 };
	struct pn_plan_files f;
	int ret, rc = 2, verdict;

	pn_plan_model_init(&own);
	pn_plan_init(&plan, model);
	ret = pn_plan_files_read(&f, opt.check);
	if (ret) {
		pn_cmd_error(ctx, ret);
		goto out;
	}
	if (f.xml && opt.show_schedule) {
		pn_cmd_fail(ctx, 2, "--show-schedule: the engine runs ring-plan JSON plans "
			    "(allreduce-test --plan), not NCCL graph XML");
		goto out;
	}
	ret = pn_plan_files_check(&f, &plan, &own, model, &notes, &viol);
	if (ret < 0) {
		pn_cmd_error(ctx, ret);
		goto out;
	}
	verdict = pn_plan_verdict(&plan, &viol);
	/* the engine refuses a plan with violations: no schedule for it */
	ret = opt.show_schedule ? pn_plan_sched_show(&sc, &plan, opt.schedule_rank, opt.schedule_size,
						     verdict == PN_PLAN_PASS) : 0;
	if (ret) {
		pn_cmd_error(ctx, ret);
		goto out;
	}
	pn_out_open_object(ctx->out, NULL);
	pn_out_str(ctx->out, PN_ANY, "file", "check %s: ", opt.check);
	pn_out_str(ctx->out, PN_ANY, "format", "%s, ", f.xml ? "nccl-xml" : "json");
	pn_out_int(ctx->out, PN_ANY, "nnodes", "%lld node", plan.model->nnodes);
	pn_out_text(ctx->out, "%s, ", PN_PLAN_S(plan.model->nnodes));
	pn_out_int(ctx->out, PN_ANY, "nranks", "%lld rank", plan.model->nranks);
	pn_out_text(ctx->out, "%s, ", PN_PLAN_S(plan.model->nranks));
	pn_out_int(ctx->out, PN_ANY, "nrings", "%lld ring", plan.nrings);
	pn_out_text(ctx->out, "%s\n", PN_PLAN_S(plan.nrings));
	pn_out_float(ctx->out, PN_JSON, "ring_gbs", NULL, plan.ring_gbs);
	pn_plan_write_msgs(ctx->out, "notes", "note", &notes, &plan.model->notes);
	pn_plan_write_msgs(ctx->out, "violations", "violation", &viol, NULL);
	pn_out_bool(ctx->out, PN_JSON, "ok", NULL, verdict == PN_PLAN_PASS);
	pn_out_text(ctx->out, "%d violation%s\n", viol.n + viol.dropped, PN_PLAN_S(viol.n + viol.dropped));
	if (sc.ch)
		write_schedule(ctx->out, &plan, &sc);
	pn_out_close_object(ctx->out);
	rc = verdict;
	/* JSON: stdout is only the document ("ok"); the verdict line on stderr */
	if (rc && pn_out_is_json(ctx->out))
		pn_cmd_fail(ctx, rc, "FAILED: %d violation%s in %s", viol.n + viol.dropped,
			    PN_PLAN_S(viol.n + viol.dropped), opt.check);
out:
	pn_sched_release(&sc);
	pn_plan_files_release(&f);
	pn_plan_release(&plan);
	pn_plan_model_release(&own);
	pn_plan_msgs_release(&notes);
	pn_plan_msgs_release(&viol);
	return rc;
}

/* ----------------------------------------------------------------- main */

/* Check --nccl-graph's pattern, build the plan, check it and (--show-schedule)
 * schedule it: 0, or -errno (exit 2); refused (--no-degrade): no rings, and
 * plan->refused says why. */
static int make_plan(struct pn_plan *plan, struct pn_plan_model *model, struct pn_plan_msgs *viol,
		     struct pn_sched *sc)
{
	struct pn_plan_opts po = { .rings = opt.rings, .no_degrade = opt.no_degrade,
				   .pcie_gbs = opt.pcie_rate };
	int ret = opt.nccl_graph ? pn_plan_graphs_check(opt.nccl_graph, model, &opt.src) : 0;

	pn_plan_init(plan, model);
	if (!ret)
		ret = pn_plan_build(plan, model, &po);
	if (ret || plan->refused.n)
		return ret;
	ret = pn_plan_validate(plan, viol);
	if (ret >= 0 && opt.nccl_graph && !pn_plan_graph_per_node(opt.nccl_graph))
		ret = pn_plan_nccl_shared_ok(plan);
	if (ret >= 0 && opt.show_schedule)
		ret = pn_plan_sched_show(sc, plan, opt.schedule_rank, opt.schedule_size, 1);
	return ret < 0 ? ret : 0;
}

int cmd_ring_plan(struct pn_ctx *ctx, int argc, char **argv)
{
	struct pn_plan_model model;
	struct pn_plan plan;
	struct pn_plan_msgs viol = { 0 };
	struct pn_sched sc = { 0 };
	int ret, rc;

	if (argc > 0)
		return pn_cmd_fail(ctx, 2, "unexpected argument '%s'", argv[0]);
	/* counts and rates are in range (the table); 0 and -1 mean "not given" */
	if (opt.check && (opt.nccl_graph || opt.summary || opt.rings || opt.no_degrade ||
			  opt.pcie_rate))
		return pn_cmd_fail(ctx, 2, "--check reads a plan; --nccl-graph, --summary, --rings, "
					   "--no-degrade and --pcie-rate are for planning");
	if (!opt.show_schedule && (opt.schedule_rank >= 0 || opt.schedule_size))
		return pn_cmd_fail(ctx, 2, "--schedule-rank and --schedule-size go with --show-schedule");
	if (opt.schedule_size % 4)	/* whole float32, never rounded down */
		return pn_cmd_fail(ctx, 2, "--schedule-size %llu is not a whole number of float32 "
				   "(4 bytes each)", (unsigned long long)opt.schedule_size);
	pn_plan_model_init(&model);
	ret = pn_plan_model_load(&model, &opt.src, !opt.check);
	if (ret) {
		rc = pn_cmd_fail(ctx, 2, "%s", pn_errmsg(ret));
		goto out_model;
	}
	if (opt.check) {
		rc = check(ctx, &model);
		goto out_model;
	}
	ret = make_plan(&plan, &model, &viol, &sc);
	if (ret) {
		rc = pn_cmd_fail(ctx, 2, "%s", pn_errmsg(ret));
		goto out_plan;
	}
	if (plan.refused.n) {
		int i;

		rc = pn_plan_verdict(&plan, NULL);
		for (i = 0; i < plan.refused.n; i++)
			pn_cmd_fail(ctx, rc, "%s", plan.refused.v[i]);
		pn_cmd_fail(ctx, rc, "--no-degrade: refusing to plan around %d missing rail%s",
			    plan.refused.n, plan.refused.n == 1 ? "" : "s");
		goto out_plan;
	}
	pn_plan_write_begin(ctx->out, &plan, opt.summary);
	if (plan.model->nnodes > 1 && !pn_cli.json)
		text_loads(ctx->out, &plan);
	pn_plan_write_tail(ctx->out, &plan, &viol);
	if (opt.show_schedule)
		write_schedule(ctx->out, &plan, &sc);
	pn_out_close_object(ctx->out);
	rc = pn_plan_verdict(&plan, &viol);
	if (opt.nccl_graph) {
		ret = pn_plan_graphs_write(opt.nccl_graph, &plan);
		if (ret)
			rc = pn_cmd_fail(ctx, 2, "%s", pn_errmsg(ret));
	}
out_plan:
	pn_sched_release(&sc);
	pn_plan_msgs_release(&viol);
	pn_plan_release(&plan);
out_model:
	pn_plan_model_release(&model);
	return rc;
}
