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

# fails FILE: the results of FILE (a --json document) that did not pass, a
# line each, to the log (a case that failed once in CI on a loaded machine
# said only "1 check result failed")
fails() {
	python3 -c 'import json,sys
for x in json.load(open(sys.argv[1]))["results"]:
    if x["verdict"] not in ("PASS", "SKIP"):
        print("#  ", x["check"], x["target"], x["verdict"], x["measured_text"], "|", x["detail"])' "$1"
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
	grep -q "^settings  *n1  *nvidia-driver  *550.54.15  *loaded  *PASS" out &&
	grep -q "^settings  *n1  *GPU0:pci-path  *pci0000:00 +4  *a root bus  *PASS" out &&
	grep -q "^settings  *n1  *fabric-manager .*SKIP  no NVSwitch" out &&
	grep -q "^settings  *n1  *imex .*SKIP  not a multi-node NVLink system" out &&
	grep -q "^settings  *n1  *roce .*SKIP  no RoCE port" out &&
	grep -q "^settings  *n1  *nvlink-p2p .*SKIP  a captured tree" out &&
	grep -q "^10 passed, 0 failed, 4 skipped" out
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
	test_exit 1 penny check --sysfs-root nolink --only settings --json >out.json &&
	verdict GPU0:acs out.json | grep -q "^SKIP None | /sys/bus/pci/devices/0000:03:00.0 is no link"
'

test_expect_success 'config space without the extended part (an unprivileged read) SKIPs with the reason' '
	copy ok short && at short && head -c 256 "$(readlink -f short/sys/bus/pci/devices/0000:02:00.0)/config" >c &&
	cat c >"$(readlink -f short/sys/bus/pci/devices/0000:02:00.0)/config" &&
	penny check --sysfs-root short --only settings --json >out.json &&
	verdict GPU0:acs out.json | grep -q "^SKIP None | 0000:02:00.0/config is 256 bytes, without the extended space"
'

test_expect_success 'a capability list that loops ends (no hang) and SKIPs, naming the loop' '
	copy ok loop && f=$(readlink -f loop/sys/bus/pci/devices/0000:02:00.0)/config &&
	python3 -c "import struct,sys
b = bytearray(open(sys.argv[1], \"rb\").read())
struct.pack_into(\"<I\", b, 0x100, 0x0001 | 1 << 16 | 0x100 << 20)
open(sys.argv[1], \"wb\").write(b)" "$f" &&
	timeout 10 "$PENNY" check --sysfs-root loop --only settings --json >out.json &&
	verdict GPU0:acs out.json | grep -q "^SKIP None | .*0000:02:00.0/config .*loops (0x100 points back to 0x100)"
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
	verdict nvidia-driver out.json | grep -q "^FAIL none | NVIDIA GPUs, but neither /proc/driver/nvidia/version" &&
	rm -rf gdr2/sys/class/infiniband/mlx5_0 &&
	sed -i "s/^Max locked memory .*/Max locked memory  65536  65536  bytes/" gdr2/proc/self/limits &&
	test_exit 1 penny check --sysfs-root gdr2 --only settings --json >out.json &&
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
	penny check --sysfs-root ml --only settings --config m.conf --json >out.json &&
	verdict memlock out.json | grep -q "^SKIP None | /proc/self/limits cannot be read" &&
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

test_expect_success 'a /proc/mounts past 1 MiB is read whole (the line after the mark found), no hang' '
	copy ok big && python3 -c "import sys; open(sys.argv[1], \"w\").write((\"x /mnt/\" + \"a\" * 100 + \" tmpfs rw 0 0\\n\") * 12000)" big/proc/mounts &&
	echo "tmpfs /dev/shm tmpfs rw,size=8g 0 0" >>big/proc/mounts &&
	timeout 20 "$PENNY" check --sysfs-root big --only settings --json >out.json &&
	verdict dev-shm out.json | grep -q "^PASS 8 GiB"
'

test_expect_success 'fabric manager: NVSwitches without it fail; its process or unit passes; allow' '
	copy ok fm && mkdir -p fm/dev && : >fm/dev/nvidia-nvswitch0 &&
	: >fm/dev/nvidia-nvswitchctl &&
	test_exit 1 penny check --sysfs-root fm --only settings --json >out.json &&
	verdict fabric-manager out.json | grep -q "^FAIL not running | 1 /dev/nvidia-nvswitch, but no nv-fabricmanager process.*systemctl start nvidia-fabricmanager" &&
	mkdir -p fm/proc/4242 && echo nv-fabricmanage >fm/proc/4242/comm &&
	penny check --sysfs-root fm --only settings --json >out.json &&
	verdict fabric-manager out.json | grep -q "^PASS running | .*process nv-fabricmanager" &&
	rm -r fm/proc/4242 && mkdir -p fm/run/systemd/units &&
	ln -s 0123abcd fm/run/systemd/units/invocation:nvidia-fabricmanager.service &&
	penny check --sysfs-root fm --only settings --json >out.json &&
	verdict fabric-manager out.json | grep -q "^PASS running | .*unit nvidia-fabricmanager.service active" &&
	rm -r fm/run fm/dev &&
	penny check --sysfs-root fm --only settings --json >out.json &&
	verdict fabric-manager out.json | grep -q "^SKIP" &&
	at fm && PCI_NUMA=0 sys_pci 0000:05:00.0 0x068000 0x10de 0x22a3 &&
	test_exit 1 penny check --sysfs-root fm --only settings --json >out.json &&
	verdict fabric-manager out.json | grep -q "^FAIL not running | 1 NVIDIA PCI bridge (class 0x0680)" &&
	echo "settings.fabric-manager = allow" >f.conf &&
	penny check --sysfs-root fm --only settings --config f.conf --json >out.json &&
	verdict fabric-manager out.json | grep -q "^PASS not running .*(settings.fabric-manager = allow)"
'

test_expect_success 'IMEX: node list, daemon and channel0 each fail with the reason; a right one passes' '
	copy ok mx && mkdir -p mx/etc/nvidia-imex &&
	test_exit 1 penny check --sysfs-root mx --only settings --json >out.json &&
	verdict imex-nodes out.json | grep -q "^FAIL missing | /etc/nvidia-imex/nodes_config.cfg cannot be read" &&
	verdict imex-service out.json | grep -q "^FAIL not running | no nvidia-imex process" &&
	verdict imex-channel out.json | grep -q "^FAIL missing | no /dev/nvidia-caps-imex-channels/channel0" &&
	printf "# nodes\n\n   \n" >mx/etc/nvidia-imex/nodes_config.cfg &&
	test_exit 1 penny check --sysfs-root mx --only settings --json >out.json &&
	verdict imex-nodes out.json | grep -q "^FAIL 0 nodes | .*names no node" &&
	printf "# nodes\n10.0.0.1\n 10.0.0.2\n" >mx/etc/nvidia-imex/nodes_config.cfg &&
	mkdir -p mx/proc/77 mx/dev/nvidia-caps-imex-channels && echo nvidia-imex >mx/proc/77/comm &&
	: >mx/dev/nvidia-caps-imex-channels/channel0 && chmod 0600 mx/dev/nvidia-caps-imex-channels/channel0 &&
	test_exit 1 penny check --sysfs-root mx --only settings --json >out.json &&
	verdict imex-nodes out.json | grep -q "^PASS 2 nodes" &&
	verdict imex-service out.json | grep -q "^PASS running" &&
	verdict imex-channel out.json | grep -q "^FAIL 0600 0:0 | any user (penny runs as root) cannot open" &&
	echo "settings.job-uid = 0" >u.conf &&
	penny check --sysfs-root mx --only settings --config u.conf --json >out.json &&
	verdict imex-channel out.json | grep -q "^PASS 0600 0:0 | uid 0 (settings.job-uid) can open" &&
	chmod 0666 mx/dev/nvidia-caps-imex-channels/channel0 &&
	penny check --sysfs-root mx --only settings --json >out.json &&
	verdict imex-channel out.json | grep -q "^PASS 0666" &&
	rm mx/dev/nvidia-caps-imex-channels/channel0 && mkfifo mx/dev/nvidia-caps-imex-channels/channel0 &&
	test_exit 1 timeout 10 "$PENNY" check --sysfs-root mx --only settings --json >out.json &&
	verdict imex-channel out.json | grep -q "^FAIL not a device" &&
	echo "settings.imex = allow" >i.conf &&
	penny check --sysfs-root mx --only settings --config i.conf --json >out.json &&
	verdict imex-channel out.json | grep -q "^PASS not a device .*(settings.imex = allow)" &&
	echo "settings.job-uid = -1" >bad.conf &&
	test_exit 2 penny check --sysfs-root mx --only settings --config bad.conf 2>err &&
	grep -q "settings.job-uid must be" err
'

# A RoCE port: mlx5_1 on the GPU switch, netdev eth1, its GIDs and ECN.
roce() {
	copy ok "$1" && at "$1" &&
	PCI_NUMA=0 sys_pci 0000:06:00.0 0x020000 0x15b3 0x1021 &&
	sys_ib mlx5_1 0000:06:00.0 && sys_net eth1 0000:06:00.0 &&
	sys_port mlx5_1 1 ACTIVE LinkUp "200 Gb/sec (4X HDR)" Ethernet &&
	sys_gid mlx5_1 1 0 fe80:0000:0000:0000:0000:00ff:fe00:0001 "IB/RoCE v1" eth1 &&
	sys_gid mlx5_1 1 1 fe80:0000:0000:0000:0000:00ff:fe00:0001 "RoCE v2" eth1
}

test_expect_success 'RoCE: no v2 GID fails (settings.roce-v1 = allow); ECN np and rp on one priority' '
	roce rc && mkdir -p rc/sys/class/net/eth1/ecn/roce_np/enable rc/sys/class/net/eth1/ecn/roce_rp/enable &&
	for p in 0 1 2 3 4 5 6 7; do echo 0 >rc/sys/class/net/eth1/ecn/roce_np/enable/$p; echo 0 >rc/sys/class/net/eth1/ecn/roce_rp/enable/$p; done &&
	echo 1 >rc/sys/class/net/eth1/ecn/roce_np/enable/3 && echo 1 >rc/sys/class/net/eth1/ecn/roce_rp/enable/3 &&
	penny check --sysfs-root rc --only settings --json >out.json &&
	verdict mlx5_1/1:roce-gid out.json | grep -q "^PASS 1 RoCE v2 | first RoCE v2 GID at index 1 (1 v1)" &&
	verdict mlx5_1/1:ecn out.json | grep -q "^PASS np 3, rp 3" &&
	echo 0 >rc/sys/class/net/eth1/ecn/roce_rp/enable/3 && echo 1 >rc/sys/class/net/eth1/ecn/roce_rp/enable/5 &&
	test_exit 1 penny check --sysfs-root rc --only settings --json >out.json &&
	verdict mlx5_1/1:ecn out.json | grep -q "^FAIL np 3, rp 5 | eth1: ECN notification" &&
	echo "IB/RoCE v1" >rc/sys/class/infiniband/mlx5_1/ports/1/gid_attrs/types/1 &&
	test_exit 1 penny check --sysfs-root rc --only settings --json >out.json &&
	verdict mlx5_1/1:roce-gid out.json | grep -q "^FAIL 2 v1, no v2 | RoCE port with no RoCE v2 GID" &&
	printf "settings.roce-v1 = allow\nsettings.roce-ecn = allow\n" >r.conf &&
	penny check --sysfs-root rc --only settings --config r.conf --json >out.json &&
	verdict mlx5_1/1:roce-gid out.json | grep -q "^PASS 2 v1, no v2 .*(settings.roce-v1 = allow)" &&
	rm -r rc/sys/class/net/eth1/ecn &&
	penny check --sysfs-root rc --only settings --config r.conf --json >out.json &&
	verdict mlx5_1/1:ecn out.json | grep -q "^SKIP None | not exposed in sysfs (no /sys/class/net/eth1/ecn/roce_np" &&
	penny check --sysfs-root rc --only settings --config r.conf -d mlx5_0 --json >out.json &&
	verdict roce out.json | grep -q "^SKIP None | no RoCE port"
'

test_expect_success 'RoCE: PFC on an ECN priority, the trust state (qos/pfc, qos/trust); settings.roce-pfc' '
	roce pf && q=pf/sys/class/net/eth1 && mkdir -p $q/ecn/roce_np/enable $q/ecn/roce_rp/enable $q/qos &&
	for p in 0 1 2 3 4 5 6 7; do echo 0 >$q/ecn/roce_np/enable/$p; echo 0 >$q/ecn/roce_rp/enable/$p; done &&
	echo 1 >$q/ecn/roce_np/enable/3 && echo 1 >$q/ecn/roce_rp/enable/3 &&
	{ penny check --sysfs-root pf --only settings --json >out.json || { fails out.json; false; }; } &&
	verdict mlx5_1/1:pfc out.json | grep -q "^SKIP None | not exposed in sysfs (no /sys/class/net/eth1/qos/pfc" &&
	echo 0,0,0,1,0,0,0,0 >$q/qos/pfc && echo dscp >$q/qos/trust &&
	{ penny check --sysfs-root pf --only settings --json >out.json || { fails out.json; false; }; } &&
	verdict mlx5_1/1:pfc out.json | grep -q "^PASS pfc 3, trust dscp | eth1: lossless priority 3 with ECN, trust dscp | default: RoCE$" &&
	printf "priority 0 1 2 3 4 5 6 7\nenabled 0 0 0 0 1 0 0 0\n" >$q/qos/pfc && echo pcp >$q/qos/trust &&
	test_exit 1 penny check --sysfs-root pf --only settings --json >out.json &&
	verdict mlx5_1/1:pfc out.json | grep -q "^FAIL pfc 4, trust pcp | eth1: PFC on priority 4, ECN on 3: the RoCE traffic.s priority needs both" &&
	echo "0 0 0 0 0 0 0 0" >$q/qos/pfc &&
	test_exit 1 penny check --sysfs-root pf --only settings --json --junit j.xml --prom p.prom >out.json &&
	verdict mlx5_1/1:pfc out.json | grep -q "^FAIL pfc none, trust pcp | eth1: PFC is on for no priority: RoCE is lossy" &&
	python3 -c "import sys, xml.etree.ElementTree as E
c = [t for t in E.parse(\"j.xml\").iter(\"testcase\") if \"mlx5_1/1:pfc\" in t.get(\"name\")]
assert len(c) == 1 and c[0].find(\"failure\") is not None, c" &&
	grep "^penny_check_result{.*target=\"mlx5_1/1:pfc\".*} 0$" p.prom &&
	echo "settings.roce-pfc = allow" >p.conf &&
	{ penny check --sysfs-root pf --only settings --config p.conf --json >out.json || { fails out.json; false; }; } &&
	verdict mlx5_1/1:pfc out.json | grep -q "^PASS pfc none.*(settings.roce-pfc = allow)" &&
	rm -r $q/ecn && echo 0,0,0,1,0,0,0,0 >$q/qos/pfc && rm $q/qos/trust &&
	{ penny check --sysfs-root pf --only settings --json >out.json || { fails out.json; false; }; } &&
	verdict mlx5_1/1:pfc out.json | grep -q "^PASS pfc 3, trust ? | eth1: lossless priority 3 | default: RoCE$" &&
	for bad in "0,0,0,1" "0,0,0,1,0,0,0,0,1" "0,0,2,1,0,0,0,0" "10,0,0,1,0,0,0,0" "enabled" ""; do
		printf "%s\n" "$bad" >$q/qos/pfc &&
		penny check --sysfs-root pf --only settings --json >out.json &&
		verdict mlx5_1/1:pfc out.json | grep -q "^SKIP None | /sys/class/net/eth1/qos/pfc: not eight 0/1 values" || return 1
	done &&
	python3 -c "print(\"0,\" * 500000 + \"0\")" >$q/qos/pfc &&
	penny check --sysfs-root pf --only settings --json >out.json &&
	verdict mlx5_1/1:pfc out.json | grep -q "^SKIP None | /sys/class/net/eth1/qos/pfc: not eight 0/1 values" &&
	rm $q/qos/pfc && mkdir $q/qos/pfc &&
	penny check --sysfs-root pf --only settings --json >out.json &&
	verdict mlx5_1/1:pfc out.json | grep -q "^SKIP None | /sys/class/net/eth1/qos/pfc: " &&
	rmdir $q/qos/pfc && mkfifo $q/qos/pfc &&
	timeout 10 "$PENNY" check --sysfs-root pf --only settings --json >out.json &&
	verdict mlx5_1/1:pfc out.json | grep -q "^SKIP None | /sys/class/net/eth1/qos/pfc: " &&
	rm $q/qos/pfc && ln -s /dev/zero $q/qos/pfc &&
	timeout 10 "$PENNY" check --sysfs-root pf --only settings --json >out.json &&
	verdict mlx5_1/1:pfc out.json | grep -q "^SKIP None | not exposed in sysfs"
'

test_expect_success 'a container /sys that hides the PCI tree is named: dangling link, no root bus' '
	copy ok ct && ln -sfn ../../../devices/pci0000:00/0000:00:09.0/0000:03:00.0 ct/sys/bus/pci/devices/0000:03:00.0 &&
	test_exit 1 penny check --sysfs-root ct --only settings --json >out.json &&
	verdict 0000:03:00.0:pci-path out.json | grep -q "^FAIL dangling | /sys/bus/pci/devices/0000:03:00.0 points at .*0000:00:09.0.*mount the host" &&
	copy ok ct2 && d=$(readlink -f ct2/sys/bus/pci/devices/0000:03:00.0) && mkdir -p ct2/sys/devices/virtual/gpu &&
	mv "$d" ct2/sys/devices/virtual/gpu/0000:03:00.0 &&
	ln -sfn ../../../devices/virtual/gpu/0000:03:00.0 ct2/sys/bus/pci/devices/0000:03:00.0 &&
	test_exit 1 penny check --sysfs-root ct2 --only settings --json >out.json &&
	verdict GPU0:pci-path out.json | grep -q "^FAIL no root bus | .*ends before a PCI root bus" &&
	echo "settings.pci-hidden = allow" >p.conf &&
	penny check --sysfs-root ct --only settings --config p.conf --json >out.json &&
	verdict 0000:03:00.0:pci-path out.json | grep -q "^PASS dangling"
'

test_expect_success 'NVLink state and P2P per GPU pair from NVML (a fake one); no NVML SKIPs' '
	${NVML_TEST_CC:-cc} -shared -fPIC -o libfake-nvml.so "$TOP/tests/helpers/nvml/fake-nvml.c" &&
	copy ok two && at two && PCI_NUMA=0 sys_switch 0x10 >/dev/null &&
	G0=0000:03:00.0 G1=0000:13:00.0 &&
	nv() { PENNY_NVML_LIB=$PWD/libfake-nvml.so "$PENNY" check --sysfs-root two --only settings --json "$@"; } &&
	FAKE_NVML_LINKS="$G0>$G1*4;$G1>$G0*4" nv >out.json &&
	verdict GPU0:nvlink out.json | grep -q "^PASS 4 up, 0 down" &&
	verdict GPU0-GPU1:p2p out.json | grep -q "^PASS read+write" &&
	FAKE_NVML_LINKS="$G0>$G1*4;$G1>$G0*4;$G1>down*2" test_exit 1 nv >out.json &&
	verdict GPU1:nvlink out.json | grep -q "^FAIL 4 up, 2 down | 2 of the GPU.s 6 NVLinks are down" &&
	FAKE_NVML_LINKS="$G0>$G1*4;$G1>$G0*4" FAKE_NVML_P2P="$G0>$G1=0,5;$G1>$G0=4,0" test_exit 1 nv >out.json &&
	verdict GPU0-GPU1:p2p out.json | grep -q "^FAIL 2 not OK | write GPU0->GPU1: not supported, read GPU1->GPU0: disabled by regkey" &&
	echo "settings.p2p = allow" >p2p.conf &&
	FAKE_NVML_LINKS="$G0>$G1*4;$G1>$G0*4" FAKE_NVML_P2P="$G0>$G1=0,5" nv --config p2p.conf >out.json &&
	verdict GPU0-GPU1:p2p out.json | grep -q "^PASS 1 not OK .*(settings.p2p = allow)" &&
	FAKE_NVML_INIT_FAIL=1 nv >out.json &&
	verdict nvlink-p2p out.json | grep -q "^SKIP None | no NVML" &&
	penny check --sysfs-root two --only settings --json >out.json &&
	verdict nvlink-p2p out.json | grep -q "^SKIP None | a captured tree"
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
