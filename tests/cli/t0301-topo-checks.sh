#!/usr/bin/env bash
# penny topo --expect-*: NHC-style checks, one line per violation, exit 1.
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/helpers/trees.sh"
unset PENNY_SYSROOT PENNY_NVML_LIB PENNY_DEBUG
X=$TOP/tests/fixtures/hwloc
tree_switches sw
tree_ports ports

test_expect_success 'passing checks: exit 0, nothing on stderr, output as usual' '
	penny topo --sysfs-root sw --expect-gpus 4 --expect-nics 2 --expect-state ACTIVE \
		--expect-rate 400 >out 2>err &&
	test ! -s err && grep -q "^NIC Legend:" out
'
test_expect_success '--expect-gpus / --expect-nics mismatch: one line each, exit 1' '
	test_exit 1 penny topo --sysfs-root sw --expect-gpus 8 --expect-nics 1 >out 2>err &&
	test "$(wc -l <err)" -eq 2 &&
	grep -qx "penny topo: check failed: found 4 GPUs, expected 8" err &&
	grep -qx "penny topo: check failed: found 2 RDMA NICs, expected 1" err &&
	grep -q "^GPU0" out
'
test_expect_success '--expect-state ACTIVE: DOWN and INIT ports fail, one line each' '
	test_exit 1 penny topo --sysfs-root ports --expect-state ACTIVE >out 2>err &&
	test "$(wc -l <err)" -eq 2 &&
	grep -qx "penny topo: check failed: mlx5_1 port 1: state DOWN, expected ACTIVE" err &&
	grep -qx "penny topo: check failed: mlx5_2 port 1: state INIT, expected ACTIVE" err
'
test_expect_success '--expect-state accepts lower case and numbers' '
	penny topo --sysfs-root ports -d mlx5_1 --expect-state down >/dev/null &&
	penny topo --sysfs-root ports -d mlx5_2 --expect-state 2 >/dev/null
'
test_expect_success '--expect-rate: slower ports fail' '
	test_exit 1 penny topo --sysfs-root ports --expect-rate 100 >out 2>err &&
	test "$(wc -l <err)" -eq 2 &&
	grep -qx "penny topo: check failed: mlx5_1 port 1: rate 10 Gb/s, expected at least 100 Gb/s" err &&
	grep -qx "penny topo: check failed: rxe0 port 1: rate 10 Gb/s, expected at least 100 Gb/s" err
'
test_expect_success '-d selects devices and ports for the port checks' '
	penny topo --sysfs-root ports -d mlx5_0 --expect-state ACTIVE --expect-rate 400 >/dev/null &&
	penny topo --sysfs-root ports -d mlx5_0:1,mlx5_10 --expect-state ACTIVE >/dev/null &&
	test_exit 1 penny topo --sysfs-root ports -d mlx5_0 -d mlx5_10 --expect-rate 200 \
		>/dev/null 2>err && test "$(wc -l <err)" -eq 1 && grep -q "mlx5_10 port 1: rate 100" err
'
test_expect_success '-d naming a missing device or port is a violation' '
	test_exit 1 penny topo --sysfs-root ports -d mlx5_9,mlx5_0:2 --expect-state ACTIVE \
		>/dev/null 2>err && test "$(wc -l <err)" -eq 2 &&
	grep -qx "penny topo: check failed: no RDMA device or port .mlx5_9." err &&
	grep -qx "penny topo: check failed: no RDMA device or port .mlx5_0:2." err
'
test_expect_success '--expect-rail: GPUs without a NIC at PIX/PXB fail' '
	test_exit 1 penny topo --sysfs-root sw --expect-rail >out 2>err &&
	test "$(wc -l <err)" -eq 2 &&
	grep -qx "penny topo: check failed: GPU2 (0000:41:00.0): nearest NIC NIC0 (mlx5_0) is NODE, expected PIX or PXB" err &&
	grep -qx "penny topo: check failed: GPU3 (0000:81:00.0): nearest NIC NIC1 (mlx5_1) is PHB, expected PIX or PXB" err
'
test_expect_success '--expect-rail passes when every GPU has a PIX/PXB NIC' '
	penny topo --topo-xml "$X/v2/32em64t-2n8c2t-pci-normalio.xml" --expect-rail 2>err >/dev/null;
	test $? -eq 1 && grep -q "GPU0 (0000:03:00.0): nearest NIC NIC0 (mlx5_0) is SYS" err &&
	mkdir one && cp -r sw/. one/ && rm one/sys/bus/pci/devices/0000:41:00.0 \
		one/sys/bus/pci/devices/0000:81:00.0 &&
	penny topo --sysfs-root one --expect-rail --expect-gpus 2 >/dev/null
'
test_expect_success 'no NICs: rails and port checks fail, one line per GPU' '
	mkdir nonic && cp -r sw/. nonic/ && rm -r nonic/sys/class/infiniband/* &&
	test_exit 1 penny topo --sysfs-root nonic --expect-rail --expect-state ACTIVE >out 2>err &&
	test "$(wc -l <err)" -eq 5 && grep -q "GPU3 (0000:81:00.0): no RDMA NIC" err &&
	grep -qx "penny topo: check failed: no RDMA ports to check" err
'
test_expect_success 'XML NICs without sysfs ports fail port checks by name' '
	test_exit 1 penny topo --topo-xml "$X/24em64t-2n6c2t-pci.xml" --expect-state ACTIVE \
		>/dev/null 2>err &&
	grep -qx "penny topo: check failed: mlx4_0: no port information" err
'
test_expect_success 'violations are in the JSON output too' '
	test_exit 1 penny topo --sysfs-root ports --expect-state ACTIVE --expect-gpus 1 --json \
		>out.json 2>err && json_valid out.json &&
	python3 -c "
import json
v = json.load(open(\"out.json\"))[\"violations\"]
assert v == [\"mlx5_1 port 1: state DOWN, expected ACTIVE\", \"mlx5_2 port 1: state INIT, expected ACTIVE\"], v
" &&
	penny topo --sysfs-root ports --json >plain.json && ! grep -q violations plain.json
'
test_expect_success 'bad check values: one line, exit 2' '
	test_exit 2 penny topo --sysfs-root ports --expect-state UP 2>err &&
	test "$(wc -l <err)" -eq 1 && grep -q "invalid port state .UP." err &&
	test_exit 2 penny topo --sysfs-root ports --expect-rate -5 2>err &&
	test "$(wc -l <err)" -eq 1 &&
	test_exit 2 penny topo --sysfs-root ports --expect-gpus -3 2>err &&
	test "$(wc -l <err)" -eq 1 &&
	test_exit 2 penny topo --sysfs-root ports --expect-rate fast 2>err &&
	test "$(wc -l <err)" -eq 1
'
test_done
