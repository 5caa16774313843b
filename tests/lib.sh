# TAP helpers for penny's shell tests (after git's t/test-lib.sh).
#   . "$(dirname "$0")/../lib.sh"
#   test_expect_success 'what' 'commands'
#   test_done
set -u
: "${TOP:=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}"
: "${PENNY:=$TOP/penny}"
: "${BUILD:=$TOP/build}"
TEST_N=0
TEST_FAILED=0
TRASH=$(mktemp -d "${TMPDIR:-/tmp}/penny-test.XXXXXX")
trap 'rm -rf "$TRASH"' EXIT
cd "$TRASH" || exit 1
# explicitly ranked jobs keep their per-user secret in here, not in ~/.config
export XDG_CONFIG_HOME=$TRASH/.config
# marks the processes this file starts (no_procs_left leaves other files' alone)
export PENNY_TEST_TAG=$TRASH

penny() { "$PENNY" "$@"; }

# python3: tests/run.sh links one interpreter first in PATH for the run
# (PENNY_TEST_PYTHON; see there why).  A file run alone does the same here:
# the distribution's interpreter when it runs, else the one PATH names,
# linked (not a shell function: "python3 ... &" must make $! the
# interpreter itself, which a test kills).
if [ -z "${PENNY_TEST_PYTHON:-}" ]; then
	if /usr/bin/python3 -c '' >/dev/null 2>&1; then
		py=/usr/bin/python3
	else
		py=$(command python3 -c 'import sys; print(sys.executable)' 2>/dev/null)
	fi
	if [ -n "$py" ] && [ -x "$py" ] && mkdir -p "$TRASH/.bin" && ln -sf "$py" "$TRASH/.bin/python3"; then
		PATH=$TRASH/.bin:$PATH
	fi
	unset py
fi

test_expect_success() {
	local what=$1 body=$2 out
	TEST_N=$((TEST_N + 1))
	[ -z "${PENNY_TEST_TIMES:-}" ] || test_clock
	if out=$(eval "$body" 2>&1); then
		echo "ok $TEST_N - $what"
	else
		echo "not ok $TEST_N - $what"
		TEST_FAILED=$((TEST_FAILED + 1))
		printf '%s\n' "$out" | tail -n 40 | sed 's/^/#   /'
	fi
	[ -z "${PENNY_TEST_TIMES:-}" ] || test_clock "$TEST_N"
}

# PENNY_TEST_TIMES=1: a "# time" comment after each case, its wall and CPU
# seconds (this shell and its children), to find where a file's time goes.
TEST_CLOCK=
test_clock() {
	local t c
	t=${EPOCHREALTIME/[.,]/}
	times >"$TRASH/.times"
	c=$(awk '{ for (i = 1; i <= NF; i++) { split($i, a, "m"); s += a[1] * 60 + a[2] } }
		END { printf "%d", s * 1000 }' "$TRASH/.times")
	if [ -n "${1:-}" ] && [ -n "$TEST_CLOCK" ]; then
		set -- "$1" $(((t - ${TEST_CLOCK% *}) / 1000)) $((c - ${TEST_CLOCK#* }))
		printf '# time %d: %d.%03d s wall, %d.%03d s CPU\n' "$1" $(($2 / 1000)) $(($2 % 1000)) \
			$(($3 / 1000)) $(($3 % 1000))
	fi
	TEST_CLOCK="$t $c"
}

test_skip() {
	TEST_N=$((TEST_N + 1))
	echo "ok $TEST_N # skip $1: $2"
}

# test_cmp EXPECTED ACTUAL: diff with context on mismatch
test_cmp() { diff -u "$1" "$2"; }

# Expect a command to fail with exit code $1: test_exit 2 penny foo
test_exit() {
	local want=$1 rc
	shift
	"$@"
	rc=$?
	if [ "$rc" -ne "$want" ]; then
		echo "expected exit $want, got $rc: $*" >&2
		return 1
	fi
}

# ranks_up PARENT N: wait up to 10 s for launcher PARENT (penny --np N) to
# have forked its N ranks, then 1 s for them to be inside the job; prints
# their pids in the order they were forked, one a line
ranks_up() {
	local i
	for i in $(seq 100); do
		[ "$(pgrep -P "$1" | wc -l)" -eq "$2" ] && break
		sleep 0.1
	done
	sleep 1
	pgrep -P "$1" | sort -n
}

# uneven_job ARGS...: allreduce-test on 3 ranks on "nodes" a, b, a
# (PENNY_NODE_ID); rank r's stdout in out.r, stderr in err.r, the exit codes
# (rank 0's first) in rcs
uneven_job() {
	local port r pids= p
	port=$(free_port) || return 1
	for r in 1 2; do
		PENNY_NODE_ID=$( [ $r = 1 ] && echo b || echo a ) "$PENNY" allreduce-test \
			--rank $r --nranks 3 --root 127.0.0.1:$port --timeout 20 "$@" \
			>out.$r 2>err.$r &
		pids="$pids $!"
	done
	PENNY_NODE_ID=a "$PENNY" allreduce-test --rank 0 --nranks 3 --root 127.0.0.1:$port \
		--timeout 20 "$@" >out.0 2>err.0
	rcs=$?
	for p in $pids; do wait $p; rcs="$rcs $?"; done
}

# A usage or input error, said well: one_line_error N CMD ARGS... runs penny
# CMD ARGS... and wants exit N, no stdout and one "penny CMD: " line on stderr
# (in err)
one_line_error() {
	local want=$1 rc
	shift
	"$PENNY" "$@" </dev/null >out 2>err
	rc=$?
	if [ $rc -ne "$want" ] || [ -s out ] || [ "$(wc -l <err)" -ne 1 ] ||
		! grep -q "^penny $1: " err; then
		echo "penny $*: exit $rc (want $want), stdout $(wc -c <out) bytes, stderr:"
		cat err
		return 1
	fi
}

# Valid JSON (each line one JSON value when $2 = lines)
json_valid() {
	if [ "${2:-}" = lines ]; then
		python3 -c 'import json,sys
n=0
for l in open(sys.argv[1]):
    if l.strip(): json.loads(l); n+=1
assert n>0, "no JSON lines"' "$1"
	else
		python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$1"
	fi
}

test_done() {
	echo "1..$TEST_N"
	[ "$TEST_FAILED" -eq 0 ]
}

# Fault-suite helpers.
# shm_snapshot FILE: the penny segments in /dev/shm now (compare with shm_leftovers).
shm_snapshot() { ls /dev/shm 2>/dev/null | grep '^penny-' | sort >"$1"; }
# shm_leftovers FILE: fail, listing them, if penny segments appeared since shm_snapshot FILE.
shm_leftovers() {
	local now
	now=$(ls /dev/shm 2>/dev/null | grep '^penny-' | sort | comm -13 "$1" -)
	[ -z "$now" ] || { echo "left in /dev/shm: $now" >&2; return 1; }
}
# no_procs_left [SECONDS]: fail if a process running this build's penny
# binary ($PENNY, matched by /proc/PID/exe) still lives after SECONDS
# (default 3); kills them so one test's leak cannot break the next.
# Processes of tests running beside this one carry another PENNY_TEST_TAG.
penny_procs() {
	local exe p tag
	exe=$(readlink -f "$PENNY")
	for p in $(pgrep -x penny; pgrep -f 'penny '); do
		[ "$(readlink "/proc/$p/exe" 2>/dev/null)" = "$exe" ] || continue
		tag=$(tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | sed -n 's/^PENNY_TEST_TAG=//p')
		[ -z "$tag" ] || [ "$tag" = "$PENNY_TEST_TAG" ] && echo "$p"
	done | sort -u
}
no_procs_left() {
	local wait=${1:-3} i left
	for ((i = 0; i < wait * 10; i++)); do
		[ -z "$(penny_procs)" ] && return 0
		sleep 0.1
	done
	left=$(penny_procs | xargs -r ps -o pid=,stat=,args= -p)
	penny_procs | xargs -r kill -9
	echo "processes left: $left" >&2
	return 1
}
# within SECONDS CMD...: run CMD, fail if it ran longer than SECONDS (its own
# exit code is kept in $WITHIN_RC, and the wall time in $WITHIN_SECS).
within() {
	local limit=$1 limit_ms t0 ms frac
	shift
	[[ $limit =~ ^([0-9]+)(\.([0-9]+))?$ ]] || { echo "within: bad limit '$limit'" >&2; return 2; }
	frac=${BASH_REMATCH[3]}000
	limit_ms=$((10#${BASH_REMATCH[1]} * 1000 + 10#${frac:0:3}))
	t0=${EPOCHREALTIME/[.,]/}
	"$@"
	WITHIN_RC=$?
	ms=$(((${EPOCHREALTIME/[.,]/} - t0) / 1000))
	printf -v WITHIN_SECS '%d.%02d' $((ms / 1000)) $((ms % 1000 / 10))
	[ "$ms" -le "$limit_ms" ] && return 0
	echo "took ${WITHIN_SECS}s, limit ${limit}s: $*" >&2
	return 1
}

# free_port: a TCP port no socket listens on or talks from (the kernel's
# tables, read without starting a process), from this file's own range
# (PENNY_TEST_PORTS=LO-HI, given by tests/run.sh to each file running at
# once; by hand, a range picked by the PID), below the kernel's ephemeral
# range (32768 up), so that no outgoing connection takes it meanwhile.
# Successive calls hand out successive ports.
free_port() {
	local range=${PENNY_TEST_PORTS:-} lo hi n i p f
	if [[ ! $range =~ ^[0-9]+-[0-9]+$ ]]; then
		lo=$((20000 + $$ % 25 * 500))
		range=$lo-$((lo + 499))
	fi
	lo=${range%-*} hi=${range#*-}
	# a file's first port at random in its range: the file that ran before
	# in the same slot (run.sh) had the same range, and a rank of it still
	# retrying its root's port would reach this file's listener there
	n=$((RANDOM % (hi - lo + 1)))
	[ ! -s "$TRASH/.next-port" ] || n=$(<"$TRASH/.next-port")
	# the TCP ports of the sockets listening, connected or in TIME_WAIT;
	# each table read whole (mapfile), not a line at a time: read seeks
	# back after each line, and every seek in a /proc/net file walks the
	# table from its start again (0.6 CPU s a call at 450 sockets, a
	# suite's worth of TIME_WAIT)
	local -A used=()
	local -a lines
	local line re='^ *[0-9]+: [0-9A-Fa-f]+:([0-9A-Fa-f]+) '
	for f in /proc/net/tcp /proc/net/tcp6; do
		[ -r "$f" ] || continue
		mapfile -t lines <"$f" || continue
		for line in "${lines[@]}"; do
			[[ $line =~ $re ]] && used[$((16#${BASH_REMATCH[1]}))]=1
		done
	done
	for ((i = 0; i <= hi - lo; i++)); do
		p=$((lo + (n + i) % (hi - lo + 1)))
		[ -z "${used[$p]:-}" ] || continue
		echo $((n + i + 1)) >"$TRASH/.next-port"
		echo "$p"
		return 0
	done
	echo "free_port: no free port in $range" >&2
	return 1
}
