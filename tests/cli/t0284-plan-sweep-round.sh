#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Careless-admin round on ring-plan's --nccl-graph files and the sweeps'
# --csv: a run killed between staging its per-node files and renaming them
# left the hidden ".NAME.PID-I~" files forever; a stop (SIGTERM, SIGHUP,
# SIGINT) now removes its own, and a later run those of dead runs, nothing
# else (a live run's, a locked one, a link, a FIFO, a directory, another
# name's, another directory's).  A host name with a control character (a
# newline, an escape) names no %h file.  --csv on a full disk was
# said only at the commit, after the whole sweep ran; now at the row that
# failed: every rank stops at the next size, one line, exit 2.
# cost: 30
. "$(dirname "$0")/../lib.sh"
unset PENNY_SYSROOT PENNY_DEBUG

# staged DIR: the hidden staged files in DIR
staged() { ls -A "$1" | grep -c '^\..*\.[0-9]*-[0-9]*~$'; }

# held PID: PID is stopped (SIGSTOP delivered), within 2 s
held() {
	local n=0
	while [ $n -lt 200 ]; do
		[ "$(awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null)" = T ] && return 0
		sleep 0.01; n=$((n + 1))
	done
	return 1
}

# caught DIR SETUP UNTOUCHED: run SETUP (DIR as it must be), start
# ring-plan staging 2000 graph files in DIR and hold it (SIGSTOP) once 20
# are staged; $pid is that run.  It counts only when held in its staging:
# 20 to 1999 staged and UNTOUCHED (no name replaced yet).  A run that got
# further first (a loaded machine, the shell descheduled) is killed and the
# case starts over, 5 times at most; the assertions are the caller's.
caught() {
	local try n
	for try in 1 2 3 4 5; do
		rm -rf "$1" && mkdir "$1" && $2 "$1" || return 1
		{ "$PENNY" ring-plan --nodes 2000 --gpus 8 --summary --nccl-graph "$1/g-%n.xml" \
			>/dev/null 2>err & }
		pid=$! n=0
		while [ "$(staged "$1")" -lt 20 ] && [ $n -lt 1000 ]; do sleep 0.01; n=$((n + 1)); done
		kill -STOP $pid 2>/dev/null
		if held $pid && [ "$(staged "$1")" -ge 20 ] && [ "$(staged "$1")" -lt 2000 ] &&
			$3 "$1"; then
			return 0
		fi
		echo "# try $try: run $pid not held in its staging ($(staged "$1") staged)"
		kill -9 $pid; kill -CONT $pid; wait $pid
	done
	return 1
}
empty() { :; }
no_names() { test "$(ls "$1" | wc -l)" = 0; }
old_names() { for i in $(seq 0 1999); do echo old >"$1/g-$i.xml"; done; }
all_old() { test "$(ls "$1" | wc -l)" = 2000 && test "$(cat "$1"/g-*.xml | sort -u)" = old; }

test_expect_success '--nccl-graph: a run killed before its renames leaves nothing to a later run' '
	caught gk empty no_names &&
	kill -9 $pid; kill -CONT $pid; wait $pid; test $? = 137 && test "$(staged gk)" -ge 20 &&
	test "$(ls gk | wc -l)" = 0 &&
	penny ring-plan --nodes 2000 --gpus 8 --summary --nccl-graph "gk/g-%n.xml" >/dev/null &&
	test "$(staged gk)" = 0 && test "$(ls -A gk | wc -l)" = 2000
'

# SIGTERM (timeout(1), a batch system), SIGHUP: the old files stay, and
# no staged file is left for a later run to find
test_expect_success '--nccl-graph: a stop before the renames leaves the old files and nothing else' '
	for sig in TERM HUP; do
		caught gt old_names all_old &&
		kill -$sig $pid && kill -CONT $pid; wait $pid; rc=$?; echo "$sig: $rc" &&
		test $rc -gt 128 && test "$(staged gt)" = 0 && all_old gt || return 1
	done
'

# every kind of name beside the graph files: only a dead run's regular
# staged files of the names written go
test_expect_success '--nccl-graph: only dead runs'"'"' staged files of those names are removed' '
	dead=$(sh -c "echo \$\$") && mkdir gx gx/other && echo victim >victim &&
	for f in ".g-a.xml.$dead-0~" ".g-b.xml.$dead-7~"; do echo stale >"gx/$f"; done &&
	for f in ".g-a.xml.$$-0~" ".g-c.xml.$dead-0~" ".g-a.xml.$dead-0~x" ".g-a.xml.0$dead-0~" \
		"g-a.xml.$dead-0~" ".g-b.xml.$dead-5~"; do echo keep >"gx/$f"; done &&
	echo keep >gx/other/.g-a.xml.$dead-0~ && echo keep >.g-a.xml.$dead-0~ &&
	ln -s ../victim "gx/.g-b.xml.$dead-2~" && mkfifo "gx/.g-a.xml.$dead-3~" &&
	mkdir "gx/.g-a.xml.$dead-4~" && echo keep >"gx/.g-a.xml.$dead-4~/x" &&
	{ ( exec 9<"gx/.g-b.xml.$dead-5~" && flock -x 9 && exec sleep 30 ) >/dev/null 2>&1 & } &&
	lk=$! && sleep 0.2 &&
	penny ring-plan --nodes 2 --hosts a,b --summary --nccl-graph "gx/g-%h.xml" >/dev/null 2>err
	rc=$?; kill $lk; wait $lk; cat err; test $rc = 0 && test ! -s err &&
	ls -A gx >left && cat left &&
	test ! -e "gx/.g-a.xml.$dead-0~" && test ! -e "gx/.g-b.xml.$dead-7~" &&
	test "$(grep -c "^\.g-.*~" left)" = 8 && test "$(cat gx/g-a.xml.$dead-0~)" = keep &&
	test -L "gx/.g-b.xml.$dead-2~" && test "$(cat victim)" = victim &&
	test -p "gx/.g-a.xml.$dead-3~" && test -f "gx/.g-a.xml.$dead-4~/x" &&
	test "$(cat gx/.g-b.xml.$dead-5~ gx/.g-a.xml.$$-0~ gx/other/.g-a.xml.$dead-0~)" = \
		"$(printf "keep\nkeep\nkeep")" && test -f .g-a.xml.$dead-0~ &&
	grep -q "<graphs" gx/g-a.xml && grep -q "<graphs" gx/g-b.xml
'

# a host name with a newline or an escape (ring-plan's text shows it
# escaped): a %h file name of two lines, or one that a listing sends to the
# terminal as it is
test_expect_success '--nccl-graph: a host name with a control character names no file' '
	mkdir gn && cd gn &&
	one_line_error 2 ring-plan --nodes 2 --hosts "a,$(printf "b\nc")" --nccl-graph "g-%h" &&
	grep -qx "penny ring-plan: --nccl-graph: the host name .b.x0ac. of node 1 cannot be part of a file name" err &&
	one_line_error 2 ring-plan --nodes 2 --hosts "$(printf "a\033[31m"),b" --nccl-graph "g-%h" &&
	grep -q "^penny ring-plan: --nccl-graph: the host name .a.x1b.31m. of node 0 cannot" err &&
	test "$(ls -A | tr "\n" " ")" = "err out " &&
	penny ring-plan --nodes 2 --hosts "$(printf "a\033[31m"),b" --summary --nccl-graph g >/dev/null &&
	test "$(ls -A | tr "\n" " ")" = "err g out "
'

# full FS: a 4 KiB tmpfs, filled, in a private mount namespace
if [ "$(id -u)" -eq 0 ] && unshare -m true 2>/dev/null; then
	# onfull CMD...: penny CMD... with --csv full/x.csv on a full file system
	onfull() {
		unshare -m sh -c 'mkdir -p full && mount -t tmpfs -o size=4k tmpfs full &&
			head -c 4096 /dev/zero >full/fill 2>/dev/null; "$@" --csv full/x.csv; echo $? >rc
			ls -A full >left' sh "$PENNY" "$@" >out 2>err
		cat err; test "$(cat rc)" = 2 && test "$(cat left)" = fill
	}
	test_expect_success 'allreduce-test --csv on a full disk: said at the first row, every rank stops' '
		onfull allreduce-test --np 3 -b 8 -e 16M -f 2 -n 5 --timeout 30 &&
		test "$(wc -l <err)" = 1 &&
		grep -qx "penny allreduce-test: write error on .full/x.csv.: No space left on device" err &&
		test "$(grep -vc "^#" out)" -le 2
	'
	test_expect_success 'coll-test --csv on a full disk with --json: the document ends with why' '
		onfull coll-test alltoall --np 2 -b 8 -e 16M -f 2 -n 5 --json --timeout 30 &&
		grep -qx "penny coll-test: write error on .full/x.csv.: No space left on device" err &&
		python3 -c "import json; d = json.load(open(\"out\")); print(d[\"error\"]);
assert \"No space left\" in d[\"error\"] and len(d[\"results\"]) <= 2"
	'
else
	test_skip 'allreduce-test --csv on a full disk' 'needs root and unshare -m'
	test_skip 'coll-test --csv on a full disk' 'needs root and unshare -m'
fi

test_done
