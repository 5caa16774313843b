#!/usr/bin/env bash
# Runs penny's tests and ends with one line "N passed, N failed, N skipped".
# Usage: tests/run.sh [unit|cli|lab|all|FILE...]   (default: all)
# Every test program speaks TAP: "ok N - what", "not ok N - what",
# "ok N # skip why".  A program that exits non-zero without a "not ok"
# line counts as one failure.
#
# Files run in parallel, JOBS at a time (default: the number of CPUs: the
# suite's CPU time exceeds its wall time on 2 CPUs, and more files at once
# starve the timing tests; JOBS=1 runs them one after another); a file that
# waits does not hold a CPU: while JOBS files run and the CPUs have been at
# least half a CPU idle for two seconds (/proc/stat), one more starts, up
# to twice JOBS, like make's --load-average.  The
# longest first (by the times of the last run, kept in
# $BUILD/test-logs/durations; on a first run by the file's cost hint, "#
# cost: N" in its header, see cost_hint, and lab files without one before
# anything else).
# At most LAB_JOBS lab files that boot a qemu guest (CPU-bound under TCG)
# run at once (default: a third of the CPUs, at least 1); the lab's cluster
# files (network-namespace hosts, no guest) are not bounded by it.  A file
# whose ranks busy-wait ("# spins:" among its first 20 lines) never runs
# beside one that boots a guest: either waits for the other.  Each file gets its
# own TMPDIR, its own range of TCP ports (PENNY_TEST_PORTS, below the
# kernel's ephemeral range; tests/lib.sh's free_port draws from it), a tag
# that marks its processes (PENNY_TEST_TAG, for no_procs_left) and, where
# mount namespaces are allowed (root), its own /dev/shm.  A PASS/FAIL line
# is printed per file as it ends; failing files' log tails at the end.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
: "${BUILD:=$top/build}"
: "${PENNY:=$top/penny}"
export PENNY BUILD TOP="$top"
logdir=$BUILD/test-logs
mkdir -p "$logdir"
durations=$logdir/durations

usage() { sed -n 's/^# Usage: //p' "$0" >&2; }

list=()
want=${*:-all}
for w in $want; do
	case $w in
	all) list+=("$BUILD"/tests/unit/t_* "$top"/tests/cli/t*.sh "$top"/tests/lab/t*.sh) ;;
	unit) list+=("$BUILD"/tests/unit/t_*) ;;
	cli) list+=("$top"/tests/cli/t*.sh) ;;
	lab) list+=("$top"/tests/lab/t*.sh) ;;
	-h|--help) usage; exit 0 ;;
	*)
		if [ ! -f "$w" ]; then
			echo "tests/run.sh: '$w' is neither unit, cli, lab, all nor a test file" >&2
			exit 2
		fi
		list+=("$w")
		;;
	esac
done

# The GPU kernels' architectures this build has (make test builds one on a
# fresh tree): a test that runs make on the build (install, deploy) keeps
# them, instead of rebuilding every fatbin for the default list underneath
# the files running beside it.
# Both the list and the exact nvcc line: make test's build is PTX only
# (no code=sm_), which the default line for those architectures is not.
if [ -z "${CUDA_ARCHS+set}" ] && [ -r "$BUILD/plugins/gen/arch" ]; then
	read -r line <"$BUILD/plugins/gen/arch"
	archs=$(grep -o 'arch=compute_[0-9a-z]*' <<<"$line" | sed 's/arch=compute_//' | awk '!seen[$0]++' | tr '\n' ' ')
	[ -n "$archs" ] && export CUDA_ARCHS="${archs% }" NVCC_ARCH="$line"
fi

ncpu=$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)
: "${JOBS:=$ncpu}"
: "${LAB_JOBS:=$(((ncpu + 2) / 3))}"
for v in JOBS LAB_JOBS; do
	[[ ${!v} =~ ^[1-9][0-9]*$ ]] ||
		{ echo "tests/run.sh: $v='${!v}' is not a positive number" >&2; exit 2; }
done
# the ports: 20000..32767 (below the ephemeral range), cut in a range per
# slot (JOBS, and as many for the files started while the CPUs idle)
[ "$JOBS" -le 64 ] || JOBS=64
max_jobs=$JOBS
[ "$JOBS" -gt 1 ] && [ -r /proc/stat ] && max_jobs=$((2 * JOBS))
port_span=$((12768 / max_jobs))
[ "$port_span" -le 1000 ] || port_span=1000

# What runs: the files that exist (a glob that matched nothing is dropped,
# as are make's dependency files), each once.
files=()
declare -A seen=()
for t in "${list[@]}"; do
	[ -e "$t" ] || continue
	case $t in *.d|*.o) continue ;; esac
	[ -n "${seen[$t]:-}" ] && continue
	seen[$t]=1
	files+=("$t")
done

name_of() {
	local n=${1#"$top"/}
	echo "${n#"$BUILD"/}"
}

# cost_hint FILE: the wall seconds a file declares it takes in a full run
# (its cost hint, like CTest's COST property): a line "# cost: N" among a
# shell file's first 20 lines, or " * cost: N" (or "// cost: N") among the
# first 20 of a unit binary's source, tests/unit/NAME.c.  Nothing when
# there is none.
cost_hint() {
	local f=$1
	case $f in
	*.sh) ;;
	*/tests/unit/t_*|tests/unit/t_*) f=$top/tests/unit/${f##*/}.c ;;
	*) return 0 ;;
	esac
	[ -r "$f" ] || return 0
	local n=0 line re='^[[:space:]]*(#|//|\*)[[:space:]]*cost:[[:space:]]*([0-9]+)[[:space:]]*$'
	while [ $n -lt 20 ] && IFS= read -r line; do
		n=$((n + 1))
		[[ $line =~ $re ]] && echo "${BASH_REMATCH[2]}" && return 0
	done <"$f"
	return 0
}

# Longest first: the last run's seconds; without one, the file's cost hint;
# without either, lab files (a VM boot each) first, then shell files, then
# unit binaries.
declare -A est=()
if [ -r "$durations" ]; then
	while read -r n s c; do est[$n]="$s${c:+ $c}"; done <"$durations"
fi
order=$(for t in "${files[@]}"; do
	n=$(name_of "$t")
	s=${est[$n]:-}
	s=${s%% *}
	[ -n "$s" ] || s=$(cost_hint "$t")
	if [ -z "$s" ]; then
		case $n in
		tests/lab/*) s=300 ;;
		*.sh) s=20 ;;
		*) s=1 ;;
		esac
	fi
	printf '%s\t%s\n' "$s" "$t"
done | sort -t$'\t' -k1,1nr -s | cut -f2)
queue=()
while IFS= read -r t; do [ -n "$t" ] && queue+=("$t"); done <<<"$order"

# a lab file that boots a qemu guest (tests/lab/lib-lab.sh: lab_tap, lab_vm)
declare -A vm_file=()
is_vm() {
	[[ $(name_of "$1") == tests/lab/* ]] || return 1
	if [ -z "${vm_file[$1]:-}" ]; then
		vm_file[$1]=no
		grep -qE '^[^#]*\<lab_(tap|vm)\>' "$1" && vm_file[$1]=yes
	fi
	[ "${vm_file[$1]}" = yes ]
}

# a file whose ranks busy-wait ("# spins: why" among its first 20 lines):
# their threads spin on sched_yield, and a dozen of them take a qemu
# guest's vCPU threads most of their time (on 2 CPUs a guest's boot took
# 73 s beside one such job instead of 8, and its command twice as long),
# which lengthens the lab's chain of guests, the suite's longest; such a
# file and a guest's never run at once
declare -A spin_file=()
is_spin() {
	if [ -z "${spin_file[$1]:-}" ]; then
		spin_file[$1]=no
		[[ $1 == *.sh ]] && head -n 20 "$1" 2>/dev/null | grep -qE '^#[[:space:]]*spins:' &&
			spin_file[$1]=yes
	fi
	[ "${spin_file[$1]}" = yes ]
}

# Private /dev/shm per file: tests look for segments left behind, and
# count what is free there.
private_shm=0
if [ "$JOBS" -gt 1 ] && [ "$(id -u)" -eq 0 ] && command -v unshare >/dev/null &&
	unshare -m sh -c 'mount -t tmpfs tmpfs /dev/shm' 2>/dev/null; then
	private_shm=1
	shm_size=$(df -k --output=size /dev/shm 2>/dev/null | tail -1 | tr -d ' ')
fi
# Without it, a file that checks /dev/shm for leftovers runs alone.
solo() { [ "$private_shm" = 0 ] && [ "$JOBS" -gt 1 ] && grep -qs shm_snapshot "$1"; }

declare -A job_file=() job_slot=() job_start=() job_log=()
run_root=$(mktemp -d "${TMPDIR:-/tmp}/penny-run.XXXXXX") || exit 1
# each file runs in a process group of its own: stopped whole when this stops
cleanup() {
	local p
	for p in "${!job_file[@]}"; do kill -TERM -- "-$p" 2>/dev/null; done
	rm -rf "$run_root"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

# python3 resolved once for the whole run: the distribution's interpreter
# (/usr/bin/python3, the one `make setup-test` installs python3-yaml for)
# when it runs, else the one PATH names.  Not a version manager's shim
# (pyenv's is a shell script that looks the version up on every call: 0.7
# CPU s on the 2-core machine), and not an interpreter whose site-packages
# import more at every start (one here imports certifi from a .pth file:
# 0.115 CPU s a start against /usr/bin/python3's 0.05; the tests call
# python3 about a thousand times, the lab's guest under emulation too).
py=
/usr/bin/python3 -c '' >/dev/null 2>&1 && py=/usr/bin/python3
[ -n "$py" ] || py=$(python3 -c 'import sys; print(sys.executable)' 2>/dev/null)
if [ -n "$py" ] && [ -x "$py" ]; then
	mkdir -p "$run_root/bin" && ln -s "$py" "$run_root/bin/python3" &&
		export PATH=$run_root/bin:$PATH PENNY_TEST_PYTHON=$py
fi

# run_one FILE LOG SLOT: one test file with its own TMPDIR and ports
run_one() {
	local t=$1 log=$2 slot=$3
	set +m
	mkdir -p "$run_root/$slot"
	export TMPDIR=$run_root/$slot
	export PENNY_TEST_PORTS="$((20000 + slot * port_span))-$((20000 + (slot + 1) * port_span - 1))"
	local cmd=("$t")
	[[ $t == *.sh ]] && cmd=(bash "$t")
	if [ "$private_shm" = 1 ]; then
		unshare -m sh -c 'mount -t tmpfs -o "size=${0}k,mode=1777" tmpfs /dev/shm || exit 125
			exec "$@"' "$shm_size" "${cmd[@]}" >"$log" 2>&1 </dev/null
	else
		"${cmd[@]}" >"$log" 2>&1 </dev/null
	fi
	local rc=$?
	times >"$run_root/$slot.times" # the file's CPU: this subshell's children
	return $rc
}

# cpu_ms FILE: user + system milliseconds of the second line of bash's times
cpu_ms() {
	local line ms=0 t
	{ read -r line; read -r line; } <"$1" 2>/dev/null || { echo 0; return; }
	for t in $line; do
		[[ $t =~ ^([0-9]+)m([0-9]+)\.([0-9]{3})s$ ]] || continue
		ms=$((ms + 10#${BASH_REMATCH[1]} * 60000 + 10#${BASH_REMATCH[2]} * 1000 + 10#${BASH_REMATCH[3]}))
	done
	echo "$ms"
}

pass=0 fail=0 skip=0
failed_files=()
free_slots=()
for ((i = 0; i < max_jobs; i++)); do free_slots+=("$i"); done
running=0 running_vm=0 running_spin=0 running_solo=0 cpu_total=0 t_start=$(date +%s)
new_durations=() timeline=()
# the CPUs' idle time over the run (/proc/stat: idle + iowait, in USER_HZ)
run_idle() {
	local cpu a b c d e rest
	read -r cpu a b c d e rest </proc/stat 2>/dev/null && echo $((d + e)) || echo 0
}
idle_start=$(run_idle)

finish() {
	local pid=$1 rc=$2 t name log secs ms p s f now
	t=${job_file[$pid]} log=${job_log[$pid]}
	name=$(name_of "$t")
	now=$(date +%s)
	secs=$((now - ${job_start[$pid]}))
	ms=$(cpu_ms "$run_root/${job_slot[$pid]}.times")
	cpu_total=$((cpu_total + ms))
	free_slots+=("${job_slot[$pid]}")
	running=$((running - 1))
	is_vm "$t" && running_vm=$((running_vm - 1))
	is_spin "$t" && running_spin=$((running_spin - 1))
	solo "$t" && running_solo=0
	rm -rf "${run_root:?}/${job_slot[$pid]}"
	unset "job_file[$pid]" "job_slot[$pid]" "job_start[$pid]" "job_log[$pid]"
	p=$(grep -cE '^ok [0-9]+' "$log" | head -1)
	s=$(grep -cE '^ok [0-9]+.*# (skip|SKIP)' "$log" | head -1)
	f=$(grep -cE '^not ok [0-9]+' "$log" | head -1)
	p=$((p - s))
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		f=1
		echo "not ok - $name exited with status $rc" >>"$log"
	fi
	pass=$((pass + p)) fail=$((fail + f)) skip=$((skip + s))
	new_durations+=("$name $secs $((ms / 1000))")
	timeline+=("$((now - secs - t_start)) $((now - t_start)) $name")
	if [ "$f" -gt 0 ]; then
		printf 'FAIL %-44s %3d ok %3d failed (%ds)\n' "$name" "$p" "$f" "$secs"
		grep -E '^not ok' "$log" | head -20 | sed 's/^/     /'
		failed_files+=("$log")
	else
		printf 'PASS %-44s %3d ok%s (%ds)\n' "$name" "$p" \
			"$([ "$s" -gt 0 ] && echo " $s skipped")" "$secs"
	fi
	grep -E '^# (SKIP|LOUD)' "$log" | sed 's/^/     /'
}

# may_start FILE: a slot is free and the file's limits allow it now
may_start() {
	[ "$running_solo" = 1 ] && return 1
	if solo "$1"; then
		[ "$running" -eq 0 ]
		return
	fi
	if is_vm "$1" && { [ "$running_vm" -ge "$LAB_JOBS" ] || [ "$running_spin" -gt 0 ]; }; then
		return 1
	fi
	if is_spin "$1" && [ "$running_vm" -gt 0 ]; then
		return 1
	fi
	return 0
}

# idle_cpus: the CPUs' idle time since the last call, in hundredths of a CPU
# (user nice system idle iowait ...: idle + iowait over the whole)
stat_idle=0 stat_total=0
idle_cpus() {
	local cpu a b c d e rest total idle x
	read -r cpu a b c d e rest </proc/stat || { echo 0; return; }
	total=$((a + b + c + d + e))
	for x in $rest; do total=$((total + x)); done
	idle=$((d + e))
	local di=$((idle - stat_idle)) dt=$((total - stat_total))
	stat_idle=$idle stat_total=$total
	[ "$dt" -gt 0 ] || { echo 0; return; }
	echo $((di * ncpu * 100 / dt))
}
[ "$max_jobs" -gt "$JOBS" ] && idle_cpus >/dev/null
ticker="" cap=$JOBS extra=0

while [ ${#queue[@]} -gt 0 ] || [ "$running" -gt 0 ]; do
	# start what may start, in queue order
	i=0
	while [ "$running" -lt "$cap" ] && [ "$i" -lt ${#queue[@]} ]; do
		t=${queue[$i]}
		if ! may_start "$t"; then
			i=$((i + 1))
			continue
		fi
		queue=("${queue[@]:0:$i}" "${queue[@]:$((i + 1))}")
		slot=${free_slots[0]}
		free_slots=("${free_slots[@]:1}")
		name=$(name_of "$t")
		log=$logdir/$(echo "$name" | tr '/' '_').log
		set -m
		run_one "$t" "$log" "$slot" &
		pid=$!
		set +m
		job_file[$pid]=$t job_slot[$pid]=$slot job_start[$pid]=$(date +%s) job_log[$pid]=$log
		running=$((running + 1))
		[ "$running" -gt "$JOBS" ] && extra=$((extra + 1))
		is_vm "$t" && running_vm=$((running_vm + 1))
		is_spin "$t" && running_spin=$((running_spin + 1))
		solo "$t" && running_solo=1
		i=0
	done
	cap=$JOBS
	[ "$running" -gt 0 ] || break
	# all slots taken, files waiting: look at the CPUs every two seconds
	if [ -z "$ticker" ] && [ "$max_jobs" -gt "$JOBS" ] && [ ${#queue[@]} -gt 0 ] &&
		[ "$running" -ge "$JOBS" ] && [ "$running" -lt "$max_jobs" ]; then
		idle_cpus >/dev/null
		sleep 2 &
		ticker=$!
	fi
	done_pid=
	wait -n -p done_pid
	rc=$?
	if [ -n "$ticker" ] && [ "${done_pid:-}" = "$ticker" ]; then
		ticker=""
		[ "$(idle_cpus)" -ge 50 ] && cap=$((running + 1))
		continue
	fi
	[ -n "$done_pid" ] && [ -n "${job_file[$done_pid]:-}" ] || continue
	finish "$done_pid" "$rc"
done
[ -n "$ticker" ] && kill "$ticker" 2>/dev/null

# keep the times for the next run's order (files not run this time keep
# theirs, files that are gone lose theirs)
{
	for l in "${new_durations[@]}"; do echo "$l"; done
	for n in "${!est[@]}"; do
		[ -e "$top/$n" ] || [ -e "$BUILD/$n" ] || continue
		printf '%s\n' "${new_durations[@]}" | grep -q "^$n " || echo "$n ${est[$n]}"
	done
} | sort -k1,1 >"$durations.tmp" && mv "$durations.tmp" "$durations"

# when each file ran (seconds from the start: begin end name), to see how
# the files filled the CPUs
printf '%s\n' "${timeline[@]}" | sort -n >"$logdir/timeline"

for l in "${failed_files[@]}"; do
	echo "---- $l (last 30 lines)"
	tail -n 30 "$l"
done
idle=$((($(run_idle) - idle_start) / $(getconf CLK_TCK 2>/dev/null || echo 100)))
echo "# ${#files[@]} files in $(($(date +%s) - t_start)) s, $((cpu_total / 1000)) CPU s ($idle CPU s idle), JOBS=$JOBS (+$extra while the CPUs idled, at most $max_jobs) LAB_JOBS=$LAB_JOBS"
echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
