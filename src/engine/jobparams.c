/* SPDX-License-Identifier: MIT */
/* Job parameters every rank must agree on: compared once at start-up. */
#define _GNU_SOURCE
#include "engine/jobparams.h"

#include "engine/boot.h"
#include "base/file.h"
#include "base/log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

uint64_t pn_job_digest(const void *data, size_t len, uint64_t seed)
{
	const unsigned char *p = data;
	uint64_t h = 0xcbf29ce484222325ull ^ seed;
	size_t i;

	for (i = 0; i < len; i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	/* splitmix64's finalizer: every input bit reaches every output bit */
	h ^= h >> 30;
	h *= 0xbf58476d1ce4e5b9ull;
	h ^= h >> 27;
	h *= 0x94d049bb133111ebull;
	h ^= h >> 31;
	return h;
}

/* Digest of name and value; never 0 (0 stands for "no such parameter"). */
static uint64_t param_digest(const char *name, const char *value, size_t len)
{
	uint64_t h = pn_job_digest(name, strlen(name) + 1, 0);

	h = pn_job_digest(value, len, h);
	return h ? h : 1;
}

static void set_shown(struct pn_job_param *p, const char *name, const char *value)
{
	size_t n = strlen(value);

	snprintf(p->name, sizeof(p->name), "%s", name);
	if (n < sizeof(p->value))
		memcpy(p->value, value, n + 1);
	else
		snprintf(p->value, sizeof(p->value), "%.*s...", (int)sizeof(p->value) - 4, value);
}

void pn_job_param_set(struct pn_job_param *p, const char *name, const char *fmt, ...)
{
	char small[PN_JOB_VALUE_LEN], *big = NULL;
	const char *v = small;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(small, sizeof(small), fmt, ap);
	va_end(ap);
	if (n >= (int)sizeof(small)) {
		va_start(ap, fmt);
		if (vasprintf(&big, fmt, ap) >= 0)
			v = big;
		else
			big = NULL; /* out of memory: the truncated value stands for it */
		va_end(ap);
	}
	if (n < 0)
		small[0] = 0;
	p->digest = param_digest(name, v, strlen(v));
	set_shown(p, name, v);
	free(big);
}

void pn_job_param_content(struct pn_job_param *p, const char *name, const void *data, size_t len)
{
	char v[48];

	snprintf(v, sizeof(v), "content %016llx",
		 (unsigned long long)pn_job_digest(data, len, 0x70656e6e79ull));
	p->digest = param_digest(name, v, strlen(v));
	set_shown(p, name, v);
}

int pn_job_params_first_diff(const uint64_t *digests, int nranks)
{
	int i, r;

	for (i = 0; i < PN_JOB_MAX_PARAMS; i++)
		for (r = 1; r < nranks; r++)
			if (digests[(size_t)r * PN_JOB_MAX_PARAMS + (size_t)i] != digests[i])
				return i;
	return -1;
}

void pn_job_params_message(char *out, size_t len, int i, const uint64_t *digests, int nranks,
			   const char *const *names, const char *const *values)
{
	const char *name = names[0];
	size_t k;
	int r, shown = 0, more = 0;

	for (r = 0; !name[0] && r < nranks; r++)
		name = names[r];
	k = (size_t)snprintf(out, len, "ranks disagree on %s: rank 0 %s", name[0] ? name : "?",
			     values[0][0] ? values[0] : "(none)");
	for (r = 1; r < nranks; r++) {
		if (digests[(size_t)r * PN_JOB_MAX_PARAMS + (size_t)i] == digests[i])
			continue;
		if (shown == PN_JOB_MSG_RANKS) {
			more++;
			continue;
		}
		shown++;
		if (k < len)
			k += (size_t)snprintf(out + k, len - k, ", rank %d %s", r,
					      values[r][0] ? values[r] : "(none)");
	}
	if (more && k < len)
		snprintf(out + k, len - k, " and %d more", more);
}

struct shown {
	char name[PN_JOB_NAME_LEN];
	char value[PN_JOB_VALUE_LEN];
};

int pn_job_params_agree(struct pn_boot *b, const struct pn_job_param *p, int n, int *differs)
{
	int nranks = pn_boot_nranks(b), rank = pn_boot_rank(b), i, r, ret;
	uint64_t mine[PN_JOB_MAX_PARAMS] = { 0 }, *all = NULL;
	struct shown me, *seen = NULL;
	const char **names = NULL, **values = NULL;
	char msg[512];

	if (differs)
		*differs = 0;
	if (n < 0 || n > PN_JOB_MAX_PARAMS)
		return pn_err(-EINVAL, "%d job parameters, at most %d", n, PN_JOB_MAX_PARAMS);
	if (nranks < 2)
		return 0;
	for (i = 0; i < n; i++)
		mine[i] = p[i].digest ? p[i].digest : 1;
	all = calloc((size_t)nranks, sizeof(mine));
	seen = calloc((size_t)nranks, sizeof(*seen));
	names = calloc((size_t)nranks, sizeof(*names));
	values = calloc((size_t)nranks, sizeof(*values));
	if (!all || !seen || !names || !values) {
		ret = pn_err(-ENOMEM, "out of memory");
		goto out;
	}
	ret = pn_boot_allgather(b, mine, all, sizeof(mine));
	if (ret)
		goto out;
	i = pn_job_params_first_diff(all, nranks);
	if (i < 0)
		goto out;
	/* the second round: parameter i's name and value from every rank */
	memset(&me, 0, sizeof(me));
	if (i < n) {
		snprintf(me.name, sizeof(me.name), "%s", p[i].name);
		snprintf(me.value, sizeof(me.value), "%s", p[i].value);
	}
	ret = pn_boot_allgather(b, &me, seen, sizeof(me));
	if (ret)
		goto out;
	for (r = 0; r < nranks; r++) {
		seen[r].name[sizeof(seen[r].name) - 1] = 0;
		seen[r].value[sizeof(seen[r].value) - 1] = 0;
		names[r] = seen[r].name;
		values[r] = seen[r].value;
	}
	pn_job_params_message(msg, sizeof(msg), i, all, nranks, names, values);
	if (differs)
		*differs = all[(size_t)rank * PN_JOB_MAX_PARAMS + (size_t)i] != all[i];
	ret = pn_err(-EINVAL, "%s", msg);
out:
	free(all);
	free(seen);
	free(names);
	free(values);
	return ret;
}

void pn_job_param_file(struct pn_job_param *p, const char *name, const char *path)
{
	char *text;
	size_t len;

	if (!path) {
		pn_job_param_set(p, name, "none");
	} else if (pn_file_read(path, &text, &len)) {
		pn_job_param_set(p, name, "unreadable");
	} else {
		pn_job_param_content(p, name, text, len);
		free(text);
	}
}
