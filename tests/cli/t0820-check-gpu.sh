#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# penny check's GPU checks (gpu-copy, allreduce) with the test GPU plugin
# (tests/plugins/fake/fake.c installed as penny-cuda.so: host memory
# standing for PENNY_FAKE_GPUS devices) on the synthetic 4-GPU machine of
# the topo tests:
# the checks run and pass with a generous config, the plugin's slow mode
# (PENNY_FAKE_SLOW) fails them naming the GPU, and without a plugin
# gpu-copy is a SKIP with the reason (exit 2 when nothing else ran).
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/helpers/trees.sh"
. "$TOP/tests/helpers/checkjson.sh"
unset PENNY_SYSROOT PENNY_DEBUG PENNY_FAKE_SLOW PENNY_FAKE_SLOW_GPU
tree_switches sw
# the test plugin on its modeled clock (copies at 50 GB/s, the allreduce at
# a bus bandwidth of 45): the slow mode multiplies, nothing waits on load
export PENNY_FAKE_GPUS=4 PENNY_NODE_ID=node01 PENNY_FAKE_GBS=50
fake=$BUILD/tests/plugins/cuda

gpucheck() {
	PENNY_PLUGIN_PATH=$fake penny check --sysfs-root sw --only gpu-copy,allreduce --quick "$@"
}

cat >generous.conf <<'CONF'
gpu-copy.size = 1048576
gpu-copy.fraction = 0.000001
gpu-copy.sm-fraction = 0.000001
allreduce.size = 65536
allreduce.copy-efficiency = 0.000001
allreduce.efficiency = 0.000001
job.median-margin = 1
CONF

test_expect_success 'the GPU checks run on the test plugin and pass with a generous config' '
	gpucheck --config generous.conf --json >check.json && json_valid check.json &&
	for g in GPU0 GPU1 GPU2 GPU3; do
		test "$(field gpu-copy $g:h2d verdict)" = PASS &&
		test "$(field gpu-copy $g:d2h verdict)" = PASS || exit 1
	done &&
	test "$(field gpu-copy GPU0-GPU3 verdict)" = PASS &&
	field gpu-copy GPU0:h2d source | grep -q "config: Gen5 x16 = 63 GB/s x 0.0001%" &&
	field gpu-copy GPU0-GPU3 source | grep -q "SYS: socket link 10 GB/s" &&
	test "$(field allreduce node verdict)" = PASS &&
	field allreduce node source | grep -q "^gpu-copy: slowest pair GPU[0-3]-GPU[0-3] .* measured x 0.0001%" &&
	field allreduce node detail | grep -Eq "^cuda, 4 ranks, 65536 B, blocks [0-9.e+-]+-[0-9.e+-]+, 0 wrong values"
'
test_expect_success 'text output: one row per GPU and direction, per pair, and the node allreduce' '
	gpucheck --config generous.conf >out.txt &&
	test "$(grep -c "^gpu-copy .*GPU[0-3]:[hd]2[hd] " out.txt)" -eq 8 &&
	test "$(grep -c "^gpu-copy .*GPU[0-3]:sm " out.txt)" -eq 4 &&
	test "$(grep -c "^gpu-copy .*GPU[0-3]-GPU[0-3] " out.txt)" -eq 6 &&
	grep -q "^allreduce .* node " out.txt
'
# the slow GPU must fail while the others pass: thresholds at a twentieth
# of what this machine measured, the slow plugin 200 times slower
test_expect_success 'a slow GPU fails gpu-copy and allreduce, named' '
	gpucheck --config generous.conf --json >check.json &&
	h2d=$(python3 -c "
import json
d = json.load(open(\"check.json\"))
print(min(r[\"measured\"] for r in d[\"results\"] if r[\"check\"] == \"gpu-copy\"))") &&
	ar=$(field allreduce node measured) &&
	{ echo "gpu-copy.size = 1048576"
	  echo "gpu-copy.fraction = $(python3 -c "print(max(1e-6, $h2d / 20 / 63))")"
	  echo "gpu-copy.nvlink-fraction = 0.000001"
	  echo "gpu-copy.sm-fraction = 0.05"
	  echo "allreduce.size = 65536"
	  echo "job.median-margin = 1"
	  echo "allreduce.min-busbw = $(python3 -c "print($ar / 20)")"; } >tight.conf &&
	gpucheck --config tight.conf --json >check.json && json_valid check.json &&
	PENNY_FAKE_SLOW=200 PENNY_FAKE_SLOW_GPU=2 test_exit 1 gpucheck --config tight.conf --json \
		>check.json 2>err && json_valid check.json &&
	test "$(field gpu-copy GPU2:h2d verdict)" = FAIL &&
	test "$(field gpu-copy GPU2:d2h verdict)" = FAIL &&
	test "$(field gpu-copy GPU0:h2d verdict)" = PASS &&
	field gpu-copy GPU2:h2d detail | grep -q "^GPU2:h2d .* GB/s is [0-9]*% of the expected" &&
	test "$(field gpu-copy GPU1-GPU2 verdict)" = FAIL &&
	test "$(field gpu-copy GPU0-GPU1 verdict)" = PASS &&
	test "$(field gpu-copy GPU2:sm verdict)" = FAIL &&
	test "$(field gpu-copy GPU1:sm verdict)" = PASS &&
	field gpu-copy GPU2:sm source | grep -q "^config: the node.s median of 4 GPUs. SM copies .* x 5%" &&
	test "$(field allreduce node verdict)" = FAIL &&
	field allreduce node source | grep -q "^config: allreduce.min-busbw"
'
test_expect_success 'the decision table: a missed allreduce gets the GPU copies run and a layer named' '
	test "$(field diagnosis allreduce verdict)" = FAIL &&
	test "$(field diagnosis allreduce measured_text)" = "physical path" &&
	field diagnosis allreduce detail | grep -q "evidence: .*gpu-copy node01/GPU1-GPU2" &&
	PENNY_FAKE_SLOW=200 PENNY_FAKE_SLOW_GPU=2 PENNY_PLUGIN_PATH=$fake test_exit 1 penny check \
		--sysfs-root sw --only allreduce --quick --config tight.conf --json >check.json &&
	test "$(field gpu-copy GPU1-GPU2 verdict)" = FAIL &&
	test "$(field diagnosis allreduce measured_text)" = "physical path" &&
	gpucheck --config tight.conf --json >check.json &&
	! grep -q diagnosis check.json
'
test_expect_success 'wrong values fail the allreduce' '
	PENNY_PLUGIN_PATH=$BUILD/tests/plugins test_exit 1 penny check --sysfs-root sw \
		--only allreduce --quick --backend fakewrong --config generous.conf --json >check.json &&
	test "$(field allreduce node verdict)" = FAIL &&
	field allreduce node detail | grep -q "wrong values (fakewrong, 4 ranks)"
'
test_expect_success 'no GPU plugin (--backend host): gpu-copy is a SKIP saying why, exit 2' '
	PENNY_PLUGIN_PATH=$TRASH test_exit 2 penny check --sysfs-root sw --only gpu-copy \
		--backend host --json >check.json &&
	test "$(field gpu-copy node verdict)" = SKIP &&
	field gpu-copy node detail | grep -qx "host: the host engine has no GPU"
'
test_expect_success 'no GPU plugin: the allreduce runs on the host engine, no prediction' '
	PENNY_PLUGIN_PATH=$TRASH penny check --sysfs-root sw --only allreduce --quick --backend host \
		--config generous.conf --json >check.json &&
	test "$(field allreduce node verdict)" = PASS &&
	test "$(field allreduce node expected_text)" = none &&
	field allreduce node source | grep -q "^none: the host engine (no GPU plugin) has no topology"
'
test_expect_success 'a plugin without hostbw: the host copies are a SKIP saying why' '
	PENNY_PLUGIN_PATH=$BUILD/tests/plugins penny check --sysfs-root sw --only gpu-copy --quick \
		--backend fakeold --config generous.conf --json >check.json &&
	test "$(field gpu-copy host-copies verdict)" = SKIP &&
	field gpu-copy host-copies detail | grep -q "no page-locked copy test (hostbw)"
'
# a GPU whose kernels alone are slow (another process on its SMs: its copy
# engines are not): the allreduce of all misses, the ring of GPU pairs runs
# and the decision table names the GPU in every slow pair
test_expect_success 'a GPU with slow kernels only: the pairs name it, layer kernel' '
	gpucheck --config generous.conf --json >check.json &&
	ar=$(field allreduce node measured) &&
	{ grep -v "^allreduce.min-busbw" generous.conf
	  echo "allreduce.min-busbw = $(python3 -c "print($ar / 10)")"; } >kern.conf &&
	gpucheck --config kern.conf --json >check.json &&
	python3 -c "
import json, sys
d = json.load(open(\"check.json\"))
sys.exit(any(r[\"check\"] == \"allreduce\" and r[\"target\"] != \"node\" for r in d[\"results\"]))" &&
	PENNY_FAKE_SLOW=400 PENNY_FAKE_SLOW_GPU=2 PENNY_FAKE_SLOW_WHAT=allreduce test_exit 1 \
		gpucheck --config kern.conf --json >check.json &&
	test "$(field allreduce node verdict)" = FAIL &&
	test "$(field allreduce GPU1-GPU2 verdict)" = FAIL &&
	test "$(field allreduce GPU2-GPU3 verdict)" = FAIL &&
	test "$(field allreduce GPU3-GPU0 verdict)" = PASS &&
	test "$(field gpu-copy GPU2-GPU3 verdict)" = PASS &&
	test "$(field diagnosis allreduce measured_text)" = kernel &&
	field diagnosis allreduce detail | grep -q "every allreduce with GPU2 is slow"
'
# (the tree's GPU2 and GPU3 have no NIC within PXB: those rows FAIL in every run)
test_expect_success 'a GPU hidden by CUDA_VISIBLE_DEVICES: inventory FAILs where 4 are expected' '
	printf "inventory.gpus = 4\n" >inv.conf &&
	CUDA_VISIBLE_DEVICES=0,1,3 test_exit 1 penny check --sysfs-root sw --only inventory \
		--config inv.conf --json >check.json &&
	test "$(field inventory gpus verdict)" = FAIL &&
	test "$(field inventory gpus measured)" = 3 &&
	field inventory gpus detail | grep -q "3 of the node.s 4 GPUs usable: CUDA_VISIBLE_DEVICES=0,1,3 hides GPU2" &&
	CUDA_VISIBLE_DEVICES=3,2,1,0 test_exit 1 penny check --sysfs-root sw --only inventory \
		--config inv.conf --json >check.json &&
	test "$(field inventory gpus verdict)" = PASS &&
	CUDA_VISIBLE_DEVICES=0 test_exit 1 penny check --sysfs-root sw --only inventory --json >check.json &&
	test "$(field inventory gpus verdict)" = PASS &&
	test "$(field inventory gpus expected_text)" = any
'
test_done
