/* SPDX-License-Identifier: MIT */
/*
 * What the GPU checks of `penny check` (gpu-copy in check_gpu.c, allreduce
 * in check_ar.c) share, pure where it can be so that the unit test
 * (tests/unit/t_checkgpu.c) checks the expectation math: the rates the
 * topology promises (a PCIe path, an NVLink bond, ring-plan's predicted
 * busbw of the node) and the child process every GPU measurement runs in.
 *
 * Why a child: the CUDA driver cannot be used in a process forked after it
 * was initialised, and the allreduce forks one rank per GPU; a plugin that
 * crashes or hangs also takes only the child with it (killed at the run's
 * timeout), never the check.
 */
#ifndef PENNY_CHECK_GPU_H
#define PENNY_CHECK_GPU_H

#include <stddef.h>
#include <stdint.h>

struct pn_check;
struct pn_pcie_path;
struct pn_topo;

/*
 * The usable one-direction GB/s of a PCIe path when every link runs at its
 * maximum (the lowest max over its links: a Gen5 GPU behind a Gen4 switch
 * uplink gets Gen4), described into src ("Gen5 x16 = 63 GB/s", with
 * " (uplink 0000:17:00.0)" when a link above the device limits it).  0
 * (src "PCIe rate unknown") when no link's max is known.
 */
double pn_checkgpu_path_gbs(const struct pn_pcie_path *p, char *src, size_t len);

/*
 * The nominal one-direction GB/s between two GPUs joined by path class cls
 * (enum pn_path) with nv NVLinks, as ring-plan's bandwidth model has it:
 * NV#: nv x 26.56 GB/s ("NV18 x 26.56 GB/s = 478 GB/s"); PIX ... NODE: the
 * PCIe rate pcie_gbs ("PIX: PCIe 63 GB/s"); SYS: the lower of PCIe and the
 * socket link's 10 GB/s.  0 when pcie_gbs is needed and 0.
 */
double pn_checkgpu_pair_gbs(int cls, int nv, double pcie_gbs, char *src, size_t len);

/*
 * The allreduce busbw ring-plan predicts for this node alone: its rings
 * over the GPUs (pn_plan_build, pn_plan_analyze) with PCIe at pcie_gbs
 * (0: ring-plan's default, Gen5 x16).  0 with the bottleneck in src
 * ("ring-plan: 2 rings, 478 GB/s (limit: GPU0 NVLink out)"); -EINVAL
 * (message) with fewer than two GPUs or a topology it cannot plan.
 */
int pn_checkgpu_predict(const struct pn_topo *t, double pcie_gbs, double *busbw, char *src,
			size_t len);

/* Whether two PCI addresses name one function ("00000000:18:00.0" as NVML
 * writes it equals "0000:18:00.0"); 0 when either does not parse. */
int pn_checkgpu_busid_eq(const char *a, const char *b);

/*
 * Run fn(arg, out) in a child process, out being outlen bytes of memory
 * shared with it (zeroed first).  The child's return value (0 or a negative
 * errno) comes back with its message (the child's pn_errmsg); a child that
 * dies or outlives timeout seconds (then killed) is -EIO / -ETIMEDOUT with
 * a message saying so.  The child dies with the caller (SIGKILL).
 */
int pn_checkgpu_child(int (*fn)(void *arg, void *out), void *arg, void *out, size_t outlen,
		      double timeout, const char *what);

/*
 * The node's slowest GPU-to-GPU copy-engine rate (GB/s), measured now in a
 * child (gpu-copy's matrix at a quarter of gpu-copy.size), for an
 * expectation where gpu-copy did not run: 0 with *gbs and its source
 * ("gpu-copy matrix: slowest pair GPU0-GPU1 345 GB/s measured"); -ENOENT
 * (no message) when no plugin measures one here.
 */
int pn_checkgpu_copy_floor(struct pn_check *c, double *gbs, char *src, size_t len);

/*
 * A fresh job of the job's ranks (check_ab.c): the job's allreduce row,
 * and what the ranks' own NCCL cannot do once initialised (it reads its
 * environment once per process): every rank execs c->exe `allreduce-test
 * --json` with args (NULL-terminated: the backend, the sizes, ...) as rank
 * c->rank of a new job with env ("NAME=VALUE", at most 8) added to its
 * environment; the new ranks meet
 * on a free port of the job's rendezvous host with a fresh secret, handed
 * out through the job's bootstrap.  Each of its waits gets a quarter of
 * --timeout and it is killed at 0.8 times --timeout, before the job's own
 * ranks give up on this one.  Collective; ok: this rank can take part (no:
 * why not, "has no rail NIC: ..."), else none runs.  0: *run is this
 * rank's child (its output; pn_run_release it), ends[c->nranks] how every
 * rank's ended; 1 when it did not start (why: "rank R (node N) NO", or
 * rank 0's reason, on every rank); a negative errno when the job cannot
 * go on.
 */
struct pn_fresh_end {
	int32_t failed;
	int32_t killed;		/* by a signal, or at the deadline */
	char why[228];
};
struct pn_run;
int pn_check_fresh_job(struct pn_check *c, int ok, const char *no, const char *const *env,
		       const char *const *args, struct pn_run *run, struct pn_fresh_end *ends,
		       char *why, size_t wlen);
/*
 * The arguments every fresh allreduce-test of check ends with, appended to
 * argv from argv[n] (max entries in all, NULL-terminated): the sysfs root
 * the check reads, the job's --transport, then extra (NULL-terminated).
 * The new count, or -E2BIG when they do not fit.
 */
int pn_check_ar_argv_tail(const struct pn_check *c, const char **argv, int n, int max,
			  const char *const *extra);
/* The rank whose fresh child died or was killed (its end the cause, the
 * others' the effect), else the first that failed; -1 none. */
int pn_fresh_failed(const struct pn_fresh_end *ends, int n);

/*
 * This node's NCCL log for nccl-path without --nccl-log (check_ncclrun.c):
 * one small allreduce over the nccl plugin, one rank per GPU, with
 * NCCL_DEBUG=INFO into a private directory.  0 with the log in *buf
 * (malloc'ed, *len bytes), 1 when it cannot run here (why says why: no
 * plugin, fewer than 2 GPUs, the allreduce failed), or a negative errno.
 */
int pn_ncclpath_capture(struct pn_check *c, char **buf, size_t *len, char *why, size_t wlen);
/*
 * The job's NCCL log across nodes for nccl-path (check_ncclrun.c,
 * collective): the same debug variables in a fresh job of every rank
 * (pn_check_fresh_job), each rank's log (JOB_LOG_MAX, cut at a line) to
 * the first rank of its node through the job's bootstrap.  0 with, on a
 * node's first rank, its ranks' logs in *node (malloc'ed, *nlen bytes; may
 * be NULL when empty); 1 with why on every rank when it did not run or a
 * rank's allreduce failed (named); a negative errno.
 */
int pn_ncclpath_capture_job(struct pn_check *c, char **node, size_t *nlen, char *why,
			    size_t wlen);

/*
 * The CUDA driver API version (12040 for 12.4) the first GPU plugin of
 * list ("cuda,nccl") that reports one gives (its driver_version: the
 * driver's cuDriverGetVersion), asked in a child as every GPU call is
 * (check_ncclrun.c).  0 with *version; 1 when none could (why says why);
 * a negative errno only for what should stop the run.
 */
int pn_check_cuda_api(const char *list, double timeout, int *version, char *why, size_t wlen);

#endif
