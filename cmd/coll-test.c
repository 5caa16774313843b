/* SPDX-License-Identifier: MIT */
/*
 * penny coll-test COLLECTIVE: nccl-tests' all_gather_perf, reduce_scatter_perf,
 * alltoall_perf, broadcast_perf, reduce_perf and sendrecv_perf on the host
 * engine (src/engine/collrun.h): allreduce-test's options, job and table
 * (sweep_main, cmd/allreduce-test.c) for another collective.
 */
#include "penny.h"

#include "base/log.h"

int cmd_coll_test(struct pn_ctx *ctx, int argc, char **argv)
{
	enum pn_coll_kind kind;

	if (argc < 1)
		return pn_cmd_fail(ctx, 2, "which collective? allgather, reducescatter, alltoall, "
				       "broadcast, reduce or sendrecv");
	if (argc > 1)
		return pn_cmd_fail(ctx, 2, "unexpected argument '%s'", argv[1]);
	if (pn_coll_parse(argv[0], &kind) || kind == PN_COLL_ALLREDUCE) {
		pn_err_clear();
		return pn_cmd_fail(ctx, 2, "'%s' is not a collective of coll-test: allgather, "
				       "reducescatter, alltoall, broadcast, reduce or sendrecv (allreduce: "
				       "penny allreduce-test)", argv[0]);
	}
	return sweep_main(ctx, kind);
}
