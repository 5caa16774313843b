/* SPDX-License-Identifier: MIT */
/*
 * Finding and opening a penny plugin, one set of rules for penny's loader
 * (plugin.c) and the NCCL interposer (plugins/interpose, which compiles
 * plugin_open.c in: it uses the C library and dlopen only and records no
 * error; each caller words the reason it gets back).
 *   - a plugin NAME is the file penny-NAME.so, the first of the given
 *     directories that has one wins;
 *   - the file must be a regular file (dlopen of a FIFO would block, of a
 *     device read it), opened RTLD_NOW | RTLD_LOCAL;
 *   - its table is looked up newest ABI first and must have that ABI, at
 *     least the size of the ABI's first release, the name it was looked
 *     up by (when one is asked) and every member of that first release.
 */
#ifndef PENNY_PLUGIN_OPEN_H
#define PENNY_PLUGIN_OPEN_H

#include <stddef.h>

#include "penny_plugin.h"

/*
 * The first directory of dirs (':'-separated) holding penny-NAME.so: its
 * path in path (len bytes).  0, or -ENOENT (none; path is the last tried).
 */
int pn_plugin_find(const char *dirs, const char *name, char *path, size_t len);

/* dlopen of path, a regular file: 0 and *dl, or -ENOEXEC and why (the reason). */
int pn_plugin_dlopen(const char *path, void **dl, char *why, size_t len);

/*
 * The table of an opened plugin (path: for the messages; name: the name
 * it must carry, NULL: any): 0, *ops and *abi, or -ENOEXEC and why (a
 * sentence naming path).
 */
int pn_plugin_table(void *dl, const char *path, const char *name, const struct penny_plugin_v1 **ops,
		    unsigned *abi, char *why, size_t len);

#endif
