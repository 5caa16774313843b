/* SPDX-License-Identifier: MIT */
/*
 * penny bw --gpu (see bwgpu.h): the matrices asked for, measured through
 * the cuda plugin's bw().  Nothing here prints.
 */
#define _GNU_SOURCE
#include "harness/bwgpu.h"

#include "base/log.h"
#include "gpu/gpucoll.h"

#include <errno.h>
#include <string.h>

int pn_bwgpu_plan(const struct pn_bwgpu_cfg *o, struct pn_bwgpu_result *res)
{
	uint64_t bytes = o->bytes ? o->bytes : 256ull << 20;
	int nk = 0, e, e0 = PENNY_BW_CE, e1 = PENNY_BW_CE, k;

	memset(res, 0, sizeof(*res));
	res->bytes = bytes;
	if (o->engine && !strcmp(o->engine, "sm"))
		e0 = e1 = PENNY_BW_SM;
	else if (o->engine && !strcmp(o->engine, "both"))
		e1 = PENNY_BW_SM;
	else if (o->engine && strcmp(o->engine, "ce"))
		return pn_err(-EINVAL, "--gpu-engine must be ce, sm or both, not '%s'", o->engine);
	if (bytes < 4096 || bytes > (1ull << 30))
		return pn_err(-EINVAL, "--gpu: -s must be between 4K and 1G");
	if (o->bidir && o->lat)
		return pn_err(-EINVAL, "--lat and -b do not go together");
	for (e = e0; e <= e1; e++) {
		if (!o->lat)
			for (k = o->bidir; k < 2; k++)
				res->m[nk++] = (struct pn_bwgpu_matrix){ .engine = e, .bidir = k,
									 .what = PENNY_BW_BANDWIDTH };
		if (!o->bidir)
			res->m[nk++] = (struct pn_bwgpu_matrix){ .engine = e, .what = PENNY_BW_LATENCY };
	}
	for (k = 0; k < nk; k++)
		res->m[k].iters = o->iters > 0 ? o->iters
				  : res->m[k].what == PENNY_BW_LATENCY ? 100 : 10;
	res->nplanned = nk;
	return 0;
}

int pn_bwgpu_run(struct pn_bwgpu_result *res)
{
	int k, ret = 0;

	for (k = 0; k < res->nplanned; k++) {
		struct pn_bwgpu_matrix *m = &res->m[k];
		struct penny_bw_v1 *q = &m->q;
		int i;

		q->bytes = res->bytes;
		q->iters = m->iters;
		q->engine = m->engine;
		q->bidir = m->bidir;
		q->what = m->what;
		ret = pn_gpucoll_bw(PN_BWGPU_PLUGIN, q);
		if (ret)
			break;
		if (q->ndev < 1 || q->ndev > PENNY_BW_MAX_DEV) {
			ret = pn_err(-EPROTO, "the %s plugin reported %d devices", PN_BWGPU_PLUGIN,
				     q->ndev);
			break;
		}
		for (i = 0; i < q->ndev; i++)
			q->name[i][sizeof(q->name[i]) - 1] = 0;
		res->n = k + 1;
	}
	return ret;
}
