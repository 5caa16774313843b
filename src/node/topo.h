/* SPDX-License-Identifier: MIT */
/*
 * The node's GPU / NIC / NUMA topology and the path class between every pair
 * of devices, with nvidia-smi's legend (topo -m):
 *
 *   X     the device itself
 *   NV#   a bonded set of # NVLinks (GPU pairs, from NVML or hwloc's
 *         NVLinkBandwidth matrix)
 *   PIX   at most one PCIe switch between them
 *   PXB   several PCIe switches, no host bridge
 *   PHB   through a PCIe host bridge
 *   NODE  between host bridges of one NUMA node
 *   SYS   across NUMA nodes (the SMP interconnect)
 *
 * Discovery is hwloc's (live, from a sysfs root through HWLOC_FSROOT, or
 * from an hwloc XML file); it is turned into a small hwloc-independent tree
 * (struct pn_tnode) so that classification is a pure function.
 *
 * hwloc shows every PCIe switch port as its own bridge: a switch is its
 * upstream port plus its downstream ports.  Below a host bridge, the first
 * PCI bridge is a root port (part of the host bridge, not a switch); then
 * upstream and downstream ports alternate.
 */
#ifndef PENNY_TOPO_H
#define PENNY_TOPO_H

#include "node/nic.h"

#include <stddef.h>

enum pn_path { /* best first */
	PN_PATH_X = 0,
	PN_PATH_NV,
	PN_PATH_PIX,
	PN_PATH_PXB,
	PN_PATH_PHB,
	PN_PATH_NODE,
	PN_PATH_SYS,
};

enum pn_tnode_kind {
	PN_TN_CPU = 0,	  /* CPU side: where a host bridge attaches (NUMA node, package, machine) */
	PN_TN_HOSTBRIDGE, /* PCIe host bridge */
	PN_TN_BRIDGE,	  /* PCI-PCI bridge: root port or switch port */
	PN_TN_PCI,	  /* PCI function (GPU, NIC, ...) */
};

struct pn_tnode {
	int kind;	/* enum pn_tnode_kind */
	int parent;	/* index in the node array, -1 at the top */
	int numa_set;	/* PN_TN_CPU: equal values = same NUMA node(s); -1 unknown */
};

struct pn_topo_dev {
	char name[16];		/* "GPU0", "NIC3" */
	char pci_busid[16];	/* "0000:07:00.0", "" if virtual */
	unsigned vendor_id, device_id, class_id;
	int numa;		/* NUMA node, -1 unknown */
	char *cpus;		/* CPU list "0-55,112-167", "" unknown */
	int node;		/* index in pn_topo.nodes, -1 no PCI position (virtual) */
	struct pn_nic nic;	/* NICs: RDMA device name and ports */
};

struct pn_topo {
	char host[256];
	const char *source;	/* "live", "xml", "sysfs" */
	const char *nvlink_source; /* "nvml", "xml" or "" (none) */
	int ngpus, nnics;
	struct pn_topo_dev *devs; /* ngpus GPUs (PCI order), then nnics NICs (natural order) */
	int nnodes;
	struct pn_tnode *nodes;
	int *nvlinks;		/* ngpus x ngpus NVLink counts */
};

struct pn_topo_cfg {
	const char *xml_file;	/* --topo-xml: hwloc XML (v1, v2, or v3 converted in memory) */
	const char *xml_buf;	/* or a NUL-terminated XML document in memory (tests) */
	size_t xml_len;
	int no_nvml;		/* do not ask NVML (live only anyway) */
	double timeout;		/* bound on hwloc's discovery (s); 0: PN_TOPO_LOAD_TIMEOUT */
};

/*
 * hwloc reads an XML topology or a sysfs root in a child process first (it
 * may crash on bad input, and its own reads block on a FIFO in a tree): a
 * child still loading after the timeout is killed and the load fails
 * (-ETIMEDOUT, naming the root).  The live system is read in-process.
 */
#define PN_TOPO_LOAD_TIMEOUT 5.0

/*
 * Discover: XML (cfg->xml_file / xml_buf), else the sysfs root when one is
 * set (pn_sysfs_set_root), else the live system.  Returns 0 or -errno with
 * a message.
 */
int pn_topo_load(struct pn_topo *t, const struct pn_topo_cfg *cfg);
void pn_topo_release(struct pn_topo *t);

/* Device index (GPUs first) by matrix name ("GPU2", "NIC0"); -1 if none. */
int pn_topo_find(const struct pn_topo *t, const char *name);

/*
 * Path class between devices a and b (indices into t->devs).  NVLinks win
 * for GPU pairs unless pcie_only; *nvlinks gets the count for PN_PATH_NV.
 */
int pn_topo_path(const struct pn_topo *t, int a, int b, int pcie_only, int *nvlinks);

/* PCIe class between tree nodes a and b (-1: virtual device, SYS). */
int pn_tnode_path(const struct pn_tnode *nodes, int nnodes, int a, int b);

/* "X", "NV18", "PIX", ... into buf; returns buf. */
const char *pn_path_name(int cls, int nvlinks, char *buf, size_t len);
/* Parse a class name ("nv4" too); returns the class or -1. */
int pn_path_parse(const char *s, int *nvlinks);

/*
 * Rail of GPU g: the NICs at the best PCIe class from it, in index order.
 * Fills nics[] (t->nnics entries at most) with device indices, *cls with the
 * class; returns how many (0 when there are no NICs).
 */
int pn_topo_rail(const struct pn_topo *t, int g, int *nics, int *cls);

/*
 * The hwloc XML document itself (node/hwloc_xml.c, read with base/xml.h):
 * hwloc 3.x XML to hwloc 2.x XML, for libhwloc 2.x: version 2.0, OS device
 * types from v3 flags to v2 values, v3 top-level infos moved into the root
 * object, pci_locality and comments dropped, gp_index from id.  The rest is
 * written back as libxml2 writes it (hwloc's own export: byte for byte the
 * same).  *out is malloc'ed and NUL-terminated.
 */
int pn_topo_xml_downgrade(const char *in, size_t len, char **out, size_t *outlen);
/*
 * PCI bus id ("0000:3b:00.0") from a sysfs device link ("../../../0000:3b:00.0"):
 * 0, or -EINVAL when the last component is not domain:bus:device.function
 * in range (domain up to 0xffffff, bus 0xff, device 0x1f, function 7).
 */
int pn_topo_busid_from_link(const char *link, char *busid, size_t len);
/* Major version of an hwloc XML document (1 when unversioned); -1 not hwloc XML. */
int pn_topo_xml_version(const char *buf, size_t len);
/*
 * Is buf well-formed XML as penny accepts it (libxml2, base/xml.h): one
 * root element, every element closed, quoted attributes each once, no
 * DOCTYPE internal subset, no CDATA, no '>' inside a processing
 * instruction, no NUL byte.  0, or -EINVAL with "malformed XML at line L:
 * ..." in penny's words ("a second root element", "unterminated tag", ...).
 */
int pn_topo_xml_check(const char *buf, size_t len);

#endif
