#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# check-time.sh - wall time of `penny check --quick` and of the full
# `penny check` on the lab's two hosts x two rails (soft-RoCE in one qemu
# boot, launched as tests/lab/guest/check.sh launches it), against the same
# checks run as the separate tools a site scripts: ibv_devinfo, counter reads
# before and after, ib_write_bw per NIC pair and direction in a loop,
# `penny allreduce-test` on each node and across the job (standing in for
# nccl-tests), and the plan's allreduce between two reads of the byte
# counters.  Same sizes, iterations and seconds on both sides (the guest
# script, tests/lab/guest/check-time.sh, says which).  Prints each scripted
# step's time, the totals and penny's speed-up.  rxe in TCG is CPU-bound:
# this measures a sequence's overheads and waits, not a NIC.
#
# usage: tests/bench/check-time.sh [ROUNDS]   (default 3; medians reported)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)

rounds=${1:-3}
[[ $rounds =~ ^[1-9][0-9]*$ ]] || { echo "usage: $0 [ROUNDS]" >&2; exit 2; }
[ -x "$top/penny" ] || make -C "$top" -j2 >/dev/null
bash "$top/tests/lab/vm.sh" --check >/dev/null || { echo "$0: the lab cannot run here" >&2; exit 77; }
echo "# penny check vs the scripted tools, 2 nodes x 2 rails of soft-RoCE (qemu TCG, 2 vCPUs), $rounds rounds, medians"
bash "$top/tests/lab/vm.sh" --pairs 2 --timeout $((300 + 240 * rounds)) -- \
	"bash $(printf %q "$top/tests/lab/guest/check-time.sh") $rounds"
