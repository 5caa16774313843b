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

# one_line FILE REGEX: FILE is exactly one line, and it matches REGEX
one_line() {
	cat "$1"
	test "$(wc -l <"$1")" -eq 1 && grep -Eq "$2" "$1"
}

# fake/proc/meminfo: a host with little memory available (read below --sysfs-root)
mkdir -p fake/proc && printf 'MemTotal:       24684100 kB\nMemFree:          40000 kB\nMemAvailable:      32768 kB\n' >fake/proc/meminfo
# /dev/shm free on this host, in GiB
shm_free_gib() { df -k --output=avail /dev/shm | tail -1 | awk '{print int($1 / 1048576)}'; }

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

test_expect_success '--tune-out with auto in --algo writes what auto ran, and PENNY_TUNE_FILE loads it' '
	penny allreduce-test --np 2 -b 8 -e 256K -f 8 --algo auto,two-shot --tune-out t.tune >out &&
	cat t.tune && grep -q " two-shot$" t.tune &&
	# a line per size, two where in place and out of place ran apart
	test "$(grep -v "^#" t.tune | cut -d" " -f3 | sort -u | wc -l)" -eq 6 &&
	! grep -v "^#" t.tune | grep -vqE "^2 1 [0-9]+ [a-z-]+( in-place| out-of-place)?$" &&
	! grep -q " auto$" t.tune &&
	PENNY_TUNE_FILE=t.tune penny allreduce-test --np 2 -b 8 -e 256K -f 8 >out2 2>err2 &&
	! grep -q FAILED out2 && test ! -s err2 &&
	no_procs_left
'

# a table made of nothing timed, or of a GPU plugin's rows (the host
# engine's table), was written as all ring or the first algorithm listed
test_expect_success '--tune-out without the host backend or without timed calls: one line, exit 2' '
	test_exit 2 penny allreduce-test -A one-shot,two-shot -n 0 --np 2 -e 4K -f 4 --tune-out n.tune \
		>out 2>err && test ! -e n.tune &&
	one_line err "^penny allreduce-test: --tune-out needs timed calls: not with -n 0$" &&
	PENNY_PLUGIN_PATH="$BUILD/tests/plugins" test_exit 2 penny allreduce-test --backend fake \
		-A one-shot --np 2 -e 4K -f 4 -n 1 -w 0 --tune-out g.tune >out 2>err && test ! -e g.tune &&
	one_line err "^penny allreduce-test: --tune-out writes the host engine.s table: the run needs --backend host"
'

if [ -n "$HAVE_UNSHARE" ]; then
test_expect_success 'Docker-sized /dev/shm: the job is refused before it starts, one line, nothing left' '
	# it died by SIGBUS, with no message
	within 5 in_small_shm 64m "$PENNY" allreduce-test --np 2 -b 64M -e 64M &&
	echo "rc=$(cat rc) left: $(cat left)" && test "$(cat rc)" -eq 2 &&
	one_line err "^penny allreduce-test: 2 ranks x 2 buffers of 64 MiB need 259 MiB in /dev/shm \(with 2.1 MiB of FIFOs\), 64 MiB free$" &&
	test ! -s left && no_procs_left
'

test_expect_success 'what fits in that /dev/shm still runs' '
	in_small_shm 64m "$PENNY" allreduce-test --np 2 -b 8M -e 8M &&
	test "$(cat rc)" -eq 0 && grep -q "Out of bounds values : 0 OK" out && test ! -s err &&
	test ! -s left && no_procs_left
'

test_expect_success 'GPU backends: the node segment alone is checked' '
	within 5 in_small_shm 64m "$PENNY" allreduce-test --np 64 --backend nccl &&
	test "$(cat rc)" -eq 2 &&
	one_line err "^penny allreduce-test: 64 ranks need 2.1 GiB of FIFOs in /dev/shm, 64 MiB free$" &&
	test ! -s left && no_procs_left
'

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

test_expect_success '-e 1T is refused by the plan, never mapped' '
	shm_snapshot shm0 &&
	within 5 test_exit 2 penny allreduce-test -b 1T -e 1T 2>err &&
	one_line err "^penny allreduce-test: 1 rank x 2 buffers of 1 TiB need 2.1 TiB in /dev/shm \(with 520 KiB of FIFOs\), [0-9.]+ [KMGT]?i?B free$" &&
	within 5 test_exit 2 penny allreduce-test --np 2 -b 1T -e 1T 2>err &&
	one_line err "^penny allreduce-test: 2 ranks x 2 buffers of 1 TiB need 4.1 TiB in /dev/shm" &&
	no_procs_left && shm_leftovers shm0
'

if [ "$(shm_free_gib)" -lt 120 ]; then
test_expect_success '--np 512 (it set off the OOM killer): refused before forking, one line' '
	shm_snapshot shm0 &&
	within 5 test_exit 2 penny allreduce-test --np 512 -b 8 -e 8 2>err &&
	one_line err "^penny allreduce-test: 512 ranks x 2 buffers of 8 B need 129 GiB in /dev/shm \(with 129 GiB of FIFOs\), [0-9.]+ [KMG]?i?B free$" &&
	within 5 test_exit 2 penny allreduce-test --np 512 2>err &&
	one_line err "^penny allreduce-test: 512 ranks x 2 buffers of 32 MiB need 161 GiB in /dev/shm" &&
	no_procs_left && shm_leftovers shm0
'
else
test_skip '--np 512 refused' "this host has $(shm_free_gib) GiB of /dev/shm free"
fi

test_expect_success 'ranks that fit /dev/shm but not the memory available: refused, one line' '
	shm_snapshot shm0 &&
	within 5 test_exit 2 penny allreduce-test --sysfs-root fake --np 8 -b 1M -e 1M 2>err &&
	one_line err "^penny allreduce-test: 8 ranks x 8.2 MiB and 49 MiB in /dev/shm need 113 MiB of memory, 32 MiB available$" &&
	no_procs_left && shm_leftovers shm0
'

test_expect_success 'the same check on the ranks of a launcher: every rank exits 2, one line' '
	shm_snapshot shm0
	port=$(free_port) || exit 1
	export PENNY_COOKIE=00112233445566778899aabbccddeeff
	"$PENNY" allreduce-test --sysfs-root fake --rank 1 --nranks 2 --root 127.0.0.1:$port \
		--timeout 10 -b 16M -e 16M >out1 2>err1 &
	r1=$!
	within 15 test_exit 2 penny allreduce-test --sysfs-root fake --rank 0 --nranks 2 \
		--root 127.0.0.1:$port --timeout 10 -b 16M -e 16M 2>err0
	ok0=$?
	wait $r1
	rc1=$?
	echo "rank 0 ok=$ok0, rank 1 rc=$rc1" && cat err1 &&
	test "$ok0" -eq 0 && test "$rc1" -eq 2 && test ! -s err1 &&
	one_line err0 "^penny allreduce-test: 2 ranks x [0-9.]+ KiB and 67 MiB in /dev/shm need 67 MiB of memory, 32 MiB available$" &&
	no_procs_left && shm_leftovers shm0
'

test_expect_success 'bw: buffers the host cannot hold are refused, one line (--np and alone)' '
	within 5 test_exit 2 penny bw --np 64 -s 1G 2>err &&
	one_line err "^penny bw: 64 ranks x 2.1 GiB need 1[23][0-9] GiB of memory, [0-9.]+ [KMGT]?i?B available$" &&
	within 5 test_exit 2 penny bw --sysfs-root fake --np 16 -s 1G 2>err &&
	one_line err "^penny bw: 16 ranks x 2.1 GiB need 33 GiB of memory, 32 MiB available$" &&
	within 5 test_exit 2 penny bw --sysfs-root fake -s 1G 2>err &&
	one_line err "^penny bw: 1 rank x 2 GiB need 2 GiB of memory, 32 MiB available$" &&
	no_procs_left
'

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
