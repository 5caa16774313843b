/* SPDX-License-Identifier: MIT */
/*
 * PerfMgt answers without a fabric: the PortCounters / PortCountersExtended
 * / ClassPortInfo layouts as libibmad decodes them (IBA vol. 1, chapter
 * 16.1: big-endian fields at fixed bit offsets of the data area, MAD byte
 * 64 on, what pma_query_via returns), and LID[:PORT] parsing.  The data
 * areas are built byte by byte here from the spec's offsets, independently
 * of the decoder.
 */
#include "unit.h"

#include "base/log.h"
#include "node/perfquery.h"

#include <errno.h>
#include <stdint.h>

static void put(uint8_t *p, int bytes, uint64_t v)
{
	int i;

	for (i = 0; i < bytes; i++)
		p[i] = (uint8_t)(v >> (8 * (bytes - 1 - i)));
}

TEST(decode_port_counters)
{
	uint8_t d[PN_PERF_DATA_SIZE];
	struct pn_perfquery_counters c;

	memset(d, 0, sizeof(d));
	d[1] = 1;		    /* PortSelect */
	put(d + 4, 2, 0x1234);	    /* SymbolErrorCounter, bits 32-47 */
	d[6] = 7;		    /* LinkErrorRecoveryCounter */
	d[7] = 255;		    /* LinkDownedCounter */
	put(d + 8, 2, 11);	    /* PortRcvErrors */
	put(d + 10, 2, 12);	    /* PortRcvRemotePhysicalErrors */
	put(d + 12, 2, 13);	    /* PortRcvSwitchRelayErrors */
	put(d + 14, 2, 0xfffe);	    /* PortXmitDiscards */
	d[16] = 21;		    /* PortXmitConstraintErrors */
	d[17] = 22;		    /* PortRcvConstraintErrors */
	d[19] = 0x9a;		    /* LocalLinkIntegrity 9 | ExcessiveBufferOverrun 10 */
	put(d + 22, 2, 0x0f0f);	    /* VL15Dropped, bits 176-191 */
	put(d + 24, 4, 0xfffffff0); /* PortXmitData */
	put(d + 28, 4, 0x01020304); /* PortRcvData */
	put(d + 32, 4, 1000);	    /* PortXmitPkts */
	put(d + 36, 4, 2000);	    /* PortRcvPkts */
	put(d + 40, 4, 3000);	    /* PortXmitWait */
	memset(&c, 0, sizeof(c));
	pn_perfquery_decode_port_counters(d, &c);
	CHECK_EQ_INT(c.ext, 0);
	CHECK_EQ_INT(c.v[PN_PERFQUERY_SYMBOL_ERROR], 0x1234);
	CHECK_EQ_INT(c.v[PN_PERFQUERY_LINK_ERROR_RECOVERY], 7);
	CHECK_EQ_INT(c.v[PN_PERFQUERY_LINK_DOWNED], 255);
	CHECK_EQ_INT(c.v[PN_PERFQUERY_RCV_ERRORS], 11);
	CHECK_EQ_INT(c.v[PN_PERFQUERY_RCV_REMOTE_PHYS_ERRORS], 12);
	CHECK_EQ_INT(c.v[PN_PERFQUERY_RCV_SWITCH_RELAY_ERRORS], 13);
	CHECK_EQ_INT(c.v[PN_PERFQUERY_XMIT_DISCARDS], 0xfffe);
	CHECK_EQ_INT(c.v[PN_PERFQUERY_XMIT_CONSTRAINT_ERRORS], 21);
	CHECK_EQ_INT(c.v[PN_PERFQUERY_RCV_CONSTRAINT_ERRORS], 22);
	CHECK_EQ_INT(c.v[PN_PERFQUERY_LOCAL_LINK_INTEGRITY_ERRORS], 9);
	CHECK_EQ_INT(c.v[PN_PERFQUERY_EXCESSIVE_BUFFER_OVERRUN_ERRORS], 10);
	CHECK_EQ_INT(c.v[PN_PERFQUERY_VL15_DROPPED], 0x0f0f);
	CHECK_EQ_INT(c.v[PN_PERFQUERY_XMIT_DATA], 0xfffffff0u);
	CHECK_EQ_INT(c.v[PN_PERFQUERY_RCV_DATA], 0x01020304);
	CHECK_EQ_INT(c.v[PN_PERFQUERY_XMIT_PKTS], 1000);
	CHECK_EQ_INT(c.v[PN_PERFQUERY_RCV_PKTS], 2000);
	CHECK_EQ_INT(c.v[PN_PERFQUERY_XMIT_WAIT], 3000);
	CHECK(!(c.valid & (1u << PN_PERFQUERY_UCAST_XMIT_PKTS))); /* extended only */
	CHECK(c.valid & (1u << PN_PERFQUERY_XMIT_WAIT));
	CHECK_EQ_INT(pn_perfquery_field_width(PN_PERFQUERY_XMIT_DATA, 0), 32);
	CHECK_EQ_INT(pn_perfquery_field_width(PN_PERFQUERY_LINK_DOWNED, 0), 8);
	CHECK_EQ_INT(pn_perfquery_field_width(PN_PERFQUERY_LOCAL_LINK_INTEGRITY_ERRORS, 1), 4);
}

TEST(decode_port_counters_extended)
{
	uint8_t d[PN_PERF_DATA_SIZE];
	struct pn_perfquery_counters c;
	int f;

	memset(d, 0, sizeof(d));
	/* PortXmitData at bit 64 .. PortMulticastRcvPkts at bit 512, 64 bits each */
	for (f = 0; f < 8; f++)
		put(d + 8 + 8 * f, 8, 0x0100000000000000ull + (uint64_t)f);
	memset(&c, 0, sizeof(c));
	pn_perfquery_decode_port_counters_ext(d, &c);
	CHECK_EQ_INT(c.ext, 1);
	CHECK(c.v[PN_PERFQUERY_XMIT_DATA] == 0x0100000000000000ull);
	CHECK(c.v[PN_PERFQUERY_RCV_DATA] == 0x0100000000000001ull);
	CHECK(c.v[PN_PERFQUERY_XMIT_PKTS] == 0x0100000000000002ull);
	CHECK(c.v[PN_PERFQUERY_RCV_PKTS] == 0x0100000000000003ull);
	CHECK(c.v[PN_PERFQUERY_UCAST_XMIT_PKTS] == 0x0100000000000004ull);
	CHECK(c.v[PN_PERFQUERY_UCAST_RCV_PKTS] == 0x0100000000000005ull);
	CHECK(c.v[PN_PERFQUERY_MCAST_XMIT_PKTS] == 0x0100000000000006ull);
	CHECK(c.v[PN_PERFQUERY_MCAST_RCV_PKTS] == 0x0100000000000007ull);
	CHECK_EQ_INT(pn_perfquery_field_width(PN_PERFQUERY_XMIT_DATA, 1), 64);
}

TEST(decode_class_port_info)
{
	uint8_t d[PN_PERF_DATA_SIZE];
	uint16_t cap;

	memset(d, 0, sizeof(d));
	d[0] = 1; /* BaseVersion */
	d[1] = 1; /* ClassVersion */
	put(d + 2, 2, 0x0200 | 0x0100);
	cap = pn_perfquery_decode_cap_mask(d);
	CHECK(cap & PN_PERF_CAP_EXT_WIDTH);
	CHECK(!(cap & PN_PERF_CAP_EXT_WIDTH_NOIETF));
}

TEST(field_names_match_sysfs)
{
	CHECK_STR(pn_perfquery_field_name(PN_PERFQUERY_XMIT_DATA), "port_xmit_data");
	CHECK_STR(pn_perfquery_field_name(PN_PERFQUERY_RCV_DATA), "port_rcv_data");
	CHECK_STR(pn_perfquery_field_name(PN_PERFQUERY_VL15_DROPPED), "VL15_dropped");
	CHECK_STR(pn_perfquery_field_name(PN_PERFQUERY_NFIELDS), "?");
}

TEST(parse_lid)
{
	int lid = 0, port = 0;

	CHECK_EQ_INT(pn_perfquery_parse_lid("12", &lid, &port), 0);
	CHECK_EQ_INT(lid, 12);
	CHECK_EQ_INT(port, 1);
	CHECK_EQ_INT(pn_perfquery_parse_lid("0x1f:2", &lid, &port), 0);
	CHECK_EQ_INT(lid, 31);
	CHECK_EQ_INT(port, 2);
	CHECK_EQ_INT(pn_perfquery_parse_lid("5:0", &lid, &port), 0); /* switch port 0 */
	CHECK_EQ_INT(port, 0);
	CHECK_EQ_INT(pn_perfquery_parse_lid("0", &lid, &port), -EINVAL);
	CHECK_EQ_INT(pn_perfquery_parse_lid("0xc000", &lid, &port), -EINVAL); /* multicast */
	CHECK_EQ_INT(pn_perfquery_parse_lid("abc", &lid, &port), -EINVAL);
	CHECK_EQ_INT(pn_perfquery_parse_lid("12:", &lid, &port), -EINVAL);
	CHECK_EQ_INT(pn_perfquery_parse_lid("12:300", &lid, &port), -EINVAL);
	CHECK_EQ_INT(pn_perfquery_parse_lid(":1", &lid, &port), -EINVAL);
	CHECK(strstr(pn_errmsg(-EINVAL), ":1") != NULL);
}

int main(void)
{
	RUN(decode_port_counters);
	RUN(decode_port_counters_extended);
	RUN(decode_class_port_info);
	RUN(field_names_match_sysfs);
	RUN(parse_lid);
	return unit_done();
}
