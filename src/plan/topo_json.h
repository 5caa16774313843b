/* SPDX-License-Identifier: MIT */
/*
 * The topology document (plan/topo_json.c): `penny topo`'s output and
 * --save file, read back by pn_plan_model_add_topo (plan/plan.h).
 */
#ifndef PENNY_PLAN_TOPO_JSON_H
#define PENNY_PLAN_TOPO_JSON_H

#include "base/minijson.h"
#include "base/out.h"
#include "node/topo.h"
#include "plan/plan.h"

/*
 * The document of topology t into o (JSON mode; a text o gets nothing): the
 * devices and ports, the path matrix (PCIe classes only with pcie), rails;
 * with checks, the nv violations viol.  Writes only to o.
 */
void pn_topo_write(struct pn_out *o, const struct pn_topo *t, int pcie, char *const *viol, int nv,
		   int checks);

struct pn_ofile;
/*
 * The document (as pn_topo_write) into of, then committed (topo --save): 0,
 * or -errno with one line naming the file and why its write failed (the
 * errno of that write, not one left from before).  Consumes of either way.
 */
int pn_topo_save(struct pn_ofile *of, const struct pn_topo *t, int pcie, char *const *viol, int nv,
		 int checks);

/* Pieces of the format that the ring plan JSON (plan_json.c) reads too: a plan carries layouts. */

/* GPU index in l by name, -1 none. */
int pn_plan_gpu_by_name(const struct pn_plan_layout *l, const char *name);
/* Is a port state "ACTIVE" (or sysfs style "4: ACTIVE")? */
int pn_plan_port_active(const char *state);
/* Class from a matrix row (key, else key2); missing -> unknown, counted in *missing. */
int pn_plan_matrix_class(const struct pn_jval *row, const char *key, const char *key2,
			 struct pn_plan_path *out, int *missing, const char *file);

#endif
