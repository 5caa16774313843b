/* SPDX-License-Identifier: MIT */
/*
 * Fuzz harness: penny bw's hello frame from a peer (pn_bw_hello_check, pn_bw_hello_decode),
 * then what bw does with one that decodes: compare the configuration,
 * check the connection infos, print the strings.
 */
#include "fuzz.h"

#include "harness/bwproto.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pn_bw_hello h;
	struct pn_bw_cfg mine;
	char line[512];
	uint32_t i;

	size_t k;

	/* as the server sees the bytes arrive: a verdict never changes */
	for (k = 0; k < size && k < PN_BW_HELLO_LEN; k++)
		if (pn_bw_hello_check(data, k) != -EAGAIN &&
		    pn_bw_hello_check(data, k) != pn_bw_hello_check(data, PN_MIN(size, PN_BW_HELLO_LEN)))
			abort();
	if (pn_bw_hello_decode(&h, data, size))
		return 0;
	FUZZ_ASSERT(h.nrails <= PN_BW_MAX_RAILS && h.tcp <= 1);
	pn_bw_cfg_init(&mine);
	pn_bw_cfg_check(&mine, &h.cfg);
	snprintf(line, sizeof(line), "%s %s %s", h.host, h.addr, h.err);
	for (i = 0; i < h.nrails; i++) {
		pn_verbs_info_check(&h.info[i]);
		snprintf(line, sizeof(line), "%s@%s %g", h.dev[i], h.host, h.link_gbps[i]);
	}
	return 0;
}
