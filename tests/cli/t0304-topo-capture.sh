#!/usr/bin/env bash
# tests/helpers/capture.sh: record this machine (and synthetic trees) into
# a tarball, replay it with --sysfs-root, get the same topology.
# cost: 6
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/helpers/trees.sh"
unset PENNY_SYSROOT PENNY_DEBUG
CAP=$TOP/tests/helpers/capture.sh
G=$TOP/tests/fixtures/topo

test_expect_success 'capture this machine, replay it: same topology as live' '
	"$CAP" live.tar.gz >log && grep -q "^capture.sh: [0-9]* files from / in " log &&
	mkdir live && tar -C live -xzf live.tar.gz &&
	PENNY_NVML_LIB=/nonexistent penny topo --json >a.json &&
	penny topo --sysfs-root live --json >b.json &&
	sed "s/\"source\":\"live\"/\"source\":\"sysfs\"/" a.json >a2.json && test_cmp a2.json b.json &&
	PENNY_NVML_LIB=/nonexistent penny topo >a.txt && penny topo --sysfs-root live >b.txt &&
	sed "s/topology from this system/topology from sysfs/" a.txt >a2.txt && test_cmp a2.txt b.txt
'
test_expect_success 'the capture holds what hwloc and penny read, and no DMI data' '
	tar -tzf live.tar.gz >list &&
	grep -q "^./proc/sys/kernel/hostname$" list && grep -q "^./proc/cpuinfo$" list &&
	grep -q "^./sys/devices/system/cpu/online$" list &&
	grep -q "^./sys/devices/system/node/node0/cpumap$" list &&
	if [ -e /sys/bus/pci/devices ] && [ -n "$(ls /sys/bus/pci/devices)" ]; then
		grep -q "^./sys/bus/pci/devices/" list && grep -q "/config$" list
	fi &&
	! grep -qi "dmi" list
'
if command -v lstopo-no-graphics >/dev/null; then
	test_expect_success 'hwloc itself sees the same PCI tree in the replay' '
		HWLOC_COMPONENTS=-x86 HWLOC_PLUGINS_BLACKLIST=hwloc_pci lstopo-no-graphics --only pcidev \
			>live.pci &&
		HWLOC_FSROOT=live HWLOC_COMPONENTS=-x86 HWLOC_PLUGINS_BLACKLIST=hwloc_pci \
			lstopo-no-graphics --only pcidev >replay.pci && test_cmp live.pci replay.pci
	'
else
	test_skip 'hwloc sees the same PCI tree in the replay' 'no lstopo-no-graphics (hwloc-nox)'
fi
for t in switches ports; do
	test_expect_success "capture of the synthetic $t tree replays identically" '
		tree_'"$t"' src_'"$t"' && "$CAP" --root src_'"$t"' '"$t"'.tar.gz >/dev/null &&
		mkdir rep_'"$t"' && tar -C rep_'"$t"' -xzf '"$t"'.tar.gz &&
		penny topo --sysfs-root src_'"$t"' --json >src.json &&
		penny topo --sysfs-root rep_'"$t"' --json >rep.json && test_cmp src.json rep.json &&
		test_cmp "$G/sysfs-'"$t"'.json" rep.json
	'
done
test_expect_success 'a capture can be captured again (--root on an unpacked capture)' '
	"$CAP" --root rep_ports again.tar.gz >/dev/null && mkdir again &&
	tar -C again -xzf again.tar.gz && penny topo --sysfs-root again --json >again.json &&
	test_cmp "$G/sysfs-ports.json" again.json
'
test_expect_success 'the recorded capture of a virtio VM (tests/fixtures/sysfs) replays to its golden output' '
	mkdir vm && tar -C vm -xzf "$TOP/tests/fixtures/sysfs/vm-virtio.tar.gz" &&
	penny topo --sysfs-root vm >vm.txt && penny topo --sysfs-root vm --json >vm.json &&
	if [ "${PENNY_UPDATE_GOLDEN:-}" = 1 ]; then cp vm.txt "$G/sysfs-vm-virtio.txt";
		cp vm.json "$G/sysfs-vm-virtio.json"; fi &&
	test_cmp "$G/sysfs-vm-virtio.txt" vm.txt && test_cmp "$G/sysfs-vm-virtio.json" vm.json
'
test_expect_success 'capture.sh usage errors exit 2' '
	test_exit 2 "$CAP" 2>err && grep -q usage err &&
	test_exit 2 "$CAP" --root /nonexistent x.tar.gz 2>err && grep -q "no sys/" err &&
	test_exit 2 "$CAP" --frob x.tar.gz 2>err && grep -q "unknown option" err
'
test_done
