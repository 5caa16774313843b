/* SPDX-License-Identifier: MIT */
/*
 * The settings check's NVLink and P2P rows (check_p2p.h): from NVML
 * loaded at run time (node/nvml.h), for the node's NVIDIA GPUs:
 *   GPUn:nvlink     the GPU's NVLinks NVML knows, up and down: a link
 *                   down FAILs (NCCL routes around it, slower);
 *   GPUa-GPUb:p2p   P2P read and write between the two, both ways: a
 *                   status other than OK FAILs with NVML's reason.
 * No NVML (no library, no driver), or a replayed tree without
 * PENNY_NVML_LIB (the live NVML does not describe it): one SKIP.
 */
#define _GNU_SOURCE
#include "check/check_p2p.h"
#include "check/check_row.h"
#include "check/check_settings.h"
#include "base/log.h"
#include "base/verdict.h"
#include "node/nvml.h"
#include "node/sysfs.h"
#include "node/topo.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NVIDIA_VENDOR 0x10de

static int nvlink_row(struct pn_check *c, const char *gpu, int up, int down)
{
	char tg[PN_VERDICT_NAME], meas[PN_VERDICT_VAL], det[PN_VERDICT_DETAIL];
	char src[PN_VERDICT_SOURCE];

	snprintf(tg, sizeof(tg), "%s:nvlink", gpu);
	if (up < 0)
		return pn_settings_add(c, tg, PN_SKIP, NULL, NULL, NULL, "NVML does not know this GPU");
	snprintf(meas, sizeof(meas), "%d up, %d down", up, down);
	if (!down) {
		snprintf(det, sizeof(det), up ? "every NVLink NVML reports is up"
					       : "no NVLink (NVML reports none)");
		return pn_settings_add(c, tg, PN_PASS, meas, "none down", "default: NVML", det);
	}
	snprintf(det, sizeof(det), "%d of the GPU's %d NVLinks are down: P2P and NCCL's rings "
		 "over them lose bandwidth or fall back to PCIe; nvidia-smi nvlink -s, then "
		 "reset or service the GPU", down, up + down);
	return pn_settings_add(c, tg, pn_settings_allowed(c, "settings.nvlink-down", det,
							  sizeof(det), src, sizeof(src)),
			       meas, "none down", src, det);
}

/* One pair, both directions: "" and 1 when every status is OK. */
static int p2p_row(struct pn_check *c, const char *a, const char *b, const int *st)
{
	char tg[PN_VERDICT_NAME], meas[PN_VERDICT_VAL], det[PN_VERDICT_DETAIL] = "";
	char src[PN_VERDICT_SOURCE];
	static const char *const what[2] = { "read", "write" };
	int k, bad = 0, unknown = 0;
	size_t n;

	snprintf(tg, sizeof(tg), "%s-%s:p2p", a, b);
	for (k = 0; k < 4; k++) {
		if (st[k] < 0) {
			unknown++;
			continue;
		}
		if (!st[k])
			continue;
		n = strlen(det);
		snprintf(det + n, sizeof(det) - n, "%s%s %s->%s: %s", bad ? ", " : "", what[k & 1],
			 k < 2 ? a : b, k < 2 ? b : a, pn_nvml_p2p_status(st[k]));
		bad++;
	}
	if (unknown == 4)
		return pn_settings_add(c, tg, PN_SKIP, NULL, NULL, NULL,
				       "NVML gives no P2P status (nvmlDeviceGetP2PStatus)");
	if (!bad) {
		snprintf(meas, sizeof(meas), "read+write");
		return pn_settings_add(c, tg, PN_PASS, meas, "read+write", "default: NVML",
				       "P2P reads and writes both ways");
	}
	snprintf(meas, sizeof(meas), "%d not OK", bad);
	n = strlen(det);
	snprintf(det + n, sizeof(det) - n, ": NCCL copies through host memory (SHM) between "
		 "them; see the ACS and IOMMU rows, the BIOS, NCCL_P2P_LEVEL");
	return pn_settings_add(c, tg, pn_settings_allowed(c, "settings.p2p", det, sizeof(det), src,
							  sizeof(src)),
			       meas, "read+write", src, det);
}

int pn_settings_nvlink_p2p(struct pn_check *c)
{
	const struct pn_topo *t = c->topo;
	const char **busids;
	int *idx, *up, *down, *p2p, n = 0, i, j, ret;

	for (i = 0; i < t->ngpus; i++)
		n += t->devs[i].vendor_id == NVIDIA_VENDOR && t->devs[i].pci_busid[0];
	if (!n)
		return pn_settings_add(c, "nvlink-p2p", PN_SKIP, NULL, NULL, NULL,
				       "no NVIDIA GPU on PCI");
	if (!pn_sysfs_is_live() && !pn_nvml_forced())
		return pn_settings_add(c, "nvlink-p2p", PN_SKIP, NULL, NULL, NULL,
				       "a captured tree: the live NVML does not describe it");
	busids = calloc((size_t)n, sizeof(*busids));
	idx = calloc((size_t)n, sizeof(*idx));
	up = calloc((size_t)n, sizeof(*up));
	down = calloc((size_t)n, sizeof(*down));
	p2p = calloc((size_t)n * (size_t)n * 2, sizeof(*p2p));
	if (!busids || !idx || !up || !down || !p2p) {
		ret = pn_err(-ENOMEM, "out of memory");
		goto out;
	}
	for (i = j = 0; i < t->ngpus; i++)
		if (t->devs[i].vendor_id == NVIDIA_VENDOR && t->devs[i].pci_busid[0]) {
			idx[j] = i;
			busids[j++] = t->devs[i].pci_busid;
		}
	if (pn_nvml_health(n, busids, up, down, p2p)) {
		ret = pn_settings_add(c, "nvlink-p2p", PN_SKIP, NULL, NULL, NULL,
				      "no NVML (libnvidia-ml.so.1 missing, or it did not initialise "
				      "or knows none of the GPUs)");
		goto out;
	}
	ret = 0;
	for (i = 0; !ret && i < n; i++)
		ret = nvlink_row(c, t->devs[idx[i]].name, up[i], down[i]);
	for (i = 0; !ret && i < n; i++)
		for (j = i + 1; !ret && j < n; j++) {
			int st[4] = { p2p[(i * n + j) * 2], p2p[(i * n + j) * 2 + 1],
				      p2p[(j * n + i) * 2], p2p[(j * n + i) * 2 + 1] };

			ret = p2p_row(c, t->devs[idx[i]].name, t->devs[idx[j]].name, st);
		}
out:
	free(busids);
	free(idx);
	free(up);
	free(down);
	free(p2p);
	return ret;
}
