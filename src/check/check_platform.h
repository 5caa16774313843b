/* SPDX-License-Identifier: MIT */
/*
 * The settings check of `penny check` (check_platform.c): the node's part
 * (check_settings.h), then the platform's: driver, NVSwitch fabric manager,
 * IMEX, RoCE GIDs and ECN, hidden PCI paths, versions; its pure parts for
 * the unit tests.
 */
#ifndef PENNY_CHECK_PLATFORM_H
#define PENNY_CHECK_PLATFORM_H

#include <stddef.h>

struct pn_check;

/* The check's entry (check_row.h's rule: results to c->results, 0 also on
 * FAIL or SKIP, a negative errno only when the run cannot go on). */
int pn_check_settings(struct pn_check *c);

/*
 * NCCL's rule for the driver (CUDA's minor version compatibility, which
 * NCCL's install guide defers to): a library built for CUDA MAJOR.x needs
 * a driver of at least the release this gives ("525.60.13" for 12), NULL
 * for a major the table does not know.
 */
const char *pn_settings_driver_min(int cuda_major);

/*
 * Do the versions match?  driver "550.54.15" (may be ""), nccl NCCL's
 * version line "2.21.5+cuda12.4" (may be ""), cuda_api the CUDA driver
 * API version the driver reports (12040; 0 unknown).  1 match, 0 not
 * (why says which rule), -ENOENT too little known (why says what).  With
 * the driver's release unknown the API version alone is judged (NCCL's
 * CUDA major no newer than it).
 */
int pn_settings_versions(const char *driver, const char *nccl, int cuda_api, char *why,
			 size_t len);

/* Of a nodes_config.cfg text: the lines naming a node (not empty, not a
 * comment). */
int pn_settings_imex_nodes(const char *text, size_t len);

/*
 * Can user uid (in group gid, or in its supplementary groups: ingroup)
 * read and write a file of mode, owner fuid, group fgid?  The bits of the
 * class the user falls in, as the kernel picks them (owner, group,
 * others); root's override is not counted.  1 or 0.
 */
int pn_settings_rw_access(unsigned mode, unsigned fuid, unsigned fgid, unsigned uid,
			  int ingroup);

/* The platform's part: driver, NVSwitch fabric manager, IMEX, RoCE GIDs and
 * ECN, hidden PCI paths. */
int pn_settings_platform(struct pn_check *c);
/* The versions row of check (the driver's, NCCL's, the CUDA driver API's). */
int pn_settings_versions_row(struct pn_check *c, const char *check, const char *nccl,
			     int cuda_api);

#endif
