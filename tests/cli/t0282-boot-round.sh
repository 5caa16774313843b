#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The rendezvous, another round (engine/join.c, engine/boot.c).  Two jobs
# on one port with one secret: a straggler of the first (a rank that met
# its rank 0, which was then killed) reaches the second's rank 0, which
# used to take it as one of its ranks (the job then failed: "rank 1 joined
# twice", or "in a job of 3 ranks"); now the straggler is dropped with one
# line, the job goes on and completes, and the straggler stops with one
# line naming why.  A rank killed and started again before the job began
# takes its place (it used to fail the job: "rank 1 joined twice").  A
# rank given the same --root written another way says which.  A
# peer that knows the secret and sends an abort notice of 2^63 bytes is
# named at once, not waited on until --timeout.  And a careless user's
# rendezvous: a port another program holds, an address nobody answers at,
# one that does not resolve, ranks out of range, a connection that says
# nothing: one line, non-zero, within --timeout.
# cost: 22
. "$(dirname "$0")/../lib.sh"

export PENNY_COOKIE=t0282-one-secret-for-both-jobs
unset PENNY_ROOT

# straggler PORT NB: job a (3 ranks: 0 and 1 only) and job b (NB ranks) on
# 127.0.0.1:PORT.  One listening socket, held here, is rank 0's of both
# (PENNY_ROOT_FD), so that b's rank 0 takes the port the moment a's dies:
# a's rank 1 joins a's rank 0, a's rank 0 is killed, b's rank 0 starts at
# once, and b's other ranks a second later, while a's rank 1 (told nothing
# by its dead rank 0) joins again.  stderr in errJR, the exit statuses of
# a's rank 1 and b's ranks in rcs.
straggler() {
	python3 - "$@" >rcs <<-'PY'
	import os, socket, subprocess, sys, time
	port, nb, P = int(sys.argv[1]), int(sys.argv[2]), os.environ["PENNY"]
	l = socket.socket()
	l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
	l.bind(("127.0.0.1", port))
	l.listen(64)
	fd = l.fileno()
	os.set_inheritable(fd, True)

	def rank(job, r, n, env=None):
	    e = dict(os.environ, **(env or {}))
	    if r == 0:
	        e["PENNY_ROOT_FD"] = str(fd)
	    return subprocess.Popen([P, "allreduce-test", "--rank", str(r), "--nranks", str(n),
	                             "--root", "127.0.0.1:%d" % port, "--timeout", "8", "-b", "8",
	                             "-e", "1K"], env=e, stdout=open("out%s%d" % (job, r), "w"),
	                            stderr=open("err%s%d" % (job, r), "w"),
	                            pass_fds=[fd] if r == 0 else [])

	a0 = rank("a", 0, 3, {"PENNY_DEBUG": "BOOT"})
	a1 = rank("a", 1, 3)
	t = time.time()
	while "rank 1 joined" not in open("erra0").read():
	    if time.time() - t > 10 or a0.poll() is not None:
	        sys.exit("rank 1 of job a never joined its rank 0")
	    time.sleep(0.02)
	a0.kill()
	a0.wait()
	b = [rank("b", 0, nb)]
	time.sleep(1)
	b += [rank("b", r, nb) for r in range(1, nb)]
	l.close()
	print(" ".join(str(p.wait()) for p in [a1] + b))
	PY
}

test_expect_success 'a straggler of a killed job, one secret, one port: dropped, the new job completes' '
	port=$(free_port) || exit 1
	within 20 straggler $port 3; ok=$?
	cat rcs; for f in erra1 errb0 errb1 errb2; do echo "$f:"; cat $f; done
	test $ok -eq 0 && test "$(cat rcs)" = "2 0 0 0" &&
	grep -q "Out of bounds values : 0 OK" outb0 &&
	test "$(wc -l <erra1)" -eq 1 &&
	grep -q "rank 1: rank 0 at 127.0.0.1:$port is of another job (job [0-9a-f]\{8\}; this rank.s is job [0-9a-f]\{8\}): this rank.s rank 0 is gone" erra1 &&
	test "$(wc -l <errb0)" -eq 1 &&
	grep -q "rank 0: dropped a connection to the rendezvous: rank 1 (pid [0-9]* on .*) is of another job: it met another rank 0 at this address" errb0 &&
	test ! -s errb1 && test ! -s errb2 && no_procs_left
'

test_expect_success 'a straggler of a killed job of another size: dropped, the new job completes' '
	port=$(free_port) || exit 1
	within 20 straggler $port 2; ok=$?
	cat rcs; for f in erra1 errb0 errb1; do echo "$f:"; cat $f; done
	test $ok -eq 0 && test "$(cat rcs)" = "2 0 0" &&
	test "$(wc -l <erra1)" -eq 1 && grep -q "is of another job" erra1 &&
	test "$(wc -l <errb0)" -eq 1 && grep -q "rank 1 (pid [0-9]* on .*) is of another job" errb0 &&
	test ! -s errb1 && no_procs_left
'

test_expect_success 'a rank killed and started again before the job began: it takes its place' '
	port=$(free_port) || exit 1
	PENNY_DEBUG=BOOT penny allreduce-test --rank 0 --nranks 3 --root 127.0.0.1:$port \
		--timeout 8 -b 8 -e 1K >out0 2>err0 & r0=$!
	"$PENNY" allreduce-test --rank 1 --nranks 3 --root 127.0.0.1:$port --timeout 8 -b 8 \
		-e 1K >out1 2>err1 & r1=$!
	for i in $(seq 200); do grep -q "rank 1 joined" err0 && break; sleep 0.05; done
	kill -9 $r1; wait $r1; old=$r1
	"$PENNY" allreduce-test --rank 1 --nranks 3 --root 127.0.0.1:$port --timeout 8 -b 8 \
		-e 1K >out1 2>err1 & r1=$!
	sleep 0.5
	within 10 penny allreduce-test --rank 2 --nranks 3 --root 127.0.0.1:$port --timeout 8 \
		-b 8 -e 1K >out2 2>err2; ok=$? rc2=$WITHIN_RC
	wait $r0; rc0=$?; wait $r1; rc1=$?
	grep -v " BOOT " err0 >e0; cat e0 err1 err2; echo "rc0=$rc0 rc1=$rc1 rc2=$rc2"
	test $ok -eq 0 && test $rc0 -eq 0 && test $rc1 -eq 0 && test $rc2 -eq 0 &&
	grep -q "Out of bounds values : 0 OK" out0 && test "$(wc -l <e0)" -eq 1 &&
	grep -q "rank 0: rank 1 (pid $old on .*) left before the job began; pid $r1 on .* takes its place" e0 &&
	test ! -s err1 && test ! -s err2 && no_procs_left
'

# The job's public tag is made of --root as written: a rank given
# "localhost:P" meets rank 0 of "127.0.0.1:P" as another job's.  It says
# so naming its own --root; rank 0, reset by it with its challenge unread,
# drops it without a word ("Connection reset by peer" was said) and names
# the rank that never came.
test_expect_success 'a rank given the --root written another way: it says which, rank 0 waits' '
	port=$(free_port) || exit 1
	penny allreduce-test --rank 0 --nranks 2 --root 127.0.0.1:$port --timeout 3 -b 8 -e 8 \
		>out0 2>err0 & r0=$!
	sleep 0.3
	within 3 penny allreduce-test --rank 1 --nranks 2 --root localhost:$port --timeout 3 \
		-b 8 -e 8 >out1 2>err1; ok=$? rc1=$WITHIN_RC
	wait $r0; rc0=$?
	cat err0 err1; echo "rc0=$rc0 rc1=$rc1"
	test $ok -eq 0 && test $rc0 -eq 2 && test $rc1 -eq 2 && test "$(wc -l <err1)" -eq 1 &&
	grep -q "rank 1: rank 0 of another job listens at 127.0.0.1:$port (one given another rendezvous address than this rank.s .localhost:$port.: give every rank the same, written alike)" err1 &&
	test "$(wc -l <err0)" -eq 1 && grep -q "rank 0: timed out after 3 s waiting for ranks 1 to join" err0
'

# peer MODE PORT: a peer that holds the job's secret (PENNY_COOKIE) and
# sends an abort notice of 2^63 bytes: as rank 1 once it joined (rank),
# as rank 0 once it proved itself (root).  exec: "peer ... &" makes $! the
# interpreter, so the test's kill ends it (a shell in between took the
# signal, and the interpreter's 8 s sleep held the case's output open)
peer() {
	exec python3 - "$@" <<-PY
	import hmac, os, socket, struct, sys, time
	sys.path.insert(0, "$TOP/tests/helpers")
	import peer
	mode, port = sys.argv[1], int(sys.argv[2])
	secret = peer.job_secret(os.environ["PENNY_COOKIE"])
	ctx = ("root:127.0.0.1:%d" % port).encode()
	tag = peer.job_tag(ctx.decode())
	cookie = lambda n: hmac.new(secret, b"penny job cookie\0" + ctx + b"\0" + n, "sha256").digest()[:16]
	if mode == "rank":
	    s = peer.conn(port)
	    _, ch = peer.read_frame(s)
	    s.sendall(peer.hello_v3(secret, tag, ch, 1, 2, pid=os.getpid()))
	    _, w = peer.read_frame(s)
	    h = peer.recv_all(s, 40)
	    peer.recv_all(s, struct.unpack_from("<Q", h, 32)[0])
	    ck = cookie(w[32:48])
	else:
	    l = socket.socket()
	    l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
	    l.bind(("127.0.0.1", port))
	    l.listen(8)
	    open("ready", "w").close()
	    s, _ = l.accept()
	    ch, jn = os.urandom(16), os.urandom(16)
	    s.sendall(peer.frame(peer.CHALLENGE, tag, ch))
	    h = peer.recv_all(s, 40)
	    body = peer.recv_all(s, struct.unpack_from("<Q", h, 32)[0])
	    rn = body[176:192]
	    mac = hmac.new(secret, b"penny welcome\0" + rn + ch + struct.pack("<I", 1) + tag + jn,
	                   "sha256").digest()
	    s.sendall(peer.frame(peer.WELCOME, tag, mac + jn))
	    ck = cookie(jn)
	s.sendall(peer.header(3, peer.ABORT, ck, 1 if mode == "rank" else 0, 1, 1 << 63) + b"x" * 64)
	time.sleep(8)
	PY
}

test_expect_success 'an abort notice of 2^63 bytes from a rank: rank 0 names it at once' '
	port=$(free_port) || exit 1
	peer rank $port & pp=$!
	within 3 penny allreduce-test --rank 0 --nranks 2 --root 127.0.0.1:$port --timeout 6 \
		-b 8 -e 8 >out 2>err; ok=$? rc=$WITHIN_RC
	kill $pp; wait $pp; cat err; echo "rc=$rc"
	test $ok -eq 0 && test $rc -eq 1 && test "$(wc -l <err)" -eq 1 &&
	grep -q "rank 0: bad message from rank 1 (host intruder): an abort notice of 9223372036854775808 bytes" err
'

test_expect_success 'an abort notice of 2^63 bytes from rank 0: the rank names it at once' '
	port=$(free_port) || exit 1
	rm -f ready; peer root $port & pp=$!
	until [ -e ready ]; do sleep 0.02; done
	within 3 penny allreduce-test --rank 1 --nranks 2 --root 127.0.0.1:$port --timeout 6 \
		-b 8 -e 8 >out 2>err; ok=$? rc=$WITHIN_RC
	kill $pp; wait $pp; cat err; echo "rc=$rc"
	test $ok -eq 0 && test $rc -eq 1 && test "$(wc -l <err)" -eq 1 &&
	grep -q "rank 1: bad message from rank 0 (host ?): an abort notice of 9223372036854775808 bytes" err
'

# run SECONDS WANT-RC PATTERN ARGS...: allreduce-test ARGS (rendezvous
# options) is done within SECONDS with exit WANT-RC and one line on stderr
# matching PATTERN.
run() {
	local secs=$1 want=$2 pat=$3
	shift 3
	within "$secs" penny allreduce-test "$@" -b 8 -e 8 >out 2>err; local ok=$?
	echo "$*: rc=$WITHIN_RC after $WITHIN_SECS s: $(cat err)"
	test $ok -eq 0 && test "$WITHIN_RC" -eq "$want" && test "$(wc -l <err)" -eq 1 &&
	grep -q -- "$pat" err && test ! -s out
}

test_expect_success 'a --root port another program holds: rank 0 at once, a rank within 2 s' '
	port=$(free_port) && rm -f ready || exit 1
	python3 -c "
import socket, time
l = socket.socket(); l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
l.bind((\"127.0.0.1\", $port)); l.listen(8); open(\"ready\", \"w\").close(); time.sleep(20)" & sp=$!
	until [ -e ready ]; do sleep 0.02; done
	run 1 2 "rank 0: cannot listen on 127.0.0.1:$port: Address already in use" \
		--rank 0 --nranks 2 --root 127.0.0.1:$port --timeout 5 &&
	run 3 1 "rank 1: what listens at 127.0.0.1:$port said nothing" \
		--rank 1 --nranks 2 --root 127.0.0.1:$port --timeout 5 &&
	run 2 1 "rank 1: what listens at 127.0.0.1:$port said nothing" \
		--rank 1 --nranks 2 --root 127.0.0.1:$port --timeout 1
	ok=$?; kill $sp; wait $sp; test $ok -eq 0
'

test_expect_success 'a --root nobody answers at, or that does not resolve: one line within --timeout' '
	port=$(free_port) || exit 1
	run 4 2 "rank 1: timed out after 2 s connecting to rank 0 at 127.0.0.1:$port" \
		--rank 1 --nranks 2 --root 127.0.0.1:$port --timeout 2 &&
	run 4 2 "rank 1: timed out after 2 s connecting to rank 0 at 192.0.2.1:$port" \
		--rank 1 --nranks 2 --root 192.0.2.1:$port --timeout 2 &&
	run 4 2 "rank 0: timed out after 2 s waiting for ranks 1,2 to join (1 of 3 joined)" \
		--rank 0 --nranks 3 --root 127.0.0.1:$port --timeout 2 &&
	run 2 2 "rank 1: rank 0.s host .no-such-host.invalid. does not resolve" \
		--rank 1 --nranks 2 --root no-such-host.invalid:$port --timeout 2 &&
	run 2 2 "rank 0: cannot resolve .no-such-host.invalid." \
		--rank 0 --nranks 2 --root no-such-host.invalid:$port --timeout 2 &&
	for bad in 127.0.0.1:70000 127.0.0.1 :$port; do
		run 2 2 "bad rendezvous address .$bad. (want HOST:PORT)" \
			--rank 1 --nranks 2 --root $bad --timeout 2 || exit 1
	done &&
	run 2 2 "port 0 cannot be reached" --rank 1 --nranks 2 --root 127.0.0.1:0 --timeout 2
'

test_expect_success 'ranks out of range: one line, at once, nothing started' '
	port=$(free_port) || exit 1
	run 2 2 "0 <= rank < nranks" --rank 5 --nranks 3 --root 127.0.0.1:$port &&
	run 2 2 "0 <= rank < nranks" --rank 3 --nranks 3 --root 127.0.0.1:$port &&
	run 2 2 "0 <= rank < nranks" --rank 1 --nranks 1 --root 127.0.0.1:$port &&
	run 2 2 "rank must be 0..8191, got -1" --rank -1 --nranks 3 --root 127.0.0.1:$port &&
	run 2 2 "nranks must be 1..8192, got 0" --rank 0 --nranks 0 --root 127.0.0.1:$port &&
	run 2 2 "rank must be 0..8191, got 99999999999" --rank 99999999999 --nranks 3 \
		--root 127.0.0.1:$port && no_procs_left
'

test_expect_success 'a connection to rank 0 that says nothing: dropped with a notice, the job completes' '
	port=$(free_port) || exit 1
	penny allreduce-test --rank 0 --nranks 2 --root 127.0.0.1:$port --timeout 6 -b 8 -e 8 \
		>out0 2>err0 & r0=$!
	python3 -c "
import socket, sys, time
sys.path.insert(0, \"$TOP/tests/helpers\")
import peer
s = peer.conn($port); time.sleep(3)" & sp=$!
	sleep 2.5
	within 6 penny allreduce-test --rank 1 --nranks 2 --root 127.0.0.1:$port --timeout 6 \
		-b 8 -e 8 >out1 2>err1; ok=$? rc1=$WITHIN_RC
	wait $r0; rc0=$?; wait $sp
	cat err0 err1; echo "rc0=$rc0 rc1=$rc1"
	test $ok -eq 0 && test $rc0 -eq 0 && test $rc1 -eq 0 && test "$(wc -l <err0)" -eq 1 &&
	grep -q "rank 0: dropped a connection to the rendezvous: no hello within 2 s (0 bytes)" err0 &&
	test ! -s err1 && no_procs_left
'

test_done
