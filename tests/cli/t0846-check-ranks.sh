#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# penny check's ranks check under --np: the GPU each rank opens
# (CUDA_VISIBLE_DEVICES, local rank) and the NIC it may use (NCCL_IB_HCA,
# -d), audited on rank 0: two ranks on one GPU, a rank kept off its rail.
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/helpers/mksysfs.sh"
unset CUDA_VISIBLE_DEVICES NCCL_IB_HCA

# GPU0 (03:00.0) with mlx5_0 on one switch, GPU1 (13:00.0) with mlx5_3 on
# another root bus of the same NUMA node (NODE between them)
sys_root n1 gpu01 && sys_cpus 4 1 &&
	PCI_NUMA=0 sys_switch 0x00 && PCI_NUMA=0 sys_switch 0x10 &&
	sys_ib mlx5_0 0000:04:00.0 && sys_ib mlx5_3 0000:14:00.0 &&
	sys_port mlx5_0 1 ACTIVE LinkUp "400 Gb/sec (4X NDR)" InfiniBand &&
	sys_port mlx5_3 1 ACTIVE LinkUp "400 Gb/sec (4X NDR)" InfiniBand >/dev/null

verdict() {
	python3 -c 'import json,sys
d = json.load(open(sys.argv[2]))
r = [x for x in d["results"] if x["check"] == "ranks" and x["target"] == sys.argv[1]]
assert len(r) == 1, r
print(r[0]["verdict"], (r[0]["measured_text"] if r[0]["measured"] is None else r[0]["measured"]), "|", r[0]["detail"] or "")' "$@"
}

test_expect_success 'one rank per GPU, each near its NIC, passes' '
	timeout 60 "$PENNY" check --np 2 --sysfs-root n1 --only ranks --json >out.json &&
	verdict rank0 out.json | grep -q "^PASS GPU0 | 0000:03:00.0, NIC mlx5_0 (PIX)" &&
	verdict rank1 out.json | grep -q "^PASS GPU1 | 0000:13:00.0, NIC mlx5_3 (PIX)"
'

test_expect_success 'two ranks on one GPU (CUDA_VISIBLE_DEVICES) fail, naming both' '
	CUDA_VISIBLE_DEVICES=1 test_exit 1 timeout 60 "$PENNY" check --np 2 --sysfs-root n1 --only ranks --json >out.json &&
	verdict rank0 out.json | grep -q "^FAIL GPU1 | ranks 0 and 1 share GPU1 (0000:13:00.0) on gpu01" &&
	CUDA_VISIBLE_DEVICES=1,0 timeout 60 "$PENNY" check --np 2 --sysfs-root n1 --only ranks --json >out.json &&
	verdict rank0 out.json | grep -q "^PASS GPU1"
'

test_expect_success 'a rank kept off its rail (NCCL_IB_HCA, -d) fails naming the nearer NIC' '
	NCCL_IB_HCA=mlx5_0 test_exit 1 timeout 60 "$PENNY" check --np 2 --sysfs-root n1 --only ranks --json >out.json &&
	verdict rank0 out.json | grep -q "^PASS GPU0" &&
	verdict rank1 out.json | grep -q "^FAIL GPU1 | rank 1.s GPU1 uses mlx5_0 (NODE) while mlx5_3 is PIX" &&
	test_exit 1 timeout 60 "$PENNY" check --np 2 --sysfs-root n1 --only ranks -d mlx5_3 --json >out.json &&
	verdict rank0 out.json | grep -q "^FAIL GPU0 | rank 0.s GPU0 uses mlx5_3 (NODE) while mlx5_0 is PIX" &&
	NCCL_IB_HCA=^mlx5_9 timeout 60 "$PENNY" check --np 2 --sysfs-root n1 --only ranks >/dev/null
'

test_expect_success 'a GPU named by UUID SKIPs; alone there is nothing to audit (exit 2)' '
	CUDA_VISIBLE_DEVICES=GPU-12345678 test_exit 2 timeout 60 "$PENNY" check --np 2 --sysfs-root n1 --only ranks --json >out.json &&
	verdict rank1 out.json | grep -q "^SKIP None | CUDA_VISIBLE_DEVICES .GPU-12345678. names no GPU by index" &&
	test_exit 2 penny check --sysfs-root n1 --only ranks --json >out.json &&
	verdict job out.json | grep -q "^SKIP None | not under a launcher"
'

test_done
