#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# penny check's job-mode checks as a health gate meets them: node names of
# a real cluster (long, alike but for their last characters) named whole in
# the alltoall's rows; uneven ranks per node and a job of 2 nodes of one
# rank each, with --json, --prom and --junit valid on the FAIL path.
# Emulated nodes (PENNY_NODE_ID) on the tree of checkjob.sh, over tcp.
# cost: 12
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/helpers/checkjob.sh"

rail_tree n1
export PENNY_IB_DISABLE=1
printf 'alltoall.size = 65536\nalltoall.min-gbps = 100000\n' >miss.conf

# jobn "NODE..." ARGS: penny check ARGS as ranks 0..N-1 on those nodes;
# stdout of rank r in outR, stderr in errR, the exit codes in rc ("111")
jobn() {
	local ids=($1) port r pids=() n=$(($(wc -w <<<"$1")))
	shift
	port=$(free_port) || return 1
	for ((r = n - 1; r >= 0; r--)); do
		PENNY_NODE_ID=${ids[$r]} "$PENNY" check --rank $r --nranks $n \
			--root 127.0.0.1:$port "$@" >out$r 2>err$r &
		pids[$r]=$!
	done
	rc=
	for ((r = 0; r < n; r++)); do wait ${pids[$r]}; rc="$rc$?"; done
	echo "rc=$rc"
}
# rows: "node target verdict | detail" of rank 0's JSON (out0)
rows() {
	python3 -c 'import json
for r in json.load(open("out0"))["results"]:
    if r["check"] == "alltoall":
        print(r["node"], r["target"], r["verdict"], "|", r["detail"])'
}
outputs_valid() {
	python3 -m json.tool out0 >/dev/null &&
	python3 -c "import sys, xml.dom.minidom; xml.dom.minidom.parse(sys.argv[1])" j.xml &&
	grep -qx "penny_check_exit_code $1" p.prom &&
	! grep -v "^#" p.prom | grep -vq '^[a-z_]*\({[a-z]*="[^"]*"\(,[a-z]*="[^"]*"\)*}\)\? [0-9.e+-]*$'
}

# The names were cut at 30 bytes: the job's slowest pair read
# "dgx-h100-cluster-a-rack07-node-dgx-h100-cluster-a-rack07-node", which of
# the two nodes it was, and which to drain, not said.
A=dgx-h100-cluster-a-rack07-node01 B=dgx-h100-cluster-a-rack07-node02
test_expect_success 'long node names alike but for their end: the pair and the nodes below named whole' '
	jobn "$A $A $B $B" --sysfs-root n1 --timeout 20 --only alltoall --config miss.conf \
		--json --prom p.prom --junit j.xml && test "$rc" = 1111 &&
	rows >r && cat r && outputs_valid 1 &&
	grep -q "^job slowest-pair FAIL | slowest \($A-$B\|$B-$A\): rank [0-3] (mlx5_[03]/1) - rank [0-3] (mlx5_[03]/1) over .*; 4 of 4 pairs below$" r &&
	grep -q "^$A pairs FAIL | slowest $A-$B: .*; 4 of 4 pairs below: with $B$" r &&
	grep -q "^$B pairs FAIL | slowest $B-$A: .*; 4 of 4 pairs below: with $A$" r
'

# 63 bytes, the longest a row's node holds: the detail (255 bytes) keeps
# the pair and its counts, the names as long as they fit
L=$(printf "%062d" 0)
test_expect_success 'node names of 63 bytes: the detail keeps the pair, the link and the counts' '
	jobn "${L}a ${L}b" --sysfs-root n1 --timeout 20 --only alltoall --config miss.conf \
		--json --prom p.prom --junit j.xml && test "$rc" = 11 &&
	rows >r && cat r && outputs_valid 1 &&
	grep -q "^job slowest-pair FAIL | slowest 0\{40,\}[ab]\?-0\{40,\}[ab]\?: rank [01] (mlx5_0/1) - rank [01] (mlx5_0/1) over rail 0 (leaf), tcp, .*; 1 of 1 pairs below$" r &&
	grep -q "^${L}a pairs FAIL | slowest .*; 1 of 1 pairs below: with \(${L}b\|0*\.\.\.\)$" r
'

test_expect_success 'uneven ranks per node (2 and 1): each rank meets the other node, outputs valid' '
	jobn "n0 n0 n1" --sysfs-root n1 --timeout 20 --only alltoall --config miss.conf \
		--json --prom p.prom --junit j.xml && test "$rc" = 111 &&
	rows >r && cat r && outputs_valid 1 &&
	grep -q "^n0 pairs FAIL | slowest n0-n1: rank [01] .*; 2 of 2 pairs below: with n1$" r &&
	grep -q "^n1 pairs FAIL | slowest n1-n0: rank 2 .*; 2 of 2 pairs below: with n0$" r &&
	grep -q "^job slowest-pair FAIL | .*; 2 of 2 pairs below$" r
'
# a job's baseline holds one alltoall pairs row a node: read back, every
# rank refused it ("a second result for the same check and target", exit 2)
test_expect_success 'a job saves its baseline and runs against it' '
	printf "alltoall.size = 65536\nalltoall.pair-margin = 1\nalltoall.min-gbps = 0.000001\n" >ok.conf &&
	jobn "n0 n0 n1 n1" --sysfs-root n1 --timeout 20 --only alltoall --config ok.conf \
		--save-baseline jb.json && test "$rc" = 0000 &&
	test "$(python3 -c "import json; print(sum(r[\"target\"] == \"pairs\" for r in json.load(open(\"jb.json\"))[\"results\"]))")" = 2 &&
	printf "alltoall.size = 65536\nalltoall.pair-margin = 1\njob.baseline-fraction = 0.000001\n" >base.conf &&
	jobn "n0 n0 n1 n1" --sysfs-root n1 --timeout 20 --only alltoall --config base.conf \
		--baseline jb.json && test "$rc" = 0000 || { cat err0 err1; false; }
'

test_done
