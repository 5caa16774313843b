#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# penny top agrees with penny bw on real soft-RoCE traffic, one VM boot.
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/lab/lib-lab.sh"
lab_require
lab_tap --pairs 1 --timeout 300 -- top-bw.sh
test_done
