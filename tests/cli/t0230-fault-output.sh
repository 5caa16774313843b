#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Output faults (hardening): every file penny writes goes through one helper
# (src/base/ofile.h, penny(1) OUTPUT FILES): a new name or a regular file is
# replaced by rename; "-" and /dev/stdout are written in place; a device,
# FIFO, directory or symbolic link is refused with one line, exit 2, and
# left as it was; outputs are opened before the work.
# top's small defects: UTIL "n/a%%", the live host in the header under
# --sysfs-root, a counter reset above 100 %, a stdout write error said twice.
# Names with invalid UTF-8 and control characters stay valid JSON and
# Prometheus text and never reach a terminal raw.
# cost: 10
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/helpers/trees.sh"
. "$TOP/tests/helpers/top/top-lib.sh"
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
	csv | plot)
		"${P[@]}" allreduce-test --np 2 -b 8 -e "$e" -f 2 -n "$n" -w 1 "--$1" "$2" ;;
	tune-out)	# the fastest of two algorithms
		"${P[@]}" allreduce-test --np 2 -b 8 -e "$e" -f 2 -n "$n" -w 1 -A one-shot,two-shot \
			--tune-out "$2" ;;
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

# check's outputs when the write fails only at the commit (a stdio buffer
# that fits, a file size limit of 0): one line, exit 2, the old file kept
# (before: a double free, exit 134, no table)
test_expect_success 'check: an output failing at its commit is one line, exit 2' '
	mkdir -p d &&
	for o in save-baseline:d/b.json junit:d/j.xml prom:d/p.prom; do
		echo old >"${o#*:}" &&
		( trap "" XFSZ; ulimit -f 0
		  penny check --passive --only settings "--${o%%:*}" "${o#*:}" 2>&1 >/dev/null
		  echo "rc $?" ) | cat >err &&
		test "$(wc -l <err)" -eq 2 && test "$(tail -n 1 err)" = "rc 2" &&
		grep -q "^penny check: .*${o#*:}.*" err && test "$(cat "${o#*:}")" = old ||
			{ echo "$o:"; cat err; exit 1; }
	done
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

test_expect_success 'the single-host rendezvous file is never written through a link' '
	rm -rf rdv && mkdir -p "rdv/penny-$(id -u)" && chmod 700 "rdv/penny-$(id -u)" &&
	echo secret >rdv/target &&
	ln -s ../../target "rdv/penny-$(id -u)/t0230job.root" &&
	TMPDIR=$PWD/rdv RANK=0 WORLD_SIZE=2 LOCAL_WORLD_SIZE=2 TORCHELASTIC_RUN_ID=t0230job \
		within 8 penny allreduce-test --timeout 2 -b 8 -e 8 >/dev/null 2>err; cat err &&
	test "$WITHIN_RC" -eq 2 && grep -q "waiting for ranks 1 to join" err &&
	test "$(cat rdv/target)" = secret && test ! -L "rdv/penny-$(id -u)/t0230job.root"
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

# exit 2, as an output file that cannot be written: 1 would be a failed check,
# and a health gate drains a node on it
test_expect_success 'a write error on standard output is reported once, exit 2' '
	if [ -w /dev/full ]; then
		test_exit 2 penny topo --sysfs-root T >/dev/full 2>err &&
		test "$(wc -l <err)" -eq 1 && grep -q "^penny topo: write error on standard output: No space left on device$" err &&
		test_exit 2 penny top --sysfs-root F --once -i 0.1 >/dev/full 2>err &&
		test "$(wc -l <err)" -eq 1 &&
		{ test -d ok || tree_pairs ok node-ok >/dev/null; } &&
		test_exit 2 penny check --sysfs-root ok --passive >/dev/full 2>err &&
		test "$(wc -l <err)" -eq 1 && grep -q "^penny check: write error on standard output: No space left on device$" err &&
		for w in $OUTPUTS; do
			run_out $w - >/dev/full 2>err
			test $? -eq 2 && test "$(wc -l <err)" -eq 1 && grep -q ".-.:.*No space left" err ||
				{ echo "$w:"; cat err; exit 1; }
		done
	fi
'
# ---- names that are not UTF-8, and control characters ----

# A copy of the ports machine whose host, device, rate, link layer, GID,
# parent and a hw_counter carry invalid UTF-8 and control characters.
BAD=$(printf 'mlx5_\377\033[2J')
tree_ports U >/dev/null
printf 'h\377\033[31mst\n' >U/proc/sys/kernel/hostname
mv U/sys/class/infiniband/mlx5_10 "U/sys/class/infiniband/$BAD"
M=$(readlink -f U/sys/class/infiniband/mlx5_0)
printf '400 Gb/sec (4X \376NDR)\n' >"$M/ports/1/rate"
printf 'InfiniBand\300\n' >"$M/ports/1/link_layer"
printf 'fe80:0000:0000:0000:0c42:a103:00fa:10\3770\n' >"$M/ports/1/gids/0"
printf 'veth\377\0330\n' >U/sys/devices/virtual/infiniband/rxe0/parent
echo 5 >"$M/ports/1/hw_counters/$(printf 'bad\377\033name')"

# strict UTF-8 and no ESC byte
utf8_file() { python3 -c 'import sys; sys.stdin.buffer.read().decode("utf-8", "strict")' <"$1"; }
no_esc() { ! grep -q "$(printf '\033')" "$1"; }

test_expect_success 'topo --json and --save: valid UTF-8 JSON, invalid bytes as U+FFFD' '
	penny topo --sysfs-root U --json >u.json && json_valid u.json &&
	python3 -c "
import json
d = json.load(open(\"u.json\", encoding=\"utf-8\"))
assert d[\"host\"] == \"h\ufffd\x1b[31mst\", d[\"host\"]
devs = [n[\"device\"] for n in d[\"nics\"]]
assert \"mlx5_\ufffd\x1b[2J\" in devs, devs
p = d[\"nics\"][0][\"ports\"][0]
assert p[\"link_layer\"] == \"InfiniBand\ufffd\" and \"\ufffd\" in p[\"gid\"], p
" &&
	penny topo --sysfs-root U --save u-saved.json >/dev/null && test_cmp u.json u-saved.json
'

test_expect_success 'ring-plan reads back the topo --save of such a machine' '
	penny ring-plan --topo-file u-saved.json --summary >out 2>err && test ! -s err &&
	grep -q "^ring plan: 1 node" out
'

test_expect_success 'topo text: control characters and invalid bytes shown as \xNN' '
	penny topo --sysfs-root U >u.txt && utf8_file u.txt && no_esc u.txt &&
	grep -qF "Host h\\xff\\x1b[31mst," u.txt && grep -qF "mlx5_\\xff\\x1b[2J" u.txt
'

test_expect_success 'top --json and --prom: valid UTF-8, the checker passes' '
	penny top --sysfs-root U --once -i 0.1 --json --prom u.prom >u.jsonl &&
	json_valid u.jsonl lines && utf8_file u.jsonl && utf8_file u.prom &&
	python3 "$TOPH/check_prom.py" u.prom \
		--expect "penny_port_info{device=\"mlx5_0\",link_layer=\"$(printf "InfiniBand\357\277\275")\"}=1" &&
	python3 -c "
import json
s = json.loads(open(\"u.jsonl\", encoding=\"utf-8\").readline())
assert s[\"host\"] == \"h\ufffd\x1b[31mst\", s[\"host\"]
assert \"mlx5_\ufffd\x1b[2J/1\" in [p[\"name\"] for p in s[\"ports\"]]
hw = s[\"ports\"][0][\"counters\"][\"hw_counters\"]
assert \"bad\ufffd\x1bname\" in hw, list(hw)
"
'

test_expect_success 'top text table: no raw control character, one line per port' '
	penny top --sysfs-root U --once -i 0.1 >u.txt && utf8_file u.txt && no_esc u.txt &&
	head -1 u.txt | grep -qF "# h\\xff\\x1b[31mst " && test "$(wc -l <u.txt)" -eq 8
'

test_expect_success 'error lines: control characters in a path are escaped, one line' '
	test_exit 2 penny topo --sysfs-root T --save "$(printf "x\033[2J\n/y")" 2>err &&
	test "$(wc -l <err)" -eq 1 && no_esc err && grep -qF "x\\x1b[2J\\x0a/y" err
'

if command -v tmux >/dev/null; then
	SOCK=penny-t0230-$$
	TM() { tmux -L "$SOCK" -f /dev/null "$@"; }
	trap 'TM kill-server 2>/dev/null; rm -rf "$TRASH"' EXIT
	test_expect_success 'the top screen shows such names with ? and keeps its layout' '
		printf "tab\there\nnext\n" >U/proc/sys/kernel/hostname &&
		TM new-session -d -x 100 -y 20 -s top \
			"env LANG=C.UTF-8 $PENNY top --sysfs-root $PWD/U -i 0.2; echo \$? >$PWD/rc" &&
		wait_for 10 sh -c "tmux -L $SOCK capture-pane -p -t top | grep -q \"^sort name\"" &&
		TM capture-pane -p -t top >screen &&
		head -1 screen | grep -q "^penny top  tab?here?next  " &&
		sed -n 2p screen | grep -q "^sort name" &&
		grep -q "^mlx5_??\[2J " screen &&
		TM send-keys -t top q && wait_for 5 test -s rc && test "$(cat rc)" = 0
	'
	TM kill-server 2>/dev/null
else
	test_skip "top screen with hostile names" "tmux is not installed"
fi

test_done
