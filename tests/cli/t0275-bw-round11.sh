#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Hardening, round 11: penny bw stopped by a signal ends its --json
# document (never half of one), --loopback over TCP names no device, an
# option taken for a device, the server out of descriptors, and
# [IPV6] without a port.
# cost: 20
. "$(dirname "$0")/../lib.sh"
export TOP

# sig.py SIG DELAY OUT ERR PENNY ARGS...: runs penny with SIGINT at its
# default (a background job of a script ignores it), sends SIG after DELAY
# seconds, prints the exit status as the shell would
cat >sig.py <<'PY'
import signal, subprocess, sys, time
sig, delay, out, err = getattr(signal, sys.argv[1]), float(sys.argv[2]), sys.argv[3], sys.argv[4]
p = subprocess.Popen(sys.argv[5:], stdout=open(out, "w"), stderr=open(err, "w"),
                     preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
time.sleep(delay)
p.send_signal(sig)
rc = p.wait()
print(128 - rc if rc < 0 else rc)
PY
# stopped.py FILE SIGNUM: FILE is one whole document that says it was stopped
cat >stopped.py <<'PY'
import json, signal, sys
d = json.load(open(sys.argv[1]))
n = int(sys.argv[2])
assert d["error"] == "stopped by signal %d (%s)" % (n, signal.strsignal(n)), d
assert d["command"] == "bw" and isinstance(d["links"], list), d
PY

# SIGTERM (timeout(1), a CI job's cancel) cut --json in the middle of a
# row: a document no parser reads
test_expect_success 'bw --json stopped by SIGTERM, SIGINT or SIGHUP: the document ends with "error"' '
	for s in TERM:15 INT:2 HUP:1; do
		rc=$(python3 sig.py SIG${s%:*} 1.5 out.json err "$PENNY" bw --transport tcp \
			--loopback lo -a -D 0.3 --timeout 5 --json) &&
		test "$rc" = $((128 + ${s#*:})) && test ! -s err &&
		python3 stopped.py out.json ${s#*:} || { echo "SIG$s: exit $rc"; cat err out.json; exit 1; }
	done
	no_procs_left
'
test_expect_success 'bw --json client stopped mid-run: both documents whole, the server says why' '
	p=$(free_port) || exit 1
	"$PENNY" bw --transport tcp -p $p -a -D 0.3 --timeout 5 --json >srv.json 2>srv.err &
	srv=$!
	rc=$(python3 sig.py SIGTERM 1.5 cli.json cli.err "$PENNY" bw --transport tcp -p $p -a \
		-D 0.3 --timeout 5 --json 127.0.0.1)
	wait $srv; src=$?
	cat cli.err srv.err
	test "$rc" = 143 && python3 stopped.py cli.json 15 && test "$src" = 1 &&
	python3 -c "
import json
d = json.load(open(\"srv.json\"))
assert d[\"mode\"] == \"server\" and \"closed\" in d[\"error\"], d
"
'
test_expect_success 'bw --json stopped before the test began: nothing on stdout' '
	p=$(free_port) || exit 1
	rc=$(python3 sig.py SIGTERM 0.5 out.json err "$PENNY" bw --transport tcp -p $p \
		--timeout 5 --json) &&
	test "$rc" = 143 && test ! -s out.json && test ! -s err
'

# the device names were taken and never used: both ends talk over lo
test_expect_success 'bw --transport tcp --loopback DEV: refused in one line, lo runs' '
	for d in mlx5_0 mlx5_0,mlx5_1 lo,lo; do
		one_line_error 2 bw --transport tcp --loopback $d -n 5 -s 8 &&
		grep -qx "penny bw: --loopback $d: over --transport tcp both ends talk through this host.s loopback interface, never a NIC: give --loopback lo" err ||
		{ echo "--loopback $d"; exit 1; }
	done
	penny bw --transport tcp --loopback lo -n 5 -s 8 >out && grep -qE "^ 8 +5 " out
'
# "--loopback --transport tcp": --transport was the device, tcp a HOST
test_expect_success 'bw --loopback or -d followed by an option: the option named, one line' '
	one_line_error 2 bw --loopback --transport tcp -n 5 &&
	grep -qx "penny bw: --loopback .--transport.: that is an option, not a device (--loopback needs its DEV)" err &&
	one_line_error 2 bw -d -a 10.0.0.2 &&
	grep -qx "penny bw: -d .-a.: that is an option, not a device (-d needs its DEV)" err
'

# accept failed with EMFILE, the listener stayed readable: the server
# spun a core until --timeout
test_expect_success 'bw server out of descriptors: one line at once, no spinning' '
	p=$(free_port) || exit 1
	(ulimit -n 4; exec "$PENNY" bw --transport tcp -p $p --timeout 5 -n 5) >out 2>err &
	srv=$!
	python3 -c "
import os, sys, time
sys.path.insert(0, os.environ[\"TOP\"] + \"/tests/helpers\")
import peer
s = peer.conn($p)
time.sleep(3)
" &
	py=$!
	within 2.5 wait $srv; rc=$WITHIN_RC
	kill $py 2>/dev/null; wait $py 2>/dev/null
	cat err; test "$rc" = 2 && test "$(grep -vc "waiting for a client" err)" = 1 &&
	grep -qx "penny bw: cannot accept a connection: Too many open files (every descriptor this process may open is in use: ulimit -n)" err
'
test_expect_success 'bw server out of descriptors: a silent connection gives way to the client' '
	p=$(free_port) || exit 1
	(ulimit -n 5; exec "$PENNY" bw --transport tcp -p $p --timeout 5 -n 5 -s 8) >srv.out 2>srv.err &
	srv=$!
	python3 -c "
import os, sys, time
sys.path.insert(0, os.environ[\"TOP\"] + \"/tests/helpers\")
import peer
s = peer.conn($p)
open(\"held\", \"w\").close()
time.sleep(6)
" &
	py=$!
	while [ ! -e held ]; do sleep 0.05; done
	within 4 "$PENNY" bw --transport tcp -p $p --timeout 5 -n 5 -s 8 127.0.0.1 >cli.out 2>cli.err
	rc=$WITHIN_RC
	wait $srv; src=$?
	kill $py 2>/dev/null; wait $py 2>/dev/null
	cat srv.err cli.err; test "$rc" = 0 && test "$src" = 0 && grep -qE "^ 8 +5 " cli.out &&
	grep -qE "^penny bw: dropped a connection from 127.0.0.1:[0-9]+: said no hello while the descriptors ran out$" srv.err
'

# "[::1]" without a port: "not HOST:PORT"
if python3 -c "import socket; socket.socket(socket.AF_INET6).bind((\"::1\", 0))" 2>/dev/null; then
test_expect_success 'bw [IPV6] without a port is the HOST; a port is decimal' '
	p=$(free_port) || exit 1
	{ penny bw --transport tcp -p $p -n 5 -s 100 --timeout 10 >srv.out 2>srv.err & } &&
	penny bw --transport tcp -n 5 -s 100 --timeout 4 -p $p "[::1]" >cli.out && wait $! &&
	grep -qE "^ 100 +5 " cli.out &&
	one_line_error 2 bw --transport tcp -n 5 "[::1]:0x50" &&
	grep -qx "penny bw: .\[::1\]:0x50. is not HOST:PORT with a port of 1..65535 (or give the HOST and -p PORT)" err
'
else
	test_skip "bw [IPV6] without a port" "no IPv6 on lo"
fi
test_expect_success 'no penny bw left behind' '
	no_procs_left
'
test_done
