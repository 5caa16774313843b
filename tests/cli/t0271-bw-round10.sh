#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Hardening, round 10: penny bw's TCP data connections bound to their run
# (a stranger that connects first is dropped, not measured), the TCP
# header, -p under a launcher, HOST:PORT, every wait within --timeout (a
# missing rank, a peer that stalls before its results), the server on
# IPv6 too, the --loopback peer on a signal, the blocks of a short run,
# and --gpu's options on a host without a GPU.
# cost: 25
. "$(dirname "$0")/../lib.sh"

PRELOAD=$BUILD/tests/preload/stop-in-mesh.so

# strange.py PID MODE...: as soon as process PID listens on a TCP port,
# one connection to it for each MODE: silent (says nothing) or junk (64
# random bytes); "ready" on stdout, then holds them for 10 s
cat >strange.py <<'PY'
import os, socket, sys, time
pid, modes = int(sys.argv[1]), sys.argv[2:]
def listening():
    inodes = set()
    try:
        for fd in os.listdir("/proc/%d/fd" % pid):
            try:
                l = os.readlink("/proc/%d/fd/%s" % (pid, fd))
            except OSError:
                continue
            if l.startswith("socket:["):
                inodes.add(l[8:-1])
    except OSError:
        return []
    ports = []
    for f in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in open(f).readlines()[1:]:
            p = line.split()
            if p[3] == "0A" and p[9] in inodes:
                ports.append(int(p[1].split(":")[1], 16))
    return ports
t0 = time.time()
while not listening():
    if time.time() - t0 > 10:
        raise SystemExit("no listener")
    time.sleep(0.005)
port, conns = listening()[0], []
for m in modes:
    try:
        s = socket.create_connection(("127.0.0.1", port))
        if m == "junk":
            s.sendall(os.urandom(64))
        conns.append(s)
    except OSError as e:
        print("%s: %s" % (m, e), flush=True)
print("ready", flush=True)
time.sleep(10)
PY

# The TCP data connection of --loopback (and of a launcher's pair) was the
# first connection to its port: another process of the host that came
# first was taken for the peer (the run timed out on a silent one).  The
# peer waits 2 s before it connects (stop-in-mesh.so's pause), the
# strangers come first.
if [ -f "$PRELOAD" ]; then
test_expect_success 'bw --loopback over TCP: strangers that connect first are dropped, the run passes' '
	ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0 \
	PENNY_TEST_SLOW_MESH=2 LD_PRELOAD=$PRELOAD "$PENNY" bw --transport tcp --loopback lo \
		-n 5 -s 100 --timeout 6 >out 2>err &
	pid=$!
	python3 strange.py $pid silent junk >s.out &
	py=$!
	wait $pid; rc=$?
	kill $py 2>/dev/null; wait $py 2>/dev/null
	cat err; test "$rc" = 0 && grep -q "^ready" s.out && grep -qE "^ 100 +5 " out &&
	test "$(wc -l <err)" = 2 &&
	grep -qE "^penny bw: dropped a connection from 127.0.0.1:[0-9]+: not the peer of this run \(no proof of its key\)$" err &&
	grep -qE "^penny bw: dropped a connection from 127.0.0.1:[0-9]+: the peer proved the run.s key first$" err
'
else
	test_skip "bw --loopback over TCP: strangers dropped" "no $PRELOAD"
fi

# "Number of qps : 1 / TX depth : 128" (and qps, tx_depth in --json) over TCP
test_expect_success 'bw --transport tcp: the header shows the TCP path, no QPs or TX depth' '
	penny bw --transport tcp --loopback lo -n 5 -s 8 >out &&
	grep -qx " Transport       : TCP (one stream)" out && grep -qx " Iterations      : 5" out &&
	! grep -qE "qps|TX depth" out &&
	penny bw --np 2 --transport tcp -D 0.2 -s 8 >out &&
	grep -qx " Iterations      : for 0.2 s per size" out && ! grep -q "qps" out &&
	penny bw --transport tcp --loopback lo -n 5 -s 8 --json >out.json &&
	python3 -c "
import json
d = json.load(open(\"out.json\"))
assert d[\"transport\"] == \"tcp\" and \"qps\" not in d and \"tx_depth\" not in d, d
assert d[\"iters\"] == 5
"
'

# --all-rails over TCP ran no rail: one row of zeros, exit 0
test_expect_success 'bw --all-rails --transport tcp: refused, not a row of zeros' '
	one_line_error 2 bw --np 2 --transport tcp --all-rails -n 5 -s 8 &&
	grep -qx "penny bw: --all-rails tests every RDMA NIC pair; --transport tcp measures one TCP stream between the ranks" err
'

# the ranks meet through the rendezvous: -p was taken and not used
test_expect_success 'bw -p under a launcher: refused in one line, not ignored' '
	one_line_error 2 bw --np 2 --transport tcp -n 5 -p 5000 &&
	grep -qx "penny bw: -p is the server.s port; under a launcher (self) ranks 2k and 2k+1 meet through the job.s rendezvous: drop -p" err
'

# "cannot resolve '\''127.0.0.1:PORT'\''"
test_expect_success 'bw HOST:PORT: the port taken as -p; a bad or second port refused' '
	p=$(free_port) || exit 1
	{ penny bw --transport tcp -p $p -n 5 -s 100 --timeout 10 >srv.out 2>srv.err & } &&
	penny bw --transport tcp -n 5 -s 100 --timeout 10 127.0.0.1:$p >cli.out &&
	wait $! && grep -qE "^ 100 +5 " cli.out && grep -qE "^ 100 +5 " srv.out &&
	one_line_error 2 bw --transport tcp -n 5 127.0.0.1:0 &&
	grep -qx "penny bw: .127.0.0.1:0. is not HOST:PORT with a port of 1..65535 (or give the HOST and -p PORT)" err &&
	one_line_error 2 bw --transport tcp -n 5 host:80x &&
	one_line_error 2 bw --transport tcp -n 5 127.0.0.1:5000 -p 6000 &&
	grep -qx "penny bw: .127.0.0.1:5000. and -p 6000 name two ports: give one" err &&
	one_line_error 2 bw --transport tcp -n 5 "" &&
	grep -qx "penny bw: the HOST is empty" err
'

# the server listened on 0.0.0.0 only: a client of ::1 (or of a name that
# resolves to IPv6 first) was refused until its timeout
if python3 -c "import socket; socket.socket(socket.AF_INET6).bind((\"::1\", 0))" 2>/dev/null; then
test_expect_success 'bw server: IPv6 clients too (::1, [::1]:PORT)' '
	p=$(free_port) || exit 1
	{ penny bw --transport tcp -p $p -n 5 -s 100 --timeout 10 >srv.out 2>srv.err & } &&
	within 8 penny bw --transport tcp -n 5 -s 100 --timeout 4 -p $p ::1 >cli.out 2>cli.err &&
	test "$WITHIN_RC" = 0 && wait $! && grep -qE "^ 100 +5 " cli.out || { cat cli.err; exit 1; }
	{ penny bw --transport tcp -p $p -n 5 -s 100 --timeout 10 >srv.out 2>srv.err & } &&
	penny bw --transport tcp -n 5 -s 100 --timeout 4 "[::1]:$p" >cli.out && wait $! &&
	grep -qE "^ 100 +5 " srv.out
'
else
	test_skip "bw server: IPv6 clients" "no IPv6 on lo"
fi

# the job started with the test's whole bound as its timeout: rank 0 of
# -n 100000 waited 6650 s for a rank that never came, not --timeout
test_expect_success 'bw under a launcher: a missing rank is named within --timeout' '
	p=$(free_port) || exit 1
	within 8 timeout 30 "$PENNY" bw --rank 0 --nranks 2 --root 127.0.0.1:$p --transport tcp \
		-n 100000 --timeout 2 >out 2>err
	cat err; test "$WITHIN_RC" = 2 && test "$(wc -l <err)" = 1 &&
	grep -q "waiting for ranks 1 to join" err
'

# A client that says a real hello and sends a whole TCP size, then stalls
# before its row: the server waited the test's bound (here 1000 s), not
# --timeout.  struct pn_bw_row: 168 bytes.
cat >stall.py <<'PY'
import os, socket, struct, sys, time
sys.path.insert(0, os.environ["TOP"] + "/tests/helpers")
import peer
port, mode = int(sys.argv[1]), sys.argv[2]
if mode == "capture":
    peer.bw_capture(port); sys.exit()
h = open("hello.bin", "rb").read()
n, size = int(sys.argv[3]), int(sys.argv[4])
s = peer.conn(port)
peer.bw_start(s, h)
s.sendall((b"\1" + bytes(size)) * n + b"\0"); peer.recv_all(s, 1)
open("sent", "w").close(); time.sleep(20)
PY
export TOP
test_expect_success 'bw server over TCP: a client that stalls before its results: --timeout, exit 1' '
	p=$(free_port) || exit 1
	rm -f ready hello.bin sent
	python3 stall.py $p capture &
	while [ ! -e ready ]; do sleep 0.05; done
	"$PENNY" bw --transport tcp -n 1000000 -s 1 -p $p --timeout 2 127.0.0.1 >/dev/null 2>&1
	wait $! && test -s hello.bin &&
	p=$(free_port) &&
	{ python3 stall.py $p stall 1000000 1 & py=$!; } &&
	within 12 timeout 30 "$PENNY" bw --transport tcp -n 1000000 -s 1 -p $p --timeout 2 \
		>out 2>err
	ok=$? rc=$WITHIN_RC
	kill $py 2>/dev/null; wait $py 2>/dev/null
	grep -v "waiting for a client" err >err1
	cat err; test $ok = 0 && test -e sent && test "$rc" = 1 && test "$(wc -l <err1)" = 1 &&
	grep -qx "penny bw: the peer stopped answering during the test: TCP: timed out waiting for the peer" err1
'

# kill (or a batch system) signals penny alone: its --loopback peer saw
# the connection close and said so, after the shell had moved on
test_expect_success 'bw --loopback: SIGTERM or SIGHUP to penny ends its peer too, without a word' '
	for sig in TERM HUP; do
		"$PENNY" bw --transport tcp --loopback lo -D 10 --timeout 5 >out 2>err &
		pid=$!
		sleep 1
		kill -$sig $pid
		wait $pid
		rc=$?
		sleep 1
		test "$rc" -gt 128 && test ! -s err || { echo "SIG$sig: exit $rc"; cat err; exit 1; }
	done
	no_procs_left
'

# -n 3 over TCP: three blocks of one write each, the wait for the
# receiver's answer in none, so the peak was far above what the link moved
test_expect_success 'bw -n below 5: the blocks together are the whole run' '
	penny bw --transport tcp --loopback lo -n 3 -s 1000 --json >out.json &&
	python3 -c "
import json
r = json.load(open(\"out.json\"))[\"links\"][0][\"results\"][0]
t = sum(r[\"bytes\"] * 8 / 1e9 / g for g in r[\"blocks_gbps\"])
assert len(r[\"blocks_gbps\"]) == 3 and abs(t - r[\"seconds\"]) <= 1e-6 * r[\"seconds\"], (t, r)
"
'

# -R printed its warning, then the usage error: two lines
test_expect_success 'bw -R with a usage error: the error alone, one line' '
	one_line_error 2 bw -R --transport tcp a b &&
	grep -qx "penny bw: one HOST at most (got .a. and .b.)" err
'

# --gpu took -t, --mtu, -p, --transport ... without a word, and -s 0 as 256M
test_expect_success 'bw --gpu: options it does not use, and -s 0, refused in one line' '
	for args in "-t 64" "--mtu 1024" "-I 10" "--use_cuda 0" "-x 1" "-i 1" "-u 3" \
		"--transport tcp" "-p 100" "--report_gbits" "-N" "-c RC" "-F"; do
		one_line_error 2 bw --gpu $args || { echo "args: $args"; exit 1; }
		grep -q "^penny bw: --gpu measures this host.s GPUs in one process" err ||
			{ echo "args: $args"; cat err; exit 1; }
	done
	one_line_error 2 bw --gpu -s 0 &&
	grep -qx "penny bw: --gpu: -s must be between 4K and 1G" err
'
# a rank of mpirun, srun or --rank ran the matrices beside its peers
test_expect_success 'bw --gpu in a rank of a job (--rank, mpirun): refused, one process' '
	one_line_error 2 bw --gpu --rank 0 --nranks 2 --root 127.0.0.1:9 --timeout 1 &&
	grep -q "^penny bw: --gpu measures this host.s GPUs in one process" err &&
	OMPI_COMM_WORLD_SIZE=2 OMPI_COMM_WORLD_RANK=1 one_line_error 2 bw --gpu &&
	grep -q "^penny bw: --gpu measures this host.s GPUs in one process" err
'
test_expect_success 'bw --gpu --json without a GPU (or the plugin): the document ends with the error' '
	PENNY_PLUGIN_PATH=$TRASH/none "$PENNY" bw --gpu -n 1 -s 4K --json >out.json 2>err
	rc=$?
	test "$rc" = 0 || { test "$rc" = 2 && test "$(wc -l <err)" = 1 &&
		python3 -c "
import json
d = json.load(open(\"out.json\"))
assert d[\"mode\"] == \"gpu\" and d[\"error\"], d
"; }
'
test_expect_success 'no penny bw left behind' '
	no_procs_left
'
test_done
