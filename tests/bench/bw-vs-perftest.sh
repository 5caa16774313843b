#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bw-vs-perftest.sh - penny bw against perftest on the same soft-RoCE link,
# in one lab VM: ib_write_bw and `penny bw` alternate on rxe0 -> rxe1 (across
# the veth pair) at 4 KiB, 64 KiB and 1 MiB with the same iterations, then
# ib_write_lat and `penny bw --lat`.  Prints both, and penny's ratio (bandwidth:
# penny / perftest, higher is better; latency: perftest / penny, higher is
# better).  rxe is CPU-bound: this measures software overhead, not a NIC.
#
# usage: tests/bench/bw-vs-perftest.sh [ROUNDS]   (default 3; medians reported)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)

if [ "${1:-}" = --guest ]; then
	rounds=$2
	penny() { "$top/penny" "$@"; }
	srv() { # wait for the perftest server's port
		for _ in $(seq 100); do
			[ -n "$(ss -Hltn 'sport = :18515')" ] && return 0
			sleep 0.1
		done
	}
	pt_bw() { # size iters -> Gb/s average
		timeout 120 ib_write_bw -d rxe1 -x 1 -s "$1" -n "$2" -F --report_gbits >/dev/null 2>&1 &
		srv
		timeout 120 ib_write_bw -d rxe0 -x 1 -s "$1" -n "$2" -F --report_gbits 10.0.0.2 >pt.txt
		wait
		awk '$1 == "'"$1"'" {print $4}' pt.txt
	}
	# (outputs go to a file first: a parser starting in a pipe would take
	# CPU from the run it parses)
	pn_bw() {
		penny bw --loopback rxe0,rxe1 -s "$1" -n "$2" --json >pn.json &&
			python3 -c 'import json,sys; print("%.3f" % json.load(sys.stdin)["links"][0]["results"][0]["bw_avg_gbps"])' <pn.json
	}
	pt_lat() { # median (t_typical)
		timeout 120 ib_write_lat -d rxe1 -x 1 -s 2 -n "$1" -F >/dev/null 2>&1 &
		srv
		timeout 120 ib_write_lat -d rxe0 -x 1 -s 2 -n "$1" -F 10.0.0.2 >pt.txt
		wait
		awk '$1 == "2" {print $5}' pt.txt
	}
	pn_lat() {
		penny bw --loopback rxe0,rxe1 --lat -s 2 -n "$1" --json >pn.json &&
			python3 -c 'import json,sys; print("%.2f" % json.load(sys.stdin)["links"][0]["results"][0]["lat_median_us"])' <pn.json
	}
	med() { sort -g | awk '{v[NR] = $1} END {print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
	printf '%-10s %8s %16s %16s %8s\n' size iters "ib_write_bw" "penny bw" ratio
	for spec in 4096:20000 65536:2000 1048576:200; do
		s=${spec%%:*} n=${spec#*:}
		: >pt.$s
		: >pn.$s
		for _ in $(seq "$rounds"); do
			pt_bw "$s" "$n" >>pt.$s
			pn_bw "$s" "$n" >>pn.$s
		done
		a=$(med <pt.$s) b=$(med <pn.$s)
		printf '%-10s %8s %11.3f Gb/s %11.3f Gb/s %7.2fx\n' "$s" "$n" "$a" "$b" \
			"$(awk -v a="$a" -v b="$b" 'BEGIN {print (a > 0 ? b / a : 0)}')"
		echo "#   rounds: ib_write_bw $(tr '\n' ' ' <pt.$s)| penny $(tr '\n' ' ' <pn.$s)"
	done
	: >pt.lat
	: >pn.lat
	for _ in $(seq "$rounds"); do
		pt_lat 1000 >>pt.lat
		pn_lat 1000 >>pn.lat
	done
	a=$(med <pt.lat) b=$(med <pn.lat)
	echo "#   rounds: ib_write_lat $(tr '\n' ' ' <pt.lat)| penny $(tr '\n' ' ' <pn.lat)"
	printf '%-10s %8s %13.2f us %13.2f us %7.2fx   (latency, median; ratio = perftest / penny)\n' \
		2 1000 "$a" "$b" "$(awk -v a="$a" -v b="$b" 'BEGIN {print (b > 0 ? a / b : 0)}')"
	rm -f pt.* pn.* pt.txt pn.json
	exit 0
fi

rounds=${1:-3}
[[ $rounds =~ ^[1-9][0-9]*$ ]] || { echo "usage: $0 [ROUNDS]" >&2; exit 2; }
[ -x "$top/penny" ] || make -C "$top" -j2 >/dev/null
work=$(mktemp -d "${TMPDIR:-/tmp}/penny-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
echo "# penny bw vs perftest on rxe0 -> rxe1 (soft-RoCE over a veth pair, qemu TCG), $rounds rounds, medians"
cd "$work"
bash "$top/tests/lab/vm.sh" --pairs 1 --timeout 1200 --share "$work" -- \
	"cd $(printf %q "$work") && bash $(printf %q "$here/bw-vs-perftest.sh") --guest $rounds"
