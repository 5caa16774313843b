#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Multiring allreduce over two rails of soft-RoCE devices, one VM boot.
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/lab/lib-lab.sh"
lab_require
lab_tap --pairs 2 --timeout 400 -- multiring.sh
test_done
