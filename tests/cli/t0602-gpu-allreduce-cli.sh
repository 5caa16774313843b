#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# penny's own CLI on the GPU plugins, on a machine without a GPU: the test
# plugins (tests/plugins/fake/fake.c: "device" memory on the host) behind
# allreduce-test --backend and bw --gpu.  Tables per backend and algorithm,
# the ratio table, JSON/CSV, -G with and without the capability, -g, one
# line and exit 2 for what cannot run, and the hierarchical allreduce across
# two fake nodes (PENNY_NODE_ID) over tcp: every type x op, odd counts, exact.
# cost: 12
. "$(dirname "$0")/../lib.sh"

fakes=$BUILD/tests/plugins
export PENNY_PLUGIN_PATH=$fakes
one_line() { test "$(wc -l <"$1")" -eq 1 || { cat "$1"; return 1; }; }
rows() { grep -cE '^ +[0-9]+ +[0-9]+ ' "$1"; }

test_expect_success 'a table per backend and algorithm, then the ratio table' '
	penny allreduce-test --np 3 --backend host,fakeall --algo auto,one-shot -b 1K -e 4K -f 2 \
		-n 3 -w 1 >out 2>err &&
	grep -q "3 ranks on 1 nodes, backend host,fakeall" out &&
	test "$(grep -c "^# algorithm: .*, backend: host" out)" -eq 2 &&
	test "$(grep -c "^# algorithm: .*, backend: fakeall" out)" -eq 2 &&
	test "$(grep -c "Out of bounds values : 0 OK" out)" -eq 4 &&
	grep -q "^# ratios against host, its fastest algorithm at each size" out &&
	test "$(sed -n "/^# ratios/,\$p" out | grep -cE "^ +[0-9]+ fakeall ")" -eq 6 &&
	test "$(sed -n "/^# ratios/,\$p" out | grep -cE "^ +[0-9]+ host ")" -eq 0 &&
	test "$(grep -c "^#  Rank .* fakeall: fake device -1 of rank [0-2]/3" out)" -eq 3
'
test_expect_success 'the ratio table is against nccl when it runs, else the first backend' '
	PENNY_PLUGIN_PATH=$fakes/nccl:$fakes penny allreduce-test --np 2 --backend fakeall,nccl \
		-b 1K -e 1K -n 2 >out &&
	grep -q "^# ratios against nccl," out &&
	test "$(sed -n "/^# ratios/,\$p" out | grep -cE "^ +1024 fakeall ")" -eq 1 &&
	penny allreduce-test --np 2 --backend fake,fakeall -b 1K -e 1K -n 2 >out &&
	grep -q "^# ratios against fake," out
'
test_expect_success 'symmetric: a GPU backend algorithm; the reference is nccls faster one' '
	PENNY_PLUGIN_PATH=$fakes/nccl:$fakes penny allreduce-test --np 2 --backend fakeall,nccl \
		--algo all -b 1K -e 4K -f 2 -n 2 --json >out.json &&
	python3 - out.json <<-\EOF &&
	import json, sys
	d = json.load(open(sys.argv[1]))
	seen = {(r["backend"], r["algo"]) for r in d["results"]}
	assert seen == {("fakeall", a) for a in ("auto", "one-shot", "two-shot", "ring")} | \
	       {("nccl", "auto"), ("nccl", "symmetric")}, seen
	best = {}
	for r in d["results"]:
	    if r["backend"] == "nccl":
	        t = r["oop"]["time_us"]
	        if r["size"] not in best or t < best[r["size"]][0]:
	            best[r["size"]] = (t, r["algo"])
	assert len(d["ratios"]) == 12
	for q in d["ratios"]:
	    assert q["backend"] == "fakeall" and q["ref_backend"] == "nccl"
	    assert (q["ref_time_us"], q["ref_algo"]) == best[q["size"]], (q, best)
	EOF
	test_exit 2 penny allreduce-test --np 2 --algo symmetric -b 8 -e 8 -n 1 2>err &&
	grep -q "the host backend has no algorithm .symmetric. (a GPU backend" err &&
	PENNY_PLUGIN_PATH=$fakes/nccl:$fakes penny allreduce-test --np 2 --backend nccl \
		--algo symmetric -b 8 -e 8 -n 1 >out &&
	grep -q "^# algorithm: symmetric, backend: nccl" out &&
	test_exit 2 penny allreduce-test --np 2 --backend fakeall --algo symmetric -b 8 -e 8 -n 1 2>err &&
	grep -q "the fakeall backend has no algorithm .symmetric." err
'
test_expect_success 'JSON: rows carry the backend and algorithm; ratios; devices' '
	penny allreduce-test --np 2 --backend fakeall,fake --algo all -b 1K -e 2K -f 2 -n 2 -G 2 \
		--json >out.json &&
	json_valid out.json &&
	python3 - out.json <<-\EOF
	import json, sys
	d = json.load(open(sys.argv[1]))
	rows = d["results"]
	seen = {(r["backend"], r["algo"]) for r in rows}
	assert seen == {("fakeall", a) for a in ("auto", "one-shot", "two-shot", "ring")} | \
	       {("fake", "auto"), ("fake", "one-shot")}, seen
	assert len(rows) == 12 and all(r["oop"]["wrong"] == 0 and r["ip"]["wrong"] == 0 for r in rows)
	assert all(r["ran"] in ("one-shot", "two-shot", "ring") for r in rows)
	assert [b["name"] for b in d["gpu_backends"]] == ["fakeall", "fake"]
	assert all(b["graph"] == 2 and not b["hierarchical"] for b in d["gpu_backends"])
	assert len(d["ratios"]) == 4 and all(r["ref_backend"] == "fakeall" for r in d["ratios"])
	assert all(r["backend"] == "fake" and r["ref_algo"] in ("auto", "one-shot", "two-shot", "ring")
	           for r in d["ratios"])
	assert d["summary"]["passed"]
	EOF
'
test_expect_success 'CSV has a backend column, the plot a series per backend and algorithm' '
	penny allreduce-test --np 2 --backend host,fake -b 1K -e 4K -f 2 -n 2 --csv rows.csv \
		--plot ar.svg >/dev/null &&
	head -1 rows.csv | grep -q "^algo,size,count,.*,ip_wrong,backend,oop_differ,ip_differ,oop_time_min_us," &&
	test "$(grep -c ",fake,0,0,[0-9.]*,[0-9.]*,[0-9.]*,[0-9.]*,5,1$" rows.csv)" -eq 3 &&
	test "$(grep -c ",host,0,0,[0-9.]*,[0-9.]*,[0-9.]*,[0-9.]*,5,1$" rows.csv)" -eq 3 &&
	grep -q "auto (fake)" ar.svg && grep -q "auto (host)" ar.svg
'
test_expect_success '--backend repeated is the same list' '
	penny allreduce-test --np 2 --backend fake --backend host -b 1K -e 1K -n 1 >out &&
	grep -q "backend fake,host" out && grep -q "^# ratios against fake" out
'
test_expect_success '#diff: ranks whose output is not bit-identical to rank 0s' '
	test_exit 1 penny allreduce-test --np 3 --backend fakeskew -b 64 -e 256 -f 4 -n 1 >out 2>err &&
	grep -q "#wrong  #diff" out &&
	test "$(awk "/^ +[0-9]+ / { print \$NF }" out | sort -u)" = 2 &&
	grep -q "^# Rank outputs differ  : 4 FAILED" out &&
	penny allreduce-test --np 3 --backend fakeskew -b 64 -e 64 -n 1 --json >out.json 2>/dev/null;
	python3 -c "import json,sys; d=json.load(open(sys.argv[1])); r=d[\"results\"][0];
assert r[\"oop\"][\"differ\"] == 1 and r[\"ip\"][\"differ\"] == 1, r
assert d[\"summary\"][\"differ\"] == 2 and not d[\"summary\"][\"passed\"]" out.json &&
	# every rank equally wrong: wrong values, yet bit-identical outputs
	test_exit 1 penny allreduce-test --np 2 --backend fakewrong -b 64 -e 64 -n 1 >out 2>err &&
	test "$(awk "/^ +[0-9]+ / { print \$NF }" out)" = 0 &&
	grep -q "^# Rank outputs differ  : 0 OK" out &&
	penny allreduce-test --np 3 --backend host -b 64 -e 4K -f 4 -n 1 >out &&
	test "$(awk "/^ +[0-9]+ / { print \$NF }" out | sort -u)" = 0
'
test_expect_success 'wrong values are counted over the ranks and exit 1' '
	test_exit 1 penny allreduce-test --np 2 --backend fakewrong -b 64 -e 64 -n 1 >out 2>err &&
	grep -q "Out of bounds values : 4 FAILED" out && grep -q "FAILED: 4 wrong values" out &&
	grep -q "the first at element 1" err
'
test_expect_success 'wrong values with --json: passed false and why, FAILED on stderr only' '
	test_exit 1 penny allreduce-test --np 2 --backend fakewrong -b 64 -e 64 -n 1 --json \
		>out.json 2>err &&
	json_valid out.json &&
	python3 -c "import json; s=json.load(open(\"out.json\"))[\"summary\"]
assert s[\"passed\"] is False and s[\"reason\"] == \"4 wrong values\"" &&
	grep -q "^penny allreduce-test: FAILED: 4 wrong values$" err
'
test_expect_success '--min-busbw applies to the GPU tables too' '
	test_exit 1 penny allreduce-test --np 2 --backend fake -b 1K -e 1K -n 2 --min-busbw 1000 >out &&
	grep -q "FAILED: average bus bandwidth" out
'
test_expect_success '-G without the capability: one line, exit 2' '
	test_exit 2 penny allreduce-test --np 2 --backend fakenograph -G 5 -b 1K -e 1K 2>err &&
	one_line err && grep -q "the fakenograph plugin cannot capture CUDA graphs" err &&
	penny allreduce-test --np 2 --backend fakenograph -b 1K -e 1K -n 1 >/dev/null
'
test_expect_success '-G and --gpus need a GPU backend; -G must not be negative' '
	test_exit 2 penny allreduce-test -G 5 2>err && one_line err && grep -q "needs a GPU backend" err &&
	test_exit 2 penny allreduce-test --gpus 0 2>err && one_line err && grep -q "needs a GPU backend" err &&
	test_exit 2 penny allreduce-test --backend fake -G -1 2>err && one_line err
'
test_expect_success '--gpus: the local rank picks its entry; bad lists are one line, exit 2' '
	penny allreduce-test --np 3 --backend fake --gpus 5,3,1 -b 1K -e 1K -n 1 >out &&
	grep -q "Rank   0 fake: fake device 5 of rank 0/3" out &&
	grep -q "Rank   1 fake: fake device 3 of rank 1/3" out &&
	grep -q "Rank   2 fake: fake device 1 of rank 2/3" out &&
	for bad in "" x 0,,1 0, 1,-2 99999 0:1; do
		test_exit 2 penny allreduce-test --backend fake --gpus "$bad" 2>err && one_line err || exit 1
	done &&
	test_exit 2 penny allreduce-test --np 3 --backend fake --gpus 0,1 -b 1K -e 1K 2>err &&
	one_line err && grep -q -- "--gpus .0,1. names 2 GPUs; local rank 2 .* needs one more" err
'
test_expect_success 'an algorithm the backend lacks: one line naming what it has, exit 2' '
	test_exit 2 penny allreduce-test --np 2 --backend fake --algo ring 2>err && one_line err &&
	grep -q "the fake backend has no algorithm .ring. (it has auto, one-shot, all)" err &&
	test_exit 2 penny allreduce-test --np 2 --backend fakeall --algo simple-ring 2>err &&
	one_line err && grep -q "no algorithm .simple-ring." err
'
test_expect_success 'a missing plugin: one line naming where it looked, exit 2' '
	test_exit 2 env PENNY_PLUGIN_PATH=$TRASH "$PENNY" allreduce-test --np 3 --backend nosuch 2>err &&
	one_line err && grep -q "the nosuch plugin (penny-nosuch.so) is not installed: searched $TRASH" err
'
test_expect_success 'a plugin whose init fails, or of another ABI: one line, exit 2' '
	test_exit 2 penny allreduce-test --np 3 --backend failinit 2>err && one_line err &&
	grep -q "failinit plugin: init: fake device is missing" err &&
	test_exit 2 penny allreduce-test --np 2 --backend badabi 2>err && one_line err &&
	grep -q "has ABI 7" err
'
test_expect_success 'completion offers the backends, -G, -g and --gpus come from the table' '
	penny __complete allreduce-test | grep -q "^--backend	-	NAME	-	host cuda nccl nvshmem$" &&
	penny __complete allreduce-test | grep -q "^--cudagraph	-G	N	0..100000	$" &&
	penny __complete allreduce-test | grep -q "^--gpus	-	LIST" &&
	penny __complete allreduce-test | grep -q "^--ngpus	-g	N	1..1024	$" &&
	penny __complete bw | grep -q "^--gpu-engine	-	ENGINE	-	ce sm both$"
'
test_expect_success 'bad backend names: one line, exit 2' '
	for b in "" "a/b" "host,host" "x,,y" "Cuda"; do
		test_exit 2 penny allreduce-test --backend "$b" 2>err && one_line err || exit 1
	done
'
for p in cuda nccl; do
	if [ ! -e "$BUILD/plugins/penny-$p.so" ]; then
		test_skip "--backend $p without a CUDA driver" "penny-$p.so not built (no nvcc)"
	elif ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1 '; then
		test_skip "--backend $p without a CUDA driver" "a CUDA driver is installed here"
	else
		test_expect_success "--backend $p without a CUDA driver: one line, exit 2" "
			test_exit 2 env PENNY_PLUGIN_PATH=$BUILD/plugins "$PENNY" allreduce-test --np 2 \
				--backend host,$p 2>err &&
			one_line err && grep -q \"$p plugin: init: cannot load the CUDA driver 'libcuda.so.1'\" err
		"
	fi
done

if [ -e "$BUILD/plugins/penny-nvshmem.so" ]; then
	test_skip "--backend nvshmem without NVSHMEM" "penny-nvshmem.so was built here"
else
	test_expect_success "--backend nvshmem without NVSHMEM: one line, exit 2" '
		test_exit 2 env PENNY_PLUGIN_PATH=$BUILD/plugins "$PENNY" allreduce-test --np 2 \
			--backend nvshmem,cuda --algo simple-ring 2>err &&
		one_line err && grep -q "the nvshmem plugin (penny-nvshmem.so) is not installed" err
	'
fi

# Two "nodes" of two ranks each (PENNY_NODE_ID), tcp between them.
two_nodes() {
	local port r pids= out=$1
	shift
	port=$(free_port) || return 1
	for r in 1 2 3; do
		PENNY_NODE_ID=n$((r / 2)) "$PENNY" allreduce-test --rank $r --nranks 4 \
			--root 127.0.0.1:$port --timeout 30 "$@" >/dev/null 2>err$r &
		pids="$pids $!"
	done
	PENNY_NODE_ID=n0 "$PENNY" allreduce-test --rank 0 --nranks 4 --root 127.0.0.1:$port \
		--timeout 30 "$@" >"$out" 2>err0
	local rc=$?
	for p in $pids; do wait $p || rc=1; done
	return $rc
}

# The host-staged path (PENNY_XNODE=0); the GPU-driven one is t0603's.
test_expect_success 'two nodes: the plugin runs hierarchically, every type x op exact' '
	export PENNY_XNODE=0 &&
	sizes() { case $1 in int8|uint8) echo 1;; half|bfloat16) echo 2;; int32|uint32|float) echo 4;;
		*) echo 8;; esac; }
	for t in int8 uint8 int32 uint32 int64 uint64 half bfloat16 float double; do
		es=$(sizes $t)
		for o in sum prod min max avg; do
			# counts 1, 3, 9, ..., 243: odd, below and above the 2 local ranks
			two_nodes out --backend fake -d $t -o $o -b $es -e $((243 * es)) -f 3 -n 0 -w 0 ||
				{ echo "$t $o failed"; cat out err*; exit 1; }
			grep -q "hierarchical over 2 nodes" out &&
			test "$(rows out)" -eq 6 &&
			grep -q "Out of bounds values : 0 OK" out || { echo "$t $o"; cat out; exit 1; }
		done
	done
'
test_expect_success 'two nodes: a plugin named cuda, timed, next to the host backend' '
	PENNY_XNODE=0 PENNY_PLUGIN_PATH=$fakes/cuda two_nodes out --backend host,cuda --algo auto,ring -b 1K -e 64K \
		-f 8 -n 2 -w 1 -d bfloat16 -o avg &&
	grep -q "4 ranks on 2 nodes" out && grep -q "via tcp" out &&
	grep -q "cuda: hierarchical over 2 nodes" out &&
	test "$(grep -c "Out of bounds values : 0 OK" out)" -eq 4 &&
	grep -q "^# ratios against host" out
'
test_expect_success 'two nodes: -G cannot capture the hierarchical allreduce (exit 2)' '
	! PENNY_XNODE=0 two_nodes out --backend fake -G 4 -b 1K -e 1K &&
	one_line err0 && grep -q "CUDA graphs cannot capture the fake allreduce across 2 nodes" err0
'
test_expect_success 'two nodes: a plugin that spans nodes itself runs flat' '
	two_nodes out --backend fakeflat -b 4 -e 4K -f 4 -n 1 -d int32 -o max &&
	! grep -q hierarchical out && grep -q "Out of bounds values : 0 OK" out
'
test_expect_success 'two nodes: a plugin without allgather cannot: one line, exit 2' '
	! two_nodes out --backend fakeold -b 4 -e 4 &&
	one_line err0 && grep -q "fakeold plugin .* cannot run across nodes: .* no allgather()" err0
'
test_expect_success 'two nodes of unequal size: one line, exit 2' '
	port=$(free_port) &&
	for r in 1 2; do
		PENNY_NODE_ID=n$((r / 2)) "$PENNY" allreduce-test --rank $r --nranks 3 \
			--root 127.0.0.1:$port --timeout 30 --backend fake >/dev/null 2>e$r &
	done
	! PENNY_NODE_ID=n0 penny allreduce-test --rank 0 --nranks 3 --root 127.0.0.1:$port \
		--timeout 30 --backend fake >/dev/null 2>err0;
	wait; one_line err0 && grep -q "same number of ranks on every node" err0
'

# penny bw --gpu on the cuda-named test plugin (memcpy between host buffers)
test_expect_success 'bw --gpu: the matrices, measured' '
	PENNY_PLUGIN_PATH=$fakes/cuda PENNY_FAKE_GPUS=3 penny bw --gpu -s 64K -n 2 >out &&
	grep -q "^# penny bw --gpu: 3 GPUs (cuda plugin), 65536 bytes per copy" out &&
	grep -q "copy engine (cuMemcpyAsync), unidirectional bandwidth (GB/s)" out &&
	grep -q "copy engine (cuMemcpyAsync), bidirectional bandwidth" out &&
	grep -q "copy engine, 4-byte copy latency (us)" out &&
	! grep -q "SM copy" out &&
	test "$(grep -cE "^ +[0-2]( +[0-9]+\.[0-9]+){3}$" out)" -eq 9 &&
	awk "/^ +[0-2] / && NF == 4 { for (i = 2; i <= 4; i++) if (\$i <= 0) bad = 1 } END { exit bad }" out
'
test_expect_success 'bw --gpu: engines, -b, --lat and JSON' '
	PENNY_PLUGIN_PATH=$fakes/cuda penny bw --gpu --gpu-engine both -b -s 64K -n 1 --json >out.json &&
	json_valid out.json &&
	python3 - out.json <<-\EOF
	import json, sys
	d = json.load(open(sys.argv[1]))
	assert d["mode"] == "gpu" and d["bytes"] == 65536 and len(d["devices"]) == 2
	m = [(x["engine"], x["test"], x["direction"]) for x in d["matrices"]]
	assert m == [("ce", "bandwidth", "bidirectional"), ("sm", "bandwidth", "bidirectional")], m
	assert all(len(x["values"]) == 2 and all(len(r) == 2 and min(r) > 0 for r in x["values"])
	           for x in d["matrices"])
	EOF
	PENNY_PLUGIN_PATH=$fakes/cuda penny bw --gpu --lat --gpu-engine sm -n 3 >out &&
	grep -q "SM dependent loads" out && ! grep -q bandwidth out
'
test_expect_success 'bw --gpu: bad usage is one line, exit 2' '
	for args in "--gpu-engine xx" "-s 1" "-b --lat" "localhost" "--loopback rxe0" "-q 2"; do
		test_exit 2 env PENNY_PLUGIN_PATH=$fakes/cuda "$PENNY" bw --gpu $args 2>err && one_line err ||
			{ echo "$args"; exit 1; }
	done &&
	test_exit 2 penny bw --gpu-engine sm 2>err && one_line err
'
test_expect_success 'bw --gpu without a GPU or plugin: one line, exit 2' '
	test_exit 2 env PENNY_PLUGIN_PATH=$TRASH "$PENNY" bw --gpu -s 64K 2>err && one_line err &&
	grep -qE "the cuda plugin \(penny-cuda.so\) is not installed|cannot load the CUDA driver|no CUDA device" err
'
test_expect_success 'bw --gpu with a plugin without bw(): one line, exit 2' '
	test_exit 2 env PENNY_PLUGIN_PATH=$fakes/cuda-nobw "$PENNY" bw --gpu 2>err && one_line err &&
	grep -q "the cuda plugin (.*cuda-nobw/penny-cuda.so.) has no bandwidth matrix" err
'
test_expect_success 'two ranks of one node on one GPU: one line naming them and the GPU, exit 2' '
	test_exit 2 penny allreduce-test --np 2 --backend fake --gpus 0,0 -b 1K -e 1K >out 2>err &&
	one_line err && grep -q "ranks 0 and 1 share one GPU (0000:00:00.0, as the fake plugin names it) on [^:]*: give each rank of a node its own" err &&
	test_exit 2 penny allreduce-test --np 3 --backend host,fake --gpus 1,0,1 -b 1K -e 1K 2>err &&
	one_line err && grep -q "ranks 0 and 2 share one GPU (0000:01:00.0, as the fake plugin" err &&
	port=$(free_port) &&
	for r in 1 0; do
		PENNY_NODE_ID=one penny allreduce-test --rank $r --nranks 2 --root 127.0.0.1:$port \
			--timeout 10 --backend fake --gpus 0,0 -b 1K -e 1K >out$r 2>err$r & eval p$r=$!
	done; wait $p0; rc0=$?; wait $p1; rc1=$? && test "$rc0 $rc1" = "2 2" && cat err0 err1 &&
	one_line err0 && test ! -s err1 && grep -q "ranks 0 and 1 share one GPU (0000:00:00.0, .*) on one:" err0
'
test_expect_success '--share-gpus: two ranks of one node on one GPU run, rank 0 warns once' '
	penny allreduce-test --np 2 --backend fake --gpus 0,0 --share-gpus -b 1K -e 1K >out 2>err &&
	one_line err &&
	grep -q "warning: ranks 0 and 1 share one GPU (0000:00:00.0) on [^ ]* (--share-gpus): they time-slice it" err &&
	grep -qE "^ +1024 " out &&
	penny coll-test reduce --np 3 --backend fake --gpus 1,0,1 --share-gpus -b 1K -e 1K >out 2>err &&
	one_line err && grep -q "ranks 0 and 2 share one GPU (0000:01:00.0)" err &&
	test_exit 2 penny coll-test reduce --np 2 --share-gpus -b 1K -e 1K 2>err && one_line err &&
	grep -q "^penny coll-test: --share-gpus lets ranks share a GPU: it needs a GPU backend" err &&
	port=$(free_port) &&
	for r in 1 0; do
		PENNY_NODE_ID=n$r penny allreduce-test --rank $r --nranks 2 --root 127.0.0.1:$port \
			--timeout 10 --backend fake --share-gpus -b 1K -e 1K >out$r 2>err$r & eval p$r=$!
	done; wait $p0; rc0=$?; wait $p1; rc1=$? && test "$rc0 $rc1" = "0 0" &&
	one_line err0 && grep -q "warning: ranks 0 and 1, on emulated nodes n0 and n1 of one host, share one GPU" err0
'
test_expect_success 'ranks of two nodes (PENNY_NODE_ID) on the GPU of the same index: they run' '
	port=$(free_port) &&
	for r in 1 0; do
		PENNY_NODE_ID=n$r penny allreduce-test --rank $r --nranks 2 --root 127.0.0.1:$port \
			--timeout 10 --backend fake -b 1K -e 1K >out$r 2>err$r & eval p$r=$!
	done; wait $p0; rc0=$?; wait $p1; rc1=$? && test "$rc0 $rc1" = "0 0" &&
	test "$(grep -c "^#  Rank   [01] fake: fake device -1 .* (0000:00:00.0)$" out0)" = 2 &&
	cat err0 && one_line err0 && test ! -s err1 &&
	grep -q "rank 0: warning: ranks 0 and 1, on emulated nodes n0 and n1 of one host, share one GPU (0000:00:00.0): the times measure the GPU shared" err0
'
test_done
