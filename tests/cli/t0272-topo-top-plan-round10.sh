#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Hardening, round 10 of penny top: a standard output that cannot be written
# ends a run without --count, a counter that rises past what 64 bits of
# bytes hold is no rate, and a hostile tree's port directories: one port
# under several names is one row, and a device with more ports than penny
# topo takes is refused, not read into unbounded memory.
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/helpers/top/top-lib.sh"
unset PENNY_SYSROOT

fake t --devices 2 >/dev/null

# the write error was found only at the exit: without --count top sampled
# (and wrote nothing) until it was killed
test_expect_success 'top without --count: a closed or full stdout ends it, exit 2, one line' '
	for out in "/dev/full:No space left on device" "&-:Bad file descriptor"; do
		eval "timeout 20 \"\$PENNY\" top --sysfs-root t -i 0.05 >${out%%:*} 2>err"
		rc=$? && test $rc = 2 || { echo "$out: exit $rc"; cat err; return 1; }
		test "$(cat err)" = "penny top: write error on standard output: ${out#*:}" || { cat err; return 1; }
	done &&
	timeout 20 "$PENNY" top --sysfs-root t -i 0.05 --json --by-rail >/dev/full 2>err
	test $? = 2 && test "$(wc -l <err)" = 1
'

# 2^62 + 1000 words are 4000 bytes modulo 2^64: a port without a line rate
# (nothing bounds its delta) showed 4000 B/s
test_expect_success 'a rise past 2^64 bytes on a port of unknown rate: no rate, jumped, totals saturate' '
	fake j --devices 1 >/dev/null &&
	rm "$(ib j mlx5_0 1)/rate" &&
	ctr_set j mlx5_0 1 port_xmit_data 0 &&
	{ "$PENNY" top --sysfs-root j --count 1 -i 1 --json --prom j.prom >s.json 2>err & } &&
	pid=$! && wait_for 10 test -s j.prom &&
	ctr_set j mlx5_0 1 port_xmit_data $(((1 << 62) + 1000)) &&
	ctr_set j mlx5_0 1 symbol_error 18446744073709551615 &&
	ctr_set j mlx5_0 1 port_rcv_errors 18446744073709551615 &&
	wait $pid && test ! -s err &&
	python3 - <<-\EOF
	import json
	p = json.loads(open("s.json").readline())["ports"][0]
	assert p["tx_bytes_per_sec"] is None and p["jumped"], p
	assert p["tx_bytes"] == 2**64 - 1, p["tx_bytes"]
	assert p["errors_total"] == 2**64 - 1 and p["errors"] == 2**64 - 1, p
	EOF
'

# "01", "+1" and "0x1" parse as port 1: each was one more row reading ports/1
test_expect_success 'port 1 under other names (01, +1, 0x1) is one row, not four' '
	fake d --devices 1 >/dev/null &&
	for n in 01 +1 0x1; do cp -r "$(ib d mlx5_0 1)" "$(ib d mlx5_0 "$n")" || return 1; done &&
	"$PENNY" top --sysfs-root d --once -i 0.1 --json >out.json &&
	python3 -c "
import json
s = json.loads(open(\"out.json\").readline())
assert [p[\"name\"] for p in s[\"ports\"]] == [\"mlx5_0/1\"], s[\"ports\"]
" &&
	"$PENNY" top --sysfs-root d --once -i 0.1 --by-rail >out &&
	"$PENNY" top --sysfs-root d --once -i 0.1 >out &&
	test "$(grep -c "^mlx5_0/1 " out)" = 1
'

# 1025 port directories: topo refuses more than 1024, top read every one
# (28 KB each: a tree of 100000 took 3 GB); the sampler's message is its own
test_expect_success 'a device with more than 1024 ports: top refuses it in one line, exit 2' '
	fake m --devices 1 >/dev/null &&
	python3 - <<-\EOF &&
	import os
	base = "m/sys/class/infiniband/mlx5_0/ports"
	for p in range(2, 1026):
	    d = "%s/%d" % (base, p)
	    os.makedirs(d + "/counters")
	    for f, v in (("state", "4: ACTIVE"), ("phys_state", "5: LinkUp"),
	                 ("rate", "100 Gb/sec (4X EDR)"), ("link_layer", "InfiniBand")):
	        open("%s/%s" % (d, f), "w").write(v + "\n")
	EOF
	one_line_error 2 top --sysfs-root m --once -i 0.1 &&
	grep -qx "penny top: RDMA device .mlx5_0. has more than 1024 ports" err &&
	rm -r m/sys/class/infiniband/mlx5_0/ports/1025 &&
	"$PENNY" top --sysfs-root m --once -i 0.1 --json >out.json &&
	test "$(python3 -c "import json; print(len(json.loads(open(\"out.json\").readline())[\"ports\"]))")" = 1024
'
test_done
