#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The top level as a careless user, a script and a CI job use it: the words
# before a command, option parsing whatever the environment says, messages
# that stay one line whatever the words hold, and the cause of an output
# that cannot be written.
. "$(dirname "$0")/../lib.sh"

# top_error N ARGS...: penny ARGS... exits N, prints nothing, says one "penny: " line
top_error() {
	local want=$1 rc
	shift
	"$PENNY" "$@" </dev/null >out 2>err
	rc=$?
	if [ $rc -ne "$want" ] || [ -s out ] || [ "$(wc -l <err)" -ne 1 ] || ! grep -q "^penny: " err; then
		echo "penny $*: exit $rc (want $want), stdout $(wc -c <out) bytes, stderr:"
		cat err
		return 1
	fi
}
# complete_words WORD...: what the bash completion offers for the last word
complete_words() {
	PATH=$(dirname "$PENNY"):$PATH bash -c '
		. "$1/completions/penny.bash"; shift
		COMP_WORDS=(penny "$@"); COMP_CWORD=$#; _penny; echo "${COMPREPLY[*]}"' - "$TOP" "$@"
}
sweep="-b 8 -e 8 -n 1 -w 0"

test_expect_success '--help and -h before a command are help COMMAND; help help is the usage' '
	penny help topo >want &&
	penny --help topo >got && test_cmp want got &&
	penny -h topo >got && test_cmp want got &&
	penny --help >want && penny help help >got && test_cmp want got &&
	penny help --help >got && test_cmp want got
'
test_expect_success 'a word after --version or after help COMMAND: refused, not ignored' '
	top_error 2 --version --json &&
	grep -qx "penny: unexpected argument .--json. (see .penny --help.)" err &&
	top_error 2 version extra &&
	top_error 2 help topo --json && grep -q "unexpected argument .--json." err &&
	top_error 2 --help topo extra && grep -q "unexpected argument .extra." err &&
	penny --version | grep -qx "penny [0-9.]*"
'
test_expect_success 'a command option before the command says where it goes' '
	top_error 2 --json topo &&
	grep -qx "penny: unknown option .--json. (see .penny --help.; a command.s options follow it)" err
'
test_expect_success 'control characters and invalid UTF-8 in a word: shown as \xNN, one line' '
	q=$(printf "\047") &&
	top_error 2 "$(printf "\033[2Jx\377")" &&
	grep -qxF "penny: unknown command ${q}\\x1b[2Jx\\xff${q} (see ${q}penny --help${q})" err &&
	one_line_error 2 allreduce-test -b "$(printf "\033[31m")" &&
	grep -qF "invalid size ${q}\\x1b[31m${q}" err && ! grep -q "$(printf "\033")" err &&
	one_line_error 2 topo "$(printf -- "--\377\033")" && grep -qF "${q}--\\xff\\x1b${q}" err &&
	one_line_error 2 topo --sysfs-root "$(printf "a\nb")" && grep -qF "a\\x0ab" err
'
test_expect_success 'a very long word: one short line' '
	long=$(head -c 100000 /dev/zero | tr "\0" a) &&
	top_error 2 "$long" && test $(wc -c <err) -lt 200 &&
	top_error 2 help "$long" && test $(wc -c <err) -lt 200 &&
	one_line_error 2 topo "--$long" && test $(wc -c <err) -lt 200 &&
	one_line_error 2 allreduce-test -b "$long" && test $(wc -c <err) -lt 1100
'
# glibc's getopt stops at the first argument when POSIXLY_CORRECT is set:
# "coll-test allgather --np 2" was "unexpected argument --np" in such a job
test_expect_success 'POSIXLY_CORRECT: options after an argument are still options' '
	POSIXLY_CORRECT=1 penny coll-test allgather --np 2 $sweep >out &&
	grep -q "^# Rank outputs differ *: 0 OK" out &&
	POSIXLY_CORRECT=1 one_line_error 2 topo -- --json &&
	grep -qx "penny topo: unexpected argument .--json." err &&
	penny coll-test $sweep -- allgather --np 2 2>err; test $? = 2 &&
	grep -qx "penny coll-test: unexpected argument .--np." err
'
test_expect_success 'a number is decimal: +2 is refused as 0x2 is' '
	one_line_error 2 allreduce-test --np +2 && grep -q "invalid number .+2. for .--np." err &&
	one_line_error 2 allreduce-test --seed +1 && grep -q "invalid number .+1. for .--seed." err &&
	one_line_error 2 allreduce-test -f +2 && grep -q "invalid number .+2. for .-f." err &&
	one_line_error 2 allreduce-test --np 0x2 && penny allreduce-test --np 02 $sweep >out
'
test_expect_success 'a duration whose seconds overflow is no duration' '
	one_line_error 2 allreduce-test --timeout 1e308h &&
	grep -qx "penny allreduce-test: invalid duration .1e308h. for .--timeout." err
'
test_expect_success 'PENNY_DEBUG is --debug: a list that ends with a comma is refused' '
	PENNY_DEBUG=NET, one_line_error 2 topo &&
	grep -qx "penny topo: PENNY_DEBUG: debug list .NET,. ends with a comma" err &&
	one_line_error 2 topo --debug=NET, && PENNY_DEBUG=net,shm penny topo --json >out
'
# the cause, in the one line: the flush that fails at the exit, and the
# flushes of the run (a sweep's rows, top's samples) whose errno stdio forgot
test_expect_success 'stdout on /dev/full: the line says No space left on device' '
	if [ -w /dev/full ]; then
		for c in "--version" "help topo" "topo" "allreduce-test --np 2 $sweep" \
			"allreduce-test $sweep --json" "top --once -i 0.05"; do
			penny $c >/dev/full 2>err; rc=$?
			test $rc = 2 && test $(wc -l <err) = 1 &&
			grep -qE "^penny( [a-z-]+)?: write error on standard output: No space left on device$" err ||
				{ echo "$c: exit $rc"; cat err; exit 1; }
		done
	fi
'
test_expect_success 'stdout closed: Bad file descriptor; no reader (SIGPIPE ignored): Broken pipe' '
	penny --version >&- 2>err; test $? = 2 &&
	grep -qx "penny: write error on standard output: Bad file descriptor" err &&
	penny allreduce-test --np 2 $sweep >&- 2>err; test $? = 2 &&
	grep -qx "penny allreduce-test: write error on standard output: Bad file descriptor" err &&
	(trap "" PIPE; penny topo | (exec 0<&-; sleep 0.2); echo "${PIPESTATUS[0]}" >rc) 2>err &&
	test "$(cat rc)" = 2 && grep -qx "penny topo: write error on standard output: Broken pipe" err
'
test_expect_success 'a full non-blocking pipe (a CI runner may hand one): the line says so' '
	python3 - "$PENNY" <<-\PY
	import fcntl, os, subprocess, sys
	r, w = os.pipe()
	fcntl.fcntl(w, 1031, 4096)  # F_SETPIPE_SZ
	fcntl.fcntl(w, fcntl.F_SETFL, fcntl.fcntl(w, fcntl.F_GETFL) | os.O_NONBLOCK)
	sweep = ["-e", "8K", "-f", "1.05", "-n", "1", "-w", "0"]  # 15 KB of rows
	p = subprocess.Popen([sys.argv[1], "allreduce-test"] + sweep, stdout=w, stderr=subprocess.PIPE)
	os.close(w)
	err = p.communicate(timeout=60)[1].decode()
	want = "penny allreduce-test: write error on standard output: Resource temporarily unavailable\n"
	assert p.returncode == 2 and err == want, (p.returncode, err)
	PY
'
test_expect_success 'completion: help takes one command, --version none, --help is help' '
	test "$(complete_words help to)" = "topo top" &&
	test "$(complete_words --help to)" = "topo top" &&
	test "$(complete_words -h allr)" = "allreduce-test" &&
	test -z "$(complete_words help topo "")" &&
	test -z "$(complete_words --help topo --j)" &&
	test -z "$(complete_words --version "")" &&
	test "$(complete_words topo --js)" = "--json"
'
test_done
