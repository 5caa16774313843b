/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
#include "plan/plan_job.h"
#include "base/file.h"
#include "base/log.h"
#include "base/minijson.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int pn_plan_load_json(struct pn_plan *p, struct pn_plan_model *own, struct pn_plan_model *model,
		      const char *text, size_t len, struct pn_plan_msgs *viol)
{
	int ret = pn_plan_read_json(p, own, model, text, len);

	return ret ? ret : pn_plan_validate(p, viol);
}

int pn_plan_load_file(struct pn_plan *p, struct pn_plan_model *own, const char *path)
{
	struct pn_plan_msgs viol = { 0 };
	char *text = NULL;
	size_t len = 0;
	int ret, n;

	pn_plan_init(p, own);
	ret = pn_file_read(path, &text, &len);
	if (ret)
		return ret == -ENOMEM ? ret : -EINVAL; /* "cannot open 'F': ..." */
	ret = pn_plan_load_json(p, own, NULL, text, len, &viol);
	free(text);
	if (ret < 0) {
		pn_plan_msgs_release(&viol);
		return ret == -ENOMEM ? ret : pn_err_ctx(-EINVAL, "plan '%s'", path);
	}
	n = viol.n + viol.dropped;
	if (n)
		ret = pn_err(-EINVAL, "plan '%s' fails validation: %s (%d violation%s; see penny "
				      "ring-plan --check)",
			     path, viol.n ? viol.v[0] : "?", n, n == 1 ? "" : "s");
	else
		ret = 0;
	pn_plan_msgs_release(&viol);
	return ret;
}

void pn_plan_job_release(struct pn_plan_job *j)
{
	int r;

	for (r = 0; j->rings && r < j->nrings; r++)
		free(j->rings[r]);
	free(j->rings);
	free(j->plan_node);
	free(j->rank_node);
	free(j->rank_gpu);
	free(j->pos);
	free(j->seg);
	free(j->rail);
	memset(j, 0, sizeof(*j));
}

/* Job node n -> plan node: by name when the plan names every node once, else by position. */
static int match_nodes(struct pn_plan_job *j, const struct pn_plan_model *m,
		       const char *const *names)
{
	int n, q, hits = 0, unique = names != NULL;

	for (n = 0; unique && n < j->nnodes; n++) {
		if (!names[n] || !names[n][0])
			unique = 0;
		for (q = 0; unique && q < n; q++)
			if (!strcmp(names[q], names[n]))
				unique = 0;
	}
	for (n = 0; n < j->nnodes; n++)
		j->plan_node[n] = -1;
	for (n = 0; unique && n < j->nnodes; n++) {
		q = pn_plan_model_find_host(m, names[n]);
		if (q >= 0) {
			j->plan_node[n] = q;
			hits++;
		}
	}
	if (hits == j->nnodes) {
		j->by_name = 1;
		return 0;
	}
	if (hits) {
		for (n = 0; j->plan_node[n] >= 0; n++)
			;
		for (q = 0; q < m->nnodes; q++) {
			int k;

			for (k = 0; k < j->nnodes && j->plan_node[k] != q; k++)
				;
			if (k == j->nnodes)
				break;
		}
		return pn_err(-EINVAL, "the plan's hosts name only %d of the job's %d nodes (plan "
				       "node '%s' is not in the job, job node '%s' not in the plan)",
			      hits, j->nnodes, m->nodes[q].host, names[n]);
	}
	for (n = 0; n < j->nnodes; n++)
		j->plan_node[n] = n;
	return 0;
}

int pn_plan_job_map(struct pn_plan_job *j, const struct pn_plan *p, int nranks, const int *node,
		    int nnodes, const char *const *names)
{
	const struct pn_plan_model *m = p->model;
	int *inv = NULL, *cnt = NULL, n, r, i, k, ret;

	memset(j, 0, sizeof(*j));
	j->plan = p;
	j->nranks = nranks;
	j->nnodes = nnodes;
	if (m->nnodes != nnodes)
		return pn_err(-EINVAL, "the plan is for %d node%s, the job runs on %d", m->nnodes,
			      PN_PLAN_S(m->nnodes), nnodes);
	if (m->nranks != nranks)
		return pn_err(-EINVAL, "the plan is for %d rank%s, the job has %d", m->nranks,
			      PN_PLAN_S(m->nranks), nranks);
	j->plan_node = calloc((size_t)nnodes, sizeof(int));
	j->rank_node = calloc((size_t)nranks, sizeof(int));
	j->rank_gpu = calloc((size_t)nranks, sizeof(int));
	j->rings = calloc((size_t)p->nrings, sizeof(*j->rings));
	j->pos = calloc((size_t)p->nrings * (size_t)nranks, sizeof(int));
	j->seg = calloc((size_t)p->nrings * (size_t)nnodes, sizeof(int));
	j->rail = calloc((size_t)p->nrings, sizeof(int));
	inv = malloc(sizeof(int) * (size_t)nranks);
	cnt = calloc((size_t)nnodes, sizeof(int));
	if (!j->plan_node || !j->rank_node || !j->rank_gpu || !j->rings || !j->pos || !j->seg ||
	    !j->rail || !inv || !cnt) {
		ret = pn_err(-ENOMEM, "out of memory");
		goto out;
	}
	j->nrings = p->nrings;
	ret = match_nodes(j, m, names);
	if (ret)
		goto out;
	for (r = 0; r < nranks; r++) {
		if (node[r] < 0 || node[r] >= nnodes) {
			ret = pn_err(-EINVAL, "rank %d has node %d of %d", r, node[r], nnodes);
			goto out;
		}
		j->rank_node[r] = node[r];
		j->rank_gpu[r] = cnt[node[r]]++;
	}
	for (n = 0; n < nnodes; n++) {
		const struct pn_plan_node *pn = &m->nodes[j->plan_node[n]];
		int ng = m->layouts[pn->layout].ngpus;

		if (cnt[n] != ng) {
			ret = pn_err(-EINVAL, "plan node '%s' has %d GPU%s, the job's node %d%s%s%s has "
					      "%d rank%s",
				     pn->host, ng, ng == 1 ? "" : "s", n, names && names[n] ? " (" : "",
				     names && names[n] ? names[n] : "", names && names[n] ? ")" : "",
				     cnt[n], cnt[n] == 1 ? "" : "s");
			goto out;
		}
	}
	/* plan rank (rank0 + GPU position) -> job rank */
	for (r = 0; r < nranks; r++)
		inv[m->nodes[j->plan_node[node[r]]].rank0 + j->rank_gpu[r]] = r;
	for (k = 0; k < p->nrings; k++) {
		const struct pn_plan_ring *ring = &p->rings[k];
		int *pos = j->pos + (size_t)k * (size_t)nranks, np = 0;

		j->rings[k] = malloc(sizeof(int) * (size_t)nranks);
		if (!j->rings[k]) {
			ret = pn_err(-ENOMEM, "out of memory");
			goto out;
		}
		for (r = 0; r < nranks; r++)
			pos[r] = -1;
		for (n = 0; n < nnodes; n++)
			j->seg[(size_t)k * (size_t)nnodes + (size_t)n] = -1;
		j->rail[k] = -1;
		for (i = 0; i < ring->nseg; i++) {
			const struct pn_plan_seg *s = &ring->seg[i];
			const struct pn_plan_layout *l = &m->layouts[m->nodes[s->node].layout];
			int g;

			j->seg[(size_t)k * (size_t)nnodes + (size_t)s->node] = i;
			if (j->rail[k] < 0 && nnodes > 1 && s->out_nic >= 0)
				j->rail[k] = l->nics[s->out_nic].rail;
			for (g = 0; g < s->n; g++) {
				int q = inv[m->nodes[s->node].rank0 + ring->gpus[s->off + g]];

				if (np == nranks || pos[q] >= 0) {
					ret = pn_err(-EINVAL, "plan ring %d visits rank %d twice", k, q);
					goto out;
				}
				pos[q] = np;
				j->rings[k][np++] = q;
			}
		}
		if (np != nranks) {
			ret = pn_err(-EINVAL, "plan ring %d visits %d of %d ranks", k, np, nranks);
			goto out;
		}
	}
	ret = 0;
out:
	free(inv);
	free(cnt);
	if (ret)
		pn_plan_job_release(j);
	return ret;
}

static void nic_spec(const struct pn_plan_nic *nic, char *out, size_t len)
{
	snprintf(out, len, "%s:%d", nic->device[0] ? nic->device : nic->name,
		 nic->port > 0 ? nic->port : 1);
}

int pn_plan_job_nic(const struct pn_plan_job *j, int rank, int peer, int ring, char *out,
		    size_t len)
{
	const struct pn_plan *p = j->plan;
	const struct pn_plan_model *m = p->model;
	int n = j->rank_node[rank], pnode = j->plan_node[n], N = j->nranks, i, next, prev, si;
	int send = -1, recv = -1, nic;
	const struct pn_plan_layout *l = &m->layouts[m->nodes[pnode].layout];
	const struct pn_plan_seg *s;

	out[0] = 0;
	if (j->rank_node[peer] == n || ring < 0 || ring >= j->nrings)
		return 0;
	i = j->pos[(size_t)ring * (size_t)N + (size_t)rank];
	next = j->rings[ring][(i + 1) % N];
	prev = j->rings[ring][(i + N - 1) % N];
	si = j->seg[(size_t)ring * (size_t)j->nnodes + (size_t)pnode];
	if (si < 0)
		return pn_err(-EINVAL, "plan ring %d does not pass %s", ring, m->nodes[pnode].host);
	s = &p->rings[ring].seg[si];
	if (peer == next)
		send = s->out_nic;
	if (peer == prev)
		recv = s->in_nic;
	if (send >= 0 && recv >= 0 && send != recv)
		return pn_err(-EINVAL, "plan ring %d: ranks %d and %d are each other's both neighbours, "
				       "and one connection cannot use both %s and %s",
			      ring, rank, peer, l->nics[send].name, l->nics[recv].name);
	nic = send >= 0 ? send : recv;
	if (nic < 0 && (peer == next || peer == prev))
		return pn_err(-EINVAL, "plan ring %d: %s has no %s NIC", ring, m->nodes[pnode].host,
			      peer == next ? "send" : "receive");
	if (nic < 0)
		nic = j->rail[ring] >= 0 ? pn_plan_layout_nic_on_rail(l, j->rail[ring]) : -1;
	if (nic < 0)
		return pn_err(-EINVAL, "plan ring %d: %s has no NIC on rail %d", ring,
			      m->nodes[pnode].host, j->rail[ring]);
	nic_spec(&l->nics[nic], out, len);
	return 1;
}
