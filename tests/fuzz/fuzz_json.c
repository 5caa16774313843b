/* SPDX-License-Identifier: MIT */
/* Fuzz harness: the strict JSON reader (src/base/minijson.h) and its accessors. */
#include "fuzz.h"

#include "base/minijson.h"

static unsigned walk(const struct pn_jval *v)
{
	unsigned n = 1, i;
	long long ll;
	double d;

	switch (v->type) {
	case PN_JSON_ARRAY:
		FUZZ_ASSERT(pn_json_len(v) == v->n && !pn_json_at(v, v->n));
		for (i = 0; i < v->n; i++)
			n += walk(pn_json_at(v, i));
		break;
	case PN_JSON_OBJECT:
		FUZZ_ASSERT(pn_json_len(v) == v->n);
		for (i = 0; i < v->n; i++) {
			/* keys are unique: a lookup finds this member */
			FUZZ_ASSERT(pn_json_get(v, v->u.members[i].key) == &v->u.members[i].val);
			n += walk(&v->u.members[i].val);
		}
		break;
	case PN_JSON_STRING:
		FUZZ_ASSERT(strlen(pn_json_str(v)) == v->n); /* no NUL inside */
		break;
	case PN_JSON_NUMBER:
		FUZZ_ASSERT(!pn_json_num(v, &d));
		if (!pn_json_int(v, &ll))
			FUZZ_ASSERT((double)ll == d);
		break;
	default:
		FUZZ_ASSERT(!pn_json_str(v) && pn_json_int(v, &ll) == -22);
		break;
	}
	FUZZ_ASSERT(pn_json_type_name(v->type)[0] != '?');
	return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pn_json_doc doc;

	if (!pn_json_parse(&doc, (const char *)data, size)) {
		FUZZ_ASSERT(doc.root);
		walk(doc.root);
		pn_json_release(&doc);
	}
	return 0;
}
