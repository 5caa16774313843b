#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# penny top's flight recorder: --record in batch, JSON, Prometheus and screen
# modes, --replay giving the live run's output back byte for byte, damaged
# lines of a recording skipped with one warning, the --record-max bound
# and its rotation, output files that are not regular files refused, the
# SVG --plot, and the replay screen (golden, 80x24).
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/helpers/top/top-lib.sh"

runner=
SOCK=penny-test-$$
T() { tmux -L "$SOCK" -f /dev/null "$@"; }
trap '[ -n "$runner" ] && kill $runner 2>/dev/null; T kill-server 2>/dev/null; rm -rf "$TRASH"' EXIT

# counters that move on their own: rates differ from sample to sample
fake moving --devices 3 --ports 2
$FAKESYS run moving --period 0.05 --rate mlx5_0/1=1000000:3000000 \
	--rate mlx5_1/2=250000:0 --rate mlx5_2/1=7:9000000 &
runner=$!

# The live run and its replay agree byte for byte: every value printed is
# recorded exactly (17 digits), the header's clock is the recorded wall time
# in the same time zone, the host is the recorded one.  Nothing is masked.
test_expect_success 'replay gives the live batch table byte for byte' '
	penny top --sysfs-root moving --count 4 -i 0.15 --record rec >live.txt 2>err &&
	test ! -s err &&
	test "$(wc -l <rec)" -eq 5 &&
	penny top --replay rec >replay.txt 2>err &&
	test ! -s err &&
	test_cmp live.txt replay.txt &&
	grep -q "^mlx5_0/1 .* [1-9][0-9.]* [MG]b/s" live.txt
'

test_expect_success 'replay gives the live --json, --by-rail and --sort output byte for byte' '
	penny top --sysfs-root moving --count 3 -i 0.15 --json --record recj >live.json &&
	penny top --replay recj --json >replay.json &&
	test_cmp live.json replay.json &&
	json_valid replay.json lines &&
	penny top --sysfs-root moving --count 2 -i 0.15 --by-rail --sort tx --record recr >live.r &&
	penny top --replay recr --by-rail --sort tx >replay.r &&
	test_cmp live.r replay.r &&
	penny top --replay recj --count 1 --filter mlx5_1 >one.txt &&
	test "$(grep -c "^mlx5_1/" one.txt)" -eq 2 && ! grep -q "^mlx5_0" one.txt
'

test_expect_success 'the record format: one line per sample, every port, context and times' '
	python3 - <<-\EOF
	import json
	lines = [json.loads(l) for l in open("recj")]
	assert len(lines) == 4, len(lines)
	for i, s in enumerate(lines):
	    assert s["penny_record"] == 1 and s["seq"] == i + 1, s["seq"]
	    assert len(s["ports"]) == 6 and s["host"] and s["interval"] == 0.15
	    assert s["mono_ns"] > 0 and s["wall"] > 1.5e9 and "nics" in s and "gpus" not in s
	    p = s["ports"][0]
	    assert p["name"] == "mlx5_0/1" and len(p["ctr"]) > 10, p["name"]
	assert lines[1]["mono_ns"] > lines[0]["mono_ns"]
	EOF
'

test_expect_success '--record with --prom and in every batch mode appends' '
	penny top --sysfs-root moving --count 2 -i 0.1 --prom out.prom --record rec &&
	test "$(wc -l <rec)" -eq 8 && test -s out.prom &&
	penny top --replay rec >both.txt 2>err && test ! -s err &&
	test "$(grep -c "^# " both.txt)" -eq 6
'

test_expect_success 'a truncated recording: the cut line skipped, one warning line' '
	head -c $(($(stat -c %s recj) - 200)) recj >cut &&
	penny top --replay cut --json >cut.json 2>err &&
	test "$(wc -l <err)" -eq 1 &&
	grep -q "^penny top: warning: cut: line 4 (the last, cut short): .*; skipped it" err &&
	head -2 live.json >want.json && test_cmp want.json cut.json
'

# live.json minus the sample of recording line $1 (its "sample" is seq - 1)
without() { grep -v "\"sample\":$(($1 - 1))," live.json; }

test_expect_success 'a corrupted line: skipped, the samples after it read, one warning line' '
	sed "3s/\"ports\"/\"porTs\"/" recj >bad &&
	penny top --replay bad --json >bad.json 2>err &&
	test "$(wc -l <err)" -eq 1 && grep -q "bad: line 3: .*; skipped it" err &&
	without 3 >want.json && test "$(wc -l <want.json)" -eq 2 && test_cmp want.json bad.json &&
	sed "2s/\"ports\"/\"porTs\"/; 3s/^/x/" recj >bad2 &&
	penny top --replay bad2 --json >bad2.json 2>err &&
	test "$(wc -l <err)" -eq 1 &&
	grep -q "bad2: 2 damaged lines skipped, the first line 2: " err &&
	tail -1 live.json >want.json && test_cmp want.json bad2.json &&
	printf "{\"penny_record\":1,\"host\":" >junk && head -c 300000 /dev/zero | tr "\\0" x >>junk &&
	test_exit 2 penny top --replay junk 2>err &&
	test "$(wc -l <err)" -eq 2 && grep -q "warning: junk: line 1" err &&
	grep -q "junk: no samples" err &&
	: >empty && test_exit 2 penny top --replay empty
'

test_expect_success 'NUL bytes in a line (a zero-filled block after a crash): that line skipped' '
	{ head -2 recj; head -c 500 /dev/zero; tail -n +3 recj; } >zeros &&
	penny top --replay zeros --json >z.json 2>err &&
	test "$(wc -l <err)" -eq 1 && grep -q "zeros: line 3: .*; skipped it" err &&
	without 3 >want.json && test_cmp want.json z.json
'

test_expect_success 'a line longer than the bound is damage, not memory; read past it' '
	{ head -1 recj; head -c 34000000 /dev/zero | tr "\\0" " "; echo; tail -n +2 recj; } >long &&
	penny top --replay long --json >long.json 2>err &&
	grep -q "long: line 2: longer than the longest sample; skipped it" err &&
	test_cmp live.json long.json
'

test_expect_success '--record-max: the file stays within the bound and rotates once to FILE.1' '
	penny top --sysfs-root moving --count 30 -i 0.05 --json --record-max 64K \
		--record small >/dev/null 2>err &&
	test ! -s err &&
	test "$(stat -c %s small)" -le 65536 && test "$(stat -c %s small.1)" -le 65536 &&
	test -s small.1 && ! test -e small.2 &&
	penny top --replay small.1 --json >a.json && penny top --replay small --json >b.json &&
	python3 -c "
import json
a = [json.loads(l)[\"sample\"] for l in open(\"a.json\")]
b = [json.loads(l)[\"sample\"] for l in open(\"b.json\")]
assert a == list(range(a[0], a[0] + len(a))) and b[0] > a[-1], (a, b)
assert b[-1] == 30, b
" &&
	test_exit 2 penny top --sysfs-root moving --once --record x --record-max 1K &&
	test_exit 2 penny top --sysfs-root moving --once --record-max 1M 2>err &&
	grep -q "^penny top: --record-max is for --record$" err
'

test_expect_success 'a rotation onto a FILE.1 that is not a regular file stops recording' '
	rm -f small small.1 && mkfifo small.1 &&
	penny top --sysfs-root moving --count 30 -i 0.05 --json --record-max 64K \
		--record small >/dev/null 2>err &&
	test "$(wc -l <err)" -eq 1 &&
	grep -q "^penny top: warning: --record: cannot rotate .small.: .small.1. is not a regular file; recording stopped" err &&
	test -p small.1 && test "$(stat -c %s small)" -le 65536
'

# a recording moved away (logrotate's rename) or removed while top ran
# went on into the unlinked file; the next rotation then failed and
# recording stopped
test_expect_success 'FILE moved or removed while recording: the name is taken up again' '
	rm -f rec rec.old &&
	{ penny top --sysfs-root moving --count 40 -i 0.05 --json --record rec >/dev/null 2>err & pid=$!; } &&
	for i in $(seq 100); do test -s rec && break; sleep 0.05; done &&
	mv rec rec.old &&
	for i in $(seq 100); do test -s rec && break; sleep 0.05; done &&
	rm rec &&
	wait $pid && test ! -s err && test -s rec && test -s rec.old &&
	python3 -c "
import json
a = [json.loads(l)[\"seq\"] for l in open(\"rec.old\")]
b = [json.loads(l)[\"seq\"] for l in open(\"rec\")]
assert a[0] == 1 and b[0] > a[-1] + 1 and b[-1] >= 40, (a, b)
assert b == list(range(b[0], b[-1] + 1)), b
"
'

test_expect_success '--record to a link, FIFO or directory: one line, exit 2, nothing opened' '
	echo keep >target && ln -s target link &&
	test_exit 2 penny top --sysfs-root moving --once --record link 2>err &&
	test "$(wc -l <err)" -eq 1 && grep -q "refusing to write .link.: it is a symbolic link" err &&
	test "$(cat target)" = keep &&
	mkfifo fifo &&
	test_exit 2 penny top --sysfs-root moving --once --record fifo 2>err &&
	test "$(wc -l <err)" -eq 1 && grep -q "refusing to write .fifo.: it is a FIFO" err &&
	mkdir dir &&
	test_exit 2 penny top --sysfs-root moving --once --record dir 2>err &&
	test "$(wc -l <err)" -eq 1 && grep -q "refusing to write .dir.: it is a directory" err &&
	test_exit 2 penny top --sysfs-root moving --once --record rec --replay rec &&
	test_exit 2 penny top --replay dir 2>err && grep -q "not a regular file" err
'

test_expect_success '--plot: well-formed SVG, one path per port in each panel, rails coloured' '
	penny top --replay recj --plot p.svg >out 2>err &&
	test ! -s out && test ! -s err &&
	penny top --sysfs-root moving --count 2 -i 0.1 --plot live.svg >/dev/null &&
	for f in p.svg live.svg; do
		python3 - "$f" <<-\EOF || return 1
		import sys, xml.etree.ElementTree as E
		ns = "{http://www.w3.org/2000/svg}"
		root = E.parse(sys.argv[1]).getroot()
		panels = [g for g in root.iter(ns + "g") if g.get("class") == "panel"]
		assert len(panels) == 2, len(panels)
		for g in panels:
		    paths = g.findall(ns + "path")
		    names = sorted(p.find(ns + "title").text for p in paths)
		    want = sorted("mlx5_%d/%d" % (d, q) for d in range(3) for q in (1, 2))
		    assert names == want, names
		    drawn = [p for p in paths if p.get("d")]
		    assert len(drawn) == 6, len(drawn)
		EOF
	done &&
	test_exit 2 penny top --replay recj --plot dir
'

test_expect_success 'rails coloured: the context tree gives each rail its colour' '
	ctx_tree ctx &&
	penny top --sysfs-root ctx --count 2 -i 0.1 --record rc.jsonl --plot rc.svg >/dev/null &&
	python3 - <<-\EOF
	import json, xml.etree.ElementTree as E
	s = json.loads(open("rc.jsonl").readline())
	nics = {n["dev"]: n for n in s["nics"]}
	assert nics["mlx5_0"]["gpus"] == [0, 1, 2] and nics["mlx5_1"]["rail"] == 1, nics
	ns = "{http://www.w3.org/2000/svg}"
	col = {p.find(ns + "title").text: p.get("stroke") for p in E.parse("rc.svg").getroot().iter(ns + "path")}
	assert col["mlx5_0/1"] == col["mlx5_0/2"] != col["mlx5_1/1"], col
	EOF
'

# legend FILE: the plot's legend texts, one a line
legend() {
	python3 - "$1" <<-\EOF
	import sys, xml.etree.ElementTree as E
	ns = "{http://www.w3.org/2000/svg}"
	g = [g for g in E.parse(sys.argv[1]).getroot().iter(ns + "g") if g.get("class") == "legend"][0]
	print("\n".join(t.text for t in g.iter(ns + "text")))
	EOF
}
test_expect_success '--plot legend: each colour names its rail and its devices' '
	legend rc.svg >got &&
	printf "%s\n" "rail 0: mlx5_0/1, mlx5_0/2" "rail 1: mlx5_1/1" >want && test_cmp want got
'
test_expect_success '--plot legend without rails: a colour a port, named' '
	legend p.svg >got && test "$(wc -l <got)" -eq 6 &&
	grep -qx "mlx5_0/1" got && grep -qx "mlx5_2/2" got
'
test_expect_success 'a replay'"'"'s plot is titled with the recorded host, not this one' '
	host=$(python3 -c "import json; print(json.loads(open(\"rc.jsonl\").readline())[\"host\"])") &&
	test -n "$host" && test "$host" != "$(hostname)" &&
	penny top --replay rc.jsonl --plot rp.svg &&
	grep -q "<title>penny top: $host</title>\|>penny top: $host<" rp.svg &&
	! grep -q "penny top: $(hostname)" rp.svg
'

if ! command -v tmux >/dev/null; then
	test_skip "replay screen" "tmux is not installed"
	test_done
	exit 0
fi

. "$TOP/tests/helpers/top/screen-lib.sh"

test_expect_success 'replay screen 80x24: plays to the end, steps, seeks (golden)' '
	fake still --devices 3 --ports 2 &&
	penny top --sysfs-root still --count 4 -i 0.1 --record still.rec >/dev/null &&
	T new-session -d -x 80 -y 24 -s top \
		"env LANG=C.UTF-8 $PENNY top --replay $PWD/still.rec; echo \$? >$PWD/rc" &&
	shows "replay 5/5 x1" && shows PAUSED && golden replay-80x24 &&
	key , && shows "replay 4/5 x1" && key "[" && shows "replay 1/5" &&
	key Space && shows "replay 5/5" && key "[" && key - && shows "replay [0-9]/5 x2" &&
	key . && shows PAUSED && key q && wait_for 5 test -s rc && test "$(cat rc)" = 0
'

test_done
