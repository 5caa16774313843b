#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Two "nodes" x two rails of soft-RoCE devices (vm.sh --pairs 2), one VM
# boot for two guest scripts: the multiring allreduce with a channel per rail
# and a ring plan (guest/multiring.sh); penny check's network checks under
# the engine's launcher (guest/check.sh): they pass; a link throttled by tc
# fails naming that NIC and node, one that barely moves too (within
# --timeout); a ring plan crossed on purpose fails the rails check naming
# the NIC that carried the bytes.
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/lab/lib-lab.sh"
lab_require
lab_tap --pairs 2 --timeout 900 -- multiring.sh check.sh
test_done
