#!/usr/bin/env bash
# Faults at the rendezvous: job sizes past the old fixed limits, launcher
# variables that are not numbers, huge --nranks and --timeout, rendezvous
# files planted by another user, floods of idle strangers, two jobs on one
# address.  Each fails with one line and exit 2 (or completes), in bounded time.
. "$(dirname "$0")/../lib.sh"

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
shm_snapshot shm0

test_expect_success '--np 260: one-shot over a group of 260 ranks (no fixed limit of 256)' '
	within 30 timeout 40 "$PENNY" allreduce-test --np 260 --algo one-shot -b 8 -e 8 -n 1 -w 0 \
		--timeout 20 >out 2>err; ok=$?; cat err &&
	test $ok -eq 0 && test "$WITHIN_RC" -eq 0 && grep -q "Out of bounds values : 0 OK" out && test ! -s err
'

test_expect_success '--np 300 under ulimit -n 200: refused before starting, naming the limit' '
	(ulimit -n 200 && within 3 test_exit 2 penny allreduce-test --np 300 -b 8 -e 8 --timeout 5 \
		>out 2>err); ok=$?; cat err &&
	test $ok -eq 0 && test "$(wc -l <err)" -eq 1 && grep -q "needs 364 open files.*limit is 200" err &&
	test ! -s out && no_procs_left
'

test_expect_success '--nranks 2000000000: one line, exit 2, at once' '
	within 2 test_exit 2 penny allreduce-test --rank 0 --nranks 2000000000 \
		--root 127.0.0.1:$(free_port) 2>err && cat err &&
	test "$(wc -l <err)" -eq 1 && grep -q "more than 8192" err
'

test_expect_success 'launcher variables that are not numbers or out of range: one line, exit 2' '
	for env in "OMPI_COMM_WORLD_RANK=x" "OMPI_COMM_WORLD_RANK=x OMPI_COMM_WORLD_SIZE=2" \
		"OMPI_COMM_WORLD_RANK=2 OMPI_COMM_WORLD_SIZE=2" "OMPI_COMM_WORLD_RANK=0 OMPI_COMM_WORLD_SIZE=-3" \
		"SLURM_PROCID=1 SLURM_NTASKS=99999" "PMI_RANK=0 PMI_SIZE=2x" "RANK=1 WORLD_SIZE=1" \
		"OMPI_COMM_WORLD_RANK=0 OMPI_COMM_WORLD_SIZE=2 OMPI_COMM_WORLD_LOCAL_RANK=y"; do
		env $env timeout 10 "$PENNY" allreduce-test -b 8 -e 8 --timeout 2 >out 2>err; rc=$?
		echo "$env: rc=$rc $(cat err)"
		test "$rc" -eq 2 && test "$(wc -l <err)" -eq 1 && grep -q "launcher environment" err &&
		test ! -s out || exit 1
	done
'

test_expect_success '--root without --rank: refused, not ignored' '
	test_exit 2 penny allreduce-test --root 127.0.0.1:$(free_port) -b 8 -e 8 >out 2>err && cat err &&
	test "$(wc -l <err)" -eq 1 && grep -q "needs --rank" err && test ! -s out
'
test_done
