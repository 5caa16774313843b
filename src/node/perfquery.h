/* SPDX-License-Identifier: MIT */
/*
 * Counters of remote InfiniBand ports, read like perfquery does: PerfMgt
 * (management class 0x04) Get(ClassPortInfo), Get(PortCounters) and
 * Get(PortCountersExtended), sent, matched and decoded by libibmad (as
 * infiniband-diags' perfquery) from a local InfiniBand port that
 * libibumad finds.
 *
 * RoCE ports have no SMI/LIDs, so no fabric to query: opening such a port
 * fails with a clear message.  libibumad may list a CA that does not exist
 * (a phantom "mthca0" on hosts without RDMA): every CA is opened before it
 * is trusted.
 *
 * The decoding of an answer's data area is a pure function, tested without
 * hardware.
 */
#ifndef PENNY_PERFQUERY_H
#define PENNY_PERFQUERY_H

#include <stddef.h>
#include <stdint.h>

/* The PerfMgt data area of a MAD (bytes 64..255), what the decoders read. */
#define PN_PERF_DATA_SIZE 192
/* ClassPortInfo.CapabilityMask: PortCountersExtended (64-bit data) supported */
#define PN_PERF_CAP_EXT_WIDTH (1u << 9)
#define PN_PERF_CAP_EXT_WIDTH_NOIETF (1u << 10)

/* Fields, named like the sysfs counter files of the same meaning. */
enum pn_perfquery_field {
	PN_PERFQUERY_XMIT_DATA,	/* 4-byte words */
	PN_PERFQUERY_RCV_DATA,
	PN_PERFQUERY_XMIT_PKTS,
	PN_PERFQUERY_RCV_PKTS,
	PN_PERFQUERY_UCAST_XMIT_PKTS,	/* extended only */
	PN_PERFQUERY_UCAST_RCV_PKTS,
	PN_PERFQUERY_MCAST_XMIT_PKTS,
	PN_PERFQUERY_MCAST_RCV_PKTS,
	PN_PERFQUERY_SYMBOL_ERROR,
	PN_PERFQUERY_LINK_ERROR_RECOVERY,
	PN_PERFQUERY_LINK_DOWNED,
	PN_PERFQUERY_RCV_ERRORS,
	PN_PERFQUERY_RCV_REMOTE_PHYS_ERRORS,
	PN_PERFQUERY_RCV_SWITCH_RELAY_ERRORS,
	PN_PERFQUERY_XMIT_DISCARDS,
	PN_PERFQUERY_XMIT_CONSTRAINT_ERRORS,
	PN_PERFQUERY_RCV_CONSTRAINT_ERRORS,
	PN_PERFQUERY_LOCAL_LINK_INTEGRITY_ERRORS,
	PN_PERFQUERY_EXCESSIVE_BUFFER_OVERRUN_ERRORS,
	PN_PERFQUERY_VL15_DROPPED,
	PN_PERFQUERY_XMIT_WAIT,
	PN_PERFQUERY_NFIELDS
};

struct pn_perfquery_counters {
	int ext;		/* 64-bit data/packet counters from PortCountersExtended */
	uint32_t valid;		/* bit per field */
	uint64_t v[PN_PERFQUERY_NFIELDS];
};

/* sysfs-style name ("port_xmit_data") and saturating width in bits. */
const char *pn_perfquery_field_name(int field);
int pn_perfquery_field_width(int field, int ext);

/* "12", "0xc", "12:1" -> lid, port (port 1 when absent). */
int pn_perfquery_parse_lid(const char *s, int *lid, int *port);

/*
 * Decode the data area of a GetResp (PN_PERF_DATA_SIZE bytes, as libibmad's
 * pma_query_via returns it) of PortCounters, PortCountersExtended or
 * ClassPortInfo (its capability mask).
 */
void pn_perfquery_decode_port_counters(uint8_t *data, struct pn_perfquery_counters *c);
void pn_perfquery_decode_port_counters_ext(uint8_t *data, struct pn_perfquery_counters *c);
uint16_t pn_perfquery_decode_cap_mask(uint8_t *data);

struct pn_pq;

/*
 * Open a local port for PerfMgt queries: ca NULL picks the first CA that
 * opens and has an active InfiniBand port (port 0 = any port).
 */
int pn_perfquery_open(struct pn_pq **pq, const char *ca, int port);
/* The same from top's --ca "CA[:PORT]" (NULL: any CA and port). */
int pn_perfquery_open_arg(struct pn_pq **pq, const char *ca_arg);
/* "mlx5_0" and port of the local port in use. */
const char *pn_perfquery_ca(const struct pn_pq *pq, int *port);
/* PortCounters, plus PortCountersExtended where the remote supports them. */
int pn_perfquery_query(struct pn_pq *pq, int lid, int port, struct pn_perfquery_counters *c);
void pn_perfquery_close(struct pn_pq *pq);

#endif
