#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The penny top screen, driven in tmux (send-keys, capture-pane): layouts at
# 80x24 and 200x50 against golden captures (volatile fields masked by
# mask.py; PENNY_UPDATE_GOLDEN=1 rewrites them), sorting, filter, detail
# view, help, pause, interval, error columns, quit, resize, no colour, ASCII,
# and a sysfs read that blocks while the screen stays live.
# cost: 23
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/helpers/top/top-lib.sh"

if ! command -v tmux >/dev/null; then
	test_skip "screen tests" "tmux is not installed"
	test_done
	exit 0
fi

. "$TOPH/screen-lib.sh"

fake big --devices 16 --ports 2

test_expect_success '80x24: the list, grouped by device, scrolled to fit (golden)' '
	start 80 24 -- && shows "^sort name" && golden list-80x24 &&
	test "$(cap | wc -l)" -eq 24 &&
	row 3 | grep -q "^DEVICE  *PORT STATE" && row 4 | grep -q "^mlx5_0  *1 ACTIVE" &&
	row 5 | grep -q "^  *2 ACTIVE" && row 24 | grep -q "^q:quit"
'

test_expect_success 'End shows the last port, Enter opens its detail view, Esc goes back' '
	key End && shows "^mlx5_15  *1 ACTIVE" && row 23 | grep -q "^  *2 ACTIVE" &&
	! has "^mlx5_0 " &&
	key Enter && shows "^mlx5_15 port 2  ACTIVE/LinkUp" &&
	shows "^counters/port_rcv_data" && key Escape && shows "^DEVICE  *PORT" &&
	key Home && shows "^mlx5_0  *1 ACTIVE"
'

test_expect_success '80x24: detail view and help (golden)' '
	key Enter && shows "^COUNTER" &&
	shows "^counters/port_rcv_packets  *0  *0  *0.0$" && golden detail-80x24 &&
	key "?" && shows "^ *q  *quit" && golden help-80x24 &&
	key x && shows "^COUNTER" && key Escape && shows "^DEVICE"
'

test_expect_success 'filter: substring, glob, Esc restores, Enter keeps' '
	key f && shows "^filter:" && T send-keys -t top -l "mlx5_1" &&
	shows "14 ports" && key Enter && shows "filter .mlx5_1." &&
	! has "^mlx5_2 " && has "^mlx5_13 " &&
	key / C-u && T send-keys -t top -l "mlx5_1?/2" && shows "6 ports" &&
	key Escape && shows "14 ports" &&
	key f C-u Enter && shows "32 ports"
'

test_expect_success 'e hides the error columns, + and - change the interval, p pauses' '
	has "ERR   DISC" && key e && wait_for 5 eval "! has ERR" &&
	key e && shows "ERR   DISC" &&
	key + && shows "  2s  32 ports" && key - - && shows "  0.5s  32 ports" &&
	key + && shows "  1s  32 ports" &&
	key Space && shows "PAUSED" && key Space && wait_for 5 eval "! has PAUSED"
'

test_expect_success 'q quits with status 0' '
	key q && wait_for 5 exited && test "$(cat rc)" = 0
'

test_expect_success '200x50: every port on one screen, wide history (golden)' '
	start 200 50 -- && shows "^sort name" && golden list-200x50 &&
	test "$(cap | grep -c " ACTIVE ")" -eq 32 && row 50 | grep -q "^q:quit" &&
	key q && wait_for 5 exited
'

test_expect_success 'HISTORY: one scale for every row, shown in the header' '
	{ python3 "$TOPH/fakesys.py" run big --period 0.2 --rate mlx5_0/1=1000000000:0 \
		--rate mlx5_1/1=1000000:0 & } &&
	runner=$! && start 200 50 -- -i 0.5 && shows "^sort name" && sleep 2.5 &&
	row 3 | grep -q "HISTORY max [0-9.]* Gb/s " &&
	row 4 | grep -q "^mlx5_0  *1 .*█" &&
	row 6 | grep -q "^mlx5_1  *1 .*▁" &&
	! row 6 | grep -qE "▂|▃|▄|▅|▆|▇|█" &&
	key q && wait_for 5 exited
	rc=$?; kill $runner; wait $runner 2>/dev/null; test $rc = 0
'

test_expect_success 'sorting by rx and tx follows the traffic' '
	{ python3 "$TOPH/fakesys.py" run big --period 0.2 --rate mlx5_12/1=1000000:30000000 \
		--rate mlx5_7/2=10000000:20000000 --rate mlx5_3/1=100000000:10000000 & } &&
	runner=$! && start 120 30 -- -i 0.5 && shows "^sort name" && sleep 1.5 &&
	key s && shows "^sort rx" &&
	row 4 | grep -q "^mlx5_3  *1 " && row 5 | grep -q "^mlx5_7  *2 " &&
	row 6 | grep -q "^mlx5_12  *1 " && row 4 | grep -q "Mb/s" &&
	key s && shows "^sort tx" &&
	row 4 | grep -q "^mlx5_12  *1 " && row 6 | grep -q "^mlx5_3  *1 " &&
	key s s && shows "^sort errors" && key s && shows "^sort name" &&
	key q && wait_for 5 exited
	rc=$?; kill $runner; wait $runner 2>/dev/null; test $rc = 0
'

test_expect_success 'errors are red with colour, bold and underlined without (NO_COLOR)' '
	fake err --devices 2 && TREE=err start 80 24 -- -i 0.5 && shows "^sort name" &&
	ctr_add err mlx5_1 1 symbol_error 7 && shows " 7      0$" && key Space && shows PAUSED &&
	T capture-pane -e -p -t top >colour.txt && grep -q "7" colour.txt &&
	python3 -c "
import re, sys
t = open(\"colour.txt\").read()
assert re.search(r\"\x1b\[[0-9;]*31[;m][^\x1b]*7\", t), \"no red 7\"
" &&
	key q && wait_for 5 exited &&
	TREE=err start 80 24 NO_COLOR=1 -- -i 0.5 && shows "^sort name" &&
	ctr_add err mlx5_1 1 symbol_error 5 && shows " 5      0$" && key Space && shows PAUSED &&
	T capture-pane -e -p -t top >mono.txt &&
	python3 -c "
import re
t = open(\"mono.txt\").read()
assert not re.search(r\"\x1b\[(?:[0-9;]*;)?[34][0-7](?:;|m)\", t), \"colour without colours\"
assert re.search(r\"\x1b\[[0-9;]*[14][;m][^\x1b]*5\", t), \"the error is not highlighted\"
assert re.search(r\"\x1b\[[0-9;]*7[;m]\", t), \"no reverse video\"
" &&
	key q && wait_for 5 exited
'

test_expect_success 'ASCII terminal: history without block characters' '
	TREE=err start 80 24 LANG=C LC_ALL=C -- -i 0.3 && shows "^sort name" && sleep 1 &&
	has " __* " && ! cap | grep -q "$(printf "\342\226")" &&
	key q && wait_for 5 exited
'

test_expect_success 'a resize redraws the layout' '
	start 80 24 -- && shows "^sort name" &&
	# the footer can show before the last rows are drawn: wait for both
	T resize-window -t top -x 132 -y 40 && shows "^q:quit" &&
	wait_for 5 eval "row 40 | grep -q \"^q:quit\"" &&
	wait_for 5 eval "test \"\$(cap | grep -c \" ACTIVE \")\" -eq 32" &&
	T resize-window -t top -x 30 -y 6 && shows "terminal too small" &&
	T resize-window -t top -x 80 -y 24 && shows "^DEVICE" &&
	key q && wait_for 5 exited
'

# the read hangs through tests/preload/block-read.so (a FIFO no longer blocks)
test_expect_success 'a blocked sysfs read: the screen stays live, names the port, q quits' '
	fake slow --devices 3 &&
	TREE=slow start 80 24 PENNY_TEST_BLOCK="$(ib "$PWD/slow" mlx5_2 1)/counters/port_rcv_data" \
		LD_PRELOAD="$BUILD/tests/preload/block-read.so" \
		ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" -- &&
	shows "slow sysfs read (mlx5_2/1)" &&
	key "?" && shows "^ *q  *quit" && key x && shows "slow sysfs read" &&
	key q && wait_for 3 exited && test "$(cat rc)" = 0
'

# the node's context (tests/helpers/top/top-lib.sh ctx_tree: 3 GPUs nearest
# mlx5_0, 1 nearest mlx5_1): NUMA, RAIL, GPUS columns; r: the rail view
test_expect_success 'NUMA, RAIL, GPUS columns; r shows rails with their share, r returns' '
	ctx_tree ctx &&
	TREE=ctx start 132 30 -- -i 0.3 && shows "^sort name" &&
	row 3 | grep -q "UTIL NUMA RAIL GPUS  *HISTORY" &&
	row 4 | grep -q "^mlx5_0  *1 ACTIVE .*%  *0  *0 0-2  " &&
	row 5 | grep -q "^  *2 ACTIVE .*%  *0  *0 0-2  " &&
	row 6 | grep -q "^mlx5_1  *1 ACTIVE .*%  *1  *1 3  " &&
	key r && shows "SHARE" &&
	row 3 | grep -q "^RAIL DEVICE  *PORTS SPEED  *RX  *TX  *SHARE  *NUMA  *GPUS" &&
	row 4 | grep -q "^   0 mlx5_0  *2  800G .*  0  *0-2 *$" &&
	row 5 | grep -q "^   1 mlx5_1  *1  400G .*  1  *3 *$" &&
	ctr_add ctx mlx5_1 1 port_xmit_data 100000000 &&
	shows "^   1 mlx5_1  .*100.0%" &&
	row 4 | grep -q "  0.0% " &&
	key "?" && shows "^ *r  *rail view" && key x && shows "SHARE" &&
	key r && shows "^mlx5_0  *1 ACTIVE" &&
	key q && wait_for 5 exited
'

test_expect_success 'no terminal for the screen: batch output instead; a bad TERM is one line' '
	penny top --sysfs-root big --once -i 0.1 </dev/null >out && grep -q "^mlx5_0/1 " out &&
	start 80 24 TERM=no-such-terminal -- && wait_for 5 exited && test "$(cat rc)" = 2
'
test_done
