/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
#include "node/topo.h"
#include "base/file.h"
#include "base/log.h"
#include "base/minijson.h"
#include "node/nvml.h"
#include "node/sysfs.h"
#include "base/util.h"

#include <ctype.h>
#include <errno.h>
#include <hwloc.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

/* ------------------------------------------------------------------ */
/* Class names                                                          */

static const char *const path_names[] = { "X", "NV", "PIX", "PXB", "PHB", "NODE", "SYS" };

const char *pn_path_name(int cls, int nvlinks, char *buf, size_t len)
{
	if (cls == PN_PATH_NV)
		snprintf(buf, len, "NV%d", nvlinks);
	else if (cls >= 0 && cls < (int)PN_ARRAY_SIZE(path_names))
		snprintf(buf, len, "%s", path_names[cls]);
	else
		snprintf(buf, len, "?");
	return buf;
}

int pn_path_parse(const char *s, int *nvlinks)
{
	char buf[16];
	size_t i, n;

	if (nvlinks)
		*nvlinks = 0;
	if (!s)
		return -1;
	while (isspace((unsigned char)*s))
		s++;
	n = strlen(s);
	while (n && isspace((unsigned char)s[n - 1]))
		n--;
	if (!n || n >= sizeof(buf))
		return -1;
	memcpy(buf, s, n);
	buf[n] = 0;
	s = buf;
	if (!strncasecmp(s, "NV", 2) && s[2]) {
		int links;

		if (pn_parse_int(s + 2, &links) || links <= 0)
			return -1;
		if (nvlinks)
			*nvlinks = links;
		return PN_PATH_NV;
	}
	for (i = 0; i < PN_ARRAY_SIZE(path_names); i++)
		if (i != PN_PATH_NV && !strcasecmp(s, path_names[i]))
			return (int)i;
	return -1;
}

/* ------------------------------------------------------------------ */
/* Classification over the hwloc-independent tree                      */

/* Number of PCI-PCI bridges strictly above node x (up to the host bridge). */
static int bridge_level(const struct pn_tnode *nodes, int x)
{
	int n = 0, p;

	for (p = nodes[x].parent; p >= 0 && nodes[p].kind == PN_TN_BRIDGE; p = nodes[p].parent)
		n++;
	return n;
}

/*
 * The switch a bridge belongs to, named by its upstream port, or -1 for a
 * root port.  Below a host bridge bridges alternate: root port (level 0),
 * upstream port (odd levels), downstream ports (even levels > 0) whose parent
 * is their switch's upstream port.
 */
static int switch_of(const struct pn_tnode *nodes, int x)
{
	int lvl = bridge_level(nodes, x);

	if (lvl == 0)
		return -1;
	return lvl % 2 ? x : nodes[x].parent;
}

/* Topmost I/O node above x (a host bridge, or what hangs off the CPU side). */
static int io_top(const struct pn_tnode *nodes, int x)
{
	while (nodes[x].parent >= 0 && nodes[nodes[x].parent].kind != PN_TN_CPU)
		x = nodes[x].parent;
	return x;
}

static int add_switch(int *set, int n, int sw)
{
	int i;

	if (sw < 0)
		return n;
	for (i = 0; i < n; i++)
		if (set[i] == sw)
			return n;
	set[n] = sw;
	return n + 1;
}

#define MAX_DEPTH 64

int pn_tnode_path(const struct pn_tnode *nodes, int nnodes, int a, int b)
{
	int up_a[MAX_DEPTH], na = 0, i, j, lca = -1, ta, tb, x;
	int sw[2 * MAX_DEPTH], nsw = 0;

	if (a < 0 || b < 0 || a >= nnodes || b >= nnodes)
		return PN_PATH_SYS;
	if (a == b)
		return PN_PATH_PIX; /* two functions seen at one PCI position */
	ta = io_top(nodes, a);
	tb = io_top(nodes, b);
	if (ta != tb) {
		int ca = nodes[ta].parent, cb = nodes[tb].parent;

		if (ca >= 0 && cb >= 0 && nodes[ca].numa_set >= 0 &&
		    nodes[ca].numa_set == nodes[cb].numa_set)
			return PN_PATH_NODE;
		return PN_PATH_SYS;
	}
	for (x = a; x >= 0 && na < MAX_DEPTH; x = nodes[x].parent)
		up_a[na++] = x;
	for (x = b; x >= 0 && lca < 0; x = nodes[x].parent)
		for (i = 0; i < na; i++)
			if (up_a[i] == x) {
				lca = x;
				break;
			}
	if (lca < 0 || nodes[lca].kind == PN_TN_CPU)
		return PN_PATH_SYS;
	if (nodes[lca].kind == PN_TN_HOSTBRIDGE)
		return PN_PATH_PHB;
	/* switches crossed on both sides, the common ancestor's included */
	for (j = 0; j < 2; j++) {
		if ((j ? b : a) == lca)
			continue;
		for (x = nodes[j ? b : a].parent; x >= 0; x = nodes[x].parent) {
			if (nodes[x].kind == PN_TN_BRIDGE && nsw < 2 * MAX_DEPTH - 1)
				nsw = add_switch(sw, nsw, switch_of(nodes, x));
			if (x == lca)
				break;
		}
	}
	if (nodes[lca].kind == PN_TN_BRIDGE)
		nsw = add_switch(sw, nsw, switch_of(nodes, lca));
	return nsw <= 1 ? PN_PATH_PIX : PN_PATH_PXB;
}

int pn_topo_path(const struct pn_topo *t, int a, int b, int pcie_only, int *nvlinks)
{
	int n = t->ngpus + t->nnics;

	if (nvlinks)
		*nvlinks = 0;
	if (a < 0 || b < 0 || a >= n || b >= n)
		return -1;
	if (a == b)
		return PN_PATH_X;
	if (!pcie_only && t->nvlinks && a < t->ngpus && b < t->ngpus &&
	    t->nvlinks[a * t->ngpus + b] > 0) {
		if (nvlinks)
			*nvlinks = t->nvlinks[a * t->ngpus + b];
		return PN_PATH_NV;
	}
	return pn_tnode_path(t->nodes, t->nnodes, t->devs[a].node, t->devs[b].node);
}

int pn_topo_find(const struct pn_topo *t, const char *name)
{
	int i;

	for (i = 0; i < t->ngpus + t->nnics; i++)
		if (!strcmp(t->devs[i].name, name))
			return i;
	return -1;
}

int pn_topo_rail(const struct pn_topo *t, int g, int *nics, int *cls)
{
	int best = PN_PATH_SYS + 1, n = 0, i;

	for (i = t->ngpus; i < t->ngpus + t->nnics; i++) {
		int c = pn_topo_path(t, g, i, 1, NULL);

		if (c < best) {
			best = c;
			n = 0;
		}
		if (c == best)
			nics[n++] = i;
	}
	if (cls)
		*cls = n ? best : -1;
	return n;
}

/* ------------------------------------------------------------------ */
/* Building the model from hwloc                                        */

struct build {
	hwloc_topology_t topo;
	struct pn_topo *t;
	int cap_nodes;
	hwloc_bitmap_t *sets; /* distinct NUMA node sets of CPU-side nodes */
	int nsets;
	int err;
};

static int numa_set_id(struct build *b, hwloc_const_bitmap_t ns)
{
	hwloc_bitmap_t *n;
	int i;

	if (!ns || hwloc_bitmap_iszero(ns))
		return -1;
	for (i = 0; i < b->nsets; i++)
		if (hwloc_bitmap_isequal(b->sets[i], ns))
			return i;
	n = realloc(b->sets, (size_t)(b->nsets + 1) * sizeof(*n));
	if (!n)
		return -1;
	b->sets = n;
	b->sets[b->nsets] = hwloc_bitmap_dup(ns);
	if (!b->sets[b->nsets])
		return -1;
	return b->nsets++;
}

static int add_node(struct build *b, int kind, int parent, int numa_set)
{
	struct pn_topo *t = b->t;

	if (t->nnodes == b->cap_nodes) {
		int cap = b->cap_nodes ? 2 * b->cap_nodes : 64;
		struct pn_tnode *n = realloc(t->nodes, (size_t)cap * sizeof(*n));

		if (!n) {
			b->err = -ENOMEM;
			return -1;
		}
		t->nodes = n;
		b->cap_nodes = cap;
	}
	t->nodes[t->nnodes].kind = kind;
	t->nodes[t->nnodes].parent = parent;
	t->nodes[t->nnodes].numa_set = numa_set;
	return t->nnodes++;
}

/* The tree node of an hwloc object (created with its ancestors on demand). */
static int node_of(struct build *b, hwloc_obj_t obj)
{
	int parent, kind, idx;

	if (!obj)
		return -1;
	if (obj->userdata)
		return (int)(intptr_t)obj->userdata - 1;
	if (obj->type == HWLOC_OBJ_OS_DEVICE || obj->type == HWLOC_OBJ_MISC)
		return node_of(b, obj->parent);
	if (obj->type == HWLOC_OBJ_BRIDGE || obj->type == HWLOC_OBJ_PCI_DEVICE) {
		parent = node_of(b, obj->parent);
		if (obj->type == HWLOC_OBJ_PCI_DEVICE)
			kind = PN_TN_PCI;
		else if (obj->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_HOST)
			kind = PN_TN_HOSTBRIDGE;
		else
			kind = PN_TN_BRIDGE;
		idx = add_node(b, kind, parent, -1);
	} else {
		idx = add_node(b, PN_TN_CPU, -1, numa_set_id(b, obj->nodeset));
	}
	if (idx >= 0)
		obj->userdata = (void *)(intptr_t)(idx + 1);
	return idx;
}

static void busid_of(hwloc_obj_t pci, char *buf, size_t len)
{
	snprintf(buf, len, "%04x:%02x:%02x.%01x", pci->attr->pcidev.domain, pci->attr->pcidev.bus,
		 pci->attr->pcidev.dev, pci->attr->pcidev.func);
}

/* Console and BMC display controllers: VGA class, but not compute GPUs. */
static int console_display(unsigned vendor, unsigned device)
{
	static const struct {
		unsigned vendor, device; /* device 0: any */
	} list[] = {
		{ 0x1a03, 0 },	    /* ASPEED BMC */
		{ 0x102b, 0 },	    /* Matrox G200 (server consoles) */
		{ 0x18ca, 0 },	    /* XGI Z-series (server consoles) */
		{ 0x1002, 0x515e }, /* ATI ES1000 */
		{ 0x1002, 0x5969 }, /* ATI ES1000 */
		{ 0x19e5, 0x1711 }, /* Huawei iBMC */
		{ 0x1234, 0x1111 }, /* QEMU standard VGA */
		{ 0x1b36, 0x0100 }, /* QXL */
		{ 0x1af4, 0x1050 }, /* virtio-gpu */
		{ 0x1013, 0 },	    /* Cirrus Logic (emulated) */
		{ 0x15ad, 0x0405 }, /* VMware SVGA */
		{ 0x1414, 0x5353 }, /* Hyper-V */
		{ 0x80ee, 0xbeef }, /* VirtualBox */
	};
	size_t i;

	for (i = 0; i < PN_ARRAY_SIZE(list); i++)
		if (list[i].vendor == vendor && (!list[i].device || list[i].device == device))
			return 1;
	return 0;
}

static int compute_osdev(hwloc_obj_t c)
{
	static const char *const subtypes[] = { "CUDA", "NVML", "RSMI", "LevelZero" };
	size_t i;

	if (c->type != HWLOC_OBJ_OS_DEVICE)
		return 0;
	for (i = 0; i < PN_ARRAY_SIZE(subtypes); i++)
		if (c->subtype && !strcmp(c->subtype, subtypes[i]))
			return 1;
	if (c->subtype && !strcmp(c->subtype, "OpenCL")) {
		const char *t = hwloc_obj_get_info_by_name(c, "OpenCLDeviceType");

		return t && !strcmp(t, "GPU");
	}
	return 0;
}

/*
 * GPUs: display controllers (VGA 0x0300, 3D 0x0302, other 0x0380) except
 * console/BMC chips, AMD processing accelerators (0x1200: Instinct MI300),
 * and any PCI function hwloc found a CUDA, NVML, ROCm SMI, Level Zero or
 * OpenCL GPU device on.
 */
static int is_gpu(hwloc_obj_t pci)
{
	unsigned cls = pci->attr->pcidev.class_id;
	hwloc_obj_t c;

	for (c = pci->io_first_child; c; c = c->next_sibling)
		if (compute_osdev(c))
			return 1;
	if (cls == 0x1200 && pci->attr->pcidev.vendor_id == 0x1002)
		return 1;
	if (cls != 0x0300 && cls != 0x0302 && cls != 0x0380)
		return 0;
	return !console_display(pci->attr->pcidev.vendor_id, pci->attr->pcidev.device_id);
}

static int cmp_busid(const void *a, const void *b)
{
	return strcmp(((const struct pn_topo_dev *)a)->pci_busid,
		      ((const struct pn_topo_dev *)b)->pci_busid);
}

static int cmp_nic(const void *a, const void *b)
{
	return pn_natcmp(((const struct pn_topo_dev *)a)->nic.name,
			 ((const struct pn_topo_dev *)b)->nic.name);
}

/* NUMA node and CPU list of an I/O object from hwloc. */
static int hwloc_locality(struct build *b, hwloc_obj_t obj, struct pn_topo_dev *d)
{
	hwloc_obj_t anc = hwloc_get_non_io_ancestor_obj(b->topo, obj);
	char *s = NULL;

	d->numa = -1;
	if (anc && anc->nodeset && hwloc_bitmap_weight(anc->nodeset) == 1)
		d->numa = hwloc_bitmap_first(anc->nodeset);
	free(d->cpus);
	d->cpus = NULL;
	if (anc && anc->cpuset && hwloc_bitmap_list_asprintf(&s, anc->cpuset) >= 0)
		d->cpus = s;
	else
		d->cpus = strdup("");
	return d->cpus ? 0 : -ENOMEM;
}

/*
 * A device whose firmware gives no NUMA node (numa_node -1, as in many VMs):
 * the one NUMA node its local CPUs belong to, as nvidia-smi reports it;
 * -1 when they span several nodes or none is known.
 */
static int numa_of_cpus(struct build *b, const char *cpulist)
{
	hwloc_bitmap_t set = hwloc_bitmap_alloc();
	hwloc_obj_t node = NULL;
	int found = -1, n = 0;

	if (!set)
		return -1;
	if (!cpulist[0] || hwloc_bitmap_list_sscanf(set, cpulist) < 0 || hwloc_bitmap_iszero(set)) {
		hwloc_bitmap_free(set);
		return -1;
	}
	while ((node = hwloc_get_next_obj_by_type(b->topo, HWLOC_OBJ_NUMANODE, node))) {
		if (node->cpuset && hwloc_bitmap_intersects(node->cpuset, set)) {
			found = (int)node->os_index;
			n++;
		}
	}
	hwloc_bitmap_free(set);
	return n == 1 ? found : -1;
}

/*
 * NUMA node and CPU list of PCI function busid from sysfs (what nvidia-smi
 * shows), else from hwloc.
 */
static int sysfs_locality(struct build *b, hwloc_obj_t obj, const char *busid,
			  struct pn_topo_dev *d)
{
	char buf[4096];
	int numa;

	if (!d->cpus && !(d->cpus = strdup("")))
		return -ENOMEM;
	if (!busid[0] || !pn_sys_exists("/sys/bus/pci/devices/%s", busid))
		return obj ? hwloc_locality(b, obj, d) : 0;
	d->numa = -1;
	if (!pn_sys_int(&numa, "/sys/bus/pci/devices/%s/numa_node", busid) && numa >= 0)
		d->numa = numa;
	if (pn_sys_read(buf, sizeof(buf), "/sys/bus/pci/devices/%s/local_cpulist", busid) < 0) {
		if (obj)
			return hwloc_locality(b, obj, d);
		buf[0] = 0;
	}
	free(d->cpus);
	d->cpus = strdup(buf);
	if (!d->cpus)
		return -ENOMEM;
	if (d->numa < 0)
		d->numa = numa_of_cpus(b, buf);
	return 0;
}

static struct pn_topo_dev *add_dev(struct pn_topo_dev **devs, int *n, int *cap)
{
	struct pn_topo_dev *d;

	if (*n == *cap) {
		int c = *cap ? 2 * *cap : 16;

		d = realloc(*devs, (size_t)c * sizeof(*d));
		if (!d)
			return NULL;
		*devs = d;
		*cap = c;
	}
	d = &(*devs)[(*n)++];
	memset(d, 0, sizeof(*d));
	d->numa = -1;
	d->node = -1;
	return d;
}

static int find_gpus(struct build *b, struct pn_topo_dev **gpus, int *n, int *cap)
{
	hwloc_obj_t obj = NULL;
	int live = !b->t->source || strcmp(b->t->source, "xml");

	while ((obj = hwloc_get_next_pcidev(b->topo, obj))) {
		struct pn_topo_dev *d;
		int ret;

		if (!is_gpu(obj))
			continue;
		d = add_dev(gpus, n, cap);
		if (!d)
			return -ENOMEM;
		busid_of(obj, d->pci_busid, sizeof(d->pci_busid));
		d->vendor_id = obj->attr->pcidev.vendor_id;
		d->device_id = obj->attr->pcidev.device_id;
		d->class_id = obj->attr->pcidev.class_id;
		d->node = node_of(b, obj);
		ret = live ? sysfs_locality(b, obj, d->pci_busid, d) : hwloc_locality(b, obj, d);
		if (ret)
			return ret;
	}
	if (*n)
		qsort(*gpus, (size_t)*n, sizeof(**gpus), cmp_busid);
	return b->err;
}

int pn_topo_busid_from_link(const char *link, char *busid, size_t len)
{
	/* domain (VMD domains are 0x10000 and up), bus, device, function */
	static const unsigned long max[4] = { 0xffffff, 0xff, 0x1f, 0x7 };
	static const char sep[4] = { ':', ':', '.', 0 };
	const char *p = strrchr(link, '/');
	unsigned long v[4];
	int i;

	p = p ? p + 1 : link;
	for (i = 0; i < 4; i++) {
		char *end;

		if (!isxdigit((unsigned char)p[0]) || (p[0] == '0' && (p[1] == 'x' || p[1] == 'X')))
			return -EINVAL;
		errno = 0;
		v[i] = strtoul(p, &end, 16);
		if (errno || v[i] > max[i] || *end != sep[i])
			return -EINVAL;
		p = end + 1;
	}
	snprintf(busid, len, "%04lx:%02lx:%02lx.%01lx", v[0], v[1], v[2], v[3]);
	return 0;
}

/* NICs of the live system or sysfs root: /sys/class/infiniband, placed by PCI bus id. */
static int find_nics_sysfs(struct build *b, struct pn_topo_dev **nics, int *n, int *cap)
{
	struct pn_nic_list l;
	int i, ret;

	ret = pn_nic_list_read(&l);
	if (ret)
		return ret;
	for (i = 0; i < l.n; i++) {
		struct pn_topo_dev *d = add_dev(nics, n, cap);
		hwloc_obj_t obj = NULL;
		char link[512], busid[16];

		if (!d) {
			ret = -ENOMEM;
			break;
		}
		d->nic = l.nics[i]; /* takes the ports */
		memset(&l.nics[i], 0, sizeof(l.nics[i]));
		snprintf(d->pci_busid, sizeof(d->pci_busid), "%s", d->nic.pci_busid);
		/* rxe/siw: placed at the PCI function of the netdev they are bound to, if any */
		snprintf(busid, sizeof(busid), "%s", d->pci_busid);
		if (!busid[0] && d->nic.parent[0] &&
		    pn_sys_readlink(link, sizeof(link), "/sys/class/net/%s/device", d->nic.parent) > 0)
			pn_topo_busid_from_link(link, busid, sizeof(busid));
		if (busid[0])
			obj = hwloc_get_pcidev_by_busidstring(b->topo, busid);
		if (obj && d->pci_busid[0]) {
			d->node = node_of(b, obj);
			d->vendor_id = obj->attr->pcidev.vendor_id;
			d->device_id = obj->attr->pcidev.device_id;
			d->class_id = obj->attr->pcidev.class_id;
		} else {
			d->node = obj ? node_of(b, obj) : -1;
			d->vendor_id = d->nic.vendor_id;
			d->device_id = d->nic.device_id;
		}
		PN_DBG(PN_LOG_TOPO, "nic %s: pci %s node %d", d->nic.name, busid[0] ? busid : "-",
		       d->node);
		ret = sysfs_locality(b, obj, busid, d);
		if (ret)
			break;
	}
	pn_nic_list_release(&l);
	return ret ? ret : b->err;
}

/*
 * NICs of an XML topology: OpenFabrics OS devices.  Their ports come from
 * sysfs only when that sysfs describes the same machine: a --sysfs-root was
 * given, or the XML's host name is this host's.
 */
static int find_nics_xml(struct build *b, struct pn_topo_dev **nics, int *n, int *cap)
{
	hwloc_obj_t obj = NULL;
	int ports = !pn_sysfs_is_live() || !strcmp(b->t->host, pn_hostname());

	while ((obj = hwloc_get_next_osdev(b->topo, obj))) {
		struct pn_topo_dev *d;
		hwloc_obj_t pci = obj->parent;
		int ret;

		if (obj->attr->osdev.type != HWLOC_OBJ_OSDEV_OPENFABRICS || !obj->name)
			continue;
		d = add_dev(nics, n, cap);
		if (!d)
			return -ENOMEM;
		snprintf(d->nic.name, sizeof(d->nic.name), "%s", obj->name);
		d->nic.numa = -1;
		while (pci && pci->type == HWLOC_OBJ_OS_DEVICE)
			pci = pci->parent;
		if (pci && pci->type == HWLOC_OBJ_PCI_DEVICE) {
			busid_of(pci, d->pci_busid, sizeof(d->pci_busid));
			snprintf(d->nic.pci_busid, sizeof(d->nic.pci_busid), "%s", d->pci_busid);
			d->vendor_id = pci->attr->pcidev.vendor_id;
			d->device_id = pci->attr->pcidev.device_id;
			d->class_id = pci->attr->pcidev.class_id;
			d->node = node_of(b, pci);
		}
		ret = hwloc_locality(b, obj, d);
		if (ret)
			return ret;
		if (ports && pn_sys_exists("/sys/class/infiniband/%s", obj->name)) {
			struct pn_nic nic;

			if (!pn_nic_read(obj->name, &nic)) {
				d->nic.ports = nic.ports;
				d->nic.nports = nic.nports;
			}
		}
	}
	if (*n)
		qsort(*nics, (size_t)*n, sizeof(**nics), cmp_nic);
	return b->err;
}

/* GPU index of an object of hwloc's NVLinkBandwidth matrix, -1 if none. */
static int gpu_of(struct build *b, hwloc_obj_t obj)
{
	int i, node;

	while (obj && obj->type == HWLOC_OBJ_OS_DEVICE)
		obj = obj->parent;
	if (!obj || obj->type != HWLOC_OBJ_PCI_DEVICE || !obj->userdata)
		return -1;
	node = (int)(intptr_t)obj->userdata - 1;
	for (i = 0; i < b->t->ngpus; i++)
		if (b->t->devs[i].node == node)
			return i;
	return -1;
}

static void nvlinks_from_xml(struct build *b)
{
	struct hwloc_distances_s *d[4];
	struct pn_topo *t = b->t;
	unsigned nr = 4, k, i, j;

	if (hwloc_distances_get_by_name(b->topo, "NVLinkBandwidth", &nr, d, 0) || !nr)
		return;
	for (k = 0; k < nr && k < 4; k++) {
		for (i = 0; i < d[k]->nbobjs; i++)
			for (j = 0; j < d[k]->nbobjs; j++) {
				int gi = gpu_of(b, d[k]->objs[i]), gj = gpu_of(b, d[k]->objs[j]);
				int links;

				if (gi < 0 || gj < 0 || gi == gj)
					continue;
				links = pn_nvml_links_from_bw(d[k]->values[i * d[k]->nbobjs + j]);
				if (links > t->nvlinks[gi * t->ngpus + gj]) {
					t->nvlinks[gi * t->ngpus + gj] = links;
					t->nvlink_source = "xml";
				}
			}
		hwloc_distances_release(b->topo, d[k]);
	}
}

static void nvlinks_from_nvml(struct pn_topo *t)
{
	const char **ids = calloc((size_t)t->ngpus, sizeof(*ids));
	int i;

	if (!ids)
		return;
	for (i = 0; i < t->ngpus; i++)
		ids[i] = t->devs[i].pci_busid;
	if (!pn_nvml_links(t->ngpus, ids, t->nvlinks))
		t->nvlink_source = "nvml";
	free(ids);
}

/*
 * hwloc components that touch live devices whatever the root (libpciaccess,
 * cpuid, GPU runtimes) or are not needed.
 */
static const char *const unused_components[] = { "pci", "x86", "opencl", "gl", "cuda", "nvml",
						 "rsmi", "levelzero" };
#define UNUSED_PLUGINS                                                                     \
	"hwloc_pci,hwloc_opencl,hwloc_gl,hwloc_cuda,hwloc_nvml,hwloc_rsmi,hwloc_levelzero," \
	"hwloc_xml_libxml"

/*
 * hwloc reads these from the environment.  The sysfs root becomes
 * HWLOC_FSROOT so hwloc's own /sys and /proc reads go below it too; PCI is
 * discovered by hwloc's Linux backend (through that root), never by
 * libpciaccess, which reads the live /sys; XML is parsed by hwloc's own
 * parser (quiet on errors).
 */
static void hwloc_env(void)
{
	setenv("HWLOC_FSROOT", pn_sysfs_root(), 1);
	setenv("HWLOC_PLUGINS_BLACKLIST", UNUSED_PLUGINS, 1);
	setenv("HWLOC_LIBXML_IMPORT", "0", 1);
	if (!(pn_debug_mask & PN_LOG_TOPO))
		setenv("HWLOC_HIDE_ERRORS", "1", 1);
	unsetenv("HWLOC_XMLFILE");
	unsetenv("HWLOC_SYNTHETIC");
	unsetenv("HWLOC_COMPONENTS");
}

/*
 * Point hwloc at the XML input: the whole document is read here (one
 * bounded reader, regular files only), checked to be well-formed (one root
 * element, every element closed, nothing after it), and given to hwloc as a
 * buffer; v3 documents are converted for hwloc 2.  *keep: the buffer hwloc
 * reads, to free after the load.
 */
static int set_xml(hwloc_topology_t topo, const struct pn_topo_cfg *cfg, char **keep)
{
	const char *what = cfg->xml_file ? cfg->xml_file : "XML buffer";
	const char *doc = cfg->xml_buf;
	char *all = NULL, *conv = NULL;
	size_t len = cfg->xml_len, clen = 0;
	int ver, ret;

	if (cfg->xml_file) {
		ret = pn_file_read(cfg->xml_file, &all, &len);
		if (ret)
			return ret;
		doc = all;
	}
	ver = pn_topo_xml_version(doc, len);
	if (ver < 0) {
		free(all);
		return pn_err(-EINVAL, "'%s' is not an hwloc XML topology", what);
	}
	ret = pn_topo_xml_check(doc, len);
	if (ret) {
		free(all);
		return pn_err_ctx(ret, "'%s'", what);
	}
	if (ver > 3) {
		free(all);
		return pn_err(-EINVAL, "'%s': hwloc XML version %d is not supported", what, ver);
	}
	if (ver > HWLOC_API_VERSION >> 16) {
		ret = pn_topo_xml_downgrade(doc, len, &conv, &clen);
		free(all);
		all = NULL;
		if (ret)
			return pn_err_ctx(ret, "'%s'", what);
		PN_DBG(PN_LOG_TOPO, "hwloc XML v%d converted for hwloc %u.x", ver,
		       (unsigned)(HWLOC_API_VERSION >> 16));
		doc = conv;
		len = clen;
	}
	*keep = all ? all : conv;
	if (len > INT_MAX - 1 || hwloc_topology_set_xmlbuffer(topo, doc, (int)len + 1))
		return pn_err(-EINVAL, "'%s': cannot use XML input", what);
	return 0;
}

static void topo_host(struct pn_topo *t, hwloc_topology_t topo)
{
	const char *h = NULL;
	char buf[256];

	if (!strcmp(t->source, "xml")) {
		h = hwloc_obj_get_info_by_name(hwloc_get_root_obj(topo), "HostName");
	} else if (pn_sys_read(buf, sizeof(buf), "/proc/sys/kernel/hostname") > 0) {
		h = buf;
	} else if (!strcmp(t->source, "live")) {
		h = pn_hostname();
	}
	snprintf(t->host, sizeof(t->host), "%s", h && *h ? h : "unknown");
}

static int model(struct build *b, const struct pn_topo_cfg *cfg)
{
	struct pn_topo *t = b->t;
	struct pn_topo_dev *gpus = NULL, *nics = NULL;
	int ng = 0, nn = 0, capg = 0, capn = 0, ret, i;

	ret = find_gpus(b, &gpus, &ng, &capg);
	if (!ret)
		ret = strcmp(t->source, "xml") ? find_nics_sysfs(b, &nics, &nn, &capn)
					       : find_nics_xml(b, &nics, &nn, &capn);
	if (!ret && ng + nn) {
		t->devs = calloc((size_t)(ng + nn), sizeof(*t->devs));
		if (!t->devs)
			ret = pn_err(-ENOMEM, "out of memory");
	}
	if (ret) {
		for (i = 0; i < ng; i++)
			free(gpus[i].cpus);
		for (i = 0; i < nn; i++) {
			free(nics[i].cpus);
			pn_nic_release(&nics[i].nic);
		}
		free(gpus);
		free(nics);
		return ret == -ENOMEM ? pn_err(ret, "out of memory") : ret;
	}
	if (ng)
		memcpy(t->devs, gpus, (size_t)ng * sizeof(*gpus));
	if (nn)
		memcpy(t->devs + ng, nics, (size_t)nn * sizeof(*nics));
	free(gpus);
	free(nics);
	t->ngpus = ng;
	t->nnics = nn;
	for (i = 0; i < ng; i++)
		snprintf(t->devs[i].name, sizeof(t->devs[i].name), "GPU%d", i);
	for (i = 0; i < nn; i++)
		snprintf(t->devs[ng + i].name, sizeof(t->devs[ng + i].name), "NIC%d", i);
	if (ng) {
		t->nvlinks = calloc((size_t)ng * (size_t)ng, sizeof(*t->nvlinks));
		if (!t->nvlinks)
			return pn_err(-ENOMEM, "out of memory");
		if (!strcmp(t->source, "xml"))
			nvlinks_from_xml(b);
		else if (!cfg->no_nvml && (!strcmp(t->source, "live") || pn_nvml_forced()))
			nvlinks_from_nvml(t);
	}
	return 0;
}

/*
 * Load once in a child process first, stderr to /dev/null: libhwloc 2.9
 * crashes on some malformed XML (NULL cpusets) and prints to stderr on
 * others whatever HWLOC_HIDE_ERRORS says; and hwloc's own reads below a
 * sysfs root block on a FIFO there (it opens files without O_NONBLOCK), so
 * the child gets timeout seconds.  Returns 0 when the child loaded the
 * topology, 1 when hwloc refused it, -ECHILD when the child died,
 * -ETIMEDOUT when it was still loading at the deadline (it is killed), or
 * 0 when there could be no child (then the caller loads anyway).
 */
#define PROBE_REFUSED 42

static int probe_load(hwloc_topology_t topo, double timeout)
{
	double deadline = pn_now() + timeout;
	useconds_t nap = 1000;
	int status, fd;
	pid_t pid, w;

	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return 0;
	if (pid == 0) {
		fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
		if (fd >= 0 && !(pn_debug_mask & PN_LOG_TOPO))
			dup2(fd, STDERR_FILENO);
		_exit(hwloc_topology_load(topo) ? PROBE_REFUSED : 0);
	}
	for (;;) {
		w = waitpid(pid, &status, WNOHANG);
		if (w == pid)
			break;
		if (w < 0 && errno != EINTR)
			return 0;
		if (pn_now() >= deadline) {
			kill(pid, SIGKILL);
			while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
				;
			return -ETIMEDOUT;
		}
		usleep(nap);
		if (nap < 50000)
			nap *= 2;
	}
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	if (WIFEXITED(status) && WEXITSTATUS(status) == PROBE_REFUSED)
		return 1;
	/* a signal, or a sanitizer's exit after one */
	PN_DBG(PN_LOG_TOPO, "hwloc load died (wait status 0x%x)", (unsigned)status);
	return -ECHILD;
}

int pn_topo_load(struct pn_topo *t, const struct pn_topo_cfg *cfg)
{
	struct pn_topo_cfg none = { 0 };
	struct build b = { 0 };
	hwloc_topology_t topo;
	char *conv = NULL;
	size_t i;
	int ret, xml, probe;

	memset(t, 0, sizeof(*t));
	t->nvlink_source = "";
	if (!cfg)
		cfg = &none;
	xml = cfg->xml_file || cfg->xml_buf;
	t->source = xml ? "xml" : pn_sysfs_is_live() ? "live" : "sysfs";
	if (!xml && !pn_sysfs_is_live() && !pn_sys_exists("/sys/devices/system/cpu"))
		return pn_err(-ENOENT, "sysfs root '%s' has no sys/devices/system/cpu",
			      pn_sysfs_root());
	hwloc_env();
	if (hwloc_topology_init(&topo))
		return pn_err(-ENOMEM, "cannot initialize hwloc");
	for (i = 0; i < PN_ARRAY_SIZE(unused_components); i++)
		hwloc_topology_set_components(topo, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST,
					      unused_components[i]);
	hwloc_topology_set_io_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
	hwloc_topology_set_cache_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_NONE);
	hwloc_topology_set_icache_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_NONE);
	hwloc_topology_set_type_filter(topo, HWLOC_OBJ_MISC, HWLOC_TYPE_FILTER_KEEP_NONE);
	hwloc_topology_set_flags(topo, HWLOC_TOPOLOGY_FLAG_NO_MEMATTRS |
					       HWLOC_TOPOLOGY_FLAG_NO_CPUKINDS);
	if (xml) {
		ret = set_xml(topo, cfg, &conv);
		if (ret)
			goto out;
	}
	probe = xml || !pn_sysfs_is_live()
			? probe_load(topo, cfg->timeout > 0 ? cfg->timeout : PN_TOPO_LOAD_TIMEOUT)
			: 0;
	if (probe == -ETIMEDOUT) {
		ret = pn_err(-ETIMEDOUT, "hwloc did not finish reading %s '%s' within %g s (a FIFO "
					 "or device file in the tree?)",
			     xml ? "hwloc XML" : "sysfs root",
			     xml ? (cfg->xml_file ? cfg->xml_file : "buffer") : pn_sysfs_root(),
			     cfg->timeout > 0 ? cfg->timeout : PN_TOPO_LOAD_TIMEOUT);
		goto out;
	}
	if (probe == -ECHILD) {
		ret = pn_err(-EINVAL, "hwloc crashed reading %s '%s': invalid topology",
			     xml ? "hwloc XML" : "sysfs root",
			     xml ? (cfg->xml_file ? cfg->xml_file : "buffer") : pn_sysfs_root());
		goto out;
	}
	errno = 0;
	if (probe > 0 || hwloc_topology_load(topo)) {
		int e = probe > 0 || !errno ? EINVAL : errno;

		if (xml)
			ret = pn_err(-EINVAL, "cannot load hwloc XML '%s': invalid or unsupported topology",
				     cfg->xml_file ? cfg->xml_file : "buffer");
		else
			ret = pn_err(-e, "cannot discover the topology below '%s': %s",
				     pn_sysfs_root(), strerror(e));
		goto out;
	}
	topo_host(t, topo);
	b.topo = topo;
	b.t = t;
	ret = model(&b, cfg);
	if (!ret && b.err)
		ret = pn_err(b.err, "out of memory");
out:
	for (i = 0; i < (size_t)b.nsets; i++)
		hwloc_bitmap_free(b.sets[i]);
	free(b.sets);
	hwloc_topology_destroy(topo);
	free(conv);
	if (ret)
		pn_topo_release(t);
	return ret;
}

void pn_topo_release(struct pn_topo *t)
{
	int i;

	for (i = 0; i < t->ngpus + t->nnics; i++) {
		free(t->devs[i].cpus);
		pn_nic_release(&t->devs[i].nic);
	}
	free(t->devs);
	free(t->nodes);
	free(t->nvlinks);
	t->devs = NULL;
	t->nodes = NULL;
	t->nvlinks = NULL;
	t->ngpus = t->nnics = t->nnodes = 0;
}
