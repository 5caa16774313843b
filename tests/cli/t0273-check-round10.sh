#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# penny check, hardening round 10: a stop (SIGTERM, SIGHUP) mid-run
# rewrites --prom and --junit (never an older run's PASS) and ends what the
# check started; --json's "exit" is the status also when an output file
# could not be written; a config saved with a UTF-8 byte order mark; hwloc
# on a tree with a FIFO within --timeout; an error counter that cannot be
# read is named, not left out silently.
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/helpers/trees.sh"
unset PENNY_SYSROOT PENNY_DEBUG PENNY_FAKE_SLOW PENNY_FAKE_SLOW_GPU PENNY_FAKE_STALL

# Two NUMA nodes, each with a PCIe switch holding a GPU and its 400 Gb/s NIC.
tree_pairs ok node-ok >/dev/null
for d in 0 1; do
	for p in symbol_error link_downed port_rcv_errors port_xmit_discards; do
		echo 0 >"ok/sys/class/infiniband/mlx5_$d/ports/1/counters/$p"
	done
done
copy() { rm -rf "$2" && cp -a "$1" "$2"; }
# an older run's files, which a stopped run must not leave standing
old_pass() {
	penny check --sysfs-root ok --passive --only pcie --prom p.prom --junit j.xml >/dev/null &&
	grep -qx "penny_check_exit_code 0" p.prom
}
# wait_for WHAT CMD...: until CMD succeeds, at most 10 s
wait_for() {
	local what=$1 i
	shift
	for ((i = 0; i < 100; i++)); do
		"$@" && return 0
		sleep 0.1
	done
	echo "never: $what" >&2
	return 1
}
# started: the check's thread that waits for a stop is up (the old code
# had none: then after 10 s, all the same)
started() {
	threads() { test "$(ls "/proc/$1/task" 2>/dev/null | wc -l)" -ge 2; }
	wait_for "the stop thread of $1" threads "$1" || true
}
stopped_files() { # SIGNUM
	grep -qx "penny_check_exit_code 2" p.prom &&
	grep -q "<error message=\"stopped by signal $1 (" j.xml &&
	grep -qx "penny check: stopped by signal $1 (.*) before the verdict" err &&
	test "$(ls -A | grep -c "^\.[pj]")" = 0 || { cat p.prom j.xml err; ls -A; false; }
}

# It died at once (default action) and left the files of the run before:
# penny_check_exit_code 0, a PASS, on a node whose check was stopped.
test_expect_success 'SIGTERM during the counters window: --prom and --junit say stopped, exit 2' '
	old_pass && echo "counters.window = 30" >w.conf &&
	{ "$PENNY" check --sysfs-root ok --passive --config w.conf --prom p.prom --junit j.xml \
		>out 2>err & pid=$!; } &&
	started $pid && kill -TERM $pid && wait $pid; rc=$?
	test "$rc" = 2 && stopped_files 15
'
test_expect_success 'SIGHUP does the same; an ignored SIGTERM stays ignored' '
	old_pass &&
	{ "$PENNY" check --sysfs-root ok --passive --config w.conf --prom p.prom --junit j.xml \
		>out 2>err & pid=$!; } &&
	started $pid && kill -HUP $pid && wait $pid; rc=$?
	test "$rc" = 2 && stopped_files 1 &&
	old_pass && echo "counters.window = 1" >w1.conf &&
	{ trap "" TERM; "$PENNY" check --sysfs-root ok --passive --config w1.conf \
		--prom p.prom >out 2>err & pid=$!; trap - TERM; } &&
	sleep 0.3 && kill -TERM $pid && wait $pid && grep -qx "penny_check_exit_code 0" p.prom
'

# the allreduce's fresh ranks (allreduce-test --np 4) stalled in a call
test_expect_success 'SIGTERM during the allreduce: the files say so, its ranks end with it' '
	tree_switches sw >/dev/null && old_pass &&
	{ PENNY_FAKE_GPUS=4 PENNY_FAKE_GBS=50 PENNY_FAKE_STALL=3:30000 \
		PENNY_PLUGIN_PATH=$BUILD/tests/plugins/cuda "$PENNY" check --sysfs-root sw \
		--only allreduce --quick --prom p.prom --junit j.xml >out 2>err & pid=$!; } &&
	ranks() { test "$(pgrep -f -- "allreduce-test --np 4 .*--sysfs-root sw" | wc -l)" -ge 5; } &&
	wait_for "the allreduce ranks" ranks && kill -TERM $pid && wait $pid; rc=$?
	test "$rc" = 2 && stopped_files 15 && no_procs_left
'

# The document said "exit": 0 and the command exited 2 (the JUnit file
# could not be written): CI read a PASS from stdout.
test_expect_success '--json: "exit" is the status when --junit cannot be written (file too large)' '
	rm -f j.xml &&
	{ (trap "" XFSZ; ulimit -f 1; exec "$PENNY" check --sysfs-root ok --passive --json \
		--junit j.xml 2>err) | cat >out.json; rc=${PIPESTATUS[0]}; } &&
	test "$rc" = 2 && test ! -e j.xml && grep -q "j.xml: write error: File too large" err &&
	python3 -c "
import json
d = json.load(open(\"out.json\"))
assert d[\"exit\"] == 2, d[\"exit\"]
assert d[\"summary\"][\"exit\"] == 0, d[\"summary\"]
"
'

# "unknown key 'inventory.gpus'": the mark is invisible in the message
test_expect_success 'a config saved with a UTF-8 byte order mark is read' '
	printf "\357\273\277inventory.gpus = 3\n" >bom.conf &&
	test_exit 1 penny check --sysfs-root ok --passive --only inventory --config bom.conf >out &&
	grep -q "^inventory .* gpus .* FAIL  found 2 GPUs, expected 3" out
'

# hwloc waited its own 5 s whatever --timeout said
test_expect_success 'hwloc on a tree with a FIFO: refused within --timeout 1' '
	copy ok fifo && rm fifo/sys/devices/system/node/node0/cpumap &&
	mkfifo fifo/sys/devices/system/node/node0/cpumap &&
	within 4 penny check --sysfs-root fifo --passive --timeout 1 >out 2>err;
	test "$WITHIN_RC" = 2 && grep -q "within 1 s" err || { cat err; false; }
'

# a counter that reads garbage was dropped from the sum without a word
test_expect_success 'an error counter that is no number is named in the PASS, not dropped silently' '
	copy ok ctr && echo garbage >ctr/sys/class/infiniband/mlx5_0/ports/1/counters/symbol_error &&
	penny check --sysfs-root ctr --passive --only counters --json >out.json &&
	python3 -c "
import json
r = {x[\"target\"]: x for x in json.load(open(\"out.json\"))[\"results\"]}
assert r[\"mlx5_0/1\"][\"detail\"] == \"1 error counter not read at both samples (symbol_error), not judged\", r
assert r[\"mlx5_1/1\"][\"detail\"] is None, r
"
'

# "required but not run (--only, --skip)": neither was given
test_expect_success '--require of a check --passive leaves out names --passive' '
	one_line_error 2 check --sysfs-root ok --passive --require nic-bw &&
	grep -qx "penny check: check .nic-bw. is required but not run (--only, --skip, --passive)" err
'
# a second saved result for a check and target was never read, without a
# word; a saved count of 2.5 failed every run; a fraction of 0 made nic-bw
# and --baseline pass anything
test_expect_success 'a baseline with one check and target twice or a count of 2.5, fractions of 0: refused' '
	penny check --sysfs-root ok --only inventory --save-baseline base.json >out &&
	python3 -c "
import json
d = json.load(open(\"base.json\"))
d[\"results\"].append(dict(d[\"results\"][0]))
json.dump(d, open(\"dup.json\", \"w\"), indent=1)
" &&
	test_exit 2 penny check --sysfs-root ok --only inventory --baseline dup.json >out 2>err &&
	test $(wc -l <err) = 1 &&
	grep -q "^penny check: dup.json: line [0-9]*: a second result for the same check, target and node" err &&
	python3 -c "
import json
d = json.load(open(\"base.json\"))
r = [r for r in d[\"results\"] if r[\"check\"] == \"inventory\"][0]
r[\"measured\"] += 0.5
json.dump(d, open(\"half.json\", \"w\"), indent=1)
" &&
	test_exit 2 penny check --sysfs-root ok --only inventory --baseline half.json >out 2>err &&
	grep -q "^penny check: half.json: line [0-9]*: an inventory count must be a whole number" err &&
	for k in nic-bw.fraction job.baseline-fraction; do
		echo "$k = 0" >z.conf &&
		test_exit 2 penny check --sysfs-root ok --passive --config z.conf >out 2>err &&
		grep -q "z.conf:1: $k must be 1e-06..1, got 0" err || return 1
	done
'
test_done
