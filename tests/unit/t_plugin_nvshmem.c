/* SPDX-License-Identifier: MIT */
/*
 * The nvshmem plugin's host side without a GPU or NVSHMEM: the CUDA driver
 * is the fake table of t_plugin_fakecu.h and NVSHMEM's host API (nv_boot.h)
 * is faked below.  Tested: the size table and explicit algorithms, settings
 * and their ranges, the bootstrap (rank 0's unique id reaches every rank;
 * a rank that cannot open its GPU fails every rank before NVSHMEM's
 * collective init), NVSHMEM_DISABLE_NVLS, symmetric and staged buffers,
 * chunking by the slot, the grid being the same on every rank, and the
 * cuda plugin's kernels run on the symmetric heap within an NVLink domain.
 * cost: 12
 */
#define _GNU_SOURCE
#include "unit.h"

#include "../../plugins/common/cudrv.c"
#include "../../plugins/common/gpu.c"
#include "../../plugins/nvshmem/nv_plan.c"
#include "../../plugins/nvshmem/nv_plugin.c"
#include "../../plugins/cuda/cuda_ce.c"
#include "../../plugins/cuda/cuda_plan.c"

#include "t_plugin_fakecu.h"

#include <errno.h>

/* ---- fake NVSHMEM host API ---- */
#define UID_LEN 72
static unsigned char uid_seen[FAKE_MAX_RANKS][UID_LEN];
static int nvb_inits, nvb_fins, nvb_mallocs, nvb_frees;
static _Thread_local int my_rank_for_nvb;

size_t pn_nvb_uid_size(void)
{
	return UID_LEN;
}
int pn_nvb_get_uid(void *uid, size_t len)
{
	memset(uid, 0xa5, len);
	((unsigned char *)uid)[3] = 0x5a;
	return 0;
}
int pn_nvb_init(int rank, int nranks, const void *uid, size_t len)
{
	(void)nranks;
	memcpy(uid_seen[rank], uid, len);
	my_rank_for_nvb = rank;
	__atomic_add_fetch(&nvb_inits, 1, __ATOMIC_SEQ_CST);
	return 0;
}
void pn_nvb_fini(void)
{
	__atomic_add_fetch(&nvb_fins, 1, __ATOMIC_SEQ_CST);
}
int pn_nvb_pe(int *me_, int *n)
{
	*me_ = my_rank_for_nvb;
	*n = 0;
	return 0;
}
void *pn_nvb_malloc(size_t bytes)
{
	__atomic_add_fetch(&nvb_mallocs, 1, __ATOMIC_SEQ_CST);
	return fake_mem_alloc(bytes);
}
void pn_nvb_free(void *p)
{
	__atomic_add_fetch(&nvb_frees, 1, __ATOMIC_SEQ_CST);
	free(p);
}
/* Every PE shares NVLink unless one of these says otherwise: PEs from
 * fake_nic_from on sit behind a NIC; fake_blind_rank reaches no peer by load/store. */
static int fake_nic_from = FAKE_MAX_RANKS, fake_blind_rank = -1;
void *pn_nvb_ptr(const void *p, int pe)
{
	int me_ = my_rank_for_nvb;

	if (pe == me_)
		return (void *)p;
	if (me_ == fake_blind_rank || (me_ < fake_nic_from) != (pe < fake_nic_from))
		return NULL;
	return (void *)p;
}
int pn_nvb_module_init(void *module)
{
	return module ? 0 : -1;
}
int pn_nvb_module_fini(void *module)
{
	(void)module;
	return 0;
}
const char *pn_nvb_version(void)
{
	return "NVSHMEM fake";
}

/* ---- launches with their pn_nv_args ---- */
static _Thread_local struct pn_nv_args nv_args[FAKE_MAX_LAUNCH];

static CUresult nv_launch(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
			  unsigned by, unsigned bz, unsigned sh, CUstream s, void **params,
			  void **extra)
{
	int i = me()->nlaunch;

	if (!strncmp(((struct fake_func *)f)->name, "pn_nv_", 6) && i < FAKE_MAX_LAUNCH)
		memcpy(&nv_args[i], params[0], sizeof(nv_args[i]));
	return f_launch(f, gx, gy, gz, bx, by, bz, sh, s, params, extra);
}

static struct pn_cudrv nv_cu;
static const char img[] = "cubin";
/* the cuda plugin's images: every one, or the copy engines' alone (the
 * nvshmem kernels' table, as the tests before the cuda kernels expect) */
static const void *const all_cu[PN_NKERNS] = { img, img, img, img, img, img, img };
static const void *const ce_only[PN_NKERNS] = { [PN_K_CE] = img };
static const void *const *use_cu = ce_only;
static void *be[FAKE_MAX_RANKS];
static int rets[FAKE_MAX_RANKS];
static char msgs[FAKE_MAX_RANKS][512];

static void do_init(struct fake_world *w, int r)
{
	rets[r] = pn_nv_init(img, img, use_cu, &w->host[r], r, &be[r]);
	snprintf(msgs[r], sizeof(msgs[r]), "%s", rets[r] ? pn_plugin_errmsg() : "");
}

static void do_init_rank1_bad_device(struct fake_world *w, int r)
{
	rets[r] = pn_nv_init(img, img, use_cu, &w->host[r], r == 1 ? 9 : r, &be[r]);
	snprintf(msgs[r], sizeof(msgs[r]), "%s", rets[r] ? pn_plugin_errmsg() : "");
}

static void do_fini(struct fake_world *w, int r)
{
	(void)w;
	pn_nv_fini(be[r]);
	be[r] = NULL;
}

TEST(size_table_and_explicit_algorithms)
{
	struct pn_nv_cfg c;

	CHECK_EQ_INT(pn_nv_read_cfg(&c, 4, 132, 0), 0);
	CHECK_EQ_INT(pn_nv_kernel_for(&c, PENNY_ALGO_AUTO, 1024), PN_NV_ONESHOT);
	CHECK_EQ_INT(pn_nv_kernel_for(&c, PENNY_ALGO_AUTO, 1 << 20), PN_NV_ONESHOT);
	CHECK_EQ_INT(pn_nv_kernel_for(&c, PENNY_ALGO_AUTO, (1 << 20) + 16), PN_NV_TWOSHOT);
	CHECK_EQ_INT(pn_nv_kernel_for(&c, PENNY_ALGO_AUTO, 8 << 20), PN_NV_TWOSHOT);
	CHECK_EQ_INT(pn_nv_kernel_for(&c, PENNY_ALGO_AUTO, (8 << 20) + 16), PN_NV_RING);
	CHECK_EQ_INT(pn_nv_kernel_for(&c, PENNY_ALGO_ONESHOT, 1 << 30), PN_NV_ONESHOT);
	CHECK_EQ_INT(pn_nv_kernel_for(&c, PENNY_ALGO_TWOSHOT, 16), PN_NV_TWOSHOT);
	CHECK_EQ_INT(pn_nv_kernel_for(&c, PENNY_ALGO_RING, 16), PN_NV_RING);
	CHECK_EQ_INT(pn_nv_kernel_for(&c, PENNY_ALGO_SIMPLE_RING, 1 << 20), PN_NV_SIMPLE);
	CHECK_EQ_INT(pn_nv_kernel_for(&c, PENNY_ALGO_SYMMETRIC, 16), -ENOTSUP);
	CHECK_EQ_INT(pn_nv_kernel_for(&c, 99, 16), -ENOTSUP);
	CHECK_EQ_INT(pn_nv_kern_algo(PN_NV_SIMPLE), PENNY_ALGO_SIMPLE_RING);
	CHECK_EQ_INT(pn_nv_kern_algo(PN_NV_RING), PENNY_ALGO_RING);
	setenv("PENNY_NVSHMEM_SIMPLE_MAX", "2M", 1);
	setenv("PENNY_NVSHMEM_ONESHOT_MAX", "64K", 1);
	CHECK_EQ_INT(pn_nv_read_cfg(&c, 4, 132, 0), 0);
	CHECK_EQ_INT(pn_nv_kernel_for(&c, PENNY_ALGO_AUTO, 512 << 10), PN_NV_SIMPLE);
	CHECK_EQ_INT(pn_nv_kernel_for(&c, PENNY_ALGO_AUTO, 4 << 20), PN_NV_TWOSHOT);
	unsetenv("PENNY_NVSHMEM_SIMPLE_MAX");
	unsetenv("PENNY_NVSHMEM_ONESHOT_MAX");
	/* 2 GPUs: one-shot further up */
	CHECK_EQ_INT(pn_nv_read_cfg(&c, 2, 132, 0), 0);
	CHECK_EQ_INT(pn_nv_kernel_for(&c, PENNY_ALGO_AUTO, 4 << 20), PN_NV_ONESHOT);
	CHECK_EQ_INT(pn_nv_kernel_for(&c, PENNY_ALGO_AUTO, (4 << 20) + 16), PN_NV_TWOSHOT);
	/* the LL one-shot: within one NVLink domain of at most PN_NV_LL_MAX_PES */
	CHECK_EQ_INT(pn_nv_kernel_for(&c, PENNY_ALGO_AUTO, 1024), PN_NV_ONESHOT);
	c.ll_ok = 1;
	CHECK_EQ_INT(pn_nv_kernel_for(&c, PENNY_ALGO_AUTO, 1024), PN_NV_ONESHOT_LL);
	CHECK_EQ_INT(pn_nv_kernel_for(&c, PENNY_ALGO_AUTO, 512 << 10), PN_NV_ONESHOT_LL);
	CHECK_EQ_INT(pn_nv_kernel_for(&c, PENNY_ALGO_AUTO, (512 << 10) + 8), PN_NV_ONESHOT);
	CHECK_EQ_INT(pn_nv_kernel_for(&c, PENNY_ALGO_ONESHOT, 8), PN_NV_ONESHOT_LL);
	CHECK_EQ_INT(pn_nv_kern_algo(PN_NV_ONESHOT_LL), PENNY_ALGO_ONESHOT);
	/* one 8-byte line per thread of 512: 4 KiB a block */
	CHECK_EQ_INT((int)pn_nv_grid(&c, PN_NV_ONESHOT_LL, 64 << 10), 16);
	CHECK_EQ_INT((int)pn_nv_grid(&c, PN_NV_ONESHOT_LL, 4097), 2);
	CHECK_EQ_INT((int)pn_nv_grid(&c, PN_NV_ONESHOT_LL, 512 << 10), 128);
	CHECK_EQ_INT(pn_nv_read_cfg(&c, 4, 132, 0), 0);
	c.ll_ok = 1;
	CHECK_EQ_INT(pn_nv_kernel_for(&c, PENNY_ALGO_AUTO, 128 << 10), PN_NV_ONESHOT_LL);
	CHECK_EQ_INT(pn_nv_kernel_for(&c, PENNY_ALGO_AUTO, (128 << 10) + 8), PN_NV_ONESHOT);
	CHECK_EQ_INT(pn_nv_read_cfg(&c, 16, 132, 0), 0);
	c.ll_ok = 1;
	CHECK_EQ_INT(pn_nv_kernel_for(&c, PENNY_ALGO_AUTO, 1024), PN_NV_ONESHOT);
	/* copy engines above 32 MiB on 2 PEs of one NVLink domain (ce_ok: the
	 * plugin's answer), auto only; the ring on more PEs unless told */
	CHECK_EQ_INT(pn_nv_read_cfg(&c, 2, 132, 0), 0);
	CHECK(c.ce_bytes == 512u << 20 && c.ring_max == 32u << 20);
	/* the cuda plugin's table at every size where the plugin says it runs */
	CHECK(c.cuda_min == 0 && !c.cuda_ok);
	c.cuda_ok = 1;
	CHECK_EQ_INT(pn_nv_kernel_for(&c, PENNY_ALGO_AUTO, 1), PN_NV_CUDA);
	CHECK_EQ_INT(pn_nv_kernel_for(&c, PENNY_ALGO_AUTO, 1ull << 30), PN_NV_CUDA);
	CHECK_EQ_INT(pn_nv_kernel_for(&c, PENNY_ALGO_ONESHOT, 1024), PN_NV_ONESHOT);
	c.cuda_ok = 0;
	CHECK_EQ_INT(pn_nv_kernel_for(&c, PENNY_ALGO_AUTO, 1ull << 30), PN_NV_RING);
	c.ce_ok = 1;
	CHECK_EQ_INT(pn_nv_kernel_for(&c, PENNY_ALGO_AUTO, 32u << 20), PN_NV_RING);
	CHECK_EQ_INT(pn_nv_kernel_for(&c, PENNY_ALGO_AUTO, (32u << 20) + 16), PN_NV_CE);
	CHECK_EQ_INT(pn_nv_kernel_for(&c, PENNY_ALGO_RING, 1ull << 30), PN_NV_RING);
	CHECK_EQ_INT(pn_nv_kernel_for(&c, PENNY_ALGO_TWOSHOT, 1ull << 30), PN_NV_TWOSHOT);
	CHECK_EQ_INT(pn_nv_kern_algo(PN_NV_CE), PENNY_ALGO_TWOSHOT);
	{
		char buf[160];

		pn_nv_format(&c, buf, sizeof(buf));
		CHECK_STR(buf, "oneshot<=4194304B,twoshot<=8388608B,ring<=33554432B,ce");
	}
	CHECK_EQ_INT(pn_nv_read_cfg(&c, 4, 132, 0), 0);
	c.ce_ok = 1;
	CHECK_EQ_INT(pn_nv_kernel_for(&c, PENNY_ALGO_AUTO, 1ull << 30), PN_NV_RING);
	setenv("PENNY_NVSHMEM_RING_MAX", "256M", 1);
	CHECK_EQ_INT(pn_nv_read_cfg(&c, 4, 132, 0), 0);
	c.ce_ok = 1;
	CHECK_EQ_INT(pn_nv_kernel_for(&c, PENNY_ALGO_AUTO, 1ull << 30), PN_NV_CE);
	unsetenv("PENNY_NVSHMEM_RING_MAX");
}

TEST(settings_are_range_checked)
{
	static const char *const bad[][2] = {
		{ "PENNY_NVSHMEM_SLOT", "1" },		{ "PENNY_NVSHMEM_SLOT", "2G" },
		{ "PENNY_NVSHMEM_BLOCKS", "0" },	{ "PENNY_NVSHMEM_BLOCKS", "133" },
		{ "PENNY_NVSHMEM_TIMEOUT", "-1" },	{ "PENNY_NVSHMEM_TIMEOUT", "0" },
		{ "PENNY_NVSHMEM_ONESHOT_MAX", "abc" }, { "PENNY_NVSHMEM_ONESHOT_MAX", "4Q" },
		{ "PENNY_NVSHMEM_TWOSHOT_MAX", "99999999999999999999" },
		{ "PENNY_NVSHMEM_PDL", "2" },		{ "PENNY_NVSHMEM_LL_MAX", "2M" },
		{ "PENNY_NVSHMEM_SLOT", "1Ki" },	{ "PENNY_NVSHMEM_TIMEOUT", "1h1" },
		{ "PENNY_NVSHMEM_CHUNK", "2K" },	{ "PENNY_NVSHMEM_CHUNK", "32M" },
		{ "PENNY_NVSHMEM_CE_BYTES", "512K" },	{ "PENNY_NVSHMEM_CE_BYTES", "17G" },
		{ "PENNY_NVSHMEM_RING_MAX", "2T" },	{ "PENNY_NVSHMEM_RING_MAX", "x" },
		{ "PENNY_NVSHMEM_CUDA_MIN", "2T" },	{ "PENNY_NVSHMEM_CUDA_MIN", "-1" },
	};
	struct pn_nv_cfg c;

	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		setenv(bad[i][0], bad[i][1], 1);
		CHECK_EQ_INT(pn_nv_read_cfg(&c, 4, 132, 0), -EINVAL);
		CHECK(strstr(pn_plugin_errmsg(), bad[i][0]) == pn_plugin_errmsg());
		unsetenv(bad[i][0]);
	}
	CHECK_EQ_INT(pn_nv_read_cfg(&c, 65, 132, 0), -ENOTSUP);
	/* sizes and durations by the rule of src/base/units.h, as every option */
	setenv("PENNY_NVSHMEM_SLOT", "128KiB", 1);
	setenv("PENNY_NVSHMEM_TWOSHOT_MAX", "1T", 1);
	setenv("PENNY_NVSHMEM_TIMEOUT", "2m", 1);
	setenv("PENNY_NVSHMEM_CHUNK", "4100", 1);
	CHECK_EQ_INT(pn_nv_read_cfg(&c, 4, 132, 0), 0);
	CHECK(c.slot == 128u << 10 && c.twoshot_max == 1ull << 40 && c.timeout_ns == 120000000000ull);
	CHECK(c.chunk == 4096); /* whole 16-byte vectors */
	unsetenv("PENNY_NVSHMEM_CHUNK");
	/* the knob wins over the core's --timeout */
	CHECK_EQ_INT(pn_nv_read_cfg(&c, 4, 132, 7), 0);
	CHECK(c.timeout_ns == 120000000000ull);
	unsetenv("PENNY_NVSHMEM_SLOT");
	unsetenv("PENNY_NVSHMEM_TWOSHOT_MAX");
	unsetenv("PENNY_NVSHMEM_TIMEOUT");
	/* unset: the core's --timeout (at least 1 s), without one 30 s */
	CHECK_EQ_INT(pn_nv_read_cfg(&c, 4, 132, 7), 0);
	CHECK(c.timeout_ns == 7000000000ull);
	CHECK_EQ_INT(pn_nv_read_cfg(&c, 4, 132, 0.01), 0);
	CHECK(c.timeout_ns == 1000000000ull);
	CHECK_EQ_INT(pn_nv_read_cfg(&c, 4, 132, 0), 0);
	CHECK(c.timeout_ns == 30000000000ull && c.chunk == 64u << 10);
	/* blocks never exceed the SMs: every block of a launch is resident */
	setenv("PENNY_NVSHMEM_BLOCKS", "64", 1);
	CHECK_EQ_INT(pn_nv_read_cfg(&c, 4, 20, 0), 0);
	CHECK_EQ_INT((int)c.blocks, 20);
	unsetenv("PENNY_NVSHMEM_BLOCKS");
	/* the work area stays under 768 MiB by default: 128 MiB slots on 2 PEs, less on many */
	CHECK_EQ_INT(pn_nv_read_cfg(&c, 2, 132, 0), 0);
	CHECK(c.slot == 128u << 20);
	CHECK_EQ_INT(pn_nv_read_cfg(&c, 64, 132, 0), 0);
	CHECK(pn_nv_data_bytes(64, c.slot) <= (768ull << 20));
	CHECK(c.slot % 16 == 0 && c.slot > 0);
}

TEST(grid_and_staging)
{
	struct pn_nv_cfg c;

	CHECK_EQ_INT(pn_nv_read_cfg(&c, 4, 132, 0), 0);
	CHECK_EQ_INT((int)pn_nv_grid(&c, PN_NV_ONESHOT, 16), 1);
	CHECK_EQ_INT((int)pn_nv_grid(&c, PN_NV_ONESHOT, 256 << 10), 64);
	CHECK_EQ_INT((int)pn_nv_grid(&c, PN_NV_RING, 64 << 10), 1);
	CHECK_EQ_INT((int)pn_nv_grid(&c, PN_NV_RING, 1 << 20), 16);
	CHECK_EQ_INT((int)pn_nv_grid(&c, PN_NV_RING, 1 << 30), (int)c.blocks);
	CHECK_EQ_INT(pn_nv_staged(0x1000, 0x2000, 1), 0);
	CHECK_EQ_INT(pn_nv_staged(0x1000, 0x2000, 0), 1);
	CHECK_EQ_INT(pn_nv_staged(0x1008, 0x2000, 1), 1);
	CHECK_EQ_INT(pn_nv_staged(0x1000, 0x2004, 1), 1);
}

TEST(bootstrap_hands_rank_0s_unique_id_to_every_rank)
{
	struct fake_world w;

	setenv("NVSHMEM_DISABLE_NVLS", "0", 1);
	nvb_inits = nvb_fins = nvb_mallocs = nvb_frees = 0;
	memset(uid_seen, 0, sizeof(uid_seen));
	fake_world_init(&w, 4);
	fake_run(&w, do_init);
	for (int r = 0; r < 4; r++) {
		CHECK_EQ_INT(rets[r], 0);
		CHECK(uid_seen[r][3] == 0x5a && uid_seen[r][0] == 0xa5);
	}
	CHECK_EQ_INT(nvb_inits, 4);
	CHECK(!strcmp(getenv("NVSHMEM_DISABLE_NVLS"), "1"));
	CHECK(strstr(pn_nv_describe(be[2]), "PE 2 of 4") != NULL);
	/* channels: every SM by default, the fewest of any rank (rank 1's GPU has 100) */
	for (int r = 0; r < 4; r++)
		CHECK(strstr(pn_nv_describe(be[r]), ", 100 channels,") != NULL);
	fake_run(&w, do_fini);
	CHECK_EQ_INT(nvb_fins, 4);
	CHECK_EQ_INT(nvb_mallocs, nvb_frees);
	fake_world_free(&w);
}

TEST(a_rank_that_cannot_open_its_gpu_fails_every_rank_before_nvshmem)
{
	struct fake_world w;

	nvb_inits = 0;
	fake_world_init(&w, 3);
	fake_run(&w, do_init_rank1_bad_device);
	for (int r = 0; r < 3; r++)
		CHECK(rets[r] < 0 && be[r] == NULL);
	CHECK_EQ_INT(nvb_inits, 0); /* nobody waits in NVSHMEM's bootstrap for rank 1 */
	CHECK(strstr(msgs[1], "CUDA device 9 does not exist") == msgs[1]);
	CHECK(strstr(msgs[0], "rank 1: CUDA device 9 does not exist") != NULL);
	CHECK(strstr(msgs[2], "rank 1: CUDA device 9 does not exist") != NULL);
	fake_world_free(&w);
}

static size_t call_count;
static int call_algo, call_dtype;
static int call_flags; /* 1: registered buffers, 2: unaligned recv, 4: in place */

static void do_call(struct fake_world *w, int r)
{
	struct pn_nv *c;
	void *s = NULL, *d = NULL;
	unsigned fl = call_flags & 1 ? PENNY_MEM_REGISTERED : 0;
	size_t bytes = call_count * penny_data_size(call_dtype);

	(void)w;
	do_init(w, r);
	if (rets[r])
		return;
	c = be[r];
	me()->nlaunch = me()->ncopy = 0;
	rets[r] = pn_nv_alloc(c, bytes + 64, fl, &s);
	if (!rets[r])
		rets[r] = pn_nv_alloc(c, bytes + 64, fl, &d);
	if (call_flags & 4)
		d = s;
	if (call_flags & 2)
		d = (char *)d + 4;
	me()->nlaunch = me()->ncopy = 0;
	if (!rets[r])
		rets[r] = pn_nv_allreduce(c, s, d, call_count, call_dtype, PENNY_SUM, call_algo);
	if (!rets[r])
		rets[r] = pn_gpu_be_sync(c);
	/* check each launch here, on this rank's thread */
	for (int i = 0; i < me()->nlaunch && !rets[r]; i++) {
		const struct pn_nv_args *a = &nv_args[i];

		if (a->bytes > c->cfg.slot || a->rank != r || a->nranks != w->n ||
		    a->slot != c->cfg.slot || me()->launch[i].block != 512)
			rets[r] = -1000 - i;
		if (call_flags & 1 && !(call_flags & 2) && a->src != (uintptr_t)s + (uint64_t)i * c->cfg.slot)
			rets[r] = -2000 - i;
		/* staged: misaligned, or a NIC reads send and it is not symmetric */
		if ((call_flags & 2 || (!(call_flags & 1) && !c->p2p_all)) && a->src != c->stage)
			rets[r] = -3000 - i;
		if (!(call_flags & 2) && c->p2p_all && a->src != (uintptr_t)s + (uint64_t)i * c->cfg.slot)
			rets[r] = -5000 - i;
	}
	if (pn_nv_free(c, s) || (!(call_flags & 4) && pn_nv_free(c, (call_flags & 2) ? (char *)d - 4 : d)))
		rets[r] = -4000;
	snprintf(msgs[r], sizeof(msgs[r]), "%d launches %d copies %s", me()->nlaunch, me()->ncopy,
		 me()->nlaunch ? me()->launch[0].name : "");
	pn_nv_fini(c);
	be[r] = NULL;
}

static void run_call(size_t count, int dtype, int algo, int flags)
{
	struct fake_world w;

	call_count = count;
	call_dtype = dtype;
	call_algo = algo;
	call_flags = flags;
	fake_world_init(&w, 4);
	memset(rets, 0, sizeof(rets));
	fake_run(&w, do_call);
	fake_world_free(&w);
}

TEST(symmetric_buffers_run_in_place_others_are_staged)
{
	/* two nodes of two PEs: a NIC reads send buffers */
	fake_nic_from = 2;
	/* registered, aligned: one launch on the user's buffers, no copies */
	run_call(1001, PENNY_BFLOAT16, PENNY_ALGO_RING, 1);
	for (int r = 0; r < 4; r++) {
		CHECK_EQ_INT(rets[r], 0);
		CHECK(!strcmp(msgs[r], "1 launches 0 copies pn_nv_ring_bfloat16_sum"));
	}
	/* in place on a symmetric buffer: the same */
	run_call(777, PENNY_FLOAT, PENNY_ALGO_TWOSHOT, 1 | 4);
	for (int r = 0; r < 4; r++)
		CHECK(rets[r] == 0 && !strcmp(msgs[r], "1 launches 0 copies pn_nv_twoshot_float_sum"));
	/* plain device memory: copy in, kernel on the staging buffer, copy out */
	run_call(5, PENNY_INT8, PENNY_ALGO_SIMPLE_RING, 0);
	for (int r = 0; r < 4; r++)
		CHECK(rets[r] == 0 && !strcmp(msgs[r], "1 launches 2 copies pn_nv_simple_int8_sum"));
	/* symmetric but a misaligned recv: staged too */
	run_call(100, PENNY_HALF, PENNY_ALGO_ONESHOT, 1 | 2);
	for (int r = 0; r < 4; r++)
		CHECK(rets[r] == 0 && !strcmp(msgs[r], "1 launches 2 copies pn_nv_oneshot_half_sum"));
	fake_nic_from = FAKE_MAX_RANKS;
}

TEST(one_nvlink_domain_runs_on_plain_memory_and_ll_lines)
{
	/* every peer by NVLink: plain device memory needs no staging ... */
	run_call(5, PENNY_INT8, PENNY_ALGO_SIMPLE_RING, 0);
	for (int r = 0; r < 4; r++)
		CHECK(rets[r] == 0 && !strcmp(msgs[r], "1 launches 0 copies pn_nv_simple_int8_sum"));
	/* ... small one-shots travel as LL lines, up to PENNY_NVSHMEM_LL_MAX */
	run_call(100, PENNY_HALF, PENNY_ALGO_AUTO, 0);
	for (int r = 0; r < 4; r++)
		CHECK(rets[r] == 0 && !strcmp(msgs[r], "1 launches 0 copies pn_nv_oneshot_ll_half_sum"));
	run_call(100, PENNY_HALF, PENNY_ALGO_ONESHOT, 1 | 2);
	for (int r = 0; r < 4; r++)
		CHECK(rets[r] == 0 && !strcmp(msgs[r], "1 launches 2 copies pn_nv_oneshot_ll_half_sum"));
	setenv("PENNY_NVSHMEM_LL_MAX", "128", 1);
	run_call(100, PENNY_HALF, PENNY_ALGO_AUTO, 1);
	for (int r = 0; r < 4; r++)
		CHECK(rets[r] == 0 && !strcmp(msgs[r], "1 launches 0 copies pn_nv_oneshot_half_sum"));
	setenv("PENNY_NVSHMEM_LL_MAX", "0", 1);
	run_call(10, PENNY_HALF, PENNY_ALGO_ONESHOT, 1);
	for (int r = 0; r < 4; r++)
		CHECK(rets[r] == 0 && !strcmp(msgs[r], "1 launches 0 copies pn_nv_oneshot_half_sum"));
	unsetenv("PENNY_NVSHMEM_LL_MAX");
	/* one PE that reaches no peer by load/store: every PE runs the plain kernels
	 * (the kernel choice must agree, or the PEs wait for each other forever) */
	fake_blind_rank = 3;
	run_call(100, PENNY_HALF, PENNY_ALGO_AUTO, 1);
	for (int r = 0; r < 4; r++)
		CHECK(rets[r] == 0 && !strcmp(msgs[r], "1 launches 0 copies pn_nv_oneshot_half_sum"));
	fake_blind_rank = -1;
}

TEST(calls_larger_than_a_slot_are_cut_into_slots)
{
	fake_nic_from = 2;
	setenv("PENNY_NVSHMEM_SLOT", "64K", 1);
	setenv("PENNY_NVSHMEM_ONESHOT_MAX", "64K", 1);
	/* 300 KiB + 3 doubles: 5 launches of at most 64 KiB (auto: two-shot) */
	run_call((300u << 10) / 8 + 3, PENNY_DOUBLE, PENNY_ALGO_AUTO, 1);
	for (int r = 0; r < 4; r++) {
		CHECK_EQ_INT(rets[r], 0);
		CHECK(!strcmp(msgs[r], "5 launches 0 copies pn_nv_twoshot_double_sum"));
	}
	run_call((300u << 10) / 8 + 3, PENNY_DOUBLE, PENNY_ALGO_AUTO, 0);
	for (int r = 0; r < 4; r++)
		CHECK(rets[r] == 0 && !strcmp(msgs[r], "5 launches 10 copies pn_nv_twoshot_double_sum"));
	fake_nic_from = FAKE_MAX_RANKS;
	run_call((300u << 10) / 8 + 3, PENNY_DOUBLE, PENNY_ALGO_AUTO, 0);
	for (int r = 0; r < 4; r++)
		CHECK(rets[r] == 0 && !strcmp(msgs[r], "5 launches 0 copies pn_nv_twoshot_double_sum"));
	unsetenv("PENNY_NVSHMEM_SLOT");
	unsetenv("PENNY_NVSHMEM_ONESHOT_MAX");
}

TEST(planned_rings_table)
{
	const int32_t two[] = { 0, 2, 1, 3, 3, 1, 2, 0 }, dup[] = { 0, 1, 1, 3 },
		      out_of_range[] = { 0, 1, 2, 4 };
	int32_t t[2 * 4 * 2];

	CHECK_EQ_INT(pn_nv_rings_table(two, 2, 4, t), 0);
	/* ring 0: its order, then each PE's place; ring 1 after it */
	CHECK(t[0] == 0 && t[1] == 2 && t[2] == 1 && t[3] == 3);
	CHECK(t[4] == 0 && t[5] == 2 && t[6] == 1 && t[7] == 3);
	CHECK(t[8] == 3 && t[12] == 3 && t[13] == 1 && t[14] == 2 && t[15] == 0);
	CHECK_EQ_INT(pn_nv_rings_table(dup, 1, 4, t), -EINVAL);
	CHECK(strstr(pn_plugin_errmsg(), "planned ring 0 is not an order of all 4 PEs"));
	CHECK_EQ_INT(pn_nv_rings_table(out_of_range, 1, 4, t), -EINVAL);
	CHECK_EQ_INT(pn_nv_rings_table(two, PN_NV_MAX_RINGS + 1, 4, t), -EINVAL);
	CHECK_EQ_INT(pn_nv_rings_table(two, -1, 4, t), -EINVAL);
	CHECK_EQ_INT(pn_nv_rings_table(NULL, 0, 4, t), 0);
}

/* set_rings, then a ring call: the launch carries the table; a bad one is refused */
static const int32_t *rings_order;
static int rings_n, rings_ret[FAKE_MAX_RANKS], rings_seen[FAKE_MAX_RANKS];

static void do_rings(struct fake_world *w, int r)
{
	void *s = NULL;

	do_init(w, r);
	if (rets[r])
		return;
	rings_ret[r] = pn_nv_set_rings(be[r], rings_order, rings_n);
	snprintf(msgs[r], sizeof(msgs[r]), "%s", rings_ret[r] ? pn_plugin_errmsg() : pn_nv_describe(be[r]));
	me()->nlaunch = 0;
	rets[r] = pn_nv_alloc(be[r], 4096, PENNY_MEM_REGISTERED, &s);
	if (!rets[r])
		rets[r] = pn_nv_allreduce(be[r], s, s, 1000, PENNY_FLOAT, PENNY_SUM, PENNY_ALGO_RING);
	if (!rets[r])
		rets[r] = pn_gpu_be_sync(be[r]);
	rings_seen[r] = me()->nlaunch == 1 ? nv_args[0].nrings + (nv_args[0].rings ? 100 : 0) : -1;
	pn_nv_free(be[r], s);
	pn_nv_fini(be[r]);
	be[r] = NULL;
}

TEST(planned_rings_reach_the_ring_kernel)
{
	static const int32_t two[] = { 0, 2, 1, 3, 3, 1, 2, 0 }, bad[] = { 0, 2, 2, 3 };
	struct fake_world w;

	rings_order = two;
	rings_n = 2;
	fake_world_init(&w, 4);
	fake_run(&w, do_rings);
	fake_world_free(&w);
	for (int r = 0; r < 4; r++) {
		CHECK_EQ_INT(rings_ret[r], 0);
		CHECK_EQ_INT(rets[r], 0);
		CHECK_EQ_INT(rings_seen[r], 102);
		CHECK(strstr(msgs[r], ", ring channels on 2 planned rings"));
	}
	rings_order = bad;
	rings_n = 1;
	fake_world_init(&w, 4);
	fake_run(&w, do_rings);
	fake_world_free(&w);
	for (int r = 0; r < 4; r++) {
		CHECK_EQ_INT(rings_ret[r], -EINVAL);
		CHECK_EQ_INT(rings_seen[r], 0); /* the plugin's own ring */
	}
}

/* The calls' buffers of a rank: send and recv symmetric (bytes + 64), and
 * plain device memory (plain_bytes); 0 or the first failure. */
static int bufs_alloc(struct pn_nv *c, size_t bytes, size_t plain_bytes, void **s, void **d,
		      void **plain)
{
	int ret = pn_nv_alloc(c, bytes + 64, PENNY_MEM_REGISTERED, s);

	if (!ret)
		ret = pn_nv_alloc(c, bytes + 64, PENNY_MEM_REGISTERED, d);
	if (!ret)
		ret = pn_nv_alloc(c, plain_bytes, 0, plain);
	return ret;
}

/* Their release and the rank's backend's. */
static void bufs_end(int r, struct pn_nv *c, void *s, void *d, void *plain)
{
	if (plain)
		pn_nv_free(c, plain);
	if (d)
		pn_nv_free(c, d);
	if (s)
		pn_nv_free(c, s);
	pn_nv_fini(c);
	be[r] = NULL;
}

/* 3 MiB of float + 3 elements on 2 PEs of one NVLink domain, auto with
 * every limit below it: the copy engines (the cuda plugin's cuda_ce.c). */
static const size_t ce_count = (3u << 20) / 4 + 3;

static void do_ce_call(struct fake_world *w, int r)
{
	const uint64_t bytes = ce_count * 4, main = bytes / 16 * 16;
	void *s = NULL, *d = NULL, *plain = NULL;
	int reduces = 0, gates = 0, pushes = 0, ags = 0, q = 1 - r, bad = 0, mallocs;
	struct pn_ce_geom g;
	struct pn_nv *c;

	do_init(w, r);
	if (rets[r])
		return;
	c = be[r];
	rets[r] = bufs_alloc(c, bytes, bytes, &s, &d, &plain);
	if (rets[r])
		goto out;
	/* nothing made before the first call, nor inside a capture (the ring) */
	mallocs = __atomic_load_n(&nvb_mallocs, __ATOMIC_SEQ_CST);
	me()->capturing = 1;
	rets[r] = pn_nv_allreduce(c, s, d, ce_count, PENNY_FLOAT, PENNY_SUM, PENNY_ALGO_AUTO);
	me()->capturing = 0;
	if (rets[r] || c->ce_state != 0 || c->ce_area.base || !me()->ncaptured) {
		rets[r] = rets[r] ? rets[r] : -100;
		goto out;
	}
	me()->nlaunch = me()->ncopy = 0;
	rets[r] = pn_nv_allreduce(c, s, d, ce_count, PENNY_FLOAT, PENNY_SUM, PENNY_ALGO_AUTO);
	if (!rets[r])
		rets[r] = pn_gpu_be_sync(c);
	if (rets[r])
		goto out;
	if (c->ce_state != 1 || !c->ce_area.base || !c->ce ||
	    __atomic_load_n(&nvb_mallocs, __ATOMIC_SEQ_CST) < mallocs + 1 ||
	    pn_ce_geometry(main, 2, pn_ce_slot_bytes(c->ce_area.bytes - PN_CE_HDR, 2), &g)) {
		rets[r] = -200;
		goto out;
	}
	for (int i = 0; i < me()->nlaunch; i++) {
		const struct fake_launch *l = &me()->launch[i];

		if (!strcmp(l->name, "pn_ar_ce_float_sum")) {
			/* the kernels' error words are the nvshmem kernels' */
			bad |= l->ar.peer_ws[r] + PN_WS_COUNTERS + 4 * PN_CNT_ERR !=
			       c->local + PN_NV_LOCAL_ERR;
			bad |= l->ar.peer_ce[q] != c->ce_area.peer[q] || l->grid >= c->cfg.blocks;
			bad |= l->ar.recv != (uint64_t)(uintptr_t)d + (uint64_t)reduces * g.piece +
						     (uint64_t)r * g.slice;
			/* the recv's identity: its symmetric allocation, the same on every PE */
			bad |= l->ar.desc != ((uint64_t)c->syms->id << 40);
			reduces++;
		} else if (!strcmp(l->name, "pn_ce_gate")) {
			gates++;
		} else if (i != me()->nlaunch - 1) {
			bad |= 2;
		}
	}
	for (int i = 0; i < me()->ncopy; i++) {
		const struct fake_copy *k = &me()->copy[i];

		if (k->bytes > 8 && k->dst >= c->ce_area.peer[q] + PN_CE_HDR &&
		    k->dst < c->ce_area.peer[q] + c->ce_area.bytes)
			pushes++;
		else if (k->bytes > 8 && k->dst >= (uint64_t)(uintptr_t)d &&
			 k->dst < (uint64_t)(uintptr_t)d + bytes)
			ags++;
	}
	bad |= reduces != (int)g.pieces || gates != (int)g.pieces - 1;
	bad |= pushes != (int)g.pieces || ags != (int)g.pieces;
	/* the last 12 bytes by the LL one-shot */
	bad |= strcmp(me()->launch[me()->nlaunch - 1].name, "pn_nv_oneshot_ll_float_sum") != 0;
	if (bad) {
		snprintf(msgs[r], sizeof(msgs[r]), "bad %d: %d reduces %d gates %d pushes %d ags, %d pieces",
			 bad, reduces, gates, pushes, ags, (int)g.pieces);
		rets[r] = -300;
		goto out;
	}
	/* a recv outside the symmetric heap: the ring */
	me()->nlaunch = me()->ncopy = 0;
	rets[r] = pn_nv_allreduce(c, s, plain, ce_count, PENNY_FLOAT, PENNY_SUM, PENNY_ALGO_AUTO);
	if (!rets[r] && strcmp(me()->launch[0].name, "pn_nv_ring_float_sum"))
		rets[r] = -400;
	/* auto says two-shot for it (the ABI has no copy-engine algorithm) */
	if (!rets[r] && pn_nv_select(c, ce_count, PENNY_FLOAT, PENNY_SUM, PENNY_ALGO_AUTO) !=
				PENNY_ALGO_TWOSHOT)
		rets[r] = -500;
out:
	bufs_end(r, c, s, d, plain);
}

TEST(large_calls_in_one_nvlink_domain_move_by_copy_engines)
{
	struct fake_world w;

	setenv("PENNY_NVSHMEM_LL_MAX", "4K", 1);
	setenv("PENNY_NVSHMEM_ONESHOT_MAX", "4K", 1);
	setenv("PENNY_NVSHMEM_TWOSHOT_MAX", "4K", 1);
	setenv("PENNY_NVSHMEM_RING_MAX", "64K", 1);
	setenv("PENNY_NVSHMEM_CE_BYTES", "1M", 1);
	fake_world_init(&w, 2);
	memset(rets, 0, sizeof(rets));
	memset(msgs, 0, sizeof(msgs));
	fake_run(&w, do_ce_call);
	fake_world_free(&w);
	for (int r = 0; r < 2; r++) {
		CHECK_EQ_INT(rets[r], 0);
		if (rets[r])
			fprintf(stderr, "# PE %d: %s\n", r, msgs[r]);
	}
	/* no slots (0): the ring */
	setenv("PENNY_NVSHMEM_CE_BYTES", "0", 1);
	run_call(ce_count, PENNY_FLOAT, PENNY_ALGO_AUTO, 1);
	for (int r = 0; r < 4; r++)
		CHECK(rets[r] == 0 && !strcmp(msgs[r], "1 launches 0 copies pn_nv_ring_float_sum"));
	unsetenv("PENNY_NVSHMEM_CE_BYTES");
	/* PEs behind NICs: the ring */
	fake_nic_from = 2;
	run_call(ce_count, PENNY_FLOAT, PENNY_ALGO_AUTO, 1);
	for (int r = 0; r < 4; r++)
		CHECK(rets[r] == 0 && !strcmp(msgs[r], "1 launches 0 copies pn_nv_ring_float_sum"));
	fake_nic_from = FAKE_MAX_RANKS;
	unsetenv("PENNY_NVSHMEM_LL_MAX");
	unsetenv("PENNY_NVSHMEM_ONESHOT_MAX");
	unsetenv("PENNY_NVSHMEM_TWOSHOT_MAX");
	unsetenv("PENNY_NVSHMEM_RING_MAX");
}

/* Mid sizes on 2 PEs of one NVLink domain: the cuda plugin's table on a
 * workspace of the symmetric heap. */
static const char *cu_step;

static int cu_launch_ok(const struct pn_nv *c, const struct fake_launch *l, int r, uint64_t recv,
			uint64_t reg_base, uint32_t reg_id)
{
	int bad = l->ar.rank != r || l->ar.nranks != 2 || l->ar.timeout_ns != c->cfg.timeout_ns;

	for (int q = 0; q < 2; q++) {
		bad |= l->ar.peer_ws[q] != c->cu_ws.peer[q] || !l->ar.peer_ws[q];
		if (reg_base)
			bad |= l->ar.peer_recv[q] != recv; /* every PE's copy (one process here) */
	}
	if (reg_base)
		bad |= l->ar.desc != ((uint64_t)reg_id << 40 | (recv - reg_base));
	return !bad;
}

static void do_cuda_call(struct fake_world *w, int r)
{
	const size_t n8m = (8u << 20) / 4;
	void *s = NULL, *d = NULL, *plain = NULL;
	struct pn_nv *c;
	int mallocs;

	do_init(w, r);
	if (rets[r])
		return;
	c = be[r];
	rets[r] = bufs_alloc(c, 8u << 20, (8u << 20) + 64, &s, &d, &plain);
	if (rets[r])
		goto out;
	/* nothing made before the first call, nor inside a capture (the nvshmem
	 * table: two-shot at 8 MiB) */
	cu_step = "capture";
	mallocs = __atomic_load_n(&nvb_mallocs, __ATOMIC_SEQ_CST);
	me()->capturing = 1;
	me()->nlaunch = 0;
	rets[r] = pn_nv_allreduce(c, s, d, n8m, PENNY_FLOAT, PENNY_SUM, PENNY_ALGO_AUTO);
	me()->capturing = 0;
	/* (nvb_mallocs counts every rank's: the other may still be allocating) */
	if (rets[r] || c->cu_state != 0 || c->cu_ws.base || me()->ncaptured != 1) {
		rets[r] = rets[r] ? rets[r] : -100;
		goto out;
	}
	/* 8 MiB on symmetric buffers: the ring on the user's buffers */
	cu_step = "ring";
	me()->nlaunch = me()->ncopy = 0;
	rets[r] = pn_nv_allreduce(c, s, d, n8m, PENNY_FLOAT, PENNY_SUM, PENNY_ALGO_AUTO);
	if (!rets[r])
		rets[r] = pn_gpu_be_sync(c);
	if (rets[r])
		goto out;
	if (c->cu_state != 1 || !c->cu_ws.base ||
	    __atomic_load_n(&nvb_mallocs, __ATOMIC_SEQ_CST) < mallocs + 1 || me()->nlaunch != 1 ||
	    me()->ncopy || strcmp(me()->launch[0].name, "pn_ar_ring_float_sum") ||
	    !cu_launch_ok(c, &me()->launch[0], r, (uintptr_t)d, (uintptr_t)d, c->syms->id) ||
	    me()->launch[0].ar.count != n8m || me()->launch[0].ar.send != (uintptr_t)s) {
		rets[r] = -200;
		goto out;
	}
	/* an odd tail: the ring on the whole vectors, the last 4 bytes by LL lines */
	cu_step = "tail";
	me()->nlaunch = me()->ncopy = 0;
	rets[r] = pn_nv_allreduce(c, s, (char *)d + 16, n8m + 1, PENNY_FLOAT, PENNY_SUM,
				  PENNY_ALGO_AUTO);
	if (rets[r] || me()->nlaunch != 2 || strcmp(me()->launch[1].name, "pn_ar_oneshot_float_sum") ||
	    !cu_launch_ok(c, &me()->launch[0], r, (uintptr_t)d + 16, (uintptr_t)d, c->syms->id) ||
	    me()->launch[1].ar.recv != (uintptr_t)d + 16 + (8u << 20)) {
		rets[r] = rets[r] ? rets[r] : -300;
		goto out;
	}
	/* recv outside the symmetric heap: the ring through the staging buffer */
	cu_step = "staged";
	me()->nlaunch = me()->ncopy = 0;
	rets[r] = pn_nv_allreduce(c, s, plain, n8m, PENNY_FLOAT, PENNY_SUM, PENNY_ALGO_AUTO);
	if (rets[r] || me()->nlaunch != 1 || me()->ncopy != 2 ||
	    strcmp(me()->launch[0].name, "pn_ar_ring_float_sum") ||
	    !cu_launch_ok(c, &me()->launch[0], r, c->stage, c->stage, PN_NV_STAGE_ID) ||
	    me()->copy[1].dst != (uintptr_t)plain) {
		rets[r] = rets[r] ? rets[r] : -400;
		goto out;
	}
	/* 1 MiB: the flag one-shot, on any device memory (its lines go to the
	 * peers' workspace) */
	cu_step = "oneshot_fl";
	me()->nlaunch = me()->ncopy = 0;
	rets[r] = pn_nv_allreduce(c, plain, plain, (1u << 20) / 4, PENNY_FLOAT, PENNY_SUM,
				  PENNY_ALGO_AUTO);
	if (rets[r] || me()->nlaunch != 1 || me()->ncopy ||
	    strcmp(me()->launch[0].name, "pn_ar_oneshot_fl_float_sum") ||
	    !cu_launch_ok(c, &me()->launch[0], r, 0, 0, 0)) {
		rets[r] = rets[r] ? rets[r] : -500;
		goto out;
	}
	/* 256 KiB: the cuda plugin's LL one-shot (every size by default) */
	cu_step = "ll";
	me()->nlaunch = 0;
	rets[r] = pn_nv_allreduce(c, s, d, (256u << 10) / 4, PENNY_FLOAT, PENNY_SUM, PENNY_ALGO_AUTO);
	if (rets[r] || strcmp(me()->launch[0].name, "pn_ar_oneshot_float_sum") ||
	    !cu_launch_ok(c, &me()->launch[0], r, 0, 0, 0)) {
		rets[r] = rets[r] ? rets[r] : -600;
		goto out;
	}
	/* auto names the cuda table's algorithm; an explicit one is the nvshmem kernel's */
	cu_step = "select";
	if (pn_nv_select(c, n8m, PENNY_FLOAT, PENNY_SUM, PENNY_ALGO_AUTO) != PENNY_ALGO_RING ||
	    pn_nv_select(c, (1u << 20) / 4, PENNY_FLOAT, PENNY_SUM, PENNY_ALGO_AUTO) !=
		    PENNY_ALGO_ONESHOT) {
		rets[r] = -700;
		goto out;
	}
	me()->nlaunch = 0;
	rets[r] = pn_nv_allreduce(c, s, d, n8m, PENNY_FLOAT, PENNY_SUM, PENNY_ALGO_RING);
	if (rets[r] || strcmp(me()->launch[0].name, "pn_nv_ring_float_sum")) {
		rets[r] = rets[r] ? rets[r] : -800;
		goto out;
	}
	/* a cuda kernel's error word: this PE's call fails naming the peer */
	cu_step = "error";
	if (r == 0) {
		uint32_t *cnt = (uint32_t *)(uintptr_t)(c->cu_ws.base + PN_WS_COUNTERS);

		cnt[PN_CNT_ERR] = PN_ERR_TIMEOUT;
		cnt[PN_CNT_ERR_INFO] = PN_ERR_DETAIL(1, 0);
		if (kernel_errors(c) != -ETIMEDOUT || !strstr(pn_plugin_errmsg(), "waiting for PE 1"))
			rets[r] = -900;
		else if (kernel_errors(c) != 0) /* cleared: reported once */
			rets[r] = -901;
	}
	cu_step = "done";
out:
	snprintf(msgs[r], sizeof(msgs[r]), "step %s: %s", cu_step, rets[r] ? pn_plugin_errmsg() : "");
	bufs_end(r, c, s, d, plain);
}

TEST(mid_sizes_in_one_nvlink_domain_run_the_cuda_kernels)
{
	struct fake_world w;

	use_cu = all_cu;
	fake_world_init(&w, 2);
	memset(rets, 0, sizeof(rets));
	memset(msgs, 0, sizeof(msgs));
	fake_run(&w, do_cuda_call);
	fake_world_free(&w);
	for (int r = 0; r < 2; r++) {
		CHECK_EQ_INT(rets[r], 0);
		if (rets[r])
			fprintf(stderr, "# PE %d: %s\n", r, msgs[r]);
	}
	/* PEs behind NICs: the nvshmem kernels (two-shot at 8 MiB) */
	fake_nic_from = 2;
	run_call((8u << 20) / 4, PENNY_FLOAT, PENNY_ALGO_AUTO, 1);
	for (int r = 0; r < 4; r++)
		CHECK(rets[r] == 0 && !strcmp(msgs[r], "1 launches 0 copies pn_nv_twoshot_float_sum"));
	fake_nic_from = FAKE_MAX_RANKS;
	/* PENNY_NVSHMEM_CUDA_MIN: the nvshmem kernels up to it */
	setenv("PENNY_NVSHMEM_CUDA_MIN", "16M", 1);
	run_call((8u << 20) / 4, PENNY_FLOAT, PENNY_ALGO_AUTO, 1);
	for (int r = 0; r < 4; r++)
		CHECK(rets[r] == 0 && !strcmp(msgs[r], "1 launches 0 copies pn_nv_twoshot_float_sum"));
	run_call(1000, PENNY_FLOAT, PENNY_ALGO_AUTO, 1);
	for (int r = 0; r < 4; r++)
		CHECK(rets[r] == 0 && !strcmp(msgs[r], "1 launches 0 copies pn_nv_oneshot_ll_float_sum"));
	unsetenv("PENNY_NVSHMEM_CUDA_MIN");
	/* a PENNY_CUDA_* setting out of range fails init with its name */
	setenv("PENNY_CUDA_RING_TILE", "100", 1);
	fake_world_init(&w, 2);
	fake_run(&w, do_init);
	fake_world_free(&w);
	CHECK(rets[0] != 0 && strstr(msgs[0], "PENNY_CUDA_") != NULL);
	unsetenv("PENNY_CUDA_RING_TILE");
	use_cu = ce_only;
}

TEST(bad_arguments)
{
	run_call(10, PENNY_NDTYPES, PENNY_ALGO_AUTO, 1);
	for (int r = 0; r < 4; r++)
		CHECK(rets[r] < 0);
	run_call(10, PENNY_FLOAT, PENNY_ALGO_SYMMETRIC, 1);
	for (int r = 0; r < 4; r++)
		CHECK_EQ_INT(rets[r], -ENOTSUP);
}

int main(void)
{
	nv_cu = fake_cu;
	nv_cu.LaunchKernel = nv_launch;
	nv_cu.LaunchKernelEx = NULL;
	pn_cudrv_set(&nv_cu);
	RUN(size_table_and_explicit_algorithms);
	RUN(settings_are_range_checked);
	RUN(grid_and_staging);
	RUN(bootstrap_hands_rank_0s_unique_id_to_every_rank);
	RUN(a_rank_that_cannot_open_its_gpu_fails_every_rank_before_nvshmem);
	RUN(symmetric_buffers_run_in_place_others_are_staged);
	RUN(one_nvlink_domain_runs_on_plain_memory_and_ll_lines);
	RUN(calls_larger_than_a_slot_are_cut_into_slots);
	RUN(planned_rings_table);
	RUN(planned_rings_reach_the_ring_kernel);
	RUN(large_calls_in_one_nvlink_domain_move_by_copy_engines);
	RUN(mid_sizes_in_one_nvlink_domain_run_the_cuda_kernels);
	RUN(bad_arguments);
	fake_funcs_free();
	return unit_done();
}
