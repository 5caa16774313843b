#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The GPU path's cross-node proxy over verbs on soft-RoCE with the test
# plugin, one VM boot (guest side: tests/lab/guest/xnode.sh).
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/lab/lib-lab.sh"
lab_require
lab_tap --pairs 1 --timeout 500 -- xnode.sh
test_done
