#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Two hosts x two rails of soft-RoCE devices (vm.sh --pairs 2), one VM boot
# for two guest scripts: the lab's rxe devices work as verbs devices and
# traffic between a pair's ends crosses the veth wire (guest/rxe.sh), then
# penny bw on them (guest/bw.sh).
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/lab/lib-lab.sh"
lab_require
lab_tap --pairs 2 --timeout 900 -- rxe.sh bw.sh
test_done
