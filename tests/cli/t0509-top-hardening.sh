#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Hardening of penny top, round 12: a tree with more RDMA devices or netdevs
# than a counter set takes is refused in one line (as a device with more
# ports than 1024 is), not read into unbounded memory and time; a closed
# standard output or error is no number for the recording to take; a
# recording of names that are no UTF-8 replays.
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/helpers/top/top-lib.sh"
unset PENNY_SYSROOT

# devs ROOT CLASS FIRST LAST: empty device directories ROOT/sys/class/CLASS/dFIRST..dLAST
devs() { (cd "$1/sys/class/$2" && mkdir $(seq -f "d%g" "$3" "$4")); }

# 1025 device directories: every sample read (and compared) all of them
test_expect_success 'more than 1024 RDMA devices: refused in one line, exit 2; 1024 are read' '
	fake m --devices 1 >/dev/null && devs m infiniband 1 1024 &&
	one_line_error 2 top --sysfs-root m --once -i 0.1 &&
	grep -qx "penny top: /sys/class/infiniband has more than 1024 RDMA devices" err &&
	rmdir m/sys/class/infiniband/d1024 &&
	"$PENNY" top --sysfs-root m --once -i 0.1 --json >out.json &&
	grep -q "\"name\":\"mlx5_0/1\"" out.json
'

test_expect_success 'more than 1024 netdevs with -e: refused in one line, exit 2; without -e not read' '
	fake n --devices 1 >/dev/null && devs n net 1 1025 &&
	one_line_error 2 top --sysfs-root n --once -i 0.1 -e &&
	grep -qx "penny top: /sys/class/net has more than 1024 network devices" err &&
	"$PENNY" top --sysfs-root n --once -i 0.1 >out &&
	rmdir n/sys/class/net/d1025 &&
	"$PENNY" top --sysfs-root n --once -i 0.1 -e >out
'

# fd 1 closed: the recording opened as fd 1 and got the table (exit 0)
test_expect_success 'a closed stdout: one line, exit 2, the recording holds samples only' '
	"$PENNY" top --count 2 -i 0.1 --record r1 >&- 2>err
	test $? = 2 && test "$(cat err)" = "penny top: write error on standard output: Bad file descriptor" &&
	test -s r1 && test "$(grep -vc "^{\"penny_record\":1," r1)" = 0
'

# fds 1 and 2 closed: the tree took 1, the recording 2 and the error message
test_expect_success 'closed stdout and stderr: the error message is not written into the recording' '
	fake t --devices 1 >/dev/null &&
	"$PENNY" top --sysfs-root t --once -i 0.1 --record r2 --lid 1 >&- 2>&-
	test $? = 2 && test ! -s r2
'

# 200 bytes of 0xff read back as 600 (U+FFFD each): "host is not a string
# of at most 255 bytes" on every line, so the recording had no sample
test_expect_success 'a host and a device named in bytes that are no UTF-8: the recording replays' '
	fake x --devices 1 >/dev/null &&
	python3 -c "
import os
os.rename(b\"x/sys/class/infiniband/mlx5_0\", b\"x/sys/class/infiniband/\" + b\"\\xff\" * 40)
open(\"x/proc/sys/kernel/hostname\", \"wb\").write(b\"\\xff\" * 200)
" &&
	"$PENNY" top --sysfs-root x --count 2 -i 0.1 --record xr >/dev/null &&
	"$PENNY" top --replay xr --json >out.json 2>err && test ! -s err &&
	test "$(wc -l <out.json)" = 2 && json_valid out.json lines
'

test_done
