/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
#include "node/perfquery.h"
#include "base/log.h"
#include "base/util.h"

#include <errno.h>
#include <infiniband/umad.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#define MAD_METHOD_GET 0x01
#define MAD_METHOD_GET_RESP 0x81
#define MAD_DATA 64		/* PerfMgt data follows 24 header + 40 reserved bytes */
#define GSI_QKEY 0x80010000
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

/* ---- wire format (big-endian) ---- */

static void put_be16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static void put_be64(uint8_t *p, uint64_t v)
{
	int i;

	for (i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (56 - 8 * i));
}

static uint16_t be16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static uint64_t be64(const uint8_t *p)
{
	return (uint64_t)be32(p) << 32 | be32(p + 4);
}

void pn_perfquery_encode_get(uint8_t *mad, uint16_t attr, uint8_t port_select, uint64_t tid)
{
	memset(mad, 0, PN_MAD_SIZE);
	mad[0] = 1;		/* BaseVersion */
	mad[1] = PN_PERF_CLASS; /* MgmtClass */
	mad[2] = 1;		/* ClassVersion */
	mad[3] = MAD_METHOD_GET;
	put_be64(mad + 8, tid);
	put_be16(mad + 16, attr);
	if (attr != PN_PERF_ATTR_CLASS_PORT_INFO)
		mad[MAD_DATA + 1] = port_select;
}

int pn_perfquery_check_response(const uint8_t *mad, size_t len, uint16_t attr, uint64_t tid)
{
	uint16_t status;

	/* the decoders read up to byte MAD_DATA + 72: a whole MAD or nothing */
	if (len < PN_MAD_SIZE)
		return pn_err(-EPROTO, "short MAD response (%zu bytes)", len);
	if (mad[1] != PN_PERF_CLASS || mad[3] != MAD_METHOD_GET_RESP)
		return pn_err(-EPROTO, "unexpected MAD (class 0x%02x, method 0x%02x)", mad[1], mad[3]);
	if (be16(mad + 16) != attr)
		return pn_err(-EPROTO, "MAD response for attribute 0x%04x, asked 0x%04x",
			      be16(mad + 16), attr);
	if ((be64(mad + 8) & 0xffffffffu) != (tid & 0xffffffffu))
		return pn_err(-EPROTO, "MAD response with another transaction id");
	status = be16(mad + 4);
	if (status) {
		int code = (status >> 2) & 7;

		if (code == 2 || code == 3)
			return pn_err(-EOPNOTSUPP, "attribute 0x%04x not supported (MAD status 0x%04x)",
				      attr, status);
		return pn_err(-EIO, "MAD status 0x%04x for attribute 0x%04x", status, attr);
	}
	return 0;
}

static void set(struct pn_perfquery_counters *c, int f, uint64_t v)
{
	c->v[f] = v;
	c->valid |= 1u << f;
}

void pn_perfquery_decode_port_counters(const uint8_t *mad, struct pn_perfquery_counters *c)
{
	const uint8_t *d = mad + MAD_DATA;

	set(c, PN_PERFQUERY_SYMBOL_ERROR, be16(d + 4));
	set(c, PN_PERFQUERY_LINK_ERROR_RECOVERY, d[6]);
	set(c, PN_PERFQUERY_LINK_DOWNED, d[7]);
	set(c, PN_PERFQUERY_RCV_ERRORS, be16(d + 8));
	set(c, PN_PERFQUERY_RCV_REMOTE_PHYS_ERRORS, be16(d + 10));
	set(c, PN_PERFQUERY_RCV_SWITCH_RELAY_ERRORS, be16(d + 12));
	set(c, PN_PERFQUERY_XMIT_DISCARDS, be16(d + 14));
	set(c, PN_PERFQUERY_XMIT_CONSTRAINT_ERRORS, d[16]);
	set(c, PN_PERFQUERY_RCV_CONSTRAINT_ERRORS, d[17]);
	/* byte 19: LocalLinkIntegrityErrors (high nibble), ExcessiveBufferOverrun (low) */
	set(c, PN_PERFQUERY_LOCAL_LINK_INTEGRITY_ERRORS, d[19] >> 4);
	set(c, PN_PERFQUERY_EXCESSIVE_BUFFER_OVERRUN_ERRORS, d[19] & 0xf);
	set(c, PN_PERFQUERY_VL15_DROPPED, be16(d + 22));
	set(c, PN_PERFQUERY_XMIT_DATA, be32(d + 24));
	set(c, PN_PERFQUERY_RCV_DATA, be32(d + 28));
	set(c, PN_PERFQUERY_XMIT_PKTS, be32(d + 32));
	set(c, PN_PERFQUERY_RCV_PKTS, be32(d + 36));
	set(c, PN_PERFQUERY_XMIT_WAIT, be32(d + 40));
}

void pn_perfquery_decode_port_counters_ext(const uint8_t *mad, struct pn_perfquery_counters *c)
{
	const uint8_t *d = mad + MAD_DATA;

	c->ext = 1;
	set(c, PN_PERFQUERY_XMIT_DATA, be64(d + 8));
	set(c, PN_PERFQUERY_RCV_DATA, be64(d + 16));
	set(c, PN_PERFQUERY_XMIT_PKTS, be64(d + 24));
	set(c, PN_PERFQUERY_RCV_PKTS, be64(d + 32));
	set(c, PN_PERFQUERY_UCAST_XMIT_PKTS, be64(d + 40));
	set(c, PN_PERFQUERY_UCAST_RCV_PKTS, be64(d + 48));
	set(c, PN_PERFQUERY_MCAST_XMIT_PKTS, be64(d + 56));
	set(c, PN_PERFQUERY_MCAST_RCV_PKTS, be64(d + 64));
}

uint16_t pn_perfquery_decode_cap_mask(const uint8_t *mad)
{
	return be16(mad + MAD_DATA + 2);
}

/* ---- libibumad ---- */

struct pn_pq {
	char ca[UMAD_CA_NAME_LEN];
	int port;
	int portid;
	int agent;
	uint32_t tid;
	void *umad;
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
	pq->portid = -1;
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
	pq->portid = umad_open_port(pq->ca, pq->port);
	if (pq->portid < 0) {
		ret = pn_err(pq->portid, "cannot open umad port '%s' port %d: %s", pq->ca, pq->port,
			     strerror(-pq->portid));
		goto err_free;
	}
	pq->agent = umad_register(pq->portid, PN_PERF_CLASS, 1, 0, NULL);
	if (pq->agent < 0) {
		ret = pn_err(-EIO, "cannot register a PerfMgt agent on '%s' port %d", pq->ca,
			     pq->port);
		goto err_close;
	}
	pq->umad = umad_alloc(1, umad_size() + PN_MAD_SIZE);
	if (!pq->umad) {
		ret = pn_err(-ENOMEM, "out of memory");
		goto err_unreg;
	}
	pq->tid = (uint32_t)getpid() << 12;
	*pqp = pq;
	return 0;

err_unreg:
	umad_unregister(pq->portid, pq->agent);
err_close:
	umad_close_port(pq->portid);
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

static int transact(struct pn_pq *pq, int lid, uint16_t attr, uint8_t port_select,
		    const uint8_t **resp)
{
	uint8_t *mad = umad_get_mad(pq->umad);
	uint64_t tid = ++pq->tid;
	int len, ret;

	pn_perfquery_encode_get(mad, attr, port_select, tid);
	umad_set_addr(pq->umad, lid, 1, 0, GSI_QKEY);
	ret = umad_send(pq->portid, pq->agent, pq->umad, PN_MAD_SIZE, PQ_TIMEOUT_MS, PQ_RETRIES);
	if (ret < 0)
		return pn_err(-EIO, "cannot send a PerfMgt MAD to lid %d: %s", lid, strerror(-ret));
	for (;;) {
		len = PN_MAD_SIZE;
		ret = umad_recv(pq->portid, pq->umad, &len, PQ_TIMEOUT_MS * (PQ_RETRIES + 1));
		if (ret < 0)
			return pn_err(ret == -ETIMEDOUT ? -ETIMEDOUT : -EIO,
				      "no PerfMgt answer from lid %d", lid);
		if (umad_status(pq->umad))
			return pn_err(-ETIMEDOUT, "no PerfMgt answer from lid %d (status %d)", lid,
				      umad_status(pq->umad));
		if (ret != pq->agent)
			continue;
		mad = umad_get_mad(pq->umad);
		if ((be64(mad + 8) & 0xffffffffu) != (tid & 0xffffffffu))
			continue; /* a late answer to an earlier query */
		ret = pn_perfquery_check_response(mad, (size_t)len, attr, tid);
		if (ret)
			return pn_err_ctx(ret, "lid %d", lid);
		*resp = mad;
		return 0;
	}
}

int pn_perfquery_query(struct pn_pq *pq, int lid, int port, struct pn_perfquery_counters *c)
{
	const uint8_t *r;
	uint16_t cap = 0;
	int i, ret;

	memset(c, 0, sizeof(*c));
	for (i = 0; i < pq->ncaps; i++)
		if (pq->caps[i].lid == lid)
			break;
	if (i < pq->ncaps) {
		cap = pq->caps[i].cap;
	} else {
		ret = transact(pq, lid, PN_PERF_ATTR_CLASS_PORT_INFO, 0, &r);
		if (ret)
			return ret;
		cap = pn_perfquery_decode_cap_mask(r);
		if (pq->ncaps < PQ_CAP_CACHE) {
			pq->caps[pq->ncaps].lid = lid;
			pq->caps[pq->ncaps].cap = cap;
			pq->ncaps++;
		}
	}
	ret = transact(pq, lid, PN_PERF_ATTR_PORT_COUNTERS, (uint8_t)port, &r);
	if (ret)
		return ret;
	pn_perfquery_decode_port_counters(r, c);
	if (cap & (PN_PERF_CAP_EXT_WIDTH | PN_PERF_CAP_EXT_WIDTH_NOIETF)) {
		ret = transact(pq, lid, PN_PERF_ATTR_PORT_COUNTERS_EXT, (uint8_t)port, &r);
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
	umad_free(pq->umad);
	umad_unregister(pq->portid, pq->agent);
	umad_close_port(pq->portid);
	free(pq);
}
