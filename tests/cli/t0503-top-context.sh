#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# penny top with the node's context: NUMA node, rail and GPUs served on every
# NIC row (table, JSON, Prometheus labels of penny_port_info), the rail view
# (--by-rail: ports summed per rail, each rail's share of the node), and
# nodes without GPUs or without a readable topology (no context, no error).
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/helpers/top/top-lib.sh"

ctx_tree ctx

test_expect_success 'the table: NUMA, RAIL and GPUS of each NIC row' '
	penny top --sysfs-root ctx --once -i 0.2 >out 2>err &&
	test ! -s err &&
	head -2 out | tail -1 | grep -q "^PORT .* DISC NUMA RAIL GPUS$" &&
	grep -q "^mlx5_0/1  *ACTIVE .*  0  *0 0-2$" out &&
	grep -q "^mlx5_0/2  *ACTIVE .*  0  *0 0-2$" out &&
	grep -q "^mlx5_1/1  *ACTIVE .*  1  *1 3$" out &&
	! grep -q "no GPU context" out
'

test_expect_success 'JSON: numa, rail and gpus per port' '
	penny top --sysfs-root ctx --once -i 0.2 --json >out.json &&
	python3 "$TOPH/check_json.py" out.json 1 &&
	python3 -c "
import json
s = json.loads(open(\"out.json\").read())
P = {p[\"name\"]: p for p in s[\"ports\"]}
want = {\"mlx5_0/1\": (0, 0, [0, 1, 2]), \"mlx5_0/2\": (0, 0, [0, 1, 2]), \"mlx5_1/1\": (1, 1, [3])}
for n, (numa, rail, gpus) in want.items():
    assert (P[n][\"numa\"], P[n][\"rail\"], P[n][\"gpus\"]) == (numa, rail, gpus), P[n]
"
'

test_expect_success 'Prometheus: numa, rail, gpus on penny_port_info only' '
	penny top --sysfs-root ctx --once -i 0.2 --prom ctx.prom >out 2>err &&
	test ! -s out && test ! -s err &&
	python3 "$TOPH/check_prom.py" ctx.prom \
		--expect "penny_port_info{device=\"mlx5_0\",port=\"2\",numa=\"0\",rail=\"0\",gpus=\"0-2\"}=1" \
		--expect "penny_port_info{device=\"mlx5_1\",port=\"1\",numa=\"1\",rail=\"1\",gpus=\"3\"}=1" &&
	grep -c "rail=" ctx.prom >n && test "$(cat n)" -eq 3 &&
	! grep -v "^penny_port_info{" ctx.prom | grep -q "rail=\|numa=\|gpus="
'

# The sample is synchronised through the --prom file (written after every
# reading, the baseline too): traffic is added between the two readings.
test_expect_success '--by-rail --json: ports summed per rail, shares of the node' '
	{ "$PENNY" top --sysfs-root ctx --count 1 -i 1.5 --json --by-rail --prom sync.prom \
		>r.json 2>err & } &&
	pid=$! &&
	wait_for 10 test -s sync.prom &&
	ctr_add ctx mlx5_0 1 port_xmit_data 1000000 &&
	ctr_add ctx mlx5_0 2 port_xmit_data 1000000 &&
	ctr_add ctx mlx5_1 1 port_rcv_data 500000 &&
	wait $pid &&
	test ! -s err &&
	json_valid r.json lines &&
	python3 - <<-\EOF
	import json, math
	s = json.loads(open("r.json").read())
	assert "ports" not in s, s.keys()
	R = s["rails"]
	assert [r["rail"] for r in R] == [0, 1], R
	a, b = R
	assert a["device"] == "mlx5_0" and a["ports"] == 2 and a["numa"] == 0, a
	assert a["gpus"] == [0, 1, 2] and b["gpus"] == [3] and b["numa"] == 1, R
	assert a["rate_gbps"] == 800 and b["rate_gbps"] == 400, R
	e = s["elapsed"]
	assert math.isclose(a["tx_bytes_per_sec"] * e, 8000000, rel_tol=0.05), a
	assert a["rx_bytes_per_sec"] == 0 and b["tx_bytes_per_sec"] == 0, R
	assert math.isclose(b["rx_bytes_per_sec"] * e, 2000000, rel_tol=0.05), b
	t = a["tx_bytes_per_sec"] + b["rx_bytes_per_sec"]
	assert math.isclose(a["share"], a["tx_bytes_per_sec"] / t, rel_tol=1e-9), a
	assert math.isclose(b["share"], b["rx_bytes_per_sec"] / t, rel_tol=1e-9), b
	assert math.isclose(a["share"], 0.8, abs_tol=0.01), a
	EOF
'

test_expect_success '--by-rail table: one row per rail, n/a shares without traffic' '
	penny top --sysfs-root ctx --once -i 0.2 --by-rail >out 2>err &&
	test ! -s err &&
	head -2 out | tail -1 | grep -q "^RAIL  *DEVICE  *PORTS  *SPEED  *RX  *TX  *SHARE  *NUMA  *GPUS$" &&
	test "$(wc -l <out)" -eq 4 &&
	grep -q "^0  *mlx5_0  *2  *800G  *0 b/s  *0 b/s  *n/a  *0 0-2$" out &&
	grep -q "^1  *mlx5_1  *1  *400G  *0 b/s  *0 b/s  *n/a  *1 3$" out
'

test_expect_success 'a node without GPUs: NUMA and rail, no GPUs, no error' '
	ctx_tree nogpu &&
	for f in nogpu/sys/bus/pci/devices/*/class; do
		if grep -q "^0x0302" "$f"; then echo 0x120000 >"$f"; fi
	done &&
	penny top --sysfs-root nogpu --once -i 0.2 >out 2>err &&
	test ! -s err &&
	head -1 out | grep -q "no GPU context: no GPUs in the topology$" &&
	grep -q "^mlx5_1/1  *ACTIVE .*  1  *1 -$" out &&
	penny top --sysfs-root nogpu --once -i 0.2 --json --prom ng.prom >out.json 2>err &&
	test ! -s err &&
	python3 "$TOPH/check_json.py" out.json 1 &&
	python3 -c "
import json
s = json.loads(open(\"out.json\").read())
assert all(p[\"gpus\"] == [] and p[\"rail\"] is not None for p in s[\"ports\"]), s
" &&
	python3 "$TOPH/check_prom.py" ng.prom \
		--expect "penny_port_info{device=\"mlx5_1\",port=\"1\",numa=\"1\",rail=\"1\"}=1" &&
	! grep -q "gpus=" ng.prom
'

test_expect_success 'no readable topology: no context columns, keys null, no error' '
	fake bare --devices 2 --ports 1 &&
	penny top --sysfs-root bare --once -i 0.2 >out 2>err &&
	test ! -s err &&
	head -1 out | grep -q "  no GPU context: " &&
	head -2 out | tail -1 | grep -q "DISC$" &&
	grep -q "^mlx5_1/1  *ACTIVE  *100G  *0 b/s  *0 b/s  *0.0%  *0  *0$" out &&
	penny top --sysfs-root bare --once -i 0.2 --json >out.json 2>err &&
	test ! -s err &&
	python3 "$TOPH/check_json.py" out.json 1 &&
	python3 -c "
import json
s = json.loads(open(\"out.json\").read())
assert all(p[\"numa\"] is None and p[\"rail\"] is None and p[\"gpus\"] == [] for p in s[\"ports\"]), s
" &&
	penny top --sysfs-root bare --once -i 0.2 --by-rail >out 2>err &&
	test ! -s err &&
	grep -q "^ *n/a  *n/a  *2 " out
'

test_done
