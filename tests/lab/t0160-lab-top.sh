#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# penny top on real soft-RoCE devices (vm.sh --pairs 1), one VM boot for two
# guest scripts: top agrees with penny bw's traffic, live and recorded
# (guest/top-bw.sh); top's process view lists penny bw's pid with QPs on
# rxe0 and rxe1 while it runs, and not after (guest/top-procs.sh).
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/lab/lib-lab.sh"
lab_require
lab_tap --pairs 1 --timeout 600 -- top-bw.sh top-procs.sh
test_done
