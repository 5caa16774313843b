/* SPDX-License-Identifier: MIT */
/*
 * NCCL's log of this node for the nccl-path check (check_nccl.c) when no
 * --nccl-log is given: one small allreduce over the nccl plugin, one rank
 * per GPU, with NCCL_DEBUG=INFO and NCCL_DEBUG_FILE in a private directory
 * of penny's own (mkdtemp, then checked: a real directory, ours, mode
 * 0700), one file per rank (NCCL expands %h and %p), read back bounded and
 * removed.  Across nodes the job's log instead (pn_check_ncclpath_job):
 * the same variables in a fresh job of every rank (check_fresh.h), each
 * rank's log to its node's first rank, which judges them.
 */
#define _GNU_SOURCE
#include "check/check_ncclrun.h"
#include "check/check_ar.h"
#include "check/check_fresh.h"
#include "check/check_gpu_lib.h"
#include "check/check_row.h"
#include "base/file.h"
#include "base/log.h"
#include "base/run.h"
#include "base/verdict.h"
#include "engine/boot.h"
#include "gpu/plugin.h"
#include "node/topo.h"

#include <dirent.h>
#include <stdint.h>
#include <stddef.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* bytes of the allreduce: enough for every channel to connect */
#define PROBE_BYTES (1u << 20)
/* files read back (one per rank) */
#define PROBE_FILES 4096

static const char *const vars[] = { "NCCL_DEBUG", "NCCL_DEBUG_FILE", "NCCL_DEBUG_SUBSYS" };
#define NVARS (sizeof(vars) / sizeof(vars[0]))

/* Set NCCL's debug variables (old: their values before, to restore; *n: how many set). */
static int env_set(char **old, size_t *n, const char *file)
{
	const char *val[NVARS] = { "INFO", file, "INIT,NET,P2P,SHM" };

	for (*n = 0; *n < NVARS; ++*n) {
		const char *o = getenv(vars[*n]);

		old[*n] = o ? strdup(o) : NULL;
		if (o && !old[*n])
			return pn_err(-ENOMEM, "out of memory for NCCL's environment");
		if (setenv(vars[*n], val[*n], 1)) {
			++*n;	/* restored from old all the same */
			return pn_err(-ENOMEM, "out of memory for NCCL's environment");
		}
	}
	return 0;
}

static void env_restore(char **old, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (old[i])
			setenv(vars[i], old[i], 1);
		else
			unsetenv(vars[i]);
		free(old[i]);
		old[i] = NULL;
	}
}

/* Every file of dir appended to *buf (bounded), each removed; dir too. */
static int collect(const char *dir, char **buf, size_t *len)
{
	char path[4200];
	struct dirent *e;
	int n = 0, ret = 0;
	DIR *d = opendir(dir);

	if (!d)
		return pn_err(-errno, "%s: %s", dir, strerror(errno));
	while ((e = readdir(d)) && n++ < PROBE_FILES) {
		char *text;
		size_t tl;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		/* what the ranks left: regular files only, bounded (the reader refuses others) */
		if (!ret && !pn_file_read(path, &text, &tl)) {
			char *nb = *len + tl <= PN_FILE_READ_MAX ? realloc(*buf, *len + tl + 1) : NULL;

			if (nb) {
				memcpy(nb + *len, text, tl);
				*len += tl;
				nb[*len] = 0;
				*buf = nb;
			} else if (*len + tl <= PN_FILE_READ_MAX) {
				ret = pn_err(-ENOMEM, "out of memory for NCCL's log");
			}
			free(text);
		}
		unlink(path);
	}
	closedir(d);
	rmdir(dir);
	return ret;
}

/* A private directory of ours for NCCL's log in $TMPDIR (else /tmp): 0, 1
 * with why when there is none, or -ENOMEM. */
static int log_dir(char *dir, size_t len, char *why, size_t wlen)
{
	const char *tmp = getenv("TMPDIR");
	int fd;

	if (!tmp || tmp[0] != '/' || strlen(tmp) > 1024)
		tmp = "/tmp";
	snprintf(dir, len, "%s/penny-nccl-XXXXXX", tmp);
	if (!mkdtemp(dir)) {
		snprintf(why, wlen, "no directory for NCCL's log in %.200s: %s", tmp,
			 strerror(errno));
		return 1;
	}
	fd = pn_file_own_dir(dir, 077, "NCCL's debug log", "a private directory of ours");
	if (fd < 0) {
		snprintf(why, wlen, "%s", pn_errmsg(fd));
		rmdir(dir);
		return fd == -ENOMEM ? fd : 1;
	}
	close(fd);
	return 0;
}

int pn_ncclpath_capture(struct pn_check *c, char **buf, size_t *len, char *why, size_t wlen)
{
	char dir[4096], file[4200], *old[NVARS] = { NULL };
	struct pn_plugin *p;
	size_t nset = 0;
	int ret;

	*buf = NULL;
	*len = 0;
	if (c->topo->ngpus < 2) {
		snprintf(why, wlen, "%s: NCCL connects nothing on the node (no --nccl-log FILE)",
			 c->topo->ngpus ? "one GPU" : "no GPU");
		return 1;
	}
	ret = pn_plugin_load("nccl", &p);
	if (ret) {
		snprintf(why, wlen, "no --nccl-log FILE, and no nccl plugin: %s", pn_errmsg(ret));
		return 1;
	}
	pn_plugin_unload(p);
	ret = log_dir(dir, sizeof(dir), why, wlen);
	if (ret)
		return ret;
	snprintf(file, sizeof(file), "%s/nccl.%%h.%%p.log", dir);
	pn_check_progress(c, "nccl-path", "%d ranks on nccl with NCCL_DEBUG=INFO", c->topo->ngpus);
	ret = env_set(old, &nset, file);
	if (!ret)
		ret = pn_check_ar_probe(c, "nccl", c->topo->ngpus, PROBE_BYTES);
	env_restore(old, nset);
	if (ret) {
		snprintf(why, wlen, "the allreduce on nccl failed: %s", pn_errmsg(ret));
		ret = 1;
	}
	if (collect(dir, buf, len) == -ENOMEM)
		ret = -ENOMEM;
	if (ret) {
		free(*buf);
		*buf = NULL;
		*len = 0;
	}
	return ret;
}

/* ------------------------------------------------------------ across nodes */

/* a rank's log kept for the gather (NCCL's INIT, NET, P2P, SHM lines of a
 * small allreduce are a few KiB), and bytes of one round of the gather */
#define JOB_LOG_MAX (256u << 10)
#define GATHER_BUDGET (8u << 20)

/*
 * Every rank's text to the leader of its node, through the job's bootstrap
 * (which has allgather only: the lengths first, then rounds of at most
 * GATHER_BUDGET bytes over all ranks).  On the node leader *out holds the
 * texts of its node's ranks in rank order (malloc'ed, NUL-terminated).
 */
static int gather_node(struct pn_check *c, const char *buf, uint32_t len, char **out,
		       size_t *olen)
{
	uint32_t *lens = calloc((size_t)c->nranks, sizeof(*lens)), maxl = 0, chunk, o;
	size_t *pos = calloc((size_t)c->nranks, sizeof(*pos)), total = 0;
	char *send = NULL, *all = NULL;
	int r, ret;

	*out = NULL;
	*olen = 0;
	if (!lens || !pos) {
		ret = pn_err(-ENOMEM, "out of memory for NCCL's logs");
		goto out;
	}
	ret = pn_boot_allgather(c->boot, &len, lens, sizeof(len));
	for (r = 0; !ret && r < c->nranks; r++) {
		if (lens[r] > JOB_LOG_MAX)
			ret = pn_err(-EPROTO, "rank %d sent %u bytes of NCCL's log", r, lens[r]);
		maxl = lens[r] > maxl ? lens[r] : maxl;
		pos[r] = total;
		if (pn_boot_node(c->boot, r) == c->node_index)
			total += lens[r];
	}
	chunk = GATHER_BUDGET / (uint32_t)c->nranks;
	chunk = chunk < 1 ? 1 : chunk > maxl ? maxl : chunk;
	if (!ret && maxl) {
		send = malloc(chunk);
		all = malloc((size_t)chunk * (size_t)c->nranks);
		*out = c->node_leader ? calloc(1, total + 1) : NULL;
		if (!send || !all || (c->node_leader && !*out))
			ret = pn_err(-ENOMEM, "out of memory for NCCL's logs");
	}
	for (o = 0; !ret && o < maxl; o += chunk) {
		memset(send, 0, chunk);
		if (o < len)
			memcpy(send, buf + o, len - o < chunk ? len - o : chunk);
		ret = pn_boot_allgather(c->boot, send, all, chunk);
		for (r = 0; !ret && *out && r < c->nranks; r++)
			if (pn_boot_node(c->boot, r) == c->node_index && o < lens[r])
				memcpy(*out + pos[r] + o, all + (size_t)r * chunk,
				       lens[r] - o < chunk ? lens[r] - o : chunk);
	}
	if (!ret && *out)
		*olen = total;
	if (ret) {
		free(*out);
		*out = NULL;
	}
out:
	free(lens);
	free(pos);
	free(send);
	free(all);
	return ret;
}

int pn_ncclpath_capture_job(struct pn_check *c, char **node, size_t *nlen, char *why,
			    size_t wlen)
{
	char dir[4096], file[4200], no[120] = "", *buf = NULL, dbg[4300];
	const char *env[] = { "NCCL_DEBUG=INFO", dbg, "NCCL_DEBUG_SUBSYS=INIT,NET,P2P,SHM", NULL };
	char sz[32];
	/* -n 0: the exact check's calls only; NCCL connects its channels and
	 * logs the paths at the first call, the timed ones would add nothing */
	const char *args[] = { "--backend", "nccl", "-b", sz, "-e", sz, "-n", "0", NULL };
	struct pn_fresh_end *ends = NULL;
	struct pn_run run;
	size_t len = 0;
	int ok, k, ret;

	*node = NULL;
	*nlen = 0;
	why[0] = 0;
	ends = calloc((size_t)c->nranks, sizeof(*ends));
	if (!ends)
		return pn_err(-ENOMEM, "out of memory for NCCL's logs");
	ok = log_dir(dir, sizeof(dir), no, sizeof(no));
	if (ok < 0) {
		free(ends);
		return ok;
	}
	ok = !ok;
	snprintf(file, sizeof(file), "%s/nccl.%%h.%%p.log", dir);
	snprintf(dbg, sizeof(dbg), "NCCL_DEBUG_FILE=%s", file);
	snprintf(sz, sizeof(sz), "%u", PROBE_BYTES);
	ret = pn_check_fresh_job(c, ok, no, env, args, &run, ends, why, wlen);
	if (!ret) {
		pn_run_release(&run);
		if ((k = pn_fresh_failed(ends, c->nranks)) >= 0)
			snprintf(why, wlen, "the job's allreduce on nccl failed: rank %d (node %s): "
				 "%.180s", k, pn_check_node_of(c, k), ends[k].why);
	}
	if (ok && collect(dir, &buf, &len) == -ENOMEM && ret >= 0)
		ret = -ENOMEM;
	if (ret < 0)
		goto out;
	/* one rank's log, cut at a line */
	if (len > JOB_LOG_MAX)
		for (len = JOB_LOG_MAX; len && buf[len - 1] != '\n';)
			len--;
	ret = gather_node(c, why[0] ? "" : buf, why[0] ? 0 : (uint32_t)len, node, nlen);
	if (!ret && why[0]) {
		free(*node);
		*node = NULL;
		*nlen = 0;
		ret = 1;
	}
out:
	free(ends);
	free(buf);
	return ret;
}

/* In the child: the plugin named by arg's driver version into out. */
static int cuda_api_of(void *arg, void *out)
{
	struct pn_plugin *p;
	int ret = pn_plugin_load(arg, &p);

	if (ret)
		return ret;
	if (!pn_plugin_covers(p, offsetof(struct penny_plugin_v1, driver_version)) ||
	    !p->ops->driver_version) {
		ret = pn_err(-EOPNOTSUPP, "plugin %s reports no CUDA driver version (too old)",
			     (const char *)arg);
	} else {
		ret = p->ops->driver_version(out);
		if (ret)
			ret = pn_plugin_err(p, ret < 0 ? ret : -EIO, "driver_version");
		else if (*(int *)out < 1000)
			ret = pn_err(-EINVAL, "plugin %s: CUDA driver version %d is not one",
				     (const char *)arg, *(int *)out);
	}
	pn_plugin_unload(p);
	return ret;
}

int pn_check_cuda_api(const char *list, double timeout, int *version, char *why, size_t wlen)
{
	char copy[256], *tok, *save = NULL;
	size_t n;

	*version = 0;
	why[0] = 0;
	snprintf(copy, sizeof(copy), "%s", list && *list ? list : "cuda,nccl");
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		int v = 0, ret = pn_checkgpu_child(cuda_api_of, tok, &v, sizeof(v), timeout,
						   "the CUDA driver's version");

		if (!ret) {
			*version = v;
			return 0;
		}
		if (ret == -ENOMEM)
			return ret;
		n = strlen(why);
		snprintf(why + n, wlen - n, "%s%s", n ? "; " : "", pn_errmsg(ret));
	}
	if (!why[0])
		snprintf(why, wlen, "no GPU plugin");
	return 1;
}
