#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The benches' settings (tests/bench/*.sh read their environment): a value
# out of range is one line on stderr and exit 2, before anything is built
# or run, so that a typo on a GPU machine costs no device time.
# cost: 1
. "$(dirname "$0")/../lib.sh"

b=$TOP/tests/bench
# bench SCRIPT LINE VAR=VALUE...: exit 2, stderr exactly LINE
bench() {
	local script=$1 want=$2
	shift 2
	env "$@" bash "$b/$script" "$TRASH/out" >out 2>err
	test $? -eq 2 && test "$(cat err)" = "$want" && test ! -s out ||
		{ echo "$script $*:"; cat out err; return 1; }
}

test_expect_success 'torch-allreduce.sh: AB, AB_SWAP, ROUNDS, PIN and COLLS out of range' '
	bench torch-allreduce.sh "torch-allreduce: AB: '"'"'1'"'"' is not 0 or 2..200" AB=1 &&
	bench torch-allreduce.sh "torch-allreduce: AB: '"'"'201'"'"' is not 0 or 2..200" AB=201 &&
	bench torch-allreduce.sh "torch-allreduce: AB: '"'"'x'"'"' is not 0 or 2..200" AB=x &&
	bench torch-allreduce.sh "torch-allreduce: AB_SWAP: '"'"'2'"'"' is not 0 or 1" AB=4 AB_SWAP=2 &&
	bench torch-allreduce.sh "torch-allreduce: AB_CONTROL: '"'"'y'"'"' is not 0 or 1" AB=4 AB_CONTROL=y &&
	bench torch-allreduce.sh "torch-allreduce: AB_CONTROL: applies to AB=R runs only (AB is 0)" AB_CONTROL=1 &&
	bench torch-allreduce.sh "torch-allreduce: ROUNDS: '"'"'0'"'"' is not 1..50" ROUNDS=0 &&
	bench torch-allreduce.sh "torch-allreduce: PIN: '"'"'yes'"'"' is not 0 or 1" PIN=yes &&
	bench torch-allreduce.sh "torch-allreduce: COLLS: '"'"'alltoall'"'"' is not all_reduce, reduce_scatter or all_gather" COLLS=alltoall
'
test_expect_success 'torch-allreduce.sh: GRAPH, ITERS, BLOCKS, MAXB, ALL out of range; AB with others' '
	bench torch-allreduce.sh "torch-allreduce: AB_SWAP: applies to AB=R runs only (AB is 0)" AB_SWAP=1 &&
	bench torch-allreduce.sh "torch-allreduce: ROUNDS, ALL and BLOCKS: not with AB=R (its R rounds of one timed block each side)" AB=4 ROUNDS=3 &&
	bench torch-allreduce.sh "torch-allreduce: ROUNDS, ALL and BLOCKS: not with AB=R (its R rounds of one timed block each side)" AB=4 BLOCKS=7 &&
	bench torch-allreduce.sh "torch-allreduce: ALL: '"'"'3'"'"' is not 0, 1 or 2" ALL=3 &&
	bench torch-allreduce.sh "torch-allreduce: GRAPH: '"'"'-5'"'"' is not 0..9999 (calls per captured graph)" GRAPH=-5 &&
	bench torch-allreduce.sh "torch-allreduce: ITERS: '"'"'0'"'"' is not a count 1..9999999" ITERS=0 &&
	bench torch-allreduce.sh "torch-allreduce: BLOCKS: '"'"'4'"'"' is not 5..100" BLOCKS=4 &&
	bench torch-allreduce.sh "torch-allreduce: MAXB: '"'"'512'"'"' is not a byte count 1024..16G" MAXB=512 &&
	bench torch-allreduce.sh "torch-allreduce: MAXB: '"'"'1M'"'"' is not a byte count 1024..16G" MAXB=1M
'
# nt: enough of an nccl-tests checkout for the script to read its settings
nt() {
	env "$@" bash "$b/nccl-tests.sh" nt >out 2>err
	test $? -eq 2 && test ! -s out
}
test_expect_success 'nccl-tests.sh: GROUPED, COLLS, ITERS out of range; no checkout' '
	mkdir -p nt/src && touch nt/src/common.cu nt/src/Makefile &&
	nt GROUPED=2 && test "$(cat err)" = "nccl-tests: GROUPED: '"'"'2'"'"' is not 0 or 1" &&
	nt ITERS=0 && test "$(cat err)" = "nccl-tests: ITERS: '"'"'0'"'"' is not a count 1..9999999" &&
	nt COLLS=sendrecv &&
	test "$(cat err)" = "nccl-tests: COLLS: '"'"'sendrecv'"'"' is not all_reduce, reduce_scatter or all_gather" &&
	nt GRAPHS=x && test "$(cat err)" = "nccl-tests: GRAPHS: '"'"'x'"'"' is not a count of graph launches (0..9999)" &&
	bash "$b/nccl-tests.sh" >out 2>err; test $? -eq 2 &&
	test "$(cat err)" = "nccl-tests: usage: tests/bench/nccl-tests.sh NCCL_TESTS_DIR [OUTDIR]" &&
	bash "$b/nccl-tests.sh" "$TRASH/none" >out 2>err; test $? -eq 2 &&
	test "$(cat err)" = "nccl-tests: no directory '"'"'$TRASH/none'"'"'" &&
	mkdir -p empty && bash "$b/nccl-tests.sh" empty >out 2>err; test $? -eq 2 &&
	test "$(cat err)" = "nccl-tests: '"'"'empty'"'"' is not an nccl-tests checkout"
'
test_expect_success 'host-allreduce.sh: MPI, FACTOR, MINB/MAXB out of range' '
	env MPI=2 bash "$b/host-allreduce.sh" >out 2>err; test $? -eq 2 && test "$(cat err)" = "MPI is 0 or 1" &&
	env FACTOR=1 bash "$b/host-allreduce.sh" >out 2>err; test $? -eq 2 &&
	test "$(cat err)" = "FACTOR is an integer from 2" &&
	env MINB=9 MAXB=8 bash "$b/host-allreduce.sh" >out 2>err; test $? -eq 2 &&
	test "$(cat err)" = "MINB and MAXB are byte counts in digits, MINB <= MAXB"
'
test_done
