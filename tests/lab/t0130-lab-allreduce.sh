#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# penny allreduce-test over the verbs transport on soft-RoCE, one VM boot.
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/lab/lib-lab.sh"
lab_require
lab_tap --pairs 1 --timeout 500 -- allreduce.sh
test_done
