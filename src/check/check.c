/* SPDX-License-Identifier: MIT */
/*
 * The driver of `penny check` (check/check.h): the check names and the
 * --only/--skip lists, the run itself (the node's name, its topology and counters before the
 * first check, the checks in order, counters judged last), and under a
 * launcher the gather of every rank's results on rank 0 with the job's
 * median rule and the exit code sent back to every rank.  What the checks
 * themselves call (expectation, progress, rows) is check_row.c.
 */
#define _GNU_SOURCE
#include "check/check.h"
#include "check/check_a2a.h"
#include "check/check_ab.h"
#include "check/check_ar.h"
#include "check/check_cfg.h"
#include "check/check_diag.h"
#include "check/check_gpu.h"
#include "check/check_nccl.h"
#include "check/check_net.h"
#include "check/check_node.h"
#include "check/check_platform.h"
#include "check/check_rails.h"
#include "check/check_ranks.h"
#include "check/check_row.h"
#include "base/file.h"
#include "base/log.h"
#include "base/util.h"
#include "base/verdict.h"
#include "engine/boot.h"
#include "engine/jobparams.h"
#include "node/counters.h"
#include "node/sysfs.h"
#include "node/topo.h"
#include "node/topo_check.h"
#include "plan/plan.h"
#include "plan/plan_job.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef int (*check_fn)(struct pn_check *c);

/*
 * The checks in enum order; node: the node's own (run on the node leader
 * only).
 */
static const struct {
	const char *name;
	check_fn fn;
	int node;
} checks[PN_CHECK_COUNT] = {
	[PN_CHECK_INVENTORY] = { "inventory", pn_check_inventory, 1 },
	[PN_CHECK_PCIE] = { "pcie", pn_check_pcie, 1 },
	[PN_CHECK_COUNTERS] = { "counters", pn_check_counters, 1 },
	[PN_CHECK_NICBW] = { "nic-bw", pn_check_nicbw, 0 },
	[PN_CHECK_GPUCOPY] = { "gpu-copy", pn_check_gpucopy, 1 },
	[PN_CHECK_ALLREDUCE] = { "allreduce", pn_check_allreduce, 0 },
	[PN_CHECK_RAILS] = { "rails", pn_check_rails, 0 },
	[PN_CHECK_SETTINGS] = { "settings", pn_check_settings, 1 },
	[PN_CHECK_NCCLPATH] = { "nccl-path", pn_check_ncclpath, 1 },
	[PN_CHECK_RANKS] = { "ranks", pn_check_ranks, 0 },
	[PN_CHECK_ALLTOALL] = { "alltoall", pn_check_alltoall, 0 },
};

const char *pn_check_name(enum pn_check_id id)
{
	return (unsigned)id < PN_CHECK_COUNT ? checks[id].name : NULL;
}

int pn_check_parse_list(const char *list, unsigned *mask)
{
	const char *p = list;
	unsigned m = 0;

	for (;;) {
		size_t n = strcspn(p, ",");
		int id;

		for (id = 0; id < PN_CHECK_COUNT; id++)
			if (strlen(checks[id].name) == n && !strncmp(p, checks[id].name, n))
				break;
		if (!n)
			return pn_err(-EINVAL, "an empty check name in '%s'", list);
		if (id == PN_CHECK_COUNT)
			return pn_err(-EINVAL, "no check '%.*s' (checks: inventory, pcie, counters, "
				      "nic-bw, gpu-copy, allreduce, rails, settings, nccl-path, ranks, "
				      "alltoall)", (int)(n > 64 ? 64 : n), p);
		m |= 1u << id;
		if (!p[n])
			break;
		p += n + 1;
	}
	*mask = m;
	return 0;
}

int pn_check_select(const struct pn_check_sel *s, unsigned *mask)
{
	unsigned only = PN_CHECK_ALL, skip = 0;
	int ret;

	if (s->only && (ret = pn_check_parse_list(s->only, &only)))
		return pn_err_ctx(ret, "--only");
	if (s->skip && (ret = pn_check_parse_list(s->skip, &skip)))
		return pn_err_ctx(ret, "--skip");
	if (s->dev && (ret = pn_topo_devlist_valid(s->dev)))
		return ret;
	if (s->backend && (ret = pn_check_backends_found(s->backend)))
		return ret;
	*mask = only & ~skip;
	/* alltoall loads every node pair and needs a spine: run when asked for */
	if (!s->only && !(s->require && !pn_check_parse_list(s->require, &skip) &&
			  (skip & 1u << PN_CHECK_ALLTOALL)))
		*mask &= ~(1u << PN_CHECK_ALLTOALL);
	if (s->passive) {
		/* the checks that only read: nccl-path judges a log, never captures one */
		unsigned passive = 1u << PN_CHECK_INVENTORY | 1u << PN_CHECK_PCIE |
				   1u << PN_CHECK_COUNTERS | 1u << PN_CHECK_SETTINGS |
				   1u << PN_CHECK_RANKS | (s->nccl_log ? 1u << PN_CHECK_NCCLPATH : 0);
		int id;

		for (id = 0; s->only && id < PN_CHECK_COUNT; id++)
			if (*mask & ~passive & (1u << id))
				return pn_err(-EINVAL, "--passive and --only %s: %s %s", s->only,
					      pn_check_name(id), id == PN_CHECK_NCCLPATH
					      ? "runs NCCL without --nccl-log" : "sends traffic");
		*mask &= passive;
	}
	/* nccl-path judges --nccl-log, else a log it captures */
	if (s->nccl_log && !(*mask & (1u << PN_CHECK_NCCLPATH)))
		return pn_err(-EINVAL, "--nccl-log given, but nccl-path is not run");
	if (!*mask)
		return pn_err(-EINVAL, "no check left to run (--only, --skip%s)",
			      s->passive ? ", --passive" : "");
	return 0;
}

int pn_check_required(const struct pn_check_sel *s, const struct pn_check_cfg *cfg,
		      unsigned mask, unsigned *req)
{
	const char *list = NULL;
	unsigned m = 0;
	int ret, i;

	*req = 0;
	if (s->require && (ret = pn_check_parse_list(s->require, req)))
		return pn_err_ctx(ret, "--require");
	if (pn_check_cfg_str(cfg, "job.require", &list) > 0) {
		if ((ret = pn_check_parse_list(list, &m)))
			return pn_err_ctx(ret, "%s: job.require", s->config);
		/* a config shared by runs of some checks (--only): those that run */
		m &= mask;
	}
	for (i = 0; i < PN_CHECK_COUNT; i++)
		if ((*req & (1u << i)) && !(mask & (1u << i)))
			return pn_err(-EINVAL, "check '%s' is required but not run (--only, --skip%s)",
				      pn_check_name((enum pn_check_id)i), s->passive ? ", --passive" : "");
	*req |= m;
	return 0;
}

/* Compare p[0..n) across the job; *say: whether this rank says a failure. */
static int agree_round(struct pn_boot *b, const struct pn_job_param *p, int n, int *say)
{
	int differs = 0, ret = pn_job_params_agree(b, p, n, &differs);

	*say = ret != -EINVAL || pn_boot_rank(b) == 0 || differs;
	return ret;
}

int pn_check_agree(struct pn_boot *b, const struct pn_check *c, const char *require, int *say)
{
	struct pn_job_param p[PN_JOB_MAX_PARAMS];
	const struct pn_check_key *k;
	char list[160] = "";
	size_t nkeys, i;
	int n = 0, id, ret;

	k = pn_check_keys(&nkeys);
	for (id = 0; id < PN_CHECK_COUNT; id++)
		if (c->mask & (1u << id))
			snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s",
				 list[0] ? "," : "", pn_check_name(id));
	pn_job_param_set(&p[n++], "--only", "%s", list);
	pn_job_param_set(&p[n++], "--quick", "%s", c->quick ? "yes" : "no");
	pn_job_param_set(&p[n++], "--require", "%s", require ? require : "none");
	pn_job_param_set(&p[n++], "--timeout", "%.15g s", pn_boot_timeout(b));
	pn_job_param_set(&p[n++], "--backend", "%s", c->backends ? c->backends : "default");
	pn_job_param_set(&p[n++], "--transport", "%s", c->transport ? c->transport : "probe");
	pn_job_param_file(&p[n++], "--plan", c->plan_path);
	pn_job_param_set(&p[n++], "--nccl-log", "%s", c->nccl_log ? "given" : "none");
	ret = agree_round(b, p, n, say);
	/* then the configuration, a key per parameter, in rounds */
	for (i = 0, n = 0; !ret && i < nkeys; i++) {
		const char *v = NULL;
		double x = 0;

		if (PN_KEY_IS_NUM(&k[i]) && pn_check_cfg_num(c->cfg, k[i].key, &x) >= 0)
			pn_job_param_set(&p[n++], k[i].key, "%.17g", x);
		else if (!PN_KEY_IS_NUM(&k[i]) && pn_check_cfg_str(c->cfg, k[i].key, &v) >= 0)
			pn_job_param_set(&p[n++], k[i].key, "%s", v ? v : "none");
		if (n == PN_JOB_MAX_PARAMS || (i + 1 == nkeys && n)) {
			ret = agree_round(b, p, n, say);
			n = 0;
		}
	}
	return ret;
}

void pn_check_init(struct pn_check *c)
{
	memset(c, 0, sizeof(*c));
	c->mask = PN_CHECK_ALL;
	c->timeout = 60;
	c->nranks = 1;
	c->nnodes = 1;
	c->node_leader = 1;
	c->exe = "/proc/self/exe";
}

/* ------------------------------------------------------------ the run */

/* A 64-byte hostname (Linux's longest), or a tree's longer one, is more
 * than a row holds: cut visibly, never to 63 bytes that read as whole. */
static void node_name(struct pn_check *c)
{
	const char *id = c->node_id;
	char host[256] = "";

	if (id && *id)
		pn_check_row_name(c->node, sizeof(c->node), id);
	else if (c->topo && c->topo->host[0])
		pn_check_row_name(c->node, sizeof(c->node), c->topo->host);
	else if (!gethostname(host, sizeof(host) - 1) && host[0])
		pn_check_row_name(c->node, sizeof(c->node), host);
	else
		snprintf(c->node, sizeof(c->node), "localhost");
}

/* The topology and every port's counters before the first check. */
static int setup(struct pn_check *c)
{
	/* hwloc's read of a captured tree within its own bound and --timeout */
	struct pn_topo_cfg tc = { .timeout = fmin(c->timeout, PN_TOPO_LOAD_TIMEOUT) };
	struct pn_counters_cfg cc;
	int ret;

	if (c->plan_path) {
		/* a plan that cannot be read or is no plan is a usage error, also
		 * where no check gets to use it (rails SKIPs on a node alone);
		 * one with violations runs as given (rails says so) */
		struct pn_plan_msgs viol = { 0 };
		struct pn_plan_model own;
		struct pn_plan plan;
		char *text;
		size_t len;

		ret = pn_file_read(c->plan_path, &text, &len);
		if (ret)
			return ret == -ENOMEM ? ret : pn_err_ctx(-EINVAL, "--plan");
		pn_plan_model_init(&own);
		pn_plan_init(&plan, &own);
		ret = pn_plan_load_json(&plan, &own, NULL, text, len, &viol);
		free(text);
		pn_plan_msgs_release(&viol);
		pn_plan_release(&plan);
		pn_plan_model_release(&own);
		if (ret < 0)
			return ret == -ENOMEM ? ret : pn_err_ctx(-EINVAL, "--plan: plan '%s'",
								c->plan_path);
	}
	c->topo = calloc(1, sizeof(*c->topo));
	c->before = calloc(1, sizeof(*c->before));
	if (!c->topo || !c->before)
		return pn_err(-ENOMEM, "out of memory for the check's topology");
	ret = pn_topo_load(c->topo, &tc);
	if (ret) {
		free(c->topo);
		c->topo = NULL;
		return ret;
	}
	node_name(c);
	pn_counters_cfg_init(&cc);
	ret = pn_counters_set_init(c->before, &cc);
	if (!ret)
		ret = pn_counters_set_sample(c->before);
	return ret;
}

/* A node by its name and first rank, to sort by name. */
struct node_name {
	const char *name;
	int rank;
};

static int cmp_node_name(const void *a, const void *b)
{
	return strcmp(((const struct node_name *)a)->name, ((const struct node_name *)b)->name);
}

/*
 * The job's nodes as its rows name them (collective, every rank the same
 * answer), refused rather than judged under a wrong name: a name longer
 * than a row holds (a PENNY_NODE_ID past 63 bytes), not cut; ranks grouped
 * as one node (the same hostname and network namespace, or PENNY_NODE_ID)
 * whose kernels have different boot ids, two machines judged as one; two
 * nodes of one name (one hostname in two network namespaces, a
 * PENNY_NODE_ID that is another's hostname), whose results read as one's.
 */
#define CHECK_BOOT_ID "/proc/sys/kernel/random/boot_id"
static int node_machines(struct pn_check *c)
{
	char mine[40] = "", *all;
	struct node_name *nn;
	int r, s, k, *first, ret;

	if (!c->boot)
		return strlen(c->node_id ? c->node_id : "") < PN_VERDICT_NAME ? 0
			: pn_err(-EINVAL, "PENNY_NODE_ID '%.40s...' is %zu bytes: penny check names "
				 "a node in at most %d", c->node_id, strlen(c->node_id),
				 PN_VERDICT_NAME - 1);
	/* unreadable (not Linux, a sandbox, a --sysfs-root tree without it): not compared */
	if (pn_sys_read(mine, sizeof(mine), "%s", CHECK_BOOT_ID) < 0)
		mine[0] = 0;
	all = calloc((size_t)c->nranks, sizeof(mine));
	first = calloc((size_t)c->nnodes + 1, sizeof(int));	/* 1 + a node's first rank */
	nn = calloc((size_t)c->nnodes + 1, sizeof(*nn));
	free(c->names);
	c->names = calloc((size_t)c->nranks, PN_VERDICT_NAME);
	ret = all && first && nn && c->names ? 0 : pn_err(-ENOMEM, "out of memory");
	if (!ret)
		ret = pn_boot_allgather(c->boot, mine, all, sizeof(mine));
	/* every rank's node as its rows name it, for the details (pn_check_node_of) */
	if (!ret)
		ret = pn_boot_allgather(c->boot, c->node, c->names, PN_VERDICT_NAME);
	for (r = 0; !ret && r < c->nranks; r++)	/* as the rows hold them: UTF-8 kept */
		c->names[(size_t)r * PN_VERDICT_NAME + PN_VERDICT_NAME - 1] = 0;
	for (r = 0; !ret && r < c->nranks; r++) {
		const char *name = pn_boot_node_name(c->boot, r), *id = all + r * sizeof(mine);

		k = pn_boot_node(c->boot, r);
		if (k < 0 || k >= c->nnodes)
			continue;
		if (!first[k]) {
			first[k] = r + 1;
			nn[k] = (struct node_name){ .name = name, .rank = r };
			if (strlen(name) >= PN_VERDICT_NAME)
				ret = pn_err(-EINVAL, "rank %d's node name '%.40s...' (PENNY_NODE_ID) is "
					     "%zu bytes: penny check names a node in at most %d", r,
					     name, strlen(name), PN_VERDICT_NAME - 1);
			continue;
		}
		s = first[k] - 1;
		if (!id[0] || !all[s * sizeof(mine)] || !strncmp(all + s * sizeof(mine), id,
								  sizeof(mine)))
			continue;
		c->node_leader = 1;	/* each machine's ranks write their own files */
		ret = pn_err(-EINVAL, "ranks %d and %d run on two machines (boot ids %.8s and %.8s) "
			     "that both call themselves node '%s' (hostname and network namespace, "
			     "or PENNY_NODE_ID): give each machine its own hostname or PENNY_NODE_ID",
			     s, r, all + s * sizeof(mine), id, name);
	}
	if (!ret) {
		for (k = 0; k < c->nnodes; k++)
			nn[k].name = nn[k].name ? nn[k].name : "";
		qsort(nn, (size_t)c->nnodes, sizeof(*nn), cmp_node_name);
	}
	for (k = 1; !ret && k < c->nnodes; k++)
		if (!strcmp(nn[k - 1].name, nn[k].name))
			ret = pn_err(-EINVAL, "ranks %d and %d are on two nodes both named '%s' (one "
				     "hostname in two network namespaces, 64-byte hostnames alike "
				     "in the 63 bytes a rank's hello holds, or a PENNY_NODE_ID that "
				     "is another node's hostname): their results would read as one "
				     "node's; give each its own hostname or PENNY_NODE_ID",
				     PN_MIN(nn[k - 1].rank, nn[k].rank),
				     PN_MAX(nn[k - 1].rank, nn[k].rank), nn[k].name);
	free(all);
	free(first);
	free(nn);
	return ret;
}

/*
 * The CPUs of this node's ranks (collective): each rank's home (the CPUs
 * it had before a launcher pinned it), the union over the node.  The
 * node's own allreduce spreads its ranks over them, never onto the one
 * core its leader may be pinned to.
 */
static int node_cpus(struct pn_check *c)
{
	unsigned char *all;
	size_t i;
	int r, n, ret;

	n = pn_boot_home_cpus(c->cpus, sizeof(c->cpus));
	c->ncpus = n > 0 ? n : 0;
	if (n < 0)
		memset(c->cpus, 0, sizeof(c->cpus));
	if (!c->boot || c->nranks < 2)
		return 0;
	all = calloc((size_t)c->nranks, sizeof(c->cpus));
	if (!all)
		return pn_err(-ENOMEM, "out of memory");
	ret = pn_boot_allgather(c->boot, c->cpus, all, sizeof(c->cpus));
	for (r = 0; !ret && r < c->nranks; r++)
		if (pn_boot_node(c->boot, r) == c->node_index)
			for (i = 0; i < sizeof(c->cpus); i++)
				c->cpus[i] |= all[(size_t)r * sizeof(c->cpus) + i];
	free(all);
	for (c->ncpus = 0, i = 0; i < sizeof(c->cpus) * 8; i++)
		c->ncpus += (c->cpus[i / 8] >> (i % 8)) & 1;
	return ret;
}

int pn_check_run_one(struct pn_check *c, int id)
{
	int ret = 0;

	if (!(c->mask & (1u << id)))
		return 0;
	if (c->node_leader || !checks[id].node) {
		pn_check_progress(c, checks[id].name, "running");
		pn_err_clear();	/* no message of an earlier check's failure */
		ret = checks[id].fn(c);
	}
	if (c->boot)
		ret = pn_boot_agree_err(c->boot, ret, 1, NULL);
	return ret;
}

static struct pn_verdict_val val_of(const struct pn_verdict_kept_val *k)
{
	if (k->kind == PN_VAL_NUM)
		return PN_VNUM(k->num);
	if (k->kind == PN_VAL_TEXT)
		return PN_VTEXT(k->text);
	return (struct pn_verdict_val){ .kind = PN_VAL_NONE };
}

/* Add a kept result of another rank (a second one of a target is renamed). */
static void add_kept(struct pn_verdict_list *l, const struct pn_verdict_result *r, int rank)
{
	char target[PN_VERDICT_NAME + 16];
	struct pn_verdict_in in = {
		.check = r->check, .node = r->node, .target = r->target, .verdict = r->verdict,
		.measured = val_of(&r->measured), .expected = val_of(&r->expected),
		.unit = r->unit, .source = r->source, .detail = r->detail, .seconds = r->seconds,
	};

	if (pn_verdict_add(l, &in) != -EEXIST)
		return;
	snprintf(target, sizeof(target), "%s@rank%d", r->target, rank);
	in.target = target;
	pn_verdict_add(l, &in);
}

/* What each rank tells rank 0 first. */
struct gather_hdr {
	int32_t n;			/* kept results */
	int32_t dropped[PN_VERDICT_COUNT]; /* counted, not kept, per verdict */
};

/* Bytes of results in one allgather (below the rendezvous' frame limit). */
#define GATHER_BUDGET (8u << 20)

/*
 * Every rank's results to rank 0.  The rendezvous has only allgather (and
 * bcast): first the counts, then the results in rounds of k per rank,
 * padded to k, with k chosen so that one round of every rank's results
 * stays within GATHER_BUDGET whatever the job size.  Every rank receives
 * every round (allgather's cost); only rank 0 keeps them.
 */
static int gather(struct pn_check *c)
{
	const size_t rsz = sizeof(struct pn_verdict_result);
	struct gather_hdr mine, *hdr;
	struct pn_verdict_result *send = NULL, *all = NULL;
	int n = pn_verdict_n(c->results), maxn = 0, r, i, v, off, k, ret;

	memset(&mine, 0, sizeof(mine));
	mine.n = n;
	for (v = 0; v < PN_VERDICT_COUNT; v++)
		mine.dropped[v] = pn_verdict_count(c->results, v);
	for (i = 0; i < n; i++)
		mine.dropped[pn_verdict_at(c->results, i)->verdict]--;
	hdr = calloc((size_t)c->nranks, sizeof(*hdr));
	if (!hdr)
		return pn_err(-ENOMEM, "out of memory for the job's results");
	ret = pn_boot_allgather(c->boot, &mine, hdr, sizeof(mine));
	if (ret)
		goto out;
	for (r = 0; r < c->nranks; r++) {
		if (hdr[r].n < 0 || hdr[r].n > PN_VERDICT_MAX) {
			ret = pn_err(-EPROTO, "rank %d sent %d check results", r, (int)hdr[r].n);
			goto out;
		}
		if (hdr[r].n > maxn)
			maxn = hdr[r].n;
		if (c->rank == 0 && r != 0)
			for (v = 0; v < PN_VERDICT_COUNT; v++)
				pn_verdict_add_dropped(c->results, v, hdr[r].dropped[v]);
	}
	k = (int)(GATHER_BUDGET / ((size_t)c->nranks * rsz));
	if (k < 1)
		k = 1;
	if (k > maxn)
		k = maxn;
	if (k) {
		send = calloc((size_t)k, rsz);
		all = calloc((size_t)k * (size_t)c->nranks, rsz);
		if (!send || !all) {
			ret = pn_err(-ENOMEM, "out of memory for the job's results");
			goto out;
		}
	}
	for (off = 0; off < maxn; off += k) {
		memset(send, 0, (size_t)k * rsz);
		for (i = 0; i < k && off + i < n; i++)
			send[i] = *pn_verdict_at(c->results, off + i);
		ret = pn_boot_allgather(c->boot, send, all, (size_t)k * rsz);
		if (ret)
			goto out;
		if (c->rank != 0)
			continue;
		for (r = 1; r < c->nranks; r++)
			for (i = 0; i < k && off + i < hdr[r].n; i++) {
				struct pn_verdict_result *x = &all[(size_t)r * (size_t)k + (size_t)i];

				/* strings of another process: terminate them */
				x->check[sizeof(x->check) - 1] = x->node[sizeof(x->node) - 1] = 0;
				x->target[sizeof(x->target) - 1] = x->unit[sizeof(x->unit) - 1] = 0;
				x->source[sizeof(x->source) - 1] = x->detail[sizeof(x->detail) - 1] = 0;
				x->measured.text[PN_VERDICT_VAL - 1] = 0;
				x->expected.text[PN_VERDICT_VAL - 1] = 0;
				add_kept(c->results, x, r);
			}
	}
out:
	free(hdr);
	free(send);
	free(all);
	return ret;
}

static int is_job_check(const char *check)
{
	return !strcmp(check, "nic-bw") || !strcmp(check, "gpu-copy") ||
	       !strcmp(check, "allreduce");
}

/* Two targets of one kind: equal with their digits left out ("mlx5_0/1" and
 * "mlx5_3/1", "GPU0:h2d" and "GPU7:h2d"; not "GPU0:h2d" and "GPU0-GPU1"). */
static int same_kind(const char *a, const char *b)
{
	for (;;) {
		while (*a >= '0' && *a <= '9')
			a++;
		while (*b >= '0' && *b <= '9')
			b++;
		if (*a != *b)
			return 0;
		if (!*a)
			return 1;
		a++, b++;
	}
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int pn_check_job_median(struct pn_verdict_list *l, double margin)
{
	int n = pn_verdict_n(l), i, j, m, failed = 0;
	char *done = calloc((size_t)n + 1, 1);
	double *vals = calloc((size_t)n + 1, sizeof(double));
	int *idx = calloc((size_t)n + 1, sizeof(int));

	if (!done || !vals || !idx)
		goto out;
	for (i = 0; i < n; i++) {
		const struct pn_verdict_result *a = pn_verdict_at(l, i), *b;
		double med;

		if (done[i] || !is_job_check(a->check) || a->measured.kind != PN_VAL_NUM ||
		    a->expected.kind != PN_VAL_NUM)
			continue;
		m = 0;
		for (j = i; j < n; j++) {
			b = pn_verdict_at(l, j);
			if (done[j] || strcmp(a->check, b->check) || strcmp(a->unit, b->unit) ||
			    !same_kind(a->target, b->target) || b->measured.kind != PN_VAL_NUM || b->expected.kind != PN_VAL_NUM ||
			    b->expected.num != a->expected.num)
				continue;
			done[j] = 1;
			idx[m] = j;
			vals[m++] = b->measured.num;
		}
		if (m < 2)
			continue;
		qsort(vals, (size_t)m, sizeof(double), cmp_double);
		med = m % 2 ? vals[m / 2] : (vals[m / 2 - 1] + vals[m / 2]) / 2;
		for (j = 0; j < m; j++) {
			char src[64], det[160];

			b = pn_verdict_at(l, idx[j]);
			if (b->verdict != PN_PASS || !(b->measured.num < med * (1 - margin)))
				continue;
			snprintf(src, sizeof(src), "job median of %d", m);
			snprintf(det, sizeof(det),
				 "%.1f%% below the job's median %.6g %s (margin %g%%)",
				 med > 0 ? 100 * (med - b->measured.num) / med : 0, med, b->unit,
				 margin * 100);
			if (!pn_verdict_set(l, idx[j], PN_FAIL, src, det))
				failed++;
		}
	}
out:
	free(done);
	free(vals);
	free(idx);
	return failed;
}

int pn_check_require(struct pn_verdict_list *l, unsigned require, const char *node)
{
	char why[PN_VERDICT_DETAIL];
	int id, i, n = 0, seen, ret;

	for (id = 0; id < PN_CHECK_COUNT; id++) {
		const char *name = pn_check_name((enum pn_check_id)id);

		if (!(require & (1u << id)))
			continue;
		for (i = seen = 0; i < pn_verdict_n(l); i++) {
			const struct pn_verdict_result *r = pn_verdict_at(l, i);

			if (strcmp(r->check, name))
				continue;
			seen++;
			if (r->verdict != PN_SKIP)
				continue;
			snprintf(why, sizeof(why), "required, but skipped: %s", r->detail);
			pn_verdict_set(l, i, PN_FAIL, "--require", why);
			n++;
		}
		if (seen)
			continue;
		ret = pn_verdict_add(l, &(struct pn_verdict_in){
			.check = name, .node = node, .target = "-", .verdict = PN_FAIL,
			.source = "--require", .detail = "required, but it gave no result" });
		if (ret == -ENOMEM)
			return ret;
		n++;
	}
	return n;
}

/* Rank 0: the job's rules; then every rank learns the exit code. */
static int finish(struct pn_check *c)
{
	int32_t code = 0;
	double margin;
	int ret;

	if (c->boot) {
		ret = gather(c);
		if (ret)
			return ret;
	}
	if (c->rank == 0) {
		pn_check_cfg_num(c->cfg, "job.median-margin", &margin);
		/* a job's rule: a node alone has no median to fall below */
		if (c->nnodes > 1)
			pn_check_job_median(c->results, margin);
		/* out of memory, a required check's FAIL is counted all the same */
		pn_check_require(c->results, c->require, c->node);
		if (pn_check_diag_verdict(c) == -ENOMEM)
			return -ENOMEM;
		code = pn_verdict_exit_code(c->results);
	}
	if (c->boot) {
		ret = pn_boot_bcast(c->boot, &code, sizeof(code), 0);
		if (ret)
			return ret;
	}
	c->exit_code = code;
	return 0;
}

int pn_check_run(struct pn_check *c)
{
	static const int order[] = { PN_CHECK_INVENTORY, PN_CHECK_PCIE, PN_CHECK_SETTINGS,
				     PN_CHECK_NCCLPATH, PN_CHECK_RANKS, PN_CHECK_NICBW,
				     PN_CHECK_GPUCOPY, PN_CHECK_ALLREDUCE, PN_CHECK_RAILS,
				     PN_CHECK_ALLTOALL, PN_CHECK_COUNTERS };
	double window = 0, timeout;
	size_t i;
	uint32_t need;
	int id;
	int ret;

	if (!c->cfg)
		return pn_err(-EINVAL, "penny check run without a configuration");
	c->exit_code = 2;
	c->results = pn_verdict_list_new();
	if (!c->results)
		return -ENOMEM;
	if (c->boot) {
		c->rank = pn_boot_rank(c->boot);
		c->nranks = pn_boot_nranks(c->boot);
		c->node_index = pn_boot_node(c->boot, c->rank);
		c->nnodes = pn_boot_nnodes(c->boot);
		c->node_leader = pn_boot_local_rank(c->boot) == 0;
	}
	pn_check_cfg_num(c->cfg, "counters.window", &window);
	ret = 0;
	/* every wait honours --timeout: the window too, on a node alone as in a job */
	timeout = c->boot ? pn_boot_timeout(c->boot) : c->timeout;
	if ((c->mask & (1u << PN_CHECK_COUNTERS)) && window >= timeout)
		ret = pn_err(-EINVAL, "counters.window %g s is not shorter than --timeout %g s: raise "
			     "--timeout or shorten the window", window, timeout);
	if (!ret)
		ret = setup(c);
	if (c->boot)
		ret = pn_boot_agree_err(c->boot, ret, 1, NULL);
	if (!ret)
		ret = node_machines(c);
	if (!ret)
		ret = node_cpus(c);
	if (ret)
		return ret;
	for (i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
		ret = pn_check_run_one(c, order[i]);
		if (ret)
			return ret;
	}
	/* a missed allreduce: the measurements the decision table calls for,
	 * run on the node leaders while the others wait: every wait from here
	 * on covers the longest such step (pn_check_diag_bound), where one
	 * can run (an allreduce to diagnose, NCCL's log of the job) */
	if (c->boot && (c->mask & (1u << PN_CHECK_ALLREDUCE | 1u << PN_CHECK_NCCLPATH)))
		pn_boot_set_extra(c->boot, pn_check_diag_bound(c));
	ret = pn_check_diag_need(c, &need);
	for (id = 0; !ret && id < PN_CHECK_COUNT; id++) {
		if (!(need & (1u << id)))
			continue;
		pn_check_progress(c, "diagnosis", "the allreduce missed: running %s",
				  pn_check_name((enum pn_check_id)id));
		c->mask |= 1u << id;
		ret = pn_check_run_one(c, id);
	}
	/* the job's missed allreduce on nccl: the A/B of its NIC choice; NCCL's
	 * paths across nodes: both from fresh ranks */
	if (!ret && c->boot)
		ret = pn_boot_agree_err(c->boot, pn_check_rail_ab(c), 1, NULL);
	if (!ret && c->boot)
		ret = pn_boot_agree_err(c->boot, pn_check_ncclpath_job(c), 1, NULL);
	if (c->boot)
		pn_boot_set_extra(c->boot, 0);
	if (ret)
		return ret;
	return finish(c);
}

void pn_check_release(struct pn_check *c)
{
	if (c->topo) {
		pn_topo_release(c->topo);
		free(c->topo);
		c->topo = NULL;
	}
	if (c->before) {
		pn_counters_set_release(c->before);
		free(c->before);
		c->before = NULL;
	}
	pn_verdict_list_free(c->results);
	c->results = NULL;
	free(c->nccl_text);
	c->nccl_text = NULL;
	free(c->names);
	c->names = NULL;
}
