#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The captured rxe sysfs tree (tests/lab/capture-rxe.sh) replays through the
# sysfs root: the nic layer sees the two soft-RoCE devices as the lab made them.
. "$(dirname "$0")/../lib.sh"
fx=$TOP/tests/fixtures/sysfs-rxe-lab.tar.gz

test_expect_success 'the fixture unpacks; only directories, text files and relative symlinks' '
	mkdir root && tar -C root -xzf "$fx" &&
	test -z "$(find root ! -type d ! -type f ! -type l)" &&
	test -z "$(find root -type l -lname "/*")" &&
	test -z "$(find root -type f -exec grep -lP "[^\\x09\\x0a\\x20-\\x7e]" {} +)"
'
test_expect_success 'class links resolve inside the tree' '
	for l in root/sys/class/infiniband/rxe0 root/sys/class/net/veth1 \
		root/sys/devices/virtual/infiniband/rxe0/subsystem; do
		test -d "$l/" || { echo "dangling: $l"; exit 1; }
	done
'
test_expect_success 'nic layer: rxe0/rxe1 on veth0/veth1, ACTIVE RoCE, GID index 1 (IPv4-mapped v2)' '
	"$BUILD/tests/helpers/nic-dump" root >out &&
	cat >expect <<-\EOF &&
	rxe0 1 parent=veth0 pci=- vendor=0x0 type=CA state=ACTIVE phys=LinkUp rate=10 link=Ethernet netdev=veth0 lid=-1 gid_index=1 gid=0000:0000:0000:0000:0000:ffff:0a00:0001 gid_type=RoCE v2
	rxe1 1 parent=veth1 pci=- vendor=0x0 type=CA state=ACTIVE phys=LinkUp rate=10 link=Ethernet netdev=veth1 lid=-1 gid_index=1 gid=0000:0000:0000:0000:0000:ffff:0a00:0002 gid_type=RoCE v2
	EOF
	test_cmp expect out
'
test_expect_success 'counters were captured after traffic (hw_counters, netdev statistics)' '
	test "$(cat root/sys/class/infiniband/rxe0/ports/1/hw_counters/sent_pkts)" -gt 0 &&
	test "$(cat root/sys/class/net/veth0/statistics/tx_bytes)" -gt 1000000
'
test_done
