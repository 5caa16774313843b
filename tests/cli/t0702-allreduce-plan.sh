#!/usr/bin/env bash
# allreduce-test --plan: the multiring runs the rings of a ring-plan JSON file.
# Without RDMA the connections are shm/tcp, so no NIC is bound, but the ring
# orders must be the plan's: the header lists them, and --debug=COLL shows
# what every rank's schedule does on every channel (it must send to the
# ring's next rank and receive from its previous one, the same schedule as
# ring-plan --show-schedule prints).  Two "nodes" come from PENNY_NODE_ID.
. "$(dirname "$0")/../lib.sh"


# run4 SPLIT ARGS...: ranks 0..SPLIT-1 on node a, the rest on node b; rc0..rc3, out0, err0..err3
run4() {
	local split=$1 port r node pids=
	shift
	port=$(free_port) || return 1
	for r in 1 2 3; do
		if [ $r -lt "$split" ]; then node=a; else node=b; fi
		PENNY_NODE_ID=$node "$PENNY" allreduce-test --rank $r --nranks 4 --root 127.0.0.1:$port \
			--timeout 30 -n 2 -w 1 "$@" >out$r 2>err$r &
		pids="$pids $!"
	done
	PENNY_NODE_ID=a "$PENNY" allreduce-test --rank 0 --nranks 4 --root 127.0.0.1:$port --timeout 30 \
		-n 2 -w 1 "$@" >out0 2>err0
	echo $? >rc0
	r=1
	for p in $pids; do
		wait $p
		echo $? >rc$r
		r=$((r + 1))
	done
}

# The header's rings (want: "0 1 3 2/1 0 2 3") and every rank's schedule against them.
check_rings() {
	python3 - "$1" <<-'PY'
	import re, sys, glob
	want = [[int(x) for x in r.split()] for r in sys.argv[1].split("/")]
	got = [[int(x) for x in m.group(2).split()] for m in
	       re.finditer(r"^#  Ring (\d+):((?: \d+)+)$", open("out0").read(), re.M)]
	assert got == want, (got, want)
	n = len(want[0])
	seen = set()
	for f in glob.glob("err[0-9]"):
	    for m in re.finditer(r"multiring schedule \(planned rings\), rank (\d+), \d+ elements: "
	                         r"channel (\d+) sends to (-?\d+), receives from (-?\d+)", open(f).read()):
	        r, k, to, frm = map(int, m.groups())
	        i = want[k].index(r)
	        assert to == want[k][(i + 1) % n] and frm == want[k][(i - 1) % n], (f, m.group(0))
	        seen.add((r, k))
	assert len(seen) == n * len(want), sorted(seen)
	print("rings as planned:", want)
	PY
}

test_expect_success 'plans: 2 nodes x 2 GPUs x 2 NICs (hosts a,b and b,a), 1 node x 4 GPUs' '
	penny ring-plan --nodes 2 --gpus 2 --nics 2 --hosts a,b --json >ab.json &&
	penny ring-plan --nodes 2 --gpus 2 --nics 2 --hosts b,a --json >ba.json &&
	penny ring-plan --nodes 1 --gpus 4 --nics 0 --json >one.json &&
	penny ring-plan --check ab.json >/dev/null && penny ring-plan --check one.json >/dev/null
'
test_expect_success '2 nodes over tcp: the plan'"'"'s rings (not the generated 0 1 2 3), 0 wrong' '
	run4 2 --plan ab.json -b 1K -e 1M -f 32 --debug=COLL &&
	cat rc0 rc1 rc2 rc3 | tr -d "\n" | grep -qx 0000 &&
	grep -q "4 ranks on 2 nodes" out0 && grep -q "via tcp" out0 &&
	grep -q "^# algorithm: multiring, backend: host$" out0 &&
	grep -q "^# Plan ab.json: 2 rings, nodes matched by host name$" out0 &&
	test "$(grep -c "Out of bounds values : 0 OK" out0)" -eq 1 &&
	check_rings "0 1 3 2/1 0 2 3"
'
test_expect_success 'nodes matched by name: the plan with b first runs its rings from node b' '
	run4 2 --plan ba.json -b 64K -e 64K --debug=COLL &&
	cat rc0 rc1 rc2 rc3 | tr -d "\n" | grep -qx 0000 &&
	grep -q "Out of bounds values : 0 OK" out0 &&
	check_rings "2 3 1 0/3 2 0 1"
'
test_expect_success 'rings reversed in the plan file run reversed (by position: no names match)' '
	python3 - <<-PY &&
	import json
	d = json.load(open("ab.json"))
	for n in d["nodes"]:
	    n["host"] = {"a": "x", "b": "y"}[n["host"]]
	for r in d["rings"]:
	    segs = r["segments"][::-1]
	    for s in segs:
	        s["node"] = {"a": "x", "b": "y"}[s["node"]]
	        s["gpus"] = s["gpus"][::-1]
	        s["recv"], s["send"] = s["send"], s["recv"]
	    r["segments"] = segs
	    del r["hops"]  # derived from the segments; stale once they are reversed
	json.dump(d, open("rev.json", "w"))
	PY
	penny ring-plan --check rev.json >check.out && grep -q "^0 violations$" check.out &&
	run4 2 --plan rev.json -b 64K -e 64K --debug=COLL &&
	cat rc0 rc1 rc2 rc3 | tr -d "\n" | grep -qx 0000 &&
	grep -q "nodes matched by position" out0 && grep -q "Out of bounds values : 0 OK" out0 &&
	check_rings "2 3 1 0/3 2 0 1"
'
test_expect_success 'ring-plan --check --show-schedule prints the schedule the engine ran' '
	run4 2 --plan ab.json -b 1M -e 1M --debug=COLL &&
	for r in 0 1 2 3; do
		penny ring-plan --check ab.json --show-schedule --schedule-rank $r --schedule-size 1M \
			--json >sched$r.json || exit 1
	done &&
	python3 - <<-PY
	import json, re, glob
	eng = {}
	for f in glob.glob("err[0-9]"):
	    for m in re.finditer(r"rank (\d+), 262144 elements: channel (\d+) sends to (-?\d+), "
	                         r"receives from (-?\d+), (\d+) steps", open(f).read()):
	        r, k, to, frm, n = map(int, m.groups())
	        eng[(r, k)] = (to, frm, n)
	assert len(eng) == 8, eng
	for r in range(4):
	    s = json.load(open("sched%d.json" % r))["schedule"]
	    assert s["rank"] == r and s["count"] == 262144
	    for c in s["channels"]:
	        st = c["steps"]
	        to = next(x["send"] for x in st if x["send"] >= 0)
	        frm = next(x["recv"] for x in st if x["recv"] >= 0)
	        assert eng[(r, c["channel"])] == (to, frm, c["nsteps"]), (r, c["channel"], eng)
	PY
'
test_expect_success '--np 4 on one node: a ring order edited in the plan is the one that runs' '
	python3 - <<-PY &&
	import json
	d = json.load(open("one.json"))
	d["rings"][0]["segments"][0]["gpus"] = [0, 2, 1, 3]
	json.dump(d, open("one-edit.json", "w"))
	PY
	rm -f err[0-9] &&
	penny allreduce-test --np 4 --plan one-edit.json -b 4K -e 256K -f 8 -n 2 -w 1 --debug=COLL \
		>out0 2>err0 &&
	grep -q "via shm" out0 && test "$(grep -c "Out of bounds values : 0 OK" out0)" -eq 1 &&
	check_rings "0 2 1 3/0 3 2 1"
'
test_expect_success 'the plan in --json output' '
	penny allreduce-test --np 4 --plan one.json -b 1K -e 1K -n 1 -w 0 --json >o.json &&
	python3 -c "import json; d = json.load(open(\"o.json\"))
p = d[\"plan\"]
assert p[\"file\"] == \"one.json\" and p[\"nrings\"] == 2 and not p[\"by_name\"], p
assert p[\"rings\"] == [[0, 1, 2, 3], [0, 3, 2, 1]], p
assert d[\"summary\"][\"passed\"] and d[\"results\"][0][\"algo\"] == \"multiring\""
'
test_expect_success 'a 1-node plan on 2 nodes: every rank exits 2, one line in all' '
	run4 2 --plan one.json -b 1K -e 1K &&
	cat rc0 rc1 rc2 rc3 | tr -d "\n" | grep -qx 2222 &&
	cat err0 err1 err2 err3 >err && test "$(wc -l <err)" -eq 1 &&
	grep -qx "penny allreduce-test: --plan: the plan is for 1 node, the job runs on 2" err
'
test_expect_success 'ranks per node differ from the plan (3 + 1): exit 2, one line' '
	run4 3 --plan ab.json -b 1K -e 1K &&
	cat rc0 rc1 rc2 rc3 | tr -d "\n" | grep -qx 2222 &&
	cat err0 err1 err2 err3 >err && test "$(wc -l <err)" -eq 1 &&
	grep -qx "penny allreduce-test: --plan: plan node .a. has 2 GPUs, the job.s node 0 (a) has 3 ranks" err
'
test_expect_success 'plan hosts that name only some nodes: exit 2, one line' '
	penny ring-plan --nodes 2 --gpus 2 --nics 2 --hosts a,c --json >ac.json &&
	run4 2 --plan ac.json -b 1K -e 1K &&
	cat rc0 rc1 rc2 rc3 | tr -d "\n" | grep -qx 2222 &&
	cat err0 err1 err2 err3 >err && test "$(wc -l <err)" -eq 1 &&
	grep -q "name only 1 of the job.s 2 nodes (plan node .c. is not in the job, job node .b. not in the plan)" err
'
test_expect_success '--np 4 with a 2-node plan; a plan that fails validation; no file: exit 2, one line' '
	test_exit 2 penny allreduce-test --np 4 --plan ab.json -b 1K -e 1K 2>err &&
	test "$(wc -l <err)" -eq 1 && grep -q -- "--plan: the plan is for 2 nodes, the job runs on 1$" err &&
	python3 - <<-PY &&
	import json
	d = json.load(open("one.json"))
	d["rings"][1]["segments"][0]["gpus"] = [0, 3, 3, 1]
	json.dump(d, open("dup.json", "w"))
	PY
	test_exit 2 penny allreduce-test --np 4 --plan dup.json -b 1K -e 1K 2>err &&
	test "$(wc -l <err)" -eq 1 &&
	grep -q "plan .dup.json. fails validation: ring 1 visits rank 3 (node01 GPU3) twice (2 violations" err &&
	test_exit 2 penny allreduce-test --np 2 --plan nope.json 2>err &&
	test "$(wc -l <err)" -eq 1 && grep -q "cannot open .nope.json." err
'
test_expect_success '--plan runs multiring only' '
	test_exit 2 penny allreduce-test --plan ab.json --algo ring 2>err &&
	grep -q "plan runs the multiring algorithm; it cannot run --algo ring" err &&
	test_exit 2 penny allreduce-test --plan ab.json --algo multiring,ring 2>err &&
	test_exit 2 penny allreduce-test --plan ab.json --backend host,nccl 2>err &&
	test "$(wc -l <err)" -eq 1 &&
	grep -q -- "--plan: the host engine runs multiring over the plan, a GPU plugin its ring" err
'
# GPU plugins: set_rings hands them the plan's rings (the test plugins show
# them in their description); one without it is refused, not run off the plan.
export PENNY_PLUGIN_PATH=$BUILD/tests/plugins
test_expect_success '--plan with a GPU backend: the plugin gets the plan'"'"'s rings, in order' '
	penny allreduce-test --np 4 --plan one-edit.json --backend fakeall -b 1K -e 4K -n 1 -w 0 \
		--algo ring >out0 2>err0 &&
	grep -q "^# algorithm: ring, backend: fakeall$" out0 &&
	test "$(grep -c "^#  Rank   [0-3] fakeall: .*, rings 0>2>1>3 0>3>2>1$" out0)" -eq 4 &&
	grep -q "Out of bounds values : 0 OK" out0
'
test_expect_success 'two nodes, a plugin spanning them: every rank gets the rings by host name' '
	run4 2 --plan ba.json --backend fakeflat -b 1K -e 1K &&
	cat rc0 rc1 rc2 rc3 | tr -d "\n" | grep -qx 0000 &&
	test "$(grep -c "fakeflat: .*, rings 2>3>1>0 3>2>0>1$" out0)" -eq 4
'
test_expect_success 'a plugin without planned rings, or one node wide across two: exit 2, one line' '
	test_exit 2 penny allreduce-test --np 4 --plan one.json --backend fakeold -b 1K -e 1K 2>err &&
	test "$(wc -l <err)" -eq 1 &&
	grep -qx "penny allreduce-test: the fakeold plugin plans its own rings: --plan needs a plugin that runs planned rings (nvshmem)" err &&
	run4 2 --plan ab.json --backend fake -b 1K -e 1K &&
	cat rc0 rc1 rc2 rc3 | tr -d "\n" | grep -qx 2222 &&
	cat err0 err1 err2 err3 >err && test "$(wc -l <err)" -eq 1 &&
	grep -q "the fake plugin spans one node (across nodes penny runs it hierarchically)" err
'
test_done
