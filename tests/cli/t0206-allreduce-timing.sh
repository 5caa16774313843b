#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The timing rule of allreduce-test (src/base/timing.h): every size as at
# least 5 timed blocks, the median block reported, the fastest and slowest
# kept in the JSON (with every block) and the CSV; -n spread over the
# blocks, or the calls per block by size; the nccl-tests table unchanged; a
# single stall (the test plugin's PENNY_FAKE_STALL) moves the slowest
# block, not the median, with a plugin of this header and with an older one
# (one block per call); and across nodes the proxy's connections are warmed
# before the first timed block.
. "$(dirname "$0")/../lib.sh"

fakes=$BUILD/tests/plugins
ar() { penny allreduce-test --timeout 30 "$@"; }
one_line() { test "$(wc -l <"$1")" -eq 1 || { cat "$1"; return 1; }; }

# check_rows FILE IPB BLOCKS: every row's blocks, iters per block, and the
# median, fastest and slowest of its blocks (IPB "auto": 32 MiB / size in 2..32)
check_rows() {
	python3 - "$@" <<-'EOF'
	import json, sys
	d = json.load(open(sys.argv[1]))
	ipb, nb = sys.argv[2], int(sys.argv[3])
	assert d["blocks"] == nb, d["blocks"]
	assert d["results"], "no rows"
	for r in d["results"]:
	    want = min(32, max(2, (32 << 20) // max(r["size"], 1))) if ipb == "auto" else int(ipb)
	    assert r["blocks"] == nb and r["iters_per_block"] == want, (r["size"], r["blocks"], r["iters_per_block"])
	    for k in ("oop", "ip"):
	        x = r[k]
	        b = sorted(x["blocks_us"])
	        assert len(b) == nb, (k, b)
	        med = b[nb // 2] if nb % 2 else (b[nb // 2 - 1] + b[nb // 2]) / 2
	        assert abs(x["time_us"] - med) <= 1e-9 * med, (x["time_us"], med)
	        assert x["time_min_us"] == b[0] and x["time_max_us"] == b[-1], x
	        assert x["time_min_us"] > 0
	        # algbw from the median
	        assert abs(x["algbw"] - r["size"] / x["time_us"] / 1e3) <= 1e-6 * x["algbw"] + 1e-12
	EOF
}

test_expect_success 'JSON: 5 blocks per size, the median reported, min, max and every block kept' '
	ar --np 2 -b 1K -e 4M -f 16 --json >out.json && json_valid out.json &&
	check_rows out.json auto 5 &&
	python3 -c "import json; d = json.load(open(\"out.json\")); assert d[\"iters\"] is None"
'
test_expect_success '-n spread over --blocks, and -n 0 times nothing' '
	ar --np 2 -b 1K -e 4K -f 4 -n 13 --blocks 6 --json >n.json && check_rows n.json 3 6 &&
	python3 -c "import json; d = json.load(open(\"n.json\")); assert d[\"iters\"] == 13" &&
	ar --np 2 -b 1K -e 1K -n 0 --json >z.json &&
	python3 -c "
import json
r = json.load(open(\"z.json\"))[\"results\"][0]
assert r[\"blocks\"] == 0 and r[\"iters_per_block\"] == 0, r
assert r[\"oop\"][\"blocks_us\"] == [] and r[\"oop\"][\"time_us\"] == 0 and r[\"oop\"][\"time_max_us\"] == 0
"
'
test_expect_success 'the nccl-tests table keeps its columns; the header says the rule' '
	ar --np 2 -b 1K -e 4K -f 4 >t.txt &&
	grep -q "^# minBytes 1024 maxBytes 4096 step: 4(factor) warmup iters: 5 iters: auto validation: 1$" t.txt &&
	grep -q "^# Timing: the median of 5 timed blocks per size" t.txt &&
	awk "/^ +[0-9]+ +[0-9]+ +float/ { n++; if (NF != 14) bad = 1 } END { exit !(n == 2 && !bad) }" t.txt &&
	ar --np 2 -b 1K -e 1K -n 20 >t20.txt &&
	grep -q " warmup iters: 5 iters: 20 validation: 1$" t20.txt
'
test_expect_success 'CSV: the old columns in their places, then min, max, blocks, iters per block' '
	ar --np 2 -b 1K -e 64K -f 8 --csv rows.csv >/dev/null &&
	head -1 rows.csv | grep -q "^algo,size,count,type,redop,oop_time_us,oop_algbw,oop_busbw,oop_wrong,ip_time_us,ip_algbw,ip_busbw,ip_wrong,backend,oop_differ,ip_differ,oop_time_min_us,oop_time_max_us,ip_time_min_us,ip_time_max_us,blocks,iters_per_block$" &&
	awk -F, "NR > 1 { n++; if (NF != 22 || \$17 > \$6 || \$6 > \$18 || \$19 > \$10 || \$10 > \$20 || \$21 != 5 || \$22 != 32) bad = 1 }
		END { exit !(n == 3 && !bad) }" rows.csv
'
test_expect_success '--blocks out of range, or ranks that disagree on it: one line, exit 2' '
	test_exit 2 penny allreduce-test --blocks 4 2>err && one_line err &&
	grep -q "blocks must be 5..100, got 4" err &&
	test_exit 2 penny allreduce-test --blocks 101 2>err && one_line err &&
	port=$(free_port) &&
	{ penny allreduce-test --rank 1 --nranks 2 --root 127.0.0.1:$port --timeout 10 --blocks 7 \
		-b 1K -e 1K >out1 2>err1 & } &&
	test_exit 2 penny allreduce-test --rank 0 --nranks 2 --root 127.0.0.1:$port --timeout 10 \
		-b 1K -e 1K >out0 2>err0;
	rc=$?; wait; test $rc = 0 && grep -q "ranks disagree on --blocks: rank 0 5, rank 1 7" err0
'

# stall JSON BACKEND: one 600 ms stall in block 2 of the out-of-place run
# (call 8: 1 warm-up call, blocks 0 and 1 of 3 calls, then block 2's first)
stall() {
	PENNY_PLUGIN_PATH=$fakes PENNY_FAKE_STALL=8:600 ar --np 2 --backend $2 -b 4K -e 4K -w 1 -n 15 \
		--json >$1 && json_valid $1 &&
	python3 - $1 <<-'EOF'
	import json, sys
	r = json.load(open(sys.argv[1]))["results"][0]
	o = r["oop"]
	assert r["blocks"] == 5 and r["iters_per_block"] == 3, r
	b = o["blocks_us"]
	# the stalled block holds 600 ms over 3 calls; its neighbours do not
	assert b[2] >= 190000 and o["time_max_us"] == b[2], b
	assert max(b[:2] + b[3:]) < 100000, b
	# the median stays with the other blocks, far below the stall (the
	# mean of every call would be at least 600 ms / 15 = 40 ms)
	assert o["time_us"] <= max(b[:2] + b[3:]) and o["time_us"] < 40000, o
	# in place: no stall
	assert r["ip"]["time_max_us"] < 100000, r["ip"]
	EOF
}
test_expect_success 'one stall moves the slowest block, not the median (this ABI: blocks in the plugin)' '
	stall s.json fake
'
test_expect_success 'the same with a plugin of the first ABI (one block per call of its time)' '
	stall so.json fakeold
'
test_expect_success 'PENNY_FAKE_STALL on one rank only holds every rank in that block' '
	PENNY_PLUGIN_PATH=$fakes PENNY_FAKE_STALL=8:600 PENNY_FAKE_STALL_RANK=1 ar --np 2 --backend fake \
		-b 4K -e 4K -w 1 -n 15 --json >s1.json &&
	python3 -c "
import json
o = json.load(open(\"s1.json\"))[\"results\"][0][\"oop\"]
b = o[\"blocks_us\"]
assert b[2] >= 190000 and o[\"time_us\"] < 40000, b
"
'

# job NODES PER ARGS: emulated nodes (PENNY_NODE_ID), rank r's stderr in err$r
job() {
	local nodes=$1 per=$2 port r pids= rc
	shift 2
	port=$(free_port) || return 1
	for ((r = 1; r < nodes * per; r++)); do
		PENNY_NODE_ID=n$((r / per)) "$PENNY" allreduce-test --rank $r --nranks $((nodes * per)) \
			--root 127.0.0.1:$port --timeout 30 "$@" >/dev/null 2>err$r &
		pids="$pids $!"
	done
	PENNY_NODE_ID=n0 "$PENNY" allreduce-test --rank 0 --nranks $((nodes * per)) \
		--root 127.0.0.1:$port --timeout 30 "$@" >out 2>err0
	rc=$?
	for p in $pids; do wait $p || rc=1; done
	return $rc
}

# every rank's proxy warmed each socket both ways before its first timed block
warmed_first() {
	local n=$1 socks=$2 peers=$3 r
	for ((r = 0; r < n; r++)); do
		awk -v r=$r -v s=$socks -v p=$peers '
			index($0, "cross-node proxy of rank " r ": warmed, 64 frames each way on each of " s " sockets to " p " peers") { w = NR }
			/plugin: timing [0-9]+ elements/ && !t { t = NR }
			END { exit !(w && t && w < t) }' err$r || { echo "rank $r"; cat err$r | head -20; return 1; }
	done
}

test_expect_success 'across nodes over tcp: every socket warmed both ways before the first timed block' '
	PENNY_PLUGIN_PATH=$fakes PENNY_XNODE_TRANSPORT=tcp job 2 1 --backend fake -b 1K -e 4K -f 4 \
		-n 5 -w 1 --debug=PLUGIN && grep -q "GPU-driven" out && warmed_first 2 4 1 &&
	PENNY_PLUGIN_PATH=$fakes PENNY_XNODE_TRANSPORT=tcp PENNY_XNODE_SOCKETS=2 job 3 1 --backend fake \
		-b 1K -e 1K -n 5 -w 1 --debug=PLUGIN && warmed_first 3 2 2
'
test_done
