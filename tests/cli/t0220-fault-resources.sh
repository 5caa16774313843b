#!/usr/bin/env bash
# Faults around resources: shared memory and memory a job cannot have, and
# the tuning table's life (written by --tune-out, read by PENNY_TUNE_FILE).
# A job that cannot have what it needs fails before it starts: exit 2, one
# line naming the need and what is free, nothing left behind.
. "$(dirname "$0")/../lib.sh"

test_expect_success 'a tuning file that cannot be read: one line, no crash (was a double free)' '
	shm_snapshot shm0 &&
	PENNY_TUNE_FILE=/nonexistent penny allreduce-test -e 1K >out 2>err
	rc=$?
	cat err &&
	{ [ "$rc" -eq 1 ] || [ "$rc" -eq 2 ]; } &&
	test "$(wc -l <err)" -eq 1 && grep -q "/nonexistent" err &&
	! grep -q "double free" err &&
	no_procs_left && shm_leftovers shm0
'

test_expect_success '--tune-out without --algo all writes what ran, and PENNY_TUNE_FILE loads it' '
	penny allreduce-test --np 2 -b 8 -e 256K -f 8 --tune-out t.tune >out &&
	cat t.tune && grep -q " two-shot$" t.tune &&
	test "$(grep -vc "^#" t.tune)" -eq 6 &&
	! grep -q " auto$" t.tune &&
	PENNY_TUNE_FILE=t.tune penny allreduce-test --np 2 -b 8 -e 256K -f 8 >out2 2>err2 &&
	! grep -q FAILED out2 && test ! -s err2 &&
	no_procs_left
'

test_done
