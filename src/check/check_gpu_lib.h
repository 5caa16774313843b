/* SPDX-License-Identifier: MIT */
/*
 * What the GPU checks of `penny check` (gpu-copy in check_gpu.c, allreduce
 * in check_ar.c) share (check_gpu_lib.c), pure where it can be so that the unit test
 * (tests/unit/t_checkgpu.c) checks the expectation math: the rates the
 * topology promises (a PCIe path, an NVLink bond, ring-plan's predicted
 * busbw of the node) and the child process every GPU measurement runs in.
 *
 * Why a child: the CUDA driver cannot be used in a process forked after it
 * was initialised, and the allreduce forks one rank per GPU; a plugin that
 * crashes or hangs also takes only the child with it (killed at the run's
 * timeout), never the check.
 */
#ifndef PENNY_CHECK_GPU_LIB_H
#define PENNY_CHECK_GPU_LIB_H

#include <stddef.h>
#include <stdint.h>

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

#endif
