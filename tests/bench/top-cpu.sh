#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# CPU time and memory of `penny top` at a 1 s interval with 16 fake devices x
# 2 ports whose counters move every 0.5 s: the ncurses screen (in tmux,
# 200x50, every port on screen), the batch table, --json, --prom, and the
# flight recorder (--record) beside the table and --json.
#
#   tests/bench/top-cpu.sh [SECONDS [MODE...]]
#
# SECONDS defaults to 60; MODEs (default all): screen table json prom record
# json-record.  env PENNY=path/to/penny.
#
# CPU time is the sum over the process's threads of /proc/PID/task/*/schedstat
# (nanoseconds on the CPU), cross-checked with utime+stime of /proc/PID/stat
# (clock ticks); RSS is sampled every 5 s after a 3 s warm-up.  Target for
# the screen, the batch table, --json and --prom: less than 0.2% of one
# core; RSS flat in every mode (the last reading within 64 KiB of the
# first: a memory-growth check over the run; give 600 for the 10 minutes
# of issue #14).  The recorder's modes read every counter and write about
# 70 KB a second (the table's with --record-max 16M, so that a 10-minute run
# rotates the file twice): their CPU is reported, not judged; their RSS is.
# Exits 1 when a target is missed.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
PENNY=${PENNY:-$top/penny}
secs=${1:-60}
shift $(($# > 0))
modes=" ${*:-screen table json prom record json-record} "
for m in $modes; do
	case $m in
	screen | table | json | prom | record | json-record) ;;
	*) echo "top-cpu.sh: unknown mode '$m' (screen table json prom record json-record)" >&2; exit 2 ;;
	esac
done
want() { [[ $modes == *" $1 "* ]]; }
target=0.2
work=$(mktemp -d "${TMPDIR:-/tmp}/penny-bench.XXXXXX")
sock=penny-bench-$$
runner=
cleanup() {
	[ -n "$runner" ] && kill "$runner" 2>/dev/null
	tmux -L "$sock" kill-server 2>/dev/null
	[ -n "${pid:-}" ] && kill "$pid" 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT

python3 "$top/tests/helpers/top/fakesys.py" make "$work/tree" --devices 16 --ports 2 || exit 2
rates=()
for d in $(seq 0 15); do
	rates+=(--rate "mlx5_$d/1=$((d * 1000000 + 1000000)):$((d * 2000000 + 500000))")
	rates+=(--rate "mlx5_$d/2=$((d * 300000 + 4000)):$((d * 700000 + 4000))")
done
python3 "$top/tests/helpers/top/fakesys.py" run "$work/tree" --period 0.5 "${rates[@]}" &
runner=$!
nfiles=$(find "$work/tree/sys/class/infiniband" -type f | wc -l)
hz=$(getconf CLK_TCK)

cpu_ns() { # sum of the threads' time on the CPU
	local t s=0 v
	for t in /proc/"$1"/task/*/schedstat; do
		read -r v _ <"$t" 2>/dev/null && s=$((s + v))
	done
	echo "$s"
}
ticks() { awk '{print $14 + $15}' /proc/"$1"/stat; }
rss_kb() { awk '/^VmRSS:/ {print $2}' /proc/"$1"/status; }

# measure NAME PID [TARGET]: CPU over $secs seconds after a warm-up, RSS every
# 5 s; without TARGET the CPU figure is for information
fail=0
measure() {
	local name=$1 pid=$2 tgt=${3:-} c0 c1 k0 k1 t0 t1 rss=() i pct tpct rmin rmax rs
	sleep 3
	c0=$(cpu_ns "$pid") k0=$(ticks "$pid") t0=$(date +%s.%N)
	for ((i = 0; i < secs; i += 5)); do
		rss+=("$(rss_kb "$pid")")
		sleep $((secs - i < 5 ? secs - i : 5))
	done
	rss+=("$(rss_kb "$pid")")
	c1=$(cpu_ns "$pid") k1=$(ticks "$pid") t1=$(date +%s.%N)
	read -r pct tpct rmin rmax < <(python3 -c "
import sys
c0, c1, k0, k1, t0, t1, hz = map(float, sys.argv[1:8])
rss = [int(x) for x in sys.argv[8:]]
wall = t1 - t0
print(f'{(c1 - c0) / 1e9 / wall * 100:.4f} {(k1 - k0) / hz / wall * 100:.3f} {min(rss)} {max(rss)}')
" "$c0" "$c1" "$k0" "$k1" "$t0" "$t1" "$hz" "${rss[@]}")
	# every reading up to 13 of them (a minute), else how many, the first and the last
	if [ ${#rss[@]} -le 13 ]; then
		rs="(samples: ${rss[*]})"
	else
		rs="(${#rss[@]} samples, 5 s apart: first ${rss[0]}, last ${rss[-1]})"
	fi
	printf '%-22s CPU %.4f%% of one core (ticks: %s%%), %.2f ms per sample; RSS %s..%s KiB %s\n' \
		"$name" "$pct" "$tpct" "$(python3 -c "print($pct / 100 * 1000)")" "$rmin" "$rmax" "$rs"
	if [ -z "$tgt" ]; then
		echo "  (no CPU target: reads and prints every counter of every port)"
	elif python3 -c "import sys; sys.exit(0 if $pct < $tgt else 1)"; then
		echo "  ok: below the ${tgt}% target"
	else
		echo "  MISSED: ${tgt}% target"
		fail=1
	fi
	# flat: the last reading within 64 KiB of the first (allocator noise)
	if [ $((rss[-1] - rss[0])) -gt 64 ]; then
		echo "  MISSED: RSS grew by $((rss[-1] - rss[0])) KiB"
		fail=1
	else
		echo "  ok: RSS flat (last - first = $((rss[-1] - rss[0])) KiB)"
	fi
}

echo "# penny top, 16 devices x 2 ports ($nfiles sysfs files), interval 1 s, ${secs} s, $(nproc) CPUs"
if ! want screen; then
	:
elif command -v tmux >/dev/null; then
	tmux -L "$sock" -f /dev/null new-session -d -x 200 -y 50 -s b \
		"exec env LANG=C.UTF-8 $PENNY top --sysfs-root $work/tree -i 1"
	sleep 1
	pid=$(tmux -L "$sock" list-panes -t b -F '#{pane_pid}')
	if [ -r "/proc/$pid/stat" ] && grep -q penny "/proc/$pid/comm"; then
		measure "screen (tmux 200x50)" "$pid" "$target"
		tmux -L "$sock" capture-pane -p -t b | sed -n '1p;4p'
	else
		echo "screen: could not start penny top in tmux"
		fail=1
	fi
	tmux -L "$sock" kill-server 2>/dev/null
else
	echo "screen: skipped (no tmux)"
fi

if want table; then
	"$PENNY" top --sysfs-root "$work/tree" -i 1 >"$work/out.txt" &
	pid=$!
	measure "batch table" "$pid" "$target"
	kill "$pid"
	wait "$pid" 2>/dev/null
fi
if want json; then
	"$PENNY" top --sysfs-root "$work/tree" -i 1 --json >"$work/out.json" &
	pid=$!
	measure "batch --json" "$pid" "$target"
	kill "$pid"
	wait "$pid" 2>/dev/null
	echo "  $(wc -l <"$work/out.json") JSON samples of $(head -c 1000000 "$work/out.json" | head -1 | wc -c) bytes"
fi
if want prom; then
	"$PENNY" top --sysfs-root "$work/tree" -i 1 --prom "$work/out.prom" &
	pid=$!
	measure "batch --prom" "$pid" "$target"
	kill "$pid"
	wait "$pid" 2>/dev/null
	echo "  $(wc -l <"$work/out.prom") lines of Prometheus text a sample"
fi
# the recorder: CPU reported, RSS judged
if want record; then
	"$PENNY" top --sysfs-root "$work/tree" -i 1 --record "$work/rec" --record-max 16M >/dev/null &
	pid=$!
	measure "table --record" "$pid"
	kill "$pid"
	wait "$pid" 2>/dev/null
	rm -f "$work"/rec "$work"/rec.1
fi
if want json-record; then
	"$PENNY" top --sysfs-root "$work/tree" -i 1 --json --record "$work/rec" >/dev/null &
	pid=$!
	measure "--json --record" "$pid"
	kill "$pid"
	wait "$pid" 2>/dev/null
	echo "  $(cat "$work"/rec* | wc -l) recorded samples of $(head -1 "$work/rec" | wc -c) bytes, $(du -ck "$work"/rec* | tail -1 | cut -f1) KiB on disk ($(ls "$work" | grep -c '^rec'): rec and rec.1 once it rotated)"
fi
pid=
exit $fail
