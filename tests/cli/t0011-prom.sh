#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# What penny writes for Prometheus passes `promtool check metrics` (the
# naming lint of Prometheus itself: counters in _total, base units in the
# name, no type in the name): penny top --prom of RDMA ports and netdevs,
# penny check --prom of a passing and of a failing node, with the check's
# last-run timestamp.  Skipped when promtool (Debian: prometheus) is absent.
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/helpers/trees.sh"
TOPH=$TOP/tests/helpers/top
. "$TOPH/top-lib.sh"

if ! command -v promtool >/dev/null; then
	test_skip "promtool check metrics" "no promtool (Debian package prometheus)"
	test_done
	exit 0
fi
# lint FILE: promtool has nothing to say
lint() { promtool check metrics <"$1" >lint.out 2>&1; rc=$?; cat lint.out; test $rc -eq 0 && test ! -s lint.out; }

tree_pairs ok >/dev/null  # two GPUs, each beside its NIC

test_expect_success 'top --prom of RDMA ports: promtool check metrics is clean' '
	fake p --devices 2 --ports 2 &&
	penny top --sysfs-root p --count 2 -i 0.1 --prom top.prom >/dev/null &&
	grep -q "^penny_port_stat_bytes_total{" top.prom && lint top.prom
'
test_expect_success 'top --prom with netdevs (-e): clean' '
	penny top --sysfs-root p --count 1 -i 0.1 -e --prom e.prom >/dev/null && lint e.prom
'
test_expect_success 'check --prom of a passing node: clean, with its last-run timestamp' '
	t0=$(date +%s) && penny check --sysfs-root ok --prom ok.prom >/dev/null &&
	lint ok.prom &&
	t=$(sed -n "s/^penny_check_last_run_timestamp_seconds \([0-9.]*\)$/\1/p" ok.prom) &&
	python3 -c "import sys; t, t0 = float(sys.argv[1]), int(sys.argv[2]); assert t0 <= t <= t0 + 60, (t, t0)" "$t" "$t0" &&
	grep -q "^# TYPE penny_check_last_run_timestamp_seconds gauge$" ok.prom
'
test_expect_success 'check --prom of a failing node and of a run that judged nothing: clean' '
	cp -a ok half && echo "200 Gb/sec (4X HDR)" >half/sys/class/infiniband/mlx5_0/ports/1/rate &&
	test_exit 1 penny check --sysfs-root half --prom half.prom >/dev/null && lint half.prom &&
	grep -q "^penny_check_measured_bytes_per_second{check=\"inventory\",node=\"n01\",target=\"mlx5_0/1\"} 25000000000$" half.prom &&
	test_exit 2 penny check --sysfs-root ok --only rails --prom none.prom >/dev/null 2>&1 &&
	grep -qx "penny_check_exit_code 2" none.prom && lint none.prom
'
test_done
