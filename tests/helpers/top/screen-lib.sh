# SPDX-License-Identifier: MIT
# The penny top screen in tmux for the screen tests (sourced after
# top-lib.sh): start a screen, capture it, send keys, compare with golden
# captures (volatile fields masked by mask.py; PENNY_UPDATE_GOLDEN=1
# rewrites them).
SOCK=penny-test-$$
T() { tmux -L "$SOCK" -f /dev/null "$@"; }
trap 'T kill-server 2>/dev/null; rm -rf "$TRASH"' EXIT
GOLDEN=$FIX/golden

# start W H [VAR=VALUE...] -- [penny top options]: a fresh screen on tree "big"
start() {
	local w=$1 h=$2 envs=()
	shift 2
	while [ $# -gt 0 ] && [ "$1" != -- ]; do envs+=("$1"); shift; done
	shift
	T kill-server 2>/dev/null
	# the old server gone before the new one starts: else the client may
	# meet it exiting ("server exited unexpectedly"); one retry all the same
	wait_for 5 eval "! T ls >/dev/null 2>&1"
	rm -f rc
	T new-session -d -x "$w" -y "$h" -s top \
		"env LANG=C.UTF-8 ${envs[*]} $PENNY top --sysfs-root $PWD/${TREE:-big} $*; echo \$? >$PWD/rc" ||
		{ sleep 0.5 && T new-session -d -x "$w" -y "$h" -s top \
		"env LANG=C.UTF-8 ${envs[*]} $PENNY top --sysfs-root $PWD/${TREE:-big} $*; echo \$? >$PWD/rc"; }
}
cap() { T capture-pane -p -t top; }
has() { cap | grep -q -- "$1"; }
shows() { wait_for "${2:-10}" has "$1" || { echo "screen lacks '$1':"; cap; return 1; }; }
key() { T send-keys -t top "$@"; }
row() { cap | sed -n "$1p"; }
masked() { cap | python3 "$TOPH/mask.py"; }
same_as_golden() { masked >"$1.txt" && cmp -s "$GOLDEN/$1.txt" "$1.txt"; }
golden() {
	if [ -n "${PENNY_UPDATE_GOLDEN:-}" ]; then
		sleep 0.5 && masked >"$GOLDEN/$1.txt"
	fi
	wait_for 5 same_as_golden "$1" || { diff -u "$GOLDEN/$1.txt" "$1.txt"; return 1; }
}
exited() { test -s rc; }
