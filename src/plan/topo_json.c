/* SPDX-License-Identifier: MIT */
/*
 * The node topology as a document and in the planner: the document `penny
 * topo --json` and --save write (its text is cmd/topo.c's), read back
 * into the ring-plan model (--topo-file), and the live topology
 * (node/topo.h) into the model.  Here, not in node/, because the reader
 * fills the plan's model (plan may use node; node may not use plan).
 */
#define _GNU_SOURCE
#include "plan/plan.h"
#include "plan/topo_json.h"

#include "base/log.h"
#include "base/minijson.h"
#include "base/ofile.h"
#include "base/out.h"
#include "base/util.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------- topo: write */

static void print_dev_common(struct pn_out *o, const struct pn_topo_dev *d)
{
	char hex[16];

	pn_out_str(o, PN_JSON, "name", NULL, d->name);
	pn_out_str(o, PN_JSON, "pci_busid", NULL, d->pci_busid);
	snprintf(hex, sizeof(hex), "0x%04x", d->vendor_id);
	pn_out_str(o, PN_JSON, "vendor", NULL, hex);
	snprintf(hex, sizeof(hex), "0x%04x", d->device_id);
	pn_out_str(o, PN_JSON, "device_id", NULL, hex);
	pn_out_int(o, PN_JSON, "numa", NULL, d->numa);
	pn_out_str(o, PN_JSON, "cpus", NULL, d->cpus ? d->cpus : "");
}

static void print_json_devs(struct pn_out *o, const struct pn_topo *t)
{
	char hex[16];
	int i, p;

	pn_out_open_array(o, "gpus");
	for (i = 0; i < t->ngpus; i++) {
		const struct pn_topo_dev *d = &t->devs[i];

		pn_out_open_object(o, NULL);
		pn_out_str(o, PN_JSON, "name", NULL, d->name);
		pn_out_int(o, PN_JSON, "index", NULL, i);
		pn_out_str(o, PN_JSON, "pci_busid", NULL, d->pci_busid);
		snprintf(hex, sizeof(hex), "0x%04x", d->vendor_id);
		pn_out_str(o, PN_JSON, "vendor", NULL, hex);
		snprintf(hex, sizeof(hex), "0x%04x", d->device_id);
		pn_out_str(o, PN_JSON, "device", NULL, hex);
		pn_out_int(o, PN_JSON, "numa", NULL, d->numa);
		pn_out_str(o, PN_JSON, "cpus", NULL, d->cpus ? d->cpus : "");
		pn_out_close_object(o);
	}
	pn_out_close_array(o);
	pn_out_open_array(o, "nics");
	for (i = t->ngpus; i < t->ngpus + t->nnics; i++) {
		const struct pn_topo_dev *d = &t->devs[i];

		pn_out_open_object(o, NULL);
		print_dev_common(o, d);
		pn_out_str(o, PN_JSON, "device", NULL, d->nic.name);
		pn_out_int(o, PN_JSON, "index", NULL, i - t->ngpus);
		if (d->nic.parent[0])
			pn_out_str(o, PN_JSON, "parent", NULL, d->nic.parent);
		pn_out_open_array(o, "ports");
		for (p = 0; p < d->nic.nports; p++) {
			const struct pn_port *pt = &d->nic.ports[p];

			pn_out_open_object(o, NULL);
			pn_out_int(o, PN_JSON, "port", NULL, pt->port);
			pn_out_str(o, PN_JSON, "state", NULL, pt->state_name);
			pn_out_str(o, PN_JSON, "phys_state", NULL, pt->phys_state_name);
			pn_out_float(o, PN_JSON, "rate_gbps", NULL, pt->rate_gbps);
			pn_out_str(o, PN_JSON, "link_layer", NULL, pt->link_layer);
			pn_out_str(o, PN_JSON, "netdev", NULL, pt->netdev);
			pn_out_int(o, PN_JSON, "gid_index", NULL, pt->gid_index);
			pn_out_str(o, PN_JSON, "gid", NULL, pt->gid);
			pn_out_str(o, PN_JSON, "gid_type", NULL, pt->gid_type);
			pn_out_int(o, PN_JSON, "lid", NULL, pt->lid);
			pn_out_close_object(o);
		}
		pn_out_close_array(o);
		pn_out_close_object(o);
	}
	pn_out_close_array(o);
}

static void print_matrix(struct pn_out *o, const struct pn_topo *t, int pcie)
{
	int n = t->ngpus + t->nnics, i, j;
	char cls[16];

	pn_out_open_object(o, "matrix");
	for (i = 0; i < n; i++) {
		pn_out_open_object(o, t->devs[i].name);
		for (j = 0; j < n; j++) {
			int links, c = pn_topo_path(t, i, j, pcie, &links);

			pn_path_name(c, links, cls, sizeof(cls));
			pn_out_str(o, PN_JSON, t->devs[j].name, NULL, cls);
		}
		pn_out_close_object(o);
	}
	pn_out_close_object(o);
}

static void print_rails(struct pn_out *o, const struct pn_topo *t)
{
	int *nics = calloc((size_t)t->nnics + 1, sizeof(*nics));
	char cls[16];
	int g, k, n, c;

	pn_out_open_array(o, "rails");
	for (g = 0; nics && t->nnics && g < t->ngpus; g++) {
		n = pn_topo_rail(t, g, nics, &c);
		pn_path_name(c, 0, cls, sizeof(cls));
		pn_out_open_object(o, NULL);
		pn_out_str(o, PN_JSON, "gpu", NULL, t->devs[g].name);
		pn_out_open_array(o, "nics");
		for (k = 0; k < n; k++)
			pn_out_str(o, PN_JSON, NULL, NULL, t->devs[nics[k]].name);
		pn_out_close_array(o);
		pn_out_str(o, PN_JSON, "class", NULL, cls);
		pn_out_close_object(o);
	}
	pn_out_close_array(o);
	free(nics);
}

void pn_topo_write(struct pn_out *o, const struct pn_topo *t, int pcie, char *const *viol, int nv,
		   int checks)
{
	int i;

	pn_out_open_object(o, NULL);
	pn_out_str(o, PN_JSON, "host", NULL, t->host);
	pn_out_str(o, PN_JSON, "source", NULL, t->source);
	pn_out_str(o, PN_JSON, "nvlink_source", NULL, t->nvlink_source);
	pn_out_bool(o, PN_JSON, "pcie_only", NULL, pcie);
	print_json_devs(o, t);
	print_matrix(o, t, pcie);
	print_rails(o, t);
	if (checks) {
		pn_out_open_array(o, "violations");
		for (i = 0; i < nv; i++)
			pn_out_str(o, PN_JSON, NULL, NULL, viol[i]);
		pn_out_close_array(o);
	}
	pn_out_close_object(o);
}

int pn_topo_save(struct pn_ofile *of, const struct pn_topo *t, int pcie, char *const *viol, int nv,
		 int checks)
{
	FILE *f = pn_ofile_file(of);
	struct pn_out *o = pn_out_new(f, 1);
	int e;

	if (!o) {
		pn_ofile_abort(of);
		return pn_err(-ENOMEM, "out of memory");
	}
	/* the cause is the errno of a write that failed here: whatever an
	 * earlier call left (the sysfs walk's ENOENT) must not be named */
	errno = 0;
	pn_topo_write(o, t, pcie, viol, nv, checks);
	e = fflush(f) || ferror(f) ? (errno ? errno : EIO) : 0;
	pn_out_free(o);
	if (e) {
		pn_err(-e, "write error on '%s': %s", pn_ofile_path(of), strerror(e));
		pn_ofile_abort(of); /* says nothing */
		return -e;
	}
	return pn_ofile_commit(of);
}

/* ------------------------------------------------------------ topo: read  */

static int json_err(const char *file, const char *fmt, const char *what, unsigned line)
{
	char msg[256];

	snprintf(msg, sizeof(msg), fmt, what);
	return pn_err(-EINVAL, "'%s' line %u: %s", file, line, msg);
}

int pn_plan_gpu_by_name(const struct pn_plan_layout *l, const char *name)
{
	int g;

	for (g = 0; g < l->ngpus; g++)
		if (!strcmp(l->gpus[g].name, name))
			return g;
	return -1;
}

static int cmp_gpu_index(const void *a, const void *b)
{
	const struct pn_plan_gpu *x = a, *y = b;

	return x->index < y->index ? -1 : x->index > y->index;
}

int pn_plan_port_active(const char *state)
{
	size_t n = strlen(state);

	/* "ACTIVE" or sysfs style "4: ACTIVE" */
	return n >= 6 && !strcmp(state + n - 6, "ACTIVE");
}

/* Class from a matrix row; missing -> UNKNOWN (counted). */
int pn_plan_matrix_class(const struct pn_jval *row, const char *key, const char *key2,
			 struct pn_plan_path *out, int *missing, const char *file)
{
	const struct pn_jval *v = pn_json_get(row, key);

	if (!v && key2)
		v = pn_json_get(row, key2);
	if (!v) {
		out->cls = PN_PLAN_PATH_UNKNOWN;
		out->nv = 0;
		(*missing)++;
		return 0;
	}
	if (!pn_json_str(v) || pn_plan_path_parse(pn_json_str(v), out))
		return pn_err(-EINVAL, "'%s' line %u: path class for '%s' must be X, NV<n>, PIX, "
				       "PXB, PHB, NODE or SYS",
			      file, v->line, key);
	return 0;
}

/* The GPUs of a topology file: names, indexes (sorted), none twice. */
static int tj_gpus(struct pn_plan_layout *l, const struct pn_jval *root, const char *host,
		   const char *file)
{
	const struct pn_jval *gpus, *v;
	unsigned i, j;
	int ret;

	gpus = pn_json_get(root, "gpus");
	if (!gpus || gpus->type != PN_JSON_ARRAY) {
		ret = pn_err(-EINVAL, "'%s': \"gpus\" must be an array", file);
		return ret;
	}
	if (gpus->n == 0) {
		ret = pn_err(-EINVAL, "'%s': %s has no GPU", file, host);
		return ret;
	}
	if (gpus->n > PN_PLAN_MAX_GPUS) {
		ret = pn_err(-EINVAL, "'%s': %u GPUs, at most %d per node", file, gpus->n,
			     PN_PLAN_MAX_GPUS);
		return ret;
	}
	l->ngpus = (int)gpus->n;
	for (i = 0; i < gpus->n; i++) {
		const struct pn_jval *gv = pn_json_at(gpus, i);
		const char *name = pn_json_str(pn_json_get(gv, "name"));
		long long idx = i;

		if (!name || !*name || strlen(name) >= sizeof(l->gpus[0].name)) {
			ret = json_err(file, "a GPU needs a \"name\" (under 16 bytes)%s", "", gv->line);
			return ret;
		}
		v = pn_json_get(gv, "index");
		if (v && (pn_json_int(v, &idx) || idx < 0 || idx > 1023)) {
			ret = json_err(file, "GPU '%s': \"index\" must be an integer 0-1023", name,
				       v->line);
			return ret;
		}
		snprintf(l->gpus[i].name, sizeof(l->gpus[i].name), "%s", name);
		l->gpus[i].index = (int)idx;
	}
	qsort(l->gpus, (size_t)l->ngpus, sizeof(l->gpus[0]), cmp_gpu_index);
	for (i = 1; i < (unsigned)l->ngpus; i++) {
		if (l->gpus[i].index == l->gpus[i - 1].index) {
			ret = pn_err(-EINVAL, "'%s': GPUs '%s' and '%s' have the same index %d", file,
				     l->gpus[i - 1].name, l->gpus[i].name, l->gpus[i].index);
			return ret;
		}
	}
	for (i = 0; i < (unsigned)l->ngpus; i++)
		for (j = i + 1; j < (unsigned)l->ngpus; j++)
			if (!strcmp(l->gpus[i].name, l->gpus[j].name)) {
				ret = pn_err(-EINVAL, "'%s': two GPUs named '%s'", file,
					     l->gpus[i].name);
				return ret;
			}
	return 0;
}

/*
 * The NICs of a topology file: one entry per port (a NIC without ports is
 * one unused entry); first[i] and count[i] say where topo NIC i's are.
 */
static int tj_nics(struct pn_plan_model *m, struct pn_plan_layout *l, const struct pn_jval *nics,
		   const char *host, const char *file, int *first, int *count)
{
	const struct pn_jval *v;
	unsigned i, j, k;
	int ret;

	if (nics && nics->type != PN_JSON_ARRAY) {
		ret = pn_err(-EINVAL, "'%s': \"nics\" must be an array", file);
		return ret;
	}
	if (pn_json_len(nics) > PN_PLAN_MAX_NICS) {
		ret = pn_err(-EINVAL, "'%s': %u NICs, at most %d per node", file, pn_json_len(nics),
			     PN_PLAN_MAX_NICS);
		return ret;
	}
	/* count port entries */
	k = 0;
	for (i = 0; i < pn_json_len(nics); i++) {
		unsigned np = pn_json_len(pn_json_get(pn_json_at(nics, i), "ports"));

		k += np ? np : 1;
	}
	if (k > PN_PLAN_MAX_NICS) {
		ret = pn_err(-EINVAL, "'%s': %u NIC ports, at most %d per node", file, k,
			     PN_PLAN_MAX_NICS);
		return ret;
	}
	l->nnics = 0;
	if (k) {
		l->nics = calloc(k, sizeof(*l->nics));
		l->gn = calloc((size_t)l->ngpus * k, sizeof(*l->gn));
		if (!l->nics || !l->gn) {
			ret = pn_err(-ENOMEM, "out of memory");
			return ret;
		}
	}
	for (i = 0; i < pn_json_len(nics); i++) {
		const struct pn_jval *nv = pn_json_at(nics, i), *ports = pn_json_get(nv, "ports");
		const char *label = pn_json_str(pn_json_get(nv, "name"));
		const char *dev = pn_json_str(pn_json_get(nv, "device"));
		unsigned np = pn_json_len(ports), p;

		if (!dev || !*dev || strlen(dev) >= PN_PLAN_NAME - 4) {
			ret = json_err(file, "a NIC needs a \"device\" name%s", "", nv->line);
			return ret;
		}
		if (!label)
			label = dev;
		if (strlen(label) >= sizeof(l->nics[0].label)) {
			ret = json_err(file, "NIC name '%s' is too long", label, nv->line);
			return ret;
		}
		for (j = 0; j < i; j++) {
			const char *ol = pn_json_str(pn_json_get(pn_json_at(nics, j), "name"));
			const char *od = pn_json_str(pn_json_get(pn_json_at(nics, j), "device"));

			if ((ol && !strcmp(ol, label)) || (od && !strcmp(od, dev))) {
				ret = pn_err(-EINVAL, "'%s': NIC '%s' (%s) is listed twice", file, label,
					     dev);
				return ret;
			}
		}
		first[i] = l->nnics;
		count[i] = np ? (int)np : 1;
		if (!np)
			pn_plan_msg(&m->notes, "%s: %s (%s) lists no ports: not used", host, label, dev);
		for (p = 0; p < (np ? np : 1); p++) {
			struct pn_plan_nic *c = &l->nics[l->nnics];
			const struct pn_jval *pv = pn_json_at(ports, p);
			long long port = 1;
			double rate = 0;
			const char *state = np ? pn_json_str(pn_json_get(pv, "state")) : "NONE";

			v = pn_json_get(pv, "port");
			if (v && (pn_json_int(v, &port) || port < 1 || port > 255)) {
				ret = json_err(file, "%s: \"port\" must be an integer 1-255", dev, v->line);
				return ret;
			}
			v = pn_json_get(pv, "rate_gbps");
			if (v && (pn_json_num(v, &rate) || rate < 0)) {
				ret = json_err(file, "%s: \"rate_gbps\" must be a number >= 0", dev,
					       v->line);
				return ret;
			}
			if (!state)
				state = "UNKNOWN";
			snprintf(c->device, sizeof(c->device), "%s", dev);
			if (np > 1)
				snprintf(c->name, sizeof(c->name), "%s:%lld", dev, port);
			else
				snprintf(c->name, sizeof(c->name), "%s", dev);
			snprintf(c->label, sizeof(c->label), "%s", label);
			snprintf(c->state, sizeof(c->state), "%s", state);
			c->port = (int)port;
			c->rate_gbps = rate;
			c->active = np && pn_plan_port_active(state);
			c->rail = l->nnics;
			c->netdev = -1;
			if (c->active && rate <= 0)
				pn_plan_msg(&m->notes, "%s: %s has no rate: its links count as 0 Gb/s",
					    host, c->name);
			l->nnics++;
		}
	}
	return 0;
}

/* The path matrix of a topology file: GPU to GPU and GPU to each NIC's ports. */
static int tj_matrix(struct pn_plan_model *m, struct pn_plan_layout *l, const struct pn_jval *root,
		     const struct pn_jval *nics, const int *first, const int *count,
		     const char *host, const char *file)
{
	const struct pn_jval *matrix;
	unsigned i, j;
	int ret, missing = 0, asym = 0;

	matrix = pn_json_get(root, "matrix");
	if (matrix && matrix->type != PN_JSON_OBJECT) {
		ret = pn_err(-EINVAL, "'%s': \"matrix\" must be an object", file);
		return ret;
	}
	for (i = 0; i < (unsigned)l->ngpus; i++) {
		const struct pn_jval *row = pn_json_get(matrix, l->gpus[i].name);

		for (j = 0; j < (unsigned)l->ngpus; j++) {
			if (i == j) {
				l->gg[i][j].cls = PN_PATH_X;
				continue;
			}
			ret = pn_plan_matrix_class(row, l->gpus[j].name, NULL, &l->gg[i][j], &missing, file);
			if (ret)
				return ret;
		}
		for (j = 0; j < pn_json_len(nics); j++) {
			const struct pn_jval *nv = pn_json_at(nics, j);
			const char *dev = pn_json_str(pn_json_get(nv, "device"));
			const char *label = pn_json_str(pn_json_get(nv, "name"));
			struct pn_plan_path pth;
			int q;

			ret = pn_plan_matrix_class(row, label ? label : dev, dev, &pth, &missing, file);
			if (ret)
				return ret;
			for (q = 0; q < count[j]; q++)
				l->gn[i * l->nnics + first[j] + q] = pth;
		}
	}
	/* an asymmetric matrix counts the worse direction both ways */
	for (i = 0; i < (unsigned)l->ngpus; i++)
		for (j = i + 1; j < (unsigned)l->ngpus; j++)
			if (memcmp(&l->gg[i][j], &l->gg[j][i], sizeof(l->gg[i][j]))) {
				if (pn_plan_path_score(l->gg[i][j]) > pn_plan_path_score(l->gg[j][i]))
					l->gg[j][i] = l->gg[i][j];
				else
					l->gg[i][j] = l->gg[j][i];
				asym++;
			}
	if (missing) {
		pn_plan_msg(&m->notes, "%s: the matrix lacks %d path class%s; %s as unknown "
				       "(worst)",
			    host, missing, missing == 1 ? "" : "es", missing == 1 ? "it counts" : "they count");
	}
	if (asym)
		pn_plan_msg(&m->notes, "%s: %d GPU pair%s different classes each way; the worse "
				       "one is used",
			    host, asym, asym == 1 ? " has" : "s have");
	return 0;
}

/* Which NICs each GPU is near: the file's "rails", else the best path class. */
static int tj_rails(struct pn_plan_layout *l, const struct pn_jval *root, const char *file)
{
	const struct pn_jval *rails;
	unsigned i, j, k;
	int ret;

	rails = pn_json_get(root, "rails");
	if (rails && rails->type != PN_JSON_ARRAY) {
		ret = pn_err(-EINVAL, "'%s': \"rails\" must be an array", file);
		return ret;
	}
	for (i = 0; i < pn_json_len(rails); i++) {
		const struct pn_jval *rv = pn_json_at(rails, i), *list = pn_json_get(rv, "nics");
		const char *gname = pn_json_str(pn_json_get(rv, "gpu"));
		int g = gname ? pn_plan_gpu_by_name(l, gname) : -1;

		if (g < 0) {
			ret = json_err(file, "rails: unknown GPU '%s'", gname ? gname : "(none)",
				       rv->line);
			return ret;
		}
		if (list && list->type != PN_JSON_ARRAY) {
			ret = json_err(file, "rails: \"nics\" of %s must be an array", gname, rv->line);
			return ret;
		}
		for (j = 0; j < pn_json_len(list); j++) {
			const char *nn = pn_json_str(pn_json_at(list, j));
			int hit = 0;

			for (k = 0; nn && k < (unsigned)l->nnics; k++)
				if (!strcmp(l->nics[k].label, nn) || !strcmp(l->nics[k].device, nn)) {
					l->gpus[g].near |= 1ull << k;
					hit = 1;
				}
			if (!hit) {
				ret = json_err(file, "rails: %s names an unknown NIC", gname, rv->line);
				return ret;
			}
		}
	}
	if (!rails) {
		/* nearest NIC by path class, ties by index (like penny topo) */
		for (i = 0; i < (unsigned)l->ngpus; i++) {
			int best = INT_MAX, bn = -1;

			for (k = 0; k < (unsigned)l->nnics; k++) {
				int sc = pn_plan_path_score(l->gn[i * l->nnics + k]);

				if (sc < best && sc < 600) {
					best = sc;
					bn = (int)k;
				}
			}
			if (bn >= 0) {
				for (k = 0; k < (unsigned)l->nnics; k++)
					if (!strcmp(l->nics[k].label, l->nics[bn].label))
						l->gpus[i].near |= 1ull << k;
			}
		}
	}
	return 0;
}

int pn_plan_model_add_topo(struct pn_plan_model *m, const char *text, size_t len,
			   const char *file)
{
	struct pn_json_doc doc;
	const struct pn_jval *root, *v, *nics;
	struct pn_plan_layout l;
	char host[PN_PLAN_HOST];
	long long ver;
	int ret;
	/* topo NIC i -> first port entry, number of entries */
	int first[PN_PLAN_MAX_NICS], count[PN_PLAN_MAX_NICS];

	memset(&l, 0, sizeof(l));
	ret = pn_json_parse(&doc, text, len);
	if (ret)
		return pn_err_ctx(ret, "'%s'", file);
	root = doc.root;
	if (root->type != PN_JSON_OBJECT) {
		ret = json_err(file, "a topology file is a JSON object%s", "", root->line);
		goto out;
	}
	if (pn_json_get(root, "rings")) {
		ret = pn_err(-EINVAL, "'%s' is a ring plan, not a topology file (see --check)", file);
		goto out;
	}
	v = pn_json_get(root, "version");
	if (pn_json_int(v, &ver) || ver != 1) {
		ret = pn_err(-EINVAL, "'%s': \"version\" must be 1 (a `penny topo --save` file)", file);
		goto out;
	}
	v = pn_json_get(root, "host");
	if (!pn_json_str(v) || !*pn_json_str(v) || strlen(pn_json_str(v)) >= sizeof(host)) {
		ret = pn_err(-EINVAL, "'%s': \"host\" must be a non-empty string under %zu bytes",
			     file, sizeof(host));
		goto out;
	}
	snprintf(host, sizeof(host), "%s", pn_json_str(v));

	ret = tj_gpus(&l, root, host, file);
	if (ret)
		goto out;
	nics = pn_json_get(root, "nics");
	ret = tj_nics(m, &l, nics, host, file, first, count);
	if (ret)
		goto out;
	ret = tj_matrix(m, &l, root, nics, first, count, host, file);
	if (ret)
		goto out;
	ret = tj_rails(&l, root, file);
	if (ret)
		goto out;
	if (!m->source[0])
		snprintf(m->source, sizeof(m->source), "topo-file");
	ret = pn_plan_model_add_node(m, host, &l);
out:
	pn_plan_layout_release(&l);
	pn_json_release(&doc);
	return ret;
}

/* ------------------------------------------------------ live topology */

int pn_plan_model_add_topology(struct pn_plan_model *m, const struct pn_topo *t)
{
	struct pn_plan_layout l;
	int first[PN_PLAN_MAX_NICS], count[PN_PLAN_MAX_NICS];
	int g, h, n, k, nports = 0, ret;

	memset(&l, 0, sizeof(l));
	if (t->ngpus < 1)
		return pn_err(-EINVAL, "%s has no GPU, so there is nothing to plan (give --topo-file "
				       "FILE,... or --nodes N)",
			      t->host);
	if (t->ngpus > PN_PLAN_MAX_GPUS)
		return pn_err(-EINVAL, "%s has %d GPUs, at most %d per node", t->host, t->ngpus,
			      PN_PLAN_MAX_GPUS);
	if (t->nnics > PN_PLAN_MAX_NICS)
		return pn_err(-EINVAL, "%s has %d NICs, at most %d", t->host, t->nnics,
			      PN_PLAN_MAX_NICS);
	for (n = 0; n < t->nnics; n++)
		nports += t->devs[t->ngpus + n].nic.nports ? t->devs[t->ngpus + n].nic.nports : 1;
	if (nports > PN_PLAN_MAX_NICS)
		return pn_err(-EINVAL, "%s has %d NIC ports, at most %d", t->host, nports,
			      PN_PLAN_MAX_NICS);
	l.ngpus = t->ngpus;
	if (nports) {
		l.nics = calloc((size_t)nports, sizeof(*l.nics));
		l.gn = calloc((size_t)(nports * t->ngpus), sizeof(*l.gn));
		if (!l.nics || !l.gn) {
			ret = pn_err(-ENOMEM, "out of memory");
			goto out;
		}
	}
	for (n = 0; n < t->nnics; n++) {
		const struct pn_topo_dev *d = &t->devs[t->ngpus + n];
		int np = d->nic.nports;

		first[n] = l.nnics;
		count[n] = np ? np : 1;
		if (!np)
			pn_plan_msg(&m->notes, "%s: %s has no ports: not used", t->host, d->nic.name);
		for (k = 0; k < count[n]; k++) {
			struct pn_plan_nic *c = &l.nics[l.nnics++];
			const struct pn_port *pt = np ? &d->nic.ports[k] : NULL;

			snprintf(c->device, sizeof(c->device), "%s", d->nic.name);
			if (np > 1)
				snprintf(c->name, sizeof(c->name), "%s:%d", d->nic.name, pt->port);
			else
				snprintf(c->name, sizeof(c->name), "%s", d->nic.name);
			snprintf(c->label, sizeof(c->label), "%s", d->name);
			snprintf(c->state, sizeof(c->state), "%s",
				 pt && pt->state_name[0] ? pt->state_name : "NONE");
			c->port = pt ? pt->port : 1;
			c->rate_gbps = pt ? pt->rate_gbps : 0;
			c->active = pt && pt->state == PN_PORT_ACTIVE;
			c->netdev = -1;
		}
	}
	for (g = 0; g < t->ngpus; g++) {
		int nics[PN_PLAN_MAX_NICS + 1], cls, nr;

		snprintf(l.gpus[g].name, sizeof(l.gpus[g].name), "%s", t->devs[g].name);
		l.gpus[g].index = g; /* PCI order, as penny topo numbers them */
		for (h = 0; h < t->ngpus; h++) {
			int nv = 0, c = g == h ? PN_PATH_X : pn_topo_path(t, g, h, 0, &nv);

			l.gg[g][h].cls = (uint8_t)(c < 0 ? PN_PLAN_PATH_UNKNOWN : c);
			l.gg[g][h].nv = (uint8_t)(nv > 255 ? 255 : nv);
		}
		for (n = 0; n < t->nnics; n++) {
			int c = pn_topo_path(t, g, t->ngpus + n, 0, NULL);

			for (k = 0; k < count[n]; k++)
				l.gn[g * nports + first[n] + k].cls =
					(uint8_t)(c < 0 ? PN_PLAN_PATH_UNKNOWN : c);
		}
		nr = t->nnics ? pn_topo_rail(t, g, nics, &cls) : 0;
		for (h = 0; h < nr; h++) {
			n = nics[h] - t->ngpus;
			if (n < 0 || n >= t->nnics)
				continue;
			for (k = 0; k < count[n]; k++)
				l.gpus[g].near |= 1ull << (first[n] + k);
		}
	}
	if (!m->source[0])
		snprintf(m->source, sizeof(m->source), "%s", t->source ? t->source : "live");
	ret = pn_plan_model_add_node(m, t->host[0] ? t->host : "localhost", &l);
out:
	pn_plan_layout_release(&l);
	return ret;
}

