#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Time `penny topo --topo-xml FILE` against `lstopo --if xml -i FILE`
# (hwloc-nox) on the largest hwloc XML fixture, in one run, several runs each.
#
#   tests/bench/topo-vs-lstopo.sh [RUNS] [FILE]      (after make; default 30 runs)
#
# FILE defaults to the largest fixture in tests/fixtures/hwloc/v2 (hwloc 2
# XML, which lstopo 2.x reads; penny reads it as is).  penny is also timed on
# the hwloc 3 original, which it converts in memory.  Both write to
# /dev/null; a run is fork+exec+load+print, timed with the monotonic clock.
# Prints median/min/mean per command and the ratio of medians; exits 1 when
# the target is missed: penny's median under 50 ms and not slower than lstopo.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
penny=${PENNY:-$top/penny}
runs=${1:-30}
file=${2:-$(ls -S "$top"/tests/fixtures/hwloc/v2/*.xml | head -1)}
orig=$top/tests/fixtures/hwloc/$(basename "$file")
lstopo=$(command -v lstopo || command -v lstopo-no-graphics) ||
	{ echo "topo-vs-lstopo: no lstopo (install hwloc-nox)" >&2; exit 2; }
[ -x "$penny" ] || { echo "topo-vs-lstopo: no penny binary at '$penny' (run make)" >&2; exit 2; }
[ -r "$file" ] || { echo "topo-vs-lstopo: cannot read '$file'" >&2; exit 2; }

# time_runs N CMD...: prints one elapsed time per run, in microseconds
time_runs() {
	local n=$1 i t0 t1
	shift
	for ((i = 0; i < n; i++)); do
		t0=$(date +%s%N)
		"$@" >/dev/null 2>&1
		t1=$(date +%s%N)
		echo $(((t1 - t0) / 1000))
	done
}

# stats: "median min mean" in ms of the microsecond values on stdin
stats() {
	sort -n | awk '{ v[NR] = $1; s += $1 } END {
		m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
		printf "%.2f %.2f %.2f\n", m / 1000, v[1] / 1000, s / NR / 1000 }'
}

for cmd in "$penny topo --topo-xml" "$lstopo --if xml -i"; do
	$cmd "$file" >/dev/null 2>&1 || { echo "topo-vs-lstopo: failed: $cmd $file" >&2; exit 2; }
done
# interleave the two commands' runs so that machine noise hits both alike
p_us=() l_us=() o_us=()
for ((r = 0; r < runs; r++)); do
	p_us+=("$(time_runs 1 "$penny" topo --topo-xml "$file")")
	l_us+=("$(time_runs 1 "$lstopo" --if xml -i "$file")")
	[ -r "$orig" ] && o_us+=("$(time_runs 1 "$penny" topo --topo-xml "$orig")")
done
read -r pm pmin pmean < <(printf '%s\n' "${p_us[@]}" | stats)
read -r lm lmin lmean < <(printf '%s\n' "${l_us[@]}" | stats)

echo "topo-vs-lstopo: $(basename "$file") ($(wc -c <"$file") bytes), $runs runs each, interleaved"
printf '  %-40s median %7.2f ms  min %7.2f ms  mean %7.2f ms\n' \
	"penny topo --topo-xml (hwloc 2 XML)" "$pm" "$pmin" "$pmean"
if [ ${#o_us[@]} -gt 0 ]; then
	read -r om omin omean < <(printf '%s\n' "${o_us[@]}" | stats)
	printf '  %-40s median %7.2f ms  min %7.2f ms  mean %7.2f ms\n' \
		"penny topo --topo-xml (hwloc 3 original)" "$om" "$omin" "$omean"
fi
printf '  %-40s median %7.2f ms  min %7.2f ms  mean %7.2f ms\n' \
	"$(basename "$lstopo") --if xml -i" "$lm" "$lmin" "$lmean"
ratio=$(awk -v a="$pm" -v b="$lm" 'BEGIN { printf "%.2f", a / b }')
echo "  ratio penny/lstopo (medians): $ratio"
if awk -v a="$pm" -v b="$lm" 'BEGIN { exit !(a < 50 && a <= b) }'; then
	echo "  target (penny < 50 ms and not slower than lstopo): met"
else
	echo "  target (penny < 50 ms and not slower than lstopo): MISSED"
	exit 1
fi
