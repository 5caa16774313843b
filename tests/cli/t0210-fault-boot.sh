#!/usr/bin/env bash
# Faults at the rendezvous: job sizes past the old fixed limits, launcher
# variables that are not numbers, huge --nranks and --timeout, rendezvous
# files planted by another user, floods of idle strangers, two jobs on one
# address.  Each fails with one line and exit 2 (or completes), in bounded time.
# cost: 18
. "$(dirname "$0")/../lib.sh"

shm_snapshot shm0

# Every pair of local ranks has its own reserved shared-memory FIFOs
# (N^2 x channels x 513 KiB), so hundreds of local ranks need more /dev/shm
# than a small machine has: the memory check refuses them with one line, and
# the large runs below need a host that can hold them.
shm_need_gib() { echo $(( ($1 * $1 * 2 * 513 / 1024 / 1024) + 1 )); }
shm_free_gib() { df -k --output=avail /dev/shm | tail -1 | awk '{print int($1 / 1048576)}'; }

if [ "$(shm_free_gib)" -gt "$(shm_need_gib 260)" ]; then
test_expect_success '--np 260: one-shot over a group of 260 ranks (no fixed limit of 256)' '
	within 30 timeout 40 "$PENNY" allreduce-test --np 260 --algo one-shot -b 8 -e 8 -n 1 -w 0 \
		--timeout 20 >out 2>err; ok=$?; cat err &&
	test $ok -eq 0 && test "$WITHIN_RC" -eq 0 && grep -q "Out of bounds values : 0 OK" out && test ! -s err
'
else
test_expect_success '--np 260 on a host without the /dev/shm for it: one line, before starting' '
	within 3 test_exit 2 penny allreduce-test --np 260 --algo one-shot -b 8 -e 8 2>err && cat err &&
	test "$(wc -l <err)" -eq 1 && grep -q "260 ranks x 2 buffers of 8 B need .* in /dev/shm" err &&
	no_procs_left
'
fi

if [ "$(shm_free_gib)" -gt "$(shm_need_gib 560)" ]; then
test_expect_success '--np 560: the ranks meet without an allgather of nranks^2 (no verbs peer)' '
	within 40 timeout 50 "$PENNY" allreduce-test --np 560 --algo one-shot -b 8 -e 8 -n 0 -w 0 -c 0 \
		--timeout 30 >out 2>err; ok=$?; head -3 err &&
	test $ok -eq 0 && test "$WITHIN_RC" -eq 0 && grep -q "560 ranks on 1 nodes" out && test ! -s err &&
	no_procs_left && shm_leftovers shm0
'
else
test_skip '--np 560' "needs $(shm_need_gib 560) GiB of /dev/shm, $(shm_free_gib) GiB free"
fi

test_expect_success 'rank 0 of 300 under ulimit -n 200: refused before waiting, naming the limit' '
	(ulimit -n 200 && within 3 test_exit 2 penny allreduce-test --rank 0 --nranks 300 \
		--root 127.0.0.1:$(free_port) -b 8 -e 8 --timeout 5 >out 2>err); ok=$?; cat err &&
	test $ok -eq 0 && test "$(wc -l <err)" -eq 1 && grep -q "needs 364 open files.*limit is 200" err &&
	test ! -s out && no_procs_left
'

test_expect_success '--nranks 2000000000: one line, exit 2, at once' '
	within 2 test_exit 2 penny allreduce-test --rank 0 --nranks 2000000000 \
		--root 127.0.0.1:$(free_port) 2>err && cat err &&
	test "$(wc -l <err)" -eq 1 && grep -q -- "--nranks must be 1..8192" err
'

test_expect_success '--timeout past 24 h is refused; 24 h (86400000 ms) runs over tcp, no wait overflows' '
	within 2 test_exit 2 penny allreduce-test --np 2 --timeout 2147484 2>err && cat err &&
	grep -q -- "--timeout must be 10ms..24h, got 2147484" err &&
	port=$(free_port) || exit 1
	PENNY_NODE_ID=b penny allreduce-test --rank 1 --nranks 2 --root 127.0.0.1:$port \
		--timeout 24h -b 8 -e 1K -f 4 >/dev/null 2>err1 &
	r1=$!
	within 20 env PENNY_NODE_ID=a timeout 20 "$PENNY" allreduce-test --rank 0 --nranks 2 \
		--root 127.0.0.1:$port --timeout 24h -b 8 -e 1K -f 4 >out 2>err0; ok=$? rc0=$WITHIN_RC
	( sleep 5; kill -9 $r1 2>/dev/null ) & guard=$!
	wait $r1; rc1=$?
	kill $guard 2>/dev/null
	cat err0 err1; echo "rc0=$rc0 rc1=$rc1"
	test $ok -eq 0 && test "$rc0" -eq 0 && test "$rc1" -eq 0 && grep -q "0 OK" out &&
	grep -q "via tcp" out
'

test_expect_success 'launcher variables that are not numbers or out of range: one line, exit 2' '
	for env in "OMPI_COMM_WORLD_RANK=x" "OMPI_COMM_WORLD_RANK=x OMPI_COMM_WORLD_SIZE=2" \
		"OMPI_COMM_WORLD_RANK=2 OMPI_COMM_WORLD_SIZE=2" "OMPI_COMM_WORLD_RANK=0 OMPI_COMM_WORLD_SIZE=-3" \
		"SLURM_PROCID=1 SLURM_NTASKS=99999 SLURM_STEP_ID=0" "PMI_RANK=0 PMI_SIZE=2x" "RANK=1 WORLD_SIZE=1" \
		"OMPI_COMM_WORLD_RANK=0 OMPI_COMM_WORLD_SIZE=2 OMPI_COMM_WORLD_LOCAL_RANK=y"; do
		env $env timeout 10 "$PENNY" allreduce-test -b 8 -e 8 --timeout 2 >out 2>err; rc=$?
		echo "$env: rc=$rc $(cat err)"
		test "$rc" -eq 2 && test "$(wc -l <err)" -eq 1 && grep -q "launcher environment" err &&
		test ! -s out || exit 1
	done
'

test_expect_success '--root without --rank: refused, not ignored' '
	test_exit 2 penny allreduce-test --root 127.0.0.1:$(free_port) -b 8 -e 8 >out 2>err && cat err &&
	test "$(wc -l <err)" -eq 1 && grep -q "needs --rank" err && test ! -s out
'

# A listener that counts who connects (the attacker's side of a planted file).
listen_count() {
	python3 - "$1" "$2" <<-PY
	import socket, sys, time
	s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
	s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(8); s.settimeout(0.2)
	n, t = 0, time.time()
	while time.time() - t < float(sys.argv[2]):
	    try:
	        c, _ = s.accept(); n += 1; c.close()
	    except OSError:
	        pass
	print(n)
	PY
}

if [ "$(id -u)" -eq 0 ] && id nobody >/dev/null 2>&1 && command -v setpriv >/dev/null; then
	as_nobody() { setpriv --reuid nobody --regid "$(id -g nobody)" --clear-groups sh -c "$1"; }
	test_expect_success 'a rendezvous file planted by another user is never read' '
		port=$(free_port) && job=penny-t0210-$$ || exit 1
		listen_count $port 4 >count & lc=$!
		as_nobody "echo 127.0.0.1:$port 00112233445566778899aabbccddeeff >/tmp/penny-0-$job.root" &&
		within 6 env OMPI_COMM_WORLD_RANK=1 OMPI_COMM_WORLD_SIZE=2 OMPI_COMM_WORLD_LOCAL_SIZE=2 \
			OMPI_MCA_ess_base_jobid=$job timeout 10 "$PENNY" allreduce-test --timeout 2 -b 8 -e 8 \
			2>err; ok=$? rc=$WITHIN_RC
		rm -f /tmp/penny-0-$job.root; wait $lc
		cat err; echo "rc=$rc connections=$(cat count)"
		test $ok -eq 0 && test "$rc" -ne 0 && test "$(cat count)" -eq 0 && test "$(wc -l <err)" -eq 1
	'
	test_expect_success 'a rendezvous directory of another user, or a link, is passed by: never read' '
		tmp=$(mktemp -d /tmp/penny-t0210.XXXXXX) && chmod 1777 $tmp && job=4242 &&
		trap "rm -rf $tmp" EXIT &&
		as_nobody "mkdir $tmp/penny-0 && chmod 777 $tmp/penny-0 &&
			echo 127.0.0.1:1 00112233445566778899aabbccddeeff >$tmp/penny-0/$job.root" &&
		for r in 1 0; do
			env TMPDIR=$tmp OMPI_COMM_WORLD_RANK=$r OMPI_COMM_WORLD_SIZE=2 \
				OMPI_COMM_WORLD_LOCAL_SIZE=2 OMPI_MCA_ess_base_jobid=$job \
				"$PENNY" allreduce-test --timeout 4 -b 8 -e 8 >out$r 2>err$r &
			eval p$r=$!
		done
		wait $p0; rc0=$?; wait $p1; rc1=$?
		cat err0 err1; echo "rc0=$rc0 rc1=$rc1"
		test $rc0 -eq 0 && test $rc1 -eq 0 && test ! -s err0 && test ! -s err1 &&
		grep -q "^127.0.0.1:1 00112233" $tmp/penny-0/$job.root &&
		rm -rf $tmp/penny-0 && as_nobody "ln -s /tmp $tmp/penny-0" &&
		within 4 env TMPDIR=$tmp OMPI_COMM_WORLD_RANK=1 OMPI_COMM_WORLD_SIZE=2 \
			OMPI_COMM_WORLD_LOCAL_SIZE=2 OMPI_MCA_ess_base_jobid=$job \
			"$PENNY" allreduce-test --timeout 2 -b 8 -e 8 2>err; ok=$?; cat err &&
		test $ok -eq 0 && test "$WITHIN_RC" -ne 0 && test "$(wc -l <err)" -eq 1 &&
		grep -q "timed out after 2 s waiting for rank 0 to publish .$job.root. in a directory of this user ($tmp/penny-0, " err
	'
	test_expect_success 'our own rendezvous file with the wrong mode, or a link to one, is refused' '
		mkdir tmp2 && job=t0210 && dir=$PWD/tmp2/penny-0 &&
		mkdir -m 700 $dir && echo "127.0.0.1:1 00112233445566778899aabbccddeeff" >$dir/x &&
		chmod 644 $dir/x && ln -s x $dir/$job.root &&
		within 4 env TMPDIR=$PWD/tmp2 OMPI_COMM_WORLD_RANK=1 OMPI_COMM_WORLD_SIZE=2 \
			OMPI_COMM_WORLD_LOCAL_SIZE=2 OMPI_MCA_ess_base_jobid=$job \
			"$PENNY" allreduce-test --timeout 2 -b 8 -e 8 2>err; ok=$?; cat err &&
		test $ok -eq 0 && test "$WITHIN_RC" -ne 0 && grep -q "refusing .*symbolic link" err &&
		rm $dir/$job.root && mv $dir/x $dir/$job.root &&
		within 4 env TMPDIR=$PWD/tmp2 OMPI_COMM_WORLD_RANK=1 OMPI_COMM_WORLD_SIZE=2 \
			OMPI_COMM_WORLD_LOCAL_SIZE=2 OMPI_MCA_ess_base_jobid=$job \
			"$PENNY" allreduce-test --timeout 2 -b 8 -e 8 2>err; ok=$?; cat err &&
		test $ok -eq 0 && test "$WITHIN_RC" -ne 0 && grep -q "refusing .*mode 600" err
	'
else
	test_skip 'rendezvous files planted by another user' 'needs root, user nobody and setpriv'
fi

# A stranger (another local user) who knows the wire format and the job's
# address, but not its secret: strangers speak to rank 0 before the real
# rank 1 joins; every one is dropped with one line and the job completes.
# stranger MODE PORT ROOT: old (version 1 hellos with the cookie derived from
# --root: one of another job size, one claiming rank 1) or guess (version 3
# hellos answering the challenge, under the job's public tag, signed with a
# guessed secret); prints how many it sent.
stranger() {
	python3 - "$@" <<-PY
	import sys, time
	sys.path.insert(0, "$TOP/tests/helpers")
	import peer
	mode, port, root = sys.argv[1], int(sys.argv[2]), sys.argv[3]
	n = 0
	for rank, nranks in ((1, 3), (1, 2)):
	    s = peer.conn(port)
	    if mode == "old":
	        s.sendall(peer.hello_v1(peer.old_cookie(root), rank, nranks))
	    else:
	        typ, nonce = peer.read_frame(s)
	        assert typ == peer.CHALLENGE and len(nonce) == 16, typ
	        tag = peer.job_tag("root:" + root)
	        s.sendall(peer.hello_v3(peer.job_secret(b"guess"), tag, nonce, rank, nranks))
	    n += 1
	    time.sleep(0.3)
	    s.close()
	print(n)
	PY
}

for mode in old guess; do
test_expect_success "strangers' well-formed hellos ($mode): one line each, the job completes" '
	port=$(free_port) && unset PENNY_COOKIE && export XDG_CONFIG_HOME=$PWD/cfg || exit 1
	penny allreduce-test --rank 0 --nranks 2 --root 127.0.0.1:$port --timeout 5 -b 8 -e 1K \
		>out0 2>err0 &
	r0=$!
	sleep 0.3
	within 4 stranger '$mode' $port 127.0.0.1:$port $PWD/cfg/penny/cookie >sent; ok=$?
	t0=$(date +%s.%N)
	within 6 penny allreduce-test --rank 1 --nranks 2 --root 127.0.0.1:$port --timeout 5 \
		-b 8 -e 1K >out1 2>err1; ok1=$? rc1=$WITHIN_RC
	wait $r0; rc0=$?
	echo "sent=$(cat sent) rc0=$rc0 rc1=$rc1"; cat err0 err1
	test $ok -eq 0 && test $ok1 -eq 0 && test "$rc0" -eq 0 && test "$rc1" -eq 0 &&
	test "$(cat sent)" -eq 2 && grep -q "Out of bounds values : 0 OK" out0 &&
	test "$(wc -l <err0)" -eq 2 && test "$(grep -c "dropped a connection" err0)" -eq 2 &&
	test ! -s err1 && no_procs_left
'
done

test_expect_success 'a rank given another secret fails at once saying so; the job then completes' '
	port=$(free_port) && export XDG_CONFIG_HOME=$PWD/cfg2 || exit 1
	PENNY_COOKIE=one penny allreduce-test --rank 0 --nranks 2 --root 127.0.0.1:$port --timeout 6 \
		-b 8 -e 1K >out0 2>err0 &
	r0=$!
	within 3 test_exit 2 env PENNY_COOKIE=two "$PENNY" allreduce-test --rank 1 --nranks 2 \
		--root 127.0.0.1:$port --timeout 6 -b 8 -e 1K >/dev/null 2>errx; ok=$?
	within 6 env PENNY_COOKIE=one "$PENNY" allreduce-test --rank 1 --nranks 2 \
		--root 127.0.0.1:$port --timeout 6 -b 8 -e 1K >out1 2>err1; ok1=$? rc1=$WITHIN_RC
	wait $r0; rc0=$?
	cat errx err0 err1; echo "rc0=$rc0 rc1=$rc1"
	test $ok -eq 0 && test "$(wc -l <errx)" -eq 1 &&
	grep -q "rank 1: what listens at 127.0.0.1:$port refused this rank.s proof of the job.s secret: it is not rank 0 of this job, or rank 0 has another secret (this rank.s: PENNY_COOKIE)" errx &&
	test $ok1 -eq 0 && test "$rc0" -eq 0 && test "$rc1" -eq 0 && test "$(wc -l <err0)" -eq 1 &&
	grep -q "dropped a connection to the rendezvous: a hello claiming rank 1 of 2 .* without the proof of the job.s secret" err0 &&
	test ! -s err1 && no_procs_left
'

test_expect_success 'PENNY_COOKIE_FILE: only a private regular file of ours, one line otherwise' '
	mkfifo fifo && printf "s3cret" >key && chmod 644 key && ln -s key link && : >empty &&
	chmod 600 empty && head -c 5000 /dev/zero >big && chmod 600 big &&
	for f in key link fifo /dev/zero empty big missing; do
		within 3 test_exit 2 env PENNY_COOKIE_FILE=$f "$PENNY" allreduce-test --rank 0 \
			--nranks 2 --root 127.0.0.1:$(free_port) --timeout 2 -b 8 -e 8 2>err; ok=$?
		echo "$f: $(cat err)"
		test $ok -eq 0 && test "$(wc -l <err)" -eq 1 && grep -q "job secret .$f" err || exit 1
	done
	chmod 600 key && port=$(free_port) || exit 1
	PENNY_COOKIE_FILE=$PWD/key penny allreduce-test --rank 1 --nranks 2 --root 127.0.0.1:$port \
		--timeout 5 -b 8 -e 1K >/dev/null 2>err1 &
	r1=$!
	within 6 env PENNY_COOKIE_FILE=$PWD/key "$PENNY" allreduce-test --rank 0 --nranks 2 \
		--root 127.0.0.1:$port --timeout 5 -b 8 -e 1K >out 2>err0; ok=$? rc0=$WITHIN_RC
	wait $r1; rc1=$?
	cat err0 err1
	test $ok -eq 0 && test "$rc0" -eq 0 && test "$rc1" -eq 0 && grep -q "0 OK" out
'

test_expect_success 'without a secret: a private one is made in ~/.config/penny, never replaced' '
	rm -rf cfg3 && export XDG_CONFIG_HOME=$PWD/cfg3 && port=$(free_port) || exit 1
	penny allreduce-test --rank 1 --nranks 2 --root 127.0.0.1:$port --timeout 5 -b 8 -e 1K \
		>/dev/null 2>err1 &
	r1=$!
	within 6 penny allreduce-test --rank 0 --nranks 2 --root 127.0.0.1:$port --timeout 5 \
		-b 8 -e 1K >out 2>err0; ok=$? rc0=$WITHIN_RC
	wait $r1; rc1=$?
	cat err0 err1; ls -la cfg3/penny
	test $ok -eq 0 && test "$rc0" -eq 0 && test "$rc1" -eq 0 &&
	test "$(stat -c %a cfg3/penny)" = 700 && test "$(stat -c %a cfg3/penny/cookie)" = 600 &&
	grep -qE "^[0-9a-f]{64}$" cfg3/penny/cookie && cp cfg3/penny/cookie before &&
	chmod 640 cfg3/penny/cookie &&
	within 3 test_exit 2 penny allreduce-test --rank 0 --nranks 2 --root 127.0.0.1:$port \
		--timeout 2 -b 8 -e 8 2>err && cat err && grep -q "refusing the job secret" err &&
	cmp before cfg3/penny/cookie &&
	mkdir -p cfg4 elsewhere && ln -s ../elsewhere cfg4/penny &&
	within 3 test_exit 2 env XDG_CONFIG_HOME=$PWD/cfg4 "$PENNY" allreduce-test --rank 0 \
		--nranks 2 --root 127.0.0.1:$port --timeout 2 -b 8 -e 8 2>err && cat err &&
	grep -q "refusing .*cfg4/penny. for the job secret: not a directory" err &&
	test ! -e elsewhere/cookie && rm cfg4/penny && mkdir -m 777 cfg4/penny &&
	within 3 test_exit 2 env XDG_CONFIG_HOME=$PWD/cfg4 "$PENNY" allreduce-test --rank 0 \
		--nranks 2 --root 127.0.0.1:$port --timeout 2 -b 8 -e 8 2>err && cat err &&
	grep -q "refusing .*cfg4/penny. for the job secret: owned by uid [0-9]* with mode 777" err &&
	test ! -e cfg4/penny/cookie
'

test_expect_success 'a flood of idle strangers: the rank joins, the job completes' '
	port=$(free_port) || exit 1
	export PENNY_COOKIE=00112233445566778899aabbccddeeff
	penny allreduce-test --rank 0 --nranks 2 --root 127.0.0.1:$port --timeout 5 -b 8 -e 1K -f 4 \
		>out0 2>err0 &
	r0=$!
	python3 - $port >flood <<-PY &
	import socket, sys, time
	port, socks, t = int(sys.argv[1]), [], time.time()
	while time.time() - t < 4 and len(socks) < 600:
	    try:
	        socks.append(socket.create_connection(("127.0.0.1", port), timeout=0.5))
	    except OSError:
	        time.sleep(0.01)
	print(len(socks)); time.sleep(max(0, 4 - (time.time() - t)))
	PY
	fl=$!
	sleep 1
	within 6 penny allreduce-test --rank 1 --nranks 2 --root 127.0.0.1:$port --timeout 5 \
		-b 8 -e 1K -f 4 >out1 2>err1; ok=$? rc1=$WITHIN_RC
	wait $r0; rc0=$?; wait $fl
	echo "strangers: $(cat flood) rc0=$rc0 rc1=$rc1"; head -3 err0; cat err1
	test $ok -eq 0 && test "$rc0" -eq 0 && test "$rc1" -eq 0 && test "$(cat flood)" -ge 64 &&
	grep -q "Out of bounds values : 0 OK" out0 && test "$(wc -l <err0)" -le 10
'

test_expect_success 'a rank that joins twice (two jobs on one address): every rank says so, exit 2' '
	port=$(free_port) || exit 1
	for i in 1 2; do
		penny allreduce-test --rank 1 --nranks 3 --root 127.0.0.1:$port --timeout 5 -b 8 -e 8 \
			>/dev/null 2>err$i &
		eval p$i=$!
		sleep 0.3
	done
	within 7 test_exit 2 penny allreduce-test --rank 0 --nranks 3 --root 127.0.0.1:$port \
		--timeout 5 -b 8 -e 8 >/dev/null 2>err0; ok=$?
	wait $p1; rc1=$?; wait $p2; rc2=$?
	cat err0 err1 err2; echo "rc1=$rc1 rc2=$rc2"
	test $ok -eq 0 && test "$rc1" -eq 2 && test "$rc2" -eq 2 &&
	for i in 0 1 2; do
		test "$(wc -l <err$i)" -eq 1 && grep -q "rank 1 joined twice" err$i || exit 1
	done
'

test_expect_success 'a rank of a job of another size: both ranks say so, exit 2' '
	port=$(free_port) || exit 1
	penny allreduce-test --rank 1 --nranks 3 --root 127.0.0.1:$port --timeout 5 -b 8 -e 8 \
		>/dev/null 2>err1 &
	p1=$!
	within 7 test_exit 2 penny allreduce-test --rank 0 --nranks 2 --root 127.0.0.1:$port \
		--timeout 5 -b 8 -e 8 >/dev/null 2>err0; ok=$?
	wait $p1; rc1=$?
	cat err0 err1
	test $ok -eq 0 && test "$rc1" -eq 2 &&
	grep -q "in a job of 3 ranks, rank 0 in one of 2" err0 &&
	grep -q "in a job of 3 ranks, rank 0 in one of 2" err1 &&
	no_procs_left && shm_leftovers shm0
'
test_done
