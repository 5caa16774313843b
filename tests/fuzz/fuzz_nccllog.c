/* SPDX-License-Identifier: MIT */
/*
 * Fuzz harness: NCCL's NCCL_DEBUG=INFO log into the table of its paths
 * (check/nccllog.h), the whole log and every line alone; every row's
 * strings terminated, every NIC index matched to a NIC of its host.
 */
#include "fuzz.h"

#include "check/nccllog.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data;
	struct pn_nccl_nic nics[8];
	struct pn_nccl_path p;
	struct pn_nccl_log l;
	size_t i = 0;
	int j, n;

	memset(&l, 0, sizeof(l));
	if (!pn_nccl_log_parse(&l, text, size)) {
		FUZZ_ASSERT(l.npaths >= 0 && l.npaths <= PN_NCCL_MAX_PATHS);
		FUZZ_ASSERT(l.nnics >= 0 && l.nnics <= PN_NCCL_MAX_NICS);
		for (j = 0; j < l.npaths; j++) {
			const struct pn_nccl_path *q = &l.paths[j];

			FUZZ_ASSERT(memchr(q->via, 0, sizeof(q->via)) && q->via[0]);
			FUZZ_ASSERT(memchr(q->nic_name, 0, sizeof(q->nic_name)));
			FUZZ_ASSERT(q->transport == PN_NT_NET || q->nic == -1);
			FUZZ_ASSERT(q->channel >= 0 && q->from >= 0 && q->to >= 0);
		}
	}
	pn_nccl_log_release(&l);
	while (i < size) {
		const char *nl = memchr(text + i, '\n', size - i);
		size_t k = nl ? (size_t)(nl - (text + i)) : size - i;

		if (k < PN_NCCL_LINE_MAX) {
			pn_nccl_parse_path(text + i, k, &p);
			n = pn_nccl_parse_using(text + i, k, nics, 8);
			FUZZ_ASSERT(n >= 0 && n <= 8);
		}
		i += k + 1;
	}
	return 0;
}
