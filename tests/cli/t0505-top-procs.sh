#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# penny top's process view (--processes, 'p'): the QP owners per RDMA device
# from RDMA netlink.  Here, without RDMA netlink: one clear line, exit 0,
# valid JSON.  Under a replayed root: the tree's penny/rdma-nldev (replies
# written by tests/helpers/top/rdmanl.py) and proc/PID/comm; a damaged
# reply, a refused dump; the screen (golden 80x24, 200x50, and the line).
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/helpers/top/top-lib.sh"
unset PENNY_NVML_LIB
NL="python3 $TOPH/rdmanl.py"

ctx_tree ctx
mkdir -p ctx/penny ctx/proc/4242 ctx/proc/4243 &&
echo "penny" >ctx/proc/4242/comm && printf 'esc\033[2Jape\n' >ctx/proc/4243/comm &&
$NL ctx/penny/rdma-nldev mlx5_0=0 mlx5_1=1 -- mlx5_0:4242:2x3 mlx5_0:4242:4 \
	mlx5_0:k=ib_core:1 mlx5_0:4243:2 mlx5_1:4242:2x2 mlx5_1:k=ib_core:1 || exit 1

live_note() {
	python3 -c "import socket; socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 20)" 2>/dev/null &&
		return 1
	return 0
}

if live_note; then
	test_expect_success 'no RDMA netlink here: one clear line instead of the view, exit 0' '
		penny top --once -i 0.2 --processes >out 2>err &&
		test ! -s err &&
		grep -qx "# no process view: this kernel has no RDMA netlink (ib_core not loaded)" out &&
		penny top --once -i 0.2 --processes --json >out.json 2>err &&
		test ! -s err &&
		json_valid out.json lines &&
		python3 -c "
import json
s = json.loads(open(\"out.json\").read())
assert s[\"processes\"] == [], s
assert s[\"processes_note\"].startswith(\"no process view: \"), s
"
	'
else
	test_skip 'no RDMA netlink' 'this kernel has RDMA netlink'
fi

test_expect_success 'without --processes: no process keys, no table' '
	penny top --sysfs-root ctx --once -i 0.2 --json >j 2>err && test ! -s err &&
	python3 -c "
import json
s = json.loads(open(\"j\").read())
assert \"processes\" not in s and \"processes_note\" not in s, s
" &&
	penny top --sysfs-root ctx --once -i 0.2 >t && ! grep -q "^DEVICE  *PID" t
'

test_expect_success 'the table: owners per device, pid, command, QPs, types' '
	penny top --sysfs-root ctx --once -i 0.2 --processes >out 2>err &&
	test ! -s err &&
	grep -q "^DEVICE  *PID COMMAND  *QPS TYPES$" out &&
	grep -q "^mlx5_0  *4242 penny  *4 RC,UD$" out &&
	grep -q "^mlx5_0  *- ib_core  *1 GSI$" out &&
	grep -q "^mlx5_1  *4242 penny  *2 RC$" out &&
	test "$(grep -c "^mlx5_[01]  *[0-9-]* " out)" -eq 5
'

test_expect_success '--processes --json: valid, every key, the command escaped' '
	penny top --sysfs-root ctx --once -i 0.2 --processes --json >p.json 2>err &&
	test ! -s err &&
	python3 "$TOPH/check_json.py" p.json 1 &&
	python3 - <<-\EOF
	import json
	s = json.loads(open("p.json").read())
	assert s["processes_note"] is None, s
	P = s["processes"]
	assert len(P) == 5, P
	a = P[0]
	assert a == {"device": "mlx5_0", "pid": 4242, "command": "penny", "kernel": False,
		     "qps": 4, "qp_types": ["RC", "UD"]}, a
	k = [p for p in P if p["kernel"]]
	assert len(k) == 2 and all(p["pid"] is None and p["command"] == "ib_core" for p in k), k
	e = [p for p in P if p["pid"] == 4243][0]
	assert e["command"] == "esc\x1b[2Jape" and e["qp_types"] == ["RC"], e
	EOF
'

test_expect_success 'a damaged reply or a refused dump: one clear line, exit 0' '
	cp -r ctx bad && head -c 70 ctx/penny/rdma-nldev >bad/penny/rdma-nldev &&
	penny top --sysfs-root bad --once -i 0.2 --processes >out 2>err &&
	test ! -s err && grep -q "^# no process view: reading penny/rdma-nldev: " out &&
	$NL bad/penny/rdma-nldev mlx5_0=0 --error 1 &&
	penny top --sysfs-root bad --once -i 0.2 --processes >out 2>err &&
	test ! -s err &&
	grep -qx "# no process view: the kernel does not allow reading penny/rdma-nldev (Operation not permitted)" out &&
	rm bad/penny/rdma-nldev &&
	penny top --sysfs-root bad --once -i 0.2 --processes --json >out 2>err &&
	test ! -s err && grep -q "\"processes_note\": *\"no process view: a replayed sysfs root has no RDMA netlink" out
'

if ! command -v tmux >/dev/null; then
	test_skip "process screen" "tmux is not installed"
	test_done
	exit 0
fi
. "$TOPH/screen-lib.sh"

test_expect_success 'the screen: p opens the process view, p goes back (golden)' '
	TREE=ctx start 80 24 -- -i 0.3 && shows "^sort name" &&
	key p && shows "^DEVICE  *PID COMMAND" && shows "^mlx5_1  *4242 penny" &&
	golden procs-80x24 &&
	has "^ *4243 esc?\[2Jape" &&
	key p && shows "^DEVICE PORT STATE" &&
	TREE=ctx start 200 50 -- -i 0.3 --processes && shows "^DEVICE  *PID COMMAND" &&
	shows "^mlx5_1  *4242 penny" && golden procs-200x50 &&
	key Escape && shows "^DEVICE PORT STATE" && key q && wait_for 5 exited && test "$(cat rc)" = 0
'

test_expect_success 'the screen without a source: the line instead of the view (golden)' '
	cp -r ctx empty && rm empty/penny/rdma-nldev &&
	TREE=empty start 80 24 -- -i 0.3 --processes && shows "^sort name" &&
	shows "no process view: a replayed sysfs root has no RDMA netlink" && golden procs-none-80x24 &&
	key q && wait_for 5 exited && test "$(cat rc)" = 0
'

test_done
