/* SPDX-License-Identifier: MIT */
/*
 * ring-plan's input and output files (plan_files.h).
 */
#define _GNU_SOURCE
#include "plan/plan_files.h"
#include "plan/plan_job.h"

#include "base/file.h"
#include "base/log.h"
#include "base/ofile.h"
#include "base/stop.h"
#include "node/topo.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

/* The next name of a comma list (malloc'd, may be ""), *p past it; NULL
 * when out of memory. */
static char *next_name(const char **p)
{
	size_t len = strcspn(*p, ",");
	char *name = strndup(*p, len);

	*p += len;
	if (**p == ',')
		++*p;
	return name;
}

int pn_plan_model_add_topo_files(struct pn_plan_model *m, const char *list)
{
	const char *p = list;
	int ret = 0;

	while (*p && !ret) {
		char *path = next_name(&p), *buf;
		size_t n;

		if (!path)
			return pn_err(-ENOMEM, "out of memory");
		if (*path) {
			ret = pn_file_read(path, &buf, &n);
			if (!ret) {
				ret = pn_plan_model_add_topo(m, buf, n, path);
				free(buf);
			}
		}
		free(path);
	}
	if (!ret && !m->nnodes)
		return pn_err(-EINVAL, "--topo-file names no file");
	return ret;
}

int pn_plan_files_read(struct pn_plan_files *f, const char *list)
{
	const char *p = list, *text;
	int i;

	memset(f, 0, sizeof(*f));
	/*
	 * The arrays are sized once from the comma count: growing them with
	 * x = realloc(x, ...) lost them on failure, and the clean-up then read
	 * texts[i] through NULL.
	 */
	for (i = 1; *p; p++)
		i += *p == ',';
	f->texts = calloc((size_t)i, sizeof(*f->texts));
	f->names = calloc((size_t)i, sizeof(*f->names));
	f->lens = calloc((size_t)i, sizeof(*f->lens));
	if (!f->texts || !f->names || !f->lens)
		return pn_err(-ENOMEM, "out of memory");
	for (p = list; *p; f->n++) {
		int ret;

		f->names[f->n] = next_name(&p);
		if (!f->names[f->n])
			return pn_err(-ENOMEM, "out of memory");
		ret = pn_file_read(f->names[f->n], &f->texts[f->n], &f->lens[f->n]);
		if (ret) {
			f->n++;
			return ret;
		}
	}
	if (!f->n)
		return pn_err(-EINVAL, "--check needs a file");
	text = f->texts[0] + strspn(f->texts[0], " \t\r\n");
	f->xml = *text == '<';
	return 0;
}

void pn_plan_files_release(struct pn_plan_files *f)
{
	int i;

	for (i = 0; i < f->n; i++) {
		free(f->texts[i]);
		free(f->names[i]);
	}
	free(f->texts);
	free(f->names);
	free(f->lens);
	memset(f, 0, sizeof(*f));
}

int pn_plan_files_check(const struct pn_plan_files *f, struct pn_plan *plan,
			struct pn_plan_model *own, struct pn_plan_model *model,
			struct pn_plan_msgs *notes, struct pn_plan_msgs *viol)
{
	int ret;

	if (!f->xml && f->n > 1)
		return pn_err(-EINVAL, "--check takes several files only for NCCL graph XML, one "
				       "per node");
	if (!f->xml) {	/* the validator of allreduce-test --plan (plan_job.h) */
		ret = pn_plan_load_json(plan, own, model, f->texts[0], f->lens[0], viol);
		/* the file named, as --topo-file and --plan name theirs */
		return ret < 0 && ret != -ENOMEM ? pn_err_ctx(ret, "'%s'", f->names[0]) : ret;
	}
	ret = pn_plan_read_nccl(plan, model, (const char *const *)f->texts, f->lens,
				(const char *const *)f->names, f->n, notes, viol);
	return ret ? ret : pn_plan_validate(plan, viol);
}

/*
 * The patterns of a --nccl-graph name: 1 when one names the node (%h and
 * Slurm's %N: the host name, %n: the node index), 0 when none does (%%:
 * a %), -EINVAL at a % that is none of them, as Slurm's %j or %t, which
 * would otherwise be written as they are.
 */
static int graph_pattern(const char *pattern)
{
	const char *q = pattern;
	int per_node = 0;

	while ((q = strchr(q, '%'))) {
		if (!q[1] || !strchr("hNn%", q[1]))
			return pn_err(-EINVAL, "--nccl-graph '%s': '%.2s' is not a pattern (%%h or %%N: "
				      "the host name, %%n: the node index, %%%%: a %%)", pattern, q);
		per_node |= q[1] != '%';
		q += 2;
	}
	return per_node;
}

int pn_plan_graph_per_node(const char *pattern)
{
	return graph_pattern(pattern) > 0;
}

int pn_plan_graph_name(const char *pattern, const struct pn_plan_model *m, int i, char *path,
		       size_t len)
{
	const char *q, *add;
	char one[2] = "", num[16];
	size_t n = 0, k;
	int ret = graph_pattern(pattern);

	if (ret < 0)
		return ret;
	for (q = pattern; *q; q++) {
		if (q[0] == '%' && (q[1] == 'h' || q[1] == 'N')) {
			add = m->nodes[i].host;
			/* a / (another folder), a newline or an escape (a file
			 * name of two lines, one a listing sends to the terminal) */
			for (k = 0; add[k] && add[k] != '/' && (unsigned char)add[k] >= 0x20 &&
				    add[k] != 0x7f; k++)
				;
			if (add[k])
				return pn_err(-EINVAL, "--nccl-graph: the host name '%s' of node %d "
					      "cannot be part of a file name", add, i);
			q++;
		} else if (q[0] == '%' && q[1] == 'n') {
			snprintf(num, sizeof(num), "%d", i);
			add = num;
			q++;
		} else {
			one[0] = *q;
			q += q[0] == '%';	/* %%: one % */
			add = one;
		}
		k = strlen(add);
		if (n + k >= len)
			return pn_err(-ENAMETOOLONG, "--nccl-graph: the file name of node %d is too "
				      "long", i);
		memcpy(path + n, add, k);
		n += k;
	}
	path[n] = 0;
	return 0;
}

struct graph_file {
	char *name;
	int node;
};

static int graph_cmp(const void *a, const void *b)
{
	const struct graph_file *x = a, *y = b;
	int c = strcmp(x->name, y->name);

	return c ? c : x->node - y->node;
}

/* 0, or -EINVAL when graph file path is one of src's input files. */
static int graph_not_input(const char *path, const struct pn_plan_source *src)
{
	const char *p = src ? src->topo_files : NULL;
	int ret = 0;

	if (src && src->topo_xml && pn_ofile_same(path, src->topo_xml))
		return pn_err(-EINVAL, "--nccl-graph and --topo-xml name the same file '%s'", path);
	while (p && *p && !ret) {
		char *name = next_name(&p);

		if (!name)
			return pn_err(-ENOMEM, "out of memory");
		if (*name && pn_ofile_same(path, name))
			ret = pn_err(-EINVAL, "--nccl-graph and --topo-file name the same file '%s'",
				     path);
		free(name);
	}
	return ret;
}

/* A node's own file is a file: not standard output or error ("-", a host
 * named "-" or "out" in /dev/std%h), where the nodes' graphs would mix. */
static int graph_own_file(const char *path, int per_node, int node)
{
	if (per_node && pn_ofile_std(path))
		return pn_err(-EINVAL, "--nccl-graph: node %d's file '%s' is standard %s, not a file "
			      "of its own", node, path, pn_ofile_std(path) == 1 ? "output" : "error");
	return 0;
}

int pn_plan_graphs_check(const char *pattern, const struct pn_plan_model *m,
			 const struct pn_plan_source *src)
{
	int n = pn_plan_graph_per_node(pattern) ? m->nnodes : 1, i, ret = 0;
	struct graph_file *g = calloc((size_t)n, sizeof(*g));
	char path[4096];

	if (!g)
		return pn_err(-ENOMEM, "out of memory");
	for (i = 0; i < n && !ret; i++) {
		ret = pn_plan_graph_name(pattern, m, i, path, sizeof(path));
		if (!ret && !(g[i].name = strdup(path)))
			ret = pn_err(-ENOMEM, "out of memory");
		g[i].node = i;
	}
	if (!ret)
		qsort(g, (size_t)n, sizeof(*g), graph_cmp);
	for (i = 1; i < n && !ret; i++)
		if (!strcmp(g[i - 1].name, g[i].name))
			ret = pn_err(-EINVAL, "--nccl-graph: nodes %d and %d would both write '%s'",
				     g[i - 1].node, g[i].node, g[i].name);
	for (i = 0; i < n && !ret; i++)
		ret = graph_not_input(g[i].name, src);
	for (i = 0; i < n && !ret; i++)
		ret = graph_own_file(g[i].name, pn_plan_graph_per_node(pattern), g[i].node);
	for (i = 0; i < n && !ret; i++)
		ret = pn_ofile_check(g[i].name);
	for (i = 0; i < n; i++)
		free(g[i].name);
	free(g);
	return ret;
}

/*
 * One graph file, committed whole (the shared file, or standard output).
 * lock not NULL (a staged file): the file is locked (flock, exclusive)
 * before it has its name, and *lock keeps the lock until it is renamed or
 * removed, so that no other run's sweep takes it for a dead run's.
 */
static int graph_write_one(const char *path, const struct pn_plan *p, int node, int *lock)
{
	struct pn_ofile *of;
	int ret = pn_ofile_open(&of, path, PN_OFILE_SYNC), fd;

	if (ret)
		return ret;
	if (lock && !pn_ofile_inplace(of)) {
		fd = fileno(pn_ofile_file(of));
		/* a file system without locks: the sweep leaves its files alone */
		if (flock(fd, LOCK_EX | LOCK_NB) == 0)
			*lock = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	}
	ret = pn_plan_write_nccl(p, node, pn_ofile_file(of));
	if (ret) {
		pn_ofile_abort(of);
		return ret;
	}
	return pn_ofile_commit(of);
}

#define STAGE_BASE 200	/* bytes of NAME in a staged file's name */

/* Node i's staged file beside final: ".NAME.PID-I~" (hidden, unique to the
 * run and the node, within NAME_MAX). */
static char *stage_name(const char *final, int i)
{
	const char *slash = strrchr(final, '/'), *base = slash ? slash + 1 : final;
	int dlen = slash ? (int)(slash - final) + 1 : 0;
	size_t n = strlen(final) + 48;
	char *s = malloc(n);

	if (s)
		snprintf(s, n, "%.*s.%.*s.%ld-%d~", dlen, final, STAGE_BASE, base, (long)getpid(),
			 i);
	return s;
}

/* digits without a leading zero (but "0"), backwards from end (exclusive)
 * to no further than start: where they begin, NULL when there are none */
static const char *digits_back(const char *start, const char *end)
{
	const char *p = end;

	while (p > start && p[-1] >= '0' && p[-1] <= '9')
		p--;
	if (p == end || end - p > 9 || (p[0] == '0' && end - p > 1))
		return NULL;
	return p;
}

int pn_plan_stage_parse(const char *name, char *base, size_t blen, long *pid)
{
	size_t n = strlen(name);
	const char *i, *d;

	if (n < 6 || name[0] != '.' || name[n - 1] != '~')
		return 0;
	i = digits_back(name + 1, name + n - 1);		/* I */
	if (!i || i[-1] != '-')
		return 0;
	d = digits_back(name + 1, i - 1);			/* PID */
	if (!d || d[-1] != '.' || d - 1 <= name + 1 || (size_t)(d - 2 - name) >= blen)
		return 0;
	*pid = strtol(d, NULL, 10);
	if (*pid <= 0)
		return 0;
	memcpy(base, name + 1, (size_t)(d - 2 - name));
	base[d - 2 - name] = 0;
	return 1;
}

/*
 * A staged file of a run that died between writing and renaming (killed,
 * its machine down): the process of its PID is gone (or is this one, which
 * has staged nothing yet), and no one holds its lock (a run of another PID
 * namespace or host sharing the directory holds it).  Only a regular file,
 * never through a link, and only this entry of this directory is removed.
 */
static void stage_remove_stale(int dfd, const char *name, long pid)
{
	struct stat a, b;
	int fd;

	if (pid != (long)getpid() && (kill((pid_t)pid, 0) == 0 || errno != ESRCH))
		return;
	if (fstatat(dfd, name, &a, AT_SYMLINK_NOFOLLOW) || !S_ISREG(a.st_mode))
		return;
	fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return;
	if (!fstat(fd, &b) && S_ISREG(b.st_mode) && a.st_dev == b.st_dev && a.st_ino == b.st_ino &&
	    !flock(fd, LOCK_SH | LOCK_NB))
		unlinkat(dfd, name, 0);
	close(fd);
}

/* "DIR\0NAME" keys: by directory, then by name */
static const char *key_name(const char *key)
{
	return key + strlen(key) + 1;
}

static int key_cmp(const void *a, const void *b)
{
	const char *x = *(char *const *)a, *y = *(char *const *)b;
	int c = strcmp(x, y);

	return c ? c : strcmp(key_name(x), key_name(y));
}

/* Is name among the names of keys[lo, hi) (one directory's, sorted)? */
static int key_has(char *const *keys, int lo, int hi, const char *name)
{
	while (lo < hi) {
		int mid = lo + (hi - lo) / 2, c = strcmp(key_name(keys[mid]), name);

		if (!c)
			return 1;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return 0;
}

/*
 * Before staging: the staged files (".NAME.PID-I~") that dead runs left
 * beside the graph files final[0..n), NAME one of theirs, are removed
 * (stage_remove_stale).  Best effort: what cannot be read stays.
 */
static void stage_sweep(char *const *final, int n)
{
	char **keys = n > 0 ? calloc((size_t)n, sizeof(*keys)) : NULL, base[STAGE_BASE + 1];
	int i, j, dfd;
	long pid;

	for (i = 0; keys && i < n; i++) {
		const char *slash = strrchr(final[i], '/'), *dir = ".", *b = final[i];
		size_t dlen = 1;

		if (slash) {
			dir = final[i];
			dlen = slash == final[i] ? 1 : (size_t)(slash - final[i]);
			b = slash + 1;
		}
		/* "DIR\0NAME" (NAME as staged: cut as stage_name cuts it) */
		keys[i] = malloc(dlen + STAGE_BASE + 2);
		if (!keys[i])
			goto out;
		memcpy(keys[i], dir, dlen);
		keys[i][dlen] = 0;
		snprintf(keys[i] + dlen + 1, STAGE_BASE + 1, "%s", b);
	}
	if (!keys)
		return;
	qsort(keys, (size_t)n, sizeof(*keys), key_cmp);
	for (i = 0; i < n; i = j) {
		DIR *d;
		struct dirent *e;

		for (j = i + 1; j < n && !strcmp(keys[i], keys[j]); j++)
			;
		dfd = open(keys[i], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		d = dfd < 0 ? NULL : fdopendir(dfd);
		if (!d) {
			if (dfd >= 0)
				close(dfd);
			continue;
		}
		while ((e = readdir(d)))
			if (pn_plan_stage_parse(e->d_name, base, sizeof(base), &pid) &&
			    key_has(keys, i, j, base))
				stage_remove_stale(dirfd(d), e->d_name, pid);
		closedir(d);
	}
out:
	for (i = 0; keys && i < n; i++)
		free(keys[i]);
	free(keys);
}

/* The staged files: removed (a failure) or renamed over their names. */
struct graph_stage {
	int n, staged;		/* files, of them staged */
	char **final, **stage;
	int *lock;		/* their locks (-1: none) */
};

static void stage_drop(struct graph_stage *g, int from)
{
	int i;

	for (i = from; i < g->staged; i++)
		unlink(g->stage[i]);
	for (i = 0; g->final && g->stage && i < g->n; i++) {
		free(g->final[i]);
		free(g->stage[i]);
	}
	for (i = 0; g->lock && i < g->n; i++)
		if (g->lock[i] >= 0)
			close(g->lock[i]);
	free(g->final);
	free(g->stage);
	free(g->lock);
}

/* The staged files a stop (SIGTERM, SIGINT, SIGHUP: Ctrl-C, timeout(1))
 * removes before the process ends, so that none is left behind. */
static struct graph_stage *stopping;

static void graphs_stopped(void *unused, int sig)
{
	int i;

	(void)unused;
	(void)sig;
	/* the write under way ends first; a file system that hangs holds the
	 * stop 3 s at most, then SIGALRM ends the process */
	alarm(3);
	if (pn_stop_hold(2))
		for (i = 0; stopping && i < stopping->staged; i++)
			unlink(stopping->stage[i]);
	alarm(0);
}

/* Every name still absent or a regular file (never replace anything else),
 * and each staged file given the mode (root: the owner) of the one it
 * replaces, before the first rename. */
static int stage_ready(struct graph_stage *g)
{
	struct stat st;
	int i, fd, ret = 0;

	for (i = 0; i < g->n; i++) {
		if (lstat(g->final[i], &st))
			continue;
		if (!S_ISREG(st.st_mode))
			return pn_err(S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL,
				      "refusing to write '%s': it is %s, not a regular file; no "
				      "graph file was replaced", g->final[i], pn_file_kind(st.st_mode));
		fd = open(g->stage[i], O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0 || (!geteuid() && fchown(fd, st.st_uid, st.st_gid)) ||
		    fchmod(fd, st.st_mode & 07777))
			ret = pn_err(-errno, "cannot write '%s': %s; no graph file was replaced",
				     g->final[i], strerror(errno));
		if (fd >= 0)
			close(fd);
		if (ret)
			return ret;
	}
	return 0;
}

/*
 * One file per node, all or nothing: NCCL on every node must load the same
 * plan.  Every file is written whole beside its name first (synced); only
 * when all are there are they renamed over their names.  A failure (a full
 * disk, a directory in the way) leaves every old file as it was.
 */
int pn_plan_graphs_write(const char *pattern, const struct pn_plan *p)
{
	const struct pn_plan_model *m = p->model;
	struct graph_stage g = { m->nnodes, 0, NULL, NULL, NULL };
	char path[4096];
	int i, ret = 0, renamed = 0;

	if (!pn_plan_graph_per_node(pattern)) {
		ret = pn_plan_graph_name(pattern, m, 0, path, sizeof(path));
		return ret ? ret : graph_write_one(path, p, -1, NULL);
	}
	g.final = calloc((size_t)g.n + 1, sizeof(char *));
	g.stage = calloc((size_t)g.n + 1, sizeof(char *));
	g.lock = malloc(((size_t)g.n + 1) * sizeof(int));
	if (!g.final || !g.stage || !g.lock)
		ret = pn_err(-ENOMEM, "out of memory");
	for (i = 0; g.lock && i < g.n; i++)
		g.lock[i] = -1;
	for (i = 0; i < g.n && !ret; i++) {
		ret = pn_plan_graph_name(pattern, m, i, path, sizeof(path));
		if (!ret && (!(g.final[i] = strdup(path)) || !(g.stage[i] = stage_name(path, i))))
			ret = pn_err(-ENOMEM, "out of memory");
		if (!ret)
			ret = graph_own_file(path, 1, i);
	}
	if (!ret) {
		stage_sweep(g.final, g.n);
		stopping = &g;
		pn_stop_start(graphs_stopped, NULL);	/* failing: the default actions */
	}
	for (i = 0; i < g.n && !ret; i++) {
		pn_stop_hold(-1);	/* a stop waits for the file under way */
		ret = graph_write_one(g.stage[i], p, i, &g.lock[i]);
		g.staged += !ret;
		pn_stop_release(0);
		if (ret)
			ret = pn_err(ret, "cannot write '%s' (node %d): %s; no graph file was "
				     "replaced", g.final[i], i, strerror(-ret));
	}
	pn_stop_hold(-1);	/* ... and for every rename: all or none */
	if (!ret)
		ret = stage_ready(&g);
	for (; renamed < g.n && !ret; renamed++)
		if (rename(g.stage[renamed], g.final[renamed]))
			ret = pn_err(-errno, "cannot rename onto '%s': %s; %d of %d graph files "
				     "were replaced", g.final[renamed], strerror(errno), renamed, g.n);
	/* what was not renamed goes (a failed rename counted one too many) */
	stage_drop(&g, ret && renamed ? renamed - 1 : renamed);
	stopping = NULL;
	pn_stop_release(0);
	return ret;
}

int pn_plan_model_load(struct pn_plan_model *m, const struct pn_plan_source *src, int need)
{
	int synth = src->nodes || src->gpus || src->nics >= 0 || src->gpus_per_nic ||
		    src->nvlinks >= 0 || src->nic_rate;
	int ret;

	if ((synth != 0) + (src->topo_files != NULL) + (src->topo_xml != NULL) > 1)
		return pn_err(-EINVAL, "give one of --topo-file, --topo-xml or a synthetic shape "
				       "(--nodes ...), not both");
	if (synth && !src->nodes)
		return pn_err(-EINVAL, "a synthetic cluster needs --nodes N");
	if (synth) {
		int g = src->gpus ? src->gpus : 8, per = src->gpus_per_nic;
		/* NIC i is near GPUs i*M..i*M+M-1 (--gpus-per-nic M): G/M NICs,
		 * rounded up, by default; more would be near no GPU */
		int want = per > 0 ? (g + per - 1) / per : g;
		struct pn_plan_synth s = {
			.nodes = src->nodes,
			.gpus = g,
			.nics = src->nics >= 0 ? src->nics : want,
			.gpus_per_nic = src->gpus_per_nic,
			.rate_gbps = src->nic_rate ? src->nic_rate : 400,
			.nvlinks = src->nvlinks >= 0 ? src->nvlinks : 18,
			.hosts = src->hosts,
		};
		char nics[32];

		if (per > 0 && per <= g && s.nics > want) {
			if (s.nics - 1 > want)
				snprintf(nics, sizeof(nics), "NICs %d-%d", want, s.nics - 1);
			else
				snprintf(nics, sizeof(nics), "NIC%d", want);
			return pn_err(-EINVAL, "--gpus-per-nic %d and --nics %d leave %s near no GPU "
				      "(%d GPU%s need%s %d NIC%s)", per, s.nics, nics, g, PN_PLAN_S(g),
				      g == 1 ? "s" : "", want, PN_PLAN_S(want));
		}
		ret = pn_plan_model_synthetic(m, &s);
	} else if (src->topo_files) {
		ret = pn_plan_model_add_topo_files(m, src->topo_files);
		if (!ret && src->hosts)
			ret = pn_plan_model_order_hosts(m, src->hosts);
	} else if (need || src->topo_xml) {
		/* this node: live (or the --sysfs-root tree), or an hwloc XML file */
		struct pn_topo t;
		struct pn_topo_cfg cfg = { .xml_file = src->topo_xml };

		memset(&t, 0, sizeof(t));
		ret = pn_topo_load(&t, &cfg);
		if (!ret)
			ret = pn_plan_model_add_topology(m, &t);
		pn_topo_release(&t);
		if (!ret && src->hosts)
			ret = pn_plan_model_order_hosts(m, src->hosts);
	} else if (src->rails || src->hosts) {
		/* --check without a model checks the plan's own: they would change nothing */
		return pn_err(-EINVAL, "%s shapes a model: with --check give one (--nodes, "
				       "--topo-file or --topo-xml), or leave it out",
			      src->rails ? "--rails" : "--hosts");
	} else {
		return 0;
	}
	if (!ret && src->rails)
		ret = pn_plan_model_set_rails(m, src->rails);
	return ret ? ret : pn_plan_model_finish(m);
}
