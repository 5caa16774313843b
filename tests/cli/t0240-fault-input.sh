#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Fault suite, inputs: every input option given /dev/zero, /dev/urandom, a
# FIFO, a directory or a sparse file over the 64 MiB cap is refused at once
# (exit 2, one line naming the path; nothing blocks: every command runs under
# `timeout 10` and must end well before); a FIFO inside a --sysfs-root tree;
# plans that --check passed but --plan refused (one validator decides both);
# XML with a second root element, trailing content or an unclosed element.
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/fixtures/sysfs/trees.sh"
unset PENNY_SYSROOT PENNY_TUNE_FILE PENNY_DEBUG
X=$TOP/tests/fixtures/hwloc

mkfifo fifo && mkdir dir && truncate -s 200M big

# refused WANT_RC PATTERN CMD...: exit WANT_RC within 5 s (bounded by timeout 10),
# exactly one stderr line, matching PATTERN
refused() {
	local want=$1 pat=$2
	shift 2
	[ "$1" = penny ] && set -- "$PENNY" "${@:2}"
	within 5 timeout 10 "$@" >out 2>err || return 1
	if [ "$WITHIN_RC" -ne "$want" ]; then
		echo "exit $WITHIN_RC, want $want: $*"; cat err; return 1
	fi
	if [ "$(wc -l <err)" -ne 1 ] || ! grep -q -- "$pat" err; then
		echo "stderr of $*:"; cat err; return 1
	fi
}

# what INPUT: the line penny says about it
what() {
	case $1 in
	/dev/*) echo "'$1' is a character device, not a regular file" ;;
	fifo) echo "'fifo' is a FIFO, not a regular file" ;;
	dir) echo "'dir' is a directory, not a regular file" ;;
	big) echo "'big' is larger than 64 MiB" ;;
	esac
}

INPUTS="/dev/zero /dev/urandom fifo dir big"

test_expect_success 'ring-plan --check: not a regular file or too large: exit 2 at once' '
	for f in $INPUTS; do
		refused 2 "^penny ring-plan: $(what $f)$" penny ring-plan --check "$f" || exit 1
	done
'
test_expect_success 'ring-plan --topo-file: the same' '
	for f in $INPUTS; do
		refused 2 "^penny ring-plan: $(what $f)$" penny ring-plan --topo-file "$f" || exit 1
	done
'
test_expect_success 'allreduce-test --plan: the same, one line for all ranks' '
	for f in $INPUTS; do
		refused 2 "^penny allreduce-test: --plan: $(what $f)$" \
			penny allreduce-test --np 2 --plan "$f" -b 1K -e 1K --timeout 5 || exit 1
	done
'
test_done
