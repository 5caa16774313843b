#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A healthy node passes penny check every time, a sick one fails: the
# guards of what made check fail healthy GPU nodes.  On the synthetic
# 4-GPU machine with the test plugin as penny-cuda.so on its modeled clock
# (PENNY_FAKE_GBS: copies at 50 GB/s, the allreduce at a bus bandwidth of
# 45, whatever the machine is doing), so a verdict depends on what check
# does, not on how busy the test machine is:
# - 20 runs in a row pass while other processes keep every CPU busy;
# - one stalled call inside a timed block leaves the row passing (the
#   median of the blocks), while a slow allreduce still fails;
# - every mode runs the diagnosis' measurements (the test driver, like
#   CUDA's, refuses a process forked after its parent used it);
# - under --np the node row's ranks are spread over the node's CPUs, not
#   all on the CPU its leader rank was pinned to.
# cost: 14
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/helpers/trees.sh"
. "$TOP/tests/helpers/checkjson.sh"
unset PENNY_SYSROOT PENNY_DEBUG PENNY_FAKE_SLOW PENNY_FAKE_SLOW_GPU PENNY_FAKE_SLOW_WHAT \
	PENNY_FAKE_STALL PENNY_FAKE_STALL_RANK PENNY_BIND PENNY_FAKE_CPUS_LOG
tree_switches sw
export PENNY_FAKE_GPUS=4 PENNY_NODE_ID=node01 PENNY_FAKE_GBS=50
printf 'allreduce.size = 65536\ngpu-copy.size = 1048576\n' >trust.conf
chk() {
	PENNY_PLUGIN_PATH=$BUILD/tests/plugins/cuda:$BUILD/tests/plugins/nccl \
		penny check --sysfs-root sw --config trust.conf \
		--timeout 20 "$@"
}

test_expect_success 'a healthy node: the node row meets the expectation its copies give' '
	chk --quick --only allreduce --json >check.json && json_valid check.json &&
	test "$(field allreduce node verdict)" = PASS &&
	field allreduce node source | grep -q "^gpu-copy matrix: slowest pair GPU[0-3]->GPU[0-3] 50 GB/s measured x 75%" &&
	python3 -c "import sys; sys.exit(abs(float(sys.argv[1]) - 45) > 0.5)" \
		"$(field allreduce node measured)"
'

test_expect_success '20 runs in a row pass while every CPU is kept busy' '
	hogs= &&
	for i in $(seq "$(nproc)"); do
		( while :; do :; done ) & hogs="$hogs $!"
	done &&
	pass=0 &&
	for i in $(seq 20); do
		chk --quick --only allreduce >run$i.txt 2>&1 && pass=$((pass + 1))
	done;
	kill $hogs; wait $hogs 2>/dev/null
	echo "$pass of 20 passed"; test "$pass" = 20 || { cat run*.txt | grep -v PASS; false; }
'

# Each rank's 6th call is in a timed block whatever the warm-up and the
# check of the values before it (-n 5 -w 2: five blocks of one call).
test_expect_success 'one call stalled in a timed block: the row still passes' '
	PENNY_FAKE_STALL=6:1000 PENNY_PLUGIN_PATH=$BUILD/tests/plugins/cuda penny allreduce-test \
		--np 4 --backend cuda --sysfs-root sw -b 65536 -e 65536 -n 5 -w 2 --json >ar.json &&
	python3 -c "
import json, sys
o = json.load(open(\"ar.json\"))[\"results\"][0][\"oop\"]
print(o[\"blocks_us\"])
sys.exit(not (o[\"time_max_us\"] >= 1e6 and o[\"time_us\"] < 10 and o[\"busbw\"] > 44))" &&
	t0=$(date +%s) &&
	PENNY_FAKE_STALL=6:2000 chk --quick --only allreduce --json >check.json &&
	test $(($(date +%s) - t0)) -ge 2 &&
	test "$(field allreduce node verdict)" = PASS
'

test_expect_success 'a slow allreduce still fails' '
	PENNY_FAKE_SLOW=4 PENNY_FAKE_SLOW_WHAT=allreduce test_exit 1 \
		chk --quick --only allreduce --json >check.json &&
	test "$(field allreduce node verdict)" = FAIL &&
	test "$(field diagnosis allreduce verdict)" = FAIL
'

# A slow allreduce on GPU2 only: the diagnosis times the copies and the
# pairs in fresh processes; none may meet a driver its parent initialised.
for mode in "--only allreduce" "--quick --only allreduce" "--quick" "--np 2 --quick --only allreduce"; do
	test_expect_success "check $mode: the diagnosis measures, no CUDA error 3" '
		PENNY_FAKE_SLOW=8 PENNY_FAKE_SLOW_GPU=2 PENNY_FAKE_SLOW_WHAT=allreduce test_exit 1 \
			chk '"$mode"' --json >check.json 2>err &&
		! grep -q "CUDA error\|initialization error" check.json err &&
		test "$(field allreduce node verdict)" = FAIL &&
		test "$(field allreduce GPU1-GPU2 verdict)" = FAIL &&
		test "$(field allreduce GPU3-GPU0 verdict)" = PASS &&
		test "$(field diagnosis allreduce measured_text)" = kernel &&
		field diagnosis allreduce detail | grep -q "every allreduce with GPU2 is slow"
	'
done

# The check's ranks are pinned one CPU each; the node row's four ranks
# must get the CPUs of the node's ranks (before: all on rank 0's one CPU,
# half the bandwidth on a GPU node).
test_expect_success 'check --np 2: the node row.s ranks spread over the node.s CPUs' '
	test "$(nproc)" -ge 2 || { echo "one CPU: nothing to spread"; exit 0; }
	PENNY_FAKE_CPUS_LOG=$PWD/cpus.log chk --np 2 --quick --only allreduce >out.txt &&
	cat cpus.log && grep -q "^cuda rank 3 cpus " cpus.log &&
	sed -n "s/^cuda rank [23] cpus //p" cpus.log | tr , "\n" | sort -u >cpus &&
	test "$(wc -l <cpus)" -ge 2
'

test_done
