/* SPDX-License-Identifier: MIT */
/*
 * RDMA devices and their ports, read from /sys/class/infiniband through the
 * sysfs root (InfiniBand, RoCE, and virtual devices such as rxe that have no
 * PCI parent).  Used by topo (port table, rails), top (enumeration) and the
 * verbs transport (GID choice).
 */
#ifndef PENNY_NIC_H
#define PENNY_NIC_H

#include <stddef.h>
#include <stdint.h>

/* Where RDMA devices are, under the sysfs root (node/sysfs.h). */
#define PN_IB_CLASS "/sys/class/infiniband"

enum pn_port_state { /* ib_port_state values, as in the sysfs "N: NAME" prefix */
	PN_PORT_NOP = 0,
	PN_PORT_DOWN = 1,
	PN_PORT_INIT = 2,
	PN_PORT_ARMED = 3,
	PN_PORT_ACTIVE = 4,
	PN_PORT_ACTIVE_DEFER = 5,
};

struct pn_port {
	int port;		/* port number, from 1 */
	int state;		/* enum pn_port_state, -1 unreadable */
	char state_name[16];	/* "ACTIVE" */
	int phys_state;		/* 5 = LinkUp, -1 unreadable */
	char phys_state_name[24]; /* "LinkUp" */
	double rate_gbps;	/* from "rate"; 0 unknown */
	char rate[48];		/* "100 Gb/sec (4X EDR)" as read; "" unknown */
	int rate_err;		/* 0, -errno of reading "rate", -EINVAL not a rate */
	char link_layer[16];	/* "InfiniBand" / "Ethernet" */
	char netdev[32];	/* associated netdev, "" if none */
	int lid;		/* -1 if none (RoCE) */
	int gid_index;		/* default GID index (pn_nic_pick_gid), -1 none */
	char gid[48];		/* that GID, printed "fe80:0000:..." as in sysfs */
	char gid_type[16];	/* "RoCE v2", "IB/RoCE v1", "" */
};

struct pn_nic {
	char name[64];		/* "mlx5_0", "rxe0" */
	char pci_busid[16];	/* "0000:3b:00.0", "" if virtual */
	int numa;		/* NUMA node, -1 unknown */
	char cpus[256];		/* local_cpulist of the PCI device, "" unknown */
	char parent[32];	/* rxe/siw: netdev it is bound to */
	char node_guid[24];
	char fw_ver[32];
	char hca_type[32];
	char node_type[16];	/* "CA", "RNIC", "Switch" */
	unsigned vendor_id, device_id; /* PCI ids (or sysfs vendor_id for rxe) */
	int nports;
	struct pn_port *ports;	/* every port, in numeric order */
};

/* Ports of one device pn_nic_read reads (a 64-port switch has 65 with its
 * management port 0; more is a tree to refuse, not to cut). */
#define PN_NIC_MAX_PORTS 1024

struct pn_nic_list {
	int n;
	struct pn_nic *nics;	/* natural order of names */
};

/* Enumerate RDMA devices.  A missing /sys/class/infiniband is an empty list. */
int pn_nic_list_read(struct pn_nic_list *l);
void pn_nic_list_release(struct pn_nic_list *l);
/* Read one device by name (ports included: all, numerically; -E2BIG over
 * PN_NIC_MAX_PORTS). */
int pn_nic_read(const char *name, struct pn_nic *nic);
void pn_nic_release(struct pn_nic *nic);
int pn_port_read(const char *dev, int port, struct pn_port *p);

/*
 * Default GID of a port: InfiniBand index 0; RoCE prefers an IPv4-mapped
 * RoCE v2 GID, then any RoCE v2, then index 0.  Returns the index or -ENOENT.
 */
int pn_nic_pick_gid(const char *dev, int port, char *gid, size_t gidlen, char *type,
		    size_t typelen);

/*
 * "400 Gb/sec (4X NDR)" -> 400; "2.5 Gb/sec (1X SDR)" -> 2.5; 0 when unknown:
 * not a rate, or one outside [PN_RATE_MIN_GBPS, PN_RATE_MAX_GBPS] ("inf",
 * "0", "1e300 Gb/sec": no line to measure against).
 */
#define PN_RATE_MIN_GBPS 0.001	/* 1 Mb/s */
#define PN_RATE_MAX_GBPS 10000.0	/* 10 Tb/s, ten times today's fastest port */
double pn_parse_rate(const char *s);
/* "4: ACTIVE" -> 4 and "ACTIVE" into name; -1 when unparsable. */
int pn_parse_state(const char *s, char *name, size_t len);
/* "ACTIVE"/"active"/"4" -> 4; -1 unknown name. */
int pn_port_state_from_name(const char *s);
/* A GID as sysfs shows it ("fe80:0000:..."): all zeros (an empty slot); IPv4-mapped. */
int pn_gid_empty(const char *g);
int pn_gid_ipv4_mapped(const char *g);

/* ACTIVE (or ACTIVE_DEFER) and physically LinkUp: a port that carries traffic. */
static inline int pn_port_up(const struct pn_port *p)
{
	return (p->state == PN_PORT_ACTIVE || p->state == PN_PORT_ACTIVE_DEFER) &&
	       p->phys_state == 5;
}

#endif
