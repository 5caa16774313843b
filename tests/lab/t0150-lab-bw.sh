#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# penny bw on real soft-RoCE devices: two hosts x two rails, one VM boot.
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/lab/lib-lab.sh"
lab_require
lab_tap --pairs 2 --timeout 600 -- bw.sh
test_done
