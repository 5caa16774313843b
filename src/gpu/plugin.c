/* SPDX-License-Identifier: MIT */
/* Plugin search and versioned lookup (see plugin.h), by the rules of plugin_open.h. */
#define _GNU_SOURCE
#include "gpu/plugin.h"
#include "gpu/plugin_open.h"

#include "engine/dtype.h"
#include "base/log.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The ABI's enums are the engine's. */
_Static_assert(PENNY_BFLOAT16 == (int)PN_BFLOAT16 && PENNY_DOUBLE == (int)PN_DOUBLE &&
		       PENNY_NDTYPES == (int)PN_NDTYPES,
	       "plugin dtypes differ from src/engine/dtype.h");
_Static_assert(PENNY_AVG == (int)PN_AVG && PENNY_MIN == (int)PN_MIN && PENNY_NREDOPS == (int)PN_NREDOPS,
	       "plugin ops differ from src/engine/dtype.h");

#ifndef PENNY_PLUGINDIR
#define PENNY_PLUGINDIR "/usr/local/lib/penny"
#endif

/*
 * The running binary's directory.  /proc/self/exe names this process's
 * file, not the machine's state, so it is read directly and not through
 * the --sysfs-root of src/node/sysfs.h.
 */
static int exe_dir(char *buf, size_t len)
{
	ssize_t n = readlink("/proc/self/exe", buf, len - 1);
	char *slash;

	if (n <= 0)
		return -1;
	buf[n] = 0;
	slash = strrchr(buf, '/');
	if (!slash)
		return -1;
	*slash = 0;
	return 0;
}

static int add_dir(char *buf, size_t len, size_t *used, const char *dir)
{
	int w;

	if (!dir || !*dir)
		return 0;
	w = snprintf(buf + *used, len - *used, "%s%s", *used ? ":" : "", dir);
	if (w < 0 || (size_t)w >= len - *used)
		return 0;
	*used += (size_t)w;
	return 1;
}

/* PENNY_PLUGIN_PATH as the command read it (pn_plugin_set_path); NULL unset */
static char *plugin_path;

int pn_plugin_set_path(const char *dirs)
{
	char *copy = NULL;

	if (dirs && !(copy = strdup(dirs)))
		return pn_err(-ENOMEM, "out of memory");
	free(plugin_path);
	plugin_path = copy;
	return 0;
}

int pn_plugin_dirs(char *buf, size_t len)
{
	const char *env = plugin_path;
	char exe[PN_PLUGIN_PATH_MAX];
	size_t used = 0;
	int n = 0;

	buf[0] = 0;
	if (env && *env) {
		char *copy = strdup(env), *save = NULL, *d;

		for (d = copy ? strtok_r(copy, ":", &save) : NULL; d; d = strtok_r(NULL, ":", &save))
			n += add_dir(buf, len, &used, d);
		free(copy);
	}
	n += add_dir(buf, len, &used, PENNY_PLUGINDIR);
	if (!exe_dir(exe, sizeof(exe) - 16)) {
		strcat(exe, "/../lib/penny");
		n += add_dir(buf, len, &used, exe);
	}
#ifdef PENNY_BUILD_PLUGINDIR
	n += add_dir(buf, len, &used, PENNY_BUILD_PLUGINDIR);
#endif
	return n;
}

static int open_table(struct pn_plugin *p)
{
	char why[PN_PLUGIN_PATH_MAX + 256];
	int ret;

	ret = pn_plugin_dlopen(p->path, &p->dl, why, sizeof(why));
	if (ret)
		return pn_err(ret, "cannot load the %s plugin '%s': %s", p->name, p->path, why);
	ret = pn_plugin_table(p->dl, p->path, p->name, &p->ops, &p->abi, why, sizeof(why));
	if (ret)
		return pn_err(ret, "%s", why);
	return 0;
}

int pn_plugin_locate(const char *name, char *path, size_t len)
{
	char dirs[8192], list[sizeof(dirs) * 2], *save = NULL, *d;
	const char *env = plugin_path;
	size_t used = 0;

	if (len)
		path[0] = 0;
	if (!name || !*name || strlen(name) >= sizeof(((struct pn_plugin *)0)->name) ||
	    strchr(name, '/'))
		return pn_err(-EINVAL, "invalid plugin name '%s'", name ? name : "");
	pn_plugin_dirs(dirs, sizeof(dirs));
	if (!pn_plugin_find(dirs, name, path, len))
		return 0;
	list[0] = 0;
	for (d = strtok_r(dirs, ":", &save); d; d = strtok_r(NULL, ":", &save))
		used += (size_t)snprintf(list + used, sizeof(list) - used, "%s%s", used ? ", " : "", d);
	return pn_err(-ENOENT, "the %s plugin (penny-%s.so) is not installed: searched %s%s", name,
		      name, env && *env ? "" : "PENNY_PLUGIN_PATH (unset), ", list[0] ? list : "nothing");
}

int pn_plugin_load(const char *name, struct pn_plugin **out)
{
	struct pn_plugin *p;
	int ret;

	*out = NULL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return pn_err(-ENOMEM, "out of memory");
	ret = pn_plugin_locate(name, p->path, sizeof(p->path));
	if (ret) {
		free(p);
		return ret;
	}
	snprintf(p->name, sizeof(p->name), "%s", name);
	PN_DBG(PN_LOG_PLUGIN, "plugin %s: loading %s", name, p->path);
	ret = open_table(p);
	if (ret) {
		pn_plugin_unload(p);
		return ret;
	}
	*out = p;
	return 0;
}

void pn_plugin_unload(struct pn_plugin *p)
{
	if (!p)
		return;
	if (p->dl)
		dlclose(p->dl);
	free(p);
}

int pn_plugin_covers(const struct pn_plugin *p, size_t off)
{
	return p && p->ops && off + sizeof(void (*)(void)) <= p->ops->size;
}

int pn_plugin_err(const struct pn_plugin *p, int code, const char *what)
{
	const char *m = p && p->ops ? p->ops->errmsg() : NULL;

	if (code >= 0)
		code = -EIO;
	return pn_err(code, "%s plugin: %s%s%s", p ? p->name : "?", what,
		      m && *m ? ": " : "", m && *m ? m : "failed");
}
