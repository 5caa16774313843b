#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# penny check's CI outputs never lie: every exit rewrites --junit and --prom
# with the status it exits with (a run that could not run after one that
# passed, a lone rank timing out, nothing judged), an exit 2 is a JUnit
# error, --require/job.require make a SKIP a FAIL, two outputs on one file
# are refused up front, and bad config numbers and baselines are refused
# with FILE:LINE.
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/helpers/mksysfs.sh"
TOPH=$TOP/tests/helpers/top

# One NIC, no GPU: inventory and pcie pass for the NIC, skip for GPUs.
sys_root ok node-a >/dev/null
sys_cpus 4 1
PCI_NUMA=0
sys_bridge 0000:00:01.0 0x01 0x01
sys_pci 0000:01:00.0 0x020700 0x15b3 0x1021 0000:00:01.0
sys_ib mlx5_0 0000:01:00.0
sys_port mlx5_0 1 ACTIVE LinkUp "400 Gb/sec (4X NDR)" InfiniBand
sys_counters mlx5_0 1 1000 1000
mkdir empty

# outputs EXIT [WHY]: j.xml is well-formed JUnit whose error count is 1
# exactly when EXIT is 2 (with WHY in its message), p.prom says EXIT.
outputs() {
	xmllint --noout j.xml &&
	python3 "$TOPH/check_prom.py" p.prom --expect "penny_check_exit_code=$1" >/dev/null &&
	python3 - "$@" <<-'EOF'
	import sys, xml.etree.ElementTree as ET
	code, why = int(sys.argv[1]), sys.argv[2] if len(sys.argv) > 2 else ""
	s = ET.parse("j.xml").getroot().find("testsuite")
	errs = s.findall("testcase/error")
	assert int(s.get("errors")) == len(errs) == (1 if code == 2 else 0), (s.attrib, len(errs))
	assert int(s.get("tests")) == len(s.findall("testcase"))
	if code == 1:
	    assert int(s.get("failures")) > 0
	if why:
	    assert why in errs[0].get("message"), errs[0].get("message")
	EOF
}

test_expect_success 'a passing run, then one that cannot run: both files rewritten' '
	penny check --sysfs-root ok --only inventory,pcie --junit j.xml --prom p.prom >out &&
	outputs 0 &&
	test_exit 2 penny check --sysfs-root empty --junit j.xml --prom p.prom >out 2>err &&
	outputs 2 "has no sys/devices/system/cpu" &&
	test ! -e .j.xml.* && test ! -e .p.prom.*
'

test_expect_success 'a bad --config after a pass: exit 2 in both files, naming FILE:LINE' '
	penny check --sysfs-root ok --only inventory --junit j.xml --prom p.prom >out &&
	outputs 0 &&
	printf "inventory.gpus = 2.5\n" >bad.conf &&
	test_exit 2 penny check --sysfs-root ok --config bad.conf --junit j.xml --prom p.prom \
		>out 2>err &&
	test $(wc -l <err) = 1 && grep -q "bad.conf:1: inventory.gpus must be a decimal integer" err &&
	outputs 2 "bad.conf:1: inventory.gpus must be a decimal integer"
'

test_expect_success 'bad options and a missing --config file are exits that rewrite too' '
	for bad in "--only bogus" "--config nonexistent.conf" "--baseline nonexistent.json" \
		   "--only pcie --skip pcie" "unexpected"; do
		penny check --sysfs-root ok --only inventory --junit j.xml --prom p.prom >out &&
		outputs 0 || exit 1
		test_exit 2 penny check --sysfs-root ok $bad --junit j.xml --prom p.prom \
			>out 2>err || exit 1
		test $(wc -l <err) = 1 && outputs 2 || { echo "$bad"; cat err; exit 1; }
	done
'

test_expect_success 'a lone rank that times out waiting for the job: exit 2 in both files' '
	penny check --sysfs-root ok --only inventory --junit j.xml --prom p.prom >out &&
	within 10 penny check --sysfs-root ok --only inventory --rank 0 --nranks 2 \
		--root 127.0.0.1:0 --timeout 1 --junit j.xml --prom p.prom >out 2>err &&
	test $WITHIN_RC = 2 && grep -q "timed out" err && outputs 2 "timed out"
'

test_expect_success 'every result a SKIP (exit 2) is a JUnit error, not a pass' '
	penny check --sysfs-root ok --only inventory --junit j.xml --prom p.prom >out &&
	test_exit 2 penny check --sysfs-root ok --only gpu-copy --backend host \
		--junit j.xml --prom p.prom >out 2>err &&
	grep -q "SKIP" out && outputs 2 "every check was skipped"
'

test_expect_success '--require and job.require: a SKIP of a named check is a FAIL' '
	penny check --sysfs-root ok --only inventory,pcie >out &&
	test_exit 1 penny check --sysfs-root ok --only inventory,pcie --require pcie \
		--junit j.xml --prom p.prom --json >out.json 2>err &&
	outputs 1 &&
	python3 -c "import json; d=json.load(open(\"out.json\")); r=[x for x in d[\"results\"] if x[\"check\"]==\"pcie\" and x[\"target\"]==\"gpus\"][0]; assert r[\"verdict\"]==\"FAIL\" and r[\"detail\"]==\"required, but skipped: no GPU found\" and r[\"source\"]==\"--require\", r; assert d[\"exit\"]==1" &&
	echo "job.require = inventory" >req.conf &&
	test_exit 1 penny check --sysfs-root ok --only inventory,pcie --config req.conf \
		--json >out.json &&
	python3 -c "import json; d=json.load(open(\"out.json\")); f=[(x[\"check\"],x[\"target\"]) for x in d[\"results\"] if x[\"verdict\"]==\"FAIL\"]; assert f==[(\"inventory\",\"gpus\"),(\"inventory\",\"rails\")], f" &&
	penny check --sysfs-root ok --only inventory,pcie --require counters --skip counters \
		>out 2>err; test $? = 2 && grep -q "check .counters. is required but not run" err &&
	test_exit 2 penny check --sysfs-root ok --require bogus >out 2>err &&
	grep -q "^penny check: --require: " err &&
	echo "job.require = gpu-copy,inventory" >req3.conf &&
	test_exit 1 penny check --sysfs-root ok --only inventory --config req3.conf >out 2>err &&
	penny check --sysfs-root ok --only pcie --config req3.conf >out &&
	echo "job.require = pcie,,counters" >req2.conf &&
	test_exit 2 penny check --sysfs-root ok --config req2.conf >out 2>err &&
	grep -q "req2.conf:1: job.require must be a comma list" err
'

test_expect_success 'two outputs (or an output and an input) on one file: refused up front' '
	echo keep >x &&
	test_exit 2 penny check --sysfs-root ok --only pcie --junit x --prom x >out 2>err &&
	test $(wc -l <err) = 1 && grep -q "^penny check: --junit and --prom name the same file .x." err &&
	test "$(cat x)" = keep && test ! -s out &&
	ln x x2 &&
	test_exit 2 penny check --sysfs-root ok --only pcie --prom x --save-baseline ./x2 >out 2>err &&
	grep -q "the same file" err && test "$(cat x)" = keep &&
	test_exit 2 penny check --sysfs-root ok --only pcie --junit - --prom /dev/stdout >out 2>err &&
	grep -q "the same file" err && test ! -s out &&
	echo "inventory.gpus = 0" >c.conf &&
	test_exit 2 penny check --sysfs-root ok --only pcie --config c.conf --junit c.conf >out 2>err &&
	grep -q -- "--junit and --config name the same file" err &&
	test "$(cat c.conf)" = "inventory.gpus = 0"
'

test_expect_success 'config numbers: decimal, integers without a fraction or hex' '
	for v in "inventory.gpus = 2.5" "inventory.gpus = 0x2" "inventory.nics = 1e0" \
		 "nic-bw.size = 0x100000" "job.median-margin = 0x0.1p0" "job.median-margin = nan"; do
		printf "# a comment\n%s\n" "$v" >n.conf
		test_exit 2 penny check --sysfs-root ok --config n.conf >out 2>err || exit 1
		test $(wc -l <err) = 1 && grep -Eq "n.conf:2: .* must be a (decimal|size in bytes)" err ||
			{ echo "$v"; cat err; exit 1; }
	done &&
	printf "inventory.nics = 1\njob.median-margin = .5\n" >n.conf &&
	penny check --sysfs-root ok --only inventory --config n.conf >out
'
# byte keys take penny(1)'s sizes (64K was "must be a decimal integer");
# an integer range is said in integers (it read 0..4.29497e+09)
test_expect_success 'config byte keys take sizes; integer ranges said in full' '
	printf "nic-bw.size = 64K\nsettings.shm-min = 1GiB\nrails.size = 16MB\n" >s.conf &&
	penny check --sysfs-root ok --only inventory --config s.conf >out &&
	echo "nic-bw.size = 2G" >s.conf &&
	test_exit 2 penny check --sysfs-root ok --config s.conf >out 2>err &&
	grep -q "s.conf:1: nic-bw.size must be 1..1073741824 bytes, got 2G$" err &&
	echo "settings.job-uid = 4294967295" >s.conf &&
	test_exit 2 penny check --sysfs-root ok --config s.conf >out 2>err &&
	grep -q "s.conf:1: settings.job-uid must be 0..4294967294, got 4294967295$" err
'

test_expect_success 'a baseline with a negative measured value: refused with FILE:LINE' '
	penny check --sysfs-root ok --only inventory --save-baseline base.json >out &&
	sed "s/\"measured\": 400/\"measured\": -400/" base.json >neg.json &&
	! cmp -s base.json neg.json &&
	test_exit 2 penny check --sysfs-root ok --only inventory --baseline neg.json >out 2>err &&
	test $(wc -l <err) = 1 &&
	grep -q "^penny check: neg.json: line [0-9]*: \"measured\" must not be negative" err &&
	penny check --sysfs-root ok --only inventory --baseline base.json >out
'

test_done
