#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# penny-slurm-check (etc/slurm/) against a real slurmctld and slurmd
# (tests/lab/lib-cluster.sh), read back with sinfo -R and scontrol show
# node: a failing check drains with the failing check as the reason, an
# admin's drain is never replaced nor resumed, a passing check resumes only
# what penny drained, a check that could not run (exit 2) and one past
# PENNY_SLURM_TIMEOUT drain with their cause; then slurmd runs it itself,
# as HealthCheckProgram (the settings file bound over /etc/default) and as
# Prolog, where a failure requeues the job held and keeps the node drained.
. "$(dirname "$0")/lib-cluster.sh"
cluster_private "$@"
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/lab/lib-cluster.sh"
. "$TOP/tests/helpers/trees.sh"

cluster_need ip nsenter setpriv munged slurmctld slurmd sbatch sinfo scontrol squeue
script=$TOP/etc/slurm/penny-slurm-check
# the settings file slurmd's runs read: /etc/default/penny in this run's
# private mount namespace (never bound over the machine's own)
[ -n "${LAB_PRIVATE_MOUNTS:-}" ] || cluster_skip "not in a private mount namespace"
mkdir -p dflt && cp -a /etc/default/. dflt/ 2>/dev/null
mount --bind "$PWD/dflt" /etc/default || cluster_skip "cannot bind a directory over /etc/default"
# slurmd runs it as HealthCheckProgram every 2 s and as Prolog; until the
# tests of slurmd's runs, the settings file makes those runs inert (their
# scontrol is true), so that they never race the runs by hand
CLUSTER_SLURM_CONF="HealthCheckProgram=$script
HealthCheckInterval=2
Prolog=$script"
tree_pairs ok >/dev/null
cp -a ok bad && echo 8 >"$(readlink -f bad/sys/bus/pci/devices/0000:01:00.0)/current_link_width"
# settings NAME LINES...: the settings file NAME, penny, its lock file
# (here: not the machine's /run/penny) and the check's options
settings() {
	local f=$1
	shift
	# each run that reads it says so in runs
	{ echo "PENNY=$PENNY"; echo "PENNY_SLURM_LOCK=$PWD/lock"; echo "echo run >>$PWD/runs"
	  printf "%s\n" "$@"; } >"$f"
}
# slurmd_runs N: wait up to 20 s for N more runs of slurmd's (nothing else
# runs the script meanwhile), the last of them started after this call
slurmd_runs() {
	local want=$(($(wc -l <runs 2>/dev/null || echo 0) + $1)) i
	for ((i = 0; i < 100; i++)); do
		[ "$(wc -l <runs 2>/dev/null || echo 0)" -ge "$want" ] && sleep 1 && return 0
		sleep 0.2
	done
	echo "slurmd ran the script $(wc -l <runs) times, not $want"
	return 1
}
settings ok.conf "PENNY_SLURM_CHECK_ARGS='--only pcie --sysfs-root $PWD/ok'"
settings bad.conf "PENNY_SLURM_CHECK_ARGS='--only pcie --sysfs-root $PWD/bad'"
settings err.conf "PENNY_SLURM_CHECK_ARGS='--config /nonexistent.conf --sysfs-root $PWD/ok'"
settings slow.conf "PENNY_SLURM_CHECK_ARGS='--only pcie --sysfs-root $PWD/ok'" PENNY=$PWD/slow-penny \
	PENNY_SLURM_TIMEOUT=2
printf '#!/bin/sh\nexec sleep 60\n' >slow-penny && chmod +x slow-penny
# (their lock their own: a run by hand never finds it held and skips)
settings inert.conf "PENNY_SLURM_CHECK_ARGS='--only pcie --sysfs-root $PWD/ok'" SCONTROL=true \
	"PENNY_SLURM_LOCK=$PWD/inert.lock"
cp inert.conf dflt/penny

cluster_net 1 || cluster_skip "cannot make the network namespaces"
cluster_munge
cluster_slurm
# hc CONF: the script as slurmd runs it on n1, by hand
hc() { on n1 env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin SLURMD_NODENAME=n1 PENNY_DEFAULTS="$PWD/$1" sh "$script"; }
reason() { on ctl sinfo -h -R -n n1 -o "%E"; }
state() { on ctl scontrol show node n1 | sed -n "s/^ *State=\([^ ]*\).*/\1/p"; }
# until_reason PATTERN: up to 15 s for the reason to match (slurmd's runs)
until_reason() {
	local i
	for ((i = 0; i < 75; i++)); do
		reason | grep -q "$1" && return 0
		sleep 0.2
	done
	reason
	return 1
}
test_expect_success 'a failing check drains n1: sinfo -R and scontrol show node say which check' '
	hc bad.conf 2>err; rc=$?; cat err; reason >r; cat r; state >s; cat s
	test $rc -eq 1 && grep -q "^penny check: pcie GPU0: downtrained width link at 0000:01:00.0" r &&
	grep -q DRAIN s
'
test_expect_success 'a passing check resumes the node penny drained' '
	hc ok.conf 2>err; rc=$?; cat err; state >s; cat s
	test $rc -eq 0 && ! grep -q DRAIN s && test -z "$(reason)"
'
test_expect_success 'an admin'"'"'s drain: a failing check keeps its reason, a passing one does not resume' '
	on ctl scontrol update NodeName=n1 State=DRAIN Reason="admin: replace DIMM B2" &&
	hc bad.conf 2>err; rc=$?; cat err; reason >r1
	hc ok.conf 2>>err; rc2=$?; reason >r2; state >s; cat r1 r2 s
	test $rc -eq 1 && test $rc2 -eq 0 && grep -qx "admin: replace DIMM B2" r1 &&
	grep -qx "admin: replace DIMM B2" r2 && grep -q DRAIN s &&
	on ctl scontrol update NodeName=n1 State=RESUME
'
test_expect_success 'a configuration penny cannot read (exit 2) drains, its error the reason' '
	hc err.conf 2>err; rc=$?; cat err; reason >r; cat r
	test $rc -eq 1 && grep -q "^penny check: could not run (exit 2): .*nonexistent.conf" r &&
	hc ok.conf 2>/dev/null && test -z "$(reason)"
'
test_expect_success 'a check past PENNY_SLURM_TIMEOUT is killed; the node drained saying so' '
	s=$(date +%s); hc slow.conf 2>err; rc=$?; e=$(($(date +%s) - s)); cat err; reason >r; cat r
	test $rc -eq 1 && test $e -le 6 && grep -q "^penny check: timed out after 2 s" r &&
	! pgrep -f "$PWD/slow-penny" && hc ok.conf 2>/dev/null && test -z "$(reason)"
'
test_expect_success 'slurmd'"'"'s HealthCheckProgram: drains when the check fails, resumes when it passes' '
	cp bad.conf dflt/penny && until_reason "^penny check: pcie GPU0: downtrained" &&
	cp ok.conf dflt/penny && for ((i = 0; i < 75; i++)); do test -z "$(reason)" && break; sleep 0.2; done &&
	test -z "$(reason)"
'
test_expect_success 'slurmd'"'"'s HealthCheckProgram leaves an admin'"'"'s drain alone' '
	on ctl scontrol update NodeName=n1 State=DRAIN Reason="admin: replace DIMM B2" &&
	cp bad.conf dflt/penny && slurmd_runs 2 && reason >r1 &&
	cp ok.conf dflt/penny && slurmd_runs 2 && reason >r2; cat r1 r2
	grep -qx "admin: replace DIMM B2" r1 && grep -qx "admin: replace DIMM B2" r2 &&
	on ctl scontrol update NodeName=n1 State=RESUME
'
# as Prolog only (SLURM_JOB_ID set) the check fails; the health checks stay inert
{ cat inert.conf; echo "[ -z \"\${SLURM_JOB_ID:-}\" ] || . $PWD/bad.conf; [ -z \"\${SLURM_JOB_ID:-}\" ] || SCONTROL=scontrol"; } >prolog.conf
test_expect_success 'Prolog: a failing check requeues the job held and keeps the node drained' '
	cp prolog.conf dflt/penny && on ctl scontrol update NodeName=n1 State=RESUME 2>/dev/null;
	printf "#!/bin/sh\ntrue\n" >job.sh &&
	job=$(on ctl sbatch --parsable -w n1 -o /dev/null job.sh) && echo "job $job" &&
	for ((i = 0; i < 100; i++)); do
		on ctl squeue -h -j "$job" -o "%T %r" >q 2>/dev/null
		grep -q "^PENDING .*[Hh]eld" q && break
		sleep 0.2
	done; cat q; reason >r; state >s; cat r s
	on ctl scancel "$job" 2>/dev/null
	grep -q "^PENDING .*[Hh]eld" q && grep -q "^penny check: pcie GPU0: downtrained" r && grep -q DRAIN s
'
test_done
