#!/usr/bin/env bash
# penny topo: golden text and JSON outputs over the real hwloc XML machines
# (tests/fixtures/hwloc, hwloc 3.x exports and their hwloc 2 copies) and the
# synthetic sysfs machines (tests/helpers/trees.sh).
# PENNY_UPDATE_GOLDEN=1 rewrites tests/fixtures/topo/*.
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/helpers/trees.sh"
unset PENNY_SYSROOT PENNY_NVML_LIB PENNY_DEBUG
G=$TOP/tests/fixtures/topo
X=$TOP/tests/fixtures/hwloc

# golden NAME FILE: compare FILE with the golden file NAME (or rewrite it)
golden() {
	if [ "${PENNY_UPDATE_GOLDEN:-}" = 1 ]; then
		cp "$2" "$G/$1"
	else
		test_cmp "$G/$1" "$2"
	fi
}

for f in "$X"/*.xml; do
	n=$(basename "$f" .xml)
	test_expect_success "xml $n: text matches the golden output" '
		penny topo --topo-xml "'"$f"'" >out.txt && golden xml-'"$n"'.txt out.txt
	'
	test_expect_success "xml $n: JSON is valid and matches the golden output" '
		penny topo --topo-xml "'"$f"'" --json >out.json && json_valid out.json &&
		golden xml-'"$n"'.json out.json
	'
	test_expect_success "xml $n: the hwloc 2 copy gives the same output" '
		penny topo --topo-xml "'"$X/v2/$n.xml"'" --json >v2.json &&
		penny topo --topo-xml "'"$f"'" --json >v3.json && test_cmp v3.json v2.json
	'
	if command -v lstopo-no-graphics >/dev/null; then
		test_expect_success "xml $n: lstopo (hwloc 2) reads the hwloc 2 copy" '
			lstopo-no-graphics --if xml -i "'"$X/v2/$n.xml"'" >lstopo.txt &&
			grep -q "^Machine" lstopo.txt
		'
		# hwloc 1.x XML has no NVLinkBandwidth: compare PCIe classes
		test_expect_success "xml $n: an hwloc 1.x export (lstopo) gives the same PCIe matrix" '
			rm -f v1.xml && lstopo-no-graphics --if xml -i "'"$X/v2/$n.xml"'" --of xml \
				--export-xml-flags v1 v1.xml && head -3 v1.xml | grep -q "^<topology>$" &&
			penny topo --topo-xml v1.xml --pcie --json | sed "s/\"nvlink_source\":\"[a-z]*\"//" >v1.json &&
			penny topo --topo-xml "'"$f"'" --pcie --json | sed "s/\"nvlink_source\":\"[a-z]*\"//" \
				>v3.json && test_cmp v3.json v1.json
		'
	else
		test_skip "xml $n: lstopo reads the hwloc 2 copy" "no lstopo-no-graphics (hwloc-nox)"
	fi
done

test_expect_success 'xml power8: NVLinks from the NVLinkBandwidth matrix, --pcie hides them' '
	penny topo --topo-xml "$X/power8gpudistances.xml" --pcie >out.txt &&
	golden xml-power8gpudistances-pcie.txt out.txt &&
	grep -q "^GPU0	 X 	NODE	SYS	SYS	" out.txt &&
	penny topo --topo-xml "$X/power8gpudistances.xml" >nv.txt &&
	grep -q "^GPU0	 X 	NV2	SYS	SYS	" nv.txt
'
test_expect_success 'xml: the matrix is symmetric and keyed by the matrix names' '
	for f in "$X"/*.xml; do penny topo --topo-xml "$f" --json; done >all.json &&
	python3 -c "
import json, sys
for line in open(\"all.json\"):
    d = json.loads(line)
    names = [g[\"name\"] for g in d[\"gpus\"]] + [n[\"name\"] for n in d[\"nics\"]]
    m = d[\"matrix\"]
    assert sorted(m) == sorted(names), (sorted(m), names)
    for a in names:
        assert m[a][a] == \"X\"
        for b in names:
            assert m[a][b] == m[b][a], (a, b)
    for r in d[\"rails\"]:
        assert all(m[r[\"gpu\"]][n] == r[\"class\"] for n in r[\"nics\"])
"
'

tree_switches sw
tree_ports ports
for t in sw:switches ports:ports; do
	d=${t%%:*} n=${t#*:}
	test_expect_success "sysfs $n: text matches the golden output" '
		penny topo --sysfs-root '"$d"' >out.txt && golden sysfs-'"$n"'.txt out.txt
	'
	test_expect_success "sysfs $n: JSON is valid and matches the golden output" '
		penny topo --sysfs-root '"$d"' --json >out.json && json_valid out.json &&
		golden sysfs-'"$n"'.json out.json
	'
	test_expect_success "sysfs $n: PENNY_SYSROOT is the same as --sysfs-root" '
		PENNY_SYSROOT='"$d"' penny topo --json >env.json &&
		penny topo --sysfs-root '"$d"' --json >opt.json && test_cmp opt.json env.json
	'
done
test_expect_success 'sysfs switches: one switch PIX, two switches PXB, host bridges NODE, NUMA SYS' '
	penny topo --sysfs-root sw >out.txt &&
	grep -q "^GPU0	 X 	PXB	NODE	SYS	PIX	SYS	0-3	0$" out.txt &&
	grep -q "^GPU3	SYS	SYS	SYS	 X 	SYS	PHB	4-7	1$" out.txt
'
test_expect_success 'sysfs ports: natural order, BMC VGA is no GPU, RoCE default GID is IPv4-mapped v2' '
	penny topo --sysfs-root ports --json >p.json &&
	python3 -c "
import json
d = json.load(open(\"p.json\"))
assert [n[\"device\"] for n in d[\"nics\"]] == [\"mlx5_0\", \"mlx5_1\", \"mlx5_2\", \"mlx5_10\", \"rxe0\", \"rxe1\"]
assert len(d[\"gpus\"]) == 1 and d[\"gpus\"][0][\"pci_busid\"] == \"0000:01:00.0\"
roce = d[\"nics\"][3][\"ports\"][0]
assert roce[\"link_layer\"] == \"Ethernet\" and roce[\"gid_index\"] == 3 and roce[\"netdev\"] == \"ens4f0\", roce
assert [n[\"ports\"][0][\"state\"] for n in d[\"nics\"][:3]] == [\"ACTIVE\", \"DOWN\", \"INIT\"]
# numa_node is -1 in the tree; its local CPUs all lie in node 0, and
# nvidia-smi then says NUMA Affinity 0 (seen on the H200 VMs): so do we
assert d[\"gpus\"][0][\"numa\"] == 0, d[\"gpus\"][0]
rxe0, rxe1 = d[\"nics\"][4], d[\"nics\"][5]
assert rxe0[\"pci_busid\"] == \"\" and rxe0[\"parent\"] == \"veth0\"
assert all(d[\"matrix\"][\"NIC4\"][k] == \"SYS\" for k in d[\"matrix\"] if k != \"NIC4\")
assert d[\"matrix\"][\"NIC5\"][\"NIC3\"] == \"PIX\"   # rxe1 rides mlx5_10s netdev
"
'
test_expect_success 'xml + sysfs root: ports of the XML NICs from the sysfs root' '
	penny topo --topo-xml "$X/32em64t-2n8c2t-pci-normalio.xml" --sysfs-root ports --json >xs.json &&
	python3 -c "
import json
d = json.load(open(\"xs.json\"))
assert d[\"source\"] == \"xml\" and d[\"host\"] == \"conan\"
p = d[\"nics\"][0][\"ports\"]
assert d[\"nics\"][0][\"device\"] == \"mlx5_0\" and len(p) == 1 and p[0][\"rate_gbps\"] == 400, p
" &&
	penny topo --topo-xml "$X/32em64t-2n8c2t-pci-normalio.xml" --json >x.json &&
	grep -q "\"ports\":\[\]" x.json
'
test_done
