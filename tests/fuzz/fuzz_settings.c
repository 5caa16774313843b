/* SPDX-License-Identifier: MIT */
/*
 * Fuzz harness: what the settings check of penny check reads: PCI config
 * space (the extended capability walk for ACS: a malformed list is refused,
 * never walked into a PASS), /proc/self/limits and /proc/meminfo's
 * MemTotal, /proc/mounts (read whole: a size=0 tmpfs is unlimited) and
 * version strings.  The first byte picks the parser (mod 4), the rest is
 * the input.
 */
#include "fuzz.h"

#include <errno.h>

#include "check/check_settings.h"
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
		FUZZ_ASSERT(off == -ENOENT || off == -EBADMSG ||
			    (off >= 0x100 && off % 4 == 0 && (size_t)off + 4 <= n));
		x = pn_pcie_parse_acs(data + 1, n, &a);
		FUZZ_ASSERT(x == 0 || x == -ENODATA || x == -EBADMSG);
		/* judged only whole (4096 bytes), from a function that answers */
		if (!x)
			FUZZ_ASSERT(n == 4096 && (data[1] != 0xff || data[2] != 0xff));
		if (!x && a.present)
			FUZZ_ASSERT(off >= 0 && (size_t)off + 8 <= n);
		if (x)
			FUZZ_ASSERT(!a.present);
		pn_pcie_acs_bits(a.ctrl, buf, sizeof(buf));
		break;
	case 1:
		pn_settings_memlock(s, n, &v);
		x = pn_settings_memtotal(s, n, &v);
		FUZZ_ASSERT(x == 0 || x == -ENOENT || x == -EINVAL || x == -ERANGE);
		if (!x)
			FUZZ_ASSERT(v >= (1u << 20) && v <= (1ull << 54) && v % 1024 == 0);
		break;
	case 2:
		x = pn_settings_mount_size(s, n, "/dev/shm", &v, fstype, sizeof(fstype));
		FUZZ_ASSERT(x == 0 || x == -ENOENT || x == -EINVAL);
		if (!x)
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
