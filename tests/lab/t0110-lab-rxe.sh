#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The lab's rxe devices: two hosts x two rails (vm.sh --pairs 2) in one boot.
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/lab/lib-lab.sh"
lab_require
lab_tap --pairs 2 --timeout 300 -- rxe.sh
test_done
