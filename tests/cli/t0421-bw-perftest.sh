#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# penny bw speaks perftest: its letters with its meaning or a one-line
# refusal naming what penny does instead, its table (MB/sec, --report_gbits
# for Gb/sec, ib_write_lat's latency columns) read back the way a script
# written for ib_write_bw reads it, and an IPv4 host anywhere on the line.
# On the TCP path: the verbs runs are the lab's (tests/lab/guest/bw.sh).
. "$(dirname "$0")/../lib.sh"

bw() { penny bw --transport tcp --loopback lo "$@"; }

# What a perftest-parsing script does: find the head of the table by its
# columns, take the unit from it, and read each row as whitespace-separated
# numbers; the units are checked against the message rate (bytes x Mpps).
cat >parse.py <<'PY'
import re, sys
text = open(sys.argv[1]).read()
head = re.search(r"^ #bytes\s+#iterations\s+BW peak\[(MB|Gb)/sec\]\s+BW average\[(MB|Gb)/sec\]\s+MsgRate\[Mpps\]\s*$",
                 text, re.M)
assert head, "no perftest BW head"
unit = head.group(1)
assert unit == sys.argv[2], unit
rows = re.findall(r"^\s*(\d+)\s+(\d+)\s+(\d+\.\d+)\s+(\d+\.\d+)\s+(\d+\.\d+)\s*$", text, re.M)
assert rows, "no perftest BW rows"
for size, iters, peak, avg, mpps in rows:
    size, iters, peak, avg, mpps = int(size), int(iters), float(peak), float(avg), float(mpps)
    bytes_s = mpps * 1e6 * size
    want = bytes_s / 2 ** 20 if unit == "MB" else bytes_s * 8 / 1e9
    # avg and MsgRate come from one time: equal within the printed digits
    # (MsgRate has 6 decimals)
    tol = 0.005 + 0.5 * size * (1 / 2 ** 20 if unit == "MB" else 8 / 1e9)
    assert abs(avg - want) <= tol, (size, avg, want)
    assert iters == int(sys.argv[3]), iters
    if len(sys.argv) > 4:
        assert peak == 0, peak
print(len(rows))
PY
cat >parse_lat.py <<'PY'
import re, sys
text = open(sys.argv[1]).read()
head = (" #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    "
        "t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec] ")
assert head in text.split("\n"), "no ib_write_lat head"
rows = re.findall(r"^\s*(\d+)\s+(\d+)" + r"\s+(\d+\.\d+)" * 7 + r"\s*$", text, re.M)
assert len(rows) == 1, rows
size, iters, tmin, tmax, typ, avg, stdev, p99, p999 = map(float, rows[0])
assert size == 8 and iters == 200
assert 0 < tmin <= typ <= p99 <= p999 <= tmax and tmin <= avg <= tmax and stdev >= 0
PY

test_expect_success 'the BW table: perftest head in MB/sec (2^20 bytes/s), rows a script reads' '
	bw -n 50 -a >out &&
	test "$(python3 parse.py out MB 50)" = 23 &&
	grep -qx " #bytes     #iterations    BW peak\[MB/sec\]    BW average\[MB/sec\]   MsgRate\[Mpps\]" out
'
test_expect_success '--report_gbits: Gb/sec (10^9 bits/s); -N: no peak (0.00)' '
	bw -n 50 -s 65536 --report_gbits >out &&
	test "$(python3 parse.py out Gb 50)" = 1 &&
	bw -n 50 -s 4096 -N >out &&
	test "$(python3 parse.py out MB 50 nopeak)" = 1 && grep -qE "^ 4096 +50 +0\.00 " out
'
test_expect_success 'the latency table: ib_write_lat'"'"'s columns, typical is the median' '
	bw --lat -s 8 -n 200 >lat.out && python3 parse_lat.py lat.out &&
	bw --lat -s 8 -n 200 --json >lat.json &&
	python3 -c "
import json
r = json.load(open(\"lat.json\"))[\"links\"][0][\"results\"][0]
assert r[\"lat_stdev_us\"] >= 0 and r[\"lat_min_us\"] <= r[\"lat_median_us\"] <= r[\"lat_max_us\"], r
"
'
test_expect_success 'perftest letters penny honours: -F, -c RC, -m, -u, -w' '
	bw -F -c RC -m 1024 -u 18 -n 20 -s 4096 >out && python3 parse.py out MB 20 >/dev/null &&
	bw -n 20 -w 0.001 >out &&
	test_exit 1 bw -n 20 -w 1e9 >out 2>err && test "$(wc -l <err)" = 1 &&
	grep -q "^penny bw: FAILED .* below .* Gb/s (-w 1e+09 MB/sec)$" err &&
	test_exit 1 bw -n 20 --report_gbits -w 1e6 2>err &&
	grep -q "below 1000000.000 Gb/s (-w 1e+06 Gb/sec)$" err
'
test_expect_success '"-w 999999" fails naming -w, never an option the user did not give' '
	test_exit 1 bw -n 20 -w 999999 >out 2>err && cat err &&
	grep -q "(-w 999999 MB/sec)$" err && ! grep -q -- "--min-gbps" err
'
test_expect_success 'perftest letters that change nothing penny measures: -R, -e run, one warning each' '
	bw -R -n 20 -s 4096 >out 2>err && python3 parse.py out MB 20 >/dev/null && cat err &&
	test "$(wc -l <err)" = 1 && grep -q "^penny bw: -R: penny connects the QPs over its own TCP exchange" err &&
	bw --events -n 20 -s 4096 >out 2>err && python3 parse.py out MB 20 >/dev/null &&
	test "$(wc -l <err)" = 1 && grep -q "^penny bw: -e: penny polls the completion queue .*the bandwidth is the same$" err &&
	bw -e --lat -n 200 -s 8 >out 2>err && grep -q "latency lower than perftest -e.s$" err
'
test_expect_success 'BW peak is the best timed block, at least the average, not the average' '
	bw -n 2000 -s 4096 --json >out.json && python3 -c "import json
d = json.load(open(\"out.json\"))
for r in d[\"links\"][0][\"results\"]:
    assert r[\"bw_peak_gbps\"] == max(r[\"blocks_gbps\"]), r
    assert r[\"bw_peak_gbps\"] >= r[\"bw_avg_gbps\"], r"
'
test_expect_success 'out of range or not honoured: one line naming what penny does, exit 2' '
	tab=$(printf "\t") &&
	while IFS=$tab read -r args want; do
		test_exit 2 penny bw $args 2>err || { echo "args: $args"; exit 1; }
		test "$(wc -l <err)" = 1 || { echo "args: $args"; cat err; exit 1; }
		grep -q -- "$want" err || { echo "args: $args"; cat err; exit 1; }
	done <<-EOF
	-z	-z: not supported by penny: it exchanges the QP data over TCP on -p PORT
	-c UD	-c UD: not supported by penny: it tests RC (reliable connected) QPs only
	-c XRC	-c XRC: not supported by penny
	-S 3	-S: penny uses service level 0
	-Q 8	-Q: penny signals one work request in min(100, tx-depth/2)
	-l 4	-l: penny posts one work request at a time; use -t N
	-o 8	-o: penny asks the device
	-O	-O: penny tests one port per device; test two with -d DEV:1 and -d DEV:2
	-r 256	-r: penny sizes the receive queue from -t N
	-C	-C: penny reports microseconds
	-H	-H: penny reports percentiles
	-U	-U: penny reports percentiles
	-A FETCH_AND_ADD	-A: penny has no atomic test: --op write, read or send
	-g	-g: penny has no multicast test
	-T 32	-T: penny sets no traffic class
	-L 4	-L: penny sets no hop limit
	-f 2	-f: penny measures the whole -D SEC
	-y 1	-y: penny gates on bandwidth: -w BW
	-W counters/port_xmit_data	-W: penny top shows the port counters
	--out_json	--out_json: not supported by penny: its report has penny.s fields, not perftest.s JSON
	--out_json_file=r.json	--out_json_file: not supported by penny: .* (--json >FILE)
	-R --gpu	--gpu measures this host.s GPUs in one process
	-w 5 --gpu	--gpu measures this host.s GPUs in one process
	-u 0	-u must be 1..31, got 0
	-u 32	-u must be 1..31, got 32
	-m 9000	-m must be 256..4096, got 9000
	-w -1	-w must be 0..1000000000000, got -1
	-w 5 --min-gbps 5	-w and --min-gbps are one gate
	-w 5 --lat	-w is a bandwidth limit
	EOF
'
test_expect_success 'an IPv4 host anywhere on the line, also after a bare --expect' '
	p=$(free_port) || exit 1
	{ penny bw --transport tcp -p $p -n 20 -s 1000 >srv.out 2>srv.err & } &&
	penny bw 127.0.0.1 --transport tcp -p $p -n 20 -s 1000 --timeout 20 >cli.out &&
	wait $! && grep -q "^ 1000 " cli.out &&
	# the host is the client host, not the value of --expect: over TCP, with no
	# link rate, the gate is then refused before the test (t0420)
	test_exit 2 penny bw --transport tcp -p 1 -n 20 -s 1000 --expect 127.0.0.1 \
		>cli.out 2>cli.err && test ! -s cli.out &&
	grep -qx "penny bw: --expect compares with the RDMA link rate, which --transport tcp has not: gate with --min-gbps GBPS" cli.err &&
	test_exit 2 penny bw --expect 95 127.0.0.1 2>err && grep -q "write --expect=95" err &&
	test_exit 2 penny bw 127.0.0.1 --expect 90.5 2>err && grep -q "write --expect=90.5" err
'
test_done
