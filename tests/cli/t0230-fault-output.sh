#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Output faults (hardening): every file penny writes goes through one helper
# (src/ofile.h, penny(1) OUTPUT FILES): a new name or a regular file is
# replaced by rename; "-" and /dev/stdout are written in place; a device,
# FIFO, directory or symbolic link is refused with one line, exit 2, and
# left as it was; outputs are opened before the work.
# top's small defects: UTIL "n/a%%", the live host in the header under
# --sysfs-root, a counter reset above 100 %, a stdout write error said twice.
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/fixtures/sysfs/trees.sh"
. "$TOP/tests/fixtures/top/top-lib.sh"
unset PENNY_SYSROOT PENNY_DEBUG PENNY_TUNE_FILE
umask 022

tree_ports T >/dev/null
fake F --devices 2

# run_out WHAT PATH [long]: the command WHAT writing its output to PATH; with
# "long", work that takes many seconds once the output is accepted (a hang,
# as on a FIFO, ends after 30 s)
run_out() {
	local i=0.1 e=64 n=2 P=(timeout -k 2 30 "$PENNY")
	[ "${3:-}" = long ] && i=8 e=256M n=50
	case $1 in
	prom) "${P[@]}" top --sysfs-root F --once -i "$i" --prom "$2" ;;
	save) "${P[@]}" topo --sysfs-root T --save "$2" ;;
	csv | plot | tune-out)
		"${P[@]}" allreduce-test --np 2 -b 8 -e "$e" -f 2 -n "$n" -w 1 "--$1" "$2" ;;
	graph) "${P[@]}" ring-plan --nodes 2 --summary --nccl-graph "$2" ;;
	esac
}
OUTPUTS="prom save csv plot tune-out graph"

# what every output starts with, for the in-place cases
marker() {
	case $1 in
	prom) echo "# HELP penny_port_info" ;;
	save) echo '{"version":1' ;;
	csv) echo "algo,size,count" ;;
	plot) echo "<svg" ;;
	tune-out) echo "# penny tuning table" ;;
	graph) echo "<graphs" ;;
	esac
}

# refused WHAT PATH PATTERN: exit 2 quickly (before the long work), one line
# on stderr naming PATH and matching PATTERN, nothing left in PATH's directory
refused() {
	local d before after
	d=$(dirname "$2")
	before=$(ls -A "$d" 2>/dev/null | sort | tr '\n' ' ')
	within 6 run_out "$1" "$2" long >out 2>err </dev/null || return 1
	[ "$WITHIN_RC" -eq 2 ] || { echo "$1 $2: exit $WITHIN_RC"; cat err; return 1; }
	[ "$(wc -l <err)" -eq 1 ] || { echo "$1 $2:"; cat err; return 1; }
	grep -qF -- "$2" err || { echo "$1: the line does not name $2:"; cat err; return 1; }
	grep -q -- "$3" err || { echo "$1: want '$3':"; cat err; return 1; }
	! grep -q "failed or was killed" err || { cat err; return 1; }
	after=$(ls -A "$d" 2>/dev/null | sort | tr '\n' ' ')
	[ "$before" = "$after" ] || { echo "$1: left in $d: $before -> $after"; return 1; }
}

is_null_node() { test "$(stat -c '%F %t:%T' "$1")" = "character special file 1:3"; }

for w in $OUTPUTS; do
	test_expect_success "$w: a character device is refused and left as it is" '
		rm -rf d && mkdir d && mknod d/null c 1 3 &&
		refused '"$w"' "$PWD/d/null" "character device" && is_null_node d/null
	'
	test_expect_success "$w: a FIFO is refused at once (no hang), left as it is" '
		rm -rf d && mkdir d && mkfifo d/fifo &&
		refused '"$w"' "$PWD/d/fifo" "a FIFO" && test -p d/fifo
	'
	test_expect_success "$w: a directory is refused" '
		rm -rf d && mkdir -p d/dir &&
		refused '"$w"' "$PWD/d/dir" "a directory" && test -d d/dir
	'
	test_expect_success "$w: a symbolic link to a regular file is neither replaced nor followed" '
		rm -rf d && mkdir d && echo keep >d/target && ln -s target d/link &&
		refused '"$w"' "$PWD/d/link" "symbolic link" &&
		test -L d/link && test "$(cat d/target)" = keep
	'
	test_expect_success "$w: a symbolic link to a device is refused, the device untouched" '
		rm -rf d && mkdir d && mknod d/null c 1 3 && ln -s null d/link &&
		refused '"$w"' "$PWD/d/link" "symbolic link" && test -L d/link && is_null_node d/null
	'
	test_expect_success "$w: a missing or unusable directory fails before the work" '
		refused '"$w"' /proc/nope/x "No such file" &&
		echo file >plain && refused '"$w"' "$PWD/plain/x" "Not a directory"
	'
	test_expect_success "$w: /dev/stdout and - are written in place, /dev/stdout stays a link" '
		run_out '"$w"' /dev/stdout >out 2>err && test ! -s err &&
		grep -qF -- "$(marker '"$w"')" out && test -L /dev/stdout &&
		run_out '"$w"' - >out 2>err && test ! -s err && grep -qF -- "$(marker '"$w"')" out &&
		test ! -e ./-
	'
	test_expect_success "$w: a new name, then a regular file replaced keeping its mode" '
		rm -rf d && mkdir d && run_out '"$w"' "$PWD/d/o" >/dev/null 2>err && test ! -s err &&
		grep -qF -- "$(marker '"$w"')" d/o && test "$(stat -c %a d/o)" = 644 &&
		chmod 600 d/o && rm -f old && ln d/o old &&
		run_out '"$w"' "$PWD/d/o" >/dev/null 2>err && test ! -s err &&
		! test d/o -ef old && test "$(stat -c %a d/o)" = 600 &&
		test "$(ls -A d)" = o
	'
done

test_expect_success 'a write error on an output is one line, exit 2, the old file kept' '
	rm -rf d && mkdir d && echo old >d/t.json &&
	( trap "" XFSZ; ulimit -f 1; penny topo --sysfs-root T --save d/t.json >/dev/null 2>err )
	test $? -eq 2 && test "$(wc -l <err)" -eq 1 && grep -q "write error on .d/t.json." err &&
	test "$(cat d/t.json)" = old && test "$(ls -A d)" = t.json
'

test_expect_success 'allreduce-test: an unwritable output fails every rank at once, one line' '
	for np in 1 3; do
		within 6 penny allreduce-test --np $np -b 8 -e 256M -f 2 -n 50 \
			--csv /proc/nope/r.csv >out 2>err
		test "$WITHIN_RC" -eq 2 || { echo "np $np: exit $WITHIN_RC"; cat err; exit 1; }
		test "$(wc -l <err)" -eq 1 && grep -q "^penny allreduce-test: --csv: cannot write ./proc/nope/r.csv." err ||
			{ cat err; exit 1; }
	done
'

test_expect_success 'ring-plan: a host name in %h cannot lead the file elsewhere' '
	rm -rf d && mkdir -p d/a &&
	test_exit 2 penny ring-plan --nodes 2 --hosts "a/b,c" --summary --nccl-graph "d/g-%h.xml" \
		>/dev/null 2>err && test "$(wc -l <err)" -eq 1 && grep -q "host name .a/b." err &&
	test -z "$(ls -A d/a)" && test "$(ls -A d)" = a &&
	penny ring-plan --nodes 2 --summary --nccl-graph "d/g-%h-%n.xml" >/dev/null &&
	test "$(ls d | tr "\n" " ")" = "a g-node01-0.xml g-node02-1.xml "
'

# ---- top's small defects ----

test_expect_success 'top: UTIL of a port without a rate is n/a, not n/a%%' '
	penny top --sysfs-root T --once -i 0.1 >out &&
	grep -q "^mlx5_1/1  *DOWN  *10G  *n/a  *n/a  *n/a  " out && ! grep -q "%%" out
'

test_expect_success 'top: under --sysfs-root the header names the tree host, not this one' '
	penny top --sysfs-root T --once -i 0.1 >out && head -1 out | grep -q "^# node-ports  " &&
	penny top --sysfs-root T --once -i 0.1 --json >out.json &&
	grep -q "\"host\":\"node-ports\"" out.json &&
	mkdir -p bare/sys && penny top --sysfs-root bare --once -i 0.1 >out &&
	head -1 out | grep -q "^# bare  "
'

test_expect_success 'top: a counter reset above the line rate shows no rate, never > 100 %' '
	fake r --devices 1 &&
	ctr_set r mlx5_0 1 port_xmit_data 5000000000000 &&
	{ "$PENNY" top --sysfs-root r --count 1 -i 1.5 --json --prom r.prom >r.json 2>err & } &&
	pid=$! && wait_for 10 test -s r.prom &&
	ctr_set r mlx5_0 1 port_xmit_data 4000000000000 &&
	wait $pid && test ! -s err &&
	python3 -c "
import json
p = json.loads(open(\"r.json\").readline())[\"ports\"][0]
assert p[\"reset\"], p
assert p[\"tx_bytes_per_sec\"] is None, p[\"tx_bytes_per_sec\"]
assert p[\"utilization\"] is not None and p[\"utilization\"] <= 1, p[\"utilization\"]
assert p[\"counters\"][\"counters\"][\"port_xmit_data\"][\"delta\"] is None, p
"
'

test_expect_success 'a write error on standard output is reported once' '
	if [ -w /dev/full ]; then
		test_exit 1 penny topo --sysfs-root T >/dev/full 2>err &&
		test "$(wc -l <err)" -eq 1 && grep -q "^penny topo: write error on standard output$" err &&
		test_exit 1 penny top --sysfs-root F --once -i 0.1 >/dev/full 2>err &&
		test "$(wc -l <err)" -eq 1
	fi
'
test_done
