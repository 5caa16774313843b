/* SPDX-License-Identifier: MIT */
/*
 * The cuda plugin's host side with the GPU behind a fake driver table:
 * IPC handle exchange over the host's allgather (ranks are threads), the
 * settings every rank must agree on, registered buffers, the size table,
 * staging and chunking decisions, the kernel arguments, graph capture in
 * time(), errors raised by kernels, the other collectives' launches, and a
 * missing driver.
 */
#define _GNU_SOURCE
#include "unit.h"

#include "../../plugins/common/cudrv.c"
#include "../../plugins/common/gpu.c"
#include "../../plugins/cuda/cuda_plan.c"
#include "../../plugins/cuda/cuda.c"
#include "../../plugins/cuda/cuda_coll.c"
#include "../../plugins/cuda/cuda_ce.c"

#include "t_plugin_fakecu.h"

#include <dlfcn.h>
#include <errno.h>
#include <math.h>

static const char img[] = "fatbin";
static const struct pn_cuda_images images = {
	.data = img,
	.kern = { img, img, img, img, img, img, img },
	.coll = img,
};

/* state shared by the rank threads of one test */
static void *be[FAKE_MAX_RANKS];
static int rets[FAKE_MAX_RANKS];
static char msgs[FAKE_MAX_RANKS][512];
static void *bufs[FAKE_MAX_RANKS][4];

static void do_init(struct fake_world *w, int r)
{
	be[r] = NULL;
	rets[r] = pn_cuda_init(&images, &w->host[r], r, &be[r]);
	snprintf(msgs[r], sizeof(msgs[r]), "%s", pn_plugin_errmsg());
}

static void do_fini(struct fake_world *w, int r)
{
	(void)w;
	pn_cuda_fini(be[r]);
	be[r] = NULL;
}

static int all_ok(int n)
{
	for (int r = 0; r < n; r++)
		if (rets[r]) {
			printf("#   rank %d: %d %s\n", r, rets[r], msgs[r]);
			return 0;
		}
	return 1;
}

TEST(init_maps_every_peers_workspace)
{
	struct fake_world w;

	fake_world_init(&w, 4);
	fake_run(&w, do_init);
	CHECK(all_ok(4));
	for (int r = 0; r < 4 && all_ok(4); r++) {
		struct pn_cuda *c = be[r];

		/* the smallest GPU (100 SMs) sets every rank's grid */
		CHECK_EQ_INT(c->cfg.blocks, 100);
		CHECK(strstr(pn_cuda_describe(c), "rank ") != NULL);
		for (int p = 0; p < 4; p++) {
			struct pn_cuda *q = be[p];

			CHECK(c->ws->peer[p] == q->ws->base);
			CHECK(c->stage->peer[p] == q->stage->base);
			CHECK(c->ws->id == q->ws->id);
		}
		/* mapped: three peers x (workspace + staging) */
		CHECK_EQ_INT(w.rank[r].ipc_open, 6);
	}
	fake_run(&w, do_fini);
	for (int r = 0; r < 4; r++)
		CHECK_EQ_INT(w.rank[r].ipc_close, 6);
	fake_world_free(&w);
}

/* Ranks that are threads of one process: CUDA IPC fails to open a handle
 * of the process that made it, so each peer's pointer is taken, with peer
 * access, and nothing is closed at fini. */
TEST(ranks_in_one_process_take_each_others_pointers)
{
	struct fake_world w;

	fake_world_init(&w, 3);
	for (int r = 0; r < 3; r++)
		w.rank[r].ipc_same = 1;
	fake_run(&w, do_init);
	CHECK(all_ok(3));
	for (int r = 0; r < 3 && all_ok(3); r++) {
		struct pn_cuda *c = be[r];

		for (int p = 0; p < 3; p++) {
			struct pn_cuda *q = be[p];

			CHECK(c->ws->peer[p] == q->ws->base);
			CHECK(c->stage->peer[p] == q->stage->base);
		}
		CHECK_EQ_INT(w.rank[r].ipc_open, 0);
		/* once per peer device, not per buffer */
		CHECK_EQ_INT(w.rank[r].peer_on, 2);
	}
	fake_run(&w, do_fini);
	for (int r = 0; r < 3; r++)
		CHECK_EQ_INT(w.rank[r].ipc_close, 0);
	fake_world_free(&w);
}

static void do_alloc(struct fake_world *w, int r)
{
	(void)w;
	rets[r] = pn_cuda_alloc(be[r], 4096, PENNY_MEM_REGISTERED, &bufs[r][0]);
	if (!rets[r])
		rets[r] = pn_cuda_alloc(be[r], 4096, 0, &bufs[r][1]);
	snprintf(msgs[r], sizeof(msgs[r]), "%s", pn_plugin_errmsg());
}

static void do_free(struct fake_world *w, int r)
{
	(void)w;
	rets[r] = pn_cuda_free(be[r], bufs[r][0]);
	if (!rets[r])
		rets[r] = pn_cuda_free(be[r], bufs[r][1]);
}

TEST(registered_buffers_map_the_same_buffer_of_every_rank)
{
	struct fake_world w;

	fake_world_init(&w, 3);
	fake_run(&w, do_init);
	fake_run(&w, do_alloc);
	CHECK(all_ok(3));
	for (int r = 0; r < 3 && all_ok(3); r++) {
		const struct pn_reg *g = pn_cuda_find_reg(be[r], (char *)bufs[r][0] + 16, 100);

		CHECK(g != NULL);
		if (!g)
			continue;
		for (int p = 0; p < 3; p++)
			CHECK(g->peer[p] == (CUdeviceptr)(uintptr_t)bufs[p][0]);
		CHECK(pn_cuda_find_reg(be[r], bufs[r][0], 4097) == NULL); /* past the end */
		CHECK(pn_cuda_find_reg(be[r], bufs[r][1], 16) == NULL);	 /* not registered */
	}
	fake_run(&w, do_free);
	CHECK(all_ok(3));
	CHECK(pn_cuda_find_reg(be[0], bufs[0][0], 16) == NULL);
	fake_run(&w, do_fini);
	fake_world_free(&w);
}

static void do_alloc_mismatch(struct fake_world *w, int r)
{
	(void)w;
	rets[r] = pn_cuda_alloc(be[r], r == 2 ? 8192 : 4096, PENNY_MEM_REGISTERED, &bufs[r][0]);
	snprintf(msgs[r], sizeof(msgs[r]), "%s", pn_plugin_errmsg());
}

static void do_alloc_fail_rank1(struct fake_world *w, int r)
{
	w->rank[r].fail_alloc = r == 1;
	rets[r] = pn_cuda_alloc(be[r], 4096, PENNY_MEM_REGISTERED, &bufs[r][0]);
	snprintf(msgs[r], sizeof(msgs[r]), "%s", pn_plugin_errmsg());
	w->rank[r].fail_alloc = 0;
}

TEST(registered_allocations_fail_together)
{
	struct fake_world w;

	fake_world_init(&w, 3);
	fake_run(&w, do_init);
	fake_run(&w, do_alloc_mismatch);
	for (int r = 0; r < 3; r++) {
		CHECK_EQ_INT(rets[r], -EINVAL);
		CHECK(strstr(msgs[r], "differs between ranks") != NULL);
	}
	fake_run(&w, do_alloc_fail_rank1);
	for (int r = 0; r < 3; r++) {
		CHECK_EQ_INT(rets[r], -ENOMEM);
		CHECK(strstr(msgs[r], "rank 1 cannot allocate 4096 bytes") != NULL);
	}
	/* and the next collective allocation still pairs up */
	fake_run(&w, do_alloc);
	CHECK(all_ok(3));
	fake_run(&w, do_free);
	fake_run(&w, do_fini);
	fake_world_free(&w);
}

TEST(size_table)
{
	struct pn_tune t;
	char buf[128];

	CHECK_EQ_INT(pn_tune_parse("oneshot:64K,twoshot_ll:1M,twoshot:32MiB,ring", &t), 0);
	CHECK_EQ_INT(t.nrows, 4);
	CHECK_EQ_INT(pn_tune_select(&t, 1), PN_K_ONESHOT);
	CHECK_EQ_INT(pn_tune_select(&t, 65536), PN_K_ONESHOT);
	CHECK_EQ_INT(pn_tune_select(&t, 65537), PN_K_TWOSHOT_LL);
	CHECK_EQ_INT(pn_tune_select(&t, 32u << 20), PN_K_TWOSHOT);
	CHECK_EQ_INT(pn_tune_select(&t, 1ull << 40), PN_K_RING);
	pn_tune_format(&t, buf, sizeof(buf));
	CHECK_STR(buf, "oneshot<=64KiB,twoshot_ll<=1MiB,twoshot<=32MiB,ring");
	/* the last row has no limit, whatever it says */
	CHECK_EQ_INT(pn_tune_parse("oneshot_fl:100", &t), 0);
	CHECK_EQ_INT(pn_tune_select(&t, 1ull << 30), PN_K_ONESHOT_FL);
	CHECK_EQ_INT(pn_tune_parse("oneshot:64K,bogus:1M", &t), -EINVAL);
	CHECK(strstr(pn_plugin_errmsg(), "unknown kernel 'bogus'") != NULL);
	CHECK_EQ_INT(pn_tune_parse("oneshot:1M,twoshot:64K,ring", &t), -EINVAL);
	CHECK(strstr(pn_plugin_errmsg(), "sizes must grow") != NULL);
	CHECK_EQ_INT(pn_tune_parse("oneshot:12Q", &t), -EINVAL);
	CHECK_EQ_INT(pn_tune_parse("", &t), -EINVAL);
	/* 2 GPUs: the ring past the one-shots (measured on H100 x2) */
	pn_tune_default(&t, 2);
	CHECK_EQ_INT(pn_tune_select(&t, 512u << 10), PN_K_ONESHOT);
	CHECK_EQ_INT(pn_tune_select(&t, 4u << 20), PN_K_ONESHOT_FL);
	CHECK_EQ_INT(pn_tune_select(&t, 8u << 20), PN_K_RING);
	/* defaults: LL one-shot first, something without a limit last */
	for (int n = 2; n <= 8; n++) {
		pn_tune_default(&t, n);
		CHECK_EQ_INT(t.row[0].kern, PN_K_ONESHOT);
		CHECK(t.row[t.nrows - 1].max_bytes == UINT64_MAX);
		for (int i = 1; i < t.nrows; i++)
			CHECK(t.row[i].max_bytes > t.row[i - 1].max_bytes);
	}
}

static struct pn_cuda_cfg cfg4 = {
	.nranks = 4, .ll_max = 1u << 20, .oneshot_ll_max = 128u << 10, .twoshot_ll_max = 256u << 10,
	.twoshot_hy_max = 1u << 20,
	.tile_twoshot = 32u << 10, .tile_ring = 64u << 10, .slot_bytes = 64u << 10,
	.stage_bytes = 64u << 20, .blocks = 132, .timeout_ns = 1,
};

TEST(staging_decisions)
{
	struct pn_reg reg = { .id = 1, .base = 0x100000, .bytes = 1 << 20 };
	struct pn_plan p;

	/* LL one-shot: any 16-byte aligned buffers, chunks of ll_max */
	CHECK_EQ_INT(pn_cuda_plan(&cfg4, PN_K_ONESHOT, 3u << 20, 0x1000, 0x2000, NULL, &p), 0);
	CHECK(!p.staged && p.chunk == 1u << 20);
	CHECK_EQ_INT(pn_cuda_plan(&cfg4, PN_K_ONESHOT, 100, 0x1002, 0x2000, NULL, &p), 0);
	CHECK(p.staged && p.chunk == 100);
	/* LL two-shot: chunks of n * ll_max / 2 */
	CHECK_EQ_INT(pn_cuda_plan(&cfg4, PN_K_TWOSHOT_LL, 5u << 20, 0x1000, 0x2000, NULL, &p), 0);
	CHECK(!p.staged && p.chunk == 2u << 20);
	/* hybrid two-shot: LL all-gather, so chunks of ll_max, no registration */
	CHECK_EQ_INT(pn_cuda_plan(&cfg4, PN_K_TWOSHOT_HY, 5u << 20, 0x1000, 0x2000, NULL, &p), 0);
	CHECK(!p.staged && p.chunk == 1u << 20);
	/* one-shot by flags: no registration needed */
	CHECK_EQ_INT(pn_cuda_plan(&cfg4, PN_K_ONESHOT_FL, 5u << 20, 0x1000, 0x2000, NULL, &p), 0);
	CHECK(!p.staged && p.chunk == 5u << 20);
	/* two-shot and ring store into the peers' recv: registered or staged */
	CHECK_EQ_INT(pn_cuda_plan(&cfg4, PN_K_TWOSHOT, 1u << 20, 0x1000, 0x100000, &reg, &p), 0);
	CHECK(!p.staged && p.chunk == 1u << 20);
	CHECK_EQ_INT(pn_cuda_plan(&cfg4, PN_K_RING, 1u << 30, 0x1000, 0x2000, NULL, &p), 0);
	CHECK(p.staged && p.chunk == 64u << 20);
	CHECK_EQ_INT(pn_cuda_plan(&cfg4, PN_K_TWOSHOT, 64, 0x1008, 0x100000, &reg, &p), 0);
	CHECK(p.staged);
	/* a call of fewer than 16 bytes is still one launch */
	CHECK_EQ_INT(pn_cuda_plan(&cfg4, PN_K_TWOSHOT, 2, 0x1000, 0x100000, &reg, &p), 0);
	CHECK(p.chunk == 2);
	CHECK_EQ_INT(pn_cuda_plan(&cfg4, 99, 2, 0x1000, 0x100000, &reg, &p), -EINVAL);
}

TEST(launch_geometry)
{
	static const uint64_t sizes[] = { 1, 16, 1000, 1 << 16, 1 << 20, 3000017, 1ull << 30 };

	for (int k = 0; k < PN_NKERNS; k++)
		for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
			struct pn_launch l;
			uint64_t b = sizes[i];

			pn_cuda_geometry(&cfg4, k, b, &l);
			CHECK(l.grid >= 1 && l.grid <= cfg4.blocks);
			CHECK(l.threads >= 64 && l.threads <= 512 && l.threads % 32 == 0);
			if (k == PN_K_ONESHOT || k == PN_K_TWOSHOT_LL)
				continue;
			/* tiles: 16-byte multiples within the slot, covering the buffer */
			CHECK(l.tile % 16 == 0 && l.tile >= 512 && l.tile <= cfg4.slot_bytes);
			CHECK(l.tile <= (k == PN_K_RING ? cfg4.tile_ring : k == PN_K_ONESHOT_FL ? cfg4.slot_bytes
											     : cfg4.tile_twoshot));
			CHECK((uint64_t)l.tile * (k == PN_K_ONESHOT_FL ? 1 : 4) * 132 >= b ||
			      l.grid == cfg4.blocks);
		}
}

TEST(algorithm_for_a_call)
{
	struct pn_tune t;

	pn_tune_default(&t, 4);
	CHECK_EQ_INT(pn_cuda_kernel_for(&cfg4, &t, PENNY_ALGO_AUTO, 1024), PN_K_ONESHOT);
	CHECK_EQ_INT(pn_cuda_kernel_for(&cfg4, &t, PENNY_ALGO_AUTO, 1ull << 30), PN_K_RING);
	CHECK_EQ_INT(pn_cuda_kernel_for(&cfg4, &t, PENNY_ALGO_ONESHOT, 1024), PN_K_ONESHOT);
	CHECK_EQ_INT(pn_cuda_kernel_for(&cfg4, &t, PENNY_ALGO_ONESHOT, 1u << 20), PN_K_ONESHOT_FL);
	CHECK_EQ_INT(pn_cuda_kernel_for(&cfg4, &t, PENNY_ALGO_TWOSHOT, 256u << 10), PN_K_TWOSHOT_LL);
	CHECK_EQ_INT(pn_cuda_kernel_for(&cfg4, &t, PENNY_ALGO_TWOSHOT, 1u << 20), PN_K_TWOSHOT_HY);
	CHECK_EQ_INT(pn_cuda_kernel_for(&cfg4, &t, PENNY_ALGO_TWOSHOT, 2u << 20), PN_K_TWOSHOT);
	CHECK_EQ_INT(pn_cuda_kernel_for(&cfg4, &t, PENNY_ALGO_RING, 16), PN_K_RING);
	CHECK(pn_cuda_kernel_for(&cfg4, &t, 77, 16) < 0);
	for (int k = 0; k < PN_NKERNS; k++)
		CHECK(pn_kern_algo(k) >= PENNY_ALGO_ONESHOT && pn_kern_algo(k) <= PENNY_ALGO_RING);
}

/* ---- allreduce: what is launched with which arguments ---- */

struct call {
	int algo, dtype;
	size_t count;
	int regd;	/* recv registered */
	int inplace;
	size_t offset;	/* into the buffers, elements */
};
static struct call the_call;

static void do_call(struct fake_world *w, int r)
{
	struct call *c = &the_call;
	char *s, *d;

	w->rank[r].nlaunch = w->rank[r].ncopy = 0;
	rets[r] = pn_cuda_alloc(be[r], 8u << 20, PENNY_MEM_REGISTERED, &bufs[r][0]);
	if (!rets[r])
		rets[r] = pn_cuda_alloc(be[r], 8u << 20, c->regd ? PENNY_MEM_REGISTERED : 0, &bufs[r][1]);
	if (rets[r])
		return;
	w->rank[r].nlaunch = w->rank[r].ncopy = 0;
	s = (char *)bufs[r][0] + c->offset * penny_data_size(c->dtype);
	d = c->inplace ? s : (char *)bufs[r][1] + c->offset * penny_data_size(c->dtype);
	rets[r] = pn_cuda_allreduce(be[r], s, d, c->count, c->dtype, PENNY_SUM, c->algo);
	if (!rets[r])
		rets[r] = pn_gpu_be_sync(be[r]);
	snprintf(msgs[r], sizeof(msgs[r]), "%s", pn_plugin_errmsg());
}

static void do_free_call(struct fake_world *w, int r)
{
	(void)w;
	pn_cuda_free(be[r], bufs[r][1]);
	pn_cuda_free(be[r], bufs[r][0]);
}

static void call_on(struct fake_world *w, struct call c)
{
	the_call = c;
	fake_run(w, do_call);
}

TEST(registered_two_shot_runs_in_place_on_the_users_buffers)
{
	struct fake_world w;

	fake_world_init(&w, 4);
	fake_run(&w, do_init);
	call_on(&w, (struct call){ PENNY_ALGO_TWOSHOT, PENNY_BFLOAT16, 1u << 20, 1, 0, 8 });
	CHECK(all_ok(4));
	for (int r = 0; r < 4 && all_ok(4); r++) {
		struct fake_rank *f = &w.rank[r];
		const struct pn_reg *g = pn_cuda_find_reg(be[r], bufs[r][1], 16);
		uint64_t off = 8 * 2;

		CHECK_EQ_INT(f->nlaunch, 1);
		CHECK_EQ_INT(f->ncopy, 0);
		CHECK_STR(f->launch[0].name, "pn_ar_twoshot_bfloat16_sum");
		CHECK(f->launch[0].ar.send == (uint64_t)(uintptr_t)bufs[r][0] + off);
		CHECK(f->launch[0].ar.recv == (uint64_t)(uintptr_t)bufs[r][1] + off);
		CHECK_EQ_INT(f->launch[0].ar.count, 1u << 20);
		CHECK_EQ_INT(f->launch[0].ar.rank, r);
		CHECK_EQ_INT(f->launch[0].ar.nranks, 4);
		CHECK(g && f->launch[0].ar.desc == ((uint64_t)g->id << 40 | off));
		for (int p = 0; p < 4; p++)
			CHECK(f->launch[0].ar.peer_recv[p] == (uint64_t)(uintptr_t)bufs[p][1] + off);
		/* every rank computed the same geometry */
		CHECK(f->launch[0].grid == w.rank[0].launch[0].grid);
		CHECK(f->launch[0].ar.tile == w.rank[0].launch[0].ar.tile);
	}
	fake_run(&w, do_free_call);
	fake_run(&w, do_fini);
	fake_world_free(&w);
}

TEST(unregistered_and_misaligned_buffers_go_through_staging)
{
	struct fake_world w;

	fake_world_init(&w, 2);
	fake_run(&w, do_init);
	/* unregistered recv: 4 MiB of int32, one chunk of the 64 MiB staging buffer */
	call_on(&w, (struct call){ PENNY_ALGO_RING, PENNY_INT32, 1u << 20, 0, 0, 0 });
	CHECK(all_ok(2));
	for (int r = 0; r < 2 && all_ok(2); r++) {
		struct fake_rank *f = &w.rank[r];
		struct pn_cuda *c = be[r];

		CHECK_EQ_INT(f->nlaunch, 1);
		CHECK_EQ_INT(f->ncopy, 2);
		CHECK(f->copy[0].dst == c->stage->base && f->copy[0].bytes == 4u << 20);
		CHECK(f->copy[1].src == c->stage->base &&
		      f->copy[1].dst == (CUdeviceptr)(uintptr_t)bufs[r][1]);
		CHECK(f->launch[0].ar.send == c->stage->base && f->launch[0].ar.recv == c->stage->base);
		CHECK(f->launch[0].ar.peer_recv[1 - r] == ((struct pn_cuda *)be[1 - r])->stage->base);
		CHECK(f->launch[0].ar.desc == (uint64_t)c->stage->id << 40);
	}
	fake_run(&w, do_free_call);
	/* misaligned by one bfloat16: staged even when registered */
	call_on(&w, (struct call){ PENNY_ALGO_TWOSHOT, PENNY_BFLOAT16, 3u << 20, 1, 0, 1 });
	CHECK(all_ok(2));
	CHECK_EQ_INT(w.rank[0].ncopy, 2);
	CHECK_STR(w.rank[0].launch[0].name, "pn_ar_twoshot_bfloat16_sum");
	fake_run(&w, do_free_call);
	fake_run(&w, do_fini);
	fake_world_free(&w);
}

TEST(large_unregistered_calls_are_chunked_by_the_staging_buffer)
{
	struct fake_world w;

	setenv("PENNY_CUDA_STAGING", "1M", 1);
	fake_world_init(&w, 2);
	fake_run(&w, do_init);
	unsetenv("PENNY_CUDA_STAGING");
	CHECK(all_ok(2));
	call_on(&w, (struct call){ PENNY_ALGO_TWOSHOT, PENNY_FLOAT, (3u << 20) / 4 + 5, 0, 0, 0 });
	CHECK(all_ok(2));
	for (int r = 0; r < 2 && all_ok(2); r++) {
		struct fake_rank *f = &w.rank[r];

		/* 3 MiB + 20 bytes: three 1 MiB two-shot launches and one of 16 bytes, each
		 * staged; the last 4 bytes by the LL one-shot, in place (aligned) */
		CHECK_EQ_INT(f->nlaunch, 5);
		for (int i = 0; i < 4; i++)
			CHECK_STR(f->launch[i].name, "pn_ar_twoshot_float_sum");
		CHECK_STR(f->launch[4].name, "pn_ar_oneshot_float_sum");
		CHECK_EQ_INT(f->launch[3].ar.count, 4);
		CHECK_EQ_INT(f->launch[4].ar.count, 1);
		CHECK_EQ_INT(f->ncopy, 8);
	}
	fake_run(&w, do_free_call);
	fake_run(&w, do_fini);
	fake_world_free(&w);
}

TEST(auto_follows_the_table_and_odd_tails_go_by_ll)
{
	struct fake_world w;

	setenv("PENNY_CUDA_TUNE", "oneshot:4K,twoshot", 1);
	fake_world_init(&w, 2);
	fake_run(&w, do_init);
	unsetenv("PENNY_CUDA_TUNE");
	CHECK(all_ok(2));
	call_on(&w, (struct call){ PENNY_ALGO_AUTO, PENNY_HALF, 1000, 1, 0, 0 });
	CHECK_EQ_INT(w.rank[1].nlaunch, 1);
	CHECK_STR(w.rank[1].launch[0].name, "pn_ar_oneshot_half_sum");
	fake_run(&w, do_free_call);
	call_on(&w, (struct call){ PENNY_ALGO_AUTO, PENNY_HALF, 262147, 1, 1, 0 });
	CHECK(all_ok(2));
	CHECK_EQ_INT(w.rank[1].nlaunch, 2);
	CHECK_STR(w.rank[1].launch[0].name, "pn_ar_twoshot_half_sum");
	CHECK_EQ_INT(w.rank[1].launch[0].ar.count, 262144);
	CHECK_STR(w.rank[1].launch[1].name, "pn_ar_oneshot_half_sum");
	CHECK_EQ_INT(w.rank[1].launch[1].ar.count, 3);
	CHECK(w.rank[1].launch[1].ar.send == w.rank[1].launch[0].ar.send + 524288);
	CHECK_EQ_INT(pn_cuda_select(be[0], 262147, PENNY_HALF, PENNY_SUM, PENNY_ALGO_AUTO),
		     PENNY_ALGO_TWOSHOT);
	CHECK_EQ_INT(pn_cuda_select(be[0], 10, PENNY_HALF, PENNY_SUM, PENNY_ALGO_AUTO),
		     PENNY_ALGO_ONESHOT);
	CHECK(pn_cuda_select(be[0], 10, 42, PENNY_SUM, PENNY_ALGO_AUTO) < 0);
	fake_run(&w, do_free_call);
	fake_run(&w, do_fini);
	fake_world_free(&w);
}

static void do_time(struct fake_world *w, int r)
{
	struct penny_time_v1 t;

	memset(&t, 0, sizeof(t));
	t.send = bufs[r][0];
	t.recv = bufs[r][1];
	t.count = 1024;
	t.dtype = PENNY_FLOAT;
	t.op = PENNY_SUM;
	t.algo = PENNY_ALGO_ONESHOT;
	t.warmup = 3;
	t.iters = 25;
	t.graph = 10;
	w->rank[r].nlaunch = 0;
	rets[r] = pn_gpu_be_time(be[r], &t);
	/* 3 warm-up launches, 10 captured, 3 graph replays (30 calls) + 1 warm */
	if (!rets[r] && (w->rank[r].nlaunch != 3 || w->rank[r].ncaptured != 10 ||
			 w->rank[r].graph_launches != 4 || t.iters_run != 30 || t.usec <= 0))
		rets[r] = -1000 - w->rank[r].graph_launches;
	if (!rets[r]) {
		t.graph = 0;
		w->rank[r].nlaunch = 0;
		rets[r] = pn_gpu_be_time(be[r], &t);
		if (!rets[r] && (w->rank[r].nlaunch != 28 || t.iters_run != 25))
			rets[r] = -2000;
	}
	if (!rets[r]) {
		/* blocks (time2): one warm-up and one capture, then 5 blocks of 3
		 * replays (30 calls) each; each block timed on its own events */
		struct penny_time_v2 t2;
		double blk[5] = { 0 };

		memset(&t2, 0, sizeof(t2));
		t2.size = sizeof(t2);
		t2.t = t;
		t2.t.graph = 10;
		t2.blocks = 5;
		t2.block_usec = blk;
		w->rank[r].nlaunch = w->rank[r].ncaptured = w->rank[r].graph_launches = 0;
		rets[r] = pn_gpu_be_time2(be[r], &t2);
		if (!rets[r] && (w->rank[r].nlaunch != 3 || w->rank[r].ncaptured != 10 ||
				 w->rank[r].graph_launches != 1 + 5 * 3 || t2.blocks_run != 5 ||
				 t2.t.iters_run != 30 || blk[0] <= 0 || blk[4] != blk[0] ||
				 fabs(t2.t.usec - blk[0]) > 1e-9))
			rets[r] = -3000;
		/* without graphs: 3 warm-up calls, then 5 blocks of 25 */
		t2.t.graph = 0;
		w->rank[r].nlaunch = 0;
		if (!rets[r])
			rets[r] = pn_gpu_be_time2(be[r], &t2);
		if (!rets[r] && (w->rank[r].nlaunch != 3 + 5 * 25 || t2.blocks_run != 5))
			rets[r] = -4000;
		/* the caller of an older header (no blocks): one block, blocks_run untouched */
		t2.size = (uint32_t)PENNY_TIME_V2_MIN_SIZE;
		t2.blocks_run = 7;
		w->rank[r].nlaunch = 0;
		if (!rets[r])
			rets[r] = pn_gpu_be_time2(be[r], &t2);
		if (!rets[r] && (w->rank[r].nlaunch != 28 || t2.blocks_run != 7))
			rets[r] = -5000;
		/* more blocks than the ABI allows, or no room for them */
		t2.size = sizeof(t2);
		t2.blocks = PENNY_TIME_MAX_BLOCKS + 1;
		if (!rets[r] && pn_gpu_be_time2(be[r], &t2) != -EINVAL)
			rets[r] = -6000;
		t2.blocks = 5;
		t2.block_usec = NULL;
		if (!rets[r] && pn_gpu_be_time2(be[r], &t2) != -EINVAL)
			rets[r] = -7000;
	}
	snprintf(msgs[r], sizeof(msgs[r]), "%s", pn_plugin_errmsg());
}

TEST(time_captures_a_graph_of_n_calls)
{
	struct fake_world w;

	fake_world_init(&w, 2);
	fake_run(&w, do_init);
	call_on(&w, (struct call){ PENNY_ALGO_ONESHOT, PENNY_FLOAT, 1024, 1, 0, 0 });
	fake_run(&w, do_time);
	CHECK(all_ok(2));
	fake_run(&w, do_free_call);
	fake_run(&w, do_fini);
	fake_world_free(&w);
}

TEST(errors_the_kernels_record_come_out_at_sync)
{
	struct fake_world w;
	uint32_t *err;

	fake_world_init(&w, 2);
	fake_run(&w, do_init);
	CHECK(all_ok(2));
	if (!all_ok(2))
		return;
	err = (uint32_t *)(uintptr_t)(((struct pn_cuda *)be[0])->ws->base + PN_WS_COUNTERS) + PN_CNT_ERR;
	err[0] = PN_ERR_TIMEOUT;
	err[1] = 1;
	CHECK_EQ_INT(pn_gpu_be_sync(be[0]), -ETIMEDOUT);
	CHECK_STR(pn_plugin_errmsg(), "allreduce on rank 0 timed out waiting for rank 1");
	CHECK_EQ_INT(pn_gpu_be_sync(be[0]), 0); /* reported once */
	err[0] = PN_ERR_DESC;
	err[1] = 1;
	CHECK_EQ_INT(pn_gpu_be_sync(be[0]), -EINVAL);
	CHECK(strstr(pn_plugin_errmsg(), "buffers differ between ranks") != NULL);
	fake_run(&w, do_fini);
	fake_world_free(&w);
}

/*
 * A framework's watchdog thread asks for async errors while another of its
 * threads captures a graph in global mode: the stream creation and the copy
 * the check makes would invalidate that capture unless this thread's
 * capture mode is relaxed (PyTorch: "operation failed due to a previous
 * error during capture").  And PyTorch asks at every collective: the check
 * never waits for the GPU, it looks at the copy once that is done.
 */
static int xmode_cur;		/* this test's one thread: its capture mode */
static int other_capture, capture_broken;
static int x_pending, x_behind, x_syncs, x_copies, x_queries;
static void *x_dst;
static CUdeviceptr x_src;
static size_t x_n;

static CUresult x_exchange(int *mode)
{
	int old = xmode_cur;

	xmode_cur = *mode;
	*mode = old;
	return 0;
}
static CUresult x_unsafe(void)
{
	if (other_capture && xmode_cur != CU_STREAM_CAPTURE_MODE_RELAXED) {
		capture_broken = 1;
		return (CUresult)900; /* CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED */
	}
	return 0;
}
static CUresult x_screate(CUstream *s, unsigned fl)
{
	(void)fl;
	*s = (CUstream)(uintptr_t)0x2100;
	return x_unsafe();
}
/* the GPU catches up: the copy in flight lands */
static void x_land(void)
{
	if (x_pending)
		memcpy(x_dst, (const void *)(uintptr_t)x_src, x_n);
	x_pending = 0;
}
static CUresult x_dtoh_async(void *d, CUdeviceptr s, size_t n, CUstream st)
{
	(void)st;
	CHECK(!x_pending); /* one copy in flight at most */
	x_dst = d;
	x_src = s;
	x_n = n;
	x_pending = 1;
	x_copies++;
	if (!x_behind)
		x_land();
	return x_unsafe();
}
static CUresult x_equery(CUevent e)
{
	(void)e;
	x_queries++;
	return x_pending ? CUDA_ERROR_NOT_READY : x_unsafe();
}
static CUresult x_ssync(CUstream s)
{
	(void)s;
	x_syncs++;
	x_land();
	return x_unsafe();
}
static CUresult x_halloc(void **p, size_t n, unsigned fl)
{
	(void)fl;
	*p = calloc(1, n);
	return *p ? 0 : 2;
}
static CUresult x_hfree(void *p)
{
	free(p);
	return 0;
}

static uint32_t *err_word(int r)
{
	return (uint32_t *)(uintptr_t)(((struct pn_cuda *)be[r])->ws->base + PN_WS_COUNTERS) +
	       PN_CNT_ERR;
}

/* async_error() as after its interval (it looks once a millisecond) */
static int look(int r)
{
	((struct pn_cuda *)be[r])->poll_next = 0;
	return pn_cuda_async_error(be[r]);
}

TEST(async_errors_are_read_without_waiting_or_breaking_another_threads_capture)
{
	struct pn_cudrv cu = fake_cu;
	struct fake_world w;
	uint32_t *err;
	int syncs;

	cu.ThreadExchangeStreamCaptureMode = x_exchange;
	cu.StreamCreate = x_screate;
	cu.MemcpyDtoHAsync = x_dtoh_async;
	cu.EventQuery = x_equery;
	cu.StreamSynchronize = x_ssync;
	cu.MemHostAlloc = x_halloc;
	cu.MemFreeHost = x_hfree;
	pn_cudrv_set(&cu); /* the backend keeps the table it was made with */
	fake_world_init(&w, 2);
	fake_run(&w, do_init);
	CHECK(all_ok(2));
	if (!all_ok(2)) {
		pn_cudrv_set(&fake_cu);
		return;
	}
	other_capture = 1;
	syncs = x_syncs;
	CHECK_EQ_INT(look(0), 0);
	err = err_word(0);
	err[0] = PN_ERR_TIMEOUT;
	err[1] = 1;
	/* the copy done is from before the error; the next one sees it */
	CHECK_EQ_INT(look(0), 0);
	CHECK_EQ_INT(look(0), -ETIMEDOUT);
	CHECK_STR(pn_plugin_errmsg(), "allreduce on rank 0 timed out waiting for rank 1");
	CHECK_EQ_INT(capture_broken, 0);
	CHECK_EQ_INT(xmode_cur, 0); /* the thread's mode is back */
	CHECK_EQ_INT(look(0), -ETIMEDOUT); /* it stays */
	other_capture = 0;
	err[0] = 0;

	/* the GPU behind: no answer and no second copy until the first lands */
	x_behind = 1;
	err = err_word(1);
	err[0] = PN_ERR_TIMEOUT;
	err[1] = 0;
	x_copies = 0;
	CHECK_EQ_INT(look(1), 0);
	CHECK_EQ_INT(look(1), 0);
	CHECK_EQ_INT(look(1), 0);
	CHECK_EQ_INT(x_copies, 1);
	/* within the interval: not a driver call */
	x_queries = 0;
	CHECK_EQ_INT(pn_cuda_async_error(be[1]), 0);
	CHECK_EQ_INT(x_queries, 0);
	x_behind = 0;
	x_land();
	CHECK_EQ_INT(look(1), -ETIMEDOUT);
	CHECK_STR(pn_plugin_errmsg(), "allreduce on rank 1 timed out waiting for rank 0");
	CHECK_EQ_INT(x_syncs, syncs); /* never a wait for the GPU */
	err[0] = 0;
	fake_run(&w, do_fini);
	fake_world_free(&w);
	pn_cudrv_set(&fake_cu);
}

TEST(bad_arguments)
{
	struct fake_world w, w1;
	struct penny_host_v1 h;
	void *b = NULL;

	fake_world_init(&w, 2);
	fake_world_init(&w1, 1);
	h = w.host[0];
	h.nnodes = 2;
	CHECK_EQ_INT(pn_cuda_init(&images, &h, 0, &b), -ENOTSUP);
	CHECK(strstr(pn_plugin_errmsg(), "runs on one node") != NULL);
	h = w.host[0];
	h.nranks = h.local_size = 9;
	CHECK_EQ_INT(pn_cuda_init(&images, &h, 0, &b), -ENOTSUP);
	h = w.host[0];
	h.allgather = NULL;
	CHECK_EQ_INT(pn_cuda_init(&images, &h, 0, &b), -EINVAL);
	setenv("PENNY_CUDA_TILE", "100", 1);
	CHECK_EQ_INT(pn_cuda_init(&images, &w1.host[0], 0, &b), -EINVAL);
	CHECK(strstr(pn_plugin_errmsg(), "out of range") != NULL);
	setenv("PENNY_CUDA_TILE", "12X", 1);
	CHECK_EQ_INT(pn_cuda_init(&images, &w1.host[0], 0, &b), -EINVAL);
	CHECK(strstr(pn_plugin_errmsg(), "PENNY_CUDA_TILE: invalid size '12X'") != NULL);
	setenv("PENNY_CUDA_TILE", "1.5K", 1);
	CHECK_EQ_INT(pn_cuda_init(&images, &w1.host[0], 0, &b), -EINVAL);
	setenv("PENNY_CUDA_TIMEOUT", "0", 1);
	CHECK_EQ_INT(pn_cuda_init(&images, &w1.host[0], 0, &b), -EINVAL);
	CHECK(strstr(pn_plugin_errmsg(), "PENNY_CUDA_TIMEOUT: '0' is not a duration") != NULL);
	/* sizes and durations by the rule of src/base/units.h, as every option */
	setenv("PENNY_CUDA_TILE", "64KiB", 1);
	setenv("PENNY_CUDA_TIMEOUT", "2m", 1);
	/* one rank: a copy, no kernel */
	fake_me = &w1.rank[0];
	CHECK_EQ_INT(pn_cuda_init(&images, &w1.host[0], 0, &b), 0);
	unsetenv("PENNY_CUDA_TILE");
	unsetenv("PENNY_CUDA_TIMEOUT");
	if (b) {
		CHECK(((struct pn_cuda *)b)->cfg.tile_twoshot == 64u << 10);
		CHECK(((struct pn_cuda *)b)->cfg.timeout_ns == 120000000000ull);
		pn_cuda_fini(b);
		b = NULL;
	}
	/* PENNY_CUDA_TIMEOUT unset: the core's --timeout (at least 1 s), without one 30 s */
	{
		static const uint64_t given[] = { 7000000000ull, 10000000ull, 0 };
		static const uint64_t want[] = { 7000000000ull, 1000000000ull, 30000000000ull };

		for (int i = 0; i < 3; i++) {
			void *t = NULL;

			w1.host[0].timeout_ns = given[i];
			CHECK_EQ_INT(pn_cuda_init(&images, &w1.host[0], 0, &t), 0);
			if (t) {
				CHECK(((struct pn_cuda *)t)->cfg.timeout_ns == want[i]);
				pn_cuda_fini(t);
			}
		}
		w1.host[0].timeout_ns = 0;
	}
	CHECK_EQ_INT(pn_cuda_init(&images, &w1.host[0], 0, &b), 0);
	if (b) {
		void *x = NULL, *y = NULL;

		w1.rank[0].nlaunch = w1.rank[0].ncopy = 0;
		CHECK_EQ_INT(pn_cuda_alloc(b, 64, 0, &x), 0);
		CHECK_EQ_INT(pn_cuda_alloc(b, 64, 0, &y), 0);
		CHECK_EQ_INT(pn_cuda_allreduce(b, x, y, 16, PENNY_FLOAT, PENNY_AVG, PENNY_ALGO_AUTO), 0);
		CHECK_EQ_INT(w1.rank[0].nlaunch, 0);
		CHECK_EQ_INT(w1.rank[0].ncopy, 1);
		CHECK_EQ_INT(pn_cuda_allreduce(b, x, y, 16, PENNY_FLOAT, 9, PENNY_ALGO_AUTO), -EINVAL);
		CHECK_EQ_INT(pn_cuda_allreduce(b, x, y, 0, PENNY_FLOAT, PENNY_SUM, PENNY_ALGO_AUTO), 0);
		pn_cuda_free(b, x);
		pn_cuda_free(b, y);
		pn_cuda_fini(b);
	}
	fake_me = NULL;
	fake_world_free(&w1);
	fake_world_free(&w);
}

/* all-gather: 1000 doubles per rank (not a multiple of 16 bytes) */
#define AG_COUNT 1000

/*
 * In place in a registered buffer and out of place from plain memory: one
 * pn_co_allgather launch each on the backend's stream, no copy, no host
 * barrier, no synchronisation (it was copies between two host barriers,
 * which a CUDA graph cannot hold).
 */
static void do_allgather(struct fake_world *w, int r)
{
	struct fake_rank *f = &w->rank[r];
	struct pn_cuda *c = be[r];
	size_t bytes = AG_COUNT * 8;
	char *reg = NULL, *plain = NULL, *out = NULL;
	int n = w->n, gathers, ok;

	rets[r] = -1;
	if (pn_cuda_alloc(c, bytes * n, PENNY_MEM_REGISTERED, (void **)&reg) ||
	    pn_cuda_alloc(c, bytes, 0, (void **)&plain) || pn_cuda_alloc(c, bytes * n, 0, (void **)&out))
		return;
	pn_gpu_be_sync(c);
	gathers = w->gathers;
	f->nlaunch = f->ncopy = 0;
	ok = !pn_cuda_allgather(c, reg + (size_t)r * bytes, reg, AG_COUNT, PENNY_DOUBLE) &&
	     !pn_cuda_allgather(c, plain, out, AG_COUNT, PENNY_DOUBLE) && f->nlaunch == 2 &&
	     f->ncopy == 0 && w->gathers == gathers;
	for (int i = 0; i < 2 && ok; i++) {
		const struct pn_ar_args *x = &f->launch[i].ar;

		ok = !strcmp(f->launch[i].name, "pn_co_allgather") && f->launch[i].stream == c->g.stream &&
		     x->count == AG_COUNT && x->esize == 8 && x->rank == r && x->nranks == n &&
		     x->send == (uint64_t)(uintptr_t)(i ? plain : reg + (size_t)r * bytes) &&
		     x->recv == (uint64_t)(uintptr_t)(i ? out : reg);
	}
	if (!ok)
		snprintf(msgs[r], sizeof(msgs[r]), "%d launches, %d copies, %d host gathers: %s",
			 f->nlaunch, f->ncopy, w->gathers - gathers, pn_plugin_errmsg());
	pn_cuda_free(c, reg);
	pn_cuda_free(c, plain);
	pn_cuda_free(c, out);
	rets[r] = ok ? 0 : -1;
}

TEST(allgather_is_one_kernel_without_host_barriers)
{
	struct fake_world w;

	fake_world_init(&w, 3);
	fake_run(&w, do_init);
	CHECK(all_ok(3));
	fake_run(&w, do_allgather);
	CHECK(all_ok(3));
	fake_run(&w, do_fini);
	fake_world_free(&w);
}

static void do_init_rank1_bad_device(struct fake_world *w, int r)
{
	be[r] = NULL;
	rets[r] = pn_cuda_init(&images, &w->host[r], r == 1 ? 9 : r, &be[r]);
	snprintf(msgs[r], sizeof(msgs[r]), "%s", pn_plugin_errmsg());
}

TEST(a_rank_that_cannot_open_its_gpu_fails_every_rank_naming_it)
{
	struct fake_world w;

	fake_world_init(&w, 3);
	fake_run(&w, do_init_rank1_bad_device);
	for (int r = 0; r < 3; r++)
		CHECK(rets[r] < 0 && be[r] == NULL);
	CHECK(strstr(msgs[1], "CUDA device 9 does not exist") == msgs[1]);
	CHECK(strstr(msgs[0], "rank 1 failed: CUDA device 9 does not exist") != NULL);
	CHECK(strstr(msgs[2], "rank 1 failed: CUDA device 9 does not exist") != NULL);
	fake_world_free(&w);
}

TEST(without_a_driver_init_says_so_in_one_line)
{
	struct fake_world w;
	void *b = NULL, *dl = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	int ret;

	if (dl) {
		dlclose(dl);
		printf("# a CUDA driver is installed here; the missing-driver message is not tested\n");
		return;
	}
	pn_cudrv_set(NULL);
	fake_world_init(&w, 1);
	ret = pn_cuda_init(&images, &w.host[0], 0, &b);
	CHECK_EQ_INT(ret, -ENODEV);
	CHECK(strstr(pn_plugin_errmsg(), "cannot load the CUDA driver 'libcuda.so.1'") != NULL);
	CHECK(strchr(pn_plugin_errmsg(), '\n') == NULL);
	fake_world_free(&w);
	pn_cudrv_set(&fake_cu);
}

/* Allreduce kernels go out as programmatic dependents (cuLaunchKernelEx);
 * PENNY_CUDA_PDL=0 launches them plainly; other values are refused. */
TEST(allreduce_kernels_launch_as_programmatic_dependents)
{
	struct fake_world w;

	for (int off = 0; off < 2; off++) {
		if (off)
			setenv("PENNY_CUDA_PDL", "0", 1);
		fake_world_init(&w, 2);
		fake_run(&w, do_init);
		CHECK(all_ok(2));
		CHECK(be[0] && strstr(pn_cuda_describe(be[0]), off ? "PDL off" : "PDL on") != NULL);
		call_on(&w, (struct call){ PENNY_ALGO_TWOSHOT, PENNY_FLOAT, 1u << 16, 1, 0, 0 });
		CHECK(all_ok(2));
		for (int r = 0; r < 2 && all_ok(2); r++) {
			CHECK_EQ_INT(w.rank[r].nlaunch, 1);
			CHECK(!strncmp(w.rank[r].launch[0].name, "pn_ar_twoshot", 13));
			CHECK_EQ_INT(w.rank[r].launch[0].pdl, !off);
		}
		fake_run(&w, do_free_call);
		fake_run(&w, do_fini);
		fake_world_free(&w);
	}
	setenv("PENNY_CUDA_PDL", "2", 1);
	fake_world_init(&w, 2);
	fake_run(&w, do_init);
	CHECK(rets[0] < 0 && strstr(msgs[0], "PENNY_CUDA_PDL: 0 or 1") != NULL);
	fake_run(&w, do_fini);
	fake_world_free(&w);
	unsetenv("PENNY_CUDA_PDL");
}

/* allreduce_stream (the NCCL interposer's call): every copy and launch of
 * the call goes on the caller's stream; the backend's own stream is back
 * for the next plain allreduce. */
static void do_call_on_stream(struct fake_world *w, int r)
{
	w->rank[r].nlaunch = w->rank[r].ncopy = 0;
	rets[r] = pn_cuda_alloc(be[r], 4u << 20, 0, &bufs[r][0]);
	if (rets[r])
		return;
	/* unregistered: the two-shot goes through the staging buffer */
	rets[r] = pn_cuda_allreduce_stream(be[r], bufs[r][0], bufs[r][0], 1u << 20, PENNY_FLOAT,
					   PENNY_SUM, PENNY_ALGO_TWOSHOT, (void *)(uintptr_t)0x7777);
	if (!rets[r])
		rets[r] = pn_cuda_allreduce(be[r], bufs[r][0], bufs[r][0], 1u << 20, PENNY_FLOAT,
					    PENNY_SUM, PENNY_ALGO_TWOSHOT);
	snprintf(msgs[r], sizeof(msgs[r]), "%s", pn_plugin_errmsg());
}

static void do_free0(struct fake_world *w, int r)
{
	(void)w;
	pn_cuda_free(be[r], bufs[r][0]);
}

TEST(allreduce_stream_enqueues_on_the_callers_stream)
{
	struct fake_world w;

	fake_world_init(&w, 2);
	fake_run(&w, do_init);
	CHECK(all_ok(2));
	fake_run(&w, do_call_on_stream);
	CHECK(all_ok(2));
	for (int r = 0; r < 2 && all_ok(2); r++) {
		struct fake_rank *f = &w.rank[r];

		CHECK_EQ_INT(f->nlaunch, 2);
		CHECK_EQ_INT(f->ncopy, 4);
		CHECK(f->launch[0].stream == (CUstream)(uintptr_t)0x7777);
		CHECK(f->copy[0].stream == (CUstream)(uintptr_t)0x7777);
		CHECK(f->copy[1].stream == (CUstream)(uintptr_t)0x7777);
		CHECK(f->launch[1].stream == (CUstream)(uintptr_t)0x2000);
		CHECK(f->copy[2].stream == (CUstream)(uintptr_t)0x2000);
	}
	fake_run(&w, do_free0);
	fake_run(&w, do_fini);
	fake_world_free(&w);
}

/* ---- the other collectives: one launch each, on the caller's stream ---- */

static void do_colls(struct fake_world *w, int r)
{
	struct fake_rank *f = &w->rank[r];
	struct pn_cuda *c = be[r];
	CUstream own = c->g.stream, theirs = (CUstream)(uintptr_t)0x5eed;
	char *a = NULL, *b = NULL;
	int ok = 1, ret;

	rets[r] = -1;
	if (pn_cuda_alloc(c, 1u << 20, 0, (void **)&a) || pn_cuda_alloc(c, 1u << 20, 0, (void **)&b))
		return;
	f->nlaunch = f->ncopy = 0;
	/* an odd count at an unaligned offset: launched as it is, no staging */
	ret = pn_cuda_reduce_scatter(c, a + 2, b + 6, 1001, PENNY_BFLOAT16, PENNY_AVG, theirs);
	ret = ret ? ret : pn_cuda_broadcast(c, a, b, 77, PENNY_DOUBLE, 2, NULL);
	ret = ret ? ret : pn_cuda_reduce(c, a, a, 5, PENNY_INT8, PENNY_MAX, 1, theirs);
	ret = ret ? ret : pn_cuda_alltoall(c, a, b, 300000, PENNY_FLOAT, NULL);
	ret = ret ? ret : pn_cuda_sendrecv(c, a, b, 9, PENNY_HALF, NULL);
	/* the interposer's all-gather: in place, on the caller's stream */
	ret = ret ? ret : pn_cuda_allgather_stream(c, b + 24 * r, b, 3, PENNY_DOUBLE, theirs);
	/* nothing to do, or refused in one line */
	ret = ret ? ret : pn_cuda_sendrecv(c, a, b, 0, PENNY_HALF, NULL);
	if (ret || f->nlaunch != 6 || f->ncopy) {
		snprintf(msgs[r], sizeof(msgs[r]), "ret %d, %d launches, %d copies: %s", ret, f->nlaunch,
			 f->ncopy, pn_plugin_errmsg());
		return;
	}
	ok = pn_cuda_broadcast(c, a, b, 10, PENNY_FLOAT, 3, NULL) == -EINVAL &&
	     strstr(pn_plugin_errmsg(), "root 3 is not a rank of 3") &&
	     pn_cuda_reduce(c, a, b, 10, PENNY_FLOAT, 9, 0, NULL) == -EINVAL &&
	     pn_cuda_alltoall(c, NULL, b, 10, PENNY_FLOAT, NULL) == -EINVAL && f->nlaunch == 6 &&
	     c->g.stream == own;
	ok = ok && !strcmp(f->launch[0].name, "pn_co_reduce_scatter_bfloat16_avg") &&
	     f->launch[0].stream == theirs && f->launch[0].ar.send == (uint64_t)(uintptr_t)(a + 2) &&
	     f->launch[0].ar.recv == (uint64_t)(uintptr_t)(b + 6) && f->launch[0].ar.count == 1001;
	ok = ok && !strcmp(f->launch[1].name, "pn_co_broadcast") && f->launch[1].stream == own &&
	     f->launch[1].ar.root == 2 && f->launch[1].ar.esize == 8 && f->launch[1].ar.count == 77;
	ok = ok && !strcmp(f->launch[2].name, "pn_co_reduce_int8_max") && f->launch[2].ar.root == 1 &&
	     f->launch[2].stream == theirs;
	ok = ok && !strcmp(f->launch[3].name, "pn_co_alltoall") && f->launch[3].ar.esize == 4;
	ok = ok && !strcmp(f->launch[4].name, "pn_co_sendrecv") && f->launch[4].ar.esize == 2;
	ok = ok && !strcmp(f->launch[5].name, "pn_co_allgather") && f->launch[5].stream == theirs &&
	     f->launch[5].ar.send == (uint64_t)(uintptr_t)(b + 24 * r) &&
	     f->launch[5].ar.recv == (uint64_t)(uintptr_t)b && f->launch[5].ar.count == 3 &&
	     f->launch[5].ar.esize == 8;
	for (int i = 0; i < 6 && ok; i++) {
		const struct pn_ar_args *x = &f->launch[i].ar;

		ok = x->rank == r && x->nranks == 3 && x->timeout_ns == c->cfg.timeout_ns &&
		     x->tile >= 16 && x->tile % 16 == 0 && x->tile <= c->cfg.slot_bytes &&
		     x->slot_bytes == c->cfg.slot_bytes && f->launch[i].grid >= 1 &&
		     f->launch[i].grid <= c->cfg.blocks && f->launch[i].block <= 512;
		for (int p = 0; p < 3 && ok; p++)
			ok = x->peer_ws[p] == ((struct pn_cuda *)be[p])->ws->base;
	}
	/* 300000 floats: more tiles than blocks, every block busy */
	ok = ok && f->launch[3].grid == c->cfg.blocks;
	if (!ok)
		snprintf(msgs[r], sizeof(msgs[r]), "wrong launches");
	pn_cuda_free(c, a);
	pn_cuda_free(c, b);
	rets[r] = ok ? 0 : -1;
}

/* PENNY_CUDA_CO_LL_MAX=4K: the small calls take LL lines (one-shot
 * geometry, the LL slot of the workspace), whatever each rank's buffer
 * alignment (every rank must choose alike), the rest the flag tiles. */
static void do_colls_ll(struct fake_world *w, int r)
{
	struct fake_rank *f = &w->rank[r];
	struct pn_cuda *c = be[r];
	char *a = NULL, *b = NULL;
	int ok;

	rets[r] = -1;
	if (pn_cuda_alloc(c, 1u << 20, 0, (void **)&a) || pn_cuda_alloc(c, 1u << 20, 0, (void **)&b))
		return;
	f->nlaunch = 0;
	/* 4 KiB a peer: LL; 4 KiB + 2: flags; rank-dependent misalignment */
	ok = !pn_cuda_reduce_scatter(c, a + 2 * r, b + 6 * r, 2048, PENNY_BFLOAT16, PENNY_SUM, NULL) &&
	     !pn_cuda_reduce_scatter(c, a, b, 2049, PENNY_BFLOAT16, PENNY_SUM, NULL) &&
	     !pn_cuda_allgather(c, a + r, b, 4096, PENNY_INT8) &&
	     !pn_cuda_broadcast(c, a, b, 1, PENNY_DOUBLE, 0, NULL) && f->nlaunch == 4;
	ok = ok && f->launch[0].ar.ll == 1 && f->launch[1].ar.ll == 0 && f->launch[2].ar.ll == 1 &&
	     f->launch[3].ar.ll == 1 && c->cfg.co_ll_max == 4096;
	for (int i = 0; i < 4 && ok; i++)
		ok = f->launch[i].ar.ll_slot_bytes == 2 * c->cfg.ll_max;
	/* LL: the one-shot's geometry for 4 KiB; flags: the tiles */
	{
		struct pn_launch l;

		pn_cuda_geometry(&c->cfg, PN_K_ONESHOT, 4096, &l);
		ok = ok && f->launch[0].grid == l.grid && f->launch[0].block == l.threads &&
		     f->launch[1].ar.tile >= 512 && f->launch[1].ar.tile % 16 == 0;
	}
	if (!ok)
		snprintf(msgs[r], sizeof(msgs[r]), "wrong LL choices: %u %u %u %u", f->launch[0].ar.ll,
			 f->launch[1].ar.ll, f->launch[2].ar.ll, f->launch[3].ar.ll);
	pn_cuda_free(c, a);
	pn_cuda_free(c, b);
	rets[r] = ok ? 0 : -1;
}

/* A kernel that times out records the collective its launch named: the
 * error says which one ran, not "allreduce" for all of them. */
static void do_coll_timeouts(struct fake_world *w, int r)
{
	static const char *const names[] = { "reduce_scatter", "broadcast", "reduce", "alltoall",
					     "sendrecv", "allgather", "allreduce" };
	struct fake_rank *f = &w->rank[r];
	struct pn_cuda *c = be[r];
	uint32_t *err = (uint32_t *)(uintptr_t)(c->ws->base + PN_WS_COUNTERS) + PN_CNT_ERR;
	char *a = NULL, *b = NULL, want[96];
	int i, ok, peer = (r + 1) % 3;

	rets[r] = -1;
	if (pn_cuda_alloc(c, 1u << 16, 0, (void **)&a) || pn_cuda_alloc(c, 1u << 16, 0, (void **)&b))
		return;
	f->nlaunch = 0;
	ok = !pn_cuda_reduce_scatter(c, a, b, 64, PENNY_FLOAT, PENNY_SUM, NULL) &&
	     !pn_cuda_broadcast(c, a, b, 64, PENNY_FLOAT, 1, NULL) &&
	     !pn_cuda_reduce(c, a, b, 64, PENNY_FLOAT, PENNY_MAX, 2, NULL) &&
	     !pn_cuda_alltoall(c, a, b, 64, PENNY_FLOAT, NULL) &&
	     !pn_cuda_sendrecv(c, a, b, 64, PENNY_FLOAT, NULL) &&
	     !pn_cuda_allgather(c, a, b, 64, PENNY_FLOAT) &&
	     !pn_cuda_allreduce(c, a, b, 64, PENNY_FLOAT, PENNY_SUM, PENNY_ALGO_ONESHOT) &&
	     f->nlaunch == 7;
	for (i = 0; i < 7 && ok; i++) {
		/* what the kernel's timed wait records (ar_sync.cuh, pn_fail) */
		err[0] = PN_ERR_TIMEOUT;
		err[1] = PN_ERR_DETAIL(peer, f->launch[i].ar.coll);
		snprintf(want, sizeof(want), "%s on rank %d timed out waiting for rank %d", names[i], r,
			 peer);
		ok = pn_cuda_kernel_errors(c) == -ETIMEDOUT && !strcmp(pn_plugin_errmsg(), want);
		if (!ok)
			snprintf(msgs[r], sizeof(msgs[r]), "launch %d (%s): '%s'", i, f->launch[i].name,
				 pn_plugin_errmsg());
	}
	pn_cuda_free(c, a);
	pn_cuda_free(c, b);
	rets[r] = ok ? 0 : -1;
}

/* One rank: a copy where send and recv differ, nothing in place. */
static void do_colls_alone(struct fake_world *w, int r)
{
	struct fake_rank *f = &w->rank[r];
	char *a = NULL, *b = NULL;
	int ok;

	rets[r] = -1;
	if (pn_cuda_alloc(be[r], 4096, 0, (void **)&a) || pn_cuda_alloc(be[r], 4096, 0, (void **)&b))
		return;
	f->nlaunch = f->ncopy = 0;
	ok = !pn_cuda_reduce_scatter(be[r], a, b, 100, PENNY_FLOAT, PENNY_AVG, NULL) &&
	     !pn_cuda_alltoall(be[r], a, a, 100, PENNY_FLOAT, NULL) &&
	     !pn_cuda_reduce(be[r], a, b, 3, PENNY_INT64, PENNY_SUM, 0, NULL) && f->nlaunch == 0 &&
	     f->ncopy == 2 && f->copy[0].bytes == 400 && f->copy[1].bytes == 24;
	pn_cuda_free(be[r], a);
	pn_cuda_free(be[r], b);
	rets[r] = ok ? 0 : -1;
}

/* Broadcast and reduce at the flag kernels' sizes on 3+ ranks take two
 * steps from PENNY_CUDA_CO_TWOSTEP on; LL calls, the other collectives
 * and 2 ranks never do; every rank chooses alike. */
static void do_colls_two(struct fake_world *w, int r)
{
	struct fake_rank *f = &w->rank[r];
	struct pn_cuda *c = be[r];
	char *a = NULL, *b = NULL;
	int ok, n = c->n;
	uint64_t min = c->cfg.co_two_min;

	rets[r] = -1;
	if (pn_cuda_alloc(c, 1u << 20, 0, (void **)&a) || pn_cuda_alloc(c, 1u << 20, 0, (void **)&b))
		return;
	f->nlaunch = 0;
	ok = !pn_cuda_broadcast(c, a, b, 300000, PENNY_INT8, 1, NULL) &&
	     !pn_cuda_reduce(c, a, b, 100001, PENNY_FLOAT, PENNY_AVG, n - 1, NULL) &&
	     !pn_cuda_broadcast(c, a, b, 1, PENNY_DOUBLE, 0, NULL) &&
	     !pn_cuda_allgather(c, a, b, 300000 / n, PENNY_INT8) &&
	     !pn_cuda_reduce_scatter(c, a, b, 100001 / n, PENNY_FLOAT, PENNY_SUM, NULL) &&
	     f->nlaunch == 5;
	ok = ok && f->launch[0].ar.ll == 0 && f->launch[1].ar.ll == 0 && f->launch[2].ar.ll == 1;
	ok = ok && f->launch[0].ar.two == (n >= 3 && min <= 300000) &&
	     f->launch[1].ar.two == (n >= 3 && min <= 400004) && f->launch[2].ar.two == 0 &&
	     f->launch[3].ar.two == 0 && f->launch[4].ar.two == 0;
	if (!ok)
		snprintf(msgs[r], sizeof(msgs[r]), "wrong two-step choices: %u %u %u %u %u (min %llu)",
			 f->launch[0].ar.two, f->launch[1].ar.two, f->launch[2].ar.two,
			 f->launch[3].ar.two, f->launch[4].ar.two, (unsigned long long)min);
	pn_cuda_free(c, a);
	pn_cuda_free(c, b);
	rets[r] = ok ? 0 : -1;
}

static const struct pn_cuda_images images_nocoll = {
	.data = img,
	.kern = { img, img, img, img, img, img, img },
};

static void do_init_nocoll(struct fake_world *w, int r)
{
	be[r] = NULL;
	rets[r] = pn_cuda_init(&images_nocoll, &w->host[r], r, &be[r]);
	if (!rets[r]) {
		rets[r] = pn_cuda_sendrecv(be[r], (void *)16, (void *)32, 4, PENNY_FLOAT, NULL) == -ENOEXEC &&
				  strstr(pn_plugin_errmsg(), "built without its sendrecv kernels")
			  ? 0
			  : -1;
	}
}

TEST(a_kernel_timeout_names_the_collective_that_ran)
{
	struct fake_world w;

	fake_world_init(&w, 3);
	fake_run(&w, do_init);
	CHECK(all_ok(3));
	if (all_ok(3)) {
		fake_run(&w, do_coll_timeouts);
		CHECK(all_ok(3));
	}
	fake_run(&w, do_fini);
	fake_world_free(&w);
}

TEST(other_collectives_launch_one_kernel_each_on_the_callers_stream)
{
	struct fake_world w;

	fake_world_init(&w, 3);
	/* the default: LL lines up to 256 KiB a peer */
	fake_run(&w, do_init);
	CHECK(all_ok(3));
	CHECK(be[0] && ((struct pn_cuda *)be[0])->cfg.co_ll_max == 256u << 10);
	fake_run(&w, do_fini);
	/* the flag kernels, LL off */
	setenv("PENNY_CUDA_CO_LL_MAX", "0", 1);
	fake_run(&w, do_init);
	unsetenv("PENNY_CUDA_CO_LL_MAX");
	CHECK(all_ok(3));
	fake_run(&w, do_colls);
	CHECK(all_ok(3));
	/* every rank cuts the same tiles over the same grid */
	for (int r = 1; r < 3; r++)
		for (int i = 0; i < 5; i++) {
			CHECK_EQ_INT(w.rank[r].launch[i].grid, w.rank[0].launch[i].grid);
			CHECK_EQ_INT(w.rank[r].launch[i].ar.tile, w.rank[0].launch[i].ar.tile);
		}
	fake_run(&w, do_fini);
	/* LL off (PENNY_CUDA_CO_LL_MAX=0): none took them */
	for (int i = 0; i < 6; i++)
		CHECK_EQ_INT(w.rank[0].launch[i].ar.ll, 0);
	setenv("PENNY_CUDA_CO_LL_MAX", "4K", 1);
	fake_run(&w, do_init);
	unsetenv("PENNY_CUDA_CO_LL_MAX");
	CHECK(all_ok(3));
	fake_run(&w, do_colls_ll);
	CHECK(all_ok(3));
	for (int r = 1; r < 3; r++)
		for (int i = 0; i < 4; i++) {
			CHECK_EQ_INT(w.rank[r].launch[i].ar.ll, w.rank[0].launch[i].ar.ll);
			CHECK_EQ_INT(w.rank[r].launch[i].grid, w.rank[0].launch[i].grid);
		}
	fake_run(&w, do_fini);
	fake_world_free(&w);
	fake_world_init(&w, 1);
	fake_run(&w, do_init);
	CHECK(all_ok(1));
	fake_run(&w, do_colls_alone);
	CHECK(all_ok(1));
	fake_run(&w, do_fini);
	fake_world_free(&w);
	fake_world_init(&w, 2);
	fake_run(&w, do_init_nocoll);
	CHECK(all_ok(2));
	fake_run(&w, do_fini);
	fake_world_free(&w);
}


TEST(broadcast_and_reduce_take_two_steps_on_3_or_more_ranks)
{
	static const char *const envs[] = { NULL, "off", "350K", "0" };
	struct fake_world w;

	for (int n = 2; n <= 4; n++) {
		fake_world_init(&w, n);
		for (size_t i = 0; i < sizeof(envs) / sizeof(envs[0]); i++) {
			if (envs[i])
				setenv("PENNY_CUDA_CO_TWOSTEP", envs[i], 1);
			fake_run(&w, do_init);
			unsetenv("PENNY_CUDA_CO_TWOSTEP");
			CHECK(all_ok(n));
			if (!all_ok(n))
				continue;
			/* the default: 1 MiB on 3 ranks, 512 KiB on 4 */
			CHECK(((struct pn_cuda *)be[0])->cfg.co_two_min ==
			      (i == 1 ? UINT64_MAX : i == 2 ? 350u << 10 : i == 3 ? 0 :
			       n == 3 ? 1u << 20 : n == 4 ? 512u << 10 : 0));
			CHECK(strstr(((struct pn_cuda *)be[0])->desc,
				     n < 3 || i == 1 ? "in two steps off" :
				     i == 2 ? "in two steps from 358400 B" :
				     i == 3 ? "in two steps from 0 B" :
				     n == 3 ? "in two steps from 1048576 B" : "in two steps from 524288 B"));
			fake_run(&w, do_colls_two);
			CHECK(all_ok(n));
			fake_run(&w, do_fini);
		}
		fake_world_free(&w);
	}
	/* not a size: refused in one line */
	fake_world_init(&w, 3);
	setenv("PENNY_CUDA_CO_TWOSTEP", "sometimes", 1);
	fake_run(&w, do_init);
	unsetenv("PENNY_CUDA_CO_TWOSTEP");
	CHECK(rets[0] == -EINVAL && strstr(msgs[0], "PENNY_CUDA_CO_TWOSTEP"));
	fake_world_free(&w);
}

TEST(copy_engine_geometry)
{
	static const uint64_t sizes[] = { 16, 48, 4096, 1u << 20, 3000016, 1ull << 30, 5ull << 30 };
	struct pn_ce_geom g;

	/* 512 MiB of slots on 2 ranks: a 1 GiB call in 2 pieces (s58 measured) */
	CHECK(pn_ce_slot_bytes(512u << 20, 2) == 256u << 20);
	CHECK_EQ_INT(pn_ce_geometry(1ull << 30, 2, pn_ce_slot_bytes(512u << 20, 2), &g), 0);
	CHECK(g.pieces == 2 && g.slice == 256u << 20 && g.piece == 512u << 20);
	CHECK(pn_ce_slot_bytes(1000, 1) == 0);
	CHECK(pn_ce_geometry(100, 2, 1u << 20, &g) < 0); /* not whole 16-byte lines */
	for (int n = 2; n <= 8; n++)
		for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
			for (uint64_t slot = 256; slot <= (64u << 20); slot *= 16) {
				uint64_t b = sizes[i];

				CHECK_EQ_INT(pn_ce_geometry(b, n, slot, &g), 0);
				/* even (parities alternate across calls), the slices fit
				 * their slots, every byte covered, no spare pair of pieces */
				CHECK(g.pieces >= 2 && g.pieces % 2 == 0);
				CHECK(g.slice <= slot && g.slice % 16 == 0 && g.piece == g.slice * (uint64_t)n);
				CHECK(g.piece * g.pieces >= b);
				CHECK(g.pieces == 2 || g.piece * (g.pieces - 2) < b);
				CHECK(pn_ce_len(&g, b, g.piece * g.pieces) == 0);
				CHECK(pn_ce_len(&g, b, 0) == (b < g.slice ? b : g.slice));
			}
}

static void do_capture_on(struct fake_world *w, int r)
{
	w->rank[r].capturing = 1;
	w->rank[r].ncaptured = 0;
}

static void do_capture_off(struct fake_world *w, int r)
{
	w->rank[r].capturing = 0;
}

TEST(copy_engine_allreduce_pushes_into_slots_and_peers_recv)
{
	struct fake_world w;
	/* 3 MiB of float + 3 elements: slots of 1 MiB / 2 / 256 B-rounded on 2 ranks */
	const size_t count = (3u << 20) / 4 + 3;
	struct pn_ce_geom g;

	setenv("PENNY_CUDA_TUNE", "oneshot:4K,ce", 1);
	fake_world_init(&w, 2);
	fake_run(&w, do_init);
	CHECK(all_ok(2));
	CHECK_EQ_INT(pn_ce_geometry((uint64_t)count * 4 / 16 * 16, 2, pn_ce_slot_bytes(1u << 20, 2), &g), 0);
	/* the slots come with the first call the table gives ce, not before
	 * (a communicator that never makes one pays nothing) */
	for (int r = 0; r < 2 && all_ok(2); r++)
		CHECK(((struct pn_cuda *)be[r])->ce_area == NULL);
	/* nor inside a capture: that call runs the ring */
	fake_run(&w, do_capture_on);
	call_on(&w, (struct call){ PENNY_ALGO_AUTO, PENNY_FLOAT, count, 1, 0, 0 });
	fake_run(&w, do_capture_off);
	for (int r = 0; r < 2 && all_ok(2); r++)
		CHECK(((struct pn_cuda *)be[r])->ce_area == NULL && w.rank[r].ncaptured > 0);
	fake_run(&w, do_free_call);
	call_on(&w, (struct call){ PENNY_ALGO_AUTO, PENNY_FLOAT, count, 1, 0, 0 });
	CHECK(all_ok(2));
	for (int r = 0; r < 2 && all_ok(2); r++) {
		struct fake_rank *f = &w.rank[r];
		const struct pn_reg *rg = pn_cuda_find_reg(be[r], bufs[r][1], 16);
		const struct pn_cuda *c = be[r];
		int reduces = 0, gates = 0, pushes = 0, ags = 0, rsfs = 0, descs = 0, agfs = 0, q = 1 - r;
		CUstream main = f->launch[0].stream;

		CHECK(rg != NULL);
		if (!rg)
			continue;
		for (int i = 0; i < f->nlaunch; i++) {
			struct fake_launch *l = &f->launch[i];

			if (!strcmp(l->name, "pn_ar_ce_float_sum")) {
				/* on the caller's stream, fewer blocks than SMs */
				CHECK(l->stream == main && l->grid < c->cfg.blocks);
				CHECK(l->ar.recv == (uint64_t)(uintptr_t)bufs[r][1] + (uint64_t)reduces * g.piece +
							    (uint64_t)r * g.slice);
				CHECK(l->ar.ce_src[r] == l->ar.send);
				CHECK(l->ar.ce_src[q] >= c->ce_area->base + PN_CE_HDR &&
				      l->ar.ce_src[q] < c->ce_area->base + c->ce_area->bytes);
				reduces++;
			} else if (!strcmp(l->name, "pn_ce_gate")) {
				gates++;
				/* a free-slot gate on a stream of its own: no copy there */
				for (int j = 0; j < f->ncopy && l->ar.ce_steps == PN_CE_FREE; j++)
					CHECK(f->copy[j].stream != l->stream);
			}
		}
		CHECK(reduces == (int)g.pieces);
		/* a gate waits for a free slot from the third piece on, and the
		 * final one for every peer's results */
		CHECK_EQ_INT(gates, (int)g.pieces - 1);
		CHECK_STR(f->launch[f->nlaunch - 1].name, "pn_ar_oneshot_float_sum"); /* the tail */
		CHECK_STR(f->launch[f->nlaunch - 2].name, "pn_ce_gate"); /* every peer's results in */
		CHECK(f->launch[f->nlaunch - 2].stream == main);
		for (int i = 0; i < f->ncopy; i++) {
			struct fake_copy *k = &f->copy[i], *prev = i ? k - 1 : NULL;
			uint64_t at = k->dst - c->ce_area->peer[q];

			CHECK(k->stream != main);
			if (k->dst >= c->ce_area->peer[q] && at < PN_CE_HDR) {
				/* a flag from this rank's word ONE (or its recv's
				 * identity), behind the copy it tells of on its stream */
				CHECK(prev && prev->stream == k->stream);
				if (at == 4 * (PN_CE_DESC + 2 * (uint64_t)r)) {
					CHECK(k->bytes == 8 && k->src == c->ce_area->base + 4 * PN_CE_MYDESC);
					descs++;
					continue;
				}
				CHECK(k->bytes == 4 && k->src == c->ce_area->base + 4 * PN_CE_ONE);
				if (at == 4 * (PN_CE_AGF + (uint64_t)r)) {
					CHECK(prev && prev->bytes == 8); /* the identity first */
					agfs++;
				} else {
					CHECK(at == 4 * (PN_CE_RSF + (uint64_t)PN_AR_MAX_RANKS * (rsfs & 1) + r));
					rsfs++;
				}
			} else if (k->dst >= c->ce_area->peer[q] &&
				   k->dst < c->ce_area->peer[q] + c->ce_area->bytes) {
				pushes++;
				CHECK(k->bytes == g.slice || k->bytes == pn_ce_len(&g, count * 4 / 16 * 16,
										  k->src - (uint64_t)(uintptr_t)bufs[r][0]));
			} else {
				/* the all-gather: my slice into the peer's recv, same offset */
				CHECK(k->dst - rg->peer[q] == k->src - (uint64_t)(uintptr_t)bufs[r][1]);
				ags++;
			}
		}
		/* a flag after each push, the identity and the results' flag at the end */
		CHECK_EQ_INT(rsfs, (int)g.pieces);
		CHECK_EQ_INT(descs, 1);
		CHECK_EQ_INT(agfs, 1);
		CHECK_EQ_INT(pushes, (int)g.pieces);
		CHECK_EQ_INT(ags, (int)g.pieces);
	}
	fake_run(&w, do_free_call);
	/* an unregistered recv: the ring (through the staging buffer) */
	call_on(&w, (struct call){ PENNY_ALGO_AUTO, PENNY_FLOAT, count, 0, 0, 0 });
	CHECK(all_ok(2));
	CHECK_STR(w.rank[0].launch[0].name, "pn_ar_ring_float_sum");
	fake_run(&w, do_free_call);
	fake_run(&w, do_fini);
	fake_world_free(&w);
	/* no slots (0): the table's ce rows run the ring; out of range: refused */
	setenv("PENNY_CUDA_CE_BYTES", "0", 1);
	fake_world_init(&w, 2);
	fake_run(&w, do_init);
	CHECK(all_ok(2));
	call_on(&w, (struct call){ PENNY_ALGO_AUTO, PENNY_FLOAT, 1u << 20, 1, 0, 0 });
	CHECK(all_ok(2));
	CHECK_STR(w.rank[0].launch[0].name, "pn_ar_ring_float_sum");
	fake_run(&w, do_free_call);
	fake_run(&w, do_fini);
	fake_world_free(&w);
	setenv("PENNY_CUDA_CE_BYTES", "17G", 1);
	fake_world_init(&w, 2);
	fake_run(&w, do_init);
	CHECK_EQ_INT(rets[0], -EINVAL);
	CHECK(strstr(msgs[0], "PENNY_CUDA_CE_BYTES") != NULL);
	fake_world_free(&w);
	unsetenv("PENNY_CUDA_TUNE");
	setenv("PENNY_CUDA_CE_BYTES", "1M", 1);
}

int main(void)
{
	/* the fake driver's memory is the host's, every byte of it written:
	 * small copy-engine slots */
	setenv("PENNY_CUDA_CE_BYTES", "1M", 1);
	pn_cudrv_set(&fake_cu);
	RUN(init_maps_every_peers_workspace);
	RUN(ranks_in_one_process_take_each_others_pointers);
	RUN(registered_buffers_map_the_same_buffer_of_every_rank);
	RUN(registered_allocations_fail_together);
	RUN(size_table);
	RUN(staging_decisions);
	RUN(launch_geometry);
	RUN(algorithm_for_a_call);
	RUN(registered_two_shot_runs_in_place_on_the_users_buffers);
	RUN(unregistered_and_misaligned_buffers_go_through_staging);
	RUN(large_unregistered_calls_are_chunked_by_the_staging_buffer);
	RUN(auto_follows_the_table_and_odd_tails_go_by_ll);
	RUN(time_captures_a_graph_of_n_calls);
	RUN(errors_the_kernels_record_come_out_at_sync);
	RUN(async_errors_are_read_without_waiting_or_breaking_another_threads_capture);
	RUN(bad_arguments);
	RUN(allgather_is_one_kernel_without_host_barriers);
	RUN(a_kernel_timeout_names_the_collective_that_ran);
	RUN(a_rank_that_cannot_open_its_gpu_fails_every_rank_naming_it);
	RUN(without_a_driver_init_says_so_in_one_line);
	RUN(allreduce_kernels_launch_as_programmatic_dependents);
	RUN(allreduce_stream_enqueues_on_the_callers_stream);
	RUN(other_collectives_launch_one_kernel_each_on_the_callers_stream);
	RUN(broadcast_and_reduce_take_two_steps_on_3_or_more_ranks);
	RUN(copy_engine_geometry);
	RUN(copy_engine_allreduce_pushes_into_slots_and_peers_recv);
	fake_funcs_free();
	return unit_done();
}
