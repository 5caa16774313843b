#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# penny top in batch mode over fake sysfs trees that the test changes between
# samples: --once, --count/--interval, --json, --prom, -e, --filter, --sort,
# rates and x4 scaling, a counter going down (a reset: none wraps), a port going DOWN, devices
# appearing and going away, unreadable files, soft-RoCE, a blocked read,
# a FIFO in the tree, errors.
# cost: 29
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/helpers/top/top-lib.sh"

test_expect_success '--once: a table of 16 devices x 2 ports in natural order' '
	fake big --devices 16 --ports 2 &&
	penny top --sysfs-root big --once -i 0.3 >out 2>err &&
	test ! -s err &&
	grep -c "^mlx5_[0-9]*/[12] " out >n && test "$(cat n)" -eq 32 &&
	grep -o "^mlx5_[0-9]*/[12]" out >names &&
	for d in $(seq 0 15); do echo mlx5_$d/1; echo mlx5_$d/2; done >want &&
	test_cmp want names &&
	head -2 out | tail -1 | grep -q "^PORT  *STATE  *SPEED  *RX  *TX  *UTIL  *ERR  *DISC" &&
	grep -q "^mlx5_10/1  *ACTIVE  *100G  *0 b/s  *0 b/s  *0.0%  *0  *0$" out
'

# a replayed tree is files on a disk: reading it must not update their
# access times (relatime updates one older than the file's change)
atime() { stat -c %X "$1"; }
f=big/sys/class/infiniband/mlx5_3/ports/2/counters/port_rcv_data
touch -a -d "2 days ago" "$f" && a0=$(atime "$f") && cat "$f" >/dev/null
if [ "$(atime "$f")" = "$a0" ]; then
	test_skip 'a replayed tree keeps its access times' "reading does not update them here (noatime)"
else
	test_expect_success 'a replayed tree keeps its access times' '
		touch -a -d "2 days ago" "$f" && a0=$(atime "$f") &&
		penny top --sysfs-root big --count 2 -i 0.1 --json >/dev/null &&
		test "$(atime "$f")" = "$a0"
	'
fi

test_expect_success '--count 2 --json: one valid object per sample and line' '
	penny top --sysfs-root big --count 2 -i 0.2 --json >out.json &&
	python3 "$TOPH/check_json.py" out.json 2 &&
	json_valid out.json lines &&
	python3 -c "
import json
for l in open(\"out.json\"):
    s = json.loads(l)
    assert len(s[\"ports\"]) == 32, len(s[\"ports\"])
    assert abs(s[\"interval\"] - 0.2) < 1e-9
    assert 0.1 < s[\"elapsed\"] < 2, s[\"elapsed\"]
    p = s[\"ports\"][0]
    assert p[\"name\"] == \"mlx5_0/1\" and p[\"source\"] == \"counters\", p
    assert p[\"rate_gbps\"] == 100 and p[\"link_layer\"] == \"InfiniBand\"
"
'

# Samples synchronised through the --prom file: penny writes it after every
# reading (the baseline too), so the test changes the tree right after one
# reading and well before the next (interval 1.5 s).
test_expect_success 'rates, x4, going down, reset, DOWN, appearing/vanishing devices, unreadable file' '
	fake t --devices 5 --ports 2 &&
	ctr_set t mlx5_1 1 port_xmit_data 4294967000 &&
	ctr_set t mlx5_1 2 port_rcv_data 5000000000000 &&
	rm "$(ib t mlx5_3 1)/counters/port_rcv_data" &&
	mkdir "$(ib t mlx5_3 1)/counters/port_rcv_data" &&
	{ "$PENNY" top --sysfs-root t --count 3 -i 1.5 --json --prom sync.prom >s.json 2>err & } &&
	pid=$! &&
	wait_for 10 test -s sync.prom && i0=$(inode sync.prom) &&
	ctr_add t mlx5_0 1 port_xmit_data 1000000 &&
	ctr_add t mlx5_0 1 port_rcv_data 250000 &&
	ctr_add t mlx5_0 1 symbol_error 3 &&
	ctr_set t mlx5_1 1 port_xmit_data 704 &&
	ctr_set t mlx5_1 2 port_rcv_data 100 &&
	echo "1: DOWN" >"$(ib t mlx5_2 1)/state" &&
	$FAKESYS make t2 --devices 1 --ports 2 --prefix mlx5_1 &&
	mv t2/sys/class/infiniband/mlx5_10 t/sys/class/infiniband/ &&
	wait_for 10 inode_changed sync.prom "$i0" &&
	ctr_add t mlx5_0 1 port_xmit_data 500000 &&
	rm -rf t/sys/class/infiniband/mlx5_4 &&
	wait $pid &&
	test ! -s err &&
	python3 "$TOPH/check_json.py" s.json 3 &&
	python3 - <<-\EOF
	import json, math
	s = [json.loads(l) for l in open("s.json")]
	P = [{p["name"]: p for p in x["ports"]} for x in s]
	def moved(p, key):
	    return p[key] * p["elapsed"]
	a = P[0]["mlx5_0/1"]
	assert math.isclose(moved(a, "tx_bytes_per_sec"), 4000000, rel_tol=1e-6), a
	assert math.isclose(moved(a, "rx_bytes_per_sec"), 1000000, rel_tol=1e-6), a
	assert a["tx_bytes"] == 4000000 and a["counters"]["counters"]["port_xmit_data"] == {"value": 1000000, "delta": 1000000}, a
	assert a["errors"] == 3 and a["errors_total"] == 3, a
	w = P[0]["mlx5_1/1"]
	# nothing wraps (PortCounters saturate): down is a reset, from zero
	assert not w["wrapped"] and w["reset"], w
	assert math.isclose(moved(w, "tx_bytes_per_sec"), 704 * 4, rel_tol=1e-6), w
	assert w["tx_bytes"] == 704 * 4, w
	r = P[0]["mlx5_1/2"]
	assert r["reset"] and math.isclose(moved(r, "rx_bytes_per_sec"), 400, rel_tol=1e-6), r
	assert P[0]["mlx5_2/1"]["state"] == "DOWN" and P[1]["mlx5_2/1"]["state"] == "DOWN"
	u = P[0]["mlx5_3/1"]
	assert u["rx_bytes_per_sec"] is None and u["rx_bytes"] is None and u["unreadable"] == 1, u
	assert u["counters"]["counters"]["port_rcv_data"] == {"value": None, "delta": None}, u
	assert u["tx_bytes_per_sec"] == 0 and u["utilization"] == 0, u
	n = P[0]["mlx5_10/1"]
	assert n["rx_bytes_per_sec"] is None and n["elapsed"] == 0, n
	assert P[1]["mlx5_10/1"]["rx_bytes_per_sec"] == 0
	names = [p["name"] for p in s[0]["ports"]]
	assert names == ["mlx5_%d/%d" % (d, p) for d in (0, 1, 2, 3, 4, 10) for p in (1, 2)], names
	assert "mlx5_4/1" not in P[1] and "mlx5_4/2" not in P[1], list(P[1])
	assert math.isclose(moved(P[1]["mlx5_0/1"], "tx_bytes_per_sec"), 2000000, rel_tol=1e-6)
	assert P[2]["mlx5_0/1"]["tx_bytes_per_sec"] == 0 and P[2]["mlx5_0/1"]["errors"] == 0
	EOF
'

test_expect_success '--prom: textfile format, atomic rename, no temporary file left' '
	fake p --devices 2 --ports 1 &&
	ctr_set p mlx5_1 1 port_xmit_data 100 &&
	mkdir prom &&
	penny top --sysfs-root p --count 2 -i 0.2 --prom prom/penny.prom >out 2>err &&
	test ! -s out && test ! -s err &&
	python3 "$TOPH/check_prom.py" prom/penny.prom \
		--expect "penny_port_data_transmitted_bytes_total{device=\"mlx5_1\",port=\"1\"}=400" \
		--expect "penny_port_stat_bytes_total{device=\"mlx5_1\",port=\"1\",counter=\"port_xmit_data\"}=400" \
		--expect "penny_port_stat_packets_total{device=\"mlx5_1\",port=\"1\",counter=\"port_xmit_packets\"}=0" \
		--expect "penny_port_rate_bytes_per_second{device=\"mlx5_0\",port=\"1\"}=12500000000" \
		--expect "penny_port_up{device=\"mlx5_0\",port=\"1\"}=1" \
		--expect "penny_port_info{device=\"mlx5_0\",port=\"1\",type=\"rdma\",source=\"counters\"}=1" \
		--expect "penny_top_interval_seconds=0.2" &&
	grep -q "^# TYPE penny_port_data_transmitted_bytes_total counter$" prom/penny.prom &&
	grep -v "^#" prom/penny.prom | sed "s/[{ ].*//" | sort -u >names &&
	! grep -v "^penny_port_rate_bytes_per_second$" names | grep "rcv\|xmit\|_per_second$" &&
	! grep -q "unit=" prom/penny.prom &&
	grep -q "^# HELP penny_port_utilization_ratio " prom/penny.prom &&
	test "$(ls -A prom)" = penny.prom &&
	test "$(stat -c %a prom/penny.prom)" = 644
'

# Every inode the file has while top runs (polled every 50 ms): a busy
# machine may stall this shell past a whole interval, so two samples out of
# three may be seen as one; a file rewritten in place shows one inode only.
test_expect_success '--prom is replaced (a new file) at every sample' '
	{ "$PENNY" top --sysfs-root p --count 3 -i 0.7 --prom prom/penny.prom & } && pid=$! &&
	wait_for 10 test -s prom/penny.prom && : >seen &&
	while kill -0 $pid 2>/dev/null; do inode prom/penny.prom >>seen; sleep 0.05; done &&
	wait $pid && inode prom/penny.prom >>seen &&
	test "$(sort -u seen | wc -l)" -ge 2 && test "$(ls -A prom)" = penny.prom
'

test_expect_success '--prom with --json prints JSON too; the checker catches a broken file' '
	penny top --sysfs-root p --once -i 0.2 --prom prom/x.prom --json >out &&
	python3 "$TOPH/check_json.py" out 1 &&
	sed "s/^# TYPE penny_port_up gauge$//" prom/x.prom >bad.prom &&
	! python3 "$TOPH/check_prom.py" bad.prom 2>err && grep -q "without HELP and TYPE" err
'

test_expect_success 'soft-RoCE: bytes and packets from the parent netdev' '
	fake r --devices 0 --rxe rxe0:veth0 &&
	{ "$PENNY" top --sysfs-root r --count 1 -i 1.5 --json --prom r.prom >r.json & } && pid=$! &&
	wait_for 10 test -s r.prom &&
	echo 3000000 >r/sys/class/net/veth0/statistics/rx_bytes &&
	echo 1000000 >r/sys/class/net/veth0/statistics/tx_bytes &&
	wait $pid &&
	python3 "$TOPH/check_json.py" r.json 1 &&
	python3 -c "
import json, math
p = json.loads(open(\"r.json\").readline())[\"ports\"]
assert [x[\"name\"] for x in p] == [\"rxe0/1\"], p
p = p[0]
assert p[\"source\"] == \"statistics\" and p[\"netdev\"] == \"veth0\", p
assert p[\"link_layer\"] == \"Ethernet\" and p[\"rate_gbps\"] == 10, p
assert math.isclose(p[\"rx_bytes_per_sec\"] * p[\"elapsed\"], 3000000, rel_tol=1e-6), p
assert \"sent_pkts\" in p[\"counters\"][\"hw_counters\"], p
"
'

test_expect_success '-e adds netdevs (not lo); --filter and --sort choose rows' '
	fake e --devices 3 --netdev eth0 --netdev eth10 --netdev lo &&
	penny top --sysfs-root e --once -i 0.2 >out &&
	! grep -q "^eth" out &&
	penny top --sysfs-root e --once -i 0.2 -e >out &&
	grep -o "^[a-z0-9_/]*" out | grep -v "^$" >names &&
	printf "%s\n" mlx5_0/1 mlx5_1/1 mlx5_2/1 eth0 eth10 >want && test_cmp want names &&
	grep -q "^eth10  *UP  *25G " out &&
	penny top --sysfs-root e --once -i 0.2 -e --filter "eth*" >out &&
	test "$(grep -c "^eth" out)" -eq 2 && ! grep -q "^mlx5" out &&
	penny top --sysfs-root e --once -i 0.2 -f _1 >out &&
	grep -q "^mlx5_1/1 " out && test "$(grep -c "^mlx5" out)" -eq 1
'

test_expect_success '--sort rx puts the busiest port first' '
	fake s --devices 3 &&
	{ "$PENNY" top --sysfs-root s --count 1 -i 1.5 --sort rx --json --prom s.prom >out & } &&
	pid=$! && wait_for 10 test -s s.prom &&
	ctr_add s mlx5_1 1 port_rcv_data 1000 && ctr_add s mlx5_2 1 port_rcv_data 10 &&
	wait $pid &&
	grep -o "\"name\":\"mlx5_[0-9]/1\"" out | cut -d\" -f4 >names &&
	printf "%s\n" mlx5_1/1 mlx5_2/1 mlx5_0/1 >want && test_cmp want names &&
	penny top --sysfs-root s --once -i 0.1 --sort name | grep -o "^mlx5_[0-9]/1" >names &&
	printf "%s\n" mlx5_0/1 mlx5_1/1 mlx5_2/1 >want && test_cmp want names
'

test_expect_success 'no RDMA device at all: an empty table, exit 0' '
	mkdir -p empty/sys &&
	penny top --sysfs-root empty --once -i 0.1 >out && test "$(wc -l <out)" -eq 2 &&
	penny top --sysfs-root empty --once -i 0.1 --json >out &&
	python3 "$TOPH/check_json.py" out 1 && grep -q "\"ports\":\[\]" out
'

test_expect_success 'without a terminal and without options: tables until interrupted (exit 0)' '
	timeout --preserve-status -s INT 2 "$PENNY" top --sysfs-root p -i 0.5 </dev/null >out; rc=$? &&
	test "$rc" -eq 0 && test "$(grep -c "^# " out)" -ge 2
'

test_expect_success 'SIGTERM ends a --prom run cleanly (exit 0, no temporary file)' '
	rm -rf prom && mkdir prom &&
	{ "$PENNY" top --sysfs-root p -i 0.2 --prom prom/t.prom & } && pid=$! &&
	wait_for 10 test -s prom/t.prom && kill -TERM $pid; wait $pid; rc=$? &&
	test "$rc" -eq 0 && test "$(ls -A prom)" = t.prom
'
test_expect_success 'SIGHUP (the terminal went away) exits 129' '
	timeout --preserve-status -s HUP 1 "$PENNY" top --sysfs-root p -i 0.2 </dev/null >out; rc=$? &&
	test "$rc" -eq 129
'

# A read that hangs: tests/preload/block-read.so (a FIFO in a tree no longer
# blocks: sysfs files are opened non-blocking and must be regular files).
block_read() {
	PENNY_TEST_BLOCK=$1 LD_PRELOAD=$BUILD/tests/preload/block-read.so \
		ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0 "${@:2}"
}
test_expect_success 'a read that blocks fails a batch run after the stall limit, naming the port' '
	fake b --devices 2 &&
	start=$(date +%s) &&
	test_exit 2 block_read "$(ib b mlx5_1 1)/counters/port_xmit_data" \
		"$PENNY" top --sysfs-root b --count 1 -i 0.1 2>err &&
	test "$(wc -l <err)" -eq 1 && grep -q "mlx5_1/1.*has not returned" err &&
	test $(($(date +%s) - start)) -lt 15
'
test_expect_success 'a FIFO where a counter should be: not read, n/a at once' '
	rm "$(ib b mlx5_1 1)/counters/port_xmit_data" &&
	mkfifo "$(ib b mlx5_1 1)/counters/port_xmit_data" &&
	within 5 timeout 10 "$PENNY" top --sysfs-root b --count 1 -i 0.1 >out 2>err &&
	test "$WITHIN_RC" -eq 0 && test ! -s err &&
	grep -q "^mlx5_1/1  *ACTIVE  *100G  *0 b/s  *n/a " out
'

test_expect_success 'usage errors: one line, exit 2' '
	for args in "-i 0" "-i 2d" "--count -1" "--once --count 2" "--sort size" "extra" \
		"--prom /nonexistent/dir/x.prom --once" "--ca mlx5_0" "--lid 0" "--lid 12:x" \
		"--prom="; do
		test_exit 2 penny top --sysfs-root p $args 2>err </dev/null >/dev/null ||
			{ echo "args: $args"; exit 1; }
		test "$(wc -l <err)" -eq 1 || { echo "args: $args"; cat err; exit 1; }
		grep -q "^penny top: " err || { echo "args: $args"; cat err; exit 1; }
	done
'

test_expect_success '--lid without an InfiniBand fabric: one clear line, exit 2' '
	test_exit 2 penny top --sysfs-root p --lid 12 --once 2>err &&
	test "$(wc -l <err)" -eq 1 &&
	grep -q "^penny top: --lid: no InfiniBand" err
'

test_expect_success 'penny help top lists the options' '
	penny help top >out &&
	for o in --interval --count --once --prom --ethernet --lid --ca --filter --sort; do
		grep -q -- "$o" out || { echo "no $o"; exit 1; }
	done
'
test_done
