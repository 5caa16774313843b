#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# penny allreduce-test speaks nccl-tests: all_reduce_perf's letters with
# their meaning (-a the time over the ranks, -T the timeout, -g GPUs per
# thread), the values that mean what penny does accepted, any other one
# line naming what to do instead, exit 2; the GPU list is --gpus.
. "$(dirname "$0")/../lib.sh"

ar() { penny allreduce-test --timeout 30 -b 1K -e 4K -f 2 -n 2 -w 1 "$@"; }

test_expect_success 'the letters as nccl-tests scripts pass them, with their defaults' '
	ar --np 2 -t 1 -g 1 -m 1 -N 1 -p 1 -z 0 -C 0 -R 0 -a 1 -T 30 -c 1 >out &&
	grep -q "Out of bounds values : 0 OK" out &&
	test "$(grep -cE "^ +[0-9]+ +[0-9]+ +float +sum " out)" = 3
'
test_expect_success '-a 0..3: each a time over the ranks, in the JSON too' '
	for a in 0 1 2 3; do
		ar --np 3 -a $a --json >a$a.json && json_valid a$a.json &&
		python3 -c "
import json
d = json.load(open(\"a$a.json\"))
assert d[\"summary\"][\"passed\"] and all(r[\"oop\"][\"time_us\"] > 0 for r in d[\"results\"])
" || exit 1
	done
'
test_expect_success 'ranks that disagree on -a: one line, exit 2' '
	port=$(free_port) &&
	{ penny allreduce-test --rank 1 --nranks 2 --root 127.0.0.1:$port --timeout 10 -a 1 \
		>out1 2>err1 & } &&
	test_exit 2 penny allreduce-test --rank 0 --nranks 2 --root 127.0.0.1:$port --timeout 10 \
		-a 3 >out0 2>err0;
	rc=$?; wait; test $rc = 0 && grep -q "ranks disagree on -a: rank 0 3, rank 1 1" err0
'
test_expect_success '-T is --timeout: a rank 0 that never comes, exit 2 within -T' '
	port=$(free_port) &&
	t0=$(date +%s) &&
	test_exit 2 penny allreduce-test --rank 1 --nranks 2 --root 127.0.0.1:$port -T 1 2>err &&
	test $(($(date +%s) - t0)) -lt 8 && grep -q "connecting to rank 0" err
'
test_expect_success 'what penny cannot honour: one line, not supported by penny: why, exit 2' '
	tab=$(printf "\t") &&
	while IFS=$tab read -r args want; do
		test_exit 2 penny allreduce-test $args 2>err || { echo "args: $args"; exit 1; }
		test "$(wc -l <err)" = 1 || { echo "args: $args"; cat err; exit 1; }
		grep -q -- "$want" err || { echo "args: $args"; cat err; exit 1; }
	done <<-EOF
	-t 4	-t 4: not supported by penny: it runs one rank per process; start a rank for each thread
	-t 2	-t 2: not supported by penny
	-g 8	-g 8: not supported by penny: it drives one GPU per rank; start a rank per GPU (--np) and pick the devices with --gpus
	-g 0,1	invalid number .0,1. for .-g.
	-n 0x10	invalid number .0x10. for .-n.
	-n 0 --min-busbw 1	--min-busbw needs timed calls of some bytes: not with -n 0
	-b 0 -e 0 --min-busbw 0.001	--min-busbw needs timed calls of some bytes: not with -e 0
	-N 0	-N 0: not supported by penny: nccl-tests. 0 runs forever
	-R 2	-R 2: symmetric registration is --backend nccl --algo symmetric
	-d all --tune-out t.txt	--tune-out tunes one type and op
	-a 4	-a must be 0..3, got 4
	-p 2	-p must be 0..1, got 2
	-t 0	-t must be 1..1024, got 0
	-T 0	-T must be 10ms..24h, got 0
	EOF
'
# issue 39: scripts pass these to all_reduce_perf; penny refused them all
test_expect_success 'what the host honours: -z 1 -C 1 -R 1 silently, -m 4, -N 3' '
	ar --np 2 -z 1 -C 1 -R 1 >out 2>err && test ! -s err &&
	grep -q "Out of bounds values : 0 OK" out &&
	ar --np 2 -m 4 -N 3 -n 2 --json >out && json_valid out &&
	python3 -c "import json; d=json.load(open(\"out\")); r=d[\"results\"]
assert d[\"summary\"][\"passed\"] and len(r) == 9, len(r)
assert all(x[\"iters_per_block\"] == 4 for x in r)"
'
test_expect_success '-d all and -o all: every type x op in turn, 0 wrong' '
	ar --np 3 -d all -o all -b 64 -e 64 -n 0 --json >out && json_valid out &&
	python3 -c "import json; d=json.load(open(\"out\")); r=d[\"results\"]
assert d[\"summary\"][\"passed\"] and d[\"summary\"][\"wrong\"] == 0
assert len({(x[\"type\"], x[\"redop\"]) for x in r}) == 50 == len(r)" &&
	ar --np 2 -d all -b 64 -e 64 -n 0 >out && test "$(grep -cE "^ +64 .* sum +-1 " out)" = 10
'
test_expect_success 'ranks that disagree on -N: one line, exit 2' '
	port=$(free_port) &&
	{ penny allreduce-test --rank 1 --nranks 2 --root 127.0.0.1:$port --timeout 10 -N 2 \
		>out1 2>err1 & } &&
	test_exit 2 penny allreduce-test --rank 0 --nranks 2 --root 127.0.0.1:$port --timeout 10 \
		>out0 2>err0;
	rc=$?; wait; test $rc = 0 && grep -q "ranks disagree on -N: rank 0 1, rank 1 2" err0
'
test_done
