#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Guest side of t0150 (then bw.sh): the rxe devices of "vm.sh --pairs N" work as verbs
# devices and traffic between the two ends of a pair crosses the veth wire.
. "$(dirname "$0")/lib-guest.sh"
read -r -a devs <<<"$LAB_DEVS"
read -r -a nds <<<"$LAB_NETDEVS"
read -r -a ips <<<"$LAB_IPS"

test_expect_success "ibv_devinfo lists ${#devs[@]} devices: ${devs[*]}" '
	ibv_devinfo -l >list &&
	grep -q "^${#devs[@]} HCAs\{0,1\} found" list &&
	for d in "${devs[@]}"; do grep -qx "[[:space:]]*$d" list || exit 1; done
'
test_expect_success 'every port is ACTIVE over Ethernet (RoCE)' '
	for d in "${devs[@]}"; do
		ibv_devinfo -d "$d" >info || exit 1
		grep -q "state:.*PORT_ACTIVE" info && grep -q "link_layer:.*Ethernet" info ||
			{ cat info; exit 1; }
	done
'
test_expect_success 'GID index 1 is the IPv4-mapped RoCE v2 GID of the netdev address' '
	for i in "${!devs[@]}"; do
		d=${devs[$i]}
		test "$(gid1 "$d")" = "$(v4gid "${ips[$i]}")" || { gid1 "$d"; exit 1; }
		test "$(</sys/class/infiniband/$d/ports/1/gid_attrs/types/1)" = "RoCE v2" || exit 1
		test "$(</sys/class/infiniband/$d/ports/1/gid_attrs/ndevs/1)" = "${nds[$i]}" || exit 1
		test "$(</sys/class/infiniband/$d/parent)" = "${nds[$i]}" || exit 1
	done
'

# tx bytes of a netdev
txb() {
	local v
	read -r v <"/sys/class/net/$1/statistics/tx_bytes" && echo "$v"
}
N=300 S=65536
test_expect_success "ib_write_bw loopback on ${devs[0]} ($S B x $N)" '
	perftest_pair ib_write_bw "${devs[0]}" "${devs[0]}" 127.0.0.1 -s $S -n $N -F >out &&
	bw=$(bw_avg <out) && echo "# rxe: ib_write_bw $S B loopback ${devs[0]}: $bw MB/s" >&3
' 3>&1
for p in $LAB_PAIRS; do
	a=${p%%:*} b=${p#*:}
	for i in "${!devs[@]}"; do
		[ "${devs[$i]}" = "$a" ] && na=${nds[$i]}
		[ "${devs[$i]}" = "$b" ] && ib=${ips[$i]}
	done
	test_expect_success "ib_write_bw $a -> $b crosses the veth wire ($S B x $N)" '
		before=$(txb "$na") &&
		perftest_pair ib_write_bw "$b" "$a" "$ib" -s $S -n $N -F >out &&
		after=$(txb "$na") &&
		test $((after - before)) -ge $((S * N)) &&
		bw=$(bw_avg <out) && echo "# rxe: ib_write_bw $S B $a -> $b: $bw MB/s" >&3
	' 3>&1
done
test_expect_success "rxe counted the packets (hw_counters of ${devs[0]})" '
	test "$(</sys/class/infiniband/${devs[0]}/ports/1/hw_counters/sent_pkts)" -gt $N &&
	test "$(</sys/class/infiniband/${devs[0]}/ports/1/hw_counters/rcvd_pkts)" -gt 0
'
guest_done
