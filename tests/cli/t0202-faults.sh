#!/usr/bin/env bash
# Faults: a rank killed mid-sweep, strangers on the rendezvous port, a rank
# that never comes, transports that cannot connect.  Nothing hangs, every
# surviving rank exits non-zero naming the culprit.
. "$(dirname "$0")/../lib.sh"


test_expect_success 'a rank killed mid-sweep: every other rank fails within the timeout, naming it' '
	"$PENNY" allreduce-test --np 4 --timeout 10 -b 1K -e 1M -f 2 -n 100000 -w 0 >out 2>err &
	parent=$! rc=none victim=
	victim=$(ranks_up $parent 4 | sed -n 3p)
	test -n "$victim" && kill -9 $victim
	start=$(date +%s)
	wait $parent
	rc=$?
	took=$(( $(date +%s) - start ))
	echo "victim=$victim rc=$rc took=${took}s" && cat err &&
	test -n "$victim" && test "$rc" -ne 0 && test "$took" -le 20 &&
	# the launcher prints identical errors once ("ranks 0,1,3: rank 2 ..."):
	# every survivor is on a line naming rank 2
	grep "^penny allreduce-test: ranks\? [0-9,-]*: rank 2 " err >named &&
	for r in 0 1 3; do grep -Eq "ranks? ([0-9]+[,-])*$r[,:]" named || exit 1; done &&
	no_procs_left
'

test_expect_success 'strangers on the rendezvous port are dropped, the job completes' '
	port=$(free_port) || exit 1
	export PENNY_COOKIE=00112233445566778899aabbccddeeff
	"$PENNY" allreduce-test --rank 0 --nranks 2 --root 127.0.0.1:$port --timeout 20 -b 1K -e 4K -f 2 >out0 2>err0 &
	r0=$!
	python3 - $port <<-PY &&
	import socket, struct, sys, time
	port = int(sys.argv[1])
	sys.path.insert(0, "$TOP/tests/helpers")
	import peer
	def conn():
	    return peer.conn(port)
	def hdr(magic=0x50454e4e, version=1, cookie=bytes.fromhex("00112233445566778899aabbccddeeff"), typ=1, ln=176):
	    return struct.pack("<IHH16sIIQ", magic, version, typ, cookie, 1, 0, ln)
	hello = struct.pack("<IIiI64s96s", 1, 2, 1, 0, b"evil", b"evil")
	silent = conn()                                           # says nothing
	s = conn(); s.sendall(b"GET / HTTP/1.0\r\n\r\n" * 10); s.close()   # garbage
	s = conn(); s.sendall(hdr(cookie=b"x" * 16) + hello); time.sleep(0.2); s.close()  # wrong cookie
	s = conn(); s.sendall(hdr(version=9) + hello); time.sleep(0.2); s.close()         # wrong version
	s = conn(); s.sendall(hdr(ln=1 << 40)); time.sleep(0.2); s.close()                # absurd size
	s = conn(); s.sendall(bytes(range(256)) * 4); s.close()                           # binary noise
	time.sleep(0.5)
	PY
	penny allreduce-test --rank 1 --nranks 2 --root 127.0.0.1:$port --timeout 20 -b 1K -e 4K -f 2 >out1 2>err1 &&
	wait $r0 && cat err0 &&
	test "$(grep -c "dropped a connection" err0)" -ge 4 &&
	grep -q "Out of bounds values : 0 OK" out0
'

test_expect_success 'a rank that never joins: rank 0 could not run (exit 2) after the timeout, naming it' '
	port=$(free_port) &&
	start=$(date +%s) &&
	test_exit 2 penny allreduce-test --rank 0 --nranks 3 --root 127.0.0.1:$port --timeout 2 2>err &&
	took=$(( $(date +%s) - start )) && test "$took" -le 6 &&
	grep -q "ranks 1,2 to join" err
'

test_expect_success 'a rank whose rank 0 never comes could not run (exit 2) after the timeout' '
	port=$(free_port) &&
	test_exit 2 penny allreduce-test --rank 1 --nranks 2 --root 127.0.0.1:$port --timeout 1 2>err &&
	grep -q "connecting to rank 0" err
'

test_expect_success 'shm cannot join two hosts: clear error; tcp can' '
	port=$(free_port) || exit 1
	PENNY_NODE_ID=a "$PENNY" allreduce-test --rank 0 --nranks 2 --root 127.0.0.1:$port --timeout 10 \
		--transport shm -b 1K -e 1K >/dev/null 2>err0 &
	r0=$!
	! PENNY_NODE_ID=b penny allreduce-test --rank 1 --nranks 2 --root 127.0.0.1:$port --timeout 10 \
		--transport shm -b 1K -e 1K >/dev/null 2>err1 ;
	! wait $r0 && cat err0 err1 && grep -q "cannot connect" err0 err1
'

test_expect_success 'two "nodes" by PENNY_NODE_ID, 2 ranks each: hierarchical over tcp, 0 wrong' '
	port=$(free_port) || exit 1
	pids=
	for r in 1 2 3; do
		PENNY_NODE_ID=n$((r / 2)) "$PENNY" allreduce-test --rank $r --nranks 4 --root 127.0.0.1:$port \
			--timeout 30 --algo hierarchical,ring,simple-ring -b 1 -e 1M -f 9 -d bfloat16 -n 2 -w 1 \
			>/dev/null 2>err$r &
		pids="$pids $!"
	done
	PENNY_NODE_ID=n0 penny allreduce-test --rank 0 --nranks 4 --root 127.0.0.1:$port --timeout 30 \
		--algo hierarchical,ring,simple-ring -b 1 -e 1M -f 9 -d bfloat16 -n 2 -w 1 >out 2>err0 &&
	for p in $pids; do wait $p || exit 1; done &&
	grep -q "4 ranks on 2 nodes" out && grep -q "via tcp" out && grep -q "via shm" out &&
	test "$(grep -c "Out of bounds values : 0 OK" out)" -eq 3
'
test_done
