#!/usr/bin/env bash
# Runs penny's tests and ends with one line "N passed, N failed, N skipped".
# Usage: tests/run.sh [unit|cli|lab|bench-smoke|FILE...]   (default: all)
# Every test program speaks TAP: "ok N - what", "not ok N - what",
# "ok N # skip why".  A program that exits non-zero without a "not ok"
# line counts as one failure.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
: "${BUILD:=$top/build}"
: "${PENNY:=$top/penny}"
export PENNY BUILD TOP="$top"
logdir=$BUILD/test-logs
mkdir -p "$logdir"

list=()
want=${*:-all}
for w in $want; do
	case $w in
	all) list+=("$BUILD"/tests/unit/t_* "$top"/tests/cli/t*.sh "$top"/tests/lab/t*.sh) ;;
	unit) list+=("$BUILD"/tests/unit/t_*) ;;
	cli) list+=("$top"/tests/cli/t*.sh) ;;
	lab) list+=("$top"/tests/lab/t*.sh) ;;
	*) list+=("$w") ;;
	esac
done

pass=0 fail=0 skip=0
failed_files=()
for t in "${list[@]}"; do
	[ -e "$t" ] || continue
	case $t in *.d|*.o) continue ;; esac
	name=${t#"$top"/}
	name=${name#"$BUILD"/}
	log=$logdir/$(echo "$name" | tr '/' '_').log
	start=$(date +%s)
	if [[ $t == *.sh ]]; then
		bash "$t" >"$log" 2>&1
	else
		"$t" >"$log" 2>&1
	fi
	rc=$?
	p=$(grep -cE '^ok [0-9]+' "$log" | head -1)
	s=$(grep -cE '^ok [0-9]+.*# (skip|SKIP)' "$log" | head -1)
	f=$(grep -cE '^not ok [0-9]+' "$log" | head -1)
	p=$((p - s))
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		f=1
		echo "not ok - $name exited with status $rc" >>"$log"
	fi
	pass=$((pass + p)) fail=$((fail + f)) skip=$((skip + s))
	secs=$(($(date +%s) - start))
	if [ "$f" -gt 0 ]; then
		printf 'FAIL %-44s %3d ok %3d failed (%ds)\n' "$name" "$p" "$f" "$secs"
		grep -E '^not ok' "$log" | head -20 | sed 's/^/     /'
		failed_files+=("$log")
	else
		printf 'PASS %-44s %3d ok%s (%ds)\n' "$name" "$p" \
			"$([ "$s" -gt 0 ] && echo " $s skipped")" "$secs"
	fi
	grep -E '^# (SKIP|LOUD)' "$log" | sed 's/^/     /'
done
for l in "${failed_files[@]}"; do
	echo "---- $l (last 30 lines)"
	tail -n 30 "$l"
done
echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
