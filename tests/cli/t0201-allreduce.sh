#!/usr/bin/env bash
# penny allreduce-test end to end: self-launched ranks, every algorithm,
# every type and operation, odd and unaligned sizes, 0 wrong values.
# cost: 6
. "$(dirname "$0")/../lib.sh"

# -n 1: five timed calls (a call per timed block); the loops that check
# correctness only time nothing (-n 0)
ar() { penny allreduce-test --timeout 30 -n 1 -w 0 "$@"; }
types="int8 uint8 int32 uint32 int64 uint64 half bfloat16 float double"
ops="sum prod min max avg"

for np in 1 2 3 4 8; do
	i=0
	for t in $types; do
		op=$(echo $ops | cut -d' ' -f$((i % 5 + 1)))
		i=$((i + 1))
		test_expect_success "np=$np $t $op: every algorithm, sizes 0..14641 B, 0 wrong" '
			ar --np '$np' -d '$t' -o '$op' --algo all -b 1 -e 16K -f 11 -n 0 --json >out &&
			json_valid out &&
			python3 -c "import json; d=json.load(open(\"out\"))
assert d[\"summary\"][\"wrong\"] == 0 and d[\"summary\"][\"passed\"]
algos = {r[\"algo\"] for r in d[\"results\"]}
assert len(algos) >= 5, algos
assert all(r[\"oop\"][\"wrong\"] == 0 and r[\"ip\"][\"wrong\"] == 0 for r in d[\"results\"])"
		'
	done
	test_expect_success "np=$np: 3 MiB+4 B (several loop chunks), every algorithm" '
		ar --np '$np' -d float -o sum --algo all -b 3145732 -e 3145732 -n 0 >out &&
		! grep -q FAILED out && test "$(grep -c "Out of bounds values : 0 OK" out)" -ge 5
	'
done
for op in $ops; do
	test_expect_success "np=3 bfloat16 $op, 300 KiB + 2 B, every algorithm" '
		ar --np 3 -d bfloat16 -o '$op' --algo all -b 307202 -e 307202 -n 0 >out &&
		! grep -q FAILED out && test "$(grep -c "Out of bounds values : 0 OK" out)" -ge 5
	'
done

test_expect_success 'text table has the nccl-tests columns' '
	ar --np 2 -b 8 -e 64 -f 2 >out &&
	grep -q "size *count *type *redop *root *time *algbw *busbw *#wrong *time *algbw *busbw *#wrong" out &&
	grep -q "^# Avg bus bandwidth" out && test "$(grep -c "^ *[0-9]" out)" -eq 4
'
test_expect_success 'busbw = algbw * 2(n-1)/n' '
	ar --np 4 -b 1M -e 1M --json >out &&
	python3 -c "import json; r=json.load(open(\"out\"))[\"results\"][0][\"oop\"]
assert abs(r[\"busbw\"] - r[\"algbw\"] * 1.5) < 1e-6 * max(1, r[\"busbw\"]), r"
'
test_expect_success 'tcp transport between local ranks' '
	ar --np 3 --transport tcp --algo all -b 1 -e 1M -f 31 -n 0 >out && grep -q "via tcp" out &&
	! grep -q FAILED out
'
test_expect_success '--csv writes one line per size and algorithm' '
	ar --np 2 --algo ring,one-shot -b 8 -e 1K -f 4 --csv rows.csv >/dev/null &&
	test "$(wc -l <rows.csv)" -eq 9 && head -1 rows.csv | grep -q "^algo,size,count"
'
test_expect_success '--plot draws one labelled line per algorithm (valid SVG)' '
	ar --np 2 --algo ring,one-shot,two-shot -b 8 -e 64K -f 8 --plot ar.svg >/dev/null &&
	python3 -c "import xml.etree.ElementTree as E; E.parse(\"ar.svg\")" &&
	grep -q "ring (host)" ar.svg && grep -q "one-shot (host)" ar.svg && grep -q "two-shot (host)" ar.svg &&
	grep -q "message size" ar.svg && grep -q "bus bandwidth" ar.svg
'
test_expect_success '--plot to an unwritable place: one clear line, exit 2 (before the sweep)' '
	test_exit 2 ar --np 2 -b 8 -e 8 --plot /nonexistent/dir/ar.svg >/dev/null 2>err &&
	grep -q "/nonexistent/dir/ar.svg" err && test "$(wc -l <err)" -eq 1
'
test_expect_success '--min-busbw: an impossible gate fails with FAILED, exit 1' '
	test_exit 1 ar --np 2 -b 1K -e 1K --min-busbw 1e9 >out && grep -q FAILED out
'
test_expect_success '--min-busbw --json: stdout is only the JSON, the FAILED line on stderr' '
	test_exit 1 ar --np 2 --json --min-busbw 1000000 -b 8 -e 64 >out 2>err &&
	json_valid out &&
	python3 -c "import json; s=json.load(open(\"out\"))[\"summary\"]
assert s[\"passed\"] is False and \"below 1000000.00 GB/s\" in s[\"reason\"]" &&
	test "$(wc -l <err)" -eq 1 &&
	grep -q "^penny allreduce-test: FAILED: average bus bandwidth .* is below 1000000.00 GB/s$" err
'
test_expect_success '--min-busbw: a trivial gate passes' '
	ar --np 2 -b 1K -e 1K --min-busbw 0 >out && ! grep -q FAILED out
'
test_expect_success '--fresh-input: timed calls on inputs rewritten before each, 0 wrong' '
	ar --np 2 -b 1K -e 64K -f 8 -n 4 --fresh-input >out 2>err && ! grep -q FAILED out &&
	grep -q "^# Inputs rewritten before each call, only the calls timed (--fresh-input): yes" out &&
	test "$(grep -cE "^ +[0-9]+ +[0-9]+ +float +sum +-1 .* 0 +0$" out)" -eq 3 &&
	ar --np 2 -b 1K -e 1K --fresh-input --json >out.json && json_valid out.json &&
	python3 -c "import json,sys; d=json.load(open(\"out.json\")); assert d[\"fresh_input\"] is True" &&
	ar --np 2 -b 1K -e 1K --json >out.json &&
	python3 -c "import json,sys; d=json.load(open(\"out.json\")); assert d[\"fresh_input\"] is False" &&
	test_exit 2 ar --fresh-input --backend nccl 2>err && test "$(wc -l <err)" -eq 1 &&
	grep -q "fresh-input rewrites host memory between calls: the host backend only" err
'
test_expect_success '--tune-out writes a table that PENNY_TUNE_FILE loads' '
	ar --np 2 --algo all -b 1K -e 64K -f 8 --tune-out tune.txt >/dev/null &&
	test "$(grep -v "^#" tune.txt | cut -d" " -f3 | sort -u | wc -l)" -eq 3 &&
	! grep -v "^#" tune.txt | grep -Ev "^2 1 [0-9]+ [a-z-]+( in-place| out-of-place)?$" &&
	test "$(grep -c " in-place$" tune.txt)" -eq "$(grep -c " out-of-place$" tune.txt)" &&
	PENNY_TUNE_FILE=tune.txt ar --np 2 -b 1K -e 64K -f 8 >out && ! grep -q FAILED out
'
test_expect_success 'a tuned multiring runs as ring on a one-channel communicator' '
	echo "2 1 65536 multiring" >mr.txt &&
	PENNY_TUNE_FILE=mr.txt ar --np 2 -b 1K -e 64K -f 8 >out 2>err &&
	! grep -q FAILED out && test ! -s err
'
test_expect_success 'a bad tuning file is one clear line' '
	echo "2 1 lots ring" >bad.txt &&
	! PENNY_TUNE_FILE=bad.txt ar --np 2 -b 1K -e 1K 2>err >/dev/null &&
	grep -q "bad.txt:1" err
'
test_expect_success 'bad arguments: one line, exit 2' '
	test_exit 2 ar -d float7 2>err && test "$(wc -l <err)" -eq 1 &&
	test_exit 2 ar -o sqrt 2>err && test "$(wc -l <err)" -eq 1 &&
	test_exit 2 ar --algo fastest 2>err && test "$(wc -l <err)" -eq 1 &&
	test_exit 2 ar -b 2M -e 1M 2>err && test "$(wc -l <err)" -eq 1 &&
	test_exit 2 ar -b 1 -e 1G -i 1 2>err && test "$(wc -l <err)" -eq 1 &&
	grep -q "b, -e and -i or -f give more than [0-9]* sizes" err &&
	test_exit 2 ar -f 0.5 2>err && test "$(wc -l <err)" -eq 1 &&
	test_exit 2 ar --np 0 2>err && test "$(wc -l <err)" -eq 1 &&
	test_exit 2 ar --transport carrier-pigeon 2>err && grep -q "must be one of: shm tcp verbs" err
'
test_done
