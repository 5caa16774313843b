#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# penny check's node checks on synthetic sysfs trees (tests/helpers/mksysfs.sh):
# a healthy node passes (exit 0); a downtrained PCIe link, a port DOWN, a port
# at half rate, a GPU without a rail NIC and an error counter that rises
# during the run each FAIL with the right target (exit 1); nothing to check is
# exit 2.  --only/--skip, bad options and config lines, the outputs (--json,
# --junit, --prom), baselines and output files that are not regular files.
# cost: 24
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/helpers/trees.sh"
TOPH=$TOP/tests/helpers/top

# Two NUMA nodes, each with a PCIe switch holding a GPU and its 400 Gb/s NIC.
healthy() {
	tree_pairs "$1" node-ok
	local d p
	for d in 0 1; do
		for p in symbol_error link_downed port_rcv_errors port_xmit_discards; do
			echo 0 >"$1/sys/class/infiniband/mlx5_$d/ports/1/counters/$p"
		done
	done
}
healthy ok >/dev/null
copy() { rm -rf "$2" && cp -a "$1" "$2"; }
port() { echo "ok/sys/class/infiniband/$1/ports/1"; }
pci() { echo "$(readlink -f "$1/sys/bus/pci/devices/$2")"; }

# a result's verdict from the JSON document: verdict CHECK TARGET FILE
verdict() {
	python3 -c 'import json,sys
d = json.load(open(sys.argv[3]))
r = [x for x in d["results"] if x["check"] == sys.argv[1] and x["target"] == sys.argv[2]]
assert len(r) == 1, r
print(r[0]["verdict"], r[0]["detail"] or "", "|", r[0]["source"] or "")' "$@"
}

test_expect_success 'a healthy node passes (exit 0, nothing on stderr)' '
	{ penny check --sysfs-root ok >out 2>err; rc=$?; } &&
	{
		test "$rc" = 0 && test ! -s err &&
		grep -q "^inventory  *node-ok  *gpus  *2  *any  *PASS" out &&
		grep -q "^inventory  *node-ok  *mlx5_1/1  *400 Gb/s  *400 Gb/s  *PASS" out &&
		grep -q "^inventory  *node-ok  *GPU1  *PIX to mlx5_1  *PXB or better  *PASS" out &&
		grep -q "^pcie  *node-ok  *GPU0  *Gen5 x16  *Gen5 x16  *PASS" out &&
		grep -q "^counters  *node-ok  *mlx5_0/1  *0  *0  *PASS" out &&
		grep -q " 0 failed, " out &&
		! grep -q FAIL out ||
		{ echo "exit $rc; stderr:"; cat err; echo "stdout, all but PASS rows:"; grep -v " PASS" out; false; }
	}
'

test_expect_success 'PENNY_NODE_ID names the node' '
	PENNY_NODE_ID=rack7-n3 penny check --sysfs-root ok --only pcie >out &&
	grep -q "^pcie  *rack7-n3  *GPU0 " out
'

test_expect_success 'a downtrained link above a GPU fails, naming the link' '
	copy ok down && echo 8 >"$(pci down 0000:01:00.0)/current_link_width" &&
	test_exit 1 penny check --sysfs-root down --json >out.json &&
	verdict pcie GPU0 out.json >v && cat v &&
	grep -q "^FAIL downtrained width link at 0000:01:00.0 (above the device): Gen5 x8 of Gen5 x16" v &&
	verdict pcie mlx5_0 out.json | grep -q "^FAIL .*0000:01:00.0" &&
	verdict pcie GPU1 out.json | grep -q "^PASS"
'

test_expect_success 'a GPU at a lower speed passes (idle), fails with strict; width always' '
	copy ok idle && echo "2.5 GT/s PCIe" >"$(pci idle 0000:03:00.0)/current_link_speed" &&
	penny check --sysfs-root idle --only pcie --json >out.json &&
	verdict pcie GPU0 out.json | grep -q "^PASS speed lowered to Gen1, as an idle GPU does" &&
	echo "pcie.gpu-speed = strict" >strict.conf &&
	test_exit 1 penny check --sysfs-root idle --only pcie --config strict.conf --json >out.json &&
	verdict pcie GPU0 out.json | grep -q "^FAIL downtrained speed link at 0000:03:00.0: Gen1 x16 of Gen5 x16" &&
	echo 4 >"$(pci idle 0000:03:00.0)/current_link_width" &&
	test_exit 1 penny check --sysfs-root idle --only pcie --json >out.json &&
	verdict pcie GPU0 out.json | grep -q "^FAIL downtrained width link at 0000:03:00.0: Gen1 x4"
'

test_expect_success 'a NIC that is downtrained fails (no idle rule for NICs)' '
	copy ok nicdown && echo "16.0 GT/s PCIe" >"$(pci nicdown 0000:84:00.0)/current_link_speed" &&
	test_exit 1 penny check --sysfs-root nicdown --only pcie >out &&
	grep -q "^pcie  *node-ok  *mlx5_1  *Gen4 x16  *Gen5 x16  *FAIL  downtrained speed link at 0000:84:00.0" out
'

test_expect_success 'a port DOWN fails (its target, its state)' '
	copy ok pdown &&
	echo "1: DOWN" >pdown/sys/class/infiniband/mlx5_1/ports/1/state &&
	echo "2: Polling" >pdown/sys/class/infiniband/mlx5_1/ports/1/phys_state &&
	test_exit 1 penny check --sysfs-root pdown --only inventory --json >out.json &&
	verdict inventory mlx5_1/1 out.json | grep -q "^FAIL port is DOWN (physical state Polling), not ACTIVE/LinkUp" &&
	verdict inventory mlx5_0/1 out.json | grep -q "^PASS"
'

test_expect_success 'a port at half rate fails against the fastest port' '
	copy ok half &&
	echo "200 Gb/sec (4X HDR)" >half/sys/class/infiniband/mlx5_0/ports/1/rate &&
	test_exit 1 penny check --sysfs-root half --only inventory --json >out.json &&
	verdict inventory mlx5_0/1 out.json >v &&
	grep -q "^FAIL runs at 200 of 400 Gb/s (200 Gb/sec (4X HDR)) | topology: fastest InfiniBand port 400 Gb/s" v &&
	echo "inventory.port-rate = 200" >r.conf &&
	penny check --sysfs-root half --only inventory --config r.conf --json >out.json &&
	verdict inventory mlx5_0/1 out.json | grep -q "^PASS  | config: inventory.port-rate"
'

test_expect_success 'a rate of inf, 0 or 1e300 fails that port, never the one beside it' '
	for r in "inf Gb/sec (4X NDR)" "0 Gb/sec" "1e300 Gb/sec" "NaN Gb/sec"; do
		copy ok inf && echo "$r" >inf/sys/class/infiniband/mlx5_1/ports/1/rate &&
		test_exit 1 penny check --sysfs-root inf --only inventory --json >out.json &&
		verdict inventory mlx5_1/1 out.json >v &&
		grep -q "^FAIL /sys/class/infiniband/mlx5_1/ports/1/rate is not a link rate" v &&
		verdict inventory mlx5_0/1 out.json | grep -q "^PASS  | topology: fastest InfiniBand port 400 Gb/s" ||
		{ cat v; return 1; }
	done
'

echo "root:*:19000:0:99999:7:::" >secret
test_expect_success 'files linked out of the tree are not read (nor printed)' '
	copy ok jail &&
	ln -sf "$PWD/secret" "$(pci jail 0000:01:00.0)/current_link_speed" &&
	ln -sf ../../../../../../../../../../../secret "$(pci jail 0000:03:00.0)/current_link_width" &&
	ln -sf "$PWD/secret" jail/sys/class/infiniband/mlx5_0/ports/1/rate &&
	test_exit 1 penny check --sysfs-root jail --only inventory,pcie --json >out.json 2>err &&
	penny check --sysfs-root jail --only pcie >out 2>>err &&
	! grep -q "root:" out.json out err &&
	verdict pcie GPU0 out.json >v && cat v &&
	grep -q "^SKIP link state unknown: current_link_width: No such file" v &&
	verdict pcie mlx5_0 out.json | grep -q "^PASS link at 0000:01:00.0 unknown: current_link_speed: No such file" &&
	verdict inventory mlx5_0/1 out.json | grep -q "^FAIL .*/mlx5_0/ports/1/rate cannot be read: No such file"
'

test_expect_success 'a file that does not parse is named with its kind, never shown' '
	copy ok junk &&
	cp secret "$(pci junk 0000:03:00.0)/current_link_speed" &&
	cp secret "$(pci junk 0000:04:00.0)/max_link_width" &&
	cp secret junk/sys/class/infiniband/mlx5_0/ports/1/rate &&
	test_exit 1 penny check --sysfs-root junk --only inventory,pcie --json >out.json 2>err &&
	! grep -q "root:" out.json err &&
	verdict pcie GPU0 out.json | grep -q "^SKIP link state unknown: current_link_speed: not a link speed" &&
	verdict pcie mlx5_0 out.json | grep -q "^SKIP link state unknown: max_link_width: not a link width" &&
	verdict inventory mlx5_0/1 out.json | grep -q "^FAIL /sys/class/infiniband/mlx5_0/ports/1/rate is not a link rate"
'

test_expect_success 'a NIC without ports fails, and so does the rail through it' '
	copy ok noports && rm -rf noports/sys/class/infiniband/mlx5_1/ports &&
	test_exit 1 penny check --sysfs-root noports --only inventory --json >out.json &&
	verdict inventory mlx5_1 out.json >v && cat v &&
	grep -q "^FAIL /sys/class/infiniband/mlx5_1/ports is missing or has no readable port" v &&
	verdict inventory GPU1 out.json | grep -q "^FAIL its NIC mlx5_1 has no ports" &&
	verdict inventory GPU0 out.json | grep -q "^PASS" &&
	test_exit 1 penny check --sysfs-root noports --only inventory -d mlx5_1:1 >out &&
	grep -q "^inventory .* mlx5_1  *no ports  *ports  *FAIL" out &&
	test_exit 1 penny check --sysfs-root noports --only inventory -d mlx5_0 --json >out.json &&
	! grep -q "\"target\":\"mlx5_1\"" out.json
'

test_expect_success 'a GPU without a rail NIC fails; rail-path relaxes it' '
	. "$TOP/tests/helpers/trees.sh" && tree_switches sw >/dev/null 2>&1 &&
	test_exit 1 penny check --sysfs-root sw --only inventory --json >out.json &&
	verdict inventory GPU0 out.json | grep -q "^PASS" &&
	verdict inventory GPU1 out.json | grep -q "^PASS" &&
	verdict inventory GPU2 out.json | grep -q "^FAIL no NIC within PXB: the nearest, mlx5_0, is NODE away" &&
	verdict inventory GPU3 out.json | grep -q "^FAIL no NIC within PXB: the nearest, mlx5_1, is PHB away" &&
	echo "inventory.rail-path = NODE" >n.conf &&
	penny check --sysfs-root sw --only inventory --config n.conf >out
'

test_expect_success 'GPU and rail NIC on different NUMA nodes fail' '
	copy ok numa && echo 1 >"$(pci numa 0000:04:00.0)/numa_node" &&
	test_exit 1 penny check --sysfs-root numa --only inventory --json >out.json &&
	verdict inventory GPU0 out.json | grep -q "^FAIL GPU0 is on NUMA node 0, its NIC mlx5_0 on 1"
'

# The counters are sampled before the first check with their files held
# open: bump them once penny holds symbol_error (no race with that sample).
opened() { ls -l /proc/$1/fd 2>/dev/null | grep -q "mlx5_1/ports/1/counters/symbol_error"; }
test_expect_success 'an error counter that rises during the run fails, named' '
	copy ok ctr && printf "counters.window = 3\n" >w.conf || exit 1
	f=ctr/sys/class/infiniband/mlx5_1/ports/1/counters
	"$PENNY" check --sysfs-root ctr --only counters --config w.conf --json >out.json &
	pid=$! n=0
	while ! opened $pid && [ $n -lt 100 ]; do sleep 0.02; n=$((n + 1)); done
	wait_rc() { wait $1; echo $? >rc; }
	echo 3 >$f/symbol_error && echo 1 >$f/link_downed &&
	wait_rc $pid && test "$(cat rc)" = 1 &&
	verdict counters mlx5_1/1 out.json >v && cat v &&
	grep -q "^FAIL rose: symbol_error +3, link_downed +1 | default: no increase" v &&
	verdict counters mlx5_0/1 out.json | grep -q "^PASS" &&
	python3 -c "import json; d=json.load(open(\"out.json\")); r=[x for x in d[\"results\"] if x[\"target\"]==\"mlx5_1/1\"][0]; assert r[\"measured\"]==4 and r[\"seconds\"]>=2.9, r"
'

# 128 counters per port were kept and the rest dropped without a word: an
# error counter past them was never judged
test_expect_success 'a port with thousands of counters: errors judged, the rest counted' '
	copy ok many && printf "counters.window = 2\n" >w2.conf || exit 1
	h=many/sys/class/infiniband/mlx5_1/ports/1/hw_counters e=many/sys/class/infiniband/mlx5_0/ports/1/hw_counters
	mkdir -p $h $e && (cd $h && for i in $(seq 1000 2999); do echo 0 >aa_$i; done && echo 0 >zz_late_err) &&
	(cd $e && for i in $(seq 100 399); do echo 0 >e_${i}_err; done) || exit 1
	"$PENNY" check --sysfs-root many --only counters --config w2.conf --json >out.json &
	pid=$! n=0
	while ! ls -l /proc/$pid/fd 2>/dev/null | grep -q zz_late_err && [ $n -lt 150 ]; do sleep 0.02; n=$((n + 1)); done
	echo 7 >$h/zz_late_err &&
	{ wait $pid; test $? = 1; } &&
	verdict counters mlx5_1/1 out.json >v && cat v &&
	grep -q "^FAIL rose: zz_late_err +7; 1753 counters left out (more than 256), 0 of them error counters" v &&
	verdict counters mlx5_0/1 out.json >v && cat v &&
	grep -q "^FAIL 52 counters left out (more than 256), 48 of them error counters" v
'

test_expect_success 'counters.window past --timeout is refused up front, on a node alone too' '
	copy ok win && printf "counters.window = 3600\n" >win.conf || exit 1
	within 3 test_exit 2 timeout 5 "$PENNY" check --sysfs-root win --only counters \
		--config win.conf --timeout 1 >out 2>err; ok=$?; cat err
	test $ok -eq 0 && test "$(wc -l <err)" -eq 1 &&
	grep -q "counters.window 3600 s is not shorter than --timeout 1 s" err &&
	printf "counters.window = 1\n" >win1.conf &&
	within 3 test_exit 2 timeout 5 "$PENNY" check --sysfs-root win --only counters \
		--config win1.conf --timeout 1 2>err && grep -q "counters.window 1 s is not shorter than --timeout 1 s" err &&
	within 3 penny check --sysfs-root win --only inventory --config win.conf --timeout 1 >/dev/null
'

test_expect_success 'counters.max-increase allows that much increase' '
	copy ok ctr2 && printf "counters.window = 1\ncounters.max-increase = 4\n" >w4.conf || exit 1
	"$PENNY" check --sysfs-root ctr2 --only counters --config w4.conf >out &
	pid=$! n=0
	while ! opened $pid && [ $n -lt 100 ]; do sleep 0.02; n=$((n + 1)); done
	echo 4 >ctr2/sys/class/infiniband/mlx5_1/ports/1/counters/port_rcv_errors &&
	wait $pid &&
	grep -q "^counters .*mlx5_1/1  *4  *4  *PASS" out
'

test_expect_success 'nothing to check: every result a SKIP, exit 2' '
	sys_root empty bare >/dev/null && sys_cpus 2 1 >/dev/null &&
	test_exit 2 penny check --sysfs-root empty --only inventory,pcie,counters >out 2>err &&
	grep -q "^inventory  *bare  *gpus .* SKIP  no GPU found" out &&
	grep -q "^pcie  *bare  *nics .* SKIP  no RDMA device found" out &&
	grep -q "^counters  *bare  *ports .* SKIP  no RDMA port found" out &&
	test $(wc -l <err) = 1 && grep -q "^penny check: nothing could be checked here" err
'

test_expect_success 'no GPU: the GPU parts are SKIPs, the NIC parts still judged' '
	copy ok nogpu && rm -rf "$(pci nogpu 0000:03:00.0)" "$(pci nogpu 0000:83:00.0)" \
		nogpu/sys/bus/pci/devices/0000:03:00.0 nogpu/sys/bus/pci/devices/0000:83:00.0 &&
	penny check --sysfs-root nogpu --only inventory,pcie >out &&
	grep -q "^inventory  *node-ok  *rails .* SKIP  no GPU found" out &&
	grep -q "^pcie  *node-ok  *gpus .* SKIP  no GPU found" out &&
	grep -q "^pcie  *node-ok  *mlx5_0 .* PASS" out
'

test_expect_success '--only and --skip choose the checks; -d the ports' '
	penny check --sysfs-root ok --only pcie >out &&
	test "$(sed 1d out | sed \$d | cut -d" " -f1 | sort -u)" = pcie &&
	penny check --sysfs-root ok --skip pcie,counters,nic-bw,gpu-copy,allreduce,rails,settings,ranks,nccl-path,alltoall >out &&
	test "$(sed 1d out | sed \$d | cut -d" " -f1 | sort -u)" = inventory &&
	penny check --sysfs-root ok --only inventory,counters -d mlx5_1 >out &&
	! grep -q mlx5_0/1 out && grep -q "^inventory .*mlx5_1/1" out && grep -q "^counters .*mlx5_1/1" out
'
# a typo in -d selected nothing and passed (every port row a SKIP)
test_expect_success '-d naming no device or port of the node fails the node' '
	for d in mlx5_typo mlx5_1:9 mlx5_1,mlx5_typo; do
		test_exit 1 penny check --sysfs-root ok --only inventory -d $d >out &&
		grep -q "^inventory .* selected .* FAIL .*-d .${d#*,}.: no such RDMA device or port" out ||
			{ echo "-d $d:"; cat out; exit 1; }
	done &&
	penny check --sysfs-root ok --only inventory -d mlx5_1:1 >out && ! grep -q selected out
'

test_expect_success 'bad options: one line each, exit 2' '
	for args in "--only bogus" "--skip pcie,,counters" "--only pcie --skip pcie" \
		    "--baseline a --save-baseline b" "extra" "--config /nonexistent.conf" \
		    "--baseline /nonexistent.json" "--config /dev/null" "--bogus"; do
		test_exit 2 penny check --sysfs-root ok $args >out 2>err || exit 1
		test ! -s out && test $(wc -l <err) = 1 || { echo "$args:"; cat out err; exit 1; }
		grep -q "^penny check: " err || exit 1
	done &&
	penny check --only bogus 2>&1 | grep -q "no check .bogus. (checks: inventory, pcie"
'

test_expect_success 'bad config lines: FILE:LINE and why, exit 2' '
	for l in "no.such = 1" "inventory.gpus = -1" "inventory.gpus = 2\ninventory.gpus = 2" \
		 "job.median-margin = 2" "inventory.rail-path = far" "just words"; do
		printf "# c\n$l\n" >bad.conf
		test_exit 2 penny check --sysfs-root ok --config bad.conf >out 2>err || exit 1
		test ! -s out && test $(wc -l <err) = 1 && grep -q "^penny check: bad.conf:[23]: " err ||
			{ cat err; exit 1; }
	done
'

test_expect_success '--json: one document, valid on failure; FAILED on stderr' '
	penny check --sysfs-root ok --json >ok.json 2>err && test ! -s err &&
	json_valid ok.json &&
	python3 -c "
import json
d = json.load(open(\"ok.json\"))
assert d[\"version\"] == 1 and d[\"exit\"] == 0 and d[\"summary\"][\"fail\"] == 0, d[\"summary\"]
for r in d[\"results\"]:
    assert set(r) == {\"check\",\"node\",\"target\",\"measured\",\"measured_text\",\"unit\",\"expected\",\"expected_text\",\"source\",\"verdict\",\"detail\",\"seconds\"}, r
    assert r[\"measured\"] is None or type(r[\"measured\"]) in (int, float), r
    assert r[\"expected\"] is None or type(r[\"expected\"]) in (int, float), r
    assert r[\"measured_text\"] is None or r[\"measured\"] is None, r
" &&
	test_exit 1 penny check --sysfs-root half --json >bad.json 2>err &&
	json_valid bad.json && test $(wc -l <err) = 1 &&
	grep -q "^penny check: FAILED: 1 check result failed" err &&
	python3 -c "import json; d=json.load(open(\"bad.json\")); assert d[\"exit\"]==1 and d[\"summary\"][\"exit\"]==1"
'

test_expect_success '--junit: the elements and attributes CI systems read' '
	test_exit 1 penny check --sysfs-root half --junit j.xml >out &&
	python3 -c "
import xml.etree.ElementTree as ET
root = ET.parse(\"j.xml\").getroot()
assert root.tag == \"testsuites\", root.tag
suites = root.findall(\"testsuite\")
assert len(suites) == 1
s = suites[0]
for a in (\"name\", \"tests\", \"failures\", \"errors\", \"skipped\", \"time\", \"hostname\"):
    assert a in s.attrib, a
cases = s.findall(\"testcase\")
assert int(s.get(\"tests\")) == len(cases) > 0
fails = [c for c in cases if c.find(\"failure\") is not None]
skips = [c for c in cases if c.find(\"skipped\") is not None]
assert int(s.get(\"failures\")) == len(fails) == 1, len(fails)
assert int(s.get(\"skipped\")) == len(skips) and skips
for c in cases:
    assert c.get(\"classname\") and c.get(\"name\") and c.get(\"time\") is not None
f = fails[0]
assert f.get(\"classname\") == \"inventory\" and f.get(\"name\") == \"node-ok:mlx5_0/1\", f.attrib
assert \"200 of 400\" in f.find(\"failure\").get(\"message\")
"
'

test_expect_success '--prom: the Prometheus text format, by rename' '
	test_exit 1 penny check --sysfs-root half --prom c.prom >out &&
	python3 "$TOPH/check_prom.py" c.prom \
		--expect "penny_check_result{check=\"inventory\",target=\"mlx5_0/1\"}=0" \
		--expect "penny_check_result{check=\"inventory\",target=\"mlx5_1/1\"}=1" \
		--expect "penny_check_measured_bytes_per_second{check=\"inventory\",target=\"mlx5_0/1\"}=25e9" \
		--expect "penny_check_exit_code=1" &&
	ls -A | grep -v "^\.c\.prom\." >/dev/null && ! ls -A | grep -q "^\.c\.prom\."
'

test_expect_success '--save-baseline then --baseline: a slower NIC fails, the config beats it' '
	penny check --sysfs-root ok --only inventory --save-baseline base.json >out &&
	json_valid base.json &&
	python3 -c "import json; d=json.load(open(\"base.json\")); assert d[\"penny_check_baseline\"]==1; assert any(r[\"target\"]==\"mlx5_0/1\" and r[\"measured\"]==400 for r in d[\"results\"])" &&
	copy ok slow &&
	for d in mlx5_0 mlx5_1; do echo "200 Gb/sec (4X HDR)" >slow/sys/class/infiniband/$d/ports/1/rate; done &&
	penny check --sysfs-root slow --only inventory >out &&
	test_exit 1 penny check --sysfs-root slow --only inventory --baseline base.json --json >out.json &&
	verdict inventory mlx5_0/1 out.json | grep -q "^FAIL runs at 200 of 360 Gb/s .* | baseline: 90% of 400" &&
	echo "inventory.port-rate = 200" >r.conf &&
	penny check --sysfs-root slow --only inventory --baseline base.json --config r.conf --json >out.json &&
	verdict inventory mlx5_0/1 out.json | grep -q "^PASS  | config: inventory.port-rate"
'

test_expect_success '--baseline: counts must equal the saved ones' '
	copy ok lost && rm -rf "$(pci lost 0000:83:00.0)" lost/sys/bus/pci/devices/0000:83:00.0 &&
	test_exit 1 penny check --sysfs-root lost --only inventory --baseline base.json --json >out.json &&
	verdict inventory gpus out.json | grep -q "^FAIL found 1 GPU, expected 2 | baseline"
'

test_expect_success '--save-baseline is not written when the run fails' '
	echo keep >b2.json &&
	test_exit 1 penny check --sysfs-root half --only inventory --save-baseline b2.json >out 2>err &&
	test "$(cat b2.json)" = keep && grep -q "not written: the run did not pass" err
'

test_expect_success 'output files that are not regular files are refused, untouched' '
	mkfifo fifo && ln -s target link &&
	for o in --junit --prom --save-baseline; do
		for f in /dev/null fifo link; do
			test_exit 2 penny check --sysfs-root ok --only pcie $o $f >out 2>err || exit 1
			test ! -s out && test $(wc -l <err) = 1 || exit 1
		done
	done &&
	test -c /dev/null && test -p fifo && test -L link && test ! -e target
'

test_expect_success 'under a launcher: the node checks once, rank 0 prints' '
	penny check --np 2 --sysfs-root ok --only inventory,pcie --json >out.json 2>err &&
	test ! -s err && json_valid out.json &&
	python3 -c "import json; d=json.load(open(\"out.json\")); n=[r for r in d[\"results\"] if r[\"target\"]==\"GPU0\"]; assert len(n)==2, n; assert d[\"exit\"]==0" &&
	test_exit 1 penny check --np 2 --sysfs-root half --only inventory >out 2>err &&
	test $(grep -c "mlx5_0/1" out) = 1
'

test_expect_success 'the man page documents every key of --list-keys' '
	penny check --list-keys --json >keys.json &&
	python3 -c "import json; print(\"\\n\".join(k[\"key\"] for k in json.load(open(\"keys.json\"))[\"keys\"]))" >keys &&
	test $(wc -l <keys) -ge 9 &&
	sed -n "/^\.SH CONFIGURATION/,/^\.SH OUTPUT/p" "$TOP/man/penny-check.1" |
		sed "s/\\\\-/-/g" >man.txt &&
	while read -r k; do
		grep -q "^\.B $k\$" man.txt || { echo "penny-check.1 lacks $k"; exit 1; }
	done <keys &&
	grep "^\.B [a-z-]*\.[a-z-]*$" man.txt | sed "s/^\.B //" | sort >man.keys &&
	test $(sort -u man.keys | wc -l) = $(wc -l <man.keys) &&
	sort keys | comm -13 - man.keys >extra && test ! -s extra
'

test_done
