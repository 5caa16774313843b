#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The verbs layer on real soft-RoCE devices, two processes, one VM boot.
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/lab/lib-lab.sh"
lab_require
lab_tap --pairs 1 --timeout 400 -- verbs.sh
test_done
