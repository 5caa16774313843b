/* SPDX-License-Identifier: MIT */
/*
 * penny bw --gpu: presents the GPU-to-GPU matrices that
 * src/harness/bwgpu.c measures, as text matrices or JSON through the one
 * output path.
 */
#define _GNU_SOURCE
#include "bw-gpu.h"

#include "base/log.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static const char *engine_name(int e)
{
	return e == PENNY_BW_SM ? "sm" : "ce";
}

static void print_matrix(struct pn_out *o, const struct pn_bwgpu_matrix *k)
{
	const struct penny_bw_v1 *q = &k->q;
	int i, j, lat = k->what == PENNY_BW_LATENCY;

	pn_out_open_object(o, NULL);
	pn_out_str(o, PN_JSON, "engine", NULL, engine_name(k->engine));
	pn_out_str(o, PN_JSON, "test", NULL, lat ? "latency" : "bandwidth");
	pn_out_str(o, PN_JSON, "direction", NULL, k->bidir ? "bidirectional" : "unidirectional");
	pn_out_str(o, PN_JSON, "unit", NULL, lat ? "us" : "GB/s");
	pn_out_int(o, PN_JSON, "iters", NULL, k->iters);
	if (lat)
		pn_out_text(o, "\n# %s latency (us), %s\n", k->engine == PENNY_BW_SM ?
			    "SM dependent loads of the peer's memory" : "copy engine, 4-byte copy",
			    "source row, destination column");
	else
		pn_out_text(o, "\n# %s, %s bandwidth (GB/s)%s\n", k->engine == PENNY_BW_SM ?
			    "SM copy (kernel stores to the destination)" : "copy engine (cuMemcpyAsync)",
			    k->bidir ? "bidirectional" : "unidirectional",
			    k->bidir ? ", both directions at once, summed" : "");
	pn_out_text(o, "%8s", "src\\dst");
	for (j = 0; j < q->ndev; j++)
		pn_out_text(o, " %8d", j);
	pn_out_text(o, "\n");
	pn_out_open_array(o, "values");
	for (i = 0; i < q->ndev; i++) {
		pn_out_text(o, "%8d", i);
		pn_out_open_array(o, NULL);
		for (j = 0; j < q->ndev; j++)
			pn_out_float(o, PN_ANY, NULL, " %8.2f", q->value[i * q->ndev + j]);
		pn_out_close_array(o);
		pn_out_text(o, "\n");
	}
	pn_out_close_array(o);
	pn_out_close_object(o);
}

int bw_gpu(struct pn_ctx *ctx, const struct pn_bwgpu_cfg *cfg)
{
	struct pn_bwgpu_result *res = calloc(1, sizeof(*res));
	struct pn_out *o = ctx->out;
	int ret, k, i, rc = 0;

	if (!res)
		return pn_cmd_fail(ctx, 1, "out of memory");
	ret = pn_bwgpu_plan(cfg, res);
	if (ret) {
		rc = pn_cmd_fail(ctx, 2, "%s", pn_errmsg(ret));
		goto out;
	}
	ret = pn_bwgpu_run(res);
	pn_out_open_object(o, NULL);
	pn_out_str(o, PN_JSON, "command", NULL, "bw");
	pn_out_str(o, PN_JSON, "mode", NULL, "gpu");
	pn_out_str(o, PN_JSON, "plugin", NULL, PN_BWGPU_PLUGIN);
	pn_out_uint(o, PN_JSON, "bytes", NULL, (unsigned long long)res->bytes);
	for (k = 0; k < res->n; k++) {
		const struct penny_bw_v1 *q = &res->m[k].q;

		if (k == 0) {
			pn_out_text(o, "# penny bw --gpu: %d GPU%s (%s plugin), %llu bytes per copy, "
				       "latency: 4-byte copies / dependent loads\n",
				    q->ndev, q->ndev == 1 ? "" : "s", PN_BWGPU_PLUGIN,
				    (unsigned long long)res->bytes);
			pn_out_open_array(o, "devices");
			for (i = 0; i < q->ndev; i++) {
				pn_out_open_object(o, NULL);
				pn_out_int(o, PN_ANY, "index", "#  GPU %lld:", i);
				pn_out_str(o, PN_ANY, "name", " %s\n", q->name[i]);
				pn_out_close_object(o);
			}
			pn_out_close_array(o);
			pn_out_open_array(o, "matrices");
		}
		print_matrix(o, &res->m[k]);
	}
	if (k > 0)
		pn_out_close_array(o);
	/* --json: a run cut short ends its document, with why */
	ret ? pn_out_end_error(o, pn_errmsg(ret)) : pn_out_close_object(o);
	if (ret) {
		/* no plugin, no driver, no GPU: the machine cannot run it (2) */
		pn_cmd_error(ctx, ret);
		rc = ret == -ENOENT || ret == -ENOEXEC || ret == -ENODEV || ret == -ENOTSUP ||
			     ret == -EINVAL ? 2 : 1;
	}
out:
	free(res);
	return rc;
}
