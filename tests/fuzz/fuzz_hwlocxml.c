/* SPDX-License-Identifier: MIT */
/*
 * Fuzz harness: the hwloc XML that penny handles itself before hwloc sees
 * it (src/node/hwloc_xml.c on libxml2, src/base/xml.h): the version probe,
 * the well-formedness check and the hwloc 3 -> 2 converter, whose output
 * must again be well-formed hwloc 2.
 * (hwloc's own parser runs in a child process in penny and is not fuzzed.)
 */
#include "fuzz.h"

#include "node/topo.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *in = (const char *)data;
	char *out = NULL;
	size_t olen = 0;
	int ver = pn_topo_xml_version(in, size), ok = !pn_topo_xml_check(in, size);

	FUZZ_ASSERT(ver == -1 || ver >= 1);
	if (!pn_topo_xml_downgrade(in, size, &out, &olen)) {
		/* NUL-terminated (NUL bytes inside come from the input: penny refuses them first) */
		FUZZ_ASSERT(out && !out[olen] && (memchr(in, 0, size) || strlen(out) == olen));
		if (ok && ver == 3) {
			FUZZ_ASSERT(!pn_topo_xml_check(out, olen));
			FUZZ_ASSERT(pn_topo_xml_version(out, olen) == 2);
		}
		free(out);
	}
	return 0;
}
