/* SPDX-License-Identifier: MIT */
/*
 * Fuzz harness: what the settings check of penny check reads: PCI config
 * space (the extended capability walk for ACS), /proc/self/limits,
 * /proc/mounts and version strings.  The first byte picks the parser
 * (mod 4), the rest is the input.
 */
#include "fuzz.h"

#include "harness/check_settings.h"
#include "node/pcie.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char buf[512], ver[32], fstype[40];
	const char *s = (const char *)data + 1;
	struct pn_pcie_acs a;
	size_t n = size ? size - 1 : 0;
	uint64_t v;
	int x, y, off;

	if (!size)
		return 0;
	switch (data[0] % 4) {
	case 0:
		off = pn_pcie_ext_cap(data + 1, n, PN_PCIE_EXT_CAP_ACS);
		FUZZ_ASSERT(off == -1 || (off >= 0x100 && (size_t)off + 4 <= n));
		if (!pn_pcie_parse_acs(data + 1, n, &a) && a.present)
			FUZZ_ASSERT(off >= 0 && (size_t)off + 8 <= n);
		pn_pcie_acs_bits(a.ctrl, buf, sizeof(buf));
		break;
	case 1:
		pn_settings_memlock(s, n, &v);
		break;
	case 2:
		if (!pn_settings_mount_size(s, n, "/dev/shm", &v, fstype, sizeof(fstype)))
			FUZZ_ASSERT(memchr(fstype, 0, sizeof(fstype)));
		break;
	default:
		if (n >= sizeof(buf))
			n = sizeof(buf) - 1;
		memcpy(buf, s, n);
		buf[n] = 0;
		pn_settings_version(buf, &x, &y);
		if (!pn_settings_nvidia_proc(buf, ver, sizeof(ver), &x))
			FUZZ_ASSERT(ver[0] && memchr(ver, 0, sizeof(ver)));
		break;
	}
	return 0;
}
