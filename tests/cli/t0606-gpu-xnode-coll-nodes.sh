#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The other collectives across 3 and 4 nodes (penny coll-test) through the
# GPU-driven path (xnode_coll) on the test plugin, whose "kernel" runs the
# boxes' protocol on the host: reduce, reduce_scatter, alltoall and
# sendrecv send outbox tickets to one node each (the proxy honours a
# ticket's node mask and counts chunks per pair of nodes; the LL flags
# follow the calls' epoch, not the tickets).  Emulated nodes of one and two
# ranks, the proxy over tcp (one socket a peer and three) and over shm,
# every collective x every type x op at odd counts (one chunk and chunks
# that wrap their slots, LL lines and not), in place and not, roots on
# every node, 0 wrong and GPU-driven (the PLUGIN debug line); -G; a plugin
# without PENNY_CAP_XCOLL_NODES host-staged as before; a peer killed in
# the middle of an alltoall across 3 nodes.  On a GPU machine the same
# with the cuda plugin's kernels (xcolljob.sh):
#   XBACKEND=cuda XGPUS=2 tests/run.sh tests/cli/t0606-gpu-xnode-coll-nodes.sh
# cost: 105
# spins: up to 6 ranks and their proxies busy-wait (tests/run.sh keeps it apart from the lab's guests)
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/helpers/xcolljob.sh"

for tp in tcp shm; do
	for shape in "3 1" "4 1" "3 2"; do
		test_expect_success "${shape% *} nodes x ${shape#* }, $tp proxy: every collective GPU-driven, every type x op, 0 wrong" '
			export PENNY_XNODE_TRANSPORT='$tp' &&
			for c in $colls; do run_all '"$shape"' $c GPU || exit 1; done
		'
	done
done

# three sockets a peer: a ticket to one node goes on the socket of its
# count to that node, which every sending thread keeps alike
test_expect_success '4 x 1 and 3 x 2, tcp with 3 sockets a peer: the kinds that send to one node, 0 wrong' '
	export PENNY_XNODE_TRANSPORT=tcp PENNY_XNODE_SOCKETS=3 &&
	for c in reducescatter alltoall reduce sendrecv; do
		job 4 1 $c -d int32 -o sum -r 2 -b 4 -e 64K -f 37 -n 0 && exact 3 && path $c GPU-driven &&
		job 3 2 $c -d half -o min -r 3 -b 4 -e 64K -f 37 -n 0 && exact 3 &&
		path $c GPU-driven || { echo "$c"; exit 1; }
	done
'
test_expect_success '4 x 1, roots 0..3: reduce to each node and broadcast from each, 0 wrong' '
	for r in 0 1 2 3; do
		job 4 1 reduce -d float -o avg -r $r -b 4 -e 64K -f 37 -n 0 && exact 3 &&
		job 4 1 broadcast -d int8 -r $r -b 1 -e 64K -f 37 -n 0 && exact 4 ||
			{ echo "root $r"; exit 1; }
	done
'
test_expect_success '-G across 3 and 4 nodes: graphs of the calls that send to one node, 0 wrong' '
	job 3 1 alltoall -G 2 -b 1K -e 16K -f 4 -n 3 -w 1 && exact 3 && path alltoall GPU-driven &&
	grep -q "across 3 nodes GPU-driven" out &&
	job 4 1 reducescatter -G 2 -b 1K -e 16K -f 4 -n 3 -w 1 && exact 3 &&
	path reducescatter GPU-driven &&
	job 3 2 sendrecv -G 2 -b 1K -e 16K -f 4 -n 3 -w 1 && exact 3 && path sendrecv GPU-driven
'
xfake || test_skip "the test plugin's cases" "XBACKEND=$xb"
xfake && test_expect_success 'a plugin without PENNY_CAP_XCOLL_NODES: the kinds that send to one node host-staged across 3 nodes, 0 wrong' '
	export PENNY_PLUGIN_PATH=$fakes/xcoll2 &&
	for c in reducescatter alltoall reduce sendrecv; do
		job 3 1 $c -d int32 -o max -r 2 -b 4 -e 64K -f 37 -n 0 && exact 3 &&
		grep -q "$c across 3 nodes of 1 rank: host-staged (it sends each node.s blocks to one node: the plugin.s xnode_coll takes 2 nodes for that (no PENNY_CAP_XCOLL_NODES))$" err0 ||
			exit 1
	done &&
	job 3 1 allgather -b 4 -e 4K -n 0 && exact 1 && path allgather GPU-driven &&
	job 2 1 alltoall -b 4 -e 4K -n 0 && exact 1 && path alltoall GPU-driven
'
# 3 nodes, an alltoall (tickets to one node each, over tcp): rank 2 killed
# once its first GPU-driven call ran, in a long timed run; ranks 0 and 1
# fail, rank 0 naming it, well within --timeout
test_expect_success 'a peer killed in the middle of an alltoall across 3 nodes: the others name it, within the timeout' '
	PENNY_XNODE_TRANSPORT=tcp killed_mid 3 alltoall 2
'
test_done
