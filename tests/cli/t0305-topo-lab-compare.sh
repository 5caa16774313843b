#!/usr/bin/env bash
# tests/lab/gpu-topo-compare.sh (run by hand on GPU machines) against a fake
# nvidia-smi with hand-written outputs and a fake NVML, over the synthetic
# "switches" machine: agreement, layouts, GPU order, mismatches.
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/helpers/trees.sh"
unset PENNY_SYSROOT PENNY_DEBUG FAKE_NVML_INIT_FAIL
F=$TOP/tests/fixtures/nvidia-smi
FAKE_SMI=$TOP/tests/helpers/fake-nvidia-smi
CMP=$TOP/tests/lab/gpu-topo-compare.sh
cc=${NVML_TEST_CC:-cc}
if ! command -v "$cc" >/dev/null || ! command -v python3 >/dev/null; then
	test_skip 'gpu-topo-compare' "needs $cc and python3"
	test_done
	exit
fi
"$cc" -shared -fPIC -o libfake-nvml.so "$TOP/tests/helpers/nvml/fake-nvml.c" || exit 1
tree_switches sw
export PENNY_NVML_LIB=$PWD/libfake-nvml.so NVIDIA_SMI=$FAKE_SMI
export FAKE_NVML_LINKS="0000:03:00.0>switch*18;0000:07:00.0>switch*18;0000:41:00.0>switch*18;0000:81:00.0>switch*18"
export PENNY_TOPO_ARGS="--sysfs-root $PWD/sw"
smi() { # DIR: canned outputs for the fake nvidia-smi
	mkdir -p "$1" && cp "$F/switches-m.txt" "$1/m.txt" && cp "$F/switches-mp.txt" "$1/mp.txt" &&
		cp "$F/switches-busid.csv" "$1/busid.csv"
}
run() { FAKE_SMI_DIR=$1 OUT_DIR=$PWD/out-$1 "$CMP"; }

test_expect_success 'agreement: every cell, CPU and NUMA affinity, exit 0' '
	smi ok && run ok >log && grep -q "^result: 24 GPU-GPU cells and 8 affinities compared: all agree$" log &&
	grep -q "^  GPU0-GPU1   NV18       NV18       ok$" log &&
	grep -q "^  GPU0-GPU1   PXB        PXB        ok$" log &&
	test -s out-ok/penny.json && test -s out-ok/smi-m.txt
'
test_expect_success 'space-padded layout without tabs, no GPU NUMA ID column' '
	smi sp && for f in m mp; do
		sed -e "s/\t/   /g" -e "s/   N\/A$//" sp/$f.txt | sed "s/GPU NUMA ID//" >sp/$f.tmp &&
		mv sp/$f.tmp sp/$f.txt; done && run sp >log && grep -q "all agree" log
'
test_expect_success 'nvidia-smi numbering differs from PCI order: matched by bus id' '
	smi ord && printf "0, 00000000:07:00.0\n1, 00000000:03:00.0\n2, 00000000:41:00.0\n3, 00000000:81:00.0\n" \
		>ord/busid.csv &&
	for f in m mp; do
		python3 -c "
import sys
rows = open(sys.argv[1]).read().split(\"\n\")
# nvidia-smi GPU0 is the second GPU in PCI order: swap the data of rows and
# columns GPU0 and GPU1, keep the labels
def sw(l):
    t = l.split(\"\t\")
    if len(t) > 2 and t[0]: t[1], t[2] = t[2], t[1]
    return \"\t\".join(t)
rows = [sw(l) for l in rows]
r1, r2 = rows[1].split(\"\t\"), rows[2].split(\"\t\")
rows[1] = \"\t\".join([r1[0]] + r2[1:])
rows[2] = \"\t\".join([r2[0]] + r1[1:])
open(sys.argv[1], \"w\").write(\"\n\".join(rows))
" ord/$f.txt; done &&
	sed -n 2p ord/m.txt | grep -q "^GPU0	 X 	NV18" && run ord >log && grep -q "all agree" log &&
	grep -q "GPU0  = penny GPU1  0000:07:00.0" log
'
test_expect_success 'a different cell: MISMATCH line, exit 1' '
	smi cell && sed -i "2s/^GPU0\t X \tNV18/GPU0\t X \tNV12/" cell/m.txt &&
	test_exit 1 run cell >log && grep -q "^  GPU0-GPU1   NV12       NV18       MISMATCH$" log &&
	grep -q "^result: .*1 MISMATCH(ES)$" log
'
test_expect_success 'a different PCIe cell (-mp): MISMATCH, exit 1' '
	smi pc && sed -i "5s/^GPU3\tSYS/GPU3\tNODE/" pc/mp.txt &&
	test_exit 1 run pc >log && grep -q "GPU3-GPU0   NODE       SYS        MISMATCH" log
'
test_expect_success 'different CPU or NUMA affinity: MISMATCH, exit 1' '
	smi aff && sed -i "5s/\t4-7\t1\t/\t4-6\t1\t/" aff/m.txt &&
	test_exit 1 run aff >log && grep -q "GPU3  cpus 4-6 | 4-7 MISMATCH" log &&
	smi numa && sed -i "2s/\t0-3\t0\t/\t0-3\tN\/A\t/" numa/m.txt &&
	test_exit 1 run numa >log && grep -q "GPU0  cpus 0-3 | 0-3 ok   numa N/A | 0 MISMATCH" log
'
test_expect_success 'CPU lists compare as sets (0-3 == 0,1,2,3)' '
	smi set && sed -i "2s/\t0-3\t0\t/\t0,1,2-3\t0\t/" set/m.txt && run set >log && grep -q "all agree" log
'
test_expect_success 'a GPU missing on one side: MISMATCH, exit 1' '
	smi miss && PENNY_TOPO_ARGS="--sysfs-root $PWD/sw" FAKE_SMI_DIR=miss OUT_DIR=$PWD/o-miss \
		PENNY_NVML_LIB=/nonexistent "$CMP" >log; test $? -eq 1 &&
	rm sw/sys/bus/pci/devices/0000:81:00.0 && test_exit 1 run miss >log &&
	grep -q "MISMATCH GPU3 (bus id 0000:81:00.0): not among" log
'
test_expect_success 'cannot run: exit 2 with one clear line' '
	NVIDIA_SMI=/nonexistent/nvidia-smi test_exit 2 "$CMP" 2>err && grep -q "no nvidia-smi" err &&
	PENNY=/nonexistent/penny test_exit 2 "$CMP" 2>err && grep -q "no penny binary" err &&
	mkdir junk && echo "no matrix here" >junk/m.txt && cp junk/m.txt junk/mp.txt && : >junk/busid.csv &&
	test_exit 2 run junk 2>err && grep -q "no matrix header" err
'
test_done
