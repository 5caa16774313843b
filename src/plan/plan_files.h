/* SPDX-License-Identifier: MIT */
/*
 * The files of `penny ring-plan` (plan_files.c): the --topo-file list read
 * into a model, the plan files --check reads and validates (ring-plan JSON,
 * or NCCL graph XML: one shared file or one per node), and the --nccl-graph
 * files, one per node where the name holds %h, %N or %n.  Errors are one line
 * in pn_errmsg().
 */
#ifndef PENNY_PLAN_FILES_H
#define PENNY_PLAN_FILES_H

#include "plan/plan.h"

#include <stddef.h>

/* A comma list of `penny topo --save` files (empty names skipped), each a
 * node of m; -EINVAL when it names none. */
int pn_plan_model_add_topo_files(struct pn_plan_model *m, const char *list);

/*
 * Where ring-plan's cluster model comes from: a synthetic shape (any of its
 * fields given: nodes, gpus, gpus_per_nic, nic_rate not 0, nics, nvlinks
 * not -1), the --topo-file list, an hwloc XML file, or this node; then
 * --hosts' order and --rails.
 */
struct pn_plan_source {
	int nodes, gpus, nics, gpus_per_nic, nvlinks;
	double nic_rate;
	const char *topo_files, *topo_xml, *rails, *hosts;
};

/* The model src names, finished (pn_plan_model_finish); this node when
 * none is named and need, else nothing (m stays empty; -EINVAL when src
 * has rails or hosts for it).  0, or -EINVAL when two sources are given or
 * a shape lacks --nodes, or -errno. */
int pn_plan_model_load(struct pn_plan_model *m, const struct pn_plan_source *src, int need);

/* Files read whole. */
struct pn_plan_files {
	int n;
	char **texts, **names;
	size_t *lens;
	int xml;	/* the first one is XML (NCCL's graph), else JSON */
};

/* A comma list of files; -EINVAL when it names none.  Release either way. */
int pn_plan_files_read(struct pn_plan_files *f, const char *list);
void pn_plan_files_release(struct pn_plan_files *f);
/* The plan the files hold, over model (own: a JSON plan's own model):
 * NCCL graph XML read and validated, or ring-plan JSON as allreduce-test
 * --plan validates it; what is wrong with it in viol, remarks in notes.
 * Negative when it could not be read. */
int pn_plan_files_check(const struct pn_plan_files *f, struct pn_plan *plan,
			struct pn_plan_model *own, struct pn_plan_model *model,
			struct pn_plan_msgs *notes, struct pn_plan_msgs *viol);

/* --nccl-graph: one file per node when the name holds %h, %N or %n. */
int pn_plan_graph_per_node(const char *pattern);
/* Node i's file name: %h and %N (Slurm's) its host name, %n its index, %%
 * a %; -EINVAL for any other % (Slurm's %j, a stray %). */
int pn_plan_graph_name(const char *pattern, const struct pn_plan_model *m, int i, char *path,
		       size_t len);
/* Before the planning: every file can be written, no two nodes share one
 * and none is a file the model was read from (src: --topo-file, --topo-xml;
 * NULL: none). */
int pn_plan_graphs_check(const char *pattern, const struct pn_plan_model *m,
			 const struct pn_plan_source *src);
/* p's graph into each file, all or none: every per-node file is written
 * (and synced) beside its name first, and only when all are there renamed
 * over the names; on an error every old file is as it was.  A per-node
 * file that is standard output or error is refused (also by the check).
 * The staged files are ".NAME.PID-I~" beside NAME, locked (flock) until
 * renamed; a stop (SIGTERM, SIGINT, SIGHUP; base/stop.h) in between
 * removes them, and those a run killed in between left, of the names
 * written (a regular file, its process gone, its lock free), are removed
 * first. */
int pn_plan_graphs_write(const char *pattern, const struct pn_plan *p);
/* A staged file's name ".NAME.PID-I~": 1 with NAME in base (blen bytes
 * with the NUL) and PID, else 0 (not one, or NAME too long). */
int pn_plan_stage_parse(const char *name, char *base, size_t blen, long *pid);

#endif
