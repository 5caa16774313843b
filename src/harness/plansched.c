/* SPDX-License-Identifier: MIT */
/*
 * A ring plan as the engine's multiring schedule at one rank, and that
 * schedule written out (plansched.h).
 */
#include "harness/plansched.h"
#include "base/log.h"
#include "base/util.h"
#include "plan/plan_job.h"
#include "engine/boot.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int pn_plan_sched_build(struct pn_sched *sc, const struct pn_plan *p, int rank, size_t count,
			size_t esize)
{
	const struct pn_plan_model *m = p->model;
	struct pn_plan_job pj;
	struct pn_sched_job job;
	int *node, i, k, ret;

	if (rank < 0 || rank >= m->nranks)
		return pn_err(-EINVAL, "rank %d: the plan has ranks 0-%d", rank, m->nranks - 1);
	node = malloc(sizeof(int) * (size_t)m->nranks);
	if (!node)
		return pn_err(-ENOMEM, "out of memory");
	for (i = 0; i < m->nnodes; i++)
		for (k = 0; k < m->layouts[m->nodes[i].layout].ngpus; k++)
			node[m->nodes[i].rank0 + k] = i;
	ret = pn_plan_job_map(&pj, p, m->nranks, node, m->nnodes, NULL);
	if (!ret) {
		memset(&job, 0, sizeof(job));
		job.rank = rank;
		job.nranks = m->nranks;
		job.node = node;
		job.nchannels = pj.nrings;
		job.inplace = 1;
		job.rings = (const int *const *)pj.rings;
		ret = pn_sched_build(sc, PN_ALGO_MULTIRING, &job, count, esize);
		pn_plan_job_release(&pj);
	}
	free(node);
	return ret;
}

void pn_plan_sched_write(struct pn_out *out, const struct pn_plan *p, const struct pn_sched *sc)
{
	const struct pn_plan_model *m = p->model;
	int c, lo = 0, hi = m->nnodes - 1;
	size_t i;
	char sz[32];

	while (lo < hi) { /* node of the rank */
		int mid = (lo + hi + 1) / 2;

		if (m->nodes[mid].rank0 <= sc->rank)
			lo = mid;
		else
			hi = mid - 1;
	}
	pn_out_open_object(out, "schedule");
	pn_out_str(out, PN_ANY, "algo", "\nschedule: %s", pn_algo_name(sc->algo));
	pn_out_int(out, PN_ANY, "rank", ", rank %lld", sc->rank);
	pn_out_str(out, PN_ANY, "node", " (%s", m->nodes[lo].host);
	pn_out_str(out, PN_ANY, "gpu", " %s)",
		   m->layouts[m->nodes[lo].layout].gpus[sc->rank - m->nodes[lo].rank0].name);
	pn_out_text(out, ", %s", pn_fmt_size(sz, sizeof(sz), sc->count * sc->esize));
	pn_out_uint(out, PN_ANY, "count", " = %llu float32", sc->count);
	pn_out_uint(out, PN_JSON, "esize", NULL, sc->esize);
	pn_out_int(out, PN_ANY, "nchannels", ", %lld channels (one per ring)\n", sc->nchan);
	pn_out_open_array(out, "channels");
	for (c = 0; c < sc->nchan; c++) {
		const struct pn_sched_chan *ch = &sc->ch[c];

		pn_out_open_object(out, NULL);
		pn_out_int(out, PN_ANY, "channel", "channel %lld", c);
		pn_out_uint(out, PN_ANY, "nsteps", ": %llu steps\n", ch->n);
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

int pn_planned_port(void *arg, int peer, int chan, char *out, size_t len)
{
	const struct pn_planned *pl = arg;

	return pn_plan_job_nic(&pl->map, pl->rank, peer, chan, out, len);
}

void pn_planned_free(struct pn_planned *pl)
{
	if (!pl)
		return;
	pn_plan_job_release(&pl->map);
	pn_plan_release(&pl->plan);
	pn_plan_model_release(&pl->model);
	free(pl);
}

int pn_planned_place(struct pn_planned *pl, struct pn_boot *b)
{
	int nranks = pn_boot_nranks(b), r, ret;
	int *node = calloc((size_t)nranks, sizeof(int));
	const char **names = calloc((size_t)nranks, sizeof(char *));

	ret = node && names ? 0 : pn_err(-ENOMEM, "out of memory");
	for (r = 0; !ret && r < nranks; r++) {
		node[r] = pn_boot_node(b, r);
		if (!names[node[r]])
			names[node[r]] = pn_boot_node_name(b, r);
	}
	if (!ret)
		ret = pn_plan_job_map(&pl->map, &pl->plan, nranks, node, pn_boot_nnodes(b), names);
	free(node);
	free(names);
	return ret;
}

int pn_planned_load(struct pn_planned **out, struct pn_boot *b, const char *path, int *first,
		    int *mine)
{
	struct pn_planned *pl = calloc(1, sizeof(*pl));
	int ret;

	*out = NULL;
	*first = -1;
	*mine = 0;
	if (!pl) {
		ret = pn_err(-ENOMEM, "out of memory");
		goto out;
	}
	pn_plan_model_init(&pl->model);
	pl->rank = pn_boot_rank(b);
	*mine = pn_plan_load_file(&pl->plan, &pl->model, path);
	if (!*mine)
		*mine = pn_planned_place(pl, b);
	ret = pn_boot_agree_err(b, *mine, 0, first);
	if (!ret && *first < 0) {
		*out = pl;
		pl = NULL;
	}
out:
	pn_planned_free(pl);
	return ret;
}
