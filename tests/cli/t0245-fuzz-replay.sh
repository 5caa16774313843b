#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Every fuzz harness (tests/fuzz/fuzz_<name>.c) replays its seed corpus
# tests/fuzz/corpus/<name>/ and every crash input kept in
# tests/fuzz/crashes/<name>/ on this build (the replay driver
# build/tests/fuzz/replay_<name>: no libFuzzer; under `make asan` with the
# sanitizers): a crash or a sanitizer report fails the test.  `make fuzz`
# runs the harnesses with libFuzzer (tests/README.md).
. "$(dirname "$0")/../lib.sh"

F=$TOP/tests/fuzz
n=0
for src in "$F"/fuzz_*.c; do
	[ -e "$src" ] || continue
	name=${src##*/fuzz_}
	name=${name%.c}
	n=$((n + 1))
	test_expect_success "fuzz $name: corpus and crash inputs replay cleanly" '
		bin=$BUILD/tests/fuzz/replay_$name &&
		test -x "$bin" &&
		test -n "$(ls -A "$F/corpus/$name" 2>/dev/null)" || { echo "no corpus or replay for $name"; exit 1; }
		dirs=("$F/corpus/$name") &&
		{ [ ! -d "$F/crashes/$name" ] || dirs+=("$F/crashes/$name"); } &&
		"$bin" "${dirs[@]}" >out 2>err || { tail -n 30 err; exit 1; }
		grep -q "^replayed [1-9][0-9]* inputs$" out
	'
done
test_expect_success 'there are harnesses' 'test "$n" -ge 8'
test_done
