#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# penny check's settings check on synthetic trees (tests/helpers/mksysfs.sh):
# ACS redirect on a switch port above a GPU or NIC (config space with the
# extended capability list), IOMMU domain types, GPUDirect RDMA readiness
# (nvidia_peermem, dma-buf), the memlock limit and /dev/shm; each a result
# of its own with PASS, FAIL or SKIP and the reason, and the keys that
# relax them.
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/helpers/mksysfs.sh"

# One PCIe switch (root port 00:01.0, upstream port 01:00.0) with a GPU and
# its NIC on downstream ports 02:00.0 and 02:01.0, read as root: config
# space with the extended capabilities, ACS present and off.
node() {
	sys_root "$1" n1
	sys_cpus 4 1
	PCI_NUMA=0 sys_switch 0x00
	sys_ib mlx5_0 0000:04:00.0
	sys_port mlx5_0 1 ACTIVE LinkUp "400 Gb/sec (4X NDR)" InfiniBand
	local b
	for b in 0000:00:01.0 0000:01:00.0 0000:02:00.0 0000:02:01.0; do sys_extcfg $b 0x0001; done
	sys_iommu 0000:03:00.0 7 identity
	sys_iommu 0000:04:00.0 8 identity
	sys_module nvidia 550.54.15
	sys_module nvidia_peermem
	printf '%s\n' 'Limit                     Soft Limit           Hard Limit           Units' \
		'Max open files            1048576              1048576              files' \
		'Max locked memory         unlimited            unlimited            bytes' \
		>"$1/proc/self-limits"
	mkdir -p "$1/proc/self" && mv "$1/proc/self-limits" "$1/proc/self/limits"
	printf '%s\n' 'sysfs /sys sysfs rw,nosuid,nodev,noexec,relatime 0 0' \
		'tmpfs /dev/shm tmpfs rw,nosuid,nodev,size=8388608k,inode64 0 0' >"$1/proc/mounts"
	echo 'MemTotal:       16384000 kB' >"$1/proc/meminfo"
	echo 6.8.0-45-generic >"$1/proc/sys/kernel/osrelease"
}
node ok >/dev/null
copy() { rm -rf "$2" && cp -a "$1" "$2"; }
# re-point the helper at another tree (same PCI layout)
at() { SYS_R=$1; }

# a result's verdict from the JSON document: verdict TARGET FILE
verdict() {
	python3 -c 'import json,sys
d = json.load(open(sys.argv[2]))
r = [x for x in d["results"] if x["check"] == "settings" and x["target"] == sys.argv[1]]
assert len(r) == 1, r
print(r[0]["verdict"], r[0]["measured_text"] if r[0]["measured"] is None else r[0]["measured"], "|", r[0]["detail"] or "", "|", r[0]["source"] or "")' "$@"
}

test_expect_success 'a node with every setting right passes each (exit 0)' '
	penny check --sysfs-root ok --only settings >out 2>err &&
	test ! -s err &&
	grep -q "^settings  *n1  *GPU0:acs  *off  *no redirect  *PASS" out &&
	grep -q "^settings  *n1  *mlx5_0:acs  *off  *no redirect  *PASS" out &&
	grep -q "^settings  *n1  *GPU0:iommu  *identity  *identity or none  *PASS" out &&
	grep -q "^settings  *n1  *gpudirect-rdma  *nvidia_peermem .*PASS" out &&
	grep -q "^settings  *n1  *memlock  *unlimited  *unlimited  *PASS" out &&
	grep -q "^settings  *n1  *dev-shm  *8 GiB  *1 GiB or more  *PASS" out &&
	grep -q "^7 passed, 0 failed, 0 skipped" out
'

test_expect_success 'ACS redirect on the switch port above the GPU fails, naming the bridge' '
	copy ok acs && at acs && sys_extcfg 0000:02:00.0 0x001d &&
	test_exit 1 penny check --sysfs-root acs --only settings --json >out.json &&
	verdict GPU0:acs out.json >v &&
	grep -q "^FAIL RR,CR,UF at 0000:02:00.0 |.*switch port 0000:02:00.0 above GPU0" v &&
	grep -q "| default: settings.acs = fail" v &&
	verdict mlx5_0:acs out.json | grep -q "^PASS off"
'

test_expect_success 'only request redirect is enough to fail; settings.acs = allow passes it, saying so' '
	copy ok acs1 && at acs1 && sys_extcfg 0000:02:01.0 0x0004 &&
	test_exit 1 penny check --sysfs-root acs1 --only settings --json >out.json &&
	verdict mlx5_0:acs out.json | grep -q "^FAIL RR at 0000:02:01.0" &&
	echo "settings.acs = allow" >allow.conf &&
	penny check --sysfs-root acs1 --only settings --config allow.conf --json >out.json &&
	verdict mlx5_0:acs out.json >v &&
	grep -q "^PASS RR at 0000:02:01.0 |.*(settings.acs = allow) | config: settings.acs" v
'

test_expect_success 'ACS on the root port is not judged (root ports route through the root complex)' '
	copy ok root && at root && sys_extcfg 0000:00:01.0 0x001d &&
	penny check --sysfs-root root --only settings >out &&
	grep -q "^settings  *n1  *GPU0:acs  *off .*PASS" out
'

test_expect_success 'a switch port without the ACS capability passes; a GPU without a switch passes' '
	copy ok noacs && at noacs && sys_extcfg 0000:02:00.0 &&
	penny check --sysfs-root noacs --only settings >out &&
	grep -q "^settings  *n1  *GPU0:acs  *off .*PASS" out &&
	node flat >/dev/null && at flat &&
	rm -rf flat/sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0 flat/sys/bus/pci/devices/* &&
	sys_bridge 0000:00:02.0 0x05 0x05 && sys_pci 0000:05:00.0 0x030200 0x10de 0x2335 0000:00:02.0 &&
	penny check --sysfs-root flat --only settings --json >out.json &&
	verdict GPU0:acs out.json | grep -q "^PASS no switch |.*crosses the root complex anyway"
'

test_expect_success 'a bus entry that is no link (its path unknown) SKIPs, not a PASS' '
	copy ok nolink && rm nolink/sys/bus/pci/devices/0000:03:00.0 &&
	cp -a "$(readlink -f ok/sys/bus/pci/devices/0000:03:00.0)" nolink/sys/bus/pci/devices/0000:03:00.0 &&
	penny check --sysfs-root nolink --only settings --json >out.json &&
	verdict GPU0:acs out.json | grep -q "^SKIP None | /sys/bus/pci/devices/0000:03:00.0 is no link"
'

test_expect_success 'config space without the extended part (an unprivileged read) SKIPs with the reason' '
	copy ok short && at short && head -c 256 "$(readlink -f short/sys/bus/pci/devices/0000:02:00.0)/config" >c &&
	cat c >"$(readlink -f short/sys/bus/pci/devices/0000:02:00.0)/config" &&
	penny check --sysfs-root short --only settings --json >out.json &&
	verdict GPU0:acs out.json | grep -q "^SKIP None | 0000:02:00.0/config is 256 bytes, without the extended space"
'

test_expect_success 'a capability list that loops ends (no hang), ACS not found' '
	copy ok loop && f=$(readlink -f loop/sys/bus/pci/devices/0000:02:00.0)/config &&
	python3 -c "import struct,sys
b = bytearray(open(sys.argv[1], \"rb\").read())
struct.pack_into(\"<I\", b, 0x100, 0x0001 | 1 << 16 | 0x100 << 20)
open(sys.argv[1], \"wb\").write(b)" "$f" &&
	timeout 10 "$PENNY" check --sysfs-root loop --only settings --json >out.json &&
	verdict GPU0:acs out.json | grep -q "^PASS off"
'

test_expect_success 'IOMMU: DMA-FQ translation fails (settings.iommu-dma = allow passes), no type SKIPs, vfio fails' '
	copy ok mmu && at mmu && sys_iommu 0000:03:00.0 7 DMA-FQ && sys_iommu 0000:04:00.0 8 - &&
	test_exit 1 penny check --sysfs-root mmu --only settings --json >out.json &&
	verdict GPU0:iommu out.json >v &&
	grep -q "^FAIL DMA-FQ | IOMMU group 7 translates DMA (DMA-FQ).*iommu=pt" v &&
	verdict mlx5_0:iommu out.json | grep -q "^SKIP None | IOMMU group 8: its type cannot be read" &&
	echo "settings.iommu-dma = allow" >a.conf &&
	penny check --sysfs-root mmu --only settings --config a.conf --json >out.json &&
	verdict GPU0:iommu out.json | grep -q "^PASS DMA-FQ" &&
	sys_iommu 0000:04:00.0 8 unmanaged &&
	test_exit 1 penny check --sysfs-root mmu --only settings --config a.conf --json >out.json &&
	verdict mlx5_0:iommu out.json | grep -q "^FAIL unmanaged | .*not a domain of the host"
'

test_expect_success 'IOMMU: no IOMMU at all passes as untranslated' '
	copy ok nommu && rm -rf nommu/sys/kernel/iommu_groups nommu/sys/class/iommu &&
	find nommu/sys/devices -name iommu_group -delete &&
	penny check --sysfs-root nommu --only settings --json >out.json &&
	verdict GPU0:iommu out.json | grep -q "^PASS no IOMMU"
'

test_expect_success 'GPUDirect RDMA: no peermem fails unless dma-buf (open module >= 515, Linux >= 5.12)' '
	copy ok gdr && rm -rf gdr/sys/module/nvidia_peermem &&
	test_exit 1 penny check --sysfs-root gdr --only settings --json >out.json &&
	verdict gpudirect-rdma out.json >v &&
	grep -q "^FAIL no peermem, driver 550.54.15 | no nvidia_peermem module, and no dma-buf (not the open kernel module).*modprobe nvidia_peermem" v &&
	mkdir -p gdr/proc/driver/nvidia &&
	echo "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  550.54.15  Release Build  (dvs-builder@U16)  Tue Mar  5 22:15:33 UTC 2024" >gdr/proc/driver/nvidia/version &&
	penny check --sysfs-root gdr --only settings --json >out.json &&
	verdict gpudirect-rdma out.json | grep -q "^PASS dma-buf | .*open kernel module 550.54.15 on Linux 6.8.0-45-generic" &&
	echo 5.4.0-150-generic >gdr/proc/sys/kernel/osrelease &&
	test_exit 1 penny check --sysfs-root gdr --only settings --json >out.json &&
	verdict gpudirect-rdma out.json | grep -q "^FAIL .*(Linux before 5.12)" &&
	echo "settings.gpudirect-rdma = allow" >g.conf &&
	penny check --sysfs-root gdr --only settings --config g.conf --json >out.json &&
	verdict gpudirect-rdma out.json | grep -q "^PASS .*(settings.gpudirect-rdma = allow)"
'

test_expect_success 'GPUDirect RDMA: the older nv_peer_mem passes; no driver fails; no NIC SKIPs (memlock too)' '
	copy ok gdr2 && rm -rf gdr2/sys/module/nvidia_peermem && mkdir gdr2/sys/module/nv_peer_mem &&
	penny check --sysfs-root gdr2 --only settings --json >out.json &&
	verdict gpudirect-rdma out.json | grep -q "^PASS nv_peer_mem" &&
	rm -rf gdr2/sys/module/nv_peer_mem gdr2/sys/module/nvidia &&
	test_exit 1 penny check --sysfs-root gdr2 --only settings --json >out.json &&
	verdict gpudirect-rdma out.json | grep -q "^FAIL no driver | the NVIDIA driver is not loaded" &&
	rm -rf gdr2/sys/class/infiniband/mlx5_0 &&
	sed -i "s/^Max locked memory .*/Max locked memory  65536  65536  bytes/" gdr2/proc/self/limits &&
	penny check --sysfs-root gdr2 --only settings --json >out.json &&
	verdict gpudirect-rdma out.json | grep -q "^SKIP None | no RDMA NIC on PCI" &&
	verdict memlock out.json | grep -q "^SKIP None | no RDMA device"
'

test_expect_success 'memlock: a limit fails, settings.memlock-min relaxes it, no file SKIPs' '
	copy ok ml && sed -i "s/^Max locked memory .*/Max locked memory         65536                65536                bytes/" ml/proc/self/limits &&
	test_exit 1 penny check --sysfs-root ml --only settings --json >out.json &&
	verdict memlock out.json | grep -q "^FAIL 64 KiB | .*RLIMIT_MEMLOCK.*is 64 KiB.*| default: unlimited" &&
	echo "settings.memlock-min = 65536" >m.conf &&
	penny check --sysfs-root ml --only settings --config m.conf --json >out.json &&
	verdict memlock out.json | grep -q "^PASS 64 KiB .*| config: settings.memlock-min" &&
	echo "settings.memlock-min = 65537" >m.conf &&
	test_exit 1 penny check --sysfs-root ml --only settings --config m.conf >/dev/null &&
	rm ml/proc/self/limits &&
	test_exit 1 penny check --sysfs-root ml --only settings --config m.conf --json >out.json || true &&
	penny check --sysfs-root ml --only settings --json >out.json &&
	verdict memlock out.json | grep -q "^SKIP None | /proc/self/limits cannot be read"
'

test_expect_success '/dev/shm: 64 MiB fails, settings.shm-min relaxes, no size= is half the memory, none SKIPs' '
	copy ok shm && sed -i "s/size=8388608k/size=64m/" shm/proc/mounts &&
	test_exit 1 penny check --sysfs-root shm --only settings --json >out.json &&
	verdict dev-shm out.json | grep -q "^FAIL 64 MiB | /dev/shm holds 64 MiB.*--shm-size" &&
	echo "settings.shm-min = 67108864" >s.conf &&
	penny check --sysfs-root shm --only settings --config s.conf >/dev/null &&
	sed -i "s/,size=64m//" shm/proc/mounts &&
	penny check --sysfs-root shm --only settings --json >out.json &&
	verdict dev-shm out.json | grep -q "^PASS 8000 MiB" &&
	echo "none /dev/shm tmpfs rw,size=1k 0 0" >>shm/proc/mounts &&
	test_exit 1 penny check --sysfs-root shm --only settings --json >out.json &&
	verdict dev-shm out.json | grep -q "^FAIL 1 KiB" &&
	echo "shm /dev/shm ext4 rw 0 0" >shm/proc/mounts &&
	test_exit 1 penny check --sysfs-root shm --only settings --json >out.json &&
	verdict dev-shm out.json | grep -q "^FAIL ext4 | /dev/shm is ext4, not tmpfs" &&
	echo "sysfs /sys sysfs rw 0 0" >shm/proc/mounts &&
	penny check --sysfs-root shm --only settings --json >out.json &&
	verdict dev-shm out.json | grep -q "^SKIP None | nothing is mounted at /dev/shm"
'

test_expect_success 'a /proc/mounts past the 1 MiB bound is read to it only, no hang' '
	copy ok big && python3 -c "import sys; open(sys.argv[1], \"w\").write((\"x /mnt/\" + \"a\" * 100 + \" tmpfs rw 0 0\\n\") * 12000)" big/proc/mounts &&
	echo "tmpfs /dev/shm tmpfs rw,size=8g 0 0" >>big/proc/mounts &&
	timeout 20 "$PENNY" check --sysfs-root big --only settings --json >out.json &&
	verdict dev-shm out.json | grep -q "^SKIP None | nothing is mounted at /dev/shm"
'

test_expect_success 'bad key values are refused (exit 2)' '
	echo "settings.acs = maybe" >bad.conf &&
	test_exit 2 penny check --sysfs-root ok --only settings --config bad.conf 2>err &&
	grep -q "settings.acs must be one of fail allow" err &&
	echo "settings.shm-min = -1" >bad.conf &&
	test_exit 2 penny check --sysfs-root ok --only settings --config bad.conf 2>err &&
	grep -q "settings.shm-min must be" err
'

test_done
