#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# penny top's GPU rows from NVML (the fake libnvidia-ml of
# tests/helpers/nvml/fake-nvml.c with moving counters): NVLink and PCIe
# rates in the table, JSON and Prometheus; wraps and resets; the sampled
# PCIe throughput where the counters are missing; no NVML: no rows, one
# note, no error; the screen with its GPU rows and 'g' (golden).
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/helpers/top/top-lib.sh"
unset PENNY_NVML_LIB FAKE_NVML_LINKS FAKE_NVML_GPUS FAKE_NVML_TRAFFIC FAKE_NVML_PCIE_KBPS \
	FAKE_NVML_PCIE32 FAKE_NVML_INIT_FAIL

cc=${CC:-cc}
if ! "$cc" -shared -fPIC -o libfake-nvml.so "$TOP/tests/helpers/nvml/fake-nvml.c"; then
	test_skip 'GPU rows' "no C compiler ($cc) to build the fake libnvidia-ml"
	test_done
	exit 0
fi
export PENNY_NVML_LIB=$PWD/libfake-nvml.so FAKE_NVML_TRAFFIC=$PWD/traffic
export FAKE_NVML_GPUS="0000:07:00.0=NVIDIA H100 80GB HBM3;0000:08:00.0=NVIDIA H100 80GB HBM3"
ctx_tree ctx
# traffic BUSID NVL_TX NVL_RX PCIE_TX PCIE_RX...: the counters, replaced at once
traffic() {
	local t=traffic.tmp
	: >$t
	while [ $# -ge 5 ]; do echo "$1 $2 $3 $4 $5" >>$t; shift 5; done
	mv $t traffic
}
traffic 0000:07:00.0 0 0 0 0 0000:08:00.0 - - 0 0

test_expect_success 'the table: one row per GPU, no rate on the baseline' '
	penny top --sysfs-root ctx --once -i 0.2 >out 2>err &&
	test ! -s err &&
	grep -q "^GPU NAME  *BUS ID  *NVLINK RX  *NVLINK TX  *PCIE RX  *PCIE TX$" out &&
	grep -q "^0   NVIDIA H100 80GB HBM3  *0000:07:00.0  *0 b/s  *0 b/s  *0 b/s  *0 b/s$" out &&
	grep -q "^1   NVIDIA H100 80GB HBM3  *0000:08:00.0  *n/a  *n/a  *0 b/s  *0 b/s$" out &&
	! grep -q "no GPU rows" out
'

test_expect_success 'the GPU rows are recorded and replayed with their rates' '
	penny top --sysfs-root ctx --count 2 -i 0.2 --record g.rec >live 2>err &&
	test ! -s err &&
	python3 -c "import json; s = [json.loads(l) for l in open(\"g.rec\")]; \
		assert all(len(x[\"gpus\"]) == 2 for x in s), s[0].get(\"gpus\")" &&
	penny top --replay g.rec --count 2 >replayed 2>err &&
	test ! -s err &&
	grep "^[01]   NVIDIA H100" live >want && grep "^[01]   NVIDIA H100" replayed >got &&
	sed "s/0000:0[78]:00.0//" want | tr -s " " >want.n && tr -s " " <got >got.n &&
	test_cmp want.n got.n
'

# synchronised through the --prom file, as in t0503: counters move between
# the baseline and the sample
test_expect_success 'JSON and --prom: NVLink KiB and PCIe bytes become rates' '
	{ "$PENNY" top --sysfs-root ctx --count 1 -i 1.5 --json --prom g.prom >g.json 2>err & } &&
	pid=$! &&
	wait_for 10 test -s g.prom &&
	traffic 0000:07:00.0 4000 2000 3000000 1000000 0000:08:00.0 - - 500 0 &&
	wait $pid &&
	test ! -s err &&
	python3 "$TOPH/check_json.py" g.json 1 &&
	python3 - <<-\EOF &&
	import json, math
	s = json.loads(open("g.json").read())
	assert s["gpu_note"] is None, s
	a, b = s["gpus"]
	e = s["elapsed"]
	assert (a["index"], a["name"], a["bus_id"]) == (0, "NVIDIA H100 80GB HBM3", "0000:07:00.0"), a
	assert math.isclose(a["nvlink_tx_bytes_per_sec"] * e, 4000 * 1024, rel_tol=0.1), a
	assert math.isclose(a["nvlink_rx_bytes_per_sec"] * e, 2000 * 1024, rel_tol=0.1), a
	assert math.isclose(a["pcie_tx_bytes_per_sec"] * e, 3000000, rel_tol=0.1), a
	assert math.isclose(a["pcie_rx_bytes_per_sec"] * e, 1000000, rel_tol=0.1), a
	assert a["nvlink_tx_bytes"] == 4096000 and a["pcie_rx_bytes"] == 1000000, a
	assert a["pcie_source"] == "counters" and not a["wrapped"] and not a["reset"], a
	assert b["nvlink_tx_bytes_per_sec"] is None and b["nvlink_tx_bytes"] is None, b
	assert b["pcie_tx_bytes"] == 500, b
	EOF
	python3 "$TOPH/check_prom.py" g.prom \
		--expect "penny_gpu_info{gpu=\"0\",bus_id=\"0000:07:00.0\",name=\"NVIDIA H100 80GB HBM3\"}=1" \
		--expect "penny_gpu_nvlink_transmitted_bytes_total{gpu=\"0\",bus_id=\"0000:07:00.0\"}=4096000" \
		--expect "penny_gpu_pcie_received_bytes_total{gpu=\"0\",bus_id=\"0000:07:00.0\"}=1000000" \
		--expect "penny_gpu_pcie_transmitted_bytes_total{gpu=\"1\",bus_id=\"0000:08:00.0\"}=500" &&
	grep -q "^# TYPE penny_gpu_nvlink_received_bytes_total counter$" g.prom &&
	grep -q "^# HELP penny_gpu_pcie_transmitted_bytes_per_second " g.prom &&
	! grep -q "^penny_gpu_[a-z_]*_per_second{" g.prom &&
	{ ! command -v promtool >/dev/null || promtool check metrics <g.prom; }
'

test_expect_success 'a 32-bit PCIe counter wraps; a counter that drops is a reset' '
	traffic 0000:07:00.0 5000 0 4294967000 0 &&
	{ FAKE_NVML_PCIE32=1 "$PENNY" top --sysfs-root ctx --count 1 -i 1.5 --json --prom w.prom \
		>w.json 2>err & } &&
	pid=$! &&
	wait_for 10 test -s w.prom &&
	traffic 0000:07:00.0 10 0 704 0 &&
	wait $pid &&
	test ! -s err &&
	python3 - <<-\EOF
	import json
	a = json.loads(open("w.json").read())["gpus"][0]
	assert a["wrapped"] and a["reset"], a
	assert a["pcie_tx_bytes"] == 1000, a
	assert a["nvlink_tx_bytes"] == 0 and a["nvlink_tx_bytes_per_sec"] is None, a
	EOF
'

test_expect_success 'no PCIe counters: nvmlDeviceGetPcieThroughput, in KB/s' '
	traffic 0000:07:00.0 0 0 - - &&
	FAKE_NVML_PCIE_KBPS="100 200" penny top --sysfs-root ctx --once -i 0.2 --json >p.json 2>err &&
	test ! -s err &&
	python3 - <<-\EOF
	import json
	a = json.loads(open("p.json").read())["gpus"][0]
	assert a["pcie_source"] == "sampled", a
	assert a["pcie_tx_bytes_per_sec"] == 102400 and a["pcie_rx_bytes_per_sec"] == 204800, a
	assert a["pcie_tx_bytes"] is None, a
	EOF
'

test_expect_success 'no NVML, a failing one, no GPUs: no rows, one note, exit 0' '
	PENNY_NVML_LIB=/nonexistent penny top --sysfs-root ctx --once -i 0.2 >out 2>err &&
	test ! -s err &&
	head -1 out | grep -q "  no GPU rows: NVML (libnvidia-ml.so.1) not found$" &&
	! grep -q "^GPU " out &&
	FAKE_NVML_INIT_FAIL=1 penny top --sysfs-root ctx --once -i 0.2 --json --prom n.prom >n.json 2>err &&
	test ! -s err &&
	python3 -c "
import json
s = json.loads(open(\"n.json\").read())
assert s[\"gpus\"] == [] and s[\"gpu_note\"].startswith(\"no GPU rows: NVML did not\"), s
" &&
	! grep -q penny_gpu_ n.prom &&
	FAKE_NVML_GPUS= penny top --sysfs-root ctx --once -i 0.2 >out 2>err &&
	test ! -s err && head -1 out | grep -q "no GPU rows: NVML sees no GPUs$"
'

test_expect_success 'a replayed root without PENNY_NVML_LIB: the live NVML is never asked' '
	env -u PENNY_NVML_LIB "$PENNY" top --sysfs-root ctx --once -i 0.2 --json >r.json 2>err &&
	test ! -s err &&
	python3 -c "
import json
s = json.loads(open(\"r.json\").read())
assert s[\"gpus\"] == [] and s[\"gpu_note\"] is None, s
"
'

if ! command -v tmux >/dev/null; then
	test_skip "GPU screen" "tmux is not installed"
	test_done
	exit 0
fi
. "$TOPH/screen-lib.sh"

test_expect_success 'the screen: GPU rows under the NICs, g hides them (golden 80x24, 200x50)' '
	traffic 0000:07:00.0 0 0 0 0 0000:08:00.0 - - 0 0 &&
	TREE=ctx start 80 24 PENNY_NVML_LIB=$PENNY_NVML_LIB -- -i 0.3 && shows "^sort name" &&
	shows "^GPU NAME" && golden gpu-80x24 &&
	key g && wait_for 5 eval "! has \"^GPU NAME\"" && key g && shows "^GPU NAME" &&
	TREE=ctx start 200 50 PENNY_NVML_LIB=$PENNY_NVML_LIB -- -i 0.3 && shows "^sort name" &&
	shows "^GPU NAME" && golden gpu-200x50 &&
	key q && wait_for 5 exited && test "$(cat rc)" = 0
'

# the rail view (r) with the GPU rows: each rail with its NUMA node and the
# GPUs it serves, its share of the node's traffic, the GPUs' NVLink and PCIe
test_expect_success 'the screen: the rail view with GPU rows (golden 80x24, 200x50)' '
	traffic 0000:07:00.0 0 0 0 0 0000:08:00.0 - - 0 0 &&
	TREE=ctx start 80 24 PENNY_NVML_LIB=$PENNY_NVML_LIB -- -i 0.3 && shows "^sort name" &&
	key r && shows "SHARE" && shows "^GPU NAME" && golden rails-80x24 &&
	TREE=ctx start 200 50 PENNY_NVML_LIB=$PENNY_NVML_LIB -- -i 0.3 && shows "^sort name" &&
	key r && shows "SHARE" && shows "^GPU NAME" && golden rails-200x50 &&
	key r && shows "^mlx5_0  *1 ACTIVE" &&
	key q && wait_for 5 exited && test "$(cat rc)" = 0
'

test_expect_success 'the screen without NVML: the note in the header, no rows' '
	TREE=ctx start 120 24 PENNY_NVML_LIB=/nonexistent -- -i 0.3 &&
	shows "^sort name  no GPU rows: NVML (libnvidia-ml.so.1) not found" &&
	! has "^GPU NAME" && key q && wait_for 5 exited
'

test_done
