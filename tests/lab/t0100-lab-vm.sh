#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The lab harness itself: options, exit status, output streams, shares, the
# environment, the whole-VM timeout and the boot watchdog.
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/lab/lib-lab.sh"

test_expect_success 'vm.sh: bad option values are usage errors (exit 2, no boot)' '
	test_exit 2 lab_vm --pairs x true 2>err && grep -q "positive number" err &&
	test_exit 2 lab_vm --frob true 2>err && grep -q "unknown option" err &&
	test_exit 2 lab_vm 2>err && grep -q "usage:" err
'
test_expect_success 'PENNY_LAB_BOOT_TIMEOUT is range-checked (exit 2, no boot)' '
	PENNY_LAB_BOOT_TIMEOUT=0 test_exit 2 lab_vm --none -- true 2>err &&
	grep -q "PENNY_LAB_BOOT_TIMEOUT needs a positive number" err
'
lab_require

mkdir share
# One vCPU each: what is checked here is the harness, not a workload, and a
# boot with two cost 10 CPU s against 7.7 with one.
# The timeout's guest idles in "sleep" for most of its life: it boots first
# and runs beside the other three; its checks come last.  Its timeout (45 s)
# bounds this file's time; 30 s saved 15 s of the lab's chain, but a guest
# beside the suite's other files has taken 16 s and more to boot.
(
	t0=$(date +%s)
	lab_vm --none --smp 1 --timeout 45 -- "echo started; sleep 1000" >tmo.out 2>tmo.err
	echo "$? $(($(date +%s) - t0))" >tmo.rc
) &
tmo_pid=$!
t_start=$(date +%s)
test_expect_success 'one rxe device; exit status, stdout and stderr come back; shares are writable' '
	export LAB_T_MARK=mark-$$ &&
	{ lab_vm --smp 1 --rxe 1 --share "$TRASH/share" -- "ibv_devinfo -l; echo \$LAB_T_MARK >&2;
		echo \$LAB_DEVS > $TRASH/share/devs; exit 3" >out 2>err; rc=$?; } &&
	test "$rc" = 3 &&
	grep -q "^1 HCA found" out && grep -qx "[[:space:]]*rxe0" out &&
	grep -q "^mark-$$\$" err &&
	test "$(cat share/devs)" = rxe0
'
test_expect_success 'a reader that goes away stops the VM instead of hanging it' '
	t0=$(date +%s) &&
	{ lab_vm --none --smp 1 --timeout 120 -- "yes penny" | head -n 3 >out; } &&
	t=$(($(date +%s) - t0)) &&
	test "$(cat out | wc -l)" = 3 && test "$t" -lt 60
'
test_expect_success 'a guest that does not reach the command is booted once more, then fails (exit 125)' '
	t0=$(date +%s) &&
	{ PENNY_LAB_BOOT_TIMEOUT=2 lab_vm --none --smp 1 --timeout 100 -- "echo reached" >out 2>err
		rc=$?; } &&
	t=$(($(date +%s) - t0)) && cat err &&
	test "$rc" = 125 && test ! -s out && test "$t" -lt 40 &&
	grep -q "LOUD: lab: the guest did not reach the command in 2 s; booting it again" err &&
	grep -q "^vm.sh: the guest did not reach the command in 2 s; console tail:" err
'
echo "# lab: four runs in $(($(date +%s) - t_start)) s beside the timeout's"
wait $tmo_pid
test_expect_success 'the whole-VM timeout stops a hanging guest (exit 124)' '
	read -r rc t <tmo.rc &&
	echo "# lab: timeout run took ${t} s (rc $rc)" >&3 && cat tmo.out tmo.err &&
	test "$rc" = 124 && grep -q started tmo.out &&
	grep -q "timed out after 45s; the command had run since boot" tmo.err &&
	test "$t" -lt 90
' 3>&1
test_done
