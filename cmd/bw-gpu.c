/* SPDX-License-Identifier: MIT */
/*
 * penny bw --gpu: the matrices of p2pBandwidthLatencyTest / nvbandwidth
 * (every source GPU x every destination GPU of this host) from the cuda
 * plugin's bw(): unidirectional and bidirectional bandwidth (GB/s = 1e9 B/s;
 * bidirectional counts both directions) and latency (us), with copy engines
 * (cuMemcpyAsync) and/or SM copies (kernel loads and stores).  Text
 * matrices or JSON through the one output path.
 */
#define _GNU_SOURCE
#include "bw-gpu.h"

#include "gpu/gpucoll.h"
#include "base/log.h"
#include "base/util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define BW_PLUGIN "cuda"

struct kind {
	int engine, bidir, what;
};

static const char *engine_name(int e)
{
	return e == PENNY_BW_SM ? "sm" : "ce";
}

static void print_matrix(struct pn_out *o, const struct kind *k, const struct penny_bw_v1 *q,
			 int iters)
{
	int i, j, lat = k->what == PENNY_BW_LATENCY;

	pn_out_open_object(o, NULL);
	pn_out_str(o, PN_JSON, "engine", NULL, engine_name(k->engine));
	pn_out_str(o, PN_JSON, "test", NULL, lat ? "latency" : "bandwidth");
	pn_out_str(o, PN_JSON, "direction", NULL, k->bidir ? "bidirectional" : "unidirectional");
	pn_out_str(o, PN_JSON, "unit", NULL, lat ? "us" : "GB/s");
	pn_out_int(o, PN_JSON, "iters", NULL, iters);
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

int bw_gpu(struct pn_ctx *ctx, const struct bw_gpu_opts *o)
{
	struct kind kinds[8];
	struct penny_bw_v1 *q = calloc(1, sizeof(*q));
	uint64_t bytes = o->bytes ? o->bytes : 256ull << 20;
	int nk = 0, e, e0 = PENNY_BW_CE, e1 = PENNY_BW_CE, k, ret = 0, rc = 0, i;

	if (!q)
		return pn_cmd_fail(ctx, 1, "out of memory");
	if (o->engine && !strcmp(o->engine, "sm"))
		e0 = e1 = PENNY_BW_SM;
	else if (o->engine && !strcmp(o->engine, "both"))
		e1 = PENNY_BW_SM;
	else if (o->engine && strcmp(o->engine, "ce")) {
		rc = pn_cmd_fail(ctx, 2, "--gpu-engine must be ce, sm or both, not '%s'", o->engine);
		goto out;
	}
	if (bytes < 4096 || bytes > (1ull << 30)) {
		rc = pn_cmd_fail(ctx, 2, "--gpu: -s must be between 4K and 1G");
		goto out;
	}
	if (o->bidir && o->lat) {
		rc = pn_cmd_fail(ctx, 2, "--lat and -b do not go together");
		goto out;
	}
	for (e = e0; e <= e1; e++) {
		if (!o->lat)
			for (k = o->bidir; k < 2; k++)
				kinds[nk++] = (struct kind){ e, k, PENNY_BW_BANDWIDTH };
		if (!o->bidir)
			kinds[nk++] = (struct kind){ e, 0, PENNY_BW_LATENCY };
	}
	pn_out_open_object(ctx->out, NULL);
	pn_out_str(ctx->out, PN_JSON, "command", NULL, "bw");
	pn_out_str(ctx->out, PN_JSON, "mode", NULL, "gpu");
	pn_out_str(ctx->out, PN_JSON, "plugin", NULL, BW_PLUGIN);
	pn_out_uint(ctx->out, PN_JSON, "bytes", NULL, (unsigned long long)bytes);
	for (k = 0; k < nk; k++) {
		int iters = o->iters > 0 ? o->iters : kinds[k].what == PENNY_BW_LATENCY ? 100 : 10;

		memset(q, 0, sizeof(*q));
		q->bytes = bytes;
		q->iters = iters;
		q->engine = kinds[k].engine;
		q->bidir = kinds[k].bidir;
		q->what = kinds[k].what;
		ret = pn_gpucoll_bw(BW_PLUGIN, q);
		if (ret)
			break;
		if (q->ndev < 1 || q->ndev > PENNY_BW_MAX_DEV) {
			ret = pn_err(-EPROTO, "the %s plugin reported %d devices", BW_PLUGIN, q->ndev);
			break;
		}
		if (k == 0) {
			pn_out_text(ctx->out, "# penny bw --gpu: %d GPU%s (%s plugin), %llu bytes per copy, "
					      "latency: 4-byte copies / dependent loads\n",
				    q->ndev, q->ndev == 1 ? "" : "s", BW_PLUGIN, (unsigned long long)bytes);
			pn_out_open_array(ctx->out, "devices");
			for (i = 0; i < q->ndev; i++) {
				q->name[i][sizeof(q->name[i]) - 1] = 0;
				pn_out_open_object(ctx->out, NULL);
				pn_out_int(ctx->out, PN_ANY, "index", "#  GPU %lld:", i);
				pn_out_str(ctx->out, PN_ANY, "name", " %s\n", q->name[i]);
				pn_out_close_object(ctx->out);
			}
			pn_out_close_array(ctx->out);
			pn_out_open_array(ctx->out, "matrices");
		}
		print_matrix(ctx->out, &kinds[k], q, iters);
	}
	if (k > 0)
		pn_out_close_array(ctx->out);
	pn_out_close_object(ctx->out);
	if (ret) {
		/* no plugin, no driver, no GPU: the machine cannot run it (2) */
		pn_cmd_error(ctx, ret);
		rc = ret == -ENOENT || ret == -ENOEXEC || ret == -ENODEV || ret == -ENOTSUP ||
			     ret == -EINVAL ? 2 : 1;
	}
out:
	free(q);
	return rc;
}
