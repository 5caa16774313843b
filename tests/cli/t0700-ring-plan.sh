#!/usr/bin/env bash
# penny ring-plan: golden plans (1, 2, 3, 4, 16 nodes x 8 GPUs x 8 NICs, uneven
# inputs from topology files), JSON, option errors and exit codes.
# PENNY_UPDATE_GOLDEN=1 rewrites tests/fixtures/plan/golden/.
. "$(dirname "$0")/../lib.sh"

FIX=$TOP/tests/fixtures/plan
GOLD=$FIX/golden
T=$FIX/topo

# golden NAME ARGS...: the text output must match $GOLD/NAME.txt
golden() {
	local name=$1
	shift
	penny ring-plan "$@" >"$name.out" 2>"$name.err"
	echo "exit $?" >>"$name.out"
	if [ "${PENNY_UPDATE_GOLDEN:-}" = 1 ]; then
		cp "$name.out" "$GOLD/$name.txt"
	fi
	test_cmp "$GOLD/$name.txt" "$name.out"
}

for n in 1 2 3 4 16; do
	test_expect_success "golden plan: $n nodes x 8 GPUs x 8 NICs" "
		golden synth-${n}x8x8 --nodes $n --gpus 8 --nics 8
	"
done
test_expect_success 'golden plan: 3 nodes x 4 GPUs x 2 NICs, PCIe only, 2 GPUs per NIC' '
	golden synth-3x4x2-pcie --nodes 3 --gpus 4 --nics 2 --gpus-per-nic 2 --nvlinks 0
'
test_expect_success 'golden plan: 2 nodes x 4 GPUs x 8 NICs (two NICs per GPU)' '
	golden synth-2x4x8 --nodes 2 --gpus 4 --nics 8
'
test_expect_success 'golden plan: topology files, node03 lacks mlx5_5 (rail 5 left out)' '
	golden topo-missing-nic --topo-file $T/h100-node01.json,$T/h100-node02.json \
		--topo-file $T/uneven-node03-no-mlx5_5.json,$T/h100-node04.json &&
	grep -q "^note: rail 5 left out: node03 has no NIC on rail 5$" topo-missing-nic.out &&
	grep -q "^note: degraded: 7 of 8 rails in use" topo-missing-nic.out
'
test_expect_success 'golden plan: topology files, a port down, a GPU without a rail' '
	golden topo-port-down --topo-file $T/h100-node01.json,$T/uneven-node02-port-down.json &&
	grep -q "rail 1 left out: node02 mlx5_1 port 1 is DOWN" topo-port-down.out &&
	golden topo-gpu-norail --topo-file $T/h100-node01.json,$T/uneven-node02-gpu3-norail.json &&
	grep -q "no GPU is near mlx5_3 (rail 3) on node02" topo-gpu-norail.out
'
test_expect_success 'golden plan: topology files, mismatched rail counts (8 and 4 NICs)' '
	golden topo-4nics --topo-file $T/h100-node01.json,$T/uneven-node05-4nics.json --summary
'
test_expect_success 'golden plan: storage NICs left out with --rails, nodes ordered by --hosts' '
	golden topo-rails --topo-file $T/h100s-node01.json,$T/h100s-node02.json \
		--rails mlx5_0:1:0,mlx5_1:1:1,mlx5_2:1:2,mlx5_3:1:3,mlx5_4:1:4,mlx5_5:1:5,mlx5_6:1:6,mlx5_7:1:7 \
		--hosts snode02,snode01
'
test_expect_success '--rails: one rail, other device names on other nodes (not two ports of one node)' '
	sed "s/mlx5_0/mlx5_4/; s/mlx5_1/mlx5_5/" $T/pcie-node02.json >renamed.json &&
	penny ring-plan --topo-file $T/pcie-node01.json,renamed.json \
		--rails mlx5_0:1:0,mlx5_4:1:0,mlx5_1:1:1,mlx5_5:1:1 >out &&
	grep -q "^rails in use: 0 1; 2 rings$" out && grep -q "^0 violations$" out &&
	grep -q "^  pnode02    mlx5_5 r1 > GPU3 GPU2 GPU1 GPU0 > mlx5_4 r0$" out &&
	test_exit 2 penny ring-plan --topo-file $T/pcie-node01.json,renamed.json \
		--rails mlx5_0:1:0,mlx5_1:1:0 2>err &&
	grep -qx "penny ring-plan: --rails: rail 0 given to both mlx5_0:1 and mlx5_1:1, ports of one node" err
'
test_expect_success 'files written by penny topo plan across nodes (its sysfs-switches fixture)' '
	for h in a b c; do
		python3 -c "import json, sys
d = json.load(open(sys.argv[1])); d[\"host\"] = sys.argv[2]; json.dump(d, open(sys.argv[2] + \".json\", \"w\"))" \
			$TOP/tests/fixtures/topo/sysfs-switches.json $h || exit 1
	done &&
	penny ring-plan --topo-file a.json,b.json,c.json --json >abc.json &&
	python3 -c "
import json; d = json.load(open(\"abc.json\"))
assert d[\"nnodes\"] == 3 and d[\"nrings\"] == 2 and d[\"violations\"] == [], d[\"violations\"]
assert all(x[\"send\"] == 1 and x[\"recv\"] == 1 for x in d[\"nic_load\"] if x[\"active\"])
" &&
	penny ring-plan --check abc.json >out && grep -q "^0 violations$" out
'
test_expect_success 'every golden plan has every ring on every node and no violations' '
	for f in "$GOLD"/synth-*.txt "$GOLD"/topo-*.txt "$GOLD"/xml-*.txt; do
		grep -q "^0 violations$" "$f" && grep -q "^exit 0$" "$f" || { echo "$f"; exit 1; }
	done
'
test_expect_success 'the 16-node plan: 8 rings of 16 node lines, all NICs 1 send + 1 receive' '
	test "$(grep -c "^  node" synth-16x8x8.out)" -eq 128 &&
	test "$(grep -cE "^  mlx5_[0-7] +[0-7] +1 +1  all 16$" synth-16x8x8.out)" -eq 8
'
test_expect_success '--json is one valid JSON object with the rings and loads' '
	penny ring-plan --nodes 3 --gpus 4 --nics 4 --json >p.json &&
	json_valid p.json && test "$(wc -l <p.json)" -eq 1 &&
	python3 -c "
import json; d = json.load(open(\"p.json\"))
assert d[\"nnodes\"] == 3 and d[\"nranks\"] == 12 and d[\"nrings\"] == 4, d
assert d[\"violations\"] == [] and d[\"degraded\"] is False
r = d[\"rings\"][0]
assert [s[\"node\"] for s in r[\"segments\"]] == [\"node01\", \"node02\", \"node03\"]
for ring in d[\"rings\"]:
    for h in ring[\"hops\"]:
        assert h[\"rail\"] == h[\"recv_rail\"], h
assert all(x[\"send\"] == 1 and x[\"recv\"] == 1 for x in d[\"nic_load\"])
assert d[\"bandwidth\"][\"busbw_gbs\"] == 200
"
'
test_expect_success '--show-schedule: the engine steps follow the planned rings, every channel' '
	for r in 0 5 11; do
		penny ring-plan --nodes 3 --gpus 4 --nics 4 --json --show-schedule --schedule-rank $r \
			--schedule-size 4K >s$r.json || exit 1
		python3 - s$r.json $r <<-PY || exit 1
		import json, sys
		d = json.load(open(sys.argv[1])); me = int(sys.argv[2])
		rank0 = {n["host"]: n["rank0"] for n in d["nodes"]}
		sc = d["schedule"]
		assert sc["algo"] == "multiring" and sc["rank"] == me and sc["nchannels"] == d["nrings"], sc
		assert sum(1 for c in sc["channels"] for s in c["steps"]) > 0
		for k, ring in enumerate(d["rings"]):
		    order = [rank0[s["node"]] + g for s in ring["segments"] for g in s["gpus"]]
		    i = order.index(me)
		    nxt, prv = order[(i + 1) % len(order)], order[i - 1]
		    for st in sc["channels"][k]["steps"]:
		        assert st["send"] in (-1, nxt) and st["recv"] in (-1, prv), (k, st, nxt, prv)
		PY
	done &&
	penny ring-plan --nodes 2 --gpus 2 --nics 2 --show-schedule --schedule-size 256 >t.out &&
	grep -q "^schedule: multiring, rank 0 (node01 GPU0), 256 B = 64 float32, 2 channels" t.out &&
	test_exit 2 penny ring-plan --nodes 2 --show-schedule --schedule-rank 16 2>err &&
	grep -q "between 0 and 15" err
'
test_expect_success 'golden plan: one node from an hwloc XML (power8, NV2 pairs, SYS between)' '
	golden xml-power8 --topo-xml $TOP/tests/fixtures/hwloc/power8gpudistances.xml &&
	grep -q "^  drac-12.grenoble.grid5000.fr GPU0 GPU1 GPU2 GPU3 > GPU0$" xml-power8.out
'
test_expect_success 'this node (live, sysfs root or XML) without GPUs: nothing to plan, exit 2' '
	test_exit 2 penny ring-plan --topo-xml $TOP/tests/fixtures/hwloc/192em64t-12gr2n8c2t.xml 2>err &&
	test "$(wc -l <err)" -eq 1 && grep -q "has no GPU, so there is nothing to plan" err &&
	test_exit 2 penny ring-plan --sysfs-root /nonexistent/dir 2>err && test "$(wc -l <err)" -eq 1 &&
	{ penny ring-plan >live.out 2>err; rc=$?; } &&
	{ [ $rc -eq 0 ] && grep -q "^0 violations$" live.out ||
	  { [ $rc -eq 2 ] && grep -q "has no GPU" err; }; }
'
test_expect_success 'usage errors exit 2 with one line' '
	test_exit 2 penny ring-plan --nodes 2 --topo-file $T/h100-node01.json 2>err &&
	grep -q "not both" err &&
	test_exit 2 penny ring-plan --topo-xml x.xml --topo-file $T/h100-node01.json 2>err &&
	grep -q "not both" err &&
	test_exit 2 penny ring-plan --gpus 4 2>err && grep -q "needs --nodes" err &&
	test_exit 2 penny ring-plan --nodes 2 --gpus 17 2>err && grep -q "^penny ring-plan: --gpus must be 1..16, got 17$" err &&
	test_exit 2 penny ring-plan --nodes 2 --rails mlx5_0:1 2>err && grep -q "dev:port:rail" err &&
	test_exit 2 penny ring-plan --nodes 2 --rings 3 2>err && grep -q "not a multiple" err &&
	test_exit 2 penny ring-plan --nodes 2 --hosts a,b,c 2>err && grep -q "more hosts" err &&
	test_exit 2 penny ring-plan --topo-file nope.json 2>err && grep -q "cannot open .nope.json." err &&
	test_exit 2 penny ring-plan --nodes 2 extra 2>err && grep -q "unexpected argument" err &&
	test_exit 2 penny ring-plan --check x.json --rings 2 2>err && grep -q "for planning" err
'
test_expect_success 'broken topology files are refused precisely' '
	printf "{\"version\": 1, \"host\": \"h\", \"gpus\": [{\"name\": \"GPU0\"}], \"rails\": [{\"gpu\": \"GPU9\", \"nics\": []}]}" >bad.json &&
	test_exit 2 penny ring-plan --topo-file bad.json 2>err &&
	grep -q "bad.json. line 1: rails: unknown GPU .GPU9." err &&
	printf "{\"version\": 1,\n \"host\": }" >bad2.json &&
	test_exit 2 penny ring-plan --topo-file bad2.json 2>err && grep -q "bad2.json.: line 2 column 10" err &&
	test_exit 2 penny ring-plan --topo-file $T/h100-node01.json,$T/h100-node01.json 2>err &&
	grep -q "host .node01. appears twice" err
'
test_expect_success 'no rail usable on every node: refused with the reason, exit 2' '
	test_exit 2 penny ring-plan --topo-file $T/h100-node01.json,$T/uneven-node06-nonics.json 2>err &&
	grep -q "no rail has an active NIC on every node (8 rails; first: node06 has no NIC on rail 0)" err
'
test_expect_success '--no-degrade refuses a degraded cluster with exit 1 and the reasons' '
	test_exit 1 penny ring-plan --no-degrade --topo-file $T/h100-node01.json,$T/uneven-node02-port-down.json 2>err &&
	grep -q "rail 1 left out: node02 mlx5_1 port 1 is DOWN" err &&
	grep -q "refusing to plan around 1 missing rail" err &&
	penny ring-plan --no-degrade --nodes 2 --summary >/dev/null
'
test_expect_success 'completion lists the ring-plan options' '
	penny __complete ring-plan | cut -f1 | grep -qx -- --nccl-graph &&
	penny __complete ring-plan | cut -f1 | grep -qx -- --topo-file
'
test_done
