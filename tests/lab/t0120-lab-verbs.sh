#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Verbs on real soft-RoCE devices (vm.sh --pairs 1: rxe0 <-> rxe1 across a
# veth), one VM boot for five guest scripts (a boot costs about 8 s of the
# lab's serial chain of guests): penny top agrees with penny bw's traffic,
# live and recorded (guest/top-bw.sh), and its process view lists penny
# bw's pid with QPs on rxe0 and rxe1 while it runs, and not after
# (guest/top-procs.sh), first, while no other job's traffic is about; then
# the verbs layer between two processes (guest/verbs.sh), penny
# allreduce-test over the engine's verbs transport (guest/allreduce.sh), and
# the GPU path's cross-node proxy over verbs with the test plugin
# (guest/xnode.sh).
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/lab/lib-lab.sh"
lab_require
lab_tap --pairs 1 --timeout 1800 -- top-bw.sh top-procs.sh verbs.sh allreduce.sh xnode.sh
test_done
