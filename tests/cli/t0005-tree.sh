#!/usr/bin/env bash
# The tree keeps its shape: `make run` builds only what it runs, nothing
# points outside the repository, test numbers are unique, fixtures are data
# and measured results live in results/.
. "$(dirname "$0")/../lib.sh"

test_expect_success 'make run builds the binary and the plugins, no tests' '
	make -C "$TOP" -n B="$PWD/b" run >plan.txt 2>&1 &&
	grep -q -- "-o $PWD/b/penny " plan.txt &&
	grep -q "penny-nccl.so" plan.txt &&
	! grep -E "tests/(unit|helpers|fuzz|preload|plugins)|t_plugin_emu" plan.txt
'
if ! git -C "$TOP" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
	test_skip "the source tree checks" "not a git checkout"
	test_done
	exit 0
fi

test_expect_success 'nothing in the repository points at a folder beside it (shared)' '
	git -C "$TOP" ls-files -z | (cd "$TOP" && xargs -0 grep -lI "\.\./shared" --) >hits 2>/dev/null;
	test ! -s hits || { cat hits; false; }
'
test_expect_success 'no two tests share a number' '
	(cd "$TOP/tests" && ls cli/t[0-9]*.sh lab/t[0-9]*.sh) | sed "s@.*/@@; s/-.*//" | sort | uniq -d >dups &&
	test ! -s dups || { cat dups; false; }
'
test_expect_success 'tests/fixtures holds data, not code' '
	git -C "$TOP" ls-files tests/fixtures |
		grep -E "\.(c|cu|cc|h|sh|py)$" >code;
	test ! -s code || { cat code; false; }
'
test_expect_success 'measured results live in results/, not under tests/' '
	git -C "$TOP" ls-files tests | grep -E "/results/" >res;
	test ! -s res || { cat res; false; }
'
test_done
