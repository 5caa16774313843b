/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
#include "node/nvml.h"
#include "base/log.h"
#include "base/util.h"

#include <stdint.h>

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * The few NVML types penny needs, declared from the public NVML API
 * reference (nvml.h is not needed to build penny).
 */
typedef int nvml_ret;
typedef struct nvml_device *nvml_dev;
#define NVML_OK 0
#define NVML_ERR_INVALID_ARGUMENT 2
#define NVML_FEATURE_ENABLED 1
#define NVML_LINK_GPU 0x00
#define NVML_LINK_SWITCH 0x02
#define NVML_MAX_LINKS 64 /* upper bound; NVML answers INVALID_ARGUMENT past the last */

struct nvml_pci_info {
	char bus_id_legacy[16];
	unsigned domain;
	unsigned bus;
	unsigned device;
	unsigned pci_device_id;
	unsigned pci_subsystem_id;
	char bus_id[32];
};

/* nvmlFieldValue_t: 40 bytes, value at offset 32 */
struct nvml_field_value {
	unsigned field_id;
	unsigned scope_id;
	long long timestamp;
	long long latency_usec;
	int value_type;
	nvml_ret ret;
	union {
		double d;
		unsigned ui;
		unsigned long ul;
		unsigned long long ull;
		long long sll;
		int si;
		unsigned short us;
	} value;
};

#define NVML_FI_NVLINK_DATA_TX 138	/* NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX, KiB */
#define NVML_FI_NVLINK_DATA_RX 139	/* NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX, KiB */
#define NVML_FI_PCIE_TX 197		/* NVML_FI_DEV_PCIE_COUNT_TX_BYTES, bytes */
#define NVML_FI_PCIE_RX 198		/* NVML_FI_DEV_PCIE_COUNT_RX_BYTES, bytes */
#define NVML_SCOPE_ALL_LINKS 0xffffffffu	/* UINT_MAX: summed over the links */
enum { NVML_VT_DOUBLE, NVML_VT_UINT, NVML_VT_ULONG, NVML_VT_ULL, NVML_VT_SLL, NVML_VT_SINT,
       NVML_VT_USHORT };

struct nvml_api {
	void *lib;
	nvml_ret (*init)(void);
	nvml_ret (*shutdown)(void);
	nvml_ret (*count)(unsigned *n);
	nvml_ret (*by_busid)(const char *busid, nvml_dev *dev);
	nvml_ret (*link_state)(nvml_dev dev, unsigned link, int *active);
	nvml_ret (*remote_pci)(nvml_dev dev, unsigned link, struct nvml_pci_info *pci);
	nvml_ret (*remote_type)(nvml_dev dev, unsigned link, int *type); /* optional */
	/* the traffic of a session (pn_nvml_open): optional, NULL when missing */
	nvml_ret (*by_index)(unsigned i, nvml_dev *dev);
	nvml_ret (*name)(nvml_dev dev, char *name, unsigned len);
	nvml_ret (*pci_info)(nvml_dev dev, struct nvml_pci_info *pci);
	nvml_ret (*field_values)(nvml_dev dev, int n, struct nvml_field_value *v);
	nvml_ret (*pcie_tp)(nvml_dev dev, int counter, unsigned *kbps);
	nvml_ret (*p2p)(nvml_dev a, nvml_dev b, int index, int *status); /* optional */
};

int pn_nvml_links_from_bw(unsigned long long mbps)
{
	if (!mbps)
		return 0;
	if (mbps % 25000 == 0)
		return (int)(mbps / 25000);
	if (mbps % 20000 == 0)
		return (int)(mbps / 20000);
	return 0;
}

/* PENNY_NVML_LIB as the command read it (pn_nvml_set_lib); NULL unset */
static char *nvml_lib;

int pn_nvml_set_lib(const char *path)
{
	char *copy = NULL;

	if (path && !(copy = strdup(path)))
		return -ENOMEM;
	free(nvml_lib);
	nvml_lib = copy;
	return 0;
}

int pn_nvml_forced(void)
{
	const char *p = nvml_lib;

	return p && *p;
}

static void *sym(void *lib, const char *name, int *missing)
{
	void *p = dlsym(lib, name);

	if (!p) {
		PN_DBG(PN_LOG_TOPO, "nvml: no symbol %s", name);
		(*missing)++;
	}
	return p;
}

static int api_open(struct nvml_api *a)
{
	const char *path = nvml_lib;
	int missing = 0;

	memset(a, 0, sizeof(*a));
	if (!path || !*path)
		path = "libnvidia-ml.so.1";
	a->lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!a->lib) {
		PN_DBG(PN_LOG_TOPO, "nvml: %s", dlerror());
		return -ENOENT;
	}
	*(void **)&a->init = sym(a->lib, "nvmlInit_v2", &missing);
	*(void **)&a->shutdown = sym(a->lib, "nvmlShutdown", &missing);
	*(void **)&a->count = sym(a->lib, "nvmlDeviceGetCount_v2", &missing);
	*(void **)&a->by_busid = sym(a->lib, "nvmlDeviceGetHandleByPciBusId_v2", &missing);
	*(void **)&a->link_state = sym(a->lib, "nvmlDeviceGetNvLinkState", &missing);
	*(void **)&a->remote_pci = sym(a->lib, "nvmlDeviceGetNvLinkRemotePciInfo_v2", &missing);
	*(void **)&a->remote_type = dlsym(a->lib, "nvmlDeviceGetNvLinkRemoteDeviceType");
	*(void **)&a->by_index = dlsym(a->lib, "nvmlDeviceGetHandleByIndex_v2");
	*(void **)&a->name = dlsym(a->lib, "nvmlDeviceGetName");
	*(void **)&a->pci_info = dlsym(a->lib, "nvmlDeviceGetPciInfo_v3");
	*(void **)&a->field_values = dlsym(a->lib, "nvmlDeviceGetFieldValues");
	*(void **)&a->pcie_tp = dlsym(a->lib, "nvmlDeviceGetPcieThroughput");
	*(void **)&a->p2p = dlsym(a->lib, "nvmlDeviceGetP2PStatus");
	if (missing) {
		dlclose(a->lib);
		a->lib = NULL;
		return -ENOENT;
	}
	return 0;
}

static int parse_busid(const char *s, unsigned *dom, unsigned *bus, unsigned *dev)
{
	unsigned fn;

	return sscanf(s, "%x:%x:%x.%x", dom, bus, dev, &fn) == 4 ? 0 : -EINVAL;
}

/* Index of the GPU at PCI domain:bus:device, -1 if none of ours. */
static int find_gpu(int n, const unsigned (*ids)[3], const struct nvml_pci_info *pci)
{
	int i;

	for (i = 0; i < n; i++)
		if (ids[i][0] == pci->domain && ids[i][1] == pci->bus && ids[i][2] == pci->device)
			return i;
	return -1;
}

/* Count links of GPU i: direct[i * n + j] and *sw (links to NVSwitches). */
static void count_links(struct nvml_api *a, nvml_dev dev, int i, int n,
			const unsigned (*ids)[3], int *direct, int *sw)
{
	unsigned link;

	for (link = 0; link < NVML_MAX_LINKS; link++) {
		struct nvml_pci_info pci;
		int active = 0, type = -1, j;
		nvml_ret r;

		r = a->link_state(dev, link, &active);
		if (r == NVML_ERR_INVALID_ARGUMENT)
			break;
		if (r != NVML_OK || active != NVML_FEATURE_ENABLED)
			continue;
		if (a->remote_type && a->remote_type(dev, link, &type) != NVML_OK)
			type = -1;
		memset(&pci, 0, sizeof(pci));
		r = a->remote_pci(dev, link, &pci);
		j = r == NVML_OK ? find_gpu(n, ids, &pci) : -1;
		PN_DBG(PN_LOG_TOPO, "nvml: GPU%d link %u active, remote type %d %04x:%02x:%02x", i,
		       link, type, pci.domain, pci.bus, pci.device);
		if (type < 0 && r == NVML_OK && j < 0 && (pci.pci_device_id & 0xffff) == 0x10de)
			type = NVML_LINK_SWITCH; /* type unknown: an NVIDIA device that is no GPU of ours */
		if (type == NVML_LINK_SWITCH)
			(*sw)++;
		else if (j >= 0 && j != i && (type < 0 || type == NVML_LINK_GPU))
			direct[i * n + j]++;
	}
}

int pn_nvml_links(int n, const char *const *busids, int *links)
{
	struct nvml_api a;
	unsigned (*ids)[3] = NULL;
	int *direct = NULL, *sw = NULL;
	int i, j, ret;

	if (n <= 0)
		return -ENOENT;
	memset(links, 0, (size_t)n * (size_t)n * sizeof(*links));
	ret = api_open(&a);
	if (ret)
		return ret;
	ids = calloc((size_t)n, sizeof(*ids));
	direct = calloc((size_t)n * (size_t)n, sizeof(*direct));
	sw = calloc((size_t)n, sizeof(*sw));
	if (!ids || !direct || !sw) {
		ret = -ENOENT;
		goto out_close;
	}
	for (i = 0; i < n; i++)
		if (parse_busid(busids[i], &ids[i][0], &ids[i][1], &ids[i][2])) {
			ret = -ENOENT;
			goto out_close;
		}
	if (a.init() != NVML_OK) {
		PN_DBG(PN_LOG_TOPO, "nvml: nvmlInit_v2 failed");
		ret = -ENOENT;
		goto out_close;
	}
	ret = -ENOENT;
	for (i = 0; i < n; i++) {
		nvml_dev dev = NULL;

		/* not an NVIDIA GPU, or hidden from NVML: no NVLinks for it */
		if (a.by_busid(busids[i], &dev) != NVML_OK) {
			PN_DBG(PN_LOG_TOPO, "nvml: no device for %s", busids[i]);
			continue;
		}
		count_links(&a, dev, i, n, (const unsigned(*)[3])ids, direct, &sw[i]);
		ret = 0;
	}
	if (ret)
		goto out_shutdown;
	for (i = 0; i < n; i++)
		for (j = 0; j < n; j++) {
			int d = PN_MAX(direct[i * n + j], direct[j * n + i]);

			if (i == j)
				continue;
			if (sw[i] && sw[j])
				d += sw[i] < sw[j] ? sw[i] : sw[j];
			links[i * n + j] = d;
		}
out_shutdown:
	a.shutdown();
out_close:
	free(ids);
	free(direct);
	free(sw);
	dlclose(a.lib);
	if (ret)
		memset(links, 0, (size_t)n * (size_t)n * sizeof(*links));
	return ret;
}

/* ---- link state and P2P capability (penny check) ---- */

const char *pn_nvml_p2p_status(int status)
{
	static const char *const names[] = { "OK", "chipset not supported", "GPU not supported",
					      "IOH topology not supported",
					      "disabled by regkey", "not supported", "unknown" };

	return status >= 0 && status < 7 ? names[status] : "unknown";
}

int pn_nvml_health(int n, const char *const *busids, int *up, int *down, int *p2p)
{
	struct nvml_api a;
	nvml_dev *dev;
	int i, j, k, ret = -ENOENT;

	if (n <= 0)
		return -ENOENT;
	for (i = 0; i < n; i++)
		up[i] = down[i] = -1;
	for (i = 0; i < n * n * 2; i++)
		p2p[i] = -1;
	if (api_open(&a))
		return -ENOENT;
	dev = calloc((size_t)n, sizeof(*dev));
	if (!dev || a.init() != NVML_OK) {
		free(dev);
		dlclose(a.lib);
		return -ENOENT;
	}
	for (i = 0; i < n; i++) {
		unsigned link;

		if (a.by_busid(busids[i], &dev[i]) != NVML_OK) {
			dev[i] = NULL;
			continue;
		}
		ret = 0;
		up[i] = down[i] = 0;
		/* a link NVML does not support is none; one it knows is up or down */
		for (link = 0; link < NVML_MAX_LINKS; link++) {
			int active = 0;
			nvml_ret r = a.link_state(dev[i], link, &active);

			if (r == NVML_ERR_INVALID_ARGUMENT)
				break;
			if (r != NVML_OK)
				continue;
			if (active == NVML_FEATURE_ENABLED)
				up[i]++;
			else
				down[i]++;
		}
	}
	for (i = 0; a.p2p && i < n; i++)
		for (j = 0; j < n; j++)
			for (k = 0; dev[i] && dev[j] && i != j && k < 2; k++) {
				int st = -1;

				/* NVML_P2P_CAPS_INDEX_READ 0, _WRITE 1 */
				if (a.p2p(dev[i], dev[j], k, &st) == NVML_OK && st >= 0)
					p2p[(i * n + j) * 2 + k] = st;
			}
	a.shutdown();
	free(dev);
	dlclose(a.lib);
	return ret;
}

/* ---- a session for the traffic counters (gputraffic) ---- */

struct pn_nvml {
	struct nvml_api a;
	unsigned n;
};

int pn_nvml_open(struct pn_nvml **sp, char *why, size_t len)
{
	struct pn_nvml *s = calloc(1, sizeof(*s));

	*sp = NULL;
	if (!s)
		return -ENOMEM;
	if (api_open(&s->a)) {
		snprintf(why, len, "NVML (libnvidia-ml.so.1) not found");
		free(s);
		return -ENOENT;
	}
	if (!s->a.by_index || !s->a.pci_info || (!s->a.field_values && !s->a.pcie_tp)) {
		snprintf(why, len, "this NVML has no traffic counters");
		goto fail;
	}
	if (s->a.init() != NVML_OK) {
		snprintf(why, len, "NVML did not initialise (no NVIDIA driver?)");
		goto fail;
	}
	if (s->a.count(&s->n) != NVML_OK || s->n == 0) {
		snprintf(why, len, "NVML sees no GPUs");
		s->a.shutdown();
		goto fail;
	}
	if (s->n > PN_NVML_MAX_GPUS)
		s->n = PN_NVML_MAX_GPUS;
	*sp = s;
	return 0;
fail:
	dlclose(s->a.lib);
	free(s);
	return -ENOENT;
}

void pn_nvml_close(struct pn_nvml *s)
{
	if (!s)
		return;
	s->a.shutdown();
	dlclose(s->a.lib);
	free(s);
}

int pn_nvml_count(const struct pn_nvml *s)
{
	return s ? (int)s->n : 0;
}

static int handle(struct pn_nvml *s, int i, nvml_dev *dev)
{
	if (!s || i < 0 || (unsigned)i >= s->n || s->a.by_index((unsigned)i, dev) != NVML_OK)
		return -ENOENT;
	return 0;
}

int pn_nvml_gpu(struct pn_nvml *s, int i, char *name, size_t nlen, char *busid, size_t blen)
{
	struct nvml_pci_info pci;
	char buf[96] = "";
	nvml_dev dev;

	if (handle(s, i, &dev))
		return -ENOENT;
	memset(&pci, 0, sizeof(pci));
	if (s->a.pci_info(dev, &pci) != NVML_OK)
		return -ENOENT;
	pci.bus_id[sizeof(pci.bus_id) - 1] = 0;
	/* "00000000:07:00.0" -> "0000:07:00.0", as sysfs names it */
	snprintf(busid, blen, "%04x:%02x:%02x.0", pci.domain & 0xffff, pci.bus & 0xff,
		 pci.device & 0x1f);
	if (s->a.name && s->a.name(dev, buf, sizeof(buf)) == NVML_OK)
		buf[sizeof(buf) - 1] = 0;
	else
		buf[0] = 0;
	snprintf(name, nlen, "%s", buf);
	return 0;
}

/* A field's value as an unsigned counter, and its width in bits. */
static int field_u64(const struct nvml_field_value *f, uint64_t *v, int *width)
{
	if (f->ret != NVML_OK)
		return 0;
	switch (f->value_type) {
	case NVML_VT_UINT:
		*v = f->value.ui, *width = 32;
		return 1;
	case NVML_VT_ULONG:
		*v = f->value.ul, *width = (int)sizeof(unsigned long) * 8;
		return 1;
	case NVML_VT_ULL:
		*v = f->value.ull, *width = 64;
		return 1;
	case NVML_VT_SLL:
		if (f->value.sll < 0)
			return 0;
		*v = (uint64_t)f->value.sll, *width = 63;
		return 1;
	}
	return 0;
}

int pn_nvml_read(struct pn_nvml *s, int i, struct pn_nvml_ctr *c, int pcie_sampled)
{
	static const unsigned ids[PN_NVML_NCTR] = { NVML_FI_NVLINK_DATA_TX, NVML_FI_NVLINK_DATA_RX,
						    NVML_FI_PCIE_TX, NVML_FI_PCIE_RX };
	struct nvml_field_value f[PN_NVML_NCTR];
	nvml_dev dev;
	unsigned kbps;
	int k;

	memset(c, 0, sizeof(*c));
	c->pcie_KBps[0] = c->pcie_KBps[1] = -1;
	if (handle(s, i, &dev))
		return -ENOENT;
	if (s->a.field_values) {
		memset(f, 0, sizeof(f));
		for (k = 0; k < PN_NVML_NCTR; k++) {
			f[k].field_id = ids[k];
			f[k].scope_id = k < 2 ? NVML_SCOPE_ALL_LINKS : 0;
		}
		if (s->a.field_values(dev, PN_NVML_NCTR, f) == NVML_OK)
			for (k = 0; k < PN_NVML_NCTR; k++)
				if (!field_u64(&f[k], &c->value[k], &c->width[k]))
					c->width[k] = 0;
	}
	/* no PCIe counters: the sampled throughput (20 ms per direction) */
	if (pcie_sampled && (!c->width[PN_NVML_PCIE_TX] || !c->width[PN_NVML_PCIE_RX]) &&
	    s->a.pcie_tp) {
		for (k = 0; k < 2; k++)
			if (s->a.pcie_tp(dev, k, &kbps) == NVML_OK)
				c->pcie_KBps[k] = kbps;
	}
	return 0;
}
