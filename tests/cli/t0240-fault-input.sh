#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Fault suite, inputs: every input option given /dev/zero, /dev/urandom, a
# FIFO, a directory or a sparse file over the 64 MiB cap is refused at once
# (exit 2, one line naming the path; nothing blocks: every command runs under
# `timeout 10` and must end well before); a FIFO inside a --sysfs-root tree;
# plans that --check passed but --plan refused (one validator decides both);
# XML with a second root element, trailing content or an unclosed element.
# cost: 24
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/helpers/trees.sh"
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
test_expect_success 'topo --topo-xml and ring-plan --topo-xml: the same' '
	for f in $INPUTS; do
		refused 2 "^penny topo: $(what $f)$" penny topo --topo-xml "$f" &&
		refused 2 "^penny ring-plan: $(what $f)$" penny ring-plan --topo-xml "$f" || exit 1
	done
'
# (each rank says it; until the tuning-file double free in pn_coll_init is
# fixed a rank may also abort, so only the lines and the bound are checked)
test_expect_success 'PENNY_TUNE_FILE: refused at once, not read forever' '
	for f in $INPUTS; do
		within 5 timeout 10 env PENNY_TUNE_FILE="$f" "$PENNY" allreduce-test --np 2 \
			-b 1K -e 1K --timeout 2 >out 2>err || exit 1
		test "$WITHIN_RC" -eq 2 && test "$(wc -l <err)" -eq 1 &&
		grep -q "^penny allreduce-test: ranks 0,1: tuning file: $(what $f)$" err ||
			{ echo "$f: exit $WITHIN_RC"; cat err; exit 1; }
	done
'
# a directory or an oversized file was exit 1, a device exit 2 (penny(1):
# every unusable input is 2); PENNY_DEBUG's unknown subsystem was dropped
# without a word, while --debug's is refused
test_expect_success 'PENNY_DEBUG with an unknown subsystem: one line, exit 2, as --debug' '
	PENNY_DEBUG=bogus test_exit 2 penny ring-plan --nodes 2 --summary >out 2>err &&
	test "$(wc -l <err)" -eq 1 && grep -q "^penny ring-plan: PENNY_DEBUG: unknown debug subsystem .bogus." err &&
	PENNY_DEBUG=init penny ring-plan --nodes 2 --summary >out 2>err
'
test_expect_success 'PENNY_TUNE_FILE: a long line, extra fields, a NUL byte: file:line' '
	printf "2 1 1K ring\n2 1 1K ring extra\n" >extra.tune &&
	{ printf "# x\n"; head -c 300 /dev/zero | tr "\0" 9; echo; } >long.tune &&
	printf "2 1 1K\0 ring\n" >nul.tune &&
	for f in extra.tune:2 long.tune:2 nul.tune:1; do
		within 5 timeout 10 env PENNY_TUNE_FILE="${f%:*}" "$PENNY" allreduce-test --np 2 \
			-b 1K -e 1K --timeout 2 >out 2>err || exit 1
		test "$WITHIN_RC" -ne 0 && grep -q "ranks 0,1: $f: " err || { cat err; exit 1; }
	done
'

# --sysfs-root trees with a FIFO: penny's own reads refuse it; hwloc's reads
# (it opens files itself) are bounded: its child is killed after 5 s.
test_expect_success 'a FIFO where penny reads (hostname): ignored at once, exit 0' '
	tree_switches t1 &&
	rm t1/proc/sys/kernel/hostname && mkfifo t1/proc/sys/kernel/hostname &&
	within 5 timeout 10 "$PENNY" topo --sysfs-root t1 >out 2>err &&
	test "$WITHIN_RC" -eq 0 && test ! -s err && grep -q "^GPU0" out
'
test_expect_success 'a FIFO where hwloc reads (port state): exit 2 after the 5 s bound, one line' '
	tree_switches t2 &&
	s=t2/sys/class/infiniband/mlx5_0/ports/1/state && rm $s && mkfifo $s &&
	within 9 timeout 20 "$PENNY" topo --sysfs-root t2 >out 2>err &&
	test "$WITHIN_RC" -eq 2 && test "$(wc -l <err)" -eq 1 &&
	grep -q "^penny topo: hwloc did not finish reading sysfs root .t2. within 5 s" err &&
	within 9 timeout 20 "$PENNY" ring-plan --sysfs-root t2 >out 2>err &&
	test "$WITHIN_RC" -eq 2 && grep -q "hwloc did not finish" err
'
test_expect_success 'top: a FIFO for a port state or a counter is n/a at once' '
	tree_ports t3 &&
	p=t3/sys/class/infiniband/mlx5_0/ports/1 &&
	rm $p/state && mkfifo $p/state &&
	rm $p/counters/port_rcv_data && mkfifo $p/counters/port_rcv_data &&
	within 5 timeout 10 "$PENNY" top --sysfs-root t3 --once -i 0.1 >out 2>err &&
	test "$WITHIN_RC" -eq 0 && test ! -s err &&
	grep -q "^mlx5_0/1  *n/a  *400G  *n/a " out
'
test_expect_success '--sysfs-root or PENNY_SYSROOT naming a FIFO or a device: exit 2 at once' '
	refused 2 "cannot open sysfs root .fifo.: Not a directory" penny topo --sysfs-root fifo &&
	refused 2 "cannot open sysfs root ./dev/zero.: Not a directory" env PENNY_SYSROOT=/dev/zero \
		"$PENNY" top --once
'

# One validator: what ring-plan --check passes, allreduce-test --plan runs.
test_expect_success 'plans that ring-plan --check passed and --plan refused or misread' '
	penny ring-plan --nodes 2 --gpus 2 --nics 2 --json >p.json &&
	penny ring-plan --nodes 1 --gpus 2 --nics 0 --json >one.json &&
	python3 - <<-PY
	import copy, json
	d = json.load(open("p.json"))
	def bad(name, edit, src=d):
	    e = copy.deepcopy(src)
	    edit(e)
	    json.dump(e, open(name, "w"))
	bad("nranks.json", lambda e: e.update(nranks=-2))
	bad("nodes.json", lambda e: e.update(nnodes=7))
	bad("nrings.json", lambda e: e.update(nrings=3))
	bad("norank.json", lambda e: e.pop("nranks"))
	bad("rails.json", lambda e: e.update(rails=[0, 5]))
	bad("rank0.json", lambda e: e["nodes"][1].update(rank0=3))
	bad("hopnic.json", lambda e: e["rings"][0]["hops"][0].update(send_nic="mlx5_9"))
	bad("hopgpu.json", lambda e: e["rings"][1]["hops"][1].update(to_gpu=7))
	bad("hops.json", lambda e: e["rings"][0]["hops"].pop())
	bad("segrail.json", lambda e: e["rings"][0]["segments"][0]["recv"].update(rail=5))
	bad("id.json", lambda e: e["rings"][1].update(id=0))
	o = json.load(open("one.json"))
	r = o["rings"][0]
	bad("r10k.json", lambda e: e.update(nrings=10000, rings=[dict(r, id=i) for i in range(10000)]), o)
	PY
'
test_expect_success 'ring-plan --check: exit 1, the violation named' '
	for c in "nranks:the plan.s \"nranks\" is -2; it has 4 ranks" \
		"nodes:the plan.s \"nnodes\" is 7; it has 2 nodes" \
		"nrings:the plan.s \"nrings\" is 3; it has 2 rings" \
		"norank:the plan lacks \"nranks\"" \
		"rails:the plan.s \"rails\" lists 0 5; its rings use 0 1" \
		"rank0:the plan.s node node02: \"rank0\" must be 2" \
		"hopnic:ring 0 hop 0 (node01 -> node02): \"send_nic\" does not match" \
		"hopgpu:ring 1 hop 1 (node02 -> node01): \"to_gpu\" does not match" \
		"hops:ring 0: \"hops\" must list its 2 hops" \
		"segrail:ring 0 segment 0 (node01): recv \"rail\" must be 0, the rail of mlx5_0" \
		"id:ring 1: \"id\" must be 1" \
		"r10k:the plan has 10000 rings; the engine runs at most 64"; do
		f=${c%%:*}.json
		within 5 timeout 10 "$PENNY" ring-plan --check $f >out 2>&1 &&
		test "$WITHIN_RC" -eq 1 && grep -q "^violation: ${c#*:}" out ||
			{ echo "$f: exit $WITHIN_RC"; cat out; exit 1; }
	done
'
test_expect_success 'allreduce-test --plan refuses the same plans before running (exit 2)' '
	for f in nranks nodes hopnic segrail r10k; do
		refused 2 "^penny allreduce-test: --plan: plan .$f.json. fails validation: " \
			penny allreduce-test --np 4 --plan $f.json -b 1K -e 1K --timeout 5 || exit 1
	done &&
	grep -q "engine runs at most 64" err
'
test_expect_success 'two ranks on two nodes: each ring keeps one NIC; a plan that does not fails' '
	penny ring-plan --nodes 2 --gpus 1 --nics 2 --json >solo.json &&
	penny ring-plan --check solo.json >out && grep -q "^0 violations$" out &&
	python3 - <<-PY &&
	import json
	d = json.load(open("solo.json"))
	for r in d["rings"]:
	    for s in r["segments"]:
	        assert s["recv"]["nic"] == s["send"]["nic"], s
	s = d["rings"][0]["segments"]
	s[0]["send"] = dict(s[0]["recv"], nic="mlx5_1" if s[0]["recv"]["nic"] == "mlx5_0" else "mlx5_0")
	for r in d["rings"]:
	    r.pop("hops"); r.pop("rails")
	d.pop("rails")
	for s in d["rings"][0]["segments"]:
	    s["send"].pop("rail"); s["recv"].pop("rail")
	json.dump(d, open("solo-bad.json", "w"))
	PY
	test_exit 1 penny ring-plan --check solo-bad.json >out &&
	grep -q "^violation: ring 0: node01 receives on mlx5_[01] and sends on mlx5_[01], both with its one peer; one connection uses one NIC$" out
'

# XML: one root element, closed, nothing after it.
test_expect_success 'hwloc XML v2 and v3: a second root element, content after it, an unclosed element' '
	for v in "$X/v2/24em64t-2n6c2t-pci.xml" "$X/24em64t-2n6c2t-pci.xml"; do
		{ cat "$v"; echo "<topology version=\"2.0\"></topology>"; } >two.xml &&
		{ cat "$v"; echo "trailing"; } >trail.xml &&
		sed "\$d" "$v" >open.xml &&
		refused 2 "^penny topo: .two.xml.: malformed XML at line [0-9]*: a second root element$" \
			penny topo --topo-xml two.xml &&
		refused 2 "^penny topo: .trail.xml.: malformed XML at line [0-9]*: content after the root element$" \
			penny topo --topo-xml trail.xml &&
		refused 2 "^penny topo: .open.xml.: malformed XML at line 3: element <topology> is not closed$" \
			penny topo --topo-xml open.xml &&
		refused 2 "^penny ring-plan: .two.xml.: malformed XML" penny ring-plan --topo-xml two.xml ||
			exit 1
	done
'
test_expect_success 'NCCL graph XML: a second root element or trailing content is refused' '
	penny ring-plan --nodes 1 --gpus 4 --nics 0 --nccl-graph g.xml >/dev/null &&
	{ cat g.xml; echo "<graphs version=\"1\"/>"; } >g2.xml &&
	{ cat g.xml; echo "junk"; } >g3.xml &&
	refused 2 "content after the root element" penny ring-plan --check g2.xml &&
	refused 2 "content after the root element" penny ring-plan --check g3.xml
'
test_done
