#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# penny check's node names are never cut silently: a 64-byte hostname
# (Linux's longest) read as its first 63 bytes on a node alone, a name a
# row cannot hold now ends in "..." (60 bytes and the mark); the details
# that name another rank's node cut it at 40 bytes ("rank 2 (node %.40s)"),
# two nodes alike in their first 40 read as one, and other details cut
# names of 63 bytes at 60: now whole, as the rows name them.  Emulated
# nodes (PENNY_NODE_ID) on the tree of checkjob.sh, the A/B of t0847 on
# the test plugin named nccl.
# cost: 10
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/helpers/checkjob.sh"

H=$(printf "h%.0s" $(seq 63))z
# nodes FILE: the rows' node names in FILE (JSON), one line each
nodes() {
	python3 -c 'import json,sys
print("\n".join(sorted(set(x["node"] for x in json.load(open(sys.argv[1]))["results"]))))' "$1"
}

rail_tree n1
cp -a n1 long && echo "$H" >long/proc/sys/kernel/hostname
test_expect_success 'a node alone of a 64-byte host name: cut visibly, not to 63 bytes' '
	penny check --sysfs-root long --only inventory --json >o.json && nodes o.json >n &&
	cat n && test "$(cat n)" = "$(printf "h%.0s" $(seq 60))..." &&
	penny check --sysfs-root long --only inventory >o.txt && grep -q "^inventory  h\{60\}\.\.\.  " o.txt
'
if [ "$(id -u)" -eq 0 ] && unshare -u true 2>/dev/null; then
	test_expect_success 'a node alone of a 64-byte hostname (the live host): cut visibly' '
		unshare -u sh -c "hostname $H && exec \"\$0\" check --only inventory --json" "$PENNY" \
			>h.json; nodes h.json >n && cat n && test "$(cat n)" = "$(printf "h%.0s" $(seq 60))..."
	'
else
	test_skip 'a node alone of a 64-byte hostname (the live host)' 'needs root and unshare -u'
fi

# a name of 63 bytes (the most a row holds) in a detail was cut at 60
# ("no line of this node (%.60s)", nic-bw's peer, the ranks' "no GPU on")
M=$(printf "m%.0s" $(seq 60))xyz
test_expect_success 'a node name of 63 bytes: whole in the details, not cut at 60' '
	L=$TOP/tests/fixtures/nccl-log &&
	cat "$L/nccl-2.18-ipc-read.log" "$L/nccl-2.19-cumem-shm.log" >two.log &&
	cp -a n1 n63 && echo "$M" >n63/proc/sys/kernel/hostname &&
	test_exit 2 penny check --sysfs-root n63 --nccl-log two.log --only nccl-path --json >o.json &&
	python3 -c "import json; print([x[\"detail\"] for x in json.load(open(\"o.json\"))[\"results\"]
	if x[\"target\"] == \"log\"][0])" >d &&
	cat d && grep -qx "no line of this node ($M) among the log.s hosts" d
'

# two node names of 50 bytes alike but for their end
A=$(printf "dgx-h100-cluster-a-rack07-%024d" 0)-n0 B=$(printf "dgx-h100-cluster-a-rack07-%024d" 0)-n1
printf 'allreduce.size = 65536\nallreduce.min-busbw = 1000\njob.median-margin = 1\ngpu-copy.size = 1048576\n' >miss.conf
export PENNY_PLUGIN_PATH=$BUILD/tests/plugins/nccl PENNY_IB_DISABLE=1
test_expect_success 'a rank of the A/B fails: the detail names its node whole' '
	port=$(free_port) && ids=("$A" "$A" "$B" "$B") &&
	for r in 3 2 1 0; do
		FAKE_NCCL_PINNED=die FAKE_NCCL_PINNED_RANK=2 PENNY_NODE_ID=${ids[$r]} "$PENNY" check \
			--rank $r --nranks 4 --root 127.0.0.1:$port --sysfs-root n1 --timeout 6 --quick \
			--only allreduce --backend nccl --config miss.conf --json >out$r.json 2>err$r &
		pids[$r]=$!
	done
	rc= && for r in 0 1 2 3; do wait ${pids[$r]}; rc="$rc$?"; done && test "$rc" = 1111 &&
	python3 -c "import json
r = [x for x in json.load(open(\"out0.json\"))[\"results\"] if x[\"target\"] == \"job-rail\"]
print(r[0][\"detail\"])" >d && cat d &&
	grep -q "^pinned to the rail NICs, rank 2 (node $B) failed: died of signal 6" d
'

test_done
