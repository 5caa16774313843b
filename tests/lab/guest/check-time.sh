#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Guest side of tests/bench/check-time.sh (not a test: it prints a table).
# Times `penny check --quick` and the full `penny check` on two "nodes"
# (PENNY_NODE_ID a: rxe0, rxe2; b: rxe1, rxe3) x two rails, launched as
# guest/check.sh launches it (4 ranks: the ring plan has 2 GPUs per node),
# against the same checks run as the separate tools a site scripts:
# ibv_devinfo, counter reads before and after (rdma statistic and the
# hw_counters files), ib_write_bw per NIC pair and direction one after the
# other, `penny allreduce-test` (standing in for nccl-tests) on each node and
# across the job, and the plan's allreduce with the netdev byte counters read
# before and after (the rails check).  Same sizes, iterations and seconds on
# both sides; each side's parameters for --quick are --quick's.
#
# usage: check-time.sh ROUNDS    (medians of ROUNDS rounds are printed)
. "$(dirname "$0")/lib-guest.sh"
rounds=${1:-3}

# The lab's config (guest/check.sh's), plus the sizes this bench sets so both
# sides run the same: nic-bw 4 s per NIC and direction (--quick: 1 s, which
# is also ib_write_bw's shortest -D), a 1 MiB allreduce.  rxe in TCG retries
# under load (completer_retry_err rises): the bench times the counters check,
# it does not judge the lab, so any increase is accepted.
cat >lab.conf <<'CONF'
nic-bw.min-gbps = 0.05
nic-bw.size = 4096
nic-bw.seconds = 4
rails.size = 1048576
rails.noise-bytes = 65536
allreduce.size = 1048576
counters.max-increase = 1e15
job.median-margin = 0.8
CONF
NICBW_SIZE=4096 NICBW_FULL=4 NICBW_QUICK=1
AR_SIZE=1048576 RAILS_SIZE=1048576

now() { date +%s.%N; }
# timed MODE STEP CMD...: run CMD, append "MODE STEP SECONDS RC" to times.txt
timed() {
	local mode=$1 step=$2 t0 rc
	shift 2
	t0=$(now)
	"$@"
	rc=$?
	echo "$mode $step $(awk -v a="$t0" -v b="$(now)" 'BEGIN {printf "%.3f", b - a}') $rc" >>times.txt
	return 0
}

# ------------------------------------------------------------ penny check --
# penny_check ARGS: the job as guest/check.sh runs it; rank 0's JSON in pc.json
penny_check() {
	local port=$(rand_port) pids= r dev node rc p
	for r in 1 2 3; do
		if [ $r -lt 2 ]; then dev=rxe0,rxe2 node=a; else dev=rxe1,rxe3 node=b; fi
		PENNY_NODE_ID=$node "$PENNY" check --rank $r --nranks 4 --root 127.0.0.1:$port \
			--timeout 60 -d $dev --config lab.conf --plan plan.json "$@" >/dev/null 2>err$r &
		pids="$pids $!"
	done
	PENNY_NODE_ID=a "$PENNY" check --rank 0 --nranks 4 --root 127.0.0.1:$port --timeout 60 \
		-d rxe0,rxe2 --config lab.conf --plan plan.json --json "$@" >pc.json 2>err0
	rc=$?
	for p in $pids; do wait $p || rc=$((rc ? rc : 1)); done
	return $rc
}

# ------------------------------------------------------------- scripted --
inventory() { # per node and NIC: port state and rate, as sites parse it
	local d
	for d in rxe0 rxe2 rxe1 rxe3; do
		ibv_devinfo -d $d >inv.$d || return 1
		grep -q "state:.*PORT_ACTIVE" inv.$d || return 1
	done
	rdma link show >inv.link
}

counters_read() { # OUT: every port's error counters
	rdma statistic show >"$1.rdma" || return 1
	grep -H . /sys/class/infiniband/*/ports/*/hw_counters/* >"$1.hw" 2>/dev/null
	grep -H . /sys/class/infiniband/*/ports/*/counters/* >>"$1.hw" 2>/dev/null
	return 0
}

counters_after() { counters_read cnt1 && counters_compare; }

counters_compare() { # the error counters that rose between the two reads
	paste -d' ' cnt0.hw cnt1.hw | awk -F'[: ]' '$2 != $4 && $1 ~ /err|discard|retry|downed|seq/' >cnt.diff
	return 0
}

# perftest_run SERVER_DEV CLIENT_DEV ADDR SECONDS: one ib_write_bw pair
perftest_run() {
	local margin=
	[ "$4" -gt 2 ] && margin="-f 1"
	timeout 60 ib_write_bw -d "$1" -x 1 -s $NICBW_SIZE -q 4 -D "$4" $margin -F \
		--report_gbits >srv.out 2>&1 &
	wait_listen 18515 || return 1
	timeout 60 ib_write_bw -d "$2" -x 1 -s $NICBW_SIZE -q 4 -D "$4" $margin -F \
		--report_gbits "$3" >>pt.out 2>&1 || { wait; return 1; }
	wait
}

nic_bw() { # SECONDS: every rail pair, each node as the sender, one after the other
	perftest_run rxe1 rxe0 10.0.0.2 "$1" && # rail 0, a sends
		perftest_run rxe0 rxe1 10.0.0.1 "$1" && # rail 0, b sends
		perftest_run rxe3 rxe2 10.0.1.2 "$1" && # rail 1, a sends
		perftest_run rxe2 rxe3 10.0.1.1 "$1" # rail 1, b sends
}

# ar_node SIZES...: each node's own allreduce (2 ranks), both nodes at once
ar_node() {
	local pa rc=0
	PENNY_NODE_ID=a "$PENNY" allreduce-test --np 2 --timeout 60 "$@" >arn.a 2>&1 &
	pa=$!
	PENNY_NODE_ID=b "$PENNY" allreduce-test --np 2 --timeout 60 "$@" >arn.b 2>&1 || rc=1
	wait $pa || rc=1
	return $rc
}

# ar_job ARGS: the job's 4 ranks, 2 per node, as penny check is launched
ar_job() {
	local port=$(rand_port) pids= r rc=0 p
	for r in 1 2 3; do
		PENNY_NODE_ID=$([ $r -lt 2 ] && echo a || echo b) "$PENNY" allreduce-test --rank $r \
			--nranks 4 --root 127.0.0.1:$port --timeout 60 "$@" >/dev/null 2>arj.err$r &
		pids="$pids $!"
	done
	PENNY_NODE_ID=a "$PENNY" allreduce-test --rank 0 --nranks 4 --root 127.0.0.1:$port \
		--timeout 60 "$@" >arj.out 2>arj.err0 || rc=1
	for p in $pids; do wait $p || rc=1; done
	return $rc
}

netdev_bytes() { grep -H . /sys/class/net/veth*/statistics/[rt]x_bytes >"$1"; }

rails() { # SIZE: the plan's allreduce, 4 times, with byte counters around it
	netdev_bytes rb0 && ar_job --plan plan.json -b "$1" -e "$1" -n 4 -w 0 -c 0 &&
		netdev_bytes rb1 && paste -d' ' rb0 rb1 >rails.diff
}

scripted() { # MODE: quick or full
	local m=$1 secs ar rs
	if [ "$m" = quick ]; then
		secs=$NICBW_QUICK ar="-b $AR_SIZE -e $AR_SIZE -n 5 -w 2" rs=$((RAILS_SIZE / 4))
	else
		secs=$NICBW_FULL ar="-b $((AR_SIZE / 16)) -e $AR_SIZE -f 4 -n 20 -w 2" rs=$RAILS_SIZE
	fi
	timed "s-$m" counters-before counters_read cnt0
	timed "s-$m" inventory inventory
	timed "s-$m" nic-bw nic_bw "$secs"
	# shellcheck disable=SC2086
	timed "s-$m" allreduce-node ar_node $ar
	# shellcheck disable=SC2086
	timed "s-$m" allreduce-job ar_job $ar
	timed "s-$m" rails rails "$rs"
	timed "s-$m" counters-after counters_after
}

# ----------------------------------------------------------------- run --
topo_file a rxe0 rxe2 >a.json && topo_file b rxe1 rxe3 >b.json &&
	"$PENNY" ring-plan --topo-file a.json,b.json --rails rxe0:1:0,rxe1:1:0,rxe2:1:1,rxe3:1:1 \
		--json >plan.json || { echo "ring-plan failed" >&2; exit 1; }
: >times.txt
for i in $(seq "$rounds"); do
	echo "# round $i of $rounds" >&2
	timed p-quick total penny_check --quick
	cp pc.json pc-quick.json
	scripted quick
	timed p-full total penny_check
	cp pc.json pc-full.json
	scripted full
done
python3 - times.txt pc-quick.json pc-full.json pt.out <<-'PY'
import json, statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
t, bad = {}, set()
for mode, step, secs, rc in rows:
    t.setdefault((mode, step), []).append(float(secs))
    if rc != "0":
        bad.add((mode, step))
med = {k: statistics.median(v) for k, v in t.items()}
steps = [("counters-before", "counters before: rdma statistic + hw_counters files"),
         ("inventory", "inventory: ibv_devinfo per NIC + rdma link"),
         (None, "pcie: nothing (rxe has no PCI device; penny SKIPs)"),
         ("nic-bw", "nic-bw: ib_write_bw x4 (2 rails x 2 directions)"),
         ("allreduce-node", "allreduce on each node: allreduce-test --np 2"),
         ("allreduce-job", "allreduce of the job: allreduce-test, 4 ranks"),
         ("rails", "rails: netdev bytes + allreduce-test --plan"),
         ("counters-after", "counters after + compare")]
def cell(mode, step):
    if step is None:
        return "%9s" % "-"
    v = med.get((mode, step))
    return "%7.2f s%s" % (v, "!" if (mode, step) in bad else " ")
n = len(t.get(("p-full", "total"), []))
print("%-52s %10s %10s" % ("scripted step (median of %d)" % n, "quick", "full"))
for s, what in steps:
    print("%-52s %10s %10s" % (what, cell("s-quick", s), cell("s-full", s)))
tot = {m: sum(med[(m, s)] for s, _ in steps if s) for m in ("s-quick", "s-full")}
print("%-52s %10s %10s" % ("scripted total", "%7.2f s " % tot["s-quick"], "%7.2f s " % tot["s-full"]))
print("%-52s %10s %10s" % ("penny check, one run (--quick / full)", cell("p-quick", "total"),
                            cell("p-full", "total")))
for m, name in (("quick", "penny check --quick"), ("full", "penny check")):
    p = med[("p-" + m, "total")]
    x = tot["s-" + m] / p
    print("%s %.1f s vs scripted %.1f s: %.1fx %s" % (name, p, tot["s-" + m], x if x >= 1 else 1 / x,
                                                      "faster" if x >= 1 else "SLOWER"))
print("# rounds (s): " + "; ".join("%s %s" % (k[0] if k[1] == "total" else "-".join(k),
      " ".join("%.1f" % x for x in v)) for k, v in sorted(t.items())
      if k[1] in ("total", "nic-bw")))
if bad:
    print("# ! a step exited non-zero in some round: " + ", ".join(sorted("-".join(k) for k in bad)))
for f, name in ((sys.argv[2], "--quick"), (sys.argv[3], "full")):
    d = json.load(open(f))
    s = d["summary"]
    print("# penny check %s (last round): exit %s, %d pass, %d fail, %d skip" %
          (name, d["exit"], s["pass"], s["fail"], s["skip"]))
    groups = {}
    for r in d["results"]:
        if r["verdict"] != "PASS":
            groups.setdefault((r["check"], r["verdict"]), []).append(r)
    for (chk, v), rs in groups.items():
        print("#   %s %s x%d, e.g. %s %s: %.70s" % (chk, v, len(rs), rs[0]["node"], rs[0]["target"],
                                                  rs[0]["detail"]))
    print("#   nic-bw measured: " + ", ".join("%s %s %.3g %s" % (r["node"], r["target"], r["measured"],
          r["unit"]) for r in d["results"] if r["check"] == "nic-bw" and r["verdict"] == "PASS"))
pt = [l.split()[3] for l in open(sys.argv[4]) if l.split()[:1] == ["4096"]]
print("# ib_write_bw measured (last round, quick then full, Gb/s): " + " ".join(pt[-8:]))
PY
