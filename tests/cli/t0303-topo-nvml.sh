#!/usr/bin/env bash
# penny topo: NVLink counts from NVML (dlopen), checked with a fake
# libnvidia-ml (tests/helpers/nvml/fake-nvml.c) over a synthetic machine.
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/helpers/trees.sh"
unset PENNY_SYSROOT PENNY_NVML_LIB PENNY_DEBUG FAKE_NVML_LINKS FAKE_NVML_INIT_FAIL
tree_switches sw
G0=0000:03:00.0 G1=0000:07:00.0 G2=0000:41:00.0 G3=0000:81:00.0
cc=${NVML_TEST_CC:-cc}
if ! command -v "$cc" >/dev/null; then
	test_skip 'fake NVML' "no C compiler ($cc) to build the fake libnvidia-ml"
	test_done
	exit
fi
"$cc" -shared -fPIC -o libfake-nvml.so "$TOP/tests/helpers/nvml/fake-nvml.c" &&
	"$cc" -shared -fPIC -DNO_REMOTE_TYPE -o libfake-nvml-old.so "$TOP/tests/helpers/nvml/fake-nvml.c" ||
	exit 1

nv() { PENNY_NVML_LIB=$PWD/${LIB:-libfake-nvml.so} "$PENNY" topo --sysfs-root sw "$@"; }
row() { grep "^$1	" "$2" | cut -f2-5; }

test_expect_success 'NVSwitch: 18 switch links per GPU are NV18 between every pair' '
	FAKE_NVML_LINKS="$G0>switch*18;$G1>switch*18;$G2>switch*18;$G3>switch*18" nv >out &&
	test "$(row GPU0 out)" = " X 	NV18	NV18	NV18" &&
	test "$(row GPU3 out)" = "NV18	NV18	NV18	 X " &&
	grep -q "NVLinks from nvml$" out
'
test_expect_success 'direct links: counted once per pair, the larger side wins' '
	FAKE_NVML_LINKS="$G0>$G1*4;$G1>$G0*4;$G2>$G3*2" nv >out &&
	test "$(row GPU0 out)" = " X 	NV4	NODE	SYS" &&
	test "$(row GPU2 out)" = "NODE	NODE	 X 	NV2" &&
	test "$(row GPU3 out)" = "SYS	SYS	NV2	 X "
'
test_expect_success 'direct plus switch links add up; a GPU without switch links gets none' '
	FAKE_NVML_LINKS="$G0>$G1*2;$G1>$G0*2;$G0>switch*4;$G1>switch*6;$G2>switch*6" nv >out &&
	test "$(row GPU0 out)" = " X 	NV6	NV4	SYS" &&
	test "$(row GPU1 out)" = "NV6	 X 	NV6	SYS"
'
test_expect_success 'JSON carries NV# and nvlink_source; --pcie shows PCIe classes' '
	FAKE_NVML_LINKS="$G0>switch*18;$G1>switch*18" nv --json >out.json &&
	python3 -c "
import json
d = json.load(open(\"out.json\"))
assert d[\"nvlink_source\"] == \"nvml\" and d[\"matrix\"][\"GPU0\"][\"GPU1\"] == \"NV18\", d[\"matrix\"]
assert d[\"matrix\"][\"GPU0\"][\"NIC0\"] == \"PIX\"
assert [r[\"class\"] for r in d[\"rails\"]] == [\"PIX\", \"PXB\", \"NODE\", \"PHB\"]
" &&
	FAKE_NVML_LINKS="$G0>switch*18;$G1>switch*18" nv --pcie >out &&
	test "$(row GPU0 out)" = " X 	PXB	NODE	SYS" && grep -q "(not shown: --pcie)" out
'
test_expect_success 'links to a CPU (IBM NPU) are no GPU-GPU links' '
	FAKE_NVML_LINKS="$G0>$G1*2;$G0>npu*2;$G1>npu*2" nv >out &&
	test "$(row GPU0 out)" = " X 	NV2	NODE	SYS"
'
test_expect_success 'old NVML without the remote device type: switches known by PCI vendor' '
	FAKE_NVML_LINKS="$G0>$G1*3;$G0>switch*8;$G1>switch*8;$G0>npu*2;$G1>npu*2" \
		LIB=libfake-nvml-old.so nv >out &&
	test "$(row GPU0 out)" = " X 	NV11	NODE	SYS"
'
test_expect_success 'NVML that fails to initialize: PCIe classes, exit 0, quiet' '
	FAKE_NVML_LINKS="$G0>switch*18;$G1>switch*18" FAKE_NVML_INIT_FAIL=1 nv >out 2>err &&
	test ! -s err && test "$(row GPU0 out)" = " X 	PXB	NODE	SYS" &&
	grep -q "NVLinks from nowhere$" out
'
test_expect_success 'a GPU NVML does not know (other vendor, hidden) has no NVLinks' '
	FAKE_NVML_LINKS="$G0>switch*18;$G1>switch*18;$G2>switch*18" nv >out 2>err &&
	test "$(row GPU0 out)" = " X 	NV18	NV18	SYS" &&
	test "$(row GPU3 out)" = "SYS	SYS	SYS	 X " && test ! -s err
'
test_expect_success 'NVML that knows none of the GPUs: PCIe classes' '
	FAKE_NVML_LINKS="0000:99:00.0>switch*18" nv >out 2>err &&
	test "$(row GPU0 out)" = " X 	PXB	NODE	SYS" && grep -q "NVLinks from nowhere$" out
'
test_expect_success 'missing or broken NVML library: PCIe classes, exit 0, quiet' '
	LIB=nonexistent.so nv >out 2>err && test ! -s err && grep -q "NVLinks from nowhere$" out &&
	echo "not a library" >broken.so && LIB=broken.so nv >out 2>err && test ! -s err &&
	cp "$TOP/tests/helpers/nvml/fake-nvml.c" notlib.so && LIB=notlib.so nv >/dev/null 2>err &&
	test ! -s err
'
test_expect_success 'a library without the NVML symbols is ignored' '
	printf "int unrelated(void) { return 0; }\n" >other.c && "$cc" -shared -fPIC -o other.so other.c &&
	LIB=other.so nv >out 2>err && test ! -s err && grep -q "NVLinks from nowhere$" out
'
test_expect_success 'replayed sysfs without PENNY_NVML_LIB never asks the live NVML' '
	"$PENNY" topo --sysfs-root sw >out && grep -q "NVLinks from nowhere$" out
'
test_done
