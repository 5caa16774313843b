#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Hardening, round 6: allreduce-test and coll-test on the host engine, their
# output modes and uneven jobs, fed what a careless user gives them.
. "$(dirname "$0")/../lib.sh"

test_expect_success 'allreduce-test --algo hierarchical on uneven nodes: an error, not exit 0 with no rows' '
	uneven_job --algo hierarchical -b 8 -e 64 -n 1 -w 0 &&
	test "$rcs" = "2 2 2" || { echo "exit codes: $rcs"; cat err.*; exit 1; }
	grep -q "Out of bounds" out.0 && { cat out.0; exit 1; }
	for r in 0 1 2; do
		test "$(wc -l <err.$r)" -eq 1 &&
		grep -q "^penny allreduce-test: rank $r: host --algo hierarchical: hierarchical needs the same number of ranks on every node$" err.$r ||
			{ cat err.$r; exit 1; }
	done
'

test_expect_success 'a skipped algorithm under -d all -o all is said once, not once per type and op' '
	uneven_job --algo hierarchical,ring -b 8 -e 64 -n 1 -w 0 -d all -o all &&
	test "$rcs" = "0 0 0" || { echo "exit codes: $rcs"; cat err.*; exit 1; }
	test "$(grep -c "skipping hierarchical" err.0)" -eq 1 || { sort err.0 | uniq -c; exit 1; }
	test ! -s err.1 && test ! -s err.2 &&
	test "$(grep -c "^# Out of bounds values : 0 OK" out.0)" -eq 50
'
test_done
