#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Hardening of ring-plan and topo (and bw's --expect over TCP, t0420): counts
# in the text say "1 GPU", "1 ring"; --nccl-graph takes Slurm's %N and
# refuses a % it does not know instead of writing it into the name; a
# 64-byte host name (Linux's longest) plans; --schedule-size is whole
# float32; --expect-state names every state it takes.
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/helpers/trees.sh"
unset PENNY_SYSROOT PENNY_NVML_LIB PENNY_DEBUG

test_expect_success 'ring-plan text: one of a thing is singular' '
	penny ring-plan --nodes 1 --gpus 1 --nics 1 --show-schedule --schedule-size 4 >out &&
	grep -qx "ring plan: 1 node x 1 GPU x 1 NIC port (synthetic), 1 rank" out &&
	grep -qx "1 ring" out &&
	grep -q "GB/s per ring, 0.00 GB/s over 1 ring$" out &&
	grep -qx "schedule: multiring, rank 0 (node01 GPU0), 4 B = 1 float32, 1 channel (one per ring)" out &&
	grep -qx "channel 0: 1 step" out &&
	! grep -E "(^| )1 (GPUs|ranks|rings|nodes|channels|steps|violations)\b" out &&
	penny ring-plan --nodes 2 --gpus 1 --nics 1 >out &&
	grep -qx "rails in use: 0; 1 ring" out && grep -qx "ring 0  rail 0  50.00 GB/s  (limit: node01 mlx5_0 recv (rail 0, 400 Gb/s))" out &&
	penny ring-plan --nodes 2 --gpus 8 >out && grep -q "^ring 0  rails 0,1  " out &&
	grep -qx "ring plan: 2 nodes x 8 GPUs x 8 NIC ports (synthetic), 16 ranks" out
'
test_expect_success 'ring-plan --check text: 1 rank, 1 ring, 1 violation' '
	penny ring-plan --nodes 1 --gpus 1 --nics 0 --json >one.json &&
	penny ring-plan --check one.json >out &&
	grep -qx "check one.json: json, 1 node, 1 rank, 1 ring" out && grep -qx "0 violations" out &&
	python3 -c "
import json; d = json.load(open(\"one.json\")); d[\"nrings\"] = 2; json.dump(d, open(\"bad.json\", \"w\"))" &&
	test_exit 1 penny ring-plan --check bad.json >out &&
	grep -qx "violation: the plan.s \"nrings\" is 2; it has 1 ring" out && grep -qx "1 violation" out &&
	test_exit 1 penny ring-plan --check bad.json --json >out.json 2>err && json_valid out.json &&
	grep -qx "penny ring-plan: FAILED: 1 violation in bad.json" err
'
test_expect_success 'ring-plan errors and notes count in the singular too' '
	one_line_error 2 ring-plan --nodes 1 --gpus 1 --nics 2 --gpus-per-nic 1 &&
	grep -qx "penny ring-plan: --gpus-per-nic 1 and --nics 2 leave NIC1 near no GPU (1 GPU needs 1 NIC)" err &&
	one_line_error 2 ring-plan --nodes 2 --hosts a &&
	grep -qx "penny ring-plan: --hosts names 1 host, --nodes is 2" err
'
test_expect_success '--nccl-graph: Slurm %N is the host name, %% a %, one file per node' '
	mkdir g && penny ring-plan --nodes 2 --hosts a,b --nccl-graph "g/%N-%%n.xml" --summary >out &&
	test "$(ls g | tr "\n" " ")" = "a-%n.xml b-%n.xml " &&
	grep -q "rank=" "g/a-%n.xml" &&
	penny ring-plan --nodes 2 --hosts a,b --nccl-graph "g/%%.xml" --summary >out &&
	test -f "g/%.xml" && grep -q "crossnic=\"2\"" "g/%.xml"
'
test_expect_success '--nccl-graph: an unknown % (Slurm %j, a stray %) is one line, nothing written' '
	mkdir h && cd h &&
	one_line_error 2 ring-plan --nodes 2 --nccl-graph "g-%j.xml" --json &&
	grep -qx "penny ring-plan: --nccl-graph .g-%j.xml.: .%j. is not a pattern (%h or %N: the host name, %n: the node index, %%: a %)" err &&
	for pat in "g-%t.xml" "g-50%.xml" "g-%" "%h-%x"; do
		one_line_error 2 ring-plan --nodes 2 --nccl-graph "$pat" || exit 1
		grep -q "is not a pattern (%h or %N: the host name, %n: the node index, %%: a %)$" err ||
			{ cat err; exit 1; }
	done &&
	test "$(ls -A | tr "\n" " ")" = "err out "
'
test_expect_success 'a host name of 64 bytes (Linux HOST_NAME_MAX) plans, live and from topo --save' '
	tree_switches T >/dev/null &&
	h=$(printf "a%.0s" $(seq 64)) && echo "$h" >T/proc/sys/kernel/hostname &&
	penny ring-plan --sysfs-root T --summary >out &&
	grep -q "rings stay inside $h," out &&
	penny topo --sysfs-root T --save t.json >/dev/null &&
	penny ring-plan --topo-file t.json --summary >out && grep -q "inside $h," out &&
	echo "${h}b" >T/proc/sys/kernel/hostname &&
	one_line_error 2 ring-plan --sysfs-root T &&
	grep -q "is empty or longer than 64 bytes$" err
'
test_expect_success '--schedule-size: a whole number of float32, not cut down to one' '
	one_line_error 2 ring-plan --nodes 1 --gpus 2 --show-schedule --schedule-size 6 &&
	grep -qx "penny ring-plan: --schedule-size 6 is not a whole number of float32 (4 bytes each)" err &&
	penny ring-plan --nodes 1 --gpus 2 --show-schedule --schedule-size 8 >out &&
	grep -q "8 B = 2 float32" out
'
test_expect_success 'topo --expect-state: the error names every state it takes' '
	tree_switches S >/dev/null &&
	one_line_error 2 topo --sysfs-root S --expect-state UP --json &&
	grep -qx "penny topo: invalid port state .UP. (DOWN, INIT, ARMED, ACTIVE, NOP, ACTIVE_DEFER or 0..5)" err &&
	penny topo --sysfs-root S --expect-state active_defer --json >out.json; test $? = 1 && json_valid out.json
'
test_done
