#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The GPU-driven path across nodes (src/gpu/xproxy.c) on the test plugin,
# hostile (issue 42, items 7, 8 and 9): ranks given different
# PENNY_XNODE_TRANSPORT are told so on every rank, before any proxy
# starts; a rank stopped (SIGSTOP) or killed in the middle of a 2 x 2 job
# is named by every other rank, over the tcp and the shm proxy, within
# the timeout; a rank killed in the job's set-up leaves no other rank
# silent; and inbox names another user made ahead (/dev/shm) neither
# fail the next shm-proxy job nor are touched by it.
# cost: 40
. "$(dirname "$0")/../lib.sh"

export PENNY_PLUGIN_PATH=$BUILD/tests/plugins
# the emulated nodes share one GPU of the fake plugin: rank 0 says so, once
others() { grep -v "share one GPU" "$1"; }

# As for PENNY_XNODE_CHUNK (t0603): the first failing rank's message on
# every rank (agreed through the rendezvous), said once, by rank 0; every
# rank exits 2 at once, none with "bad magic" or a timeout.
for pair in "tcp shm" "tcp " "shm verbs"; do
	a=${pair% *} b=${pair#* }
	test_expect_success "PENNY_XNODE_TRANSPORT '$a' on rank 0, '${b:-unset}' on rank 1: named, at once" '
		port=$(free_port) || exit 1
		( export PENNY_XNODE_TRANSPORT=$b; [ -n "$b" ] || unset PENNY_XNODE_TRANSPORT
		  exec env PENNY_NODE_ID=n1 timeout 60 "$PENNY" allreduce-test --rank 1 --nranks 2 \
			--root 127.0.0.1:$port --timeout 20 --backend fake -b 1K -e 1K >/dev/null 2>err1 ) &
		s=$(date +%s)
		PENNY_XNODE_TRANSPORT=$a PENNY_NODE_ID=n0 timeout 60 "$PENNY" allreduce-test --rank 0 \
			--nranks 2 --root 127.0.0.1:$port --timeout 20 --backend fake -b 1K -e 1K \
			>/dev/null 2>err0
		rc0=$?
		wait $!
		rc1=$?
		test $rc0 -eq 2 && test $rc1 -eq 2 && test $(($(date +%s) - s)) -lt 20 &&
		others err0 >left0 && test "$(wc -l <left0)" -eq 1 &&
		grep -q "rank 1 (host .*) has PENNY_XNODE_TRANSPORT=${b:-auto}, rank 0 (host .*) $a: every rank needs the same transport between nodes" left0 &&
		test ! -s err1 || { echo "rc $rc0 $rc1"; cat err0 err1; exit 1; }
	'
done

test_expect_success 'the same PENNY_XNODE_TRANSPORT on one node only is not judged (no path across nodes)' '
	port=$(free_port) || exit 1
	PENNY_XNODE_TRANSPORT=shm timeout 60 "$PENNY" allreduce-test --rank 1 --nranks 2 \
		--root 127.0.0.1:$port --timeout 20 --backend fake -b 1K -e 1K >/dev/null 2>err1 &
	PENNY_XNODE_TRANSPORT=tcp timeout 60 "$PENNY" allreduce-test --rank 0 --nranks 2 \
		--root 127.0.0.1:$port --timeout 20 --backend fake -b 1K -e 1K >out 2>err0 &&
	wait $! && grep -q "Out of bounds values : 0 OK" out
'

# 2 nodes x 2 ranks, a long run (--timeout 6: a stopped rank is named 5 s
# after it stopped); rank 3 gets SIG 1 s after its timed run began (its
# debug line; not in the job's setup, where a failure is the agreed one,
# said by rank 0 alone).  Every other rank's exit status in rcR, its
# seconds in tR, its stderr in errR.
victim_job() { # TRANSPORT SIG
	local port r pids= vp i
	port=$(free_port) || return 1
	for r in 0 1 2 3; do
		if [ $r -eq 3 ]; then
			PENNY_XNODE_TRANSPORT=$1 PENNY_NODE_ID=n1 PENNY_DEBUG=plugin "$PENNY" \
				allreduce-test --rank 3 --nranks 4 --root 127.0.0.1:$port --timeout 6 \
				--backend fake -b 16M -e 16M -n 100000 -w 0 >/dev/null 2>err3 &
			vp=$!
			continue
		fi
		( s=$(date +%s)
		  PENNY_XNODE_TRANSPORT=$1 PENNY_NODE_ID=n$((r / 2)) timeout 60 "$PENNY" allreduce-test \
			--rank $r --nranks 4 --root 127.0.0.1:$port --timeout 6 --backend fake -b 16M \
			-e 16M -n 100000 -w 0 >/dev/null 2>err$r
		  echo $? >rc$r; echo $(($(date +%s) - s)) >t$r ) &
		pids="$pids $!"
	done
	for ((i = 0; i < 200; i++)); do
		grep -q "plugin: timing" err3 && break
		sleep 0.1
	done
	sleep 1
	kill -$2 $vp
	wait $pids
	kill -KILL $vp 2>/dev/null
	wait $vp 2>/dev/null
	return 0
}

for tp in tcp shm; do
	test_expect_success "2 x 2 over the $tp proxy, rank 3 stopped: ranks 0, 1, 2 name it, within the timeout" '
		victim_job $tp STOP &&
		for r in 0 1 2; do
			others err$r >left$r
			test "$(cat rc$r)" -ne 0 && test "$(cat t$r)" -le 14 && test "$(wc -l <left$r)" -eq 1 &&
			grep -q "rank 3 (host .*, pid [0-9]*) has been stopped for [0-9]* s (SIGSTOP or a debugger)" left$r ||
			{ echo "rank $r: rc $(cat rc$r) after $(cat t$r) s"; cat err$r; exit 1; }
		done
	'
	test_expect_success "2 x 2 over the $tp proxy, rank 3 killed: ranks 0, 1, 2 name it, within the timeout" '
		victim_job $tp KILL &&
		for r in 0 1 2; do
			others err$r >left$r
			test "$(cat rc$r)" -ne 0 && test "$(cat t$r)" -le 14 && test "$(wc -l <left$r)" -eq 1 &&
			grep -Eq "rank 3 \(host [^)]*\) (closed|is gone|died)|rank 3 \(host [^)]*, pid [0-9]*\) (is gone|died)" left$r ||
			{ echo "rank $r: rc $(cat rc$r) after $(cat t$r) s"; cat err$r; exit 1; }
		done
	'
done

# A rank killed in the job's set-up: its open of the fake plugin held 5 s
# (strace), the kill 0.5 s after every rank joined, while the
# others wait for it in an agreement.  Rank 0 says the error, once; every
# other rank says in one line what stopped it (the notice it heard from
# rank 0, or its lost connection to a killed rank 0), never nothing.
# Every other rank's exit status in rcR, its stderr (no debug lines) in leftR.
setup_kill_job() { # VICTIM
	local port r pids= sp vp i w
	port=$(free_port) || return 1
	for r in 0 1 2 3; do
		if [ $r -eq $1 ]; then
			PENNY_NODE_ID=n$((r / 2)) strace -f -qq -o /dev/null \
				-P "$PENNY_PLUGIN_PATH/penny-fake.so" -e trace=openat \
				-e inject=openat:delay_enter=5000000 "$PENNY" allreduce-test --rank $r \
				--nranks 4 --root 127.0.0.1:$port --timeout 6 --backend fake -b 1K -e 1K \
				>/dev/null 2>err$r &
			sp=$!
			continue
		fi
		( PENNY_NODE_ID=n$((r / 2)) PENNY_DEBUG=boot timeout 60 "$PENNY" allreduce-test \
			--rank $r --nranks 4 --root 127.0.0.1:$port --timeout 6 --backend fake -b 1K \
			-e 1K >/dev/null 2>err$r
		  echo $? >rc$r ) &
		pids="$pids $!"
	done
	w=$((1 - ($1 > 0)))	# a rank that is not the victim: once it joined, all have
	for ((i = 0; i < 200; i++)); do
		grep -q "BOOT rank $w/4 node" err$w 2>/dev/null && break
		sleep 0.1
	done
	sleep 0.5
	vp=$(pgrep -P $sp) && kill -KILL $vp
	wait $pids
	wait $sp 2>/dev/null
	for r in 0 1 2 3; do
		[ $r -eq $1 ] || others err$r | grep -v " penny BOOT " >left$r
	done
	return 0
}
if ! command -v strace >/dev/null || ! strace -qq -o /dev/null -e trace=none \
	-e inject=openat:delay_enter=1 true 2>/dev/null; then
	test_skip "a rank killed in the set-up" "LOUD: no strace with syscall delay injection here"
else
	test_expect_success 'rank 3 killed in the set-up: rank 0 names it, ranks 1 and 2 say they heard rank 0' '
		setup_kill_job 3 &&
		for r in 0 1 2; do
			test "$(cat rc$r)" -eq 2 && test "$(wc -l <left$r)" -eq 1 || {
				echo "rank $r: rc $(cat rc$r)"; cat err$r; exit 1; }
		done &&
		grep -q "^penny allreduce-test: rank 3 (host .*, pid [0-9]*) closed its connection during agreement: it failed or was killed$" left0 &&
		grep -q "^penny allreduce-test: rank 1: stopped by an abort notice from rank 0 (rank 0 says why)$" left1 &&
		grep -q "^penny allreduce-test: rank 2: stopped by an abort notice from rank 0 (rank 0 says why)$" left2
	'
	test_expect_success 'rank 0 killed in the set-up: ranks 1, 2 and 3 each name it, in one line' '
		setup_kill_job 0 &&
		for r in 1 2 3; do
			test "$(cat rc$r)" -eq 2 && test "$(wc -l <left$r)" -eq 1 &&
			grep -q "^penny allreduce-test: rank $r: rank 0 (host .*, pid [0-9]*) closed its connection during agreement: it failed or was killed$" left$r ||
			{ echo "rank $r: rc $(cat rc$r)"; cat err$r; exit 1; }
		done
	'
fi

# Another user makes the inbox names of the next pids ahead, in a /dev/shm
# of the test's own (a mount namespace) and pids of its own (a pid
# namespace): as nobody when root, else as this user in a user namespace.
if [ "$(id -u)" -eq 0 ] && unshare -mpf --mount-proc true 2>/dev/null && command -v setpriv >/dev/null; then
	NS="unshare -mpf --mount-proc" AS="setpriv --reuid=65534 --regid=65534 --clear-groups"
elif unshare -rmpf --mount-proc true 2>/dev/null; then
	NS="unshare -rmpf --mount-proc" AS=""
else
	NS=
fi
if [ -z "$NS" ]; then
	test_skip "inbox names made ahead by another user" "LOUD: no mount and pid namespace here"
else
	test_expect_success 'inbox names made ahead (/dev/shm/penny-xbox-PID-N) by another user: the job runs, they stay' '
		port=$(free_port) &&
		$NS bash -c "mount -t tmpfs -o mode=1777 tmpfs /dev/shm || exit 99
			$AS bash -c \"for p in \\\$(seq 1 400); do for k in 0 1 2 3; do
				echo stranger >/dev/shm/penny-xbox-\\\$p-\\\$k; done; done\"
			export PENNY_XNODE_TRANSPORT=shm
			PENNY_NODE_ID=n1 \"$PENNY\" allreduce-test --rank 1 --nranks 2 --root 127.0.0.1:$port \
				--timeout 20 --backend fake -b 1K -e 64K >/dev/null 2>err1 &
			PENNY_NODE_ID=n0 \"$PENNY\" allreduce-test --rank 0 --nranks 2 --root 127.0.0.1:$port \
				--timeout 20 --backend fake -b 1K -e 64K >out 2>err0; rc=\$?
			wait \$! || rc=1
			ls /dev/shm | grep -c ^penny-xbox- >count
			stat -c %U:%s /dev/shm/penny-xbox-* | sort | uniq -c >owners
			exit \$rc" &&
		grep -q "GPU-driven (.*shm between nodes" out && grep -q "Out of bounds values : 0 OK" out &&
		test "$(cat count)" -eq 1600 && test "$(wc -l <owners)" -eq 1 &&
		grep -Eq "^ *1600 (nobody|$(id -un)):9$" owners || { cat err0 err1 owners; false; }
	'
fi
test_done
