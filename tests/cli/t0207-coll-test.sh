#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# penny coll-test: every collective of the host engine as nccl-tests' tools
# print it, over shm and tcp with 2, 3 and 4 ranks, in place and out of
# place, odd counts, every algorithm, types and ops, 0 wrong; nccl-tests'
# sizes and bus factors per collective; the root range-checked; the flags
# refused in one line.
. "$(dirname "$0")/../lib.sh"

# -n 0: the check only (correctness loops time nothing)
ct() { penny coll-test "$@" --timeout 30 -w 0; }
# every row 0 wrong out of and in place, the summary passed
all_right() {
	python3 - "$1" "$2" <<-\PY
	import json, sys
	d = json.load(open(sys.argv[1]))
	rows, want = d["results"], int(sys.argv[2])
	assert d["summary"]["passed"] and d["summary"]["wrong"] == 0, d["summary"]
	assert len(rows) >= want, (len(rows), want)
	assert all(r["oop"]["wrong"] == 0 and r["ip"]["wrong"] == 0 for r in rows)
	PY
}
colls="allgather reducescatter alltoall broadcast reduce sendrecv"
test_expect_success '--fresh-input: every collective timed on rewritten inputs, 0 wrong' '
	for c in $colls; do
		penny coll-test $c --np 3 -b 1K -e 16K -f 4 -n 3 -w 1 --fresh-input --json \
			--timeout 30 >out && all_right out 3 || { echo "$c"; exit 1; }
	done
'
types=(int8 bfloat16 float double uint64 half)
ops=(sum prod min max avg sum)

i=0
for c in $colls; do
	for np in 2 3 4; do
		for tp in shm tcp; do
			t=${types[$(((i + np) % 6))]} op=${ops[$(((i + np) % 6))]}
			test_expect_success "$c np=$np $tp $t $op: every algorithm, odd counts, 0 wrong" '
				ct '$c' --np '$np' --transport '$tp' -d '$t' -o '$op' --algo all \
					-b 1 -e 300K -f 13 -n 0 --json >out &&
				json_valid out && all_right out 4
			'
		done
	done
	i=$((i + 1))
done
test_expect_success 'nccl-tests spellings, -d all and -o all: every type x op, 0 wrong' '
	ct reduce_scatter --np 3 -d all -o all -b 100 -e 1000 -f 3 -n 0 --json >out &&
	json_valid out && all_right out 100 &&
	python3 -c "import json; r=json.load(open(\"out\"))[\"results\"]
assert len({(x[\"type\"], x[\"redop\"]) for x in r}) == 50" &&
	ct all_gather --np 2 -d all -o all -b 64 -e 64 -n 0 >out &&
	test "$(grep -c "^ .* none  *-1 " out)" = 10
'
test_expect_success 'the columns, size and count as nccl-tests, root and redop' '
	ct alltoall --np 4 -b 1000 -e 1000 -n 1 >out &&
	grep -q "size *count *type *redop *root *time *algbw *busbw *#wrong *time *algbw *busbw *#wrong" out &&
	grep -qE "^ +992 +62 +float +none +-1 " out && grep -q "^# Avg bus bandwidth" out &&
	ct broadcast --np 3 -r 2 -b 1000 -e 1000 -n 1 -d int32 >out &&
	grep -qE "^ +1000 +250 +int32 +none +2 " out && grep -q "root 2" out &&
	ct reduce --np 3 -r 1 -o max -b 10 -e 10 -n 1 -d int8 >out &&
	grep -qE "^ +10 +10 +int8 +max +1 " out
'
test_expect_success 'busbw: nccl-tests bus factor per collective' '
	for c in $colls; do
		ct $c --np 4 -b 1M -e 1M -n 2 --json >$c.json || exit 1
	done &&
	python3 -c "
import json
f = {\"allgather\": .75, \"reducescatter\": .75, \"alltoall\": .75, \"broadcast\": 1, \"reduce\": 1, \"sendrecv\": 1}
for c, k in f.items():
    r = json.load(open(c + \".json\"))[\"results\"][0][\"oop\"]
    assert r[\"algbw\"] > 0 and abs(r[\"busbw\"] - r[\"algbw\"] * k) < 1e-6 * r[\"busbw\"], (c, r)
"
'
test_expect_success '--json: collective, ran (auto), differ where it applies' '
	ct allgather --np 2 -b 4K -e 4K -n 1 --json >out && json_valid out &&
	python3 -c "import json; d=json.load(open(\"out\")); r=d[\"results\"][0]
assert d[\"command\"] == \"coll-test\" and d[\"collective\"] == \"allgather\"
assert r[\"ran\"] in (\"ring\", \"one-shot\") and \"differ\" in r[\"oop\"]" &&
	ct alltoall --np 2 -b 4K -e 4K -n 1 --json >out &&
	python3 -c "import json; r=json.load(open(\"out\"))[\"results\"][0]
assert \"differ\" not in r[\"oop\"]"
'
test_expect_success '-N 2 runs the sweep twice, -m 3 three calls an iteration' '
	ct sendrecv --np 2 -b 1K -e 4K -f 4 -N 2 -m 3 -n 5 --json >out && all_right out 4 &&
	python3 -c "import json; r=json.load(open(\"out\"))[\"results\"]
assert len(r) == 4 and all(x[\"iters_per_block\"] == 3 for x in r), r"
'
test_expect_success '--csv: one line per row; --plot: valid SVG' '
	ct reduce --np 2 --algo all -b 8 -e 1K -f 4 --csv rows.csv --plot p.svg >/dev/null &&
	test "$(wc -l <rows.csv)" -eq 9 && head -1 rows.csv | grep -q "^algo,size,count" &&
	python3 -c "import xml.etree.ElementTree as E; E.parse(\"p.svg\")" && grep -q "coll-test reduce" p.svg
'
test_expect_success 'the root: range-checked against the job, one line, exit 2' '
	test_exit 2 ct broadcast --np 3 -r 3 -b 8 -e 8 >out 2>err &&
	test "$(wc -l <err)" = 1 && grep -q "^penny coll-test: -r 3: the root is not a rank of the 3 (0..2)$" err &&
	test_exit 2 ct reduce -r 70000 2>err && grep -q "must be 0..65535" err &&
	ct allgather --np 2 -r 5 -b 8 -e 8 -n 0 >out && grep -qE " +-1 " out
'
test_expect_success 'bad input: one line naming the problem, exit 2' '
	tab=$(printf "\t") &&
	while IFS=$tab read -r args want; do
		test_exit 2 penny coll-test $args 2>err || { echo "args: $args"; exit 1; }
		test "$(wc -l <err)" = 1 || { echo "args: $args"; cat err; exit 1; }
		grep -q -- "$want" err || { echo "args: $args"; cat err; exit 1; }
	done <<-EOF
	--np 2	which collective?
	allreduce --np 2	.allreduce. is not a collective of coll-test
	gossip --np 2	.gossip. is not a collective of coll-test
	alltoall extra --np 2	unexpected argument .extra.
	alltoall --np 2 -G 5	-G captures CUDA graphs
	reduce --np 2 --algo tree	reduce has no algorithm .tree. (it has auto, ring, one-shot)
	alltoall --np 2 --algo pairwise,pairwise	names pairwise twice
	allgather --np 2 -d float7	float7
	reduce --np 2 -o sqrt	sqrt
	allgather --np 2 -t 2	-t 2: not supported by penny
	allgather --np 2 -g 8	-g 8: not supported by penny
	allgather --np 2 -N 0	-N 0: not supported by penny
	allgather --np 2 -b 2M -e 1M	-b 2097152 is larger than -e 1048576
	EOF
'
test_expect_success 'the host honours -z 1, -C 1 and -R 1 silently' '
	ct alltoall --np 2 -b 64 -e 64 -n 1 -z 1 -C 1 -R 1 -p 1 >out 2>err && test ! -s err &&
	grep -q "Out of bounds values : 0 OK" out
'
test_expect_success '--min-busbw: an impossible gate fails, exit 1' '
	test_exit 1 ct sendrecv --np 2 -b 1K -e 1K --min-busbw 1e9 >out && grep -q FAILED out
'
test_done
