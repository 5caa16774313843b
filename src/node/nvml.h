/* SPDX-License-Identifier: MIT */
/*
 * NVLink counts between GPUs, and the NVLink and PCIe traffic counters of
 * each GPU (for penny top), from NVML loaded at run time with dlopen: no
 * link-time dependency on the NVIDIA driver.  A missing libnvidia-ml, a
 * failing nvmlInit or GPUs NVML does not know simply give no NVLinks (the
 * topology then has PCIe classes only).  PENNY_NVML_LIB names another
 * library file (tests use a fake one): the command reads it and sets it
 * with pn_nvml_set_lib (this file reads no environment).
 */
#ifndef PENNY_NVML_H
#define PENNY_NVML_H

#include <stddef.h>
#include <stdint.h>

/*
 * For the n GPUs with the given PCI bus ids ("0000:07:00.0"), fill
 * links[i * n + j] with the number of NVLinks between GPU i and GPU j:
 * direct links (counted from both ends, the larger count wins) plus, when
 * both GPUs have links to NVSwitches, the smaller of their switch link
 * counts (so a fully switched HGX board gives NV18 everywhere, as
 * nvidia-smi shows).  The diagonal is 0.
 *
 * GPUs NVML does not know (other vendors, hidden ones) have no NVLinks.
 * Returns 0 when NVML answered for at least one GPU (links may still be all
 * zero), -ENOENT when NVML is not available (library missing, init failed,
 * none of the GPUs known), never another error.
 */
int pn_nvml_links(int n, const char *const *busids, int *links);

/*
 * The health of the n GPUs' NVLinks and P2P paths: up[i], down[i] the
 * NVLinks of GPU i NVML reports active and inactive (-1: NVML does not
 * know the GPU); p2p[(i * n + j) * 2 + k] the status of P2P reads (k 0)
 * and writes (k 1) from GPU i to GPU j (nvmlGpuP2PStatus_t: 0 OK; -1
 * unknown, also where this NVML lacks nvmlDeviceGetP2PStatus).  0, or
 * -ENOENT when NVML is not available or knows none of the GPUs.
 */
int pn_nvml_health(int n, const char *const *busids, int *up, int *down, int *p2p);
/* "OK", "chipset not supported", ..., "unknown" */
const char *pn_nvml_p2p_status(int status);

/*
 * The library file to open instead of libnvidia-ml.so.1 (PENNY_NVML_LIB as
 * the command read it; NULL or "": the driver's), for the whole process
 * like the sysfs root.  0, or -ENOMEM.
 */
int pn_nvml_set_lib(const char *path);

/*
 * PENNY_NVML_LIB is set: NVML is asked even for a replayed sysfs root (the
 * live NVML does not describe a captured machine; a test's fake one does).
 */
int pn_nvml_forced(void);

/*
 * NVLink count from an hwloc "NVLinkBandwidth" value in MB/s: hwloc counts
 * 20000 per NVLink 1.0 link and 25000 per later link.  Returns 0 when the
 * value matches neither.
 */
int pn_nvml_links_from_bw(unsigned long long mbps);

/*
 * A session for `penny top`'s GPU rows: NVML loaded and initialised once,
 * read at every sample.  pn_nvml_open() returns -ENOENT with a reason in why
 * (no library, no init, no GPUs), or -ENOMEM.
 */
#define PN_NVML_MAX_GPUS 64
struct pn_nvml;
int pn_nvml_open(struct pn_nvml **s, char *why, size_t len);
void pn_nvml_close(struct pn_nvml *s);
int pn_nvml_count(const struct pn_nvml *s);
/* GPU i (NVML's index): its name and PCI bus id ("0000:07:00.0"). */
int pn_nvml_gpu(struct pn_nvml *s, int i, char *name, size_t nlen, char *busid, size_t blen);

/* The traffic counters of one GPU, as nvmlDeviceGetFieldValues gives them. */
enum { PN_NVML_NVL_TX, PN_NVML_NVL_RX, PN_NVML_PCIE_TX, PN_NVML_PCIE_RX, PN_NVML_NCTR };
struct pn_nvml_ctr {
	/* cumulative: NVLINK_THROUGHPUT_DATA_TX/RX (fields 138, 139, all
	 * links: scope UINT_MAX) in KiB; PCIE_COUNT_TX/RX_BYTES (197, 198)
	 * in bytes */
	uint64_t value[PN_NVML_NCTR];
	int width[PN_NVML_NCTR];	/* bits of the value's NVML type; 0 not read */
	/* nvmlDeviceGetPcieThroughput TX, RX in KB/s over 20 ms; -1 not read */
	double pcie_KBps[2];
};
/* Read GPU i; pcie_sampled: where the PCIe counters are missing, sample the
 * throughput instead (it blocks 20 ms per direction).  0 or -ENOENT. */
int pn_nvml_read(struct pn_nvml *s, int i, struct pn_nvml_ctr *c, int pcie_sampled);

#endif
