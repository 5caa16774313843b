#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Guest side of t0150 (after rxe.sh): penny bw on soft-RoCE, two hosts x two rails
# (vm.sh --pairs 2: rxe0<->rxe1 over veth0/1, rxe2<->rxe3 over veth2/3).
. "$(dirname "$0")/lib-guest.sh"
# 20 messages per size: each penny bw start costs seconds in the guest, the
# messages a fraction of one
N="-n 20"
warm_python

# row of a given size from a text table
# packets a device received
rcvd() { hwc "$1" rcvd_pkts; }
row() { grep -E "^ $1 " "$2"; }
# a server in the background on port $1, then the client; both outputs kept
pair() {
	local p=$1
	shift
	timeout 120 "$PENNY" bw -p "$p" "$@" >srv.out 2>srv.err &
	wait_listen "$p"
}

test_expect_success 'server (rxe1) and client (rxe0) across the veth: same table on both sides' '
	pair 18601 -d rxe1 $N &&
	penny bw -p 18601 -d rxe0 $N 10.0.0.2 >cli.out && wait $! &&
	grep -q "RDMA_Write BW Test" cli.out &&
	grep -q "Link            : rxe0:1 -> rxe1:1" cli.out &&
	grep -q "Link            : rxe0:1 -> rxe1:1" srv.out &&
	row 65536 cli.out >a && row 65536 srv.out >b && test_cmp a b &&
	grep -qE "^ 65536 +20 +[0-9.]+ +[0-9.]+ +[0-9.]+$" cli.out &&
	grep -q "Link use        : [0-9.]* % of 10 Gb/s at 65536 bytes" cli.out &&
	grep -q "Mtu             : 1024\[B\]   GID index : 1 (::ffff:10.0.0.1)" cli.out &&
	grep -q "Link rate       : 10 Gb/s" cli.out &&
	sed -n "/#bytes/,\$p" cli.out | sed "s/^/# /" >&3
' 3>&1
test_expect_success 'loopback on one device and between two devices' '
	penny bw --loopback rxe0 $N -s 4096 >one.out &&
	grep -q "Link            : rxe0:1 -> rxe0:1" one.out && row 4096 one.out &&
	penny bw --loopback rxe2,rxe3 $N -s 4096 >two.out &&
	grep -q "Link            : rxe2:1 -> rxe3:1" two.out && row 4096 two.out
'
test_expect_success 'read and send, several QPs, a duration (-D)' '
	penny bw --loopback rxe0,rxe1 --op read -q 4 $N -s 65536 >rd.out && row 65536 rd.out &&
	grep -q "RDMA_Read BW Test" rd.out && grep -q "Number of qps   : 4" rd.out &&
	penny bw --loopback rxe0,rxe1 --op send -q 2 -n 4 -s 1M >sd.out && row 1048576 sd.out &&
	grep -q "Send BW Test" sd.out &&
	penny bw --loopback rxe0,rxe1 -D 1 -s 4096 >dur.out &&
	grep -q "for 1 s per size" dur.out && row 4096 dur.out
'
test_expect_success 'bidirectional: both directions counted' '
	penny bw --loopback rxe0,rxe1 -b $N -s 65536 >bi.out &&
	grep -q "(bidirectional)" bi.out && grep -qE "^ 65536 +40 " bi.out
'
test_expect_success 'latency: write, send and read, percentiles in order' '
	for op in write send read; do
		penny bw --loopback rxe0,rxe1 --lat --op $op -s 8 -n 20 --json >lat.$op.json || exit 1
	done &&
	python3 -c "
import json
for op in (\"write\", \"send\", \"read\"):
    r = json.load(open(\"lat.%s.json\" % op))[\"links\"][0][\"results\"][0]
    v = [r[k] for k in (\"lat_min_us\", \"lat_median_us\", \"lat_p99_us\", \"lat_p999_us\", \"lat_max_us\")]
    assert r[\"iterations\"] == 20 and v == sorted(v) and v[0] > 0, r
    print(\"# rxe %s latency 8 B: median %.1f us, p99 %.1f us\" % (op, v[1], v[2]))
" >&3
' 3>&1
test_expect_success 'inline data: 220 B by default with --lat, -I sets it' '
	penny bw --loopback rxe0,rxe1 --lat -s 8 -n 5 >inl.out &&
	grep -q "Max inline data : 220\[B\]" inl.out &&
	penny bw --loopback rxe0,rxe1 -s 64 -n 5 >noinl.out &&
	grep -q "Max inline data : 0\[B\]" noinl.out &&
	penny bw --loopback rxe0,rxe1 --lat -I 0 -s 8 -n 5 >inl0.out &&
	grep -q "Max inline data : 0\[B\]" inl0.out &&
	penny bw --loopback rxe0,rxe1 --op send -I 64 -s 64 -n 20 >inls.out && row 64 inls.out &&
	grep -q "Max inline data : 64\[B\]" inls.out &&
	! penny bw --loopback rxe0,rxe1 -I 5000 2>err && grep -q "^penny bw: -I" err
'
test_expect_success 'GPU memory (--use_cuda): the plugin'"'"'s dma-buf goes to ibv_reg_dmabuf_mr; refusals are one line' '
	# the cuda-named test plugin; rxe cannot register dma-bufs (and no dma-buf
	# exporter exists here): the call is made and its refusal reported
	cu=${BUILD:-$TOP/build}/tests/plugins/cuda && test -f $cu/penny-cuda.so &&
	! PENNY_PLUGIN_PATH=$cu PENNY_FAKE_DMABUF=memfd penny bw --loopback rxe0,rxe1 --use_cuda 0 \
		-s 64K -n 10 >out 2>err &&
	grep -q "^penny bw: ibv_reg_dmabuf_mr of 131072 bytes (fd [0-9]*, offset [0-9]*) on rxe0:1: Operation not supported$" err &&
	! PENNY_PLUGIN_PATH=$cu penny bw --loopback rxe0,rxe1 --use_cuda 0 -s 64K -n 10 2>err &&
	grep -q "^penny bw: cuda plugin: dma-buf export: fake: no dma-buf exporter" err &&
	! PENNY_PLUGIN_PATH=$cu penny bw --loopback rxe0,rxe1 --use_cuda 0 --lat 2>err &&
	test "$(wc -l <err)" -eq 1 && grep -q "use_cuda measures bandwidth" err
'
test_expect_success 'every size (-a), JSON: one object per size with the documented keys' '
	penny bw --loopback rxe0,rxe1 -n 1 -a --json >bw.json && json_valid bw.json &&
	python3 -c "
import json
d = json.load(open(\"bw.json\"))
l = d[\"links\"][0]
assert d[\"transport\"] == \"verbs\" and l[\"local\"] == \"rxe0:1\" and l[\"remote\"] == \"rxe1:1\"
assert l[\"mtu\"] == 1024 and l[\"gid_index\"] == 1 and l[\"link_gbps\"] == 10
assert len(l[\"results\"]) == 23
for r in l[\"results\"]:
    for k in (\"bytes\", \"iterations\", \"bw_peak_gbps\", \"bw_avg_gbps\", \"msg_rate_mpps\",
              \"link_gbps\", \"pct_of_link\"):
        assert k in r, k
    assert r[\"bw_avg_gbps\"] > 0 and r[\"bw_peak_gbps\"] >= r[\"bw_avg_gbps\"]
    assert abs(r[\"pct_of_link\"] - r[\"bw_avg_gbps\"] / 10 * 100) < 1e-6
"
'
test_expect_success 'CI gate: a low threshold passes, an impossible one fails (one line per link)' '
	penny bw --loopback rxe0,rxe1 $N --min-gbps 0.0001 >g.out &&
	test_exit 1 penny bw --loopback rxe0,rxe1 $N --min-gbps 1000 >g.out 2>g.err &&
	test "$(wc -l <g.err)" = 1 &&
	grep -q "^penny bw: FAILED rxe0:1 -> rxe1:1: .* below 1000.000 Gb/s (--min-gbps 1000)" g.err &&
	test_exit 1 penny bw --loopback rxe0,rxe1 $N --expect >g.out 2>g.err &&
	grep -q "below 9.000 Gb/s (90% of 10 Gb/s)" g.err &&
	test_exit 1 penny bw --loopback rxe0,rxe1 $N -b --expect=50 >g.out 2>g.err &&
	grep -q "below 10.000 Gb/s (50% of 10 Gb/s x 2 directions)" g.err
'
test_expect_success 'path MTU 256 on request' '
	penny bw --loopback rxe0,rxe1 $N -s 4096 --mtu 256 >m.out &&
	grep -q "Mtu             : 256\[B\]" m.out && row 4096 m.out
'
test_expect_success 'a GID index of another kind on one side: both sides name both GIDs, no hang' '
	t0=$(date +%s) &&
	pair 18602 -d rxe1 $N &&
	test_exit 2 penny bw -p 18602 -d rxe0 -x 0 $N 10.0.0.2 >c.out 2>c.err;
	rc=$?; wait; test $rc = 0 &&
	test $(($(date +%s) - t0)) -lt 30 &&
	grep -q "GID mismatch: rxe0:1 uses index 0 fe80:.*peer rxe1:1 uses index 1 ::ffff:10.0.0.2" c.err &&
	grep -q "GID mismatch: rxe1:1 uses index 1 ::ffff:10.0.0.2 .*peer rxe0:1 uses index 0 fe80:" srv.err
'
test_expect_success 'the server killed in the middle: the client fails once it is gone, one line naming it' '
	# the QP of a killed server answers until its kernel tears it down,
	# and rxe retries forever (no error completion): the client must see
	# the process gone (its TCP connection closes) within 2 s, not wait
	# out --timeout after the last completion
	cs() { tr -d . </proc/uptime | cut -d" " -f1; }
	"$PENNY" bw -p 18603 -d rxe1 -n 100000 -s 65536 --timeout 10 >srv.out 2>srv.err &
	srv=$! && wait_listen 18603 &&
	r1=$(rcvd rxe1) &&
	{ penny bw -p 18603 -d rxe0 -n 100000 -s 65536 --timeout 10 10.0.0.2 >k.out 2>k.err &
	  cli=$!; } &&
	for ((i = 0; i < 300; i++)); do
		[ $(($(rcvd rxe1) - r1)) -gt 2000 ] && break
		kill -0 $cli 2>/dev/null || break
		nap 0.1
	done
	t0=$(cs); kill -9 $srv; wait $srv; ts=$(cs); wait $cli; rc=$?; tc=$(cs); cat srv.err k.err;
	echo "# server gone $((ts - t0))0 ms after the kill, the client $((tc - t0))0 ms" >&3 &&
	test "${rc:-0}" = 1 && test $((tc - ts)) -le 200 && test $((tc - t0)) -le 1200 &&
	test "$(wc -l <k.err)" = 1 && grep -q "^penny bw: .*rxe1:1" k.err
' 3>&1
test_expect_success 'under a launcher: explicit ranks, rxe0 (rank 0) -> rxe1 (rank 1)' '
	R="--nranks 2 --root 127.0.0.1:29611" &&
	{ penny bw -d rxe1 --rank 1 $R $N >r1.out 2>r1.err & } &&
	penny bw -d rxe0 --rank 0 $R $N >r0.out && wait $! &&
	grep -q "Ranks           : 0 -> 1, rail 0" r0.out && row 65536 r0.out &&
	test ! -s r1.out
'
test_expect_success '--all-rails: both rails at once, each reported, the slowest named' '
	R="--nranks 2 --root 127.0.0.1:29612" &&
	{ penny bw --all-rails -d rxe1,rxe3 --rank 1 $R $N -s 4096 >/dev/null & } &&
	penny bw --all-rails -d rxe0,rxe2 --rank 0 $R $N -s 4096 --json >rails.json && wait $! &&
	python3 -c "
import json
d = json.load(open(\"rails.json\"))
ls = d[\"links\"]
assert [(l[\"local\"], l[\"remote\"], l[\"rail\"]) for l in ls] == [(\"rxe0:1\", \"rxe1:1\", 0), (\"rxe2:1\", \"rxe3:1\", 1)], ls
assert all(l[\"results\"][0][\"iterations\"] == 20 for l in ls)
assert d[\"slowest\"] in (\"rxe0:1@penny-lab -> rxe1:1@penny-lab\", \"rxe2:1@penny-lab -> rxe3:1@penny-lab\")
for l in ls:
    print(\"# rail %d %s -> %s: %.3f Gb/s\" % (l[\"rail\"], l[\"local\"], l[\"remote\"], l[\"results\"][0][\"bw_avg_gbps\"]))
" >&3
' 3>&1
test_expect_success '--all-rails gate: one FAILED line per link' '
	R="--nranks 2 --root 127.0.0.1:29613" &&
	{ penny bw --all-rails -d rxe1,rxe3 --rank 1 $R $N -s 4096 --min-gbps 1000 >/dev/null 2>&1 & } &&
	test_exit 1 penny bw --all-rails -d rxe0,rxe2 --rank 0 $R $N -s 4096 --min-gbps 1000 >ar.out 2>ar.err;
	rc=$?; wait; test $rc = 0 &&
	test "$(grep -c "^penny bw: FAILED" ar.err)" = 2 &&
	grep -q "FAILED rxe0:1@penny-lab -> rxe1:1@penny-lab" ar.err &&
	grep -q "FAILED rxe2:1@penny-lab -> rxe3:1@penny-lab" ar.err
'
guest_done
