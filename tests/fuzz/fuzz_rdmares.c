/* SPDX-License-Identifier: MIT */
/*
 * Fuzz harness: the RDMA netlink parser of penny top's process view
 * (node/rdmares.h): the input is one datagram of netlink messages, device
 * lists and QP lists.  Whatever it holds, the owners stay within their
 * bounds and their QPs add up to the entries read.
 */
#include "fuzz.h"

#include "node/rdmares.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pn_rdmares *r = calloc(1, sizeof(*r));
	uint8_t *m = malloc(size ? size : 1);
	char buf[256];
	int i, ret, sum = 0;

	if (!r || !m)
		goto out;
	/* exactly the bytes received: a read past them is caught */
	memcpy(m, data, size);
	ret = pn_rdmares_parse(r, m, size);
	FUZZ_ASSERT(ret <= 1 && ret > -4096);
	FUZZ_ASSERT(r->n >= 0 && r->n <= PN_RDMARES_MAX_PROCS && r->n <= r->cap);
	FUZZ_ASSERT(r->ndevs >= 0 && r->ndevs <= PN_RDMARES_MAX_DEVS);
	for (i = 0; i < r->ndevs; i++)
		FUZZ_ASSERT(strlen(r->devs[i].name) < sizeof(r->devs[i].name));
	for (i = 0; i < r->n; i++) {
		const struct pn_rdmares_proc *p = &r->procs[i];

		FUZZ_ASSERT(strlen(p->dev) < sizeof(p->dev) && p->dev[0]);
		FUZZ_ASSERT(strlen(p->comm) < sizeof(p->comm));
		FUZZ_ASSERT(p->nqps >= 1);
		sum += p->nqps;
		pn_rdmares_types(p->types, buf, sizeof(buf));
		FUZZ_ASSERT(strlen(buf) < sizeof(buf));
		pn_rdmares_types(p->types, buf, 8);
		FUZZ_ASSERT(strlen(buf) < 8);
	}
	FUZZ_ASSERT(sum + r->dropped == r->nqps);
out:
	if (r)
		pn_rdmares_release(r);
	free(r);
	free(m);
	return 0;
}
