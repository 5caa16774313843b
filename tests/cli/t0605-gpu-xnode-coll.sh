#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The other collectives across nodes (penny coll-test) through the
# GPU-driven path (xnode_coll, src/gpu/gpucoll.c) on the test plugin, whose
# "kernel" runs the boxes' protocol on the host: emulated nodes
# (PENNY_NODE_ID) of one, two and three ranks, 2 and 3 nodes, the proxy over
# tcp and over shm, every collective at odd counts (one chunk and chunks
# that wrap their slots, LL lines and not), in place and not, roots on
# either node, 0 wrong; which collectives run GPU-driven and which stage
# through the host (the PLUGIN debug line), -G accepted on the first and
# refused in one line on the second, PENNY_XNODE=0, and a peer killed in
# the middle.  -n 0 where no timing is asked about: the exact check's calls.
# cost: 40
. "$(dirname "$0")/../lib.sh"

fakes=$BUILD/tests/plugins
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
				--root 127.0.0.1:$port --timeout 30 --backend fake --debug=plugin >out 2>err0
			rc=$?
		else
			PENNY_NODE_ID=n$node "$PENNY" coll-test "$@" --rank $r \
				--nranks $((nodes * per)) --root 127.0.0.1:$port --timeout 30 \
				--backend fake --debug=plugin >/dev/null 2>err$r &
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
		grep -q "PLUGIN fake plugin: $1 across .*: $2" $r || { echo "$r: not $2"; cat $r; return 1; }
	done
}

# N x P COLL: GPU (every type x op) or host (the engine's collectives,
# checked elsewhere: one type), the root on the last node
run_all() {
	local nodes=$1 per=$2 c=$3 want=$4 root=$(($1 * $2 - 1)) rows=40 types="-d all -o all"
	case $c in reducescatter | reduce) rows=200;; esac
	[ $want = GPU ] || { rows=3 types="-d int32 -o max"; }
	job $nodes $per $c $types -r $root -b 1 -e 64K -f 37 -n 0 && exact $rows &&
	case $want in
	GPU) path $c GPU-driven && grep -q "across $nodes nodes GPU-driven" out;;
	*) path $c host-staged && ! grep -q "GPU-driven" out &&
		grep -q "^# fake: host-staged over $nodes nodes (the engine.s $c over every rank)" out;;
	esac ||
		{ echo "$nodes x $per $c"; return 1; }
}

for tp in tcp shm; do
	test_expect_success "2 nodes x 1, $tp proxy: every collective GPU-driven, every type x op, 0 wrong" '
		export PENNY_XNODE_TRANSPORT='$tp' &&
		for c in $colls; do run_all 2 1 $c GPU || exit 1; done
	'
	test_expect_success "2 nodes x 2, $tp proxy: every collective GPU-driven, every type x op, 0 wrong" '
		export PENNY_XNODE_TRANSPORT='$tp' &&
		for c in $colls; do run_all 2 2 $c GPU || exit 1; done
	'
	test_expect_success "3 nodes x 1, $tp proxy: allgather, broadcast GPU-driven, the others host-staged" '
		export PENNY_XNODE_TRANSPORT='$tp' &&
		for c in allgather broadcast; do run_all 3 1 $c GPU || exit 1; done &&
		for c in reducescatter alltoall reduce sendrecv; do
			run_all 3 1 $c host &&
			grep -q "$c across 3 nodes of 1 rank: host-staged (it sends each node.s blocks to one node: xnode_coll takes 2 nodes for that)$" err0 ||
				exit 1
		done
	'
done

test_expect_success '2 x 2, roots 1 and 2 (3: above): the reduce partial off the root node in scratch, recv written on the root only' '
	for r in 1 2; do
		job 2 2 reduce -d float -o avg -r $r -b 4 -e 64K -f 37 -n 0 && exact 3 &&
		job 2 2 broadcast -d int8 -r $r -b 1 -e 64K -f 37 -n 0 && exact 4 || { echo "root $r"; exit 1; }
	done
'
test_expect_success '2 x 3, shm: the collectives that cross through a rail of their own, 0 wrong' '
	for c in reducescatter alltoall sendrecv; do
		PENNY_XNODE_TRANSPORT=shm job 2 3 $c -d float -o avg -b 4 -e 64K -f 37 -n 0 &&
		exact 3 && path $c GPU-driven || exit 1
	done
'
test_expect_success 'ranks numbered across the nodes (rank r on node r % 2): allgather, reduce_scatter, alltoall, sendrecv host-staged, broadcast and reduce GPU-driven' '
	for c in allgather reducescatter alltoall sendrecv; do
		SPREAD=1 job 2 2 $c -d int32 -b 4 -e 64K -f 37 -n 0 && exact 3 &&
		grep -q "$c across 2 nodes of 2 ranks: host-staged (the ranks are not numbered node by node" err0 ||
			exit 1
	done &&
	for c in broadcast reduce; do
		SPREAD=1 job 2 2 $c -d int64 -o max -r 1 -b 8 -e 64K -f 37 -n 0 && exact 3 &&
		path $c GPU-driven || exit 1
	done
'
test_expect_success '-G: graphs of the GPU-driven calls timed, 0 wrong' '
	job 2 2 broadcast -G 2 -r 3 -b 1K -e 64K -f 8 -n 4 -w 1 && exact 3 && path broadcast GPU-driven &&
	job 2 1 alltoall -G 3 -b 1K -e 1K -n 3 -w 1 && exact 1 &&
	for c in reducescatter alltoall sendrecv; do
		job 2 2 $c -G 2 -b 1K -e 16K -f 4 -n 3 -w 1 && exact 3 && path $c GPU-driven || exit 1
	done &&
	grep -q "fake: across 2 nodes GPU-driven (.*, LL lines up to 2048 B)" out
'
test_expect_success '-G where the collective stages through the host: one line, exit 2' '
	! job 3 1 alltoall -G 2 -b 1K -e 1K && said &&
	grep -q "^penny coll-test: -G: CUDA graphs cannot capture the fake alltoall across 3 nodes (hierarchical: its steps between nodes run on the host)$" left &&
	! SPREAD=1 job 2 2 sendrecv -G 2 -b 1K -e 1K && said &&
	grep -q "CUDA graphs cannot capture the fake sendrecv across 2 nodes" left
'
test_expect_success 'PENNY_XNODE=0 and a plugin without xnode_*: host-staged, 0 wrong, -G refused' '
	PENNY_XNODE=0 job 2 1 allgather -b 1K -e 4K -n 0 && exact 1 &&
	grep -q "allgather across 2 nodes of 1 rank: host-staged (no GPU-driven path" err0 &&
	! grep -q "GPU-driven" out &&
	! PENNY_XNODE=0 job 2 1 broadcast -G 2 -b 1K -e 1K && said &&
	grep -q "CUDA graphs cannot capture the fake broadcast across 2 nodes" left &&
	PENNY_PLUGIN_PATH=$fakes/noxnode job 2 1 reduce -b 1K -e 4K -n 0 && exact 1 &&
	path reduce host-staged
'
# the host-staged path's slice of host memory against MemAvailable (a
# meminfo through --sysfs-root): refused before the pages are touched
test_expect_success 'host-staged: more host memory than the host has is one line, a failure; PENNY_MEM_CHECK=0 runs it' '
	mkdir -p mroot/proc && printf "MemTotal: 1048576 kB\nMemAvailable: 65536 kB\n" >mroot/proc/meminfo &&
	export PENNY_XNODE=0 &&
	! job 2 1 alltoall --sysfs-root "$PWD/mroot" -b 64M -e 64M -n 1 -w 0 && said &&
	grep -q "^penny coll-test: rank 0: the GPU data staged through the host across nodes needs 1 rank x 128 MiB of host memory, 64 MiB available (PENNY_MEM_CHECK=0 skips this check)$" left &&
	PENNY_MEM_CHECK=0 job 2 1 alltoall --sysfs-root "$PWD/mroot" -b 64M -e 64M -n 1 -w 0 && exact 1
'
# rank 1 killed once its first GPU-driven call ran (its debug line), in
# a long timed run: rank 0 names it, well within --timeout
test_expect_success 'a peer killed in the middle: the other rank names it, within the timeout' '
	port=$(free_port) || exit 1
	PENNY_NODE_ID=n1 "$PENNY" coll-test allgather --rank 1 --nranks 2 --root 127.0.0.1:$port \
		--timeout 6 --backend fake -b 1M -e 1M -n 100000 -w 0 --debug=plugin >/dev/null 2>err1 &
	vp=$!
	s=$(date +%s)
	PENNY_NODE_ID=n0 timeout 60 "$PENNY" coll-test allgather --rank 0 --nranks 2 \
		--root 127.0.0.1:$port --timeout 6 --backend fake -b 1M -e 1M -n 100000 -w 0 \
		>out 2>err0 &
	p0=$!
	for ((i = 0; i < 200; i++)); do
		grep -q "allgather across 2 nodes of 1 rank: GPU-driven" err1 && break
		sleep 0.1
	done
	sleep 1
	kill -KILL $vp
	wait $p0
	rc=$?
	wait $vp 2>/dev/null
	test $rc -ne 0 && test $rc -ne 124 && test $(($(date +%s) - s)) -le 14 && said &&
	grep -Eq "rank 1 \(host [^)]*\) (closed|is gone|died)|rank 1 \(host [^)]*, pid [0-9]*\) (closed|is gone|died)" left ||
		{ echo "rc $rc"; cat err0; exit 1; }
'
test_done
