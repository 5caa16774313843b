/* SPDX-License-Identifier: MIT */
/*
 * Fuzz harness: penny check's baseline (pn_check_baseline_parse,
 * src/check/check.h), as --baseline reads it.  A baseline it takes has
 * no negative figure, and a saved figure is found again by its names.
 */
#include "fuzz.h"

#include "base/minijson.h"
#include "check/check_base.h"

#include <math.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pn_check_baseline *b = NULL;
	struct pn_json_doc doc = { 0 };
	const struct pn_jval *res;
	unsigned i;
	double v;

	if (pn_check_baseline_parse(&b, (const char *)data, size, "fuzz.json")) {
		FUZZ_ASSERT(!b);
		return 0;
	}
	FUZZ_ASSERT(b);
	/* every entry of the document is found, never below zero */
	if (!pn_json_parse(&doc, (const char *)data, size)) {
		res = pn_json_get(doc.root, "results");
		for (i = 0; res && i < pn_json_len(res); i++) {
			const struct pn_jval *r = pn_json_at(res, i);
			const char *check = pn_json_str(pn_json_get(r, "check"));
			const char *target = pn_json_str(pn_json_get(r, "target"));

			FUZZ_ASSERT(check && target);
			FUZZ_ASSERT(!pn_check_baseline_find(b, check, target, &v));
			FUZZ_ASSERT(isfinite(v) && v >= 0);
		}
	}
	pn_json_release(&doc);
	pn_check_baseline_free(b);
	return 0;
}
