#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The fleet examples make install puts in place (etc/): the systemd units
# pass systemd-analyze verify and their command lines, as systemd expands
# them with the defaults, run and write what they promise (penny top ends
# with 0 on SIGTERM); the Slurm script drains a failing node with the
# failing checks as the reason (a stub scontrol records the exact
# arguments), never touches a node drained by someone else and resumes only
# the nodes it drained, drains on exit 2 (or only logs), bounds the check
# and kills it on its time-out or SIGTERM, reads the node when the check
# ends and leaves it alone when scontrol fails or hangs, writes reasons
# slurmdbd keeps whole, runs one check at a time (a health check skips, a
# Prolog waits) under a lock that neither penny nor its children hold, and
# leaves no temporary file behind (tests/lab/t0182-lab-slurm-check.sh
# does the same against a real slurmctld); the Containerfile builds the way
# `make setup` and `make install` say, with the libraries the binary links;
# the Kubernetes DaemonSet is a well-formed apps/v1 DaemonSet whose command
# penny accepts.
# cost: 17
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/helpers/trees.sh"

# the installed binary is built in INST, not in the build directory, where
# another test file installs at the same time
b=$BUILD
case $b in "$TOP"/*) b=${b#"$TOP"/} ;; esac
inst() { make -C "$TOP" --no-print-directory B="$b" INST="$TRASH/inst" install PREFIX="$PWD/r"; }
inst >make.log 2>&1 ||
	{ tail -20 make.log; echo "Bail out! make install"; exit 1; }
units=$PWD/r/lib/systemd/system

tree_pairs ok >/dev/null  # two GPUs, each beside its NIC
# appears FILE: wait up to 10 s for FILE to have something in it
appears() { timeout 10 sh -c 'until test -s "$1"; do sleep 0.05; done' sh "$1"; }

test_expect_success 'make install puts the units, the settings file and the examples in place' '
	for f in lib/systemd/system/penny-check.service lib/systemd/system/penny-check.timer \
		lib/systemd/system/penny-top.service etc/default/penny \
		libexec/penny/penny-slurm-check share/doc/penny/examples/Containerfile \
		share/doc/penny/examples/penny-top-daemonset.yaml; do
		test -f r/$f || { echo "no $f"; exit 1; }
	done &&
	test -x r/libexec/penny/penny-slurm-check && test -f r/lib/sysusers.d/penny.conf &&
	test -f r/lib/tmpfiles.d/penny.conf &&
	grep -qx "ExecStart=$PWD/r/bin/penny check .*" $units/penny-check.service &&
	grep -qx "EnvironmentFile=-$PWD/r/etc/default/penny" $units/penny-top.service &&
	! grep -n "@[A-Z]*@" $units/*
'
test_expect_success 'make install keeps a settings file the operator changed' '
	echo "PENNY_TOP_ARGS=--ethernet" >r/etc/default/penny &&
	inst >make.log 2>&1 &&
	test "$(cat r/etc/default/penny)" = "PENNY_TOP_ARGS=--ethernet" &&
	cp "$TOP/etc/default/penny" r/etc/default/penny
'

if ! command -v systemd-analyze >/dev/null; then
	test_skip "systemd-analyze verify" "no systemd-analyze"
else
	test_expect_success 'systemd-analyze verify: the units and their man pages' '
		MANPATH=$PWD/r/share/man systemd-analyze verify $units/penny-check.service \
			$units/penny-check.timer $units/penny-top.service >verify.log 2>&1 ||
			{ cat verify.log; exit 1; }
		test ! -s verify.log || { cat verify.log; false; }
	'
fi

# cmdline UNIT [VAR=VALUE...]: the unit's ExecStart as systemd runs it with
# the unit's Environment= defaults, then the settings file, then these
# (\$VAR: split into words, \${VAR}: one word), one argument a line
cmdline() {
	python3 - "$@" <<-"PY"
	import re, shlex, sys
	unit, over = sys.argv[1], sys.argv[2:]
	env, cmd = {}, None
	for line in open(unit):
	    line = line.strip()
	    if line.startswith("Environment="):
	        k, v = line[12:].split("=", 1); env[k] = v
	    elif line.startswith("EnvironmentFile=-"):
	        path = line[17:]
	        for l in open(path):
	            l = l.strip()
	            if l and not l.startswith("#"):
	                k, v = l.split("=", 1); env[k] = v
	    elif line.startswith("ExecStart="):
	        cmd = line[10:]
	for o in over:
	    k, v = o.split("=", 1); env[k] = v
	out = []
	for w in cmd.split():
	    m = re.fullmatch(r"\$\{(\w+)\}|\$(\w+)", w)
	    if m and m.group(1):
	        out.append(env.get(m.group(1), ""))
	    elif m:
	        out += env.get(m.group(2), "").split()
	    else:
	        out.append(w)
	print("\n".join(out))
	PY
}
test_expect_success 'penny-check.service: its command writes the textfile and the JUnit XML' '
	cmdline $units/penny-check.service PENNY_CHECK_PROM=$PWD/v/check.prom \
		PENNY_CHECK_JUNIT=$PWD/v/check.xml >args && cat args &&
	test "$(sed -n 1p args)" = "$PWD/r/bin/penny" &&
	mkdir v && mapfile -t a <args &&
	PENNY_SYSROOT=$PWD/ok "${a[@]}" >out 2>err; rc=$?; cat err;
	test "$rc" -le 1 && grep -q "^penny_check_exit_code $rc$" v/check.prom &&
	grep -q "<testsuites" v/check.xml && ! grep -q FAIL out
'
test_expect_success 'the units'"'"' default, check --passive, runs only the checks that read' '
	PENNY_SYSROOT=$PWD/ok "$PENNY" check --passive --json >p.json; rc=$?; test $rc -le 1 &&
	python3 -c "import json; d = json.load(open(\"p.json\"))
got = {r[\"check\"] for r in d[\"results\"]}
assert got and got <= {\"inventory\", \"pcie\", \"counters\", \"settings\", \"ranks\"}, got" &&
	test_exit 2 "$PENNY" check --passive --only pcie,allreduce 2>err && cat err &&
	grep -qx "penny check: --passive and --only pcie,allreduce: allreduce sends traffic" err &&
	test_exit 2 "$PENNY" check --passive --only nccl-path 2>err &&
	grep -q "nccl-path runs NCCL without --nccl-log" err &&
	test_exit 2 "$PENNY" check --passive --skip inventory,pcie,counters,settings,ranks 2>err &&
	grep -qx "penny check: no check left to run (--only, --skip, --passive)" err
'
if [ -x /usr/bin/time ]; then
	test_expect_success 'check --quick on the host engine (no GPU) stays under 100 MB' '
		/usr/bin/time -f "%M" -o rss "$PENNY" check --quick --only allreduce --sysfs-root "$PWD/ok" \
			--backend host >out 2>err; rc=$?; cat out rss; test $rc -le 1 &&
		grep -q "^allreduce .* PASS" out && test "$(tail -n 1 rss)" -lt 100000
	'
else
	test_skip "check --quick's memory" "no /usr/bin/time"
fi
test_expect_success 'penny-top.service: its command writes the textfile and ends with 0 on SIGTERM' '
	cmdline $units/penny-top.service PENNY_TOP_PROM=$PWD/v/top.prom PENNY_TOP_ARGS=-i0.2 >args &&
	cat args && mapfile -t a <args &&
	{ PENNY_SYSROOT=$PWD/ok "${a[@]}" & } && pid=$! &&
	appears v/top.prom; kill -TERM $pid; wait $pid; rc=$? &&
	test "$rc" -eq 0 && grep -q "^penny_port_up{device=\"mlx5_0\",port=\"1\"} 1$" v/top.prom
'
test_expect_success 'the default settings file is all comments and names only the units'"'"' variables' '
	! grep -v "^#" "$TOP/etc/default/penny" | grep -q . &&
	sed -n "s/^#\(PENNY_[A-Z_]*\)=.*/\1/p" "$TOP/etc/default/penny" | sort >vars &&
	cat "$TOP"/etc/systemd/*.in "$TOP/etc/slurm/penny-slurm-check" |
		grep -o "PENNY_[A-Z_]*" | sort -u >used &&
	comm -23 vars used >unused && test_cmp /dev/null unused
'

# ---- Slurm ----
slurm=$PWD/r/libexec/penny/penny-slurm-check
mkdir bin
# the stub scontrol: each call's arguments, one a line, then "--"; "show
# node" prints the node as the file show says (State=, Reason= lines), or
# fails as with its controller down when there is no show; every call
# hangs while the file hang is there
cat >bin/scontrol <<-EOF
	#!/bin/sh
	for a in "\$@"; do printf "%s\n" "\$a"; done >>"$PWD/calls"
	echo -- >>"$PWD/calls"
	if [ -e "$PWD/hang" ]; then exec sleep 30; fi
	if [ "\$1" = update ]; then
		if flock -n "$PWD/lock" true; then echo free; else echo held; fi >>"$PWD/lockstate"
	fi
	if [ "\$1" = show ]; then
		cat "$PWD/show" 2>/dev/null && exit 0
		echo "slurm_load_node error: Unable to contact slurm controller (connect failure)" >&2
		exit 1
	fi
	exit 0
	EOF
# a check that says FAKE_OUT and FAKE_ERR and exits FAKE_RC; meanwhile the
# node becomes FAKE_STATE with FAKE_REASON (as show_node) when set, and with
# FAKE_MARK a file named as its standard output plus .timeout is made (its
# name in mark); with FAKE_LOG it adds "start PID ARGS" and "end PID" to
# that file, and with FAKE_WAIT it waits (up to 20 s) between them for
# that file to be there (its pid in fake.started when it has started)
cat >bin/fake-penny <<-EOF
	#!/bin/sh
	if [ -n "\${FAKE_LOG:-}" ]; then echo "start \$\$ \$*" >>"\$FAKE_LOG"; fi
	if [ -n "\${FAKE_WAIT:-}" ]; then
		echo \$\$ >"$PWD/fake.started"
		i=0
		while [ ! -e "\$FAKE_WAIT" ] && [ \$i -lt 400 ]; do sleep 0.05; i=\$((i + 1)); done
	fi
	if [ -n "\${FAKE_STATE:-}" ]; then
		{ echo "NodeName=n01 Arch=x86_64 CoresPerSocket=1"
		  echo "   State=\$FAKE_STATE ThreadsPerCore=1 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A"
		  if [ -n "\${FAKE_REASON:-}" ]; then echo "   Reason=\$FAKE_REASON [root@2026-11-26T10:00:00]"; fi
		} >"$PWD/show"
	fi
	if [ -n "\${FAKE_MARK:-}" ]; then
		o=\$(readlink /proc/\$\$/fd/1) && : >"\$o.timeout" && echo "\$o.timeout" >"$PWD/mark"
	fi
	printf "%b" "\${FAKE_OUT:-}"
	printf "%b" "\${FAKE_ERR:-}" >&2
	if [ -n "\${FAKE_LOG:-}" ]; then echo "end \$\$" >>"\$FAKE_LOG"; fi
	exit \${FAKE_RC:-0}
	EOF
# a check that hangs: its arguments and pid in slow.args and slow.pid
cat >bin/slow-penny <<-EOF
	#!/bin/sh
	printf "%s\n" "\$@" >"$PWD/slow.args"
	echo \$\$ >"$PWD/slow.pid"
	exec sleep 60
	EOF
# a check that hangs as slow-penny does, after starting a child of its own
# that leaves its process group (a stray: its pid in stray.pid) and listing
# its open descriptors (in stray.fds)
cat >bin/stray-penny <<-EOF
	#!/bin/sh
	ls -l /proc/\$\$/fd/ >"$PWD/stray.fds"
	setsid sleep 60 </dev/null >/dev/null 2>&1 &
	echo \$! >"$PWD/stray.pid"
	echo \$\$ >"$PWD/slow.pid"
	exec sleep 60
	EOF
chmod +x bin/scontrol bin/slow-penny bin/fake-penny bin/stray-penny
cp -a ok bad && echo 8 >"$(readlink -f bad/sys/bus/pci/devices/0000:01:00.0)/current_link_width"
echo "PENNY_SLURM_CHECK_ARGS='--only pcie --sysfs-root $PWD/bad'" >bad.conf
echo "PENNY_SLURM_CHECK_ARGS='--only pcie --sysfs-root $PWD/ok'" >ok.conf
echo "PENNY_SLURM_CHECK_ARGS='--only nosuch'" >err.conf
# show_node STATE [REASON]: what the stub scontrol says of node n01
show_node() {
	{ echo "NodeName=n01 Arch=x86_64 CoresPerSocket=1"
	  echo "   State=$1 ThreadsPerCore=1 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A"
	  if [ -n "${2:-}" ]; then echo "   Reason=$2 [root@2026-11-26T10:00:00]"; fi; } >show
}
# hc CONF [ENV...]: the script as slurmd runs it, on node n01, its lock
# file and temporary directories here (lock, tmp/)
mkdir tmp
hc() {
	local conf=$1
	shift
	rm -f calls
	env -i PATH="$PWD/bin:$PATH" PENNY="$PENNY" PENNY_DEFAULTS="$PWD/$conf" \
		SLURMD_NODENAME=n01 PENNY_SLURM_LOCK="$PWD/lock" TMPDIR="$PWD/tmp" "$@" sh "$slurm"
}
# exec_hc CONF [ENV...]: hc in this process (its pid the script's)
exec_hc() {
	local conf=$1
	shift
	exec env -i PATH="$PWD/bin:$PATH" PENNY="$PENNY" PENNY_DEFAULTS="$PWD/$conf" \
		SLURMD_NODENAME=n01 PENNY_SLURM_LOCK="$PWD/lock" TMPDIR="$PWD/tmp" "$@" sh "$slurm"
}
# until_gone PID: wait up to 15 s for process PID to end
until_gone() { timeout 15 sh -c 'while kill -0 "$1" 2>/dev/null; do sleep 0.05; done' sh "$1"; }
fail_reason="Reason=penny check: pcie GPU0: downtrained width link at 0000:01:00.0 (above the device): Gen5 x8 of Gen5 x16 (and 1 more)"
if command -v shellcheck >/dev/null; then
	test_expect_success 'penny-slurm-check: shellcheck has nothing to say' '
		shellcheck "$TOP/etc/slurm/penny-slurm-check" "$slurm"
	'
else
	test_skip "shellcheck of penny-slurm-check" "no shellcheck"
fi
test_expect_success 'installed in libexec, naming the installed penny and settings file' '
	test -x "$slurm" && grep -qx "PENNY=\${PENNY:-$PWD/r/bin/penny}" "$slurm" &&
	grep -q "^defaults=\${PENNY_DEFAULTS:-$PWD/r/etc/default/penny}$" "$slurm"
'
test_expect_success 'HealthCheckProgram: a failing check drains the node, the check as the reason' '
	show_node IDLE && test_exit 1 hc bad.conf 2>err && cat err &&
	printf "%s\n" show node n01 -- update NodeName=n01 State=DRAIN "$fail_reason" -- >want &&
	test_cmp want calls
'
test_expect_success 'an admin'"'"'s drain is kept: a failing check does not replace its reason' '
	show_node IDLE+DRAIN "admin: replace DIMM B2" &&
	test_exit 1 hc bad.conf 2>err && cat err &&
	printf "%s\n" show node n01 -- >want && test_cmp want calls &&
	grep -q "left as it is: its reason is not penny.s: admin: replace DIMM B2" err
'
test_expect_success 'a passing check resumes a node penny drained, never one an admin drained' '
	show_node IDLE && hc ok.conf && printf "%s\n" show node n01 -- >want && test_cmp want calls &&
	show_node IDLE+DRAIN "penny check: pcie GPU0: x8" &&
	hc ok.conf && printf "%s\n" show node n01 -- update NodeName=n01 State=RESUME -- >want &&
	test_cmp want calls &&
	show_node IDLE+DRAIN "bad DIMM" &&
	hc ok.conf && printf "%s\n" show node n01 -- >want && test_cmp want calls
'
test_expect_success 'the node is updated under the lock (a waiting Prolog cannot drain between a pass and its resume)' '
	rm -f lockstate && show_node IDLE+DRAIN "penny check: pcie GPU0: x8" && hc ok.conf &&
	test_exit 1 hc bad.conf 2>/dev/null && printf "%s\n" held held >want && test_cmp want lockstate
'
test_expect_success 'a node penny drained that fails again gets the new reason' '
	show_node IDLE+DRAIN "penny check: old" && test_exit 1 hc bad.conf 2>/dev/null &&
	printf "%s\n" show node n01 -- update NodeName=n01 State=DRAIN "$fail_reason" -- >want &&
	test_cmp want calls
'
test_expect_success 'Prolog: drains and exits 1 (the job is requeued); never resumes' '
	show_node MIXED && test_exit 1 hc bad.conf SLURM_JOB_ID=42 2>/dev/null &&
	grep -qx State=DRAIN calls &&
	show_node MIXED+DRAIN "penny check: old" &&
	hc ok.conf SLURM_JOB_ID=42 && test ! -e calls
'
test_expect_success 'a check that cannot run (exit 2) drains, its error line the reason' '
	show_node IDLE && test_exit 1 hc err.conf 2>err && cat err &&
	grep "^Reason=" calls >reason && cat reason &&
	grep -q "^Reason=penny check: could not run (exit 2): penny check: --only: .*nosuch" reason
'
test_expect_success 'exit 2 after a table: the reason is the error, not the table'"'"'s header' '
	echo "PENNY_SLURM_CHECK_ARGS='"'"'--only ranks --sysfs-root $PWD/ok'"'"'" >empty.conf &&
	show_node IDLE && { hc empty.conf 2>err; test $? -eq 1; } && cat err &&
	grep "^Reason=" calls >reason && cat reason &&
	grep -q "^Reason=penny check: could not run (exit 2): " reason &&
	! grep -q "CHECK *NODE *TARGET" reason
'
# (its exit status and stderr shown whatever fails: it failed once in a
# fresh-clone run under load without a word, and passed on every rerun)
test_expect_success 'PENNY_SLURM_ON_ERROR=log: a check that cannot run is logged, the node left alone' '
	show_node IDLE && { hc err.conf PENNY_SLURM_ON_ERROR=log 2>err; rc=$?; } &&
	echo "exit $rc" && cat err && test $rc -eq 0 && test ! -e calls &&
	grep -q "could not run (exit 2): .*nosuch.*PENNY_SLURM_ON_ERROR=log" err
'
test_expect_success 'a hanging check: penny gets --timeout, is killed at the bound, the node drained' '
	show_node IDLE && s=$(date +%s) &&
	{ hc ok.conf PENNY=slow-penny PENNY_SLURM_TIMEOUT=1 2>err; rc=$?; } && cat err &&
	test $rc -eq 1 && test $(($(date +%s) - s)) -le 5 &&
	grep -qx -- --timeout slow.args && grep -A1 -x -- --timeout slow.args | tail -n 1 | grep -qx 1 &&
	! kill -0 "$(cat slow.pid)" 2>/dev/null &&
	grep -q "^Reason=penny check: timed out after 1 s (PENNY_SLURM_TIMEOUT)" calls
'
test_expect_success 'SIGTERM to the script kills its check at once; the node left alone' '
	show_node IDLE && rm -f slow.pid &&
	rm -f calls && { exec_hc ok.conf PENNY=slow-penny 2>err & } && pid=$! &&
	timeout 10 sh -c "until test -s slow.pid; do sleep 0.05; done" &&
	kill -TERM $pid && s=$(date +%s) && wait $pid; rc=$?; cat err &&
	test $rc -ne 0 && test $(($(date +%s) - s)) -le 3 &&
	! kill -0 "$(cat slow.pid)" 2>/dev/null && test ! -e calls && grep -q "stopped by SIGTERM" err
'
test_expect_success 'the default runs --passive; PENNY_SLURM_IDLE_ARGS only on an IDLE node' '
	: >none.conf && show_node MIXED &&
	{ hc none.conf PENNY=slow-penny PENNY_SLURM_TIMEOUT=1 PENNY_SLURM_IDLE_ARGS=--quick 2>/dev/null; true; } &&
	head -n 2 slow.args >got && printf "%s\n" check --passive >want && test_cmp want got &&
	show_node IDLE &&
	{ hc none.conf PENNY=slow-penny PENNY_SLURM_TIMEOUT=1 PENNY_SLURM_IDLE_ARGS=--quick 2>/dev/null; true; } &&
	head -n 2 slow.args >got && printf "%s\n" check --quick >want && test_cmp want got
'
test_expect_success 'a bad PENNY_SLURM_TIMEOUT or PENNY_SLURM_ON_ERROR is said, the default used' '
	show_node IDLE && hc ok.conf PENNY_SLURM_TIMEOUT=0 PENNY_SLURM_ON_ERROR=maybe 2>err && cat err &&
	grep -q "PENNY_SLURM_TIMEOUT=.0. is not a whole number of seconds from 1; 50 used" err &&
	grep -q "PENNY_SLURM_ON_ERROR=.maybe. is neither drain nor log; drain used" err
'
test_expect_success 'scontrol cannot say the node'"'"'s state (its controller down): the node is not changed' '
	rm -f show && test_exit 1 hc bad.conf 2>err && cat err &&
	printf "%s\n" show node n01 -- >want && test_cmp want calls &&
	grep -q "scontrol show node n01: slurm_load_node error: Unable to contact" err &&
	grep -q "n01 left as it is: its state is unknown" err
'
test_expect_success 'a hanging scontrol is bounded (5 s a call): the node then left alone' '
	show_node IDLE && touch hang && s=$(date +%s) &&
	{ hc bad.conf 2>err; rc=$?; rm -f hang; } && cat err &&
	test $rc -eq 1 && test $(($(date +%s) - s)) -le 15 &&
	grep -q "scontrol show node n01: no answer in 5 s" err && ! grep -qx update calls
'
test_expect_success 'the node is read when the check ends: an admin'"'"'s drain meanwhile is kept, not resumed' '
	: >none.conf && show_node IDLE &&
	test_exit 1 hc none.conf PENNY=fake-penny FAKE_RC=1 FAKE_OUT="pcie n01 GPU0 x8 x16 FAIL downtrained\n" \
		FAKE_STATE=IDLE+DRAIN FAKE_REASON="admin: reseat" 2>err && cat err &&
	! grep -qx update calls && grep -q "its reason is not penny.s: admin: reseat" err &&
	show_node IDLE+DRAIN "penny check: old" &&
	hc none.conf PENNY=fake-penny FAKE_STATE=IDLE+DRAIN FAKE_REASON="admin: RMA 1234" 2>err && cat err &&
	! grep -qx update calls
'
test_expect_success 'a time-out is the watchdog'"'"'s word, not a file anyone can make in /tmp' '
	show_node IDLE && rm -f mark && hc none.conf PENNY=fake-penny FAKE_MARK=1 2>err; rc=$?; cat err;
	test -s mark && rm -f "$(cat mark)" && test $rc -eq 0 &&
	printf "%s\n" show node n01 -- >want && test_cmp want calls
'
test_expect_success 'a drain reason is printable ASCII, 255 bytes at most (slurmdbd keeps a TINYTEXT)' '
	long=$(printf "%0400d" 0) && show_node IDLE &&
	test_exit 1 hc none.conf PENNY=fake-penny FAKE_RC=1 \
		FAKE_OUT="pcie n01 GPU0 x8 x16 FAIL caf\0303\0251 \0033[1m$long\n" 2>/dev/null &&
	sed -n "s/^Reason=//p" calls >reason && cat reason &&
	grep -q "^penny check: pcie GPU0: caf?? ?\[1m00" reason &&
	test "$(wc -c <reason)" -le 256 && ! LC_ALL=C grep -q "[^ -~]" reason &&
	test_exit 1 hc none.conf PENNY=fake-penny FAKE_RC=2 FAKE_ERR="penny check: \0303\0251\r$long\n" 2>/dev/null &&
	sed -n "s/^Reason=//p" calls >reason && cat reason &&
	grep -q "^penny check: could not run (exit 2): penny check: ???00" reason &&
	test "$(wc -c <reason)" -le 256 && ! LC_ALL=C grep -q "[^ -~]" reason
'
test_expect_success 'PENNY_SLURM_IDLE_ARGS: also on an idle node penny drained; a job started meanwhile voids a FAIL' '
	: >none.conf && show_node IDLE+DRAIN "penny check: nic-bw mlx5_0: 180 Gb/s" &&
	{ hc none.conf PENNY=slow-penny PENNY_SLURM_TIMEOUT=1 PENNY_SLURM_IDLE_ARGS=--quick 2>/dev/null; true; } &&
	head -n 2 slow.args >got && printf "%s\n" check --quick >want && test_cmp want got &&
	show_node IDLE && test_exit 1 hc none.conf PENNY=fake-penny PENNY_SLURM_IDLE_ARGS=--quick FAKE_RC=1 \
		FAKE_OUT="nic-bw n01 mlx5_0 180 400 FAIL low\n" FAKE_STATE=MIXED 2>err && cat err &&
	! grep -qx update calls && grep -q "left as it is: a job started on it during the check (now MIXED)" err
'

# One check at a time (a lock).  A first run holds it while its check
# (fake-penny FAKE_WAIT=release) waits for the file release: no test here
# rests on how long a run takes to start; each test ends that run whatever
# happens (touch release; wait), so that it holds nothing up after it.
test_expect_success 'one at a time: a health check that finds a check running skips it (exit 0, logged)' '
	: >none.conf && show_node IDLE && rm -f release fake.started plog &&
	{ exec_hc none.conf PENNY=fake-penny FAKE_WAIT=release FAKE_LOG=$PWD/plog 2>err1 & } && pid=$! &&
	appears fake.started &&
	within 10 hc none.conf PENNY=fake-penny FAKE_LOG=$PWD/plog 2>err; cat err;
	test ! -e calls; none=$?; touch release; wait $pid; rc1=$?; cat err1 plog;
	test "$WITHIN_RC" -eq 0 && test $none -eq 0 && test $rc1 -eq 0 &&
	grep -q "another penny-slurm-check is running (it holds $PWD/lock); this run skipped, n01 left as it is" err &&
	sed "s/ .*//" plog | tr "\n" " " >got && test "$(cat got)" = "start end " &&
	printf "%s\n" show node n01 -- >want && test_cmp want calls
'
test_expect_success 'one at a time: a Prolog waits for the running check, then checks in what is left of its bound' '
	show_node MIXED && rm -f release fake.started plog &&
	{ exec_hc none.conf PENNY=fake-penny FAKE_WAIT=release FAKE_LOG=$PWD/plog 2>err1 & } && pid=$! &&
	appears fake.started &&
	{ exec_hc none.conf PENNY=fake-penny FAKE_LOG=$PWD/plog SLURM_JOB_ID=42 PENNY_SLURM_TIMEOUT=20 2>err & } &&
	p2=$! && timeout 15 sh -c "until pgrep -x -P $p2 flock >/dev/null; do sleep 0.05; done";
	sleep 1.1; started=$(grep -c "^start " plog); touch release; wait $pid; rc1=$?; wait $p2; rc2=$?;
	cat err plog; test $rc1 -eq 0 && test $rc2 -eq 0 && test "$started" -eq 1 &&
	sed "s/ .*//" plog | tr "\n" " " >got && test "$(cat got)" = "start end start end " &&
	test "$(sed -n 1p plog | cut -d" " -f2)" = "$(sed -n 2p plog | cut -d" " -f2)" &&
	sed -n "s/.*waited \([0-9]*\) s for another penny-slurm-check (the lock .*); \([0-9]*\) s left for the check$/\1 \2/p" \
		err >w && read -r waited left <w && test "$waited" -ge 1 && test $((waited + left)) -eq 20 &&
	sed -n 3p plog | grep -q -- "--timeout $left$"
'
test_expect_success 'one at a time: a Prolog still locked out after half its bound: PENNY_SLURM_ON_ERROR' '
	show_node MIXED && rm -f release fake.started plog &&
	{ exec_hc none.conf PENNY=fake-penny FAKE_WAIT=release FAKE_LOG=$PWD/plog 2>err1 & } && pid=$! &&
	appears fake.started &&
	within 8 hc none.conf PENNY=fake-penny FAKE_LOG=$PWD/plog SLURM_JOB_ID=42 PENNY_SLURM_TIMEOUT=2 2>err;
	rc=$WITHIN_RC; cp calls drain.calls; cat err;
	within 8 hc none.conf PENNY=fake-penny FAKE_LOG=$PWD/plog SLURM_JOB_ID=42 PENNY_SLURM_TIMEOUT=2 \
		PENNY_SLURM_ON_ERROR=log 2>err2; rc2=$WITHIN_RC; test ! -e calls; none=$?; cat err2;
	touch release; wait $pid; cat plog;
	test "$rc" -eq 1 && test "$rc2" -eq 0 && test $none -eq 0 && test "$(grep -c "^start " plog)" -eq 1 &&
	why="penny check: could not run: another penny-slurm-check held the lock for 1 s (half of PENNY_SLURM_TIMEOUT)" &&
	printf "%s\n" show node n01 -- update NodeName=n01 State=DRAIN "Reason=$why" -- >want &&
	test_cmp want drain.calls && grep -q "still holds $PWD/lock after 1 s" err &&
	grep -q "could not run: another penny-slurm-check held the lock for 1 s .*PENNY_SLURM_ON_ERROR=log: n01 left as it is" err2
'
test_expect_success 'one at a time: the lock lasts as long as the check of a run killed with SIGKILL, no longer' '
	show_node IDLE && rm -f slow.pid stray.pid stray.fds && mkdir kt &&
	{ exec_hc none.conf PENNY=stray-penny PENNY_SLURM_TIMEOUT=4 TMPDIR=$PWD/kt 2>err1 & } && pid=$! &&
	appears slow.pid && appears stray.pid && kill -KILL $pid; wait $pid;
	! flock -n lock true; held=$?; ls kt >left; cat stray.fds;
	until_gone "$(cat slow.pid)"; gone=$?; s=${EPOCHREALTIME/[.,]/};
	timeout 10 flock lock true; free=$(((${EPOCHREALTIME/[.,]/} - s) / 1000));
	kill -0 "$(cat stray.pid)"; stray=$?; echo "lock free ${free} ms after the check ended";
	within 8 hc none.conf PENNY=fake-penny TMPDIR=$PWD/kt 2>err; cat err;
	kill "$(cat stray.pid)";
	test $held -eq 0 && test $gone -eq 0 && test $stray -eq 0 && test "$free" -le 2000 &&
	test "$WITHIN_RC" -eq 0 && printf "%s\n" show node n01 -- >want && test_cmp want calls &&
	grep -q "^penny-slurm-check\.$pid\.......$" left && test "$(ls kt)" = "" &&
	grep -q " 0 -> /dev/null$" stray.fds && ! grep -q "/lock$" stray.fds
'
test_expect_success 'temporary directories: another run'"'"'s kept while its pid lives; never a link followed' '
	show_node IDLE && mkdir -p victim/penny-slurm-check.1.keep && : >victim/file &&
	mkdir tmp/penny-slurm-check.$$.abcdef &&
	ln -s "$PWD/victim" tmp/penny-slurm-check.999999999.link &&
	hc none.conf PENNY=fake-penny 2>err && cat err &&
	test -d tmp/penny-slurm-check.$$.abcdef && test -L tmp/penny-slurm-check.999999999.link &&
	test -e victim/file && test -d victim/penny-slurm-check.1.keep &&
	rm -r tmp/penny-slurm-check.$$.abcdef tmp/penny-slurm-check.999999999.link && test "$(ls tmp)" = ""
'
test_expect_success 'the lock file: made 0600 in a 0700 directory; never a link, a FIFO, nor in a directory others write' '
	show_node IDLE && hc none.conf PENNY=fake-penny PENNY_SLURM_LOCK=$PWD/ld/lock 2>err && cat err && test ! -s err &&
	test "$(stat -c %a ld) $(stat -c %a ld/lock)" = "700 600" &&
	ln -s "$PWD/made-by-link" ld/link && mkfifo ld/fifo &&
	for f in link fifo; do
		within 5 hc none.conf PENNY=fake-penny PENNY_SLURM_LOCK=$PWD/ld/$f 2>err; cat err
		test "$WITHIN_RC" -eq 0 && printf "%s\n" show node n01 -- >want && test_cmp want calls &&
		grep -q "no lock: $PWD/ld/$f is not a regular file; this run may overlap another" err || exit 1
	done && test ! -e made-by-link &&
	chmod 0777 ld && hc none.conf PENNY=fake-penny PENNY_SLURM_LOCK=$PWD/ld/lock 2>err; rc=$?; cat err;
	chmod 0700 ld && test $rc -eq 0 && grep -q "no lock: others can write in $PWD/ld; this run may overlap another" err &&
	hc none.conf PENNY=fake-penny PENNY_SLURM_LOCK=$PWD/no/such/lock 2>err; rc=$?; cat err; test $rc -eq 0 &&
	grep -q "no lock: $PWD/no/such is not a directory of this user.s; this run may overlap another" err
'
test_expect_success 'every run of the script here removed its temporary directory' '
	ls tmp >left && test_cmp /dev/null left
'

# ---- container and Kubernetes ----
cf=$TOP/etc/container/Containerfile
# apt_pkgs: the packages of the apt-get install of the stage on stdin
apt_pkgs() {
	sed -n "/apt-get install/,/rm -rf/p" | tr " \\\\&" "\n\n\n" |
		grep -E "^[a-z0-9][a-z0-9.+-]+$" | grep -vxE "apt-get|install|rm" | sort
}
test_expect_success 'Containerfile: debian:12, the build packages of make setup, make install' '
	grep -c "^FROM debian:12\( AS build\)\?$" "$cf" | grep -qx 2 &&
	sed -n "s/^pkgs=(\(.*\))$/\1/p" "$TOP/tests/install-deps.sh" | tr " " "\n" | sort >want &&
	awk "/^FROM .* AS build/{b=1} /^FROM debian:12$/{b=0} b" "$cf" | apt_pkgs >got &&
	test_cmp want got &&
	grep -q "^RUN make clean && make -j\"\$(nproc)\" install PREFIX=/usr DESTDIR=/out$" "$cf" &&
	grep -qx "COPY --from=build /out/ /" "$cf" &&
	grep -qx "CMD \[\"topo\"\]" "$cf"
'
if ! command -v dpkg >/dev/null || ! command -v readelf >/dev/null; then
	test_skip "the image's libraries" "no dpkg or readelf"
else
	test_expect_success 'Containerfile: the image installs the package of every library penny links' '
		awk "/^FROM debian:12$/{r=1} r" "$cf" | apt_pkgs >have &&
		grep -qx ibverbs-providers have &&
		for l in $(readelf -d "$PENNY" | sed -n "s/.*Shared library: \[\(.*\)\]/\1/p"); do
			case $l in libc.so.*|libm.so.*|ld-linux*|lib[atu]san.so.*|libubsan.so.*) continue ;; esac
			dpkg -S "*/$l" | sed -n "1s/:.*//p"
		done | sort -u >need && test -s need &&
		comm -23 need have >missing && test_cmp /dev/null missing
	'
fi
test_expect_success '.dockerignore leaves the build out of the context' '
	for p in build "build-*" penny .git; do grep -qxF "$p" "$TOP/.dockerignore" || exit 1; done
'
if ! command -v docker >/dev/null || ! docker info >/dev/null 2>&1; then
	test_skip "docker build and run of the Containerfile" "no working docker daemon"
else
	test_expect_success 'docker build and run penny topo' '
		docker build -q -f "$cf" -t penny-test "$TOP" >id &&
		docker run --rm penny-test >topo.out && grep -q "Ports:" topo.out
	'
fi

ds=$PWD/r/share/doc/penny/examples/penny-top-daemonset.yaml
if ! python3 -c "import yaml" 2>/dev/null; then
	test_skip "the DaemonSet" "no python3 yaml"
else
	test_expect_success 'the DaemonSet: apps/v1, well-formed, its command accepted by penny' '
		python3 "$TOP/tests/helpers/k8s-daemonset.py" "$ds" >args &&
		sed "s@^/var/lib/penny/@$PWD/k/@; s@^--interval=.*@--interval=0.2@" args >kargs && mkdir k && mapfile -t a <kargs &&
		{ PENNY_SYSROOT=$PWD/ok "$PENNY" "${a[@]}" & } && pid=$! &&
		appears k/penny-top.prom; kill -TERM $pid; wait $pid; rc=$? &&
		test "$rc" -eq 0 && grep -q "^penny_port_up{" k/penny-top.prom
	'
fi
test_done
