#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# make fuzz: build every harness tests/fuzz/fuzz_<name>.c with clang and
# libFuzzer (ASan + UBSan) into build-fuzz/, run each for FUZZ_SECONDS (or
# FUZZ_RUNS inputs) from its seed corpus tests/fuzz/corpus/<name>/, print
# libFuzzer's final numbers: executions, executions per second, coverage
# (cov: edges, ft: features of the last status line) and crashes.
#   make fuzz [FUZZ_SECONDS=180] [FUZZ_RUNS=N] [FUZZ="json plan"] [FUZZ_CC=clang]
# Found corpus units stay in build-fuzz/corpus/<name>/ (not committed);
# crash inputs go to build-fuzz/crashes/<name>/: fix the bug, then keep the
# input in tests/fuzz/crashes/<name>/ so that `make test` replays it.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top" || exit 2
: "${FUZZ_CC:=clang}" "${FUZZ_SECONDS:=180}" "${FUZZ_RUNS:=}" "${FUZZ:=}"
B=build-fuzz

probe=$(mktemp -d)
trap 'rm -rf "$probe"' EXIT
printf 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { return 0; }\n' >"$probe/p.c"
if ! "$FUZZ_CC" -fsanitize=fuzzer,address,undefined -o "$probe/p" "$probe/p.c" 2>/dev/null; then
	echo "make fuzz: '$FUZZ_CC' cannot build libFuzzer harnesses (-fsanitize=fuzzer: clang and its libclang_rt.fuzzer, tests/install-deps.sh test)" >&2
	exit 2
fi

mkdir -p $B
names=${FUZZ:-$(ls tests/fuzz/fuzz_*.c | sed 's|.*/fuzz_||; s|\.c$||')}
bins=
for n in $names; do
	[ -f "tests/fuzz/fuzz_$n.c" ] || { echo "make fuzz: no harness tests/fuzz/fuzz_$n.c" >&2; exit 2; }
	bins="$bins $B/tests/fuzz/fuzz_$n"
done
# shellcheck disable=SC2086
make --no-print-directory B=$B CC="$FUZZ_CC" OPT="-O1 -g -fno-omit-frame-pointer" \
	SAN="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined" \
	FUZZ_LINK=-fsanitize=fuzzer $bins >$B/build.log 2>&1 ||
	{ tail -20 $B/build.log; echo "make fuzz: build failed ($B/build.log)" >&2; exit 2; }

fail=0
printf '%-10s %12s %9s %7s %7s %8s %7s\n' harness execs exec/s cov ft seconds crashes
for n in $names; do
	corpus=$B/corpus/$n crashes=$B/crashes/$n log=$B/logs/$n.log
	mkdir -p "$corpus" "$crashes" "$B/logs"
	args=(-print_final_stats=1 -max_total_time="$FUZZ_SECONDS" -timeout=10 -rss_limit_mb=2048
	      -artifact_prefix="$crashes/")
	[ -n "$FUZZ_RUNS" ] && args+=(-runs="$FUZZ_RUNS")
	[ -f "tests/fuzz/$n.dict" ] && args+=(-dict="tests/fuzz/$n.dict")
	seeds=()
	[ -d "tests/fuzz/corpus/$n" ] && seeds+=("tests/fuzz/corpus/$n")
	before=$(ls "$crashes" | wc -l)
	start=$(date +%s)
	"$B/tests/fuzz/fuzz_$n" "${args[@]}" "$corpus" "${seeds[@]}" >"$log" 2>&1
	rc=$?
	secs=$(($(date +%s) - start))
	found=$(($(ls "$crashes" | wc -l) - before))
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
	rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
	last=$(grep -E '^#[0-9]+' "$log" | tail -1)
	cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
	ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
	printf '%-10s %12s %9s %7s %7s %8s %7s\n' "$n" "${execs:-?}" "${rate:-?}" "${cov:-?}" \
		"${ft:-?}" "$secs" "$found"
	if [ "$rc" -ne 0 ] || [ "$found" -gt 0 ]; then
		fail=1
		grep -E '^==[0-9]+==ERROR|^SUMMARY|runtime error|deadly signal' "$log" | head -3 | sed 's/^/    /'
		echo "    log: $log; inputs: $crashes/"
	fi
done
exit $fail
