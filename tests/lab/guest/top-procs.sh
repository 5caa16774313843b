#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Guest side of t0120 (after top-bw.sh, before verbs.sh): penny top --processes while penny bw runs between
# rxe0 and rxe1 (vm.sh --pairs 1): the QP owners read through RDMA netlink
# name penny bw's pid and command with RC QPs on both devices, as JSON and
# as the table; after bw is gone, its pid is no longer listed.
. "$(dirname "$0")/lib-guest.sh"

# procs_of FILE PID...: "DEV QPS TYPES" per device where one of the PIDs owns QPs
procs_of() {
	python3 - "$@" <<-\EOF
	import json, sys
	s = json.loads(open(sys.argv[1]).read().splitlines()[-1])
	assert s["processes_note"] is None, s["processes_note"]
	pids = [int(x) for x in sys.argv[2:]]
	for p in s["processes"]:
	    if p["pid"] in pids:
	        assert p["command"] == "penny" and not p["kernel"], p
	        print(p["device"], p["qps"], ",".join(p["qp_types"]))
	EOF
}

# bw --loopback DEV1,DEV2 runs DEV1's end itself and forks DEV2's: both are
# penny bw, the parent and its child
# The view is first asked once data moves over rxe1 (both ends' QPs made
# and connected, read from the counters without starting a process): each
# round of the loop starts penny top and python3, seconds under emulation,
# and rounds before bw connected found nothing.
test_expect_success 'during penny bw: its processes own RC QPs on rxe0 and rxe1' '
	r1=$(hwc rxe1 rcvd_pkts)
	"$PENNY" bw --loopback rxe0,rxe1 -s 65536 -D 60 >bw.out 2>bw.err &
	bwp=$! &&
	echo $bwp >bw.pid &&
	for ((i = 0; i < 300; i++)); do
		[ $(($(hwc rxe1 rcvd_pkts) - r1)) -gt 100 ] && break
		kill -0 $bwp 2>/dev/null || break
		nap 0.1
	done
	ok= &&
	for ((i = 0; i < 40; i++)); do
		kids=$(cat /proc/$bwp/task/*/children 2>/dev/null) &&
		"$PENNY" top --once -i 0.2 --processes --filter rxe --json >p.json 2>p.err &&
			procs_of p.json $bwp $kids >seen &&
			grep -q "^rxe0 [1-9][0-9]* .*RC" seen && grep -q "^rxe1 [1-9][0-9]* .*RC" seen &&
			{ ok=1; break; }
		nap 0.25
	done
	echo "bw $bwp, children: $kids" && cat seen p.err &&
	{ test -n "$ok" || python3 -c "import json; s = json.loads(open(\"p.json\").read().splitlines()[-1]); print(s[\"processes_note\"], s[\"processes\"])"; } &&
	echo $bwp $kids >bw.pids &&
	test ! -s p.err && test -n "$ok" &&
	"$PENNY" top --once -i 0.2 --processes --filter rxe >p.txt 2>&1 &&
	cat p.txt &&
	pids=$(echo $bwp $kids | tr " " "|") &&
	grep -Eq "^rxe0 +($pids) penny +[1-9][0-9]* .*RC" p.txt &&
	grep -Eq "^rxe1 +($pids) penny +[1-9][0-9]* .*RC" p.txt
	ret=$?
	kill $bwp 2>/dev/null
	wait $bwp
	(exit $ret)
'

test_expect_success 'after penny bw: its processes are gone from the view' '
	"$PENNY" top --once -i 0.2 --processes --json >after.json 2>err &&
	test ! -s err &&
	procs_of after.json $(cat bw.pids) >left && test ! -s left
'
guest_done
