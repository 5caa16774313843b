#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Guest side of t0120 (after top-procs.sh): the verbs layer (src/transport/verbs.c) between two
# processes, through tests/helpers/verbs-pair, on rxe0 <-> rxe1 across a veth
# pair (vm.sh --pairs 1).
. "$(dirname "$0")/lib-guest.sh"
VP=$BUILD/tests/helpers/verbs-pair

# run the helper; its "ok"/"FAIL" lines become comments here, with the numbers
vp() {
	"$VP" "$@" >out 2>err
	rc=$?
	sed 's/^/# /' out >&3
	sed 's/^/# stderr: /' err >&3
	return $rc
}
# a helper run that must pass: exit 0, no FAIL line, at least one ok line
vp_ok() { vp "$@" && ! grep -q '^FAIL' out && grep -q '^ok' out; }

test_expect_success 'connect rxe0 -> rxe1: path MTU from the port (1024 on a 1500-byte veth)' '
	vp_ok connect && grep -q "path MTU 1024, 1 QPs" out
' 3>&1
test_expect_success 'write, write with immediate, read, send of 1 B .. 8 MiB, data checked (1 QP)' '
	vp_ok xfer && test "$(grep -c "^ok rdma\|^ok send" out)" = 32
' 3>&1
test_expect_success 'the same striped over 4 QPs (an immediate on each QP used)' '
	vp_ok -q 4 -s 1,4096,1M,8M xfer && test "$(grep -c "^ok rdma\|^ok send" out)" = 16 &&
	grep -q "8388608 B x 4 QPs (an immediate on each)" out
' 3>&1
test_expect_success 'many QPs: out-of-order completions across 8 QPs, each exactly once' '
	vp_ok -q 8 ooo && grep -q "each once" out && grep -q "out of posting order" out
' 3>&1
test_expect_success 'registration cache: hits and misses' '
	vp_ok cache
' 3>&1
test_expect_success 'loopback: both processes on rxe0' '
	vp_ok -d rxe0 -D rxe0 -s 1,65536,1M xfer
' 3>&1
test_expect_success 'path MTU 256 asked by one side only: both use 256, data intact' '
	vp_ok -m 256 -s 1,5000,1M xfer && grep -q "path MTU 256" out
' 3>&1
test_expect_success 'wrong GID index on one side: clear error naming both GIDs, no hang' '
	t0=$(date +%s) &&
	test_exit 1 vp -x 0 connect &&
	test $(($(date +%s) - t0)) -lt 15 &&
	grep -q "A: connect: cannot connect rxe0:1: GID mismatch: rxe0:1 uses index 0 fe80:" err &&
	grep -q "peer rxe1:1 uses index 1 ::ffff:10.0.0.2 (RoCE v2, IPv4)" err
' 3>&1
test_expect_success 'an empty GID index is refused when the device is opened' '
	test_exit 1 vp -x 7 connect && grep -q "GID index 7 of rxe0:1 is empty" err
' 3>&1
test_expect_success 'different QP counts on the two sides are refused' '
	test_exit 1 vp -q 2 -Q 3 connect && grep -q "use the same QP count on both sides" err
' 3>&1
test_expect_success 'an MTU above the port MTU is refused, naming the device' '
	test_exit 1 vp -m 4096 connect && grep -q "MTU 4096 exceeds the active MTU 1024 of rxe0:1" err
' 3>&1
test_expect_success 'an unknown device is named with the ones that exist' '
	test_exit 1 vp -d mlx5_9 connect && grep -q "no RDMA device .mlx5_9. (have: rxe0, rxe1)" err
' 3>&1
test_expect_success 'peer killed in the middle of a transfer: error within the timeout' '
	vp_ok -t 5 kill && grep -q "# error: .*rxe0:1.*qp 0x" out
' 3>&1
test_expect_success 'a send nobody receives times out (every wait is bounded)' '
	vp_ok -t 2 norecv &&
	grep -q "timed out after 2 s waiting for completions on rxe0:1 (1 QP from qp 0x" out
' 3>&1
test_expect_success 'dma-buf registration: a non-dma-buf fd fails clearly (no exporter here)' '
	vp_ok dmabuf
' 3>&1
guest_done
