#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The other collectives across nodes (penny coll-test) through the
# GPU-driven path (xnode_coll, src/gpu/gpucoll.c) on the test plugin, whose
# "kernel" runs the boxes' protocol on the host: emulated nodes
# (PENNY_NODE_ID) of one, two and three ranks, 2 nodes (3 and more:
# t0606), the proxy over tcp and over shm, every collective at odd counts
# (one chunk and chunks that wrap their slots, LL lines and not), in place
# and not, roots on either node, 0 wrong; which collectives run GPU-driven
# and which stage through the host (the PLUGIN debug line), -G accepted on
# the first and refused in one line on the second, PENNY_XNODE=0, and a
# peer killed in the middle.  -n 0 where no timing is asked about: the
# exact check's calls.
# cost: 32
# spins: up to 6 ranks and their proxies busy-wait (tests/run.sh keeps it apart from the lab's guests)
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/helpers/xcolljob.sh"

for tp in tcp shm; do
	test_expect_success "2 nodes x 1, $tp proxy: every collective GPU-driven, every type x op, 0 wrong" '
		export PENNY_XNODE_TRANSPORT='$tp' &&
		for c in $colls; do run_all 2 1 $c GPU || exit 1; done
	'
	test_expect_success "2 nodes x 2, $tp proxy: every collective GPU-driven, every type x op, 0 wrong" '
		export PENNY_XNODE_TRANSPORT='$tp' &&
		for c in $colls; do run_all 2 2 $c GPU || exit 1; done
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
	! PENNY_PLUGIN_PATH=$fakes/xcoll2 job 3 1 alltoall -G 2 -b 1K -e 1K && said &&
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
	# 100 MiB: enough for a rank'"'"'s 64 MiB fill and check buffer (counted since
	# 5457ab0), not for the 128 MiB staged across nodes
	mkdir -p mroot/proc && printf "MemTotal: 1048576 kB\nMemAvailable: 102400 kB\n" >mroot/proc/meminfo &&
	export PENNY_XNODE=0 &&
	! job 2 1 alltoall --sysfs-root "$PWD/mroot" -b 64M -e 64M -n 1 -w 0 && said &&
	grep -q "^penny coll-test: rank 0: the GPU data staged through the host across nodes needs 1 rank x 128 MiB of host memory, 100 MiB available (PENNY_MEM_CHECK=0 skips this check)$" left &&
	PENNY_MEM_CHECK=0 job 2 1 alltoall --sysfs-root "$PWD/mroot" -b 64M -e 64M -n 1 -w 0 && exact 1
'
# rank 1 killed once its first GPU-driven call ran (its debug line), in
# a long timed run: rank 0 names it, well within --timeout
test_expect_success 'a peer killed in the middle: the other rank names it, within the timeout' '
	killed_mid 2 allgather 1
'
test_done
