/* SPDX-License-Identifier: MIT */
/*
 * penny check's rails: an allreduce over a ring plan with every NIC's byte
 * counters read before and after (the plan's NICs carried the traffic, the
 * others did not, nothing crossed rails), and the pure judgement of those
 * counters (pn_rails_judge, check_rails.h).
 */
#define _GNU_SOURCE
#include "check/check_rails.h"
#include "check/check_net.h"
#include "check/check_row.h"

#include "base/file.h"
#include "base/log.h"
#include "base/out.h"
#include "base/util.h"
#include "base/verdict.h"
#include "engine/boot.h"
#include "engine/coll.h"
#include "engine/comm.h"
#include "harness/plansched.h"
#include "node/counters.h"
#include "node/sysfs.h"
#include "plan/plan.h"
#include "plan/plan_job.h"
#include "plan/topo_json.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void pn_rails_judge(const struct pn_rails_nic *nics, int n, const struct pn_rails_hop *hops,
		    int nhops, uint64_t noise, struct pn_rails_judged *out)
{
	int i, h, rail, maxrail = -1;

	for (i = 0; i < n; i++) {
		const struct pn_rails_nic *x = &nics[i];
		uint64_t moved = x->tx + x->rx;

		out[i].why = !x->valid ? PN_RAILS_UNREAD
			     : x->planned && moved <= noise ? PN_RAILS_IDLE
			     : !x->planned && moved > noise ? PN_RAILS_UNPLANNED
			     : PN_RAILS_OK;
		out[i].peer = -1;
		out[i].lost = 0;
		maxrail = PN_MAX(maxrail, x->rail);
	}
	/* a planned hop between rails moved its sender's bytes to the other rail */
	for (h = 0; h < nhops; h++) {
		int f = hops[h].from, t = hops[h].to;

		if (f < 0 || f >= n || t < 0 || t >= n || nics[f].rail < 0 || nics[t].rail < 0 ||
		    nics[f].rail == nics[t].rail || !nics[f].valid || nics[f].tx <= noise)
			continue;
		out[f].why = PN_RAILS_CROSSED;
		out[f].peer = t;
		out[f].lost = nics[f].tx;
	}
	for (rail = 0; rail <= maxrail; rail++) {
		uint64_t tx = 0, rx = 0, tol;
		int nrail = 0, explained = 0, all_valid = 1;

		for (i = 0; i < n; i++)
			if (nics[i].rail == rail) {
				tx += nics[i].tx;
				rx += nics[i].rx;
				nrail++;
				all_valid &= nics[i].valid;
			}
		tol = noise * (uint64_t)nrail + tx / 50;
		if (!nrail || !all_valid || tx <= rx + tol)
			continue;
		/* rail lost tx - rx bytes: explained by a crossing hop above, or named here */
		for (i = 0; i < n; i++)
			explained |= nics[i].rail == rail && out[i].why == PN_RAILS_CROSSED;
		for (i = 0; i < n && !explained; i++)
			if (nics[i].rail == rail && nics[i].tx > noise) {
				out[i].why = PN_RAILS_CROSSED;
				out[i].lost = tx - rx;
			}
	}
}

/* -------------------------------------------------------------- rails */

/* Every rank's NICs and their counters, for the job-wide judgement. */
struct rl_wire_nic {
	char name[80];
	int32_t rail, valid;
	uint64_t tx, rx;
};

struct rl_wire {
	uint32_t magic;
	int32_t leader, node, nnics;
	char host[64];
	struct rl_wire_nic nic[PN_NET_MAX];
};

/* A planned inter-node connection by node and NIC name. */
struct rl_hop {
	int from_node, to_node;
	char from[80], to[80];
};

/* "dev:port" (the plan's) as "dev/port" (the counters'). */
static void port_name(const char *spec, char *out, size_t len)
{
	const char *colon = strrchr(spec, ':');

	if (colon)
		snprintf(out, len, "%.*s/%s", (int)(colon - spec), spec, colon + 1);
	else
		snprintf(out, len, "%s/1", spec);
}

/* The plan's inter-node connections, in ring order. */
static int rails_hops(const struct pn_plan_job *m, struct rl_hop **out, int *nout)
{
	struct rl_hop *h = NULL, *g;
	size_t cap = 0;
	int ring, i, n = 0, ret;

	for (ring = 0; ring < m->nrings; ring++)
		for (i = 0; i < m->nranks; i++) {
			int r = m->rings[ring][i], nx = m->rings[ring][(i + 1) % m->nranks];
			char s[80], t[80];

			if (m->rank_node[r] == m->rank_node[nx])
				continue;
			ret = pn_plan_job_nic(m, r, nx, ring, s, sizeof(s));
			if (ret == 1)
				ret = pn_plan_job_nic(m, nx, r, ring, t, sizeof(t));
			if (ret < 0) {
				free(h);
				return ret;
			}
			if (ret != 1)
				continue;
			g = pn_grow(h, &cap, (size_t)n, sizeof(*h), 16, INT_MAX);
			if (!g) {
				free(h);
				return pn_err(-ENOMEM, "out of memory");
			}
			h = g;
			h[n].from_node = m->rank_node[r];
			h[n].to_node = m->rank_node[nx];
			port_name(s, h[n].from, sizeof(h[n].from));
			port_name(t, h[n].to, sizeof(h[n].to));
			n++;
		}
	*out = h;
	*nout = n;
	return 0;
}

/* Leaders' topology documents gathered; every rank plans the same rings. */
static int rails_build(struct pn_check *c, struct pn_planned *pl)
{
	char *text = NULL, *all = NULL;
	size_t tlen = 0;
	uint64_t mine[2], *lens = NULL, max = 0;
	int r, k, ret;
	struct pn_plan_opts o = { 0 };

	if (c->node_leader && c->topo) {
		FILE *f = open_memstream(&text, &tlen);
		struct pn_out *out = f ? pn_out_new(f, 1) : NULL;

		if (out) {
			pn_topo_write(out, c->topo, 0, NULL, 0, 0);
			pn_out_free(out);
		}
		if (f)
			fclose(f);
		if (!out) {
			free(text);
			text = NULL;
			tlen = 0;
		}
	}
	mine[0] = c->node_leader ? (uint64_t)tlen : 0;
	mine[1] = (uint64_t)c->node_index;
	lens = calloc((size_t)c->nranks, sizeof(mine));
	if (!lens) {
		free(text);
		return pn_err(-ENOMEM, "out of memory");
	}
	ret = pn_boot_allgather(c->boot, mine, lens, sizeof(mine));
	for (r = 0; !ret && r < c->nranks; r++)
		max = PN_MAX(max, lens[2 * r]);
	if (!ret && (max == 0 || max * (uint64_t)c->nranks > (32u << 20)))
		ret = pn_err(-ENOTSUP, max ? "the topologies are too large to gather: give --plan FILE"
					   : "no node has a topology to plan with: give --plan FILE");
	all = ret ? NULL : calloc((size_t)c->nranks, (size_t)max);
	if (!ret && !all)
		ret = pn_err(-ENOMEM, "out of memory");
	if (!ret) {
		char *pad = calloc(1, (size_t)max);

		if (!pad)
			ret = pn_err(-ENOMEM, "out of memory");
		else {
			if (text)
				memcpy(pad, text, tlen);
			ret = pn_boot_allgather(c->boot, pad, all, (size_t)max);
			free(pad);
		}
	}
	for (k = 0; !ret && k < c->nnodes; k++) {
		for (r = 0; r < c->nranks; r++)
			if (lens[2 * r] && (int)lens[2 * r + 1] == k)
				break;
		if (r == c->nranks) {
			for (r = 0; r < c->nranks && pn_boot_node(c->boot, r) != k; r++)
				;
			ret = pn_err(-ENOTSUP, "node %s has no topology to plan with: give --plan FILE",
				     r < c->nranks ? pn_check_node_of(c, r) : "?");
			break;
		}
		ret = pn_plan_model_add_topo(&pl->model, all + (size_t)r * max, lens[2 * r],
					     pn_boot_node_name(c->boot, r));
		/* the job's node name, not the host in the document (one host, several nodes) */
		if (!ret)
			snprintf(pl->model.nodes[pl->model.nnodes - 1].host, PN_PLAN_NAME, "%s",
				 pn_boot_node_name(c->boot, r));
		else
			ret = pn_err_ctx(-ENOTSUP, "no plan from %s's topology",
					 pn_check_node_of(c, r));
	}
	if (!ret)
		ret = pn_plan_model_finish(&pl->model);
	if (!ret)
		ret = pn_plan_build(&pl->plan, &pl->model, &o);
	if (ret && ret != -ENOMEM && ret != -ENOTSUP)
		ret = pn_err_ctx(-ENOTSUP, "no ring plan from the nodes' topologies (give --plan "
				 "FILE)");
	free(text);
	free(all);
	free(lens);
	return ret;
}

/*
 * The plan: --plan FILE as given (its validator's findings become a note:
 * the counters judge what it does), else planned from the gathered
 * topologies; placed on the job.  -ENOTSUP: the check cannot run here.
 */
static int rails_plan(struct pn_check *c, struct pn_planned *pl, char *note, size_t len)
{
	struct pn_plan_msgs viol = { 0 };
	char *text = NULL;
	size_t tlen = 0;
	int ret;

	note[0] = 0;
	pn_plan_model_init(&pl->model);
	pn_plan_init(&pl->plan, &pl->model);
	pl->rank = c->rank;
	if (c->plan_path) {
		ret = pn_file_read(c->plan_path, &text, &tlen);
		if (!ret)
			ret = pn_plan_load_json(&pl->plan, &pl->model, NULL, text, tlen, &viol);
		if (ret < 0) {
			ret = ret == -ENOMEM ? ret : pn_err_ctx(-EINVAL, "plan '%s'", c->plan_path);
			goto out;
		}
		if (ret > 0 || viol.dropped)
			snprintf(note, len, "plan %s (%d violation%s: run as given)", c->plan_path,
				 viol.n + viol.dropped, viol.n + viol.dropped == 1 ? "" : "s");
		else
			snprintf(note, len, "plan %s", c->plan_path);
	} else {
		/* every rank takes part in the gathering; an error is agreed below */
		ret = rails_build(c, pl);
		if (ret)
			goto out;
		snprintf(note, len, "plan built from the nodes' topologies");
	}
	ret = pn_planned_place(pl, c->boot);
	if (ret && ret != -ENOMEM)
		ret = pn_err_ctx(-ENOTSUP, "rails runs one rank per GPU of the plan");
out:
	pn_plan_msgs_release(&viol);
	free(text);
	return ret;
}

/* The planned allreduce (multiring, one channel per ring, the plan's NICs). */
static int rails_allreduce(struct pn_check *c, struct pn_planned *pl, size_t bytes, int iters)
{
	struct pn_comm_cfg cc = { .nchannels = PN_MAX(1, pl->map.nrings),
				  .verbs_port = pn_planned_port, .verbs_port_arg = pl,
				  .ib_hca = c->ib_hca, .ib_disable = c->ib_disable };
	struct pn_comm *comm = NULL;
	struct pn_coll co;
	size_t count = PN_MAX((size_t)1, bytes / sizeof(float));
	float *a = calloc(count, sizeof(float)), *b = calloc(count, sizeof(float));
	int i, ret;

	memset(&co, 0, sizeof(co));
	ret = a && b ? 0 : pn_err(-ENOMEM, "out of memory");
	if (!ret)
		ret = pn_comm_init(&comm, c->boot, &cc);
	if (!ret)
		ret = pn_coll_init(&co, comm, NULL);	/* multiring: no table */
	if (!ret)
		ret = pn_coll_set_rings(&co, pl->map.nrings, (const int *const *)pl->map.rings);
	for (i = 0; !ret && i < iters; i++)
		ret = pn_allreduce(&co, a, b, count, PN_FLOAT, PN_SUM, PN_ALGO_MULTIRING, NULL, NULL);
	/* every rank done (or failed) before any closes its connections: a
	 * socket closed with the peer's last bytes unread resets the peer's */
	ret = pn_boot_agree_err(c->boot, ret, 1, NULL);
	if (co.comm)
		pn_coll_release(&co);
	pn_comm_free(comm);
	free(a);
	free(b);
	return ret;
}

static struct pn_counters_port *find_port(struct pn_counters_set *s, const char *name)
{
	int i;

	for (i = 0; i < s->n; i++)
		if (s->ports[i].type == PN_PT_RDMA && !strcmp(s->ports[i].name, name))
			return &s->ports[i];
	return NULL;
}

static int ctr_delta(const struct pn_counters_port *p, int kind, uint64_t *v)
{
	const struct pn_counter *k;

	if (p->ix[kind] < 0)
		return 0;
	k = &p->ctr[p->ix[kind]];
	if (!(k->flags & PN_CF_DELTA) || (k->flags & PN_CF_SAT))
		return 0;
	*v = k->delta;
	return 1;
}

/* This leader's NICs as the wire carries them: the node's, then the planned ones it lacks. */
static int rails_mine(struct pn_check *c, const struct rl_hop *hops, int nhops, struct rl_wire *w)
{
	struct pn_netnic nics[PN_NET_MAX];
	int n = pn_checknet_nics(c, nics, PN_NET_MAX, NULL), h, i;

	if (n < 0)
		return n;
	for (i = 0; i < n; i++) {
		snprintf(w->nic[i].name, sizeof(w->nic[i].name), "%s", nics[i].name);
		w->nic[i].rail = nics[i].rail;
	}
	for (h = 0; h < 2 * nhops && n < PN_NET_MAX; h++) {
		const char *name = h % 2 ? hops[h / 2].to : hops[h / 2].from;
		int node = h % 2 ? hops[h / 2].to_node : hops[h / 2].from_node;

		if (node != c->node_index)
			continue;
		for (i = 0; i < n && strcmp(w->nic[i].name, name); i++)
			;
		if (i < n)
			continue;
		snprintf(w->nic[n].name, sizeof(w->nic[n].name), "%s", name);
		w->nic[n].rail = -1;
		n++;
	}
	w->nnics = n;
	return 0;
}

static void rails_result(struct pn_check *c, const struct pn_rails_nic *x,
			 const struct pn_rails_judged *j, const struct pn_rails_nic *all,
			 const struct rl_wire *const *leader, uint64_t noise, const char *note)
{
	struct pn_verdict_in v = { .check = "rails", .target = x->name,
				   .unit = "B", .source = note };
	char detail[PN_VERDICT_DETAIL], exp[64];
	uint64_t moved = x->tx + x->rx;

	v.measured = PN_VNUM((double)moved);
	snprintf(exp, sizeof(exp), x->planned ? "> %llu (planned)" : "<= %llu (not planned)",
		 (unsigned long long)noise);
	v.expected = PN_VTEXT(exp);
	v.detail = detail;
	switch (j->why) {
	case PN_RAILS_UNREAD:
		/* a planned NIC the node does not have fails; unreadable counters cannot judge */
		v.verdict = x->rail < 0 ? PN_FAIL : PN_SKIP;
		v.measured = PN_VTEXT("n/a");
		snprintf(detail, sizeof(detail), x->rail < 0 ? "the plan uses %s, which is not among "
			 "this node's NICs" : "%s: byte counters not readable", x->name);
		break;
	case PN_RAILS_IDLE:
		v.verdict = PN_FAIL;
		snprintf(detail, sizeof(detail), "planned NIC carried nothing: tx %llu B, rx %llu B "
			 "(rails.noise-bytes %llu)", (unsigned long long)x->tx,
			 (unsigned long long)x->rx, (unsigned long long)noise);
		break;
	case PN_RAILS_UNPLANNED:
		v.verdict = PN_FAIL;
		snprintf(detail, sizeof(detail), "carried bytes outside the plan: tx %llu B, rx %llu B "
			 "(more than rails.noise-bytes %llu)", (unsigned long long)x->tx,
			 (unsigned long long)x->rx, (unsigned long long)noise);
		break;
	case PN_RAILS_CROSSED:
		v.verdict = PN_FAIL;
		if (j->peer >= 0)
			snprintf(detail, sizeof(detail), "bytes crossed rails: %llu B sent from rail %d "
				 "through the plan's hop to %s %s on rail %d",
				 (unsigned long long)j->lost, x->rail,
				 leader[all[j->peer].node] ? leader[all[j->peer].node]->host : "?",
				 all[j->peer].name, all[j->peer].rail);
		else
			snprintf(detail, sizeof(detail), "bytes crossed rails: rail %d's NICs sent %llu B "
				 "more than they received, no planned hop explains it (cabling or "
				 "routing); this NIC sent %llu B", x->rail, (unsigned long long)j->lost,
				 (unsigned long long)x->tx);
		break;
	default:
		v.verdict = PN_PASS;
		snprintf(detail, sizeof(detail), "rail %d, %s: tx %llu B, rx %llu B", x->rail,
			 x->planned ? "planned" : "not planned", (unsigned long long)x->tx,
			 (unsigned long long)x->rx);
	}
	pn_check_add(c, &v);
}

/* Every leader: the job's NICs from the gathered wires, the hops by index, the verdicts. */
static int rails_judge(struct pn_check *c, const struct rl_wire *all, const struct rl_hop *hops,
		       int nhops, uint64_t noise, const char *note)
{
	const struct rl_wire **leader = calloc((size_t)c->nnodes, sizeof(*leader));
	struct pn_rails_nic *nics = calloc((size_t)c->nnodes * PN_NET_MAX, sizeof(*nics));
	struct pn_rails_judged *out = calloc((size_t)c->nnodes * PN_NET_MAX, sizeof(*out));
	struct pn_rails_hop *hx = calloc((size_t)nhops + 1, sizeof(*hx));
	int *first = calloc((size_t)c->nnodes + 1, sizeof(int));
	int r, i, k, h, n = 0, ret = 0;

	if (!leader || !nics || !out || !hx || !first) {
		ret = pn_err(-ENOMEM, "out of memory");
		goto out;
	}
	for (r = 0; r < c->nranks; r++)
		if (all[r].magic == PN_NET_WIRE_MAGIC && all[r].leader && all[r].node >= 0 &&
		    all[r].node < c->nnodes)
			leader[all[r].node] = &all[r];
	for (k = 0; k < c->nnodes; k++) {
		first[k] = n;
		for (i = 0; leader[k] && i < leader[k]->nnics && i < PN_NET_MAX; i++, n++) {
			const struct rl_wire_nic *w = &leader[k]->nic[i];

			nics[n].node = k;
			snprintf(nics[n].name, sizeof(nics[n].name), "%s", w->name);
			nics[n].rail = w->rail;
			nics[n].valid = w->valid;
			nics[n].tx = w->tx;
			nics[n].rx = w->rx;
		}
	}
	first[c->nnodes] = n;
	for (h = 0; h < nhops; h++) {
		hx[h].from = hx[h].to = -1;
		for (i = first[hops[h].from_node]; i < first[hops[h].from_node + 1]; i++)
			if (!strcmp(nics[i].name, hops[h].from))
				hx[h].from = i;
		for (i = first[hops[h].to_node]; i < first[hops[h].to_node + 1]; i++)
			if (!strcmp(nics[i].name, hops[h].to))
				hx[h].to = i;
		if (hx[h].from >= 0)
			nics[hx[h].from].planned = 1;
		if (hx[h].to >= 0)
			nics[hx[h].to].planned = 1;
	}
	pn_rails_judge(nics, n, hx, nhops, noise, out);
	for (i = first[c->node_index]; i < first[c->node_index + 1]; i++)
		rails_result(c, &nics[i], &out[i], nics, leader, noise, note);
out:
	free(leader);
	free(nics);
	free(out);
	free(hx);
	free(first);
	return ret;
}

static void rails_job_result(struct pn_check *c, enum pn_verdict v, const char *why)
{
	struct pn_verdict_in in = { .check = "rails", .target = "plan", .verdict = v, .detail = why };

	if (c->node_leader)
		pn_check_add(c, &in);
}

int pn_check_rails(struct pn_check *c)
{
	struct pn_planned *pl = NULL;
	struct pn_counters_set set;
	struct pn_counters_cfg ccfg;
	struct rl_hop *hops = NULL;
	struct rl_wire me, *all = NULL;
	char note[PN_VERDICT_SOURCE], why[PN_VERDICT_DETAIL];
	uint64_t noise = (uint64_t)pn_checknet_num(c, "rails.noise-bytes", 1 << 20, NULL);
	size_t bytes = (size_t)pn_checknet_num(c, "rails.size", 16 << 20, NULL);
	int nhops = 0, ret, code, first, have_set = 0, i;

	if (!c->boot || c->nnodes < 2) {
		rails_job_result(c, PN_SKIP, "needs at least 2 nodes under a launcher (one rank per "
					     "GPU of the ring plan)");
		return 0;
	}
	if (!pn_sysfs_is_live()) {
		rails_job_result(c, PN_SKIP, "not run: the sysfs root is a captured tree");
		return 0;
	}
	if (c->quick)
		bytes = PN_MAX((size_t)4096, bytes / 4);
	memset(&me, 0, sizeof(me));
	memset(&set, 0, sizeof(set));
	pl = calloc(1, sizeof(*pl));
	if (!pl)
		return pn_err(-ENOMEM, "out of memory");
	pn_check_progress(c, "rails", "placing the ring plan on %d ranks", c->nranks);
	code = rails_plan(c, pl, note, sizeof(note));
	if (!code)
		code = rails_hops(&pl->map, &hops, &nhops);
	ret = pn_boot_agree_err(c->boot, code, 1, &first);
	if (ret) {
		if (ret == -ENOMEM || ret == -ECANCELED || ret == -EPIPE)
			goto out;
		snprintf(why, sizeof(why), "%s", pn_errmsg(ret));
		rails_job_result(c, ret == -ENOTSUP ? PN_SKIP : PN_FAIL, why);
		ret = 0;
		goto out;
	}
	/* every node leader: its NICs, and their counters before */
	me.magic = PN_NET_WIRE_MAGIC;
	me.leader = c->node_leader;
	me.node = c->node_index;
	snprintf(me.host, sizeof(me.host), "%s", c->node);
	code = c->node_leader ? rails_mine(c, hops, nhops, &me) : 0;
	if (!code && c->node_leader) {
		pn_counters_cfg_init(&ccfg);
		ccfg.brief = 1;
		code = pn_counters_set_init(&set, &ccfg);
		have_set = !code;
		if (!code)
			code = pn_counters_set_sample(&set);
	}
	ret = pn_boot_agree_err(c->boot, code, 1, &first);
	if (!ret) {
		pn_check_progress(c, "rails", "allreduce of %zu bytes over %d ring%s", bytes,
				  pl->map.nrings, pl->map.nrings == 1 ? "" : "s");
		ret = rails_allreduce(c, pl, bytes, 4);
	}
	if (ret) {
		if (ret == -ENOMEM)
			goto out;
		snprintf(why, sizeof(why), "the allreduce over the plan failed: %s", pn_errmsg(ret));
		rails_job_result(c, PN_FAIL, why);
		ret = 0;
		goto out;
	}
	if (c->node_leader && !pn_counters_set_sample(&set))
		for (i = 0; i < me.nnics; i++) {
			struct pn_counters_port *p = find_port(&set, me.nic[i].name);

			me.nic[i].valid = p && ctr_delta(p, PN_CK_TX_BYTES, &me.nic[i].tx) &&
					  ctr_delta(p, PN_CK_RX_BYTES, &me.nic[i].rx);
		}
	all = calloc((size_t)c->nranks, sizeof(*all));
	if (!all) {
		ret = pn_err(-ENOMEM, "out of memory");
		goto out;
	}
	ret = pn_boot_allgather(c->boot, &me, all, sizeof(me));
	for (i = 0; !ret && i < c->nranks; i++)	/* the details name a node whole */
		all[i].host[sizeof(all[i].host) - 1] = 0;
	if (!ret && c->node_leader)
		ret = rails_judge(c, all, hops, nhops, noise, note);
out:
	if (have_set)
		pn_counters_set_release(&set);
	free(all);
	free(hops);
	pn_planned_free(pl);
	return ret;
}
