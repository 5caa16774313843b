/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
#include "node/nic.h"
#include "base/log.h"
#include "node/sysfs.h"
#include "base/util.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

double pn_parse_rate(const char *s)
{
	char *end;
	double v;

	if (!s)
		return 0;
	while (isspace((unsigned char)*s))
		s++;
	if (!isdigit((unsigned char)*s))
		return 0; /* no sign, "inf" or "nan" */
	v = strtod(s, &end);
	/* digits and a point, as the kernel writes it: no hex, no exponent */
	if (end == s || (size_t)(end - s) != strspn(s, "0123456789.") || !isfinite(v) || v <= 0)
		return 0;
	while (isspace((unsigned char)*end))
		end++;
	if (!strncasecmp(end, "Gb", 2))
		;
	else if (!strncasecmp(end, "Mb", 2))
		v /= 1000.0;
	else if (!strncasecmp(end, "Tb", 2))
		v *= 1000.0;
	else
		return 0;
	/* a rate no port has: an absurd file, not a line to measure against */
	return v >= PN_RATE_MIN_GBPS && v <= PN_RATE_MAX_GBPS ? v : 0;
}

int pn_parse_state(const char *s, char *name, size_t len)
{
	char *end;
	long v;

	if (name && len)
		name[0] = 0;
	if (!s)
		return -1;
	v = strtol(s, &end, 10);
	if (end == s || *end != ':')
		return -1;
	end++;
	while (isspace((unsigned char)*end))
		end++;
	if (name && len)
		snprintf(name, len, "%s", end);
	return (int)v;
}

int pn_port_state_from_name(const char *s)
{
	static const char *names[] = { "NOP", "DOWN", "INIT", "ARMED", "ACTIVE", "ACTIVE_DEFER" };
	size_t i;
	int v;

	if (!pn_parse_int(s, &v))
		return v >= 0 && v <= 5 ? v : -1;
	for (i = 0; i < PN_ARRAY_SIZE(names); i++)
		if (!strcasecmp(s, names[i]))
			return (int)i;
	return -1;
}

int pn_gid_empty(const char *g)
{
	for (; *g; g++)
		if (*g != '0' && *g != ':')
			return 0;
	return 1;
}

int pn_gid_ipv4_mapped(const char *g)
{
	return !strncmp(g, "0000:0000:0000:0000:0000:ffff:", 30);
}

int pn_nic_pick_gid(const char *dev, int port, char *gid, size_t gidlen, char *type,
		    size_t typelen)
{
	char ll[32] = "", g[64], t[32];
	int best = -1, best_score = -1;
	int i, ret;

	pn_sys_read(ll, sizeof(ll), PN_IB_CLASS "/%s/ports/%d/link_layer", dev, port);
	for (i = 0; i < 256; i++) {
		int score;

		ret = pn_sys_read(g, sizeof(g), PN_IB_CLASS "/%s/ports/%d/gids/%d", dev, port, i);
		if (ret == -ENOENT)
			break;
		if (ret < 0 || pn_gid_empty(g))
			continue;
		t[0] = 0;
		pn_sys_read(t, sizeof(t), PN_IB_CLASS "/%s/ports/%d/gid_attrs/types/%d", dev, port,
			    i);
		if (strcasecmp(ll, "Ethernet")) {
			score = i == 0 ? 10 : 0; /* InfiniBand: index 0 */
		} else {
			int v2 = !strcasecmp(t, "RoCE v2");

			score = v2 ? (pn_gid_ipv4_mapped(g) ? 3 : 2) : 1;
		}
		if (score > best_score) {
			best_score = score;
			best = i;
			if (gid)
				snprintf(gid, gidlen, "%s", g);
			if (type)
				snprintf(type, typelen, "%s", t);
		}
	}
	return best >= 0 ? best : -ENOENT;
}

int pn_port_read(const char *dev, int port, struct pn_port *p)
{
	char buf[128];
	int lid;

	memset(p, 0, sizeof(*p));
	p->port = port;
	p->state = -1;
	p->phys_state = -1;
	p->lid = -1;
	p->gid_index = -1;
	if (!pn_sys_exists(PN_IB_CLASS "/%s/ports/%d", dev, port))
		return pn_err(-ENOENT, "no port %d on '%s'", port, dev);
	if (pn_sys_read(buf, sizeof(buf), PN_IB_CLASS "/%s/ports/%d/state", dev, port) >= 0)
		p->state = pn_parse_state(buf, p->state_name, sizeof(p->state_name));
	if (pn_sys_read(buf, sizeof(buf), PN_IB_CLASS "/%s/ports/%d/phys_state", dev, port) >= 0)
		p->phys_state = pn_parse_state(buf, p->phys_state_name,
					       sizeof(p->phys_state_name));
	p->rate_err = pn_sys_read(p->rate, sizeof(p->rate), PN_IB_CLASS "/%s/ports/%d/rate", dev,
				  port);
	if (p->rate_err >= 0) {
		p->rate_gbps = pn_parse_rate(p->rate);
		p->rate_err = p->rate_gbps > 0 ? 0 : -EINVAL;
	}
	if (p->rate_err)
		p->rate[0] = 0; /* what does not parse is never shown */
	pn_sys_read(p->link_layer, sizeof(p->link_layer), PN_IB_CLASS "/%s/ports/%d/link_layer",
		    dev, port);
	if (!p->link_layer[0])
		snprintf(p->link_layer, sizeof(p->link_layer), "InfiniBand");
	if (strcasecmp(p->link_layer, "Ethernet") &&
	    !pn_sys_int(&lid, PN_IB_CLASS "/%s/ports/%d/lid", dev, port))
		p->lid = lid;
	p->gid_index = pn_nic_pick_gid(dev, port, p->gid, sizeof(p->gid), p->gid_type,
				       sizeof(p->gid_type));
	if (p->gid_index < 0)
		p->gid_index = -1;
	/* netdev: RoCE GID table, then rxe parent, then the PCI function's net/ */
	if (p->gid_index >= 0)
		pn_sys_read(p->netdev, sizeof(p->netdev),
			    PN_IB_CLASS "/%s/ports/%d/gid_attrs/ndevs/%d", dev, port, p->gid_index);
	if (!p->netdev[0])
		pn_sys_read(p->netdev, sizeof(p->netdev), PN_IB_CLASS "/%s/parent", dev);
	if (!p->netdev[0]) {
		DIR *d = pn_sys_opendir(PN_IB_CLASS "/%s/device/net", dev);
		struct dirent *de;

		while (d && (de = readdir(d))) {
			int devport = 0;

			if (de->d_name[0] == '.')
				continue;
			/* dev_port is 0-based; match it to the IB port when present */
			if (!pn_sys_int(&devport, PN_IB_CLASS "/%s/device/net/%s/dev_port", dev,
					de->d_name) &&
			    devport != port - 1)
				continue;
			snprintf(p->netdev, sizeof(p->netdev), "%s", de->d_name);
			break;
		}
		if (d)
			closedir(d);
	}
	return 0;
}

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return (x > y) - (x < y);
}

/*
 * The port numbers of a device, every one, in numeric order (a switch has
 * dozens; a directory lists them in any order): *out malloc'd, or NULL
 * with *n 0.  At most PN_NIC_MAX_PORTS: a tree with more is refused.
 */
static int port_numbers(const char *name, int **out, int *n)
{
	int *ports = NULL, np = 0, cap = 0, p, k;
	struct dirent *de;
	DIR *d;

	*out = NULL;
	*n = 0;
	d = pn_sys_opendir(PN_IB_CLASS "/%s/ports", name);
	while (d && (de = readdir(d))) {
		if (pn_parse_int(de->d_name, &p) || p <= 0)
			continue;
		if (np == PN_NIC_MAX_PORTS) {
			closedir(d);
			free(ports);
			return pn_err(-E2BIG, "RDMA device '%s' has more than %d ports", name,
				      PN_NIC_MAX_PORTS);
		}
		if (np == cap) {
			int *more = realloc(ports, (size_t)(cap = cap ? 2 * cap : 8) * sizeof(int));

			if (!more) {
				closedir(d);
				free(ports);
				return pn_err(-ENOMEM, "out of memory");
			}
			ports = more;
		}
		ports[np++] = p;
	}
	if (d)
		closedir(d);
	if (np)
		qsort(ports, (size_t)np, sizeof(int), cmp_int);
	/* "1" and "01" are one port */
	for (p = k = 0; p < np; p++)
		if (!k || ports[k - 1] != ports[p])
			ports[k++] = ports[p];
	*out = ports;
	*n = k;
	return 0;
}

int pn_nic_read(const char *name, struct pn_nic *nic)
{
	char link[512], buf[128];
	uint64_t v;
	int *ports, np, i, ret;

	memset(nic, 0, sizeof(*nic));
	snprintf(nic->name, sizeof(nic->name), "%s", name);
	nic->numa = -1;
	if (!pn_sys_exists(PN_IB_CLASS "/%s", name))
		return pn_err(-ENOENT, "no RDMA device '%s'", name);
	if (pn_sys_readlink(link, sizeof(link), PN_IB_CLASS "/%s/device", name) > 0) {
		const char *base = strrchr(link, '/');

		base = base ? base + 1 : link;
		/* PCI function names look like 0000:3b:00.0 */
		if (strlen(base) == 12 && base[4] == ':' && base[7] == ':' && base[10] == '.')
			snprintf(nic->pci_busid, sizeof(nic->pci_busid), "%s", base);
		if (!pn_sys_int(&i, PN_IB_CLASS "/%s/device/numa_node", name))
			nic->numa = i;
		pn_sys_read(nic->cpus, sizeof(nic->cpus), PN_IB_CLASS "/%s/device/local_cpulist",
			    name);
		if (!pn_sys_u64(&v, PN_IB_CLASS "/%s/device/vendor", name))
			nic->vendor_id = (unsigned)v;
		if (!pn_sys_u64(&v, PN_IB_CLASS "/%s/device/device", name))
			nic->device_id = (unsigned)v;
	} else if (!pn_sys_u64(&v, PN_IB_CLASS "/%s/vendor_id", name)) {
		nic->vendor_id = (unsigned)v;
	}
	pn_sys_read(nic->parent, sizeof(nic->parent), PN_IB_CLASS "/%s/parent", name);
	pn_sys_read(nic->node_guid, sizeof(nic->node_guid), PN_IB_CLASS "/%s/node_guid", name);
	pn_sys_read(nic->fw_ver, sizeof(nic->fw_ver), PN_IB_CLASS "/%s/fw_ver", name);
	pn_sys_read(nic->hca_type, sizeof(nic->hca_type), PN_IB_CLASS "/%s/hca_type", name);
	if (pn_sys_read(buf, sizeof(buf), PN_IB_CLASS "/%s/node_type", name) >= 0) {
		if (pn_parse_state(buf, nic->node_type, sizeof(nic->node_type)) < 0)
			snprintf(nic->node_type, sizeof(nic->node_type), "%s", buf);
	}
	ret = port_numbers(name, &ports, &np);
	if (ret)
		return ret;
	if (np) {
		nic->ports = calloc((size_t)np, sizeof(*nic->ports));
		if (!nic->ports) {
			free(ports);
			return pn_err(-ENOMEM, "out of memory");
		}
	}
	for (i = 0; i < np; i++) {
		ret = pn_port_read(name, ports[i], &nic->ports[nic->nports]);
		if (!ret)
			nic->nports++;
	}
	free(ports);
	return 0;
}

void pn_nic_release(struct pn_nic *nic)
{
	free(nic->ports);
	nic->ports = NULL;
	nic->nports = 0;
}

int pn_nic_list_read(struct pn_nic_list *l)
{
	char **names = NULL;
	size_t n = 0, cap = 0, i;
	struct dirent *de;
	DIR *d;
	int ret = 0;

	l->n = 0;
	l->nics = NULL;
	d = pn_sys_opendir(PN_IB_CLASS);
	if (!d)
		return errno == ENOENT || errno == ENOTDIR ? 0
		       : pn_err(-errno, "cannot read '%s%s': %s", pn_sysfs_is_live() ? "" : pn_sysfs_root(),
				PN_IB_CLASS, strerror(errno));
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		if (n == cap) {
			char **nn = realloc(names, (cap = cap ? 2 * cap : 16) * sizeof(*names));

			if (!nn) {
				ret = pn_err(-ENOMEM, "out of memory");
				goto out;
			}
			names = nn;
		}
		names[n] = strdup(de->d_name);
		if (!names[n]) {
			ret = pn_err(-ENOMEM, "out of memory");
			goto out;
		}
		n++;
	}
	if (n) {
		qsort(names, n, sizeof(*names), pn_natcmp_qsort); /* names is NULL when n == 0 */
		l->nics = calloc(n, sizeof(*l->nics));
		if (!l->nics) {
			ret = pn_err(-ENOMEM, "out of memory");
			goto out;
		}
	}
	for (i = 0; i < n; i++) {
		ret = pn_nic_read(names[i], &l->nics[l->n]);
		if (ret == -ENOENT) { /* vanished while listing */
			ret = 0;
			continue;
		}
		if (ret)
			goto out;
		l->n++;
	}
out:
	closedir(d);
	for (i = 0; i < n; i++)
		free(names[i]);
	free(names);
	if (ret)
		pn_nic_list_release(l);
	return ret;
}

void pn_nic_list_release(struct pn_nic_list *l)
{
	int i;

	for (i = 0; i < l->n; i++)
		pn_nic_release(&l->nics[i]);
	free(l->nics);
	l->nics = NULL;
	l->n = 0;
}
