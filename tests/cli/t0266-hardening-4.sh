#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Hardening, round 4: completions that offered what the command refuses, and
# what a careless user found, each refused with one line and the right exit.
. "$(dirname "$0")/../lib.sh"

# complete WORD...: what the bash completion offers for the last word
complete_words() {
	PATH=$(dirname "$PENNY"):$PATH bash -c '
		. "$1/completions/penny.bash"; shift
		COMP_WORDS=(penny "$@"); COMP_CWORD=$#; _penny; echo "${COMPREPLY[*]}"' - "$TOP" "$@"
}

test_expect_success 'bw --transport: completion and --help offer tcp and verbs, what bw takes' '
	test "$(complete_words bw --transport "")" = "tcp verbs" &&
	test "$(complete_words allreduce-test --transport "")" = "shm tcp verbs" &&
	penny bw --help >help && grep -q "^      --transport NAME  *verbs (default) or tcp" help &&
	! grep -q "shm" help &&
	one_line_error 2 bw --transport shm --loopback lo &&
	grep -q "\-\-transport must be one of: tcp verbs; got .shm." err &&
	penny bw --transport tcp --loopback lo -n 5 >out && grep -q "TCP BW Test" out
'
test_expect_success 'coll-test --backend: completion offers no nvshmem, which has no other collectives' '
	test "$(complete_words coll-test --backend "")" = "host cuda nccl" &&
	test "$(complete_words allreduce-test --backend "")" = "host cuda nccl nvshmem" &&
	penny coll-test --help | grep -q "^      --backend NAME  *host (the engine, default) or a GPU plugin: cuda, nccl (" &&
	penny coll-test allgather --np 2 -b 8 -e 8 -n 1 -w 0 --backend host >out
'
test_expect_success 'PENNY_NODE_ID with a control or non-ASCII byte: refused at once, not a job that times out' '
	for id in "$(printf "a\tb")" "$(printf "a\nb")" "$(printf "n\303\251")"; do
		PENNY_NODE_ID=$id within 10 one_line_error 2 allreduce-test --np 2 -b 8 -e 8 -n 1 -w 0 ||
			exit 1
		grep -q "^penny allreduce-test: PENNY_NODE_ID=.*has a byte that is not printable ASCII" err ||
			{ cat err; exit 1; }
	done &&
	PENNY_NODE_ID="rack 1/node-07" penny allreduce-test --np 2 -b 8 -e 8 -n 1 -w 0 >out
'
test_expect_success 'bw --loopback with a HOST: refused, not the HOST ignored' '
	one_line_error 2 bw --transport tcp --loopback lo -n 5 127.0.0.1 &&
	grep -q "^penny bw: --loopback runs both ends in this host: no HOST (got .127.0.0.1.)" err
'
test_expect_success 'bw --transport tcp --use_cuda: refused, not host memory measured in its name' '
	one_line_error 2 bw --transport tcp --loopback lo -n 5 --use_cuda 0 &&
	grep -q "^penny bw: --use_cuda registers GPU memory with an RDMA device; --transport tcp" err &&
	penny bw --transport tcp --loopback lo -n 5 -s 8 -q 2 >out && grep -q "TCP BW Test" out
'
test_expect_success 'ring-plan --schedule-rank, --schedule-size without --show-schedule: refused, not ignored' '
	for a in "--schedule-rank 1" "--schedule-rank 0" "--schedule-size 4" "--schedule-size 1M"; do
		# shellcheck disable=SC2086
		one_line_error 2 ring-plan --nodes 2 $a || exit 1
		grep -q "go with --show-schedule" err || { cat err; exit 1; }
	done &&
	penny ring-plan --nodes 2 --show-schedule --schedule-rank 3 --schedule-size 4K >out &&
	grep -q "^schedule: multiring, rank 3 (node01 GPU3), 4 KiB = 1024 float32" out &&
	penny ring-plan --nodes 2 --show-schedule >out && grep -q "^schedule: .*rank 0 .*1 MiB" out
'
test_done
