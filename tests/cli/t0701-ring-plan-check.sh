#!/usr/bin/env bash
# penny ring-plan --check and --nccl-graph: JSON round trip, NCCL graph XML
# (well-formed, NCCL's format, parsed back), NCCL 2.28.9's own dump of a
# 4-GPU H200 node, damaged plans (one violation per line, exit 1).
. "$(dirname "$0")/../lib.sh"

FIX=$TOP/tests/fixtures/plan
T=$FIX/topo

xml_ok() { python3 -c 'import sys, xml.dom.minidom as m
for f in sys.argv[1:]: m.parse(f)' "$@"; }

test_expect_success 'JSON round trip: plan, read back, 0 violations' '
	penny ring-plan --nodes 4 --gpus 8 --nics 8 --json >p.json &&
	penny ring-plan --check p.json >out && grep -q "^check p.json: json, 4 nodes, 32 ranks, 8 rings$" out &&
	grep -q "^0 violations$" out
'
test_expect_success 'JSON round trip of a degraded plan from topology files (odd node count)' '
	penny ring-plan --json --topo-file $T/h100-node01.json,$T/uneven-node02-port-down.json,$T/h100-node03.json >d.json &&
	penny ring-plan --check d.json >out && grep -q "^0 violations$" out &&
	penny ring-plan --check d.json --json >c.json && json_valid c.json &&
	python3 -c "import json; d = json.load(open(\"c.json\")); assert d[\"ok\"] and d[\"nrings\"] == 7, d"
'
test_expect_success 'a damaged JSON plan: violations one per line, exit 1' '
	python3 - <<-PY &&
	import json
	d = json.load(open("p.json"))
	s = d["rings"][0]["segments"]
	s[1]["recv"] = {"nic": "mlx5_5", "rail": 5}
	s[2]["gpus"][3] = s[2]["gpus"][2]
	json.dump(d, open("bad.json", "w"))
	PY
	test_exit 1 penny ring-plan --check bad.json >out &&
	grep -q "^violation: ring 0: hop node01 mlx5_1 (rail 1) -> node02 mlx5_5 (rail 5) changes rail$" out &&
	grep -q "^violation: ring 0 visits rank 19 (node03 GPU3) twice$" out &&
	grep -q "^violation: ring 0 never visits rank 20 (node03 GPU4)$" out &&
	grep -q "^violation: node02 mlx5_5 (rail 5) receives for 2 rings, balanced is 1$" out &&
	grep -q "^violation: node02 mlx5_1 (rail 1) receives for no ring$" out &&
	grep -q "^violation: ring 0: node02 order takes 1 step over SYS (first mlx5_5->GPU1) where 0 suffice from mlx5_5 to mlx5_0$" out &&
	test "$(grep -c ^violation: out)" -eq "$(sed -n "s/^\([0-9]*\) violations$/\1/p" out)"
'
test_expect_success 'a damaged plan with --json: stdout only JSON, the verdict on stderr' '
	test_exit 1 penny ring-plan --check bad.json --json >out.json 2>err &&
	json_valid out.json &&
	n=$(python3 -c "import json; d = json.load(open(\"out.json\")); assert not d[\"ok\"], d; print(len(d[\"violations\"]))") &&
	test "$(wc -l <err)" -eq 1 &&
	grep -q "^penny ring-plan: FAILED: $n violations in bad.json$" err
'
test_expect_success 'a plan checked against another model (hosts matched by name)' '
	penny ring-plan --nodes 2 --gpus 4 --nics 4 --json >small.json &&
	penny ring-plan --check small.json --nodes 2 --gpus 4 --nics 4 >out && grep -q "^0 violations" out &&
	test_exit 1 penny ring-plan --check small.json --nodes 2 --gpus 6 --nics 4 >out &&
	grep -q "never visits rank 4 (node01 GPU4)" out
'
test_expect_success 'unreadable plans exit 2 with one line' '
	echo "{\"version\": 1, \"rings\": [" >trunc.json &&
	test_exit 2 penny ring-plan --check trunc.json 2>err && test "$(wc -l <err)" -eq 1 &&
	grep -q "line 2 column 1" err &&
	test_exit 2 penny ring-plan --check $T/h100-node01.json 2>err && grep -q "a topology file" err &&
	test_exit 2 penny ring-plan --check nope.json 2>err && grep -q "cannot open" err &&
	test_exit 2 penny ring-plan --check p.json,p.json 2>err && grep -q "only for NCCL graph XML" err
'
test_expect_success 'NCCL graph, 2 nodes: one shared file, well-formed, crossnic=2, parsed back' '
	penny ring-plan --nodes 2 --gpus 8 --nics 8 --nccl-graph g2.xml --summary >/dev/null &&
	xml_ok g2.xml &&
	grep -q "^<graphs version=\"1\">$" g2.xml &&
	grep -q "^  <graph id=\"0\" pattern=\"4\" crossnic=\"2\" nchannels=\"8\" speedintra=\"50\" speedinter=\"50\" latencyinter=\"0\" typeintra=\"NVL\" typeinter=\"PIX\" samechannels=\"0\">$" g2.xml &&
	test "$(grep -c "<channel>" g2.xml)" -eq 8 &&
	! grep -q "rank=" g2.xml && ! grep -q "	" g2.xml &&
	penny ring-plan --check g2.xml --nodes 2 --gpus 8 --nics 8 >out && grep -q "^0 violations" out
'
test_expect_success 'NCCL graph, channel 0 is: receive NIC, GPUs in ring order, send NIC' '
	python3 - <<-PY
	import xml.dom.minidom as m
	g = m.parse("g2.xml").getElementsByTagName("graph")[0]
	ch = g.getElementsByTagName("channel")[0]
	seq = [(e.tagName, e.getAttribute("dev")) for e in ch.childNodes if e.nodeType == 1]
	assert seq == [("net", "0"), ("gpu", "0"), ("gpu", "0x2"), ("gpu", "0x3"), ("gpu", "0x4"),
	               ("gpu", "0x5"), ("gpu", "0x6"), ("gpu", "0x7"), ("gpu", "0x1"), ("net", "0x1")], seq
	PY
'
test_expect_success 'NCCL graph, 3 nodes: a shared file is refused, one file per node works' '
	test_exit 2 penny ring-plan --nodes 3 --nccl-graph g3.xml 2>err >/dev/null &&
	grep -q "odd node count needs one file per node" err && test ! -e g3.xml &&
	penny ring-plan --nodes 3 --gpus 4 --nics 4 --nccl-graph "g3-%h.xml" --summary >/dev/null &&
	penny ring-plan --nodes 3 --gpus 4 --nics 4 --nccl-graph "n%n.xml" --summary >/dev/null &&
	xml_ok g3-node01.xml g3-node02.xml g3-node03.xml && cmp g3-node02.xml n1.xml &&
	grep -q "crossnic=\"0\"" g3-node02.xml && grep -q "<gpu dev=\"0x3\" rank=\"7\"/>" g3-node02.xml &&
	penny ring-plan --check g3-node01.xml,g3-node02.xml,g3-node03.xml --nodes 3 --gpus 4 --nics 4 >out &&
	grep -q "^0 violations" out
'
test_expect_success 'a shared NCCL file on an odd node count: NCCL crosses rails on the wrap hop' '
	test_exit 1 penny ring-plan --check g2.xml --nodes 3 --gpus 8 --nics 8 >out &&
	grep -q "^violation: ring 0: hop node03 mlx5_1 (rail 1) -> node01 mlx5_0 (rail 0) changes rail$" out &&
	test "$(grep -c "changes rail" out)" -eq 8
'
test_expect_success 'NCCL 2.28.9 NCCL_GRAPH_DUMP_FILE of 1 node x 4 H200: checked, 0 violations' '
	cp $FIX/nccl/nccl-dump-1x4.xml dump.xml &&
	penny ring-plan --check dump.xml >out &&
	grep -q "^check dump.xml: nccl-xml, 1 node, 4 ranks, 12 rings$" out &&
	grep -q "^note: .dump.xml.: graph id 1 (tree) with 12 channels not checked (rings only)$" out &&
	grep -q "^note: no model given" out && grep -q "^0 violations$" out &&
	penny ring-plan --check dump.xml --nodes 1 --gpus 4 --nics 0 >out && grep -q "^0 violations$" out
'
test_expect_success 'the graph files NCCL 2.28.9 loaded are what ring-plan writes today' '
	penny ring-plan --nodes 1 --gpus 4 --nics 0 --nccl-graph a.xml >/dev/null &&
	cmp a.xml $FIX/nccl/penny-1x4.xml &&
	penny ring-plan --nodes 1 --gpus 4 --nics 0 --rings 8 --nccl-graph b.xml >/dev/null &&
	cmp b.xml $FIX/nccl/penny-1x4-r8.xml &&
	grep -q "Search 0 : 2 channels loaded from XML graph" $FIX/nccl/results-h200.txt &&
	penny ring-plan --check $FIX/nccl/redump-penny-1x4.xml --nodes 1 --gpus 4 --nics 0 >out &&
	grep -q "^0 violations" out
'
test_expect_success 'NCCL XML that NCCL itself would reject is reported' '
	{ echo "<?xml version=\"1.0\"?>"; sed "s/^      <gpu dev=\"0x1\"/	<gpu dev=\"0x1\"/; s/ samechannels=\"1\"//" dump.xml; } >bad.xml &&
	test_exit 1 penny ring-plan --check bad.xml >out &&
	grep -q "NCCL.s XML reader cannot read this: an XML declaration" out &&
	grep -q "NCCL.s XML reader cannot read this: a tab" out &&
	grep -q "lacks \"samechannels\" (NCCL fails to load the file)" out
'
test_expect_success 'malformed XML: exit 2, one line with the line number' '
	printf "<graphs version=\"1\">\n  <graph id=\"0\">\n</graphs>\n" >m.xml &&
	test_exit 2 penny ring-plan --check m.xml 2>err && test "$(wc -l <err)" -eq 1 &&
	grep -q "m.xml. line 3: closing tag does not match" err
'
test_done
