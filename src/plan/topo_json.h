/* SPDX-License-Identifier: MIT */
/*
 * Pieces of the topology file format (plan/topo_json.c) that the ring plan
 * JSON (plan/plan_json.c) reads too: a plan carries its model's layouts.
 */
#ifndef PENNY_PLAN_TOPO_JSON_H
#define PENNY_PLAN_TOPO_JSON_H

#include "base/minijson.h"
#include "plan/plan.h"

/* GPU index in l by name, -1 none. */
int pn_plan_gpu_by_name(const struct pn_plan_layout *l, const char *name);
/* Is a port state "ACTIVE" (or sysfs style "4: ACTIVE")? */
int pn_plan_port_active(const char *state);
/* Class from a matrix row (key, else key2); missing -> unknown, counted in *missing. */
int pn_plan_matrix_class(const struct pn_jval *row, const char *key, const char *key2,
			 struct pn_plan_path *out, int *missing, const char *file);

#endif
