#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# An RDMA device with more ports than a NIC has (a switch's 80, created in
# reverse so the directory lists them in no useful order): topo, check's
# inventory and top see every port, in numeric order, and a DOWN port 1
# among them fails --expect-state (src/node/nic.c kept 64, in directory
# order).  A tree with more ports than any device has is refused in one
# line, not cut.
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/helpers/mksysfs.sh"
unset PENNY_SYSROOT PENNY_NVML_LIB PENNY_DEBUG

many() { # DIR NPORTS
	sys_root "$1" sw80 >/dev/null && sys_cpus 4 1 && PCI_NUMA=0 sys_switch 0x00 >/dev/null &&
	sys_ib mlx5_0 0000:04:00.0 || return 1
	local p
	for ((p = $2; p >= 2; p--)); do
		sys_port mlx5_0 $p ACTIVE LinkUp "400 Gb/sec (4X NDR)" InfiniBand || return 1
	done
	sys_port mlx5_0 1 DOWN Disabled "400 Gb/sec (4X NDR)" InfiniBand
}
many sw80 80

test_expect_success 'topo lists all 80 ports, in numeric order' '
	penny topo --sysfs-root sw80 >out 2>err &&
	grep "^mlx5_0  " out | awk "{print \$2}" >ports &&
	seq 1 80 >want && test_cmp want ports &&
	grep -q "^mlx5_0  *1  *DOWN  *Disabled" out
'

test_expect_success 'topo --expect-state ACTIVE fails on port 1, the one DOWN, and only on it' '
	test_exit 1 penny topo --sysfs-root sw80 --expect-state ACTIVE >out 2>err &&
	test "$(wc -l <err)" -eq 1 &&
	grep -qx "penny topo: check failed: mlx5_0 port 1: state DOWN, expected ACTIVE" err
'

test_expect_success 'check inventory judges every port: port 1 DOWN fails, 79 pass' '
	test_exit 1 penny check --sysfs-root sw80 --only inventory >out 2>err &&
	grep -q "^inventory  *sw80  *mlx5_0/1  .*FAIL" out &&
	test "$(grep -c "^inventory  *sw80  *mlx5_0/[0-9]*  *400 Gb/s  *400 Gb/s  *PASS" out)" -eq 79 &&
	grep -q "^inventory  *sw80  *mlx5_0/80 " out
'

test_expect_success 'a device with more than 1024 ports is refused in one line, not cut' '
	sys_root huge sw80 >/dev/null && sys_cpus 4 1 && PCI_NUMA=0 sys_switch 0x00 >/dev/null &&
	sys_ib mlx5_0 0000:04:00.0 &&
	for ((p = 1; p <= 1025; p++)); do mkdir -p huge/sys/class/infiniband/mlx5_0/ports/$p; done &&
	test_exit 2 penny topo --sysfs-root huge >out 2>err &&
	test "$(wc -l <err)" -eq 1 && grep -q "mlx5_0.* has more than 1024 ports" err
'
test_done
