#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# penny top under hostile names and damage: a host and device names with
# control characters, U+FFFE/U+FFFF and invalid UTF-8 give a well-formed SVG,
# valid JSON and Prometheus, and a text header that stays one line; a
# recording whose last line was cut (a full disk) is appended to and every
# later sample replays; --record to standard output follows penny(1)'s
# OUTPUT FILES; two outputs on one file are refused.
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/helpers/top/top-lib.sh"

runner=
trap '[ -n "$runner" ] && kill $runner 2>/dev/null; rm -rf "$TRASH"' EXIT

fake bad --devices 2 --ports 1 >/dev/null
mv bad/sys/class/infiniband/mlx5_1 "bad/sys/class/infiniband/mlx"$'\xff\x01\xef\xbf\xbe''<&_1'
printf 'ho\x01st\xef\xbf\xbf\xfe\nline2\n' >bad/proc/sys/kernel/hostname

test_expect_success 'hostile names: well-formed SVG, valid JSON and Prometheus' '
	penny top --sysfs-root bad --count 2 -i 0.1 --plot b.svg >out 2>err &&
	xmllint --noout b.svg &&
	penny top --sysfs-root bad --count 2 -i 0.1 --json --record rec >o.json &&
	json_valid o.json lines &&
	penny top --sysfs-root bad --count 1 -i 0.1 --prom o.prom >/dev/null &&
	python3 "$TOPH/check_prom.py" o.prom >/dev/null &&
	penny top --replay rec --plot r.svg >/dev/null 2>err && xmllint --noout r.svg
'

test_expect_success 'the text header escapes the host name: one line, control bytes as \xNN' '
	penny top --sysfs-root bad --count 1 -i 0.1 >out &&
	head -1 out | grep -q "^# ho\\\\x01st.*\\\\xfe\\\\x0aline2  " &&
	! grep -q "^line2" out &&
	grep -q "^mlx\\\\xff\\\\x01" out
'

fake moving --devices 2 --ports 1 >/dev/null
$FAKESYS run moving --period 0.05 --rate mlx5_0/1=1000000:3000000 &
runner=$!

test_expect_success 'appending to a recording whose last line was cut: the later samples replay' '
	penny top --sysfs-root moving --count 2 -i 0.1 --record rec2 >/dev/null &&
	test "$(wc -l <rec2)" -eq 3 &&
	head -c $(($(stat -c %s rec2) - 100)) rec2 >cut && cp cut cut.orig &&
	penny top --sysfs-root moving --count 3 -i 0.1 --record cut >/dev/null 2>err &&
	test ! -s err &&
	test "$(wc -l <cut)" -eq 7 && cmp -n $(stat -c %s cut.orig) cut.orig cut &&
	penny top --replay cut --json >r.json 2>err &&
	test "$(wc -l <err)" -eq 1 &&
	grep -q "^penny top: warning: cut: line 3: .*; skipped it" err &&
	python3 -c "
import json
s = [json.loads(l)[\"sample\"] for l in open(\"r.json\")]
assert s == [1, 1, 2, 3], s
"
'

test_expect_success '--record to standard output: written in place (penny(1), OUTPUT FILES)' '
	penny top --sysfs-root moving --count 2 -i 0.1 --json --record /dev/stdout >both 2>err &&
	test ! -s err &&
	test "$(grep -c "^{\"penny_record\":1," both)" -eq 3 &&
	test "$(grep -c "^{\"version\":1,\"host\":" both)" -eq 2 &&
	penny top --sysfs-root moving --count 1 -i 0.1 --record - --record-max 64K | grep -q "^{\"penny_record\":1," &&
	grep "^{\"penny_record\"" both >only && penny top --replay only --json >/dev/null 2>err &&
	test ! -s err
'

test_expect_success 'two outputs, or an output and the replayed file, on one file: refused' '
	rm -f x && test_exit 2 penny top --sysfs-root moving --count 1 --prom x --plot ./x >out 2>err &&
	test $(wc -l <err) = 1 && grep -q -- "--prom and --plot name the same file" err &&
	test ! -e x &&
	test_exit 2 penny top --sysfs-root moving --count 1 --record - --prom /dev/stdout >out 2>err &&
	grep -q "the same file" err &&
	cp rec2 keep && test_exit 2 penny top --replay rec2 --plot rec2 >out 2>err &&
	grep -q -- "--plot and --replay name the same file" err && cmp rec2 keep
'

test_done
