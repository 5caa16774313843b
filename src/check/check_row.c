/* SPDX-License-Identifier: MIT */
/*
 * What every check of `penny check` uses (check_row.h): the expectation
 * rule (config > baseline > topology), the progress line, adding a result
 * row and whether --dev selects a port.  The checks call these and the
 * driver (check.c) calls the checks, so they live apart from the driver.
 */
#define _GNU_SOURCE
#include "check/check_row.h"
#include "check/check_base.h"
#include "check/check_cfg.h"
#include "base/verdict.h"

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

int pn_check_port_selected(const struct pn_check *c, const char *dev, int port)
{
	const char *p = c->devspec;
	size_t dl = strlen(dev);

	if (!p || !*p)
		return 1;
	while (*p) {
		size_t n = strcspn(p, ",");
		const char *colon = memchr(p, ':', n);
		size_t nl = colon ? (size_t)(colon - p) : n;

		if (nl == dl && !memcmp(p, dev, dl) && (!colon || !port || atoi(colon + 1) == port))
			return 1;
		p += n;
		if (*p == ',')
			p++;
	}
	return 0;
}

const char *pn_check_backend_list(const struct pn_check *c)
{
	return c->backends ? c->backends : "cuda,nccl";
}
