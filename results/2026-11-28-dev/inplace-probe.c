/* SPDX-License-Identifier: MIT */
/*
 * The probe behind results/2026-11-28-dev/inplace-notes.md (issue 41): two
 * self-launched ranks run pn_allreduce on registered buffers, float sum,
 * one size and algorithm, REPS blocks of ITERS calls, each call timed
 * alone after a local barrier; prints the median, fastest and slowest
 * block (the slowest rank's).  Modes: oop (out of place, the input never
 * changes, as in allreduce-test), ip (in place), oopw (out of place, each
 * rank rewrites its input with the same values before every call, outside
 * the timed part: the input's lines are then fresh in their owner's cache,
 * as in place).  Build against a tree's build/libpenny.a:
 *   cc -std=c11 -O2 -Isrc -Iplugins/include -o probe inplace-probe.c build/libpenny.a \
 *      $(pkg-config --libs libibverbs libibumad libibmad hwloc ncursesw libxml-2.0) \
 *      -lm -lpthread -ldl -lrt
 *   probe NP BYTES ALGO oop|ip|oopw ITERS REPS
 */
#define _GNU_SOURCE
#include "base/log.h"
#include "base/util.h"
#include "engine/boot.h"
#include "engine/coll.h"
#include "engine/comm.h"
#include "engine/testdata.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
struct b { size_t bytes; enum pn_algo algo; int ip, iters, reps; };
static int cmpd(const void *a, const void *b){ double x=*(const double*)a,y=*(const double*)b; return x<y?-1:x>y; }
static int rank_main(struct pn_boot_cfg *cfg, void *arg)
{
	const struct b *bn = arg;
	struct pn_comm_cfg cc = { .nchannels = 1 };
	struct pn_boot *bo = NULL; struct pn_comm *c = NULL;
	struct pn_reg *sreg = NULL, *rreg = NULL; struct pn_coll co = {0};
	int ret, i, k; size_t count = bn->bytes / 4; double t[64], all[64];
	ret = pn_boot_init(&bo, cfg);
	if (!ret) ret = pn_comm_init(&c, bo, &cc);
	if (!ret) ret = pn_coll_init(&co, c, NULL);
	if (!ret) ret = pn_nodeseg_alloc(c, bn->bytes + 64, &sreg);
	if (!ret) ret = pn_nodeseg_alloc(c, bn->bytes + 64, &rreg);
	if (ret) { fprintf(stderr, "%s\n", pn_errmsg(ret)); return 1; }
	pn_testdata_fill(sreg->ptr, count, PN_FLOAT, PN_SUM, c->rank, 1);
	pn_testdata_fill(rreg->ptr, count, PN_FLOAT, PN_SUM, c->rank, 1);
	const void *sb = bn->ip == 1 ? rreg->ptr : sreg->ptr; struct pn_reg *sr = bn->ip == 1 ? rreg : sreg;
	for (i = 0; !ret && i < 10; i++) ret = pn_allreduce(&co, sb, rreg->ptr, count, PN_FLOAT, PN_SUM, bn->algo, sr, rreg);
	char *fresh = malloc(bn->bytes); memcpy(fresh, sreg->ptr, bn->bytes);
	for (k = 0; !ret && k < bn->reps; k++) {
		double acc = 0;
		for (i = 0; !ret && i < bn->iters; i++) {
			if (bn->ip == 2) memcpy(sreg->ptr, fresh, bn->bytes); /* owner rewrites its input */
			pn_comm_local_barrier(c);
			double t0 = pn_now();
			ret = pn_allreduce(&co, sb, rreg->ptr, count, PN_FLOAT, PN_SUM, bn->algo, sr, rreg);
			acc += pn_now() - t0;
		}
		t[k] = acc / bn->iters * 1e6;
	}
	if (ret) { fprintf(stderr, "%s\n", pn_errmsg(ret)); return 1; }
	for (k = 0; k < bn->reps; k++) { ret = pn_boot_allgather(bo, &t[k], all, sizeof(double)); if (all[0] < all[1]) all[0] = all[1]; t[k] = all[0]; }
	qsort(t, bn->reps, sizeof(double), cmpd);
	if (c->rank == 0) printf("%zu %s %s median %.2f min %.2f max %.2f us\n", bn->bytes, pn_algo_name(bn->algo), bn->ip == 1 ? "ip" : bn->ip ? "oopw" : "oop", t[bn->reps/2], t[0], t[bn->reps-1]);
	fflush(stdout); pn_comm_barrier(c);
	pn_nodeseg_reg_free(c, sreg); pn_nodeseg_reg_free(c, rreg); pn_coll_release(&co); pn_comm_free(c); pn_boot_free(bo);
	return 0;
}
int main(int argc, char **argv)
{
	struct b bn; struct pn_boot_cfg cfg; int status = 0; char *report = NULL;
	if (argc != 7) { fprintf(stderr, "arx NP BYTES ALGO ip|oop ITERS REPS\n"); return 2; }
	bn.bytes = strtoull(argv[2], 0, 10); pn_algo_parse(argv[3], &bn.algo); bn.ip = !strcmp(argv[4], "ip") ? 1 : !strcmp(argv[4], "oopw") ? 2 : 0;
	bn.iters = atoi(argv[5]); bn.reps = atoi(argv[6]);
	pn_boot_cfg_init(&cfg);
	if (pn_boot_run_ranks(atoi(argv[1]), &cfg, rank_main, &bn, &status, &report)) return 1;
	if (report) fputs(report, stderr);
	return status;
}
