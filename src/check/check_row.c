/* SPDX-License-Identifier: MIT */
/*
 * What every check of `penny check` uses (check_row.h): the expectation
 * rule (config > baseline > topology), the progress line, adding a result
 * row, whether --dev selects a port and whether --backend's plugins are
 * installed.  The checks call these and the driver (check.c) calls the
 * checks, so they live apart from the driver.
 */
#define _GNU_SOURCE
#include "check/check_row.h"
#include "check/check_base.h"
#include "check/check_cfg.h"
#include "base/log.h"
#include "base/verdict.h"
#include "engine/boot.h"
#include "gpu/plugin.h"
#include "node/topo.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

double pn_check_expect(const struct pn_check *c, const char *check, const char *target,
		       const char *key, double dflt, const char *dflt_source, char *src, size_t len)
{
	double v, frac;

	if (key && pn_check_cfg_num(c->cfg, key, &v) == 1) {
		snprintf(src, len, "config: %s", key);
		return v;
	}
	if (c->baseline && !pn_check_baseline_find(c->baseline, check, target, &v)) {
		pn_check_cfg_num(c->cfg, "job.baseline-fraction", &frac);
		snprintf(src, len, "baseline: %g%% of %.6g", frac * 100, v);
		return v * frac;
	}
	snprintf(src, len, "%s", dflt_source ? dflt_source : "topology");
	return dflt;
}

void pn_check_progress(const struct pn_check *c, const char *check, const char *fmt, ...)
{
	char buf[256];
	va_list ap;

	if (!c->progress)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	c->progress(c->progress_arg, check, buf);
}

int pn_check_add(struct pn_check *c, const struct pn_verdict_in *in)
{
	struct pn_verdict_in x = *in;
	int ret;

	if (!x.node)
		x.node = c->node;
	ret = pn_verdict_add(c->results, &x);
	return ret == -ENOSPC || ret == -EEXIST ? 0 : ret;
}

int pn_check_row_name(char *out, size_t len, const char *name)
{
	size_t n = strlen(name);

	if (n < len) {
		memcpy(out, name, n + 1);
		return 0;
	}
	if (len < 4) {		/* no room for the mark: nothing rather than a cut */
		if (len)
			out[0] = 0;
		return 1;
	}
	/* room for "..." and the NUL, backed off to a character's lead byte */
	for (n = len - 4; n > 0 && ((unsigned char)name[n] & 0xc0) == 0x80; n--)
		;
	snprintf(out, len, "%.*s...", (int)n, name);
	return 1;
}

const char *pn_check_node_of(const struct pn_check *c, int r)
{
	if (c->names && r >= 0 && r < c->nranks)
		return c->names + (size_t)r * PN_VERDICT_NAME;
	if (c->boot && r >= 0 && r < c->nranks)
		return pn_boot_node_name(c->boot, r);
	return r == c->rank ? c->node : "?";
}

/* Whether the -d entry p (n bytes, "DEV" or "DEV:PORT") names port of dev
 * (port 0: dev, with or without a port). */
static int entry_names(const char *p, size_t n, const char *dev, int port)
{
	const char *colon = memchr(p, ':', n);
	size_t nl = colon ? (size_t)(colon - p) : n;

	return nl == strlen(dev) && !memcmp(p, dev, nl) &&
	       (!colon || !port || atoi(colon + 1) == port);
}

/* The -d entry at *p (its length in *n), *p moved past it; NULL at the end. */
static const char *entry_at(const char **p, size_t *n)
{
	const char *e = *p;

	if (!e || !*e)
		return NULL;
	*n = strcspn(e, ",");
	*p = e[*n] ? e + *n + 1 : e + *n;
	return e;
}

int pn_check_port_selected(const struct pn_check *c, const char *dev, int port)
{
	const char *p = c->devspec, *e;
	size_t n;

	if (!p || !*p)
		return 1;
	while ((e = entry_at(&p, &n)))
		if (entry_names(e, n, dev, port))
			return 1;
	return 0;
}

int pn_check_devspec_missing(const struct pn_check *c, char out[PN_CHECK_ENTRY_LEN])
{
	const struct pn_topo *t = c->topo;
	const char *p = c->devspec, *e;
	size_t n;
	int i, j, hit;

	while ((e = entry_at(&p, &n))) {
		for (i = t->ngpus, hit = !n; !hit && i < t->ngpus + t->nnics; i++) {
			const struct pn_nic *nic = &t->devs[i].nic;

			if (!entry_names(e, n, nic->name, 0))
				continue;
			hit = !nic->nports; /* no ports read: its own FAIL row */
			for (j = 0; !hit && j < nic->nports; j++)
				hit = entry_names(e, n, nic->name, nic->ports[j].port);
		}
		if (!hit) {
			snprintf(out, PN_CHECK_ENTRY_LEN, "%.*s", (int)(n < 64 ? n : 64), e);
			return 1;
		}
	}
	return 0;
}

const char *pn_check_backend_list(const struct pn_check *c)
{
	return c->backends ? c->backends : "cuda,nccl";
}

int pn_check_backends_found(const char *list)
{
	/* as long as the lists the checks copy (check_ar.c, check_gpu.c) */
	char copy[256], *tok, *save = NULL, *path;
	int ret = 0;

	if (strlen(list) >= sizeof(copy))
		return pn_err(-EINVAL, "--backend: a list of at most %zu characters", sizeof(copy) - 1);
	path = malloc(PN_PLUGIN_PATH_MAX);
	if (!path)
		return pn_err(-ENOMEM, "out of memory");
	snprintf(copy, sizeof(copy), "%s", list);
	for (tok = strtok_r(copy, ",", &save); tok && !ret; tok = strtok_r(NULL, ",", &save))
		if (strcmp(tok, "host") && (ret = pn_plugin_locate(tok, path, PN_PLUGIN_PATH_MAX)))
			pn_err_ctx(ret, "--backend");
	free(path);
	return ret;
}
