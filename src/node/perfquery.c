/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
#include "node/perfquery.h"
#include "base/log.h"
#include "base/util.h"

#include <errno.h>
#include <infiniband/mad.h>
#include <infiniband/umad.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#define PQ_TIMEOUT_MS 500
#define PQ_RETRIES 2
#define PQ_CAP_CACHE 64

static const struct {
	const char *name;
	uint8_t width;		/* saturating width in PortCounters */
} fields[PN_PERFQUERY_NFIELDS] = {
	[PN_PERFQUERY_XMIT_DATA] = { "port_xmit_data", 32 },
	[PN_PERFQUERY_RCV_DATA] = { "port_rcv_data", 32 },
	[PN_PERFQUERY_XMIT_PKTS] = { "port_xmit_packets", 32 },
	[PN_PERFQUERY_RCV_PKTS] = { "port_rcv_packets", 32 },
	[PN_PERFQUERY_UCAST_XMIT_PKTS] = { "unicast_xmit_packets", 64 },
	[PN_PERFQUERY_UCAST_RCV_PKTS] = { "unicast_rcv_packets", 64 },
	[PN_PERFQUERY_MCAST_XMIT_PKTS] = { "multicast_xmit_packets", 64 },
	[PN_PERFQUERY_MCAST_RCV_PKTS] = { "multicast_rcv_packets", 64 },
	[PN_PERFQUERY_SYMBOL_ERROR] = { "symbol_error", 16 },
	[PN_PERFQUERY_LINK_ERROR_RECOVERY] = { "link_error_recovery", 8 },
	[PN_PERFQUERY_LINK_DOWNED] = { "link_downed", 8 },
	[PN_PERFQUERY_RCV_ERRORS] = { "port_rcv_errors", 16 },
	[PN_PERFQUERY_RCV_REMOTE_PHYS_ERRORS] = { "port_rcv_remote_physical_errors", 16 },
	[PN_PERFQUERY_RCV_SWITCH_RELAY_ERRORS] = { "port_rcv_switch_relay_errors", 16 },
	[PN_PERFQUERY_XMIT_DISCARDS] = { "port_xmit_discards", 16 },
	[PN_PERFQUERY_XMIT_CONSTRAINT_ERRORS] = { "port_xmit_constraint_errors", 8 },
	[PN_PERFQUERY_RCV_CONSTRAINT_ERRORS] = { "port_rcv_constraint_errors", 8 },
	[PN_PERFQUERY_LOCAL_LINK_INTEGRITY_ERRORS] = { "local_link_integrity_errors", 4 },
	[PN_PERFQUERY_EXCESSIVE_BUFFER_OVERRUN_ERRORS] = { "excessive_buffer_overrun_errors", 4 },
	[PN_PERFQUERY_VL15_DROPPED] = { "VL15_dropped", 16 },
	[PN_PERFQUERY_XMIT_WAIT] = { "port_xmit_wait", 32 },
};

const char *pn_perfquery_field_name(int f)
{
	return f >= 0 && f < PN_PERFQUERY_NFIELDS ? fields[f].name : "?";
}

int pn_perfquery_field_width(int f, int ext)
{
	if (f < 0 || f >= PN_PERFQUERY_NFIELDS)
		return 0;
	if (ext && f <= PN_PERFQUERY_MCAST_RCV_PKTS)
		return 64;
	return fields[f].width;
}

int pn_perfquery_parse_lid(const char *s, int *lid, int *port)
{
	char buf[32], *colon;
	uint64_t v;
	int p = 1;

	if (!s || strlen(s) >= sizeof(buf))
		return pn_err(-EINVAL, "invalid LID '%s'", s ? s : "");
	snprintf(buf, sizeof(buf), "%s", s);
	colon = strchr(buf, ':');
	if (colon) {
		*colon = 0;
		if (pn_parse_int(colon + 1, &p) || p < 0 || p > 255)
			return pn_err(-EINVAL, "invalid port in '%s' (0-255)", s);
	}
	/* unicast LIDs are 0x0001-0xbfff */
	if (!buf[0] || pn_parse_u64(buf, &v) || v < 1 || v > 0xbfff)
		return pn_err(-EINVAL, "invalid LID '%s' (1-49151, decimal or 0x hex)", s);
	*lid = (int)v;
	*port = p;
	return 0;
}

/* ---- the PerfMgt data area, decoded by libibmad ---- */

static void set(struct pn_perfquery_counters *c, int f, uint64_t v)
{
	c->v[f] = v;
	c->valid |= 1u << f;
}

void pn_perfquery_decode_port_counters(uint8_t *d, struct pn_perfquery_counters *c)
{
	static const struct {
		int field;
		enum MAD_FIELDS mad;
	} map[] = {
		{ PN_PERFQUERY_SYMBOL_ERROR, IB_PC_ERR_SYM_F },
		{ PN_PERFQUERY_LINK_ERROR_RECOVERY, IB_PC_LINK_RECOVERS_F },
		{ PN_PERFQUERY_LINK_DOWNED, IB_PC_LINK_DOWNED_F },
		{ PN_PERFQUERY_RCV_ERRORS, IB_PC_ERR_RCV_F },
		{ PN_PERFQUERY_RCV_REMOTE_PHYS_ERRORS, IB_PC_ERR_PHYSRCV_F },
		{ PN_PERFQUERY_RCV_SWITCH_RELAY_ERRORS, IB_PC_ERR_SWITCH_REL_F },
		{ PN_PERFQUERY_XMIT_DISCARDS, IB_PC_XMT_DISCARDS_F },
		{ PN_PERFQUERY_XMIT_CONSTRAINT_ERRORS, IB_PC_ERR_XMTCONSTR_F },
		{ PN_PERFQUERY_RCV_CONSTRAINT_ERRORS, IB_PC_ERR_RCVCONSTR_F },
		{ PN_PERFQUERY_LOCAL_LINK_INTEGRITY_ERRORS, IB_PC_ERR_LOCALINTEG_F },
		{ PN_PERFQUERY_EXCESSIVE_BUFFER_OVERRUN_ERRORS, IB_PC_ERR_EXCESS_OVR_F },
		{ PN_PERFQUERY_VL15_DROPPED, IB_PC_VL15_DROPPED_F },
		{ PN_PERFQUERY_XMIT_DATA, IB_PC_XMT_BYTES_F },
		{ PN_PERFQUERY_RCV_DATA, IB_PC_RCV_BYTES_F },
		{ PN_PERFQUERY_XMIT_PKTS, IB_PC_XMT_PKTS_F },
		{ PN_PERFQUERY_RCV_PKTS, IB_PC_RCV_PKTS_F },
		{ PN_PERFQUERY_XMIT_WAIT, IB_PC_XMT_WAIT_F },
	};
	size_t i;

	for (i = 0; i < PN_ARRAY_SIZE(map); i++)
		set(c, map[i].field, mad_get_field(d, 0, map[i].mad));
}

void pn_perfquery_decode_port_counters_ext(uint8_t *d, struct pn_perfquery_counters *c)
{
	static const struct {
		int field;
		enum MAD_FIELDS mad;
	} map[] = {
		{ PN_PERFQUERY_XMIT_DATA, IB_PC_EXT_XMT_BYTES_F },
		{ PN_PERFQUERY_RCV_DATA, IB_PC_EXT_RCV_BYTES_F },
		{ PN_PERFQUERY_XMIT_PKTS, IB_PC_EXT_XMT_PKTS_F },
		{ PN_PERFQUERY_RCV_PKTS, IB_PC_EXT_RCV_PKTS_F },
		{ PN_PERFQUERY_UCAST_XMIT_PKTS, IB_PC_EXT_XMT_UPKTS_F },
		{ PN_PERFQUERY_UCAST_RCV_PKTS, IB_PC_EXT_RCV_UPKTS_F },
		{ PN_PERFQUERY_MCAST_XMIT_PKTS, IB_PC_EXT_XMT_MPKTS_F },
		{ PN_PERFQUERY_MCAST_RCV_PKTS, IB_PC_EXT_RCV_MPKTS_F },
	};
	size_t i;

	c->ext = 1;
	for (i = 0; i < PN_ARRAY_SIZE(map); i++)
		set(c, map[i].field, mad_get_field64(d, 0, map[i].mad));
}

uint16_t pn_perfquery_decode_cap_mask(uint8_t *d)
{
	return (uint16_t)mad_get_field(d, 0, IB_CPI_CAPMASK_F);
}

/* ---- the queries: libibumad finds the port, libibmad talks PerfMgt ---- */

struct pn_pq {
	char ca[UMAD_CA_NAME_LEN];
	int port;
	struct ibmad_port *src;
	struct {
		int lid;
		uint16_t cap;
	} caps[PQ_CAP_CACHE];
	int ncaps;
};

/* Why a port cannot send PerfMgt queries into a fabric, or NULL. */
static const char *port_unusable(const umad_port_t *p)
{
	if (!strcasecmp(p->link_layer, "Ethernet"))
		return "is RoCE (Ethernet link layer): no SMI, no LIDs, no InfiniBand fabric to "
		       "query";
	if (p->state != 4)
		return "is not ACTIVE";
	if (!p->base_lid || !p->sm_lid)
		return "has no LID from a subnet manager";
	return NULL;
}

int pn_perfquery_open(struct pn_pq **pqp, const char *ca, int port)
{
	char names[32][UMAD_CA_NAME_LEN], why[256] = "";
	int classes[1] = { IB_PERFORMANCE_CLASS };
	int n, i, ret;
	struct pn_pq *pq;

	*pqp = NULL;
	/* libibumad reads the live /sys (not the sysfs root) and prints its own
	 * warnings when the umad ABI is missing: check first */
	if (access("/sys/class/infiniband_mad/abi_version", R_OK))
		return pn_err(-ENODEV, "no InfiniBand management datagram support here "
				       "(/sys/class/infiniband_mad is missing: no ib_umad module "
				       "or no InfiniBand device)");
	if (umad_init() < 0)
		return pn_err(-ENODEV, "cannot initialise libibumad");
	if (ca) {
		snprintf(names[0], sizeof(names[0]), "%s", ca);
		n = 1;
	} else {
		n = umad_get_cas_names(names, (int)PN_ARRAY_SIZE(names));
		if (n <= 0)
			return pn_err(-ENODEV, "no InfiniBand device to send PerfMgt queries from");
	}
	pq = calloc(1, sizeof(*pq));
	if (!pq)
		return pn_err(-ENOMEM, "out of memory");
	for (i = 0; i < n && !pq->ca[0]; i++) {
		umad_ca_t info;
		int p;

		/* never trust the list: libibumad may name a CA that is not there */
		if (umad_get_ca(names[i], &info) < 0) {
			snprintf(why, sizeof(why), "cannot open '%s'", names[i]);
			continue;
		}
		for (p = 0; p < UMAD_CA_MAX_PORTS && !pq->ca[0]; p++) {
			const umad_port_t *up = info.ports[p];
			const char *bad;

			if (!up || (port > 0 && up->portnum != port))
				continue;
			bad = port_unusable(up);
			if (bad) {
				snprintf(why, sizeof(why), "'%s' port %d %s", names[i], up->portnum, bad);
				continue;
			}
			snprintf(pq->ca, sizeof(pq->ca), "%s", names[i]);
			pq->port = up->portnum;
		}
		if (!pq->ca[0] && port > 0 && !why[0])
			snprintf(why, sizeof(why), "'%s' has no port %d", names[i], port);
		umad_release_ca(&info);
	}
	if (!pq->ca[0]) {
		ret = pn_err(-ENODEV, "no InfiniBand port to query remote counters from: %s",
			     why[0] ? why : "none found");
		goto err_free;
	}
	/* libibmad sends the Gets, matches the answers, retries and checks the status */
	pq->src = mad_rpc_open_port(pq->ca, pq->port, classes, 1);
	if (!pq->src) {
		ret = pn_err(errno ? -errno : -EIO, "cannot open '%s' port %d for PerfMgt queries: %s",
			     pq->ca, pq->port, strerror(errno ? errno : EIO));
		goto err_free;
	}
	mad_rpc_set_timeout(pq->src, PQ_TIMEOUT_MS);
	mad_rpc_set_retries(pq->src, PQ_RETRIES + 1);
	*pqp = pq;
	return 0;

err_free:
	free(pq);
	return ret;
}

const char *pn_perfquery_ca(const struct pn_pq *pq, int *port)
{
	if (port)
		*port = pq->port;
	return pq->ca;
}

/* One PerfMgt Get of attr for port_select at lid: its data area into d. */
static int transact(struct pn_pq *pq, int lid, uint16_t attr, uint8_t port_select, uint8_t *d)
{
	ib_portid_t dest;

	memset(&dest, 0, sizeof(dest));
	ib_portid_set(&dest, lid, 0, 0);
	memset(d, 0, PN_PERF_DATA_SIZE);
	errno = 0;
	if (pma_query_via(d, &dest, port_select, PQ_TIMEOUT_MS, attr, pq->src))
		return 0;
	if (errno == ETIMEDOUT)
		return pn_err(-ETIMEDOUT, "no PerfMgt answer from lid %d", lid);
	return pn_err(-EIO, "PerfMgt Get of attribute 0x%04x from lid %d failed: %s", attr, lid,
		      strerror(errno ? errno : EIO));
}

int pn_perfquery_query(struct pn_pq *pq, int lid, int port, struct pn_perfquery_counters *c)
{
	uint8_t r[PN_PERF_DATA_SIZE];
	uint16_t cap = 0;
	int i, ret;

	memset(c, 0, sizeof(*c));
	for (i = 0; i < pq->ncaps; i++)
		if (pq->caps[i].lid == lid)
			break;
	if (i < pq->ncaps) {
		cap = pq->caps[i].cap;
	} else {
		ret = transact(pq, lid, CLASS_PORT_INFO, 0, r);
		if (ret)
			return ret;
		cap = pn_perfquery_decode_cap_mask(r);
		if (pq->ncaps < PQ_CAP_CACHE) {
			pq->caps[pq->ncaps].lid = lid;
			pq->caps[pq->ncaps].cap = cap;
			pq->ncaps++;
		}
	}
	ret = transact(pq, lid, IB_GSI_PORT_COUNTERS, (uint8_t)port, r);
	if (ret)
		return ret;
	pn_perfquery_decode_port_counters(r, c);
	if (cap & (PN_PERF_CAP_EXT_WIDTH | PN_PERF_CAP_EXT_WIDTH_NOIETF)) {
		ret = transact(pq, lid, IB_GSI_PORT_COUNTERS_EXT, (uint8_t)port, r);
		if (!ret)
			pn_perfquery_decode_port_counters_ext(r, c);
		else
			PN_DBG(PN_LOG_NIC, "%s", pn_errmsg(ret));
	}
	return 0;
}

void pn_perfquery_close(struct pn_pq *pq)
{
	if (!pq)
		return;
	mad_rpc_close_port(pq->src);
	free(pq);
}

int pn_perfquery_open_arg(struct pn_pq **pq, const char *ca_arg)
{
	char ca[64] = "";
	int port = 0, ret;

	if (ca_arg) {
		const char *colon = strchr(ca_arg, ':');

		snprintf(ca, sizeof(ca), "%.*s", colon ? (int)(colon - ca_arg) : (int)strlen(ca_arg),
			 ca_arg);
		if (colon && (pn_parse_int(colon + 1, &port) || port < 1))
			return pn_err(-EINVAL, "invalid port in --ca '%s'", ca_arg);
	}
	ret = pn_perfquery_open(pq, ca[0] ? ca : NULL, port);
	if (ret)
		return pn_err_ctx(ret, "--lid");
	PN_DBG(PN_LOG_NIC, "PerfMgt queries from '%s' port %d", pn_perfquery_ca(*pq, &port), port);
	return 0;
}
