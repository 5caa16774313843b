#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Hardening, round 3: what a careless or hostile user found, each refused
# with one line and the right exit, or now doing what it says.
. "$(dirname "$0")/../lib.sh"

test_expect_success 'check -d: a port that is not 1..255 is refused, not read as port 1' '
	for d in mlx5_0:x mlx5_0:0 mlx5_0:256 :1 mlx5_0:1:2 mlx5_0,mlx5_1:-1; do
		one_line_error 2 check --passive --only settings -d "$d" || exit 1
		grep -q "want DEV or DEV:PORT, PORT 1..255" err || { cat err; exit 1; }
	done &&
	one_line_error 2 check --passive -d "$(seq -s, -f mlx5_%g 0 64)" &&
	grep -q "more than 64" err &&
	{ penny check --passive --only settings -d mlx5_0:1,mlx5_1 >out; test $? -le 1; }
'

test_expect_success 'check --plan: a file that is not a ring plan is refused, not run without it' '
	echo "{" >trunc.json && echo "x" >text.json && echo "{\"version\": 1}" >norings.json &&
	for f in trunc.json text.json norings.json; do
		test_exit 2 penny check --only allreduce --plan $f >out 2>err &&
		test "$(wc -l <err)" -eq 1 && grep -q "^penny check: --plan: plan .$f.: " err ||
			{ cat err; exit 1; }
	done &&
	penny ring-plan --nodes 1 --gpus 2 --nics 0 --json >one.json &&
	{ penny check --passive --only settings --plan one.json >out; test $? -le 1; }
'

test_expect_success 'ring-plan --check: an unreadable plan names its file' '
	echo "{\"version\": 1, \"rings\": [" >trunc.json &&
	one_line_error 2 ring-plan --check trunc.json &&
	grep -q "^penny ring-plan: .trunc.json.: line 2 column 1: " err
'

test_expect_success 'top --replay: --interval and --processes, which it ignored, are refused' '
	penny top -n 2 -i 50ms --record r.jsonl >/dev/null && test -s r.jsonl &&
	one_line_error 2 top --replay r.jsonl -i 5s && grep -q "\-\-interval is for a live run" err &&
	one_line_error 2 top --replay r.jsonl --processes &&
	grep -q "\-\-processes is for a live run" err &&
	penny top --replay r.jsonl >out && test -s out
'

test_expect_success '--json: an output file on standard output is refused, not mixed into the document' '
	for args in "topo --save -" "ring-plan --nodes 2 --nccl-graph /dev/stdout" \
		"check --passive --only settings --junit -" "check --passive --only settings --prom /dev/fd/1" \
		"allreduce-test --np 2 -b 8 -e 8 -n 1 -w 0 --csv -" \
		"coll-test allgather --np 2 -b 8 -e 8 -n 1 -w 0 --plot /dev/stdout" \
		"allreduce-test --np 2 -b 8 -e 8 -n 1 -w 0 -A one-shot,two-shot --tune-out -"; do
		# shellcheck disable=SC2086
		one_line_error 2 $args --json || exit 1
		grep -q "is standard output, where --json writes its document" err || { cat err; exit 1; }
	done &&
	penny allreduce-test --np 2 -b 8 -e 8 -n 1 -w 0 --csv - --json >/dev/null &&
	penny allreduce-test --np 2 -b 8 -e 8 -n 1 -w 0 --csv /dev/stderr --json >out 2>csv &&
	python3 -c "import json; json.load(open(\"out\"))" && grep -q "^algo," csv &&
	penny allreduce-test --np 2 -b 8 -e 8 -n 1 -w 0 --csv - >out && grep -q "^auto," out &&
	penny top -n 1 -i 50ms --json --record - >out && grep -q "^{\"penny_record\":1," out
'

test_expect_success 'bw HOST that does not resolve: the host and why, not "Invalid argument"' '
	one_line_error 2 bw --transport tcp --timeout 1s nosuchhost.invalid &&
	grep -q "^penny bw: cannot resolve .nosuchhost.invalid.: " err
'

test_expect_success '--np with --rank, --nranks or --root: refused, not ignored' '
	for extra in "--nranks 4" "--rank 0" "--root 127.0.0.1:1" "--rank 0 --nranks 2"; do
		# shellcheck disable=SC2086
		one_line_error 2 allreduce-test --np 2 -b 8 -e 8 -n 1 -w 0 $extra || exit 1
		grep -q "\-\-np starts its own ranks" err || { cat err; exit 1; }
	done &&
	one_line_error 2 check --np 2 --passive --nranks 2 &&
	one_line_error 2 bw --np 2 --transport tcp --root 127.0.0.1:1 &&
	penny allreduce-test --np 2 -b 8 -e 8 -n 1 -w 0 >out
'

test_expect_success 'long options are whole names: an abbreviation is unknown, not a guess' '
	for args in "topo --jso" "top --i 1 -n 1" "check --pass" "ring-plan --nodes 2 --summ" \
		"allreduce-test --np 1 -b 8 -e 8 --deb"; do
		# shellcheck disable=SC2086
		one_line_error 2 $args || exit 1
		grep -q "unknown option .--[a-z]*. (see .penny" err || { cat err; exit 1; }
	done &&
	penny topo --json >out && penny topo --sysfs-root=/ --json >out &&
	penny allreduce-test --np=1 -b 8 -e 8 -n 1 -w 0 --debug=INIT >out 2>/dev/null
'

test_expect_success 'PENNY_NODE_ID longer than the hello holds: refused, not cut into another node'"'"'s' '
	long=$(printf "n%.0s" $(seq 91)) && p=$(free_port) &&
	PENNY_NODE_ID=$long one_line_error 2 allreduce-test --rank 0 --nranks 2 \
		--root 127.0.0.1:$p --timeout 5s -b 8 -e 8 &&
	grep -q "PENNY_NODE_ID=.n*\.\.\.. is longer than 90 characters" err &&
	PENNY_NODE_ID=${long%n} penny allreduce-test --np 2 -b 8 -e 8 -n 1 -w 0 >out
'

test_expect_success 'bw -a with -s: refused, not -s ignored' '
	one_line_error 2 bw --transport tcp --loopback lo -a -s 64 &&
	grep -q "^penny bw: -a runs every size from 2 bytes to 8 MiB, -s one size" err
'

test_expect_success 'an output naming an input file: refused, the input left whole' '
	cp "$TOP/tests/fixtures/plan/topo/h100-node01.json" node01.json &&
	cp "$TOP/tests/fixtures/plan/topo/h100-node02.json" n2.json && cp node01.json keep &&
	one_line_error 2 ring-plan --topo-file node01.json,n2.json --nccl-graph ./node01.json &&
	grep -q "\-\-nccl-graph and \-\-topo-file name the same file" err && cmp node01.json keep &&
	one_line_error 2 ring-plan --topo-file node01.json,n2.json --nccl-graph "%h.json" &&
	cmp node01.json keep &&
	cp "$TOP/tests/fixtures/hwloc/192em64t-12gr2n8c2t.xml" h.xml && cp h.xml hkeep &&
	one_line_error 2 topo --topo-xml h.xml --save h.xml &&
	grep -q "\-\-save and \-\-topo-xml name the same file" err && cmp h.xml hkeep &&
	penny ring-plan --topo-file node01.json,n2.json --nccl-graph g-%h.xml >out && test -s g-node01.xml
'

test_expect_success 'check nic-bw on a node of 18 NIC ports: the 2 past the 16 it takes are named, not dropped' '
	(
		. "$TOP/tests/helpers/mksysfs.sh" &&
		sys_root t18 n18 >/dev/null && sys_cpus 4 1 &&
		for k in $(seq 0 17); do
			sys_ib mlx5_$k >/dev/null &&
			sys_port mlx5_$k 1 ACTIVE LinkUp "400 Gb/sec (4X NDR)" InfiniBand >/dev/null || exit 1
		done
	) &&
	test_exit 2 penny check --sysfs-root t18 --only nic-bw >out 2>err &&
	grep -q "^nic-bw  *n18  *NICs .* SKIP  2 more NIC ports not checked: nic-bw takes the first 16" out &&
	test "$(grep -c "^nic-bw  *n18  *mlx5_[0-9]*/1 " out)" -eq 16 &&
	test_exit 2 penny check --sysfs-root t18 --only nic-bw -d "$(seq -s, -f mlx5_%g 0 16)" >out 2>err &&
	grep -q "SKIP  1 more NIC port not checked" out
'
test_expect_success 'PENNY_IB_DISABLE, PENNY_MEM_CHECK and PENNY_BIND: a word they do not take is refused, not misread' '
	for kv in PENNY_IB_DISABLE=yes PENNY_IB_DISABLE=true PENNY_MEM_CHECK=off PENNY_BIND=nonee; do
		env "$kv" "$PENNY" allreduce-test --np 2 -b 8 -e 8 -n 1 -w 0 >out 2>err; rc=$?
		test $rc = 2 && test "$(wc -l <err)" = 1 && test ! -s out &&
		grep -q "^penny allreduce-test: ${kv%%=*}=.${kv#*=}.: want " err || { echo "$kv: exit $rc"; cat err; exit 1; }
	done &&
	for kv in PENNY_IB_DISABLE=1 PENNY_IB_DISABLE=0 PENNY_MEM_CHECK=1 PENNY_BIND=none PENNY_BIND=; do
		env "$kv" "$PENNY" allreduce-test --np 2 -b 8 -e 8 -n 1 -w 0 >out || { echo "$kv"; exit 1; }
	done
'
test_expect_success 'top --json: --prom and --plot on standard output are refused; --record - still interleaves' '
	for args in "--prom -" "--prom /dev/stdout" "--plot /dev/fd/1"; do
		# shellcheck disable=SC2086
		one_line_error 2 top -n 1 -i 50ms --json $args || exit 1
		grep -q "is standard output, where --json writes its document" err || { cat err; exit 1; }
	done &&
	penny top -n 1 -i 50ms --prom - >out && grep -q "^# TYPE penny_port_up gauge" out &&
	penny top -n 1 -i 50ms --json --prom p.prom >out && grep -q "^# TYPE" p.prom &&
	penny top -n 1 -i 50ms --json --record - >out && grep -q "^{\"penny_record\":1," out
'
test_done
