#!/usr/bin/env bash
# tests/run.sh's order: the longest first, by the last run's seconds
# (build/test-logs/durations); on a fresh clone, where there are none, by
# the cost hint a file declares ("# cost: N" in a shell file's header,
# " * cost: N" in a unit binary's source), else lab, shell, unit.  Run on a
# copy of run.sh in a tree of its own, over test files that write down when
# they start, one at a time (JOBS=1); and a file marked "# spins:" never
# beside a lab file that boots a guest (JOBS=2).
. "$(dirname "$0")/../lib.sh"

T=$TRASH/top
mkdir -p "$T"/tests/cli "$T"/tests/unit "$T"/build/tests/unit
cp "$TOP/tests/run.sh" "$T"/tests/
export ORDER=$TRASH/order
# tfile PATH [HEADER...]: a test file that appends its name to $ORDER
tfile() {
	local f=$1
	shift
	{
		echo '#!/usr/bin/env bash'
		printf '%s\n' "$@"
		echo "echo ${f##*/} >>\"\$ORDER\""
		echo 'echo "ok 1 - ran"; echo 1..1'
	} >"$f"
	chmod +x "$f"
}
# order FILE...: run them through the copy, JOBS=1, without the durations of
# an earlier run (KEEP=1: with them); their start order on stdout
order() {
	: >"$ORDER"
	[ -n "${KEEP:-}" ] || rm -f "$T"/build/test-logs/durations
	JOBS=1 BUILD=$T/build bash "$T"/tests/run.sh "$@" >run.out 2>&1 ||
		{ cat run.out; return 1; }
	grep -q "^$# passed, 0 failed, 0 skipped$" run.out || { cat run.out; return 1; }
	cat "$ORDER"
}
# before A B: A started before B (in started)
before() {
	local a b
	a=$(grep -nx "$1" started | cut -d: -f1) && b=$(grep -nx "$2" started | cut -d: -f1) &&
		test -n "$a" && test -n "$b" && test "$a" -lt "$b" ||
		{ echo "$1 not before $2: $(tr '\n' ' ' <started)"; return 1; }
}

tfile "$T"/tests/cli/t1-plain.sh '# no hint'
tfile "$T"/tests/cli/t2-hinted.sh '# a heavy one' '# cost: 30'
tfile "$T"/tests/cli/t0a-small.sh '# cost: 5'
tfile "$T"/tests/cli/t4-bad.sh '# cost: lots'
tfile "$T"/tests/cli/t0b-late.sh "$(printf '#\n%.0s' $(seq 20))" '# cost: 90'
tfile "$T"/build/tests/unit/t_a
tfile "$T"/build/tests/unit/t_b
printf '/*\n * t_b: slow\n * cost: 9\n */\n' >"$T"/tests/unit/t_b.c
# one run over them all (in run.sh's own order: unit binaries, then shell
# files by name), without durations; the expected start order:
#   t2-hinted (30) t0b-late t1-plain t4-bad (20: no hint) t_b (9) t0a-small (5) t_a (1)
# (without hints: the shell files by name, then the unit binaries)
all=("$T"/build/tests/unit/t_a "$T"/build/tests/unit/t_b "$T"/tests/cli/t0a-small.sh
	"$T"/tests/cli/t0b-late.sh "$T"/tests/cli/t1-plain.sh "$T"/tests/cli/t2-hinted.sh
	"$T"/tests/cli/t4-bad.sh)
order "${all[@]}" >started
test_expect_success 'no durations: a file with a cost hint starts before files without one' '
	before t2-hinted.sh t1-plain.sh
'
test_expect_success 'no durations: hints by cost; a small hint after the default (20 s)' '
	before t2-hinted.sh t0a-small.sh && before t1-plain.sh t0a-small.sh
'
test_expect_success 'a hint that is no number, or past the header (20 lines), is no hint' '
	before t2-hinted.sh t0b-late.sh && before t0b-late.sh t1-plain.sh && before t4-bad.sh t_b
'
test_expect_success 'a unit binary takes its hint from its source, tests/unit/NAME.c' '
	before t_b t0a-small.sh && before t0a-small.sh t_a
'
test_expect_success 'the durations of a real run win over the hints' '
	grep -q "^tests/cli/t1-plain.sh [0-9]" "$T"/build/test-logs/durations &&
	printf "tests/cli/t1-plain.sh 50 1\ntests/cli/t2-hinted.sh 1 1\n" \
		>"$T"/build/test-logs/durations &&
	KEEP=1 order "$T"/tests/cli/t2-hinted.sh "$T"/tests/cli/t1-plain.sh >started &&
	before t1-plain.sh t2-hinted.sh
'
# a file marked "# spins:" (busy-waiting ranks) never runs beside a lab file
# that boots a guest (lab_tap, lab_vm), either way round; any other file does
# (JOBS=2): each writes when it starts and ends
mkdir -p "$T"/tests/lab
# sfile PATH SECONDS [HEADER...]
sfile() {
	local f=$1 s=$2
	shift 2
	{
		echo '#!/usr/bin/env bash'
		printf '%s\n' "$@"
		echo "echo ${f##*/} start >>\"\$ORDER\"; sleep $s; echo ${f##*/} end >>\"\$ORDER\""
		echo 'echo "ok 1 - ran"; echo 1..1'
	} >"$f"
	chmod +x "$f"
}
sfile "$T"/tests/lab/tv-guest.sh 2 '# cost: 100' ': lab_tap'
sfile "$T"/tests/cli/ts-spin.sh 0 '# cost: 50' '# spins: a test'
sfile "$T"/tests/cli/tp-plain.sh 0 '# cost: 40'
test_expect_success 'a "# spins:" file waits for a guest; a plain file runs beside it' '
	: >"$ORDER" && rm -f "$T"/build/test-logs/durations &&
	JOBS=2 BUILD=$T/build bash "$T"/tests/run.sh "$T"/tests/lab/tv-guest.sh \
		"$T"/tests/cli/ts-spin.sh "$T"/tests/cli/tp-plain.sh >run.out 2>&1 &&
	grep -q "^3 passed, 0 failed, 0 skipped$" run.out && cat "$ORDER" >started &&
	before "tv-guest.sh start" "tp-plain.sh start" && before "tp-plain.sh start" "tv-guest.sh end" &&
	before "tv-guest.sh end" "ts-spin.sh start"
'
test_done
