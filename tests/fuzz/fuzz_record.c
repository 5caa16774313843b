/* SPDX-License-Identifier: MIT */
/*
 * Fuzz harness: penny top recordings (top/record.h) as --replay reads them:
 * the line reader and its bounds, the JSON of each sample, the index and
 * rate history, the plot's series.  Every sample read back must format
 * and parse again to the same line (the writer and reader agree).
 */
#define _GNU_SOURCE
#include "fuzz.h"

#include <math.h>

#include "top/record.h"

#include <stdio.h>

static void roundtrip(const struct pn_record_sample *s)
{
	struct pn_record_sample *again = malloc(sizeof(*again));
	char *a = NULL, *b = NULL;
	size_t ca = 0, cb = 0, la, lb;

	if (!again)
		return;
	pn_record_sample_init(again);
	if (!pn_record_format(&a, &ca, &la, &s->set, &s->ctx, s->host, s->interval, s->gpus,
			      s->ngpus)) {
		FUZZ_ASSERT(la > 0 && a[la - 1] == '\n');
		FUZZ_ASSERT(pn_record_parse(again, a, la - 1) == 0);
		FUZZ_ASSERT(again->set.n == s->set.n && again->ngpus == s->ngpus);
		FUZZ_ASSERT(!pn_record_format(&b, &cb, &lb, &again->set, &again->ctx, again->host,
					      again->interval, again->gpus, again->ngpus));
		FUZZ_ASSERT(la == lb && !memcmp(a, b, la));
	}
	free(a);
	free(b);
	pn_record_sample_release(again);
	free(again);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pn_record_sample *s;
	struct pn_replay_series *ss;
	struct pn_replay *r;
	int i, n;
	FILE *f;

	if (!size)
		return 0;
	f = fmemopen((void *)data, size, "r");
	if (!f)
		return 0;
	if (pn_replay_open_file(&r, f, "fuzz")) {
		fclose(f);
		return 0;
	}
	s = malloc(sizeof(*s));
	if (s) {
		pn_record_sample_init(s);
		for (i = 0; i < pn_replay_count(r) && i < 4; i++) {
			FUZZ_ASSERT(pn_replay_load(r, i, s) == 0);
			for (n = 0; n < s->set.n; n++) {
				const struct pn_counters_port *p = &s->set.ports[n];

				FUZZ_ASSERT(p->hist_n <= PN_COUNTERS_HIST);
				/* what reaches JSON and Prometheus is in range */
				FUZZ_ASSERT(isnan(p->util) || (p->util >= 0 && p->util <= 1));
				FUZZ_ASSERT(isnan(p->rx_Bps) || p->rx_Bps >= 0);
				FUZZ_ASSERT(isnan(p->tx_Bps) || p->tx_Bps >= 0);
			}
			roundtrip(s);
		}
		pn_record_sample_release(s);
		free(s);
	}
	if (!pn_replay_series(r, &ss, &n)) {
		for (i = 0; i < n; i++) /* the plot's x axis only goes forward */
			for (int k = 1; k < ss[i].npts; k++)
				FUZZ_ASSERT(ss[i].t[k] >= ss[i].t[k - 1]);
		pn_replay_series_free(ss, n);
	}
	pn_replay_close(r);
	fclose(f);
	return 0;
}
