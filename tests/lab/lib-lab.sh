# SPDX-License-Identifier: MIT
# Helpers for the lab tests (tests/lab/t*.sh), sourced after tests/lib.sh.
#   lab_require          skip the whole test file, loudly, when the lab cannot run
#   lab_vm ARGS...       tests/lab/vm.sh ARGS...
#   lab_tap VMOPTS... -- SCRIPT...
#                        run guest TAP scripts (tests/lab/guest/) one after
#                        another in one VM (guest/seq.sh) and fold their
#                        "ok"/"not ok" lines into this file's TAP stream, so
#                        many checks share one boot (a boot is 10-20 s)
LAB_VM=$TOP/tests/lab/vm.sh
LAB_GUEST_DIR=$TOP/tests/lab/guest

lab_vm() { bash "$LAB_VM" "$@"; }

lab_require() {
	local why
	why=$(bash "$LAB_VM" --check 2>&1) && return 0
	why=$(printf '%s\n' "$why" | tail -n 1)
	echo "# LOUD: lab skipped: ${why:-vm.sh --check failed}"
	test_skip lab "${why:-vm.sh --check failed}"
	test_done
	exit 0
}

lab_tap() {
	local opts=() log rc ok nok t0 secs
	while [ $# -gt 0 ] && [ "$1" != -- ]; do
		opts+=("$1")
		shift
	done
	shift
	log=$TRASH/lab-tap.$TEST_N.log
	t0=$(date +%s)
	bash "$LAB_VM" "${opts[@]}" -- \
		"LAB_TAP_BASE=$TEST_N bash $(printf '%q ' "$LAB_GUEST_DIR/seq.sh" "$@")" 2>&1 |
		tee "$log"
	rc=${PIPESTATUS[0]}
	secs=$(($(date +%s) - t0))
	ok=$(grep -cE '^ok [0-9]+' "$log")
	nok=$(grep -cE '^not ok [0-9]+' "$log")
	TEST_N=$((TEST_N + ok + nok))
	TEST_FAILED=$((TEST_FAILED + nok))
	echo "# lab: $* in one VM (${opts[*]}): $((ok + nok)) checks, ${secs} s"
	if [ "$rc" -ne 0 ] && [ "$nok" -eq 0 ] || [ $((ok + nok)) -eq 0 ]; then
		TEST_N=$((TEST_N + 1))
		TEST_FAILED=$((TEST_FAILED + 1))
		echo "not ok $TEST_N - $* in the VM exited with status $rc after $((ok + nok)) checks"
	fi
}
