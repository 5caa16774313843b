/* SPDX-License-Identifier: MIT */
/*
 * The penny side of tests/bench/host-coll.sh: NP self-launched ranks run the
 * engine's collectives (src/engine/collrun.h) on registered buffers, float
 * sum, timed as mpi_coll.c times Open MPI's: warm-up, barrier, ITERS(size)
 * iterations, the slowest rank's average.  Prints "collective bytes
 * time_us" per size, bytes being nccl-tests' size (the whole buffer for
 * allgather, reducescatter, alltoall).  Broadcast runs in place, like
 * MPI_Bcast.  With "fifo" the buffers are not handed over as registered:
 * every byte goes through the shm transport's FIFOs.
 *   host_coll NP MINBYTES MAXBYTES FACTOR COLL[,COLL...] [ALGO [fifo]]
 */
#define _GNU_SOURCE
#include "base/log.h"
#include "base/util.h"
#include "engine/boot.h"
#include "engine/collrun.h"
#include "engine/comm.h"
#include "engine/testdata.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct bench {
	size_t minb, maxb, factor;
	enum pn_coll_kind kinds[PN_NCOLLS];
	int nkinds;
	enum pn_calgo algo;
	int fifo;		/* no registrations: the FIFOs only */
};

/* The iterations of one size: about 64 MiB moved, 10 to 200 (mpi_coll.c too). */
static int iters_of(size_t bytes)
{
	size_t n = ((size_t)64 << 20) / (bytes ? bytes : 1);

	return (int)PN_MAX(10, PN_MIN(200, n));
}

static int time_one(struct pn_coll *co, struct pn_coll_args *a, int iters, double *us)
{
	struct pn_comm *c = co->comm;
	double t0;
	int i, ret;

	ret = pn_boot_barrier(c->boot);
	for (i = 0; !ret && i < 5; i++)
		ret = pn_coll_run(co, a);
	if (!ret && c->nnodes == 1)
		ret = pn_comm_local_barrier(c);
	t0 = pn_now();
	for (i = 0; !ret && i < iters; i++)
		ret = pn_coll_run(co, a);
	*us = (pn_now() - t0) / iters * 1e6;
	return ret;
}

static int run_kind(struct pn_coll *co, const struct bench *bn, enum pn_coll_kind k,
		    struct pn_reg *sreg, struct pn_reg *rreg)
{
	struct pn_comm *c = co->comm;
	double *all = calloc((size_t)c->nranks, sizeof(double)), us = 0, worst;
	size_t b;
	int ret = 0, r;

	if (!all)
		return pn_err(-ENOMEM, "out of memory");
	for (b = bn->minb; !ret && b <= bn->maxb; b *= bn->factor) {
		size_t count = pn_coll_count_for_bytes(k, b, 4, c->nranks);
		struct pn_coll_args a = { .kind = k, .sendbuf = sreg->ptr, .recvbuf = rreg->ptr,
					  .count = count, .dtype = PN_FLOAT, .op = PN_SUM,
					  .algo = bn->algo, .sreg = bn->fifo ? NULL : sreg,
					  .rreg = bn->fifo ? NULL : rreg };

		if (!count || (a.algo != PN_CALGO_AUTO && !pn_calgo_valid(k, a.algo)))
			continue;
		if (k == PN_COLL_BROADCAST) {
			a.sendbuf = rreg->ptr;
			a.sreg = a.rreg;
		}
		pn_testdata_fill(sreg->ptr, pn_coll_send_count(k, count, c->nranks), PN_FLOAT, PN_SUM,
				 c->rank, 1);
		pn_testdata_fill(rreg->ptr, pn_coll_recv_count(k, count, c->nranks), PN_FLOAT, PN_SUM,
				 c->rank, 1);
		ret = time_one(co, &a, iters_of(b), &us);
		if (!ret)
			ret = pn_boot_allgather(c->boot, &us, all, sizeof(us));
		for (r = 0, worst = 0; !ret && r < c->nranks; r++)
			worst = PN_MAX(worst, all[r]);
		if (!ret && c->rank == 0)
			printf("%s %zu %.3f\n", pn_coll_name(k), (size_t)pn_coll_algbw_bytes(k, count, 4,
					c->nranks), worst);
	}
	free(all);
	fflush(stdout);
	return ret;
}

static int rank_main(struct pn_boot_cfg *cfg, void *arg)
{
	const struct bench *bn = arg;
	struct pn_comm_cfg cc = { .nchannels = 1 };
	struct pn_boot *b = NULL;
	struct pn_comm *c = NULL;
	struct pn_reg *sreg = NULL, *rreg = NULL;
	struct pn_coll co = { 0 };
	int ret, i;

	ret = pn_boot_init(&b, cfg);
	if (!ret)
		ret = pn_comm_init(&c, b, &cc);
	if (!ret)
		ret = pn_coll_init(&co, c, NULL);
	if (!ret)
		ret = pn_nodeseg_alloc(c, bn->maxb + 64, &sreg);
	if (!ret)
		ret = pn_nodeseg_alloc(c, bn->maxb + 64, &rreg);
	for (i = 0; !ret && i < bn->nkinds; i++)
		ret = run_kind(&co, bn, bn->kinds[i], sreg, rreg);
	if (ret)
		fprintf(stderr, "host_coll: rank %d: %s\n", cfg->rank, pn_errmsg(ret));
	else
		ret = pn_comm_barrier(c);
	if (c) {
		pn_nodeseg_reg_free(c, sreg);
		pn_nodeseg_reg_free(c, rreg);
	}
	if (co.comm)
		pn_coll_release(&co);
	pn_comm_free(c);
	pn_boot_free(b);
	return ret ? 1 : 0;
}

int main(int argc, char **argv)
{
	struct bench bn = { .algo = PN_CALGO_AUTO };
	struct pn_boot_cfg cfg;
	char *list, *tok, *save = NULL, *report = NULL;
	int np, status = 0;

	if (argc < 6 || argc > 8) {
		fprintf(stderr, "usage: host_coll NP MINBYTES MAXBYTES FACTOR COLL[,COLL...] "
			"[ALGO [fifo]]\n");
		return 2;
	}
	np = atoi(argv[1]);
	bn.minb = strtoull(argv[2], NULL, 10);
	bn.maxb = strtoull(argv[3], NULL, 10);
	bn.factor = strtoull(argv[4], NULL, 10);
	bn.fifo = argc == 8 && !strcmp(argv[7], "fifo");
	if (np < 1 || !bn.minb || bn.minb > bn.maxb || bn.factor < 2 ||
	    (argc >= 7 && pn_calgo_parse(argv[6], &bn.algo)) || (argc == 8 && !bn.fifo)) {
		fprintf(stderr, "host_coll: bad arguments\n");
		return 2;
	}
	list = strdup(argv[5]);
	for (tok = strtok_r(list, ",", &save); tok && bn.nkinds < PN_NCOLLS;
	     tok = strtok_r(NULL, ",", &save))
		if (pn_coll_parse(tok, &bn.kinds[bn.nkinds++]) ||
		    bn.kinds[bn.nkinds - 1] == PN_COLL_ALLREDUCE) {
			fprintf(stderr, "host_coll: '%s': not a collective here\n", tok);
			return 2;
		}
	free(list);
	pn_boot_cfg_init(&cfg);
	fflush(stdout);
	if (pn_boot_run_ranks(np, &cfg, rank_main, &bn, &status, &report)) {
		fprintf(stderr, "host_coll: %s\n", pn_errmsg(-1));
		return 1;
	}
	if (report)
		fputs(report, stderr);
	free(report);
	return status;
}
