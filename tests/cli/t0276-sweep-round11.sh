#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Hardening, round 11 of allreduce-test and coll-test: what a careless
# admin gives them (-n and -w with -m past what a size's calls count) and
# what a small host cannot hold (a GPU backend's check staged through host
# memory, which the planned-memory check left out).
. "$(dirname "$0")/../lib.sh"

# -n 1000000 -m 1000000: 10^12 calls a size wrapped the int that counts
# them: a negative count, nothing timed, a row of 0 us and exit 0
test_expect_success '-n or -w times -m past 2^31-1 calls a size: one line, exit 2, nothing run' '
	within 5 one_line_error 2 allreduce-test --np 2 -b 8 -e 8 -n 1000000 -m 1000000 -w 0 &&
	grep -qx "penny allreduce-test: -n 1000000 with -m 1000000 is 1000000000000 calls a size: at most 2147483647" err &&
	within 5 one_line_error 2 coll-test allgather --np 2 -b 8 -e 8 -n 1 -m 3000 -w 1000000 &&
	grep -qx "penny coll-test: -w 1000000 with -m 3000 is 3000000000 calls a size: at most 2147483647" err &&
	one_line_error 2 allreduce-test -b 8 -e 8 -n 2147484 -m 1000 -w 0 &&
	penny allreduce-test --np 2 -b 8 -e 8 -n 2 -m 3 -w 1 --json >out.json &&
	python3 -c "
import json
r = json.load(open(\"out.json\"))[\"results\"][0]
assert r[\"iters_per_block\"] == 3 and r[\"oop\"][\"time_us\"] > 0, r
"
'

# -d and -o take one name or all: the line listed every name but all, and
# said nothing of a list ("-d float,half", as for --algo)
test_expect_success '-d or -o a typo or a list: one line naming all and that it takes one name' '
	one_line_error 2 allreduce-test --np 2 -d flaot &&
	grep -qx "penny allreduce-test: unknown data type .flaot. (valid: int8 uint8 int32 uint32 int64 uint64 half bfloat16 float double or all)" err &&
	one_line_error 2 coll-test reduce --np 2 -d float,float &&
	grep -q "^penny coll-test: unknown data type .float,float. (valid: .* or all; one name, not a list)$" err &&
	one_line_error 2 allreduce-test -o sum,max &&
	grep -qx "penny allreduce-test: unknown reduction operation .sum,max. (valid: sum prod min max avg or all; one name, not a list)" err
'

# a host with 64 MiB available (read below --sysfs-root)
mkdir -p fake/proc &&
	printf 'MemTotal:       24684100 kB\nMemFree:          40000 kB\nMemAvailable:      65536 kB\n' >fake/proc/meminfo
export PENNY_PLUGIN_PATH=$BUILD/tests/plugins
# coll-test's check of a GPU backend writes the input and reads the output
# back through a host buffer of -e per rank: 2 x 256 MiB ran on a host with
# 64 MiB available (the OOM killer's on a real one), exit 0
test_expect_success 'coll-test --backend GPU: the check.s host buffer counts in the planned memory' '
	shm_snapshot shm0 &&
	within 5 one_line_error 2 coll-test allgather --sysfs-root fake --np 2 --backend fake \
		-b 256M -e 256M -n 1 -w 0 &&
	grep -qx "penny coll-test: 2 ranks x 265 MiB and 2.1 MiB in /dev/shm need 531 MiB of memory, 64 MiB available" err &&
	within 5 one_line_error 2 coll-test alltoall --sysfs-root fake --backend fake -b 256M -e 256M \
		-n 1 -w 0 &&
	grep -q "^penny coll-test: 1 rank x 257 MiB and 520 KiB in /dev/shm need 257 MiB of memory" err &&
	# without the check nothing is staged; what fits still runs
	penny coll-test broadcast --sysfs-root fake --np 2 --backend fake -b 256M -e 256M -n 1 \
		-w 0 -c 0 >out && grep -q "^# Avg bus bandwidth" out &&
	penny coll-test broadcast --sysfs-root fake --np 2 --backend fake -b 1M -e 1M -n 1 -w 0 >out &&
	grep -q "Out of bounds values : 0 OK" out &&
	no_procs_left && shm_leftovers shm0
'
test_expect_success '... and on the ranks of a launcher: every rank exits 2, one line' '
	port=$(free_port) || exit 1
	export PENNY_COOKIE=00112233445566778899aabbccddeeff
	"$PENNY" coll-test broadcast --backend fake --sysfs-root fake --rank 1 --nranks 2 \
		--root 127.0.0.1:$port --timeout 10 -b 128M -e 128M -n 1 -w 0 >out1 2>err1 &
	r1=$!
	within 15 test_exit 2 penny coll-test broadcast --backend fake --sysfs-root fake --rank 0 \
		--nranks 2 --root 127.0.0.1:$port --timeout 10 -b 128M -e 128M -n 1 -w 0 >out0 2>err0
	ok0=$?
	wait $r1
	rc1=$?
	cat err0 err1 && test $ok0 = 0 && test $rc1 = 2 &&
	test "$(cat err0 err1 | wc -l)" = 1 &&
	grep -qx "penny coll-test: 2 ranks x 129 MiB and 2.1 MiB in /dev/shm need 259 MiB of memory, 64 MiB available" err0
'

# rank 0 kept a copy of every row for the ratios, --plot and --tune-out
# even when none of them ran: -N 100000 of one size grew it by 24 MB
# rss N: the largest resident size (KB) of a host allreduce-test of -N N
rss() {
	python3 -c "
import os, resource, subprocess, sys
subprocess.run([os.environ[\"PENNY\"], \"allreduce-test\", \"-N\", sys.argv[1], \"-b\", \"8\", \"-e\", \"8\",
		\"-n\", \"1\", \"-w\", \"0\"], stdout=subprocess.DEVNULL, check=True)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
" "$1"
}
test_expect_success '-N sweeps: rows are kept only for the ratios, --plot and --tune-out' '
	rss 100 >small && rss 100000 >big && echo "$(cat small) KB, $(cat big) KB" &&
	test $(($(cat big) - $(cat small))) -lt 4096 &&
	penny allreduce-test -N 3 -b 8 -e 64 --plot p.svg >out && grep -q "<svg" p.svg
'

test_done
