#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Ranks started with different options: every rank's job parameters are
# compared at start-up.  A mismatch is exit 2 on every rank, no table, one
# line naming the option and the ranks (from rank 0 and the ranks that
# differ), within a few seconds: never wrong values that look like data
# corruption, a deadlock until the timeout, or exit 0.
. "$(dirname "$0")/../lib.sh"

export PENNY_PLUGIN_PATH=$BUILD/tests/plugins

# job CMD N ARGS0 ARGS1 [ARGS2...]: ranks 0..N-1 of CMD over 127.0.0.1,
# rank r with ARGSr (the last ARGS for the rest); exit codes in rc0.., output
# in out0.., err0..; fails when it took 8 s or more.
job() {
	local cmd=$1 n=$2 port r t0 args pids=""
	shift 2
	local all=("$@")
	port=$(free_port) || return 1
	t0=$(date +%s)
	for ((r = n - 1; r >= 0; r--)); do
		args=${all[$((r < ${#all[@]} ? r : ${#all[@]} - 1))]}
		# shellcheck disable=SC2086
		"$PENNY" $cmd --rank $r --nranks $n --root 127.0.0.1:$port --timeout 20 $args \
			>out$r 2>err$r &
		eval "pid$r=$!"
	done
	for ((r = 0; r < n; r++)); do
		eval "wait \$pid$r"
		eval "rc$r=$?"
	done
	took=$(($(date +%s) - t0))
	[ $took -lt 8 ] || { echo "took ${took}s"; return 1; }
}

# disagree CMD LINE ARGS0 ARGS1: two ranks, both exit 2 with LINE (the whole
# stderr of each: one line), nothing on stdout.
disagree() {
	local cmd=$1 line=$2
	shift 2
	job "$cmd" 2 "$@" || return 1
	for r in 0 1; do
		eval "rc=\$rc$r"
		if [ "$rc" != 2 ] || [ -s out$r ] || [ "$(cat err$r)" != "penny $cmd: $line" ]; then
			echo "rank $r: exit $rc, stdout $(wc -c <out$r) bytes, stderr:"; cat err$r
			echo "wanted: penny $cmd: $line"
			return 1
		fi
	done
}

ar="-b 1K -e 4K -n 1 -w 0"
test_expect_success 'allreduce-test: every data or schedule option is compared (2 ranks)' '
	disagree allreduce-test "ranks disagree on -d: rank 0 float, rank 1 half" "$ar" "$ar -d half" &&
	disagree allreduce-test "ranks disagree on -o: rank 0 sum, rank 1 max" "$ar -o sum" "$ar -o max" &&
	disagree allreduce-test "ranks disagree on --seed: rank 0 1, rank 1 2" "$ar --seed 1" "$ar --seed 2" &&
	disagree allreduce-test "ranks disagree on -n: rank 0 1, rank 1 3" "$ar" "$ar -n 3" &&
	disagree allreduce-test "ranks disagree on -w: rank 0 0, rank 1 2" "$ar" "$ar -w 2" &&
	disagree allreduce-test "ranks disagree on -c: rank 0 1, rank 1 0" "$ar" "$ar -c 0" &&
	disagree allreduce-test "ranks disagree on -A: rank 0 ring, rank 1 two-shot" "$ar -A ring" "$ar -A two-shot" &&
	disagree allreduce-test "ranks disagree on -A: rank 0 ring,two-shot, rank 1 two-shot,ring" \
		"$ar -A ring,two-shot" "$ar -A two-shot,ring" &&
	disagree allreduce-test "ranks disagree on -e: rank 0 4096, rank 1 8192" "$ar" "$ar -e 8K" &&
	disagree allreduce-test "ranks disagree on -b: rank 0 1024, rank 1 2048" "$ar" "$ar -b 2K" &&
	disagree allreduce-test "ranks disagree on -f: rank 0 none, rank 1 2" "$ar" "$ar -f 2" &&
	disagree allreduce-test "ranks disagree on -i: rank 0 1048576, rank 1 1024" "$ar" "$ar -i 1K" &&
	disagree allreduce-test "ranks disagree on --transport: rank 0 probe, rank 1 tcp" "$ar" \
		"$ar --transport tcp" &&
	disagree allreduce-test "ranks disagree on --min-busbw: rank 0 none, rank 1 0.5" "$ar" \
		"$ar --min-busbw 0.5" &&
	disagree allreduce-test "ranks disagree on --backend: rank 0 host, rank 1 fakeall" "$ar" \
		"$ar --backend fakeall" &&
	disagree allreduce-test "ranks disagree on -G: rank 0 0, rank 1 2" "$ar --backend fakeall" \
		"$ar --backend fakeall -G 2" &&
	no_procs_left
'

test_expect_success 'allreduce-test: 1K and 1024 agree; per-rank options (--gpus, --csv) are not compared' '
	job allreduce-test 2 "$ar --csv a.csv" "-b 1024 -e 4096 -n 1 -w 0" &&
	test "$rc0$rc1" = 00 && grep -q "Out of bounds values : 0 OK" out0 && test ! -s err1 &&
	job allreduce-test 2 "$ar --backend fakeall --gpus 0,1" "$ar --backend fakeall --gpus 1,1" &&
	test "$rc0$rc1" = 00 && grep -q "Out of bounds values : 0 OK" out0
'

test_expect_success 'allreduce-test --plan: the content is compared, not the file name' '
	penny ring-plan --nodes 1 --gpus 2 --nics 2 --json >a.json &&
	penny ring-plan --nodes 1 --gpus 2 --nics 2 --rings 4 --json >b.json && cp a.json c.json &&
	job allreduce-test 2 "$ar --plan a.json" "$ar --plan b.json" &&
	test "$rc0$rc1" = 22 && test ! -s out0 && test ! -s out1 &&
	grep -qxE "penny allreduce-test: ranks disagree on --plan: rank 0 content [0-9a-f]{16}, rank 1 content [0-9a-f]{16}" err0 &&
	test_cmp err0 err1 &&
	job allreduce-test 2 "$ar --plan a.json" "$ar --plan c.json" &&
	test "$rc0$rc1" = 00 && grep -q "# Plan a.json: 2 rings" out0
'

test_expect_success 'allreduce-test: four ranks, two differ; only rank 0 and those two say so' '
	job allreduce-test 4 "$ar" "$ar" "$ar -d int8" "$ar -d int32" &&
	test "$rc0$rc1$rc2$rc3" = 2222 && test ! -s out0 && test ! -s out1 && test ! -s out2 &&
	line="penny allreduce-test: ranks disagree on -d: rank 0 float, rank 2 int8, rank 3 int32" &&
	test "$(cat err0)" = "$line" && test "$(cat err2)" = "$line" && test "$(cat err3)" = "$line" &&
	test ! -s err1
'

test_expect_success 'allreduce-test: five ranks, four differ: three named, "and 1 more"' '
	job allreduce-test 5 "$ar" "$ar -o max" &&
	test "$rc0$rc1$rc2$rc3$rc4" = 22222 &&
	test "$(cat err0)" = "penny allreduce-test: ranks disagree on -o: rank 0 sum, rank 1 max, rank 2 max, rank 3 max and 1 more" &&
	test_cmp err0 err4
'

test_expect_success 'two explicit-rank jobs on one root port with other options: both fail, exit 2' '
	# the cookie derives from the root address, so they meet as one job
	job allreduce-test 2 "$ar -d float --algo ring" "$ar -d double --algo ring" &&
	test "$rc0$rc1" = 22 && grep -q "ranks disagree on -d: rank 0 float, rank 1 double" err1
'

bw="--transport tcp -n 20"
test_expect_success 'bw under a launcher: the settings of the test are compared' '
	disagree bw "ranks disagree on -s: rank 0 1000, rank 1 2000" "$bw -s 1000" "$bw -s 2000" &&
	disagree bw "ranks disagree on -s: rank 0 65536, rank 1 -a (2..8M)" "$bw" "$bw -a" &&
	disagree bw "ranks disagree on -n: rank 0 20, rank 1 30" "$bw" "--transport tcp -n 30" &&
	disagree bw "ranks disagree on -n: rank 0 20, rank 1 none (-D)" "$bw" "--transport tcp -D 1" &&
	disagree bw "ranks disagree on -q: rank 0 1, rank 1 2" "$bw" "$bw -q 2" &&
	disagree bw "ranks disagree on -t: rank 0 128, rank 1 64" "$bw" "$bw -t 64" &&
	disagree bw "ranks disagree on --op: rank 0 write, rank 1 read" "$bw" "$bw --op read" &&
	disagree bw "ranks disagree on --lat: rank 0 off, rank 1 on" "$bw" "$bw --lat" &&
	disagree bw "ranks disagree on -b: rank 0 off, rank 1 on" "$bw" "$bw -b" &&
	disagree bw "ranks disagree on --mtu: rank 0 the ports'"'"', rank 1 1024" "$bw" "$bw --mtu 1024" &&
	disagree bw "ranks disagree on -I: rank 0 default, rank 1 64" "$bw" "$bw -I 64" &&
	disagree bw "ranks disagree on --transport: rank 0 tcp, rank 1 verbs" "$bw" "-n 20" &&
	no_procs_left
'
test_expect_success 'bw under a launcher: two pairs that each agree but differ from each other' '
	# each pair alone agrees, so only the job-wide comparison sees it
	job bw 4 "$bw -s 1000" "$bw -s 1000" "$bw -s 2000" &&
	test "$rc0$rc1$rc2$rc3" = 2222 && test ! -s out0 &&
	test "$(cat err0)" = "penny bw: ranks disagree on -s: rank 0 1000, rank 2 2000, rank 3 2000" &&
	test_cmp err0 err3 && test ! -s err1
'
test_expect_success 'bw under a launcher: ranks that agree still run' '
	job bw 2 "$bw -s 4096" "$bw -s 4K" && test "$rc0$rc1" = 00 && grep -q "^ 4096 " out0
'
test_done
