#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# penny check --nccl-log FILE: the paths of an NCCL_DEBUG=INFO log (the
# fixtures of tests/fixtures/nccl-log) judged against a synthetic node:
# sockets while an RDMA port is up, no GDRDMA where GPU and NIC share a
# switch; what the log does not say of this node SKIPs; bad input exits 2.
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/helpers/mksysfs.sh"
L=$TOP/tests/fixtures/nccl-log

# GPU0 (03:00.0) with mlx5_0 on one switch, GPU1 (13:00.0) with mlx5_3 on another
sys_root n1 gpu01 && sys_cpus 4 1 &&
	PCI_NUMA=0 sys_switch 0x00 && PCI_NUMA=0 sys_switch 0x10 &&
	sys_ib mlx5_0 0000:04:00.0 && sys_ib mlx5_3 0000:14:00.0 &&
	sys_port mlx5_0 1 ACTIVE LinkUp "400 Gb/sec (4X NDR)" InfiniBand &&
	sys_port mlx5_3 1 ACTIVE LinkUp "400 Gb/sec (4X NDR)" InfiniBand >/dev/null
# NCCL 2.18's bus ids of the fixture moved to this node's GPUs
sed 's/18000/3000/g; s/2a000/13000/g' "$L/nccl-2.18-ipc-read.log" >ok.log

verdict() {
	python3 -c 'import json,sys
d = json.load(open(sys.argv[2]))
r = [x for x in d["results"] if x["check"] == "nccl-path" and x["target"] == sys.argv[1]]
assert len(r) == 1, r
print(r[0]["verdict"], r[0]["measured_text"], r[0]["expected_text"], "|", r[0]["detail"] or "")' "$@"
}

test_expect_success 'a log of P2P and GDRDMA over the rail NICs passes, one row per connection' '
	penny check --sysfs-root n1 --nccl-log ok.log --only nccl-path --json >out.json &&
	verdict "ch00/0 0->1" out.json | grep -q "^PASS P2P/IPC/read None" &&
	verdict "ch01/0 1->2 send" out.json | grep -q "^PASS NET/IB/1/GDRDMA None | NIC mlx5_3:1, GPU1.s rail$" &&
	verdict "ch01/0 3->0 receive" out.json | grep -q "^PASS NET/IB/0/GDRDMA None | NIC mlx5_0:1, GPU0.s rail$" &&
	verdict versions out.json | grep -q "^SKIP None None | the NVIDIA driver.s version is unknown: no rule" &&
	test "$(python3 -c "import json; print(len(json.load(open(\"out.json\"))[\"results\"]))")" = 5
'

test_expect_success 'NET/Socket while an RDMA port is up fails, naming the port and the variables' '
	test_exit 1 penny check --sysfs-root n1 --nccl-log "$L/nccl-2.21-socket.log" --only nccl-path --json >out.json &&
	verdict "ch00/0 0->1 send" out.json >v &&
	grep -q "^FAIL NET/Socket/0 NET/IB | NCCL sends over sockets while mlx5_0/1 is ACTIVE.*NCCL_IB_HCA" v &&
	rm -rf n2 && cp -a n1 n2 && sed -i "s/.*/1: DOWN/" n2/sys/class/infiniband/mlx5_*/ports/1/state &&
	penny check --sysfs-root n2 --nccl-log "$L/nccl-2.21-socket.log" --only nccl-path >/dev/null
'

test_expect_success 'no GDRDMA where the GPU and its NIC share a switch fails; across the root it passes' '
	sed "s|\[send\] via NET/IB/1/GDRDMA|[send] via NET/IB/1|; s|\[receive\] via NET/IB/0/GDRDMA|[receive] via NET/IB/1|" ok.log >nogdr.log &&
	test_exit 1 penny check --sysfs-root n1 --nccl-log nogdr.log --only nccl-path --json >out.json &&
	verdict "ch01/0 1->2 send" out.json | grep -q "^FAIL NET/IB/1 GDRDMA | rank 1.s GPU1 and mlx5_3:1 share a PCIe switch" &&
	verdict "ch01/0 1->2 send" out.json | grep -q "^FAIL NET/IB/1 GDRDMA | rank 1.s GPU1 and mlx5_3:1 share a PCIe switch"
'

test_expect_success 'a NIC other than the GPU'"'"'s rail fails, naming the rail NIC to pin; settings.nccl-rail = allow' '
	verdict "ch01/0 3->0 receive" out.json | grep -q "^FAIL NET/IB/1 mlx5_0:1 | rank 0.s GPU0 uses mlx5_3, not its rail NIC mlx5_0:1 (PIX): pin it with NCCL_IB_HCA==mlx5_0:1" &&
	penny check --sysfs-root n1 --nccl-log ok.log --only nccl-path --json >out.json &&
	verdict "ch01/0 3->0 receive" out.json | grep -q "^PASS NET/IB/0/GDRDMA None | NIC mlx5_0:1, GPU0.s rail" &&
	sed "s|\[receive\] via NET/IB/0/GDRDMA|[receive] via NET/IB/1/GDRDMA|" ok.log >norail.log &&
	test_exit 1 penny check --sysfs-root n1 --nccl-log norail.log --only nccl-path --json >out.json &&
	verdict "ch01/0 3->0 receive" out.json | grep -q "^FAIL NET/IB/1/GDRDMA mlx5_0:1 | rank 0.s GPU0 uses mlx5_3" &&
	echo "settings.nccl-rail = allow" >rail.conf &&
	penny check --sysfs-root n1 --nccl-log norail.log --only nccl-path --config rail.conf --json >out.json &&
	verdict "ch01/0 3->0 receive" out.json | grep -q "^PASS .*(settings.nccl-rail = allow)"
'

test_expect_success 'versions: the driver against NCCL'"'"'s CUDA (minimum driver per CUDA major)' '
	rm -rf nv && cp -a n1 nv && mkdir -p nv/sys/module/nvidia && echo 550.54.15 >nv/sys/module/nvidia/version &&
	penny check --sysfs-root nv --nccl-log ok.log --only nccl-path --json >out.json &&
	verdict versions out.json | grep -q "^PASS driver 550.54.15, NCCL 2.18.5+cuda12.2 NCCL.s minimum driver | driver 550.54.15 >= 525.60.13, the minimum for NCCL.s CUDA 12.2" &&
	sed "s/+cuda12.2/+cuda13.0/" ok.log >c13.log &&
	test_exit 1 penny check --sysfs-root nv --nccl-log c13.log --only nccl-path --json >out.json &&
	verdict versions out.json | grep -q "^FAIL .* | NCCL 2.18.5+cuda13.0 needs a driver >= 580.65.06 for CUDA 13, the driver is 550.54.15" &&
	echo "settings.versions = allow" >v.conf &&
	penny check --sysfs-root nv --nccl-log c13.log --only nccl-path --config v.conf --json >out.json &&
	verdict versions out.json | grep -q "^PASS .*(settings.versions = allow)" &&
	mkdir -p nv/proc/driver/nvidia &&
	echo "NVRM version: NVIDIA UNIX x86_64 Kernel Module  525.60.11  Wed Nov 23 23:04:03 UTC 2022" >nv/proc/driver/nvidia/version &&
	test_exit 1 penny check --sysfs-root nv --nccl-log ok.log --only nccl-path --json >out.json &&
	verdict versions out.json | grep -q "^FAIL driver 525.60.11, .*needs a driver >= 525.60.13 for CUDA 12" &&
	sed "s/+cuda12.2/+cuda9.0/" ok.log >c9.log &&
	penny check --sysfs-root nv --nccl-log c9.log --only nccl-path --json >out.json &&
	verdict versions out.json | grep -q "^SKIP .*CUDA 9 has no minimum driver in penny.s table"
'

test_expect_success 'versions: the CUDA driver API version from the GPU plugin (no driver release here)' '
	sed "s/+cuda12.2/+cuda13.0/" ok.log >c13.log &&
	PENNY_PLUGIN_PATH=$PWD/noplugins penny check --sysfs-root n1 --nccl-log c13.log --only nccl-path \
		--json >out.json &&
	verdict versions out.json | grep -q "^SKIP .*the NVIDIA driver.s version is unknown" &&
	PENNY_PLUGIN_PATH=$BUILD/tests/plugins/cuda PENNY_FAKE_CUDA_API=12020 test_exit 1 \
		penny check --sysfs-root n1 --nccl-log c13.log --only nccl-path --json >out.json &&
	verdict versions out.json | grep -q "^FAIL driver ?, NCCL 2.18.5+cuda13.0, CUDA API 12.2 .* | NCCL 2.18.5+cuda13.0 is built for CUDA 13.0, the driver.s API is CUDA 12.2" &&
	PENNY_PLUGIN_PATH=$BUILD/tests/plugins/cuda PENNY_FAKE_CUDA_API=12020 \
		penny check --sysfs-root n1 --nccl-log ok.log --only nccl-path --json >out.json &&
	verdict versions out.json | grep -q "^PASS .* | the driver.s CUDA API 12.2 runs NCCL 2.18.5+cuda12.2.s CUDA 12.2" &&
	PENNY_PLUGIN_PATH=$BUILD/tests/plugins/cuda PENNY_FAKE_CUDA_API=12020 \
		penny check --sysfs-root n1 --nccl-log c13.log --only nccl-path --config v.conf --json >out.json &&
	verdict versions out.json | grep -q "^PASS .*(settings.versions = allow)"
'

test_expect_success 'what the log does not tell of this node SKIPs (alone: nothing checked, exit 2)' '
	echo "h:1:1 [0] NCCL INFO Connected all rings" >none.log &&
	test_exit 2 penny check --sysfs-root n1 --nccl-log none.log --only nccl-path --json >out.json &&
	verdict log out.json | grep -q "^SKIP None None | none.log: no channel connection line" &&
	cat ok.log "$L/nccl-2.19-cumem-shm.log" >two.log &&
	rm -rf n3 && cp -a n1 n3 && echo elsewhere >n3/proc/sys/kernel/hostname &&
	test_exit 2 penny check --sysfs-root n3 --nccl-log two.log --only nccl-path --json >out.json &&
	verdict log out.json | grep -q "^SKIP None None | no line of this node (elsewhere)" &&
	penny check --sysfs-root n1 --nccl-log two.log --only nccl-path --json >out.json &&
	verdict "ch00/0 0->1" out.json | grep -q "^PASS P2P/IPC/read"
'

test_expect_success 'bad use: a skipped nccl-path with --nccl-log, a FIFO, a directory (exit 2)' '
	test_exit 2 penny check --sysfs-root n1 --nccl-log ok.log --skip nccl-path 2>err &&
	grep -q "nccl-path is not run" err &&
	mkfifo fifo && test_exit 2 timeout 10 "$PENNY" check --sysfs-root n1 --only nccl-path --nccl-log fifo 2>err &&
	test $(wc -l <err) = 1 &&
	test_exit 2 penny check --sysfs-root n1 --only nccl-path --nccl-log . 2>err && test $(wc -l <err) = 1
'

test_expect_success 'without --nccl-log: the log of an allreduce on the nccl plugin, judged alike' '
	mkdir -p tmp &&
	PENNY_PLUGIN_PATH=$BUILD/tests/plugins/nccl TMPDIR=$PWD/tmp penny check --sysfs-root n1 --only nccl-path --json >out.json &&
	verdict "ch00/0 0->1" out.json | grep -q "^PASS P2P/CUMEM/read None" &&
	verdict "ch00/0 1->0" out.json | grep -q "^PASS P2P/CUMEM/read None" &&
	verdict versions out.json | grep -q "^SKIP" &&
	test -z "$(ls tmp)" &&
	FAKE_NCCL_VIA=NET/Socket/0 PENNY_PLUGIN_PATH=$BUILD/tests/plugins/nccl TMPDIR=$PWD/tmp \
		test_exit 1 penny check --sysfs-root n1 --only nccl-path --json >out.json &&
	verdict "ch00/0 1->0" out.json | grep -q "^FAIL NET/Socket/0 NET/IB | NCCL sends over sockets while mlx5_0/1 is ACTIVE" &&
	test -z "$(ls tmp)"
'

test_expect_success 'without --nccl-log: no nccl plugin, one GPU, no usable TMPDIR SKIP with the reason' '
	mkdir -p none &&
	# the build tree'"'"'s own nccl plugin is found too: it cannot load CUDA here
	PENNY_PLUGIN_PATH=$PWD/none test_exit 2 penny check --sysfs-root n1 --only nccl-path --json >out.json &&
	verdict log out.json | grep -qE "^SKIP None None \| (no --nccl-log FILE, and no nccl plugin|the allreduce on nccl failed)" &&
	: >notadir &&
	PENNY_PLUGIN_PATH=$BUILD/tests/plugins/nccl TMPDIR=$PWD/notadir test_exit 2 penny check --sysfs-root n1 --only nccl-path --json >out.json &&
	verdict log out.json | grep -q "^SKIP None None | no directory for NCCL.s log in .*notadir" &&
	rm -rf one && cp -a n1 one && rm one/sys/bus/pci/devices/0000:13:00.0 &&
	PENNY_PLUGIN_PATH=$BUILD/tests/plugins/nccl test_exit 2 penny check --sysfs-root one --only nccl-path --json >out.json &&
	verdict log out.json | grep -q "^SKIP None None | one GPU: NCCL connects nothing"
'

test_done
