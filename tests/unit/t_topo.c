/* SPDX-License-Identifier: MIT */
/*
 * Path classification (nvidia-smi semantics) over small hwloc XML topologies
 * built here, and over hand-made trees; GPU detection; rails; NVLink counts
 * from an hwloc NVLinkBandwidth matrix; class names; the --expect-* options
 * checked before anything is read.
 */
#define _GNU_SOURCE
#include "base/log.h"
#include "node/nvml.h"
#include "node/sysfs.h"
#include "node/topo.h"
#include "node/topo_check.h"
#include "unit.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>

/* ---- a tiny hwloc v2 XML builder: two packages, one NUMA node and two PUs each ---- */

struct xb {
	char s[32768];
	size_t n;
	int gp;
};

static void put(struct xb *x, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(struct xb *x, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	x->n += (size_t)vsnprintf(x->s + x->n, sizeof(x->s) - x->n, fmt, ap);
	va_end(ap);
}

static void xb_begin(struct xb *x)
{
	x->n = 0;
	x->gp = 100;
	put(x, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
	       "<!DOCTYPE topology SYSTEM \"hwloc2.dtd\">\n<topology version=\"2.0\">\n"
	       "<object type=\"Machine\" os_index=\"0\" cpuset=\"0x0000000f\" "
	       "complete_cpuset=\"0x0000000f\" allowed_cpuset=\"0x0000000f\" nodeset=\"0x00000003\" "
	       "complete_nodeset=\"0x00000003\" allowed_nodeset=\"0x00000003\" gp_index=\"1\">\n"
	       "<info name=\"HostName\" value=\"unit\"/>\n");
}

/* Open package p (0 or 1): its NUMA node and PUs; I/O objects follow. */
static void xb_package(struct xb *x, int p)
{
	unsigned cs = p ? 0xc : 0x3, ns = p ? 2 : 1;

	put(x, "<object type=\"Package\" os_index=\"%d\" cpuset=\"0x%08x\" complete_cpuset=\"0x%08x\" "
	       "nodeset=\"0x%08x\" complete_nodeset=\"0x%08x\" gp_index=\"%d\">\n",
	    p, cs, cs, ns, ns, 10 + 10 * p);
	put(x, "<object type=\"NUMANode\" os_index=\"%d\" cpuset=\"0x%08x\" complete_cpuset=\"0x%08x\" "
	       "nodeset=\"0x%08x\" complete_nodeset=\"0x%08x\" gp_index=\"%d\" local_memory=\"1048576\"/>\n",
	    p, cs, cs, ns, ns, 11 + 10 * p);
	put(x, "<object type=\"PU\" os_index=\"%d\" cpuset=\"0x%08x\" complete_cpuset=\"0x%08x\" "
	       "nodeset=\"0x%08x\" complete_nodeset=\"0x%08x\" gp_index=\"%d\"/>\n",
	    2 * p, cs & 0x5, cs & 0x5, ns, ns, 12 + 10 * p);
	put(x, "<object type=\"PU\" os_index=\"%d\" cpuset=\"0x%08x\" complete_cpuset=\"0x%08x\" "
	       "nodeset=\"0x%08x\" complete_nodeset=\"0x%08x\" gp_index=\"%d\"/>\n",
	    2 * p + 1, cs & 0xa, cs & 0xa, ns, ns, 13 + 10 * p);
}

static void xb_hostbridge(struct xb *x, int lo, int hi)
{
	put(x, "<object type=\"Bridge\" gp_index=\"%d\" bridge_type=\"0-1\" depth=\"0\" "
	       "bridge_pci=\"0000:[%02x-%02x]\">\n",
	    x->gp++, lo, hi);
}

static void xb_bridge(struct xb *x, const char *busid, int sec, int sub)
{
	put(x, "<object type=\"Bridge\" gp_index=\"%d\" bridge_type=\"1-1\" depth=\"0\" "
	       "bridge_pci=\"0000:[%02x-%02x]\" pci_busid=\"%s\" "
	       "pci_type=\"0604 [8086:2030] [0000:0000] 00\" pci_link_speed=\"0.0\">\n",
	    x->gp++, sec, sub, busid);
}

/* A PCI function; with osdev, an OpenFabrics OS device of that name under it. */
static void xb_pci(struct xb *x, const char *busid, unsigned cls, unsigned ven, unsigned dev,
		   const char *osdev)
{
	put(x, "<object type=\"PCIDev\" gp_index=\"%d\" pci_busid=\"%s\" "
	       "pci_type=\"%04x [%04x:%04x] [0000:0000] 00\" pci_link_speed=\"0.0\">\n",
	    x->gp++, busid, cls, ven, dev);
	if (osdev)
		put(x, "<object type=\"OSDev\" gp_index=\"%d\" name=\"%s\" osdev_type=\"3\"/>\n",
		    x->gp++, osdev);
	put(x, "</object>\n");
}

static void xb_gpu(struct xb *x, const char *busid)
{
	xb_pci(x, busid, 0x0302, 0x10de, 0x2335, NULL);
}

static void xb_close(struct xb *x)
{
	put(x, "</object>\n");
}

static void xb_end(struct xb *x, const char *extra)
{
	put(x, "</object>\n%s</topology>\n", extra ? extra : "");
}

static int load(struct pn_topo *t, struct xb *x)
{
	struct pn_topo_cfg cfg = { .xml_buf = x->s, .xml_len = x->n };
	int ret = pn_topo_load(t, &cfg);

	if (ret)
		printf("#   load failed: %s\n", pn_errmsg(ret));
	return ret;
}

static char clsbuf[8][16];
static int clsn;

/* Class between two devices by matrix name ("?" when unknown). */
static const char *cls(const struct pn_topo *t, const char *a, const char *b)
{
	int ia = pn_topo_find(t, a), ib = pn_topo_find(t, b), links, c;
	char *buf = clsbuf[clsn++ % 8];

	if (ia < 0 || ib < 0)
		return "?";
	c = pn_topo_path(t, ia, ib, 0, &links);
	return pn_path_name(c, links, buf, 16);
}

/* Both directions agree and equal want. */
#define CHECK_CLS(t, a, b, want)                                                                \
	do {                                                                                    \
		CHECK_STR(cls(t, a, b), want);                                                  \
		CHECK_STR(cls(t, b, a), want);                                                  \
	} while (0)

/* GPU0 and GPU1 and NIC0 behind downstream ports of one switch below a root port. */
TEST(one_switch)
{
	struct pn_topo t;
	struct xb x;

	xb_begin(&x);
	xb_package(&x, 0);
	xb_hostbridge(&x, 0x00, 0x05);
	xb_bridge(&x, "0000:00:01.0", 0x01, 0x05); /* root port */
	xb_bridge(&x, "0000:01:00.0", 0x02, 0x05); /* upstream port */
	xb_bridge(&x, "0000:02:00.0", 0x03, 0x03); /* downstream ports */
	xb_gpu(&x, "0000:03:00.0");
	xb_close(&x);
	xb_bridge(&x, "0000:02:01.0", 0x04, 0x04);
	xb_pci(&x, "0000:04:00.0", 0x0207, 0x15b3, 0x1021, "mlx5_0");
	xb_pci(&x, "0000:04:00.1", 0x0207, 0x15b3, 0x1021, "mlx5_1");
	xb_close(&x);
	xb_bridge(&x, "0000:02:02.0", 0x05, 0x05);
	xb_gpu(&x, "0000:05:00.0");
	xb_close(&x);
	xb_close(&x);
	xb_close(&x);
	xb_close(&x);
	xb_close(&x);
	xb_end(&x, NULL);
	if (load(&t, &x)) {
		CHECK(0);
		return;
	}
	CHECK_EQ_INT(t.ngpus, 2);
	CHECK_EQ_INT(t.nnics, 2);
	CHECK_STR(t.host, "unit");
	CHECK_STR(t.source, "xml");
	CHECK_CLS(&t, "GPU0", "GPU0", "X");
	CHECK_CLS(&t, "GPU0", "GPU1", "PIX");
	CHECK_CLS(&t, "GPU0", "NIC0", "PIX");
	CHECK_CLS(&t, "GPU1", "NIC1", "PIX");
	CHECK_CLS(&t, "NIC0", "NIC1", "PIX"); /* two functions of one card */
	CHECK_STR(t.devs[2].nic.name, "mlx5_0");
	CHECK_STR(t.devs[2].pci_busid, "0000:04:00.0");
	CHECK_EQ_INT(t.devs[2].numa, 0);
	CHECK_STR(t.devs[2].cpus, "0-1");
	CHECK_EQ_INT(t.devs[2].nic.nports, 0); /* XML: no ports without sysfs */
	pn_topo_release(&t);
}

/* Two switches below a top switch: PXB across them, PIX inside one. */
TEST(two_level_switches)
{
	struct pn_topo t;
	int nics[4], n, c;
	struct xb x;

	xb_begin(&x);
	xb_package(&x, 0);
	xb_hostbridge(&x, 0x00, 0x0a);
	xb_bridge(&x, "0000:00:01.0", 0x01, 0x0a); /* root port */
	xb_bridge(&x, "0000:01:00.0", 0x02, 0x0a); /* top switch: upstream */
	xb_bridge(&x, "0000:02:00.0", 0x03, 0x05); /* top downstream 0 */
	xb_bridge(&x, "0000:03:00.0", 0x04, 0x05); /* switch A upstream */
	xb_bridge(&x, "0000:04:00.0", 0x05, 0x05); /* switch A downstream */
	xb_gpu(&x, "0000:05:00.0");
	xb_close(&x);
	xb_close(&x);
	xb_close(&x);
	xb_bridge(&x, "0000:02:01.0", 0x06, 0x09); /* top downstream 1 */
	xb_bridge(&x, "0000:06:00.0", 0x07, 0x09); /* switch B upstream */
	xb_bridge(&x, "0000:07:00.0", 0x08, 0x08);
	xb_gpu(&x, "0000:08:00.0");
	xb_close(&x);
	xb_bridge(&x, "0000:07:01.0", 0x09, 0x09);
	xb_pci(&x, "0000:09:00.0", 0x0207, 0x15b3, 0x1021, "mlx5_0");
	xb_close(&x);
	xb_close(&x);
	xb_close(&x);
	xb_bridge(&x, "0000:02:02.0", 0x0a, 0x0a); /* top downstream 2 */
	xb_pci(&x, "0000:0a:00.0", 0x0207, 0x15b3, 0x1021, "mlx5_1");
	xb_close(&x);
	xb_close(&x);
	xb_close(&x);
	xb_close(&x);
	xb_close(&x);
	xb_end(&x, NULL);
	if (load(&t, &x)) {
		CHECK(0);
		return;
	}
	CHECK_EQ_INT(t.ngpus, 2);
	CHECK_EQ_INT(t.nnics, 2);
	CHECK_CLS(&t, "GPU0", "GPU1", "PXB"); /* switches A, top, B */
	CHECK_CLS(&t, "GPU1", "NIC0", "PIX"); /* inside switch B */
	CHECK_CLS(&t, "GPU0", "NIC0", "PXB");
	CHECK_CLS(&t, "GPU0", "NIC1", "PXB"); /* switch A and the top switch */
	CHECK_CLS(&t, "GPU1", "NIC1", "PXB");
	CHECK_CLS(&t, "NIC0", "NIC1", "PXB");
	/* rails: GPU1 -> NIC0 (PIX); GPU0: a tie at PXB, both NICs in index order */
	n = pn_topo_rail(&t, 1, nics, &c);
	CHECK_EQ_INT(n, 1);
	CHECK_EQ_INT(c, PN_PATH_PIX);
	CHECK_EQ_INT(nics[0], 2);
	n = pn_topo_rail(&t, 0, nics, &c);
	CHECK_EQ_INT(n, 2);
	CHECK_EQ_INT(c, PN_PATH_PXB);
	CHECK_EQ_INT(nics[0], 2);
	CHECK_EQ_INT(nics[1], 3);
	pn_topo_release(&t);
}

/* Root ports of one host bridge, and a device on the host bridge's own bus. */
TEST(host_bridge)
{
	struct pn_topo t;
	struct xb x;

	xb_begin(&x);
	xb_package(&x, 0);
	xb_hostbridge(&x, 0x00, 0x02);
	xb_bridge(&x, "0000:00:01.0", 0x01, 0x01);
	xb_gpu(&x, "0000:01:00.0");
	xb_close(&x);
	xb_bridge(&x, "0000:00:02.0", 0x02, 0x02);
	xb_pci(&x, "0000:02:00.0", 0x0207, 0x15b3, 0x1021, "mlx5_0");
	xb_close(&x);
	xb_gpu(&x, "0000:00:05.0");
	xb_close(&x);
	xb_close(&x);
	xb_end(&x, NULL);
	if (load(&t, &x)) {
		CHECK(0);
		return;
	}
	CHECK_EQ_INT(t.ngpus, 2);
	CHECK_STR(t.devs[0].pci_busid, "0000:00:05.0"); /* PCI order */
	CHECK_CLS(&t, "GPU0", "GPU1", "PHB");
	CHECK_CLS(&t, "GPU1", "NIC0", "PHB");
	CHECK_CLS(&t, "GPU0", "NIC0", "PHB");
	pn_topo_release(&t);
}

/* Two host bridges in NUMA node 0 (NODE), a third in NUMA node 1 (SYS). */
TEST(host_bridges_and_numa)
{
	struct pn_topo t;
	struct xb x;

	xb_begin(&x);
	xb_package(&x, 0);
	xb_hostbridge(&x, 0x00, 0x01);
	xb_bridge(&x, "0000:00:01.0", 0x01, 0x01);
	xb_gpu(&x, "0000:01:00.0");
	xb_close(&x);
	xb_close(&x);
	xb_hostbridge(&x, 0x40, 0x41);
	xb_bridge(&x, "0000:40:01.0", 0x41, 0x41);
	xb_pci(&x, "0000:41:00.0", 0x0207, 0x15b3, 0x1021, "mlx5_0");
	xb_close(&x);
	xb_close(&x);
	xb_close(&x);
	xb_package(&x, 1);
	xb_hostbridge(&x, 0x80, 0x81);
	xb_bridge(&x, "0000:80:01.0", 0x81, 0x81);
	xb_gpu(&x, "0000:81:00.0");
	xb_close(&x);
	xb_close(&x);
	xb_close(&x);
	xb_end(&x, NULL);
	if (load(&t, &x)) {
		CHECK(0);
		return;
	}
	CHECK_EQ_INT(t.ngpus, 2);
	CHECK_CLS(&t, "GPU0", "NIC0", "NODE");
	CHECK_CLS(&t, "GPU1", "NIC0", "SYS");
	CHECK_CLS(&t, "GPU0", "GPU1", "SYS");
	CHECK_EQ_INT(t.devs[1].numa, 1);
	CHECK_STR(t.devs[1].cpus, "2-3");
	pn_topo_release(&t);
}

/* Which display controllers are GPUs. */
TEST(gpu_detection)
{
	struct pn_topo t;
	struct xb x;

	xb_begin(&x);
	xb_package(&x, 0);
	xb_hostbridge(&x, 0x00, 0x00);
	xb_pci(&x, "0000:00:01.0", 0x0300, 0x1a03, 0x2000, NULL); /* ASPEED BMC: no */
	xb_pci(&x, "0000:00:02.0", 0x0300, 0x102b, 0x0532, NULL); /* Matrox: no */
	xb_pci(&x, "0000:00:03.0", 0x0300, 0x10de, 0x2684, NULL); /* NVIDIA VGA: yes */
	xb_pci(&x, "0000:00:04.0", 0x0380, 0x1002, 0x74a1, NULL); /* AMD Instinct: yes */
	xb_pci(&x, "0000:00:05.0", 0x0302, 0x10de, 0x2335, NULL); /* NVIDIA 3D: yes */
	xb_pci(&x, "0000:00:06.0", 0x0200, 0x8086, 0x1521, NULL); /* Ethernet: no */
	xb_pci(&x, "0000:00:07.0", 0x1200, 0x1002, 0x74b5, NULL); /* AMD MI300X: yes */
	xb_pci(&x, "0000:00:08.0", 0x1200, 0x1da3, 0x1020, NULL); /* Gaudi accelerator: no */
	xb_close(&x);
	xb_close(&x);
	xb_end(&x, NULL);
	if (load(&t, &x)) {
		CHECK(0);
		return;
	}
	CHECK_EQ_INT(t.ngpus, 4);
	CHECK_EQ_INT(t.nnics, 0);
	if (t.ngpus == 4) {
		CHECK_STR(t.devs[0].pci_busid, "0000:00:03.0");
		CHECK_EQ_INT(t.devs[1].vendor_id, 0x1002);
		CHECK_EQ_INT(t.devs[2].device_id, 0x2335);
		CHECK_STR(t.devs[2].name, "GPU2");
		CHECK_STR(t.devs[3].pci_busid, "0000:00:07.0");
	}
	pn_topo_release(&t);
}

/* NVLinks from hwloc's NVLinkBandwidth matrix win over PCIe classes. */
TEST(nvlink_from_xml)
{
	char extra[512];
	const char *idx = "PCIDev:101 PCIDev:102 PCIDev:103 ";
	const char *val = "1000000 100000 0 100000 1000000 40000 0 40000 1000000 ";
	struct pn_topo t;
	struct xb x;
	int links;

	xb_begin(&x);
	xb_package(&x, 0);
	xb_hostbridge(&x, 0x00, 0x00); /* gp_index 100, GPUs 101..103 */
	xb_gpu(&x, "0000:00:01.0");
	xb_gpu(&x, "0000:00:02.0");
	xb_gpu(&x, "0000:00:03.0");
	xb_close(&x);
	xb_close(&x);
	snprintf(extra, sizeof(extra),
		 "<distances2hetero nbobjs=\"3\" kind=\"25\" name=\"NVLinkBandwidth\">\n"
		 "<indexes length=\"%zu\">%s</indexes>\n<u64values length=\"%zu\">%s</u64values>\n"
		 "</distances2hetero>\n",
		 strlen(idx), idx, strlen(val), val);
	xb_end(&x, extra);
	if (load(&t, &x)) {
		CHECK(0);
		return;
	}
	CHECK_EQ_INT(t.ngpus, 3);
	CHECK_STR(t.nvlink_source, "xml");
	CHECK_CLS(&t, "GPU0", "GPU1", "NV4"); /* 4 x 25 GB/s */
	CHECK_CLS(&t, "GPU1", "GPU2", "NV2"); /* 2 x 20 GB/s (NVLink 1) */
	CHECK_CLS(&t, "GPU0", "GPU2", "PHB");
	CHECK_EQ_INT(pn_topo_path(&t, 0, 1, 1, &links), PN_PATH_PHB); /* --pcie */
	CHECK_EQ_INT(links, 0);
	pn_topo_release(&t);
}

/* Hand-made trees: the pure function, including what hwloc never builds. */
TEST(tree_pure)
{
	/* 0 CPU numa0, 1 CPU numa0 (other package, same node set), 2 CPU numa1 */
	struct pn_tnode n[] = {
		{ PN_TN_CPU, -1, 0 },	     /* 0 */
		{ PN_TN_CPU, -1, 0 },	     /* 1 */
		{ PN_TN_CPU, -1, 1 },	     /* 2 */
		{ PN_TN_HOSTBRIDGE, 0, -1 }, /* 3 */
		{ PN_TN_BRIDGE, 3, -1 },     /* 4 root port */
		{ PN_TN_PCI, 4, -1 },	     /* 5 device on the root port */
		{ PN_TN_PCI, 4, -1 },	     /* 6 its second function */
		{ PN_TN_HOSTBRIDGE, 1, -1 }, /* 7 */
		{ PN_TN_PCI, 7, -1 },	     /* 8 */
		{ PN_TN_HOSTBRIDGE, 2, -1 }, /* 9 */
		{ PN_TN_PCI, 9, -1 },	     /* 10 */
		{ PN_TN_PCI, 0, -1 },	     /* 11 no host bridge object */
		{ PN_TN_CPU, -1, -1 },	     /* 12 unknown NUMA */
		{ PN_TN_PCI, 12, -1 },	     /* 13 */
	};
	int nn = (int)(sizeof(n) / sizeof(n[0]));

	CHECK_EQ_INT(pn_tnode_path(n, nn, 5, 6), PN_PATH_PIX);
	CHECK_EQ_INT(pn_tnode_path(n, nn, 5, 5), PN_PATH_PIX);
	CHECK_EQ_INT(pn_tnode_path(n, nn, 5, 8), PN_PATH_NODE);
	CHECK_EQ_INT(pn_tnode_path(n, nn, 5, 10), PN_PATH_SYS);
	CHECK_EQ_INT(pn_tnode_path(n, nn, 5, 11), PN_PATH_NODE);
	CHECK_EQ_INT(pn_tnode_path(n, nn, 5, 13), PN_PATH_SYS);
	CHECK_EQ_INT(pn_tnode_path(n, nn, 13, 13), PN_PATH_PIX);
	CHECK_EQ_INT(pn_tnode_path(n, nn, 5, -1), PN_PATH_SYS); /* virtual (rxe) */
	CHECK_EQ_INT(pn_tnode_path(n, nn, -1, -1), PN_PATH_SYS);
	CHECK_EQ_INT(pn_tnode_path(n, nn, 5, 99), PN_PATH_SYS);
}

TEST(class_names)
{
	char buf[16];
	int links;

	CHECK_STR(pn_path_name(PN_PATH_NV, 18, buf, sizeof(buf)), "NV18");
	CHECK_STR(pn_path_name(PN_PATH_NODE, 0, buf, sizeof(buf)), "NODE");
	CHECK_STR(pn_path_name(PN_PATH_X, 0, buf, sizeof(buf)), "X");
	CHECK_STR(pn_path_name(42, 0, buf, sizeof(buf)), "?");
	CHECK_EQ_INT(pn_path_parse("NV12", &links), PN_PATH_NV);
	CHECK_EQ_INT(links, 12);
	CHECK_EQ_INT(pn_path_parse("pxb", &links), PN_PATH_PXB);
	CHECK_EQ_INT(pn_path_parse(" X ", &links), PN_PATH_X);
	CHECK_EQ_INT(pn_path_parse("NV", &links), -1);
	CHECK_EQ_INT(pn_path_parse("NV0", &links), -1);
	CHECK_EQ_INT(pn_path_parse("PCIE", &links), -1);
	CHECK_EQ_INT(pn_path_parse(NULL, &links), -1);
	CHECK(PN_PATH_X < PN_PATH_NV && PN_PATH_NV < PN_PATH_PIX && PN_PATH_PIX < PN_PATH_PXB &&
	      PN_PATH_PXB < PN_PATH_PHB && PN_PATH_PHB < PN_PATH_NODE &&
	      PN_PATH_NODE < PN_PATH_SYS);
}

TEST(nvlink_bandwidth)
{
	CHECK_EQ_INT(pn_nvml_links_from_bw(0), 0);
	CHECK_EQ_INT(pn_nvml_links_from_bw(20000), 1);
	CHECK_EQ_INT(pn_nvml_links_from_bw(40000), 2);
	CHECK_EQ_INT(pn_nvml_links_from_bw(25000), 1);
	CHECK_EQ_INT(pn_nvml_links_from_bw(100000), 4);
	CHECK_EQ_INT(pn_nvml_links_from_bw(450000), 18);
	CHECK_EQ_INT(pn_nvml_links_from_bw(12345), 0);
}

TEST(nvml_absent)
{
	const char *ids[2] = { "0000:07:00.0", "0000:08:00.0" };
	int links[4] = { 7, 7, 7, 7 };

	pn_nvml_set_lib("/nonexistent/libnvidia-ml.so.1");
	CHECK_EQ_INT(pn_nvml_links(2, ids, links), -ENOENT);
	CHECK_EQ_INT(links[0] + links[1] + links[2] + links[3], 0);
	CHECK_EQ_INT(pn_nvml_links(0, ids, links), -ENOENT);
	pn_nvml_set_lib(NULL);
}

TEST(bad_xml)
{
	struct pn_topo_cfg cfg = { 0 };
	struct pn_topo t;
	const char *junk = "<html><body>not hwloc</body></html>";
	const char *broken = "<?xml version=\"1.0\"?><topology version=\"2.0\"><object type=";
	const char *future = "<topology version=\"7.0\"></topology>";

	cfg.xml_buf = junk;
	cfg.xml_len = strlen(junk);
	CHECK_EQ_INT(pn_topo_load(&t, &cfg), -EINVAL);
	CHECK(strstr(pn_errmsg(-EINVAL), "not an hwloc XML") != NULL);
	cfg.xml_buf = broken;
	cfg.xml_len = strlen(broken);
	CHECK_EQ_INT(pn_topo_load(&t, &cfg), -EINVAL);
	cfg.xml_buf = future;
	cfg.xml_len = strlen(future);
	CHECK_EQ_INT(pn_topo_load(&t, &cfg), -EINVAL);
	CHECK(strstr(pn_errmsg(-EINVAL), "version 7") != NULL);
	cfg.xml_buf = NULL;
	cfg.xml_file = "/nonexistent/topo.xml";
	CHECK_EQ_INT(pn_topo_load(&t, &cfg), -ENOENT);
	CHECK(strstr(pn_errmsg(-ENOENT), "/nonexistent/topo.xml") != NULL);
}

TEST(expect_options_checked_first)
{
	struct pn_topo_expect e = { .gpus = -1, .nics = -1, .rate = -1, .state = -1 };
	char many[64 * 8 + 16] = "";
	int i;

	CHECK_EQ_INT(pn_topo_expect_valid(&e), 0);
	CHECK(!pn_topo_expect_any(&e));
	/* -d picks ports for --expect-state or --expect-rate only */
	e.devices = "mlx5_0";
	CHECK_EQ_INT(pn_topo_expect_valid(&e), -EINVAL);
	CHECK(strstr(pn_errmsg(-EINVAL), "give one of them") != NULL);
	e.rate = 100;
	CHECK(pn_topo_expect_any(&e));
	CHECK_EQ_INT(pn_topo_expect_valid(&e), 0);
	e.devices = "mlx5_0:1,mlx5_1:255,mlx5_2";
	CHECK_EQ_INT(pn_topo_expect_valid(&e), 0);
	e.devices = "mlx5_0:0";
	CHECK_EQ_INT(pn_topo_expect_valid(&e), -EINVAL);
	CHECK_STR(pn_errmsg(-EINVAL), "-d 'mlx5_0:0': want DEV or DEV:PORT, PORT 1..255");
	e.devices = ":1";
	CHECK_EQ_INT(pn_topo_expect_valid(&e), -EINVAL);
	e.devices = "mlx5_0:x";
	CHECK_EQ_INT(pn_topo_expect_valid(&e), -EINVAL);
	for (i = 0; i < 65; i++)
		snprintf(many + strlen(many), sizeof(many) - strlen(many), "%sd%d", i ? "," : "", i);
	e.devices = many;
	CHECK_EQ_INT(pn_topo_expect_valid(&e), -EINVAL);
	CHECK_STR(pn_errmsg(-EINVAL), "-d names more than 64 devices or ports");
	many[strlen(many) - 4] = 0; /* 64 */
	CHECK_EQ_INT(pn_topo_expect_valid(&e), 0);
}

int main(void)
{
	RUN(one_switch);
	RUN(two_level_switches);
	RUN(host_bridge);
	RUN(host_bridges_and_numa);
	RUN(gpu_detection);
	RUN(nvlink_from_xml);
	RUN(tree_pure);
	RUN(class_names);
	RUN(nvlink_bandwidth);
	RUN(nvml_absent);
	RUN(bad_xml);
	RUN(expect_options_checked_first);
	return unit_done();
}
