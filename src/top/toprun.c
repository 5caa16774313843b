/* SPDX-License-Identifier: MIT */
/*
 * top's live run, opened and closed in one order (toprun.h).
 */
#include "top/sampler.h"
#include "top/toprun.h"

#include "base/log.h"
#include "base/util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

/* Counter files stay open between samples: make room for 16 NICs' worth. */
static void raise_fd_limit(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl))
		return;
	if (rl.rlim_cur < 16384 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max < 16384 ? rl.rlim_max : 16384;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

/* The remote ports and the local port that sends their MADs. */
static int open_remote(struct pn_toprun *r, const struct pn_toprun_cfg *cfg)
{
	int ret = pn_counters_remote_parse(cfg->lids, &r->remote, &r->nremote);

	if (ret)
		return ret;
	if (cfg->ca && !r->nremote)
		return pn_err(-EINVAL, "--ca is for --lid");
	return r->nremote ? pn_perfquery_open_arg(&r->pq, cfg->ca) : 0;
}

static int start(struct pn_toprun *r, const struct pn_toprun_cfg *cfg)
{
	struct pn_counters_cfg cc;
	struct pn_counters_set set;
	int ret;

	pn_counters_cfg_init(&cc);
	cc.ethernet = cfg->ethernet;
	cc.remote = r->remote;
	cc.nremote = r->nremote;
	cc.pq = r->pq;
	cc.brief = cfg->brief;
	pn_counters_set_init(&set, &cc);
	ret = pn_sampler_start(&r->sampler, &set, cfg->interval, cfg->first);
	if (ret)
		pn_counters_set_release(&set);
	return ret;
}

int pn_toprun_open(struct pn_toprun *r, const struct pn_toprun_cfg *cfg)
{
	int ret = 0;

	memset(r, 0, sizeof(*r));
	if (cfg->record)
		ret = pn_record_open(&r->rec, cfg->record, cfg->record_max);
	if (!ret && cfg->plot && pn_replay_new(&r->plot))
		ret = pn_err(-ENOMEM, "out of memory");
	if (!ret)
		ret = open_remote(r, cfg);
	if (ret)
		return ret;
	raise_fd_limit();
	/* where each NIC sits (NUMA, rail, GPUs): read once, before sampling;
	 * context only, so a tree that stalls hwloc (a FIFO) costs 1 s, not 5 */
	ret = pn_nodectx_load(&r->nodectx, &(struct pn_topo_cfg){ .no_nvml = 1, .timeout = 1.0 });
	if (!ret)
		ret = pn_gputraffic_open(&r->gpus);
	return ret ? ret : start(r, cfg);
}

int pn_toprun_extra(struct pn_toprun *r, int procs)
{
	pn_gputraffic_sample(&r->gpus, pn_now_ns());
	return procs ? pn_toprun_procs(r) : 0;
}

int pn_toprun_procs(struct pn_toprun *r)
{
	pn_rdmares_release(&r->procs);
	return pn_rdmares_read(&r->procs, PN_TOPRUN_PROCS_TIMEOUT);
}

int pn_toprun_stop(struct pn_toprun *r)
{
	int ret = 0;

	pn_counters_set_release(&r->view);
	if (r->sampler && pn_sampler_stop(r->sampler, 1.0))
		ret = -ETIMEDOUT;
	r->sampler = NULL;
	return ret;
}

void pn_toprun_close(struct pn_toprun *r)
{
	pn_gputraffic_close(&r->gpus);
	pn_rdmares_release(&r->procs);
	pn_record_close(r->rec);
	pn_replay_close(r->plot);
	pn_nodectx_release(&r->nodectx);
	pn_perfquery_close(r->pq);
	free(r->remote);
	memset(r, 0, sizeof(*r));
}
