/* SPDX-License-Identifier: MIT */
/*
 * Fuzz harness: penny check's configuration (pn_check_cfg_parse,
 * src/check/check_cfg.h).  What it takes must hold what the table says:
 * every set number in its key's range (an integer key a whole number),
 * every set string shorter than its bound and one of its choices.
 */
#include "fuzz.h"

#include "check/check.h"
#include "check/check_cfg.h"

#include <math.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pn_check_cfg *c = pn_check_cfg_new();
	const struct pn_check_key *k;
	size_t n, i;

	if (!c)
		return 0;
	k = pn_check_keys(&n);
	if (!pn_check_cfg_parse(c, (const char *)data, size, "fuzz.conf")) {
		for (i = 0; i < n; i++) {
			const char *s;
			unsigned mask;
			double v;

			if (PN_KEY_IS_NUM(&k[i])) {
				if (pn_check_cfg_num(c, k[i].key, &v) != 1)
					continue;
				FUZZ_ASSERT(isfinite(v) && v >= k[i].min && v <= k[i].max);
				FUZZ_ASSERT(k[i].type != PN_KEY_INT || v == floor(v));
			} else if (pn_check_cfg_str(c, k[i].key, &s) == 1) {
				FUZZ_ASSERT(s && *s && strlen(s) < 64);
				if (k[i].type == PN_KEY_LIST)
					FUZZ_ASSERT(!pn_check_parse_list(s, &mask) && mask);
			}
		}
	}
	pn_check_cfg_free(c);
	return 0;
}
