#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Guest side of lab_tap: the guest TAP scripts named (tests/lab/guest/), one
# after another in this boot, their checks numbered on from LAB_TAP_BASE
# (each script works in a directory of its own: tests/lib.sh's TRASH).  A
# script that ends non-zero without a failed check gets one, naming it.
# Exit status: 0 when every script passed, else 1.
here=$(cd "$(dirname "$0")" && pwd)
n=${LAB_TAP_BASE:-0} rc=0
for s in "$@"; do
	read -r t0 _ </proc/uptime
	log=$(mktemp "${TMPDIR:-/tmp}/lab-seq.XXXXXX")
	LAB_TAP_BASE=$n bash "$here/$s" | tee "$log"
	st=${PIPESTATUS[0]}
	ok=$(grep -cE '^ok [0-9]+' "$log")
	nok=$(grep -cE '^not ok [0-9]+' "$log")
	rm -f "$log"
	n=$((n + ok + nok))
	read -r t1 _ </proc/uptime
	echo "# lab: $s: $((ok + nok)) checks, $(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.0f", b - a}') s in the guest"
	if [ "$st" -ne 0 ] && [ "$nok" -eq 0 ] || [ $((ok + nok)) -eq 0 ]; then
		n=$((n + 1))
		echo "not ok $n - $s exited with status $st after $((ok + nok)) checks"
	fi
	[ "$st" -eq 0 ] && [ "$nok" -eq 0 ] || rc=1
done
exit $rc
