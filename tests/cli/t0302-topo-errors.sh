#!/usr/bin/env bash
# penny topo: unreadable inputs are one clear line and exit 2; --save; stdout errors.
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/helpers/trees.sh"
unset PENNY_SYSROOT PENNY_NVML_LIB PENNY_DEBUG
X=$TOP/tests/fixtures/hwloc

# one_line_exit2 PATTERN penny ARGS...: exit 2, exactly one stderr line matching PATTERN
one_line_exit2() {
	local pat=$1
	shift
	test_exit 2 "$@" >out 2>err || return 1
	if [ "$(wc -l <err)" -ne 1 ] || ! grep -q -- "$pat" err; then
		echo "stderr:"; cat err; return 1
	fi
	test ! -s out
}

test_expect_success 'missing XML file' '
	one_line_exit2 "^penny topo: cannot open ./nonexistent/topo.xml.: No such file" \
		penny topo --topo-xml /nonexistent/topo.xml
'
test_expect_success 'a directory as XML file' '
	mkdir d && one_line_exit2 "^penny topo: .d. is a directory, not a regular file$" penny topo --topo-xml d
'
test_expect_success 'a file that is not hwloc XML' '
	echo "hello world" >hello.txt &&
	one_line_exit2 "^penny topo: .hello.txt. is not an hwloc XML topology$" penny topo --topo-xml hello.txt &&
	printf "<html><body/></html>" >page.html &&
	one_line_exit2 "is not an hwloc XML topology" penny topo --topo-xml page.html &&
	head -c 4096 /dev/urandom >random.bin &&
	one_line_exit2 "^penny topo: " penny topo --topo-xml random.bin &&
	: >empty.xml && one_line_exit2 "is not an hwloc XML topology" penny topo --topo-xml empty.xml
'
test_expect_success 'truncated hwloc XML (v2 and v3)' '
	head -c 6000 "$X/v2/24em64t-2n6c2t-pci.xml" >cut2.xml &&
	one_line_exit2 "^penny topo: .cut2.xml.: malformed XML at line 56: unterminated tag$" \
		penny topo --topo-xml cut2.xml &&
	head -c 6000 "$X/24em64t-2n6c2t-pci.xml" >cut3.xml &&
	one_line_exit2 "^penny topo: .cut3.xml.: malformed XML at line 54: unterminated tag$" \
		penny topo --topo-xml cut3.xml
'
test_expect_success 'hwloc XML broken inside (bad object type, bad cpuset)' '
	sed "s/type=\"Package\"/type=\"Frobnicator\"/" "$X/v2/24em64t-2n6c2t-pci.xml" >bad1.xml &&
	one_line_exit2 "cannot load hwloc XML .bad1.xml." penny topo --topo-xml bad1.xml &&
	sed "0,/<object type=\"Machine\"[^>]*>/s//<object type=\"Machine\">/" \
		"$X/v2/24em64t-2n6c2t-pci.xml" >bad2.xml &&
	one_line_exit2 "cannot load hwloc XML .bad2.xml." penny topo --topo-xml bad2.xml
'
# A PU without complete_cpuset before a sibling: libhwloc 2.9 dereferences NULL.
cat >crash.xml <<'XML'
<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE topology SYSTEM "hwloc2.dtd">
<topology version="2.0">
  <object type="Machine" os_index="0" cpuset="0x00000003" complete_cpuset="0x00000003" nodeset="0x00000001" complete_nodeset="0x00000001" gp_index="1">
    <object type="NUMANode" os_index="0" cpuset="0x00000003" complete_cpuset="0x00000003" nodeset="0x00000001" complete_nodeset="0x00000001" gp_index="2"/>
    <object type="PU" os_index="0" cpuset="0x00000001" gp_index="3"/>
    <object type="PU" os_index="1" cpuset="0x00000002" complete_cpuset="0x00000002" gp_index="4"/>
  </object>
</topology>
XML
test_expect_success 'XML that crashes libhwloc: one line, exit 2, no crash' '
	one_line_exit2 "^penny topo: hwloc crashed reading hwloc XML .crash.xml.: invalid topology$" \
		penny topo --topo-xml crash.xml
'
test_expect_success 'hwloc messages on stderr are kept out (XML without NUMA node)' '
	grep -v "type=\"NUMANode\"" crash.xml | sed "s/<object type=\"PU\" os_index=\"0\" cpuset=\"0x00000001\"/& complete_cpuset=\"0x00000001\"/" >nonuma.xml &&
	one_line_exit2 "^penny topo: cannot load hwloc XML .nonuma.xml.: invalid or unsupported topology$" \
		penny topo --topo-xml nonuma.xml
'
test_expect_success 'unsupported hwloc XML version' '
	sed "s/version=\"3.0\"/version=\"9.1\"/" "$X/24em64t-2n6c2t-pci.xml" >v9.xml &&
	one_line_exit2 "^penny topo: .v9.xml.: hwloc XML version 9 is not supported$" \
		penny topo --topo-xml v9.xml
'
test_expect_success 'missing or unusable sysfs root' '
	one_line_exit2 "cannot open sysfs root ./nonexistent/root." penny topo --sysfs-root /nonexistent/root &&
	mkdir emptyroot &&
	one_line_exit2 "^penny topo: sysfs root .emptyroot. has no sys/devices/system/cpu$" \
		penny topo --sysfs-root emptyroot &&
	echo x >afile && one_line_exit2 "afile" penny topo --sysfs-root afile &&
	one_line_exit2 "has no sys/devices/system/cpu" env PENNY_SYSROOT=emptyroot "$PENNY" topo
'
test_expect_success 'a sysfs root with CPUs only: no devices, exit 0' '
	sys_root cpuonly h && sys_cpus 2 1 && penny topo --sysfs-root cpuonly >out &&
	grep -q "^No GPUs or RDMA NICs found" out
'
test_expect_success 'a damaged sysfs tree (dangling links, garbage values) does not crash' '
	tree_ports dmg && rm -r dmg/sys/devices/pci0000:00/0000:00:02.0 &&
	echo garbage >dmg/sys/devices/pci0000:00/0000:00:04.0/0000:04:00.0/numa_node &&
	echo "zz" >dmg/sys/class/infiniband/mlx5_10/ports/1/state &&
	penny topo --sysfs-root dmg --json >out.json && json_valid out.json
'
test_expect_success 'positional arguments are refused' '
	one_line_exit2 "unexpected argument .extra." penny topo extra
'
test_expect_success '--save writes the JSON (same as --json) whatever the output mode' '
	tree_switches sw && penny topo --sysfs-root sw --save saved.json >out.txt &&
	grep -q "^GPU0" out.txt && json_valid saved.json &&
	penny topo --sysfs-root sw --json >out.json && test_cmp out.json saved.json &&
	penny topo --sysfs-root sw --json --save saved2.json >out2.json && test_cmp out.json saved2.json
'
test_expect_success '--save to an unwritable place: one line, exit 2' '
	one_line_exit2 "cannot write ./nonexistent/dir/x.json." \
		penny topo --topo-xml "$X/v2/24em64t-2n6c2t-pci.xml" --save /nonexistent/dir/x.json &&
	if [ -w /dev/full ]; then
		test_exit 2 penny topo --topo-xml "$X/v2/24em64t-2n6c2t-pci.xml" --save /dev/full \
			>/dev/null 2>err && test "$(wc -l <err)" -eq 1 &&
		grep -q "refusing to write ./dev/full.: it is a character device" err
	fi
'
test_expect_success 'write error on standard output is reported' '
	if [ -w /dev/full ]; then
		penny topo --topo-xml "$X/24em64t-2n6c2t-pci.xml" >/dev/full 2>err;
		test $? -ne 0 && grep -q "write error" err
	fi
'
test_done
