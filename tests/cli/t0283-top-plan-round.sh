#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Careless-admin round on top --record/--replay and ring-plan's exports: a
# recording of 1,024 devices of 4 ports (lines of 8.5 MB) that
# penny wrote replays (the reader took 8 MiB and 4,096 ports); a hostile
# line over the bound is skipped in one warning, never read whole; the
# per-node --nccl-graph files are replaced all or none.
# cost: 60
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/helpers/top/top-lib.sh"
unset PENNY_SYSROOT PENNY_DEBUG

# 1,024 devices x 4 ports: every line past 8 MiB (the old bound)
test_expect_success 'a recording of 4,096 ports (8.5 MB lines) that penny wrote replays whole' '
	fake big --devices 1024 --ports 4 >/dev/null &&
	penny top --sysfs-root big --count 1 -i 0.1 --record big.rec >/dev/null 2>err &&
	test ! -s err && test "$(wc -l <big.rec)" = 2 &&
	test "$(head -1 big.rec | wc -c)" -gt $((8 << 20)) &&
	penny top --replay big.rec --json >out.json 2>err &&
	test ! -s err && test "$(wc -l <out.json)" = 1 &&
	grep -q "\"name\":\"mlx5_1023/4\"" out.json
'

# the recording of a small tree, its ports renamed into 5,000
test_expect_success 'a recording of 5,000 short ports replays; their history is kept' '
	fake s --devices 1 --ports 1 >/dev/null &&
	penny top --sysfs-root s --count 2 -i 0.1 --record s.rec >/dev/null &&
	python3 -c "
import json, sys
out = open(\"many.rec\", \"w\")
for l in open(\"s.rec\"):
    d = json.loads(l)
    p = d[\"ports\"][0]
    p[\"ctr\"] = []
    p[\"ix\"] = [-1] * len(p[\"ix\"])
    ps = []
    for i in range(5000):
        q = dict(p); q[\"name\"] = \"x%d/1\" % i; ps.append(q)
    d[\"ports\"] = ps
    out.write(json.dumps(d, separators=(\",\", \":\")) + \"\n\")
" &&
	penny top --replay many.rec --json >out.json 2>err &&
	test ! -s err && test "$(wc -l <out.json)" = 2 &&
	grep -q "\"name\":\"x4999/1\"" out.json &&
	penny top --replay many.rec >out 2>err && test ! -s err &&
	grep -q "^x4999/1 " out
'

# 33 MiB of one line: skipped (the reader keeps no more than the bound),
# the samples around it read
test_expect_success 'a hostile line over 32 MiB: skipped in one warning, the others replay' '
	head -1 s.rec >h.rec &&
	python3 -c "
import sys
sys.stdout.write(\"{\\\"x\\\":\\\"\" + \"a\" * (33 << 20) + \"\\\"}\n\")" >>h.rec &&
	tail -1 s.rec >>h.rec &&
	penny top --replay h.rec --json >out.json 2>err &&
	test "$(wc -l <err)" = 1 && test "$(wc -l <out.json)" = 1 &&
	grep -qx "penny top: warning: h.rec: line 2: longer than the longest sample; skipped it" err &&
	python3 -c "import sys; sys.stdout.write(\"[\" * (40 << 20))" >only.rec &&
	test_exit 2 penny top --replay only.rec >out 2>err && test ! -s out &&
	grep -qx "penny top: only.rec: no samples" err
'

# node 3's file (64-byte host name) is past 2 KiB, the first two are not:
# the third write fails (File too large, as a full disk would)
test_expect_success '--nccl-graph per node: a failed write replaces none of the files' '
	L=$(printf "h%.0s" $(seq 62))z && mkdir gx &&
	penny ring-plan --nodes 3 --gpus 6 --hosts "a,b,$L" --nccl-graph "gx/g-%h.xml" >/dev/null &&
	test "$(stat -c %s gx/g-a.xml)" -lt 2048 && test "$(stat -c %s gx/g-b.xml)" -lt 2048 &&
	test "$(stat -c %s gx/g-$L.xml)" -gt 2048 &&
	for h in a b $L; do echo old >gx/g-$h.xml; done && chmod 600 gx/g-a.xml &&
	( trap "" XFSZ; ulimit -f 2
	  penny ring-plan --nodes 3 --gpus 6 --hosts "a,b,$L" --nccl-graph "gx/g-%h.xml" >/dev/null 2>err
	  test $? = 2 ) &&
	test "$(wc -l <err)" = 1 &&
	grep -qx "penny ring-plan: cannot write .gx/g-$L.xml. (node 2): File too large; no graph file was replaced" err &&
	test "$(cat gx/g-a.xml gx/g-b.xml gx/g-$L.xml)" = "$(printf "old\nold\nold")" &&
	test "$(ls -A gx | wc -l)" = 3 &&
	penny ring-plan --nodes 3 --gpus 6 --hosts "a,b,$L" --nccl-graph "gx/g-%h.xml" >/dev/null &&
	test "$(ls -A gx | wc -l)" = 3 && ! grep -l old gx/* &&
	test "$(stat -c %a gx/g-a.xml)" = 600 && test "$(stat -c %a gx/g-b.xml)" = 644
'

# a host "-" (or "out" in /dev/std%h) made node 0's file standard output
test_expect_success '--nccl-graph per node: a file that is standard output or error is refused' '
	mkdir gs && cd gs &&
	one_line_error 2 ring-plan --nodes 2 --hosts "-,b" --summary --nccl-graph "%h" &&
	grep -qx "penny ring-plan: --nccl-graph: node 0.s file .-. is standard output, not a file of its own" err &&
	one_line_error 2 ring-plan --nodes 2 --hosts "out,b" --summary --nccl-graph "/dev/std%h" &&
	grep -qx "penny ring-plan: --nccl-graph: node 0.s file ./dev/stdout. is standard output, not a file of its own" err &&
	test "$(ls -A | tr "\n" " ")" = "err out " &&
	penny ring-plan --nodes 2 --summary --nccl-graph - >out && test "$(grep -c "<graphs" out)" = 1
'

test_done
