#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# penny bw on this host, without RDMA: option errors, the one-line "no RDMA"
# message, and the TCP path (--transport tcp) in every mode, gates included.
# The verbs tests run in the lab (tests/lab/t0150-lab-bw.sh).
. "$(dirname "$0")/../lib.sh"

mkdir empty

test_expect_success 'usage errors: one line, exit 2' '
	for args in "--op frob" "--lat -b" "-n 5 -D 1" "-q 0" "-q 33" "--mtu 300" \
		"--tx-depth 0" "a b" "--expect 95 --loopback x" "--transport shm" \
		"--expect=abc" "--all-rails --loopback x"; do
		test_exit 2 penny bw $args 2>err || { echo "args: $args"; exit 1; }
		test "$(wc -l <err)" = 1 || { echo "args: $args"; cat err; exit 1; }
	done
'
test_expect_success '--expect PCT with a space is not taken for a host' '
	test_exit 2 penny bw --expect 95 2>err && grep -q "write --expect=95" err
'
test_expect_success 'no RDMA device: one line saying so and naming --transport tcp, exit 2' '
	test_exit 2 penny bw --sysfs-root empty --loopback rxe0 2>err &&
	test "$(wc -l <err)" = 1 &&
	grep -q "^penny bw: no RDMA devices (--transport tcp measures the TCP path instead)" err &&
	test_exit 2 penny bw --sysfs-root empty -n 10 127.0.0.1 -p 1 2>err &&
	grep -q "no RDMA devices" err
'
test_expect_success 'TCP loopback: labelled as the TCP path, perftest columns' '
	penny bw --transport tcp --loopback lo -n 50 -s 4096 >out &&
	grep -q "TCP BW Test -- no RDMA, the TCP path" out &&
	grep -qx " #bytes     #iterations    BW peak\[MB/sec\]    BW average\[MB/sec\]   MsgRate\[Mpps\]" out &&
	grep -qE "^ 4096 +50 +[0-9.]+ +[0-9.]+ +[0-9.]+$" out
'
test_expect_success 'TCP loopback --json: every size an object with the documented keys' '
	penny bw --transport tcp --loopback lo -n 20 -a --json >out.json &&
	json_valid out.json &&
	python3 -c "
import json, sys
d = json.load(open(\"out.json\"))
assert d[\"command\"] == \"bw\" and d[\"transport\"] == \"tcp\" and d[\"mode\"] == \"loopback\"
rows = d[\"links\"][0][\"results\"]
assert [r[\"bytes\"] for r in rows] == [2 ** i for i in range(1, 24)], rows
for r in rows:
    for k in (\"bytes\", \"iterations\", \"bw_peak_gbps\", \"bw_avg_gbps\", \"msg_rate_mpps\",
              \"link_gbps\", \"pct_of_link\"):
        assert k in r, k
    assert r[\"iterations\"] == 20 and r[\"bw_avg_gbps\"] > 0
assert d[\"passed\"] is True
"
'
test_expect_success 'TCP latency: percentiles in order' '
	penny bw --transport tcp --loopback lo --lat -s 8 -n 200 --json >lat.json &&
	python3 -c "
import json
r = json.load(open(\"lat.json\"))[\"links\"][0][\"results\"][0]
v = [r[k] for k in (\"lat_min_us\", \"lat_median_us\", \"lat_p99_us\", \"lat_p999_us\", \"lat_max_us\")]
assert r[\"iterations\"] == 200 and v == sorted(v) and v[0] > 0, r
assert r[\"lat_min_us\"] <= r[\"lat_avg_us\"] <= r[\"lat_max_us\"]
"
'
test_expect_success 'the gate: a low --min-gbps passes, an impossible one fails with one line' '
	penny bw --transport tcp --loopback lo -n 20 --min-gbps 0.000001 >out &&
	test_exit 1 penny bw --transport tcp --loopback lo -n 20 --min-gbps 100000 >out 2>err &&
	test "$(grep -c "^penny bw: FAILED tcp:.* -> tcp:.*: .* Gb/s at 65536 bytes is below 100000.000 Gb/s (--min-gbps 100000)" err)" = 1 &&
	test "$(wc -l <err)" = 1
'
test_expect_success '--expect needs a link rate: the TCP path has none, refused before the test' '
	for args in "--loopback lo --expect" "--loopback lo --expect=50" "--expect" \
		"--expect=80 127.0.0.1 -p 1" "--np 2 --expect"; do
		within 10 test_exit 2 penny bw --transport tcp -n 10 $args >out 2>err ||
			{ echo "args: $args"; cat err; exit 1; }
		test "$(wc -l <err)" = 1 && test ! -s out &&
		grep -qx "penny bw: --expect compares with the RDMA link rate, which --transport tcp has not: gate with --min-gbps GBPS" err ||
			{ echo "args: $args"; cat err; exit 1; }
	done
'
test_expect_success 'TCP server and client: both print the same row, exit 0' '
	p=$(free_port) &&
	{ penny bw --transport tcp -p $p -n 30 -s 1000 >srv.out 2>srv.err & } &&
	penny bw --transport tcp -p $p -n 30 -s 1000 127.0.0.1 >cli.out &&
	wait $! &&
	grep "^ 1000 " cli.out >a && grep "^ 1000 " srv.out >b && test_cmp a b &&
	grep -q "waiting for a client on TCP port $p" srv.err
'
test_expect_success 'a server that stops answering mid-test: the client ran and failed (exit 1)' '
	p=$(free_port) &&
	{ "$PENNY" bw --transport tcp -p $p -D 30 --timeout 2 >stop.out 2>stop.err & srv=$!; } &&
	n=0 && while ! grep -q "waiting for a client" stop.err && test $n -lt 100; do
		sleep 0.1; n=$((n + 1)); done &&
	{ penny bw --transport tcp -p $p -D 30 --timeout 2 127.0.0.1 >cli.out 2>cli.err & cli=$!; } &&
	sleep 1 && kill -STOP $srv &&
	{ wait $cli; rc=$?; } ; kill -9 $srv 2>/dev/null; wait $srv 2>/dev/null;
	cat cli.err; test "$rc" = 1 && test "$(wc -l <cli.err)" = 1 &&
	grep -q "^penny bw: the peer stopped answering during the test: TCP: timed out" cli.err
'
test_expect_success 'server and client that disagree both say which option differs' '
	p=$(free_port) &&
	{ penny bw --transport tcp -p $p -n 30 -s 1000 >srv.out 2>srv.err & } &&
	test_exit 2 penny bw --transport tcp -p $p -n 30 -s 2000 127.0.0.1 >cli.out 2>cli.err;
	rc=$?; wait; test $rc = 0 &&
	grep -q "the two sides disagree: -s: 2000 here, 1000 on the peer" cli.err &&
	grep -q "the two sides disagree: -s: 1000 here, 2000 on the peer" srv.err
'
test_expect_success 'a server of bw protocol 1 (raw host struct hello): one line, exit 2, no hang' '
	p=$(free_port) || exit 1
	python3 - $p <<-PY &
	import socket, struct, sys, time
	# penny bw before the versioned frame: a raw struct whose first bytes are
	# magic "PBWO", version 1 and its size, sent after the client said hello
	l = socket.socket(); l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
	l.bind(("127.0.0.1", int(sys.argv[1]))); l.listen(1)
	c, _ = l.accept(); c.recv(8)
	c.sendall(struct.pack("<IHH", 0x5042574f, 1, 3184) + bytes(3176)); time.sleep(10)
	PY
	py=$!
	within 8 penny bw --transport tcp -p $p -n 10 --timeout 5 127.0.0.1 >out 2>err
	kill $py 2>/dev/null; wait $py
	# the fake server may not listen yet: the client says once that it retries
	grep -v "refused the connection; retrying" err >err1
	cat err && test "$WITHIN_RC" = 2 && test "$(wc -l <err1)" = 1 &&
	grep -q "^penny bw: peer 127.0.0.1 speaks bw protocol 1, this penny speaks 3: run the same penny version on both ends$" err
'
test_expect_success 'a refused client says it retries, and could not run (exit 2) at the timeout' '
	p=$(free_port) && t0=$(date +%s) &&
	test_exit 2 penny bw --transport tcp -p $p --timeout 2 127.0.0.1 2>err &&
	test $(($(date +%s) - t0)) -lt 10 && test "$(wc -l <err)" = 2 &&
	grep -q "^penny bw: 127.0.0.1 port $p refused the connection; retrying until the server listens (--timeout 2 s)$" err &&
	grep -q "cannot connect to 127.0.0.1 port $p: Connection refused" err
'
test_expect_success 'a server that comes late: the refused client says so once, then runs' '
	p=$(free_port) || exit 1
	{ sleep 1; penny bw --transport tcp -p $p -n 20 -s 1000 >srv.out 2>srv.err; } &
	penny bw --transport tcp -p $p -n 20 -s 1000 --timeout 20 127.0.0.1 >cli.out 2>cli.err &&
	wait $! && test "$(grep -c "refused the connection; retrying" cli.err)" = 1 &&
	grep -q "^ 1000 " cli.out
'
test_expect_success 'under a launcher (--np 2): ranks 0 -> 1 over TCP, rank 0 prints' '
	penny bw --np 2 --transport tcp -n 30 -s 4096 >out &&
	grep -q "Ranks           : 0 -> 1, rail 0" out && test "$(grep -c "^ 4096 " out)" = 1
'
test_expect_success 'under a launcher an odd number of ranks is refused' '
	test_exit 2 penny bw --np 3 --transport tcp -n 10 2>err && grep -q "is odd" err &&
	test "$(wc -l <err)" -eq 1
'
test_expect_success '--use_cuda: a GPU index, bandwidth only; -I in range (one line, exit 2)' '
	test_exit 2 penny bw --use_cuda -3 --loopback x 2>err && test "$(wc -l <err)" -eq 1 &&
	grep -q "^penny bw: --use_cuda must be 0..1023, got -3$" err &&
	test_exit 2 penny bw --use_cuda 0 --lat --loopback x 2>err && test "$(wc -l <err)" -eq 1 &&
	grep -q "use_cuda measures bandwidth" err &&
	test_exit 2 penny bw -I 5000 --loopback x 2>err && grep -q "^penny bw: -I must be" err
'
test_done
