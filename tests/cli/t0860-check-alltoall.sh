#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# penny check's alltoall on one host: emulated nodes (PENNY_NODE_ID) on the
# tree of checkjob.sh (GPU0 with mlx5_0, GPU1 with mlx5_3), over tcp.  Two
# nodes of two ranks: shift 0 stays on each rail, shift 1 crosses the spine,
# and the rows name the node pair, the ranks, their NICs and the link; a
# third node whose rails are swapped (-d) meets the others over the spine;
# an expectation no pair meets FAILs every pair, naming the other node; a
# node alone SKIPs; a stopped rank is named within --timeout.  (A slowed
# link is the lab's: tests/lab/t0190-lab-alltoall.sh.)
# cost: 22
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/helpers/checkjob.sh"

rail_tree n1
export PENNY_IB_DISABLE=1
# ranks that spin on two CPUs shared with other tests wait for each other's
# time slices: their exchanges differ by orders of magnitude, so the PASS
# cases judge against a floor, not the job's median (the lab test and the
# unit tests judge by the median)
printf 'alltoall.size = 65536\nalltoall.pair-margin = 1\nalltoall.min-gbps = 0.000001\n' >ok.conf
printf 'alltoall.size = 65536\nalltoall.min-gbps = 100000\n' >miss.conf

# rows CHECK: "node target verdict measured expected | source | detail" of out.json
rows() {
	python3 -c 'import json,sys
for r in json.load(open("out.json"))["results"]:
    if r["check"] == sys.argv[1]:
        print(r["node"], r["target"], r["verdict"], r["measured"], r["expected"], "|",
              r["source"], "|", r["detail"])' "${1:-alltoall}"
}

test_expect_success 'a node alone: alltoall SKIPs, saying why (every check skipped: exit 2)' '
	PENNY_NODE_ID=n0 test_exit 2 penny check --sysfs-root n1 --only alltoall --json >out.json &&
	rows >r && cat r && test "$(wc -l <r)" -eq 1 &&
	grep -q "^n0 job SKIP None None | .*needs at least 2 nodes under a launcher" r
'

test_expect_success 'alltoall runs when asked for: --only or --require, not by default' '
	job4 --sysfs-root n1 --timeout 20 --skip nic-bw,gpu-copy,allreduce,rails,nccl-path,counters \
		--config ok.conf && test "$rc" = 0000 &&
	rows >r && test ! -s r &&
	job4 --sysfs-root n1 --timeout 20 --skip nic-bw,gpu-copy,allreduce,rails,nccl-path,counters \
		--require alltoall --config ok.conf && test "$rc" = 0000 &&
	rows >r && cat r && test "$(wc -l <r)" -eq 4
'

test_expect_success '2 nodes x 2 ranks: every row PASSes, the pairs and their links named' '
	job4 --sysfs-root n1 --timeout 20 --only alltoall --config ok.conf && test "$rc" = 0000 &&
	rows >r && cat r && test "$(wc -l <r)" -eq 4 &&
	grep -q "^job job PASS [0-9.e+-]* None | none: measured .*| 4 ranks on 2 nodes, 65536 B per rank, .* 0 wrong values$" r &&
	for n in "n0 n0-n1: rank [01] (mlx5_[03]/1) - rank [23]" "n1 n1-n0: rank [23] (mlx5_[03]/1) - rank [01]"; do
		grep -q "^${n%% *} pairs PASS [0-9.e+-]* 1e-06 | config: alltoall.min-gbps | slowest ${n#* } (mlx5_[03]/1) over .*, tcp, blocks .* Gb/s; 0 of 4 pairs below$" r || exit 1
	done &&
	grep -q "^job slowest-pair PASS .* | slowest n[01]-n[01]: .*; 0 of 4 pairs below$" r &&
	grep -E "^n0 pairs .*(rank 0 \(mlx5_0/1\) - rank 2 \(mlx5_0/1\) over rail 0 \(leaf\)|rank 1 \(mlx5_3/1\) - rank 3 \(mlx5_3/1\) over rail 1 \(leaf\)|rank 0 \(mlx5_0/1\) - rank 3 \(mlx5_3/1\) over spine \(rail 0 to rail 1\)|rank 1 \(mlx5_3/1\) - rank 2 \(mlx5_0/1\) over spine \(rail 1 to rail 0\))," r
'

test_expect_success 'an expectation no pair meets: every pair FAILs, the other node named' '
	job4 --sysfs-root n1 --timeout 20 --only alltoall --config miss.conf && test "$rc" = 1111 &&
	rows >r && cat r &&
	grep -q "^n0 pairs FAIL [0-9.e+-]* 100000 | config: alltoall.min-gbps | slowest n0-n1: .*; 4 of 4 pairs below: with n1$" r &&
	grep -q "^n1 pairs FAIL [0-9.e+-]* 100000 | config: alltoall.min-gbps | slowest n1-n0: .*; 4 of 4 pairs below: with n0$" r &&
	grep -q "^job slowest-pair FAIL [0-9.e+-]* 100000 | config: alltoall.min-gbps | slowest n[01]-n[01]: .*; 4 of 4 pairs below$" r &&
	grep -q "^job job PASS" r
'

# job3 ARGS: ranks 0..2 on nodes n0 n1 n2, one each, node n2 with its NICs
# in the other order (-d mlx5_3,mlx5_0: its GPU0's mlx5_0 is on rail 1);
# rank 0's JSON in out.json, stderr in err0..err2, exit codes in rc
job3() {
	local port r pids=()
	port=$(free_port) || return 1
	for r in 2 1 0; do
		PENNY_NODE_ID=n$r "$PENNY" check --rank $r --nranks 3 --root 127.0.0.1:$port \
			--sysfs-root n1 $([ $r = 2 ] && echo "-d mlx5_3,mlx5_0") "$@" --json \
			>out$r.json 2>err$r &
		pids[$r]=$!
	done
	rc=
	for r in 0 1 2; do wait ${pids[$r]}; rc="$rc$?"; done
	cp out0.json out.json
}

test_expect_success '3 nodes, one with its rails swapped: its pairs cross the spine, named so' '
	job3 --timeout 20 --only alltoall --config ok.conf; echo "rc=$rc"; test "$rc" = 000 &&
	cat err0; rows >r && cat r && test "$(wc -l <r)" -eq 5 &&
	grep -q "^n2 pairs PASS .* | slowest n2-n[01]: rank 2 (mlx5_0/1) - rank [01] (mlx5_0/1) over spine (rail 1 to rail 0), tcp, .*; 0 of 2 pairs below$" r &&
	grep -q "^n[01] pairs PASS .* over \(rail 0 (leaf)\|spine (rail 0 to rail 1)\), tcp" r &&
	grep -q "^job slowest-pair PASS .* | slowest n[0-2]-n[0-2]: .*; 0 of 3 pairs below$" r
'

# The exchanges must outlast the 2 s before the stop: a fast machine ended
# 10 iterations of 32 MiB before it (kill: no such process).
test_expect_success 'a rank stopped during the exchanges is named within --timeout' '
	printf "alltoall.size = 33554432\nalltoall.iters = 10000\n" >big.conf &&
	port=$(free_port) && t0=$(date +%s) &&
	for r in 2 1 0; do
		PENNY_NODE_ID=n$r "$PENNY" check --rank $r --nranks 3 --root 127.0.0.1:$port \
			--timeout 3 --only alltoall --config big.conf >/dev/null 2>err$r &
		eval pid$r=$!
	done &&
	sleep 2 && kill -STOP $pid2 &&
	{ wait $pid0; rc0=$?; wait $pid1; rc1=$?; } &&
	took=$(($(date +%s) - t0)) && kill -CONT $pid2 && { wait $pid2 || :; } &&
	echo "rc $rc0 $rc1 took $took" && cat err0 err1 &&
	test "$rc0 $rc1" = "2 2" && test $took -le 20 &&
	grep -q "rank 2 (host [^,]*, pid $pid2)" err0 && grep -q "rank 2 (host [^,]*, pid $pid2)" err1
'

test_done
