#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Strangers on the job's sockets (issue 42, items 1 and 2): another user
# who opens idle connections to every new listening port of the job
# (tests/helpers/stranger), or who knows the job's cookie and claims a
# rank on every tcp mesh listener.  The tcp transport's mesh
# (src/transport/tcpmesh.c) reads every connection at once, drops them
# without holding up the ranks, proves each hello with the ranks' key, and
# when a rank is truly missing names it within --timeout.
#
# Each case runs in a network namespace of its own (the stranger attacks
# only its own job, no other test's); as root the stranger runs as nobody,
# else as this user in a user namespace (another process, not another
# user), else the cases are skipped, loudly.
# cost: 21
. "$(dirname "$0")/../lib.sh"

S=$BUILD/tests/helpers/stranger
STOP=$BUILD/tests/preload/stop-in-mesh.so
if [ "$(id -u)" -eq 0 ] && unshare -n true 2>/dev/null && command -v setpriv >/dev/null; then
	NS="unshare -n" AS="setpriv --reuid=65534 --regid=65534 --clear-groups"
elif unshare -rn true 2>/dev/null; then
	NS="unshare -rn" AS=""
else
	for c in idle-np idle-explicit forged-old forged-new stopped-rank; do
		test_skip "strangers: $c" "LOUD: no network namespace (unshare -n as root, or -rn)"
	done
	test_done
	exit
fi
export PENNY S STOP AS
export PENNY_COOKIE=t0260-job-secret

# in_ns SCRIPT: bash SCRIPT in a fresh network namespace with lo up; the
# functions below are there too.
in_ns() {
	$NS bash -c 'ip link set lo up 2>/dev/null || ifconfig lo up 2>/dev/null
		strange() { $AS "$S" "$@" >s.out 2>s.err & sp=$!
			until grep -q ready s.out 2>/dev/null; do sleep 0.02; done; }
		unstrange() { kill $sp; wait $sp; }
		'"$1"
}
# ranks N PORT TIMEOUT [ARGS]: explicit ranks (stderr in errR, exit status
# in rcR, seconds in tR); the last starts two seconds late: the others
# wait that long in the rendezvous, the stranger on its lookout; and it
# pauses two seconds before its first mesh connection
# (PENNY_TEST_SLOW_MESH), so the other ranks' mesh listeners, which wait
# for it, stay open that long: the stranger finds every one of them,
# however fast the machine builds the rest of the mesh (a quiet fast one
# saw only 2 of the 7 without the pause, a loaded one 5 or 6)
ranks_fn='ranks() {
	local n=$1 port=$2 t=$3 r pids=
	shift 3
	for ((r = n - 1; r >= 0; r--)); do
		( [ $r -lt $((n - 1)) ] || { sleep 2; export LD_PRELOAD=$STOP PENNY_TEST_SLOW_MESH=2; }
		  s=$(date +%s); "$PENNY" allreduce-test --rank $r --nranks $n --root 127.0.0.1:$port \
			--timeout $t --transport tcp -b 1K -e 4K "$@" >out$r 2>err$r
		  echo $? >rc$r; echo $(($(date +%s) - s)) >t$r ) &
		pids="$pids $!"
	done
	wait $pids
}'
port=41260

test_expect_success 'idle strangers on every listener: --np 8 over tcp passes within --timeout' '
	in_ns "strange -n 30 -t 120
		s=\$(date +%s)
		\"\$PENNY\" allreduce-test --np 8 --transport tcp --timeout 10 -b 1K -e 4K >out 2>err
		echo \$? \$((\$(date +%s) - s)) >res
		unstrange" &&
	read -r rc secs <res && cat s.err &&
	test "$(sed -n "s/^stranger: \([0-9]*\) listeners.*/\1/p" s.err)" -ge 2 &&
	test "$rc" -eq 0 && test "$secs" -lt 10 && grep -q "Out of bounds values : 0 OK" out ||
	{ echo "rc $rc after $secs s"; cat err; false; }
'

# The mesh listeners open once every rank has joined and close when the
# mesh is built; the last rank's pause (ranks) keeps all 7 open until the
# stranger has found them.
test_expect_success 'idle strangers: 8 explicit ranks over tcp pass within --timeout' '
	in_ns "$ranks_fn
		strange -n 30 -t 120 -x $port
		ranks 8 $port 20
		unstrange" &&
	cat s.err && test "$(sed -n "s/^stranger: \([0-9]*\) listeners.*/\1/p" s.err)" -ge 7 &&
	for r in 0 1 2 3 4 5 6 7; do
		test "$(cat rc$r)" -eq 0 && test "$(cat t$r)" -lt 20 || { echo "rank $r"; cat err$r; exit 1; }
	done
'

# A forged hello is sent once the listener's challenge came: the last
# rank's pause keeps every listener taking connections until then.
for how in old new; do
	test_expect_success "a stranger with the job cookie claims rank 7 on every listener ($how hello): not joined" '
		p=$((port + 1)) && cookie=$("$S" --cookie-of 127.0.0.1:$p) && test ${#cookie} -eq 32 &&
		if [ $how = old ]; then o=--old; else o=; fi &&
		in_ns "$ranks_fn
			strange -n 2 -t 120 -x $p --forge $cookie $o -r 7 -g 1
			ranks 8 $p 20
			unstrange" &&
		cat s.err &&
		test "$(sed -n "s/.* \([0-9]*\) connections.*/\1/p" s.err)" -ge 7 &&
		{ [ $how = old ] || test "$(sed -n "s/.* \([0-9]*\) spoke$/\1/p" s.err)" -ge 7; } &&
		for r in 0 1 2 3 4 5 6 7; do
			test "$(cat rc$r)" -eq 0 || { echo "rank $r"; cat err$r; exit 1; }
		done
	'
done

test_expect_success 'a rank stopped in the mesh, strangers around: every other rank names it in time' '
	in_ns "$ranks_fn
		strange -n 30 -t 120 -x $((port + 2))
		( sleep 0.5; PENNY_TEST_STOP_MESH=1 LD_PRELOAD=\$STOP exec \"\$PENNY\" allreduce-test --rank 3 \
			--nranks 5 --root 127.0.0.1:$((port + 2)) --timeout 8 --transport tcp -b 1K \
			-e 4K >out3 2>err3 ) & victim=\$!
		for r in 0 1 2 4; do
			( s=\$(date +%s); \"\$PENNY\" allreduce-test --rank \$r --nranks 5 \
				--root 127.0.0.1:$((port + 2)) --timeout 8 --transport tcp -b 1K -e 4K \
				>out\$r 2>err\$r; echo \$? >rc\$r; echo \$((\$(date +%s) - s)) >t\$r ) &
			pids=\"\$pids \$!\"
		done
		wait \$pids
		kill -KILL \$victim; wait \$victim
		unstrange" &&
	for r in 0 1 2 4; do
		echo "rank $r:"; cat err$r
		test "$(cat rc$r)" -ne 0 && test "$(cat t$r)" -le 14 &&
		grep -q "rank 3 " err$r || { echo "rank $r: rc $(cat rc$r) after $(cat t$r) s"; exit 1; }
	done &&
	grep -q "timed out after 8 s waiting for the tcp connection of rank 3 (host" err0 &&
	grep -q "timed out after 8 s waiting for rank 3 (host .*) to answer its tcp connection" err4
'
test_done
