#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Hardening, round 9: the sweep's sizes after their rounding (coll-test,
# allreduce-test), and penny bw fed what a careless user or a stranger
# gives it: gates and columns that do not go together, the TCP path's
# options, peers that say too much, too little or the wrong thing.
. "$(dirname "$0")/../lib.sh"

# the size column of a sweep's table ("0 16 32 64 ")
sizes() { grep -E "^ +[0-9]+ +[0-9]+ " "$1" | awk '{ print $1 }' | tr '\n' ' '; }

# -b 0 -e 64 -f 2 steps 0 1 2 4 8 16 32 64: rounded to a whole element per
# rank (16 bytes on 4 ranks of float) it printed five rows of size 0
test_expect_success 'coll-test: a size that rounds to the one before is one row, not a repeat' '
	penny coll-test allgather --np 4 -b 0 -e 64 -f 2 -n 1 -w 0 >out &&
	test "$(sizes out)" = "0 16 32 64 " || { cat out; exit 1; }
	penny coll-test reducescatter --np 3 -b 0 -e 64 -i 1 -n 1 -w 0 -d double >out &&
	test "$(sizes out)" = "0 24 48 " || { cat out; exit 1; }
	grep -q "^# Avg bus bandwidth" out
'
test_expect_success 'allreduce-test: -i 1 below a whole element is each size once, the table and --json' '
	penny allreduce-test --np 3 -b 0 -e 16 -i 1 -n 1 -w 0 >out &&
	test "$(sizes out)" = "0 4 8 12 16 " || { cat out; exit 1; }
	penny allreduce-test --np 2 -b 1 -e 8 -i 1 -n 1 -w 0 -d double --json >out.json &&
	python3 -c "
import json
d = json.load(open(\"out.json\"))
s = [r[\"size\"] for r in d[\"results\"]]
assert s == [0, 8], s
" &&
	penny allreduce-test --np 2 -b 1 -e 64 -f 1.5 -n 1 -w 0 -d int8 >out &&
	test "$(sizes out)" = "1 2 3 4 6 9 13 19 28 42 63 "
'

# --expect was dropped without a word when --min-gbps or -w was given
test_expect_success 'bw: --expect with --min-gbps or -w is two gates, refused' '
	one_line_error 2 bw --transport tcp --loopback lo -n 5 --expect=90 --min-gbps 1 &&
	grep -qx "penny bw: --expect and --min-gbps both set the gate: give one" err &&
	one_line_error 2 bw --transport tcp --loopback lo -n 5 --expect -w 10 &&
	grep -qx "penny bw: --expect and -w both set the gate: give one" err
'
# the latency table has no bandwidth column: both ran as if not given
test_expect_success 'bw --lat with --report_gbits or -N: refused, not ignored' '
	one_line_error 2 bw --transport tcp --loopback lo -n 5 -s 8 --lat --report_gbits &&
	grep -qx "penny bw: --report_gbits is about the bandwidth columns; --lat measures latency" err &&
	one_line_error 2 bw --transport tcp --loopback lo -n 5 -s 8 --lat -N &&
	grep -q "^penny bw: -N is about the bandwidth columns" err &&
	penny bw --transport tcp --loopback lo -n 5 -s 8 --lat >out
'
# the loopback's two ends meet on a port of their own: -p was ignored
test_expect_success 'bw --loopback with -p: refused, not the port ignored' '
	one_line_error 2 bw --transport tcp --loopback lo -n 5 -p 5000 &&
	grep -qx "penny bw: -p is the server.s port; --loopback connects its two ends on a port of its own" err
'
# "TCP BW Test (bidirectional)" measured the client's direction only
test_expect_success 'bw -b over TCP: both directions move, the row is their sum' '
	penny bw --transport tcp --loopback lo -b -n 300 -s 4096 --json >out.json &&
	python3 -c "
import json
d = json.load(open(\"out.json\"))
r = d[\"links\"][0][\"results\"][0]
assert d[\"bidirectional\"] is True and r[\"iterations\"] == 600 and r[\"bw_avg_gbps\"] > 0, r
" &&
	penny bw --np 2 --transport tcp -b -n 300 -s 4096 >out &&
	grep -qE "^ 4096 +600 " out &&
	penny bw --transport tcp --loopback lo -b -D 0.3 -s 64K --json >out.json &&
	json_valid out.json
'
# -q, --op, -t ... set up verbs QPs: the TCP path took them without a word
test_expect_success 'bw --transport tcp with RDMA settings: run, one line naming what it does not use' '
	penny bw --transport tcp --loopback lo -n 5 -s 8 -q 4 --op read -x 1 >out 2>err &&
	grep -q "TCP BW Test" out && test "$(wc -l <err)" = 1 &&
	grep -qx "penny bw: -x 1, -q 4, --op read: RDMA settings, unused by --transport tcp (one TCP stream)" err &&
	penny bw --transport tcp --loopback lo -n 5 -s 8 >out 2>err && test ! -s err &&
	penny bw --np 2 --transport tcp -n 5 -s 8 -t 64 >out 2>err &&
	test "$(grep -c "unused by --transport tcp" err)" = 1
'

# A fake penny bw server that keeps the hello a real client says (its
# options are the server's under test), and clients that say it, then
# misbehave.  struct pn_bw_row: 168 bytes, nblocks (int) at 104.
cat >bwpeer.py <<'PY'
import os, socket, struct, sys, time
sys.path.insert(0, os.environ["TOP"] + "/tests/helpers")
import peer
rd = peer.recv_all
port, mode = int(sys.argv[1]), sys.argv[2]
if mode == "capture":
    peer.bw_capture(port, None); sys.exit()
h = open("hello.bin", "rb").read()
s = peer.conn(port)
if mode == "silent":
    s.sendall(h); time.sleep(10); sys.exit()
peer.bw_start(s, h)
size = struct.unpack_from("<Q", h, 100)[0]
if mode == "stream":
    t0 = time.time()
    try:
        while time.time() - t0 < 15:
            s.sendall(b"\1" + bytes(size))
    except OSError:
        pass
    sys.exit()
s.sendall(b"\1" + bytes(size) + b"\0"); rd(s, 1)
row = bytearray(168)
struct.pack_into("<QQddd", row, 0, size, 1, 1e-6, 8.0, 8.0)
struct.pack_into("<i", row, 104, -1)
s.sendall(row); rd(s, 168); time.sleep(1)
PY
export TOP
# capture_hello ARGS: hello.bin, the hello of "penny bw ARGS 127.0.0.1"
capture_hello() {
	local p
	p=$(free_port) || return 1
	rm -f ready hello.bin
	python3 bwpeer.py $p capture &
	while [ ! -e ready ]; do sleep 0.05; done
	"$PENNY" bw "$@" -p $p --timeout 2 127.0.0.1 >/dev/null 2>&1
	wait $! && test -s hello.bin
}
# stranger MODE ARGS: "penny bw ARGS" as a server, fed by bwpeer.py MODE;
# its exit status in rc, its output in srv.out, srv.err
stranger() {
	local mode=$1 p py
	shift
	p=$(free_port) || return 1
	python3 bwpeer.py $p $mode &
	py=$!
	within 8 timeout 20 "$PENNY" bw "$@" -p $p >srv.out 2>srv.err
	rc=$WITHIN_RC
	kill $py 2>/dev/null; wait $py 2>/dev/null
	grep -v "waiting for a client" srv.err >srv.err1
	return 0
}
# it segfaulted: a peer's block count indexed its rates
test_expect_success 'bw server: a peer whose results are malformed: one line, exit 1, a whole --json' '
	capture_hello --transport tcp -n 5 -s 1000 --json &&
	stranger row --transport tcp -n 5 -s 1000 --json --timeout 5 &&
	cat srv.err && test "$rc" = 1 && test "$(wc -l <srv.err1)" = 1 &&
	grep -qx "penny bw: the peer.s results are malformed (block count): not a penny bw of this version" srv.err1 &&
	python3 -c "
import json
d = json.load(open(\"srv.out\"))
assert \"block count\" in d[\"error\"] and d[\"links\"][0][\"results\"] == [], d
"
'
# it read them as long as they came (for ever), whatever -n said
test_expect_success 'bw server: a peer that sends more than -n messages, or on past -D: ended, one line' '
	capture_hello --transport tcp -n 5 -s 1000 &&
	stranger stream --transport tcp -n 5 -s 1000 --timeout 5 &&
	cat srv.err && test "$rc" = 1 && test "$(wc -l <srv.err1)" = 1 &&
	grep -qx "penny bw: the peer sent more than the 5 messages of -n" srv.err1 &&
	capture_hello --transport tcp -D 0.2 -s 1000 &&
	stranger stream --transport tcp -D 0.2 -s 1000 --timeout 1 &&
	cat srv.err && test "$rc" = 1 && test "$(wc -l <srv.err1)" = 1 &&
	grep -qx "penny bw: the peer went on sending long after the 0.2 s of -D" srv.err1
'
# it said "TCP: timed out waiting for the peer", not when
test_expect_success 'bw server: a client that says its hello, then nothing: the step named, exit 2' '
	capture_hello --transport tcp -n 5 -s 1000 &&
	stranger silent --transport tcp -n 5 -s 1000 --timeout 2 &&
	cat srv.err && test "$rc" = 2 && test "$(wc -l <srv.err1)" = 1 &&
	grep -qx "penny bw: exchanging the setup with the peer: TCP: timed out waiting for the peer" srv.err1
'
# a frame that claims 2^60 bytes, and random bytes: dropped, nothing allocated
test_expect_success 'bw server: absurd frame lengths and garbage are dropped, the server still waits' '
	p=$(free_port) || exit 1
	python3 - $p <<-PY &
	import os, struct, sys, time
	sys.path.insert(0, "$TOP/tests/helpers")
	import peer
	s = peer.conn(int(sys.argv[1]))
	s.sendall(struct.pack("<IHH16sIIQ", 0x5042574f, 3, 1, bytes(16), 0, 0, 1 << 60)); time.sleep(0.3)
	s = peer.conn(int(sys.argv[1])); s.sendall(os.urandom(5000)); time.sleep(2)
	PY
	py=$!
	within 6 penny bw --transport tcp -p $p --timeout 2 >out 2>err
	wait $py
	cat err && test "$WITHIN_RC" = 2 &&
	grep -q "dropped a connection from 127.0.0.1:[0-9]*: a penny bw message of type 1 and 1152921504606846976 bytes, not a hello" err &&
	grep -q "dropped a connection from 127.0.0.1:[0-9]*: not a penny bw client" err &&
	grep -q "no client connected within 2 s" err
'
# it waited its --timeout for the 40 bytes of a header, then "timed out", exit 2
test_expect_success 'bw client: a server that is no penny bw (a banner): at once, named, exit 2' '
	p=$(free_port) || exit 1
	python3 - $p <<-PY &
	import socket, sys, time
	l = socket.socket(); l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
	l.bind(("127.0.0.1", int(sys.argv[1]))); l.listen(1)
	c, _ = l.accept(); c.sendall(b"SSH-2.0-OpenSSH_9.2\r\n"); time.sleep(8)
	PY
	py=$!
	within 4 penny bw --transport tcp -p $p -n 5 --timeout 6 127.0.0.1 >out 2>err
	kill $py 2>/dev/null; wait $py
	grep -v "refused the connection; retrying" err >err1
	cat err && test "$WITHIN_RC" = 2 && test "$(wc -l <err1)" = 1 &&
	grep -qx "penny bw: peer 127.0.0.1 is not a penny bw of this version (its first bytes are no bw hello): is -p its port?" err1
'
# the samples of --lat (8 bytes an iteration) were not in the planned memory
mkdir -p fake/proc &&
	printf 'MemTotal:       24684100 kB\nMemFree:          40000 kB\nMemAvailable:      32768 kB\n' >fake/proc/meminfo
test_expect_success 'bw --lat: the samples count in the memory check (-n 10^9 on 32 MiB: refused)' '
	within 5 timeout 20 "$PENNY" bw --sysfs-root fake --transport tcp --loopback lo --lat -s 8 \
		-n 1000000000 >out 2>err
	cat err && test "$WITHIN_RC" = 2 && test "$(wc -l <err)" = 1 &&
	grep -q "^penny bw: 2 ranks x 7.5 GiB need 15 GiB of memory, 32 MiB available$" err &&
	penny bw --sysfs-root fake --transport tcp --loopback lo --lat -s 8 -n 100 >out
'
test_expect_success 'bw: a port in use, and standard output on /dev/full: one line, exit 2' '
	p=$(free_port) || exit 1
	python3 - $p <<-PY &
	import socket, sys, time
	l = socket.socket(); l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
	l.bind(("0.0.0.0", int(sys.argv[1]))); l.listen(1); open("bound", "w").close(); time.sleep(4)
	PY
	py=$!
	while [ ! -e bound ]; do sleep 0.05; done
	one_line_error 2 bw --transport tcp -p $p --timeout 2
	ok=$?
	kill $py 2>/dev/null; wait $py
	test $ok = 0 && grep -qx "penny bw: cannot listen on TCP port $p: Address already in use" err &&
	test_exit 2 penny bw --transport tcp --loopback lo -n 5 --json >/dev/full 2>err &&
	test "$(cat err)" = "penny bw: write error on standard output: No space left on device"
'
test_expect_success 'no penny bw left behind' '
	no_procs_left
'
test_done
