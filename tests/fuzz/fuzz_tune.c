/* SPDX-License-Identifier: MIT */
/* Fuzz harness: the tuning file parser (pn_tune_parse, src/engine/coll.h). */
#include "fuzz.h"

#include "engine/coll.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pn_tune_entry *t = NULL;
	int n = -1, i;

	if (!pn_tune_parse((const char *)data, size, "fuzz.tune", &t, &n)) {
		FUZZ_ASSERT(n >= 0 && n <= PN_TUNE_MAX_ENTRIES && (n == 0) == (t == NULL));
		for (i = 0; i < n; i++)
			FUZZ_ASSERT(t[i].nranks >= 1 && t[i].nnodes >= 1 && t[i].algo != PN_ALGO_AUTO);
	} else {
		FUZZ_ASSERT(!t && !n);
	}
	free(t);
	return 0;
}
