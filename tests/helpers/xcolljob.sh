# SPDX-License-Identifier: MIT
# Jobs of penny coll-test on emulated nodes (PENNY_NODE_ID) with the test
# plugin (fake) across nodes, and what to check of them, for the tests of
# the other collectives through the cross-node proxy (t0605, t0606).
#   . tests/helpers/xcolljob.sh; job NODES PER COLL ARGS...; exact ROWS
# Needs tests/lib.sh (free_port) and $BUILD, $PENNY.  On a GPU machine
# XBACKEND=cuda runs the same jobs on the cuda plugin (default fake), and
# XGPUS=G spreads the emulated nodes over G GPUs (--gpus: node n's one
# rank on GPU n % G, or its P ranks on GPUs 0..P-1); the cases that need
# a test plugin of their own skip then (xfake).

fakes=$BUILD/tests/plugins
xb=${XBACKEND:-fake}
# the test plugin's own cases: only with it
xfake() { [ "$xb" = fake ]; }
# --gpus for a rank of node $1 of $2 ranks (XGPUS)
xgpus() {
	[ -n "${XGPUS:-}" ] || return 0
	if [ "$2" -eq 1 ]; then echo "--gpus $(($1 % XGPUS))"; else echo "--gpus $(seq -s, 0 $(($2 - 1)))"; fi
}
export PENNY_PLUGIN_PATH=$fakes PENNY_XNODE_CHUNK=4096
one_line() { test "$(wc -l <"$1")" -eq 1 || { cat "$1"; return 1; }; }
# rank 0's stderr without the debug lines and the shared-GPU warning: one line
said() { grep -v -e " penny [A-Z]* " -e "share one GPU" err0 >left; one_line left; }
colls="allgather reducescatter alltoall broadcast reduce sendrecv"

# nodes N x per P ranks (PENNY_NODE_ID: rank r on node r / P, or with
# SPREAD=1 on node r % N), coll-test COLL ARGS; rank 0's output in out,
# every rank's stderr in errR (PLUGIN debug lines on)
job() {
	local nodes=$1 per=$2 port r pids= rc node
	shift 2
	port=$(free_port) || return 1
	rm -f err*
	for ((r = nodes * per - 1; r >= 0; r--)); do
		node=$((${SPREAD:-0} ? r % nodes : r / per))
		if [ $r -eq 0 ]; then
			PENNY_NODE_ID=n$node "$PENNY" coll-test "$@" --rank 0 --nranks $((nodes * per)) \
				--root 127.0.0.1:$port --timeout 30 --backend $xb $(xgpus $node $per) \
				--debug=plugin >out 2>err0
			rc=$?
		else
			PENNY_NODE_ID=n$node "$PENNY" coll-test "$@" --rank $r \
				--nranks $((nodes * per)) --root 127.0.0.1:$port --timeout 30 \
				--backend $xb $(xgpus $node $per) --debug=plugin >/dev/null 2>err$r &
			pids="$pids $!"
		fi
	done
	for p in $pids; do wait $p || rc=1; done
	return $rc
}

# every section checked, none wrong: the #wrong columns (out of place and
# in place) of every row 0, at least $2 rows
exact() {
	local n=$(grep -c "Out of bounds values :" out)
	test "$n" -ge 1 && test "$(grep -c "Out of bounds values : 0 OK" out)" -eq "$n" &&
	awk -v want="$1" '$1 ~ /^[0-9]+$/ && NF >= 14 { rows++; bad += $9 + $13 }
		END { exit !(rows >= want && bad == 0) }' out || { cat out err0; return 1; }
}

# the path of COLL on every rank: GPU-driven or host-staged
path() {
	local r
	for r in err*; do
		grep -q "PLUGIN $xb plugin: $1 across .*: $2" $r || { echo "$r: not $2"; cat $r; return 1; }
	done
}

# N x P COLL: GPU (every type x op) or host (the engine's collectives,
# checked elsewhere: one type), the root on the last node.  The 4 sizes
# give each type (x op) at least 3 rows: sizes that round to whole
# elements per rank alike run once (int64 over 6 ranks: 1 and 37 are 0)
run_all() {
	local nodes=$1 per=$2 c=$3 want=$4 root=$(($1 * $2 - 1)) rows=30 types="-d all -o all"
	case $c in reducescatter | reduce) rows=150;; esac
	[ $want = GPU ] || { rows=3 types="-d int32 -o max"; }
	job $nodes $per $c $types -r $root -b 1 -e 64K -f 37 -n 0 && exact $rows &&
	case $want in
	GPU) path $c GPU-driven && grep -q "across $nodes nodes GPU-driven" out;;
	*) path $c host-staged && ! grep -q "GPU-driven" out &&
		grep -q "^# fake: host-staged over $nodes nodes (the engine.s $c over every rank)" out;;
	esac ||
		{ echo "$nodes x $per $c"; return 1; }
}

# N nodes of one rank, a long timed run of COLL (1 MiB): rank VICTIM is
# killed once its first GPU-driven call ran (its debug line); every other
# rank must fail (not time out), within 14 s of the start (--timeout 6),
# rank 0 naming the victim.  Over the transport PENNY_XNODE_TRANSPORT says.
killed_mid() {
	local nodes=$1 c=$2 v=$3 port r s rc=0 rr p pv pids=
	port=$(free_port) || return 1
	rm -f err*
	s=$(date +%s)
	# the victim without timeout(1): the kill reaches penny itself
	for ((r = nodes - 1; r >= 0; r--)); do
		if [ $r -eq $v ]; then set -- "$PENNY"; else set -- timeout 60 "$PENNY"; fi
		PENNY_NODE_ID=n$r "$@" coll-test $c --rank $r --nranks $nodes \
			--root 127.0.0.1:$port --timeout 6 --backend $xb $(xgpus $r 1) -b 1M -e 1M \
			-n 100000 -w 0 --debug=plugin >/dev/null 2>err$r &
		if [ $r -eq $v ]; then pv=$!; else pids="$pids $!"; fi
	done
	for ((r = 0; r < 200; r++)); do
		grep -q "$c across $nodes nodes of 1 rank: GPU-driven" err$v && break
		sleep 0.1
	done
	sleep 1
	kill -KILL $pv
	for p in $pids; do
		wait $p
		rr=$?
		{ test $rr -ne 0 && test $rr -ne 124; } || rc=1
	done
	wait $pv 2>/dev/null
	test $rc -eq 0 && test $(($(date +%s) - s)) -le 14 && said &&
		grep -Eq "rank $v \(host [^)]*(, pid [0-9]*)?\) (closed|is gone|died)" left ||
		{ echo "rc $rc, $(($(date +%s) - s)) s"; cat err*; return 1; }
}
