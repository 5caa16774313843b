/* SPDX-License-Identifier: MIT */
/* Finding and opening a penny plugin, one set of rules (plugin_open.h). */
#define _GNU_SOURCE
#include "gpu/plugin_open.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Newest first. */
static const struct {
	const char *symbol;
	unsigned abi;
	size_t size;
} versions[] = {
	{ PENNY_PLUGIN_SYMBOL_V1, PENNY_PLUGIN_ABI_V1, PENNY_PLUGIN_V1_MIN_SIZE },
};

int pn_plugin_find(const char *dirs, const char *name, char *path, size_t len)
{
	const char *d = dirs;

	if (len)
		path[0] = 0;
	while (d && *d) {
		size_t n = strcspn(d, ":");
		int w;

		if (n) {
			w = snprintf(path, len, "%.*s/penny-%s.so", (int)n, d, name);
			if (w > 0 && (size_t)w < len && !access(path, F_OK))
				return 0;
		}
		d += n;
		if (*d == ':')
			d++;
	}
	return -ENOENT;
}

int pn_plugin_dlopen(const char *path, void **dl, char *why, size_t len)
{
	struct stat st;
	const char *e;

	*dl = NULL;
	if (stat(path, &st)) {
		snprintf(why, len, "%s", strerror(errno));
		return -ENOEXEC;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(why, len, "not a regular file");
		return -ENOEXEC;
	}
	*dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!*dl) {
		e = dlerror();
		snprintf(why, len, "%s", e ? e : "unknown error");
		return -ENOEXEC;
	}
	return 0;
}

int pn_plugin_table(void *dl, const char *path, const char *name, const struct penny_plugin_v1 **ops,
		    unsigned *abi, char *why, size_t len)
{
	size_t i;

	for (i = 0; i < sizeof(versions) / sizeof(versions[0]); i++) {
		const struct penny_plugin_v1 *t = dlsym(dl, versions[i].symbol);

		if (!t)
			continue;
		if (t->abi != versions[i].abi || t->size < versions[i].size) {
			snprintf(why, len, "the plugin '%s' has ABI %u (%u bytes) under %s; this penny "
					   "needs ABI %u",
				 path, t->abi, t->size, versions[i].symbol, versions[i].abi);
			return -ENOEXEC;
		}
		if (name && (!t->name || strcmp(t->name, name))) {
			snprintf(why, len, "the plugin '%s' calls itself '%s', not '%s'", path,
				 t->name ? t->name : "(null)", name);
			return -ENOEXEC;
		}
		if (!t->errmsg || !t->init || !t->fini || !t->alloc || !t->free || !t->allreduce ||
		    !t->sync || !t->time || !t->fill || !t->check) {
			snprintf(why, len, "the plugin '%s' leaves required functions empty", path);
			return -ENOEXEC;
		}
		*ops = t;
		*abi = versions[i].abi;
		return 0;
	}
	snprintf(why, len, "'%s' is not a penny plugin (no %s)", path, versions[0].symbol);
	return -ENOEXEC;
}
