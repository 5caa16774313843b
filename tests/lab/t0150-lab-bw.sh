#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Two hosts x two rails of soft-RoCE devices (vm.sh --pairs 2), one VM boot
# for four guest scripts (a boot costs about 8 s of the lab's serial chain
# of guests): the lab's rxe devices work as verbs devices and traffic
# between a pair's ends crosses the veth wire (guest/rxe.sh), then penny bw
# on them (guest/bw.sh); then, as two "nodes" x two rails, the multiring
# allreduce with a channel per rail and a ring plan (guest/multiring.sh),
# and penny check's network checks under the engine's launcher
# (guest/check.sh): they pass; a link throttled by tc fails naming that NIC
# and node, one that barely moves too (within --timeout); a ring plan
# crossed on purpose fails the rails check naming the NIC that carried the
# bytes.
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/lab/lib-lab.sh"
lab_require
lab_tap --pairs 2 --timeout 1800 -- rxe.sh bw.sh multiring.sh check.sh
test_done
