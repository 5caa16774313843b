#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Hardening, round 8: allreduce-test's --tune-out and failed sweeps, the
# self-launcher with a stopped rank, coll-test and ring-plan fed what a
# careless user gives them.
. "$(dirname "$0")/../lib.sh"

shm_snapshot shm0

# it wrote a table of auto's own picks (or of the one algorithm given): the
# next run with PENNY_TUNE_FILE learnt nothing
test_expect_success '--tune-out with --algo auto, one algorithm or --plan: one line, exit 2, no table' '
	for a in "" auto ring hier; do
		one_line_error 2 allreduce-test --np 2 -b 8 -e 1K -f 8 -n 1 -w 0 \
			--tune-out t.tune ${a:+--algo $a} || exit 1
		test ! -e t.tune &&
		grep -qx "penny allreduce-test: --tune-out writes the fastest of the algorithms it measures: give --algo all (or two or more), not --algo ${a:-auto}" err ||
			{ cat err; exit 1; }
	done &&
	penny ring-plan --nodes 1 --gpus 2 --json >p.json &&
	one_line_error 2 allreduce-test --np 2 -b 8 -e 1K -f 8 -n 1 -w 0 --plan p.json --tune-out t.tune &&
	grep -qx "penny allreduce-test: --tune-out writes the fastest of the algorithms it measures: --plan runs one (multiring)" err &&
	penny allreduce-test --np 2 -b 8 -e 1K -f 8 -n 1 -w 0 -A one-shot,two-shot --tune-out t.tune >out &&
	test "$(grep -vc "^#" t.tune)" -ge 3
'

# the job header (and --json's opening of the document) came above the error
test_expect_success 'no algorithm the job can run: the error alone, no header, no half document' '
	uneven_job --algo hierarchical -b 8 -e 64 -n 1 -w 0 &&
	test "$rcs" = "2 2 2" || { echo "exit codes: $rcs"; cat err.*; exit 1; }
	test ! -s out.0 || { cat out.0; exit 1; }
	uneven_job --algo hierarchical -b 8 -e 64 -n 1 -w 0 --json &&
	test "$rcs" = "2 2 2" && test ! -s out.0 && test "$(wc -l <err.0)" -eq 1
'

# a rank lost mid-run left "...,\"results\":[" on standard output
test_expect_success '--json of a job that fails after its header: a whole document with "error"' '
	"$PENNY" allreduce-test --np 3 --timeout 5 -b 1K -e 1M -f 2 -n 100000 -w 0 --json \
		>out 2>err &
	parent=$!
	kill -9 $(ranks_up $parent 3 | tail -n 1)
	wait $parent
	rc=$?
	test $rc -eq 1 || { echo "rc=$rc"; cat err; exit 1; }
	python3 -c "import json,sys; d = json.load(open(\"out\")); assert \"rank 2 \" in d[\"error\"] and \"summary\" not in d, d" &&
	no_procs_left && shm_leftovers shm0
'

STOP_AT_EXIT=$BUILD/tests/preload/stop-at-exit.so
# no rank waits for one that is stopped after its work: the launcher waited
# for it for ever
test_expect_success 'a rank stopped after its work, the others done: killed after --timeout and 2 s, named' '
	rm -f stopped &&
	PENNY_TEST_STOP_AT_EXIT=$PWD/stopped LD_PRELOAD=$STOP_AT_EXIT \
		ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0 within 8 timeout 30 \
		"$PENNY" allreduce-test --np 2 -b 8 -e 64 -n 1 -w 0 --timeout 1 >out 2>err
	ok=$?
	echo "rc=$WITHIN_RC in ${WITHIN_SECS}s" && cat err && test $ok -eq 0 &&
	test -e stopped && test "$WITHIN_RC" -eq 1 &&
	grep -q "^# Out of bounds values : 0 OK" out && test "$(wc -l <err)" -eq 1 &&
	grep -q "^penny allreduce-test: rank [01] (pid [0-9]*) was stopped (SIGSTOP) for [0-9.]* s, longer than the timeout (1 s): killed$" err &&
	no_procs_left && shm_leftovers shm0
'

# it waited the 2 s of grace for a rank that could not end
test_expect_success 'a rank stopped mid-run: killed as soon as a peer times out on it, named' '
	"$PENNY" allreduce-test --np 3 --timeout 2 -b 1K -e 1M -f 2 -n 100000 -w 0 >out 2>err &
	parent=$!
	victim=$(ranks_up $parent 3 | sed -n 2p)
	kill -STOP $victim
	within 5 wait $parent
	ok=$?
	echo "rc=$WITHIN_RC in ${WITHIN_SECS}s" && cat err && test $ok -eq 0 &&
	test "$WITHIN_RC" -eq 2 &&
	grep -q "^penny allreduce-test: ranks\? [02,]*: timed out after 2 s waiting for rank 1 (host [^,]*, pid $victim)" err &&
	grep -q "^penny allreduce-test: rank 1 (pid $victim) was stopped (SIGSTOP) when rank [02] failed: killed$" err &&
	! grep -q "had not ended" err &&
	no_procs_left && shm_leftovers shm0
'

test_expect_success 'the launcher stopped and continued: the job goes on and ends well' '
	"$PENNY" allreduce-test --np 2 --timeout 1 -b 1M -e 1M -n 20000 -w 0 >out 2>err &
	parent=$!
	sleep 0.5 && kill -STOP $parent && sleep 3 && kill -CONT $parent &&
	wait $parent && test ! -s err && grep -q "^# Out of bounds values : 0 OK" out
'

# its output's reader gone, rank 0 died of SIGPIPE and the job exited 1 (a
# failed test) with "killed by signal 13"
test_expect_success 'standard output a pipe with no reader: exit 2, said once, as a write error' '
	python3 - "$PENNY" <<-PY
	import os, subprocess, sys
	r, w = os.pipe()
	os.close(r)
	p = subprocess.run([sys.argv[1], "coll-test", "alltoall", "--np", "2", "-e", "64", "-n", "1",
	                    "-w", "0"], stdout=w, stderr=subprocess.PIPE, timeout=30)
	err = p.stderr.decode()
	print(p.returncode, err)
	assert p.returncode == 2, p.returncode
	assert "rank 0 (pid " in err and "was killed by SIGPIPE: its output" in err, err
	assert "signal 13" not in err, err
	PY
'

test_expect_success 'a sub-second --timeout is said as given, not as 0 s' '
	port=$(free_port) &&
	test_exit 2 penny coll-test alltoall --rank 0 --nranks 2 --root 127.0.0.1:$port \
		--timeout 0.5 -e 64 >out 2>err &&
	grep -q "rank 0: timed out after 0.5 s waiting for ranks 1 to join" err
'

# rank 1 tried port 0 until the timeout
test_expect_success '--root HOST:0 on a rank other than 0: refused at once, one line' '
	within 5 one_line_error 2 coll-test alltoall --rank 1 --nranks 2 --root 127.0.0.1:0 \
		--timeout 10 -e 64 &&
	grep -qx "penny coll-test: rank 1: rendezvous address .127.0.0.1:0.: port 0 cannot be reached (give the port rank 0 listens on)" err
'

# strtod took hex: -f 0x2 was 2, --nic-rate 0x10 was 16 Gb/s, 0x1p4 was 16
test_expect_success 'a number with a fraction is decimal: hex refused in one line, as for integers' '
	for a in "-f 0x2" "--min-busbw 0x0" "-f 0X1p1"; do
		one_line_error 2 coll-test alltoall --np 2 -e 64 $a || exit 1
		grep -q "^penny coll-test: invalid number .0[xX]" err || { cat err; exit 1; }
	done &&
	for a in "--nic-rate 0x10" "--pcie-rate 0x1p4"; do
		one_line_error 2 ring-plan --nodes 2 $a || exit 1
	done &&
	one_line_error 2 allreduce-test --np 2 -e 64 -f 0x2 &&
	penny ring-plan --nodes 2 --nic-rate 1e2 --pcie-rate 6.3e1 >out && grep -q "100 Gb/s" out
'

# a plan whose NIC claimed a negative rate predicted -0.125 GB/s a ring; a
# port of 2^31 became a negative int
test_expect_success 'ring-plan --check, allreduce-test --plan: a NIC port or rate out of range is refused' '
	penny ring-plan --nodes 2 --gpus 2 --nics 2 --json >good.json &&
	for m in "rate_gbps -1" "port 0" "port 256" "port 2147483648" "port -1"; do
		set -- $m
		python3 -c "import json,sys; d = json.load(open(\"good.json\"))
d[\"layouts\"][0][\"nics\"][0][sys.argv[1]] = int(sys.argv[2]); json.dump(d, open(\"bad.json\", \"w\"))" $1 $2 &&
		one_line_error 2 ring-plan --check bad.json || exit 1
		grep -q "^penny ring-plan: .*layout 0 NIC mlx5_0: \"$1\" must be" err || { cat err; exit 1; }
		one_line_error 2 allreduce-test --np 2 -e 64 --plan bad.json || exit 1
	done &&
	penny ring-plan --check good.json >out
'

test_expect_success 'ring-plan --rails naming only ports no node has: the error says --rails' '
	for r in mlx5_9:1:0 mlx5_0:2:0 MLX5_0:1:0; do
		one_line_error 2 ring-plan --nodes 2 --rails $r || exit 1
		grep -qx "penny ring-plan: no node has a usable NIC port among those --rails names: rings across 2 nodes need a rail active on every node" err ||
			{ cat err; exit 1; }
	done &&
	one_line_error 2 ring-plan --nodes 2 --nics 0 &&
	grep -qx "penny ring-plan: no node has a usable NIC port: rings across 2 nodes need a rail active on every node" err
'
# --check without a model checks the plan's own: these were taken and
# changed nothing
test_expect_success 'ring-plan --check: --rails, --hosts without a model and --pcie-rate refused, not ignored' '
	penny ring-plan --nodes 2 --gpus 2 --nics 2 --json >plan.json &&
	for a in "--rails mlx5_0:1:0" "--hosts a,b"; do
		one_line_error 2 ring-plan --check plan.json $a || exit 1
		grep -qx "penny ring-plan: ${a%% *} shapes a model: with --check give one (--nodes, --topo-file or --topo-xml), or leave it out" err ||
			{ cat err; exit 1; }
	done &&
	one_line_error 2 ring-plan --check plan.json --pcie-rate 5 &&
	grep -q "^penny ring-plan: --check reads a plan; .*--pcie-rate are for planning$" err &&
	penny ring-plan --check plan.json --nodes 2 --gpus 2 --nics 2 --hosts node01,node02 \
		--rails mlx5_0:1:0,mlx5_1:1:1 >out && grep -q "^0 violations" out
'
test_done
