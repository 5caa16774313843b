#!/usr/bin/env bash
# Dispatch, exit codes and option errors of the penny binary.
. "$(dirname "$0")/../lib.sh"

test_expect_success 'penny --version prints the version' '
	penny --version | grep -E "^penny [0-9]+\.[0-9]+\.[0-9]+$"
'
test_expect_success 'no arguments: usage on stderr, exit 2' '
	test_exit 2 penny 2>err && grep -q "^usage: penny" err
'
test_expect_success 'unknown command: one line, exit 2' '
	test_exit 2 penny frobnicate 2>err &&
	test "$(wc -l <err)" -eq 1 && grep -q "unknown command .frobnicate." err
'
test_expect_success 'prefix of a command is not accepted (exact names)' '
	test_exit 2 penny allred 2>err && grep -q "unknown command" err
'
test_expect_success 'unknown option: one line, exit 2' '
	test_exit 2 penny allreduce-test --no-such-option 2>err &&
	test "$(wc -l <err)" -eq 1 && grep -q "unknown option .--no-such-option." err
'
test_expect_success 'unknown top-level option: one line, exit 2' '
	test_exit 2 penny --frob 2>err && test "$(wc -l <err)" -eq 1
'
test_expect_success 'missing option value: one line, exit 2' '
	test_exit 2 penny allreduce-test --np 2>err && test "$(wc -l <err)" -eq 1 &&
	grep -q "needs a value" err
'
test_expect_success 'bad number: one line, exit 2' '
	test_exit 2 penny allreduce-test --np abc 2>err && test "$(wc -l <err)" -eq 1 &&
	grep -q "invalid number .abc." err
'
test_expect_success 'bad debug subsystem: one line, exit 2' '
	test_exit 2 penny allreduce-test --debug=NOPE 2>err && test "$(wc -l <err)" -eq 1 &&
	grep -q "NOPE" err
'
test_expect_success 'help X and X --help print the same' '
	penny help allreduce-test >a && penny allreduce-test --help >b && test_cmp a b
'
test_expect_success 'help for every command lists common options' '
	for c in $(penny __complete); do
		[ "$c" = help ] && continue
		penny help $c | grep -q -- "--json" || { echo "no --json in $c"; exit 1; }
	done
'
test_expect_success 'unknown command after help: exit 2' '
	test_exit 2 penny help frobnicate 2>err && grep -q frobnicate err
'
test_expect_success 'a bad sysfs root is one clear line, exit 2' '
	test_exit 2 penny allreduce-test --sysfs-root /nonexistent/dir 2>err &&
	test "$(wc -l <err)" -eq 1 && grep -q "/nonexistent/dir" err
'
test_expect_success 'write error on stdout is reported' '
	if [ -w /dev/full ]; then
		! penny --help >/dev/full 2>/dev/null || exit 1
		! penny help allreduce-test >/dev/full 2>/dev/null
	fi
'
test_done
