#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# penny check's network checks (nic-bw, rails) on two "nodes" x two rails of
# soft-RoCE devices under the engine's launcher, one VM boot: it passes; a
# link throttled by tc fails naming that NIC and node, one that barely moves
# too (within --timeout); a ring plan crossed on purpose fails the rails
# check naming the NIC that carried the bytes.
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/lab/lib-lab.sh"
lab_require
lab_tap --pairs 2 --timeout 500 -- check.sh
test_done
