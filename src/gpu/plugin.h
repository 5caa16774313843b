/* SPDX-License-Identifier: MIT */
/*
 * The core's plugin loader.  A plugin NAME is the file penny-NAME.so,
 * searched in order in
 *   1. PENNY_PLUGIN_PATH (directories separated by ':'), as the command
 *      read it and set it (pn_plugin_set_path; the loader reads no
 *      environment),
 *   2. the install directory (PENNY_PLUGINDIR, set by the Makefile: make
 *      install builds the installed binary for PLUGINDIR as given then),
 *   3. the binary's directory/../lib/penny,
 *   4. this build tree's plugins (PENNY_BUILD_PLUGINDIR, set by the Makefile
 *      for the binary of the tree only, never for the installed one).
 * The first file found is opened (RTLD_LOCAL) and its table looked up
 * newest ABI first (penny_plugin_v1 is the only one yet).  A plugin not
 * found, one that cannot be opened (a missing libcuda/libnccl dependency
 * shows here) or one with the wrong ABI gives one line naming what was
 * searched or found.  The core never links CUDA or NCCL itself.
 *
 * The ABI (plugins/include/penny_plugin.h) is used directly:
 *	struct pn_plugin *p;
 *	void *be;
 *	if (pn_plugin_load("cuda", &p)) -> pn_errmsg(), exit 2
 *	ret = p->ops->init(&host, -1, &be); if (ret) pn_plugin_err(p, ret, "init");
 */
#ifndef PENNY_PLUGIN_LOADER_H
#define PENNY_PLUGIN_LOADER_H

#include <stddef.h>

#include "penny_plugin.h"

/* Longest plugin path kept (Linux's PATH_MAX; <limits.h> declares that only
 * with POSIX feature macros, which this header must not depend on). */
#define PN_PLUGIN_PATH_MAX 4096

struct pn_plugin {
	char name[32];
	char path[PN_PLUGIN_PATH_MAX];
	void *dl;
	const struct penny_plugin_v1 *ops;
	unsigned abi;		/* version of the table found */
};

/* Returns 0, -ENOENT (not found) or -ENOEXEC (found, unusable), with a message. */
int pn_plugin_load(const char *name, struct pn_plugin **out);
/*
 * Where the plugin NAME is, without opening it: 0 and its path (len
 * bytes), -EINVAL (not a plugin name: empty, too long, a '/') or -ENOENT
 * (no penny-NAME.so in any search directory; the message names them).
 */
int pn_plugin_locate(const char *name, char *path, size_t len);
void pn_plugin_unload(struct pn_plugin *p);

/*
 * The directories of PENNY_PLUGIN_PATH (':'-separated; NULL: unset), searched
 * first from now on, for the whole process like the sysfs root: the command
 * reads the variable once and sets it here.  0, or -ENOMEM.
 */
int pn_plugin_set_path(const char *dirs);

/* The search directories, ':'-separated, "PENNY_PLUGIN_PATH (unset)" style
 * wording left out; returns the number of directories. */
int pn_plugin_dirs(char *buf, size_t len);

/*
 * Whether the plugin's table covers an appended member (one at offset off):
 * a plugin built against an older header has a shorter table.
 *	if (pn_plugin_covers(p, offsetof(struct penny_plugin_v1, allgather)) && p->ops->allgather)
 */
int pn_plugin_covers(const struct pn_plugin *p, size_t off);

/* Record "NAME plugin: WHAT: <plugin's message>" for a failed plugin call
 * and return code (negative). */
int pn_plugin_err(const struct pn_plugin *p, int code, const char *what);

#endif
