/* SPDX-License-Identifier: MIT */
/*
 * NHC-style checks of a node's topology (penny topo --expect-*): GPU and
 * NIC counts, port states and rates, a NIC near every GPU (topo_check.h).
 */
#define _GNU_SOURCE
#include "node/topo_check.h"
#include "base/log.h"
#include "base/util.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void violation(struct pn_topo_viol *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void violation(struct pn_topo_viol *c, const char *fmt, ...)
{
	va_list ap;
	char *s;

	if (c->n == c->cap) {
		int cap = c->cap ? 2 * c->cap : 16;
		char **v = realloc(c->v, (size_t)cap * sizeof(*v));

		if (!v) {
			c->oom = 1;
			return;
		}
		c->v = v;
		c->cap = cap;
	}
	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) < 0)
		c->oom = 1;
	else
		c->v[c->n++] = s;
	va_end(ap);
}

/* Is port p of device dev selected by --device? */
static int selected(const char *dev, int port, int *hits, int nsel, char **sel)
{
	int i, any = 0;

	if (!nsel)
		return 1;
	for (i = 0; i < nsel; i++) {
		const char *colon = strrchr(sel[i], ':');
		size_t len = colon ? (size_t)(colon - sel[i]) : strlen(sel[i]);

		if (strlen(dev) != len || strncmp(dev, sel[i], len))
			continue;
		if (colon && atoi(colon + 1) != port)
			continue;
		hits[i]++;
		any = 1;
	}
	return any;
}

static void check_ports(struct pn_topo_viol *c, const struct pn_topo *t,
			const struct pn_topo_expect *e)
{
	char *list = e->devices ? strdup(e->devices) : NULL, *tok, *save = NULL;
	char *sel[64];
	int hits[64] = { 0 }, nsel = 0, i, p, nchecked = 0;

	if (e->devices && !list) {
		c->oom = 1;
		return;
	}

	for (tok = list ? strtok_r(list, ",", &save) : NULL; tok && nsel < 64;
	     tok = strtok_r(NULL, ",", &save))
		if (*tok)
			sel[nsel++] = tok;
	for (i = t->ngpus; i < t->ngpus + t->nnics; i++) {
		const struct pn_nic *nic = &t->devs[i].nic;

		if (!nic->nports && selected(nic->name, 0, hits, nsel, sel)) {
			violation(c, "%s: no port information", nic->name);
			nchecked++;
		}
		for (p = 0; p < nic->nports; p++) {
			const struct pn_port *pt = &nic->ports[p];

			if (!selected(nic->name, pt->port, hits, nsel, sel))
				continue;
			nchecked++;
			if (e->state >= 0 && pt->state != e->state)
				violation(c, "%s port %d: state %s, expected %s", nic->name, pt->port,
					  pt->state_name[0] ? pt->state_name : "unknown",
					  e->state_name);
			if (e->rate >= 0 && !(pt->rate_gbps >= e->rate)) {
				if (pt->rate_gbps > 0)
					violation(c, "%s port %d: rate %g Gb/s, expected at least %g Gb/s",
						  nic->name, pt->port, pt->rate_gbps, e->rate);
				else
					violation(c, "%s port %d: rate unknown, expected at least %g Gb/s",
						  nic->name, pt->port, e->rate);
			}
		}
	}
	for (i = 0; i < nsel; i++)
		if (!hits[i])
			violation(c, "no RDMA device or port '%s'", sel[i]);
	if (!nchecked && !nsel)
		violation(c, "no RDMA ports to check");
	free(list);
}

int pn_topo_check(const struct pn_topo *t, const struct pn_topo_expect *e, struct pn_topo_viol *c)
{
	int g;

	if (e->gpus >= 0 && t->ngpus != e->gpus)
		violation(c, "found %d GPU%s, expected %d", t->ngpus, t->ngpus == 1 ? "" : "s",
			  e->gpus);
	if (e->nics >= 0 && t->nnics != e->nics)
		violation(c, "found %d RDMA NIC%s, expected %d", t->nnics, t->nnics == 1 ? "" : "s",
			  e->nics);
	if (e->state >= 0 || e->rate >= 0)
		check_ports(c, t, e);
	if (e->rail) {
		int *nics = calloc((size_t)t->nnics + 1, sizeof(*nics));

		if (!nics) {
			c->oom = 1;
			return pn_err(-ENOMEM, "out of memory");
		}
		for (g = 0; g < t->ngpus; g++) {
			char cls[16];
			int cl, n = pn_topo_rail(t, g, nics, &cl);

			if (!n)
				violation(c, "%s (%s): no RDMA NIC", t->devs[g].name,
					  t->devs[g].pci_busid);
			else if (cl != PN_PATH_PIX && cl != PN_PATH_PXB)
				violation(c, "%s (%s): nearest NIC %s (%s) is %s, expected PIX or PXB",
					  t->devs[g].name, t->devs[g].pci_busid,
					  t->devs[nics[0]].name, t->devs[nics[0]].nic.name,
					  pn_path_name(cl, 0, cls, sizeof(cls)));
		}
		free(nics);
	}
	return c->oom ? pn_err(-ENOMEM, "out of memory") : 0;
}

int pn_topo_expect_valid(const struct pn_topo_expect *e)
{
	if (!e->devices)
		return 0;
	if (e->state < 0 && e->rate < 0)
		return pn_err(-EINVAL, "-d picks the ports that --expect-state and --expect-rate "
				       "check; give one of them");
	return pn_topo_devlist_valid(e->devices);
}

int pn_topo_dev_entry(char *entry, int *port)
{
	char *colon = strchr(entry, ':');	/* the first */

	*port = 0;
	if (!colon)
		return 0;
	if (colon == entry || pn_parse_int(colon + 1, port) || *port < 1 || *port > 255)
		return pn_err(-EINVAL, "-d '%s': want DEV or DEV:PORT, PORT 1..255", entry);
	*colon = 0;
	return 0;
}

int pn_topo_devlist_valid(const char *devices)
{
	char *list, *tok, *save = NULL;
	int n = 0, ret = 0, port;

	list = strdup(devices);
	if (!list)
		return pn_err(-ENOMEM, "out of memory");
	for (tok = strtok_r(list, ",", &save); tok && !ret; tok = strtok_r(NULL, ",", &save))
		ret = ++n > 64 ? pn_err(-EINVAL, "-d names more than 64 devices or ports")
			       : pn_topo_dev_entry(tok, &port);
	free(list);
	return ret;
}

int pn_topo_expect_any(const struct pn_topo_expect *e)
{
	return e->gpus >= 0 || e->nics >= 0 || e->rate >= 0 || e->state >= 0 || e->rail;
}

void pn_topo_viol_release(struct pn_topo_viol *v)
{
	int i;

	for (i = 0; i < v->n; i++)
		free(v->v[i]);
	free(v->v);
	memset(v, 0, sizeof(*v));
}

