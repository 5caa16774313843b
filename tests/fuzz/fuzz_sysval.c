/* SPDX-License-Identifier: MIT */
/*
 * Fuzz harness: the parsers of values penny reads from sysfs, procfs and
 * the fabric: port rate ("100 Gb/sec (4X EDR)"), state ("4: ACTIVE"),
 * state names, numbers (pn_sys_u64/int), counter files, GIDs, device links,
 * sizes and durations, --lid, PCIe link speed and width, and the data
 * area of PerfMgt answers.  The first byte picks the parser (mod 32), the rest is the value.
 */
#include "fuzz.h"

#include "node/counters.h"
#include "node/nic.h"
#include "node/pcie.h"
#include "node/perfquery.h"
#include "node/sysfs.h"
#include "node/topo.h"
#include "base/units.h"
#include "base/util.h"

#include <math.h>

/* A PerfMgt answer's data area (what libibmad hands back: always whole). */
static void mad(const uint8_t *m, size_t len)
{
	uint8_t d[PN_PERF_DATA_SIZE];
	struct pn_perfquery_counters c;

	memset(d, 0, sizeof(d));
	memcpy(d, m, len < sizeof(d) ? len : sizeof(d));
	memset(&c, 0, sizeof(c));
	pn_perfquery_decode_cap_mask(d);
	pn_perfquery_decode_port_counters(d, &c);
	pn_perfquery_decode_port_counters_ext(d, &c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char name[16], busid[16], *s;
	uint64_t u;
	double d;
	int i, j;

	if (!size)
		return 0;
	if (data[0] % 32 == 15) {
		/* exactly the bytes received */
		uint8_t *m = malloc(size - 1 ? size - 1 : 1);

		if (m) {
			memcpy(m, data + 1, size - 1);
			mad(m, size - 1);
			free(m);
		}
		return 0;
	}
	s = fuzz_str(data + 1, size - 1);
	if (!s)
		return 0;
	switch (data[0] % 32) {
	case 0:
		d = pn_parse_rate(s);
		/* a line rate or 0: never inf, NaN, negative or absurd */
		FUZZ_ASSERT(d == 0 || (d >= PN_RATE_MIN_GBPS && d <= PN_RATE_MAX_GBPS));
		break;
	case 1:
		pn_parse_state(s, name, sizeof(name));
		FUZZ_ASSERT(strlen(name) < sizeof(name));
		break;
	case 2:
		i = pn_port_state_from_name(s);
		FUZZ_ASSERT(i >= -1 && i <= 5);
		break;
	case 3:
		pn_sys_parse_u64(s, &u);
		break;
	case 4:
		pn_sys_parse_int(s, &i);
		break;
	case 5:
		pn_counters_parse_value(s, &u);
		break;
	case 6:
		pn_gid_empty(s);
		pn_gid_ipv4_mapped(s);
		break;
	case 7:
		if (!pn_topo_busid_from_link(s, busid, sizeof(busid)))
			FUZZ_ASSERT(strlen(busid) >= 12 && strlen(busid) <= 14);
		break;
	case 8:
		pn_parse_size(s, &u);
		break;
	case 9:
		pn_parse_u64(s, &u);
		break;
	case 10:
		pn_parse_int(s, &i);
		break;
	case 11:
		if (!pn_parse_double(s, &d))
			FUZZ_ASSERT(isfinite(d));
		break;
	case 12:
		pn_parse_seconds(s, &d);
		break;
	case 13:
		if (!pn_perfquery_parse_lid(s, &i, &j))
			FUZZ_ASSERT(j >= 0);
		break;
	case 14:
		i = pn_path_parse(s, &j);
		FUZZ_ASSERT(i >= -1 && i <= PN_PATH_SYS);
		break;
	case 16: {
		unsigned mts = 0;

		if (!pn_pcie_parse_speed(s, &mts))
			FUZZ_ASSERT(mts <= 64000);
		break;
	}
	case 17:
		if (!pn_pcie_parse_width(s, &i))
			FUZZ_ASSERT(i >= 0 && i <= 32);
		break;
	}
	free(s);
	return 0;
}
