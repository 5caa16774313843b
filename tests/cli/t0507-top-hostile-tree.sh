#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# penny top over a lying sysfs tree: links out of the tree are followed as if
# the tree were / (a host name linked to a file outside is not shown), a
# rate of inf or 1e300 is no line rate, a 32-bit jump of port_xmit_data is
# no rate above the line, utilization stays in 0..1, and a counter that goes
# down is a reset, never a wrap.
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/helpers/top/top-lib.sh"

echo "root:*:19000:0:99999:7:::" >secret

test_expect_success 'a host name linked out of the tree is not read' '
	fake h --devices 1 &&
	ln -sf "$PWD/secret" h/proc/sys/kernel/hostname &&
	penny top --sysfs-root h --once -i 0.1 >out 2>err &&
	penny top --sysfs-root h --once -i 0.1 --json >out.json 2>>err &&
	! grep -q "root:" out out.json err &&
	head -1 out | grep -q "^# h " &&
	grep -q "\"host\":\"h\"" out.json
'

test_expect_success 'a relative link climbing out of the tree stays in it' '
	fake r --devices 1 --hostname inside &&
	mv r/proc/sys/kernel/hostname r/hn &&
	ln -sf ../../../../../../../../../../hn r/proc/sys/kernel/hostname &&
	ln -sf "$PWD/secret" r/sys/class/infiniband/mlx5_0/ports/1/rate &&
	penny top --sysfs-root r --once -i 0.1 --json >out.json 2>err &&
	! grep -q "root:" out.json err &&
	grep -q "\"host\":\"inside\"" out.json &&
	grep -q "\"rate\":null,\"rate_gbps\":null" out.json
'

# the tree changes right after the baseline, synchronised through --prom;
# 2^32 words (17.2 GB) in 1 s are 137 % of a 100 Gb/s port
jump_run() { # DIR INTERVAL -> s.json
	{ "$PENNY" top --sysfs-root "$1" --count 1 -i "$2" --json --prom "$1.prom" >s.json 2>err & } &&
	pid=$! && wait_for 10 test -s "$1.prom" &&
	shift 2 && "$@" && wait $pid
}
jump() {
	ctr_set j mlx5_0 1 port_xmit_data $((1000 + 4294967296)) &&
	ctr_set j mlx5_0 1 port_rcv_data 5 &&
	ctr_add j mlx5_1 1 port_xmit_data 4294967296
}

test_expect_success 'a 32-bit jump is no rate; a decrease a reset; inf no line rate' '
	fake j --devices 2 &&
	python3 $TOPH/fakesys.py set j sys/class/infiniband/mlx5_1/ports/1/rate "inf Gb/sec (4X NDR)" &&
	ctr_set j mlx5_0 1 port_xmit_data 1000 &&
	ctr_set j mlx5_0 1 port_rcv_data 4294967000 &&
	jump_run j 1 jump &&
	test ! -s err &&
	python3 "$TOPH/check_json.py" s.json 1 &&
	python3 - <<-\EOF
	import json
	s = json.loads(open("s.json").readline())
	P = {p["name"]: p for p in s["ports"]}
	a = P["mlx5_0/1"]
	assert a["tx_bytes_per_sec"] is None and a["jumped"], a
	assert not a["wrapped"] and a["reset"] and a["rx_bytes"] == 20, a
	assert 0 <= a["utilization"] <= 1, a
	b = P["mlx5_1/1"]
	assert b["rate"] is None and b["rate_gbps"] is None and b["utilization"] is None, b
	for p in s["ports"]:
	    u = p["utilization"]
	    assert u is None or 0 <= u <= 1, p
	EOF
'

# A recording is input penny did not make: values out of range are damage
# (the line is skipped, the rest read),
# time that goes back keeps the plot's x axis going forward, a port named
# twice is one series in Prometheus.
fake rec --devices 2 >/dev/null
penny top --sysfs-root rec --count 3 -i 0.1 --record rec.jsonl >/dev/null # 4 lines: a baseline
# edit LINE KEY VALUE: set KEY of the first port of line LINE (1-based; "wall": of the line)
edit() {
	python3 - "$@" <<-\EOF
	import json, sys
	n, key, val = int(sys.argv[1]), sys.argv[2], json.loads(sys.argv[3])
	L = [json.loads(l) for l in open("rec.jsonl")]
	if key == "wall":
	    L[n - 1]["wall"] = L[0]["wall"] + val
	elif key == "dup":
	    L[n - 1]["ports"].append(dict(L[n - 1]["ports"][0]))
	else:
	    L[n - 1]["ports"][0][key] = val
	sys.stdout.write("".join(json.dumps(x, separators=(",", ":")) + "\n" for x in L))
	EOF
}

test_expect_success 'replayed rates and utilization out of range are damage' '
	for kv in "rx_Bps -5" "tx_Bps 1e308" "util 3.68e9" "util -0.5" "rx_pps -1" "elapsed -3" \
		  "rate_gbps 1e300"; do
		edit 3 $kv >bad.jsonl &&
		penny top --replay bad.jsonl --json >out.json 2>err &&
		grep -q "bad.jsonl: line 3: port 1: .${kv%% *}. is out of range.*skipped it" err &&
		test "$(wc -l <out.json)" -eq 2 &&
		penny top --replay bad.jsonl --prom out.prom >/dev/null 2>&1 &&
		! grep -E "(-[0-9]|e\+?308|3680000000)" out.json out.prom || { cat err; return 1; }
	done
'

test_expect_success 'replayed time that goes back: the plot still goes forward' '
	edit 3 wall -100 >back.jsonl &&
	penny top --replay back.jsonl --plot back.svg 2>err &&
	python3 - <<-\EOF
	import re, xml.etree.ElementTree as E
	ns = "{http://www.w3.org/2000/svg}"
	root = E.parse("back.svg").getroot()
	paths = [p for g in root.iter(ns + "g") if g.get("class") == "panel" for p in g.findall(ns + "path")]
	assert paths, "no series"
	for p in paths:
	    xs = [float(x) for x in re.findall(r"[ML]\s*([-0-9.]+)[ ,]", p.get("d") or "")]
	    assert len(xs) >= 2, p.get("d")
	    assert xs == sorted(xs), xs
	EOF
'

test_expect_success 'a port named twice in a recording is one series in Prometheus' '
	edit 4 dup 0 >dup.jsonl &&
	penny top --replay dup.jsonl --prom dup.prom --json >/dev/null &&
	python3 "$TOPH/check_prom.py" dup.prom &&
	grep -v "^#" dup.prom | sed "s/ [^ ]*$//" | sort | uniq -d >dups &&
	test ! -s dups &&
	grep -q "^# penny: a second port with the labels of device=\"mlx5_0\",port=\"1\" is left out" dup.prom
'
test_done
