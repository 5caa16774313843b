#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Verbs on real soft-RoCE devices (vm.sh --pairs 1: rxe0 <-> rxe1 across a
# veth), one VM boot for three guest scripts: the verbs layer between two
# processes (guest/verbs.sh), penny allreduce-test over the engine's verbs
# transport (guest/allreduce.sh), and the GPU path's cross-node proxy over
# verbs with the test plugin (guest/xnode.sh).
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/lab/lib-lab.sh"
lab_require
lab_tap --pairs 1 --timeout 1200 -- verbs.sh allreduce.sh xnode.sh
test_done
