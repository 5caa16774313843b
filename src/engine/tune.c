/* SPDX-License-Identifier: MIT */
/*
 * The tuning table (tune.h): which algorithm pn_allreduce runs for a job's
 * shape and a size, built in or read from a file (PENNY_TUNE_FILE), and the file
 * allreduce-test --tune-out writes.
 */
#define _GNU_SOURCE
#include "engine/tune.h"
#include "base/file.h"
#include "base/log.h"
#include "base/minijson.h"
#include "base/units.h"
#include "base/util.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const mode_names[] = { "", "out-of-place", "in-place" };

/* One line "[collective] nranks nnodes max_bytes algorithm [mode]"
 * (NUL-terminated, no newline). */
static int tune_line(char *line, struct pn_tune_entry *e)
{
	char *f[7], *save = NULL, *tok;
	uint64_t b;
	int n = 0, k = 0;

	memset(e, 0, sizeof(*e));
	for (tok = strtok_r(line, " \t", &save); tok && n < 7; tok = strtok_r(NULL, " \t", &save))
		f[n++] = tok;
	/* no algorithm or collective is named like a mode */
	for (k = PN_TUNE_OOP; n && k <= PN_TUNE_IP; k++)
		if (!strcmp(f[n - 1], mode_names[k])) {
			e->mode = (enum pn_tune_mode)k;
			n--;
			break;
		}
	k = 0;
	if (n == 5) {
		if (pn_coll_parse(f[0], &e->kind))
			return -EINVAL;
		k = 1;
	}
	if (n != 4 + k || pn_parse_int(f[k], &e->nranks) || pn_parse_int(f[k + 1], &e->nnodes) ||
	    pn_parse_size(f[k + 2], &b) || e->nranks < 1 || e->nnodes < 1 || b > SIZE_MAX)
		return -EINVAL;
	if (e->kind == PN_COLL_ALLREDUCE) {
		if (pn_algo_parse(f[k + 3], &e->algo) || e->algo == PN_ALGO_AUTO)
			return -EINVAL;
	} else if (e->mode != PN_TUNE_BOTH || pn_calgo_parse(f[k + 3], &e->calgo) ||
		   !pn_calgo_valid(e->kind, e->calgo)) {
		return -EINVAL;
	}
	e->max_bytes = (size_t)b;
	return 0;
}

int pn_tune_parse(const char *text, size_t len, const char *name, struct pn_tune_entry **tab,
		  int *count)
{
	struct pn_tune_entry *t = NULL;
	const char *p = text, *end = text + len;
	int n = 0, cap = 0, lineno = 0, ret = 0;

	*tab = NULL;
	*count = 0;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t ll = (size_t)((nl ? nl : end) - p);
		char line[PN_TUNE_MAX_LINE + 1];
		struct pn_tune_entry e;

		lineno++;
		if (ll && p[ll - 1] == '\r')
			ll--;
		if (ll > PN_TUNE_MAX_LINE) {
			ret = pn_err(-EINVAL, "%s:%d: line longer than %d bytes", name, lineno,
				     PN_TUNE_MAX_LINE);
			break;
		}
		memcpy(line, p, ll);
		line[ll] = 0;
		p = nl ? nl + 1 : end;
		if (memchr(line, 0, ll)) {
			ret = pn_err(-EINVAL, "%s:%d: NUL byte", name, lineno);
			break;
		}
		if (line[strspn(line, " \t")] == '#' || line[strspn(line, " \t")] == 0)
			continue;
		if (tune_line(line, &e)) {
			ret = pn_err(-EINVAL, "%s:%d: want \"[collective] nranks nnodes max_bytes "
				     "algorithm [in-place|out-of-place]\" (an algorithm of that "
				     "collective; a mode on allreduce's lines only)", name, lineno);
			break;
		}
		if (n == PN_TUNE_MAX_ENTRIES) {
			ret = pn_err(-EINVAL, "%s: more than %d entries", name,
				     PN_TUNE_MAX_ENTRIES);
			break;
		}
		if (n == cap) {
			struct pn_tune_entry *nt;

			cap = cap ? 2 * cap : 16;
			nt = realloc(t, sizeof(*nt) * (size_t)cap);
			if (!nt) {
				ret = pn_err(-ENOMEM, "out of memory");
				break;
			}
			t = nt;
		}
		t[n++] = e;
	}
	if (ret) {
		free(t);
		return ret;
	}
	*tab = t;
	*count = n;
	return 0;
}

enum pn_algo pn_tune_pick(const struct pn_tune *tt, int nranks, int nnodes, size_t bytes,
			  int direct, int inplace)
{
	enum pn_tune_mode mine = inplace ? PN_TUNE_IP : PN_TUNE_OOP;
	int i, best = -1;

	for (i = 0; tt && i < tt->n; i++) {
		const struct pn_tune_entry *t = &tt->tab[i];

		if (t->kind != PN_COLL_ALLREDUCE || t->nranks != nranks || t->nnodes != nnodes ||
		    t->max_bytes < bytes || (t->mode != PN_TUNE_BOTH && t->mode != mine))
			continue;
		if (best < 0 || t->max_bytes < tt->tab[best].max_bytes ||
		    (t->max_bytes == tt->tab[best].max_bytes && t->mode == mine))
			best = i;
	}
	if (best >= 0)
		return tt->tab[best].algo;
	/* built-in table, measured on the host backend (README: Tuning) */
	if (nranks == 1)
		return PN_ALGO_RING;
	if (nnodes == 1) {
		/*
		 * Registered buffers, two ranks, each input written by its
		 * rank just before the call (as a step's gradients are): the
		 * peer's bytes cross cores whatever the algorithm.  Small
		 * sizes: out of place the ring (direct one-shot 1.1-1.2x at
		 * 1 KiB and 32-64 KiB), in place one-shot over the FIFOs
		 * (sched.c).  Then two-shot, each rank reducing half (0.44-
		 * 0.98x the faster other's time from 128 KiB to 8 MiB); in
		 * place from 16 MiB the ring, 0.5-0.9x two-shot's time there
		 * (results/2026-11-30-dev).
		 */
		if (direct && nranks == 2 && !inplace)
			return bytes <= PN_TUNE_RING_2_OOP_MAX ? PN_ALGO_RING : PN_ALGO_TWO_SHOT;
		if (direct && nranks == 2 && bytes <= PN_TUNE_ONE_SHOT_2_IP_MAX)
			return PN_ALGO_ONE_SHOT;
		if (direct && nranks == 2)
			return bytes <= PN_TUNE_TWO_SHOT_2_IP_MAX ? PN_ALGO_TWO_SHOT : PN_ALGO_RING;
		if (direct)
			return bytes <= PN_TUNE_ONE_SHOT_MAX ? PN_ALGO_ONE_SHOT : PN_ALGO_TWO_SHOT;
		return bytes <= (16u << 10) ? PN_ALGO_ONE_SHOT : PN_ALGO_RING;
	}
	if (bytes <= (16u << 10))
		return PN_ALGO_SIMPLE_RING;
	if (nranks > nnodes && nranks % nnodes == 0)
		return PN_ALGO_HIER;
	return PN_ALGO_RING;
}

enum pn_calgo pn_tune_pick_coll(const struct pn_tune *tt, enum pn_coll_kind k, int nranks,
				int nnodes, size_t bytes, int direct)
{
	int i, best = -1;

	for (i = 0; tt && i < tt->n; i++) {
		const struct pn_tune_entry *t = &tt->tab[i];

		if (t->kind != k || t->nranks != nranks || t->nnodes != nnodes || t->max_bytes < bytes)
			continue;
		if (best < 0 || t->max_bytes < tt->tab[best].max_bytes)
			best = i;
	}
	if (best >= 0)
		return tt->tab[best].calgo;
	/* the built-in rule, measured on the host backend (README: Tuning) */
	if (k == PN_COLL_SENDRECV || (direct && nranks > 1 && pn_calgo_valid(k, PN_CALGO_ONE_SHOT)))
		return PN_CALGO_ONE_SHOT;
	if (k == PN_COLL_ALLTOALL) {
		size_t block = bytes / (size_t)PN_MAX(nranks, 1) / (size_t)PN_MAX(nranks, 1);

		if (nranks >= 8 && block <= PN_TUNE_BRUCK_BLOCK_MAX)
			return PN_CALGO_BRUCK;
		return bytes <= PN_TUNE_COLL_ONE_SHOT_MAX ? PN_CALGO_ONE_SHOT : PN_CALGO_PAIRWISE;
	}
	if (bytes > PN_TUNE_COLL_ONE_SHOT_MAX)
		return PN_CALGO_RING;
	if (k == PN_COLL_BROADCAST && nranks > 4)
		return PN_CALGO_TREE;
	return PN_CALGO_ONE_SHOT;
}

int pn_tune_load(struct pn_tune *tt, const char *path)
{
	struct pn_tune_entry *t;
	char *text;
	size_t len;
	int n, ret;

	ret = pn_file_read(path, &text, &len);
	if (ret)
		return pn_err_ctx(ret, "tuning file");
	ret = pn_tune_parse(text, len, path, &t, &n);
	free(text);
	if (ret)
		return ret;
	free(tt->tab);
	tt->tab = t;
	tt->n = n;
	return 0;
}

void pn_tune_release(struct pn_tune *tt)
{
	free(tt->tab);
	tt->tab = NULL;
	tt->n = 0;
}

int pn_tune_save(FILE *f, const char *path, int nranks, int nnodes, const size_t *bytes,
		 const enum pn_algo *oop, const enum pn_algo *ip, int n)
{
	int i, m;

	if (!ip)
		ip = oop;
	/* only what pn_tune_load accepts: an algorithm that runs, never "auto" */
	for (i = 0; i < 2 * n; i++) {
		enum pn_algo a = i < n ? oop[i] : ip[i - n];

		if (a < 0 || a >= PN_NALGOS || nranks < 1 || nnodes < 1)
			return pn_err(-EINVAL, "tuning table '%s': %d ranks, %d nodes, %zu bytes: "
				      "'%s' is not an algorithm that runs", path, nranks, nnodes,
				      bytes[i % n], pn_algo_name(a));
	}
	fprintf(f, "# penny tuning table: nranks nnodes max_bytes algorithm [mode]\n");
	for (i = 0; i < n; i++)
		for (m = PN_TUNE_OOP; m <= PN_TUNE_IP; m++) {
			enum pn_algo a = m == PN_TUNE_OOP ? oop[i] : ip[i];

			if (oop[i] == ip[i] && m == PN_TUNE_IP)
				break;
			fprintf(f, "%d %d %zu %s%s%s\n", nranks, nnodes, bytes[i], pn_algo_name(a),
				oop[i] == ip[i] ? "" : " ", oop[i] == ip[i] ? "" : mode_names[m]);
		}
	if (fflush(f) || ferror(f))
		return pn_err(-EIO, "write error on '%s': %s", path, strerror(errno ? errno : EIO));
	return 0;
}
