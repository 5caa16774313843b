#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# penny top's process view on real soft-RoCE devices: while penny bw moves
# data between rxe0 and rxe1, RDMA netlink lists its pid with QPs on both.
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/lab/lib-lab.sh"
lab_require
lab_tap --pairs 1 --timeout 300 -- top-procs.sh
test_done
