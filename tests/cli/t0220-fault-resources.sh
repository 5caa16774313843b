#!/usr/bin/env bash
# Faults around resources: shared memory and memory a job cannot have, and
# the tuning table's life (written by --tune-out, read by PENNY_TUNE_FILE).
# A job that cannot have what it needs fails before it starts: exit 2, one
# line naming the need and what is free, nothing left behind.
. "$(dirname "$0")/../lib.sh"

# in_small_shm SIZE CMD...: run CMD in a private mount namespace whose
# /dev/shm is a SIZE tmpfs; its stdout, stderr and exit code go to out, err
# and rc, what it left in that /dev/shm (listed before the namespace goes) to
# left.
in_small_shm() {
	local size=$1
	shift
	unshare -m sh -c 'mount -t tmpfs -o size="$0" tmpfs /dev/shm || exit 99
		"$@" >out 2>err; echo $? >rc; ls -A /dev/shm >left' "$size" "$@"
}
if unshare -m true 2>/dev/null; then HAVE_UNSHARE=1; else HAVE_UNSHARE=; fi

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

if [ -n "$HAVE_UNSHARE" ]; then
test_expect_success 'reservation failing on a later segment: one line per rank, no SIGBUS, nothing left' '
	# the planned check is off, so the segments themselves must fail cleanly:
	# the node segment and the first buffers fit, the second buffers do not
	in_small_shm 64m env PENNY_MEM_CHECK=0 "$PENNY" allreduce-test --np 2 -b 30M -e 30M \
		--timeout 10 &&
	cat err && echo "rc=$(cat rc) left: $(cat left)" &&
	test "$(cat rc)" -eq 2 &&
	grep -q "cannot reserve 31457280 bytes of shared memory.*No space left" err &&
	test ! -s left && no_procs_left
'
else
test_skip 'reservation failing on a later segment' 'unshare -m is not allowed here'
fi

# 250 MB of address space: penny starts, its 100 MB segments are reserved,
# but mapping the peer's too fails (an ASan build cannot start at all: skip)
if (ulimit -v 250000 && "$PENNY" --version) >/dev/null 2>&1; then
test_expect_success 'a segment that cannot be mapped is unlinked (it was left in /dev/shm)' '
	shm_snapshot shm0 &&
	(ulimit -v 250000 && PENNY_MEM_CHECK=0 exec "$PENNY" allreduce-test --np 2 -b 100M \
		-e 100M --timeout 10) >out 2>err
	rc=$?
	cat err && test "$rc" -ne 0 &&
	grep -q "cannot map shared memory" err &&
	no_procs_left && shm_leftovers shm0
'
else
test_skip 'a segment that cannot be mapped' 'this build cannot start under ulimit -v'
fi

test_done
