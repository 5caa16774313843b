#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# penny check's NCCL work across nodes on a GPU machine: its ranks split
# into two emulated nodes (PENNY_NODE_ID, NCCL_HOSTID, half the GPUs each
# through CUDA_VISIBLE_DEVICES), so that NCCL connects the halves over its
# network transport as between two hosts.
#   1. nccl-path without --nccl-log: the job's log from fresh ranks, judged
#      per node; then the same allreduce run by hand with NCCL_DEBUG=INFO,
#      and every connection row of the check compared with NCCL's own lines
#      (same channel, ranks and direction: same "via").
#   2. the decision table's A/B: the job's allreduce made to miss
#      (allreduce.min-busbw far above it), the rail-NIC A/B runs (or SKIPs
#      naming the rank without a rail NIC), the diagnosis row names a layer.
# Prints a table; writes the JSON, the logs and the table under $OUT.
#   tests/bench/check-nccl-job.sh            (from a fresh clone: builds penny)
# Environment: OUT (default results/check-nccl-job-DATE), NGPU (default: the
# GPUs nvidia-smi lists; at least 2), PENNY (a built penny; default: make),
# TIMEOUT (--timeout, default 60), SYSROOT (--sysfs-root, for a dry run with
# the test plugins: PENNY_PLUGIN_PATH=build/tests/plugins/nccl NGPU=2).
# The NCCL of the Python environment is used unless PENNY_NCCL_LIB names one.
set -u
export NCCL_NVLS_ENABLE=0
top=$(cd "$(dirname "$0")/../.." && pwd)
stamp=$(date -u +%Y-%m-%d)
OUT=${OUT:-$top/results/check-nccl-job-$stamp}
TIMEOUT=${TIMEOUT:-60}
mkdir -p "$OUT" || exit 2
if [ -z "${PENNY:-}" ]; then
	make -C "$top" -j"$(nproc)" >"$OUT/build.log" 2>&1 || { tail "$OUT/build.log"; exit 2; }
	PENNY=$top/penny
fi
if [ -z "${PENNY_NCCL_LIB:-}" ]; then
	d=$(python3 -c 'import nvidia.nccl as m; print(m.__path__[0])' 2>/dev/null)
	[ -n "$d" ] && [ -e "$d/lib/libnccl.so.2" ] && export PENNY_NCCL_LIB=$d/lib/libnccl.so.2
fi
ngpu=${NGPU:-$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')}
[ "$ngpu" -ge 2 ] 2>/dev/null || { echo "$0: needs 2 GPUs or more (NGPU=$ngpu)" >&2; exit 77; }
half=$((ngpu / 2))
root=()
[ -n "${SYSROOT:-}" ] && root=(--sysfs-root "$SYSROOT")
exec > >(tee "$OUT/table.txt") 2>&1
echo "# penny check across 2 emulated nodes of $half GPU(s), $(date -u '+%Y-%m-%d %H:%M UTC'), $(hostname)"
nvidia-smi -L 2>/dev/null | sed 's/^/# /'
echo "# NCCL: ${PENNY_NCCL_LIB:-the default}"

# job TAG ARGS...: penny ARGS as ranks 0..2*half-1, node n0 the first half;
# each rank's stdout in $OUT/TAG.R.out, stderr in $OUT/TAG.R.err; rc: codes
job() {
	local tag=$1 n=$((2 * half)) port r node cvd pids=()
	shift
	port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
	for ((r = n - 1; r >= 0; r--)); do
		node=$((r / half))
		cvd=$(seq -s, $((node * half)) $((node * half + half - 1)))
		PENNY_NODE_ID=n$node NCCL_HOSTID=penny-n$node CUDA_VISIBLE_DEVICES=$cvd \
			"$PENNY" "$@" --rank $r --nranks $n --root 127.0.0.1:$port \
			>"$OUT/$tag.$r.out" 2>"$OUT/$tag.$r.err" &
		pids[r]=$!
	done
	rc=
	for ((r = 0; r < n; r++)); do wait "${pids[r]}"; rc="$rc$?"; done
}

fail=0
echo
echo "## 1. nccl-path: the job's log, judged per node"
job path check "${root[@]}" --only nccl-path --timeout "$TIMEOUT" --json
echo "exit codes: $rc"
# the same allreduce by hand, NCCL's own log
mkdir -p "$OUT/ncclref" && rm -f "$OUT"/ncclref/*
NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET,P2P,SHM NCCL_DEBUG_FILE=$OUT/ncclref/nccl.%h.%p.log \
	job ref allreduce-test "${root[@]}" --backend nccl -b 1M -e 1M -n 5 --timeout "$TIMEOUT"
echo "reference allreduce-test exit codes: $rc"
python3 - "$OUT/path.0.out" "$OUT/ncclref" <<'EOF' || fail=1
import glob, json, re, sys
d = json.load(open(sys.argv[1]))
rows = [r for r in d["results"] if r["check"] == "nccl-path"]
line = re.compile(r"Channel (\d+)(?:/(\d+))? : (\d+)\[[^]]*\] -> (\d+)\[[^]]*\](?: \[(send|receive)\])? via (\S+)")
ref = {}
for f in glob.glob(sys.argv[2] + "/*"):
    for l in open(f, errors="replace"):
        m = line.search(l)
        if m:
            t = "ch%02d/%d %s->%s%s" % (int(m[1]), int(m[2] or 0), m[3], m[4], " " + m[5] if m[5] else "")
            ref.setdefault(t, set()).add(m[6])
print("%-5s %-24s %-22s %-22s %-7s %s" % ("NODE", "CONNECTION", "PENNY", "NCCL_DEBUG=INFO", "VERDICT", "DETAIL"))
same = diff = 0
for r in sorted(rows, key=lambda r: (r["node"], r["target"])):
    mine = r["measured_text"] or "-"
    theirs = ",".join(sorted(ref.get(r["target"], []))) or "-"
    if r["target"] in ref:
        same += mine in ref[r["target"]]
        diff += mine not in ref[r["target"]]
    print("%-5s %-24s %-22s %-22s %-7s %s" % (r["node"], r["target"], mine, theirs, r["verdict"], (r["detail"] or "")[:90]))
conns = [r for r in rows if r["target"].startswith("ch")]
print("# %d connection rows, %d with NCCL's own via, %d differing, %d not in NCCL's log (channels it set up otherwise)"
      % (len(conns), same, diff, len(conns) - same - diff))
sys.exit(1 if not conns or diff else 0)
EOF

echo
echo "## 2. the decision table's A/B of the NIC choice"
printf 'allreduce.min-busbw = 100000\njob.median-margin = 1\n' >"$OUT/miss.conf"
job ab check "${root[@]}" --only allreduce --quick --config "$OUT/miss.conf" --timeout "$TIMEOUT" --json
echo "exit codes: $rc (1: the allreduce missed, as made to)"
python3 - "$OUT/ab.0.out" <<'EOF' || fail=1
import json, sys
d = json.load(open(sys.argv[1]))
print("%-10s %-5s %-10s %-8s %-10s %-7s %s" % ("CHECK", "NODE", "TARGET", "MEASURED", "EXPECTED", "VERDICT", "DETAIL"))
seen = set()
for r in d["results"]:
    if r["check"] in ("allreduce", "diagnosis", "nic-bw"):
        seen.add(r["target"])
        m = r["measured"] if r["measured"] is not None else r.get("measured_text")
        print("%-10s %-5s %-10s %-8s %-10s %-7s %s" % (r["check"], r["node"], r["target"],
              "%.3g" % m if isinstance(m, float) else m, r["expected"], r["verdict"], (r["detail"] or "")[:110]))
sys.exit(0 if {"job", "job-rail", "allreduce"} <= seen else 1)
EOF
echo
echo "# result: $([ $fail = 0 ] && echo PASS || echo FAIL) (files in $OUT)"
exit $fail
