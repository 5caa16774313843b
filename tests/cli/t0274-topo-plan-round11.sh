#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Hardening, round 11 of penny topo and ring-plan: a synthetic cluster is
# bounded by real fabrics (65536 nodes, 524288 GPUs), --gpus-per-nic and
# --nics agree (no NIC near a GPU that does not exist), a --save write
# error names its own cause, and a sysfs number with junk after it is no
# number.
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/helpers/trees.sh"
unset PENNY_SYSROOT PENNY_NVML_LIB PENNY_DEBUG

# --nodes took up to 1048576 (x 16 GPUs: 1.9 GB and 8 s; --json 43 s and
# 5.9 GB of output); the largest fabrics have ~200k GPUs
test_expect_success 'ring-plan: more than 65536 nodes or 524288 GPUs is one line, at once' '
	timeout 5 "$PENNY" ring-plan --nodes 1048576 --gpus 16 --summary >out 2>err;
	test $? = 2 && test ! -s out &&
	test "$(cat err)" = "penny ring-plan: --nodes must be 1..65536, got 1048576" &&
	within 5 one_line_error 2 ring-plan --nodes 65536 --gpus 16 --summary &&
	grep -qx "penny ring-plan: --nodes 65536 x --gpus 16 is 1048576 GPUs; ring-plan plans at most 524288" err &&
	one_line_error 2 ring-plan --nodes 2 --show-schedule --schedule-rank 524288 &&
	grep -qx "penny ring-plan: --schedule-rank must be 0..524287, got 524288" err &&
	"$PENNY" ring-plan --help >help &&
	grep -q -- "--nodes N .*\[1\.\.65536\]" help &&
	within 60 "$PENNY" ring-plan --nodes 65536 --gpus 8 --summary >out &&
	grep -q "^ring plan: 65536 nodes x 8 GPUs x 8 NIC ports (synthetic), 524288 ranks$" out
'
test_expect_success 'ring-plan --check: a plan file of more than 65536 nodes has the same bound' '
	"$PENNY" ring-plan --nodes 2 --gpus 1 --nics 1 --json >p2.json &&
	python3 - <<-\EOF &&
	import json
	p = json.load(open("p2.json"))
	p["nodes"] = [dict(p["nodes"][0], host="h%d" % i, rank0=i) for i in range(65537)]
	p["nnodes"] = p["nranks"] = 65537
	json.dump(p, open("big.json", "w"))
	EOF
	one_line_error 2 ring-plan --check big.json &&
	grep -qx "penny ring-plan: .big.json.: 65537 nodes: ring-plan plans at most 65536 nodes and 524288 GPUs" err
'

# NIC i is near GPUs i*M..i*M+M-1: with more NICs than ceil(G/M), NICs
# 8-63 were "near" GPUs 8-63 of an 8-GPU node, and the default --nics (one
# per GPU) made that happen to every --gpus-per-nic above 1
test_expect_success 'ring-plan: --gpus-per-nic and --nics that disagree are one line' '
	one_line_error 2 ring-plan --nodes 2 --gpus 8 --nics 64 --gpus-per-nic 1 &&
	grep -qx "penny ring-plan: --gpus-per-nic 1 and --nics 64 leave NICs 8-63 near no GPU (8 GPUs need 8 NICs)" err &&
	one_line_error 2 ring-plan --nodes 2 --gpus 8 --nics 5 --gpus-per-nic 2 &&
	grep -qx "penny ring-plan: --gpus-per-nic 2 and --nics 5 leave NIC4 near no GPU (8 GPUs need 4 NICs)" err &&
	one_line_error 2 ring-plan --nodes 2 --gpus 8 --nics 1 --gpus-per-nic 7 &&
	grep -qx "penny ring-plan: --gpus-per-nic 7 and --nics 1 leave GPU7 without a NIC (8 GPUs need 2 NICs)" err &&
	"$PENNY" ring-plan --nodes 2 --gpus 8 --gpus-per-nic 2 --summary >out &&
	grep -q "^ring plan: 2 nodes x 8 GPUs x 4 NIC ports" out && ! grep -q "no GPU is near" out &&
	"$PENNY" ring-plan --nodes 2 --gpus 8 --gpus-per-nic 3 --summary >out &&
	grep -q "^ring plan: 2 nodes x 8 GPUs x 3 NIC ports" out && ! grep -q "no GPU is near" out
'

# The documented rule (penny(1)): an option given twice takes its last value
test_expect_success 'topo --save A --save B writes B only (the last value, as every option)' '
	tree_switches sw &&
	"$PENNY" topo --sysfs-root sw --save a.json --save b.json >out &&
	test ! -e a.json && json_valid b.json
'

# save_json read errno after pn_out_free: never reset before the writes, so
# a stream error that no write of its own reported named what an earlier
# call had left
test_expect_success 'topo --save: a write error names its cause, leaves nothing, exit 2' '
	tree_ports pt &&
	(trap "" XFSZ; ulimit -f 1; exec "$PENNY" topo --sysfs-root pt --save t.json) >/dev/null 2>err;
	test $? = 2 &&
	test "$(cat err)" = "penny topo: write error on '\''t.json'\'': File too large" &&
	test ! -e t.json && test -z "$(ls -A | grep "^\.\{0,1\}t\.json")"
'

# "1abc" in numa_node read as NUMA 1 (strtol stopped at the junk); the
# counter files were already read whole
test_expect_success 'topo: a sysfs number with junk after it is not read as a number' '
	tree_switches j &&
	d=j/sys/bus/pci/devices &&
	printf "1abc\n" >$d/0000:03:00.0/numa_node &&
	printf "1\n" >$d/0000:41:00.0/numa_node &&
	"$PENNY" topo --sysfs-root j --json >out.json &&
	python3 - <<-\EOF
	import json
	t = json.load(open("out.json"))
	g = {x["name"]: x for x in t["gpus"]}
	assert g["GPU0"]["numa"] == 0, g["GPU0"]   # from local_cpulist, not "1abc"
	assert g["GPU2"]["numa"] == 1, g["GPU2"]   # "1\n" is 1
	EOF
'
test_done
