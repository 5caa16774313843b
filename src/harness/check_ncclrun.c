/* SPDX-License-Identifier: MIT */
/*
 * NCCL's log of this node for the nccl-path check (check_nccl.c) when no
 * --nccl-log is given: one small allreduce over the nccl plugin, one rank
 * per GPU, with NCCL_DEBUG=INFO and NCCL_DEBUG_FILE in a private directory
 * of penny's own (mkdtemp, then checked: a real directory, ours, mode
 * 0700), one file per rank (NCCL expands %h and %p), read back bounded and
 * removed.
 */
#define _GNU_SOURCE
#include "harness/check.h"
#include "harness/check_gpu.h"
#include "harness/check_settings.h"
#include "base/file.h"
#include "base/log.h"
#include "gpu/plugin.h"
#include "node/topo.h"

#include <dirent.h>
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

int pn_ncclpath_capture(struct pn_check *c, char **buf, size_t *len, char *why, size_t wlen)
{
	const char *tmp = getenv("TMPDIR");
	char dir[4096], file[4200], *old[NVARS] = { NULL };
	struct pn_plugin *p;
	size_t nset = 0;
	int ret, fd;

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
	if (!tmp || tmp[0] != '/' || strlen(tmp) > 1024)
		tmp = "/tmp";
	snprintf(dir, sizeof(dir), "%s/penny-nccl-XXXXXX", tmp);
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
	snprintf(file, sizeof(file), "%s/nccl.%%h.%%p.log", dir);
	pn_check_progress(c, "nccl-path", "%d ranks on nccl with NCCL_DEBUG=INFO", c->topo->ngpus);
	ret = env_set(old, &nset, file);
	if (!ret)
		ret = pn_check_ar_probe("nccl", c->topo->ngpus, PROBE_BYTES, c->timeout);
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
