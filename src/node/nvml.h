/* SPDX-License-Identifier: MIT */
/*
 * NVLink counts between GPUs from NVML, loaded at run time with dlopen: no
 * link-time dependency on the NVIDIA driver.  A missing libnvidia-ml, a
 * failing nvmlInit or GPUs NVML does not know simply give no NVLinks (the
 * topology then has PCIe classes only).  PENNY_NVML_LIB names another
 * library file (tests use a fake one).
 */
#ifndef PENNY_NVML_H
#define PENNY_NVML_H

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

#endif
