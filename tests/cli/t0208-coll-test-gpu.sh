#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# penny coll-test --backend: every collective through the GPU plugins on a
# machine without a GPU.  The test plugin (tests/plugins/fake/fake.c, host
# memory) and the nccl plugin itself (plugins/nccl) over the fake NCCL and
# CUDA driver (tests/plugins/fake/fakenccl.c, fakecuda.c: NCCL's calls,
# grouped ncclSend/ncclRecv included, computed in host memory): odd counts,
# types and ops, roots, in place and out of place, 0 wrong; a wrong plugin
# caught; -G; the ratio table against nccl; and a plugin without the
# collective, its own algorithms or time_fn refused in one line, exit 2.
. "$(dirname "$0")/../lib.sh"

fakes=$BUILD/tests/plugins
export PENNY_PLUGIN_PATH=$fakes PENNY_FAKE_NCCL_DIR=$TRASH
one_line() { test "$(wc -l <"$1")" -eq 1 || { cat "$1"; return 1; }; }
ct() { penny coll-test "$@" --timeout 30 -w 0; }
# the nccl plugin of this build over the fake NCCL and CUDA driver (its
# copy without the data kernels, which the fake driver cannot load)
nccl() {
	env PENNY_PLUGIN_PATH="$fakes/ncclhost:$fakes" LD_LIBRARY_PATH="$fakes/fakecuda" \
		PENNY_NCCL_LIB="$fakes/fakenccl/libnccl.so.2" timeout 120 "$PENNY" "$@"
}
# every row of every backend 0 wrong out of and in place, at least N rows
all_right() {
	python3 - "$1" "$2" "$3" <<-\PY
	import json, sys
	d = json.load(open(sys.argv[1]))
	rows, want, backends = d["results"], int(sys.argv[2]), set(sys.argv[3].split(","))
	assert d["summary"]["passed"] and d["summary"]["wrong"] == 0, d["summary"]
	assert len(rows) >= want, (len(rows), want)
	assert {r["backend"] for r in rows} == backends, {r["backend"] for r in rows}
	assert all(r["oop"]["wrong"] == 0 and r["ip"]["wrong"] == 0 for r in rows)
	assert all(r["ran"] == "auto" for r in rows if r["backend"] != "host")
	PY
}
colls="allgather reducescatter alltoall broadcast reduce sendrecv"
# the fake NCCL reduces the integer types, float and double
types=(int8 float double uint64 int32 uint8)
ops=(sum prod min max avg sum)

i=0
for c in $colls; do
	for np in 1 2 3; do
		t=${types[$(((i + np) % 6))]} op=${ops[$(((i + np) % 6))]} root=$((np - 1))
		test_expect_success "$c np=$np $t $op root $root: fake and nccl, odd counts, 0 wrong" '
			nccl coll-test '$c' --np '$np' --backend fake,nccl -d '$t' -o '$op' \
				-r '$root' -b 1 -e 40K -f 13 -n 2 --timeout 30 -w 1 --json >out &&
			json_valid out && all_right out 8 fake,nccl
		'
	done
	i=$((i + 1))
done
test_expect_success 'the test plugin: every type x op, half and bfloat16 too, 0 wrong' '
	for c in reducescatter reduce; do
		ct $c --np 3 --backend fake -d all -o all -b 30 -e 30 -n 0 --json >$c.json &&
		all_right $c.json 50 fake || exit 1
	done &&
	ct alltoall --np 4 --backend fake -d all -b 1000 -e 1000 -n 0 --json >a.json &&
	all_right a.json 10 fake
'
test_expect_success 'the nccl table: nccl-tests columns, root, redop; the ratio table' '
	nccl coll-test reduce --np 3 --backend host,nccl -r 2 -o max -d int32 -b 1000 \
		-e 1000 -n 2 >out &&
	grep -q "backend: nccl" out && grep -qE "^ +1000 +250 +int32 +max +2 " out &&
	grep -q "^# ratios against nccl," out &&
	test "$(sed -n "/^# ratios/,\$p" out | grep -cE "^ +1000 host ")" -ge 1 &&
	grep -q "Out of bounds values : 0 OK" out
'
test_expect_success 'every call reaches NCCL as its own: ncclSend/ncclRecv in groups' '
	rm -f nccl.log &&
	PENNY_FAKE_NCCL_LOG=$TRASH/nccl.log nccl coll-test alltoall --np 3 --backend nccl \
		-b 96 -e 96 -n 1 --timeout 30 -w 0 >out &&
	test "$(grep -c "^rank 1 ncclSend 8 7 " nccl.log)" -ge 3 &&
	grep -q "^rank 2 ncclRecv 8 7 0$" nccl.log && grep -q "ncclGroupEnd" nccl.log &&
	for c in reducescatter:ncclReduceScatter broadcast:ncclBroadcast reduce:ncclReduce \
		 allgather:ncclAllGather; do
		rm -f nccl.log &&
		PENNY_FAKE_NCCL_LOG=$TRASH/nccl.log nccl coll-test ${c%%:*} --np 2 \
			--backend nccl -b 64 -e 64 -n 1 --timeout 30 -w 0 >out &&
		grep -q "^rank 0 ${c#*:} " nccl.log || { echo "$c"; exit 1; }
	done &&
	rm -f nccl.log &&
	PENNY_FAKE_NCCL_LOG=$TRASH/nccl.log nccl coll-test sendrecv --np 3 --backend nccl \
		-b 64 -e 64 -n 1 --timeout 30 -w 0 >out &&
	grep -q "^rank 1 ncclSend 16 7 2$" nccl.log && grep -q "^rank 1 ncclRecv 16 7 0$" nccl.log
'
test_expect_success 'nccl with --share-gpus: the ranks on one GPU named, one line, exit 2' '
	test_exit 2 nccl coll-test allgather --np 2 --backend nccl --gpus 0,0 --share-gpus -b 64 \
		-e 64 -n 1 --timeout 30 >out 2>err && one_line err &&
	grep -q "nccl plugin: init: ranks 0 and 1 share GPU 0000:10:00.0 on one node: NCCL runs one rank per GPU" err
'
# (its allgather is right: the hierarchical allreduce's step)
test_expect_success 'NCCL refuses a call: its error, named, one line a rank, exit 1' '
	test_exit 1 nccl coll-test reduce --np 2 --backend nccl -d bfloat16 -b 64 -e 64 -n 1 \
		--timeout 30 >out 2>err && one_line err &&
	grep -q "nccl plugin: reduce: ncclReduce: fake NCCL error: fake NCCL: no last error (NCCL error 4)" err
'
test_expect_success 'a plugin that gets it wrong: the wrong values counted, FAILED, exit 1' '
	for c in reducescatter alltoall broadcast reduce sendrecv; do
		test_exit 1 ct $c --np 2 --backend fakewrong -b 64 -e 64 -n 1 >out || exit 1
		grep -q "^# FAILED: [0-9]* wrong values" out || { echo $c; cat out; exit 1; }
	done
'
test_expect_success '-G: graphs of the calls timed; -g picks the devices' '
	ct broadcast --np 2 --backend fake -G 3 --gpus 1,0 -b 1K -e 1K -n 6 --json >out &&
	all_right out 1 fake &&
	test_exit 2 ct broadcast --np 2 --backend fakenograph -G 2 -b 8 -e 8 2>err && one_line err
'
test_expect_success 'a plugin without the collective: one line, exit 2, no crash' '
	test_exit 2 ct reducescatter --np 2 --backend fakeold -b 8 -e 8 2>err && one_line err &&
	grep -q "^penny coll-test: the fakeold plugin does not run reduce_scatter; --backend nccl does$" err &&
	test_exit 2 ct allgather --np 2 --backend host,fakeold -b 8 -e 8 >out 2>err && one_line err &&
	grep -q "the fakeold plugin does not run allgather" err &&
	PENNY_PLUGIN_PATH=$fakes/noxnode test_exit 2 ct alltoall --np 2 --backend fake -b 8 -e 8 \
		2>err && one_line err && grep -q "the fake plugin cannot time alltoall (it has no time_fn)" err
'
test_expect_success 'a GPU backend runs its librarys own algorithm: --algo auto or all' '
	ct alltoall --np 2 --backend host,fake --algo all -b 64 -e 64 -n 0 --json >out &&
	all_right out 4 host,fake &&
	test_exit 2 ct alltoall --np 2 --backend fake --algo pairwise -b 8 -e 8 2>err && one_line err &&
	grep -q "the fake backend runs its library.s own alltoall algorithm: --algo auto (or all), not .pairwise." err
'
# Two "nodes" of two ranks each (PENNY_NODE_ID), tcp between them: rank 0's exit status
two_nodes() {
	local port r pids= rc
	port=$(free_port) || return 1
	for r in 1 2 3; do
		PENNY_NODE_ID=n$((r / 2)) "$PENNY" coll-test "$@" --rank $r --nranks 4 \
			--root 127.0.0.1:$port --timeout 30 >out$r 2>err$r &
		pids="$pids $!"
	done
	PENNY_NODE_ID=n0 "$PENNY" coll-test "$@" --rank 0 --nranks 4 --root 127.0.0.1:$port \
		--timeout 30 >out 2>err0
	rc=$?
	for r in $pids; do wait $r; done
	return $rc
}
# A plugin that spans no nodes (fake, as cuda): host-staged between nodes,
# every result the engine's; the root on the second node; odd counts.
i=0
for c in $colls; do
	t=${types[$((i % 6))]} op=${ops[$((i % 6))]}
	test_expect_success "across two nodes x 2: $c $t $op root 3, host and fake, 0 wrong" '
		two_nodes '$c' --backend host,fake -d '$t' -o '$op' -r 3 -b 4 -e 40K -f 17 			-n 2 -w 1 --json && json_valid out && all_right out 8 host,fake &&
		python3 - out <<-\PY
		import json, sys
		d = json.load(open(sys.argv[1]))
		assert d["nnodes"] == 2 and d["nranks"] == 4, (d["nnodes"], d["nranks"])
		PY
	'
	i=$((i + 1))
done
# the root's tcp frames beyond what the sockets hold were still queued in
# its memory when its broadcast returned: the peers waited for them while
# it waited in the next step (the rows' gather), until --timeout
test_expect_success 'across two nodes: a 16 MiB broadcast from the second node returns on every rank' '
	two_nodes broadcast --backend fake -d int8 -r 3 -b 16M -e 16M -n 1 -w 0 --json &&
	all_right out 1 fake
'
test_expect_success 'across two nodes: -G refused in one line where the steps between run on the host' '
	export PENNY_XNODE=0 &&
	test_exit 2 two_nodes alltoall --backend fake -G 2 -b 8 -e 8 && one_line err0 &&
	grep -q "CUDA graphs cannot capture the fake alltoall across 2 nodes" err0
'
test_done
